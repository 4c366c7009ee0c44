/*
 * hist.h — the checkpoint history (lfs(5), SNAPSHOTS): a record per
 * checkpoint kept, plain ones for the protection period, snapshots until
 * deleted; which of them are retained decides what held.c keeps.
 */
#ifndef LFS_HIST_H
#define LFS_HIST_H

#include "format.h"
#include "ptable.h"
#include "u64map.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lfs_fs;

struct lfs_hist {
	struct lfs_ptable tab;
	struct lfs_hist_entry *ent; /* decoded, per slot (seq 0: free) */
	uint64_t cap;               /* room, per slot, in every array */
	uint64_t count;             /* records in use */
	uint64_t *by_seq;           /* the slots in use, by checkpoint: count */
	uint64_t *by_name;          /* the named snapshots' slots, by name */
	uint64_t nnamed;
	uint64_t *free;             /* free slots below tab.nslots, next one last */
	uint64_t nfree;
	/* In memory only: the checkpoints mounted views read (seq -> how
	 * many views), which are not pruned while they read them. */
	struct u64map pins;
	/* LFS_FEATURE_RECEIVED: each received snapshot's origin record
	 * (checkpoint -> slot + 1), not counted or indexed with the others */
	struct u64map origins;
	bool received_ok;           /* the image has the feature */
	uint32_t max_ino;
};

int lfs_hist_init(struct lfs_hist *h, const struct lfs_fs *fs);
void lfs_hist_free(struct lfs_fs *fs, struct lfs_hist *h);
/* The history of a checkpoint: the table at root with nslots slots; a
 * record that cannot be (a repeated checkpoint, a name not ended or not
 * allowed, unknown flags), or more than LFS_HIST_MAX slots, is refused,
 * -EFSCORRUPTED. */
int lfs_hist_load(struct lfs_fs *fs, struct lfs_hist *h, uint64_t root, uint64_t nslots);
/* Whether name may name a snapshot: 1 to LFS_HIST_NAME_MAX bytes,
 * printable, no '/', not "." or "..". */
bool lfs_hist_name_ok(const char *name);
/* Record checkpoint seq (newer than every one recorded); -ENOSPC when
 * the history holds LFS_HIST_MAX records already. */
int lfs_hist_add(struct lfs_fs *fs, struct lfs_hist *h, uint64_t seq, uint64_t time_ns);
/* The record of checkpoint seq, or of the snapshot called name; NULL if none. */
const struct lfs_hist_entry *lfs_hist_get(const struct lfs_hist *h, uint64_t seq);
const struct lfs_hist_entry *lfs_hist_named(const struct lfs_hist *h, const char *name);
/* Make checkpoint seq a snapshot called name (NULL or "": no name), or
 * a plain checkpoint again (on false).  -ENOENT: not recorded; -EEXIST:
 * another snapshot has the name; -EINVAL: a name not allowed. */
int lfs_hist_snapshot(struct lfs_fs *fs, struct lfs_hist *h, uint64_t seq, bool on, const char *name);
/* Make snapshot seq a received one: its tree is inode root, it came from
 * checkpoint src_seq of the filesystem uuid (an origin record in a slot of
 * its own).  -EINVAL: not a snapshot, received already, a root that
 * cannot be or no LFS_FEATURE_RECEIVED; -ENOSPC: no slot left. */
int lfs_hist_receive(struct lfs_fs *fs, struct lfs_hist *h, uint64_t seq, uint32_t root, const uint8_t uuid[16],
		     uint64_t src_seq);
/* Where received snapshot seq came from: false if it was not received. */
bool lfs_hist_origin(const struct lfs_hist *h, uint64_t seq, uint8_t uuid[16], uint64_t *src_seq);
/* Forget checkpoint seq (and its origin record).  -ENOENT if not recorded. */
int lfs_hist_delete(struct lfs_fs *fs, struct lfs_hist *h, uint64_t seq);
/* A view reads checkpoint seq: pinned until as many unpins (-ENOENT if
 * not recorded).  lfs_hist_pinned: whether any view reads it. */
int lfs_hist_pin(struct lfs_hist *h, uint64_t seq);
void lfs_hist_unpin(struct lfs_hist *h, uint64_t seq);
bool lfs_hist_pinned(const struct lfs_hist *h, uint64_t seq);
/* Forget the plain checkpoints older than now - period and not pinned;
 * *gone: how many. */
int lfs_hist_prune(struct lfs_fs *fs, struct lfs_hist *h, uint64_t now_ns, uint64_t period_ns, uint64_t *gone);
/* The oldest plain checkpoint recorded and not pinned (the first to go
 * when the history is full), 0 if there is none. */
uint64_t lfs_hist_oldest_plain(const struct lfs_hist *h);
/* The checkpoints retained (every record left), ascending, into out
 * (room for h->count); how many. */
size_t lfs_hist_retained(const struct lfs_hist *h, uint64_t *out);

#endif
