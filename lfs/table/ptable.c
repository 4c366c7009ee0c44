/*
 * ptable.c — layer 3: a paged table in the log (ptable.h), beside the
 * inode map: the held-block table and the checkpoint history of
 * snapshots (lfs(5), SNAPSHOTS).
 *
 * The whole table is in memory: a page per B/esize slots, with where it
 * was last written.  A change marks its page, the page's index block and
 * the root; a checkpoint writes exactly those, so its cost follows what
 * changed since the last one, not the table's size.
 */
#include "ptable.h"

#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int
lfs_ptable_init(struct lfs_ptable *t, const struct lfs_fs *fs, uint32_t id, uint32_t esize)
{
	memset(t, 0, sizeof(*t));
	if (!esize || esize > fs->bsize)
		return -EINVAL;
	t->id = id;
	t->esize = esize;
	t->per = fs->bsize / esize;
	t->fan = fs->bsize / 8;
	t->idx_addr = lfs_calloc(t->fan, sizeof(*t->idx_addr));
	t->idx_dirty = lfs_calloc(t->fan, 1);
	if (!t->idx_addr || !t->idx_dirty) {
		free(t->idx_addr);
		free(t->idx_dirty);
		memset(t, 0, sizeof(*t)); /* freed again by lfs_ptable_free */
		return -ENOMEM;
	}
	return 0;
}

void
lfs_ptable_free(struct lfs_fs *fs, struct lfs_ptable *t)
{
	(void)fs;
	for (uint64_t p = 0; t->page && p < t->npages; p++)
		free(t->page[p]);
	free(t->page);
	free(t->page_addr);
	free(t->page_dirty);
	free(t->idx_addr);
	free(t->idx_dirty);
	memset(t, 0, sizeof(*t));
}

/* Room for pages [0, n), the new ones zero (all slots free). */
static int
grow(const struct lfs_fs *fs, struct lfs_ptable *t, uint64_t n)
{
	if (n > (uint64_t)t->fan * t->fan)
		return -EFBIG;
	if (n > t->cap) {
		uint64_t cap = t->cap ? t->cap : 8;
		while (cap < n)
			cap *= 2;
		uint8_t **pg = lfs_realloc(t->page, cap * sizeof(*pg));
		if (!pg)
			return -ENOMEM;
		t->page = pg;
		uint64_t *pa = lfs_realloc(t->page_addr, cap * sizeof(*pa));
		if (!pa)
			return -ENOMEM;
		t->page_addr = pa;
		uint8_t *pd = lfs_realloc(t->page_dirty, cap);
		if (!pd)
			return -ENOMEM;
		t->page_dirty = pd;
		t->cap = cap;
	}
	for (; t->npages < n; t->npages++) {
		if (!(t->page[t->npages] = lfs_calloc(1, fs->bsize)))
			return -ENOMEM;
		t->page_addr[t->npages] = 0;
		t->page_dirty[t->npages] = 0;
	}
	t->nidx = (t->npages + t->fan - 1) / t->fan;
	return 0;
}

static void
mark_page(struct lfs_ptable *t, uint64_t p)
{
	if (!t->page_dirty[p]) {
		t->page_dirty[p] = 1;
		t->ndirty++;
	}
	t->idx_dirty[p / t->fan] = 1;
	t->root_dirty = true;
}

const uint8_t *
lfs_ptable_get(const struct lfs_ptable *t, uint64_t i)
{
	return t->page[i / t->per] + (i % t->per) * t->esize;
}

int
lfs_ptable_put(struct lfs_fs *fs, struct lfs_ptable *t, uint64_t i, const uint8_t *entry)
{
	uint64_t p = i / t->per;
	int err = grow(fs, t, p + 1);
	if (err)
		return err;
	memcpy(t->page[p] + (i % t->per) * t->esize, entry, t->esize);
	mark_page(t, p);
	if (i >= t->nslots)
		t->nslots = i + 1;
	return 0;
}

