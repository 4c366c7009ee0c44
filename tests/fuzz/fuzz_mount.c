/*
 * fuzz_mount.c — structure-aware fuzzing of the mount path, past the
 * checksums.
 *
 * crc32 stops only accidents: a fuzzer that flips bytes has everything it
 * makes rejected at the first crc, and reaches none of the decoders
 * behind it.  So an input here is a list of edits to decoded fields
 * (tests/lib/imgedit.h), records of
 *
 *   u8 target | u8 field | u8 op | u8 0 | le32 which | le32 sub | le64 value
 *
 * applied to a copy of a small image built once (files inline and in
 * blocks, a sparse file three levels deep, a directory of several blocks,
 * a symlink, a fifo, xattrs, one file's in leaves and value blocks, hard
 * links, a file of unwritten blocks (fallocate) with writes into them,
 * two snapshots and plain checkpoints kept, with blocks and
 * records held for them in two pages of the held table, and psegs after
 * the last checkpoint with replaced-address and relink records); then
 * every checksum is re-sealed.  `target` picks the superblock, a
 * checkpoint region, a summary header or entry, an inode record, an
 * inode map or usage-table entry, a block-map node, a directory record,
 * an xattr block or any block, a node or entry of the held table or the
 * checkpoint history, a replaced-address record, a relink record, an
 * xattr root or entry; `which` and `sub` are taken modulo what exists,
 * so every input names real structures.
 *
 * Each image is mounted read-only and checked by fsck, its snapshots
 * listed and each kept checkpoint opened as a view (in process, and
 * through the control operations as another process's view reads it)
 * and walked; then a kept checkpoint is mounted (-o snapshot=); then the
 * image is mounted read-write for a short workload (walk and read
 * everything, write, truncate, punch, create, unlink, rename, a snapshot
 * made and one deleted, the cleaner's MOVE both through
 * lfs_clean_segment and the control operations, a checkpoint, unmount),
 * then mounted once more and walked; last, fsck.lfs --salvage copies
 * what its log holds into a directory, removed after.  Errors are
 * expected; a crash, a hang or a sanitizer report is a bug.
 *
 * LLVMFuzzerCustomMutator makes edits that name existing structures with
 * values at the edges (0, all ones, block and segment sizes, 2^31, 2^32,
 * addresses of other blocks, small steps), and otherwise leaves the bytes
 * to libFuzzer's own mutator.  tests/fuzz/fuzz_replay.c drives the same
 * functions without libFuzzer (gcc, make check).
 */
#include "ctl_ops.h"
#include "imgedit.h"
#include "lfs_int.h"
#include "salvage.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* 46 segments of 64 KiB: the base's live data, about 120 blocks with what
 * its snapshots hold, fits the 227 blocks of capacity with room for the
 * workload's writes (2 MiB offers 115) */
#define IMG (3u << 20)
#define EDIT_SIZE 20
/* plain checkpoints are kept this long: past any run */
#define PROTECT_S (1u << 31)
#define XATTR_BIG 6000          /* a value in two blocks of its own */
#define XATTR_MANY 40           /* attributes that fill more than a root */
#define HELD_RECORDS 120        /* records held by a snapshot: two pages of entries */

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

static uint8_t *base;
static struct img base_im;      /* the index of base, shared by every input */
static int memfd = -1;
static char path[64];
static const struct lfs_cred root = { 0, 0, 0 };
/* Images that mounted read-write, and of those, that also unmounted
 * cleanly: how far inputs get (fuzz_replay reports them). */
unsigned long long fuzz_mounted, fuzz_unmounted;

static void
check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_mount: building the base image: %s failed\n", what);
		abort();
	}
}

static uint64_t
mk(struct lfs_fs *fs, uint64_t dir, const char *name, size_t len, uint64_t off)
{
	static char buf[20000];
	memset(buf, 'x', sizeof(buf));
	struct stat st;
	check(lfs_create(fs, dir, name, 0644, true, &root, &st) == 0, name);
	if (len)
		check(lfs_write(fs, st.st_ino, buf, len, (off_t)off, NULL) == (ssize_t)len, name);
	return st.st_ino;
}

/* Attributes in an indexed root: leaves of entries and a value in
 * blocks of its own. */
