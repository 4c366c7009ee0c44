/*
 * fuse_main.c — layer 6: the FUSE low-level glue and the lfs daemon.
 *
 * Each handler translates one request into one lfs.h call and sends
 * exactly one reply; lfs.h already speaks -errno, so nothing is
 * translated.  The session loop runs a few threads: the core serializes
 * on one lock, but fetching and answering requests overlaps with it.  A
 * tick thread runs the flush and checkpoint timers.
 *
 *   lfs [-f] [-o OPTIONS] IMAGE MOUNTPOINT
 */
#define FUSE_USE_VERSION 34
#include "ctl_server.h"
#include "format.h"
#include "fuse_cache.h"
#include "fuse_io.h"
#include "loopdev.h"
#include "supervise.h"
#include "tool.h"
#include "lfs.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LFS_MAX_WRITE (1u << 20)

struct lfs_daemon {
	struct lfs_fs *fs;
	struct fuse_session *se;
	double timeout;             /* entry and attribute cache, seconds */
	pthread_t ticker;
	volatile int stop;
	struct lfs_supervisor *sup; /* NULL: no cleaner (read-only, no control socket) */
	struct lfs_ctl_server *ctl; /* NULL: no control socket */
	bool no_open;               /* the kernel opens files without asking us */
	bool no_opendir;            /* and directories */
	bool acl;                   /* offer POSIX ACLs (not -o noacl) */
	bool dont_mask;             /* the umask is ours to apply (FUSE_CAP_DONT_MASK) */
	bool writeback;             /* the kernel buffers writes (not -o writethrough) */
	struct lfs_fuse_cache cache; /* what those buffered writes may need */
	uint64_t usable;            /* bytes the filesystem holds, for the cache's bound */
	struct lfs_fuse_io io;
	bool quiesced;              /* DESTROY: the final checkpoint is written */
	const char *mountpoint;     /* for the syncfs before a shutdown */
};

static struct lfs_daemon *
D(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct lfs_fs *
FS(fuse_req_t req)
{
	return D(req)->fs;
}

static void
reply_entry(fuse_req_t req, int err, const struct stat *st)
{
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.ino = st->st_ino;
	e.attr = *st;
	e.attr_timeout = D(req)->timeout;
	e.entry_timeout = D(req)->timeout;
	fuse_reply_entry(req, &e);
}

static struct lfs_cred
cred_of(fuse_req_t req)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct lfs_cred cr = { c->uid, c->gid, D(req)->dont_mask ? c->umask : 0 };
	return cr;
}

static void
op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct lfs_daemon *d = userdata;
	/* With the writeback cache the kernel accepts buffered writes on its
	 * own and a full filesystem is noticed only at writeback, reported at
	 * fsync or close (lfs(8), BUGS); without it (-o writethrough) every
	 * write() reaches the daemon, which can refuse it with ENOSPC. */
	if (d->writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE)) {
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
		/* room for what the cache holds (fuse_cache.c) */
		lfs_set_cache_headroom(d->fs, lfs_fuse_cache_headroom(&d->cache, d->usable));
	} else {
		d->writeback = false;
		conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	}
	/* An open holds nothing the kernel's lookup reference does not:
	 * answering the first OPEN with ENOSYS saves a round trip per open
	 * and its RELEASE.  O_TRUNC then must come as a SETATTR, since the
	 * kernel skips the truncating SETATTR when it thinks OPEN did it. */
	if (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) {
		d->no_open = true;
		conn->want &= ~(unsigned)FUSE_CAP_ATOMIC_O_TRUNC;
	}
	/* A directory's open holds nothing either (readdir is by offset):
	 * ENOSYS to the first OPENDIR saves OPENDIR and RELEASEDIR, two
	 * round trips of every ls. */
	if (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT)
		d->no_opendir = true;
	conn->max_write = LFS_MAX_WRITE;
	conn->max_readahead = LFS_MAX_WRITE;
	conn->want &= ~(unsigned)FUSE_CAP_POSIX_LOCKS; /* the kernel does local locks */
	conn->want &= ~(unsigned)FUSE_CAP_FLOCK_LOCKS;
	if (conn->capable & FUSE_CAP_IOCTL_DIR)
		conn->want |= FUSE_CAP_IOCTL_DIR; /* LFS_IOC_CTL_WHERE on the mountpoint */
	/* POSIX ACLs: the kernel checks them (default_permissions) and keeps
	 * them in system.posix_acl_* attributes; it then leaves the umask to
	 * us, since a directory's default ACL replaces it (acl.c) */
	if (d->acl && (conn->capable & FUSE_CAP_POSIX_ACL) && (conn->capable & FUSE_CAP_DONT_MASK)) {
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
		d->dont_mask = true;
	}
	lfs_set_acl(d->fs, d->dont_mask);
}

static void
op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct stat st;
	int err = lfs_lookup(FS(req), parent, name, &st);
	if (err == -ENOENT) {
		/* a negative entry the kernel may cache: only we change the tree */
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		e.entry_timeout = D(req)->timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	reply_entry(req, err, &st);
}

