/*
 * held.c — layer 3: blocks held for retained checkpoints (held.h).
 *
 * The entries are all in memory, decoded, each in a slot of a paged
 * table (ptable.c) that checkpoints write page by changed page.  Two
 * chains through the slots find them: by the block their bytes are in
 * (the cleaner, and accounting) and by the address checkpoints use (the
 * readers of a retained checkpoint).  Both are short in a filesystem's
 * own tables: a block holds a few inode records at most, and an address
 * is reused only after its segment was cleaned, when an entry for its
 * earlier life may remain.  A crafted table can make one chain of every
 * entry, so the chains are linked both ways (taking an entry out costs
 * the same whatever the chain's length) and no loop over a chain is
 * nested in another.
 */
#include "held.h"

#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int
lfs_held_init(struct lfs_held *h, const struct lfs_fs *fs)
{
	memset(h, 0, sizeof(*h));
	u64map_init(&h->by_cur);
	u64map_init(&h->by_orig);
	return lfs_ptable_init(&h->tab, fs, LFS_TABLE_HELD, LFS_HELD_ENTRY_SIZE);
}

void
lfs_held_free(struct lfs_fs *fs, struct lfs_held *h)
{
	lfs_ptable_free(fs, &h->tab);
	free(h->ent);
	free(h->cur_next);
	free(h->orig_next);
	free(h->cur_prev);
	free(h->orig_prev);
	free(h->free);
	free(h->retained);
	u64map_free(&h->by_cur);
	u64map_free(&h->by_orig);
	memset(h, 0, sizeof(*h));
}

uint64_t
lfs_held_max(const struct lfs_fs *fs)
{
	return fs->sb.nsegs * fs->sb.seg_blocks * (fs->bsize / LFS_INODE_HDR_SIZE);
}