/* Append one node and count it where it lands instead of where it was. */
static int
append_node(struct lfs_fs *fs, const struct lfs_ptable *t, uint64_t node, const uint8_t *blk, uint64_t *addr)
{
	uint64_t old = *addr, at;
	int err = lfs_seg_append(fs, LFS_BK_TABLE, t->id, 0, node, blk, &at);
	if (err)
		return err;
	if (old)
		lfs_seg_meta(fs, old, -1);
	lfs_seg_meta(fs, at, +1);
	*addr = at;
	return 0;
}

/* The addresses addr[0 .. n) in one block, zero after them. */
static void
encode_addrs(const struct lfs_fs *fs, uint8_t *blk, const uint64_t *addr, uint64_t n)
{
	memset(blk, 0, fs->bsize);
	for (uint64_t j = 0; j < n; j++)
		lfs_put64(blk + 8 * j, addr[j]);
}

int
lfs_ptable_write(struct lfs_fs *fs, struct lfs_ptable *t)
{
	if (!t->root_dirty)
		return 0;
	uint8_t *blk = lfs_malloc(fs->bsize);
	if (!blk)
		return -ENOMEM;
	int err = 0;
	for (uint64_t p = 0; p < t->npages && t->ndirty && !err; p++) {
		if (!t->page_dirty[p])
			continue;
		err = append_node(fs, t, lfs_table_node_id(0, p), t->page[p], &t->page_addr[p]);
		if (!err) {
			t->page_dirty[p] = 0;
			t->ndirty--;
		}
	}
	for (uint64_t k = 0; k < t->nidx && !err; k++) {
		if (!t->idx_dirty[k])
			continue;
		uint64_t first = k * t->fan, n = t->npages - first < t->fan ? t->npages - first : t->fan;
		encode_addrs(fs, blk, t->page_addr + first, n);
		err = append_node(fs, t, lfs_table_node_id(1, k), blk, &t->idx_addr[k]);
		if (!err)
			t->idx_dirty[k] = 0;
	}
	if (!err) {
		encode_addrs(fs, blk, t->idx_addr, t->nidx);
		err = append_node(fs, t, lfs_table_node_id(2, 0), blk, &t->root_addr);
	}
	if (!err)
		t->root_dirty = false;
	free(blk);
	return err;
}

static int
corrupt(const struct lfs_ptable *t, const char *what, uint64_t addr)
{
	lfs_log("table %u: %s (block %llu)", t->id, what, (unsigned long long)addr);
	return -EFSCORRUPTED;
}

/* Read the node at addr, checked against its summary's crc; every
 * address a root or index block holds must be 0 or in the log. */
static int
read_node(struct lfs_fs *fs, const struct lfs_ptable *t, uint64_t addr, uint8_t *blk, bool addrs)
{
	if (!lfs_addr_valid(fs, addr))
		return corrupt(t, "a node outside the log", addr);
	int err = lfs_read_block(fs, addr, blk);
	if (err)
		return err;
	for (uint32_t j = 0; addrs && j < t->fan; j++) {
		uint64_t a = lfs_get64(blk + 8 * j);
		if (a && !lfs_addr_valid(fs, a))
			return corrupt(t, "a node names a block outside the log", addr);
	}
	return 0;
}

/* The page addresses the root and index blocks of a table name, into
 * pa[0 .. npages), checked before anything is sized by them: slots are
 * taken in order and each page is written with the checkpoint that
 * first used it, so every page under the slots in use has an address of
 * its own.  A crafted table naming one block as every page, or pages
 * never written, would otherwise make a small image claim a gigabyte
 * of pages and entries; now what is allocated follows the blocks that
 * the image really holds. */
