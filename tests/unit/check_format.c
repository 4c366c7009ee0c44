/* check_format.c — on-disk format: field offsets, round trips, checks. */
#include "check_run.h"
#include "format.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct lfs_super
sample_super(void)
{
	struct lfs_super sb = {
		.magic = LFS_SB_MAGIC, .version = LFS_VERSION, .block_size = 4096, .seg_blocks = 256,
		.nsegs = 100, .seg0 = 256, .ckpt_blocks = 1, .max_inodes = 4096, .reserved_segs = 8,
		.created_ns = 123456789,
	};
	sb.ckpt_addr[0] = 1;
	sb.ckpt_addr[1] = 2;
	sb.nblocks = sb.seg0 + sb.nsegs * sb.seg_blocks;
	for (int i = 0; i < 16; i++)
		sb.uuid[i] = (uint8_t)(i * 17);
	strcpy(sb.label, "demo");
	return sb;
}

START_TEST(super_offsets)
{
	struct lfs_super sb = sample_super();
	uint8_t buf[LFS_SB_SIZE];
	lfs_super_encode(&sb, buf);
	ck_assert_uint_eq(lfs_get32(buf + 0), LFS_SB_MAGIC);
	ck_assert_uint_eq(lfs_get32(buf + 4), LFS_VERSION);
	ck_assert_uint_eq(lfs_get32(buf + 16), 4096);
	ck_assert_uint_eq(lfs_get32(buf + 20), 256);
	ck_assert_uint_eq(lfs_get64(buf + 24), sb.nblocks);
	ck_assert_uint_eq(lfs_get64(buf + 32), 100);
	ck_assert_uint_eq(lfs_get64(buf + 40), 256);
	ck_assert_uint_eq(lfs_get64(buf + 48), 1);
	ck_assert_uint_eq(lfs_get64(buf + 56), 2);
	ck_assert_uint_eq(lfs_get32(buf + 64), 1);
	ck_assert_uint_eq(lfs_get32(buf + 68), 4096);
	ck_assert_uint_eq(lfs_get32(buf + 72), 8);
	ck_assert_uint_eq(lfs_get64(buf + 80), 123456789);
	ck_assert_uint_eq(buf[88 + 1], 17);
	ck_assert_str_eq((char *)buf + 104, "demo");
	ck_assert_uint_eq(lfs_get64(buf + 168), 0); /* no backup: the field stays zero */
	sb.feature_compat = LFS_FEATURE_BACKUP_SB;
	sb.backup_sb = sb.nblocks + 5;
	lfs_super_encode(&sb, buf);
	ck_assert_uint_eq(lfs_get32(buf + 8), LFS_FEATURE_BACKUP_SB);
	ck_assert_uint_eq(lfs_get64(buf + 168), sb.nblocks + 5);
	ck_assert_uint_eq(lfs_get32(buf + 252), lfs_crc(0, buf, 252));
	ck_assert_uint_eq(lfs_get32(buf + 176), 0); /* no seed of its own: the field stays zero */
	sb.feature_incompat = LFS_FEATURE_CSUM_SEED;
	sb.csum_seed = 0xdeadbeef;
	lfs_super_encode(&sb, buf);
	ck_assert_uint_eq(lfs_get32(buf + 12), LFS_FEATURE_CSUM_SEED);
	ck_assert_uint_eq(lfs_get32(buf + 176), 0xdeadbeef);
	/* little-endian byte order, whatever the host */
	ck_assert_uint_eq(buf[0], 0x4c);
	ck_assert_uint_eq(buf[1], 0x46);
}
END_TEST

START_TEST(super_roundtrip_and_rejects)
{
	struct lfs_super sb = sample_super(), out;
	uint8_t buf[LFS_SB_SIZE];
	lfs_super_encode(&sb, buf);
	ck_assert_int_eq(lfs_super_decode(&out, buf), 0);
	ck_assert_uint_eq(out.nsegs, sb.nsegs);
	ck_assert_uint_eq(out.max_inodes, sb.max_inodes);
	ck_assert_mem_eq(out.uuid, sb.uuid, 16);
	ck_assert_str_eq(out.label, "demo");

	uint8_t bad[LFS_SB_SIZE];
	memcpy(bad, buf, sizeof(bad));
	bad[0] ^= 1;
	ck_assert_int_eq(lfs_super_decode(&out, bad), -EINVAL);
	memcpy(bad, buf, sizeof(bad));
	bad[30] ^= 1;
	ck_assert_int_eq(lfs_super_decode(&out, bad), -EFSCORRUPTED);

	struct lfs_super newer = sb;
	newer.version = LFS_VERSION + 1;
	lfs_super_encode(&newer, bad);
	ck_assert_int_eq(lfs_super_decode(&out, bad), -EPROTONOSUPPORT);

	/* an incompatible feature this code does not know is refused */
	newer = sb;
	newer.feature_incompat = (LFS_FEATURE_INCOMPAT_KNOWN + 1) & ~LFS_FEATURE_INCOMPAT_KNOWN;
	lfs_super_encode(&newer, bad);
	ck_assert_int_eq(lfs_super_decode(&out, bad), -EPROTONOSUPPORT);
	/* the seed a new uuid leaves behind: checksums stay as they were */
	struct lfs_super tuned = sb;
	tuned.feature_incompat = LFS_FEATURE_CSUM_SEED;
	tuned.csum_seed = lfs_super_seed(&sb);
	tuned.uuid[0] ^= 0xff;
	lfs_super_encode(&tuned, bad);
	ck_assert_int_eq(lfs_super_decode(&out, bad), 0);
	ck_assert_uint_eq(lfs_super_seed(&out), lfs_super_seed(&sb));
	ck_assert_uint_ne(lfs_crc(0, out.uuid, 16), lfs_super_seed(&sb));

	struct lfs_super odd = sb;
	odd.block_size = 3000;
	lfs_super_encode(&odd, bad);
	ck_assert_int_eq(lfs_super_decode(&out, bad), -EFSCORRUPTED);
	odd = sb;
	odd.nblocks = 10;       /* segments beyond the device */
	lfs_super_encode(&odd, bad);
	ck_assert_int_eq(lfs_super_decode(&out, bad), -EFSCORRUPTED);
}
END_TEST

