/*
 * space.c — layer 5: admission control: before an operation adds dirty
 * state, it asks here whether the whole dirty state will still fit in
 * clean segments above the floor its class may use (space_reserve.c).
 *
 * When an operation does not fit: flush (the estimate of dirty state is
 * pessimistic), checkpoint if that frees segments, then clean the
 * emptiest segments.  Cleaning that gained nothing is not tried again
 * until something was freed since (fs->freed_bytes), or a second later
 * (the cleaner may have made room to move), so a stream of writes into a
 * full filesystem costs at most one attempt a second.
 *
 * In the daemon, the checkpoint and the cleaning are the reclaimer's
 * (reclaim.c): a refused request returns, waits for one of its rounds
 * with nothing held, and runs again from the start, so no request
 * cleans in its own time while every other one waits for the lock.
 * A library caller with no reclaimer serving makes the room itself.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>

/* Try to make room: flush, checkpoint, clean (or leave those to the
 * reclaimer).  Returns 0 when `bytes` fits, -ENOSPC when it cannot be
 * made to now, or another error. */
static int make_room(struct lfs_fs *fs, enum lfs_space_class cls, uint64_t bytes);

int
lfs_space_admit(struct lfs_fs *fs, enum lfs_space_class cls, uint64_t bytes)
{
	/* the caller holds inodes that no reference may keep (the kernel's
	 * lookups do under FUSE, a library caller's need not): the flushes
	 * below must not evict them */
	bool outer = !fs->admitting;
	fs->admitting = true;
	int err = make_room(fs, cls, bytes);
	if (outer)
		fs->admitting = false;
	return err;
}

void
lfs_space_log_full(struct lfs_fs *fs, enum lfs_space_class cls, const char *why)
{
	uint64_t now = lfs_now_ns();
	if (now - fs->full_logged_ns < 60ull * 1000000000ull)
		return;
	fs->full_logged_ns = now;
	lfs_log("full: %s refused (%llu of %llu segments clean, %llu reserved; %llu of %llu blocks "
		"of capacity live); %s",
		cls == LFS_SPACE_WRITE ? "a write" : cls == LFS_SPACE_OVERWRITE ? "an overwrite"
		: cls == LFS_SPACE_WRITEBACK ? "a cached write" : "a delete",
		(unsigned long long)fs->nclean, (unsigned long long)fs->sb.nsegs,
		(unsigned long long)fs->sb.reserved_segs, (unsigned long long)lfs_space_used_blocks(fs),
		(unsigned long long)lfs_space_capacity(fs), why);
	/* a filesystem held full by what snapshots keep says so, and how
	 * to give it back */
	uint64_t held = 0;
	uint64_t *own = fs->snapshots && fs->held.count ? lfs_calloc(fs->held.nretained + 1, sizeof(*own)) : NULL;
	if (own && !lfs_held_usage(&fs->held, own, &held) && held)
		lfs_log("full: %llu MiB of it are held for %zu kept checkpoints or snapshots; deleting them "
			"frees it (lfs-ckpt -l lists them, lfs-ckpt -d deletes one)",
			(unsigned long long)(held >> 20), fs->held.nretained);
	free(own);
}

/* Cleaning gained nothing lately, and nothing was freed since. */
static bool
recently_futile(const struct lfs_fs *fs)
{
	return fs->futile && fs->freed_bytes == fs->futile_at && lfs_now_ns() - fs->futile_ns < 1000000000ull;
}

/* this thread's last refusal that a round may answer */
static _Thread_local struct {
	bool set;
	enum lfs_space_class cls;
	uint64_t bytes;
} refused;

bool
lfs_space_room_pending(void)
{
	return refused.set;
}

bool
lfs_space_room_refused(enum lfs_space_class *cls, uint64_t *bytes)
{
	bool r = refused.set;
	*cls = refused.cls;
	*bytes = refused.bytes;
	refused.set = false;
	return r;
}

/* Bytes by which `bytes` more would take the live data past the
 * capacity (what kept checkpoints hold counts as live); 0 if it fits. */
static uint64_t
over_capacity(const struct lfs_fs *fs, uint64_t bytes)
{
	uint64_t want = lfs_space_used_blocks(fs) + (bytes + fs->bsize - 1) / fs->bsize, cap = lfs_space_capacity(fs);
	return want > cap ? (want - cap) * fs->bsize : 0;
}

