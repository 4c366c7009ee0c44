/*
 * check_space.c — admission control and the reserve (space.c and
 * space_reserve.c): the
 * floor of clean space each class of operation must leave (writers
 * above the reserve and the cache headroom, deletes half way into it,
 * the checkpoint's tables and log head below everyone), the capacity
 * that leaves cleaning dead space to work in, ENOSPC for writers before
 * the log runs out while deletes and checkpoints still go through, and
 * the blocks each class and the cleaner may use now.
 */
#include "testfs.h"

#include <errno.h>
#include <string.h>

#define MIB (1ull << 20)

/* 64 MiB in 1 MiB segments: 62 segments of 256 blocks, 7 reserved, 64
 * IMAP blocks and 1 SUT block, 168 blocks to a pseg.  The checkpoint's
 * floor: 65 table blocks, 2 summaries, two segments = 579 blocks. */
static struct lfs_fs *
mount_64m(void)
{
	testfs_make(64 * MIB, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_uint_eq(fs->sb.nsegs, 62);
	ck_assert_uint_eq(fs->sb.reserved_segs, 7);
	ck_assert_uint_eq(fs->n_imap_blocks + fs->n_sut_blocks, 65);
	ck_assert_uint_eq(fs->max_pseg, 168);
	return fs;
}

/* What a class may take now is exactly what it would be admitted: the
 * largest n for which n blocks fit, and n + 1 do not (a figure above the
 * boundary let a large write that trusted it eat into the reserve). */
static void
avail_is_admitted(const struct lfs_fs *fs, enum lfs_space_class cls)
{
	uint64_t n = lfs_space_avail_blocks(fs, cls);
	ck_assert_msg(lfs_space_fits(fs, cls, n * 4096), "class %d: %llu blocks said available do not fit", cls,
		      (unsigned long long)n);
	ck_assert_msg(!lfs_space_fits(fs, cls, (n + 1) * 4096), "class %d: more fits than the %llu said", cls,
		      (unsigned long long)n);
}

static void
floors_are(const struct lfs_fs *fs, uint64_t write, uint64_t writeback, uint64_t del, uint64_t loss)
{
	ck_assert_uint_eq(lfs_space_floor(fs, LFS_SPACE_WRITE), write);
	ck_assert_uint_eq(lfs_space_floor(fs, LFS_SPACE_OVERWRITE), write);
	ck_assert_uint_eq(lfs_space_floor(fs, LFS_SPACE_WRITEBACK), writeback);
	ck_assert_uint_eq(lfs_space_floor(fs, LFS_SPACE_DELETE), del);
	ck_assert_uint_eq(lfs_space_floor(fs, LFS_SPACE_CLEAN_AT_LOSS), loss);
}

/* The floors, top down (lfs(5), "Space and the reserve"): writers stop
 * at the reserve (7 x 256) plus the cache headroom, writeback at the
 * reserve, cleaning at a loss half way into it, deletes half way from
 * there to the checkpoint's floor: so a full filesystem can always
 * delete, and the deletes can always be checkpointed.  A reserve smaller
 * than the checkpoint's floor is raised to it for every class. */
START_TEST(floors_by_class)
{
	struct lfs_fs *fs = mount_64m();
	floors_are(fs, 1792, 1792, 737, 896);
	lfs_set_cache_headroom(fs, 1 * MIB);
	ck_assert_uint_eq(fs->headroom_blocks, 256);
	floors_are(fs, 2048, 1792, 737, 896);
	lfs_set_cache_headroom(fs, 4097);
	floors_are(fs, 1794, 1792, 737, 896);
	lfs_set_cache_headroom(fs, 0);
	/* in memory only: a reserve of one segment */
	fs->sb.reserved_segs = 1;
	floors_are(fs, 579, 579, 579, 579);
	fs->sb.reserved_segs = 7;
	testfs_finish(fs);
}
END_TEST

/* Writers may bring the live data to the log less the writers' floor
 * and the slack cleaning needs to gather a clean segment from dead
 * space spread over all of them (lfs(5): (T/B + 1) segments, and a
 * summary's share of the log, 1/85 of it), net of the leaves and
 * summaries the log writes with it: 15,872 - 1,792 - 14 x 256 - 187 =
 * 10,309 blocks of log at 64 MiB hold 10,152 of content (a leaf per 512,
 * a summary per 84, 16 of margin), 3,584 - 1,280 - 5 x 256 - 43 = 981 at
 * 16 MiB hold 952.
 * df reports it as the size.  A reserve that takes the whole log leaves
 * nothing to write. */
START_TEST(capacity_keeps_slack)
{
	struct lfs_fs *fs = mount_64m();
	ck_assert_uint_eq(lfs_space_capacity(fs), 10152);
	struct statvfs st;
	ck_assert_int_eq(lfs_statfs(fs, &st), 0);
	ck_assert_uint_eq(st.f_blocks, 10152);
	/* the headroom raises the writers' floor, and with it the budget
	 * the slack is figured from: 11 segments of slack, not 14 */
	lfs_set_cache_headroom(fs, 1 * MIB);
	ck_assert_uint_eq(lfs_space_capacity(fs), 10657); /* of 15,872 - 2,048 - 11 x 256 - 187 */
	lfs_set_cache_headroom(fs, 0);
	fs->sb.reserved_segs = 62;
	ck_assert_uint_eq(lfs_space_capacity(fs), 0);
	ck_assert_uint_eq(lfs_space_avail_blocks(fs, LFS_SPACE_WRITE), 0);
	ck_assert(!lfs_space_fits(fs, LFS_SPACE_WRITE, 1));
	fs->sb.reserved_segs = 7;
	testfs_finish(fs);

	testfs_make(16 * MIB, 1 << 20);
	fs = testfs_mount();
	ck_assert_uint_eq(fs->sb.nsegs, 14);
	ck_assert_uint_eq(fs->sb.reserved_segs, 5);
	ck_assert_uint_eq(lfs_space_capacity(fs), 952);
	testfs_finish(fs);
}
END_TEST

/* New content is refused at the capacity before any cleaning is tried
 * (cleaning cannot make room for more live data), to the block: the
 * fresh filesystem holds 3 blocks' worth (root record and two table
 * blocks), so 10,149 more fit and 10,150 do not; buffered bytes count
 * as live.  Overwrites and writeback have no capacity check: they go on
 * to their floors. */
START_TEST(writers_stop_at_capacity)
{
	struct lfs_fs *fs = mount_64m();
	ck_assert_uint_eq(fs->live_total, 256 + 2 * 4096);
	struct lfs_stats st0, st1;
	lfs_get_stats(fs, &st0);
	ck_assert(lfs_space_fits(fs, LFS_SPACE_WRITE, 10149 * 4096ull));
	ck_assert(!lfs_space_fits(fs, LFS_SPACE_WRITE, 10149 * 4096ull + 1));
	ck_assert_int_eq(lfs_space_admit(fs, LFS_SPACE_WRITE, 10149 * 4096ull), 0);
	ck_assert_int_eq(lfs_space_admit(fs, LFS_SPACE_WRITE, 10150 * 4096ull), -ENOSPC);
	ck_assert_int_eq(lfs_space_admit(fs, LFS_SPACE_OVERWRITE, 10150 * 4096ull), 0);
	ck_assert_int_eq(lfs_space_admit(fs, LFS_SPACE_WRITEBACK, 10150 * 4096ull), 0);
	lfs_get_stats(fs, &st1);
	ck_assert_uint_eq(st1.checkpoints, st0.checkpoints);
	ck_assert_uint_eq(st1.cleaner_passes, st0.cleaner_passes);
	ck_assert(!fs->admitting);

	fs->dirty_bytes = 10 * 4096;
	ck_assert(lfs_space_fits(fs, LFS_SPACE_WRITE, 10139 * 4096ull));
	ck_assert(!lfs_space_fits(fs, LFS_SPACE_WRITE, 10140 * 4096ull));
	ck_assert_uint_eq(lfs_space_avail_blocks(fs, LFS_SPACE_WRITE), 10139);
	fs->dirty_bytes = 0;

	/* a failed filesystem admits nothing */
	fs->fatal = -EIO;
	ck_assert_int_eq(lfs_space_admit(fs, LFS_SPACE_DELETE, 0), -EIO);
	fs->fatal = 0;
	testfs_finish(fs);
}
END_TEST

/* What each class and the cleaner may use now is the clean space less
 * the class's floor and the estimate of the dirty state: pages counted
 * in sixteenths of a block, a summary per 84 blocks, 16 of margin.
 * Cleaning keeps the checkpoint's floor (579).  As the dirty state
 * grows, everything shrinks, down to zero with no underflow. */
START_TEST(avail_and_cleaning_room)
{
	struct lfs_fs *fs = mount_64m();
	uint64_t have = lfs_seg_clean_blocks(fs);
	ck_assert_uint_eq(lfs_space_for_cleaning(fs), have - 16 - 579);
	for (int cls = LFS_SPACE_WRITE; cls <= LFS_SPACE_CLEAN_AT_LOSS; cls++)
		avail_is_admitted(fs, cls);
	/* the deeper a class may go, the more it has */
	ck_assert_uint_lt(lfs_space_avail_blocks(fs, LFS_SPACE_WRITEBACK),
			  lfs_space_avail_blocks(fs, LFS_SPACE_CLEAN_AT_LOSS));
	ck_assert_uint_lt(lfs_space_avail_blocks(fs, LFS_SPACE_CLEAN_AT_LOSS),
			  lfs_space_avail_blocks(fs, LFS_SPACE_DELETE));
	/* writers: the capacity binds first */
	ck_assert_uint_eq(lfs_space_avail_blocks(fs, LFS_SPACE_WRITE), 10149);

	/* 100 blocks of dirty state, and a summary for them */
	fs->dirty_units = 100 * LFS_UNITS_PER_BLOCK;
	ck_assert_uint_eq(lfs_space_for_cleaning(fs), have - 117 - 579);
	for (int cls = LFS_SPACE_WRITE; cls <= LFS_SPACE_CLEAN_AT_LOSS; cls++)
		avail_is_admitted(fs, cls);
	/* 1/16 block still takes a whole one */
	fs->dirty_units = 100 * LFS_UNITS_PER_BLOCK + 1;
	ck_assert_uint_eq(lfs_space_for_cleaning(fs), have - 118 - 579);

	fs->dirty_units = (uint64_t)have * LFS_UNITS_PER_BLOCK;
	ck_assert_uint_eq(lfs_space_for_cleaning(fs), 0);
	for (int cls = LFS_SPACE_WRITE; cls <= LFS_SPACE_CLEAN_AT_LOSS; cls++) {
		ck_assert_uint_eq(lfs_space_avail_blocks(fs, cls), 0);
		ck_assert(!lfs_space_fits(fs, cls, 0));
	}
	fs->dirty_units = 0;
	testfs_finish(fs);
}
END_TEST

/* Fill a new file with writes of 256 KiB, plain (class WRITE) or as
 * writeback (lfs_write_cached) until one is refused; the bytes stored. */
static uint64_t
fill_until_enospc(struct lfs_fs *fs, uint64_t ino, bool cached)
{
	static uint8_t buf[256 << 10];
	uint64_t off = 0;
	for (unsigned i = 0; i < 1000; i++) {
		fill_pattern(buf, sizeof(buf), i);
		ssize_t n = cached ? lfs_write_cached(fs, ino, buf, sizeof(buf), (off_t)off, NULL, NULL)
				   : lfs_write(fs, ino, buf, sizeof(buf), (off_t)off, NULL);
		if (n == -ENOSPC)
			return off;
		ck_assert_int_gt(n, 0);
		off += (uint64_t)n;
	}
	ck_abort_msg("no ENOSPC after 250 MiB");
	return 0;
}

static void
drop_file(struct lfs_fs *fs, const char *name, uint64_t ino)
{
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, name), 0);
	ck_assert_int_eq(lfs_release(fs, ino), 0);
	lfs_forget(fs, ino, 1);
}

