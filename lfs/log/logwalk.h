/*
 * logwalk.h — the one reader of the log: segments -> partial segments
 * -> summary entries.  Beside layer 2 (the segment writer), below
 * everything that reads the log back: roll-forward (ckpt/recover.c),
 * the cleaner's mechanism (clean.c) and daemon (lfs_cleanerd), the read
 * verifier (verify.c), fsck.lfs and dumplfs.  It needs only a block
 * device and the superblock, not a mounted filesystem.
 *
 * Where a walk ends is decided here and nowhere else:
 *   - a segment holds psegs back to back from block 0; a pseg needs a
 *     summary and at least one block, so fewer than 2 blocks left end it;
 *   - a summary that fails lfs_pseg_verify (magic, crc, entry count) ends
 *     the segment's chain, as does one naming more blocks than are left
 *     in the segment or than one pseg may hold (max_pseg);
 *   - stale psegs: a segment is rewritten from its start when reused, so
 *     a pseg whose sequence number is not above every one before it in
 *     the segment is left over from an earlier use.  It ends the chain,
 *     unless the walk asked to see such psegs (LFS_LOGWALK_SHOW_STALE: dumplfs),
 *     which are then yielded with `stale` set;
 *   - following the log from a checkpoint (lfs_logwalk_follow, for
 *     roll-forward), a pseg must also carry the expected sequence number
 *     and the checkpoint's epoch, name a next segment that exists, and
 *     every block must match its crc; at a segment's end the walk goes on
 *     in the segment the last pseg named.
 * Only what was read and failed verification ends a walk: a read error
 * is returned as -errno, never taken for the end of the log.
 *
 * Use:
 *	struct lfs_logwalk w;
 *	lfs_logwalk_init(&w, dev, &sb, seed, LFS_LOGWALK_BLOCKS);
 *	lfs_logwalk_segment(&w, seg);
 *	while ((r = lfs_logwalk_next(&w)) > 0)
 *		for (j = 0; j < w.h.nblocks; j++) { lfs_logwalk_entry(&w, j, &e); ... }
 *	(r < 0: a read failed; r == 0: w.end says why the chain ended)
 *	lfs_logwalk_free(&w);
 */
#ifndef LFS_LOGWALK_H
#define LFS_LOGWALK_H

#include "bdev.h"
#include "format.h"

#include <stdbool.h>
#include <stdint.h>

/* Why a walk ended, in the order the tests are made. */
enum lfs_logwalk_end {
	LFS_LOGWALK_MORE = 0,       /* not ended */
	LFS_LOGWALK_SEG_END,        /* no room for another pseg in the segment */
	LFS_LOGWALK_NO_SUMMARY,     /* bad magic */
	LFS_LOGWALK_BAD_SUMMARY,    /* summary checksum or entry count */
	LFS_LOGWALK_BAD_EPOCH,      /* follow: a pseg of another checkpoint */
	LFS_LOGWALK_BAD_SEQ,        /* follow: a sequence gap */
	LFS_LOGWALK_OVERRUN,        /* more blocks than the segment or a pseg holds */
	LFS_LOGWALK_BAD_NEXT,       /* follow: next segment out of range */
	LFS_LOGWALK_BAD_BLOCK,      /* follow: a block fails its crc */
	LFS_LOGWALK_STALE,          /* left over from an earlier use of the segment */
};

/* flags */
#define LFS_LOGWALK_BLOCKS 1u   /* read each pseg's blocks too (w->buf after the summary) */
#define LFS_LOGWALK_SHOW_STALE 2u   /* yield stale psegs, marked, rather than end at them */

#define LFS_LOGWALK_ASKED 4      /* segments remembered as asked for ahead */

struct lfs_logwalk {
	/* what is read, and how: set by lfs_logwalk_init */
	struct lfs_bdev *dev;
	uint32_t bsize, seed, seg_blocks, max_pseg;
	uint64_t seg0, nsegs;
	unsigned flags;
	uint8_t *buf;               /* the summary, then (BLOCKS) its blocks */
	/* where the walk is */
	uint64_t seg;
	uint32_t off;               /* next summary's block offset in seg */
	uint64_t max_seq;           /* highest seq yet in this segment */
	bool follow;                /* lfs_logwalk_follow: across segments */
	uint64_t seq, ckpt_seq;     /* follow: the seq and epoch the next pseg must carry */
	uint64_t next_seg;          /* follow: where the log goes on after seg */
	uint64_t asked[LFS_LOGWALK_ASKED]; /* follow: the last segments asked for ahead */
	unsigned asked_next;        /* follow: the slot of asked[] to fill next */
	/* the pseg lfs_logwalk_next yielded */
	struct lfs_pseg_hdr h;
	uint64_t addr;              /* of its summary; its blocks follow */
	uint32_t pseg_off;          /* its block offset in its segment */
	bool stale;
	enum lfs_logwalk_end end;   /* after next() returned 0 */
};

/* Whether a pseg fits at block offset `off` of a segment: a summary and
 * at least one block.  The writer (lfs_seg_has_room) and every walk. */
static inline bool lfs_logwalk_has_room(uint32_t seg_blocks, uint32_t off)
{
	return off + 2 <= seg_blocks;
}

/* Set up a walk over `dev` of the filesystem `sb` (crcs seeded `seed`);
 * 0 or -ENOMEM. */
int lfs_logwalk_init(struct lfs_logwalk *w, struct lfs_bdev *dev, const struct lfs_super *sb, uint32_t seed,
		     unsigned flags);
void lfs_logwalk_free(struct lfs_logwalk *w);

/* Walk segment `seg` from its start. */
void lfs_logwalk_segment(struct lfs_logwalk *w, uint64_t seg);

/* Follow the log from a checkpoint's head: (seg, off), the next pseg's
 * sequence number `seq`, the checkpoint's epoch `ckpt_seq`, and the
 * segment the log goes on in when seg is full (`next_seg`).  Every
 * block is checked, so the walker must have been made with
 * LFS_LOGWALK_BLOCKS (room for a pseg's blocks): -EINVAL otherwise. */
int lfs_logwalk_follow(struct lfs_logwalk *w, uint64_t seg, uint32_t off, uint64_t next_seg, uint64_t seq,
			uint64_t ckpt_seq);

/* The next pseg: 1 (w->h, w->addr, w->buf hold it), 0 at the end of the
 * chain (w->end says why), or -errno if a read failed. */
int lfs_logwalk_next(struct lfs_logwalk *w);

/* Entry j of the current pseg's summary. */
void lfs_logwalk_entry(const struct lfs_logwalk *w, uint32_t j, struct lfs_pseg_entry *e);

/* Block j of the current pseg (LFS_LOGWALK_BLOCKS), and whether it
 * matches the crc its entry recorded. */
const uint8_t *lfs_logwalk_block(const struct lfs_logwalk *w, uint32_t j);
bool lfs_logwalk_block_ok(const struct lfs_logwalk *w, uint32_t j);

/* A few words for w->end: "end of segment", "sequence gap", ... */
const char *lfs_logwalk_end_name(enum lfs_logwalk_end end);

#endif
