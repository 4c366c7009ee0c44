/*
 * grow.c — layer 6: growing an unmounted lfs onto a larger device (lfs-resize).
 *
 * A log grows by having more segments: the new ones start clean.  What
 * changes on disk is small: the superblock (nsegs, nblocks, reserve,
 * backup block), the usage table (more entries; the blocks it gains are
 * "never written", address 0, which reads as all clean), and the backup
 * superblock, which moves to the new last block.  The checkpoint regions
 * keep their size and place: mkfs sized them for the device it was given,
 * and the superblock checks (format.c) demand exactly that size for the
 * segments there are, so a device whose usage table would need a larger
 * region cannot be grown to (-EFBIG; the largest that can is named).
 *
 * Order, so that a crash anywhere leaves a filesystem that mounts:
 *   1. the grown checkpoint, sequence one past the newest, into the other
 *      region: under the old superblock its table sizes do not verify, so
 *      the old newest one is still used;
 *   2. the grown superblock's backup in the new last block: block 0 still
 *      rules, and should it go bad, the backup found at the end of the
 *      device is the grown one, which matches the grown checkpoint;
 *   3. block 0, the grown superblock: the commit point;
 *   4. the other region: the same checkpoint, one sequence number back,
 *      so that neither region reads as damaged under the grown geometry;
 *   5. the old backup, now inside the log area, zeroed.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
lfs_grow_plan(const struct lfs_super *old, uint64_t bytes, struct lfs_super *g, char *why, size_t len)
{
	uint32_t bs = old->block_size, sbl = old->seg_blocks;
	*g = *old;
	uint64_t backup = lfs_super_backup_block(bytes, bs);
	uint64_t nsegs = backup > old->seg0 ? (backup - old->seg0) / sbl : 0;
	if (nsegs < old->nsegs) {
		snprintf(why, len, "%llu bytes is smaller than the filesystem (%llu bytes): lfs-resize only grows",
			 (unsigned long long)bytes, (unsigned long long)(old->nblocks + 1) * bs);
		return -EINVAL;
	}
	if (nsegs == old->nsegs) {
		snprintf(why, len, "%llu bytes holds no more segments than the filesystem has (%llu of %u KiB)",
			 (unsigned long long)bytes, (unsigned long long)old->nsegs, sbl * (bs / 1024));
		return -EALREADY;
	}
	uint32_t nimap = lfs_imap_nblocks(old->max_inodes, bs);
	/* the checkpoint region must stay as large as it is (see above):
	 * its header and one address per map block fill at most
	 * ckpt_blocks, and the usage table counts the segments there could
	 * be before segment 0 too (format.c) */
	uint64_t addrs = ((uint64_t)old->ckpt_blocks * bs - LFS_CKPT_HDR_SIZE) / 8;
	uint64_t max_sut = addrs > nimap ? addrs - nimap : 0;
	uint64_t per = lfs_sut_per_block(bs);
	uint64_t before = old->seg0 / sbl;
	uint64_t max_segs = max_sut * per > before ? max_sut * per - before : 0;
	if (nsegs > max_segs) {
		snprintf(why, len, "its checkpoint regions (%u blocks, sized by mkfs) hold the usage table of at "
			 "most %llu segments: the largest size it grows to is %llu bytes",
			 old->ckpt_blocks, (unsigned long long)max_segs,
			 (unsigned long long)(old->seg0 + max_segs * sbl + 1) * bs);
		return -EFBIG;
	}
	g->nsegs = nsegs;
	g->nblocks = old->seg0 + nsegs * sbl;
	g->reserved_segs = (uint32_t)lfs_reserve_segs(nsegs, nimap, lfs_sut_nblocks(nsegs + old->seg0 / sbl, bs), sbl);
	g->feature_compat |= LFS_FEATURE_BACKUP_SB;
	g->backup_sb = backup;
	/* what the mount will check, checked now */
	uint8_t buf[LFS_SB_SIZE];
	struct lfs_super back;
	lfs_super_encode(g, buf);
	int err = lfs_super_decode(&back, buf);
	if (err)
		snprintf(why, len, "the grown superblock would not verify (%s)", strerror(-err));
	return err;
}

/* `old` laid out over nsegs segments (fewer than it has): 0 if the
 * superblock checks accept it. */
static int
shrunk(const struct lfs_super *old, uint64_t nsegs, struct lfs_super *g)
{
	uint32_t bs = old->block_size, sbl = old->seg_blocks;
	*g = *old;
	uint32_t nimap = lfs_imap_nblocks(old->max_inodes, bs);
	g->nsegs = nsegs;
	g->nblocks = old->seg0 + nsegs * sbl;
	g->reserved_segs = (uint32_t)lfs_reserve_segs(nsegs, nimap, lfs_sut_nblocks(nsegs + old->seg0 / sbl, bs), sbl);
	g->feature_compat |= LFS_FEATURE_BACKUP_SB;
	g->backup_sb = g->nblocks;
	if (nsegs < (uint64_t)g->reserved_segs + LFS_MIN_FREE_SEGS)
		return -ENOSPC;
	uint8_t buf[LFS_SB_SIZE];
	struct lfs_super back;
	lfs_super_encode(g, buf);
	return lfs_super_decode(&back, buf);
}

