/*
 * rf_account.c — layer 5: roll-forward's usage accounting: what replacing one
 * version of an inode by the next changes in the segment usage table.
 *
 * The two block maps are compared top down.  Equal pointers name the
 * same block and, for a node, the same subtree: nothing under them
 * changed, and nothing under them is read.  Where they differ the old
 * block is uncounted and the new one counted, and for nodes both are
 * read and compared slot by slot.  Worked example, nptr = 512, a 4 GiB
 * file with one block rewritten: the record's ind[2] differs, so the two
 * roots are read; one slot differs, so two interior nodes; one slot, so
 * two leaves; one slot: the data block.  Six node reads (most of them
 * from this group's buffers or from the cache of recent groups), where
 * walking both maps whole read 4,100.
 *
 * The changes are collected and applied only when both maps could be
 * compared to the end: a corrupt map leaves the table untouched and the
 * caller counts as well as it can (recover.c).
 */
#include "rf_account.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* 4 MiB of 4 KiB blocks: the nodes above the leaves of every file a
 * group touches stay, and leaves touched again soon.  It is allocated a
 * chunk at a time as it fills: most roll-forwards are short, and a mount
 * (crashsim makes thousands) need not fault in 4 MiB for them. */
#define RF_CACHE_SLOTS 1024
#define RF_CHUNK_SLOTS (RF_CACHE_SLOTS / 16)
_Static_assert(RF_CACHE_SLOTS / RF_CHUNK_SLOTS == sizeof(((struct lfs_rf *)0)->cache_chunk) / sizeof(uint8_t *),
	       "one chunk pointer per chunk");

int
lfs_rf_init(struct lfs_rf *rf, struct lfs_fs *fs)
{
	memset(rf, 0, sizeof(*rf));
	rf->fs = fs;
	u64map_init(&rf->group);
	u64map_init(&rf->cached);
	u64map_init(&rf->seen);
	u64map_init(&rf->asked);
	u64map_init(&rf->lists);
	u64map_init(&rf->tainted);
	rf->cache_slots = RF_CHUNK_SLOTS;
	rf->cache_chunk[0] = lfs_malloc((size_t)RF_CHUNK_SLOTS * fs->bsize);
	rf->cache_addr = lfs_calloc(RF_CACHE_SLOTS, sizeof(uint64_t));
	if (!rf->cache_chunk[0] || !rf->cache_addr) {
		lfs_rf_free(rf);
		return -ENOMEM;
	}
	return 0;
}

void
lfs_rf_free(struct lfs_rf *rf)
{
	u64map_free(&rf->group);
	u64map_free(&rf->cached);
	u64map_free(&rf->seen);
	u64map_free(&rf->asked);
	lfs_rf_lists_clear(rf);
	u64map_free(&rf->lists);
	u64map_free(&rf->tainted);
	for (size_t i = 0; i < RF_CACHE_SLOTS / RF_CHUNK_SLOTS; i++) {
		free(rf->cache_chunk[i]);
		rf->cache_chunk[i] = NULL;
	}
	free(rf->cache_addr);
	free(rf->ops);
	free(rf->wants);
	rf->wants = NULL;
	rf->cache_addr = NULL;
	rf->ops = NULL;
}

int
lfs_rf_group_add(struct lfs_rf *rf, uint64_t addr, const uint8_t *blk)
{
	return u64map_put(&rf->group, addr, (void *)blk);
}

/* Where slot's block is kept. */
static uint8_t *
cache_slot(const struct lfs_rf *rf, uint32_t slot)
{
	return rf->cache_chunk[slot / RF_CHUNK_SLOTS] + (size_t)(slot % RF_CHUNK_SLOTS) * rf->fs->bsize;
}

/* A chunk more, before the ring's next slot would give a block up; the
 * cache stays as it is if memory is short. */
static void
cache_grow(struct lfs_rf *rf)
{
	uint32_t n = rf->cache_slots;
	if (rf->cache_next != 0 || !rf->cache_addr[0] || n >= RF_CACHE_SLOTS)
		return;
	uint8_t *c = lfs_malloc((size_t)RF_CHUNK_SLOTS * rf->fs->bsize);
	if (!c)
		return;
	rf->cache_chunk[n / RF_CHUNK_SLOTS] = c;
	rf->cache_slots = n + RF_CHUNK_SLOTS;
	rf->cache_next = n;
}

