/*
 * check_fuse_cache.c — the headroom kept for what the kernel's writeback
 * cache may hold (fuse_cache.c): it always covers the kernel's bound with
 * its margin, and it does not move (nor, with it, df) while the bound
 * only drifts with free memory, as the kernel reads it back.
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
	ck_assert_uint_ge(h, needed(base));
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
		ck_assert_uint_ge(got, needed(l));
		ck_assert_uint_le(got, usable / 8);
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

CHECK_MAIN("fuse_cache", "headroom", 30, headroom_covers_and_holds_through_drift)
