/*
 * check_mount.c — mirrors lfs/fs/mount.c and lfs/format/super.c: opening an image.
 * Holds them to mkfs's geometry, to one way of finding and refusing a
 * superblock (block 0, else the backup; a newer format or an unknown
 * incompatible feature refused and not "repaired" from the backup; a
 * truncated image refused, with the words the tools print), to the
 * image lock (one daemon per image), to read-only mounts that write
 * nothing, to the checkpoint every writable mount starts with, to the
 * orphans a writable mount frees, to the periodic tick, and to the
 * mount options' defaults.
 */
#include "testfs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/inotify.h>

#define IMG_BYTES (16u << 20)
#define SEG_BYTES (256u << 10)
/* of a 16 MiB image with 256 KiB segments, as mkfs lays it out: the
 * last of its 4096 blocks holds the backup superblock */
#define IMG_BACKUP 4095u

static void
image_io(bool write, uint64_t off, void *buf, size_t len)
{
	int fd = open(testfs_path, write ? O_WRONLY : O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ssize_t n = write ? pwrite(fd, buf, len, (off_t)off) : pread(fd, buf, len, (off_t)off);
	ck_assert_int_eq(n, (ssize_t)len);
	close(fd);
}

/* The superblock at block `block` of the scratch image, decoded. */
static struct lfs_super
super_at(uint64_t block)
{
	uint8_t buf[LFS_SB_SIZE];
	image_io(false, block * 4096, buf, sizeof(buf));
	struct lfs_super sb;
	ck_assert_int_eq(lfs_super_decode(&sb, buf), 0);
	return sb;
}

/* Write sb, encoded and sealed, at `block`. */
static void
put_super(uint64_t block, const struct lfs_super *sb)
{
	uint8_t buf[LFS_SB_SIZE];
	lfs_super_encode(sb, buf);
	image_io(true, block * 4096, buf, sizeof(buf));
}

/* Make the 256 bytes at `block` something else: zero (no magic), or the
 * superblock with one bit of its geometry flipped (a bad crc). */
static void
spoil_super(uint64_t block, bool zero)
{
	uint8_t buf[LFS_SB_SIZE];
	image_io(false, block * 4096, buf, sizeof(buf));
	if (zero)
		memset(buf, 0, sizeof(buf));
	else
		buf[LFS_SB_OFF_NSEGS] ^= 1;
	image_io(true, block * 4096, buf, sizeof(buf));
}

static int
try_mount(bool readonly, struct lfs_fs **out)
{
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.ckpt_interval_s = 0;
	o.readonly = readonly;
	*out = NULL;
	return lfs_mount(testfs_path, &o, out);
}

/* lfs_super_open of the scratch image as the tools open it. */
static int
open_super(struct lfs_super *sb, struct lfs_super_where *w, char *why, size_t len)
{
	struct lfs_bdev dev;
	ck_assert_int_eq(lfs_bdev_open(&dev, testfs_path, true), 0);
	int err = lfs_super_open(&dev, 0, true, sb, w, why, len);
	if (!err)
		ck_assert_uint_eq(dev.block_size, sb->block_size);
	lfs_bdev_close(&dev);
	return err;
}

static uint64_t
ckpt_seq(struct lfs_fs *fs)
{
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	return st.ckpt_seq;
}

/* The defaults every mount starts from (lfs(8)): checkpoints every 30 s
 * or 32 segments (which bounds roll-forward), a flush every 5 s, 64 MiB
 * dirty at most, a 32 MiB inode cache; everything else off or zero, so
 * a caller that sets nothing gets relatime, writable, superblock at 0. */
START_TEST(options_defaults)
{
	struct lfs_opts o;
	memset(&o, 0xa5, sizeof(o));
	lfs_opts_default(&o);
	ck_assert_uint_eq(o.ckpt_interval_s, 30);
	ck_assert_uint_eq(o.ckpt_segs, 32);
	ck_assert_uint_eq(o.flush_interval_ms, 5000);
	ck_assert_uint_eq(o.dirty_limit, 67108864);
	ck_assert_uint_eq(o.cache_bytes, 33554432);
	ck_assert_ptr_null(o.trace_path);
	ck_assert_ptr_null(o.fault);
	ck_assert(!o.readonly && !o.hold_lock && !o.verbose);
	ck_assert_int_eq(o.atime, LFS_ATIME_RELATIME);
	ck_assert(!o.nodiratime && !o.dirsync && !o.sync);
	ck_assert_uint_eq(o.sb_block, 0);
}
END_TEST

/* mkfs's layout (lfs_plan_geometry) in numbers fixed by format.h: region
 * sizes from the table sizes, segment 0 on a segment boundary, the
 * backup in the last block and the segments before it, a reserve of a
 * tenth (at least 4) plus the tables; a device too small for the
 * reserve and LFS_MIN_FREE_SEGS more is -ENOSPC. */
START_TEST(geometry)
{
	struct lfs_super sb;
	ck_assert_int_eq(lfs_plan_geometry(&sb, IMG_BYTES, 4096, SEG_BYTES, 0), 0);
	ck_assert_uint_eq(sb.magic, LFS_SB_MAGIC);
	ck_assert_uint_eq(sb.version, 1);
	ck_assert_uint_eq(sb.seg_blocks, 64);
	ck_assert_uint_eq(sb.max_inodes, 4096);     /* one per 4 KiB */
	ck_assert_uint_eq(sb.ckpt_blocks, 1);
	ck_assert_uint_eq(sb.ckpt_addr[0], 1);
	ck_assert_uint_eq(sb.ckpt_addr[1], 2);
	ck_assert_uint_eq(sb.seg0, 64);
	ck_assert_uint_eq(sb.nsegs, 62);
	ck_assert_uint_eq(sb.nblocks, 4032);
	ck_assert_uint_eq(sb.reserved_segs, 7);
	ck_assert_uint_eq(sb.backup_sb, IMG_BACKUP);
	ck_assert_uint_eq(sb.feature_compat, LFS_FEATURE_BACKUP_SB);
	ck_assert_uint_eq(sb.feature_incompat, LFS_FEATURE_XATTR_BLOCKS | LFS_FEATURE_RECORD_CHARGE |
						       LFS_FEATURE_SNAPSHOTS | LFS_FEATURE_RELINK |
						       LFS_FEATURE_UNWRITTEN);
	uint8_t buf[LFS_SB_SIZE];
	struct lfs_super back;
	lfs_super_encode(&sb, buf);
	ck_assert_int_eq(lfs_super_decode(&back, buf), 0); /* what mkfs plans, a mount takes */

	/* inode counts: at least LFS_MIN_INODES, at most one per 256 bytes */
	ck_assert_int_eq(lfs_plan_geometry(&sb, IMG_BYTES, 4096, SEG_BYTES, 10), 0);
	ck_assert_uint_eq(sb.max_inodes, 1024);
	ck_assert_int_eq(lfs_plan_geometry(&sb, IMG_BYTES, 4096, SEG_BYTES, 1000000), 0);
	ck_assert_uint_eq(sb.max_inodes, 65536);

	/* 897 blocks leave 13 segments: the reserve of 5 and 8 free */
	ck_assert_int_eq(lfs_plan_geometry(&sb, 897ull * 4096, 4096, SEG_BYTES, 0), 0);
	ck_assert_uint_eq(sb.nsegs, 13);
	ck_assert_uint_eq(sb.reserved_segs, 5);
	ck_assert_int_eq(lfs_plan_geometry(&sb, 896ull * 4096, 4096, SEG_BYTES, 0), -ENOSPC);
	ck_assert_int_eq(lfs_plan_geometry(&sb, 1u << 20, 4096, 1u << 20, 0), -ENOSPC);
	ck_assert_int_eq(lfs_plan_geometry(&sb, 4096, 4096, SEG_BYTES, 0), -ENOSPC);

	ck_assert_uint_eq(lfs_reserve_segs(20, 0, 0, 64), 5);
	ck_assert_uint_eq(lfs_reserve_segs(1000, 64, 1, 256), 101);
	ck_assert_uint_eq(lfs_reserve_segs(1000, 300, 300, 256), 103);
}
END_TEST

/* Block 0 unreadable as a superblock: the backup in the last block is
 * used, and *w says so and why (the mount logs it); with both gone the
 * image is refused with the words the tools print.  A truncated image
 * and a file too small to hold a superblock are refused too, before
 * anything is sized by them. */
START_TEST(super_backup_and_refusals)
{
	testfs_make(IMG_BYTES, SEG_BYTES);
	struct lfs_super sb, orig = super_at(0);
	struct lfs_super_where w;
	char why[256];
	ck_assert_int_eq(open_super(&sb, &w, why, sizeof(why)), 0);
	ck_assert_uint_eq(w.block, 0);
	ck_assert_int_eq(w.primary_err, 0);
	ck_assert_str_eq(why, "");
	struct lfs_bdev dev;
	ck_assert_int_eq(lfs_bdev_open(&dev, testfs_path, true), 0);
	dev.block_size = 4096;
	ck_assert_int_eq(lfs_super_check_copy(&dev, &orig, IMG_BACKUP), 0);
	ck_assert_int_eq(lfs_super_check_copy(&dev, &orig, 1), -EFSCORRUPTED);
	ck_assert_int_eq(lfs_super_check_copy(&dev, &orig, IMG_BACKUP + 1), -EFSCORRUPTED);
	/* asked for a block: only that one, of any block size */
	ck_assert_int_eq(lfs_super_find(&dev, IMG_BACKUP, &sb, &w), 0);
	ck_assert_uint_eq(w.block, IMG_BACKUP);
	ck_assert_int_eq(lfs_super_open(&dev, 5, true, &sb, &w, why, sizeof(why)), -EINVAL);
	ck_assert_str_eq(why, "no lfs superblock at block 5 (for any block size)");
	lfs_bdev_close(&dev);

	spoil_super(0, false);
	ck_assert_int_eq(open_super(&sb, &w, why, sizeof(why)), 0);
	ck_assert_uint_eq(w.block, IMG_BACKUP);
	ck_assert_int_eq(w.primary_err, -EFSCORRUPTED);
	ck_assert_str_eq(lfs_super_why(w.primary_err), "holds a corrupt superblock (checksum or geometry)");
	ck_assert_mem_eq(sb.uuid, orig.uuid, 16);
	spoil_super(0, true);
	ck_assert_int_eq(open_super(&sb, &w, why, sizeof(why)), 0);
	ck_assert_int_eq(w.primary_err, -EINVAL);
	ck_assert_str_eq(lfs_super_why(w.primary_err), "holds no lfs superblock magic");
	/* the mount goes through the same search */
	struct lfs_fs *fs;
	ck_assert_int_eq(try_mount(false, &fs), 0);
	ck_assert_uint_eq(fs->sb.nsegs, 62);
	ck_assert_int_eq(lfs_unmount(fs), 0);

	spoil_super(IMG_BACKUP, false);
	ck_assert_int_eq(open_super(&sb, &w, why, sizeof(why)), -EINVAL);
	ck_assert_str_eq(why, "not an lfs image (no lfs superblock magic, and no backup superblock)");
	put_super(0, &orig);
	spoil_super(0, false);
	ck_assert_int_eq(open_super(&sb, &w, why, sizeof(why)), -EFSCORRUPTED);
	ck_assert_str_eq(why, "superblock is corrupt (checksum or geometry), and no backup superblock verifies");
	ck_assert_int_eq(try_mount(true, &fs), -EFSCORRUPTED);

	/* block 0 good, the image cut short by its last block */
	put_super(0, &orig);
	ck_assert_int_eq(truncate(testfs_path, 4031 * 4096), 0);
	ck_assert_int_eq(open_super(&sb, &w, why, sizeof(why)), -EFSCORRUPTED);
	ck_assert_str_eq(why, "image is truncated: 16510976 bytes, the superblock says 4032 blocks of 4096");
	ck_assert_int_eq(try_mount(true, &fs), -EFSCORRUPTED);
	/* a file of zeros; and one shorter than a superblock */
	ck_assert_int_eq(truncate(testfs_path, 0), 0);
	ck_assert_int_eq(truncate(testfs_path, 8192), 0);
	ck_assert_int_eq(open_super(&sb, &w, why, sizeof(why)), -EINVAL);
	ck_assert_str_eq(why, "not an lfs image (no lfs superblock magic, and no backup superblock)");
	ck_assert_int_eq(truncate(testfs_path, 255), 0);
	ck_assert_int_eq(open_super(&sb, &w, why, sizeof(why)), -EINVAL);
	ck_assert_str_eq(why, "255 bytes is too small to hold an lfs image");
	ck_assert_int_eq(try_mount(true, &fs), -EINVAL);
	testfs_remove();
}
END_TEST

/* Feature bits: an unknown compatible bit is ignored; a known
 * incompatible one (CSUM_SEED: a new uuid keeping the old seed) is
 * honoured; an unknown incompatible bit or a newer version is refused
 * with EPROTONOSUPPORT, and the older backup is not taken instead: a
 * newer format is not damage. */
START_TEST(feature_bits)
{
	testfs_make(IMG_BYTES, SEG_BYTES);
	struct lfs_fs *fs;
	ck_assert_int_eq(try_mount(false, &fs), 0);
	testfs_mkfile(fs, LFS_ROOT_INO, "f");
	ck_assert_int_eq(lfs_unmount(fs), 0);
	struct lfs_super orig = super_at(0), sb = orig, got;
	struct lfs_super_where w;
	char why[256];

	sb.feature_compat |= 0x80;
	put_super(0, &sb);
	ck_assert_int_eq(try_mount(false, &fs), 0);
	ck_assert_uint_eq(fs->sb.feature_compat, LFS_FEATURE_BACKUP_SB | 0x80);
	ck_assert_int_eq(lfs_unmount(fs), 0);

	sb = orig;
	sb.feature_incompat |= LFS_FEATURE_CSUM_SEED;
	sb.csum_seed = lfs_super_seed(&orig);
	sb.uuid[0] ^= 0xff;
	put_super(0, &sb);
	ck_assert_int_eq(try_mount(true, &fs), 0);
	testfs_fsck_clean(fs);
	lfs_abandon(fs);
	/* the same uuid without the seed: nothing in the log verifies */
	sb.feature_incompat &= ~LFS_FEATURE_CSUM_SEED;
	put_super(0, &sb);
	ck_assert_int_eq(try_mount(true, &fs), -EFSCORRUPTED);

	sb = orig;
	sb.feature_incompat |= 0x100;
	put_super(0, &sb);
	ck_assert_int_eq(open_super(&got, &w, why, sizeof(why)), -EPROTONOSUPPORT);
	ck_assert_str_eq(why, "image has format version 1 / incompatible features 0x13e; this lfs reads version 1");
	ck_assert_int_eq(try_mount(true, &fs), -EPROTONOSUPPORT);
	sb = orig;
	sb.version = 2;
	put_super(0, &sb);
	ck_assert_int_eq(open_super(&got, &w, why, sizeof(why)), -EPROTONOSUPPORT);
	ck_assert_str_eq(why, "image has format version 2 / incompatible features 0x3e; this lfs reads version 1");
	ck_assert_int_eq(try_mount(false, &fs), -EPROTONOSUPPORT);

	put_super(0, &orig);
	ck_assert_int_eq(try_mount(false, &fs), 0);
	testfs_finish(fs);
}
END_TEST

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	static char text[8192];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

struct second_mount {
	int err;
	struct lfs_fs *fs;
};

static void *
second_mount(void *arg)
{
	struct second_mount *m = arg;
	m->err = try_mount(false, &m->fs);
	/* wakes the wait below even if the mount never waited */
	lfs_log("second mount returned %d", m->err);
	return NULL;
}

/* One daemon per image: while a writable mount holds the image, the lock
 * shows (lfs_image_busy, what fsck.lfs asks) and a second mount does not
 * go ahead beside it but waits (no FUSE mount names the holder, so it
 * may be a daemon finishing its unmount); when the first lets go, the
 * second mounts.  A read-only mount without hold_lock takes no lock; a
 * read-only daemon (hold_lock) holds it as a writer does. */
START_TEST(image_lock)
{
	testfs_make(IMG_BYTES, SEG_BYTES);
	char logpath[] = "/tmp/lfs-unit-log-XXXXXX";
	int lfd = mkstemp(logpath);
	ck_assert_int_ge(lfd, 0);
	close(lfd);
	ck_assert_int_eq(lfs_log_to_file(logpath), 0);
	int fd = open(testfs_path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	char where[4096];

	struct lfs_fs *fs;
	ck_assert_int_eq(try_mount(true, &fs), 0);
	ck_assert_int_eq(lfs_image_busy(fd, testfs_path, where, sizeof(where)), 0);
	lfs_abandon(fs);
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.readonly = o.hold_lock = true;
	ck_assert_int_eq(lfs_mount(testfs_path, &o, &fs), 0);
	ck_assert_int_eq(lfs_image_busy(fd, testfs_path, where, sizeof(where)), 1);
	lfs_abandon(fs);
	ck_assert_int_eq(lfs_image_busy(fd, testfs_path, where, sizeof(where)), 0);

	ck_assert_int_eq(try_mount(false, &fs), 0);
	ck_assert_int_eq(lfs_image_busy(fd, testfs_path, where, sizeof(where)), 1);
	ck_assert_str_eq(where, "(a daemon finishing its unmount)");

	/* wait, by inotify on the log, until the second mount says it waits */
	int in = inotify_init1(IN_CLOEXEC);
	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(inotify_add_watch(in, logpath, IN_MODIFY), 0);
	struct second_mount m = { -1, NULL };
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, second_mount, &m), 0);
	while (!strstr(slurp(logpath), "waiting up to 60 s") && !strstr(slurp(logpath), "second mount returned")) {
		char ev[4096];
		ck_assert_int_gt(read(in, ev, sizeof(ev)), 0);
	}
	ck_assert_msg(strstr(slurp(logpath), "is held by another lfs process that is not mounted (finishing an unmount?); waiting up to 60 s") &&
		      !strstr(slurp(logpath), "second mount returned"), "the second mount did not wait: %s",
		      slurp(logpath));
	ck_assert_int_eq(lfs_unmount(fs), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(m.err, 0);
	close(in);
	close(fd);
	unlink(logpath);
	testfs_finish(m.fs);
}
END_TEST

/* A read-only mount writes nothing to the image, not even the
 * checkpoint a writable mount starts with, refuses changes with EROFS,
 * and cannot be switched writable (it holds no lock).  A writable mount
 * starts a new epoch: one checkpoint at mount, one at unmount. */
START_TEST(readonly_writes_nothing)
{
	testfs_make(IMG_BYTES, SEG_BYTES);
	uint8_t *before = malloc(IMG_BYTES), *after = malloc(IMG_BYTES);
	ck_assert(before && after);
	image_io(false, 0, before, IMG_BYTES);

	struct lfs_fs *fs;
	ck_assert_int_eq(try_mount(true, &fs), 0);
	ck_assert_uint_eq(ckpt_seq(fs), 1);         /* mkfs's */
	ck_assert(lfs_is_readonly(fs));
	struct stat st;
	ck_assert_int_eq(lfs_getattr(fs, LFS_ROOT_INO, &st), 0);
	ck_assert_int_eq(lfs_create(fs, LFS_ROOT_INO, "f", 0644, true, &testfs_me, &st), -EROFS);
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "d", 0755, &testfs_me, &st), -EROFS);
	ck_assert_int_eq(lfs_set_readonly(fs, false), -EROFS);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	image_io(false, 0, after, IMG_BYTES);
	ck_assert_msg(memcmp(before, after, IMG_BYTES) == 0, "a read-only mount changed the image");

	ck_assert_int_eq(try_mount(false, &fs), 0);
	ck_assert_uint_eq(ckpt_seq(fs), 2);
	ck_assert(!lfs_is_readonly(fs));
	/* after the final checkpoint nothing more is written */
	ck_assert_int_eq(lfs_quiesce(fs), 0);
	ck_assert_uint_eq(ckpt_seq(fs), 3);
	ck_assert_int_eq(lfs_create(fs, LFS_ROOT_INO, "f", 0644, true, &testfs_me, &st), -EROFS);
	ck_assert_int_eq(lfs_set_readonly(fs, false), -EBUSY);
	ck_assert_int_eq(lfs_quiesce(fs), 0);
	ck_assert_uint_eq(ckpt_seq(fs), 3);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	ck_assert_int_eq(try_mount(true, &fs), 0);
	ck_assert_uint_eq(ckpt_seq(fs), 3);
	lfs_abandon(fs);
	free(before);
	free(after);
	testfs_remove();
}
END_TEST

