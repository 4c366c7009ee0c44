/*
 * supervise.h — the daemon keeps its cleaner running, as mount.nilfs2
 * and nilfs_cleanerd do between them: one thread starts lfs_cleanerd,
 * waits for it to end, and starts it again after a delay that doubles
 * with each death soon after a start (1 s up to 60 s; back to 1 s after a
 * cleaner that ran a minute).  lfs-clean --stop ends it for good,
 * --start brings it back.  The cleaner's registration with the control
 * server (LFS_CTL_CLEANER_HELLO) is the event that says it started; a
 * cleaner started by hand that holds the place is waited out, never
 * doubled.
 *
 * Call lfs_supervisor_start once the control server runs, and
 * lfs_supervisor_stop (any number of times, from any thread) before the
 * control server stops.
 */
#ifndef LFS_SUPERVISE_H
#define LFS_SUPERVISE_H

#include <stdbool.h>

struct lfs_ctl_server;
struct lfs_supervisor;

/* The cleaner the daemon runs instead of the installed one: an absolute
 * path, set explicitly (the tests name the build tree's). */
#define LFS_CLEANERD_ENV "LFS_CLEANERD"

/* `prog` is the cleaner to run, by its absolute path (never searched
 * for), `conf` its -c file or NULL; with
 * `enabled` false the supervisor waits for lfs-clean --start
 * (-o nocleaner).  0 or -errno. */
int lfs_supervisor_start(struct lfs_ctl_server *ctl, const char *prog, const char *mountpoint, const char *conf,
			 bool enabled, struct lfs_supervisor **out);
/* Stop the cleaner (SIGTERM, then wait for it) and the thread. */
void lfs_supervisor_stop(struct lfs_supervisor *sv);
/* After lfs_supervisor_stop: unhook from the control server and free. */
void lfs_supervisor_free(struct lfs_supervisor *sv);

#endif
