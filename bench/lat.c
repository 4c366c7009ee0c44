/*
 * lat.c — foreground write latency for bench/run's cleanlat workload.
 *
 *   lat [-s SEED] [-y SYNC_EVERY] DIR NFILES FILE_BYTES TOTAL_BYTES
 *
 * Overwrites the existing files DIR/f0 .. DIR/f(NFILES-1) (each FILE_BYTES
 * long) with random 4 KiB pwrite()s at 4 KiB-aligned offsets, uniformly over
 * all files, until TOTAL_BYTES are written; after every SYNC_EVERY-th write
 * (default 32; 0: never) the file just written is fsync()ed.  Each pwrite()
 * and each fsync() is timed on its own (CLOCK_MONOTONIC) and one line is
 * printed:
 *
 *   writes=N p50=.. p90=.. p99=.. p999=.. max=.. fsyncs=M fp50=.. fp99=.. fmax=.. secs=..
 *
 * (latencies in ms).  Exits 1 on any error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t s = 88172645463325252ull;
static uint64_t
rnd(void)
{
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double
pct(const double *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

int
main(int argc, char **argv)
{
	int opt;
	long sync_every = 32;
	while ((opt = getopt(argc, argv, "s:y:")) != -1) {
		if (opt == 's')
			s += strtoull(optarg, NULL, 0) * 2654435761ull;
		else if (opt == 'y')
			sync_every = atol(optarg);
		else
			return 2;
	}
	if (argc - optind != 4) {
		fprintf(stderr, "usage: lat [-s SEED] [-y SYNC_EVERY] DIR NFILES FILE_BYTES TOTAL_BYTES\n");
		return 2;
	}
	const char *dir = argv[optind];
	long nfiles = atol(argv[optind + 1]);
	long long fbytes = atoll(argv[optind + 2]), total = atoll(argv[optind + 3]);
	long long nblk = fbytes / 4096;
	if (nfiles <= 0 || nblk <= 0 || total <= 0) {
		fprintf(stderr, "lat: bad sizes\n");
		return 2;
	}
	int *fd = calloc((size_t)nfiles, sizeof(int));
	char path[4096];
	for (long i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		fd[i] = open(path, O_WRONLY);
		if (fd[i] < 0) {
			fprintf(stderr, "lat: %s: %s\n", path, strerror(errno));
			return 1;
		}
	}
	size_t nw = (size_t)(total / 4096), nf = 0;
	double *lw = malloc(nw * sizeof(double)), *lf = malloc((nw / (sync_every > 0 ? (size_t)sync_every : nw) + 1) * sizeof(double));
	unsigned char buf[4096];
	double t0 = now();
	for (size_t k = 0; k < nw; k++) {
		long f = (long)(rnd() % (uint64_t)nfiles);
		off_t off = (off_t)(rnd() % (uint64_t)nblk) * 4096;
		for (size_t j = 0; j < sizeof(buf); j += 8) {
			uint64_t r = rnd();
			memcpy(buf + j, &r, 8);
		}
		double a = now();
		if (pwrite(fd[f], buf, sizeof(buf), off) != (ssize_t)sizeof(buf)) {
			fprintf(stderr, "lat: write f%ld at %lld: %s\n", f, (long long)off, strerror(errno));
			return 1;
		}
		double b = now();
		lw[k] = (b - a) * 1e3;
		if (sync_every > 0 && (k + 1) % (size_t)sync_every == 0) {
			if (fsync(fd[f]) != 0) {
				fprintf(stderr, "lat: fsync f%ld: %s\n", f, strerror(errno));
				return 1;
			}
			lf[nf++] = (now() - b) * 1e3;
		}
	}
	double secs = now() - t0;
	for (long i = 0; i < nfiles; i++) {
		if (fsync(fd[i]) != 0 || close(fd[i]) != 0) {
			fprintf(stderr, "lat: fsync/close f%ld: %s\n", i, strerror(errno));
			return 1;
		}
	}
	qsort(lw, nw, sizeof(double), cmp_d);
	qsort(lf, nf, sizeof(double), cmp_d);
	printf("writes=%zu p50=%.4f p90=%.4f p99=%.4f p999=%.4f max=%.3f fsyncs=%zu fp50=%.3f fp99=%.3f fmax=%.3f secs=%.2f\n",
	       nw, pct(lw, nw, 0.5), pct(lw, nw, 0.9), pct(lw, nw, 0.99), pct(lw, nw, 0.999), nw ? lw[nw - 1] : 0.0, nf,
	       pct(lf, nf, 0.5), pct(lf, nf, 0.99), nf ? lf[nf - 1] : 0.0, secs);
	return 0;
}
