/*
 * coherence.c — read-after-write on one file, every kind of I/O mixed,
 * checked against a model: coherence FILE SEED STEPS.
 *
 * Each step writes the file one way — buffered pwrite, direct pwrite, a
 * batch of direct writes in flight at once through libaio or io_uring,
 * stores through a shared mapping, or a truncate down and back up — and
 * once it has completed, the model (a shared anonymous mapping) is
 * updated and ranges are read back every way — buffered, direct, through
 * the mapping, libaio, io_uring — by this process and by a verifier
 * process with its own descriptors and mapping.  Every byte read must be
 * the model's.  Meanwhile two racing processes read the file without
 * pause (buffered and through their mappings), so that the kernel's
 * cache holds pages of every range a write is changing: the pages a
 * direct write completed asynchronously must not be served afterwards.
 *
 * Prints one line of counts; exits 1 at the first byte that differs,
 * naming the step, the write, the read and the offset.
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <liburing.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define FILE_SIZE (4u << 20)
#define ALIGN 4096u
#define BATCH_MAX 8
#define RACERS 2
#define BURST 2000 /* the writes of buffered_burst */

enum wkind { W_BUFFERED, W_DIRECT, W_AIO, W_URING, W_MMAP, W_TRUNCATE, W_KINDS };
enum rkind { R_BUFFERED, R_DIRECT, R_MMAP, R_AIO, R_URING, R_KINDS };
static const char *const wname[] = { "buffered", "direct", "libaio", "io_uring", "mmap", "truncate" };
static const char *const rname[] = { "buffered", "direct", "mmap", "libaio", "io_uring" };
/* The writes of the steps, batches in flight twice as often as the rest:
 * their completion is where the kernel leaves cached pages behind. */
static const enum wkind step_kinds[] = { W_BUFFERED, W_DIRECT, W_AIO, W_AIO, W_URING, W_URING, W_MMAP, W_TRUNCATE };

/* One process's ways into the file. */
struct view {
	int fd, dfd;                /* buffered, O_DIRECT */
	uint8_t *map;               /* MAP_SHARED of FILE_SIZE */
	io_context_t aio;
	struct io_uring ring;
	uint8_t *buf;               /* aligned, FILE_SIZE */
};

static uint8_t *model;          /* shared with the verifier */
static uint64_t rng;

/* Shared with the racers: the range being written now, which they read
 * most of the time, and the last range written, which the first check
 * after a step reads. */
struct hot {
	volatile uint32_t off, len;
};
static struct hot *hot;
static uint32_t last_off, last_len;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void
die(const char *what)
{
	fprintf(stderr, "coherence: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void
view_open(struct view *v, const char *path)
{
	memset(v, 0, sizeof(*v));
	v->fd = open(path, O_RDWR);
	v->dfd = open(path, O_RDWR | O_DIRECT);
	if (v->fd < 0 || v->dfd < 0)
		die("open");
	v->map = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
	if (v->map == MAP_FAILED)
		die("mmap");
	if (io_setup(BATCH_MAX, &v->aio) < 0 || io_uring_queue_init(BATCH_MAX, &v->ring, 0) < 0)
		die("io_setup / io_uring_queue_init");
	if (posix_memalign((void **)&v->buf, ALIGN, FILE_SIZE))
		die("posix_memalign");
}

static void
view_close(struct view *v)
{
	io_destroy(v->aio);
	io_uring_queue_exit(&v->ring);
	munmap(v->map, FILE_SIZE);
	close(v->fd);
	close(v->dfd);
	free(v->buf);
}

/* A range: aligned (for direct I/O) or any. */
static void
pick(bool aligned, uint32_t *off, uint32_t *len)
{
	if (aligned) {
		uint32_t blocks = FILE_SIZE / ALIGN;
		uint32_t b = (uint32_t)(rnd() % blocks), n = 1 + (uint32_t)(rnd() % 32);
		*off = b * ALIGN;
		*len = (n < blocks - b ? n : blocks - b) * ALIGN;
	} else {
		*off = (uint32_t)(rnd() % FILE_SIZE);
		uint32_t n = 1 + (uint32_t)(rnd() % (256 * 1024));
		*len = n < FILE_SIZE - *off ? n : FILE_SIZE - *off;
	}
}

/* Submit n direct I/Os (write or read) of the ranges at once; wait for
 * all; the bytes they moved (a failed one is fatal). */
static ssize_t
batch_aio(struct view *v, bool write, int n, const uint32_t *off, const uint32_t *len, uint8_t *const *bufs)
{
	struct iocb cb[BATCH_MAX], *cp[BATCH_MAX];
	for (int i = 0; i < n; i++) {
		if (write)
			io_prep_pwrite(&cb[i], v->dfd, bufs[i], len[i], off[i]);
		else
			io_prep_pread(&cb[i], v->dfd, bufs[i], len[i], off[i]);
		cp[i] = &cb[i];
	}
	if (io_submit(v->aio, n, cp) != n)
		die("io_submit");
	struct io_event ev[BATCH_MAX];
	ssize_t moved = 0;
	for (int got = 0; got < n;) {
		int r = io_getevents(v->aio, 1, n - got, ev, NULL);
		if (r < 0 && r != -EINTR)
			die("io_getevents");
		for (int i = 0; i < r; i++) {
			if ((long)ev[i].res < 0) {
				errno = (int)-(long)ev[i].res;
				die("libaio");
			}
			moved += (long)ev[i].res;
		}
		got += r > 0 ? r : 0;
	}
	return moved;
}

static ssize_t
batch_uring(struct view *v, bool write, int n, const uint32_t *off, const uint32_t *len, uint8_t *const *bufs)
{
	for (int i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&v->ring);
		if (write)
			io_uring_prep_write(sqe, v->dfd, bufs[i], len[i], off[i]);
		else
			io_uring_prep_read(sqe, v->dfd, bufs[i], len[i], off[i]);
	}
	if (io_uring_submit(&v->ring) != n)
		die("io_uring_submit");
	ssize_t moved = 0;
	for (int i = 0; i < n; i++) {
		struct io_uring_cqe *cqe;
		if (io_uring_wait_cqe(&v->ring, &cqe) < 0)
			die("io_uring_wait_cqe");
		if (cqe->res < 0) {
			errno = -cqe->res;
			die("io_uring");
		}
		moved += cqe->res;
		io_uring_cqe_seen(&v->ring, cqe);
	}
	return moved;
}

/* Fill a range of `src` with bytes of this step. */
static void
fill(uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)rnd();
}

