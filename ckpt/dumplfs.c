/*
 * dumplfs.c — dumplfs: print what an lfs image holds.
 *
 *   dumplfs [-j] [-s] [-i] [-u] IMAGE
 *
 * The superblock and both checkpoint regions always; then a line per
 * segment, or (-s) every partial segment and every block it names, the
 * segment usage table (-u) and the inode map (-i) of the newest valid
 * checkpoint.  -j prints the same as one JSON object.
 *
 * A debugging tool is pointed at damaged images, so nothing read is
 * trusted: every address is checked against the geometry before it is
 * followed, everything is decoded through format.h, and a damaged image
 * gives a message and exit status 1, never a crash.  It only reads and
 * takes no lock, so it may run on the image of a mounted filesystem; what
 * it shows is then a snapshot that concurrent writes may tear.
 */
#include "image.h"
#include "lfs.h"
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- */
/* Output: one emitter for text and JSON, so -j can never drift from */
/* what the text shows.  Text prints objects as "key value" lines    */
/* and array items either as one "label id key=value ..." line (a    */
/* row) or as an indented block; JSON rows are kept on one line.     */

#define OUT_MAX_DEPTH 8

struct out_frame {
	char close;                 /* json: '}' or ']' */
	bool row;                   /* fields on one line */
	unsigned n;                 /* json: items so far */
	int indent;                 /* text: of the lines inside */
};

struct out {
	bool json;
	bool line_open;             /* text: a row line awaits its newline */
	int depth;
	struct out_frame f[OUT_MAX_DEPTH];
};

/* Length of the valid UTF-8 sequence at p, 0 if there is none. */
static size_t
utf8_len(const unsigned char *p, size_t avail)
{
	size_t n;
	uint32_t cp, min;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2, cp = p[0] & 0x1fu, min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		n = 3, cp = p[0] & 0x0fu, min = 0x800;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4, cp = p[0] & 0x07u, min = 0x10000;
	} else {
		return 0;
	}
	if (n > avail)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3fu);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Labels come from disk: any bytes.  JSON must stay valid UTF-8 (bytes
 * that are not become \u00XX); text shows them as \xXX. */
static void
out_put_string(bool json, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	if (json)
		putchar('"');
	for (size_t i = 0; i < len;) {
		unsigned c = p[i];
		size_t n = 0;
		if (json && (c == '"' || c == '\\')) {
			printf("\\%c", c);
			i++;
		} else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !(n = utf8_len(p + i, len - i)))) {
			printf(json ? "\\u%04x" : "\\x%02x", c);
			i++;
		} else if (c >= 0x80) {
			fwrite(p + i, 1, n, stdout);
			i += n;
		} else {
			putchar((int)c);
			i++;
		}
	}
	if (json)
		putchar('"');
}

static void
out_init(struct out *o, bool json)
{
	memset(o, 0, sizeof(*o));
	o->json = json;
}

static void
out_end_line(struct out *o)
{
	if (o->line_open)
		putchar('\n');
	o->line_open = false;
}

/* JSON: the separator, indentation and key before a value. */
static void
out_json_key(struct out *o, const char *key)
{
	struct out_frame *f = &o->f[o->depth];
	if (o->depth == 0)
		return;
	if (f->n++)
		fputs(f->row ? ", " : ",", stdout);
	if (!f->row)
		printf("\n%*s", 2 * o->depth, "");
	if (key) {
		out_put_string(true, key);
		fputs(": ", stdout);
	}
}

static void
out_push(struct out *o, char close, bool row, int indent)
{
	if (o->depth + 1 >= OUT_MAX_DEPTH)
		abort(); /* a bug in this file, not in the image */
	o->depth++;
	o->f[o->depth] = (struct out_frame){ .close = close, .row = row, .indent = indent };
}

