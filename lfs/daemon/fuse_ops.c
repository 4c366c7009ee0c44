/*
 * fuse_ops.c — layer 7: the FUSE low-level operations of the lfs daemon
 * (the table lfs_fuse_ops, which fuse_main.c hands libfuse).
 *
 * Each handler translates one request into one lfs.h call and sends
 * exactly one reply; lfs.h already speaks -errno, so nothing is
 * translated.  Handlers run on libfuse's worker threads; the core
 * serializes on its own lock.
 */
#define FUSE_USE_VERSION 34
#include "fuse_daemon.h"
#include "format.h"
#include "lfs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A change refused room is made again once the reclaimer has made some
 * (lfs_room_wait): the request waits for it holding nothing, rather than
 * checkpointing and cleaning in its own time while the others wait. */
#define WITH_ROOM(req, res, call)                                             \
	do {                                                                  \
		unsigned tries_ = 0;                                          \
		do                                                            \
			(res) = (call);                                       \
		while ((res) == -ENOSPC && lfs_room_wait(FS(req), &tries_));  \
	} while (0)

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

/* Near full, a regular file's attributes are given for no time, so that
 * every buffered write() asks first (fuse_cache.c). */
static double
attr_timeout(fuse_req_t req, const struct stat *st)
{
	return S_ISREG(st->st_mode) && D(req)->writeback && lfs_fuse_cache_asking(&D(req)->cache) ? 0
														 : D(req)->timeout;
}

/* The entry of an inode the reply gives the kernel a reference to.  Its
 * generation goes into the kernel's file handles (lfs(8), EXPORTING),
 * and must be the same in every reply; the root's is 0, what the kernel
 * gave the root it made itself at mount (a root that seemed to change
 * generation would be marked bad).  0 or -errno. */
static int
fill_entry(fuse_req_t req, const struct stat *st, struct fuse_entry_param *e)
{
	uint32_t gen = 0;
	int err = st->st_ino == FUSE_ROOT_ID ? 0 : lfs_generation(FS(req), st->st_ino, &gen);
	memset(e, 0, sizeof(*e));
	e->ino = st->st_ino;
	e->generation = gen;
	e->attr = *st;
	e->attr_timeout = attr_timeout(req, st);
	e->entry_timeout = D(req)->entry_timeout;
	return err;
}

/* A reply of the entry of an inode lfs has given a reference to, the
 * name cached for entry_timeout: on an error the reference goes back,
 * since the kernel will not take it. */
static void
reply_entry_for(fuse_req_t req, int err, const struct stat *st, double entry_timeout)
{
	struct fuse_entry_param e;
	if (!err && (err = fill_entry(req, st, &e)))
		lfs_forget(FS(req), st->st_ino, 1);
	e.entry_timeout = entry_timeout;
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_entry(req, &e);
}

static void
reply_entry(fuse_req_t req, int err, const struct stat *st)
{
	reply_entry_for(req, err, st, D(req)->entry_timeout);
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
		/* A buffered write marks its whole pages up to date before its
		 * WRITE reaches us; a GETATTR that sees the new mtime meanwhile
		 * would make the kernel drop them and read the old bytes back.
		 * Only this mount changes a file's data, so nothing is lost. */
		conn->want &= ~(unsigned)FUSE_CAP_AUTO_INVAL_DATA;
	}
	/* An open holds nothing the kernel's lookup reference does not:
	 * answering the first OPEN with ENOSYS saves a round trip per open
	 * and its RELEASE.  O_TRUNC then must come as a SETATTR, since the
	 * kernel skips the truncating SETATTR when it thinks OPEN did it.
	 * Under the writeback cache the OPEN is kept: its handle tells a
	 * read's GETATTR from a write()'s near full (fuse_cache.c). */
	if ((conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) && !d->writeback) {
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
	/* The kernel's writeback sends a WRITE per run of dirty pages, one
	 * page each under random overwrites, and holds back all but
	 * max_background of them (12 by default).  When a few wait for the
	 * reclaimer's round, writeback of the whole mount crawls at a few
	 * pages a round and the writers' dirty-page throttling stalls them
	 * for many seconds; more in flight keeps writeback moving (bench
	 * cleanlat).  The kernel caps it for mounts by other users
	 * (fs.fuse.max_user_bgreq). */
	conn->max_background = LFS_MAX_BACKGROUND;
	conn->congestion_threshold = LFS_MAX_BACKGROUND * 3 / 4;
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
	/* file handles that outlive the kernel's inode (NFS, fanotify): it
	 * asks us for "." in the inode's number, and ".." of a directory */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
}

