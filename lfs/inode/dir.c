/*
 * dir.c — layer 4: directories.
 *
 * On disk a directory is a sequence of blocks of variable-length records
 * (format.h).  Records never move: a delete frees a record (or merges it
 * into the one before), an insert takes a free record or splits the slack
 * off a used one.  So a record's byte position is a readdir cookie that
 * stays valid while the directory changes.
 *
 * In memory each directory gets an index built on first use: a hash of
 * every name (constant-time lookup and duplicate check), the largest free
 * slot of each block, and a stack of blocks with room, so an insert costs
 * the same in a directory of a hundred names or of a million.
 */
#include "lfs_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint8_t
lfs_mode_to_dt(uint32_t mode)
{
	return (uint8_t)((mode & S_IFMT) >> 12); /* DT_* mirror S_IF* on Linux */
}

static uint64_t
name_hash(const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)name[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void
lfs_dir_free_index(struct lfs_inode *ip)
{
	struct lfs_dir *d = ip->dir;
	if (!d)
		return;
	for (size_t b = 0; b < d->index.nbuckets; b++)
		for (struct u64map_ent *e = d->index.tab[b]; e; e = e->next) {
			struct lfs_dname *n = e->val;
			while (n) {
				struct lfs_dname *next = n->next;
				free(n);
				n = next;
			}
		}
	u64map_free(&d->index);
	free(d->maxfree);
	free(d->cand);
	free(d->in_cand);
	free(d);
	ip->dir = NULL;
}

/* An index entry and the room to insert it, or NULL (ENOMEM). */
static struct lfs_dname *
dname_new(struct lfs_dir *d, const char *name, size_t len, uint32_t ino, uint8_t type)
{
	struct lfs_dname *n = lfs_malloc(sizeof(*n) + len);
	if (!n || u64map_reserve(&d->index, d->index.count + 1)) {
		free(n);
		return NULL;
	}
	n->ino = ino;
	n->type = type;
	n->name_len = (uint8_t)len;
	memcpy(n->name, name, len);
	return n;
}

/* Cannot fail: dname_new reserved the room. */
static void
index_insert(struct lfs_dir *d, struct lfs_dname *n, uint32_t pos)
{
	uint64_t h = name_hash(n->name, n->name_len);
	n->pos = pos;
	n->next = u64map_get(&d->index, h);
	u64map_put(&d->index, h, n);
	d->nentries++;
}

static int
index_add(struct lfs_dir *d, const char *name, size_t len, uint32_t pos, uint32_t ino, uint8_t type)
{
	struct lfs_dname *n = dname_new(d, name, len, ino, type);
	if (!n)
		return -ENOMEM;
	index_insert(d, n, pos);
	return 0;
}

static struct lfs_dname *
index_find(struct lfs_dir *d, const char *name, size_t len, uint64_t *hash)
{
	*hash = name_hash(name, len);
	for (struct lfs_dname *n = u64map_get(&d->index, *hash); n; n = n->next) {
		d->probes++;
		if (n->name_len == len && memcmp(n->name, name, len) == 0)
			return n;
	}
	return NULL;
}

/* Largest slack of any record in a block. */
static uint16_t
block_maxfree(struct lfs_fs *fs, const uint8_t *blk)
{
	uint32_t best = 0;
	for (uint32_t off = 0; off < fs->bsize;) {
		struct lfs_dirent de;
		if (lfs_dirent_decode(&de, blk, off, fs->bsize))
			break;
		uint32_t slack = de.ino ? de.rec_len - lfs_dirent_len(de.name_len) : de.rec_len;
		if (slack > best)
			best = slack;
		off += de.rec_len;
	}
	return (uint16_t)(best > 0xffff ? 0xffff : best);
}

/* The smallest record: a block with less slack than this is full. */
#define MIN_ROOM ((uint16_t)lfs_dirent_len(1))

/* Size the per-block arrays for nblocks + 1 blocks. */
static int
grow_blocks(struct lfs_dir *d, uint32_t nblocks)
{
	uint16_t *mf = realloc(d->maxfree, (nblocks + 1) * sizeof(uint16_t));
	if (mf)
		d->maxfree = mf;
	uint32_t *c = realloc(d->cand, (nblocks + 1) * sizeof(uint32_t));
	if (c)
		d->cand = c;
	uint8_t *in = realloc(d->in_cand, nblocks + 1);
	if (in) {
		memset(in + d->nblocks, 0, nblocks + 1 - d->nblocks);
		d->in_cand = in;
	}
	return mf && c && in ? 0 : -ENOMEM;
}

static void
offer_block(struct lfs_dir *d, uint32_t b)
{
	if (!d->in_cand[b] && d->maxfree[b] >= MIN_ROOM) {
		d->in_cand[b] = 1;
		d->cand[d->ncand++] = b;
	}
}

/* Decode and check a record of a block as read from disk. */
static int
read_dirent(struct lfs_fs *fs, struct lfs_inode *dp, const uint8_t *blk, uint64_t b, uint32_t off,
	    struct lfs_dirent *de)
{
	const char *why = "record does not fit the block";
	if (lfs_dirent_decode(de, blk, off, fs->bsize) == 0 && lfs_dirent_check(de, &fs->sb, &why) == 0)
		return 0;
	lfs_log("directory %u block %llu: record at %u: %s", dp->ino, (unsigned long long)b, off, why);
	return -EFSCORRUPTED;
}

static int
build_index(struct lfs_fs *fs, struct lfs_inode *dp)
{
	if (dp->dir)
		return 0;
	struct lfs_dir *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	u64map_init(&d->index);
	dp->dir = d;
	/* lfs_dinode_check bounds the size by LFS_DIR_MAX_SIZE, so block
	 * numbers and byte positions fit in 32 bits */
	uint32_t nblocks = (uint32_t)(dp->di.size / fs->bsize);
	if (grow_blocks(d, nblocks)) {
		lfs_dir_free_index(dp);
		return -ENOMEM;
	}
	d->nblocks = nblocks;
	for (uint32_t b = 0; b < d->nblocks; b++) {
		struct lfs_page *pg;
		int err = lfs_file_get_page(fs, dp, b, false, false, &pg);
		if (err) {
			lfs_dir_free_index(dp);
			return err;
		}
		for (uint32_t off = 0; off < fs->bsize;) {
			struct lfs_dirent de;
			if ((err = read_dirent(fs, dp, pg->data, b, off, &de))) {
				lfs_dir_free_index(dp);
				return err;
			}
			if (de.ino && (err = index_add(d, de.name, de.name_len, b * fs->bsize + off, de.ino,
						       de.type))) {
				lfs_dir_free_index(dp);
				return err;
			}
			off += de.rec_len;
		}
		d->maxfree[b] = block_maxfree(fs, pg->data);
		offer_block(d, b);
	}
	return 0;
}

/* The index entry of `name` in dp, building the index on first use. */
static int
find_name(struct lfs_fs *fs, struct lfs_inode *dp, const char *name, struct lfs_dname **out)
{
	int err = build_index(fs, dp);
	if (err)
		return err;
	uint64_t h;
	*out = index_find(dp->dir, name, strlen(name), &h);
	return *out ? 0 : -ENOENT;
}

int
lfs_dir_lookup(struct lfs_fs *fs, struct lfs_inode *dp, const char *name, uint32_t *ino, uint8_t *type)
{
	struct lfs_dname *n;
	int err = find_name(fs, dp, name, &n);
	if (err)
		return err;
	*ino = n->ino;
	if (type)
		*type = n->type;
	return 0;
}

bool
lfs_dir_empty(struct lfs_fs *fs, struct lfs_inode *dp)
{
	return build_index(fs, dp) == 0 && dp->dir->nentries == 0;
}

static int
dir_page(struct lfs_fs *fs, struct lfs_inode *dp, uint32_t b, struct lfs_page **pg)
{
	int err = lfs_file_get_page(fs, dp, b, false, false, pg);
	if (!err)
		err = lfs_file_dirty_page(fs, dp, b, *pg);
	return err;
}

int
lfs_dir_add(struct lfs_fs *fs, struct lfs_inode *dp, const char *name, uint32_t ino, uint8_t type)
{
	size_t len = strlen(name);
	int err = build_index(fs, dp);
	if (err)
		return err;
	struct lfs_dir *d = dp->dir;
	/* an entry written to its block must reach the index: what that
	 * takes is had first, so that ENOMEM leaves the directory as it was */
	struct lfs_dname *n = dname_new(d, name, len, ino, type);
	if (!n)
		return -ENOMEM;
	uint32_t need = lfs_dirent_len((uint32_t)len);
	uint32_t b = UINT32_MAX;
	/* blocks without room for this name leave the stack; a delete in
	 * them offers them again */
	while (d->ncand > 0) {
		uint32_t c = d->cand[d->ncand - 1];
		d->probes++;
		if (d->maxfree[c] >= need) {
			b = c;
			break;
		}
		d->in_cand[c] = 0;
		d->ncand--;
	}
	struct lfs_page *pg;
	if (b == UINT32_MAX) {
		if (dp->di.size + fs->bsize > LFS_DIR_MAX_SIZE)
			err = -ENOSPC;
		else
			err = grow_blocks(d, d->nblocks + 1);
		b = d->nblocks;
		if (!err)
			err = lfs_file_get_page(fs, dp, b, true, true, &pg);
		if (!err)
			err = lfs_file_dirty_page(fs, dp, b, pg);
		if (err)
			goto fail;
		struct lfs_dirent fr = { .ino = 0, .rec_len = (uint16_t)fs->bsize };
		lfs_dirent_encode(&fr, pg->data);
		d->nblocks++;
		d->maxfree[b] = (uint16_t)fs->bsize;
		offer_block(d, b);
		dp->di.size += fs->bsize;
	} else if ((err = dir_page(fs, dp, b, &pg))) {
		goto fail;
	}
	for (uint32_t off = 0; off < fs->bsize;) {
		struct lfs_dirent de;
		if ((err = lfs_dirent_decode(&de, pg->data, off, fs->bsize)))
			goto fail;
		uint32_t used = de.ino ? lfs_dirent_len(de.name_len) : 0;
		if (de.rec_len - used >= need) {
			uint32_t at = off + used;
			struct lfs_dirent ne = { .ino = ino, .rec_len = (uint16_t)(de.rec_len - used),
						 .name_len = (uint8_t)len, .type = type, .name = name };
			if (used) {
				de.rec_len = (uint16_t)used;
				lfs_dirent_encode(&de, pg->data + off);
			}
			lfs_dirent_encode(&ne, pg->data + at);
			d->maxfree[b] = block_maxfree(fs, pg->data);
			index_insert(d, n, b * fs->bsize + at);
			return 0;
		}
		off += de.rec_len;
	}
	lfs_log("directory %u block %u: free space index out of date", dp->ino, b);
	err = -EFSCORRUPTED;
fail:
	free(n);
	return err;
}

int
lfs_dir_remove(struct lfs_fs *fs, struct lfs_inode *dp, const char *name)
{
	size_t len = strlen(name);
	int err = build_index(fs, dp);
	if (err)
		return err;
	struct lfs_dir *d = dp->dir;
	uint64_t h;
	struct lfs_dname *victim = index_find(d, name, len, &h);
	if (!victim)
		return -ENOENT;
	uint32_t b = victim->pos / fs->bsize, at = victim->pos % fs->bsize;
	struct lfs_page *pg;
	if ((err = dir_page(fs, dp, b, &pg)))
		return err;
	uint32_t prev = UINT32_MAX;
	for (uint32_t off = 0; off < at;) {
		struct lfs_dirent de;
		if ((err = lfs_dirent_decode(&de, pg->data, off, fs->bsize)))
			return err;
		prev = off;
		off += de.rec_len;
	}
	struct lfs_dirent de;
	if ((err = lfs_dirent_decode(&de, pg->data, at, fs->bsize)))
		return err;
	if (prev == UINT32_MAX) {
		de.ino = 0;
		de.name_len = 0;
		lfs_dirent_encode(&de, pg->data + at);
	} else {
		struct lfs_dirent pd;
		if ((err = lfs_dirent_decode(&pd, pg->data, prev, fs->bsize)))
			return err;
		pd.rec_len = (uint16_t)(pd.rec_len + de.rec_len);
		lfs_dirent_encode(&pd, pg->data + prev);
	}
	d->maxfree[b] = block_maxfree(fs, pg->data);
	offer_block(d, b);
	/* unlink from the hash chain */
	struct lfs_dname *head = u64map_get(&d->index, h);
	if (head == victim) {
		if (victim->next)
			u64map_put(&d->index, h, victim->next);
		else
			u64map_del(&d->index, h);
	} else {
		for (struct lfs_dname *n = head; n; n = n->next)
			if (n->next == victim) {
				n->next = victim->next;
				break;
			}
	}
	free(victim);
	d->nentries--;
	return 0;
}

int
lfs_dir_set(struct lfs_fs *fs, struct lfs_inode *dp, const char *name, uint32_t ino, uint8_t type)
{
	struct lfs_dname *n;
	int err = find_name(fs, dp, name, &n);
	if (err)
		return err;
	struct lfs_page *pg;
	if ((err = dir_page(fs, dp, n->pos / fs->bsize, &pg)))
		return err;
	struct lfs_dirent de;
	if ((err = lfs_dirent_decode(&de, pg->data, n->pos % fs->bsize, fs->bsize)))
		return err;
	de.ino = ino;
	de.type = type;
	lfs_dirent_encode(&de, pg->data + n->pos % fs->bsize);
	n->ino = ino;
	n->type = type;
	return 0;
}

int
lfs_dir_iterate(struct lfs_fs *fs, struct lfs_inode *dp, uint64_t pos,
		int (*fn)(void *ctx, const struct lfs_dirent *d, uint64_t pos), void *ctx)
{
	uint64_t nblocks = dp->di.size / fs->bsize;
	for (uint64_t b = pos / fs->bsize; b < nblocks; b++) {
		struct lfs_page *pg;
		int err = lfs_file_get_page(fs, dp, b, false, false, &pg);
		if (err)
			return err;
		for (uint32_t off = 0; off < fs->bsize;) {
			struct lfs_dirent de;
			if ((err = read_dirent(fs, dp, pg->data, b, off, &de)))
				return err;
			uint64_t p = b * fs->bsize + off;
			if (de.ino && p >= pos && fn(ctx, &de, p))
				return 0;
			off += de.rec_len;
		}
	}
	return 0;
}
