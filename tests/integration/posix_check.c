/*
 * posix_check - POSIX/Linux semantic checks for a mounted filesystem.
 *
 * Usage: posix_check DIR [CHECK...]
 *
 * DIR must be an empty, writable directory on the filesystem under test.
 * Naming checks after DIR runs only those (handy while debugging one).
 *
 * Every check runs in a fresh subdirectory DIR/<check-name>, which is the
 * working directory while it runs, so checks use short relative paths and
 * cannot trip over each other's leftovers.  The subdirectory is removed
 * afterwards; if that removal fails the check fails too, since a filesystem
 * that cannot delete what it created is broken.
 *
 * Output is one line per check:
 *     ok NAME [(informational note)]
 *     FAIL NAME: line N: detail (errno text)
 *     SKIP NAME: reason
 * followed by a summary line.  Exit status: 0 when no check failed, 1 when
 * one did, 2 on usage or setup errors.
 *
 * The reference is Linux on ext4 and tmpfs: every check passes there.
 *
 * Build: gcc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O1 \
 *            -o posix_check posix_check.c
 */
#define _FILE_OFFSET_BITS 64
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

/* Older headers lack some of these; the values are the kernel ABI. */
#ifndef SYS_renameat2
#define SYS_renameat2 __NR_renameat2
#endif
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif
#ifndef FALLOC_FL_ZERO_RANGE
#define FALLOC_FL_ZERO_RANGE 0x10
#endif

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define KiB 1024L
#define MiB (1024L * 1024L)

/* ------------------------------------------------------------------------
 * Check results and assertions
 * ------------------------------------------------------------------------ */

enum result { PASS, FAIL, SKIP };

static char g_detail[2048]; /* why the running check failed or was skipped */
static char g_note[256];    /* informational suffix for a passing check */

__attribute__((format(printf, 3, 4)))
static enum result fail_at(int line, int err, const char *fmt, ...)
{
    char what[1536];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (err)
        snprintf(g_detail, sizeof g_detail, "line %d: %s (%s)", line, what,
                 strerror(err));
    else
        snprintf(g_detail, sizeof g_detail, "line %d: %s", line, what);
    return FAIL;
}

static enum result fail_errno(int line, const char *expr, long ret, int err,
                              const char *want1, const char *want2)
{
    char want[64];

    if (strcmp(want1, want2) == 0)
        snprintf(want, sizeof want, "%s", want1);
    else
        snprintf(want, sizeof want, "%s or %s", want1, want2);
    if (ret != -1)
        return fail_at(line, 0, "%s returned %ld, expected failure with %s",
                       expr, ret, want);
    return fail_at(line, err, "%s failed with errno %d, expected %s", expr,
                   err, want);
}

/*
 * errno is cleared after every passing assertion so that the errno printed
 * for a failure comes from a call made since the previous assertion, not
 * from something stale much earlier in the check.
 */
#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond))                                                         \
            return fail_at(__LINE__, errno, __VA_ARGS__);                    \
        errno = 0;                                                           \
    } while (0)

