/*
 * format.c — layer 1: encode and decode every on-disk structure (see format.h).
 * Decoders never trust the bytes: lengths and counts are checked against
 * the block before anything is read through them.
 */
#include "format.h"

#include "text.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <zlib.h>

uint32_t
lfs_crc(uint32_t seed, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uLong c = seed;
	/* zlib takes uInt lengths; feed it in chunks for large buffers. */
	while (len > 0) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		c = crc32(c, p, n);
		p += n;
		len -= n;
	}
	return (uint32_t)c;
}

uint32_t
lfs_crc_combine_gen(uint64_t len2)
{
	return (uint32_t)crc32_combine_gen((z_off_t)len2);
}

uint32_t
lfs_crc_combine(uint32_t crc1, uint32_t crc2, uint32_t op)
{
	return (uint32_t)crc32_combine_op(crc1, crc2, op);
}

/* ---------------------------------------------------------------- */

void
lfs_super_encode(const struct lfs_super *sb, uint8_t buf[LFS_SB_SIZE])
{
	memset(buf, 0, LFS_SB_SIZE);
	lfs_put32(buf + LFS_SB_OFF_MAGIC, sb->magic);
	lfs_put32(buf + LFS_SB_OFF_VERSION, sb->version);
	lfs_put32(buf + LFS_SB_OFF_COMPAT, sb->feature_compat);
	lfs_put32(buf + LFS_SB_OFF_INCOMPAT, sb->feature_incompat);
	lfs_put32(buf + LFS_SB_OFF_BLOCK_SIZE, sb->block_size);
	lfs_put32(buf + LFS_SB_OFF_SEG_BLOCKS, sb->seg_blocks);
	lfs_put64(buf + LFS_SB_OFF_NBLOCKS, sb->nblocks);
	lfs_put64(buf + LFS_SB_OFF_NSEGS, sb->nsegs);
	lfs_put64(buf + LFS_SB_OFF_SEG0, sb->seg0);
	lfs_put64(buf + LFS_SB_OFF_CKPT0, sb->ckpt_addr[0]);
	lfs_put64(buf + LFS_SB_OFF_CKPT1, sb->ckpt_addr[1]);
	lfs_put32(buf + LFS_SB_OFF_CKPT_BLOCKS, sb->ckpt_blocks);
	lfs_put32(buf + LFS_SB_OFF_MAX_INODES, sb->max_inodes);
	lfs_put32(buf + LFS_SB_OFF_RESERVED, sb->reserved_segs);
	lfs_put64(buf + LFS_SB_OFF_CREATED, sb->created_ns);
	memcpy(buf + LFS_SB_OFF_UUID, sb->uuid, 16);
	memcpy(buf + LFS_SB_OFF_LABEL, sb->label, strnlen(sb->label, LFS_LABEL_MAX));
	if (sb->feature_compat & LFS_FEATURE_BACKUP_SB)
		lfs_put64(buf + LFS_SB_OFF_BACKUP, sb->backup_sb);
	if (sb->feature_incompat & LFS_FEATURE_CSUM_SEED)
		lfs_put32(buf + LFS_SB_OFF_SEED, sb->csum_seed);
	lfs_super_seal(buf);
}

void
lfs_super_seal(uint8_t buf[LFS_SB_SIZE])
{
	lfs_put32(buf + LFS_SB_OFF_CRC, lfs_crc(0, buf, LFS_SB_OFF_CRC));
}

int
lfs_super_decode(struct lfs_super *sb, const uint8_t buf[LFS_SB_SIZE])
{
	memset(sb, 0, sizeof(*sb));
	sb->magic = lfs_get32(buf + LFS_SB_OFF_MAGIC);
	if (sb->magic != LFS_SB_MAGIC)
		return -EINVAL;
	if (lfs_get32(buf + LFS_SB_OFF_CRC) != lfs_crc(0, buf, LFS_SB_OFF_CRC))
		return -EFSCORRUPTED;
	sb->version = lfs_get32(buf + LFS_SB_OFF_VERSION);
	sb->feature_compat = lfs_get32(buf + LFS_SB_OFF_COMPAT);
	sb->feature_incompat = lfs_get32(buf + LFS_SB_OFF_INCOMPAT);
	if (sb->version > LFS_VERSION || (sb->feature_incompat & ~LFS_FEATURE_INCOMPAT_KNOWN))
		return -EPROTONOSUPPORT;
	if (sb->feature_incompat & LFS_FEATURE_CSUM_SEED)
		sb->csum_seed = lfs_get32(buf + LFS_SB_OFF_SEED);
	sb->block_size = lfs_get32(buf + LFS_SB_OFF_BLOCK_SIZE);
	sb->seg_blocks = lfs_get32(buf + LFS_SB_OFF_SEG_BLOCKS);
	sb->nblocks = lfs_get64(buf + LFS_SB_OFF_NBLOCKS);
	sb->nsegs = lfs_get64(buf + LFS_SB_OFF_NSEGS);
	sb->seg0 = lfs_get64(buf + LFS_SB_OFF_SEG0);
	sb->ckpt_addr[0] = lfs_get64(buf + LFS_SB_OFF_CKPT0);
	sb->ckpt_addr[1] = lfs_get64(buf + LFS_SB_OFF_CKPT1);
	sb->ckpt_blocks = lfs_get32(buf + LFS_SB_OFF_CKPT_BLOCKS);
	sb->max_inodes = lfs_get32(buf + LFS_SB_OFF_MAX_INODES);
	sb->reserved_segs = lfs_get32(buf + LFS_SB_OFF_RESERVED);
	sb->created_ns = lfs_get64(buf + LFS_SB_OFF_CREATED);
	memcpy(sb->uuid, buf + LFS_SB_OFF_UUID, 16);
	memcpy(sb->label, buf + LFS_SB_OFF_LABEL, LFS_LABEL_MAX);
	sb->label[LFS_LABEL_MAX] = '\0';
	/* not trusted, but no reason to keep the data from its owner */
	sb->label_refused = lfs_label_check(sb->label, NULL) != 0;

	/* Geometry must be what mkfs makes (lfs_plan_geometry) before anyone
	 * sizes memory by it.  Each product is of values already bounded,
	 * so none wraps in 64 bits. */
	uint32_t bs = sb->block_size, sbl = sb->seg_blocks;
	if (sb->version == 0 || bs < LFS_MIN_BLOCK_SIZE || bs > LFS_MAX_BLOCK_SIZE || (bs & (bs - 1)))
		return -EFSCORRUPTED;
	if (sbl < LFS_MIN_SEG_BLOCKS || sbl > LFS_MAX_SEG_BLOCKS || (sbl & (sbl - 1)) ||
	    sb->nsegs > (1ull << 32) || sb->ckpt_blocks == 0 || sb->ckpt_blocks > (1u << 16) ||
	    sb->reserved_segs == 0 || (uint64_t)sb->reserved_segs + LFS_MIN_FREE_SEGS > sb->nsegs)
		return -EFSCORRUPTED;
	uint64_t meta_end = 1 + 2 * (uint64_t)sb->ckpt_blocks;
	if (sb->ckpt_addr[0] != 1 || sb->ckpt_addr[1] != 1 + (uint64_t)sb->ckpt_blocks ||
	    sb->seg0 != (meta_end + sbl - 1) / sbl * sbl || sb->nblocks != sb->seg0 + sb->nsegs * sbl)
		return -EFSCORRUPTED;
	/* mkfs sized max_inodes and the checkpoint region for the whole
	 * device, of which less than a segment is left out of the log */
	if (sb->max_inodes < LFS_MIN_INODES || sb->max_inodes > lfs_inodes_cap(sb->nblocks + sbl, bs))
		return -EFSCORRUPTED;
	uint32_t nimap = lfs_imap_nblocks(sb->max_inodes, bs);
	uint32_t nsut = lfs_sut_nblocks(sb->nsegs + sb->seg0 / sbl, bs);
	if (sb->ckpt_blocks != (lfs_ckpt_region_bytes(nimap, nsut) + bs - 1) / bs)
		return -EFSCORRUPTED;
	/* the backup lies past everything else mkfs laid out */
	if (sb->feature_compat & LFS_FEATURE_BACKUP_SB) {
		sb->backup_sb = lfs_get64(buf + LFS_SB_OFF_BACKUP);
		if (sb->backup_sb < sb->nblocks)
			return -EFSCORRUPTED;
	}
	return 0;
}

