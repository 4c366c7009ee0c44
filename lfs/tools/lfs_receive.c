/*
 * lfs_receive.c — lfs-receive: read a send stream (lfs(5), SEND STREAMS)
 * from standard input, check it, and make the tree it holds.
 *
 *   lfs-receive -n            check the stream only
 *   lfs-receive -x DIR        make the tree as DIR/NAME (NAME: the snapshot's)
 *   lfs-receive MNT           make it snapshot NAME of the lfs mounted at MNT
 *
 * The records come from the library's decoder (stream.h), each checked
 * alone there; here they are checked against each other (a name for an
 * inode sent before, in a directory made before, data inside a regular
 * file's size, every inode given all its names by the end).  The tree is
 * made under a hidden name beside DIR/NAME and renamed to it only once
 * the END record has vouched for the whole stream; a stream refused on
 * the way removes what was made.  Into a mounted lfs: recv_mount.c; an
 * incremental stream's changes: recv_incr.c.  Each inode is made at its first name:
 * its size, owner and mode at once, then its data, then its extended
 * attributes (a write drops security.capability); flags and times at
 * the end, when nothing more changes them.
 */
#include "lfs.h"
#include "recv.h"
#include "stream.h"
#include "tool.h"
#include "u64map.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static void
usage(FILE *f)
{
	fprintf(f, "usage: lfs-receive MNT < STREAM      make the stream's snapshot a snapshot of the lfs at MNT\n"
		   "       lfs-receive -x DIR < STREAM   make the stream's snapshot as DIR/NAME\n"
		   "       lfs-receive -n < STREAM       check the stream, make nothing\n"
		   "  -x DIR  the directory to make the tree in (any filesystem)\n"
		   "  -n      check only\n"
		   "  -v      say what was received\n" LFS_TOOL_HELP_LINES);
}

struct node {
	struct lfs_stream_inode in;
	char *path;                 /* its first name, from the tree's top; NULL until linked */
	char *target;               /* a symlink's */
	uint32_t links;             /* LINK records seen */
};

int
recv_sys(struct recv *rv, int ret, const char *what, const char *path)
{
	return ret < 0 ? recv_bad(rv, -errno, "%s %s: %s", what, path, strerror(errno)) : 0;
}

#define bad recv_bad
#define sys recv_sys

static int
read_in(void *ctx, void *buf, size_t len)
{
	int fd = ctx ? *(int *)ctx : STDIN_FILENO;
	for (;;) {
		ssize_t n = read(fd, buf, len > (1u << 30) ? 1u << 30 : len);
		if (n >= 0 || errno != EINTR)
			return n < 0 ? -errno : (int)n;
	}
}

static int
add_node(struct recv *rv, const struct lfs_stream_rec *rec)
{
	if (u64map_get(&rv->nodes, rec->inode.id))
		return bad(rv, -EBADMSG, "record %u: inode %" PRIu64 " sent twice", rec->index, rec->inode.id);
	if (!rv->root && !S_ISDIR(rec->inode.mode))
		return bad(rv, -EBADMSG, "record %u: the tree's top is not a directory", rec->index);
	if (rv->n == rv->cap) {
		size_t cap = rv->cap ? 2 * rv->cap : 256;
		struct node **o = realloc(rv->order, cap * sizeof(*o));
		if (!o)
			return -ENOMEM;
		rv->order = o;
		rv->cap = cap;
	}
	struct node *nd = calloc(1, sizeof(*nd));
	if (!nd)
		return -ENOMEM;
	nd->in = rec->inode;
	if (rec->dlen && !(nd->target = strndup((const char *)rec->data, rec->dlen))) {
		free(nd);
		return -ENOMEM;
	}
	int err = u64map_put(&rv->nodes, nd->in.id, nd);
	if (err) {
		free(nd->target);
		free(nd);
		return err;
	}
	rv->order[rv->n++] = nd;
	if (!rv->root) {
		rv->root = nd->in.id;
		nd->links = 1;
		nd->path = strdup(".");
		return nd->path ? 0 : -ENOMEM;
	}
	return 0;
}

static int
drop_inherited(struct recv *rv, const char *path, bool dir)
{
	if (lremovexattr(path, "system.posix_acl_access") < 0 && errno != ENODATA && errno != EOPNOTSUPP)
		return sys(rv, -1, "removing the inherited ACL of", path);
	if (dir && lremovexattr(path, "system.posix_acl_default") < 0 && errno != ENODATA && errno != EOPNOTSUPP)
		return sys(rv, -1, "removing the inherited default ACL of", path);
	return 0;
}

