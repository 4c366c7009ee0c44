/* iotrace.c — an LD_PRELOAD shim that records every read, write and flush
 * a process issues to one device or image file, for bench/disksim.py.
 *
 * Layers: it sits between the program and libc.  Every interposed call is
 * passed to the real libc function (found with dlsym(RTLD_NEXT)); only
 * calls on a file descriptor that refers to the traced file are recorded,
 * and only when they succeed.  Nothing the program sees changes.
 *
 *   LFSTRACE_DEV=/dev/loop3 LFSTRACE_OUT=/tmp/t.bin LD_PRELOAD=./iotrace.so prog
 *
 * LFSTRACE_DEV names the traced file; a descriptor is traced when it was
 * opened (open/openat, any spelling of the path) on the same inode, or the
 * same block device (st_rdev).  Records go to LFSTRACE_OUT, opened with
 * O_APPEND so that several processes (the lfs daemon and the lfs_cleanerd
 * it starts, or successive mounts in one benchmark unit) can share one
 * file: each process buffers whole records and writes them with one
 * write(2), so records never interleave mid-record.  Readers sort by time.
 *
 * Record (32 bytes, host byte order, little-endian on every machine the
 * bench runs on):
 *   u64 t_ns   CLOCK_REALTIME at the call's start (so the bench can cut the
 *              trace into phases with `date +%s%N` marks)
 *   u64 off    byte offset (0 for fsync/fdatasync)
 *   u64 len    bytes transferred (the return value), or the range of a
 *              sync_file_range (0 = to the end of the file)
 *   u32 pid
 *   u8  op     'R' read, 'W' write, 'F' fsync, 'D' fdatasync,
 *              'S' sync_file_range
 *   u8  pad[3]
 *
 * Which calls: lfs uses pread/pwrite/fdatasync (lfs/dev/bdev.c), lfs_cleanerd
 * pread; Debian's fuse2fs (e2fsprogs unix_io) pread64/pwrite64/fsync, as
 * strace shows; libext2fs, built with _FORTIFY_SOURCE, opens the device
 * through __open64_2, so the fortified open entry points are wrapped too.  The vectored and sync_file_range variants are covered so a
 * target that switches to them is not silently untraced; io_uring and mmap
 * are not (neither program uses them; a target that did would show as a
 * trace with no requests, which the report flags).
 *
 * The buffer is flushed when full, at every traced flush (so a daemon that
 * is killed later still leaves the trace up to its last fsync), and at
 * exit.  A forked child starts with an empty buffer (pthread_atfork), or
 * its parent's records would be written twice.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

struct trace_rec {
	uint64_t t_ns;
	uint64_t off;
	uint64_t len;
	uint32_t pid;
	uint8_t op;
	uint8_t pad[3];
};
_Static_assert(sizeof(struct trace_rec) == 32, "trace record is 32 bytes (disksim.py reads '<QQQIB3x')");

#define MAX_FD 4096
#define BUF_RECS 2048

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
/* protected by trace_lock */
static struct trace_rec trace_buf[BUF_RECS];
static size_t trace_n;
/* set once in trace_init, read-only afterwards */
static int trace_out = -1;
static int trace_on;
static dev_t want_dev, want_rdev;
static ino_t want_ino;
static int want_is_blk;
/* traced[fd] != 0: fd refers to the traced file (written by open/close) */
static volatile unsigned char traced[MAX_FD];

/* the real libc functions */
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pread64)(int, void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_preadv)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*real_preadv2)(int, const struct iovec *, int, off_t, int);
static ssize_t (*real_pwritev2)(int, const struct iovec *, int, off_t, int);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_sync_file_range)(int, off_t, off_t, unsigned int);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_close)(int);
/* _FORTIFY_SOURCE builds (Debian's libext2fs) call these for open(2)
 * without O_CREAT */
static int (*real___open_2)(const char *, int);
static int (*real___open64_2)(const char *, int);
static int (*real___openat_2)(int, const char *, int);
static int (*real___openat64_2)(int, const char *, int);

/* Write out the buffer; caller holds trace_lock.  A short or failed write
 * loses records: the trace is a measurement aid, and stalling or failing
 * the traced daemon would change what is measured. */
static void
flush_locked(void)
{
	if (trace_out >= 0 && trace_n > 0) {
		ssize_t r = write(trace_out, trace_buf, trace_n * sizeof trace_buf[0]);
		(void)r;
	}
	trace_n = 0;
}

