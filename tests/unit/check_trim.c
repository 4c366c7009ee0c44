/*
 * check_trim.c — mirrors lfs/write/trim.c, clean segments given back to the
 * storage (FITRIM, -o discard): what was freed goes back as holes in the
 * image, and never a segment the newest durable checkpoint, a snapshot
 * or the log written since may still read; the segment writer never
 * writes where a discard run may still punch.
 */
#include "testfs.h"

#include <errno.h>
#include <sys/stat.h>

#define IMG (64ull << 20)
#define SEG (1u << 20)
#define BS 4096u
#define MIB (1ull << 20)

static uint64_t
allocated(void)
{
	struct stat st;
	ck_assert_int_eq(stat(testfs_path, &st), 0);
	return (uint64_t)st.st_blocks * 512;
}

/* A file `name` of `mib` MiB of pattern `seed`; its number. */
static uint64_t
put_file(struct lfs_fs *fs, const char *name, unsigned mib, unsigned seed)
{
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, name);
	uint8_t *buf = malloc(MIB);
	ck_assert_ptr_nonnull(buf);
	for (unsigned i = 0; i < mib; i++) {
		fill_pattern(buf, MIB, seed * 1000 + i);
		ck_assert_int_eq(lfs_write(fs, ino, buf, MIB, (off_t)(i * MIB), NULL), (ssize_t)MIB);
	}
	free(buf);
	ck_assert_int_eq(lfs_release(fs, ino), 0);
	return ino;
}

static void
assert_file(struct lfs_fs *fs, const char *name, unsigned mib, unsigned seed)
{
	struct stat st;
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, name, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)mib * MIB);
	uint8_t *want = malloc(MIB), *got = malloc(MIB);
	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	for (unsigned i = 0; i < mib; i++) {
		fill_pattern(want, MIB, seed * 1000 + i);
		ck_assert_int_eq(lfs_read(fs, st.st_ino, got, MIB, (off_t)(i * MIB)), (ssize_t)MIB);
		ck_assert_mem_eq(got, want, MIB);
	}
	free(want);
	free(got);
	lfs_forget(fs, st.st_ino, 1);
}

/* Whether the first block of file block lblk's segment reads as zeros
 * on the image (discarded). */
static bool
seg_zeroed(struct lfs_fs *fs, uint64_t addr)
{
	uint8_t b[BS], zero[BS] = { 0 };
	uint64_t first = lfs_seg_first_block(fs, lfs_addr_seg(fs, addr));
	ck_assert_int_eq(lfs_bdev_read(&fs->dev, first, 1, b), 0);
	return memcmp(b, zero, BS) == 0;
}

/* fstrim after a delete: the deleted file's segments (freed by the
 * checkpoint FITRIM takes first) and those never written go back; the
 * image's allocation falls by at least what was deleted; the file kept
 * reads back; a second fstrim finds nothing new, as ext4's. */
START_TEST(fitrim_gives_back_freed)
{
	testfs_make(IMG, SEG);
	struct lfs_fs *fs = testfs_mount();
	put_file(fs, "keep", 8, 1);
	uint64_t del = put_file(fs, "del", 24, 2);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t addr = testfs_addr_of(fs, del, 2560); /* 10 MiB in: a segment of its own */
	uint64_t before = allocated();
	ck_assert_uint_ge(before, 32 * MIB);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "del"), 0);
	lfs_forget(fs, del, 1);
	uint64_t seq = fs->ckpt_seq, t = 0;
	ck_assert_int_eq(lfs_trim(fs, 0, UINT64_MAX, 0, &t), 0);
	ck_assert_uint_gt(fs->ckpt_seq, seq); /* what the delete freed was checkpointed first */
	ck_assert_uint_ge(t, 24 * MIB);
	ck_assert_uint_eq(t % SEG, 0);
	ck_assert_uint_le(allocated() + 22 * MIB, before);
	ck_assert(seg_zeroed(fs, addr));
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	ck_assert_uint_eq(st.trim_bytes, t);
	ck_assert_uint_eq(st.trim_segs, t / SEG);
	uint64_t again = 1;
	ck_assert_int_eq(lfs_trim(fs, 0, UINT64_MAX, 0, &again), 0);
	ck_assert_uint_eq(again, 0);
	assert_file(fs, "keep", 8, 1);
	testfs_fsck_clean(fs);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	assert_file(fs, "keep", 8, 1);
	testfs_finish(fs);
}
END_TEST

