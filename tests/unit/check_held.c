/*
 * check_held.c — blocks held for retained checkpoints (held.c), by direct
 * calls on a table of the test's own (check_retain.c goes through the
 * filesystem): a location the live
 * tree lets go of is held only while a retained checkpoint references
 * it, and then its bytes stay counted; a checkpoint reads it where the
 * cleaner moved it; a copy the live tree uses serves both, counted once;
 * releasing gives each unit's count back once, when no retained
 * checkpoint needs it; the entries come back from the log as written.
 */
#include "testfs.h"

#include "held.h"

#include <errno.h>
#include <string.h>

#define SEG (256u << 10)

static uint64_t
live_of(struct lfs_fs *fs, uint64_t addr)
{
	return fs->segs[lfs_addr_seg(fs, addr)].live_bytes;
}

/* A drop as the live tree will make it: uncounted unless held. */
static bool
drop(struct lfs_fs *fs, struct lfs_held *h, uint64_t addr, uint64_t until)
{
	bool keep;
	ck_assert_int_eq(lfs_held_drop(fs, h, addr, 0, 4096, LFS_BK_DATA, 0, until, &keep), 0);
	if (!keep)
		lfs_seg_unuse(fs, addr, 4096);
	return keep;
}

/* File "a" (4 blocks) written before checkpoint c1, "b" (4) after it:
 * with c1 retained, a's blocks are held when dropped, b's are not; with
 * nothing retained, nothing is; releasing once c1 is no longer retained
 * gives a's counts back, once each. */
START_TEST(held_while_retained)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(32ull << 20, SEG, 4, &a);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t c1 = fs->ckpt_seq;
	uint64_t b = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	static uint8_t buf[4 * 4096];
	fill_pattern(buf, sizeof(buf), 5);
	ck_assert_int_eq(lfs_write(fs, b, buf, sizeof(buf), 0, NULL), (ssize_t)sizeof(buf));
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t until = fs->ckpt_seq + 1;
	uint64_t a0 = testfs_addr_of(fs, a, 0), a1 = testfs_addr_of(fs, a, 1), b0 = testfs_addr_of(fs, b, 0);

	struct lfs_held h;
	ck_assert_int_eq(lfs_held_init(&h, fs), 0);
	/* nothing retained: never held */
	uint64_t before = live_of(fs, a0);
	ck_assert(!drop(fs, &h, a0, until));
	ck_assert_uint_eq(live_of(fs, a0), before - 4096);
	ck_assert_uint_eq(h.count, 0);
	lfs_seg_use(fs, a0, 4096); /* as it was */

	uint64_t keep_list[] = { c1 };
	ck_assert_int_eq(lfs_held_set_retained(&h, keep_list, 1), 0);
	before = live_of(fs, a0);
	ck_assert(drop(fs, &h, a0, until));
	ck_assert(drop(fs, &h, a1, until));
	ck_assert_uint_eq(live_of(fs, a0), before);
	ck_assert_uint_eq(h.count, 2);
	ck_assert(lfs_held_at(&h, a0));
	ck_assert_uint_eq(lfs_held_translate(&h, a0, c1), a0);
	/* born after c1: c1 never read it */
	ck_assert(!drop(fs, &h, b0, until));
	ck_assert_uint_eq(h.count, 2);
	/* dropped before the checkpoint after c1 was written: c1 + 1 did
	 * not read it either, so [birth, c1 + 1) holds only c1 */
	ck_assert_uint_eq(h.ent[0].until, until);
	ck_assert(h.ent[0].from <= c1);

	uint64_t freed;
	ck_assert_int_eq(lfs_held_release(fs, &h, &freed), 0);
	ck_assert_uint_eq(freed, 0); /* still retained */
	ck_assert_int_eq(lfs_held_set_retained(&h, NULL, 0), 0);
	before = live_of(fs, a0);
	ck_assert_int_eq(lfs_held_release(fs, &h, &freed), 0);
	ck_assert_uint_eq(freed, 2 * 4096);
	ck_assert_uint_eq(h.count, 0);
	ck_assert_uint_eq(live_of(fs, a0), before - (lfs_addr_seg(fs, a1) == lfs_addr_seg(fs, a0) ? 8192 : 4096));
	ck_assert(!lfs_held_at(&h, a0));
	/* as the live tree had them, for fsck */
	lfs_seg_use(fs, a0, 4096);
	lfs_seg_use(fs, a1, 4096);
	lfs_seg_use(fs, b0, 4096);
	lfs_held_free(fs, &h);
	testfs_finish(fs);
}
END_TEST

