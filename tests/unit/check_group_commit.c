/*
 * check_group_commit.c — group_commit.c, waiting for the disk with the
 * lock released, and the checkpoint job of ckpt.c that uses it.
 *
 * A test's hook (lfs_fault_set_hook) holds chosen fdatasyncs of the
 * image at a gate, on the thread that waits for them, while the test
 * goes on in the main thread: every call it makes there would wait
 * forever if the flush were still made under fs->lock, and the test's
 * timeout would fail it.  What is asserted: other requests go on; only
 * what was written when a flush began is counted durable; concurrent
 * fsyncs share flushes; a flush or a checkpoint needed meanwhile by a
 * request that holds the lock finishes the waiting checkpoint first,
 * so the log never runs past the head its region records; unmount
 * waits for a flush in progress.
 */
#include "gate.h"
#include "testfs.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static void
write_block(struct lfs_fs *fs, uint64_t ino, uint64_t lblk, unsigned seed)
{
	uint8_t buf[4096];
	fill_pattern(buf, sizeof(buf), seed);
	ck_assert_int_eq(lfs_write(fs, ino, buf, sizeof(buf), (off_t)(lblk * 4096), NULL), 4096);
}

static void
assert_block(struct lfs_fs *fs, uint64_t ino, uint64_t lblk, unsigned seed)
{
	uint8_t buf[4096], want[4096];
	fill_pattern(want, sizeof(want), seed);
	ck_assert_int_eq(lfs_read(fs, ino, buf, sizeof(buf), (off_t)(lblk * 4096)), 4096);
	ck_assert_mem_eq(buf, want, sizeof(buf));
}

/* Start a syncfs whose checkpoint stops at its first flush, and wait
 * until it does. */
static void
start_waiting_checkpoint(struct req *r, struct lfs_fs *fs)
{
	gate_reset(LFS_FAULT_SYNC);
	req_start(r, fs, OP_SYNCFS, 0, true);
	gate_wait_entered(1);
	ck_assert(fs->ckpt_job.active);
	ck_assert_uint_eq(fs->ckpt_job.stage, 1);
}

/* A crash, a mount, and blocks 0 and 1 of ino hold seeds s0 and s1. */
static struct lfs_fs *
crash_and_check(struct lfs_fs *fs, uint64_t ino, unsigned s0, unsigned s1)
{
	gate_remove();
	lfs_abandon(fs);
	fs = testfs_mount();
	assert_block(fs, ino, 0, s0);
	assert_block(fs, ino, 1, s1);
	return fs;
}

/* While an fsync waits for its flush, other requests read, stat, write
 * and flush.  Bytes written meanwhile are not counted durable by it:
 * synced_bytes stops where the flush began, and a later fsync flushes
 * again for them. */
START_TEST(fsync_lets_others_go_on)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, 1 << 20, 2, &ino);
	uint64_t other = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	gate_reset(LFS_FAULT_SYNC);
	write_block(fs, ino, 2, 7);
	struct req r;
	req_start(&r, fs, OP_FSYNC, ino, true);
	gate_wait_entered(1);
	uint64_t began = fs->dev.bytes_written;

	struct stat st;
	ck_assert_int_eq(lfs_getattr(fs, ino, &st), 0);
	ck_assert_int_eq(st.st_size, 3 * 4096);
	assert_block(fs, ino, 0, 1);
	assert_block(fs, ino, 2, 7);
	write_block(fs, other, 0, 8);
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_uint_gt(fs->dev.bytes_written, began);
	ck_assert(!atomic_load(&r.done));

	gate_open_one();
	ck_assert_int_eq(req_join(&r), 0);
	ck_assert_uint_eq(fs->synced_bytes, began);
	gate_remove();
	ck_assert_int_eq(lfs_fsync(fs, other, false), 0);
	ck_assert_uint_eq(fs->synced_bytes, fs->dev.bytes_written);
	testfs_finish(fs);
}
END_TEST

/* Eight fsyncs at once share flushes: the first flush is held until all
 * eight callers have written their data and wait; one more flush then
 * covers all of it.  Two fdatasyncs for eight fsyncs, and each file is
 * on disk after a crash that follows them. */
START_TEST(concurrent_fsyncs_share_flushes)
{
	enum { N = 8 };
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, 1 << 20, 1, &ino);
	uint64_t inos[N];
	for (int i = 0; i < N; i++) {
		char name[8];
		snprintf(name, sizeof(name), "f%d", i);
		inos[i] = testfs_mkfile(fs, LFS_ROOT_INO, name);
	}
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(lfs_fault_arm("fdatasync:1000000:EIO"), 0);
	gate_reset(LFS_FAULT_SYNC);
	struct req r[N];
	write_block(fs, inos[0], 0, 100);
	req_start(&r[0], fs, OP_FSYNC, inos[0], true);
	gate_wait_entered(1);
	for (int i = 1; i < N; i++) {
		write_block(fs, inos[i], 0, 100 + (unsigned)i);
		req_start(&r[i], fs, OP_FSYNC, inos[i], false);
	}
	/* each has flushed its data and waits for the flush in progress
	 * (one that started a flush of its own would count an fdatasync) */
	while (atomic_load(&fs->disk_waiters) < N - 1 && lfs_fault_count(LFS_FAULT_SYNC) == 1)
		sched_yield();
	ck_assert_uint_eq(atomic_load(&fs->disk_waiters), N - 1);
	pthread_mutex_lock(&fs->lock);
	ck_assert_uint_eq(fs->dirty.count, 0);
	ck_assert_uint_eq(fs->tombstones.count, 0);
	pthread_mutex_unlock(&fs->lock);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_SYNC), 1);
	gate_open_one();
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(req_join(&r[i]), 0);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_SYNC), 2);
	ck_assert_uint_eq(fs->synced_bytes, fs->dev.bytes_written);
	lfs_fault_disarm();
	gate_remove();

	lfs_abandon(fs); /* a crash */
	fs = testfs_mount();
	for (int i = 0; i < N; i++)
		assert_block(fs, inos[i], 0, 100 + (unsigned)i);
	testfs_finish(fs);
}
END_TEST