START_TEST(super_backup)
{
	/* the backup is the last whole block, whatever is left over */
	ck_assert_uint_eq(lfs_super_backup_block(64u << 20, 4096), 16383);
	ck_assert_uint_eq(lfs_super_backup_block((64u << 20) + 4095, 4096), 16383);
	ck_assert_uint_eq(lfs_super_backup_block(64u << 20, 1024), 65535);
	ck_assert_uint_eq(lfs_super_backup_block(4096, 4096), 0);

	struct lfs_super sb = sample_super(), out;
	sb.feature_compat = LFS_FEATURE_BACKUP_SB;
	sb.backup_sb = sb.nblocks;
	uint8_t buf[LFS_SB_SIZE];
	lfs_super_encode(&sb, buf);
	ck_assert_int_eq(lfs_super_decode(&out, buf), 0);
	ck_assert_uint_eq(out.backup_sb, sb.nblocks);
	/* a backup inside the segments would be overwritten by the log */
	sb.backup_sb = sb.nblocks - 1;
	lfs_super_encode(&sb, buf);
	ck_assert_int_eq(lfs_super_decode(&out, buf), -EFSCORRUPTED);
	/* without the feature bit the field is not read: old images */
	sb.feature_compat = 0;
	lfs_super_encode(&sb, buf);
	lfs_put64(buf + LFS_SB_OFF_BACKUP, 7);
	lfs_put32(buf + LFS_SB_OFF_CRC, lfs_crc(0, buf, LFS_SB_OFF_CRC));
	ck_assert_int_eq(lfs_super_decode(&out, buf), 0);
	ck_assert_uint_eq(out.backup_sb, 0);
}
END_TEST

static int
decode_with(const struct lfs_super *sb)
{
	uint8_t buf[LFS_SB_SIZE];
	struct lfs_super out;
	lfs_super_encode(sb, buf);
	return lfs_super_decode(&out, buf);
}

/* Geometry mkfs would never make is refused before anything is sized by it. */
START_TEST(super_rejects_what_mkfs_never_makes)
{
	struct lfs_super sb = sample_super(), odd;
	ck_assert_int_eq(decode_with(&sb), 0);
	odd = sb;
	odd.max_inodes = UINT32_MAX; /* a 64 GiB inode map and a 2^32 loop */
	ck_assert_int_eq(decode_with(&odd), -EFSCORRUPTED);
	odd.max_inodes = LFS_MIN_INODES - 1;
	ck_assert_int_eq(decode_with(&odd), -EFSCORRUPTED);
	odd = sb; /* more inodes than 256-byte records fit on the device */
	odd.max_inodes = lfs_inodes_cap(sb.nblocks + sb.seg_blocks, sb.block_size) + 1;
	ck_assert_int_eq(decode_with(&odd), -EFSCORRUPTED);
	odd = sb; /* segments of 2^20 blocks: a 1.25 GiB summary cache */
	odd.seg_blocks = 1u << 20;
	odd.seg0 = odd.seg_blocks;
	odd.nsegs = 12;
	odd.reserved_segs = 4;
	odd.nblocks = odd.seg0 + odd.nsegs * odd.seg_blocks;
	ck_assert_int_eq(decode_with(&odd), -EFSCORRUPTED);
	odd.seg_blocks = LFS_MAX_SEG_BLOCKS; /* the largest mkfs makes */
	odd.seg0 = odd.seg_blocks;
	odd.nblocks = odd.seg0 + odd.nsegs * odd.seg_blocks;
	ck_assert_int_eq(decode_with(&odd), 0);
	odd = sb;
	odd.seg_blocks = 255; /* not a power of two */
	ck_assert_int_eq(decode_with(&odd), -EFSCORRUPTED);
	odd = sb;
	odd.ckpt_blocks = 2; /* a region larger than its tables need */
	odd.ckpt_addr[1] = 3;
	ck_assert_int_eq(decode_with(&odd), -EFSCORRUPTED);
	odd = sb;
	odd.seg0 = 512; /* a gap before segment 0 */
	odd.nblocks = odd.seg0 + odd.nsegs * odd.seg_blocks;
	ck_assert_int_eq(decode_with(&odd), -EFSCORRUPTED);
	odd = sb;
	odd.nblocks += 1; /* blocks after the last segment */
	ck_assert_int_eq(decode_with(&odd), -EFSCORRUPTED);
	odd = sb;
	odd.reserved_segs = (uint32_t)sb.nsegs - LFS_MIN_FREE_SEGS + 1;
	ck_assert_int_eq(decode_with(&odd), -EFSCORRUPTED);
	odd = sb;
	odd.version = 0;
	ck_assert_int_eq(decode_with(&odd), -EFSCORRUPTED);
}
END_TEST

START_TEST(pseg_roundtrip_and_crc)
{
	uint8_t blk[4096];
	memset(blk, 0xee, sizeof(blk));
	struct lfs_pseg_hdr h = { .magic = LFS_PSEG_MAGIC, .seq = 77, .ckpt_seq = 5, .timestamp_ns = 9,
				  .next_seg = 12, .nblocks = 2, .flags = LFS_PSEG_END };
	lfs_pseg_hdr_encode(&h, blk);
	struct lfs_pseg_entry e = { .ino = 42, .version = 3, .lblk = 1ull << 40, .crc = 0xdeadbeef,
				    .kind = LFS_BK_DATA };
	lfs_pseg_entry_encode(&e, blk, 0);
	e.kind = LFS_BK_INODE;
	lfs_pseg_entry_encode(&e, blk, 1);
	lfs_pseg_seal(blk, sizeof(blk), 1234);
	ck_assert_int_eq(lfs_pseg_verify(blk, sizeof(blk), 1234), 0);
	/* seeded: another filesystem's summary never verifies */
	ck_assert_int_eq(lfs_pseg_verify(blk, sizeof(blk), 1235), -EFSCORRUPTED);
	struct lfs_pseg_hdr h2;
	lfs_pseg_hdr_decode(&h2, blk);
	ck_assert_uint_eq(h2.seq, 77);
	ck_assert_uint_eq(h2.next_seg, 12);
	ck_assert_uint_eq(h2.flags, LFS_PSEG_END);
	struct lfs_pseg_entry e2;
	lfs_pseg_entry_decode(&e2, blk, 0);
	ck_assert_uint_eq(e2.ino, 42);
	ck_assert_uint_eq(e2.lblk, 1ull << 40);
	ck_assert_uint_eq(e2.crc, 0xdeadbeef);
	ck_assert_uint_eq(e2.kind, LFS_BK_DATA);
	/* a flipped bit anywhere in the summary is caught */
	blk[LFS_PSEG_HDR_SIZE + 30] ^= 4;
	ck_assert_int_eq(lfs_pseg_verify(blk, sizeof(blk), 1234), -EFSCORRUPTED);
	blk[0] ^= 1;
	ck_assert_int_eq(lfs_pseg_verify(blk, sizeof(blk), 1234), -EINVAL);
	ck_assert_uint_ge(lfs_pseg_max_entries(4096), 100);
}
END_TEST

