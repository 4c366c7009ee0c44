/*
 * clean.c — layer 5: the mechanism of cleaning, owned by the filesystem daemon.
 *
 * The policy (which segments, when) lives in lfs_cleanerd; here is what
 * any policy needs: whether a block in the log is still live, and moving
 * the live blocks of a segment to the head of the log.  A move re-dirties
 * the block's owner (page, node, record, xattr, table block) so the next
 * flush writes it anew; the segment then empties and turns clean at the
 * following checkpoint.  Every decision is taken against current state,
 * so a stale request from the cleaner can never move a dead block.
 *
 * lfs_clean_reclaim() is the daemon's own last resort when a write would
 * otherwise fail with ENOSPC and no cleaner has freed space in time.
 */
#include "ctl_proto.h"
#include "lfs_int.h"
#include "logwalk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool
record_live(struct lfs_fs *fs, uint64_t addr, const uint8_t *blk, uint32_t off, uint32_t *ino)
{
	struct lfs_dinode di;
	if (lfs_dinode_decode(&di, blk + off, fs->bsize - off) < 0 || di.mode == 0 ||
	    di.ino >= fs->sb.max_inodes)
		return false;
	const struct lfs_imap_entry *e = lfs_imap_get(fs, di.ino);
	*ino = di.ino;
	return (e->flags & LFS_IMAP_INUSE) && e->daddr == addr && e->slot == off / LFS_INODE_ALIGN;
}

/* The snapshot table a TABLE block belongs to, by its summary's ino. */
static struct lfs_ptable *
table_of(struct lfs_fs *fs, uint32_t id)
{
	if (!fs->snapshots)
		return NULL;
	return id == LFS_TABLE_HELD ? &fs->held.tab : id == LFS_TABLE_HIST ? &fs->hist.tab : NULL;
}

/* Whether a retained checkpoint reads the block at addr (the address
 * it stands for, or 0): the live tree may use it as well (records in an
 * inode block), or not. */
static uint64_t
held_here(const struct lfs_fs *fs, uint64_t addr)
{
	return fs->snapshots && fs->held.count ? lfs_held_at(&fs->held, addr) : 0;
}

/* Whether the live tree uses the block at addr. */
static bool
tree_live(struct lfs_fs *fs, const struct lfs_pseg_entry *e, uint64_t addr, const uint8_t *blk)
{
	struct lfs_inode *ip;
	switch (e->kind) {
	case LFS_BK_TABLE: {
		struct lfs_ptable *t = table_of(fs, e->ino);
		return t && lfs_ptable_node_live(t, e->lblk, addr);
	}
	case LFS_BK_HELD:
		return false; /* only retained checkpoints read it */
	case LFS_BK_IMAP:
		return e->lblk < fs->n_imap_blocks && fs->imap_addr[e->lblk] == addr;
	case LFS_BK_SUT:
		return e->lblk < fs->n_sut_blocks && fs->sut_addr[e->lblk] == addr;
	case LFS_BK_INODE:
		for (uint32_t off = lfs_inode_block_next(blk, fs->bsize, 0); off < fs->bsize;
		     off = lfs_inode_block_next(blk, fs->bsize, off + LFS_INODE_ALIGN)) {
			uint32_t ino;
			if (record_live(fs, addr, blk, off, &ino))
				return true;
		}
		return false;
	default:
		break;
	}
	if (!lfs_imap_valid_ino(fs, e->ino) || lfs_imap_get(fs, e->ino)->version != e->version)
		return false;
	if (lfs_iget(fs, e->ino, &ip))
		return false;
	uint64_t cur = 0;
	switch (e->kind) {
	case LFS_BK_DATA:
		if (lfs_bmap_get(fs, ip, e->lblk, &cur))
			return false;
		return cur == addr;
	case LFS_BK_INDIR: {
		struct lfs_node *n;
		if (!(e->lblk & LFS_NODE_FLAG) || lfs_node_tree(e->lblk) >= LFS_NINDIRECT ||
		    lfs_node_level(e->lblk) > lfs_node_tree(e->lblk) ||
		    lfs_bmap_get_node(fs, ip, e->lblk, false, &n) || !n)
			return false;
		return n->addr == addr;
	}
	case LFS_BK_XATTR:
		return lfs_xattr_block_live(fs, ip, e->lblk, addr);
	}
	return false;
}

