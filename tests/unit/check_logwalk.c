/*
 * check_logwalk.c — mirrors lfs/log/logwalk.c, the one reader of the log
 * (roll-forward, the cleaner, the read verifier, fsck.lfs and dumplfs all
 * walk through it).  Holds it to where a walk ends and why (logwalk.h):
 * the end of a segment, a summary that does not verify or overruns, a
 * stale pseg left from an earlier use of the segment, and, following
 * from a checkpoint, the sequence, the epoch, the next segment and every
 * block's crc; and holds it to never taking a read error for the end of
 * the log.  One test walks a log a mounted filesystem wrote; the others
 * write summaries by hand into unused segments of a real image, so each
 * rule is met exactly at its boundary.
 */
#include "testfs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#define SEG_BYTES (64u << 10)   /* 16 blocks a segment: a pseg holds at most 15 */
#define SEG_BLOCKS 16u
#define BS 4096u

/* An image opened as the tools open one: device, superblock, seed. */
struct walkimg {
	struct lfs_bdev dev;
	struct lfs_super sb;
	uint32_t seed;
};

static void
walkimg_attach(struct walkimg *m)
{
	struct lfs_super_where where;
	char why[256];
	ck_assert_int_eq(lfs_bdev_open(&m->dev, testfs_path, false), 0);
	ck_assert_int_eq(lfs_super_open(&m->dev, 0, true, &m->sb, &where, why, sizeof(why)), 0);
	ck_assert_uint_eq(m->sb.seg_blocks, SEG_BLOCKS);
	m->seed = lfs_super_seed(&m->sb);
}

static void
walkimg_make(struct walkimg *m)
{
	testfs_make(16u << 20, SEG_BYTES);
	walkimg_attach(m);
}

static void
walkimg_done(struct walkimg *m)
{
	lfs_bdev_close(&m->dev);
	testfs_remove();
}

/* Segments mkfs left untouched (it starts the log at segment 0). */
static uint64_t
spare_seg(const struct walkimg *m, unsigned k)
{
	return m->sb.nsegs - 1 - k;
}

static uint64_t
seg_addr(const struct walkimg *m, uint64_t seg, uint32_t off)
{
	return m->sb.seg0 + seg * SEG_BLOCKS + off;
}

/* What a crafted pseg says; its blocks hold patterns named by where
 * they are, its entries name inode 7 and lblk 100 * off + j. */
struct pspec {
	uint64_t seq, ckpt_seq, next_seg;
	uint32_t nblocks;
};

static unsigned
block_seed(uint64_t seg, uint32_t off, uint32_t j)
{
	return (unsigned)(seg * 1000 + off * 20 + j);
}

static void
read_blk(struct walkimg *m, uint64_t addr, uint8_t *blk)
{
	ck_assert_int_eq(lfs_bdev_read(&m->dev, addr, 1, blk), 0);
}

static void
write_blk(struct walkimg *m, uint64_t addr, const uint8_t *blk)
{
	ck_assert_int_eq(lfs_bdev_write(&m->dev, addr, 1, blk), 0);
}

/* Write a pseg at (seg, off): its summary sealed, and those of its
 * blocks that fit in the segment. */
static void
put_pseg(struct walkimg *m, uint64_t seg, uint32_t off, struct pspec p)
{
	uint8_t sum[BS], blk[BS];
	memset(sum, 0, sizeof(sum));
	struct lfs_pseg_hdr h = {
		.magic = LFS_PSEG_MAGIC, .seq = p.seq, .ckpt_seq = p.ckpt_seq, .timestamp_ns = 1,
		.next_seg = p.next_seg, .nblocks = p.nblocks,
	};
	lfs_pseg_hdr_encode(&h, sum);
	for (uint32_t j = 0; j < p.nblocks && j < lfs_pseg_max_entries(BS); j++) {
		fill_pattern(blk, BS, block_seed(seg, off, j));
		struct lfs_pseg_entry e = {
			.ino = 7, .version = 1, .lblk = 100u * off + j, .crc = lfs_crc(m->seed, blk, BS),
			.kind = LFS_BK_DATA,
		};
		lfs_pseg_entry_encode(&e, sum, j);
		if (off + 1 + j < SEG_BLOCKS)
			write_blk(m, seg_addr(m, seg, off + 1 + j), blk);
	}
	lfs_pseg_seal(sum, BS, m->seed);
	write_blk(m, seg_addr(m, seg, off), sum);
}