/* expr must fail (return -1) with errno want1 or want2. */
#define CHECK_ERRNO2(expr, want1, want2)                                     \
    do {                                                                     \
        errno = 0;                                                           \
        long r_ = (long)(expr);                                              \
        int e_ = errno;                                                      \
        if (r_ != -1 || (e_ != (want1) && e_ != (want2)))                    \
            return fail_errno(__LINE__, #expr, r_, e_, #want1, #want2);      \
        errno = 0;                                                           \
    } while (0)

#define CHECK_ERRNO(expr, want) CHECK_ERRNO2(expr, want, want)

/* expr yields NULL when all is well, or a description of what differs. */
#define CHECK_DIFF(expr)                                                     \
    do {                                                                     \
        const char *why_ = (expr);                                           \
        if (why_)                                                            \
            return fail_at(__LINE__, 0, "%s: %s", #expr, why_);              \
        errno = 0;                                                           \
    } while (0)

#define SKIP_UNLESS(cond, reason)                                            \
    do {                                                                     \
        if (!(cond)) {                                                       \
            snprintf(g_detail, sizeof g_detail, "%s", reason);               \
            return SKIP;                                                     \
        }                                                                    \
    } while (0)

__attribute__((format(printf, 1, 2)))
static void note(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(g_note, sizeof g_note, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------------
 * Memory that is released after each check, so that a check may simply
 * return on failure without leaking (descriptors are closed by the runner).
 * ------------------------------------------------------------------------ */

enum { MAX_TRACKED = 64 };
static void *g_tracked[MAX_TRACKED];
static size_t g_ntracked;

__attribute__((returns_nonnull))
static void *track(void *p)
{
    if (!p) {
        fputs("posix_check: out of memory\n", stderr);
        exit(2);
    }
    if (g_ntracked == MAX_TRACKED) {
        fputs("posix_check: too many tracked allocations\n", stderr);
        exit(2);
    }
    g_tracked[g_ntracked++] = p;
    return p;
}

__attribute__((returns_nonnull))
static void *xmalloc(size_t n) { return track(malloc(n ? n : 1)); }

__attribute__((returns_nonnull))
static void *xcalloc(size_t n, size_t size) { return track(calloc(n ? n : 1, size)); }

static void release_tracked(void)
{
    while (g_ntracked)
        free(g_tracked[--g_ntracked]);
}

/* ------------------------------------------------------------------------
 * I/O helpers
 * ------------------------------------------------------------------------ */

/* Pseudo-random bytes that are never zero, so they are never mistaken for a hole. */
static void fill_pattern(void *buf, size_t len, uint64_t seed)
{
    unsigned char *p = buf;
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;

    for (size_t i = 0; i < len; i++) {
        if (i % 8 == 0) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        unsigned char b = (unsigned char)(x >> (8 * (i % 8)));
        p[i] = b ? b : 0xA5;
    }
}

static int pwrite_full(int fd, const void *buf, size_t len, off_t off)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Creates or truncates path and fills it with buf. */
static int write_file(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0)
        return -1;
    if (write_full(fd, buf, len) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return close(fd);
}

static int write_str(const char *path, const char *s)
{
    return write_file(path, s, strlen(s));
}

/*
 * Pushes the file's data to the filesystem and evicts it from the page cache,
 * so the next read has to ask the filesystem rather than the kernel's copy.
 */
static int flush_and_drop(int fd)
{
    if (fsync(fd) != 0)
        return -1;
    int e = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (e) {
        errno = e;
        return -1;
    }
    return 0;
}

static char g_diff[512];

/* NULL when fd's bytes [off, off+len) equal want (want NULL: all zero). */
static const char *range_diff(int fd, off_t off, const void *want, size_t len)
{
    static unsigned char buf[64 * 1024];
    const unsigned char *w = want;
    size_t done = 0;

    while (done < len) {
        size_t chunk = len - done < sizeof buf ? len - done : sizeof buf;
        off_t at = off + (off_t)done;
        ssize_t n = pread(fd, buf, chunk, at);
        if (n < 0) {
            snprintf(g_diff, sizeof g_diff, "pread at %lld: %s",
                     (long long)at, strerror(errno));
            return g_diff;
        }
        if (n == 0) {
            snprintf(g_diff, sizeof g_diff,
                     "unexpected EOF at offset %lld (%zu bytes short)",
                     (long long)at, len - done);
            return g_diff;
        }
        for (size_t i = 0; i < (size_t)n; i++) {
            unsigned char expect = w ? w[done + i] : 0;
            if (buf[i] != expect) {
                snprintf(g_diff, sizeof g_diff,
                         "byte at offset %lld is 0x%02x, expected 0x%02x",
                         (long long)(at + (off_t)i), buf[i], expect);
                return g_diff;
            }
        }
        done += (size_t)n;
    }
    return NULL;
}

/* NULL when the file at path holds exactly want[0..len). */
static const char *content_diff(const char *path, const void *want, size_t len)
{
    struct stat st;
    const char *why;
    int fd = open(path, O_RDONLY);

    if (fd < 0) {
        snprintf(g_diff, sizeof g_diff, "open: %s", strerror(errno));
        return g_diff;
    }
    if (fstat(fd, &st) != 0) {
        snprintf(g_diff, sizeof g_diff, "fstat: %s", strerror(errno));
        close(fd);
        return g_diff;
    }
    if (st.st_size != (off_t)len) {
        snprintf(g_diff, sizeof g_diff, "size is %lld, expected %zu",
                 (long long)st.st_size, len);
        close(fd);
        return g_diff;
    }
    why = range_diff(fd, 0, want, len);
    close(fd);
    return why;
}

static const char *content_is(const char *path, const char *s)
{
    return content_diff(path, s, strlen(s));
}

/* NULL when fd's size is exactly size. */
static const char *size_diff(int fd, off_t size)
{
    struct stat st;

    if (fstat(fd, &st) != 0) {
        snprintf(g_diff, sizeof g_diff, "fstat: %s", strerror(errno));
        return g_diff;
    }
    if (st.st_size != size) {
        snprintf(g_diff, sizeof g_diff, "size is %lld, expected %lld",
                 (long long)st.st_size, (long long)size);
        return g_diff;
    }
    return NULL;
}

/* ------------------------------------------------------------------------
 * Directory helpers
 * ------------------------------------------------------------------------ */

struct entry {
    ino_t ino;
    unsigned char type;
    char name[256];
};

/* Reads a whole directory (. and .. included) into a tracked array. */
static ssize_t list_dir(const char *path, struct entry **out)
{
    size_t n = 0, cap = 64;
    struct entry *v;
    struct dirent *de;
    DIR *d = opendir(path);
    int err;

    if (!d)
        return -1;
    v = malloc(cap * sizeof *v);
    if (!v) {
        closedir(d);
        errno = ENOMEM;
        return -1;
    }
    for (;;) {
        errno = 0;
        de = readdir(d);
        if (!de)
            break;
        if (n == cap) {
            struct entry *bigger = realloc(v, 2 * cap * sizeof *v);
            if (!bigger) {
                errno = ENOMEM;
                break;
            }
            v = bigger;
            cap *= 2;
        }
        size_t len = strnlen(de->d_name, sizeof v[n].name - 1);
        memcpy(v[n].name, de->d_name, len);
        v[n].name[len] = '\0';
        v[n].ino = de->d_ino;
        v[n].type = de->d_type;
        n++;
    }
    err = errno;
    closedir(d);
    if (err) {
        free(v);
        errno = err;
        return -1;
    }
    *out = track(v);
    return (ssize_t)n;
}

static size_t count_name(const struct entry *v, size_t n, const char *name,
                         const struct entry **first)
{
    size_t count = 0;

    for (size_t i = 0; i < n; i++) {
        if (strcmp(v[i].name, name) == 0) {
            if (count++ == 0 && first)
                *first = &v[i];
        }
    }
    return count;
}

/* NULL when path lists exactly ".", ".." and names, each once. */
static const char *listing_diff(const char *path, const char *const *names,
                                size_t nnames)
{
    struct entry *v;
    ssize_t n = list_dir(path, &v);

    if (n < 0) {
        snprintf(g_diff, sizeof g_diff, "readdir: %s", strerror(errno));
        return g_diff;
    }
    if (count_name(v, (size_t)n, ".", NULL) != 1 ||
        count_name(v, (size_t)n, "..", NULL) != 1) {
        snprintf(g_diff, sizeof g_diff, "'.' or '..' missing or repeated");
        return g_diff;
    }
    for (size_t i = 0; i < nnames; i++) {
        size_t c = count_name(v, (size_t)n, names[i], NULL);
        if (c != 1) {
            snprintf(g_diff, sizeof g_diff, "'%.200s' listed %zu times",
                     names[i], c);
            return g_diff;
        }
    }
    for (ssize_t i = 0; i < n; i++) {
        bool expected = strcmp(v[i].name, ".") == 0 || strcmp(v[i].name, "..") == 0;
        for (size_t k = 0; k < nnames && !expected; k++)
            expected = strcmp(v[i].name, names[k]) == 0;
        if (!expected) {
            snprintf(g_diff, sizeof g_diff, "unexpected entry '%.200s'", v[i].name);
            return g_diff;
        }
    }
    return NULL;
}

/* The inode number the filesystem itself reports for "dir/..". */
static int dotdot_ino(const char *dir, ino_t *ino)
{
    struct entry *v;
    const struct entry *e = NULL;
    ssize_t n = list_dir(dir, &v);

    if (n < 0)
        return -1;
    if (count_name(v, (size_t)n, "..", &e) != 1) {
        errno = ENOENT;
        return -1;
    }
    *ino = e->ino;
    return 0;
}

static int rename2(const char *from, const char *to, unsigned flags)
{
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, flags);
}

static int touch(const char *path)
{
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    return fd < 0 ? -1 : close(fd);
}

/* The group a new file here should get: the directory's if it is setgid. */
static gid_t expected_gid(const char *dir)
{
    struct stat st;

    if (stat(dir, &st) == 0 && (st.st_mode & S_ISGID))
        return st.st_gid;
    return getegid();
}

/* ------------------------------------------------------------------------
 * Time helpers
 * ------------------------------------------------------------------------ */

static time_t now_sec(void)
{
    struct timespec t;

    clock_gettime(CLOCK_REALTIME, &t);
    return t.tv_sec;
}

static double mono_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static bool ts_eq(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool ts_after(struct timespec a, struct timespec b)
{
    return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

/*
 * Kernel timestamps come from a coarse clock and a FUSE filesystem may use
 * its own, so "now" is checked against the window [lo, hi] with slack.
 */
static bool ts_near(struct timespec t, time_t lo, time_t hi)
{
    return t.tv_sec >= lo - 2 && t.tv_sec <= hi + 2;
}

/*
 * Sleeps until just past the next wall-clock second, so that a timestamp
 * taken afterwards differs from one taken before even on a filesystem that
 * keeps whole seconds only.  The extra 50 ms covers the coarse clock's lag.
 */
static void sleep_past_second(void)
{
    struct timespec now, d;

    clock_gettime(CLOCK_REALTIME, &now);
    d.tv_sec = 0;
    d.tv_nsec = 1000000000L - now.tv_nsec + 50000000L;
    if (d.tv_nsec >= 1000000000L) {
        d.tv_sec = 1;
        d.tv_nsec -= 1000000000L;
    }
    while (nanosleep(&d, &d) != 0 && errno == EINTR)
        ;
}

#define TS_FMT "%lld.%09ld"
#define TS_ARG(t) (long long)(t).tv_sec, (long)(t).tv_nsec

/* ========================================================================
 * Checks: open, read, write
 * ======================================================================== */

static enum result check_create_read_write(void)
{
    static const char msg[] = "hello, log-structured world\n";
    const size_t len = sizeof msg - 1;
    char buf[64];
    struct stat st;

    int fd = open("f", O_CREAT | O_EXCL | O_RDWR, 0644);
    CHECK(fd >= 0, "create f");
    CHECK(write(fd, msg, len) == (ssize_t)len, "write %zu bytes", len);

    /* Another descriptor must see the data before the writer closes. */
    int fd2 = open("f", O_RDONLY);
    CHECK(fd2 >= 0, "open f for reading");
    CHECK(read(fd2, buf, sizeof buf) == (ssize_t)len && memcmp(buf, msg, len) == 0,
          "second descriptor does not see the written data");
    CHECK(read(fd2, buf, sizeof buf) == 0, "read at EOF must return 0");

    CHECK(fstat(fd, &st) == 0, "fstat");
    CHECK(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0644,
          "mode 0%o, expected regular file 0644", (unsigned)st.st_mode);
    CHECK(st.st_size == (off_t)len, "size %lld, expected %zu",
          (long long)st.st_size, len);
    CHECK(st.st_nlink == 1, "nlink %lu, expected 1", (unsigned long)st.st_nlink);
    CHECK(st.st_uid == geteuid(), "owner %u, expected %u", (unsigned)st.st_uid,
          (unsigned)geteuid());
    CHECK(st.st_gid == expected_gid("."), "group %u, expected %u",
          (unsigned)st.st_gid, (unsigned)expected_gid("."));
    CHECK(close(fd2) == 0 && close(fd) == 0, "close");
    CHECK_DIFF(content_diff("f", msg, len));

    /* Overwrite in the middle without truncating. */
    fd = open("f", O_RDWR);
    CHECK(fd >= 0, "reopen f");
    CHECK(lseek(fd, 7, SEEK_SET) == 7, "lseek");
    CHECK(write(fd, "LOG", 3) == 3, "overwrite");
    CHECK(close(fd) == 0, "close");
    CHECK_DIFF(content_is("f", "hello, LOG-structured world\n"));
    return PASS;
}

static enum result check_umask_applied(void)
{
    struct stat st;

    umask(027);
    int fd = open("f", O_CREAT | O_EXCL | O_WRONLY, 0666);
    CHECK(fd >= 0, "create f under umask 027");
    CHECK(mkdir("d", 0777) == 0, "mkdir d under umask 027");
    CHECK(mknod("p", S_IFIFO | 0666, 0) == 0, "mknod fifo under umask 027");
    umask(0);
    CHECK(stat("f", &st) == 0 && (st.st_mode & 07777) == 0640,
          "file mode 0%o, expected 0640", (unsigned)(st.st_mode & 07777));
    CHECK(stat("d", &st) == 0 && (st.st_mode & 07777) == 0750,
          "dir mode 0%o, expected 0750", (unsigned)(st.st_mode & 07777));
    CHECK(lstat("p", &st) == 0 && (st.st_mode & 07777) == 0640,
          "fifo mode 0%o, expected 0640", (unsigned)(st.st_mode & 07777));
    return PASS;
}

static enum result check_o_append(void)
{
    CHECK(write_str("f", "abc") == 0, "write f");

    int fd = open("f", O_WRONLY | O_APPEND);
    CHECK(fd >= 0, "open O_APPEND");
    CHECK(lseek(fd, 0, SEEK_SET) == 0, "lseek to 0");
    CHECK(write(fd, "def", 3) == 3, "append write");
    CHECK(lseek(fd, 0, SEEK_CUR) == 6, "offset after append is not 6");
    CHECK_DIFF(content_is("f", "abcdef"));

    /* A plain writer changes the middle; the appender still goes to the end. */
    int plain = open("f", O_WRONLY);
    CHECK(plain >= 0, "open plain");
    CHECK(write(plain, "X", 1) == 1, "plain write");
    CHECK(lseek(fd, 1, SEEK_SET) == 1, "lseek appender");
    CHECK(write(fd, "g", 1) == 1, "append write");
    CHECK_DIFF(content_is("f", "Xbcdefg"));

    /* Two appenders interleave without overwriting each other. */
    int fd2 = open("f", O_WRONLY | O_APPEND);
    CHECK(fd2 >= 0, "open second appender");
    CHECK(write(fd, "1", 1) == 1 && write(fd2, "2", 1) == 1 &&
          write(fd, "3", 1) == 1, "interleaved appends");
    CHECK(close(fd) == 0 && close(fd2) == 0 && close(plain) == 0, "close");
    CHECK_DIFF(content_is("f", "Xbcdefg123"));
    return PASS;
}

static enum result check_o_trunc(void)
{
    struct stat st;
    char c;

    CHECK(write_str("f", "0123456789") == 0, "write f");
    int fd = open("f", O_RDWR | O_TRUNC);
    CHECK(fd >= 0, "open O_TRUNC");
    CHECK(fstat(fd, &st) == 0 && st.st_size == 0, "size after O_TRUNC is %lld",
          (long long)st.st_size);
    CHECK(pread(fd, &c, 1, 0) == 0, "read after O_TRUNC must hit EOF");
    CHECK(write(fd, "ab", 2) == 2, "write");
    CHECK(close(fd) == 0, "close");
    CHECK_DIFF(content_is("f", "ab"));
    return PASS;
}

static enum result check_o_excl_existing(void)
{
    CHECK(write_str("f", "keep") == 0, "write f");
    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    CHECK(symlink("missing-target", "dangling") == 0, "symlink");
    CHECK_ERRNO(open("f", O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
    CHECK_ERRNO(open("d", O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
    /* O_EXCL must not follow a symlink, even a dangling one. */
    CHECK_ERRNO(open("dangling", O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
    CHECK_ERRNO(access("missing-target", F_OK), ENOENT);
    CHECK_DIFF(content_is("f", "keep"));
    return PASS;
}

static enum result check_o_creat_excl(void)
{
    static const char *const names[] = { "new" };
    struct stat st;

    int fd = open("new", O_CREAT | O_EXCL | O_RDWR, 0640);
    CHECK(fd >= 0, "O_CREAT|O_EXCL on a new name");
    CHECK(fstat(fd, &st) == 0, "fstat");
    CHECK(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0640 && st.st_size == 0,
          "new file has mode 0%o size %lld, expected regular 0640 size 0",
          (unsigned)st.st_mode, (long long)st.st_size);
    CHECK(close(fd) == 0, "close");
    CHECK_DIFF(listing_diff(".", names, ARRAY_LEN(names)));
    return PASS;
}

static enum result check_open_missing_enoent(void)
{
    struct stat st;

    CHECK_ERRNO(open("missing", O_RDONLY), ENOENT);
    CHECK_ERRNO(open("missing", O_WRONLY), ENOENT);
    CHECK_ERRNO(open("nodir/x", O_CREAT | O_WRONLY, 0644), ENOENT);
    CHECK_ERRNO(stat("missing", &st), ENOENT);
    CHECK_ERRNO(unlink("missing"), ENOENT);
    CHECK_ERRNO(rmdir("missing"), ENOENT);
    CHECK_ERRNO(rename("missing", "other"), ENOENT);
    return PASS;
}

static enum result check_open_dir_wronly_eisdir(void)
{
    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    CHECK_ERRNO(open("d", O_WRONLY), EISDIR);
    CHECK_ERRNO(open("d", O_RDWR), EISDIR);
    CHECK_ERRNO(open("d", O_WRONLY | O_CREAT, 0644), EISDIR);
    int fd = open("d", O_RDONLY);
    CHECK(fd >= 0, "open directory read-only");
    CHECK(close(fd) == 0, "close");
    return PASS;
}

static enum result check_enotdir_component(void)
{
    struct stat st;

    CHECK(write_str("f", "x") == 0, "write f");
    CHECK_ERRNO(open("f/x", O_RDONLY), ENOTDIR);
    CHECK_ERRNO(open("f/x", O_CREAT | O_WRONLY, 0644), ENOTDIR);
    CHECK_ERRNO(mkdir("f/x", 0755), ENOTDIR);
    CHECK_ERRNO(stat("f/x", &st), ENOTDIR);
    CHECK_ERRNO(stat("f/", &st), ENOTDIR);
    CHECK_ERRNO(open("f", O_RDONLY | O_DIRECTORY), ENOTDIR);
    return PASS;
}

static enum result check_pwrite_pread_offsets(void)
{
    char buf[16];

    int fd = open("f", O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "create f");
    CHECK(pwrite(fd, "abc", 3, 0) == 3, "pwrite at 0");
    CHECK(pwrite(fd, "XYZ", 3, 1000) == 3, "pwrite at 1000");
    CHECK(pwrite(fd, "mid", 3, 500) == 3, "pwrite at 500");
    CHECK(lseek(fd, 0, SEEK_CUR) == 0, "pwrite moved the file offset");
    CHECK_DIFF(size_diff(fd, 1003));
    CHECK(pread(fd, buf, 3, 1000) == 3 && memcmp(buf, "XYZ", 3) == 0, "pread at 1000");
    CHECK(pread(fd, buf, 3, 500) == 3 && memcmp(buf, "mid", 3) == 0, "pread at 500");
    CHECK(pread(fd, buf, 3, 0) == 3 && memcmp(buf, "abc", 3) == 0, "pread at 0");
    CHECK(pread(fd, buf, sizeof buf, 1001) == 2 && memcmp(buf, "YZ", 2) == 0,
          "pread across EOF must return the 2 remaining bytes");
    CHECK(pread(fd, buf, sizeof buf, 5000) == 0, "pread past EOF must return 0");
    CHECK(lseek(fd, 0, SEEK_CUR) == 0, "pread moved the file offset");
    CHECK_DIFF(range_diff(fd, 3, NULL, 497));
    CHECK_DIFF(range_diff(fd, 503, NULL, 497));
    CHECK(close(fd) == 0, "close");
    return PASS;
}

static enum result check_block_boundary_writes(void)
{
    /* (offset, length) pairs chosen to straddle 4 KiB block boundaries. */
    static const struct { off_t off; size_t len; } w[] = {
        { 4090, 12 },     /* across the 4096 boundary */
        { 8191, 2 },      /* one byte either side of 8192 */
        { 100, 4096 },    /* a full block's worth, misaligned */
        { 12287, 4098 },  /* across 12288 and 16384 */
        { 5000, 10 },     /* inside a block that already has data */
        { 0, 1 },
        { 16383, 1 },
    };
    enum { SIZE = 20 * 1024 };
    unsigned char *model = xcalloc(1, SIZE);
    unsigned char *chunk = xmalloc(SIZE);
    off_t size = 0;

    int fd = open("f", O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "create f");
    for (size_t i = 0; i < ARRAY_LEN(w); i++) {
        fill_pattern(chunk, w[i].len, i + 1);
        CHECK(pwrite_full(fd, chunk, w[i].len, w[i].off) == 0,
              "pwrite %zu bytes at %lld", w[i].len, (long long)w[i].off);
        memcpy(model + w[i].off, chunk, w[i].len);
        if (w[i].off + (off_t)w[i].len > size)
            size = w[i].off + (off_t)w[i].len;
        CHECK_DIFF(range_diff(fd, 0, model, (size_t)size));
    }
    CHECK_DIFF(size_diff(fd, size));
    CHECK(flush_and_drop(fd) == 0, "fsync + drop cache");
    CHECK_DIFF(range_diff(fd, 0, model, (size_t)size));
    CHECK(close(fd) == 0, "close");
    CHECK_DIFF(content_diff("f", model, (size_t)size));
    return PASS;
}

static enum result check_large_write_8mib(void)
{
    const size_t len = 8 * MiB;
    unsigned char *data = xmalloc(len);
    unsigned char *back = xmalloc(len);

    fill_pattern(data, len, 8);
    int fd = open("big", O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "create big");
    CHECK(write_full(fd, data, len) == 0, "write 8 MiB");
    CHECK(close(fd) == 0, "close");

    /* Read back in odd-sized pieces so reads straddle every kind of boundary. */
    fd = open("big", O_RDONLY);
    CHECK(fd >= 0, "reopen big");
    size_t got = 0;
    for (;;) {
        size_t want = len - got < 100003 ? len - got : 100003;
        ssize_t n = read(fd, back + got, want);
        CHECK(n >= 0, "read at offset %zu", got);
        if (n == 0 || (got += (size_t)n) == len)
            break;
    }
    CHECK(got == len, "read back %zu bytes, expected %zu", got, len);
    char extra;
    CHECK(read(fd, &extra, 1) == 0, "data beyond 8 MiB");
    for (size_t i = 0; i < len; i++)
        CHECK(back[i] == data[i], "byte %zu is 0x%02x, expected 0x%02x", i,
              back[i], data[i]);

    CHECK(flush_and_drop(fd) == 0, "fsync + drop cache");
    CHECK_DIFF(range_diff(fd, 0, data, len));
    CHECK(close(fd) == 0, "close");
    return PASS;
}

static enum result check_sparse_1tib(void)
{
    const off_t tib = (off_t)1 << 40;
    unsigned char tail[4096];
    struct stat st;
    char c;

    fill_pattern(tail, sizeof tail, 40);
    int fd = open("sparse", O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "create sparse");
    CHECK(pwrite_full(fd, tail, sizeof tail, tib - 4096) == 0,
          "pwrite 4 KiB at 1 TiB - 4096");
    CHECK_DIFF(size_diff(fd, tib));
    CHECK_DIFF(range_diff(fd, 0, NULL, 65536));
    CHECK_DIFF(range_diff(fd, tib / 2 - 4096, NULL, 8192));
    CHECK_DIFF(range_diff(fd, tib - 8192, NULL, 4096));
    CHECK_DIFF(range_diff(fd, tib - 4096, tail, sizeof tail));
    CHECK(pread(fd, &c, 1, tib) == 0, "read at 1 TiB must be EOF");
    CHECK(close(fd) == 0, "close");

    fd = open("sparse", O_RDONLY);
    CHECK(fd >= 0, "reopen sparse");
    CHECK(fstat(fd, &st) == 0, "fstat");
    CHECK(st.st_size == tib, "size after reopen %lld", (long long)st.st_size);
    CHECK(st.st_blocks < 1024, "a 1 TiB file with 4 KiB of data uses %lld blocks",
          (long long)st.st_blocks);
    CHECK_DIFF(range_diff(fd, tib - 4096, tail, sizeof tail));
    CHECK_DIFF(range_diff(fd, 4096 * 12345, NULL, 4096));
    CHECK(close(fd) == 0, "close");
    return PASS;
}

/* ========================================================================
 * Checks: truncation and holes
 * ======================================================================== */

static enum result check_truncate_up(void)
{
    CHECK(write_str("f", "abc") == 0, "write f");
    CHECK(truncate("f", 10000) == 0, "truncate to 10000");
    int fd = open("f", O_RDWR);
    CHECK(fd >= 0, "open f");
    CHECK_DIFF(size_diff(fd, 10000));
    CHECK_DIFF(range_diff(fd, 0, "abc", 3));
    CHECK_DIFF(range_diff(fd, 3, NULL, 10000 - 3));
    /* The old EOF block must not carry stale bytes into the extension. */
    CHECK(flush_and_drop(fd) == 0, "fsync + drop cache");
    CHECK_DIFF(range_diff(fd, 3, NULL, 10000 - 3));
    CHECK(pwrite(fd, "Z", 1, 10000) == 1, "append after truncate");
    CHECK_DIFF(size_diff(fd, 10001));
    CHECK(close(fd) == 0, "close");
    return PASS;
}

static enum result check_truncate_down_reextend(void)
{
    const size_t len = 20000;
    unsigned char *data = xmalloc(len);

    fill_pattern(data, len, 2);
    CHECK(write_file("f", data, len) == 0, "write f");
    CHECK(truncate("f", 3000) == 0, "truncate to 3000");
    CHECK_DIFF(content_diff("f", data, 3000));
    CHECK(truncate("f", (off_t)len) == 0, "truncate back up");
    int fd = open("f", O_RDONLY);
    CHECK(fd >= 0, "open f");
    CHECK_DIFF(size_diff(fd, (off_t)len));
    CHECK_DIFF(range_diff(fd, 0, data, 3000));
    CHECK_DIFF(range_diff(fd, 3000, NULL, len - 3000));
    CHECK(flush_and_drop(fd) == 0, "fsync + drop cache");
    CHECK_DIFF(range_diff(fd, 3000, NULL, len - 3000));
    CHECK(close(fd) == 0, "close");
    CHECK(truncate("f", 0) == 0, "truncate to 0");
    CHECK_DIFF(content_diff("f", "", 0));
    return PASS;
}

static enum result check_ftruncate(void)
{
    unsigned char data[8192];

    fill_pattern(data, sizeof data, 3);
    int fd = open("f", O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "create f");
    CHECK(write_full(fd, data, sizeof data) == 0, "write");
    CHECK(ftruncate(fd, 100) == 0, "ftruncate down");
    CHECK_DIFF(size_diff(fd, 100));
    CHECK(lseek(fd, 0, SEEK_CUR) == 8192, "ftruncate must not move the offset");
    /* Writing at the old offset leaves a hole where the cut data was. */
    CHECK(write(fd, "X", 1) == 1, "write at old offset");
    CHECK_DIFF(size_diff(fd, 8193));
    CHECK_DIFF(range_diff(fd, 0, data, 100));
    CHECK_DIFF(range_diff(fd, 100, NULL, 8192 - 100));
    CHECK_DIFF(range_diff(fd, 8192, "X", 1));
    CHECK(ftruncate(fd, 20000) == 0, "ftruncate up");
    CHECK_DIFF(size_diff(fd, 20000));
    CHECK_DIFF(range_diff(fd, 8193, NULL, 20000 - 8193));
    CHECK_ERRNO(ftruncate(fd, -1), EINVAL);
    CHECK(close(fd) == 0, "close");
    return PASS;
}

static enum result check_truncate_mid_block(void)
{
    unsigned char data[3 * 4096];

    memset(data, 0xAA, sizeof data);
    int fd = open("f", O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "create f");
    CHECK(write_full(fd, data, sizeof data) == 0, "write 3 blocks");
    CHECK(flush_and_drop(fd) == 0, "fsync + drop cache");
    CHECK(ftruncate(fd, 5000) == 0, "truncate to 5000 (inside block 1)");
    CHECK(flush_and_drop(fd) == 0, "fsync + drop cache");
    /* Extending again must expose zeros, not the old tail of block 1. */
    CHECK(pwrite(fd, "Z", 1, 10000) == 1, "pwrite at 10000");
    CHECK_DIFF(size_diff(fd, 10001));
    CHECK_DIFF(range_diff(fd, 0, data, 5000));
    CHECK_DIFF(range_diff(fd, 5000, NULL, 5000));
    CHECK_DIFF(range_diff(fd, 10000, "Z", 1));
    CHECK(flush_and_drop(fd) == 0, "fsync + drop cache");
    CHECK_DIFF(range_diff(fd, 5000, NULL, 5000));
    CHECK(ftruncate(fd, 3 * 4096) == 0, "truncate up to 3 blocks");
    CHECK_DIFF(range_diff(fd, 10001, NULL, 3 * 4096 - 10001));
    CHECK(close(fd) == 0, "close");
    return PASS;
}

static enum result check_sparse_holes(void)
{
    const off_t size = 3 * MiB + 1;
    const size_t dense_len = 1 * MiB;
    unsigned char *dense = xmalloc(dense_len);
    struct stat st;

    int fd = open("sparse", O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "create sparse");
    CHECK(pwrite(fd, "A", 1, 0) == 1 && pwrite(fd, "B", 1, 1 * MiB) == 1 &&
          pwrite(fd, "C", 1, 3 * MiB) == 1, "pwrite islands");
    CHECK(flush_and_drop(fd) == 0, "fsync + drop cache");
    CHECK_DIFF(size_diff(fd, size));
    CHECK_DIFF(range_diff(fd, 0, "A", 1));
    CHECK_DIFF(range_diff(fd, 1, NULL, 1 * MiB - 1));
    CHECK_DIFF(range_diff(fd, 1 * MiB, "B", 1));
    CHECK_DIFF(range_diff(fd, 1 * MiB + 1, NULL, 2 * MiB - 1));
    CHECK_DIFF(range_diff(fd, 3 * MiB, "C", 1));
    CHECK(fstat(fd, &st) == 0, "fstat");
    CHECK(st.st_blocks * 512 < size, "sparse file of %lld bytes uses %lld blocks",
          (long long)size, (long long)st.st_blocks);
    CHECK(close(fd) == 0, "close");

    /* The converse: a dense file accounts for all of its data. */
    fill_pattern(dense, dense_len, 4);
    fd = open("dense", O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "create dense");
    CHECK(write_full(fd, dense, dense_len) == 0, "write 1 MiB");
    CHECK(fsync(fd) == 0, "fsync");
    CHECK(fstat(fd, &st) == 0, "fstat");
    CHECK(st.st_blocks * 512 >= (off_t)dense_len,
          "dense 1 MiB file reports only %lld blocks", (long long)st.st_blocks);
    CHECK(st.st_blksize > 0, "st_blksize is %ld", (long)st.st_blksize);
    CHECK(close(fd) == 0, "close");
    return PASS;
}

static enum result check_unlink_open_file(void)
{
    struct stat st;
    char buf[32];

    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    int fd = open("d/f", O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "create d/f");
    CHECK(write(fd, "before", 6) == 6, "write");
    CHECK(unlink("d/f") == 0, "unlink while open");
    CHECK_ERRNO(stat("d/f", &st), ENOENT);
    CHECK_ERRNO(open("d/f", O_RDONLY), ENOENT);
    CHECK(fstat(fd, &st) == 0, "fstat unlinked file");
    CHECK(st.st_nlink == 0, "nlink of unlinked open file is %lu, expected 0",
          (unsigned long)st.st_nlink);
    CHECK(pread(fd, buf, sizeof buf, 0) == 6 && memcmp(buf, "before", 6) == 0,
          "data of unlinked file not readable");
    CHECK(pwrite(fd, "after!", 6, 6) == 6, "write to unlinked file");
    CHECK(fsync(fd) == 0, "fsync unlinked file");
    CHECK(pread(fd, buf, sizeof buf, 0) == 12 && memcmp(buf, "beforeafter!", 12) == 0,
          "unlinked file reads back wrong data");
    /* No hidden placeholder may linger: the directory is empty and removable. */
    CHECK_DIFF(listing_diff("d", NULL, 0));
    CHECK(rmdir("d") == 0, "rmdir of the parent while the file is still open");
    CHECK(close(fd) == 0, "close releases the file");
    return PASS;
}

static enum result check_mmap_shared_coherence(void)
{
    char buf[16];

    int fd = open("f", O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "create f");
    CHECK(ftruncate(fd, 8192) == 0, "ftruncate");
    char *map = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    CHECK(map != MAP_FAILED, "mmap MAP_SHARED");
    memcpy(map + 4093, "mapped", 6);
    CHECK(msync(map, 8192, MS_SYNC) == 0, "msync");
    CHECK(pread(fd, buf, 6, 4093) == 6 && memcmp(buf, "mapped", 6) == 0,
          "read() does not see a store through the mapping");
    CHECK(pwrite(fd, "written", 7, 100) == 7, "pwrite");
    CHECK(memcmp(map + 100, "written", 7) == 0,
          "mapping does not see data written with write()");
    CHECK(munmap(map, 8192) == 0, "munmap");
    CHECK(close(fd) == 0, "close");

    fd = open("f", O_RDONLY);
    CHECK(fd >= 0, "reopen");
    CHECK_DIFF(range_diff(fd, 4093, "mapped", 6));
    CHECK_DIFF(range_diff(fd, 100, "written", 7));
    CHECK(close(fd) == 0, "close");
    return PASS;
}

/* ========================================================================
 * Checks: rename
 * ======================================================================== */

static enum result check_rename_simple(void)
{
    static const char *const names[] = { "b" };
    struct stat a, b;

    CHECK(write_str("a", "content") == 0, "write a");
    CHECK(stat("a", &a) == 0, "stat a");
    CHECK(rename("a", "b") == 0, "rename a b");
    CHECK_ERRNO(stat("a", &a), ENOENT);
    CHECK(stat("b", &b) == 0, "stat b");
    CHECK(b.st_ino == a.st_ino, "rename changed the inode number");
    CHECK_DIFF(content_is("b", "content"));
    CHECK_DIFF(listing_diff(".", names, ARRAY_LEN(names)));
    /* Renaming a file onto itself is a successful no-op. */
    CHECK(rename("b", "b") == 0, "rename b b");
    CHECK_DIFF(content_is("b", "content"));
    return PASS;
}

static enum result check_rename_replace_file(void)
{
    struct stat a, b, old;
    char buf[16];

    CHECK(write_str("a", "AAAA") == 0, "write a");
    CHECK(write_str("b", "BBBBBBBB") == 0, "write b");
    CHECK(stat("a", &a) == 0, "stat a");
    int old_fd = open("b", O_RDONLY);
    CHECK(old_fd >= 0, "open b");
    CHECK(rename("a", "b") == 0, "rename a over b");
    CHECK_ERRNO(stat("a", &a), ENOENT);
    CHECK(stat("b", &b) == 0, "stat b");
    CHECK(b.st_ino == a.st_ino, "b has inode %llu, expected the source's %llu",
          (unsigned long long)b.st_ino, (unsigned long long)a.st_ino);
    CHECK_DIFF(content_is("b", "AAAA"));
    /* The replaced file lives on, unlinked, for whoever still has it open. */
    CHECK(fstat(old_fd, &old) == 0, "fstat replaced file");
    CHECK(old.st_nlink == 0, "replaced file has nlink %lu, expected 0",
          (unsigned long)old.st_nlink);
    CHECK(pread(old_fd, buf, sizeof buf, 0) == 8 && memcmp(buf, "BBBBBBBB", 8) == 0,
          "replaced file's data not readable through the open descriptor");
    CHECK(close(old_fd) == 0, "close");
    return PASS;
}

static enum result check_rename_across_dirs(void)
{
    static const char *const in_d2[] = { "g" };
    struct stat a, b;

    CHECK(mkdir("d1", 0755) == 0 && mkdir("d2", 0755) == 0, "mkdir");
    CHECK(write_str("d1/f", "moving") == 0, "write d1/f");
    CHECK(stat("d1/f", &a) == 0, "stat");
    CHECK(rename("d1/f", "d2/g") == 0, "rename d1/f d2/g");
    CHECK(stat("d2/g", &b) == 0, "stat d2/g");
    CHECK(b.st_ino == a.st_ino, "inode changed");
    CHECK_DIFF(content_is("d2/g", "moving"));
    CHECK_DIFF(listing_diff("d1", NULL, 0));
    CHECK_DIFF(listing_diff("d2", in_d2, ARRAY_LEN(in_d2)));
    CHECK(rmdir("d1") == 0, "rmdir the emptied source directory");
    return PASS;
}

static enum result check_rename_dir_over_empty_dir(void)
{
    struct stat p1, p2, a, b, st;
    ino_t up;

    CHECK(mkdir("p1", 0755) == 0 && mkdir("p2", 0755) == 0, "mkdir parents");
    CHECK(mkdir("p1/a", 0755) == 0 && mkdir("p1/a/sub", 0755) == 0, "mkdir p1/a/sub");
    CHECK(write_str("p1/a/x", "x") == 0, "write p1/a/x");
    CHECK(mkdir("p2/b", 0755) == 0, "mkdir p2/b");
    CHECK(stat("p1/a", &a) == 0, "stat p1/a");
    CHECK(rename("p1/a", "p2/b") == 0, "rename directory over empty directory");
    CHECK_ERRNO(stat("p1/a", &st), ENOENT);
    CHECK(stat("p2/b", &b) == 0 && b.st_ino == a.st_ino, "p2/b is not the moved directory");
    CHECK_DIFF(content_is("p2/b/x", "x"));
    CHECK(stat("p2/b/sub", &st) == 0 && S_ISDIR(st.st_mode), "p2/b/sub missing");
    CHECK(stat("p1", &p1) == 0 && stat("p2", &p2) == 0, "stat parents");
    CHECK(p1.st_nlink == 2, "p1 nlink %lu, expected 2", (unsigned long)p1.st_nlink);
    CHECK(p2.st_nlink == 3, "p2 nlink %lu, expected 3", (unsigned long)p2.st_nlink);
    CHECK(b.st_nlink == 3, "moved dir nlink %lu, expected 3", (unsigned long)b.st_nlink);
    CHECK(dotdot_ino("p2/b", &up) == 0 && up == p2.st_ino,
          "readdir of p2/b reports '..' as inode %llu, expected p2's %llu",
          (unsigned long long)up, (unsigned long long)p2.st_ino);
    return PASS;
}

static enum result check_rename_dir_over_nonempty_dir(void)
{
    struct stat st;

    CHECK(mkdir("a", 0755) == 0 && mkdir("b", 0755) == 0, "mkdir");
    CHECK(write_str("b/x", "x") == 0, "write b/x");
    CHECK_ERRNO2(rename("a", "b"), ENOTEMPTY, EEXIST);
    CHECK(stat("a", &st) == 0 && S_ISDIR(st.st_mode), "a vanished");
    CHECK_DIFF(content_is("b/x", "x"));
    return PASS;
}

static enum result check_rename_file_over_dir(void)
{
    struct stat st;

    CHECK(write_str("f", "file") == 0, "write f");
    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    CHECK_ERRNO(rename("f", "d"), EISDIR);
    CHECK_DIFF(content_is("f", "file"));
    CHECK(stat("d", &st) == 0 && S_ISDIR(st.st_mode), "d is no longer a directory");
    return PASS;
}

static enum result check_rename_dir_over_file(void)
{
    struct stat st;

    CHECK(write_str("f", "file") == 0, "write f");
    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    CHECK_ERRNO(rename("d", "f"), ENOTDIR);
    CHECK_DIFF(content_is("f", "file"));
    CHECK(stat("d", &st) == 0 && S_ISDIR(st.st_mode), "d is no longer a directory");
    return PASS;
}

static enum result check_rename_dir_into_subtree(void)
{
    struct stat st;

    CHECK(mkdir("a", 0755) == 0 && mkdir("a/b", 0755) == 0, "mkdir a/b");
    CHECK_ERRNO(rename("a", "a/b/c"), EINVAL);
    CHECK_ERRNO(rename("a", "a/c"), EINVAL);
    CHECK(stat("a/b", &st) == 0 && S_ISDIR(st.st_mode), "a/b vanished");
    CHECK_ERRNO(stat("a/c", &st), ENOENT);
    CHECK_ERRNO(stat("a/b/c", &st), ENOENT);
    return PASS;
}

static enum result check_renameat2_noreplace(void)
{
    struct stat st;

    CHECK(write_str("a", "AAA") == 0 && write_str("b", "BBB") == 0, "write a, b");
    CHECK_ERRNO(rename2("a", "b", RENAME_NOREPLACE), EEXIST);
    CHECK_DIFF(content_is("a", "AAA"));
    CHECK_DIFF(content_is("b", "BBB"));
    CHECK(rename2("a", "c", RENAME_NOREPLACE) == 0, "RENAME_NOREPLACE onto a free name");
    CHECK_ERRNO(stat("a", &st), ENOENT);
    CHECK_DIFF(content_is("c", "AAA"));
    return PASS;
}

static enum result check_rename_exchange_files(void)
{
    struct stat a0, b0, a1, b1;

    CHECK(write_str("a", "AAA") == 0 && write_str("b", "BB") == 0, "write a, b");
    CHECK(stat("a", &a0) == 0 && stat("b", &b0) == 0, "stat");
    CHECK(rename2("a", "b", RENAME_EXCHANGE) == 0, "RENAME_EXCHANGE a b");
    CHECK_DIFF(content_is("a", "BB"));
    CHECK_DIFF(content_is("b", "AAA"));
    CHECK(stat("a", &a1) == 0 && stat("b", &b1) == 0, "stat");
    CHECK(a1.st_ino == b0.st_ino && b1.st_ino == a0.st_ino, "inodes were not swapped");
    return PASS;
}

static enum result check_rename_exchange_file_dir(void)
{
    struct stat p1, p2, st;
    ino_t up;

    CHECK(mkdir("p1", 0755) == 0 && mkdir("p2", 0755) == 0, "mkdir parents");
    CHECK(write_str("p1/f", "file") == 0, "write p1/f");
    CHECK(mkdir("p2/d", 0755) == 0, "mkdir p2/d");
    CHECK(write_str("p2/d/inner", "inner") == 0, "write p2/d/inner");
    CHECK(rename2("p1/f", "p2/d", RENAME_EXCHANGE) == 0, "RENAME_EXCHANGE file <-> dir");
    CHECK(lstat("p1/f", &st) == 0 && S_ISDIR(st.st_mode), "p1/f is not a directory now");
    CHECK_DIFF(content_is("p1/f/inner", "inner"));
    CHECK(lstat("p2/d", &st) == 0 && S_ISREG(st.st_mode), "p2/d is not a file now");
    CHECK_DIFF(content_is("p2/d", "file"));
    /* The directory changed parents, so link counts and '..' follow it. */
    CHECK(stat("p1", &p1) == 0 && stat("p2", &p2) == 0, "stat parents");
    CHECK(p1.st_nlink == 3, "p1 nlink %lu, expected 3", (unsigned long)p1.st_nlink);
    CHECK(p2.st_nlink == 2, "p2 nlink %lu, expected 2", (unsigned long)p2.st_nlink);
    CHECK(dotdot_ino("p1/f", &up) == 0 && up == p1.st_ino,
          "readdir of p1/f reports '..' as inode %llu, expected p1's %llu",
          (unsigned long long)up, (unsigned long long)p1.st_ino);
    return PASS;
}

static enum result check_rename_exchange_missing(void)
{
    struct stat st;

    CHECK(write_str("a", "AAA") == 0, "write a");
    CHECK_ERRNO(rename2("a", "missing", RENAME_EXCHANGE), ENOENT);
    CHECK_ERRNO(rename2("missing", "a", RENAME_EXCHANGE), ENOENT);
    CHECK_DIFF(content_is("a", "AAA"));
    CHECK_ERRNO(stat("missing", &st), ENOENT);
    return PASS;
}

static enum result check_rename_dir_updates_dotdot(void)
{
    struct stat p1, p2, d, sub, st;
    ino_t up;

    CHECK(mkdir("p1", 0755) == 0 && mkdir("p2", 0755) == 0, "mkdir parents");
    CHECK(mkdir("p1/d", 0755) == 0 && mkdir("p1/d/sub", 0755) == 0, "mkdir p1/d/sub");
    CHECK(stat("p1", &p1) == 0 && p1.st_nlink == 3, "p1 nlink %lu before, expected 3",
          (unsigned long)p1.st_nlink);

    CHECK(rename("p1/d", "p2/d") == 0, "rename p1/d p2/d");
    CHECK(stat("p1", &p1) == 0 && stat("p2", &p2) == 0 && stat("p2/d", &d) == 0,
          "stat after move");
    CHECK(p1.st_nlink == 2, "old parent nlink %lu, expected 2", (unsigned long)p1.st_nlink);
    CHECK(p2.st_nlink == 3, "new parent nlink %lu, expected 3", (unsigned long)p2.st_nlink);
    CHECK(d.st_nlink == 3, "moved dir nlink %lu, expected 3", (unsigned long)d.st_nlink);
    CHECK(stat("p2/d/..", &st) == 0 && st.st_ino == p2.st_ino, "stat p2/d/.. is not p2");
    CHECK(dotdot_ino("p2/d", &up) == 0 && up == p2.st_ino,
          "readdir of p2/d reports '..' as inode %llu, expected %llu",
          (unsigned long long)up, (unsigned long long)p2.st_ino);
    CHECK(stat("p2/d/sub/..", &st) == 0 && st.st_ino == d.st_ino,
          "stat p2/d/sub/.. is not p2/d");

    /* Move the grandchild up to the first parent. */
    CHECK(rename("p2/d/sub", "p1/sub") == 0, "rename p2/d/sub p1/sub");
    CHECK(stat("p1", &p1) == 0 && stat("p2/d", &d) == 0 && stat("p1/sub", &sub) == 0,
          "stat");
    CHECK(p1.st_nlink == 3, "p1 nlink %lu, expected 3", (unsigned long)p1.st_nlink);
    CHECK(d.st_nlink == 2, "p2/d nlink %lu, expected 2", (unsigned long)d.st_nlink);
    CHECK(dotdot_ino("p1/sub", &up) == 0 && up == p1.st_ino,
          "readdir of p1/sub reports '..' as inode %llu, expected %llu",
          (unsigned long long)up, (unsigned long long)p1.st_ino);

    /* Within one parent nothing changes. */
    CHECK(rename("p1/sub", "p1/sub2") == 0, "rename p1/sub p1/sub2");
    CHECK(stat("p1", &p1) == 0 && p1.st_nlink == 3, "p1 nlink %lu after same-dir rename",
          (unsigned long)p1.st_nlink);
    CHECK(dotdot_ino("p1/sub2", &up) == 0 && up == p1.st_ino, "'..' of p1/sub2 wrong");
    return PASS;
}

/* ========================================================================
 * Checks: directories
 * ======================================================================== */

static enum result check_mkdir_eexist(void)
{
    struct stat st;

    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    CHECK(stat("d", &st) == 0, "stat d");
    CHECK(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0755,
          "mode 0%o, expected directory 0755", (unsigned)st.st_mode);
    CHECK(st.st_nlink == 2, "new dir nlink %lu, expected 2", (unsigned long)st.st_nlink);
    CHECK(st.st_uid == geteuid(), "owner %u", (unsigned)st.st_uid);
    CHECK_ERRNO(mkdir("d", 0755), EEXIST);
    CHECK(write_str("f", "x") == 0, "write f");
    CHECK_ERRNO(mkdir("f", 0755), EEXIST);
    CHECK(symlink("d", "l") == 0, "symlink");
    CHECK_ERRNO(mkdir("l", 0755), EEXIST);
    CHECK_DIFF(listing_diff("d", NULL, 0));
    return PASS;
}

static enum result check_dir_nlink(void)
{
    struct stat st;

    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    CHECK(mkdir("d/s1", 0755) == 0 && mkdir("d/s2", 0755) == 0, "mkdir subdirs");
    CHECK(write_str("d/f", "x") == 0 && symlink("f", "d/l") == 0, "file + symlink");
    CHECK(stat("d", &st) == 0 && st.st_nlink == 4,
          "nlink %lu with 2 subdirs, expected 4", (unsigned long)st.st_nlink);
    CHECK(rmdir("d/s1") == 0, "rmdir d/s1");
    CHECK(stat("d", &st) == 0 && st.st_nlink == 3,
          "nlink %lu after rmdir, expected 3", (unsigned long)st.st_nlink);
    CHECK(rename("d/s2", "d/s3") == 0, "rename inside d");
    CHECK(stat("d", &st) == 0 && st.st_nlink == 3,
          "nlink %lu after same-dir rename, expected 3", (unsigned long)st.st_nlink);
    CHECK(rename("d/s3", "s3") == 0, "rename out of d");
    CHECK(stat("d", &st) == 0 && st.st_nlink == 2,
          "nlink %lu after moving the subdir out, expected 2", (unsigned long)st.st_nlink);
    CHECK(stat(".", &st) == 0 && st.st_nlink == 4,
          "check dir nlink %lu with d and s3, expected 4", (unsigned long)st.st_nlink);
    return PASS;
}

static enum result check_rmdir_nonempty(void)
{
    struct stat st;

    CHECK(mkdir("d", 0755) == 0 && write_str("d/f", "x") == 0, "setup");
    CHECK_ERRNO(rmdir("d"), ENOTEMPTY);
    CHECK(mkdir("e", 0755) == 0 && mkdir("e/sub", 0755) == 0, "setup e");
    CHECK_ERRNO(rmdir("e"), ENOTEMPTY);
    CHECK(stat("d/f", &st) == 0 && stat("e/sub", &st) == 0, "contents vanished");
    CHECK(unlink("d/f") == 0 && rmdir("d") == 0, "rmdir once emptied");
    CHECK_ERRNO(stat("d", &st), ENOENT);
    return PASS;
}

static enum result check_rmdir_file_enotdir(void)
{
    CHECK(write_str("f", "x") == 0, "write f");
    CHECK(symlink(".", "l") == 0, "symlink to a directory");
    CHECK_ERRNO(rmdir("f"), ENOTDIR);
    CHECK_ERRNO(rmdir("l"), ENOTDIR);
    CHECK_DIFF(content_is("f", "x"));
    return PASS;
}

static enum result check_unlink_dir_eisdir(void)
{
    struct stat st;

    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    CHECK_ERRNO(unlink("d"), EISDIR);
    CHECK(stat("d", &st) == 0 && S_ISDIR(st.st_mode), "d vanished");
    return PASS;
}

static enum result check_rmdir_dot_einval(void)
{
    struct stat st;

    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    CHECK_ERRNO(rmdir("d/."), EINVAL);
    CHECK_ERRNO(rmdir("d/.."), ENOTEMPTY);
    CHECK(stat("d", &st) == 0, "d vanished");
    return PASS;
}

static enum result check_readdir_exact(void)
{
    static const struct { const char *name; unsigned char type; } want[] = {
        { ".", DT_DIR }, { "..", DT_DIR }, { "file", DT_REG }, { "dir", DT_DIR },
        { "link", DT_LNK }, { "fifo", DT_FIFO }, { "sock", DT_SOCK },
    };
    struct entry *v;
    const struct entry *e = NULL;

    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    CHECK_DIFF(listing_diff("d", NULL, 0));
    CHECK(write_str("d/file", "x") == 0, "file");
    CHECK(mkdir("d/dir", 0755) == 0, "dir");
    CHECK(symlink("file", "d/link") == 0, "symlink");
    CHECK(mkfifo("d/fifo", 0644) == 0, "fifo");
    CHECK(mknod("d/sock", S_IFSOCK | 0644, 0) == 0, "socket");

    ssize_t n = list_dir("d", &v);
    CHECK(n >= 0, "readdir d");
    CHECK((size_t)n == ARRAY_LEN(want), "%zd entries, expected %zu", n, ARRAY_LEN(want));
    for (size_t i = 0; i < ARRAY_LEN(want); i++) {
        size_t c = count_name(v, (size_t)n, want[i].name, &e);
        CHECK(c == 1, "'%s' listed %zu times", want[i].name, c);
        CHECK(e->type == want[i].type, "'%s' has d_type %u, expected %u",
              want[i].name, e->type, want[i].type);
    }
    return PASS;
}

static enum result check_readdir_d_ino(void)
{
    struct entry *v;
    struct stat st, self, parent;
    char path[300];

    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    CHECK(write_str("d/file", "x") == 0 && mkdir("d/dir", 0755) == 0 &&
          symlink("file", "d/link") == 0, "populate d");
    CHECK(link("d/file", "d/hard") == 0, "hard link");
    CHECK(stat("d", &self) == 0 && stat(".", &parent) == 0, "stat");

    ssize_t n = list_dir("d", &v);
    CHECK(n == 6, "%zd entries, expected 6", n);
    for (ssize_t i = 0; i < n; i++) {
        ino_t want;
        if (strcmp(v[i].name, ".") == 0) {
            want = self.st_ino;
        } else if (strcmp(v[i].name, "..") == 0) {
            want = parent.st_ino;
        } else {
            snprintf(path, sizeof path, "d/%s", v[i].name);
            CHECK(lstat(path, &st) == 0, "lstat %s", path);
            want = st.st_ino;
        }
        CHECK(v[i].ino == want, "d_ino of '%s' is %llu, but stat says %llu",
              v[i].name, (unsigned long long)v[i].ino, (unsigned long long)want);
    }
    return PASS;
}

static enum result check_readdir_3000(void)
{
    enum { N = 3000 };
    unsigned char *seen = xcalloc(N, 1);
    struct entry *v;
    char name[128];
    int dots = 0;

    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    /* Varying name lengths make entries pack unevenly into directory blocks. */
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "d/e%04d-%.*s", i, i % 61,
                 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        CHECK(touch(name) == 0, "create %s", name);
    }
    ssize_t n = list_dir("d", &v);
    CHECK(n >= 0, "readdir");
    for (ssize_t i = 0; i < n; i++) {
        int idx;
        if (strcmp(v[i].name, ".") == 0 || strcmp(v[i].name, "..") == 0) {
            dots++;
            continue;
        }
        CHECK(sscanf(v[i].name, "e%4d-", &idx) == 1 && idx >= 0 && idx < N,
              "unexpected name '%.100s'", v[i].name);
        CHECK(seen[idx] == 0, "'%.100s' returned twice", v[i].name);
        seen[idx] = 1;
    }
    CHECK(dots == 2, "'.'/'..' returned %d times in total", dots);
    for (int i = 0; i < N; i++)
        CHECK(seen[i], "entry e%04d never returned", i);
    CHECK(n == N + 2, "%zd entries, expected %d", n, N + 2);
    return PASS;
}

/* The kernel's getdents64 record; glibc's struct dirent differs on some ABIs. */
struct kdirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static enum result check_readdir_stable_offsets(void)
{
    enum { N_OLD = 500, N_FIRST = 100, N_CHURN = 50 };
    unsigned char seen_old[N_OLD] = { 0 }, deleted[N_OLD] = { 0 };
    unsigned char seen_new[N_CHURN] = { 0 };
    /* Small buffer: each getdents64 call resumes from the fs's own offset. */
    _Alignas(8) char buf[1024];
    char name[64];
    int dots = 0, total = 0;
    bool churned = false;

    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    for (int i = 0; i < N_OLD; i++) {
        snprintf(name, sizeof name, "d/old-%03d", i);
        CHECK(touch(name) == 0, "create %s", name);
    }
    int fd = open("d", O_RDONLY | O_DIRECTORY);
    CHECK(fd >= 0, "open d");
    for (;;) {
        if (!churned && total >= N_FIRST) {
            int ndel = 0;
            /* Delete every other entry not yet returned, then add new names. */
            for (int i = 0; i < N_OLD && ndel < N_CHURN; i++) {
                if (seen_old[i] || i % 2 == 0)
                    continue;
                snprintf(name, sizeof name, "d/old-%03d", i);
                CHECK(unlink(name) == 0, "unlink %s mid-readdir", name);
                deleted[i] = 1;
                ndel++;
            }
            CHECK(ndel == N_CHURN, "only %d unread entries to delete", ndel);
            for (int i = 0; i < N_CHURN; i++) {
                snprintf(name, sizeof name, "d/new-%03d", i);
                CHECK(touch(name) == 0, "create %s mid-readdir", name);
            }
            churned = true;
        }
        long nread = syscall(SYS_getdents64, fd, buf, sizeof buf);
        CHECK(nread >= 0, "getdents64");
        if (nread == 0)
            break;
        for (long pos = 0; pos < nread;) {
            struct kdirent64 *de = (struct kdirent64 *)(buf + pos);
            int idx;
            pos += de->d_reclen;
            total++;
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
                dots++;
                CHECK(dots <= 2, "'.'/'..' returned again");
            } else if (sscanf(de->d_name, "old-%3d", &idx) == 1 && idx >= 0 && idx < N_OLD) {
                CHECK(!seen_old[idx], "'%s' returned twice", de->d_name);
                seen_old[idx] = 1;
            } else if (sscanf(de->d_name, "new-%3d", &idx) == 1 && idx >= 0 && idx < N_CHURN) {
                CHECK(!seen_new[idx], "'%s' returned twice", de->d_name);
                seen_new[idx] = 1;
            } else {
                CHECK(false, "unexpected entry '%.100s'", de->d_name);
            }
        }
    }
    CHECK(churned, "directory ended after %d entries", total);
    CHECK(dots == 2, "'.'/'..' returned %d times", dots);
    for (int i = 0; i < N_OLD; i++)
        CHECK(deleted[i] || seen_old[i], "old-%03d existed throughout but was never returned", i);
    CHECK(close(fd) == 0, "close");
    return PASS;
}

static enum result check_seekdir_telldir(void)
{
    enum { N = 200 };
    static long pos[N + 2];
    static char names[N + 2][32];
    char name[64];
    struct dirent *de;
    int k = 0;

    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "d/entry-%03d", i);
        CHECK(touch(name) == 0, "create %s", name);
    }
    DIR *dp = opendir("d");
    CHECK(dp != NULL, "opendir");
    for (;;) {
        long p = telldir(dp);
        errno = 0;
        de = readdir(dp);
        if (!de)
            break;
        CHECK(k < N + 2, "more than %d entries", N + 2);
        pos[k] = p;
        snprintf(names[k], sizeof names[k], "%.31s", de->d_name);
        k++;
    }
    CHECK(errno == 0, "readdir");
    CHECK(k == N + 2, "%d entries, expected %d", k, N + 2);

    /* Seek back to positions in a scrambled order; each must resume exactly. */
    for (int i = k - 1; i >= 0; i -= 7) {
        seekdir(dp, pos[i]);
        de = readdir(dp);
        CHECK(de != NULL && strcmp(de->d_name, names[i]) == 0,
              "after seekdir to entry %d got '%s', expected '%s'", i,
              de ? de->d_name : "(end)", names[i]);
        de = readdir(dp);
        if (i + 1 < k)
            CHECK(de != NULL && strcmp(de->d_name, names[i + 1]) == 0,
                  "entry after #%d is '%s', expected '%s'", i,
                  de ? de->d_name : "(end)", names[i + 1]);
    }
    seekdir(dp, pos[k / 2]);
    long again = telldir(dp);
    de = readdir(dp);
    CHECK(de != NULL && strcmp(de->d_name, names[k / 2]) == 0,
          "telldir right after seekdir does not round-trip");
    seekdir(dp, again);
    de = readdir(dp);
    CHECK(de != NULL && strcmp(de->d_name, names[k / 2]) == 0,
          "seekdir(telldir()) does not round-trip");
    rewinddir(dp);
    de = readdir(dp);
    CHECK(de != NULL && strcmp(de->d_name, names[0]) == 0, "rewinddir");
    CHECK(closedir(dp) == 0, "closedir");
    return PASS;
}

/* ========================================================================
 * Checks: hard links and symlinks
 * ======================================================================== */

static enum result check_hardlink(void)
{
    struct stat a, b;

    CHECK(write_str("a", "data") == 0, "write a");
    CHECK(link("a", "b") == 0, "link a b");
    CHECK(stat("a", &a) == 0 && stat("b", &b) == 0, "stat");
    CHECK(a.st_ino == b.st_ino, "links have inodes %llu and %llu",
          (unsigned long long)a.st_ino, (unsigned long long)b.st_ino);
    CHECK(a.st_nlink == 2 && b.st_nlink == 2, "nlink %lu/%lu, expected 2",
          (unsigned long)a.st_nlink, (unsigned long)b.st_nlink);

    int fd = open("b", O_WRONLY | O_APPEND);
    CHECK(fd >= 0, "open b");
    CHECK(write(fd, "more", 4) == 4, "append through b");
    CHECK(close(fd) == 0, "close");
    CHECK_DIFF(content_is("a", "datamore"));

    CHECK(mkdir("d", 0755) == 0 && link("b", "d/c") == 0, "link into a subdirectory");
    CHECK(stat("a", &a) == 0 && a.st_nlink == 3, "nlink %lu, expected 3",
          (unsigned long)a.st_nlink);
    CHECK(unlink("a") == 0, "unlink a");
    CHECK_ERRNO(stat("a", &a), ENOENT);
    CHECK(stat("b", &b) == 0 && b.st_nlink == 2, "nlink %lu after unlink, expected 2",
          (unsigned long)b.st_nlink);
    CHECK_DIFF(content_is("b", "datamore"));
    CHECK(unlink("d/c") == 0, "unlink d/c");
    CHECK(stat("b", &b) == 0 && b.st_nlink == 1, "nlink %lu, expected 1",
          (unsigned long)b.st_nlink);
    CHECK_DIFF(content_is("b", "datamore"));
    return PASS;
}

static enum result check_link_dir_eperm(void)
{
    struct stat st;

    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    CHECK_ERRNO(link("d", "e"), EPERM);
    CHECK_ERRNO(stat("e", &st), ENOENT);
    CHECK(stat("d", &st) == 0 && st.st_nlink == 2, "d nlink %lu", (unsigned long)st.st_nlink);
    return PASS;
}

static enum result check_link_existing_eexist(void)
{
    struct stat st;

    CHECK(write_str("a", "A") == 0 && write_str("b", "B") == 0, "write a, b");
    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    CHECK_ERRNO(link("a", "b"), EEXIST);
    CHECK_ERRNO(link("a", "d"), EEXIST);
    CHECK_DIFF(content_is("b", "B"));
    CHECK(stat("a", &st) == 0 && st.st_nlink == 1, "a nlink %lu, expected 1",
          (unsigned long)st.st_nlink);
    return PASS;
}

static enum result check_symlink_basic(void)
{
    static const char odd[] = "some/relative/../path with spaces/and\ttab";
    struct stat f, l, st;
    char buf[256];

    CHECK(write_str("f", "target data") == 0, "write f");
    CHECK(symlink("f", "l") == 0, "symlink f l");
    CHECK(readlink("l", buf, sizeof buf) == 1 && buf[0] == 'f', "readlink l");
    CHECK(lstat("l", &l) == 0, "lstat l");
    CHECK(S_ISLNK(l.st_mode) && l.st_size == 1, "lstat: mode 0%o size %lld",
          (unsigned)l.st_mode, (long long)l.st_size);
    CHECK(stat("f", &f) == 0 && stat("l", &st) == 0, "stat");
    CHECK(S_ISREG(st.st_mode) && st.st_ino == f.st_ino, "stat does not follow the link");
    CHECK_DIFF(content_is("l", "target data"));
    CHECK_ERRNO(symlink("f", "l"), EEXIST);
    CHECK_ERRNO(readlink("f", buf, sizeof buf), EINVAL);

    CHECK(symlink(odd, "odd") == 0, "symlink with odd target");
    ssize_t n = readlink("odd", buf, sizeof buf);
    CHECK(n == (ssize_t)strlen(odd) && memcmp(buf, odd, (size_t)n) == 0,
          "readlink returned %zd bytes, expected '%s'", n, odd);
    /* A short buffer truncates silently and without a terminating NUL. */
    memset(buf, '#', sizeof buf);
    CHECK(readlink("odd", buf, 4) == 4 && memcmp(buf, "some#", 5) == 0,
          "readlink into a 4-byte buffer");
    return PASS;
}

static enum result check_symlink_4000(void)
{
    enum { LEN = 4000 };
    static char target[LEN + 1], buf[8192];
    struct stat st;
    size_t len = 0;

    /* Components stay below NAME_MAX; only the whole target is long. */
    while (len < LEN) {
        int n = snprintf(target + len, LEN + 1 - len, "component-%04zu/", len);
        len += (size_t)n < LEN - len ? (size_t)n : LEN - len;
    }
    target[LEN] = '\0';
    CHECK(strlen(target) == LEN, "internal: target length %zu", strlen(target));
    CHECK(symlink(target, "long") == 0, "symlink with a %d-byte target", LEN);
    ssize_t n = readlink("long", buf, 8192);
    CHECK(n == LEN, "readlink returned %zd bytes, expected %d", n, LEN);
    CHECK(memcmp(buf, target, LEN) == 0, "readlink content differs");
    CHECK(lstat("long", &st) == 0 && S_ISLNK(st.st_mode) && st.st_size == LEN,
          "lstat size %lld, expected %d", (long long)st.st_size, LEN);
    return PASS;
}

static enum result check_symlink_dangling(void)
{
    struct stat st;
    char buf[64];

    CHECK(symlink("nowhere", "l") == 0, "symlink to a missing target");
    CHECK_ERRNO(stat("l", &st), ENOENT);
    CHECK_ERRNO(open("l", O_RDONLY), ENOENT);
    CHECK(lstat("l", &st) == 0 && S_ISLNK(st.st_mode), "lstat");
    CHECK(readlink("l", buf, sizeof buf) == 7 && memcmp(buf, "nowhere", 7) == 0,
          "readlink");
    /* Creating through a dangling link creates its target (Linux behaviour). */
    int fd = open("l", O_CREAT | O_WRONLY, 0644);
    CHECK(fd >= 0, "O_CREAT through the dangling link");
    CHECK(write(fd, "made", 4) == 4 && close(fd) == 0, "write");
    CHECK_DIFF(content_is("nowhere", "made"));
    CHECK(stat("l", &st) == 0 && S_ISREG(st.st_mode), "link no longer dangles");
    return PASS;
}

/* ========================================================================
 * Checks: special files
 * ======================================================================== */

static enum result check_mknod_fifo(void)
{
    struct stat st;

    CHECK(mknod("p", S_IFIFO | 0640, 0) == 0, "mknod S_IFIFO");
    CHECK(lstat("p", &st) == 0, "lstat");
    CHECK(S_ISFIFO(st.st_mode) && (st.st_mode & 07777) == 0640,
          "mode 0%o, expected fifo 0640", (unsigned)st.st_mode);
    CHECK(st.st_size == 0, "size %lld", (long long)st.st_size);
    CHECK_ERRNO(mknod("p", S_IFIFO | 0640, 0), EEXIST);
    return PASS;
}

static enum result check_mknod_socket(void)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct stat st;

    CHECK(mknod("s", S_IFSOCK | 0600, 0) == 0, "mknod S_IFSOCK");
    CHECK(lstat("s", &st) == 0, "lstat");
    CHECK(S_ISSOCK(st.st_mode) && (st.st_mode & 07777) == 0600,
          "mode 0%o, expected socket 0600", (unsigned)st.st_mode);

    /* bind() creates the socket node through the filesystem too; connect finds it. */
    int srv = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(srv >= 0, "socket");
    strcpy(sa.sun_path, "bound.sock");
    CHECK(bind(srv, (struct sockaddr *)&sa, sizeof sa) == 0, "bind");
    CHECK(listen(srv, 1) == 0, "listen");
    CHECK(lstat("bound.sock", &st) == 0 && S_ISSOCK(st.st_mode), "bound socket type");
    int cli = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(cli >= 0, "socket");
    CHECK(connect(cli, (struct sockaddr *)&sa, sizeof sa) == 0, "connect");
    CHECK(close(cli) == 0 && close(srv) == 0, "close");
    return PASS;
}

static enum result check_mkfifo(void)
{
    struct stat st;
    char buf[8];

    CHECK(mkfifo("q", 0600) == 0, "mkfifo");
    CHECK(lstat("q", &st) == 0 && S_ISFIFO(st.st_mode) && (st.st_mode & 07777) == 0600,
          "mode 0%o, expected fifo 0600", (unsigned)st.st_mode);
    /* O_RDWR keeps the open from blocking; data passes through the pipe. */
    int fd = open("q", O_RDWR | O_NONBLOCK);
    CHECK(fd >= 0, "open fifo");
    CHECK(write(fd, "ping", 4) == 4, "write fifo");
    CHECK(read(fd, buf, sizeof buf) == 4 && memcmp(buf, "ping", 4) == 0, "read fifo");
    CHECK(close(fd) == 0, "close");
    CHECK(lstat("q", &st) == 0 && st.st_size == 0, "fifo size %lld", (long long)st.st_size);
    return PASS;
}

/* ========================================================================
 * Checks: ownership, permissions, timestamps
 * ======================================================================== */

static enum result check_chmod_bits(void)
{
    static const mode_t file_modes[] = { 04755, 02755, 06711, 0600, 0, 07777, 0644 };
    struct stat st;

    CHECK(write_str("f", "x") == 0, "write f");
    for (size_t i = 0; i < ARRAY_LEN(file_modes); i++) {
        CHECK(chmod("f", file_modes[i]) == 0, "chmod 0%o", (unsigned)file_modes[i]);
        CHECK(stat("f", &st) == 0 && S_ISREG(st.st_mode) &&
              (st.st_mode & 07777) == file_modes[i],
              "mode 0%o after chmod 0%o", (unsigned)st.st_mode, (unsigned)file_modes[i]);
    }
    int fd = open("f", O_RDONLY);
    CHECK(fd >= 0, "open");
    CHECK(fchmod(fd, 0444) == 0, "fchmod");
    CHECK(fstat(fd, &st) == 0 && (st.st_mode & 07777) == 0444, "mode 0%o after fchmod 0444",
          (unsigned)st.st_mode);
    CHECK(close(fd) == 0, "close");

    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    CHECK(chmod("d", 01777) == 0, "chmod dir 01777");
    CHECK(stat("d", &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 01777,
          "dir mode 0%o, expected sticky 01777", (unsigned)st.st_mode);
    CHECK(chmod("d", 0700) == 0 && stat("d", &st) == 0 && (st.st_mode & 07777) == 0700,
          "dir mode 0%o, expected 0700", (unsigned)st.st_mode);
    return PASS;
}

static enum result check_chown(void)
{
    struct stat st;

    SKIP_UNLESS(geteuid() == 0, "not root");
    CHECK(write_str("f", "x") == 0, "write f");
    CHECK(chown("f", 1234, 5678) == 0, "chown 1234:5678");
    CHECK(stat("f", &st) == 0 && st.st_uid == 1234 && st.st_gid == 5678,
          "owner %u:%u, expected 1234:5678", (unsigned)st.st_uid, (unsigned)st.st_gid);
    CHECK(chown("f", (uid_t)-1, 4321) == 0, "chown -1:4321");
    CHECK(stat("f", &st) == 0 && st.st_uid == 1234 && st.st_gid == 4321,
          "owner %u:%u, expected 1234:4321", (unsigned)st.st_uid, (unsigned)st.st_gid);

    CHECK(symlink("f", "l") == 0, "symlink");
    CHECK(lchown("l", 42, 43) == 0, "lchown");
    CHECK(lstat("l", &st) == 0 && st.st_uid == 42 && st.st_gid == 43,
          "link owner %u:%u, expected 42:43", (unsigned)st.st_uid, (unsigned)st.st_gid);
    CHECK(stat("f", &st) == 0 && st.st_uid == 1234 && st.st_gid == 4321,
          "lchown changed the target to %u:%u", (unsigned)st.st_uid, (unsigned)st.st_gid);

    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    int fd = open("d", O_RDONLY | O_DIRECTORY);
    CHECK(fd >= 0, "open d");
    CHECK(fchown(fd, 7, 8) == 0, "fchown directory");
    CHECK(fstat(fd, &st) == 0 && st.st_uid == 7 && st.st_gid == 8,
          "dir owner %u:%u, expected 7:8", (unsigned)st.st_uid, (unsigned)st.st_gid);
    CHECK(close(fd) == 0, "close");
    return PASS;
}

static enum result check_setgid_dir_inherit(void)
{
    struct stat st;

    SKIP_UNLESS(geteuid() == 0, "not root");
    CHECK(mkdir("d", 0775) == 0, "mkdir d");
    CHECK(chown("d", (uid_t)-1, 5678) == 0, "chgrp d");
    CHECK(chmod("d", 02775) == 0, "chmod g+s d");
    CHECK(write_str("d/f", "x") == 0, "create d/f");
    CHECK(stat("d/f", &st) == 0 && st.st_gid == 5678,
          "file in setgid dir has group %u, expected 5678", (unsigned)st.st_gid);
    CHECK(mkdir("d/sub", 0755) == 0, "mkdir d/sub");
    CHECK(stat("d/sub", &st) == 0 && st.st_gid == 5678 && (st.st_mode & S_ISGID),
          "subdir of setgid dir: group %u mode 0%o, expected 5678 with setgid",
          (unsigned)st.st_gid, (unsigned)st.st_mode);
    return PASS;
}

static enum result check_utimens_nsec(void)
{
    const struct timespec ts[2] = { { 1234567890, 123456789 }, { 1111111111, 987654321 } };
    const struct timespec ts2[2] = { { 1500000000, 1 }, { 1600000000, 999999999 } };
    const struct timespec lts[2] = { { 1300000000, 500 }, { 1300000001, 600 } };
    struct stat st;

    CHECK(write_str("f", "x") == 0, "write f");
    CHECK(utimensat(AT_FDCWD, "f", ts, 0) == 0, "utimensat");
    CHECK(stat("f", &st) == 0, "stat");
    CHECK(ts_eq(st.st_atim, ts[0]), "atime " TS_FMT ", expected " TS_FMT,
          TS_ARG(st.st_atim), TS_ARG(ts[0]));
    CHECK(ts_eq(st.st_mtim, ts[1]), "mtime " TS_FMT ", expected " TS_FMT,
          TS_ARG(st.st_mtim), TS_ARG(ts[1]));

    int fd = open("f", O_WRONLY);
    CHECK(fd >= 0, "open");
    CHECK(futimens(fd, ts2) == 0, "futimens");
    CHECK(fstat(fd, &st) == 0, "fstat");
    CHECK(ts_eq(st.st_atim, ts2[0]) && ts_eq(st.st_mtim, ts2[1]),
          "after futimens atime " TS_FMT " mtime " TS_FMT, TS_ARG(st.st_atim),
          TS_ARG(st.st_mtim));
    CHECK(close(fd) == 0, "close");

    /* AT_SYMLINK_NOFOLLOW stamps the link itself and leaves the target alone. */
    CHECK(symlink("f", "l") == 0, "symlink");
    CHECK(utimensat(AT_FDCWD, "l", lts, AT_SYMLINK_NOFOLLOW) == 0, "utimensat nofollow");
    CHECK(lstat("l", &st) == 0 && ts_eq(st.st_mtim, lts[1]),
          "link mtime " TS_FMT ", expected " TS_FMT, TS_ARG(st.st_mtim), TS_ARG(lts[1]));
    CHECK(stat("f", &st) == 0 && ts_eq(st.st_mtim, ts2[1]),
          "target mtime changed to " TS_FMT, TS_ARG(st.st_mtim));
    return PASS;
}

static enum result check_utimens_now_omit(void)
{
    const struct timespec old[2] = { { 1000000000, 5 }, { 1000000000, 7 } };
    const struct timespec now_omit[2] = { { 0, UTIME_NOW }, { 0, UTIME_OMIT } };
    const struct timespec omit_now[2] = { { 0, UTIME_OMIT }, { 0, UTIME_NOW } };
    struct stat st, prev;

    CHECK(write_str("f", "x") == 0, "write f");
    CHECK(utimensat(AT_FDCWD, "f", old, 0) == 0, "set old times");

    time_t t0 = now_sec();
    CHECK(utimensat(AT_FDCWD, "f", now_omit, 0) == 0, "atime=NOW mtime=OMIT");
    time_t t1 = now_sec();
    CHECK(stat("f", &st) == 0, "stat");
    CHECK(ts_near(st.st_atim, t0, t1), "atime " TS_FMT " is not now (%lld)",
          TS_ARG(st.st_atim), (long long)t0);
    CHECK(ts_eq(st.st_mtim, old[1]), "UTIME_OMIT changed mtime to " TS_FMT,
          TS_ARG(st.st_mtim));
    prev = st;

    t0 = now_sec();
    CHECK(utimensat(AT_FDCWD, "f", omit_now, 0) == 0, "atime=OMIT mtime=NOW");
    t1 = now_sec();
    CHECK(stat("f", &st) == 0, "stat");
    CHECK(ts_eq(st.st_atim, prev.st_atim), "UTIME_OMIT changed atime to " TS_FMT,
          TS_ARG(st.st_atim));
    CHECK(ts_near(st.st_mtim, t0, t1), "mtime " TS_FMT " is not now",
          TS_ARG(st.st_mtim));

    CHECK(utimensat(AT_FDCWD, "f", old, 0) == 0, "set old times");
    t0 = now_sec();
    CHECK(utimensat(AT_FDCWD, "f", NULL, 0) == 0, "utimensat(NULL)");
    t1 = now_sec();
    CHECK(stat("f", &st) == 0, "stat");
    CHECK(ts_near(st.st_atim, t0, t1) && ts_near(st.st_mtim, t0, t1),
          "times NULL did not set both to now: atime " TS_FMT " mtime " TS_FMT,
          TS_ARG(st.st_atim), TS_ARG(st.st_mtim));
    return PASS;
}

static enum result check_utimens_wide_range(void)
{
    /* Past 2038 (needs more than 32-bit seconds) and before 1970. */
    const struct timespec ts[2] = { { -123456789, 999 }, { 4102444800LL, 123456789 } };
    struct stat st;

    CHECK(write_str("f", "x") == 0, "write f");
    CHECK(utimensat(AT_FDCWD, "f", ts, 0) == 0, "utimensat");
    CHECK(stat("f", &st) == 0, "stat");
    CHECK(ts_eq(st.st_atim, ts[0]), "atime " TS_FMT ", expected " TS_FMT,
          TS_ARG(st.st_atim), TS_ARG(ts[0]));
    CHECK(ts_eq(st.st_mtim, ts[1]), "mtime " TS_FMT ", expected " TS_FMT,
          TS_ARG(st.st_mtim), TS_ARG(ts[1]));
    return PASS;
}

static enum result check_ctime_on_chmod(void)
{
    struct stat before, after;

    CHECK(write_str("f", "x") == 0, "write f");
    CHECK(stat("f", &before) == 0, "stat");
    sleep_past_second();
    time_t t0 = now_sec();
    CHECK(chmod("f", 0600) == 0, "chmod");
    time_t t1 = now_sec();
    CHECK(stat("f", &after) == 0, "stat");
    CHECK(ts_after(after.st_ctim, before.st_ctim), "ctime " TS_FMT " did not advance from " TS_FMT,
          TS_ARG(after.st_ctim), TS_ARG(before.st_ctim));
    CHECK(ts_near(after.st_ctim, t0, t1), "ctime " TS_FMT " is not now", TS_ARG(after.st_ctim));
    CHECK(ts_eq(after.st_mtim, before.st_mtim), "chmod changed mtime");
    return PASS;
}

static enum result check_mtime_ctime_on_write(void)
{
    const struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
    struct stat before, after;

    int fd = open("f", O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "create f");
    CHECK(write(fd, "a", 1) == 1, "write");
    CHECK(futimens(fd, old) == 0, "set old times");
    CHECK(fstat(fd, &before) == 0, "fstat");
    sleep_past_second();
    time_t t0 = now_sec();
    CHECK(write(fd, "b", 1) == 1, "write");
    time_t t1 = now_sec();
    CHECK(fstat(fd, &after) == 0, "fstat");
    CHECK(ts_near(after.st_mtim, t0, t1), "mtime " TS_FMT " not updated by write",
          TS_ARG(after.st_mtim));
    CHECK(ts_after(after.st_ctim, before.st_ctim), "ctime " TS_FMT " not updated by write",
          TS_ARG(after.st_ctim));

    /* Changing the size with ftruncate updates mtime as well (POSIX). */
    CHECK(futimens(fd, old) == 0, "set old times");
    t0 = now_sec();
    CHECK(ftruncate(fd, 1) == 0, "ftruncate");
    t1 = now_sec();
    CHECK(fstat(fd, &after) == 0, "fstat");
    CHECK(ts_near(after.st_mtim, t0, t1), "mtime " TS_FMT " not updated by ftruncate",
          TS_ARG(after.st_mtim));
    CHECK(close(fd) == 0, "close");

    /* And so does truncate by path. */
    CHECK(utimensat(AT_FDCWD, "f", old, 0) == 0, "set old times");
    t0 = now_sec();
    CHECK(truncate("f", 100) == 0, "truncate");
    t1 = now_sec();
    CHECK(stat("f", &after) == 0, "stat");
    CHECK(ts_near(after.st_mtim, t0, t1), "mtime " TS_FMT " not updated by truncate",
          TS_ARG(after.st_mtim));
    return PASS;
}

static enum result check_dir_mtime_on_entry_change(void)
{
    const struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
    static const char *const steps[] = {
        "create file", "mkdir", "rename", "symlink", "link", "unlink", "rmdir",
    };
    struct stat st;

    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    for (size_t i = 0; i < ARRAY_LEN(steps); i++) {
        CHECK(utimensat(AT_FDCWD, "d", old, 0) == 0, "set old times on d");
        time_t t0 = now_sec();
        int r;
        switch (i) {
        case 0: r = touch("d/f"); break;
        case 1: r = mkdir("d/s", 0755); break;
        case 2: r = rename("d/s", "d/t"); break;
        case 3: r = symlink("f", "d/l"); break;
        case 4: r = link("d/f", "d/h"); break;
        case 5: r = unlink("d/f"); break;
        default: r = rmdir("d/t"); break;
        }
        time_t t1 = now_sec();
        CHECK(r == 0, "%s in d", steps[i]);
        CHECK(stat("d", &st) == 0, "stat d");
        CHECK(ts_near(st.st_mtim, t0, t1), "%s did not update the directory's mtime (" TS_FMT ")",
              steps[i], TS_ARG(st.st_mtim));
    }
    return PASS;
}

/* ========================================================================
 * Checks: statfs, fsync
 * ======================================================================== */

static enum result check_statfs_basic(void)
{
    struct statfs sf;
    struct statvfs sv;

    CHECK(statfs(".", &sf) == 0, "statfs");
    CHECK(sf.f_bsize > 0, "f_bsize %ld", (long)sf.f_bsize);
    CHECK(sf.f_blocks > 0, "f_blocks %llu", (unsigned long long)sf.f_blocks);
    CHECK(sf.f_bfree <= sf.f_blocks && sf.f_bavail <= sf.f_bfree,
          "f_blocks %llu f_bfree %llu f_bavail %llu are inconsistent",
          (unsigned long long)sf.f_blocks, (unsigned long long)sf.f_bfree,
          (unsigned long long)sf.f_bavail);
    CHECK(sf.f_namelen >= 255, "f_namelen %ld", (long)sf.f_namelen);
    CHECK(statvfs(".", &sv) == 0, "statvfs");
    CHECK(sv.f_namemax >= 255, "f_namemax %lu", (unsigned long)sv.f_namemax);
    CHECK(sv.f_frsize > 0 && sv.f_blocks > 0, "statvfs f_frsize %lu f_blocks %llu",
          (unsigned long)sv.f_frsize, (unsigned long long)sv.f_blocks);

    int fd = open(".", O_RDONLY | O_DIRECTORY);
    CHECK(fd >= 0, "open .");
    CHECK(fstatfs(fd, &sf) == 0 && sf.f_blocks > 0, "fstatfs");
    CHECK(close(fd) == 0, "close");
    return PASS;
}

static enum result check_statfs_bfree_decreases(void)
{
    const size_t len = 16 * MiB;
    unsigned char *data = xmalloc(len);
    struct statvfs before, after;

    /* Random data, so compression or deduplication cannot hide the usage. */
    fill_pattern(data, len, 16);
    CHECK(statvfs(".", &before) == 0, "statvfs");
    int fd = open("f", O_CREAT | O_WRONLY, 0644);
    CHECK(fd >= 0, "create f");
    CHECK(write_full(fd, data, len) == 0, "write 16 MiB");
    CHECK(fsync(fd) == 0, "fsync");
    CHECK(statvfs(".", &after) == 0, "statvfs");
    unsigned long long used = before.f_bfree > after.f_bfree
        ? (unsigned long long)(before.f_bfree - after.f_bfree) * after.f_frsize : 0;
    /* Half is enough: other activity on a shared filesystem adds noise. */
    CHECK(used >= len / 2,
          "f_bfree fell by %llu bytes after writing 16 MiB (blocks %llu -> %llu of %lu)",
          used, (unsigned long long)before.f_bfree,
          (unsigned long long)after.f_bfree, (unsigned long)after.f_frsize);
    note("16 MiB write consumed %.1f MiB", (double)used / MiB);
    CHECK(unlink("f") == 0, "unlink");
    CHECK(close(fd) == 0, "close releases the space");
    return PASS;
}

static enum result check_fsync_fdatasync(void)
{
    unsigned char data[10000];

    fill_pattern(data, sizeof data, 5);
    int fd = open("f", O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "create f");
    CHECK(write_full(fd, data, sizeof data) == 0, "write");
    CHECK(fsync(fd) == 0, "fsync");
    CHECK(pwrite(fd, "x", 1, 20000) == 1, "extend");
    CHECK(fdatasync(fd) == 0, "fdatasync");
    CHECK(fsync(fd) == 0, "fsync with nothing dirty");
    CHECK(close(fd) == 0, "close");
    fd = open("f", O_RDONLY);
    CHECK(fd >= 0, "open read-only");
    CHECK(fsync(fd) == 0 && fdatasync(fd) == 0, "fsync on a read-only descriptor");
    CHECK_DIFF(range_diff(fd, 0, data, sizeof data));
    CHECK(close(fd) == 0, "close");
    return PASS;
}

static enum result check_fsync_dir(void)
{
    int fd = open(".", O_RDONLY | O_DIRECTORY);
    CHECK(fd >= 0, "open .");
    CHECK(mkdir("d", 0755) == 0 && write_str("d/f", "x") == 0, "populate");
    CHECK(fsync(fd) == 0, "fsync directory");
    CHECK(close(fd) == 0, "close");
    fd = open("d", O_RDONLY | O_DIRECTORY);
    CHECK(fd >= 0, "open d");
    CHECK(rename("d/f", "d/g") == 0, "rename");
    CHECK(fsync(fd) == 0, "fsync directory after rename");
    CHECK(fdatasync(fd) == 0, "fdatasync directory");
    CHECK(close(fd) == 0, "close");
    return PASS;
}

/* ========================================================================
 * Checks: extended attributes
 * ======================================================================== */

/* How often name appears in a listxattr() result. */
static int xattr_count(const char *list, ssize_t len, const char *name)
{
    int count = 0;

    for (ssize_t i = 0; i < len; i += (ssize_t)strlen(list + i) + 1) {
        if (strcmp(list + i, name) == 0)
            count++;
    }
    return count;
}

static int user_xattr_count(const char *list, ssize_t len)
{
    int count = 0;

    for (ssize_t i = 0; i < len; i += (ssize_t)strlen(list + i) + 1) {
        if (strncmp(list + i, "user.", 5) == 0)
            count++;
    }
    return count;
}

static enum result check_xattr_roundtrip(void)
{
    char buf[256], list[1024];

    CHECK(write_str("f", "x") == 0, "write f");
    CHECK(setxattr("f", "user.test", "hello", 5, 0) == 0, "setxattr user.test");
    CHECK(getxattr("f", "user.test", NULL, 0) == 5, "size query");
    CHECK(getxattr("f", "user.test", buf, sizeof buf) == 5 && memcmp(buf, "hello", 5) == 0,
          "getxattr value");
    CHECK(setxattr("f", "user.empty", "", 0, 0) == 0, "setxattr empty value");
    CHECK(getxattr("f", "user.empty", buf, sizeof buf) == 0, "empty value has length 0");

    ssize_t n = listxattr("f", list, sizeof list);
    CHECK(n > 0, "listxattr");
    CHECK(list[n - 1] == '\0', "listxattr result not NUL-terminated");
    CHECK(xattr_count(list, n, "user.test") == 1 && xattr_count(list, n, "user.empty") == 1 &&
          user_xattr_count(list, n) == 2, "listxattr does not list exactly the two user names");

    CHECK(removexattr("f", "user.test") == 0, "removexattr");
    CHECK_ERRNO(getxattr("f", "user.test", buf, sizeof buf), ENODATA);
    n = listxattr("f", list, sizeof list);
    CHECK(n >= 0 && xattr_count(list, n, "user.test") == 0 &&
          user_xattr_count(list, n) == 1, "removed name still listed");

    /* Descriptor-based calls reach the same attributes. */
    int fd = open("f", O_RDONLY);
    CHECK(fd >= 0, "open");
    CHECK(fsetxattr(fd, "user.fd", "via-fd", 6, 0) == 0, "fsetxattr");
    CHECK(getxattr("f", "user.fd", buf, sizeof buf) == 6 && memcmp(buf, "via-fd", 6) == 0,
          "value set via fd");
    CHECK(fremovexattr(fd, "user.fd") == 0, "fremovexattr");
    CHECK(close(fd) == 0, "close");
    return PASS;
}

static enum result check_xattr_binary_and_large(void)
{
    static const char binary[] = { 'a', '\0', 'b', '\0', '\0', 'c', '\xff', '\0' };
    enum { BIG = 3000 };
    unsigned char *big = xmalloc(BIG), *back = xmalloc(BIG + 100);

    CHECK(write_str("f", "x") == 0, "write f");
    CHECK(setxattr("f", "user.bin", binary, sizeof binary, 0) == 0, "setxattr binary");
    CHECK(getxattr("f", "user.bin", back, BIG) == (ssize_t)sizeof binary &&
          memcmp(back, binary, sizeof binary) == 0, "binary value with NULs differs");

    fill_pattern(big, BIG, 3000);
    CHECK(setxattr("f", "user.big", big, BIG, 0) == 0, "setxattr %d bytes", BIG);
    CHECK(getxattr("f", "user.big", NULL, 0) == BIG, "size query of the large value");
    CHECK(getxattr("f", "user.big", back, BIG + 100) == BIG && memcmp(back, big, BIG) == 0,
          "large value differs");
    /* Shrinking replaces the whole value; no stale tail may remain. */
    CHECK(setxattr("f", "user.big", "short", 5, 0) == 0, "replace with shorter value");
    CHECK(getxattr("f", "user.big", back, BIG + 100) == 5 && memcmp(back, "short", 5) == 0,
          "shrunk value differs");
    CHECK(getxattr("f", "user.bin", back, BIG) == (ssize_t)sizeof binary &&
          memcmp(back, binary, sizeof binary) == 0, "neighbouring attribute disturbed");
    return PASS;
}

static enum result check_xattr_many_names(void)
{
    enum { N = 30 };
    char name[64], value[64], list[4096];

    CHECK(write_str("f", "x") == 0, "write f");
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "user.attr-%02d", i);
        snprintf(value, sizeof value, "value %d", i);
        CHECK(setxattr("f", name, value, strlen(value), XATTR_CREATE) == 0, "set %s", name);
    }
    ssize_t n = listxattr("f", list, sizeof list);
    CHECK(n > 0, "listxattr");
    CHECK(user_xattr_count(list, n) == N, "%d user names listed, expected %d",
          user_xattr_count(list, n), N);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "user.attr-%02d", i);
        snprintf(value, sizeof value, "value %d", i);
        CHECK(xattr_count(list, n, name) == 1, "%s not listed once", name);
        char got[64];
        ssize_t len = getxattr("f", name, got, sizeof got);
        CHECK(len == (ssize_t)strlen(value) && memcmp(got, value, (size_t)len) == 0,
              "%s has the wrong value", name);
    }
    return PASS;
}

static enum result check_xattr_create_replace(void)
{
    char buf[16];

    CHECK(write_str("f", "x") == 0, "write f");
    CHECK(setxattr("f", "user.a", "one", 3, XATTR_CREATE) == 0, "XATTR_CREATE on a new name");
    CHECK_ERRNO(setxattr("f", "user.a", "two", 3, XATTR_CREATE), EEXIST);
    CHECK(getxattr("f", "user.a", buf, sizeof buf) == 3 && memcmp(buf, "one", 3) == 0,
          "failed XATTR_CREATE changed the value");
    CHECK_ERRNO(setxattr("f", "user.missing", "v", 1, XATTR_REPLACE), ENODATA);
    CHECK_ERRNO(getxattr("f", "user.missing", buf, sizeof buf), ENODATA);
    CHECK(setxattr("f", "user.a", "three", 5, XATTR_REPLACE) == 0, "XATTR_REPLACE existing");
    CHECK(getxattr("f", "user.a", buf, sizeof buf) == 5 && memcmp(buf, "three", 5) == 0,
          "value after XATTR_REPLACE");
    return PASS;
}

static enum result check_xattr_errors(void)
{
    char buf[16], list[2];

    CHECK(write_str("f", "x") == 0, "write f");
    CHECK_ERRNO(getxattr("f", "user.missing", buf, sizeof buf), ENODATA);
    CHECK_ERRNO(getxattr("f", "user.missing", NULL, 0), ENODATA);
    CHECK_ERRNO(removexattr("f", "user.missing"), ENODATA);
    CHECK(setxattr("f", "user.v", "0123456789", 10, 0) == 0, "setxattr");
    CHECK(getxattr("f", "user.v", NULL, 0) == 10, "size query");
    CHECK_ERRNO(getxattr("f", "user.v", buf, 3), ERANGE);
    ssize_t need = listxattr("f", NULL, 0);
    CHECK(need >= (ssize_t)sizeof "user.v", "listxattr size query returned %zd", need);
    CHECK_ERRNO(listxattr("f", list, sizeof list), ERANGE);
    CHECK_ERRNO(getxattr("missing", "user.v", buf, sizeof buf), ENOENT);
    return PASS;
}

static enum result check_xattr_on_directory(void)
{
    char buf[16], list[256];

    CHECK(mkdir("d", 0755) == 0, "mkdir d");
    CHECK(setxattr("d", "user.dir", "dv", 2, 0) == 0, "setxattr on a directory");
    CHECK(getxattr("d", "user.dir", buf, sizeof buf) == 2 && memcmp(buf, "dv", 2) == 0,
          "getxattr on a directory");
    ssize_t n = listxattr("d", list, sizeof list);
    CHECK(n > 0 && xattr_count(list, n, "user.dir") == 1, "listxattr on a directory");
    CHECK(removexattr("d", "user.dir") == 0, "removexattr on a directory");
    CHECK_ERRNO(getxattr("d", "user.dir", buf, sizeof buf), ENODATA);
    return PASS;
}

/* ========================================================================
 * Checks: fallocate
 * ======================================================================== */

static enum result check_fallocate_extend(void)
{
    int fd = open("f", O_CREAT | O_RDWR, 0644);
    CHECK(fd >= 0, "create f");
    CHECK(fallocate(fd, 0, 0, 100000) == 0, "fallocate 100000 bytes");
    CHECK_DIFF(size_diff(fd, 100000));
    CHECK_DIFF(range_diff(fd, 0, NULL, 100000));
    CHECK(close(fd) == 0, "close");

    CHECK(write_str("g", "hello") == 0, "write g");
    fd = open("g", O_RDWR);
    CHECK(fd >= 0, "open g");
    CHECK(fallocate(fd, 0, 8000, 5000) == 0, "fallocate past EOF");
    CHECK_DIFF(size_diff(fd, 13000));
    CHECK_DIFF(range_diff(fd, 0, "hello", 5));
    CHECK_DIFF(range_diff(fd, 5, NULL, 13000 - 5));
    /* Allocating inside the file must not disturb data. */
    CHECK(fallocate(fd, 0, 0, 4096) == 0, "fallocate over existing data");
    CHECK_DIFF(size_diff(fd, 13000));
    CHECK_DIFF(range_diff(fd, 0, "hello", 5));
    CHECK(close(fd) == 0, "close");
    return PASS;
}

static enum result check_fallocate_keep_size(void)
{
    unsigned char data[1000];
    char c;

    fill_pattern(data, sizeof data, 6);
    CHECK(write_file("f", data, sizeof data) == 0, "write f");
    int fd = open("f", O_RDWR);
    CHECK(fd >= 0, "open f");
    CHECK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, MiB) == 0, "fallocate KEEP_SIZE");
    CHECK_DIFF(size_diff(fd, sizeof data));
    CHECK(fallocate(fd, FALLOC_FL_KEEP_SIZE, 2 * MiB, MiB) == 0,
          "fallocate KEEP_SIZE beyond EOF");
    CHECK_DIFF(size_diff(fd, sizeof data));
    CHECK_DIFF(range_diff(fd, 0, data, sizeof data));
    CHECK(pread(fd, &c, 1, sizeof data) == 0, "read at EOF must return 0");
    /* Writing into the preallocated tail extends the file normally. */
    CHECK(pwrite(fd, "T", 1, 5000) == 1, "write into preallocated range");
    CHECK_DIFF(size_diff(fd, 5001));
    CHECK_DIFF(range_diff(fd, sizeof data, NULL, 5000 - sizeof data));
    CHECK(close(fd) == 0, "close");
    return PASS;
}

static enum result check_fallocate_punch_hole(void)
{
    enum { SIZE = 5 * 4096 };
    unsigned char *data = xmalloc(SIZE);

    fill_pattern(data, SIZE, 7);
    CHECK(write_file("f", data, SIZE) == 0, "write f");
    int fd = open("f", O_RDWR);
    CHECK(fd >= 0, "open f");
    CHECK(flush_and_drop(fd) == 0, "fsync + drop cache");

    /* 1000..11000: partial block 0, whole block 1, partial block 2. */
    CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1000, 10000) == 0,
          "punch 1000+10000");
    memset(data + 1000, 0, 10000);
    CHECK_DIFF(size_diff(fd, SIZE));
    CHECK_DIFF(range_diff(fd, 0, data, SIZE));

    /* Block-aligned whole block. */
    CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 12288, 4096) == 0,
          "punch block 3");
    memset(data + 12288, 0, 4096);
    CHECK_DIFF(range_diff(fd, 0, data, SIZE));

    /* Crossing EOF: the tail is zeroed, the size stays. */
    CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, SIZE - 480, 10000) == 0,
          "punch across EOF");
    memset(data + SIZE - 480, 0, 480);
    CHECK_DIFF(size_diff(fd, SIZE));
    CHECK_DIFF(range_diff(fd, 0, data, SIZE));

    CHECK(flush_and_drop(fd) == 0, "fsync + drop cache");
    CHECK_DIFF(range_diff(fd, 0, data, SIZE));
    CHECK(close(fd) == 0, "close");
    CHECK_DIFF(content_diff("f", data, SIZE));
    return PASS;
}

