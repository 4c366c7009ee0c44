/*
 * reclaim.c — layer 6: the reclaimer, a thread of the daemon that makes
 * room for requests refused it, so that none makes it in its own time.
 *
 * A write that finds the clean segments spent does not clean inside its
 * own request: holding fs->lock, every other request would wait behind
 * it, and the kernel, seeing writeback stall, would throttle the
 * writers.  Admission (space.c) refuses it instead, the request
 * returns, and its caller (the FUSE glue) waits here with
 * nothing held for the next round, then runs the request again from the
 * start.  A round is one lfs_space_reclaim_round: a checkpoint if that
 * frees segments, else a batch of cleaning whose counting yields the
 * lock between victims.  Rounds asked for while one runs are served by
 * the next, one round for all of them.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdio.h>

/* An operation stops coming back after this many rounds that made room
 * someone else took (the bound admission had when it cleaned itself). */
#define ROOM_TRIES 64

/* Whether every request refused since the last round began would fit
 * now (the cleaner or a delete may have made the room); forgets them.
 * *most: the most bytes one of them asked for; *capped: all of them
 * are plain writes, held at the capacity. */
static bool
needs_fit(struct lfs_fs *fs, uint64_t *most, bool *capped)
{
	bool fit = true;
	*most = 0;
	*capped = true;
	for (int c = 0; c < LFS_SPACE_NCLASSES; c++) {
		if (fs->room_need[c] && c != LFS_SPACE_WRITE)
			*capped = false;
		if (fs->room_need[c] && !lfs_space_fits(fs, (enum lfs_space_class)c, fs->room_need[c] - 1))
			fit = false;
		if (fs->room_need[c] && fs->room_need[c] - 1 > *most)
			*most = fs->room_need[c] - 1;
		fs->room_need[c] = 0;
	}
	return fit;
}

void
lfs_reclaim_serve(struct lfs_fs *fs)
{
	lfs_lock(fs);
	fs->reclaimer = true;
	while (!fs->reclaim_stop) {
		if (fs->room_done == fs->room_asked) {
			pthread_cond_wait(&fs->room_cv, &fs->lock);
			continue;
		}
		uint64_t asked = fs->room_asked;
		/* a round cleans only for room still missing: cleaning the
		 * emptiest segments when none is needed may be at a loss */
		fs->room_why = NULL;
		uint64_t most;
		bool capped;
		fs->room_err = needs_fit(fs, &most, &capped) ? 0 : lfs_space_reclaim_round(fs, true, most, capped);
		fs->room_err_why = fs->room_err == -ENOSPC ? fs->room_why : NULL;
		fs->room_done = asked;
		lfs_cache_trim(fs);
		pthread_cond_broadcast(&fs->room_cv);
	}
	fs->reclaimer = false;
	pthread_cond_broadcast(&fs->room_cv);
	pthread_mutex_unlock(&fs->lock);
}

void
lfs_reclaim_stop(struct lfs_fs *fs)
{
	lfs_lock(fs);
	fs->reclaim_stop = true;
	pthread_cond_broadcast(&fs->room_cv);
	pthread_mutex_unlock(&fs->lock);
}

bool
lfs_room_wait(struct lfs_fs *fs, unsigned *tries)
{
	enum lfs_space_class cls;
	uint64_t bytes;
	if (!lfs_space_room_refused(&cls, &bytes))
		return false;
	lfs_lock(fs);
	if (++*tries > ROOM_TRIES) {
		uint64_t now = lfs_now_ns();
		if (now - fs->spent_logged_ns >= 60ull * 1000000000ull) {
			fs->spent_logged_ns = now;
			lfs_log("room: a request gave up after %u rounds, each of which made room that other "
				"requests took first", ROOM_TRIES);
		}
		pthread_mutex_unlock(&fs->lock);
		return false;
	}
	bool again = false;
	if (fs->reclaimer && !fs->reclaim_stop) {
		if (fs->room_need[cls] < bytes + 1)
			fs->room_need[cls] = bytes + 1;
		/* served by a round that begins after this: one under way
		 * judged the room before this request was refused */
		uint64_t ticket = ++fs->room_asked;
		pthread_cond_broadcast(&fs->room_cv);
		while (fs->room_done < ticket && fs->reclaimer && !fs->reclaim_stop)
			pthread_cond_wait(&fs->room_cv, &fs->lock);
		/* a round that made no room ends the request with ENOSPC; an
		 * error of the filesystem is the request's to report */
		again = fs->room_done >= ticket && fs->room_err != -ENOSPC;
		if (fs->room_done >= ticket && fs->room_err == -ENOSPC) {
			char why[200];
			snprintf(why, sizeof(why), "the reclaimer's round could make no room: %s",
				 fs->room_err_why ? fs->room_err_why : "no reason recorded");
			lfs_space_log_full(fs, cls, why);
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return again;
}

bool
lfs_room_spent(unsigned tries)
{
	return tries > ROOM_TRIES;
}
