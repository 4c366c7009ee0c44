/*
 * inode_drop.c — layer 4: an inode leaves memory: evicted from the cache
 * (clean, read again when next used), or freed when its last name and its
 * last user are gone.  Either way its content state goes too, so this sits
 * above file.c, dir.c and xattr.c, whose state it drops, and below flush.c
 * and cache.c, which evict.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>

/* Free an inode and all it holds, dirty or not; the caller takes it out
 * of the cache. */
static void
inode_destroy(struct lfs_fs *fs, struct lfs_inode *ip)
{
	lfs_file_drop_pages(fs, ip, 0, UINT64_MAX);
	u64map_free(&ip->pages);
	lfs_bmap_free_nodes(fs, ip);
	lfs_dir_free_index(ip);
	if (u64map_del(&fs->dirty, ip->ino))
		fs->dirty_units -= ip->units + lfs_relink_units(ip);
	fs->relink_nodes -= ip->relink_nodes;
	lfs_inode_lru_unlink(fs, ip);
	fs->cache_inl -= ip->inl != NULL;
	lfs_xattr_drop(ip);
	lfs_repl_forget(ip);
	free(ip->inl);
	free(ip);
}

int
lfs_inode_evict(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (ip->nlookup && u64map_put(&fs->irefs, ip->ino, (void *)(uintptr_t)ip->nlookup))
		return -ENOMEM;
	u64map_del(&fs->icache, ip->ino);
	inode_destroy(fs, ip);
	return 0;
}

static int
destroy_one(uint64_t ino, void *ip, void *fs)
{
	(void)ino;
	inode_destroy(fs, ip);
	return 1;
}

void
lfs_inode_evict_all(struct lfs_fs *fs)
{
	u64map_remove_if(&fs->icache, destroy_one, fs);
}

void
lfs_inode_maybe_free(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (ip->di.nlink > 0 || ip->nlookup > 0 || ip->nopen > 0 || ip->ino == LFS_ROOT_INO)
		return;
	/* The last name and the last user are gone: give back the blocks,
	 * and log a tombstone so roll-forward frees the number too.  When
	 * either cannot be done (no memory, an unreadable block map) the
	 * inode stays, an orphan that the next unmount or mount frees. */
	const struct lfs_imap_entry *e = lfs_imap_get(fs, ip->ino);
	if ((ip->di.xattr && lfs_xattr_load(fs, ip)) || lfs_bmap_free_range(fs, ip, 0, lfs_bmap_max_blocks(fs)) ||
	    (e->daddr &&
	     u64map_put(&fs->tombstones, ip->ino, (void *)(uintptr_t)(ip->di.version | 0x100000000ull))))
		return;
	lfs_file_drop_pages(fs, ip, 0, UINT64_MAX);
	lfs_xattr_release(fs, ip); /* loaded above: cannot fail */
	if (e->daddr)
		lfs_retain_drop(fs, e->daddr, e->slot, ip->disk_charge, LFS_BK_INODE, 0);
	lfs_imap_release(fs, ip->ino, ip->di.version);
	fs->changed_since_ckpt = true;
	lfs_inode_evict(fs, ip);
}