static void
op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct stat st;
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	/* a staged tree (lfs-receive) is for root and the daemon's user; its
	 * name is in no directory and comes and goes through the control
	 * socket, behind the kernel's back: never cached */
	bool staged = parent == FUSE_ROOT_ID && !strncmp(name, LFS_STAGED_PREFIX, strlen(LFS_STAGED_PREFIX));
	int err = staged && ctx->uid && ctx->uid != getuid() ? -ENOENT : lfs_lookup(FS(req), parent, name, &st);
	double entry_timeout = staged ? 0 : D(req)->entry_timeout;
	if (err == -ENOENT) {
		/* a negative entry the kernel may cache: only we change the tree */
		struct fuse_entry_param e;
		memset(&e, 0, sizeof(e));
		e.entry_timeout = entry_timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	reply_entry_for(req, err, &st, entry_timeout);
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

/* A handle's fh says whether it may write (op_open): a read past the end
 * asks the same GETATTR as a write() does, and must not be refused. */
#define FH_WRITABLE 1u

static uint64_t
fh_for(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY ? FH_WRITABLE : 0;
}

/* A number from the "key" line of /proc/PID/status, parsed as hex for
 * the capability sets, else decimal; false if there is none to read
 * (a caller outside our pid namespace). */
static bool
proc_status(pid_t pid, const char *key, unsigned long long *v)
{
	char path[40], line[128];
	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	FILE *f = pid > 0 ? fopen(path, "re") : NULL;
	if (!f)
		return false;
	bool found = false, hex = strncmp(key, "Cap", 3) == 0;
	size_t len = strlen(key);
	while (!found && fgets(line, sizeof(line), f))
		found = strncmp(line, key, len) == 0 && sscanf(line + len, hex ? "%llx" : "%llu", v) == 1;
	fclose(f);
	return found;
}

/* The caller's process: the kernel names the thread. */
static uint64_t
caller_tgid(fuse_req_t req)
{
	pid_t pid = fuse_req_ctx(req)->pid;
	unsigned long long tgid;
	return proc_status(pid, "Tgid:", &tgid) ? tgid : (uint64_t)pid;
}

/* The check before a buffered write() of a handle that may write
 * (fuse_cache.c), of a file of `size` bytes stored: -ENOSPC where its
 * writer must be told, else 0.  A marked process is told at a file
 * still empty, where its next write() would begin a new one: a read
 * past the end asks the same, and a full file is what it reads back. */
static int
write_check(fuse_req_t req, fuse_ino_t ino, off_t size)
{
	struct lfs_fuse_cache *c = &D(req)->cache;
	int room = lfs_space_check(FS(req), lfs_fuse_cache_hard(c));
	if (room == LFS_ROOM_FAR)
		lfs_fuse_cache_ask(c, false);
	if (room == LFS_ROOM_SPENT)
		return -ENOSPC;
	if (room != LFS_ROOM_NONE)
		return 0; /* the filesystem's own errors come at writeback */
	uint64_t tgid = size == 0 && lfs_fuse_cache_writers(c) ? caller_tgid(req) : 0;
	if (!lfs_fuse_cache_marked(c, ino, tgid))
		return 0;
	unsigned tries = 0;
	while (room == LFS_ROOM_NONE && lfs_room_wait(FS(req), &tries))
		room = lfs_space_check(FS(req), lfs_fuse_cache_hard(c));
	/* every round made room, which the writeback of data the kernel
	 * holds took first: room is being made, so the writer is not told
	 * yet, only asked again at its next write() */
	if (room == LFS_ROOM_SPENT || (room == LFS_ROOM_NONE && !lfs_room_spent(tries))) {
		lfs_fuse_cache_unmark(c);
		return -ENOSPC;
	}
	return 0;
}

static void
op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;
	/* A file handle comes with the kernel's check before a buffered
	 * write() (fuse_cache.c), and before a read past the end. */
	int err = lfs_getattr(FS(req), ino, &st);
	if (!err && fi && (fi->fh & FH_WRITABLE) && D(req)->writeback && lfs_fuse_cache_asking(&D(req)->cache))
		err = write_check(req, ino, st.st_size);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_attr(req, &st, attr_timeout(req, &st));
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

/* Whether the caller has CAP_FSETID, which the kernel does not tell with
 * a chown: its thread's effective set in /proc or, where that cannot be
 * read, whether it is root. */
static bool
caller_fsetid(fuse_req_t req)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	unsigned long long caps;
	return proc_status(c->pid, "CapEff:", &caps) ? (caps >> CAP_FSETID & 1) : c->uid == 0;
}

