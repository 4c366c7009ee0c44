/*
 * check_seg.c — the segment writer and the segment usage table (seg.c):
 * where appended blocks land and when a pseg is written, how inode
 * records are packed by their usage charge (RECORD_CHARGE), when the log
 * head moves to another segment and what it does when none is clean, and
 * the usage table's counts: clamped use/unuse, segment states, the
 * freeable list the next checkpoint empties, and the clean blocks left.
 */
#include "testfs.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#define MIB (1ull << 20)

/* The running counts seg.c keeps must be what a scan of the segments
 * gives, and every freeable segment must be on the list the checkpoint
 * walks: they are what admission and the cleaner decide by. */
static void
counts_agree(const struct lfs_fs *fs)
{
	uint64_t clean = 0, live = 0, freeable = 0;
	for (uint64_t s = 0; s < fs->sb.nsegs; s++) {
		const struct lfs_seginfo *si = &fs->segs[s];
		bool f = si->state == LFS_SEG_DIRTY && !si->live_bytes && !si->meta_blocks;
		clean += si->state == LFS_SEG_CLEAN;
		live += si->live_bytes + (uint64_t)si->meta_blocks * fs->bsize;
		freeable += f;
		ck_assert_msg(!f || si->listed, "segment %llu freeable but not listed", (unsigned long long)s);
	}
	ck_assert_uint_eq(fs->nclean, clean);
	ck_assert_uint_eq(fs->live_total, live);
	ck_assert_uint_eq(fs->nfreeable, freeable);
	ck_assert_uint_eq(lfs_seg_freeable(fs), freeable);
}

/* Append one DATA block of pattern `seed` owned by (ino 999, lblk). */
static uint64_t
append_data(struct lfs_fs *fs, uint64_t lblk, unsigned seed)
{
	uint8_t blk[4096];
	fill_pattern(blk, sizeof(blk), seed);
	uint64_t addr = 0;
	ck_assert_int_eq(lfs_seg_append(fs, LFS_BK_DATA, 999, 1, lblk, blk, &addr), 0);
	return addr;
}

/* Append single blocks until the open pseg is the first of a segment;
 * leaves that pseg open with its one block. */
static void
head_to_segment_start(struct lfs_fs *fs)
{
	for (unsigned i = 0; i < 64; i++) {
		append_data(fs, i, i);
		if (fs->pstart == lfs_seg_first_block(fs, fs->cur_seg))
			return;
		ck_assert_int_eq(lfs_seg_end_group(fs), 0);
	}
	ck_abort_msg("the log head never reached a new segment");
}

static void
read_summary(struct lfs_fs *fs, uint64_t addr, struct lfs_pseg_hdr *h, uint8_t *sum)
{
	ck_assert_int_eq(lfs_bdev_read(&fs->dev, addr, 1, sum), 0);
	ck_assert_int_eq(lfs_pseg_verify(sum, fs->bsize, fs->seed), 0);
	lfs_pseg_hdr_decode(h, sum);
}

/* A block's address is final when it is appended: the summary comes
 * first, the blocks follow it, and reads find them in the buffer before
 * the pseg is written (block maps point at them at once).  The end of
 * the group writes one pseg that names every block with its crc and
 * carries LFS_PSEG_END, which roll-forward needs to apply the group. */
