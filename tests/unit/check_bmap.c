/*
 * check_bmap.c — the per-inode block map (bmap.c), through its own
 * functions: the geometry of 12 direct pointers and trees of depth 1..4,
 * lookups that never allocate, st_blocks' count of data and nodes,
 * nodes written children first, ranges freed down to the nodes they
 * empty (new nodes not yet linked included), clean nodes dropped and
 * read back, and the walk of the on-disk map that fsck and roll-forward
 * trust, crafted maps refused.  Block size 4096: 512 pointers a node.
 */
#include "testfs.h"

#include <errno.h>
#include <string.h>

/* 12 + 512 + 512^2 + 512^3 + 512^4 */
#define MAX_BLOCKS 68853957132ull
/* the first block of trees 1, 2 and 3 */
#define T1 524ull
#define T2 262668ull
#define T3 134480396ull

static struct lfs_fs *
start(void)
{
	testfs_make(32 << 20, 1 << 20);
	return testfs_mount();
}

static struct lfs_inode *
inode_of(struct lfs_fs *fs, uint64_t ino)
{
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	return ip;
}

/* A new file with one block of pattern `lblk` at each of lblks, logged. */
static struct lfs_inode *
file_with(struct lfs_fs *fs, const char *name, const uint64_t *lblks, size_t n)
{
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, name);
	uint8_t blk[4096];
	for (size_t i = 0; i < n; i++) {
		fill_pattern(blk, sizeof(blk), (unsigned)lblks[i]);
		ck_assert_int_eq(lfs_write(fs, ino, blk, sizeof(blk), (off_t)(lblks[i] * 4096), NULL), 4096);
	}
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	return inode_of(fs, ino);
}

/* Block lblk of ino reads as its pattern, or as zeros when `hole`. */
static void
expect_block(struct lfs_fs *fs, uint64_t ino, uint64_t lblk, bool hole)
{
	uint8_t want[4096], got[4096];
	if (hole)
		memset(want, 0, sizeof(want));
	else
		fill_pattern(want, sizeof(want), (unsigned)lblk);
	ck_assert_int_eq(lfs_read(fs, ino, got, sizeof(got), (off_t)(lblk * 4096)), 4096);
	ck_assert_msg(memcmp(got, want, sizeof(got)) == 0, "block %llu differs", (unsigned long long)lblk);
}

static uint64_t
addr_of(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk)
{
	uint64_t addr = 1;
	ck_assert_int_eq(lfs_bmap_get(fs, ip, lblk, &addr), 0);
	return addr;
}

static struct lfs_node *
cached(struct lfs_inode *ip, unsigned k, unsigned l, uint64_t i)
{
	return u64map_get(&ip->nodes, lfs_node_id(k, l, i));
}

static void
set(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, uint64_t addr, uint64_t want_old)
{
	uint64_t old = 12345;
	ck_assert_int_eq(lfs_bmap_set(fs, ip, lblk, addr, &old), 0);
	ck_assert_uint_eq(old, want_old);
}

/* The nodes that map a block, leaf first, are fixed by the format: a
 * cleaner or roll-forward names nodes by these ids, and a map that
 * disagreed with lfs_max_file_size would take sizes it cannot address. */
