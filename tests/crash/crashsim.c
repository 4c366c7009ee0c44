/*
 * crashsim.c — crash-state testing.
 *
 *   crashsim [-s SEED] [-n OPS] [-t TORN_PER_POINT] [-F] [-S] [-P] [-R] [-D] [-V] [-Z] [-v]
 *
 * 1. Make a small image, mount it through the real code with the block
 *    trace on (bdev.c records every write and every flush), and run a
 *    random workload on the lfs.h API: create (by name, or as an O_TMPFILE
 *    file then named by link), write, overwrite, fallocate (unwritten
 *    blocks granted, past the end too) and punch, truncate, rename, link,
 *    unlink, mkdir, rmdir, fsync, extended attributes (one of up to
 *    30000 bytes, and up to hundreds of small ones: several XATTR blocks),
 *    and O_TMPFILE files written, fsynced
 *    and left open, which every later state holds as orphans for the
 *    mount to free.  A file is "sealed" when
 *    an fsync of it returns: it is never changed again, and the trace
 *    length at that moment is noted.  Then drop everything: a crash.
 * 2. For every flush point in the trace, rebuild the image as of that
 *    point, and TORN_PER_POINT torn variants (a random subset of the
 *    writes issued after the flush, one of them half written); mount
 *    each with the real mount code (checkpoint + roll-forward), run the
 *    fsck checks, and check that every file sealed before the point (its
 *    flush) is there with its exact content and attributes.
 * With -F the workload starts on a full filesystem: eight files fill it to
 * ENOSPC, the even ones fsynced, the odd ones deleted at random by the
 * workload; and every state must also let every file be deleted.
 * With -S the workload also makes snapshots (each the model's files as
 * they are then) and deletes some: in every state a snapshot whose
 * making returned is there, and reads exactly its files, until its
 * deletion began; one not begun yet, or deleted, is not there; one in
 * between is there whole or not at all.
 * With -V the workload also receives trees as snapshots, in steps
 * (recv_model.h): a state shows a received snapshot whole or not at
 * all, as its commit had returned or not begun, and once mounted
 * read-write no staged tree is left, the snapshots unharmed, and the
 * next mount finds the space accounted (fsck).  With -F -V a turn of
 * an odd file is cut off after the fill and a receive begun in its room
 * (a run whose receives never began would check none).
 * With -D the filesystem is mounted with -o discard and the workload
 * gives clean segments back now and then (lfs_trim_freed, and lfs_trim
 * as FITRIM does): each discard is traced as zeros over its range, in
 * flight like a write until the next flush, so the torn variants hold
 * discards landed, not landed, or cut short.
 * With -P checkpoints are kept for an hour (lfs_set_protection), so
 * that on a full filesystem (-F -P) the oldest give way to the writes
 * (lfs_retain_give_way) and the states include those between a give-way
 * and the checkpoint that commits it; a run where none gave way fails.
 * With -Z the filesystem is resized while the workload runs, as
 * lfs-resize asks a daemon to: shrunk by a quarter the log head is in the segments it gives up (the tail's live
 * blocks moved out, then the new size committed), grown back a sixth of
 * the run later.  Every state must mount
 * with the old size or the new one, fsck clean, with every file synced
 * before it whole; a run that moved nothing, or whose states all have
 * one size, fails.
 * With -R the workload is another: two files past their first tree of
 * block map (over 2 MiB), overwritten at random and fsynced again and
 * again, extended and cut now and then: the fsyncs whose records are
 * relink records (format.h, LFS_DI_RELINK), chained, and plain flushes
 * and checkpoints between them.  Every state must hold each file as it
 * was at some moment between its last fsync before the state and the
 * last write that may have reached the disk: never older, never a mix.
 * Exit 0 when every state passes; otherwise the first failures are
 * described (seed, state, what was wrong) and the exit status is 1.
 */
#include "lfs_int.h"
#include "recv_model.h"
#include "state_img.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define IMG_BYTES (12u << 20)
#define SEG_BYTES (64u << 10)
#define MAX_FILES 64

static uint64_t rng_state;
static uint64_t
rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static uint64_t rnd_below(uint64_t n) { return n ? rnd() % n : 0; }

struct file {
	char name[32];
	uint64_t dir;               /* parent inode */
	uint64_t ino;
	uint8_t *data;
	size_t size;
	bool exists, sealed;
	off_t sealed_at;            /* trace length when its fsync returned */
	uint8_t *xv;                /* user.x, when has_x */
	size_t xlen;
	bool has_x;
	unsigned nsmall;            /* user.s0 .. user.s<nsmall-1>, values small_value() */
};

#define MAX_SNAPS 6

/* A snapshot the workload made: the model's files then, and when it was
 * made and deleted (trace lengths; 0: not deleted). */
struct snap {
	char name[16];
	uint64_t seq;
	off_t begun, done, del_begun, del_done;
	struct snap_file {
		uint64_t dir;
		char name[32];
		uint8_t *data;
		size_t size;
	} f[MAX_FILES];
	int n;
};

/* -R: a large file overwritten after its fsyncs, and its history: its
 * content at version v is `init` with ops[0..v-1] applied; versions
 * sealed[] were fsynced (op count, trace length then). */
#define BIG_FILES 2
#define BIG_BYTES (2560u << 10)
struct big {
	char name[16];
	uint64_t ino;
	uint8_t *init;
	size_t init_size;
	struct big_op {
		size_t off, len;        /* a write; len 0: the size set to off */
		uint8_t *data;
		off_t t;                /* trace length when it returned */
	} *ops;
	size_t nops;
	struct big_seal {
		size_t v;
		off_t at;
	} *seals;
	size_t nseals;
};

struct workload {
	bool resize;                /* -Z */
	int resizes;                /* done */
	unsigned resized_at;        /* the op of the last one */
	uint64_t moved;             /* blocks the shrink moved */
	uint64_t nsegs[2];          /* -Z: before and after the shrink */
	struct big big[BIG_FILES];
	bool relink;                /* -R */
	bool discard;               /* -D */
	uint64_t relink_records;    /* -R: that the workload wrote */
	struct snap snaps[MAX_SNAPS];
	int nsnaps;
	bool snapshots;             /* -S */
	bool receive;               /* -V */
	struct recv_set recvs;
	struct lfs_fs *fs;
	struct file files[MAX_FILES];
	uint64_t dirs[4];
	int nfiles;
	const char *trace;
	unsigned ops;
	bool verbose;
	bool full;                  /* -F */
	bool protect;               /* -P */
	size_t max_size;            /* of any file, for the checker's buffer */
};

static const struct lfs_cred cred = { 0, 0, 0 };

