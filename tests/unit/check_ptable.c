/*
 * check_ptable.c — the paged table in the log (ptable.c): slots set in
 * memory come back the same from the log, across more than one index
 * block; a write appends only the changed pages and the index block and
 * root above them, each counted in its segment and uncounted where it
 * was; the cleaner's liveness and re-marking of nodes; and a root,
 * index or slot count that cannot be is refused, not trusted, as are
 * pages a crafted table names more than once or never wrote.
 */
#include "testfs.h"

#include "ptable.h"

#include <errno.h>
#include <string.h>

#define ESIZE 48u

static void
entry_of(uint64_t i, uint8_t *e)
{
	memset(e, 0, ESIZE);
	lfs_put64(e, i * 7 + 1);
	lfs_put64(e + 40, ~i);
}

static uint64_t
meta_total(const struct lfs_fs *fs)
{
	uint64_t n = 0;
	for (uint64_t s = 0; s < fs->sb.nsegs; s++)
		n += fs->segs[s].meta_blocks;
	return n;
}

/* 44,000 slots of 48 bytes: 518 pages, so two index blocks under the
 * root; written, committed by a checkpoint, loaded into a second table:
 * every slot reads back, and every node is counted once where it is. */
START_TEST(roundtrip_two_index_blocks)
{
	testfs_make(64ull << 20, 1u << 20);
	struct lfs_fs *fs = testfs_mount();
	struct lfs_ptable t, u;
	ck_assert_int_eq(lfs_ptable_init(&t, fs, LFS_TABLE_HELD, ESIZE), 0);
	ck_assert_uint_eq(t.per, 85);
	ck_assert_uint_eq(t.fan, 512);
	enum { N = 44000 };
	uint8_t e[ESIZE];
	for (uint64_t i = 0; i < N; i += (i % 1000 == 999) ? 2 : 1) { /* a free slot now and then */
		entry_of(i, e);
		ck_assert_int_eq(lfs_ptable_put(fs, &t, i, e), 0);
	}
	ck_assert_uint_eq(t.nslots, N);
	ck_assert_uint_eq(t.npages, 518);
	ck_assert_uint_eq(t.nidx, 2);
	ck_assert(lfs_ptable_dirty(&t));
	uint64_t meta0 = meta_total(fs);
	ck_assert_int_eq(lfs_ptable_write(fs, &t), 0);
	ck_assert(!lfs_ptable_dirty(&t));
	ck_assert_uint_eq(meta_total(fs) - meta0, 518 + 2 + 1);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);

	ck_assert_int_eq(lfs_ptable_init(&u, fs, LFS_TABLE_HELD, ESIZE), 0);
	meta0 = meta_total(fs);
	ck_assert_int_eq(lfs_ptable_load(fs, &u, t.root_addr, t.nslots), 0);
	ck_assert_uint_eq(meta_total(fs) - meta0, 518 + 2 + 1);
	ck_assert_uint_eq(u.nslots, N);
	for (uint64_t i = 0; i < N; i++) {
		uint8_t want[ESIZE];
		if (i >= 1000 && i % 1000 == 0) /* skipped: free, all zero */
			memset(want, 0, ESIZE);
		else
			entry_of(i, want);
		ck_assert_msg(memcmp(lfs_ptable_get(&u, i), want, ESIZE) == 0, "slot %llu", (unsigned long long)i);
	}
	lfs_ptable_free(fs, &t);
	lfs_ptable_free(fs, &u);
	testfs_finish(fs); /* the nodes no checkpoint names are dead space */
}
END_TEST

/* One slot changed: the next write appends its page, the index block
 * above it and the root, nothing else; the old three are uncounted. The
 * cleaner sees the new nodes live and the old ones dead, and a node it
 * marks is written again at the next write. */