bool
lfs_clean_tree_live(struct lfs_fs *fs, const struct lfs_pseg_entry *e, uint64_t addr, const uint8_t *blk)
{
	return tree_live(fs, e, addr, blk);
}

bool
lfs_clean_block_live(struct lfs_fs *fs, const struct lfs_pseg_entry *e, uint64_t addr, const uint8_t *blk)
{
	if (held_here(fs, addr))
		return true;
	return tree_live(fs, e, addr, blk);
}

/* A block retained checkpoints read is copied whole, as HELD (its
 * summary naming the address it stands for), and its entries follow the
 * copy (held.c): what they read does not change. */
static int
copy_held(struct lfs_fs *fs, uint64_t addr, uint64_t orig, const uint8_t *blk)
{
	uint64_t new_addr;
	int err = lfs_seg_append(fs, LFS_BK_HELD, 0, 0, orig, blk, &new_addr);
	if (!err)
		err = lfs_held_moved(fs, &fs->held, addr, new_addr);
	return err;
}

/* Re-dirty the owner of a live block so the next flush rewrites it; a
 * held one is copied now. */
int
lfs_clean_move_block(struct lfs_fs *fs, const struct lfs_pseg_entry *e, uint64_t addr, const uint8_t *blk)
{
	struct lfs_inode *ip;
	int err;
	uint64_t orig = held_here(fs, addr);
	if (orig && (err = copy_held(fs, addr, orig, blk)))
		return err;
	if (!tree_live(fs, e, addr, blk))
		return 0;
	switch (e->kind) {
	case LFS_BK_TABLE:
		lfs_ptable_mark_node(table_of(fs, e->ino), e->lblk);
		return 0;
	case LFS_BK_IMAP:
		lfs_imap_mark_block(fs, (uint32_t)e->lblk);
		return 0;
	case LFS_BK_SUT:
		lfs_seg_sut_mark(fs, (uint32_t)e->lblk);
		return 0;
	case LFS_BK_INODE:
		for (uint32_t off = lfs_inode_block_next(blk, fs->bsize, 0); off < fs->bsize;
		     off = lfs_inode_block_next(blk, fs->bsize, off + LFS_INODE_ALIGN)) {
			uint32_t ino;
			if (record_live(fs, addr, blk, off, &ino)) {
				if ((err = lfs_iget(fs, ino, &ip)))
					return err;
				lfs_inode_dirty(fs, ip);
			}
		}
		return 0;
	}
	if ((err = lfs_iget(fs, e->ino, &ip)))
		return err;
	switch (e->kind) {
	case LFS_BK_DATA: {
		/* a cached page is at least as new as the block; otherwise the
		 * block just read is the current contents: no second read */
		struct lfs_page *pg = u64map_get(&ip->pages, e->lblk);
		if (!pg && !(err = lfs_file_get_page(fs, ip, e->lblk, true, true, &pg)))
			memcpy(pg->data, blk, fs->bsize);
		/* a clean page holds the block's bytes: its write moves them
		 * (held.c follows them); a dirty one is its owner's change */
		bool same = !err && !pg->dirty;
		if (!err)
			err = lfs_file_dirty_page(fs, ip, e->lblk, pg);
		if (!err)
			pg->moved = same;
		return err;
	}
	case LFS_BK_INDIR: {
		struct lfs_node *n;
		err = lfs_bmap_get_node(fs, ip, e->lblk, false, &n);
		if (!err && n) {
			n->dirty = true;
			lfs_inode_dirty(fs, ip);
		}
		return err;
	}
	case LFS_BK_XATTR:
		return lfs_xattr_move_block(fs, ip, e->lblk, blk);
	}
	return 0;
}

/* Calls fn for each block of each verifying pseg in segment seg, as
 * the one log reader (logwalk.h) finds them: stale psegs end the walk. */
int
lfs_clean_scan(struct lfs_fs *fs, uint64_t seg,
	       int (*fn)(struct lfs_fs *, const struct lfs_pseg_entry *, uint64_t, const uint8_t *, void *),
	       void *ctx)
{
	struct lfs_logwalk w;
	int err = lfs_logwalk_init(&w, &fs->dev, &fs->sb, fs->seed, LFS_LOGWALK_BLOCKS);
	if (err)
		return err;
	lfs_logwalk_segment(&w, seg);
	while (!err && (err = lfs_logwalk_next(&w)) > 0) {
		err = 0;
		for (uint32_t j = 0; j < w.h.nblocks && !err; j++) {
			if (!lfs_logwalk_block_ok(&w, j))
				continue; /* never trust a block that fails its crc */
			struct lfs_pseg_entry e;
			lfs_logwalk_entry(&w, j, &e);
			err = fn(fs, &e, w.addr + 1 + j, lfs_logwalk_block(&w, j), ctx);
		}
	}
	lfs_logwalk_free(&w);
	return err;
}