/* n disjoint aligned ranges, one in each n-th of the file. */
static int
pick_batch(uint32_t *off, uint32_t *len)
{
	int n = 1 + (int)(rnd() % BATCH_MAX);
	uint32_t slot = FILE_SIZE / (uint32_t)n / ALIGN * ALIGN;
	for (int i = 0; i < n; i++) {
		uint32_t blocks = slot / ALIGN, b = (uint32_t)(rnd() % blocks), k = 1 + (uint32_t)(rnd() % 16);
		off[i] = (uint32_t)i * slot + b * ALIGN;
		len[i] = (k < blocks - b ? k : blocks - b) * ALIGN;
	}
	return n;
}

/* One write of kind k, completed; the model follows it. */
static void
write_step(struct view *v, enum wkind k)
{
	uint32_t off[BATCH_MAX], len[BATCH_MAX];
	uint8_t *bufs[BATCH_MAX];
	int n = 1;
	if (k == W_TRUNCATE) {
		off[0] = (uint32_t)(rnd() % FILE_SIZE);
		if (ftruncate(v->fd, off[0]) < 0 || ftruncate(v->fd, FILE_SIZE) < 0)
			die("ftruncate");
		memset(model + off[0], 0, FILE_SIZE - off[0]);
		last_off = off[0];
		last_len = FILE_SIZE - off[0];
		return;
	}
	if (k == W_AIO || k == W_URING)
		n = pick_batch(off, len);
	else
		pick(k == W_DIRECT, &off[0], &len[0]);
	for (int i = 0; i < n; i++) {
		bufs[i] = v->buf + off[i];
		fill(bufs[i], len[i]);
	}
	uint32_t end = off[n - 1] + len[n - 1];
	hot->off = off[0];
	hot->len = end - off[0];
	last_off = off[0];
	last_len = end - off[0];
	if (k == W_BUFFERED && pwrite(v->fd, bufs[0], len[0], off[0]) != (ssize_t)len[0])
		die("pwrite");
	if (k == W_DIRECT && pwrite(v->dfd, bufs[0], len[0], off[0]) != (ssize_t)len[0])
		die("pwrite O_DIRECT");
	if (k == W_MMAP)
		memcpy(v->map + off[0], bufs[0], len[0]);
	ssize_t want = 0, moved = 0;
	for (int i = 0; i < n; i++)
		want += len[i];
	if (k == W_AIO)
		moved = batch_aio(v, true, n, off, len, bufs);
	if (k == W_URING)
		moved = batch_uring(v, true, n, off, len, bufs);
	if ((k == W_AIO || k == W_URING) && moved != want) {
		errno = EIO;
		die("a batch of direct writes was short");
	}
	for (int i = 0; i < n; i++)
		memcpy(model + off[i], bufs[i], len[i]);
}

