/*
 * repl.c — layer 4: the blocks an inode stopped counting since its last
 * record, logged with its next one.
 *
 * For each inode record it applies, roll-forward must uncount the blocks
 * the record no longer names.  Found by comparing the old block map with
 * the new, that costs a cold read of every old leaf a write replaced,
 * and of the summaries that check them.  The writer knows each such block when it
 * drops it, so it keeps them per inode, and the flush writes them into
 * the group's last summary, after its entries (format.h, LFS_PSEG_REPL):
 * roll-forward then reads nothing old for that inode.  A list that
 * would not fit in a summary, or could not be kept, is given up: the
 * inode is compared map against map, as before.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>

struct lfs_repl {
	uint32_t n, cap;
	uint64_t ent[];             /* address << 8 | kind */
};

/* The most one inode's list may hold: a summary with no entries. */
static uint32_t
repl_max(const struct lfs_fs *fs)
{
	return lfs_pseg_repl_room(fs->bsize, 0) - 1;
}

static void
give_up(struct lfs_inode *ip)
{
	free(ip->repl);
	ip->repl = NULL;
	ip->repl_lost = true;
}

void
lfs_repl_note(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t addr, uint8_t kind)
{
	if (ip->repl_lost)
		return;
	if (addr >> 56) { /* not in the packing: no image is that large */
		give_up(ip);
		return;
	}
	struct lfs_repl *r = ip->repl;
	if (!r || r->n == r->cap) {
		uint32_t cap = r ? 2 * r->cap : 8;
		if (cap > repl_max(fs))
			cap = repl_max(fs);
		if (r && r->n >= cap) {
			give_up(ip);
			return;
		}
		r = lfs_realloc(r, sizeof(*r) + (size_t)cap * sizeof(uint64_t));
		if (!r) {
			give_up(ip);
			return;
		}
		if (!ip->repl)
			r->n = 0;
		r->cap = cap;
		ip->repl = r;
	}
	r->ent[r->n++] = addr << 8 | kind;
}

void
lfs_repl_drop(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t addr, uint8_t kind)
{
	lfs_retain_drop(fs, addr, 0, fs->bsize, kind, 0);
	lfs_repl_note(fs, ip, addr, kind);
}

void
lfs_repl_forget(struct lfs_inode *ip)
{
	free(ip->repl);
	ip->repl = NULL;
	ip->repl_lost = false;
}

void
lfs_repl_emit(struct lfs_fs *fs, const uint64_t *inos, size_t n)
{
	uint32_t room = lfs_pseg_repl_room(fs->bsize, fs->pn), used = 0;
	for (size_t i = 0; i < n; i++) {
		struct lfs_inode *ip = u64map_get(&fs->dirty, inos[i]);
		if (!ip)
			continue;
		uint32_t cnt = ip->repl ? ip->repl->n : 0;
		if (fs->pn && !ip->repl_lost && ip->di.mode && 1 + cnt <= room - used) {
			struct lfs_repl_rec h = { .ino = ip->ino, .version = ip->di.version, .count = cnt };
			lfs_repl_rec_encode(&h, fs->pbuf, fs->pn, used++);
			for (uint32_t j = 0; j < cnt; j++) {
				struct lfs_repl_rec b = { .ino = ip->ino, .kind = (uint8_t)(ip->repl->ent[j] & 0xff),
							  .addr = ip->repl->ent[j] >> 8 };
				lfs_repl_rec_encode(&b, fs->pbuf, fs->pn, used++);
			}
		}
		/* its next record is compared with the one just written */
		lfs_repl_forget(ip);
	}
	fs->repl_n = used;
}