/* 16 MiB in 256 KiB segments: 62 segments of 64 blocks, 7 reserved (448),
 * capacity 2,402 blocks.  Plain writes stop at the capacity; writeback
 * goes on but stops at the reserve, before the log runs out: the data
 * written stays, a delete and its checkpoint still go through on the
 * full filesystem, and then writes are admitted again. */
START_TEST(full_filesystem_still_deletes)
{
	testfs_make(16 * MIB, 256 << 10);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_uint_eq(lfs_space_floor(fs, LFS_SPACE_WRITEBACK), 448);
	ck_assert_uint_eq(lfs_space_capacity(fs), 2402);
	uint64_t a = testfs_mkfile(fs, LFS_ROOT_INO, "a"), b = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	uint64_t got = fill_until_enospc(fs, a, false);
	/* within a block of the capacity, give or take the leaves and the
	 * records that came with the last write */
	uint64_t used = (fs->live_total + fs->dirty_bytes) / 4096;
	ck_assert_uint_ge(used, 2402 - 1);
	ck_assert_uint_le(used, 2402 + 8);
	/* a new name is new content too */
	struct stat st;
	ck_assert_int_eq(lfs_create(fs, LFS_ROOT_INO, "c", 0644, true, &testfs_me, &st), -ENOSPC);
	struct statvfs sv;
	ck_assert_int_eq(lfs_statfs(fs, &sv), 0);
	ck_assert_uint_eq(sv.f_bavail, 0);

	fill_until_enospc(fs, b, true);
	ck_assert_int_eq(lfs_fsync(fs, b, false), 0);
	/* at the floor, within one refused write: a cached write is stored
	 * whole or refused whole (64 blocks, and its leaf, summaries and the
	 * admission's 16 blocks of slack) */
	ck_assert_uint_ge(lfs_seg_clean_blocks(fs), 448);
	ck_assert_uint_lt(lfs_seg_clean_blocks(fs), 448 + 64 + 24);
	ck_assert_int_eq(lfs_space_admit(fs, LFS_SPACE_WRITE, 4096), -ENOSPC);
	ck_assert_int_eq(lfs_space_admit(fs, LFS_SPACE_DELETE, 0), 0);
	ck_assert_uint_gt(lfs_space_for_cleaning(fs), 0);

	drop_file(fs, "a", a);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_ge(lfs_seg_clean_blocks(fs), (got / 4096) - 64);
	ck_assert_int_eq(lfs_space_admit(fs, LFS_SPACE_WRITE, 1 * MIB), 0);
	uint8_t back[4096], want[4096];
	fill_pattern(want, sizeof(want), 0);
	ck_assert_int_eq(lfs_read(fs, b, back, sizeof(back), 0), (ssize_t)sizeof(back));
	ck_assert(memcmp(back, want, sizeof(back)) == 0);
	drop_file(fs, "b", b);
	testfs_finish(fs);
}
END_TEST

