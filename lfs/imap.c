/*
 * imap.c — layer 3: the inode map, ino -> (block, slot, version).
 *
 * The whole map lives in memory; it reaches the disk at checkpoints, one
 * IMAP block per bs/16 entries, only the blocks that changed.  Between
 * checkpoints the inode records in the log are the truth, and
 * roll-forward rebuilds the map from them.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>

int
lfs_imap_init(struct lfs_fs *fs)
{
	uint32_t per = fs->bsize / LFS_IMAP_ENTRY_SIZE;
	fs->n_imap_blocks = lfs_imap_nblocks(fs->sb.max_inodes, fs->bsize);
	fs->imap = lfs_calloc((size_t)fs->n_imap_blocks * per, sizeof(*fs->imap));
	fs->imap_addr = lfs_calloc(fs->n_imap_blocks, sizeof(*fs->imap_addr));
	fs->imap_dirty = lfs_calloc(fs->n_imap_blocks, 1);
	if (!fs->imap || !fs->imap_addr || !fs->imap_dirty)
		return -ENOMEM;
	fs->ino_hint = LFS_ROOT_INO + 1;
	return 0;
}

bool
lfs_imap_valid_ino(const struct lfs_fs *fs, uint64_t ino)
{
	return ino >= LFS_ROOT_INO && ino < fs->sb.max_inodes &&
	       (fs->imap[ino].flags & LFS_IMAP_INUSE);
}

void
lfs_imap_mark_block(struct lfs_fs *fs, uint32_t block)
{
	if (!fs->imap_dirty[block]) {
		fs->imap_dirty[block] = 1;
		fs->imap_ndirty++;
	}
}

static void
mark_dirty(struct lfs_fs *fs, uint32_t ino)
{
	lfs_imap_mark_block(fs, ino / (fs->bsize / LFS_IMAP_ENTRY_SIZE));
}

static void
take(struct lfs_fs *fs, uint32_t c, uint32_t *version)
{
	struct lfs_imap_entry *e = &fs->imap[c];
	e->flags = LFS_IMAP_INUSE;
	e->daddr = 0;
	e->slot = 0;
	e->version++;
	fs->inodes_used++;
	mark_dirty(fs, c);
	*version = e->version;
}

int
lfs_imap_alloc_at(struct lfs_fs *fs, uint32_t ino, uint32_t *version)
{
	if (ino >= fs->sb.max_inodes || (fs->imap[ino].flags & LFS_IMAP_INUSE))
		return -EEXIST;
	take(fs, ino, version);
	return 0;
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
		if (!(fs->imap[c].flags & LFS_IMAP_INUSE)) {
			take(fs, c, version);
			fs->ino_hint = c + 1;
			*ino = c;
			return 0;
		}
	}
	return -ENOSPC;
}

void
lfs_imap_set(struct lfs_fs *fs, uint32_t ino, uint64_t daddr, uint16_t slot, uint32_t version,
	     bool orphan)
{
	struct lfs_imap_entry *e = &fs->imap[ino];
	if (!(e->flags & LFS_IMAP_INUSE))
		fs->inodes_used++;
	e->daddr = daddr;
	e->slot = slot;
	e->version = version;
	e->flags = LFS_IMAP_INUSE | (orphan ? LFS_IMAP_ORPHAN : 0);
	mark_dirty(fs, ino);
}

void
lfs_imap_release(struct lfs_fs *fs, uint32_t ino)
{
	struct lfs_imap_entry *e = &fs->imap[ino];
	if (e->flags & LFS_IMAP_INUSE)
		fs->inodes_used--;
	e->daddr = 0;
	e->slot = 0;
	e->flags = 0;
	if (ino < fs->ino_hint)
		fs->ino_hint = ino;
	mark_dirty(fs, ino);
}