static int
grow(struct lfs_held *h, uint64_t n)
{
	if (n <= h->cap)
		return 0;
	uint64_t cap = h->cap ? h->cap : 64;
	while (cap < n)
		cap *= 2;
	struct lfs_held_entry *e = lfs_realloc(h->ent, cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	h->ent = e;
	memset(h->ent + h->cap, 0, (cap - h->cap) * sizeof(*e));
	uint64_t **links[] = { &h->cur_next, &h->orig_next, &h->cur_prev, &h->orig_prev };
	for (size_t k = 0; k < sizeof(links) / sizeof(links[0]); k++) {
		uint64_t *l = lfs_realloc(*links[k], cap * sizeof(*l));
		if (!l)
			return -ENOMEM; /* cap unchanged: what grew is only larger */
		memset(l + h->cap, 0, (cap - h->cap) * sizeof(*l));
		*links[k] = l;
	}
	h->cap = cap;
	return 0;
}

/* A chain through the slots: a map from key to its first slot + 1, and
 * each slot's neighbours (slot + 1, 0 at the ends). */
struct chain {
	struct u64map *map;
	uint64_t *next, *prev;
};

static struct chain
by_cur(struct lfs_held *h)
{
	return (struct chain){ &h->by_cur, h->cur_next, h->cur_prev };
}

static struct chain
by_orig(struct lfs_held *h)
{
	return (struct chain){ &h->by_orig, h->orig_next, h->orig_prev };
}

/* Put slot i at the head of the chain of key. */
static int
chain_add(struct chain c, uint64_t key, uint64_t i)
{
	uint64_t head = (uint64_t)(uintptr_t)u64map_get(c.map, key);
	int err = u64map_put(c.map, key, (void *)(uintptr_t)(i + 1));
	if (err)
		return err;
	c.next[i] = head;
	c.prev[i] = 0;
	if (head)
		c.prev[head - 1] = i + 1;
	return 0;
}

static void
chain_del(struct chain c, uint64_t key, uint64_t i)
{
	if (c.prev[i])
		c.next[c.prev[i] - 1] = c.next[i];
	else if (c.next[i])
		u64map_put(c.map, key, (void *)(uintptr_t)c.next[i]); /* replaces: cannot fail */
	else
		u64map_del(c.map, key);
	if (c.next[i])
		c.prev[c.next[i] - 1] = c.prev[i];
	c.next[i] = c.prev[i] = 0;
}

static int
store(struct lfs_fs *fs, struct lfs_held *h, uint64_t i)
{
	uint8_t buf[LFS_HELD_ENTRY_SIZE];
	lfs_held_entry_encode(&h->ent[i], buf);
	return lfs_ptable_put(fs, &h->tab, i, buf);
}

static int
add(struct lfs_fs *fs, struct lfs_held *h, const struct lfs_held_entry *e)
{
	if (h->count >= lfs_held_max(fs))
		return -ENOSPC;
	uint64_t i;
	if (h->nfree) {
		i = h->free[--h->nfree];
	} else {
		i = h->tab.nslots;
		int err = grow(h, i + 1);
		if (err)
			return err;
	}
	h->ent[i] = *e;
	int err = store(fs, h, i);
	if (!err)
		err = chain_add(by_cur(h), e->cur, i);
	if (!err)
		err = chain_add(by_orig(h), e->orig, i);
	if (!err)
		h->count++;
	return err;
}

static int
push_free(struct lfs_held *h, uint64_t i)
{
	int err = lfs_array_room(&h->free, &h->free_cap, h->nfree + 1, sizeof(*h->free));
	if (!err)
		h->free[h->nfree++] = i;
	return err;
}

static int
remove_slot(struct lfs_fs *fs, struct lfs_held *h, uint64_t i)
{
	int err = push_free(h, i);
	if (err)
		return err;
	chain_del(by_cur(h), h->ent[i].cur, i);
	chain_del(by_orig(h), h->ent[i].orig, i);
	memset(&h->ent[i], 0, sizeof(h->ent[i]));
	h->count--;
	return store(fs, h, i);
}

int
lfs_held_load(struct lfs_fs *fs, struct lfs_held *h, uint64_t root, uint64_t nslots)
{
	if (nslots > lfs_held_max(fs)) {
		lfs_log("held blocks: %llu entries, more than the %llu this filesystem's log can hold",
			(unsigned long long)nslots, (unsigned long long)lfs_held_max(fs));
		return -EFSCORRUPTED;
	}
	int err = lfs_ptable_load(fs, &h->tab, root, nslots);
	if (!err)
		err = grow(h, nslots);
	for (uint64_t i = 0; i < nslots && !err; i++) {
		struct lfs_held_entry *e = &h->ent[i];
		lfs_held_entry_decode(e, lfs_ptable_get(&h->tab, i));
		if (!e->orig) {
			err = push_free(h, i);
			continue;
		}
		if (!lfs_addr_kept(fs, e->orig) || !lfs_addr_valid(fs, e->cur) || e->from >= e->until ||
		    e->charge == 0 || e->charge > fs->bsize) {
			lfs_log("held blocks: entry %llu cannot be (orig %llu, cur %llu, checkpoints %llu..%llu)",
				(unsigned long long)i, (unsigned long long)e->orig, (unsigned long long)e->cur,
				(unsigned long long)e->from, (unsigned long long)e->until);
			err = -EFSCORRUPTED;
			break;
		}
		err = chain_add(by_cur(h), e->cur, i);
		if (!err)
			err = chain_add(by_orig(h), e->orig, i);
		h->count++;
	}
	return err;
}

int
lfs_held_set_retained(struct lfs_held *h, const uint64_t *seqs, size_t n)
{
	uint64_t *r = lfs_malloc((n ? n : 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (n)
		memcpy(r, seqs, n * sizeof(*r));
	/* the history gives them sorted: sorting again each checkpoint
	 * would cost n log n where checking costs n */
	size_t i = 1;
	while (i < n && r[i - 1] <= r[i])
		i++;
	if (i < n)
		qsort(r, n, sizeof(*r), u64_cmp);
	if (n != h->nretained || (n && memcmp(r, h->retained, n * sizeof(*r))))
		h->release_due = true;
	free(h->retained);
	h->retained = r;
	h->nretained = n;
	return 0;
}

/* The first retained checkpoint at or after seq: its index. */
static size_t
retained_from(const struct lfs_held *h, uint64_t seq)
{
	size_t lo = 0, hi = h->nretained;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (h->retained[mid] < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether a retained checkpoint lies in [from, until). */
static bool
retained_in(const struct lfs_held *h, uint64_t from, uint64_t until)
{
	size_t lo = retained_from(h, from);
	return lo < h->nretained && h->retained[lo] < until;
}

bool
lfs_held_needed(const struct lfs_held *h, const struct lfs_held_entry *e)
{
	return e->orig && retained_in(h, e->from, e->until);
}

/* Give back the count of a unit no one holds any more. */
static void
uncount(struct lfs_fs *fs, const struct lfs_held_entry *e)
{
	if (e->kind == LFS_BK_IMAP)
		lfs_seg_meta(fs, e->cur, -1);
	else
		lfs_seg_unuse(fs, e->cur, e->charge);
}

int
lfs_held_drop(struct lfs_fs *fs, struct lfs_held *h, uint64_t addr, uint16_t slot, uint32_t charge,
	      uint8_t kind, uint64_t aux, uint64_t until, bool *keep)
{
	*keep = false;
	/* the live tree no longer uses it where entries follow it */
	bool followed = false;
	for (uint64_t j = (uint64_t)(uintptr_t)u64map_get(&h->by_cur, addr); j; j = h->cur_next[j - 1]) {
		struct lfs_held_entry *e = &h->ent[j - 1];
		if (e->slot != slot)
			continue;
		followed = true;
		if (e->flags & LFS_HELD_LIVE) {
			e->flags &= (uint8_t)~LFS_HELD_LIVE;
			int err = store(fs, h, j - 1);
			if (err)
				return err;
		}
	}
	if (!h->nretained && !followed)
		return 0;
	uint64_t birth;
	int err = lfs_seg_birth(fs, addr, &birth);
	if (err)
		return err;
	if (retained_in(h, birth, until)) {
		struct lfs_held_entry e = { .orig = addr, .cur = addr, .from = birth, .until = until, .aux = aux,
					    .charge = charge, .kind = kind, .slot = slot };
		if ((err = add(fs, h, &e)))
			return err;
	}
	/* counted while any entry of the unit is left: release gives the
	 * count back with the last one, needed now or not */
	for (uint64_t j = (uint64_t)(uintptr_t)u64map_get(&h->by_cur, addr); j && !*keep; j = h->cur_next[j - 1])
		*keep = h->ent[j - 1].slot == slot;
	return 0;
}

int
lfs_held_forward(struct lfs_fs *fs, struct lfs_held *h, uint64_t old, uint64_t new_addr, uint32_t charge,
		 uint64_t until)
{
	/* the entries that followed old follow its copy, which the live tree
	 * uses (and counts) */
	uint64_t j = (uint64_t)(uintptr_t)u64map_get(&h->by_cur, old);
	while (j) {
		uint64_t i = j - 1;
		j = h->cur_next[i];
		chain_del(by_cur(h), old, i);
		h->ent[i].cur = new_addr;
		h->ent[i].flags |= LFS_HELD_LIVE;
		int err = chain_add(by_cur(h), new_addr, i);
		if (!err)
			err = store(fs, h, i);
		if (err)
			return err;
	}
	if (!h->nretained)
		return 0;
	uint64_t birth;
	int err = lfs_seg_birth(fs, old, &birth);
	if (err || !retained_in(h, birth, until))
		return err;
	struct lfs_held_entry e = { .orig = old, .cur = new_addr, .from = birth, .until = until,
				    .charge = charge, .kind = LFS_BK_DATA, .flags = LFS_HELD_LIVE };
	return add(fs, h, &e);
}

/* 0 if no retained checkpoint lies in [from, until), 2 if one of them
 * is a snapshot in hist (if given), else 1. */
static int
retained_kind(const struct lfs_held *h, uint64_t from, uint64_t until, const struct lfs_hist *hist)
{
	int kind = 0;
	for (size_t i = retained_from(h, from); i < h->nretained && h->retained[i] < until && kind < 2; i++) {
		const struct lfs_hist_entry *e = hist ? lfs_hist_get(hist, h->retained[i]) : NULL;
		kind = e && (e->flags & LFS_HIST_SNAPSHOT) ? 2 : 1;
		if (!hist)
			break;
	}
	return kind;
}

int
lfs_held_would_keep(struct lfs_fs *fs, const struct lfs_held *h, uint64_t addr, uint64_t until,
		    const struct lfs_hist *hist)
{
	int keep = 0;
	for (uint64_t j = (uint64_t)(uintptr_t)u64map_get(&h->by_cur, addr); j && keep < 2; j = h->cur_next[j - 1]) {
		const struct lfs_held_entry *e = &h->ent[j - 1];
		/* entries follow the block: it is kept, by a snapshot if one
		 * of their checkpoints is */
		if (e->slot == 0)
			keep = hist && retained_kind(h, e->from, e->until, hist) == 2 ? 2 : 1;
	}
	if (keep < 2 && h->nretained) {
		uint64_t birth;
		int err = lfs_seg_birth(fs, addr, &birth);
		if (err)
			return err;
		int k = retained_kind(h, birth, until, hist);
		keep = k > keep ? k : keep;
	}
	/* the drop may add an entry: room for it, or the write is refused */
	return keep && h->count >= lfs_held_max(fs) ? -ENOSPC : keep;
}

uint64_t
lfs_held_at(const struct lfs_held *h, uint64_t addr)
{
	for (uint64_t j = (uint64_t)(uintptr_t)u64map_get(&h->by_cur, addr); j; j = h->cur_next[j - 1]) {
		const struct lfs_held_entry *e = &h->ent[j - 1];
		if (!(e->flags & LFS_HELD_LIVE) && lfs_held_needed(h, e))
			return e->orig;
	}
	return 0;
}

/* The units (slots) that entries at addr have, into set. */
static int
units_at(const struct lfs_held *h, uint64_t addr, struct u64map *set)
{
	int err = 0;
	for (uint64_t k = (uint64_t)(uintptr_t)u64map_get(&h->by_cur, addr); k && !err; k = h->cur_next[k - 1])
		err = u64map_put(set, h->ent[k - 1].slot, (void *)1);
	return err;
}

int
lfs_held_moved(struct lfs_fs *fs, struct lfs_held *h, uint64_t addr, uint64_t new_addr)
{
	/* each unit's count moves once: with its first entry met here */
	struct u64map there;
	u64map_init(&there);
	int err = units_at(h, new_addr, &there);
	uint64_t j = (uint64_t)(uintptr_t)u64map_get(&h->by_cur, addr);
	while (j && !err) {
		uint64_t i = j - 1;
		j = h->cur_next[i];
		struct lfs_held_entry *e = &h->ent[i];
		if (e->flags & LFS_HELD_LIVE)
			continue; /* the live tree moves its own */
		bool first = !u64map_get(&there, e->slot);
		if (first && (err = u64map_put(&there, e->slot, (void *)1)))
			break;
		chain_del(by_cur(h), addr, i);
		if (first) {
			if (e->kind == LFS_BK_IMAP) {
				lfs_seg_meta(fs, new_addr, +1);
				lfs_seg_meta(fs, addr, -1);
			} else {
				lfs_seg_use(fs, new_addr, e->charge);
				lfs_seg_unuse(fs, addr, e->charge);
			}
		}
		e->cur = new_addr;
		err = chain_add(by_cur(h), new_addr, i);
		if (!err)
			err = store(fs, h, i);
	}
	u64map_free(&there);
	return err;
}

static uint64_t
unit_key(const struct lfs_held_entry *e)
{
	return e->cur << 16 | e->slot;
}

#define UNIT_KEPT ((void *)UINTPTR_MAX)

/* The units of the entries release forgets: each unit -> the last such
 * entry's slot + 1 in the order of the slots, or UNIT_KEPT where a
 * needed entry stays.  Whether any entry goes. */
static int
units_released(const struct lfs_held *h, struct u64map *units)
{
	int err = 0;
	for (uint64_t i = 0; i < h->tab.nslots && !err; i++)
		if (h->ent[i].orig && !lfs_held_needed(h, &h->ent[i]))
			err = u64map_put(units, unit_key(&h->ent[i]), (void *)(uintptr_t)(i + 1));
	for (uint64_t i = 0; i < h->tab.nslots && !err && units->count; i++)
		if (h->ent[i].orig && lfs_held_needed(h, &h->ent[i]) && u64map_get(units, unit_key(&h->ent[i])))
			err = u64map_put(units, unit_key(&h->ent[i]), UNIT_KEPT); /* replaces: cannot fail */
	return err;
}

int
lfs_held_release(struct lfs_fs *fs, struct lfs_held *h, uint64_t *freed)
{
	*freed = 0;
	/* entries are made needed (held.h): one stops being so only when a
	 * checkpoint stops being retained, so the scan waits for that */
	if (!h->release_due)
		return 0;
	struct u64map units;
	u64map_init(&units);
	int err = units_released(h, &units);
	for (uint64_t i = 0; i < h->tab.nslots && units.count && !err; i++) {
		struct lfs_held_entry e = h->ent[i];
		if (!e.orig || lfs_held_needed(h, &e))
			continue;
		if ((err = remove_slot(fs, h, i)))
			break;
		/* the unit's last entry gone, and the live tree not using it */
		if (u64map_get(&units, unit_key(&e)) == (void *)(uintptr_t)(i + 1) && !(e.flags & LFS_HELD_LIVE)) {
			uncount(fs, &e);
			*freed += e.kind == LFS_BK_IMAP ? fs->bsize : e.charge;
		}
	}
	u64map_free(&units);
	if (!err)
		h->release_due = false;
	return err;
}

void
lfs_held_imap_of(const struct lfs_held *h, uint64_t c, uint64_t *out, uint32_t n_imap_blocks)
{
	for (uint64_t i = 0; i < h->tab.nslots; i++) {
		const struct lfs_held_entry *e = &h->ent[i];
		if (e->orig && e->kind == LFS_BK_IMAP && e->aux < n_imap_blocks && e->from <= c && c < e->until)
			out[e->aux] = e->orig;
	}
}

const struct lfs_held_entry *
lfs_held_entry_for(const struct lfs_held *h, uint64_t orig, uint64_t c)
{
	for (uint64_t j = (uint64_t)(uintptr_t)u64map_get(&h->by_orig, orig); j; j = h->orig_next[j - 1]) {
		const struct lfs_held_entry *e = &h->ent[j - 1];
		if (e->from <= c && c < e->until)
			return e;
	}
	return NULL;
}

const struct lfs_held_entry *
lfs_held_entry_span(const struct lfs_held *h, uint64_t orig, uint64_t c, uint64_t *lo, uint64_t *hi)
{
	const struct lfs_held_entry *found = NULL;
	for (uint64_t j = (uint64_t)(uintptr_t)u64map_get(&h->by_orig, orig); j; j = h->orig_next[j - 1]) {
		const struct lfs_held_entry *e = &h->ent[j - 1];
		uint64_t l = e->until, u = e->from; /* c past it, or before it */
		if (e->from <= c && c < e->until) {
			found = found ? found : e;
			l = e->from, u = e->until;
		}
		if (l <= c && l > *lo)
			*lo = l;
		if (u > c && u < *hi)
			*hi = u;
	}
	return found;
}

uint64_t
lfs_held_translate(const struct lfs_held *h, uint64_t orig, uint64_t c)
{
	const struct lfs_held_entry *e = lfs_held_entry_for(h, orig, c);
	return e ? e->cur : orig;
}

/* A unit's holders, for lfs_held_usage and lfs_held_freed_by. */
struct unit_use {
	uint64_t charge;
	size_t only;                /* the one retained checkpoint (index + 1); 0 none yet */
	size_t top;                 /* the newest retained checkpoint (index + 1) */
	bool shared, live, stays;
};

/* Extend u by the retained checkpoints entry e is needed for: those
 * from index lo to hi (ascending, so found by two searches); stays when
 * one of them may not go (stay_below[i]: how many of retained[0..i) may
 * not). */
static void
unit_add(const struct lfs_held *h, struct unit_use *u, const struct lfs_held_entry *e, const size_t *stay_below)
{
	u->live |= (e->flags & LFS_HELD_LIVE) != 0;
	u->charge = e->charge;
	size_t lo = retained_from(h, e->from), hi = retained_from(h, e->until);
	if (lo >= hi)
		return;
	if (hi - lo > 1 || (u->only && u->only != lo + 1))
		u->shared = true;
	u->only = hi;
	if (hi > u->top)
		u->top = hi;
	if (stay_below && stay_below[hi] > stay_below[lo])
		u->stays = true;
}

/* The units the needed entries are in, with their holders: *use (the
 * caller frees it), *n of them. */
static int
units_held(const struct lfs_held *h, const size_t *stay_below, struct unit_use **use, size_t *n)
{
	*n = 0;
	struct u64map units;
	u64map_init(&units);
	*use = lfs_calloc(h->count ? h->count : 1, sizeof(**use));
	int err = *use ? 0 : -ENOMEM;
	for (uint64_t i = 0; i < h->tab.nslots && !err; i++) {
		const struct lfs_held_entry *e = &h->ent[i];
		if (!e->orig || !lfs_held_needed(h, e))
			continue;
		uint64_t key = unit_key(e);
		uintptr_t k = (uintptr_t)u64map_get(&units, key);
		if (!k) {
			k = ++*n;
			err = u64map_put(&units, key, (void *)k);
		}
		if (!err)
			unit_add(h, &(*use)[k - 1], e, stay_below);
	}
	u64map_free(&units);
	return err;
}

int
lfs_held_usage(const struct lfs_held *h, uint64_t *own, uint64_t *held)
{
	*held = 0;
	for (size_t i = 0; i < h->nretained; i++)
		own[i] = 0;
	struct unit_use *use;
	size_t n;
	int err = units_held(h, NULL, &use, &n);
	for (size_t k = 0; k < n && !err; k++) {
		if (use[k].live)
			continue; /* the live tree's as well: deleting frees nothing */
		*held += use[k].charge;
		if (!use[k].shared)
			own[use[k].only - 1] += use[k].charge;
	}
	free(use);
	return err;
}

int
lfs_held_freed_by(const struct lfs_held *h, const bool *may_go, uint64_t *freed)
{
	size_t *stay_below = lfs_malloc((h->nretained + 1) * sizeof(*stay_below));
	if (!stay_below)
		return -ENOMEM;
	stay_below[0] = 0;
	for (size_t i = 0; i < h->nretained; i++) {
		stay_below[i + 1] = stay_below[i] + !may_go[i];
		freed[i] = 0;
	}
	struct unit_use *use;
	size_t n;
	int err = units_held(h, stay_below, &use, &n);
	for (size_t k = 0; k < n && !err; k++)
		if (!use[k].live && !use[k].stays)
			freed[use[k].top - 1] += use[k].charge;
	free(use);
	free(stay_below);
	return err;
}
