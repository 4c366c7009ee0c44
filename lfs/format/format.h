/*
 * format.h — the on-disk format of lfs, and the only code that knows it.
 *
 * Every tool, the FUSE daemon and the cleaner decode and encode disk
 * structures through the functions declared here; nothing else touches
 * raw on-disk bytes.  All fields are fixed-width little-endian.
 *
 * Layout of a device of N blocks (block size B, default 4096):
 *
 *   block 0              superblock (written by mkfs; fsck.lfs -y may
 *                        rewrite a damaged copy from the other)
 *   blocks 1 .. C        checkpoint region 0  } written in place, in turn;
 *   blocks C+1 .. 2C     checkpoint region 1  } the newer valid one wins
 *   seg0 ..              segments 0 .. nsegs-1, each seg_blocks blocks,
 *                        seg0 rounded up to a segment boundary
 *   ..                   unused up to the last block
 *   block N-1            backup superblock: the same 256 bytes as block 0
 *                        (LFS_FEATURE_BACKUP_SB; written once, by mkfs)
 *
 * The backup sits where it can be found without block 0: the last whole
 * block of the device, N = device bytes / B, for each possible B
 * (lfs_super_backup_block()), as NILFS2 keeps its second superblock at
 * the end of the device.  mkfs ends the segments before it.  A reader
 * takes the backup only when block 0 fails verification, and only if the
 * backup names its own block size and its own block.  Images made before
 * the backup existed have the feature bit clear and are read as before.
 *
 * A segment is filled with partial segments ("psegs"), back to back:
 *
 *   [summary block][block 1][block 2] ... [block n]
 *
 * The summary names every block that follows (owner inode, version,
 * logical block or kind) and carries the crc32 of each, plus its own.
 * Psegs are grouped: a flush of the filesystem writes one or more psegs,
 * the last marked LFS_PSEG_END.  Roll-forward applies whole groups only,
 * so each group takes the filesystem from one consistent state to the next.
 *
 * Blocks in the log:
 *   DATA    file/directory/symlink content, (ino, lblk)
 *   INDIR   block-map node, (ino, node id; see lfs_node_id())
 *   INODE   packed inode records, each 64-byte aligned, variable length
 *           (small files keep their data inline in the record)
 *   XATTR   extended attributes of an inode: its root block (lblk 0),
 *           and with LFS_FEATURE_XATTR_BLOCKS the blocks the root's slot
 *           table names (lblk = slot + 1): leaves of attributes, and the
 *           blocks of values too large for a leaf
 *   IMAP    a block of the inode map (ino -> record address), written at
 *           checkpoints
 *   SUT     a block of the segment usage table, written at checkpoints
 *
 * All checksums are crc32 seeded with the filesystem's seed (from its
 * uuid), so blocks left over from an earlier mkfs never verify.
 */
#ifndef LFS_FORMAT_H
#define LFS_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <string.h>

#define LFS_SB_MAGIC        0x3153464cu /* "LFS1" */
#define LFS_CKPT_MAGIC      0x54504b43u /* "CKPT" */
#define LFS_PSEG_MAGIC      0x47455350u /* "PSEG" */
#define LFS_INODE_MAGIC     0x444f4e49u /* "INOD" */
#define LFS_VERSION         1

#define LFS_MIN_BLOCK_SIZE  1024
#define LFS_MAX_BLOCK_SIZE  32768 /* dirent rec_len is 16 bits */
#define LFS_DEFAULT_BLOCK_SIZE 4096
#define LFS_DEFAULT_SEG_SIZE   (1u << 20)
#define LFS_NAME_MAX        255
#define LFS_ROOT_INO        1u
#define LFS_NDIRECT         12
#define LFS_NINDIRECT       4   /* trees of depth 1..4 */

/* Limits mkfs.lfs applies, and lfs_super_decode() with it: an image
 * outside them was not made by mkfs and is not mounted.  They bound what
 * a mount allocates: per-segment tables (seg_blocks), the inode map and
 * the loops over it (max_inodes, at most one inode per 256 bytes of the
 * device, the smallest record). */
#define LFS_MIN_SEG_BLOCKS  8
#define LFS_MAX_SEG_BLOCKS  (1u << 16)
#define LFS_MIN_INODES      1024u
#define LFS_MAX_INODES      (1u << 26)
#define LFS_MIN_FREE_SEGS   8   /* segments beyond the reserve */

/* Directory records are addressed by 32-bit byte positions (readdir
 * cookies and the in-memory index), so a directory stops growing at
 * 2 GiB (ENOSPC), and a larger one on disk is corrupt.  That is 2^27
 * records of the smallest size, twice the largest max_inodes. */
#define LFS_DIR_MAX_SIZE    (1ull << 31)
/* A symlink's target, as lfs_symlink() takes it (PATH_MAX less the NUL). */
#define LFS_SYMLINK_MAX     4095

/* Errors on a corrupt image, as ext4 and XFS report them. */
#ifndef EFSCORRUPTED
#define EFSCORRUPTED        EUCLEAN
#endif

/* ---------------------------------------------------------------- */
/* Byte order helpers: the only place that converts.                */

static inline void lfs_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void lfs_put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static inline void lfs_put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static inline uint16_t lfs_get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t lfs_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t lfs_get64(const uint8_t *p) { return (uint64_t)lfs_get32(p) | ((uint64_t)lfs_get32(p + 4) << 32); }

/* ---------------------------------------------------------------- */
/* Superblock: block 0, written by mkfs only.                       */

#define LFS_SB_SIZE 256
#define LFS_LABEL_MAX 64

/* feature_compat: readers that do not know a bit may ignore it */
#define LFS_FEATURE_BACKUP_SB 1u    /* backup_sb holds a copy of this superblock */
/* feature_incompat: a reader that does not know a bit must refuse */
#define LFS_FEATURE_CSUM_SEED 1u    /* checksums are seeded from csum_seed, not the uuid:
				     * set by lfs-tune -U, so that a new uuid leaves
				     * every checksum in the log valid (as ext4's
				     * metadata_csum_seed) */
#define LFS_FEATURE_XATTR_BLOCKS 2u  /* an inode's XATTR root may name more XATTR
				     * blocks ("XATTR blocks" below): values up
				     * to 64 KiB, thousands of attributes.  Set
				     * by mkfs.lfs; images without it keep one
				     * block of attributes per inode */
#define LFS_FEATURE_RECORD_CHARGE 4u /* the usage table counts an inode record
				     * as the share of a block that records of
				     * its length take when packed (see
				     * lfs_inode_charge), not its length: df
				     * then sees what small files really hold.
				     * Set by mkfs.lfs; images without it count
				     * the length */
