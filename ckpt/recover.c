/*
 * recover.c — layer 5: roll-forward from the newest checkpoint.
 *
 * Starting at the log head the checkpoint names, read partial segments in
 * order.  A pseg is taken only if its summary verifies, its sequence
 * number is the next one, it belongs to this checkpoint's epoch, and every
 * block matches its crc.  Psegs are collected until one marked END closes
 * the group; then the group is applied: each inode record in it replaces
 * the inode map entry, and the usage table trades the old version's blocks
 * for the new one's: from the addresses the writer logged as replaced
 * (rf_repl.c), or else reading only the parts of the two block maps that
 * differ (rf_account.c): a mount costs what was logged since the
 * checkpoint, not the size of the files it touched.  The first pseg that fails any test ends the log.
 *
 * Only what was read and fails verification ends the log.  A read that
 * fails, or memory that cannot be had, says nothing about where the log
 * ends: taking it for the end would start new segments and commit a
 * checkpoint without every fsynced group after it.  Such an error fails
 * the mount instead, before anything is written.
 *
 * Failures are classified, as nilfs2 does, so the log line says why the
 * log ended where it did; the walk and its rules are the one log
 * reader's (lfs/log/logwalk.h), shared with the cleaner, fsck and dumplfs.
 */
#include "lfs_int.h"
#include "logwalk.h"
#include "rf_account.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct pending {                /* one verified pseg of an open group */
	uint64_t start;             /* summary address */
	size_t off;                 /* of its summary + blocks in the window's buffer */
	uint8_t *buf;               /* there, once the window is complete */
	uint32_t n;
	uint64_t timestamp;
	bool end;                   /* closes its group */
};

/* Groups are applied a window at a time, and the old blocks the window
 * will be compared with are asked for first (rf_account.h): after
 * random fsynced writes to a large file, a mount otherwise waits for
 * the device once per old leaf.  The window's psegs stay in memory
 * until it is applied: at most RF_WINDOW_BYTES, or one group. */
#define RF_WINDOW_GROUPS 256
#define RF_WINDOW_BYTES (8u << 20)
/* its buffer's first size: it doubles as psegs come (a short log needs
 * little); the psegs are found by offset, so the buffer may move */
#define RF_WINDOW_FIRST (256u << 10)

struct account {
	struct lfs_fs *fs;
	int sign;
};

static int
account_block(void *ctx, uint64_t addr, uint8_t kind, uint64_t lblk)
{
	struct account *a = ctx;
	(void)lblk;
	if (a->sign > 0)
		lfs_retain_use(a->fs, addr, a->fs->bsize, kind);
	else
		lfs_retain_drop(a->fs, addr, 0, a->fs->bsize, kind, 0);
	return 0;
}

/* Count (sign +1) or uncount (-1) the blocks a record references.  A
 * corrupt block map is logged and counted as far as it can be: it fails
 * only its own inode, when that is used.  A read the device failed fails
 * the mount instead, so that nothing recovered is miscounted. */
static int
account_inode(struct lfs_fs *fs, const struct lfs_dinode *di, int sign)
{
	struct account a = { fs, sign };
	uint64_t read_errors = fs->dev.read_errors;
	int err = lfs_bmap_walk_disk(fs, di, account_block, &a);
	if (err == -EIO && fs->dev.read_errors != read_errors)
		return err;
	if (err == -EFSCORRUPTED || err == -EIO) {
		lfs_log("roll-forward: inode %u: block map unreadable (%s); usage counted in part", di->ino,
			strerror(-err));
		err = 0;
	}
	return err;
}

/* Trade the blocks of `old` (NULL: none counted) for those of `cur`
 * (NULL: a tombstone) in the usage table.  Only the parts of the two
 * block maps that differ are read (rf_account.c); if either map turns
 * out corrupt, both are walked whole as far as they can be, so a
 * corrupt map costs its own inode and nothing else. */
static int
account_change(struct lfs_rf *rf, const struct lfs_dinode *old, const struct lfs_dinode *cur)
{
	struct lfs_fs *fs = rf->fs;
	uint64_t read_errors = fs->dev.read_errors;
	int err = lfs_rf_account(rf, old, cur);
	if (err == -EIO && fs->dev.read_errors != read_errors)
		return err;
	if (err != -EFSCORRUPTED && err != -EIO)
		return err;
	/* counted in part: what a later list uncounts may not be counted */
	if ((err = lfs_rf_lists_taint(rf, old ? old->ino : cur->ino)))
		return err;
	err = old ? account_inode(fs, old, -1) : 0;
	if (!err && cur)
		err = account_inode(fs, cur, +1);
	return err;
}