/* XATTR entries and roots (format.h, "XATTR blocks") */
START_TEST(xattr_entries)
{
	uint8_t blk[4096] = { 0 };
	lfs_xroot_encode_hdr(blk, lfs_xattr_max_slots(4096), 0);
	ck_assert_uint_eq(lfs_get32(blk), 0x52544158u);
	ck_assert_uint_eq(lfs_xattr_max_slots(4096), 510);
	lfs_xroot_set_slot(blk, 509, lfs_xslot_make(12345, LFS_XSLOT_VALUE));
	ck_assert_uint_eq(lfs_get64(blk + 16 + 8 * 509), 12345 | (2ull << 56));
	struct lfs_xroot r;
	ck_assert_int_eq(lfs_xroot_decode(&r, blk, 4096), 0);
	ck_assert(!r.legacy);
	ck_assert_uint_eq(r.nslots, 510);
	ck_assert_uint_eq(lfs_xslot_addr(lfs_xroot_slot(blk, 509)), 12345);
	ck_assert_uint_eq(lfs_xslot_kind(lfs_xroot_slot(blk, 509)), LFS_XSLOT_VALUE);
	lfs_put16(blk + 4, 511); /* more slots than a block holds */
	ck_assert_int_eq(lfs_xroot_decode(&r, blk, 4096), -EFSCORRUPTED);
	/* a legacy block: count then entries, no magic */
	memset(blk, 0, sizeof(blk));
	lfs_put32(blk, 2);
	uint32_t off = 4;
	off += lfs_xent_encode(blk + off, "user.a", 6, 0, 3, "xyz", 3);
	uint8_t slots[4];
	lfs_put16(slots, 5);
	lfs_put16(slots + 2, 9);
	uint32_t second = off;
	off += lfs_xent_encode(blk + off, "user.b", 6, LFS_XENT_OUT, 5000, slots, 4);
	ck_assert_uint_eq(off, 4 + 8 + 6 + 3 + 8 + 6 + 4);
	ck_assert_uint_eq(lfs_xent_len(6, 5000, true, 4096), 8 + 6 + 4);
	ck_assert_int_eq(lfs_xroot_decode(&r, blk, 4096), 0);
	ck_assert(r.legacy && r.count == 2 && r.ents == 4);
	struct lfs_xent e;
	ck_assert_int_eq(lfs_xent_decode(&e, blk, 4, off, 4096, 0), 0);
	ck_assert(e.name_len == 6 && e.value_len == 3 && memcmp(e.payload, "xyz", 3) == 0);
	ck_assert_int_eq(lfs_xent_decode(&e, blk, second, off, 4096, 10), 0);
	ck_assert(e.flags == LFS_XENT_OUT && lfs_xent_slot(&e, 0) == 5 && lfs_xent_slot(&e, 1) == 9);
	/* a slot beyond the table, a payload past the end, unknown flags */
	ck_assert_int_eq(lfs_xent_decode(&e, blk, second, off, 4096, 9), -EFSCORRUPTED);
	ck_assert_int_eq(lfs_xent_decode(&e, blk, second, off - 1, 4096, 10), -EFSCORRUPTED);
	lfs_put32(blk + 4 + LFS_XE_OFF_VALLEN, 0xfffffff0u);
	ck_assert_int_eq(lfs_xent_decode(&e, blk, 4, off, 4096, 0), -EFSCORRUPTED);
	blk[second + LFS_XE_OFF_FLAGS] = 2;
	ck_assert_int_eq(lfs_xent_decode(&e, blk, second, off, 4096, 10), -EFSCORRUPTED);
}
END_TEST

START_TEST(dinode_roundtrip_inline)
{
	struct lfs_dinode di = { .ino = 9, .version = 2, .mode = 0100644, .uid = 1000, .gid = 100, .nlink = 1,
				 .flags = LFS_DI_INLINE, .size = 100, .mtime_sec = -5, .mtime_nsec = 999999999,
				 .parent = 1, .inline_len = 100 };
	di.direct[3] = 77;
	di.ind[2] = 88;
	di.xattr = 99;
	di.xattr_blocks = 7;
	uint8_t data[100], blk[4096];
	for (int i = 0; i < 100; i++)
		data[i] = (uint8_t)i;
	uint32_t len = lfs_dinode_encode(&di, data, blk);
	ck_assert_uint_eq(len, 384); /* 256 + 100 rounded to 64 */
	ck_assert_uint_eq(lfs_get32(blk + LFS_DI_OFF_MAGIC), LFS_INODE_MAGIC);
	ck_assert_uint_eq(lfs_get64(blk + LFS_DI_OFF_SIZE), 100);
	ck_assert_uint_eq(lfs_get64(blk + 112 + 3 * 8), 77);
	struct lfs_dinode out;
	ck_assert_int_eq(lfs_dinode_decode(&out, blk, sizeof(blk)), 384);
	ck_assert_int_eq(out.mtime_sec, -5);
	ck_assert_uint_eq(out.mtime_nsec, 999999999);
	ck_assert_uint_eq(out.ind[2], 88);
	ck_assert_uint_eq(out.xattr, 99);
	ck_assert_uint_eq(out.xattr_blocks, 7);
	ck_assert_uint_eq(lfs_get32(blk + 248), 7);
	ck_assert_mem_eq(blk + LFS_INODE_HDR_SIZE, data, 100);
	/* a record that claims to run past the block is refused */
	ck_assert_int_eq(lfs_dinode_decode(&out, blk, 300), -EFSCORRUPTED);
	blk[LFS_DI_OFF_MTIME_NS + 3] = 0x7f; /* nsec out of range */
	ck_assert_int_eq(lfs_dinode_decode(&out, blk, sizeof(blk)), -EFSCORRUPTED);
	/* an inline length whose record length wraps in 32 bits to one that
	 * fits: (256 + 0xffffffc1 + 63) & ~63 == 256 (mod 2^32) */
	lfs_dinode_encode(&di, data, blk);
	lfs_put32(blk + LFS_DI_OFF_INLINE, 0xffffffc1u);
	lfs_put32(blk + LFS_DI_OFF_RECLEN, lfs_inode_reclen(0xffffffc1u));
	ck_assert_uint_eq(lfs_inode_reclen(0xffffffc1u), 256);
	ck_assert_int_eq(lfs_dinode_decode(&out, blk, sizeof(blk)), -EFSCORRUPTED);
}
END_TEST

/* The invariants of a record (lfs_dinode_check): each broken alone. */
/* A record's count in the usage table: its length without the feature;
 * with it, its share of a block packed with records of its length. */
