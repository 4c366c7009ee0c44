/*
 * imap.c — layer 3: the inode map, ino -> (block, slot, version).
 *
 * The map lives in memory by IMAP block: a block's entries are allocated
 * when it is read at mount or one of its inodes is first used, so memory
 * follows the inodes that exist, not max_inodes (67 million at 1 TiB: 1
 * GiB up front).  It reaches the disk at checkpoints, one IMAP block per
 * bs/16 entries, only the blocks that changed.  Between checkpoints the
 * inode records in the log are the truth, and roll-forward rebuilds the
 * map from them.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int
lfs_imap_init(struct lfs_fs *fs)
{
	fs->n_imap_blocks = lfs_imap_nblocks(fs->sb.max_inodes, fs->bsize);
	fs->imap = lfs_calloc(fs->n_imap_blocks, sizeof(*fs->imap));
	fs->imap_addr = lfs_calloc(fs->n_imap_blocks, sizeof(*fs->imap_addr));
	fs->imap_addr_set = lfs_calloc(fs->n_imap_blocks / LFS_IMAP_ADDR_RUN + 1, 1);
	fs->imap_dirty = lfs_calloc(fs->n_imap_blocks, 1);
	/* twice, as the SUT's list (mount.c) */
	fs->imap_dirty_list = lfs_malloc(2 * (size_t)fs->n_imap_blocks * sizeof(uint32_t));
	if (!fs->imap || !fs->imap_addr || !fs->imap_addr_set || !fs->imap_dirty || !fs->imap_dirty_list)
		return -ENOMEM;
	fs->ino_hint = LFS_ROOT_INO + 1;
	return 0;
}

void
lfs_imap_addr_set(struct lfs_fs *fs, uint32_t b, uint64_t addr)
{
	fs->imap_addr[b] = addr;
	fs->imap_addr_set[b / LFS_IMAP_ADDR_RUN] = 1;
}

void
lfs_imap_free(struct lfs_fs *fs)
{
	for (size_t k = 0; fs->imap && k < fs->imap_nheld; k++)
		free(fs->imap[fs->imap_held[k]]);
	free(fs->imap);
	free(fs->imap_held);
	fs->imap = NULL;
	fs->imap_held = NULL;
	fs->imap_nheld = fs->imap_heldcap = 0;
}

void
lfs_imap_forget(struct lfs_fs *fs)
{
	for (size_t k = 0; k < fs->imap_nheld; k++) {
		uint32_t b = fs->imap_held[k];
		free(fs->imap[b]);
		fs->imap[b] = NULL;
	}
	fs->imap_nheld = 0;
	for (uint32_t i = 0; i < fs->imap_ndirty; i++)
		fs->imap_dirty[fs->imap_dirty_list[i]] = 0;
	fs->imap_ndirty = 0;
	fs->inodes_used = 0;
}

static uint32_t
per_block(const struct lfs_fs *fs)
{
	return lfs_imap_per_block(fs->bsize);
}

const struct lfs_imap_entry *
lfs_imap_get(const struct lfs_fs *fs, uint64_t ino)
{
	static const struct lfs_imap_entry none;
	const struct lfs_imap_entry *b = ino < fs->sb.max_inodes ? fs->imap[ino / per_block(fs)] : NULL;
	return b ? &b[ino % per_block(fs)] : &none;
}

struct lfs_imap_entry *
lfs_imap_ent(struct lfs_fs *fs, uint32_t ino)
{
	uint32_t blk = ino / per_block(fs);
	struct lfs_imap_entry **b = &fs->imap[blk];
	if (!*b) {
		if (lfs_array_room(&fs->imap_held, &fs->imap_heldcap, fs->imap_nheld + 1, sizeof(*fs->imap_held)) ||
		    !(*b = lfs_calloc(per_block(fs), sizeof(**b))))
			return NULL;
		fs->imap_held[fs->imap_nheld++] = blk;
	}
	return &(*b)[ino % per_block(fs)];
}

