/*
 * fuse_cache.c — ENOSPC at write() under the kernel's writeback cache.
 *
 * With the writeback cache the kernel accepts a buffered write() without
 * asking lfs, and hands the data over later; a full filesystem could only
 * refuse it then, after write() had returned success.  So lfs keeps room
 * for everything the kernel can hold unwritten.  The arithmetic, with D
 * the kernel's bound on the mount's dirty pages and C the capacity (df's
 * size), in live data L (what the daemon holds counted as new):
 *
 *   - D: the mount's backing device info (/sys/class/bdi/DEV/max_bytes,
 *     under strict_limit); as root lfs sets it to follow the filesystem's
 *     size.  The kernel throttles a writer only after it passed D, so it
 *     holds at most D + D/4 (need_for); and write() calls that asked
 *     before a refusal copy in whole (fuse_cache_write_iter asks once per
 *     call): 8 MiB for a few writers of a MiB at a time.  R = D + D/4 +
 *     8 MiB.
 *   - The headroom H >= 2R (an eighth more; at most usable/8, and then
 *     the mount is bounded only while D + D/4 fits in H/2, and what is
 *     left of H/2 is for the write() calls): plain writers stop
 *     at C, df leaves H out, and only writeback of what the kernel
 *     accepted may go on to C + H (lfs_write_cached).
 *   - Once writeback that grows the live data leaves less than H of room for plain
 *     writers, every regular file's cached attributes are dropped and
 *     given for no time from then on (fuse_ops.c: cache_near,
 *     attr_timeout): the kernel asks (GETATTR with the file handle)
 *     before every buffered write(), of any file.
 *   - At L >= C (plain writers have no room), that GETATTR is refused
 *     once for a marked writer: of a file whose writeback grew into the
 *     headroom, or of an empty file (where a writer begins its next) by
 *     a process whose fsync wrote one back (FSYNC names the caller;
 *     writeback WRITEs name nobody).  A writer refused there stops at
 *     C + R at most.
 *   - At L > C + H - H/2 every handle that may write is refused: what
 *     the kernel still holds is at most R <= H/2, so L never passes
 *     C + H, for any pattern of files and writers.  Overwrites of
 *     blocks nothing else holds need no room and mark nothing; those of
 *     blocks a kept checkpoint or snapshot holds grow the live data and
 *     mark as new blocks do (file.c, admit), and L is counted net of
 *     what kept checkpoints would give back.
 *
 * A read past the end and a write() ask the same GETATTR (the kernel
 * sends no mask): a handle opened read-only is known by its fh
 * (op_open) and never refused; one opened for reading and writing can
 * be.  What remains is named in lfs(8), BUGS.
 */
#include "fuse_cache.h"
#include "lfs.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MIB (1ull << 20)

