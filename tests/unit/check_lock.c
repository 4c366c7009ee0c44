/*
 * check_lock.c — lock.c: fs->lock as requests take it, and yielded to
 * them between a long job's batches.  A request blocked on the lock is
 * counted while it waits; a job that yields lets every waiting request
 * run before it goes on, however slowly they come to run, and with none
 * waiting keeps the lock without letting go of it.
 */
#include "testfs.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

struct waiter {
	struct lfs_fs *fs;
	atomic_int ran;
};

static void *
take_and_note(void *arg)
{
	struct waiter *w = arg;
	lfs_lock(w->fs);
	atomic_fetch_add(&w->ran, 1);
	pthread_mutex_unlock(&w->fs->lock);
	return NULL;
}

/* until n threads are blocked on the lock (the suite's timeout ends a
 * wait that never ends) */
static void
wait_waiters(struct lfs_fs *fs, unsigned n)
{
	while (atomic_load(&fs->lock_waiters) < n)
		usleep(1000);
	ck_assert_uint_eq(atomic_load(&fs->lock_waiters), n);
}

/* Three requests wait while a job holds the lock: yielding lets all
 * three in, in between, and the job has the lock again afterwards. */
START_TEST(yield_lets_waiters_in)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(16 << 20, 1 << 20, 1, &ino);
	struct waiter w = { .fs = fs };
	pthread_t t[3];
	lfs_lock(fs);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, take_and_note, &w), 0);
	wait_waiters(fs, 3);
	ck_assert_int_eq(atomic_load(&w.ran), 0);
	lfs_lock_yield(fs);
	ck_assert_int_eq(atomic_load(&w.ran), 3);
	ck_assert_uint_eq(atomic_load(&fs->lock_waiters), 0);
	ck_assert_int_eq(pthread_mutex_trylock(&fs->lock), EBUSY);
	pthread_mutex_unlock(&fs->lock);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	testfs_finish(fs);
}
END_TEST

static void *
try_lock(void *arg)
{
	struct lfs_fs *fs = arg;
	int r = pthread_mutex_trylock(&fs->lock);
	if (r == 0)
		pthread_mutex_unlock(&fs->lock);
	return (void *)(intptr_t)r;
}

/* With nobody waiting, a yield never lets go of the lock: another
 * thread trying it meanwhile finds it held. */
START_TEST(yield_without_waiters_keeps_lock)
{
	uint64_t ino;
	struct lfs_fs *fs = testfs_with_file(16 << 20, 1 << 20, 1, &ino);
	lfs_lock(fs);
	ck_assert_uint_eq(atomic_load(&fs->lock_waiters), 0);
	lfs_lock_yield(fs);
	pthread_t t;
	void *r;
	ck_assert_int_eq(pthread_create(&t, NULL, try_lock, fs), 0);
	ck_assert_int_eq(pthread_join(t, &r), 0);
	ck_assert_int_eq((int)(intptr_t)r, EBUSY);
	pthread_mutex_unlock(&fs->lock);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("lock", "core", 30, yield_lets_waiters_in, yield_without_waiters_keeps_lock)