bool
lfs_imap_valid_ino(const struct lfs_fs *fs, uint64_t ino)
{
	return ino >= LFS_ROOT_INO && ino < fs->sb.max_inodes &&
	       (lfs_imap_get(fs, ino)->flags & LFS_IMAP_INUSE);
}

void
lfs_imap_mark_block(struct lfs_fs *fs, uint32_t block)
{
	if (!fs->imap_dirty[block]) {
		fs->imap_dirty[block] = 1;
		fs->imap_dirty_list[fs->imap_ndirty++] = block;
	}
}

static void
mark_dirty(struct lfs_fs *fs, uint32_t ino)
{
	lfs_imap_mark_block(fs, ino / per_block(fs));
}

static int
take(struct lfs_fs *fs, uint32_t c, uint32_t *version)
{
	struct lfs_imap_entry *e = lfs_imap_ent(fs, c);
	if (!e)
		return -ENOMEM;
	e->flags = LFS_IMAP_INUSE;
	e->daddr = 0;
	e->slot = 0;
	e->version++;
	fs->inodes_used++;
	mark_dirty(fs, c);
	*version = e->version;
	return 0;
}

int
lfs_imap_alloc_at(struct lfs_fs *fs, uint32_t ino, uint32_t *version)
{
	if (ino >= fs->sb.max_inodes || (lfs_imap_get(fs, ino)->flags & LFS_IMAP_INUSE))
		return -EEXIST;
	return take(fs, ino, version);
}

int
lfs_imap_alloc(struct lfs_fs *fs, uint32_t *ino, uint32_t *version)
{
	uint32_t n = fs->sb.max_inodes;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t c = fs->ino_hint + i;
		if (c >= n)
			c = c - n + LFS_ROOT_INO + 1;
		if (c <= LFS_ROOT_INO || c >= n)
			continue;
		if (!(lfs_imap_get(fs, c)->flags & LFS_IMAP_INUSE)) {
			int err = take(fs, c, version);
			if (err)
				return err;
			fs->ino_hint = c + 1;
			*ino = c;
			return 0;
		}
	}
	return -ENOSPC;
}

int
lfs_imap_set(struct lfs_fs *fs, uint32_t ino, uint64_t daddr, uint16_t slot, uint32_t version,
	     bool orphan)
{
	struct lfs_imap_entry *e = lfs_imap_ent(fs, ino);
	if (!e)
		return -ENOMEM;
	if (!(e->flags & LFS_IMAP_INUSE))
		fs->inodes_used++;
	e->daddr = daddr;
	e->slot = slot;
	e->version = version;
	e->flags = LFS_IMAP_INUSE | (orphan ? LFS_IMAP_ORPHAN : 0);
	mark_dirty(fs, ino);
	return 0;
}

int
lfs_imap_release(struct lfs_fs *fs, uint32_t ino, uint32_t version)
{
	/* the entry keeps the freed inode's version: the next one to get
	 * the number gets a new generation */
	struct lfs_imap_entry *e = lfs_imap_ent(fs, ino);
	if (!e)
		return -ENOMEM;
	if (e->flags & LFS_IMAP_INUSE)
		fs->inodes_used--;
	e->daddr = 0;
	e->slot = 0;
	e->flags = 0;
	e->version = version;
	if (ino < fs->ino_hint)
		fs->ino_hint = ino;
	mark_dirty(fs, ino);
	return 0;
}

void
lfs_imap_encode_block(const struct lfs_fs *fs, uint32_t block, uint8_t *blk)
{
	uint32_t per = per_block(fs);
	memset(blk, 0, fs->bsize);
	for (uint32_t i = 0; i < per; i++)
		lfs_imap_entry_encode(lfs_imap_get(fs, (uint64_t)block * per + i), blk + i * LFS_IMAP_ENTRY_SIZE);
}