START_TEST(geometry)
{
	static struct lfs_fs g;
	g.nptr = 512;
	ck_assert_uint_eq(lfs_bmap_max_blocks(&g), MAX_BLOCKS);
	ck_assert_uint_eq(lfs_bmap_max_blocks(&g) * 4096, lfs_max_file_size(4096));
	uint64_t ids[LFS_NINDIRECT];
	ck_assert_uint_eq(lfs_bmap_path(&g, 0, ids), 0);
	ck_assert_uint_eq(lfs_bmap_path(&g, 11, ids), 0);
	ck_assert_uint_eq(lfs_bmap_path(&g, 12, ids), 1);
	ck_assert_uint_eq(ids[0], lfs_node_id(0, 0, 0));
	ck_assert_uint_eq(lfs_bmap_path(&g, 523, ids), 1);
	ck_assert_uint_eq(ids[0], lfs_node_id(0, 0, 0));
	ck_assert_uint_eq(lfs_bmap_path(&g, T1, ids), 2);
	ck_assert_uint_eq(ids[0], lfs_node_id(1, 1, 0));
	ck_assert_uint_eq(ids[1], lfs_node_id(1, 0, 0));
	ck_assert_uint_eq(lfs_bmap_path(&g, 1036, ids), 2);
	ck_assert_uint_eq(ids[0], lfs_node_id(1, 1, 1));
	ck_assert_uint_eq(lfs_bmap_path(&g, 262667, ids), 2);
	ck_assert_uint_eq(ids[0], lfs_node_id(1, 1, 511));
	ck_assert_uint_eq(lfs_bmap_path(&g, T2, ids), 3);
	ck_assert_uint_eq(ids[0], lfs_node_id(2, 2, 0));
	ck_assert_uint_eq(ids[1], lfs_node_id(2, 1, 0));
	ck_assert_uint_eq(ids[2], lfs_node_id(2, 0, 0));
	ck_assert_uint_eq(lfs_bmap_path(&g, 524812, ids), 3);
	ck_assert_uint_eq(ids[0], lfs_node_id(2, 2, 512));
	ck_assert_uint_eq(ids[1], lfs_node_id(2, 1, 1));
	ck_assert_uint_eq(lfs_bmap_path(&g, T3, ids), 4);
	ck_assert_uint_eq(ids[0], lfs_node_id(3, 3, 0));
	ck_assert_uint_eq(ids[3], lfs_node_id(3, 0, 0));
	ck_assert_uint_eq(lfs_bmap_path(&g, MAX_BLOCKS - 1, ids), 4);
	ck_assert_uint_eq(ids[0], lfs_node_id(3, 3, 134217727));
	ck_assert_uint_eq(ids[1], lfs_node_id(3, 2, 262143));
	ck_assert_uint_eq(ids[2], lfs_node_id(3, 1, 511));
	ck_assert_uint_eq(ids[3], lfs_node_id(3, 0, 0));
	ck_assert_uint_eq(lfs_bmap_path(&g, MAX_BLOCKS, ids), 0);
	/* 1 KiB blocks: 128 pointers, 12 + 128 + 128^2 + 128^3 + 128^4 */
	g.nptr = 128;
	ck_assert_uint_eq(lfs_bmap_max_blocks(&g), 270549132);
	ck_assert_uint_eq(lfs_bmap_path(&g, 140, ids), 2);
	ck_assert_uint_eq(ids[0], lfs_node_id(1, 1, 0));
}
END_TEST

/* Looking up holes, in every tree, allocates no node and leaves the
 * inode clean: a read must never make a record to write.  Past the last
 * tree is -EFBIG, for a lookup and a change alike, and changes nothing. */
START_TEST(holes_allocate_nothing)
{
	struct lfs_fs *fs = start();
	struct lfs_inode *ip = file_with(fs, "f", NULL, 0);
	ck_assert(!ip->dirty);
	uint64_t cn = fs->cache_nodes;
	static const uint64_t holes[] = { 0, 11, 12, 523, T1, T2, T3, MAX_BLOCKS - 1 };
	for (size_t i = 0; i < sizeof(holes) / sizeof(holes[0]); i++)
		ck_assert_uint_eq(addr_of(fs, ip, holes[i]), 0);
	struct lfs_node *n = (struct lfs_node *)1;
	ck_assert_int_eq(lfs_bmap_get_node(fs, ip, lfs_node_id(2, 2, 7), false, &n), 0);
	ck_assert_ptr_null(n);
	uint64_t addr = 7, old = 7;
	ck_assert_int_eq(lfs_bmap_get(fs, ip, MAX_BLOCKS, &addr), -EFBIG);
	ck_assert_int_eq(lfs_bmap_set(fs, ip, MAX_BLOCKS, lfs_seg_first_block(fs, 3), &old), -EFBIG);
	ck_assert_uint_eq(old, 7);
	ck_assert_int_eq(lfs_bmap_free_range(fs, ip, 0, MAX_BLOCKS), 0);
	ck_assert_uint_eq(ip->nodes.count, 0);
	ck_assert_uint_eq(fs->cache_nodes, cn);
	ck_assert_uint_eq(ip->di.blocks, 0);
	ck_assert(!ip->dirty);
	testfs_finish(fs);
}
END_TEST

