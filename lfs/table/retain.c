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
#include <stdio.h>
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

/* Whether moving some other block can make the live tree write this
 * one again: a block-map node above a moved block, the inode record of
 * a moved block's file. */
static bool
drags(uint8_t kind)
{
	return kind == LFS_BK_INDIR || kind == LFS_BK_INODE;
}

void
lfs_retain_use(struct lfs_fs *fs, uint64_t addr, uint32_t bytes, uint8_t kind)
{
	lfs_seg_use(fs, addr, bytes);
	if (drags(kind)) {
		fs->drag_bytes += bytes;
		if (fs->cleaning)
			fs->stats.clean_drag_bytes += bytes;
	}
}

void
lfs_retain_drop(struct lfs_fs *fs, uint64_t addr, uint16_t slot, uint32_t charge, uint8_t kind, uint64_t aux)
{
	bool keep = false;
	if (drags(kind))
		fs->drag_bytes -= charge <= fs->drag_bytes ? charge : fs->drag_bytes;
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
	return fs->snapshots ? lfs_held_would_keep(fs, &fs->held, addr, lfs_retain_until(fs), &fs->hist) : 0;
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
	if (!err && snapshot && fs->recv_commit)
		err = lfs_hist_receive(fs, &fs->hist, seq, fs->recv_commit->root, fs->recv_commit->uuid,
				       fs->recv_commit->src_seq);
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

/* Which retained checkpoints may give way: plain ones no view reads
 * (retained[] follows the history; one not recorded is gone already). */
static bool *
may_go(const struct lfs_fs *fs)
{
	bool *go = lfs_calloc(fs->held.nretained + 1, sizeof(*go));
	for (size_t i = 0; go && i < fs->held.nretained; i++) {
		const struct lfs_hist_entry *e = lfs_hist_get(&fs->hist, fs->held.retained[i]);
		go[i] = !e || (!(e->flags & LFS_HIST_SNAPSHOT) && !lfs_hist_pinned(&fs->hist, e->seq));
	}
	return go;
}

/* What giving way, oldest first, would free: freed[i] as
 * lfs_held_freed_by says, with go[] from may_go (the caller frees both). */
static int
freed_by_going(const struct lfs_fs *fs, bool **go, uint64_t **freed)
{
	*go = may_go(fs);
	*freed = lfs_calloc(fs->held.nretained + 1, sizeof(**freed));
	if (!*go || !*freed)
		return -ENOMEM;
	return lfs_held_freed_by(&fs->held, *go, *freed);
}

int
lfs_retain_giveable(struct lfs_fs *fs, uint64_t *bytes)
{
	*bytes = 0;
	if (!fs->snapshots || !fs->held.count || !lfs_hist_oldest_plain(&fs->hist))
		return 0;
	/* asked at every refused write of a full filesystem: the answer
	 * stands while the tables and the live bytes do not change */
	struct lfs_giveable_memo key = { fs->ckpt_seq, fs->held.count, fs->hist.count, fs->live_total, 0 };
	if (fs->giveable.ckpt_seq == key.ckpt_seq && fs->giveable.held == key.held &&
	    fs->giveable.hist == key.hist && fs->giveable.live == key.live) {
		*bytes = fs->giveable.bytes;
		return 0;
	}
	bool *go;
	uint64_t *freed;
	int err = freed_by_going(fs, &go, &freed);
	for (size_t i = 0; !err && i < fs->held.nretained; i++)
		*bytes += freed[i];
	free(go);
	free(freed);
	if (!err) {
		key.bytes = *bytes;
		fs->giveable = key;
	}
	return err;
}

/* Say what gave way: n checkpoints, first..last, the newest taken at
 * newest_ns, giving back `bytes`. */
static void
log_given(const struct lfs_fs *fs, size_t n, uint64_t first, uint64_t last, uint64_t newest_ns, uint64_t bytes)
{
	uint64_t now = lfs_now_ns(), age = now > newest_ns ? (now - newest_ns) / 1000000000ull : 0;
	char which[64];
	if (n == 1)
		snprintf(which, sizeof(which), "1 kept checkpoint (%llu)", (unsigned long long)first);
	else
		snprintf(which, sizeof(which), "%zu kept checkpoints (%llu to %llu)", n, (unsigned long long)first,
			 (unsigned long long)last);
	lfs_log("full: %s gave way to writers, oldest first, the newest of them %llu s old (protection "
		"period %u s); %llu KiB given back; snapshots stay",
		which, (unsigned long long)age, fs->protect_s, (unsigned long long)(bytes >> 10));
}

int
lfs_retain_give_way(struct lfs_fs *fs, uint64_t need, uint64_t *dropped)
{
	*dropped = 0;
	if (!fs->snapshots || !fs->held.count || !lfs_hist_oldest_plain(&fs->hist))
		return 0;
	bool *go;
	uint64_t *freed;
	int err = freed_by_going(fs, &go, &freed);
	/* the fewest, oldest first, that free `need`; all that free
	 * anything when together they free less */
	size_t n = fs->held.nretained, upto = 0;
	uint64_t sum = 0, got = 0;
	for (size_t i = 0; !err && i < n && got < need; i++) {
		sum += freed[i];
		if (freed[i]) {
			upto = i + 1;
			got = sum;
		}
	}
	/* retained[] follows the history: the checkpoints to drop first */
	uint64_t *seqs = !err && upto ? lfs_malloc(upto * sizeof(*seqs)) : NULL;
	size_t k = 0;
	for (size_t i = 0; seqs && i < upto; i++)
		if (go[i] && lfs_hist_get(&fs->hist, fs->held.retained[i]))
			seqs[k++] = fs->held.retained[i];
	if (!err && upto && !seqs)
		err = -ENOMEM;
	uint64_t newest_ns = k ? lfs_hist_get(&fs->hist, seqs[k - 1])->time_ns : 0;
	for (size_t i = 0; !err && i < k; i++)
		err = lfs_hist_delete(fs, &fs->hist, seqs[i]);
	if (!err && k)
		err = lfs_retain_update(fs);
	if (!err && k) {
		*dropped = k;
		fs->given_way += k;
		log_given(fs, k, seqs[0], seqs[k - 1], newest_ns, got);
	}
	free(seqs);
	free(go);
	free(freed);
	return err;
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

int
lfs_retain_read_run(struct lfs_fs *fs, uint64_t seq, uint64_t addr, uint32_t n, void *buf)
{
	if (!fs->snapshots || !lfs_hist_get(&fs->hist, seq))
		return -ESTALE;
	uint8_t *out = buf;
	int err = 0;
	for (uint32_t i = 0, k; i < n && !err; i += k) {
		/* the blocks the cleaner left where they were, or moved
		 * together, in one read */
		uint64_t cur = lfs_held_translate(&fs->held, addr + i, seq);
		for (k = 1; i + k < n && lfs_held_translate(&fs->held, addr + i + k, seq) == cur + k; k++)
			;
		err = lfs_read_blocks_at(fs, cur, k, out + (size_t)i * fs->bsize);
	}
	return err;
}
