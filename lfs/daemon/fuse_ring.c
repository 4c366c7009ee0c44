/*
 * fuse_ring.c — layer 7: FUSE requests over io_uring (Linux 6.14 and
 * later; fuse_ring.h, fuse_uring_abi.h).
 *
 * Each ring entry is a thread of its own with its own io_uring (128-byte
 * SQEs, single issuer, task work run only while it waits), pinned to the
 * CPU whose queue the entry serves.  The kernel hands a request to an
 * idle entry of the issuing CPU's queue, so the thread woken runs where
 * the caller just went to sleep, and answering (COMMIT_AND_FETCH) and
 * waiting for the next request are one io_uring_enter.  Several entries
 * per queue, and more on demand (lfs_fuse_ring_spare): a handler that
 * waits for other requests (a notification that has the kernel write
 * back cached pages, whose WRITEs come to the notifier's own CPU queue)
 * holds its entry meanwhile, and with every entry of a queue so held
 * the WRITEs would wait for ever.  The kernel hands a queued request
 * only to an entry that commits, not to one registered later, so the
 * idle entries must be there before the wait begins.
 *
 * A request arrives split: its fuse_in_header in in_out, its first
 * argument in op_in, the rest in the payload buffer.  The entry's buffer
 * keeps LFS_RING_HEAD bytes in front of the payload, where the header and
 * first argument are copied, so the request reads as /dev/fuse would
 * deliver it without moving the payload.  The reply is the handler's
 * writev: fuse_out_header to in_out, the rest to the payload buffer.
 */
#include "fuse_ring.h"
#include "fuse_uring_abi.h"

#include <errno.h>
#include <linux/fuse.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <unistd.h>

/* room for fuse_in_header and the largest first argument, a page so that
 * the payload stays page-aligned */
#define LFS_RING_HEAD 4096u
_Static_assert(sizeof(struct fuse_in_header) + LFS_FUSE_URING_OP_IN_SZ <= LFS_RING_HEAD, "head room");

/* entries a queue may grow to (lfs_fuse_ring_spare) */
#define LFS_RING_MAX_PER_QUEUE 32u

enum { TAG_FUSE = 1, TAG_STOP = 2 };
enum phase { PH_WAIT, PH_REGISTER, PH_STOP };

struct ring_ent {
	struct lfs_fuse_ring *r;
	unsigned qid;
	pthread_t thread;
	bool started;               /* thread runs: joined at stop */
	struct io_uring ring;
	struct lfs_fuse_uring_req_header hdr;
	char *buf;                  /* LFS_RING_HEAD, then the payload */
	size_t payload;
	struct iovec iov[2];        /* read by the kernel at REGISTER */
	uint64_t unique;            /* the request in hand; 0: none */
	bool answered;              /* its reply is in the entry, commit prepared */
	int reg;                    /* protected by r->lock: 1 registered, -errno refused, 0 not yet */
};

struct lfs_fuse_ring {
	int fd;                     /* /dev/fuse */
	int stop_fd;                /* eventfd: readable once the threads are to end */
	unsigned nq, per_queue;
	unsigned n, cap;            /* entries made (protected by lock), and room for */
	_Atomic unsigned *idle;     /* by queue: registered entries waiting for a request */
	lfs_fuse_ring_handler handle;
	void *ctx;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* protected by lock */
	enum phase phase;
	size_t payload;
	unsigned made, registered;  /* threads that reported each step */
	int err;                    /* the first failure of either */
	bool stopping;
	struct ring_ent ents[];
};

/* the entry whose request this thread is serving */
static _Thread_local struct ring_ent *serving;

/* One step of a thread done: err 0 or -errno; *count the step's tally. */
static void
report(struct lfs_fuse_ring *r, unsigned *count, int err)
{
	pthread_mutex_lock(&r->lock);
	(*count)++;
	if (err && !r->err)
		r->err = err;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* A URING_CMD for the fuse device: op, and the request it answers. */
static int
prep_cmd(struct ring_ent *e, uint32_t op, uint64_t commit_id)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&e->ring);
	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, 2 * sizeof(*sqe)); /* SQE128: the command area runs into the second half */
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = e->r->fd;
	sqe->cmd_op = op;
	if (op == LFS_FUSE_URING_CMD_REGISTER) {
		sqe->addr = (uint64_t)(uintptr_t)e->iov;
		sqe->len = 2;
	}
	struct lfs_fuse_uring_cmd_req c = { .commit_id = commit_id, .qid = (uint16_t)e->qid };
	memcpy(sqe->cmd, &c, sizeof(c));
	io_uring_sqe_set_data64(sqe, TAG_FUSE);
	return 0;
}

