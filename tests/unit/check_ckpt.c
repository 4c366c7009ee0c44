/*
 * check_ckpt.c — checkpoints and the running counts they rely on: what a
 * checkpoint writes follows the metadata that changed, not the size of
 * the filesystem, and the counts kept instead of scanning the segments
 * (clean, live bytes, freeable) agree with the segments after deletes,
 * overwrites, checkpoints and cleaning.
 */
#include "testfs.h"

#include <errno.h>
#include <string.h>


/* Bytes the first checkpoint after the mount's own writes for 50 new
 * small files (the regions as read at mount are compared with the
 * tables, region.c: neither is written whole). */
static uint64_t
ckpt_bytes(uint64_t image_bytes, uint64_t *region_bytes)
{
	testfs_make(image_bytes, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	*region_bytes = (uint64_t)fs->sb.ckpt_blocks * fs->bsize;
	char name[32];
	for (int i = 0; i < 50; i++) {
		struct stat st;
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(lfs_create(fs, LFS_ROOT_INO, name, 0644, true, &testfs_me, &st), 0);
		ck_assert_int_eq(lfs_write(fs, st.st_ino, name, strlen(name), 0, NULL), (ssize_t)strlen(name));
	}
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	uint64_t w0 = testfs_written(fs);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t n = testfs_written(fs) - w0;
	testfs_fsck_clean(fs);
	testfs_finish(fs);
	return n;
}

/* A checkpoint region names every table block: 2 MiB at 1 TiB.  Only
 * its blocks that changed are written, so the same dirty metadata costs
 * the same at 1 GiB and 1 TiB. */
START_TEST(checkpoint_writes_what_changed)
{
	uint64_t small_region, big_region;
	uint64_t small = ckpt_bytes(1ull << 30, &small_region);
	uint64_t big = ckpt_bytes(1ull << 40, &big_region);
	fprintf(stderr, "checkpoint of 50 new files: %llu bytes at 1 GiB (region %llu), %llu at 1 TiB (region %llu)\n",
		(unsigned long long)small, (unsigned long long)small_region, (unsigned long long)big,
		(unsigned long long)big_region);
	ck_assert_uint_ge(big_region, 2u << 20);
	ck_assert_uint_le(big, small + 4 * 4096);
	ck_assert_uint_lt(big, big_region / 8);
}
END_TEST

/* The counts kept instead of scans agree with the segments after a
 * workload that fills, frees, cleans and checkpoints: fsck compares. */
START_TEST(running_counts_agree)
{
	testfs_make(64 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint8_t *buf = malloc(1 << 20);
	char name[32];
	for (int round = 0; round < 6; round++) {
		for (int i = 0; i < 8; i++) {
			struct stat st;
			snprintf(name, sizeof(name), "f%d", i);
			int err = lfs_create(fs, LFS_ROOT_INO, name, 0644, false, &testfs_me, &st);
			ck_assert_int_eq(err, 0);
			fill_pattern(buf, 1 << 20, (unsigned)(round * 8 + i));
			ck_assert_int_eq(lfs_write(fs, st.st_ino, buf, 1 << 20, 0, NULL), 1 << 20);
			lfs_forget(fs, st.st_ino, 1);
		}
		for (int i = round % 2; i < 8; i += 2) {
			snprintf(name, sizeof(name), "f%d", i);
			ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, name), 0);
		}
		ck_assert_int_eq(lfs_checkpoint(fs), 0);
		struct lfs_reclaim_tally t = {0};
		ck_assert_int_ge(lfs_clean_reclaim(fs, false, &t), -ENOSPC);
		testfs_fsck_clean(fs);
		struct statvfs sv;
		ck_assert_int_eq(lfs_statfs(fs, &sv), 0);
		struct lfs_stats st;
		lfs_get_stats(fs, &st);
		ck_assert_uint_eq(st.segs_clean, fs->nclean);
	}
	free(buf);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

/* A mount reads each checkpoint region once: the one it judges is the
 * one it later compares with the tables (region.c), 2 MiB each at 1 TiB,
 * and then the usage table (16 MiB); it read both regions twice. */
START_TEST(mount_reads_each_region_once)
{
	testfs_make(1ull << 40, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t region = (uint64_t)fs->sb.ckpt_blocks * fs->bsize;
	uint64_t sut = (uint64_t)fs->n_sut_blocks * fs->bsize;
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	uint64_t got = testfs_read(fs);
	fprintf(stderr, "mount at 1 TiB read %llu bytes: regions 2 x %llu, usage table %llu\n",
		(unsigned long long)got, (unsigned long long)region, (unsigned long long)sut);
	ck_assert_uint_ge(region, 2u << 20);
	ck_assert_uint_le(got, 2 * region + sut + (256u << 10));
	/* and checkpoints still write only what changed */
	uint64_t w0 = testfs_written(fs);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_lt(testfs_written(fs) - w0, region / 8);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* Segments holding the table blocks the checkpoint regions name. */
static size_t
table_segments(struct lfs_fs *fs)
{
	uint64_t *a = malloc(((size_t)fs->n_imap_blocks + fs->n_sut_blocks) * sizeof(uint64_t));
	size_t n = 0, segs = 0;
	for (uint32_t b = 0; b < fs->n_imap_blocks; b++)
		if (fs->imap_addr[b])
			a[n++] = lfs_addr_seg(fs, fs->imap_addr[b]);
	for (uint32_t b = 0; b < fs->n_sut_blocks; b++)
		if (fs->sut_addr[b])
			a[n++] = lfs_addr_seg(fs, fs->sut_addr[b]);
	qsort(a, n, sizeof(*a), u64_cmp);
	for (size_t i = 0; i < n; i++)
		segs += !i || a[i] != a[i - 1];
	free(a);
	return segs;
}

/* A mount checks every table block against its segment's summaries, a
 * chain walk per segment: writing only what changed, checkpoints would
 * leave the usage table in one segment per checkpoint while a large
 * file is written.  Strays are written again beside a later
 * checkpoint's blocks, so they stay in a few segments; the tables read
 * back the same, and fsck agrees. */
START_TEST(table_blocks_stay_together)
{
	/* 4,096 segments: 16 usage-table blocks, and the 42 MiB written
	 * within the capacity (64 MiB of 32 KiB segments offers 30 MiB) */
	testfs_make(128ull << 20, 32768);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_uint_ge(fs->n_sut_blocks, 8);
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	enum { CHUNK = 6 << 20 };
	ck_assert_uint_lt(7ull * CHUNK / fs->bsize, lfs_space_capacity(fs) * 9 / 10);
	uint8_t *buf = malloc(CHUNK);
	for (int i = 0; i < 7; i++) { /* each past another 192 segments, then a checkpoint */
		fill_pattern(buf, CHUNK, (unsigned)i);
		ck_assert_int_eq(lfs_write(fs, ino, buf, CHUNK, (off_t)i * CHUNK, NULL), CHUNK);
		ck_assert_int_eq(lfs_checkpoint(fs), 0);
	}
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	size_t segs = table_segments(fs);
	fprintf(stderr, "table blocks in %zu segments after 7 checkpoints; %llu written again to keep them there\n",
		segs, (unsigned long long)st.table_blocks_gathered);
	ck_assert_uint_gt(st.table_blocks_gathered, 0);
	ck_assert_uint_le(segs, 4);
	testfs_fsck_clean(fs);
	lfs_abandon(fs);
	fs = testfs_mount();
	testfs_fsck_clean(fs);
	fill_pattern(buf, CHUNK, 3);
	uint8_t *back = malloc(CHUNK);
	ck_assert_int_eq(lfs_read(fs, ino, back, CHUNK, 3 * CHUNK), CHUNK);
	ck_assert(memcmp(back, buf, CHUNK) == 0);
	free(back);
	free(buf);
	testfs_finish(fs);
}
END_TEST

/* The newest checkpoint's first inode-map block, overwritten with
 * bytes that fail its check; returns that checkpoint's seq. */
static uint64_t
damage_newest_tables(void)
{
	size_t len;
	uint8_t *img = testfs_image_load(&len);
	struct lfs_super sb;
	ck_assert_int_eq(lfs_super_decode(&sb, img), 0);
	struct lfs_ckpt_hdr h[2];
	for (int i = 0; i < 2; i++)
		lfs_ckpt_hdr_decode(&h[i], img + sb.ckpt_addr[i] * sb.block_size);
	int newer = h[1].ckpt_seq > h[0].ckpt_seq;
	const uint8_t *region = img + sb.ckpt_addr[newer] * sb.block_size;
	uint64_t addr = 0;
	for (uint32_t b = 0; b < h[newer].n_imap_blocks && !addr; b++)
		addr = lfs_ckpt_addr_get(region, b);
	ck_assert_uint_ne(addr, 0);
	memset(img + addr * sb.block_size, 0x5a, sb.block_size);
	testfs_image_store(img, len);
	free(img);
	return h[newer].ckpt_seq;
}

/* A newest checkpoint whose tables cannot be read: a read-write mount
 * is refused; a read-only one mounts the older checkpoint and rolls the
 * log after it forward (a file fsynced after it included), says so to
 * fsck (one problem), and cannot be made writable. */
START_TEST(readonly_mount_falls_back_to_older_checkpoint)
{
	testfs_make(64ull << 20, 256u << 10);
	struct lfs_fs *fs = testfs_mount();
	uint64_t a = testfs_mkfile(fs, LFS_ROOT_INO, "a");
	ck_assert_int_eq(lfs_write(fs, a, "older", 5, 0, NULL), 5);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t b = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	ck_assert_int_eq(lfs_write(fs, b, "rolled", 6, 0, NULL), 6);
	ck_assert_int_eq(lfs_fsync(fs, b, false), 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	uint64_t lost = damage_newest_tables();

	struct lfs_opts o = testfs_opts();
	int err = lfs_mount(testfs_path, &o, &fs);
	ck_assert_msg(err == -EIO || err == -EFSCORRUPTED, "read-write mount: %d", err);
	o.readonly = true;
	o.upgradable = true;
	ck_assert_int_eq(lfs_mount(testfs_path, &o, &fs), 0);
	ck_assert_uint_eq(fs->degraded_from, lost);
	ck_assert_uint_lt(fs->ckpt_seq, lost);
	char buf[8];
	struct stat st;
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "a", &st), 0);
	ck_assert_int_eq(lfs_read(fs, st.st_ino, buf, sizeof(buf), 0), 5);
	ck_assert(memcmp(buf, "older", 5) == 0);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "b", &st), 0);
	ck_assert_int_eq(lfs_read(fs, st.st_ino, buf, sizeof(buf), 0), 6);
	ck_assert(memcmp(buf, "rolled", 6) == 0);
	uint64_t problems = 0;
	ck_assert_int_eq(lfs_fsck(fs, &problems), 0);
	ck_assert_uint_eq(problems, 1);
	ck_assert_int_eq(lfs_set_readonly(fs, false), -EROFS);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

CHECK_MAIN("ckpt", "checkpoint", 300, checkpoint_writes_what_changed, running_counts_agree,
	   mount_reads_each_region_once, table_blocks_stay_together,
	   readonly_mount_falls_back_to_older_checkpoint)
