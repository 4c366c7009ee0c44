/*
 * acl.c — layer 4: POSIX ACLs, kept as ext4 keeps them: the extended attributes
 * system.posix_acl_access and system.posix_acl_default (xattr.c), whose
 * values are Linux's own xattr encoding of an ACL (linux/posix_acl_xattr.h,
 * little-endian: a 4-byte version 2, then 8-byte entries {le16 tag,
 * le16 perm, le32 id}), stored verbatim.  The kernel checks access
 * against them itself (FUSE_POSIX_ACL under default_permissions); what it
 * leaves to a FUSE daemon, and ext4 does in fs/posix_acl.c, is here:
 *
 *   - lfs_acl_inherit: a new inode takes its directory's default ACL
 *     (posix_acl_create): the mode asked for is cut down by the ACL
 *     instead of the umask, and the ACL by the mode;
 *   - lfs_acl_chmod: chmod rewrites the owner, mask (or group) and other
 *     entries of the access ACL (posix_acl_chmod);
 *   - lfs_acl_set: setting an access ACL sets the mode's permission bits
 *     from it, and one that says no more than a mode is not stored at all
 *     (posix_acl_update_mode).
 *
 * Worked example: a directory with default ACL u::rwx,u:1000:r-x,g::r-x,
 * m::rwx,o::--- and create(0666): the file gets the access ACL
 * u::rw-,u:1000:r-x,g::r-x,m::rw-,o::--- and mode 0660 (mask rw-).
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Check an encoded ACL as posix_acl_valid does: entries in the order
 * USER_OBJ, USER..., GROUP_OBJ, GROUP..., MASK, OTHER, each required one
 * once, a mask whenever named users or groups appear, known permissions.
 * The order is part of the rule: equiv_mode and create_masq read a mask
 * as coming after the group entry it overrides.  0 or -EINVAL. */
static int
acl_check(const uint8_t *v, size_t size)
{
	if (size < LFS_ACL_HDR + LFS_ACL_ENT || (size - LFS_ACL_HDR) % LFS_ACL_ENT)
		return -EINVAL;
	if (lfs_acl_version(v) != LFS_ACL_VERSION)
		return -EOPNOTSUPP;
	/* state: the tag class expected next; 0 once OTHER was seen */
	unsigned state = LFS_ACL_USER_OBJ;
	bool named = false;
	for (size_t off = LFS_ACL_HDR; off < size; off += LFS_ACL_ENT) {
		uint16_t tag = lfs_acl_tag(v, off), perm = lfs_acl_perm(v, off);
		if (perm & ~7u)
			return -EINVAL;
		switch (tag) {
		case LFS_ACL_USER_OBJ:
			if (state != LFS_ACL_USER_OBJ)
				return -EINVAL;
			state = LFS_ACL_USER;
			break;
		case LFS_ACL_USER:
		case LFS_ACL_GROUP:
			if (state != (tag == LFS_ACL_USER ? LFS_ACL_USER : LFS_ACL_GROUP))
				return -EINVAL;
			named = true;
			break;
		case LFS_ACL_GROUP_OBJ:
			if (state != LFS_ACL_USER)
				return -EINVAL;
			state = LFS_ACL_GROUP;
			break;
		case LFS_ACL_MASK:
			if (state != LFS_ACL_GROUP)
				return -EINVAL;
			state = LFS_ACL_OTHER;
			break;
		case LFS_ACL_OTHER:
			if (state != LFS_ACL_OTHER && !(state == LFS_ACL_GROUP && !named))
				return -EINVAL;
			state = 0;
			break;
		default:
			return -EINVAL;
		}
	}
	return state == 0 ? 0 : -EINVAL;
}

/* The ACL `name` of ip into buf (fs->bsize bytes): its length, or 0 when
 * there is none. */
static ssize_t
acl_get(struct lfs_fs *fs, struct lfs_inode *ip, const char *name, uint8_t *buf)
{
	ssize_t n = lfs_xattr_get(fs, ip, name, buf, fs->bsize);
	if (n == -ENODATA)
		return 0;
	if (n > 0 && acl_check(buf, (size_t)n)) {
		lfs_log("inode %u: %s is not a valid ACL; taken as none", ip->ino, name);
		return 0;
	}
	return n;
}

static void
set_perm(uint8_t *v, size_t off, uint32_t perm)
{
	lfs_acl_set_perm(v, off, (uint16_t)(perm & 7));
}

/* posix_acl_create_masq: cut the ACL by *mode and the mode by the ACL;
 * returns whether the ACL says more than the mode. */
static bool
create_masq(uint8_t *v, size_t size, uint32_t *mode)
{
	uint32_t m = *mode;
	size_t group_obj = 0, mask = 0;
	bool not_equiv = false;
	for (size_t off = LFS_ACL_HDR; off < size; off += LFS_ACL_ENT) {
		uint32_t perm = lfs_acl_perm(v, off);
		switch (lfs_acl_tag(v, off)) {
		case LFS_ACL_USER_OBJ:
			perm &= m >> 6;
			set_perm(v, off, perm);
			m &= (perm << 6) | ~0700u;
			break;
		case LFS_ACL_OTHER:
			perm &= m;
			set_perm(v, off, perm);
			m &= perm | ~0007u;
			break;
		case LFS_ACL_GROUP_OBJ:
			group_obj = off;
			break;
		case LFS_ACL_MASK:
			mask = off;
			not_equiv = true;
			break;
		default: /* named users and groups */
			not_equiv = true;
			break;
		}
	}
	size_t g = mask ? mask : group_obj; /* acl_check: group_obj is there */
	uint32_t perm = lfs_acl_perm(v, g) & (m >> 3);
	set_perm(v, g, perm);
	m &= (perm << 3) | ~0070u;
	*mode = (*mode & ~0777u) | (m & 0777u);
	return not_equiv;
}