/* fallocate grants what df shows, as ext4 does: on a fresh filesystem
 * of 64 MiB, 2 GiB and 1 TiB (sparse), f_bavail blocks are admitted as
 * one write and one block more is not.  The capacity once left out the
 * leaves and summaries the log writes with the data, so df promised
 * what the clean space could not hold at once: 4,094 blocks (16 MiB)
 * too many at 2 GiB. */
START_TEST(df_is_admitted)
{
	static const uint64_t sizes[] = { 64 * MIB, 2048 * MIB, 1024 * 1024 * MIB };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		testfs_make(sizes[i], 1 << 20);
		struct lfs_fs *fs = testfs_mount();
		struct statvfs sv;
		ck_assert_int_eq(lfs_statfs(fs, &sv), 0);
		ck_assert_uint_gt(sv.f_bavail, sv.f_blocks / 2);
		ck_assert_msg(lfs_space_fits(fs, LFS_SPACE_WRITE, sv.f_bavail * 4096ull),
			      "%llu MiB: df's %llu blocks are refused", (unsigned long long)(sizes[i] >> 20),
			      (unsigned long long)sv.f_bavail);
		ck_assert_msg(!lfs_space_fits(fs, LFS_SPACE_WRITE, (sv.f_bavail + 1) * 4096ull),
			      "%llu MiB: more than df's %llu blocks fit", (unsigned long long)(sizes[i] >> 20),
			      (unsigned long long)sv.f_bavail);
		testfs_finish(fs);
	}
}
END_TEST

CHECK_MAIN("space", "admission", 30, floors_by_class, capacity_keeps_slack, writers_stop_at_capacity,
	   avail_and_cleaning_room, full_filesystem_still_deletes, df_is_admitted)
