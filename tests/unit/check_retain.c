/*
 * check_retain.c — snapshots through the filesystem (retain.c,
 * snapshot.c, the view of ckpt.c and mount.c, the cleaner's copies in
 * clean.c): a snapshot reads the tree as it was while the live tree
 * changes, is cleaned under, is remounted; what it alone holds stays
 * counted and comes back when it is deleted; the protection period keeps
 * plain checkpoints; fsck.lfs checks the held blocks and every kept tree.
 */
#include "gate.h"
#include "testfs.h"

#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>

#define SEG (256u << 10)
#define NB 64                       /* blocks of file "a" */

static uint8_t old_a[NB * 4096], buf[NB * 4096];

/* File name's bytes on fs (a view or not) equal want[0..len). */
static void
assert_file(struct lfs_fs *fs, const char *name, const uint8_t *want, size_t len)
{
	struct stat st;
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, name, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, len);
	ck_assert_int_eq(lfs_read(fs, st.st_ino, buf, sizeof(buf), 0), (ssize_t)len);
	ck_assert(memcmp(buf, want, len) == 0);
}

static uint64_t
live_total(struct lfs_fs *fs)
{
	return fs->live_total;
}

/* "a" (pattern 1) and "b" written, a snapshot "s1" taken; then a
 * overwritten, b unlinked, c made: the view of s1 reads a's old bytes
 * and b, not c, and refuses changes; the live tree reads the new. */
START_TEST(snapshot_reads_old_tree)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, SEG, NB, &a);
	fill_pattern(old_a, sizeof(old_a), 1);
	uint64_t b = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	ck_assert_int_eq(lfs_write(fs, b, "bee", 3, 0, NULL), 3);
	uint64_t s1;
	ck_assert_int_eq(lfs_snapshot_make(fs, "s1", &s1), 0);
	ck_assert_uint_eq(s1, fs->ckpt_seq);
	ck_assert_int_eq(lfs_snapshot_make(fs, "s1", &s1), -EEXIST);
	ck_assert_int_eq(lfs_snapshot_make(fs, "a/b", &s1), -EINVAL);

	static uint8_t new_a[NB * 4096];
	fill_pattern(new_a, sizeof(new_a), 2);
	ck_assert_int_eq(lfs_write(fs, a, new_a, sizeof(new_a), 0, NULL), (ssize_t)sizeof(new_a));
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "b"), 0);
	testfs_mkfile(fs, LFS_ROOT_INO, "c");
	ck_assert_int_eq(lfs_checkpoint(fs), 0);

	struct lfs_fs *v;
	ck_assert_int_eq(lfs_view_open(fs, "nope", false, &v), -ENOENT);
	ck_assert_int_eq(lfs_view_open(fs, "s1", false, &v), 0);
	ck_assert_uint_eq(lfs_view_seq(v), s1);
	assert_file(v, "a", old_a, sizeof(old_a));
	assert_file(v, "b", (const uint8_t *)"bee", 3);
	struct stat st;
	ck_assert_int_eq(lfs_lookup(v, LFS_ROOT_INO, "c", &st), -ENOENT);
	ck_assert_int_eq(lfs_create(v, LFS_ROOT_INO, "d", 0644, true, &testfs_me, &st), -EROFS);
	ck_assert_int_eq(lfs_lookup(v, LFS_ROOT_INO, "a", &st), 0);
	ck_assert_int_eq(lfs_write(v, st.st_ino, "x", 1, 0, NULL), -EROFS);
	lfs_abandon(v);

	assert_file(fs, "a", new_a, sizeof(new_a));
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "b", &st), -ENOENT);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* What the snapshot alone holds stays counted (the listing says how
 * much), and deleting it gives that back at its checkpoint. */
