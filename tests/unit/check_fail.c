/*
 * check_fail.c — fail.c, the failed state.  Holds lfs_fail and lfs_sync
 * to their rules: the first failure of a write or an fdatasync makes
 * fs->fatal -EIO, whatever the device said, logs it once and is never
 * replaced by a later one; an fdatasync that failed is not retried; and
 * in that state the writers below the API (lfs_flush, the segment
 * writer, checkpoints, admission) fail with it before touching the
 * device, while reads go on; a shutdown that comes while a write or a
 * checkpoint waits for the disk lets nothing more reach it.  (check_fault.c holds the whole API to the
 * same state; this suite holds the modules' own functions.)
 */
#include "gate.h"
#include "testfs.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

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

/* The image's bytes, to see that nothing at all reached it. */
static uint8_t *
image_bytes(size_t *len)
{
	struct stat st;
	ck_assert_int_eq(stat(testfs_path, &st), 0);
	uint8_t *buf = malloc((size_t)st.st_size);
	ck_assert_ptr_nonnull(buf);
	int fd = open(testfs_path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* Shut down (nologflush) while request `op` is held at the gate on its
 * way to the disk, then let it go: it fails, and neither the device's
 * counter nor one byte of the image moved from the moment of the
 * shutdown. */
static void
shutdown_while_held(struct lfs_fs *fs, enum lfs_fault_op at, enum op op, uint64_t ino)
{
	gate_reset(at);
	struct req r;
	req_start(&r, fs, op, ino, true);
	gate_wait_entered(1);
	size_t len;
	uint8_t *before = image_bytes(&len);
	ck_assert_int_eq(lfs_shutdown(fs, LFS_SHUTDOWN_NOLOGFLUSH), 0);
	lfs_lock(fs);
	uint64_t written = fs->dev.bytes_written, synced = fs->synced_bytes, seq = fs->ckpt_seq;
	pthread_mutex_unlock(&fs->lock);
	gate_open_all();
	ck_assert_int_eq(req_join(&r), -EIO);
	gate_remove();
	lfs_lock(fs);
	ck_assert_uint_eq(fs->dev.bytes_written, written);
	ck_assert_uint_eq(fs->synced_bytes, synced);
	ck_assert_uint_eq(fs->ckpt_seq, seq);
	ck_assert(!fs->ckpt_job.active);
	pthread_mutex_unlock(&fs->lock);
	size_t len2;
	uint8_t *after = image_bytes(&len2);
	ck_assert_uint_eq(len2, len);
	ck_assert(memcmp(before, after, len) == 0);
	free(before);
	free(after);
	ck_assert_int_eq(lfs_unmount(fs), 0); /* asked for: no final checkpoint, no error */
	testfs_remove();
}

/* fsync writes its log out with the lock released (writeout.c): held
 * at that pwrite when the shutdown comes, it writes nothing after. */
START_TEST(nologflush_stops_a_write_in_flight)
{
	uint64_t ino;
	struct lfs_fs *fs = fs_with_file(&ino);
	uint8_t buf[8 * 4096];
	fill_pattern(buf, sizeof(buf), 4);
	ck_assert_int_eq(lfs_write(fs, ino, buf, sizeof(buf), 0, NULL), (ssize_t)sizeof(buf));
	shutdown_while_held(fs, LFS_FAULT_PWRITE, OP_FSYNC, ino);
}
END_TEST

/* A checkpoint waits for the disk between writing its tables and its
 * region, with the lock released (ckpt.c): held at that fdatasync when
 * the shutdown comes, it writes no region and commits nothing. */
START_TEST(nologflush_stops_a_checkpoint_in_flight)
{
	uint64_t ino;
	struct lfs_fs *fs = fs_with_file(&ino);
	uint8_t buf[4096];
	fill_pattern(buf, sizeof(buf), 5);
	ck_assert_int_eq(lfs_write(fs, ino, buf, sizeof(buf), 0, NULL), (ssize_t)sizeof(buf));
	shutdown_while_held(fs, LFS_FAULT_SYNC, OP_SYNCFS, ino);
}
END_TEST

CHECK_MAIN("fail", "fail", 30, first_failure_is_final, failed_fdatasync_is_final,
	   writers_stop_readers_go_on, failure_after_shutdown, idle_sync_after_failure_is_eio,
	   nologflush_stops_a_write_in_flight, nologflush_stops_a_checkpoint_in_flight)