static void
build_xattrs(struct lfs_fs *fs, uint64_t ino)
{
	static char val[XATTR_BIG];
	memset(val, 'v', sizeof(val));
	check(lfs_setxattr(fs, ino, "user.big", val, sizeof(val), 0) == 0, "xattr value blocks");
	char name[32];
	for (int i = 0; i < XATTR_MANY; i++) {
		snprintf(name, sizeof(name), "user.attr-%02d", i);
		check(lfs_setxattr(fs, ino, name, val, 100, 0) == 0, "xattr leaves");
	}
}

/* Two snapshots and a plain checkpoint kept (the protection period), and
 * what the live tree let go of since held for them: inode records,
 * data blocks, an xattr leaf, inode-map blocks.  Few: fsck reads every
 * kept checkpoint's tree, the cost of each input. */
static void
build_snapshots(struct lfs_fs *fs, uint64_t many, uint64_t big, uint64_t xa)
{
	uint64_t seq;
	check(lfs_snapshot_make(fs, "first", &seq) == 0, "snapshot");
	check(lfs_set_protection(fs, PROTECT_S) == 0, "protection");
	char name[40];
	struct stat st, set = { .st_mode = 0600 };
	for (int i = 0; i < HELD_RECORDS; i++) {
		snprintf(name, sizeof(name), "entry-with-a-longer-name-%d", i);
		check(lfs_lookup(fs, many, name, &st) == 0, "lookup");
		check(lfs_setattr(fs, st.st_ino, &set, LFS_SET_MODE, &st) == 0, "chmod");
		lfs_forget(fs, st.st_ino, 1);
	}
	check(lfs_write(fs, big, "snapped", 7, 100, NULL) == 7, "overwrite");
	check(lfs_setxattr(fs, xa, "user.attr-07", "changed", 7, 0) == 0, "xattr");
	check(lfs_snapshot_make(fs, "second", &seq) == 0, "snapshot");
	check(lfs_unlink(fs, many, "entry-with-a-longer-name-7") == 0, "unlink");
	check(lfs_checkpoint(fs) == 0, "checkpoint");
}

