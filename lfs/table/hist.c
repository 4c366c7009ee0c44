/*
 * hist.c — layer 3: the checkpoint history (hist.h), in a paged table
 * (ptable.c) written at checkpoints.
 *
 * Checkpoint protection keeps a record per checkpoint of the period:
 * thousands of them, up to LFS_HIST_MAX.  So the records are indexed:
 * the slots in use sorted by checkpoint (new ones are the newest, so
 * they go at the end) and the named snapshots sorted by name, each
 * question a binary search; loading sorts once, and a repeated
 * checkpoint or name is then next to its twin.
 */
#include "hist.h"

#include "lfs_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
lfs_hist_init(struct lfs_hist *h, const struct lfs_fs *fs)
{
	memset(h, 0, sizeof(*h));
	u64map_init(&h->pins);
	u64map_init(&h->origins);
	h->received_ok = fs->sb.feature_incompat & LFS_FEATURE_RECEIVED;
	h->max_ino = fs->sb.max_inodes;
	return lfs_ptable_init(&h->tab, fs, LFS_TABLE_HIST, LFS_HIST_ENTRY_SIZE);
}

void
lfs_hist_free(struct lfs_fs *fs, struct lfs_hist *h)
{
	lfs_ptable_free(fs, &h->tab);
	free(h->ent);
	u64map_free(&h->pins);
	u64map_free(&h->origins);
	free(h->by_seq);
	free(h->by_name);
	free(h->free);
	memset(h, 0, sizeof(*h));
}