int
lfs_resize_plan(const struct lfs_super *old, uint64_t bytes, struct lfs_super *g, char *why, size_t len)
{
	uint32_t bs = old->block_size, sbl = old->seg_blocks;
	uint64_t backup = lfs_super_backup_block(bytes, bs);
	uint64_t nsegs = backup > old->seg0 ? (backup - old->seg0) / sbl : 0;
	if (nsegs >= old->nsegs)
		return lfs_grow_plan(old, bytes, g, why, len);
	/* The smallest layout the superblock checks accept: as mkfs.lfs's
	 * (the reserve and 8 segments more), and checkpoint regions of the
	 * size mkfs gave them, which must stay exactly as large as the usage
	 * table needs (format.c).  Both only fail below some count. */
	uint64_t lo = 0, hi = old->nsegs;  /* shrunk(lo) fails, shrunk(hi) holds */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (shrunk(old, mid, g))
			lo = mid;
		else
			hi = mid;
	}
	if (nsegs < hi) {
		snprintf(why, len, "%llu bytes is below the smallest size this filesystem can have (%llu bytes, %llu "
			 "segments: its reserve, room to write, and checkpoint regions sized by mkfs)",
			 (unsigned long long)bytes, (unsigned long long)(old->seg0 + hi * sbl + 1) * bs,
			 (unsigned long long)hi);
		return -EINVAL;
	}
	int err = shrunk(old, nsegs, g);
	g->backup_sb = backup;
	if (err)
		snprintf(why, len, "the shrunk superblock would not verify (%s)", strerror(-err));
	return err;
}

/* The newest valid checkpoint region of `sb` and which it is. */
static int
newest_region(struct lfs_bdev *dev, const struct lfs_super *sb, struct lfs_ckpt_hdr *hdr, uint64_t **addrs,
	      int *which)
{
	struct lfs_ckpt_hdr h[2];
	uint64_t *a[2] = { NULL, NULL };
	int e[2];
	for (int i = 0; i < 2; i++)
		e[i] = lfs_ckpt_read_region(dev, sb, i, &h[i], &a[i]);
	int best = lfs_ckpt_newest(e, h);
	if (best < 0) {
		free(a[0]);
		free(a[1]);
		return e[1] < 0 ? e[1] : -EIO; /* neither is valid: both are errors */
	}
	*hdr = h[best];
	*addrs = a[best];
	free(a[!best]);
	*which = best;
	return 0;
}

int
lfs_grow(struct lfs_bdev *dev, const struct lfs_super *old, const struct lfs_super *g)
{
	uint32_t bs = old->block_size;
	if (dev->size_bytes / bs < g->backup_sb + 1)
		return -ENOSPC;
	dev->block_size = bs;
	struct lfs_ckpt_hdr hdr;
	uint64_t *addrs;
	int which, err = newest_region(dev, old, &hdr, &addrs, &which);
	if (err)
		return err;
	if (!(hdr.flags & LFS_CKPT_CLEAN)) {
		/* the log after it would be rolled forward into the old geometry */
		free(addrs);
		return -EUCLEAN;
	}
	uint32_t nimap = hdr.n_imap_blocks, old_nsut = hdr.n_sut_blocks;
	uint32_t nsut = lfs_sut_nblocks(g->nsegs, bs);
	size_t len = (size_t)g->ckpt_blocks * bs;
	uint8_t *region = calloc(1, len > LFS_SB_SIZE ? len : LFS_SB_SIZE);
	if (!region) {
		free(addrs);
		return -ENOMEM;
	}
	hdr.ckpt_seq++;
	hdr.timestamp_ns = lfs_now_ns();
	hdr.n_sut_blocks = nsut;
	lfs_ckpt_hdr_encode(&hdr, region);
	for (uint32_t i = 0; i < nimap + old_nsut; i++)
		lfs_ckpt_addr_put(region, i, addrs[i]);
	/* the usage-table blocks it gains were never written: all clean */
	for (uint32_t i = nimap + old_nsut; i < nimap + nsut; i++)
		lfs_ckpt_addr_put(region, i, 0);
	free(addrs);
	lfs_ckpt_seal(region, len, lfs_super_seed(g));
	/* 1. */
	err = lfs_bdev_pwrite(dev, g->ckpt_addr[!which] * bs, len, region);
	if (!err)
		err = lfs_bdev_sync(dev);
	/* 2., 3. (each copy is synced as it is written) */
	if (!err)
		err = lfs_super_write_copy(dev, g, g->backup_sb);
	if (!err)
		err = lfs_super_write_copy(dev, g, 0);
	/* 4. */
	if (!err) {
		hdr.ckpt_seq--;
		lfs_ckpt_hdr_encode(&hdr, region);
		lfs_ckpt_seal(region, len, lfs_super_seed(g));
		err = lfs_bdev_pwrite(dev, g->ckpt_addr[which] * bs, len, region);
		if (!err)
			err = lfs_bdev_sync(dev);
	}
	free(region);
	/* 5. */
	if (!err && (old->feature_compat & LFS_FEATURE_BACKUP_SB) && old->backup_sb != g->backup_sb) {
		uint8_t *zero = calloc(1, bs);
		err = zero ? lfs_bdev_pwrite(dev, old->backup_sb * bs, bs, zero) : -ENOMEM;
		free(zero);
		if (!err)
			err = lfs_bdev_sync(dev);
	}
	return err;
}
