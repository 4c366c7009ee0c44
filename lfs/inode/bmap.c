/*
 * bmap.c — layer 4: block maps.
 *
 * A file's logical block b is found through 12 direct pointers, then four
 * trees of depth 1..4 (tree k covers nptr^(k+1) blocks).  A node is named
 * by (tree, level, index), so it can be cached and written without a
 * pointer to its parent.  Worked example, nptr = 512: block 12 is tree 0,
 * rel 0: leaf (0,0,0) slot 0; block 524 is tree 1, rel 0: root (1,0,0)
 * slot 0 -> leaf (1,1,0) slot 0.
 *
 * Nodes are written by lfs_bmap_flush_nodes(), deepest level first, so a
 * parent is written after all of its children have their new addresses.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Number of data blocks under one pointer of a node at `level` in tree k. */
static uint64_t
span(const struct lfs_fs *fs, unsigned k, unsigned level)
{
	return lfs_node_span(fs->nptr, k, level);
}

uint64_t
lfs_bmap_tree_base(const struct lfs_fs *fs, unsigned k)
{
	return lfs_tree_base(fs->nptr, k);
}

bool
lfs_bmap_unwritten_ok(const struct lfs_fs *fs, const struct lfs_dinode *di)
{
	return (fs->sb.feature_incompat & LFS_FEATURE_UNWRITTEN) && S_ISREG(di->mode) &&
	       !(di->flags & LFS_DI_INLINE);
}

/* A crafted map may name more than its record counts: the counts stop
 * at zero rather than wrap. */
void
lfs_bmap_unwritten_add(struct lfs_fs *fs, struct lfs_inode *ip, int64_t n)
{
	if (n < 0 && (uint64_t)-n > ip->di.unwritten)
		n = -(int64_t)ip->di.unwritten;
	if (n < 0 && (uint64_t)-n > fs->unwritten)
		fs->unwritten = (uint64_t)-n;
	ip->di.unwritten = (uint32_t)((int64_t)ip->di.unwritten + n);
	fs->unwritten = (uint64_t)((int64_t)fs->unwritten + n);
	lfs_inode_dirty(fs, ip);
}

uint64_t
lfs_bmap_max_blocks(const struct lfs_fs *fs)
{
	return lfs_bmap_tree_base(fs, LFS_NINDIRECT);
}

/* Split a logical block into (tree, rel).  Caller ensures lblk >= NDIRECT. */
static int
locate(const struct lfs_fs *fs, uint64_t lblk, unsigned *k, uint64_t *rel)
{
	for (unsigned t = 0; t < LFS_NINDIRECT; t++) {
		uint64_t base = lfs_bmap_tree_base(fs, t), cap = fs->nptr * span(fs, t, 0);
		if (lblk < base + cap) {
			*k = t;
			*rel = lblk - base;
			return 0;
		}
	}
	return -EFBIG;
}

static struct lfs_node *
node_new(const struct lfs_fs *fs)
{
	return lfs_calloc(1, sizeof(struct lfs_node) + (size_t)fs->nptr * sizeof(uint64_t));
}

static int node_get(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t id, bool create, struct lfs_node **out,
		    bool *under);

/* The pointer in the parent (or the inode) that refers to node id;
 * *under: there is no such pointer, an unwritten one above stands for
 * it (only when not `create`). */
static int
parent_slot(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t id, bool create, uint64_t **slot,
	    struct lfs_node **parent, bool *under)
{
	unsigned k = lfs_node_tree(id), l = lfs_node_level(id);
	uint64_t i = lfs_node_idx(id);
	*parent = NULL;
	if (l == 0) {
		*slot = &ip->di.ind[k];
		return 0;
	}
	struct lfs_node *p;
	int err = node_get(fs, ip, lfs_node_id(k, l - 1, i / fs->nptr), create, &p, under);
	if (err)
		return err;
	if (!p) {
		*slot = NULL;
		return 0;
	}
	*parent = p;
	*slot = &p->ptrs[i % fs->nptr];
	return 0;
}

