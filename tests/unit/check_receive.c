/*
 * check_receive.c — mirrors lfs/fs/receive.c and lfs/inode/staged.c: a
 * tree staged with no name, committed as a received snapshot in one
 * checkpoint.  The live tree never lists it (only its hidden name finds
 * it); the committed snapshot's view has it as its root, with the
 * origin recorded, across a remount; the live tree lets it go; a
 * receive given up, or one a crash ended after a checkpoint wrote the
 * staged tree, leaves no inode behind, and fsck finds nothing wrong;
 * letting a staged tree go is a delete, admitted as one (on a full
 * filesystem too).
 */
#include "check_run.h"
#include "testfs.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
count_name(void *ctx, const char *name, const struct stat *st, off_t next)
{
	(void)st, (void)next;
	if (strcmp(name, ".") && strcmp(name, ".."))
		++*(int *)ctx;
	return 0;
}

static int
names_in(struct lfs_fs *fs, uint64_t dir)
{
	int n = 0;
	ck_assert_int_eq(lfs_readdir(fs, dir, 0, count_name, &n), 0);
	return n;
}

static uint64_t
inodes_used(struct lfs_fs *fs)
{
	struct statvfs sv;
	ck_assert_int_eq(lfs_statfs(fs, &sv), 0);
	return sv.f_files - sv.f_ffree;
}

/* A staged tree: d/, d/f ("data"), d/e/ (empty), top file g. */
static uint64_t
stage(struct lfs_fs *fs)
{
	uint64_t ino;
	uint32_t gen;
	struct stat st;
	ck_assert_int_eq(lfs_recv_begin(fs, &ino, &gen), 0);
	ck_assert_int_eq(lfs_mkdir(fs, ino, "d", 0755, &testfs_me, &st), 0);
	uint64_t d = st.st_ino;
	ck_assert_int_eq(lfs_mknod(fs, d, "f", S_IFREG | 0644, 0, &testfs_me, &st), 0);
	uint64_t f = st.st_ino;
	ck_assert_int_eq(lfs_write(fs, f, "data", 4, 0, NULL), 4);
	ck_assert_int_eq(lfs_mkdir(fs, d, "e", 0755, &testfs_me, &st), 0);
	uint64_t e = st.st_ino;
	ck_assert_int_eq(lfs_mknod(fs, ino, "g", S_IFREG | 0644, 0, &testfs_me, &st), 0);
	uint64_t g = st.st_ino;
	/* the references a kernel would give back */
	uint64_t made[] = { d, f, e, g };
	for (size_t i = 0; i < 4; i++)
		lfs_forget(fs, made[i], 1);
	char name[LFS_STAGED_NAME_MAX];
	snprintf(name, sizeof(name), LFS_STAGED_PREFIX "%llu.%u", (unsigned long long)ino, gen);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, name, &st), 0);
	ck_assert_uint_eq(st.st_ino, ino);
	lfs_forget(fs, ino, 1);
	snprintf(name, sizeof(name), LFS_STAGED_PREFIX "%llu.%u", (unsigned long long)ino, gen + 1);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, name, &st), -ENOENT);
	return ino;
}

static void
check_view(struct lfs_fs *fs)
{
	struct lfs_fs *v;
	struct stat st;
	char buf[8];
	ck_assert_int_eq(lfs_view_open(fs, "r1", false, &v), 0);
	ck_assert_int_eq(names_in(v, LFS_ROOT_INO), 2);
	ck_assert_int_eq(lfs_lookup(v, LFS_ROOT_INO, "d", &st), 0);
	uint64_t d = st.st_ino;
	ck_assert_int_eq(lfs_lookup(v, d, "..", &st), 0);
	ck_assert_uint_eq(st.st_ino, LFS_ROOT_INO);
	ck_assert_int_eq(lfs_lookup(v, d, "f", &st), 0);
	ck_assert_int_eq(lfs_read(v, st.st_ino, buf, sizeof(buf), 0), 4);
	ck_assert_int_eq(memcmp(buf, "data", 4), 0);
	lfs_abandon(v);
}

START_TEST(commit_makes_a_snapshot)
{
	testfs_make(64ull << 20, 256u << 10);
	struct lfs_fs *fs = testfs_mount();
	testfs_mkfile(fs, LFS_ROOT_INO, "live");
	uint64_t before = inodes_used(fs);
	uint64_t ino = stage(fs);
	ck_assert_int_eq(names_in(fs, LFS_ROOT_INO), 1);
	uint8_t uuid[16];
	for (int i = 0; i < 16; i++)
		uuid[i] = (uint8_t)(0xa0 + i);
	uint64_t seq;
	ck_assert_int_eq(lfs_recv_commit(fs, ino, "r1", uuid, 77, &seq), 0);
	ck_assert_int_eq(lfs_recv_commit(fs, ino, "r2", uuid, 77, &seq), -ESTALE);
	ck_assert_uint_eq(inodes_used(fs), before);
	ck_assert_int_eq(names_in(fs, LFS_ROOT_INO), 1);
	check_view(fs);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	struct lfs_ckpt_info *ci;
	size_t n;
	uint64_t held;
	ck_assert_int_eq(lfs_snapshot_list(fs, &ci, &n, &held), 0);
	bool found = false;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(ci[i].name, "r1")) {
			found = true;
			ck_assert(ci[i].flags & LFS_CKPT_INFO_RECEIVED);
			ck_assert_uint_eq(ci[i].src_seq, 77);
			ck_assert_int_eq(memcmp(ci[i].src_uuid, uuid, 16), 0);
		}
	free(ci);
	ck_assert(found);
	ck_assert_uint_gt(held, 0);
	check_view(fs);
	testfs_fsck_clean(fs);
	/* deleted, it gives its records and blocks back */
	ck_assert_int_eq(lfs_snapshot_find(fs, "r1", &seq), 0);
	ck_assert_int_eq(lfs_snapshot_delete(fs, seq), 0);
	testfs_finish(fs);
}
END_TEST

