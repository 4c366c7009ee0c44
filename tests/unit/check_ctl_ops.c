/*
 * check_ctl_ops.c — ctl_ops.c, the filesystem's side of the control
 * protocol (ctl_proto.h), called directly on a mounted scratch image: the
 * geometry and statistics it reports, the bounds of a usage request, and
 * that liveness, moves and segclean are judged against the filesystem's
 * current state, so that a stale or forged request cannot lose data.
 */
#include "testfs.h"
#include "ctl_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define SEG (16 * 4096)        /* 16-block segments */
#define NBLK 4

/* The record a cleaner would send for data block lblk of ino at addr. */
static struct lfs_ctl_blk
data_rec(struct lfs_fs *fs, uint64_t ino, uint64_t lblk, uint64_t addr)
{
	return (struct lfs_ctl_blk){ .addr = addr, .lblk = lblk, .ino = (uint32_t)ino,
				     .version = lfs_imap_get(fs, ino)->version, .kind = LFS_BK_DATA };
}

/* Overwrite data block lblk of ino with pattern seed and write it out. */
static void
overwrite(struct lfs_fs *fs, uint64_t ino, uint64_t lblk, unsigned seed)
{
	uint8_t b[4096];
	fill_pattern(b, sizeof(b), seed);
	ck_assert_int_eq(lfs_write(fs, ino, b, sizeof(b), (off_t)(lblk * 4096), NULL), 4096);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
}

/* INFO is the geometry a cleaner computes every address from, and STATS
 * what --status shows: the literal block and segment size, segment 0 on
 * a segment boundary; a cleaner report sets the pass count (the cleaner
 * counts them) but adds its victims to the histogram, and a report
 * without victims leaves the histogram alone. */
START_TEST(info_stats_and_report)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &ino);
	uint64_t val[4];
	lfs_ctl_info(fs, val);
	ck_assert_uint_eq(val[0], 4096);
	ck_assert_uint_eq(val[1], 16);
	ck_assert_uint_eq(val[2], fs->sb.nsegs);
	ck_assert_uint_eq(val[3], fs->sb.seg0);
	ck_assert_uint_eq(val[3] % 16, 0);
	ck_assert_uint_le(val[3] + val[1] * val[2], (16u << 20) / 4096);

	lfs_ctl_cleaner_report(fs, 3);
	lfs_ctl_cleaner_report(fs, 7);
	lfs_ctl_cleaner_report(fs, 9);
	struct lfs_ctl_stats st;
	memset(&st, 0xee, sizeof(st));
	lfs_ctl_stats(fs, &st);
	ck_assert_uint_eq(st.cleaner_passes, 9);
	for (unsigned i = 0; i < LFS_CTL_BINS; i++) /* nothing cleaned, whatever a cleaner says */
		ck_assert_uint_eq(st.victim_hist[i], 0);
	ck_assert_uint_eq(st.seg_bytes, 65536);
	ck_assert_uint_eq(st.segs_total, fs->sb.nsegs);
	ck_assert_uint_eq(st.segs_reserved, fs->sb.reserved_segs);
	ck_assert_uint_eq(st.blocks_moved, 0);
	ck_assert_uint_eq(st.segs_cleaned, 0);
	ck_assert_uint_ge(st.live_bytes, NBLK * 4096);
	testfs_finish(fs);
}
END_TEST

/* USAGE answers at most n records and never reads past the last segment,
 * whatever `first` is (a forged one near UINT64_MAX must not wrap into
 * range); what it does not fill is left alone. */
