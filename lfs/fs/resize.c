/*
 * resize.c — layer 6: growing or shrinking a mounted filesystem
 * (lfs_resize of lfs.h), for the daemon's control socket and for
 * lfs-resize on an unmounted image, which mounts it to shrink it.
 *
 * A shrink, as nilfs-resize does it: the segments past the new end are
 * no longer given to the writer (lfs_seg_set_limit), the log head leaves
 * them, and the cleaner's mechanism moves every block still live there
 * (blocks only snapshots and kept checkpoints read included: they are
 * copied, and the held table follows them), until checkpoints have made
 * every one of them clean.  Nothing on disk says a shrink is under way:
 * a crash meanwhile leaves the old size, its tail emptier.
 *
 * Then, the lock held throughout, the new size is committed as lfs_grow
 * commits one offline: the usage table resized in memory, a checkpoint
 * (which, under the old superblock, either does not verify, its table
 * sized for other segments, or describes the tail as clean), the new
 * superblock's backup in the new last block, block 0 (the commit point),
 * a second checkpoint so that both regions verify under the new
 * geometry, and the old backup zeroed.  A crash at any point leaves the
 * old size or the new one.  An image file is cut or extended to the new
 * size; a block device must be as large already, and keeps its length.
 */
#include "lfs_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* rounds of moving and checkpointing before a shrink gives up */
#define RESIZE_ROUNDS 16

/* The content the filesystem would hold at most with geometry g. */
static uint64_t
capacity_with(struct lfs_fs *fs, const struct lfs_super *g)
{
	struct lfs_super sb = fs->sb;
	uint64_t alloc = fs->alloc_segs;
	fs->sb.reserved_segs = g->reserved_segs;
	fs->alloc_segs = g->nsegs < sb.nsegs ? g->nsegs : 0;
	uint64_t cap = lfs_space_capacity(fs);
	fs->sb = sb;
	fs->alloc_segs = alloc;
	return cap;
}

/* Whether what the filesystem holds fits geometry g; if not, why says
 * how much it holds and the smallest size that would hold it. */
static bool
fits(struct lfs_fs *fs, const struct lfs_super *g, uint64_t bytes, struct lfs_resize_info *ri, char *why,
     size_t len)
{
	uint64_t used = lfs_space_used_blocks(fs), bs = fs->bsize;
	uint64_t held = 0;
	uint64_t *own = lfs_calloc(fs->held.nretained + 1, sizeof(*own));
	if (fs->snapshots && own)
		(void)lfs_held_usage(&fs->held, own, &held);
	free(own);
	ri->used_bytes = used * bs;
	ri->held_bytes = held;
	if (used <= capacity_with(fs, g))
		return true;
	/* the smallest that does: by bisection over the segments */
	uint64_t lo = g->nsegs, hi = fs->sb.nsegs;
	struct lfs_super t;
	char ignored[8];
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		uint64_t b = (fs->sb.seg0 + mid * fs->sb.seg_blocks + 1) * bs;
		if (!lfs_resize_plan(&fs->sb, b, &t, ignored, sizeof(ignored)) && used <= capacity_with(fs, &t))
			hi = mid;
		else
			lo = mid;
	}
	ri->min_bytes = (fs->sb.seg0 + hi * fs->sb.seg_blocks + 1) * bs;
	snprintf(why, len, "the data would not fit: %" PRIu64 " MiB in use (%" PRIu64 " MiB of it held for "
		 "snapshots and kept checkpoints) and the reserve need at least %" PRIu64 " bytes (%" PRIu64
		 " MiB); %" PRIu64 " bytes holds %" PRIu64 " MiB", ri->used_bytes >> 20, ri->held_bytes >> 20,
		 ri->min_bytes, ri->min_bytes >> 20, bytes, capacity_with(fs, g) * bs >> 20);
	return false;
}

/* Blocks clean below `limit`, with those the next checkpoints free. */
static uint64_t
room_below(const struct lfs_fs *fs, uint64_t limit)
{
	uint64_t n = 0;
	for (uint64_t s = 0; s < limit; s++) {
		const struct lfs_seginfo *si = &fs->segs[s];
		n += si->state == LFS_SEG_CLEAN || (si->state == LFS_SEG_DIRTY && !lfs_seg_live(fs, s));
	}
	return n * fs->sb.seg_blocks;
}