/* Node id: cached, read, or (create) made.  Made under an unwritten
 * pointer, every slot of it is unwritten: the blocks it maps stay
 * counted, the node itself is one block more.  Not made: *out is NULL,
 * and *under says whether an unwritten pointer stands for it. */
static int
node_get(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t id, bool create, struct lfs_node **out, bool *under)
{
	struct lfs_node *n = u64map_get(&ip->nodes, id);
	*under = false;
	if (n) {
		*out = n;
		return 0;
	}
	uint64_t *slot;
	struct lfs_node *parent;
	int err = parent_slot(fs, ip, id, create, &slot, &parent, under);
	if (err)
		return err;
	uint64_t addr = slot ? *slot : 0;
	if (!create && (lfs_addr_unwritten(addr) || *under)) {
		*under = true;
		*out = NULL;
		return 0;
	}
	if (!addr && !create) {
		*out = NULL;
		return 0;
	}
	n = node_new(fs);
	if (!n)
		return -ENOMEM;
	if (lfs_addr_unwritten(addr)) {
		for (uint32_t s = 0; s < fs->nptr; s++)
			n->ptrs[s] = LFS_ADDR_UNWRITTEN;
		n->dirty = true;
	} else if (addr) {
		uint8_t *blk = lfs_malloc(fs->bsize);
		err = blk ? lfs_read_block(fs, addr, blk) : -ENOMEM;
		if (!err)
			lfs_node_decode(n->ptrs, fs->nptr, blk);
		free(blk);
		if (err) {
			free(n);
			return err;
		}
		/* as the disk holds it, and as roll-forward's relink records
		 * changed it (relink.c) */
		lfs_relink_patch_node(fs, &ip->di, id, n->ptrs);
		n->addr = addr;
	} else {
		n->dirty = true;
	}
	if (u64map_put(&ip->nodes, id, n)) {
		free(n);
		return -ENOMEM;
	}
	/* counted only once it is held: a failed put must leave the count */
	if (!addr || lfs_addr_unwritten(addr)) {
		ip->reshaped = true;
		ip->di.blocks++;
		lfs_inode_dirty(fs, ip);
	}
	fs->cache_nodes++;
	*out = n;
	return 0;
}

int
lfs_bmap_get_node(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t id, bool create,
		  struct lfs_node **out)
{
	bool under;
	return node_get(fs, ip, id, create, out, &under);
}

uint64_t
lfs_bmap_node_addr(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t id)
{
	unsigned k = lfs_node_tree(id), l = lfs_node_level(id);
	uint64_t i = lfs_node_idx(id);
	if (u64map_get(&ip->nodes, id))
		return 0;
	if (l == 0)
		return ip->di.ind[k];
	struct lfs_node *p = u64map_get(&ip->nodes, lfs_node_id(k, l - 1, i / fs->nptr));
	return p ? p->ptrs[i % fs->nptr] : 0;
}

unsigned
lfs_bmap_path(const struct lfs_fs *fs, uint64_t lblk, uint64_t ids[LFS_NINDIRECT])
{
	uint64_t rel;
	return lfs_block_path(fs->nptr, lblk, ids, &rel);
}

/* The pointer to block lblk: in the inode, or in its leaf (*leaf; NULL
 * and no slot when the leaf does not exist and `create` is false; then
 * *under says whether an unwritten pointer above stands for it). */
static int
pointer_of(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, bool create, uint64_t **slot,
	   struct lfs_node **leaf, bool *under)
{
	*leaf = NULL;
	*under = false;
	if (lblk < LFS_NDIRECT) {
		*slot = &ip->di.direct[lblk];
		return 0;
	}
	unsigned k;
	uint64_t rel;
	int err = locate(fs, lblk, &k, &rel);
	if (!err)
		err = node_get(fs, ip, lfs_node_id(k, k, rel / fs->nptr), create, leaf, under);
	if (err)
		return err;
	*slot = *leaf ? &(*leaf)->ptrs[rel % fs->nptr] : NULL;
	return 0;
}

