/*
 * file.c — layer 4: file content.
 *
 * Content is either inline in the inode record (regular files and
 * symlinks up to inline_max bytes; then size == inline_len) or in blocks
 * found through the block map.  Writes land in per-inode pages; flush.c
 * gives each dirty page its place in the log.  Regular files drop their
 * pages once written (the kernel caches reads); directories keep them.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint64_t
lfs_file_max_size(const struct lfs_fs *fs)
{
	return lfs_max_file_size(fs->bsize);
}

int
lfs_file_get_page(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, bool for_write, bool whole,
		  struct lfs_page **out)
{
	struct lfs_page *pg = u64map_get(&ip->pages, lblk);
	if (pg) {
		*out = pg;
		return 0;
	}
	pg = lfs_calloc(1, sizeof(*pg));
	if (pg)
		pg->data = lfs_malloc(fs->bsize);
	if (!pg || !pg->data) {
		if (pg)
			free(pg);
		return -ENOMEM;
	}
	int err = 0;
	if (whole && for_write) {
		memset(pg->data, 0, fs->bsize);
	} else {
		uint64_t addr;
		err = lfs_bmap_get(fs, ip, lblk, &addr);
		if (!err && addr && addr != LFS_ADDR_UNWRITTEN)
			err = lfs_read_block(fs, addr, pg->data);
		else if (!err)
			memset(pg->data, 0, fs->bsize);
	}
	if (!err)
		err = u64map_put(&ip->pages, lblk, pg);
	if (err) {
		free(pg->data);
		free(pg);
		return err;
	}
	*out = pg;
	return 0;
}

int
lfs_file_dirty_page(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, struct lfs_page *pg)
{
	pg->moved = false; /* changed by its owner: the cleaner sets it after */
	if (pg->dirty)
		return 0;
	uint64_t addr;
	int err = lfs_bmap_get(fs, ip, lblk, &addr);
	if (err)
		return err;
	pg->dirty = true;
	pg->was_hole = addr == 0;
	if (pg->was_hole)
		ip->pending_new++;
	ip->ndirty_pages++;
	fs->dirty_bytes += fs->bsize;
	/* the block, and past the direct pointers the leaf that maps it,
	 * counted again whenever the writes move to another leaf */
	pg->units = LFS_UNITS_PER_BLOCK;
	if (lblk >= LFS_NDIRECT) {
		uint64_t leaf = (lblk - LFS_NDIRECT) / fs->nptr + 1;
		if (leaf != ip->last_leaf)
			pg->units += LFS_UNITS_PER_BLOCK;
		ip->last_leaf = leaf;
	}
	/* a hole counted with a leaf: the leaf may be new, live data the
	 * capacity must count before it is written (lfs_space_used_blocks) */
	pg->new_leaf = pg->was_hole && pg->units > LFS_UNITS_PER_BLOCK;
	fs->dirty_new_leaves += pg->new_leaf;
	fs->dirty_units += pg->units;
	lfs_inode_dirty(fs, ip);
	/* past the first tree: the interior nodes above its leaves */
	if (lblk >= LFS_NDIRECT + fs->nptr)
		lfs_inode_count_interior(fs, ip);
	return 0;
}

static void
page_free(struct lfs_fs *fs, struct lfs_inode *ip, struct lfs_page *pg)
{
	if (pg->dirty) {
		ip->ndirty_pages--;
		fs->dirty_bytes -= fs->bsize;
		fs->dirty_units -= pg->units;
		fs->dirty_new_leaves -= pg->new_leaf;
		if (pg->was_hole)
			ip->pending_new--;
	}
	free(pg->data);
	free(pg);
}

struct drop_range {
	struct lfs_fs *fs;
	struct lfs_inode *ip;
	uint64_t first, end;
};

static int
drop_if_in_range(uint64_t lblk, void *pg, void *ctx)
{
	struct drop_range *r = ctx;
	if (lblk < r->first || lblk >= r->end)
		return 0;
	page_free(r->fs, r->ip, pg);
	return 1;
}

/* Allocates nothing: truncation and freeing must not fail half done. */
void
lfs_file_drop_pages(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t first, uint64_t end)
{
	struct drop_range r = { fs, ip, first, end };
	u64map_remove_if(&ip->pages, drop_if_in_range, &r);
}

