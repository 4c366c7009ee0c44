/* testfs.h — make, mount and remount scratch images for the unit suites. */
#ifndef LFS_TESTFS_H
#define LFS_TESTFS_H

#include "check_run.h"
#include "lfs_int.h"
#include "logwalk.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char testfs_path[64];
/* where testfs_make puts its image (testfs_in_memory) */
static const char *testfs_dir = "/tmp";

/* The next images on a tmpfs (/dev/shm) when there is one: for a test
 * whose thousands of checkpoints would each wait for the host's disk to
 * flush, which it does not test. */
static inline void
testfs_in_memory(void)
{
	if (access("/dev/shm", W_OK | X_OK) == 0)
		testfs_dir = "/dev/shm";
}

/* Every image of the suite on a tmpfs, at file scope: for a suite that
 * would spend most of its time waiting for the host's disk to flush. */
#define TESTFS_IN_MEMORY \
	__attribute__((constructor)) static void testfs_in_memory_at_start(void) { testfs_in_memory(); }

/* the caller of the suites' operations: a plain user */
static const struct lfs_cred testfs_me = { 1000, 1000, 0 };

/* A new image, as mkfs.lfs makes it but for the incompatible features
 * in `without` (an image made before them). */
static inline void
testfs_make_without(uint64_t bytes, uint32_t segsize, uint32_t without)
{
	snprintf(testfs_path, sizeof(testfs_path), "%s/lfs-unit-XXXXXX", testfs_dir);
	int fd = mkstemp(testfs_path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)bytes), 0);
	close(fd);
	struct lfs_super sb;
	ck_assert_int_eq(lfs_plan_geometry(&sb, bytes, 4096, segsize, 0), 0);
	ck_assert_uint_eq(sb.feature_incompat & without, without);
	sb.feature_incompat &= ~without;
	ck_assert_int_eq(lfs_format(testfs_path, &sb, getuid(), getgid()), 0);
}

static inline void
testfs_make(uint64_t bytes, uint32_t segsize)
{
	testfs_make_without(bytes, segsize, 0);
}

/* The suites' mount options: the defaults, no timed checkpoints. */
static inline struct lfs_opts
testfs_opts(void)
{
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.ckpt_interval_s = 0;
	return o;
}

static inline struct lfs_fs *
testfs_mount_opts(const struct lfs_opts *o)
{
	struct lfs_fs *fs = NULL;
	ck_assert_int_eq(lfs_mount(testfs_path, o, &fs), 0);
	return fs;
}

static inline struct lfs_fs *
testfs_mount(void)
{
	struct lfs_opts o = testfs_opts();
	return testfs_mount_opts(&o);
}

static inline struct lfs_fs *
testfs_mount_ro(void)
{
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.readonly = true;
	struct lfs_fs *fs = NULL;
	ck_assert_int_eq(lfs_mount(testfs_path, &o, &fs), 0);
	return fs;
}

/* fsck finds nothing wrong with the mounted fs (the usage table included) */
static inline void
testfs_fsck_clean(struct lfs_fs *fs)
{
	uint64_t problems = 1;
	ck_assert_int_eq(lfs_fsck(fs, &problems), 0);
	ck_assert_uint_eq(problems, 0);
}

/* n bytes of a pseudo-random pattern named by seed */
static inline void
fill_pattern(uint8_t *buf, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		buf[i] = (uint8_t)x;
	}
}

/* Inode `ino`, which must be there. */
static inline struct lfs_inode *
testfs_inode(struct lfs_fs *fs, uint64_t ino)
{
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	return ip;
}

/* A new empty regular file `name` in directory `dir`; its number. */
static inline uint64_t
testfs_mkfile(struct lfs_fs *fs, uint64_t dir, const char *name)
{
	struct stat st;
	ck_assert_int_eq(lfs_create(fs, dir, name, 0644, true, &testfs_me, &st), 0);
	return st.st_ino;
}

/* A new filesystem (testfs_make) holding file "a" of `nblocks` blocks
 * of pattern 1, checkpointed; *ino is its number. */
static inline struct lfs_fs *
testfs_with_file(uint64_t bytes, uint32_t segsize, unsigned nblocks, uint64_t *ino)
{
	testfs_make(bytes, segsize);
	struct lfs_fs *fs = testfs_mount();
	*ino = testfs_mkfile(fs, LFS_ROOT_INO, "a");
	uint8_t *buf = malloc((size_t)nblocks * 4096);
	ck_assert_ptr_nonnull(buf);
	fill_pattern(buf, (size_t)nblocks * 4096, 1);
	ck_assert_int_eq(lfs_write(fs, *ino, buf, (size_t)nblocks * 4096, 0, NULL), (ssize_t)nblocks * 4096);
	free(buf);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	return fs;
}

