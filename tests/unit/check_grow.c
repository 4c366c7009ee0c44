/*
 * check_grow.c — growing an unmounted image (lfs/fs/grow.c, lfs_grow_plan
 * and lfs_grow of image.h): the plan refuses a size that adds no segment
 * and one whose usage table the checkpoint regions cannot describe, and
 * lays out exactly the geometry a mount will accept; the grow keeps every
 * file, makes the new segments usable, moves the backup superblock to the
 * new last block, refuses a device too small or a log not cleanly
 * checkpointed, and leaves a mountable filesystem whichever of its writes
 * is the last to happen.
 */
#include "testfs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

/* testfs_make(16 MiB, 64 KiB): 4096 blocks, the backup superblock in
 * block 4095, checkpoint regions of one block at 1 and 2, segment 0 at
 * block 16, 254 segments of 16 blocks, 27 of them reserved, 4096 inodes. */
#define OLD_BYTES (16u << 20)
#define SEG (64u << 10)
#define BIG_LEN (3u << 20)

static struct lfs_super
planned_super(void)
{
	struct lfs_super sb;
	ck_assert_int_eq(lfs_plan_geometry(&sb, OLD_BYTES, 4096, SEG, 0), 0);
	ck_assert_uint_eq(sb.nsegs, 254);
	ck_assert_uint_eq(sb.seg0, 16);
	ck_assert_uint_eq(sb.nblocks, 4080);
	ck_assert_uint_eq(sb.backup_sb, 4095);
	ck_assert_uint_eq(sb.ckpt_blocks, 1);
	ck_assert_uint_eq(sb.reserved_segs, 27);
	ck_assert_uint_eq(sb.max_inodes, 4096);
	return sb;
}

/* Plan a grow to `bytes`: its error, and its message in why. */
static int
plan(const struct lfs_super *old, uint64_t bytes, struct lfs_super *g, char *why, size_t len)
{
	why[0] = 0;
	return lfs_grow_plan(old, bytes, g, why, len);
}

/* A size that does not add a whole segment is refused with a message
 * saying why (lfs-resize prints it): smaller (EINVAL), or the same
 * segments, larger by less than a segment or not at all (EALREADY:
 * nothing to do, which lfs-resize does not count as a failure). */
START_TEST(plan_refuses_what_does_not_grow)
{
	struct lfs_super old = planned_super(), g;
	char why[512];
	ck_assert_int_eq(plan(&old, 8u << 20, &g, why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "lfs-resize only grows"));
	ck_assert_int_eq(plan(&old, 0, &g, why, sizeof(why)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "only grows"));
	ck_assert_int_eq(plan(&old, OLD_BYTES, &g, why, sizeof(why)), -EALREADY);
	ck_assert_ptr_nonnull(strstr(why, "holds no more segments than the filesystem has (254 of 64 KiB)"));
	/* one segment more needs its 16 blocks and the backup's after
	 * segment 253's end: 16 + 255 * 16 + 1 = 4097 blocks */
	ck_assert_int_eq(plan(&old, 4097ull * 4096 - 1, &g, why, sizeof(why)), -EALREADY);
	ck_assert_int_eq(plan(&old, 4097ull * 4096, &g, why, sizeof(why)), 0);
	ck_assert_uint_eq(g.nsegs, 255);
	ck_assert_uint_eq(g.nblocks, 4096);
	ck_assert_uint_eq(g.backup_sb, 4096);
}
END_TEST

/* The grown geometry: more segments, the blocks they end at, a reserve
 * recomputed for them (10% and the tables: 102 + 2), the backup in the
 * new last block; everything else, the checkpoint regions above all,
 * exactly as it was.  The mount decodes it. */
