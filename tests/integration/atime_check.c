/*
 * atime_check DIR — when reads move a file's access time, as outcomes
 * that do not depend on the clock's values: atime.sh runs it in kernel
 * ext4 and in lfs, mounted with the same atime option, and compares the
 * lines.  Each line is a step and whether the O_DIRECT read after it
 * moved atime ("moved") or not ("kept"); O_DIRECT, so that every read
 * reaches the lfs daemon (a read the kernel answers from its page cache
 * never does: lfs(8)).
 *
 * Between steps the helper waits for the kernel's coarse clock, the one
 * current_time() reads, to tick, so a moved atime always differs.  One
 * step needs the opposite: a read and a write within one tick, which is
 * where two clocks disagreed (atime from a finer clock was newer than
 * the mtime the kernel stamped just after it); it is tried again until
 * the two fell in one tick.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BLK 4096

static const char *path;
static void *buf;

static void
die(const char *what)
{
	fprintf(stderr, "atime_check: %s: %s\n", what, strerror(errno));
	exit(2);
}

static struct timespec
coarse(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME_COARSE, &t);
	return t;
}

static int
same(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* until the coarse clock has moved on from where it is now */
static void
tick(void)
{
	struct timespec t0 = coarse(), pause = { 0, 200000 };
	while (same(coarse(), t0))
		nanosleep(&pause, NULL);
}

static struct timespec
atime(void)
{
	struct stat st;
	if (stat(path, &st))
		die("stat");
	return st.st_atim;
}

static void
read_direct(void)
{
	int fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0)
		die("open O_DIRECT");
	if (pread(fd, buf, BLK, 0) < 0)
		die("pread");
	close(fd);
}

static void
write_block(void)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd < 0 || pwrite(fd, buf, BLK, 0) != BLK)
		die("write");
	close(fd);
}

/* the read's outcome, after waiting for a tick */
static void
report(const char *step)
{
	tick();
	struct timespec a = atime();
	read_direct();
	printf("%s: %s\n", step, same(a, atime()) ? "kept" : "moved");
}

static void
set_times(time_t a_ago, time_t m_ago)
{
	struct timespec ts[2];
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[1] = ts[0];
	ts[0].tv_sec -= a_ago;
	ts[1].tv_sec -= m_ago;
	if (utimensat(AT_FDCWD, path, ts, 0))
		die("utimensat");
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: atime_check DIR\n");
		return 2;
	}
	static char p[4096];
	snprintf(p, sizeof(p), "%s/f", argv[1]);
	path = p;
	if (posix_memalign(&buf, BLK, BLK))
		return 2;
	memset(buf, 'x', BLK);

	write_block();
	report("read after create");
	report("read again");

	/* a read that moves atime, then a write in the same tick */
	int tries = 0;
	for (;; tries++) {
		if (tries == 1000) {
			fprintf(stderr, "atime_check: no read and write fell in one tick in 1000 tries\n");
			return 2;
		}
		write_block();
		tick();
		struct timespec t0 = coarse();
		read_direct();
		write_block();
		if (same(coarse(), t0))
			break;
	}
	report("read after read and write in one tick");
	report("read again");

	set_times(3600, 7200);
	report("read after utimes (atime newer than mtime, ctime now)");
	report("read again");

	set_times(7200, 3600);
	report("read after utimes (atime older than mtime)");
	return 0;
}
