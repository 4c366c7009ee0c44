/*
 * check_resize.c — resizing a mounted filesystem (lfs/fs/resize.c,
 * lfs_resize of lfs.h): a shrink moves the live blocks of the segments
 * past the new end, keeps every file, leaves nothing past the end and
 * commits a geometry the next mount takes; the writer never takes a
 * segment past the limit while it runs; a shrink the data would not
 * fit is refused with nothing changed and the smallest size named,
 * which then works; a resize to the size it has is EALREADY, one while
 * another runs EBUSY; a grow
 * gives the writer the new segments; a dry run changes nothing.
 */
#include "testfs.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#define SEG (64u << 10)
#define FILES 48
#define FILE_BLOCKS 48 /* 192 KiB each: three segments */

/* Files f0..f(n-1) of FILE_BLOCKS blocks, pattern i + 1; then every one
 * but each third deleted, so live blocks lie all over the log. */
static void
spread(struct lfs_fs *fs, uint64_t *ino)
{
	uint8_t *buf = malloc((size_t)FILE_BLOCKS * 4096);
	ck_assert_ptr_nonnull(buf);
	for (int i = 0; i < FILES; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", i);
		ino[i] = testfs_mkfile(fs, LFS_ROOT_INO, name);
		fill_pattern(buf, (size_t)FILE_BLOCKS * 4096, (unsigned)i + 1);
		ck_assert_int_eq(lfs_write(fs, ino[i], buf, (size_t)FILE_BLOCKS * 4096, 0, NULL),
				 (ssize_t)FILE_BLOCKS * 4096);
		lfs_release(fs, ino[i]); /* lfs_create opened it */
		ck_assert_int_eq(lfs_checkpoint(fs), 0);
	}
	for (int i = 0; i < FILES; i++) {
		if (i % 3 == 2)
			continue;
		char name[16];
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, name), 0);
		lfs_forget(fs, ino[i], 1); /* its last reference: the inode goes */
	}
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	free(buf);
}

/* Every file kept by spread() reads its pattern. */
static void
check_files(struct lfs_fs *fs)
{
	uint8_t *want = malloc((size_t)FILE_BLOCKS * 4096), *got = malloc((size_t)FILE_BLOCKS * 4096);
	for (int i = 2; i < FILES; i += 3) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", i);
		struct stat st;
		ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, name, &st), 0);
		fill_pattern(want, (size_t)FILE_BLOCKS * 4096, (unsigned)i + 1);
		ck_assert_int_eq(lfs_read(fs, st.st_ino, got, (size_t)FILE_BLOCKS * 4096, 0),
				 (ssize_t)FILE_BLOCKS * 4096);
		ck_assert_mem_eq(got, want, (size_t)FILE_BLOCKS * 4096);
		lfs_forget(fs, st.st_ino, 1);
	}
	free(want);
	free(got);
}

/* The live bytes past segment `from`. */
static uint64_t
live_past(const struct lfs_fs *fs, uint64_t from)
{
	uint64_t n = 0;
	for (uint64_t s = from; s < fs->sb.nsegs; s++)
		n += lfs_seg_live(fs, s);
	return n;
}

static uint64_t
image_bytes(void)
{
	struct stat st;
	ck_assert_int_eq(stat(testfs_path, &st), 0);
	return (uint64_t)st.st_size;
}

START_TEST(shrink_moves_the_tail_and_commits)
{
	testfs_make(16u << 20, SEG); /* 254 segments of 16 blocks */
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino[FILES];
	spread(fs, ino);
	uint64_t new_nsegs = (2047 - 16) / 16; /* 8 MiB */
	ck_assert_uint_gt(live_past(fs, new_nsegs), 0);
	struct lfs_resize_info ri;
	char why[512];
	int err = lfs_resize(fs, 8u << 20, 0, &ri, why, sizeof(why));
	ck_assert_msg(err == 0, "lfs_resize: %d: %s", err, why);
	ck_assert_uint_eq(ri.old_nsegs, 254);
	ck_assert_uint_eq(ri.new_nsegs, new_nsegs);
	ck_assert_uint_gt(ri.moved_blocks, 0);
	ck_assert_uint_eq(fs->sb.nsegs, new_nsegs);
	ck_assert_uint_eq(fs->alloc_segs, 0);
	ck_assert_uint_lt(fs->cur_seg, new_nsegs);
	ck_assert_uint_lt(fs->next_seg, new_nsegs);
	ck_assert_uint_eq(image_bytes(), 8u << 20);
	check_files(fs);
	testfs_fsck_clean(fs);
	/* writes go on, in the segments there are */
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "after");
	uint8_t buf[4096];
	fill_pattern(buf, sizeof(buf), 99);
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(lfs_write(fs, f, buf, sizeof(buf), (off_t)i * 4096, NULL), 4096);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount_ro();
	ck_assert_uint_eq(fs->sb.nsegs, new_nsegs);
	check_files(fs);
	testfs_fsck_clean(fs);
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

