/*
 * fuse_io.c — the daemon's reads and writes of /dev/fuse, through
 * libfuse's fuse_session_custom_io(), for what libfuse 3.14 cannot name:
 *
 *   - INIT: ask for FUSE_HANDLE_KILLPRIV_V2 when the kernel offers it.
 *     The kernel then marks the superblock SB_NOSEC and stops asking
 *     getxattr("security.capability") before every write(), and lfs
 *     clears set-user-ID and set-group-ID bits itself (fs.c);
 *   - WRITE and SETATTR: note whether the kernel asks for those bits to
 *     be cleared (the caller lacks CAP_FSETID), for the handler that
 *     the same thread runs next;
 *   - SYNCFS: answered here, since libfuse 3.14 has no operation for it
 *     and would answer ENOSYS (the kernel then stops sending it);
 *   - INIT, SETXATTR: agree FUSE_SETXATTR_EXT, so that the kernel can say
 *     that setting an ACL takes set-group-ID away (the caller is neither
 *     in the file's group nor has CAP_FSETID), and hand libfuse the
 *     SETXATTR arguments in the older layout it knows;
 *   - every request: counted by opcode, with the time from its read to
 *     its reply, and every notification the daemon sends, for
 *     lfs-requests(8) (LFS_CTL_REQUESTS);
 *   - TMPFILE (open(2) with O_TMPFILE, kernel 6.1 and later): the same
 *     arguments and reply as CREATE, with the name "/", so it is handed
 *     to libfuse as a CREATE and the handler, told so, makes an unnamed
 *     file (lfs_tmpfile);
 *   - INIT: ask for FUSE_OVER_IO_URING when the kernel offers it (the
 *     fuse module's enable_uring) and -o nouring was not given, then
 *     register the io_uring entries (fuse_ring.c).  Their requests are
 *     handed to libfuse's dispatcher (fuse_session_process_buf) after
 *     the same look as those read here, and their replies, which come
 *     through io_writev like any other, go back into the entry.  libfuse
 *     thus stays the one decoder of requests and encoder of replies, for
 *     both transports; the cost is a copy of the header and first
 *     argument (at most 168 bytes) per request.
 *
 * Every request is read and handled by the same worker thread (libfuse's
 * loop, or the ring entry's), so a thread-local variable carries what
 * was seen to the handler.
 */
#define FUSE_USE_VERSION 34
#include "fuse_io.h"
#include "fuse_uring_abi.h"
#include "lfs.h"

#include <errno.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static _Thread_local bool kill_suidgid;
static _Thread_local bool is_tmpfile;
static _Thread_local bool acl_kill_sgid;
/* the request this thread read last, until its reply is written */
static _Thread_local struct {
	uint64_t unique, t0_us;
	unsigned slot;
} pending;
/* one session per process; libfuse hands the callbacks its own userdata */
static struct lfs_fuse_io *the_io;

bool
lfs_fuse_io_kill_suidgid(void)
{
	return kill_suidgid;
}

bool
lfs_fuse_io_tmpfile(void)
{
	return is_tmpfile;
}

bool
lfs_fuse_io_acl_kill_sgid(void)
{
	return acl_kill_sgid;
}

/* A reply: into the ring entry it answers, or written to /dev/fuse. */
static ssize_t
send_reply(int fd, struct iovec *iov, int count)
{
	ssize_t n;
	if (lfs_fuse_ring_reply(iov, count, &n))
		return n;
	return writev(fd, iov, count);
}

static void
answer(int fd, uint64_t unique, int err)
{
	struct fuse_out_header out = { .len = sizeof(out), .error = err, .unique = unique };
	struct iovec iov = { &out, sizeof(out) };
	/* the kernel has the request in hand; a failed answer is its to see */
	if (send_reply(fd, &iov, 1) < 0)
		(void)0;
}

static uint64_t
now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* The request this thread read last was answered now. */
static void
served(struct lfs_fuse_io *io)
{
	uint64_t d = now_us() - pending.t0_us;
	unsigned slot = pending.slot;
	pending.unique = 0;
	atomic_fetch_add_explicit(&io->service_us[slot], d, memory_order_relaxed);
	uint64_t max = atomic_load_explicit(&io->max_us[slot], memory_order_relaxed);
	while (d > max && !atomic_compare_exchange_weak_explicit(&io->max_us[slot], &max, d, memory_order_relaxed,
								 memory_order_relaxed))
		;
}

