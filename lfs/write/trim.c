/*
 * trim.c — layer 5: clean segments given back to the storage (FITRIM,
 * -o discard; lfs(8), DISCARD).
 *
 * Only a CLEAN segment is discarded: one the newest durable checkpoint
 * does not reference (seg.c makes a segment clean when the checkpoint
 * that no longer references it has committed), whose blocks no
 * snapshot or kept checkpoint holds (held blocks stay counted live),
 * and which is not in the log written since (the head's segments are
 * ACTIVE, the rest DIRTY).  A discard can be slow, so a run chooses a
 * batch under fs->lock, marks it LFS_TRIM_PENDING and discards it with
 * the lock released; the segment writer may take one meanwhile
 * (lfs_int.h, LFS_TRIM_TAKEN), and that one is left alone.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 64                /* segments chosen per hold of the lock */
#define SCAN 65536              /* segments looked at per hold of the lock */
#define RUN_MAX 16              /* segments per discard, trim_mu held */

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t
seg_bytes(const struct lfs_fs *fs)
{
	return (uint64_t)fs->sb.seg_blocks * fs->bsize;
}

static bool
trimmable(const struct lfs_fs *fs, uint64_t s)
{
	const struct lfs_seginfo *si = &fs->segs[s];
	return si->state == LFS_SEG_CLEAN && !si->trimmed && si->trim == LFS_TRIM_NONE;
}

/* Discard the batch's segments that no writer took, in runs of adjacent
 * ones; fs->lock not held.  Returns the first failure, 0 if none; ok[i]
 * says whether seg[i] was discarded. */
static int
discard_batch(struct lfs_fs *fs, const uint32_t *seg, size_t n, bool *ok)
{
	uint64_t sb = seg_bytes(fs);
	int first = 0;
	for (size_t i = 0; i < n;) {
		pthread_mutex_lock(&fs->trim_mu);
		size_t j = i;
		while (j < n && j - i < RUN_MAX && fs->segs[seg[j]].trim == LFS_TRIM_PENDING &&
		       (j == i || seg[j] == seg[j - 1] + 1))
			j++;
		int err = 0;
		if (j > i)
			err = lfs_bdev_discard(&fs->dev, lfs_seg_first_block(fs, seg[i]) * fs->bsize, (j - i) * sb);
		pthread_mutex_unlock(&fs->trim_mu);
		for (size_t k = i; k < j; k++)
			ok[k] = !err;
		if (j == i)
			ok[j++] = false; /* taken meanwhile */
		if (err && !first)
			first = err;
		if (err == -EOPNOTSUPP || err == -EIO || err == -EROFS)
			break;
		i = j;
	}
	return first;
}

/* Discard the n segments in seg (each trimmable, in ascending order),
 * fs->lock held, and released meanwhile if `unlocked`; *bytes grows by
 * what was discarded. */
static int
trim_segs(struct lfs_fs *fs, const uint32_t *seg, size_t n, bool unlocked, uint64_t *bytes)
{
	bool ok[BATCH] = { false };
	for (size_t i = 0; i < n; i++)
		fs->segs[seg[i]].trim = LFS_TRIM_PENDING;
	if (unlocked)
		pthread_mutex_unlock(&fs->lock);
	int err = discard_batch(fs, seg, n, ok);
	if (unlocked)
		lfs_lock(fs);
	for (size_t i = 0; i < n; i++) {
		struct lfs_seginfo *si = &fs->segs[seg[i]];
		if (ok[i] && si->trim == LFS_TRIM_PENDING) {
			si->trimmed = 1;
			fs->stats.trim_segs++;
			fs->stats.trim_bytes += seg_bytes(fs);
			*bytes += seg_bytes(fs);
		}
		si->trim = LFS_TRIM_NONE;
	}
	if (err && err != fs->trim_err)
		lfs_log("discard: %s; segments stay allocated on the storage", strerror(-err));
	fs->trim_err = err;
	return err;
}

