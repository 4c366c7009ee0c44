/*
 * send.c — layer 6: a kept checkpoint's tree as a send stream (lfs.h,
 * lfs_send; the records are stream.h's).  It walks a view (lfs_view_open,
 * lfs_view_open_remote) through the calls of lfs.h, depth first: a
 * directory's inode before its entries, an inode's INODE record before
 * its first LINK, its attributes and data after it, so that a receiver
 * can make each inode where its first name is.  Only the extents
 * SEEK_DATA finds are sent: a hole stays a hole.
 */
#include "lfs_int.h"
#include "send.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>



struct full {
	struct sender s;
	struct u64map seen;      /* inodes with several names already sent */
};

static int
collect(void *ctx, const char *name, const struct stat *st, off_t next)
{
	(void)next;
	struct lfs_send_dir *l = ctx;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct lfs_send_ent *p = realloc(l->e, cap * sizeof(*p));
		if (!p) {
			l->err = -ENOMEM;
			return 1;
		}
		l->e = p;
		l->cap = cap;
	}
	if (!(l->e[l->n].name = strdup(name))) {
		l->err = -ENOMEM;
		return 1;
	}
	l->e[l->n].ino = st->st_ino;
	l->e[l->n].type = st->st_mode & S_IFMT;
	l->n++;
	return 0;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const struct lfs_send_ent *)a)->name, ((const struct lfs_send_ent *)b)->name);
}

int
lfs_send_list(struct lfs_fs *fs, uint64_t dir, struct lfs_send_dir *l)
{
	memset(l, 0, sizeof(*l));
	int err = lfs_readdir(fs, dir, 0, collect, l);
	if (!err)
		err = l->err;
	if (!err && l->n)
		qsort(l->e, l->n, sizeof(*l->e), by_name);
	if (err)
		lfs_send_list_free(l);
	return err;
}

void
lfs_send_list_free(struct lfs_send_dir *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].name);
	free(l->e);
	memset(l, 0, sizeof(*l));
}

uint8_t *
lfs_send_buf(void)
{
	return malloc(LFS_STREAM_DATA_MAX > LFS_STREAM_XVAL_MAX ? LFS_STREAM_DATA_MAX : LFS_STREAM_XVAL_MAX);
}

int
lfs_send_xattr_names(struct lfs_fs *fs, uint64_t ino, char **list, ssize_t *got)
{
	*list = NULL;
	*got = 0;
	ssize_t len = lfs_listxattr(fs, ino, NULL, 0);
	if (len <= 0)
		return len == -ENOTSUP || len == -ENOSYS ? 0 : (int)len;
	if (!(*list = malloc((size_t)len)))
		return -ENOMEM;
	*got = lfs_listxattr(fs, ino, *list, (size_t)len);
	return *got < 0 ? (int)*got : 0;
}

int
lfs_send_xattrs(struct sender *s, uint64_t id, uint64_t ino)
{
	char *list;
	ssize_t got;
	int err = lfs_send_xattr_names(s->fs, ino, &list, &got);
	for (ssize_t at = 0; !err && at < got; at += (ssize_t)strlen(list + at) + 1) {
		ssize_t v = lfs_getxattr(s->fs, ino, list + at, s->buf, LFS_STREAM_XVAL_MAX);
		err = v < 0 ? (int)v : lfs_stream_put_xattr(&s->w, id, list + at, s->buf, (size_t)v);
	}
	free(list);
	return err;
}

int
lfs_send_range(struct sender *s, uint64_t id, uint64_t ino, off_t off, off_t end)
{
	int err = 0;
	while (!err && off < end) {
		size_t want = end - off < LFS_STREAM_DATA_MAX ? (size_t)(end - off) : LFS_STREAM_DATA_MAX;
		ssize_t n = lfs_read(s->fs, ino, s->buf, want, off);
		if (n <= 0)
			return n < 0 ? (int)n : -EIO; /* the size said there was more */
		err = lfs_stream_put_data(&s->w, id, (uint64_t)off, s->buf, (size_t)n);
		off += n;
	}
	return err;
}

int
lfs_send_data(struct sender *s, uint64_t id, uint64_t ino)
{
	int err = lfs_open(s->fs, ino, O_RDONLY);
	if (err)
		return err;
	off_t off = 0, data, hole;
	while (!err) {
		err = lfs_lseek(s->fs, ino, off, SEEK_DATA, &data);
		if (err == -ENXIO) {
			err = 0;
			break;
		}
		if (!err)
			err = lfs_lseek(s->fs, ino, data, SEEK_HOLE, &hole);
		if (!err)
			err = lfs_send_range(s, id, ino, data, hole);
		off = hole;
	}
	int rerr = lfs_release(s->fs, ino);
	return err ? err : rerr;
}

static struct lfs_stream_time
stime(struct timespec t)
{
	return (struct lfs_stream_time){ .s = t.tv_sec, .ns = (uint32_t)t.tv_nsec };
}