static void
op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	lfs_forget(FS(req), ino, nlookup);
	fuse_reply_none(req);
}

static void
op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		lfs_forget(FS(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void
op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	int err = 0;
	double timeout = D(req)->timeout;
	/* A file handle comes with the kernel's check before a buffered
	 * write() (fuse_cache.c).  Near full, a file written back is marked:
	 * its writer's next write() is told ENOSPC if writers have no room
	 * (once: a reader at the end of the file may be the one told), and
	 * while the room left is below the headroom, the attributes are
	 * given for no time, so that every write() asks again. */
	if (fi && D(req)->writeback && lfs_fuse_cache_take(&D(req)->cache, ino)) {
		err = lfs_space_check(FS(req));
		if (err == 1) {
			lfs_fuse_cache_mark(&D(req)->cache, ino);
			timeout = 0;
			err = 0;
		}
	}
	if (!err)
		err = lfs_getattr(FS(req), ino, &st);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_attr(req, &st, timeout);
}

static bool
caller_in_group(void *ctx, gid_t gid)
{
	fuse_req_t req = ctx;
	if (fuse_req_ctx(req)->gid == gid)
		return true;
	gid_t groups[256];
	int n = fuse_req_getgroups(req, 256, groups);
	for (int i = 0; i < n && i < 256; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/* Privileges a write or truncate takes away (lfs_drop_privs): the kernel
 * leaves them to us once FUSE_HANDLE_KILLPRIV_V2 is agreed. */
static int
drop_privs(fuse_req_t req, fuse_ino_t ino)
{
	if (!D(req)->io.killpriv)
		return 0;
	struct lfs_caller who = { caller_in_group, req };
	return lfs_drop_privs(FS(req), ino, lfs_fuse_io_kill_suidgid() ? &who : NULL);
}

static void
op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	(void)fi;
	static const struct { int fuse, lfs; } map[] = {
		{ FUSE_SET_ATTR_MODE, LFS_SET_MODE }, { FUSE_SET_ATTR_UID, LFS_SET_UID },
		{ FUSE_SET_ATTR_GID, LFS_SET_GID }, { FUSE_SET_ATTR_SIZE, LFS_SET_SIZE },
		{ FUSE_SET_ATTR_ATIME, LFS_SET_ATIME }, { FUSE_SET_ATTR_MTIME, LFS_SET_MTIME },
		{ FUSE_SET_ATTR_ATIME_NOW, LFS_SET_ATIME_NOW }, { FUSE_SET_ATTR_MTIME_NOW, LFS_SET_MTIME_NOW },
		{ FUSE_SET_ATTR_CTIME, LFS_SET_CTIME },
	};
	int set = 0;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (to_set & map[i].fuse)
			set |= map[i].lfs;
	struct stat st;
	int err = 0;
	if (set & LFS_SET_SIZE)
		err = drop_privs(req, ino);
	if (err >= 0)
		err = lfs_setattr(FS(req), ino, attr, set, &st);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_attr(req, &st, D(req)->timeout);
}

static void
op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[4097];
	int n = lfs_readlink(FS(req), ino, buf, sizeof(buf));
	if (n < 0)
		fuse_reply_err(req, -n);
	else
		fuse_reply_readlink(req, buf);
}

static void
op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	struct lfs_cred c = cred_of(req);
	struct stat st;
	int err = lfs_mknod(FS(req), parent, name, mode, rdev, &c, &st);
	reply_entry(req, err, &st);
}

static void
op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct lfs_cred c = cred_of(req);
	struct stat st;
	int err = lfs_mkdir(FS(req), parent, name, mode, &c, &st);
	reply_entry(req, err, &st);
}

static void
op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct lfs_cred c = cred_of(req);
	struct stat st;
	int err = lfs_symlink(FS(req), parent, name, link, &c, &st);
	reply_entry(req, err, &st);
}

static void
op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct stat st;
	int err = lfs_link(FS(req), ino, newparent, newname, &st);
	reply_entry(req, err, &st);
}

static void
op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, -lfs_unlink(FS(req), parent, name));
}

static void
op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, -lfs_rmdir(FS(req), parent, name));
}

static void
op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname,
	  unsigned int flags)
{
	unsigned f = 0;
	if (flags & RENAME_NOREPLACE)
		f |= LFS_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		f |= LFS_RENAME_EXCHANGE;
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* the kernel has checked CAP_MKNOD for a whiteout */
	struct lfs_cred c = cred_of(req);
	fuse_reply_err(req, -((flags & RENAME_WHITEOUT)
				      ? lfs_rename_whiteout(FS(req), parent, name, newparent, newname, f, &c)
				      : lfs_rename(FS(req), parent, name, newparent, newname, f)));
}

static void
op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (D(req)->no_open) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	int err = lfs_open(FS(req), ino, fi->flags);
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	fi->keep_cache = 1; /* we are the only writer: cached pages stay valid */
	fuse_reply_open(req, fi);
}