/* di.blocks (st_blocks) counts each data pointer and each node once:
 * a remap counts nothing, a pointer cleared gives its block back, a
 * block in a deeper tree brings a node per level.  New nodes wait in
 * memory, unlinked, until they are written; freeing every pointer gives
 * every node back.  The addresses are never read: nothing is flushed. */
START_TEST(set_counts_blocks_and_nodes)
{
	struct lfs_fs *fs = start();
	struct lfs_inode *ip = file_with(fs, "f", NULL, 0);
	uint64_t cn = fs->cache_nodes, a = lfs_seg_first_block(fs, fs->sb.nsegs - 1);
	set(fs, ip, 0, a, 0);
	ck_assert_uint_eq(ip->di.blocks, 1);
	ck_assert(ip->dirty);
	set(fs, ip, 0, a + 1, a);
	ck_assert_uint_eq(ip->di.blocks, 1);
	ck_assert_uint_eq(addr_of(fs, ip, 0), a + 1);
	set(fs, ip, T1, a + 2, 0);
	ck_assert_uint_eq(ip->di.blocks, 4);
	ck_assert_uint_eq(ip->nodes.count, 2);
	struct lfs_node *leaf = cached(ip, 1, 1, 0), *root = cached(ip, 1, 0, 0);
	ck_assert_ptr_nonnull(leaf);
	ck_assert_ptr_nonnull(root);
	ck_assert(leaf->dirty && root->dirty);
	ck_assert_uint_eq(leaf->addr, 0);
	ck_assert_uint_eq(ip->di.ind[1], 0);
	set(fs, ip, T1 + 1, a + 3, 0);
	ck_assert_uint_eq(ip->di.blocks, 5);
	ck_assert_uint_eq(ip->nodes.count, 2);
	set(fs, ip, T2, a + 4, 0);
	ck_assert_uint_eq(ip->di.blocks, 9);
	ck_assert_uint_eq(ip->nodes.count, 5);
	ck_assert_uint_eq(fs->cache_nodes, cn + 5);
	ck_assert_uint_eq(addr_of(fs, ip, T1), a + 2);
	ck_assert_uint_eq(addr_of(fs, ip, T1 + 1), a + 3);
	ck_assert_uint_eq(addr_of(fs, ip, T1 + 2), 0);
	ck_assert_uint_eq(addr_of(fs, ip, T2), a + 4);
	set(fs, ip, T1, 0, a + 2);
	ck_assert_uint_eq(ip->di.blocks, 8);
	set(fs, ip, 0, 0, a + 1);
	set(fs, ip, T1 + 1, 0, a + 3);
	set(fs, ip, T2, 0, a + 4);
	ck_assert_uint_eq(ip->di.blocks, 5); /* the nodes alone */
	ck_assert_int_eq(lfs_bmap_free_range(fs, ip, 0, MAX_BLOCKS), 0);
	ck_assert_uint_eq(ip->di.blocks, 0);
	ck_assert_uint_eq(ip->nodes.count, 0);
	ck_assert_uint_eq(fs->cache_nodes, cn);
	for (unsigned k = 0; k < LFS_NINDIRECT; k++)
		ck_assert_uint_eq(ip->di.ind[k], 0);
	testfs_finish(fs);
}
END_TEST