static off_t
trace_len(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* A workload of a few thousand operations on the 12 MiB image writes
 * tens of MiB.  Far more is cleaning or checkpointing in a loop: the
 * run fails at once rather than fill the disk with its trace (one such
 * loop wrote 29 GB). */
#define TRACE_MAX ((off_t)1 << 30)

static int
runaway(const struct workload *w, unsigned op)
{
	off_t len = trace_len(w->trace);
	if (len <= TRACE_MAX)
		return 0;
	fprintf(stderr, "crashsim: after op %u the trace holds %lld MiB for a %u MiB image: the filesystem writes in a loop\n",
		op, (long long)(len >> 20), IMG_BYTES >> 20);
	return -EFBIG;
}

static int
do_write(struct workload *w, struct file *f)
{
	size_t off = rnd_below(f->size + 8192), len = 1 + rnd_below(rnd_below(4) ? 6000 : 70000);
	if (off + len > 400000)
		return 0;
	uint8_t *buf = malloc(len);
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)rnd();
	ssize_t n = lfs_write(w->fs, f->ino, buf, len, (off_t)off, NULL);
	if (n < 0 || n > (ssize_t)len) {
		free(buf);
		if (n == -ENOSPC)
			return -ENOSPC;
		fprintf(stderr, "crashsim: write %s: %zd\n", f->name, n);
		return -EIO;
	}
	/* near the end of the space a write is short: it stored n bytes */
	int ret = n < (ssize_t)len ? -ENOSPC : 0;
	len = (size_t)n;
	if (off + len > f->size) {
		f->data = realloc(f->data, off + len);
		memset(f->data + f->size, 0, off + len - f->size);
		f->size = off + len;
	}
	memcpy(f->data + off, buf, len);
	free(buf);
	if (f->size > w->max_size)
		w->max_size = f->size;
	return ret;
}

/* fallocate: a grant (unwritten blocks, the size moved or kept) or a
 * punch; the model follows what succeeded. */
static int
do_fallocate(struct workload *w, struct file *f)
{
	static const int modes[] = { 0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE };
	int mode = modes[rnd_below(3)];
	size_t off = rnd_below(f->size + 8192), len = 1 + rnd_below(100000);
	if (off + len > 400000)
		return 0;
	int err = lfs_fallocate(w->fs, f->ino, mode, (off_t)off, (off_t)len);
	if (err)
		return err;
	if (mode == 0 && off + len > f->size) {
		f->data = realloc(f->data, off + len);
		memset(f->data + f->size, 0, off + len - f->size);
		f->size = off + len;
	} else if (mode & FALLOC_FL_PUNCH_HOLE && off < f->size) {
		memset(f->data + off, 0, (off + len < f->size ? off + len : f->size) - off);
	}
	if (f->size > w->max_size)
		w->max_size = f->size;
	return 0;
}

/* The value of the small attribute user.s<i>: a few bytes from i. */
static size_t
small_value(unsigned i, char *buf)
{
	return (size_t)snprintf(buf, 32, "%u-%u", i, i * 2654435761u);
}

/* Set (or remove) user.x, or add small attributes; the model follows
 * only what succeeded. */
static int
do_xattr(struct workload *w, struct file *f)
{
	int err = 0;
	if (rnd_below(3) == 0) {
		unsigned add = 1 + (unsigned)rnd_below(rnd_below(4) ? 10 : 200);
		char name[32], v[32];
		for (unsigned k = 0; k < add && !err; k++) {
			snprintf(name, sizeof(name), "user.s%u", f->nsmall);
			err = lfs_setxattr(w->fs, f->ino, name, v, small_value(f->nsmall, v), 0);
			if (!err)
				f->nsmall++;
		}
		return err;
	}
	if (f->has_x && rnd_below(4) == 0) {
		err = lfs_removexattr(w->fs, f->ino, "user.x");
		if (!err)
			f->has_x = false;
		return err;
	}
	size_t len = rnd_below(2) ? rnd_below(200) : rnd_below(30000);
	uint8_t *v = malloc(len + 1);
	for (size_t i = 0; i < len; i++)
		v[i] = (uint8_t)rnd();
	err = lfs_setxattr(w->fs, f->ino, "user.x", v, len, 0);
	if (err) {
		free(v);
		return err;
	}
	free(f->xv);
	f->xv = v;
	f->xlen = len;
	f->has_x = true;
	return 0;
}

/* The attributes of f on fs are those of the model: NULL, or what differs. */
static const char *
xattrs_differ(struct lfs_fs *fs, uint64_t ino, const struct file *f)
{
	static uint8_t buf[LFS_XATTR_SIZE_MAX];
	ssize_t n = lfs_getxattr(fs, ino, "user.x", buf, sizeof(buf));
	if (f->has_x ? n != (ssize_t)f->xlen || memcmp(buf, f->xv, f->xlen) : n != -ENODATA)
		return "user.x differs";
	n = lfs_listxattr(fs, ino, (char *)buf, sizeof(buf));
	size_t names = 0;
	for (ssize_t i = 0; i < n; i++)
		names += buf[i] == '\0';
	if (n < 0 || names != f->nsmall + f->has_x)
		return "the number of attributes differs";
	for (unsigned i = 0; i < f->nsmall; i += 1 + i / 4) {
		char name[32], v[32], got[32];
		snprintf(name, sizeof(name), "user.s%u", i);
		size_t len = small_value(i, v);
		if (lfs_getxattr(fs, ino, name, got, sizeof(got)) != (ssize_t)len || memcmp(got, v, len))
			return "a small attribute differs";
	}
	return NULL;
}

/* Writes files[first], files[first + step], ... in turns of 64 KiB
 * until a write comes back short (the filesystem is full). */
static int
fill_turns(struct workload *w, int first, int step)
{
	uint8_t *buf = malloc(65536);
	int err = buf ? 0 : -ENOMEM;
	bool full = false;
	while (!err && !full) {
		for (int i = first; i < 8 && !full; i += step) {
			struct file *f = &w->files[i];
			for (size_t k = 0; k < 65536; k++)
				buf[k] = (uint8_t)rnd();
			ssize_t n = lfs_write(w->fs, f->ino, buf, 65536, (off_t)f->size, NULL);
			if (n < 0 && n != -ENOSPC)
				err = (int)n;
			if (n < 65536)
				full = true;
			if (n > 0) {
				f->data = realloc(f->data, f->size + (size_t)n);
				memcpy(f->data + f->size, buf, (size_t)n);
				f->size += (size_t)n;
				if (f->size > w->max_size)
					w->max_size = f->size;
			}
		}
	}
	free(buf);
	return err;
}

/* Creates files[first], files[first + step], ... empty, named fill<i>. */
static int
fill_create(struct workload *w, int first, int step)
{
	struct stat st;
	int err = 0;
	for (int i = first; i < 8 && !err; i += step) {
		struct file *f = &w->files[i];
		snprintf(f->name, sizeof(f->name), "fill%d", i);
		f->dir = LFS_ROOT_INO;
		f->size = 0;
		err = lfs_create(w->fs, f->dir, f->name, 0644, true, &cred, &st);
		f->ino = st.st_ino;
		f->exists = !err;
	}
	return err;
}

/* -F -P: the odd files deleted and written again to the full point.
 * Kept checkpoints hold what the deleted ones had, about half the
 * capacity, more than the slack's clean segments can take: so the
 * refill can only go on where they give way (lfs_retain_give_way). */
