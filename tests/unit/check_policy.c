/* check_policy.c — cleaner policies and config, on tables built by hand. */
#include "check_run.h"
#include "cleaner.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SEG (1024 * 1024ull)
#define SEC 1000000000ull

static struct lfs_ctl_seg
seg(double u, uint64_t mtime_s, uint32_t state)
{
	return (struct lfs_ctl_seg){ .live_bytes = (uint64_t)(u * SEG), .mtime_ns = mtime_s * SEC, .state = state };
}

START_TEST(greedy_takes_emptiest)
{
	struct lfs_cleaner_config c;
	lfs_cleaner_config_default(&c);
	c.policy = LFS_POLICY_GREEDY;
	c.protection_s = 0;
	struct lfs_ctl_seg t[] = { seg(0.9, 10, 1), seg(0.2, 10, 1), seg(0.5, 90, 1), seg(0.1, 95, 2), seg(0, 0, 0),
				   seg(1.0, 1, 1) };
	uint64_t v[6];
	size_t n = lfs_policy_select(&c, t, 6, SEG, 100 * SEC, 6, v);
	/* active, clean and full segments are never chosen */
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(v[0], 1);
	ck_assert_uint_eq(v[1], 2);
	ck_assert_uint_eq(v[2], 0);
}
END_TEST

START_TEST(cost_benefit_prefers_cold)
{
	struct lfs_cleaner_config c;
	lfs_cleaner_config_default(&c);
	c.policy = LFS_POLICY_COST_BENEFIT;
	c.protection_s = 0;
	/* hot at 30% vs cold at 60%: (0.7*10/1.3)=5.4 vs (0.4*1000/1.6)=250 */
	struct lfs_ctl_seg t[] = { seg(0.3, 990, 1), seg(0.6, 0, 1) };
	uint64_t v[2];
	size_t n = lfs_policy_select(&c, t, 2, SEG, 1000 * SEC, 1, v);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(v[0], 1);
	/* greedy on the same table takes the hot, emptier one */
	c.policy = LFS_POLICY_GREEDY;
	n = lfs_policy_select(&c, t, 2, SEG, 1000 * SEC, 1, v);
	ck_assert_uint_eq(v[0], 0);
	ck_assert_double_eq_tol(lfs_policy_score(LFS_POLICY_COST_BENEFIT, &t[1], SEG, 1000 * SEC),
				0.4 * 1001 / 1.6, 1e-3);
}
END_TEST

START_TEST(protection_period)
{
	struct lfs_cleaner_config c;
	lfs_cleaner_config_default(&c);
	c.protection_s = 30;
	struct lfs_ctl_seg t[] = { seg(0.1, 95, 1), seg(0.5, 10, 1), seg(0, 99, 1) };
	uint64_t v[3];
	size_t n = lfs_policy_select(&c, t, 3, SEG, 100 * SEC, 3, v);
	/* the young segment waits; an empty one costs nothing and is taken */
	ck_assert_uint_eq(n, 2);
	ck_assert(v[0] == 2 || v[1] == 2);
	ck_assert(v[0] == 1 || v[1] == 1);
}
END_TEST

START_TEST(config_file)
{
	char path[] = "/tmp/lfs-conf-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *f = fdopen(fd, "w");
	fprintf(f, "# comment\npolicy greedy\nage_sort no\nmin_clean_segments 5\nmax_clean_segments 7.5\n"
		   "cleaning_interval 0.5\nsegments_per_clean 16   # trailing\nprotection_period 60\nmax_io_rate 20\n");
	fclose(f);
	struct lfs_cleaner_config c;
	char err[256];
	lfs_cleaner_config_default(&c);
	ck_assert_int_eq(lfs_cleaner_config_load(&c, path, err, sizeof(err)), 0);
	ck_assert_int_eq(c.policy, LFS_POLICY_GREEDY);
	ck_assert(!c.age_sort);
	ck_assert_double_eq(c.max_clean_pct, 7.5);
	ck_assert_uint_eq(c.segs_per_pass, 16);
	ck_assert_double_eq(c.max_io_mib_s, 20);
	f = fopen(path, "w");
	fprintf(f, "policy greedy\nbogus 1\n");
	fclose(f);
	ck_assert_int_ne(lfs_cleaner_config_load(&c, path, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, ":2: unknown keyword 'bogus'"));
	ck_assert_int_eq(c.policy, LFS_POLICY_GREEDY); /* unchanged on error */
	f = fopen(path, "w");
	fprintf(f, "min_clean_segments 50\nmax_clean_segments 10\n");
	fclose(f);
	ck_assert_int_ne(lfs_cleaner_config_load(&c, path, err, sizeof(err)), 0);
	unlink(path);
}
END_TEST

CHECK_MAIN("policy", "core", 30, greedy_takes_emptiest, cost_benefit_prefers_cold, protection_period,
	   config_file)
