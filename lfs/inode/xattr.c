/*
 * xattr.c — layer 4: extended attributes of an inode, in XATTR blocks
 * (format.h).
 *
 * Namespaces user., trusted. and security. are stored, and of system.
 * the two POSIX ACLs, which acl.c checks and keeps in step with the mode.
 *
 * Two shapes, as the on-disk root says:
 *   - single: every entry in the root block (all an image without
 *     LFS_FEATURE_XATTR_BLOCKS has: one block per inode, as before);
 *   - indexed: the root is a table of slots, each naming a leaf of
 *     entries or one block of a value too large for a leaf.
 * An inode starts single and turns indexed when a change does not fit
 * the root; it turns single again when everything left fits the root.
 * A change rewrites the leaf it touches, the blocks of the value it
 * sets, and the root (which holds their addresses): never the other
 * leaves or values, so thousands of attributes cost a few blocks per
 * change.
 *
 * In memory, once loaded (lfs_xattr_load, on first use): the entries of
 * every container (the root, each leaf) encoded as on disk, without
 * their headers; values out of line are read from disk when asked for,
 * and held only while they wait to be written.  addr[s] is what the
 * on-disk root says of slot s, the block counted in the usage table;
 * it changes when a flush writes the slot (lfs_xattr_flush) or when the
 * slot is freed (at once: its block is then counted free).
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

/* Entries of one container, as on disk after the header. */
struct xcont {
	uint8_t *b;                 /* capacity bytes (NULL: a slot that is no leaf) */
	uint32_t count;
	uint32_t used;
};

struct lfs_xattrs {
	struct xcont root;          /* single shape: every entry; indexed: none */
	uint32_t nslots;            /* 0: single; else lfs_xattr_max_slots() */
	uint64_t *addr;             /* [nslots] on disk, 0: none yet */
	uint8_t *kind;              /* [nslots] LFS_XSLOT_*, 0: free */
	uint8_t *dirty;             /* [nslots] to be written */
	struct xcont *leaf;         /* [nslots] */
	uint8_t **val;              /* [nslots] value blocks waiting to be written */
	uint32_t nused;             /* slots in use */
	uint32_t list_bytes;        /* what listxattr returns */
};

static bool
indexed_ok(const struct lfs_fs *fs)
{
	return fs->sb.feature_incompat & LFS_FEATURE_XATTR_BLOCKS;
}

/* Room for entries in the root (single shape) and in a leaf. */
static uint32_t
root_cap(const struct lfs_fs *fs)
{
	return fs->bsize - (indexed_ok(fs) ? LFS_XATTR_ROOT_HDR : LFS_XATTR_HDR);
}

static uint32_t
leaf_cap(const struct lfs_fs *fs)
{
	return fs->bsize - LFS_XATTR_HDR;
}

static uint32_t
value_blocks(const struct lfs_fs *fs, uint32_t len)
{
	return (len + fs->bsize - 1) / fs->bsize;
}

static void
free_arrays(struct lfs_xattrs *xa)
{
	for (uint32_t s = 0; s < xa->nslots; s++) {
		free(xa->leaf[s].b);
		free(xa->val[s]);
	}
	free(xa->addr);
	free(xa->kind);
	free(xa->dirty);
	free(xa->leaf);
	free(xa->val);
	xa->addr = NULL;
	xa->kind = xa->dirty = NULL;
	xa->leaf = NULL;
	xa->val = NULL;
	xa->nslots = xa->nused = 0;
}

void
lfs_xattr_drop(struct lfs_inode *ip)
{
	if (ip->xattr) {
		free_arrays(ip->xattr);
		free(ip->xattr->root.b);
		free(ip->xattr);
	}
	ip->xattr = NULL;
	ip->xattr_loaded = false;
	ip->xattr_dirty = false;
}