/*
 * What moving live blocks writes (lfs(5), "SPACE AND THE RESERVE", the
 * drag): each block once; each block-map node on the path of a moved
 * data block, and each ancestor of a moved node, once per batch (the
 * moves are sorted by file and block, so a node is dirtied by one
 * stretch of them and written once); each file's record, packed as
 * records of a file with blocks are (LFS_INODE_HDR_SIZE bytes each);
 * a summary per half partial segment; and the checkpoint that frees
 * the victims: the inode-map block of each moved record, the usage
 * table blocks of the victims and of the segments written, and its
 * summary.  Under random overwrites about one leaf per block moved, so
 * a segment more than half live may cost more clean space than it
 * frees; that is allowed only while half the reserve stays clean
 * (lfs_clean_affordable).
 */
void
lfs_clean_cost_init(struct lfs_clean_cost *c)
{
	c->blocks = c->unread = 0;
	u64map_init(&c->nodes);
	u64map_init(&c->inos);
	u64map_init(&c->tables);
}

void
lfs_clean_cost_free(struct lfs_clean_cost *c)
{
	u64map_free(&c->nodes);
	u64map_free(&c->inos);
	u64map_free(&c->tables);
}

/* keys of c->tables: inode-map blocks, and usage-table blocks (flagged) */
#define COST_SUT (1ull << 63)

static uint64_t
node_key(uint32_t ino, uint64_t id)
{
	return ((uint64_t)ino * 0x9e3779b97f4a7c15ull) ^ id;
}

/* A file's record rewritten: its inode-map block changes too. */
static int
cost_record(struct lfs_clean_cost *c, const struct lfs_fs *fs, uint32_t ino)
{
	int err = u64map_put(&c->inos, ino, (void *)1);
	return err ? err : u64map_put(&c->tables, ino / lfs_imap_per_block(fs->bsize), (void *)1);
}

int
lfs_clean_cost_victim(struct lfs_clean_cost *c, const struct lfs_fs *fs, uint64_t seg)
{
	return u64map_put(&c->tables, COST_SUT | (seg / lfs_sut_per_block(fs->bsize)), (void *)1);
}

int
lfs_clean_cost_add(struct lfs_clean_cost *c, const struct lfs_fs *fs, const struct lfs_pseg_entry *e,
		   const uint8_t *blk)
{
	if (e->kind == LFS_BK_INODE) {
		/* its live records, rewritten, change their inode-map blocks;
		 * not read: as many as the block may hold, each its own */
		c->blocks++;
		int err = 0;
		for (uint32_t off = blk ? lfs_inode_block_next(blk, fs->bsize, 0) : fs->bsize; off < fs->bsize && !err;
		     off = lfs_inode_block_next(blk, fs->bsize, off + LFS_INODE_ALIGN)) {
			struct lfs_dinode di;
			if (lfs_dinode_decode(&di, blk + off, fs->bsize - off) == 0 && di.ino < fs->sb.max_inodes)
				err = u64map_put(&c->tables, di.ino / lfs_imap_per_block(fs->bsize), (void *)1);
		}
		c->unread += !blk;
		return err;
	}
	if (e->kind != LFS_BK_DATA && e->kind != LFS_BK_INDIR && e->kind != LFS_BK_XATTR) {
		c->blocks++;
		return 0;
	}
	int err = cost_record(c, fs, e->ino);
	uint64_t ids[LFS_NINDIRECT + 1];
	unsigned n = 0;
	if (e->kind == LFS_BK_DATA) {
		c->blocks++;
		n = lfs_bmap_path(fs, e->lblk, ids);
	} else if (e->kind == LFS_BK_INDIR && (e->lblk & LFS_NODE_FLAG) && lfs_node_tree(e->lblk) < LFS_NINDIRECT &&
		   lfs_node_level(e->lblk) <= lfs_node_tree(e->lblk)) {
		/* the node itself (once, dragged by a data block or not) and
		 * the nodes above it, which name its new address */
		unsigned k = lfs_node_tree(e->lblk);
		uint64_t idx = lfs_node_idx(e->lblk);
		for (unsigned level = lfs_node_level(e->lblk) + 1; level-- > 0; idx /= fs->nptr)
			ids[n++] = lfs_node_id(k, level, idx);
	} else {
		c->blocks++;
	}
	for (unsigned i = 0; i < n && !err; i++)
		err = u64map_put(&c->nodes, node_key(e->ino, ids[i]), (void *)1);
	return err;
}

