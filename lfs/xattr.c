/*
 * xattr.c — extended attributes: one XATTR block per inode at most
 * (as ext4 without large xattrs), kept encoded in memory while cached.
 * Namespaces user., trusted. and security. are stored, and of system.
 * the two POSIX ACLs, which acl.c checks and keeps in step with the mode.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

static int
load(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (ip->xattr_loaded)
		return 0;
	if (ip->di.xattr) {
		uint8_t *b = lfs_malloc(fs->bsize);
		if (!b)
			return -ENOMEM;
		int err = lfs_read_block(fs, ip->di.xattr, b);
		if (err) {
			free(b);
			return err;
		}
		ip->xattr = b;
	}
	ip->xattr_loaded = true;
	return 0;
}

struct xent {
	const char *name;
	uint16_t name_len;
	const uint8_t *value;
	uint32_t value_len;
};

/* Iterate entries: returns the offset after entry `e` at `off`, 0 at end. */
static uint32_t
next_ent(const struct lfs_fs *fs, const uint8_t *b, uint32_t off, struct xent *e)
{
	if (off + LFS_XATTR_ENT_HDR > fs->bsize)
		return 0;
	e->name_len = lfs_get16(b + off);
	e->value_len = lfs_get32(b + off + 4);
	if (e->name_len == 0 || (uint64_t)off + LFS_XATTR_ENT_HDR + e->name_len + e->value_len > fs->bsize)
		return 0;
	e->name = (const char *)b + off + LFS_XATTR_ENT_HDR;
	e->value = b + off + LFS_XATTR_ENT_HDR + e->name_len;
	return off + LFS_XATTR_ENT_HDR + e->name_len + e->value_len;
}

static int
check_name(const char *name)
{
	size_t len = strlen(name);
	if (len == 0 || len > 255)
		return -ERANGE;
	if (strncmp(name, "user.", 5) && strncmp(name, "trusted.", 8) && strncmp(name, "security.", 9) &&
	    !lfs_acl_name(name))
		return -EOPNOTSUPP;
	return 0;
}

/* Finds `name`; returns its entry offset or 0. */
static uint32_t
find(struct lfs_fs *fs, const uint8_t *b, const char *name, struct xent *out)
{
	if (!b)
		return 0;
	size_t len = strlen(name);
	uint32_t n = lfs_get32(b), off = LFS_XATTR_HDR;
	for (uint32_t i = 0; i < n; i++) {
		struct xent e;
		uint32_t next = next_ent(fs, b, off, &e);
		if (!next)
			break;
		if (e.name_len == len && memcmp(e.name, name, len) == 0) {
			*out = e;
			return off;
		}
		off = next;
	}
	return 0;
}

ssize_t
lfs_xattr_get(struct lfs_fs *fs, struct lfs_inode *ip, const char *name, void *value, size_t size)
{
	int err = check_name(name);
	if (err)
		return err == -ERANGE ? -ENODATA : err;
	if (!ip->di.xattr && !ip->xattr)
		return -ENODATA; /* the common case, answered from memory */
	if ((err = load(fs, ip)))
		return err;
	struct xent e;
	if (!find(fs, ip->xattr, name, &e))
		return -ENODATA;
	if (size == 0)
		return e.value_len;
	if (size < e.value_len)
		return -ERANGE;
	memcpy(value, e.value, e.value_len);
	return e.value_len;
}

ssize_t
lfs_xattr_list(struct lfs_fs *fs, struct lfs_inode *ip, char *list, size_t size)
{
	int err = load(fs, ip);
	if (err)
		return err;
	const uint8_t *b = ip->xattr;
	size_t total = 0;
	uint32_t n = b ? lfs_get32(b) : 0, off = LFS_XATTR_HDR;
	for (uint32_t i = 0; i < n; i++) {
		struct xent e;
		uint32_t next = next_ent(fs, b, off, &e);
		if (!next)
			break;
		if (size) {
			if (total + e.name_len + 1 > size)
				return -ERANGE;
			memcpy(list + total, e.name, e.name_len);
			list[total + e.name_len] = '\0';
		}
		total += e.name_len + 1u;
		off = next;
	}
	return (ssize_t)total;
}

/* Rebuild the block without `skip_name`, optionally adding one entry. */
static int
rewrite(struct lfs_fs *fs, struct lfs_inode *ip, const char *skip_name, const char *add_name,
	const void *value, size_t size)
{
	uint8_t *nb = lfs_calloc(1, fs->bsize);
	if (!nb)
		return -ENOMEM;
	uint32_t count = 0, w = LFS_XATTR_HDR;
	const uint8_t *b = ip->xattr;
	uint32_t n = b ? lfs_get32(b) : 0, off = LFS_XATTR_HDR;
	size_t skip_len = strlen(skip_name);
	for (uint32_t i = 0; i < n; i++) {
		struct xent e;
		uint32_t next = next_ent(fs, b, off, &e);
		if (!next)
			break;
		if (!(e.name_len == skip_len && memcmp(e.name, skip_name, skip_len) == 0)) {
			memcpy(nb + w, b + off, next - off);
			w += next - off;
			count++;
		}
		off = next;
	}
	if (add_name) {
		size_t nl = strlen(add_name);
		if ((uint64_t)w + LFS_XATTR_ENT_HDR + nl + size > fs->bsize) {
			free(nb);
			return -ENOSPC;
		}
		lfs_put16(nb + w, (uint16_t)nl);
		lfs_put32(nb + w + 4, (uint32_t)size);
		memcpy(nb + w + LFS_XATTR_ENT_HDR, add_name, nl);
		if (size)
			memcpy(nb + w + LFS_XATTR_ENT_HDR + nl, value, size);
		count++;
	}
	lfs_put32(nb, count);
	free(ip->xattr);
	if (count == 0) {
		free(nb);
		nb = NULL;
	}
	ip->xattr = nb;
	ip->xattr_dirty = true;
	lfs_inode_touch(ip, false, true);
	lfs_inode_dirty(fs, ip);
	return 0;
}

int
lfs_xattr_set(struct lfs_fs *fs, struct lfs_inode *ip, const char *name, const void *value, size_t size,
	      int flags)
{
	int err = check_name(name);
	if (err)
		return err;
	if (size > fs->bsize)
		return -E2BIG;
	if ((err = load(fs, ip)))
		return err;
	struct xent e;
	bool exists = find(fs, ip->xattr, name, &e) != 0;
	if ((flags & XATTR_CREATE) && exists)
		return -EEXIST;
	if ((flags & XATTR_REPLACE) && !exists)
		return -ENODATA;
	if ((err = lfs_space_admit(fs, LFS_SPACE_WRITE, fs->bsize)))
		return err;
	return rewrite(fs, ip, name, name, value, size);
}

int
lfs_xattr_remove(struct lfs_fs *fs, struct lfs_inode *ip, const char *name)
{
	int err = check_name(name);
	if (err)
		return err == -ERANGE ? -ENODATA : err;
	if ((err = load(fs, ip)))
		return err;
	struct xent e;
	if (!find(fs, ip->xattr, name, &e))
		return -ENODATA;
	if ((err = lfs_space_admit(fs, LFS_SPACE_DELETE, 0)))
		return err;
	return rewrite(fs, ip, name, NULL, NULL, 0);
}