/* Change a 32-bit field of the summary at (seg, off), sealed again or not. */
static void
poke_summary(struct walkimg *m, uint64_t seg, uint32_t off, uint32_t field, uint32_t v, bool reseal)
{
	uint8_t sum[BS];
	read_blk(m, seg_addr(m, seg, off), sum);
	lfs_put32(sum + field, v);
	if (reseal)
		lfs_pseg_seal(sum, BS, m->seed);
	write_blk(m, seg_addr(m, seg, off), sum);
}

static unsigned
walk_seg(struct walkimg *m, uint64_t seg, unsigned flags, enum lfs_logwalk_end *end)
{
	return testfs_walk_seg(&m->dev, &m->sb, m->seed, seg, flags, end);
}

/* A log the filesystem wrote after its last checkpoint, followed as
 * roll-forward follows it: psegs carry consecutive sequence numbers from
 * the checkpoint's, its epoch, sit back to back, cross into the segment
 * the last pseg named, and hold every block written, as written. */
START_TEST(follows_a_real_log)
{
	testfs_make(16u << 20, SEG_BYTES);
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	enum { NB = 40 };
	uint8_t *data = malloc((size_t)NB * BS);
	fill_pattern(data, (size_t)NB * BS, 77);
	ck_assert_int_eq(lfs_write(fs, ino, data, (size_t)NB * BS, 0, NULL), (ssize_t)NB * BS);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	lfs_abandon(fs); /* a crash: the log since the checkpoint is all there is */

	struct walkimg m;
	walkimg_attach(&m);
	struct lfs_ckpt_hdr hdr;
	ck_assert_int_eq(lfs_ckpt_read_region(&m.dev, &m.sb, (int)(st.ckpt_seq % 2), &hdr, NULL), 0);
	ck_assert_uint_eq(hdr.ckpt_seq, st.ckpt_seq);
	struct lfs_logwalk w;
	ck_assert_int_eq(lfs_logwalk_init(&w, &m.dev, &m.sb, m.seed, LFS_LOGWALK_BLOCKS), 0);
	ck_assert_uint_eq(w.max_pseg, 15);
	ck_assert_int_eq(lfs_logwalk_follow(&w, hdr.head_seg, hdr.head_off, hdr.next_seg, hdr.next_pseg_seq, hdr.ckpt_seq),
			 0);
	unsigned n = 0, segs = 1, found = 0;
	uint64_t seg = hdr.head_seg;
	uint32_t off = hdr.head_off;
	int r;
	while ((r = lfs_logwalk_next(&w)) > 0) {
		if (w.seg != seg) {
			ck_assert_uint_eq(w.pseg_off, 0);
			segs++;
			seg = w.seg;
			off = 0;
		}
		ck_assert_uint_eq(w.pseg_off, off);
		ck_assert_uint_eq(w.addr, m.sb.seg0 + seg * SEG_BLOCKS + off);
		ck_assert_uint_eq(w.h.seq, hdr.next_pseg_seq + n);
		ck_assert_uint_eq(w.h.ckpt_seq, hdr.ckpt_seq);
		ck_assert(!w.stale);
		for (uint32_t j = 0; j < w.h.nblocks; j++) {
			struct lfs_pseg_entry e;
			lfs_logwalk_entry(&w, j, &e);
			ck_assert(lfs_logwalk_block_ok(&w, j));
			if (e.kind != LFS_BK_DATA || e.ino != ino)
				continue;
			ck_assert_uint_lt(e.lblk, NB);
			ck_assert_mem_eq(lfs_logwalk_block(&w, j), data + e.lblk * BS, BS);
			found++;
		}
		off += 1 + w.h.nblocks;
		n++;
	}
	ck_assert_int_eq(r, 0);
	/* the segments after it were never written */
	ck_assert_int_eq(w.end, LFS_LOGWALK_NO_SUMMARY);
	ck_assert_uint_eq(found, NB);
	ck_assert_uint_ge(segs, 3); /* 40 blocks need three 15-block psegs at least */
	lfs_logwalk_free(&w);
	free(data);
	walkimg_done(&m);
}
END_TEST