static enum result check_fallocate_punch_needs_keep_size(void)
{
    unsigned char data[8192];

    fill_pattern(data, sizeof data, 8);
    CHECK(write_file("f", data, sizeof data) == 0, "write f");
    int fd = open("f", O_RDWR);
    CHECK(fd >= 0, "open f");
    CHECK_ERRNO(fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096), EOPNOTSUPP);
    CHECK_DIFF(range_diff(fd, 0, data, sizeof data));
    CHECK(close(fd) == 0, "close");
    return PASS;
}

static enum result check_fallocate_zero_range(void)
{
    enum { SIZE = 3 * 4096 };
    unsigned char data[SIZE];

    fill_pattern(data, sizeof data, 9);
    CHECK(write_file("f", data, sizeof data) == 0, "write f");
    int fd = open("f", O_RDWR);
    CHECK(fd >= 0, "open f");
    errno = 0;
    int r = fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 1000, 5000);
    if (r != 0) {
        /* Optional mode: declining is fine, but only with EOPNOTSUPP. */
        CHECK(errno == EOPNOTSUPP, "ZERO_RANGE failed with something other than EOPNOTSUPP");
        CHECK_DIFF(range_diff(fd, 0, data, sizeof data));
        note("ZERO_RANGE not supported");
    } else {
        memset(data + 1000, 0, 5000);
        CHECK_DIFF(size_diff(fd, SIZE));
        CHECK_DIFF(range_diff(fd, 0, data, sizeof data));
    }
    CHECK(close(fd) == 0, "close");
    return PASS;
}

