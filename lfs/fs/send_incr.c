/*
 * send_incr.c — layer 6: the changes between two kept checkpoints of one
 * filesystem as an incremental send stream (lfs.h, lfs_send_incr; lfs(5),
 * SEND STREAMS).  What changed is found the way a log-structured
 * filesystem finds it cheaply: an inode whose inode-map entry is the
 * same in both checkpoints is unchanged (an inode-map block at the same
 * address: all of its inodes are); a changed directory is compared name
 * by name, a changed file block by block by address (a block at the
 * same address in both trees holds the same bytes).  An inode is named
 * by its number and generation, (generation << 32) | number, so that a
 * number freed and reused between the two names two inodes.
 *
 * The records, in the order a receiver applies them: REF for every
 * inode of the parent's tree the changes touch, by a name it has there
 * (a directory's REF before the REFs in it, the root's first); UNLINK
 * for every name that went; the new names, an inode new since the
 * parent sent whole at its first name (as a full stream sends it); then
 * per changed inode its INODE record, the blocks that differ (DATA, or
 * HOLE where it has none now) and the attributes that differ (XATTR,
 * RMXATTR); the root's INODE always.
 */
#include "lfs_int.h"
#include "send.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#define ADDR_RUN 1024u  /* block addresses compared at a time */

/* A name an inode has in the parent's tree. */
struct pname {
	uint64_t dir;
	char *name;
	bool kept;               /* the snapshot has the name too, for the same inode */
};

/* A name that went (in the parent) or came (in the snapshot). */
struct change {
	uint64_t dir, ino;
	char *name;
};

struct changes {
	struct change *c;
	size_t n, cap;
};

struct incr {
	struct sender s;         /* s.fs: the snapshot's view */
	struct lfs_fs *p;        /* the parent's */
	uint64_t *both;          /* inodes in both whose records differ */
	size_t nboth, capboth;
	uint64_t *want;          /* inodes of the parent's tree to REF */
	size_t nwant, capwant;
	struct u64map wanted;    /* ino -> 1 */
	struct u64map plists;    /* dir ino -> struct lfs_send_dir *, the parent's */
	struct u64map pnames;    /* ino -> struct pname * */
	struct u64map refd;      /* ino -> REF_SENT or REF_NONE */
	struct u64map sent;      /* new inodes sent */
	struct changes gone, came;
	uint8_t *vbuf;           /* the parent's value of an attribute */
};

#define REF_SENT ((void *)1)
#define REF_NONE ((void *)2)     /* no name in the parent's tree: not in it */

static int
push(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 256;
		uint64_t *p = realloc(*a, c * sizeof(*p));
		if (!p)
			return -ENOMEM;
		*a = p;
		*cap = c;
	}
	(*a)[(*n)++] = v;
	return 0;
}

static int
push_change(struct changes *cs, uint64_t dir, uint64_t ino, const char *name)
{
	if (cs->n == cs->cap) {
		size_t c = cs->cap ? 2 * cs->cap : 64;
		struct change *p = realloc(cs->c, c * sizeof(*p));
		if (!p)
			return -ENOMEM;
		cs->c = p;
		cs->cap = c;
	}
	char *copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	cs->c[cs->n++] = (struct change){ dir, ino, copy };
	return 0;
}

static const struct lfs_imap_entry *
entry(struct lfs_fs *v, uint64_t ino)
{
	return lfs_imap_get(v, ino);
}

/* The same inode in both: in use in both, the number not reused. */
static bool
same_inode(const struct incr *x, uint64_t ino)
{
	const struct lfs_imap_entry *a = entry(x->p, ino), *b = entry(x->s.fs, ino);
	return (a->flags & LFS_IMAP_INUSE) && (b->flags & LFS_IMAP_INUSE) && a->version == b->version;
}

static uint64_t
id_in(struct lfs_fs *v, uint64_t ino)
{
	return (uint64_t)entry(v, ino)->version << 32 | ino;
}