static void
op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	struct lfs_cred c = cred_of(req);
	struct stat st;
	int err = lfs_fuse_io_tmpfile() ? lfs_tmpfile(FS(req), parent, mode, &c, &st)
				       : lfs_create(FS(req), parent, name, mode, (fi->flags & O_EXCL) != 0, &c, &st);
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	struct fuse_entry_param e;
	memset(&e, 0, sizeof(e));
	e.ino = st.st_ino;
	e.attr = st;
	e.attr_timeout = e.entry_timeout = D(req)->timeout;
	fi->keep_cache = 1;
	/* Once opens bypass us the kernel sends no RELEASE for a created file
	 * either; the lookup reference the reply carries keeps the inode. */
	if (D(req)->no_open)
		lfs_release(FS(req), st.st_ino);
	fuse_reply_create(req, &e, fi);
}

static void
op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	char *buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ssize_t n = lfs_read(FS(req), ino, buf, size, off);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void
op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	bool allocated = false;
	/* the kernel no longer clears privileges itself (fuse_io.c) */
	int dropped = drop_privs(req, ino);
	if (dropped < 0) {
		fuse_reply_err(req, -dropped);
		return;
	}
	bool headroom = false;
	ssize_t n = fi->writepage ? lfs_write_cached(FS(req), ino, buf, size, off, &allocated, &headroom)
				  : lfs_write(FS(req), ino, buf, size, off, &allocated);
	allocated |= dropped > 0;
	if (headroom)
		lfs_fuse_cache_mark(&D(req)->cache, ino);
	allocated |= headroom;
	/* st_blocks changed under the kernel's attribute cache: drop the
	 * cached attributes (offset -1 leaves the page cache alone) */
	if (allocated)
		fuse_lowlevel_notify_inval_inode(D(req)->se, ino, -1, 0);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void
op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	/* without opens, creates were released when made (op_create) */
	fuse_reply_err(req, D(req)->no_open ? 0 : -lfs_release(FS(req), ino));
}

static void
op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)fi;
	fuse_reply_err(req, -lfs_fsync(FS(req), ino, datasync != 0));
}

static void
op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (D(req)->no_opendir) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	struct stat st;
	int err = lfs_getattr(FS(req), ino, &st);
	if (!err && !S_ISDIR(st.st_mode))
		err = -ENOTDIR;
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_open(req, fi);
}

struct dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size, used;
};

static int
fill_dir(void *ctx, const char *name, const struct stat *st, off_t next)
{
	struct dirbuf *b = ctx;
	size_t need = fuse_add_direntry(b->req, NULL, 0, name, NULL, 0);
	if (b->used + need > b->size)
		return 1;
	fuse_add_direntry(b->req, b->buf + b->used, b->size - b->used, name, st, next);
	b->used += need;
	return 0;
}

static void
op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	struct dirbuf b = { req, malloc(size ? size : 1), size, 0 };
	if (!b.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	int err = lfs_readdir(FS(req), ino, off, fill_dir, &b);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_buf(req, b.buf, b.used);
	free(b.buf);
}

static void
op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void
op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	op_fsync(req, ino, datasync, fi);
}

static void
op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	struct statvfs st;
	int err = lfs_statfs(FS(req), &st);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_statfs(req, &st);
}

static void
op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size, int flags)
{
	fuse_reply_err(req, -lfs_setxattr_kill_sgid(FS(req), ino, name, value, size, flags,
						    lfs_fuse_io_acl_kill_sgid()));
}

static void
reply_xattr(fuse_req_t req, ssize_t n, const char *buf, size_t size)
{
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

static void
op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	reply_xattr(req, lfs_getxattr(FS(req), ino, name, buf, size), buf, size);
	free(buf);
}

static void
op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *buf = size ? malloc(size) : NULL;
	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	reply_xattr(req, lfs_listxattr(FS(req), ino, buf, size), buf, size);
	free(buf);
}

static void
op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fuse_reply_err(req, -lfs_removexattr(FS(req), ino, name));
}

static void
op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length, struct fuse_file_info *fi)
{
	(void)fi;
	fuse_reply_err(req, -lfs_fallocate(FS(req), ino, mode, offset, length));
}

/* Sent at unmount only for fuseblk mounts, and umount(2) waits for the
 * answer: so the final checkpoint is written here, before it returns. */
static void
op_destroy(void *userdata)
{
	struct lfs_daemon *d = userdata;
	lfs_supervisor_stop(d->sup);
	lfs_quiesce(d->fs);
	d->quiesced = true;
}

static int
daemon_syncfs(void *ctx)
{
	return lfs_syncfs(ctx);
}

/* LFS_CTL_REQUESTS, from the control server's thread */
static void
daemon_requests(void *ctx, bool reset, uint64_t *counts, uint64_t *notifies, uint64_t *ms)
{
	lfs_fuse_io_requests(ctx, reset, counts, notifies, ms);
}