/* INIT: what the kernel offers, for the reply (io_writev). */
static void
note_init(struct lfs_fuse_io *io, uint64_t unique, const uint8_t *arg, size_t alen)
{
	if (alen < offsetof(struct fuse_init_in, flags) + sizeof(uint32_t))
		return;
	struct fuse_init_in in;
	memset(&in, 0, sizeof(in));
	memcpy(&in, arg, alen < sizeof(in) ? alen : sizeof(in));
	pthread_mutex_lock(&io->lock);
	io->init_unique = unique;
	io->kernel_flags = in.flags;
	io->kernel_flags2 = (in.flags & FUSE_INIT_EXT) ? in.flags2 : 0;
	pthread_mutex_unlock(&io->lock);
}

/* A request of n bytes in buf, from either transport, looked at before
 * libfuse has it: counted, noted for its handler, and adapted where
 * libfuse 3.14 would misread it.  The length to hand libfuse, or 0 if
 * it was answered here. */
static ssize_t
take(struct lfs_fuse_io *io, int fd, void *buf, ssize_t n)
{
	struct fuse_in_header h;
	memcpy(&h, buf, sizeof(h));
	const uint8_t *arg = (const uint8_t *)buf + sizeof(h);
	unsigned slot = h.opcode < LFS_CTL_REQ_SLOTS ? h.opcode : LFS_CTL_REQ_SLOTS - 1;
	atomic_fetch_add_explicit(&io->requests[slot], 1, memory_order_relaxed);
	pending.unique = h.unique;
	pending.slot = slot;
	pending.t0_us = now_us();
	size_t alen = (size_t)n - sizeof(h);
	kill_suidgid = false;
	is_tmpfile = false;
	acl_kill_sgid = false;
	switch (h.opcode) {
	case FUSE_INIT:
		note_init(io, h.unique, arg, alen);
		break;
	case FUSE_WRITE:
		if (alen >= offsetof(struct fuse_write_in, write_flags) + sizeof(uint32_t)) {
			struct fuse_write_in in;
			memcpy(&in, arg, offsetof(struct fuse_write_in, write_flags) + sizeof(uint32_t));
			kill_suidgid = (in.write_flags & FUSE_WRITE_KILL_SUIDGID) != 0;
		}
		break;
	case FUSE_SETATTR:
		if (alen >= sizeof(uint32_t)) {
			uint32_t valid;
			memcpy(&valid, arg, sizeof(valid));
			kill_suidgid = (valid & FATTR_KILL_SUIDGID) != 0;
		}
		break;
	case FUSE_SETXATTR:
		pthread_mutex_lock(&io->lock);
		bool ext = io->setxattr_ext;
		pthread_mutex_unlock(&io->lock);
		if (ext && alen >= sizeof(struct fuse_setxattr_in)) {
			struct fuse_setxattr_in in;
			memcpy(&in, arg, sizeof(in));
			acl_kill_sgid = (in.setxattr_flags & FUSE_SETXATTR_ACL_KILL_SGID) != 0;
			/* libfuse 3.14 reads {size, flags}, then the name */
			uint8_t *a = (uint8_t *)buf + sizeof(h);
			memmove(a + FUSE_COMPAT_SETXATTR_IN_SIZE, a + sizeof(in), alen - sizeof(in));
			n -= (ssize_t)(sizeof(in) - FUSE_COMPAT_SETXATTR_IN_SIZE);
			h.len = (uint32_t)n;
			memcpy(buf, &h, sizeof(h));
		}
		break;
	case FUSE_TMPFILE:
		is_tmpfile = true;
		h.opcode = FUSE_CREATE;
		memcpy(buf, &h, sizeof(h));
		break;
	case FUSE_SYNCFS:
		answer(fd, h.unique, io->syncfs ? io->syncfs(io->ctx) : 0);
		served(io);
		return 0;
	}
	return n;
}