uint64_t
lfs_clean_cost_blocks(const struct lfs_clean_cost *c, const struct lfs_fs *fs)
{
	uint64_t per = fs->bsize / LFS_INODE_HDR_SIZE;
	uint64_t blocks = c->blocks + c->nodes.count + (c->inos.count + per - 1) / per;
	uint64_t written = blocks / fs->sb.seg_blocks + 2, sut = fs->n_sut_blocks;
	/* the checkpoint: its tables, with the usage-table blocks of the
	 * segments the moves are written to, and its summary */
	uint64_t imap = c->unread * per, tables = c->tables.count + (written < sut ? written : sut) + 1;
	tables += imap < fs->n_imap_blocks ? imap : fs->n_imap_blocks;
	blocks += tables;
	return blocks + blocks / (fs->max_pseg / 2) + 16;
}

/* The invariant's two tests (lfs(5), "SPACE AND THE RESERVE"): the cost
 * within the budget B (the clean space above the checkpoint's floor and
 * the dirty state), and a net gain, the cost below what the victims
 * free. */
bool
lfs_clean_affordable(const struct lfs_fs *fs, uint64_t cost, uint64_t nsegs)
{
	if (cost > lfs_space_for_cleaning(fs))
		return false;
	if (cost < nsegs * fs->sb.seg_blocks)
		return true;
	/* at a loss: only above the deletes' floor, so they keep their room */
	return lfs_seg_clean_blocks(fs) >= cost + lfs_space_floor(fs, LFS_SPACE_CLEAN_AT_LOSS);
}

int
lfs_clean_flush(struct lfs_fs *fs, uint64_t age_ns, struct u64map *victims)
{
	uint64_t before = fs->dev.bytes_written;
	fs->move_age_ns = age_ns;
	fs->cleaning = true;
	fs->clean_victims = victims;
	int err = lfs_flush(fs);
	fs->cleaning = false;
	fs->clean_victims = NULL;
	fs->move_age_ns = 0;
	fs->stats.cleaning_bytes_written += fs->dev.bytes_written - before;
	return err;
}

/* The live blocks a batch found while counting, kept for its moves, so
 * that each victim is read once: read again, a victim would double what
 * cleaning reads (the largest part of its cost).  A block's bytes stay
 * what they were while its segment stays dirty and is not reused (the
 * log never rewrites an address in place), which `reuses` tells. */
struct kept_block {
	struct lfs_pseg_entry e;
	uint64_t addr;
};

struct batch {
	struct lfs_clean_cost cost;
	struct kept_block *kept;
	uint8_t *data;              /* kept[i]'s bytes at i * block size */
	size_t n, cap;
};

/* Keep a copy of the live block at addr. */
static int
keep(struct lfs_fs *fs, struct batch *b, const struct lfs_pseg_entry *e, uint64_t addr, const uint8_t *blk)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 64;
		struct kept_block *k = lfs_realloc(b->kept, cap * sizeof(*k));
		if (!k)
			return -ENOMEM;
		b->kept = k;
		uint8_t *d = lfs_realloc(b->data, cap * fs->bsize);
		if (!d)
			return -ENOMEM;
		b->data = d;
		b->cap = cap;
	}
	b->kept[b->n] = (struct kept_block){ .e = *e, .addr = addr };
	memcpy(b->data + b->n * fs->bsize, blk, fs->bsize);
	b->n++;
	return lfs_clean_cost_add(&b->cost, fs, e, blk);
}

/* Whether block j of the pseg w yields must be read: an inode block to
 * learn which of its records are live, any other only if it is live,
 * which its summary entry and the current maps tell. */
static bool
worth_reading(struct lfs_fs *fs, const struct lfs_logwalk *w, uint32_t j)
{
	struct lfs_pseg_entry e;
	lfs_logwalk_entry(w, j, &e);
	return e.kind == LFS_BK_INODE || lfs_clean_block_live(fs, &e, w->addr + 1 + j, NULL);
}