/* Move inline content to block 0 so the file can grow past inline_max. */
static int
uninline(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (!(ip->di.flags & LFS_DI_INLINE))
		return 0;
	if (ip->di.inline_len) {
		struct lfs_page *pg;
		int err = lfs_file_get_page(fs, ip, 0, true, true, &pg);
		if (err)
			return err;
		memcpy(pg->data, ip->inl, ip->di.inline_len);
		err = lfs_file_dirty_page(fs, ip, 0, pg);
		if (err)
			return err;
	}
	fs->cache_inl -= ip->inl != NULL;
	free(ip->inl);
	ip->inl = NULL;
	ip->di.inline_len = 0;
	ip->di.flags &= ~LFS_DI_INLINE;
	lfs_inode_dirty(fs, ip);
	return 0;
}

ssize_t
lfs_file_read_plan(struct lfs_fs *fs, struct lfs_inode *ip, struct lfs_rdplan *p, size_t size, uint64_t off)
{
	if (off >= ip->di.size)
		return 0;
	if (size > ip->di.size - off)
		size = (size_t)(ip->di.size - off);
	if (ip->di.flags & LFS_DI_INLINE) {
		if (ip->inl)
			memcpy(p->out, ip->inl + off, size);
		else
			memset(p->out, 0, size);
		return (ssize_t)size;
	}
	size_t done = 0;
	int err = 0;
	while (done < size && !err) {
		uint64_t pos = off + done, lblk = pos / fs->bsize;
		uint32_t boff = (uint32_t)(pos % fs->bsize);
		size_t n = fs->bsize - boff;
		if (n > size - done)
			n = size - done;
		struct lfs_page *pg = u64map_get(&ip->pages, lblk);
		if (pg) {
			memcpy(p->out + done, pg->data + boff, n);
			done += n;
			continue;
		}
		uint64_t addr;
		err = lfs_bmap_get(fs, ip, lblk, &addr);
		if (err)
			break;
		if (!addr || addr == LFS_ADDR_UNWRITTEN) {
			memset(p->out + done, 0, n);
			done += n;
			continue;
		}
		/* Gather blocks that follow each other on disk into one read. */
		uint32_t nrun = 1;
		size_t rest = size - done - n;
		while (rest > 0 && nrun < 256) {
			uint64_t a2;
			if (u64map_get(&ip->pages, lblk + nrun) || lfs_bmap_get(fs, ip, lblk + nrun, &a2) ||
			    a2 != addr + nrun)
				break;
			size_t m = rest < fs->bsize ? rest : fs->bsize;
			rest -= m;
			nrun++;
		}
		size_t take = size - done - rest;
		err = lfs_rdplan_add(fs, p, addr, nrun, done, boff, take);
		if (!err)
			done += take;
	}
	if (err && !done)
		return err;
	return (ssize_t)done;
}

ssize_t
lfs_file_read(struct lfs_fs *fs, struct lfs_inode *ip, void *buf, size_t size, uint64_t off)
{
	struct lfs_rdplan p;
	lfs_rdplan_init(&p, buf);
	ssize_t n = lfs_file_read_plan(fs, ip, &p, size, off);
	if (n > 0) {
		lfs_rdplan_read(fs, &p);
		n = lfs_rdplan_finish(fs, &p, (size_t)n);
	}
	lfs_rdplan_free(&p);
	return n;
}

/* How a write of [off, off+len) is counted.  *have: every block has a
 * block or a page already.  *keeps: it does, and overwriting leaves old
 * blocks that snapshots or kept checkpoints hold, which stay counted, so
 * the overwrite takes new capacity as much as a write into a hole (a
 * dirty page's growth was counted when it was dirtied).  That is asked
 * only within a headroom of the capacity, where it matters: the answer
 * costs a summary read per block.  One pass, one block-map lookup per
 * block; a lookup or summary that cannot be read is the write's error. */