static void
build_base(void)
{
	memfd = memfd_create("lfs-fuzz", 0);
	check(memfd >= 0 && ftruncate(memfd, IMG) == 0, "memfd");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	struct lfs_super sb;
	check(lfs_plan_geometry(&sb, IMG, 4096, 64 << 10, 1024) == 0, "geometry");
	memset(sb.uuid, 0x5a, sizeof(sb.uuid)); /* the same image, and instances, every run */
	check(lfs_format(path, &sb, 0, 0) == 0, "format");
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.ckpt_interval_s = 0;
	o.ckpt_segs = 0;
	struct lfs_fs *fs;
	check(lfs_mount(path, &o, &fs) == 0, "mount");
	struct stat d, sub, many, st;
	check(lfs_mkdir(fs, LFS_ROOT_INO, "dir", 0755, &root, &d) == 0, "mkdir");
	check(lfs_mkdir(fs, d.st_ino, "sub", 0755, &root, &sub) == 0, "mkdir");
	check(lfs_mkdir(fs, LFS_ROOT_INO, "many", 0755, &root, &many) == 0, "mkdir");
	mk(fs, d.st_ino, "small", 5, 0);
	mk(fs, sub.st_ino, "deep", 3000, 0);
	uint64_t big = mk(fs, LFS_ROOT_INO, "big", 20000, 0);
	check(lfs_write(fs, big, "tail", 4, 70000, NULL) == 4, "indirect");
	check(lfs_setxattr(fs, big, "user.k", "v", 1, 0) == 0, "xattr");
	uint64_t sparse = mk(fs, LFS_ROOT_INO, "sparse", 10, 1ull << 30); /* a tree 3 levels deep */
	check(lfs_setxattr(fs, sparse, "trusted.t", "value", 5, 0) == 0, "xattr");
	check(lfs_symlink(fs, d.st_ino, "link", "../big", &root, &st) == 0, "symlink");
	check(lfs_link(fs, big, d.st_ino, "hard", &st) == 0, "link");
	check(lfs_mknod(fs, LFS_ROOT_INO, "fifo", S_IFIFO | 0644, 0, &root, &st) == 0, "mknod");
	char name[32];
	for (int i = 0; i < 300; i++) { /* three directory blocks */
		snprintf(name, sizeof(name), "entry-with-a-longer-name-%d", i);
		mk(fs, many.st_ino, name, i % 7 == 0 ? 100 : 0, 0);
	}
	uint64_t xa = mk(fs, LFS_ROOT_INO, "xa", 0, 0);
	build_xattrs(fs, xa);
	check(lfs_write(fs, big, "rewritten", 9, 4096, NULL) == 9, "overwrite"); /* dead blocks to clean */
	/* unwritten blocks: direct and leaf slots marked, two written */
	uint64_t resv = mk(fs, LFS_ROOT_INO, "resv", 0, 0);
	check(lfs_fallocate(fs, resv, 0, 0, 40 * 4096) == 0, "fallocate");
	check(lfs_write(fs, resv, "in", 2, 3 * 4096, NULL) == 2, "write into unwritten");
	check(lfs_write(fs, resv, "in", 2, 20 * 4096, NULL) == 2, "write into unwritten");
	check(lfs_checkpoint(fs) == 0, "checkpoint");
	build_snapshots(fs, many.st_ino, big, xa);
	/* after the checkpoint: rolled forward at mount */
	mk(fs, LFS_ROOT_INO, "after", 6000, 0);
	check(lfs_unlink(fs, d.st_ino, "small") == 0, "unlink");
	check(lfs_rename(fs, LFS_ROOT_INO, "big", d.st_ino, "big2", 0) == 0, "rename");
	check(lfs_write(fs, sparse, "more", 4, 8192, NULL) == 4, "write");
	check(lfs_write(fs, big, "again", 5, 0, NULL) == 5, "overwrite"); /* a replaced address listed */
	/* rolled forward: records that reserve and give back unwritten blocks */
	check(lfs_fallocate(fs, resv, FALLOC_FL_KEEP_SIZE, 40 * 4096, 16 * 4096) == 0, "fallocate");
	check(lfs_fallocate(fs, resv, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 8 * 4096, 4 * 4096) == 0, "punch");
	check(lfs_fsync(fs, LFS_ROOT_INO, false) == 0, "fsync");
	/* an overwrite in tree 1, fsynced: a relink record */
	check(lfs_write(fs, sparse, "relink", 6, 1ll << 30, NULL) == 6, "overwrite");
	check(lfs_fsync(fs, sparse, false) == 0, "fsync");
	lfs_abandon(fs);
	base = malloc(IMG);
	check(base && pread(memfd, base, IMG, 0) == IMG, "read back");
	check(img_open(&base_im, base, IMG) == 0, "index");
}

const char *
fuzz_base_path(void)
{
	return path;
}

const struct img *
fuzz_base_index(void)
{
	return &base_im;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* fsck's report of each damaged image is of no use here */
	if (!freopen("/dev/null", "w", stdout))
		abort();
	build_base();
	return 0;
}

/* ---------------------------------------------------------------- */
/* The workload.                                                     */

#define MAX_NAMES 48

struct names {
	char name[MAX_NAMES][LFS_NAME_MAX + 1];
	int n;
};

/* readdir calls back with the filesystem locked: collect, visit later */
static int
collect(void *ctx, const char *name, const struct stat *st, off_t next)
{
	struct names *l = ctx;
	(void)st;
	(void)next;
	if (strcmp(name, ".") && strcmp(name, "..") && l->n < MAX_NAMES)
		snprintf(l->name[l->n++], LFS_NAME_MAX + 1, "%s", name);
	return l->n == MAX_NAMES;
}

struct found {
	uint64_t files[8], dirs[8];
	int nfiles, ndirs;
	char fname[8][LFS_NAME_MAX + 1];
	uint64_t fdir[8];
};

static void
visit_file(struct lfs_fs *fs, uint64_t ino, const struct stat *st)
{
	static char buf[65536];
	for (off_t off = 0; off < st->st_size && off < (4 << 20); off += sizeof(buf))
		if (lfs_read(fs, ino, buf, sizeof(buf), off) <= 0)
			break;
	lfs_read(fs, ino, buf, 100, st->st_size > 50 ? st->st_size - 50 : 0);
	lfs_read(fs, ino, buf, 100, (off_t)1 << 30); /* in a hole, or past the end */
}