START_TEST(delete_frees_what_it_held)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, SEG, NB, &a);
	uint64_t s1;
	ck_assert_int_eq(lfs_snapshot_make(fs, NULL, &s1), 0);
	uint64_t before = live_total(fs);
	static uint8_t new_a[NB * 4096];
	fill_pattern(new_a, sizeof(new_a), 3);
	ck_assert_int_eq(lfs_write(fs, a, new_a, sizeof(new_a), 0, NULL), (ssize_t)sizeof(new_a));
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	/* both versions of a's blocks are counted now */
	ck_assert_uint_ge(live_total(fs), before + NB * 4096ull);

	struct lfs_ckpt_info *ci;
	size_t n;
	uint64_t held;
	ck_assert_int_eq(lfs_snapshot_list(fs, &ci, &n, &held), 0);
	ck_assert_uint_eq(n, 2); /* the snapshot, then the newest checkpoint */
	ck_assert_uint_eq(ci[0].seq, s1);
	ck_assert_uint_eq(ci[0].flags, LFS_CKPT_INFO_SNAPSHOT | LFS_CKPT_INFO_KEPT);
	ck_assert_str_eq(ci[0].name, "");
	ck_assert_uint_eq(ci[1].flags, LFS_CKPT_INFO_CURRENT);
	/* a's old blocks, its old leaf and record at least */
	ck_assert_uint_ge(ci[0].own_bytes, NB * 4096ull);
	ck_assert_uint_eq(held, ci[0].own_bytes);
	uint64_t own = ci[0].own_bytes;
	free(ci);
	testfs_fsck_clean(fs);

	uint64_t with = live_total(fs);
	ck_assert_int_eq(lfs_snapshot_delete(fs, s1), 0);
	ck_assert_int_eq(lfs_snapshot_delete(fs, s1), -ENOENT);
	ck_assert_uint_eq(live_total(fs), with - own);
	ck_assert_uint_eq(fs->held.count, 0);
	ck_assert_int_eq(lfs_snapshot_list(fs, &ci, &n, &held), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(held, 0);
	free(ci);
	testfs_finish(fs);
}
END_TEST

/* Cleaning every segment that holds a's old blocks moves them (as HELD
 * copies) without changing what the snapshot reads, and empties those
 * segments; after a remount the snapshot is still listed and read. */
START_TEST(cleaned_under_and_remounted)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, SEG, NB, &a);
	fill_pattern(old_a, sizeof(old_a), 1);
	uint64_t old0 = testfs_addr_of(fs, a, 0), s1;
	ck_assert_int_eq(lfs_snapshot_make(fs, "keep", &s1), 0);
	static uint8_t new_a[NB * 4096];
	fill_pattern(new_a, sizeof(new_a), 4);
	ck_assert_int_eq(lfs_write(fs, a, new_a, sizeof(new_a), 0, NULL), (ssize_t)sizeof(new_a));
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t seg = lfs_addr_seg(fs, old0);
	ck_assert_uint_gt(fs->segs[seg].live_bytes, 0); /* held */

	lfs_lock(fs);
	uint64_t moved = 0;
	ck_assert_int_eq(lfs_clean_segment(fs, seg, &moved), 0);
	pthread_mutex_unlock(&fs->lock);
	ck_assert_uint_gt(moved, 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_eq(fs->segs[seg].live_bytes, 0);
	ck_assert_uint_ne(lfs_held_translate(&fs->held, old0, s1), old0);

	struct lfs_fs *v;
	ck_assert_int_eq(lfs_view_open(fs, "keep", false, &v), 0);
	assert_file(v, "a", old_a, sizeof(old_a));
	lfs_abandon(v);
	testfs_fsck_clean(fs);

	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_view_open(fs, "keep", false, &v), 0);
	assert_file(v, "a", old_a, sizeof(old_a));
	lfs_abandon(v);
	assert_file(fs, "a", new_a, sizeof(new_a));
	testfs_finish(fs);
}
END_TEST

/* A snapshot made and then let go (a plain checkpoint again) goes at the
 * next checkpoint when no protection period covers it, and stays while
 * one does; the period is kept across a remount. */