static int
refill_odd(struct workload *w)
{
	int err = 0;
	for (int i = 1; i < 8 && !err; i += 2) {
		struct file *f = &w->files[i];
		err = lfs_unlink(w->fs, f->dir, f->name);
		f->exists = false;
		/* closed and forgotten, as by the kernel: its blocks are free */
		lfs_release(w->fs, f->ino);
		lfs_forget(w->fs, f->ino, 1);
	}
	if (!err)
		err = fill_create(w, 1, 2);
	return err ? err : fill_turns(w, 1, 2);
}

/* -F -V: the last turn of files[1] cut off and a receive begun in the
 * room it leaves, so that every run has one on the full filesystem (its
 * files then compete with the workload's writes for that room), not
 * only those whose workload happens to free room before a receive. */
static int
begin_receive(struct workload *w)
{
	struct file *f = &w->files[1];
	struct stat a = { .st_size = (off_t)(f->size > 65536 ? f->size - 65536 : 0) }, st;
	int err = lfs_setattr(w->fs, f->ino, &a, LFS_SET_SIZE, &st);
	if (!err)
		f->size = (size_t)a.st_size;
	return err ? err : recvsim_op(&w->recvs, w->fs);
}

/* -F: fill the filesystem with files[0..7] in turns of 64 KiB until a
 * write fails (with -P, the odd ones again: refill_odd), then fsync
 * (seal) the even ones (with -V, then a receive begun: begin_receive). */
static int
fill(struct workload *w)
{
	int err = fill_create(w, 0, 1);
	if (!err)
		err = fill_turns(w, 0, 1);
	if (!err && w->protect)
		err = refill_odd(w);
	for (int i = 0; i < 8 && !err; i += 2) {
		if ((err = lfs_fsync(w->fs, w->files[i].ino, false)))
			break;
		w->files[i].sealed = true;
		w->files[i].sealed_at = trace_len(w->trace);
	}
	for (int i = 0; i < 8; i++)
		lfs_release(w->fs, w->files[i].ino);
	return !err && w->receive ? begin_receive(w) : err;
}

/* An O_TMPFILE file written and fsynced, never closed nor named: from
 * here on every crash state has an orphan that mounting frees. */
static int
tmpfile_orphan(struct workload *w)
{
	struct stat st;
	int err = lfs_tmpfile(w->fs, w->dirs[rnd_below(4)], 0600, &cred, &st);
	if (err)
		return err;
	uint8_t buf[9000];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	ssize_t n = lfs_write(w->fs, st.st_ino, buf, sizeof(buf), 0, NULL);
	if (n < 0)
		return (int)n;
	return lfs_fsync(w->fs, st.st_ino, false);
}

/* -S: make a snapshot of the model as it is, or delete one made. */
static int
snapshot_op(struct workload *w)
{
	if (w->nsnaps < MAX_SNAPS && rnd_below(3)) {
		struct snap *s = &w->snaps[w->nsnaps];
		snprintf(s->name, sizeof(s->name), "s%d", w->nsnaps);
		s->n = 0;
		for (int i = 0; i < MAX_FILES; i++) {
			const struct file *f = &w->files[i];
			if (!f->exists)
				continue;
			struct snap_file *sf = &s->f[s->n++];
			sf->dir = f->dir;
			snprintf(sf->name, sizeof(sf->name), "%s", f->name);
			sf->size = f->size;
			sf->data = malloc(f->size + 1);
			if (f->size)
				memcpy(sf->data, f->data, f->size);
		}
		s->begun = trace_len(w->trace);
		int err = lfs_snapshot_make(w->fs, s->name, &s->seq);
		s->done = trace_len(w->trace);
		if (err) {
			for (int i = 0; i < s->n; i++)
				free(s->f[i].data);
			return err == -ENOSPC ? 0 : err;
		}
		w->nsnaps++;
		return 0;
	}
	for (int k = 0; k < w->nsnaps; k++) {
		struct snap *s = &w->snaps[k];
		if (s->del_begun || rnd_below(2))
			continue;
		s->del_begun = trace_len(w->trace);
		int err = lfs_snapshot_delete(w->fs, s->seq);
		s->del_done = trace_len(w->trace);
		/* deleting frees space: it must not fail for want of it */
		return err;
	}
	return 0;
}

/* -Z: resize to `bytes` as the daemon does for lfs-resize. */
static int
resize_op(struct workload *w, uint64_t bytes)
{
	struct lfs_resize_info ri;
	char why[512];
	int err = lfs_resize(w->fs, bytes, LFS_RESIZE_YIELD, &ri, why, sizeof(why));
	if (err) {
		if (w->verbose || err != -ENOSPC)
			fprintf(stderr, "crashsim: resize to %llu bytes: %s\n", (unsigned long long)bytes, why);
		return err;
	}
	if (!w->resizes++) {
		w->nsegs[0] = ri.old_nsegs;
		w->nsegs[1] = ri.new_nsegs;
	}
	w->moved += ri.moved_blocks;
	return 0;
}

/* -Z: shrink to end below the log head, at half its segment or, if
 * what the filesystem holds does not fit there (or not while it moves),
 * a few segments further on: 1 when no end below the head will do yet
 * (the head must move on first), 0 once shrunk, or -errno. */
static int
shrink_below_head(struct workload *w)
{
	const struct lfs_super *sb = &w->fs->sb;
	uint64_t head = w->fs->cur_seg < w->fs->next_seg ? w->fs->cur_seg : w->fs->next_seg;
	for (uint64_t end = head / 2; end + 2 < head; end += 4) {
		uint64_t bytes = (sb->seg0 + end * sb->seg_blocks + 1) * sb->block_size;
		struct lfs_resize_info ri;
		char why[512];
		int err = lfs_resize(w->fs, bytes, LFS_RESIZE_DRY, &ri, why, sizeof(why));
		if (err == -EINVAL || (err == -ENOSPC && ri.min_bytes))
			continue; /* the data would not fit there */
		if (!err)
			err = resize_op(w, bytes);
		if (err != -ENOSPC)
			return err;
	}
	/* no end below the head holds the data yet: the head moves on,
	 * half a MiB rewritten and synced (a file outside the model) */
	struct stat st;
	int err = lfs_create(w->fs, LFS_ROOT_INO, "zfill", 0644, false, &cred, &st);
	static uint8_t fill[512 << 10];
	memset(fill, (int)rnd_below(256), sizeof(fill));
	ssize_t n = err ? err : lfs_write(w->fs, st.st_ino, fill, sizeof(fill), 0, NULL);
	err = n < 0 ? (int)n : lfs_fsync(w->fs, st.st_ino, false);
	if (!err) {
		lfs_release(w->fs, st.st_ino);
		lfs_forget(w->fs, st.st_ino, 1);
	}
	return err == -ENOSPC ? 1 : err ? err : 1;
}