/* The leaves group g logged for a relink record di (format.h,
 * LFS_DI_RELINK): relinked in the map it shares with old, each traded
 * in the usage table for the leaf it replaces, and the data blocks the
 * two differ in, unless the inode's list counted them (`listed`).  A
 * leaf the old map does not have is not relinked, nor counted: the
 * writer relinks only leaves that were written before. */
static int
relink_group(struct lfs_rf *rf, const struct pending *g, size_t n, const struct lfs_dinode *old,
	     const struct lfs_dinode *di, bool listed)
{
	struct lfs_fs *fs = rf->fs;
	int err = 0;
	for (size_t i = 0; i < n && !err; i++)
		for (uint32_t j = 0; j < g[i].n && !err; j++) {
			struct lfs_pseg_entry e;
			lfs_pseg_entry_decode(&e, g[i].buf, j);
			unsigned k = lfs_node_tree(e.lblk);
			if (e.kind != LFS_BK_INDIR || e.ino != di->ino || e.version != di->version || k == 0 ||
			    k >= LFS_NINDIRECT || lfs_node_level(e.lblk) != k)
				continue;
			uint64_t addr = g[i].start + 1 + j, was = 0;
			if (!listed) {
				err = lfs_rf_leaf(rf, old, e.lblk, &was);
				if (!err && was)
					err = lfs_rf_account_leaf(rf, old, was, addr, e.lblk);
				if (err || !was)
					continue;
			}
			err = lfs_relink_put(fs, di, e.lblk, addr);
		}
	if (err == -EFSCORRUPTED) {
		lfs_log("roll-forward: inode %u: block map unreadable; its relinks counted in part", di->ino);
		err = lfs_rf_lists_taint(rf, di->ino);
	}
	return err;
}

/* Make the record at blk+off, `len` bytes, the inode's current version.
 * `*charged` is what the block's earlier records count in the usage
 * table: the writer closes a block before its records count more than a
 * block (lfs_seg_inode_slot), so a record that would pass that was not
 * written by it, and counting it would let a segment's usage exceed the
 * segment, which the next mount refuses. */
static int
apply_record(struct lfs_rf *rf, const struct pending *g, size_t n, uint64_t addr, uint32_t off,
	     const struct lfs_dinode *di, uint32_t len, uint32_t *charged)
{
	struct lfs_fs *fs = rf->fs;
	/* A record that breaks an invariant is not applied: the inode keeps
	 * its previous version, and only it is affected. */
	const char *why;
	uint32_t charge = lfs_inode_charge(&fs->sb, len);
	if (lfs_dinode_check(di, &fs->sb, &why) ||
	    (charge > fs->bsize - *charged && (why = "the block's records count more than a block"))) {
		lfs_log("roll-forward: inode %u record in block %llu at %u: %s; not applied", di->ino,
			(unsigned long long)addr, off, why);
		/* the writer's next list is against the record skipped */
		return lfs_rf_lists_taint(rf, di->ino);
	}
	/* the version it replaces; a corrupt one was never trusted, so its
	 * blocks were never counted */
	const struct lfs_imap_entry *e = lfs_imap_get(fs, di->ino);
	struct lfs_dinode old;
	bool have_old = false;
	if ((e->flags & LFS_IMAP_INUSE) && e->daddr) {
		int err = lfs_rf_old_record(rf, e->daddr, e->slot, &old);
		if (err && err != -EFSCORRUPTED)
			return err;
		have_old = !err;
	}
	bool relink = di->mode && (di->flags & LFS_DI_RELINK); /* a tombstone relinks nothing */
	if (relink && (!have_old || old.version != di->version || memcmp(old.ind, di->ind, sizeof(di->ind)) != 0)) {
		lfs_log("roll-forward: inode %u record in block %llu at %u: a relink record, but not of the "
			"block map of the inode's record before it; not applied",
			di->ino, (unsigned long long)addr, off);
		return lfs_rf_lists_taint(rf, di->ino);
	}
	*charged += charge;
	int err = 0;
	bool listed = lfs_rf_lists_account(rf, di);
	if (!listed)
		err = account_change(rf, have_old ? &old : NULL, di->mode ? di : NULL);
	/* the relinks the inode's map had are in the new map, or gone */
	if (!err && relink) {
		err = relink_group(rf, g, n, &old, di, listed);
		rf->relinked += !err;
	}
	else if (!err)
		lfs_relink_drop(fs, di->ino);
	if (err)
		return err;
	if (have_old)
		lfs_retain_drop(fs, e->daddr, e->slot, lfs_inode_charge(&fs->sb, lfs_inode_reclen(old.inline_len)),
				LFS_BK_INODE, 0);
	/* the reservations the record makes or gives back (format.h) */
	uint64_t was = have_old ? old.unwritten : 0, now = di->mode ? di->unwritten : 0;
	fs->unwritten = fs->unwritten + now > was ? fs->unwritten + now - was : 0;
	if (di->mode == 0) {
		return lfs_imap_release(fs, di->ino, di->version);
	}
	lfs_retain_use(fs, addr, charge, LFS_BK_INODE);
	return lfs_imap_set(fs, di->ino, addr, (uint16_t)(off / LFS_INODE_ALIGN), di->version,
			     di->nlink == 0 || (di->flags & LFS_DI_STAGED));
}

