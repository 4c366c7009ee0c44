/*
 * check_region.c — mirrors ckpt/region.c, the two checkpoint regions
 * kept in memory so that a checkpoint writes only the region blocks whose
 * addresses changed and seals the whole region from per-block crcs; and
 * the mount's choice between the two regions (lfs_ckpt_judge_region,
 * lfs_ckpt_load).  Holds it to: the header's encoding and the alternation
 * of regions by sequence number; a crc over the whole region, so a write
 * torn anywhere fails it and the other region is used; exactly the
 * changed blocks (and the header) written, by the mapping of table entry
 * to region block; a region that does not verify at mount written whole
 * the next time; the errors of adopting a region.
 *
 * The image is 1 GiB so that the region spans 3 blocks: 1,024 inode-map
 * and 4 usage-table addresses after the 128-byte header (8,352 bytes).
 */
#include "testfs.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <string.h>

#define BS 4096u
#define NIMAP 1024u
#define NSUT 4u
#define REGION_BLOCKS 3u

/* A fresh image of the geometry above, mounted, with both regions
 * written by checkpoints (mkfs wrote only one). */
static struct lfs_fs *
region_fs(void)
{
	testfs_make(1ull << 30, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_uint_eq(fs->sb.ckpt_blocks, REGION_BLOCKS);
	ck_assert_uint_eq(fs->sb.ckpt_addr[0], 1);
	ck_assert_uint_eq(fs->sb.ckpt_addr[1], 4);
	ck_assert_uint_eq(fs->n_imap_blocks, NIMAP);
	ck_assert_uint_eq(fs->n_sut_blocks, NSUT);
	testfs_mkfile(fs, LFS_ROOT_INO, "f");
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	return fs;
}

/* Region w as it is on disk, read past the code under test. */
static void
raw_region(int w, uint8_t buf[REGION_BLOCKS * BS])
{
	int fd = open(testfs_path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, REGION_BLOCKS * BS, (off_t)(1 + 3 * w) * BS), REGION_BLOCKS * BS);
	close(fd);
}