static int
alloc_arrays(struct lfs_fs *fs, struct lfs_xattrs *xa)
{
	uint32_t n = lfs_xattr_max_slots(fs->bsize);
	xa->addr = lfs_calloc(n, sizeof(*xa->addr));
	xa->kind = lfs_calloc(n, 1);
	xa->dirty = lfs_calloc(n, 1);
	xa->leaf = lfs_calloc(n, sizeof(*xa->leaf));
	xa->val = lfs_calloc(n, sizeof(*xa->val));
	xa->nslots = n;
	if (!xa->addr || !xa->kind || !xa->dirty || !xa->leaf || !xa->val) {
		free_arrays(xa);
		return -ENOMEM;
	}
	return 0;
}

/* Take the entries of a container read from disk (count of them at
 * blk+off, up to the block's end), checking each; value slots they name
 * are counted in refs. */
static int
take_entries(struct lfs_fs *fs, struct lfs_xattrs *xa, struct xcont *c, const uint8_t *blk, uint32_t off,
	     uint32_t count, uint8_t *refs)
{
	uint32_t p = off;
	for (uint32_t i = 0; i < count; i++) {
		struct lfs_xent e;
		if (lfs_xent_decode(&e, blk, p, fs->bsize, fs->bsize, xa->nslots))
			return -EFSCORRUPTED;
		if (e.flags & LFS_XENT_OUT)
			for (uint32_t k = 0; k < value_blocks(fs, e.value_len); k++) {
				uint16_t s = lfs_xent_slot(&e, k);
				if (xa->kind[s] != LFS_XSLOT_VALUE || refs[s]++)
					return -EFSCORRUPTED;
			}
		xa->list_bytes += e.name_len + 1u;
		p += lfs_xent_len(e.name_len, e.value_len, e.flags & LFS_XENT_OUT, fs->bsize);
	}
	c->b = lfs_malloc(fs->bsize);
	if (!c->b)
		return -ENOMEM;
	c->count = count;
	c->used = p - off;
	memcpy(c->b, blk + off, c->used);
	return 0;
}

static int
load_slots(struct lfs_fs *fs, struct lfs_inode *ip, struct lfs_xattrs *xa, const uint8_t *root)
{
	int err = alloc_arrays(fs, xa);
	if (err)
		return err;
	for (uint32_t s = 0; s < xa->nslots; s++) {
		uint64_t v = lfs_xroot_slot(root, s), a = lfs_xslot_addr(v);
		unsigned k = lfs_xslot_kind(v);
		if (!v)
			continue;
		if ((k != LFS_XSLOT_LEAF && k != LFS_XSLOT_VALUE) || !lfs_addr_named(fs, a)) {
			lfs_log("inode %u: xattr slot %u: bad kind %u or address %llu", ip->ino, s, k,
				(unsigned long long)a);
			return -EFSCORRUPTED;
		}
		xa->addr[s] = a;
		xa->kind[s] = (uint8_t)k;
		xa->nused++;
	}
	uint8_t *refs = lfs_calloc(xa->nslots, 1), *blk = lfs_malloc(fs->bsize);
	err = refs && blk ? 0 : -ENOMEM;
	for (uint32_t s = 0; s < xa->nslots && !err; s++) {
		if (xa->kind[s] != LFS_XSLOT_LEAF)
			continue;
		if ((err = lfs_read_block(fs, xa->addr[s], blk)))
			break;
		uint32_t count = lfs_xleaf_count(blk);
		if (count > leaf_cap(fs) / (LFS_XATTR_ENT_HDR + 1))
			err = -EFSCORRUPTED;
		else
			err = take_entries(fs, xa, &xa->leaf[s], blk, LFS_XATTR_HDR, count, refs);
	}
	/* every value block belongs to exactly one entry */
	for (uint32_t s = 0; s < xa->nslots && !err; s++)
		if (xa->kind[s] == LFS_XSLOT_VALUE && refs[s] != 1)
			err = -EFSCORRUPTED;
	free(refs);
	free(blk);
	return err;
}

