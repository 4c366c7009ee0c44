/*
 * check_readrun.c — reads of file blocks leave fs->lock (readrun.c).
 *
 * A read held at its pread (gate.h's hook) holds no lock: other requests
 * stat, write, fsync and read meanwhile.  And the read returns the file's
 * bytes even when, while it waited, the cleaner moved its blocks, a
 * checkpoint made their segments clean and the log wrote other files'
 * blocks over them: the stale bytes it read are noticed (the segments'
 * reuse counts) and read again from where the blocks are now.  Also
 * when a shrink moved them out of a segment it cut off and a grow gave
 * that segment back to the log; and a snapshot's view reads blocks a
 * shrink left past the end, where its held table says they are now.
 */
#include "gate.h"
#include "testfs.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

TESTFS_IN_MEMORY

#define SEG (64u << 10)        /* 16 blocks */
#define NBLK 20u               /* file "a", pattern 1, over two segments or more */
#define TAIL_SEGS 126          /* the segments of 8 MiB, at 64 KiB each */

struct reader {
	pthread_t t;
	struct lfs_fs *fs;
	uint64_t ino;
	uint8_t buf[NBLK * 4096];
	ssize_t ret;
};

static void *
run_reader(void *arg)
{
	struct reader *r = arg;
	r->ret = lfs_read(r->fs, r->ino, r->buf, sizeof(r->buf), 0);
	return NULL;
}

/* A read of all of file `ino` on a thread of its own, held at its first
 * pread until the gate opens. */
static void
reader_start(struct reader *r, struct lfs_fs *fs, uint64_t ino)
{
	r->fs = fs;
	r->ino = ino;
	r->ret = -1;
	gate_reset(LFS_FAULT_PREAD);
	pthread_mutex_lock(&gate_mu);
	ck_assert_int_eq(pthread_create(&r->t, NULL, run_reader, r), 0);
	gate_thread = r->t;
	pthread_mutex_unlock(&gate_mu);
	gate_wait_entered(1);
}

static void
reader_join_expect(struct reader *r, unsigned seed)
{
	gate_open_all();
	ck_assert_int_eq(pthread_join(r->t, NULL), 0);
	gate_remove();
	static uint8_t want[NBLK * 4096];
	fill_pattern(want, sizeof(want), seed);
	/* what it returned is the file's, first; then that it is all */
	if (r->ret > 0)
		ck_assert_mem_eq(r->buf, want, (size_t)r->ret);
	ck_assert_int_eq(r->ret, (ssize_t)sizeof(want));
}

/* The filesystem's lock is free: a thread held reading the disk does
 * not hold it. */
static void
assert_lock_free(struct lfs_fs *fs)
{
	ck_assert_int_eq(pthread_mutex_trylock(&fs->lock), 0);
	pthread_mutex_unlock(&fs->lock);
}

/* The whole of file a once, so that its inode, its block map and its
 * segments' summaries are in memory: the next read's first pread is of
 * the file's blocks. */
static void
warm(struct lfs_fs *fs, uint64_t ino)
{
	static uint8_t buf[NBLK * 4096];
	ck_assert_int_eq(lfs_read(fs, ino, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
}

/* While a read waits for the disk, other requests go on: a stat, a
 * write and its fsync, a read of another file (from memory, and from
 * the disk once written). */
START_TEST(read_leaves_the_lock)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &a);
	uint64_t b = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	warm(fs, a);
	struct reader r;
	reader_start(&r, fs, a);
	assert_lock_free(fs);
	struct stat st;
	ck_assert_int_eq(lfs_getattr(fs, a, &st), 0);
	ck_assert_uint_eq(st.st_size, NBLK * 4096);
	uint8_t blk[4096], got[4096];
	fill_pattern(blk, sizeof(blk), 7);
	ck_assert_int_eq(lfs_write(fs, b, blk, sizeof(blk), 0, NULL), (ssize_t)sizeof(blk));
	ck_assert_int_eq(lfs_read(fs, b, got, sizeof(got), 0), (ssize_t)sizeof(got));
	ck_assert_mem_eq(got, blk, sizeof(blk));
	ck_assert_int_eq(lfs_fsync(fs, b, false), 0);
	ck_assert_int_eq(gate_count(), 1); /* the reader is still held */
	reader_join_expect(&r, 1);
	testfs_finish(fs);
}
END_TEST

