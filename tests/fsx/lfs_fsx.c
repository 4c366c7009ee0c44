/*
 * lfs_fsx - randomized differential exerciser for the lfs filesystem.
 *
 *   lfs_fsx [-s SEED] [-n NUM_OPS] [-v] [-F MAXFILES] [-L MAX_FILE_LEN]
 *           [-R K] [-X OP,...] TESTDIR MODELDIR
 *
 * Direct I/O (write_direct, read_direct: one pwrite/pread, or pieces in
 * flight through libaio or io_uring) goes to the test side only, the
 * model being written and read plainly, and each direct write is followed
 * by buffered reads of its range: read-after-write across the two paths.
 *
 * Every operation is applied to two trees with the same relative paths:
 * TESTDIR on the filesystem under test and MODELDIR on a trusted host
 * filesystem.  The model is the oracle, so any difference in return value,
 * errno or resulting state is reported as a bug in the filesystem under
 * test.  Things that legitimately differ between correct filesystems
 * (inode numbers, st_blocks, directory st_size, implicit timestamps) are
 * never compared.
 *
 * The namespace is deliberately tiny (names f0..f{F-1} and d0..d3, placed
 * in the root or in directories at most two levels down) and most ops pick
 * a path that exists in the model, so that creates, renames and unlinks
 * keep colliding with each other and with open files.  Every 500 steps and
 * at the end the complete trees are compared (names, types, sizes, modes,
 * link counts, symlink targets, user xattrs and every byte of content).
 *
 * If LFS_FSX_REMOUNT is set and -R K is given, the command is run through
 * system() every K steps (and once more at the end) with every descriptor
 * on the test tree closed, so that the harness can unmount and remount the
 * filesystem; the full trees must still compare equal afterwards.
 *
 * Exit status: 0 all equal, 1 divergence, 2 usage or setup error.
 */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <linux/falloc.h>
#include <libaio.h>
#include <liburing.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

#define PMAX            4096            /* relative path buffers */
#define MAX_IO          (256 * 1024)    /* largest single write */
#define CMP_CHUNK       (1024 * 1024)   /* read size when comparing content */
#define SMALL_FILE      (64 * 1024)     /* files this small are compared whole */
#define FOCUS_MAX       (1024 * 1024)   /* cap on the per-step compare window */
#define FULL_EVERY      500             /* steps between full-tree compares */
#define HIST            20              /* operations shown on failure */
#define POOL_MAX        4               /* concurrently open descriptor pairs */
#define XATTR_NAMES     4
#define MAX_DEPTH       64              /* guards the tree walks */
#define MAX_ENTS        20000

enum { TST = 0, MDL = 1 };
static const char *const side_name[2] = { "test", "model" };

/* ---------------------------------------------------------------- options */

static struct {
	uint64_t seed;
	long nops;
	bool verbose;
	int maxfiles;
	off_t maxlen;
	long remount_every;
	const char *remount_cmd;
	char *excluded;         /* -X argument as given */
} opt = {
	.nops = 10000,
	.maxfiles = 8,
	.maxlen = 2 * 1024 * 1024,
};

/* ------------------------------------------------------------------ PRNG */

/*
 * splitmix64: tiny, full-period and identical on every libc, so a seed
 * printed by a failing run reproduces the same operation sequence anywhere.
 */
static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Modulo bias is irrelevant at these ranges. */
static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static bool chance(unsigned pct)
{
	return below(100) < pct;
}

/* -------------------------------------------------------- global state */

static struct {
	const char *root[2];    /* as given on the command line */
	int dir[2];             /* so that the same relative path works on both */
} tr;

struct pooled {
	int fd[2];
	char path[PMAX];
	bool unlinked;
};

static struct pooled pool[POOL_MAX];
static int npool;

static bool xattr_ok;           /* model supports user.* xattrs */
static long step;
static long last_full_step = -1;

static unsigned char wbuf[MAX_IO];
static unsigned char cbuf[2][CMP_CHUNK];

/* ------------------------------------------------------ history/failure */

static struct {
	long step;
	char text[640];
} hist[HIST];
static long nhist;

static char *hist_cur(void)
{
	return hist[(nhist - 1) % HIST].text;
}

static void hist_vappend(const char *fmt, va_list ap)
{
	char *t = hist_cur();
	size_t len = strlen(t);

	if (len < sizeof(hist[0].text) - 1)
		vsnprintf(t + len, sizeof(hist[0].text) - len, fmt, ap);
}

/* Starts the history entry of a new action; text is built up as it runs. */
__attribute__((format(printf, 1, 2)))
static void note(const char *fmt, ...)
{
	va_list ap;

	nhist++;
	hist[(nhist - 1) % HIST].step = step;
	hist_cur()[0] = '\0';
	va_start(ap, fmt);
	hist_vappend(fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 1, 2)))
static void note_more(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hist_vappend(fmt, ap);
	va_end(ap);
}

static const char *ename(int e)
{
	static char bufs[4][32];
	static int n;
	char *b = bufs[n++ % 4];

	if (e == 0)
		return "OK";
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	const char *s = strerrorname_np(e);
	if (s)
		return s;
#endif
	snprintf(b, sizeof(bufs[0]), "errno %d", e);
	return b;
}

__attribute__((noreturn, format(printf, 1, 2)))
static void fail(const char *fmt, ...)
{
	va_list ap;
	long first = nhist > HIST ? nhist - HIST : 0;

	fflush(stdout);
	printf("lfs_fsx: FAILURE: seed %" PRIu64 ", step %ld\n", opt.seed, step);
	printf("lfs_fsx: operation: %s\n", nhist ? hist_cur() : "(none)");
	printf("lfs_fsx: difference: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\nlfs_fsx: last %ld operations (oldest first):\n", nhist - first);
	for (long i = first; i < nhist; i++)
		printf("  %6ld: %s\n", hist[i % HIST].step, hist[i % HIST].text);
	/* Every option that influences the random sequence, nothing else. */
	printf("lfs_fsx: reproduce with: lfs_fsx -s %" PRIu64 " -n %ld -F %d -L %lld",
	       opt.seed, step, opt.maxfiles, (long long)opt.maxlen);
	if (opt.remount_every)
		printf(" -R %ld", opt.remount_every);
	if (opt.excluded)
		printf(" -X %s", opt.excluded);
	printf(" TESTDIR MODELDIR\n");
	fflush(stdout);
	exit(1);
}

__attribute__((noreturn, format(printf, 1, 2)))
static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "lfs_fsx: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* -------------------------------------------------- paired syscall results */

struct res {
	long ret;
	int err;
};

/* errno is read after the call completes because arguments are evaluated first. */
static struct res res_of(long v)
{
	struct res r = { v, v < 0 ? errno : 0 };
	return r;
}

/*
 * Runs CALL once per side; CALL refers to the side as S (e.g. tr.dir[S]).
 * CALL is evaluated twice, so it must not draw random numbers itself.
 */
#define BOTH(r, S, CALL) \
	for (int S = 0; S < 2; S++) (r)[S] = res_of((long)(CALL))

static const char *fmt_res(struct res r)
{
	static char bufs[4][48];
	static int n;
	char *b = bufs[n++ % 4];

	if (r.ret < 0)
		snprintf(b, sizeof(bufs[0]), "-1 %s", ename(r.err));
	else
		snprintf(b, sizeof(bufs[0]), "%ld", r.ret);
	return b;
}

/*
 * Both sides must agree on success and on errno; with cmp_ret the value
 * must match too (byte counts do, file descriptors legitimately don't).
 * Returns whether the call succeeded.
 */
static bool same_outcome(const char *what, const struct res r[2], bool cmp_ret)
{
	bool ok = r[MDL].ret >= 0;

	note_more(" = %s", ok ? (cmp_ret ? fmt_res(r[MDL]) : "ok") : ename(r[MDL].err));
	if ((r[TST].ret >= 0) != ok || r[TST].err != r[MDL].err ||
	    (cmp_ret && r[TST].ret != r[MDL].ret))
		fail("%s: test returned %s, model returned %s", what,
		     fmt_res(r[TST]), fmt_res(r[MDL]));
	return ok;
}

static void close_pair(const struct res r[2])
{
	for (int s = 0; s < 2; s++)
		if (r[s].ret >= 0)
			close((int)r[s].ret);
}

/* Path-only syscalls (truncate, xattrs) have no *at() form. */
static const char *full_path(int side, const char *rel)
{
	static char bufs[2][2 * PMAX + 2];
	char *b = bufs[side];

	snprintf(b, sizeof(bufs[0]), "%s/%s", tr.root[side], rel);
	return b;
}

static void parent_of(const char *p, char *out)
{
	const char *slash = strrchr(p, '/');

	/* A trailing slash names the directory itself, not a child of it. */
	while (slash && slash[1] == '\0' && slash > p) {
		const char *q = slash - 1;
		while (q > p && *q != '/')
			q--;
		slash = *q == '/' ? q : NULL;
	}
	if (!slash || slash == p) {
		strcpy(out, ".");
		return;
	}
	memcpy(out, p, (size_t)(slash - p));
	out[slash - p] = '\0';
}

static bool is_root(const char *p)
{
	return strcmp(p, ".") == 0 || strcmp(p, "./") == 0 || p[0] == '\0';
}