static int
workload_run(struct workload *w)
{
	struct stat st;
	for (int d = 0; d < 4; d++) {
		char name[8];
		snprintf(name, sizeof(name), "d%d", d);
		if (lfs_mkdir(w->fs, d ? w->dirs[0] : LFS_ROOT_INO, name, 0755, &cred, &st))
			return -EIO;
		w->dirs[d] = st.st_ino;
	}
	int ferr = w->full ? fill(w) : 0;
	if (ferr)
		return ferr;
	for (unsigned op = 0; op < w->ops; op++) {
		/* half way, a shrink to an end below the log head (its
		 * newest blocks there to move), the grow back a sixth later */
		bool shrink = !w->resizes && op >= w->ops / 2;
		if (w->resize && (shrink || (w->resizes == 1 && op == w->resized_at + w->ops / 6))) {
			int err = shrink ? shrink_below_head(w) : resize_op(w, IMG_BYTES);
			if (err < 0)
				return err;
			if (!err)
				w->resized_at = op;
		}
		if (w->discard && rnd_below(100) < 5) {
			/* -o discard's run, or FITRIM (a checkpoint, then every
			 * clean segment not yet given back) */
			uint64_t t;
			int err = rnd_below(2) ? lfs_trim_freed(w->fs) : lfs_trim(w->fs, 0, UINT64_MAX, 0, &t);
			if (err) {
				fprintf(stderr, "crashsim: op %u (discard): %s\n", op, strerror(-err));
				return err;
			}
			continue;
		}
		if (w->receive && rnd_below(100) < 6) {
			int err = recvsim_op(&w->recvs, w->fs);
			if (err) {
				fprintf(stderr, "crashsim: op %u (receive): %s\n", op, strerror(-err));
				return err;
			}
			continue;
		}
		if (w->snapshots && rnd_below(100) < 2) {
			int err = snapshot_op(w);
			if (err) {
				fprintf(stderr, "crashsim: op %u (snapshot): %s\n", op, strerror(-err));
				return err;
			}
			continue;
		}
		struct file *f = &w->files[rnd_below(MAX_FILES)];
		int kind = (int)rnd_below(100);
		int err = 0;
		if (f->sealed)
			continue;
		if (!f->exists) {
			snprintf(f->name, sizeof(f->name), "f%d-%u", (int)(f - w->files), op);
			f->dir = rnd_below(2) ? LFS_ROOT_INO : w->dirs[rnd_below(4)];
			if (kind < 80) {
				err = lfs_create(w->fs, f->dir, f->name, 0644, true, &cred, &st);
			} else {
				/* O_TMPFILE, then linkat: the name's lookup stays */
				struct stat t;
				err = lfs_tmpfile(w->fs, f->dir, 0644, &cred, &t);
				if (!err) {
					err = lfs_link(w->fs, t.st_ino, f->dir, f->name, &st);
					lfs_forget(w->fs, t.st_ino, 1);
				}
			}
			if (!err) {
				f->ino = st.st_ino;
				f->exists = true;
				f->size = 0;
				f->has_x = false;
				f->nsmall = 0;
				lfs_release(w->fs, f->ino);
			}
		} else if (kind < 3) {
			err = tmpfile_orphan(w);
		} else if (kind < 40) {
			err = do_write(w, f);
		} else if (kind < 45) {
			err = do_fallocate(w, f);
		} else if (kind < 55) {
			size_t ns = rnd_below(f->size + 5000);
			struct stat a = { .st_size = (off_t)ns };
			err = lfs_setattr(w->fs, f->ino, &a, LFS_SET_SIZE, &st);
			if (!err) {
				f->data = realloc(f->data, ns + 1);
				if (ns > f->size)
					memset(f->data + f->size, 0, ns - f->size);
				f->size = ns;
			}
		} else if (kind < 65) {
			char nn[32];
			snprintf(nn, sizeof(nn), "r%d-%u", (int)(f - w->files), op);
			uint64_t nd = rnd_below(2) ? LFS_ROOT_INO : w->dirs[rnd_below(4)];
			err = lfs_rename(w->fs, f->dir, f->name, nd, nn, 0);
			if (!err) {
				snprintf(f->name, sizeof(f->name), "%s", nn);
				f->dir = nd;
			}
		} else if (kind < 72) {
			/* a hard link then unlink of the old name: the inode moves */
			char nn[32];
			snprintf(nn, sizeof(nn), "l%d-%u", (int)(f - w->files), op);
			err = lfs_link(w->fs, f->ino, w->dirs[1], nn, &st);
			if (!err)
				err = lfs_unlink(w->fs, f->dir, f->name);
			if (!err) {
				snprintf(f->name, sizeof(f->name), "%s", nn);
				f->dir = w->dirs[1];
			}
		} else if (kind < 78) {
			err = lfs_unlink(w->fs, f->dir, f->name);
			if (!err) {
				lfs_forget(w->fs, f->ino, 1);
				f->exists = false;
			}
		} else if (kind < 84) {
			char dn[32];
			snprintf(dn, sizeof(dn), "sub%u", op);
			err = lfs_mkdir(w->fs, w->dirs[rnd_below(4)], dn, 0700, &cred, &st);
			if (!err && rnd_below(2))
				err = lfs_rmdir(w->fs, w->dirs[0], dn) == -ENOENT ? 0 : 0;
		} else if (kind < 90) {
			err = do_xattr(w, f);
		} else {
			/* fsync seals the file: from now on it must survive */
			err = lfs_fsync(w->fs, f->ino, rnd_below(2));
			if (!err) {
				f->sealed = true;
				f->sealed_at = trace_len(w->trace);
			}
		}
		if (err && err != -ENOSPC) {
			fprintf(stderr, "crashsim: op %u (kind %d) on %s: %s\n", op, kind, f->name, strerror(-err));
			return err;
		}
		if ((err = runaway(w, op)))
			return err;
	}
	return 0;
}

static int
big_write(struct workload *w, struct big *b, size_t off, size_t len)
{
	uint8_t *buf = malloc(len);
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)rnd();
	ssize_t n = lfs_write(w->fs, b->ino, buf, len, (off_t)off, NULL);
	if (n != (ssize_t)len) {
		free(buf);
		return n < 0 ? (int)n : -EIO;
	}
	b->ops = realloc(b->ops, (b->nops + 1) * sizeof(*b->ops));
	b->ops[b->nops++] = (struct big_op){ off, len, buf, trace_len(w->trace) };
	return 0;
}

static int
big_seal(struct workload *w, struct big *b)
{
	int err = lfs_fsync(w->fs, b->ino, rnd_below(2));
	if (!err) {
		b->seals = realloc(b->seals, (b->nseals + 1) * sizeof(*b->seals));
		b->seals[b->nseals++] = (struct big_seal){ b->nops, trace_len(w->trace) };
	}
	return err;
}

/* Version i + 1 in buf (size in *size) from version i there. */
static void
big_apply(const struct big *b, size_t i, uint8_t *buf, size_t *size)
{
	const struct big_op *o = &b->ops[i];
	if (o->len) {
		if (o->off + o->len > *size) {
			memset(buf + *size, 0, o->off > *size ? o->off - *size : 0);
			*size = o->off + o->len;
		}
		memcpy(buf + o->off, o->data, o->len);
	} else {
		if (o->off > *size)
			memset(buf + *size, 0, o->off - *size);
		*size = o->off;
	}
}