START_TEST(inode_charge)
{
	struct lfs_super sb = { .block_size = 4096 };
	ck_assert_uint_eq(lfs_inode_charge(&sb, 2112), 2112);
	sb.feature_incompat = LFS_FEATURE_RECORD_CHARGE;
	ck_assert_uint_eq(lfs_inode_charge(&sb, 256), 256);     /* 16 a block */
	ck_assert_uint_eq(lfs_inode_charge(&sb, 320), 341);     /* 12: 4096 / 12 */
	ck_assert_uint_eq(lfs_inode_charge(&sb, 1280), 1365);   /* 3 */
	ck_assert_uint_eq(lfs_inode_charge(&sb, 2048), 2048);   /* 2 */
	ck_assert_uint_eq(lfs_inode_charge(&sb, 2112), 4096);   /* 1 */
	ck_assert_uint_eq(lfs_inode_charge(&sb, 4096), 4096);
	for (uint32_t len = 256; len <= 4096; len += 64) {
		uint32_t c = lfs_inode_charge(&sb, len), k = 4096 / len;
		ck_assert_uint_ge(c, len);
		ck_assert_uint_le(k * c, 4096);          /* a full block never counts more */
		ck_assert_uint_gt((k + 1) * c, 4096);    /* and one more never fits */
	}
}
END_TEST

START_TEST(dinode_invariants)
{
	struct lfs_super sb = sample_super();
	const char *why;
	struct lfs_dinode file = { .ino = 9, .mode = 0100644, .nlink = 1, .flags = LFS_DI_INLINE, .size = 10,
				   .inline_len = 10 };
	struct lfs_dinode dir = { .ino = 2, .mode = 040755, .nlink = 2, .size = 3 * 4096, .parent = 1,
				  .blocks = 3 };
	dir.direct[0] = sb.seg0;
	ck_assert_int_eq(lfs_dinode_check(&file, &sb, &why), 0);
	ck_assert_ptr_null(why);
	ck_assert_int_eq(lfs_dinode_check(&dir, &sb, &why), 0);
	struct lfs_dinode d = file;
	d.size = 1 << 20; /* the read of 64 KiB out of a 3,840-byte buffer */
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	ck_assert_ptr_nonnull(why);
	d = file;
	d.inline_len = d.size = lfs_inline_max(4096) + 1;
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d = file;
	d.direct[0] = sb.seg0; /* inline, yet with a block */
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d = file;
	d.flags = 0; /* inline length without inline content */
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d = file;
	d.flags = 0;
	d.inline_len = 0;
	d.size = lfs_max_file_size(4096);
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), 0);
	d.size++;
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d = file;
	d.flags |= 0x100;
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d = file;
	d.mode = 0170644; /* no such file type */
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d = file;
	d.ino = sb.max_inodes;
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d = file;
	d.mode = 0; /* a tombstone: only its number matters */
	d.size = UINT64_MAX;
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), 0);
	d = dir;
	d.size = 0xffffffffull * 4096; /* the block count that wrapped in dir.c */
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d.size = sb.nblocks * 4096;
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), 0);
	d.size += 4096; /* more blocks than the device has */
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	struct lfs_super large = sb;
	large.nblocks = 1ull << 40;
	d.size = LFS_DIR_MAX_SIZE;
	ck_assert_int_eq(lfs_dinode_check(&d, &large, &why), 0);
	d.size = LFS_DIR_MAX_SIZE + 4096;
	ck_assert_int_eq(lfs_dinode_check(&d, &large, &why), -EFSCORRUPTED);
	d = dir;
	d.size = 4095;
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d = dir;
	d.flags = LFS_DI_INLINE;
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d = dir;
	d.parent = 0;
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d = dir;
	d.direct[5] = sb.nblocks; /* past the last segment */
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d = dir;
	d.ind[3] = 1; /* a checkpoint block */
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d = dir;
	d.xattr = sb.seg0 - 1;
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d = file;
	d.mode = 0120777;
	d.flags = 0;
	d.inline_len = 0;
	d.size = LFS_SYMLINK_MAX + 1;
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d = file;
	d.mode = 020644; /* a device with content */
	d.flags = 0;
	d.inline_len = 0;
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
	d.size = 0;
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), 0);
	/* chattr's kept flags are known; a bit beyond them is not */
	d.flags = LFS_DI_NODUMP | LFS_DI_NOATIME;
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), 0);
	d.flags = LFS_DI_NOATIME << 1;
	ck_assert_int_eq(lfs_dinode_check(&d, &sb, &why), -EFSCORRUPTED);
}
END_TEST

START_TEST(dirent_rules)
{
	uint8_t blk[4096] = { 0 };
	struct lfs_dirent d = { .ino = 5, .rec_len = 4096, .name_len = 3, .type = 8, .name = "abc" };
	lfs_dirent_encode(&d, blk);
	struct lfs_dirent o;
	ck_assert_int_eq(lfs_dirent_decode(&o, blk, 0, 4096), 0);
	ck_assert_uint_eq(o.ino, 5);
	ck_assert_uint_eq(o.rec_len, 4096);
	ck_assert_int_eq(memcmp(o.name, "abc", 3), 0);
	ck_assert_uint_eq(lfs_dirent_len(3), 16);
	ck_assert_uint_eq(lfs_dirent_len(255), 264);
	/* rec_len beyond the block, or too short for the name */
	lfs_put16(blk + 4, 8);
	ck_assert_int_eq(lfs_dirent_decode(&o, blk, 0, 4096), -EFSCORRUPTED);
	ck_assert_int_eq(lfs_dirent_decode(&o, blk, 4092, 4096), -EFSCORRUPTED);

	struct lfs_super sb = sample_super();
	const char *why;
	struct lfs_dirent c = d;
	ck_assert_int_eq(lfs_dirent_check(&c, &sb, &why), 0);
	c.name = "a/c";
	ck_assert_int_eq(lfs_dirent_check(&c, &sb, &why), -EFSCORRUPTED);
	c.name = "a\0c";
	ck_assert_int_eq(lfs_dirent_check(&c, &sb, &why), -EFSCORRUPTED);
	c.name = "..";
	c.name_len = 2;
	ck_assert_int_eq(lfs_dirent_check(&c, &sb, &why), -EFSCORRUPTED);
	c.name = "..x";
	c.name_len = 3;
	ck_assert_int_eq(lfs_dirent_check(&c, &sb, &why), 0);
	c.type = 3; /* no such DT_ */
	ck_assert_int_eq(lfs_dirent_check(&c, &sb, &why), -EFSCORRUPTED);
	c = d;
	c.ino = sb.max_inodes;
	ck_assert_int_eq(lfs_dirent_check(&c, &sb, &why), -EFSCORRUPTED);
	c.ino = 0; /* free space: nothing else matters */
	ck_assert_int_eq(lfs_dirent_check(&c, &sb, &why), 0);
}
END_TEST

