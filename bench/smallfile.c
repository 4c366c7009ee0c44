/* smallfile.c — the Sprite LFS small-file benchmark (Rosenblum & Ousterhout
 * 1992, fig. 8), plus a helper that makes a tree durable.
 *
 *   smallfile create DIR N SIZE [end|each]
 *       make N files of SIZE bytes under DIR, 100 files per subdirectory
 *       (DIR/dNNNN/fNNNNNN).  Durability (default "end"): after all files are
 *       written and closed, every file is reopened and fsync()ed, then every
 *       subdirectory and DIR itself; with "each", every file is fsync()ed
 *       before it is closed (and the directories at the end).  The fsyncs are
 *       inside the timed interval either way.
 *   smallfile read DIR N SIZE
 *       read the files back in creation order and check their contents.
 *   smallfile delete DIR N
 *       unlink the files in creation order, remove the subdirectories, and
 *       fsync DIR (timed).
 *   smallfile fsynctree DIR
 *       fsync every regular file and directory below DIR, directories
 *       after their contents (used after `tar x`).
 *
 * Every mode prints one line of key=value pairs on stdout:
 *   files=N bytes=B secs=S rate=FILES_PER_SEC
 * and exits non-zero, with the failing call and path on stderr, on any error.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PER_DIR 100

static double
now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
die(const char *what, const char *path)
{
	fprintf(stderr, "smallfile: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void
subdir(char *buf, size_t len, const char *dir, long i)
{
	snprintf(buf, len, "%s/d%04ld", dir, i / PER_DIR);
}

static void
filename(char *buf, size_t len, const char *dir, long i)
{
	snprintf(buf, len, "%s/d%04ld/f%06ld", dir, i / PER_DIR, i);
}

/* the contents of file i: its number, then a byte pattern derived from it */
static void
fill(unsigned char *buf, size_t size, long i)
{
	for (size_t k = 0; k < size; k++)
		buf[k] = (unsigned char)((i * 131 + (long)k * 7) & 0xff);
	if (size >= sizeof(long))
		memcpy(buf, &i, sizeof(long));
}

static void
fsync_path(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);
	if (fd < 0)
		die("open", path);
	if (fsync(fd) < 0)
		die("fsync", path);
	if (close(fd) < 0)
		die("close", path);
}

static void
report(long files, long long bytes, double secs)
{
	printf("files=%ld bytes=%lld secs=%.6f rate=%.1f\n", files, bytes, secs,
	       secs > 0 ? (double)files / secs : 0.0);
}

static int
do_create(const char *dir, long n, size_t size, int each)
{
	char path[4096];
	unsigned char *buf = malloc(size ? size : 1);
	if (!buf)
		die("malloc", "");
	long ndirs = (n + PER_DIR - 1) / PER_DIR;
	double t0 = now();
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		die("mkdir", dir);
	for (long i = 0; i < n; i++) {
		if (i % PER_DIR == 0) {
			subdir(path, sizeof(path), dir, i);
			if (mkdir(path, 0755) < 0)
				die("mkdir", path);
		}
		filename(path, sizeof(path), dir, i);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0)
			die("create", path);
		fill(buf, size, i);
		size_t done = 0;
		while (done < size) {
			ssize_t w = write(fd, buf + done, size - done);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				die("write", path);
			}
			done += (size_t)w;
		}
		if (each && fsync(fd) < 0)
			die("fsync", path);
		if (close(fd) < 0)
			die("close", path);
	}
	double tw = now();
	if (!each)
		for (long i = 0; i < n; i++) {
			filename(path, sizeof(path), dir, i);
			fsync_path(path, O_RDONLY);
		}
	for (long d = 0; d < ndirs; d++) {
		subdir(path, sizeof(path), dir, d * PER_DIR);
		fsync_path(path, O_RDONLY | O_DIRECTORY);
	}
	fsync_path(dir, O_RDONLY | O_DIRECTORY);
	double t1 = now();
	report(n, (long long)n * (long long)size, t1 - t0);
	/* where the time went: writing (and, with "each", per-file fsync) vs
	 * the final fsync pass over files and directories */
	fprintf(stderr, "smallfile: create: %.6f s writing, %.6f s in the final fsync pass\n",
		tw - t0, t1 - tw);
	free(buf);
	return 0;
}

