/* check_u64map.c — the hash map under the caches and directory index. */
#include "check_run.h"
#include "fault.h"
#include "u64map.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

START_TEST(put_get_del)
{
	struct u64map m;
	u64map_init(&m);
	for (uint64_t k = 0; k < 10000; k++)
		ck_assert_int_eq(u64map_put(&m, k * 7919, (void *)(uintptr_t)(k + 1)), 0);
	ck_assert_uint_eq(m.count, 10000);
	for (uint64_t k = 0; k < 10000; k++)
		ck_assert_ptr_eq(u64map_get(&m, k * 7919), (void *)(uintptr_t)(k + 1));
	ck_assert_ptr_null(u64map_get(&m, 3));
	for (uint64_t k = 0; k < 10000; k += 2)
		ck_assert_ptr_eq(u64map_del(&m, k * 7919), (void *)(uintptr_t)(k + 1));
	ck_assert_uint_eq(m.count, 5000);
	ck_assert_ptr_null(u64map_get(&m, 0));
	ck_assert_ptr_eq(u64map_get(&m, 7919), (void *)(uintptr_t)2);
	/* replace keeps the count */
	ck_assert_int_eq(u64map_put(&m, 7919, (void *)(uintptr_t)99), 0);
	ck_assert_uint_eq(m.count, 5000);
	ck_assert_ptr_eq(u64map_get(&m, 7919), (void *)(uintptr_t)99);
	u64map_free(&m);
}
END_TEST

START_TEST(sorted_keys)
{
	struct u64map m;
	u64map_init(&m);
	uint64_t in[] = { 50, 3, 1ull << 63, 7, 0, 1000 };
	for (size_t i = 0; i < 6; i++)
		u64map_put(&m, in[i], (void *)1);
	uint64_t out[6];
	u64map_sorted_keys(&m, out);
	uint64_t want[] = { 0, 3, 7, 50, 1000, 1ull << 63 };
	for (size_t i = 0; i < 6; i++)
		ck_assert_uint_eq(out[i], want[i]);
	u64map_free(&m);
}
END_TEST

/* After u64map_reserve(n), puts up to n entries allocate nothing, even
 * across deletes and clears; the one past n asks the allocator. */
START_TEST(reserve_means_no_allocation)
{
	struct u64map m;
	u64map_init(&m);
	ck_assert_int_eq(u64map_reserve(&m, 100), 0);
	ck_assert_int_eq(lfs_fault_arm("alloc:1:ENOMEM"), 0);
	for (int round = 0; round < 3; round++) {
		for (uint64_t k = 0; k < 100; k++)
			ck_assert_int_eq(u64map_put(&m, k * 31, (void *)1), 0);
		for (uint64_t k = 0; k < 100; k += 3)
			u64map_del(&m, k * 31);
		for (uint64_t k = 0; k < 100; k += 3)
			ck_assert_int_eq(u64map_put(&m, k * 31, (void *)2), 0);
		ck_assert_uint_eq(m.count, 100);
		if (round < 2)
			u64map_clear(&m);
	}
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_ALLOC), 0);
	ck_assert_int_eq(u64map_put(&m, 1000000, (void *)1), -ENOMEM);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_ALLOC), 1);
	ck_assert_int_eq(u64map_put(&m, 1000000, (void *)1), 0);
	lfs_fault_disarm();
	u64map_free(&m);
}
END_TEST

static int
drop_odd(uint64_t key, void *val, void *ctx)
{
	(void)val;
	++*(int *)ctx;
	return (int)(key & 1);
}

START_TEST(remove_if)
{
	struct u64map m;
	u64map_init(&m);
	for (uint64_t k = 0; k < 1000; k++)
		ck_assert_int_eq(u64map_put(&m, k, (void *)(uintptr_t)(k + 1)), 0);
	int calls = 0;
	ck_assert_int_eq(lfs_fault_arm(""), 0);
	u64map_remove_if(&m, drop_odd, &calls);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_ALLOC), 0);
	lfs_fault_disarm();
	ck_assert_int_eq(calls, 1000);
	ck_assert_uint_eq(m.count, 500);
	for (uint64_t k = 0; k < 1000; k++)
		ck_assert_ptr_eq(u64map_get(&m, k), k & 1 ? NULL : (void *)(uintptr_t)(k + 1));
	u64map_free(&m);
}
END_TEST

CHECK_MAIN("u64map", "core", 30, put_get_del, sorted_keys, reserve_means_no_allocation, remove_if)