START_TEST(write_follows_changes)
{
	testfs_make(64ull << 20, 1u << 20);
	struct lfs_fs *fs = testfs_mount();
	struct lfs_ptable t;
	ck_assert_int_eq(lfs_ptable_init(&t, fs, LFS_TABLE_HIST, 64), 0);
	uint8_t e[64];
	enum { N = 64 * 600 }; /* 600 pages: two index blocks */
	for (uint64_t i = 0; i < N; i++) {
		memset(e, (int)(i & 0xff), sizeof(e));
		ck_assert_int_eq(lfs_ptable_put(fs, &t, i, e), 0);
	}
	ck_assert_int_eq(lfs_ptable_write(fs, &t), 0);
	uint64_t pages[600], idx0 = t.idx_addr[0], idx1 = t.idx_addr[1], root = t.root_addr;
	memcpy(pages, t.page_addr, sizeof(pages));
	ck_assert_int_eq(lfs_ptable_write(fs, &t), 0); /* nothing changed: nothing written */
	ck_assert_uint_eq(t.root_addr, root);

	memset(e, 0xab, sizeof(e));
	ck_assert_int_eq(lfs_ptable_put(fs, &t, 64 * 550 + 3, e), 0);
	uint64_t meta0 = meta_total(fs);
	ck_assert_int_eq(lfs_ptable_write(fs, &t), 0);
	ck_assert_uint_eq(meta_total(fs), meta0);
	for (unsigned p = 0; p < 600; p++)
		if (p == 550)
			ck_assert_uint_ne(t.page_addr[p], pages[p]);
		else
			ck_assert_uint_eq(t.page_addr[p], pages[p]);
	ck_assert_uint_eq(t.idx_addr[0], idx0);
	ck_assert_uint_ne(t.idx_addr[1], idx1);
	ck_assert_uint_ne(t.root_addr, root);

	ck_assert(lfs_ptable_node_live(&t, lfs_table_node_id(0, 550), t.page_addr[550]));
	ck_assert(!lfs_ptable_node_live(&t, lfs_table_node_id(0, 550), pages[550]));
	ck_assert(lfs_ptable_node_live(&t, lfs_table_node_id(0, 7), pages[7]));
	ck_assert(lfs_ptable_node_live(&t, lfs_table_node_id(1, 0), idx0));
	ck_assert(!lfs_ptable_node_live(&t, lfs_table_node_id(1, 1), idx1));
	ck_assert(lfs_ptable_node_live(&t, lfs_table_node_id(2, 0), t.root_addr));
	ck_assert(!lfs_ptable_node_live(&t, lfs_table_node_id(2, 0), root));
	ck_assert(!lfs_ptable_node_live(&t, lfs_table_node_id(0, 600), pages[7]));
	ck_assert(!lfs_ptable_node_live(&t, lfs_table_node_id(1, 2), idx0));
	ck_assert(!lfs_ptable_node_live(&t, lfs_table_node_id(3, 0), t.root_addr));

	/* the cleaner moves page 7: it, index block 0 and the root are new */
	lfs_ptable_mark_node(&t, lfs_table_node_id(0, 7));
	ck_assert(lfs_ptable_dirty(&t));
	root = t.root_addr;
	ck_assert_int_eq(lfs_ptable_write(fs, &t), 0);
	ck_assert_uint_ne(t.page_addr[7], pages[7]);
	ck_assert_uint_ne(t.idx_addr[0], idx0);
	ck_assert_uint_ne(t.root_addr, root);
	ck_assert_uint_eq(lfs_get64(lfs_ptable_get(&t, 7 * 64)), 0xc0c0c0c0c0c0c0c0ull); /* slot 448 */
	lfs_ptable_free(fs, &t);
	testfs_finish(fs); /* the nodes no checkpoint names are dead space */
}
END_TEST

/* What a crafted checkpoint could name is checked before it is used:
 * slots without a root, more slots than two levels hold, a root that is
 * not a table of addresses in the log, and a root naming an index block
 * past the slots in use are refused with EFSCORRUPTED. */
START_TEST(refuses_what_cannot_be)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, 1u << 20, 4, &a);
	struct lfs_ptable t;
	ck_assert_int_eq(lfs_ptable_init(&t, fs, LFS_TABLE_HELD, ESIZE), 0);
	ck_assert_int_eq(lfs_ptable_load(fs, &t, 0, 0), 0);
	ck_assert_uint_eq(t.nslots, 0);
	ck_assert_int_eq(lfs_ptable_load(fs, &t, 0, 5), -EFSCORRUPTED);
	ck_assert_int_eq(lfs_ptable_load(fs, &t, fs->sb.seg0, 512ull * 512 * 85 + 1), -EFSCORRUPTED);
	/* a data block of pattern bytes: addresses far outside the log */
	ck_assert_int_eq(lfs_ptable_load(fs, &t, testfs_addr_of(fs, a, 0), 10), -EFSCORRUPTED);
	ck_assert_int_eq(lfs_ptable_load(fs, &t, fs->sb.nblocks + 5, 10), -EFSCORRUPTED);

	/* a real root of one index block, loaded as if it had no slots */
	uint8_t e[ESIZE];
	entry_of(3, e);
	ck_assert_int_eq(lfs_ptable_put(fs, &t, 3, e), 0);
	ck_assert_int_eq(lfs_ptable_write(fs, &t), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	struct lfs_ptable u;
	ck_assert_int_eq(lfs_ptable_init(&u, fs, LFS_TABLE_HELD, ESIZE), 0);
	ck_assert_int_eq(lfs_ptable_load(fs, &u, t.root_addr, 0), -EFSCORRUPTED);
	lfs_ptable_free(fs, &u);
	ck_assert_int_eq(lfs_ptable_init(&u, fs, LFS_TABLE_HELD, ESIZE), 0);
	ck_assert_int_eq(lfs_ptable_load(fs, &u, t.root_addr, 4), 0);
	ck_assert(memcmp(lfs_ptable_get(&u, 3), e, ESIZE) == 0);
	lfs_ptable_free(fs, &u);
	lfs_ptable_free(fs, &t);
	testfs_finish(fs); /* the nodes no checkpoint names are dead space */
}
END_TEST