/*
 * Count and keep the live blocks of victim seg.  Only the summaries and
 * the blocks found live are read, runs of them in one read each, as
 * F2FS's cleaner reads only valid blocks: a victim a fifth live costs a
 * fifth of a segment to read, not a whole one (Sprite LFS read whole
 * segments, and its write cost formula counts them).  A block that fails
 * its checksum is never moved.
 */
static int
keep_segment(struct lfs_fs *fs, uint64_t seg, struct batch *b)
{
	struct lfs_logwalk w;
	int err = lfs_logwalk_init(&w, &fs->dev, &fs->sb, fs->seed, 0);
	if (err)
		return err;
	uint8_t *run = lfs_malloc((size_t)fs->max_pseg * fs->bsize);
	if (!run) {
		lfs_logwalk_free(&w);
		return -ENOMEM;
	}
	lfs_logwalk_segment(&w, seg);
	while (!err && (err = lfs_logwalk_next(&w)) > 0) {
		err = 0;
		for (uint32_t j = 0; j < w.h.nblocks && !err;) {
			if (!worth_reading(fs, &w, j)) {
				j++;
				continue;
			}
			uint32_t end = j + 1;
			while (end < w.h.nblocks && worth_reading(fs, &w, end))
				end++;
			err = lfs_bdev_read(&fs->dev, w.addr + 1 + j, end - j, run);
			for (uint32_t i = j; i < end && !err; i++) {
				struct lfs_pseg_entry e;
				lfs_logwalk_entry(&w, i, &e);
				const uint8_t *blk = run + (size_t)(i - j) * fs->bsize;
				uint64_t addr = w.addr + 1 + i;
				if (lfs_crc(fs->seed, blk, fs->bsize) != e.crc)
					continue;
				if (e.kind == LFS_BK_INODE && !lfs_clean_block_live(fs, &e, addr, blk))
					continue;
				err = keep(fs, b, &e, addr, blk);
			}
			j = end;
		}
	}
	free(run);
	lfs_logwalk_free(&w);
	return err;
}

static void
batch_free(struct batch *b)
{
	lfs_clean_cost_free(&b->cost);
	free(b->kept);
	free(b->data);
}

/* The order of a round's moves: a file's blocks together, by logical
 * block (its block-map nodes, whose ids carry LFS_NODE_FLAG, after its
 * data), files by number; then the blocks no file owns (inode blocks,
 * tables, held copies).  So a file's leaves, nodes and record are
 * dirtied by one stretch of moves, and a slice flushed between two files
 * never writes them twice in a round.  An inode block comes last: the
 * records of files whose blocks moved were written anew by then, and
 * only the others move with it. */
struct move_key {
	uint64_t ino, lblk;         /* ino: UINT64_MAX for no file's block */
	size_t at;                  /* in the batch's kept blocks */
};

static bool
file_owned(uint8_t kind)
{
	return kind == LFS_BK_DATA || kind == LFS_BK_INDIR || kind == LFS_BK_XATTR;
}

static int
by_file_block(const void *a, const void *b)
{
	const struct move_key *x = a, *y = b;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	if (x->lblk != y->lblk)
		return x->lblk < y->lblk ? -1 : 1;
	return (x->at > y->at) - (x->at < y->at);
}

/* The kept blocks of the victims [0, k) still dirty and not reused
 * since they were read, in the order of their moves; *n_out of them. */
static int
order_moves(struct lfs_fs *fs, const uint64_t *segs, size_t k, const struct batch *b, const size_t *first,
	    const uint32_t *reuses, struct move_key **out, size_t *n_out)
{
	struct move_key *keys = lfs_malloc((first[k] + 1) * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < k; i++) {
		const struct lfs_seginfo *si = &fs->segs[segs[i]];
		if (si->state != LFS_SEG_DIRTY || si->reuses != reuses[i])
			continue;
		for (size_t j = first[i]; j < first[i + 1]; j++) {
			const struct lfs_pseg_entry *e = &b->kept[j].e;
			bool owned = file_owned(e->kind);
			keys[n++] = (struct move_key){ .ino = owned ? e->ino : UINT64_MAX,
						       .lblk = owned ? e->lblk : e->kind, .at = j };
		}
	}
	qsort(keys, n, sizeof(*keys), by_file_block);
	*out = keys;
	*n_out = n;
	return 0;
}