/* A checkpoint waits for both of its flushes with the lock released:
 * reads and buffered writes go on at each, and it commits once both are
 * done. */
START_TEST(checkpoint_lets_others_go_on)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, 1 << 20, 2, &ino);
	write_block(fs, ino, 0, 9);
	uint64_t seq = fs->ckpt_seq;
	struct req r;
	start_waiting_checkpoint(&r, fs);
	assert_block(fs, ino, 0, 9);
	write_block(fs, ino, 1, 10);
	gate_open_one();

	gate_wait_entered(2);
	ck_assert(fs->ckpt_job.active);
	ck_assert_uint_eq(fs->ckpt_job.stage, 2);
	ck_assert_uint_eq(fs->ckpt_seq, seq);
	assert_block(fs, ino, 1, 10);
	gate_open_one();
	ck_assert_int_eq(req_join(&r), 0);
	ck_assert(!fs->ckpt_job.active);
	ck_assert_uint_eq(fs->ckpt_seq, seq + 1);
	/* the write made while it waited is the next checkpoint's */
	ck_assert(fs->changed_since_ckpt);
	ck_assert_uint_eq(fs->dirty.count, 1);
	gate_remove();
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	assert_block(fs, ino, 0, 9);
	assert_block(fs, ino, 1, 10);
	testfs_finish(fs);
}
END_TEST

/* A flush asked for while a checkpoint waits for its first fdatasync
 * (by a request that holds the lock and cannot wait without it) commits
 * that checkpoint first, under the lock: the log must not run past the
 * head its region records, or roll-forward from it would stop at psegs
 * of the previous epoch.  The data flushed after it, and synced, is
 * found after a crash; the waiting request learns its checkpoint
 * committed. */
START_TEST(flush_finishes_waiting_checkpoint)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, 1 << 20, 2, &ino);
	uint64_t seq = fs->ckpt_seq;
	write_block(fs, ino, 0, 11);
	struct req r;
	start_waiting_checkpoint(&r, fs);
	uint64_t head = fs->ckpt_job.h.head_seg, off = fs->ckpt_job.h.head_off;
	ck_assert_uint_eq(fs->cur_seg, head);
	ck_assert_uint_eq(fs->cur_off, off);

	write_block(fs, ino, 1, 12);
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert(!fs->ckpt_job.active);
	ck_assert_uint_eq(fs->ckpt_seq, seq + 1);
	ck_assert_uint_gt(fs->cur_off, off);
	ck_assert_int_eq(lfs_sync(fs), 0);
	gate_open_all();
	ck_assert_int_eq(req_join(&r), 0);
	ck_assert_uint_eq(fs->ckpt_seq, seq + 1);
	testfs_finish(crash_and_check(fs, ino, 11, 12));
}
END_TEST

/* The same for a second checkpoint, asked for with the lock held (as
 * making room does): it commits the waiting one, then writes its own. */
START_TEST(checkpoint_finishes_waiting_checkpoint)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, 1 << 20, 2, &ino);
	uint64_t seq = fs->ckpt_seq;
	write_block(fs, ino, 0, 13);
	struct req r;
	start_waiting_checkpoint(&r, fs);
	write_block(fs, ino, 1, 14);
	pthread_mutex_lock(&fs->lock);
	ck_assert_int_eq(lfs_ckpt_write(fs, false), 0);
	pthread_mutex_unlock(&fs->lock);
	ck_assert_uint_eq(fs->ckpt_seq, seq + 2);
	ck_assert_uint_eq(fs->dirty.count, 0);
	gate_open_one();
	ck_assert_int_eq(req_join(&r), 0);
	ck_assert_uint_eq(fs->ckpt_seq, seq + 2);
	testfs_finish(crash_and_check(fs, ino, 13, 14));
}
END_TEST

/* Unmounting waits for a flush in progress before the device closes. */
START_TEST(unmount_waits_for_flush)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, 1 << 20, 1, &ino);
	write_block(fs, ino, 1, 15);
	gate_reset(LFS_FAULT_SYNC);
	struct req f, q;
	req_start(&f, fs, OP_FSYNC, ino, true);
	gate_wait_entered(1);
	req_start(&q, fs, OP_QUIESCE, 0, false);
	wait_disk_waiters(fs, 1, &q);
	ck_assert(!atomic_load(&q.done));
	ck_assert_uint_eq(atomic_load(&fs->disk_waiters), 1);
	ck_assert_int_eq(gate_count(), 1);
	gate_open_one();
	ck_assert_int_eq(req_join(&f), 0);
	ck_assert_int_eq(req_join(&q), 0);
	gate_remove();
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	assert_block(fs, ino, 1, 15);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("group_commit", "core", 60, fsync_lets_others_go_on, concurrent_fsyncs_share_flushes,
	   checkpoint_lets_others_go_on, flush_finishes_waiting_checkpoint, checkpoint_finishes_waiting_checkpoint,
	   unmount_waits_for_flush)