/* chown keeps set-group-ID without group execution for a caller in the
 * file's group or with CAP_FSETID (Linux's in_group_or_capable) */
static bool
caller_in_group_or_fsetid(void *ctx, gid_t gid)
{
	return caller_in_group(ctx, gid) || caller_fsetid(ctx);
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
	/* Once the kernel leaves privileges to us, a chown(2) of -1, -1 comes
	 * as a SETATTR of nothing (ctime alone under the writeback cache):
	 * the kernel sends one only for privileges to go. */
	if (D(req)->io.killpriv && !(set & ~LFS_SET_CTIME))
		set |= LFS_SET_CHOWN;
	struct lfs_caller who = { caller_in_group_or_fsetid, req };
	struct stat st;
	int err = 0;
	if (set & LFS_SET_SIZE)
		err = drop_privs(req, ino);
	if (err >= 0)
		WITH_ROOM(req, err, lfs_setattr_as(FS(req), ino, attr, set, &who, &st));
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_attr(req, &st, attr_timeout(req, &st));
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
	int err;
	WITH_ROOM(req, err, lfs_mknod(FS(req), parent, name, mode, rdev, &c, &st));
	reply_entry(req, err, &st);
}

static void
op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct lfs_cred c = cred_of(req);
	struct stat st;
	int err;
	WITH_ROOM(req, err, lfs_mkdir(FS(req), parent, name, mode, &c, &st));
	reply_entry(req, err, &st);
}

static void
op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	struct lfs_cred c = cred_of(req);
	struct stat st;
	int err;
	WITH_ROOM(req, err, lfs_symlink(FS(req), parent, name, link, &c, &st));
	reply_entry(req, err, &st);
}

static void
op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct stat st;
	int err;
	WITH_ROOM(req, err, lfs_link(FS(req), ino, newparent, newname, &st));
	reply_entry(req, err, &st);
}

static void
op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int err;
	WITH_ROOM(req, err, lfs_unlink(FS(req), parent, name));
	fuse_reply_err(req, -err);
}

static void
op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	int err;
	WITH_ROOM(req, err, lfs_rmdir(FS(req), parent, name));
	fuse_reply_err(req, -err);
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
	int err;
	WITH_ROOM(req, err,
		  (flags & RENAME_WHITEOUT) ? lfs_rename_whiteout(FS(req), parent, name, newparent, newname, f, &c)
					    : lfs_rename(FS(req), parent, name, newparent, newname, f));
	fuse_reply_err(req, -err);
}

static void
op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (D(req)->no_open) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	int err;
	WITH_ROOM(req, err, lfs_open(FS(req), ino, fi->flags));
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	fi->keep_cache = 1; /* we are the only writer: cached pages stay valid */
	fi->fh = fh_for(fi->flags);
	fuse_reply_open(req, fi);
}

static void
op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	struct lfs_cred c = cred_of(req);
	struct stat st;
	bool tmpfile = lfs_fuse_io_tmpfile();
	int err;
	WITH_ROOM(req, err,
		  tmpfile ? lfs_tmpfile(FS(req), parent, mode, &c, &st)
			  : lfs_create(FS(req), parent, name, mode, (fi->flags & O_EXCL) != 0, &c, &st));
	if (err) {
		fuse_reply_err(req, -err);
		return;
	}
	struct fuse_entry_param e;
	err = fill_entry(req, &st, &e);
	fi->keep_cache = 1;
	fi->fh = fh_for(fi->flags);
	/* Once opens bypass us the kernel sends no RELEASE for a created file
	 * either; the lookup reference the reply carries keeps the inode. */
	if (D(req)->no_open || err)
		lfs_release(FS(req), st.st_ino);
	if (err) {
		lfs_forget(FS(req), st.st_ino, 1);
		fuse_reply_err(req, -err);
		return;
	}
	fuse_reply_create(req, &e, fi);
}

/* Under the writeback cache, the kernel is asked to write back (launder)
 * the pages of ino it holds from off on, so that what lfs answers next
 * counts them; 0, or the notification's error. */
static int
launder_from(fuse_req_t req, fuse_ino_t ino, off_t off)
{
	struct lfs_daemon *d = D(req);
	if (!d->writeback)
		return 0;
	/* over io_uring, this thread holds an entry of its CPU's queue while
	 * it waits, and the WRITEs it asks for come to that queue: idle
	 * entries are added there first (fuse_ring.c) */
	lfs_fuse_ring_spare(2);
	pthread_mutex_lock(&d->flush_past_eof);
	lfs_fuse_ring_spare(2);
	int err = fuse_lowlevel_notify_inval_inode(d->se, ino, off, 0);
	pthread_mutex_unlock(&d->flush_past_eof);
	return err;
}

