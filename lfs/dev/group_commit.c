/*
 * group_commit.c — layer 1: waiting for the disk without holding up the
 * filesystem.
 *
 * An fdatasync takes milliseconds; every other request would wait that
 * long behind fs->lock if it were held meanwhile.  So a caller that
 * needs its writes durable marks a flush as running, releases the lock
 * for the system call and takes it back.  Writes made meanwhile by
 * other requests may or may not be covered: only what was written when
 * the flush began is counted durable (fs->synced_bytes).  A caller who
 * finds a flush running waits for it, then starts one of its own only
 * if that one began too early to cover its writes: concurrent fsyncs
 * share flushes (group commit), and at most two flushes are ever
 * waited for.
 */
#include "lfs_int.h"

/* Wait for the disk (a flush or a checkpoint to end), counted. */
static void
wait_disk(struct lfs_fs *fs)
{
	atomic_fetch_add(&fs->disk_waiters, 1);
	pthread_cond_wait(&fs->disk_cond, &fs->lock);
	atomic_fetch_sub(&fs->disk_waiters, 1);
}

int
lfs_sync_unlocked(struct lfs_fs *fs, uint64_t upto)
{
	for (;;) {
		if (fs->fatal)
			return fs->fatal;
		if (fs->dev.readonly || fs->synced_bytes >= upto)
			return 0;
		if (fs->syncing) {
			wait_disk(fs);
			continue;
		}
		uint64_t covers = fs->dev.bytes_written;
		int err = lfs_bdev_sync_begin(&fs->dev);
		if (!err) {
			fs->syncing = true;
			pthread_mutex_unlock(&fs->lock);
			err = lfs_bdev_sync_wait(&fs->dev);
			lfs_lock(fs);
			fs->syncing = false;
			lfs_bdev_sync_end(&fs->dev, err);
			pthread_cond_broadcast(&fs->disk_cond);
		}
		if (err)
			return lfs_fail(fs, err, "fdatasync of the image");
		if (covers > fs->synced_bytes)
			fs->synced_bytes = covers;
	}
}

void
lfs_sync_drain(struct lfs_fs *fs)
{
	while (fs->syncing || fs->ckpt_job.active || fs->out_writers)
		wait_disk(fs);
}
