/*
 * fuse_cache.h — what the kernel's page cache may hold of writes lfs has
 * not seen yet (FUSE writeback), and the files whose writers must be told
 * ENOSPC at their next write() (fuse_cache.c).
 */
#ifndef LFS_FUSE_CACHE_H
#define LFS_FUSE_CACHE_H

#include "u64map.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct lfs_fuse_cache {
	char max_bytes_path[160];   /* the mount's bdi max_bytes; "" if unknown */
	uint64_t limit;             /* its value when last read */
	uint64_t headroom;          /* the bytes last kept for it */
	pthread_mutex_t lock;
	struct u64map full;         /* inodes whose writeback used the headroom */
	struct u64map writers;      /* processes whose fsync wrote one back */
	bool asking;                /* every buffered write() asks first */
};

void lfs_fuse_cache_init(struct lfs_fuse_cache *c);
/* Find the mount's backing device info and, as root, bound the dirty
 * pages the kernel keeps for it: `ratio` percent of the dirty limit if
 * given (not UINT_MAX), else a size that follows the filesystem's.
 * Returns the headroom to keep for them (lfs_set_cache_headroom). */
uint64_t lfs_fuse_cache_setup(struct lfs_fuse_cache *c, const char *mountpoint, uint64_t usable,
			      unsigned ratio);
/* The headroom again, after the kernel's limit may have moved (it is
 * kept as a share of a dirty limit that follows free memory). */
uint64_t lfs_fuse_cache_headroom(struct lfs_fuse_cache *c, uint64_t usable);
/* Whether the kernel's bound on the mount's cached writes, with its
 * margin, fits in the last half of what lfs keeps for them (at most an
 * eighth of `usable`): where it does not, or cannot be read, accepted
 * writes could outgrow it. */
bool lfs_fuse_cache_bounded(struct lfs_fuse_cache *c, uint64_t usable);
/* The last half of the headroom, where every writer is refused. */
uint64_t lfs_fuse_cache_hard(struct lfs_fuse_cache *c);
/* Enter (true: whether it was not already) or leave the state in which
 * attributes are given for no time, so that every write() asks. */
bool lfs_fuse_cache_ask(struct lfs_fuse_cache *c, bool on);
bool lfs_fuse_cache_asking(struct lfs_fuse_cache *c);
void lfs_fuse_cache_mark(struct lfs_fuse_cache *c, uint64_t ino);
/* At an fsync of ino by process tgid: if ino is marked, the mark moves
 * to the process, which is told at its next write() of any file. */
void lfs_fuse_cache_mark_writer(struct lfs_fuse_cache *c, uint64_t ino, uint64_t tgid);
/* Whether any process is marked (then the caller's is worth finding). */
bool lfs_fuse_cache_writers(struct lfs_fuse_cache *c);
/* Whether ino or process tgid is marked. */
bool lfs_fuse_cache_marked(struct lfs_fuse_cache *c, uint64_t ino, uint64_t tgid);
/* A writer was told: every mark goes (what the kernel still holds marks
 * its files again as it is written back). */
void lfs_fuse_cache_unmark(struct lfs_fuse_cache *c);
void lfs_fuse_cache_free(struct lfs_fuse_cache *c);

#endif
