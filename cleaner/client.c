/*
 * client.c — the client end of the control socket (ctl_proto.h).
 *
 * Connecting trusts nothing but the mount: the daemon serving it names
 * its socket and pid (LFS_IOC_CTL_WHERE), and the socket reached must be
 * held by that pid, running as root or as the mount's owner.  Root's
 * tools go further and trust a daemon run by another user only when
 * LFS_TRUST_UID names that user: such a daemon may serve any image it
 * likes, and root would act on what it says.  Replies are checked for
 * length before anything in them is used.
 */
#include "cleaner.h"
#include "ctl_server.h"
#include "image.h"
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

/* The uid that mounted the FUSE filesystem with device `dev`: user_id=
 * in its super options (/proc/self/mountinfo); -ENOENT if not found. */
static int
mount_owner(dev_t dev, uid_t *owner)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	char want[32], *line = NULL;
	size_t cap = 0;
	snprintf(want, sizeof(want), "%u:%u", major(dev), minor(dev));
	int err = -ENOENT;
	while (err == -ENOENT && getline(&line, &cap, f) > 0) {
		/* id parent major:minor root mountpoint options [optional...] - fstype source superoptions */
		char devfield[32];
		if (sscanf(line, "%*s %*s %31s", devfield) != 1 || strcmp(devfield, want) != 0)
			continue;
		/* past the separator, the fstype and the source (which may
		 * hold any text but spaces): the super options */
		const char *p = strstr(line, " - ");
		for (int field = 0; p && field < 3; field++)
			if ((p = strchr(p + 1, ' ')))
				p++;
		for (; p && *p && *p != '\n'; p += strcspn(p, ",\n") + (p[strcspn(p, ",\n")] == ',')) {
			if (strncmp(p, "user_id=", 8) != 0)
				continue;
			char *end;
			unsigned long v = strtoul(p + 8, &end, 10);
			if (end != p + 8 && (*end == ',' || *end == '\n' || *end == '\0')) {
				*owner = (uid_t)v;
				err = 0;
			}
			break;
		}
	}
	free(line);
	fclose(f);
	return err;
}

/* Ask the mount at `mountpoint` where its daemon listens; fills `w` and
 * the mount's owner. */