static int
apply_inode_block(struct lfs_rf *rf, const struct pending *g, size_t n, uint64_t addr, const uint8_t *blk,
		  uint64_t *count)
{
	struct lfs_fs *fs = rf->fs;
	uint32_t charged = 0;
	for (uint32_t off = lfs_inode_block_next(blk, fs->bsize, 0); off < fs->bsize;) {
		struct lfs_dinode di;
		int r = lfs_dinode_decode(&di, blk + off, fs->bsize - off);
		if (r < 0) {
			/* whose record it was is unknown: look for the next one */
			lfs_log("roll-forward: malformed inode record in block %llu at %u; skipped",
				(unsigned long long)addr, off);
			off = lfs_inode_block_next(blk, fs->bsize, off + LFS_INODE_ALIGN);
			continue;
		}
		int err = apply_record(rf, g, n, addr, off, &di, (uint32_t)r, &charged);
		if (err)
			return err;
		(*count)++;
		off = lfs_inode_block_next(blk, fs->bsize, off + (uint32_t)r);
	}
	return 0;
}

static int
apply_group(struct lfs_rf *rf, struct pending *g, size_t n, uint64_t *inodes)
{
	struct lfs_fs *fs = rf->fs;
	int err = lfs_rf_lists_load(rf, g[n - 1].start, g[n - 1].buf);
	if (err)
		return err;
	/* the group's nodes and records are in memory, verified: the new
	 * versions are compared from here, not read again */
	for (size_t i = 0; i < n; i++)
		for (uint32_t j = 0; j < g[i].n; j++) {
			struct lfs_pseg_entry e;
			lfs_pseg_entry_decode(&e, g[i].buf, j);
			uint64_t addr = g[i].start + 1 + j;
			err = lfs_rf_lists_block(rf, &e, addr);
			if (!err && (e.kind == LFS_BK_INDIR || e.kind == LFS_BK_INODE))
				err = lfs_rf_group_add(rf, addr, g[i].buf + (size_t)(j + 1) * fs->bsize);
			if (err) {
				lfs_rf_lists_clear(rf);
				return err;
			}
		}
	for (size_t i = 0; i < n && !err; i++) {
		fs->segs[lfs_addr_seg(fs, g[i].start)].mtime_ns = g[i].timestamp;
		for (uint32_t j = 0; j < g[i].n; j++) {
			struct lfs_pseg_entry e;
			lfs_pseg_entry_decode(&e, g[i].buf, j);
			if (e.kind != LFS_BK_INODE)
				continue;
			err = apply_inode_block(rf, g, n, g[i].start + 1 + j,
						g[i].buf + (size_t)(j + 1) * fs->bsize, inodes);
			if (err)
				break;
		}
	}
	lfs_rf_group_done(rf);
	lfs_rf_lists_clear(rf);
	return err;
}

/* Apply the n psegs of g, whole groups, in order; their blocks are in
 * wbuf. */
