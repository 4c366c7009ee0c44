/*
 * logwalk.c — layer 2: the one reader of the log (see logwalk.h for the
 * rules it applies and who uses it).  Reads go through the block device,
 * decoding through the format module; nothing here knows a mounted
 * filesystem.
 */
#include "logwalk.h"
#include "fault.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int
lfs_logwalk_init(struct lfs_logwalk *w, struct lfs_bdev *dev, const struct lfs_super *sb, uint32_t seed,
		 unsigned flags)
{
	memset(w, 0, sizeof(*w));
	w->dev = dev;
	w->bsize = sb->block_size;
	w->seed = seed;
	w->seg_blocks = sb->seg_blocks;
	w->seg0 = sb->seg0;
	w->nsegs = sb->nsegs;
	w->flags = flags;
	/* as the writer sizes its psegs (mount.c) */
	w->max_pseg = lfs_pseg_max_entries(w->bsize);
	if (w->max_pseg > w->seg_blocks - 1)
		w->max_pseg = w->seg_blocks - 1;
	size_t blocks = flags & LFS_LOGWALK_BLOCKS ? 1 + (size_t)w->max_pseg : 1;
	w->buf = lfs_malloc(blocks * w->bsize); /* may be made to fail (fault.h) */
	return w->buf ? 0 : -ENOMEM;
}

void
lfs_logwalk_free(struct lfs_logwalk *w)
{
	free(w->buf);
	w->buf = NULL;
}

void
lfs_logwalk_segment(struct lfs_logwalk *w, uint64_t seg)
{
	w->seg = seg;
	w->off = 0;
	w->max_seq = 0;
	w->follow = false;
	w->end = LFS_LOGWALK_MORE;
}

/* Following the log, the walk reads psegs one after another, a summary
 * and then its blocks: the segments it will read are asked for whole
 * first, so that the device reads them in large requests while the
 * walk's caller works (a cold mount read 1,000 small fsynced groups in
 * 2,000 reads the kernel's read-ahead had to discover). */
static void
ask_segment(struct lfs_logwalk *w, uint64_t seg, uint32_t off)
{
	if (seg >= w->nsegs || off >= w->seg_blocks)
		return;
	for (unsigned i = 0; i < LFS_LOGWALK_ASKED; i++)
		if (w->asked[i] == seg)
			return;
	w->asked[w->asked_next] = seg;
	w->asked_next = (w->asked_next + 1) % LFS_LOGWALK_ASKED;
	lfs_bdev_prefetch(w->dev, (w->seg0 + seg * w->seg_blocks + off) * w->bsize,
			  (uint64_t)(w->seg_blocks - off) * w->bsize);
}

/* The segment after `next` is known only once the walk reads `next`'s
 * first summary, too late for a segment of a few large psegs to arrive
 * before the walk needs it.  The writer takes the
 * first clean segment after the one it fills (lfs_seg_pick_next), most
 * often next + 1: that one is asked for too, a hint that costs only a
 * segment's read where the guess is wrong. */
static void
ask_ahead(struct lfs_logwalk *w, uint64_t next)
{
	ask_segment(w, next, 0);
	ask_segment(w, next + 1, 0);
}

int
lfs_logwalk_follow(struct lfs_logwalk *w, uint64_t seg, uint32_t off, uint64_t next_seg, uint64_t seq,
		   uint64_t ckpt_seq)
{
	if (!(w->flags & LFS_LOGWALK_BLOCKS))
		return -EINVAL;
	lfs_logwalk_segment(w, seg);
	w->off = off;
	w->follow = true;
	w->next_seg = next_seg;
	w->seq = seq;
	w->ckpt_seq = ckpt_seq;
	for (unsigned i = 0; i < LFS_LOGWALK_ASKED; i++)
		w->asked[i] = UINT64_MAX;
	w->asked_next = 0;
	ask_segment(w, seg, off);
	ask_ahead(w, next_seg);
	return 0;
}