uint32_t
lfs_inodes_cap(uint64_t dev_blocks, uint32_t block_size)
{
	uint64_t n = dev_blocks * (block_size / LFS_INODE_HDR_SIZE);
	if (n < LFS_MIN_INODES)
		return LFS_MIN_INODES;
	return n > LFS_MAX_INODES ? LFS_MAX_INODES : (uint32_t)n;
}

uint32_t
lfs_imap_nblocks(uint32_t max_inodes, uint32_t block_size)
{
	uint32_t per = lfs_imap_per_block(block_size);
	return (uint32_t)(((uint64_t)max_inodes + per - 1) / per);
}

uint32_t
lfs_sut_nblocks(uint64_t nsegs, uint32_t block_size)
{
	uint32_t per = lfs_sut_per_block(block_size);
	return (uint32_t)((nsegs + per - 1) / per);
}

uint32_t
lfs_super_seed(const struct lfs_super *sb)
{
	if (sb->feature_incompat & LFS_FEATURE_CSUM_SEED)
		return sb->csum_seed;
	return lfs_crc(0, sb->uuid, sizeof(sb->uuid));
}

uint64_t
lfs_super_backup_block(uint64_t dev_bytes, uint32_t block_size)
{
	uint64_t n = block_size ? dev_bytes / block_size : 0;
	return n >= 2 ? n - 1 : 0;
}

/* ---------------------------------------------------------------- */

size_t
lfs_ckpt_region_bytes(uint32_t n_imap_blocks, uint32_t n_sut_blocks)
{
	return LFS_CKPT_HDR_SIZE + 8 * ((size_t)n_imap_blocks + n_sut_blocks);
}

void
lfs_ckpt_seal(uint8_t *region, size_t len, uint32_t seed)
{
	lfs_put32(region + LFS_CK_OFF_CRC, 0);
	lfs_put32(region + LFS_CK_OFF_CRC, lfs_crc(seed, region, len));
}

int
lfs_ckpt_verify(uint8_t *region, size_t len, uint32_t seed)
{
	uint32_t want = lfs_get32(region + LFS_CK_OFF_CRC);
	lfs_put32(region + LFS_CK_OFF_CRC, 0);
	uint32_t got = lfs_crc(seed, region, len);
	lfs_put32(region + LFS_CK_OFF_CRC, want);
	return got == want ? 0 : -EFSCORRUPTED;
}

void
lfs_ckpt_hdr_encode(const struct lfs_ckpt_hdr *h, uint8_t *buf)
{
	memset(buf, 0, LFS_CKPT_HDR_SIZE);
	lfs_put32(buf + LFS_CK_OFF_MAGIC, h->magic);
	lfs_put32(buf + LFS_CK_OFF_CRC, h->crc);
	lfs_put64(buf + LFS_CK_OFF_SEQ, h->ckpt_seq);
	lfs_put64(buf + LFS_CK_OFF_TIME, h->timestamp_ns);
	lfs_put64(buf + LFS_CK_OFF_NEXT_PSEG, h->next_pseg_seq);
	lfs_put64(buf + LFS_CK_OFF_HEAD_SEG, h->head_seg);
	lfs_put32(buf + LFS_CK_OFF_HEAD_OFF, h->head_off);
	lfs_put32(buf + LFS_CK_OFF_FLAGS, h->flags);
	lfs_put64(buf + LFS_CK_OFF_NEXT_SEG, h->next_seg);
	lfs_put32(buf + LFS_CK_OFF_NIMAP, h->n_imap_blocks);
	lfs_put32(buf + LFS_CK_OFF_NSUT, h->n_sut_blocks);
	lfs_put64(buf + LFS_CK_OFF_INODES, h->inodes_used);
	lfs_put64(buf + LFS_CK_OFF_BYTES, h->bytes_written);
	lfs_put64(buf + LFS_CK_OFF_HELD_ROOT, h->held_root);
	lfs_put64(buf + LFS_CK_OFF_HELD_SLOTS, h->held_slots);
	lfs_put64(buf + LFS_CK_OFF_HIST_ROOT, h->hist_root);
	lfs_put32(buf + LFS_CK_OFF_HIST_SLOTS, h->hist_slots);
	lfs_put32(buf + LFS_CK_OFF_PROTECT, h->protect_s);
	lfs_put64(buf + LFS_CK_OFF_UNWRITTEN, h->unwritten);
	lfs_put64(buf + LFS_CK_OFF_DRAG, h->drag);
}

