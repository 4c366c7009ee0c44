/*
 * check_writeout.c — writeout.c, sealed psegs on their way to the disk.
 *
 * A queued pseg is not on the disk and not counted written, yet its
 * blocks read back from memory; writing out puts it on the disk, sealed
 * so that the read checks and roll-forward accept it.  Written out by
 * fsync with the lock released (the gate of gate.h holds its pwrite),
 * other requests read, stat and write meanwhile, and a flush made with
 * the lock held waits for that pwrite rather than overtaking it.  A
 * failed write fails the filesystem, writes nothing after it, and
 * leaves the blocks readable from memory.
 */
#include "gate.h"
#include "testfs.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

static void
write_blocks(struct lfs_fs *fs, uint64_t ino, uint64_t lblk, unsigned n, unsigned seed)
{
	uint8_t buf[8 * 4096];
	ck_assert_uint_le(n, 8);
	fill_pattern(buf, (size_t)n * 4096, seed);
	ck_assert_int_eq(lfs_write(fs, ino, buf, (size_t)n * 4096, (off_t)(lblk * 4096), NULL), (ssize_t)n * 4096);
}

static void
assert_blocks(struct lfs_fs *fs, uint64_t ino, uint64_t lblk, unsigned n, unsigned seed)
{
	uint8_t buf[8 * 4096], want[8 * 4096];
	fill_pattern(want, (size_t)n * 4096, seed);
	ck_assert_int_eq(lfs_read(fs, ino, buf, (size_t)n * 4096, (off_t)(lblk * 4096)), (ssize_t)n * 4096);
	ck_assert_mem_eq(buf, want, (size_t)n * 4096);
}

/* The image's copy of block addr equals block i of pattern `seed`. */
static bool
on_disk(uint64_t addr, unsigned i, unsigned seed)
{
	uint8_t got[4096], want[8 * 4096];
	fill_pattern(want, sizeof(want), seed);
	int fd = open(testfs_path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, got, sizeof(got), (off_t)(addr * 4096)), 4096);
	close(fd);
	return memcmp(got, want + (size_t)i * 4096, 4096) == 0;
}

/* A flush whose group end was deferred leaves its psegs queued: the
 * device counter has not moved and the image does not hold the blocks,
 * but they read back right; written out, the image holds them and the
 * counter counts every block of the group, and after a crash that
 * follows a flush of the disk they are found by roll-forward. */
START_TEST(queued_until_written_out)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, 1 << 20, 1, &ino);
	write_blocks(fs, ino, 0, 8, 5);
	uint64_t w0 = fs->dev.bytes_written, off0 = fs->cur_off;
	fs->defer_writeout = true;
	ck_assert_int_eq(lfs_flush(fs), 0);
	fs->defer_writeout = false;
	ck_assert_uint_eq(fs->dev.bytes_written, w0);
	uint64_t a3 = testfs_addr_of(fs, ino, 3);
	ck_assert(!on_disk(a3, 3, 5));
	assert_blocks(fs, ino, 0, 8, 5);

	ck_assert_int_eq(lfs_writeout(fs, false), 0);
	ck_assert_uint_eq(fs->dev.bytes_written, w0 + (fs->cur_off - off0) * 4096);
	ck_assert(on_disk(a3, 3, 5));
	assert_blocks(fs, ino, 0, 8, 5);
	ck_assert_int_eq(lfs_writeout(fs, false), 0); /* nothing left: nothing written */
	ck_assert_uint_eq(fs->dev.bytes_written, w0 + (fs->cur_off - off0) * 4096);
	ck_assert_int_eq(lfs_sync(fs), 0);
	lfs_abandon(fs);
	fs = testfs_mount();
	assert_blocks(fs, ino, 0, 8, 5);
	testfs_finish(fs);
}
END_TEST

/* fsync writes its log with the lock released: held at its pwrite, the
 * file it flushed reads back right (from the queue), attributes and
 * writes elsewhere go on, and once let go its data survives a crash. */