/* The verdict on the summary in w->buf at w->off; LFS_LOGWALK_MORE: take it. */
static enum lfs_logwalk_end
judge_summary(struct lfs_logwalk *w)
{
	int v = lfs_pseg_verify(w->buf, w->bsize, w->seed);
	if (v == -EINVAL)
		return LFS_LOGWALK_NO_SUMMARY;
	if (v)
		return LFS_LOGWALK_BAD_SUMMARY;
	lfs_pseg_hdr_decode(&w->h, w->buf);
	uint32_t max = w->seg_blocks - w->off - 1;
	if (max > w->max_pseg)
		max = w->max_pseg;
	if (w->follow && w->h.ckpt_seq != w->ckpt_seq)
		return LFS_LOGWALK_BAD_EPOCH;
	if (w->follow && w->h.seq != w->seq)
		return LFS_LOGWALK_BAD_SEQ;
	if (w->h.nblocks > max)
		return LFS_LOGWALK_OVERRUN;
	if (w->follow && w->h.next_seg >= w->nsegs)
		return LFS_LOGWALK_BAD_NEXT;
	/* the first pseg of a segment has nothing before it to be older than */
	w->stale = w->off > 0 && w->h.seq <= w->max_seq;
	if (w->stale && !(w->flags & LFS_LOGWALK_SHOW_STALE))
		return LFS_LOGWALK_STALE;
	return LFS_LOGWALK_MORE;
}

int
lfs_logwalk_next(struct lfs_logwalk *w)
{
	if (w->end)
		return 0;
	if (!lfs_logwalk_has_room(w->seg_blocks, w->off)) {
		if (!w->follow) {
			w->end = LFS_LOGWALK_SEG_END;
			return 0;
		}
		w->seg = w->next_seg;
		w->off = 0;
		w->max_seq = 0;
	}
	uint64_t addr = w->seg0 + w->seg * w->seg_blocks + w->off;
	/* by the superblock's block size, whatever the device was opened with */
	int err = lfs_bdev_pread(w->dev, addr * w->bsize, w->bsize, w->buf);
	if (err)
		return err;
	w->end = judge_summary(w);
	if (w->end)
		return 0;
	if (w->flags & LFS_LOGWALK_BLOCKS) {
		err = lfs_bdev_pread(w->dev, (addr + 1) * w->bsize, (uint64_t)w->h.nblocks * w->bsize,
				     w->buf + w->bsize);
		if (err)
			return err;
	}
	if (w->follow) {
		for (uint32_t j = 0; j < w->h.nblocks; j++)
			if (!lfs_logwalk_block_ok(w, j)) {
				w->end = LFS_LOGWALK_BAD_BLOCK;
				return 0;
			}
		w->seq++;
		w->next_seg = w->h.next_seg;
		ask_ahead(w, w->next_seg);
	}
	w->addr = addr;
	w->pseg_off = w->off;
	if (w->h.seq > w->max_seq)
		w->max_seq = w->h.seq;
	w->off += 1 + w->h.nblocks;
	return 1;
}

void
lfs_logwalk_entry(const struct lfs_logwalk *w, uint32_t j, struct lfs_pseg_entry *e)
{
	lfs_pseg_entry_decode(e, w->buf, j);
}

const uint8_t *
lfs_logwalk_block(const struct lfs_logwalk *w, uint32_t j)
{
	return w->buf + (size_t)(j + 1) * w->bsize;
}

bool
lfs_logwalk_block_ok(const struct lfs_logwalk *w, uint32_t j)
{
	struct lfs_pseg_entry e;
	lfs_pseg_entry_decode(&e, w->buf, j);
	return lfs_crc(w->seed, lfs_logwalk_block(w, j), w->bsize) == e.crc;
}

const char *
lfs_logwalk_end_name(enum lfs_logwalk_end end)
{
	static const char *const names[] = {
		[LFS_LOGWALK_MORE] = "not ended",
		[LFS_LOGWALK_SEG_END] = "end of segment",
		[LFS_LOGWALK_NO_SUMMARY] = "no summary (bad magic)",
		[LFS_LOGWALK_BAD_SUMMARY] = "summary checksum mismatch",
		[LFS_LOGWALK_BAD_EPOCH] = "pseg from an older checkpoint",
		[LFS_LOGWALK_BAD_SEQ] = "sequence gap",
		[LFS_LOGWALK_OVERRUN] = "summary overruns its segment",
		[LFS_LOGWALK_BAD_NEXT] = "next segment out of range",
		[LFS_LOGWALK_BAD_BLOCK] = "block checksum mismatch",
		[LFS_LOGWALK_STALE] = "pseg left from an earlier use of the segment",
	};
	return end < sizeof(names) / sizeof(names[0]) ? names[end] : "?";
}