/* ========================================================================
 * Checks: name length
 * ======================================================================== */

static void make_name(char *buf, size_t len, char fill)
{
    memset(buf, fill, len);
    buf[0] = 'N'; /* never "." or ".." */
    buf[len] = '\0';
}

static enum result check_name_255(void)
{
    char n1[256], n2[256], n3[256], path[600];
    struct entry *v;
    struct stat st;

    make_name(n1, 255, 'a');
    make_name(n2, 255, 'b');
    make_name(n3, 255, 'c');
    CHECK(write_str(n1, "long") == 0, "create a 255-byte name");
    CHECK(stat(n1, &st) == 0 && st.st_size == 4, "stat the 255-byte name");
    CHECK(mkdir(n2, 0755) == 0, "mkdir a 255-byte name");
    snprintf(path, sizeof path, "%s/%s", n2, n3);
    CHECK(rename(n1, path) == 0, "rename to a 255-byte name in a 255-byte dir");
    CHECK_DIFF(content_is(path, "long"));
    CHECK(symlink(n2, n1) == 0, "symlink with a 255-byte name");
    ssize_t n = list_dir(".", &v);
    CHECK(n == 4, "%zd entries, expected 4", n);
    CHECK(count_name(v, (size_t)n, n1, NULL) == 1 && count_name(v, (size_t)n, n2, NULL) == 1,
          "255-byte names not listed exactly");
    n = list_dir(n2, &v);
    CHECK(n == 3 && count_name(v, (size_t)n, n3, NULL) == 1, "255-byte name not listed in subdir");
    CHECK(unlink(path) == 0 && unlink(n1) == 0 && rmdir(n2) == 0, "remove the long names");
    return PASS;
}