/* ------------------------------------------------------ directory listing */

struct names {
	char **v;
	size_t n, cap;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_free(struct names *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		free(nm->v[i]);
	free(nm->v);
	memset(nm, 0, sizeof(*nm));
}

static void names_add(struct names *nm, const char *s)
{
	if (nm->n == nm->cap) {
		nm->cap = nm->cap ? 2 * nm->cap : 16;
		nm->v = realloc(nm->v, nm->cap * sizeof(*nm->v));
		if (!nm->v)
			die("out of memory");
	}
	if (!(nm->v[nm->n++] = strdup(s)))
		die("out of memory");
}

/* Sorted, because readdir order is filesystem specific. Returns 0 or errno. */
static int list_dir(int side, const char *rel, bool follow, struct names *out)
{
	int fd = openat(tr.dir[side], is_root(rel) ? "." : rel,
			O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	DIR *d;
	struct dirent *de;

	memset(out, 0, sizeof(*out));
	if (fd < 0)
		return errno;
	if (!(d = fdopendir(fd))) {
		int e = errno;
		close(fd);
		return e;
	}
	errno = 0;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			names_add(out, de->d_name);
		errno = 0;
	}
	int e = errno;
	closedir(d);
	if (e) {
		names_free(out);
		return e;
	}
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), cmp_str);
	return 0;
}

/* Returns the model's names (caller frees) so callers can recurse. */
static struct names compare_listing(const char *rel, bool follow)
{
	struct names nm[2];
	int e[2];

	for (int s = 0; s < 2; s++)
		e[s] = list_dir(s, rel, follow, &nm[s]);
	if (e[TST] != e[MDL])
		fail("listing %s: test %s, model %s", rel, ename(e[TST]), ename(e[MDL]));
	size_t i = 0, j = 0;
	while (i < nm[TST].n || j < nm[MDL].n) {
		int c = i == nm[TST].n ? 1 : j == nm[MDL].n ? -1 :
			strcmp(nm[TST].v[i], nm[MDL].v[j]);
		if (c < 0)
			fail("listing %s: \"%s\" exists only in test tree", rel, nm[TST].v[i]);
		if (c > 0)
			fail("listing %s: \"%s\" exists only in model tree", rel, nm[MDL].v[j]);
		i++, j++;
	}
	names_free(&nm[TST]);
	return nm[MDL];
}

/* ---------------------------------------------------- content compares */

static void compare_range(const int fd[2], off_t off, off_t len, const char *what)
{
	while (len > 0) {
		size_t want = len > CMP_CHUNK ? CMP_CHUNK : (size_t)len;
		struct res r[2];

		BOTH(r, s, pread(fd[s], cbuf[s], want, off));
		if (r[TST].ret != r[MDL].ret || r[TST].err != r[MDL].err)
			fail("%s: pread(off=%lld, len=%zu): test returned %s, model returned %s",
			     what, (long long)off, want, fmt_res(r[TST]), fmt_res(r[MDL]));
		if (r[MDL].ret <= 0)
			return;
		size_t n = (size_t)r[MDL].ret;
		if (memcmp(cbuf[TST], cbuf[MDL], n)) {
			size_t k = 0, ndiff = 0, last = 0;
			while (cbuf[TST][k] == cbuf[MDL][k])
				k++;
			for (size_t q = k; q < n; q++)
				if (cbuf[TST][q] != cbuf[MDL][q])
					ndiff++, last = q;
			char hx[2][3 * 16 + 1];
			for (int s = 0; s < 2; s++) {
				hx[s][0] = '\0';
				for (size_t q = k; q < k + 16 && q < n; q++)
					sprintf(hx[s] + 3 * (q - k), "%02x ", cbuf[s][q]);
			}
			fail("%s: content differs at offset %lld (%zu bytes differ in "
			     "[%lld,%lld), last at %lld)\n  test : %s\n  model: %s",
			     what, (long long)(off + (off_t)k), ndiff, (long long)off,
			     (long long)(off + (off_t)n), (long long)(off + (off_t)last),
			     hx[TST], hx[MDL]);
		}
		if (n < want)
			return;
		off += (off_t)n;
		len -= (off_t)n;
	}
}

static void compare_stats(const char *what, const struct stat st[2], bool root)
{
	const struct stat *t = &st[TST], *m = &st[MDL];

	if ((t->st_mode & S_IFMT) != (m->st_mode & S_IFMT))
		fail("%s: type differs: test 0%o, model 0%o", what,
		     (unsigned)(t->st_mode & S_IFMT), (unsigned)(m->st_mode & S_IFMT));
	/* The roots were made by the harness, only their link count is ours. */
	if (!root && t->st_mode != m->st_mode)
		fail("%s: mode differs: test 0%o, model 0%o", what,
		     (unsigned)t->st_mode, (unsigned)m->st_mode);
	if (t->st_nlink != m->st_nlink)
		fail("%s: nlink differs: test %lu, model %lu", what,
		     (unsigned long)t->st_nlink, (unsigned long)m->st_nlink);
	/* Directory sizes are implementation defined. */
	if (!S_ISDIR(m->st_mode) && t->st_size != m->st_size)
		fail("%s: size differs: test %lld, model %lld", what,
		     (long long)t->st_size, (long long)m->st_size);
}

/*
 * Compares attributes and content of an open pair.  [lo,hi) is what the
 * operation touched; besides that the head and tail are compared, and the
 * whole file when it is small or when full is set.
 */
static void check_fds(const int fd[2], off_t lo, off_t hi, bool full, const char *what)
{
	struct stat st[2];
	struct res r[2];

	BOTH(r, s, fstat(fd[s], &st[s]));
	if (r[TST].ret != r[MDL].ret || r[TST].err != r[MDL].err)
		fail("%s: fstat: test %s, model %s", what, fmt_res(r[TST]), fmt_res(r[MDL]));
	if (r[MDL].ret < 0)
		return;
	compare_stats(what, st, false);
	if (!S_ISREG(st[MDL].st_mode))
		return;
	off_t size = st[MDL].st_size;
	/* One byte past EOF checks that both ends agree on where data stops. */
	if (full || size <= SMALL_FILE) {
		compare_range(fd, 0, size + 1, what);
		return;
	}
	compare_range(fd, 0, 4096, what);
	compare_range(fd, size - 4096, 4097, what);
	if (lo >= 0 && hi > lo) {
		off_t a = lo > 4096 ? lo - 4096 : 0;
		off_t b = hi + 4096 < a + FOCUS_MAX ? hi + 4096 : a + FOCUS_MAX;
		compare_range(fd, a, b - a, what);
	}
	compare_range(fd, (off_t)below((uint64_t)size), 4096, what);
}

/* ---------------------------------------------------------------- xattrs */

static int list_user_xattrs(int side, const char *rel, bool follow, struct names *out)
{
	static char buf[65536];
	const char *fp = full_path(side, rel);
	ssize_t n = follow ? listxattr(fp, buf, sizeof(buf)) : llistxattr(fp, buf, sizeof(buf));

	memset(out, 0, sizeof(*out));
	if (n < 0)
		return errno;
	/* Hosts may carry security.* or system.* labels that are not ours. */
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
		if (strncmp(buf + i, "user.", 5) == 0)
			names_add(out, buf + i);
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), cmp_str);
	return 0;
}

static void compare_xattrs(const char *p, bool follow)
{
	struct names nm[2];
	int e[2];

	for (int s = 0; s < 2; s++)
		e[s] = list_user_xattrs(s, p, follow, &nm[s]);
	if (e[TST] != e[MDL])
		fail("listxattr %s: test %s, model %s", p, ename(e[TST]), ename(e[MDL]));
	if (nm[TST].n != nm[MDL].n)
		fail("listxattr %s: test has %zu user xattrs, model %zu", p,
		     nm[TST].n, nm[MDL].n);
	for (size_t i = 0; i < nm[MDL].n; i++) {
		static char val[2][65536];
		struct res r[2];

		if (strcmp(nm[TST].v[i], nm[MDL].v[i]))
			fail("listxattr %s: names differ: test %s, model %s", p,
			     nm[TST].v[i], nm[MDL].v[i]);
		BOTH(r, s, follow ? getxattr(full_path(s, p), nm[MDL].v[i], val[s], sizeof(val[0]))
				  : lgetxattr(full_path(s, p), nm[MDL].v[i], val[s], sizeof(val[0])));
		if (r[TST].ret != r[MDL].ret || r[TST].err != r[MDL].err)
			fail("getxattr %s %s: test %s, model %s", p, nm[MDL].v[i],
			     fmt_res(r[TST]), fmt_res(r[MDL]));
		if (r[MDL].ret > 0 && memcmp(val[TST], val[MDL], (size_t)r[MDL].ret))
			fail("getxattr %s %s: values differ", p, nm[MDL].v[i]);
	}
	names_free(&nm[TST]);
	names_free(&nm[MDL]);
}

/* ------------------------------------------------------------ path checks */

