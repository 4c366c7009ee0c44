/*
 * check_log.c — log.c, where the daemon's messages go: standard error
 * with the "lfs: " prefix until a log file is set, then that file,
 * appended to, each line stamped with the time and the pid; informational
 * messages can be silenced without losing the others; a file that cannot
 * be opened leaves the old destination in place.  And lfs_now_ns, the
 * clock that stamps what is logged, is the wall clock in nanoseconds.
 * Each test runs in its own process (Check forks), so the log's state
 * starts fresh in each.
 */
#include "check_run.h"
#include "lfs_int.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[64];
static char path[2][96];

static void
mkdirs(void)
{
	snprintf(dir, sizeof(dir), "/tmp/lfs-log-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	for (int i = 0; i < 2; i++)
		snprintf(path[i], sizeof(path[i]), "%s/log%d", dir, i);
}

static void
rmdirs(void)
{
	for (int i = 0; i < 2; i++)
		unlink(path[i]);
	ck_assert_int_eq(rmdir(dir), 0);
}

/* The whole of file p, NUL-terminated, in buf. */
static const char *
slurp(const char *p, char *buf, size_t size)
{
	int fd = open(p, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ssize_t n = read(fd, buf, size - 1);
	ck_assert_int_ge(n, 0);
	buf[n] = 0;
	close(fd);
	return buf;
}

/* A line is "YYYY-MM-DD HH:MM:SS lfs[PID]: message": the time a reader
 * matches against other logs, the pid of the daemon that said it. */
START_TEST(file_lines_are_stamped)
{
	mkdirs();
	ck_assert_int_eq(lfs_log_fd(), -1);
	ck_assert_int_eq(lfs_log_to_file(path[0]), 0);
	int fd = lfs_log_fd();
	ck_assert_int_ge(fd, 0);
	struct stat a, b;
	ck_assert_int_eq(fstat(fd, &a), 0);
	ck_assert_int_eq(stat(path[0], &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	lfs_log("segment %d of %s", 42, "x");
	char buf[512], want[64];
	slurp(path[0], buf, sizeof(buf));
	int y, mo, d, h, mi, s, pid, used = 0;
	ck_assert_int_eq(sscanf(buf, "%4d-%2d-%2d %2d:%2d:%2d lfs[%d]: %n", &y, &mo, &d, &h, &mi, &s, &pid, &used), 7);
	ck_assert_int_eq(buf[4], '-');
	ck_assert_int_eq(buf[10], ' ');
	ck_assert_int_eq(buf[19], ' ');
	ck_assert_int_eq(pid, getpid());
	snprintf(want, sizeof(want), "segment 42 of x\n");
	ck_assert_str_eq(buf + used, want);
	rmdirs();
}
END_TEST

/* Each line names its filesystem, escaped: an image path with a newline
 * in it makes no line of its own. */
START_TEST(name_is_escaped)
{
	mkdirs();
	ck_assert_int_eq(lfs_log_to_file(path[0]), 0);
	lfs_log_set_name("/srv/a\n2026-01-01 00:00:00 lfs[1]: forged");
	lfs_log("mounted");
	char buf[512];
	slurp(path[0], buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, ": /srv/a\\x0a2026-01-01 00:00:00 lfs[1]: forged: mounted\n"));
	ck_assert_ptr_eq(strchr(buf, '\n'), buf + strlen(buf) - 1);
	rmdirs();
}
END_TEST

/* The file is appended to (a restarted daemon must not erase what the
 * last one said), and a second file takes over from the first. */
START_TEST(file_appends_and_switches)
{
	mkdirs();
	FILE *f = fopen(path[0], "w");
	ck_assert_ptr_nonnull(f);
	fputs("earlier\n", f);
	fclose(f);
	ck_assert_int_eq(lfs_log_to_file(path[0]), 0);
	lfs_log("one");
	ck_assert_int_eq(lfs_log_to_file(path[1]), 0);
	lfs_log("two");
	char buf[512];
	slurp(path[0], buf, sizeof(buf));
	ck_assert(strncmp(buf, "earlier\n", 8) == 0);
	ck_assert_ptr_nonnull(strstr(buf, "]: one\n"));
	ck_assert_ptr_null(strstr(buf, "two"));
	slurp(path[1], buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "]: two\n"));
	ck_assert_ptr_null(strstr(buf, "one"));
	rmdirs();
}
END_TEST

/* A log file that cannot be opened is the open's -errno, and messages
 * keep going where they went: none is lost to a bad path. */
START_TEST(bad_file_keeps_old)
{
	mkdirs();
	ck_assert_int_eq(lfs_log_to_file(path[0]), 0);
	char bad[128];
	snprintf(bad, sizeof(bad), "%s/no/such/dir", dir);
	ck_assert_int_eq(lfs_log_to_file(bad), -ENOENT);
	lfs_log("still here");
	char buf[512];
	ck_assert_ptr_nonnull(strstr(slurp(path[0], buf, sizeof(buf)), "]: still here\n"));
	rmdirs();
}
END_TEST

/* Quiet info drops lfs_log_info only, never lfs_log (a problem is always
 * said), and lifting it brings info back. */
START_TEST(quiet_info_drops_only_info)
{
	mkdirs();
	ck_assert_int_eq(lfs_log_to_file(path[0]), 0);
	lfs_log_set_quiet_info(true);
	lfs_log_info("info-1");
	lfs_log("problem-1");
	lfs_log_set_quiet_info(false);
	lfs_log_info("info-2");
	char buf[512];
	slurp(path[0], buf, sizeof(buf));
	ck_assert_ptr_null(strstr(buf, "info-1"));
	ck_assert_ptr_nonnull(strstr(buf, "]: problem-1\n"));
	ck_assert_ptr_nonnull(strstr(buf, "]: info-2\n"));
	rmdirs();
}
END_TEST

/* Before a file is set, messages go to standard error as "lfs: msg". */
START_TEST(stderr_by_default)
{
	mkdirs();
	int fd = open(path[0], O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	int saved = dup(2);
	ck_assert_int_eq(dup2(fd, 2), 2);
	lfs_log("to %s", "stderr");
	lfs_log_info("info too");
	fflush(stderr);
	ck_assert_int_eq(dup2(saved, 2), 2);
	close(saved);
	close(fd);
	char buf[256];
	ck_assert_str_eq(slurp(path[0], buf, sizeof(buf)), "lfs: to stderr\nlfs: info too\n");
	rmdirs();
}
END_TEST

/* lfs_now_ns is the wall clock (segment mtimes are compared with times
 * from other runs, so a per-boot clock would not do) in nanoseconds, and
 * does not go backwards between two calls. */
START_TEST(now_is_wall_clock_ns)
{
	/* Bounds from clock_gettime, not time(): glibc's time() reads the
	 * coarse clock, which lags the precise one by up to a tick, so a
	 * correct lfs_now_ns could land a second past it. */
	struct timespec t0, t1;
	ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &t0), 0);
	uint64_t a = lfs_now_ns(), b = lfs_now_ns();
	ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &t1), 0);
	ck_assert_uint_ge(a / 1000000000ull, (uint64_t)t0.tv_sec);
	ck_assert_uint_le(b / 1000000000ull, (uint64_t)t1.tv_sec);
	ck_assert_uint_le(a, b);
}
END_TEST

CHECK_MAIN("log", "destinations", 30, file_lines_are_stamped, name_is_escaped, file_appends_and_switches,
	   bad_file_keeps_old, quiet_info_drops_only_info, stderr_by_default, now_is_wall_clock_ns)
