/*
 * check_fail.c — fail.c, the failed state.  Holds lfs_fail and lfs_sync
 * to their rules: the first failure of a write or an fdatasync makes
 * fs->fatal -EIO, whatever the device said, logs it once and is never
 * replaced by a later one; an fdatasync that failed is not retried; and
 * in that state the writers below the API (lfs_flush, the segment
 * writer, checkpoints, admission) fail with it before touching the
 * device, while reads go on.  (check_fault.c holds the whole API to the
 * same state; this suite holds the modules' own functions.)
 */
#include "testfs.h"

#include <errno.h>
#include <string.h>

/* A mounted scratch filesystem holding file "f" of 8 KiB (pattern 1),
 * flushed and synced. */
static struct lfs_fs *
fs_with_file(uint64_t *ino)
{
	testfs_make(64ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	*ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	uint8_t buf[8192];
	fill_pattern(buf, sizeof(buf), 1);
	ck_assert_int_eq(lfs_write(fs, *ino, buf, sizeof(buf), 0, NULL), (ssize_t)sizeof(buf));
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_int_eq(lfs_sync(fs), 0);
	return fs;
}

/* The failed filesystem is dropped: its unmount fails, the image goes. */
static void
drop_failed(struct lfs_fs *fs)
{
	lfs_fault_disarm();
	ck_assert_int_eq(lfs_unmount(fs), -EIO);
	testfs_remove();
}

/* The first failure wins and is said once, with its cause and what the
 * state means; the error is -EIO whatever the cause (ENOSPC of the
 * backing store must not read as a full filesystem to the caller), and
 * a second failure changes and logs nothing. */
START_TEST(first_failure_is_final)
{
	uint64_t ino;
	struct lfs_fs *fs = fs_with_file(&ino);
	ck_assert_int_eq(fs->fatal, 0);
	testfs_capture_log();
	int first = lfs_fail(fs, -ENOSPC, "writing %d blocks", 7);
	int second = lfs_fail(fs, -EROFS, "the second one");
	int said = testfs_release_log("writing 7 blocks: No space left on device; the filesystem has failed");
	ck_assert_int_eq(first, -EIO);
	ck_assert_int_eq(second, -EIO);
	ck_assert_int_eq(fs->fatal, -EIO);
	ck_assert(!fs->shut_down);
	ck_assert_int_eq(said, 1);
	testfs_capture_log();
	ck_assert_int_eq(lfs_fail(fs, -EIO, "a third one"), -EIO);
	ck_assert_int_eq(testfs_release_log("a third one"), 0);
	drop_failed(fs);
}
END_TEST

/* lfs_sync: a success records what is now durable (synced_bytes, which
 * fsync compares to know there is nothing to wait for); a failure fails
 * the filesystem, leaves synced_bytes where it was, and is never
 * retried: on Linux a second fdatasync may succeed without the lost
 * pages ever reaching the disk. */
START_TEST(failed_fdatasync_is_final)
{
	uint64_t ino;
	struct lfs_fs *fs = fs_with_file(&ino);
	ck_assert_uint_eq(fs->synced_bytes, fs->dev.bytes_written);
	uint8_t buf[4096];
	fill_pattern(buf, sizeof(buf), 2);
	ck_assert_int_eq(lfs_write(fs, ino, buf, sizeof(buf), 8192, NULL), 4096);
	ck_assert_int_eq(lfs_flush(fs), 0);
	uint64_t synced = fs->synced_bytes;
	ck_assert_uint_gt(fs->dev.bytes_written, synced);

	ck_assert_int_eq(lfs_fault_arm("fdatasync:1:EIO"), 0);
	ck_assert_int_eq(lfs_sync(fs), -EIO);
	ck_assert_int_eq(fs->fatal, -EIO);
	ck_assert_uint_eq(fs->synced_bytes, synced);
	ck_assert_int_eq(lfs_sync(fs), -EIO);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_SYNC), 1);
	drop_failed(fs);
}
END_TEST