/* An object (close '}') or array (']') under `key` of the current object. */
static void
out_begin(struct out *o, const char *key, char close)
{
	if (o->json) {
		out_json_key(o, key);
		putchar(close == '}' ? '{' : '[');
		out_push(o, close, false, 0);
		return;
	}
	const struct out_frame *p = &o->f[o->depth];
	int indent = p->indent;
	if (p->row) {
		/* an array inside a row: its items go on the lines below */
		out_end_line(o);
		out_push(o, close, false, indent + 2);
		return;
	}
	if (key)
		printf("%*s%s:\n", indent, "", key);
	out_push(o, close, false, key ? indent + 2 : indent);
}

/* An item of the current array, named `key id`: a row keeps all its
 * fields on one text line. */
static void
out_item(struct out *o, const char *key, uint64_t id, bool row)
{
	if (o->json) {
		out_json_key(o, NULL);
		printf("{");
		out_push(o, '}', row, 0);
		out_json_key(o, key);
		printf("%" PRIu64, id);
		return;
	}
	out_end_line(o);
	int indent = o->f[o->depth].indent;
	printf("%*s%s %" PRIu64 "%s", indent, "", key, id, row ? "" : ":\n");
	o->line_open = row;
	out_push(o, '}', row, row ? indent : indent + 2);
}

static void
out_end(struct out *o)
{
	struct out_frame f = o->f[o->depth];
	o->depth--;
	if (o->json) {
		if (!f.row && f.n)
			printf("\n%*s", 2 * o->depth, "");
		putchar(f.close);
		if (o->depth == 0)
			putchar('\n');
	} else if (f.row) {
		out_end_line(o);
	}
}

/* A field: `jv` is the JSON value, already encoded, `tv` the text one. */
static void
out_field(struct out *o, const char *key, const char *jv, const char *tv)
{
	if (o->json) {
		out_json_key(o, key);
		fputs(jv, stdout);
		return;
	}
	const struct out_frame *f = &o->f[o->depth];
	if (f->row) {
		if (!o->line_open) /* after a nested array: continue below it */
			printf("%*s ", f->indent + 2, "");
		o->line_open = true;
		printf(" %s=%s", key, tv);
	} else {
		printf("%*s%-18s %s\n", f->indent, "", key, tv);
	}
}

static void
out_u64(struct out *o, const char *key, uint64_t v)
{
	char b[24];
	snprintf(b, sizeof(b), "%" PRIu64, v);
	out_field(o, key, b, b);
}

/* Magic numbers and flag words: hex in text, plain numbers in JSON. */
static void
out_hex(struct out *o, const char *key, uint64_t v)
{
	char j[24], t[24];
	snprintf(j, sizeof(j), "%" PRIu64, v);
	snprintf(t, sizeof(t), "%#" PRIx64, v);
	out_field(o, key, j, t);
}

static void
out_bool(struct out *o, const char *key, bool v)
{
	out_field(o, key, v ? "true" : "false", v ? "yes" : "no");
}

static void
out_str(struct out *o, const char *key, const char *s)
{
	if (o->json) {
		out_json_key(o, key);
		out_put_string(true, s);
		return;
	}
	const struct out_frame *f = &o->f[o->depth];
	bool quote = f->row && (strchr(s, ' ') || !*s);
	if (f->row) {
		if (!o->line_open)
			printf("%*s ", f->indent + 2, "");
		o->line_open = true;
		printf(" %s=", key);
	} else {
		printf("%*s%-18s ", f->indent, "", key);
	}
	if (quote)
		putchar('"');
	out_put_string(false, s);
	if (quote)
		putchar('"');
	if (!f->row)
		putchar('\n');
}

/* Nanoseconds since the epoch: the number in JSON, UTC in text, where
 * the key loses its "_ns". */
