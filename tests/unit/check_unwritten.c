/*
 * check_unwritten.c — unwritten blocks (format.h, LFS_ADDR_UNWRITTEN):
 * fallocate reserves a range without writing it, the reservation is
 * counted used by df and in st_blocks, reads give zeros, writing into it
 * takes no new space, punch, truncate and unlink give it back, and the
 * counts come back exactly after a remount and after a crash (from the
 * checkpoint and roll-forward); fsck agrees at every step.
 */
#include "testfs.h"

#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>

#define BS 4096
#define MIB (1ull << 20)

static uint64_t
bavail(struct lfs_fs *fs)
{
	struct statvfs st;
	ck_assert_int_eq(lfs_statfs(fs, &st), 0);
	return st.f_bavail;
}

static struct lfs_inode *
inode(struct lfs_fs *fs, uint64_t ino)
{
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	return ip;
}

/* Every byte of [off, off + len) reads as c. */
static void
reads_as(struct lfs_fs *fs, uint64_t ino, uint64_t off, size_t len, uint8_t c)
{
	uint8_t *buf = malloc(len);
	ck_assert_int_eq(lfs_read(fs, ino, buf, len, (off_t)off), (ssize_t)len);
	for (size_t i = 0; i < len; i++)
		ck_assert_msg(buf[i] == c, "byte %llu: %u, not %u", (unsigned long long)(off + i), buf[i], c);
	free(buf);
}

static void
fill(struct lfs_fs *fs, uint64_t ino, uint64_t off, size_t len, uint8_t c)
{
	uint8_t *buf = malloc(len);
	memset(buf, c, len);
	ck_assert_int_eq(lfs_write(fs, ino, buf, len, (off_t)off, NULL), (ssize_t)len);
	free(buf);
}

static long
st_blocks(struct lfs_fs *fs, uint64_t ino)
{
	struct stat st;
	lfs_inode_stat(fs, inode(fs, ino), &st);
	return (long)st.st_blocks;
}

/* 600 MiB reserved writes a few blocks, not 600 MiB; df and st_blocks
 * count it all at once; a write into it takes nothing more; punch and
 * truncate give it back; a remount keeps every count. */