#define LFS_FEATURE_SNAPSHOTS 8u    /* the checkpoint region names a table of
				     * held blocks and a checkpoint history
				     * ("Snapshots" below): blocks a retained
				     * checkpoint reads stay, and TABLE and
				     * HELD blocks are in the log.  Set by
				     * mkfs.lfs; images without it take no
				     * snapshots */
#define LFS_FEATURE_RELINK 16u     /* an fsync may log the leaves of a file's
				     * block map and its record without the
				     * nodes above them: roll-forward relinks
				     * them (LFS_DI_RELINK below).  Set by
				     * mkfs.lfs; images without it log the
				     * nodes with every record */
#define LFS_FEATURE_UNWRITTEN 32u  /* a block-map pointer may be LFS_ADDR_UNWRITTEN:
				     * blocks fallocate reserved and nobody wrote
				     * ("Unwritten blocks" below).  Set by
				     * mkfs.lfs; images without it have none */
#define LFS_FEATURE_RECEIVED 64u   /* the history may hold received snapshots (a tree
				    * other than the root, LFS_HIST_RECEIVED, and
				    * their LFS_HIST_ORIGIN records) and an inode may
				    * be LFS_DI_STAGED: set by the daemon when it
				    * first takes a stream (lfs-receive(8)) */
#define LFS_FEATURE_INCOMPAT_KNOWN                                                                  \
	(LFS_FEATURE_CSUM_SEED | LFS_FEATURE_XATTR_BLOCKS | LFS_FEATURE_RECORD_CHARGE | LFS_FEATURE_SNAPSHOTS | \
	 LFS_FEATURE_RELINK | LFS_FEATURE_UNWRITTEN | LFS_FEATURE_RECEIVED)

struct lfs_super {
	uint32_t magic;
	uint32_t version;
	uint32_t feature_compat;
	uint32_t feature_incompat;
	uint32_t block_size;
	uint32_t seg_blocks;        /* blocks per segment */
	uint64_t nblocks;           /* device blocks in use */
	uint64_t nsegs;
	uint64_t seg0;              /* first block of segment 0 */
	uint64_t ckpt_addr[2];      /* first block of each checkpoint region */
	uint32_t ckpt_blocks;       /* size of each checkpoint region */
	uint32_t max_inodes;
	uint32_t reserved_segs;     /* kept back so cleaning can always proceed */
	uint32_t pad0;
	uint64_t created_ns;
	uint8_t uuid[16];
	char label[LFS_LABEL_MAX + 1];
	bool label_refused;         /* decoded: the label has bytes mkfs.lfs and
				     * lfs-tune refuse (lfs_label_check); the
				     * image is still lfs, its label shown only
				     * escaped (text.h) */
	uint64_t backup_sb;         /* block of the backup, 0 without LFS_FEATURE_BACKUP_SB */
	uint32_t csum_seed;         /* with LFS_FEATURE_CSUM_SEED: the seed the first uuid gave */
};

/* Offsets of the superblock fields; tests check each one. */
enum {
	LFS_SB_OFF_MAGIC = 0, LFS_SB_OFF_VERSION = 4, LFS_SB_OFF_COMPAT = 8,
	LFS_SB_OFF_INCOMPAT = 12, LFS_SB_OFF_BLOCK_SIZE = 16, LFS_SB_OFF_SEG_BLOCKS = 20,
	LFS_SB_OFF_NBLOCKS = 24, LFS_SB_OFF_NSEGS = 32, LFS_SB_OFF_SEG0 = 40,
	LFS_SB_OFF_CKPT0 = 48, LFS_SB_OFF_CKPT1 = 56, LFS_SB_OFF_CKPT_BLOCKS = 64,
	LFS_SB_OFF_MAX_INODES = 68, LFS_SB_OFF_RESERVED = 72, LFS_SB_OFF_CREATED = 80,
	LFS_SB_OFF_UUID = 88, LFS_SB_OFF_LABEL = 104, LFS_SB_OFF_BACKUP = 168, LFS_SB_OFF_SEED = 176,
	LFS_SB_OFF_CRC = 252,
};
_Static_assert(LFS_SB_OFF_LABEL + LFS_LABEL_MAX <= LFS_SB_OFF_BACKUP, "label overlaps the backup address");
_Static_assert(LFS_SB_OFF_BACKUP + 8 <= LFS_SB_OFF_SEED, "backup address overlaps the seed");
_Static_assert(LFS_SB_OFF_SEED + 4 <= LFS_SB_OFF_CRC, "seed overlaps crc");
_Static_assert(LFS_SB_OFF_CRC + 4 == LFS_SB_SIZE, "superblock size");

void lfs_super_encode(const struct lfs_super *sb, uint8_t buf[LFS_SB_SIZE]);
/* Store the crc of an encoded superblock (lfs_super_encode does). */
void lfs_super_seal(uint8_t buf[LFS_SB_SIZE]);
/* Returns 0, -EINVAL (not lfs), -EPROTONOSUPPORT (newer version),
 * -EFSCORRUPTED (bad crc or impossible geometry).  A label that could
 * not have been set (lfs_label_check) sets label_refused: the image
 * still decodes. */
int lfs_super_decode(struct lfs_super *sb, const uint8_t buf[LFS_SB_SIZE]);
/* The seed of every checksum in the log and the checkpoint regions. */
uint32_t lfs_super_seed(const struct lfs_super *sb);
/* A random UUID, RFC 4122 version 4 (its version and variant bits set);
 * 0 or -errno. */
int lfs_uuid_generate(uint8_t uuid[16]);
/* Where mkfs puts the backup superblock on a device of `dev_bytes` with
 * blocks of `block_size`: its last whole block (0: too small for one). */
uint64_t lfs_super_backup_block(uint64_t dev_bytes, uint32_t block_size);
/* The largest max_inodes mkfs gives a device of dev_blocks blocks. */
uint32_t lfs_inodes_cap(uint64_t dev_blocks, uint32_t block_size);
/* Blocks the inode map and the usage table take, one entry per inode /
 * per segment, lfs_imap_per_block() / lfs_sut_per_block() to a block
 * (both below, with the entries). */
uint32_t lfs_imap_nblocks(uint32_t max_inodes, uint32_t block_size);
uint32_t lfs_sut_nblocks(uint64_t nsegs, uint32_t block_size);

/* ---------------------------------------------------------------- */
/* Checksums.                                                       */