/* One read of kind k of a range, checked against the model; 0 or 1. */
static int
check_read(struct view *v, enum rkind k, bool at_last, const char *who, unsigned long step, enum wkind last)
{
	uint32_t off, len;
	pick(k != R_BUFFERED && k != R_MMAP, &off, &len);
	if (at_last) { /* the range written last, widened to the pages direct I/O needs */
		off = last_off / ALIGN * ALIGN;
		uint32_t e = (last_off + last_len + ALIGN - 1) / ALIGN * ALIGN;
		len = (e < FILE_SIZE ? e : FILE_SIZE) - off;
	}
	uint8_t *p = v->buf + off;
	memset(p, 0xee, len);
	if (k == R_BUFFERED && pread(v->fd, p, len, off) != (ssize_t)len)
		die("pread");
	if (k == R_DIRECT && pread(v->dfd, p, len, off) != (ssize_t)len)
		die("pread O_DIRECT");
	if (k == R_MMAP)
		memcpy(p, v->map + off, len);
	ssize_t n = len;
	if (k == R_AIO)
		n = batch_aio(v, false, 1, &off, &len, &p);
	if (k == R_URING)
		n = batch_uring(v, false, 1, &off, &len, &p);
	if (n != (ssize_t)len) {
		fprintf(stderr, "coherence: step %lu, after a %s write: the %s read of [%u, +%u) by the %s gave %zd bytes\n",
			step, wname[last], rname[k], off, len, who, n);
		return 1;
	}
	if (!memcmp(p, model + off, len))
		return 0;
	uint32_t i = 0;
	while (p[i] == model[off + i])
		i++;
	fprintf(stderr,
		"coherence: step %lu, after a %s write: the %s read of [%u, +%u) by the %s gives %#x at %u, "
		"the model %#x\n",
		step, wname[last], rname[k], off, len, who, p[i], off + i, model[off + i]);
	return 1;
}

#include <setjmp.h>

static sigjmp_buf racer_jmp;

static void
on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(racer_jmp, 1);
}

/* Read the file without pause, unchecked, so that the kernel caches what
 * a write is changing; a mapped page a truncate took away is SIGBUS. */
static void
racer(const char *path)
{
	int fd = open(path, O_RDONLY);
	uint8_t *map = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	static uint8_t buf[256 * 1024];
	if (fd < 0 || map == MAP_FAILED)
		die("racer: open");
	signal(SIGBUS, on_sigbus);
	volatile uint64_t sum = 0;
	for (;;) {
		uint32_t off, len;
		sigsetjmp(racer_jmp, 1);
		pick(false, &off, &len);
		uint32_t ho = hot->off, hl = hot->len;
		if (hl && rnd() % 4) { /* mostly what is being written */
			off = ho + (uint32_t)(rnd() % hl);
			len = ho + hl - off;
		}
		if (rnd() % 2) {
			memcpy(buf, map + off, len < sizeof(buf) ? len : sizeof(buf));
			sum += buf[0];
		} else if (pread(fd, buf, len < sizeof(buf) ? len : sizeof(buf), off) < 0) {
			die("racer: pread");
		}
	}
}

struct order {
	unsigned long step;
	int last;                   /* enum wkind; -1: stop */
	uint32_t off, len;          /* the range it wrote */
};

/* Check three reads of each order from its own view; answer 0 or 1. */
static void
verifier(const char *path, int in, int out)
{
	struct view v;
	view_open(&v, path);
	struct order o;
	while (read(in, &o, sizeof(o)) == (ssize_t)sizeof(o) && o.last >= 0) {
		uint8_t bad = 0;
		last_off = o.off;
		last_len = o.len;
		for (int i = 0; i < 3 && !bad; i++)
			bad = (uint8_t)check_read(&v, (enum rkind)(rnd() % R_KINDS), i == 0, "verifier", o.step,
						  o.last);
		if (write(out, &bad, 1) != 1)
			die("verifier: write");
	}
	view_close(&v);
	exit(0);
}

static pid_t
spawn(void (*fn)(const char *, int, int), const char *path, int in, int out, uint64_t seed)
{
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		rng = seed;
		fn(path, in, out);
		exit(0);
	}
	return pid;
}

static void
racer_main(const char *path, int in, int out)
{
	(void)in;
	(void)out;
	racer(path);
}

/* A direct read between the end of what was synced and a buffered write
 * past it that the kernel may still hold: the whole range, zeros (a hole),
 * synchronously and through libaio and io_uring.  0 or 1. */