/* The size of the newest version. */
static size_t
big_size(const struct big *b)
{
	size_t size = b->init_size;
	for (size_t i = 0; i < b->nops; i++) {
		const struct big_op *o = &b->ops[i];
		size = !o->len ? o->off : o->off + o->len > size ? o->off + o->len : size;
	}
	return size;
}

/* The content of version v (size in *size), in buf. */
static void
big_version(const struct big *b, size_t v, uint8_t *buf, size_t *size)
{
	memcpy(buf, b->init, b->init_size);
	*size = b->init_size;
	for (size_t i = 0; i < v; i++)
		big_apply(b, i, buf, size);
}

static int
relink_workload(struct workload *w)
{
	struct stat st;
	for (int i = 0; i < BIG_FILES; i++) {
		struct big *b = &w->big[i];
		snprintf(b->name, sizeof(b->name), "big%d", i);
		int err = lfs_create(w->fs, LFS_ROOT_INO, b->name, 0644, true, &cred, &st);
		if (err)
			return err;
		b->ino = st.st_ino;
		lfs_release(w->fs, b->ino);
		b->init = malloc(BIG_BYTES);
		for (size_t k = 0; k < BIG_BYTES; k++)
			b->init[k] = (uint8_t)rnd();
		for (size_t off = 0; off < BIG_BYTES && !err; off += 256u << 10)
			if (lfs_write(w->fs, b->ino, b->init + off, 256u << 10, (off_t)off, NULL) != 256 << 10)
				err = -EIO;
		b->init_size = BIG_BYTES;
		if (err || (err = big_seal(w, b)))
			return err;
	}
	/* past the direct blocks and the first tree's one leaf */
	const size_t tree1 = (12u + 512u) * 4096u;
	for (unsigned op = 0; op < w->ops; op++) {
		struct big *b = &w->big[rnd_below(BIG_FILES)];
		size_t size = big_size(b), maxsz = BIG_BYTES + (256u << 10);
		unsigned kind = (unsigned)rnd_below(100);
		int err = 0;
		if (kind < 60 && size > tree1 + 4096) {
			size_t off = tree1 + rnd_below(size - tree1 - 4096), len = 1 + rnd_below(3 * 4096);
			if (off + len > size)
				len = size - off;
			err = big_write(w, b, off, len);
			if (!err && rnd_below(2))
				err = big_seal(w, b);
		} else if (kind < 70) {
			size_t off = rnd_below(size), len = 1 + rnd_below(8192);
			if (off + len > size)
				len = size - off;
			err = big_write(w, b, off, len);
		} else if (kind < 77 && size + 16384 < maxsz) {
			err = big_write(w, b, size, 1 + rnd_below(16384));
		} else if (kind < 81 && size > tree1 + (64u << 10)) {
			size_t ns = size - rnd_below(64u << 10);
			struct stat a = { .st_size = (off_t)ns };
			err = lfs_setattr(w->fs, b->ino, &a, LFS_SET_SIZE, &st);
			if (!err) {
				b->ops = realloc(b->ops, (b->nops + 1) * sizeof(*b->ops));
				b->ops[b->nops++] = (struct big_op){ ns, 0, NULL, trace_len(w->trace) };
			}
		} else {
			err = big_seal(w, b);
		}
		if (err) {
			fprintf(stderr, "crashsim: -R op %u (kind %u) on %s: %s\n", op, kind, b->name, strerror(-err));
			return err;
		}
		if ((err = runaway(w, op)))
			return err;
	}
	return 0;
}

/* ---------------------------------------------------------------- */

struct rec {
	uint32_t type;
	uint32_t len;
	uint64_t off;
	const uint8_t *data;
	off_t end;                  /* trace offset just after this record */
};

static struct rec *
parse_trace(const uint8_t *t, size_t len, size_t *n)
{
	size_t cap = 1024, k = 0, p = 0;
	struct rec *r = malloc(cap * sizeof(*r));
	while (p + 16 <= len) {
		if (k == cap)
			r = realloc(r, (cap *= 2) * sizeof(*r));
		r[k].type = lfs_get32(t + p);
		r[k].len = lfs_get32(t + p + 4);
		r[k].off = lfs_get64(t + p + 8);
		r[k].data = t + p + 16;
		p += 16 + r[k].len;
		r[k].end = (off_t)p;
		/* a discard: zeros over the length its data holds */
		if (r[k].type == LFS_TRACE_DISCARD) {
			uint64_t n = r[k].len == 8 && p <= len ? lfs_get64(r[k].data) : 0;
			r[k].len = n <= IMG_BYTES ? (uint32_t)n : 0;
			r[k].data = NULL;
		}
		k++;
	}
	*n = k;
	return r;
}

struct checker {
	struct rec *recs;
	size_t nrecs;
	struct workload *w;
	struct state_img si;        /* the durable image, and the one mounted */
	uint64_t states, failures;
	uint64_t same;              /* states identical to one checked at their point */
	uint64_t views;             /* -S: snapshots read back */
	uint64_t sized[2];          /* -Z: states at the old size, at the new */
	uint64_t big_versions;      /* -R: versions a state was compared with */
	uint64_t relinked_states;   /* -R: states whose roll-forward applied relink records */
	uint64_t discards, discard_states; /* -D: discards traced; states with one in flight */
	off_t inflight_end;         /* the trace up to the flush point checked: its
				       writes in flight may be in a state whole */
	/* buffers for every state: a file read back (max_size + 8 KiB),
	 * and -R a large file and a version of it (BIG_CAP) */
	uint8_t *buf, *got, *want;
	/* the states share most of their segments: each one's fsck walks
	 * and verifies only those written since the last (memo_fsck) */
	struct lfs_fsck_memo *memo;
};
#define BIG_CAP (BIG_BYTES + (320u << 10))

/* -R: each large file as it was at a moment between its last fsync
 * before the point's flush and the last write in flight. */
static void
check_big(struct checker *c, struct lfs_fs *fs, const char *what)
{
	size_t cap = BIG_CAP;
	uint8_t *got = c->got, *want = c->want;
	for (int i = 0; i < BIG_FILES; i++) {
		const struct big *b = &c->w->big[i];
		size_t s = b->nseals;
		while (s > 0 && b->seals[s - 1].at > c->inflight_end) /* as in check_state */
			s--;
		if (!s)
			continue;
		struct stat st;
		int err = lfs_lookup(fs, LFS_ROOT_INO, b->name, &st);
		ssize_t n = err ? err : lfs_read(fs, st.st_ino, got, cap, 0);
		if (n < 0) {
			printf("crashsim: %s: fsynced file %s: %s\n", what, b->name, strerror((int)-n));
			c->failures++;
			break;
		}
		size_t size, v = b->seals[s - 1].v;
		big_version(b, v, want, &size);
		bool found = false;
		for (;;) {
			c->big_versions++;
			if ((size_t)n == size && memcmp(got, want, size) == 0) {
				found = true;
				break;
			}
			/* a version whose group was in flight may be whole */
			if (v == b->nops || b->ops[v].t > c->inflight_end)
				break;
			big_apply(b, v++, want, &size);
		}
		lfs_forget(fs, st.st_ino, 1);
		if (!found) {
			printf("crashsim: %s: file %s (%zd bytes) is none of its versions since its fsync %zu\n", what,
			       b->name, n, s - 1);
			c->failures++;
			break;
		}
	}
}

