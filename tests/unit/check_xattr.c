/*
 * check_xattr.c — extended attributes beyond one block (xattr.c,
 * LFS_FEATURE_XATTR_BLOCKS): the VFS limits, thousands of attributes,
 * what a change writes, remount, roll-forward after a crash, cleaning,
 * and the blocks given back when a file goes.  Every case ends with
 * fsck finding nothing wrong.
 */
#include "testfs.h"

#include <errno.h>
#include <string.h>
#include <sys/xattr.h>


static uint8_t big[LFS_XATTR_SIZE_MAX + 1], back[LFS_XATTR_SIZE_MAX + 1];

/* The value of `name` is `len` bytes of pattern `seed`. */
static void
expect_value(struct lfs_fs *fs, uint64_t ino, const char *name, size_t len, unsigned seed)
{
	fill_pattern(big, len, seed);
	ck_assert_int_eq(lfs_getxattr(fs, ino, name, NULL, 0), (ssize_t)len);
	ck_assert_int_eq(lfs_getxattr(fs, ino, name, back, sizeof(back)), (ssize_t)len);
	ck_assert_msg(memcmp(big, back, len) == 0, "%s: value differs", name);
}

static void
set_value(struct lfs_fs *fs, uint64_t ino, const char *name, size_t len, unsigned seed)
{
	fill_pattern(big, len, seed);
	ck_assert_int_eq(lfs_setxattr(fs, ino, name, big, len, 0), 0);
}

/* fsck checks what is on disk: checkpoint first */
static void
fsck_clean(struct lfs_fs *fs)
{
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	testfs_fsck_clean(fs);
}

/* A fresh filesystem of 64 MiB with `seg` bytes per segment. */
static struct lfs_fs *
start(uint32_t seg)
{
	testfs_make(64 << 20, seg);
	return testfs_mount();
}

/* fsck finds nothing; unmount and remove the image. */
static void
finish(struct lfs_fs *fs)
{
	fsck_clean(fs);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}

START_TEST(limits)
{
	struct lfs_fs *fs = start(1 << 20);
	ck_assert(fs->sb.feature_incompat & LFS_FEATURE_XATTR_BLOCKS);
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	static const size_t sizes[] = { 0, 1, 4000, 4096, 4097, 8192, 65535, 65536 };
	char name[64];
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(name, sizeof(name), "user.s%zu", sizes[i]);
		set_value(fs, ino, name, sizes[i], (unsigned)i);
	}
	fill_pattern(big, sizeof(big), 9);
	ck_assert_int_eq(lfs_setxattr(fs, ino, "user.over", big, LFS_XATTR_SIZE_MAX + 1, 0), -E2BIG);
	ck_assert_int_eq(lfs_getxattr(fs, ino, "user.s65536", back, 65535), -ERANGE);
	/* names: 255 bytes is the limit */
	char longname[300];
	memset(longname, 'n', sizeof(longname));
	memcpy(longname, "user.", 5);
	longname[255] = '\0';
	ck_assert_int_eq(lfs_setxattr(fs, ino, longname, "v", 1, 0), 0);
	longname[255] = 'n';
	longname[256] = '\0';
	ck_assert_int_eq(lfs_setxattr(fs, ino, longname, "v", 1, 0), -ERANGE);
	/* replace large by small and small by large */
	set_value(fs, ino, "user.s65536", 3, 20);
	set_value(fs, ino, "user.s1", 50000, 21);
	struct stat st;
	ck_assert_int_eq(lfs_getattr(fs, ino, &st), 0);
	/* 4097 + 8192 + 65535 + 50000 bytes out of line: 2 + 2 + 16 + 13
	 * value blocks, the root, and at least one leaf */
	ck_assert_int_ge(st.st_blocks, (2 + 2 + 16 + 13 + 2) * 8);
	for (int round = 0; round < 2; round++) {
		expect_value(fs, ino, "user.s0", 0, 0);
		expect_value(fs, ino, "user.s1", 50000, 21);
		expect_value(fs, ino, "user.s4000", 4000, 2);
		expect_value(fs, ino, "user.s4096", 4096, 3);
		expect_value(fs, ino, "user.s4097", 4097, 4);
		expect_value(fs, ino, "user.s8192", 8192, 5);
		expect_value(fs, ino, "user.s65535", 65535, 6);
		expect_value(fs, ino, "user.s65536", 3, 20);
		fsck_clean(fs);
		ck_assert_int_eq(lfs_unmount(fs), 0);
		fs = testfs_mount();
	}
	struct stat st2;
	ck_assert_int_eq(lfs_getattr(fs, ino, &st2), 0);
	ck_assert_int_eq(st2.st_blocks, st.st_blocks);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