uint32_t lfs_crc(uint32_t seed, const void *buf, size_t len);
/* Combining crcs: lfs_crc(seed, A || B) is lfs_crc_combine(lfs_crc(seed, A),
 * lfs_crc(0, B), op) with op = lfs_crc_combine_gen(length of B), so a
 * large checksummed area can be re-sealed from per-block crcs. */
uint32_t lfs_crc_combine_gen(uint64_t len2);
uint32_t lfs_crc_combine(uint32_t crc1, uint32_t crc2, uint32_t op);

/* ---------------------------------------------------------------- */
/* Checkpoint region: header then the addresses of every imap and   */
/* SUT block (0 = never written: all entries free/zero).            */

#define LFS_CKPT_HDR_SIZE 128

struct lfs_ckpt_hdr {
	uint32_t magic;
	uint32_t crc;               /* over the whole region, this field zero */
	uint64_t ckpt_seq;          /* increases by one per checkpoint */
	uint64_t timestamp_ns;
	uint64_t next_pseg_seq;     /* seq the first pseg after us must carry */
	uint64_t head_seg;          /* log head: segment and block offset */
	uint32_t head_off;
	uint32_t flags;             /* LFS_CKPT_CLEAN: written at unmount */
	uint64_t next_seg;          /* segment the log continues in */
	uint32_t n_imap_blocks;
	uint32_t n_sut_blocks;
	uint64_t inodes_used;
	uint64_t bytes_written;     /* lifetime counter, for write amplification */
	/* LFS_FEATURE_SNAPSHOTS (zero without it): the roots of the paged
	 * tables of held blocks and of the checkpoint history, and their
	 * slots in use */
	uint64_t held_root, held_slots;
	uint64_t hist_root;
	uint32_t hist_slots;
	uint32_t protect_s;         /* plain checkpoints are kept this long */
	/* LFS_FEATURE_UNWRITTEN (zero without it): the unwritten blocks of
	 * every inode record this checkpoint names, summed */
	uint64_t unwritten;
	/* The bytes of block-map nodes and inode records the live tree
	 * holds (struct lfs_fs, drag_bytes), with LFS_CKPT_DRAG_KNOWN set;
	 * zero in checkpoints written before the count was kept. */
	uint64_t drag;
};
#define LFS_CKPT_CLEAN 1u
#define LFS_CKPT_DRAG_KNOWN (1ull << 63)

enum {
	LFS_CK_OFF_MAGIC = 0, LFS_CK_OFF_CRC = 4, LFS_CK_OFF_SEQ = 8, LFS_CK_OFF_TIME = 16,
	LFS_CK_OFF_NEXT_PSEG = 24, LFS_CK_OFF_HEAD_SEG = 32, LFS_CK_OFF_HEAD_OFF = 40,
	LFS_CK_OFF_FLAGS = 44, LFS_CK_OFF_NEXT_SEG = 48, LFS_CK_OFF_NIMAP = 56,
	LFS_CK_OFF_NSUT = 60, LFS_CK_OFF_INODES = 64, LFS_CK_OFF_BYTES = 72,
	LFS_CK_OFF_HELD_ROOT = 80, LFS_CK_OFF_HELD_SLOTS = 88, LFS_CK_OFF_HIST_ROOT = 96,
	LFS_CK_OFF_HIST_SLOTS = 104, LFS_CK_OFF_PROTECT = 108, LFS_CK_OFF_UNWRITTEN = 112, LFS_CK_OFF_DRAG = 120,
};
_Static_assert(LFS_CK_OFF_DRAG + 8 <= LFS_CKPT_HDR_SIZE, "checkpoint header size");

void lfs_ckpt_hdr_encode(const struct lfs_ckpt_hdr *h, uint8_t *buf);
void lfs_ckpt_hdr_decode(struct lfs_ckpt_hdr *h, const uint8_t *buf);
/* Bytes a checkpoint region needs for the given table sizes. */
size_t lfs_ckpt_region_bytes(uint32_t n_imap_blocks, uint32_t n_sut_blocks);
/* After the header, the table block addresses: imap blocks, then SUT. */
static inline uint64_t lfs_ckpt_addr_get(const uint8_t *region, size_t i)
{
	return lfs_get64(region + LFS_CKPT_HDR_SIZE + 8 * i);
}
static inline void lfs_ckpt_addr_put(uint8_t *region, size_t i, uint64_t addr)
{
	lfs_put64(region + LFS_CKPT_HDR_SIZE + 8 * i, addr);
}
/* Seal: the crc of the whole encoded region with its crc field zero,
 * stored in that field.  Verify: 0 if it matches, else -EFSCORRUPTED. */
void lfs_ckpt_seal(uint8_t *region, size_t len, uint32_t seed);
int lfs_ckpt_verify(uint8_t *region, size_t len, uint32_t seed);

/* ---------------------------------------------------------------- */
/* Partial segment summary.                                         */

#define LFS_PSEG_HDR_SIZE 64
#define LFS_PSEG_ENTRY_SIZE 24
#define LFS_PSEG_END 1u         /* last pseg of a flush group */
#define LFS_PSEG_REPL 2u        /* its tail holds replaced addresses (below) */

enum lfs_block_kind {
	LFS_BK_DATA = 1,
	LFS_BK_INDIR = 2,
	LFS_BK_INODE = 3,
	LFS_BK_XATTR = 4,
	LFS_BK_IMAP = 5,
	LFS_BK_SUT = 6,
	LFS_BK_TABLE = 7,           /* a node of a paged table (Snapshots, below):
				     * ino = the table, lblk = lfs_table_node_id */
	LFS_BK_HELD = 8,            /* the cleaner's copy of a held block: lblk =
				     * the address the checkpoints that hold it use */
};

struct lfs_pseg_hdr {
	uint32_t magic;
	uint32_t sum_crc;           /* over the summary block, this field zero */
	uint64_t seq;
	uint64_t ckpt_seq;          /* the checkpoint this pseg follows */
	uint64_t timestamp_ns;
	uint64_t next_seg;
	uint32_t nblocks;           /* blocks after the summary */
	uint32_t flags;
	uint32_t repl;              /* with LFS_PSEG_REPL: records in the tail */
};

enum {
	LFS_PS_OFF_MAGIC = 0, LFS_PS_OFF_CRC = 4, LFS_PS_OFF_SEQ = 8, LFS_PS_OFF_CKPT = 16,
	LFS_PS_OFF_TIME = 24, LFS_PS_OFF_NEXT_SEG = 32, LFS_PS_OFF_NBLOCKS = 40, LFS_PS_OFF_FLAGS = 44,
	LFS_PS_OFF_REPL = 48,
	/* within an entry, at LFS_PSEG_HDR_SIZE + i * LFS_PSEG_ENTRY_SIZE */
	LFS_PE_OFF_INO = 0, LFS_PE_OFF_VERSION = 4, LFS_PE_OFF_LBLK = 8, LFS_PE_OFF_CRC = 16,
	LFS_PE_OFF_KIND = 20,
};
_Static_assert(LFS_PS_OFF_REPL + 4 <= LFS_PSEG_HDR_SIZE, "pseg header size");
_Static_assert(LFS_PE_OFF_KIND + 1 <= LFS_PSEG_ENTRY_SIZE, "pseg entry size");

