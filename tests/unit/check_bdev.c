/*
 * check_bdev.c — mirrors lfs/dev/bdev.c, the block I/O layer under everything:
 * holds it to its bounds (a write past the end of the image is refused, a
 * read past it fails rather than returning zeros), to whole transfers, to
 * read-only opens, to the sticky failure after a failed write or flush
 * (a retried fdatasync may acknowledge lost data), to its counters (read
 * errors are the device's, told apart from corruption by roll-forward),
 * and to the trace format lfs-crashsim rebuilds images from.
 */
#include "testfs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#define IMG_BYTES (16u << 20)   /* 4,096 blocks of 4 KiB */
#define BS 4096u

/* A scratch image of IMG_BYTES (the file: its lfs content is not used)
 * opened read-write or read-only. */
static void
open_image(struct lfs_bdev *dev, bool readonly)
{
	testfs_make(IMG_BYTES, 256 << 10);
	ck_assert_int_eq(lfs_bdev_open(dev, testfs_path, readonly), 0);
}

/* The image's bytes at `off`, read past the layer under test. */
static void
raw_read(uint64_t off, void *buf, size_t len)
{
	int fd = open(testfs_path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static void
close_image(struct lfs_bdev *dev)
{
	lfs_bdev_close(dev);
	ck_assert_int_eq(dev->fd, -1);
	testfs_remove();
}

/* An open knows the size of a regular file and starts at the default
 * block size with nothing counted; what it cannot use is refused with
 * the errno the caller reports (not a block device or file: ENOTBLK). */
START_TEST(open_sizes_and_refusals)
{
	struct lfs_bdev dev;
	open_image(&dev, false);
	ck_assert_uint_eq(dev.size_bytes, 16777216);
	ck_assert_uint_eq(dev.block_size, 4096);
	ck_assert(!dev.readonly);
	ck_assert(!dev.failed);
	ck_assert_int_eq(dev.trace_fd, -1);
	ck_assert_uint_eq(dev.bytes_read + dev.bytes_written + dev.read_errors, 0);
	close_image(&dev);

	ck_assert_int_eq(lfs_bdev_open(&dev, "/tmp/lfs-unit-no-such-image", true), -ENOENT);
	ck_assert_int_eq(lfs_bdev_open(&dev, "/dev/null", true), -ENOTBLK);
	ck_assert_int_eq(lfs_bdev_open(&dev, "/tmp", true), -ENOTBLK);
	ck_assert_int_eq(lfs_bdev_open(&dev, "/tmp", false), -EISDIR);
}
END_TEST

/* Blocks are addressed by dev->block_size, whatever it was set to, and
 * the last block of the image is usable; one byte past it is not: a
 * write there is ENOSPC (and fails the device, as every failed write),
 * a read there is EIO, never zeros taken for an empty block. */
START_TEST(block_io_at_bounds)
{
	struct lfs_bdev dev;
	open_image(&dev, false);
	uint8_t a[2 * BS], b[2 * BS];
	fill_pattern(a, sizeof(a), 1);

	/* the last 4 KiB block: 4095 */
	ck_assert_int_eq(lfs_bdev_write(&dev, 4095, 1, a), 0);
	raw_read(16773120, b, BS);
	ck_assert_mem_eq(a, b, BS);
	memset(b, 0, sizeof(b));
	ck_assert_int_eq(lfs_bdev_read(&dev, 4095, 1, b), 0);
	ck_assert_mem_eq(a, b, BS);
	ck_assert_uint_eq(dev.bytes_written, 4096);
	ck_assert_uint_eq(dev.bytes_read, 4096);

	/* 1 KiB blocks: block 5 is byte 5120 */
	dev.block_size = 1024;
	ck_assert_int_eq(lfs_bdev_write(&dev, 5, 2, a), 0);
	raw_read(5120, b, 2048);
	ck_assert_mem_eq(a, b, 2048);
	dev.block_size = BS;

	/* a read of the last block and one more: the first part arrives,
	 * the part past the end is an error, not counted as the device's */
	ck_assert_int_eq(lfs_bdev_read(&dev, 4095, 2, b), -EIO);
	ck_assert_int_eq(lfs_bdev_pread(&dev, 16777216, 1, b), -EIO);
	ck_assert_uint_eq(dev.read_errors, 0);
	ck_assert(!dev.failed);

	/* writes: straddling the end, then wholly past it */
	ck_assert_int_eq(lfs_bdev_pwrite(&dev, 16777216 - 100, 200, a), -ENOSPC);
	ck_assert(dev.failed);
	ck_assert_uint_eq(dev.bytes_written, 4096 + 2048);
	raw_read(16777216 - 100, b, 100);
	ck_assert_mem_eq(b, a + 4096 - 100, 100); /* what block 4095 held: untouched */
	close_image(&dev);

	open_image(&dev, false);
	ck_assert_int_eq(lfs_bdev_write(&dev, 4096, 1, a), -ENOSPC);
	ck_assert(dev.failed);
	close_image(&dev);
}
END_TEST

/* A read-only open never writes: EROFS without failing the device (the
 * read-only mount goes on reading), and a flush has nothing to do. */
START_TEST(readonly_open)
{
	struct lfs_bdev dev;
	open_image(&dev, true);
	ck_assert(dev.readonly);
	uint8_t a[BS], b[BS];
	fill_pattern(a, sizeof(a), 2);
	ck_assert_int_eq(lfs_bdev_write(&dev, 10, 1, a), -EROFS);
	ck_assert_int_eq(lfs_bdev_pwrite(&dev, 0, 1, a), -EROFS);
	ck_assert(!dev.failed);
	ck_assert_uint_eq(dev.bytes_written, 0);
	ck_assert_int_eq(lfs_bdev_sync(&dev), 0);
	raw_read(10 * BS, b, BS);
	ck_assert_mem_ne(a, b, BS);
	ck_assert_int_eq(lfs_bdev_read(&dev, 0, 1, b), 0);
	ck_assert_uint_eq(lfs_get32(b), LFS_SB_MAGIC);
	close_image(&dev);
}
END_TEST

/* After a failed write every later write and flush fails with EIO
 * without reaching the device (the injector is not even asked), as a
 * write that follows a lost one must not be acknowledged; reads go on. */
START_TEST(failed_write_is_sticky)
{
	struct lfs_bdev dev;
	open_image(&dev, false);
	uint8_t a[BS], b[BS];
	fill_pattern(a, sizeof(a), 3);
	ck_assert_int_eq(lfs_fault_arm("pwrite:2:EIO"), 0);
	ck_assert_int_eq(lfs_bdev_write(&dev, 20, 1, a), 0);
	ck_assert(!dev.failed);
	ck_assert_int_eq(lfs_bdev_write(&dev, 21, 1, a), -EIO);
	ck_assert(dev.failed);
	ck_assert_int_eq(lfs_bdev_write(&dev, 22, 1, a), -EIO);
	ck_assert_int_eq(lfs_bdev_sync(&dev), -EIO);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_PWRITE), 2);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_SYNC), 0);
	ck_assert_uint_eq(dev.bytes_written, 4096);
	raw_read(22 * BS, b, BS);
	ck_assert_mem_ne(a, b, BS);
	ck_assert_int_eq(lfs_bdev_read(&dev, 20, 1, b), 0);
	ck_assert_mem_eq(a, b, BS);
	lfs_fault_disarm();
	close_image(&dev);

	/* a failed flush too: its pages may be gone and marked clean */
	open_image(&dev, false);
	ck_assert_int_eq(lfs_fault_arm("fdatasync:1:EIO"), 0);
	ck_assert_int_eq(lfs_bdev_sync(&dev), -EIO);
	ck_assert(dev.failed);
	ck_assert_int_eq(lfs_bdev_write(&dev, 20, 1, a), -EIO);
	ck_assert_int_eq(lfs_bdev_sync(&dev), -EIO);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_SYNC), 1);
	lfs_fault_disarm();
	close_image(&dev);
}
END_TEST