static void
out_time(struct out *o, const char *key, uint64_t ns)
{
	char j[24], t[64], k[32];
	size_t kl = strlen(key);
	if (kl > 3 && kl < sizeof(k) && !strcmp(key + kl - 3, "_ns")) {
		memcpy(k, key, kl - 3);
		k[kl - 3] = '\0';
		if (!o->json)
			key = k;
	}
	snprintf(j, sizeof(j), "%" PRIu64, ns);
	time_t s = (time_t)(ns / 1000000000u);
	struct tm tm;
	size_t n;
	if (ns && gmtime_r(&s, &tm) && (n = strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm)) > 0)
		snprintf(t + n, sizeof(t) - n, ".%03uZ", (unsigned)(ns / 1000000u % 1000u));
	else
		snprintf(t, sizeof(t), "%s", j);
	out_field(o, key, j, t);
}

/* ---------------------------------------------------------------- */

struct region {
	int err;                    /* from lfs_ckpt_read_region */
	char why[160];              /* its status, in words */
	bool decoded;               /* the header is worth showing */
	struct lfs_ckpt_hdr h;
	uint64_t *addrs;            /* imap then SUT block addresses */
};

struct dump {
	const char *path;
	struct lfs_bdev dev;
	struct lfs_super sb;
	uint32_t bs, seed;
	uint32_t nimap, nsut;       /* table blocks, as the geometry implies */
	struct region r[2];
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
	struct out o;
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
	default: return "unknown";
	}
}

/* Read and check the superblock; returns 0 or -errno after a message. */
static int
dump_open(struct dump *d)
{
	int err = lfs_bdev_open(&d->dev, d->path, true);
	if (err) {
		fprintf(stderr, "dumplfs: %s: %s\n", d->path,
			err == -ENOTBLK ? "not a regular file or block device" : strerror(-err));
		return err;
	}
	char where[4096];
	if (d->dev.size_bytes >= LFS_SB_SIZE && lfs_image_busy(d->dev.fd, d->path, where, sizeof(where)))
		fprintf(stderr, "dumplfs: warning: %s is mounted at %s: this is the image as that daemon "
			"last wrote it, not what it holds in memory\n", d->path, where);
	/* the checks the mount and every tool apply (super.c) */
	struct lfs_super_where w;
	char why[256];
	err = lfs_super_open(&d->dev, 0, &d->sb, &w, why, sizeof(why));
	if (err) {
		complain(d, "%s", why);
		return err;
	}
	if (w.primary_err)
		complain(d, "block 0 %s; read the backup superblock at block %" PRIu64, lfs_super_why(w.primary_err),
			 w.block);
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
	for (int i = 0; i < 2; i++) {
		struct region *r = &d->r[i];
		memset(&r->h, 0, sizeof(r->h));
		/* judged, and the verdict worded, as a mount judges it */
		r->err = lfs_ckpt_judge_region(&d->dev, &d->sb, i, &r->h, &r->addrs, r->why, sizeof(r->why));
		r->decoded = r->err == 0 || r->err == -EFSCORRUPTED;
	}
	/* the same choice as lfs_ckpt_load() */
	if (!d->r[0].err && !d->r[1].err)
		d->newest = d->r[1].h.ckpt_seq > d->r[0].h.ckpt_seq;
	else if (!d->r[0].err)
		d->newest = 0;
	else if (!d->r[1].err)
		d->newest = 1;
	else
		d->newest = -1;
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
	struct out *o = &d->o;
	char uuid[LFS_UUID_STR];
	lfs_uuid_format(sb->uuid, uuid);
	out_begin(o, "superblock", '}');
	out_hex(o, "magic", sb->magic);
	out_u64(o, "version", sb->version);
	out_hex(o, "feature_compat", sb->feature_compat);
	out_hex(o, "feature_incompat", sb->feature_incompat);
	out_str(o, "uuid", uuid);
	out_str(o, "label", sb->label);
	out_time(o, "created_ns", sb->created_ns);
	out_u64(o, "block_size", sb->block_size);
	out_u64(o, "seg_blocks", sb->seg_blocks);
	out_u64(o, "seg_bytes", (uint64_t)sb->seg_blocks * sb->block_size);
	out_u64(o, "nblocks", sb->nblocks);
	out_u64(o, "nsegs", sb->nsegs);
	out_u64(o, "seg0", sb->seg0);
	out_u64(o, "ckpt0_addr", sb->ckpt_addr[0]);
	out_u64(o, "ckpt1_addr", sb->ckpt_addr[1]);
	out_u64(o, "ckpt_blocks", sb->ckpt_blocks);
	out_u64(o, "max_inodes", sb->max_inodes);
	out_u64(o, "reserved_segs", sb->reserved_segs);
	out_u64(o, "backup_sb", sb->backup_sb);
	out_u64(o, "imap_blocks", d->nimap);
	out_u64(o, "sut_blocks", d->nsut);
	out_hex(o, "crc_seed", d->seed);
	out_end(o);
}