/* Thousands of attributes; listxattr is bounded by the VFS's 64 KiB. */
START_TEST(many)
{
	struct lfs_fs *fs = start(1 << 20);
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	enum { N = 3000 };
	char name[32], val[32];
	size_t list_len = 0;
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "user.n%05d", i);
		snprintf(val, sizeof(val), "v%d", i * 7);
		ck_assert_int_eq(lfs_setxattr(fs, ino, name, val, strlen(val), XATTR_CREATE), 0);
		list_len += strlen(name) + 1;
	}
	/* a change writes the leaf it touches, the root and the record, not
	 * the 3000 attributes */
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	uint64_t w0 = testfs_written(fs);
	ck_assert_int_eq(lfs_setxattr(fs, ino, "user.n01500", "changed", 7, XATTR_REPLACE), 0);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	uint64_t wrote = testfs_written(fs) - w0;
	ck_assert_msg(wrote <= 5 * 4096, "one change among %d wrote %llu bytes", N, (unsigned long long)wrote);
	for (int round = 0; round < 2; round++) {
		ck_assert_int_eq(lfs_listxattr(fs, ino, NULL, 0), (ssize_t)list_len);
		char *list = malloc(list_len);
		ck_assert_ptr_nonnull(list);
		ck_assert_int_eq(lfs_listxattr(fs, ino, list, list_len), (ssize_t)list_len);
		ck_assert_int_eq(lfs_listxattr(fs, ino, list, list_len - 1), -ERANGE);
		free(list);
		for (int i = 0; i < N; i += 37) {
			snprintf(name, sizeof(name), "user.n%05d", i);
			snprintf(val, sizeof(val), "v%d", i * 7);
			char got[32];
			ssize_t n = lfs_getxattr(fs, ino, name, got, sizeof(got));
			if (i == 1500)
				ck_assert(n == 7 && memcmp(got, "changed", 7) == 0);
			else
				ck_assert_msg(n == (ssize_t)strlen(val) && memcmp(got, val, (size_t)n) == 0, "%s", name);
		}
		fsck_clean(fs);
		ck_assert_int_eq(lfs_unmount(fs), 0);
		fs = testfs_mount();
	}
	/* remove every other one; the rest stay */
	for (int i = 0; i < N; i += 2) {
		snprintf(name, sizeof(name), "user.n%05d", i);
		ck_assert_int_eq(lfs_removexattr(fs, ino, name), 0);
		list_len -= strlen(name) + 1;
	}
	ck_assert_int_eq(lfs_listxattr(fs, ino, NULL, 0), (ssize_t)list_len);
	ck_assert_int_eq(lfs_getxattr(fs, ino, "user.n00002", NULL, 0), -ENODATA);
	ck_assert_int_eq(lfs_getxattr(fs, ino, "user.n02999", val, sizeof(val)), 6);
	/* remove all: back to no XATTR block */
	for (int i = 1; i < N; i += 2) {
		snprintf(name, sizeof(name), "user.n%05d", i);
		ck_assert_int_eq(lfs_removexattr(fs, ino, name), 0);
	}
	ck_assert_int_eq(lfs_listxattr(fs, ino, NULL, 0), 0);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	struct stat st;
	ck_assert_int_eq(lfs_getattr(fs, ino, &st), 0);
	ck_assert_int_eq(st.st_blocks, 0);
	fsck_clean(fs);
	/* names of 200 bytes: the 326th would take listxattr past 64 KiB */
	char longname[256];
	memset(longname, 'x', sizeof(longname));
	memcpy(longname, "user.", 5);
	longname[200] = '\0';
	int i;
	for (i = 0; i < 1000; i++) {
		snprintf(longname + 190, 11, "%010d", i);
		int err = lfs_setxattr(fs, ino, longname, "", 0, 0);
		if (err) {
			ck_assert_int_eq(err, -ENOSPC);
			break;
		}
	}
	ck_assert_int_eq(i, LFS_XATTR_LIST_MAX / 201);
	ck_assert_int_le(lfs_listxattr(fs, ino, NULL, 0), LFS_XATTR_LIST_MAX);
	finish(fs);
}
END_TEST

/* The total per inode is bounded by the root's slots: ENOSPC, and
 * nothing changed, when a value does not fit; room again after removal. */