START_TEST(usage_stays_in_range)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &ino);
	uint64_t nsegs = fs->sb.nsegs;
	struct lfs_ctl_seg out[8];
	memset(out, 0xab, sizeof(out));
	ck_assert_uint_eq(lfs_ctl_usage(fs, 0, 0, out), 0);
	ck_assert_uint_eq(lfs_ctl_usage(fs, nsegs, 8, out), 0);
	ck_assert_uint_eq(lfs_ctl_usage(fs, UINT64_MAX - 5, 8, out), 0);
	ck_assert_uint_eq(lfs_ctl_usage(fs, UINT64_MAX, 8, out), 0);
	ck_assert_uint_eq(out[0].state, 0xabababab);
	ck_assert_uint_eq(lfs_ctl_usage(fs, nsegs - 2, 8, out), 2);
	ck_assert_uint_eq(out[2].state, 0xabababab);
	/* the last segments are unused on a fresh image */
	for (int i = 0; i < 2; i++) {
		ck_assert_uint_eq(out[i].state, 0);
		ck_assert_uint_eq(out[i].live_bytes, 0);
	}
	/* the segment holding the file's blocks: written, live bytes counted */
	uint64_t seg = lfs_addr_seg(fs, testfs_addr_of(fs, ino, 0));
	ck_assert_uint_eq(lfs_ctl_usage(fs, seg, 1, out), 1);
	ck_assert_uint_ne(out[0].state, 0);
	ck_assert_uint_ge(out[0].live_bytes, 4096);
	ck_assert_uint_gt(out[0].mtime_ns, 0);
	testfs_finish(fs);
}
END_TEST

/* LIVE marks a record live only if it names the block's current copy:
 * a superseded copy, a wrong version or inode, an address outside the
 * segments, an unknown kind or a table block beyond the table are all
 * dead, and the live flag the client sent is overwritten, not trusted. */
START_TEST(live_judges_current_copies)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &ino);
	uint64_t a0 = testfs_addr_of(fs, ino, 0), a1 = testfs_addr_of(fs, ino, 1);
	overwrite(fs, ino, 0, 9);
	struct lfs_ctl_blk b[9];
	b[0] = data_rec(fs, ino, 1, a1);                 /* current: live */
	b[1] = data_rec(fs, ino, 0, a0);                 /* superseded */
	b[2] = data_rec(fs, ino, 1, a1);
	b[2].version++;                                  /* an older user of the number */
	b[3] = data_rec(fs, ino, 1, a1);
	b[3].ino = LFS_ROOT_INO;                         /* not the owner */
	b[4] = data_rec(fs, ino, 1, 0);                  /* before segment 0 */
	b[5] = data_rec(fs, ino, 1, a1);
	b[5].kind = 7;                                   /* no such kind */
	b[6] = (struct lfs_ctl_blk){ .addr = fs->imap_addr[0], .lblk = 0, .kind = LFS_BK_IMAP };
	b[7] = b[6];
	b[7].lblk = fs->n_imap_blocks;                   /* beyond the inode map */
	b[8] = data_rec(fs, ino, 1, fs->sb.seg0 + fs->sb.nsegs * 16);
	for (int i = 0; i < 9; i++)
		b[i].live = 0x77;
	ck_assert_int_eq(lfs_ctl_live(fs, b, 9), 0);
	static const uint8_t want[9] = { 1, 0, 0, 0, 0, 0, 1, 0, 0 };
	for (int i = 0; i < 9; i++)
		ck_assert_msg(b[i].live == want[i], "record %d: live %u, want %u", i, b[i].live, want[i]);
	testfs_finish(fs);
}
END_TEST

/* MOVE relocates exactly the live blocks it is given (a stale record in
 * the same request is skipped, not an error), the content is unchanged,
 * and the blocks moved and the bytes the cleaner says it read are
 * counted in the statistics. */