static void
dump_checkpoints(struct dump *d)
{
	struct out *o = &d->o;
	out_begin(o, "checkpoints", ']');
	for (int i = 0; i < 2; i++) {
		const struct region *r = &d->r[i];
		const struct lfs_ckpt_hdr *h = &r->h;
		out_item(o, "region", (uint64_t)i, false);
		out_u64(o, "addr", d->sb.ckpt_addr[i]);
		out_u64(o, "blocks", d->sb.ckpt_blocks);
		out_bool(o, "valid", r->err == 0);
		out_str(o, "status", r->why);
		out_bool(o, "newest", d->newest == i);
		if (r->decoded) {
			out_u64(o, "seq", h->ckpt_seq);
			out_time(o, "time_ns", h->timestamp_ns);
			out_hex(o, "flags", h->flags);
			out_bool(o, "clean", h->flags & LFS_CKPT_CLEAN);
			out_u64(o, "head_seg", h->head_seg);
			out_u64(o, "head_off", h->head_off);
			out_u64(o, "next_seg", h->next_seg);
			out_u64(o, "next_pseg_seq", h->next_pseg_seq);
			out_u64(o, "imap_blocks", h->n_imap_blocks);
			out_u64(o, "sut_blocks", h->n_sut_blocks);
			out_u64(o, "inodes_used", h->inodes_used);
			out_u64(o, "bytes_written", h->bytes_written);
		}
		out_end(o);
	}
	out_end(o);
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
static void
dump_pseg_blocks(struct dump *d, uint64_t sum_addr, const struct pseg_rec *p)
{
	struct out *o = &d->o;
	uint8_t *sum = malloc(d->bs);
	int err = sum ? lfs_bdev_read(&d->dev, sum_addr, 1, sum) : -ENOMEM;
	struct lfs_pseg_hdr h = { 0 };
	if (!err)
		err = lfs_pseg_verify(sum, d->bs, d->seed);
	if (!err)
		lfs_pseg_hdr_decode(&h, sum);
	if (err || h.seq != p->h.seq || h.nblocks != p->h.nblocks) {
		/* rewritten between the walk and now: the filesystem is mounted */
		out_bool(o, "changed", true);
		free(sum);
		return;
	}
	out_begin(o, "blocks", ']');
	for (uint32_t j = 0; j < h.nblocks; j++) {
		struct lfs_pseg_entry e;
		lfs_pseg_entry_decode(&e, sum, j);
		uint64_t addr = sum_addr + 1 + j;
		const char *crc = "ok";
		if (lfs_bdev_read(&d->dev, addr, 1, d->blk))
			crc = "unreadable";
		else if (lfs_crc(d->seed, d->blk, d->bs) != e.crc)
			crc = "bad";
		out_item(o, "block", addr, true);
		out_str(o, "kind", kind_name(e.kind));
		if (!strcmp(kind_name(e.kind), "unknown"))
			out_u64(o, "kind_id", e.kind);
		out_u64(o, "ino", e.ino);
		out_u64(o, "version", e.version);
		out_u64(o, "lblk", e.lblk);
		if (e.kind == LFS_BK_INDIR && (e.lblk & LFS_NODE_FLAG)) {
			out_u64(o, "tree", lfs_node_tree(e.lblk));
			out_u64(o, "level", lfs_node_level(e.lblk));
			out_u64(o, "idx", lfs_node_idx(e.lblk));
		}
		if (e.kind == LFS_BK_XATTR) {
			/* what the block is to its inode (format.h, "XATTR blocks") */
			struct lfs_xroot r;
			if (e.lblk)
				out_u64(o, "xattr_slot", e.lblk - 1);
			else if (strcmp(crc, "unreadable") && !lfs_xroot_decode(&r, d->blk, d->bs))
				out_str(o, "xattr_root", r.legacy ? "one block" : r.nslots ? "slot table" : "entries");
		}
		out_str(o, "crc", crc);
		out_end(o);
	}
	out_end(o);
	free(sum);
}

static void
dump_segments(struct dump *d, bool detail)
{
	struct out *o = &d->o;
	const struct lfs_ckpt_hdr *ck = d->newest >= 0 ? &d->r[d->newest].h : NULL;
	out_begin(o, "segments", ']');
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
		out_item(o, "seg", s, true);
		out_u64(o, "addr", first);
		out_str(o, "state", state);
		if (known) {
			out_u64(o, "live_bytes", e.live_bytes);
			out_u64(o, "table_blocks", d->meta[s]);
		}
		out_u64(o, "psegs", n);
		out_u64(o, "log_blocks", log_blocks);
		if (detail) {
			out_u64(o, "walk_end", end_off);
			out_str(o, "walk_stop", why);
			out_begin(o, "pseg_list", ']');
			for (size_t i = 0; i < n; i++) {
				const struct pseg_rec *p = &d->ps[i];
				out_item(o, "pseg", first + p->off, true);
				out_u64(o, "off", p->off);
				out_u64(o, "seq", p->h.seq);
				out_u64(o, "ckpt_seq", p->h.ckpt_seq);
				out_time(o, "time_ns", p->h.timestamp_ns);
				out_u64(o, "nblocks", p->h.nblocks);
				out_hex(o, "flags", p->h.flags);
				out_bool(o, "end", p->h.flags & LFS_PSEG_END);
				out_u64(o, "next_seg", p->h.next_seg);
				out_bool(o, "stale", p->stale);
				dump_pseg_blocks(d, first + p->off, p);
				out_end(o);
			}
			out_end(o);
		}
		out_end(o);
	}
	out_end(o);
}