int
lfs_bmap_get(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, uint64_t *addr)
{
	uint64_t *slot;
	struct lfs_node *leaf;
	bool under;
	int err = pointer_of(fs, ip, lblk, false, &slot, &leaf, &under);
	if (err)
		return err;
	*addr = slot ? *slot : under ? LFS_ADDR_UNWRITTEN : 0;
	return 0;
}

int
lfs_bmap_set(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, uint64_t addr, uint64_t *old)
{
	uint64_t *slot;
	struct lfs_node *leaf;
	bool under;
	int err = pointer_of(fs, ip, lblk, true, &slot, &leaf, &under);
	if (err)
		return err;
	if (leaf)
		leaf->dirty = true;
	*old = *slot;
	*slot = addr;
	if (!*old && addr)
		ip->di.blocks++;
	else if (*old && !addr)
		ip->di.blocks--;
	if (lfs_addr_unwritten(*old) != lfs_addr_unwritten(addr))
		lfs_bmap_unwritten_add(fs, ip, lfs_addr_unwritten(addr) ? 1 : -1);
	if (!*old != !addr || lfs_addr_unwritten(*old) != lfs_addr_unwritten(addr))
		ip->reshaped = true;
	lfs_inode_dirty(fs, ip);
	return 0;
}

static void
release_node(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t id, struct lfs_node *n)
{
	if (n->addr)
		lfs_repl_drop(fs, ip, n->addr, LFS_BK_INDIR);
	ip->di.blocks--;
	ip->reshaped = true;
	u64map_del(&ip->nodes, id);
	fs->cache_nodes--;
	free(n);
	uint64_t *slot;
	struct lfs_node *parent;
	bool under;
	if (parent_slot(fs, ip, id, false, &slot, &parent, &under) == 0 && slot) {
		*slot = 0;
		if (parent)
			parent->dirty = true;
	}
	lfs_inode_dirty(fs, ip);
}

static int free_node(struct lfs_fs *fs, struct lfs_inode *ip, unsigned k, unsigned l, uint64_t i, uint64_t lo,
		     uint64_t hi);

/* The pointer *p to node (k, l, i), whose blocks are rel [a, a + sp),
 * is unwritten and the node not in memory: cleared if [lo, hi) covers
 * it all, else the node is made and freed in part.  1: cleared. */
static int
free_unwritten(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t *p, unsigned k, unsigned l, uint64_t i,
	       uint64_t a, uint64_t sp, uint64_t lo, uint64_t hi)
{
	if (lo <= a && a + sp <= hi) {
		*p = 0;
		ip->di.blocks -= sp <= ip->di.blocks ? sp : ip->di.blocks;
		lfs_bmap_unwritten_add(fs, ip, -(int64_t)sp);
		ip->reshaped = true;
		return 1;
	}
	struct lfs_node *n;
	bool under;
	int err = node_get(fs, ip, lfs_node_id(k, l, i), true, &n, &under);
	return err ? err : free_node(fs, ip, k, l, i, lo, hi);
}