/* Room for slots [0, n) in every array, new slots free (zero). */
static int
grow(struct lfs_hist *h, uint64_t n)
{
	if (n <= h->cap)
		return 0;
	uint64_t cap = h->cap ? h->cap : 16;
	while (cap < n)
		cap *= 2;
	struct lfs_hist_entry *e = lfs_realloc(h->ent, cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	memset(e + h->cap, 0, (cap - h->cap) * sizeof(*e));
	h->ent = e;
	uint64_t **arr[] = { &h->by_seq, &h->by_name, &h->free };
	for (size_t k = 0; k < sizeof(arr) / sizeof(arr[0]); k++) {
		uint64_t *a = lfs_realloc(*arr[k], cap * sizeof(*a));
		if (!a)
			return -ENOMEM; /* cap unchanged: the arrays grown so far are only larger */
		*arr[k] = a;
	}
	h->cap = cap;
	return 0;
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

/* Where seq is, or would go, in by_seq. */
static uint64_t
seq_pos(const struct lfs_hist *h, uint64_t seq)
{
	uint64_t lo = 0, hi = h->count;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (h->ent[h->by_seq[mid]].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Where name is, or would go, in by_name. */
static uint64_t
name_pos(const struct lfs_hist *h, const char *name)
{
	uint64_t lo = 0, hi = h->nnamed;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (strcmp(h->ent[h->by_name[mid]].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void
name_insert(struct lfs_hist *h, uint64_t slot)
{
	uint64_t p = name_pos(h, h->ent[slot].name);
	memmove(h->by_name + p + 1, h->by_name + p, (h->nnamed - p) * sizeof(*h->by_name));
	h->by_name[p] = slot;
	h->nnamed++;
}

static void
name_remove(struct lfs_hist *h, uint64_t slot)
{
	uint64_t p = name_pos(h, h->ent[slot].name);
	if (p < h->nnamed && h->by_name[p] == slot) {
		memmove(h->by_name + p, h->by_name + p + 1, (h->nnamed - p - 1) * sizeof(*h->by_name));
		h->nnamed--;
	}
}

static bool
uuid_hex_ok(const char *s)
{
	for (int i = 0; i < LFS_HIST_UUID_HEX; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[LFS_HIST_UUID_HEX] == '\0';
}

/* The record in slot i, checked alone: why it cannot be, or NULL. */
static const char *
record_wrong(const struct lfs_hist *h, const struct lfs_hist_entry *e, const uint8_t *p)
{
	if (p[LFS_HI_OFF_NAME + LFS_HIST_NAME_MAX])
		return "a name not ended";
	if ((e->flags & (LFS_HIST_RECEIVED | LFS_HIST_ORIGIN)) && !h->received_ok)
		return "a received snapshot's flags without the feature";
	if (e->flags == LFS_HIST_ORIGIN)
		return e->root || !uuid_hex_ok(e->name) ? "an origin that is not a uuid" : NULL;
	if (e->flags & ~(LFS_HIST_SNAPSHOT | LFS_HIST_RECEIVED))
		return "unknown flags";
	if (e->name[0] && !lfs_hist_name_ok(e->name))
		return "a name that is not allowed";
	if (e->name[0] && !(e->flags & LFS_HIST_SNAPSHOT))
		return "a name on a plain checkpoint";
	if ((e->flags & LFS_HIST_RECEIVED) &&
	    (!(e->flags & LFS_HIST_SNAPSHOT) || e->root <= LFS_ROOT_INO || e->root >= h->max_ino))
		return "a received tree that cannot be";
	if (e->root && !(e->flags & LFS_HIST_RECEIVED))
		return "a root on a checkpoint not received";
	return NULL;
}

static int
record_refused(uint64_t i, uint64_t seq, const char *why)
{
	lfs_log("checkpoint history: record %llu (checkpoint %llu) has %s", (unsigned long long)i,
		(unsigned long long)seq, why);
	return -EFSCORRUPTED;
}

struct seq_slot {
	uint64_t seq, slot;
};

static int
seq_slot_cmp(const void *a, const void *b)
{
	const struct seq_slot *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int
entry_name_cmp(const void *a, const void *b)
{
	const struct lfs_hist_entry *const *x = a, *const *y = b;
	return strcmp((*x)->name, (*y)->name);
}

/* Sort the records in use into by_seq and the named into by_name; a
 * checkpoint or a name twice is refused. */
static int
index_records(struct lfs_hist *h)
{
	struct seq_slot *s = lfs_malloc((h->count ? h->count : 1) * sizeof(*s));
	const struct lfs_hist_entry **named = lfs_malloc((h->nnamed ? h->nnamed : 1) * sizeof(*named));
	int err = s && named ? 0 : -ENOMEM;
	uint64_t n = 0, k = 0;
	for (uint64_t i = 0; i < h->tab.nslots && !err; i++) {
		if (!h->ent[i].seq || h->ent[i].flags == LFS_HIST_ORIGIN)
			continue;
		s[n++] = (struct seq_slot){ h->ent[i].seq, i };
		if (h->ent[i].name[0])
			named[k++] = &h->ent[i];
	}
	if (!err) {
		qsort(s, n, sizeof(*s), seq_slot_cmp);
		qsort(named, k, sizeof(*named), entry_name_cmp);
	}
	for (uint64_t j = 0; j < n && !err; j++) {
		if (j && s[j].seq == s[j - 1].seq)
			err = record_refused(s[j].slot, s[j].seq, "a checkpoint recorded twice");
		h->by_seq[j] = s[j].slot;
	}
	for (uint64_t j = 0; j < k && !err; j++) {
		uint64_t slot = (uint64_t)(named[j] - h->ent);
		if (j && !strcmp(named[j]->name, named[j - 1]->name))
			err = record_refused(slot, named[j]->seq, "a name given twice");
		h->by_name[j] = slot;
	}
	free(s);
	free(named);
	return err;
}

/* Every received snapshot has one origin record and every origin record
 * one received snapshot (the records are indexed: linear). */
static int
origins_match(const struct lfs_hist *h)
{
	uint64_t received = 0;
	for (uint64_t p = 0; p < h->count; p++) {
		const struct lfs_hist_entry *e = &h->ent[h->by_seq[p]];
		if (!(e->flags & LFS_HIST_RECEIVED))
			continue;
		received++;
		if (!u64map_get(&h->origins, e->seq))
			return record_refused(h->by_seq[p], e->seq, "no origin");
	}
	if (received != h->origins.count) {
		lfs_log("checkpoint history: %llu origin records for %llu received snapshots",
			(unsigned long long)h->origins.count, (unsigned long long)received);
		return -EFSCORRUPTED;
	}
	return 0;
}

int
lfs_hist_load(struct lfs_fs *fs, struct lfs_hist *h, uint64_t root, uint64_t nslots)
{
	if (nslots > LFS_HIST_MAX) {
		lfs_log("checkpoint history: %llu records, more than the %u a history may have",
			(unsigned long long)nslots, LFS_HIST_MAX);
		return -EFSCORRUPTED;
	}
	int err = lfs_ptable_load(fs, &h->tab, root, nslots);
	if (!err)
		err = grow(h, nslots);
	/* free slots are taken lowest first: pushed highest first */
	for (uint64_t i = nslots; i-- > 0 && !err;) {
		const uint8_t *p = lfs_ptable_get(&h->tab, i);
		struct lfs_hist_entry *e = &h->ent[i];
		lfs_hist_entry_decode(e, p);
		if (!e->seq) {
			h->free[h->nfree++] = i;
			continue;
		}
		const char *why = record_wrong(h, e, p);
		if (why)
			err = record_refused(i, e->seq, why);
		if (!err && e->flags == LFS_HIST_ORIGIN) {
			if (u64map_get(&h->origins, e->seq))
				err = record_refused(i, e->seq, "a second origin");
			else
				err = u64map_put(&h->origins, e->seq, (void *)(uintptr_t)(i + 1));
			continue;
		}
		h->count++;
		h->nnamed += e->name[0] != 0;
	}
	if (!err)
		err = index_records(h);
	if (!err)
		err = origins_match(h);
	return err;
}

const struct lfs_hist_entry *
lfs_hist_get(const struct lfs_hist *h, uint64_t seq)
{
	uint64_t p = seq_pos(h, seq);
	return seq && p < h->count && h->ent[h->by_seq[p]].seq == seq ? &h->ent[h->by_seq[p]] : NULL;
}

const struct lfs_hist_entry *
lfs_hist_named(const struct lfs_hist *h, const char *name)
{
	uint64_t p = name[0] ? name_pos(h, name) : h->nnamed;
	return p < h->nnamed && !strcmp(h->ent[h->by_name[p]].name, name) ? &h->ent[h->by_name[p]] : NULL;
}

static uint64_t
slot_of(const struct lfs_hist *h, const struct lfs_hist_entry *e)
{
	return (uint64_t)(e - h->ent);
}

int
lfs_hist_add(struct lfs_fs *fs, struct lfs_hist *h, uint64_t seq, uint64_t time_ns)
{
	if (!seq || (h->count && h->ent[h->by_seq[h->count - 1]].seq >= seq))
		return -EINVAL;
	if (h->count >= LFS_HIST_MAX)
		return -ENOSPC;
	uint64_t i = h->nfree ? h->free[h->nfree - 1] : h->tab.nslots;
	if (i >= LFS_HIST_MAX)
		return -ENOSPC; /* origin records take slots too */
	int err = grow(h, i + 1);
	if (err)
		return err;
	h->ent[i] = (struct lfs_hist_entry){ .seq = seq, .time_ns = time_ns };
	if ((err = store(fs, h, i))) {
		memset(&h->ent[i], 0, sizeof(h->ent[i]));
		return err;
	}
	if (h->nfree && h->free[h->nfree - 1] == i)
		h->nfree--;
	h->by_seq[h->count++] = i;
	return 0;
}

int
lfs_hist_snapshot(struct lfs_fs *fs, struct lfs_hist *h, uint64_t seq, bool on, const char *name)
{
	const struct lfs_hist_entry *cur = lfs_hist_get(h, seq);
	if (!cur)
		return -ENOENT;
	uint64_t i = slot_of(h, cur);
	if (!name || !on)
		name = "";
	if (name[0] && !lfs_hist_name_ok(name))
		return -EINVAL;
	const struct lfs_hist_entry *other = lfs_hist_named(h, name);
	if (other && other->seq != seq)
		return -EEXIST;
	if (!on && (cur->flags & LFS_HIST_RECEIVED))
		return -EINVAL; /* a received tree is a snapshot until deleted */
	struct lfs_hist_entry was = h->ent[i], now = was;
	now.flags = on ? LFS_HIST_SNAPSHOT | (was.flags & LFS_HIST_RECEIVED) : 0;
	memset(now.name, 0, sizeof(now.name));
	memcpy(now.name, name, strlen(name));
	h->ent[i] = now;
	int err = store(fs, h, i);
	h->ent[i] = was;
	if (err)
		return err;
	/* the name index follows the name: out under the old, in under the new */
	if (was.name[0] && strcmp(was.name, now.name))
		name_remove(h, i);
	h->ent[i] = now;
	if (now.name[0] && strcmp(was.name, now.name))
		name_insert(h, i);
	return 0;
}

/* Forget the record at by_seq[p], whose slot is already written free. */
static void
forget(struct lfs_hist *h, uint64_t p)
{
	uint64_t i = h->by_seq[p];
	if (h->ent[i].name[0])
		name_remove(h, i);
	memset(&h->ent[i], 0, sizeof(h->ent[i]));
	memmove(h->by_seq + p, h->by_seq + p + 1, (h->count - p - 1) * sizeof(*h->by_seq));
	h->count--;
	h->free[h->nfree++] = i;
}

/* Write slot i free (a slot in use: its page is there, nothing can fail). */
static int
store_free(struct lfs_fs *fs, struct lfs_hist *h, uint64_t i)
{
	uint8_t buf[LFS_HIST_ENTRY_SIZE] = { 0 };
	return lfs_ptable_put(fs, &h->tab, i, buf);
}

int
lfs_hist_delete(struct lfs_fs *fs, struct lfs_hist *h, uint64_t seq)
{
	const struct lfs_hist_entry *e = lfs_hist_get(h, seq);
	if (!e)
		return -ENOENT;
	uint64_t o = (uintptr_t)u64map_get(&h->origins, seq);
	int err = o ? store_free(fs, h, o - 1) : 0;
	if (!err && o) {
		memset(&h->ent[o - 1], 0, sizeof(h->ent[o - 1]));
		h->free[h->nfree++] = o - 1;
		u64map_del(&h->origins, seq);
	}
	if (!err)
		err = store_free(fs, h, slot_of(h, e));
	if (!err)
		forget(h, seq_pos(h, seq));
	return err;
}

int
lfs_hist_receive(struct lfs_fs *fs, struct lfs_hist *h, uint64_t seq, uint32_t root, const uint8_t uuid[16],
		 uint64_t src_seq)
{
	const struct lfs_hist_entry *cur = lfs_hist_get(h, seq);
	if (!cur || !(cur->flags & LFS_HIST_SNAPSHOT) || (cur->flags & LFS_HIST_RECEIVED))
		return -EINVAL;
	if (root <= LFS_ROOT_INO || root >= h->max_ino || !h->received_ok)
		return -EINVAL;
	uint64_t main = slot_of(h, cur);
	uint64_t o = h->nfree ? h->free[h->nfree - 1] : h->tab.nslots;
	if (o >= LFS_HIST_MAX)
		return -ENOSPC;
	int err = grow(h, o + 1);
	if (err)
		return err;
	struct lfs_hist_entry org = { .seq = seq, .time_ns = src_seq, .flags = LFS_HIST_ORIGIN };
	for (int k = 0; k < 16; k++)
		snprintf(org.name + 2 * k, 3, "%02x", uuid[k]);
	h->ent[o] = org;
	if (!(err = store(fs, h, o)) && !(err = u64map_put(&h->origins, seq, (void *)(uintptr_t)(o + 1)))) {
		if (h->nfree && h->free[h->nfree - 1] == o)
			h->nfree--;
		h->ent[main].flags |= LFS_HIST_RECEIVED;
		h->ent[main].root = root;
		if (!(err = store(fs, h, main)))
			return 0;
		h->ent[main].flags &= ~LFS_HIST_RECEIVED;
		h->ent[main].root = 0;
		u64map_del(&h->origins, seq);
		h->free[h->nfree++] = o;
		(void)store_free(fs, h, o);
	}
	memset(&h->ent[o], 0, sizeof(h->ent[o]));
	return err;
}

static unsigned
hex_val(char c)
{
	return c <= '9' ? (unsigned)(c - '0') : (unsigned)(c - 'a' + 10);
}

bool
lfs_hist_origin(const struct lfs_hist *h, uint64_t seq, uint8_t uuid[16], uint64_t *src_seq)
{
	uint64_t o = (uintptr_t)u64map_get(&h->origins, seq);
	if (!o)
		return false;
	const struct lfs_hist_entry *e = &h->ent[o - 1]; /* checked hex when loaded or made */
	for (int k = 0; k < 16; k++)
		uuid[k] = (uint8_t)(hex_val(e->name[2 * k]) << 4 | hex_val(e->name[2 * k + 1]));
	*src_seq = e->time_ns;
	return true;
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
	/* one pass, keeping by_seq's order: the records that stay move down */
	uint64_t kept = 0, p = 0;
	int err = 0;
	for (; p < h->count && !err; p++) {
		uint64_t i = h->by_seq[p];
		const struct lfs_hist_entry *e = &h->ent[i];
		uint64_t age = now_ns > e->time_ns ? now_ns - e->time_ns : 0; /* a clock set back: young */
		if ((e->flags & LFS_HIST_SNAPSHOT) || age < period_ns || lfs_hist_pinned(h, e->seq) ||
		    (err = store_free(fs, h, i))) {
			h->by_seq[kept++] = i;
			continue;
		}
		memset(&h->ent[i], 0, sizeof(h->ent[i]));
		h->free[h->nfree++] = i;
		++*gone;
	}
	for (; p < h->count; p++)
		h->by_seq[kept++] = h->by_seq[p];
	h->count = kept;
	return err;
}

uint64_t
lfs_hist_oldest_plain(const struct lfs_hist *h)
{
	for (uint64_t p = 0; p < h->count; p++) {
		const struct lfs_hist_entry *e = &h->ent[h->by_seq[p]];
		if (!(e->flags & LFS_HIST_SNAPSHOT) && !lfs_hist_pinned(h, e->seq))
			return e->seq;
	}
	return 0;
}

size_t
lfs_hist_retained(const struct lfs_hist *h, uint64_t *out)
{
	for (uint64_t p = 0; p < h->count; p++)
		out[p] = h->ent[h->by_seq[p]].seq;
	return (size_t)h->count;
}