/* Keep a copy of the block at addr; a cache that cannot grow its index
 * just keeps less. */
static void
cache_put(struct lfs_rf *rf, uint64_t addr, const uint8_t *blk)
{
	uint32_t bs = rf->fs->bsize;
	uintptr_t have = (uintptr_t)u64map_get(&rf->cached, addr);
	if (!have)
		cache_grow(rf);
	uint32_t slot = have ? (uint32_t)(have - 1) : rf->cache_next;
	if (!have) {
		if (rf->cache_addr[slot])
			u64map_del(&rf->cached, rf->cache_addr[slot]);
		rf->cache_addr[slot] = 0;
		rf->cache_next = (rf->cache_next + 1) % rf->cache_slots;
		if (u64map_put(&rf->cached, addr, (void *)(uintptr_t)(slot + 1)))
			return;
		rf->cache_addr[slot] = addr;
	}
	memcpy(cache_slot(rf, slot), blk, bs);
}

static void
keep_one(uint64_t addr, void *blk, void *ctx)
{
	cache_put(ctx, addr, blk);
}

void
lfs_rf_group_done(struct lfs_rf *rf)
{
	u64map_each(&rf->group, keep_one, rf);
	u64map_free(&rf->group);
	u64map_init(&rf->group);
}

/* The block at addr into out: from the group, the cache, or the device
 * (verified against its summary's crc by lfs_read_block). */
static const uint8_t *
rf_peek(struct lfs_rf *rf, uint64_t addr)
{
	const uint8_t *b = u64map_get(&rf->group, addr);
	if (!b) {
		uintptr_t s = (uintptr_t)u64map_get(&rf->cached, addr);
		if (s)
			b = cache_slot(rf, (uint32_t)(s - 1));
	}
	return b;
}

static int
rf_read(struct lfs_rf *rf, uint64_t addr, uint8_t *out)
{
	uint32_t bs = rf->fs->bsize;
	const uint8_t *b = rf_peek(rf, addr);
	if (b) {
		memcpy(out, b, bs);
		return 0;
	}
	int err = lfs_read_block(rf->fs, addr, out);
	if (err)
		return err;
	rf->node_reads++;
	if (u64map_get(&rf->asked, addr))
		rf->asked_reads++;
	cache_put(rf, addr, out);
	return 0;
}

/* The block at addr, if in memory; if not, its read is asked for (once),
 * to be begun by lfs_rf_prefetch_issue. */
static const uint8_t *
rf_want(struct lfs_rf *rf, uint64_t addr)
{
	const uint8_t *b = rf_peek(rf, addr);
	if (b || u64map_get(&rf->asked, addr) || u64map_put(&rf->asked, addr, (void *)1))
		return b;
	if (lfs_array_room(&rf->wants, &rf->capwants, rf->nwants + 1, sizeof(*rf->wants)))
		lfs_bdev_prefetch(&rf->fs->dev, addr * rf->fs->bsize, rf->fs->bsize); /* now, alone */
	else
		rf->wants[rf->nwants++] = addr;
	return b;
}