/* Free data blocks with rel in [lo, hi) under node (k, l, i). */
static int
free_node(struct lfs_fs *fs, struct lfs_inode *ip, unsigned k, unsigned l, uint64_t i, uint64_t lo,
	  uint64_t hi)
{
	uint64_t id = lfs_node_id(k, l, i);
	struct lfs_node *n;
	int err = lfs_bmap_get_node(fs, ip, id, false, &n);
	if (err || !n)
		return err;
	uint64_t sp = span(fs, k, l), base = i * fs->nptr * sp;
	for (uint32_t s = 0; s < fs->nptr; s++) {
		uint64_t a = base + s * sp, b = a + sp;
		if (b <= lo || a >= hi)
			continue;
		if (l == k) {
			if (lfs_addr_unwritten(n->ptrs[s])) {
				n->ptrs[s] = 0;
				ip->di.blocks--;
				lfs_bmap_unwritten_add(fs, ip, -1);
				ip->reshaped = true;
				n->dirty = true;
			} else if (n->ptrs[s]) {
				lfs_repl_drop(fs, ip, n->ptrs[s], LFS_BK_DATA);
				n->ptrs[s] = 0;
				ip->di.blocks--;
				ip->reshaped = true;
				n->dirty = true;
			}
			continue;
		}
		/* the child may be cached and new, with no pointer here yet */
		uint64_t cid = lfs_node_id(k, l + 1, i * fs->nptr + s);
		bool cached = u64map_get(&ip->nodes, cid) != NULL;
		if (!n->ptrs[s] && !cached)
			continue;
		if (lfs_addr_unwritten(n->ptrs[s]) && !cached) {
			err = free_unwritten(fs, ip, &n->ptrs[s], k, l + 1, i * fs->nptr + s, a, sp, lo, hi);
			n->dirty |= err == 1;
			if (err < 0)
				return err;
			continue;
		}
		err = free_node(fs, ip, k, l + 1, i * fs->nptr + s, lo, hi);
		if (err)
			return err;
	}
	bool empty = true;
	for (uint32_t s = 0; s < fs->nptr && empty; s++)
		if (n->ptrs[s])
			empty = false;
	if (empty && l < k) {
		/* an interior node may still have new children not yet linked */
		for (uint32_t s = 0; s < fs->nptr && empty; s++)
			if (u64map_get(&ip->nodes, lfs_node_id(k, l + 1, i * fs->nptr + s)))
				empty = false;
	}
	if (empty)
		release_node(fs, ip, id, n);
	else
		lfs_inode_dirty(fs, ip);
	return 0;
}

int
lfs_bmap_free_range(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t first, uint64_t end)
{
	for (uint64_t b = first; b < end && b < LFS_NDIRECT; b++) {
		if (lfs_addr_unwritten(ip->di.direct[b])) {
			ip->di.direct[b] = 0;
			ip->di.blocks--;
			lfs_bmap_unwritten_add(fs, ip, -1);
			ip->reshaped = true;
		} else if (ip->di.direct[b]) {
			lfs_repl_drop(fs, ip, ip->di.direct[b], LFS_BK_DATA);
			ip->di.direct[b] = 0;
			ip->di.blocks--;
			lfs_inode_dirty(fs, ip);
		}
	}
	for (unsigned k = 0; k < LFS_NINDIRECT; k++) {
		uint64_t base = lfs_bmap_tree_base(fs, k), cap = fs->nptr * span(fs, k, 0);
		if (end <= base || first >= base + cap)
			continue;
		bool cached = u64map_get(&ip->nodes, lfs_node_id(k, 0, 0)) != NULL;
		if (!ip->di.ind[k] && !cached)
			continue;
		uint64_t lo = first > base ? first - base : 0;
		uint64_t hi = end - base < cap ? end - base : cap;
		int err = lfs_addr_unwritten(ip->di.ind[k]) && !cached
				  ? free_unwritten(fs, ip, &ip->di.ind[k], k, 0, 0, 0, cap, lo, hi)
				  : free_node(fs, ip, k, 0, 0, lo, hi);
		if (err < 0)
			return err;
	}
	return 0;
}

struct idlist {
	uint64_t *ids;
	size_t n;
	unsigned level;
	bool leaves;                /* only leaves past the first tree */
};

static void
collect_dirty(uint64_t id, void *val, void *ctx)
{
	struct idlist *l = ctx;
	struct lfs_node *n = val;
	if (n->dirty && lfs_node_level(id) == l->level &&
	    (!l->leaves || (lfs_node_tree(id) == l->level && l->level > 0)))
		l->ids[l->n++] = id;
}

