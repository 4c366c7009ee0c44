/*
 * lock.c — layer 1: fs->lock as requests take it, and a long job that
 * lets them in between its batches.
 *
 * A cleaner's request moves up to a thousand blocks; done in one hold
 * of the lock, every FUSE request would wait for all of it.  It is done
 * in batches instead, and between two it yields the lock, but only to
 * requests that are waiting: a mutex released and taken straight back
 * is usually won again by the thread that held it, so the waiters are
 * counted as they block, and the job waits (briefly, and never for new
 * ones without end) until they have had their turn.
 */
#include "lfs_int.h"

#include <sched.h>
#include <time.h>

/* A job waits at most this long for the waiters to pass, so a stream of
 * requests cannot stall it for good. */
#define YIELD_MAX_NS 5000000ull

void
lfs_lock(struct lfs_fs *fs)
{
	atomic_fetch_add(&fs->lock_waiters, 1);
	pthread_mutex_lock(&fs->lock);
	atomic_fetch_sub(&fs->lock_waiters, 1);
}

void
lfs_lock_yield(struct lfs_fs *fs)
{
	if (!atomic_load(&fs->lock_waiters))
		return;
	pthread_mutex_unlock(&fs->lock);
	uint64_t start = lfs_now_ns();
	while (atomic_load(&fs->lock_waiters) && lfs_now_ns() - start < YIELD_MAX_NS)
		sched_yield();
	lfs_lock(fs);
}