int
lfs_send_inode(struct sender *s, uint64_t id, const struct stat *st)
{
	uint32_t ours = 0;
	int err = lfs_get_flags(s->fs, st->st_ino, &ours);
	if (err && err != -EOPNOTSUPP)
		return err;
	/* the stream has them as FS_IOC_GETFLAGS does */
	uint32_t flags = (ours & LFS_DI_NODUMP ? FS_NODUMP_FL : 0) | (ours & LFS_DI_NOATIME ? FS_NOATIME_FL : 0);
	struct lfs_stream_inode in = {
		.id = id, .mode = st->st_mode, .uid = st->st_uid, .gid = st->st_gid, .flags = flags,
		.rdev = S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ? st->st_rdev : 0,
		.size = S_ISDIR(st->st_mode) ? 0 : (uint64_t)st->st_size,
		.nlink = S_ISDIR(st->st_mode) ? 1 : (uint32_t)st->st_nlink,
		.atime = stime(st->st_atim), .mtime = stime(st->st_mtim), .ctime = stime(st->st_ctim),
	};
	if (!S_ISLNK(st->st_mode))
		return lfs_stream_put_inode(&s->w, &in, NULL, 0);
	char target[LFS_STREAM_LINK_MAX + 1];
	int n = lfs_readlink(s->fs, st->st_ino, target, sizeof(target));
	if (n < 0)
		return n;
	in.size = strnlen(target, sizeof(target) - 1);
	return lfs_stream_put_inode(&s->w, &in, target, in.size);
}

static int send_dir(struct full *f, uint64_t dir, unsigned depth);

/* Entry name of dir, whose inode st is: all of it the first time, a
 * LINK alone for a further name of an inode already sent. */
static int
send_entry(struct full *f, uint64_t dir, const char *name, const struct stat *st, unsigned depth)
{
	struct sender *s = &f->s;
	bool shared = !S_ISDIR(st->st_mode) && st->st_nlink > 1;
	if (shared && u64map_get(&f->seen, st->st_ino))
		return lfs_stream_put_link(&s->w, dir, st->st_ino, name);
	int err = shared ? u64map_put(&f->seen, st->st_ino, s) : 0;
	if (!err)
		err = lfs_send_inode(s, st->st_ino, st);
	if (!err)
		err = lfs_stream_put_link(&s->w, dir, st->st_ino, name);
	/* attributes after the data: a write drops security.capability */
	if (!err && S_ISREG(st->st_mode))
		err = lfs_send_data(s, st->st_ino, st->st_ino);
	if (!err)
		err = lfs_send_xattrs(s, st->st_ino, st->st_ino);
	if (!err && S_ISDIR(st->st_mode))
		err = send_dir(f, st->st_ino, depth + 1);
	return err;
}

static int
send_dir(struct full *f, uint64_t dir, unsigned depth)
{
	struct sender *s = &f->s;
	if (depth > SEND_DEPTH_MAX)
		return -ELOOP;
	struct lfs_send_dir l;
	int err = lfs_send_list(s->fs, dir, &l);
	for (size_t i = 0; !err && i < l.n; i++) {
		struct stat st;
		err = lfs_lookup(s->fs, dir, l.e[i].name, &st);
		if (err)
			break;
		err = send_entry(f, dir, l.e[i].name, &st, depth);
		lfs_forget(s->fs, st.st_ino, 1);
	}
	lfs_send_list_free(&l);
	return err;
}

int
lfs_send(struct lfs_fs *fs, const char *name, int (*write)(void *ctx, const void *buf, size_t len), void *ctx)
{
	struct full f = { .s = { .fs = fs, .w = { .write = write, .ctx = ctx } } };
	struct sender *s = &f.s;
	struct lfs_stream_begin b = { .seq = fs->view_seq ? fs->view_seq : fs->ckpt_seq };
	memcpy(b.uuid, fs->sb.uuid, sizeof(b.uuid));
	if (name && strlen(name) > LFS_STREAM_SNAP_NAME)
		return -ENAMETOOLONG;
	if (name)
		strcpy(b.name, name);
	u64map_init(&f.seen);
	s->buf = lfs_send_buf();
	struct stat st;
	int err = s->buf ? lfs_getattr(fs, LFS_ROOT_INO, &st) : -ENOMEM;
	if (!err)
		err = lfs_stream_put_begin(&s->w, &b);
	if (!err)
		err = lfs_send_inode(s, LFS_ROOT_INO, &st);
	if (!err)
		err = lfs_send_xattrs(s, LFS_ROOT_INO, LFS_ROOT_INO);
	if (!err)
		err = send_dir(&f, LFS_ROOT_INO, 0);
	if (!err)
		err = lfs_stream_put_end(&s->w);
	u64map_free(&f.seen);
	free(s->buf);
	return err;
}
