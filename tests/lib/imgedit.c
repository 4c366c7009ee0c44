/*
 * imgedit.c — find, edit and re-seal the structures of an lfs image
 * (imgedit.h).
 */
#include "imgedit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Where an edit's element lies within its instance. */
enum sub_kind {
	SUB_NONE,               /* at off */
	SUB_CKPT_ADDR,          /* a table address after the checkpoint header */
	SUB_NODE_PTR,           /* a pointer of a block-map node */
	SUB_IN_BLOCK,           /* anywhere in the block */
	SUB_UUID,               /* a byte of the uuid */
	SUB_NAME,               /* a byte of a directory record's name */
	SUB_TABLE_PTR,          /* one of the first addresses of a table node (those in use) */
	SUB_HIST_NAME,          /* a byte of a history record's name */
	SUB_XSLOT,              /* a slot of an xattr root (at off within it) */
	SUB_XENT_NAME,          /* a byte of an xattr entry's name */
	SUB_XENT_SLOT,          /* a slot number of an out-of-line value */
};

struct field {
	uint16_t off;
	uint8_t width;
	uint8_t sub;
};

static const struct field super_fields[] = {
	{ LFS_SB_OFF_MAGIC, 4, 0 }, { LFS_SB_OFF_VERSION, 4, 0 }, { LFS_SB_OFF_COMPAT, 4, 0 },
	{ LFS_SB_OFF_INCOMPAT, 4, 0 }, { LFS_SB_OFF_BLOCK_SIZE, 4, 0 }, { LFS_SB_OFF_SEG_BLOCKS, 4, 0 },
	{ LFS_SB_OFF_NBLOCKS, 8, 0 }, { LFS_SB_OFF_NSEGS, 8, 0 }, { LFS_SB_OFF_SEG0, 8, 0 },
	{ LFS_SB_OFF_CKPT0, 8, 0 }, { LFS_SB_OFF_CKPT1, 8, 0 }, { LFS_SB_OFF_CKPT_BLOCKS, 4, 0 },
	{ LFS_SB_OFF_MAX_INODES, 4, 0 }, { LFS_SB_OFF_RESERVED, 4, 0 }, { LFS_SB_OFF_UUID, 1, SUB_UUID },
};
static const struct field ckpt_fields[] = {
	{ LFS_CK_OFF_MAGIC, 4, 0 }, { LFS_CK_OFF_SEQ, 8, 0 }, { LFS_CK_OFF_NEXT_PSEG, 8, 0 },
	{ LFS_CK_OFF_HEAD_SEG, 8, 0 }, { LFS_CK_OFF_HEAD_OFF, 4, 0 }, { LFS_CK_OFF_FLAGS, 4, 0 },
	{ LFS_CK_OFF_NEXT_SEG, 8, 0 }, { LFS_CK_OFF_NIMAP, 4, 0 }, { LFS_CK_OFF_NSUT, 4, 0 },
	{ LFS_CK_OFF_INODES, 8, 0 }, { 0, 8, SUB_CKPT_ADDR },
	/* the snapshot tables (appended: older inputs keep their fields) */
	{ LFS_CK_OFF_HELD_ROOT, 8, 0 }, { LFS_CK_OFF_HELD_SLOTS, 8, 0 }, { LFS_CK_OFF_HIST_ROOT, 8, 0 },
	{ LFS_CK_OFF_HIST_SLOTS, 4, 0 }, { LFS_CK_OFF_PROTECT, 4, 0 },
	/* the unwritten blocks' sum (LFS_FEATURE_UNWRITTEN) */
	{ LFS_CK_OFF_UNWRITTEN, 8, 0 },
};
static const struct field pseg_fields[] = {
	{ LFS_PS_OFF_MAGIC, 4, 0 }, { LFS_PS_OFF_SEQ, 8, 0 }, { LFS_PS_OFF_CKPT, 8, 0 },
	{ LFS_PS_OFF_NEXT_SEG, 8, 0 }, { LFS_PS_OFF_NBLOCKS, 4, 0 }, { LFS_PS_OFF_FLAGS, 4, 0 },
	{ LFS_PS_OFF_REPL, 4, 0 },
};
static const struct field pentry_fields[] = {
	{ LFS_PE_OFF_INO, 4, 0 }, { LFS_PE_OFF_VERSION, 4, 0 }, { LFS_PE_OFF_LBLK, 8, 0 },
	{ LFS_PE_OFF_KIND, 1, 0 },
};
static const struct field inode_fields[] = {
	{ LFS_DI_OFF_INO, 4, 0 }, { LFS_DI_OFF_VERSION, 4, 0 }, { LFS_DI_OFF_MODE, 4, 0 },
	{ LFS_DI_OFF_NLINK, 4, 0 }, { LFS_DI_OFF_FLAGS, 4, 0 }, { LFS_DI_OFF_RDEV, 4, 0 },
	{ LFS_DI_OFF_SIZE, 8, 0 }, { LFS_DI_OFF_BLOCKS, 8, 0 }, { LFS_DI_OFF_ATIME_NS, 4, 0 },
	{ LFS_DI_OFF_PARENT, 4, 0 }, { LFS_DI_OFF_RECLEN, 4, 0 }, { LFS_DI_OFF_INLINE, 4, 0 },
	{ LFS_DI_OFF_MAGIC, 4, 0 }, { LFS_DI_OFF_DIRECT, 8, 0 }, { LFS_DI_OFF_DIRECT + 8, 8, 0 },
	{ LFS_DI_OFF_DIRECT + 88, 8, 0 }, { LFS_DI_OFF_IND, 8, 0 }, { LFS_DI_OFF_IND + 8, 8, 0 },
	{ LFS_DI_OFF_IND + 24, 8, 0 }, { LFS_DI_OFF_XATTR, 8, 0 }, { LFS_INODE_HDR_SIZE, 1, 0 },
	{ LFS_DI_OFF_XBLOCKS, 4, 0 }, { LFS_DI_OFF_UNWRITTEN, 4, 0 },
};
static const struct field imap_fields[] = {
	{ LFS_IM_OFF_DADDR, 8, 0 }, { LFS_IM_OFF_VERSION, 4, 0 }, { LFS_IM_OFF_SLOT, 2, 0 },
	{ LFS_IM_OFF_FLAGS, 2, 0 },
};
static const struct field sut_fields[] = {
	{ LFS_SU_OFF_LIVE, 4, 0 }, { LFS_SU_OFF_FLAGS, 4, 0 }, { LFS_SU_OFF_MTIME, 8, 0 },
};
static const struct field node_fields[] = { { 0, 8, SUB_NODE_PTR } };
static const struct field dirent_fields[] = {
	{ LFS_DE_OFF_INO, 4, 0 }, { LFS_DE_OFF_RECLEN, 2, 0 }, { LFS_DE_OFF_NAMELEN, 1, 0 },
	{ LFS_DE_OFF_TYPE, 1, 0 }, { LFS_DIRENT_HDR, 1, SUB_NAME },
};
static const struct field xattr_fields[] = {
	{ 0, 4, 0 }, { LFS_XATTR_HDR, 2, 0 }, { LFS_XATTR_HDR + 4, 4, 0 }, { 0, 1, SUB_IN_BLOCK },
};
static const struct field tnode_fields[] = { { 0, 8, SUB_TABLE_PTR }, { 0, 8, SUB_NODE_PTR } };
static const struct field held_fields[] = {
	{ LFS_HE_OFF_ORIG, 8, 0 }, { LFS_HE_OFF_CUR, 8, 0 }, { LFS_HE_OFF_FROM, 8, 0 },
	{ LFS_HE_OFF_UNTIL, 8, 0 }, { LFS_HE_OFF_AUX, 8, 0 }, { LFS_HE_OFF_CHARGE, 4, 0 },
	{ LFS_HE_OFF_KIND, 1, 0 }, { LFS_HE_OFF_FLAGS, 1, 0 }, { LFS_HE_OFF_SLOT, 2, 0 },
};
static const struct field hist_fields[] = {
	{ LFS_HI_OFF_SEQ, 8, 0 }, { LFS_HI_OFF_TIME, 8, 0 }, { LFS_HI_OFF_FLAGS, 4, 0 },
	{ LFS_HI_OFF_NAME, 1, SUB_HIST_NAME }, { LFS_HI_OFF_NAME + LFS_HIST_NAME_MAX, 1, 0 },
};
static const struct field repl_fields[] = {
	{ LFS_RP_OFF_INO, 4, 0 }, { LFS_RP_OFF_KIND, 1, 0 }, { LFS_RP_OFF_VERSION, 4, 0 },
	{ LFS_RP_OFF_COUNT, 4, 0 }, { LFS_RP_OFF_ADDR, 8, 0 },
};
static const struct field xroot_fields[] = {
	{ LFS_XR_OFF_MAGIC, 4, 0 }, { LFS_XR_OFF_NSLOTS, 2, 0 }, { LFS_XR_OFF_COUNT, 4, 0 },
	{ 0, 8, SUB_XSLOT }, { 7, 1, SUB_XSLOT }, /* a slot, and its kind */
};
static const struct field xent_fields[] = {
	{ LFS_XE_OFF_NAMELEN, 2, 0 }, { LFS_XE_OFF_FLAGS, 1, 0 }, { LFS_XE_OFF_VALLEN, 4, 0 },
	{ 0, 1, SUB_XENT_NAME }, { 0, 2, SUB_XENT_SLOT },
};
static const struct field raw_fields[] = {
	{ 0, 1, SUB_IN_BLOCK }, { 0, 2, SUB_IN_BLOCK }, { 0, 4, SUB_IN_BLOCK }, { 0, 8, SUB_IN_BLOCK },
};

