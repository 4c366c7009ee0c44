/*
 * ctl_ops.c — layer 6: the operations behind the control protocol
 * (ctl_proto.h), each taking the filesystem lock and checking every
 * request against current state.
 */
#include "ctl_ops.h"
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void
lfs_ctl_info(struct lfs_fs *fs, uint64_t val[4])
{
	lfs_lock(fs);
	val[0] = fs->bsize;
	val[1] = fs->sb.seg_blocks;
	val[2] = fs->sb.nsegs;
	val[3] = fs->sb.seg0;
	pthread_mutex_unlock(&fs->lock);
}

uint32_t
lfs_ctl_usage(struct lfs_fs *fs, uint64_t first, uint32_t n, struct lfs_ctl_seg *out)
{
	lfs_lock(fs);
	uint32_t i = 0;
	/* compared without adding: a forged `first` could wrap */
	for (; first < fs->sb.nsegs && i < n && i < fs->sb.nsegs - first; i++) {
		const struct lfs_seginfo *s = &fs->segs[first + i];
		out[i] = (struct lfs_ctl_seg){ .live_bytes = lfs_seg_live(fs, first + i), .mtime_ns = s->mtime_ns,
					       .state = s->state };
	}
	pthread_mutex_unlock(&fs->lock);
	return i;
}

static bool
check_live(struct lfs_fs *fs, const struct lfs_ctl_blk *b, uint8_t *blk)
{
	if (!lfs_addr_valid(fs, b->addr) || b->kind < LFS_BK_DATA || b->kind > LFS_BK_HELD)
		return false;
	struct lfs_pseg_entry e = { .ino = b->ino, .version = b->version, .lblk = b->lblk, .kind = b->kind };
	if (b->kind == LFS_BK_INODE || b->kind == LFS_BK_XATTR) {
		/* Victims are chosen dirty.  One clean or written again now
		 * was freed since the cleaner read its summaries (a checkpoint
		 * between two requests, or two batches of one): what the
		 * request says was there is gone, and reading its address
		 * would only find what the log has not written yet. */
		if (fs->segs[lfs_addr_seg(fs, b->addr)].state != LFS_SEG_DIRTY)
			return false;
		if (lfs_read_block(fs, b->addr, blk))
			return false;
	}
	if ((b->kind == LFS_BK_IMAP && b->lblk >= fs->n_imap_blocks) ||
	    (b->kind == LFS_BK_SUT && b->lblk >= fs->n_sut_blocks))
		return false;
	return lfs_clean_block_live(fs, &e, b->addr, blk);
}

/* A cleaner's request is served in batches of this many blocks, the lock
 * yielded to waiting requests between two (lock.c): a FUSE request waits
 * behind one batch at most, not behind a thousand blocks. */
#define CTL_BATCH 64

/* Between batches: what the last one loaded may be evicted, and waiting
 * requests go first; what they read is not the cleaner's (*read0: the
 * device's read counter since which the cleaner's reads count). */
static void
between_batches(struct lfs_fs *fs, uint64_t *read0)
{
	fs->stats.cleaner_bytes_read += fs->dev.bytes_read - *read0;
	lfs_cache_trim(fs);
	lfs_lock_yield(fs);
	*read0 = fs->dev.bytes_read;
}

int
lfs_ctl_live(struct lfs_fs *fs, struct lfs_ctl_blk *b, uint32_t n)
{
	uint8_t *blk = malloc(LFS_MAX_BLOCK_SIZE);
	if (!blk)
		return -ENOMEM;
	lfs_lock(fs);
	uint64_t read0 = fs->dev.bytes_read;
	for (uint32_t i = 0; i < n; i++) {
		if (i && i % CTL_BATCH == 0)
			between_batches(fs, &read0);
		b[i].live = check_live(fs, &b[i], blk);
	}
	fs->stats.cleaner_bytes_read += fs->dev.bytes_read - read0;
	lfs_cache_trim(fs); /* the inodes liveness checks loaded */
	pthread_mutex_unlock(&fs->lock);
	free(blk);
	return 0;
}