/* A torn write (the crash harness's and the fault injector's model of
 * power loss mid-write) lands exactly its first half and reports EIO;
 * the counter holds what reached the image. */
START_TEST(torn_write_lands_first_half)
{
	struct lfs_bdev dev;
	open_image(&dev, false);
	uint8_t a[2 * BS], b[2 * BS], zero[BS] = { 0 };
	fill_pattern(a, sizeof(a), 4);
	ck_assert_int_eq(lfs_fault_arm("pwrite:1:short"), 0);
	ck_assert_int_eq(lfs_bdev_write(&dev, 30, 2, a), -EIO);
	ck_assert(dev.failed);
	ck_assert_uint_eq(dev.bytes_written, 4096);
	raw_read(30 * BS, b, sizeof(b));
	ck_assert_mem_eq(a, b, BS);
	ck_assert_mem_eq(b + BS, zero, BS);
	lfs_fault_disarm();
	close_image(&dev);

	/* an injected ENOSPC writes nothing */
	open_image(&dev, false);
	ck_assert_int_eq(lfs_fault_arm("pwrite:1:ENOSPC"), 0);
	ck_assert_int_eq(lfs_bdev_write(&dev, 30, 2, a), -ENOSPC);
	ck_assert_uint_eq(dev.bytes_written, 0);
	raw_read(30 * BS, b, BS);
	ck_assert_mem_eq(b, zero, BS);
	lfs_fault_disarm();
	close_image(&dev);
}
END_TEST