/* Move the kept blocks still live in the order of keys[0..n), flushing
 * a slice between two files once the moves buffered reach the dirty
 * limit (memory stays bounded, and no file's nodes or record are split
 * between slices).  -ENOSPC: the safety net stopped the moves: it
 * writes what is buffered before it stops, since admission's estimate
 * of the dirty state (a leaf per page, a record as a whole block) is
 * above what the batch's count says the moves take, and written, the
 * estimate becomes what they took (stopped by the estimate, batches
 * the count admitted were cut short at a loss: check_capacity). */
static int
move_ordered(struct lfs_fs *fs, const struct batch *b, const struct move_key *keys, size_t n, uint64_t age,
	     struct u64map *victims, uint64_t *moved)
{
	for (size_t i = 0; i < n; i++) {
		if (i && keys[i].ino != keys[i - 1].ino && fs->dirty_bytes >= fs->opts.dirty_limit) {
			int err = lfs_clean_flush(fs, age, victims);
			if (err)
				return err;
			fs->stats.clean_slices++;
		}
		const struct kept_block *k = &b->kept[keys[i].at];
		const uint8_t *blk = b->data + keys[i].at * fs->bsize;
		if (!lfs_clean_block_live(fs, &k->e, k->addr, blk))
			continue;
		/* a safety net: the batch's cost was checked to fit; within
		 * a file, what is buffered is written first */
		int err = 0;
		if (lfs_space_for_cleaning(fs) < 4 && fs->dirty_bytes)
			err = lfs_clean_flush(fs, age, victims);
		if (!err && lfs_space_for_cleaning(fs) < 4)
			err = -ENOSPC;
		if (!err)
			err = lfs_clean_move_block(fs, &k->e, k->addr, blk);
		if (err)
			return err;
		(*moved)++;
	}
	return 0;
}

/*
 * The batch: the longest prefix of victims that gains and whose cost
 * the space allows, else (none gains) the victims before the first the
 * space does not allow.  Counting goes on past a prefix at a loss while
 * the space could hold more: a victim's blocks drag their files' leaves
 * and records along, which the next victims' blocks of the same files
 * share, so a batch at a loss may gain once it is longer (many small
 * files, nearly full: cut at the first prefix at a loss, every batch
 * lost and the refused writes failed).  Victim k's blocks, kept in b,
 * are first[k] .. first[k + 1]; reuses[k], its reuse count when read.
 * *k_out: the victims of the batch, at least one, or -ENOSPC.
 */
static int
choose_batch(struct lfs_fs *fs, const uint64_t *segs, size_t n, bool may_yield, struct batch *b,
	     size_t *first, uint32_t *reuses, size_t *k_out)
{
	size_t k = 0, gains = 0, run = 0;
	bool in_run = true;
	int err = 0;
	for (; k < n; k++) {
		/* Counting only reads: waiting requests go first between two
		 * victims (a victim freed meanwhile ends the batch there).
		 * The moves are not split so: what they re-dirty is written
		 * by cleaning's own flushes, each file's once (move_ordered). */
		if (k && may_yield) {
			lfs_cache_trim(fs);
			lfs_lock_yield(fs);
			/* made read-only meanwhile (its final checkpoint may be
			 * written): nothing more may be moved */
			if (fs->fatal || fs->dev.readonly)
				return fs->fatal ? fs->fatal : -EROFS;
			if (fs->segs[segs[k]].state != LFS_SEG_DIRTY)
				break;
		}
		if (segs[k] >= fs->sb.nsegs || fs->segs[segs[k]].state != LFS_SEG_DIRTY) {
			err = -EINVAL;
			break;
		}
		reuses[k] = fs->segs[segs[k]].reuses;
		if ((err = lfs_clean_cost_victim(&b->cost, fs, segs[k])) || (err = keep_segment(fs, segs[k], b)))
			break;
		first[k + 1] = b->n;
		uint64_t cost = lfs_clean_cost_blocks(&b->cost, fs);
		if (lfs_clean_affordable(fs, cost, k + 1)) {
			if (in_run)
				run = k + 1;
			if (cost < (k + 1) * fs->sb.seg_blocks)
				gains = k + 1;
		} else {
			in_run = false;
			if (cost > lfs_space_for_cleaning(fs))
				break; /* no longer prefix fits either */
		}
	}
	/* the victims before one that failed are cleaned; it is not (its
	 * error comes back when it leads a batch) */
	*k_out = gains ? gains : run;
	return *k_out ? 0 : err ? err : -ENOSPC;
}