START_TEST(protection_period_keeps_plain_ones)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, SEG, 4, &a);
	ck_assert_int_eq(lfs_set_protection(fs, 3600), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t c1 = fs->ckpt_seq;
	ck_assert_int_eq(lfs_write(fs, a, "x", 1, 0, NULL), 1);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_ptr_nonnull(lfs_hist_get(&fs->hist, c1));
	ck_assert_int_eq(lfs_snapshot_keep(fs, c1, true, "kept"), 0);
	ck_assert_int_eq(lfs_snapshot_keep(fs, 1, true, NULL), -ENOENT);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_uint_eq(lfs_snapshot_protection(fs), 3600);
	ck_assert_ptr_nonnull(lfs_hist_get(&fs->hist, c1));
	uint64_t seq;
	ck_assert_int_eq(lfs_snapshot_find(fs, "kept", &seq), 0);
	ck_assert_uint_eq(seq, c1);

	ck_assert_int_eq(lfs_set_protection(fs, 0), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_ptr_nonnull(lfs_hist_get(&fs->hist, c1)); /* a snapshot */
	ck_assert_int_eq(lfs_snapshot_keep(fs, c1, false, NULL), 0);
	ck_assert_ptr_null(lfs_hist_get(&fs->hist, c1));
	ck_assert_uint_eq(fs->hist.count, 0);
	testfs_finish(fs);
}
END_TEST

/* Near the capacity, an overwrite of a block a snapshot holds takes new
 * capacity, so it is refused with ENOSPC once the filesystem is full.
 * When the read that decides whether the block is held fails, the
 * write says EIO, not ENOSPC; the filesystem is unharmed. */
START_TEST(held_overwrite_read_error_is_eio)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(32ull << 20, SEG, NB, &a);
	uint64_t s1;
	ck_assert_int_eq(lfs_snapshot_make(fs, "s1", &s1), 0);
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "fill");
	static uint8_t chunk[1 << 20];
	fill_pattern(chunk, sizeof(chunk), 3);
	ssize_t r;
	uint64_t off = 0;
	while ((r = lfs_write(fs, f, chunk, sizeof(chunk), off, NULL)) > 0)
		off += (uint64_t)r;
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);

	/* cold caches: the block map and summaries are read from the image */
	fs = testfs_mount();
	struct stat st;
	ck_assert_int_eq(lfs_getattr(fs, a, &st), 0);
	ck_assert_int_eq(lfs_fault_arm("pread:1:EIO"), 0);
	r = lfs_write(fs, a, "new!", 4, 0, NULL);
	uint64_t preads = lfs_fault_count(LFS_FAULT_PREAD);
	lfs_fault_disarm();
	ck_assert_uint_ge(preads, 1);
	ck_assert_int_eq(r, -EIO);
	ck_assert_int_eq(lfs_write(fs, a, "new!", 4, 0, NULL), -ENOSPC);

	fill_pattern(old_a, sizeof(old_a), 1);
	assert_file(fs, "a", old_a, sizeof(old_a));
	struct lfs_fs *v;
	ck_assert_int_eq(lfs_view_open(fs, "s1", false, &v), 0);
	assert_file(v, "a", old_a, sizeof(old_a));
	lfs_abandon(v);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* The plain checkpoints of the period, and whether they are all newer
 * than every one of was[] that is gone: kept ones give way oldest first. */
static size_t
kept_plain(struct lfs_fs *fs, uint64_t *seqs, size_t cap)
{
	struct lfs_ckpt_info *ci;
	size_t n, k = 0;
	uint64_t held;
	ck_assert_int_eq(lfs_snapshot_list(fs, &ci, &n, &held), 0);
	for (size_t i = 0; i < n; i++)
		if ((ci[i].flags & LFS_CKPT_INFO_KEPT) && !(ci[i].flags & LFS_CKPT_INFO_SNAPSHOT) && k < cap)
			seqs[k++] = ci[i].seq;
	free(ci);
	return k;
}

/* With the protection period at an hour, a file of a third of the
 * filesystem overwritten in place, a checkpoint every MiB, until twice
 * the capacity is written: the old copies the kept checkpoints hold fill
 * the filesystem, and then the oldest plain ones give way (one log line
 * says so), so that no write is refused; the snapshot taken first keeps
 * everything it reads.  A filesystem whose live data reaches the
 * capacity still refuses a write. */