static enum result check_name_256_enametoolong(void)
{
    static const char *const names[] = { "f" };
    char big[257], path[300];
    struct stat st;

    make_name(big, 256, 'z');
    snprintf(path, sizeof path, "%s/x", big);
    CHECK(write_str("f", "x") == 0, "write f");
    CHECK_ERRNO(open(big, O_CREAT | O_WRONLY, 0644), ENAMETOOLONG);
    CHECK_ERRNO(mkdir(big, 0755), ENAMETOOLONG);
    CHECK_ERRNO(symlink("f", big), ENAMETOOLONG);
    CHECK_ERRNO(rename("f", big), ENAMETOOLONG);
    CHECK_ERRNO(link("f", big), ENAMETOOLONG);
    CHECK_ERRNO(mknod(big, S_IFIFO | 0644, 0), ENAMETOOLONG);
    CHECK_ERRNO(stat(big, &st), ENAMETOOLONG);
    CHECK_ERRNO(stat(path, &st), ENAMETOOLONG);
    CHECK_DIFF(listing_diff(".", names, ARRAY_LEN(names)));
    CHECK_DIFF(content_is("f", "x"));
    return PASS;
}

/* ========================================================================
 * Checks: scale
 * ======================================================================== */

static enum result check_dir_20000_entries(void)
{
    enum { N = 20000, CHUNK = 1000 };
    unsigned char *seen = xcalloc(N, 1);
    double first_ms = 0, last_ms = 0, t0 = 0;
    struct entry *v;
    struct stat st;
    char name[64];