START_TEST(append_places_blocks_after_summary)
{
	testfs_make(64 * MIB, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_uint_eq(fs->pstart, 0);
	uint64_t seg = fs->cur_seg, off = fs->cur_off, seq = fs->pseg_seq;
	uint64_t clean0 = lfs_seg_clean_blocks(fs), written0 = fs->dev.bytes_written;
	uint64_t base = lfs_seg_first_block(fs, seg) + off;
	uint64_t addr[3];
	for (unsigned i = 0; i < 3; i++)
		addr[i] = append_data(fs, 10 + i, 100 + i);
	ck_assert_uint_eq(fs->pstart, base);
	for (unsigned i = 0; i < 3; i++)
		ck_assert_uint_eq(addr[i], base + 1 + i);
	/* a summary and three blocks are taken from the clean space */
	ck_assert_uint_eq(lfs_seg_clean_blocks(fs), clean0 - 4);
	uint8_t want[4096], got[4096];
	fill_pattern(want, sizeof(want), 101);
	ck_assert_int_eq(lfs_read_block(fs, addr[1], got), 0);
	ck_assert(memcmp(got, want, sizeof(got)) == 0);
	ck_assert_uint_eq(fs->dev.bytes_written, written0);

	ck_assert_int_eq(lfs_seg_end_group(fs), 0);
	ck_assert_uint_eq(fs->dev.bytes_written, written0 + 4 * 4096);
	ck_assert_uint_eq(fs->pstart, 0);
	ck_assert_uint_eq(fs->cur_seg, seg);
	ck_assert_uint_eq(fs->cur_off, off + 4);
	ck_assert_uint_eq(fs->pseg_seq, seq + 1);
	ck_assert_uint_eq(lfs_seg_clean_blocks(fs), clean0 - 4);
	uint8_t sum[4096];
	struct lfs_pseg_hdr h;
	read_summary(fs, base, &h, sum);
	ck_assert_uint_eq(h.nblocks, 3);
	ck_assert_uint_eq(h.flags, LFS_PSEG_END);
	ck_assert_uint_eq(h.seq, seq);
	ck_assert_uint_eq(h.next_seg, fs->next_seg);
	for (unsigned i = 0; i < 3; i++) {
		struct lfs_pseg_entry e;
		lfs_pseg_entry_decode(&e, sum, i);
		fill_pattern(want, sizeof(want), 100 + i);
		ck_assert_uint_eq(e.kind, LFS_BK_DATA);
		ck_assert_uint_eq(e.ino, 999);
		ck_assert_uint_eq(e.version, 1);
		ck_assert_uint_eq(e.lblk, 10 + i);
		ck_assert_uint_eq(e.crc, lfs_crc(fs->seed, want, sizeof(want)));
	}
	/* from the disk now, checked against that summary */
	ck_assert_int_eq(lfs_read_block(fs, addr[2], got), 0);
	ck_assert(memcmp(got, want, sizeof(got)) == 0);
	/* an empty group writes nothing */
	ck_assert_int_eq(lfs_seg_end_group(fs), 0);
	ck_assert_uint_eq(fs->dev.bytes_written, written0 + 4 * 4096);
	ck_assert_uint_eq(fs->cur_off, off + 4);
	testfs_finish(fs);
}
END_TEST

/* A summary of a 4 KiB block names at most 168 blocks ((4096 - 64) /
 * 24): the 169th opens a new pseg, and the full one is closed without
 * LFS_PSEG_END (the group goes on) and queued: it reaches the disk at the
 * end of the group, or when the queue is written out (writeout.c).  A pseg never crosses its segment:
 * one that fills the segment's tail is written, and the next block goes
 * to the segment named as next, after its own summary, while the one
 * left becomes DIRTY and a clean one is chosen to follow. */
START_TEST(pseg_limits_and_segment_change)
{
	testfs_make(64 * MIB, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t seg = fs->cur_seg, next = fs->next_seg, off = fs->cur_off;
	ck_assert_uint_lt(off + 1 + 168 + 2, 256);
	uint64_t first = lfs_seg_first_block(fs, seg), nclean = fs->nclean, since = fs->segs_since_ckpt;
	for (unsigned i = 0; i < 168; i++)
		append_data(fs, i, i);
	ck_assert_uint_eq(fs->pn, 168);
	uint64_t a = append_data(fs, 168, 168);
	ck_assert_uint_eq(a, first + off + 169 + 1);
	ck_assert_uint_eq(fs->cur_off, off + 169);
	ck_assert_uint_eq(fs->pn, 1);
	uint64_t written = fs->dev.bytes_written;
	ck_assert_int_eq(lfs_writeout(fs, false), 0);
	ck_assert_uint_eq(fs->dev.bytes_written, written + 169 * 4096);
	uint8_t sum[4096];
	struct lfs_pseg_hdr h;
	read_summary(fs, first + off, &h, sum);
	ck_assert_uint_eq(h.nblocks, 168);
	ck_assert_uint_eq(h.flags, 0);

	/* the rest of the segment: the open pseg takes all but its summary */
	uint32_t tail = 256 - (uint32_t)(off + 169) - 1;
	for (unsigned i = 1; i < tail; i++)
		append_data(fs, 200 + i, 200 + i);
	ck_assert_uint_eq(fs->pn, tail);
	ck_assert_uint_eq(fs->cur_seg, seg);
	ck_assert_uint_eq(lfs_seg_clean_blocks(fs), nclean * 256);
	a = append_data(fs, 500, 500);
	ck_assert_uint_eq(fs->cur_seg, next);
	ck_assert_uint_eq(a, lfs_seg_first_block(fs, next) + 1);
	ck_assert_uint_eq(fs->segs[seg].state, LFS_SEG_DIRTY);
	ck_assert_uint_eq(fs->segs[next].state, LFS_SEG_ACTIVE);
	/* the successor: the first clean segment after the one left */
	ck_assert_uint_eq(fs->next_seg, seg + 2);
	ck_assert_uint_eq(fs->segs[seg + 2].state, LFS_SEG_ACTIVE);
	ck_assert_uint_eq(fs->nclean, nclean - 1);
	ck_assert_uint_eq(fs->segs_since_ckpt, since + 1);
	ck_assert_int_eq(lfs_writeout(fs, false), 0);
	read_summary(fs, first + off + 169, &h, sum);
	ck_assert_uint_eq(h.nblocks, tail);
	ck_assert_uint_eq(h.next_seg, next);
	counts_agree(fs);
	ck_assert_int_eq(lfs_seg_end_group(fs), 0);
	testfs_finish(fs);
}
END_TEST

/* The writer and every reader of the log agree where it continues: a
 * segment with one block left cannot hold a summary and a block, so the
 * log goes on in the next segment rather than there. */
START_TEST(last_block_of_segment_is_skipped)
{
	testfs_make(4 * MIB, 32768);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_uint_eq(fs->sb.seg_blocks, 8);
	head_to_segment_start(fs);
	ck_assert_int_eq(lfs_seg_end_group(fs), 0);
	ck_assert_uint_eq(fs->cur_off, 2);
	for (unsigned i = 0; i < 4; i++)
		append_data(fs, i, i);
	ck_assert_int_eq(lfs_seg_end_group(fs), 0);
	ck_assert_uint_eq(fs->cur_off, 7);
	ck_assert(!lfs_seg_has_room(fs, 7));
	ck_assert(lfs_seg_has_room(fs, 6));
	/* the last block of the segment is not counted as clean space */
	uint64_t seg = fs->cur_seg, next = fs->next_seg;
	ck_assert_uint_eq(lfs_seg_clean_blocks(fs), fs->nclean * 8 + 1);
	uint64_t a = append_data(fs, 9, 9);
	ck_assert_uint_eq(fs->cur_seg, next);
	ck_assert_uint_eq(a, lfs_seg_first_block(fs, next) + 1);
	ck_assert_uint_eq(fs->segs[seg].state, LFS_SEG_DIRTY);
	ck_assert_int_eq(lfs_seg_end_group(fs), 0);
	counts_agree(fs);
	testfs_finish(fs);
}
END_TEST

/* Set every segment in [from, to) that is CLEAN to `state`; how many. */
static uint64_t
set_clean_segs(struct lfs_fs *fs, uint64_t from, uint64_t to, uint8_t state, uint8_t was)
{
	uint64_t n = 0;
	for (uint64_t s = from; s < to; s++)
		if (fs->segs[s].state == was) {
			lfs_seg_set_state(fs, s, state);
			n++;
		}
	return n;
}

/* The next segment is the first clean one after the current, never a
 * dirty one; with none clean the writer refuses with ENOSPC and keeps
 * its head where it was, so nothing is written over live data. */
START_TEST(no_clean_segment_is_enospc)
{
	testfs_make(4 * MIB, 32768);
	struct lfs_fs *fs = testfs_mount();
	uint64_t nsegs = fs->sb.nsegs, nclean = fs->nclean;
	ck_assert_uint_eq(nsegs, 126);
	ck_assert_uint_eq(fs->cur_seg, 0);
	/* segments 2..9 taken: the pick skips them */
	ck_assert_uint_eq(set_clean_segs(fs, 2, 10, LFS_SEG_DIRTY, LFS_SEG_CLEAN), 8);
	ck_assert_uint_eq(fs->nclean, nclean - 8);
	uint64_t s = 0;
	ck_assert_int_eq(lfs_seg_pick_next(fs, &s), 0);
	ck_assert_uint_eq(s, 10);
	ck_assert_uint_eq(fs->segs[10].state, LFS_SEG_ACTIVE);
	ck_assert_uint_eq(fs->nclean, nclean - 9);
	lfs_seg_set_state(fs, 10, LFS_SEG_CLEAN);

	uint64_t rest = set_clean_segs(fs, 0, nsegs, LFS_SEG_DIRTY, LFS_SEG_CLEAN);
	ck_assert_uint_eq(fs->nclean, 0);
	ck_assert_int_eq(lfs_seg_pick_next(fs, &s), -ENOSPC);
	/* fill the current segment, then ask for one more pseg */
	uint64_t cur = fs->cur_seg;
	int err = 0;
	uint64_t a;
	uint8_t blk[4096] = { 0 };
	for (unsigned i = 0; i < 32 && !err; i++) {
		err = lfs_seg_append(fs, LFS_BK_DATA, 999, 1, i, blk, &a);
		if (!err && fs->cur_seg != cur)
			ck_abort_msg("the head moved with no clean segment");
		if (!err && i % 2)
			err = lfs_seg_end_group(fs);
	}
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_uint_eq(fs->cur_seg, cur);
	ck_assert_uint_eq(fs->pstart, 0);
	ck_assert_uint_eq(lfs_seg_clean_blocks(fs), 8 - fs->cur_off);
	/* given back, the log goes on */
	ck_assert_uint_eq(set_clean_segs(fs, 0, nsegs, LFS_SEG_CLEAN, LFS_SEG_DIRTY), rest + 8);
	ck_assert_uint_eq(fs->nclean, nclean);
	counts_agree(fs);
	append_data(fs, 77, 77);
	ck_assert_uint_ne(fs->cur_seg, cur);
	ck_assert_int_eq(lfs_seg_end_group(fs), 0);
	testfs_finish(fs);
}
END_TEST

/* Records never span blocks, and with RECORD_CHARGE a block is also
 * closed when the usage charges of its records would pass a block:
 * otherwise the table would count more than a block for one INODE
 * block, and roll-forward refuses such blocks.  The charge is a
 * record's share of a block packed with records of its length. */
START_TEST(inode_slots_pack_by_charge)
{
	testfs_make(64 * MIB, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	struct lfs_super sb = fs->sb;
	ck_assert(sb.feature_incompat & LFS_FEATURE_RECORD_CHARGE);
	ck_assert_uint_eq(lfs_inode_charge(&sb, 256), 256);
	ck_assert_uint_eq(lfs_inode_charge(&sb, 512), 512);
	ck_assert_uint_eq(lfs_inode_charge(&sb, 1344), 1365);
	ck_assert_uint_eq(lfs_inode_charge(&sb, 1408), 2048);
	ck_assert_uint_eq(lfs_inode_charge(&sb, 2176), 4096);
	ck_assert_uint_eq(lfs_inode_charge(&sb, 4096), 4096);
	ck_assert_uint_eq(lfs_inode_charge(&sb, 0), 0);
	ck_assert_uint_eq(lfs_inode_charge(&sb, 5000), 5000);
	sb.feature_incompat &= ~LFS_FEATURE_RECORD_CHARGE;
	ck_assert_uint_eq(lfs_inode_charge(&sb, 1408), 1408);

	uint8_t *p;
	uint64_t addr, first = 0;
	uint16_t slot;
	/* sixteen empty records fill a block, 64-byte slots of 4 each */
	for (unsigned i = 0; i < 16; i++) {
		ck_assert_int_eq(lfs_seg_inode_slot(fs, 256, &p, &addr, &slot), 0);
		if (i == 0)
			first = addr;
		ck_assert_uint_eq(addr, first);
		ck_assert_uint_eq(slot, 4 * i);
		ck_assert_ptr_eq(p, fs->pbuf + (addr - fs->pstart) * 4096 + 256 * i);
	}
	ck_assert_uint_eq(fs->iblk_charge, 4096);
	ck_assert_int_eq(lfs_seg_inode_slot(fs, 256, &p, &addr, &slot), 0);
	ck_assert_uint_eq(addr, first + 1);
	ck_assert_uint_eq(slot, 0);
	uint8_t sum[4096];
	struct lfs_pseg_entry e;
	memcpy(sum, fs->pbuf, sizeof(sum));
	lfs_pseg_entry_decode(&e, sum, (uint32_t)(addr - fs->pstart - 1));
	ck_assert_uint_eq(e.kind, LFS_BK_INODE);

	/* a written pseg closes its INODE block */
	ck_assert_int_eq(lfs_seg_end_group(fs), 0);
	/* 2,176 + 1,408 + 512 bytes fit a block, but charge 4096 + 2048 + 512 */
	uint64_t a1, a2, a3;
	uint16_t s1, s2, s3;
	ck_assert_int_eq(lfs_seg_inode_slot(fs, 2176, &p, &a1, &s1), 0);
	ck_assert_int_eq(lfs_seg_inode_slot(fs, 1408, &p, &a2, &s2), 0);
	ck_assert_int_eq(lfs_seg_inode_slot(fs, 512, &p, &a3, &s3), 0);
	ck_assert_uint_eq(a2, a1 + 1);
	ck_assert_uint_eq(a3, a2);
	ck_assert_uint_eq(s1, 0);
	ck_assert_uint_eq(s2, 0);
	ck_assert_uint_eq(s3, 22);
	ck_assert_uint_eq(fs->iblk_charge, 2560);
	ck_assert_int_eq(lfs_seg_end_group(fs), 0);

	/* without the feature only the bytes count: one block, then a new one */
	fs->sb.feature_incompat &= ~LFS_FEATURE_RECORD_CHARGE;
	ck_assert_int_eq(lfs_seg_inode_slot(fs, 2176, &p, &a1, &s1), 0);
	ck_assert_int_eq(lfs_seg_inode_slot(fs, 1408, &p, &a2, &s2), 0);
	ck_assert_int_eq(lfs_seg_inode_slot(fs, 512, &p, &a3, &s3), 0);
	ck_assert_uint_eq(a2, a1);
	ck_assert_uint_eq(a3, a1);
	ck_assert_uint_eq(s2, 34);
	ck_assert_uint_eq(s3, 56);
	ck_assert_int_eq(lfs_seg_inode_slot(fs, 256, &p, &addr, &slot), 0);
	ck_assert_uint_eq(addr, a1 + 1);
	ck_assert_uint_eq(slot, 0);
	fs->sb.feature_incompat |= LFS_FEATURE_RECORD_CHARGE;
	ck_assert_int_eq(lfs_seg_end_group(fs), 0);
	testfs_finish(fs);
}
END_TEST

/* Usage changes keep the running counts; a count may pass the
 * segment's size on the way (roll-forward counts new blocks before the
 * old ones they replace) and nothing of it is lost, but what is left
 * past it is settled to the size (a crafted log must not make the next
 * checkpoint unmountable), and a count stops at zero; use of a clean
 * segment makes it DIRTY; a
 * segment whose last byte is freed stays DIRTY until the next
 * checkpoint commits (the previous one may still read it), then is
 * CLEAN.  Addresses outside the log change nothing. */
START_TEST(usage_settles_and_frees_after_checkpoint)
{
	testfs_make(64 * MIB, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t s = fs->sb.nsegs - 1, nclean = fs->nclean, live = fs->live_total;
	uint64_t at = lfs_seg_first_block(fs, s) + 3;
	ck_assert_uint_eq(fs->segs[s].state, LFS_SEG_CLEAN);
	ck_assert_uint_eq(lfs_seg_freeable(fs), 0);
	lfs_seg_use(fs, at, 1000);
	ck_assert_uint_eq(fs->segs[s].live_bytes, 1000);
	ck_assert_uint_eq(fs->segs[s].state, LFS_SEG_DIRTY);
	ck_assert_uint_eq(fs->nclean, nclean - 1);
	ck_assert_uint_eq(fs->live_total, live + 1000);
	lfs_seg_use(fs, at, 2 << 20);
	ck_assert_uint_eq(fs->segs[s].live_bytes, 1000 + (2 << 20));
	lfs_seg_unuse(fs, at, 2 << 20);
	ck_assert_uint_eq(fs->segs[s].live_bytes, 1000);
	lfs_seg_use(fs, at, 2 << 20);
	lfs_seg_fit_usage(fs, s);
	ck_assert_uint_eq(fs->segs[s].live_bytes, 1048576);
	ck_assert_uint_eq(fs->live_total, live + 1048576);
	lfs_seg_fit_usage(fs, s);
	ck_assert_uint_eq(fs->segs[s].live_bytes, 1048576);
	lfs_seg_unuse(fs, at, 1048576 - 500);
	ck_assert_uint_eq(fs->segs[s].live_bytes, 500);
	ck_assert_uint_eq(lfs_seg_freeable(fs), 0);
	lfs_seg_unuse(fs, at, 2000);
	ck_assert_uint_eq(fs->segs[s].live_bytes, 0);
	ck_assert_uint_eq(fs->live_total, live);
	ck_assert_uint_eq(lfs_seg_freeable(fs), 1);
	ck_assert_uint_eq(fs->segs[s].state, LFS_SEG_DIRTY);
	ck_assert_uint_eq(fs->nclean, nclean - 1);
	counts_agree(fs);

	/* not in the log: the superblock, before segment 0, past the end */
	uint64_t end = fs->sb.seg0 + fs->sb.nsegs * 256;
	uint64_t bad[] = { 0, fs->sb.seg0 - 1, end, end + 1000 };
	for (unsigned i = 0; i < 4; i++) {
		lfs_seg_use(fs, bad[i], 4096);
		lfs_seg_unuse(fs, bad[i], 4096);
	}
	ck_assert_uint_eq(fs->live_total, live);
	counts_agree(fs);

	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_eq(fs->segs[s].state, LFS_SEG_CLEAN);
	ck_assert_uint_eq(fs->nclean, nclean);
	ck_assert_uint_eq(lfs_seg_freeable(fs), 0);
	counts_agree(fs);
	testfs_finish(fs);
}
END_TEST

/* A segment is listed for the checkpoint once however often it becomes
 * freeable; one that stopped being freeable (a table block landed in
 * it) is only unlisted by the checkpoint, not freed. */
START_TEST(freeable_list_and_recount)
{
	testfs_make(64 * MIB, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t s = 20, nclean = fs->nclean, live = fs->live_total, listed = fs->nlisted;
	ck_assert_uint_eq(fs->segs[s].state, LFS_SEG_CLEAN);
	lfs_seg_set_state(fs, s, LFS_SEG_DIRTY);
	ck_assert_uint_eq(lfs_seg_freeable(fs), 1);
	ck_assert_uint_eq(fs->nlisted, listed + 1);
	lfs_seg_set_state(fs, s, LFS_SEG_CLEAN);
	ck_assert_uint_eq(lfs_seg_freeable(fs), 0);
	lfs_seg_set_state(fs, s, LFS_SEG_DIRTY);
	ck_assert_uint_eq(lfs_seg_freeable(fs), 1);
	ck_assert_uint_eq(fs->nlisted, listed + 1);
	ck_assert_uint_eq(fs->nclean, nclean - 1);

	uint64_t at = lfs_seg_first_block(fs, s);
	lfs_seg_meta(fs, at, +1);
	ck_assert_uint_eq(fs->segs[s].meta_blocks, 1);
	ck_assert_uint_eq(fs->live_total, live + 4096);
	ck_assert_uint_eq(lfs_seg_freeable(fs), 0);
	counts_agree(fs);
	lfs_seg_ckpt_begin(fs);
	lfs_seg_after_checkpoint(fs);
	ck_assert_uint_eq(fs->segs[s].state, LFS_SEG_DIRTY);
	ck_assert_uint_eq(fs->segs[s].listed, 0);
	ck_assert_uint_eq(fs->nlisted, 0);
	ck_assert_uint_eq(fs->segs_since_ckpt, 0);

	/* freeable only after a checkpoint's tables were written: its
	 * commit keeps it (the tables may reference it), the next frees it */
	lfs_seg_ckpt_begin(fs);
	lfs_seg_meta(fs, at, -1);
	ck_assert_uint_eq(lfs_seg_freeable(fs), 1);
	ck_assert_uint_eq(fs->nlisted, 1);
	lfs_seg_after_checkpoint(fs);
	ck_assert_uint_eq(fs->segs[s].state, LFS_SEG_DIRTY);
	ck_assert_uint_eq(fs->segs[s].listed, 1);
	ck_assert_uint_eq(fs->nlisted, 1);
	ck_assert_uint_eq(lfs_seg_freeable(fs), 1);
	/* an abandoned checkpoint frees nothing */
	lfs_seg_ckpt_begin(fs);
	ck_assert_uint_eq(fs->segs[s].ckpt_frees, 1);
	lfs_seg_ckpt_abort(fs);
	ck_assert_uint_eq(fs->segs[s].ckpt_frees, 0);
	lfs_seg_after_checkpoint(fs);
	ck_assert_uint_eq(fs->segs[s].state, LFS_SEG_DIRTY);
	lfs_seg_ckpt_begin(fs);
	lfs_seg_after_checkpoint(fs);
	ck_assert_uint_eq(fs->segs[s].state, LFS_SEG_CLEAN);
	ck_assert_uint_eq(fs->nclean, nclean);
	ck_assert_uint_eq(fs->live_total, live);
	counts_agree(fs);
	testfs_finish(fs);
}
END_TEST

/* Error returns: a read outside the log is corruption (a pointer in a
 * damaged record must not read the superblock or past the device), and
 * after a failure the writer appends nothing and reports the failure. */
START_TEST(errors)
{
	testfs_make(64 * MIB, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint8_t blk[4096];
	uint64_t end = fs->sb.seg0 + fs->sb.nsegs * 256;
	ck_assert_int_eq(lfs_read_block(fs, 0, blk), -EFSCORRUPTED);
	ck_assert_int_eq(lfs_read_block(fs, fs->sb.seg0 - 1, blk), -EFSCORRUPTED);
	ck_assert_int_eq(lfs_read_block(fs, end, blk), -EFSCORRUPTED);
	ck_assert_int_eq(lfs_read_block(fs, lfs_imap_get(fs, LFS_ROOT_INO)->daddr, blk), 0);

	uint64_t off = fs->cur_off, a = 0;
	fs->fatal = -EIO;
	ck_assert_int_eq(lfs_seg_append(fs, LFS_BK_DATA, 999, 1, 0, blk, &a), -EIO);
	ck_assert_int_eq(lfs_seg_end_group(fs), -EIO);
	uint8_t *p;
	uint16_t slot;
	ck_assert_int_eq(lfs_seg_inode_slot(fs, 256, &p, &a, &slot), -EIO);
	ck_assert_uint_eq(fs->pstart, 0);
	ck_assert_uint_eq(fs->pn, 0);
	ck_assert_uint_eq(fs->cur_off, off);
	fs->fatal = 0;
	testfs_finish(fs);
}
END_TEST

/* The counts a mount makes from the checkpoint (lfs_seg_load_done) are
 * those a scan of the table gives, and the mount sets only the segments
 * the checkpoint names: on a 1 TiB image holding one file, most pages of
 * the million-entry table are never touched. */
START_TEST(mount_counts_only_segments_in_use)
{
	/* glibc's own threshold, fixed: freeing the first mount's table
	 * would raise it past the table's size, and the second mount's
	 * table would come from the heap, zeroed by touching it (a daemon
	 * mounts once: its table is always fresh from the kernel).  A
	 * sanitizer's allocator refuses the call and needs none: it maps
	 * large blocks afresh each time. */
	(void)mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	/* no transparent huge pages for this process, whatever the host's
	 * setting: a touched entry then makes its own 4 KiB page resident,
	 * not the 2 MiB around it, and khugepaged fills in nothing
	 * untouched; the pages resident are those the code touched */
	ck_assert_int_eq(prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0), 0);
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(1ull << 40, 1 << 20, 300, &ino);
	uint64_t clean = fs->nclean, live = fs->live_total;
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	size_t npages, resident = testfs_resident(fs->segs, fs->sb.nsegs * sizeof(*fs->segs), &npages);
	ck_assert_msg(resident * 4 < npages, "%zu of the table's %zu pages resident after the mount", resident,
		      npages);
	/* a mount differs from the unmounted state only by the two segments
	 * it makes active, which were clean or dirty either way */
	ck_assert_uint_le(clean - fs->nclean, 2);
	ck_assert_uint_eq(fs->live_total, live);
	counts_agree(fs);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("seg", "segments", 60, append_places_blocks_after_summary, pseg_limits_and_segment_change,
	   last_block_of_segment_is_skipped, no_clean_segment_is_enospc, inode_slots_pack_by_charge,
	   usage_settles_and_frees_after_checkpoint, freeable_list_and_recount, mount_counts_only_segments_in_use,
	   errors)
