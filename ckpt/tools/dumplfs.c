/*
 * dumplfs.c — dumplfs: print what an lfs image holds.
 *
 *   dumplfs [-j] [-s] [-i] [-u] IMAGE
 *
 * The superblock and both checkpoint regions always; then a line per
 * segment, or (-s) every partial segment and every block it names, the
 * segment usage table (-u), the inode map (-i), and the kept checkpoints
 * and blocks held for them (-k) of the newest valid checkpoint.  -j prints the same as one JSON object.
 *
 * A debugging tool is pointed at damaged images, so nothing read is
 * trusted: every address is checked against the geometry before it is
 * followed, everything is decoded through format.h (the snapshot tables
 * read by the library's own readers, lfs_kept_walk), and a damaged image
 * gives a message and exit status 1, never a crash.  It only reads and
 * takes no lock, so it may run on the image of a mounted filesystem; what
 * it shows is then a snapshot that concurrent writes may tear.
 */
#include "image.h"
#include "lfs.h"
#include "out.h"
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct dump {
	const char *path;
	struct lfs_bdev dev;
	struct lfs_super sb;
	uint32_t bs, seed;
	uint32_t nimap, nsut;       /* table blocks, as the geometry implies */
	struct lfs_ckpt_verdict r[2];
	int newest;                 /* region in use, -1 if neither is valid */
	uint32_t *meta;             /* per segment: table blocks the newest checkpoint keeps there */
	uint8_t *blk;
	uint8_t *sut_blk;           /* the SUT block last read, and its index */
	uint64_t sut_idx;
	int sut_err;
	bool sut_loaded;
	struct pseg_rec {
		uint32_t off;
		struct lfs_pseg_hdr h;
		bool stale;
	} *ps;
	size_t ps_cap;
	struct lfs_out o;
	int status;                 /* exit status */
};