START_TEST(total_bound)
{
	struct lfs_fs *fs = start(1 << 20);
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	char name[32];
	int i, err = 0;
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "user.big%d", i);
		fill_pattern(big, LFS_XATTR_SIZE_MAX, (unsigned)i);
		if ((err = lfs_setxattr(fs, ino, name, big, LFS_XATTR_SIZE_MAX, 0)))
			break;
	}
	ck_assert_int_eq(err, -ENOSPC);
	/* 510 slots of 4 KiB blocks, one of them the leaf: 31 values of 16 */
	ck_assert_int_eq(i, (int)((lfs_xattr_max_slots(4096) - 1) / 16));
	ck_assert_int_eq(lfs_getxattr(fs, ino, name, NULL, 0), -ENODATA);
	/* a failed replace keeps the old value */
	set_value(fs, ino, "user.big0", 10, 77);
	ck_assert_int_eq(lfs_setxattr(fs, ino, "user.small", "s", 1, 0), 0);
	fill_pattern(big, LFS_XATTR_SIZE_MAX, 1);
	ck_assert_int_eq(lfs_setxattr(fs, ino, name, big, LFS_XATTR_SIZE_MAX, 0), 0);
	ck_assert_int_eq(lfs_setxattr(fs, ino, "user.big0", big, LFS_XATTR_SIZE_MAX, 0), -ENOSPC);
	expect_value(fs, ino, "user.big0", 10, 77);
	ck_assert_int_eq(lfs_removexattr(fs, ino, "user.big1"), 0);
	set_value(fs, ino, "user.big0", LFS_XATTR_SIZE_MAX, 78);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	expect_value(fs, ino, "user.big0", LFS_XATTR_SIZE_MAX, 78);
	expect_value(fs, ino, "user.big2", LFS_XATTR_SIZE_MAX, 2);
	finish(fs);
}
END_TEST

/* Roll-forward: what was fsynced after the last checkpoint is there
 * after a crash, usage counted right (fsck). */
START_TEST(crash)
{
	struct lfs_fs *fs = start(1 << 20);
	uint64_t a = testfs_mkfile(fs, LFS_ROOT_INO, "a"), b = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	set_value(fs, a, "user.keep", 30000, 1);
	set_value(fs, a, "user.gone", 20000, 2);
	set_value(fs, b, "user.b", 10, 3);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	/* after the checkpoint: replace, remove, add many, turn b indexed */
	set_value(fs, a, "user.keep", 40000, 4);
	ck_assert_int_eq(lfs_removexattr(fs, a, "user.gone"), 0);
	char name[32];
	for (int i = 0; i < 500; i++) {
		snprintf(name, sizeof(name), "user.m%d", i);
		ck_assert_int_eq(lfs_setxattr(fs, a, name, "mm", 2, 0), 0);
	}
	set_value(fs, b, "user.large", 9000, 5);
	ck_assert_int_eq(lfs_fsync(fs, a, false), 0);
	ck_assert_int_eq(lfs_fsync(fs, b, false), 0);
	/* not synced: lost with the crash */
	ck_assert_int_eq(lfs_setxattr(fs, b, "user.unsynced", "u", 1, 0), 0);
	lfs_abandon(fs);
	fs = testfs_mount();
	expect_value(fs, a, "user.keep", 40000, 4);
	ck_assert_int_eq(lfs_getxattr(fs, a, "user.gone", NULL, 0), -ENODATA);
	ck_assert_int_eq(lfs_getxattr(fs, a, "user.m499", NULL, 0), 2);
	expect_value(fs, b, "user.b", 10, 3);
	expect_value(fs, b, "user.large", 9000, 5);
	ck_assert_int_eq(lfs_getxattr(fs, b, "user.unsynced", NULL, 0), -ENODATA);
	finish(fs);
}
END_TEST

/* Live bytes but the usage-table blocks: one is first written when a
 * segment it covers is, so cleaning into new segments adds some. */
static uint64_t
live_but_usage_table(struct lfs_fs *fs)
{
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	for (uint32_t b = 0; b < fs->n_sut_blocks; b++)
		st.live_bytes -= fs->sut_addr[b] ? fs->bsize : 0;
	return st.live_bytes;
}

/* Cleaning moves every XATTR block (root, leaves, values) and frees the
 * segments they were in; unlinking gives every block back. */