/* FS_IOC_SHUTDOWN or LFS_IOC_SHUTDOWN (ctl_proto.h): 0 or -errno.  A
 * full sync first has the kernel write back its dirty pages (syncfs on
 * the mountpoint, answered by the other worker threads), as ext4's
 * freeze does, then lfs_shutdown writes what the daemon holds. */
static int
do_shutdown(fuse_req_t req, unsigned cmd, const void *in_buf, size_t in_bufsz)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	if (c->uid != 0 && c->uid != getuid())
		return -EPERM;
	uint32_t how = LFS_SHUTDOWN_FULLSYNC;
	if (cmd == LFS_IOC_SHUTDOWN) {
		if (in_bufsz < sizeof(how))
			return -EINVAL;
		memcpy(&how, in_buf, sizeof(how));
	}
	if (how > LFS_SHUTDOWN_NOLOGFLUSH)
		return -EINVAL;
	if (how == LFS_SHUTDOWN_FULLSYNC && D(req)->mountpoint) {
		int fd = open(D(req)->mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || syncfs(fd) < 0)
			lfs_log("shutdown: syncfs of %s: %s; the kernel's dirty pages are lost",
				D(req)->mountpoint, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	return lfs_shutdown(FS(req), how);
}

/* chattr(1)'s flags lfs keeps, as FS_IOC_GETFLAGS and FS_IOC_FSGETXATTR
 * name them. */
static const struct { uint32_t fl, xflag, lfs; } file_flags[] = {
	{ FS_NODUMP_FL, FS_XFLAG_NODUMP, LFS_DI_NODUMP },
	{ FS_NOATIME_FL, FS_XFLAG_NOATIME, LFS_DI_NOATIME },
};

/* lfs's flags as the ioctl's (`x`: xflags), or back: the bits of `in`
 * with no counterpart stay in *rest. */
static uint32_t
map_flags(uint32_t in, bool from_lfs, bool x, uint32_t *rest)
{
	uint32_t out = 0;
	for (size_t i = 0; i < sizeof(file_flags) / sizeof(file_flags[0]); i++) {
		uint32_t ours = x ? file_flags[i].xflag : file_flags[i].fl;
		uint32_t from = from_lfs ? file_flags[i].lfs : ours, to = from_lfs ? ours : file_flags[i].lfs;
		if (in & from) {
			out |= to;
			in &= ~from;
		}
	}
	*rest = in;
	return out;
}

/* FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_IOC_FSGETXATTR, FS_IOC_FSSETXATTR
 * (lsattr, chattr, xfs_io), through the kernel's fileattr calls: it has
 * checked that the caller owns the file (and CAP_LINUX_IMMUTABLE for i
 * and a), asks for the old flags before setting new ones, and passes an
 * int or a struct fsxattr each way.  Immutable and append-only are
 * refused (EOPNOTSUPP, which the kernel turns into ENOTTY), not kept:
 * under the writeback cache, and with opens not sent to the daemon,
 * open(2) and write(2) never reach it in time to be refused (lfs(8)).
 * Returns 0 or -errno; *reply_len bytes of `out` are the answer. */
static int
file_flags_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned cmd, const void *in_buf, size_t in_bufsz,
		 size_t out_bufsz, void *out, size_t *reply_len)
{
	bool x = cmd == FS_IOC_FSGETXATTR || cmd == FS_IOC_FSSETXATTR;
	size_t len = x ? sizeof(struct fsxattr) : sizeof(uint32_t);
	uint32_t lf, rest;
	int err;
	*reply_len = 0;
	if (cmd == FS_IOC_GETFLAGS || cmd == FS_IOC_FSGETXATTR) {
		if (out_bufsz < len)
			return -EINVAL;
		if ((err = lfs_get_flags(FS(req), ino, &lf)))
			return err;
		uint32_t fl = map_flags(lf, true, x, &rest);
		if (x) {
			struct fsxattr fa;
			memset(&fa, 0, sizeof(fa));
			fa.fsx_xflags = fl;
			memcpy(out, &fa, sizeof(fa));
		} else {
			memcpy(out, &fl, sizeof(fl));
		}
		*reply_len = len;
		return 0;
	}
	if (in_bufsz < len)
		return -EINVAL;
	uint32_t fl;
	if (x) {
		struct fsxattr fa;
		memcpy(&fa, in_buf, sizeof(fa));
		/* nothing but flags: no extent size hints, no projects */
		if (fa.fsx_extsize || fa.fsx_projid || fa.fsx_cowextsize)
			return -EOPNOTSUPP;
		fl = fa.fsx_xflags;
	} else {
		memcpy(&fl, in_buf, sizeof(fl));
	}
	lf = map_flags(fl, false, x, &rest);
	err = rest ? -EOPNOTSUPP : lfs_set_flags(FS(req), ino, lf);
	/* ctime moved under the kernel's attribute cache */
	if (!err)
		fuse_lowlevel_notify_inval_inode(D(req)->se, ino, -1, 0);
	return err;
}

