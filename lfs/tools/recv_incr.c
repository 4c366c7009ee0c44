/*
 * recv_incr.c — lfs-receive's side of an incremental stream (lfs(5),
 * SEND STREAMS): the changes applied to the parent's tree, which
 * lfs_receive.c has made anew in the staged directory (cwd).
 *
 * The stream names inodes by the source's numbers; a REF record binds
 * one to a name it has in the parent's tree.  Each inode the stream
 * names is kept here by where one of its names is (a directory it names
 * and a name in it), so that its path follows every rename of the
 * directories above it.  A name that goes (UNLINK) and is the one kept
 * here moves to a hidden directory in the top, under the inode's id,
 * until a LINK gives it a place again; what is left there at the END is
 * removed, before the times are set.  Every record is checked against
 * what came before it (a name in a directory named before, data inside
 * a regular file's size, an inode's type as the target has it, its links
 * as the source counts them at the end): a stream that does not fit the
 * target's parent is refused, and nothing is committed.
 */
#include "recv.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define HOLD_DIR UINT64_MAX     /* the hidden directory's "id" */
#define DEPTH_MAX 4096u
#define PATH_CAP 8192u

struct inc_node {
	struct lfs_stream_inode in; /* as the stream has it, once `has_in` */
	char *target;               /* a new symlink's */
	uint64_t dir;               /* where its kept name is (0: the top itself) */
	char *name;                 /* NULL: no name yet (new, before its first LINK) */
	mode_t type;                /* S_IFMT bits; 0 unknown (checking only) */
	bool has_in, is_new;
	uint32_t links;             /* new: the LINK records seen */
};

struct inc {
	struct recv *rv;
	struct u64map nodes;        /* id -> struct inc_node */
	struct inc_node **order;
	size_t n, cap;
	uint64_t root;
	bool changing;              /* REFs are over */
	bool hold_made, hold_gone;
	char hold[48];
	struct inc_node *open_node;
	int open_fd;
};

#define bad recv_bad
#define sys recv_sys

static struct inc_node *
node(struct inc *x, uint64_t id)
{
	return u64map_get(&x->nodes, id);
}

