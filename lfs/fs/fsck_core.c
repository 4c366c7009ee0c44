/*
 * fsck_core.c — layer 6: the checks of fsck.lfs (a read-only verifier, for
 * tests and for users' trust; never part of mounting), callable in-process
 * by the crash-state harness.
 *
 * It opens the image as the daemon would (newest valid checkpoint, then
 * roll-forward, all in memory: nothing is written) and checks that
 *   - every summary in the log verifies, and every live block is named by
 *     a verifying summary entry with the right owner and checksum;
 *   - every inode record in use satisfies lfs_dinode_check (format.c),
 *     the invariants every mount applies: one list, not a copy of it;
 *   - every inode in use is reachable from the root, directory entries
 *     point at inodes in use of the type they claim, link counts match
 *     the names (and subdirectories) that refer to them;
 *   - every block is owned once, and an inode's block count (di.blocks:
 *     its data blocks and block-map nodes, not its xattr block) is the
 *     number of blocks its block map names;
 *   - the live bytes in the usage table equal what the inodes reference,
 *     and the blocks held for kept checkpoints (each described where it
 *     is now);
 *   - the tree of every kept checkpoint (snapshots among them) passes the
 *     same checks of names, links, records and block maps, every block
 *     it names found through the held table where a verifying summary
 *     describes it; kept checkpoints that read one tree (no held entry
 *     or inode-map block begins or ends between them) are checked once,
 *     and an inode found sound in one kept tree is not walked again in
 *     another that reads the same record and blocks.
 * Each problem is one line on stdout; one about an inode names its path
 * too, where the walk of the tree found one ("inode 12 (/a/b)").
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

struct fsck {
	struct lfs_fs *fs;
	struct u64map owner;        /* block address -> owner tag */
	struct u64map summary;      /* block address -> (kind | ino << 8) from summaries */
	uint32_t *refs;             /* names referring to each inode */
	uint32_t *subdirs;
	uint8_t *seen;
	uint64_t *live;             /* recomputed live bytes per segment */
	uint32_t *parent;           /* the directory the walk first found each inode in */
	char **name;                /* and its name there (NULL: not found yet) */
	uint32_t *named;            /* the inodes given a name, for fsck_free */
	size_t nnamed, named_cap;
	uint64_t problems;
	uint64_t unwritten;         /* the inodes' unwritten blocks, summed */
	uint64_t drag;              /* their records' and nodes' bytes, summed */
	uint64_t unread;            /* inodes that could not be read */
	/* a kept checkpoint's tree: the live pass (its summaries, its held
	 * table) and the problems' prefix */
	struct fsck *kept_of;
	char pfx[80];
	/* the checkpoints around this one that read every block the
	 * inode being checked names where this one does */
	uint64_t span_lo, span_hi;
	/* the live pass's: the inodes a kept tree found sound (struct
	 * sound), by record (address << 16 | slot) */
	struct u64map sound;
	/* lfs_fsck_memo: what earlier runs found in the segments, and the
	 * one whose scan is being remembered (NULL: none) */
	struct lfs_fsck_memo *memo;
	struct memo_seg *scanning;
};

/* A segment a run of lfs_fsck_memo scanned, and the caller has not
 * said changed since: the (address, owner tag) of every block its
 * verifying summaries name. */
struct memo_seg {
	bool known;
	uint64_t *found;            /* pairs */
	size_t n, cap;
};

struct lfs_fsck_memo {
	/* the walk the segments were scanned with: another one reads the
	 * same bytes otherwise, so forgets them */
	uint64_t seg0;
	uint32_t bsize, seg_blocks, seed;
	uint64_t nsegs;
	struct memo_seg *segs;
};

/* An inode a kept tree checked without a problem of its own: any tree
 * of a checkpoint in [lo, hi) whose inode map names the same record
 * reads the same record and blocks, so checks them the same way. */
struct sound {
	uint64_t daddr, lo, hi;
	uint32_t ino, mode, nlink, parent, flags;
	uint16_t slot;
};

/* " (/a/b)" for an inode the walk has reached, else "": where the
 * problem is, for the user who knows the file by its name. */
static const char *
path_of(struct fsck *f, uint32_t ino, char *buf, size_t len)
{
	if (ino == LFS_ROOT_INO) {
		snprintf(buf, len, " (/)");
		return buf;
	}
	if (ino >= f->fs->sb.max_inodes || !f->name || !f->name[ino])
		return "";
	/* the names from the inode up to the root, then written root first */
	const char *parts[256];
	int n = 0;
	for (uint32_t i = ino; i != LFS_ROOT_INO && n < 256; i = f->parent[i]) {
		if (!f->name[i])
			return "";
		parts[n++] = f->name[i];
	}
	size_t off = (size_t)snprintf(buf, len, " (");
	for (int k = n - 1; k >= 0 && off < len; k--)
		off += (size_t)snprintf(buf + off, len - off, "/%s", parts[k]);
	if (off < len)
		snprintf(buf + off, len - off, ")");
	return buf;
}
#define PATH_BUF 1024