struct lfs_pseg_entry {
	uint32_t ino;
	uint32_t version;
	uint64_t lblk;              /* logical block, node id, or table index */
	uint32_t crc;               /* of the block */
	uint8_t kind;
};

static inline uint32_t lfs_pseg_max_entries(uint32_t block_size)
{
	return (block_size - LFS_PSEG_HDR_SIZE) / LFS_PSEG_ENTRY_SIZE;
}

void lfs_pseg_hdr_encode(const struct lfs_pseg_hdr *h, uint8_t *blk);
void lfs_pseg_hdr_decode(struct lfs_pseg_hdr *h, const uint8_t *blk);
void lfs_pseg_entry_encode(const struct lfs_pseg_entry *e, uint8_t *blk, uint32_t i);
void lfs_pseg_entry_decode(struct lfs_pseg_entry *e, const uint8_t *blk, uint32_t i);
void lfs_pseg_entry_set_crc(uint8_t *blk, uint32_t i, uint32_t crc);

/*
 * Replaced addresses (LFS_PSEG_REPL; only in the summary of a group's
 * last pseg): after its n entries, from byte lfs_pseg_repl_off(n),
 * `repl` records of 16 bytes.  A header record (kind 0) names an inode,
 * its version and a count: the count block records after it (ino, kind
 * DATA, INDIR or XATTR, address) are every block of that inode the
 * writer stopped counting since the inode's previous record, so that
 * roll-forward can uncount them for the inode's record in this group
 * without reading the block map it replaces.  An inode with no header
 * is compared map against map, as is every inode of a summary without
 * the flag (and a reader that ignores the tail does just that).
 */
#define LFS_REPL_REC_SIZE 16

struct lfs_repl_rec {
	uint32_t ino;
	uint8_t kind;               /* 0: a header */
	uint32_t version;           /* header */
	uint32_t count;             /* header: block records that follow */
	uint64_t addr;              /* block record */
};

enum {
	LFS_RP_OFF_INO = 0, LFS_RP_OFF_KIND = 4, LFS_RP_OFF_VERSION = 8, LFS_RP_OFF_COUNT = 12,
	LFS_RP_OFF_ADDR = 8,
};
_Static_assert(LFS_RP_OFF_COUNT + 4 == LFS_REPL_REC_SIZE, "repl header record size");
_Static_assert(LFS_RP_OFF_ADDR + 8 == LFS_REPL_REC_SIZE, "repl block record size");

static inline uint32_t lfs_pseg_repl_off(uint32_t nblocks)
{
	return LFS_PSEG_HDR_SIZE + nblocks * LFS_PSEG_ENTRY_SIZE;
}

/* Records a summary with n entries has room for after them. */
static inline uint32_t lfs_pseg_repl_room(uint32_t block_size, uint32_t nblocks)
{
	uint32_t off = lfs_pseg_repl_off(nblocks);
	return off < block_size ? (block_size - off) / LFS_REPL_REC_SIZE : 0;
}

void lfs_repl_rec_encode(const struct lfs_repl_rec *r, uint8_t *sum, uint32_t nblocks, uint32_t i);
void lfs_repl_rec_decode(struct lfs_repl_rec *r, const uint8_t *sum, uint32_t nblocks, uint32_t i);
/* The records a verified summary carries: 0 (none without the flag), or
 * -EFSCORRUPTED if they would not fit in its block. */
int lfs_pseg_repl_count(const struct lfs_pseg_hdr *h, uint32_t block_size, uint32_t *n);
/* Seal: compute and store sum_crc.  Verify: magic, crc, sane nblocks. */
void lfs_pseg_seal(uint8_t *blk, uint32_t block_size, uint32_t seed);
int lfs_pseg_verify(const uint8_t *blk, uint32_t block_size, uint32_t seed);

/* ---------------------------------------------------------------- */
/* Snapshots: blocks held for old checkpoints, and the history.     */
/*
 * Checkpoint c references a block location for the checkpoints from its
 * birth (one more than the ckpt_seq of the pseg that wrote it) to the
 * checkpoint that no longer references it (the first after the live
 * tree dropped it, or moved it while cleaning).  A location that a
 * retained checkpoint (a snapshot, or one inside the protection period)
 * still references is held: its bytes stay counted in the usage table
 * until no retained checkpoint in [from, until) is left, and the cleaner
 * moves them as a whole block, recording where (cur).  Retained
 * checkpoints read every address through the table: the bytes for orig
 * are at cur.  The live tree never reads the table.
 *
 * Two paged tables hold them, each a root block of B/8 addresses of
 * index blocks, each of B/8 addresses of pages of fixed-size entries;
 * written at checkpoints, page by changed page, as the inode map is.
 */
#define LFS_TABLE_HELD 1u           /* held-block entries */
#define LFS_TABLE_HIST 2u           /* checkpoint history records */
#define LFS_HELD_ENTRY_SIZE 48
#define LFS_HIST_ENTRY_SIZE 64
#define LFS_HIST_NAME_MAX 39        /* a snapshot's name, NUL-padded to 40 */
/* Records (and slots) a checkpoint history may have: a checkpoint every
 * two seconds for six days of protection, or as many snapshots; about
 * 40 MiB in memory when full.  A table past it is refused when read. */
#define LFS_HIST_MAX 262144u

/* A table node's summary lblk: level 0 a page, 1 an index block, 2 the root. */
static inline uint64_t lfs_table_node_id(uint32_t level, uint64_t index) { return ((uint64_t)level << 48) | index; }
static inline uint32_t lfs_table_node_level(uint64_t id) { return (uint32_t)(id >> 48); }
static inline uint64_t lfs_table_node_index(uint64_t id) { return id & ((1ull << 48) - 1); }