static int to_indexed(struct lfs_fs *fs, struct lfs_xattrs *xa);

static int
load(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (ip->xattr_loaded)
		return 0;
	struct lfs_xattrs *xa = lfs_calloc(1, sizeof(*xa));
	uint8_t *blk = lfs_malloc(fs->bsize);
	int err = xa && blk ? 0 : -ENOMEM;
	if (!err && ip->di.xattr) {
		struct lfs_xroot r;
		err = lfs_read_block(fs, ip->di.xattr, blk);
		if (!err && (lfs_xroot_decode(&r, blk, fs->bsize) ||
			     (r.nslots && (r.nslots != lfs_xattr_max_slots(fs->bsize) || r.count))))
			err = -EFSCORRUPTED;
		if (!err && r.nslots)
			err = load_slots(fs, ip, xa, blk);
		if (!err && !r.nslots)
			err = take_entries(fs, xa, &xa->root, blk, r.ents, r.count, NULL);
		/* a block of an image from before the feature may hold more
		 * than a root has room for: it is written back as a leaf */
		if (!err && r.legacy && xa->root.used > root_cap(fs))
			err = to_indexed(fs, xa);
		if (err == -EFSCORRUPTED)
			lfs_log("inode %u: extended attributes at block %llu are corrupt", ip->ino,
				(unsigned long long)ip->di.xattr);
	}
	if (!err && !xa->root.b && !(xa->root.b = lfs_malloc(fs->bsize)))
		err = -ENOMEM;
	free(blk);
	if (err) {
		if (xa) {
			free_arrays(xa);
			free(xa->root.b);
			free(xa);
		}
		return err;
	}
	ip->xattr = xa;
	ip->xattr_loaded = true;
	return 0;
}

int
lfs_xattr_load(struct lfs_fs *fs, struct lfs_inode *ip)
{
	return load(fs, ip);
}

static int
check_name(const char *name)
{
	size_t len = strlen(name);
	if (len == 0 || len > LFS_XATTR_NAME_MAX)
		return -ERANGE;
	if (strncmp(name, "user.", 5) && strncmp(name, "trusted.", 8) && strncmp(name, "security.", 9) &&
	    !lfs_acl_name(name))
		return -EOPNOTSUPP;
	return 0;
}

/* Where an entry is: its container, offset there, and decoded. */
struct xpos {
	struct xcont *c;
	uint32_t off;
	int32_t slot;               /* of the leaf; -1: the root */
	struct lfs_xent e;
};

static uint32_t
ent_len(const struct lfs_fs *fs, const struct lfs_xent *e)
{
	return lfs_xent_len(e->name_len, e->value_len, e->flags & LFS_XENT_OUT, fs->bsize);
}

/* Calls fn for every entry, root first then leaves in slot order; stops
 * when fn returns non-zero, and returns that. */
static int
each_entry(const struct lfs_fs *fs, struct lfs_xattrs *xa, int (*fn)(void *ctx, const struct xpos *p), void *ctx)
{
	for (int32_t s = -1; s < (int32_t)xa->nslots; s++) {
		struct xcont *c = s < 0 ? &xa->root : &xa->leaf[s];
		if (!c->b)
			continue;
		struct xpos p = { .c = c, .slot = s };
		for (uint32_t i = 0; i < c->count; i++) {
			/* checked when loaded, and built here since */
			lfs_xent_decode(&p.e, c->b, p.off, c->used, fs->bsize, xa->nslots);
			int r = fn(ctx, &p);
			if (r)
				return r;
			p.off += ent_len(fs, &p.e);
		}
	}
	return 0;
}

struct find_ctx {
	const char *name;
	size_t len;
	struct xpos *out;
};

static int
find_one(void *ctx, const struct xpos *p)
{
	struct find_ctx *f = ctx;
	if (p->e.name_len != f->len || memcmp(p->e.name, f->name, f->len))
		return 0;
	*f->out = *p;
	return 1;
}