/* Only the daemon serving this mount can answer an ioctl on it: that is
 * how a client learns which control socket is ours (ctl_proto.h). */
static void
op_ioctl(fuse_req_t req, fuse_ino_t ino, int cmd, void *arg, struct fuse_file_info *fi, unsigned flags,
	 const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	(void)arg;
	(void)fi;
	(void)flags;
	if ((unsigned)cmd == LFS_IOC_SHUTDOWN || (unsigned)cmd == LFS_FS_IOC_SHUTDOWN) {
		int err = do_shutdown(req, (unsigned)cmd, in_buf, in_bufsz);
		if (err)
			fuse_reply_err(req, -err);
		else
			fuse_reply_ioctl(req, 0, NULL, 0);
		return;
	}
	unsigned c = (unsigned)cmd;
	if (c == FS_IOC_GETFLAGS || c == FS_IOC_SETFLAGS || c == FS_IOC_FSGETXATTR || c == FS_IOC_FSSETXATTR) {
		struct fsxattr out;
		size_t len;
		int err = file_flags_ioctl(req, ino, c, in_buf, in_bufsz, out_bufsz, &out, &len);
		if (err)
			fuse_reply_err(req, -err);
		else
			fuse_reply_ioctl(req, 0, len ? &out : NULL, len);
		return;
	}
	struct lfs_ctl_where w;
	if ((unsigned)cmd != LFS_IOC_CTL_WHERE || ino != FUSE_ROOT_ID || out_bufsz < sizeof(w)) {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	if (!D(req)->ctl) {
		fuse_reply_err(req, ENOTCONN);
		return;
	}
	lfs_ctl_server_where(D(req)->ctl, &w);
	fuse_reply_ioctl(req, 0, &w, sizeof(w));
}

static const struct fuse_lowlevel_ops lfs_ops = {
	.init = op_init,
	.destroy = op_destroy,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	/* no .flush: libfuse answers ENOSYS and the kernel stops sending
	 * FLUSH; close() still writes back and reports the page cache's
	 * errors before it would have asked */
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.create = op_create,
	.fallocate = op_fallocate,
	.ioctl = op_ioctl,
};

/* ---------------------------------------------------------------- */

static void *
ticker(void *arg)
{
	struct lfs_daemon *d = arg;
	for (unsigned n = 0; !d->stop; n++) {
		usleep(200 * 1000);
		if (!d->stop)
			lfs_tick(d->fs);
		/* the kernel keeps the bound as a share of a dirty limit that
		 * follows free memory */
		if (d->writeback && n % 25 == 0)
			lfs_set_cache_headroom(d->fs, lfs_fuse_cache_headroom(&d->cache, d->usable));
	}
	return NULL;
}

struct cmdline {
	char *image;
	char *mountpoint;
	int foreground;
	int show_help;
	int show_version;
	unsigned ckpt_interval;
	unsigned ckpt_segs;
	unsigned flush_ms;
	unsigned dirty_mb;
	char *trace;
	char *cache;                /* -o cache=SIZE */
	char *fault;
	int no_cleaner;
	char *cleaner_conf;
	double timeout;
	int ro;
	unsigned max_ratio;
	int writethrough;
	int noacl;
	int noblkdev;
	char *log;
	/* the standard mount options lfs honours itself (opt_proc) */
	enum lfs_atime atime;
	int nodiratime;
	int sync, dirsync;
};

#define OPT(t, p) { t, offsetof(struct cmdline, p), 1 }
static const struct fuse_opt lfs_fuse_opts[] = {
	OPT("ckpt_interval=%u", ckpt_interval),
	OPT("ckpt_segs=%u", ckpt_segs),
	OPT("flush_ms=%u", flush_ms),
	OPT("dirty_mb=%u", dirty_mb),
	OPT("cache=%s", cache),
	OPT("trace=%s", trace),
	OPT("fault=%s", fault),
	OPT("nocleaner", no_cleaner),
	OPT("cleaner_conf=%s", cleaner_conf),
	OPT("cache_timeout=%lf", timeout),
	OPT("max_ratio=%u", max_ratio),
	OPT("writethrough", writethrough),
	OPT("noacl", noacl),
	OPT("noblkdev", noblkdev),
	OPT("log=%s", log),
	OPT("-f", foreground),
	OPT("-h", show_help),
	OPT("--help", show_help),
	OPT("-V", show_version),
	OPT("--version", show_version),
	FUSE_OPT_END
};

static int
opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct cmdline *c = data;
	(void)outargs;
	if (key == FUSE_OPT_KEY_NONOPT) {
		if (!c->image) {
			c->image = realpath(arg, NULL);
			if (!c->image) {
				fprintf(stderr, "lfs: %s: %s\n", arg, strerror(errno));
				return -1;
			}
			return 0;
		}
		if (!c->mountpoint) {
			c->mountpoint = realpath(arg, NULL);
			if (!c->mountpoint) {
				fprintf(stderr, "lfs: %s: %s\n", arg, strerror(errno));
				return -1;
			}
			return 0;
		}
		fprintf(stderr, "lfs: unexpected argument '%s'\n", arg);
		return -1;
	}
	if (key != FUSE_OPT_KEY_OPT)
		return 1;
	/* mount(8)'s standard options: libfuse knows some (it passes them
	 * to the kernel as mount flags: 1 keeps them), the rest are lfs's
	 * alone (0 drops them).  The kernel leaves atime to a FUSE daemon,
	 * and fsyncs data writes itself on a sync mount. */
	static const struct { const char *name; int keep; } std[] = {
		{ "ro", 1 }, { "rw", 1 }, { "atime", 1 }, { "noatime", 1 }, { "relatime", 0 },
		{ "strictatime", 0 }, { "nodiratime", 0 }, { "diratime", 0 }, { "lazytime", 0 },
		{ "nolazytime", 0 }, { "sync", 1 }, { "async", 1 }, { "dirsync", 1 },
	};
	for (size_t i = 0; i < sizeof(std) / sizeof(std[0]); i++) {
		if (strcmp(arg, std[i].name) != 0)
			continue;
		if (strcmp(arg, "ro") == 0 || strcmp(arg, "rw") == 0)
			c->ro = arg[1] == 'o';
		else if (strcmp(arg, "noatime") == 0)
			c->atime = LFS_ATIME_NOATIME;
		else if (strcmp(arg, "atime") == 0 || strcmp(arg, "relatime") == 0)
			c->atime = LFS_ATIME_RELATIME; /* "atime": Linux's default meaning since 2.6.30 */
		else if (strcmp(arg, "strictatime") == 0)
			c->atime = LFS_ATIME_STRICT;
		else if (strcmp(arg, "nodiratime") == 0 || strcmp(arg, "diratime") == 0)
			c->nodiratime = arg[0] == 'n';
		else if (strcmp(arg, "sync") == 0 || strcmp(arg, "async") == 0)
			c->sync = arg[0] == 's';
		else if (strcmp(arg, "dirsync") == 0)
			c->dirsync = 1;
		/* lazytime: atime updates stay in memory until the next flush
		 * anyway; nothing to change */
		return std[i].keep;
	}
	if (strcmp(arg, "remount") == 0 || strncmp(arg, "remount,", 8) == 0) {
		fprintf(stderr, "lfs: -o remount: a mounted lfs is switched by mount -o remount through "
			"mount.fuse.lfs(8), or by lfs-clean --ro|--rw MOUNTPOINT; this would start a second daemon\n");
		return -1;
	}
	return 1;
}