int
recv_make(struct recv *rv, const struct lfs_stream_inode *in, const char *target, const char *path)
{
	mode_t type = in->mode & S_IFMT;
	int err;
	if (type == S_IFREG) {
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		err = sys(rv, fd, "creating", path);
		if (!err)
			err = sys(rv, ftruncate(fd, (off_t)in->size), "sizing", path);
		if (fd >= 0)
			close(fd);
	} else if (type == S_IFDIR) {
		err = sys(rv, mkdir(path, 0700), "making directory", path);
	} else if (type == S_IFLNK) {
		err = sys(rv, symlink(target, path), "making symbolic link", path);
	} else {
		err = sys(rv, mknod(path, type | 0600, (dev_t)in->rdev), "making node", path);
	}
	/* what a default ACL above gave it: the stream says what it has */
	if (!err && type != S_IFLNK)
		err = drop_inherited(rv, path, type == S_IFDIR);
	if (!err)
		err = sys(rv, lchown(path, in->uid, in->gid), "changing the owner of", path);
	if (!err && type != S_IFLNK)
		err = sys(rv, chmod(path, in->mode & 07777), "changing the mode of", path);
	return err;
}

static int
on_link(struct recv *rv, const struct lfs_stream_rec *rec)
{
	struct node *dir = u64map_get(&rv->nodes, rec->dir), *nd = u64map_get(&rv->nodes, rec->id);
	if (!dir || !S_ISDIR(dir->in.mode) || !dir->path || !nd)
		return bad(rv, -EBADMSG, "record %u: a name for inode %" PRIu64 " in %" PRIu64
			   ", which was not sent (or is no directory) before", rec->index, rec->id, rec->dir);
	if (nd->links >= nd->in.nlink)
		return bad(rv, -EBADMSG, "record %u: inode %" PRIu64 " given more than its %u names", rec->index,
			   rec->id, nd->in.nlink);
	size_t len = strlen(dir->path) + 1 + rec->nlen + 1;
	char *path = malloc(len);
	if (!path)
		return -ENOMEM;
	snprintf(path, len, "%s/%s", dir->path, rec->name);
	int err = 0;
	if (rv->apply)
		err = nd->path ? sys(rv, link(nd->path, path), "linking", path) : recv_make(rv, &nd->in, nd->target, path);
	nd->links++;
	if (!nd->path && !err) {
		nd->path = path;
		return 0;
	}
	free(path);
	return err;
}

static int
on_data(struct recv *rv, const struct lfs_stream_rec *rec)
{
	struct node *nd = u64map_get(&rv->nodes, rec->id);
	if (!nd || !S_ISREG(nd->in.mode) || !nd->path || rec->off + rec->dlen > nd->in.size)
		return bad(rv, -EBADMSG, "record %u: data at %" PRIu64 " for inode %" PRIu64
			   " (not a regular file named before, or past its size)", rec->index, rec->off, rec->id);
	rv->data_bytes += rec->dlen;
	if (!rv->apply)
		return 0;
	if (rv->open_node != nd) {
		if (rv->open_fd >= 0)
			close(rv->open_fd);
		rv->open_node = nd;
		rv->open_fd = open(nd->path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		if (rv->open_fd < 0)
			return sys(rv, -1, "opening", nd->path);
	}
	ssize_t n = pwrite(rv->open_fd, rec->data, rec->dlen, (off_t)rec->off);
	if (n >= 0 && (size_t)n != rec->dlen)
		return bad(rv, -EIO, "writing %s: short write", nd->path);
	return sys(rv, (int)n, "writing", nd->path);
}

static int
on_xattr(struct recv *rv, const struct lfs_stream_rec *rec)
{
	struct node *nd = u64map_get(&rv->nodes, rec->id);
	if (!nd || !nd->path)
		return bad(rv, -EBADMSG, "record %u: an attribute of inode %" PRIu64 " not named before", rec->index,
			   rec->id);
	if (!rv->apply)
		return 0;
	/* the data written first, which would drop security.capability after */
	if (rv->open_node == nd) {
		rv->open_node = NULL;
		int err = sys(rv, close(rv->open_fd), "closing", nd->path);
		rv->open_fd = -1;
		if (err)
			return err;
	}
	return sys(rv, lsetxattr(nd->path, rec->name, rec->data, rec->dlen, 0), "setting an attribute of",
		   nd->path);
}

int
recv_finish(struct recv *rv, const struct lfs_stream_inode *in, const char *path, bool all_flags)
{
	if ((in->flags || all_flags) && (S_ISREG(in->mode) || S_ISDIR(in->mode))) {
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		int flags = (int)in->flags;
		int err = sys(rv, fd, "opening", path);
		if (!err)
			err = sys(rv, ioctl(fd, FS_IOC_SETFLAGS, &flags), "setting the flags of", path);
		if (fd >= 0)
			close(fd);
		if (err)
			return err;
	}
	struct timespec ts[2] = { { .tv_sec = in->atime.s, .tv_nsec = in->atime.ns },
				  { .tv_sec = in->mtime.s, .tv_nsec = in->mtime.ns } };
	return sys(rv, utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), "setting the times of", path);
}