#define TABLE(t) { t, sizeof(t) / sizeof(t[0]) }
static const struct {
	const struct field *f;
	unsigned n;
} tables[IMG_NTARGETS] = {
	[IMG_SUPER] = TABLE(super_fields), [IMG_CKPT] = TABLE(ckpt_fields), [IMG_PSEG] = TABLE(pseg_fields),
	[IMG_PENTRY] = TABLE(pentry_fields), [IMG_INODE] = TABLE(inode_fields), [IMG_IMAP] = TABLE(imap_fields),
	[IMG_SUT] = TABLE(sut_fields), [IMG_NODE] = TABLE(node_fields), [IMG_DIRENT] = TABLE(dirent_fields),
	[IMG_XATTR] = TABLE(xattr_fields), [IMG_RAW] = TABLE(raw_fields), [IMG_TNODE] = TABLE(tnode_fields),
	[IMG_HELD] = TABLE(held_fields), [IMG_HIST] = TABLE(hist_fields), [IMG_REPL] = TABLE(repl_fields),
	[IMG_RELINK] = TABLE(inode_fields), [IMG_XROOT] = TABLE(xroot_fields), [IMG_XENT] = TABLE(xent_fields),
};

unsigned
img_nfields(unsigned target)
{
	return target < IMG_NTARGETS ? tables[target].n : 0;
}