START_TEST(reserve_writes_nothing)
{
	testfs_make(1ull << 30, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	const uint64_t n = 600 * MIB / BS;
	uint64_t a0 = bavail(fs), w0 = testfs_written(fs);
	ck_assert_int_eq(lfs_fallocate(fs, ino, 0, 0, (off_t)(n * BS)), 0);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	uint64_t written = testfs_written(fs) - w0;
	ck_assert_msg(written < 64 * BS, "fallocate of 600 MiB wrote %llu bytes", (unsigned long long)written);
	ck_assert_uint_eq(inode(fs, ino)->di.unwritten, n);
	ck_assert_uint_eq(fs->unwritten, n);
	ck_assert_uint_eq(inode(fs, ino)->di.size, n * BS);
	ck_assert_int_ge(st_blocks(fs, ino), (long)(n * (BS / 512)));
	ck_assert_int_le(st_blocks(fs, ino), (long)((n + 16) * (BS / 512)));
	uint64_t a1 = bavail(fs);
	ck_assert_msg(a0 - a1 >= n && a0 - a1 <= n + 16, "df went from %llu to %llu for %llu blocks",
		      (unsigned long long)a0, (unsigned long long)a1, (unsigned long long)n);
	reads_as(fs, ino, 0, 64 * 1024, 0);
	reads_as(fs, ino, 300 * MIB - 5, 70000, 0);
	reads_as(fs, ino, n * BS - 4096, 4096, 0);
	testfs_fsck_clean(fs);

	/* 1 MiB written into the middle: no new space, 256 fewer unwritten */
	fill(fs, ino, 300 * MIB, MIB, 0xa5);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	ck_assert_uint_eq(fs->unwritten, n - 256);
	ck_assert_uint_eq(inode(fs, ino)->di.unwritten, n - 256);
	uint64_t a2 = bavail(fs);
	ck_assert_msg(a2 + 4 >= a1, "writing into the reserved range took %llu blocks", (unsigned long long)(a1 - a2));
	reads_as(fs, ino, 300 * MIB, MIB, 0xa5);
	reads_as(fs, ino, 300 * MIB - BS, BS, 0);
	testfs_fsck_clean(fs);

	/* punching 2 MiB of what is still unwritten gives 512 blocks back */
	ck_assert_int_eq(lfs_fallocate(fs, ino, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(100 * MIB),
				       (off_t)(2 * MIB)), 0);
	ck_assert_uint_eq(fs->unwritten, n - 256 - 512);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	ck_assert_uint_ge(bavail(fs), a2 + 512 - 4);
	testfs_fsck_clean(fs);

	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_uint_eq(fs->unwritten, n - 768);
	ck_assert_uint_eq(inode(fs, ino)->di.unwritten, n - 768);
	reads_as(fs, ino, 300 * MIB, MIB, 0xa5);
	reads_as(fs, ino, 100 * MIB - 10, 2 * MIB + 20, 0);
	testfs_fsck_clean(fs);

	/* truncate gives back the rest, and df its space */
	struct stat st = { .st_size = 0 };
	ck_assert_int_eq(lfs_setattr(fs, ino, &st, LFS_SET_SIZE, &st), 0);
	ck_assert_uint_eq(fs->unwritten, 0);
	ck_assert_uint_eq(inode(fs, ino)->di.unwritten, 0);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	ck_assert_uint_ge(bavail(fs) + 16, a0);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* A crash after fsynced fallocates, a write into one range, a punch and
 * an unlink: roll-forward from the checkpoint gives every count back
 * exactly, and the next checkpoint carries it. */
START_TEST(reserve_survives_crash)
{
	testfs_make(256ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t a = testfs_mkfile(fs, LFS_ROOT_INO, "a");
	uint64_t b = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	uint64_t c = testfs_mkfile(fs, LFS_ROOT_INO, "c");
	ck_assert_int_eq(lfs_fallocate(fs, c, 0, 0, (off_t)(8 * MIB)), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t a0 = bavail(fs);
	ck_assert_int_eq(lfs_fallocate(fs, a, 0, 0, (off_t)(100 * MIB)), 0);
	ck_assert_int_eq(lfs_fsync(fs, a, false), 0);
	fill(fs, a, 50 * MIB, BS, 0x5a);
	ck_assert_int_eq(lfs_fsync(fs, a, false), 0);
	ck_assert_int_eq(lfs_fallocate(fs, b, 0, (off_t)(3 * BS), (off_t)(10 * MIB)), 0);
	ck_assert_int_eq(lfs_fsync(fs, b, false), 0);
	ck_assert_int_eq(lfs_fallocate(fs, b, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)MIB, (off_t)MIB),
			 0);
	ck_assert_int_eq(lfs_fsync(fs, b, false), 0);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "c"), 0);
	/* the kernel's open and reference from the create */
	ck_assert_int_eq(lfs_release(fs, c), 0);
	lfs_forget(fs, c, 1);
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	uint64_t want = 100 * MIB / BS - 1 + 10 * MIB / BS - 256;
	ck_assert_uint_eq(fs->unwritten, want);
	uint64_t a1 = bavail(fs);
	lfs_abandon(fs); /* crash */

	fs = testfs_mount();
	ck_assert_uint_eq(fs->unwritten, want);
	ck_assert_uint_eq(inode(fs, a)->di.unwritten, 100 * MIB / BS - 1);
	ck_assert_uint_eq(inode(fs, b)->di.unwritten, 10 * MIB / BS - 256);
	ck_assert_uint_eq(inode(fs, b)->di.size, 3 * BS + 10 * MIB);
	ck_assert_int_eq(lfs_iget(fs, c, &(struct lfs_inode *){ NULL }), -ESTALE);
	ck_assert_uint_eq(bavail(fs), a1);
	/* c's 8 MiB came back, the reservations went, a few nodes more */
	ck_assert_uint_le(bavail(fs), a0 + 2048 - want);
	ck_assert_uint_ge(bavail(fs), a0 + 2048 - want - 32);
	reads_as(fs, a, 50 * MIB, BS, 0x5a);
	reads_as(fs, a, 50 * MIB - BS, BS, 0);
	testfs_fsck_clean(fs);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_uint_eq(fs->unwritten, want);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* fallocate grants exactly df's Avail, one block more is ENOSPC, and
 * the promise holds: the whole range is written over, df staying at 0. */
START_TEST(grant_exactly_df)
{
	testfs_make(64ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t n = bavail(fs);
	ck_assert_int_eq(lfs_fallocate(fs, ino, 0, 0, (off_t)((n + 1) * BS)), -ENOSPC);
	ck_assert_uint_eq(bavail(fs), n);
	ck_assert_int_eq(lfs_fallocate(fs, ino, 0, 0, (off_t)(n * BS)), 0);
	ck_assert_uint_eq(bavail(fs), 0);
	ck_assert_uint_eq(fs->unwritten, n);
	for (uint64_t off = 0; off < n * BS; off += MIB)
		fill(fs, ino, off, off + MIB < n * BS ? MIB : n * BS - off, 0x33);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	ck_assert_uint_eq(fs->unwritten, 0);
	reads_as(fs, ino, n * BS - MIB, MIB, 0x33);
	testfs_fsck_clean(fs);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	reads_as(fs, ino, 0, MIB, 0x33);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* A record with unwritten pointers or counts is refused where the image
 * or the file cannot have them; the checkpoint header keeps the sum. */
START_TEST(decoders_check)
{
	struct lfs_super sb;
	ck_assert_int_eq(lfs_plan_geometry(&sb, 64ull << 20, 4096, 1 << 20, 0), 0);
	struct lfs_dinode di = { .ino = 5, .mode = S_IFREG | 0644, .nlink = 1, .size = 8 * BS, .blocks = 3 };
	const char *why;
	di.direct[0] = LFS_ADDR_UNWRITTEN;
	di.unwritten = 1;
	ck_assert_int_eq(lfs_dinode_check(&di, &sb, &why), 0);
	di.unwritten = 4;
	ck_assert_int_eq(lfs_dinode_check(&di, &sb, &why), -EFSCORRUPTED);
	di.unwritten = 1;
	di.mode = S_IFDIR | 0755;
	di.parent = 1;
	ck_assert_int_eq(lfs_dinode_check(&di, &sb, &why), -EFSCORRUPTED);
	di.mode = S_IFREG | 0644;
	sb.feature_incompat &= ~LFS_FEATURE_UNWRITTEN;
	ck_assert_int_eq(lfs_dinode_check(&di, &sb, &why), -EFSCORRUPTED);
	di.unwritten = 0;
	ck_assert_int_eq(lfs_dinode_check(&di, &sb, &why), -EFSCORRUPTED);

	uint8_t rec[LFS_INODE_HDR_SIZE];
	struct lfs_dinode back;
	di.unwritten = 77;
	lfs_dinode_encode(&di, NULL, rec);
	ck_assert_int_eq(lfs_dinode_decode(&back, rec, sizeof(rec)), LFS_INODE_HDR_SIZE);
	ck_assert_uint_eq(back.unwritten, 77);
	uint8_t hdr[LFS_CKPT_HDR_SIZE];
	struct lfs_ckpt_hdr h = { .magic = LFS_CKPT_MAGIC, .unwritten = 1ull << 40 }, hb;
	lfs_ckpt_hdr_encode(&h, hdr);
	lfs_ckpt_hdr_decode(&hb, hdr);
	ck_assert_uint_eq(hb.unwritten, 1ull << 40);
}
END_TEST

CHECK_MAIN("unwritten", "core", 120, reserve_writes_nothing, reserve_survives_crash, grant_exactly_df,
	   decoders_check)
