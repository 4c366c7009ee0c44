/*
 * cleaner.h — lfs_cleanerd: policy (which segments, when) in a process
 * of its own; the mechanism (moving live blocks) stays with the daemon
 * that owns the log, reached through the control protocol (ctl_proto.h).
 */
#ifndef LFS_CLEANER_H
#define LFS_CLEANER_H

#include "ctl_proto.h"
#include "lfs.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum lfs_policy { LFS_POLICY_GREEDY, LFS_POLICY_COST_BENEFIT };

/* lfs_cleanerd.conf(5); defaults in config.c beside the keyword table */
struct lfs_cleaner_config {
	enum lfs_policy policy;
	bool age_sort;              /* rewrite live blocks oldest first */
	double min_clean_pct;       /* start cleaning below this many clean segments */
	double max_clean_pct;       /* stop once this many are clean */
	double interval_s;          /* between passes while idle */
	unsigned segs_per_pass;
	double protection_s;        /* never clean segments younger than this */
	double keep_ckpt_s;         /* plain checkpoints kept this long (the daemon keeps them) */
	double max_io_mib_s;        /* read rate limit, 0 = none */
	double scrub_interval_s;    /* a scrub this often (scrub.h), 0 = never */
	char scrub_state[1024];     /* its state file; "": lfs-scrub's default */
};

void lfs_cleaner_config_default(struct lfs_cleaner_config *c);
/* Returns 0, or -errno with a message naming the file and line. */
int lfs_cleaner_config_load(struct lfs_cleaner_config *c, const char *path, char *err, size_t errlen);

/* policy.c: pick up to max victims among dirty, old-enough segments;
 * returns how many, best first.  Pure: unit-tested on tables by hand. */
size_t lfs_policy_select(const struct lfs_cleaner_config *c, const struct lfs_ctl_seg *segs, size_t nsegs,
			 uint64_t seg_bytes, uint64_t now_ns, size_t max, uint64_t *victims);
/* The score a policy gives one segment (higher is cleaned first). */
double lfs_policy_score(enum lfs_policy p, const struct lfs_ctl_seg *s, uint64_t seg_bytes, uint64_t now_ns);

/* client.c: one connection to the daemon's control socket */
struct lfs_ctl_client {
	int fd;
};
/* Connect to the daemon serving the mount at `mountpoint`, and only to
 * it (ctl_proto.h).  Returns 0 or -errno: -ENOTSOCK not an lfs mount
 * point, -ENOTCONN no control socket, -EPERM the socket is held by
 * someone else, LFS_CTL_EUNTRUSTED the caller is root and the daemon
 * runs as a user LFS_TRUST_UID does not name, -EPROTO a malformed
 * answer; lfs_ctl_strerror() says so. */
int lfs_ctl_connect(struct lfs_ctl_client *cl, const char *mountpoint);
#define LFS_CTL_EUNTRUSTED (-EKEYREJECTED)
/* The user (a uid or a name) whose daemon root's tools trust besides root. */
#define LFS_TRUST_UID_ENV  "LFS_TRUST_UID"
const char *lfs_ctl_strerror(int err);
/* The second half of lfs_ctl_connect: connect to the socket `w` names and
 * check it is held by w->pid, as root or `owner` (whom root trusts only
 * as above). */
int lfs_ctl_connect_where(struct lfs_ctl_client *cl, const struct lfs_ctl_where *w, uid_t owner);
/* Connect to the parent process's control socket, abstract name `name`
 * (LFS_CTL_SOCKET_ENV): the cleaner a daemon starts reaches it so, never
 * opening the mount point, which would hold off an umount.  -EINVAL:
 * `name` is not one the daemon draws. */
int lfs_ctl_connect_parent(struct lfs_ctl_client *cl, const char *name);
void lfs_ctl_close(struct lfs_ctl_client *cl);
/* Send a request with payload; receive the reply header and its payload:
 * with `got`, up to out_len bytes (*got set); without, exactly out_len
 * bytes or -EPROTO.  A truncated or malformed reply is -EPROTO.  Returns
 * resp.err or -errno. */
int lfs_ctl_call(struct lfs_ctl_client *cl, struct lfs_ctl_req *req, const void *payload, size_t plen,
		 struct lfs_ctl_resp *resp, void *out, size_t out_len, size_t *got);
/* LFS_CTL_INFO: the geometry in resp->val, and the image path, which
 * must be one non-empty NUL-terminated string. */
int lfs_ctl_ask_info(struct lfs_ctl_client *cl, struct lfs_ctl_resp *resp, char path[LFS_CTL_PATH_MAX]);
/* LFS_CTL_SNAP_LIST, every record: the kept checkpoints and the newest,
 * oldest first, into *out (the caller frees it), *n of them; the bytes
 * held for them and the protection period. */
int lfs_ctl_ask_snapshots(struct lfs_ctl_client *cl, struct lfs_ckpt_info **out, size_t *n, uint64_t *held,
			  uint32_t *protect);
/* Open, read-only, the image a daemon's LFS_CTL_INFO answer (`info`,
 * `path`) names, and check that its superblock (or the backup, as the
 * mount would take it) has the geometry the daemon gave: the cleaner and
 * the scrubber read segments by it.  0, with `msg` "" or saying that the
 * backup was read; or -errno, with `msg` saying why. */
struct lfs_bdev;
struct lfs_super;
int lfs_ctl_open_image(const char *path, const struct lfs_ctl_resp *info, struct lfs_bdev *dev,
		       struct lfs_super *sb, char *msg, size_t len);

#endif