struct lfs_held_entry {
	uint64_t orig;              /* the address the holding checkpoints use; 0: free slot */
	uint64_t cur;               /* where its bytes are now */
	uint64_t from, until;       /* checkpoints [from, until) reference orig */
	uint64_t aux;               /* IMAP: the inode-map block index */
	uint32_t charge;            /* bytes counted for it in cur's segment */
	uint8_t kind;               /* what orig's summary says it is */
	uint8_t flags;              /* LFS_HELD_LIVE */
	uint16_t slot;              /* INODE: the record's slot in the block */
};
#define LFS_HELD_LIVE 1u            /* cur is also the live tree's block */
enum {
	LFS_HE_OFF_ORIG = 0, LFS_HE_OFF_CUR = 8, LFS_HE_OFF_FROM = 16, LFS_HE_OFF_UNTIL = 24,
	LFS_HE_OFF_AUX = 32, LFS_HE_OFF_CHARGE = 40, LFS_HE_OFF_KIND = 44, LFS_HE_OFF_FLAGS = 45,
	LFS_HE_OFF_SLOT = 46,
};
_Static_assert(LFS_HE_OFF_SLOT + 2 == LFS_HELD_ENTRY_SIZE, "held entry size");

struct lfs_hist_entry {
	uint64_t seq;               /* the checkpoint; 0: free slot */
	uint64_t time_ns;           /* ORIGIN: the source's checkpoint */
	uint32_t flags;             /* LFS_HIST_* */
	uint32_t root;              /* RECEIVED: the inode that is its tree's root; else 0 */
	char name[LFS_HIST_NAME_MAX + 1]; /* ORIGIN: the source's uuid, 32 hex digits */
};
#define LFS_HIST_SNAPSHOT 1u        /* kept until deleted, whatever its age */
/* LFS_FEATURE_RECEIVED: a snapshot received from a stream.  Its tree is
 * the directory `root` of that checkpoint's inode map (the live tree had
 * it only unnamed, LFS_DI_STAGED); a second record, in a slot of its
 * own, flags ORIGIN and seq the same checkpoint, says where it came from. */
#define LFS_HIST_RECEIVED 2u
#define LFS_HIST_ORIGIN 4u
#define LFS_HIST_UUID_HEX 32
enum {
	LFS_HI_OFF_SEQ = 0, LFS_HI_OFF_TIME = 8, LFS_HI_OFF_FLAGS = 16, LFS_HI_OFF_ROOT = 20,
	LFS_HI_OFF_NAME = 24,
};
_Static_assert(LFS_HI_OFF_NAME + LFS_HIST_NAME_MAX + 1 == LFS_HIST_ENTRY_SIZE, "history entry size");

static inline uint32_t lfs_table_per_page(uint32_t block_size, uint32_t esize) { return block_size / esize; }
void lfs_held_entry_encode(const struct lfs_held_entry *e, uint8_t *p);
void lfs_held_entry_decode(struct lfs_held_entry *e, const uint8_t *p);
void lfs_hist_entry_encode(const struct lfs_hist_entry *e, uint8_t *p);
void lfs_hist_entry_decode(struct lfs_hist_entry *e, const uint8_t *p);

/* ---------------------------------------------------------------- */
/* Inode map and segment usage table entries.                       */

#define LFS_IMAP_ENTRY_SIZE 16
#define LFS_SUT_ENTRY_SIZE 16

struct lfs_imap_entry {
	uint64_t daddr;             /* block holding the record; 0 = free */
	uint32_t version;           /* bumped each time the number is reused */
	uint16_t slot;              /* record offset in the block / 64 */
	uint16_t flags;             /* LFS_IMAP_INUSE */
};
enum {
	LFS_IM_OFF_DADDR = 0, LFS_IM_OFF_VERSION = 8, LFS_IM_OFF_SLOT = 12, LFS_IM_OFF_FLAGS = 14,
	LFS_SU_OFF_LIVE = 0, LFS_SU_OFF_FLAGS = 4, LFS_SU_OFF_MTIME = 8,
};
_Static_assert(LFS_IM_OFF_FLAGS + 2 == LFS_IMAP_ENTRY_SIZE, "imap entry size");
_Static_assert(LFS_SU_OFF_MTIME + 8 == LFS_SUT_ENTRY_SIZE, "sut entry size");
/* Entries in one block of the inode map (inode ino is entry ino % per of
 * block ino / per) and of the usage table (likewise by segment). */
static inline uint32_t lfs_imap_per_block(uint32_t block_size) { return block_size / LFS_IMAP_ENTRY_SIZE; }
static inline uint32_t lfs_sut_per_block(uint32_t block_size) { return block_size / LFS_SUT_ENTRY_SIZE; }
#define LFS_IMAP_INUSE 1u
#define LFS_IMAP_ORPHAN 2u         /* record has nlink 0: free at mount */

struct lfs_sut_entry {
	uint32_t live_bytes;        /* data, nodes, inodes; not IMAP/SUT */
	uint32_t flags;
	uint64_t mtime_ns;          /* newest write into the segment */
};

void lfs_imap_entry_encode(const struct lfs_imap_entry *e, uint8_t *p);
void lfs_imap_entry_decode(struct lfs_imap_entry *e, const uint8_t *p);
void lfs_sut_entry_encode(const struct lfs_sut_entry *e, uint8_t *p);
void lfs_sut_entry_decode(struct lfs_sut_entry *e, const uint8_t *p);
/* Invariants of a decoded entry, as a checkpoint is loaded: 0, or
 * -EFSCORRUPTED with *why naming the broken one. */
int lfs_imap_entry_check(const struct lfs_imap_entry *e, uint64_t ino, const struct lfs_super *sb,
			 const char **why);
int lfs_sut_entry_check(const struct lfs_sut_entry *e, const struct lfs_super *sb, const char **why);

/* ---------------------------------------------------------------- */
/* Inode records.                                                   */

#define LFS_INODE_HDR_SIZE 256
#define LFS_INODE_ALIGN 64

struct lfs_dinode {
	uint32_t ino;
	uint32_t version;
	uint32_t mode;              /* 0: a tombstone, the inode was freed */
	uint32_t uid, gid;
	uint32_t nlink;
	uint32_t flags;
	uint32_t rdev;
	uint64_t size;
	uint64_t blocks;            /* allocated blocks (data and nodes) */
	int64_t atime_sec, mtime_sec, ctime_sec, btime_sec;
	uint32_t atime_nsec, mtime_nsec, ctime_nsec, btime_nsec;
	uint32_t parent;            /* directories: the parent's inode */
	uint32_t inline_len;        /* bytes of inline content after the header */
	uint64_t direct[LFS_NDIRECT];
	uint64_t ind[LFS_NINDIRECT];
	uint64_t xattr;             /* XATTR (root) block, 0 if none */
	uint32_t xattr_blocks;      /* XATTR blocks the inode holds, root included;
				       0 in records older than the field: then
				       one if xattr is set (lfs_dinode_xattr_blocks) */
	uint32_t unwritten;         /* LFS_FEATURE_UNWRITTEN: data blocks its map
				       marks unwritten (counted in blocks too) */
};
#define LFS_DI_INLINE 1u        /* content lives in the record */
#define LFS_DI_PREALLOC 2u      /* fallocate gave it blocks: overwriting them
				   frees as much as it takes (lfs(8)) */
