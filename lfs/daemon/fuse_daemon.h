/*
 * fuse_daemon.h — the lfs daemon's state, shared by its operations
 * (fuse_ops.c) and its main program (fuse_main.c): options, the session
 * and the helpers it runs.
 */
#ifndef LFS_FUSE_DAEMON_H
#define LFS_FUSE_DAEMON_H

#include "ctl_server.h"
#include "fuse_cache.h"
#include "fuse_io.h"
#include "supervise.h"

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define LFS_MAX_WRITE (1u << 20)
/* background requests (writeback's WRITEs) the kernel lets out at once */
#define LFS_MAX_BACKGROUND 64

/* the kernel's cache times, seconds, unless -o cache_timeout, entry_timeout */
#define LFS_ATTR_TIMEOUT 1.0
#define LFS_ENTRY_TIMEOUT 600.0

struct lfs_daemon {
	struct lfs_fs *fs;
	struct fuse_session *se;
	double timeout;             /* attribute cache, seconds */
	double entry_timeout;       /* names and negative lookups, seconds */
	pthread_t ticker;
	pthread_t reclaimer;          /* lfs_reclaim_serve, for a read-write mount */
	volatile int stop;
	struct lfs_supervisor *sup; /* NULL: no cleaner (read-only, no control socket) */
	struct lfs_ctl_server *ctl; /* NULL: no control socket */
	bool no_open;               /* the kernel opens files without asking us */
	bool no_opendir;            /* and directories */
	bool acl;                   /* offer POSIX ACLs (not -o noacl) */
	bool dont_mask;             /* the umask is ours to apply (FUSE_CAP_DONT_MASK) */
	bool writeback;             /* the kernel buffers writes (not -o writethrough) */
	/* held by the one short direct read at a time that asks the kernel
	 * to write back what it buffers (op_read): the WRITEs that asks for
	 * always find a thread of the loop free to serve them */
	pthread_mutex_t flush_past_eof;
	struct lfs_fuse_cache cache; /* what those buffered writes may need */
	uint64_t usable;            /* bytes the filesystem holds, for the cache's bound */
	struct lfs_fuse_io io;
	bool quiesced;              /* DESTROY: the final checkpoint is written */
	const char *mountpoint;     /* for the syncfs before a shutdown */
	uint64_t mounted_ns;        /* lfs_daemon_now_ns at the mount; 0: not mounted */
	bool unmount_logged;
};

/* A monotonic clock, in ns. */
uint64_t lfs_daemon_now_ns(void);
/* The line at unmount, once: where, after how long, and whether the
 * final checkpoint was written (err: what lfs_quiesce returned; ro:
 * the filesystem was read-only, so nothing was). */
void lfs_daemon_log_unmount(struct lfs_daemon *d, int err, bool ro);

/* The operations, with a struct lfs_daemon as the session's userdata. */
extern const struct fuse_lowlevel_ops lfs_fuse_ops;
/* FUSE_SYNCFS, answered by fuse_io.c: ctx is the struct lfs_fs. */
int lfs_daemon_syncfs(void *ctx);
/* LFS_CTL_REQUESTS, from the control server's thread: ctx is the
 * daemon's struct lfs_fuse_io. */
void lfs_daemon_requests(void *ctx, bool reset, uint64_t *counts, uint64_t val[4]);

#endif