/* posix_acl_equiv_mode: the permission bits an access ACL gives; returns
 * whether it says more than they do. */
static bool
equiv_mode(const uint8_t *v, size_t size, uint32_t *mode)
{
	uint32_t m = 0;
	bool not_equiv = false;
	for (size_t off = LFS_ACL_HDR; off < size; off += LFS_ACL_ENT) {
		uint32_t perm = lfs_acl_perm(v, off) & 7;
		switch (lfs_acl_tag(v, off)) {
		case LFS_ACL_USER_OBJ: m |= perm << 6; break;
		case LFS_ACL_GROUP_OBJ: m |= perm << 3; break;
		case LFS_ACL_OTHER: m |= perm; break;
		case LFS_ACL_MASK:
			m = (m & ~0070u) | (perm << 3);
			not_equiv = true;
			break;
		default: not_equiv = true; break;
		}
	}
	/* entries come sorted by tag (the kernel sorts them), so a mask
	 * follows the owning group's entry and overrides it */
	*mode = (*mode & ~0777u) | m;
	return not_equiv;
}

int
lfs_acl_inherit(struct lfs_fs *fs, struct lfs_inode *dp, struct lfs_inode *ip, uint32_t umask)
{
	if (S_ISLNK(ip->di.mode) || !fs->acl)
		return 0;
	uint8_t *buf = lfs_malloc(fs->bsize);
	if (!buf)
		return -ENOMEM;
	ssize_t n = acl_get(fs, dp, LFS_ACL_DEFAULT, buf);
	int err = n < 0 ? (int)n : 0;
	if (n == 0) {
		ip->di.mode &= ~(umask & 0777u);
	} else if (n > 0) {
		if (S_ISDIR(ip->di.mode))
			err = lfs_xattr_set(fs, ip, LFS_ACL_DEFAULT, buf, (size_t)n, 0);
		if (!err && create_masq(buf, (size_t)n, &ip->di.mode))
			err = lfs_xattr_set(fs, ip, LFS_ACL_ACCESS, buf, (size_t)n, 0);
		lfs_inode_dirty(fs, ip);
	}
	free(buf);
	return err;
}

int
lfs_acl_chmod(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (S_ISLNK(ip->di.mode) || !fs->acl)
		return 0;
	uint8_t *buf = lfs_malloc(fs->bsize);
	if (!buf)
		return -ENOMEM;
	ssize_t n = acl_get(fs, ip, LFS_ACL_ACCESS, buf);
	int err = n < 0 ? (int)n : 0;
	if (n > 0) {
		uint32_t mode = ip->di.mode;
		size_t group_obj = 0, mask = 0;
		for (size_t off = LFS_ACL_HDR; off < (size_t)n; off += LFS_ACL_ENT) {
			switch (lfs_acl_tag(buf, off)) {
			case LFS_ACL_USER_OBJ: set_perm(buf, off, mode >> 6); break;
			case LFS_ACL_OTHER: set_perm(buf, off, mode); break;
			case LFS_ACL_GROUP_OBJ: group_obj = off; break;
			case LFS_ACL_MASK: mask = off; break;
			default: break;
			}
		}
		set_perm(buf, mask ? mask : group_obj, mode >> 3);
		err = lfs_xattr_set(fs, ip, LFS_ACL_ACCESS, buf, (size_t)n, 0);
	}
	free(buf);
	return err;
}

int
lfs_acl_set(struct lfs_fs *fs, struct lfs_inode *ip, const char *name, const void *value, size_t size,
	    int flags, bool kill_sgid)
{
	if (!lfs_acl_name(name) || !fs->acl)
		return -EOPNOTSUPP;
	if (S_ISLNK(ip->di.mode))
		return -EOPNOTSUPP;
	int err = acl_check(value, size);
	if (err)
		return err;
	/* an ACL is read into a block's buffer (acl_get); ext4 without
	 * ea_inode has no room for a larger one either */
	if (size > fs->bsize)
		return -ENOSPC;
	if (strcmp(name, LFS_ACL_DEFAULT) == 0)
		return S_ISDIR(ip->di.mode) ? lfs_xattr_set(fs, ip, name, value, size, flags) : -EACCES;
	uint32_t mode = ip->di.mode;
	if (equiv_mode(value, size, &mode)) {
		err = lfs_xattr_set(fs, ip, name, value, size, flags);
	} else {
		/* a mode says it all: nothing is stored, as ext4 does */
		err = lfs_xattr_remove(fs, ip, name);
		if (err == -ENODATA)
			err = 0;
	}
	if (err)
		return err;
	/* the kernel asks (FUSE_SETXATTR_ACL_KILL_SGID) when the caller is
	 * neither in the file's group nor has CAP_FSETID */
	if (kill_sgid)
		mode &= ~(uint32_t)S_ISGID;
	ip->di.mode = mode;
	lfs_inode_touch(ip, false, true);
	lfs_inode_dirty(fs, ip);
	return 0;
}
