/*
 * ptable.h — a paged table in the log: slots of fixed-size entries, kept
 * whole in memory, written at checkpoints page by changed page (lfs(5),
 * SNAPSHOTS: the held-block table and the checkpoint history).
 *
 * On disk a table is a root block of B/8 addresses of index blocks, each
 * of B/8 addresses of pages (0: never written, all its slots free), each
 * page B/esize entries; every node is a TABLE block whose summary names
 * the table (ino) and the node (lfs_table_node_id).  The root's address
 * and the slots in use go in the checkpoint header.  Like the inode
 * map's blocks, a table's nodes count in their segments' meta_blocks,
 * not in live bytes.
 */
#ifndef LFS_PTABLE_H
#define LFS_PTABLE_H

#include <stdbool.h>
#include <stdint.h>

struct lfs_fs;

struct lfs_ptable {
	uint32_t id;                /* LFS_TABLE_*: the summary's ino */
	uint32_t esize, per;        /* entry size; entries per page */
	uint32_t fan;               /* addresses per index or root block */
	uint64_t nslots;            /* slots in use, free ones among them */
	uint64_t npages, cap;       /* pages held in memory; room for */
	uint8_t **page;             /* each page's bytes, as written */
	uint64_t *page_addr;        /* where each page is; 0: not yet */
	uint8_t *page_dirty;
	uint64_t nidx;              /* index blocks: ceil(npages / fan) */
	uint64_t *idx_addr;         /* room for fan */
	uint8_t *idx_dirty;
	uint64_t root_addr;
	bool root_dirty;
	uint64_t ndirty;            /* pages dirty */
};

/* An empty table of entries of esize bytes (a block must hold one). */
int lfs_ptable_init(struct lfs_ptable *t, const struct lfs_fs *fs, uint32_t id, uint32_t esize);
void lfs_ptable_free(struct lfs_fs *fs, struct lfs_ptable *t);
/* Read the table whose root is at root with nslots slots (root 0: empty),
 * counting its nodes in their segments.  A node that is missing, out of
 * the log, of another table or fails verification: -EFSCORRUPTED,
 * logged. */
int lfs_ptable_load(struct lfs_fs *fs, struct lfs_ptable *t, uint64_t root, uint64_t nslots);
/* Slot i's bytes (i < nslots), to read. */
const uint8_t *lfs_ptable_get(const struct lfs_ptable *t, uint64_t i);
/* Set slot i's bytes (i may be nslots or beyond: the slots between are
 * free, all zero); its page is written at the next lfs_ptable_write. */
int lfs_ptable_put(struct lfs_fs *fs, struct lfs_ptable *t, uint64_t i, const uint8_t *entry);
/* Whether anything is to be written. */
static inline bool lfs_ptable_dirty(const struct lfs_ptable *t) { return t->root_dirty; }
/* Append the changed pages, then the index blocks and the root that
 * name them, to the log (a checkpoint's tables). */
int lfs_ptable_write(struct lfs_fs *fs, struct lfs_ptable *t);
/* The cleaner's view of a TABLE block at addr with summary lblk node:
 * whether it is the table's current node, and marking it to be written
 * again (so its segment empties). */
bool lfs_ptable_node_live(const struct lfs_ptable *t, uint64_t node, uint64_t addr);
void lfs_ptable_mark_node(struct lfs_ptable *t, uint64_t node);

#endif
