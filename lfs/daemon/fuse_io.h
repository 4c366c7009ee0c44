/*
 * fuse_io.h — the daemon's own reads and writes of /dev/fuse (fuse_io.c):
 * protocol features libfuse 3.14 does not name.
 */
#ifndef LFS_FUSE_IO_H
#define LFS_FUSE_IO_H

#include <fuse_lowlevel.h>
#include "ctl_proto.h"
#include "fuse_ring.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* -o uring, -o nouring, or neither: /dev/fuse for now (lfs(8), BUGS) */
enum lfs_uring_mode { LFS_URING_AUTO, LFS_URING_ON, LFS_URING_OFF };

struct lfs_fuse_io {
	/* answers FUSE_SYNCFS: 0 or -errno */
	int (*syncfs)(void *ctx);
	void *ctx;
	enum lfs_uring_mode uring;  /* set before lfs_fuse_io_attach */
	bool killpriv;              /* FUSE_HANDLE_KILLPRIV_V2 was agreed */
	struct fuse_session *se;
	/* the io_uring transport, NULL if none was started; registered once
	 * the INIT reply asked for it */
	struct lfs_fuse_ring *ring;
	/* protected by lock: the INIT exchange */
	pthread_mutex_t lock;
	uint64_t init_unique;
	uint32_t kernel_flags, kernel_flags2;
	bool setxattr_ext;          /* FUSE_SETXATTR_EXT was agreed */
	/* every request read, by opcode (ctl_proto.h, LFS_CTL_REQ_SLOTS),
	 * and every notification written: relaxed atomics, a few ns beside
	 * the tens of microseconds a request costs */
	_Atomic uint64_t requests[LFS_CTL_REQ_SLOTS];
	/* and the time from each request's read to its reply, in µs: the
	 * sum and the longest, by opcode (requests without a reply, FORGET
	 * and BATCH_FORGET, have none) */
	_Atomic uint64_t service_us[LFS_CTL_REQ_SLOTS];
	_Atomic uint64_t max_us[LFS_CTL_REQ_SLOTS];
	_Atomic uint64_t notifies;
	/* of the requests, those taken from the io_uring entries */
	_Atomic uint64_t ring_requests;
	_Atomic uint64_t transport;   /* LFS_CTL_TRANSPORT_* */
	struct timespec since;      /* protected by lock: when counting (re)started */
};

/* Take over the session's reads and writes (after fuse_session_mount). */
int lfs_fuse_io_attach(struct fuse_session *se, struct lfs_fuse_io *io);
/* The io_uring transport's threads, waiting for INIT to ask for them,
 * unless io->uring says not to or the kernel does not offer it: after
 * the daemon has detached (fuse_daemonize forks), before the session
 * loop reads INIT. */
void lfs_fuse_io_start_ring(struct lfs_fuse_io *io);
/* Once the session loop has ended: the io_uring threads end. */
void lfs_fuse_io_detach(struct lfs_fuse_io *io);
/* The counters (LFS_CTL_REQUESTS): copies them out (`counts` holds
 * 3 x LFS_CTL_REQ_SLOTS: requests, service_us, max_us), and val[] as
 * the reply's (ctl_proto.h: notifications, milliseconds counted over,
 * transport, requests over io_uring); zeroes them if `reset`. */
void lfs_fuse_io_requests(struct lfs_fuse_io *io, bool reset, uint64_t *counts, uint64_t val[4]);
/* Whether the request this thread is handling asks that set-user-ID and
 * set-group-ID bits be cleared (the caller lacks CAP_FSETID). */
bool lfs_fuse_io_kill_suidgid(void);
/* Whether the CREATE this thread is handling was an O_TMPFILE open. */
bool lfs_fuse_io_tmpfile(void);
/* Whether the SETXATTR this thread is handling must clear set-group-ID
 * if it sets an access ACL (FUSE_SETXATTR_ACL_KILL_SGID). */
bool lfs_fuse_io_acl_kill_sgid(void);

#endif