START_TEST(node_ids)
{
	uint64_t id = lfs_node_id(3, 2, 12345);
	ck_assert(id & LFS_NODE_FLAG);
	ck_assert_uint_eq(lfs_node_tree(id), 3);
	ck_assert_uint_eq(lfs_node_level(id), 2);
	ck_assert_uint_eq(lfs_node_idx(id), 12345);
	uint64_t ptrs[512], back[512];
	uint8_t blk[4096];
	for (int i = 0; i < 512; i++)
		ptrs[i] = (uint64_t)i * 0x10001;
	lfs_node_encode(ptrs, 512, blk);
	lfs_node_decode(back, 512, blk);
	ck_assert_mem_eq(ptrs, back, sizeof(ptrs));
}
END_TEST

START_TEST(ckpt_and_tables)
{
	uint8_t buf[LFS_CKPT_HDR_SIZE];
	struct lfs_ckpt_hdr h = { .magic = LFS_CKPT_MAGIC, .ckpt_seq = 4, .next_pseg_seq = 99, .head_seg = 7,
				  .head_off = 33, .next_seg = 8, .n_imap_blocks = 3, .n_sut_blocks = 1,
				  .bytes_written = 1ull << 33 }, o;
	lfs_ckpt_hdr_encode(&h, buf);
	ck_assert_uint_eq(lfs_get64(buf + LFS_CK_OFF_NEXT_PSEG), 99);
	ck_assert_uint_eq(lfs_get32(buf + LFS_CK_OFF_HEAD_OFF), 33);
	lfs_ckpt_hdr_decode(&o, buf);
	ck_assert_uint_eq(o.next_seg, 8);
	ck_assert_uint_eq(o.bytes_written, 1ull << 33);
	ck_assert_uint_eq(lfs_ckpt_region_bytes(3, 1), LFS_CKPT_HDR_SIZE + 32);

	uint8_t e[16];
	struct lfs_imap_entry ie = { .daddr = 1ull << 35, .version = 7, .slot = 63, .flags = LFS_IMAP_INUSE }, io;
	lfs_imap_entry_encode(&ie, e);
	lfs_imap_entry_decode(&io, e);
	ck_assert_uint_eq(io.daddr, 1ull << 35);
	ck_assert_uint_eq(io.slot, 63);
	struct lfs_sut_entry se = { .live_bytes = 1u << 20, .mtime_ns = 5 }, so;
	lfs_sut_entry_encode(&se, e);
	lfs_sut_entry_decode(&so, e);
	ck_assert_uint_eq(so.live_bytes, 1u << 20);
	ck_assert_uint_eq(so.mtime_ns, 5);

	struct lfs_super sb = sample_super();
	const char *why;
	ie.daddr = sb.seg0;
	ie.slot = 4096 / 64 - 4; /* the last slot a record header fits */
	ck_assert_int_eq(lfs_imap_entry_check(&ie, 5, &sb, &why), 0);
	ck_assert_int_eq(lfs_imap_entry_check(&ie, 0, &sb, &why), -EFSCORRUPTED);
	ck_assert_int_eq(lfs_imap_entry_check(&ie, sb.max_inodes, &sb, &why), -EFSCORRUPTED);
	ie.slot = 4096 / 64 - 3; /* a record header would run past the block */
	ck_assert_int_eq(lfs_imap_entry_check(&ie, 5, &sb, &why), -EFSCORRUPTED);
	ie.slot = 0;
	ie.daddr = sb.nblocks;
	ck_assert_int_eq(lfs_imap_entry_check(&ie, 5, &sb, &why), -EFSCORRUPTED);
	ie.flags = 0; /* free: the address is not used */
	ck_assert_int_eq(lfs_imap_entry_check(&ie, 5, &sb, &why), 0);
	ie.flags = 0x80;
	ck_assert_int_eq(lfs_imap_entry_check(&ie, 5, &sb, &why), -EFSCORRUPTED);
	se.live_bytes = sb.seg_blocks * 4096;
	ck_assert_int_eq(lfs_sut_entry_check(&se, &sb, &why), 0);
	se.live_bytes++;
	ck_assert_int_eq(lfs_sut_entry_check(&se, &sb, &why), -EFSCORRUPTED);
}
END_TEST

/* Every field of the summary, the checkpoint header, the table entries,
 * the inode record and the directory record at the byte the format says,
 * against literal numbers: a round trip alone passes an encoder and a
 * decoder that are wrong the same way. */
/* Replaced addresses: 16-byte records right after the entries, a header
 * (kind 0: ino, version, count) before each inode's block records (ino,
 * kind, address); a count the block cannot hold is refused. */
START_TEST(repl_records)
{
	uint8_t blk[4096] = { 0 };
	struct lfs_repl_rec hr = { .ino = 0x01020304, .version = 0x11121314, .count = 0x21222324 };
	struct lfs_repl_rec br = { .ino = 0x01020304, .kind = LFS_BK_INDIR, .addr = 0x3132333435363738ull };
	lfs_repl_rec_encode(&hr, blk, 3, 0);
	lfs_repl_rec_encode(&br, blk, 3, 1);
	const uint8_t *p = blk + 64 + 3 * 24;
	ck_assert_uint_eq(lfs_pseg_repl_off(3), 64 + 3 * 24);
	ck_assert_uint_eq(lfs_get32(p + 0), 0x01020304);
	ck_assert_uint_eq(p[4], 0);
	ck_assert_uint_eq(lfs_get32(p + 8), 0x11121314);
	ck_assert_uint_eq(lfs_get32(p + 12), 0x21222324);
	ck_assert_uint_eq(lfs_get32(p + 16), 0x01020304);
	ck_assert_uint_eq(p[20], LFS_BK_INDIR);
	ck_assert_uint_eq(lfs_get64(p + 24), 0x3132333435363738ull);
	struct lfs_repl_rec r;
	lfs_repl_rec_decode(&r, blk, 3, 0);
	ck_assert(r.ino == hr.ino && r.kind == 0 && r.version == hr.version && r.count == hr.count);
	lfs_repl_rec_decode(&r, blk, 3, 1);
	ck_assert(r.ino == br.ino && r.kind == br.kind && r.addr == br.addr);

	ck_assert_uint_eq(lfs_pseg_repl_room(4096, 0), (4096 - 64) / 16);
	ck_assert_uint_eq(lfs_pseg_repl_room(4096, 3), (4096 - 64 - 72) / 16);
	ck_assert_uint_eq(lfs_pseg_repl_room(4096, lfs_pseg_max_entries(4096)), 0);
	struct lfs_pseg_hdr h = { .nblocks = 3, .repl = 7 };
	uint32_t n = 99;
	ck_assert_int_eq(lfs_pseg_repl_count(&h, 4096, &n), 0);
	ck_assert_uint_eq(n, 0); /* without the flag, none */
	h.flags = LFS_PSEG_END | LFS_PSEG_REPL;
	ck_assert_int_eq(lfs_pseg_repl_count(&h, 4096, &n), 0);
	ck_assert_uint_eq(n, 7);
	h.repl = lfs_pseg_repl_room(4096, 3);
	ck_assert_int_eq(lfs_pseg_repl_count(&h, 4096, &n), 0);
	h.repl++;
	ck_assert_int_eq(lfs_pseg_repl_count(&h, 4096, &n), -EFSCORRUPTED);
	h.repl = 0xffffffffu;
	ck_assert_int_eq(lfs_pseg_repl_count(&h, 4096, &n), -EFSCORRUPTED);
	h = (struct lfs_pseg_hdr){ .nblocks = 0xffffffffu, .flags = LFS_PSEG_REPL, .repl = 1 };
	ck_assert_int_eq(lfs_pseg_repl_count(&h, 4096, &n), -EFSCORRUPTED);
}
END_TEST