static int
apply_window(struct lfs_rf *rf, struct pending *g, size_t n, uint8_t *wbuf, uint64_t *groups,
	     uint64_t *inodes)
{
	uint32_t bs = rf->fs->bsize;
	for (size_t i = 0; i < n; i++)
		g[i].buf = wbuf + g[i].off;
	/* an inode its group lists is not compared: nothing old to ask for */
	for (size_t first = 0, i = 0; i < n; i++) {
		if (!g[i].end)
			continue;
		int err = lfs_rf_lists_load(rf, g[i].start, g[i].buf);
		if (err)
			return err;
		for (size_t p = first; p <= i; p++)
			for (uint32_t j = 0; j < g[p].n; j++) {
				struct lfs_pseg_entry e;
				lfs_pseg_entry_decode(&e, g[p].buf, j);
				if (e.kind != LFS_BK_INDIR || !lfs_rf_listed(rf, e.ino))
					lfs_rf_prefetch(rf, &e, g[p].buf + (size_t)(j + 1) * bs);
			}
		first = i + 1;
	}
	lfs_rf_lists_clear(rf);
	lfs_rf_prefetch_issue(rf);
	size_t first = 0;
	for (size_t i = 0; i < n; i++) {
		if (!g[i].end)
			continue;
		int err = apply_group(rf, g + first, i + 1 - first, inodes);
		if (err)
			return err;
		(*groups)++;
		first = i + 1;
	}
	return 0;
}

/* The log ran through segment seg (every value is 1: the map is a set). */
static int
visit(struct u64map *visited, uint64_t seg)
{
	return u64map_get(visited, seg) ? 0 : u64map_put(visited, seg, (void *)1);
}

/* The psegs read since the last applied window.  One buffer serves every
 * window, so that its pages are faulted in once: it grows only for a
 * group larger than a window. */
struct window {
	struct pending *g;
	size_t n, cap;
	uint8_t *buf;
	size_t bytes, buf_cap;
};

/* Keep the pseg the walk has just read until its window is applied: the
 * walk reuses its buffer. */
static int
window_keep(struct window *win, const struct lfs_logwalk *w, uint32_t bsize)
{
	if (win->n == win->cap) {
		size_t cap = win->cap ? 2 * win->cap : 16;
		struct pending *ng = lfs_realloc(win->g, cap * sizeof(*ng));
		if (!ng)
			return -ENOMEM;
		win->g = ng;
		win->cap = cap;
	}
	size_t bytes = (size_t)(1 + w->h.nblocks) * bsize;
	if (win->bytes + bytes > win->buf_cap) {
		size_t cap = win->buf_cap ? 2 * win->buf_cap : RF_WINDOW_FIRST;
		while (cap < win->bytes + bytes)
			cap *= 2;
		uint8_t *nb = win->buf_cap ? lfs_realloc(win->buf, cap) : lfs_malloc(cap);
		if (!nb)
			return -ENOMEM;
		win->buf = nb;
		win->buf_cap = cap;
	}
	struct pending *p = &win->g[win->n++];
	p->off = win->bytes;
	memcpy(win->buf + p->off, w->buf, bytes);
	p->start = w->addr;
	p->n = w->h.nblocks;
	p->timestamp = w->h.timestamp_ns;
	p->end = w->h.flags & LFS_PSEG_END;
	win->bytes += bytes;
	return 0;
}

struct rf_counts {
	uint64_t groups, psegs, inodes;
};

/* Read the log on from where the walk starts and apply its groups, a
 * window at a time.  *a_seq: where the log continues after the last
 * applied group. */
static int
roll_forward(struct lfs_rf *rf, struct lfs_logwalk *w, struct u64map *visited, struct rf_counts *n,
	     uint64_t *a_seq)
{
	struct lfs_fs *fs = rf->fs;
	struct window win = { 0 };
	/* and after the last group closed in the window */
	uint64_t closed_seq = *a_seq;
	size_t closed = 0, window_groups = 0, window_max = 1;
	int err;
	for (;;) {
		err = lfs_logwalk_next(w);
		if (err < 0)
			lfs_log("roll-forward: reading the pseg at block %llu (segment %llu): %s",
				(unsigned long long)(fs->sb.seg0 + w->seg * fs->sb.seg_blocks + w->off),
				(unsigned long long)w->seg, strerror(-err));
		if (err <= 0)
			break;
		if ((err = window_keep(&win, w, fs->bsize)))
			break;
		n->psegs++;
		if ((err = visit(visited, w->seg)) || (err = visit(visited, w->h.next_seg)))
			break;
		if (!(w->h.flags & LFS_PSEG_END))
			continue;
		closed = win.n;
		closed_seq = w->seq;
		if (++window_groups < window_max && win.bytes < RF_WINDOW_BYTES)
			continue;
		/* the first windows are short: what leads to the old blocks
		 * (records, upper nodes) is in memory only once a group that
		 * read it has been applied */
		if (window_max < RF_WINDOW_GROUPS)
			window_max *= 2;
		err = apply_window(rf, win.g, win.n, win.buf, &n->groups, &n->inodes);
		win.n = closed = window_groups = win.bytes = 0;
		if (err)
			break;
		*a_seq = closed_seq;
	}
	/* the end of the log: the groups it closed are applied, a group it
	 * left open is not */
	if (!err && closed && !(err = apply_window(rf, win.g, closed, win.buf, &n->groups, &n->inodes)))
		*a_seq = closed_seq;
	free(win.buf);
	free(win.g);
	return err;
}

