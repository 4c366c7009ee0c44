/*
 * check_cache.c — the inode cache within its budget (cache.c): clean
 * inodes, inline buffers and block-map nodes are evicted, the kernel's
 * references to an evicted inode are kept (forget, unlink while looked
 * up), and what is in use is never lost.
 */
#include "testfs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>


static struct lfs_fs *
mount_budget(uint64_t bytes)
{
	struct lfs_opts o = testfs_opts();
	o.cache_bytes = bytes;
	return testfs_mount_opts(&o);
}

#define NFILES 3000
#define BUDGET (512u << 10)

/* Small files with inline content, all looked up (as the kernel holds
 * them after a stat) and never forgotten: the cache stays within its
 * budget, each file still reads back, and the references are all kept. */
START_TEST(stat_many_small_files)
{
	testfs_make(256 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	char name[32], buf[64];
	for (int i = 0; i < NFILES; i++) {
		struct stat st;
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(lfs_create(fs, LFS_ROOT_INO, name, 0644, true, &testfs_me, &st), 0);
		ck_assert_int_eq(lfs_write(fs, st.st_ino, name, strlen(name), 0, NULL), (ssize_t)strlen(name));
		lfs_forget(fs, st.st_ino, 1);
	}
	ck_assert_int_eq(lfs_unmount(fs), 0);

	fs = mount_budget(BUDGET);
	uint64_t inos[NFILES], peak = 0;
	for (int i = 0; i < NFILES; i++) {
		struct stat st;
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, name, &st), 0);
		ck_assert_int_eq(lfs_read(fs, st.st_ino, buf, sizeof(buf), 0), (ssize_t)strlen(name));
		ck_assert(memcmp(buf, name, strlen(name)) == 0);
		inos[i] = st.st_ino;
		if (lfs_cache_bytes(fs) > peak)
			peak = lfs_cache_bytes(fs);
	}
	struct lfs_stats s;
	lfs_get_stats(fs, &s);
	fprintf(stderr, "%d small files looked up: cache peak %llu bytes (budget %u), %llu inodes cached, "
		"%llu evicted, %zu references kept for evicted inodes\n", NFILES, (unsigned long long)peak, BUDGET,
		(unsigned long long)fs->icache.count, (unsigned long long)s.inodes_evicted, fs->irefs.count);
	/* the budget holds after each operation (what one operation loads
	 * may pass it until that operation ends) */
	ck_assert_uint_le(lfs_cache_bytes(fs), BUDGET);
	ck_assert_uint_gt(s.inodes_evicted, NFILES / 2);
	ck_assert_uint_eq(fs->icache.count + fs->irefs.count, NFILES + 1);

	/* unlink a file the kernel still references while it is evicted:
	 * it must stay, an orphan, until the reference is forgotten */
	ck_assert_ptr_null(u64map_get(&fs->icache, inos[0]));
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "f0"), 0);
	ck_assert_int_eq(lfs_read(fs, inos[0], buf, sizeof(buf), 0), 2);
	ck_assert(memcmp(buf, "f0", 2) == 0);
	struct stat st;
	ck_assert_int_eq(lfs_getattr(fs, inos[0], &st), 0);
	ck_assert_int_eq(st.st_nlink, 0);
	for (int i = 1; i < 200; i++) /* push it out of the cache if it could be */
		ck_assert_int_eq(lfs_getattr(fs, inos[i], &st), 0);
	ck_assert_ptr_nonnull(u64map_get(&fs->icache, inos[0]));
	lfs_forget(fs, inos[0], 1);
	ck_assert_int_eq(lfs_getattr(fs, inos[0], &st), -ESTALE);

	/* forget every other reference: evicted or cached, all are dropped */
	for (int i = 1; i < NFILES; i++)
		lfs_forget(fs, inos[i], 1);
	ck_assert_uint_eq(fs->irefs.count, 0);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* Reading through a file larger than the budget's worth of block map
 * drops clean nodes as it goes; an open file is never evicted. */
START_TEST(read_through_large_file)
{
	testfs_make(512 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	struct stat st;
	ck_assert_int_eq(lfs_create(fs, LFS_ROOT_INO, "big", 0644, true, &testfs_me, &st), 0);
	uint64_t ino = st.st_ino;
	uint8_t *buf = malloc(1 << 20);
	enum { MB = 256 };
	for (int i = 0; i < MB; i++) {
		fill_pattern(buf, 1 << 20, (unsigned)i);
		ck_assert_int_eq(lfs_write(fs, ino, buf, 1 << 20, (off_t)i << 20, NULL), 1 << 20);
	}
	lfs_forget(fs, ino, 1);
	ck_assert_int_eq(lfs_unmount(fs), 0);

	/* 256 MiB has 128 leaves (512 KiB of nodes): a 128 KiB budget */
	fs = mount_budget(128u << 10);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "big", &st), 0);
	ck_assert_int_eq(lfs_open(fs, ino, O_RDONLY), 0);
	uint8_t *want = malloc(1 << 20);
	uint64_t peak = 0;
	for (int i = 0; i < MB; i++) {
		ck_assert_int_eq(lfs_read(fs, ino, buf, 1 << 20, (off_t)i << 20), 1 << 20);
		fill_pattern(want, 1 << 20, (unsigned)i);
		ck_assert_msg(memcmp(buf, want, 1 << 20) == 0, "MiB %d differs", i);
		if (lfs_cache_bytes(fs) > peak)
			peak = lfs_cache_bytes(fs);
	}
	struct lfs_stats s;
	lfs_get_stats(fs, &s);
	fprintf(stderr, "read through %d MiB: cache peak %llu bytes (budget %u), %llu nodes dropped\n", MB,
		(unsigned long long)peak, 128u << 10, (unsigned long long)s.nodes_dropped);
	ck_assert_uint_le(peak, 128u << 10);
	ck_assert_uint_gt(s.nodes_dropped, 100);
	ck_assert_ptr_nonnull(u64map_get(&fs->icache, ino)); /* open: never evicted */
	ck_assert_int_eq(lfs_release(fs, ino), 0);
	lfs_forget(fs, ino, 1);
	free(buf);
	free(want);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

CHECK_MAIN("cache", "budget", 300, stat_many_small_files, read_through_large_file)
