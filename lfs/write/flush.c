/*
 * flush.c — layer 5: turn all dirty in-memory state into one log group.
 *
 * Order inside the group: tombstones of freed inodes, then per dirty
 * inode its data pages, xattr blocks and block-map nodes (deepest first),
 * then the inode records packed into INODE blocks.  The group's last pseg
 * carries LFS_PSEG_END, and after its summary's entries what each record
 * replaced (repl.c); roll-forward applies a group only whole, and a
 * flush runs only between operations, so every group is a consistent
 * step.  This is also what fsync waits for.
 *
 * An fsync's flush leaves out the nodes above the leaves of a file whose
 * map changed in set pointers only (overwrites): its record is a relink
 * record (format.h), and the group holds its data, their leaves and its
 * record, where a random write to a 4 GiB file would also log the two
 * nodes above the leaf.  Such an inode stays in fs->dirty with those
 * nodes dirty, and the next flush that is not an fsync's (the tick, a
 * checkpoint, cleaning, memory) writes them with a plain record.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int
write_tombstone(struct lfs_fs *fs, uint32_t ino, uint32_t version)
{
	struct lfs_dinode di = { .ino = ino, .version = version };
	uint8_t *p;
	uint64_t addr;
	uint16_t slot;
	int err = lfs_seg_inode_slot(fs, lfs_inode_reclen(0), &p, &addr, &slot);
	if (!err)
		lfs_dinode_encode(&di, NULL, p);
	return err;
}

static int
write_record(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (!(ip->di.flags & LFS_DI_INLINE))
		ip->di.inline_len = 0;
	uint32_t reclen = lfs_inode_reclen(ip->di.inline_len);
	uint8_t *p;
	uint64_t addr;
	uint16_t slot;
	int err = lfs_seg_inode_slot(fs, reclen, &p, &addr, &slot);
	if (err)
		return err;
	struct lfs_dinode di = ip->di;
	if (ip->relinked) {
		di.flags |= LFS_DI_RELINK;
		fs->stats.relink_records++;
	}
	lfs_dinode_encode(&di, ip->inl, p);
	const struct lfs_imap_entry *e = lfs_imap_get(fs, ip->ino);
	uint64_t old = e->daddr;
	uint16_t old_slot = e->slot;
	/* the entry exists (the inode was allocated or read through it), so
	 * this cannot fail for want of memory */
	if ((err = lfs_imap_set(fs, ip->ino, addr, slot, ip->di.version,
				 ip->di.nlink == 0 || (ip->di.flags & LFS_DI_STAGED))))
		return err;
	uint32_t charge = lfs_inode_charge(&fs->sb, reclen);
	if (old)
		lfs_retain_drop(fs, old, old_slot, ip->disk_charge, LFS_BK_INODE, 0);
	lfs_retain_use(fs, addr, charge, LFS_BK_INODE);
	ip->disk_charge = charge;
	ip->dirty = false;
	return 0;
}

/* Records in decreasing order of their usage count, then by number: each
 * INODE block then fills with records of one size class, which is what
 * lfs_inode_charge counts (a 2 KiB record after a 3 KiB one would leave a
 * block a quarter empty, uncounted). */
struct pending_record {
	uint32_t charge;
	struct lfs_inode *ip;
};

static int
by_charge(const void *a, const void *b)
{
	const struct pending_record *x = a, *y = b;
	if (x->charge != y->charge)
		return x->charge > y->charge ? -1 : 1;
	return (x->ip->ino > y->ip->ino) - (x->ip->ino < y->ip->ino);
}