/* A direct read that ends short of what was asked may have met the end
 * of the file as lfs knows it while the kernel's writeback cache holds
 * writes past it: the kernel flushes only the range a direct read covers,
 * and, unlike a buffered read, takes a short reply as the end.  So the
 * kernel's pages from there on are laundered, and the read is made
 * again. */
static ssize_t
read_past_cached_eof(fuse_req_t req, fuse_ino_t ino, char *buf, size_t size, off_t off, ssize_t n)
{
	return launder_from(req, ino, off + n) ? n : lfs_read(FS(req), ino, buf, size, off);
}

static void
op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	char *buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ssize_t n = lfs_read(FS(req), ino, buf, size, off);
	if (n >= 0 && (size_t)n < size && D(req)->writeback && (fi->flags & O_DIRECT))
		n = read_past_cached_eof(req, ino, buf, size, off, n);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

/* Whether a WRITE carries a direct write (O_DIRECT) rather than cached
 * pages: the kernel's fuse_direct_IO invalidates the range only after a
 * write it waited for (generic_file_direct_write), not after one it
 * completes asynchronously (-EIOCBQUEUED). */
static bool
direct_write(const struct fuse_file_info *fi)
{
	return !fi->writepage && (fi->flags & O_DIRECT);
}

static void
inval_attr(uint64_t ino, void *val, void *ctx)
{
	(void)val;
	fuse_lowlevel_notify_inval_inode(ctx, ino, -1, 0);
}

/* Writeback grew a file within the headroom of what writers may use
 * (fuse_cache.c): the file is marked and, the first time, every file's
 * cached attributes go (offset -1 leaves the page cache alone), so that
 * every buffered write() from now on asks first. */
static void
cache_near(fuse_req_t req, fuse_ino_t ino)
{
	struct lfs_fuse_cache *c = &D(req)->cache;
	lfs_fuse_cache_mark(c, ino);
	struct u64map files;
	u64map_init(&files);
	(void)u64map_put(&files, ino, (void *)1);
	if (lfs_fuse_cache_ask(c, true))
		lfs_kernel_files(FS(req), &files);
	u64map_each(&files, inval_attr, D(req)->se);
	u64map_free(&files);
}

static void
op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	bool allocated = false;
	/* the kernel no longer clears privileges itself (fuse_io.c) */
	int dropped = drop_privs(req, ino);
	if (dropped < 0) {
		fuse_reply_err(req, -dropped);
		return;
	}
	bool headroom = false;
	ssize_t n;
	WITH_ROOM(req, n,
		  fi->writepage ? lfs_write_cached(FS(req), ino, buf, size, off, &allocated, &headroom)
				: lfs_write(FS(req), ino, buf, size, off, &allocated));
	allocated |= dropped > 0;
	if (headroom)
		cache_near(req, ino);
	/* A direct write the kernel completes asynchronously (libaio,
	 * io_uring) leaves its pages of the range as they were, and a read
	 * racing it may just have filled them with the old bytes: they go
	 * now that the new ones are ours, before the write completes. */
	if (n > 0 && direct_write(fi))
		fuse_lowlevel_notify_inval_inode(D(req)->se, ino, off, n);
	/* st_blocks changed under the kernel's attribute cache: drop the
	 * cached attributes (offset -1 leaves the page cache alone) */
	else if (allocated)
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
	/* its writeback came first: a file it marked marks its writer */
	struct lfs_fuse_cache *c = &D(req)->cache;
	if (D(req)->writeback && lfs_fuse_cache_marked(c, ino, 0))
		lfs_fuse_cache_mark_writer(c, ino, caller_tgid(req));
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
	bool kill_sgid = lfs_fuse_io_acl_kill_sgid();
	int err;
	WITH_ROOM(req, err, lfs_setxattr_kill_sgid(FS(req), ino, name, value, size, flags, kill_sgid));
	/* the mode's bits follow an access ACL (and set-group-ID may go):
	 * the daemon says so itself rather than count on the kernel's own
	 * invalidation, whatever the attribute timeout */
	if (!err && strcmp(name, "system.posix_acl_access") == 0)
		fuse_lowlevel_notify_inval_inode(D(req)->se, ino, -1, 0);
	fuse_reply_err(req, -err);
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
	int err;
	WITH_ROOM(req, err, lfs_removexattr(FS(req), ino, name));
	fuse_reply_err(req, -err);
}

static void
op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length, struct fuse_file_info *fi)
{
	(void)fi;
	int err;
	WITH_ROOM(req, err, lfs_fallocate(FS(req), ino, mode, offset, length));
	fuse_reply_err(req, -err);
}

