/*
 * hist.c — layer 3: the checkpoint history (hist.h), in a paged table
 * (ptable.c) written at checkpoints.  A few hundred records at most (a
 * checkpoint every few seconds for the protection period, and the
 * snapshots), so every question is a scan of the slots.
 */
#include "hist.h"

#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int
lfs_hist_init(struct lfs_hist *h, const struct lfs_fs *fs)
{
	memset(h, 0, sizeof(*h));
	u64map_init(&h->pins);
	return lfs_ptable_init(&h->tab, fs, LFS_TABLE_HIST, LFS_HIST_ENTRY_SIZE);
}

void
lfs_hist_free(struct lfs_fs *fs, struct lfs_hist *h)
{
	lfs_ptable_free(fs, &h->tab);
	free(h->ent);
	u64map_free(&h->pins);
	memset(h, 0, sizeof(*h));
}

static int
store(struct lfs_fs *fs, struct lfs_hist *h, uint64_t i)
{
	uint8_t buf[LFS_HIST_ENTRY_SIZE];
	lfs_hist_entry_encode(&h->ent[i], buf);
	return lfs_ptable_put(fs, &h->tab, i, buf);
}

bool
lfs_hist_name_ok(const char *name)
{
	size_t n = strnlen(name, LFS_HIST_NAME_MAX + 1);
	if (n == 0 || n > LFS_HIST_NAME_MAX || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f || name[i] == '/')
			return false;
	return true;
}

int
lfs_hist_load(struct lfs_fs *fs, struct lfs_hist *h, uint64_t root, uint64_t nslots)
{
	int err = lfs_ptable_load(fs, &h->tab, root, nslots);
	if (!err && nslots) {
		h->ent = lfs_calloc(nslots, sizeof(*h->ent));
		h->cap = nslots;
		if (!h->ent)
			err = -ENOMEM;
	}
	for (uint64_t i = 0; i < nslots && !err; i++) {
		const uint8_t *p = lfs_ptable_get(&h->tab, i);
		struct lfs_hist_entry *e = &h->ent[i];
		lfs_hist_entry_decode(e, p);
		if (!e->seq)
			continue;
		const char *why = NULL;
		if (e->flags & ~LFS_HIST_SNAPSHOT)
			why = "unknown flags";
		else if (p[LFS_HI_OFF_NAME + LFS_HIST_NAME_MAX] || (e->name[0] && !lfs_hist_name_ok(e->name)))
			why = "a name that is not allowed";
		else if (e->name[0] && !(e->flags & LFS_HIST_SNAPSHOT))
			why = "a name on a plain checkpoint";
		for (uint64_t j = 0; j < i && !why; j++)
			if (h->ent[j].seq == e->seq)
				why = "a checkpoint recorded twice";
			else if (e->name[0] && !strcmp(h->ent[j].name, e->name))
				why = "a name given twice";
		if (why) {
			lfs_log("checkpoint history: record %llu (checkpoint %llu) has %s", (unsigned long long)i,
				(unsigned long long)e->seq, why);
			err = -EFSCORRUPTED;
		}
		h->count++;
	}
	return err;
}

static int64_t
slot_of(const struct lfs_hist *h, uint64_t seq)
{
	for (uint64_t i = 0; i < h->tab.nslots; i++)
		if (h->ent[i].seq == seq)
			return (int64_t)i;
	return -1;
}

const struct lfs_hist_entry *
lfs_hist_get(const struct lfs_hist *h, uint64_t seq)
{
	int64_t i = seq ? slot_of(h, seq) : -1;
	return i < 0 ? NULL : &h->ent[i];
}

const struct lfs_hist_entry *
lfs_hist_named(const struct lfs_hist *h, const char *name)
{
	for (uint64_t i = 0; name[0] && i < h->tab.nslots; i++)
		if (h->ent[i].seq && !strcmp(h->ent[i].name, name))
			return &h->ent[i];
	return NULL;
}