static void
visit_xattrs(struct lfs_fs *fs, uint64_t ino)
{
	char list[1024], val[512];
	ssize_t n = lfs_listxattr(fs, ino, list, sizeof(list));
	for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(list + i) + 1)
		lfs_getxattr(fs, ino, list + i, val, sizeof(val));
	lfs_listxattr(fs, ino, NULL, 0);
}

static void
walk(struct lfs_fs *fs, uint64_t dir, int depth, struct found *f)
{
	struct names *l = malloc(sizeof(*l));
	if (!l)
		return;
	l->n = 0;
	lfs_readdir(fs, dir, 0, collect, l);
	lfs_readdir(fs, dir, 5, collect, l); /* from a cookie that may be mid-record */
	for (int i = 0; i < l->n; i++) {
		struct stat st;
		if (lfs_lookup(fs, dir, l->name[i], &st))
			continue;
		visit_xattrs(fs, st.st_ino);
		if (S_ISREG(st.st_mode)) {
			visit_file(fs, st.st_ino, &st);
			if (f->nfiles < 8) {
				f->fdir[f->nfiles] = dir;
				snprintf(f->fname[f->nfiles], LFS_NAME_MAX + 1, "%s", l->name[i]);
				f->files[f->nfiles++] = st.st_ino;
			}
		} else if (S_ISLNK(st.st_mode)) {
			char target[4096];
			lfs_readlink(fs, st.st_ino, target, sizeof(target));
		} else if (S_ISDIR(st.st_mode)) {
			if (f->ndirs < 8)
				f->dirs[f->ndirs++] = st.st_ino;
			if (depth < 4)
				walk(fs, st.st_ino, depth + 1, f);
		}
		lfs_forget(fs, st.st_ino, 1);
	}
	struct stat st;
	lfs_lookup(fs, dir, "..", &st);
	lfs_lookup(fs, dir, "no-such-name", &st);
	free(l);
}

static void
change(struct lfs_fs *fs, const struct found *f)
{
	static char buf[9000];
	memset(buf, 'y', sizeof(buf));
	struct stat st;
	if (f->nfiles > 0) {
		uint64_t ino = f->files[0];
		lfs_write(fs, ino, buf, 100, 0, NULL);
		lfs_write(fs, ino, buf, sizeof(buf), 5000, NULL); /* out of the inode, if inline */
		lfs_fallocate(fs, ino, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 10, 70000);
		lfs_fallocate(fs, ino, 0, 60000, 100000); /* unwritten blocks in a crafted map */
		st.st_size = 100;
		lfs_setattr(fs, ino, &st, LFS_SET_SIZE, &st);
	}
	if (f->nfiles > 1) {
		lfs_fallocate(fs, f->files[1], FALLOC_FL_ZERO_RANGE, 0, 3);
		lfs_unlink(fs, f->fdir[1], f->fname[1]);
	}
	if (f->nfiles > 2)
		lfs_rename(fs, f->fdir[2], f->fname[2], LFS_ROOT_INO, "fz-renamed", 0);
	for (int i = -1; i < f->ndirs && i < 3; i++) {
		uint64_t dir = i < 0 ? LFS_ROOT_INO : f->dirs[i];
		if (lfs_create(fs, dir, "fz-new", 0644, false, &root, &st) == 0) {
			lfs_write(fs, st.st_ino, buf, sizeof(buf), 0, NULL);
			lfs_setxattr(fs, st.st_ino, "user.fz", "1", 1, 0);
			lfs_forget(fs, st.st_ino, 1);
		}
		if (lfs_mkdir(fs, dir, "fz-dir", 0755, &root, &st) == 0) {
			lfs_forget(fs, st.st_ino, 1);
			lfs_rmdir(fs, dir, "fz-dir");
		}
	}
	lfs_fsync(fs, LFS_ROOT_INO, false);
}

struct gather {
	struct lfs_ctl_blk b[64];
	uint32_t n;
};

static int
gather(struct lfs_fs *fs, const struct lfs_pseg_entry *e, uint64_t addr, const uint8_t *blk, void *ctx)
{
	struct gather *g = ctx;
	(void)fs;
	(void)blk;
	if (g->n < 64)
		g->b[g->n++] = (struct lfs_ctl_blk){ .addr = addr, .lblk = e->lblk, .ino = e->ino,
						    .version = e->version, .kind = e->kind };
	return 0;
}