static int
lookup_path(struct lfs_fs *fs, const struct file *f, struct stat *st)
{
	return lfs_lookup(fs, f->dir, f->name, st);
}

/* The snapshots in the state mounted read-only as fs, as -S demands. */
static void
check_snaps(struct checker *c, struct lfs_fs *fs, off_t durable, const char *what)
{
	uint8_t *buf = c->buf;
	for (int k = 0; k < c->w->nsnaps; k++) {
		const struct snap *s = &c->w->snaps[k];
		bool must = s->done <= durable && !(s->del_begun && s->del_begun <= durable);
		bool mustnt = s->begun > durable || (s->del_done && s->del_done <= durable);
		uint64_t seq = 0;
		bool there = lfs_snapshot_find(fs, s->name, &seq) == 0;
		if ((must && !there) || (mustnt && there) || (there && seq != s->seq)) {
			printf("crashsim: %s: snapshot %s (checkpoint %llu) %s\n", what, s->name,
			       (unsigned long long)s->seq, there && seq != s->seq ? "names another checkpoint" :
							   there ? "is there, but must not be" : "is missing");
			c->failures++;
			break;
		}
		if (!there)
			continue;
		struct lfs_fs *v = NULL;
		int err = lfs_view_open(fs, s->name, false, &v);
		c->views += !err;
		for (int i = 0; !err && i < s->n; i++) {
			const struct snap_file *sf = &s->f[i];
			struct stat st;
			err = lfs_lookup(v, sf->dir, sf->name, &st);
			ssize_t n = err ? err : lfs_read(v, st.st_ino, buf, sf->size + 8192, 0);
			if (err || n != (ssize_t)sf->size || (sf->size && memcmp(buf, sf->data, sf->size))) {
				printf("crashsim: %s: snapshot %s: file %s (%zu bytes) %s\n", what, s->name, sf->name,
				       sf->size, err ? strerror(-err) : "differs");
				c->failures++;
				err = -EIO;
			}
		}
		if (err && err != -EIO) {
			printf("crashsim: %s: snapshot %s cannot be read: %s\n", what, s->name, strerror(-err));
			c->failures++;
		}
		if (v)
			lfs_abandon(v);
		if (err)
			break;
	}
}

static void
memo_forget(uint64_t off, uint64_t len, void *memo)
{
	lfs_fsck_memo_forget(memo, off, len);
}

/* lfs_fsck of the state mounted, its memo told first what was written
 * to the image since its last run. */
static int
memo_fsck(struct checker *c, struct lfs_fs *fs, uint64_t *problems)
{
	int err = state_img_changed(&c->si, memo_forget, c->memo);
	return err ? err : lfs_fsck_memo(fs, c->memo, problems);
}

/* Mount the state now in c->si and check it. */
static int
check_state(struct checker *c, off_t durable_upto, const char *what)
{
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.readonly = true;
	struct lfs_fs *fs;
	int err = lfs_mount(c->si.path, &o, &fs);
	uint64_t problems = 0;
	if (!err && c->w->resize) {
		/* the old size or the new one, nothing between */
		int k = fs->sb.nsegs == c->w->nsegs[0] ? 0 : fs->sb.nsegs == c->w->nsegs[1] ? 1 : -1;
		if (k < 0) {
			printf("crashsim: %s: %llu segments, neither the old size (%llu) nor the new (%llu)\n", what,
			       (unsigned long long)fs->sb.nsegs, (unsigned long long)c->w->nsegs[0],
			       (unsigned long long)c->w->nsegs[1]);
			c->failures++;
		} else {
			c->sized[k]++;
		}
	}
	if (!err) {
		c->relinked_states += fs->rf_relinked > 0;
		err = memo_fsck(c, fs, &problems);
		if (!err && !problems)
			check_snaps(c, fs, durable_upto, what);
		if (!err && !problems && c->w->receive)
			recvsim_check(&c->w->recvs, fs, durable_upto, what, &c->failures, &c->views);
		lfs_abandon(fs);
	}
	if (err || problems) {
		printf("crashsim: %s: %s, %llu fsck problems\n", what, err ? strerror(-err) : "mounted",
		       (unsigned long long)problems);
		const char *keep = getenv("CRASHSIM_KEEP");
		if (keep && !c->failures && (err = state_img_save(&c->si, keep))) /* the first failing state */
			printf("crashsim: CRASHSIM_KEEP=%s: %s\n", keep, strerror(-err));
		c->failures++;
		return 0;
	}
	o.readonly = false;
	o.ckpt_interval_s = 0;
	o.trace_path = c->si.trace_path; /* what it writes is undone after */
	if ((err = lfs_mount(c->si.path, &o, &fs))) {
		printf("crashsim: %s: read-write mount failed: %s\n", what, strerror(-err));
		c->failures++;
		return 0;
	}
	/* a read-write mount frees every orphan before anyone can see it */
	for (uint32_t ino = LFS_ROOT_INO + 1; ino < fs->sb.max_inodes; ino++)
		if ((lfs_imap_get(fs, ino)->flags & (LFS_IMAP_INUSE | LFS_IMAP_ORPHAN)) ==
		    (LFS_IMAP_INUSE | LFS_IMAP_ORPHAN)) {
			printf("crashsim: %s: orphan inode %u not freed by the mount\n", what, ino);
			c->failures++;
			break;
		}
	/* what the mount freed was the live tree's, not a snapshot's */
	if (c->w->receive)
		recvsim_check_gone(&c->w->recvs, fs, durable_upto, what, &c->failures, &c->views);
	uint8_t *buf = c->buf;
	for (int i = 0; i < MAX_FILES; i++) {
		const struct file *f = &c->w->files[i];
		/* an fsync that returned before this point's flush began
		 * had its own flush before: its file is whole whatever of
		 * the writes in flight reached the disk */
		if (!f->sealed || f->sealed_at > c->inflight_end)
			continue;
		struct stat st;
		err = lookup_path(fs, f, &st);
		ssize_t n = err ? err : lfs_read(fs, st.st_ino, buf, f->size + 8192, 0);
		if (err || n != (ssize_t)f->size || (f->size && memcmp(buf, f->data, f->size) != 0)) {
			printf("crashsim: %s: fsynced file %s (%zu bytes) %s\n", what, f->name, f->size,
			       err ? strerror(-err) : n != (ssize_t)f->size ? "has the wrong size" : "has wrong content");
			c->failures++;
			break;
		}
		const char *why = xattrs_differ(fs, st.st_ino, f);
		if (why) {
			printf("crashsim: %s: fsynced file %s: %s\n", what, f->name, why);
			c->failures++;
			break;
		}
		lfs_forget(fs, st.st_ino, 1);
	}
	if (c->w->relink)
		check_big(c, fs, what);
	/* on a full filesystem, right after the crash, deleting works: the
	 * snapshots first (deleting a file they hold frees nothing), which
	 * must always be possible */
	for (int k = 0; c->w->full && k < c->w->nsnaps; k++) {
		uint64_t seq;
		if (lfs_snapshot_find(fs, c->w->snaps[k].name, &seq))
			continue;
		if ((err = lfs_snapshot_delete(fs, seq))) {
			printf("crashsim: %s: deleting snapshot %s after the crash: %s\n", what, c->w->snaps[k].name,
			       strerror(-err));
			c->failures++;
			break;
		}
	}
	if (c->w->full && c->w->receive && recvsim_delete_all(&c->w->recvs, fs, what))
		c->failures++;
	for (int i = 0; c->w->full && i < MAX_FILES; i++) {
		const struct file *f = &c->w->files[i];
		if (!f->name[0])
			continue;
		/* ESTALE: its directory was not made yet at this point */
		err = lfs_unlink(fs, f->dir, f->name);
		if (err && err != -ENOENT && err != -ESTALE) {
			printf("crashsim: %s: deleting %s after the crash: %s\n", what, f->name, strerror(-err));
			c->failures++;
			break;
		}
	}
	err = lfs_unmount(fs);
	if (err) {
		printf("crashsim: %s: unmount after recovery failed: %s\n", what, strerror(-err));
		c->failures++;
	}
	/* -R: what the recovering mount wrote holds the relinks by itself;
	 * -V: what it freed of staged trees leaves the space accounted */
	if (!err && (c->w->relink || c->w->receive)) {
		o.readonly = true;
		if ((err = lfs_mount(c->si.path, &o, &fs))) {
			printf("crashsim: %s: mount after the recovering one failed: %s\n", what, strerror(-err));
			c->failures++;
			return 0;
		}
		if (c->w->relink && fs->rf_relinked) {
			printf("crashsim: %s: relink records rolled forward again after a clean unmount\n", what);
			c->failures++;
		}
		err = memo_fsck(c, fs, &problems);
		if (err || problems) {
			printf("crashsim: %s: after the recovering mount: %s, %llu fsck problems\n", what,
			       err ? strerror(-err) : "mounted", (unsigned long long)problems);
			c->failures++;
		}
		if (c->w->relink)
			check_big(c, fs, what);
		if (c->w->receive && !c->w->full) /* -F: deleted above */
			recvsim_check(&c->w->recvs, fs, durable_upto, what, &c->failures, &c->views);
		lfs_abandon(fs);
	}
	return 0;
}