/* Root -> one index block -> the page addresses `pages`, appended to
 * the log as a crafted image would hold them (valid blocks, crcs and
 * all); returns the root's address. */
static uint64_t
craft_table(struct lfs_fs *fs, const uint64_t *pages, unsigned n)
{
	uint8_t blk[4096] = { 0 };
	for (unsigned j = 0; j < n; j++)
		lfs_put64(blk + 8 * j, pages[j]);
	uint64_t idx, root;
	ck_assert_int_eq(lfs_seg_append(fs, LFS_BK_TABLE, LFS_TABLE_HELD, 0, lfs_table_node_id(1, 0), blk, &idx), 0);
	memset(blk, 0, sizeof(blk));
	lfs_put64(blk, idx);
	ck_assert_int_eq(lfs_seg_append(fs, LFS_BK_TABLE, LFS_TABLE_HELD, 0, lfs_table_node_id(2, 0), blk, &root), 0);
	ck_assert_int_eq(lfs_flush(fs), 0);
	return root;
}

/* What a crafted table may make a mount allocate follows the blocks the
 * image holds: one real page named as every page of the slots claimed,
 * or pages under the slots in use never written, are refused before
 * the pages are allocated (once, about a gigabyte for 512 x 512 pages
 * named by one root and one index block). */
START_TEST(refuses_pages_it_does_not_hold)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, 1u << 20, 4, &a);
	struct lfs_ptable t, u;
	ck_assert_int_eq(lfs_ptable_init(&t, fs, LFS_TABLE_HELD, ESIZE), 0);
	uint8_t e[ESIZE];
	entry_of(1, e);
	ck_assert_int_eq(lfs_ptable_put(fs, &t, 0, e), 0);
	ck_assert_int_eq(lfs_ptable_write(fs, &t), 0);
	uint64_t page = t.page_addr[0];
	static uint64_t pages[512];
	for (unsigned j = 0; j < 512; j++)
		pages[j] = page;
	uint64_t root = craft_table(fs, pages, 512);
	ck_assert_int_eq(lfs_ptable_init(&u, fs, LFS_TABLE_HELD, ESIZE), 0);
	ck_assert_int_eq(lfs_ptable_load(fs, &u, root, 512ull * 85), -EFSCORRUPTED);
	ck_assert_uint_eq(u.npages, 0);
	lfs_ptable_free(fs, &u);
	/* the first page written, the second not */
	pages[1] = 0;
	root = craft_table(fs, pages, 2);
	ck_assert_int_eq(lfs_ptable_init(&u, fs, LFS_TABLE_HELD, ESIZE), 0);
	ck_assert_int_eq(lfs_ptable_load(fs, &u, root, 2 * 85), -EFSCORRUPTED);
	lfs_ptable_free(fs, &u);
	/* the same table claiming only the slots of its one page loads */
	ck_assert_int_eq(lfs_ptable_init(&u, fs, LFS_TABLE_HELD, ESIZE), 0);
	ck_assert_int_eq(lfs_ptable_load(fs, &u, root, 85), 0);
	ck_assert(memcmp(lfs_ptable_get(&u, 0), e, ESIZE) == 0);
	lfs_ptable_free(fs, &u);
	lfs_ptable_free(fs, &t);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("ptable", "core", 60, roundtrip_two_index_blocks, write_follows_changes, refuses_what_cannot_be,
	   refuses_pages_it_does_not_hold)