/* Everything observable about one path; [lo,hi) as for check_fds. */
static void check_path(const char *p, bool follow, off_t lo, off_t hi, bool full)
{
	char what[PMAX + 32];
	struct stat st[2];
	struct res r[2];

	snprintf(what, sizeof(what), "%s %s", follow ? "stat" : "lstat", p);
	BOTH(r, s, fstatat(tr.dir[s], p, &st[s], follow ? 0 : AT_SYMLINK_NOFOLLOW));
	if (r[TST].err != r[MDL].err || r[TST].ret != r[MDL].ret)
		fail("%s: test %s, model %s", what, fmt_res(r[TST]), fmt_res(r[MDL]));
	if (r[MDL].ret < 0)
		return;
	compare_stats(what, st, is_root(p));

	if (S_ISLNK(st[MDL].st_mode)) {
		static char tgt[2][PMAX + 1];
		BOTH(r, s, readlinkat(tr.dir[s], p, tgt[s], PMAX));
		if (r[TST].ret != r[MDL].ret || r[TST].err != r[MDL].err ||
		    (r[MDL].ret > 0 && memcmp(tgt[TST], tgt[MDL], (size_t)r[MDL].ret))) {
			for (int s = 0; s < 2; s++)
				tgt[s][r[s].ret > 0 ? r[s].ret : 0] = '\0';
			fail("readlink %s: test %s \"%s\", model %s \"%s\"", p,
			     fmt_res(r[TST]), tgt[TST], fmt_res(r[MDL]), tgt[MDL]);
		}
		return;
	}
	if (xattr_ok && (S_ISREG(st[MDL].st_mode) || S_ISDIR(st[MDL].st_mode)))
		compare_xattrs(p, follow);
	if (S_ISREG(st[MDL].st_mode)) {
		BOTH(r, s, openat(tr.dir[s], p, O_RDONLY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW)));
		if (r[TST].err != r[MDL].err || (r[TST].ret < 0) != (r[MDL].ret < 0))
			fail("open %s for compare: test %s, model %s", p,
			     fmt_res(r[TST]), fmt_res(r[MDL]));
		if (r[MDL].ret >= 0) {
			int fd[2] = { (int)r[TST].ret, (int)r[MDL].ret };
			check_fds(fd, lo, hi, full, what);
		}
		close_pair(r);
	}
}

static void check_parent(const char *p)
{
	char par[PMAX];
	struct names nm;

	parent_of(p, par);
	check_path(par, true, -1, -1, false);
	nm = compare_listing(par, true);
	names_free(&nm);
}

