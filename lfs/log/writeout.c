/*
 * writeout.c — layer 2: sealed psegs on their way to the disk.
 *
 * The segment writer (seg.c) hands each finished pseg over here instead
 * of writing it: its blocks' checksums, the seal of its summary and its
 * pwrite are done by lfs_writeout, in log order.  Most callers write out
 * at once, with fs->lock held, at the end of every log group; fsync
 * (fs.c) writes out with the lock released, so that copying megabytes
 * into the page cache and checksumming them does not hold up every
 * other request.  Until a pseg is written and reaped its blocks are read
 * from its buffer (lfs_writeout_read), and fs->dev.bytes_written does
 * not count it, so no flush is taken to cover it before it is made.
 *
 * Each queued pseg is QUEUED, then WRITING by the one thread that
 * claimed it, then DONE.  fs->out_mu guards only those states (and the
 * condition a thread waits on for another's pwrites): a writer without
 * fs->lock needs no other lock to finish, so a thread holding fs->lock
 * may wait for it.  The list itself changes only under fs->lock:
 * entries are added at the tail by seg.c and reaped from the head here.
 * A pseg whose write failed (or that was never written after one did)
 * stays in memory on a list of its own: the filesystem has failed, and
 * its blocks are still read from there.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { QUEUED, WRITING, DONE };

struct lfs_outpseg {
	struct lfs_outpseg *next;
	uint64_t addr;              /* of the summary block */
	uint32_t nblk;              /* summary included */
	uint64_t seg;
	uint32_t off;
	uint8_t *buf;
	int state;                  /* under fs->out_mu */
	int err;
};

#define MAX_SPARE 4

uint8_t *
lfs_writeout_buffer(struct lfs_fs *fs)
{
	if (fs->out_nspare)
		return fs->out_spare[--fs->out_nspare];
	return lfs_malloc((size_t)(1 + fs->max_pseg) * fs->bsize);
}

static void
spare(struct lfs_fs *fs, uint8_t *buf)
{
	if (fs->out_nspare < MAX_SPARE)
		fs->out_spare[fs->out_nspare++] = buf;
	else
		free(buf);
}

int
lfs_writeout_queue(struct lfs_fs *fs, uint64_t addr, uint32_t nblk, uint8_t *buf, uint64_t seg, uint32_t off)
{
	struct lfs_outpseg *e = lfs_malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	*e = (struct lfs_outpseg){ .addr = addr, .nblk = nblk, .seg = seg, .off = off, .buf = buf, .state = QUEUED };
	if (fs->out_tail)
		fs->out_tail->next = e;
	else
		fs->out_head = e;
	fs->out_tail = e;
	return 0;
}

static const struct lfs_outpseg *
holding(const struct lfs_fs *fs, uint64_t addr)
{
	for (int l = 0; l < 2; l++)
		for (const struct lfs_outpseg *e = l ? fs->out_failed : fs->out_head; e; e = e->next)
			if (addr > e->addr && addr < e->addr + e->nblk)
				return e;
	return NULL;
}

bool
lfs_writeout_read(const struct lfs_fs *fs, uint64_t addr, void *out)
{
	const struct lfs_outpseg *e = holding(fs, addr);
	if (e)
		memcpy(out, e->buf + (size_t)(addr - e->addr) * fs->bsize, fs->bsize);
	return e != NULL;
}

bool
lfs_writeout_queued(const struct lfs_fs *fs, uint64_t addr)
{
	return holding(fs, addr) != NULL;
}

/* Checksum, seal and write one pseg (no lock needed: its buffer is this
 * thread's until it is DONE, and readers only copy its blocks). */
static int
write_one(const struct lfs_fs *fs, struct lfs_outpseg *e)
{
	for (uint32_t i = 0; i + 1 < e->nblk; i++)
		lfs_pseg_entry_set_crc(e->buf, i, lfs_crc(fs->seed, e->buf + (size_t)(i + 1) * fs->bsize, fs->bsize));
	lfs_pseg_seal(e->buf, fs->bsize, fs->seed);
	return lfs_bdev_pwrite_raw(&fs->dev, e->addr * fs->bsize, (uint64_t)e->nblk * fs->bsize, e->buf);
}