START_TEST(kept_checkpoints_give_way_when_full)
{
	char logp[] = "/tmp/lfs-unit-log-XXXXXX";
	int lfd = mkstemp(logp);
	ck_assert_int_ge(lfd, 0);
	close(lfd);
	ck_assert_int_eq(lfs_log_to_file(logp), 0);
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(32ull << 20, SEG, NB, &a);
	fill_pattern(old_a, sizeof(old_a), 1);
	uint64_t s1;
	ck_assert_int_eq(lfs_snapshot_make(fs, "s1", &s1), 0);
	ck_assert_int_eq(lfs_set_protection(fs, 3600), 0);
	struct statvfs sv;
	ck_assert_int_eq(lfs_statfs(fs, &sv), 0);
	uint64_t cap = (uint64_t)sv.f_blocks * sv.f_frsize, len = cap / 3 & ~(uint64_t)(SEG - 1);
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	static uint8_t chunk[1 << 20];
	uint64_t written = 0, before[4096];
	size_t nbefore = 0;
	for (unsigned pass = 0; written < 2 * cap + len; pass++) {
		fill_pattern(chunk, sizeof(chunk), 10 + pass);
		for (uint64_t off = 0; off < len; off += sizeof(chunk), written += sizeof(chunk)) {
			size_t n = len - off < sizeof(chunk) ? (size_t)(len - off) : sizeof(chunk);
			ck_assert_int_eq(lfs_write(fs, f, chunk, n, off, NULL), (ssize_t)n);
			ck_assert_int_eq(lfs_checkpoint(fs), 0);
		}
		if (pass == 0)
			nbefore = kept_plain(fs, before, 4096);
	}
	/* some of the first pass's checkpoints went, and only the oldest */
	uint64_t after[4096];
	size_t nafter = kept_plain(fs, after, 4096);
	ck_assert_uint_ge(nbefore, 8);
	ck_assert_uint_ge(nafter, 1);
	ck_assert_uint_lt(nafter, nbefore + (2 * cap) / sizeof(chunk));
	ck_assert_uint_gt(after[0], before[0]);
	for (size_t i = 0; i < nbefore; i++) {
		bool kept = lfs_hist_get(&fs->hist, before[i]) != NULL;
		if (kept)
			ck_assert_ptr_nonnull(lfs_hist_get(&fs->hist, before[nbefore - 1]));
		if (!kept && i)
			ck_assert_ptr_null(lfs_hist_get(&fs->hist, before[i - 1]));
	}
	ck_assert_ptr_nonnull(lfs_hist_get(&fs->hist, s1));
	struct lfs_fs *v;
	ck_assert_int_eq(lfs_view_open(fs, "s1", false, &v), 0);
	assert_file(v, "a", old_a, sizeof(old_a));
	struct stat st;
	ck_assert_int_eq(lfs_lookup(v, LFS_ROOT_INO, "f", &st), -ENOENT);
	lfs_abandon(v);
	testfs_fsck_clean(fs);

	/* the log says how many gave way and how old the newest was */
	char line[4096];
	FILE *lf = fopen(logp, "r");
	ck_assert_ptr_nonnull(lf);
	bool said = false;
	while (fgets(line, sizeof(line), lf))
		said |= strstr(line, "gave way to writers, oldest first, the newest of them") != NULL;
	fclose(lf);
	ck_assert(said);

	/* live data to the capacity: new data is refused */
	uint64_t g = testfs_mkfile(fs, LFS_ROOT_INO, "g"), off = 0;
	ssize_t r;
	while ((r = lfs_write(fs, g, chunk, sizeof(chunk), off, NULL)) > 0)
		off += (uint64_t)r;
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert_uint_ge(off + len + sizeof(old_a) + (4u << 20), cap);
	ck_assert_ptr_nonnull(lfs_hist_get(&fs->hist, s1));
	testfs_finish(fs);
	unlink(logp);
}
END_TEST

/* Fills files[first], files[first + step] ... of fs in turns of 64 KiB
 * until a write comes back short. */
static void
fill_in_turns(struct lfs_fs *fs, uint64_t *files, uint64_t *sizes, int first, int step)
{
	static uint8_t chunk[65536];
	for (bool full = false; !full;)
		for (int i = first; i < 8 && !full; i += step) {
			fill_pattern(chunk, sizeof(chunk), (unsigned)(sizes[i] >> 16) + (unsigned)i);
			ssize_t n = lfs_write(fs, files[i], chunk, sizeof(chunk), (off_t)sizes[i], NULL);
			ck_assert(n >= 0 || n == -ENOSPC);
			full = n < (ssize_t)sizeof(chunk);
			sizes[i] += n > 0 ? (uint64_t)n : 0;
		}
}