/* What moving the tail's live blocks writes below the limit before any
 * of them is freed: the blocks, a leaf or record in four for those they
 * drag along, the floor deletes and checkpoints keep, and the two
 * segments the log head moves to. */
static uint64_t
room_needed(const struct lfs_fs *fs, uint64_t limit)
{
	uint64_t live = 0;
	for (uint64_t s = limit; s < fs->sb.nsegs; s++)
		live += lfs_seg_live(fs, s);
	uint64_t blocks = (live + fs->bsize - 1) / fs->bsize;
	return blocks + blocks / 4 + lfs_space_floor(fs, LFS_SPACE_DELETE) + 2ull * fs->sb.seg_blocks;
}

/* Room below the limit to move the tail into, cleaning there first if
 * need be (the limit set: what cleaning writes stays below it). */
static int
make_room(struct lfs_fs *fs, uint64_t limit, char *why, size_t len)
{
	for (int round = 0; round < RESIZE_ROUNDS; round++) {
		if (room_below(fs, limit) >= room_needed(fs, limit))
			return 0;
		struct lfs_reclaim_tally t = { 0 };
		int err = lfs_clean_reclaim(fs, false, &t);
		if (err == -ENOSPC)
			break;
		if (err) {
			snprintf(why, len, "cleaning to make room: %s", strerror(-err));
			return err;
		}
		for (int i = 0; i < 2 && !err && lfs_seg_freeable(fs); i++)
			err = lfs_ckpt_write(fs, false);
		if (err) {
			snprintf(why, len, "cleaning to make room: %s", strerror(-err));
			return err;
		}
	}
	uint64_t have = room_below(fs, limit), need = room_needed(fs, limit);
	if (have >= need)
		return 0;
	snprintf(why, len, "the data would fit, but not while it moves: the segments past the new end hold more "
		 "than the clean space below it takes (%" PRIu64 " KiB clean, %" PRIu64 " KiB needed, cleaning "
		 "gains no more); try a larger size", have * fs->bsize >> 10, need * fs->bsize >> 10);
	return -ENOSPC;
}

/* The log head out of the segments past `limit`: on in two fresh ones,
 * made the head by a checkpoint, as a mount after a crash does. */
static int
head_out(struct lfs_fs *fs, uint64_t limit)
{
	if (fs->cur_seg < limit && fs->next_seg < limit)
		return 0;
	int err = lfs_flush(fs);
	if (!err)
		err = lfs_ckpt_settle(fs, false);
	if (err)
		return err;
	uint64_t cur, next;
	if ((err = lfs_seg_pick_next(fs, &cur)))
		return err;
	if ((err = lfs_seg_pick_next(fs, &next))) {
		lfs_seg_set_state(fs, cur, LFS_SEG_CLEAN);
		return err;
	}
	/* both turn clean after the checkpoints that follow, if empty */
	lfs_seg_set_state(fs, fs->cur_seg, LFS_SEG_DIRTY);
	lfs_seg_set_state(fs, fs->next_seg, LFS_SEG_DIRTY);
	fs->cur_seg = cur;
	fs->next_seg = next;
	fs->cur_off = 0;
	fs->changed_since_ckpt = true;
	return lfs_ckpt_write(fs, false);
}

/* Whether every segment from `from` up is clean. */
static bool
tail_clean(const struct lfs_fs *fs, uint64_t from)
{
	for (uint64_t s = from; s < fs->sb.nsegs; s++)
		if (fs->segs[s].state != LFS_SEG_CLEAN)
			return false;
	return true;
}

/* Move every live block out of the segments from `from` up, and
 * checkpoint until they are clean.  `yield`: let waiting requests have
 * the lock between segments (the daemon). */