static int
want(struct incr *x, uint64_t ino)
{
	if (u64map_get(&x->wanted, ino))
		return 0;
	int err = u64map_put(&x->wanted, ino, REF_SENT);
	return err ? err : push(&x->want, &x->nwant, &x->capwant, ino);
}

/* The inodes whose records differ: only the inode-map blocks at
 * different addresses are looked into. */
static int
scan_imap(struct incr *x)
{
	struct lfs_fs *p = x->p, *s = x->s.fs;
	uint64_t per = lfs_imap_per_block(s->bsize);
	uint64_t max = p->sb.max_inodes > s->sb.max_inodes ? p->sb.max_inodes : s->sb.max_inodes;
	uint32_t nb = p->n_imap_blocks > s->n_imap_blocks ? p->n_imap_blocks : s->n_imap_blocks;
	int err = 0;
	for (uint32_t b = 0; !err && b < nb; b++) {
		if (b < p->n_imap_blocks && b < s->n_imap_blocks && p->imap_addr[b] == s->imap_addr[b])
			continue;
		for (uint64_t ino = b * per; !err && ino < (b + 1) * per && ino < max; ino++) {
			const struct lfs_imap_entry *a = entry(p, ino), *c = entry(s, ino);
			if (ino >= LFS_ROOT_INO && same_inode(x, ino) && (a->daddr != c->daddr || a->slot != c->slot))
				err = push(&x->both, &x->nboth, &x->capboth, ino);
		}
	}
	return err;
}

/* The parent's entries of dir, listed once; each entry's name noted as
 * one its inode has (a name the snapshot keeps preferred). */
static int
plist(struct incr *x, uint64_t dir, struct lfs_send_dir **out)
{
	if ((*out = u64map_get(&x->plists, dir)))
		return 0;
	struct lfs_send_dir *l = calloc(1, sizeof(*l));
	int err = l ? lfs_send_list(x->p, dir, l) : -ENOMEM;
	if (!err)
		err = u64map_put(&x->plists, dir, l);
	if (err) {
		free(l);
		return err;
	}
	for (size_t i = 0; i < l->n; i++) {
		if (u64map_get(&x->pnames, l->e[i].ino))
			continue;
		struct pname *pn = malloc(sizeof(*pn));
		if (!pn || (err = u64map_put(&x->pnames, l->e[i].ino, pn))) {
			free(pn);
			return -ENOMEM;
		}
		*pn = (struct pname){ .dir = dir, .name = l->e[i].name };
	}
	*out = l;
	return 0;
}

static int scan_new(struct incr *x, uint64_t dir, unsigned depth);

/* A name of dir in the snapshot, not in the parent (or for another inode). */
static int
came(struct incr *x, uint64_t dir, const struct lfs_send_ent *e, unsigned depth)
{
	int err = push_change(&x->came, dir, e->ino, e->name);
	if (!err && same_inode(x, e->ino))
		err = want(x, e->ino);
	else if (!err && e->type == S_IFDIR)
		err = scan_new(x, e->ino, depth + 1);
	return err;
}

/* A directory new since the parent: the inodes of the parent's tree
 * moved into it are wanted too. */
static int
scan_new(struct incr *x, uint64_t dir, unsigned depth)
{
	if (depth > SEND_DEPTH_MAX)
		return -ELOOP;
	struct lfs_send_dir l;
	int err = lfs_send_list(x->s.fs, dir, &l);
	for (size_t i = 0; !err && i < l.n; i++) {
		if (same_inode(x, l.e[i].ino))
			err = want(x, l.e[i].ino);
		else if (l.e[i].type == S_IFDIR)
			err = scan_new(x, l.e[i].ino, depth + 1);
	}
	lfs_send_list_free(&l);
	return err;
}

static bool
same_entry(const struct incr *x, const struct lfs_send_ent *a, const struct lfs_send_ent *b)
{
	return a->ino == b->ino && same_inode(x, a->ino);
}