static void
cmdline_free(struct cmdline *c, struct fuse_args *args)
{
	fuse_opt_free_args(args);
	free(c->image);
	free(c->mountpoint);
	free(c->trace);
	free(c->cache);
	free(c->fault);
	free(c->cleaner_conf);
	free(c->log);
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: lfs [-f] [-o OPTIONS] IMAGE MOUNTPOINT\n\n"
	       "lfs options (see lfs(8)):\n"
	       "    -o ckpt_interval=N   checkpoint every N seconds (default 30, 0 = off)\n"
	       "    -o ckpt_segs=M       checkpoint after M segments written (default 32, 0 = off)\n"
	       "    -o flush_ms=N        write buffered data to the log every N ms (default 5000)\n"
	       "    -o dirty_mb=N        flush when N MiB are buffered (default 64)\n"
	       "    -o cache=SIZE        inode cache budget, K/M/G suffix (default 32M, 0 = no limit)\n"
	       "    -o nocleaner         do not start lfs_cleanerd\n"
	       "    -o cleaner_conf=F    config file for lfs_cleanerd\n"
	       "    -o cache_timeout=S   kernel entry/attribute cache time (default 1.0)\n"
	       "    -o max_ratio=N       share of the dirty page cache the mount may use, %% (default 40)\n"
	       "    -o log=FILE          append messages to FILE (default: stderr with -f; else\n"
	       "                         syslog, or /var/log/lfs.log or ~/.lfs.log without one)\n"
	       "    -o noblkdev          plain FUSE mount, not fuseblk over a loop device (root):\n"
	       "                         sync(1) and umount then do not wait for the daemon\n"
	       "    -o writethrough      every write() reaches the daemon: a full filesystem fails\n"
	       "                         it with ENOSPC at write(), not at fsync or close\n"
	       "    -o noacl             no POSIX ACLs (the kernel checks the mode bits alone)\n"
	       "    -o trace=FILE        record every block write and flush (crash tests)\n"
	       "    -o fault=OP:N:ERR    make the Nth pread/pwrite/fdatasync/alloc fail (tests)\n"
	       "    -o relatime, atime, strictatime, noatime, nodiratime, diratime, lazytime, nolazytime\n"
	       "                         when reads update atime (default relatime)\n"
	       "    -o sync, dirsync, async  changes on disk before the reply (default async)\n"
	       "    -f                   stay in the foreground\n"
	       "    -h, --help           print this text\n"
	       "    -V, --version        print the version\n"
	       "and the generic FUSE mount options (ro, allow_other, ...).\n");
}

