/*
 * seek.c — layer 4: SEEK_DATA and SEEK_HOLE over a file's block map
 * and its pages, answered as ext4 answers them.  A block is data when
 * the map names a written block for it or a page holds it (written and
 * not flushed yet); a hole is a hole, and so is an unwritten block
 * (format.h) with no page over it, as an unwritten extent with nothing
 * in the page cache is on ext4; an inline file is data throughout.  A
 * pointer with no node under it is skipped whole, so a terabyte
 * reserved is a few steps.
 */
#include "lfs_int.h"

#include <errno.h>

static bool
written(uint64_t p)
{
	return p && !lfs_addr_unwritten(p);
}

/* The first block >= from, of the sp blocks from a under pointer p to
 * node (k, l, i), that is written (`data`) or not; UINT64_MAX: none. */
static int
next_in(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t p, unsigned k, unsigned l, uint64_t i, uint64_t a,
	uint64_t sp, uint64_t from, bool data, uint64_t *out)
{
	*out = UINT64_MAX;
	if (a + sp <= from)
		return 0;
	uint64_t lo = a > from ? a : from, id = lfs_node_id(k, l, i);
	struct lfs_node *n = u64map_get(&ip->nodes, id);
	int err = n || !written(p) ? 0 : lfs_bmap_get_node(fs, ip, id, false, &n);
	if (err)
		return err;
	if (!n) {
		*out = data ? UINT64_MAX : lo;
		return 0;
	}
	uint64_t csp = sp / fs->nptr;
	for (uint64_t s = (lo - a) / csp; s < fs->nptr; s++) {
		uint64_t ca = a + s * csp;
		if (l == k) {
			if (written(n->ptrs[s]) == data) {
				*out = ca;
				return 0;
			}
			continue;
		}
		err = next_in(fs, ip, n->ptrs[s], k, l + 1, i * fs->nptr + s, ca, csp, from, data, out);
		if (err || *out != UINT64_MAX)
			return err;
	}
	return 0;
}

/* The first block >= from that the map names written (`data`) or not. */
static int
next_mapped(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t from, bool data, uint64_t *out)
{
	for (uint64_t b = from; b < LFS_NDIRECT; b++) {
		if (written(ip->di.direct[b]) == data) {
			*out = b;
			return 0;
		}
	}
	uint64_t cap = 1;
	for (unsigned k = 0; k < LFS_NINDIRECT; k++) {
		cap *= fs->nptr; /* tree k maps nptr^(k+1) blocks */
		int err = next_in(fs, ip, ip->di.ind[k], k, 0, 0, lfs_bmap_tree_base(fs, k), cap, from, data, out);
		if (err || *out != UINT64_MAX)
			return err;
	}
	/* past the last tree: no block, a hole */
	*out = data ? UINT64_MAX : from;
	return 0;
}

struct first_page {
	uint64_t from, found;
};

static void
page_at_or_after(uint64_t lblk, void *pg, void *ctx)
{
	struct first_page *f = ctx;
	(void)pg;
	if (lblk >= f->from && lblk < f->found)
		f->found = lblk;
}

int
lfs_file_seek(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t off, bool data, uint64_t *out)
{
	uint64_t size = ip->di.size, bs = fs->bsize;
	if (off >= size)
		return -ENXIO;
	if (ip->di.flags & LFS_DI_INLINE) {
		*out = data ? off : size;
		return 0;
	}
	uint64_t b = off / bs, r;
	int err;
	if (data) {
		struct first_page f = { .from = b, .found = UINT64_MAX };
		err = next_mapped(fs, ip, b, true, &r);
		u64map_each(&ip->pages, page_at_or_after, &f);
		r = f.found < r ? f.found : r;
	} else {
		/* a page over a block the map calls a hole is data */
		while (!(err = next_mapped(fs, ip, b, false, &r)) && u64map_get(&ip->pages, r))
			b = r + 1;
	}
	if (err)
		return err;
	if (r == UINT64_MAX || r >= (size + bs - 1) / bs) {
		if (data)
			return -ENXIO;
		*out = size;
		return 0;
	}
	*out = r * bs > off ? r * bs : off;
	return 0;
}