START_TEST(table_offsets)
{
	uint8_t blk[4096] = { 0 };
	struct lfs_pseg_hdr h = { .magic = LFS_PSEG_MAGIC, .seq = 0x1112131415161718ull,
				  .ckpt_seq = 0x2122232425262728ull, .timestamp_ns = 0x3132333435363738ull,
				  .next_seg = 0x4142434445464748ull, .nblocks = 0x51525354, .flags = 0x61626364,
				  .repl = 0x65666768 };
	lfs_pseg_hdr_encode(&h, blk);
	ck_assert_uint_eq(lfs_get32(blk + 48), 0x65666768);
	ck_assert_uint_eq(lfs_get32(blk + 0), LFS_PSEG_MAGIC);
	ck_assert_uint_eq(lfs_get64(blk + 8), 0x1112131415161718ull);
	ck_assert_uint_eq(lfs_get64(blk + 16), 0x2122232425262728ull);
	ck_assert_uint_eq(lfs_get64(blk + 24), 0x3132333435363738ull);
	ck_assert_uint_eq(lfs_get64(blk + 32), 0x4142434445464748ull);
	ck_assert_uint_eq(lfs_get32(blk + 40), 0x51525354);
	ck_assert_uint_eq(lfs_get32(blk + 44), 0x61626364);
	struct lfs_pseg_entry pe = { .ino = 0x71727374, .version = 0x81828384, .lblk = 0x9192939495969798ull,
				     .crc = 0xa1a2a3a4, .kind = LFS_BK_XATTR };
	lfs_pseg_entry_encode(&pe, blk, 2);
	const uint8_t *p = blk + 64 + 2 * 24; /* entries follow the 64-byte header, 24 bytes each */
	ck_assert_uint_eq(lfs_get32(p + 0), 0x71727374);
	ck_assert_uint_eq(lfs_get32(p + 4), 0x81828384);
	ck_assert_uint_eq(lfs_get64(p + 8), 0x9192939495969798ull);
	ck_assert_uint_eq(lfs_get32(p + 16), 0xa1a2a3a4);
	ck_assert_uint_eq(p[20], 4);
	lfs_pseg_entry_set_crc(blk, 2, 0xb1b2b3b4);
	ck_assert_uint_eq(lfs_get32(p + 16), 0xb1b2b3b4);
	lfs_pseg_seal(blk, sizeof(blk), 77);
	ck_assert_uint_ne(lfs_get32(blk + 4), 0);
	ck_assert_uint_eq(lfs_pseg_max_entries(4096), (4096 - 64) / 24);

	uint8_t ck[LFS_CKPT_HDR_SIZE] = { 0 };
	struct lfs_ckpt_hdr c = { .magic = LFS_CKPT_MAGIC, .ckpt_seq = 0x0102030405060708ull,
				  .timestamp_ns = 0x1112131415161718ull, .next_pseg_seq = 0x2122232425262728ull,
				  .head_seg = 0x3132333435363738ull, .head_off = 0x41424344, .flags = 0x51525354,
				  .next_seg = 0x6162636465666768ull, .n_imap_blocks = 0x71727374,
				  .n_sut_blocks = 0x81828384, .inodes_used = 0x9192939495969798ull,
				  .bytes_written = 0xa1a2a3a4a5a6a7a8ull };
	lfs_ckpt_hdr_encode(&c, ck);
	ck_assert_uint_eq(lfs_get32(ck + 0), LFS_CKPT_MAGIC);
	ck_assert_uint_eq(lfs_get64(ck + 8), 0x0102030405060708ull);
	ck_assert_uint_eq(lfs_get64(ck + 16), 0x1112131415161718ull);
	ck_assert_uint_eq(lfs_get64(ck + 24), 0x2122232425262728ull);
	ck_assert_uint_eq(lfs_get64(ck + 32), 0x3132333435363738ull);
	ck_assert_uint_eq(lfs_get32(ck + 40), 0x41424344);
	ck_assert_uint_eq(lfs_get32(ck + 44), 0x51525354);
	ck_assert_uint_eq(lfs_get64(ck + 48), 0x6162636465666768ull);
	ck_assert_uint_eq(lfs_get32(ck + 56), 0x71727374);
	ck_assert_uint_eq(lfs_get32(ck + 60), 0x81828384);
	ck_assert_uint_eq(lfs_get64(ck + 64), 0x9192939495969798ull);
	ck_assert_uint_eq(lfs_get64(ck + 72), 0xa1a2a3a4a5a6a7a8ull);
	uint8_t region[LFS_CKPT_HDR_SIZE + 16] = { 0 };
	lfs_ckpt_addr_put(region, 1, 0xc1c2c3c4c5c6c7c8ull);
	ck_assert_uint_eq(lfs_get64(region + LFS_CKPT_HDR_SIZE + 8), 0xc1c2c3c4c5c6c7c8ull);

	uint8_t e[16] = { 0 };
	struct lfs_imap_entry ie = { .daddr = 0x0102030405060708ull, .version = 0x11121314, .slot = 0x2122,
				     .flags = 0x3132 };
	lfs_imap_entry_encode(&ie, e);
	ck_assert_uint_eq(lfs_get64(e + 0), 0x0102030405060708ull);
	ck_assert_uint_eq(lfs_get32(e + 8), 0x11121314);
	ck_assert_uint_eq(lfs_get16(e + 12), 0x2122);
	ck_assert_uint_eq(lfs_get16(e + 14), 0x3132);
	struct lfs_sut_entry se = { .live_bytes = 0x41424344, .flags = 0x51525354, .mtime_ns = 0x6162636465666768ull };
	lfs_sut_entry_encode(&se, e);
	ck_assert_uint_eq(lfs_get32(e + 0), 0x41424344);
	ck_assert_uint_eq(lfs_get32(e + 4), 0x51525354);
	ck_assert_uint_eq(lfs_get64(e + 8), 0x6162636465666768ull);

	uint8_t rec[LFS_INODE_HDR_SIZE] = { 0 };
	struct lfs_dinode di = { .ino = 0x01020304, .version = 0x11121314, .mode = 0100644, .uid = 0x21222324,
				 .gid = 0x31323334, .nlink = 0x41424344, .flags = 0, .rdev = 0x51525354,
				 .size = 0x6162636465666768ull, .blocks = 0x7172737475767778ull,
				 .atime_sec = 0x0a, .mtime_sec = 0x0b, .ctime_sec = 0x0c, .btime_sec = 0x0d,
				 .atime_nsec = 1, .mtime_nsec = 2, .ctime_nsec = 3, .btime_nsec = 4,
				 .parent = 0x81828384, .xattr = 0x9192939495969798ull };
	for (int i = 0; i < LFS_NDIRECT; i++)
		di.direct[i] = 0x1000 + (uint64_t)i;
	for (int i = 0; i < LFS_NINDIRECT; i++)
		di.ind[i] = 0x2000 + (uint64_t)i;
	lfs_dinode_encode(&di, NULL, rec);
	ck_assert_uint_eq(lfs_get32(rec + 0), 0x01020304);
	ck_assert_uint_eq(lfs_get32(rec + 4), 0x11121314);
	ck_assert_uint_eq(lfs_get32(rec + 8), 0100644);
	ck_assert_uint_eq(lfs_get32(rec + 12), 0x21222324);
	ck_assert_uint_eq(lfs_get32(rec + 16), 0x31323334);
	ck_assert_uint_eq(lfs_get32(rec + 20), 0x41424344);
	ck_assert_uint_eq(lfs_get32(rec + 28), 0x51525354);
	ck_assert_uint_eq(lfs_get64(rec + 32), 0x6162636465666768ull);
	ck_assert_uint_eq(lfs_get64(rec + 40), 0x7172737475767778ull);
	ck_assert_uint_eq(lfs_get64(rec + 48), 0x0a);
	ck_assert_uint_eq(lfs_get32(rec + 56), 1);
	ck_assert_uint_eq(lfs_get32(rec + 60), 0x81828384);
	ck_assert_uint_eq(lfs_get64(rec + 64), 0x0b);
	ck_assert_uint_eq(lfs_get32(rec + 72), 2);
	ck_assert_uint_eq(lfs_get32(rec + 76), 256); /* record length */
	ck_assert_uint_eq(lfs_get64(rec + 80), 0x0c);
	ck_assert_uint_eq(lfs_get32(rec + 88), 3);
	ck_assert_uint_eq(lfs_get32(rec + 92), 0); /* inline length */
	ck_assert_uint_eq(lfs_get64(rec + 96), 0x0d);
	ck_assert_uint_eq(lfs_get32(rec + 104), 4);
	ck_assert_uint_eq(lfs_get32(rec + 108), LFS_INODE_MAGIC);
	ck_assert_uint_eq(lfs_get64(rec + 112), 0x1000);
	ck_assert_uint_eq(lfs_get64(rec + 112 + 8 * 11), 0x100b);
	ck_assert_uint_eq(lfs_get64(rec + 208), 0x2000);
	ck_assert_uint_eq(lfs_get64(rec + 208 + 8 * (LFS_NINDIRECT - 1)), 0x2000 + LFS_NINDIRECT - 1);
	ck_assert_uint_eq(lfs_get64(rec + 240), 0x9192939495969798ull);
	ck_assert_uint_eq(LFS_INODE_HDR_SIZE, 256);

	uint8_t dirblk[64] = { 0 };
	struct lfs_dirent d = { .ino = 0x01020304, .rec_len = 0x1112, .name_len = 3, .type = 8, .name = "abc" };
	lfs_dirent_encode(&d, dirblk);
	ck_assert_uint_eq(lfs_get32(dirblk + 0), 0x01020304);
	ck_assert_uint_eq(lfs_get16(dirblk + 4), 0x1112);
	ck_assert_uint_eq(dirblk[6], 3);
	ck_assert_uint_eq(dirblk[7], 8);
	ck_assert_mem_eq(dirblk + 8, "abc", 3);

	uint64_t ptrs[2] = { 0x0102030405060708ull, 0x1112131415161718ull };
	lfs_node_encode(ptrs, 2, blk);
	ck_assert_uint_eq(lfs_get64(blk + 0), 0x0102030405060708ull);
	ck_assert_uint_eq(lfs_get64(blk + 8), 0x1112131415161718ull);
}
END_TEST