static int
add(struct inc *x, uint64_t id, struct inc_node **out)
{
	if (x->n == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 64;
		struct inc_node **o = realloc(x->order, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		x->order = o;
		x->cap = cap;
	}
	struct inc_node *nd = calloc(1, sizeof(*nd));
	int err = nd ? u64map_put(&x->nodes, id, nd) : -ENOMEM;
	if (err) {
		free(nd);
		return err;
	}
	x->order[x->n++] = nd;
	*out = nd;
	return 0;
}

/* The path of nd from the top, "." the top itself: its kept name and
 * those of the directories above it. */
static int
path_of(struct inc *x, const struct inc_node *nd, char *out)
{
	const char *parts[DEPTH_MAX + 1];
	size_t k = 0;
	const struct inc_node *at = nd;
	while (at->dir) {
		if (!at->name || k == DEPTH_MAX)
			return bad(x->rv, -EBADMSG, "an inode without a name, or %u directories deep", DEPTH_MAX);
		parts[k++] = at->name;
		if (at->dir == HOLD_DIR) {
			if (x->hold_gone)
				return -ENOENT;
			parts[k++] = x->hold;
			break;
		}
		if (!(at = node(x, at->dir)))
			return bad(x->rv, -EBADMSG, "a name in a directory the stream never named");
	}
	size_t len = 1;
	strcpy(out, ".");
	while (k--) {
		size_t l = strlen(parts[k]);
		if (len + 1 + l + 1 > PATH_CAP)
			return bad(x->rv, -ENAMETOOLONG, "a path longer than %u bytes", PATH_CAP);
		out[len++] = '/';
		memcpy(out + len, parts[k], l + 1);
		len += l;
	}
	return 0;
}

/* The path of `name` in directory dir, a node that is a directory. */
static int
path_in(struct inc *x, const struct lfs_stream_rec *rec, char *out, struct inc_node **dirp)
{
	struct inc_node *d = node(x, rec->dir);
	if (!d || (d->type && !S_ISDIR(d->type)) || (d->dir && !d->name))
		return bad(x->rv, -EBADMSG, "record %u: a name in %" PRIu64 ", not a directory named before",
			   rec->index, rec->dir);
	int err = path_of(x, d, out);
	size_t len = strlen(out);
	if (!err && len + 1 + rec->nlen + 1 > PATH_CAP)
		return bad(x->rv, -ENAMETOOLONG, "a path longer than %u bytes", PATH_CAP);
	if (!err)
		snprintf(out + len, PATH_CAP - len, "/%s", rec->name);
	if (dirp)
		*dirp = d;
	return err;
}

static int
set_name(struct inc_node *nd, uint64_t dir, const char *name)
{
	char *n = strdup(name);
	if (!n)
		return -ENOMEM;
	free(nd->name);
	nd->name = n;
	nd->dir = dir;
	return 0;
}

/* REF: an inode of the parent's tree, where the target has it too. */
static int
on_ref(struct inc *x, const struct lfs_stream_rec *rec)
{
	struct inc_node *nd;
	char path[PATH_CAP];
	if (x->changing || node(x, rec->id) || (!rec->dir) == (x->root != 0))
		return bad(x->rv, -EBADMSG, "record %u: a REF of inode %" PRIu64 " out of place", rec->index, rec->id);
	int err = rec->dir ? path_in(x, rec, path, NULL) : 0;
	struct stat st = { .st_mode = S_IFDIR };
	if (!err && rec->dir && x->rv->apply && lstat(path, &st) < 0)
		err = bad(x->rv, -ENOENT, "record %u: %s is not in the target's parent (%s): it is not the source's",
			  rec->index, path, strerror(errno));
	if (!err)
		err = add(x, rec->id, &nd);
	if (err)
		return err;
	nd->type = x->rv->apply || !rec->dir ? st.st_mode & S_IFMT : 0;
	if (!rec->dir) {
		x->root = rec->id;
		return 0;
	}
	return set_name(nd, rec->dir, rec->name);
}

static int
hold_path(struct inc *x, uint64_t id, char *out, char *name)
{
	if (!x->hold_made) {
		snprintf(x->hold, sizeof(x->hold), ".lfs-receive-hold.%ld", (long)getpid());
		if (x->rv->apply && mkdir(x->hold, 0700) < 0)
			return sys(x->rv, -1, "making", x->hold);
		x->hold_made = true;
	}
	snprintf(name, 24, "%" PRIu64, id);
	snprintf(out, PATH_CAP, "./%s/%s", x->hold, name);
	return 0;
}

/* UNLINK: the inode's kept name moves aside, any other name goes (a
 * directory no REF names goes whole). */
static int
on_unlink(struct inc *x, const struct lfs_stream_rec *rec)
{
	char path[PATH_CAP], aside[PATH_CAP], name[24];
	int err = path_in(x, rec, path, NULL);
	if (err)
		return err;
	struct inc_node *nd = node(x, rec->id);
	if (nd && !nd->is_new && nd->dir == rec->dir && nd->name && !strcmp(nd->name, rec->name)) {
		err = hold_path(x, rec->id, aside, name);
		if (!err && x->rv->apply)
			err = sys(x->rv, rename(path, aside), "moving aside", path);
		return err ? err : set_name(nd, HOLD_DIR, name);
	}
	if (nd && (nd->is_new || S_ISDIR(nd->type)))
		return bad(x->rv, -EBADMSG, "record %u: UNLINK of %s, not a name of inode %" PRIu64, rec->index, path,
			   rec->id);
	return x->rv->apply ? recv_remove(x->rv, path) : 0;
}

/* INODE of an inode of the parent's tree: its attributes now. */
static int
update(struct inc *x, struct inc_node *nd, const struct lfs_stream_rec *rec)
{
	mode_t type = rec->inode.mode & S_IFMT;
	if (nd->has_in || (nd->type && nd->type != type))
		return bad(x->rv, -EBADMSG, "record %u: inode %" PRIu64 " (mode %#o) is a %#o in the target's parent, "
			   "or was sent before", rec->index, rec->inode.id, rec->inode.mode, nd->type);
	nd->in = rec->inode;
	nd->has_in = true;
	char path[PATH_CAP];
	int err = path_of(x, nd, path);
	if (err || !x->rv->apply)
		return err;
	struct stat st;
	err = sys(x->rv, lstat(path, &st), "looking at", path);
	/* the owner first: a change of it drops set-user-ID, which the mode gives back */
	if (!err && ((uid_t)nd->in.uid != st.st_uid || (gid_t)nd->in.gid != st.st_gid))
		err = sys(x->rv, lchown(path, nd->in.uid, nd->in.gid), "changing the owner of", path);
	if (!err && type != S_IFLNK)
		err = sys(x->rv, chmod(path, nd->in.mode & 07777), "changing the mode of", path);
	if (!err && type == S_IFREG && (uint64_t)st.st_size != nd->in.size)
		err = sys(x->rv, truncate(path, (off_t)nd->in.size), "resizing", path);
	return err;
}

static int
on_inode(struct inc *x, const struct lfs_stream_rec *rec)
{
	struct inc_node *nd = node(x, rec->inode.id);
	if (nd && nd->is_new)
		return bad(x->rv, -EBADMSG, "record %u: inode %" PRIu64 " sent twice", rec->index, rec->inode.id);
	if (nd)
		return update(x, nd, rec);
	int err = add(x, rec->inode.id, &nd);
	if (err)
		return err;
	nd->in = rec->inode;
	nd->type = rec->inode.mode & S_IFMT;
	nd->has_in = nd->is_new = true;
	if (rec->dlen && !(nd->target = strndup((const char *)rec->data, rec->dlen)))
		return -ENOMEM;
	return 0;
}

/* LINK: a new inode made at its first name; another name for one made
 * already; an inode of the parent's tree moved (a directory) or given
 * the name too (the name kept here is then this one). */
static int
on_link(struct inc *x, const struct lfs_stream_rec *rec)
{
	char path[PATH_CAP], from[PATH_CAP];
	struct inc_node *nd = node(x, rec->id);
	if (!nd)
		return bad(x->rv, -EBADMSG, "record %u: a LINK of inode %" PRIu64 ", not sent or named before",
			   rec->index, rec->id);
	int err = path_in(x, rec, path, NULL);
	if (err)
		return err;
	if (nd->is_new && nd->links >= nd->in.nlink)
		return bad(x->rv, -EBADMSG, "record %u: inode %" PRIu64 " given more than its %u names", rec->index,
			   rec->id, nd->in.nlink);
	if (nd->is_new && !nd->name) {
		err = x->rv->apply ? recv_make(x->rv, &nd->in, nd->target, path) : 0;
	} else if (!nd->dir && !nd->is_new) {
		return bad(x->rv, -EBADMSG, "record %u: a LINK of the tree's top", rec->index);
	} else if (x->rv->apply && !(err = path_of(x, nd, from))) {
		err = S_ISDIR(nd->type) ? sys(x->rv, rename(from, path), "moving", from)
					: sys(x->rv, link(from, path), "linking", path);
	}
	nd->links += nd->is_new;
	/* a new inode keeps its first name; another one keeps its newest */
	return err || (nd->is_new && nd->name) ? err : set_name(nd, rec->dir, rec->name);
}

/* DATA and HOLE: for a regular file whose INODE came, inside its size. */
static int
file_fd(struct inc *x, const struct lfs_stream_rec *rec, uint64_t len, int *fd)
{
	struct inc_node *nd = node(x, rec->id);
	if (!nd || !nd->has_in || !S_ISREG(nd->in.mode) || (nd->is_new && !nd->name) || rec->off > nd->in.size ||
	    len > nd->in.size - rec->off)
		return bad(x->rv, -EBADMSG, "record %u: %s at %" PRIu64 " for inode %" PRIu64 " (no regular file "
			   "whose INODE came, or past its size)", rec->index, lfs_stream_type_name(rec->type), rec->off,
			   rec->id);
	*fd = -1;
	if (!x->rv->apply)
		return 0;
	if (x->open_node != nd) {
		char path[PATH_CAP];
		int err = path_of(x, nd, path);
		if (err)
			return err;
		if (x->open_fd >= 0)
			close(x->open_fd);
		x->open_node = nd;
		if ((x->open_fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			return sys(x->rv, -1, "opening", path);
	}
	*fd = x->open_fd;
	return 0;
}

static int
on_data(struct inc *x, const struct lfs_stream_rec *rec)
{
	int fd;
	int err = file_fd(x, rec, rec->dlen, &fd);
	x->rv->data_bytes += rec->dlen;
	if (err || fd < 0)
		return err;
	ssize_t n = pwrite(fd, rec->data, rec->dlen, (off_t)rec->off);
	if (n >= 0 && (size_t)n != rec->dlen)
		return bad(x->rv, -EIO, "a short write of inode %" PRIu64, rec->id);
	return sys(x->rv, (int)n, "writing", "a file");
}

static int
on_hole(struct inc *x, const struct lfs_stream_rec *rec)
{
	int fd;
	int err = file_fd(x, rec, rec->len, &fd);
	if (err || fd < 0)
		return err;
	/* to the end: cut and grown again, since a punch keeps a partial last block */
	uint64_t size = x->open_node->in.size;
	if (rec->off + rec->len == size)
		return sys(x->rv, ftruncate(fd, (off_t)rec->off) < 0 || ftruncate(fd, (off_t)size) < 0 ? -1 : 0,
			   "cutting a hole at the end of", "a file");
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)rec->off, (off_t)rec->len) == 0)
		return 0;
	return sys(x->rv, -1, "punching a hole in", "a file");
}

