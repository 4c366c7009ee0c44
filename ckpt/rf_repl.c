/*
 * rf_repl.c — layer 5: roll-forward's accounting from the addresses each
 * record replaced, as the writer logged them (repl.c, format.h
 * LFS_PSEG_REPL).
 *
 * For an inode listed in its group's last summary, applying its record
 * counts the group's blocks of that inode and uncounts the listed ones:
 * what the writer did to the usage table, with nothing old read.  An
 * inode not listed, or whose list cannot be trusted, is compared map
 * against map (rf_account.c), which gives the same table, reading more.
 *
 * Trust: a list is taken only whole, with every record well formed and
 * every address inside the log, for a record of the version it names,
 * one record per list; and only while the inode map holds the record
 * the writer's list was kept against: once one of the inode's records
 * was not applied, or was counted from a corrupt map, that inode is
 * compared map to map to the end of the roll-forward.
 */
#include "rf_account.h"

#include <errno.h>
#include <stdlib.h>

struct rf_list {
	uint32_t version;
	uint32_t first, n;          /* its block records in the summary */
	bool taken;                 /* a record was applied with it */
	struct rf_use {
		uint64_t addr;
		uint8_t kind;
	} *uses;                    /* the group's blocks of the inode */
	size_t nuses, capuses;
};

static int
free_list(uint64_t ino, void *val, void *ctx)
{
	(void)ino;
	(void)ctx;
	struct rf_list *l = val;
	free(l->uses);
	free(l);
	return 1;
}

void
lfs_rf_lists_clear(struct lfs_rf *rf)
{
	u64map_remove_if(&rf->lists, free_list, NULL);
	rf->lists_sum = NULL;
}

static bool
block_kind(uint8_t kind)
{
	return kind == LFS_BK_DATA || kind == LFS_BK_INDIR || kind == LFS_BK_XATTR;
}

/* Why the records of sum are not a well-formed set of lists, or NULL;
 * *err for memory that could not be had. */
static const char *
check_lists(struct lfs_rf *rf, const uint8_t *sum, const struct lfs_pseg_hdr *h, uint32_t n, int *err)
{
	for (uint32_t i = 0; i < n;) {
		struct lfs_repl_rec r;
		lfs_repl_rec_decode(&r, sum, h->nblocks, i);
		if (r.kind || !r.ino)
			return "a list without its header";
		if (r.count > n - i - 1)
			return "a list longer than the records";
		if (u64map_get(&rf->lists, r.ino))
			return "an inode listed twice";
		for (uint32_t j = 1; j <= r.count; j++) {
			struct lfs_repl_rec b;
			lfs_repl_rec_decode(&b, sum, h->nblocks, i + j);
			if (b.ino != r.ino || !block_kind(b.kind))
				return "a block record of another inode or kind";
			if (!lfs_addr_valid(rf->fs, b.addr))
				return "an address outside the log";
		}
		if (!u64map_get(&rf->tainted, r.ino)) {
			struct rf_list *l = lfs_calloc(1, sizeof(*l));
			if (!l || (*err = u64map_put(&rf->lists, r.ino, l))) {
				free(l);
				*err = -ENOMEM;
				return NULL;
			}
			*l = (struct rf_list){ .version = r.version, .first = i + 1, .n = r.count };
		}
		i += 1 + r.count;
	}
	return NULL;
}

int
lfs_rf_lists_load(struct lfs_rf *rf, uint64_t addr, const uint8_t *sum)
{
	lfs_rf_lists_clear(rf);
	if (rf->no_lists)
		return 0;
	struct lfs_pseg_hdr h;
	lfs_pseg_hdr_decode(&h, sum);
	uint32_t n;
	int err = 0;
	const char *why = lfs_pseg_repl_count(&h, rf->fs->bsize, &n) ? "more records than the block holds" : NULL;
	if (!why && !n)
		return 0;
	if (!why)
		why = check_lists(rf, sum, &h, n, &err);
	if (err) {
		lfs_rf_lists_clear(rf);
		return err;
	}
	if (why) {
		/* (each group's lists are loaded to prefetch, then to apply) */
		if (rf->lists_bad != addr)
			lfs_log("roll-forward: replaced addresses in the summary at block %llu: %s; the group's "
				"inodes are compared map to map",
				(unsigned long long)addr, why);
		rf->lists_bad = addr;
		lfs_rf_lists_clear(rf);
		return 0;
	}
	rf->lists_sum = sum;
	rf->lists_nblocks = h.nblocks;
	return 0;
}

bool
lfs_rf_listed(const struct lfs_rf *rf, uint32_t ino)
{
	return u64map_get(&rf->lists, ino) != NULL;
}

int
lfs_rf_lists_block(struct lfs_rf *rf, const struct lfs_pseg_entry *e, uint64_t addr)
{
	struct rf_list *l = block_kind(e->kind) ? u64map_get(&rf->lists, e->ino) : NULL;
	if (!l || l->version != e->version)
		return 0;
	int err = lfs_array_room(&l->uses, &l->capuses, l->nuses + 1, sizeof(*l->uses));
	if (!err)
		l->uses[l->nuses++] = (struct rf_use){ addr, e->kind };
	return err;
}

bool
lfs_rf_lists_account(struct lfs_rf *rf, const struct lfs_dinode *cur)
{
	struct lfs_fs *fs = rf->fs;
	struct rf_list *l = u64map_get(&rf->lists, cur->ino);
	if (!l || l->taken || l->version != cur->version || !cur->mode || u64map_get(&rf->tainted, cur->ino))
		return false;
	l->taken = true;
	/* counted first, so that no segment looks empty in between */
	for (size_t i = 0; i < l->nuses; i++)
		lfs_retain_use(fs, l->uses[i].addr, fs->bsize, l->uses[i].kind);
	for (uint32_t i = 0; i < l->n; i++) {
		struct lfs_repl_rec b;
		lfs_repl_rec_decode(&b, rf->lists_sum, rf->lists_nblocks, l->first + i);
		lfs_retain_drop(fs, b.addr, 0, fs->bsize, b.kind, 0);
	}
	rf->listed++;
	return true;
}

int
lfs_rf_lists_taint(struct lfs_rf *rf, uint32_t ino)
{
	return u64map_put(&rf->tainted, ino, (void *)1);
}