static int
do_read(const char *dir, long n, size_t size)
{
	char path[4096];
	unsigned char *want = malloc(size + 1), *got = malloc(size + 1);
	if (!want || !got)
		die("malloc", "");
	long long total = 0;
	double t0 = now();
	for (long i = 0; i < n; i++) {
		filename(path, sizeof(path), dir, i);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die("open", path);
		size_t done = 0;
		for (;;) {      /* read one byte past SIZE to catch a long file */
			ssize_t r = read(fd, got + done, size + 1 - done);
			if (r < 0) {
				if (errno == EINTR)
					continue;
				die("read", path);
			}
			if (r == 0)
				break;
			done += (size_t)r;
			if (done == size + 1)
				break;
		}
		close(fd);
		fill(want, size, i);
		if (done != size || memcmp(want, got, size) != 0) {
			fprintf(stderr, "smallfile: %s: wrong contents (%zu bytes read, %zu expected)\n",
				path, done, size);
			exit(1);
		}
		total += (long long)done;
	}
	double t1 = now();
	report(n, total, t1 - t0);
	free(want);
	free(got);
	return 0;
}

static int
do_delete(const char *dir, long n)
{
	char path[4096];
	long ndirs = (n + PER_DIR - 1) / PER_DIR;
	double t0 = now();
	for (long i = 0; i < n; i++) {
		filename(path, sizeof(path), dir, i);
		if (unlink(path) < 0)
			die("unlink", path);
	}
	for (long d = 0; d < ndirs; d++) {
		subdir(path, sizeof(path), dir, d * PER_DIR);
		if (rmdir(path) < 0)
			die("rmdir", path);
	}
	fsync_path(dir, O_RDONLY | O_DIRECTORY);
	double t1 = now();
	report(n, 0, t1 - t0);
	return 0;
}

static long tree_files;
static long long tree_bytes;

static int
fsync_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_F && S_ISREG(st->st_mode)) {
		fsync_path(path, O_RDONLY);
		tree_files++;
		tree_bytes += (long long)st->st_size;
	} else if (type == FTW_DP) {
		fsync_path(path, O_RDONLY | O_DIRECTORY);
	} else if (type == FTW_DNR || type == FTW_NS) {
		errno = EACCES;
		die("walk", path);
	}
	return 0;
}

static int
do_fsynctree(const char *dir)
{
	double t0 = now();
	/* FTW_DEPTH: a directory is fsynced after everything in it */
	if (nftw(dir, fsync_one, 64, FTW_PHYS | FTW_DEPTH) != 0)
		die("nftw", dir);
	double t1 = now();
	report(tree_files, tree_bytes, t1 - t0);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr,
		"usage: smallfile create DIR N SIZE [end|each]\n"
		"       smallfile read DIR N SIZE\n"
		"       smallfile delete DIR N\n"
		"       smallfile fsynctree DIR\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	if (argc < 3)
		usage();
	const char *mode = argv[1], *dir = argv[2];
	if (strcmp(mode, "create") == 0 && (argc == 5 || argc == 6)) {
		int each = argc == 6 && strcmp(argv[5], "each") == 0;
		if (argc == 6 && !each && strcmp(argv[5], "end") != 0)
			usage();
		return do_create(dir, atol(argv[3]), (size_t)atol(argv[4]), each);
	}
	if (strcmp(mode, "read") == 0 && argc == 5)
		return do_read(dir, atol(argv[3]), (size_t)atol(argv[4]));
	if (strcmp(mode, "delete") == 0 && argc == 4)
		return do_delete(dir, atol(argv[3]));
	if (strcmp(mode, "fsynctree") == 0 && argc == 3)
		return do_fsynctree(dir);
	usage();
	return 2;
}