START_TEST(plan_lays_out_grown_geometry)
{
	struct lfs_super old = planned_super(), g;
	char why[512];
	ck_assert_int_eq(plan(&old, 64u << 20, &g, why, sizeof(why)), 0);
	ck_assert_uint_eq(g.nsegs, 1022);
	ck_assert_uint_eq(g.nblocks, 16368);
	ck_assert_uint_eq(g.reserved_segs, 104);
	ck_assert_uint_eq(g.backup_sb, 16383);
	ck_assert(g.feature_compat & LFS_FEATURE_BACKUP_SB);
	ck_assert_uint_eq(g.seg0, old.seg0);
	ck_assert_uint_eq(g.seg_blocks, old.seg_blocks);
	ck_assert_uint_eq(g.ckpt_blocks, old.ckpt_blocks);
	ck_assert_uint_eq(g.ckpt_addr[0], old.ckpt_addr[0]);
	ck_assert_uint_eq(g.ckpt_addr[1], old.ckpt_addr[1]);
	ck_assert_uint_eq(g.max_inodes, old.max_inodes);
	ck_assert_uint_eq(g.feature_incompat, old.feature_incompat);
	ck_assert_mem_eq(g.uuid, old.uuid, sizeof(g.uuid));
	uint8_t buf[LFS_SB_SIZE];
	struct lfs_super back;
	lfs_super_encode(&g, buf);
	ck_assert_int_eq(lfs_super_decode(&back, buf), 0);
	ck_assert_uint_eq(back.nsegs, 1022);
	/* the plan leaves the old one alone */
	ck_assert_uint_eq(old.nsegs, 254);
}
END_TEST

/* lfs_resize_plan: a smaller size lays out fewer segments with the
 * reserve recomputed and everything else as it was, which the mount
 * decodes; below the smallest the superblock checks accept (the reserve
 * and 8 segments more) it is EINVAL, and the size the message names is
 * exactly the smallest accepted.  Sizes at both ends of 64 bits do not
 * wrap: one adds no segment past the checkpoint regions' reach (EFBIG). */
START_TEST(plan_shrinks_to_the_smallest_accepted)
{
	struct lfs_super old = planned_super(), g;
	char why[512];
	ck_assert_int_eq(lfs_resize_plan(&old, 8u << 20, &g, why, sizeof(why)), 0);
	ck_assert_uint_eq(g.nsegs, (2047 - 16) / 16);
	ck_assert_uint_eq(g.nblocks, 16 + g.nsegs * 16);
	ck_assert_uint_eq(g.backup_sb, 2047);
	ck_assert_uint_lt(g.reserved_segs, old.reserved_segs);
	ck_assert_uint_eq(g.ckpt_blocks, old.ckpt_blocks);
	ck_assert_uint_eq(g.max_inodes, old.max_inodes);
	uint8_t buf[LFS_SB_SIZE];
	struct lfs_super back;
	lfs_super_encode(&g, buf);
	ck_assert_int_eq(lfs_super_decode(&back, buf), 0);
	/* the same size it has, and a larger one, as lfs_grow_plan */
	ck_assert_int_eq(lfs_resize_plan(&old, OLD_BYTES, &g, why, sizeof(why)), -EALREADY);
	ck_assert_int_eq(lfs_resize_plan(&old, 64u << 20, &g, why, sizeof(why)), 0);
	ck_assert_uint_eq(g.nsegs, 1022);
	/* too small: the message names the smallest size, which plans */
	ck_assert_int_eq(lfs_resize_plan(&old, 256u << 10, &g, why, sizeof(why)), -EINVAL);
	const char *p = strstr(why, "smallest size this filesystem can have (");
	ck_assert_ptr_nonnull(p);
	unsigned long long min = strtoull(p + strlen("smallest size this filesystem can have ("), NULL, 10);
	ck_assert_int_eq(lfs_resize_plan(&old, min, &g, why, sizeof(why)), 0);
	ck_assert_uint_ge(g.nsegs, (uint64_t)g.reserved_segs + LFS_MIN_FREE_SEGS);
	ck_assert_int_eq(lfs_resize_plan(&old, min - 4096, &g, why, sizeof(why)), -EINVAL);
	ck_assert_int_eq(lfs_resize_plan(&old, 0, &g, why, sizeof(why)), -EINVAL);
	ck_assert_int_eq(lfs_resize_plan(&old, UINT64_MAX, &g, why, sizeof(why)), -EFBIG);
	ck_assert_uint_eq(old.nsegs, 254);
}
END_TEST

/* The checkpoint regions keep their size (one block: a 128-byte header
 * and 496 addresses, 16 for the inode map), so the usage table may have
 * 480 blocks of 256 entries, less segment 0's offset: 122,879 segments,
 * a device of (16 + 122879 * 16 + 1) * 4096 bytes.  That size is
 * accepted; a segment more is EFBIG, naming the largest size. */