const char *
img_target_name(unsigned target)
{
	static const char *const names[IMG_NTARGETS] = {
		[IMG_SUPER] = "superblock", [IMG_CKPT] = "checkpoint region", [IMG_PSEG] = "summary header",
		[IMG_PENTRY] = "summary entry", [IMG_INODE] = "inode record", [IMG_IMAP] = "inode map entry",
		[IMG_SUT] = "usage-table entry", [IMG_NODE] = "block-map node", [IMG_DIRENT] = "directory record",
		[IMG_XATTR] = "xattr block", [IMG_RAW] = "block", [IMG_TNODE] = "table root or index block",
		[IMG_HELD] = "held-table entry", [IMG_HIST] = "history record",
		[IMG_REPL] = "replaced-address record (rolled forward)", [IMG_RELINK] = "relink record",
		[IMG_XROOT] = "indexed xattr root", [IMG_XENT] = "xattr entry",
	};
	return target < IMG_NTARGETS ? names[target] : "?";
}

static int
add(struct img *im, unsigned t, uint64_t off)
{
	size_t n = im->count[t];
	if ((n & (n - 1)) == 0) { /* grow at powers of two */
		uint64_t *a = realloc(im->at[t], (n ? 2 * n : 1) * sizeof(uint64_t));
		if (!a)
			return -ENOMEM;
		im->at[t] = a;
	}
	im->at[t][im->count[t]++] = off;
	return 0;
}