/* The flags of chattr(1) lfs keeps (FS_IOC_SETFLAGS): */
#define LFS_DI_NODUMP 4u        /* d: dump(8) skips the file; lfs only keeps it */
#define LFS_DI_NOATIME 8u       /* A: reads leave its atime alone */
#define LFS_DI_USER (LFS_DI_NODUMP | LFS_DI_NOATIME)
/* A relink record (LFS_FEATURE_RELINK), of a regular file with links:
 * its block map is the one of the inode's previous record (the same
 * version and the same ind[] roots), with newer leaves.  In a tree k >= 1
 * the pointer to leaf (k, k, i) is replaced by the newest INDIR block of
 * the same file and node id that a group with a relink record of the
 * file logged since its last other record.  Only pointers that are set
 * are replaced: a relinked leaf was written before.  Written by an
 * fsync that changed set pointers only, so that the group holds the data
 * blocks, their leaves and the record, and not the nodes above the
 * leaves as well (4 blocks for a random write to a 4 GiB file, not 6).
 * The flag belongs to the record; in memory it is never set. */
#define LFS_DI_RELINK 16u
/* LFS_FEATURE_RECEIVED: the unnamed root of a tree a stream is being
 * received into.  Its record is an orphan's: a mount frees the whole
 * tree under it, as the daemon does once the tree is a snapshot. */
#define LFS_DI_STAGED 32u
#define LFS_DI_KNOWN (LFS_DI_INLINE | LFS_DI_PREALLOC | LFS_DI_USER | LFS_DI_RELINK | LFS_DI_STAGED)

enum {
	LFS_DI_OFF_INO = 0, LFS_DI_OFF_VERSION = 4, LFS_DI_OFF_MODE = 8, LFS_DI_OFF_UID = 12,
	LFS_DI_OFF_GID = 16, LFS_DI_OFF_NLINK = 20, LFS_DI_OFF_FLAGS = 24, LFS_DI_OFF_RDEV = 28,
	LFS_DI_OFF_SIZE = 32, LFS_DI_OFF_BLOCKS = 40,
	LFS_DI_OFF_ATIME = 48, LFS_DI_OFF_ATIME_NS = 56, LFS_DI_OFF_PARENT = 60,
	LFS_DI_OFF_MTIME = 64, LFS_DI_OFF_MTIME_NS = 72, LFS_DI_OFF_RECLEN = 76,
	LFS_DI_OFF_CTIME = 80, LFS_DI_OFF_CTIME_NS = 88, LFS_DI_OFF_INLINE = 92,
	LFS_DI_OFF_BTIME = 96, LFS_DI_OFF_BTIME_NS = 104, LFS_DI_OFF_MAGIC = 108,
	LFS_DI_OFF_DIRECT = 112, LFS_DI_OFF_IND = 208, LFS_DI_OFF_XATTR = 240,
	LFS_DI_OFF_XBLOCKS = 248, LFS_DI_OFF_UNWRITTEN = 252,
};
_Static_assert(LFS_DI_OFF_DIRECT + 8 * LFS_NDIRECT == LFS_DI_OFF_IND, "direct");
_Static_assert(LFS_DI_OFF_IND + 8 * LFS_NINDIRECT == LFS_DI_OFF_XATTR, "indirect");
_Static_assert(LFS_DI_OFF_XATTR + 8 == LFS_DI_OFF_XBLOCKS, "xattr");
_Static_assert(LFS_DI_OFF_XBLOCKS + 4 == LFS_DI_OFF_UNWRITTEN, "xattr blocks");
_Static_assert(LFS_DI_OFF_UNWRITTEN + 4 == LFS_INODE_HDR_SIZE, "inode header size");

static inline uint32_t lfs_inline_max(uint32_t block_size) { return block_size - LFS_INODE_HDR_SIZE; }
static inline uint32_t lfs_inode_reclen(uint32_t inline_len)
{
	return (LFS_INODE_HDR_SIZE + inline_len + LFS_INODE_ALIGN - 1) & ~(uint32_t)(LFS_INODE_ALIGN - 1);
}

/* What a record of `reclen` bytes counts in the usage table.  Records
 * never span blocks, so a block holds block_size / reclen records of one
 * length and the rest of it is lost: two 2,100-byte records take two
 * blocks.  Counting the length alone, df saw a third of such a disk as
 * free when no record more would fit, and the cleaner expected gains that
 * compaction cannot give.  With LFS_FEATURE_RECORD_CHARGE a record counts
 * its share of a block packed with records of its own length, rounded
 * down so that a full block never counts more than block_size; the
 * writer packs blocks by this count (lfs_seg_inode_slot) and puts the
 * records of a flush in decreasing order of it, so that a block fills
 * with records of one class and the count is what compaction achieves. */
static inline uint32_t lfs_inode_charge(const struct lfs_super *sb, uint32_t reclen)
{
	if (!(sb->feature_incompat & LFS_FEATURE_RECORD_CHARGE) || !reclen || reclen > sb->block_size)
		return reclen;
	return sb->block_size / (sb->block_size / reclen);
}

/* The XATTR blocks a record holds (for st_blocks). */
static inline uint32_t lfs_dinode_xattr_blocks(const struct lfs_dinode *di)
{
	return !di->xattr ? 0 : di->xattr_blocks ? di->xattr_blocks : 1;
}

/* A device number as a record's rdev keeps it (Linux's new_encode_dev:
 * 12-bit major, 20-bit minor), and back. */
uint32_t lfs_rdev_encode(dev_t d);
dev_t lfs_rdev_decode(uint32_t v);

/* Encodes the header and copies inline content; returns the record length. */
uint32_t lfs_dinode_encode(const struct lfs_dinode *di, const void *inline_data, uint8_t *p);
/* Decodes the record at p, which has `avail` bytes up to the block end.
 * Returns the record length, or -EFSCORRUPTED. */
int lfs_dinode_decode(struct lfs_dinode *di, const uint8_t *p, uint32_t avail);
/* The semantic invariants of a decoded record, beyond its layout: the
 * file type and flags are known ones; inline content only in regular
 * files and symlinks, whose size is then the inline length, with no
 * blocks; directories a whole number of blocks up to LFS_DIR_MAX_SIZE
 * with a parent in range; sizes within what the block map can address;
 * every block pointer inside the log.  Every reader of records (the
 * inode cache, roll-forward) and so fsck.lfs applies them.  A tombstone
 * (mode 0) needs only its number in range.  Returns 0, or -EFSCORRUPTED
 * with *why naming the broken invariant. */