void
lfs_ckpt_hdr_decode(struct lfs_ckpt_hdr *h, const uint8_t *buf)
{
	h->magic = lfs_get32(buf + LFS_CK_OFF_MAGIC);
	h->crc = lfs_get32(buf + LFS_CK_OFF_CRC);
	h->ckpt_seq = lfs_get64(buf + LFS_CK_OFF_SEQ);
	h->timestamp_ns = lfs_get64(buf + LFS_CK_OFF_TIME);
	h->next_pseg_seq = lfs_get64(buf + LFS_CK_OFF_NEXT_PSEG);
	h->head_seg = lfs_get64(buf + LFS_CK_OFF_HEAD_SEG);
	h->head_off = lfs_get32(buf + LFS_CK_OFF_HEAD_OFF);
	h->flags = lfs_get32(buf + LFS_CK_OFF_FLAGS);
	h->next_seg = lfs_get64(buf + LFS_CK_OFF_NEXT_SEG);
	h->n_imap_blocks = lfs_get32(buf + LFS_CK_OFF_NIMAP);
	h->n_sut_blocks = lfs_get32(buf + LFS_CK_OFF_NSUT);
	h->inodes_used = lfs_get64(buf + LFS_CK_OFF_INODES);
	h->bytes_written = lfs_get64(buf + LFS_CK_OFF_BYTES);
	h->held_root = lfs_get64(buf + LFS_CK_OFF_HELD_ROOT);
	h->held_slots = lfs_get64(buf + LFS_CK_OFF_HELD_SLOTS);
	h->hist_root = lfs_get64(buf + LFS_CK_OFF_HIST_ROOT);
	h->hist_slots = lfs_get32(buf + LFS_CK_OFF_HIST_SLOTS);
	h->protect_s = lfs_get32(buf + LFS_CK_OFF_PROTECT);
	h->unwritten = lfs_get64(buf + LFS_CK_OFF_UNWRITTEN);
	h->drag = lfs_get64(buf + LFS_CK_OFF_DRAG);
}

/* ---------------------------------------------------------------- */

void
lfs_pseg_hdr_encode(const struct lfs_pseg_hdr *h, uint8_t *blk)
{
	memset(blk, 0, LFS_PSEG_HDR_SIZE);
	lfs_put32(blk + LFS_PS_OFF_MAGIC, h->magic);
	lfs_put32(blk + LFS_PS_OFF_CRC, h->sum_crc);
	lfs_put64(blk + LFS_PS_OFF_SEQ, h->seq);
	lfs_put64(blk + LFS_PS_OFF_CKPT, h->ckpt_seq);
	lfs_put64(blk + LFS_PS_OFF_TIME, h->timestamp_ns);
	lfs_put64(blk + LFS_PS_OFF_NEXT_SEG, h->next_seg);
	lfs_put32(blk + LFS_PS_OFF_NBLOCKS, h->nblocks);
	lfs_put32(blk + LFS_PS_OFF_FLAGS, h->flags);
	lfs_put32(blk + LFS_PS_OFF_REPL, h->repl);
}

void
lfs_pseg_hdr_decode(struct lfs_pseg_hdr *h, const uint8_t *blk)
{
	h->magic = lfs_get32(blk + LFS_PS_OFF_MAGIC);
	h->sum_crc = lfs_get32(blk + LFS_PS_OFF_CRC);
	h->seq = lfs_get64(blk + LFS_PS_OFF_SEQ);
	h->ckpt_seq = lfs_get64(blk + LFS_PS_OFF_CKPT);
	h->timestamp_ns = lfs_get64(blk + LFS_PS_OFF_TIME);
	h->next_seg = lfs_get64(blk + LFS_PS_OFF_NEXT_SEG);
	h->nblocks = lfs_get32(blk + LFS_PS_OFF_NBLOCKS);
	h->flags = lfs_get32(blk + LFS_PS_OFF_FLAGS);
	h->repl = lfs_get32(blk + LFS_PS_OFF_REPL);
}

void
lfs_pseg_entry_encode(const struct lfs_pseg_entry *e, uint8_t *blk, uint32_t i)
{
	uint8_t *p = blk + LFS_PSEG_HDR_SIZE + (size_t)i * LFS_PSEG_ENTRY_SIZE;
	memset(p, 0, LFS_PSEG_ENTRY_SIZE);
	lfs_put32(p + LFS_PE_OFF_INO, e->ino);
	lfs_put32(p + LFS_PE_OFF_VERSION, e->version);
	lfs_put64(p + LFS_PE_OFF_LBLK, e->lblk);
	lfs_put32(p + LFS_PE_OFF_CRC, e->crc);
	p[LFS_PE_OFF_KIND] = e->kind;
}

