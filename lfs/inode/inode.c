/*
 * inode.c — layer 4: the inode cache.
 *
 * An inode is loaded from its record (found through the inode map) on
 * first use and stays cached while the kernel holds a reference, a file
 * handle is open, or it has dirty state.  Records are rewritten only by
 * flush.c; here they are read and created (inode_drop.c frees them).
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int
lfs_inode_decode_record(struct lfs_fs *fs, const uint8_t *blk, uint64_t daddr, uint16_t slot,
			struct lfs_dinode *di, uint8_t **inl, const char **why)
{
	const char *problem = NULL;
	int err = 0;
	memset(di, 0, sizeof(*di));
	uint32_t off = (uint32_t)slot * LFS_INODE_ALIGN;
	if (off >= fs->bsize) {
		problem = "slot past the end of the block";
		err = -EFSCORRUPTED;
	}
	struct lfs_super tsb = lfs_tree_super(fs);
	if (!err) {
		int r = lfs_dinode_decode(di, blk + off, fs->bsize - off);
		if (r < 0) {
			problem = "not a well-formed record";
			err = r;
		} else if (!(err = lfs_dinode_check(di, &tsb, &problem)) && inl && di->inline_len) {
			*inl = calloc(1, lfs_inline_max(fs->bsize));
			if (*inl)
				memcpy(*inl, blk + off + LFS_INODE_HDR_SIZE, di->inline_len);
			else
				err = -ENOMEM;
		}
		/* the flag says what the record holds, not what the inode is */
		di->flags &= ~LFS_DI_RELINK;
	}
	if (problem)
		lfs_log("inode record at block %llu slot %u (inode %u): %s", (unsigned long long)daddr, slot,
			di->ino, problem);
	if (why)
		*why = problem;
	return err;
}

int
lfs_inode_read_record(struct lfs_fs *fs, uint64_t daddr, uint16_t slot, struct lfs_dinode *di,
		      uint8_t **inl, const char **why)
{
	memset(di, 0, sizeof(*di));
	if (why)
		*why = NULL;
	uint8_t *blk = malloc(fs->bsize);
	if (!blk)
		return -ENOMEM;
	int err = lfs_read_block(fs, daddr, blk);
	if (!err)
		err = lfs_inode_decode_record(fs, blk, daddr, slot, di, inl, why);
	free(blk);
	return err;
}

/* A cached inode has its place in the dirty set from the start, so that
 * marking it dirty cannot fail (lfs_inode_dirty has no error to return,
 * and dropping the mark would lose the change). */
/* The cache's list, most recently used first (cache.c trims it). */
void
lfs_inode_lru_unlink(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (ip->lru_prev)
		ip->lru_prev->lru_next = ip->lru_next;
	else if (fs->lru_head == ip)
		fs->lru_head = ip->lru_next;
	if (ip->lru_next)
		ip->lru_next->lru_prev = ip->lru_prev;
	else if (fs->lru_tail == ip)
		fs->lru_tail = ip->lru_prev;
	ip->lru_prev = ip->lru_next = NULL;
}

void
lfs_inode_lru_touch(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (fs->lru_head == ip)
		return;
	lfs_inode_lru_unlink(fs, ip);
	ip->lru_next = fs->lru_head;
	if (fs->lru_head)
		fs->lru_head->lru_prev = ip;
	fs->lru_head = ip;
	if (!fs->lru_tail)
		fs->lru_tail = ip;
}

static struct lfs_inode *
inode_alloc(struct lfs_fs *fs, uint32_t ino)
{
	if (u64map_reserve(&fs->dirty, fs->icache.count + 1))
		return NULL;
	struct lfs_inode *ip = lfs_calloc(1, sizeof(*ip));
	if (!ip)
		return NULL;
	ip->ino = ino;
	u64map_init(&ip->pages);
	u64map_init(&ip->nodes);
	if (u64map_put(&fs->icache, ino, ip)) {
		free(ip);
		return NULL;
	}
	lfs_inode_lru_touch(fs, ip);
	return ip;
}

