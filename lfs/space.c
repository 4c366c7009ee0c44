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
 */
#include "lfs_int.h"

#include <errno.h>

/* Try to make room: flush, checkpoint, clean.  Returns 0 when `bytes`
 * fits, -ENOSPC when it cannot be made to, or another error. */
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

static void
log_full(struct lfs_fs *fs, enum lfs_space_class cls, const char *why)
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
}

static int
make_room(struct lfs_fs *fs, enum lfs_space_class cls, uint64_t bytes)
{
	if (fs->fatal)
		return fs->fatal;
	if (lfs_space_fits(fs, cls, bytes))
		return 0;
	int err = lfs_flush(fs);
	if (err)
		return err;
	if (lfs_space_fits(fs, cls, bytes))
		return 0;
	/* at capacity, cleaning cannot help: only a delete can */
	if (cls == LFS_SPACE_WRITE && !lfs_space_grows_within(fs, bytes)) {
		log_full(fs, cls, "the live data is at the capacity");
		return -ENOSPC;
	}
	/* A checkpoint costs blocks of its own: write one only when it frees
	 * segments, or a nearly full disk drains itself checkpointing. */
	if (lfs_seg_freeable(fs) && (err = lfs_ckpt_write(fs, false)))
		return err;
	uint64_t seg_bytes = (uint64_t)fs->sb.seg_blocks * fs->bsize;
	for (int round = 0; round < 64 && !lfs_space_fits(fs, cls, bytes); round++) {
		/* after cleaning that gained nothing, try again once anything
		 * was freed, or a second later (the cleaner may have moved) */
		if (fs->futile && fs->freed_bytes == fs->futile_at &&
		    lfs_now_ns() - fs->futile_ns < 1000000000ull)
			break;
		uint64_t moved = 0, before = lfs_seg_clean_blocks(fs), freed = fs->freed_bytes;
		err = lfs_clean_reclaim(fs, &moved);
		if (err && err != -ENOSPC)
			return err;
		/* progress: clean space, or dead space made elsewhere (the
		 * old leaves of moved blocks) that later cleaning gains from */
		bool gained = lfs_seg_clean_blocks(fs) > before;
		if (err == -ENOSPC || (!gained && fs->freed_bytes - freed < seg_bytes)) {
			fs->futile = true;
			fs->futile_at = fs->freed_bytes;
			fs->futile_ns = lfs_now_ns();
			break;
		}
		fs->futile = false;
		/* at a loss: leave the rest to the next write (or the cleaner)
		 * rather than spend the reserve here */
		if (!gained)
			break;
	}
	if (lfs_space_fits(fs, cls, bytes))
		return 0;
	log_full(fs, cls, "cleaning can free nothing more until something is deleted");
	return -ENOSPC;
}