/* The cleaner: next to this program in a build tree, else where
 * make install put it, else on PATH. */
static const char *
cleaner_path(char *buf, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(buf, len, "%s/../cleaner/lfs_cleanerd", self);
			if (access(buf, X_OK) == 0)
				return buf;
		}
	}
	snprintf(buf, len, "%s/lfs_cleanerd", LFS_SBINDIR);
	if (access(buf, X_OK) == 0)
		return buf;
	return "lfs_cleanerd";
}

/* Where messages go once detached: -o log=FILE; else syslog if the host
 * has one; else a file named now, on standard error, while it is seen. */
static int
choose_log(struct cmdline *c)
{
	char path[PATH_MAX];
	if (c->log) {
		snprintf(path, sizeof(path), "%s", c->log);
	} else if (c->foreground) {
		return 0;
	} else if (lfs_log_syslog_present()) {
		lfs_log_use_syslog(true);
		setenv("LFS_LOG", "syslog", 1); /* for the cleaner */
		return 0;
	} else if (getuid() == 0) {
		snprintf(path, sizeof(path), "/var/log/lfs.log");
	} else {
		const char *home = getenv("HOME");
		snprintf(path, sizeof(path), "%s/.lfs.log", home ? home : "/tmp");
	}
	int err = lfs_log_to_file(path);
	if (err) {
		fprintf(stderr, "lfs: log file %s: %s\n", path, strerror(-err));
		return err;
	}
	if (!c->log)
		fprintf(stderr, "lfs: no syslog on this host: messages go to %s\n", path);
	return 0;
}

