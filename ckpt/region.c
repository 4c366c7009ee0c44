/*
 * region.c — layer 5: the two checkpoint regions as they are on disk, kept in
 * memory, so that a checkpoint writes only the blocks of its region that
 * changed since that region was last written, and seals it from per-block
 * crcs instead of checksumming it whole.
 *
 * A region names every inode-map and usage-table block: 2 MiB at 1 TiB
 * (262,144 + 4,096 addresses), of which a checkpoint changes as many as
 * it wrote table blocks.  What reaches the disk is the same region as
 * before, byte for byte; a write torn anywhere still fails the region's
 * crc (it covers the whole region), and the other region is used.
 *
 * lfs_region_mark() is called whenever an address in the tables changes
 * (ckpt.c).  At mount, after roll-forward, each region as lfs_ckpt_load
 * read it is compared with the tables (lfs_region_adopt); a region that
 * does not verify is written whole the first time.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct lfs_region {
	uint8_t *buf;               /* as on disk; NULL: not known, write whole */
	uint32_t *bcrc;             /* per block >= 1: lfs_crc(0, block) */
	uint8_t *stale;             /* per block: an address in it changed */
};

static size_t
nentries(const struct lfs_fs *fs)
{
	return (size_t)fs->n_imap_blocks + fs->n_sut_blocks;
}

static uint64_t
entry(const struct lfs_fs *fs, size_t i)
{
	return i < fs->n_imap_blocks ? fs->imap_addr[i] : fs->sut_addr[i - fs->n_imap_blocks];
}

/* Encode the addresses that fall in block k of the region into blk,
 * that block (block 0's header is left as it is); whether all are 0.
 * Runs of inode-map addresses never set are 0 without being read. */
static bool
encode_block(const struct lfs_fs *fs, uint8_t *blk, uint32_t k)
{
	size_t lo = 0, hi = ((size_t)(k + 1) * fs->bsize - LFS_CKPT_HDR_SIZE) / 8;
	if (k > 0)
		lo = ((size_t)k * fs->bsize - LFS_CKPT_HDR_SIZE) / 8;
	if (hi > nentries(fs))
		hi = nentries(fs);
	size_t at = LFS_CKPT_HDR_SIZE + 8 * lo - (size_t)k * fs->bsize;
	uint64_t any = 0;
	for (size_t i = lo; i < hi;) {
		size_t run = i / LFS_IMAP_ADDR_RUN;
		if (i < fs->n_imap_blocks && !fs->imap_addr_set[run]) {
			size_t end = (run + 1) * LFS_IMAP_ADDR_RUN;
			if (end > hi)
				end = hi;
			if (end > fs->n_imap_blocks)
				end = fs->n_imap_blocks;
			memset(blk + at, 0, 8 * (end - i));
			at += 8 * (end - i);
			i = end;
			continue;
		}
		uint64_t a = entry(fs, i);
		any |= a;
		lfs_put64(blk + at, a);
		i++;
		at += 8;
	}
	return !any;
}

/* Forget what is known of region w: its next checkpoint writes it whole. */
static void
region_drop(struct lfs_fs *fs, int w)
{
	struct lfs_region *r = fs->region[w];
	if (!r)
		return;
	free(r->buf);
	free(r->bcrc);
	free(r->stale);
	free(r);
	fs->region[w] = NULL;
}

void
lfs_region_free(struct lfs_fs *fs)
{
	for (int w = 0; w < 2; w++) {
		region_drop(fs, w);
		free(fs->region_read[w]);
		fs->region_read[w] = NULL;
	}
}

void
lfs_region_forget(struct lfs_fs *fs)
{
	for (int w = 0; w < 2; w++)
		region_drop(fs, w);
}

void
lfs_region_mark(struct lfs_fs *fs, size_t i)
{
	uint32_t k = (uint32_t)((LFS_CKPT_HDR_SIZE + 8 * i) / fs->bsize);
	for (int w = 0; w < 2; w++)
		if (fs->region[w])
			fs->region[w]->stale[k] = 1;
}

/* A region known to hold nothing yet (everything stale), in buf if
 * given (taken, whatever the outcome). */