/* Nodes are written deepest level first, so a parent is logged after
 * its new child and points at the child's new address; a clean sibling
 * is not rewritten; the parent's old copy is counted free, so the usage
 * table gains exactly the child and the parent's new copy less its old. */
START_TEST(flush_writes_children_first)
{
	struct lfs_fs *fs = start();
	static const uint64_t lblks[] = { T1 };
	struct lfs_inode *ip = file_with(fs, "f", lblks, 1);
	struct lfs_node *root = cached(ip, 1, 0, 0), *leaf0 = cached(ip, 1, 1, 0);
	ck_assert_ptr_nonnull(root);
	ck_assert_ptr_nonnull(leaf0);
	uint64_t old_root = ip->di.ind[1], leaf0_addr = leaf0->addr;
	ck_assert_uint_eq(root->addr, old_root);
	ck_assert_uint_eq(root->ptrs[0], leaf0_addr);

	uint8_t blk[4096];
	fill_pattern(blk, sizeof(blk), 1036);
	ck_assert_int_eq(lfs_file_write(fs, ip, LFS_SPACE_WRITE, blk, sizeof(blk), 1036 * 4096), 4096);
	ck_assert_int_eq(lfs_file_flush_pages(fs, ip), 0);
	struct lfs_node *leaf1 = cached(ip, 1, 1, 1);
	ck_assert_ptr_nonnull(leaf1);
	ck_assert(leaf1->dirty);
	ck_assert_uint_eq(root->ptrs[1], 0);
	uint64_t live = fs->live_total;
	ck_assert_int_eq(lfs_bmap_flush_nodes(fs, ip, false), 0);
	ck_assert(!leaf1->dirty && !root->dirty);
	ck_assert(lfs_addr_valid(fs, leaf1->addr));
	ck_assert_uint_eq(root->ptrs[1], leaf1->addr);
	ck_assert_uint_eq(root->ptrs[0], leaf0_addr);
	ck_assert_uint_eq(leaf0->addr, leaf0_addr);
	ck_assert_uint_ne(root->addr, old_root);
	ck_assert_uint_gt(root->addr, leaf1->addr);
	ck_assert_uint_eq(ip->di.ind[1], root->addr);
	ck_assert_uint_eq(fs->live_total, live + 4096);
	ck_assert_uint_eq(ip->di.blocks, 5);
	ck_assert_int_eq(lfs_flush(fs), 0);
	uint64_t ino = ip->ino;
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	expect_block(fs, ino, T1, false);
	expect_block(fs, ino, 1036, false);
	testfs_finish(fs);
}
END_TEST

/* Freeing a range frees exactly its data blocks, gives back each node it
 * empties (a tree's root too, clearing the inode's pointer: the map
 * shrinks) and keeps nodes that still map something; every freed block
 * that was on disk is counted free at once. */