static int
read_past_synced_end(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, 64 * 1024) < 0 || fsync(fd) < 0 || pwrite(fd, "x", 1, FILE_SIZE - 1) != 1)
		die("past the synced end: setup");
	struct view v;
	view_open(&v, path);
	uint32_t off = FILE_SIZE / 2, len = 4 * ALIGN;
	uint8_t *p = v.buf;
	static const char *const way[] = { "direct pread", "libaio", "io_uring" };
	int bad = 0;
	for (int w = 0; w < 3 && !bad; w++) {
		memset(p, 0xee, len);
		ssize_t n = len;
		if (w == 0)
			n = pread(v.dfd, p, len, off);
		else if (w == 1)
			n = batch_aio(&v, false, 1, &off, &len, &p);
		else
			n = batch_uring(&v, false, 1, &off, &len, &p);
		bad = n != (ssize_t)len || p[0] || memcmp(p, p + 1, len - 1);
		if (bad)
			fprintf(stderr, "coherence: a %s of [%u, +%u) past the synced end gave %zd bytes, %#x first\n",
				way[w], off, len, n, p[0]);
	}
	view_close(&v);
	close(fd);
	return bad;
}

/* Unaligned buffered writes of a few pages, each read back at once
 * through the mapping while the racers read the range and ask for its
 * attributes: a page the write made up to date must not be dropped and
 * read back from before the write reached the filesystem.  0 or 1. */
static int
buffered_burst(struct view *v, unsigned long n)
{
	for (unsigned long i = 1; i <= n; i++) {
		uint32_t len = 6 * ALIGN, off = (uint32_t)(rnd() % (FILE_SIZE / ALIGN - 7)) * ALIGN;
		off += 1 + (uint32_t)(rnd() % (ALIGN - 1));
		hot->off = off;
		hot->len = len;
		fill(v->buf + off, len);
		if (pwrite(v->fd, v->buf + off, len, off) != (ssize_t)len)
			die("pwrite");
		memcpy(model + off, v->buf + off, len);
		uint32_t j = 0;
		while (j < len && v->map[off + j] == model[off + j])
			j++;
		if (j < len) {
			fprintf(stderr, "coherence: buffered write %lu of [%u, +%u): the mapping gives %#x at %u, the model %#x\n",
				i, off, len, v->map[off + j], off + j, model[off + j]);
			return 1;
		}
	}
	return 0;
}

/* The file starts as FILE_SIZE bytes of a pattern the model holds too. */
static void
start_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("create");
	fill(model, FILE_SIZE);
	if (pwrite(fd, model, FILE_SIZE, 0) != FILE_SIZE || fsync(fd) < 0)
		die("write the first contents");
	close(fd);
}

int
main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: coherence FILE SEED STEPS\n");
		return 2;
	}
	const char *path = argv[1];
	uint64_t seed = strtoull(argv[2], NULL, 0) * 2654435761u + 1;
	unsigned long steps = strtoul(argv[3], NULL, 0);
	model = mmap(NULL, FILE_SIZE + ALIGN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (model == MAP_FAILED)
		die("mmap the model");
	hot = (struct hot *)(model + FILE_SIZE);
	rng = seed;
	if (read_past_synced_end(path))
		return 1;
	start_file(path);
	int to_v[2], from_v[2];
	if (pipe(to_v) < 0 || pipe(from_v) < 0)
		die("pipe");
	spawn(verifier, path, to_v[0], from_v[1], seed ^ 0x5eed);
	pid_t racers[RACERS];
	for (int i = 0; i < RACERS; i++)
		racers[i] = spawn(racer_main, path, -1, -1, seed + 7 + (uint64_t)i);
	struct view v;
	view_open(&v, path);
	unsigned long writes[W_KINDS] = { 0 }, reads = 0;
	int bad = buffered_burst(&v, BURST);
	for (unsigned long s = 1; s <= steps && !bad; s++) {
		enum wkind k = step_kinds[rnd() % (sizeof(step_kinds) / sizeof(step_kinds[0]))];
		write_step(&v, k);
		writes[k]++;
		for (int i = 0; i < 3 && !bad; i++, reads++)
			bad = check_read(&v, (enum rkind)(rnd() % R_KINDS), i == 0, "writer", s, k);
		struct order o = { s, (int)k, last_off, last_len };
		uint8_t vb = 1;
		if (!bad && (write(to_v[1], &o, sizeof(o)) != (ssize_t)sizeof(o) || read(from_v[0], &vb, 1) != 1))
			die("verifier");
		bad |= vb;
		reads += 3;
	}
	struct order stop = { .last = -1 };
	(void)!write(to_v[1], &stop, sizeof(stop));
	for (int i = 0; i < RACERS; i++)
		kill(racers[i], SIGKILL);
	for (int i = 0; i < RACERS + 1; i++)
		wait(NULL);
	view_close(&v);
	printf("coherence: %s after %lu steps (buffered %lu, direct %lu, libaio %lu, io_uring %lu, mmap %lu, "
	       "truncate %lu), %lu reads checked, after %d buffered writes read back at once\n",
	       bad ? "FAILED" : "ok", writes[0] + writes[1] + writes[2] + writes[3] + writes[4] + writes[5],
	       writes[0], writes[1], writes[2], writes[3], writes[4], writes[5], reads, BURST);
	return bad;
}