static int
on_xattr(struct inc *x, const struct lfs_stream_rec *rec)
{
	struct inc_node *nd = node(x, rec->id);
	char path[PATH_CAP];
	if (!nd || (nd->is_new && !nd->name))
		return bad(x->rv, -EBADMSG, "record %u: an attribute of inode %" PRIu64 " not named before",
			   rec->index, rec->id);
	int err = path_of(x, nd, path);
	if (err || !x->rv->apply)
		return err;
	/* the data written first, which would drop security.capability after */
	if (x->open_node == nd) {
		x->open_node = NULL;
		err = sys(x->rv, close(x->open_fd), "closing", path);
		x->open_fd = -1;
		if (err)
			return err;
	}
	if (rec->type == LFS_SR_XATTR)
		return sys(x->rv, lsetxattr(path, rec->name, rec->data, rec->dlen, 0), "setting an attribute of",
			   path);
	if (lremovexattr(path, rec->name) < 0 && errno != ENODATA)
		return sys(x->rv, -1, "removing an attribute of", path);
	return 0;
}

/* END: every new inode given its names; flags and times set; what was
 * moved aside and not placed again removed; the links the source counts
 * checked (a name the target's parent has and the source's had not). */
static int
on_end(struct inc *x, const struct lfs_stream_rec *rec)
{
	char path[PATH_CAP];
	int err = 0;
	for (size_t i = 0; !err && i < x->n; i++)
		if (x->order[i]->is_new && x->order[i]->links != x->order[i]->in.nlink)
			err = bad(x->rv, -EBADMSG, "record %u: inode %" PRIu64 " got %u of its %u names", rec->index,
				  x->order[i]->in.id, x->order[i]->links, x->order[i]->in.nlink);
	if (x->open_fd >= 0 && close(x->open_fd) < 0 && !err)
		err = sys(x->rv, -1, "closing", "a file");
	x->open_fd = -1;
	if (!err && !node(x, x->root)->has_in)
		err = bad(x->rv, -EBADMSG, "record %u: no INODE of the tree's top", rec->index);
	for (size_t i = 0; !err && x->rv->apply && i < x->n; i++) {
		struct inc_node *nd = x->order[i];
		if (nd->has_in && !(err = path_of(x, nd, path)))
			err = recv_finish(x->rv, &nd->in, path, !nd->is_new);
	}
	if (!err && x->hold_made && x->rv->apply)
		err = recv_remove(x->rv, x->hold);
	x->hold_gone = x->hold_made;
	/* the top's times again: the hidden directory came and went in it */
	if (!err && x->rv->apply)
		err = recv_finish(x->rv, &node(x, x->root)->in, ".", false);
	for (size_t i = 0; !err && x->rv->apply && i < x->n; i++) {
		struct inc_node *nd = x->order[i];
		struct stat st;
		int perr = nd->has_in && !S_ISDIR(nd->type) ? path_of(x, nd, path) : -ENOENT;
		if (perr == -ENOENT)
			continue;
		err = perr ? perr : sys(x->rv, lstat(path, &st), "looking at", path);
		if (!err && st.st_nlink != nd->in.nlink)
			err = bad(x->rv, -EBADMSG, "%s has %ju links, the source's %u: the target's parent is not the "
				  "source's", path, (uintmax_t)st.st_nlink, nd->in.nlink);
	}
	return err;
}