/* ACL values are the kernel's encoding, and a leaf's header and an
 * out-of-line value's slots little-endian at fixed places: literal
 * offsets, so that a symmetric error in both directions cannot pass. */
START_TEST(acl_and_xattr_layout)
{
	uint8_t v[12] = { 2, 0, 0, 0, 0x10, 0, 6, 0, 0xe8, 0x03, 0, 0 };
	ck_assert_uint_eq(lfs_acl_version(v), 2);
	ck_assert_uint_eq(lfs_acl_tag(v, 4), LFS_ACL_MASK);
	ck_assert_uint_eq(lfs_acl_perm(v, 4), 6);
	lfs_acl_set_perm(v, 4, 5);
	ck_assert_uint_eq(v[6], 5);
	ck_assert_uint_eq(v[7], 0);
	ck_assert_uint_eq(v[4], 0x10);
	ck_assert_uint_eq(LFS_ACL_HDR, 4);
	ck_assert_uint_eq(LFS_ACL_ENT, 8);
	ck_assert_uint_eq(LFS_ACL_USER_OBJ | LFS_ACL_USER | LFS_ACL_GROUP_OBJ | LFS_ACL_GROUP | LFS_ACL_OTHER, 0x2f);
	uint8_t b[8] = { 0 };
	lfs_xleaf_set_count(b, 0x01020304);
	ck_assert_uint_eq(b[0], 4);
	ck_assert_uint_eq(b[3], 1);
	ck_assert_uint_eq(lfs_xleaf_count(b), 0x01020304);
	lfs_xent_put_slot(b, 2, 0x0506);
	ck_assert_uint_eq(b[4], 6);
	ck_assert_uint_eq(b[5], 5);
}
END_TEST