/* The cleaner's MOVE: the daemon's own cleaning of one segment, and the
 * control operations a cleaner would send for another. */
static void
clean(struct lfs_fs *fs)
{
	int cleaned = 0;
	for (uint64_t s = 0; s < fs->sb.nsegs && cleaned < 2; s++) {
		if (fs->segs[s].state != LFS_SEG_DIRTY)
			continue;
		uint64_t moved = 0;
		if (cleaned++ == 0) {
			lfs_clean_segment(fs, s, &moved);
			continue;
		}
		struct gather *g = calloc(1, sizeof(*g));
		if (!g)
			return;
		lfs_clean_scan(fs, s, gather, g);
		lfs_ctl_live(fs, g->b, g->n);
		lfs_ctl_move(fs, g->b, g->n, 0, &moved);
		lfs_ctl_segclean(fs, &s, 1, &moved);
		free(g);
	}
}

/* ---------------------------------------------------------------- */
/* Snapshots: the history, the held table and the views they give.    */

#define MAX_VIEWS 2

/* A view as another process has it: every block through the control
 * operations of the filesystem's daemon. */
static int
remote_read(void *ctx, uint64_t seq, uint64_t addr, uint32_t n, void *buf)
{
	uint64_t len = 0;
	int err = 0;
	/* in the daemon's pieces, as fuse_snapshot.c asks for them */
	for (uint32_t i = 0, k; i < n && !err; i += k, buf = (uint8_t *)buf + len) {
		k = n - i < 4 ? n - i : 4;
		err = lfs_ctl_view_read(ctx, seq, addr + i, k, buf, &len);
	}
	return err;
}

static int
remote_imap(void *ctx, uint64_t seq, uint64_t *addrs, uint32_t n, uint32_t *root)
{
	uint32_t got;
	uint64_t total;
	int err = lfs_ctl_view_imap(ctx, seq, 0, n, addrs, &got, &total, root);
	return err ? err : got == n ? 0 : -EIO;
}

static void
walk_view(struct lfs_fs *v)
{
	struct found f = { .nfiles = 0 };
	struct statvfs sv;
	lfs_statfs(v, &sv);
	walk(v, LFS_ROOT_INO, 0, &f);
	lfs_abandon(v);
}

/* List the kept checkpoints and read a few through views; *spec gets
 * the number of the first kept one, for a snapshot mount. */
static void
views(struct lfs_fs *fs, char *spec, size_t len)
{
	struct lfs_ckpt_info *ci;
	size_t n;
	uint64_t held;
	if (lfs_snapshot_list(fs, &ci, &n, &held))
		return;
	struct lfs_ctl_ckpt out[4];
	struct lfs_ctl_resp resp;
	lfs_ctl_snap_list(fs, 1, 4, out, &resp);
	struct lfs_fs *v;
	for (size_t i = 0, opened = 0; i < n && opened < MAX_VIEWS; i++) {
		if (!(ci[i].flags & LFS_CKPT_INFO_KEPT))
			continue;
		char s[24];
		snprintf(s, sizeof(s), "%llu", (unsigned long long)ci[i].seq);
		if (!opened++)
			snprintf(spec, len, "%s", s);
		if (lfs_view_open(fs, ci[i].name[0] && i % 2 ? ci[i].name : s, false, &v) == 0)
			walk_view(v);
	}
	for (size_t i = n; i-- > 0;) {
		if (!(ci[i].flags & LFS_CKPT_INFO_KEPT))
			continue;
		struct lfs_view_source src = { remote_read, remote_imap, fs };
		if (lfs_view_open_remote(path, ci[i].seq, &src, &v) == 0)
			walk_view(v);
		break;
	}
	free(ci);
}

/* A snapshot made and the oldest kept checkpoint let go: the history
 * and held table written again, what was held for it released. */
static void
change_snapshots(struct lfs_fs *fs)
{
	uint64_t seq;
	lfs_snapshot_make(fs, "fz-snap", &seq);
	struct lfs_ckpt_info *ci;
	size_t n;
	uint64_t held;
	if (lfs_snapshot_list(fs, &ci, &n, &held))
		return;
	for (size_t i = 0; i < n; i++)
		if (ci[i].flags & LFS_CKPT_INFO_KEPT) {
			lfs_snapshot_delete(fs, ci[i].seq);
			break;
		}
	if (n > 1)
		lfs_snapshot_keep(fs, ci[n - 1].seq, true, "fz-kept");
	free(ci);
}