void
lfs_pseg_entry_decode(struct lfs_pseg_entry *e, const uint8_t *blk, uint32_t i)
{
	const uint8_t *p = blk + LFS_PSEG_HDR_SIZE + (size_t)i * LFS_PSEG_ENTRY_SIZE;
	e->ino = lfs_get32(p + LFS_PE_OFF_INO);
	e->version = lfs_get32(p + LFS_PE_OFF_VERSION);
	e->lblk = lfs_get64(p + LFS_PE_OFF_LBLK);
	e->crc = lfs_get32(p + LFS_PE_OFF_CRC);
	e->kind = p[LFS_PE_OFF_KIND];
}

void
lfs_pseg_entry_set_crc(uint8_t *blk, uint32_t i, uint32_t crc)
{
	lfs_put32(blk + LFS_PSEG_HDR_SIZE + (size_t)i * LFS_PSEG_ENTRY_SIZE + LFS_PE_OFF_CRC, crc);
}

void
lfs_repl_rec_encode(const struct lfs_repl_rec *r, uint8_t *sum, uint32_t nblocks, uint32_t i)
{
	uint8_t *p = sum + lfs_pseg_repl_off(nblocks) + (size_t)i * LFS_REPL_REC_SIZE;
	memset(p, 0, LFS_REPL_REC_SIZE);
	lfs_put32(p + LFS_RP_OFF_INO, r->ino);
	p[LFS_RP_OFF_KIND] = r->kind;
	if (r->kind) {
		lfs_put64(p + LFS_RP_OFF_ADDR, r->addr);
	} else {
		lfs_put32(p + LFS_RP_OFF_VERSION, r->version);
		lfs_put32(p + LFS_RP_OFF_COUNT, r->count);
	}
}

void
lfs_repl_rec_decode(struct lfs_repl_rec *r, const uint8_t *sum, uint32_t nblocks, uint32_t i)
{
	const uint8_t *p = sum + lfs_pseg_repl_off(nblocks) + (size_t)i * LFS_REPL_REC_SIZE;
	memset(r, 0, sizeof(*r));
	r->ino = lfs_get32(p + LFS_RP_OFF_INO);
	r->kind = p[LFS_RP_OFF_KIND];
	if (r->kind) {
		r->addr = lfs_get64(p + LFS_RP_OFF_ADDR);
	} else {
		r->version = lfs_get32(p + LFS_RP_OFF_VERSION);
		r->count = lfs_get32(p + LFS_RP_OFF_COUNT);
	}
}

int
lfs_pseg_repl_count(const struct lfs_pseg_hdr *h, uint32_t block_size, uint32_t *n)
{
	*n = 0;
	if (!(h->flags & LFS_PSEG_REPL))
		return 0;
	if (h->nblocks > lfs_pseg_max_entries(block_size) || h->repl > lfs_pseg_repl_room(block_size, h->nblocks))
		return -EFSCORRUPTED;
	*n = h->repl;
	return 0;
}

void
lfs_pseg_seal(uint8_t *blk, uint32_t block_size, uint32_t seed)
{
	lfs_put32(blk + LFS_PS_OFF_CRC, 0);
	lfs_put32(blk + LFS_PS_OFF_CRC, lfs_crc(seed, blk, block_size));
}

int
lfs_pseg_verify(const uint8_t *blk, uint32_t block_size, uint32_t seed)
{
	if (lfs_get32(blk + LFS_PS_OFF_MAGIC) != LFS_PSEG_MAGIC)
		return -EINVAL;
	uint32_t want = lfs_get32(blk + LFS_PS_OFF_CRC);
	/* crc with the field zeroed, without copying the block */
	static const uint8_t zero[4];
	uint32_t c = lfs_crc(seed, blk, LFS_PS_OFF_CRC);
	c = lfs_crc(c, zero, 4);
	c = lfs_crc(c, blk + LFS_PS_OFF_CRC + 4, block_size - LFS_PS_OFF_CRC - 4);
	if (c != want)
		return -EFSCORRUPTED;
	uint32_t n = lfs_get32(blk + LFS_PS_OFF_NBLOCKS);
	if (n == 0 || n > lfs_pseg_max_entries(block_size))
		return -EFSCORRUPTED;
	return 0;
}

/* ---------------------------------------------------------------- */

void
lfs_imap_entry_encode(const struct lfs_imap_entry *e, uint8_t *p)
{
	lfs_put64(p + LFS_IM_OFF_DADDR, e->daddr);
	lfs_put32(p + LFS_IM_OFF_VERSION, e->version);
	lfs_put16(p + LFS_IM_OFF_SLOT, e->slot);
	lfs_put16(p + LFS_IM_OFF_FLAGS, e->flags);
}

void
lfs_imap_entry_decode(struct lfs_imap_entry *e, const uint8_t *p)
{
	e->daddr = lfs_get64(p + LFS_IM_OFF_DADDR);
	e->version = lfs_get32(p + LFS_IM_OFF_VERSION);
	e->slot = lfs_get16(p + LFS_IM_OFF_SLOT);
	e->flags = lfs_get16(p + LFS_IM_OFF_FLAGS);
}

void
lfs_sut_entry_encode(const struct lfs_sut_entry *e, uint8_t *p)
{
	lfs_put32(p + LFS_SU_OFF_LIVE, e->live_bytes);
	lfs_put32(p + LFS_SU_OFF_FLAGS, e->flags);
	lfs_put64(p + LFS_SU_OFF_MTIME, e->mtime_ns);
}

void
lfs_sut_entry_decode(struct lfs_sut_entry *e, const uint8_t *p)
{
	e->live_bytes = lfs_get32(p + LFS_SU_OFF_LIVE);
	e->flags = lfs_get32(p + LFS_SU_OFF_FLAGS);
	e->mtime_ns = lfs_get64(p + LFS_SU_OFF_MTIME);
}