int
lfs_ctl_move(struct lfs_fs *fs, const struct lfs_ctl_blk *b, uint32_t n, uint64_t cleaner_read,
	     uint64_t *moved)
{
	uint8_t *blk = malloc(LFS_MAX_BLOCK_SIZE);
	if (!blk)
		return -ENOMEM;
	lfs_lock(fs);
	/* what cleaning reads from the image (the live blocks, and the
	 * block-map nodes and inodes that find and re-point them) is the
	 * cleaner's, like the summaries it read itself */
	uint64_t read0 = fs->dev.bytes_read;
	int err = fs->fatal;
	if (!err && fs->dev.readonly)
		err = -EROFS;
	/* what is buffered goes out first, so moved blocks form their own
	 * psegs, in the order the cleaner asked (its age sort) */
	if (!err)
		err = lfs_flush(fs);
	uint64_t m = 0, move_age = 0;
	/* All or nothing: a victim moved in part frees nothing, yet uses the
	 * room it took.  So the whole request's cost is judged first. */
	struct lfs_clean_cost cost;
	struct u64map victims;
	lfs_clean_cost_init(&cost);
	u64map_init(&victims);
	bool *live = calloc(n + 1, sizeof(bool));
	if (!live && !err)
		err = -ENOMEM;
	for (uint32_t i = 0; i < n && !err; i++) {
		if (i && i % CTL_BATCH == 0)
			between_batches(fs, &read0);
		if (!(live[i] = check_live(fs, &b[i], blk)))
			continue;
		struct lfs_pseg_entry e = { .ino = b[i].ino, .lblk = b[i].lblk, .kind = b[i].kind };
		err = lfs_clean_cost_add(&cost, fs, &e, blk);
		if (!err)
			err = u64map_put(&victims, lfs_addr_seg(fs, b[i].addr), (void *)1);
		if (!err)
			err = lfs_clean_cost_victim(&cost, fs, lfs_addr_seg(fs, b[i].addr));
		uint64_t age = fs->segs[lfs_addr_seg(fs, b[i].addr)].mtime_ns;
		if (age > move_age)
			move_age = age;
	}
	if (!err && !lfs_clean_affordable(fs, lfs_clean_cost_blocks(&cost, fs), victims.count))
		err = -ENOSPC;
	lfs_clean_cost_free(&cost);
	/* Then moved batch by batch, each written by its own flush before
	 * the lock is yielded: liveness is judged again just before a block
	 * moves, as a write between two batches may have replaced it. */
	for (uint32_t i = 0; i < n && !err; i++) {
		if (i && i % CTL_BATCH == 0) {
			err = lfs_clean_flush(fs, move_age, &victims);
			if (!err)
				between_batches(fs, &read0);
			if (!err)
				err = fs->fatal ? fs->fatal : fs->dev.readonly ? -EROFS : 0;
			if (err)
				break;
		}
		if (!live[i] || !check_live(fs, &b[i], blk))
			continue;
		/* a block that cannot be read back intact (logged) stays where
		 * it is rather than failing the whole request and the cleaner
		 * (table blocks are re-dirtied from memory, but one a snapshot
		 * holds is copied) */
		if ((err = lfs_read_block(fs, b[i].addr, blk)) == -EIO) {
			err = 0;
			continue;
		}
		struct lfs_pseg_entry e = { .ino = b[i].ino, .version = b[i].version, .lblk = b[i].lblk,
					    .kind = b[i].kind };
		if (!err)
			err = lfs_clean_move_block(fs, &e, b[i].addr, blk);
		if (!err)
			m++;
	}
	free(live);
	if (!err)
		err = lfs_clean_flush(fs, move_age, &victims);
	u64map_free(&victims);
	fs->stats.blocks_cleaned += m;
	fs->stats.cleaner_bytes_read += cleaner_read + (fs->dev.bytes_read - read0);
	lfs_cache_trim(fs);
	pthread_mutex_unlock(&fs->lock);
	free(blk);
	*moved = m;
	return err;
}

int
lfs_ctl_segclean(struct lfs_fs *fs, const uint64_t *segs, uint32_t n, uint64_t *cleaned)
{
	/* The answer counts each listed segment clean after the call,
	 * whoever freed it: a victim that a checkpoint freed between the
	 * cleaner's moves and this request is the cleaner's work too.  The
	 * daemon's own count is kept where segments turn clean (seg.c), so
	 * that one the reclaimer emptied is not counted twice. */
	uint64_t *listed = lfs_malloc((n + 1) * sizeof(*listed));
	if (!listed)
		return -ENOMEM;
	lfs_lock(fs);
	uint32_t nl = 0;
	bool empty = false;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t seg = segs[i];
		uint32_t j = 0;
		while (j < nl && listed[j] != seg)
			j++;
		if (seg >= fs->sb.nsegs || j < nl)
			continue;
		listed[nl++] = seg;
		empty |= fs->segs[seg].state == LFS_SEG_DIRTY && fs->segs[seg].live_bytes == 0;
	}
	/* the checkpoint that no longer references them is what frees them */
	int err = empty ? lfs_ckpt_write_unlocked(fs) : 0;
	uint64_t now_clean = 0;
	for (uint32_t i = 0; i < nl && !err; i++)
		now_clean += fs->segs[listed[i]].state == LFS_SEG_CLEAN;
	pthread_mutex_unlock(&fs->lock);
	free(listed);
	*cleaned = now_clean;
	return err;
}