/* chattr(1)'s flags, then the times: nothing changes them after. */
static int
finish_node(struct recv *rv, struct node *nd)
{
	/* the top was there before the stream: its owner and mode come now */
	if (nd->in.id == rv->root) {
		int err = sys(rv, lchown(".", nd->in.uid, nd->in.gid), "changing the owner of", "the top");
		if (!err)
			err = sys(rv, chmod(".", nd->in.mode & 07777), "changing the mode of", "the top");
		if (err)
			return err;
	}
	return recv_finish(rv, &nd->in, nd->path, false);
}

static int
on_end(struct recv *rv, const struct lfs_stream_rec *rec)
{
	for (size_t i = 0; i < rv->n; i++)
		if (rv->order[i]->links != rv->order[i]->in.nlink)
			return bad(rv, -EBADMSG, "record %u: inode %" PRIu64 " got %u of its %u names", rec->index,
				   rv->order[i]->in.id, rv->order[i]->links, rv->order[i]->in.nlink);
	if (rv->open_fd >= 0 && close(rv->open_fd) < 0) {
		rv->open_fd = -1;
		return sys(rv, -1, "closing", rv->open_node->path);
	}
	rv->open_fd = -1;
	for (size_t i = 0; rv->apply && i < rv->n; i++) {
		int err = finish_node(rv, rv->order[i]);
		if (err)
			return err;
	}
	return 0;
}

static int
on_record(struct recv *rv, const struct lfs_stream_rec *rec)
{
	rv->records++;
	if (rec->type != LFS_SR_BEGIN && rec->type != LFS_SR_INODE && !rv->root)
		return bad(rv, -EBADMSG, "record %u: %s before the tree's top", rec->index,
			   lfs_stream_type_name(rec->type));
	switch (rec->type) {
	case LFS_SR_INODE: return add_node(rv, rec);
	case LFS_SR_LINK: return on_link(rv, rec);
	case LFS_SR_DATA: return on_data(rv, rec);
	case LFS_SR_XATTR: return on_xattr(rv, rec);
	case LFS_SR_END: return on_end(rv, rec);
	default: return 0;
	}
}

void
recv_free(struct recv *rv)
{
	for (size_t i = 0; i < rv->n; i++) {
		free(rv->order[i]->path);
		free(rv->order[i]->target);
		free(rv->order[i]);
	}
	free(rv->order);
	u64map_free(&rv->nodes);
	if (rv->open_fd >= 0)
		close(rv->open_fd);
}

static int
refused(struct recv *rv, const struct lfs_stream_rd *rd, int err)
{
	if (err < 0 && !rv->why[0])
		bad(rv, err, "%s", rd->why[0] ? rd->why : strerror(-err));
	return err < 0 ? err : 0;
}

int
recv_stream_open(struct recv *rv, struct lfs_stream_rd *rd, int *fd, struct lfs_stream_begin *b)
{
	u64map_init(&rv->nodes);
	rv->open_fd = -1;
	struct lfs_stream_rec rec;
	int err = lfs_stream_rd_init(rd, read_in, fd);
	if (!err && (err = lfs_stream_next(rd, &rec)) == 0)
		*b = rec.begin; /* the decoder takes nothing else first */
	return refused(rv, rd, err > 0 ? -EBADMSG : err);
}

int
recv_stream_rest(struct recv *rv, struct lfs_stream_rd *rd, const struct lfs_stream_begin *b)
{
	struct lfs_stream_rec rec;
	int err = 0;
	if (b->parent_seq)
		err = recv_incr(rv, rd);
	else
		while (!err && (err = lfs_stream_next(rd, &rec)) == 0)
			err = on_record(rv, &rec);
	return refused(rv, rd, err);
}

