/*
 * check_seek.c — SEEK_DATA and SEEK_HOLE (seek.c, lfs_lseek): written
 * blocks and pages not yet flushed are data; holes and unwritten blocks
 * are holes, as on ext4; an inline file is data; at or past the end is
 * ENXIO; a file of terabytes is answered without a walk of its blocks.
 */
#include "testfs.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define BS 4096

static off_t
seek(struct lfs_fs *fs, uint64_t ino, off_t off, int whence)
{
	off_t at = -1;
	int err = lfs_lseek(fs, ino, off, whence, &at);
	return err ? err : at;
}

static void
put(struct lfs_fs *fs, uint64_t ino, uint64_t off, size_t len)
{
	static uint8_t buf[8 * BS];
	memset(buf, 0x77, sizeof(buf));
	ck_assert_uint_le(len, sizeof(buf));
	ck_assert_int_eq(lfs_write(fs, ino, buf, len, (off_t)off, NULL), (ssize_t)len);
}

static void
set_size(struct lfs_fs *fs, uint64_t ino, uint64_t size)
{
	struct stat st = { .st_size = (off_t)size };
	ck_assert_int_eq(lfs_setattr(fs, ino, &st, LFS_SET_SIZE, &st), 0);
}

/* The same answers before the flush (pages), after it (the map) and
 * after a remount (the map read back). */
static void
sparse_answers(struct lfs_fs *fs, uint64_t f)
{
	const off_t size = 20 * BS + 100;
	ck_assert_int_eq(seek(fs, f, 0, SEEK_DATA), 0);
	ck_assert_int_eq(seek(fs, f, 100, SEEK_DATA), 100);
	ck_assert_int_eq(seek(fs, f, 100, SEEK_HOLE), BS);
	ck_assert_int_eq(seek(fs, f, BS, SEEK_DATA), 10 * BS);
	ck_assert_int_eq(seek(fs, f, 3 * BS + 7, SEEK_HOLE), 3 * BS + 7);
	ck_assert_int_eq(seek(fs, f, 10 * BS + 1, SEEK_HOLE), 12 * BS);
	/* data in tree 0 (past the direct blocks), then a hole to the end */
	ck_assert_int_eq(seek(fs, f, 12 * BS, SEEK_DATA), 15 * BS);
	ck_assert_int_eq(seek(fs, f, 15 * BS, SEEK_HOLE), 16 * BS);
	ck_assert_int_eq(seek(fs, f, 16 * BS, SEEK_DATA), -ENXIO);
	ck_assert_int_eq(seek(fs, f, 16 * BS, SEEK_HOLE), 16 * BS);
	ck_assert_int_eq(seek(fs, f, size - 1, SEEK_HOLE), size - 1);
	ck_assert_int_eq(seek(fs, f, size, SEEK_DATA), -ENXIO);
	ck_assert_int_eq(seek(fs, f, size, SEEK_HOLE), -ENXIO);
	ck_assert_int_eq(seek(fs, f, size + 5 * BS, SEEK_HOLE), -ENXIO);
	ck_assert_int_eq(seek(fs, f, -1, SEEK_DATA), -ENXIO);
}

START_TEST(sparse_file)
{
	testfs_make(64ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	put(fs, f, 0, 1);
	put(fs, f, 10 * BS, 2 * BS);
	put(fs, f, 15 * BS, BS);
	set_size(fs, f, 20 * BS + 100);
	sparse_answers(fs, f); /* pages */
	ck_assert_int_eq(lfs_fsync(fs, f, false), 0);
	sparse_answers(fs, f); /* the map */
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	sparse_answers(fs, f);
	ck_assert_int_eq(seek(fs, f, 0, SEEK_SET), -EINVAL);
	ck_assert_int_eq(seek(fs, LFS_ROOT_INO, 0, SEEK_DATA), -EINVAL);
	testfs_finish(fs);
}
END_TEST

/* fallocate's unwritten blocks are holes until written; a write into
 * them is data at once (a page), and after the flush (the map). */
START_TEST(unwritten_are_holes)
{
	testfs_make(64ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	ck_assert_int_eq(lfs_fallocate(fs, f, 0, 0, 600 * BS), 0);
	ck_assert_int_eq(seek(fs, f, 0, SEEK_DATA), -ENXIO);
	ck_assert_int_eq(seek(fs, f, 0, SEEK_HOLE), 0);
	put(fs, f, 5 * BS, 10);
	put(fs, f, 530 * BS, 2 * BS);
	for (int pass = 0; pass < 2; pass++) {
		ck_assert_int_eq(seek(fs, f, 0, SEEK_DATA), 5 * BS);
		ck_assert_int_eq(seek(fs, f, 5 * BS, SEEK_HOLE), 6 * BS);
		ck_assert_int_eq(seek(fs, f, 6 * BS, SEEK_DATA), 530 * BS);
		ck_assert_int_eq(seek(fs, f, 531 * BS + 9, SEEK_HOLE), 532 * BS);
		ck_assert_int_eq(seek(fs, f, 532 * BS, SEEK_DATA), -ENXIO);
		ck_assert_int_eq(lfs_fsync(fs, f, false), 0);
	}
	/* a reservation past the end changes nothing within it */
	ck_assert_int_eq(lfs_fallocate(fs, f, FALLOC_FL_KEEP_SIZE, 600 * BS, 100 * BS), 0);
	ck_assert_int_eq(seek(fs, f, 532 * BS, SEEK_HOLE), 532 * BS);
	ck_assert_int_eq(seek(fs, f, 600 * BS, SEEK_HOLE), -ENXIO);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

START_TEST(inline_is_data)
{
	testfs_make(64ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	ck_assert_int_eq(seek(fs, f, 0, SEEK_DATA), -ENXIO); /* empty */
	put(fs, f, 0, 300);
	ck_assert_int_eq(lfs_fsync(fs, f, false), 0);
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, f, &ip), 0);
	ck_assert(ip->di.flags & LFS_DI_INLINE);
	ck_assert_int_eq(seek(fs, f, 7, SEEK_DATA), 7);
	ck_assert_int_eq(seek(fs, f, 7, SEEK_HOLE), 300);
	ck_assert_int_eq(seek(fs, f, 300, SEEK_DATA), -ENXIO);
	testfs_finish(fs);
}
END_TEST

/* A file of 64 TiB with one block in its third tree and one at its
 * start: the answers come from a few nodes, not 2^34 blocks. */
START_TEST(huge_sparse)
{
	testfs_make(64ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	const uint64_t far = 3ull << 40;
	put(fs, f, 0, BS);
	put(fs, f, far, BS);
	set_size(fs, f, 64ull << 40);
	ck_assert_int_eq(lfs_fsync(fs, f, false), 0);
	ck_assert_int_eq(seek(fs, f, 0, SEEK_HOLE), BS);
	ck_assert_int_eq(seek(fs, f, BS, SEEK_DATA), (off_t)far);
	ck_assert_int_eq(seek(fs, f, (off_t)far, SEEK_HOLE), (off_t)(far + BS));
	ck_assert_int_eq(seek(fs, f, (off_t)(far + BS), SEEK_DATA), -ENXIO);
	ck_assert_int_eq(seek(fs, f, (off_t)(far + BS), SEEK_HOLE), (off_t)(far + BS));
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("seek", "core", 120, sparse_file, unwritten_are_holes, inline_is_data, huge_sparse)