START_TEST(move_relocates_only_live_blocks)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &ino);
	uint64_t a0 = testfs_addr_of(fs, ino, 0), a2 = testfs_addr_of(fs, ino, 2);
	overwrite(fs, ino, 0, 9);
	struct lfs_ctl_stats st0, st1;
	lfs_ctl_stats(fs, &st0);
	struct lfs_ctl_blk b[2] = { data_rec(fs, ino, 0, a0), data_rec(fs, ino, 2, a2) };
	uint64_t moved = 99;
	ck_assert_int_eq(lfs_ctl_move(fs, b, 2, 12345, &moved), 0);
	ck_assert_uint_eq(moved, 1);
	ck_assert_uint_ne(testfs_addr_of(fs, ino, 2), a2);
	lfs_ctl_stats(fs, &st1);
	ck_assert_uint_eq(st1.blocks_moved - st0.blocks_moved, 1);
	ck_assert_uint_ge(st1.cleaner_bytes_read - st0.cleaner_bytes_read, 12345);
	/* moving it again from its old place moves nothing */
	ck_assert_int_eq(lfs_ctl_move(fs, &b[1], 1, 0, &moved), 0);
	ck_assert_uint_eq(moved, 0);
	static uint8_t want[NBLK * 4096], got[NBLK * 4096];
	fill_pattern(want, sizeof(want), 1);
	fill_pattern(want, 4096, 9);
	ck_assert_int_eq(lfs_read(fs, ino, got, sizeof(got), 0), (ssize_t)sizeof(got));
	ck_assert(memcmp(got, want, sizeof(got)) == 0);
	testfs_finish(fs);
}
END_TEST

/* A read-only filesystem moves nothing: MOVE answers -EROFS and reports
 * no block moved, even for a live one. */
START_TEST(move_refuses_readonly)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &ino);
	uint64_t a1 = testfs_addr_of(fs, ino, 1);
	struct lfs_ctl_blk b = data_rec(fs, ino, 1, a1);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount_ro();
	uint64_t moved = 99;
	ck_assert_int_eq(lfs_ctl_move(fs, &b, 1, 0, &moved), -EROFS);
	ck_assert_uint_eq(moved, 0);
	ck_assert_uint_eq(testfs_addr_of(fs, ino, 1), a1);
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

/* SEGCLEAN never frees a segment that holds live data, ignores segment
 * numbers out of range, and writes no checkpoint when nothing it names
 * is empty; a segment emptied by a delete is made clean by the one
 * checkpoint it writes and counted in the answer, not as cleaned. */
START_TEST(segclean_frees_only_empty)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &ino);
	uint64_t live_seg = lfs_addr_seg(fs, testfs_addr_of(fs, ino, 0));
	uint64_t seq = fs->ckpt_seq, cleaned = 99;
	uint64_t bad[3] = { live_seg, fs->sb.nsegs, UINT64_MAX };
	ck_assert_int_eq(lfs_ctl_segclean(fs, bad, 3, &cleaned), 0);
	ck_assert_uint_eq(cleaned, 0);
	ck_assert_uint_eq(fs->ckpt_seq, seq);
	ck_assert_uint_ne(fs->segs[live_seg].state, LFS_SEG_CLEAN);

	/* a second file of two segments' blocks, checkpointed, then deleted */
	uint64_t b = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	static uint8_t buf[32 * 4096];
	fill_pattern(buf, sizeof(buf), 2);
	ck_assert_int_eq(lfs_write(fs, b, buf, sizeof(buf), 0, NULL), (ssize_t)sizeof(buf));
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t empty_seg = lfs_addr_seg(fs, testfs_addr_of(fs, b, 20));
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "b"), 0);
	ck_assert_int_eq(lfs_release(fs, b), 0);
	lfs_forget(fs, b, 1);
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	ck_assert_uint_eq(fs->segs[empty_seg].state, LFS_SEG_DIRTY);
	ck_assert_uint_eq(lfs_seg_live(fs, empty_seg), 0);
	seq = fs->ckpt_seq;
	/* named twice, it is freed and counted once; asked again, it is
	 * clean and counts (a checkpoint may free a victim before the
	 * cleaner asks), but takes no checkpoint */
	struct lfs_stats st0, st1;
	lfs_get_stats(fs, &st0);
	uint64_t segs[3] = { empty_seg, live_seg, empty_seg };
	ck_assert_int_eq(lfs_ctl_segclean(fs, segs, 3, &cleaned), 0);
	ck_assert_uint_eq(cleaned, 1);
	ck_assert_uint_eq(fs->ckpt_seq, seq + 1);
	ck_assert_uint_eq(fs->segs[empty_seg].state, LFS_SEG_CLEAN);
	ck_assert_uint_ne(fs->segs[live_seg].state, LFS_SEG_CLEAN);
	ck_assert_int_eq(lfs_ctl_segclean(fs, segs, 3, &cleaned), 0);
	ck_assert_uint_eq(cleaned, 1);
	ck_assert_uint_eq(fs->ckpt_seq, seq + 1);
	/* the statistics count segments cleaning moved blocks out of, once
	 * each: this one a delete emptied */
	lfs_get_stats(fs, &st1);
	ck_assert_uint_eq(st1.segs_cleaned, st0.segs_cleaned);
	testfs_finish(fs);
}
END_TEST