/* A segment holds psegs back to back from block 0, and a pseg needs two
 * blocks: with one block left the segment ends there, unread.  A plain
 * walk does not judge blocks (the cleaner reads them to decide); it
 * hands out the entries and the blocks, and says which block fails. */
START_TEST(segment_back_to_back)
{
	struct walkimg m;
	walkimg_make(&m);
	uint64_t s = spare_seg(&m, 0);
	enum lfs_logwalk_end end;
	ck_assert_uint_eq(walk_seg(&m, s, 0, &end), 0);
	ck_assert_int_eq(end, LFS_LOGWALK_NO_SUMMARY);
	ck_assert(lfs_logwalk_has_room(16, 14));
	ck_assert(!lfs_logwalk_has_room(16, 15));

	/* blocks 0..14 in three psegs; block 15 is left over */
	put_pseg(&m, s, 0, (struct pspec){ .seq = 10, .nblocks = 3 });
	put_pseg(&m, s, 4, (struct pspec){ .seq = 11, .nblocks = 5 });
	put_pseg(&m, s, 10, (struct pspec){ .seq = 12, .nblocks = 4 });
	uint8_t blk[BS];
	fill_pattern(blk, BS, 999);
	write_blk(&m, seg_addr(&m, s, 6), blk); /* block 1 of the second pseg */

	static const uint32_t offs[] = { 0, 4, 10 }, counts[] = { 3, 5, 4 };
	struct lfs_logwalk w;
	ck_assert_int_eq(lfs_logwalk_init(&w, &m.dev, &m.sb, m.seed, LFS_LOGWALK_BLOCKS), 0);
	lfs_logwalk_segment(&w, s);
	for (unsigned i = 0; i < 3; i++) {
		ck_assert_int_eq(lfs_logwalk_next(&w), 1);
		ck_assert_uint_eq(w.pseg_off, offs[i]);
		ck_assert_uint_eq(w.addr, seg_addr(&m, s, offs[i]));
		ck_assert_uint_eq(w.h.seq, 10 + i);
		ck_assert_uint_eq(w.h.nblocks, counts[i]);
		for (uint32_t j = 0; j < counts[i]; j++) {
			struct lfs_pseg_entry e;
			lfs_logwalk_entry(&w, j, &e);
			ck_assert_uint_eq(e.ino, 7);
			ck_assert_uint_eq(e.lblk, 100u * offs[i] + j);
			bool damaged = i == 1 && j == 1;
			ck_assert(lfs_logwalk_block_ok(&w, j) == !damaged);
			fill_pattern(blk, BS, damaged ? 999 : block_seed(s, offs[i], j));
			ck_assert_mem_eq(lfs_logwalk_block(&w, j), blk, BS);
		}
	}
	ck_assert_int_eq(lfs_logwalk_next(&w), 0);
	ck_assert_int_eq(w.end, LFS_LOGWALK_SEG_END);
	ck_assert_str_eq(lfs_logwalk_end_name(w.end), "end of segment");
	/* ended is ended */
	ck_assert_int_eq(lfs_logwalk_next(&w), 0);
	lfs_logwalk_free(&w);
	walkimg_done(&m);
}
END_TEST