int
lfs_bmap_flush_nodes(struct lfs_fs *fs, struct lfs_inode *ip, bool leaves)
{
	if (!ip->nodes.count)
		return 0;
	uint8_t *blk = lfs_malloc(fs->bsize);
	struct idlist l = { .ids = NULL, .leaves = leaves };
	int err = 0;
	if (!blk)
		return -ENOMEM;
	for (int level = LFS_NINDIRECT - 1; level >= 0 && !err; level--) {
		free(l.ids);
		l.ids = lfs_malloc((ip->nodes.count + 1) * sizeof(uint64_t));
		if (!l.ids) {
			err = -ENOMEM;
			break;
		}
		l.n = 0;
		l.level = (unsigned)level;
		u64map_each(&ip->nodes, collect_dirty, &l);
		qsort(l.ids, l.n, sizeof(uint64_t), u64_cmp);
		for (size_t j = 0; j < l.n && !err; j++) {
			struct lfs_node *n = u64map_get(&ip->nodes, l.ids[j]);
			uint64_t addr, *slot;
			struct lfs_node *parent;
			bool under;
			lfs_node_encode(n->ptrs, fs->nptr, blk);
			err = lfs_seg_append(fs, LFS_BK_INDIR, ip->ino, ip->di.version, l.ids[j], blk, &addr);
			if (err)
				break;
			if (n->addr)
				lfs_repl_drop(fs, ip, n->addr, LFS_BK_INDIR);
			lfs_retain_use(fs, addr, fs->bsize, LFS_BK_INDIR);
			n->addr = addr;
			n->dirty = false;
			err = parent_slot(fs, ip, l.ids[j], true, &slot, &parent, &under);
			if (!err) {
				*slot = addr;
				if (parent)
					parent->dirty = true;
			}
		}
	}
	free(l.ids);
	free(blk);
	return err;
}

static int
free_if_clean(uint64_t id, void *val, void *ctx)
{
	struct lfs_node *nd = val;
	struct lfs_fs *fs = ctx;
	(void)id;
	if (nd->dirty)
		return 0;
	free(nd);
	fs->cache_nodes--;
	return 1;
}

void
lfs_bmap_drop_clean_nodes(struct lfs_fs *fs, struct lfs_inode *ip)
{
	u64map_remove_if(&ip->nodes, free_if_clean, fs);
}

static int
free_any(uint64_t id, void *val, void *ctx)
{
	struct lfs_fs *fs = ctx;
	(void)id;
	free(val);
	fs->cache_nodes--;
	return 1;
}

void
lfs_bmap_free_nodes(struct lfs_fs *fs, struct lfs_inode *ip)
{
	u64map_remove_if(&ip->nodes, free_any, fs);
	u64map_free(&ip->nodes);
}

/* ---------------------------------------------------------------- */

struct walk {
	struct lfs_fs *fs;
	int (*fn)(void *, uint64_t, uint8_t, uint64_t);
	void *ctx;
	const struct lfs_dinode *di;
	struct u64map nodes;        /* addresses walked: a crafted map that
				       names one node many times would
				       otherwise be read nptr^3 times */
	bool unw_ok;                /* the map may have unwritten pointers */
	uint64_t unwritten;         /* data blocks under unwritten pointers */
};

static int
walk_node(struct walk *w, uint64_t addr, unsigned k, unsigned l, uint64_t i)
{
	struct lfs_fs *fs = w->fs;
	uint64_t id = lfs_node_id(k, l, i);
	if (u64map_get(&w->nodes, addr)) {
		lfs_log("block map: node %llu is referenced twice", (unsigned long long)addr);
		return -EFSCORRUPTED;
	}
	int err = u64map_put(&w->nodes, addr, (void *)1);
	if (!err)
		err = w->fn(w->ctx, addr, LFS_BK_INDIR, id);
	if (err)
		return err;
	uint64_t *ptrs = lfs_malloc((size_t)fs->nptr * sizeof(uint64_t));
	uint8_t *blk = lfs_malloc(fs->bsize);
	if (!ptrs || !blk) {
		free(ptrs);
		free(blk);
		return -ENOMEM;
	}
	err = lfs_read_block(fs, addr, blk);
	if (!err) {
		lfs_node_decode(ptrs, fs->nptr, blk);
		lfs_relink_patch_node(fs, w->di, id, ptrs);
	}
	free(blk);
	uint64_t sp = span(fs, k, l), base = lfs_bmap_tree_base(fs, k) + i * fs->nptr * sp;
	for (uint32_t s = 0; s < fs->nptr && !err; s++) {
		if (!ptrs[s])
			continue;
		if (lfs_addr_unwritten(ptrs[s]) && w->unw_ok) {
			w->unwritten += sp;
			continue;
		}
		if (!lfs_addr_named(fs, ptrs[s])) {
			err = -EFSCORRUPTED;
			break;
		}
		if (l == k)
			err = w->fn(w->ctx, ptrs[s], LFS_BK_DATA, base + s);
		else
			err = walk_node(w, ptrs[s], k, l + 1, i * fs->nptr + s);
	}
	free(ptrs);
	return err;
}

