/*
 * salvage.c — fsck.lfs --salvage (fsck.lfs(8), SALVAGE): copy every file
 * that can be read out of an image its checkpoints no longer describe.
 *
 * A log describes itself: each partial segment's summary names the
 * inode, version and logical block of every block after it, with the
 * block's crc.  So every segment is scanned with the one log reader
 * (logwalk.h), and of what verifies the newest inode record of each
 * inode and the newest block of each (inode, version, logical block) are
 * kept.  The tree is rebuilt from the root's directory blocks down; an
 * inode with a record that no directory names goes to lost+found/#INO.
 * A direct pointer the newest record leaves empty stays a hole (a
 * truncate or punch after the block was written); beyond the direct
 * pointers the newest block of each position is taken.  What is kept is
 * one entry per block the scan verified: never more than the image has.
 * Names and modes come from the image, so everything is made with the
 * *at() calls under descriptors of directories salvage made itself,
 * never following a link.
 */
#include "salvage.h"

#include "image.h"
#include "u64map.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 256 /* directories deeper go to lost+found (a descriptor each) */

struct sv_rec {
	uint64_t seq;               /* of the pseg it was found in */
	uint32_t pos;               /* its byte in the pseg's blocks */
	struct lfs_dinode di;
	uint8_t *inl;               /* inline content, di.inline_len bytes */
	bool done;                  /* copied out (a second name links to it) */
	bool visiting;              /* a directory on the way down */
};

struct sv_blk {
	uint32_t ino, version;
	uint64_t lblk, seq, addr;
};

struct sv {
	struct lfs_bdev *dev;
	const struct lfs_super *sb;
	uint32_t bs;
	struct u64map recs;         /* ino -> struct sv_rec */
	struct sv_blk *blks;
	size_t nblks, capblks;
	struct u64map paths;        /* ino -> its first copy's path, for links */
	uint8_t *buf;
	struct lfs_salvage_report *r;
	int root_fd;
};

/* ---------------------------------------------------------------- */
/* The scan.                                                        */

static int
keep_record(struct sv *s, const struct lfs_dinode *di, const uint8_t *inl, uint64_t seq, uint32_t pos)
{
	struct sv_rec *old = u64map_get(&s->recs, di->ino);
	if (old && (old->seq > seq || (old->seq == seq && old->pos > pos)))
		return 0;
	struct sv_rec *n = calloc(1, sizeof(*n));
	uint8_t *copy = di->inline_len ? malloc(di->inline_len) : NULL;
	if (!n || (di->inline_len && !copy) || u64map_put(&s->recs, di->ino, n)) {
		free(n);
		free(copy);
		return -ENOMEM;
	}
	*n = (struct sv_rec){ .seq = seq, .pos = pos, .di = *di, .inl = copy };
	if (copy)
		memcpy(copy, inl, di->inline_len);
	if (old) {
		free(old->inl);
		free(old);
	} else {
		s->r->records++;
	}
	return 0;
}

static int
scan_records(struct sv *s, const uint8_t *blk, uint64_t seq, uint32_t base)
{
	for (uint32_t off = lfs_inode_block_next(blk, s->bs, 0); off < s->bs;
	     off = lfs_inode_block_next(blk, s->bs, off)) {
		struct lfs_dinode di;
		const char *why;
		int n = lfs_dinode_decode(&di, blk + off, s->bs - off);
		if (n < 0 || lfs_dinode_check(&di, s->sb, &why)) {
			off += LFS_INODE_ALIGN;
			continue;
		}
		int err = keep_record(s, &di, blk + off + LFS_INODE_HDR_SIZE, seq, base + off);
		if (err)
			return err;
		off += (uint32_t)n;
	}
	return 0;
}

static int
keep_block(struct sv *s, const struct lfs_pseg_entry *e, uint64_t seq, uint64_t addr)
{
	if (s->nblks == s->capblks) {
		size_t cap = s->capblks ? 2 * s->capblks : 4096;
		struct sv_blk *b = realloc(s->blks, cap * sizeof(*b));
		if (!b)
			return -ENOMEM;
		s->blks = b;
		s->capblks = cap;
	}
	s->blks[s->nblks++] = (struct sv_blk){ e->ino, e->version, e->lblk, seq, addr };
	return 0;
}