void
lfs_held_entry_encode(const struct lfs_held_entry *e, uint8_t *p)
{
	lfs_put64(p + LFS_HE_OFF_ORIG, e->orig);
	lfs_put64(p + LFS_HE_OFF_CUR, e->cur);
	lfs_put64(p + LFS_HE_OFF_FROM, e->from);
	lfs_put64(p + LFS_HE_OFF_UNTIL, e->until);
	lfs_put64(p + LFS_HE_OFF_AUX, e->aux);
	lfs_put32(p + LFS_HE_OFF_CHARGE, e->charge);
	p[LFS_HE_OFF_KIND] = e->kind;
	p[LFS_HE_OFF_FLAGS] = e->flags;
	lfs_put16(p + LFS_HE_OFF_SLOT, e->slot);
}

void
lfs_held_entry_decode(struct lfs_held_entry *e, const uint8_t *p)
{
	e->orig = lfs_get64(p + LFS_HE_OFF_ORIG);
	e->cur = lfs_get64(p + LFS_HE_OFF_CUR);
	e->from = lfs_get64(p + LFS_HE_OFF_FROM);
	e->until = lfs_get64(p + LFS_HE_OFF_UNTIL);
	e->aux = lfs_get64(p + LFS_HE_OFF_AUX);
	e->charge = lfs_get32(p + LFS_HE_OFF_CHARGE);
	e->kind = p[LFS_HE_OFF_KIND];
	e->flags = p[LFS_HE_OFF_FLAGS];
	e->slot = lfs_get16(p + LFS_HE_OFF_SLOT);
}

void
lfs_hist_entry_encode(const struct lfs_hist_entry *e, uint8_t *p)
{
	memset(p, 0, LFS_HIST_ENTRY_SIZE);
	lfs_put64(p + LFS_HI_OFF_SEQ, e->seq);
	lfs_put64(p + LFS_HI_OFF_TIME, e->time_ns);
	lfs_put32(p + LFS_HI_OFF_FLAGS, e->flags);
	lfs_put32(p + LFS_HI_OFF_ROOT, e->root);
	memcpy(p + LFS_HI_OFF_NAME, e->name, strnlen(e->name, LFS_HIST_NAME_MAX));
}

void
lfs_hist_entry_decode(struct lfs_hist_entry *e, const uint8_t *p)
{
	e->seq = lfs_get64(p + LFS_HI_OFF_SEQ);
	e->time_ns = lfs_get64(p + LFS_HI_OFF_TIME);
	e->flags = lfs_get32(p + LFS_HI_OFF_FLAGS);
	e->root = lfs_get32(p + LFS_HI_OFF_ROOT);
	memset(e->name, 0, sizeof(e->name));
	memcpy(e->name, p + LFS_HI_OFF_NAME, LFS_HIST_NAME_MAX);
}

static bool
in_log(const struct lfs_super *sb, uint64_t addr)
{
	return addr >= sb->seg0 && addr < sb->seg0 + sb->nsegs * sb->seg_blocks;
}

int
lfs_imap_entry_check(const struct lfs_imap_entry *e, uint64_t ino, const struct lfs_super *sb, const char **why)
{
	*why = NULL;
	if (e->flags & ~(LFS_IMAP_INUSE | LFS_IMAP_ORPHAN))
		*why = "unknown flags";
	else if (!(e->flags & LFS_IMAP_INUSE))
		return 0;
	else if (ino < LFS_ROOT_INO || ino >= sb->max_inodes)
		*why = "inode number out of range in use";
	else if (!in_log(sb, e->daddr))
		*why = "record address outside the log";
	else if ((uint32_t)e->slot * LFS_INODE_ALIGN + LFS_INODE_HDR_SIZE > sb->block_size)
		*why = "record slot past the end of its block";
	return *why ? -EFSCORRUPTED : 0;
}

int
lfs_sut_entry_check(const struct lfs_sut_entry *e, const struct lfs_super *sb, const char **why)
{
	*why = NULL;
	if (e->live_bytes > (uint64_t)sb->seg_blocks * sb->block_size)
		*why = "more live bytes than the segment holds";
	else if (e->flags)
		*why = "unknown flags";
	return *why ? -EFSCORRUPTED : 0;
}

/* ---------------------------------------------------------------- */

static void
put_time(uint8_t *p, uint8_t *pns, int64_t sec, uint32_t nsec)
{
	lfs_put64(p, (uint64_t)sec);
	lfs_put32(pns, nsec);
}

uint32_t
lfs_dinode_encode(const struct lfs_dinode *di, const void *inline_data, uint8_t *p)
{
	uint32_t reclen = lfs_inode_reclen(di->inline_len);
	memset(p, 0, reclen);
	lfs_put32(p + LFS_DI_OFF_INO, di->ino);
	lfs_put32(p + LFS_DI_OFF_VERSION, di->version);
	lfs_put32(p + LFS_DI_OFF_MODE, di->mode);
	lfs_put32(p + LFS_DI_OFF_UID, di->uid);
	lfs_put32(p + LFS_DI_OFF_GID, di->gid);
	lfs_put32(p + LFS_DI_OFF_NLINK, di->nlink);
	lfs_put32(p + LFS_DI_OFF_FLAGS, di->flags);
	lfs_put32(p + LFS_DI_OFF_RDEV, di->rdev);
	lfs_put64(p + LFS_DI_OFF_SIZE, di->size);
	lfs_put64(p + LFS_DI_OFF_BLOCKS, di->blocks);
	put_time(p + LFS_DI_OFF_ATIME, p + LFS_DI_OFF_ATIME_NS, di->atime_sec, di->atime_nsec);
	put_time(p + LFS_DI_OFF_MTIME, p + LFS_DI_OFF_MTIME_NS, di->mtime_sec, di->mtime_nsec);
	put_time(p + LFS_DI_OFF_CTIME, p + LFS_DI_OFF_CTIME_NS, di->ctime_sec, di->ctime_nsec);
	put_time(p + LFS_DI_OFF_BTIME, p + LFS_DI_OFF_BTIME_NS, di->btime_sec, di->btime_nsec);
	lfs_put32(p + LFS_DI_OFF_PARENT, di->parent);
	lfs_put32(p + LFS_DI_OFF_RECLEN, reclen);
	lfs_put32(p + LFS_DI_OFF_INLINE, di->inline_len);
	lfs_put32(p + LFS_DI_OFF_MAGIC, LFS_INODE_MAGIC);
	for (int i = 0; i < LFS_NDIRECT; i++)
		lfs_put64(p + LFS_DI_OFF_DIRECT + 8 * i, di->direct[i]);
	for (int i = 0; i < LFS_NINDIRECT; i++)
		lfs_put64(p + LFS_DI_OFF_IND + 8 * i, di->ind[i]);
	lfs_put64(p + LFS_DI_OFF_XATTR, di->xattr);
	lfs_put32(p + LFS_DI_OFF_XBLOCKS, di->xattr_blocks);
	lfs_put32(p + LFS_DI_OFF_UNWRITTEN, di->unwritten);
	if (di->inline_len)
		memcpy(p + LFS_INODE_HDR_SIZE, inline_data, di->inline_len);
	return reclen;
}