START_TEST(clean_and_unlink)
{
	struct lfs_fs *fs = start(64 << 10); /* small segments: the blocks spread over many */
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t live0 = live_but_usage_table(fs);
	uint64_t a = testfs_mkfile(fs, LFS_ROOT_INO, "a");
	char name[32];
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "user.v%d", i);
		set_value(fs, a, name, 5000 * (size_t)(i + 1), (unsigned)i);
	}
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "user.small%d", i);
		ck_assert_int_eq(lfs_setxattr(fs, a, name, name, strlen(name), 0), 0);
	}
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, a, &ip), 0);
	uint64_t root_before = ip->di.xattr;
	/* clean every segment that holds anything but the log head */
	uint64_t moved_total = 0;
	for (uint64_t seg = 0; seg < fs->sb.nsegs; seg++) {
		if (fs->segs[seg].state != LFS_SEG_DIRTY || !fs->segs[seg].live_bytes)
			continue;
		uint64_t moved = 0;
		int err = lfs_clean_segment(fs, seg, &moved);
		/* a segment too full to pay for its cleaning is left */
		ck_assert_msg(err == 0 || err == -ENOSPC, "clean segment %llu: %d", (unsigned long long)seg, err);
		moved_total += err ? 0 : moved;
	}
	ck_assert_uint_gt(moved_total, 50); /* 48 value blocks, leaves, the root */
	ck_assert_int_eq(lfs_iget(fs, a, &ip), 0);
	ck_assert_uint_ne(ip->di.xattr, root_before);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	fsck_clean(fs);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "user.v%d", i);
		expect_value(fs, a, name, 5000 * (size_t)(i + 1), (unsigned)i);
	}
	char got[32];
	ck_assert_int_eq(lfs_getxattr(fs, a, "user.small999", got, sizeof(got)), 13);
	fsck_clean(fs);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "a"), 0);
	lfs_forget(fs, a, 1);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	/* what is left is the root directory's own change: less than a few blocks */
	ck_assert_uint_le(live_but_usage_table(fs), live0 + 2 * 4096);
	finish(fs);
}
END_TEST

/* An image without LFS_FEATURE_XATTR_BLOCKS keeps its one block per
 * inode, readable and writable as before (an older lfs reads it). */
START_TEST(without_feature)
{
	testfs_make_without(64 << 20, 1 << 20, LFS_FEATURE_XATTR_BLOCKS);
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	fill_pattern(big, sizeof(big), 1);
	ck_assert_int_eq(lfs_setxattr(fs, ino, "user.big", big, 4097, 0), -E2BIG);
	ck_assert_int_eq(lfs_setxattr(fs, ino, "user.big", big, 4096, 0), -ENOSPC);
	set_value(fs, ino, "user.a", 4000, 2);
	ck_assert_int_eq(lfs_setxattr(fs, ino, "user.b", big, 100, 0), -ENOSPC);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	expect_value(fs, ino, "user.a", 4000, 2);
	/* the block is written as an older lfs reads it: count, entries */
	struct stat st;
	ck_assert_int_eq(lfs_getattr(fs, ino, &st), 0);
	ck_assert_int_eq(st.st_blocks, 8);
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	uint8_t blk[4096];
	ck_assert_int_eq(lfs_read_block(fs, ip->di.xattr, blk), 0);
	ck_assert_uint_eq(lfs_get32(blk), 1);
	/* a full legacy block (4092 bytes of entries) read where the feature
	 * is on, as after an upgrade: more than a root holds, so it becomes
	 * a leaf when written back */
	ck_assert_int_eq(lfs_removexattr(fs, ino, "user.a"), 0);
	set_value(fs, ino, "user.a", 4092 - 8 - 6, 3);
	fsck_clean(fs);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	fs->sb.feature_incompat |= LFS_FEATURE_XATTR_BLOCKS; /* in memory only */
	expect_value(fs, ino, "user.a", 4092 - 8 - 6, 3);
	/* written back unchanged, as cleaning does */
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	ck_assert_int_eq(lfs_xattr_move_block(fs, ip, 0, blk), 0);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	ck_assert_uint_eq(ip->di.xattr_blocks, 2); /* a root of slots and the leaf */
	fsck_clean(fs);
	set_value(fs, ino, "user.b", 10000, 4);
	fsck_clean(fs);
	expect_value(fs, ino, "user.a", 4092 - 8 - 6, 3);
	expect_value(fs, ino, "user.b", 10000, 4);
	/* not unmounted: the superblock on disk does not name the feature */
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

CHECK_MAIN("xattr", "core", 120, limits, many, total_bound, crash, clean_and_unlink, without_feature)