/* Check the state of flush point `point` (trace record i; the writes
 * first..i-1 in flight), and `torn` torn variants: a random subset of
 * the writes in flight reached the disk, one of them torn.  A variant
 * that makes the same bytes as one checked before at this point is
 * that state again: counted, not mounted again.  Then the writes in
 * flight join the durable image.  0, or -errno if the image cannot be
 * rebuilt. */
static int
check_point(struct checker *c, size_t first, size_t i, unsigned torn, unsigned seed, unsigned point)
{
	off_t durable = first ? c->recs[first - 1].end : 0;
	c->inflight_end = i > first ? c->recs[i - 1].end : durable;
	struct overlay *ov = calloc(torn + 1, sizeof(*ov));
	char what[160];
	int err = 0;
	overlay_init(&ov[0], &c->si);
	bool discarding = false;
	for (size_t j = first; j < i; j++)
		discarding |= c->recs[j].type == LFS_TRACE_DISCARD;
	snprintf(what, sizeof(what), "seed %u flush point %u", seed, point);
	c->states++;
	check_state(c, durable, what);
	err = state_img_undo(&c->si);
	for (unsigned k = 1; k <= torn && i > first && !err; k++) {
		overlay_init(&ov[k], &c->si);
		size_t tornrec = first + rnd_below(i - first);
		for (size_t j = first; j < i; j++) {
			const struct rec *r = &c->recs[j];
			if (j != tornrec && rnd_below(2))
				continue;
			size_t len = r->len;
			if (j == tornrec && len >= 4096)
				len = (rnd_below(len / 4096)) * 4096 + 2048; /* a block written half */
			overlay_add(&ov[k], &c->si, r->off, r->data, len);
		}
		overlay_settle(&ov[k], &c->si);
		c->states++;
		bool seen = false;
		for (unsigned m = 0; m < k && !seen; m++)
			seen = overlay_same(&ov[m], &ov[k], &c->si);
		if (seen) {
			c->same++;
			continue;
		}
		c->discard_states += discarding;
		snprintf(what, sizeof(what), "seed %u flush point %u torn variant %u%s", seed, point, k - 1,
			 discarding ? " (discards in flight)" : "");
		if (!(err = state_img_load(&c->si, &ov[k]))) {
			check_state(c, durable, what);
			err = state_img_undo(&c->si);
		}
	}
	for (unsigned k = 0; k <= torn; k++)
		if (ov[k].blk)
			overlay_free(&ov[k], &c->si);
	free(ov);
	for (size_t j = first; j < i && !err; j++)
		err = state_img_apply(&c->si, c->recs[j].off, c->recs[j].data, c->recs[j].len);
	return err;
}

