/*
 * unwritten.c — layer 4: unwritten blocks, what fallocate reserves
 * without writing (format.h, LFS_ADDR_UNWRITTEN): marking a range's
 * holes, a whole subtree by one pointer where nothing under it is
 * mapped.  Which files may have them, the counts that follow them,
 * freeing and walking them are the block map's (bmap.c), below.
 */
#include "lfs_int.h"

#include <errno.h>

struct resv {
	struct lfs_fs *fs;
	struct lfs_inode *ip;
	uint64_t first, end;        /* the range, logical blocks */
	bool mark;                  /* mark the holes, or only count them */
	uint64_t holes;
	uint64_t a, b;              /* pages_in's question */
	uint64_t pages;             /* and its answer */
};

static void
count_page(uint64_t lblk, void *pg, void *ctx)
{
	struct resv *r = ctx;
	(void)pg;
	r->pages += lblk >= r->a && lblk < r->b;
}

/* Pages in [a, b): a page over a hole is a block that will be written. */
static uint64_t
pages_in(struct resv *r, uint64_t a, uint64_t b)
{
	if (!r->ip->pages.count)
		return 0;
	r->a = a;
	r->b = b;
	r->pages = 0;
	u64map_each(&r->ip->pages, count_page, r);
	return r->pages;
}

/* The holes under pointer *p to node (k, l, i), which maps the sp
 * blocks from logical block a; held in node `holder` (NULL: the inode).
 * A pointer none of whose blocks is mapped, cached or paged becomes
 * unwritten whole: a terabyte is a few pointers, not 2^28 slots. */
static int
resv_ptr(struct resv *r, uint64_t *p, struct lfs_node *holder, unsigned k, unsigned l, uint64_t i, uint64_t a,
	 uint64_t sp)
{
	struct lfs_fs *fs = r->fs;
	struct lfs_inode *ip = r->ip;
	uint64_t lo = a > r->first ? a : r->first, hi = a + sp < r->end ? a + sp : r->end;
	if (lo >= hi)
		return 0;
	struct lfs_node *n = u64map_get(&ip->nodes, lfs_node_id(k, l, i));
	if (!n && lfs_addr_unwritten(*p))
		return 0;
	if (!n && !*p && (!r->mark || (lo == a && hi == a + sp && !pages_in(r, a, a + sp)))) {
		uint64_t h = hi - lo - pages_in(r, lo, hi);
		r->holes += h;
		if (r->mark) {
			*p = LFS_ADDR_UNWRITTEN;
			ip->di.blocks += sp;
			lfs_bmap_unwritten_add(fs, ip, (int64_t)sp);
			ip->reshaped = true;
			if (holder)
				holder->dirty = true;
		}
		return 0;
	}
	int err = n ? 0 : lfs_bmap_get_node(fs, ip, lfs_node_id(k, l, i), r->mark, &n);
	if (err || !n)
		return err;
	uint64_t csp = sp / fs->nptr;
	for (uint32_t s = 0; s < fs->nptr && !err; s++) {
		uint64_t ca = a + s * csp;
		if (ca + csp <= lo || ca >= hi)
			continue;
		if (l < k) {
			err = resv_ptr(r, &n->ptrs[s], n, k, l + 1, i * fs->nptr + s, ca, csp);
		} else if (!n->ptrs[s] && !u64map_get(&ip->pages, ca)) {
			r->holes++;
			if (r->mark) {
				n->ptrs[s] = LFS_ADDR_UNWRITTEN;
				n->dirty = true;
				ip->di.blocks++;
				lfs_bmap_unwritten_add(fs, ip, 1);
				ip->reshaped = true;
			}
		}
	}
	return err;
}

int
lfs_unwritten_holes(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t first, uint64_t end, bool mark,
		    uint64_t *holes)
{
	struct resv r = { .fs = fs, .ip = ip, .first = first, .end = end, .mark = mark };
	int err = 0;
	*holes = 0;
	if (mark && !lfs_bmap_unwritten_ok(fs, &ip->di))
		return -EOPNOTSUPP;
	for (uint64_t b = first; b < end && b < LFS_NDIRECT; b++) {
		if (ip->di.direct[b] || u64map_get(&ip->pages, b))
			continue;
		r.holes++;
		if (mark) {
			ip->di.direct[b] = LFS_ADDR_UNWRITTEN;
			ip->di.blocks++;
			lfs_bmap_unwritten_add(fs, ip, 1);
			ip->reshaped = true;
		}
	}
	uint64_t cap = 1;
	for (unsigned k = 0; k < LFS_NINDIRECT && !err; k++) {
		cap *= fs->nptr; /* tree k maps nptr^(k+1) blocks */
		err = resv_ptr(&r, &ip->di.ind[k], NULL, k, 0, 0, lfs_bmap_tree_base(fs, k), cap);
	}
	*holes = r.holes;
	return err;
}