START_TEST(free_range_shrinks)
{
	struct lfs_fs *fs = start();
	static const uint64_t lblks[] = { 0, 12, 13, T1, 1036, T2 };
	struct lfs_inode *ip = file_with(fs, "f", lblks, 6);
	ck_assert_uint_eq(ip->di.blocks, 13); /* 6 data, 1 + 3 + 3 nodes */
	uint64_t live = fs->live_total, ino = ip->ino, ind0 = ip->di.ind[0];

	ck_assert_int_eq(lfs_bmap_free_range(fs, ip, 13, T1), 0);
	ck_assert_uint_eq(ip->di.blocks, 12);
	ck_assert_uint_eq(addr_of(fs, ip, 13), 0);
	ck_assert_uint_ne(addr_of(fs, ip, 12), 0);
	ck_assert_uint_eq(ip->di.ind[0], ind0);

	ck_assert_int_eq(lfs_bmap_free_range(fs, ip, 1036, 1037), 0);
	ck_assert_uint_eq(ip->di.blocks, 10);
	ck_assert_ptr_null(cached(ip, 1, 1, 1));
	struct lfs_node *root = cached(ip, 1, 0, 0);
	ck_assert_ptr_nonnull(root);
	ck_assert_uint_eq(root->ptrs[1], 0);
	ck_assert(root->dirty);
	ck_assert_uint_ne(addr_of(fs, ip, T1), 0);

	ck_assert_int_eq(lfs_bmap_free_range(fs, ip, T2, MAX_BLOCKS), 0);
	ck_assert_uint_eq(ip->di.blocks, 6);
	ck_assert_uint_eq(ip->di.ind[2], 0);
	ck_assert_ptr_null(cached(ip, 2, 0, 0));
	ck_assert_ptr_null(cached(ip, 2, 2, 0));

	ck_assert_int_eq(lfs_bmap_free_range(fs, ip, 0, 1), 0);
	ck_assert_uint_eq(ip->di.direct[0], 0);
	ck_assert_uint_eq(ip->di.blocks, 5);
	ck_assert_uint_eq(fs->live_total, live - 8 * 4096);

	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	expect_block(fs, ino, 12, false);
	expect_block(fs, ino, T1, false);
	expect_block(fs, ino, 0, true);
	expect_block(fs, ino, 13, true);
	expect_block(fs, ino, 1036, true);
	expect_block(fs, ino, T2, true);
	testfs_finish(fs);
}
END_TEST

/* Clean nodes can be dropped from memory and are read back on the next
 * lookup; a dirty node is kept, and while its parent on disk does not
 * name it yet it is still found, and freed, through the cache. */
START_TEST(dropped_and_unlinked_nodes)
{
	struct lfs_fs *fs = start();
	static const uint64_t lblks[] = { T1, 1036 };
	struct lfs_inode *ip = file_with(fs, "f", lblks, 2);
	uint64_t a524 = addr_of(fs, ip, T1), a1036 = addr_of(fs, ip, 1036), cn = fs->cache_nodes;
	ck_assert_uint_eq(ip->nodes.count, 3);
	lfs_bmap_drop_clean_nodes(fs, ip);
	ck_assert_uint_eq(ip->nodes.count, 0);
	ck_assert_uint_eq(fs->cache_nodes, cn - 3);
	ck_assert_uint_eq(addr_of(fs, ip, 1036), a1036);
	ck_assert_uint_eq(ip->nodes.count, 2); /* the root and that leaf only */
	ck_assert_ptr_null(cached(ip, 1, 1, 0));

	/* block 2060: leaf (1,1,3), new, not yet in the root */
	uint8_t blk[4096];
	fill_pattern(blk, sizeof(blk), 2060);
	ck_assert_int_eq(lfs_file_write(fs, ip, LFS_SPACE_WRITE, blk, sizeof(blk), 2060 * 4096), 4096);
	ck_assert_int_eq(lfs_file_flush_pages(fs, ip), 0);
	ck_assert_uint_eq(ip->di.blocks, 7);
	lfs_bmap_drop_clean_nodes(fs, ip);
	ck_assert_uint_eq(ip->nodes.count, 1);
	ck_assert_ptr_nonnull(cached(ip, 1, 1, 3));
	ck_assert_uint_ne(addr_of(fs, ip, 2060), 0);

	uint64_t live = fs->live_total;
	ck_assert_int_eq(lfs_bmap_free_range(fs, ip, 2060, 2061), 0);
	ck_assert_uint_eq(addr_of(fs, ip, 2060), 0);
	ck_assert_ptr_null(cached(ip, 1, 1, 3));
	ck_assert_uint_eq(ip->di.blocks, 5);
	ck_assert_uint_eq(fs->live_total, live - 4096); /* the data; the node never was on disk */
	ck_assert_uint_eq(addr_of(fs, ip, T1), a524);
	ck_assert_uint_eq(addr_of(fs, ip, 1036), a1036);

	ck_assert_int_eq(lfs_flush(fs), 0);
	uint64_t ino = ip->ino;
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	expect_block(fs, ino, T1, false);
	expect_block(fs, ino, 1036, false);
	expect_block(fs, ino, 2060, true);
	testfs_finish(fs);
}
END_TEST

