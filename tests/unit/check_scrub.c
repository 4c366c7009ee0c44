/*
 * check_scrub.c — the scrubber's state file (cleaner/scrub.c): what one
 * scrub saves, the next loads back exactly; a file of another filesystem
 * or size, or one malformed anywhere (a line too long, a number out of
 * range, an unknown key, a block kind that does not exist, no magic) is
 * refused whole and leaves a scan from the start; the suspects read are
 * bounded by LFS_SCRUB_MAX_SUSPECTS, those beyond counted.
 */
#include "check_run.h"
#include "scrub.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];

/* A scrubber of a filesystem of 100 segments, without a daemon. */
static void
setup(struct lfs_scrub *s)
{
	memset(s, 0, sizeof(*s));
	s->nsegs = 100;
	snprintf(s->uuid, sizeof(s->uuid), "01234567-89ab-cdef-0123-456789abcdef");
	s->sus = malloc(LFS_SCRUB_MAX_SUSPECTS * sizeof(*s->sus));
	ck_assert_ptr_nonnull(s->sus);
	snprintf(path, sizeof(path), "/tmp/lfs-scrub-XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

static void
put(const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(save_load_round_trip)
{
	struct lfs_scrub s, t;
	setup(&s);
	s.next_seg = 42;
	s.segs_done = 17;
	s.blocks = 12345;
	s.bytes = 12345 * 4096ull;
	s.seconds = 1.5;
	s.sus[0] = (struct lfs_ctl_blk){ .addr = 300, .lblk = 7, .ino = 12, .version = 3, .kind = LFS_BK_DATA };
	s.sus[1] = (struct lfs_ctl_blk){ .addr = 301, .lblk = 8192, .kind = LFS_SCRUB_SUMMARY };
	s.nsus = 2;
	ck_assert_int_eq(lfs_scrub_save(&s, path), 0);
	t = s;
	t.sus = malloc(LFS_SCRUB_MAX_SUSPECTS * sizeof(*t.sus));
	char msg[256];
	ck_assert_int_eq(lfs_scrub_load(&t, path, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(t.next_seg, 42);
	ck_assert_uint_eq(t.segs_done, 17);
	ck_assert_uint_eq(t.blocks, 12345);
	ck_assert_uint_eq(t.bytes, 12345 * 4096ull);
	ck_assert(!t.complete);
	ck_assert_uint_eq(t.nsus, 2);
	ck_assert_mem_eq(t.sus, s.sus, 2 * sizeof(*s.sus));
	/* another filesystem, or this one at another size: refused */
	snprintf(t.uuid, sizeof(t.uuid), "11111111-89ab-cdef-0123-456789abcdef");
	ck_assert_int_eq(lfs_scrub_load(&t, path, msg, sizeof(msg)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "not a scrub state of filesystem"));
	ck_assert_uint_eq(t.next_seg, 0);
	ck_assert_uint_eq(t.nsus, 0);
	snprintf(t.uuid, sizeof(t.uuid), "%s", s.uuid);
	t.nsegs = 99;
	ck_assert_int_eq(lfs_scrub_load(&t, path, msg, sizeof(msg)), -EINVAL);
	t.nsegs = 100;
	ck_assert_int_eq(lfs_scrub_load(&t, "/nonexistent/x", msg, sizeof(msg)), -ENOENT);
	unlink(path);
	free(s.sus);
	free(t.sus);
}
END_TEST

START_TEST(malformed_refused)
{
	struct lfs_scrub s;
	setup(&s);
	static const char *const bad[] = {
		"",
		"lfs-scrub-state 2\nuuid 01234567-89ab-cdef-0123-456789abcdef\n",
		"lfs-scrub-state 1\n",                                          /* no uuid */
		"lfs-scrub-state 1\nuuid 01234567-89ab-cdef-0123-456789abcdef\nnext_seg 101\n",
		"lfs-scrub-state 1\nuuid 01234567-89ab-cdef-0123-456789abcdef\nsegs_done 1000\n",
		"lfs-scrub-state 1\nuuid 01234567-89ab-cdef-0123-456789abcdef\nseconds -1\n",
		"lfs-scrub-state 1\nuuid 01234567-89ab-cdef-0123-456789abcdef\ncomplete 2\n",
		"lfs-scrub-state 1\nuuid 01234567-89ab-cdef-0123-456789abcdef\nsuspect 1 2 3 4 9\n",
		"lfs-scrub-state 1\nuuid 01234567-89ab-cdef-0123-456789abcdef\nsuspect 1 2 3\n",
		"lfs-scrub-state 1\nuuid 01234567-89ab-cdef-0123-456789abcdef\nwhat 1\n",
		"lfs-scrub-state 1\nnext_seg 5\nuuid 01234567-89ab-cdef-0123-456789abcdef\nnsegs 7\n",
	};
	char msg[256];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put(bad[i]);
		s.next_seg = 77;
		ck_assert_msg(lfs_scrub_load(&s, path, msg, sizeof(msg)) == -EINVAL, "case %zu taken", i);
		ck_assert_uint_eq(s.next_seg, 0);
		ck_assert_uint_eq(s.nsus, 0);
	}
	/* a line longer than any the scrubber writes */
	char *longl = malloc(100000);
	snprintf(longl, 100000, "lfs-scrub-state 1\nuuid 01234567-89ab-cdef-0123-456789abcdef\nblocks ");
	size_t n = strlen(longl);
	memset(longl + n, '1', 100000 - n - 2);
	longl[100000 - 2] = '\n';
	longl[100000 - 1] = '\0';
	put(longl);
	ck_assert_int_eq(lfs_scrub_load(&s, path, msg, sizeof(msg)), -EINVAL);
	free(longl);
	unlink(path);
	free(s.sus);
}
END_TEST

/* More suspects than the table holds: the first LFS_SCRUB_MAX_SUSPECTS
 * are kept, the rest counted, and nothing is written past the table. */
START_TEST(suspects_bounded)
{
	struct lfs_scrub s;
	setup(&s);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "lfs-scrub-state 1\nuuid %s\nnsegs 100\n", s.uuid);
	for (unsigned i = 0; i < LFS_SCRUB_MAX_SUSPECTS + 10; i++)
		fprintf(f, "suspect %u 0 5 1 1\n", 1000 + i);
	fclose(f);
	char msg[256];
	ck_assert_int_eq(lfs_scrub_load(&s, path, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(s.nsus, LFS_SCRUB_MAX_SUSPECTS);
	ck_assert_uint_eq(s.sus_more, 10);
	ck_assert_uint_eq(s.sus[LFS_SCRUB_MAX_SUSPECTS - 1].addr, 1000 + LFS_SCRUB_MAX_SUSPECTS - 1);
	unlink(path);
	free(s.sus);
}
END_TEST

CHECK_MAIN("scrub", "state", 30, save_load_round_trip, malformed_refused, suspects_bounded)
