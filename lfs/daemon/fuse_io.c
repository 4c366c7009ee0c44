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
 *     file (lfs_tmpfile).
 *
 * Every request is read and handled by the same worker thread (libfuse's
 * loop), so a thread-local variable carries what was seen to the handler.
 */
#define FUSE_USE_VERSION 34
#include "fuse_io.h"

#include <errno.h>
#include <linux/fuse.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static _Thread_local bool kill_suidgid;
static _Thread_local bool tmpfile;
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
	return tmpfile;
}

bool
lfs_fuse_io_acl_kill_sgid(void)
{
	return acl_kill_sgid;
}

static void
answer(int fd, uint64_t unique, int err)
{
	struct fuse_out_header out = { .len = sizeof(out), .error = err, .unique = unique };
	/* the kernel has the request in hand; a failed answer is its to see */
	if (write(fd, &out, sizeof(out)) < 0)
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

static ssize_t
io_read(int fd, void *buf, size_t len, void *userdata)
{
	(void)userdata;
	struct lfs_fuse_io *io = the_io;
	for (;;) {
		ssize_t n = read(fd, buf, len);
		if (n < (ssize_t)sizeof(struct fuse_in_header))
			return n;
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
		tmpfile = false;
		acl_kill_sgid = false;
		switch (h.opcode) {
		case FUSE_INIT:
			if (alen >= offsetof(struct fuse_init_in, flags) + sizeof(uint32_t)) {
				struct fuse_init_in in;
				memset(&in, 0, sizeof(in));
				memcpy(&in, arg, alen < sizeof(in) ? alen : sizeof(in));
				pthread_mutex_lock(&io->lock);
				io->init_unique = h.unique;
				io->kernel_flags = in.flags;
				pthread_mutex_unlock(&io->lock);
			}
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
			tmpfile = true;
			h.opcode = FUSE_CREATE;
			memcpy(buf, &h, sizeof(h));
			break;
		case FUSE_SYNCFS:
			answer(fd, h.unique, io->syncfs ? io->syncfs(io->ctx) : 0);
			served(io);
			continue;
		}
		return n;
	}
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
	if (count >= 2 && iov[1].iov_len >= offsetof(struct fuse_init_out, flags) + sizeof(uint32_t)) {
		pthread_mutex_lock(&io->lock);
		bool init = io->init_unique && out.unique == io->init_unique && out.error == 0;
		if (init)
			io->init_unique = 0;
		uint32_t kernel = io->kernel_flags;
		pthread_mutex_unlock(&io->lock);
		/* the reply is libfuse's own buffer, still ours to edit */
		struct fuse_init_out *o = iov[1].iov_base;
		if (init && (kernel & FUSE_HANDLE_KILLPRIV_V2)) {
			o->flags |= FUSE_HANDLE_KILLPRIV_V2;
			io->killpriv = true;
		}
		if (init && (kernel & FUSE_SETXATTR_EXT) && (o->flags & FUSE_POSIX_ACL)) {
			o->flags |= FUSE_SETXATTR_EXT;
			pthread_mutex_lock(&io->lock);
			io->setxattr_ext = true;
			pthread_mutex_unlock(&io->lock);
		}
	}
	return writev(fd, iov, count);
}

void
lfs_fuse_io_requests(struct lfs_fuse_io *io, bool reset, uint64_t *counts, uint64_t *notifies, uint64_t *ms)
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
	*notifies = reset ? atomic_exchange_explicit(&io->notifies, 0, memory_order_relaxed)
			  : atomic_load_explicit(&io->notifies, memory_order_relaxed);
	pthread_mutex_lock(&io->lock);
	int64_t d = (int64_t)(now.tv_sec - io->since.tv_sec) * 1000 + (now.tv_nsec - io->since.tv_nsec) / 1000000;
	if (reset)
		io->since = now;
	pthread_mutex_unlock(&io->lock);
	*ms = d > 0 ? (uint64_t)d : 0;
}

int
lfs_fuse_io_attach(struct fuse_session *se, struct lfs_fuse_io *io)
{
	static const struct fuse_custom_io ops = { .read = io_read, .writev = io_writev };
	pthread_mutex_init(&io->lock, NULL);
	io->init_unique = 0;
	io->killpriv = false;
	io->setxattr_ext = false;
	for (unsigned i = 0; i < LFS_CTL_REQ_SLOTS; i++)
		atomic_init(&io->requests[i], 0);
	atomic_init(&io->notifies, 0);
	clock_gettime(CLOCK_MONOTONIC, &io->since);
	the_io = io;
	return fuse_session_custom_io(se, &ops, fuse_session_fd(se));
}