static int
scan_pseg(struct sv *s, const struct lfs_logwalk *w)
{
	for (uint32_t j = 0; j < w->h.nblocks; j++) {
		struct lfs_pseg_entry e;
		lfs_logwalk_entry(w, j, &e);
		if (!lfs_logwalk_block_ok(w, j)) {
			s->r->bad_blocks++;
			continue;
		}
		int err = 0;
		if (e.kind == LFS_BK_INODE)
			err = scan_records(s, lfs_logwalk_block(w, j), w->h.seq, j * s->bs);
		else if (e.kind == LFS_BK_DATA || e.kind == LFS_BK_INDIR)
			err = keep_block(s, &e, w->h.seq, w->addr + 1 + j);
		if (err)
			return err;
	}
	return 0;
}

static int
by_position(const void *a, const void *b)
{
	const struct sv_blk *x = a, *y = b;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	if (x->lblk != y->lblk)
		return x->lblk < y->lblk ? -1 : 1;
	return x->seq > y->seq ? -1 : x->seq < y->seq; /* newest first */
}

static int
scan(struct sv *s)
{
	struct lfs_logwalk w;
	int err = lfs_logwalk_init(&w, s->dev, s->sb, lfs_super_seed(s->sb), LFS_LOGWALK_BLOCKS);
	for (uint64_t seg = 0; seg < s->sb->nsegs && !err; seg++) {
		lfs_logwalk_segment(&w, seg);
		int r;
		while ((r = lfs_logwalk_next(&w)) > 0 && !err) {
			s->r->psegs++;
			err = scan_pseg(s, &w);
		}
		if (r < 0)
			s->r->read_errors++; /* the rest of this segment is lost, not the scan */
		s->r->segs++;
	}
	lfs_logwalk_free(&w);
	s->r->blocks = s->nblks;
	if (s->nblks)
		qsort(s->blks, s->nblks, sizeof(*s->blks), by_position);
	return err;
}

/* ---------------------------------------------------------------- */
/* Reading a file back.                                             */