int
main(int argc, char **argv)
{
	unsigned seed = 1, ops = 400, torn = 3;
	bool verbose = false;
	int opt;
	bool full = false;
	bool snapshots = false, relink = false, discard = false, protect = false;
	bool resize = false, receive = false;
	while ((opt = getopt(argc, argv, "s:n:t:FSPRDVZv")) != -1) {
		switch (opt) {
		case 's': seed = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'n': ops = (unsigned)strtoul(optarg, NULL, 0); break;
		case 't': torn = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'v': verbose = true; break;
		case 'F': full = true; break;
		case 'S': snapshots = true; break;
		case 'P': protect = true; break;
		case 'R': relink = true; break;
		case 'D': discard = true; break;
		case 'Z': resize = true; break;
		case 'V': receive = true; break;
		default:
			fprintf(stderr, "usage: crashsim [-s SEED] [-n OPS] [-t TORN_PER_POINT] [-F] [-S] [-P] [-R] [-D] [-V] [-Z] [-v]\n");
			return 2;
		}
	}
	rng_state = seed;
	/* what each recovery did is noise here; warnings still show */
	lfs_log_set_quiet_info(true);
	if (getenv("CRASHSIM_DEBUG"))
		lfs_log_set_debug(true);
	char dir[] = "/tmp/lfs-crash-XXXXXX";
	if (!mkdtemp(dir))
		return 2;
	char img[96], trace[96];
	snprintf(img, sizeof(img), "%s/img", dir);
	snprintf(trace, sizeof(trace), "%s/trace", dir);
	int fd = open(img, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd < 0 || ftruncate(fd, IMG_BYTES) < 0)
		return 2;
	close(fd);
	struct lfs_super sb;
	if (lfs_plan_geometry(&sb, IMG_BYTES, 4096, SEG_BYTES, 4096) || lfs_format(img, &sb, 0, 0)) {
		fprintf(stderr, "crashsim: mkfs failed\n");
		return 2;
	}
	/* the image before the mount is the base every state starts from */
	uint8_t *base = malloc(IMG_BYTES);
	fd = open(img, O_RDONLY);
	if (pread(fd, base, IMG_BYTES, 0) != (ssize_t)IMG_BYTES)
		return 2;
	close(fd);

	static struct workload w;
	w = (struct workload){ .trace = trace, .ops = ops, .verbose = verbose, .full = full, .protect = protect, .max_size = 400000,
			       .snapshots = snapshots, .relink = relink, .discard = discard, .resize = resize,
			       .receive = receive, .recvs = { .rnd_below = rnd_below, .trace_len = trace_len, .trace = trace } };
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.ckpt_interval_s = 0;
	o.ckpt_segs = 8;            /* checkpoints happen during the run too */
	o.trace_path = trace;
	o.discard = discard;
	int err = lfs_mount(img, &o, &w.fs);
	if (!err && protect)
		err = lfs_set_protection(w.fs, 3600);
	if (!err)
		err = relink ? relink_workload(&w) : workload_run(&w);
	if (err) {
		fprintf(stderr, "crashsim: seed %u: workload failed: %s\n", seed, strerror(-err));
		unlink(trace);
		unlink(img);
		rmdir(dir);
		return 1;
	}
	struct lfs_stats ws;
	lfs_get_stats(w.fs, &ws);
	w.relink_records = ws.relink_records;
	uint64_t given_way = w.fs->given_way;
	lfs_abandon(w.fs); /* the crash */

	fd = open(trace, O_RDONLY);
	struct stat st;
	fstat(fd, &st);
	uint8_t *t = mmap(NULL, (size_t)st.st_size + 1, PROT_READ, MAP_PRIVATE, fd, 0);
	size_t nrecs;
	struct checker c = { .w = &w };
	c.recs = parse_trace(t, (size_t)st.st_size, &nrecs);
	c.nrecs = nrecs;
	c.buf = malloc(w.max_size + 8192);
	c.got = relink ? malloc(BIG_CAP) : NULL;
	c.want = relink ? malloc(BIG_CAP) : NULL;
	if (state_img_init(&c.si, base, IMG_BYTES) || lfs_fsck_memo_new(&c.memo) || !c.buf || (relink && (!c.got || !c.want)))
		return 2;

	/* Walk the trace; at every flush, the state up to it is durable. */
	size_t first_unflushed = 0;
	unsigned points = 0;
	for (size_t i = 0; i <= nrecs; i++) {
		if (i < nrecs && c.recs[i].type != LFS_TRACE_FLUSH)
			continue;
		if ((err = check_point(&c, first_unflushed, i, torn, seed, points)) ||
		    ((points % 16 == 0 || i == nrecs) && (err = state_img_verify(&c.si)))) {
			fprintf(stderr, "crashsim: seed %u flush point %u: the image was not rebuilt: %s\n", seed, points,
				strerror(-err));
			return 2;
		}
		first_unflushed = i + 1;
		points++;
		if (c.failures >= 5)
			break;
	}
	if (snapshots) {
		int deleted = 0;
		for (int k = 0; k < w.nsnaps; k++)
			deleted += w.snaps[k].del_begun != 0;
		printf("crashsim: seed %u: %d snapshots made, %d deleted; %llu snapshot views read in the states\n", seed,
		       w.nsnaps, deleted, (unsigned long long)c.views);
	}
	if (receive)
		c.failures += recvsim_report(&w.recvs, seed, c.views, full);
	if (discard) {
		for (size_t i = 0; i < nrecs; i++)
			c.discards += c.recs[i].type == LFS_TRACE_DISCARD;
		printf("crashsim: seed %u: %llu discards traced, %llu states mounted with discards in flight\n", seed,
		       (unsigned long long)c.discards, (unsigned long long)c.discard_states);
		/* the workload is there to make them: a run without is no test */
		if (!c.discards || !c.discard_states) {
			printf("crashsim: seed %u: -D put no discard in flight\n", seed);
			c.failures++;
		}
	}
	if (protect) {
		printf("crashsim: seed %u: %llu kept checkpoints gave way to the writes\n", seed,
		       (unsigned long long)given_way);
		/* on a full filesystem the path is there to be taken */
		if (full && !given_way) {
			printf("crashsim: seed %u: -F -P: no kept checkpoint gave way\n", seed);
			c.failures++;
		}
	}
	if (resize) {
		printf("crashsim: seed %u: %d resizes, %llu blocks moved by the shrink (%llu to %llu segments); %llu "
		       "states at the old size, %llu at the new\n", seed, w.resizes, (unsigned long long)w.moved,
		       (unsigned long long)w.nsegs[0], (unsigned long long)w.nsegs[1], (unsigned long long)c.sized[0],
		       (unsigned long long)c.sized[1]);
		/* the workload is there to make them: a run without is no test */
		if (w.resizes != 2 || !w.moved || !c.sized[0] || !c.sized[1]) {
			printf("crashsim: seed %u: -Z: the shrink moved nothing or the states did not span it\n", seed);
			c.failures++;
		}
	}
	if (relink) {
		printf("crashsim: seed %u: %llu relink records written, %llu states rolled some forward, %llu versions "
		       "of the large files compared\n",
		       seed, (unsigned long long)w.relink_records, (unsigned long long)c.relinked_states,
		       (unsigned long long)c.big_versions);
		/* the workload is there to make them: a run without is no test */
		if (!w.relink_records || !c.relinked_states) {
			printf("crashsim: seed %u: -R exercised no relink record\n", seed);
			c.failures++;
		}
	}
	printf("crashsim: seed %u: %u ops, %zu trace records, %u flush points, %llu blocks written to rebuild states, "
	       "%llu crash states checked (%llu of them the same bytes as another of their point, mounted once), "
	       "%llu failures\n",
	       seed, ops, nrecs, points, (unsigned long long)c.si.blocks_written, (unsigned long long)c.states,
	       (unsigned long long)c.same, (unsigned long long)c.failures);
	munmap(t, (size_t)st.st_size + 1);
	close(fd);
	state_img_free(&c.si);
	lfs_fsck_memo_free(c.memo);
	free(c.buf);
	free(c.got);
	free(c.want);
	free(c.recs);
	free(base);
	for (int i = 0; i < MAX_FILES; i++) {
		free(w.files[i].data);
		free(w.files[i].xv);
	}
	for (int i = 0; i < BIG_FILES; i++) {
		for (size_t k = 0; k < w.big[i].nops; k++)
			free(w.big[i].ops[k].data);
		free(w.big[i].ops);
		free(w.big[i].seals);
		free(w.big[i].init);
	}
	recvsim_free(&w.recvs);
	unlink(trace);
	unlink(img);
	rmdir(dir);
	return c.failures ? 1 : 0;
}
