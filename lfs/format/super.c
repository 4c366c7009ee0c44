/*
 * super.c — layer 1: finding the superblock: block 0, or when block 0 fails
 * verification, the backup that mkfs writes in the last block of the
 * device (format.h, lfs_super_backup_block()).  One search serves the
 * mount, fsck.lfs, dumplfs, lfs-ckpt and lfs_cleanerd, so a filesystem
 * whose block 0 went bad is opened the same way by all of them; and one
 * set of checks on what it found (lfs_super_open), with one wording of
 * each refusal, serves them all too.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Read and decode the 256 bytes at the start of `block`, for blocks of
 * `bs` bytes; 0 only for a superblock that names this block size. */
static int
read_at(struct lfs_bdev *dev, uint64_t block, uint32_t bs, struct lfs_super *sb)
{
	uint8_t buf[LFS_SB_SIZE];
	if (block > (dev->size_bytes - LFS_SB_SIZE) / bs)
		return -EINVAL;
	int err = lfs_bdev_pread(dev, block * bs, sizeof(buf), buf);
	if (!err)
		err = lfs_super_decode(sb, buf);
	if (!err && sb->block_size != bs)
		err = -EFSCORRUPTED;
	return err;
}

int
lfs_super_find(struct lfs_bdev *dev, uint64_t block, struct lfs_super *sb, struct lfs_super_where *w)
{
	w->block = block;
	w->primary_err = 0;
	if (dev->size_bytes < LFS_SB_SIZE)
		return -EINVAL;
	if (block) {
		for (uint32_t bs = LFS_MIN_BLOCK_SIZE; bs <= LFS_MAX_BLOCK_SIZE; bs *= 2)
			if (read_at(dev, block, bs, sb) == 0)
				return 0;
		return -EINVAL;
	}
	uint8_t buf[LFS_SB_SIZE];
	int err = lfs_bdev_pread(dev, 0, sizeof(buf), buf);
	if (!err)
		err = lfs_super_decode(sb, buf);
	/* a newer format is not damage: its backup is no more readable */
	if (!err || err == -EPROTONOSUPPORT)
		return err;
	struct lfs_super backup;
	for (uint32_t bs = LFS_MIN_BLOCK_SIZE; bs <= LFS_MAX_BLOCK_SIZE; bs *= 2) {
		uint64_t b = lfs_super_backup_block(dev->size_bytes, bs);
		if (b && read_at(dev, b, bs, &backup) == 0 && (backup.feature_compat & LFS_FEATURE_BACKUP_SB) &&
		    backup.backup_sb == b) {
			*sb = backup;
			w->block = b;
			w->primary_err = err;
			return 0;
		}
	}
	return err;
}

const char *
lfs_super_why(int err)
{
	switch (err) {
	case -EINVAL: return "holds no lfs superblock magic";
	case -EFSCORRUPTED: return "holds a corrupt superblock (checksum or geometry)";
	default: return strerror(-err);
	}
}

int
lfs_super_open(struct lfs_bdev *dev, uint64_t block, bool fit_device, struct lfs_super *sb, struct lfs_super_where *w,
	       char *why, size_t len)
{
	w->block = block;
	w->primary_err = 0;
	if (dev->size_bytes < LFS_SB_SIZE) {
		snprintf(why, len, "%llu bytes is too small to hold an lfs image", (unsigned long long)dev->size_bytes);
		return -EINVAL;
	}
	int err = lfs_super_find(dev, block, sb, w);
	if (err == -EINVAL && block)
		snprintf(why, len, "no lfs superblock at block %llu (for any block size)", (unsigned long long)block);
	else if (err == -EINVAL)
		snprintf(why, len, "not an lfs image (no lfs superblock magic, and no backup superblock)");
	else if (err == -EPROTONOSUPPORT)
		snprintf(why, len, "image has format version %u / incompatible features %#x; this lfs reads version %d",
			 sb->version, sb->feature_incompat, LFS_VERSION);
	else if (err == -EFSCORRUPTED)
		snprintf(why, len, "superblock is corrupt (checksum or geometry), and no backup superblock verifies");
	else if (err)
		snprintf(why, len, "reading the superblock: %s", strerror(-err));
	if (err)
		return err;
	if (!fit_device) {
		dev->block_size = sb->block_size;
		why[0] = '\0';
		return 0;
	}
	/* compared without multiplying: a forged superblock (its crc is not
	 * seeded) could make a product wrap */
	if (sb->seg0 > sb->nblocks || sb->nsegs * sb->seg_blocks > sb->nblocks - sb->seg0) {
		snprintf(why, len, "superblock is corrupt (segments beyond the end of the filesystem)");
		return -EFSCORRUPTED;
	}
	if (sb->nblocks > dev->size_bytes / sb->block_size) {
		snprintf(why, len, "image is truncated: %llu bytes, the superblock says %llu blocks of %u",
			 (unsigned long long)dev->size_bytes, (unsigned long long)sb->nblocks, sb->block_size);
		return -EFSCORRUPTED;
	}
	dev->block_size = sb->block_size;
	why[0] = '\0';
	return 0;
}

int
lfs_read_super(struct lfs_bdev *dev, uint64_t block, struct lfs_super *sb)
{
	struct lfs_super_where w;
	char why[256];
	int err = lfs_super_open(dev, block, true, sb, &w, why, sizeof(why));
	if (err)
		lfs_log("%s", why);
	else if (w.primary_err)
		lfs_log("block 0 %s; using the backup superblock at block %llu", lfs_super_why(w.primary_err),
			(unsigned long long)w.block);
	else if (block)
		lfs_log("using the superblock at block %llu", (unsigned long long)block);
	if (!err && sb->label_refused) {
		char label[LFS_ESC_LEN(LFS_LABEL_MAX)];
		lfs_log("the label '%s' has bytes lfs-tune -L would refuse (shown escaped); lfs-tune -L sets another",
			lfs_escape(sb->label, LFS_ESC_SHOW, label, sizeof(label)));
	}
	return err;
}

int
lfs_super_check_copy(struct lfs_bdev *dev, const struct lfs_super *sb, uint64_t block)
{
	uint8_t want[LFS_SB_SIZE], got[LFS_SB_SIZE];
	lfs_super_encode(sb, want);
	if (dev->size_bytes < LFS_SB_SIZE || block > (dev->size_bytes - LFS_SB_SIZE) / sb->block_size)
		return -EFSCORRUPTED;
	int err = lfs_bdev_pread(dev, block * sb->block_size, sizeof(got), got);
	if (err)
		return err;
	return memcmp(want, got, sizeof(want)) ? -EFSCORRUPTED : 0;
}

int
lfs_super_write_copy(struct lfs_bdev *dev, const struct lfs_super *sb, uint64_t block)
{
	uint8_t buf[LFS_MAX_BLOCK_SIZE];
	memset(buf, 0, sb->block_size);
	lfs_super_encode(sb, buf);
	int err = lfs_bdev_pwrite(dev, block * sb->block_size, sb->block_size, buf);
	return err ? err : lfs_bdev_sync(dev);
}