/* Move the blocks of the batch's k victims, those still dirty and not
 * reused since they were read, sorted by file and block (order_moves),
 * in slices ended by flushes; *taken says how many victims were
 * cleaned (none if the safety net stopped the moves). */
static int
move_batch(struct lfs_fs *fs, const uint64_t *segs, size_t k, const struct batch *b, const size_t *first,
	   const uint32_t *reuses, size_t *taken, struct lfs_reclaim_tally *t)
{
	struct u64map victims;
	u64map_init(&victims);
	uint64_t m = 0, age = UINT64_MAX;
	int err = 0;
	for (size_t i = 0; i < k && !err; i++) {
		const struct lfs_seginfo *si = &fs->segs[segs[i]];
		if (si->state == LFS_SEG_DIRTY && si->reuses == reuses[i])
			err = u64map_put(&victims, segs[i], (void *)1);
		if (si->mtime_ns < age)
			age = si->mtime_ns;
	}
	struct move_key *keys = NULL;
	size_t n = 0;
	if (!err)
		err = order_moves(fs, segs, k, b, first, reuses, &keys, &n);
	uint64_t wrote0 = fs->stats.cleaning_bytes_written, drag0 = fs->stats.clean_drag_bytes;
	if (!err)
		err = move_ordered(fs, b, keys, n, age, &victims, &m);
	free(keys);
	/* what moved before the safety net stopped is written all the same:
	 * the round is then at a loss, and says so */
	bool stopped = err == -ENOSPC;
	if (!err || stopped) {
		int ferr = lfs_clean_flush(fs, age, &victims);
		err = ferr ? ferr : err;
	}
	t->written += fs->stats.cleaning_bytes_written - wrote0;
	t->drag += fs->stats.clean_drag_bytes - drag0;
	/* stopped part way: the victims the moves emptied all the same */
	size_t emptied = 0;
	for (size_t j = 0; j < k && stopped; j++)
		emptied += u64map_get(&victims, segs[j]) && fs->segs[segs[j]].reuses == reuses[j] &&
			   !fs->segs[segs[j]].live_bytes;
	if (stopped && emptied)
		err = 0;
	/* only the victims moved here, and not made clean since: one a
	 * checkpoint freed after its moves may hold new data already */
	for (size_t j = 0; j < k && !err; j++)
		if (u64map_get(&victims, segs[j]) && fs->segs[segs[j]].reuses == reuses[j] &&
		    fs->segs[segs[j]].live_bytes)
			lfs_log("cleaner: segment %llu still has %u live bytes after cleaning",
				(unsigned long long)segs[j], fs->segs[segs[j]].live_bytes);
	u64map_free(&victims);
	fs->stats.blocks_cleaned += m;
	t->moved += m;
	if (!err)
		*taken = stopped ? emptied : k;
	return err;
}

/*
 * Clean the victims segs[0..n) together: one flush for all of them, so
 * the block-map leaves and inode records their blocks drag along are
 * written once however many victims hold blocks of the same file.  Only
 * the leading victims whose cost, counted together, the space allows are
 * cleaned (at least segs[0], or none: -ENOSPC); *taken says how many.
 * All or nothing per victim, as for the cleaner's requests (ctl_ops.c).
 */
static int
clean_batch(struct lfs_fs *fs, const uint64_t *segs, size_t n, bool may_yield, size_t *taken,
	    struct lfs_reclaim_tally *t)
{
	*taken = 0;
	int err = lfs_flush(fs);
	if (err)
		return err;
	struct batch b = { .n = 0 };
	lfs_clean_cost_init(&b.cost);
	size_t *first = lfs_calloc(n + 1, sizeof(*first));
	uint32_t *reuses = lfs_calloc(n + 1, sizeof(*reuses));
	size_t k = 0;
	err = first && reuses ? choose_batch(fs, segs, n, may_yield, &b, first, reuses, &k) : -ENOMEM;
	/* what requests buffered while counting yielded is theirs, not
	 * cleaning's: written before the moves */
	if (!err && may_yield && k > 1)
		err = lfs_flush(fs);
	if (!err)
		err = move_batch(fs, segs, k, &b, first, reuses, taken, t);
	free(first);
	free(reuses);
	batch_free(&b);
	return err;
}

