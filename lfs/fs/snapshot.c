/*
 * snapshot.c — layer 6: the snapshots of lfs.h (lfs(5), SNAPSHOTS;
 * lfs-ckpt(8)): listing the checkpoints kept, making one a snapshot now,
 * keeping a listed one or letting it go, deleting one, and the
 * protection period that keeps plain ones.
 *
 * A change of the history is made in memory and committed by a
 * checkpoint, the one commit point: a snapshot made is there after a
 * crash or not at all, and one deleted frees its space at that
 * checkpoint (held.c gives the counts back).
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int
unlock(struct lfs_fs *fs, int err)
{
	lfs_cache_trim(fs);
	pthread_mutex_unlock(&fs->lock);
	return err;
}

int
lfs_snapshot_changeable(const struct lfs_fs *fs)
{
	if (!fs->snapshots)
		return -EOPNOTSUPP;
	if (fs->fatal)
		return fs->fatal;
	return fs->dev.readonly ? -EROFS : 0;
}

int
lfs_snapshot_make(struct lfs_fs *fs, const char *name, uint64_t *seq)
{
	lfs_lock(fs);
	int err = lfs_snapshot_changeable(fs);
	if (!err)
		err = lfs_ckpt_snapshot(fs, name, seq);
	return unlock(fs, err);
}

int
lfs_snapshot_list(struct lfs_fs *fs, struct lfs_ckpt_info **out, size_t *n, uint64_t *held_bytes)
{
	*out = NULL;
	*n = 0;
	*held_bytes = 0;
	lfs_lock(fs);
	const struct lfs_hist *h = &fs->hist;
	size_t cap = (size_t)h->count + 1;
	struct lfs_ckpt_info *ci = lfs_calloc(cap, sizeof(*ci));
	uint64_t *own = lfs_calloc(cap, sizeof(*own));
	int err = ci && own ? 0 : -ENOMEM;
	/* held.retained is the history's records, ascending */
	if (!err && fs->snapshots)
		err = lfs_held_usage(&fs->held, own, held_bytes);
	size_t k = 0;
	/* a checkpoint waiting for the disk is in the history already: it is
	 * listed once it commits (ckpt.c) */
	for (size_t r = 0; r < fs->held.nretained && !err; r++) {
		const struct lfs_hist_entry *e = lfs_hist_get(h, fs->held.retained[r]);
		if (!e || e->seq > fs->ckpt_seq)
			continue;
		ci[k] = (struct lfs_ckpt_info){ .seq = e->seq, .time_ns = e->time_ns, .own_bytes = own[r],
						.flags = LFS_CKPT_INFO_KEPT };
		if (e->flags & LFS_HIST_SNAPSHOT)
			ci[k].flags |= LFS_CKPT_INFO_SNAPSHOT;
		if (lfs_hist_origin(h, e->seq, ci[k].src_uuid, &ci[k].src_seq))
			ci[k].flags |= LFS_CKPT_INFO_RECEIVED;
		memcpy(ci[k].name, e->name, sizeof(ci[k].name));
		k++;
	}
	/* the newest checkpoint, the one a crash would come back to */
	if (!err && (!k || ci[k - 1].seq != fs->ckpt_seq))
		ci[k++] = (struct lfs_ckpt_info){ .seq = fs->ckpt_seq, .time_ns = fs->ckpt_time_ns };
	if (!err)
		ci[k - 1].flags |= LFS_CKPT_INFO_CURRENT;
	free(own);
	if (err) {
		free(ci);
		return unlock(fs, err);
	}
	*out = ci;
	*n = k;
	return unlock(fs, 0);
}

/* Whether a change would take checkpoint seq from a view that reads it:
 * deleting it, or making a snapshot a plain checkpoint (which the
 * protection period drops once the view is gone), as NILFS refuses
 * either for a mounted snapshot. */
static int
in_view(const struct lfs_fs *fs, uint64_t seq, bool deleting)
{
	const struct lfs_hist_entry *e = lfs_hist_get(&fs->hist, seq);
	if (!e || !lfs_hist_pinned(&fs->hist, seq))
		return 0;
	return deleting || (e->flags & LFS_HIST_SNAPSHOT) ? -EBUSY : 0;
}

int
lfs_snapshot_keep(struct lfs_fs *fs, uint64_t seq, bool on, const char *name)
{
	lfs_lock(fs);
	int err = lfs_snapshot_changeable(fs);
	if (!err && !on)
		err = in_view(fs, seq, false);
	if (!err)
		err = lfs_hist_snapshot(fs, &fs->hist, seq, on, name);
	/* a plain one past the period goes at this checkpoint */
	if (!err)
		err = lfs_ckpt_write_unlocked(fs);
	return unlock(fs, err);
}

int
lfs_snapshot_delete(struct lfs_fs *fs, uint64_t seq)
{
	lfs_lock(fs);
	int err = lfs_snapshot_changeable(fs);
	if (!err)
		err = in_view(fs, seq, true);
	if (!err)
		err = lfs_hist_delete(fs, &fs->hist, seq);
	if (!err)
		err = lfs_retain_update(fs);
	/* the checkpoint gives back what it alone held */
	if (!err)
		err = lfs_ckpt_write_unlocked(fs);
	return unlock(fs, err);
}

int
lfs_snapshot_hold(struct lfs_fs *fs, uint64_t seq)
{
	lfs_lock(fs);
	int err = fs->snapshots ? lfs_hist_pin(&fs->hist, seq) : -EOPNOTSUPP;
	return unlock(fs, err);
}

void
lfs_snapshot_release(struct lfs_fs *fs, uint64_t seq)
{
	lfs_lock(fs);
	lfs_hist_unpin(&fs->hist, seq);
	pthread_mutex_unlock(&fs->lock);
}

int
lfs_snapshot_find(struct lfs_fs *fs, const char *spec, uint64_t *seq)
{
	lfs_lock(fs);
	const struct lfs_hist_entry *e = lfs_hist_named(&fs->hist, spec);
	if (!e) {
		char *end;
		unsigned long long v = strtoull(spec, &end, 10);
		if (*spec >= '0' && *spec <= '9' && !*end)
			e = lfs_hist_get(&fs->hist, v);
	}
	if (e)
		*seq = e->seq;
	return unlock(fs, e ? 0 : -ENOENT);
}

int
lfs_set_protection(struct lfs_fs *fs, uint32_t seconds)
{
	lfs_lock(fs);
	int err = lfs_snapshot_changeable(fs);
	if (!err && fs->protect_s != seconds) {
		fs->protect_s = seconds;
		fs->changed_since_ckpt = true; /* recorded by the next checkpoint */
	}
	return unlock(fs, err);
}

uint32_t
lfs_snapshot_protection(struct lfs_fs *fs)
{
	lfs_lock(fs);
	uint32_t s = fs->protect_s;
	pthread_mutex_unlock(&fs->lock);
	return s;
}