void
lfs_ctl_cleaner_report(struct lfs_fs *fs, uint64_t passes)
{
	lfs_lock(fs);
	fs->stats.cleaner_passes = passes;
	pthread_mutex_unlock(&fs->lock);
}

void
lfs_ctl_stats(struct lfs_fs *fs, struct lfs_ctl_stats *out)
{
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	lfs_lock(fs);
	*out = (struct lfs_ctl_stats){
		.bytes_written = st.bytes_written, .bytes_read = st.bytes_read, .segs_total = st.segs_total,
		.segs_clean = st.segs_clean, .segs_reserved = fs->sb.reserved_segs, .live_bytes = st.live_bytes,
		.checkpoints = st.checkpoints, .ckpt_seq = st.ckpt_seq, .psegs_written = st.psegs_written,
		.blocks_moved = st.blocks_cleaned, .bytes_moved = st.cleaning_bytes_written,
		.segs_cleaned = st.segs_cleaned, .cleaner_bytes_read = fs->stats.cleaner_bytes_read,
		.cleaner_passes = fs->stats.cleaner_passes,
		.seg_bytes = (uint64_t)fs->sb.seg_blocks * fs->bsize,
		.bytes_written_mount = fs->dev.bytes_written,
		.bytes_freed = fs->freed_bytes,
	};
	memcpy(out->victim_hist, fs->stats.victim_hist, sizeof(out->victim_hist));
	pthread_mutex_unlock(&fs->lock);
}

_Static_assert(LFS_HIST_MAX < LFS_CTL_SNAP_LIST_LIMIT, "a client takes every kept checkpoint");