static void
atfork_child(void)
{
	trace_n = 0;
	pthread_mutex_init(&trace_lock, NULL);
}

static void
resolve(void)
{
	real_pread = dlsym(RTLD_NEXT, "pread");
	real_pwrite = dlsym(RTLD_NEXT, "pwrite");
	real_pread64 = dlsym(RTLD_NEXT, "pread64");
	real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
	real_preadv = dlsym(RTLD_NEXT, "preadv");
	real_pwritev = dlsym(RTLD_NEXT, "pwritev");
	real_preadv2 = dlsym(RTLD_NEXT, "preadv2");
	real_pwritev2 = dlsym(RTLD_NEXT, "pwritev2");
	real_fsync = dlsym(RTLD_NEXT, "fsync");
	real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
	real_sync_file_range = dlsym(RTLD_NEXT, "sync_file_range");
	real_open = dlsym(RTLD_NEXT, "open");
	real_open64 = dlsym(RTLD_NEXT, "open64");
	real_openat = dlsym(RTLD_NEXT, "openat");
	real_openat64 = dlsym(RTLD_NEXT, "openat64");
	real_close = dlsym(RTLD_NEXT, "close");
	real___open_2 = dlsym(RTLD_NEXT, "__open_2");
	real___open64_2 = dlsym(RTLD_NEXT, "__open64_2");
	real___openat_2 = dlsym(RTLD_NEXT, "__openat_2");
	real___openat64_2 = dlsym(RTLD_NEXT, "__openat64_2");
}

__attribute__((constructor)) static void
trace_init(void)
{
	resolve();
	const char *dev = getenv("LFSTRACE_DEV"), *out = getenv("LFSTRACE_OUT");
	struct stat st;
	if (!dev || !out || stat(dev, &st) < 0)
		return;
	want_is_blk = S_ISBLK(st.st_mode);
	want_rdev = st.st_rdev;
	want_dev = st.st_dev;
	want_ino = st.st_ino;
	trace_out = real_open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (trace_out < 0)
		return;
	pthread_atfork(NULL, NULL, atfork_child);
	trace_on = 1;
}

__attribute__((destructor)) static void
trace_fini(void)
{
	if (!trace_on)
		return;
	pthread_mutex_lock(&trace_lock);
	flush_locked();
	pthread_mutex_unlock(&trace_lock);
}

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int
is_traced(int fd)
{
	return trace_on && fd >= 0 && fd < MAX_FD && traced[fd];
}

static void
record(char op, uint64_t t, uint64_t off, uint64_t len)
{
	struct trace_rec r = { .t_ns = t, .off = off, .len = len, .pid = (uint32_t)getpid(), .op = (uint8_t)op };
	pthread_mutex_lock(&trace_lock);
	trace_buf[trace_n++] = r;
	if (trace_n == BUF_RECS || op == 'F' || op == 'D' || op == 'S')
		flush_locked();
	pthread_mutex_unlock(&trace_lock);
}

/* After a successful open: does fd refer to the traced file? */
static int
note_open(int fd)
{
	struct stat st;
	if (!trace_on || fd < 0 || fd >= MAX_FD)
		return fd;
	int match = 0;
	if (fstat(fd, &st) == 0) {
		if (want_is_blk)
			match = S_ISBLK(st.st_mode) && st.st_rdev == want_rdev;
		else
			match = st.st_dev == want_dev && st.st_ino == want_ino;
	}
	traced[fd] = (unsigned char)match;
	return fd;
}