static int
write_records(struct lfs_fs *fs, const uint64_t *inos, size_t n)
{
	struct pending_record *r = lfs_malloc((n + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct lfs_inode *ip = u64map_get(&fs->dirty, inos[i]);
		uint32_t inl = (ip->di.flags & LFS_DI_INLINE) ? ip->di.inline_len : 0;
		r[i] = (struct pending_record){ lfs_inode_charge(&fs->sb, lfs_inode_reclen(inl)), ip };
	}
	qsort(r, n, sizeof(*r), by_charge);
	int err = 0;
	for (size_t i = 0; i < n && !err; i++)
		err = write_record(fs, r[i].ip);
	free(r);
	return err;
}

/* Whether the inode's record may be a relink record (format.h): its
 * map changed in set pointers only since its nodes were last written,
 * so its roots stay those of its last record, and only leaves of trees
 * past the first (whose leaf is a root) and the nodes above them are
 * dirty.  The leaves are written; the nodes above wait for a plain
 * flush, a bounded number of them. */
static bool
may_relink(const struct lfs_fs *fs, const struct lfs_inode *ip)
{
	if (fs->cleaning || !(fs->sb.feature_incompat & LFS_FEATURE_RELINK) ||
	    !S_ISREG(ip->di.mode) || (ip->di.flags & LFS_DI_INLINE) || !ip->di.nlink || ip->reshaped ||
	    ip->repl_lost || !ip->disk_charge || ip->ndirty_pages)
		return false;
	uint64_t dirty = 0;
	for (size_t b = 0; b < ip->nodes.nbuckets; b++)
		for (const struct u64map_ent *e = ip->nodes.tab[b]; e; e = e->next) {
			const struct lfs_node *nd = e->val;
			if (!nd->dirty)
				continue;
			if (!nd->addr || lfs_node_tree(e->key) == 0)
				return false;
			dirty++;
		}
	/* its leaves' parents, at most one each, wait in memory */
	return dirty && fs->relink_nodes - ip->relink_nodes + dirty <= LFS_RELINK_MAX_NODES;
}

static uint32_t
count_dirty_nodes(const struct lfs_inode *ip)
{
	uint32_t n = 0;
	for (size_t b = 0; b < ip->nodes.nbuckets; b++)
		for (const struct u64map_ent *e = ip->nodes.tab[b]; e; e = e->next)
			n += ((const struct lfs_node *)e->val)->dirty;
	return n;
}

static void
collect_tomb(uint64_t key, void *val, void *ctx)
{
	uint64_t **p = ctx;
	*(*p)++ = key;
	*(*p)++ = (uint64_t)(uintptr_t)val;
}

static int
flush(struct lfs_fs *fs, bool fsync)
{
	if (fs->fatal)
		return fs->fatal;
	if (!fs->dirty.count && !fs->tombstones.count)
		return 0;
	/* the log stays where a checkpoint waiting for the disk says it
	 * ends (ckpt.c): it commits first, with the lock held, as the
	 * caller may hold inodes */
	int err = fs->up->settle(fs, false);
	if (err)
		return err;
	bool tombs = fs->tombstones.count != 0;
	if (tombs) {
		uint64_t *t = lfs_malloc(2 * fs->tombstones.count * sizeof(uint64_t)), *w = t;
		if (!t)
			return -ENOMEM;
		u64map_each(&fs->tombstones, collect_tomb, &w);
		for (uint64_t *r = t; r < w && !err; r += 2)
			err = write_tombstone(fs, (uint32_t)r[0], (uint32_t)r[1]);
		free(t);
		if (err)
			return err;
		u64map_free(&fs->tombstones);
	}
	size_t n = fs->dirty.count, nw = 0;
	uint64_t *inos = lfs_malloc((2 * n + 1) * sizeof(uint64_t)), *written = inos + n;
	if (!inos)
		return -ENOMEM;
	u64map_sorted_keys(&fs->dirty, inos);
	for (size_t i = 0; i < n && !err; i++) {
		struct lfs_inode *ip = u64map_get(&fs->dirty, inos[i]);
		/* a relink record's inode that nothing changed since: its
		 * leaves wait for a plain flush */
		if (fsync && ip->relinked && !ip->dirty && !ip->ndirty_pages && !ip->xattr_dirty)
			continue;
		err = lfs_file_flush_pages(fs, ip);
		if (!err)
			err = lfs_xattr_flush(fs, ip);
		bool relink = !err && fsync && may_relink(fs, ip);
		if (relink)
			err = lfs_bmap_flush_nodes(fs, ip, true);
		else if (!err && !(err = lfs_bmap_flush_nodes(fs, ip, false)))
			ip->reshaped = false;
		fs->relink_nodes -= ip->relink_nodes;
		ip->relink_nodes = relink ? count_dirty_nodes(ip) : 0;
		fs->relink_nodes += ip->relink_nodes;
		ip->relinked = relink;
		written[nw++] = inos[i];
	}
	if (!err && !nw && !tombs) {
		free(inos);
		return 0;
	}
	if (!err)
		err = write_records(fs, written, nw);
	if (!err) {
		lfs_repl_emit(fs, written, nw);
		err = lfs_seg_end_group(fs);
	}
	if (!err) {
		/* keeps the room inode.c reserved; what stays is what a plain
		 * flush will write: the leaves, the nodes above, a record */
		u64map_clear(&fs->dirty);
		fs->dirty_units = 0;
		for (size_t i = 0; i < n; i++) {
			struct lfs_inode *ip = u64map_get(&fs->icache, inos[i]);
			if (ip && ip->relinked) {
				u64map_put(&fs->dirty, ip->ino, ip); /* within the room kept */
				ip->units = 0;
				fs->dirty_units += lfs_relink_units(ip);
			}
		}
		/* keep memory bounded: forget what nobody holds, except while
		 * an operation that holds inodes makes room (space.c) */
		for (size_t i = 0; i < nw && !fs->admitting; i++) {
			struct lfs_inode *ip = u64map_get(&fs->icache, written[i]);
			if (!ip || ip->relinked)
				continue;
			if (!ip->nlookup && !ip->nopen && ip->ino != LFS_ROOT_INO && ip->di.nlink)
				lfs_inode_evict(fs, ip);
			else if (ip->nodes.count > 4096)
				lfs_bmap_drop_clean_nodes(fs, ip);
		}
	}
	free(inos);
	fs->last_flush_ns = lfs_now_ns();
	return err;
}

int
lfs_flush(struct lfs_fs *fs)
{
	return flush(fs, false);
}

int
lfs_flush_unlocked(struct lfs_fs *fs, bool fsync)
{
	int err = 0;
	if (!fs->dirty.count && !fs->tombstones.count)
		return lfs_writeout(fs, true);
	err = fs->up->settle(fs, true);
	if (!err) {
		fs->defer_writeout = true;
		err = flush(fs, fsync);
		fs->defer_writeout = false;
	}
	/* what the flush queued goes out even if it stopped half way */
	int werr = lfs_writeout(fs, true);
	return err ? err : werr;
}
