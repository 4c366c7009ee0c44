/*
 * retain.c — layer 3: what the live tree lets go of, and the snapshot
 * tables' part in checkpoints (lfs(5), SNAPSHOTS).
 *
 * Every place that stops using a block (an overwrite, a truncate, a
 * freed inode, an inode-map block replaced at a checkpoint, roll-forward
 * replaying those) goes through lfs_retain_drop: on an image without
 * snapshots it is the usage table's uncount, as before; with them,
 * held.c decides whether a retained checkpoint still reads the block,
 * and then it stays counted, held, until no retained checkpoint needs it.
 * A checkpoint records itself in the history, forgets what the
 * protection period no longer covers, gives back what that released,
 * and writes both tables before its usage table (whose counts the
 * release changed).
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int
lfs_retain_init(struct lfs_fs *fs)
{
	fs->snapshots = (fs->sb.feature_incompat & LFS_FEATURE_SNAPSHOTS) != 0;
	int err = lfs_held_init(&fs->held, fs);
	if (!err)
		err = lfs_hist_init(&fs->hist, fs);
	return err;
}

void
lfs_retain_free(struct lfs_fs *fs)
{
	lfs_held_free(fs, &fs->held);
	lfs_hist_free(fs, &fs->hist);
}

int
lfs_retain_update(struct lfs_fs *fs)
{
	uint64_t *seqs = lfs_malloc((fs->hist.count ? fs->hist.count : 1) * sizeof(*seqs));
	if (!seqs)
		return -ENOMEM;
	size_t n = lfs_hist_retained(&fs->hist, seqs);
	int err = lfs_held_set_retained(&fs->held, seqs, n);
	free(seqs);
	return err;
}

/* Inode-map blocks held count as table blocks, which no checkpoint
 * records: counted again here, once per block, as ckpt.c counts the
 * live map's. */
static int
count_held_imap(struct lfs_fs *fs)
{
	struct u64map seen;
	u64map_init(&seen);
	int err = 0;
	for (uint64_t i = 0; i < fs->held.tab.nslots && !err; i++) {
		const struct lfs_held_entry *e = &fs->held.ent[i];
		if (!e->orig || e->kind != LFS_BK_IMAP || u64map_get(&seen, e->cur))
			continue;
		err = u64map_put(&seen, e->cur, (void *)1);
		if (!err)
			lfs_seg_meta(fs, e->cur, +1);
	}
	u64map_free(&seen);
	return err;
}

int
lfs_retain_load(struct lfs_fs *fs, const struct lfs_ckpt_hdr *h)
{
	if (!fs->snapshots) {
		if (h->held_root || h->held_slots || h->hist_root || h->hist_slots || h->protect_s) {
			lfs_log("checkpoint %llu: snapshot tables on an image without the SNAPSHOTS feature",
				(unsigned long long)h->ckpt_seq);
			return -EFSCORRUPTED;
		}
		return 0;
	}
	fs->protect_s = h->protect_s;
	int err = lfs_hist_load(fs, &fs->hist, h->hist_root, h->hist_slots);
	if (!err)
		err = lfs_held_load(fs, &fs->held, h->held_root, h->held_slots);
	if (err)
		return err;
	/* no record or entry can speak of a checkpoint after its own */
	uint64_t newest = fs->hist.count ? fs->hist.ent[fs->hist.by_seq[fs->hist.count - 1]].seq : 0;
	if (newest > h->ckpt_seq) {
		lfs_log("checkpoint %llu: its history records checkpoint %llu, a later one",
			(unsigned long long)h->ckpt_seq, (unsigned long long)newest);
		return -EFSCORRUPTED;
	}
	for (uint64_t i = 0; i < fs->held.tab.nslots; i++)
		if (fs->held.ent[i].orig && fs->held.ent[i].until > h->ckpt_seq) {
			lfs_log("checkpoint %llu: a held block (%llu) is dropped by checkpoint %llu, a later one",
				(unsigned long long)h->ckpt_seq, (unsigned long long)fs->held.ent[i].orig,
				(unsigned long long)fs->held.ent[i].until);
			return -EFSCORRUPTED;
		}
	err = count_held_imap(fs);
	if (!err)
		err = lfs_retain_update(fs);
	return err;
}

uint64_t
lfs_retain_until(const struct lfs_fs *fs)
{
	/* a checkpoint waiting for its commit has its tables written: what
	 * changes now is the next one's */
	return (fs->ckpt_job.active ? fs->ckpt_job.h.ckpt_seq : fs->ckpt_seq) + 1;
}

static void
uncount(struct lfs_fs *fs, uint64_t addr, uint32_t charge, uint8_t kind)
{
	if (kind == LFS_BK_IMAP)
		lfs_seg_meta(fs, addr, -1);
	else
		lfs_seg_unuse(fs, addr, charge);
}