static int
on_record(struct inc *x, const struct lfs_stream_rec *rec)
{
	x->rv->records++;
	if (rec->type == LFS_SR_REF)
		return on_ref(x, rec);
	if (!x->root)
		return bad(x->rv, -EBADMSG, "record %u: %s before the REF of the tree's top", rec->index,
			   lfs_stream_type_name(rec->type));
	x->changing = true;
	switch (rec->type) {
	case LFS_SR_UNLINK: return on_unlink(x, rec);
	case LFS_SR_INODE: return on_inode(x, rec);
	case LFS_SR_LINK: return on_link(x, rec);
	case LFS_SR_DATA: return on_data(x, rec);
	case LFS_SR_HOLE: return on_hole(x, rec);
	case LFS_SR_XATTR:
	case LFS_SR_RMXATTR: return on_xattr(x, rec);
	case LFS_SR_END: return on_end(x, rec);
	default: return bad(x->rv, -EBADMSG, "record %u: %s", rec->index, lfs_stream_type_name(rec->type));
	}
}

int
recv_incr(struct recv *rv, struct lfs_stream_rd *rd)
{
	struct inc x = { .rv = rv, .open_fd = -1 };
	struct lfs_stream_rec rec;
	u64map_init(&x.nodes);
	int err = 0;
	while (!err && (err = lfs_stream_next(rd, &rec)) == 0)
		err = on_record(&x, &rec);
	if (x.open_fd >= 0)
		close(x.open_fd);
	rv->changed = x.n;
	for (size_t i = 0; i < x.n; i++) {
		free(x.order[i]->name);
		free(x.order[i]->target);
		free(x.order[i]);
	}
	free(x.order);
	u64map_free(&x.nodes);
	return err < 0 ? err : 0;
}

/* Why the stream was refused, in rv->why; returns err (shared with the
 * fuzzer, which links this file without lfs_receive.c). */
int
recv_bad(struct recv *rv, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rv->why, sizeof(rv->why), fmt, ap);
	va_end(ap);
	return err;
}
