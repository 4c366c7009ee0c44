/*
 * check_file.c — file content (file.c), through its own functions:
 * inline content up to inline_max and its move to block 0, holes read
 * as zeros (from pages, from runs of blocks on disk), the size limit of
 * the block map, truncate and punch zeroing what they cut and freeing
 * whole blocks only, fallocate's zero blocks over holes, the admission
 * units dirty pages count, pages placed in the log with the old copies
 * counted free, and the error returns: writes without memory short or
 * failed whole, reads stopped by a block outside the log.  st_blocks is
 * checked as stat reports it.  Block size 4096: inline_max is 3840.
 */
#include "testfs.h"

#include <errno.h>
#include <string.h>

#define BS 4096
#define INLINE_MAX 3840
#define MAX_SIZE 282025808412672ull /* (12 + 512 + 512^2 + 512^3 + 512^4) * 4096 */

static struct lfs_fs *
start(void)
{
	testfs_make(32 << 20, 1 << 20);
	return testfs_mount();
}

static struct lfs_inode *
new_file(struct lfs_fs *fs, const char *name)
{
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, testfs_mkfile(fs, LFS_ROOT_INO, name), &ip), 0);
	return ip;
}

/* Write `len` bytes of pattern `seed` at off, into `model` too if given. */
static void
put(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t off, size_t len, unsigned seed, uint8_t *model)
{
	uint8_t *buf = malloc(len);
	fill_pattern(buf, len, seed);
	ck_assert_int_eq(lfs_file_write(fs, ip, LFS_SPACE_WRITE, buf, len, off), (ssize_t)len);
	if (model)
		memcpy(model + off, buf, len);
	free(buf);
}

/* The whole file reads as `model`, its size. */
static void
expect(struct lfs_fs *fs, struct lfs_inode *ip, const uint8_t *model, size_t size)
{
	ck_assert_uint_eq(ip->di.size, size);
	uint8_t *got = malloc(size + BS);
	ck_assert_int_eq(lfs_file_read(fs, ip, got, size + BS, 0), (ssize_t)size);
	size_t i = 0;
	while (i < size && got[i] == model[i])
		i++;
	ck_assert_msg(i == size, "byte %zu: %u, not %u", i, got[i], model[i]);
	free(got);
}

static long
st_blocks(struct lfs_fs *fs, struct lfs_inode *ip)
{
	struct stat st;
	lfs_inode_stat(fs, ip, &st);
	return (long)st.st_blocks;
}

/* Unmount and mount again: the inode as read from the log. */
static struct lfs_fs *
remount(struct lfs_fs *fs, struct lfs_inode **ip)
{
	uint64_t ino = (*ip)->ino;
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_iget(fs, ino, ip), 0);
	return fs;
}

/* Content stays in the record while it ends within inline_max, however
 * it is written (a gap inside reads as zeros), and st_blocks counts its
 * 512-byte sectors; one byte more moves it to block 0, a new block the
 * stat counts at once, and the inline buffer is given back. */
START_TEST(inline_until_inline_max)
{
	struct lfs_fs *fs = start();
	struct lfs_inode *ip = new_file(fs, "f");
	static uint8_t model[INLINE_MAX + 1];
	ck_assert(ip->di.flags & LFS_DI_INLINE);
	uint64_t inl = fs->cache_inl;
	put(fs, ip, 0, 100, 1, model);
	ck_assert(ip->di.flags & LFS_DI_INLINE);
	ck_assert_uint_eq(ip->di.inline_len, 100);
	ck_assert_uint_eq(fs->cache_inl, inl + 1);
	ck_assert_int_eq(st_blocks(fs, ip), 1);
	put(fs, ip, INLINE_MAX - 1, 1, 2, model);
	ck_assert(ip->di.flags & LFS_DI_INLINE);
	ck_assert_uint_eq(ip->di.inline_len, INLINE_MAX);
	ck_assert_uint_eq(ip->di.blocks, 0);
	ck_assert_uint_eq(ip->pages.count, 0);
	ck_assert_int_eq(st_blocks(fs, ip), 8);
	expect(fs, ip, model, INLINE_MAX);

	put(fs, ip, INLINE_MAX, 1, 3, model);
	ck_assert(!(ip->di.flags & LFS_DI_INLINE));
	ck_assert_uint_eq(ip->di.inline_len, 0);
	ck_assert_ptr_null(ip->inl);
	ck_assert_uint_eq(fs->cache_inl, inl);
	ck_assert_uint_eq(ip->pending_new, 1);
	ck_assert_int_eq(st_blocks(fs, ip), 8);
	expect(fs, ip, model, INLINE_MAX + 1);
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_uint_eq(ip->di.blocks, 1);
	ck_assert_uint_eq(ip->pending_new, 0);
	ck_assert_int_eq(st_blocks(fs, ip), 8);
	fs = remount(fs, &ip);
	ck_assert(!(ip->di.flags & LFS_DI_INLINE));
	expect(fs, ip, model, INLINE_MAX + 1);
	testfs_finish(fs);
}
END_TEST