int
lfs_dinode_decode(struct lfs_dinode *di, const uint8_t *p, uint32_t avail)
{
	if (avail < LFS_INODE_HDR_SIZE || lfs_get32(p + LFS_DI_OFF_MAGIC) != LFS_INODE_MAGIC)
		return -EFSCORRUPTED;
	memset(di, 0, sizeof(*di));
	di->ino = lfs_get32(p + LFS_DI_OFF_INO);
	di->version = lfs_get32(p + LFS_DI_OFF_VERSION);
	di->mode = lfs_get32(p + LFS_DI_OFF_MODE);
	di->uid = lfs_get32(p + LFS_DI_OFF_UID);
	di->gid = lfs_get32(p + LFS_DI_OFF_GID);
	di->nlink = lfs_get32(p + LFS_DI_OFF_NLINK);
	di->flags = lfs_get32(p + LFS_DI_OFF_FLAGS);
	di->rdev = lfs_get32(p + LFS_DI_OFF_RDEV);
	di->size = lfs_get64(p + LFS_DI_OFF_SIZE);
	di->blocks = lfs_get64(p + LFS_DI_OFF_BLOCKS);
	di->atime_sec = (int64_t)lfs_get64(p + LFS_DI_OFF_ATIME);
	di->atime_nsec = lfs_get32(p + LFS_DI_OFF_ATIME_NS);
	di->mtime_sec = (int64_t)lfs_get64(p + LFS_DI_OFF_MTIME);
	di->mtime_nsec = lfs_get32(p + LFS_DI_OFF_MTIME_NS);
	di->ctime_sec = (int64_t)lfs_get64(p + LFS_DI_OFF_CTIME);
	di->ctime_nsec = lfs_get32(p + LFS_DI_OFF_CTIME_NS);
	di->btime_sec = (int64_t)lfs_get64(p + LFS_DI_OFF_BTIME);
	di->btime_nsec = lfs_get32(p + LFS_DI_OFF_BTIME_NS);
	di->parent = lfs_get32(p + LFS_DI_OFF_PARENT);
	di->inline_len = lfs_get32(p + LFS_DI_OFF_INLINE);
	for (int i = 0; i < LFS_NDIRECT; i++)
		di->direct[i] = lfs_get64(p + LFS_DI_OFF_DIRECT + 8 * i);
	for (int i = 0; i < LFS_NINDIRECT; i++)
		di->ind[i] = lfs_get64(p + LFS_DI_OFF_IND + 8 * i);
	di->xattr = lfs_get64(p + LFS_DI_OFF_XATTR);
	di->xattr_blocks = lfs_get32(p + LFS_DI_OFF_XBLOCKS);
	di->unwritten = lfs_get32(p + LFS_DI_OFF_UNWRITTEN);
	uint32_t reclen = lfs_get32(p + LFS_DI_OFF_RECLEN);
	/* bound inline_len first: lfs_inode_reclen() of a huge one wraps */
	if (di->inline_len > avail - LFS_INODE_HDR_SIZE || reclen != lfs_inode_reclen(di->inline_len) ||
	    reclen > avail ||
	    di->atime_nsec >= 1000000000u || di->mtime_nsec >= 1000000000u ||
	    di->ctime_nsec >= 1000000000u || di->btime_nsec >= 1000000000u)
		return -EFSCORRUPTED;
	return (int)reclen;
}

uint64_t
lfs_max_file_size(uint32_t block_size)
{
	/* 12 direct blocks and trees of depth 1..4: 12 + p + p^2 + p^3 + p^4 */
	uint64_t p = block_size / 8, blocks = LFS_NDIRECT, span = 1;
	for (int k = 0; k < LFS_NINDIRECT; k++) {
		span *= p;
		blocks += span;
	}
	if (blocks > (uint64_t)INT64_MAX / block_size)
		return (uint64_t)INT64_MAX;
	return blocks * block_size;
}

static bool
known_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR: case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		return true;
	}
	return false;
}

static bool
has_blocks(const struct lfs_dinode *di)
{
	for (int i = 0; i < LFS_NDIRECT; i++)
		if (di->direct[i])
			return true;
	for (int i = 0; i < LFS_NINDIRECT; i++)
		if (di->ind[i])
			return true;
	return di->blocks != 0;
}

