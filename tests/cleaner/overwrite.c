/*
 * overwrite.c — the cleaner's workload, for its tests and for bench/run:
 * random overwrites of a set of files, mirrored into a model directory,
 * then a full comparison.
 *
 *   overwrite [-s SEED] [-H] [-F] [-m MAXBLOCKS] [-y SYNC_EVERY]
 *             DIR MODEL NFILES FILE_BYTES TOTAL_BYTES
 *
 * -H: hot-and-cold access, 90% of writes to the first 10% of the files.
 * -F: first write every file whole, so the live data really is
 *     NFILES * FILE_BYTES (random writes alone leave holes).
 * Writes are 4 KiB..MAXBLOCKS*4 KiB (default 16) at 4 KiB-aligned offsets;
 * after every SYNC_EVERY-th (default 32; 0: never) the file just written
 * is fsync()ed.  Each pwrite() and each fsync() is timed on its own, and
 * the last line printed is
 *
 *   writes=N p50=.. p90=.. p99=.. p999=.. max=.. fsyncs=M fp50=.. fp99=.. fmax=.. secs=..
 *
 * (latencies in ms).  Exits 1 on any error or difference; ENOSPC is an
 * error: the live data fits.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t s;
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

/* the p-quantile of n sorted values */
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
	bool hot = false, fill = false;
	uint64_t maxblocks = 16;
	long sync_every = 32;
	s = 88172645463325252ull;
	while ((opt = getopt(argc, argv, "s:HFm:y:")) != -1) {
		if (opt == 's')
			s += strtoull(optarg, NULL, 0) * 2654435761ull;
		else if (opt == 'H')
			hot = true;
		else if (opt == 'F')
			fill = true;
		else if (opt == 'm')
			maxblocks = strtoull(optarg, NULL, 0);
		else if (opt == 'y')
			sync_every = atol(optarg);
		else
			return 2;
	}
	if (argc - optind != 5 || maxblocks < 1 || maxblocks > 16 || sync_every < 0 ||
	    atoll(argv[optind + 3]) <= 0 || atoll(argv[optind + 3]) % 4096) {
		fprintf(stderr, "usage: overwrite [-s SEED] [-H] [-F] [-m MAXBLOCKS (1-16)] [-y SYNC_EVERY] "
				"DIR MODEL NFILES FILE_BYTES (a multiple of 4096) TOTAL_BYTES\n");
		return 2;
	}
	const char *dir = argv[optind], *model = argv[optind + 1];
	long nfiles = atol(argv[optind + 2]);
	long long fbytes = atoll(argv[optind + 3]), total = atoll(argv[optind + 4]);
	int *fd = calloc((size_t)nfiles, sizeof(int)), *md = calloc((size_t)nfiles, sizeof(int));
	char path[4096];
	uint8_t *buf = malloc(65536);
	for (long i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		fd[i] = open(path, O_RDWR | O_CREAT, 0644);
		snprintf(path, sizeof(path), "%s/f%ld", model, i);
		md[i] = open(path, O_RDWR | O_CREAT, 0644);
		if (fd[i] < 0 || md[i] < 0) {
			perror(path);
			return 1;
		}
	}
	for (long i = 0; fill && i < nfiles; i++) {
		for (long long off = 0; off < fbytes; off += 65536) {
			size_t len = fbytes - off < 65536 ? (size_t)(fbytes - off) : 65536;
			for (size_t k = 0; k < len; k += 8)
				*(uint64_t *)(buf + k) = rnd();
			if (pwrite(fd[i], buf, len, off) != (ssize_t)len || pwrite(md[i], buf, len, off) != (ssize_t)len) {
				fprintf(stderr, "overwrite: fill f%ld at %lld: %s\n", i, off, strerror(errno));
				return 1;
			}
		}
		if (fsync(fd[i]) < 0) {
			fprintf(stderr, "overwrite: fsync f%ld after the fill: %s\n", i, strerror(errno));
			return 1;
		}
	}
	size_t cap = (size_t)(total / 4096) + 16, nw = 0, nf = 0;
	double *lw = malloc(cap * sizeof(double)), *lf = malloc(cap * sizeof(double));
	long long done = 0;
	double start = now();
	while (done < total) {
		long f = hot ? ((rnd() % 10) < 9 ? (long)(rnd() % (uint64_t)(nfiles / 10 ? nfiles / 10 : 1))
						  : (long)(rnd() % (uint64_t)nfiles))
			     : (long)(rnd() % (uint64_t)nfiles);
		size_t len = 4096 * (1 + rnd() % maxblocks);
		off_t off = (off_t)(4096 * (rnd() % (uint64_t)(fbytes / 4096)));
		if (off + (off_t)len > fbytes)
			len = (size_t)(fbytes - off);
		for (size_t i = 0; i < len; i += 8)
			*(uint64_t *)(buf + i) = rnd();
		double t0 = now();
		if (pwrite(fd[f], buf, len, off) != (ssize_t)len) {
			fprintf(stderr, "overwrite: write f%ld at %lld after %lld bytes: %s\n", f, (long long)off, done,
				strerror(errno));
			return 1;
		}
		double t1 = now();
		lw[nw++] = (t1 - t0) * 1e3;
		if (sync_every > 0 && nw % (size_t)sync_every == 0) {
			if (fsync(fd[f]) < 0) {
				fprintf(stderr, "overwrite: fsync f%ld: %s\n", f, strerror(errno));
				return 1;
			}
			lf[nf++] = (now() - t1) * 1e3;
		}
		if (pwrite(md[f], buf, len, off) != (ssize_t)len)
			return 1;
		done += (long long)len;
	}
	double secs = now() - start;
	/* compare everything */
	uint8_t *a = malloc(1 << 20), *b = malloc(1 << 20);
	for (long i = 0; i < nfiles; i++) {
		if (fsync(fd[i]) < 0) {
			fprintf(stderr, "overwrite: fsync f%ld at the end: %s\n", i, strerror(errno));
			return 1;
		}
		for (off_t off = 0; off < fbytes; off += 1 << 20) {
			ssize_t x = pread(fd[i], a, 1 << 20, off), y = pread(md[i], b, 1 << 20, off);
			if (x != y || x < 0 || memcmp(a, b, (size_t)x)) {
				fprintf(stderr, "overwrite: f%ld differs from the model near offset %lld\n", i, (long long)off);
				return 1;
			}
		}
		close(fd[i]);
		close(md[i]);
	}
	qsort(lw, nw, sizeof(double), cmp_d);
	qsort(lf, nf, sizeof(double), cmp_d);
	printf("overwrite: %.1f MiB written, all %ld files verified\n", (double)done / 1048576.0, nfiles);
	printf("writes=%zu p50=%.4f p90=%.4f p99=%.4f p999=%.4f max=%.3f fsyncs=%zu fp50=%.3f fp99=%.3f fmax=%.3f secs=%.2f\n",
	       nw, pct(lw, nw, 0.5), pct(lw, nw, 0.9), pct(lw, nw, 0.99), pct(lw, nw, 0.999), nw ? lw[nw - 1] : 0.0, nf,
	       pct(lf, nf, 0.5), pct(lf, nf, 0.99), nf ? lf[nf - 1] : 0.0, secs);
	free(a);
	free(b);
	free(lw);
	free(lf);
	free(buf);
	free(fd);
	free(md);
	return 0;
}