static bool
find(const struct lfs_fs *fs, struct lfs_xattrs *xa, const char *name, struct xpos *out)
{
	struct find_ctx f = { name, strlen(name), out };
	return each_entry(fs, xa, find_one, &f) == 1;
}

ssize_t
lfs_xattr_get(struct lfs_fs *fs, struct lfs_inode *ip, const char *name, void *value, size_t size)
{
	int err = check_name(name);
	if (err)
		return err == -ERANGE ? -ENODATA : err;
	if (!ip->di.xattr && !ip->xattr)
		return -ENODATA; /* the common case, answered from memory */
	if ((err = load(fs, ip)))
		return err;
	struct lfs_xattrs *xa = ip->xattr;
	struct xpos p;
	if (!find(fs, xa, name, &p))
		return -ENODATA;
	if (size == 0)
		return p.e.value_len;
	if (size < p.e.value_len)
		return -ERANGE;
	if (!(p.e.flags & LFS_XENT_OUT)) {
		memcpy(value, p.e.payload, p.e.value_len);
		return p.e.value_len;
	}
	uint8_t *blk = lfs_malloc(fs->bsize);
	if (!blk)
		return -ENOMEM;
	for (uint32_t k = 0, done = 0; k < value_blocks(fs, p.e.value_len) && !err; k++) {
		uint16_t s = lfs_xent_slot(&p.e, k);
		uint32_t n = p.e.value_len - done < fs->bsize ? p.e.value_len - done : fs->bsize;
		const uint8_t *src = xa->val[s];
		if (!src && !(err = lfs_read_block(fs, xa->addr[s], blk)))
			src = blk;
		if (!err)
			memcpy((uint8_t *)value + done, src, n);
		done += n;
	}
	free(blk);
	return err ? err : (ssize_t)p.e.value_len;
}

struct list_ctx {
	char *list;
	size_t size, total;
};

static int
list_one(void *ctx, const struct xpos *p)
{
	struct list_ctx *l = ctx;
	if (l->size) {
		if (l->total + p->e.name_len + 1 > l->size)
			return -ERANGE;
		memcpy(l->list + l->total, p->e.name, p->e.name_len);
		l->list[l->total + p->e.name_len] = '\0';
	}
	l->total += p->e.name_len + 1u;
	return 0;
}

ssize_t
lfs_xattr_list(struct lfs_fs *fs, struct lfs_inode *ip, char *list, size_t size)
{
	if (!ip->di.xattr && !ip->xattr)
		return 0; /* nothing to read, nothing to hold in memory */
	int err = load(fs, ip);
	if (err)
		return err;
	struct list_ctx l = { list, size, 0 };
	err = each_entry(fs, ip->xattr, list_one, &l);
	return err ? err : (ssize_t)l.total;
}

/* ---------------------------------------------------------------- */
/* Changes: all checks first, so that a failed change changes nothing. */

/* XATTR blocks the in-memory state takes on disk, root included. */
static uint32_t
nblocks(const struct lfs_xattrs *xa)
{
	return xa->nslots ? 1 + xa->nused : xa->root.count ? 1 : 0;
}

static void
mark_changed(struct lfs_fs *fs, struct lfs_inode *ip, uint32_t blocks)
{
	struct lfs_xattrs *xa = ip->xattr;
	ip->xattr_dirty = true;
	ip->xattr_nblocks = nblocks(xa);
	lfs_inode_touch(ip, false, true);
	lfs_inode_dirty(fs, ip);
	/* the blocks the flush will write beyond the record, for admission
	 * (space.c): the root, a leaf, the value's blocks */
	uint32_t units = (blocks + 2) * LFS_UNITS_PER_BLOCK;
	if (ip->units <= UINT8_MAX - units) {
		ip->units = (uint8_t)(ip->units + units);
		fs->dirty_units += units;
	} else {
		fs->dirty_units += units; /* given back at the flush */
	}
}