/* The race of a MOVE with writes to the same file.  MOVE is served in
 * batches of 64 blocks with the lock yielded between them, so a writer
 * overwriting blocks of the file being moved gets in between batches.
 * 1,024 blocks are moved (16 batches) while another thread overwrites
 * blocks of the file, each with its own pattern, all the time: the
 * writer must get in during the move (8 times, once per two batches),
 * and afterwards every block holds the last pattern written to it, the
 * blocks the writer did not touch the original one, before and after a
 * remount, with fsck clean: no overwrite lost to a stale move, no moved
 * block lost to an overwrite. */
#define RACE_BLKS 1024
/* A yield lets in only a writer already waiting for the lock; on a
 * loaded machine the writer may not even be running then (4 of 16 once,
 * under make -j2 check beside a build), so the move is made again, on
 * the blocks' new addresses, until the writer got in often enough. */
#define RACE_PASSES 8

struct race {
	struct lfs_fs *fs;
	uint64_t ino;
	atomic_bool moving, stop;
	unsigned last[RACE_BLKS];     /* the seed last written, 0: never */
	unsigned during;              /* writes completed while the move ran */
	unsigned k;                   /* the writer's count, across passes */
};

static void *
race_writer(void *arg)
{
	struct race *r = arg;
	uint8_t b[4096];
	while (!atomic_load(&r->stop)) {
		unsigned k = ++r->k;
		uint64_t lblk = (k * 37u) % RACE_BLKS;
		fill_pattern(b, sizeof(b), 1000 + k);
		ck_assert_int_eq(lfs_write(r->fs, r->ino, b, sizeof(b), (off_t)(lblk * 4096), NULL), 4096);
		r->last[lblk] = 1000 + k;
		if (atomic_load(&r->moving))
			r->during++;
	}
	return NULL;
}

static void
race_check(struct race *r)
{
	static uint8_t orig[RACE_BLKS * 4096];
	fill_pattern(orig, sizeof(orig), 1);
	uint8_t got[4096], want[4096];
	for (uint64_t i = 0; i < RACE_BLKS; i++) {
		ck_assert_int_eq(lfs_read(r->fs, r->ino, got, sizeof(got), (off_t)(i * 4096)), 4096);
		if (r->last[i])
			fill_pattern(want, sizeof(want), r->last[i]);
		else
			memcpy(want, orig + i * 4096, sizeof(want));
		ck_assert_msg(memcmp(got, want, sizeof(got)) == 0, "block %llu: not what was last written",
			      (unsigned long long)i);
	}
}