/* Every record to its end; the stream's BEGIN into *b.  rv->why says
 * why not. */
static int
receive(struct recv *rv, struct lfs_stream_begin *b)
{
	struct lfs_stream_rd rd;
	int err = recv_stream_open(rv, &rd, NULL, b);
	if (!err && b->parent_seq && rv->apply)
		err = bad(rv, -EOPNOTSUPP, "an incremental stream (from checkpoint %" PRIu64 "): receive it into a "
			  "mounted lfs that has its parent (lfs-receive MNT)", b->parent_seq);
	if (!err)
		err = recv_stream_rest(rv, &rd, b);
	lfs_stream_rd_free(&rd);
	return err;
}

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

static int
rm_or_stop(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

int
recv_remove(struct recv *rv, const char *path)
{
	return sys(rv, nftw(path, rm_or_stop, 16, FTW_DEPTH | FTW_PHYS), "removing", path);
}

/* Check the stream, making nothing. */
static int
check_only(bool verbose)
{
	struct recv rv = { 0 };
	struct lfs_stream_begin b = { 0 };
	int err = receive(&rv, &b);
	if (err)
		fprintf(stderr, "lfs-receive: stream refused: %s\n", rv.why);
	else if (verbose)
		printf("snapshot '%s' (checkpoint %" PRIu64 "%s): %zu inodes, %" PRIu64 " records, %" PRIu64
		       " bytes of data\n", b.name, b.seq, b.parent_seq ? ", changes since its parent" : "",
		       rv.n + rv.changed, rv.records, rv.data_bytes);
	recv_free(&rv);
	return err ? 1 : 0;
}

/* Make the tree under a hidden name in dir, then rename it to the
 * snapshot's name; on any error remove what was made. */
static int
extract(const char *dir, bool verbose)
{
	char stage[64];
	snprintf(stage, sizeof(stage), ".lfs-receive.%ld", (long)getpid());
	if (chdir(dir) < 0 || mkdir(stage, 0700) < 0 || chdir(stage) < 0) {
		fprintf(stderr, "lfs-receive: %s/%s: %s\n", dir, stage, strerror(errno));
		return 1;
	}
	struct recv rv = { .apply = true };
	struct lfs_stream_begin b = { 0 };
	int err = receive(&rv, &b);
	if (!err && !lfs_stream_name_ok(b.name, strlen(b.name)))
		err = bad(&rv, -EINVAL, "the stream's snapshot has no name a directory can have");
	if (chdir("..") < 0 && !err)
		err = sys(&rv, -1, "returning to", dir);
	if (!err && renameat2(AT_FDCWD, stage, AT_FDCWD, b.name, RENAME_NOREPLACE) < 0)
		err = sys(&rv, -1, "renaming the received tree to", b.name);
	if (err) {
		fprintf(stderr, "lfs-receive: nothing received: %s\n", rv.why[0] ? rv.why : strerror(-err));
		nftw(stage, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	} else if (verbose) {
		printf("received snapshot '%s' (checkpoint %" PRIu64 "): %zu inodes, %" PRIu64
		       " bytes of data, as %s/%s\n", b.name, b.seq, rv.n, rv.data_bytes, dir, b.name);
	}
	recv_free(&rv);
	return err ? 1 : 0;
}

int
main(int argc, char **argv)
{
	static const struct lfs_tool tool = { "lfs-receive", usage, 2 };
	static const struct option longopts[] = { LFS_TOOL_LONGOPTS, { NULL, 0, NULL, 0 } };
	const char *dir = NULL;
	bool check = false, verbose = false;
	int c;
	while ((c = getopt_long(argc, argv, "x:nv" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1) {
		switch (c) {
		case 'x': dir = optarg; break;
		case 'n': check = true; break;
		case 'v': verbose = true; break;
		default: return lfs_tool_opt(&tool, c);
		}
	}
	const char *mnt = optind < argc ? argv[optind] : NULL;
	if (argc - optind > 1 || (check + (dir != NULL) + (mnt != NULL)) != 1)
		return lfs_tool_usage_error(&tool);
	if (isatty(STDIN_FILENO)) {
		fprintf(stderr, "lfs-receive: standard input is a terminal: give it a stream from lfs-send\n");
		return 2;
	}
	return check ? check_only(verbose) : mnt ? recv_into_mount(mnt, verbose) : extract(dir, verbose);
}