/* A file unlinked while open and then the daemon killed leaves an
 * orphan: a writable mount frees it (number and blocks), a read-only
 * one leaves it as it is, an inode with no name. */
START_TEST(orphans_freed_at_mount)
{
	testfs_make(IMG_BYTES, SEG_BYTES);
	struct lfs_fs *fs;
	ck_assert_int_eq(try_mount(false, &fs), 0);
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "o");
	uint8_t buf[3 * 4096];
	fill_pattern(buf, sizeof(buf), 1);
	ck_assert_int_eq(lfs_write(fs, ino, buf, sizeof(buf), 0, NULL), (ssize_t)sizeof(buf));
	ck_assert_int_eq(lfs_open(fs, ino, O_RDWR), 0);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "o"), 0);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	lfs_abandon(fs); /* killed with the file open */

	struct stat st;
	struct lfs_stats stats;
	ck_assert_int_eq(try_mount(true, &fs), 0);
	ck_assert_int_eq(lfs_getattr(fs, ino, &st), 0);
	ck_assert_uint_eq(st.st_nlink, 0);
	ck_assert_int_eq(st.st_size, (off_t)sizeof(buf));
	lfs_get_stats(fs, &stats);
	ck_assert_uint_eq(stats.inodes_used, 2);
	lfs_abandon(fs);

	ck_assert_int_eq(try_mount(false, &fs), 0);
	ck_assert_int_eq(lfs_getattr(fs, ino, &st), -ESTALE);
	lfs_get_stats(fs, &stats);
	ck_assert_uint_eq(stats.inodes_used, 1);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* The periodic tick flushes dirty state once flush_interval_ms has
 * passed since the last flush, and checkpoints once ckpt_interval_s has
 * passed since the last checkpoint (never with 0); not before.  The
 * clock is moved by back-dating what the tick compares with. */