/* Impossible table entries reported one by one: past these, a table
 * block is garbage and a count says as much. */
#define BAD_SHOWN 5

static void
dump_usage(struct dump *d)
{
	struct out *o = &d->o;
	const uint64_t *a = d->r[d->newest].addrs + d->nimap;
	uint64_t written = 0, bad = 0;
	for (uint32_t b = 0; b < d->nsut; b++)
		written += a[b] != 0;
	out_begin(o, "usage_table", '}');
	out_u64(o, "checkpoint_region", (uint64_t)d->newest);
	out_u64(o, "checkpoint_seq", d->r[d->newest].h.ckpt_seq);
	out_u64(o, "blocks", d->nsut);
	out_u64(o, "blocks_written", written);
	out_begin(o, "entries", ']');
	for (uint64_t s = 0; s < d->sb.nsegs; s++) {
		struct lfs_sut_entry e;
		if (dump_sut_entry(d, s, &e))
			continue; /* reported once per block */
		out_item(o, "seg", s, true);
		out_u64(o, "live_bytes", e.live_bytes);
		out_hex(o, "flags", e.flags);
		out_time(o, "mtime_ns", e.mtime_ns);
		out_end(o);
		if ((uint64_t)e.live_bytes > (uint64_t)d->sb.seg_blocks * d->bs && bad++ < BAD_SHOWN)
			complain(d, "usage table: segment %" PRIu64 " has %u live bytes, more than it holds", s,
				 e.live_bytes);
	}
	out_end(o);
	out_end(o);
	if (bad > BAD_SHOWN)
		complain(d, "usage table: %" PRIu64 " more impossible entries", bad - BAD_SHOWN);
}