/* Blocks never written read as zeros, from dirty pages and from disk,
 * and a read gathers runs of blocks that follow each other on disk
 * without losing its offset inside the first; reads stop at the size:
 * short across it, empty at or past it. */
START_TEST(holes_read_as_zeros)
{
	struct lfs_fs *fs = start();
	struct lfs_inode *ip = new_file(fs, "f");
	enum { SIZE = 16 * BS + 150 };
	static uint8_t model[SIZE];
	put(fs, ip, 3 * BS, BS, 1, model);
	ck_assert_uint_eq(ip->pages.count, 1); /* empty inline content: no block 0 */
	put(fs, ip, 8 * BS, 5 * BS, 2, model);
	put(fs, ip, 16 * BS + 100, 50, 3, model);
	expect(fs, ip, model, SIZE);
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_uint_eq(ip->di.blocks, 8); /* 7 and the leaf of block 16 */
	ck_assert_uint_eq(ip->pages.count, 0);
	expect(fs, ip, model, SIZE);
	/* inside a run: from 100 bytes into block 8 to 100 before its end */
	uint8_t got[5 * BS];
	ck_assert_int_eq(lfs_file_read(fs, ip, got, 5 * BS - 200, 8 * BS + 100), 5 * BS - 200);
	ck_assert(memcmp(got, model + 8 * BS + 100, 5 * BS - 200) == 0);
	/* a hole, a run, a hole */
	ck_assert_int_eq(lfs_file_read(fs, ip, got, 5 * BS, 7 * BS + 7), 5 * BS);
	ck_assert(memcmp(got, model + 7 * BS + 7, 5 * BS) == 0);
	ck_assert_int_eq(lfs_file_read(fs, ip, got, 100, SIZE - 10), 10);
	ck_assert(memcmp(got, model + SIZE - 10, 10) == 0);
	ck_assert_int_eq(lfs_file_read(fs, ip, got, 100, SIZE), 0);
	ck_assert_int_eq(lfs_file_read(fs, ip, got, 100, UINT64_MAX), 0);
	fs = remount(fs, &ip);
	expect(fs, ip, model, SIZE);
	testfs_finish(fs);
}
END_TEST

/* The size limit is the block map's: a write ending past it, or whose
 * end wraps, is -EFBIG and changes nothing; one ending exactly there is
 * taken, in the last block of the deepest tree; an empty write is 0. */
