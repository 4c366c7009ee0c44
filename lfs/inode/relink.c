/*
 * relink.c — layer 4: the leaves roll-forward's relink records put in
 * place (format.h, LFS_DI_RELINK).
 *
 * A relink record says "my block map is my previous record's, with the
 * leaves my group logged for me in place of the old ones".  Roll-forward
 * keeps those leaves here, per inode, for the one block map they
 * complete (its version and roots), and whatever reads that map from
 * disk puts them in where a node points to its leaves: a node as it is
 * loaded (bmap.c), a walk of the map (lfs_bmap_walk_disk), the
 * comparison of an old map with a new one (rf_account.c).  A read-only
 * mount keeps them as long as it runs; a writable one has the nodes
 * above them written by its first checkpoint (lfs_recover_relinks), a
 * few per file, and forgets them then.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct lfs_relink {
	uint32_t version;
	uint64_t ind[LFS_NINDIRECT];
	struct u64map leaves;       /* node id -> the leaf's address */
};

static void
relink_destroy(struct lfs_relink *r)
{
	u64map_free(&r->leaves);
	free(r);
}

static bool
same_map(const struct lfs_relink *r, const struct lfs_dinode *di)
{
	return r->version == di->version && memcmp(r->ind, di->ind, sizeof(r->ind)) == 0;
}

struct lfs_relink *
lfs_relink_of(const struct lfs_fs *fs, const struct lfs_dinode *di)
{
	if (!fs->relink.count)
		return NULL;
	struct lfs_relink *r = u64map_get(&fs->relink, di->ino);
	return r && same_map(r, di) ? r : NULL;
}

bool
lfs_relink_get(const struct lfs_relink *r, uint64_t id, uint64_t *addr)
{
	void *v = r ? u64map_get(&r->leaves, id) : NULL;
	if (v)
		*addr = (uint64_t)(uintptr_t)v;
	return v != NULL;
}

/* A writable mount reads the nodes above the relinked leaves once
 * roll-forward ends (lfs_recover_relinks), each checked against its
 * segment's chain of summaries: reads one after another.  The roots
 * they hang from are known at the first relink record, since relink
 * records keep them: the device is asked for each root's segment then,
 * while roll-forward goes on.  For a few files only: a hint, and a
 * segment's read each. */
#define ASK_ROOTS_FILES 16

static void
ask_roots(struct lfs_fs *fs, const struct lfs_dinode *di)
{
	if (fs->opts.readonly || fs->relink.count >= ASK_ROOTS_FILES)
		return;
	for (unsigned k = 1; k < LFS_NINDIRECT; k++)
		if (di->ind[k] && lfs_addr_valid(fs, di->ind[k]))
			lfs_bdev_prefetch(&fs->dev, lfs_seg_first_block(fs, lfs_addr_seg(fs, di->ind[k])) * fs->bsize,
					  (uint64_t)fs->sb.seg_blocks * fs->bsize);
}

int
lfs_relink_put(struct lfs_fs *fs, const struct lfs_dinode *di, uint64_t id, uint64_t addr)
{
	struct lfs_relink *r = u64map_get(&fs->relink, di->ino);
	if (r && !same_map(r, di)) {
		/* of another map: the inode's record changed since */
		relink_destroy(u64map_del(&fs->relink, di->ino));
		r = NULL;
	}
	if (!r) {
		ask_roots(fs, di);
		if (!(r = lfs_calloc(1, sizeof(*r))))
			return -ENOMEM;
		r->version = di->version;
		memcpy(r->ind, di->ind, sizeof(r->ind));
		u64map_init(&r->leaves);
		if (u64map_put(&fs->relink, di->ino, r)) {
			relink_destroy(r);
			return -ENOMEM;
		}
	}
	return u64map_put(&r->leaves, id, (void *)(uintptr_t)addr);
}

void
lfs_relink_drop(struct lfs_fs *fs, uint32_t ino)
{
	struct lfs_relink *r = fs->relink.count ? u64map_del(&fs->relink, ino) : NULL;
	if (r)
		relink_destroy(r);
}

struct patch {
	unsigned k;
	uint64_t first;             /* index of the node's first child leaf */
	uint32_t n;
	uint64_t *ptrs;
};

static void
patch_one(uint64_t id, void *val, void *ctx)
{
	struct patch *p = ctx;
	uint64_t i = lfs_node_idx(id);
	if (lfs_node_tree(id) == p->k && i >= p->first && i - p->first < p->n && p->ptrs[i - p->first])
		p->ptrs[i - p->first] = (uint64_t)(uintptr_t)val;
}

void
lfs_relink_patch_node(const struct lfs_fs *fs, const struct lfs_dinode *di, uint64_t id, uint64_t *ptrs)
{
	unsigned k = lfs_node_tree(id), l = lfs_node_level(id);
	if (l + 1 != k)
		return; /* not a node whose children are leaves */
	const struct lfs_relink *r = lfs_relink_of(fs, di);
	if (!r)
		return;
	struct patch p = { k, lfs_node_idx(id) * fs->nptr, fs->nptr, ptrs };
	if (r->leaves.count < fs->nptr) {
		u64map_each(&r->leaves, patch_one, &p);
		return;
	}
	for (uint32_t s = 0; s < p.n; s++) {
		uint64_t a;
		if (ptrs[s] && lfs_relink_get(r, lfs_node_id(k, k, p.first + s), &a))
			ptrs[s] = a;
	}
}

static int
free_one(uint64_t ino, void *val, void *ctx)
{
	(void)ino;
	(void)ctx;
	relink_destroy(val);
	return 1;
}

static int
sorted_keys(const struct u64map *m, uint64_t **keys, size_t *n)
{
	*n = m->count;
	uint64_t *w = *keys = lfs_malloc((*n + 1) * sizeof(uint64_t));
	if (!w)
		return -ENOMEM;
	u64map_sorted_keys(m, w);
	return 0;
}

int
lfs_relink_leaves(const struct lfs_relink *r, uint64_t **ids, size_t *n)
{
	return sorted_keys(&r->leaves, ids, n);
}

int
lfs_relink_inos(const struct lfs_fs *fs, uint64_t **inos, size_t *n)
{
	return sorted_keys(&fs->relink, inos, n);
}

void
lfs_relink_free(struct lfs_fs *fs)
{
	u64map_remove_if(&fs->relink, free_one, NULL);
	u64map_free(&fs->relink);
	u64map_init(&fs->relink);
}
