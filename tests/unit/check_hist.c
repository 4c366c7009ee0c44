/*
 * check_hist.c — the checkpoint history (hist.c), by direct calls on a
 * history of the test's own (check_retain.c goes through the
 * filesystem): checkpoints are recorded in
 * order, made snapshots under a unique allowed name and back, deleted;
 * pruning forgets the plain ones older than the protection period and
 * never a snapshot; the retained set is every record left, ascending;
 * the records come back from the log as written, and crafted ones are
 * refused; a checkpoint a view reads (pinned) is not pruned until the
 * last view lets go.
 */
#include "testfs.h"

#include "hist.h"

#include <errno.h>
#include <string.h>

#define SEG (256u << 10)

START_TEST(records_snapshots_prune)
{
	testfs_make(32ull << 20, SEG);
	struct lfs_fs *fs = testfs_mount();
	struct lfs_hist h;
	ck_assert_int_eq(lfs_hist_init(&h, fs), 0);
	ck_assert_int_eq(lfs_hist_add(fs, &h, 5, 100), 0);
	ck_assert_int_eq(lfs_hist_add(fs, &h, 6, 200), 0);
	ck_assert_int_eq(lfs_hist_add(fs, &h, 7, 300), 0);
	ck_assert_int_eq(lfs_hist_add(fs, &h, 7, 400), -EINVAL); /* not newer */
	ck_assert_int_eq(lfs_hist_add(fs, &h, 4, 400), -EINVAL);
	ck_assert_uint_eq(h.count, 3);
	ck_assert_ptr_nonnull(lfs_hist_get(&h, 6));
	ck_assert_ptr_null(lfs_hist_get(&h, 8));
	ck_assert_ptr_null(lfs_hist_get(&h, 0));

	ck_assert_int_eq(lfs_hist_snapshot(fs, &h, 6, true, "before-upgrade"), 0);
	ck_assert_uint_eq(lfs_hist_named(&h, "before-upgrade")->seq, 6);
	ck_assert_uint_eq(lfs_hist_get(&h, 6)->flags, LFS_HIST_SNAPSHOT);
	ck_assert_int_eq(lfs_hist_snapshot(fs, &h, 7, true, "before-upgrade"), -EEXIST);
	ck_assert_int_eq(lfs_hist_snapshot(fs, &h, 6, true, "before-upgrade"), 0); /* its own name */
	ck_assert_int_eq(lfs_hist_snapshot(fs, &h, 9, true, "x"), -ENOENT);
	static const char *const bad[] = { "", ".", "..", "a/b", "tab\there", "0123456789012345678901234567890123456789" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(!lfs_hist_name_ok(bad[i]), "%s allowed", bad[i]);
		if (bad[i][0])
			ck_assert_int_eq(lfs_hist_snapshot(fs, &h, 7, true, bad[i]), -EINVAL);
	}
	ck_assert(lfs_hist_name_ok("012345678901234567890123456789012345678")); /* 39 */
	ck_assert_int_eq(lfs_hist_snapshot(fs, &h, 7, true, NULL), 0); /* unnamed */
	ck_assert_int_eq(lfs_hist_snapshot(fs, &h, 7, false, "ignored"), 0);
	ck_assert_uint_eq(lfs_hist_get(&h, 7)->flags, 0);
	ck_assert_str_eq(lfs_hist_get(&h, 7)->name, "");

	/* at 450 with a period of 100: 5 (age 350) and 7 (age 150) go, the
	 * snapshot 6 stays however old */
	uint64_t gone, r[8];
	ck_assert_int_eq(lfs_hist_prune(fs, &h, 450, 100, &gone), 0);
	ck_assert_uint_eq(gone, 2);
	ck_assert_uint_eq(lfs_hist_retained(&h, r), 1);
	ck_assert_uint_eq(r[0], 6);
	/* a free slot is reused; the retained set comes out ascending */
	ck_assert_int_eq(lfs_hist_add(fs, &h, 10, 390), 0);
	ck_assert_int_eq(lfs_hist_add(fs, &h, 11, 395), 0);
	ck_assert_uint_eq(h.tab.nslots, 3);
	ck_assert_uint_eq(lfs_hist_retained(&h, r), 3);
	ck_assert_uint_eq(r[0], 6);
	ck_assert_uint_eq(r[1], 10);
	ck_assert_uint_eq(r[2], 11);
	/* young ones stay; a clock set back counts as young */
	ck_assert_int_eq(lfs_hist_prune(fs, &h, 200, 100, &gone), 0);
	ck_assert_uint_eq(gone, 0);
	ck_assert_int_eq(lfs_hist_delete(fs, &h, 6), 0);
	ck_assert_int_eq(lfs_hist_delete(fs, &h, 6), -ENOENT);
	ck_assert_ptr_null(lfs_hist_named(&h, "before-upgrade"));

	/* through the log and back */
	ck_assert_int_eq(lfs_hist_snapshot(fs, &h, 11, true, "nightly"), 0);
	ck_assert_int_eq(lfs_ptable_write(fs, &h.tab), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	struct lfs_hist g;
	ck_assert_int_eq(lfs_hist_init(&g, fs), 0);
	ck_assert_int_eq(lfs_hist_load(fs, &g, h.tab.root_addr, h.tab.nslots), 0);
	ck_assert_uint_eq(g.count, 2);
	ck_assert_uint_eq(lfs_hist_named(&g, "nightly")->seq, 11);
	ck_assert_uint_eq(lfs_hist_get(&g, 10)->time_ns, 390);
	lfs_hist_free(fs, &g);
	lfs_hist_free(fs, &h);
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

/* A plain checkpoint past the period that a mounted view reads stays,
 * counted per view: pruned once the last one has let go. */
START_TEST(pinned_not_pruned)
{
	testfs_make(32ull << 20, SEG);
	struct lfs_fs *fs = testfs_mount();
	struct lfs_hist h;
	ck_assert_int_eq(lfs_hist_init(&h, fs), 0);
	ck_assert_int_eq(lfs_hist_add(fs, &h, 5, 100), 0);
	ck_assert_int_eq(lfs_hist_add(fs, &h, 6, 200), 0);
	ck_assert_int_eq(lfs_hist_pin(&h, 9), -ENOENT); /* not recorded */
	ck_assert_int_eq(lfs_hist_pin(&h, 0), -ENOENT);
	ck_assert_int_eq(lfs_hist_pin(&h, 5), 0);
	ck_assert_int_eq(lfs_hist_pin(&h, 5), 0);
	ck_assert(lfs_hist_pinned(&h, 5));
	ck_assert(!lfs_hist_pinned(&h, 6));
	uint64_t gone, r[4];
	ck_assert_int_eq(lfs_hist_prune(fs, &h, 1000, 100, &gone), 0);
	ck_assert_uint_eq(gone, 1); /* 6 goes, 5 is read */
	ck_assert_uint_eq(lfs_hist_retained(&h, r), 1);
	ck_assert_uint_eq(r[0], 5);
	lfs_hist_unpin(&h, 5);
	ck_assert(lfs_hist_pinned(&h, 5)); /* one view still reads it */
	ck_assert_int_eq(lfs_hist_prune(fs, &h, 1000, 100, &gone), 0);
	ck_assert_uint_eq(gone, 0);
	lfs_hist_unpin(&h, 5);
	lfs_hist_unpin(&h, 5); /* one more than the pins: nothing */
	ck_assert(!lfs_hist_pinned(&h, 5));
	ck_assert_int_eq(lfs_hist_prune(fs, &h, 1000, 100, &gone), 0);
	ck_assert_uint_eq(gone, 1);
	ck_assert_uint_eq(h.count, 0);
	lfs_hist_free(fs, &h);
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

/* Records no history holds: a checkpoint twice, a name twice, a name on
 * a plain checkpoint, a name not ended or not allowed, unknown flags. */
START_TEST(refuses_crafted_records)
{
	testfs_make(32ull << 20, SEG);
	struct lfs_fs *fs = testfs_mount();
	struct lfs_hist_entry ok = { .seq = 3, .time_ns = 1, .flags = LFS_HIST_SNAPSHOT };
	strcpy(ok.name, "a");
	for (int k = 0; k < 6; k++) {
		struct lfs_ptable t;
		ck_assert_int_eq(lfs_ptable_init(&t, fs, LFS_TABLE_HIST, LFS_HIST_ENTRY_SIZE), 0);
		uint8_t enc[LFS_HIST_ENTRY_SIZE];
		struct lfs_hist_entry e = ok;
		e.seq = 4;
		strcpy(e.name, "b");
		lfs_hist_entry_encode(&ok, enc);
		ck_assert_int_eq(lfs_ptable_put(fs, &t, 0, enc), 0);
		switch (k) {
		case 0: e.seq = 3; break;
		case 1: strcpy(e.name, "a"); break;
		case 2: e.flags = 0; break;
		case 3: strcpy(e.name, "x/y"); break;
		case 4: e.flags = 2; break;
		}
		lfs_hist_entry_encode(&e, enc);
		if (k == 5)
			memset(enc + LFS_HI_OFF_NAME, 'n', LFS_HIST_NAME_MAX + 1); /* not ended */
		ck_assert_int_eq(lfs_ptable_put(fs, &t, 1, enc), 0);
		ck_assert_int_eq(lfs_ptable_write(fs, &t), 0);
		ck_assert_int_eq(lfs_checkpoint(fs), 0);
		struct lfs_hist h;
		ck_assert_int_eq(lfs_hist_init(&h, fs), 0);
		ck_assert_msg(lfs_hist_load(fs, &h, t.root_addr, 2) == -EFSCORRUPTED, "case %d accepted", k);
		lfs_hist_free(fs, &h);
		lfs_ptable_free(fs, &t);
	}
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

CHECK_MAIN("hist", "core", 30, records_snapshots_prune, refuses_crafted_records, pinned_not_pruned)