START_TEST(plan_stops_at_checkpoint_region)
{
	struct lfs_super old = planned_super(), g;
	char why[512];
	const uint64_t largest = 8053067776ull;
	ck_assert_int_eq(plan(&old, largest, &g, why, sizeof(why)), 0);
	ck_assert_uint_eq(g.nsegs, 122879);
	ck_assert_uint_eq(g.ckpt_blocks, 1);
	ck_assert_int_eq(plan(&old, largest + (SEG - 4096), &g, why, sizeof(why)), 0);
	ck_assert_int_eq(plan(&old, largest + SEG, &g, why, sizeof(why)), -EFBIG);
	ck_assert_ptr_nonnull(strstr(why, "hold the usage table of at most 122879 segments"));
	ck_assert_ptr_nonnull(strstr(why, "the largest size it grows to is 8053067776 bytes"));
	ck_assert_int_eq(plan(&old, 1ull << 40, &g, why, sizeof(why)), -EFBIG);
}
END_TEST

/* ---------------------------------------------------------------- */

/* A 16 MiB image holding d/big (BIG_LEN bytes of pattern 3) and an inline
 * file "small", unmounted cleanly. */
static void
make_image(void)
{
	testfs_make(OLD_BYTES, SEG);
	struct lfs_fs *fs = testfs_mount();
	struct stat d;
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "d", 0755, &testfs_me, &d), 0);
	uint64_t big = testfs_mkfile(fs, d.st_ino, "big");
	uint8_t *buf = malloc(BIG_LEN);
	fill_pattern(buf, BIG_LEN, 3);
	ck_assert_int_eq(lfs_write(fs, big, buf, BIG_LEN, 0, NULL), (ssize_t)BIG_LEN);
	free(buf);
	uint64_t small = testfs_mkfile(fs, LFS_ROOT_INO, "small");
	ck_assert_int_eq(lfs_write(fs, small, "hello", 5, 0, NULL), 5);
	ck_assert_int_eq(lfs_unmount(fs), 0);
}

static void
open_image(struct lfs_bdev *dev, struct lfs_super *sb)
{
	ck_assert_int_eq(lfs_bdev_open(dev, testfs_path, false), 0);
	struct lfs_super_where w;
	ck_assert_int_eq(lfs_super_find(dev, 0, sb, &w), 0);
	ck_assert_uint_eq(w.block, 0);
	dev->block_size = sb->block_size;
}

static void
extend(struct lfs_bdev *dev, uint64_t bytes)
{
	ck_assert_int_eq(ftruncate(dev->fd, (off_t)bytes), 0);
	dev->size_bytes = bytes;
}

/* The files of make_image read back whole. */
static void
expect_files(struct lfs_fs *fs)
{
	struct stat st;
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "d", &st), 0);
	uint64_t d = st.st_ino;
	ck_assert_int_eq(lfs_lookup(fs, d, "big", &st), 0);
	ck_assert_int_eq(st.st_size, BIG_LEN);
	uint8_t *want = malloc(BIG_LEN), *got = malloc(BIG_LEN);
	fill_pattern(want, BIG_LEN, 3);
	ck_assert_int_eq(lfs_read(fs, st.st_ino, got, BIG_LEN, 0), (ssize_t)BIG_LEN);
	ck_assert(memcmp(got, want, BIG_LEN) == 0);
	free(want);
	free(got);
	char small[16] = { 0 };
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "small", &st), 0);
	ck_assert_int_eq(lfs_read(fs, st.st_ino, small, sizeof(small), 0), 5);
	ck_assert_str_eq(small, "hello");
}

/* make_image grown to `bytes` with lfs_grow (0 expected); the grown
 * superblock in *g. */
static void
grow_image(uint64_t bytes, struct lfs_super *g)
{
	struct lfs_bdev dev;
	struct lfs_super old;
	char why[512];
	open_image(&dev, &old);
	ck_assert_int_eq(lfs_grow_plan(&old, bytes, g, why, sizeof(why)), 0);
	extend(&dev, bytes);
	ck_assert_int_eq(lfs_grow(&dev, &old, g), 0);
	lfs_bdev_close(&dev);
}