/* Directory dir, in both: its names that went and came. */
static int
diff_dir(struct incr *x, uint64_t dir)
{
	struct lfs_send_dir *pl, sl;
	int err = plist(x, dir, &pl);
	if (err)
		return err;
	if ((err = lfs_send_list(x->s.fs, dir, &sl)))
		return err;
	size_t i = 0, j = 0;
	while (!err && (i < pl->n || j < sl.n)) {
		int c = i == pl->n ? 1 : j == sl.n ? -1 : strcmp(pl->e[i].name, sl.e[j].name);
		if (c == 0 && same_entry(x, &pl->e[i], &sl.e[j])) {
			struct pname *pn = u64map_get(&x->pnames, pl->e[i].ino);
			if (pn && !pn->kept)
				*pn = (struct pname){ .dir = dir, .name = pl->e[i].name, .kept = true };
			i++, j++;
			continue;
		}
		if (c <= 0) {
			err = push_change(&x->gone, dir, pl->e[i].ino, pl->e[i].name);
			if (!err && same_inode(x, pl->e[i].ino))
				err = want(x, pl->e[i].ino);
			i++;
		}
		if (!err && c >= 0)
			err = came(x, dir, &sl.e[j++], 0);
	}
	lfs_send_list_free(&sl);
	return err;
}

/* The changed inodes: each wanted, a directory compared. */
static int
scan_changed(struct incr *x)
{
	int err = want(x, LFS_ROOT_INO);
	for (size_t k = 0; !err && k < x->nboth; k++) {
		struct stat st;
		uint64_t ino = x->both[k];
		if (lfs_getattr(x->s.fs, ino, &st) || st.st_nlink == 0)
			continue; /* not in the tree (an open file without a name) */
		err = want(x, ino);
		if (!err && S_ISDIR(st.st_mode))
			err = diff_dir(x, ino);
	}
	return err;
}

/* Files wanted without a name known yet: the parent's tree walked,
 * directories only, until each has one (a file's record does not say
 * where its names are). */
/* The wanted files with no name known: ino -> 1 in *m. */
static int
unnamed(struct incr *x, struct u64map *m)
{
	int err = 0;
	for (size_t k = 0; !err && k < x->nwant; k++) {
		struct stat st;
		uint64_t ino = x->want[k];
		if (ino != LFS_ROOT_INO && !u64map_get(&x->pnames, ino) && !lfs_getattr(x->p, ino, &st) &&
		    !S_ISDIR(st.st_mode))
			err = u64map_put(m, ino, REF_SENT);
	}
	return err;
}

/* Files wanted without a name known yet: the parent's tree walked,
 * directories only, until each has one (a file's record does not say
 * where its names are; a directory's does). */
static int
name_files(struct incr *x)
{
	struct u64map missing;
	u64map_init(&missing);
	uint64_t *queue = NULL;
	size_t head = 0, n = 0, cap = 0;
	int err = unnamed(x, &missing);
	if (!err && missing.count)
		err = push(&queue, &n, &cap, LFS_ROOT_INO);
	while (!err && missing.count && head < n) {
		struct lfs_send_dir *l;
		err = plist(x, queue[head++], &l);
		for (size_t i = 0; !err && i < l->n; i++) {
			u64map_del(&missing, l->e[i].ino);
			if (l->e[i].type == S_IFDIR)
				err = push(&queue, &n, &cap, l->e[i].ino);
		}
	}
	free(queue);
	u64map_free(&missing);
	return err;
}

/* REF of ino, after the REFs of the directories above it; -ENOENT if
 * it is not in the parent's tree (then it is sent as new, or not). */