static bool
in_image(const struct img *im, uint64_t addr, uint64_t nblocks)
{
	return addr < im->len / im->bs && nblocks <= im->len / im->bs - addr;
}

/* Inode numbers that some record in the log says are directories. */
static int
find_dirs(struct img *im, uint8_t **isdir)
{
	*isdir = calloc(im->sb.max_inodes, 1);
	if (!*isdir)
		return -ENOMEM;
	for (size_t i = 0; i < im->count[IMG_INODE]; i++) {
		struct lfs_dinode di;
		uint64_t off = im->at[IMG_INODE][i];
		if (lfs_dinode_decode(&di, im->buf + off, im->bs - (uint32_t)(off % im->bs)) >= 0 &&
		    di.ino < im->sb.max_inodes && S_ISDIR(di.mode))
			(*isdir)[di.ino] = 1;
	}
	return 0;
}

/* The entries of an xattr root (lblk 0) or leaf, and a root's slots. */
static int
index_xattr(struct img *im, uint64_t base, uint64_t lblk)
{
	const uint8_t *blk = im->buf + base;
	uint32_t nslots = lfs_xattr_max_slots(im->bs), off = LFS_XATTR_HDR, count = lfs_xleaf_count(blk);
	int err = 0;
	if (lblk == 0) {
		struct lfs_xroot r;
		if (lfs_xroot_decode(&r, blk, im->bs))
			return 0;
		if (r.nslots && (err = add(im, IMG_XROOT, base)))
			return err;
		nslots = r.nslots;
		off = r.ents;
		count = r.count;
	}
	for (uint32_t i = 0; i < count && !err; i++) {
		struct lfs_xent x;
		if (lfs_xent_decode(&x, blk, off, im->bs, im->bs, nslots))
			break; /* a value block, or the end */
		err = add(im, IMG_XENT, base + off);
		off += lfs_xent_len(x.name_len, x.value_len, x.flags & LFS_XENT_OUT, im->bs);
	}
	return err;
}

/* Offset off in the index of target t already? (a table's nodes that
 * both regions name are indexed once) */
static bool
indexed(const struct img *im, unsigned t, uint64_t off)
{
	for (size_t i = 0; i < im->count[t]; i++)
		if (im->at[t][i] == off)
			return true;
	return false;
}

/* The nodes of the paged table at root with nslots slots, as a
 * checkpoint names them (not the copies that later ones replaced), and
 * the entries of its pages under nslots. */
static int
index_table(struct img *im, uint64_t root, uint64_t nslots, unsigned entries, uint32_t esize)
{
	uint32_t fan = im->bs / 8, per = im->bs / esize;
	if (!root || !in_image(im, root, 1) || indexed(im, IMG_TNODE, root * im->bs))
		return 0;
	int err = add(im, IMG_TNODE, root * im->bs);
	for (uint32_t k = 0; k < fan && !err; k++) {
		uint64_t idx = lfs_get64(im->buf + root * im->bs + 8 * k);
		if (!idx || !in_image(im, idx, 1) || indexed(im, IMG_TNODE, idx * im->bs))
			continue;
		err = add(im, IMG_TNODE, idx * im->bs);
		for (uint32_t j = 0; j < fan && !err; j++) {
			uint64_t page = lfs_get64(im->buf + idx * im->bs + 8 * j), first = ((uint64_t)k * fan + j) * per;
			if (!page || !in_image(im, page, 1) || first >= nslots || indexed(im, entries, page * im->bs))
				continue;
			for (uint32_t i = 0; i < per && first + i < nslots && !err; i++)
				err = add(im, entries, page * im->bs + (uint64_t)i * esize);
		}
	}
	return err;
}

