/*
 * rf_account.h — roll-forward's usage accounting (rf_account.c).
 *
 * Applying an inode record during roll-forward trades the blocks of the
 * version it replaces for its own in the segment usage table.  Only the
 * parts of the block map that differ are visited: a node whose address
 * did not change is the same node with the same subtree (a log never
 * rewrites a block in place, and segments written since the checkpoint
 * are not reused before the next one), so the cost follows what was
 * logged, not the size of the file.
 *
 * The old blocks are read one at a time, each found in the node above
 * it, so a mount would wait for the device once per old leaf.  Before a
 * window of groups is applied, lfs_rf_prefetch sees each of their INDIR
 * and INODE blocks and begins the reads of the old versions they will
 * be compared with, as far as the blocks in memory lead (a hint to the
 * device only: the comparison reads and checks every block itself).
 * Each block read is checked against its segment's summaries, found by
 * walking the segment's chain of them: lfs_rf_prefetch_issue begins
 * those walks too, all segments' in step (lfs_verify_prefetch).
 *
 * An inode whose group logged what its record replaced (rf_repl.c) is
 * not compared at all: the group's blocks of it are counted and the
 * listed ones uncounted, and none of its old blocks is asked for.
 *
 * Use: lfs_rf_init; per window, per group, lfs_rf_lists_load of its
 * last summary and lfs_rf_prefetch for its blocks; per group,
 * lfs_rf_lists_load, lfs_rf_group_add and lfs_rf_lists_block for each
 * of its blocks (already verified), lfs_rf_lists_account, else
 * lfs_rf_account, and lfs_rf_old_record while applying it,
 * lfs_rf_group_done after; lfs_rf_free at the end.
 */
#ifndef LFS_RF_ACCOUNT_H
#define LFS_RF_ACCOUNT_H

#include "lfs_int.h"

struct lfs_rf {
	struct lfs_fs *fs;
	struct u64map group;        /* addr -> block in the group's buffers */
	/* blocks of groups already applied and blocks read from the device,
	 * by address, replaced first in first out: the old version of a node
	 * is most often the new one of a recent group; chunks are added as
	 * it fills and never move (rf_peek hands out pointers into them) */
	uint8_t *cache_chunk[16];
	uint64_t *cache_addr;       /* per slot; 0 empty */
	uint32_t cache_slots, cache_next;
	struct u64map cached;       /* addr -> slot + 1 */
	struct u64map seen;         /* node addresses visited by one lfs_rf_account */
	struct lfs_rf_op {          /* changes found, applied when all are */
		uint64_t addr;
		uint8_t kind;       /* of the block: what a snapshot holds */
		bool unuse;
	} *ops;
	size_t nops, capops;
	struct u64map asked;        /* addresses whose reads were begun ahead */
	uint64_t *wants;            /* asked for since lfs_rf_prefetch_issue */
	size_t nwants, capwants;
	uint64_t node_reads;        /* blocks read from the device */
	uint64_t asked_reads;       /* node_reads of blocks asked for ahead */
	uint64_t summaries_ahead;   /* summaries read ahead to verify them */
	/* the lists of replaced addresses of the group (rf_repl.c) */
	struct u64map lists;        /* ino -> its list */
	const uint8_t *lists_sum;   /* the summary they are in */
	uint32_t lists_nblocks;     /* its entries */
	uint64_t lists_bad;         /* the last summary whose lists were refused */
	struct u64map tainted;      /* inodes compared map to map from now on */
	bool no_lists;              /* compare every inode map to map */
	uint64_t listed;            /* records counted from lists */
	uint64_t relinked;          /* relink records applied (recover.c) */
};

int lfs_rf_init(struct lfs_rf *rf, struct lfs_fs *fs);
void lfs_rf_free(struct lfs_rf *rf);
/* Index a verified block of the group being applied (kept by the caller
 * until lfs_rf_group_done). */
int lfs_rf_group_add(struct lfs_rf *rf, uint64_t addr, const uint8_t *blk);
/* Block blk of a group about to be applied (its summary entry e): begin
 * the reads of the old blocks it will be compared with. */
void lfs_rf_prefetch(struct lfs_rf *rf, const struct lfs_pseg_entry *e, const uint8_t *blk);
/* After the window's blocks were seen: begin the reads asked for, and
 * those of the summaries that verify them. */
void lfs_rf_prefetch_issue(struct lfs_rf *rf);
/* The group is applied: keep copies of its blocks in the cache. */
void lfs_rf_group_done(struct lfs_rf *rf);
/* Read and check the record at (daddr, slot): as lfs_inode_read_record. */
int lfs_rf_old_record(struct lfs_rf *rf, uint64_t daddr, uint16_t slot, struct lfs_dinode *di);
/* Count what replacing `old` by `cur` changes (either may be NULL: no
 * version).  Records themselves are not counted here.  A block map found
 * corrupt is -EFSCORRUPTED with the usage counted in part; a failed
 * read -EIO. */
int lfs_rf_account(struct lfs_rf *rf, const struct lfs_dinode *old, const struct lfs_dinode *cur);
/* The address of leaf `id` in the map of record di, relinks in (0 if
 * there is none). */
int lfs_rf_leaf(struct lfs_rf *rf, const struct lfs_dinode *di, uint64_t id, uint64_t *addr);
/* Count what replacing leaf `id` of old's map at `from` by the one at
 * `to` changes: the leaves and the data blocks they differ in. */
int lfs_rf_account_leaf(struct lfs_rf *rf, const struct lfs_dinode *old, uint64_t from, uint64_t to, uint64_t id);

/* rf_repl.c.  The lists in the summary at addr, the last of its group
 * (logged, and none taken, if they are not well formed); -ENOMEM. */
int lfs_rf_lists_load(struct lfs_rf *rf, uint64_t addr, const uint8_t *sum);
void lfs_rf_lists_clear(struct lfs_rf *rf);
/* Whether inode ino is listed in the group loaded. */
bool lfs_rf_listed(const struct lfs_rf *rf, uint32_t ino);
/* Block addr of the group (summary entry e): counted with its inode's
 * list, if it has one. */
int lfs_rf_lists_block(struct lfs_rf *rf, const struct lfs_pseg_entry *e, uint64_t addr);
/* Count what applying record cur changes from its inode's list: false,
 * nothing done, if it has none it may use (compare the maps instead). */
bool lfs_rf_lists_account(struct lfs_rf *rf, const struct lfs_dinode *cur);
/* Inode ino's maps are compared from now on. */
int lfs_rf_lists_taint(struct lfs_rf *rf, uint32_t ino);

#endif