START_TEST(fsync_writes_out_unlocked)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, 1 << 20, 1, &ino);
	uint64_t other = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	write_blocks(fs, ino, 0, 8, 6);
	gate_reset(LFS_FAULT_PWRITE);
	struct req r;
	req_start(&r, fs, OP_FSYNC, ino, true);
	gate_wait_entered(1);
	struct stat st;
	ck_assert_int_eq(lfs_getattr(fs, ino, &st), 0);
	ck_assert_int_eq(st.st_size, 8 * 4096);
	assert_blocks(fs, ino, 0, 8, 6);
	write_blocks(fs, other, 0, 2, 7);
	ck_assert(!atomic_load(&r.done));
	gate_open_all();
	ck_assert_int_eq(req_join(&r), 0);
	gate_remove();
	ck_assert_uint_eq(fs->synced_bytes, fs->dev.bytes_written);
	lfs_abandon(fs);
	fs = testfs_mount();
	assert_blocks(fs, ino, 0, 8, 6);
	testfs_finish(fs);
}
END_TEST

/* A flush made with the lock held while another thread's pwrite is
 * under way waits for it: it counts nothing written out of order and
 * returns only once both are on the disk; both files are found after a
 * crash, and the image checks clean. */
START_TEST(locked_flush_waits_for_unlocked_writer)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, 1 << 20, 1, &ino);
	uint64_t other = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	write_blocks(fs, ino, 0, 8, 8);
	gate_reset(LFS_FAULT_PWRITE);
	struct req f, h;
	req_start(&f, fs, OP_FSYNC, ino, true);
	gate_wait_entered(1);
	write_blocks(fs, other, 0, 4, 9);
	req_start(&h, fs, OP_FLUSH, 0, false);
	wait_disk_waiters(fs, 1, &h);
	ck_assert(!atomic_load(&h.done));
	ck_assert_uint_eq(atomic_load(&fs->disk_waiters), 1);
	ck_assert_int_eq(gate_count(), 1);
	gate_open_all();
	ck_assert_int_eq(req_join(&f), 0);
	ck_assert_int_eq(req_join(&h), 0);
	gate_remove();
	ck_assert_int_eq(lfs_fsync(fs, other, false), 0);
	lfs_abandon(fs);
	fs = testfs_mount();
	assert_blocks(fs, ino, 0, 8, 8);
	assert_blocks(fs, other, 0, 4, 9);
	testfs_finish(fs);
}
END_TEST

/* The first pwrite of a queued group fails: writing out says so, the
 * filesystem has failed, nothing more of the group is written, the
 * blocks still read back right from memory, and writes fail. */
START_TEST(failed_write_keeps_blocks_readable)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, 1 << 20, 1, &ino);
	write_blocks(fs, ino, 0, 8, 10);
	fs->defer_writeout = true;
	ck_assert_int_eq(lfs_flush(fs), 0);
	fs->defer_writeout = false;
	uint64_t a0 = testfs_addr_of(fs, ino, 0);
	ck_assert_int_eq(lfs_fault_arm("pwrite:1:EIO"), 0);
	ck_assert_int_eq(lfs_writeout(fs, false), -EIO);
	ck_assert_int_eq(fs->fatal, -EIO);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_PWRITE), 1);
	ck_assert(!on_disk(a0, 0, 10));
	assert_blocks(fs, ino, 0, 8, 10);
	lfs_fault_disarm();
	uint8_t b[4096] = { 0 };
	ck_assert_int_eq(lfs_write(fs, ino, b, sizeof(b), 0, NULL), -EIO);
	ck_assert_int_eq(lfs_unmount(fs), -EIO);
	testfs_remove();
}
END_TEST

CHECK_MAIN("writeout", "core", 60, queued_until_written_out, fsync_writes_out_unlocked,
	   locked_flush_waits_for_unlocked_writer, failed_write_keeps_blocks_readable)