/* The first of the n records ci (ascending seq) whose seq is from on. */
static size_t
first_from(const struct lfs_ckpt_info *ci, size_t n, uint64_t from)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ci[mid].seq < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int
lfs_ctl_snap_list(struct lfs_fs *fs, uint64_t from, uint32_t n, struct lfs_ctl_ckpt *out,
		  struct lfs_ctl_resp *resp)
{
	struct lfs_ckpt_info *ci;
	size_t total;
	uint64_t held;
	int err = lfs_snapshot_list(fs, &ci, &total, &held);
	if (err)
		return err;
	uint32_t k = 0;
	size_t i = first_from(ci, total, from);
	for (; i < total && k < n; i++, k++) {
		out[k] = (struct lfs_ctl_ckpt){ .seq = ci[i].seq, .time_ns = ci[i].time_ns,
						.own_bytes = ci[i].own_bytes, .flags = ci[i].flags,
						.src_seq = ci[i].src_seq };
		memcpy(out[k].name, ci[i].name, sizeof(out[k].name));
		memcpy(out[k].src_uuid, ci[i].src_uuid, sizeof(out[k].src_uuid));
	}
	free(ci);
	resp->count = k;
	resp->val[0] = total;
	resp->val[1] = held;
	resp->val[3] = total - i;
	lfs_lock(fs);
	resp->val[2] = fs->protect_s;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

int
lfs_ctl_view_imap(struct lfs_fs *fs, uint64_t seq, uint64_t first, uint32_t n, uint64_t *out, uint32_t *got,
		  uint64_t *total, uint32_t *root)
{
	*got = 0;
	*root = 0;
	lfs_lock(fs);
	*total = fs->n_imap_blocks;
	uint64_t *all = lfs_calloc(fs->n_imap_blocks, sizeof(*all));
	int err = !all ? -ENOMEM : !fs->snapshots ? -EOPNOTSUPP : !lfs_hist_get(&fs->hist, seq) ? -ENOENT : 0;
	if (!err)
		err = lfs_ckpt_view_imap(fs, seq, all);
	if (!err)
		*root = lfs_hist_get(&fs->hist, seq)->root;
	for (uint64_t i = first; !err && i < fs->n_imap_blocks && *got < n; i++)
		out[(*got)++] = all[i];
	pthread_mutex_unlock(&fs->lock);
	free(all);
	return err;
}

_Static_assert(LFS_CTL_BLOCK_MAX == LFS_MAX_BLOCK_SIZE, "VIEW_READ carries the largest block");

int
lfs_ctl_view_read(struct lfs_fs *fs, uint64_t seq, uint64_t addr, uint32_t n, uint8_t *out, uint64_t *len)
{
	n = n ? n : 1;
	*len = 0;
	if (n > LFS_CTL_VIEW_READ_BYTES / fs->bsize)
		return -EINVAL;
	/* a range: its first and last addresses kept, so every one between */
	if (!lfs_addr_kept(fs, addr) || addr + (n - 1) < addr || !lfs_addr_kept(fs, addr + (n - 1)))
		return -EINVAL;
	lfs_lock(fs);
	int err = lfs_retain_read_run(fs, seq, addr, n, out);
	pthread_mutex_unlock(&fs->lock);
	if (!err)
		*len = (uint64_t)n * fs->bsize;
	return err;
}

/* What SCRUB_WHO answers for one block a scrubber's read found failing. */
static void
scrub_one(struct lfs_fs *fs, const struct lfs_ctl_blk *b, uint8_t *blk, struct lfs_ctl_damage *d)
{
	*d = (struct lfs_ctl_damage){ .addr = b->addr, .lblk = b->lblk, .ino = b->ino, .version = b->version,
				      .kind = b->kind };
	/* a segment freed since the scrubber read it holds nothing of ours */
	if (!lfs_addr_valid(fs, b->addr) || b->kind < LFS_BK_DATA || b->kind > LFS_BK_HELD ||
	    fs->segs[lfs_addr_seg(fs, b->addr)].state == LFS_SEG_CLEAN)
		return;
	d->orig = fs->snapshots && fs->held.count ? lfs_held_at(&fs->held, b->addr) : 0;
	struct lfs_pseg_entry e = { .ino = b->ino, .version = b->version, .lblk = b->lblk, .kind = b->kind };
	bool live = false;
	if ((b->kind == LFS_BK_IMAP && b->lblk >= fs->n_imap_blocks) ||
	    (b->kind == LFS_BK_SUT && b->lblk >= fs->n_sut_blocks))
		live = false;
	else if (b->kind != LFS_BK_INODE)
		live = lfs_clean_tree_live(fs, &e, b->addr, NULL);
	d->flags = (uint8_t)((live ? LFS_DAMAGE_LIVE : 0) | (d->orig ? LFS_DAMAGE_HELD : 0));
	if (!live && !d->orig && b->kind != LFS_BK_INODE)
		return;
	/* read again past every cache: a block the scrubber read torn while
	 * it was written, or in a segment reused meanwhile, verifies now */
	int err = lfs_read_block_at(fs, b->addr, blk);
	if (err == -EIO || err == -EFSCORRUPTED)
		d->flags |= LFS_DAMAGE_BAD;
	struct lfs_inode *ip;
	if (live && (b->kind == LFS_BK_DATA || b->kind == LFS_BK_INDIR || b->kind == LFS_BK_XATTR) &&
	    lfs_iget(fs, b->ino, &ip) == 0 && S_ISDIR(ip->di.mode))
		d->flags |= LFS_DAMAGE_DIR;
}

int
lfs_ctl_scrub_who(struct lfs_fs *fs, const struct lfs_ctl_blk *b, uint32_t n, struct lfs_ctl_damage *out)
{
	uint8_t *blk = malloc(LFS_MAX_BLOCK_SIZE);
	if (!blk)
		return -ENOMEM;
	lfs_lock(fs);
	for (uint32_t i = 0; i < n; i++) {
		if (i && i % CTL_BATCH == 0) {
			lfs_cache_trim(fs);
			lfs_lock_yield(fs);
		}
		scrub_one(fs, &b[i], blk, &out[i]);
	}
	lfs_cache_trim(fs);
	pthread_mutex_unlock(&fs->lock);
	free(blk);
	return 0;
}

void
lfs_ctl_scrub_inodes(struct lfs_fs *fs, uint64_t addr, uint64_t first, uint32_t n, uint32_t *out,
		     uint32_t *got, uint64_t *next)
{
	lfs_lock(fs);
	uint64_t ino = first < LFS_ROOT_INO ? LFS_ROOT_INO : first, max = fs->sb.max_inodes;
	uint64_t end = ino < max && max - ino > LFS_CTL_SCRUB_INODES_SPAN ? ino + LFS_CTL_SCRUB_INODES_SPAN : max;
	uint32_t k = 0;
	for (; ino < end && k < n; ino++) {
		const struct lfs_imap_entry *e = lfs_imap_get(fs, ino);
		if ((e->flags & LFS_IMAP_INUSE) && e->daddr == addr)
			out[k++] = (uint32_t)ino;
	}
	pthread_mutex_unlock(&fs->lock);
	*got = k;
	*next = ino < max ? ino : 0;
}

int
lfs_ctl_resize(struct lfs_fs *fs, uint64_t bytes, uint64_t flags, uint64_t val[4], char *why, size_t len)
{
	why[0] = '\0';
	if (flags & ~(uint64_t)LFS_CTL_RESIZE_DRY)
		return -EINVAL;
	struct lfs_resize_info ri;
	int err = lfs_resize(fs, bytes, LFS_RESIZE_YIELD | (flags & LFS_CTL_RESIZE_DRY ? LFS_RESIZE_DRY : 0), &ri,
			     why, len);
	val[0] = ri.old_bytes;
	val[1] = ri.new_bytes;
	val[2] = ri.moved_blocks;
	val[3] = ri.min_bytes;
	return err;
}