static int
region_new(struct lfs_fs *fs, int w, uint8_t *buf)
{
	uint32_t nb = fs->sb.ckpt_blocks;
	struct lfs_region *r = lfs_calloc(1, sizeof(*r));
	if (!r) {
		free(buf);
		return -ENOMEM;
	}
	r->buf = buf ? buf : lfs_calloc(nb, fs->bsize);
	r->bcrc = lfs_calloc(nb, sizeof(uint32_t));
	r->stale = lfs_malloc(nb);
	fs->region[w] = r;
	if (!r->buf || !r->bcrc || !r->stale) {
		/* the other region stays known: only this one is written whole */
		region_drop(fs, w);
		return -ENOMEM;
	}
	memset(r->stale, 1, nb);
	return 0;
}

int
lfs_region_adopt(struct lfs_fs *fs, int w)
{
	uint32_t nb = fs->sb.ckpt_blocks, bs = fs->bsize;
	size_t len = (size_t)nb * bs;
	/* as lfs_ckpt_load read it, if it did */
	uint8_t *read = fs->region_read[w];
	bool bad = fs->region_bad[w];
	fs->region_read[w] = NULL;
	fs->region_bad[w] = false;
	int err = region_new(fs, w, read);
	if (err)
		return err;
	struct lfs_region *r = fs->region[w];
	/* the tables as a region would hold them now, a block at a time */
	uint8_t *cur = lfs_calloc(1, bs);
	uint32_t zero_crc = cur ? lfs_crc(0, cur, bs) : 0;
	if (!cur)
		err = -ENOMEM;
	else if (bad)
		err = -EFSCORRUPTED;
	else if (read)
		err = 0;
	else if (!(err = lfs_bdev_read(&fs->dev, fs->sb.ckpt_addr[w], nb, r->buf)) &&
		 lfs_ckpt_verify(r->buf, len, fs->seed))
		err = -EFSCORRUPTED;
	for (uint32_t k = 1; k < nb && !err; k++) {
		/* stale where the tables now say otherwise */
		memset(cur, 0, bs);
		bool zero = encode_block(fs, cur, k);
		r->stale[k] = memcmp(cur, r->buf + (size_t)k * bs, bs) != 0;
		r->bcrc[k] = zero && !r->stale[k] ? zero_crc : lfs_crc(0, r->buf + (size_t)k * bs, bs);
	}
	free(cur);
	if (err)
		region_drop(fs, w); /* not known: written whole the first time */
	/* a region that does not verify is only written whole; a read the
	 * device failed fails the mount, as every read of the mount does */
	if (err == -EIO)
		lfs_log("checkpoint region %d: %s; mount refused", w, strerror(-err));
	return err == -EFSCORRUPTED ? 0 : err;
}

int
lfs_region_write(struct lfs_fs *fs, int w, struct lfs_ckpt_hdr *h)
{
	int err;
	if (!fs->region[w] && (err = region_new(fs, w, NULL)))
		return err;
	struct lfs_region *r = fs->region[w];
	uint32_t nb = fs->sb.ckpt_blocks, bs = fs->bsize, nstale = 0;
	for (uint32_t k = 1; k < nb; k++) {
		if (!r->stale[k])
			continue;
		encode_block(fs, r->buf + (size_t)k * bs, k);
		r->bcrc[k] = lfs_crc(0, r->buf + (size_t)k * bs, bs);
		nstale++;
	}
	/* block 0: the header (its crc field zero while sealing) and the
	 * first addresses */
	h->bytes_written += (uint64_t)(1 + nstale) * bs;
	h->crc = 0;
	lfs_ckpt_hdr_encode(h, r->buf);
	encode_block(fs, r->buf, 0);
	uint32_t crc = lfs_crc(fs->seed, r->buf, bs), op = lfs_crc_combine_gen(bs);
	for (uint32_t k = 1; k < nb; k++)
		crc = lfs_crc_combine(crc, r->bcrc[k], op);
	h->crc = crc;
	lfs_ckpt_hdr_encode(h, r->buf);
	/* the changed blocks in runs, then the header */
	err = 0;
	for (uint32_t k = 1; k < nb && !err;) {
		if (!r->stale[k]) {
			k++;
			continue;
		}
		uint32_t e = k;
		while (e < nb && r->stale[e])
			r->stale[e++] = 0;
		err = lfs_bdev_write(&fs->dev, fs->sb.ckpt_addr[w] + k, e - k, r->buf + (size_t)k * bs);
		k = e;
	}
	if (!err)
		err = lfs_bdev_write(&fs->dev, fs->sb.ckpt_addr[w], 1, r->buf);
	if (err) {
		/* what the region holds is not known any more */
		free(r->buf);
		free(r->bcrc);
		free(r->stale);
		free(r);
		fs->region[w] = NULL;
	}
	return err;
}
