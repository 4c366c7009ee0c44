/*
 * check_readrun.c — reads of file blocks leave fs->lock (readrun.c).
 *
 * A read held at its pread (gate.h's hook) holds no lock: other requests
 * stat, write, fsync and read meanwhile.  And the read returns the file's
 * bytes even when, while it waited, the cleaner moved its blocks, a
 * checkpoint made their segments clean and the log wrote other files'
 * blocks over them: the stale bytes it read are noticed (the segments'
 * reuse counts) and read again from where the blocks are now.
 */
#include "gate.h"
#include "testfs.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

TESTFS_IN_MEMORY

#define SEG (64u << 10)        /* 16 blocks */
#define NBLK 20u               /* file "a", pattern 1, over two segments or more */

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

/* The race the reuse counts guard against: a read resolved file a's
 * addresses and waits for the disk; meanwhile the cleaner moves a's
 * blocks, a checkpoint makes their segments clean and the log goes
 * round until other blocks (file c's, pattern 2) are written where a's
 * were.  The read must still return a's bytes. */
START_TEST(read_survives_segment_reuse)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &a);
	uint64_t c = testfs_mkfile(fs, LFS_ROOT_INO, "c");
	warm(fs, a);
	uint64_t old0 = testfs_addr_of(fs, a, 0);
	uint64_t seg0 = lfs_addr_seg(fs, old0);
	uint32_t reuses0 = fs->segs[seg0].reuses;
	ck_assert(on_disk(old0, 1));
	struct reader r;
	reader_start(&r, fs, a);
	assert_lock_free(fs);
	clean_file_segments(fs, a);
	ck_assert_uint_ne(testfs_addr_of(fs, a, 0), old0);
	/* the log goes round (16 blocks of c overwritten and checkpointed at
	 * a time) until it has written over a's old block 0 */
	static uint8_t blk[16 * 4096];
	fill_pattern(blk, sizeof(blk), 2);
	for (int i = 0; on_disk(old0, 1); i++) {
		ck_assert_int_lt(i, 1000);
		ck_assert_int_eq(lfs_write(fs, c, blk, sizeof(blk), 0, NULL), (ssize_t)sizeof(blk));
		ck_assert_int_eq(lfs_checkpoint(fs), 0);
	}
	ck_assert_uint_ne(fs->segs[seg0].reuses, reuses0);
	ck_assert_int_eq(gate_count(), 1);
	reader_join_expect(&r, 1);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("readrun", "core", 30, read_leaves_the_lock, read_survives_segment_reuse)