/* What a summary must be to be taken: the magic (else NO_SUMMARY), its
 * crc and an entry count of 1..168 (BAD_SUMMARY), and no more blocks
 * than are left in the segment (OVERRUN), exactly up to the last one. */
START_TEST(summary_verdicts)
{
	struct walkimg m;
	walkimg_make(&m);
	uint64_t s = spare_seg(&m, 0);
	enum lfs_logwalk_end end;
	put_pseg(&m, s, 0, (struct pspec){ .seq = 1, .nblocks = 2 });

	/* the second pseg, at block 3: 12 blocks fill the segment */
	put_pseg(&m, s, 3, (struct pspec){ .seq = 2, .nblocks = 12 });
	ck_assert_uint_eq(walk_seg(&m, s, 0, &end), 2);
	ck_assert_int_eq(end, LFS_LOGWALK_SEG_END);
	put_pseg(&m, s, 3, (struct pspec){ .seq = 2, .nblocks = 13 });
	ck_assert_uint_eq(walk_seg(&m, s, 0, &end), 1);
	ck_assert_int_eq(end, LFS_LOGWALK_OVERRUN);

	put_pseg(&m, s, 3, (struct pspec){ .seq = 2, .nblocks = 2 });
	poke_summary(&m, s, 3, LFS_PS_OFF_MAGIC, 0x47455351, true);
	ck_assert_uint_eq(walk_seg(&m, s, 0, &end), 1);
	ck_assert_int_eq(end, LFS_LOGWALK_NO_SUMMARY);

	put_pseg(&m, s, 3, (struct pspec){ .seq = 2, .nblocks = 2 });
	poke_summary(&m, s, 3, LFS_PSEG_HDR_SIZE + LFS_PE_OFF_LBLK, 5, false);
	ck_assert_uint_eq(walk_seg(&m, s, 0, &end), 1);
	ck_assert_int_eq(end, LFS_LOGWALK_BAD_SUMMARY);

	poke_summary(&m, s, 3, LFS_PS_OFF_NBLOCKS, 0, true);
	ck_assert_uint_eq(walk_seg(&m, s, 0, &end), 1);
	ck_assert_int_eq(end, LFS_LOGWALK_BAD_SUMMARY);
	poke_summary(&m, s, 3, LFS_PS_OFF_NBLOCKS, 169, true);
	ck_assert_uint_eq(walk_seg(&m, s, 0, &end), 1);
	ck_assert_int_eq(end, LFS_LOGWALK_BAD_SUMMARY);
	ck_assert_str_eq(lfs_logwalk_end_name(end), "summary checksum mismatch");

	/* a pseg of another filesystem (another seed) is no summary of ours */
	m.seed ^= 1;
	ck_assert_uint_eq(walk_seg(&m, s, 0, &end), 0);
	ck_assert_int_eq(end, LFS_LOGWALK_BAD_SUMMARY);
	walkimg_done(&m);
}
END_TEST

/* A segment is rewritten from its start when reused, so a pseg whose
 * sequence number is not above every one before it in the segment (equal
 * included) is left from an earlier use: it ends the chain, or with
 * SHOW_STALE is yielded marked, and does not raise the bar for the
 * psegs after it.  Each segment starts afresh. */
