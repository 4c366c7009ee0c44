/*
 * space.c — admission control: the reserve, and who may use which part.
 *
 * Before an operation adds dirty state, it asks here whether the whole
 * dirty state will still fit in clean segments above a floor that
 * depends on what the operation is.  From the top of the clean space
 * down (lfs(5), "Space and the reserve", states the invariant):
 *
 *   writers  (new data, new names)        stop at the reserve plus the
 *                                          cache headroom;
 *   writeback of data a page cache        may use the headroom: stops at
 *   already acknowledged                  the reserve, reserved_segs
 *                                          segments;
 *   deletes  (unlink, rmdir, truncate,     may go on to the delete floor,
 *             punch, rename over, chmod…)  half way into the reserve;
 *   cleaning and the checkpoint            may go on to the checkpoint
 *                                          floor: every table block and
 *                                          two segments for the log head.
 *
 * So a full filesystem can always delete, the deletes can always be
 * checkpointed, and cleaning always has the room the victims it accepts
 * need (clean.c checks each victim's cost against lfs_space_for_cleaning
 * before moving anything).
 *
 * When an operation does not fit: flush (the estimate of dirty state is
 * pessimistic), checkpoint if that frees segments, then clean the
 * emptiest segments.  Cleaning that gained nothing is not tried again
 * until something was freed since (fs->freed_bytes), or a second later
 * (the cleaner may have made room to move), so a stream of writes into a
 * full filesystem costs at most one attempt a second.
 */
#include "lfs_int.h"

#include <errno.h>

#ifndef LFS_SLACK_FACTOR
#define LFS_SLACK_FACTOR 1
#endif

/* Blocks the log will take for the dirty state plus `bytes` of new
 * content: pages with their leaves, records and interior nodes as they
 * were counted when dirtied (lfs_file_dirty_page), the new content's
 * blocks with a leaf per nptr of them and one more for a leaf it starts
 * in, a summary per pseg, tombstones packed 16 to a block. */
static uint64_t
blocks_needed(const struct lfs_fs *fs, uint64_t bytes)
{
	uint64_t n = (bytes + fs->bsize - 1) / fs->bsize;
	uint64_t blocks = (fs->dirty_units + LFS_UNITS_PER_BLOCK - 1) / LFS_UNITS_PER_BLOCK;
	if (n)
		blocks += n + n / fs->nptr + 1;
	return blocks + blocks / (fs->max_pseg / 2) + fs->tombstones.count / 8 + 16;
}

/* What a checkpoint writes at most: every map block, their summaries,
 * and two segments, since the log head moving into next_seg must name a
 * clean successor. */
static uint64_t
ckpt_floor(const struct lfs_fs *fs)
{
	uint64_t tables = (uint64_t)fs->n_imap_blocks + fs->n_sut_blocks;
	return tables + tables / (fs->max_pseg / 2) + 2 + 2ull * fs->sb.seg_blocks;
}

uint64_t
lfs_space_floor(const struct lfs_fs *fs, enum lfs_space_class cls)
{
	uint64_t ckpt = ckpt_floor(fs);
	uint64_t reserve = (uint64_t)fs->sb.reserved_segs * fs->sb.seg_blocks;
	if (reserve < ckpt)
		reserve = ckpt;
	/* cleaning at a loss stops half way into the reserve, and deletes
	 * may go half way from there to the checkpoint's floor */
	uint64_t loss = reserve / 2 > ckpt ? reserve / 2 : ckpt;
	if (cls == LFS_SPACE_WRITE || cls == LFS_SPACE_OVERWRITE)
		return reserve + fs->headroom_blocks;
	if (cls == LFS_SPACE_WRITEBACK)
		return reserve;
	if (cls == LFS_SPACE_CLEAN_AT_LOSS)
		return loss;
	return ckpt + (loss - ckpt) / 2;
}

/* Dead space writers leave, so that cleaning can always gather a clean
 * segment from it: spread evenly over every segment, each victim then
 * holds total/slack of its own dead, and the victims that cleaning can
 * move within its budget (the writers' floor above the checkpoint's)
 * must hold a segment's worth; one more segment for the block-map
 * leaves and inode records that moved blocks drag along (lfs(5), "Space
 * and the reserve"). */
static uint64_t
slack_blocks(const struct lfs_fs *fs)
{
	uint64_t seg = fs->sb.seg_blocks, total = fs->sb.nsegs * seg;
	uint64_t floor = lfs_space_floor(fs, LFS_SPACE_WRITE), ckpt = ckpt_floor(fs);
	uint64_t budget = floor > ckpt + seg ? floor - ckpt : seg;
	return (LFS_SLACK_FACTOR * total / budget + 1) * seg;
}

uint64_t
lfs_space_capacity(const struct lfs_fs *fs)
{
	uint64_t total = fs->sb.nsegs * (uint64_t)fs->sb.seg_blocks;
	uint64_t keep = lfs_space_floor(fs, LFS_SPACE_WRITE) + slack_blocks(fs);
	return total > keep ? total - keep : 0;
}

/* Live blocks now, the buffered ones counted as new (an overwrite's old
 * block is freed only when it is written: a flush settles it). */
static uint64_t
used_blocks(const struct lfs_fs *fs)
{
	return (fs->live_total + fs->dirty_bytes + fs->bsize - 1) / fs->bsize;
}