static void
free_slot(struct lfs_fs *fs, struct lfs_inode *ip, struct lfs_xattrs *xa, uint32_t s)
{
	if (xa->addr[s])
		lfs_repl_drop(fs, ip, xa->addr[s], LFS_BK_XATTR);
	free(xa->leaf[s].b);
	free(xa->val[s]);
	xa->leaf[s] = (struct xcont){ 0 };
	xa->val[s] = NULL;
	xa->addr[s] = 0;
	xa->kind[s] = 0;
	xa->dirty[s] = 0;
	xa->nused--;
}

/* Take the entry at p out of its container; its value blocks are freed,
 * and its leaf if that empties. */
static void
remove_at(struct lfs_fs *fs, struct lfs_inode *ip, struct lfs_xattrs *xa, const struct xpos *p, bool keep_leaf)
{
	uint32_t len = ent_len(fs, &p->e);
	if (p->e.flags & LFS_XENT_OUT)
		for (uint32_t k = 0; k < value_blocks(fs, p->e.value_len); k++)
			free_slot(fs, ip, xa, lfs_xent_slot(&p->e, k));
	xa->list_bytes -= p->e.name_len + 1u;
	struct xcont *c = p->c;
	memmove(c->b + p->off, c->b + p->off + len, c->used - p->off - len);
	c->used -= len;
	c->count--;
	if (p->slot >= 0) {
		xa->dirty[p->slot] = 1;
		if (!c->count && !keep_leaf)
			free_slot(fs, ip, xa, (uint32_t)p->slot);
	}
}

/* Indexed to single, when what is left fits the root: every leaf's
 * entries into the root, the leaves freed. */
static void
maybe_single(struct lfs_fs *fs, struct lfs_inode *ip, struct lfs_xattrs *xa)
{
	if (!xa->nslots)
		return;
	uint32_t bytes = 0;
	for (uint32_t s = 0; s < xa->nslots; s++) {
		if (xa->kind[s] == LFS_XSLOT_VALUE)
			return;
		bytes += xa->leaf[s].used;
	}
	if (bytes > root_cap(fs))
		return;
	struct xcont *r = &xa->root;
	r->used = r->count = 0;
	for (uint32_t s = 0; s < xa->nslots; s++) {
		if (xa->kind[s] != LFS_XSLOT_LEAF)
			continue;
		memcpy(r->b + r->used, xa->leaf[s].b, xa->leaf[s].used);
		r->used += xa->leaf[s].used;
		r->count += xa->leaf[s].count;
		free_slot(fs, ip, xa, s);
	}
	free_arrays(xa);
}

/* Single to indexed: the root's entries into leaf 0. */
static int
to_indexed(struct lfs_fs *fs, struct lfs_xattrs *xa)
{
	int err = alloc_arrays(fs, xa);
	if (err)
		return err;
	if (!xa->root.count)
		return 0;
	if (!(xa->leaf[0].b = lfs_malloc(fs->bsize))) {
		free_arrays(xa);
		return -ENOMEM;
	}
	memcpy(xa->leaf[0].b, xa->root.b, xa->root.used);
	xa->leaf[0].used = xa->root.used;
	xa->leaf[0].count = xa->root.count;
	xa->kind[0] = LFS_XSLOT_LEAF;
	xa->dirty[0] = 1;
	xa->nused = 1;
	xa->root.used = xa->root.count = 0;
	return 0;
}

/* A leaf with `need` bytes free, other than the entry being replaced
 * (whose bytes, `freed`, count in its own leaf `own`): its slot, or -1. */
static int32_t
leaf_with_room(const struct lfs_fs *fs, const struct lfs_xattrs *xa, uint32_t need, int32_t own, uint32_t freed)
{
	if (own >= 0 && xa->leaf[own].used - freed + need <= leaf_cap(fs))
		return own;
	for (uint32_t s = 0; s < xa->nslots; s++)
		if (xa->kind[s] == LFS_XSLOT_LEAF && (int32_t)s != own && xa->leaf[s].used + need <= leaf_cap(fs))
			return (int32_t)s;
	return -1;
}