/* A full filesystem whose kept checkpoints hold little but old copies
 * of tables (eight files filled, half of them deleted and the space
 * written again, so that the old checkpoints gave way): a write past the
 * capacity is refused after a few checkpoints.  Giving way writes the
 * checkpoint that commits it, which is kept in its turn and holds as
 * much again, so rounds that count it as room made would checkpoint
 * 64 times per refused write (crashsim -F -P found it). */
START_TEST(refused_write_does_not_checkpoint_in_a_loop)
{
	testfs_make(12ull << 20, 64u << 10);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_int_eq(lfs_set_protection(fs, 3600), 0);
	uint64_t files[8], sizes[8] = {0};
	char name[16];
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		files[i] = testfs_mkfile(fs, LFS_ROOT_INO, name);
	}
	fill_in_turns(fs, files, sizes, 0, 1);
	for (int i = 1; i < 8; i += 2) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, name), 0);
		ck_assert_int_eq(lfs_release(fs, files[i]), 0);
		lfs_forget(fs, files[i], 1);
		snprintf(name, sizeof(name), "g%d", i);
		files[i] = testfs_mkfile(fs, LFS_ROOT_INO, name);
		sizes[i] = 0;
	}
	fill_in_turns(fs, files, sizes, 1, 2);
	ck_assert_uint_gt(fs->given_way, 0);
	static uint8_t small[8192];
	unsigned most = 0;
	for (int k = 0; k < 16; k++) {
		uint64_t seq = fs->ckpt_seq;
		ssize_t n = lfs_write(fs, files[k % 8], small, sizeof(small), (off_t)sizes[k % 8], NULL);
		ck_assert(n == -ENOSPC || n >= 0);
		sizes[k % 8] += n > 0 ? (uint64_t)n : 0;
		if (fs->ckpt_seq - seq > most)
			most = (unsigned)(fs->ckpt_seq - seq);
	}
	/* a round writes at most two: the give-way's and its own */
	ck_assert_uint_le(most, 4);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* The kept checkpoints listed while a checkpoint waits for the disk with
 * the lock released, its record already in the history: only those
 * committed, ascending (lfs-ckpt -l pages through them by number and
 * refuses a list that goes back).  Checked at every wait of a syncfs;
 * one of them must be the job's. */
START_TEST(list_while_a_checkpoint_waits)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(64ull << 20, SEG, 4, &a);
	ck_assert_int_eq(lfs_set_protection(fs, 3600), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(lfs_write(fs, a, "x", 1, 0, NULL), 1);
	gate_reset(LFS_FAULT_SYNC);
	struct req r;
	req_start(&r, fs, OP_SYNCFS, 0, true);
	bool saw_job = false;
	for (int n = 1;; n++) {
		while (gate_count() < n && !atomic_load(&r.done))
			sched_yield();
		if (gate_count() < n)
			break;
		lfs_lock(fs);
		uint64_t committed = fs->ckpt_seq;
		saw_job |= fs->ckpt_job.active && lfs_hist_get(&fs->hist, fs->ckpt_job.h.ckpt_seq);
		pthread_mutex_unlock(&fs->lock);
		struct lfs_ckpt_info *ci;
		size_t k;
		uint64_t held;
		ck_assert_int_eq(lfs_snapshot_list(fs, &ci, &k, &held), 0);
		ck_assert_uint_ge(k, 1);
		for (size_t i = 0; i < k; i++) {
			ck_assert_uint_le(ci[i].seq, committed);
			ck_assert(i == 0 || ci[i].seq > ci[i - 1].seq);
		}
		ck_assert_uint_eq(ci[k - 1].seq, committed);
		free(ci);
		gate_open_one();
	}
	ck_assert_int_eq(req_join(&r), 0);
	gate_remove();
	ck_assert(saw_job);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("retain", "retain", 120, snapshot_reads_old_tree, delete_frees_what_it_held, cleaned_under_and_remounted,
	   protection_period_keeps_plain_ones, held_overwrite_read_error_is_eio,
	   kept_checkpoints_give_way_when_full, refused_write_does_not_checkpoint_in_a_loop,
	   list_while_a_checkpoint_waits)
