/*
 * lock.c — layer 1: fs->lock as requests take it, and a long job that
 * lets them in between its batches.
 *
 * A cleaner's request moves up to a thousand blocks; done in one hold
 * of the lock, every FUSE request would wait for all of it.  It is done
 * in batches instead, and between two it yields the lock, but only to
 * requests that are waiting: a mutex released and taken straight back
 * is usually won again by the thread that held it, so the waiters are
 * counted as they block, and the job sleeps until as many have had the
 * lock as were waiting when it yielded.  Those were blocked on the lock
 * it gave up, so each takes it in turn: the job waits for their work,
 * not for a time, and never for requests that come later.
 */
#include "lfs_int.h"

void
lfs_lock(struct lfs_fs *fs)
{
	atomic_fetch_add(&fs->lock_waiters, 1);
	pthread_mutex_lock(&fs->lock);
	atomic_fetch_sub(&fs->lock_waiters, 1);
	fs->lock_served++;
	if (fs->lock_yielders)
		pthread_cond_broadcast(&fs->lock_served_cv);
}

void
lfs_lock_yield(struct lfs_fs *fs)
{
	unsigned waiting = atomic_load(&fs->lock_waiters);
	if (!waiting)
		return;
	uint64_t until = fs->lock_served + waiting;
	fs->lock_yielders++;
	while (fs->lock_served < until)
		pthread_cond_wait(&fs->lock_served_cv, &fs->lock);
	fs->lock_yielders--;
}