static ssize_t
io_read(int fd, void *buf, size_t len, void *userdata)
{
	(void)userdata;
	for (;;) {
		ssize_t n = read(fd, buf, len);
		if (n < (ssize_t)sizeof(struct fuse_in_header))
			return n;
		n = take(the_io, fd, buf, n);
		if (n)
			return n;
	}
}

/* A request from an io_uring entry (fuse_ring.c), on the entry's thread. */
static void
ring_request(void *ctx, void *buf, size_t len)
{
	struct lfs_fuse_io *io = ctx;
	atomic_fetch_add_explicit(&io->ring_requests, 1, memory_order_relaxed);
	ssize_t n = take(io, fuse_session_fd(io->se), buf, (ssize_t)len);
	if (n <= 0)
		return;
	struct fuse_buf fb = { .size = (size_t)n, .mem = buf };
	fuse_session_process_buf(io->se, &fb);
}

/* The INIT reply, libfuse's own buffer still ours to edit: the flags
 * libfuse 3.14 cannot name.  True if it now asks for io_uring, with
 * *payload the size the kernel wants each entry's payload buffer. */
static bool
edit_init(struct lfs_fuse_io *io, const struct fuse_out_header *out, struct iovec *iov, int count,
	  size_t *payload)
{
	if (count < 2 || iov[1].iov_len < offsetof(struct fuse_init_out, flags) + sizeof(uint32_t))
		return false;
	pthread_mutex_lock(&io->lock);
	bool init = io->init_unique && out->unique == io->init_unique && out->error == 0;
	if (init)
		io->init_unique = 0;
	uint32_t kernel = io->kernel_flags, kernel2 = io->kernel_flags2;
	pthread_mutex_unlock(&io->lock);
	if (!init)
		return false;
	struct fuse_init_out *o = iov[1].iov_base;
	if (kernel & FUSE_HANDLE_KILLPRIV_V2) {
		o->flags |= FUSE_HANDLE_KILLPRIV_V2;
		io->killpriv = true;
	}
	if ((kernel & FUSE_SETXATTR_EXT) && (o->flags & FUSE_POSIX_ACL)) {
		o->flags |= FUSE_SETXATTR_EXT;
		pthread_mutex_lock(&io->lock);
		io->setxattr_ext = true;
		pthread_mutex_unlock(&io->lock);
	}
	bool offered = (kernel2 & LFS_FUSE_OVER_IO_URING_FLAGS2) != 0;
	if (io->uring == LFS_URING_ON && !offered)
		lfs_log("fuse: -o uring, but the kernel does not offer io_uring (root enables it: echo Y > "
			"/sys/module/fuse/parameters/enable_uring): requests come over /dev/fuse");
	if (!io->ring || !offered || iov[1].iov_len < offsetof(struct fuse_init_out, flags2) + sizeof(uint32_t))
		return false;
	o->flags |= FUSE_INIT_EXT;
	o->flags2 |= LFS_FUSE_OVER_IO_URING_FLAGS2;
	/* the kernel's ring->max_payload_sz, which every entry must hold */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t pages = o->max_pages > 32 ? o->max_pages : 32; /* FUSE_DEFAULT_MAX_PAGES_PER_REQ */
	*payload = o->max_write > 8192 ? o->max_write : 8192;
	if (pages * page > *payload)
		*payload = pages * page;
	/* the tests' way to have the kernel refuse the entries: buffers
	 * smaller than it asks for (uring.sh, lfs(8) ENVIRONMENT) */
	const char *fault = getenv("LFS_URING_FAULT");
	if (fault && strcmp(fault, "register") == 0)
		*payload = page;
	return true;
}

/* After the INIT reply asked for io_uring: the entries registered, and
 * the transport said. */
static void
register_ring(struct lfs_fuse_io *io, size_t payload)
{
	int err = lfs_fuse_ring_register(io->ring, payload);
	if (err) {
		lfs_log("fuse: io_uring entries refused (%s): requests come over /dev/fuse", strerror(-err));
		return;
	}
	atomic_store(&io->transport, LFS_CTL_TRANSPORT_URING);
	lfs_log("fuse: requests come over io_uring: %u queues of %u entries, %zu KiB each", lfs_fuse_ring_queues(io->ring),
		lfs_fuse_ring_per_queue(io->ring), payload >> 10);
}