/* The cleaner copies a held block whole: c1 reads it at the copy, the
 * count moves with it; a live data block moved by the cleaner is
 * followed at its copy, which the live tree counts (LIVE), and when the
 * live tree later drops the copy it stays, held for c1, counted once. */
START_TEST(moves_and_forwards)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(32ull << 20, SEG, 4, &a);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t c1 = fs->ckpt_seq, until = c1 + 1;
	uint64_t a0 = testfs_addr_of(fs, a, 0), a2 = testfs_addr_of(fs, a, 2);
	struct lfs_held h;
	ck_assert_int_eq(lfs_held_init(&h, fs), 0);
	uint64_t keep_list[] = { c1 };
	ck_assert_int_eq(lfs_held_set_retained(&h, keep_list, 1), 0);
	ck_assert(drop(fs, &h, a0, until));

	/* copied to the last segment, whole */
	uint64_t to = lfs_seg_first_block(fs, fs->sb.nsegs - 1) + 3;
	uint64_t from_live = live_of(fs, a0), to_live = live_of(fs, to);
	ck_assert_int_eq(lfs_held_moved(fs, &h, a0, to), 0);
	ck_assert_uint_eq(live_of(fs, a0), from_live - 4096);
	ck_assert_uint_eq(live_of(fs, to), to_live + 4096);
	ck_assert_uint_eq(lfs_held_translate(&h, a0, c1), to);
	ck_assert_uint_eq(lfs_held_translate(&h, a0, c1 + 1), a0); /* c1 + 1 never held it */
	ck_assert(lfs_held_at(&h, to));
	ck_assert(!lfs_held_at(&h, a0));

	/* a2, live, moved by the cleaner to a copy of the same bytes: a block
	 * written after c1 stands for the copy, counted by the live tree */
	uint64_t b = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	static uint8_t buf[4096];
	ck_assert_int_eq(lfs_write(fs, b, buf, sizeof(buf), 0, NULL), 4096);
	ck_assert_int_eq(lfs_flush(fs), 0);
	uint64_t copy = testfs_addr_of(fs, b, 0);
	ck_assert_int_eq(lfs_held_forward(fs, &h, a2, copy, 4096, until), 0);
	ck_assert_uint_eq(lfs_held_translate(&h, a2, c1), copy);
	ck_assert(!lfs_held_at(&h, copy)); /* the live tree moves its own */
	/* the live tree drops the copy: held for c1 through the forward */
	to_live = live_of(fs, copy);
	ck_assert(drop(fs, &h, copy, until + 5));
	ck_assert_uint_eq(live_of(fs, copy), to_live);
	ck_assert(lfs_held_at(&h, copy));
	/* released: each unit given back once */
	uint64_t freed;
	ck_assert_int_eq(lfs_held_set_retained(&h, NULL, 0), 0);
	ck_assert_int_eq(lfs_held_release(fs, &h, &freed), 0);
	ck_assert_uint_eq(freed, 2 * 4096);
	ck_assert_uint_eq(live_of(fs, copy), to_live - 4096); /* the other unit is at `to` */
	ck_assert_uint_eq(h.count, 0);
	/* as the live tree had them, for fsck: a0's count moved away and
	 * given back at `to`; b's block, which stood for the dropped copy */
	lfs_seg_use(fs, a0, 4096);
	lfs_seg_use(fs, copy, 4096);
	lfs_held_free(fs, &h);
	testfs_finish(fs);
}
END_TEST