/* The image's copy of block addr is block 0 of pattern `seed`. */
static bool
on_disk(uint64_t addr, unsigned seed)
{
	uint8_t got[4096], want[4096];
	fill_pattern(want, sizeof(want), seed);
	int fd = open(testfs_path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, got, sizeof(got), (off_t)(addr * 4096)), 4096);
	close(fd);
	return memcmp(got, want, sizeof(got)) == 0;
}

/* Clean every segment that holds a block of file `ino`, and checkpoint:
 * they are clean, to be written again. */
static void
clean_file_segments(struct lfs_fs *fs, uint64_t ino)
{
	uint64_t segs[NBLK];
	for (uint64_t l = 0; l < NBLK; l++)
		segs[l] = lfs_addr_seg(fs, testfs_addr_of(fs, ino, l));
	lfs_lock(fs);
	for (uint64_t l = 0; l < NBLK; l++) {
		uint64_t moved = 0;
		if (fs->segs[segs[l]].state == LFS_SEG_DIRTY)
			ck_assert_int_eq(lfs_clean_segment(fs, segs[l], &moved), 0);
	}
	pthread_mutex_unlock(&fs->lock);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	for (uint64_t l = 0; l < NBLK; l++)
		ck_assert_uint_eq(fs->segs[segs[l]].state, LFS_SEG_CLEAN);
}

/* A read of file `ino` (pattern `seed`) held at the disk, after the
 * file's inode, block map and summaries were read once; where its block
 * 0 was, and its segment's reuse count, then. */
struct held_read {
	struct reader r;
	unsigned seed;
	uint64_t old0, seg0;
	uint32_t reuses0;
};

static void
held_read_start(struct held_read *h, struct lfs_fs *fs, uint64_t ino, unsigned seed)
{
	warm(fs, ino);
	h->seed = seed;
	h->old0 = testfs_addr_of(fs, ino, 0);
	h->seg0 = lfs_addr_seg(fs, h->old0);
	h->reuses0 = fs->segs[h->seg0].reuses;
	ck_assert(on_disk(h->old0, seed));
	reader_start(&h->r, fs, ino);
	assert_lock_free(fs);
}

/* The file's blocks were moved: the log goes round (16 blocks of file c,
 * pattern 2, overwritten and checkpointed at a time) until it has
 * written over the old block 0; then the read goes on and must return
 * the file's bytes, its segment's reuse count changed. */
static void
held_read_end(struct held_read *h, struct lfs_fs *fs, uint64_t c)
{
	ck_assert_uint_ne(testfs_addr_of(fs, h->r.ino, 0), h->old0);
	static uint8_t blk[16 * 4096];
	fill_pattern(blk, sizeof(blk), 2);
	for (int i = 0; on_disk(h->old0, h->seed); i++) {
		ck_assert_int_lt(i, 1000);
		ck_assert_int_eq(lfs_write(fs, c, blk, sizeof(blk), 0, NULL), (ssize_t)sizeof(blk));
		ck_assert_int_eq(lfs_checkpoint(fs), 0);
	}
	ck_assert_int_eq(gate_count(), 1);
	reader_join_expect(&h->r, h->seed);
	ck_assert_uint_ne(fs->segs[h->seg0].reuses, h->reuses0);
}

/* The race the reuse counts guard against: a read resolved file a's
 * addresses and waits for the disk; meanwhile the cleaner moves a's
 * blocks, a checkpoint makes their segments clean and the log goes
 * round until other blocks (file c's) are written where a's were.  The
 * read must still return a's bytes. */
START_TEST(read_survives_segment_reuse)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &a);
	uint64_t c = testfs_mkfile(fs, LFS_ROOT_INO, "c");
	struct held_read h;
	held_read_start(&h, fs, a, 1);
	clean_file_segments(fs, a);
	held_read_end(&h, fs, c);
	testfs_finish(fs);
}
END_TEST