    CHECK(mkdir("big", 0755) == 0, "mkdir big");
    for (int i = 0; i < N; i++) {
        if (i % CHUNK == 0)
            t0 = mono_ms();
        snprintf(name, sizeof name, "big/f%05d", i);
        int fd = open(name, O_CREAT | O_EXCL | O_WRONLY, 0644);
        CHECK(fd >= 0, "create %s", name);
        CHECK(close(fd) == 0, "close %s", name);
        if (i == CHUNK - 1)
            first_ms = mono_ms() - t0;
        if (i == N - 1)
            last_ms = mono_ms() - t0;
    }

    uint64_t x = 20000;
    for (int k = 0; k < 50; k++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int i = (int)((x >> 33) % N);
        snprintf(name, sizeof name, "big/f%05d", i);
        CHECK(stat(name, &st) == 0 && S_ISREG(st.st_mode), "stat %s", name);
    }
    CHECK_ERRNO(stat("big/f20000", &st), ENOENT);
    CHECK(stat("big", &st) == 0 && st.st_nlink == 2, "nlink %lu", (unsigned long)st.st_nlink);

    ssize_t n = list_dir("big", &v);
    CHECK(n >= 0, "readdir big");
    for (ssize_t i = 0; i < n; i++) {
        int idx;
        if (strcmp(v[i].name, ".") == 0 || strcmp(v[i].name, "..") == 0)
            continue;
        CHECK(sscanf(v[i].name, "f%5d", &idx) == 1 && idx >= 0 && idx < N,
              "unexpected name '%.100s'", v[i].name);
        CHECK(!seen[idx], "'%s' returned twice", v[i].name);
        seen[idx] = 1;
    }
    CHECK(n == N + 2, "%zd entries, expected %d", n, N + 2);
    note("create first 1000: %.1f ms, last 1000: %.1f ms, ratio %.2f", first_ms, last_ms,
         first_ms > 0 ? last_ms / first_ms : 0.0);
    return PASS;
}