int
main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct cmdline c = { .timeout = 1.0, .ckpt_interval = UINT_MAX, .ckpt_segs = UINT_MAX,
			   .flush_ms = UINT_MAX, .dirty_mb = UINT_MAX, .max_ratio = UINT_MAX };
	if (fuse_opt_parse(&args, &c, lfs_fuse_opts, opt_proc) == -1) {
		cmdline_free(&c, &args);
		return 2;
	}
	if (c.show_help || c.show_version) {
		if (c.show_help)
			usage(stdout);
		else
			lfs_tool_version("lfs");
		cmdline_free(&c, &args);
		return 0;
	}
	if (!c.image || !c.mountpoint) {
		usage(stderr);
		cmdline_free(&c, &args);
		return 2;
	}
	if (c.cleaner_conf) {
		/* the daemon changes directory to / when it detaches */
		char *abs = realpath(c.cleaner_conf, NULL);
		if (!abs) {
			fprintf(stderr, "lfs: cleaner_conf %s: %s\n", c.cleaner_conf, strerror(errno));
			cmdline_free(&c, &args);
			return 2;
		}
		free(c.cleaner_conf);
		c.cleaner_conf = abs;
	}
	struct lfs_opts o;
	lfs_opts_default(&o);
	if (c.ckpt_interval != UINT_MAX)
		o.ckpt_interval_s = c.ckpt_interval;
	if (c.ckpt_segs != UINT_MAX)
		o.ckpt_segs = c.ckpt_segs;
	if (c.flush_ms != UINT_MAX)
		o.flush_interval_ms = c.flush_ms ? c.flush_ms : 1;
	if (c.dirty_mb != UINT_MAX)
		o.dirty_limit = c.dirty_mb ? (uint64_t)c.dirty_mb << 20 : 1;
	if (c.cache && lfs_parse_size(c.cache, &o.cache_bytes)) {
		fprintf(stderr, "lfs: cache=%s: not a size (a number, with K, M, G or T)\n", c.cache);
		cmdline_free(&c, &args);
		return 2;
	}
	o.trace_path = c.trace;
	o.fault = c.fault ? c.fault : getenv("LFS_FAULT");
	o.readonly = c.ro;
	o.hold_lock = true; /* one daemon per image, read-only or not */
	o.atime = c.atime;
	o.nodiratime = c.nodiratime;
	o.sync = c.sync;
	o.dirsync = c.dirsync;

	/* libfuse judges its options only when the session is made: a bad
	 * one must be refused before the image is opened or recovered */
	struct fuse_args probe = FUSE_ARGS_INIT(0, NULL);
	for (int i = 0; i < args.argc; i++)
		fuse_opt_add_arg(&probe, args.argv[i]);
	struct fuse_session *check = fuse_session_new(&probe, &lfs_ops, sizeof(lfs_ops), NULL);
	fuse_opt_free_args(&probe);
	if (!check) {
		fprintf(stderr, "lfs: bad mount options; nothing was mounted\n");
		cmdline_free(&c, &args);
		return 2;
	}
	fuse_session_destroy(check);

	struct lfs_daemon d = { .timeout = c.timeout, .writeback = !c.writethrough, .acl = !c.noacl };
	lfs_fuse_cache_init(&d.cache);
	int err = lfs_mount(c.image, &o, &d.fs);
	if (err) {
		fprintf(stderr, "lfs: cannot mount %s: %s\n", c.image, strerror(-err));
		lfs_fuse_cache_free(&d.cache);
		cmdline_free(&c, &args);
		return 1;
	}
	/* As root, mount fuseblk: the kernel then passes sync(1) and
	 * syncfs(2) on (FUSE_SYNCFS) and umount(2) waits for FUSE_DESTROY.
	 * An image file gets a loop device as the mount's source. */
	char source[PATH_MAX] = "";
	int loop_fd = -1;
	struct stat ist;
	if (getuid() == 0 && !c.noblkdev && stat(c.image, &ist) == 0) {
		if (S_ISBLK(ist.st_mode)) {
			snprintf(source, sizeof(source), "%s", c.image);
		} else if ((loop_fd = lfs_loop_attach(c.image, source, sizeof(source))) < 0) {
			lfs_log("no loop device for %s (%s): a plain FUSE mount, which sync(1) and "
				"umount do not wait for", c.image, strerror(-loop_fd));
			source[0] = '\0';
		}
	}
	char fsname[PATH_MAX + 16];
	snprintf(fsname, sizeof(fsname), "-ofsname=%s", source[0] ? source : c.image);
	fuse_opt_add_arg(&args, fsname);
	if (source[0])
		fuse_opt_add_arg(&args, "-oblkdev");
	fuse_opt_add_arg(&args, "-osubtype=lfs");
	fuse_opt_add_arg(&args, "-odefault_permissions");
	if (getuid() == 0)
		fuse_opt_add_arg(&args, "-oallow_other");

	struct fuse_session *se = fuse_session_new(&args, &lfs_ops, sizeof(lfs_ops), &d);
	d.se = se;
	d.mountpoint = c.mountpoint;
	int ret = 1;
	if (!se)
		goto out_fs;
	if (fuse_set_signal_handlers(se))
		goto out_se;
	int mounted = fuse_session_mount(se, c.mountpoint);
	/* the mount holds the loop device now, or it never will */
	if (loop_fd >= 0)
		close(loop_fd);
	if (mounted)
		goto out_sig;
	d.io.syncfs = daemon_syncfs;
	d.io.ctx = d.fs;
	err = lfs_fuse_io_attach(se, &d.io);
	bool counted = !err;        /* the requests are counted where they are read */
	if (err)
		lfs_log("fuse: own request handling unavailable (%s): the kernel will ask for "
			"security.capability before every write, and no request is counted",
			strerror(err < 0 ? -err : err));
	struct statvfs sv;
	if (lfs_statfs(d.fs, &sv) == 0)
		d.usable = (uint64_t)sv.f_blocks * sv.f_frsize;
	lfs_fuse_cache_setup(&d.cache, c.mountpoint, d.usable, c.max_ratio);
	if ((err = choose_log(&c))) {
		ret = 1;
		goto out_unmount;
	}
	fuse_daemonize(c.foreground);
	/* the cleaner, started with -f, writes to our standard error */
	if (lfs_log_fd() >= 0)
		dup2(lfs_log_fd(), STDERR_FILENO);
	pthread_create(&d.ticker, NULL, ticker, &d);
	struct lfs_ctl_server *ctl = NULL;
	err = lfs_ctl_server_start(d.fs, c.image, &ctl);
	if (err)
		lfs_log("control socket for %s: %s (no cleaner, no lfs-ckpt)", c.mountpoint, strerror(-err));
	d.ctl = ctl;
	if (ctl && counted) {
		struct lfs_ctl_requests rq = { &d.io, daemon_requests };
		lfs_ctl_server_set_requests(ctl, &rq);
	}
	/* supervised: restarted when it dies, started and stopped by
	 * lfs-clean; a read-only mount has nothing to clean */
	char cleaner[PATH_MAX + 32];
	if (!err && !c.ro && (err = lfs_supervisor_start(ctl, cleaner_path(cleaner, sizeof(cleaner)), c.mountpoint,
							 c.cleaner_conf, !c.no_cleaner, &d.sup)))
		lfs_log("cannot supervise a cleaner: %s", strerror(-err));
	/* several threads: one can be in the kernel fetching or answering
	 * requests while another holds the filesystem lock */
	struct fuse_loop_config lc = { .clone_fd = 0, .max_idle_threads = 4 };
	ret = fuse_session_loop_mt(se, &lc) ? 1 : 0;
	lfs_supervisor_stop(d.sup);
	lfs_supervisor_free(d.sup);
	d.sup = NULL;
	d.ctl = NULL;
	lfs_ctl_server_stop(ctl);
	d.stop = 1;
	pthread_join(d.ticker, NULL);
out_unmount:
	fuse_session_unmount(se);
out_sig:
	fuse_remove_signal_handlers(se);
out_se:
	fuse_session_destroy(se);
out_fs:
	if (lfs_unmount(d.fs))
		ret = 1;
	lfs_fuse_cache_free(&d.cache);
	cmdline_free(&c, &args);
	return ret;
}

