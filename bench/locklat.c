/*
 * locklat — latency of a stat() and of a 4 KiB read, on an idle mount or
 * while another process fsyncs 4 MiB writes in a loop (bench issue 11:
 * one request must not wait behind another's flush).
 *
 *   locklat [-t SECONDS] [-l | -L LOADDIR] DIR
 *
 * Makes DIR/locklat.r (16 MiB) and reads it once, then for SECONDS
 * (default 10) alternates a stat() of it and a 4 KiB O_DIRECT pread() at
 * a random 4 KiB-aligned offset, timing each alone.  O_DIRECT keeps the
 * kernel's page cache out, so each read is a request to the file
 * system's daemon, of a block the backing store has cached; mount with
 * attribute caching off (lfs: -o cache_timeout=0) so each stat() is one
 * too.  With -l, a child process writes 4 MiB to DIR/locklat.w and
 * fsyncs it, over and over, until the measurement ends; with -L, the
 * child writes to LOADDIR/locklat.w instead, on another file system: the
 * same load with no request to DIR's, which shows what the kernel's
 * scheduling alone adds to DIR's latencies.
 * Prints one line: stat_p50= stat_p99= stat_max= read_p50= read_p99=
 * read_max= (ms) samples= fsyncs= (the child's, with -l).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FILE_BYTES (16u << 20)
#define LOAD_BYTES (4u << 20)

static double
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void
die(const char *what)
{
	fprintf(stderr, "locklat: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double
pct(double *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

/* The child: 4 MiB written and fsynced in a loop; the count of fsyncs
 * goes back through *count (shared memory). */
static void
load(const char *dir, volatile uint64_t *count)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/locklat.w", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(path);
	char *buf = malloc(LOAD_BYTES);
	if (!buf)
		die("malloc");
	for (unsigned k = 0;; k++) {
		memset(buf, (int)(k & 0xff), LOAD_BYTES);
		if (pwrite(fd, buf, LOAD_BYTES, 0) != (ssize_t)LOAD_BYTES)
			die("load pwrite");
		if (fsync(fd) < 0)
			die("load fsync");
		(*count)++;
	}
}

int
main(int argc, char **argv)
{
	double secs = 10;
	int loaded = 0, c;
	const char *load_dir = NULL;
	while ((c = getopt(argc, argv, "t:lL:")) != -1) {
		if (c == 't')
			secs = atof(optarg);
		else if (c == 'l')
			loaded = 1;
		else if (c == 'L')
			load_dir = optarg, loaded = 1;
		else
			return 2;
	}
	if (optind != argc - 1 || secs <= 0) {
		fprintf(stderr, "usage: locklat [-t SECONDS] [-l | -L LOADDIR] DIR\n");
		return 2;
	}
	const char *dir = argv[optind];
	if (!load_dir)
		load_dir = dir;
	char path[4096];
	snprintf(path, sizeof(path), "%s/locklat.r", dir);

	void *buf;
	if (posix_memalign(&buf, 4096, FILE_BYTES))
		die("posix_memalign");
	memset(buf, 0x5a, FILE_BYTES);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(path);
	if (pwrite(fd, buf, FILE_BYTES, 0) != (ssize_t)FILE_BYTES || fsync(fd) < 0)
		die("making the file");
	close(fd);
	fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0)
		die("O_DIRECT open");
	if (pread(fd, buf, FILE_BYTES, 0) != (ssize_t)FILE_BYTES)
		die("reading the file once");

	volatile uint64_t *fsyncs = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
					 -1, 0);
	if (fsyncs == MAP_FAILED)
		die("mmap");
	pid_t child = 0;
	if (loaded) {
		child = fork();
		if (child < 0)
			die("fork");
		if (child == 0)
			load(load_dir, fsyncs);
		while (*fsyncs == 0) /* measure once the load runs */
			usleep(1000);
	}

	size_t cap = 1 << 20, n = 0;
	double *st = malloc(cap * sizeof(double)), *rd = malloc(cap * sizeof(double));
	if (!st || !rd)
		die("malloc");
	srand(1);
	double end = now_ms() + secs * 1e3;
	while (n < cap && now_ms() < end) {
		struct stat sb;
		double t0 = now_ms();
		if (stat(path, &sb) < 0)
			die("stat");
		double t1 = now_ms();
		off_t off = (off_t)((unsigned)rand() % (FILE_BYTES / 4096)) * 4096;
		if (pread(fd, buf, 4096, off) != 4096)
			die("pread");
		double t2 = now_ms();
		st[n] = t1 - t0;
		rd[n] = t2 - t1;
		n++;
	}
	uint64_t loops = *fsyncs;
	if (child) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	qsort(st, n, sizeof(double), cmp_double);
	qsort(rd, n, sizeof(double), cmp_double);
	printf("stat_p50=%.4f stat_p99=%.4f stat_max=%.3f read_p50=%.4f read_p99=%.4f read_max=%.3f samples=%zu "
	       "fsyncs=%llu\n",
	       pct(st, n, 0.5), pct(st, n, 0.99), st[n - 1], pct(rd, n, 0.5), pct(rd, n, 0.99), rd[n - 1], n,
	       (unsigned long long)loops);
	close(fd);
	snprintf(path, sizeof(path), "%s/locklat.w", load_dir);
	unlink(path);
	return 0;
}