START_TEST(shrink_refused_when_the_data_would_not_fit)
{
	testfs_make(16u << 20, SEG);
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino[FILES];
	spread(fs, ino); /* 16 files of 192 KiB: 3 MiB live */
	struct lfs_resize_info ri;
	char why[512];
	uint64_t written = testfs_written(fs);
	/* the smallest size the superblock allows holds less than the data */
	uint64_t tiny = 0;
	for (uint64_t b = 1u << 20; b < (16u << 20) && !tiny; b += SEG) {
		struct lfs_super g;
		char w2[256];
		if (!lfs_resize_plan(&fs->sb, b, &g, w2, sizeof(w2)))
			tiny = b;
	}
	ck_assert_uint_gt(tiny, 0);
	int err = lfs_resize(fs, tiny, 0, &ri, why, sizeof(why));
	if (err == 0) {
		/* the data fits even there: nothing to refuse at this size */
		ck_abort_msg("%llu bytes held the data: the test needs more of it", (unsigned long long)tiny);
	}
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_ptr_nonnull(strstr(why, "the data would not fit: "));
	ck_assert_ptr_nonnull(strstr(why, "need at least "));
	ck_assert_uint_gt(ri.min_bytes, tiny);
	ck_assert_uint_lt(ri.min_bytes, 16u << 20);
	/* nothing changed, nothing written */
	ck_assert_uint_eq(testfs_written(fs), written);
	ck_assert_uint_eq(fs->sb.nsegs, 254);
	ck_assert_uint_eq(fs->alloc_segs, 0);
	ck_assert_uint_eq(image_bytes(), 16u << 20);
	/* a dry run at the size named: it fits, and nothing changes */
	ck_assert_int_eq(lfs_resize(fs, ri.min_bytes, LFS_RESIZE_DRY, &ri, why, sizeof(why)), 0);
	ck_assert_uint_eq(fs->sb.nsegs, 254);
	ck_assert_uint_eq(testfs_written(fs), written);
	uint64_t min = ri.new_bytes;
	ck_assert_int_eq(lfs_resize(fs, min, 0, &ri, why, sizeof(why)), 0);
	ck_assert_uint_lt(fs->sb.nsegs, 254);
	check_files(fs);
	testfs_finish(fs);
}
END_TEST

START_TEST(same_size_and_grow)
{
	testfs_make(16u << 20, SEG);
	struct lfs_fs *fs = testfs_mount();
	struct lfs_resize_info ri;
	char why[512];
	ck_assert_int_eq(lfs_resize(fs, 16u << 20, 0, &ri, why, sizeof(why)), -EALREADY);
	ck_assert_uint_eq(fs->sb.nsegs, 254);
	/* one at a time: another shrink yielding between its moves */
	fs->resizing = true;
	ck_assert_int_eq(lfs_resize(fs, 32u << 20, 0, &ri, why, sizeof(why)), -EBUSY);
	ck_assert_ptr_nonnull(strstr(why, "another resize is under way"));
	fs->resizing = false;
	ck_assert_int_eq(lfs_resize(fs, 32u << 20, 0, &ri, why, sizeof(why)), 0);
	ck_assert_uint_eq(fs->sb.nsegs, 510);
	ck_assert_uint_eq(ri.new_nsegs, 510);
	ck_assert_uint_eq(image_bytes(), 32u << 20);
	ck_assert_uint_eq(fs->alloc_segs, 0);
	/* the writer takes the new segments: 20 MiB more than the old size held */
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "big");
	uint8_t *buf = malloc(1u << 20);
	fill_pattern(buf, 1u << 20, 5);
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(lfs_write(fs, f, buf, 1u << 20, (off_t)i << 20, NULL), 1 << 20);
	free(buf);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* While the limit holds, the writer never picks a segment past it, and
 * the clean segments past it are no room. */
START_TEST(limit_keeps_the_writer_below)
{
	testfs_make(16u << 20, SEG);
	struct lfs_fs *fs = testfs_mount();
	lfs_lock(fs);
	uint64_t clean = fs->nclean, past = 0;
	for (uint64_t s = 100; s < 254; s++)
		past += fs->segs[s].state == LFS_SEG_CLEAN;
	lfs_seg_set_limit(fs, 100);
	ck_assert_uint_eq(fs->nclean, clean - past);
	for (int i = 0; i < 300; i++) {
		uint64_t s;
		if (lfs_seg_pick_next(fs, &s))
			break;
		ck_assert_uint_lt(s, 100);
		fs->cur_seg = s;
	}
	lfs_seg_set_limit(fs, 254);
	ck_assert_uint_eq(fs->alloc_segs, 0);
	pthread_mutex_unlock(&fs->lock);
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

CHECK_MAIN("resize", "resize", 30, shrink_moves_the_tail_and_commits, shrink_refused_when_the_data_would_not_fit,
	   same_size_and_grow, limit_keeps_the_writer_below)