/* The first of the scan's entries at (ino, lblk) or after it. */
static size_t
first_at(const struct sv *s, uint32_t ino, uint64_t lblk)
{
	size_t lo = 0, hi = s->nblks;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct sv_blk *m = &s->blks[mid];
		if (m->ino < ino || (m->ino == ino && m->lblk < lblk))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether the scan verified the block at addr as (ino, version, lblk):
 * a data block, or with a node id for lblk a block-map node. */
static bool
verified(const struct sv *s, uint32_t ino, uint32_t version, uint64_t lblk, uint64_t addr)
{
	for (size_t i = first_at(s, ino, lblk); i < s->nblks && s->blks[i].ino == ino && s->blks[i].lblk == lblk; i++)
		if (s->blks[i].addr == addr && s->blks[i].version == version)
			return true;
	return false;
}

/* A file's blocks as for_each_block finds them, each handed to fn with
 * s->buf holding it. */
struct blocks {
	struct sv *s;
	const struct sv_rec *rec;
	uint64_t n;                 /* blocks under its size */
	uint64_t missing, unsure;   /* not found; taken from the log unconfirmed */
	int (*fn)(struct blocks *b, uint64_t lblk);
	void *ctx;
	uint8_t *node[LFS_NINDIRECT + 1]; /* a node buffer per level */
};

/* The data pointer of lblk: a hole, or its block if the scan verified it. */
static int
data_at(struct blocks *b, uint64_t lblk, uint64_t addr)
{
	const struct lfs_dinode *di = &b->rec->di;
	if (lblk >= b->n || !addr || lfs_addr_unwritten(addr))
		return 0;
	if (!verified(b->s, di->ino, di->version, lblk, addr) || lfs_bdev_read(b->s->dev, addr, 1, b->s->buf)) {
		b->missing++;
		return 0;
	}
	return b->fn(b, lblk);
}

/* Blocks [first, end) where the map cannot be followed: the newest of
 * each in the log, which a truncate or punch since may have let go of. */
static int
from_log(struct blocks *b, uint64_t first, uint64_t end)
{
	struct sv *s = b->s;
	const struct lfs_dinode *di = &b->rec->di;
	size_t i = first_at(s, di->ino, first);
	while (i < s->nblks && s->blks[i].ino == di->ino && s->blks[i].lblk < end && s->blks[i].lblk < b->n) {
		uint64_t lblk = s->blks[i].lblk, addr = 0;
		for (; i < s->nblks && s->blks[i].ino == di->ino && s->blks[i].lblk == lblk; i++)
			if (!addr && s->blks[i].version == di->version)
				addr = s->blks[i].addr;
		if (!addr || lfs_bdev_read(s->dev, addr, 1, s->buf))
			continue;
		b->unsure++;
		int err = b->fn(b, lblk);
		if (err)
			return err;
	}
	return 0;
}

/* The node of tree k at `level` (0: the root) and index idx, at addr:
 * its pointers followed down, only as far as the file's size. */
static int
walk_node(struct blocks *b, unsigned k, unsigned level, uint64_t idx, uint64_t addr)
{
	struct sv *s = b->s;
	const struct lfs_dinode *di = &b->rec->di;
	uint64_t nptr = s->bs / 8, span = lfs_node_span((uint32_t)nptr, k, level); /* blocks under one pointer */
	uint64_t first = lfs_tree_base((uint32_t)nptr, k) + idx * nptr * span;
	if (first >= b->n || !addr || lfs_addr_unwritten(addr))
		return 0;
	uint8_t *node = b->node[level];
	if (!verified(s, di->ino, di->version, lfs_node_id(k, level, idx), addr) || lfs_bdev_read(s->dev, addr, 1, node))
		return from_log(b, first, first + nptr * span);
	int err = 0;
	for (uint64_t slot = 0; slot < nptr && !err && first + slot * span < b->n; slot++) {
		uint64_t p = lfs_get64(node + 8 * slot);
		err = level == k ? data_at(b, first + slot, p) : walk_node(b, k, level + 1, idx * nptr + slot, p);
	}
	return err;
}

/* Every block of rec under its size, in the order of its map. */
static int
for_each_block(struct blocks *b)
{
	const struct lfs_dinode *di = &b->rec->di;
	b->n = (di->size + b->s->bs - 1) / b->s->bs;
	int err = 0;
	for (unsigned l = 0; l <= LFS_NINDIRECT && !err; l++)
		err = (b->node[l] = malloc(b->s->bs)) ? 0 : -ENOMEM;
	for (uint64_t lblk = 0; lblk < LFS_NDIRECT && !err; lblk++)
		err = data_at(b, lblk, di->direct[lblk]);
	for (unsigned k = 0; k < LFS_NINDIRECT && !err; k++)
		err = walk_node(b, k, 0, 0, di->ind[k]);
	for (unsigned l = 0; l <= LFS_NINDIRECT; l++)
		free(b->node[l]);
	return err;
}

static void
say_missing(struct sv *s, const char *path, const struct blocks *b)
{
	if (!b->missing && !b->unsure)
		return;
	s->r->incomplete++;
	s->r->missing_blocks += b->missing;
	fprintf(stderr, "fsck.lfs: salvage: %s (inode %u): of %llu blocks, %llu were not found (they read as zeros) "
			"and %llu were taken from the log without a block map to confirm them\n",
		path, b->rec->di.ino, (unsigned long long)b->n, (unsigned long long)b->missing,
		(unsigned long long)b->unsure);
}

static int
write_block(struct blocks *b, uint64_t lblk)
{
	int fd = *(int *)b->ctx;
	uint64_t size = b->rec->di.size, off = lblk * b->s->bs;
	size_t len = size - off < b->s->bs ? (size_t)(size - off) : b->s->bs;
	return pwrite(fd, b->s->buf, len, (off_t)off) == (ssize_t)len ? 0 : -errno;
}

/* The content of rec into fd: inline, or block by block, holes left. */
static int
copy_content(struct sv *s, int fd, const char *path, const struct sv_rec *rec)
{
	const struct lfs_dinode *di = &rec->di;
	if (di->flags & LFS_DI_INLINE)
		return pwrite(fd, rec->inl, di->inline_len, 0) == (ssize_t)di->inline_len ? 0 : -errno;
	struct blocks b = { .s = s, .rec = rec, .fn = write_block, .ctx = &fd };
	int err = for_each_block(&b);
	say_missing(s, path, &b);
	return err ? err : ftruncate(fd, (off_t)di->size) ? -errno : 0;
}

/* Block 0 of rec into s->buf: 1, or 0 if it is not there. */
static int
first_block(struct blocks *b, uint64_t lblk)
{
	*(int *)b->ctx = lblk == 0;
	return lblk == 0 ? 1 : 0; /* stop at it */
}

/* ---------------------------------------------------------------- */
/* Making the tree.                                                  */

/* Owner, mode and times as the record says; a device node keeps mode
 * 0600 and the salvager as its owner: an image may name any device. */
static void
set_attrs(struct sv *s, int dirfd, const char *name, const struct lfs_dinode *di)
{
	int nofollow = AT_SYMLINK_NOFOLLOW;
	bool device = S_ISCHR(di->mode) || S_ISBLK(di->mode);
	if (geteuid() == 0 && !device)
		(void)fchownat(dirfd, name, di->uid, di->gid, nofollow);
	if (!S_ISLNK(di->mode) && !device)
		(void)fchmodat(dirfd, name, di->mode & 07777, 0);
	struct timespec t[2] = { { di->atime_sec, di->atime_nsec }, { di->mtime_sec, di->mtime_nsec } };
	(void)utimensat(dirfd, name, t, nofollow);
	(void)s;
}

static int
make_file(struct sv *s, int dirfd, const char *name, const char *path, const struct sv_rec *rec)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int err = copy_content(s, fd, path, rec);
	close(fd);
	return err;
}