/* The snapshot tables of both checkpoint regions. */
static int
index_tables(struct img *im)
{
	int err = 0;
	for (int i = 0; i < 2 && !err; i++) {
		if (!in_image(im, im->sb.ckpt_addr[i], 1))
			continue;
		struct lfs_ckpt_hdr h;
		lfs_ckpt_hdr_decode(&h, im->buf + im->sb.ckpt_addr[i] * im->bs);
		if (h.magic != LFS_CKPT_MAGIC)
			continue;
		if (h.ckpt_seq > im->ckpt_seq)
			im->ckpt_seq = h.ckpt_seq;
		err = index_table(im, h.held_root, h.held_slots, IMG_HELD, LFS_HELD_ENTRY_SIZE);
		if (!err)
			err = index_table(im, h.hist_root, h.hist_slots, IMG_HIST, LFS_HIST_ENTRY_SIZE);
	}
	return err;
}

static int
index_block(struct img *im, uint64_t addr, const struct lfs_pseg_entry *e)
{
	uint64_t base = addr * im->bs;
	const uint8_t *blk = im->buf + base;
	int err = add(im, IMG_RAW, base);
	switch (e->kind) {
	case LFS_BK_INODE:
		for (uint32_t off = lfs_inode_block_next(blk, im->bs, 0); off < im->bs && !err;) {
			struct lfs_dinode di;
			int r = lfs_dinode_decode(&di, blk + off, im->bs - off);
			if (r < 0)
				break;
			err = add(im, IMG_INODE, base + off);
			if (!err && (di.flags & LFS_DI_RELINK))
				err = add(im, IMG_RELINK, base + off);
			off = lfs_inode_block_next(blk, im->bs, off + (uint32_t)r);
		}
		break;
	case LFS_BK_INDIR:
		err = err ? err : add(im, IMG_NODE, base);
		break;
	case LFS_BK_XATTR:
		err = err ? err : add(im, IMG_XATTR, base);
		err = err ? err : index_xattr(im, base, e->lblk);
		break;
	case LFS_BK_IMAP:
		for (uint32_t i = 0; i < lfs_imap_per_block(im->bs) && !err; i++)
			err = add(im, IMG_IMAP, base + (uint64_t)i * LFS_IMAP_ENTRY_SIZE);
		break;
	case LFS_BK_SUT:
		for (uint32_t i = 0; i < lfs_sut_per_block(im->bs) && !err; i++)
			if (e->lblk * lfs_sut_per_block(im->bs) + i < im->sb.nsegs)
				err = add(im, IMG_SUT, base + (uint64_t)i * LFS_SUT_ENTRY_SIZE);
		break;
	}
	return err;
}

/* Directory records, once every block and record is known. */
static int
index_dirents(struct img *im, const uint8_t *isdir)
{
	for (size_t p = 0; p < im->npsegs; p++) {
		const uint8_t *sum = im->buf + im->psegs[p].addr * im->bs;
		for (uint32_t j = 0; j < im->psegs[p].n; j++) {
			struct lfs_pseg_entry e;
			lfs_pseg_entry_decode(&e, sum, j);
			if (e.kind != LFS_BK_DATA || e.ino >= im->sb.max_inodes || !isdir[e.ino])
				continue;
			uint64_t base = (im->psegs[p].addr + 1 + j) * im->bs;
			for (uint32_t off = 0; off < im->bs;) {
				struct lfs_dirent d;
				if (lfs_dirent_decode(&d, im->buf + base, off, im->bs))
					break;
				int err = d.ino ? add(im, IMG_DIRENT, base + off) : 0;
				if (err)
					return err;
				off += d.rec_len;
			}
		}
	}
	return 0;
}