int lfs_dinode_check(const struct lfs_dinode *di, const struct lfs_super *sb, const char **why);
/* Largest file size the block map of a filesystem with this block size
 * addresses (capped at INT64_MAX, off_t's limit). */
uint64_t lfs_max_file_size(uint32_t block_size);
/* Iterate the records packed in an INODE block: returns the offset of the
 * next record at or after `off`, or block_size at the end. */
uint32_t lfs_inode_block_next(const uint8_t *blk, uint32_t block_size, uint32_t off);

/* ---------------------------------------------------------------- */
/* Block map: 12 direct pointers, then trees of depth 1..4.  A node  */
/* is named by (tree, level from root, index at that level).        */

#define LFS_NODE_FLAG (1ull << 63)
static inline uint64_t lfs_node_id(unsigned tree, unsigned level, uint64_t idx)
{
	return LFS_NODE_FLAG | ((uint64_t)tree << 56) | ((uint64_t)level << 52) | idx;
}
static inline unsigned lfs_node_tree(uint64_t id) { return (unsigned)((id >> 56) & 0x7f); }
static inline unsigned lfs_node_level(uint64_t id) { return (unsigned)((id >> 52) & 0xf); }
static inline uint64_t lfs_node_idx(uint64_t id) { return id & ((1ull << 52) - 1); }

/* Unwritten blocks (LFS_FEATURE_UNWRITTEN), as ext4's unwritten
 * extents: fallocate reserves a regular file's holes without writing
 * them.  A direct pointer, a leaf slot, or a pointer to a node (ind[k]
 * or an interior slot) may be LFS_ADDR_UNWRITTEN, which is no address:
 * every data block under it is unwritten and reads as zeros.  Such a
 * block counts in the record's blocks (st_blocks, as ext4 counts
 * unwritten extents) and in its unwritten; a checkpoint carries their
 * sum, and the space they reserve is counted used (df) until they are
 * written, which takes no new space, or freed.  A write into one under
 * a node pointer makes the node, its every slot unwritten. */
#define LFS_ADDR_UNWRITTEN UINT64_MAX
static inline bool lfs_addr_unwritten(uint64_t a) { return a == LFS_ADDR_UNWRITTEN; }
/* The largest count a record's unwritten holds: fallocate reserves no
 * more in one file (ext4's files end at 2^32 blocks too). */
#define LFS_UNWRITTEN_MAX UINT32_MAX

/* Data blocks under one pointer of a node at `level` (0: the root) of
 * tree k, for nodes of nptr pointers: nptr^(k - level). */
uint64_t lfs_node_span(uint32_t nptr, unsigned k, unsigned level);
/* The first logical block under tree k (after the direct pointers and
 * the trees before it), for nodes of nptr pointers. */
uint64_t lfs_tree_base(uint32_t nptr, unsigned k);
/* The nodes on the way to logical block lblk: ids[0] its leaf .. ids[k]
 * the root of its tree k, and *rel its index within that tree; returns
 * k + 1, or 0 for a direct block or one beyond the last tree.  The one
 * arithmetic of the block map: bmap.c and fsck.lfs --salvage use it. */
unsigned lfs_block_path(uint32_t nptr, uint64_t lblk, uint64_t ids[LFS_NINDIRECT], uint64_t *rel);

void lfs_node_encode(const uint64_t *ptrs, uint32_t n, uint8_t *blk);
void lfs_node_decode(uint64_t *ptrs, uint32_t n, const uint8_t *blk);

/* ---------------------------------------------------------------- */
/* Directory blocks: records of                                      */
/*   le32 ino | le16 rec_len | u8 name_len | u8 type | name, 8-aligned */
/* that tile the block; ino 0 marks free space.  Records never move, */
/* so a record's byte position is a stable readdir cookie.           */

#define LFS_DIRENT_HDR 8
enum { LFS_DE_OFF_INO = 0, LFS_DE_OFF_RECLEN = 4, LFS_DE_OFF_NAMELEN = 6, LFS_DE_OFF_TYPE = 7 };
_Static_assert(LFS_DE_OFF_TYPE + 1 == LFS_DIRENT_HDR, "dirent header size");
static inline uint32_t lfs_dirent_len(uint32_t name_len) { return (LFS_DIRENT_HDR + name_len + 7) & ~7u; }

struct lfs_dirent {
	uint32_t ino;
	uint16_t rec_len;
	uint8_t name_len;
	uint8_t type;               /* DT_* */
	const char *name;           /* points into the block */
};
void lfs_dirent_encode(const struct lfs_dirent *d, uint8_t *p);
/* Returns 0, or -EFSCORRUPTED if the record does not fit at `off`. */
int lfs_dirent_decode(struct lfs_dirent *d, const uint8_t *blk, uint32_t off, uint32_t block_size);
/* Invariants of a used record read from disk: an inode number in range,
 * a known type, a name without '/' or NUL that is not "." or "..". */
int lfs_dirent_check(const struct lfs_dirent *d, const struct lfs_super *sb, const char **why);

/* ---------------------------------------------------------------- */
/* XATTR blocks.                                                     */
/*                                                                   */
/* An attribute entry, 8-byte header then name then payload:         */
/*   le16 name_len | u8 flags | u8 0 | le32 value_len | name |       */
/*   value (inline), or with LFS_XENT_OUT one le16 slot per block of */
/*   the value (value_len / block size, rounded up), in order.       */
/* A leaf (and the only block of an image without                    */
/* LFS_FEATURE_XATTR_BLOCKS, the "legacy" root): le32 count, entries.*/
/* A root with the feature:                                          */
/*   le32 magic "XATR" | le16 nslots | le16 0 | le32 count | le32 0  */
/*   | nslots le64 slots | count entries                             */
/* A slot is 0 (free) or a block address (low 56 bits) and the kind  */
/* of that block (top 8 bits): LFS_XSLOT_LEAF, LFS_XSLOT_VALUE.  The */
/* block of slot s is logged with lblk s + 1.  A value block holds   */
/* its part of the value, the last one zero-padded.  A root holds    */
/* entries and no slots, or all lfs_xattr_max_slots() slots and no   */
/* entries: those two shapes only.                                   */