static int
ref(struct incr *x, uint64_t ino, unsigned depth)
{
	void *r = u64map_get(&x->refd, ino);
	if (r)
		return r == REF_SENT ? 0 : -ENOENT;
	if (depth > SEND_DEPTH_MAX)
		return -ELOOP;
	int err;
	if (ino == LFS_ROOT_INO) {
		err = lfs_stream_put_ref(&x->s.w, id_in(x->p, ino), 0, "");
		return err ? err : u64map_put(&x->refd, ino, REF_SENT);
	}
	struct pname *pn = u64map_get(&x->pnames, ino);
	struct stat st;
	err = 0;
	if (!pn && !lfs_getattr(x->p, ino, &st) && S_ISDIR(st.st_mode) &&
	    !lfs_lookup(x->p, ino, "..", &st)) {
		/* a directory: its parent says where it is */
		lfs_forget(x->p, st.st_ino, 1);
		struct lfs_send_dir *l;
		if (st.st_ino != ino && (err = plist(x, st.st_ino, &l)))
			return err;
		pn = u64map_get(&x->pnames, ino);
	}
	if (pn)
		err = ref(x, pn->dir, depth + 1);
	if (!pn || err == -ENOENT)
		return u64map_put(&x->refd, ino, REF_NONE) ? -ENOMEM : -ENOENT;
	if (!err)
		err = lfs_stream_put_ref(&x->s.w, id_in(x->p, ino), id_in(x->p, pn->dir), pn->name);
	return err ? err : u64map_put(&x->refd, ino, REF_SENT);
}

/* The snapshot's inode ino is one the receiver has by a REF (not
 * another that had its number in the parent, REF'd as a directory above
 * a REF). */
static bool
in_parent(struct incr *x, uint64_t ino)
{
	return u64map_get(&x->refd, ino) == REF_SENT && same_inode(x, ino);
}

/* A name that came: a LINK, after the inode itself if it is new. */
static int
send_new(struct incr *x, uint64_t dir, uint64_t ino, const char *name, unsigned depth)
{
	struct sender *s = &x->s;
	uint64_t id = id_in(s->fs, ino), did = id_in(s->fs, dir);
	if (in_parent(x, ino) || u64map_get(&x->sent, ino))
		return lfs_stream_put_link(&s->w, did, id, name);
	if (depth > SEND_DEPTH_MAX)
		return -ELOOP;
	struct stat st;
	int err = u64map_put(&x->sent, ino, REF_SENT);
	if (!err)
		err = lfs_getattr(s->fs, ino, &st);
	if (!err)
		err = lfs_send_inode(s, id, &st);
	if (!err)
		err = lfs_stream_put_link(&s->w, did, id, name);
	if (!err && S_ISREG(st.st_mode))
		err = lfs_send_data(s, id, ino);
	if (!err)
		err = lfs_send_xattrs(s, id, ino);
	if (err || !S_ISDIR(st.st_mode))
		return err;
	struct lfs_send_dir l;
	err = lfs_send_list(s->fs, ino, &l);
	for (size_t i = 0; !err && i < l.n; i++)
		err = send_new(x, ino, l.e[i].ino, l.e[i].name, depth + 1);
	lfs_send_list_free(&l);
	return err;
}

/* Block addresses first..first+n of ino in view v (0: a hole); *inl if
 * its content is in its record. */
static int
block_addrs(struct lfs_fs *v, uint64_t ino, uint64_t first, size_t n, uint64_t *out, bool *inl)
{
	struct lfs_inode *ip;
	lfs_lock(v);
	int err = lfs_iget(v, ino, &ip);
	if (!err)
		*inl = ip->di.flags & LFS_DI_INLINE;
	for (size_t i = 0; !err && !*inl && i < n; i++)
		err = lfs_bmap_get(v, ip, first + i, &out[i]);
	lfs_cache_trim(v);
	pthread_mutex_unlock(&v->lock);
	return err;
}

/* A run of blocks [a, b) that differ: their bytes, or a hole. */
static int
send_run(struct incr *x, uint64_t id, uint64_t ino, int kind, uint64_t a, uint64_t b, uint64_t size)
{
	uint64_t bs = x->s.fs->bsize, off = a * bs, end = b * bs < size ? b * bs : size;
	if (off >= end)
		return 0;
	if (kind == 2)
		return lfs_stream_put_hole(&x->s.w, id, off, end - off);
	return lfs_send_range(&x->s, id, ino, (off_t)off, (off_t)end);
}