/* Claim the queued psegs, a run up to the tail: *first, or NULL. */
static struct lfs_outpseg *
claim(struct lfs_fs *fs, struct lfs_outpseg **last)
{
	struct lfs_outpseg *first = NULL;
	pthread_mutex_lock(&fs->out_mu);
	for (struct lfs_outpseg *e = fs->out_head; e; e = e->next)
		if (e->state == QUEUED) {
			e->state = WRITING;
			if (!first)
				first = e;
			*last = e;
		}
	pthread_mutex_unlock(&fs->out_mu);
	return first;
}

/* Write the claimed run first..last.  `broken`: the device may not be
 * written (failed, or read-only), so nothing is and each fails. */
static void
write_run(struct lfs_fs *fs, struct lfs_outpseg *first, struct lfs_outpseg *last, int broken)
{
	int err = broken;
	for (struct lfs_outpseg *e = first;;) {
		if (!err)
			err = write_one(fs, e);
		/* e may be reaped once DONE; the last one's next may be being
		 * linked (under fs->lock, not held here) */
		bool end = e == last;
		struct lfs_outpseg *next = end ? NULL : e->next;
		pthread_mutex_lock(&fs->out_mu);
		e->err = err ? err : 0;
		e->state = DONE;
		pthread_cond_broadcast(&fs->out_cv);
		pthread_mutex_unlock(&fs->out_mu);
		if (end)
			break;
		e = next;
		if (err)
			err = -EIO; /* after a failure nothing more is written */
	}
}

static int
device_broken(const struct lfs_fs *fs)
{
	if (fs->dev.readonly)
		return -EROFS;
	return fs->dev.failed || fs->fatal ? -EIO : 0;
}

/* The DONE psegs at the head, in log order: counted written, their
 * summaries known to the read checks; a failure fails the filesystem. */
static void
reap(struct lfs_fs *fs)
{
	for (;;) {
		struct lfs_outpseg *e = fs->out_head;
		if (!e)
			break;
		pthread_mutex_lock(&fs->out_mu);
		bool done = e->state == DONE;
		pthread_mutex_unlock(&fs->out_mu);
		if (!done)
			break;
		fs->out_head = e->next;
		if (!fs->out_head)
			fs->out_tail = NULL;
		if (e->err) {
			if (!fs->dev.failed)
				lfs_fail(fs, e->err, "segment writer: writing %u blocks at %llu", e->nblk,
					 (unsigned long long)e->addr);
			fs->dev.failed = true;
			e->next = fs->out_failed;
			fs->out_failed = e;
			continue;
		}
		fs->dev.bytes_written += (uint64_t)e->nblk * fs->bsize;
		lfs_verify_note_pseg(fs, e->seg, e->off, e->buf);
		spare(fs, e->buf);
		free(e);
	}
}

int
lfs_writeout(struct lfs_fs *fs, bool unlocked)
{
	struct lfs_outpseg *first, *last = NULL;
	if (unlocked && (first = claim(fs, &last))) {
		int broken = device_broken(fs);
		fs->out_writers++;
		pthread_mutex_unlock(&fs->lock);
		write_run(fs, first, last, broken);
		lfs_lock(fs);
		fs->out_writers--;
		pthread_cond_broadcast(&fs->disk_cond);
	}
	/* With the lock: what was queued meanwhile is written here, and
	 * what other threads write without it is waited for. */
	for (;;) {
		if ((first = claim(fs, &last))) {
			write_run(fs, first, last, device_broken(fs));
			continue;
		}
		pthread_mutex_lock(&fs->out_mu);
		bool busy = false;
		for (struct lfs_outpseg *e = fs->out_head; e && !busy; e = e->next)
			busy = e->state == WRITING;
		if (busy) {
			atomic_fetch_add(&fs->disk_waiters, 1);
			pthread_cond_wait(&fs->out_cv, &fs->out_mu);
			atomic_fetch_sub(&fs->disk_waiters, 1);
		}
		pthread_mutex_unlock(&fs->out_mu);
		if (!busy)
			break;
	}
	reap(fs);
	return fs->dev.failed ? (fs->fatal ? fs->fatal : -EIO) : 0;
}

void
lfs_writeout_free(struct lfs_fs *fs)
{
	for (int l = 0; l < 2; l++) {
		struct lfs_outpseg *e = l ? fs->out_failed : fs->out_head;
		while (e) {
			struct lfs_outpseg *next = e->next;
			free(e->buf);
			free(e);
			e = next;
		}
	}
	fs->out_head = fs->out_tail = fs->out_failed = NULL;
	while (fs->out_nspare)
		free(fs->out_spare[--fs->out_nspare]);
}