static ssize_t
io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	struct lfs_fuse_io *io = the_io;
	struct fuse_out_header out;
	if (count < 1 || iov[0].iov_len != sizeof(out))
		return writev(fd, iov, count);
	memcpy(&out, iov[0].iov_base, sizeof(out));
	if (out.unique == 0) /* a notification, not a reply */
		atomic_fetch_add_explicit(&io->notifies, 1, memory_order_relaxed);
	else if (out.unique == pending.unique)
		served(io);
	size_t payload = 0;
	bool uring = edit_init(io, &out, iov, count, &payload);
	ssize_t n = send_reply(fd, iov, count);
	/* the kernel takes REGISTER only once INIT is done, which this
	 * write did */
	if (uring && n >= 0)
		register_ring(io, payload);
	return n;
}

void
lfs_fuse_io_requests(struct lfs_fuse_io *io, bool reset, uint64_t *counts, uint64_t val[4])
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* each counter is exact; together they are a snapshot only as far
	 * as requests keep arriving while they are read */
	_Atomic uint64_t *from[3] = { io->requests, io->service_us, io->max_us };
	for (unsigned k = 0; k < 3; k++)
		for (unsigned i = 0; i < LFS_CTL_REQ_SLOTS; i++)
			counts[k * LFS_CTL_REQ_SLOTS + i] =
				reset ? atomic_exchange_explicit(&from[k][i], 0, memory_order_relaxed)
				      : atomic_load_explicit(&from[k][i], memory_order_relaxed);
	val[0] = reset ? atomic_exchange_explicit(&io->notifies, 0, memory_order_relaxed)
		       : atomic_load_explicit(&io->notifies, memory_order_relaxed);
	val[2] = atomic_load(&io->transport);
	val[3] = reset ? atomic_exchange_explicit(&io->ring_requests, 0, memory_order_relaxed)
		       : atomic_load_explicit(&io->ring_requests, memory_order_relaxed);
	pthread_mutex_lock(&io->lock);
	int64_t d = (int64_t)(now.tv_sec - io->since.tv_sec) * 1000 + (now.tv_nsec - io->since.tv_nsec) / 1000000;
	if (reset)
		io->since = now;
	pthread_mutex_unlock(&io->lock);
	val[1] = d > 0 ? (uint64_t)d : 0;
}

/* entries per queue: a handler waiting for the kernel's write-back
 * (launder_from in fuse_ops.c) needs others free on its CPU's queue */
#define LFS_RING_PER_QUEUE 4

void
lfs_fuse_io_start_ring(struct lfs_fuse_io *io)
{
	io->ring = NULL;
	/* io_uring only when asked for: a direct read past the kernel's
	 * cached end of file can still hang a queue (lfs(8), BUGS) */
	if (!io->se || io->uring != LFS_URING_ON)
		return;
	int err = lfs_fuse_ring_start(fuse_session_fd(io->se), LFS_RING_PER_QUEUE, ring_request, io, &io->ring);
	if (err)
		lfs_log("fuse: no io_uring (%s): requests come over /dev/fuse", strerror(-err));
}

int
lfs_fuse_io_attach(struct fuse_session *se, struct lfs_fuse_io *io)
{
	static const struct fuse_custom_io ops = { .read = io_read, .writev = io_writev };
	pthread_mutex_init(&io->lock, NULL);
	io->init_unique = 0;
	io->killpriv = false;
	io->setxattr_ext = false;
	io->ring = NULL;
	for (unsigned i = 0; i < LFS_CTL_REQ_SLOTS; i++)
		atomic_init(&io->requests[i], 0);
	atomic_init(&io->notifies, 0);
	atomic_init(&io->ring_requests, 0);
	atomic_init(&io->transport, LFS_CTL_TRANSPORT_DEV);
	clock_gettime(CLOCK_MONOTONIC, &io->since);
	the_io = io;
	int err = fuse_session_custom_io(se, &ops, fuse_session_fd(se));
	io->se = err ? NULL : se;
	return err;
}

void
lfs_fuse_io_detach(struct lfs_fuse_io *io)
{
	lfs_fuse_ring_stop(io->ring);
	io->ring = NULL;
}