/* Two lives of one address (its segment cleaned and reused between
 * them): each checkpoint reads the one it held.  Inode records held in
 * one block are units of their own: releasing one gives back its
 * charge only.  Written at a checkpoint and loaded back, every entry and
 * free slot is as it was. */
START_TEST(lives_records_and_reload)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(32ull << 20, SEG, 4, &a);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t x = testfs_addr_of(fs, a, 1), y = testfs_addr_of(fs, a, 3);
	struct lfs_held h;
	ck_assert_int_eq(lfs_held_init(&h, fs), 0);
	uint64_t keep_list[] = { 3, 9, 20 };
	ck_assert_int_eq(lfs_held_set_retained(&h, keep_list, 3), 0);
	struct lfs_held_entry e1 = { .orig = x, .cur = y, .from = 2, .until = 5, .charge = 4096, .kind = LFS_BK_DATA };
	struct lfs_held_entry e2 = { .orig = x, .cur = x, .from = 8, .until = 12, .charge = 4096, .kind = LFS_BK_DATA };
	/* through the module's own path: load a table holding them */
	struct lfs_ptable t;
	ck_assert_int_eq(lfs_ptable_init(&t, fs, LFS_TABLE_HELD, LFS_HELD_ENTRY_SIZE), 0);
	uint8_t enc[LFS_HELD_ENTRY_SIZE];
	lfs_held_entry_encode(&e1, enc);
	ck_assert_int_eq(lfs_ptable_put(fs, &t, 0, enc), 0);
	lfs_held_entry_encode(&e2, enc);
	ck_assert_int_eq(lfs_ptable_put(fs, &t, 2, enc), 0); /* slot 1 free */
	ck_assert_int_eq(lfs_ptable_write(fs, &t), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(lfs_held_load(fs, &h, t.root_addr, t.nslots), 0);
	ck_assert_uint_eq(h.count, 2);
	ck_assert_uint_eq(h.nfree, 1);
	ck_assert_uint_eq(lfs_held_translate(&h, x, 3), y);
	ck_assert_uint_eq(lfs_held_translate(&h, x, 9), x);
	ck_assert_uint_eq(lfs_held_translate(&h, x, 20), x);
	ck_assert_uint_eq(lfs_held_translate(&h, x, 5), x);

	/* two records of one inode block, held apart */
	uint64_t r = fs->imap_addr[0] ? lfs_imap_get(fs, a)->daddr : 0;
	ck_assert_uint_ne(r, 0);
	struct lfs_held_entry i1 = { .orig = r, .cur = r, .from = 1, .until = 4, .charge = 256, .kind = LFS_BK_INODE, .slot = 0 };
	struct lfs_held_entry i2 = { .orig = r, .cur = r, .from = 1, .until = 10, .charge = 512, .kind = LFS_BK_INODE, .slot = 4 };
	lfs_held_entry_encode(&i1, enc);
	ck_assert_int_eq(lfs_ptable_put(fs, &t, 3, enc), 0);
	lfs_held_entry_encode(&i2, enc);
	ck_assert_int_eq(lfs_ptable_put(fs, &t, 4, enc), 0);
	ck_assert_int_eq(lfs_ptable_write(fs, &t), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	struct lfs_held g;
	ck_assert_int_eq(lfs_held_init(&g, fs), 0);
	ck_assert_int_eq(lfs_held_load(fs, &g, t.root_addr, t.nslots), 0);
	ck_assert_uint_eq(g.count, 4);
	uint64_t only9[] = { 9 };
	ck_assert_int_eq(lfs_held_set_retained(&g, only9, 1), 0);
	/* the loaded entries are counted by the table's own test of counts:
	 * count them here as the checkpoint's usage table would */
	lfs_seg_use(fs, r, 256 + 512);
	lfs_seg_use(fs, y, 4096);
	uint64_t before = live_of(fs, r), freed;
	ck_assert_int_eq(lfs_held_release(fs, &g, &freed), 0);
	/* e1 (2..5) and i1 (1..4) go; e2 (8..12) and i2 (1..10) stay */
	ck_assert_uint_eq(g.count, 2);
	ck_assert_uint_eq(freed, 4096 + 256);
	ck_assert_uint_eq(live_of(fs, r), before - (lfs_addr_seg(fs, y) == lfs_addr_seg(fs, r) ? 4096 + 256 : 256));
	ck_assert(lfs_held_at(&g, r));
	ck_assert_uint_eq(lfs_held_translate(&g, x, 3), x);
	lfs_held_free(fs, &g);
	lfs_held_free(fs, &h);
	lfs_ptable_free(fs, &t);
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

/* An entry that cannot be (an address outside the log, an empty
 * lifetime, a charge of nothing or more than a block) is refused. */
START_TEST(refuses_bad_entries)
{
	testfs_make(32ull << 20, SEG);
	struct lfs_fs *fs = testfs_mount();
	const struct lfs_held_entry bad[] = {
		{ .orig = 1, .cur = fs->sb.seg0, .from = 1, .until = 2, .charge = 4096 },
		{ .orig = fs->sb.seg0, .cur = fs->sb.seg0 + fs->sb.nsegs * fs->sb.seg_blocks, .from = 1, .until = 2, .charge = 4096 },
		{ .orig = fs->sb.seg0, .cur = fs->sb.seg0, .from = 2, .until = 2, .charge = 4096 },
		{ .orig = fs->sb.seg0, .cur = fs->sb.seg0, .from = 1, .until = 2, .charge = 0 },
		{ .orig = fs->sb.seg0, .cur = fs->sb.seg0, .from = 1, .until = 2, .charge = 4097 },
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct lfs_ptable t;
		ck_assert_int_eq(lfs_ptable_init(&t, fs, LFS_TABLE_HELD, LFS_HELD_ENTRY_SIZE), 0);
		uint8_t enc[LFS_HELD_ENTRY_SIZE];
		lfs_held_entry_encode(&bad[k], enc);
		ck_assert_int_eq(lfs_ptable_put(fs, &t, 0, enc), 0);
		ck_assert_int_eq(lfs_ptable_write(fs, &t), 0);
		ck_assert_int_eq(lfs_checkpoint(fs), 0);
		struct lfs_held h;
		ck_assert_int_eq(lfs_held_init(&h, fs), 0);
		ck_assert_msg(lfs_held_load(fs, &h, t.root_addr, 1) == -EFSCORRUPTED, "entry %zu accepted", k);
		lfs_held_free(fs, &h);
		lfs_ptable_free(fs, &t);
	}
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

/* The inode map of a retained checkpoint: where an inode-map block was
 * replaced after it, the held entry gives the block it read; elsewhere
 * the caller's (live) address stays. */
START_TEST(imap_of_a_checkpoint)
{
	testfs_make(32ull << 20, SEG);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t c1 = fs->ckpt_seq, old0 = fs->imap_addr[0];
	ck_assert_uint_ne(old0, 0);
	struct lfs_held h;
	ck_assert_int_eq(lfs_held_init(&h, fs), 0);
	uint64_t keep_list[] = { c1 };
	ck_assert_int_eq(lfs_held_set_retained(&h, keep_list, 1), 0);
	/* the next checkpoint replaces block 0: the drop the checkpoint
	 * will make, until the checkpoint that no longer reads it */
	testfs_mkfile(fs, LFS_ROOT_INO, "x");
	bool keep;
	ck_assert_int_eq(lfs_held_drop(fs, &h, old0, 0, fs->bsize, LFS_BK_IMAP, 0, c1 + 1, &keep), 0);
	ck_assert(keep);
	uint64_t out[4] = { 11, 12, 13, 14 };
	lfs_held_imap_of(&h, c1, out, 4);
	ck_assert_uint_eq(out[0], old0);
	ck_assert_uint_eq(out[1], 12);
	uint64_t later[4] = { 21, 22, 23, 24 };
	lfs_held_imap_of(&h, c1 + 1, later, 4);
	ck_assert_uint_eq(later[0], 21);
	lfs_held_free(fs, &h);
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

CHECK_MAIN("held", "core", 60, held_while_retained, moves_and_forwards, lives_records_and_reload, refuses_bad_entries,
	   imap_of_a_checkpoint)