int
lfs_iget(struct lfs_fs *fs, uint64_t ino, struct lfs_inode **out)
{
	struct lfs_inode *ip = u64map_get(&fs->icache, ino);
	if (ip) {
		lfs_inode_lru_touch(fs, ip);
		*out = ip;
		return 0;
	}
	/* a received snapshot's view: its tree's root is the root */
	uint64_t rec = fs->view_root && ino == LFS_ROOT_INO ? fs->view_root : ino;
	if (!lfs_imap_valid_ino(fs, rec) || (fs->view_root && ino == fs->view_root))
		return -ESTALE;
	const struct lfs_imap_entry *e = lfs_imap_get(fs, rec);
	if (!e->daddr) {
		lfs_log("inode %llu is in use but has no record", (unsigned long long)ino);
		return -EFSCORRUPTED;
	}
	ip = inode_alloc(fs, (uint32_t)ino);
	if (!ip)
		return -ENOMEM;
	int err = lfs_inode_read_record(fs, e->daddr, e->slot, &ip->di, &ip->inl, NULL);
	if (!err && (ip->di.ino != rec || ip->di.mode == 0 || (rec != ino && !S_ISDIR(ip->di.mode)))) {
		lfs_log("inode map entry %llu points at a record of inode %u", (unsigned long long)rec,
			ip->di.ino);
		err = -EFSCORRUPTED;
	}
	if (!err && fs->view_root) {
		ip->di.ino = (uint32_t)ino;
		if (ip->di.parent == fs->view_root || rec != ino)
			ip->di.parent = LFS_ROOT_INO;
	}
	if (err) {
		u64map_del(&fs->icache, ino);
		lfs_inode_lru_unlink(fs, ip);
		free(ip->inl);
		free(ip);
		return err;
	}
	fs->cache_inl += ip->inl != NULL;
	ip->disk_charge = lfs_inode_charge(&fs->sb, lfs_inode_reclen(ip->di.inline_len));
	/* the kernel's references, if it was evicted while it had some */
	ip->nlookup = (uintptr_t)u64map_del(&fs->irefs, ino);
	*out = ip;
	return 0;
}

/* Inline content gets its buffer when it first has any: most cached
 * inodes (directories, large files) never need one. */
int
lfs_inode_inline_buf(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (ip->inl)
		return 0;
	if (!(ip->inl = lfs_calloc(1, lfs_inline_max(fs->bsize))))
		return -ENOMEM;
	fs->cache_inl++;
	return 0;
}

void
lfs_inode_count_interior(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (ip->units >= 3 * LFS_UNITS_PER_BLOCK)
		return;
	ip->units += 3 * LFS_UNITS_PER_BLOCK;
	fs->dirty_units += 3 * LFS_UNITS_PER_BLOCK;
}

void
lfs_inode_dirty(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (!ip->dirty) {
		ip->dirty = true;
		/* never fails: inode_alloc reserved the room */
		u64map_put(&fs->dirty, ip->ino, ip);
		/* the record (a whole block at most, when inline), and the
		 * interior block-map nodes above the leaves of a large file */
		ip->units = (ip->di.flags & LFS_DI_INLINE) ? LFS_UNITS_PER_BLOCK : 1;
		ip->last_leaf = 0;
		fs->dirty_units += ip->units;
		/* a file within the first tree (a leaf under the inode) has
		 * none: counted for all of them, cleaning's moves through many
		 * small files looked three times their cost, and the batch
		 * the space held was cut off at a loss */
		if (ip->di.size > (uint64_t)(LFS_NDIRECT + fs->nptr) * fs->bsize)
			lfs_inode_count_interior(fs, ip);
	}
	fs->changed_since_ckpt = true;
}

/* The kernel's clock for inode times: under the writeback cache it
 * stamps mtime and ctime itself with current_time(), the coarse clock
 * (FUSE's granularity is 1 ns), so every time lfs sets comes from the
 * same one.  A finer atime would be newer than the mtime of a write
 * made just after it, and relatime would never move it again. */