/* Flip one byte of the image at `off`. */
static void
raw_flip(uint64_t off)
{
	int fd = open(testfs_path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	uint8_t c;
	ck_assert_int_eq(pread(fd, &c, 1, (off_t)off), 1);
	c ^= 0x5a;
	ck_assert_int_eq(pwrite(fd, &c, 1, (off_t)off), 1);
	close(fd);
}

/* Judge region w as the mount does; its verdict, *h and *addr600 /
 * *addr1024 (two table addresses, when valid). */
static int
judge(struct lfs_bdev *dev, const struct lfs_super *sb, int w, struct lfs_ckpt_hdr *h, char *why, size_t len,
      uint64_t *addr600, uint64_t *addr1024)
{
	uint64_t *addrs = NULL;
	int err = lfs_ckpt_judge_region(dev, sb, w, h, &addrs, why, len);
	if (!err) {
		*addr600 = addrs[600];
		*addr1024 = addrs[1024];
	}
	free(addrs);
	return err;
}

/* Judge region w of the unmounted image. */
static int
judge_image(int w, struct lfs_ckpt_hdr *h, char *why, size_t len, uint64_t *addr600, uint64_t *addr1024)
{
	struct lfs_bdev dev;
	struct lfs_super sb;
	struct lfs_super_where where;
	char msg[256];
	ck_assert_int_eq(lfs_bdev_open(&dev, testfs_path, true), 0);
	ck_assert_int_eq(lfs_super_open(&dev, 0, true, &sb, &where, msg, sizeof(msg)), 0);
	int err = judge(&dev, &sb, w, h, why, len, addr600, addr1024);
	lfs_bdev_close(&dev);
	return err;
}

/* The region the tools are told a mount uses (lfs_ckpt_judge_both), with
 * the table addresses of each valid one. */
static int
judged_newest(void)
{
	struct lfs_bdev dev;
	struct lfs_super sb;
	struct lfs_super_where where;
	char msg[256];
	struct lfs_ckpt_verdict v[2];
	ck_assert_int_eq(lfs_bdev_open(&dev, testfs_path, true), 0);
	ck_assert_int_eq(lfs_super_open(&dev, 0, true, &sb, &where, msg, sizeof(msg)), 0);
	int newest = lfs_ckpt_judge_both(&dev, &sb, true, v);
	lfs_bdev_close(&dev);
	for (int i = 0; i < 2; i++) {
		ck_assert(!v[i].err == (v[i].addrs != NULL));
		ck_assert(v[i].decoded == (!v[i].err || v[i].err == -EFSCORRUPTED));
		free(v[i].addrs);
	}
	return newest;
}

/* Bytes lfs_region_write(fs, w, h) put on the device. */
static uint64_t
region_write_bytes(struct lfs_fs *fs, int w, struct lfs_ckpt_hdr *h)
{
	uint64_t b0 = fs->dev.bytes_written, hb0 = h->bytes_written;
	ck_assert_int_eq(lfs_region_write(fs, w, h), 0);
	uint64_t n = fs->dev.bytes_written - b0;
	/* the header counts what the write added */
	ck_assert_uint_eq(h->bytes_written - hb0, n);
	return n;
}

/* Checkpoint n goes to region n % 2; its header is at the offsets the
 * format fixes, the addresses follow it in table order, and the crc,
 * assembled from per-block crcs, is the crc of the whole region.  A
 * clean unmount's checkpoint says so. */
START_TEST(header_and_alternation)
{
	struct lfs_fs *fs = region_fs();
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	uint64_t s = st.ckpt_seq;
	uint8_t r[REGION_BLOCKS * BS];
	for (int k = 0; k < 2; k++) {
		int w = (int)((s - (uint64_t)k) % 2);
		raw_region(w, r);
		ck_assert_uint_eq(lfs_get32(r), 0x54504b43);
		ck_assert_uint_eq(lfs_get64(r + 8), s - (uint64_t)k);
		ck_assert_uint_eq(lfs_get32(r + 44), 0);
		ck_assert_uint_eq(lfs_get32(r + 56), 1024);
		ck_assert_uint_eq(lfs_get32(r + 60), 4);
		ck_assert_int_eq(lfs_ckpt_verify(r, sizeof(r), fs->seed), 0);
	}
	raw_region((int)(s % 2), r);
	for (size_t i = 0; i < NIMAP; i++)
		ck_assert_uint_eq(lfs_get64(r + 128 + 8 * i), fs->imap_addr[i]);
	for (size_t i = 0; i < NSUT; i++)
		ck_assert_uint_eq(lfs_get64(r + 128 + 8 * (NIMAP + i)), fs->sut_addr[i]);
	ck_assert_uint_ne(fs->sut_addr[0], 0);
	/* the last address ends at byte 8,352: the rest of block 2 is zero */
	for (size_t b = 8352; b < sizeof(r); b++)
		ck_assert_uint_eq(r[b], 0);
	r[5000] ^= 1; /* block 1: a change anywhere fails the whole region */
	ck_assert_int_eq(lfs_ckpt_verify(r, sizeof(r), fs->seed), -EFSCORRUPTED);

	ck_assert_int_eq(lfs_unmount(fs), 0);
	raw_region((int)((s + 1) % 2), r);
	ck_assert_uint_eq(lfs_get64(r + 8), s + 1);
	ck_assert_uint_eq(lfs_get32(r + 44), LFS_CKPT_CLEAN);
	testfs_remove();
}
END_TEST

/* Table entry i lives in region block (128 + 8 i) / 4096: 0..495 in
 * block 0 (the header's, written every time), 496..1007 in block 1, from
 * 1008 in block 2.  A write puts on disk the header block and the blocks
 * of the entries marked since, nothing else: an address changed but not
 * marked stays as it was on disk, and the region still verifies. */
/* Both regions known, and the newest valid: its number, its header. */
static int
newest_region(struct lfs_fs *fs, struct lfs_ckpt_hdr *h)
{
	ck_assert_ptr_nonnull(fs->region[0]);
	ck_assert_ptr_nonnull(fs->region[1]);
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	int w = (int)(st.ckpt_seq % 2);
	char why[128];
	uint64_t a600, a1024;
	ck_assert_int_eq(judge(&fs->dev, &fs->sb, w, h, why, sizeof(why), &a600, &a1024), 0);
	ck_assert_uint_eq(h->ckpt_seq, st.ckpt_seq);
	return w;
}

START_TEST(writes_changed_blocks_only)
{
	struct lfs_fs *fs = region_fs();
	/* the newest region, rewritten as it is: nothing changed since */
	struct lfs_ckpt_hdr h;
	int w = newest_region(fs, &h);
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	char why[128];
	uint64_t a600, a1024;

	ck_assert_uint_eq(region_write_bytes(fs, w, &h), 4096);
	lfs_region_mark(fs, 495);
	ck_assert_uint_eq(region_write_bytes(fs, w, &h), 4096);
	lfs_region_mark(fs, 496);
	ck_assert_uint_eq(region_write_bytes(fs, w, &h), 8192);
	lfs_region_mark(fs, 1007);
	lfs_region_mark(fs, 1008);
	ck_assert_uint_eq(region_write_bytes(fs, w, &h), 12288);
	ck_assert_uint_eq(region_write_bytes(fs, w, &h), 4096);

	uint64_t imap600 = fs->imap_addr[600], sut0 = fs->sut_addr[0];
	lfs_imap_addr_set(fs, 600, 0x1234567);
	fs->sut_addr[0] = 0x7654321;
	lfs_region_mark(fs, NIMAP + 0);
	ck_assert_uint_eq(region_write_bytes(fs, w, &h), 8192);
	struct lfs_ckpt_hdr got;
	ck_assert_int_eq(judge(&fs->dev, &fs->sb, w, &got, why, sizeof(why), &a600, &a1024), 0);
	ck_assert_uint_eq(got.ckpt_seq, st.ckpt_seq);
	ck_assert_uint_eq(a1024, 0x7654321);
	ck_assert_uint_eq(a600, imap600);

	lfs_imap_addr_set(fs, 600, imap600);
	fs->sut_addr[0] = sut0;
	lfs_region_mark(fs, 600);
	lfs_region_mark(fs, NIMAP + 0);
	ck_assert_uint_eq(region_write_bytes(fs, w, &h), 12288);
	ck_assert_int_eq(judge(&fs->dev, &fs->sb, w, &got, why, sizeof(why), &a600, &a1024), 0);
	ck_assert_uint_eq(a1024, sut0);
	testfs_finish(fs);
}
END_TEST

/* A region write torn in a changed block (its first half landed, the
 * header not written) fails the region's crc: the mount takes the other
 * region, one checkpoint older.  The torn region is not known any more,
 * in memory or at the next mount, so it is written whole the next time:
 * a block no checkpoint changes is put right too. */
START_TEST(torn_region_falls_back)
{
	struct lfs_fs *fs = region_fs();
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	uint64_t s = st.ckpt_seq;
	int w = (int)(s % 2);
	struct lfs_ckpt_hdr h;
	char why[128];
	uint64_t a600, a1024;
	ck_assert_int_eq(judge(&fs->dev, &fs->sb, w, &h, why, sizeof(why), &a600, &a1024), 0);
	ck_assert_uint_eq(a600, 0); /* inode-map block 600 was never written */

	lfs_imap_addr_set(fs, 600, 0x1234567);
	lfs_region_mark(fs, 600);
	ck_assert_int_eq(lfs_fault_arm("pwrite:1:short"), 0);
	ck_assert_int_eq(lfs_region_write(fs, w, &h), -EIO);
	lfs_fault_disarm();
	ck_assert_ptr_null(fs->region[w]);
	ck_assert_ptr_nonnull(fs->region[!w]);
	lfs_imap_addr_set(fs, 600, 0);
	lfs_abandon(fs);

	uint8_t r[REGION_BLOCKS * BS];
	raw_region(w, r);
	ck_assert_uint_eq(lfs_get64(r + 128 + 8 * 600), 0x1234567); /* the half that landed */
	ck_assert_int_eq(judge_image(w, &h, why, sizeof(why), &a600, &a1024), -EFSCORRUPTED);
	ck_assert_str_eq(why, "crc mismatch");
	ck_assert_uint_eq(h.ckpt_seq, s);
	ck_assert_int_eq(judge_image(!w, &h, why, sizeof(why), &a600, &a1024), 0);
	ck_assert_str_eq(why, "valid");
	ck_assert_uint_eq(h.ckpt_seq, s - 1);

	fs = testfs_mount_ro();
	lfs_get_stats(fs, &st);
	ck_assert_uint_eq(st.ckpt_seq, s - 1);
	lfs_abandon(fs);

	/* the next checkpoint of seq s, the mount's after roll-forward or
	 * ours, goes to region w and puts block 1 right */
	fs = testfs_mount();
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(judge(&fs->dev, &fs->sb, w, &h, why, sizeof(why), &a600, &a1024), 0);
	ck_assert_uint_eq(h.ckpt_seq % 2, (uint64_t)w);
	ck_assert_uint_ge(h.ckpt_seq, s);
	ck_assert_uint_eq(a600, 0);
	testfs_finish(fs);
}
END_TEST

/* The newer valid region wins; a newer one that fails its crc is passed
 * over for the older; with no valid region (the other's magic gone) the
 * mount is refused as corrupt rather than starting from nothing. */
START_TEST(newest_valid_chosen)
{
	struct lfs_fs *fs = region_fs();
	ck_assert_int_eq(lfs_unmount(fs), 0);
	struct lfs_ckpt_hdr h[2];
	char why[128];
	uint64_t a600, a1024;
	for (int w = 0; w < 2; w++) {
		ck_assert_int_eq(judge_image(w, &h[w], why, sizeof(why), &a600, &a1024), 0);
		ck_assert_str_eq(why, "valid");
	}
	int n = h[1].ckpt_seq > h[0].ckpt_seq;
	ck_assert_uint_eq(h[n].ckpt_seq, h[!n].ckpt_seq + 1);
	ck_assert_uint_eq(h[n].ckpt_seq % 2, (uint64_t)n);
	ck_assert_int_eq(judged_newest(), n);
	fs = testfs_mount_ro();
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	ck_assert_uint_eq(st.ckpt_seq, h[n].ckpt_seq);
	lfs_abandon(fs);

	/* an address in the newer region's last block */
	raw_flip((uint64_t)(1 + 3 * n) * BS + 2 * BS + 130);
	ck_assert_int_eq(judge_image(n, &h[n], why, sizeof(why), &a600, &a1024), -EFSCORRUPTED);
	ck_assert_str_eq(why, "crc mismatch");
	ck_assert_int_eq(judged_newest(), !n);
	fs = testfs_mount_ro();
	lfs_get_stats(fs, &st);
	ck_assert_uint_eq(st.ckpt_seq, h[!n].ckpt_seq);
	testfs_fsck_clean(fs);
	lfs_abandon(fs);

	raw_flip((uint64_t)(1 + 3 * !n) * BS);
	ck_assert_int_eq(judge_image(!n, &h[!n], why, sizeof(why), &a600, &a1024), -EINVAL);
	ck_assert_str_eq(why, "bad magic");
	ck_assert_int_eq(judged_newest(), -1);
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.readonly = true;
	ck_assert_int_eq(lfs_mount(testfs_path, &o, &fs), -EFSCORRUPTED);
	testfs_remove();
}
END_TEST

/* Adopting a region at mount: a read the device failed is an error (the
 * mount fails: the region may be the newer), as is memory; either leaves
 * the region unknown and the other as it was.  A region that does not
 * verify is not an error: it is left unknown, to be written whole. */
START_TEST(adopt_verdicts)
{
	struct lfs_fs *fs = region_fs();
	lfs_region_free(fs);
	ck_assert_ptr_null(fs->region[0]);
	ck_assert_ptr_null(fs->region[1]);

	ck_assert_int_eq(lfs_fault_arm("pread:1:EIO"), 0);
	ck_assert_int_eq(lfs_region_adopt(fs, 0), -EIO);
	lfs_fault_disarm();
	ck_assert_ptr_null(fs->region[0]);
	ck_assert_int_eq(lfs_region_adopt(fs, 0), 0);
	ck_assert_ptr_nonnull(fs->region[0]);

	/* no memory at the first or a later allocation of region 1: region
	 * 0 stays known (it is not written whole for nothing) */
	for (int n = 1; n <= 3; n++) {
		char spec[32];
		snprintf(spec, sizeof(spec), "alloc:%d:ENOMEM", n);
		ck_assert_int_eq(lfs_fault_arm(spec), 0);
		ck_assert_int_eq(lfs_region_adopt(fs, 1), -ENOMEM);
		lfs_fault_disarm();
		ck_assert_ptr_null(fs->region[1]);
		ck_assert_ptr_nonnull(fs->region[0]);
	}

	/* region 1 damaged on disk: adopted as unknown */
	raw_flip(4 * BS + 2 * BS + 3000);
	ck_assert_int_eq(lfs_region_adopt(fs, 1), 0);
	ck_assert_ptr_null(fs->region[1]);
	ck_assert_ptr_nonnull(fs->region[0]);

	/* both regions written again: region 1 whole, so it verifies */
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	struct lfs_ckpt_hdr h;
	char why[128];
	uint64_t a600, a1024;
	ck_assert_int_eq(judge(&fs->dev, &fs->sb, 1, &h, why, sizeof(why), &a600, &a1024), 0);
	testfs_finish(fs);
}
END_TEST

/* A mount of a 1 TiB image holding one file compares its regions with
 * the tables without reading the runs of inode-map addresses never set:
 * few of the 2 MiB of them are resident after the mount (the comparison
 * used to fault in every page), both regions are known, and the newest,
 * rewritten as it is, is one block written and still verifies. */
START_TEST(adopt_reads_only_addresses_set)
{
	(void)mallopt(M_MMAP_THRESHOLD, 128 * 1024); /* as check_seg's mount_counts_only_segments_in_use */
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(1ull << 40, 1 << 20, 300, &ino);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	size_t npages, resident = testfs_resident(fs->imap_addr, fs->n_imap_blocks * sizeof(uint64_t), &npages);
	ck_assert_uint_ge(npages, 512);
	ck_assert_msg(resident * 4 < npages, "%zu of the inode map's %zu pages of addresses resident after the mount",
		      resident, npages);
	/* the newest region, rewritten as it is: nothing changed since */
	struct lfs_ckpt_hdr h;
	int w = newest_region(fs, &h);
	ck_assert_uint_eq(region_write_bytes(fs, w, &h), 4096);
	char why[128];
	uint64_t a600, a1024;
	ck_assert_int_eq(judge(&fs->dev, &fs->sb, w, &h, why, sizeof(why), &a600, &a1024), 0);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("region", "region", 30, header_and_alternation, writes_changed_blocks_only,
	   torn_region_falls_back, newest_valid_chosen, adopt_verdicts, adopt_reads_only_addresses_set)