static void
dump_imap(struct dump *d)
{
	struct out *o = &d->o;
	const uint64_t *a = d->r[d->newest].addrs;
	uint32_t per = lfs_imap_per_block(d->bs);
	uint64_t written = 0, in_use = 0, bad = 0;
	for (uint32_t b = 0; b < d->nimap; b++)
		written += a[b] != 0;
	out_begin(o, "inode_map", '}');
	out_u64(o, "checkpoint_region", (uint64_t)d->newest);
	out_u64(o, "checkpoint_seq", d->r[d->newest].h.ckpt_seq);
	out_u64(o, "blocks", d->nimap);
	out_u64(o, "blocks_written", written);
	out_begin(o, "entries", ']');
	for (uint32_t b = 0; b < d->nimap; b++) {
		if (!a[b] || dump_table_block(d, "inode map", b, a[b], d->blk))
			continue; /* never written (all free), or reported */
		for (uint32_t i = 0; i < per && (uint64_t)b * per + i < d->sb.max_inodes; i++) {
			struct lfs_imap_entry e;
			lfs_imap_entry_decode(&e, d->blk + (size_t)i * LFS_IMAP_ENTRY_SIZE);
			if (!(e.flags & LFS_IMAP_INUSE))
				continue;
			uint64_t ino = (uint64_t)b * per + i;
			in_use++;
			out_item(o, "ino", ino, true);
			out_u64(o, "daddr", e.daddr);
			out_u64(o, "slot", e.slot);
			out_u64(o, "version", e.version);
			out_hex(o, "flags", e.flags);
			out_bool(o, "orphan", e.flags & LFS_IMAP_ORPHAN);
			out_end(o);
			if ((!in_log(d, e.daddr) || e.slot >= d->bs / LFS_INODE_ALIGN) && bad++ < BAD_SHOWN)
				complain(d, "inode map: inode %" PRIu64 " has an impossible address: block %" PRIu64
					 " slot %u", ino, e.daddr, e.slot);
		}
	}
	out_end(o);
	if (bad > BAD_SHOWN)
		complain(d, "inode map: %" PRIu64 " more impossible entries", bad - BAD_SHOWN);
	out_u64(o, "in_use", in_use);
	out_end(o);
}

/* ---------------------------------------------------------------- */

static void
usage(FILE *f)
{
	fprintf(f, "usage: dumplfs [-j] [-s] [-i] [-u] IMAGE\n"
		   "  -s  every partial segment and the blocks it names\n"
		   "  -u  the segment usage table of the newest checkpoint\n"
		   "  -i  the in-use entries of the inode map of the newest checkpoint\n"
		   "  -j  print one JSON object\n" LFS_TOOL_HELP_LINES);
}

int
main(int argc, char **argv)
{
	bool json = false, segs = false, imap = false, sut = false;
	static const struct lfs_tool tool = { "dumplfs", usage, 2 };
	static const struct option longopts[] = { LFS_TOOL_LONGOPTS, { NULL, 0, NULL, 0 } };
	int c;
	while ((c = getopt_long(argc, argv, "jsiu" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 's': segs = true; break;
		case 'i': imap = true; break;
		case 'u': sut = true; break;
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

	struct out *o = &d.o;
	out_init(o, json);
	out_begin(o, NULL, '}');
	out_str(o, "image", d.path);
	out_u64(o, "image_bytes", d.dev.size_bytes);
	dump_super(&d);
	dump_checkpoints(&d);
	if (segs || !(imap || sut))
		dump_segments(&d, segs);
	if ((imap || sut) && d.newest < 0)
		complain(&d, "no checkpoint to read the %s from",
			 imap && sut ? "inode map and usage table" : imap ? "inode map" : "usage table");
	if (sut && d.newest >= 0)
		dump_usage(&d);
	if (imap && d.newest >= 0)
		dump_imap(&d);
	out_end(o);

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