/* A regular file in both: the blocks whose addresses differ. */
static int
diff_data(struct incr *x, uint64_t id, uint64_t ino, uint64_t size)
{
	struct stat pst;
	uint64_t bs = x->s.fs->bsize, ap[ADDR_RUN], as[ADDR_RUN];
	bool pinl = false, sinl = false;
	int err = lfs_getattr(x->p, ino, &pst);
	if (!err)
		err = block_addrs(x->p, ino, 0, 0, ap, &pinl);
	if (!err)
		err = block_addrs(x->s.fs, ino, 0, 0, as, &sinl);
	if (err)
		return err;
	if (pinl || sinl) { /* no addresses to compare: all of it */
		err = size ? lfs_stream_put_hole(&x->s.w, id, 0, size) : 0;
		return err ? err : lfs_send_data(&x->s, id, ino);
	}
	uint64_t nblk = (size + bs - 1) / bs, pblk = ((uint64_t)pst.st_size + bs - 1) / bs, start = 0;
	int kind = 0; /* of the run from start: 0 the same, 1 data, 2 a hole */
	err = lfs_open(x->s.fs, ino, O_RDONLY);
	for (uint64_t first = 0; !err && first < nblk; first += ADDR_RUN) {
		size_t n = nblk - first < ADDR_RUN ? (size_t)(nblk - first) : ADDR_RUN;
		size_t np = first >= pblk ? 0 : pblk - first < n ? (size_t)(pblk - first) : n;
		memset(ap, 0, sizeof(ap));
		err = block_addrs(x->p, ino, first, np, ap, &pinl);
		if (!err)
			err = block_addrs(x->s.fs, ino, first, n, as, &sinl);
		for (size_t i = 0; !err && i < n; i++) {
			int k = ap[i] == as[i] ? 0 : as[i] ? 1 : 2;
			if (k == kind)
				continue;
			if (kind)
				err = send_run(x, id, ino, kind, start, first + i, size);
			kind = k;
			start = first + i;
		}
	}
	if (!err && kind)
		err = send_run(x, id, ino, kind, start, nblk, size);
	int rerr = lfs_release(x->s.fs, ino);
	return err ? err : rerr;
}

/* The attributes of ino that differ, and those that went.  A file's
 * capability is sent even unchanged: the receiver's writes and chown
 * drop it, as the kernel does. */
static int
diff_xattrs(struct incr *x, uint64_t id, uint64_t ino, bool file)
{
	struct sender *s = &x->s;
	char *list = NULL;
	ssize_t len = 0;
	int err = lfs_send_xattr_names(s->fs, ino, &list, &len);
	for (ssize_t at = 0; !err && at < len; at += (ssize_t)strlen(list + at) + 1) {
		ssize_t v = lfs_getxattr(s->fs, ino, list + at, s->buf, LFS_STREAM_XVAL_MAX);
		ssize_t w = lfs_getxattr(x->p, ino, list + at, x->vbuf, LFS_STREAM_XVAL_MAX);
		if (v < 0)
			err = (int)v;
		else if (w != v || memcmp(s->buf, x->vbuf, (size_t)v) || (file && !strcmp(list + at, "security.capability")))
			err = lfs_stream_put_xattr(&s->w, id, list + at, s->buf, (size_t)v);
	}
	free(list);
	list = NULL;
	if (!err)
		err = lfs_send_xattr_names(x->p, ino, &list, &len);
	for (ssize_t at = 0; !err && at < len; at += (ssize_t)strlen(list + at) + 1)
		if (lfs_getxattr(s->fs, ino, list + at, NULL, 0) == -ENODATA)
			err = lfs_stream_put_rmxattr(&s->w, id, list + at);
	free(list);
	return err;
}

/* An inode of both that changed: INODE, then its blocks and attributes. */
static int
send_update(struct incr *x, uint64_t ino)
{
	struct stat st;
	uint64_t id = id_in(x->s.fs, ino);
	int err = lfs_getattr(x->s.fs, ino, &st);
	if (!err)
		err = lfs_send_inode(&x->s, id, &st);
	if (!err && S_ISREG(st.st_mode))
		err = diff_data(x, id, ino, (uint64_t)st.st_size);
	if (!err)
		err = diff_xattrs(x, id, ino, S_ISREG(st.st_mode));
	return err;
}