static void
complain(struct dump *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Report damage on stderr and remember it for the exit status; stdout
 * stays clean for JSON consumers. */
static void
complain(struct dump *d, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "dumplfs: %s: ", d->path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	d->status = 1;
}

static bool
in_log(const struct dump *d, uint64_t addr)
{
	return addr >= d->sb.seg0 && addr - d->sb.seg0 < d->sb.nsegs * d->sb.seg_blocks;
}

static uint64_t
addr_seg(const struct dump *d, uint64_t addr)
{
	return (addr - d->sb.seg0) / d->sb.seg_blocks;
}

static const char *
kind_name(uint8_t kind)
{
	switch (kind) {
	case LFS_BK_DATA: return "DATA";
	case LFS_BK_INDIR: return "INDIR";
	case LFS_BK_INODE: return "INODE";
	case LFS_BK_XATTR: return "XATTR";
	case LFS_BK_IMAP: return "IMAP";
	case LFS_BK_SUT: return "SUT";
	case LFS_BK_TABLE: return "TABLE";
	case LFS_BK_HELD: return "HELD";
	default: return "unknown";
	}
}

/* Read and check the superblock; returns 0 or -errno after a message. */
static int
dump_open(struct dump *d)
{
	struct lfs_tool_open how = {
		.fd = -1, .busy_note = "this is the image as that daemon last wrote it, not what it holds in memory"
	};
	struct lfs_super_where w;
	int err = lfs_tool_open("dumplfs", d->path, &how, &d->dev, &d->sb, &w);
	/* a damaged block 0 is damage, which the exit status says */
	if (err || w.primary_err)
		d->status = 1;
	if (err)
		return err;
	const struct lfs_super *sb = &d->sb;
	d->bs = sb->block_size;
	d->seed = lfs_super_seed(sb);
	d->nimap = lfs_imap_nblocks(sb->max_inodes, d->bs);
	d->nsut = lfs_sut_nblocks(sb->nsegs, d->bs);
	d->blk = malloc(d->bs);
	d->sut_blk = malloc(d->bs);
	d->meta = calloc(sb->nsegs, sizeof(*d->meta));
	if (!d->blk || !d->sut_blk || !d->meta) {
		complain(d, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	return 0;
}

static void
dump_read_regions(struct dump *d)
{
	/* judged, and the verdict worded, as a mount judges them */
	d->newest = lfs_ckpt_judge_both(&d->dev, &d->sb, true, d->r);
	if (d->newest < 0) {
		complain(d, "no valid checkpoint region (region 0: %s; region 1: %s)", d->r[0].why, d->r[1].why);
		return;
	}
	const uint64_t *a = d->r[d->newest].addrs;
	for (size_t i = 0; i < (size_t)d->nimap + d->nsut; i++) {
		if (!a[i])
			continue;
		if (in_log(d, a[i]))
			d->meta[addr_seg(d, a[i])]++;
		else
			complain(d, "checkpoint region %d: %s block %zu at %" PRIu64 " is outside the log", d->newest,
				 i < d->nimap ? "inode map" : "usage table", i < d->nimap ? i : i - d->nimap, a[i]);
	}
}

/* ---------------------------------------------------------------- */

static void
dump_super(struct dump *d)
{
	const struct lfs_super *sb = &d->sb;
	struct lfs_out *o = &d->o;
	char uuid[LFS_UUID_STR];
	lfs_uuid_format(sb->uuid, uuid);
	lfs_out_begin(o, "superblock", '}');
	lfs_out_hex(o, "magic", sb->magic);
	lfs_out_u64(o, "version", sb->version);
	lfs_out_hex(o, "feature_compat", sb->feature_compat);
	lfs_out_hex(o, "feature_incompat", sb->feature_incompat);
	lfs_out_str(o, "uuid", uuid);
	lfs_out_str(o, "label", sb->label);
	lfs_out_time(o, "created_ns", sb->created_ns);
	lfs_out_u64(o, "block_size", sb->block_size);
	lfs_out_u64(o, "seg_blocks", sb->seg_blocks);
	lfs_out_u64(o, "seg_bytes", (uint64_t)sb->seg_blocks * sb->block_size);
	lfs_out_u64(o, "nblocks", sb->nblocks);
	lfs_out_u64(o, "nsegs", sb->nsegs);
	lfs_out_u64(o, "seg0", sb->seg0);
	lfs_out_u64(o, "ckpt0_addr", sb->ckpt_addr[0]);
	lfs_out_u64(o, "ckpt1_addr", sb->ckpt_addr[1]);
	lfs_out_u64(o, "ckpt_blocks", sb->ckpt_blocks);
	lfs_out_u64(o, "max_inodes", sb->max_inodes);
	lfs_out_u64(o, "reserved_segs", sb->reserved_segs);
	lfs_out_u64(o, "backup_sb", sb->backup_sb);
	lfs_out_u64(o, "imap_blocks", d->nimap);
	lfs_out_u64(o, "sut_blocks", d->nsut);
	lfs_out_hex(o, "crc_seed", d->seed);
	lfs_out_end(o);
}

static void
dump_checkpoints(struct dump *d)
{
	struct lfs_out *o = &d->o;
	lfs_out_begin(o, "checkpoints", ']');
	for (int i = 0; i < 2; i++) {
		const struct lfs_ckpt_verdict *r = &d->r[i];
		const struct lfs_ckpt_hdr *h = &r->h;
		lfs_out_item(o, "region", (uint64_t)i, false);
		lfs_out_u64(o, "addr", d->sb.ckpt_addr[i]);
		lfs_out_u64(o, "blocks", d->sb.ckpt_blocks);
		lfs_out_bool(o, "valid", r->err == 0);
		lfs_out_str(o, "status", r->why);
		lfs_out_bool(o, "newest", d->newest == i);
		if (r->decoded) {
			lfs_out_u64(o, "seq", h->ckpt_seq);
			lfs_out_time(o, "time_ns", h->timestamp_ns);
			lfs_out_hex(o, "flags", h->flags);
			lfs_out_bool(o, "clean", h->flags & LFS_CKPT_CLEAN);
			lfs_out_u64(o, "head_seg", h->head_seg);
			lfs_out_u64(o, "head_off", h->head_off);
			lfs_out_u64(o, "next_seg", h->next_seg);
			lfs_out_u64(o, "next_pseg_seq", h->next_pseg_seq);
			lfs_out_u64(o, "imap_blocks", h->n_imap_blocks);
			lfs_out_u64(o, "sut_blocks", h->n_sut_blocks);
			lfs_out_u64(o, "inodes_used", h->inodes_used);
			lfs_out_u64(o, "bytes_written", h->bytes_written);
			lfs_out_u64(o, "held_root", h->held_root);
			lfs_out_u64(o, "held_slots", h->held_slots);
			lfs_out_u64(o, "hist_root", h->hist_root);
			lfs_out_u64(o, "hist_slots", h->hist_slots);
			lfs_out_u64(o, "protect_s", h->protect_s);
			lfs_out_u64(o, "unwritten", h->unwritten);
			if (h->drag & LFS_CKPT_DRAG_KNOWN)
				lfs_out_u64(o, "drag_bytes", h->drag & ~LFS_CKPT_DRAG_KNOWN);
		}
		lfs_out_end(o);
	}
	lfs_out_end(o);
}

/* One table block the newest checkpoint names; 0 or -errno after a
 * message (once: the SUT cache remembers failures). */
static int
dump_table_block(struct dump *d, const char *what, uint64_t idx, uint64_t addr, uint8_t *blk)
{
	if (!in_log(d, addr))
		return -EFSCORRUPTED; /* reported with the checkpoint */
	int err = lfs_bdev_read(&d->dev, addr, 1, blk);
	if (err)
		complain(d, "%s block %" PRIu64 " at %" PRIu64 ": %s", what, idx, addr, strerror(-err));
	return err;
}

/* The usage entry of `seg` in the newest checkpoint. */
static int
dump_sut_entry(struct dump *d, uint64_t seg, struct lfs_sut_entry *e)
{
	uint32_t per = lfs_sut_per_block(d->bs);
	uint64_t b = seg / per;
	if (d->newest < 0)
		return -ENOENT;
	if (!d->sut_loaded || d->sut_idx != b) {
		uint64_t addr = d->r[d->newest].addrs[d->nimap + b];
		d->sut_loaded = true;
		d->sut_idx = b;
		d->sut_err = 0;
		if (addr)
			d->sut_err = dump_table_block(d, "usage table", b, addr, d->sut_blk);
		else /* never written: every segment in it is empty */
			memset(d->sut_blk, 0, d->bs);
	}
	if (d->sut_err)
		return d->sut_err;
	lfs_sut_entry_decode(e, d->sut_blk + (seg % per) * LFS_SUT_ENTRY_SIZE);
	return 0;
}

/* Walk segment `seg` from its start with the one log reader (logwalk.h),
 * as the cleaner, fsck and roll-forward do, but showing stale psegs
 * (marked) where they end the others' walks; fills d->ps.  Returns the
 * number of psegs, with where and why the walk stopped. */
static size_t
dump_seg_walk(struct dump *d, uint64_t seg, uint32_t *end_off, const char **why)
{
	size_t n = 0;
	struct lfs_logwalk w;
	int err = lfs_logwalk_init(&w, &d->dev, &d->sb, d->seed, LFS_LOGWALK_SHOW_STALE);
	if (err) {
		complain(d, "%s", strerror(-err));
		*why = "out of memory";
		*end_off = 0;
		return 0;
	}
	lfs_logwalk_segment(&w, seg);
	while ((err = lfs_logwalk_next(&w)) > 0) {
		if (n == d->ps_cap) {
			size_t cap = d->ps_cap ? 2 * d->ps_cap : 64;
			void *p = realloc(d->ps, cap * sizeof(*d->ps));
			if (!p) {
				err = -ENOMEM;
				break;
			}
			d->ps = p;
			d->ps_cap = cap;
		}
		d->ps[n++] = (struct pseg_rec){ .off = w.pseg_off, .h = w.h, .stale = w.stale };
	}
	if (err == -ENOMEM) {
		complain(d, "%s", strerror(ENOMEM));
		*why = "out of memory";
	} else if (err < 0) {
		complain(d, "segment %" PRIu64 ": reading block %" PRIu64 ": %s", seg,
			 d->sb.seg0 + seg * d->sb.seg_blocks + w.off, strerror(-err));
		*why = "read error";
	} else {
		*why = lfs_logwalk_end_name(w.end);
	}
	*end_off = w.off;
	lfs_logwalk_free(&w);
	return n;
}

/* The blocks a pseg's summary names, each with its crc checked. */
/* What the group's records replaced (format.h, LFS_PSEG_REPL). */
static void
dump_replaced(struct dump *d, const uint8_t *sum, const struct lfs_pseg_hdr *h)
{
	struct lfs_out *o = &d->o;
	uint32_t n;
	if (lfs_pseg_repl_count(h, d->bs, &n)) {
		lfs_out_str(o, "replaced", "more records than the block holds");
		return;
	}
	if (!n)
		return;
	lfs_out_begin(o, "replaced", ']');
	for (uint32_t i = 0; i < n; i++) {
		struct lfs_repl_rec r;
		lfs_repl_rec_decode(&r, sum, h->nblocks, i);
		if (r.kind) {
			lfs_out_item(o, "block", r.addr, true);
			lfs_out_str(o, "kind", kind_name(r.kind));
		} else {
			lfs_out_item(o, "inode", r.ino, true);
			lfs_out_u64(o, "version", r.version);
			lfs_out_u64(o, "count", r.count);
		}
		lfs_out_end(o);
	}
	lfs_out_end(o);
}

static void
dump_pseg_blocks(struct dump *d, uint64_t sum_addr, const struct pseg_rec *p)
{
	struct lfs_out *o = &d->o;
	uint8_t *sum = malloc(d->bs);
	int err = sum ? lfs_bdev_read(&d->dev, sum_addr, 1, sum) : -ENOMEM;
	struct lfs_pseg_hdr h = { 0 };
	if (!err)
		err = lfs_pseg_verify(sum, d->bs, d->seed);
	if (!err)
		lfs_pseg_hdr_decode(&h, sum);
	if (err || h.seq != p->h.seq || h.nblocks != p->h.nblocks) {
		/* rewritten between the walk and now: the filesystem is mounted */
		lfs_out_bool(o, "changed", true);
		free(sum);
		return;
	}
	lfs_out_begin(o, "blocks", ']');
	for (uint32_t j = 0; j < h.nblocks; j++) {
		struct lfs_pseg_entry e;
		lfs_pseg_entry_decode(&e, sum, j);
		uint64_t addr = sum_addr + 1 + j;
		const char *crc = "ok";
		if (lfs_bdev_read(&d->dev, addr, 1, d->blk))
			crc = "unreadable";
		else if (lfs_crc(d->seed, d->blk, d->bs) != e.crc)
			crc = "bad";
		lfs_out_item(o, "block", addr, true);
		lfs_out_str(o, "kind", kind_name(e.kind));
		if (!strcmp(kind_name(e.kind), "unknown"))
			lfs_out_u64(o, "kind_id", e.kind);
		lfs_out_u64(o, "ino", e.ino);
		lfs_out_u64(o, "version", e.version);
		lfs_out_u64(o, "lblk", e.lblk);
		if (e.kind == LFS_BK_INDIR && (e.lblk & LFS_NODE_FLAG)) {
			lfs_out_u64(o, "tree", lfs_node_tree(e.lblk));
			lfs_out_u64(o, "level", lfs_node_level(e.lblk));
			lfs_out_u64(o, "idx", lfs_node_idx(e.lblk));
		}
		if (e.kind == LFS_BK_XATTR) {
			/* what the block is to its inode (format.h, "XATTR blocks") */
			struct lfs_xroot r;
			if (e.lblk)
				lfs_out_u64(o, "xattr_slot", e.lblk - 1);
			else if (strcmp(crc, "unreadable") && !lfs_xroot_decode(&r, d->blk, d->bs))
				lfs_out_str(o, "xattr_root", r.legacy ? "one block" : r.nslots ? "slot table" : "entries");
		}
		lfs_out_str(o, "crc", crc);
		lfs_out_end(o);
	}
	lfs_out_end(o);
	dump_replaced(d, sum, &h);
	free(sum);
}

static void
dump_segments(struct dump *d, bool detail)
{
	struct lfs_out *o = &d->o;
	const struct lfs_ckpt_hdr *ck = d->newest >= 0 ? &d->r[d->newest].h : NULL;
	lfs_out_begin(o, "segments", ']');
	for (uint64_t s = 0; s < d->sb.nsegs; s++) {
		uint64_t first = d->sb.seg0 + s * d->sb.seg_blocks;
		uint32_t end_off;
		const char *why;
		size_t n = dump_seg_walk(d, s, &end_off, &why);
		uint64_t log_blocks = 0;
		for (size_t i = 0; i < n; i++)
			log_blocks += 1 + d->ps[i].h.nblocks;
		struct lfs_sut_entry e;
		bool known = ck && dump_sut_entry(d, s, &e) == 0;
		/* as lfs_ckpt_load() sees it; live bytes exclude table blocks */
		const char *state = !known ? "unknown"
				    : (s == ck->head_seg || s == ck->next_seg) ? "active"
				    : (e.live_bytes || d->meta[s]) ? "dirty" : "clean";
		lfs_out_item(o, "seg", s, true);
		lfs_out_u64(o, "addr", first);
		lfs_out_str(o, "state", state);
		if (known) {
			lfs_out_u64(o, "live_bytes", e.live_bytes);
			lfs_out_u64(o, "table_blocks", d->meta[s]);
		}
		lfs_out_u64(o, "psegs", n);
		lfs_out_u64(o, "log_blocks", log_blocks);
		if (detail) {
			lfs_out_u64(o, "walk_end", end_off);
			lfs_out_str(o, "walk_stop", why);
			lfs_out_begin(o, "pseg_list", ']');
			for (size_t i = 0; i < n; i++) {
				const struct pseg_rec *p = &d->ps[i];
				lfs_out_item(o, "pseg", first + p->off, true);
				lfs_out_u64(o, "off", p->off);
				lfs_out_u64(o, "seq", p->h.seq);
				lfs_out_u64(o, "ckpt_seq", p->h.ckpt_seq);
				lfs_out_time(o, "time_ns", p->h.timestamp_ns);
				lfs_out_u64(o, "nblocks", p->h.nblocks);
				lfs_out_hex(o, "flags", p->h.flags);
				lfs_out_bool(o, "end", p->h.flags & LFS_PSEG_END);
				lfs_out_u64(o, "next_seg", p->h.next_seg);
				lfs_out_bool(o, "stale", p->stale);
				dump_pseg_blocks(d, first + p->off, p);
				lfs_out_end(o);
			}
			lfs_out_end(o);
		}
		lfs_out_end(o);
	}
	lfs_out_end(o);
}

/* Impossible table entries reported one by one: past these, a table
 * block is garbage and a count says as much. */
#define BAD_SHOWN 5

/* A table's heading: the checkpoint it is of, and its n blocks, of which
 * those with an address in `a` were written; its entries follow. */
static void
table_begin(struct dump *d, const char *key, const uint64_t *a, uint32_t n)
{
	struct lfs_out *o = &d->o;
	uint64_t written = 0;
	for (uint32_t b = 0; b < n; b++)
		written += a[b] != 0;
	lfs_out_begin(o, key, '}');
	lfs_out_u64(o, "checkpoint_region", (uint64_t)d->newest);
	lfs_out_u64(o, "checkpoint_seq", d->r[d->newest].h.ckpt_seq);
	lfs_out_u64(o, "blocks", n);
	lfs_out_u64(o, "blocks_written", written);
	lfs_out_begin(o, "entries", ']');
}

static void
dump_usage(struct dump *d)
{
	struct lfs_out *o = &d->o;
	uint64_t bad = 0;
	table_begin(d, "usage_table", d->r[d->newest].addrs + d->nimap, d->nsut);
	for (uint64_t s = 0; s < d->sb.nsegs; s++) {
		struct lfs_sut_entry e;
		if (dump_sut_entry(d, s, &e))
			continue; /* reported once per block */
		lfs_out_item(o, "seg", s, true);
		lfs_out_u64(o, "live_bytes", e.live_bytes);
		lfs_out_hex(o, "flags", e.flags);
		lfs_out_time(o, "mtime_ns", e.mtime_ns);
		lfs_out_end(o);
		/* the verdict of the mount, which refuses such an entry */
		const char *why;
		if (lfs_sut_entry_check(&e, &d->sb, &why) && bad++ < BAD_SHOWN)
			complain(d, "usage table: segment %" PRIu64 ": %s (%u live bytes, flags %#x)", s, why,
				 e.live_bytes, e.flags);
	}
	lfs_out_end(o);
	lfs_out_end(o);
	if (bad > BAD_SHOWN)
		complain(d, "usage table: %" PRIu64 " more impossible entries", bad - BAD_SHOWN);
}

static void
dump_imap(struct dump *d)
{
	struct lfs_out *o = &d->o;
	const uint64_t *a = d->r[d->newest].addrs;
	uint32_t per = lfs_imap_per_block(d->bs);
	uint64_t in_use = 0, bad = 0;
	table_begin(d, "inode_map", a, d->nimap);
	for (uint32_t b = 0; b < d->nimap; b++) {
		if (!a[b] || dump_table_block(d, "inode map", b, a[b], d->blk))
			continue; /* never written (all free), or reported */
		for (uint32_t i = 0; i < per && (uint64_t)b * per + i < d->sb.max_inodes; i++) {
			struct lfs_imap_entry e;
			lfs_imap_entry_decode(&e, d->blk + (size_t)i * LFS_IMAP_ENTRY_SIZE);
			uint64_t ino = (uint64_t)b * per + i;
			/* the verdict of the mount, which refuses such an entry */
			const char *why;
			if (lfs_imap_entry_check(&e, ino, &d->sb, &why) && bad++ < BAD_SHOWN)
				complain(d, "inode map: inode %" PRIu64 ": %s (block %" PRIu64 " slot %u, flags %#x)",
					 ino, why, e.daddr, e.slot, e.flags);
			if (!(e.flags & LFS_IMAP_INUSE))
				continue;
			in_use++;
			lfs_out_item(o, "ino", ino, true);
			lfs_out_u64(o, "daddr", e.daddr);
			lfs_out_u64(o, "slot", e.slot);
			lfs_out_u64(o, "version", e.version);
			lfs_out_hex(o, "flags", e.flags);
			lfs_out_bool(o, "orphan", e.flags & LFS_IMAP_ORPHAN);
			lfs_out_end(o);
		}
	}
	lfs_out_end(o);
	if (bad > BAD_SHOWN)
		complain(d, "inode map: %" PRIu64 " more impossible entries", bad - BAD_SHOWN);
	lfs_out_u64(o, "in_use", in_use);
	lfs_out_end(o);
}

static void
dump_hist_record(void *ctx, uint64_t slot, const struct lfs_hist_entry *e)
{
	struct dump *d = ctx;
	lfs_out_item(&d->o, "seq", e->seq, true);
	lfs_out_u64(&d->o, "slot", slot);
	lfs_out_time(&d->o, "time_ns", e->time_ns);
	lfs_out_bool(&d->o, "snapshot", e->flags & LFS_HIST_SNAPSHOT);
	lfs_out_str(&d->o, "name", e->name);
	lfs_out_end(&d->o);
}

static void
dump_held_entry(void *ctx, uint64_t slot, const struct lfs_held_entry *e)
{
	struct dump *d = ctx;
	lfs_out_item(&d->o, "slot", slot, true);
	lfs_out_u64(&d->o, "orig", e->orig);
	lfs_out_u64(&d->o, "cur", e->cur);
	lfs_out_u64(&d->o, "from", e->from);
	lfs_out_u64(&d->o, "until", e->until);
	lfs_out_str(&d->o, "kind", kind_name(e->kind));
	lfs_out_u64(&d->o, "record", e->slot);
	lfs_out_u64(&d->o, "charge", e->charge);
	lfs_out_bool(&d->o, "live", e->flags & LFS_HELD_LIVE);
	if (e->kind == LFS_BK_IMAP)
		lfs_out_u64(&d->o, "imap_block", e->aux);
	lfs_out_end(&d->o);
}

/* The checkpoint history and the held blocks of the newest checkpoint,
 * read by the library as the mount reads them: a table the mount would
 * refuse is refused here, the reason on stderr. */
static void
dump_kept(struct dump *d)
{
	struct lfs_out *o = &d->o;
	const struct lfs_ckpt_hdr *h = &d->r[d->newest].h;
	lfs_out_begin(o, "snapshots", '}');
	lfs_out_u64(o, "checkpoint_seq", h->ckpt_seq);
	lfs_out_u64(o, "protection_period_s", h->protect_s);
	lfs_out_begin(o, "kept", ']');
	int err = lfs_kept_walk(&d->dev, &d->sb, h, dump_hist_record, NULL, d);
	lfs_out_end(o);
	lfs_out_begin(o, "held", ']');
	if (!err) /* read again: each list whole, or none of it */
		err = lfs_kept_walk(&d->dev, &d->sb, h, NULL, dump_held_entry, d);
	lfs_out_end(o);
	lfs_out_end(o);
	if (err)
		complain(d, "snapshot tables of checkpoint %" PRIu64 ": %s", h->ckpt_seq, strerror(-err));
}

/* ---------------------------------------------------------------- */

static void
usage(FILE *f)
{
	fprintf(f, "usage: dumplfs [-j] [-s] [-i] [-u] [-k] IMAGE\n"
		   "  -s  every partial segment and the blocks it names\n"
		   "  -u  the segment usage table of the newest checkpoint\n"
		   "  -i  the in-use entries of the inode map of the newest checkpoint\n"
		   "  -k  the kept checkpoints (snapshots) and the blocks held for them\n"
		   "  -j  print one JSON object\n" LFS_TOOL_HELP_LINES);
}

int
main(int argc, char **argv)
{
	bool json = false, segs = false, imap = false, sut = false, kept = false;
	static const struct lfs_tool tool = { "dumplfs", usage, 2 };
	static const struct option longopts[] = { LFS_TOOL_LONGOPTS, { NULL, 0, NULL, 0 } };
	int c;
	while ((c = getopt_long(argc, argv, "jsiuk" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 's': segs = true; break;
		case 'i': imap = true; break;
		case 'u': sut = true; break;
		case 'k': kept = true; break;
		default: return lfs_tool_opt(&tool, c);
		}
	}
	if (optind != argc - 1)
		return lfs_tool_usage_error(&tool);
	struct dump d = { .path = argv[optind], .newest = -1, .dev = { .fd = -1, .trace_fd = -1 } };
	if (dump_open(&d)) {
		lfs_bdev_close(&d.dev);
		free(d.blk);
		free(d.sut_blk);
		free(d.meta);
		return 1;
	}
	dump_read_regions(&d);

	struct lfs_out *o = &d.o;
	lfs_out_init(o, json);
	lfs_out_begin(o, NULL, '}');
	lfs_out_str(o, "image", d.path);
	lfs_out_u64(o, "image_bytes", d.dev.size_bytes);
	dump_super(&d);
	dump_checkpoints(&d);
	if (segs || !(imap || sut || kept))
		dump_segments(&d, segs);
	if (kept && d.newest < 0)
		complain(&d, "no checkpoint to read the kept checkpoints from");
	if (kept && d.newest >= 0)
		dump_kept(&d);
	if ((imap || sut) && d.newest < 0)
		complain(&d, "no checkpoint to read the %s from",
			 imap && sut ? "inode map and usage table" : imap ? "inode map" : "usage table");
	if (sut && d.newest >= 0)
		dump_usage(&d);
	if (imap && d.newest >= 0)
		dump_imap(&d);
	lfs_out_end(o);

	if (fflush(stdout) == EOF || ferror(stdout)) {
		fprintf(stderr, "dumplfs: writing the output: %s\n", strerror(errno));
		d.status = 1;
	}
	for (int i = 0; i < 2; i++)
		free(d.r[i].addrs);
	free(d.ps);
	free(d.blk);
	free(d.sut_blk);
	free(d.meta);
	lfs_bdev_close(&d.dev);
	return d.status;
}