static int
ask_mount(const char *mountpoint, struct lfs_ctl_where *w, uid_t *owner)
{
	int fd = open(mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = 0;
	struct stat st;
	memset(w, 0, sizeof(*w));
	if (ioctl(fd, LFS_IOC_CTL_WHERE, w) < 0)
		/* not the root of an lfs mount: another filesystem says
		 * ENOTTY or EINVAL, a directory inside lfs ENOTTY */
		err = errno == ENOTCONN ? -ENOTCONN : -ENOTSOCK;
	else if (fstat(fd, &st) < 0)
		err = -errno;
	close(fd);
	if (err)
		return err;
	if (w->magic == LFS_CTL_MAGIC && w->version != LFS_CTL_VERSION)
		return -EPROTONOSUPPORT;
	if (w->magic != LFS_CTL_MAGIC ||
	    strnlen(w->name, sizeof(w->name)) == sizeof(w->name) ||
	    strncmp(w->name, LFS_CTL_PREFIX, strlen(LFS_CTL_PREFIX)) != 0)
		return -EPROTO;
	return mount_owner(st.st_dev, owner);
}

/* The uid a refused daemon runs as, for lfs_ctl_strerror. */
static _Thread_local uid_t untrusted_uid;

/* Does LFS_TRUST_UID (a uid or a user name) name `uid`? */
static bool
trust_named(uid_t uid)
{
	const char *v = getenv(LFS_TRUST_UID_ENV);
	if (!v || !*v)
		return false;
	char *end;
	errno = 0;
	unsigned long n = strtoul(v, &end, 10);
	if (*end == '\0' && !errno && v[0] >= '0' && v[0] <= '9')
		return n == (unsigned long)uid;
	char buf[4096];
	struct passwd pw, *found = NULL;
	return getpwnam_r(v, &pw, buf, sizeof(buf), &found) == 0 && found && found->pw_uid == uid;
}

/* A daemon running as `uid`, the mount's owner: trusted by its owner,
 * and by root only if told to. */
static int
trust(uid_t uid)
{
	if (uid == 0 || geteuid() != 0 || trust_named(uid))
		return 0;
	untrusted_uid = uid;
	return LFS_CTL_EUNTRUSTED;
}

int
lfs_ctl_connect_where(struct lfs_ctl_client *cl, const struct lfs_ctl_where *w, uid_t owner)
{
	struct sockaddr_un sa;
	socklen_t len;
	int err = lfs_ctl_socket_addr(w->name, &sa, &len);
	if (err)
		return err;
	cl->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (cl->fd < 0)
		return -errno;
	if (connect(cl->fd, (struct sockaddr *)&sa, len) < 0) {
		err = -errno;
	} else {
		/* the server's credentials as of its listen(): a name taken
		 * over by anyone else after the daemon exited fails here */
		struct ucred cr;
		socklen_t crlen = sizeof(cr);
		if (getsockopt(cl->fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0)
			err = -errno;
		else if ((uint32_t)cr.pid != w->pid || (cr.uid != 0 && cr.uid != owner))
			err = -EPERM;
		else
			err = trust(cr.uid);
	}
	if (err) {
		close(cl->fd);
		cl->fd = -1;
	}
	return err;
}

int
lfs_ctl_connect(struct lfs_ctl_client *cl, const char *mountpoint)
{
	struct lfs_ctl_where w;
	uid_t owner = 0;
	int err = ask_mount(mountpoint, &w, &owner);
	return err ? err : lfs_ctl_connect_where(cl, &w, owner);
}

int
lfs_ctl_connect_parent(struct lfs_ctl_client *cl, const char *name)
{
	struct lfs_ctl_where w = { .magic = LFS_CTL_MAGIC, .version = LFS_CTL_VERSION, .pid = (uint32_t)getppid() };
	if (strlen(name) >= sizeof(w.name) || strncmp(name, LFS_CTL_PREFIX, strlen(LFS_CTL_PREFIX)) != 0)
		return -EINVAL;
	strcpy(w.name, name);
	/* the parent runs as this process does */
	return lfs_ctl_connect_where(cl, &w, geteuid());
}

const char *
lfs_ctl_strerror(int err)
{
	switch (err) {
	case -ENOTSOCK: return "not the mount point of an lfs filesystem";
	case -ENOTCONN: return "the lfs daemon has no control socket";
	case -EPERM: return "the control socket is not held by the daemon of this mount";
	case -EPROTO: return "the daemon's answer is malformed (another lfs version?)";
	case LFS_CTL_EUNTRUSTED: {
		static _Thread_local char msg[160];
		snprintf(msg, sizeof(msg),
			 "the daemon of this mount runs as uid %u, not root: root trusts it only with %s=%u",
			 (unsigned)untrusted_uid, LFS_TRUST_UID_ENV, (unsigned)untrusted_uid);
		return msg;
	}
	case -EPROTONOSUPPORT:
		return "the daemon speaks another version of the control protocol than this tool's (" LFS_CTL_VERSION_STR
		       "): use the tools of the lfs that is mounted";
	default: return strerror(-err);
	}
}

void
lfs_ctl_close(struct lfs_ctl_client *cl)
{
	if (cl->fd >= 0)
		close(cl->fd);
	cl->fd = -1;
}

int
lfs_ctl_call(struct lfs_ctl_client *cl, struct lfs_ctl_req *req, const void *payload, size_t plen,
	     struct lfs_ctl_resp *resp, void *out, size_t out_len, size_t *got)
{
	req->magic = LFS_CTL_MAGIC;
	req->version = LFS_CTL_VERSION;
	struct iovec iov[2] = { { req, sizeof(*req) }, { (void *)payload, plen } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = plen ? 2 : 1 };
	ssize_t sent;
	while ((sent = sendmsg(cl->fd, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	/* a daemon that turns us away replies once (-EACCES) and hangs up,
	 * maybe before our request went out: read its reason all the same */
	int send_err = sent < 0 ? -errno : 0;
	if (send_err && send_err != -EPIPE && send_err != -ECONNRESET)
		return send_err;
	struct iovec riov[2] = { { resp, sizeof(*resp) }, { out, out_len } };
	struct msghdr rh = { .msg_iov = riov, .msg_iovlen = out_len ? 2 : 1 };
	ssize_t n;
	int flags = send_err ? MSG_DONTWAIT : 0;
	while ((n = recvmsg(cl->fd, &rh, flags)) < 0 && errno == EINTR)
		;
	/* the hang-up is reported before the reply that preceded it */
	if (n < 0 && errno == ECONNRESET) {
		send_err = -ECONNRESET;
		while ((n = recvmsg(cl->fd, &rh, MSG_DONTWAIT)) < 0 && errno == EINTR)
			;
	}
	if (send_err && (n <= 0 || (size_t)n < sizeof(*resp) || resp->err == 0))
		return send_err;
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECONNRESET;
	if ((size_t)n < sizeof(*resp) || (rh.msg_flags & MSG_TRUNC) || resp->magic != LFS_CTL_MAGIC)
		return -EPROTO;
	if (resp->err > 0 || resp->err < -4095)
		return -EPROTO;
	if (resp->err)
		return resp->err;
	size_t payload_got = (size_t)n - sizeof(*resp);
	if (got)
		*got = payload_got;
	else if (payload_got != out_len)
		return -EPROTO;
	return 0;
}

int
lfs_ctl_ask_info(struct lfs_ctl_client *cl, struct lfs_ctl_resp *resp, char path[LFS_CTL_PATH_MAX])
{
	struct lfs_ctl_req req = { .op = LFS_CTL_INFO };
	size_t got = 0;
	int err = lfs_ctl_call(cl, &req, NULL, 0, resp, path, LFS_CTL_PATH_MAX, &got);
	if (err)
		return err;
	/* exactly one NUL, the last byte */
	if (got < 2 || path[got - 1] != '\0' || strlen(path) != got - 1)
		return -EPROTO;
	return 0;
}

/* One page of LFS_CTL_SNAP_LIST from checkpoint *from on, appended to
 * ci[*k..] (grown to fit); *from moves past it.  A daemon's answer is
 * checked, not trusted: the records ascend from *from on, and a page that
 * says more follow moved on. */
static int
snapshot_page(struct lfs_ctl_client *cl, struct lfs_ctl_ckpt *rec, uint64_t *from,
	      struct lfs_ckpt_info **ci, size_t *k, struct lfs_ctl_resp *resp)
{
	struct lfs_ctl_req req = { .op = LFS_CTL_SNAP_LIST, .count = LFS_CTL_MAX_RECORDS, .arg = { *from } };
	size_t got;
	int err = lfs_ctl_call(cl, &req, NULL, 0, resp, rec, LFS_CTL_REPLY_SNAP_LIST_MAX, &got);
	if (err)
		return err;
	if (got != resp->count * sizeof(*rec) || (resp->val[3] && !resp->count) ||
	    *k + resp->count > LFS_CTL_SNAP_LIST_LIMIT)
		return -EPROTO;
	struct lfs_ckpt_info *g = realloc(*ci, (*k + resp->count + 1) * sizeof(**ci));
	if (!g)
		return -ENOMEM;
	*ci = g;
	for (uint32_t i = 0; i < resp->count; i++) {
		if (rec[i].seq < *from)
			return -EPROTO;
		struct lfs_ckpt_info *c = &g[(*k)++];
		*c = (struct lfs_ckpt_info){ .seq = rec[i].seq, .time_ns = rec[i].time_ns, .flags = rec[i].flags,
					     .own_bytes = rec[i].own_bytes, .src_seq = rec[i].src_seq };
		memcpy(c->name, rec[i].name, sizeof(c->name));
		memcpy(c->src_uuid, rec[i].src_uuid, sizeof(c->src_uuid));
		c->name[sizeof(c->name) - 1] = '\0';
		*from = rec[i].seq + 1;
	}
	return 0;
}

int
lfs_ctl_ask_snapshots(struct lfs_ctl_client *cl, struct lfs_ckpt_info **out, size_t *n, uint64_t *held,
		      uint32_t *protect)
{
	struct lfs_ctl_ckpt *rec = malloc(LFS_CTL_REPLY_SNAP_LIST_MAX);
	struct lfs_ckpt_info *ci = NULL;
	size_t k = 0;
	int err = rec ? 0 : -ENOMEM;
	struct lfs_ctl_resp resp = { 0 };
	for (uint64_t from = 0; !err;) {
		err = snapshot_page(cl, rec, &from, &ci, &k, &resp);
		if (!err) {
			*held = resp.val[1];
			*protect = (uint32_t)resp.val[2];
		}
		if (!resp.val[3])
			break;
	}
	free(rec);
	if (err) {
		free(ci);
		ci = NULL;
		k = 0;
	}
	*out = ci;
	*n = k;
	return err;
}

int
lfs_ctl_open_image(const char *path, const struct lfs_ctl_resp *info, struct lfs_bdev *dev, struct lfs_super *sb,
		   char *msg, size_t len)
{
	/* msg: what is wrong, or that the backup superblock was read */
	int err = lfs_tool_open(NULL, path, &(struct lfs_tool_open){ .fd = -1, .msg = msg, .msg_len = len }, dev, sb,
				NULL);
	if (err)
		return err;
	if (sb->block_size != info->val[0] || sb->seg_blocks != info->val[1] || sb->nsegs != info->val[2] ||
	    sb->seg0 != info->val[3]) {
		snprintf(msg, len, "%s: the daemon's geometry (%llu-byte blocks, %llu per segment, %llu segments from "
			 "block %llu) is not that of the image's superblock (%u, %u, %llu, %llu)", path,
			 (unsigned long long)info->val[0], (unsigned long long)info->val[1],
			 (unsigned long long)info->val[2], (unsigned long long)info->val[3], sb->block_size,
			 sb->seg_blocks, (unsigned long long)sb->nsegs, (unsigned long long)sb->seg0);
		lfs_bdev_close(dev);
		return -EPROTO;
	}
	return 0;
}