static int
by_addr(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void
lfs_rf_prefetch_issue(struct lfs_rf *rf)
{
	struct lfs_fs *fs = rf->fs;
	if (!rf->nwants)
		return; /* and wants may be NULL, which qsort must not see */
	for (size_t i = 0; i < rf->nwants; i++)
		lfs_bdev_prefetch(&fs->dev, rf->wants[i] * fs->bsize, fs->bsize);
	/* while those are read, the summaries that check them */
	qsort(rf->wants, rf->nwants, sizeof(*rf->wants), by_addr);
	rf->summaries_ahead += lfs_verify_prefetch(fs, rf->wants, rf->nwants);
	rf->nwants = 0;
}

/* The current record of inode ino, if it is in memory (its block is
 * asked for if not); quietly false for what is not a sound record:
 * applying it will say so. */
static bool
current_record(struct lfs_rf *rf, uint32_t ino, struct lfs_dinode *di)
{
	struct lfs_fs *fs = rf->fs;
	const struct lfs_imap_entry *e = lfs_imap_get(fs, ino);
	if (!(e->flags & LFS_IMAP_INUSE) || !e->daddr || !lfs_addr_valid(fs, e->daddr))
		return false;
	const uint8_t *blk = rf_want(rf, e->daddr);
	uint32_t off = (uint32_t)e->slot * LFS_INODE_ALIGN;
	const char *why;
	return blk && off < fs->bsize && lfs_dinode_decode(di, blk + off, fs->bsize - off) >= 0 &&
	       !lfs_dinode_check(di, &fs->sb, &why) && di->ino == ino;
}

/* Node `id` of inode ino as the current record maps it: the nodes above
 * it that are in memory lead to it, the first that is not is asked for. */
static void
want_node(struct lfs_rf *rf, uint32_t ino, uint64_t id)
{
	struct lfs_fs *fs = rf->fs;
	unsigned k = lfs_node_tree(id), l = lfs_node_level(id);
	uint64_t i = lfs_node_idx(id);
	struct lfs_dinode di;
	if (!(id & LFS_NODE_FLAG) || k >= LFS_NINDIRECT || l > k || !current_record(rf, ino, &di))
		return;
	uint64_t addr = di.ind[k];
	for (unsigned m = 0; m < l && addr; m++) {
		const uint8_t *node = lfs_addr_valid(fs, addr) ? rf_want(rf, addr) : NULL;
		if (!node)
			return;
		/* the child on the way down is node (k, m + 1, i / nptr^(l-m-1)) */
		uint64_t below = 1;
		for (unsigned j = m + 1; j < l; j++)
			below *= fs->nptr;
		addr = lfs_get64(node + 8 * ((i / below) % fs->nptr));
	}
	if (addr && lfs_addr_valid(fs, addr))
		(void)rf_want(rf, addr);
}

void
lfs_rf_prefetch(struct lfs_rf *rf, const struct lfs_pseg_entry *e, const uint8_t *blk)
{
	struct lfs_fs *fs = rf->fs;
	if (e->kind == LFS_BK_INDIR) {
		want_node(rf, e->ino, e->lblk);
		return;
	}
	if (e->kind != LFS_BK_INODE)
		return;
	for (uint32_t off = lfs_inode_block_next(blk, fs->bsize, 0); off < fs->bsize;) {
		struct lfs_dinode di, cur;
		int r = lfs_dinode_decode(&di, blk + off, fs->bsize - off);
		if (r < 0)
			break;
		(void)current_record(rf, di.ino, &cur);
		off = lfs_inode_block_next(blk, fs->bsize, off + (uint32_t)r);
	}
}

int
lfs_rf_old_record(struct lfs_rf *rf, uint64_t daddr, uint16_t slot, struct lfs_dinode *di)
{
	struct lfs_fs *fs = rf->fs;
	memset(di, 0, sizeof(*di));
	uint8_t *blk = lfs_malloc(fs->bsize);
	if (!blk)
		return -ENOMEM;
	int err = lfs_addr_valid(fs, daddr) ? rf_read(rf, daddr, blk) : -EFSCORRUPTED;
	if (err == -EFSCORRUPTED)
		lfs_log("inode record at block %llu slot %u: outside the log", (unsigned long long)daddr, slot);
	if (!err)
		err = lfs_inode_decode_record(fs, blk, daddr, slot, di, NULL, NULL);
	free(blk);
	return err;
}

static int
op_push(struct lfs_rf *rf, uint64_t addr, bool unuse, uint8_t kind)
{
	if (!addr)
		return 0;
	int err = lfs_array_room(&rf->ops, &rf->capops, rf->nops + 1, sizeof(*rf->ops));
	if (!err)
		rf->ops[rf->nops++] = (struct lfs_rf_op){ .addr = addr, .kind = kind, .unuse = unuse };
	return err;
}

/* The pointers of the node at addr; side 0 old, 1 new.  A node seen
 * twice on one side is a crafted map (it would make the walk
 * exponential): corrupt. */
static int
load_node(struct lfs_rf *rf, uint64_t addr, unsigned side, uint64_t **out)
{
	struct lfs_fs *fs = rf->fs;
	uintptr_t bits = (uintptr_t)u64map_get(&rf->seen, addr);
	if (bits & (1u << side)) {
		lfs_log("block map: node %llu is referenced twice", (unsigned long long)addr);
		return -EFSCORRUPTED;
	}
	int err = u64map_put(&rf->seen, addr, (void *)(bits | (1u << side)));
	if (err)
		return err;
	uint8_t *blk = lfs_malloc(fs->bsize);
	uint64_t *ptrs = lfs_malloc((size_t)fs->nptr * sizeof(uint64_t));
	err = blk && ptrs ? rf_read(rf, addr, blk) : -ENOMEM;
	if (!err)
		lfs_node_decode(ptrs, fs->nptr, blk);
	free(blk);
	if (err) {
		free(ptrs);
		return err;
	}
	*out = ptrs;
	return 0;
}

/* Compare the subtrees of tree k at level l, index i, whose nodes are
 * at a (old) and b (new); 0 means none.  The old map is read with the
 * relinks its records made (relink.c). */
static uint64_t
block_of(uint64_t p)
{
	/* an unwritten pointer names no block: its count is the record's
	 * (lfs_rf_unwritten) */
	return p == LFS_ADDR_UNWRITTEN ? 0 : p;
}

static int
diff_node(struct lfs_rf *rf, const struct lfs_dinode *old, uint64_t a, uint64_t b, unsigned k, unsigned l,
	  uint64_t i)
{
	struct lfs_fs *fs = rf->fs;
	a = block_of(a);
	b = block_of(b);
	if (a == b)
		return 0;
	uint64_t *pa = NULL, *pb = NULL;
	int err = op_push(rf, a, true, LFS_BK_INDIR);
	if (!err)
		err = op_push(rf, b, false, LFS_BK_INDIR);
	if (!err && a)
		err = load_node(rf, a, 0, &pa);
	if (!err && a)
		lfs_relink_patch_node(fs, old, lfs_node_id(k, l, i), pa);
	if (!err && b)
		err = load_node(rf, b, 1, &pb);
	for (uint32_t s = 0; s < fs->nptr && !err; s++) {
		uint64_t x = pa ? block_of(pa[s]) : 0, y = pb ? block_of(pb[s]) : 0;
		if (x == y)
			continue;
		if ((x && !lfs_addr_valid(fs, x)) || (y && !lfs_addr_valid(fs, y))) {
			lfs_log("block map: node %llu: pointer %llu outside the log",
				(unsigned long long)(x && !lfs_addr_valid(fs, x) ? a : b),
				(unsigned long long)(x && !lfs_addr_valid(fs, x) ? x : y));
			err = -EFSCORRUPTED;
		} else if (l == k) {
			err = op_push(rf, x, true, LFS_BK_DATA);
			if (!err)
				err = op_push(rf, y, false, LFS_BK_DATA);
		} else {
			err = diff_node(rf, old, x, y, k, l + 1, i * fs->nptr + s);
		}
	}
	free(pa);
	free(pb);
	return err;
}

/* An XATTR root and the blocks its slots name (format.h), counted or
 * uncounted.  A block both roots name is pushed twice, counted then
 * uncounted: the new root goes first, so no segment looks empty between. */
static int
xattr_push(struct lfs_rf *rf, uint64_t root, bool unuse)
{
	struct lfs_fs *fs = rf->fs;
	int err = op_push(rf, root, unuse, LFS_BK_XATTR);
	if (err || !root)
		return err;
	uint8_t *blk = lfs_malloc(fs->bsize);
	if (!blk)
		return -ENOMEM;
	struct lfs_xroot r;
	err = rf_read(rf, root, blk);
	if (!err && lfs_xroot_decode(&r, blk, fs->bsize))
		err = -EFSCORRUPTED;
	for (uint32_t s = 0; !err && s < r.nslots; s++) {
		uint64_t v = lfs_xroot_slot(blk, s);
		if (!v)
			continue;
		if (!lfs_addr_valid(fs, lfs_xslot_addr(v))) {
			lfs_log("xattr root %llu: slot %u outside the log", (unsigned long long)root, s);
			err = -EFSCORRUPTED;
		} else {
			err = op_push(rf, lfs_xslot_addr(v), unuse, LFS_BK_XATTR);
		}
	}
	free(blk);
	return err;
}

static void
apply_ops(struct lfs_rf *rf)
{
	for (size_t i = 0; i < rf->nops; i++) {
		if (rf->ops[i].unuse)
			lfs_retain_drop(rf->fs, rf->ops[i].addr, 0, rf->fs->bsize, rf->ops[i].kind, 0);
		else
			lfs_retain_use(rf->fs, rf->ops[i].addr, rf->fs->bsize, rf->ops[i].kind);
	}
}

int
lfs_rf_account(struct lfs_rf *rf, const struct lfs_dinode *old, const struct lfs_dinode *cur)
{
	static const struct lfs_dinode none;
	const struct lfs_dinode *o = old ? old : &none, *c = cur ? cur : &none;
	/* inline content has no direct blocks, whatever the pointers say
	 * (as lfs_bmap_walk_disk counts) */
	bool oi = o->flags & LFS_DI_INLINE, ci = c->flags & LFS_DI_INLINE;
	int err = 0;
	rf->nops = 0;
	for (unsigned b = 0; b < LFS_NDIRECT && !err; b++) {
		uint64_t x = oi ? 0 : block_of(o->direct[b]), y = ci ? 0 : block_of(c->direct[b]);
		if (x != y && !(err = op_push(rf, x, true, LFS_BK_DATA)))
			err = op_push(rf, y, false, LFS_BK_DATA);
	}
	for (unsigned k = 0; k < LFS_NINDIRECT && !err; k++)
		err = diff_node(rf, o, o->ind[k], c->ind[k], k, 0, 0);
	if (!err && o->xattr != c->xattr && !(err = xattr_push(rf, c->xattr, false)))
		err = xattr_push(rf, o->xattr, true);
	u64map_free(&rf->seen);
	u64map_init(&rf->seen);
	if (!err)
		apply_ops(rf);
	return err;
}

int
lfs_rf_leaf(struct lfs_rf *rf, const struct lfs_dinode *di, uint64_t id, uint64_t *out)
{
	struct lfs_fs *fs = rf->fs;
	unsigned k = lfs_node_tree(id);
	uint64_t idx = lfs_node_idx(id), a = di->ind[k];
	*out = 0;
	if (lfs_relink_get(lfs_relink_of(fs, di), id, out))
		return 0;
	uint8_t *blk = lfs_malloc(fs->bsize);
	if (!blk)
		return -ENOMEM;
	int err = 0;
	/* from the root (level 0) down to the leaf's parent */
	for (unsigned l = 0; l < k && block_of(a) && !err; l++) {
		if (!lfs_addr_valid(fs, a)) {
			err = -EFSCORRUPTED;
			break;
		}
		if ((err = rf_read(rf, a, blk)))
			break;
		uint64_t child = idx;
		for (unsigned j = l + 1; j < k; j++)
			child /= fs->nptr;
		a = lfs_get64(blk + 8 * (child % fs->nptr));
	}
	free(blk);
	a = block_of(a);
	if (!err && a && !lfs_addr_valid(fs, a))
		err = -EFSCORRUPTED;
	if (!err)
		*out = a;
	return err;
}

int
lfs_rf_account_leaf(struct lfs_rf *rf, const struct lfs_dinode *old, uint64_t from, uint64_t to, uint64_t id)
{
	rf->nops = 0;
	unsigned k = lfs_node_tree(id);
	int err = diff_node(rf, old, from, to, k, k, lfs_node_idx(id));
	u64map_free(&rf->seen);
	u64map_init(&rf->seen);
	if (!err)
		apply_ops(rf);
	return err;
}