/* A snapshot holds the deleted file's blocks: FITRIM leaves their
 * segments alone, and the snapshot reads the file whole, before and
 * after a remount. */
START_TEST(fitrim_spares_snapshot)
{
	testfs_make(IMG, SEG);
	struct lfs_fs *fs = testfs_mount();
	uint64_t del = put_file(fs, "del", 16, 3);
	uint64_t s1, t;
	ck_assert_int_eq(lfs_snapshot_make(fs, "s1", &s1), 0);
	uint64_t addr = testfs_addr_of(fs, del, 2560); /* 10 MiB in: a segment of its own */
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "del"), 0);
	lfs_forget(fs, del, 1);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(lfs_trim(fs, 0, UINT64_MAX, 0, &t), 0);
	ck_assert_uint_gt(t, 0); /* it ran: the segments never written went */
	ck_assert(!seg_zeroed(fs, addr));
	struct lfs_fs *v;
	ck_assert_int_eq(lfs_view_open(fs, "s1", false, &v), 0);
	assert_file(v, "del", 16, 3);
	lfs_abandon(v);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_view_open(fs, "s1", false, &v), 0);
	assert_file(v, "del", 16, 3);
	lfs_abandon(v);
	/* once the snapshot goes, its segments do */
	ck_assert_int_eq(lfs_snapshot_delete(fs, s1), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(lfs_trim(fs, 0, UINT64_MAX, 0, &t), 0);
	ck_assert_uint_ge(t, 15 * MIB);
	ck_assert(seg_zeroed(fs, addr));
	testfs_finish(fs);
}
END_TEST

/* The log written since the last checkpoint is not clean: a FITRIM (no
 * checkpoint, as nothing was freed) leaves it, and a crash right after
 * recovers the fsynced file by roll-forward. */
START_TEST(fitrim_spares_log_since_checkpoint)
{
	testfs_make(IMG, SEG);
	struct lfs_fs *fs = testfs_mount();
	put_file(fs, "old", 4, 4);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t ino = put_file(fs, "new", 6, 5);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	uint64_t seq = fs->ckpt_seq, t;
	ck_assert_uint_eq(lfs_seg_freeable(fs), 0);
	ck_assert_int_eq(lfs_trim(fs, 0, UINT64_MAX, 0, &t), 0);
	ck_assert_uint_eq(fs->ckpt_seq, seq);
	ck_assert_uint_gt(t, 0);
	ck_assert(!seg_zeroed(fs, testfs_addr_of(fs, ino, 0)));
	lfs_abandon(fs); /* the crash */
	fs = testfs_mount();
	assert_file(fs, "old", 4, 4);
	assert_file(fs, "new", 6, 5);
	testfs_finish(fs);
}
END_TEST

/* -o discard: a segment goes back once the checkpoint that frees it has
 * committed (lfs_tick's call), not before; and at unmount, those the
 * final checkpoint freed. */
START_TEST(discard_option)
{
	testfs_make(IMG, SEG);
	struct lfs_opts o = testfs_opts();
	o.discard = true;
	struct lfs_fs *fs = testfs_mount_opts(&o);
	put_file(fs, "keep", 4, 6);
	uint64_t del = put_file(fs, "del", 12, 7);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t addr = testfs_addr_of(fs, del, 2560); /* 10 MiB in: a segment of its own */
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "del"), 0);
	lfs_forget(fs, del, 1);
	ck_assert_int_eq(lfs_trim_freed(fs), 0);
	ck_assert(!seg_zeroed(fs, addr)); /* freeable, not yet clean */
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(lfs_trim_freed(fs), 0);
	ck_assert(seg_zeroed(fs, addr));
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	ck_assert_uint_ge(st.trim_bytes, 11 * MIB);
	ck_assert_uint_eq(fs->ntrim, 0);
	/* freed by the final checkpoint: given back at unmount */
	uint64_t del2 = put_file(fs, "del2", 12, 8);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t addr2 = testfs_addr_of(fs, del2, 2560);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "del2"), 0);
	lfs_forget(fs, del2, 1);
	uint64_t before = allocated();
	ck_assert_int_eq(lfs_unmount(fs), 0);
	ck_assert_uint_le(allocated() + 10 * MIB, before);
	fs = testfs_mount();
	ck_assert(seg_zeroed(fs, addr2));
	assert_file(fs, "keep", 4, 6);
	testfs_finish(fs);
}
END_TEST

