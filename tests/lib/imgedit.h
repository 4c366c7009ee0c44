/*
 * imgedit.h — edit an lfs image in memory as an attacker could, and
 * re-seal every checksum so that the edit reaches past them.
 *
 * For the crafted-image regression tests (tests/unit/check_corrupt.c) and
 * the structure-aware fuzzer (tests/fuzz/fuzz_mount.c).  Only the format
 * module (format.h) decodes and encodes; this file finds the structures
 * in an image and names their fields by the offsets format.h gives.
 *
 * Use:  img_open() indexes a valid image (the superblock, every verifying
 * summary chain, and what the summaries name: inode records, directory
 * records, block-map nodes, map and usage-table entries, xattr blocks,
 * their roots and entries, the nodes and entries of the snapshot tables,
 * replaced-address records, relink records);
 * edit through img_field() / img_edit() or by hand; img_reseal() then
 * recomputes every block crc in every indexed summary, every summary crc,
 * both checkpoint regions' crcs and the superblock crc.
 */
#ifndef LFS_IMGEDIT_H
#define LFS_IMGEDIT_H

#include "format.h"

#include <stddef.h>
#include <stdint.h>

/* What an edit can aim at; an instance of each is found by index. */
enum img_target {
	IMG_SUPER,              /* the superblock: one instance */
	IMG_CKPT,               /* checkpoint regions: two instances */
	IMG_PSEG,               /* summary headers */
	IMG_PENTRY,             /* summary entries */
	IMG_INODE,              /* inode records in INODE blocks */
	IMG_IMAP,               /* inode map entries in IMAP blocks */
	IMG_SUT,                /* usage-table entries in SUT blocks */
	IMG_NODE,               /* block-map nodes (INDIR blocks) */
	IMG_DIRENT,             /* directory records in directories' DATA blocks */
	IMG_XATTR,              /* XATTR blocks */
	IMG_RAW,                /* any block a summary names */
	/* the structures of the snapshots, roll-forward and xattr blocks,
	 * after the first eleven so that older inputs keep their targets */
	IMG_TNODE,              /* root and index blocks of the paged tables */
	IMG_HELD,               /* held-table entries under the slots in use */
	IMG_HIST,               /* checkpoint-history records under the slots in use */
	IMG_REPL,               /* replaced-address records that roll-forward reads */
	IMG_RELINK,             /* relink records (inode records, LFS_DI_RELINK) */
	IMG_XROOT,              /* xattr roots with slots: header, slots */
	IMG_XENT,               /* xattr entries in roots and leaves */
	IMG_NTARGETS
};

/* One edit: what, which field, how.  `which` and `sub` are taken modulo
 * what exists, so any values name something. */
enum img_op { IMG_SET, IMG_ADD, IMG_XOR, IMG_NOPS };
struct img_edit {
	uint8_t target;             /* enum img_target */
	uint8_t field;              /* index into the target's field table */
	uint8_t op;                 /* enum img_op */
	uint32_t which;             /* instance */
	uint32_t sub;               /* element within the instance (node slot, byte, name char) */
	uint64_t value;
};

struct img_pseg {
	uint64_t addr;              /* of the summary block */
	uint32_t n;                 /* blocks it names, as indexed */
};

struct img {
	uint8_t *buf;
	size_t len;
	struct lfs_super sb;
	uint32_t bs;
	struct img_pseg *psegs;
	size_t npsegs;
	uint64_t ckpt_seq;          /* the newer region's checkpoint */
	/* byte offsets in buf of each instance, per target */
	uint64_t *at[IMG_NTARGETS];
	size_t count[IMG_NTARGETS];
};

/* Index a valid image held in buf (not copied; edits go to buf).
 * Returns 0, or -EINVAL if its superblock does not decode. */
int img_open(struct img *im, uint8_t *buf, size_t len);
void img_close(struct img *im);
/* Field `field` of instance `which` of `target`: its byte offset in buf
 * and width (1, 2, 4 or 8); -ENOENT if there is no such instance. */
int img_field(const struct img *im, unsigned target, unsigned field, uint32_t which, uint32_t sub,
	      uint64_t *off, unsigned *width);
/* Number of fields of a target; its name. */
unsigned img_nfields(unsigned target);
const char *img_target_name(unsigned target);
/* Apply one edit (not yet sealed); -ENOENT if it names nothing. */
int img_apply(struct img *im, const struct img_edit *e);
void img_reseal(struct img *im);
/* The record at (daddr, slot), as the inode map names it. */
uint8_t *img_record(const struct img *im, uint64_t daddr, uint16_t slot);

#endif