START_TEST(size_limit)
{
	struct lfs_fs *fs = start();
	struct lfs_inode *ip = new_file(fs, "f");
	ck_assert_uint_eq(lfs_file_max_size(fs), MAX_SIZE);
	uint8_t z = 'z', got[2] = { 1, 1 };
	ck_assert_int_eq(lfs_file_write(fs, ip, LFS_SPACE_WRITE, &z, 0, 5), 0);
	ck_assert_int_eq(lfs_file_write(fs, ip, LFS_SPACE_WRITE, got, 2, MAX_SIZE - 1), -EFBIG);
	ck_assert_int_eq(lfs_file_write(fs, ip, LFS_SPACE_WRITE, got, 2, UINT64_MAX - 1), -EFBIG);
	ck_assert_int_eq(lfs_file_truncate(fs, ip, MAX_SIZE + 1), -EFBIG);
	ck_assert_uint_eq(ip->di.size, 0);
	ck_assert(ip->di.flags & LFS_DI_INLINE);
	ck_assert_int_eq(lfs_file_write(fs, ip, LFS_SPACE_WRITE, &z, 1, MAX_SIZE - 1), 1);
	ck_assert_uint_eq(ip->di.size, MAX_SIZE);
	ck_assert_int_eq(lfs_file_read(fs, ip, got, 2, MAX_SIZE - 1), 1);
	ck_assert_uint_eq(got[0], 'z');
	ck_assert_int_eq(lfs_file_read(fs, ip, got, 1, MAX_SIZE - BS - 1), 1);
	ck_assert_uint_eq(got[0], 0);
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_uint_eq(ip->di.blocks, 5); /* the block and the four nodes above it */
	fs = remount(fs, &ip);
	ck_assert_int_eq(lfs_file_read(fs, ip, got, 2, MAX_SIZE - 1), 1);
	ck_assert_uint_eq(got[0], 'z');
	testfs_finish(fs);
}
END_TEST

/* Truncation frees the blocks wholly past the new size at once and
 * zeroes the tail of the last one, so growing again shows zeros, not
 * the old bytes; growing makes a hole; an emptied file with nothing
 * left goes back inline.  Inline content is cut and zeroed the same
 * way, and truncating it past inline_max moves it to block 0. */
START_TEST(truncate_cuts_and_zeroes)
{
	struct lfs_fs *fs = start();
	struct lfs_inode *ip = new_file(fs, "f");
	static uint8_t model[3 * BS];
	put(fs, ip, 0, 3 * BS, 1, model);
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_uint_eq(ip->di.blocks, 3);
	ck_assert_int_eq(lfs_file_truncate(fs, ip, 5000), 0);
	ck_assert_uint_eq(ip->di.blocks, 2);
	ck_assert_uint_eq(ip->di.direct[2], 0);
	ck_assert_uint_eq(ip->pending_new, 0); /* block 1 rewritten, not new */
	ck_assert_int_eq(lfs_file_truncate(fs, ip, 3 * BS), 0);
	ck_assert_uint_eq(ip->di.blocks, 2);
	memset(model + 5000, 0, 3 * BS - 5000);
	expect(fs, ip, model, 3 * BS);
	ck_assert_int_eq(lfs_flush(fs), 0);
	expect(fs, ip, model, 3 * BS);
	ck_assert_int_eq(st_blocks(fs, ip), 16);

	ck_assert_int_eq(lfs_file_truncate(fs, ip, 0), 0);
	ck_assert_uint_eq(ip->di.blocks, 0);
	ck_assert(ip->di.flags & LFS_DI_INLINE);
	ck_assert_int_eq(st_blocks(fs, ip), 0);
	put(fs, ip, 0, 10, 2, model);
	ck_assert(ip->di.flags & LFS_DI_INLINE);
	ck_assert_uint_eq(ip->di.inline_len, 10);
	ck_assert_int_eq(lfs_file_truncate(fs, ip, 4), 0);
	ck_assert_int_eq(lfs_file_truncate(fs, ip, 10), 0);
	memset(model + 4, 0, 6);
	expect(fs, ip, model, 10);
	ck_assert_int_eq(lfs_file_truncate(fs, ip, 5000), 0);
	ck_assert(!(ip->di.flags & LFS_DI_INLINE));
	ck_assert_uint_eq(ip->pending_new, 1);
	memset(model + 10, 0, 5000 - 10);
	expect(fs, ip, model, 5000);
	fs = remount(fs, &ip);
	expect(fs, ip, model, 5000);
	testfs_finish(fs);
}
END_TEST

/* A punch zeroes what it covers and frees only the blocks it covers
 * whole; a punch within one block keeps that block; one past the size
 * stops at the size and one beyond it does nothing; a punch over a
 * hole allocates nothing.  Inline content is zeroed in the record. */