int
lfs_clean_segment(struct lfs_fs *fs, uint64_t seg, uint64_t *moved)
{
	size_t taken;
	struct lfs_reclaim_tally t = {0};
	int err = clean_batch(fs, &seg, 1, false, &taken, &t);
	*moved += t.moved;
	return err;
}

/* Dirty segments by live bytes, emptiest first. */
static int
by_live(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] > y[1]) - (x[1] < y[1]);
}

/*
 * Greedy, in one batch: the emptiest dirty segments, as many as their
 * cost counted together allows (at most RECLAIM_MAX_BYTES of live data,
 * which the flush holds in memory), then a checkpoint frees them.
 * Cleaning victims one at a time would rewrite the leaves and inode
 * records of every file they share once per victim: under random
 * overwrites of a nearly full filesystem that costs as much as a victim
 * frees, and cleaning would never gain.  The emptiest first: the
 * invariant's batch (lfs(5)), whose V victims the slack is sized for.
 */
#define RECLAIM_MAX_VICTIMS LFS_RECLAIM_MAX_VICTIMS
#define RECLAIM_MAX_BYTES LFS_RECLAIM_MAX_BYTES

int
lfs_clean_reclaim(struct lfs_fs *fs, bool unlocked, struct lfs_reclaim_tally *t)
{
	uint64_t segbytes = (uint64_t)fs->sb.seg_blocks * fs->bsize;
	uint64_t (*cand)[2] = lfs_calloc(fs->sb.nsegs ? fs->sb.nsegs : 1, sizeof(*cand));
	if (!cand)
		return -ENOMEM;
	size_t nc = 0;
	bool empty = false;
	for (uint64_t s = 0; s < fs->sb.nsegs; s++) {
		if (fs->segs[s].state != LFS_SEG_DIRTY)
			continue;
		uint64_t live = lfs_seg_live(fs, s);
		if (live == 0)
			empty = true; /* freed by the checkpoint below */
		else if (live < segbytes) {
			cand[nc][0] = live;
			cand[nc][1] = s;
			nc++;
		}
	}
	int err = 0;
	size_t cleaned = 0, n = 0;
	uint64_t segs[RECLAIM_MAX_VICTIMS];
	uint32_t reuses[RECLAIM_MAX_VICTIMS];
	if (!empty && nc) {
		qsort(cand, nc, sizeof(*cand), by_live);
		uint64_t bytes = 0;
		for (; n < nc && n < RECLAIM_MAX_VICTIMS && (n == 0 || bytes + cand[n][0] <= RECLAIM_MAX_BYTES); n++) {
			segs[n] = cand[n][1];
			reuses[n] = fs->segs[segs[n]].reuses;
			bytes += cand[n][0];
		}
		/* less than a segment dead in all of them: nothing to gain
		 * (the segment the slack's arithmetic promises, lfs(5)) */
		if (n * segbytes - bytes < segbytes) {
			n = 0;
			fs->room_why = "the emptiest segments it may clean hold less than a segment of dead space";
		}
		uint64_t read0 = fs->dev.bytes_read, drag0 = t->drag;
		err = n ? clean_batch(fs, segs, n, unlocked, &cleaned, t) : -ENOSPC;
		if (n) {
			fs->stats.rounds++;
			fs->stats.round_drag_bytes = t->drag - drag0;
			fs->stats.round_tree_bytes = fs->drag_bytes;
		}
		if (n && err == -ENOSPC)
			fs->room_why = "the clean space cannot hold what its victims would move";
		fs->stats.cleaner_bytes_read += fs->dev.bytes_read - read0;
	}
	free(cand);
	if (err && err != -ENOSPC)
		return err;
	if (!cleaned && !empty) {
		if (!nc)
			fs->room_why = "no segment it may clean";
		return -ENOSPC;
	}
	/* the checkpoint that frees the victims is cleaning's cost too: its
	 * table blocks, with a summary for them */
	t->written += ((uint64_t)fs->imap_ndirty + fs->sut_ndirty + 1) * fs->bsize;
	err = unlocked ? lfs_ckpt_write_unlocked(fs) : lfs_ckpt_write(fs, false);
	if (err == -ENOSPC)
		fs->room_why = "its checkpoint found no room";
	/* the victims made clean since they were chosen (perhaps written
	 * again already) */
	for (size_t i = 0; i < n && !err; i++)
		t->victims += fs->segs[segs[i]].reuses != reuses[i];
	return err;
}