START_TEST(move_races_writes_to_same_file)
{
	static struct race r;
	memset(&r, 0, sizeof(r));
	r.fs = testfs_with_file(64 << 20, 1 << 20, RACE_BLKS, &r.ino);
	static struct lfs_ctl_blk b[RACE_BLKS];
	for (int pass = 0; pass < RACE_PASSES && r.during < RACE_BLKS / 64 / 2; pass++) {
		for (uint64_t i = 0; i < RACE_BLKS; i++)
			b[i] = data_rec(r.fs, r.ino, i, testfs_addr_of(r.fs, r.ino, i));
		pthread_t t;
		atomic_store(&r.stop, false);
		atomic_store(&r.moving, true);
		ck_assert_int_eq(pthread_create(&t, NULL, race_writer, &r), 0);
		uint64_t moved = 0;
		int err = lfs_ctl_move(r.fs, b, RACE_BLKS, 0, &moved);
		atomic_store(&r.moving, false);
		atomic_store(&r.stop, true);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		ck_assert_int_eq(err, 0);
		ck_assert_uint_gt(moved, 0);
	}
	ck_assert_uint_ge(r.during, RACE_BLKS / 64 / 2);
	race_check(&r);
	testfs_fsck_clean(r.fs);
	ck_assert_int_eq(lfs_unmount(r.fs), 0);
	r.fs = testfs_mount();
	race_check(&r);
	testfs_finish(r.fs);
}
END_TEST

/* Flip one byte of block addr in the image under the mounted fs. */
static void
flip(struct lfs_fs *fs, uint64_t addr)
{
	int fd = open(testfs_path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	uint8_t b;
	off_t at = (off_t)(addr * fs->bsize + 100);
	ck_assert_int_eq(pread(fd, &b, 1, at), 1);
	b ^= 0x40;
	ck_assert_int_eq(pwrite(fd, &b, 1, at), 1);
	close(fd);
}

/* SCRUB_WHO answers for each block a scrubber read bad: used or not, by
 * whom, and whether the daemon's own read fails too.  A used block that
 * reads bad is LIVE and BAD; an intact one is not BAD (the scrubber's
 * read was torn); a superseded copy, an unknown kind or an address out of
 * range is nothing at all; an inode block is not judged LIVE there but
 * SCRUB_INODES names the inodes whose record it holds, and pages on. */
START_TEST(scrub_who_judges_damage)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &ino);
	uint64_t a0 = testfs_addr_of(fs, ino, 0), a1 = testfs_addr_of(fs, ino, 1), a2 = testfs_addr_of(fs, ino, 2);
	overwrite(fs, ino, 0, 9);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	flip(fs, a1);
	struct lfs_ctl_blk b[6] = { data_rec(fs, ino, 1, a1), data_rec(fs, ino, 2, a2), data_rec(fs, ino, 0, a0),
				    data_rec(fs, ino, 1, a1), data_rec(fs, ino, 1, fs->sb.seg0 + fs->sb.nsegs * 16) };
	b[3].kind = 9;
	uint64_t iblk = lfs_imap_get(fs, ino)->daddr;
	b[5] = (struct lfs_ctl_blk){ .addr = iblk, .kind = LFS_BK_INODE };
	struct lfs_ctl_damage d[6];
	memset(d, 0xee, sizeof(d));
	ck_assert_int_eq(lfs_ctl_scrub_who(fs, b, 6, d), 0);
	static const uint8_t want[6] = { LFS_DAMAGE_LIVE | LFS_DAMAGE_BAD, LFS_DAMAGE_LIVE, 0, 0, 0, 0 };
	for (int i = 0; i < 6; i++) {
		ck_assert_msg(d[i].flags == want[i], "record %d: flags %u, want %u", i, d[i].flags, want[i]);
		ck_assert_uint_eq(d[i].addr, b[i].addr);
		ck_assert_uint_eq(d[i].ino, b[i].ino);
		ck_assert_uint_eq(d[i].lblk, b[i].lblk);
		ck_assert_uint_eq(d[i].orig, 0);
	}
	/* the inodes of the inode block, from 0 up and paged by one */
	uint32_t out[4], got;
	uint64_t next = 0, from = 0;
	bool seen = false;
	do {
		lfs_ctl_scrub_inodes(fs, iblk, from, 1, out, &got, &next);
		ck_assert_uint_le(got, 1);
		seen |= got && out[0] == ino;
		ck_assert(next == 0 || next > from);
		from = next;
	} while (next);
	ck_assert(seen);
	lfs_ctl_scrub_inodes(fs, a2, 0, 4, out, &got, &next); /* a data block holds no record */
	ck_assert_uint_eq(got, 0);
	flip(fs, a1); /* as it was, for the final check */
	testfs_finish(fs);
}
END_TEST

