/*
 * space_reserve.c — layer 2: the reserve, and who may use which part of
 * the clean space: the arithmetic of admission, beside the usage table it
 * reads.
 *
 * From the top of the clean space down (lfs(5), "Space and the reserve",
 * states the invariant):
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
 */
#include "lfs_int.h"

#ifndef LFS_SLACK_FACTOR
#define LFS_SLACK_FACTOR 1
#endif

/* Blocks the log will take for the dirty state plus `bytes` of new
 * content: pages with their leaves, records and interior nodes as they
 * were counted when dirtied (lfs_file_dirty_page), the new content's
 * blocks with a leaf per nptr of them and one more for a leaf it starts
 * in, a summary per pseg, tombstones packed 16 to a block.  The summary
 * per max_pseg/2 blocks and the 16 of margin are the arithmetic's
 * (1 + 1/(P/2)) and + 16 (lfs(5), "SPACE AND THE RESERVE"), as in
 * lfs_clean_cost_blocks. */
static uint64_t
log_blocks(const struct lfs_fs *fs, uint64_t blocks)
{
	return blocks + blocks / (fs->max_pseg / 2) + 16;
}

static uint64_t
with_leaves(const struct lfs_fs *fs, uint64_t n)
{
	return n ? n + n / fs->nptr + 1 : 0;
}

static uint64_t
blocks_needed(const struct lfs_fs *fs, uint64_t bytes)
{
	uint64_t n = (bytes + fs->bsize - 1) / fs->bsize;
	uint64_t blocks = (fs->dirty_units + LFS_UNITS_PER_BLOCK - 1) / LFS_UNITS_PER_BLOCK;
	return log_blocks(fs, blocks + with_leaves(fs, n)) + fs->tombstones.count / 8;
}

/* What a checkpoint writes at most: every map block, their summaries,
 * and two segments, since the log head moving into next_seg must name a
 * clean successor.  The bottom of cleaning's budget B (lfs(5)): what
 * cleaning may write is the clean space above it. */
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
	/* the writers' floor is the top of cleaning's budget B (lfs(5)):
	 * the slack is sized from B.  Cleaning at a loss (outside the
	 * invariant: the amortized progress of dragged nodes' old copies)
	 * stops half way into the reserve, and deletes may go half way from
	 * there to the checkpoint's floor */
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
 * segment from it at a net gain (lfs(5), "SPACE AND THE RESERVE", the
 * invariant).  Spread evenly over all N segments (the worst case), each
 * victim holds slack/N of its own dead space.  One batch takes V
 * victims: as many as the budget (the writers' floor above the
 * checkpoint's) can move, B/S, but no more than the reclaimer takes at
 * once (LFS_RECLAIM_MAX_VICTIMS, and LFS_RECLAIM_MAX_BYTES of live data,
 * a segment's worth each at most).  Those V must hold a segment's worth
 * of dead space, the gain, and one more for the block-map leaves,
 * records and checkpoint their moves drag along (lfs_clean_cost_blocks):
 * (N/V + 1) segments.  On top, the summaries: a moved block costs
 * 1 + 1/(max_pseg/2) blocks, so a victim gains only if more than
 * 1/(max_pseg/2 + 1) of it is dead, whatever the batch (a quarter of an
 * 8-block segment, where max_pseg is 7). */
static uint64_t
slack_blocks(const struct lfs_fs *fs)
{
	uint64_t seg = fs->sb.seg_blocks, nsegs = lfs_seg_limit(fs), total = nsegs * seg;
	uint64_t floor = lfs_space_floor(fs, LFS_SPACE_WRITE), ckpt = ckpt_floor(fs);
	uint64_t budget = floor > ckpt + seg ? floor - ckpt : seg;
	/* N/V: the budget's T/B, or the reclaimer's cap when it is the less */
	uint64_t cap = LFS_RECLAIM_MAX_BYTES / ((uint64_t)seg * fs->bsize);
	cap = cap < LFS_RECLAIM_MAX_VICTIMS ? cap ? cap : 1 : LFS_RECLAIM_MAX_VICTIMS;
	uint64_t per = total / budget, by_cap = (nsegs + cap - 1) / cap;
	uint64_t summaries = (total + fs->max_pseg / 2) / (fs->max_pseg / 2 + 1);
	return (LFS_SLACK_FACTOR * (per > by_cap ? per : by_cap) + 1) * seg + summaries;
}

/* The content the log holds beside the floor and the slack, net of what
 * the log writes with it (a leaf per nptr blocks, the summaries): so
 * that the largest write df admits, made at once (fallocate), finds its
 * blocks, leaves and summaries room in the log (lfs_space_fits). */
uint64_t
lfs_space_capacity(const struct lfs_fs *fs)
{
	uint64_t total = lfs_seg_limit(fs) * (uint64_t)fs->sb.seg_blocks;
	uint64_t keep = lfs_space_floor(fs, LFS_SPACE_WRITE) + slack_blocks(fs);
	if (total <= keep || log_blocks(fs, with_leaves(fs, 1)) > total - keep)
		return 0;
	uint64_t lo = 1, hi = total - keep + 1; /* log_blocks(with_leaves(lo)) fits, hi's does not */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (log_blocks(fs, with_leaves(fs, mid)) <= total - keep)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Live blocks now, the buffered ones counted as new (an overwrite's old
 * block is freed only when it is written: a flush settles it) with the
 * leaves buffered holes may add (counted only once written, writes into
 * sparse files took the live data past the capacity, and with it the
 * dead space cleaning needs: check_capacity), and the unwritten ones
 * fallocate reserved: writing one takes nothing more. */
uint64_t
lfs_space_used_blocks(const struct lfs_fs *fs)
{
	return (fs->live_total + fs->dirty_bytes + fs->bsize - 1) / fs->bsize + fs->dirty_new_leaves + fs->unwritten;
}

bool
lfs_space_grows_within(const struct lfs_fs *fs, uint64_t bytes)
{
	return lfs_space_used_blocks(fs) + (bytes + fs->bsize - 1) / fs->bsize <= lfs_space_capacity(fs);
}

bool
lfs_space_fits(const struct lfs_fs *fs, enum lfs_space_class cls, uint64_t bytes)
{
	if (cls == LFS_SPACE_WRITE && !lfs_space_grows_within(fs, bytes))
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
	/* the most that lfs_space_fits admits, found by bisection rather
	 * than by inverting blocks_needed: an inverse that missed one of its
	 * terms let a write that trusted it eat into the reserve */
	uint64_t lo = 0, hi = lfs_seg_clean_blocks(fs) + 1;
	if (!lfs_space_fits(fs, cls, 0))
		return 0;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (lfs_space_fits(fs, cls, mid * fs->bsize))
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}