START_TEST(stale_psegs)
{
	struct walkimg m;
	walkimg_make(&m);
	uint64_t s = spare_seg(&m, 0), t = spare_seg(&m, 1);
	static const uint64_t seqs[] = { 10, 11, 11, 5, 12 };
	static const bool stale[] = { false, false, true, true, false };
	for (uint32_t i = 0; i < 5; i++)
		put_pseg(&m, s, 2 * i, (struct pspec){ .seq = seqs[i], .nblocks = 1 });
	put_pseg(&m, t, 0, (struct pspec){ .seq = 3, .nblocks = 1 });

	enum lfs_logwalk_end end;
	ck_assert_uint_eq(walk_seg(&m, s, 0, &end), 2);
	ck_assert_int_eq(end, LFS_LOGWALK_STALE);

	struct lfs_logwalk w;
	ck_assert_int_eq(lfs_logwalk_init(&w, &m.dev, &m.sb, m.seed, LFS_LOGWALK_SHOW_STALE), 0);
	lfs_logwalk_segment(&w, s);
	for (unsigned i = 0; i < 5; i++) {
		ck_assert_int_eq(lfs_logwalk_next(&w), 1);
		ck_assert_uint_eq(w.h.seq, seqs[i]);
		ck_assert_uint_eq(w.pseg_off, 2 * i);
		ck_assert_msg(w.stale == stale[i], "pseg %u (seq %u): stale %d", i, (unsigned)seqs[i], w.stale);
	}
	ck_assert_int_eq(lfs_logwalk_next(&w), 0);
	ck_assert_int_eq(w.end, LFS_LOGWALK_NO_SUMMARY);
	/* the same walker on another segment: seq 3 after 12 is its first */
	lfs_logwalk_segment(&w, t);
	ck_assert_int_eq(lfs_logwalk_next(&w), 1);
	ck_assert(!w.stale);
	lfs_logwalk_free(&w);
	walkimg_done(&m);
}
END_TEST

/* Following from a checkpoint: two psegs fill segment A, the walk goes
 * on in the segment the last of them named (not the first's, not the
 * one it started with), and a pseg is taken only with the next sequence
 * number, the checkpoint's epoch (tested first), a next segment that
 * exists and every block matching its crc. */
START_TEST(follow_rules)
{
	struct walkimg m;
	walkimg_make(&m);
	uint64_t a = spare_seg(&m, 0), b = spare_seg(&m, 1), c = spare_seg(&m, 2);
	put_pseg(&m, a, 0, (struct pspec){ .seq = 20, .ckpt_seq = 3, .next_seg = c, .nblocks = 6 });
	put_pseg(&m, a, 7, (struct pspec){ .seq = 21, .ckpt_seq = 3, .next_seg = b, .nblocks = 7 });
	put_pseg(&m, b, 0, (struct pspec){ .seq = 22, .ckpt_seq = 3, .next_seg = c, .nblocks = 2 });

	static const struct {
		struct pspec p;
		unsigned yields;
		enum lfs_logwalk_end end;
	} cases[] = {
		{ { 23, 3, 1, 1 }, 4, LFS_LOGWALK_NO_SUMMARY },
		{ { 24, 3, 1, 1 }, 3, LFS_LOGWALK_BAD_SEQ },
		{ { 22, 3, 1, 1 }, 3, LFS_LOGWALK_BAD_SEQ },
		{ { 24, 2, 1, 1 }, 3, LFS_LOGWALK_BAD_EPOCH },
		{ { 23, 4, 1, 1 }, 3, LFS_LOGWALK_BAD_EPOCH },
		{ { 23, 3, 0, 1 }, 3, LFS_LOGWALK_BAD_NEXT },
		{ { 23, 3, 1, 1 }, 3, LFS_LOGWALK_BAD_BLOCK },
	};
	uint8_t junk[BS];
	fill_pattern(junk, BS, 4242);
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct pspec p = cases[k].p;
		/* next_seg 1: a segment that exists; 0: the first that does not */
		p.next_seg = p.next_seg ? c : m.sb.nsegs;
		put_pseg(&m, b, 3, p);
		if (cases[k].end == LFS_LOGWALK_BAD_BLOCK)
			write_blk(&m, seg_addr(&m, b, 4), junk);
		struct lfs_logwalk w;
		ck_assert_int_eq(lfs_logwalk_init(&w, &m.dev, &m.sb, m.seed, LFS_LOGWALK_BLOCKS), 0);
		ck_assert_int_eq(lfs_logwalk_follow(&w, a, 0, c, 20, 3), 0);
		unsigned n = 0;
		int r;
		while ((r = lfs_logwalk_next(&w)) > 0) {
			ck_assert_uint_eq(w.seg, n < 2 ? a : b);
			ck_assert_uint_eq(w.h.seq, 20 + n);
			n++;
		}
		ck_assert_int_eq(r, 0);
		ck_assert_msg(n == cases[k].yields && w.end == cases[k].end, "case %u: %u psegs, end %s", k, n,
			      lfs_logwalk_end_name(w.end));
		lfs_logwalk_free(&w);
	}

	/* from the middle of a segment, as a checkpoint's head may be */
	put_pseg(&m, b, 3, (struct pspec){ .seq = 23, .ckpt_seq = 3, .next_seg = c, .nblocks = 1 });
	struct lfs_logwalk w;
	ck_assert_int_eq(lfs_logwalk_init(&w, &m.dev, &m.sb, m.seed, LFS_LOGWALK_BLOCKS), 0);
	ck_assert_int_eq(lfs_logwalk_follow(&w, a, 7, b, 21, 3), 0);
	ck_assert_int_eq(lfs_logwalk_next(&w), 1);
	ck_assert_uint_eq(w.addr, seg_addr(&m, a, 7));
	ck_assert_int_eq(lfs_logwalk_next(&w), 1);
	ck_assert_uint_eq(w.addr, seg_addr(&m, b, 0));
	lfs_logwalk_free(&w);
	walkimg_done(&m);
}
END_TEST