static enum result check_many_small_files(void)
{
    enum { N = 2000, LEN = 1024 };
    unsigned char data[LEN];
    char name[64];

    CHECK(mkdir("s", 0755) == 0, "mkdir s");
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "s/small-%04d", i);
        fill_pattern(data, LEN, (uint64_t)i + 100);
        CHECK(write_file(name, data, LEN) == 0, "write %s", name);
    }
    /* Read back in a different order than written. */
    for (int k = 0; k < N; k++) {
        int i = (k * 7) % N;
        snprintf(name, sizeof name, "s/small-%04d", i);
        fill_pattern(data, LEN, (uint64_t)i + 100);
        const char *why = content_diff(name, data, LEN);
        CHECK(why == NULL, "%s: %s", name, why);
    }
    return PASS;
}

/* ========================================================================
 * Runner
 * ======================================================================== */

struct check {
    const char *name;
    enum result (*fn)(void);
};

#define CHECK_ENTRY(n) { #n, check_##n }

static const struct check checks[] = {
    /* open, read, write */
    CHECK_ENTRY(create_read_write),
    CHECK_ENTRY(umask_applied),
    CHECK_ENTRY(o_append),
    CHECK_ENTRY(o_trunc),
    CHECK_ENTRY(o_excl_existing),
    CHECK_ENTRY(o_creat_excl),
    CHECK_ENTRY(open_missing_enoent),
    CHECK_ENTRY(open_dir_wronly_eisdir),
    CHECK_ENTRY(enotdir_component),
    CHECK_ENTRY(pwrite_pread_offsets),
    CHECK_ENTRY(block_boundary_writes),
    CHECK_ENTRY(large_write_8mib),
    CHECK_ENTRY(sparse_1tib),
    /* truncation, holes, unlinked files, mmap */
    CHECK_ENTRY(truncate_up),
    CHECK_ENTRY(truncate_down_reextend),
    CHECK_ENTRY(ftruncate),
    CHECK_ENTRY(truncate_mid_block),
    CHECK_ENTRY(sparse_holes),
    CHECK_ENTRY(unlink_open_file),
    CHECK_ENTRY(mmap_shared_coherence),
    /* rename */
    CHECK_ENTRY(rename_simple),
    CHECK_ENTRY(rename_replace_file),
    CHECK_ENTRY(rename_across_dirs),
    CHECK_ENTRY(rename_dir_over_empty_dir),
    CHECK_ENTRY(rename_dir_over_nonempty_dir),
    CHECK_ENTRY(rename_file_over_dir),
    CHECK_ENTRY(rename_dir_over_file),
    CHECK_ENTRY(rename_dir_into_subtree),
    CHECK_ENTRY(renameat2_noreplace),
    CHECK_ENTRY(rename_exchange_files),
    CHECK_ENTRY(rename_exchange_file_dir),
    CHECK_ENTRY(rename_exchange_missing),
    CHECK_ENTRY(rename_dir_updates_dotdot),
    /* directories */
    CHECK_ENTRY(mkdir_eexist),
    CHECK_ENTRY(dir_nlink),
    CHECK_ENTRY(rmdir_nonempty),
    CHECK_ENTRY(rmdir_file_enotdir),
    CHECK_ENTRY(unlink_dir_eisdir),
    CHECK_ENTRY(rmdir_dot_einval),
    CHECK_ENTRY(readdir_exact),
    CHECK_ENTRY(readdir_d_ino),
    CHECK_ENTRY(readdir_3000),
    CHECK_ENTRY(readdir_stable_offsets),
    CHECK_ENTRY(seekdir_telldir),
    /* links */
    CHECK_ENTRY(hardlink),
    CHECK_ENTRY(link_dir_eperm),
    CHECK_ENTRY(link_existing_eexist),
    CHECK_ENTRY(symlink_basic),
    CHECK_ENTRY(symlink_4000),
    CHECK_ENTRY(symlink_dangling),
    /* special files */
    CHECK_ENTRY(mknod_fifo),
    CHECK_ENTRY(mknod_socket),
    CHECK_ENTRY(mkfifo),
    /* metadata */
    CHECK_ENTRY(chmod_bits),
    CHECK_ENTRY(chown),
    CHECK_ENTRY(setgid_dir_inherit),
    CHECK_ENTRY(utimens_nsec),
    CHECK_ENTRY(utimens_now_omit),
    CHECK_ENTRY(utimens_wide_range),
    CHECK_ENTRY(ctime_on_chmod),
    CHECK_ENTRY(mtime_ctime_on_write),
    CHECK_ENTRY(dir_mtime_on_entry_change),
    /* statfs, fsync */
    CHECK_ENTRY(statfs_basic),
    CHECK_ENTRY(statfs_bfree_decreases),
    CHECK_ENTRY(fsync_fdatasync),
    CHECK_ENTRY(fsync_dir),
    /* extended attributes */
    CHECK_ENTRY(xattr_roundtrip),
    CHECK_ENTRY(xattr_binary_and_large),
    CHECK_ENTRY(xattr_many_names),
    CHECK_ENTRY(xattr_create_replace),
    CHECK_ENTRY(xattr_errors),
    CHECK_ENTRY(xattr_on_directory),
    /* fallocate */
    CHECK_ENTRY(fallocate_extend),
    CHECK_ENTRY(fallocate_keep_size),
    CHECK_ENTRY(fallocate_punch_hole),
    CHECK_ENTRY(fallocate_punch_needs_keep_size),
    CHECK_ENTRY(fallocate_zero_range),
    /* names */
    CHECK_ENTRY(name_255),
    CHECK_ENTRY(name_256_enametoolong),
    /* scale */
    CHECK_ENTRY(dir_20000_entries),
    CHECK_ENTRY(many_small_files),
};