int
lfs_hist_add(struct lfs_fs *fs, struct lfs_hist *h, uint64_t seq, uint64_t time_ns)
{
	int64_t free_slot = -1;
	for (uint64_t i = 0; i < h->tab.nslots; i++) {
		if (h->ent[i].seq >= seq)
			return -EINVAL;
		if (!h->ent[i].seq && free_slot < 0)
			free_slot = (int64_t)i;
	}
	uint64_t i = free_slot >= 0 ? (uint64_t)free_slot : h->tab.nslots;
	if (i >= h->cap) {
		uint64_t cap = h->cap ? 2 * h->cap : 16;
		struct lfs_hist_entry *e = lfs_realloc(h->ent, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		memset(e + h->cap, 0, (cap - h->cap) * sizeof(*e));
		h->ent = e;
		h->cap = cap;
	}
	h->ent[i] = (struct lfs_hist_entry){ .seq = seq, .time_ns = time_ns };
	int err = store(fs, h, i);
	if (err)
		memset(&h->ent[i], 0, sizeof(h->ent[i]));
	else
		h->count++;
	return err;
}

int
lfs_hist_snapshot(struct lfs_fs *fs, struct lfs_hist *h, uint64_t seq, bool on, const char *name)
{
	int64_t i = seq ? slot_of(h, seq) : -1;
	if (i < 0)
		return -ENOENT;
	if (!name || !on)
		name = "";
	if (name[0] && !lfs_hist_name_ok(name))
		return -EINVAL;
	const struct lfs_hist_entry *other = lfs_hist_named(h, name);
	if (other && other->seq != seq)
		return -EEXIST;
	struct lfs_hist_entry was = h->ent[i];
	h->ent[i].flags = on ? LFS_HIST_SNAPSHOT : 0;
	memset(h->ent[i].name, 0, sizeof(h->ent[i].name));
	memcpy(h->ent[i].name, name, strlen(name));
	int err = store(fs, h, (uint64_t)i);
	if (err)
		h->ent[i] = was;
	return err;
}

int
lfs_hist_delete(struct lfs_fs *fs, struct lfs_hist *h, uint64_t seq)
{
	int64_t i = seq ? slot_of(h, seq) : -1;
	if (i < 0)
		return -ENOENT;
	struct lfs_hist_entry was = h->ent[i];
	memset(&h->ent[i], 0, sizeof(h->ent[i]));
	int err = store(fs, h, (uint64_t)i);
	if (err)
		h->ent[i] = was;
	else
		h->count--;
	return err;
}

int
lfs_hist_pin(struct lfs_hist *h, uint64_t seq)
{
	if (!lfs_hist_get(h, seq))
		return -ENOENT;
	uintptr_t n = (uintptr_t)u64map_get(&h->pins, seq);
	return u64map_put(&h->pins, seq, (void *)(n + 1));
}

void
lfs_hist_unpin(struct lfs_hist *h, uint64_t seq)
{
	uintptr_t n = (uintptr_t)u64map_get(&h->pins, seq);
	if (n > 1)
		(void)u64map_put(&h->pins, seq, (void *)(n - 1)); /* replaces: allocates nothing */
	else if (n == 1)
		u64map_del(&h->pins, seq);
}

bool
lfs_hist_pinned(const struct lfs_hist *h, uint64_t seq)
{
	return u64map_get(&h->pins, seq) != NULL;
}

int
lfs_hist_prune(struct lfs_fs *fs, struct lfs_hist *h, uint64_t now_ns, uint64_t period_ns, uint64_t *gone)
{
	*gone = 0;
	for (uint64_t i = 0; i < h->tab.nslots; i++) {
		const struct lfs_hist_entry *e = &h->ent[i];
		uint64_t age = now_ns > e->time_ns ? now_ns - e->time_ns : 0; /* a clock set back: young */
		if (!e->seq || (e->flags & LFS_HIST_SNAPSHOT) || age < period_ns || lfs_hist_pinned(h, e->seq))
			continue;
		int err = lfs_hist_delete(fs, h, e->seq);
		if (err)
			return err;
		++*gone;
	}
	return 0;
}

size_t
lfs_hist_retained(const struct lfs_hist *h, uint64_t *out)
{
	size_t n = 0;
	for (uint64_t i = 0; i < h->tab.nslots; i++)
		if (h->ent[i].seq)
			out[n++] = h->ent[i].seq;
	qsort(out, n, sizeof(*out), u64_cmp);
	return n;
}