/* The thread's io_uring: deferred task work where the kernel has it
 * (6.1), plain otherwise; 0 or -errno. */
static int
ring_init(struct ring_ent *e)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER |
					      IORING_SETUP_DEFER_TASKRUN };
	int err = io_uring_queue_init_params(4, &e->ring, &p);
	if (err == -EINVAL) {
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_SQE128;
		err = io_uring_queue_init_params(4, &e->ring, &p);
	}
	return err;
}

/* After the INIT reply that named FUSE_OVER_IO_URING the kernel holds
 * every request until each queue has an entry, or until a REGISTER
 * fails: an entry that cannot be offered sends one the kernel must
 * refuse (no such queue), so the connection falls back to /dev/fuse. */
static void
give_up(struct ring_ent *e)
{
	e->qid = UINT16_MAX;
	if (prep_cmd(e, LFS_FUSE_URING_CMD_REGISTER, 0) == 0 && io_uring_submit_and_get_events(&e->ring) >= 0) {
		struct io_uring_cqe *cqe;
		if (io_uring_wait_cqe(&e->ring, &cqe) == 0)
			io_uring_cqe_seen(&e->ring, cqe);
	}
}

/* The entry's buffers, REGISTER and the stop watch submitted; 0, or the
 * -errno the kernel refused REGISTER with. */
