/*
 * cache.c — layer 5: keep the inode cache within its budget, above flush.c: an
 * excess of dirty inodes is written so that they can be evicted.
 *
 * What it counts: each cached inode, its inline content buffer and its
 * block-map nodes — the parts that grow with what was looked at (a stat
 * of 100,000 small files, a read through a large file).  Directory
 * indexes are not counted; a directory in use is touched by every lookup
 * in it and so stays at the head of the list anyway.
 *
 * Inodes are on a list, most recently used first (lfs_iget moves a hit
 * to the head).  After each operation (fs.c, between operations: nothing
 * holds an inode then), while the cache is over budget, from the tail:
 *   - a clean inode (no dirty record, page, node or xattr; not open; not
 *     the root; linked) is evicted: it is read again from the inode map
 *     when next used.  The kernel may still hold references to it (FUSE
 *     lookups): their count is kept in fs->irefs and given back on the
 *     next load, so forget and unlink see it as before.  An unlinked
 *     inode (an orphan while the kernel or a handle holds it) is never
 *     evicted: its state is only in memory;
 *   - an inode that must stay (open, dirty, an orphan) gives up its clean
 *     block-map nodes (read again on demand), and goes to the head.
 * A pass looks at no more inodes than are cached, so an operation never
 * pays for more than one walk of the list.
 */
#include "lfs_int.h"

#include <stdlib.h>

static uint64_t
node_bytes(const struct lfs_fs *fs)
{
	return sizeof(struct lfs_node) + (uint64_t)fs->nptr * sizeof(uint64_t) + 32;
}

uint64_t
lfs_cache_bytes(const struct lfs_fs *fs)
{
	return fs->icache.count * (sizeof(struct lfs_inode) + 64) + fs->cache_inl * lfs_inline_max(fs->bsize) +
	       fs->cache_nodes * node_bytes(fs) + fs->irefs.count * 48;
}

static bool
evictable(const struct lfs_fs *fs, const struct lfs_inode *ip)
{
	return !ip->dirty && !ip->ndirty_pages && !ip->pages.count && !ip->xattr_dirty && !ip->nopen &&
	       ip->di.nlink > 0 && ip->ino != LFS_ROOT_INO && !u64map_get(&fs->dirty, ip->ino);
}

/* One walk from the least recently used end. */
static void
trim_pass(struct lfs_fs *fs, uint64_t budget)
{
	for (size_t seen = fs->icache.count; seen > 0 && fs->lru_tail && lfs_cache_bytes(fs) > budget; seen--) {
		struct lfs_inode *ip = fs->lru_tail;
		if (evictable(fs, ip)) {
			if (lfs_inode_evict(fs, ip) == 0) {
				fs->stats.inodes_evicted++;
				continue;
			}
		} else if (ip->nodes.count) {
			/* a clean node is what the disk holds: read again when
			 * needed, and a dirty child finds its parent so too
			 * (lfs_bmap_flush_nodes through parent_slot) */
			uint64_t before = fs->cache_nodes;
			lfs_bmap_drop_clean_nodes(fs, ip);
			fs->stats.nodes_dropped += before - fs->cache_nodes;
		}
		lfs_inode_lru_touch(fs, ip);
	}
}

void
lfs_cache_trim(struct lfs_fs *fs)
{
	uint64_t budget = fs->opts.cache_bytes;
	if (!budget || lfs_cache_bytes(fs) <= budget)
		return;
	trim_pass(fs, budget);
	/* What is left over may be inodes waiting to be written (a read
	 * dirties atime), or nodes relink records left (flush.c): when they
	 * could make up the excess, write them, as
	 * a kernel writes back under memory pressure, and walk again. */
	uint64_t have = lfs_cache_bytes(fs);
	if (have > budget && !fs->dev.readonly && !fs->fatal &&
	    fs->dirty.count * (sizeof(struct lfs_inode) + 64) + fs->relink_nodes * node_bytes(fs) >= have - budget &&
	    lfs_flush(fs) == 0)
		trim_pass(fs, budget);
}