static int32_t
free_slot_index(const struct lfs_xattrs *xa, uint32_t from)
{
	for (uint32_t s = from; s < xa->nslots; s++)
		if (!xa->kind[s])
			return (int32_t)s;
	return -1;
}

/* Set in the indexed shape; `old` is the entry replaced, if any. */
static int
set_indexed(struct lfs_fs *fs, struct lfs_inode *ip, struct lfs_xattrs *xa, const char *name, const void *value,
	    uint32_t size, const struct xpos *old)
{
	uint32_t nl = (uint32_t)strlen(name);
	bool out = LFS_XATTR_ENT_HDR + nl + size > leaf_cap(fs);
	uint32_t nvb = out ? value_blocks(fs, size) : 0, len = lfs_xent_len(nl, size, out, fs->bsize);
	uint32_t freed = old ? ent_len(fs, &old->e) : 0;
	uint32_t old_vb = old && (old->e.flags & LFS_XENT_OUT) ? value_blocks(fs, old->e.value_len) : 0;
	/* a replaced entry's leaf stays if it keeps an entry, or takes the new one */
	int32_t target = leaf_with_room(fs, xa, len, old ? old->slot : -1, freed);
	bool own_empties = old && old->c->count == 1 && target != old->slot;
	uint32_t free_slots = xa->nslots - xa->nused + old_vb + own_empties;
	if (nvb + (target < 0) > free_slots)
		return -ENOSPC;
	uint8_t *blocks[LFS_XATTR_SIZE_MAX / LFS_MIN_BLOCK_SIZE] = { 0 };
	uint8_t *leafbuf = NULL;
	int err = 0;
	for (uint32_t k = 0; k < nvb && !err; k++)
		if (!(blocks[k] = lfs_calloc(1, fs->bsize)))
			err = -ENOMEM;
	if (!err && target < 0 && !(leafbuf = lfs_malloc(fs->bsize)))
		err = -ENOMEM;
	if (err) {
		for (uint32_t k = 0; k < nvb; k++)
			free(blocks[k]);
		free(leafbuf);
		return err;
	}
	/* from here nothing fails */
	if (old)
		remove_at(fs, ip, xa, old, old->slot == target);
	if (target < 0) {
		target = free_slot_index(xa, 0);
		xa->leaf[target] = (struct xcont){ .b = leafbuf };
		xa->kind[target] = LFS_XSLOT_LEAF;
		xa->nused++;
	}
	uint16_t slots[LFS_XATTR_SIZE_MAX / LFS_MIN_BLOCK_SIZE];
	uint8_t payload[2 * (LFS_XATTR_SIZE_MAX / LFS_MIN_BLOCK_SIZE)];
	for (uint32_t k = 0, from = 0; k < nvb; k++) {
		int32_t s = free_slot_index(xa, from);
		slots[k] = (uint16_t)s;
		from = (uint32_t)s + 1;
		uint32_t n = size - k * fs->bsize < fs->bsize ? size - k * fs->bsize : fs->bsize;
		memcpy(blocks[k], (const uint8_t *)value + (size_t)k * fs->bsize, n);
		xa->val[s] = blocks[k];
		xa->kind[s] = LFS_XSLOT_VALUE;
		xa->dirty[s] = 1;
		xa->nused++;
		lfs_xent_put_slot(payload, k, slots[k]);
	}
	struct xcont *c = &xa->leaf[target];
	c->used += lfs_xent_encode(c->b + c->used, name, (uint16_t)nl, out ? LFS_XENT_OUT : 0, size,
				   out ? payload : value, out ? 2 * nvb : size);
	c->count++;
	xa->dirty[target] = 1;
	xa->list_bytes += nl + 1;
	return 0;
}