static int
empty_tail(struct lfs_fs *fs, uint64_t from, bool yield, struct lfs_resize_info *ri, char *why, size_t len)
{
	for (int round = 0; round < RESIZE_ROUNDS; round++) {
		lfs_log_debug("resize: round %d: %llu blocks clean below the end, %llu needed", round,
			      (unsigned long long)room_below(fs, from), (unsigned long long)room_needed(fs, from));
		/* what deletes emptied is room once checkpoints free it */
		int err = 0;
		for (int i = 0; i < 2 && !err && lfs_seg_freeable(fs); i++)
			err = lfs_ckpt_write(fs, false);
		if (!err)
			err = head_out(fs, from);
		for (uint64_t s = from; s < fs->sb.nsegs && !err; s++) {
			if (fs->segs[s].state != LFS_SEG_DIRTY || !lfs_seg_live(fs, s))
				continue;
			err = lfs_clean_segment(fs, s, &ri->moved_blocks);
			if (err == -ENOSPC) {
				/* room first, from the emptiest segments anywhere */
				struct lfs_reclaim_tally t = { 0 };
				err = lfs_clean_reclaim(fs, false, &t);
				if (!err)
					err = lfs_clean_segment(fs, s, &ri->moved_blocks);
				if (err == -ENOSPC)
					err = 0; /* the next round tries again */
			}
			if (!err && yield) {
				lfs_lock_yield(fs);
				err = fs->fatal ? fs->fatal : fs->dev.readonly ? -EROFS : 0;
			}
			if (!err)
				err = head_out(fs, from); /* a request's flush may have moved it */
		}
		/* the emptied segments turn clean at the checkpoint after the
		 * one that records them empty */
		for (int i = 0; i < 2 && !err; i++)
			err = lfs_ckpt_write(fs, false);
		if (err) {
			lfs_log("resize: round %d: %s; clean %llu, freeable %llu, head %llu/%llu", round, strerror(-err),
				(unsigned long long)fs->nclean, (unsigned long long)fs->nfreeable,
				(unsigned long long)fs->cur_seg, (unsigned long long)fs->next_seg);
			snprintf(why, len, "moving the data out of the segments past the new end: %s", strerror(-err));
			return err;
		}
		if (tail_clean(fs, from) && fs->cur_seg < from && fs->next_seg < from)
			return 0;
	}
	snprintf(why, len, "the segments past the new end could not all be emptied (the data may not fit beside "
		 "what is written meanwhile); try again, or a larger size");
	return -ENOSPC;
}

/* Extend an image file to `bytes` (a device must be that large). */
static int
extend(struct lfs_fs *fs, uint64_t bytes, char *why, size_t len)
{
	if (fs->dev.size_bytes >= bytes)
		return 0;
	struct stat st;
	uint64_t dev_bytes = 0;
	if (fstat(fs->dev.fd, &st) == 0 && S_ISBLK(st.st_mode) && ioctl(fs->dev.fd, BLKGETSIZE64, &dev_bytes) == 0 &&
	    dev_bytes >= bytes) {
		/* a device made larger since the mount (an LVM volume extended) */
		fs->dev.size_bytes = dev_bytes;
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, len, "%" PRIu64 " bytes is larger than the device (%" PRIu64 ")", bytes,
			 dev_bytes > fs->dev.size_bytes ? dev_bytes : fs->dev.size_bytes);
		return -ENOSPC;
	}
	if (ftruncate(fs->dev.fd, (off_t)bytes) < 0) {
		int err = -errno;
		snprintf(why, len, "cannot extend the image: %s", strerror(errno));
		return err;
	}
	fs->dev.size_bytes = bytes;
	return 0;
}

/* The new geometry in memory and on disk (the lock held throughout; for
 * a shrink, every segment past the end clean and the head below it). */
static int
commit(struct lfs_fs *fs, const struct lfs_super *g, char *why, size_t len)
{
	struct lfs_super old = fs->sb;
	int err = lfs_seg_regeom(fs, g->nsegs);
	if (err) {
		snprintf(why, len, "%s", strerror(-err));
		return err;
	}
	fs->sb = *g;
	fs->sb.nsegs = g->nsegs;
	lfs_region_forget(fs);
	fs->changed_since_ckpt = true;
	err = lfs_ckpt_write(fs, false);
	if (!err)
		err = lfs_super_write_copy(&fs->dev, g, g->backup_sb);
	if (!err)
		err = lfs_super_write_copy(&fs->dev, g, 0);
	if (!err) {
		fs->changed_since_ckpt = true;
		err = lfs_ckpt_write(fs, false);
	}
	/* the old backup: inside the grown log, or past the shrunk end */
	if (!err && (old.feature_compat & LFS_FEATURE_BACKUP_SB) && old.backup_sb != g->backup_sb &&
	    (old.backup_sb + 1) * fs->bsize <= fs->dev.size_bytes) {
		uint8_t *zero = lfs_calloc(1, fs->bsize);
		err = zero ? lfs_bdev_write(&fs->dev, old.backup_sb, 1, zero) : -ENOMEM;
		free(zero);
		if (!err)
			err = lfs_sync(fs);
	}
	if (err) {
		snprintf(why, len, "committing the new size: %s", strerror(-err));
		return lfs_fail(fs, err, "resize: committing the new size failed");
	}
	lfs_seg_set_limit(fs, g->nsegs);
	return 0;
}