/* In the failed state every writer below the API fails with -EIO before
 * a write reaches the device, and the dirty state is kept, not dropped;
 * reads go on, from the log and from what is buffered. */
START_TEST(writers_stop_readers_go_on)
{
	uint64_t ino;
	struct lfs_fs *fs = fs_with_file(&ino);
	struct lfs_inode *ip;
	uint64_t addr;
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	ck_assert_int_eq(lfs_bmap_get(fs, ip, 0, &addr), 0);
	uint8_t late[4096], buf[4096], want[8192];
	fill_pattern(late, sizeof(late), 3);
	ck_assert_int_eq(lfs_write(fs, ino, late, sizeof(late), 8192, NULL), 4096);
	ck_assert_uint_eq(fs->dirty.count, 1);

	ck_assert_int_eq(lfs_fault_arm("pwrite:1000000:EIO+fdatasync:1000000:EIO"), 0);
	ck_assert_int_eq(lfs_fail(fs, -EIO, "test"), -EIO);
	ck_assert_int_eq(lfs_flush(fs), -EIO);
	ck_assert_uint_eq(fs->dirty.count, 1);
	uint64_t a;
	ck_assert_int_eq(lfs_seg_append(fs, LFS_BK_DATA, (uint32_t)ino, 0, 9, late, &a), -EIO);
	ck_assert_int_eq(lfs_seg_end_group(fs), -EIO);
	ck_assert_int_eq(lfs_ckpt_write(fs, false), -EIO);
	ck_assert_int_eq(lfs_space_admit(fs, LFS_SPACE_WRITE, 4096), -EIO);
	ck_assert_int_eq(lfs_sync(fs), -EIO);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_PWRITE), 0);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_SYNC), 0);

	fill_pattern(want, sizeof(want), 1);
	ck_assert_int_eq(lfs_read_block(fs, addr, buf), 0);
	ck_assert(memcmp(buf, want, 4096) == 0);
	ck_assert_int_eq(lfs_read(fs, ino, buf, sizeof(buf), 8192), 4096);
	ck_assert(memcmp(buf, late, 4096) == 0);
	drop_failed(fs);
}
END_TEST

/* A shut-down filesystem (lfs_shutdown) is already in the state: a
 * failure after it is not logged as one and does not turn the shutdown
 * into a failure. */
START_TEST(failure_after_shutdown)
{
	uint64_t ino;
	struct lfs_fs *fs = fs_with_file(&ino);
	ck_assert_int_eq(lfs_shutdown(fs, LFS_SHUTDOWN_NOLOGFLUSH), 0);
	ck_assert(fs->shut_down);
	testfs_capture_log();
	ck_assert_int_eq(lfs_fail(fs, -ENOSPC, "after the shutdown"), -EIO);
	ck_assert_int_eq(testfs_release_log("the filesystem has failed"), 0);
	ck_assert(fs->shut_down);
	ck_assert_int_eq(fs->fatal, -EIO);
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

/* A sync of an idle filesystem writes nothing, but once the filesystem
 * has failed it says so: -EIO, not a success for having nothing to do. */
START_TEST(idle_sync_after_failure_is_eio)
{
	uint64_t ino;
	struct lfs_fs *fs = fs_with_file(&ino);
	ck_assert_int_eq(lfs_syncfs(fs), 0);
	uint64_t written = fs->dev.bytes_written;
	ck_assert_int_eq(lfs_syncfs(fs), 0);
	ck_assert_uint_eq(fs->dev.bytes_written, written);
	ck_assert_int_eq(lfs_fail(fs, -EIO, "test"), -EIO);
	ck_assert_int_eq(lfs_syncfs(fs), -EIO);
	drop_failed(fs);
}
END_TEST

CHECK_MAIN("fail", "fail", 30, first_failure_is_final, failed_fdatasync_is_final,
	   writers_stop_readers_go_on, failure_after_shutdown, idle_sync_after_failure_is_eio)