static char g_cleanup_err[512];

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    int r = (type == FTW_DP) ? rmdir(path) : unlink(path);
    if (r != 0 && !g_cleanup_err[0])
        snprintf(g_cleanup_err, sizeof g_cleanup_err, "removing %.300s: %s", path,
                 strerror(errno));
    return 0; /* keep going: remove as much as possible */
}

/* rm -rf relative to the current directory; the first error is remembered. */
static int remove_tree(const char *path)
{
    g_cleanup_err[0] = '\0';
    if (nftw(path, remove_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0 &&
        !g_cleanup_err[0])
        snprintf(g_cleanup_err, sizeof g_cleanup_err, "walking %s: %s", path,
                 strerror(errno));
    return g_cleanup_err[0] ? -1 : 0;
}

/* Closes every descriptor from lowest upwards, whatever a failed check left open. */
static void close_fds_from(int lowest)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lowest, ~0U, 0) == 0)
        return;
#endif
    for (int fd = lowest; fd < 4096; fd++)
        close(fd);
}

static enum result run_one(int root_fd, const struct check *c)
{
    enum result r;
    int lowest_free = dup(0);

    if (lowest_free >= 0)
        close(lowest_free);
    else
        lowest_free = 3;
    g_detail[0] = g_note[0] = '\0';

    if (mkdirat(root_fd, c->name, 0755) != 0) {
        r = fail_at(__LINE__, errno, "mkdir %s", c->name);
    } else {
        int dfd = openat(root_fd, c->name, O_RDONLY | O_DIRECTORY);
        if (dfd < 0 || fchdir(dfd) != 0) {
            r = fail_at(__LINE__, errno, "enter %s", c->name);
        } else {
            close(dfd);
            errno = 0;
            r = c->fn();
        }
    }

    if (fchdir(root_fd) != 0) {
        perror("posix_check: cannot return to DIR");
        exit(2);
    }
    umask(0);
    close_fds_from(lowest_free);
    release_tracked();

    if (remove_tree(c->name) != 0) {
        if (r == FAIL) {
            size_t len = strlen(g_detail);
            snprintf(g_detail + len, sizeof g_detail - len, "; cleanup also failed: %s",
                     g_cleanup_err);
        } else {
            snprintf(g_detail, sizeof g_detail, "cleanup: %s", g_cleanup_err);
            r = FAIL;
        }
    }

    switch (r) {
    case PASS:
        if (g_note[0])
            printf("ok %s (%s)\n", c->name, g_note);
        else
            printf("ok %s\n", c->name);
        break;
    case SKIP:
        printf("SKIP %s: %s\n", c->name, g_detail);
        break;
    case FAIL:
        printf("FAIL %s: %s\n", c->name, g_detail);
        break;
    }
    fflush(stdout);
    return r;
}

static bool selected(const char *name, int argc, char **argv)
{
    if (argc <= 2)
        return true;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], name) == 0)
            return true;
    }
    return false;
}

int main(int argc, char **argv)
{
    int counts[3] = { 0, 0, 0 };

    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: %s DIR [CHECK...]\n"
                        "DIR must be an empty, writable directory on the filesystem under test.\n",
                argv[0]);
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        bool known = false;
        for (size_t k = 0; k < ARRAY_LEN(checks); k++)
            known = known || strcmp(argv[i], checks[k].name) == 0;
        if (!known) {
            fprintf(stderr, "posix_check: unknown check '%s'\n", argv[i]);
            return 2;
        }
    }

    /* Descriptors 0-2 must be taken, or a test file could land on stdout. */
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) != fd) {
            fputs("posix_check: cannot set up standard descriptors\n", stderr);
            return 2;
        }
    }

    int root_fd = open(argv[1], O_RDONLY | O_DIRECTORY);
    if (root_fd < 0 || fchdir(root_fd) != 0) {
        fprintf(stderr, "posix_check: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    /* Modes are asserted exactly; checks that care about umask set their own. */
    umask(0);

    int run = 0;
    for (size_t i = 0; i < ARRAY_LEN(checks); i++) {
        if (!selected(checks[i].name, argc, argv))
            continue;
        counts[run_one(root_fd, &checks[i])]++;
        run++;
    }
    printf("# posix_check: %d checks, %d passed, %d failed, %d skipped\n", run,
           counts[PASS], counts[FAIL], counts[SKIP]);
    return counts[FAIL] ? 1 : 0;
}