/* Walk the log from the checkpoint's head with the one log reader, which
 * applies every rule of where the log ends; *why: where it ended. */
static int
walk_log(struct lfs_rf *rf, const struct lfs_ckpt_hdr *hdr, struct u64map *visited, struct rf_counts *n,
	 uint64_t *a_seq, enum lfs_logwalk_end *why)
{
	struct lfs_fs *fs = rf->fs;
	struct lfs_logwalk w;
	int err = lfs_logwalk_init(&w, &fs->dev, &fs->sb, fs->seed, LFS_LOGWALK_BLOCKS);
	if (err)
		return err;
	if (!(err = lfs_logwalk_follow(&w, hdr->head_seg, hdr->head_off, hdr->next_seg, hdr->next_pseg_seq,
				       fs->ckpt_seq)) &&
	    !(err = visit(visited, hdr->head_seg)) && !(err = visit(visited, hdr->next_seg)))
		err = roll_forward(rf, &w, visited, n, a_seq);
	*why = w.end;
	lfs_logwalk_free(&w);
	return err;
}

/* Segments the log ran through hold what the old checkpoint needs until
 * the next one commits: none of them may be reused before. */
static int
hold_visited(struct lfs_fs *fs, const struct u64map *visited)
{
	uint64_t *segs = lfs_malloc(visited->count * sizeof(uint64_t) + 1);
	if (!segs)
		return -ENOMEM;
	u64map_sorted_keys(visited, segs);
	for (size_t i = 0; i < visited->count; i++) {
		lfs_seg_set_state(fs, segs[i], LFS_SEG_DIRTY);
		lfs_seg_fit_usage(fs, segs[i]);
	}
	free(segs);
	return 0;
}

/* One sentence for the administrator; the counts for a debug log. */
static void
log_recovery(const struct lfs_fs *fs, const struct lfs_ckpt_hdr *hdr, const struct rf_counts *n,
	     uint64_t t0, enum lfs_logwalk_end why)
{
	if (!n->psegs && (hdr->flags & LFS_CKPT_CLEAN))
		return;
	double ms = (double)(lfs_now_ns() - t0) / 1e6;
	lfs_log_info("recovery: rolled forward %llu groups written after the last checkpoint in %.1f ms%s",
		     (unsigned long long)n->groups, ms,
		     hdr->flags & LFS_CKPT_CLEAN ? "" : " (the last mount did not end cleanly)");
	lfs_log_debug("recovery: rolled forward %llu groups (%llu psegs, %llu inode records, %llu of them "
		      "counted from the addresses they replaced, %llu relink records; %llu older blocks read, "
		      "%llu of them asked for ahead, %llu summaries read ahead to check them) in %.1f ms; "
		      "log ends: %s",
		      (unsigned long long)n->groups, (unsigned long long)n->psegs, (unsigned long long)n->inodes,
		      (unsigned long long)fs->rf_listed, (unsigned long long)fs->rf_relinked,
		      (unsigned long long)fs->rf_old_reads, (unsigned long long)fs->rf_old_reads_ahead,
		      (unsigned long long)fs->rf_summaries_ahead, ms, lfs_logwalk_end_name(why));
}

int
lfs_recover(struct lfs_fs *fs, const struct lfs_ckpt_hdr *hdr, uint64_t *found)
{
	uint64_t t0 = lfs_now_ns();
	/* the segments the log ran through: a map, not a flag per segment,
	 * so that a large filesystem's mount touches no memory per segment */
	struct u64map visited;
	u64map_init(&visited);
	struct lfs_rf rf;
	int err = lfs_rf_init(&rf, fs);
	if (err) {
		u64map_free(&visited);
		return err;
	}
	rf.no_lists = fs->opts.rf_compare_maps;
	struct rf_counts n = { 0 };
	uint64_t a_seq = hdr->next_pseg_seq;
	enum lfs_logwalk_end why = LFS_LOGWALK_MORE;
	err = walk_log(&rf, hdr, &visited, &n, &a_seq, &why);
	fs->rf_relinked = rf.relinked;
	fs->rf_old_reads = rf.node_reads;
	fs->rf_old_reads_ahead = rf.asked_reads;
	fs->rf_summaries_ahead = rf.summaries_ahead;
	fs->rf_listed = rf.listed;
	lfs_rf_free(&rf);
	if (err)
		lfs_log("roll-forward failed after %llu groups: %s; mount refused, the image is unchanged",
			(unsigned long long)n.groups, strerror(-err));
	else
		err = hold_visited(fs, &visited);
	u64map_free(&visited);
	if (err)
		return err;
	fs->pseg_seq = a_seq;
	*found = n.psegs;
	log_recovery(fs, hdr, &n, t0, why);
	return 0;
}