/* A kept checkpoint mounted read-only (lfs -o snapshot=). */
static void
mount_snapshot(struct lfs_opts o, const char *spec)
{
	struct lfs_fs *fs;
	o.readonly = true;
	o.snapshot = spec;
	if (lfs_mount(path, &o, &fs) == 0)
		walk_view(fs);
}

static int
remove_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(p);
	return 0;
}

/* fsck.lfs --salvage of the image into a directory of its own, in
 * memory (/dev/shm) when there is one: its files are made and removed
 * again for every input. */
static void
salvage(void)
{
	char dir[] = "/dev/shm/lfs-fuzz-salvage.XXXXXX", alt[] = "/tmp/lfs-fuzz-salvage.XXXXXX";
	char *at = mkdtemp(dir) ? dir : mkdtemp(alt);
	struct lfs_bdev dev;
	struct lfs_super sb;
	struct lfs_super_where w;
	check(at != NULL, "mkdtemp");
	if (lfs_bdev_open(&dev, path, true) == 0) {
		if (lfs_super_find(&dev, 0, &sb, &w) == 0) {
			struct lfs_salvage_report r;
			dev.block_size = sb.block_size;
			lfs_salvage(&dev, &sb, at, &r);
		}
		lfs_bdev_close(&dev);
	}
	nftw(at, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void
use_image(void)
{
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.readonly = true;
	o.ckpt_interval_s = 0;
	struct lfs_fs *fs;
	char spec[24] = "second";
	if (lfs_mount(path, &o, &fs) == 0) {
		uint64_t problems;
		lfs_fsck(fs, &problems);
		views(fs, spec, sizeof(spec));
		lfs_abandon(fs);
	}
	mount_snapshot(o, spec);
	o.readonly = false;
	if (lfs_mount(path, &o, &fs) == 0) {
		struct found f = { .nfiles = 0 };
		struct statvfs sv;
		lfs_statfs(fs, &sv);
		walk(fs, LFS_ROOT_INO, 0, &f);
		change(fs, &f);
		change_snapshots(fs);
		clean(fs);
		lfs_checkpoint(fs);
		fuzz_mounted++;
		fuzz_unmounted += lfs_unmount(fs) == 0;
	}
	o.readonly = true;
	if (lfs_mount(path, &o, &fs) == 0) {
		struct found f = { .nfiles = 0 };
		walk(fs, LFS_ROOT_INO, 0, &f);
		lfs_abandon(fs);
	}
	salvage();
}

/* ---------------------------------------------------------------- */

static void
edit_decode(struct img_edit *e, const uint8_t *p)
{
	e->target = p[0];
	e->field = p[1];
	e->op = p[2];
	e->which = lfs_get32(p + 4);
	e->sub = lfs_get32(p + 8);
	e->value = lfs_get64(p + 12);
}

static void
edit_encode(const struct img_edit *e, uint8_t *p)
{
	p[0] = e->target;
	p[1] = e->field;
	p[2] = e->op;
	p[3] = 0;
	lfs_put32(p + 4, e->which);
	lfs_put32(p + 8, e->sub);
	lfs_put64(p + 12, e->value);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[IMG];
	memcpy(buf, base, IMG);
	struct img im = base_im;
	im.buf = buf;
	for (size_t p = 0; p + EDIT_SIZE <= size; p += EDIT_SIZE) {
		struct img_edit e;
		edit_decode(&e, data + p);
		e.target %= IMG_NTARGETS;
		img_apply(&im, &e);
	}
	img_reseal(&im);
	if (pwrite(memfd, buf, IMG, 0) != IMG)
		abort();
	use_image();
	return 0;
}

/* ---------------------------------------------------------------- */
/* The mutator: edits that name what exists, with values at the edges. */

static uint64_t
next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t
edge_value(uint64_t *r)
{
	const struct lfs_super *sb = &base_im.sb;
	uint64_t bs = sb->block_size, raw = base_im.count[IMG_RAW];
	const uint64_t edges[] = {
		0, 1, 2, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000u, 0xffffffffu,
		1ull << 32, (1ull << 32) + 1, INT64_MAX, (uint64_t)INT64_MAX + 1, UINT64_MAX, bs - 1, bs, bs + 1,
		bs - LFS_INODE_HDR_SIZE, bs - LFS_INODE_HDR_SIZE + 1, 64 * bs, 0xffffffffull * bs,
		sb->seg_blocks, sb->seg_blocks - 1, sb->nsegs, sb->nsegs - 1, sb->seg0, sb->seg0 - 1,
		sb->nblocks, sb->nblocks - 1, sb->max_inodes, sb->max_inodes - 1, LFS_DIR_MAX_SIZE,
		LFS_NODE_FLAG, 040755, 0100644, 0120777, LFS_DI_RELINK, LFS_DI_RELINK | LFS_DI_INLINE,
		LFS_XATTR_MAGIC, LFS_XATTR_SIZE_MAX, LFS_XATTR_SIZE_MAX + 1, LFS_XATTR_NAME_MAX + 1,
		lfs_xattr_max_slots(bs), bs / LFS_HELD_ENTRY_SIZE, bs / LFS_HELD_ENTRY_SIZE + 1,
		bs / LFS_HIST_ENTRY_SIZE, bs / LFS_HIST_ENTRY_SIZE + 1, (uint64_t)bs / 8 * (bs / 8) * (bs / LFS_HIST_ENTRY_SIZE),
		LFS_BK_TABLE, LFS_BK_HELD, LFS_BK_IMAP, 0,
	};
	switch (next(r) % 5) {
	case 0: /* the address of another block in the log */
		return raw ? base_im.at[IMG_RAW][next(r) % raw] / bs : 0;
	case 1:
		return next(r);
	case 2: /* near the last checkpoint: history records, held ranges */
		return base_im.ckpt_seq + next(r) % 6 - 4;
	case 3: /* an xattr slot: a block's address and a kind */
		return (raw ? base_im.at[IMG_RAW][next(r) % raw] / bs : 0) | (next(r) % 4) << 56;
	default:
		return edges[next(r) % (sizeof(edges) / sizeof(edges[0]))];
	}
}

static void
random_edit(struct img_edit *e, uint64_t *r)
{
	do
		e->target = (uint8_t)(next(r) % IMG_NTARGETS);
	while (!base_im.count[e->target]);
	e->field = (uint8_t)(next(r) % img_nfields(e->target));
	e->which = (uint32_t)(next(r) % base_im.count[e->target]);
	e->sub = (uint32_t)next(r);
	if (next(r) % 3 == 0) { /* a small step from what is there */
		e->op = next(r) % 2 ? IMG_ADD : IMG_XOR;
		e->value = e->op == IMG_ADD ? (uint64_t)((int64_t)(next(r) % 33) - 16) : 1ull << (next(r) % 64);
	} else {
		e->op = IMG_SET;
		e->value = edge_value(r);
	}
}

size_t
LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	uint64_t r = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t n = size / EDIT_SIZE, cap = max_size / EDIT_SIZE;
	struct img_edit e;
	switch (next(&r) % 8) {
	case 0: case 1: case 2: /* a new edit */
		if (n < cap) {
			random_edit(&e, &r);
			edit_encode(&e, data + n * EDIT_SIZE);
			return (n + 1) * EDIT_SIZE;
		}
		/* fall through */
	case 3: case 4: /* replace one */
		if (n > 0) {
			random_edit(&e, &r);
			edit_encode(&e, data + next(&r) % n * EDIT_SIZE);
			return n * EDIT_SIZE;
		}
		break;
	case 5: /* another value for one */
		if (n > 0) {
			uint8_t *p = data + next(&r) % n * EDIT_SIZE;
			edit_decode(&e, p);
			e.value = edge_value(&r);
			edit_encode(&e, p);
			return n * EDIT_SIZE;
		}
		break;
	case 6: /* drop one */
		if (n > 1) {
			size_t i = next(&r) % n;
			memmove(data + i * EDIT_SIZE, data + (i + 1) * EDIT_SIZE, (n - i - 1) * EDIT_SIZE);
			return (n - 1) * EDIT_SIZE;
		}
		break;
	}
	return LLVMFuzzerMutate(data, size, max_size);
}