void
lfs_inode_now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME_COARSE, ts);
}

static void
set_now(int64_t *sec, uint32_t *nsec)
{
	struct timespec ts;
	lfs_inode_now(&ts);
	*sec = ts.tv_sec;
	*nsec = (uint32_t)ts.tv_nsec;
}

void
lfs_inode_touch(struct lfs_inode *ip, bool mtime, bool ctime)
{
	int64_t s;
	uint32_t ns;
	set_now(&s, &ns);
	if (mtime) {
		ip->di.mtime_sec = s;
		ip->di.mtime_nsec = ns;
	}
	if (ctime) {
		ip->di.ctime_sec = s;
		ip->di.ctime_nsec = ns;
	}
}

int
lfs_inode_new(struct lfs_fs *fs, mode_t mode, const struct lfs_cred *cred, struct lfs_inode *parent,
	      struct lfs_inode **out)
{
	uint32_t ino, version;
	int err = lfs_imap_alloc(fs, &ino, &version);
	if (err)
		return err;
	return lfs_inode_init(fs, ino, version, mode, cred, parent, out);
}

int
lfs_inode_init(struct lfs_fs *fs, uint32_t ino, uint32_t version, mode_t mode,
	       const struct lfs_cred *cred, struct lfs_inode *parent, struct lfs_inode **out)
{
	struct lfs_inode *ip = inode_alloc(fs, ino);
	if (!ip) {
		lfs_imap_release(fs, ino, lfs_imap_get(fs, ino)->version);
		return -ENOMEM;
	}
	struct lfs_dinode *di = &ip->di;
	di->ino = ino;
	di->version = version;
	di->mode = mode;
	di->uid = cred->uid;
	di->gid = cred->gid;
	/* setgid directories pass their group (and, to directories, the bit) on */
	if (parent && (parent->di.mode & S_ISGID)) {
		di->gid = parent->di.gid;
		if (S_ISDIR(mode))
			di->mode |= S_ISGID;
	}
	set_now(&di->atime_sec, &di->atime_nsec);
	di->mtime_sec = di->ctime_sec = di->btime_sec = di->atime_sec;
	di->mtime_nsec = di->ctime_nsec = di->btime_nsec = di->atime_nsec;
	if (S_ISREG(mode) || S_ISLNK(mode))
		di->flags |= LFS_DI_INLINE;
	if (parent && S_ISDIR(mode))
		di->parent = parent->ino;
	lfs_inode_dirty(fs, ip);
	*out = ip;
	return 0;
}

void
lfs_inode_stat(const struct lfs_fs *fs, const struct lfs_inode *ip, struct stat *st)
{
	const struct lfs_dinode *di = &ip->di;
	memset(st, 0, sizeof(*st));
	st->st_ino = ip->ino;
	st->st_mode = di->mode;
	st->st_nlink = di->nlink;
	st->st_uid = di->uid;
	st->st_gid = di->gid;
	st->st_rdev = lfs_rdev_decode(di->rdev);
	st->st_size = (off_t)di->size;
	st->st_blksize = fs->bsize;
	uint64_t xblocks = ip->xattr_dirty ? ip->xattr_nblocks : lfs_dinode_xattr_blocks(di);
	st->st_blocks = (blkcnt_t)((di->blocks + ip->pending_new + xblocks) * (fs->bsize / 512));
	if (di->flags & LFS_DI_INLINE)
		st->st_blocks += (di->inline_len + 511) / 512;
	st->st_atim.tv_sec = di->atime_sec;
	st->st_atim.tv_nsec = di->atime_nsec;
	st->st_mtim.tv_sec = di->mtime_sec;
	st->st_mtim.tv_nsec = di->mtime_nsec;
	st->st_ctim.tv_sec = di->ctime_sec;
	st->st_ctim.tv_nsec = di->ctime_nsec;
}