static const char *
dinode_problem(const struct lfs_dinode *di, const struct lfs_super *sb)
{
	if (di->ino < LFS_ROOT_INO || di->ino >= sb->max_inodes)
		return "inode number out of range";
	if (di->mode == 0)
		return NULL; /* a tombstone */
	if (!known_type(di->mode) || (di->mode & ~(uint32_t)(S_IFMT | 07777)))
		return "unknown file type or mode bits";
	if (di->flags & ~LFS_DI_KNOWN)
		return "unknown flags";
	if ((di->flags & LFS_DI_STAGED) && (!(sb->feature_incompat & LFS_FEATURE_RECEIVED) || !S_ISDIR(di->mode)))
		return "a staged tree where none can be";
	if ((di->flags & LFS_DI_RELINK) && (!(sb->feature_incompat & LFS_FEATURE_RELINK) || !S_ISREG(di->mode) ||
					   (di->flags & LFS_DI_INLINE) || !di->nlink))
		return "a relink record where none can be";
	if (di->inline_len > lfs_inline_max(sb->block_size))
		return "inline content longer than a record can hold";
	bool unw = (sb->feature_incompat & LFS_FEATURE_UNWRITTEN) && S_ISREG(di->mode) &&
		   !(di->flags & LFS_DI_INLINE);
	if (di->unwritten && !unw)
		return "unwritten blocks where none can be";
	if (di->unwritten > di->blocks)
		return "more unwritten blocks than blocks";
	for (int i = 0; i < LFS_NDIRECT; i++)
		if (di->direct[i] && !in_log(sb, di->direct[i]) && !(unw && di->direct[i] == LFS_ADDR_UNWRITTEN))
			return "direct block pointer outside the log";
	for (int i = 0; i < LFS_NINDIRECT; i++)
		if (di->ind[i] && !in_log(sb, di->ind[i]) && !(unw && di->ind[i] == LFS_ADDR_UNWRITTEN))
			return "block-map root pointer outside the log";
	if (di->xattr && !in_log(sb, di->xattr))
		return "xattr block pointer outside the log";
	if (di->blocks > sb->nblocks)
		return "more blocks than the device has";
	if (di->xattr_blocks > 1 + lfs_xattr_max_slots(sb->block_size) || (di->xattr_blocks && !di->xattr))
		return "xattr block count impossible";
	if (di->flags & LFS_DI_INLINE) {
		if (!S_ISREG(di->mode) && !S_ISLNK(di->mode))
			return "inline content in an inode that is not a file or symlink";
		if (di->size != di->inline_len)
			return "inline file size differs from its inline length";
		if (has_blocks(di))
			return "inline file with blocks";
	} else if (di->inline_len) {
		return "inline length without inline content";
	}
	if (di->size > lfs_max_file_size(sb->block_size))
		return "size beyond what the block map addresses";
	switch (di->mode & S_IFMT) {
	case S_IFDIR:
		if (di->size % sb->block_size)
			return "directory size not a whole number of blocks";
		if (di->size > LFS_DIR_MAX_SIZE)
			return "directory larger than the largest directory";
		/* its blocks are distinct and all present (it keeps them in
		 * memory): a crafted map naming one block many times must not
		 * make it larger than the device */
		if (di->size / sb->block_size > sb->nblocks)
			return "directory larger than the device";
		if (di->parent < LFS_ROOT_INO || di->parent >= sb->max_inodes)
			return "directory parent out of range";
		break;
	case S_IFLNK:
		if (di->size > LFS_SYMLINK_MAX)
			return "symlink target too long";
		break;
	case S_IFREG:
		break;
	default: /* devices, fifos, sockets have no content */
		if (di->size || has_blocks(di))
			return "special file with content";
	}
	return NULL;
}

int
lfs_dinode_check(const struct lfs_dinode *di, const struct lfs_super *sb, const char **why)
{
	*why = dinode_problem(di, sb);
	return *why ? -EFSCORRUPTED : 0;
}

uint32_t
lfs_inode_block_next(const uint8_t *blk, uint32_t block_size, uint32_t off)
{
	while (off + LFS_INODE_HDR_SIZE <= block_size) {
		if (lfs_get32(blk + off + LFS_DI_OFF_MAGIC) == LFS_INODE_MAGIC)
			return off;
		off += LFS_INODE_ALIGN;
	}
	return block_size;
}

/* ---------------------------------------------------------------- */

uint32_t
lfs_rdev_encode(dev_t d)
{
	uint32_t ma = major(d), mi = minor(d);
	return (mi & 0xff) | (ma << 8) | ((mi & ~0xffu) << 12);
}

dev_t
lfs_rdev_decode(uint32_t v)
{
	return makedev((v >> 8) & 0xfff, (v & 0xff) | ((v >> 12) & 0xfff00));
}

static uint64_t
ipow(uint64_t b, unsigned e)
{
	uint64_t r = 1;
	while (e--)
		r *= b;
	return r;
}

uint64_t
lfs_node_span(uint32_t nptr, unsigned k, unsigned level)
{
	return ipow(nptr, k - level);
}

uint64_t
lfs_tree_base(uint32_t nptr, unsigned k)
{
	uint64_t b = LFS_NDIRECT;
	for (unsigned j = 0; j < k; j++)
		b += ipow(nptr, j + 1);
	return b;
}

unsigned
lfs_block_path(uint32_t nptr, uint64_t lblk, uint64_t ids[LFS_NINDIRECT], uint64_t *rel)
{
	if (lblk < LFS_NDIRECT)
		return 0;
	for (unsigned k = 0; k < LFS_NINDIRECT; k++) {
		uint64_t base = lfs_tree_base(nptr, k);
		if (lblk >= base + ipow(nptr, k + 1))
			continue;
		*rel = lblk - base;
		for (unsigned l = 0; l <= k; l++)
			ids[l] = lfs_node_id(k, k - l, *rel / ipow(nptr, l + 1));
		return k + 1;
	}
	return 0;
}

void
lfs_node_encode(const uint64_t *ptrs, uint32_t n, uint8_t *blk)
{
	for (uint32_t i = 0; i < n; i++)
		lfs_put64(blk + 8 * (size_t)i, ptrs[i]);
}

void
lfs_node_decode(uint64_t *ptrs, uint32_t n, const uint8_t *blk)
{
	for (uint32_t i = 0; i < n; i++)
		ptrs[i] = lfs_get64(blk + 8 * (size_t)i);
}

/* ---------------------------------------------------------------- */

void
lfs_dirent_encode(const struct lfs_dirent *d, uint8_t *p)
{
	lfs_put32(p + LFS_DE_OFF_INO, d->ino);
	lfs_put16(p + LFS_DE_OFF_RECLEN, d->rec_len);
	p[LFS_DE_OFF_NAMELEN] = d->name_len;
	p[LFS_DE_OFF_TYPE] = d->type;
	if (d->name_len)
		memcpy(p + LFS_DIRENT_HDR, d->name, d->name_len);
}