/* FUSE_LSEEK: the kernel asks only for SEEK_DATA and SEEK_HOLE, and
 * answers SEEK_SET, SEEK_CUR and SEEK_END itself.  It writes back none
 * of its dirty pages first: those from off on are laundered here, so
 * that a write not yet written back is data, as on ext4. */
static void
op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
	(void)fi;
	off_t at;
	if (off >= 0)
		launder_from(req, ino, off);
	int err = lfs_lseek(FS(req), ino, off, whence, &at);
	if (err)
		fuse_reply_err(req, -err);
	else
		fuse_reply_lseek(req, at);
}

/* Sent at unmount only for fuseblk mounts, and umount(2) waits for the
 * answer: so the final checkpoint is written here, and the image let go,
 * before it returns.  The control server goes first: a snapshot view
 * read through it must not read an image another mount may be writing. */
static void
op_destroy(void *userdata)
{
	struct lfs_daemon *d = userdata;
	lfs_supervisor_stop(d->sup);
	lfs_supervisor_free(d->sup); /* it names the control server */
	d->sup = NULL;
	lfs_ctl_server_stop(d->ctl);
	d->ctl = NULL;
	bool ro = lfs_is_readonly(d->fs);
	int err = lfs_quiesce(d->fs);
	d->quiesced = true;
	/* before umount returns: the line is there when it does */
	lfs_daemon_log_unmount(d, err, ro);
}

uint64_t
lfs_daemon_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* "3 h 2 min", "5 min 7 s", "1.2 s" */
static void
span(uint64_t ns, char *buf, size_t len)
{
	uint64_t s = ns / 1000000000u;
	if (s >= 3600)
		snprintf(buf, len, "%llu h %llu min", (unsigned long long)(s / 3600), (unsigned long long)(s % 3600 / 60));
	else if (s >= 60)
		snprintf(buf, len, "%llu min %llu s", (unsigned long long)(s / 60), (unsigned long long)(s % 60));
	else
		snprintf(buf, len, "%.1f s", (double)ns / 1e9);
}

void
lfs_daemon_log_unmount(struct lfs_daemon *d, int err, bool ro)
{
	if (!d->mounted_ns || d->unmount_logged)
		return;
	d->unmount_logged = true;
	char took[64];
	span(lfs_daemon_now_ns() - d->mounted_ns, took, sizeof(took));
	if (err)
		lfs_log("unmounted from %s after %s: the final checkpoint failed (%s); the next mount recovers",
			d->mountpoint, took, strerror(-err));
	else
		lfs_log("unmounted from %s after %s, %s", d->mountpoint, took,
			ro ? "read-only: nothing written" : "clean");
}

int
lfs_daemon_syncfs(void *ctx)
{
	return lfs_syncfs(ctx);
}

/* LFS_CTL_REQUESTS, from the control server's thread */
void
lfs_daemon_requests(void *ctx, bool reset, uint64_t *counts, uint64_t val[4])
{
	lfs_fuse_io_requests(ctx, reset, counts, val);
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
	if (rest)
		err = -EOPNOTSUPP;
	else
		WITH_ROOM(req, err, lfs_set_flags(FS(req), ino, lf));
	/* ctime moved under the kernel's attribute cache */
	if (!err)
		fuse_lowlevel_notify_inval_inode(D(req)->se, ino, -1, 0);
	return err;
}

/* FITRIM (fstrim(8), on the mount point or any file of the mount):
 * root's, as ext4 asks CAP_SYS_ADMIN; the range comes back with len the
 * bytes given back (lfs(8), DISCARD). */
static int
do_fitrim(fuse_req_t req, const void *in_buf, size_t in_bufsz, size_t out_bufsz, struct fstrim_range *r)
{
	if (fuse_req_ctx(req)->uid != 0)
		return -EPERM;
	if (in_bufsz < sizeof(*r) || out_bufsz < sizeof(*r))
		return -EINVAL;
	memcpy(r, in_buf, sizeof(*r));
	uint64_t trimmed;
	int err = lfs_trim(FS(req), r->start, r->len, r->minlen, &trimmed);
	r->len = trimmed;
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
	if (c == FITRIM) {
		struct fstrim_range r;
		int err = do_fitrim(req, in_buf, in_bufsz, out_bufsz, &r);
		if (err)
			fuse_reply_err(req, -err);
		else
			fuse_reply_ioctl(req, 0, &r, sizeof(r));
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

const struct fuse_lowlevel_ops lfs_fuse_ops = {
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
	.lseek = op_lseek,
};