/* The blocks an XATTR root's slot table names (format.h). */
static int
walk_xattr_slots(struct lfs_fs *fs, uint64_t root, int (*fn)(void *ctx, uint64_t addr, uint8_t kind, uint64_t lblk),
		 void *ctx)
{
	uint8_t *blk = lfs_malloc(fs->bsize);
	if (!blk)
		return -ENOMEM;
	struct lfs_xroot r;
	int err = lfs_read_block(fs, root, blk);
	if (!err && lfs_xroot_decode(&r, blk, fs->bsize))
		err = -EFSCORRUPTED;
	for (uint32_t s = 0; !err && s < r.nslots; s++) {
		uint64_t v = lfs_xroot_slot(blk, s), a = lfs_xslot_addr(v);
		if (!v)
			continue;
		if ((lfs_xslot_kind(v) != LFS_XSLOT_LEAF && lfs_xslot_kind(v) != LFS_XSLOT_VALUE) ||
		    !lfs_addr_named(fs, a))
			err = -EFSCORRUPTED;
		else
			err = fn(ctx, a, LFS_BK_XATTR, s + 1);
	}
	free(blk);
	return err;
}

int
lfs_bmap_walk_disk_unwritten(struct lfs_fs *fs, const struct lfs_dinode *di,
			     int (*fn)(void *ctx, uint64_t addr, uint8_t kind, uint64_t lblk), void *ctx,
			     uint64_t *unwritten)
{
	struct walk w = { .fs = fs, .fn = fn, .ctx = ctx, .di = di, .unw_ok = lfs_bmap_unwritten_ok(fs, di) };
	u64map_init(&w.nodes);
	const char *why;
	/* what fn is given lies inside the log, as walk_node checks below */
	struct lfs_super tsb = lfs_tree_super(fs);
	int err = lfs_dinode_check(di, &tsb, &why);
	if (!(di->flags & LFS_DI_INLINE))
		for (uint64_t b = 0; b < LFS_NDIRECT && !err; b++) {
			if (lfs_addr_unwritten(di->direct[b]))
				w.unwritten++;
			else if (di->direct[b])
				err = fn(ctx, di->direct[b], LFS_BK_DATA, b);
		}
	for (unsigned k = 0; k < LFS_NINDIRECT && !err; k++) {
		if (lfs_addr_unwritten(di->ind[k]))
			w.unwritten += fs->nptr * span(fs, k, 0);
		else if (di->ind[k])
			err = walk_node(&w, di->ind[k], k, 0, 0);
	}
	if (!err && di->xattr)
		err = fn(ctx, di->xattr, LFS_BK_XATTR, 0);
	if (!err && di->xattr)
		err = walk_xattr_slots(fs, di->xattr, fn, ctx);
	u64map_free(&w.nodes);
	if (unwritten)
		*unwritten = w.unwritten;
	return err;
}

int
lfs_bmap_walk_disk(struct lfs_fs *fs, const struct lfs_dinode *di,
		   int (*fn)(void *ctx, uint64_t addr, uint8_t kind, uint64_t lblk), void *ctx)
{
	return lfs_bmap_walk_disk_unwritten(fs, di, fn, ctx, NULL);
}