/* The id of the node at `level` above node id (of the same tree). */
static uint64_t
ancestor(const struct lfs_fs *fs, uint64_t id, unsigned level)
{
	uint64_t idx = lfs_node_idx(id);
	for (unsigned l = lfs_node_level(id); l > level; l--)
		idx /= fs->nptr;
	return lfs_node_id(lfs_node_tree(id), level, idx);
}

/* Load the nodes above one inode's relinked leaves and mark their
 * parents dirty, for the checkpoint to write.  A level at a time, with
 * the level's blocks and the summaries that check them asked for
 * together (lfs_verify_prefetch): the mount waits about once per level
 * rather than once per node and per summary of its segment's chain.
 * (The roots' segments were asked for during roll-forward: relink.c.) */
static int
dirty_above(struct lfs_fs *fs, struct lfs_inode *ip, const uint64_t *leaves, size_t n)
{
	uint64_t *want = lfs_malloc((n + 1) * sizeof(uint64_t));
	uint64_t *addrs = lfs_malloc((n + 1) * sizeof(uint64_t));
	int err = want && addrs ? 0 : -ENOMEM;
	for (unsigned level = 0; level + 1 < LFS_NINDIRECT && !err; level++) {
		size_t nw = 0, na = 0;
		for (size_t i = 0; i < n; i++)
			if (lfs_node_tree(leaves[i]) > level) {
				uint64_t a = ancestor(fs, leaves[i], level);
				if (!nw || want[nw - 1] != a) /* sorted: the same ones are together */
					want[nw++] = a;
			}
		for (size_t i = 0; i < nw; i++) {
			uint64_t a = lfs_bmap_node_addr(fs, ip, want[i]);
			if (a && lfs_addr_valid(fs, a)) {
				lfs_bdev_prefetch(&fs->dev, a * fs->bsize, fs->bsize);
				addrs[na++] = a;
			}
		}
		qsort(addrs, na, sizeof(*addrs), u64_cmp);
		(void)lfs_verify_prefetch(fs, addrs, na);
		for (size_t i = 0; i < nw && !err; i++) {
			struct lfs_node *node;
			/* loaded with the relinks in (bmap.c); one that does not
			 * exist has no pointer to replace */
			err = lfs_bmap_get_node(fs, ip, want[i], false, &node);
			if (!err && node && !node->dirty && level + 1 == lfs_node_tree(want[i])) {
				node->dirty = true;
				lfs_inode_dirty(fs, ip);
			}
		}
	}
	free(want);
	free(addrs);
	return err;
}

int
lfs_recover_relinks(struct lfs_fs *fs)
{
	uint64_t *inos = NULL, *leaves = NULL;
	size_t n = 0, nl = 0;
	uint64_t nodes = fs->cache_nodes;
	if (!fs->relink.count)
		return 0;
	uint64_t t0 = lfs_now_ns();
	int err = lfs_relink_inos(fs, &inos, &n);
	for (size_t i = 0; i < n && !err; i++) {
		struct lfs_inode *ip;
		err = lfs_iget(fs, (uint32_t)inos[i], &ip);
		if (err == -EFSCORRUPTED || err == -ENOENT) {
			/* the inode's own damage, logged where it was read */
			err = 0;
			continue;
		}
		const struct lfs_relink *r = err ? NULL : lfs_relink_of(fs, &ip->di);
		if (!r)
			continue;
		free(leaves);
		leaves = NULL;
		err = lfs_relink_leaves(r, &leaves, &nl);
		if (!err)
			err = dirty_above(fs, ip, leaves, nl);
	}
	free(inos);
	free(leaves);
	if (!err)
		lfs_log_debug("recovery: relinked leaves of %zu files: the %llu block-map nodes above them read in %.1f ms",
			     n, (unsigned long long)(fs->cache_nodes - nodes), (double)(lfs_now_ns() - t0) / 1e6);
	return err;
}