static int
index_log(struct img *im)
{
	const struct lfs_super *sb = &im->sb;
	uint32_t seed = lfs_super_seed(sb);
	for (uint64_t s = 0; s < sb->nsegs; s++) {
		uint64_t first = sb->seg0 + s * sb->seg_blocks;
		for (uint32_t off = 0; off + 2 <= sb->seg_blocks;) {
			if (!in_image(im, first + off, 1))
				break;
			const uint8_t *sum = im->buf + (first + off) * im->bs;
			struct lfs_pseg_hdr h;
			if (lfs_pseg_verify(sum, im->bs, seed))
				break;
			lfs_pseg_hdr_decode(&h, sum);
			if (h.nblocks > sb->seg_blocks - off - 1 || !in_image(im, first + off, 1 + (uint64_t)h.nblocks))
				break;
			size_t n = im->npsegs;
			if ((n & (n - 1)) == 0) {
				struct img_pseg *a = realloc(im->psegs, (n ? 2 * n : 1) * sizeof(*a));
				if (!a)
					return -ENOMEM;
				im->psegs = a;
			}
			im->psegs[im->npsegs++] = (struct img_pseg){ first + off, h.nblocks };
			int err = add(im, IMG_PSEG, (first + off) * im->bs);
			for (uint32_t j = 0; j < h.nblocks && !err; j++) {
				struct lfs_pseg_entry e;
				lfs_pseg_entry_decode(&e, sum, j);
				err = add(im, IMG_PENTRY,
					  (first + off) * im->bs + LFS_PSEG_HDR_SIZE + (uint64_t)j * LFS_PSEG_ENTRY_SIZE);
				if (!err)
					err = index_block(im, first + off + 1 + j, &e);
			}
			/* those that roll-forward reads: after the last checkpoint */
			uint32_t nrepl;
			if (!err && h.ckpt_seq >= im->ckpt_seq && !lfs_pseg_repl_count(&h, im->bs, &nrepl))
				for (uint32_t i = 0; i < nrepl && !err; i++)
					err = add(im, IMG_REPL,
						  (first + off) * im->bs + lfs_pseg_repl_off(h.nblocks) +
							  (uint64_t)i * LFS_REPL_REC_SIZE);
			if (err)
				return err;
			off += 1 + h.nblocks;
		}
	}
	return 0;
}

int
img_open(struct img *im, uint8_t *buf, size_t len)
{
	memset(im, 0, sizeof(*im));
	im->buf = buf;
	im->len = len;
	if (len < LFS_SB_SIZE || lfs_super_decode(&im->sb, buf))
		return -EINVAL;
	im->bs = im->sb.block_size;
	if (!in_image(im, 0, im->sb.nblocks))
		return -EINVAL;
	int err = add(im, IMG_SUPER, 0);
	for (int i = 0; i < 2 && !err; i++)
		err = add(im, IMG_CKPT, im->sb.ckpt_addr[i] * im->bs);
	if (!err)
		err = index_tables(im);
	if (!err)
		err = index_log(im);
	uint8_t *isdir = NULL;
	if (!err)
		err = find_dirs(im, &isdir);
	if (!err)
		err = index_dirents(im, isdir);
	free(isdir);
	if (err)
		img_close(im);
	return err;
}

void
img_close(struct img *im)
{
	for (int t = 0; t < IMG_NTARGETS; t++)
		free(im->at[t]);
	free(im->psegs);
	memset(im, 0, sizeof(*im));
}

int
img_field(const struct img *im, unsigned target, unsigned field, uint32_t which, uint32_t sub, uint64_t *off,
	  unsigned *width)
{
	if (target >= IMG_NTARGETS || !im->count[target])
		return -ENOENT;
	const struct field *f = &tables[target].f[field % tables[target].n];
	uint64_t base = im->at[target][which % im->count[target]];
	uint32_t in_blk = (uint32_t)(base % im->bs), room = im->bs - in_blk;
	uint64_t at = base + f->off;
	uint32_t ntables = lfs_imap_nblocks(im->sb.max_inodes, im->bs) + lfs_sut_nblocks(im->sb.nsegs, im->bs);
	switch (f->sub) {
	case SUB_CKPT_ADDR:
		at = base + LFS_CKPT_HDR_SIZE + 8 * (uint64_t)(sub % ntables);
		break;
	case SUB_NODE_PTR:
		at = base + 8 * (uint64_t)(sub % (im->bs / 8));
		break;
	case SUB_IN_BLOCK:
		at = base + sub % (room - f->width + 1);
		break;
	case SUB_UUID:
		at = base + f->off + sub % 16;
		break;
	case SUB_NAME:
		at = base + LFS_DIRENT_HDR + sub % (room - LFS_DIRENT_HDR);
		break;
	case SUB_TABLE_PTR:
		at = base + 8 * (uint64_t)(sub % 4);
		break;
	case SUB_HIST_NAME:
		at = base + f->off + sub % (LFS_HIST_NAME_MAX + 1);
		break;
	case SUB_XSLOT:
		at = base + LFS_XATTR_ROOT_HDR + 8 * (uint64_t)(sub % lfs_xattr_max_slots(im->bs)) + f->off;
		break;
	case SUB_XENT_NAME:
	case SUB_XENT_SLOT: {
		/* within the entry as it is now, or its header's first byte */
		uint32_t name_len = room >= LFS_XATTR_ENT_HDR ? lfs_get16(im->buf + base + LFS_XE_OFF_NAMELEN) : 0;
		uint32_t rel = LFS_XATTR_ENT_HDR + (f->sub == SUB_XENT_NAME ? (name_len ? sub % name_len : 0)
									 : name_len + 2 * (sub % 16));
		at = rel + f->width <= room ? base + rel : base;
		break;
	}
	}
	if (at + f->width > im->len)
		return -ENOENT;
	*off = at;
	*width = f->width;
	return 0;
}