START_TEST(punch_zeroes_and_frees_whole_blocks)
{
	struct lfs_fs *fs = start();
	struct lfs_inode *ip = new_file(fs, "f");
	static uint8_t model[4 * BS];
	put(fs, ip, 0, 4 * BS, 1, model);
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_int_eq(lfs_file_punch(fs, ip, 100, 200), 0);
	ck_assert_uint_eq(ip->di.blocks, 4);
	memset(model + 100, 0, 200);
	ck_assert_int_eq(lfs_file_punch(fs, ip, BS + 10, 2 * BS), 0);
	ck_assert_uint_eq(ip->di.blocks, 3);
	ck_assert_uint_eq(ip->di.direct[2], 0);
	memset(model + BS + 10, 0, 2 * BS);
	ck_assert_int_eq(lfs_file_punch(fs, ip, 15000, 1ull << 40), 0);
	ck_assert_uint_eq(ip->di.blocks, 3);
	memset(model + 15000, 0, 4 * BS - 15000);
	ck_assert_int_eq(lfs_file_punch(fs, ip, 4 * BS, 10), 0);
	ck_assert_int_eq(lfs_file_punch(fs, ip, 20000, 10), 0);
	ck_assert_uint_eq(ip->di.size, 4 * BS);
	ck_assert_uint_eq(ip->pending_new, 0);
	expect(fs, ip, model, 4 * BS);
	ck_assert_int_eq(lfs_flush(fs), 0);
	expect(fs, ip, model, 4 * BS);
	ck_assert_int_eq(st_blocks(fs, ip), 24);
	ck_assert_int_eq(lfs_file_punch(fs, ip, 2 * BS + 10, 100), 0);
	ck_assert_uint_eq(ip->pages.count, 0);
	ck_assert_uint_eq(ip->pending_new, 0);
	ck_assert_uint_eq(ip->di.blocks, 3);

	struct lfs_inode *small = new_file(fs, "small");
	static uint8_t m2[10];
	put(fs, small, 0, 10, 2, m2);
	ck_assert_int_eq(lfs_file_punch(fs, small, 2, 3), 0);
	memset(m2 + 2, 0, 3);
	ck_assert(small->di.flags & LFS_DI_INLINE);
	expect(fs, small, m2, 10);
	fs = remount(fs, &ip);
	expect(fs, ip, model, 4 * BS);
	testfs_finish(fs);
}
END_TEST

/* On an image without unwritten blocks (check_unwritten has those),
 * fallocate gives every hole in the range a block of zeros, counted in
 * st_blocks at once, and marks the file (its overwrites free what they
 * take); blocks it has, or pages, get nothing more; the size is not its
 * business (fs.c sets it); inline content moves to block 0 first. */
START_TEST(allocate_fills_holes)
{
	testfs_make_without(32 << 20, 1 << 20, LFS_FEATURE_UNWRITTEN);
	struct lfs_fs *fs = testfs_mount();
	struct lfs_inode *ip = new_file(fs, "f");
	static uint8_t model[10];
	put(fs, ip, 0, 10, 1, model);
	ck_assert_int_eq(lfs_file_allocate(fs, ip, 0, 3 * BS + 1), 0);
	ck_assert(!(ip->di.flags & LFS_DI_INLINE));
	ck_assert(ip->di.flags & LFS_DI_PREALLOC);
	ck_assert_uint_eq(ip->di.size, 10);
	ck_assert_uint_eq(ip->pending_new, 4);
	ck_assert_int_eq(st_blocks(fs, ip), 32);
	ck_assert_int_eq(lfs_file_allocate(fs, ip, 0, 3 * BS + 1), 0);
	ck_assert_uint_eq(ip->pending_new, 4);
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_uint_eq(ip->di.blocks, 4);
	ck_assert_int_eq(lfs_file_allocate(fs, ip, 2 * BS + 5, 4 * BS), 0);
	ck_assert_uint_eq(ip->pending_new, 3); /* blocks 4, 5 and 6 */
	ck_assert_int_eq(st_blocks(fs, ip), 56);
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_uint_eq(ip->di.blocks, 7);
	ck_assert_uint_ne(ip->di.direct[6], 0);
	ck_assert_uint_eq(ip->di.direct[7], 0);
	fs = remount(fs, &ip);
	ck_assert(ip->di.flags & LFS_DI_PREALLOC);
	expect(fs, ip, model, 10);
	uint8_t got[16];
	ck_assert_int_eq(lfs_file_read(fs, ip, got, sizeof(got), 6 * BS), 0);
	testfs_finish(fs);
}
END_TEST