static int
write_counts(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t off, uint64_t len, bool *have, bool *keeps)
{
	bool ask = fs->snapshots && (fs->held.nretained || fs->held.count) &&
		   !lfs_space_grows_within(fs, len + fs->headroom_blocks * fs->bsize);
	*have = true;
	*keeps = false;
	for (uint64_t b = off / fs->bsize; b < (off + len + fs->bsize - 1) / fs->bsize; b++) {
		const struct lfs_page *pg = u64map_get(&ip->pages, b);
		if (pg && (pg->dirty || !ask))
			continue;
		uint64_t addr;
		int err = lfs_bmap_get(fs, ip, b, &addr);
		if (err)
			return err;
		if (!addr && !pg) {
			*have = false;
			*keeps = false;
			return 0;
		}
		if (addr && addr != LFS_ADDR_UNWRITTEN && ask && !*keeps) {
			int k = lfs_retain_keeps(fs, addr);
			if (k < 0)
				return k;
			*keeps = k;
		}
	}
	return 0;
}

/* fallocate on an image with unwritten blocks: the range's holes are
 * marked, nothing is written (format.h, LFS_ADDR_UNWRITTEN). */
static int
allocate_unwritten(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t first, uint64_t end)
{
	uint64_t holes;
	int err = lfs_unwritten_holes(fs, ip, first, end, false, &holes);
	if (err)
		return err;
	if (holes > LFS_UNWRITTEN_MAX - ip->di.unwritten)
		return -EFBIG;
	if ((err = fs->up->admit(fs, LFS_SPACE_WRITE, holes * fs->bsize)))
		return err;
	ip->di.flags |= LFS_DI_PREALLOC;
	err = lfs_unwritten_holes(fs, ip, first, end, true, &holes);
	lfs_inode_dirty(fs, ip);
	return err;
}

int
lfs_file_allocate(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t off, uint64_t len)
{
	int err = uninline(fs, ip);
	if (err)
		return err;
	uint64_t first = off / fs->bsize, end = (off + len + fs->bsize - 1) / fs->bsize, holes = 0;
	if (fs->sb.feature_incompat & LFS_FEATURE_UNWRITTEN)
		return allocate_unwritten(fs, ip, first, end);
	for (uint64_t b = first; b < end && !err; b++) {
		uint64_t addr;
		if (!u64map_get(&ip->pages, b) && !(err = lfs_bmap_get(fs, ip, b, &addr)) && !addr)
			holes++;
	}
	if (!err)
		err = fs->up->admit(fs, LFS_SPACE_WRITE, holes * fs->bsize);
	if (err)
		return err;
	ip->di.flags |= LFS_DI_PREALLOC;
	/* the flushes a large range needs must not evict the inode */
	bool outer = !fs->admitting;
	fs->admitting = true;
	for (uint64_t b = first; b < end && !err; b++) {
		uint64_t addr;
		struct lfs_page *pg;
		if (u64map_get(&ip->pages, b) || (err = lfs_bmap_get(fs, ip, b, &addr)) || addr)
			continue;
		err = lfs_file_get_page(fs, ip, b, true, true, &pg);
		if (!err)
			err = lfs_file_dirty_page(fs, ip, b, pg);
		if (!err && fs->dirty_bytes >= fs->opts.dirty_limit)
			err = fs->up->flush(fs);
	}
	if (outer)
		fs->admitting = false;
	lfs_inode_dirty(fs, ip);
	return err;
}

/* Admission of a write; `grows`: it adds blocks the file did not have,
 * or overwrites blocks a kept checkpoint or snapshot holds.  Notes when
 * cached data that grows a file came within a headroom of what plain
 * writers may use (fuse_cache.c then has every write() ask first);
 * overwrites of blocks nothing else holds need no capacity. */
static int
admit(struct lfs_fs *fs, enum lfs_space_class cls, uint64_t bytes, bool grows)
{
	if (cls == LFS_SPACE_WRITE && !grows)
		cls = LFS_SPACE_OVERWRITE;
	int err = fs->up->admit(fs, cls, bytes);
	if (!err && cls == LFS_SPACE_WRITEBACK && grows &&
	    !lfs_space_fits(fs, LFS_SPACE_WRITE, bytes + fs->headroom_blocks * fs->bsize))
		fs->near_full = true;
	return err;
}