static int
writable(const struct lfs_fs *fs)
{
	if (fs->fatal)
		return fs->fatal;
	return fs->dev.readonly || fs->quiesced ? -EROFS : 0;
}

int
lfs_trim(struct lfs_fs *fs, uint64_t start, uint64_t len, uint64_t minlen, uint64_t *trimmed)
{
	*trimmed = 0;
	uint64_t sb = seg_bytes(fs);
	uint64_t base = fs->sb.seg0 * fs->bsize;
	uint64_t end = base + fs->sb.nsegs * sb;
	if (start >= fs->dev.size_bytes || len < fs->bsize || minlen > end - base)
		return -EINVAL;
	uint64_t last = len > UINT64_MAX - start ? UINT64_MAX : start + len;
	/* whole segments inside [start, last), and runs of minlen or more */
	uint64_t s = start <= base ? 0 : (start - base + sb - 1) / sb;
	uint64_t e = last >= end ? fs->sb.nsegs : last <= base ? 0 : (last - base) / sb;
	uint64_t run_min = minlen ? (minlen + sb - 1) / sb : 1;
	pthread_mutex_lock(&fs->trim_run_mu);
	lfs_lock(fs);
	int err = writable(fs);
	/* what was freed since the last checkpoint is clean after the next */
	if (!err && lfs_seg_freeable(fs))
		err = lfs_ckpt_write_unlocked(fs);
	uint32_t batch[BATCH];
	bool in_run = false;        /* s continues a run found long enough */
	while (!err && s < e) {
		size_t n = 0;
		for (uint64_t scanned = 0; s < e && n < BATCH && scanned < SCAN; scanned++) {
			if (!trimmable(fs, s)) {
				in_run = false;
				s++;
				continue;
			}
			if (!in_run) {
				uint64_t r = 1;
				while (r < run_min && s + r < e && trimmable(fs, s + r))
					r++;
				if (r < run_min) {
					s += r;
					continue;
				}
				in_run = true;
			}
			batch[n++] = (uint32_t)s++;
		}
		if (n)
			err = trim_segs(fs, batch, n, true, trimmed);
		else
			lfs_lock_yield(fs);
		if (!err)
			err = writable(fs);
	}
	if (!err || *trimmed)
		lfs_log("discard: fstrim gave %llu MiB back to the storage (%llu segments)",
			(unsigned long long)(*trimmed >> 20), (unsigned long long)(*trimmed / sb));
	pthread_mutex_unlock(&fs->lock);
	pthread_mutex_unlock(&fs->trim_run_mu);
	return err;
}

/* -o discard: the listed segments, fs->lock held (and released
 * meanwhile if `unlocked`). */
static int
trim_listed(struct lfs_fs *fs, bool unlocked)
{
	int err = 0;
	uint64_t bytes = 0;
	while (!err && fs->ntrim && !(err = writable(fs))) {
		uint32_t batch[BATCH];
		size_t n = 0;
		/* taken from the end: what a checkpoint adds meanwhile goes there */
		while (fs->ntrim && n < BATCH) {
			uint32_t s = fs->trim_list[--fs->ntrim];
			fs->segs[s].trim_listed = 0;
			if (trimmable(fs, s))
				batch[n++] = s;
		}
		qsort(batch, n, sizeof(batch[0]), cmp_u32);
		if (n)
			err = trim_segs(fs, batch, n, unlocked, &bytes);
	}
	return err;
}

int
lfs_trim_freed(struct lfs_fs *fs)
{
	/* another run is under way: this one's turn comes at the next tick */
	if (pthread_mutex_trylock(&fs->trim_run_mu))
		return 0;
	lfs_lock(fs);
	int err = trim_listed(fs, true);
	pthread_mutex_unlock(&fs->lock);
	pthread_mutex_unlock(&fs->trim_run_mu);
	return err;
}

int
lfs_trim_final(struct lfs_fs *fs)
{
	return fs->ntrim ? trim_listed(fs, false) : 0;
}