static int
emit(struct incr *x)
{
	int err = 0;
	/* REFs, the root's first */
	for (size_t k = 0; !err && k < x->nwant; k++)
		if ((err = ref(x, x->want[k], 0)) == -ENOENT)
			err = 0;
	for (size_t k = 0; !err && k < x->gone.n; k++) {
		struct change *c = &x->gone.c[k];
		if (in_parent(x, c->dir))
			err = lfs_stream_put_unlink(&x->s.w, id_in(x->p, c->dir), id_in(x->p, c->ino), c->name);
	}
	for (size_t k = 0; !err && k < x->came.n; k++) {
		struct change *c = &x->came.c[k];
		if (in_parent(x, c->dir))
			err = send_new(x, c->dir, c->ino, c->name, 0);
	}
	/* every inode wanted, in the parent's tree and the snapshot's, the root first */
	for (size_t k = 0; !err && k < x->nwant; k++) {
		struct stat st;
		uint64_t ino = x->want[k];
		if (in_parent(x, ino) && !lfs_getattr(x->s.fs, ino, &st) && st.st_nlink)
			err = send_update(x, ino);
	}
	return err;
}

static void
free_plist(uint64_t key, void *val, void *ctx)
{
	(void)key, (void)ctx;
	lfs_send_list_free(val);
	free(val);
}

static void
free_val(uint64_t key, void *val, void *ctx)
{
	(void)key, (void)ctx;
	free(val);
}

static void
free_changes(struct changes *cs)
{
	for (size_t k = 0; k < cs->n; k++)
		free(cs->c[k].name);
	free(cs->c);
}

static void
incr_free(struct incr *x)
{
	u64map_each(&x->pnames, free_val, NULL);
	u64map_each(&x->plists, free_plist, NULL);
	u64map_free(&x->pnames);
	u64map_free(&x->plists);
	u64map_free(&x->wanted);
	u64map_free(&x->refd);
	u64map_free(&x->sent);
	free_changes(&x->gone);
	free_changes(&x->came);
	free(x->both);
	free(x->want);
	free(x->s.buf);
	free(x->vbuf);
}

int
lfs_send_incr(struct lfs_fs *parent, struct lfs_fs *fs, const char *name, const char *parent_name,
	      int (*write)(void *ctx, const void *buf, size_t len), void *ctx)
{
	struct lfs_stream_begin b = { .seq = lfs_view_seq(fs), .parent_seq = lfs_view_seq(parent) };
	if (!b.seq || !b.parent_seq || b.parent_seq >= b.seq || memcmp(parent->sb.uuid, fs->sb.uuid, 16))
		return -EINVAL; /* two checkpoints of one filesystem, the parent older */
	if (parent->view_root || fs->view_root)
		return -EOPNOTSUPP; /* a received tree: its inodes are not the source's */
	if (strlen(name) > LFS_STREAM_SNAP_NAME || strlen(parent_name) > LFS_STREAM_SNAP_NAME)
		return -ENAMETOOLONG;
	strcpy(b.name, name);
	strcpy(b.parent_name, parent_name);
	memcpy(b.uuid, fs->sb.uuid, sizeof(b.uuid));
	struct incr x = { .s = { .fs = fs, .w = { .write = write, .ctx = ctx } }, .p = parent };
	u64map_init(&x.wanted);
	u64map_init(&x.plists);
	u64map_init(&x.pnames);
	u64map_init(&x.refd);
	u64map_init(&x.sent);
	x.s.buf = lfs_send_buf();
	x.vbuf = lfs_send_buf();
	int err = x.s.buf && x.vbuf ? scan_imap(&x) : -ENOMEM;
	if (!err)
		err = scan_changed(&x);
	if (!err)
		err = name_files(&x);
	if (!err)
		err = lfs_stream_put_begin(&x.s.w, &b);
	if (!err)
		err = emit(&x);
	if (!err)
		err = lfs_stream_put_end(&x.s.w);
	incr_free(&x);
	return err;
}