static int
make_symlink(struct sv *s, int dirfd, const char *name, const struct sv_rec *rec)
{
	char target[LFS_MAX_BLOCK_SIZE + 1];
	size_t len = rec->di.size < sizeof(target) - 1 ? (size_t)rec->di.size : sizeof(target) - 1;
	if (rec->di.flags & LFS_DI_INLINE)
		memcpy(target, rec->inl, len < rec->di.inline_len ? len : rec->di.inline_len);
	else {
		int found = 0;
		struct blocks b = { .s = s, .rec = rec, .fn = first_block, .ctx = &found };
		if (for_each_block(&b) < 0 || !found)
			return -EIO;
		memcpy(target, s->buf, len < s->bs ? len : s->bs);
	}
	target[len] = 0;
	return symlinkat(target, dirfd, name) ? -errno : 0;
}

static int walk_dir(struct sv *s, int dirfd, const char *name, const char *path, struct sv_rec *dir,
		    unsigned depth);

/* Copy inode rec out as `name` in dirfd; `path` is where that is below
 * the salvage directory, "/a/b" (for messages, and for later links). */
static int
make_node(struct sv *s, int dirfd, const char *name, const char *path, struct sv_rec *rec, unsigned depth)
{
	const struct lfs_dinode *di = &rec->di;
	const char *first = u64map_get(&s->paths, di->ino);
	if (first && !S_ISDIR(di->mode)) {
		s->r->links++;
		return linkat(s->root_fd, first, dirfd, name, 0) ? -errno : 0;
	}
	int err = 0;
	if (S_ISREG(di->mode))
		err = make_file(s, dirfd, name, path, rec);
	else if (S_ISLNK(di->mode))
		err = make_symlink(s, dirfd, name, rec);
	else if (S_ISDIR(di->mode))
		err = walk_dir(s, dirfd, name, path, rec, depth);
	else
		err = mknodat(dirfd, name, (di->mode & S_IFMT) | 0600, lfs_rdev_decode(di->rdev))
			      ? -errno : 0;
	if (err)
		return err;
	s->r->files += S_ISREG(di->mode);
	s->r->symlinks += S_ISLNK(di->mode);
	s->r->specials += !S_ISREG(di->mode) && !S_ISLNK(di->mode) && !S_ISDIR(di->mode);
	set_attrs(s, dirfd, name, di);
	rec->done = true;
	char *copy = strdup(path + 1);
	if (copy && u64map_put(&s->paths, di->ino, copy))
		free(copy);
	return 0;
}

static void
skipped(struct sv *s, const char *path, uint32_t ino, int err)
{
	s->r->skipped++;
	fprintf(stderr, "fsck.lfs: salvage: %s (inode %u) not copied: %s\n", path, ino,
		err == -ENOENT ? "no record of the inode verifies" : strerror(-err));
}

/* The entries of one directory block, each copied out under dfd. */
static void
walk_block(struct sv *s, int dfd, const char *path, const uint8_t *blk, unsigned depth)
{
	struct lfs_dirent d;
	const char *why;
	for (uint32_t off = 0; off < s->bs && !lfs_dirent_decode(&d, blk, off, s->bs); off += d.rec_len) {
		if (!d.ino || lfs_dirent_check(&d, s->sb, &why))
			continue;
		char name[256], child[4096];
		memcpy(name, d.name, d.name_len);
		name[d.name_len] = 0;
		if (snprintf(child, sizeof(child), "%s/%s", path, name) >= (int)sizeof(child)) {
			skipped(s, path, d.ino, -ENAMETOOLONG);
			continue;
		}
		struct sv_rec *rec = u64map_get(&s->recs, d.ino);
		int err = !rec || !rec->di.mode ? -ENOENT : rec->visiting ? -ELOOP : 0;
		if (!err)
			err = make_node(s, dfd, name, child, rec, depth + 1);
		if (err)
			skipped(s, child, d.ino, err);
	}
}

struct dir_walk {
	int dfd;
	const char *path;
	unsigned depth;
	uint8_t *blk;               /* s->buf is reused by what the entries copy */
};

