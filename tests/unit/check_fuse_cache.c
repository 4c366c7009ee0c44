/*
 * check_fuse_cache.c — the headroom kept for what the kernel's writeback
 * cache may hold (fuse_cache.c): its last half, where every writer is
 * refused, always covers the kernel's bound with its margin, and it does
 * not move (nor, with it, df) while the bound only drifts with free
 * memory, as the kernel reads it back; and a writer is marked by the
 * files it wrote back and by its fsync, until one is told.
 */
#include "check_run.h"
#include "fuse_cache.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MIB (1ull << 20)
#define GIB (1ull << 30)

static char path[64];

static void
set_limit(struct lfs_fuse_cache *c, unsigned long long v)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_gt(fprintf(f, "%llu\n", v), 0);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(c->max_bytes_path, sizeof(c->max_bytes_path), "%s", path);
}

/* What the kernel may hold past its bound: writers throttled only after
 * they pass it, and writes under way (fuse_cache.c) */
static uint64_t
needed(uint64_t limit)
{
	return limit + limit / 4 + 8 * MIB;
}

START_TEST(headroom_covers_and_holds_through_drift)
{
	struct lfs_fuse_cache c;
	lfs_fuse_cache_init(&c);
	snprintf(path, sizeof(path), "/tmp/check_fuse_cache.XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	uint64_t usable = 2 * GIB, base = 32 * MIB;
	set_limit(&c, base);
	uint64_t h = lfs_fuse_cache_headroom(&c, usable);
	ck_assert_uint_ge(lfs_fuse_cache_hard(&c), needed(base));
	ck_assert_uint_eq(lfs_fuse_cache_hard(&c), h / 2);
	/* the kernel's figure wanders by a few pages either way */
	srandom(7);
	for (int i = 0; i < 1000; i++) {
		uint64_t l = base - 64 * 4096 + (uint64_t)(random() % (128 * 4096));
		set_limit(&c, l);
		ck_assert_uint_eq(lfs_fuse_cache_headroom(&c, usable), h);
	}
	/* a bound that grows past what is kept is covered at once */
	for (uint64_t l = base; l < 4 * base; l += base / 7) {
		set_limit(&c, l);
		uint64_t got = lfs_fuse_cache_headroom(&c, usable);
		ck_assert_uint_le(got, usable / 8);
		/* cut to an eighth of the filesystem, the last half covers the
		 * kernel's part while the mount counts as bounded */
		if (got < usable / 8)
			ck_assert_uint_ge(lfs_fuse_cache_hard(&c), needed(l));
		else if (lfs_fuse_cache_bounded(&c, usable))
			ck_assert_uint_ge(lfs_fuse_cache_hard(&c), l + l / 4);
	}
	/* and one that shrank to a fraction gives the room back */
	set_limit(&c, base / 8);
	ck_assert_uint_lt(lfs_fuse_cache_headroom(&c, usable), h);
	/* no bound known: nothing kept */
	set_limit(&c, 0);
	ck_assert_uint_eq(lfs_fuse_cache_headroom(&c, usable), 0);
	/* never more than an eighth of the filesystem */
	set_limit(&c, usable);
	ck_assert_uint_eq(lfs_fuse_cache_headroom(&c, usable), usable / 8);
	unlink(path);
	lfs_fuse_cache_free(&c);
}
END_TEST

START_TEST(marks_follow_writers)
{
	struct lfs_fuse_cache c;
	lfs_fuse_cache_init(&c);
	ck_assert(!lfs_fuse_cache_marked(&c, 5, 100));
	/* an fsync of a file not marked marks nobody */
	lfs_fuse_cache_mark_writer(&c, 5, 100);
	ck_assert(!lfs_fuse_cache_writers(&c));
	/* writeback of file 5 used the headroom: the file is marked, and
	 * the process whose fsync wrote it back, for any file it writes */
	lfs_fuse_cache_mark(&c, 5);
	ck_assert(lfs_fuse_cache_marked(&c, 5, 0));
	lfs_fuse_cache_mark_writer(&c, 5, 100);
	ck_assert(lfs_fuse_cache_writers(&c));
	ck_assert(lfs_fuse_cache_marked(&c, 6, 100));
	ck_assert(!lfs_fuse_cache_marked(&c, 6, 101));
	/* once a writer is told, nobody is marked */
	lfs_fuse_cache_mark(&c, 7);
	lfs_fuse_cache_unmark(&c);
	ck_assert(!lfs_fuse_cache_marked(&c, 7, 100));
	ck_assert(!lfs_fuse_cache_writers(&c));
	/* and asking is a state entered once */
	ck_assert(lfs_fuse_cache_ask(&c, true));
	ck_assert(!lfs_fuse_cache_ask(&c, true));
	ck_assert(lfs_fuse_cache_asking(&c));
	ck_assert(lfs_fuse_cache_ask(&c, false));
	lfs_fuse_cache_free(&c);
}
END_TEST

CHECK_MAIN("fuse_cache", "headroom", 30, headroom_covers_and_holds_through_drift, marks_follow_writers)