void
lfs_retain_drop(struct lfs_fs *fs, uint64_t addr, uint16_t slot, uint32_t charge, uint8_t kind, uint64_t aux)
{
	bool keep = false;
	if (fs->snapshots) {
		int err = lfs_held_drop(fs, &fs->held, addr, slot, charge, kind, aux, lfs_retain_until(fs), &keep);
		if (err) {
			/* counted still: space lost until the next mount, not a block */
			lfs_fail(fs, err, "block %llu: recording whether a snapshot holds it",
				 (unsigned long long)addr);
			return;
		}
	}
	if (!keep)
		uncount(fs, addr, charge, kind);
}

int
lfs_retain_keeps(struct lfs_fs *fs, uint64_t addr)
{
	return fs->snapshots ? lfs_held_would_keep(fs, &fs->held, addr, lfs_retain_until(fs)) : 0;
}

void
lfs_retain_moved_data(struct lfs_fs *fs, uint64_t old, uint64_t new_addr)
{
	if (fs->snapshots) {
		int err = lfs_held_forward(fs, &fs->held, old, new_addr, fs->bsize, lfs_retain_until(fs));
		if (err) {
			lfs_fail(fs, err, "block %llu moved to %llu: recording it for the snapshots",
				 (unsigned long long)old, (unsigned long long)new_addr);
			return;
		}
	}
	lfs_seg_unuse(fs, old, fs->bsize);
}

/* Record checkpoint seq in the history.  A full history (LFS_HIST_MAX)
 * lets its oldest plain checkpoint go before its period ends; with none
 * (every record a snapshot) a plain checkpoint is not kept, and a
 * snapshot is refused (lfs_ckpt_snapshot asks first, so a checkpoint
 * does not fail for it). */
static int
record(struct lfs_fs *fs, uint64_t seq, uint64_t time_ns, bool snapshot)
{
	if (fs->hist.count >= LFS_HIST_MAX) {
		uint64_t oldest = lfs_hist_oldest_plain(&fs->hist);
		if (!oldest)
			return snapshot ? -ENOSPC : 0;
		int err = lfs_hist_delete(fs, &fs->hist, oldest);
		if (err)
			return err;
		lfs_log("checkpoint history full (%u records): checkpoint %llu no longer kept",
			LFS_HIST_MAX, (unsigned long long)oldest);
	}
	return lfs_hist_add(fs, &fs->hist, seq, time_ns);
}

int
lfs_retain_checkpoint(struct lfs_fs *fs, uint64_t seq, uint64_t time_ns, const char *snapshot,
		      struct lfs_ckpt_hdr *h)
{
	if (!fs->snapshots)
		return 0;
	int err = 0;
	if (fs->protect_s || snapshot)
		err = record(fs, seq, time_ns, snapshot != NULL);
	if (!err && snapshot)
		err = lfs_hist_snapshot(fs, &fs->hist, seq, true, *snapshot ? snapshot : NULL);
	uint64_t gone, freed;
	if (!err)
		err = lfs_hist_prune(fs, &fs->hist, time_ns, (uint64_t)fs->protect_s * 1000000000ull, &gone);
	if (!err)
		err = lfs_retain_update(fs);
	if (!err)
		err = lfs_held_release(fs, &fs->held, &freed);
	if (!err)
		err = lfs_ptable_write(fs, &fs->hist.tab);
	if (!err)
		err = lfs_ptable_write(fs, &fs->held.tab);
	if (err)
		return err;
	h->held_root = fs->held.tab.root_addr;
	h->held_slots = fs->held.tab.nslots;
	h->hist_root = fs->hist.tab.root_addr;
	h->hist_slots = (uint32_t)fs->hist.tab.nslots;
	h->protect_s = fs->protect_s;
	return 0;
}

void
lfs_retain_abort(struct lfs_fs *fs, uint64_t seq)
{
	if (!fs->snapshots || !lfs_hist_get(&fs->hist, seq))
		return;
	/* forgetting a record only changes memory; retained follows it */
	if (lfs_hist_delete(fs, &fs->hist, seq) || lfs_retain_update(fs))
		lfs_fail(fs, -ENOMEM, "checkpoint %llu abandoned: forgetting its record", (unsigned long long)seq);
}

int
lfs_retain_read(struct lfs_fs *fs, uint64_t seq, uint64_t addr, void *buf)
{
	if (!fs->snapshots || !lfs_hist_get(&fs->hist, seq))
		return -ESTALE;
	return lfs_read_block_at(fs, lfs_held_translate(&fs->held, addr, seq), buf);
}