int
lfs_xattr_set(struct lfs_fs *fs, struct lfs_inode *ip, const char *name, const void *value, size_t size,
	      int flags)
{
	int err = check_name(name);
	if (err)
		return err;
	/* the VFS limit; without the feature, the one block it always had */
	if (size > LFS_XATTR_SIZE_MAX || (!indexed_ok(fs) && size > fs->bsize))
		return -E2BIG;
	if ((err = load(fs, ip)))
		return err;
	struct lfs_xattrs *xa = ip->xattr;
	struct xpos p;
	bool exists = find(fs, xa, name, &p);
	if ((flags & XATTR_CREATE) && exists)
		return -EEXIST;
	if ((flags & XATTR_REPLACE) && !exists)
		return -ENODATA;
	uint32_t nl = (uint32_t)strlen(name);
	/* listxattr must be able to name them all */
	if (!exists && xa->list_bytes + nl + 1 > LFS_XATTR_LIST_MAX)
		return -ENOSPC;
	uint32_t nvb = value_blocks(fs, (uint32_t)size);
	if ((err = fs->up->admit(fs, LFS_SPACE_WRITE, (uint64_t)(nvb + 2) * fs->bsize)))
		return err;
	/* admission may have flushed: the position is found again */
	exists = find(fs, xa, name, &p);
	uint64_t inl = (uint64_t)LFS_XATTR_ENT_HDR + nl + size;
	if (!xa->nslots && xa->root.used - (exists ? ent_len(fs, &p.e) : 0) + inl <= root_cap(fs)) {
		struct xcont *r = &xa->root;
		if (exists)
			remove_at(fs, ip, xa, &p, false);
		r->used += lfs_xent_encode(r->b + r->used, name, (uint16_t)nl, 0, (uint32_t)size, value,
					   (uint32_t)size);
		r->count++;
		xa->list_bytes += nl + 1;
	} else if (!indexed_ok(fs)) {
		return -ENOSPC;
	} else {
		bool was_single = !xa->nslots;
		if (was_single && (err = to_indexed(fs, xa)))
			return err;
		/* the root's entries moved: find the old one again */
		if (was_single && exists)
			find(fs, xa, name, &p);
		err = set_indexed(fs, ip, xa, name, value, (uint32_t)size, exists ? &p : NULL);
		if (err) {
			if (was_single) /* back as it was: nothing was written */
				maybe_single(fs, ip, xa);
			return err;
		}
	}
	mark_changed(fs, ip, nvb);
	return 0;
}

int
lfs_xattr_remove(struct lfs_fs *fs, struct lfs_inode *ip, const char *name)
{
	int err = check_name(name);
	if (err)
		return err == -ERANGE ? -ENODATA : err;
	if ((err = load(fs, ip)))
		return err;
	struct xpos p;
	if (!find(fs, ip->xattr, name, &p))
		return -ENODATA;
	if ((err = fs->up->admit(fs, LFS_SPACE_DELETE, 0)))
		return err;
	find(fs, ip->xattr, name, &p);
	remove_at(fs, ip, ip->xattr, &p, false);
	maybe_single(fs, ip, ip->xattr);
	mark_changed(fs, ip, 0);
	return 0;
}

/* ---------------------------------------------------------------- */
/* The log: flush, cleaning, freeing.                                */

static int
append(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, const uint8_t *blk, uint64_t *addr)
{
	int err = lfs_seg_append(fs, LFS_BK_XATTR, ip->ino, ip->di.version, lblk, blk, addr);
	if (!err)
		lfs_retain_use(fs, *addr, fs->bsize, LFS_BK_XATTR);
	return err;
}