static int
ring_register(struct ring_ent *e, size_t payload)
{
	void *m = mmap(NULL, LFS_RING_HEAD + payload, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct io_uring_sqe *sqe = m == MAP_FAILED ? NULL : io_uring_get_sqe(&e->ring);
	int err = m == MAP_FAILED ? -errno : !sqe ? -EBUSY : 0;
	if (m != MAP_FAILED && !sqe)
		munmap(m, LFS_RING_HEAD + payload);
	if (!err) {
		e->buf = m;
		e->payload = payload;
		e->iov[0] = (struct iovec){ &e->hdr, sizeof(e->hdr) };
		e->iov[1] = (struct iovec){ e->buf + LFS_RING_HEAD, payload };
		io_uring_prep_poll_add(sqe, e->r->stop_fd, POLLIN);
		io_uring_sqe_set_data64(sqe, TAG_STOP);
		err = prep_cmd(e, LFS_FUSE_URING_CMD_REGISTER, 0);
	}
	if (!err)
		err = io_uring_submit_and_get_events(&e->ring);
	if (err < 0) {
		give_up(e);
		return err;
	}
	/* a refusal completes at once; a request may too, left for the loop */
	struct io_uring_cqe *cqe;
	if (io_uring_peek_cqe(&e->ring, &cqe) == 0 && cqe->user_data == TAG_FUSE && cqe->res < 0) {
		err = cqe->res;
		io_uring_cqe_seen(&e->ring, cqe);
		return err;
	}
	return 0;
}

/* The answer is an error of our own: the request could not be read. */
static void
answer_err(struct ring_ent *e, uint64_t unique, int err)
{
	struct fuse_out_header out = { .len = sizeof(out), .error = err, .unique = unique };
	struct iovec iov = { &out, sizeof(out) };
	ssize_t n;
	serving = e;
	e->unique = unique;
	e->answered = false;
	lfs_fuse_ring_reply(&iov, 1, &n);
	serving = NULL;
}

/* The request in the entry, rebuilt in front of its payload and handed
 * to the handler, which answers it. */
static void
serve_one(struct ring_ent *e)
{
	struct lfs_fuse_ring *r = e->r;
	struct fuse_in_header h;
	memcpy(&h, e->hdr.in_out, sizeof(h));
	uint32_t psz = e->hdr.ring_ent_in_out.payload_sz;
	size_t fixed = sizeof(h) + LFS_FUSE_URING_OP_IN_SZ;
	/* the kernel's own numbers, checked all the same: the copy below
	 * must stay inside the buffer */
	if (psz > e->payload || h.len < sizeof(h) + (size_t)psz || h.len - psz > fixed) {
		answer_err(e, h.unique, -EIO);
		return;
	}
	size_t op_len = h.len - psz - sizeof(h);
	char *start = e->buf + LFS_RING_HEAD - sizeof(h) - op_len;
	memcpy(start, &h, sizeof(h));
	memcpy(start + sizeof(h), e->hdr.op_in, op_len);
	e->unique = h.unique;
	e->answered = false;
	serving = e;
	r->handle(r->ctx, start, h.len);
	serving = NULL;
	/* every request that comes over the ring has a reply (FORGET stays
	 * on /dev/fuse); one the handler left unanswered would hold the
	 * entry for good */
	if (!e->answered)
		answer_err(e, h.unique, -EIO);
}

/* Serve until told to stop or the connection ends. */
static void
serve_loop(struct ring_ent *e)
{
	for (;;) {
		/* submits the commit the last reply prepared, then waits */
		int err = io_uring_submit_and_wait(&e->ring, 1);
		if (err < 0 && err != -EINTR)
			return;
		struct io_uring_cqe *cqe;
		if (io_uring_peek_cqe(&e->ring, &cqe) != 0)
			continue;
		uint64_t tag = cqe->user_data;
		int res = cqe->res;
		io_uring_cqe_seen(&e->ring, cqe);
		/* -ENOTCONN and the like: the mount is gone */
		if (tag != TAG_FUSE || res < 0)
			return;
		atomic_fetch_sub(&e->r->idle[e->qid], 1);
		serve_one(e);
		/* free again with the commit, submitted as it waits */
		atomic_fetch_add(&e->r->idle[e->qid], 1);
	}
}

/* Wait for the word to register: the payload size, or 0 to stop. */
static size_t
wait_phase(struct lfs_fuse_ring *r)
{
	pthread_mutex_lock(&r->lock);
	while (r->phase == PH_WAIT)
		pthread_cond_wait(&r->cond, &r->lock);
	size_t payload = r->phase == PH_REGISTER ? r->payload : 0;
	pthread_mutex_unlock(&r->lock);
	return payload;
}

static void *
ring_thread(void *arg)
{
	struct ring_ent *e = arg;
	struct lfs_fuse_ring *r = e->r;
	/* on its queue's CPU, where its requests are issued; a CPU offline
	 * now leaves the thread where the scheduler puts it */
	cpu_set_t cpus;
	CPU_ZERO(&cpus);
	CPU_SET(e->qid, &cpus);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	int err = ring_init(e);
	report(r, &r->made, err);
	if (err) {
		pthread_mutex_lock(&r->lock);
		e->reg = err;
		pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
		return NULL;
	}
	size_t payload = wait_phase(r);
	if (payload) {
		err = ring_register(e, payload);
		pthread_mutex_lock(&r->lock);
		e->reg = err ? err : 1;
		if (!err)
			atomic_fetch_add(&r->idle[e->qid], 1);
		pthread_mutex_unlock(&r->lock);
		report(r, &r->registered, err);
		if (!err)
			serve_loop(e);
	}
	io_uring_queue_exit(&e->ring);
	return NULL;
}

/* Wait until every started thread has reported a step. */
static int
wait_all(struct lfs_fuse_ring *r, unsigned *count)
{
	pthread_mutex_lock(&r->lock);
	while (*count < r->n)
		pthread_cond_wait(&r->cond, &r->lock);
	int err = r->err;
	pthread_mutex_unlock(&r->lock);
	return err;
}

int
lfs_fuse_ring_start(int fuse_fd, unsigned per_queue, lfs_fuse_ring_handler handle, void *ctx,
		    struct lfs_fuse_ring **out)
{
	*out = NULL;
	int cpus = get_nprocs_conf();
	if (cpus < 1 || cpus > 4096 || per_queue < 1 || per_queue > LFS_RING_MAX_PER_QUEUE)
		return -EINVAL;
	unsigned n = (unsigned)cpus * per_queue, cap = (unsigned)cpus * LFS_RING_MAX_PER_QUEUE;
	struct lfs_fuse_ring *r = calloc(1, sizeof(*r) + cap * sizeof(r->ents[0]));
	_Atomic unsigned *idle = calloc((size_t)cpus, sizeof(*idle));
	if (!r || !idle) {
		free(r);
		free(idle);
		return -ENOMEM;
	}
	*r = (struct lfs_fuse_ring){ .fd = fuse_fd, .nq = (unsigned)cpus, .per_queue = per_queue, .n = n,
				     .cap = cap, .idle = idle, .handle = handle, .ctx = ctx, .phase = PH_WAIT };
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (r->stop_fd < 0) {
		int err = -errno;
		lfs_fuse_ring_stop(r);
		return err;
	}
	/* the threads take no signals: the main thread's handlers end the
	 * session */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = 0;
	for (unsigned i = 0; i < n; i++) {
		struct ring_ent *e = &r->ents[i];
		*e = (struct ring_ent){ .r = r, .qid = i / per_queue };
		err = -pthread_create(&e->thread, NULL, ring_thread, e);
		if (err) {
			r->n = i; /* wait_all counts the ones running */
			break;
		}
		e->started = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	int made = wait_all(r, &r->made);
	if (!err)
		err = made;
	if (err) {
		lfs_fuse_ring_stop(r);
		return err;
	}
	*out = r;
	return 0;
}

int
lfs_fuse_ring_register(struct lfs_fuse_ring *r, size_t payload)
{
	pthread_mutex_lock(&r->lock);
	r->payload = payload;
	r->phase = PH_REGISTER;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return wait_all(r, &r->registered);
}

bool
lfs_fuse_ring_reply(const struct iovec *iov, int count, ssize_t *n)
{
	struct ring_ent *e = serving;
	struct fuse_out_header out;
	if (!e || e->answered || count < 1 || iov[0].iov_len != sizeof(out))
		return false;
	memcpy(&out, iov[0].iov_base, sizeof(out));
	if (out.unique != e->unique)
		return false;
	size_t total = 0;
	for (int i = 1; i < count; i++)
		total += iov[i].iov_len;
	char *p = e->buf + LFS_RING_HEAD;
	if (total > e->payload) {
		out.error = -EIO; /* cannot happen: the kernel sized the buffer to its largest */
		total = 0;
	}
	for (int i = 1; i < count && total; i++) {
		memmove(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	out.len = (uint32_t)(sizeof(out) + total);
	memcpy(e->hdr.in_out, &out, sizeof(out));
	e->hdr.ring_ent_in_out.payload_sz = (uint32_t)total;
	e->answered = true;
	/* submitted with the wait for the next request (serve_loop); the
	 * SQ holds four and this is the only command in it */
	if (prep_cmd(e, LFS_FUSE_URING_CMD_COMMIT_AND_FETCH, e->unique)) {
		*n = -EBUSY;
		return true;
	}
	*n = (ssize_t)out.len;
	return true;
}

/* One more entry on queue q, registered before this returns: 0, or
 * -errno (no room, stopping, refused). */
static int
add_entry(struct lfs_fuse_ring *r, unsigned q)
{
	pthread_mutex_lock(&r->lock);
	if (r->stopping || r->phase != PH_REGISTER || r->n >= r->cap) {
		pthread_mutex_unlock(&r->lock);
		return -ENOSPC;
	}
	struct ring_ent *e = &r->ents[r->n];
	*e = (struct ring_ent){ .r = r, .qid = q };
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int err = -pthread_create(&e->thread, NULL, ring_thread, e);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err) {
		e->started = true;
		r->n++;
		while (!e->reg)
			pthread_cond_wait(&r->cond, &r->lock);
		err = e->reg < 0 ? e->reg : 0;
	}
	pthread_mutex_unlock(&r->lock);
	return err;
}

void
lfs_fuse_ring_spare(unsigned want)
{
	struct ring_ent *e = serving;
	if (!e)
		return;
	while (atomic_load(&e->r->idle[e->qid]) < want)
		if (add_entry(e->r, e->qid))
			return;
}

unsigned
lfs_fuse_ring_queues(const struct lfs_fuse_ring *r)
{
	return r->nq;
}

unsigned
lfs_fuse_ring_per_queue(const struct lfs_fuse_ring *r)
{
	return r->per_queue;
}

void
lfs_fuse_ring_stop(struct lfs_fuse_ring *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->phase = r->phase == PH_WAIT ? PH_STOP : r->phase;
	r->stopping = true; /* no more spares: r->n is final */
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	if (r->stop_fd >= 0 && eventfd_write(r->stop_fd, 1) != 0)
		(void)0; /* a counter at its maximum is still readable */
	for (unsigned i = 0; i < r->n; i++) {
		struct ring_ent *e = &r->ents[i];
		if (e->started)
			pthread_join(e->thread, NULL);
		if (e->buf)
			munmap(e->buf, LFS_RING_HEAD + e->payload);
	}
	if (r->stop_fd >= 0)
		close(r->stop_fd);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	free((void *)r->idle);
	free(r);
}
