/*
 * held.h — blocks held for retained checkpoints (lfs(5), SNAPSHOTS).
 *
 * A retained checkpoint (a snapshot, or one inside the protection
 * period) reads the tree as it was: every location it references must
 * keep its bytes after the live tree drops or moves them.  An entry says
 * that checkpoints [from, until) read the block they address as `orig`
 * at `cur`; entries are made only when the live tree lets go of a
 * location a retained checkpoint still references, so a filesystem
 * without retained checkpoints pays nothing.
 *
 * Accounting, per unit (a block, or one inode record in a block, at
 * cur): the usage table counts a unit once while the live tree uses it
 * (the LIVE flag, when the cleaner moved a block both hold) or any of
 * its entries is needed; the last needed entry of a unit the live tree
 * does not use gives its count back (lfs_held_release).
 */
#ifndef LFS_HELD_H
#define LFS_HELD_H

#include "format.h"
#include "ptable.h"
#include "u64map.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lfs_fs;

struct lfs_held {
	struct lfs_ptable tab;      /* the entries, as written at checkpoints */
	struct lfs_held_entry *ent; /* decoded, per slot (orig 0: free) */
	uint64_t *cur_next;         /* per slot: the next slot + 1 at the same cur */
	uint64_t *orig_next;        /* per slot: the next slot + 1 with the same orig */
	uint64_t *cur_prev;         /* per slot: the previous slot + 1 at the same cur */
	uint64_t *orig_prev;        /* per slot: the previous slot + 1 with the same orig */
	uint64_t cap;
	struct u64map by_cur;       /* cur block -> first slot + 1 */
	struct u64map by_orig;      /* orig block -> first slot + 1 */
	uint64_t *free;             /* free slots below tab.nslots */
	size_t nfree, free_cap;
	uint64_t *retained;         /* checkpoints kept, ascending */
	size_t nretained;
	bool release_due;           /* retained changed since the last release:
				     * only then can an entry stop being needed */
	uint64_t count;             /* entries in use */
};

int lfs_held_init(struct lfs_held *h, const struct lfs_fs *fs);
/* The entries a held table of fs may have: one per unit the log can
 * hold (a block, or the smallest inode record in one).  An entry past it
 * is -ENOSPC where made; a table past it is refused when read. */
uint64_t lfs_held_max(const struct lfs_fs *fs);
void lfs_held_free(struct lfs_fs *fs, struct lfs_held *h);
/* The entries of a checkpoint: the table at root with nslots slots; an
 * entry that cannot be, or more than lfs_held_max slots: -EFSCORRUPTED. */
int lfs_held_load(struct lfs_fs *fs, struct lfs_held *h, uint64_t root, uint64_t nslots);
/* The checkpoints kept from now on (any order; copied). */
int lfs_held_set_retained(struct lfs_held *h, const uint64_t *seqs, size_t n);
/* Whether entry e is needed: a retained checkpoint in [from, until). */
bool lfs_held_needed(const struct lfs_held *h, const struct lfs_held_entry *e);

/*
 * The live tree lets go of the unit at (addr, slot) (charge bytes of a
 * block of `kind`; aux: an inode-map block's index); checkpoints from
 * `until` on no longer reference it.  *keep says whether its bytes must
 * stay counted, held (an entry of the unit is left, needed or not, whose
 * release gives the count back): then the caller must not uncount them.
 */
int lfs_held_drop(struct lfs_fs *fs, struct lfs_held *h, uint64_t addr, uint16_t slot, uint32_t charge,
		  uint8_t kind, uint64_t aux, uint64_t until, bool *keep);
/* Whether lfs_held_drop of the data block at addr now would keep it
 * counted (1, or 2 where one of the checkpoints that read it is a
 * snapshot in `hist`, if given) or not (0): a retained checkpoint before
 * `until` reads it, or entries follow it.  -errno, as lfs_held_drop,
 * when its birth cannot be read; -ENOSPC when it would be kept and the
 * table is full. */
struct lfs_hist;
int lfs_held_would_keep(struct lfs_fs *fs, const struct lfs_held *h, uint64_t addr, uint64_t until,
			const struct lfs_hist *hist);
/*
 * The cleaner moved the live block at old to new, the same bytes (a
 * data block): what retained checkpoints read at old is read at new, and
 * old is dropped as the live tree's (no copy of its own is kept).
 */
int lfs_held_forward(struct lfs_fs *fs, struct lfs_held *h, uint64_t old, uint64_t new_addr, uint32_t charge,
		     uint64_t until);
/* Whether a needed entry has its bytes in the block at addr: the
 * address it stands for (orig), or 0; and the cleaner copied that block
 * to new_addr, whole: every entry follows. */
uint64_t lfs_held_at(const struct lfs_held *h, uint64_t addr);
int lfs_held_moved(struct lfs_fs *fs, struct lfs_held *h, uint64_t addr, uint64_t new_addr);
/* Forget the entries no retained checkpoint needs any more, giving back
 * the counts of the units left with none; *freed: bytes given back. */
int lfs_held_release(struct lfs_fs *fs, struct lfs_held *h, uint64_t *freed);
/* The inode map checkpoint c read, as far as held entries say: out[i]
 * gets the address c used for inode-map block i (to read through
 * lfs_held_translate) where an entry holds it, else stays as it was
 * (the caller puts the live block's address there when its birth is at
 * most c: then c read the same block). */
void lfs_held_imap_of(const struct lfs_held *h, uint64_t c, uint64_t *out, uint32_t n_imap_blocks);
/* What the retained checkpoints hold: *held, the bytes held for any of
 * them that the live tree does not use; own[i] (room for nretained),
 * those held for retained[i] alone, which deleting it would free. */
int lfs_held_usage(const struct lfs_held *h, uint64_t *own, uint64_t *held);
/* What letting retained checkpoints go, oldest first, gives back, where
 * may_go[i] says whether retained[i] may go: freed[i] (room nretained),
 * the bytes held for none but those that may go, the newest of which is
 * retained[i]; letting every one that may go up to retained[i] go frees
 * freed[0] + ... + freed[i]. */
int lfs_held_freed_by(const struct lfs_held *h, const bool *may_go, uint64_t *freed);
/* Where checkpoint c reads the block it addresses as orig; and the entry
 * that says so (NULL: none, it reads orig itself). */
uint64_t lfs_held_translate(const struct lfs_held *h, uint64_t orig, uint64_t c);
const struct lfs_held_entry *lfs_held_entry_for(const struct lfs_held *h, uint64_t orig, uint64_t c);
/* The same, and [*lo, *hi) narrowed to the checkpoints around c for
 * which every entry of orig applies as it does to c (so that any of
 * them reads orig where c does). */
const struct lfs_held_entry *lfs_held_entry_span(const struct lfs_held *h, uint64_t orig, uint64_t c, uint64_t *lo,
						 uint64_t *hi);

#endif