static int
dir_block(struct blocks *b, uint64_t lblk)
{
	(void)lblk;
	struct dir_walk *w = b->ctx;
	memcpy(w->blk, b->s->buf, b->s->bs);
	walk_block(b->s, w->dfd, w->path, w->blk, w->depth);
	return 0;
}

/* Every entry of directory dir, copied out under dfd. */
static void
walk_entries(struct sv *s, int dfd, const char *path, struct sv_rec *dir, unsigned depth)
{
	struct dir_walk w = { dfd, path, depth, malloc(s->bs) };
	struct blocks b = { .s = s, .rec = dir, .fn = dir_block, .ctx = &w };
	dir->visiting = true;
	int err = w.blk ? for_each_block(&b) : -ENOMEM;
	dir->visiting = false;
	free(w.blk);
	if (err)
		skipped(s, path[0] ? path : "/", dir->di.ino, err);
	say_missing(s, path[0] ? path : "/", &b);
}

static int
walk_dir(struct sv *s, int dirfd, const char *name, const char *path, struct sv_rec *dir, unsigned depth)
{
	if (depth > MAX_DEPTH || dir->done)
		return -ELOOP;
	if (mkdirat(dirfd, name, 0700))
		return -errno;
	int dfd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	s->r->dirs++;
	dir->done = true; /* before its entries: a second name of it is a loop */
	walk_entries(s, dfd, path, dir, depth);
	close(dfd);
	return 0;
}

/* An inode with a record that no directory reached: lost+found/#INO. */
static void
lost_found(struct sv *s, uint64_t ino, struct sv_rec *rec)
{
	if (rec->done || !rec->di.mode || ino == LFS_ROOT_INO || (!rec->di.nlink && !S_ISDIR(rec->di.mode)))
		return;
	int lf = openat(s->root_fd, "lost+found", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lf < 0 && errno == ENOENT && !mkdirat(s->root_fd, "lost+found", 0700))
		lf = openat(s->root_fd, "lost+found", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lf < 0) {
		skipped(s, "/lost+found", (uint32_t)ino, -errno);
		return;
	}
	char name[32], path[64];
	snprintf(name, sizeof(name), "#%llu", (unsigned long long)ino);
	snprintf(path, sizeof(path), "/lost+found/%s", name);
	int err = make_node(s, lf, name, path, rec, 1);
	if (err)
		skipped(s, path, (uint32_t)ino, err);
	else
		s->r->lost_found++;
	close(lf);
}

/* Every inode no directory reached, in the order of their numbers. */
static int
lost_found_all(struct sv *s)
{
	uint64_t *keys = malloc((s->recs.count + 1) * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	u64map_sorted_keys(&s->recs, keys);
	for (size_t i = 0; i < s->recs.count; i++)
		lost_found(s, keys[i], u64map_get(&s->recs, keys[i]));
	free(keys);
	return 0;
}

static int
free_rec(uint64_t ino, void *val, void *ctx)
{
	(void)ino;
	(void)ctx;
	struct sv_rec *rec = val;
	free(rec->inl);
	free(rec);
	return 1;
}

static int
free_path(uint64_t ino, void *val, void *ctx)
{
	(void)ino;
	(void)ctx;
	free(val);
	return 1;
}

int
lfs_salvage(struct lfs_bdev *dev, const struct lfs_super *sb, const char *dir, struct lfs_salvage_report *r)
{
	struct sv s = { .dev = dev, .sb = sb, .bs = sb->block_size, .r = r };
	memset(r, 0, sizeof(*r));
	u64map_init(&s.recs);
	u64map_init(&s.paths);
	s.root_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	s.buf = malloc(s.bs);
	int err = s.root_fd < 0 ? -errno : !s.buf ? -ENOMEM : 0;
	if (!err) {
		DIR *d = fdopendir(dup(s.root_fd));
		struct dirent *e;
		while (d && (e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				err = -ENOTEMPTY;
		if (d)
			closedir(d);
	}
	if (!err)
		err = scan(&s);
	struct sv_rec *root = err ? NULL : u64map_get(&s.recs, LFS_ROOT_INO);
	if (root && S_ISDIR(root->di.mode)) {
		root->done = true;
		walk_entries(&s, s.root_fd, "", root, 0);
	}
	if (!err)
		err = lost_found_all(&s);
	u64map_remove_if(&s.recs, free_rec, NULL);
	u64map_remove_if(&s.paths, free_path, NULL);
	u64map_free(&s.recs);
	u64map_free(&s.paths);
	free(s.blks);
	free(s.buf);
	if (s.root_fd >= 0)
		close(s.root_fd);
	return err;
}