static mode_t
open_mode(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

/* open(2) and friends: pass through, then see whether the new descriptor is
 * the traced file.  The mode argument is read only where open(2) reads it. */
#define OPEN_WRAP(name, ...)                                                      \
	int name(__VA_ARGS__, int flags, ...)                                     \
	{                                                                         \
		va_list ap;                                                       \
		va_start(ap, flags);                                              \
		mode_t m = open_mode(flags, ap);                                  \
		va_end(ap);                                                       \
		if (!real_##name)                                                 \
			resolve();                                                \
		return note_open(real_##name(OPEN_ARGS_##name, flags, m));        \
	}
#define OPEN_ARGS_open path
#define OPEN_ARGS_open64 path
#define OPEN_ARGS_openat dirfd, path
#define OPEN_ARGS_openat64 dirfd, path
OPEN_WRAP(open, const char *path)
OPEN_WRAP(open64, const char *path)
OPEN_WRAP(openat, int dirfd, const char *path)
OPEN_WRAP(openat64, int dirfd, const char *path)

/* the _FORTIFY_SOURCE entry points take no mode */
#define OPEN2_WRAP(name, args, ...)                                               \
	int name(__VA_ARGS__, int flags);                                         \
	int name(__VA_ARGS__, int flags)                                          \
	{                                                                         \
		if (!real_##name)                                                 \
			resolve();                                                \
		return note_open(real_##name(args, flags));                       \
	}
#define PATH_ONLY path
#define DIRFD_PATH dirfd, path
OPEN2_WRAP(__open_2, PATH_ONLY, const char *path)
OPEN2_WRAP(__open64_2, PATH_ONLY, const char *path)
OPEN2_WRAP(__openat_2, DIRFD_PATH, int dirfd, const char *path)
OPEN2_WRAP(__openat64_2, DIRFD_PATH, int dirfd, const char *path)

int
close(int fd)
{
	if (!real_close)
		resolve();
	if (fd >= 0 && fd < MAX_FD)
		traced[fd] = 0;
	return real_close(fd);
}

#define RW_WRAP(name, op, bufty)                                                  \
	ssize_t name(int fd, bufty buf, size_t n, off_t off)                      \
	{                                                                         \
		if (!real_##name)                                                 \
			resolve();                                                \
		if (!is_traced(fd))                                               \
			return real_##name(fd, buf, n, off);                      \
		uint64_t t = now_ns();                                            \
		ssize_t r = real_##name(fd, buf, n, off);                         \
		if (r > 0)                                                        \
			record(op, t, (uint64_t)off, (uint64_t)r);                \
		return r;                                                         \
	}
RW_WRAP(pread, 'R', void *)
RW_WRAP(pread64, 'R', void *)
RW_WRAP(pwrite, 'W', const void *)
RW_WRAP(pwrite64, 'W', const void *)

#define RWV_WRAP(name, op)                                                        \
	ssize_t name(int fd, const struct iovec *iov, int cnt, off_t off)         \
	{                                                                         \
		if (!real_##name)                                                 \
			resolve();                                                \
		if (!is_traced(fd))                                               \
			return real_##name(fd, iov, cnt, off);                    \
		uint64_t t = now_ns();                                            \
		ssize_t r = real_##name(fd, iov, cnt, off);                       \
		if (r > 0)                                                        \
			record(op, t, (uint64_t)off, (uint64_t)r);                \
		return r;                                                         \
	}
RWV_WRAP(preadv, 'R')
RWV_WRAP(pwritev, 'W')

#define RWV2_WRAP(name, op)                                                       \
	ssize_t name(int fd, const struct iovec *iov, int cnt, off_t off, int fl) \
	{                                                                         \
		if (!real_##name)                                                 \
			resolve();                                                \
		if (!is_traced(fd) || off < 0)                                    \
			return real_##name(fd, iov, cnt, off, fl);                \
		uint64_t t = now_ns();                                            \
		ssize_t r = real_##name(fd, iov, cnt, off, fl);                   \
		if (r > 0)                                                        \
			record(op, t, (uint64_t)off, (uint64_t)r);                \
		return r;                                                         \
	}
RWV2_WRAP(preadv2, 'R')
RWV2_WRAP(pwritev2, 'W')

int
fsync(int fd)
{
	if (!real_fsync)
		resolve();
	uint64_t t = now_ns();
	int r = real_fsync(fd);
	if (r == 0 && is_traced(fd))
		record('F', t, 0, 0);
	return r;
}

int
fdatasync(int fd)
{
	if (!real_fdatasync)
		resolve();
	uint64_t t = now_ns();
	int r = real_fdatasync(fd);
	if (r == 0 && is_traced(fd))
		record('D', t, 0, 0);
	return r;
}

int
sync_file_range(int fd, off_t off, off_t n, unsigned int flags)
{
	if (!real_sync_file_range)
		resolve();
	uint64_t t = now_ns();
	int r = real_sync_file_range(fd, off, n, flags);
	if (r == 0 && is_traced(fd))
		record('S', t, (uint64_t)off, (uint64_t)n);
	return r;
}