/* Whether kept plain checkpoints giving way would let `bytes` more live
 * data in (or free anything at all, with bytes 0). */
static bool
giving_way_helps(struct lfs_fs *fs, uint64_t bytes)
{
	uint64_t giveable;
	if (lfs_retain_giveable(fs, &giveable) || !giveable)
		return false;
	return giveable >= over_capacity(fs, bytes);
}

/* Kept plain checkpoints give way to the writers of a full filesystem
 * (NILFS's cleaner shortens its protection period when space runs
 * out), as few as free `need` bytes and a margin, so that the next
 * writes do not ask again at once; the checkpoint after commits it and
 * gives their blocks back.  1 when some gave way, 0 when none could. */
static int
give_way(struct lfs_fs *fs, bool unlocked, uint64_t need)
{
	uint64_t seg_bytes = (uint64_t)fs->sb.seg_blocks * fs->bsize;
	uint64_t margin = lfs_space_capacity(fs) * fs->bsize / 32;
	uint64_t dropped;
	int err = lfs_retain_give_way(fs, need + (margin > seg_bytes ? margin : seg_bytes), &dropped);
	if (!err && dropped)
		err = unlocked ? lfs_ckpt_write_unlocked(fs) : lfs_ckpt_write(fs, false);
	if (err == -ENOSPC)
		fs->room_why = "the checkpoint that lets kept checkpoints go found no room";
	return err ? err : dropped != 0;
}

/* The round, once kept checkpoints gave way where the live data would
 * pass the capacity. */
static int
round_after(struct lfs_fs *fs, bool unlocked)
{
	uint64_t before = lfs_seg_clean_blocks(fs);
	/* A checkpoint costs blocks of its own: write one only when it frees
	 * segments, or a nearly full disk drains itself checkpointing. */
	if (lfs_seg_freeable(fs)) {
		int err = unlocked ? lfs_ckpt_write_unlocked(fs) : lfs_ckpt_write(fs, false);
		if (err == -ENOSPC)
			fs->room_why = "its checkpoint found no room";
		if (err)
			return err;
		if (lfs_seg_clean_blocks(fs) > before) {
			fs->loss_rounds = 0;
			return 0;
		}
	}
	/* after cleaning that gained nothing, try again once anything was
	 * freed, or a second later (the cleaner may have moved) */
	if (recently_futile(fs)) {
		fs->room_why = "cleaning gained nothing a moment ago, and nothing was freed since";
		return -ENOSPC;
	}
	uint64_t seg_bytes = (uint64_t)fs->sb.seg_blocks * fs->bsize;
	uint64_t freed = fs->freed_bytes;
	struct lfs_reclaim_tally t = {0};
	int err = lfs_clean_reclaim(fs, unlocked, &t);
	if (err && err != -ENOSPC)
		return err;
	/* progress: clean space, or dead space made elsewhere (the old
	 * leaves of moved blocks) that later cleaning gains from.  The
	 * reclaimer's own gain counts too, its victims against what their
	 * moves and the checkpoint wrote: while its counting yields,
	 * requests admitted before it take the clean space it makes, and
	 * judged by the clean space alone, a round that gained looked
	 * futile, and the cached writes then refused for a second lost data
	 * the kernel had acknowledged.  A round that holds the lock throughout is judged by the clean
	 * space alone: nothing else took it. */
	bool gained = lfs_seg_clean_blocks(fs) > before || (unlocked && t.victims * seg_bytes > t.written);
	if (err == -ENOSPC || (!gained && fs->freed_bytes - freed < seg_bytes)) {
		if (err != -ENOSPC)
			fs->room_why = "its cleaning left no more clean space than it found";
		fs->futile = true;
		fs->futile_at = fs->freed_bytes;
		fs->futile_ns = lfs_now_ns();
		fs->loss_rounds = 0;
		return -ENOSPC;
	}
	fs->futile = false;
	if (gained) {
		fs->loss_rounds = 0;
		return 0;
	}
	/* At a loss for all the reclaimer saw: but while its counting
	 * yielded, requests admitted before it flushed into the clean space
	 * (their overwrites made the dead space freed_bytes counts), so the
	 * round's own gain may have gone to them; and what its moves left
	 * behind (the old copies of the leaves and records they dragged
	 * along) is the next round's gain.  The refused request comes back
	 * once for it: ending it here failed cached writes of pure
	 * overwrites of a nearly full filesystem, their data lost to the
	 * caller, one round before cleaning gained.  A second loss in a row ends it, and a
	 * caller cleaning in its own time (no request runs meanwhile) ends
	 * at the first: on a truly full filesystem, rounds at a loss would
	 * go on moving the same blocks. */
	if (unlocked && fs->loss_rounds++ == 0)
		return 0;
	fs->loss_rounds = 0;
	fs->room_why = "a second round in a row at a loss";
	return -ENOSPC;
}