/* Only what was read and failed verification ends a walk: a read the
 * device failed, of the summary or of the blocks, or one past the end of
 * a truncated image, is an error with the walk where it was, so that
 * roll-forward never takes it for the end of the log.  And a walker
 * without memory for its buffer is refused. */
START_TEST(read_errors_are_not_the_end)
{
	struct walkimg m;
	walkimg_make(&m);
	uint64_t s = spare_seg(&m, 0);
	put_pseg(&m, s, 0, (struct pspec){ .seq = 1, .nblocks = 2 });
	struct lfs_logwalk w;
	ck_assert_int_eq(lfs_logwalk_init(&w, &m.dev, &m.sb, m.seed, LFS_LOGWALK_BLOCKS), 0);
	lfs_logwalk_segment(&w, s);
	for (unsigned nth = 1; nth <= 2; nth++) {
		char spec[32];
		snprintf(spec, sizeof(spec), "pread:%u:EIO", nth);
		ck_assert_int_eq(lfs_fault_arm(spec), 0);
		ck_assert_int_eq(lfs_logwalk_next(&w), -EIO);
		ck_assert_int_eq(w.end, LFS_LOGWALK_MORE);
		ck_assert_uint_eq(w.off, 0);
	}
	lfs_fault_disarm();
	ck_assert_int_eq(lfs_logwalk_next(&w), 1);
	ck_assert_uint_eq(w.pseg_off, 0);

	/* the image cut short at the start of segment s */
	ck_assert_int_eq(truncate(testfs_path, (off_t)(seg_addr(&m, s, 0) * BS)), 0);
	lfs_logwalk_segment(&w, s);
	ck_assert_int_eq(lfs_logwalk_next(&w), -EIO);
	ck_assert_int_eq(w.end, LFS_LOGWALK_MORE);
	lfs_logwalk_free(&w);

	ck_assert_int_eq(lfs_fault_arm("alloc:1:ENOMEM"), 0);
	ck_assert_int_eq(lfs_logwalk_init(&w, &m.dev, &m.sb, m.seed, 0), -ENOMEM);
	lfs_fault_disarm();
	walkimg_done(&m);
}
END_TEST

/* Following checks every block, so it needs a walker with room for a
 * pseg's blocks: one made without LFS_LOGWALK_BLOCKS is refused rather
 * than left to check blocks past its one-block buffer. */
