/*
 * fail.c — the failed state.
 *
 * When the image fails a write or a flush, what the log holds past the
 * last successful fdatasync is unknown, and on Linux retrying the flush
 * proves nothing (bdev.h).  So the first failure is final, as in
 * PostgreSQL and LMDB: fs->fatal becomes -EIO, every later write, fsync
 * and checkpoint fails with it, reads go on from memory and the image,
 * and the next mount recovers the last durable state by roll-forward.
 *
 * lfs_shutdown enters the same state on request (FS_IOC_SHUTDOWN): what
 * it leaves unwritten is lost exactly as in a power cut at that moment,
 * which is what crash tests and cluster fencing want from it.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int
lfs_fail(struct lfs_fs *fs, int err, const char *fmt, ...)
{
	if (fs->fatal)
		return fs->fatal;
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	lfs_log("%s: %s; the filesystem has failed: writes, fsync and checkpoints now fail with EIO "
		"(reads still work); remount to recover the last durable state", what, strerror(-err));
	fs->fatal = -EIO;
	return fs->fatal;
}

int
lfs_sync(struct lfs_fs *fs)
{
	if (fs->fatal)
		return fs->fatal;
	int err = lfs_bdev_sync(&fs->dev);
	if (err)
		return lfs_fail(fs, err, "fdatasync of the image");
	fs->synced_bytes = fs->dev.bytes_written;
	return 0;
}

int
lfs_shutdown(struct lfs_fs *fs, unsigned how)
{
	static const char *const names[] = { "fullsync", "metaflush", "nologflush" };
	if (how > LFS_SHUTDOWN_NOLOGFLUSH)
		return -EINVAL;
	pthread_mutex_lock(&fs->lock);
	if (fs->fatal) {
		/* ext4 answers a second shutdown with success and does nothing */
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	int err = 0;
	if (!fs->dev.readonly && how == LFS_SHUTDOWN_FULLSYNC)
		err = lfs_flush(fs);
	/* the log already written reaches the medium; in a log-structured
	 * filesystem that is the journal ext4's METAFLUSH commits */
	if (!err && !fs->dev.readonly && how != LFS_SHUTDOWN_NOLOGFLUSH &&
	    fs->dev.bytes_written != fs->synced_bytes)
		err = lfs_sync(fs);
	if (err)
		lfs_log("shutdown (%s): the flush before it failed: %s; shutting down anyway", names[how],
			strerror(-err));
	lfs_log("shut down on request (%s): writes, fsync and checkpoints now fail with EIO; the next "
		"mount recovers as after a power cut", names[how]);
	fs->fatal = -EIO;
	fs->shut_down = true;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}
