/*
 * fail.c — layer 1: the failed state.
 *
 * When the image fails a write or a flush, what the log holds past the
 * last successful fdatasync is unknown, and on Linux retrying the flush
 * proves nothing (bdev.h).  So the first failure is final, as in
 * PostgreSQL and LMDB: fs->fatal becomes -EIO, every later write, fsync
 * and checkpoint fails with it, reads go on from memory and the image,
 * and the next mount recovers the last durable state by roll-forward.
 * lfs_shutdown (mount.c) enters the same state on request.
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