/* What FITRIM refuses: a read-only mount, a range outside the image or
 * shorter than a block, a store that cannot discard (nothing counted). */
START_TEST(fitrim_refusals)
{
	testfs_make(IMG, SEG);
	struct lfs_fs *fs = testfs_mount();
	uint64_t t = 1;
	ck_assert_int_eq(lfs_trim(fs, IMG, MIB, 0, &t), -EINVAL);
	ck_assert_uint_eq(t, 0);
	ck_assert_int_eq(lfs_trim(fs, 0, BS - 1, 0, &t), -EINVAL);
	ck_assert_int_eq(lfs_trim(fs, 0, UINT64_MAX, IMG, &t), -EINVAL);
	ck_assert_int_eq(lfs_fault_arm("discard:1:EOPNOTSUPP"), 0);
	ck_assert_int_eq(lfs_trim(fs, 0, UINT64_MAX, 0, &t), -EOPNOTSUPP);
	ck_assert_uint_eq(t, 0);
	lfs_fault_disarm();
	/* a range: only the whole segments inside it */
	uint64_t base = fs->sb.seg0 * BS;
	ck_assert_int_eq(lfs_trim(fs, base + 20 * SEG + SEG / 2, 3 * SEG, 0, &t), 0);
	ck_assert_uint_eq(t, 2 * SEG);
	/* minlen: runs shorter are left */
	ck_assert_int_eq(lfs_trim(fs, base + 30 * SEG, 3 * SEG, 4 * SEG, &t), 0);
	ck_assert_uint_eq(t, 0);
	ck_assert_int_eq(lfs_trim(fs, base + 30 * SEG, 4 * SEG, 4 * SEG, &t), 0);
	ck_assert_uint_eq(t, 4 * SEG);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount_ro();
	ck_assert_int_eq(lfs_trim(fs, 0, UINT64_MAX, 0, &t), -EROFS);
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

/* The segment writer and a discard run: a segment the run holds is
 * chosen only when no other clean one is left, and taking it marks it
 * taken (the run then leaves it alone); the run's marks do not outlive
 * it. */
START_TEST(writer_avoids_pending)
{
	testfs_make(IMG, SEG);
	struct lfs_fs *fs = testfs_mount();
	lfs_lock(fs);
	uint64_t spare = UINT64_MAX;
	for (uint64_t s = 0; s < fs->sb.nsegs; s++) {
		if (fs->segs[s].state != LFS_SEG_CLEAN)
			continue;
		if (spare == UINT64_MAX)
			spare = s;
		else
			fs->segs[s].trim = LFS_TRIM_PENDING;
	}
	ck_assert_uint_ne(spare, UINT64_MAX);
	uint64_t got, got2;
	ck_assert_int_eq(lfs_seg_pick_next(fs, &got), 0);
	ck_assert_uint_eq(got, spare);
	ck_assert_int_eq(lfs_seg_pick_next(fs, &got2), 0);
	ck_assert_uint_eq(fs->segs[got2].state, LFS_SEG_ACTIVE);
	ck_assert_uint_eq(fs->segs[got2].trim, LFS_TRIM_TAKEN);
	/* give both back as they were */
	lfs_seg_set_state(fs, got, LFS_SEG_CLEAN);
	lfs_seg_set_state(fs, got2, LFS_SEG_CLEAN);
	for (uint64_t s = 0; s < fs->sb.nsegs; s++)
		fs->segs[s].trim = LFS_TRIM_NONE;
	pthread_mutex_unlock(&fs->lock);
	uint64_t t;
	ck_assert_int_eq(lfs_trim(fs, 0, UINT64_MAX, 0, &t), 0);
	for (uint64_t s = 0; s < fs->sb.nsegs; s++)
		ck_assert_uint_eq(fs->segs[s].trim, LFS_TRIM_NONE);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("trim", "trim", 60, fitrim_gives_back_freed, fitrim_spares_snapshot, fitrim_spares_log_since_checkpoint,
	   discard_option, fitrim_refusals, writer_avoids_pending)