struct seen {
	uint64_t addr[32], lblk[32];
	uint8_t kind[32];
	unsigned n, fail_at;        /* fail_at: the call that returns -EIO (0: none) */
};

static int
record(void *ctx, uint64_t addr, uint8_t kind, uint64_t lblk)
{
	struct seen *s = ctx;
	ck_assert_uint_lt(s->n, 32);
	s->addr[s->n] = addr;
	s->kind[s->n] = kind;
	s->lblk[s->n] = lblk;
	return ++s->n == s->fail_at ? -EIO : 0;
}

static int
walk(struct lfs_fs *fs, const struct lfs_dinode *di, struct seen *s, unsigned fail_at)
{
	memset(s, 0, sizeof(*s));
	s->fail_at = fail_at;
	return lfs_bmap_walk_disk(fs, di, record, s);
}

/* The walk of the on-disk map names every block the inode holds once,
 * in map order, nodes before what they map, each with its logical block
 * or node id, then the xattr root: fsck claims blocks and roll-forward
 * counts usage by it, so its data and node count is st_blocks'. */
START_TEST(walk_lists_every_block)
{
	struct lfs_fs *fs = start();
	static const uint64_t lblks[] = { 0, 11, 12, T1, T2, T3 };
	struct lfs_inode *ip = file_with(fs, "f", lblks, 6);
	ck_assert_int_eq(lfs_setxattr(fs, ip->ino, "user.k", "v", 1, 0), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_ne(ip->di.xattr, 0);

	static const struct { uint8_t kind; uint64_t lblk; } want[] = {
		{ LFS_BK_DATA, 0 }, { LFS_BK_DATA, 11 },
		{ LFS_BK_INDIR, LFS_NODE_FLAG }, { LFS_BK_DATA, 12 },
		{ LFS_BK_INDIR, LFS_NODE_FLAG | 1ull << 56 },
		{ LFS_BK_INDIR, LFS_NODE_FLAG | 1ull << 56 | 1ull << 52 }, { LFS_BK_DATA, T1 },
		{ LFS_BK_INDIR, LFS_NODE_FLAG | 2ull << 56 },
		{ LFS_BK_INDIR, LFS_NODE_FLAG | 2ull << 56 | 1ull << 52 },
		{ LFS_BK_INDIR, LFS_NODE_FLAG | 2ull << 56 | 2ull << 52 }, { LFS_BK_DATA, T2 },
		{ LFS_BK_INDIR, LFS_NODE_FLAG | 3ull << 56 },
		{ LFS_BK_INDIR, LFS_NODE_FLAG | 3ull << 56 | 1ull << 52 },
		{ LFS_BK_INDIR, LFS_NODE_FLAG | 3ull << 56 | 2ull << 52 },
		{ LFS_BK_INDIR, LFS_NODE_FLAG | 3ull << 56 | 3ull << 52 }, { LFS_BK_DATA, T3 },
		{ LFS_BK_XATTR, 0 },
	};
	struct seen s;
	ck_assert_int_eq(walk(fs, &ip->di, &s, 0), 0);
	ck_assert_uint_eq(s.n, 17);
	unsigned data_and_nodes = 0;
	for (unsigned i = 0; i < s.n; i++) {
		ck_assert_msg(s.kind[i] == want[i].kind && s.lblk[i] == want[i].lblk,
			      "call %u: kind %u lblk %#llx", i, s.kind[i], (unsigned long long)s.lblk[i]);
		if (s.kind[i] == LFS_BK_DATA)
			ck_assert_uint_eq(s.addr[i], addr_of(fs, ip, s.lblk[i]));
		if (s.kind[i] == LFS_BK_INDIR && lfs_node_level(s.lblk[i]) == 0)
			ck_assert_uint_eq(s.addr[i], ip->di.ind[lfs_node_tree(s.lblk[i])]);
		data_and_nodes += s.kind[i] != LFS_BK_XATTR;
	}
	ck_assert_uint_eq(s.addr[16], ip->di.xattr);
	ck_assert_uint_eq(ip->di.blocks, 16);
	ck_assert_uint_eq(data_and_nodes, 16);
	/* the caller's error stops the walk there */
	ck_assert_int_eq(walk(fs, &ip->di, &s, 4), -EIO);
	ck_assert_uint_eq(s.n, 4);
	testfs_finish(fs);
}
END_TEST

/* A crafted map is refused, not followed: a node named twice (which
 * would make the walk read it again and again), a pointer outside the
 * log in the record (before any block is reported) or in a node. */
START_TEST(walk_refuses_crafted_maps)
{
	struct lfs_fs *fs = start();
	static const uint64_t lblks[] = { 0, 12, T1 };
	struct lfs_inode *ip = file_with(fs, "f", lblks, 3);
	struct seen s;
	struct lfs_dinode di = ip->di;
	ck_assert_int_eq(walk(fs, &di, &s, 0), 0);
	ck_assert_uint_eq(s.n, 6);
	di.ind[2] = di.ind[1];
	ck_assert_int_eq(walk(fs, &di, &s, 0), -EFSCORRUPTED);
	ck_assert_uint_eq(s.n, 6);
	di = ip->di;
	di.direct[3] = fs->sb.ckpt_addr[0];
	ck_assert_int_eq(walk(fs, &di, &s, 0), -EFSCORRUPTED);
	ck_assert_uint_eq(s.n, 0);

	/* a leaf naming a checkpoint block, logged (in the open pseg) */
	uint64_t old;
	ck_assert_int_eq(lfs_bmap_set(fs, ip, 13, fs->sb.ckpt_addr[0], &old), 0);
	ck_assert_int_eq(lfs_bmap_flush_nodes(fs, ip, false), 0);
	ck_assert_int_eq(walk(fs, &ip->di, &s, 0), -EFSCORRUPTED);
	ck_assert_uint_eq(s.n, 3); /* block 0, the leaf, block 12 */
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

/* A node is counted in di.blocks only once the map holds it: a set that
 * fails for memory at any allocation leaves the count as it was, or the
 * record would claim blocks it has not (fsck: block map unreadable). */
START_TEST(no_memory_counts_nothing)
{
	struct lfs_fs *fs = start();
	struct lfs_inode *ip = inode_of(fs, testfs_mkfile(fs, LFS_ROOT_INO, "f"));
	uint64_t a = lfs_seg_first_block(fs, fs->sb.nsegs - 1), old;
	unsigned failed = 0;
	for (unsigned n = 1; n < 10; n++) {
		char spec[32];
		snprintf(spec, sizeof(spec), "alloc:%u:ENOMEM", n);
		ck_assert_int_eq(lfs_fault_arm(spec), 0);
		int err = lfs_bmap_set(fs, ip, 12, a, &old);
		lfs_fault_disarm();
		if (!err)
			break;
		ck_assert_int_eq(err, -ENOMEM);
		ck_assert_uint_eq(ip->di.blocks, ip->nodes.count);
		failed++;
	}
	ck_assert_uint_ge(failed, 2);
	ck_assert_int_eq(lfs_bmap_set(fs, ip, 12, 0, &old), 0);
	ck_assert_int_eq(lfs_bmap_free_range(fs, ip, 0, lfs_bmap_max_blocks(fs)), 0);
	ck_assert_uint_eq(ip->di.blocks, 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("bmap", "block map", 60, geometry, holes_allocate_nothing, set_counts_blocks_and_nodes,
	   flush_writes_children_first, free_range_shrinks, dropped_and_unlinked_nodes,
	   walk_lists_every_block, walk_refuses_crafted_maps, no_memory_counts_nothing)