START_TEST(follow_needs_blocks)
{
	struct walkimg m;
	walkimg_make(&m);
	uint64_t a = spare_seg(&m, 0), c = spare_seg(&m, 2);
	put_pseg(&m, a, 0, (struct pspec){ .seq = 20, .ckpt_seq = 3, .next_seg = c, .nblocks = 2 });
	struct lfs_logwalk w;
	ck_assert_int_eq(lfs_logwalk_init(&w, &m.dev, &m.sb, m.seed, 0), 0);
	ck_assert_int_eq(lfs_logwalk_follow(&w, a, 0, c, 20, 3), -EINVAL);
	lfs_logwalk_free(&w);
	ck_assert_int_eq(lfs_logwalk_init(&w, &m.dev, &m.sb, m.seed, LFS_LOGWALK_BLOCKS), 0);
	ck_assert_int_eq(lfs_logwalk_follow(&w, a, 0, c, 20, 3), 0);
	ck_assert_int_eq(lfs_logwalk_next(&w), 1);
	ck_assert(lfs_logwalk_block_ok(&w, 0) && lfs_logwalk_block_ok(&w, 1));
	lfs_logwalk_free(&w);
	walkimg_done(&m);
}
END_TEST

/* Whether the walk has asked the device for segment `seg` ahead of
 * reading it (what it remembers asking, w->asked: whether the kernel's
 * page cache then holds it is the kernel's affair and the machine's). */
static bool
asked(const struct lfs_logwalk *w, uint64_t seg)
{
	for (unsigned i = 0; i < LFS_LOGWALK_ASKED; i++)
		if (w->asked[i] == seg)
			return true;
	return false;
}

/* Following the log, the segment it goes on in is asked for as soon as a
 * summary names it, and the one after that too: the writer most often
 * takes it next, and a segment of a few large psegs is walked faster than
 * the device brings the next one otherwise.  Segments the log does not
 * name, nor the one after a named one, are not asked for. */
START_TEST(follow_asks_ahead)
{
	struct walkimg m;
	walkimg_make(&m);
	/* a (full) -> b (one pseg) -> c, spare segments counted down from the end */
	uint64_t a = spare_seg(&m, 5), b = spare_seg(&m, 3), c = spare_seg(&m, 0);
	put_pseg(&m, a, 0, (struct pspec){ .seq = 20, .ckpt_seq = 3, .next_seg = b, .nblocks = SEG_BLOCKS - 1 });
	put_pseg(&m, b, 0, (struct pspec){ .seq = 21, .ckpt_seq = 3, .next_seg = c, .nblocks = 2 });
	struct lfs_logwalk w;
	ck_assert_int_eq(lfs_logwalk_init(&w, &m.dev, &m.sb, m.seed, LFS_LOGWALK_BLOCKS), 0);
	ck_assert_int_eq(lfs_logwalk_follow(&w, a, 0, b, 20, 3), 0);
	ck_assert(asked(&w, a));
	ck_assert(asked(&w, b));
	ck_assert(asked(&w, b + 1)); /* the guess */
	ck_assert(!asked(&w, a + 1));
	ck_assert(!asked(&w, c)); /* named only by b's summary */
	ck_assert_int_eq(lfs_logwalk_next(&w), 1);
	ck_assert_int_eq(lfs_logwalk_next(&w), 1);
	ck_assert_uint_eq(w.seg, b);
	ck_assert(asked(&w, c));
	/* c + 1 is past the last segment: nothing to ask for */
	ck_assert_uint_eq(c + 1, m.sb.nsegs);
	ck_assert(!asked(&w, c + 1));
	ck_assert(!asked(&w, b + 2));
	ck_assert_int_eq(lfs_logwalk_next(&w), 0);
	ck_assert_int_eq(w.end, LFS_LOGWALK_NO_SUMMARY);
	lfs_logwalk_free(&w);
	walkimg_done(&m);
}
END_TEST

CHECK_MAIN("logwalk", "logwalk", 30, follows_a_real_log, segment_back_to_back, summary_verdicts,
	   stale_psegs, follow_rules, read_errors_are_not_the_end, follow_needs_blocks, follow_asks_ahead)