/* A write that runs out of memory fails whole (-ENOMEM) or is short,
 * and never counts a byte it did not store: what it returns is on the
 * file, the rest as it was, the dirty counts match its pages.  A read
 * that meets a block outside the log returns the bytes before it, and
 * -EFSCORRUPTED when there are none: never zeros for lost data. */
START_TEST(errors_are_short_or_whole)
{
	struct lfs_fs *fs = start();
	struct lfs_inode *ip = new_file(fs, "f");
	static uint8_t model[3 * BS], data[3 * BS];
	put(fs, ip, 0, 100, 1, model);
	ck_assert_int_eq(lfs_flush(fs), 0);
	fill_pattern(data, sizeof(data), 2);
	size_t size = 100;
	int fails = 0;
	ssize_t r = 0;
	for (unsigned n = 1; n < 100 && r != 3 * BS; n++) {
		char spec[32];
		snprintf(spec, sizeof(spec), "alloc:%u:ENOMEM", n);
		ck_assert_int_eq(lfs_fault_arm(spec), 0);
		r = lfs_file_write(fs, ip, LFS_SPACE_WRITE, data, sizeof(data), 0);
		lfs_fault_disarm();
		if (r == -ENOMEM) {
			fails++;
		} else {
			ck_assert_int_gt(r, 0);
			memcpy(model, data, (size_t)r);
			if ((size_t)r > size)
				size = (size_t)r;
		}
		expect(fs, ip, model, size);
		ck_assert_uint_eq(ip->ndirty_pages, ip->pages.count);
		ck_assert_uint_eq(fs->dirty_bytes, (uint64_t)ip->ndirty_pages * BS);
	}
	ck_assert_int_eq(r, 3 * BS);
	ck_assert_int_ge(fails, 3);
	ck_assert_uint_eq(ip->pending_new, 3);
	ck_assert_int_eq(lfs_flush(fs), 0);
	expect(fs, ip, model, 3 * BS);

	/* block 1 mapped to the checkpoint region */
	uint64_t old;
	ck_assert_int_eq(lfs_bmap_set(fs, ip, 1, fs->sb.ckpt_addr[0], &old), 0);
	uint8_t got[2 * BS];
	ck_assert_int_eq(lfs_file_read(fs, ip, got, sizeof(got), 0), BS);
	ck_assert(memcmp(got, model, BS) == 0);
	ck_assert_int_eq(lfs_file_read(fs, ip, got, 10, BS + 5), -EFSCORRUPTED);
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

/* Dirty a page of block lblk, as a whole-block write does. */
static void
dirty(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk)
{
	struct lfs_page *pg;
	ck_assert_int_eq(lfs_file_get_page(fs, ip, lblk, true, true, &pg), 0);
	ck_assert_int_eq(lfs_file_dirty_page(fs, ip, lblk, pg), 0);
}

/* What admission counts for dirty pages: 16 units (a block) each, and
 * 16 more past the direct pointers whenever the writes move to another
 * leaf; past the first tree, once, 48 for the interior nodes (the
 * inode's, kept until it is written); a page over a hole is a new block
 * for st_blocks; dirtying twice counts once; dropping pages gives back
 * exactly what they counted. */
START_TEST(dirty_pages_count_units)
{
	struct lfs_fs *fs = start();
	struct lfs_inode *ip = new_file(fs, "f");
	put(fs, ip, 0, BS, 1, NULL);
	ck_assert_int_eq(lfs_flush(fs), 0);
	lfs_inode_dirty(fs, ip);
	uint64_t u = fs->dirty_units, b = fs->dirty_bytes;
	dirty(fs, ip, 1);
	ck_assert_uint_eq(fs->dirty_units, u + 16);
	ck_assert_uint_eq(fs->dirty_bytes, b + BS);
	ck_assert_uint_eq(ip->pending_new, 1);
	ck_assert_int_eq(st_blocks(fs, ip), 16);
	dirty(fs, ip, 0);
	ck_assert_uint_eq(fs->dirty_units, u + 32);
	ck_assert_uint_eq(ip->pending_new, 1); /* block 0 is on disk */
	dirty(fs, ip, 12);
	ck_assert_uint_eq(fs->dirty_units, u + 64);
	dirty(fs, ip, 13);
	ck_assert_uint_eq(fs->dirty_units, u + 80);
	dirty(fs, ip, 524);
	ck_assert_uint_eq(fs->dirty_units, u + 112 + 48);
	dirty(fs, ip, 14);
	ck_assert_uint_eq(fs->dirty_units, u + 144 + 48);
	dirty(fs, ip, 12);
	ck_assert_uint_eq(fs->dirty_units, u + 144 + 48);
	ck_assert_uint_eq(ip->ndirty_pages, 6);
	ck_assert_uint_eq(ip->pending_new, 5);
	ck_assert_uint_eq(fs->dirty_bytes, b + 6 * BS);
	lfs_file_drop_pages(fs, ip, 12, 525);
	ck_assert_uint_eq(fs->dirty_units, u + 32 + 48);
	ck_assert_uint_eq(fs->dirty_bytes, b + 2 * BS);
	ck_assert_uint_eq(ip->pending_new, 1);
	ck_assert_uint_eq(ip->ndirty_pages, 2);
	ck_assert_uint_eq(ip->pages.count, 2);
	lfs_file_drop_pages(fs, ip, 0, UINT64_MAX);
	ck_assert_uint_eq(fs->dirty_units, u + 48);
	ck_assert_uint_eq(fs->dirty_bytes, b);
	ck_assert_uint_eq(ip->pending_new, 0);
	ck_assert_int_eq(st_blocks(fs, ip), 8);
	testfs_finish(fs);
}
END_TEST

/* Writing pages out gives each its place in the log: an overwrite moves
 * the block and counts the old copy free (the usage table is unchanged
 * for a block replaced), a partial overwrite keeps the rest of the
 * block; a regular file's pages are dropped, a directory's kept. */
START_TEST(flush_pages_places_blocks)
{
	struct lfs_fs *fs = start();
	struct lfs_inode *ip = new_file(fs, "f");
	static uint8_t model[2 * BS];
	put(fs, ip, 0, 2 * BS, 1, model);
	ck_assert_int_eq(lfs_flush(fs), 0);
	uint64_t a0 = ip->di.direct[0], a1 = ip->di.direct[1], live = fs->live_total;
	put(fs, ip, 100, 10, 2, model);
	ck_assert_uint_eq(ip->pages.count, 1);
	ck_assert_int_eq(lfs_file_flush_pages(fs, ip), 0);
	ck_assert_uint_eq(ip->pages.count, 0);
	ck_assert_uint_eq(ip->ndirty_pages, 0);
	ck_assert_uint_eq(fs->dirty_bytes, 0);
	ck_assert_uint_ne(ip->di.direct[0], a0);
	ck_assert(lfs_addr_valid(fs, ip->di.direct[0]));
	ck_assert_uint_eq(ip->di.direct[1], a1);
	ck_assert_uint_eq(ip->di.blocks, 2);
	ck_assert_uint_eq(fs->live_total, live);
	expect(fs, ip, model, 2 * BS);

	struct lfs_inode *root;
	ck_assert_int_eq(lfs_iget(fs, LFS_ROOT_INO, &root), 0);
	new_file(fs, "g");
	ck_assert_uint_gt(root->ndirty_pages, 0);
	size_t npages = root->pages.count;
	ck_assert_uint_eq(npages, root->di.size / BS);
	ck_assert_int_eq(lfs_file_flush_pages(fs, root), 0);
	ck_assert_uint_eq(root->ndirty_pages, 0);
	ck_assert_uint_eq(root->pages.count, npages);
	ck_assert_int_eq(lfs_flush(fs), 0);
	fs = remount(fs, &ip);
	expect(fs, ip, model, 2 * BS);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("file", "content", 60, inline_until_inline_max, holes_read_as_zeros, size_limit,
	   truncate_cuts_and_zeroes, punch_zeroes_and_frees_whole_blocks, allocate_fills_holes,
	   dirty_pages_count_units, flush_pages_places_blocks, errors_are_short_or_whole)