ssize_t
lfs_file_write(struct lfs_fs *fs, struct lfs_inode *ip, enum lfs_space_class cls, const void *buf, size_t size,
	       uint64_t off)
{
	if (size == 0)
		return 0;
	uint64_t end = off + size;
	if (end > lfs_file_max_size(fs) || end < off)
		return -EFBIG;
	int err;
	if (ip->di.flags & LFS_DI_INLINE) {
		if (end <= lfs_inline_max(fs->bsize)) {
			err = admit(fs, cls, end > ip->di.size ? end - ip->di.size : 0, end > ip->di.size);
			if (!err)
				err = lfs_inode_inline_buf(fs, ip);
			if (err)
				return err;
			memcpy(ip->inl + off, buf, size);
			if (end > ip->di.size)
				ip->di.size = ip->di.inline_len = (uint32_t)end;
			lfs_inode_dirty(fs, ip);
			return (ssize_t)size;
		}
		err = uninline(fs, ip);
		if (err)
			return err;
	}
	/* overwriting what fallocate gave frees as much as it takes: the
	 * promise of fallocate holds on a full filesystem too */
	bool have, keeps;
	if ((err = write_counts(fs, ip, off, size, &have, &keeps)))
		return err;
	err = admit(fs, (ip->di.flags & LFS_DI_PREALLOC) && have && !keeps ? LFS_SPACE_DELETE : cls, size,
		    !have || keeps);
	/* Refused until the reclaimer's round: the whole call comes back
	 * after it.  And a cached write stores all it was given or fails:
	 * the kernel ignores the count a writeback WRITE is answered with,
	 * so the pages past a short one would be dropped as written. */
	if (err == -ENOSPC && (fs->up->room_pending() || cls == LFS_SPACE_WRITEBACK))
		return err;
	if (err == -ENOSPC) {
		/* as much as fits, in whole blocks: a short write, as ext4
		 * gives, so a stream stops within a block of the end */
		uint64_t fit = lfs_space_avail_blocks(fs, cls);
		uint64_t room = fit ? fit * fs->bsize - off % fs->bsize : 0;
		if (room == 0)
			return -ENOSPC;
		if (size > room)
			size = (size_t)room;
		err = 0;
	} else if (err) {
		return err;
	}
	const uint8_t *in = buf;
	size_t done = 0;
	while (done < size) {
		uint64_t pos = off + done, lblk = pos / fs->bsize;
		uint32_t boff = (uint32_t)(pos % fs->bsize);
		size_t n = fs->bsize - boff;
		if (n > size - done)
			n = size - done;
		struct lfs_page *pg;
		err = lfs_file_get_page(fs, ip, lblk, true, n == fs->bsize, &pg);
		if (!err)
			err = lfs_file_dirty_page(fs, ip, lblk, pg);
		if (err)
			break;
		memcpy(pg->data + boff, in + done, n);
		done += n;
	}
	if (off + done > ip->di.size)
		ip->di.size = off + done;
	lfs_inode_dirty(fs, ip);
	/* a cached write is never answered short (above): its error is the
	 * answer, which the kernel keeps for the file's next fsync */
	if (err && (!done || cls == LFS_SPACE_WRITEBACK))
		return err;
	return (ssize_t)done;
}

/* Zero [from, to) inside one block, if the block holds anything. */
static int
zero_in_block(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, uint32_t from, uint32_t to)
{
	if (from >= to)
		return 0;
	struct lfs_page *pg = u64map_get(&ip->pages, lblk);
	if (!pg) {
		uint64_t addr;
		int err = lfs_bmap_get(fs, ip, lblk, &addr);
		if (err || !addr || addr == LFS_ADDR_UNWRITTEN)
			return err;
		err = lfs_file_get_page(fs, ip, lblk, true, false, &pg);
		if (err)
			return err;
	}
	int err = lfs_file_dirty_page(fs, ip, lblk, pg);
	if (!err)
		memset(pg->data + from, 0, to - from);
	return err;
}

