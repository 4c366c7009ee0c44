/*
 * staged.c — layer 4: a tree staged for a receive (fs/receive.c): a
 * directory no name leads to, LFS_DI_STAGED, whose record is an
 * orphan's.  The receiver reaches it by a name in the root that no
 * directory lists (LFS_STAGED_PREFIX "INO.GEN"); once the tree is a
 * snapshot, or the receive is given up, or a crash ended it (the mount),
 * the live tree lets the whole tree go, deepest first.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int
lfs_staged_lookup(struct lfs_fs *fs, const char *spec, struct lfs_inode **ipp)
{
	char *end;
	errno = 0;
	unsigned long long ino = strtoull(spec, &end, 10);
	if (errno || *end != '.' || ino <= LFS_ROOT_INO || !lfs_imap_valid_ino(fs, ino))
		return -ENOENT;
	unsigned long long gen = strtoull(end + 1, &end, 10);
	if (errno || *end)
		return -ENOENT;
	int err = lfs_iget(fs, ino, ipp);
	if (!err && (!((*ipp)->di.flags & LFS_DI_STAGED) || (*ipp)->di.version != gen || !(*ipp)->di.nlink))
		err = -ENOENT;
	return err;
}

struct first_entry {
	char name[LFS_NAME_MAX + 1];
	uint32_t ino;
	bool found;
};

static int
first_cb(void *ctx, const struct lfs_dirent *d, uint64_t pos)
{
	(void)pos;
	struct first_entry *f = ctx;
	if ((d->name_len == 1 && d->name[0] == '.') || (d->name_len == 2 && !memcmp(d->name, "..", 2)))
		return 0;
	memcpy(f->name, d->name, d->name_len);
	f->name[d->name_len] = '\0';
	f->ino = d->ino;
	f->found = true;
	return 1;
}

/* Name f of directory dp goes; its inode with its last name. */
static int
remove_one(struct lfs_fs *fs, struct lfs_inode *dp, const struct first_entry *f, struct lfs_inode *ip)
{
	int err = lfs_dir_remove(fs, dp, f->name);
	if (err)
		return err;
	if (S_ISDIR(ip->di.mode)) {
		ip->di.nlink = 0;
		dp->di.nlink--;
	} else {
		ip->di.nlink--;
	}
	lfs_inode_dirty(fs, dp);
	lfs_inode_dirty(fs, ip);
	lfs_inode_maybe_free(fs, ip);
	return 0;
}

/* Remove everything under directory top, deepest first, with an explicit
 * stack (a received tree may be as deep as a stream makes it). */
static int
empty_tree(struct lfs_fs *fs, uint32_t top)
{
	size_t cap = 16, n = 1;
	uint32_t *stack = lfs_malloc(cap * sizeof(*stack));
	int err = stack ? 0 : -ENOMEM;
	if (stack)
		stack[0] = top;
	while (!err && n) {
		struct lfs_inode *dp, *ip;
		struct first_entry f = { .found = false };
		err = lfs_iget(fs, stack[n - 1], &dp);
		if (!err)
			err = lfs_dir_iterate(fs, dp, 0, first_cb, &f);
		if (err || !f.found) {
			n--; /* empty now: its parent, next, removes its name */
			continue;
		}
		if ((err = lfs_iget(fs, f.ino, &ip)))
			break;
		if (!S_ISDIR(ip->di.mode) || lfs_dir_empty(fs, ip)) {
			/* a delete, admitted as unlink is (its flushes evict
			 * nothing the caller holds); dp stays cached: an inode
			 * being changed is not evicted */
			err = fs->up->admit(fs, LFS_SPACE_DELETE, 0);
			if (!err)
				err = remove_one(fs, dp, &f, ip);
			continue;
		}
		if (n == cap) {
			uint32_t *s = lfs_realloc(stack, 2 * cap * sizeof(*s));
			if (!s) {
				err = -ENOMEM;
				break;
			}
			stack = s;
			cap *= 2;
		}
		stack[n++] = f.ino;
	}
	free(stack);
	return err;
}

int
lfs_staged_drop(struct lfs_fs *fs, uint32_t ino, bool held)
{
	struct lfs_inode *ip;
	int err = lfs_iget(fs, ino, &ip);
	if (!err && (!S_ISDIR(ip->di.mode) || !(ip->di.flags & LFS_DI_STAGED)))
		err = -EINVAL;
	if (!err)
		err = empty_tree(fs, ino);
	if (!err)
		err = fs->up->admit(fs, LFS_SPACE_DELETE, 0);
	if (!err && (err = lfs_iget(fs, ino, &ip)) == 0) {
		ip->di.nlink = 0;
		if (held && ip->nlookup)
			ip->nlookup--;
		lfs_inode_dirty(fs, ip);
		lfs_inode_maybe_free(fs, ip);
	}
	return err;
}

int
lfs_staged_drop_orphan(struct lfs_fs *fs, uint32_t ino)
{
	int err = lfs_staged_drop(fs, ino, false);
	if (err)
		lfs_log("staged tree %u (a receive a crash ended): %s", ino, strerror(-err));
	else
		lfs_log("freed staged tree %u (a receive a crash ended)", ino);
	return err;
}