/* Counters of the mounted fs: bytes written (lifetime) and read. */
static inline uint64_t
testfs_written(struct lfs_fs *fs)
{
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	return st.bytes_written;
}

static inline uint64_t
testfs_read(struct lfs_fs *fs)
{
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	return st.bytes_read;
}

static inline void
testfs_remove(void)
{
	unlink(testfs_path);
}

/* Unmount; what is left on disk must check clean too; remove the image. */
static inline void
testfs_finish(struct lfs_fs *fs)
{
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount_ro();
	testfs_fsck_clean(fs);
	lfs_abandon(fs);
	testfs_remove();
}

/* The image's bytes, read whole (*len: its size); the caller frees it. */
static inline uint8_t *
testfs_image_load(size_t *len)
{
	int fd = open(testfs_path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	off_t n = lseek(fd, 0, SEEK_END);
	uint8_t *buf = malloc((size_t)n);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pread(fd, buf, (size_t)n, 0), n);
	close(fd);
	*len = (size_t)n;
	return buf;
}

/* Write `len` bytes back over the image from its start. */
static inline void
testfs_image_store(const uint8_t *buf, size_t len)
{
	int fd = open(testfs_path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, buf, len, 0), (ssize_t)len);
	close(fd);
}

/* Where block lblk of file ino is on disk (0: a hole). */
/* Walk segment seg from its start, as the one log reader does: how many
 * psegs it yields; *end (unless NULL) says why it stopped.  A read error
 * fails the test. */
static inline unsigned
testfs_walk_seg(struct lfs_bdev *dev, const struct lfs_super *sb, uint32_t seed, uint64_t seg, unsigned flags,
		enum lfs_logwalk_end *end)
{
	struct lfs_logwalk w;
	ck_assert_int_eq(lfs_logwalk_init(&w, dev, sb, seed, flags), 0);
	lfs_logwalk_segment(&w, seg);
	unsigned n = 0;
	int r;
	while ((r = lfs_logwalk_next(&w)) > 0)
		n++;
	ck_assert_int_eq(r, 0);
	if (end)
		*end = w.end;
	lfs_logwalk_free(&w);
	return n;
}

/* How many of the pages under [p, p + len) are resident; *npages: of how
 * many.  Memory never touched is not (a page only read maps the zero
 * page, and is). */
static inline size_t
testfs_resident(const void *p, size_t len, size_t *npages)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t from = (uintptr_t)p & ~(uintptr_t)(pg - 1), to = (uintptr_t)p + len;
	size_t n = (to - from + (size_t)pg - 1) / (size_t)pg, resident = 0;
	unsigned char *vec = malloc(n);
	ck_assert_ptr_nonnull(vec);
	ck_assert_int_eq(mincore((void *)from, to - from, vec), 0);
	for (size_t i = 0; i < n; i++)
		resident += vec[i] & 1;
	free(vec);
	*npages = n;
	return resident;
}

/* Resident pages of the image open at `fd` in blocks [from, from + n) of
 * `bsize` bytes; *npages: of how many.  `drop` empties the image's page
 * cache first. */
static inline size_t
testfs_image_resident(int fd, uint32_t bsize, uint64_t from, uint64_t n, bool drop, size_t *npages)
{
	if (drop) {
		ck_assert_int_eq(fdatasync(fd), 0);
		ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	}
	size_t len = (size_t)n * bsize;
	uint8_t *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)(from * bsize));
	ck_assert_ptr_ne(map, MAP_FAILED);
	size_t r = testfs_resident(map, len, npages);
	munmap(map, len);
	return r;
}

static inline uint64_t
testfs_addr_of(struct lfs_fs *fs, uint64_t ino, uint64_t lblk)
{
	uint64_t addr = 0;
	ck_assert_int_eq(lfs_bmap_get(fs, testfs_inode(fs, ino), lblk, &addr), 0);
	return addr;
}

/* The library's log (standard error) goes to a file from
 * testfs_capture_log until testfs_release_log, which copies it back to
 * standard error and returns how many lines hold `needle`. */
static int testfs_saved_stderr = -1;
static char testfs_log_path[64];

static inline void
testfs_capture_log(void)
{
	snprintf(testfs_log_path, sizeof(testfs_log_path), "/tmp/lfs-unit-log-XXXXXX");
	int fd = mkstemp(testfs_log_path);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	testfs_saved_stderr = dup(2);
	dup2(fd, 2);
	close(fd);
}

static inline int
testfs_release_log(const char *needle)
{
	fflush(stderr);
	dup2(testfs_saved_stderr, 2);
	close(testfs_saved_stderr);
	FILE *f = fopen(testfs_log_path, "r");
	char line[1024];
	int n = 0;
	while (f && fgets(line, sizeof(line), f)) {
		fputs(line, stderr);
		n += strstr(line, needle) != NULL;
	}
	if (f)
		fclose(f);
	unlink(testfs_log_path);
	return n;
}

#endif