START_TEST(tick_intervals)
{
	testfs_make(IMG_BYTES, SEG_BYTES);
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.flush_interval_ms = 60000;
	o.ckpt_interval_s = 0;
	struct lfs_fs *fs;
	ck_assert_int_eq(lfs_mount(testfs_path, &o, &fs), 0);
	uint64_t seq = ckpt_seq(fs);
	testfs_mkfile(fs, LFS_ROOT_INO, "f");
	ck_assert_uint_gt(fs->dirty.count, 0);
	lfs_tick(fs);
	ck_assert_uint_gt(fs->dirty.count, 0);
	fs->last_flush_ns -= 61000000000ull;
	lfs_tick(fs);
	ck_assert_uint_eq(fs->dirty.count, 0);
	/* changed since the checkpoint, but checkpoints by time are off */
	ck_assert(fs->changed_since_ckpt);
	fs->ckpt_time_ns = 0;
	lfs_tick(fs);
	ck_assert_uint_eq(ckpt_seq(fs), seq);
	fs->opts.ckpt_interval_s = 30;
	fs->ckpt_time_ns = lfs_now_ns();
	lfs_tick(fs);
	ck_assert_uint_eq(ckpt_seq(fs), seq);
	fs->ckpt_time_ns -= 31000000000ull;
	lfs_tick(fs);
	ck_assert_uint_eq(ckpt_seq(fs), seq + 1);
	ck_assert(!fs->changed_since_ckpt);
	testfs_finish(fs);
}
END_TEST

/* What lfs_mount refuses before it reads anything, with the error the
 * daemon reports: a malformed fault= rule, a missing image, something
 * that is neither a file nor a block device. */
START_TEST(mount_arguments)
{
	struct lfs_opts o;
	lfs_opts_default(&o);
	struct lfs_fs *fs = NULL;
	o.fault = "pread:x:EIO";
	ck_assert_int_eq(lfs_mount("/nonexistent", &o, &fs), -EINVAL);
	o.fault = NULL;
	ck_assert_int_eq(lfs_mount("/tmp/lfs-unit-no-such-image", &o, &fs), -ENOENT);
	o.readonly = true;
	ck_assert_int_eq(lfs_mount("/tmp", &o, &fs), -ENOTBLK);
	ck_assert_ptr_null(fs);
}
END_TEST

CHECK_MAIN("mount", "open", 30, options_defaults, geometry, super_backup_and_refusals, feature_bits,
	   image_lock, readonly_writes_nothing, orphans_freed_at_mount, tick_intervals, mount_arguments)