static uint64_t
read_limit(const struct lfs_fuse_cache *c)
{
	FILE *f = c->max_bytes_path[0] ? fopen(c->max_bytes_path, "r") : NULL;
	unsigned long long v = 0;
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static bool
write_value(const char *path, unsigned long long v)
{
	FILE *f = fopen(path, "w");
	bool ok = f && fprintf(f, "%llu\n", v) > 0;
	if (f && fclose(f) != 0)
		ok = false;
	return ok;
}

/* The mount's device number from mountinfo, without touching the mount
 * (a stat would be a request to this very daemon). */
static bool
mount_dev(const char *mountpoint, char *dev, size_t len)
{
	FILE *mi = fopen("/proc/self/mountinfo", "r");
	char line[8192], d[64], mnt[4096];
	bool found = false;
	while (mi && !found && fgets(line, sizeof(line), mi))
		if (sscanf(line, "%*s %*s %63s %*s %4095s", d, mnt) == 2 && strcmp(mnt, mountpoint) == 0) {
			snprintf(dev, len, "%s", d);
			found = true;
		}
	if (mi)
		fclose(mi);
	return found;
}

uint64_t
lfs_fuse_cache_setup(struct lfs_fuse_cache *c, const char *mountpoint, uint64_t usable, unsigned ratio)
{
	char dev[64], dir[128];
	if (mount_dev(mountpoint, dev, sizeof(dev))) {
		/* a fuseblk mount's bdi carries a suffix (fs/fuse/inode.c) */
		const char *suffix[] = { "-fuseblk", "" };
		for (int i = 0; i < 2 && !c->max_bytes_path[0]; i++) {
			snprintf(dir, sizeof(dir), "/sys/class/bdi/%s%s", dev, suffix[i]);
			if (access(dir, F_OK) == 0)
				snprintf(c->max_bytes_path, sizeof(c->max_bytes_path), "%s/max_bytes", dir);
		}
	}
	if (!c->max_bytes_path[0]) {
		lfs_log("cache: no backing device info for %s: lfs cannot bound the kernel's cache of its writes",
			mountpoint);
		return 0;
	}
	if (getuid() == 0) {
		bool ok;
		if (ratio != UINT_MAX) {
			char path[160];
			snprintf(path, sizeof(path), "%.*s/max_ratio",
				 (int)(strlen(c->max_bytes_path) - strlen("/max_bytes")), c->max_bytes_path);
			ok = write_value(path, ratio);
		} else {
			uint64_t want = usable / 64;
			want = want < 2 * MIB ? 2 * MIB : want > 256 * MIB ? 256 * MIB : want;
			ok = write_value(c->max_bytes_path, want);
		}
		if (!ok)
			lfs_log("cache: cannot set the dirty page limit in %s", c->max_bytes_path);
	}
	return lfs_fuse_cache_headroom(c, usable);
}

/* Writers are throttled only after they pass the limit, and a write()
 * under way when the room runs out is taken whole: a margin for both. */
static uint64_t
need_for(uint64_t limit)
{
	return limit + limit / 4;
}

bool
lfs_fuse_cache_bounded(struct lfs_fuse_cache *c, uint64_t usable)
{
	pthread_mutex_lock(&c->lock);
	uint64_t limit = read_limit(c);
	pthread_mutex_unlock(&c->lock);
	return limit && need_for(limit) <= usable / 16;
}

static uint64_t
headroom_locked(struct lfs_fuse_cache *c, uint64_t usable)
{
	uint64_t limit = read_limit(c);
	if (!limit)
		return c->headroom = 0;
	/* and 8 MiB for a few writers of a MiB at a time: the last half,
	 * where every writer is refused; the first half lets the writers
	 * that used it be refused alone (see the header) */
	uint64_t need = need_for(limit), h = 2 * (need + 8 * MIB);
	/* The kernel reads its bound back as a share of a dirty limit that
	 * follows free memory, so it drifts by a few pages from one read to
	 * the next: the headroom (and so df) moves only when what is needed
	 * leaves [half, all] of what is kept, and then keeps an eighth more. */
	if (h <= c->headroom && h >= c->headroom / 2)
		return c->headroom;
	h = (h + h / 8 + MIB - 1) / MIB * MIB;
	if (h > usable / 8) {
		if (need > usable / 16 && limit != c->limit)
			lfs_log("cache: the kernel may hold %llu MiB of writes for this mount; only %llu MiB "
				"(a sixteenth of the filesystem) are kept for them", (unsigned long long)(limit / MIB),
				(unsigned long long)(usable / 16 / MIB));
		h = usable / 8;
	}
	c->limit = limit;
	return c->headroom = h;
}

/* INIT's thread and the ticker both ask */
uint64_t
lfs_fuse_cache_headroom(struct lfs_fuse_cache *c, uint64_t usable)
{
	pthread_mutex_lock(&c->lock);
	uint64_t h = headroom_locked(c, usable);
	pthread_mutex_unlock(&c->lock);
	return h;
}

void
lfs_fuse_cache_init(struct lfs_fuse_cache *c)
{
	pthread_mutex_init(&c->lock, NULL);
	u64map_init(&c->full);
	u64map_init(&c->writers);
	c->max_bytes_path[0] = '\0';
	c->limit = 0;
	c->headroom = 0;
	c->asking = false;
}

uint64_t
lfs_fuse_cache_hard(struct lfs_fuse_cache *c)
{
	pthread_mutex_lock(&c->lock);
	uint64_t h = c->headroom / 2;
	pthread_mutex_unlock(&c->lock);
	return h;
}

bool
lfs_fuse_cache_ask(struct lfs_fuse_cache *c, bool on)
{
	pthread_mutex_lock(&c->lock);
	bool changed = c->asking != on;
	c->asking = on;
	pthread_mutex_unlock(&c->lock);
	return changed;
}

bool
lfs_fuse_cache_asking(struct lfs_fuse_cache *c)
{
	pthread_mutex_lock(&c->lock);
	bool on = c->asking;
	pthread_mutex_unlock(&c->lock);
	return on;
}

/* a failed put leaves a file or writer unmarked: it is refused at the
 * end of the headroom instead */
void
lfs_fuse_cache_mark(struct lfs_fuse_cache *c, uint64_t ino)
{
	pthread_mutex_lock(&c->lock);
	(void)u64map_put(&c->full, ino, (void *)1);
	pthread_mutex_unlock(&c->lock);
}

void
lfs_fuse_cache_mark_writer(struct lfs_fuse_cache *c, uint64_t ino, uint64_t tgid)
{
	pthread_mutex_lock(&c->lock);
	if (c->full.count && u64map_del(&c->full, ino))
		(void)u64map_put(&c->writers, tgid, (void *)1);
	pthread_mutex_unlock(&c->lock);
}

bool
lfs_fuse_cache_writers(struct lfs_fuse_cache *c)
{
	pthread_mutex_lock(&c->lock);
	bool any = c->writers.count != 0;
	pthread_mutex_unlock(&c->lock);
	return any;
}

bool
lfs_fuse_cache_marked(struct lfs_fuse_cache *c, uint64_t ino, uint64_t tgid)
{
	pthread_mutex_lock(&c->lock);
	bool was = (c->full.count && u64map_get(&c->full, ino)) ||
		   (tgid && c->writers.count && u64map_get(&c->writers, tgid));
	pthread_mutex_unlock(&c->lock);
	return was;
}

void
lfs_fuse_cache_unmark(struct lfs_fuse_cache *c)
{
	pthread_mutex_lock(&c->lock);
	u64map_clear(&c->full);
	u64map_clear(&c->writers);
	pthread_mutex_unlock(&c->lock);
}

void
lfs_fuse_cache_free(struct lfs_fuse_cache *c)
{
	u64map_free(&c->full);
	u64map_free(&c->writers);
	pthread_mutex_destroy(&c->lock);
}