#define LFS_XATTR_HDR 4             /* leaf header: le32 count */
#define LFS_XATTR_ENT_HDR 8
#define LFS_XATTR_MAGIC 0x52544158u /* "XATR" */
#define LFS_XATTR_ROOT_HDR 16
#define LFS_XENT_OUT 1u             /* value in blocks of its own */
#define LFS_XSLOT_LEAF 1u
#define LFS_XSLOT_VALUE 2u
#define LFS_XSLOT_ADDR_MASK ((1ull << 56) - 1)
enum {
	LFS_XE_OFF_NAMELEN = 0, LFS_XE_OFF_FLAGS = 2, LFS_XE_OFF_VALLEN = 4,
	LFS_XR_OFF_MAGIC = 0, LFS_XR_OFF_NSLOTS = 4, LFS_XR_OFF_COUNT = 8,
};
_Static_assert(LFS_XE_OFF_VALLEN + 4 == LFS_XATTR_ENT_HDR, "xattr entry header");
_Static_assert(LFS_XR_OFF_COUNT + 8 == LFS_XATTR_ROOT_HDR, "xattr root header");
/* The VFS limits (linux/limits.h): a value, a name, a listxattr result. */
#define LFS_XATTR_SIZE_MAX 65536u
#define LFS_XATTR_NAME_MAX 255u
#define LFS_XATTR_LIST_MAX 65536u
/* POSIX ACLs are kept as ext4 keeps them, under these two names, in the
 * kernel's encoding: xattr.c stores them as a namespace of their own,
 * acl.c gives them meaning. */
#define LFS_ACL_ACCESS "system.posix_acl_access"
#define LFS_ACL_DEFAULT "system.posix_acl_default"

static inline bool lfs_acl_name(const char *name)
{
	return strcmp(name, LFS_ACL_ACCESS) == 0 || strcmp(name, LFS_ACL_DEFAULT) == 0;
}
/* Their value: le32 version 2, then entries of le16 tag | le16 perm |
 * le32 id, as the kernel's xattr interface has them. */
#define LFS_ACL_VERSION 2u
#define LFS_ACL_HDR 4u
#define LFS_ACL_ENT 8u
enum {
	LFS_ACL_USER_OBJ = 0x01,
	LFS_ACL_USER = 0x02,
	LFS_ACL_GROUP_OBJ = 0x04,
	LFS_ACL_GROUP = 0x08,
	LFS_ACL_MASK = 0x10,
	LFS_ACL_OTHER = 0x20,
};
static inline uint32_t lfs_acl_version(const uint8_t *v) { return lfs_get32(v); }
/* the tag and permissions of the entry at byte `off` */
static inline uint16_t lfs_acl_tag(const uint8_t *v, size_t off) { return lfs_get16(v + off); }
static inline uint16_t lfs_acl_perm(const uint8_t *v, size_t off) { return lfs_get16(v + off + 2); }
static inline void lfs_acl_set_perm(uint8_t *v, size_t off, uint16_t perm) { lfs_put16(v + off + 2, perm); }

static inline uint32_t lfs_xattr_max_slots(uint32_t block_size)
{
	return (block_size - LFS_XATTR_ROOT_HDR) / 8;
}
_Static_assert((LFS_MAX_BLOCK_SIZE - LFS_XATTR_ROOT_HDR) / 8 <= UINT16_MAX, "slot numbers fit le16");
_Static_assert(LFS_XATTR_SIZE_MAX / LFS_MIN_BLOCK_SIZE <= (LFS_MIN_BLOCK_SIZE - LFS_XATTR_ROOT_HDR) / 8,
	       "the largest value fits the slots of the smallest block");

struct lfs_xent {
	uint16_t name_len;
	uint8_t flags;
	uint32_t value_len;
	const char *name;           /* point into the block */
	const uint8_t *payload;     /* the value, or its slot numbers */
};
/* Bytes an entry takes. */
static inline uint32_t lfs_xent_len(uint32_t name_len, uint32_t value_len, bool out, uint32_t block_size)
{
	return LFS_XATTR_ENT_HDR + name_len + (out ? 2 * ((value_len + block_size - 1) / block_size) : value_len);
}
/* The entry at `off` of a block whose entries end at `end`: 0, or
 * -EFSCORRUPTED if it does not fit, has an empty or too long name,
 * unknown flags, or names a slot at or beyond nslots. */
int lfs_xent_decode(struct lfs_xent *e, const uint8_t *blk, uint32_t off, uint32_t end, uint32_t block_size,
		    uint32_t nslots);
/* Writes the entry at p; the payload (value, or slot numbers as le16)
 * is copied as given.  Returns its length. */
uint32_t lfs_xent_encode(uint8_t *p, const char *name, uint16_t name_len, uint8_t flags, uint32_t value_len,
			 const void *payload, uint32_t payload_len);
static inline uint16_t lfs_xent_slot(const struct lfs_xent *e, uint32_t i) { return lfs_get16(e->payload + 2 * i); }
/* The i-th slot of an out-of-line value's payload, as it is written. */
static inline void lfs_xent_put_slot(uint8_t *payload, uint32_t i, uint16_t slot) { lfs_put16(payload + 2 * i, slot); }
/* A leaf's (or a legacy root's) header: the number of its entries. */
static inline uint32_t lfs_xleaf_count(const uint8_t *blk) { return lfs_get32(blk); }
static inline void lfs_xleaf_set_count(uint8_t *blk, uint32_t count) { lfs_put32(blk, count); }

struct lfs_xroot {
	bool legacy;                /* no magic: a leaf (an image without the feature) */
	uint32_t nslots;
	uint32_t count;             /* entries */
	uint32_t ents;              /* offset of the first entry */
};
/* Decode the header of a root block: 0, or -EFSCORRUPTED. */
int lfs_xroot_decode(struct lfs_xroot *r, const uint8_t *blk, uint32_t block_size);
void lfs_xroot_encode_hdr(uint8_t *blk, uint32_t nslots, uint32_t count);
static inline uint64_t lfs_xroot_slot(const uint8_t *blk, uint32_t s)
{
	return lfs_get64(blk + LFS_XATTR_ROOT_HDR + 8 * s);
}
static inline void lfs_xroot_set_slot(uint8_t *blk, uint32_t s, uint64_t v)
{
	lfs_put64(blk + LFS_XATTR_ROOT_HDR + 8 * s, v);
}
static inline uint64_t lfs_xslot_make(uint64_t addr, unsigned kind) { return addr | ((uint64_t)kind << 56); }
static inline uint64_t lfs_xslot_addr(uint64_t v) { return v & LFS_XSLOT_ADDR_MASK; }
static inline unsigned lfs_xslot_kind(uint64_t v) { return (unsigned)(v >> 56); }

#endif
