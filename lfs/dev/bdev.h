/*
 * bdev.h — layer 1: block I/O on an image file or block device.
 *
 * Everything above reads and writes whole blocks through these four
 * calls.  A trace file, when set, records every write and every flush
 * (the crash-state harness rebuilds images from it), and a counter of
 * bytes written gives the write amplification figures.
 *
 * A failed write or flush is sticky: afterwards every write and flush
 * fails with EIO.  Linux may report a failed fdatasync only once (the
 * pages it could not write are dropped and marked clean), so a retry
 * that succeeded would acknowledge data that never reached the disk.
 * A fenced device (lfs_bdev_fence) writes and flushes nothing more,
 * whoever asks and with whatever lock.  The fault injector (fault.h) is
 * asked before each operation.
 */
#ifndef LFS_BDEV_H
#define LFS_BDEV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct lfs_bdev {
	int fd;
	bool readonly;
	bool writable;              /* opened for writing, and not a read-only device:
				     * readonly may be lifted */
	uint32_t block_size;
	uint64_t size_bytes;        /* of the file or device */
	uint64_t bytes_written;     /* since open */
	uint64_t bytes_read;
	uint64_t read_errors;       /* reads the device failed (not bad checksums) */
	int trace_fd;               /* -1: no trace */
	bool failed;                /* a write or flush failed: no more of either */
	atomic_bool fenced;         /* lfs_bdev_fence: no more writes or flushes */
};

/* Open PATH; returns 0 or -errno.  block_size may be set later. */
int lfs_bdev_open(struct lfs_bdev *dev, const char *path, bool readonly);
/* The same on a descriptor the caller opened (opened as `readonly`
 * says), which the device owns from now on, closed on failure too:
 * -ENOTBLK unless it is a regular file or a block device. */
int lfs_bdev_adopt(struct lfs_bdev *dev, int fd, bool readonly);
void lfs_bdev_close(struct lfs_bdev *dev);
int lfs_bdev_read(struct lfs_bdev *dev, uint64_t blk, uint32_t nblk, void *buf);
int lfs_bdev_write(struct lfs_bdev *dev, uint64_t blk, uint32_t nblk, const void *buf);
/* Start reading bytes a caller will soon read, so that reads it can
 * only make one after another (each address found in the block before)
 * overlap on the device.  A hint: nothing is read into the caller's
 * memory, counted, or failed here. */
void lfs_bdev_prefetch(const struct lfs_bdev *dev, uint64_t off, uint64_t len);
/* Read for a hint only (where to ask for more ahead): not counted, no
 * fault injected; what is used is read again through lfs_bdev_pread. */
int lfs_bdev_peek(const struct lfs_bdev *dev, uint64_t off, uint64_t len, void *buf);
/* Byte-granular variants, for the superblock and tools. */
int lfs_bdev_pread(struct lfs_bdev *dev, uint64_t off, uint64_t len, void *buf);
int lfs_bdev_pwrite(struct lfs_bdev *dev, uint64_t off, uint64_t len, const void *buf);
/* The write alone, for a writer without the lock that guards this
 * struct (writeout.c): no check of readonly or failed, no counter
 * changed; those are the caller's, with its lock. */
int lfs_bdev_pwrite_raw(const struct lfs_bdev *dev, uint64_t off, uint64_t len, const void *buf);
/* The same for a read without that lock, all of it or an error (*device:
 * the device's own, which lfs_bdev_read counts as a read error); the
 * caller counts it with its lock: the bytes that arrived, and whether
 * it failed so. */
int lfs_bdev_pread_raw(const struct lfs_bdev *dev, uint64_t off, uint64_t len, void *buf, bool *device);
void lfs_bdev_count_read(struct lfs_bdev *dev, uint64_t got, bool failed);
int lfs_bdev_sync(struct lfs_bdev *dev);
/* The same flush in three steps, for a caller that waits for the disk
 * with its lock released (group_commit.c): _begin and _end with the
 * lock that guards this struct, _wait without it (it touches only the
 * descriptor).  _end records a failure of _wait. */
int lfs_bdev_sync_begin(struct lfs_bdev *dev);
int lfs_bdev_sync_wait(const struct lfs_bdev *dev);
void lfs_bdev_sync_end(struct lfs_bdev *dev, int err);
/* From now on every write and flush fails with EIO before it reaches
 * the device, also one a thread without the lock is about to make: the
 * filesystem was shut down (lfs_shutdown), and what it had not written
 * by then is lost as in a power cut. */
void lfs_bdev_fence(struct lfs_bdev *dev);
/* Give len bytes at off back to the storage: a hole punched in an
 * image file (it reads back as zeros), BLKDISCARD on a block device
 * (what it reads back is the device's: zeros or the old bytes).  Safe
 * without the lock that guards this struct: it changes nothing in it.
 * Not sticky when it fails (what was there was garbage to the caller
 * anyway); -EOPNOTSUPP if the storage cannot, -EROFS, -EIO after a
 * failure or a fence.  The trace records it as a write of zeros. */
int lfs_bdev_discard(const struct lfs_bdev *dev, uint64_t off, uint64_t len);
/* Record all later writes, discards and flushes to PATH (see lfs-crashsim). */
int lfs_bdev_trace(struct lfs_bdev *dev, const char *path);

/* Trace record: le32 type, le32 len, le64 offset, len bytes of data.  A
 * discard's data is its length, le64 (len 8): the bytes it zeroed. */
#define LFS_TRACE_WRITE 1
#define LFS_TRACE_FLUSH 2
#define LFS_TRACE_DISCARD 3

#endif