/* The snapshot records (not yet written by anything: their layout is
 * fixed first): every field of a held entry, a history record and the
 * checkpoint header's table roots at the byte lfs(5) gives, against
 * literal numbers; a name is cut at its maximum and NUL-padded; a table
 * node id keeps its level and index apart. */
START_TEST(snapshot_records)
{
	uint8_t p[LFS_HIST_ENTRY_SIZE];
	struct lfs_held_entry he = { .orig = 0x0102030405060708ull, .cur = 0x1112131415161718ull,
				     .from = 0x2122232425262728ull, .until = 0x3132333435363738ull,
				     .aux = 0x4142434445464748ull, .charge = 0x51525354, .kind = 0x61,
				     .flags = 0x71, .slot = 0x8182 }, ho;
	memset(p, 0xee, sizeof(p));
	lfs_held_entry_encode(&he, p);
	ck_assert_uint_eq(p[0], 0x08);
	ck_assert_uint_eq(p[7], 0x01);
	ck_assert_uint_eq(p[8], 0x18);
	ck_assert_uint_eq(p[16], 0x28);
	ck_assert_uint_eq(p[24], 0x38);
	ck_assert_uint_eq(p[32], 0x48);
	ck_assert_uint_eq(p[40], 0x54);
	ck_assert_uint_eq(p[43], 0x51);
	ck_assert_uint_eq(p[44], 0x61);
	ck_assert_uint_eq(p[45], 0x71);
	ck_assert_uint_eq(p[46], 0x82);
	ck_assert_uint_eq(p[47], 0x81);
	ck_assert_uint_eq(p[48], 0xee); /* 48 bytes, no more */
	lfs_held_entry_decode(&ho, p);
	ck_assert(memcmp(&he, &ho, sizeof(he)) == 0);

	struct lfs_hist_entry hi = { .seq = 0x0102030405060708ull, .time_ns = 0x1112131415161718ull,
				     .flags = LFS_HIST_SNAPSHOT }, hio;
	memset(hi.name, 'n', sizeof(hi.name)); /* one past the maximum: cut */
	lfs_hist_entry_encode(&hi, p);
	ck_assert_uint_eq(p[0], 0x08);
	ck_assert_uint_eq(p[8], 0x18);
	ck_assert_uint_eq(lfs_get32(p + 16), 1);
	ck_assert_uint_eq(lfs_get32(p + 20), 0);
	ck_assert_uint_eq(p[24], 'n');
	ck_assert_uint_eq(p[24 + 38], 'n');
	ck_assert_uint_eq(p[63], 0);
	lfs_hist_entry_decode(&hio, p);
	ck_assert_uint_eq(hio.seq, hi.seq);
	ck_assert_uint_eq(hio.time_ns, hi.time_ns);
	ck_assert_uint_eq(strlen(hio.name), 39);
	strcpy(hi.name, "before-upgrade");
	lfs_hist_entry_encode(&hi, p);
	lfs_hist_entry_decode(&hio, p);
	ck_assert_str_eq(hio.name, "before-upgrade");
	ck_assert_uint_eq(p[24 + 14], 0);

	uint8_t buf[LFS_CKPT_HDR_SIZE];
	struct lfs_ckpt_hdr h = { .magic = LFS_CKPT_MAGIC, .held_root = 0x0102030405060708ull,
				  .held_slots = 0x1112131415161718ull, .hist_root = 0x2122232425262728ull,
				  .hist_slots = 0x31323334, .protect_s = 0x41424344 }, o;
	lfs_ckpt_hdr_encode(&h, buf);
	ck_assert_uint_eq(lfs_get64(buf + 80), 0x0102030405060708ull);
	ck_assert_uint_eq(lfs_get64(buf + 88), 0x1112131415161718ull);
	ck_assert_uint_eq(lfs_get64(buf + 96), 0x2122232425262728ull);
	ck_assert_uint_eq(lfs_get32(buf + 104), 0x31323334);
	ck_assert_uint_eq(lfs_get32(buf + 108), 0x41424344);
	for (unsigned i = 112; i < LFS_CKPT_HDR_SIZE; i++)
		ck_assert_uint_eq(buf[i], 0);
	lfs_ckpt_hdr_decode(&o, buf);
	ck_assert_uint_eq(o.held_slots, h.held_slots);
	ck_assert_uint_eq(o.hist_slots, h.hist_slots);
	ck_assert_uint_eq(o.protect_s, h.protect_s);

	uint64_t id = lfs_table_node_id(2, 0x123456789aull);
	ck_assert_uint_eq(id, 0x000200123456789aull);
	ck_assert_uint_eq(lfs_table_node_level(id), 2);
	ck_assert_uint_eq(lfs_table_node_index(id), 0x123456789aull);
	ck_assert_uint_eq(lfs_table_per_page(4096, LFS_HELD_ENTRY_SIZE), 85);
	ck_assert_uint_eq(lfs_table_per_page(4096, LFS_HIST_ENTRY_SIZE), 64);
	ck_assert_uint_eq(LFS_FEATURE_INCOMPAT_KNOWN & LFS_FEATURE_SNAPSHOTS, LFS_FEATURE_SNAPSHOTS);
}
END_TEST

/* mkfs.lfs and lfs-tune -U random make RFC 4122 version 4 UUIDs, as
 * blkid and udev expect of a random one */
START_TEST(uuid_version4)
{
	uint8_t seen[16] = { 0 }, u[16];
	for (int i = 0; i < 64; i++) {
		ck_assert_int_eq(lfs_uuid_generate(u), 0);
		ck_assert_uint_eq(u[6] >> 4, 4);
		ck_assert_uint_eq(u[8] >> 6, 2);
		ck_assert_msg(memcmp(u, seen, 16) != 0, "the same UUID twice");
		memcpy(seen, u, 16);
	}
}
END_TEST

CHECK_MAIN("format", "core", 30, super_offsets, super_roundtrip_and_rejects, super_backup,
	   super_rejects_what_mkfs_never_makes, pseg_roundtrip_and_crc, dinode_roundtrip_inline,
	   xattr_entries, dinode_invariants, inode_charge, dirent_rules, node_ids, ckpt_and_tables,
	   table_offsets, repl_records, acl_and_xattr_layout, snapshot_records, uuid_version4)