static void compare_tree(const char *rel, int depth)
{
	struct names nm = compare_listing(rel, false);

	if (depth > MAX_DEPTH)
		fail("tree deeper than %d at %s", MAX_DEPTH, rel);
	for (size_t i = 0; i < nm.n; i++) {
		char p[PMAX];
		struct stat st;

		if ((size_t)snprintf(p, sizeof(p), "%s%s%s", is_root(rel) ? "" : rel,
				     is_root(rel) ? "" : "/", nm.v[i]) >= sizeof(p))
			fail("path too long under %s", rel);
		check_path(p, false, -1, -1, true);
		if (fstatat(tr.dir[MDL], p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
			compare_tree(p, depth + 1);
	}
	names_free(&nm);
}

static void compare_all(const char *why)
{
	note("full compare (%s)", why);
	check_path(".", false, -1, -1, false);
	compare_tree(".", 0);
	for (int i = 0; i < npool; i++) {
		char what[PMAX + 32];
		snprintf(what, sizeof(what), "fd#%d %s%s", i, pool[i].path,
			 pool[i].unlinked ? " (unlinked)" : "");
		check_fds(pool[i].fd, -1, -1, true, what);
	}
	note_more(" = equal");
	last_full_step = step;
	if (opt.verbose)
		printf("%6ld %s\n", step, hist_cur());
}

/* ------------------------------------------------ model namespace cache */

/*
 * Ops mostly pick paths that exist in the model so that they do something
 * other than fail with ENOENT; the cache is rebuilt only after the
 * namespace may have changed.
 */
struct ent {
	char *path;
	mode_t type;
};
static struct ent *ents;
static size_t nents, ents_cap;
static bool ns_dirty = true;

static void scan_model(const char *rel, int depth)
{
	struct names nm;

	if (depth > MAX_DEPTH || list_dir(MDL, rel, false, &nm))
		return;
	for (size_t i = 0; i < nm.n && nents < MAX_ENTS; i++) {
		char p[PMAX];
		struct stat st;

		if ((size_t)snprintf(p, sizeof(p), "%s%s%s", is_root(rel) ? "" : rel,
				     is_root(rel) ? "" : "/", nm.v[i]) >= sizeof(p) ||
		    fstatat(tr.dir[MDL], p, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		if (nents == ents_cap) {
			ents_cap = ents_cap ? 2 * ents_cap : 64;
			if (!(ents = realloc(ents, ents_cap * sizeof(*ents))))
				die("out of memory");
		}
		if (!(ents[nents].path = strdup(p)))
			die("out of memory");
		ents[nents++].type = st.st_mode & S_IFMT;
		if (S_ISDIR(st.st_mode))
			scan_model(p, depth + 1);
	}
	names_free(&nm);
}

enum kind { K_FILE, K_DIR, K_LINK, K_ANY };

static bool kind_matches(enum kind k, mode_t type)
{
	switch (k) {
	case K_FILE: return type == S_IFREG;
	case K_DIR:  return type == S_IFDIR;
	case K_LINK: return type == S_IFLNK;
	default:     return true;
	}
}

static void refresh_cache(void)
{
	if (!ns_dirty)
		return;
	for (size_t i = 0; i < nents; i++)
		free(ents[i].path);
	nents = 0;
	scan_model(".", 0);
	ns_dirty = false;
}

static unsigned depth_of(const char *p)
{
	unsigned d = 1;

	for (; *p; p++)
		d += *p == '/';
	return d;
}

/*
 * Picks uniformly among cached entries of kind k, optionally no deeper than
 * max_depth.  Returns false if there is none.
 */
static bool pick_cached(char *out, enum kind k, unsigned max_depth)
{
	size_t n = 0;

	refresh_cache();
	for (size_t i = 0; i < nents; i++)
		n += kind_matches(k, ents[i].type) && depth_of(ents[i].path) <= max_depth;
	if (!n)
		return false;
	size_t want = below(n);
	for (size_t i = 0; i < nents; i++)
		if (kind_matches(k, ents[i].type) && depth_of(ents[i].path) <= max_depth &&
		    want-- == 0) {
			snprintf(out, PMAX, "%s", ents[i].path);
			return true;
		}
	return false;
}

/*
 * A name from the small fixed namespace; it may or may not exist.  The
 * parent is usually an existing directory (so that creates succeed rather
 * than fail with ENOENT) but never deeper than two levels, which keeps mkdir
 * from growing the tree without bound.
 */
static void pool_name(char *out, enum kind k)
{
	char dir[PMAX] = "";
	unsigned r = (unsigned)below(10);
	bool dirname;

	if (r < 7) {
		if (!chance(25) && pick_cached(dir, K_DIR, chance(70) ? 1 : 2))
			strcat(dir, "/");
	} else if (r < 9) {
		snprintf(dir, sizeof(dir), "d%u/", (unsigned)below(4));
	} else {
		snprintf(dir, sizeof(dir), "d%u/d%u/", (unsigned)below(2), (unsigned)below(2));
	}
	/* A few wrong-kind names provoke EISDIR/ENOTDIR/EEXIST paths. */
	if (k == K_DIR)
		dirname = !chance(10);
	else if (k == K_ANY)
		dirname = chance(30);
	else
		dirname = chance(10);
	unsigned idx = (unsigned)below(dirname ? 4 : (uint64_t)opt.maxfiles);
	/* Cached parents are far shorter than PMAX; fall back to the root if not. */
	if (snprintf(out, PMAX, "%s%c%u", dir, dirname ? 'd' : 'f', idx) >= PMAX)
		snprintf(out, PMAX, "%c%u", dirname ? 'd' : 'f', idx);
}

static void pick_path(char *out, enum kind k)
{
	if (k == K_DIR && chance(3)) {
		strcpy(out, chance(50) ? "." : "d0/");
		return;
	}
	/* Files reached through a symlink are worth a share too. */
	if (k == K_FILE && chance(10))
		k = K_LINK;
	if (chance(80) && pick_cached(out, k, MAX_DEPTH))
		return;
	pool_name(out, k == K_LINK ? K_FILE : k);
}

/*
 * Symlink targets are relative and never contain "..", so however the link
 * is renamed it can only resolve inside its own tree; an escaping link would
 * make the two trees see different outside worlds.
 */
static void gen_target(char *out)
{
	unsigned r = (unsigned)below(20);
	size_t len = 0;

	if (r == 0) {
		out[0] = '\0';
		return;
	}
	if (r == 1) {
		snprintf(out, PMAX, "/lfs_fsx-nonexistent/f%u", (unsigned)below(4));
		return;
	}
	if (r == 2) {
		/* Long targets need more than an inline/short symlink representation. */
		size_t want = 60 + below(1000);
		len = (size_t)snprintf(out, PMAX, "d%u", (unsigned)below(4));
		while (len + 2 < want)
			len += (size_t)snprintf(out + len, PMAX - len, "/.");
		snprintf(out + len, PMAX - len, "/f%u", (unsigned)below((uint64_t)opt.maxfiles));
		return;
	}
	unsigned ncomp = 1 + (unsigned)below(3);
	out[0] = '\0';
	for (unsigned i = 0; i < ncomp; i++) {
		bool last = i + 1 == ncomp;
		if (i)
			len += (size_t)snprintf(out + len, PMAX - len, "/");
		if (!last || chance(30))
			len += (size_t)snprintf(out + len, PMAX - len, "d%u", (unsigned)below(4));
		else
			len += (size_t)snprintf(out + len, PMAX - len, "f%u",
						(unsigned)below((uint64_t)opt.maxfiles));
	}
}

/* ----------------------------------------------------------- data/sizes */

static void fill_data(unsigned char *b, size_t n)
{
	unsigned style = (unsigned)below(10);
	size_t i = 0;

	/* Zero and constant runs catch filesystems that confuse data with holes. */
	if (style == 0) {
		memset(b, 0, n);
		return;
	}
	if (style == 1) {
		memset(b, (int)(rnd() & 0xff), n);
		return;
	}
	for (; i + 8 <= n; i += 8) {
		uint64_t x = rnd();
		memcpy(b + i, &x, 8);
	}
	if (i < n) {
		uint64_t x = rnd();
		memcpy(b + i, &x, n - i);
	}
}

static off_t clamp_off(off_t off)
{
	if (off < 0)
		return 0;
	return off >= opt.maxlen ? opt.maxlen - 1 : off;
}

static off_t pick_offset(off_t size)
{
	switch (below(7)) {
	case 0:  return clamp_off(size ? (off_t)below((uint64_t)size) : 0);
	case 1:  return clamp_off(size);
	case 2:  return clamp_off(size - 4096 + (off_t)below(8192));
	case 3:  return clamp_off((off_t)below((uint64_t)opt.maxlen / 4096 + 1) * 4096);
	case 4:  return clamp_off((off_t)below((uint64_t)opt.maxlen));
	case 5:  /* far past EOF: leaves a hole behind */
		return clamp_off(size + (off_t)below((uint64_t)(opt.maxlen - clamp_off(size))));
	default: return clamp_off(size ? (off_t)below((uint64_t)size) & ~(off_t)4095 : 0);
	}
}

static size_t pick_len(off_t off)
{
	size_t len;

	switch (below(10)) {
	case 0: case 1: case 2: len = 1 + below(16); break;
	case 3: case 4: len = 1 + below(4096 + 64); break;
	case 5: case 6: len = 1 + below(64 * 1024); break;
	case 7:         len = 4096 * (1 + below(16)); break;
	default:        len = 1 + below(MAX_IO); break;
	}
	if ((off_t)len > opt.maxlen - off)
		len = (size_t)(opt.maxlen - off);
	return len ? len : 1;
}

static off_t pick_size(off_t size)
{
	off_t n;

	switch (below(8)) {
	case 0:  n = 0; break;
	case 1:  n = (off_t)below(8192) | 1; break;
	case 2:  case 3: n = (off_t)below((uint64_t)size + 1); break;
	case 4:  n = size + 1 + (off_t)below(65536); break;
	/* Just at or one past a block boundary. */
	case 5:  n = size > 4096 ? (size & ~(off_t)4095) + (off_t)below(2) : size; break;
	default: n = (off_t)below((uint64_t)opt.maxlen + 1); break;
	}
	return n < opt.maxlen ? n : opt.maxlen;
}

/* User rw always kept so a non-root run can still read everything to compare. */
static mode_t file_mode(void)
{
	return (mode_t)(0600 | below(01000) | (chance(10) ? 01000 : 0));
}

static mode_t dir_mode(void)
{
	return (mode_t)(0700 | below(01000) | (chance(10) ? 01000 : 0));
}

/*
 * Only regular file sizes feed the PRNG-driven choices: directory sizes
 * differ between host filesystems and would make a seed's op sequence
 * depend on which filesystem holds the model.
 */
static off_t model_size_fd(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : 0;
}

static off_t model_size_path(const char *p)
{
	struct stat st;
	return fstatat(tr.dir[MDL], p, &st, 0) == 0 && S_ISREG(st.st_mode) ? st.st_size : 0;
}

/* ------------------------------------------------------------- targets */

/* A descriptor pair: borrowed from the pool or opened just for one op. */
struct target {
	int fd[2];
	int slot;
	char path[PMAX];
};

static void target_pick(struct target *t, enum kind k, unsigned pool_pct)
{
	t->fd[0] = t->fd[1] = -1;
	t->slot = -1;
	if (npool && chance(pool_pct)) {
		t->slot = (int)below((uint64_t)npool);
		snprintf(t->path, sizeof(t->path), "%s", pool[t->slot].path);
	} else {
		pick_path(t->path, k);
	}
}

static const char *target_name(const struct target *t)
{
	static char b[PMAX + 48];

	if (t->slot < 0)
		return t->path;
	snprintf(b, sizeof(b), "fd#%d(%s%s)", t->slot, t->path,
		 pool[t->slot].unlinked ? ", unlinked" : "");
	return b;
}

/* False when both opens failed identically: the op is then complete. */
static bool target_open(struct target *t, int flags, mode_t mode)
{
	struct res r[2];

	if (t->slot >= 0) {
		t->fd[0] = pool[t->slot].fd[0];
		t->fd[1] = pool[t->slot].fd[1];
		return true;
	}
	BOTH(r, s, openat(tr.dir[s], t->path, flags | O_CLOEXEC, mode));
	if (!same_outcome("open", r, false))
		return false;
	t->fd[TST] = (int)r[TST].ret;
	t->fd[MDL] = (int)r[MDL].ret;
	return true;
}

static void target_close(struct target *t)
{
	if (t->slot < 0)
		for (int s = 0; s < 2; s++)
			if (t->fd[s] >= 0)
				close(t->fd[s]);
}

/* ------------------------------------------------------------ operations */

static bool op_write(void)
{
	struct target t;
	bool creat;

	target_pick(&t, K_FILE, 40);
	creat = t.slot < 0 && chance(15);
	note("write %s%s", target_name(&t), creat ? " O_CREAT" : "");
	if (creat)
		ns_dirty = true;
	if (!target_open(&t, O_RDWR | (creat ? O_CREAT : 0), file_mode()))
		return true;
	off_t off = pick_offset(model_size_fd(t.fd[MDL]));
	size_t len = pick_len(off);
	fill_data(wbuf, len);
	note_more(" off=%lld len=%zu", (long long)off, len);

	struct res r[2];
	BOTH(r, s, pwrite(t.fd[s], wbuf, len, off));
	same_outcome("pwrite", r, true);
	check_fds(t.fd, off, off + (off_t)len, false, "after write");
	target_close(&t);
	return true;
}

static bool op_read(void)
{
	struct target t;

	target_pick(&t, K_FILE, 40);
	note("read %s", target_name(&t));
	if (!target_open(&t, O_RDONLY, 0))
		return true;
	off_t size = model_size_fd(t.fd[MDL]);
	off_t off = chance(80) ? (off_t)below((uint64_t)size + 4096) : pick_offset(size);
	off_t len = (off_t)pick_len(clamp_off(off));
	note_more(" off=%lld len=%lld", (long long)off, (long long)len);
	compare_range(t.fd, off, len, "read");
	target_close(&t);
	return true;
}

/* --------------------------------------------------------- direct I/O */

#define DIO_ALIGN 4096
#define DIO_CHUNKS 4

/* How a direct transfer goes: one pread/pwrite, or up to DIO_CHUNKS
 * pieces in flight at once through libaio or io_uring. */
enum dio_way { DIO_SYNC, DIO_AIO, DIO_URING, DIO_WAYS };
static const char *const dio_name[] = { "pwrite", "libaio", "io_uring" };
static unsigned char *dbuf;     /* DIO_ALIGN-aligned, MAX_IO */
static io_context_t aio_ctx;
static struct io_uring ring;

static void dio_setup(void)
{
	if (posix_memalign((void **)&dbuf, DIO_ALIGN, MAX_IO) || io_setup(DIO_CHUNKS, &aio_ctx) < 0 ||
	    io_uring_queue_init(DIO_CHUNKS, &ring, 0) < 0)
		die("direct I/O setup: %s", strerror(errno));
}

/* [off, off + len) in n pieces, all submitted before any is waited for;
 * the bytes done, or -errno of the first piece that failed. */
static long dio_pieces(enum dio_way way, int fd, bool write, off_t off, size_t len)
{
	size_t n = 1 + (size_t)below(DIO_CHUNKS), piece = (len / n + DIO_ALIGN - 1) / DIO_ALIGN * DIO_ALIGN;
	struct iocb cb[DIO_CHUNKS], *cp[DIO_CHUNKS];
	size_t k = 0;
	for (size_t at = 0; at < len; at += piece, k++) {
		size_t l = len - at < piece ? len - at : piece;
		if (way == DIO_AIO) {
			if (write)
				io_prep_pwrite(&cb[k], fd, dbuf + at, l, off + (off_t)at);
			else
				io_prep_pread(&cb[k], fd, dbuf + at, l, off + (off_t)at);
			cp[k] = &cb[k];
		} else {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			if (write)
				io_uring_prep_write(sqe, fd, dbuf + at, (unsigned)l, (uint64_t)(off + (off_t)at));
			else
				io_uring_prep_read(sqe, fd, dbuf + at, (unsigned)l, (uint64_t)(off + (off_t)at));
		}
	}
	if (way == DIO_AIO ? io_submit(aio_ctx, (long)k, cp) != (long)k : io_uring_submit(&ring) != (int)k)
		die("direct I/O submit: %s", strerror(errno));
	long done = 0, err = 0;
	for (size_t i = 0; i < k; i++) {
		long res;
		if (way == DIO_AIO) {
			struct io_event ev;
			while (io_getevents(aio_ctx, 1, 1, &ev, NULL) != 1)
				;
			res = (long)ev.res;
		} else {
			struct io_uring_cqe *cqe;
			if (io_uring_wait_cqe(&ring, &cqe) < 0)
				die("io_uring_wait_cqe");
			res = cqe->res;
			io_uring_cqe_seen(&ring, cqe);
		}
		if (res < 0 && !err)
			err = res;
		done += res > 0 ? res : 0;
	}
	return err ? err : done;
}

/* An aligned range from what pick_offset and pick_len would give. */
static void dio_range(int mfd, off_t *off, size_t *len)
{
	*off = pick_offset(model_size_fd(mfd)) / DIO_ALIGN * DIO_ALIGN;
	size_t l = (pick_len(*off) + DIO_ALIGN - 1) / DIO_ALIGN * DIO_ALIGN;
	*len = l < MAX_IO ? l : MAX_IO;
}

/* Whether the model's descriptor is of a regular file (a path picked
 * for a file may name a directory by now). */
static bool dio_regular(int mfd)
{
	struct stat st;
	return fstat(mfd, &st) == 0 && S_ISREG(st.st_mode);
}

/* The test side's file again, for direct I/O (a pool's may be unlinked). */
static int dio_open(int fd)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	int d = open(p, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (d < 0)
		die("reopen for direct I/O: %s", strerror(errno));
	return d;
}

static long dio_do(enum dio_way way, int fd, bool write, off_t off, size_t len)
{
	if (way == DIO_SYNC) {
		long r = write ? pwrite(fd, dbuf, len, off) : pread(fd, dbuf, len, off);
		return r < 0 ? -errno : r;
	}
	return dio_pieces(way, fd, write, off, len);
}

/* The target of a direct op, opened with flags, and an aligned range of
 * it; false when there is nothing to do (no such file, or not a file). */
static bool dio_target(struct target *t, const char *op, enum dio_way way, int flags, off_t *off, size_t *len)
{
	target_pick(t, K_FILE, 40);
	note("%s(%s) %s", op, dio_name[way], target_name(t));
	if (!target_open(t, flags, 0))
		return false;
	if (!dio_regular(t->fd[MDL])) {
		target_close(t);
		return false;
	}
	dio_range(t->fd[MDL], off, len);
	return true;
}

/* A direct write of the test side, a plain one of the model (whose host
 * filesystem may not do O_DIRECT), then the buffered compare: what the
 * kernel cached of the range must be gone. */
static bool op_write_direct(void)
{
	struct target t;
	enum dio_way way = (enum dio_way)below(DIO_WAYS);
	off_t off;
	size_t len;

	if (!dio_target(&t, "write_direct", way, O_RDWR, &off, &len))
		return true;
	fill_data(dbuf, len);
	note_more(" off=%lld len=%zu", (long long)off, len);
	int dfd = dio_open(t.fd[TST]);
	struct res r[2] = { res_of(0), res_of(pwrite(t.fd[MDL], dbuf, len, off)) };
	long w = dio_do(way, dfd, true, off, len);
	r[TST] = w < 0 ? (struct res){ -1, (int)-w } : res_of(w);
	close(dfd);
	same_outcome("direct write", r, true);
	check_fds(t.fd, off, off + (off_t)len, false, "after direct write");
	target_close(&t);
	return true;
}

/* A direct read of the test side against a plain one of the model. */
static bool op_read_direct(void)
{
	struct target t;
	enum dio_way way = (enum dio_way)below(DIO_WAYS);
	off_t off;
	size_t len;

	if (!dio_target(&t, "read_direct", way, O_RDONLY, &off, &len))
		return true;
	note_more(" off=%lld len=%zu", (long long)off, len);
	int dfd = dio_open(t.fd[TST]);
	long got = dio_do(way, dfd, false, off, len);
	struct stat st[2];
	fstat(dfd, &st[TST]);
	fstat(t.fd[MDL], &st[MDL]);
	close(dfd);
	long want = pread(t.fd[MDL], cbuf[MDL], len, off);
	if (got != want || (want > 0 && memcmp(dbuf, cbuf[MDL], (size_t)want)))
		fail("direct read (%s) of [%lld, +%zu): test %ld bytes (size %lld), model %ld (size %lld)%s",
		     dio_name[way], (long long)off, len, got, (long long)st[TST].st_size, want,
		     (long long)st[MDL].st_size, got == want ? ", the bytes differ" : "");
	target_close(&t);
	return true;
}

static bool op_truncate(void)
{
	struct target t;
	struct res r[2];
	bool use_fd = npool && chance(40);

	target_pick(&t, K_FILE, use_fd ? 100 : 0);
	off_t old = use_fd ? model_size_fd(pool[t.slot].fd[MDL]) : model_size_path(t.path);
	off_t len = pick_size(old);
	note("%s %s %lld -> %lld", use_fd ? "ftruncate" : "truncate", target_name(&t),
	     (long long)old, (long long)len);
	if (use_fd) {
		BOTH(r, s, ftruncate(pool[t.slot].fd[s], len));
	} else {
		BOTH(r, s, truncate(full_path(s, t.path), len));
	}
	same_outcome("truncate", r, true);
	off_t lo = old < len ? old : len, hi = old < len ? len : old;
	if (use_fd)
		check_fds(pool[t.slot].fd, lo, hi, false, "after ftruncate");
	else
		check_path(t.path, true, lo, hi, false);
	return true;
}

static bool do_fallocate(int mode, const char *name)
{
	struct target t;

	target_pick(&t, K_FILE, 40);
	note("%s %s", name, target_name(&t));
	if (!target_open(&t, O_RDWR, 0))
		return true;
	off_t size = model_size_fd(t.fd[MDL]);
	off_t off = (mode & FALLOC_FL_PUNCH_HOLE)
		? (off_t)below((uint64_t)size + 8192) : pick_offset(size);
	if (chance(40))
		off &= ~(off_t)4095;
	off = clamp_off(off);
	off_t len = (off_t)pick_len(off);
	if (chance(30))
		len = (len + 4095) & ~(off_t)4095;
	if (len > opt.maxlen - off)
		len = opt.maxlen - off;
	note_more(" off=%lld len=%lld", (long long)off, (long long)len);

	struct res r[2];
	BOTH(r, s, fallocate(t.fd[s], mode, off, len));
	same_outcome(name, r, true);
	check_fds(t.fd, off, off + len, false, name);
	target_close(&t);
	return true;
}

static bool op_punch(void)
{
	return do_fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, "punch_hole");
}

static bool op_falloc(void)
{
	return do_fallocate(0, "fallocate");
}

static bool op_falloc_keep(void)
{
	return do_fallocate(FALLOC_FL_KEEP_SIZE, "fallocate_keep_size");
}

static bool op_create(void)
{
	char p[PMAX];
	mode_t mode = file_mode();
	struct res r[2];

	if (chance(10))
		pick_path(p, K_ANY);
	else
		pool_name(p, K_FILE);
	note("create %s mode 0%o", p, (unsigned)mode);
	BOTH(r, s, openat(tr.dir[s], p, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode));
	same_outcome("open(O_CREAT|O_EXCL)", r, false);
	close_pair(r);
	ns_dirty = true;
	check_path(p, false, -1, -1, false);
	check_parent(p);
	return true;
}

static bool op_open_trunc(void)
{
	char p[PMAX];
	bool creat = chance(30);
	struct res r[2];

	mode_t mode = file_mode();

	pick_path(p, K_FILE);
	note("open O_TRUNC%s %s mode 0%o", creat ? "|O_CREAT" : "", p, (unsigned)mode);
	BOTH(r, s, openat(tr.dir[s], p, O_WRONLY | O_TRUNC | O_CLOEXEC | (creat ? O_CREAT : 0),
			  mode));
	same_outcome("open(O_TRUNC)", r, false);
	close_pair(r);
	check_path(p, true, -1, -1, false);
	if (creat) {
		ns_dirty = true;
		check_parent(p);
	}
	return true;
}

static bool op_append(void)
{
	char p[PMAX];
	bool creat = chance(30);
	struct res r[2];
	unsigned n = 1 + (unsigned)below(3);

	mode_t mode = file_mode();

	pick_path(p, K_FILE);
	note("append%s %s mode 0%o", creat ? " O_CREAT" : "", p, (unsigned)mode);
	BOTH(r, s, openat(tr.dir[s], p, O_WRONLY | O_APPEND | O_CLOEXEC | (creat ? O_CREAT : 0),
			  mode));
	if (creat)
		ns_dirty = true;
	if (!same_outcome("open(O_APPEND)", r, false))
		return true;
	int fd[2] = { (int)r[TST].ret, (int)r[MDL].ret };
	off_t start = model_size_fd(fd[MDL]), end = start;
	for (unsigned i = 0; i < n; i++) {
		size_t len = chance(90) ? 1 + below(chance(50) ? 64 : 65536) : 1 + below(MAX_IO);
		if ((off_t)len > opt.maxlen - end)
			len = end < opt.maxlen ? (size_t)(opt.maxlen - end) : 0;
		if (!len)
			break;
		fill_data(wbuf, len);
		note_more(" len=%zu", len);
		BOTH(r, s, write(fd[s], wbuf, len));
		if (same_outcome("write(O_APPEND)", r, true))
			end += r[MDL].ret;
	}
	/* The descriptors are write-only, so the result is checked by path. */
	close(fd[TST]);
	close(fd[MDL]);
	check_path(p, true, start, end, false);
	if (creat)
		check_parent(p);
	return true;
}

static bool do_rename(unsigned flags, const char *name)
{
	char a[PMAX], b[PMAX];
	struct res r[2];
	bool plain = flags == 0 && chance(50);

	pick_path(a, chance(80) ? K_ANY : K_DIR);
	/* EXCHANGE needs both ends to exist to do anything interesting. */
	if (chance(flags & RENAME_EXCHANGE ? 85 : 45))
		pick_path(b, K_ANY);
	else
		pool_name(b, K_ANY);
	note("%s %s -> %s", plain ? "rename" : name, a, b);
	if (plain) {
		BOTH(r, s, renameat(tr.dir[s], a, tr.dir[s], b));
	} else {
		BOTH(r, s, syscall(SYS_renameat2, tr.dir[s], a, tr.dir[s], b, flags));
	}
	same_outcome(name, r, true);
	ns_dirty = true;
	check_path(a, false, -1, -1, false);
	check_path(b, false, -1, -1, false);
	check_parent(a);
	check_parent(b);
	return true;
}

static bool op_rename(void)
{
	return do_rename(0, "renameat2");
}

static bool op_rename_noreplace(void)
{
	return do_rename(RENAME_NOREPLACE, "renameat2(NOREPLACE)");
}

static bool op_rename_exchange(void)
{
	return do_rename(RENAME_EXCHANGE, "renameat2(EXCHANGE)");
}

static bool op_link(void)
{
	char a[PMAX], b[PMAX];
	struct res r[2];
	int flags = chance(20) ? AT_SYMLINK_FOLLOW : 0;

	pick_path(a, chance(90) ? K_FILE : K_ANY);
	if (chance(70))
		pool_name(b, K_FILE);
	else
		pick_path(b, K_ANY);
	note("link%s %s -> %s", flags ? " FOLLOW" : "", a, b);
	BOTH(r, s, linkat(tr.dir[s], a, tr.dir[s], b, flags));
	same_outcome("linkat", r, true);
	ns_dirty = true;
	check_path(a, false, -1, -1, false);
	check_path(b, false, -1, -1, false);
	check_parent(b);
	return true;
}

static bool op_unlink(void)
{
	char p[PMAX];
	struct res r[2];

	pick_path(p, chance(70) ? K_FILE : chance(50) ? K_LINK : K_ANY);
	note("unlink %s", p);
	BOTH(r, s, unlinkat(tr.dir[s], p, 0));
	same_outcome("unlinkat", r, true);
	ns_dirty = true;
	check_path(p, false, -1, -1, false);
	check_parent(p);
	return true;
}

static bool op_symlink(void)
{
	char tgt[PMAX], p[PMAX];
	struct res r[2];

	gen_target(tgt);
	if (chance(75))
		pool_name(p, K_FILE);
	else
		pick_path(p, K_ANY);
	note("symlink %s -> \"%.80s%s\" (len %zu)", p, tgt, strlen(tgt) > 80 ? "..." : "",
	     strlen(tgt));
	BOTH(r, s, symlinkat(tgt, tr.dir[s], p));
	same_outcome("symlinkat", r, true);
	ns_dirty = true;
	check_path(p, false, -1, -1, false);
	check_parent(p);
	return true;
}

static bool op_readlink(void)
{
	static char buf[2][PMAX];
	char p[PMAX];
	struct res r[2];
	/* Short buffers check the truncation contract too. */
	size_t bsz = chance(85) ? PMAX : 1 + below(16);

	pick_path(p, chance(85) ? K_LINK : K_ANY);
	note("readlink %s bufsize %zu", p, bsz);
	BOTH(r, s, readlinkat(tr.dir[s], p, buf[s], bsz));
	if (same_outcome("readlinkat", r, true) && memcmp(buf[TST], buf[MDL], (size_t)r[MDL].ret))
		fail("readlink %s: targets differ: test \"%.*s\", model \"%.*s\"", p,
		     (int)r[TST].ret, buf[TST], (int)r[MDL].ret, buf[MDL]);
	return true;
}

static bool op_mkdir(void)
{
	char p[PMAX];
	mode_t mode = dir_mode();
	struct res r[2];

	if (chance(85))
		pool_name(p, K_DIR);
	else
		pick_path(p, K_ANY);
	note("mkdir %s mode 0%o", p, (unsigned)mode);
	BOTH(r, s, mkdirat(tr.dir[s], p, mode));
	same_outcome("mkdirat", r, true);
	ns_dirty = true;
	check_path(p, false, -1, -1, false);
	check_parent(p);
	return true;
}

static bool op_rmdir(void)
{
	char p[PMAX];
	struct res r[2];

	pick_path(p, chance(90) ? K_DIR : K_ANY);
	note("rmdir %s", p);
	BOTH(r, s, unlinkat(tr.dir[s], p, AT_REMOVEDIR));
	same_outcome("rmdir", r, true);
	ns_dirty = true;
	check_path(p, false, -1, -1, false);
	check_parent(p);
	return true;
}

static bool op_pool_open(void)
{
	char p[PMAX];
	bool creat = chance(20);
	struct res r[2];

	if (npool == POOL_MAX)
		return false;
	mode_t mode = file_mode();
	pick_path(p, K_FILE);
	note("open fd#%d %s O_RDWR%s mode 0%o", npool, p, creat ? "|O_CREAT" : "", (unsigned)mode);
	BOTH(r, s, openat(tr.dir[s], p, O_RDWR | O_CLOEXEC | (creat ? O_CREAT : 0), mode));
	if (creat)
		ns_dirty = true;
	if (!same_outcome("open", r, false))
		return true;
	struct pooled *e = &pool[npool++];
	e->fd[TST] = (int)r[TST].ret;
	e->fd[MDL] = (int)r[MDL].ret;
	e->unlinked = false;
	snprintf(e->path, sizeof(e->path), "%s", p);
	check_fds(e->fd, -1, -1, false, "after open");
	return true;
}

static void pool_remove(int i)
{
	pool[i] = pool[--npool];
}

static bool op_pool_close(void)
{
	struct res r[2];

	if (!npool)
		return false;
	int i = (int)below((uint64_t)npool);
	note("close fd#%d(%s%s)", i, pool[i].path, pool[i].unlinked ? ", unlinked" : "");
	/* Last chance to see the data of an orphan before it is freed. */
	check_fds(pool[i].fd, -1, -1, pool[i].unlinked, "before close");
	BOTH(r, s, close(pool[i].fd[s]));
	pool_remove(i);
	same_outcome("close", r, true);
	return true;
}

static bool op_unlink_open(void)
{
	struct res r[2];
	int i;

	if (!npool)
		return false;
	i = (int)below((uint64_t)npool);
	for (int k = 0; k < npool && pool[i].unlinked; k++)
		i = (i + 1) % npool;
	note("unlink open fd#%d %s", i, pool[i].path);
	BOTH(r, s, unlinkat(tr.dir[s], pool[i].path, 0));
	if (same_outcome("unlinkat", r, true))
		pool[i].unlinked = true;
	ns_dirty = true;
	check_fds(pool[i].fd, -1, -1, false, "after unlink of open file");
	check_path(pool[i].path, false, -1, -1, false);
	check_parent(pool[i].path);
	return true;
}

static bool do_sync(bool data)
{
	struct target t;
	struct res r[2];
	const char *name = data ? "fdatasync" : "fsync";

	target_pick(&t, K_ANY, 70);
	note("%s %s", name, target_name(&t));
	/* O_RDONLY so that directories can be synced too. */
	if (!target_open(&t, O_RDONLY, 0))
		return true;
	BOTH(r, s, data ? fdatasync(t.fd[s]) : fsync(t.fd[s]));
	same_outcome(name, r, true);
	if (r[TST].ret != 0 || r[MDL].ret != 0)
		fail("%s must succeed on both: test %s, model %s", name,
		     fmt_res(r[TST]), fmt_res(r[MDL]));
	target_close(&t);
	return true;
}

static bool op_fsync(void)
{
	return do_sync(false);
}

static bool op_fdatasync(void)
{
	return do_sync(true);
}

static bool op_chmod(void)
{
	char p[PMAX];
	struct stat st;
	struct res r[2];

	pick_path(p, K_ANY);
	bool isdir = fstatat(tr.dir[MDL], p, &st, 0) == 0 && S_ISDIR(st.st_mode);
	mode_t mode = isdir ? dir_mode() : file_mode();
	note("chmod %s 0%o", p, (unsigned)mode);
	BOTH(r, s, fchmodat(tr.dir[s], p, mode, 0));
	same_outcome("fchmodat", r, true);
	check_path(p, true, -1, -1, false);
	return true;
}

static struct timespec rand_time(void)
{
	struct timespec ts;
	unsigned r = (unsigned)below(10);

	if (r == 0) {
		ts.tv_sec = 0;
		ts.tv_nsec = UTIME_NOW;
	} else if (r == 1) {
		ts.tv_sec = 0;
		ts.tv_nsec = UTIME_OMIT;
	} else {
		/* Within 32-bit time so the model's inode format cannot clamp it. */
		ts.tv_sec = (time_t)below(0x7fffffff);
		ts.tv_nsec = chance(20) ? 0 : (long)below(1000000000);
	}
	return ts;
}

static bool explicit_time(const struct timespec *ts)
{
	return ts->tv_nsec != UTIME_NOW && ts->tv_nsec != UTIME_OMIT;
}

static const char *fmt_time(const struct timespec *ts)
{
	static char bufs[2][40];
	static int n;
	char *b = bufs[n++ % 2];

	if (ts->tv_nsec == UTIME_NOW)
		return "NOW";
	if (ts->tv_nsec == UTIME_OMIT)
		return "OMIT";
	snprintf(b, sizeof(bufs[0]), "%lld.%09ld", (long long)ts->tv_sec, ts->tv_nsec);
	return b;
}

static bool op_utimens(void)
{
	char p[PMAX];
	struct timespec ts[2] = { rand_time(), rand_time() };
	int flags = chance(25) ? AT_SYMLINK_NOFOLLOW : 0;
	struct res r[2];
	struct stat st[2];

	pick_path(p, K_ANY);
	note("utimensat%s %s atime=%s mtime=%s", flags ? " NOFOLLOW" : "", p,
	     fmt_time(&ts[0]), fmt_time(&ts[1]));
	BOTH(r, s, utimensat(tr.dir[s], p, ts, flags));
	if (!same_outcome("utimensat", r, true))
		return true;
	BOTH(r, s, fstatat(tr.dir[s], p, &st[s], flags));
	if (r[TST].ret != r[MDL].ret || r[TST].err != r[MDL].err)
		fail("stat after utimensat: test %s, model %s", fmt_res(r[TST]), fmt_res(r[MDL]));
	/* Both UTIME_OMIT succeeds without even looking the path up. */
	if (r[MDL].ret < 0)
		return true;
	for (int s = 0; s < 2; s++) {
		if (explicit_time(&ts[1]) && (st[s].st_mtim.tv_sec != ts[1].tv_sec ||
					      st[s].st_mtim.tv_nsec != ts[1].tv_nsec))
			fail("%s mtime is %lld.%09ld, expected %lld.%09ld", side_name[s],
			     (long long)st[s].st_mtim.tv_sec, st[s].st_mtim.tv_nsec,
			     (long long)ts[1].tv_sec, ts[1].tv_nsec);
		if (explicit_time(&ts[0]) && (st[s].st_atim.tv_sec != ts[0].tv_sec ||
					      st[s].st_atim.tv_nsec != ts[0].tv_nsec))
			fail("%s atime is %lld.%09ld, expected %lld.%09ld", side_name[s],
			     (long long)st[s].st_atim.tv_sec, st[s].st_atim.tv_nsec,
			     (long long)ts[0].tv_sec, ts[0].tv_nsec);
	}
	check_path(p, !flags, -1, -1, false);
	return true;
}

static void xattr_name(char *out, size_t cap)
{
	if (chance(5))
		snprintf(out, cap, "user.lfs_fsx.absent");
	else
		snprintf(out, cap, "user.x%u", (unsigned)below(XATTR_NAMES));
}

static bool op_setxattr(void)
{
	static const int fl[3] = { 0, XATTR_CREATE, XATTR_REPLACE };
	static const char *const fl_name[3] = { "0", "CREATE", "REPLACE" };
	char p[PMAX], name[64];
	bool follow = chance(80);
	int f = (int)below(3);
	/* Small values: the model (ext4) keeps all xattrs of a file in one block. */
	size_t len = chance(5) ? 0 : chance(75) ? below(64) : below(256);
	struct res r[2];

	pick_path(p, K_ANY);
	xattr_name(name, sizeof(name));
	fill_data(wbuf, len);
	note("%ssetxattr %s %s len=%zu flags=%s", follow ? "" : "l", p, name, len, fl_name[f]);
	BOTH(r, s, follow ? setxattr(full_path(s, p), name, wbuf, len, fl[f])
			  : lsetxattr(full_path(s, p), name, wbuf, len, fl[f]));
	same_outcome("setxattr", r, true);
	check_path(p, follow, -1, -1, false);
	return true;
}

static bool op_getxattr(void)
{
	static char val[2][4096];
	char p[PMAX], name[64];
	/* size 0 asks for the length; a tiny buffer must give ERANGE. */
	size_t sz = chance(80) ? sizeof(val[0]) : chance(50) ? 0 : below(8);
	struct res r[2];

	pick_path(p, K_ANY);
	xattr_name(name, sizeof(name));
	note("getxattr %s %s size=%zu", p, name, sz);
	BOTH(r, s, getxattr(full_path(s, p), name, sz ? val[s] : NULL, sz));
	if (same_outcome("getxattr", r, true) && sz &&
	    memcmp(val[TST], val[MDL], (size_t)r[MDL].ret))
		fail("getxattr %s %s: values differ", p, name);
	return true;
}

static bool op_removexattr(void)
{
	char p[PMAX], name[64];
	struct res r[2];

	pick_path(p, K_ANY);
	xattr_name(name, sizeof(name));
	note("removexattr %s %s", p, name);
	BOTH(r, s, removexattr(full_path(s, p), name));
	same_outcome("removexattr", r, true);
	check_path(p, true, -1, -1, false);
	return true;
}

static bool op_stat(void)
{
	char p[PMAX];
	bool follow = chance(50);

	if (chance(85))
		pick_path(p, K_ANY);
	else
		pool_name(p, K_ANY);
	note("%s %s", follow ? "stat" : "lstat", p);
	check_path(p, follow, -1, -1, false);
	return true;
}

static bool op_listdir(void)
{
	char p[PMAX];
	struct names nm;

	pick_path(p, chance(90) ? K_DIR : K_ANY);
	note("readdir %s", p);
	nm = compare_listing(p, true);
	note_more(" = %zu names", nm.n);
	names_free(&nm);
	return true;
}

/* ------------------------------------------------------------- op table */

struct op {
	const char *name;
	unsigned weight;
	bool (*fn)(void);
	long count;
	bool unsupported;       /* by the model filesystem */
	bool excluded;          /* by -X */
};

/* Only name, weight and fn are initialised; the rest is run-time state. */
#define OP(name, weight, fn) { name, weight, fn, 0, false, false }
static struct op ops[] = {
	OP("write",            20, op_write),
	OP("read",             10, op_read),
	OP("write_direct",      4, op_write_direct),
	OP("read_direct",       2, op_read_direct),
	OP("truncate",          6, op_truncate),
	OP("punch_hole",        4, op_punch),
	OP("fallocate",         3, op_falloc),
	OP("fallocate_keep",    3, op_falloc_keep),
	OP("create",            6, op_create),
	OP("open_trunc",        3, op_open_trunc),
	OP("append",            5, op_append),
	OP("rename",            5, op_rename),
	OP("rename_noreplace",  2, op_rename_noreplace),
	OP("rename_exchange",   2, op_rename_exchange),
	OP("link",              3, op_link),
	OP("unlink",            3, op_unlink),
	OP("symlink",           3, op_symlink),
	OP("readlink",          2, op_readlink),
	OP("mkdir",             3, op_mkdir),
	OP("rmdir",             2, op_rmdir),
	OP("open",              3, op_pool_open),
	OP("close",             2, op_pool_close),
	OP("unlink_open",       2, op_unlink_open),
	OP("fsync",             2, op_fsync),
	OP("fdatasync",         2, op_fdatasync),
	OP("chmod",             2, op_chmod),
	OP("utimensat",         2, op_utimens),
	OP("setxattr",          3, op_setxattr),
	OP("getxattr",          2, op_getxattr),
	OP("removexattr",       1, op_removexattr),
	OP("stat",              4, op_stat),
	OP("readdir",           2, op_listdir),
};
#undef OP
#define NOPS (sizeof(ops) / sizeof(ops[0]))

static struct op *op_by_name(const char *name)
{
	for (size_t i = 0; i < NOPS; i++)
		if (!strcmp(ops[i].name, name))
			return &ops[i];
	die("unknown operation type: %s", name);
}

static bool op_enabled(const struct op *o)
{
	return !o->unsupported && !o->excluded && o->weight;
}

/* -X lets a run leave out op types the filesystem does not implement yet. */
static void exclude_ops(const char *arg)
{
	char *list = strdup(arg);

	if (!list || !(opt.excluded = strdup(arg)))
		die("out of memory");
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ","))
		op_by_name(tok)->excluded = true;
	free(list);
}

static void run_one_op(void)
{
	unsigned total = 0;

	for (size_t i = 0; i < NOPS; i++)
		if (op_enabled(&ops[i]))
			total += ops[i].weight;
	if (!total)
		die("every operation type is excluded");
	for (;;) {
		unsigned pick = (unsigned)below(total);
		size_t i = 0;

		while (!op_enabled(&ops[i]) || pick >= ops[i].weight) {
			if (op_enabled(&ops[i]))
				pick -= ops[i].weight;
			i++;
		}
		/* An op that does not apply right now (e.g. empty pool) re-draws. */
		if (ops[i].fn()) {
			ops[i].count++;
			if (opt.verbose)
				printf("%6ld %s\n", step, hist_cur());
			return;
		}
	}
}

/* ------------------------------------------------------ setup / probes */

/*
 * Operations the model cannot perform are skipped rather than compared:
 * without an oracle a difference would say nothing about lfs.
 */
static void probe_model(void)
{
	static const struct { int mode; const char *op; } fa[] = {
		{ FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, "punch_hole" },
		{ 0, "fallocate" },
		{ FALLOC_FL_KEEP_SIZE, "fallocate_keep" },
	};
	const char *probe = ".lfs_fsx_probe";
	int fd = openat(tr.dir[MDL], probe, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0)
		die("cannot create probe file in %s: %s", tr.root[MDL], strerror(errno));
	memset(wbuf, 'p', 16384);
	if (write(fd, wbuf, 16384) != 16384)
		die("cannot write probe file in %s: %s", tr.root[MDL], strerror(errno));
	for (size_t i = 0; i < sizeof(fa) / sizeof(fa[0]); i++)
		if (fallocate(fd, fa[i].mode, 4096, 4096) < 0) {
			if (errno != EOPNOTSUPP)
				die("probe fallocate(%s) on model: %s", fa[i].op, strerror(errno));
			op_by_name(fa[i].op)->unsupported = true;
		}
	xattr_ok = fsetxattr(fd, "user.lfs_fsx_probe", "x", 1, 0) == 0;
	if (!xattr_ok && errno != EOPNOTSUPP)
		die("probe setxattr on model: %s", strerror(errno));
	if (!xattr_ok) {
		op_by_name("setxattr")->unsupported = true;
		op_by_name("getxattr")->unsupported = true;
		op_by_name("removexattr")->unsupported = true;
	}
	close(fd);
	if (unlinkat(tr.dir[MDL], probe, 0))
		die("cannot remove probe file: %s", strerror(errno));
}

static int open_root(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		die("cannot open %s: %s", path, strerror(errno));
	return fd;
}

static void close_pool(const char *why)
{
	while (npool) {
		struct res r[2];
		note("close fd#%d(%s%s) %s", npool - 1, pool[npool - 1].path,
		     pool[npool - 1].unlinked ? ", unlinked" : "", why);
		check_fds(pool[npool - 1].fd, -1, -1, pool[npool - 1].unlinked, "before close");
		BOTH(r, s, close(pool[npool - 1].fd[s]));
		npool--;
		same_outcome("close", r, true);
	}
}

static void remount(void)
{
	close_pool("before remount");
	/* An open directory on the mount would make the unmount fail with EBUSY. */
	close(tr.dir[TST]);
	note("remount: %s", opt.remount_cmd);
	fflush(stdout);
	int st = system(opt.remount_cmd);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail("remount command failed (status 0x%x): %s", (unsigned)st, opt.remount_cmd);
	note_more(" = ok");
	if (opt.verbose)
		printf("%6ld %s\n", step, hist_cur());
	tr.dir[TST] = open_root(tr.root[TST]);
	compare_all("after remount");
}

static void usage(void)
{
	fprintf(stderr,
		"usage: lfs_fsx [-s SEED] [-n NUM_OPS] [-v] [-F MAXFILES] [-L MAX_FILE_LEN]\n"
		"               [-R K] [-X OP,...] TESTDIR MODELDIR\n"
		"  -s SEED   PRNG seed (default: from the clock; always printed)\n"
		"  -n N      number of operations (default 10000)\n"
		"  -v        print every operation\n"
		"  -F N      file names f0..f{N-1} in each directory (default 8)\n"
		"  -L BYTES  maximum file length (default 2097152)\n"
		"  -R K      every K ops run $LFS_FSX_REMOUNT with all test fds closed\n"
		"            and compare the full trees (default 0: never)\n"
		"  -X LIST   leave out these comma-separated operation types:\n"
		"           ");
	for (size_t i = 0, col = 12; i < NOPS; i++) {
		if (col + strlen(ops[i].name) > 76) {
			fprintf(stderr, "\n           ");
			col = 12;
		}
		col += (size_t)fprintf(stderr, " %s", ops[i].name);
	}
	fprintf(stderr, "\n"
		"TESTDIR is an empty directory on the filesystem under test, MODELDIR an\n"
		"empty directory on a trusted host filesystem.\n");
	exit(2);
}

static long long parse_num(const char *s, const char *what, long long min, long long max)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 0);
	if (errno || *s == '\0' || *end != '\0' || v < min || v > max)
		die("bad %s: %s", what, s);
	return v;
}