/* A read the device failed is counted (roll-forward fails the mount on
 * such a read rather than calling the data corrupt) and leaves the
 * device usable: reads are retried by their callers, writes go on. */
START_TEST(read_errors_counted)
{
	struct lfs_bdev dev;
	open_image(&dev, false);
	uint8_t b[BS];
	ck_assert_int_eq(lfs_fault_arm("pread:2:EIO"), 0);
	ck_assert_int_eq(lfs_bdev_read(&dev, 0, 1, b), 0);
	ck_assert_int_eq(lfs_bdev_read(&dev, 0, 1, b), -EIO);
	ck_assert_uint_eq(dev.read_errors, 1);
	ck_assert_int_eq(lfs_bdev_read(&dev, 0, 1, b), 0);
	ck_assert_uint_eq(dev.read_errors, 1);
	ck_assert_uint_eq(dev.bytes_read, 8192);
	ck_assert(!dev.failed);
	ck_assert_int_eq(lfs_bdev_write(&dev, 40, 1, b), 0);
	lfs_fault_disarm();
	close_image(&dev);
}
END_TEST

/* The trace: every write as le32 type 1, le32 length, le64 byte offset
 * and the data; every flush as type 2 with no data; nothing for a write
 * the layer refused. */
START_TEST(trace_records)
{
	struct lfs_bdev dev;
	open_image(&dev, false);
	char trace[sizeof(testfs_path) + 8];
	snprintf(trace, sizeof(trace), "%s.trace", testfs_path);
	ck_assert_int_eq(lfs_bdev_trace(&dev, trace), 0);
	uint8_t a[BS];
	fill_pattern(a, sizeof(a), 5);
	ck_assert_int_eq(lfs_bdev_write(&dev, 3, 1, a), 0);
	ck_assert_int_eq(lfs_bdev_sync(&dev), 0);
	ck_assert_int_eq(lfs_bdev_write(&dev, 4096, 1, a), -ENOSPC);
	lfs_bdev_close(&dev);

	uint8_t t[2 * 16 + BS + 1];
	int fd = open(trace, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, t, sizeof(t)), 4128);
	close(fd);
	unlink(trace);
	ck_assert_uint_eq(lfs_get32(t), 1);
	ck_assert_uint_eq(lfs_get32(t + 4), 4096);
	ck_assert_uint_eq(lfs_get64(t + 8), 12288);
	ck_assert_mem_eq(t + 16, a, BS);
	ck_assert_uint_eq(lfs_get32(t + 4112), 2);
	ck_assert_uint_eq(lfs_get32(t + 4116), 0);
	ck_assert_uint_eq(lfs_get64(t + 4120), 0);
	testfs_remove();
}
END_TEST

/* Blocks of the image file the host has allocated. */
static uint64_t
allocated_blocks(void)
{
	struct stat st;
	ck_assert_int_eq(stat(testfs_path, &st), 0);
	return (uint64_t)st.st_blocks * 512 / BS;
}

/* A discard punches a hole in an image file: the range reads back as
 * zeros, the host frees its blocks, the file keeps its size and the
 * blocks beside it their bytes; the trace records it as type 3 with its
 * length as data, in order with the writes and flushes. */