int
lfs_dirent_decode(struct lfs_dirent *d, const uint8_t *blk, uint32_t off, uint32_t block_size)
{
	if (off % 8 || off + LFS_DIRENT_HDR > block_size)
		return -EFSCORRUPTED;
	const uint8_t *p = blk + off;
	d->ino = lfs_get32(p + LFS_DE_OFF_INO);
	d->rec_len = lfs_get16(p + LFS_DE_OFF_RECLEN);
	d->name_len = p[LFS_DE_OFF_NAMELEN];
	d->type = p[LFS_DE_OFF_TYPE];
	d->name = (const char *)p + LFS_DIRENT_HDR;
	if (d->rec_len < LFS_DIRENT_HDR || d->rec_len % 8 || off + d->rec_len > block_size ||
	    (d->ino && (d->name_len == 0 || lfs_dirent_len(d->name_len) > d->rec_len)))
		return -EFSCORRUPTED;
	return 0;
}

int
lfs_dirent_check(const struct lfs_dirent *d, const struct lfs_super *sb, const char **why)
{
	*why = NULL;
	if (!d->ino)
		return 0;
	if (d->ino < LFS_ROOT_INO || d->ino >= sb->max_inodes)
		*why = "inode number out of range";
	else if (!known_type((uint32_t)d->type << 12))
		*why = "unknown file type";
	else if (memchr(d->name, '/', d->name_len) || memchr(d->name, '\0', d->name_len))
		*why = "name contains '/' or NUL";
	else if (d->name[0] == '.' && (d->name_len == 1 || (d->name_len == 2 && d->name[1] == '.')))
		*why = "name is . or ..";
	return *why ? -EFSCORRUPTED : 0;
}

/* ---------------------------------------------------------------- */

int
lfs_xent_decode(struct lfs_xent *e, const uint8_t *blk, uint32_t off, uint32_t end, uint32_t block_size,
		uint32_t nslots)
{
	if (off > end || end - off < LFS_XATTR_ENT_HDR)
		return -EFSCORRUPTED;
	e->name_len = lfs_get16(blk + off + LFS_XE_OFF_NAMELEN);
	e->flags = blk[off + LFS_XE_OFF_FLAGS];
	e->value_len = lfs_get32(blk + off + LFS_XE_OFF_VALLEN);
	bool out = e->flags & LFS_XENT_OUT;
	if (e->name_len == 0 || e->name_len > LFS_XATTR_NAME_MAX || (e->flags & ~LFS_XENT_OUT) ||
	    (out && e->value_len > LFS_XATTR_SIZE_MAX))
		return -EFSCORRUPTED;
	/* 64-bit: an inline value_len near 4 GiB must not wrap */
	uint64_t need = out ? lfs_xent_len(e->name_len, e->value_len, true, block_size)
			    : (uint64_t)LFS_XATTR_ENT_HDR + e->name_len + e->value_len;
	if (need > end - off)
		return -EFSCORRUPTED;
	e->name = (const char *)blk + off + LFS_XATTR_ENT_HDR;
	e->payload = blk + off + LFS_XATTR_ENT_HDR + e->name_len;
	if (out)
		for (uint32_t i = 0; i < (e->value_len + block_size - 1) / block_size; i++)
			if (lfs_xent_slot(e, i) >= nslots)
				return -EFSCORRUPTED;
	return 0;
}

uint32_t
lfs_xent_encode(uint8_t *p, const char *name, uint16_t name_len, uint8_t flags, uint32_t value_len,
		const void *payload, uint32_t payload_len)
{
	lfs_put16(p + LFS_XE_OFF_NAMELEN, name_len);
	p[LFS_XE_OFF_FLAGS] = flags;
	p[LFS_XE_OFF_FLAGS + 1] = 0;
	lfs_put32(p + LFS_XE_OFF_VALLEN, value_len);
	memcpy(p + LFS_XATTR_ENT_HDR, name, name_len);
	if (payload_len)
		memcpy(p + LFS_XATTR_ENT_HDR + name_len, payload, payload_len);
	return LFS_XATTR_ENT_HDR + name_len + payload_len;
}

int
lfs_xroot_decode(struct lfs_xroot *r, const uint8_t *blk, uint32_t block_size)
{
	memset(r, 0, sizeof(*r));
	if (lfs_get32(blk + LFS_XR_OFF_MAGIC) != LFS_XATTR_MAGIC) {
		r->legacy = true;
		r->count = lfs_get32(blk);
		r->ents = LFS_XATTR_HDR;
	} else {
		r->nslots = lfs_get16(blk + LFS_XR_OFF_NSLOTS);
		r->count = lfs_get32(blk + LFS_XR_OFF_COUNT);
		r->ents = LFS_XATTR_ROOT_HDR + 8 * r->nslots;
		if (r->nslots > lfs_xattr_max_slots(block_size))
			return -EFSCORRUPTED;
	}
	/* every entry takes more than 8 bytes */
	if (r->count > (block_size - r->ents) / (LFS_XATTR_ENT_HDR + 1))
		return -EFSCORRUPTED;
	return 0;
}

void
lfs_xroot_encode_hdr(uint8_t *blk, uint32_t nslots, uint32_t count)
{
	memset(blk, 0, LFS_XATTR_ROOT_HDR);
	lfs_put32(blk + LFS_XR_OFF_MAGIC, LFS_XATTR_MAGIC);
	lfs_put16(blk + LFS_XR_OFF_NSLOTS, (uint16_t)nslots);
	lfs_put32(blk + LFS_XR_OFF_COUNT, count);
}

int
lfs_uuid_generate(uint8_t uuid[16])
{
	if (getrandom(uuid, 16, 0) != 16)
		return errno ? -errno : -EIO;
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40);
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
	return 0;
}
