/* ctl_server.h — the control socket of the lfs daemon (see ctl_proto.h
 * for the transport, and why a client can trust what answers it). */
#ifndef LFS_CTL_SERVER_H
#define LFS_CTL_SERVER_H

#include "ctl_proto.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

struct lfs_fs;
struct lfs_ctl_server;

/* The abstract socket address of `name` (without the leading NUL). */
int lfs_ctl_socket_addr(const char *name, struct sockaddr_un *sa, socklen_t *len);
/* Binds a fresh unguessable name and starts listening; `image` is what
 * LFS_CTL_INFO names. */
int lfs_ctl_server_start(struct lfs_fs *fs, const char *image, struct lfs_ctl_server **out);
/* The daemon's cleaner supervisor, as the server sees it.  Each hook is
 * called without the server's lock held; any may be NULL. */
struct lfs_ctl_supervisor {
	void *ctx;
	/* LFS_CLEAN_START or LFS_CLEAN_STOP: 0 or -errno */
	int (*verb)(void *ctx, int verb);
	/* a cleaner registered (the event that says it started), or its
	 * connection closed */
	void (*registered)(void *ctx, pid_t pid);
	void (*unregistered)(void *ctx, pid_t pid);
	/* fill the supervisor's fields of the statistics: cleaner_state
	 * (used while no cleaner is registered), cleaner_restarts,
	 * cleaner_last_exit, cleaner_restart_ms */
	void (*status)(void *ctx, struct lfs_ctl_stats *st);
};
void lfs_ctl_server_set_supervisor(struct lfs_ctl_server *srv, const struct lfs_ctl_supervisor *sup);
/* The FUSE layer's request counters, as the server sees them
 * (LFS_CTL_REQUESTS): read fills 3 x LFS_CTL_REQ_SLOTS counts and the
 * reply's val[] (the notifications sent, the milliseconds counted over,
 * the transport, the requests over io_uring), and zeroes the counters
 * if `reset`.  Called without the server's lock held. */
struct lfs_ctl_requests {
	void *ctx;
	void (*read)(void *ctx, bool reset, uint64_t *counts, uint64_t val[4]);
};
void lfs_ctl_server_set_requests(struct lfs_ctl_server *srv, const struct lfs_ctl_requests *req);
/* The kernel's side of the mount, as the server sees it: forget makes
 * the kernel forget the name `name` in the root and what it looked up
 * under it (a staged tree the live tree let go).  Called without the
 * server's lock or the filesystem's held. */
struct lfs_ctl_kernel {
	void *ctx;
	void (*forget)(void *ctx, const char *name);
};
void lfs_ctl_server_set_kernel(struct lfs_ctl_server *srv, const struct lfs_ctl_kernel *k);
/* The registered cleaner's pid, 0 if none. */
pid_t lfs_ctl_server_cleaner(struct lfs_ctl_server *srv);
/* The answer to LFS_IOC_CTL_WHERE: the name and this process. */
void lfs_ctl_server_where(const struct lfs_ctl_server *srv, struct lfs_ctl_where *w);
/* Stops listening; clients still connected finish their current request
 * under the filesystem lock, so call before lfs_unmount(). */
void lfs_ctl_server_stop(struct lfs_ctl_server *srv);

#endif
