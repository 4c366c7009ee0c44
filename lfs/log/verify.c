/*
 * verify.c — layer 2: every block read from the log is checked against the
 * crc its summary recorded; a block that fails gives EIO and a log line
 * naming it, never wrong data.
 *
 * The crcs of a segment are found by walking its chain of summaries from
 * offset 0 (the one log reader, logwalk.h); a small cache keeps the walks of recently read segments, and
 * the segment writer updates it as it writes psegs.  Its memory is
 * bounded whatever the segment size: 256 segments of up to 800 blocks,
 * fewer (at least 4) of larger ones.
 */
#include "lfs_int.h"
#include "logwalk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SUMCACHE_SLOTS 256
#define SUMCACHE_MIN_SLOTS 4
#define SUMCACHE_BYTES (1u << 20)

struct lfs_sumcache_ent {
	uint64_t seg;               /* UINT64_MAX: empty slot */
	uint64_t used;              /* LRU stamp */
	uint32_t *crc;              /* per block offset in the segment */
	uint64_t *epoch;            /* per block: its pseg's ckpt_seq */
	uint8_t *known;
};

struct lfs_sumcache {
	struct lfs_sumcache_ent ent[SUMCACHE_SLOTS];
	int nslots;                 /* in use of ent[] */
	uint64_t clock;
};

int
lfs_verify_init(struct lfs_fs *fs)
{
	struct lfs_sumcache *c = lfs_calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	uint64_t per = (uint64_t)fs->sb.seg_blocks * (sizeof(uint32_t) + sizeof(uint64_t) + 1);
	c->nslots = (int)(SUMCACHE_BYTES / per);
	if (c->nslots > SUMCACHE_SLOTS)
		c->nslots = SUMCACHE_SLOTS;
	if (c->nslots < SUMCACHE_MIN_SLOTS)
		c->nslots = SUMCACHE_MIN_SLOTS;
	/* a slot's arrays come with its first segment (load): a mount
	 * would otherwise fault in the whole megabyte before any read */
	for (int i = 0; i < c->nslots; i++)
		c->ent[i].seg = UINT64_MAX;
	fs->sumcache = c;
	return 0;
}

/* A slot back to having no arrays (load allocates them again). */
static void
slot_release(struct lfs_sumcache_ent *e)
{
	free(e->crc);
	free(e->epoch);
	free(e->known);
	e->crc = NULL;
	e->epoch = NULL;
	e->known = NULL;
}

void
lfs_verify_free(struct lfs_fs *fs)
{
	struct lfs_sumcache *c = fs->sumcache;
	if (!c)
		return;
	for (int i = 0; i < c->nslots; i++)
		slot_release(&c->ent[i]);
	free(c);
	fs->sumcache = NULL;
}

static struct lfs_sumcache_ent *
find(struct lfs_sumcache *c, uint64_t seg)
{
	for (int i = 0; i < c->nslots; i++)
		if (c->ent[i].seg == seg) {
			c->ent[i].used = ++c->clock;
			return &c->ent[i];
		}
	return NULL;
}

/* Record the blocks of one summary at block offset `off` of its segment. */
static void
note_pseg(struct lfs_fs *fs, struct lfs_sumcache_ent *e, uint32_t off, const uint8_t *sum)
{
	struct lfs_pseg_hdr h;
	lfs_pseg_hdr_decode(&h, sum);
	for (uint32_t j = 0; j < h.nblocks && off + 1 + j < fs->sb.seg_blocks; j++) {
		struct lfs_pseg_entry pe;
		lfs_pseg_entry_decode(&pe, sum, j);
		e->crc[off + 1 + j] = pe.crc;
		e->epoch[off + 1 + j] = h.ckpt_seq;
		e->known[off + 1 + j] = 1;
	}
}

static int
load(struct lfs_fs *fs, uint64_t seg, struct lfs_sumcache_ent **out)
{
	struct lfs_sumcache *c = fs->sumcache;
	struct lfs_sumcache_ent *e = &c->ent[0];
	for (int i = 1; i < c->nslots; i++)
		if (c->ent[i].used < e->used)
			e = &c->ent[i];
	e->seg = UINT64_MAX;
	if (!e->known) {
		e->crc = lfs_calloc(fs->sb.seg_blocks, sizeof(uint32_t));
		e->epoch = lfs_calloc(fs->sb.seg_blocks, sizeof(uint64_t));
		e->known = lfs_calloc(fs->sb.seg_blocks, 1);
		if (!e->crc || !e->epoch || !e->known) {
			slot_release(e);
			return -ENOMEM;
		}
	}
	memset(e->known, 0, fs->sb.seg_blocks);
	struct lfs_logwalk w;
	int err = lfs_logwalk_init(&w, &fs->dev, &fs->sb, fs->seed, 0);
	if (err)
		return err;
	lfs_logwalk_segment(&w, seg);
	while ((err = lfs_logwalk_next(&w)) > 0)
		note_pseg(fs, e, w.pseg_off, w.buf);
	lfs_logwalk_free(&w);
	if (err)
		return err;
	e->seg = seg;
	e->used = ++c->clock;
	*out = e;
	return 0;
}

void
lfs_verify_note_pseg(struct lfs_fs *fs, uint64_t seg, uint32_t off, const uint8_t *sum)
{
	struct lfs_sumcache_ent *e = find(fs->sumcache, seg);
	if (!e)
		return;
	if (off == 0) /* the segment starts a new life */
		memset(e->known, 0, fs->sb.seg_blocks);
	note_pseg(fs, e, off, sum);
}