START_TEST(discard_punches_hole)
{
	struct lfs_bdev dev;
	open_image(&dev, false);
	char trace[sizeof(testfs_path) + 8];
	snprintf(trace, sizeof(trace), "%s.trace", testfs_path);
	ck_assert_int_eq(lfs_bdev_trace(&dev, trace), 0);
	static uint8_t a[64 * BS], b[64 * BS], zero[64 * BS];
	fill_pattern(a, sizeof(a), 6);
	ck_assert_int_eq(lfs_bdev_write(&dev, 1000, 64, a), 0);
	ck_assert_int_eq(lfs_bdev_sync(&dev), 0);
	uint64_t before = allocated_blocks();
	ck_assert_int_eq(lfs_bdev_discard(&dev, 1008 * BS, 48 * BS), 0);
	/* the host frees whole blocks of its own: most of the range */
	ck_assert_uint_le(allocated_blocks() + 40, before);
	ck_assert_int_eq(lfs_bdev_read(&dev, 1000, 64, b), 0);
	ck_assert_mem_eq(b, a, 8 * BS);
	ck_assert_mem_eq(b + 8 * BS, zero, 48 * BS);
	ck_assert_mem_eq(b + 56 * BS, a + 56 * BS, 8 * BS);
	struct stat st;
	ck_assert_int_eq(fstat(dev.fd, &st), 0);
	ck_assert_int_eq(st.st_size, IMG_BYTES);
	ck_assert_uint_eq(dev.bytes_written, 64 * BS); /* a discard writes nothing */
	/* past the end: refused, nothing recorded */
	ck_assert_int_eq(lfs_bdev_discard(&dev, IMG_BYTES - BS, 2 * BS), -EINVAL);
	lfs_bdev_close(&dev);

	static uint8_t t[3 * 16 + 64 * BS + 8 + 1];
	int fd = open(trace, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, t, sizeof(t)), 3 * 16 + 64 * BS + 8);
	close(fd);
	unlink(trace);
	const uint8_t *r = t + 16 + 64 * BS + 16;
	ck_assert_uint_eq(lfs_get32(t), LFS_TRACE_WRITE);
	ck_assert_uint_eq(lfs_get32(t + 16 + 64 * BS), LFS_TRACE_FLUSH);
	ck_assert_uint_eq(lfs_get32(r), LFS_TRACE_DISCARD);
	ck_assert_uint_eq(lfs_get32(r + 4), 8);
	ck_assert_uint_eq(lfs_get64(r + 8), 1008 * BS);
	ck_assert_uint_eq(lfs_get64(r + 16), 48 * BS);
	testfs_remove();
}
END_TEST

/* The fault injector fails the Nth discard (EIO, or EOPNOTSUPP as a
 * store that cannot discard says) without touching the image; a failed
 * discard is not sticky: writes and flushes go on.  A read-only open
 * discards nothing, nor does a fenced device. */
START_TEST(discard_faults)
{
	struct lfs_bdev dev;
	open_image(&dev, false);
	uint8_t a[BS], b[BS];
	fill_pattern(a, sizeof(a), 7);
	ck_assert_int_eq(lfs_bdev_write(&dev, 50, 1, a), 0);
	ck_assert_int_eq(lfs_fault_arm("discard:1:EIO+discard:2:EOPNOTSUPP"), 0);
	ck_assert_int_eq(lfs_bdev_discard(&dev, 50 * BS, BS), -EIO);
	ck_assert_int_eq(lfs_bdev_discard(&dev, 50 * BS, BS), -EOPNOTSUPP);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_DISCARD), 2);
	ck_assert_int_eq(lfs_bdev_read(&dev, 50, 1, b), 0);
	ck_assert_mem_eq(a, b, BS);
	ck_assert(!dev.failed);
	ck_assert_int_eq(lfs_bdev_write(&dev, 51, 1, a), 0);
	ck_assert_int_eq(lfs_bdev_sync(&dev), 0);
	ck_assert_int_eq(lfs_fault_arm("discard:1:ENOMEM"), -EINVAL);
	lfs_fault_disarm();
	lfs_bdev_fence(&dev);
	ck_assert_int_eq(lfs_bdev_discard(&dev, 50 * BS, BS), -EIO);
	lfs_bdev_close(&dev);
	ck_assert_int_eq(lfs_bdev_open(&dev, testfs_path, true), 0);
	ck_assert_int_eq(lfs_bdev_discard(&dev, 50 * BS, BS), -EROFS);
	ck_assert_int_eq(lfs_bdev_read(&dev, 50, 1, b), 0);
	ck_assert_mem_eq(a, b, BS);
	close_image(&dev);
}
END_TEST

CHECK_MAIN("bdev", "bdev", 30, open_sizes_and_refusals, block_io_at_bounds, readonly_open,
	   failed_write_is_sticky, torn_write_lands_first_half, read_errors_counted, trace_records,
	   discard_punches_hole, discard_faults)
