/*
 * fs.c — layer 6: the filesystem API of lfs.h.
 *
 * Each entry point takes fs->lock, does its work on the in-memory state
 * (which flush.c later turns into one log group), and answers 0 or
 * -errno.  Semantics follow Linux/ext4; the kernel has already checked
 * permissions (the daemon mounts with default_permissions).
 */
#include "lfs_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#define LFS_LINK_MAX 65000

static void
lock(struct lfs_fs *fs)
{
	lfs_lock(fs);
}

/* Every operation ends here: nothing holds an inode, so the cache may be
 * trimmed to its budget. */
static int
unlock(struct lfs_fs *fs, int ret)
{
	lfs_cache_trim(fs);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/* The same, for operations that return a byte count. */
static ssize_t
unlock_n(struct lfs_fs *fs, ssize_t ret)
{
	lfs_cache_trim(fs);
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

/* Everything buffered to the log and the log to the disk: what fsync
 * does, and -o dirsync / -o sync after each change they cover.  Called
 * last, holding nothing: the lock is released while the disk works. */
static int
sync_now(struct lfs_fs *fs)
{
	/* overwrites may leave nodes to a later flush (flush.c) */
	int err = lfs_flush_unlocked(fs, true);
	if (!err)
		err = lfs_sync_unlocked(fs, fs->dev.bytes_written);
	return err;
}

/* unlock() for a namespace change: durable first under -o dirsync
 * (and -o sync, which implies it, as for the kernel's IS_DIRSYNC) */
static int
unlock_dirop(struct lfs_fs *fs, int err)
{
	if (!err && (fs->opts.dirsync || fs->opts.sync))
		err = sync_now(fs);
	return unlock(fs, err);
}

/* unlock() for an attribute change: durable first under -o sync */
static int
unlock_attr(struct lfs_fs *fs, int err)
{
	if (!err && fs->opts.sync)
		err = sync_now(fs);
	return unlock(fs, err);
}

static int
check_name(const char *name)
{
	size_t len = strlen(name);
	if (len == 0)
		return -ENOENT;
	if (len > LFS_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

static int
get_dir(struct lfs_fs *fs, uint64_t ino, struct lfs_inode **dp)
{
	int err = lfs_iget(fs, ino, dp);
	if (!err && !S_ISDIR((*dp)->di.mode))
		err = -ENOTDIR;
	return err;
}

/* Write-side operations refuse early on a read-only or failed mount. */
static int
writable(struct lfs_fs *fs)
{
	if (fs->dev.readonly)
		return -EROFS;
	return fs->fatal;
}

/* The prologue of an operation on one inode: take the lock (held on
 * return, error or not) and the inode `ino`. */
static int
lock_inode(struct lfs_fs *fs, uint64_t ino, struct lfs_inode **ip)
{
	lock(fs);
	return lfs_iget(fs, ino, ip);
}

/* The same, to change the inode: the filesystem must be writable. */
static int
lock_inode_for_change(struct lfs_fs *fs, uint64_t ino, struct lfs_inode **ip)
{
	lock(fs);
	int err = writable(fs);
	return err ? err : lfs_iget(fs, ino, ip);
}

/* The directory an entry `name` is to be added to or removed from. */
static int
dir_for_change(struct lfs_fs *fs, uint64_t dir, const char *name, struct lfs_inode **dp)
{
	int err = writable(fs);
	if (!err)
		err = check_name(name);
	if (!err)
		err = get_dir(fs, dir, dp);
	return err;
}

/* At the end of an operation, holding nothing: keep buffered state and
 * the log since the last checkpoint bounded. */
static void
after_write(struct lfs_fs *fs)
{
	if (fs->dirty_bytes >= fs->opts.dirty_limit)
		lfs_flush_unlocked(fs, false);
	if (fs->opts.ckpt_segs && fs->segs_since_ckpt >= fs->opts.ckpt_segs)
		lfs_ckpt_write_unlocked(fs);
}

/* relatime, as ext4 mounts by default: atime moves when it is older
 * than mtime or ctime, or a day old; otherwise reads write nothing.
 * -o strictatime moves it at every read, -o noatime never, -o nodiratime
 * never for directories. */
static void
touch_atime(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (fs->dev.readonly || fs->fatal || fs->opts.atime == LFS_ATIME_NOATIME || (ip->di.flags & LFS_DI_NOATIME) ||
	    (fs->opts.nodiratime && S_ISDIR(ip->di.mode)))
		return;
	struct timespec now;
	lfs_inode_now(&now);
	const struct lfs_dinode *di = &ip->di;
	bool older = fs->opts.atime == LFS_ATIME_STRICT || di->atime_sec < di->mtime_sec ||
		     (di->atime_sec == di->mtime_sec && di->atime_nsec <= di->mtime_nsec) ||
		     di->atime_sec < di->ctime_sec ||
		     (di->atime_sec == di->ctime_sec && di->atime_nsec <= di->ctime_nsec) ||
		     now.tv_sec - di->atime_sec >= 24 * 3600;
	if (!older || (di->atime_sec == now.tv_sec && di->atime_nsec == (uint32_t)now.tv_nsec))
		return;
	ip->di.atime_sec = now.tv_sec;
	ip->di.atime_nsec = (uint32_t)now.tv_nsec;
	lfs_inode_dirty(fs, ip);
}

static void
touch_dir(struct lfs_inode *dp, struct lfs_fs *fs)
{
	lfs_inode_touch(dp, true, true);
	lfs_inode_dirty(fs, dp);
}

/* "." names the inode `ino` itself, of any type: how the kernel finds an
 * inode from a file handle (NFS) once it has forgotten it.  An inode
 * with no name left is stale, as ext4 answers for one not in memory. */
static int
lookup_self(struct lfs_fs *fs, uint64_t ino, struct lfs_inode **ipp)
{
	int err = lfs_iget(fs, ino, ipp);
	if (!err && (*ipp)->di.nlink == 0)
		err = -ESTALE;
	return err;
}

int
lfs_lookup(struct lfs_fs *fs, uint64_t dir, const char *name, struct stat *st)
{
	lock(fs);
	struct lfs_inode *dp, *ip;
	uint32_t ino;
	int err = check_name(name);
	if (!err && strcmp(name, ".") == 0) {
		err = lookup_self(fs, dir, &ip);
	} else if (!err && dir == LFS_ROOT_INO && !strncmp(name, LFS_STAGED_PREFIX, strlen(LFS_STAGED_PREFIX))) {
		err = lfs_staged_lookup(fs, name + strlen(LFS_STAGED_PREFIX), &ip);
	} else {
		if (!err)
			err = get_dir(fs, dir, &dp);
		if (!err && strcmp(name, "..") == 0)
			ino = dp->di.parent ? dp->di.parent : LFS_ROOT_INO;
		else if (!err)
			err = lfs_dir_lookup(fs, dp, name, &ino, NULL);
		if (!err)
			err = lfs_iget(fs, ino, &ip);
	}
	if (!err) {
		ip->nlookup++;
		lfs_inode_stat(fs, ip, st);
	}
	return unlock(fs, err);
}

int
lfs_generation(struct lfs_fs *fs, uint64_t ino, uint32_t *gen)
{
	struct lfs_inode *ip;
	int err = lock_inode(fs, ino, &ip);
	if (!err)
		*gen = ip->di.version;
	return unlock(fs, err);
}

void
lfs_forget(struct lfs_fs *fs, uint64_t ino, uint64_t nlookup)
{
	lock(fs);
	struct lfs_inode *ip = u64map_get(&fs->icache, ino);
	if (ip) {
		ip->nlookup = ip->nlookup > nlookup ? ip->nlookup - nlookup : 0;
		if (ip->di.nlink == 0)
			lfs_inode_maybe_free(fs, ip);
		else if (!ip->nlookup && !ip->nopen && !ip->dirty && ip->ino != LFS_ROOT_INO &&
			 !ip->ndirty_pages && !ip->xattr_dirty && !ip->relinked)
			lfs_inode_evict(fs, ip);
	} else {
		/* evicted while referenced (cache.c): only its count is kept */
		uintptr_t n = (uintptr_t)u64map_get(&fs->irefs, ino);
		if (n > nlookup)
			u64map_put(&fs->irefs, ino, (void *)(n - nlookup)); /* replaces: cannot fail */
		else if (n)
			u64map_del(&fs->irefs, ino);
	}
	unlock(fs, 0);
}

int
lfs_getattr(struct lfs_fs *fs, uint64_t ino, struct stat *st)
{
	struct lfs_inode *ip;
	int err = lock_inode(fs, ino, &ip);
	if (!err)
		lfs_inode_stat(fs, ip, st);
	return unlock(fs, err);
}

/* setattr_should_drop_sgid's rule: without group execution, set-group-ID
 * marks mandatory locking rather than a privilege, and stays for a caller
 * in the file's group or privileged (who == NULL). */
static bool
sgid_goes(const struct lfs_inode *ip, const struct lfs_caller *who)
{
	if (!(ip->di.mode & S_ISGID))
		return false;
	if (ip->di.mode & S_IXGRP)
		return true;
	return who && (!who->in_group || !who->in_group(who->ctx, ip->di.gid));
}

/* Take the file capability and the mode bits `kill` (of S_ISUID and
 * S_ISGID) away.  Returns 1 if anything changed. */
static int
drop_privs(struct lfs_fs *fs, struct lfs_inode *ip, uint32_t kill)
{
	int changed = 0;
	if (ip->di.xattr || ip->xattr_dirty) {
		int err = lfs_xattr_remove(fs, ip, "security.capability");
		if (err == 0)
			changed = 1;
		else if (err != -ENODATA)
			return err;
	}
	uint32_t mode = ip->di.mode & ~kill;
	if (mode != ip->di.mode) {
		ip->di.mode = mode;
		lfs_inode_touch(ip, false, true);
		lfs_inode_dirty(fs, ip);
		changed = 1;
	}
	return changed;
}

/* What a write or truncate takes from a regular file, as Linux's
 * setattr_should_drop_suidgid says: for a caller without CAP_FSETID
 * (who != NULL) set-user-ID, and set-group-ID by sgid_goes. */
static uint32_t
write_kills(const struct lfs_inode *ip, const struct lfs_caller *who)
{
	if (!who || !S_ISREG(ip->di.mode))
		return 0;
	return S_ISUID | (sgid_goes(ip, who) ? S_ISGID : 0);
}

/* What chown(2) takes from any non-directory, as the VFS does
 * (chown_common, notify_change), whoever asks and even if nothing
 * changes hands: set-user-ID, and set-group-ID by sgid_goes for the
 * file's group before the change. */
static uint32_t
chown_kills(const struct lfs_inode *ip, const struct lfs_caller *who)
{
	if (S_ISDIR(ip->di.mode))
		return 0;
	return S_ISUID | (sgid_goes(ip, who) ? S_ISGID : 0);
}

int
lfs_drop_privs(struct lfs_fs *fs, uint64_t ino, const struct lfs_caller *who)
{
	struct lfs_inode *ip;
	int err = lock_inode_for_change(fs, ino, &ip);
	if (!err)
		err = drop_privs(fs, ip, write_kills(ip, who));
	return unlock(fs, err);
}

int
lfs_setattr(struct lfs_fs *fs, uint64_t ino, const struct stat *a, int to_set, struct stat *out)
{
	return lfs_setattr_as(fs, ino, a, to_set, NULL, out);
}

int
lfs_setattr_as(struct lfs_fs *fs, uint64_t ino, const struct stat *a, int to_set,
	       const struct lfs_caller *who, struct stat *out)
{
	struct lfs_inode *ip;
	int err = lock_inode_for_change(fs, ino, &ip);
	if (err)
		return unlock(fs, err);
	struct lfs_dinode *di = &ip->di;
	/* a changed record: allowed on a full filesystem, as in place on ext4 */
	if (!(to_set & LFS_SET_SIZE) && (err = lfs_space_admit(fs, LFS_SPACE_DELETE, 0)))
		return unlock(fs, err);
	if (to_set & LFS_SET_SIZE) {
		if (S_ISDIR(di->mode))
			return unlock(fs, -EISDIR);
		if (!S_ISREG(di->mode))
			return unlock(fs, -EINVAL);
		if ((uint64_t)a->st_size != di->size) {
			err = lfs_space_admit(fs, LFS_SPACE_DELETE, 0);
			if (!err)
				err = lfs_file_truncate(fs, ip, (uint64_t)a->st_size);
			if (err)
				return unlock(fs, err);
		}
		lfs_inode_touch(ip, true, true);
	}
	/* a file given away loses its privileges, as chown(2) says; a mode
	 * set in the same call (the kernel's own clearing) comes after */
	if ((to_set & (LFS_SET_UID | LFS_SET_GID | LFS_SET_CHOWN)) && !S_ISDIR(di->mode) &&
	    (err = drop_privs(fs, ip, chown_kills(ip, who))) < 0)
		return unlock(fs, err);
	if ((to_set & LFS_SET_MODE) && (di->mode & 07777) != (a->st_mode & 07777)) {
		uint32_t was = di->mode;
		di->mode = (di->mode & S_IFMT) | (a->st_mode & 07777);
		/* the access ACL's owner, mask and other entries are the mode */
		if ((err = lfs_acl_chmod(fs, ip))) {
			di->mode = was;
			return unlock(fs, err);
		}
	}
	if (to_set & LFS_SET_UID)
		di->uid = a->st_uid;
	if (to_set & LFS_SET_GID)
		di->gid = a->st_gid;
	if (to_set & LFS_SET_ATIME_NOW) {
		struct timespec ts;
		lfs_inode_now(&ts);
		di->atime_sec = ts.tv_sec;
		di->atime_nsec = (uint32_t)ts.tv_nsec;
	} else if (to_set & LFS_SET_ATIME) {
		di->atime_sec = a->st_atim.tv_sec;
		di->atime_nsec = (uint32_t)a->st_atim.tv_nsec;
	}
	if (to_set & LFS_SET_MTIME_NOW) {
		lfs_inode_touch(ip, true, false);
	} else if (to_set & LFS_SET_MTIME) {
		di->mtime_sec = a->st_mtim.tv_sec;
		di->mtime_nsec = (uint32_t)a->st_mtim.tv_nsec;
	}
	if (to_set & LFS_SET_CTIME) {
		di->ctime_sec = a->st_ctim.tv_sec;
		di->ctime_nsec = (uint32_t)a->st_ctim.tv_nsec;
	} else {
		lfs_inode_touch(ip, false, true);
	}
	lfs_inode_dirty(fs, ip);
	lfs_inode_stat(fs, ip, out);
	after_write(fs);
	return unlock_attr(fs, 0);
}

int
lfs_get_flags(struct lfs_fs *fs, uint64_t ino, uint32_t *flags)
{
	struct lfs_inode *ip;
	int err = lock_inode(fs, ino, &ip);
	if (!err)
		*flags = ip->di.flags & LFS_DI_USER;
	return unlock(fs, err);
}

int
lfs_set_flags(struct lfs_fs *fs, uint64_t ino, uint32_t flags)
{
	if (flags & ~LFS_DI_USER)
		return -EOPNOTSUPP;
	struct lfs_inode *ip;
	int err = lock_inode_for_change(fs, ino, &ip);
	/* a changed record: allowed on a full filesystem, as a setattr */
	if (!err)
		err = lfs_space_admit(fs, LFS_SPACE_DELETE, 0);
	if (err)
		return unlock(fs, err);
	ip->di.flags = (ip->di.flags & ~LFS_DI_USER) | flags;
	lfs_inode_touch(ip, false, true);
	lfs_inode_dirty(fs, ip);
	after_write(fs);
	return unlock_attr(fs, 0);
}

/* Create a node named `name` in dir; the new inode carries one lookup. */
static int
new_node(struct lfs_fs *fs, uint64_t dir, const char *name, mode_t mode, dev_t rdev, const char *target,
	 const struct lfs_cred *cred, struct lfs_inode **out)
{
	struct lfs_inode *dp, *ip;
	uint32_t ino;
	int err = dir_for_change(fs, dir, name, &dp);
	if (err)
		return err;
	if (dp->di.nlink == 0)
		return -ENOENT;
	if (S_ISDIR(mode) && dp->di.nlink >= LFS_LINK_MAX)
		return -EMLINK;
	err = lfs_dir_lookup(fs, dp, name, &ino, NULL);
	if (err != -ENOENT)
		return err ? err : -EEXIST;
	size_t tlen = target ? strlen(target) : 0;
	if ((err = lfs_space_admit(fs, LFS_SPACE_WRITE, tlen + 2 * fs->bsize)))
		return err;
	if ((err = lfs_inode_new(fs, mode, cred, dp, &ip)))
		return err;
	ip->di.nlink = S_ISDIR(mode) ? 2 : 1;
	err = lfs_acl_inherit(fs, dp, ip, cred->umask);
	if (S_ISCHR(mode) || S_ISBLK(mode))
		ip->di.rdev = lfs_rdev_encode(rdev);
	if (!err && target) {
		ssize_t n = lfs_file_write(fs, ip, LFS_SPACE_WRITE, target, tlen, 0);
		err = n < 0 ? (int)n : 0;
	}
	if (!err)
		err = lfs_dir_add(fs, dp, name, ip->ino, lfs_mode_to_dt(mode));
	if (err) {
		ip->di.nlink = 0;
		lfs_inode_maybe_free(fs, ip);
		return err;
	}
	if (S_ISDIR(mode))
		dp->di.nlink++;
	touch_dir(dp, fs);
	ip->nlookup++;
	*out = ip;
	return 0;
}

int
lfs_mknod(struct lfs_fs *fs, uint64_t dir, const char *name, mode_t mode, dev_t rdev,
	  const struct lfs_cred *cred, struct stat *out)
{
	lock(fs);
	struct lfs_inode *ip;
	int err = new_node(fs, dir, name, mode, rdev, NULL, cred, &ip);
	if (!err)
		lfs_inode_stat(fs, ip, out);
	return unlock_dirop(fs, err);
}

int
lfs_create(struct lfs_fs *fs, uint64_t dir, const char *name, mode_t mode, bool excl,
	   const struct lfs_cred *cred, struct stat *out)
{
	lock(fs);
	struct lfs_inode *ip;
	int err = new_node(fs, dir, name, S_IFREG | (mode & 07777), 0, NULL, cred, &ip);
	if (err == -EEXIST && !excl) {
		/* lost a race with another creator: open what is there */
		struct lfs_inode *dp;
		uint32_t ino;
		err = get_dir(fs, dir, &dp);
		if (!err)
			err = lfs_dir_lookup(fs, dp, name, &ino, NULL);
		if (!err)
			err = lfs_iget(fs, ino, &ip);
		if (!err && S_ISDIR(ip->di.mode))
			err = -EISDIR;
		if (!err)
			ip->nlookup++;
	}
	if (!err) {
		ip->nopen++;
		lfs_inode_stat(fs, ip, out);
	}
	return unlock_dirop(fs, err);
}

int
lfs_tmpfile(struct lfs_fs *fs, uint64_t dir, mode_t mode, const struct lfs_cred *cred, struct stat *out)
{
	lock(fs);
	struct lfs_inode *dp, *ip;
	int err = writable(fs);
	if (!err)
		err = get_dir(fs, dir, &dp);
	if (!err && dp->di.nlink == 0)
		err = -ENOENT;
	if (!err)
		err = lfs_space_admit(fs, LFS_SPACE_WRITE, 2 * fs->bsize);
	if (!err)
		err = lfs_inode_new(fs, S_IFREG | (mode & 07777), cred, dp, &ip);
	if (err)
		return unlock(fs, err);
	/* no name, so the directory does not change (as on ext4); written
	 * with nlink 0 the inode is an orphan in the inode map (flush.c) */
	ip->di.nlink = 0;
	if ((err = lfs_acl_inherit(fs, dp, ip, cred->umask))) {
		lfs_inode_maybe_free(fs, ip);
		return unlock(fs, err);
	}
	ip->nlookup++;
	ip->nopen++;
	lfs_inode_dirty(fs, ip);
	lfs_inode_stat(fs, ip, out);
	return unlock(fs, 0);
}

int
lfs_mkdir(struct lfs_fs *fs, uint64_t dir, const char *name, mode_t mode, const struct lfs_cred *cred,
	  struct stat *out)
{
	lock(fs);
	struct lfs_inode *ip;
	int err = new_node(fs, dir, name, S_IFDIR | (mode & 07777), 0, NULL, cred, &ip);
	if (!err)
		lfs_inode_stat(fs, ip, out);
	return unlock_dirop(fs, err);
}

int
lfs_symlink(struct lfs_fs *fs, uint64_t dir, const char *name, const char *target,
	    const struct lfs_cred *cred, struct stat *out)
{
	lock(fs);
	struct lfs_inode *ip;
	int err = strlen(target) >= 4096 ? -ENAMETOOLONG : 0;
	if (!err)
		err = new_node(fs, dir, name, S_IFLNK | 0777, 0, target, cred, &ip);
	if (!err)
		lfs_inode_stat(fs, ip, out);
	return unlock_dirop(fs, err);
}

int
lfs_readlink(struct lfs_fs *fs, uint64_t ino, char *buf, size_t size)
{
	struct lfs_inode *ip;
	int err = lock_inode(fs, ino, &ip);
	if (!err && !S_ISLNK(ip->di.mode))
		err = -EINVAL;
	if (err)
		return unlock(fs, err);
	if (size == 0)
		return unlock(fs, -ERANGE);
	ssize_t n = lfs_file_read(fs, ip, buf, size - 1, 0);
	if (n < 0)
		return unlock(fs, (int)n);
	buf[n] = '\0';
	return unlock(fs, (int)n);
}

int
lfs_link(struct lfs_fs *fs, uint64_t ino, uint64_t dir, const char *name, struct stat *out)
{
	lock(fs);
	struct lfs_inode *ip, *dp;
	uint32_t existing;
	int err = dir_for_change(fs, dir, name, &dp);
	if (!err)
		err = lfs_iget(fs, ino, &ip);
	if (err)
		return unlock(fs, err);
	if (S_ISDIR(ip->di.mode))
		return unlock(fs, -EPERM);
	if (ip->di.nlink >= LFS_LINK_MAX)
		return unlock(fs, -EMLINK);
	if (dp->di.nlink == 0)
		return unlock(fs, -ENOENT);
	err = lfs_dir_lookup(fs, dp, name, &existing, NULL);
	if (err != -ENOENT)
		return unlock(fs, err ? err : -EEXIST);
	if ((err = lfs_space_admit(fs, LFS_SPACE_WRITE, fs->bsize)))
		return unlock(fs, err);
	if ((err = lfs_dir_add(fs, dp, name, ip->ino, lfs_mode_to_dt(ip->di.mode))))
		return unlock(fs, err);
	ip->di.nlink++;
	lfs_inode_touch(ip, false, true);
	lfs_inode_dirty(fs, ip);
	touch_dir(dp, fs);
	ip->nlookup++;
	lfs_inode_stat(fs, ip, out);
	return unlock_dirop(fs, 0);
}

static int
remove_entry(struct lfs_fs *fs, uint64_t dir, const char *name, bool want_dir)
{
	struct lfs_inode *dp, *ip;
	uint32_t ino;
	int err = dir_for_change(fs, dir, name, &dp);
	if (err)
		return err;
	if (want_dir && strcmp(name, ".") == 0)
		return -EINVAL;
	if (want_dir && strcmp(name, "..") == 0)
		return -ENOTEMPTY;
	if ((err = lfs_dir_lookup(fs, dp, name, &ino, NULL)) || (err = lfs_iget(fs, ino, &ip)))
		return err;
	if (want_dir && !S_ISDIR(ip->di.mode))
		return -ENOTDIR;
	if (!want_dir && S_ISDIR(ip->di.mode))
		return -EISDIR;
	if (want_dir && !lfs_dir_empty(fs, ip))
		return -ENOTEMPTY;
	if ((err = lfs_space_admit(fs, LFS_SPACE_DELETE, 0)))
		return err;
	if ((err = lfs_dir_remove(fs, dp, name)))
		return err;
	if (want_dir) {
		ip->di.nlink = 0;
		dp->di.nlink--;
	} else {
		ip->di.nlink--;
	}
	lfs_inode_touch(ip, false, true);
	lfs_inode_dirty(fs, ip);
	touch_dir(dp, fs);
	lfs_inode_maybe_free(fs, ip);
	return 0;
}

int
lfs_unlink(struct lfs_fs *fs, uint64_t dir, const char *name)
{
	lock(fs);
	int err = remove_entry(fs, dir, name, false);
	return unlock_dirop(fs, err);
}

int
lfs_rmdir(struct lfs_fs *fs, uint64_t dir, const char *name)
{
	lock(fs);
	int err = remove_entry(fs, dir, name, true);
	return unlock_dirop(fs, err);
}

/* Is `dir` the inode `anc` or below it? */
static int
is_within(struct lfs_fs *fs, struct lfs_inode *dir, uint32_t anc, bool *within)
{
	struct lfs_inode *p = dir;
	for (int depth = 0; depth < 100000; depth++) {
		if (p->ino == anc) {
			*within = true;
			return 0;
		}
		if (p->ino == LFS_ROOT_INO) {
			*within = false;
			return 0;
		}
		int err = lfs_iget(fs, p->di.parent, &p);
		if (err)
			return err;
	}
	return -ELOOP;
}

static void
reparent(struct lfs_fs *fs, struct lfs_inode *child, struct lfs_inode *from, struct lfs_inode *to)
{
	if (!S_ISDIR(child->di.mode) || from == to)
		return;
	child->di.parent = to->ino;
	from->di.nlink--;
	to->di.nlink++;
	lfs_inode_dirty(fs, child);
	lfs_inode_dirty(fs, from);
	lfs_inode_dirty(fs, to);
}

/* The whiteout overlayfs leaves where a name of a lower layer was: a
 * character device 0/0 of mode 0, owned as a new node of `cred` in dir
 * (ext4's ext4_whiteout_for_rename). */
static int
new_whiteout(struct lfs_fs *fs, struct lfs_inode *dir, const struct lfs_cred *cred, struct lfs_inode **out)
{
	int err = lfs_inode_new(fs, S_IFCHR, cred, dir, out);
	if (err)
		return err;
	(*out)->di.nlink = 1;
	(*out)->di.rdev = lfs_rdev_encode(0); /* WHITEOUT_DEV, makedev(0, 0) */
	return 0;
}

/* whiteout: NULL, or leave a whiteout made as `whiteout` at the old name */
static int
do_rename(struct lfs_fs *fs, uint64_t odir, const char *oname, uint64_t ndir, const char *nname,
	  unsigned flags, const struct lfs_cred *whiteout)
{
	struct lfs_inode *od, *nd, *src, *dst = NULL;
	uint32_t sino, dino;
	int err = dir_for_change(fs, odir, oname, &od);
	if (!err)
		err = dir_for_change(fs, ndir, nname, &nd);
	if (err)
		return err;
	if ((flags & LFS_RENAME_EXCHANGE) && ((flags & LFS_RENAME_NOREPLACE) || whiteout))
		return -EINVAL;
	if ((err = lfs_dir_lookup(fs, od, oname, &sino, NULL)) || (err = lfs_iget(fs, sino, &src)))
		return err;
	err = lfs_dir_lookup(fs, nd, nname, &dino, NULL);
	if (err && err != -ENOENT)
		return err;
	if (!err && (err = lfs_iget(fs, dino, &dst)))
		return err;
	if ((flags & LFS_RENAME_EXCHANGE) && !dst)
		return -ENOENT;
	if ((flags & LFS_RENAME_NOREPLACE) && dst)
		return -EEXIST;
	if (dst == src)
		return 0; /* two names of one inode: POSIX says do nothing */
	bool within;
	if (S_ISDIR(src->di.mode) && od != nd) {
		if ((err = is_within(fs, nd, src->ino, &within)))
			return err;
		if (within)
			return -EINVAL;
	}
	if ((flags & LFS_RENAME_EXCHANGE) && S_ISDIR(dst->di.mode) && od != nd) {
		if ((err = is_within(fs, od, dst->ino, &within)))
			return err;
		if (within)
			return -EINVAL;
	}
	if (dst && !(flags & LFS_RENAME_EXCHANGE)) {
		if (S_ISDIR(src->di.mode) && !S_ISDIR(dst->di.mode))
			return -ENOTDIR;
		if (!S_ISDIR(src->di.mode) && S_ISDIR(dst->di.mode))
			return -EISDIR;
		if (S_ISDIR(dst->di.mode) && !lfs_dir_empty(fs, dst))
			return -ENOTEMPTY;
	}
	if (S_ISDIR(src->di.mode) && od != nd && !dst && nd->di.nlink >= LFS_LINK_MAX)
		return -EMLINK;
	/* renaming over a name rewrites entries in place: a delete's room;
	 * a whiteout is a new inode */
	if ((err = lfs_space_admit(fs, dst && !whiteout ? LFS_SPACE_DELETE : LFS_SPACE_WRITE, 2 * fs->bsize)))
		return err;

	if (flags & LFS_RENAME_EXCHANGE) {
		if ((err = lfs_dir_set(fs, od, oname, dst->ino, lfs_mode_to_dt(dst->di.mode))) ||
		    (err = lfs_dir_set(fs, nd, nname, src->ino, lfs_mode_to_dt(src->di.mode))))
			return err;
		reparent(fs, src, od, nd);
		reparent(fs, dst, nd, od);
		lfs_inode_touch(dst, false, true);
		lfs_inode_dirty(fs, dst);
	} else {
		struct lfs_inode *wo = NULL;
		if (whiteout && (err = new_whiteout(fs, od, whiteout, &wo)))
			return err;
		if (dst)
			err = lfs_dir_set(fs, nd, nname, src->ino, lfs_mode_to_dt(src->di.mode));
		else
			err = lfs_dir_add(fs, nd, nname, src->ino, lfs_mode_to_dt(src->di.mode));
		/* the old name is the whiteout's under the same lock and in
		 * the same flush: no moment shows the lower layer's file */
		if (!err)
			err = wo ? lfs_dir_set(fs, od, oname, wo->ino, lfs_mode_to_dt(wo->di.mode))
				 : lfs_dir_remove(fs, od, oname);
		if (err) {
			if (wo) {
				wo->di.nlink = 0;
				lfs_inode_maybe_free(fs, wo);
			}
			return err;
		}
		reparent(fs, src, od, nd);
		if (dst) {
			if (S_ISDIR(dst->di.mode)) {
				dst->di.nlink = 0;
				nd->di.nlink--;
			} else {
				dst->di.nlink--;
			}
			lfs_inode_touch(dst, false, true);
			lfs_inode_dirty(fs, dst);
		}
	}
	lfs_inode_touch(src, false, true);
	lfs_inode_dirty(fs, src);
	touch_dir(od, fs);
	touch_dir(nd, fs);
	if (dst && !(flags & LFS_RENAME_EXCHANGE))
		lfs_inode_maybe_free(fs, dst);
	return 0;
}

int
lfs_rename(struct lfs_fs *fs, uint64_t odir, const char *oname, uint64_t ndir, const char *nname,
	   unsigned flags)
{
	lock(fs);
	int err = do_rename(fs, odir, oname, ndir, nname, flags, NULL);
	return unlock_dirop(fs, err);
}

int
lfs_rename_whiteout(struct lfs_fs *fs, uint64_t odir, const char *oname, uint64_t ndir, const char *nname,
		    unsigned flags, const struct lfs_cred *cred)
{
	lock(fs);
	int err = do_rename(fs, odir, oname, ndir, nname, flags, cred);
	return unlock_dirop(fs, err);
}

int
lfs_open(struct lfs_fs *fs, uint64_t ino, int flags)
{
	struct lfs_inode *ip;
	int err = lock_inode(fs, ino, &ip);
	if (!err && ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) && (err = writable(fs)))
		return unlock(fs, err);
	/* FUSE hands O_TRUNC to open (atomic_o_trunc) instead of a setattr */
	if (!err && (flags & O_TRUNC) && S_ISREG(ip->di.mode) && ip->di.size) {
		err = lfs_space_admit(fs, LFS_SPACE_DELETE, 0);
		if (!err)
			err = lfs_file_truncate(fs, ip, 0);
		if (!err) {
			lfs_inode_touch(ip, true, true);
			lfs_inode_dirty(fs, ip);
		}
	}
	if (!err)
		ip->nopen++;
	return unlock(fs, err);
}

int
lfs_release(struct lfs_fs *fs, uint64_t ino)
{
	lock(fs);
	struct lfs_inode *ip = u64map_get(&fs->icache, ino);
	if (ip) {
		if (ip->nopen)
			ip->nopen--;
		lfs_inode_maybe_free(fs, ip);
	}
	return unlock(fs, 0);
}

/* Attempts at a read with fs->lock released before one holds it (a
 * run's segment reused each time, by a cleaner moving the file's blocks
 * and the log running through their segments at once). */
#define READ_UNLOCKED_TRIES 4

/* One attempt at a read: planned with the lock, the disk read without
 * it when `unlocked` (readrun.c says why the bytes are right); the lock
 * is held again on return.  -EAGAIN: a segment was reused, plan again. */
static ssize_t
read_once(struct lfs_fs *fs, uint64_t ino, void *buf, size_t size, off_t off, bool unlocked)
{
	struct lfs_inode *ip;
	int err = lfs_iget(fs, ino, &ip);
	if (err)
		return err;
	if (S_ISDIR(ip->di.mode))
		return -EISDIR;
	if (off < 0)
		return -EINVAL;
	struct lfs_rdplan p;
	lfs_rdplan_init(&p, buf);
	ssize_t n = lfs_file_read_plan(fs, ip, &p, size, (uint64_t)off);
	if (n > 0)
		touch_atime(fs, ip);
	if (n > 0 && p.nruns) {
		unlocked = unlocked && !fs->view_seq;
		if (unlocked) {
			/* nothing holds an inode across it (the cache may drop ip) */
			lfs_cache_trim(fs);
			pthread_mutex_unlock(&fs->lock);
		}
		lfs_rdplan_read(fs, &p);
		if (unlocked)
			lock(fs);
		n = lfs_rdplan_finish(fs, &p, (size_t)n);
	}
	lfs_rdplan_free(&p);
	return n;
}

ssize_t
lfs_read(struct lfs_fs *fs, uint64_t ino, void *buf, size_t size, off_t off)
{
	lock(fs);
	ssize_t n;
	for (int tries = 0;; tries++) {
		bool unlocked = tries < READ_UNLOCKED_TRIES;
		n = read_once(fs, ino, buf, size, off, unlocked);
		if (n != -EAGAIN || !unlocked)
			break;
	}
	return unlock_n(fs, n);
}

static ssize_t
write_as(struct lfs_fs *fs, enum lfs_space_class cls, uint64_t ino, const void *buf, size_t size, off_t off,
	 bool *allocated, bool *in_headroom)
{
	struct lfs_inode *ip;
	int err = lock_inode_for_change(fs, ino, &ip);
	if (err)
		return unlock(fs, err);
	if (!S_ISREG(ip->di.mode))
		return unlock(fs, S_ISDIR(ip->di.mode) ? -EISDIR : -EINVAL);
	if (off < 0)
		return unlock(fs, -EINVAL);
	/* inline growth is not worth a kernel round trip; blocks are */
	uint64_t before = ip->di.blocks + ip->pending_new;
	fs->near_full = false;
	ssize_t n = lfs_file_write(fs, ip, cls, buf, size, (uint64_t)off);
	if (allocated)
		*allocated = ip->di.blocks + ip->pending_new != before;
	if (n > 0) {
		/* A write the kernel's cache took earlier has its times from
		 * then, which the kernel sends itself (SETATTR, before any
		 * fsync ends): its pages may come after them, and must not
		 * move them to when they arrived. */
		if (cls != LFS_SPACE_WRITEBACK)
			lfs_inode_touch(ip, true, true);
		after_write(fs);
	}
	if (in_headroom)
		*in_headroom = fs->near_full;
	return unlock_n(fs, n);
}

ssize_t
lfs_write(struct lfs_fs *fs, uint64_t ino, const void *buf, size_t size, off_t off, bool *allocated)
{
	return write_as(fs, LFS_SPACE_WRITE, ino, buf, size, off, allocated, NULL);
}

ssize_t
lfs_write_cached(struct lfs_fs *fs, uint64_t ino, const void *buf, size_t size, off_t off, bool *allocated,
		 bool *in_headroom)
{
	return write_as(fs, LFS_SPACE_WRITEBACK, ino, buf, size, off, allocated, in_headroom);
}

void
lfs_set_cache_headroom(struct lfs_fs *fs, uint64_t bytes)
{
	lock(fs);
	fs->headroom_blocks = (bytes + fs->bsize - 1) / fs->bsize;
	pthread_mutex_unlock(&fs->lock);
}

/* Whether the live data is within `hard` bytes of the end of the cache
 * headroom.  That end is measured in live data against the capacity,
 * which is what cleaning must sustain (room in clean segments comes and
 * goes with cleaning), less what kept checkpoints would give back when
 * asked (space.c, give_way). */
static bool
headroom_spent(struct lfs_fs *fs, uint64_t hard)
{
	uint64_t used = lfs_space_used_blocks(fs) + (hard + fs->bsize - 1) / fs->bsize, give = 0;
	uint64_t end = lfs_space_capacity(fs) + fs->headroom_blocks;
	return used > end && !lfs_retain_giveable(fs, &give) && used > end + give / fs->bsize;
}

int
lfs_space_check(struct lfs_fs *fs, uint64_t hard)
{
	lock(fs);
	int err = writable(fs);
	if (err)
		return unlock(fs, err);
	/* buffered overwrites count as new until written (the old blocks
	 * are freed then): only a flush tells */
	if (headroom_spent(fs, hard) && fs->dirty_bytes && (err = lfs_flush(fs)))
		return unlock(fs, err);
	if (headroom_spent(fs, hard))
		return unlock(fs, LFS_ROOM_SPENT);
	err = lfs_space_admit(fs, LFS_SPACE_WRITE, fs->bsize);
	if (err == -ENOSPC)
		return unlock(fs, LFS_ROOM_NONE);
	if (!err && !lfs_space_fits(fs, LFS_SPACE_WRITE, (fs->headroom_blocks + 1) * fs->bsize))
		err = LFS_ROOM_NEAR;
	return unlock(fs, err);
}

static void
add_file(uint64_t ino, void *val, void *ctx)
{
	const struct lfs_inode *ip = val;
	if (S_ISREG(ip->di.mode))
		(void)u64map_put(ctx, ino, (void *)1);
}

/* evicted while the kernel holds them: their type is not at hand */
static void
add_ref(uint64_t ino, void *val, void *ctx)
{
	(void)val;
	(void)u64map_put(ctx, ino, (void *)1);
}

void
lfs_kernel_files(struct lfs_fs *fs, struct u64map *out)
{
	lock(fs);
	u64map_each(&fs->icache, add_file, out);
	u64map_each(&fs->irefs, add_ref, out);
	pthread_mutex_unlock(&fs->lock);
}

int
lfs_fsync(struct lfs_fs *fs, uint64_t ino, bool datasync)
{
	(void)ino;
	(void)datasync;
	lock(fs);
	if (fs->dev.readonly)
		return unlock(fs, 0);
	/* one flush writes everything dirty: the file, and the directory
	 * entries that lead to it, become durable together; when all of it
	 * already is, there is nothing to wait for */
	int err = sync_now(fs);
	if (!err && fs->opts.ckpt_segs && fs->segs_since_ckpt >= fs->opts.ckpt_segs)
		err = lfs_ckpt_write_unlocked(fs);
	return unlock(fs, err);
}

int
lfs_set_readonly(struct lfs_fs *fs, bool ro)
{
	lock(fs);
	int err = 0;
	if (ro && !fs->dev.readonly) {
		/* as a kernel remount,ro: what is buffered reaches the disk
		 * first; a failure leaves the filesystem writable, and says so */
		err = fs->fatal;
		if (!err)
			err = lfs_flush(fs);
		if (!err)
			err = lfs_ckpt_write(fs, false);
		if (!err)
			fs->dev.readonly = true;
		lfs_log("%s", err ? "read-only: not switched, writing what was buffered failed"
				  : "read-only now: everything buffered is on disk");
	} else if (!ro && fs->dev.readonly) {
		bool opening = fs->opts.readonly;
		if (fs->quiesced)
			err = -EBUSY; /* unmounting */
		else if (!fs->dev.writable || fs->opts.snapshot || fs->degraded_from)
			err = -EROFS; /* the image was opened read-only, a view, or an older checkpoint */
		else
			fs->dev.readonly = false;
		if (!err && opening && (err = lfs_mount_open_log(fs)) != 0)
			fs->dev.readonly = true;
		if (!err)
			fs->opts.readonly = false; /* mounted -o ro: now as a read-write mount */
		if (!err)
			lfs_log("read-write %s", opening ? "now (mounted read-only)" : "again");
		else if (opening && err != -EROFS)
			lfs_log("read-write: not switched, opening the log for writing failed: %s", strerror(-err));
	}
	return unlock(fs, err);
}

bool
lfs_is_readonly(struct lfs_fs *fs)
{
	lock(fs);
	bool ro = fs->dev.readonly;
	unlock(fs, 0);
	return ro;
}

static int
checkpoint(struct lfs_fs *fs, bool if_changed)
{
	lock(fs);
	int err = fs->dev.readonly || (if_changed && lfs_ckpt_current(fs)) ? 0 : lfs_ckpt_write_unlocked(fs);
	if (err == -EROFS && fs->dev.readonly)
		err = 0; /* switched while it waited: after a checkpoint of everything */
	return unlock(fs, err);
}

/* An idle filesystem writes nothing on sync(1), which any user of the
 * machine may run at any time. */
int
lfs_syncfs(struct lfs_fs *fs)
{
	return checkpoint(fs, true);
}

int
lfs_checkpoint(struct lfs_fs *fs)
{
	return checkpoint(fs, false);
}

int
lfs_lseek(struct lfs_fs *fs, uint64_t ino, off_t off, int whence, off_t *out)
{
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	if (off < 0)
		return -ENXIO;
	struct lfs_inode *ip;
	int err = lock_inode(fs, ino, &ip);
	if (!err && !S_ISREG(ip->di.mode))
		err = -EINVAL;
	uint64_t at = 0;
	if (!err)
		err = lfs_file_seek(fs, ip, (uint64_t)off, whence == SEEK_DATA, &at);
	*out = (off_t)at;
	return unlock(fs, err);
}

int
lfs_fallocate(struct lfs_fs *fs, uint64_t ino, int mode, off_t off, off_t len)
{
	struct lfs_inode *ip;
	int err = lock_inode_for_change(fs, ino, &ip);
	if (err)
		return unlock(fs, err);
	if (off < 0 || len <= 0)
		return unlock(fs, -EINVAL);
	if (!S_ISREG(ip->di.mode))
		return unlock(fs, S_ISDIR(ip->di.mode) ? -EISDIR : -ENODEV);
	uint64_t end = (uint64_t)off + (uint64_t)len;
	if (end > lfs_file_max_size(fs))
		return unlock(fs, -EFBIG);
	bool keep = mode & FALLOC_FL_KEEP_SIZE;
	mode &= ~FALLOC_FL_KEEP_SIZE;
	if (mode == FALLOC_FL_PUNCH_HOLE) {
		if (!keep)
			return unlock(fs, -EOPNOTSUPP);
		err = lfs_space_admit(fs, LFS_SPACE_DELETE, 2 * fs->bsize);
		if (!err)
			err = lfs_file_punch(fs, ip, (uint64_t)off, (uint64_t)len);
		if (!err)
			lfs_inode_touch(ip, true, true);
	} else if (mode == FALLOC_FL_ZERO_RANGE || mode == 0) {
		/* allocation marks the holes unwritten (on an image without
		 * them, writes blocks of zeros), which later writes overwrite
		 * with no new space (lfs_file_allocate) */
		err = mode == 0 ? lfs_file_allocate(fs, ip, (uint64_t)off, (uint64_t)len)
				: lfs_space_admit(fs, LFS_SPACE_DELETE, 2 * fs->bsize);
		if (!err && mode == FALLOC_FL_ZERO_RANGE) {
			err = lfs_file_punch(fs, ip, (uint64_t)off, (uint64_t)len);
			lfs_inode_touch(ip, true, true);
		}
		if (!err && !keep && end > ip->di.size) {
			err = lfs_file_truncate(fs, ip, end);
			lfs_inode_touch(ip, false, true);
		}
	} else {
		err = -EOPNOTSUPP;
	}
	if (!err) {
		lfs_inode_dirty(fs, ip);
		after_write(fs);
	}
	return unlock(fs, err);
}

struct rd_ctx {
	lfs_filldir_t fill;
	void *ctx;
};

#define DIR_COOKIE_BASE 3   /* 1 and 2 are "." and ".." */

static int
rd_one(void *c, const struct lfs_dirent *d, uint64_t pos)
{
	struct rd_ctx *r = c;
	char name[LFS_NAME_MAX + 1];
	memcpy(name, d->name, d->name_len);
	name[d->name_len] = '\0';
	struct stat st = { .st_ino = d->ino, .st_mode = (mode_t)d->type << 12 };
	return r->fill(r->ctx, name, &st, (off_t)(pos + DIR_COOKIE_BASE + 1));
}

int
lfs_readdir(struct lfs_fs *fs, uint64_t dir, off_t off, lfs_filldir_t fill, void *ctx)
{
	lock(fs);
	struct lfs_inode *dp;
	int err = get_dir(fs, dir, &dp);
	if (err)
		return unlock(fs, err);
	if (off < 1) {
		struct stat st = { .st_ino = dp->ino, .st_mode = S_IFDIR };
		if (fill(ctx, ".", &st, 1))
			return unlock(fs, 0);
	}
	if (off < 2) {
		struct stat st = { .st_ino = dp->di.parent ? dp->di.parent : dp->ino, .st_mode = S_IFDIR };
		if (fill(ctx, "..", &st, 2))
			return unlock(fs, 0);
	}
	uint64_t pos = off > DIR_COOKIE_BASE ? (uint64_t)off - DIR_COOKIE_BASE : 0;
	struct rd_ctx r = { fill, ctx };
	err = lfs_dir_iterate(fs, dp, pos, rd_one, &r);
	if (!err && off == 0)
		touch_atime(fs, dp);
	return unlock(fs, err);
}

int
lfs_statfs(struct lfs_fs *fs, struct statvfs *st)
{
	lock(fs);
	memset(st, 0, sizeof(*st));
	/* the reserve, what the kernel's page cache may still hand us and
	 * the dead space cleaning needs are all spoken for */
	uint64_t usable = lfs_space_capacity(fs);
	uint64_t used = lfs_space_used_blocks(fs);
	st->f_bsize = fs->bsize;
	st->f_frsize = fs->bsize;
	st->f_blocks = usable;
	st->f_bfree = st->f_bavail = used < usable ? usable - used : 0;
	st->f_files = fs->sb.max_inodes - 1;
	st->f_ffree = st->f_favail = fs->sb.max_inodes - 1 - fs->inodes_used;
	/* a snapshot's view has no room of its own: nothing is free in it
	 * (its segments are the mounted filesystem's, not counted here) */
	if (fs->view_seq)
		st->f_bfree = st->f_bavail = st->f_ffree = st->f_favail = 0;
	st->f_namemax = LFS_NAME_MAX;
	memcpy(&st->f_fsid, fs->sb.uuid, sizeof(st->f_fsid));
	return unlock(fs, 0);
}

void
lfs_set_acl(struct lfs_fs *fs, bool on)
{
	lock(fs);
	fs->acl = on;
	unlock(fs, 0);
}

int
lfs_setxattr(struct lfs_fs *fs, uint64_t ino, const char *name, const void *value, size_t size, int flags)
{
	return lfs_setxattr_kill_sgid(fs, ino, name, value, size, flags, false);
}

int
lfs_setxattr_kill_sgid(struct lfs_fs *fs, uint64_t ino, const char *name, const void *value, size_t size,
		       int flags, bool kill_sgid)
{
	struct lfs_inode *ip;
	int err = lock_inode_for_change(fs, ino, &ip);
	if (!err && strncmp(name, "system.", 7) == 0)
		err = lfs_acl_set(fs, ip, name, value, size, flags, kill_sgid);
	else if (!err)
		err = lfs_xattr_set(fs, ip, name, value, size, flags);
	if (!err)
		after_write(fs);
	return unlock_attr(fs, err);
}

ssize_t
lfs_getxattr(struct lfs_fs *fs, uint64_t ino, const char *name, void *value, size_t size)
{
	struct lfs_inode *ip;
	ssize_t r = lock_inode(fs, ino, &ip);
	if (!r)
		r = lfs_xattr_get(fs, ip, name, value, size);
	return unlock_n(fs, r);
}

ssize_t
lfs_listxattr(struct lfs_fs *fs, uint64_t ino, char *list, size_t size)
{
	struct lfs_inode *ip;
	ssize_t r = lock_inode(fs, ino, &ip);
	if (!r)
		r = lfs_xattr_list(fs, ip, list, size);
	return unlock_n(fs, r);
}

int
lfs_removexattr(struct lfs_fs *fs, uint64_t ino, const char *name)
{
	struct lfs_inode *ip;
	int err = lock_inode_for_change(fs, ino, &ip);
	if (!err)
		err = lfs_xattr_remove(fs, ip, name);
	return unlock_attr(fs, err);
}