int
lfs_file_truncate(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t size)
{
	if (size > lfs_file_max_size(fs))
		return -EFBIG;
	int err;
	if (ip->di.flags & LFS_DI_INLINE) {
		if (size <= lfs_inline_max(fs->bsize)) {
			if (size && (err = lfs_inode_inline_buf(fs, ip)))
				return err;
			if (size < ip->di.inline_len)
				memset(ip->inl + size, 0, ip->di.inline_len - size);
			ip->di.size = ip->di.inline_len = (uint32_t)size;
			lfs_inode_dirty(fs, ip);
			return 0;
		}
		if ((err = uninline(fs, ip)))
			return err;
	}
	if (size < ip->di.size) {
		uint64_t first = (size + fs->bsize - 1) / fs->bsize;
		lfs_file_drop_pages(fs, ip, first, UINT64_MAX);
		if ((err = lfs_bmap_free_range(fs, ip, first, lfs_bmap_max_blocks(fs))))
			return err;
		if (size % fs->bsize &&
		    (err = zero_in_block(fs, ip, size / fs->bsize, (uint32_t)(size % fs->bsize), fs->bsize)))
			return err;
	}
	ip->di.size = size;
	if (size == 0 && S_ISREG(ip->di.mode) && ip->di.blocks == 0 && ip->pending_new == 0) {
		/* an emptied file starts small again */
		ip->di.flags |= LFS_DI_INLINE;
		ip->di.inline_len = 0;
	}
	lfs_inode_dirty(fs, ip);
	return 0;
}

int
lfs_file_punch(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t off, uint64_t len)
{
	if (off >= ip->di.size)
		return 0;
	uint64_t end = off + len;
	if (end > ip->di.size || end < off)
		end = ip->di.size;
	if (ip->di.flags & LFS_DI_INLINE) {
		if (ip->inl)
			memset(ip->inl + off, 0, end - off);
		lfs_inode_dirty(fs, ip);
		return 0;
	}
	uint64_t bs = fs->bsize;
	uint64_t fb = (off + bs - 1) / bs, lb = end / bs; /* whole blocks [fb, lb) */
	int err;
	if (fb > lb) {          /* inside a single block */
		return zero_in_block(fs, ip, off / bs, (uint32_t)(off % bs), (uint32_t)(end % bs));
	}
	if (off % bs && (err = zero_in_block(fs, ip, off / bs, (uint32_t)(off % bs), (uint32_t)bs)))
		return err;
	if (end % bs && (err = zero_in_block(fs, ip, lb, 0, (uint32_t)(end % bs))))
		return err;
	lfs_file_drop_pages(fs, ip, fb, lb);
	return lfs_bmap_free_range(fs, ip, fb, lb);
}

int
lfs_file_flush_pages(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (!ip->ndirty_pages)
		return 0;
	size_t n = ip->pages.count;
	uint64_t *keys = lfs_malloc(n * sizeof(uint64_t));
	if (!keys)
		return -ENOMEM;
	u64map_sorted_keys(&ip->pages, keys);
	bool keep = S_ISDIR(ip->di.mode);
	int err = 0;
	for (size_t i = 0; i < n && !err; i++) {
		struct lfs_page *pg = u64map_get(&ip->pages, keys[i]);
		if (!pg->dirty) {
			if (!keep)
				page_free(fs, ip, u64map_del(&ip->pages, keys[i]));
			continue;
		}
		uint64_t addr, old;
		err = lfs_seg_append(fs, LFS_BK_DATA, ip->ino, ip->di.version, keys[i], pg->data, &addr);
		if (!err)
			err = lfs_bmap_set(fs, ip, keys[i], addr, &old);
		if (err)
			break;
		if (old == LFS_ADDR_UNWRITTEN) {
			/* the reservation it stood for is this block now */
		} else if (old && pg->moved) {
			lfs_retain_moved_data(fs, old, addr);
			lfs_repl_note(fs, ip, old, LFS_BK_DATA);
		} else if (old) {
			lfs_repl_drop(fs, ip, old, LFS_BK_DATA);
		}
		lfs_retain_use(fs, addr, fs->bsize, LFS_BK_DATA);
		pg->moved = false;
		if (pg->was_hole)
			ip->pending_new--;
		pg->dirty = false;
		pg->was_hole = false;
		ip->ndirty_pages--;
		fs->dirty_bytes -= fs->bsize;
		fs->dirty_units -= pg->units;
		fs->dirty_new_leaves -= pg->new_leaf;
		pg->new_leaf = false;
		if (!keep)
			page_free(fs, ip, u64map_del(&ip->pages, keys[i]));
	}
	free(keys);
	return err;
}