static int
reclaim_round(struct lfs_fs *fs, bool unlocked, uint64_t over)
{
	/* past the capacity with what kept checkpoints hold: they give way
	 * first, and cleaning then gains what they held */
	int gave = over ? give_way(fs, unlocked, over) : 0;
	if (gave < 0)
		return gave;
	uint64_t before = lfs_seg_clean_blocks(fs);
	int err = round_after(fs, unlocked);
	if (err && err != -ENOSPC)
		return err;
	if (gave || (!err && lfs_seg_clean_blocks(fs) > before))
		return 0; /* live data given back, or clean space made */
	/* no more clean space than before: what kept checkpoints hold is
	 * the dead space left to gain (moving a block-map node or an inode
	 * record they read leaves its old copy held, so cleaning under
	 * them loses, though its victims outweigh what it wrote) */
	gave = give_way(fs, unlocked, over);
	return gave < 0 ? gave : gave ? 0 : err;
}

int
lfs_space_reclaim_round(struct lfs_fs *fs, bool unlocked, uint64_t grow, bool capped)
{
	if (fs->fatal)
		return fs->fatal;
	if (fs->dev.readonly)
		return -EROFS;
	uint64_t over = over_capacity(fs, grow);
	int err = reclaim_round(fs, unlocked, over);
	/* A request held at the capacity gets room only where the round
	 * brought the live data with what kept checkpoints hold down; clean
	 * space does not help it.  The checkpoint that commits a give-way is
	 * kept in its turn, and holds the old copies of the tables it and the
	 * round's cleaning rewrite: where the checkpoints given way held no
	 * more (a full filesystem whose kept checkpoints hold only tables),
	 * every round would give some back and keep as much again. */
	if (!err && capped && over && over_capacity(fs, grow) >= over) {
		fs->room_why = "kept checkpoints gave way, but the checkpoint and cleaning that let them go kept as much";
		return -ENOSPC;
	}
	return err;
}

static int
make_room(struct lfs_fs *fs, enum lfs_space_class cls, uint64_t bytes)
{
	refused.set = false;
	if (fs->fatal)
		return fs->fatal;
	if (lfs_space_fits(fs, cls, bytes))
		return 0;
	int err = lfs_flush(fs);
	if (err)
		return err;
	if (lfs_space_fits(fs, cls, bytes))
		return 0;
	/* at capacity, cleaning cannot help: only a delete can, or kept
	 * checkpoints giving way */
	bool yield = giving_way_helps(fs, bytes);
	if (cls == LFS_SPACE_WRITE && !lfs_space_grows_within(fs, bytes) && !yield) {
		lfs_space_log_full(fs, cls, "the live data is at the capacity");
		return -ENOSPC;
	}
	if (fs->reclaimer) {
		/* its round, not this request, checkpoints and cleans: the
		 * caller waits for it with nothing held and comes back */
		if (lfs_seg_freeable(fs) || !recently_futile(fs) || yield) {
			refused.set = true;
			refused.cls = cls;
			refused.bytes = bytes;
			return -ENOSPC;
		}
	} else {
		for (int round = 0; round < 64 && !lfs_space_fits(fs, cls, bytes); round++) {
			err = lfs_space_reclaim_round(fs, false, bytes, cls == LFS_SPACE_WRITE);
			if (err == -ENOSPC)
				break;
			if (err)
				return err;
		}
		if (lfs_space_fits(fs, cls, bytes))
			return 0;
	}
	lfs_space_log_full(fs, cls, "cleaning can free nothing more until something is deleted");
	return -ENOSPC;
}