/* Growing keeps every file, and the segments it adds are used: a file
 * larger than the whole old device is written into them and the usage
 * table, now 4 blocks instead of 1, keeps them straight (fsck agrees).
 * Both checkpoint regions verify under the grown superblock, one
 * sequence number apart, so neither reads as damaged. */
START_TEST(grow_keeps_data_and_adds_room)
{
	make_image();
	struct lfs_super g;
	grow_image(64u << 20, &g);

	struct lfs_bdev dev;
	ck_assert_int_eq(lfs_bdev_open(&dev, testfs_path, true), 0);
	dev.block_size = 4096;
	struct lfs_ckpt_hdr h[2];
	for (int i = 0; i < 2; i++) {
		char why[64];
		ck_assert_int_eq(lfs_ckpt_judge_region(&dev, &g, i, &h[i], NULL, why, sizeof(why)), 0);
		ck_assert_str_eq(why, "valid");
		ck_assert_uint_eq(h[i].n_sut_blocks, 4);
		ck_assert(h[i].flags & LFS_CKPT_CLEAN);
	}
	ck_assert_uint_eq(h[0].ckpt_seq > h[1].ckpt_seq ? h[0].ckpt_seq - h[1].ckpt_seq
							: h[1].ckpt_seq - h[0].ckpt_seq, 1);
	lfs_bdev_close(&dev);

	struct lfs_fs *fs = testfs_mount();
	ck_assert_uint_eq(fs->sb.nsegs, 1022);
	ck_assert_uint_eq(fs->n_sut_blocks, 4);
	expect_files(fs);
	testfs_fsck_clean(fs);
	uint64_t more = testfs_mkfile(fs, LFS_ROOT_INO, "more");
	enum { CHUNK = 1 << 20, LEN = 24 << 20 };
	uint8_t *buf = malloc(CHUNK);
	for (unsigned off = 0; off < LEN; off += CHUNK) {
		fill_pattern(buf, CHUNK, off / CHUNK);
		ck_assert_int_eq(lfs_write(fs, more, buf, CHUNK, off, NULL), CHUNK);
	}
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t beyond = 0;
	for (uint64_t s = 254; s < fs->sb.nsegs; s++)
		beyond += fs->segs[s].state != LFS_SEG_CLEAN;
	ck_assert_uint_gt(beyond, 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	for (unsigned off = 0; off < LEN; off += 5 * CHUNK) {
		uint8_t *want = malloc(CHUNK);
		fill_pattern(want, CHUNK, off / CHUNK);
		ck_assert_int_eq(lfs_read(fs, more, buf, CHUNK, off), CHUNK);
		ck_assert(memcmp(buf, want, CHUNK) == 0);
		free(want);
	}
	free(buf);
	expect_files(fs);
	testfs_finish(fs);
}
END_TEST

/* The backup superblock moves to the new last block and the old one,
 * now inside the log area, is zeroed: with block 0 lost, the grown
 * filesystem is found at the end of the device and mounts with every
 * file.  Grown again, from the grown image, the same holds. */
START_TEST(backup_superblock_moves)
{
	make_image();
	struct lfs_super g;
	grow_image(32u << 20, &g);
	ck_assert_uint_eq(g.backup_sb, 8191);
	grow_image(64u << 20, &g);
	ck_assert_uint_eq(g.backup_sb, 16383);

	size_t len;
	uint8_t *img = testfs_image_load(&len);
	ck_assert_uint_eq(len, 64u << 20);
	static const uint8_t zero[4096];
	ck_assert(memcmp(img + 4095ull * 4096, zero, 4096) == 0);
	ck_assert(memcmp(img + 8191ull * 4096, zero, 4096) == 0);
	ck_assert(memcmp(img + 16383ull * 4096, img, LFS_SB_SIZE) == 0);
	memset(img, 0, 4096); /* block 0 lost */
	testfs_image_store(img, len);
	free(img);

	struct lfs_bdev dev;
	struct lfs_super sb;
	struct lfs_super_where w;
	ck_assert_int_eq(lfs_bdev_open(&dev, testfs_path, true), 0);
	ck_assert_int_eq(lfs_super_find(&dev, 0, &sb, &w), 0);
	ck_assert_uint_eq(w.block, 16383);
	ck_assert_uint_eq(sb.nsegs, 1022);
	lfs_bdev_close(&dev);
	struct lfs_fs *fs = testfs_mount_ro();
	ck_assert_uint_eq(fs->sb.nsegs, 1022);
	expect_files(fs);
	testfs_fsck_clean(fs);
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

/* lfs_grow refuses, changing nothing: a device smaller than the grown
 * geometry (ENOSPC), and a log whose newest checkpoint is not clean
 * (EUCLEAN: what follows it would be rolled forward into the old
 * geometry). */
START_TEST(grow_refuses_small_device_and_unclean_log)
{
	make_image();
	struct lfs_bdev dev;
	struct lfs_super old, g;
	char why[512];
	size_t len0, len1;
	uint8_t *before = testfs_image_load(&len0);
	open_image(&dev, &old);
	ck_assert_int_eq(lfs_grow_plan(&old, 64u << 20, &g, why, sizeof(why)), 0);
	extend(&dev, (64u << 20) - 4096); /* one block short of the backup's */
	ck_assert_int_eq(lfs_grow(&dev, &old, &g), -ENOSPC);
	lfs_bdev_close(&dev);
	uint8_t *after = testfs_image_load(&len1);
	ck_assert(memcmp(after, before, len0) == 0);
	free(after);
	free(before);
	testfs_remove();

	/* a crash after a checkpoint that was not the unmount's */
	make_image();
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "late");
	ck_assert_int_eq(lfs_write(fs, ino, "x", 1, 0, NULL), 1);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	lfs_abandon(fs);
	before = testfs_image_load(&len0);
	open_image(&dev, &old);
	ck_assert_int_eq(lfs_grow_plan(&old, 64u << 20, &g, why, sizeof(why)), 0);
	extend(&dev, 64u << 20);
	ck_assert_int_eq(lfs_grow(&dev, &old, &g), -EUCLEAN);
	lfs_bdev_close(&dev);
	after = testfs_image_load(&len1);
	ck_assert(memcmp(after, before, len0) == 0);
	free(after);
	free(before);
	fs = testfs_mount_ro();
	ck_assert_uint_eq(fs->sb.nsegs, 254);
	expect_files(fs);
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

/* A crash at each of lfs_grow's five writes (the grown checkpoint, the
 * new backup, block 0, the other region, the old backup zeroed): the
 * image mounts, with the old geometry until block 0 is written and the
 * grown one from then on, every file intact and fsck clean. */
START_TEST(grow_survives_a_crash_at_each_write)
{
	make_image();
	size_t len;
	uint8_t *base = testfs_image_load(&len);
	for (int n = 1; n <= 6; n++) {
		testfs_image_store(base, len);
		struct lfs_bdev dev;
		struct lfs_super old, g;
		char why[512], spec[32];
		open_image(&dev, &old);
		ck_assert_int_eq(lfs_grow_plan(&old, 64u << 20, &g, why, sizeof(why)), 0);
		extend(&dev, 64u << 20);
		snprintf(spec, sizeof(spec), "pwrite:%d:EIO", n);
		ck_assert_int_eq(lfs_fault_arm(spec), 0);
		int err = lfs_grow(&dev, &old, &g);
		uint64_t writes = lfs_fault_count(LFS_FAULT_PWRITE);
		lfs_fault_disarm();
		lfs_bdev_close(&dev);
		/* five writes; a sixth never comes */
		int want_err = n <= 5 ? -EIO : 0;
		uint64_t want_writes = n <= 5 ? (uint64_t)n : 5;
		ck_assert_int_eq(err, want_err);
		ck_assert_uint_eq(writes, want_writes);
		struct lfs_fs *fs = testfs_mount_ro();
		ck_assert_msg(fs->sb.nsegs == (n <= 3 ? 254u : 1022u), "crash at write %d: %llu segments", n,
			      (unsigned long long)fs->sb.nsegs);
		expect_files(fs);
		testfs_fsck_clean(fs);
		lfs_abandon(fs);
	}
	free(base);
	testfs_remove();
}
END_TEST

CHECK_MAIN("grow", "grow", 60, plan_refuses_what_does_not_grow, plan_lays_out_grown_geometry, plan_shrinks_to_the_smallest_accepted,
	   plan_stops_at_checkpoint_region, grow_keeps_data_and_adds_room, backup_superblock_moves,
	   grow_refuses_small_device_and_unclean_log, grow_survives_a_crash_at_each_write)