int
lfs_xattr_flush(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (!ip->xattr_dirty)
		return 0;
	struct lfs_xattrs *xa = ip->xattr;
	uint8_t *blk = lfs_malloc(fs->bsize);
	if (!blk)
		return -ENOMEM;
	int err = 0;
	for (uint32_t s = 0; s < xa->nslots && !err; s++) {
		if (!xa->dirty[s])
			continue;
		const uint8_t *data = xa->val[s];
		if (xa->kind[s] == LFS_XSLOT_LEAF) {
			memset(blk, 0, fs->bsize);
			lfs_xleaf_set_count(blk, xa->leaf[s].count);
			memcpy(blk + LFS_XATTR_HDR, xa->leaf[s].b, xa->leaf[s].used);
			data = blk;
		}
		uint64_t addr;
		if ((err = append(fs, ip, s + 1, data, &addr)))
			break;
		if (xa->addr[s])
			lfs_repl_drop(fs, ip, xa->addr[s], LFS_BK_XATTR);
		xa->addr[s] = addr;
		xa->dirty[s] = 0;
		free(xa->val[s]); /* read again from disk when asked for */
		xa->val[s] = NULL;
	}
	uint64_t addr = 0;
	if (!err && (xa->nslots || xa->root.count)) {
		memset(blk, 0, fs->bsize);
		uint32_t ents = LFS_XATTR_HDR;
		if (indexed_ok(fs)) {
			lfs_xroot_encode_hdr(blk, xa->nslots, xa->root.count);
			for (uint32_t s = 0; s < xa->nslots; s++)
				if (xa->kind[s])
					lfs_xroot_set_slot(blk, s, lfs_xslot_make(xa->addr[s], xa->kind[s]));
			ents = LFS_XATTR_ROOT_HDR + 8 * xa->nslots;
		} else {
			lfs_xleaf_set_count(blk, xa->root.count);
		}
		memcpy(blk + ents, xa->root.b, xa->root.used);
		err = append(fs, ip, 0, blk, &addr);
	}
	free(blk);
	if (err)
		return err;
	if (ip->di.xattr)
		lfs_repl_drop(fs, ip, ip->di.xattr, LFS_BK_XATTR);
	ip->di.xattr = addr;
	ip->di.xattr_blocks = nblocks(xa);
	ip->xattr_dirty = false;
	return 0;
}

bool
lfs_xattr_block_live(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, uint64_t addr)
{
	if (lblk == 0)
		return ip->di.xattr == addr;
	if (!ip->di.xattr || load(fs, ip))
		return false;
	struct lfs_xattrs *xa = ip->xattr;
	return lblk <= xa->nslots && xa->kind[lblk - 1] && xa->addr[lblk - 1] == addr;
}

int
lfs_xattr_move_block(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, const uint8_t *blk)
{
	int err = load(fs, ip);
	if (err)
		return err;
	struct lfs_xattrs *xa = ip->xattr;
	if (lblk > 0) {
		uint32_t s = (uint32_t)(lblk - 1);
		if (s >= xa->nslots || !xa->kind[s])
			return 0;
		if (xa->kind[s] == LFS_XSLOT_VALUE && !xa->val[s]) {
			/* the block just read is the value's current part */
			if (!(xa->val[s] = lfs_malloc(fs->bsize)))
				return -ENOMEM;
			memcpy(xa->val[s], blk, fs->bsize);
		}
		xa->dirty[s] = 1;
	}
	ip->xattr_dirty = true;
	ip->xattr_nblocks = nblocks(xa);
	lfs_inode_dirty(fs, ip);
	return 0;
}

int
lfs_xattr_release(struct lfs_fs *fs, struct lfs_inode *ip)
{
	if (!ip->di.xattr && !ip->xattr)
		return 0;
	int err = load(fs, ip);
	if (err)
		return err;
	struct lfs_xattrs *xa = ip->xattr;
	for (uint32_t s = 0; s < xa->nslots; s++)
		if (xa->kind[s])
			free_slot(fs, ip, xa, s);
	if (ip->di.xattr)
		lfs_repl_drop(fs, ip, ip->di.xattr, LFS_BK_XATTR);
	ip->di.xattr = 0;
	ip->di.xattr_blocks = 0;
	lfs_xattr_drop(ip);
	return 0;
}