int main(int argc, char **argv)
{
	bool have_seed = false;
	int c;

	while ((c = getopt(argc, argv, "s:n:vF:L:R:X:h")) != -1) {
		switch (c) {
		case 's': {
			char *end;
			errno = 0;
			opt.seed = strtoull(optarg, &end, 0);
			if (errno || *optarg == '\0' || *end != '\0')
				die("bad seed: %s", optarg);
			have_seed = true;
			break;
		}
		case 'n': opt.nops = (long)parse_num(optarg, "op count", 0, LONG_MAX); break;
		case 'v': opt.verbose = true; break;
		case 'F': opt.maxfiles = (int)parse_num(optarg, "file count", 1, 1000); break;
		case 'L': opt.maxlen = (off_t)parse_num(optarg, "max length", 4096, 1LL << 40); break;
		case 'X': exclude_ops(optarg); break;
		case 'R': opt.remount_every = (long)parse_num(optarg, "remount interval", 0, LONG_MAX);
			  break;
		default: usage();
		}
	}
	if (argc - optind != 2)
		usage();
	if (!have_seed) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		opt.seed = ((uint64_t)ts.tv_sec * 1000000007ULL) ^ (uint64_t)ts.tv_nsec ^
			   ((uint64_t)getpid() << 32);
	}
	rng_state = opt.seed;
	opt.remount_cmd = getenv("LFS_FSX_REMOUNT");
	if (opt.remount_every && (!opt.remount_cmd || !*opt.remount_cmd))
		die("-R needs LFS_FSX_REMOUNT to be set to a command");

	tr.root[TST] = argv[optind];
	tr.root[MDL] = argv[optind + 1];
	for (int s = 0; s < 2; s++) {
		struct names nm;
		tr.dir[s] = open_root(tr.root[s]);
		int e = list_dir(s, ".", true, &nm);
		if (e)
			die("cannot list %s: %s", tr.root[s], strerror(e));
		if (nm.n)
			die("%s is not empty", tr.root[s]);
		names_free(&nm);
	}
	struct stat st[2];
	for (int s = 0; s < 2; s++)
		if (fstat(tr.dir[s], &st[s]))
			die("stat %s: %s", tr.root[s], strerror(errno));
	if (st[0].st_dev == st[1].st_dev && st[0].st_ino == st[1].st_ino)
		die("TESTDIR and MODELDIR are the same directory");

	/* Fixed so that creation modes are reproducible across environments. */
	umask(022);
	probe_model();
	dio_setup();
	/* Without setxattr no user xattr ever exists, so there is nothing to compare. */
	if (op_by_name("setxattr")->excluded)
		xattr_ok = false;
	printf("lfs_fsx: seed %" PRIu64 ", %ld ops, test %s, model %s\n",
	       opt.seed, opt.nops, tr.root[TST], tr.root[MDL]);
	for (size_t i = 0; i < NOPS; i++)
		if (ops[i].unsupported)
			printf("lfs_fsx: model does not support %s, skipping it\n", ops[i].name);
	fflush(stdout);

	for (step = 1; step <= opt.nops; step++) {
		run_one_op();
		if (step % FULL_EVERY == 0)
			compare_all("periodic");
		if (opt.remount_every && step % opt.remount_every == 0)
			remount();
	}
	step = opt.nops;
	/* Orphans are compared in full one last time as they are closed. */
	close_pool("at end");
	/* With -R the run always ends with a persistence check. */
	if (opt.remount_every && opt.nops % opt.remount_every != 0)
		remount();
	if (last_full_step != step)
		compare_all("final");

	printf("lfs_fsx: seed %" PRIu64 ", %ld ops, OK:", opt.seed, opt.nops);
	for (size_t i = 0; i < NOPS; i++)
		if (op_enabled(&ops[i]))
			printf(" %s=%ld", ops[i].name, ops[i].count);
	printf("\n");

	for (size_t i = 0; i < nents; i++)
		free(ents[i].path);
	free(ents);
	for (int s = 0; s < 2; s++)
		close(tr.dir[s]);
	return 0;
}