int
lfs_resize(struct lfs_fs *fs, uint64_t bytes, unsigned flags, struct lfs_resize_info *ri, char *why, size_t len)
{
	bool yield = flags & LFS_RESIZE_YIELD, dry = flags & LFS_RESIZE_DRY, mine = false;
	memset(ri, 0, sizeof(*ri));
	why[0] = '\0';
	lfs_lock(fs);
	struct lfs_super g, old = fs->sb;
	ri->old_bytes = fs->dev.size_bytes;
	ri->old_nsegs = old.nsegs;
	int err = fs->fatal ? fs->fatal : fs->view_seq || (!dry && (fs->dev.readonly || fs->quiesced)) ? -EROFS : 0;
	if (err) {
		snprintf(why, len, "%s", err == -EROFS ? "mounted read-only" : strerror(-err));
		goto out;
	}
	/* one at a time: a shrink lets requests in between its moves */
	if (fs->resizing) {
		snprintf(why, len, "another resize is under way");
		err = -EBUSY;
		goto out;
	}
	mine = !dry;
	fs->resizing = mine;
	err = lfs_resize_plan(&old, bytes, &g, why, len);
	ri->new_nsegs = err ? old.nsegs : g.nsegs;
	ri->new_bytes = err ? ri->old_bytes : bytes;
	if (err)
		goto out;
	if (g.nsegs > old.nsegs) {
		struct stat st;
		if (dry && bytes > fs->dev.size_bytes && (fstat(fs->dev.fd, &st) < 0 || !S_ISREG(st.st_mode))) {
			snprintf(why, len, "%" PRIu64 " bytes is larger than the device (%" PRIu64 ")", bytes,
				 fs->dev.size_bytes);
			err = -ENOSPC;
		}
		if (dry || (err = extend(fs, bytes, why, len)))
			goto out;
		err = commit(fs, &g, why, len);
		goto out;
	}
	/* a shrink: refused before anything changes if the data would not fit */
	if (!dry && ((err = lfs_flush(fs)) || (err = lfs_ckpt_settle(fs, false)))) {
		snprintf(why, len, "%s", strerror(-err));
		goto out;
	}
	if (!fits(fs, &g, bytes, ri, why, len)) {
		err = -ENOSPC;
		goto out;
	}
	if (dry)
		goto out;
	lfs_seg_set_limit(fs, g.nsegs);
	uint32_t reserve = fs->sb.reserved_segs;
	fs->sb.reserved_segs = g.reserved_segs;
	/* what deletes emptied is room once checkpoints free it */
	for (int i = 0; i < 2 && !err && lfs_seg_freeable(fs); i++)
		err = lfs_ckpt_write(fs, false);
	if (!err)
		err = make_room(fs, g.nsegs, why, len);
	if (!err)
		err = empty_tail(fs, g.nsegs, yield, ri, why, len);
	if (!err)
		err = commit(fs, &g, why, len);
	if (err && !fs->fatal) {
		/* the old size stays: the writer may have its tail again */
		fs->sb.reserved_segs = reserve;
		lfs_seg_set_limit(fs, old.nsegs);
		goto out;
	}
	/* an image file is cut to the new size; a device keeps its length */
	struct stat st;
	if (!err && fstat(fs->dev.fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > bytes) {
		if (ftruncate(fs->dev.fd, (off_t)bytes) < 0)
			lfs_log("resize: cannot cut the image to %" PRIu64 " bytes: %s", bytes, strerror(errno));
		else
			fs->dev.size_bytes = bytes;
	}
out:
	if (mine)
		fs->resizing = false;
	if (!err && !dry)
		lfs_log_info("resize: %" PRIu64 " to %" PRIu64 " segments (%" PRIu64 " to %" PRIu64 " MiB), %"
			     PRIu64 " blocks moved", ri->old_nsegs, ri->new_nsegs, ri->old_bytes >> 20,
			     ri->new_bytes >> 20, ri->moved_blocks);
	pthread_mutex_unlock(&fs->lock);
	return err;
}
