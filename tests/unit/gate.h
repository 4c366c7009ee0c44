/*
 * gate.h — hold chosen pwrites or fdatasyncs of the image (fault.h's
 * test hook) on the thread about to make them, while the test goes on:
 * to see what other requests do while one waits for the disk.
 */
#ifndef LFS_GATE_H
#define LFS_GATE_H

#include "fault.h"
#include "lfs_int.h"

#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static pthread_t gate_thread;       /* only its operations stop */
static bool gate_any;               /* or everyone's */
static int gate_entered, gate_opened;
static enum lfs_fault_op gate_op;

static inline void
gate_hook(void)
{
	pthread_mutex_lock(&gate_mu);
	if (gate_any || pthread_equal(pthread_self(), gate_thread)) {
		int me = ++gate_entered;
		pthread_cond_broadcast(&gate_cv);
		while (gate_opened < me)
			pthread_cond_wait(&gate_cv, &gate_mu);
	}
	pthread_mutex_unlock(&gate_mu);
}

static inline void
gate_reset(enum lfs_fault_op op)
{
	gate_entered = gate_opened = 0;
	gate_any = false;
	gate_op = op;
	lfs_fault_set_hook(op, gate_hook);
}

static inline void
gate_remove(void)
{
	lfs_fault_set_hook(gate_op, NULL);
}

/* Wait until `n` operations in all have reached the gate. */
static inline void
gate_wait_entered(int n)
{
	pthread_mutex_lock(&gate_mu);
	while (gate_entered < n)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
}

static inline void
gate_open_one(void)
{
	pthread_mutex_lock(&gate_mu);
	gate_opened++;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

static inline void
gate_open_all(void)
{
	pthread_mutex_lock(&gate_mu);
	gate_opened = 1 << 30;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
}

static inline int
gate_count(void)
{
	pthread_mutex_lock(&gate_mu);
	int n = gate_entered;
	pthread_mutex_unlock(&gate_mu);
	return n;
}

/* A request on a thread of its own, which the gate may stop. */
enum op { OP_FSYNC, OP_SYNCFS, OP_QUIESCE, OP_FLUSH };

struct req {
	pthread_t t;
	struct lfs_fs *fs;
	enum op op;
	uint64_t ino;
	atomic_bool done;
	int ret;
};

static inline void *
run_req(void *arg)
{
	struct req *r = arg;
	switch (r->op) {
	case OP_FSYNC:
		r->ret = lfs_fsync(r->fs, r->ino, false);
		break;
	case OP_SYNCFS:
		r->ret = lfs_syncfs(r->fs);
		break;
	case OP_QUIESCE:
		r->ret = lfs_quiesce(r->fs);
		break;
	case OP_FLUSH: /* as a request that holds the lock throughout */
		lfs_lock(r->fs);
		r->ret = lfs_flush(r->fs);
		pthread_mutex_unlock(&r->fs->lock);
		break;
	}
	atomic_store(&r->done, true);
	return NULL;
}

/* Start the request; its flushes stop at the gate. */
static inline void
req_start(struct req *r, struct lfs_fs *fs, enum op op, uint64_t ino, bool gated)
{
	*r = (struct req){ .fs = fs, .op = op, .ino = ino };
	pthread_mutex_lock(&gate_mu);
	ck_assert_int_eq(pthread_create(&r->t, NULL, run_req, r), 0);
	if (gated)
		gate_thread = r->t;
	pthread_mutex_unlock(&gate_mu);
}

/* Until n threads wait for the disk (fs->disk_waiters) or request r is
 * done, whichever comes first.  The caller then asserts which it was, so
 * a request that should wait and does not is caught at once, not after a
 * sleep that proves nothing when it is too short. */
static inline void
wait_disk_waiters(struct lfs_fs *fs, unsigned n, const struct req *r)
{
	while (atomic_load(&fs->disk_waiters) < n && !atomic_load(&r->done))
		sched_yield();
}

static inline int
req_join(struct req *r)
{
	ck_assert_int_eq(pthread_join(r->t, NULL), 0);
	return r->ret;
}

#endif