/* Verifying a block in a segment not cached walks the segment's chain
 * of summaries, each found from the one before: a read the device must
 * finish before the next can begin.  Roll-forward after random writes
 * to a large file verifies old leaves in many such segments, and walked
 * one by one those reads would be most of its time.  Here the
 * chains of all of them advance together: each step asks for one
 * summary of every chain at once, then reads them (for their lengths
 * only; load reads and checks them again), so the mount waits about
 * once per step, not once per summary.  A segment of small psegs would
 * still take a step per summary, dozens: once its chain shows that, the
 * rest of the segment is asked for in one request. */
#define RUN_STEPS 3             /* psegs in a row ... */
#define SMALL_PSEG 16           /* ... of fewer blocks each make a chain of small ones */

size_t
lfs_verify_prefetch(struct lfs_fs *fs, const uint64_t *addrs, size_t n)
{
	struct lfs_sumcache *c = fs->sumcache;
	struct chain {
		uint64_t seg;
		uint32_t off;       /* of the next summary */
		uint32_t steps;     /* small psegs in a row */
	} *ch = lfs_malloc((size_t)c->nslots * sizeof(*ch));
	uint8_t *blk = lfs_malloc(fs->bsize);
	size_t nc = 0, asked = 0;
	for (size_t i = 0; ch && blk && i < n && nc < (size_t)c->nslots; i++) {
		if (!lfs_addr_valid(fs, addrs[i]))
			continue;
		uint64_t seg = lfs_addr_seg(fs, addrs[i]);
		/* (a cached one is about to be read: find's touch is right) */
		if ((!nc || ch[nc - 1].seg != seg) && !find(c, seg))
			ch[nc++] = (struct chain){ seg, 0, 0 };
	}
	while (nc) {
		for (size_t i = 0; i < nc; i++)
			lfs_bdev_prefetch(&fs->dev, (lfs_seg_first_block(fs, ch[i].seg) + ch[i].off) * fs->bsize,
					  fs->bsize);
		size_t left = 0;
		for (size_t i = 0; i < nc; i++) {
			struct lfs_pseg_hdr h;
			uint64_t at = lfs_seg_first_block(fs, ch[i].seg) + ch[i].off;
			if (lfs_bdev_peek(&fs->dev, at * fs->bsize, fs->bsize, blk))
				continue;
			lfs_pseg_hdr_decode(&h, blk);
			if (h.magic != LFS_PSEG_MAGIC)
				continue;
			asked++;
			uint64_t next = (uint64_t)ch[i].off + 1 + h.nblocks;
			if (next >= fs->sb.seg_blocks)
				continue;
			/* a chain of small psegs (fsynced groups) is dozens of
			 * steps long: the rest of its segment in one request */
			ch[i].steps = h.nblocks < SMALL_PSEG ? ch[i].steps + 1 : 0;
			if (ch[i].steps == RUN_STEPS)
				lfs_bdev_prefetch(&fs->dev, (lfs_seg_first_block(fs, ch[i].seg) + next) * fs->bsize,
						  (uint64_t)(fs->sb.seg_blocks - next) * fs->bsize);
			ch[i].off = (uint32_t)next;
			ch[left++] = ch[i];
		}
		nc = left;
	}
	free(ch);
	free(blk);
	return asked;
}

/* The cached summaries of the segment holding addr, and addr's offset
 * in it; -EIO (logged) if no valid summary describes the block. */
static int
described(struct lfs_fs *fs, uint64_t a, struct lfs_sumcache_ent **out, uint32_t *off)
{
	uint64_t seg = lfs_addr_seg(fs, a);
	*off = (uint32_t)(a - lfs_seg_first_block(fs, seg));
	struct lfs_sumcache_ent *e = find(fs->sumcache, seg);
	int err = e ? 0 : load(fs, seg, &e);
	if (err)
		return err;
	if (!e->known[*off]) {
		lfs_log("block %llu (segment %llu) is not described by a valid summary: EIO",
			(unsigned long long)a, (unsigned long long)seg);
		return -EIO;
	}
	*out = e;
	return 0;
}

int
lfs_verify_epoch(struct lfs_fs *fs, uint64_t addr, uint64_t *ckpt_seq)
{
	if (!lfs_addr_valid(fs, addr))
		return -EFSCORRUPTED;
	struct lfs_sumcache_ent *e;
	uint32_t off;
	int err = described(fs, addr, &e, &off);
	if (!err)
		*ckpt_seq = e->epoch[off];
	return err;
}

int
lfs_verify_crcs(struct lfs_fs *fs, uint64_t addr, uint32_t n, const uint32_t *crcs)
{
	for (uint32_t i = 0; i < n; i++) {
		uint64_t a = addr + i;
		struct lfs_sumcache_ent *e;
		uint32_t off;
		int err = described(fs, a, &e, &off);
		if (err)
			return err;
		if (crcs[i] != e->crc[off]) {
			lfs_log("block %llu (segment %llu) fails its checksum: EIO", (unsigned long long)a,
				(unsigned long long)lfs_addr_seg(fs, a));
			return -EIO;
		}
	}
	return 0;
}

int
lfs_verify_blocks(struct lfs_fs *fs, uint64_t addr, uint32_t n, const uint8_t *data)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t crc = lfs_crc(fs->seed, data + (size_t)i * fs->bsize, fs->bsize);
		int err = lfs_verify_crcs(fs, addr + i, 1, &crc);
		if (err)
			return err;
	}
	return 0;
}