/* File "t" of NBLK blocks of pattern 3, past the first half of the
 * 16 MiB log (a 9 MiB file written and deleted before it), checkpointed:
 * a shrink to 8 MiB moves it. */
static uint64_t
tail_file(struct lfs_fs *fs)
{
	enum { FILL = 150 * 16 };
	uint8_t *buf = malloc((size_t)FILL * 4096);
	ck_assert_ptr_nonnull(buf);
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "fill");
	fill_pattern(buf, (size_t)FILL * 4096, 9);
	ck_assert_int_eq(lfs_write(fs, f, buf, (size_t)FILL * 4096, 0, NULL), (ssize_t)FILL * 4096);
	lfs_release(fs, f);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "fill"), 0);
	lfs_forget(fs, f, 1);
	uint64_t t = testfs_mkfile(fs, LFS_ROOT_INO, "t");
	fill_pattern(buf, (size_t)NBLK * 4096, 3);
	ck_assert_int_eq(lfs_write(fs, t, buf, (size_t)NBLK * 4096, 0, NULL), (ssize_t)NBLK * 4096);
	free(buf);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_ge(lfs_addr_seg(fs, testfs_addr_of(fs, t, 0)), TAIL_SEGS);
	return t;
}

static void
resize_to(struct lfs_fs *fs, uint64_t bytes)
{
	struct lfs_resize_info ri;
	char why[512];
	int err = lfs_resize(fs, bytes, 0, &ri, why, sizeof(why));
	ck_assert_msg(err == 0, "lfs_resize to %llu: %d: %s", (unsigned long long)bytes, err, why);
}

/* A read resolved file t's addresses in a segment past 8 MiB and waits
 * for the disk; meanwhile a shrink to 8 MiB moves t's blocks and cuts
 * that segment off, a grow to 16 MiB gives it back, and the log writes
 * file c's blocks where t's were.  The segment's reuse count must not
 * come back to what the read planned with: the read returns t's bytes. */
START_TEST(read_survives_shrink_and_grow)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &a);
	uint64_t t = tail_file(fs);
	uint64_t c = testfs_mkfile(fs, LFS_ROOT_INO, "c");
	struct held_read h;
	held_read_start(&h, fs, t, 3);
	resize_to(fs, 8 << 20);
	ck_assert_uint_le(fs->sb.nsegs, h.seg0);
	resize_to(fs, 16 << 20);
	ck_assert_uint_gt(fs->sb.nsegs, h.seg0);
	held_read_end(&h, fs, c);
	testfs_finish(fs);
}
END_TEST

/* A snapshot holds file t, deleted since; a shrink copies t's blocks out
 * of the segments it cuts off.  A view of the snapshot opened after it
 * (with the shrunk geometry) asks for t's blocks at their addresses of
 * then, past the new end, which the held table translates: they read. */
START_TEST(view_reads_past_a_shrunk_end)
{
	uint64_t a, keep;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &a);
	uint64_t t = tail_file(fs);
	ck_assert_int_eq(lfs_snapshot_make(fs, "keep", &keep), 0);
	lfs_release(fs, t);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "t"), 0);
	lfs_forget(fs, t, 1);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	resize_to(fs, 8 << 20);
	struct lfs_fs *v;
	ck_assert_int_eq(lfs_view_open(fs, "keep", false, &v), 0);
	struct stat st;
	ck_assert_int_eq(lfs_lookup(v, LFS_ROOT_INO, "t", &st), 0);
	static uint8_t got[NBLK * 4096], want[NBLK * 4096];
	fill_pattern(want, sizeof(want), 3);
	ck_assert_int_eq(lfs_read(v, st.st_ino, got, sizeof(got), 0), (ssize_t)sizeof(got));
	ck_assert_mem_eq(got, want, sizeof(got));
	lfs_abandon(v);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("readrun", "core", 30, read_leaves_the_lock, read_survives_segment_reuse, read_survives_shrink_and_grow,
	   view_reads_past_a_shrunk_end)