static int
load_page_addrs(struct lfs_fs *fs, struct lfs_ptable *t, uint64_t root, uint64_t npages, uint64_t *pa,
		uint8_t *blk)
{
	uint64_t nidx = (npages + t->fan - 1) / t->fan;
	int err = read_node(fs, t, root, blk, true);
	for (uint64_t k = 0; k < t->fan && !err; k++) {
		uint64_t a = lfs_get64(blk + 8 * k);
		if (k < nidx)
			t->idx_addr[k] = a;
		else if (a)
			err = corrupt(t, "the root names an index block past the slots in use", root);
	}
	struct u64map seen;
	u64map_init(&seen);
	for (uint64_t k = 0; k < nidx && !err; k++) {
		if (!t->idx_addr[k]) {
			err = corrupt(t, "an index block under the slots in use was never written", root);
			break;
		}
		err = read_node(fs, t, t->idx_addr[k], blk, true);
		for (uint64_t j = 0; j < t->fan && !err; j++) {
			uint64_t p = k * t->fan + j, a = lfs_get64(blk + 8 * j);
			if (p >= npages) {
				if (a)
					err = corrupt(t, "an index block names a page past the slots in use", t->idx_addr[k]);
				continue;
			}
			if (!a)
				err = corrupt(t, "a page under the slots in use was never written", t->idx_addr[k]);
			else if (u64map_get(&seen, a))
				err = corrupt(t, "two pages at one address", a);
			else
				err = u64map_put(&seen, a, (void *)1);
			pa[p] = a;
		}
	}
	u64map_free(&seen);
	return err;
}

int
lfs_ptable_load(struct lfs_fs *fs, struct lfs_ptable *t, uint64_t root, uint64_t nslots)
{
	uint64_t npages = (nslots + t->per - 1) / t->per;
	if ((!root && nslots) || npages > (uint64_t)t->fan * t->fan) {
		lfs_log("table %u: %llu slots under root %llu cannot be", t->id, (unsigned long long)nslots,
			(unsigned long long)root);
		return -EFSCORRUPTED;
	}
	if (!root)
		return 0;
	uint8_t *blk = lfs_malloc(fs->bsize);
	uint64_t *pa = lfs_calloc(npages ? npages : 1, sizeof(*pa));
	int err = blk && pa ? load_page_addrs(fs, t, root, npages, pa, blk) : -ENOMEM;
	if (!err)
		err = grow(fs, t, npages);
	for (uint64_t p = 0; p < npages && !err; p++) {
		t->page_addr[p] = pa[p];
		err = read_node(fs, t, pa[p], t->page[p], false);
	}
	free(pa);
	free(blk);
	if (err)
		return err;
	t->root_addr = root;
	t->nslots = nslots;
	/* counted where they are, as the inode map's blocks */
	lfs_seg_meta(fs, root, +1);
	for (uint64_t k = 0; k < t->nidx; k++)
		if (t->idx_addr[k])
			lfs_seg_meta(fs, t->idx_addr[k], +1);
	for (uint64_t p = 0; p < t->npages; p++)
		if (t->page_addr[p])
			lfs_seg_meta(fs, t->page_addr[p], +1);
	return 0;
}

bool
lfs_ptable_node_live(const struct lfs_ptable *t, uint64_t node, uint64_t addr)
{
	uint64_t i = lfs_table_node_index(node);
	switch (lfs_table_node_level(node)) {
	case 0: return i < t->npages && t->page_addr[i] == addr;
	case 1: return i < t->nidx && t->idx_addr[i] == addr;
	case 2: return i == 0 && t->root_addr == addr;
	}
	return false;
}

void
lfs_ptable_mark_node(struct lfs_ptable *t, uint64_t node)
{
	uint64_t i = lfs_table_node_index(node);
	switch (lfs_table_node_level(node)) {
	case 0:
		if (i < t->npages)
			mark_page(t, i);
		break;
	case 1:
		if (i < t->nidx) {
			t->idx_dirty[i] = 1;
			t->root_dirty = true;
		}
		break;
	case 2:
		t->root_dirty = true;
		break;
	}
}