static bool
grows_within(const struct lfs_fs *fs, uint64_t bytes)
{
	return used_blocks(fs) + (bytes + fs->bsize - 1) / fs->bsize <= lfs_space_capacity(fs);
}

bool
lfs_space_fits(const struct lfs_fs *fs, enum lfs_space_class cls, uint64_t bytes)
{
	if (cls == LFS_SPACE_WRITE && !grows_within(fs, bytes))
		return false;
	return blocks_needed(fs, bytes) + lfs_space_floor(fs, cls) <= lfs_seg_clean_blocks(fs);
}

uint64_t
lfs_space_for_cleaning(const struct lfs_fs *fs)
{
	uint64_t have = lfs_seg_clean_blocks(fs);
	uint64_t keep = blocks_needed(fs, 0) + ckpt_floor(fs);
	return have > keep ? have - keep : 0;
}

uint64_t
lfs_space_avail_blocks(const struct lfs_fs *fs, enum lfs_space_class cls)
{
	uint64_t have = lfs_seg_clean_blocks(fs), keep = blocks_needed(fs, 0) + lfs_space_floor(fs, cls);
	if (have <= keep)
		return 0;
	/* n blocks of content take n + n/nptr + 1 */
	uint64_t n = have - keep;
	n = n > 1 ? (n - 1) * fs->nptr / (fs->nptr + 1) : 0;
	if (cls == LFS_SPACE_WRITE) {
		uint64_t used = used_blocks(fs), cap = lfs_space_capacity(fs);
		uint64_t room = cap > used ? cap - used : 0;
		if (n > room)
			n = room;
	}
	return n;
}

/* Try to make room: flush, checkpoint, clean.  Returns 0 when `bytes`
 * fits, -ENOSPC when it cannot be made to, or another error. */
static int make_room(struct lfs_fs *fs, enum lfs_space_class cls, uint64_t bytes);

int
lfs_space_admit(struct lfs_fs *fs, enum lfs_space_class cls, uint64_t bytes)
{
	/* the caller holds inodes that no reference may keep (the kernel's
	 * lookups do under FUSE, a library caller's need not): the flushes
	 * below must not evict them */
	bool outer = !fs->admitting;
	fs->admitting = true;
	int err = make_room(fs, cls, bytes);
	if (outer)
		fs->admitting = false;
	return err;
}

static void
log_full(struct lfs_fs *fs, enum lfs_space_class cls, const char *why)
{
	uint64_t now = lfs_now_ns();
	if (now - fs->full_logged_ns < 60ull * 1000000000ull)
		return;
	fs->full_logged_ns = now;
	lfs_log("full: %s refused (%llu of %llu segments clean, %llu reserved; %llu of %llu blocks "
		"of capacity live); %s",
		cls == LFS_SPACE_WRITE ? "a write" : cls == LFS_SPACE_OVERWRITE ? "an overwrite"
		: cls == LFS_SPACE_WRITEBACK ? "a cached write" : "a delete",
		(unsigned long long)fs->nclean, (unsigned long long)fs->sb.nsegs,
		(unsigned long long)fs->sb.reserved_segs, (unsigned long long)used_blocks(fs),
		(unsigned long long)lfs_space_capacity(fs), why);
}

static int
make_room(struct lfs_fs *fs, enum lfs_space_class cls, uint64_t bytes)
{
	if (fs->fatal)
		return fs->fatal;
	if (lfs_space_fits(fs, cls, bytes))
		return 0;
	int err = lfs_flush(fs);
	if (err)
		return err;
	if (lfs_space_fits(fs, cls, bytes))
		return 0;
	/* at capacity, cleaning cannot help: only a delete can */
	if (cls == LFS_SPACE_WRITE && !grows_within(fs, bytes)) {
		log_full(fs, cls, "the live data is at the capacity");
		return -ENOSPC;
	}
	/* A checkpoint costs blocks of its own: write one only when it frees
	 * segments, or a nearly full disk drains itself checkpointing. */
	if (lfs_seg_freeable(fs) && (err = lfs_ckpt_write(fs, false)))
		return err;
	uint64_t seg_bytes = (uint64_t)fs->sb.seg_blocks * fs->bsize;
	for (int round = 0; round < 64 && !lfs_space_fits(fs, cls, bytes); round++) {
		/* after cleaning that gained nothing, try again once anything
		 * was freed, or a second later (the cleaner may have moved) */
		if (fs->futile && fs->freed_bytes == fs->futile_at &&
		    lfs_now_ns() - fs->futile_ns < 1000000000ull)
			break;
		uint64_t moved = 0, before = lfs_seg_clean_blocks(fs), freed = fs->freed_bytes;
		err = lfs_clean_reclaim(fs, &moved);
		if (err && err != -ENOSPC)
			return err;
		/* progress: clean space, or dead space made elsewhere (the
		 * old leaves of moved blocks) that later cleaning gains from */
		bool gained = lfs_seg_clean_blocks(fs) > before;
		if (err == -ENOSPC || (!gained && fs->freed_bytes - freed < seg_bytes)) {
			fs->futile = true;
			fs->futile_at = fs->freed_bytes;
			fs->futile_ns = lfs_now_ns();
			break;
		}
		fs->futile = false;
		/* at a loss: leave the rest to the next write (or the cleaner)
		 * rather than spend the reserve here */
		if (!gained)
			break;
	}
	if (lfs_space_fits(fs, cls, bytes))
		return 0;
	log_full(fs, cls, "cleaning can free nothing more until something is deleted");
	return -ENOSPC;
}