START_TEST(abort_and_crash_leave_nothing)
{
	testfs_make(64ull << 20, 256u << 10);
	struct lfs_fs *fs = testfs_mount();
	uint64_t before = inodes_used(fs);
	uint64_t ino = stage(fs);
	ck_assert_int_eq(lfs_recv_abort(fs, ino), 0);
	ck_assert_uint_eq(inodes_used(fs), before);
	/* a crash after a checkpoint wrote the staged tree */
	stage(fs);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_eq(inodes_used(fs), before + 5);
	lfs_abandon(fs);
	fs = testfs_mount();
	ck_assert_uint_eq(inodes_used(fs), before);
	ck_assert_int_eq(names_in(fs, LFS_ROOT_INO), 0);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

#define MIB (1ull << 20)

/* Write new files until one is refused (plain writes, or cached as
 * writeback); the last file's number. */
static void
fill_until_enospc(struct lfs_fs *fs, uint64_t ino, bool cached)
{
	static uint8_t buf[256 << 10];
	uint64_t off = 0;
	for (unsigned i = 0; i < 1000; i++) {
		memset(buf, (int)i, sizeof(buf));
		ssize_t n = cached ? lfs_write_cached(fs, ino, buf, sizeof(buf), (off_t)off, NULL, NULL)
				   : lfs_write(fs, ino, buf, sizeof(buf), (off_t)off, NULL);
		if (n == -ENOSPC)
			return;
		ck_assert_int_gt(n, 0);
		off += (uint64_t)n;
	}
	ck_abort_msg("no ENOSPC after 250 MiB");
}

/* Admission, counted: the deletes asked for room. */
static unsigned delete_admits;
static int
counting_admit(struct lfs_fs *fs, enum lfs_space_class cls, uint64_t bytes)
{
	delete_admits += cls == LFS_SPACE_DELETE;
	return lfs_space_admit(fs, cls, bytes);
}

/* A staged tree of DIRS directories, a small file in each, given up on
 * a full filesystem (16 MiB, 256 KiB segments; the live files filled
 * to ENOSPC, then writeback to the reserve): the drop is a delete and
 * asks for room as each unlink does (once a name, and for the top), is
 * let in as deletes are, leaves the dirty state within what deletes may
 * use of the reserve, and the checkpoint after it goes through. */
#define DIRS 600
START_TEST(abort_on_a_full_filesystem)
{
	testfs_make(16 * MIB, 256u << 10);
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino;
	uint32_t gen;
	struct stat st;
	ck_assert_int_eq(lfs_recv_begin(fs, &ino, &gen), 0);
	for (int i = 0; i < DIRS; i++) {
		char name[16];
		snprintf(name, sizeof(name), "d%d", i);
		ck_assert_int_eq(lfs_mkdir(fs, ino, name, 0755, &testfs_me, &st), 0);
		uint64_t d = st.st_ino;
		ck_assert_int_eq(lfs_mknod(fs, d, "f", S_IFREG | 0644, 0, &testfs_me, &st), 0);
		ck_assert_int_eq(lfs_write(fs, st.st_ino, name, strlen(name), 0, NULL), (ssize_t)strlen(name));
		lfs_forget(fs, st.st_ino, 1);
		lfs_forget(fs, d, 1);
	}
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t a = testfs_mkfile(fs, LFS_ROOT_INO, "a"), b = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	fill_until_enospc(fs, a, false);
	fill_until_enospc(fs, b, true);
	ck_assert_int_eq(lfs_fsync(fs, b, false), 0);
	ck_assert_int_eq(lfs_space_admit(fs, LFS_SPACE_WRITE, 4096), -ENOSPC);
	uint64_t used = inodes_used(fs);
	struct lfs_upcalls up = lfs_upcalls;
	up.admit = counting_admit;
	fs->up = &up;
	delete_admits = 0;
	ck_assert_int_eq(lfs_recv_abort(fs, ino), 0);
	fs->up = &lfs_upcalls;
	ck_assert_uint_eq(delete_admits, 2 * DIRS + 1);
	ck_assert_uint_eq(inodes_used(fs), used - 2 * DIRS - 1);
	ck_assert_msg(lfs_space_fits(fs, LFS_SPACE_DELETE, 0), "the drop took the dirty state past what deletes may use");
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(fs->fatal, 0);
	ck_assert_int_eq(names_in(fs, LFS_ROOT_INO), 2);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("receive", "core", 20, commit_makes_a_snapshot, abort_and_crash_leave_nothing, abort_on_a_full_filesystem)