static uint64_t
get(const uint8_t *p, unsigned w)
{
	return w == 1 ? p[0] : w == 2 ? lfs_get16(p) : w == 4 ? lfs_get32(p) : lfs_get64(p);
}

static void
put(uint8_t *p, unsigned w, uint64_t v)
{
	if (w == 1)
		p[0] = (uint8_t)v;
	else if (w == 2)
		lfs_put16(p, (uint16_t)v);
	else if (w == 4)
		lfs_put32(p, (uint32_t)v);
	else
		lfs_put64(p, v);
}

int
img_apply(struct img *im, const struct img_edit *e)
{
	uint64_t off;
	unsigned w;
	int err = img_field(im, e->target, e->field, e->which, e->sub, &off, &w);
	if (err)
		return err;
	uint8_t *p = im->buf + off;
	uint64_t v = get(p, w);
	switch (e->op % IMG_NOPS) {
	case IMG_SET:
		v = e->value;
		break;
	case IMG_ADD:
		v += e->value;
		break;
	case IMG_XOR:
		v ^= e->value;
		break;
	}
	put(p, w, v);
	return 0;
}

void
img_reseal(struct img *im)
{
	struct lfs_super cur = { 0 };
	memcpy(cur.uuid, im->buf + LFS_SB_OFF_UUID, sizeof(cur.uuid));
	uint32_t seed = lfs_super_seed(&cur);
	for (size_t p = 0; p < im->npsegs; p++) {
		uint8_t *sum = im->buf + im->psegs[p].addr * im->bs;
		struct lfs_pseg_hdr h;
		lfs_pseg_hdr_decode(&h, sum);
		uint32_t n = h.nblocks;
		if (n > lfs_pseg_max_entries(im->bs))
			n = lfs_pseg_max_entries(im->bs);
		for (uint32_t j = 0; j < n && in_image(im, im->psegs[p].addr + 1 + j, 1); j++)
			lfs_pseg_entry_set_crc(sum, j, lfs_crc(seed, sum + (size_t)(j + 1) * im->bs, im->bs));
		lfs_pseg_seal(sum, im->bs, seed);
	}
	size_t rlen = (size_t)im->sb.ckpt_blocks * im->bs;
	for (int i = 0; i < 2; i++) {
		uint8_t *region = im->buf + im->sb.ckpt_addr[i] * im->bs;
		struct lfs_ckpt_hdr h;
		lfs_ckpt_hdr_decode(&h, region);
		if (h.magic == LFS_CKPT_MAGIC)
			lfs_ckpt_seal(region, rlen, seed);
	}
	lfs_super_seal(im->buf);
}

uint8_t *
img_record(const struct img *im, uint64_t daddr, uint16_t slot)
{
	uint64_t off = daddr * im->bs + (uint64_t)slot * LFS_INODE_ALIGN;
	return off + LFS_INODE_HDR_SIZE <= im->len ? im->buf + off : NULL;
}