static void
problem(struct fsck *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("fsck.lfs: %s", f->pfx);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	f->problems++;
}

static int
scan_summaries(struct lfs_fs *fs, const struct lfs_pseg_entry *e, uint64_t addr, const uint8_t *blk, void *ctx)
{
	struct fsck *f = ctx;
	(void)fs;
	(void)blk; /* lfs_clean_scan hands over only blocks whose crc verifies */
	uint64_t tag = ((uint64_t)e->ino << 8) | e->kind;
	struct memo_seg *m = f->scanning;
	if (m && m->n + 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		uint64_t *p = realloc(m->found, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		m->found = p;
		m->cap = cap;
	}
	if (m) {
		m->found[m->n++] = addr;
		m->found[m->n++] = tag;
	}
	return u64map_put(&f->summary, addr, (void *)(uintptr_t)tag);
}

struct owner_ctx {
	struct fsck *f;
	uint32_t ino;
	uint64_t blocks;            /* data blocks and block-map nodes named */
	uint64_t nodes;             /* block-map nodes named */
	uint32_t xattr_blocks;      /* XATTR blocks the walk found */
};

/* The inode whose record ino reads: a received snapshot's root is read as /. */
static uint32_t
record_ino(const struct lfs_fs *fs, uint32_t ino)
{
	return fs->view_root && ino == LFS_ROOT_INO ? fs->view_root : ino;
}

static int
claim(struct fsck *f, uint64_t addr, uint8_t kind, uint32_t ino, uint32_t bytes)
{
	struct lfs_fs *fs = f->fs;
	char where[PATH_BUF];
	/* a kept checkpoint may name a block past a shrunk log's end, if
	 * the held table says where it went (resize.c) */
	const struct lfs_held_entry *he = f->kept_of ?
		lfs_held_entry_span(&f->kept_of->fs->held, addr, fs->view_seq, &f->span_lo, &f->span_hi) : NULL;
	if (!lfs_addr_valid(fs, addr) && !(he && lfs_addr_kept(fs, addr))) {
		problem(f, "inode %u%s: block address %llu is outside the log", ino, path_of(f, ino, where, sizeof(where)),
			(unsigned long long)addr);
		return 0;
	}
	if (f->kept_of) {
		/* a kept checkpoint's block: where the held table says it is
		 * now, a copy (HELD) or the block itself */
		uint64_t at = he ? he->cur : addr;
		uint64_t st = (uint64_t)(uintptr_t)u64map_get(&f->kept_of->summary, at);
		if (!st)
			problem(f, "inode %u%s: block %llu (kind %u), now at %llu, is not described by any verifying "
				"summary", ino, path_of(f, ino, where, sizeof(where)), (unsigned long long)addr, kind,
				(unsigned long long)at);
		else if (!(he && (st & 0xff) == LFS_BK_HELD) &&
			 ((st & 0xff) != kind || (kind != LFS_BK_INODE && (st >> 8) != record_ino(fs, ino))))
			problem(f, "block %llu (now at %llu): summary says inode %llu kind %u, but inode %u%s "
				"references it as kind %u", (unsigned long long)addr, (unsigned long long)at,
				(unsigned long long)(st >> 8), (unsigned)(st & 0xff), ino,
				path_of(f, ino, where, sizeof(where)), kind);
		return 0;
	}
	uint64_t tag = ((uint64_t)ino << 8) | kind;
	void *prev = u64map_get(&f->owner, addr);
	if (prev && kind != LFS_BK_INODE) {
		uint64_t p = (uint64_t)(uintptr_t)prev & ~(1ull << 63);
		problem(f, "block %llu is owned twice: inode %llu (kind %u) and inode %u (kind %u)",
			(unsigned long long)addr, (unsigned long long)(p >> 8), (unsigned)(p & 0xff), ino, kind);
	}
	u64map_put(&f->owner, addr, (void *)(uintptr_t)(tag | (1ull << 63)));
	void *s = u64map_get(&f->summary, addr);
	uint64_t st = (uint64_t)(uintptr_t)s;
	if (!s)
		problem(f, "inode %u%s: block %llu (kind %u) is not described by any verifying summary", ino,
			path_of(f, ino, where, sizeof(where)), (unsigned long long)addr, kind);
	else if ((st & 0xff) != kind || (kind != LFS_BK_INODE && kind != LFS_BK_IMAP && kind != LFS_BK_SUT &&
					   (st >> 8) != ino))
		problem(f, "block %llu: summary says inode %llu kind %u, but inode %u%s references it as kind %u",
			(unsigned long long)addr, (unsigned long long)(st >> 8), (unsigned)(st & 0xff), ino,
			path_of(f, ino, where, sizeof(where)), kind);
	f->live[lfs_addr_seg(fs, addr)] += bytes;
	return 0;
}

static int
claim_block(void *ctx, uint64_t addr, uint8_t kind, uint64_t lblk)
{
	struct owner_ctx *o = ctx;
	(void)lblk;
	o->xattr_blocks += kind == LFS_BK_XATTR;
	o->blocks += kind != LFS_BK_XATTR; /* di.blocks counts no xattr block (bmap.c) */
	o->nodes += kind == LFS_BK_INDIR;
	return claim(o->f, addr, kind, o->ino, o->f->fs->bsize);
}

/* The relinks that stand for what ip's relink records left in memory
 * (flush.c): the pointers to leaves in its dirty nodes, the leaves
 * written last.  For a check of the disk on a mounted filesystem;
 * lfs_relink_drop after. */
static int
relinks_from_memory(struct lfs_fs *fs, struct lfs_inode *ip)
{
	int err = 0;
	for (size_t b = 0; b < ip->nodes.nbuckets && !err; b++)
		for (const struct u64map_ent *e = ip->nodes.tab[b]; e && !err; e = e->next) {
			const struct lfs_node *nd = e->val;
			unsigned k = lfs_node_tree(e->key);
			if (!nd->dirty || lfs_node_level(e->key) + 1 != k)
				continue;
			for (uint32_t s = 0; s < fs->nptr && !err; s++)
				if (nd->ptrs[s])
					err = lfs_relink_put(fs, &ip->di,
							     lfs_node_id(k, k, lfs_node_idx(e->key) * fs->nptr + s),
							     nd->ptrs[s]);
		}
	return err;
}

/* What an earlier kept tree found of inode ino where this tree reads
 * the same (NULL: nothing, check it). */
static const struct sound *
sound_of(const struct fsck *f, uint32_t ino)
{
	/* (a map that relinks patch is not its record's alone) */
	if (!f->kept_of || f->fs->view_root || f->fs->relink.count)
		return NULL;
	const struct lfs_imap_entry *e = lfs_imap_get(f->fs, ino);
	const struct sound *m = u64map_get(&f->kept_of->sound, e->daddr << 16 | e->slot);
	uint64_t c = f->fs->view_seq;
	return m && m->ino == ino && m->daddr == e->daddr && m->slot == e->slot && m->lo <= c && c < m->hi ? m :
		NULL;
}

/* Inode ip, checked in this kept tree with no problem of its own, for
 * the trees after it (a failure to remember costs only time). */
static void
remember_sound(struct fsck *f, const struct lfs_inode *ip, const struct lfs_imap_entry *e)
{
	struct sound *m = malloc(sizeof(*m));
	if (!m)
		return;
	*m = (struct sound){ .daddr = e->daddr, .lo = f->span_lo, .hi = f->span_hi, .ino = ip->ino,
			     .mode = ip->di.mode, .nlink = ip->di.nlink, .parent = ip->di.parent,
			     .flags = ip->di.flags, .slot = e->slot };
	uint64_t key = e->daddr << 16 | e->slot;
	free(u64map_get(&f->kept_of->sound, key));
	if (u64map_put(&f->kept_of->sound, key, m))
		free(m);
}

static void
free_sound(uint64_t key, void *val, void *ctx)
{
	(void)key, (void)ctx;
	free(val);
}

struct dir_ctx {
	struct fsck *f;
	struct lfs_inode *dp;
	uint32_t *queue;
	size_t *qn;
};

/* Inode ino's first name the walk found (in directory parent), for
 * path_of; listed, so that fsck_free frees those made and does not
 * read a pointer for every inode the filesystem may have.  No room: no
 * path, no harm. */
static void
name_inode(struct fsck *f, uint32_t ino, uint32_t parent, const char *name, size_t len)
{
	f->parent[ino] = parent;
	if (f->nnamed == f->named_cap) {
		size_t cap = f->named_cap ? f->named_cap * 2 : 64;
		uint32_t *p = realloc(f->named, cap * sizeof(*p));
		if (!p)
			return;
		f->named = p;
		f->named_cap = cap;
	}
	if ((f->name[ino] = strndup(name, len)))
		f->named[f->nnamed++] = ino;
}

static int
check_entry(void *ctx, const struct lfs_dirent *d, uint64_t pos)
{
	struct dir_ctx *c = ctx;
	struct fsck *f = c->f;
	struct lfs_fs *fs = f->fs;
	char where[PATH_BUF];
	(void)pos;
	if (!lfs_imap_valid_ino(fs, d->ino)) {
		problem(f, "directory %u%s: entry '%.*s' points at inode %u, which is not in use", c->dp->ino,
			path_of(f, c->dp->ino, where, sizeof(where)), d->name_len, d->name, d->ino);
		return 0;
	}
	const struct sound *m = sound_of(f, d->ino);
	struct lfs_inode *ip;
	int err = m ? 0 : lfs_iget(fs, d->ino, &ip);
	if (err) {
		problem(f, "directory %u%s: entry '%.*s': inode %u cannot be read (%s)", c->dp->ino,
			path_of(f, c->dp->ino, where, sizeof(where)), d->name_len, d->name, d->ino, strerror(-err));
		/* named, so that what is said of it later says where it is */
		if (!f->name[d->ino])
			name_inode(f, d->ino, c->dp->ino, d->name, d->name_len);
		return 0;
	}
	uint32_t mode = m ? m->mode : ip->di.mode, parent = m ? m->parent : ip->di.parent;
	if (lfs_mode_to_dt(mode) != d->type)
		problem(f, "directory %u%s: entry '%.*s' has type %u, inode %u is type %u", c->dp->ino,
			path_of(f, c->dp->ino, where, sizeof(where)), d->name_len, d->name, d->type, d->ino, lfs_mode_to_dt(mode));
	f->refs[d->ino]++;
	if (S_ISDIR(mode)) {
		f->subdirs[c->dp->ino]++;
		if (parent != c->dp->ino)
			problem(f, "directory %u ('%.*s') says its parent is %u, but it is in %u", d->ino, d->name_len,
				d->name, parent, c->dp->ino);
		if (f->seen[d->ino])
			problem(f, "directory %u has more than one name", d->ino);
	}
	if (!f->seen[d->ino]) {
		f->seen[d->ino] = 1;
		name_inode(f, d->ino, c->dp->ino, d->name, d->name_len);
		c->queue[(*c->qn)++] = d->ino;
	}
	return 0;
}

static int fsck_run(struct fsck *f);

/* The running counts seg.c keeps (a mounted filesystem's, when called
 * from the library) agree with the segments. */
static void
check_counts(struct fsck *f, const struct lfs_fs *fs)
{
	uint64_t clean = 0, live = 0, freeable = 0;
	for (uint64_t s = 0; s < fs->sb.nsegs; s++) {
		const struct lfs_seginfo *si = &fs->segs[s];
		clean += si->state == LFS_SEG_CLEAN;
		live += lfs_seg_live(fs, s);
		freeable += si->state == LFS_SEG_DIRTY && !si->live_bytes && !si->meta_blocks;
		if (si->state == LFS_SEG_DIRTY && !si->live_bytes && !si->meta_blocks && !si->listed)
			problem(f, "segment %llu is freeable but not listed", (unsigned long long)s);
	}
	if (clean != fs->nclean || live != fs->live_total || freeable != fs->nfreeable)
		problem(f, "running counts: %llu clean, %llu live bytes, %llu freeable segments; the segments "
			"say %llu, %llu, %llu", (unsigned long long)fs->nclean, (unsigned long long)fs->live_total,
			(unsigned long long)fs->nfreeable, (unsigned long long)clean, (unsigned long long)live,
			(unsigned long long)freeable);
}

static void
fsck_free(struct fsck *f)
{
	u64map_free(&f->owner);
	u64map_free(&f->summary);
	free(f->refs);
	free(f->subdirs);
	free(f->seen);
	free(f->live);
	for (size_t i = 0; i < f->nnamed; i++)
		free(f->name[f->named[i]]);
	free(f->named);
	free(f->name);
	free(f->parent);
}

/* The blocks held for kept checkpoints: each described where it is now
 * (as the block it was, or the cleaner's HELD copy), its bytes counted
 * once per unit in that segment unless the live tree counts them; and
 * the nodes of both tables written where a TABLE summary says. */
static void
check_held(struct fsck *f)
{
	struct lfs_fs *fs = f->fs;
	struct u64map units;
	u64map_init(&units);
	for (uint64_t i = 0; i < fs->held.tab.nslots; i++) {
		const struct lfs_held_entry *e = &fs->held.ent[i];
		if (!e->orig)
			continue;
		uint64_t st = (uint64_t)(uintptr_t)u64map_get(&f->summary, e->cur);
		unsigned k = st & 0xff;
		if (!st || !(k == e->kind || k == LFS_BK_HELD || ((e->flags & LFS_HELD_LIVE) && k == LFS_BK_DATA))) {
			char why[48] = "no verifying summary describes it";
			if (st)
				snprintf(why, sizeof(why), "its summary names kind %u", k);
			problem(f, "held block %llu (kind %u, checkpoints %llu to %llu), now at %llu: %s",
				(unsigned long long)e->orig, e->kind, (unsigned long long)e->from,
				(unsigned long long)e->until - 1, (unsigned long long)e->cur, why);
		}
		uint64_t key = e->cur << 16 | e->slot;
		if (u64map_get(&units, key))
			continue;
		u64map_put(&units, key, (void *)1);
		if (!(e->flags & LFS_HELD_LIVE) && e->kind != LFS_BK_IMAP && lfs_addr_valid(fs, e->cur))
			f->live[lfs_addr_seg(fs, e->cur)] += e->charge;
	}
	u64map_free(&units);
	const struct lfs_ptable *tabs[] = { &fs->held.tab, &fs->hist.tab };
	for (unsigned t = 0; t < 2; t++) {
		const struct lfs_ptable *pt = tabs[t];
		for (uint64_t p = 0; p <= pt->npages + pt->nidx; p++) {
			uint64_t a = p < pt->npages ? pt->page_addr[p] : p < pt->npages + pt->nidx ?
					pt->idx_addr[p - pt->npages] : pt->root_addr;
			uint64_t st = a ? (uint64_t)(uintptr_t)u64map_get(&f->summary, a) : 0;
			if (a && ((st & 0xff) != LFS_BK_TABLE || (st >> 8) != pt->id))
				problem(f, "table %u: node at %llu is not described as one of its blocks", pt->id,
					(unsigned long long)a);
		}
	}
}

/* The checkpoints from which what a view reads can change, ascending:
 * each held entry's first and past-the-last, each live inode-map
 * block's birth (lfs_ckpt_view_imap, lfs_held_translate).  Checkpoints
 * with none of them between read the same tree. */
static int
tree_changes(struct lfs_fs *fs, uint64_t **out, size_t *n)
{
	size_t k = 0;
	uint64_t *b = malloc((2 * fs->held.count + fs->n_imap_blocks + 1) * sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (uint64_t i = 0; i < fs->held.tab.nslots && k < 2 * fs->held.count; i++)
		if (fs->held.ent[i].orig) {
			b[k++] = fs->held.ent[i].from;
			b[k++] = fs->held.ent[i].until;
		}
	int err = 0;
	for (uint32_t i = 0; i < fs->n_imap_blocks && !err; i++)
		if (fs->imap_addr[i])
			err = lfs_seg_birth(fs, fs->imap_addr[i], &b[k++]);
	if (err) {
		free(b);
		return err;
	}
	qsort(b, k, sizeof(*b), u64_cmp);
	*out = b;
	*n = k;
	return 0;
}

/* The kept checkpoints seqs[0 .. n) (ascending) cut where their tree
 * may change: start[0 .. *ngroups) the first of each group. */
static size_t
tree_groups(const uint64_t *seqs, size_t n, const uint64_t *changes, size_t nchanges, size_t *start)
{
	size_t g = 0, j = 0;
	for (size_t i = 0; i < n; i++) {
		while (i && j < nchanges && changes[j] <= seqs[i - 1])
			j++;
		if (!i || (j < nchanges && changes[j] <= seqs[i]))
			start[g++] = i;
	}
	return g;
}

/* The tree of every kept checkpoint, through a view of one of each group
 * that reads the same tree. */
static int
check_kept(struct fsck *live)
{
	struct lfs_fs *fs = live->fs;
	size_t n = fs->hist.count, nchanges, ngroups;
	uint64_t *seqs = malloc((n ? n : 1) * sizeof(*seqs)), *changes = NULL;
	size_t *start = malloc((n + 1) * sizeof(*start));
	int err = seqs && start ? tree_changes(fs, &changes, &nchanges) : -ENOMEM;
	u64map_init(&live->sound);
	if (!err) {
		n = lfs_hist_retained(&fs->hist, seqs);
		ngroups = tree_groups(seqs, n, changes, nchanges, start);
		start[ngroups] = n;
	}
	for (size_t g = 0; !err && g < ngroups; g++) {
		size_t i = start[g], last = start[g + 1] - 1;
		char spec[24];
		snprintf(spec, sizeof(spec), "%llu", (unsigned long long)seqs[i]);
		struct lfs_fs *v;
		struct fsck fx = { .kept_of = live };
		if (last == i)
			snprintf(fx.pfx, sizeof(fx.pfx), "checkpoint %llu: ", (unsigned long long)seqs[i]);
		else
			snprintf(fx.pfx, sizeof(fx.pfx), "checkpoints %llu to %llu (%zu, one tree): ",
				 (unsigned long long)seqs[i], (unsigned long long)seqs[last], last - i + 1);
		err = lfs_view_open(fs, spec, false, &v);
		if (err == -ENOMEM)
			break;
		if (err) {
			fx.fs = fs;
			problem(&fx, "its tree cannot be read (%s)", strerror(-err));
			live->problems += fx.problems;
			err = 0;
			continue;
		}
		fx.fs = v;
		err = fsck_run(&fx);
		live->problems += fx.problems;
		fsck_free(&fx);
		lfs_abandon(v);
	}
	u64map_each(&live->sound, free_sound, NULL);
	u64map_free(&live->sound);
	free(changes);
	free(start);
	free(seqs);
	return err;
}

int
lfs_fsck_super_copies(struct lfs_fs *fs, uint64_t copies[2], int *ncopies, uint64_t bad[2], int errs[2])
{
	copies[0] = 0;
	copies[1] = fs->sb.backup_sb;
	*ncopies = fs->sb.feature_compat & LFS_FEATURE_BACKUP_SB ? 2 : 1;
	int nbad = 0;
	for (int i = 0; i < *ncopies; i++) {
		int err = lfs_super_check_copy(&fs->dev, &fs->sb, copies[i]);
		if (err) {
			bad[nbad] = copies[i];
			errs[nbad++] = err;
		}
	}
	return nbad;
}

int
lfs_fsck_memo_new(struct lfs_fsck_memo **m)
{
	*m = calloc(1, sizeof(**m));
	return *m ? 0 : -ENOMEM;
}

void
lfs_fsck_memo_forget(struct lfs_fsck_memo *m, uint64_t off, uint64_t len)
{
	uint64_t start = m->seg0 * m->bsize, seg_bytes = (uint64_t)m->seg_blocks * m->bsize;
	if (!len || !seg_bytes || off + len <= start)
		return;
	uint64_t first = off < start ? 0 : (off - start) / seg_bytes;
	for (uint64_t s = first; s <= (off + len - 1 - start) / seg_bytes && s < m->nsegs; s++)
		m->segs[s].known = false;
}

void
lfs_fsck_memo_free(struct lfs_fsck_memo *m)
{
	if (!m)
		return;
	for (uint64_t s = 0; s < m->nsegs; s++)
		free(m->segs[s].found);
	free(m->segs);
	free(m);
}

/* The memo made ready for fs's walk: 0 or -ENOMEM. */
static int
memo_fit(struct lfs_fsck_memo *m, const struct lfs_fs *fs)
{
	const struct lfs_super *sb = &fs->sb;
	if (m->seg0 != sb->seg0 || m->bsize != sb->block_size || m->seg_blocks != sb->seg_blocks ||
	    m->seed != fs->seed) {
		for (uint64_t s = 0; s < m->nsegs; s++)
			m->segs[s].known = false;
		m->seg0 = sb->seg0;
		m->bsize = sb->block_size;
		m->seg_blocks = sb->seg_blocks;
		m->seed = fs->seed;
	}
	if (sb->nsegs > m->nsegs) {
		struct memo_seg *p = realloc(m->segs, sb->nsegs * sizeof(*p));
		if (!p)
			return -ENOMEM;
		memset(p + m->nsegs, 0, (sb->nsegs - m->nsegs) * sizeof(*p));
		m->segs = p;
		m->nsegs = sb->nsegs;
	}
	return 0;
}

/* Step 1 for segment s: what its summaries name, from the memo while it
 * knows the segment, else scanned (and remembered). */
static void
memo_scan(struct fsck *f, uint64_t s)
{
	struct memo_seg *ms = &f->memo->segs[s];
	if (ms->known) {
		for (size_t i = 0; i < ms->n; i += 2)
			u64map_put(&f->summary, ms->found[i], (void *)(uintptr_t)ms->found[i + 1]);
		return;
	}
	ms->n = 0;
	f->scanning = ms;
	ms->known = lfs_clean_scan(f->fs, s, scan_summaries, f) == 0;
	f->scanning = NULL;
}

int
lfs_fsck(struct lfs_fs *fs, uint64_t *problems)
{
	return lfs_fsck_memo(fs, NULL, problems);
}

int
lfs_fsck_memo(struct lfs_fs *fs, struct lfs_fsck_memo *memo, uint64_t *problems)
{
	struct fsck fx = { .fs = fs }, *f = &fx;
	if (memo && memo_fit(memo, fs))
		memo = NULL; /* no room: a run without it */
	f->memo = memo;
	if (fs->degraded_from)
		problem(f, "checkpoint %llu cannot be used: checked the older checkpoint %llu and the log after it "
			"(what only the newer one held is lost)", (unsigned long long)fs->degraded_from,
			(unsigned long long)fs->ckpt_seq);
	int err = fsck_run(f);
	if (!err && fs->snapshots && fs->hist.count)
		err = check_kept(f);
	*problems = f->problems;
	fsck_free(f);
	return err;
}

/* The roots of the trees staged for a receive (LFS_DI_STAGED, fs/receive.c)
 * join the root in queue: no name leads to them, yet what they hold is
 * in use until the receive ends or the next mount frees them as orphans. */
static size_t
add_staged_roots(struct fsck *f, uint32_t *queue, size_t qn)
{
	struct lfs_fs *fs = f->fs;
	for (uint32_t ino = LFS_ROOT_INO + 1; ino < fs->sb.max_inodes && !fs->view_root; ino++) {
		if (!lfs_imap_valid_ino(fs, ino) || !(lfs_imap_get(fs, ino)->flags & LFS_IMAP_ORPHAN))
			continue;
		const struct sound *m = sound_of(f, ino);
		struct lfs_inode *ip;
		if (!m && lfs_iget(fs, ino, &ip))
			continue;
		if (!S_ISDIR(m ? m->mode : ip->di.mode) || !((m ? m->flags : ip->di.flags) & LFS_DI_STAGED))
			continue;
		queue[qn++] = ino;
		f->seen[ino] = 1;
	}
	return qn;
}

/* 2. the tree, breadth first from the root (and from trees staged for a
 * receive): which inodes are reachable, by how many names, and the path
 * of each */
static int
walk_tree(struct fsck *f)
{
	struct lfs_fs *fs = f->fs;
	uint32_t *queue = malloc((size_t)fs->sb.max_inodes * sizeof(uint32_t));
	if (!queue)
		return -ENOMEM;
	size_t qn = 0, qi = 0;
	queue[qn++] = LFS_ROOT_INO;
	f->seen[LFS_ROOT_INO] = 1;
	f->refs[LFS_ROOT_INO] = 1;
	qn = add_staged_roots(f, queue, qn);
	while (qi < qn) {
		struct lfs_inode *ip;
		uint32_t ino = queue[qi++];
		const struct sound *m = sound_of(f, ino);
		if (m && !S_ISDIR(m->mode))
			continue;
		int err = lfs_iget(fs, ino, &ip);
		if (err)
			continue; /* reported at its entry */
		if (S_ISDIR(ip->di.mode)) {
			struct dir_ctx c = { f, ip, queue, &qn };
			err = lfs_dir_iterate(fs, ip, 0, check_entry, &c);
			char where[PATH_BUF];
			if (err)
				problem(f, "directory %u%s cannot be read (%s)", ino, path_of(f, ino, where, sizeof(where)),
					strerror(-err));
		}
	}
	free(queue);
	return 0;
}

/* 3a. an inode in this tree: reachable, and its link count (mode and
 * nlink its record's; orphan: unlinked while open) */
static void
check_links(struct fsck *f, uint32_t ino, uint32_t mode, uint32_t nlink, bool orphan)
{
	char where[PATH_BUF];
	if (!f->seen[ino] && !orphan)
		problem(f, "inode %u (mode %o, %u links) is in use but not reachable from the root", ino, mode, nlink);
	uint32_t want = S_ISDIR(mode) ? 2 + f->subdirs[ino] : f->refs[ino];
	if (!orphan && nlink != want)
		problem(f, "inode %u%s has link count %u, but %u names refer to it%s", ino,
			path_of(f, ino, where, sizeof(where)), nlink, want,
			S_ISDIR(mode) ? " (counting subdirectories)" : "");
}

/* 3. one inode in use: reachable, its link count, its blocks */
static void
check_inode(struct fsck *f, uint32_t ino)
{
	struct lfs_fs *fs = f->fs;
	struct lfs_inode *ip;
	/* only what this pass loaded is dropped again: a mounted
	 * filesystem may hold the rest */
	const struct sound *m = sound_of(f, ino);
	if (m) {
		check_links(f, ino, m->mode, m->nlink, m->nlink == 0 && (lfs_imap_get(fs, ino)->flags & LFS_IMAP_ORPHAN));
		return;
	}
	bool was_cached = u64map_get(&fs->icache, ino) != NULL;
	char where[PATH_BUF];
	/* (the path is made only for a problem: a walk of the tree
	 * finds none in most inodes) */
	int err = lfs_iget(fs, ino, &ip);
	if (err) {
		/* the invariants are those every mount applies
		 * (lfs_dinode_check): say which one failed */
		const char *why = NULL;
		struct lfs_dinode di;
		const struct lfs_imap_entry *e = lfs_imap_get(fs, ino);
		if (err == -EFSCORRUPTED && e->daddr)
			lfs_inode_read_record(fs, e->daddr, e->slot, &di, NULL, &why);
		problem(f, "inode %u%s cannot be read (%s)%s%s", ino, path_of(f, ino, where, sizeof(where)), strerror(-err),
			why ? ": " : "", why ? why : "");
		f->unread++;
		return;
	}
	/* on a mounted filesystem, an inode unlinked while open is an
	 * orphan before its record with no links is written */
	bool orphan = ip->di.nlink == 0 && ((lfs_imap_get(fs, ino)->flags & LFS_IMAP_ORPHAN) || ip->dirty);
	check_links(f, ino, ip->di.mode, ip->di.nlink, orphan);
	/* what follows is the record's and its blocks' alone */
	uint64_t problems = f->problems;
	f->span_lo = 0;
	f->span_hi = UINT64_MAX;
	const struct lfs_imap_entry *e = lfs_imap_get(fs, ino);
	/* a new inode's record is not written before its first flush */
	if (e->daddr || !ip->dirty) {
		uint32_t charge = lfs_inode_charge(&fs->sb, lfs_inode_reclen(ip->di.inline_len));
		claim(f, e->daddr, LFS_BK_INODE, ino, charge);
		f->drag += charge;
	}
	struct owner_ctx o = { .f = f, .ino = ino };
	/* on a mounted filesystem, the leaves an fsync's relink record
	 * stands for are named by nodes still in memory (flush.c) */
	bool live_relinks = ip->relinked && !lfs_relink_of(fs, &ip->di);
	err = live_relinks ? relinks_from_memory(fs, ip) : 0;
	uint64_t unw = 0;
	if (!err)
		err = lfs_bmap_walk_disk_unwritten(fs, &ip->di, claim_block, &o, &unw);
	f->drag += o.nodes * fs->bsize;
	if (live_relinks)
		lfs_relink_drop(fs, ino);
	if (err)
		problem(f, "inode %u%s: block map cannot be read (%s)", ino, path_of(f, ino, where, sizeof(where)),
			strerror(-err));
	/* an inode with changes in memory only (fsck on a mounted
	 * filesystem) counts blocks the disk does not show yet */
	else if (!ip->dirty && !ip->pending_new && o.blocks + unw != ip->di.blocks)
		problem(f, "inode %u%s: its block count says %llu blocks, its block map names %llu", ino,
			path_of(f, ino, where, sizeof(where)), (unsigned long long)ip->di.blocks,
			(unsigned long long)(o.blocks + unw));
	else if (!ip->dirty && unw != ip->di.unwritten)
		problem(f, "inode %u%s: its record says %u unwritten blocks, its block map marks %llu", ino,
			path_of(f, ino, where, sizeof(where)), ip->di.unwritten, (unsigned long long)unw);
	f->unwritten += ip->di.unwritten;
	if (!err && !ip->xattr_dirty && lfs_dinode_xattr_blocks(&ip->di) != o.xattr_blocks)
		problem(f, "inode %u%s holds %u xattr blocks, but its record says %u", ino,
			path_of(f, ino, where, sizeof(where)), o.xattr_blocks, lfs_dinode_xattr_blocks(&ip->di));
	/* reading them checks every entry and slot */
	if (!err && ip->di.xattr && !ip->xattr_dirty && (err = lfs_xattr_load(fs, ip)))
		problem(f, "inode %u%s: extended attributes cannot be read (%s)", ino,
			path_of(f, ino, where, sizeof(where)), strerror(-err));
	if (f->kept_of && !fs->view_root && !fs->relink.count && f->problems == problems && e->daddr &&
	    !ip->dirty && !ip->pending_new && !ip->xattr_dirty && !live_relinks)
		remember_sound(f, ip, e);
	if (!was_cached && !ip->dirty)
		lfs_inode_evict(fs, ip);
}

/* 4. map blocks of the checkpoint, the held blocks, and the usage table */
static void
check_space(struct fsck *f)
{
	struct lfs_fs *fs = f->fs;
	if (fs->snapshots)
		check_held(f);
	for (uint32_t b = 0; b < fs->n_imap_blocks; b++)
		if (fs->imap_addr[b])
			claim(f, fs->imap_addr[b], LFS_BK_IMAP, 0, 0);
	for (uint32_t b = 0; b < fs->n_sut_blocks; b++)
		if (fs->sut_addr[b])
			claim(f, fs->sut_addr[b], LFS_BK_SUT, 0, 0);
	for (uint64_t s = 0; s < fs->sb.nsegs; s++) {
		if (f->live[s] != fs->segs[s].live_bytes)
			problem(f, "segment %llu: usage table says %u live bytes, the inodes reference %llu",
				(unsigned long long)s, fs->segs[s].live_bytes, (unsigned long long)f->live[s]);
		if (fs->segs[s].state == LFS_SEG_CLEAN && f->live[s])
			problem(f, "segment %llu is marked clean but holds live blocks", (unsigned long long)s);
	}
	check_counts(f, fs);
	if (f->unwritten != fs->unwritten)
		problem(f, "%llu blocks are counted unwritten, the inodes have %llu", (unsigned long long)fs->unwritten,
			(unsigned long long)f->unwritten);
	/* (an inode that cannot be read was reported, its part is unknown;
	 * a received snapshot's view walks only its own tree) */
	if (!f->unread && !fs->view_root && f->drag != fs->drag_bytes)
		problem(f, "%llu bytes are counted as block-map nodes and inode records, the inodes have %llu",
			(unsigned long long)fs->drag_bytes, (unsigned long long)f->drag);
}

static int
fsck_run(struct fsck *f)
{
	struct lfs_fs *fs = f->fs;
	uint32_t n = fs->sb.max_inodes;
	f->refs = calloc(n, sizeof(uint32_t));
	f->subdirs = calloc(n, sizeof(uint32_t));
	f->seen = calloc(n, 1);
	f->live = calloc(fs->sb.nsegs, sizeof(uint64_t));
	f->parent = calloc(n, sizeof(uint32_t));
	f->name = calloc(n, sizeof(char *));
	if (!f->refs || !f->subdirs || !f->seen || !f->live || !f->parent || !f->name)
		return -ENOMEM;
	u64map_init(&f->owner);
	u64map_init(&f->summary);

	/* 1. every summary of every segment that holds anything (a kept
	 * checkpoint's pass uses the live one's) */
	for (uint64_t s = 0; s < fs->sb.nsegs && !f->kept_of; s++) {
		if (fs->segs[s].state == LFS_SEG_CLEAN && !lfs_seg_live(fs, s))
			continue;
		if (f->memo)
			memo_scan(f, s);
		else
			lfs_clean_scan(fs, s, scan_summaries, f);
	}
	int err = walk_tree(f);
	if (err)
		return err;
	/* a received snapshot's tree is its root's: the rest of its inode
	 * map is the live tree of its time, and its root is read as / */
	for (uint32_t ino = LFS_ROOT_INO; ino < n; ino++)
		if (lfs_imap_valid_ino(fs, ino) && (!fs->view_root || (f->seen[ino] && ino != fs->view_root)))
			check_inode(f, ino);
	/* a kept checkpoint's space is the live pass's */
	if (!f->kept_of)
		check_space(f);
	return 0;
}