/* VIEW_READ of kept checkpoint seq: the runs of file ino's first nb
 * blocks as its snapshot has them at their addresses then, addrs[],
 * read a run at a time, are pattern 1. */
static void
assert_view_runs(struct lfs_fs *fs, uint64_t seq, const uint64_t *addrs, unsigned nb)
{
	static uint8_t want[32 * 4096], got[32 * 4096];
	fill_pattern(want, sizeof(want), 1);
	for (unsigned i = 0, k; i < nb; i += k) {
		for (k = 1; i + k < nb && addrs[i + k] == addrs[i] + k; k++)
			;
		uint64_t len = 0;
		ck_assert_int_eq(lfs_ctl_view_read(fs, seq, addrs[i], k, got, &len), 0);
		ck_assert_uint_eq(len, (uint64_t)k * 4096);
		ck_assert(memcmp(got, want + (size_t)i * 4096, len) == 0);
	}
}

/* VIEW_READ of several blocks: a file's runs as a snapshot has them,
 * before and after the cleaner moved them (each found where it went);
 * count 0 is one block; more than a reply holds, a run past the last
 * address and a checkpoint not kept are refused. */
START_TEST(view_read_runs)
{
	enum { NB = 24 };
	uint64_t a, seq, addrs[NB], len = 0;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NB, &a);
	ck_assert_int_eq(lfs_snapshot_make(fs, "s", &seq), 0);
	for (unsigned i = 0; i < NB; i++)
		addrs[i] = testfs_addr_of(fs, a, i);
	assert_view_runs(fs, seq, addrs, NB);
	static uint8_t got[LFS_CTL_VIEW_READ_BYTES];
	ck_assert_int_eq(lfs_ctl_view_read(fs, seq, addrs[0], 0, got, &len), 0);
	ck_assert_uint_eq(len, 4096);
	ck_assert_int_eq(lfs_ctl_view_read(fs, seq, addrs[0], LFS_CTL_VIEW_READ_BYTES / 4096 + 1, got, &len),
			 -EINVAL);
	ck_assert_int_eq(lfs_ctl_view_read(fs, seq, UINT64_MAX, 2, got, &len), -EINVAL);
	ck_assert_int_eq(lfs_ctl_view_read(fs, seq + 100, addrs[0], 2, got, &len), -ESTALE);

	/* the live file overwritten, every segment of the old one cleaned */
	for (unsigned i = 0; i < NB; i++)
		overwrite(fs, a, i, 7);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t moved = 0;
	lfs_lock(fs);
	for (unsigned i = 0; i < NB; i++) {
		uint64_t seg = lfs_addr_seg(fs, addrs[i]);
		if ((i == 0 || seg != lfs_addr_seg(fs, addrs[i - 1])) && fs->segs[seg].state == LFS_SEG_DIRTY)
			ck_assert_int_eq(lfs_clean_segment(fs, seg, &moved), 0);
	}
	pthread_mutex_unlock(&fs->lock);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_gt(moved, 0);
	ck_assert_uint_ne(lfs_held_translate(&fs->held, addrs[0], seq), addrs[0]);
	assert_view_runs(fs, seq, addrs, NB);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("ctl_ops", "operations", 30, info_stats_and_report, usage_stays_in_range,
	   live_judges_current_copies, move_relocates_only_live_blocks, move_refuses_readonly,
	   segclean_frees_only_empty, move_races_writes_to_same_file, scrub_who_judges_damage, view_read_runs)
