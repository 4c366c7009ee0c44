/* bdev.c — layer 1: pread/pwrite/fdatasync, with optional write tracing and
 * injected faults. */
#include "bdev.h"
#include "fault.h"
#include "format.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

int
lfs_bdev_open(struct lfs_bdev *dev, const char *path, bool readonly)
{
	int fd = open(path, (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return lfs_bdev_adopt(dev, fd, readonly);
}

int
lfs_bdev_adopt(struct lfs_bdev *dev, int fd, bool readonly)
{
	memset(dev, 0, sizeof(*dev));
	dev->trace_fd = -1;
	dev->readonly = readonly;
	dev->writable = !readonly;
	dev->fd = fd;
	struct stat st;
	if (fstat(dev->fd, &st) < 0) {
		int err = -errno;
		close(dev->fd);
		return err;
	}
	if (S_ISBLK(st.st_mode)) {
		uint64_t sz;
		if (ioctl(dev->fd, BLKGETSIZE64, &sz) < 0) {
			int err = -errno;
			close(dev->fd);
			return err;
		}
		dev->size_bytes = sz;
		/* a read-only device opens for writing, and fails each write */
		int ro = 0;
		if (ioctl(dev->fd, BLKROGET, &ro) == 0 && ro)
			dev->writable = false;
	} else if (S_ISREG(st.st_mode)) {
		dev->size_bytes = (uint64_t)st.st_size;
	} else {
		close(dev->fd);
		return -ENOTBLK;
	}
	dev->block_size = LFS_DEFAULT_BLOCK_SIZE;
	return 0;
}

void
lfs_bdev_close(struct lfs_bdev *dev)
{
	if (dev->trace_fd >= 0)
		close(dev->trace_fd);
	if (dev->fd >= 0)
		close(dev->fd);
	dev->fd = dev->trace_fd = -1;
}

/* The read itself; *device: the device failed it (or the fault
 * injector did, as the device would), not a read past the end of a
 * truncated image; *got: the bytes that arrived. */
static int
pread_all(const struct lfs_bdev *dev, uint64_t off, uint64_t len, void *buf, bool *device, uint64_t *got)
{
	*device = false;
	*got = 0;
	lfs_fault_hook(LFS_FAULT_PREAD);
	int fault = lfs_fault_check(LFS_FAULT_PREAD);
	*device = fault != 0;
	if (fault)
		return fault;
	uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = pread(dev->fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			*device = true;
			return -errno;
		}
		if (n == 0)             /* past the end of a truncated image */
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
		*got += (uint64_t)n;
	}
	return 0;
}

int
lfs_bdev_pread(struct lfs_bdev *dev, uint64_t off, uint64_t len, void *buf)
{
	bool device;
	uint64_t got;
	int err = pread_all(dev, off, len, buf, &device, &got);
	lfs_bdev_count_read(dev, got, device);
	return err;
}

int
lfs_bdev_pread_raw(const struct lfs_bdev *dev, uint64_t off, uint64_t len, void *buf, bool *device)
{
	uint64_t got;
	return pread_all(dev, off, len, buf, device, &got);
}

void
lfs_bdev_count_read(struct lfs_bdev *dev, uint64_t got, bool failed)
{
	dev->bytes_read += got;
	dev->read_errors += failed;
}

static int
write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
trace_record(const struct lfs_bdev *dev, uint32_t type, uint64_t off, uint64_t len, const void *data)
{
	uint8_t hdr[16];
	lfs_put32(hdr, type);
	lfs_put32(hdr + 4, (uint32_t)len);
	lfs_put64(hdr + 8, off);
	int err = write_all(dev->trace_fd, hdr, sizeof(hdr));
	if (!err && len)
		err = write_all(dev->trace_fd, data, len);
	return err;
}

/* Trace records of writers that run at once (writeout.c writes psegs
 * with the filesystem's lock released) must not interleave. */
static pthread_mutex_t trace_mu = PTHREAD_MUTEX_INITIALIZER;

void
lfs_bdev_fence(struct lfs_bdev *dev)
{
	atomic_store(&dev->fenced, true);
}

/* Asked last, just before the system call (after the test hook, which
 * may hold a thread where it would otherwise have gone ahead). */
static bool
fenced(const struct lfs_bdev *dev)
{
	return atomic_load((atomic_bool *)&dev->fenced);
}

/* Write all of buf; *done: the bytes written.  The trace records a write
 * once it is made, so a flush begun before then (its record stands at
 * its start, lfs_bdev_sync_begin) is never taken to cover it. */
static int
pwrite_all(const struct lfs_bdev *dev, uint64_t off, uint64_t len, const void *buf, uint64_t *done)
{
	const uint8_t *p = buf;
	uint64_t at = off, left = len;
	int err = 0;
	*done = 0;
	lfs_fault_hook(LFS_FAULT_PWRITE);
	if (fenced(dev))
		return -EIO;
	while (left > 0) {
		ssize_t n = pwrite(dev->fd, p, left, (off_t)at);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		p += n;
		at += (uint64_t)n;
		left -= (uint64_t)n;
		*done += (uint64_t)n;
	}
	if (dev->trace_fd >= 0 && *done) {
		pthread_mutex_lock(&trace_mu);
		int terr = trace_record(dev, LFS_TRACE_WRITE, off, *done, buf);
		pthread_mutex_unlock(&trace_mu);
		if (!err)
			err = terr;
	}
	return err;
}

/* A write inside the device, as an injected fault (fault.h) lets it:
 * *done counts the bytes that landed. */
static int
pwrite_checked(const struct lfs_bdev *dev, uint64_t off, uint64_t len, const void *buf, uint64_t *done)
{
	int err = off + len > dev->size_bytes ? -ENOSPC : lfs_fault_check(LFS_FAULT_PWRITE);
	if (err == LFS_FAULT_SHORT) { /* torn: the first half lands */
		pwrite_all(dev, off, len / 2, buf, done);
		err = -EIO;
	}
	if (!err)
		err = pwrite_all(dev, off, len, buf, done);
	return err;
}

int
lfs_bdev_pwrite_raw(const struct lfs_bdev *dev, uint64_t off, uint64_t len, const void *buf)
{
	uint64_t done = 0;
	return pwrite_checked(dev, off, len, buf, &done);
}

int
lfs_bdev_pwrite(struct lfs_bdev *dev, uint64_t off, uint64_t len, const void *buf)
{
	if (dev->readonly)
		return -EROFS;
	if (dev->failed)
		return -EIO;
	uint64_t done = 0;
	int err = pwrite_checked(dev, off, len, buf, &done);
	dev->bytes_written += done;
	if (err)
		dev->failed = true;
	return err;
}

int
lfs_bdev_read(struct lfs_bdev *dev, uint64_t blk, uint32_t nblk, void *buf)
{
	return lfs_bdev_pread(dev, blk * dev->block_size, (uint64_t)nblk * dev->block_size, buf);
}

void
lfs_bdev_prefetch(const struct lfs_bdev *dev, uint64_t off, uint64_t len)
{
	/* a hint: what it cannot do, the read that follows does or reports */
	if (off < dev->size_bytes && len <= dev->size_bytes - off)
		(void)posix_fadvise(dev->fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}

int
lfs_bdev_peek(const struct lfs_bdev *dev, uint64_t off, uint64_t len, void *buf)
{
	ssize_t n = off < dev->size_bytes && len <= dev->size_bytes - off ? pread(dev->fd, buf, len, (off_t)off) : 0;
	return n == (ssize_t)len ? 0 : -EIO;
}

int
lfs_bdev_write(struct lfs_bdev *dev, uint64_t blk, uint32_t nblk, const void *buf)
{
	return lfs_bdev_pwrite(dev, blk * dev->block_size, (uint64_t)nblk * dev->block_size, buf);
}

int
lfs_bdev_sync_begin(struct lfs_bdev *dev)
{
	if (dev->failed)
		return -EIO;
	/* the trace's flush record stands where the flush starts: what was
	 * written before it is what it covers, whatever is written while it
	 * runs (by other threads, the lock released) is not */
	int err = lfs_fault_check(LFS_FAULT_SYNC);
	if (!err && dev->trace_fd >= 0) {
		pthread_mutex_lock(&trace_mu);
		err = trace_record(dev, LFS_TRACE_FLUSH, 0, 0, NULL);
		pthread_mutex_unlock(&trace_mu);
	}
	if (err)
		dev->failed = true;
	return err;
}

int
lfs_bdev_sync_wait(const struct lfs_bdev *dev)
{
	lfs_fault_hook(LFS_FAULT_SYNC);
	if (fenced(dev))
		return -EIO;
	return fdatasync(dev->fd) < 0 ? -errno : 0;
}

void
lfs_bdev_sync_end(struct lfs_bdev *dev, int err)
{
	if (err)
		dev->failed = true;
}

int
lfs_bdev_sync(struct lfs_bdev *dev)
{
	if (dev->readonly)
		return 0;
	int err = lfs_bdev_sync_begin(dev);
	if (!err) {
		err = lfs_bdev_sync_wait(dev);
		lfs_bdev_sync_end(dev, err);
	}
	return err;
}

static int
discard_range(const struct lfs_bdev *dev, uint64_t off, uint64_t len)
{
	struct stat st;
	if (fstat(dev->fd, &st) < 0)
		return -errno;
	if (S_ISBLK(st.st_mode)) {
		uint64_t range[2] = { off, len };
		return ioctl(dev->fd, BLKDISCARD, range) < 0 ? -errno : 0;
	}
	if (fallocate(dev->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) < 0)
		return errno == ENOSYS ? -EOPNOTSUPP : -errno;
	return 0;
}

int
lfs_bdev_discard(const struct lfs_bdev *dev, uint64_t off, uint64_t len)
{
	if (dev->readonly || !dev->writable)
		return -EROFS;
	if (dev->failed)
		return -EIO;
	if (off > dev->size_bytes || len > dev->size_bytes - off)
		return -EINVAL;
	int err = lfs_fault_check(LFS_FAULT_DISCARD);
	if (err)
		return err;
	lfs_fault_hook(LFS_FAULT_DISCARD);
	if (fenced(dev))
		return -EIO;
	err = discard_range(dev, off, len);
	/* recorded once made, as a write is; a failed one may have zeroed
	 * part of the range */
	if (dev->trace_fd >= 0 && err != -EOPNOTSUPP) {
		uint8_t n[8];
		lfs_put64(n, len);
		pthread_mutex_lock(&trace_mu);
		int terr = trace_record(dev, LFS_TRACE_DISCARD, off, sizeof(n), n);
		pthread_mutex_unlock(&trace_mu);
		if (!err)
			err = terr;
	}
	return err;
}

int
lfs_bdev_trace(struct lfs_bdev *dev, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	dev->trace_fd = fd;
	return 0;
}
