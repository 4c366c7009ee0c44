/*
 * check_dir.c — mirrors dir.c, the directories: blocks tiled by
 * variable-length records (format.h: le32 ino | le16 rec_len | u8
 * name_len | u8 type | name, 8-aligned) with an in-memory index beside
 * them.  Holds it to the record layout the format fixes, to records that
 * never move (a delete frees its record or merges it into the one
 * before, an insert takes a free record or splits off slack), so a
 * record's position is a readdir cookie that survives removals; to
 * reusing freed space before growing; to the 255-byte name limit; to
 * the empty check rmdir relies on; and to refusing records that are
 * not valid when a block is read.
 *
 * Entries are added with lfs_dir_add straight to a directory, all naming
 * one real file; every test removes them again before the image is
 * checked, so fsck sees the directories as the API left them.
 */
#include "testfs.h"

#include <errno.h>
#include <string.h>

#define REG 8                  /* DT_REG */

struct walk {
	size_t n, cap, limit;       /* limit: stop after that many (0: never) */
	uint64_t *pos;
	uint32_t *ino;
	char (*name)[LFS_NAME_MAX + 1];
};

static int
walk_one(void *ctx, const struct lfs_dirent *d, uint64_t pos)
{
	struct walk *w = ctx;
	ck_assert_uint_lt(w->n, w->cap);
	w->pos[w->n] = pos;
	w->ino[w->n] = d->ino;
	memcpy(w->name[w->n], d->name, d->name_len);
	w->name[w->n][d->name_len] = '\0';
	w->n++;
	return w->limit && w->n >= w->limit;
}

/* The entries from `pos` on (at most `limit`, 0: all), as iterate gives them. */
static void
walk(struct lfs_fs *fs, struct lfs_inode *dp, uint64_t pos, size_t limit, struct walk *w)
{
	if (!w->cap) {
		w->cap = 40000;
		w->pos = malloc(w->cap * sizeof(*w->pos));
		w->ino = malloc(w->cap * sizeof(*w->ino));
		w->name = malloc(w->cap * sizeof(*w->name));
	}
	w->n = 0;
	w->limit = limit;
	ck_assert_int_eq(lfs_dir_iterate(fs, dp, pos, walk_one, w), 0);
}

static int
count_one(void *ctx, const struct lfs_dirent *d, uint64_t pos)
{
	(void)d;
	(void)pos;
	(*(size_t *)ctx)++;
	return 0;
}

static void
walk_free(struct walk *w)
{
	free(w->pos);
	free(w->ino);
	free(w->name);
}

/* A scratch image with an empty directory "d" and a file "t" for the
 * entries to name. */
static struct lfs_fs *
dir_fs(struct lfs_inode **dp, uint32_t *target)
{
	testfs_make(64 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	struct stat st;
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "d", 0755, &testfs_me, &st), 0);
	lfs_forget(fs, st.st_ino, 1);
	ck_assert_int_eq(lfs_iget(fs, st.st_ino, dp), 0);
	uint64_t t = testfs_mkfile(fs, LFS_ROOT_INO, "t");
	lfs_forget(fs, t, 1);
	*target = (uint32_t)t;
	return fs;
}

static struct lfs_inode *
dir_inode(struct lfs_fs *fs)
{
	struct stat st;
	struct lfs_inode *dp;
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "d", &st), 0);
	lfs_forget(fs, st.st_ino, 1);
	ck_assert_int_eq(lfs_iget(fs, st.st_ino, &dp), 0);
	return dp;
}

/* `len` bytes: `c` repeated, then the number i. */
static const char *
long_name(char *buf, size_t len, char c, unsigned i)
{
	memset(buf, c, len);
	char num[16];
	int k = snprintf(num, sizeof(num), "%u", i);
	memcpy(buf + len - (size_t)k, num, (size_t)k);
	buf[len] = '\0';
	return buf;
}

/* prefix-NNNNN: 10 bytes, a 24-byte record */
static const char *
numbered(char nm[16], const char *prefix, unsigned i)
{
	snprintf(nm, 16, "%.4s-%05u", prefix, i);
	return nm;
}

static uint64_t
pos_of(struct lfs_fs *fs, struct lfs_inode *dp, const char *name)
{
	struct walk w = { 0 };
	walk(fs, dp, 0, 0, &w);
	uint64_t pos = UINT64_MAX;
	for (size_t i = 0; i < w.n; i++)
		if (strcmp(w.name[i], name) == 0) {
			ck_assert_uint_eq(pos, UINT64_MAX);
			pos = w.pos[i];
		}
	walk_free(&w);
	return pos;
}

static const uint8_t *
dir_block(struct lfs_fs *fs, struct lfs_inode *dp, uint64_t b)
{
	struct lfs_page *pg;
	ck_assert_int_eq(lfs_file_get_page(fs, dp, b, false, false, &pg), 0);
	return pg->data;
}

/* The record at `off` of blk, read byte by byte as format.h lays it out. */
static void
expect_rec(const uint8_t *blk, uint32_t off, uint32_t ino, uint32_t rec_len, const char *name)
{
	const uint8_t *p = blk + off;
	ck_assert_uint_eq(p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24, ino);
	ck_assert_uint_eq(p[4] | p[5] << 8, rec_len);
	if (!ino)
		return;
	ck_assert_uint_eq(p[6], strlen(name));
	ck_assert_uint_eq(p[7], REG);
	ck_assert_mem_eq(p + 8, name, strlen(name));
}

static void
add(struct lfs_fs *fs, struct lfs_inode *dp, const char *name, uint32_t ino)
{
	ck_assert_int_eq(lfs_dir_add(fs, dp, name, ino, REG), 0);
}

/* The layout format.h fixes: a directory grows by whole blocks, its first
 * record spans the block, each insert splits the slack off the record
 * before it, a record is its 8-byte header and name rounded up to 8, a
 * 255-byte name takes 264 bytes, and one that does not fit in the slack
 * left starts a new block.  fsck and older readers read these bytes. */
START_TEST(records_tile_blocks)
{
	struct lfs_inode *dp;
	uint32_t t;
	struct lfs_fs *fs = dir_fs(&dp, &t);
	ck_assert_uint_eq(dp->di.size, 0);
	add(fs, dp, "a", t);
	ck_assert_uint_eq(dp->di.size, 4096);
	expect_rec(dir_block(fs, dp, 0), 0, t, 4096, "a");
	add(fs, dp, "bcdefghij", t);
	char n255[256];
	add(fs, dp, long_name(n255, 255, 'x', 0), t);
	const uint8_t *blk = dir_block(fs, dp, 0);
	expect_rec(blk, 0, t, 16, "a");
	expect_rec(blk, 16, t, 24, "bcdefghij");
	expect_rec(blk, 40, t, 4056, n255);
	uint32_t ino = 0;
	uint8_t type = 0;
	ck_assert_int_eq(lfs_dir_lookup(fs, dp, n255, &ino, &type), 0);
	ck_assert_uint_eq(ino, t);
	ck_assert_uint_eq(type, REG);
	/* 14 more long names: 40 + 15 * 264 = 4000, 96 bytes left */
	char nm[256];
	for (unsigned i = 1; i < 15; i++)
		add(fs, dp, long_name(nm, 255, 'x', i), t);
	ck_assert_uint_eq(dp->di.size, 4096);
	expect_rec(dir_block(fs, dp, 0), 40 + 14 * 264, t, 4096 - (40 + 14 * 264), long_name(nm, 255, 'x', 14));
	add(fs, dp, long_name(nm, 255, 'x', 15), t);
	ck_assert_uint_eq(dp->di.size, 8192);
	ck_assert_uint_eq(pos_of(fs, dp, nm), 4096);
	expect_rec(dir_block(fs, dp, 1), 0, t, 4096, nm);
	/* a name made to fit the 96 bytes exactly, once block 0 is offered
	 * again by a delete there: the record then spans to the block's end */
	ck_assert_int_eq(lfs_dir_remove(fs, dp, "a"), 0);
	expect_rec(dir_block(fs, dp, 0), 0, 0, 16, NULL);
	add(fs, dp, long_name(nm, 88, 'y', 0), t);
	ck_assert_uint_eq(pos_of(fs, dp, nm), 4000);
	expect_rec(dir_block(fs, dp, 0), 4000, t, 96, nm);
	ck_assert_uint_eq(dp->di.size, 8192);
	/* the index rebuilt from the blocks finds what was added */
	lfs_dir_free_index(dp);
	ck_assert_int_eq(lfs_dir_lookup(fs, dp, nm, &ino, NULL), 0);
	ck_assert_int_eq(lfs_dir_lookup(fs, dp, "a", &ino, NULL), -ENOENT);
	ck_assert_uint_eq(dp->dir->nentries, 18);
	struct walk w = { 0 };
	walk(fs, dp, 0, 0, &w);
	ck_assert_uint_eq(w.n, 18);
	for (size_t i = 0; i < w.n; i++)
		ck_assert_int_eq(lfs_dir_remove(fs, dp, w.name[i]), 0);
	walk_free(&w);
	testfs_finish(fs);
}
END_TEST

/* A delete merges the record into the one before it, or frees the first
 * record of a block in place; an insert takes the first record with
 * enough slack, in the same block, and the directory does not grow while
 * freed space fits the name.  Removing a name that is not there is
 * ENOENT and changes nothing. */
START_TEST(remove_merges_and_reuses)
{
	struct lfs_inode *dp;
	uint32_t t;
	struct lfs_fs *fs = dir_fs(&dp, &t);
	add(fs, dp, "a", t);
	add(fs, dp, "b", t);
	add(fs, dp, "c", t);
	add(fs, dp, "d", t);
	ck_assert_int_eq(lfs_dir_remove(fs, dp, "b"), 0);
	const uint8_t *blk = dir_block(fs, dp, 0);
	expect_rec(blk, 0, t, 32, "a");
	expect_rec(blk, 32, t, 16, "c");
	expect_rec(blk, 48, t, 4048, "d");
	uint32_t ino;
	ck_assert_int_eq(lfs_dir_lookup(fs, dp, "b", &ino, NULL), -ENOENT);
	ck_assert_int_eq(lfs_dir_remove(fs, dp, "b"), -ENOENT);
	ck_assert_int_eq(lfs_dir_remove(fs, dp, "zz"), -ENOENT);
	add(fs, dp, "e", t);
	ck_assert_uint_eq(pos_of(fs, dp, "e"), 16);
	expect_rec(dir_block(fs, dp, 0), 0, t, 16, "a");
	/* the first record of a block has nothing before it: freed in place */
	ck_assert_int_eq(lfs_dir_remove(fs, dp, "a"), 0);
	expect_rec(dir_block(fs, dp, 0), 0, 0, 16, NULL);
	add(fs, dp, "f", t);
	ck_assert_uint_eq(pos_of(fs, dp, "f"), 0);
	/* the last one: its space goes back to the record before */
	ck_assert_int_eq(lfs_dir_remove(fs, dp, "d"), 0);
	expect_rec(dir_block(fs, dp, 0), 32, t, 4064, "c");
	char nm[128];
	add(fs, dp, long_name(nm, 100, 'z', 1), t);
	ck_assert_uint_eq(pos_of(fs, dp, nm), 48);
	expect_rec(dir_block(fs, dp, 0), 48, t, 4048, nm);
	ck_assert_uint_eq(dp->di.size, 4096);
	ck_assert_uint_eq(dp->dir->nentries, 4);
	static const char *const left[] = { "f", "e", "c" };
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(lfs_dir_remove(fs, dp, left[i]), 0);
	ck_assert_int_eq(lfs_dir_remove(fs, dp, nm), 0);
	testfs_finish(fs);
}
END_TEST

/* A readdir cookie is a record's position: removing entries (the one
 * last returned among them, and those on either side) never moves the
 * others, so a reader that resumes from its cookie sees each remaining
 * later entry exactly once and none it already had, as POSIX asks of
 * readdir while a directory changes. */
START_TEST(cookies_survive_removals)
{
	struct lfs_inode *dp;
	uint32_t t;
	struct lfs_fs *fs = dir_fs(&dp, &t);
	enum { N = 600, FIRST = 250 };
	char nm[16];
	for (unsigned i = 0; i < N; i++) {
		snprintf(nm, sizeof(nm), "e%03u", i);
		add(fs, dp, nm, t);
	}
	ck_assert_uint_eq(dp->di.size, 3 * 4096); /* 16-byte records, 256 a block */
	struct walk all = { 0 }, w = { 0 };
	walk(fs, dp, 0, 0, &all);
	ck_assert_uint_eq(all.n, N);
	walk(fs, dp, 0, FIRST, &w);
	ck_assert_uint_eq(w.n, FIRST);
	uint64_t cookie = w.pos[FIRST - 1];
	ck_assert_uint_eq(cookie, (FIRST - 1) * 16);
	/* remove the last one read, 100 before it, and every third after */
	bool gone[N] = { 0 };
	for (unsigned i = FIRST - 101; i < N; i++)
		if (i < FIRST || (i - FIRST) % 3 == 0) {
			snprintf(nm, sizeof(nm), "e%03u", i);
			ck_assert_int_eq(lfs_dir_remove(fs, dp, nm), 0);
			gone[i] = true;
		}
	/* resumed after the cookie, or at it (a record now merged away) */
	for (uint64_t from = cookie; from <= cookie + 1; from++) {
		walk(fs, dp, from, 0, &w);
		size_t k = 0;
		for (unsigned i = FIRST; i < N; i++) {
			if (gone[i])
				continue;
			ck_assert_uint_lt(k, w.n);
			ck_assert_str_eq(w.name[k], all.name[i]);
			ck_assert_uint_eq(w.pos[k], all.pos[i]);
			k++;
		}
		ck_assert_uint_eq(k, w.n);
	}
	walk(fs, dp, 0, 0, &w);
	for (size_t i = 0; i < w.n; i++)
		ck_assert_int_eq(lfs_dir_remove(fs, dp, w.name[i]), 0);
	walk_free(&all);
	walk_free(&w);
	testfs_finish(fs);
}
END_TEST

/* 20,000 names: every one is found, half removed are gone, 10,000 new
 * names of the same length all fit in the space freed, without a new
 * block, and after a remount (the index rebuilt from disk) all are
 * found again; emptied, the directory is empty though it keeps its
 * blocks.  A directory that grew on every insert after deletes would
 * never stop growing under a mail spool's churn. */
START_TEST(large_directory)
{
	struct lfs_inode *dp;
	uint32_t t;
	struct lfs_fs *fs = dir_fs(&dp, &t);
	enum { N = 20000 };
	char nm[16];
	for (unsigned i = 0; i < N; i++)
		add(fs, dp, numbered(nm, "name", i), t);
	/* 24-byte records, 170 a block: 118 blocks */
	ck_assert_uint_eq(dp->di.size, 118 * 4096);
	uint32_t ino;
	for (unsigned i = 0; i < N; i++)
		ck_assert_int_eq(lfs_dir_lookup(fs, dp, numbered(nm, "name", i), &ino, NULL), 0);
	for (unsigned i = 0; i < N; i += 2)
		ck_assert_int_eq(lfs_dir_remove(fs, dp, numbered(nm, "name", i)), 0);
	for (unsigned i = 0; i < N; i += 2)
		ck_assert_int_eq(lfs_dir_lookup(fs, dp, numbered(nm, "name", i), &ino, NULL), -ENOENT);
	for (unsigned i = 0; i < N / 2; i++)
		add(fs, dp, numbered(nm, "newn", i), t);
	ck_assert_uint_eq(dp->di.size, 118 * 4096);
	ck_assert_uint_eq(dp->dir->nentries, N);
	ck_assert_int_eq(lfs_unmount(fs), 0);

	fs = testfs_mount();
	dp = dir_inode(fs);
	for (unsigned i = 1; i < N; i += 2)
		ck_assert_int_eq(lfs_dir_lookup(fs, dp, numbered(nm, "name", i), &ino, NULL), 0);
	for (unsigned i = 0; i < N / 2; i++)
		ck_assert_int_eq(lfs_dir_lookup(fs, dp, numbered(nm, "newn", i), &ino, NULL), 0);
	ck_assert_uint_eq(ino, t);
	struct walk w = { 0 };
	walk(fs, dp, 0, 0, &w);
	ck_assert_uint_eq(w.n, N);
	for (size_t i = 0; i < w.n; i++) {
		ck_assert(!lfs_dir_empty(fs, dp));
		ck_assert_int_eq(lfs_dir_remove(fs, dp, w.name[i]), 0);
	}
	walk_free(&w);
	ck_assert(lfs_dir_empty(fs, dp));
	ck_assert_uint_eq(dp->di.size, 118 * 4096);
	testfs_finish(fs);
}
END_TEST

/* Empty means no name at all, whatever blocks are left: rmdir refuses a
 * directory with one name (ENOTEMPTY) and takes one whose names were
 * all removed.  Names over 255 bytes are ENAMETOOLONG wherever a name
 * enters (fs.c checks before dir.c, whose record keeps the length in a
 * byte), and 255 bytes are stored whole. */
START_TEST(empty_and_name_limits)
{
	struct lfs_inode *dp;
	uint32_t t;
	struct lfs_fs *fs = dir_fs(&dp, &t);
	uint32_t d = dp->ino;
	ck_assert(lfs_dir_empty(fs, dp));
	add(fs, dp, "x", t);
	ck_assert(!lfs_dir_empty(fs, dp));
	ck_assert_int_eq(lfs_rmdir(fs, LFS_ROOT_INO, "d"), -ENOTEMPTY);
	ck_assert_int_eq(lfs_dir_remove(fs, dp, "x"), 0);
	ck_assert(lfs_dir_empty(fs, dp));
	ck_assert_uint_eq(dp->di.size, 4096);

	char n255[257], n256[257];
	long_name(n255, 255, 'n', 0);
	long_name(n256, 256, 'n', 0);
	struct stat st;
	ck_assert_int_eq(lfs_create(fs, d, n256, 0644, true, &testfs_me, &st), -ENAMETOOLONG);
	ck_assert_int_eq(lfs_mkdir(fs, d, n256, 0755, &testfs_me, &st), -ENAMETOOLONG);
	ck_assert_int_eq(lfs_link(fs, t, d, n256, &st), -ENAMETOOLONG);
	ck_assert_int_eq(lfs_lookup(fs, d, n256, &st), -ENAMETOOLONG);
	ck_assert_int_eq(lfs_rename(fs, LFS_ROOT_INO, "t", d, n256, 0), -ENAMETOOLONG);
	ck_assert_int_eq(lfs_create(fs, d, "", 0644, true, &testfs_me, &st), -ENOENT);
	ck_assert(lfs_dir_empty(fs, dp));
	ck_assert_int_eq(lfs_rename(fs, LFS_ROOT_INO, "t", d, n255, 0), 0);
	ck_assert_int_eq(lfs_lookup(fs, d, n255, &st), 0);
	ck_assert_uint_eq(st.st_ino, t);
	lfs_forget(fs, t, 1);
	expect_rec(dir_block(fs, dp, 0), 0, t, 4096, n255);
	ck_assert_int_eq(lfs_unlink(fs, d, n255), 0);
	ck_assert_int_eq(lfs_rmdir(fs, LFS_ROOT_INO, "d"), 0);
	testfs_finish(fs);
}
END_TEST

/* A block read is checked record by record: a record that does not tile
 * the block, a name "." and an inode number past the map all make a
 * lookup, a walk and the index EFSCORRUPTED, never a wrong answer, and
 * such a directory is never taken as empty (rmdir would drop what it
 * cannot see). */
START_TEST(corrupt_records_refused)
{
	struct lfs_inode *dp;
	uint32_t t;
	struct lfs_fs *fs = dir_fs(&dp, &t);
	add(fs, dp, "a", t);
	add(fs, dp, "b", t);
	add(fs, dp, "c", t);
	uint8_t *blk = (uint8_t *)dir_block(fs, dp, 0), saved[4096];
	memcpy(saved, blk, sizeof(saved));
	uint32_t max = fs->sb.max_inodes;
	struct { uint32_t off; uint8_t val; } bad[] = {
		{ 16 + 4, 12 },             /* b's rec_len: not a multiple of 8 */
		{ 16 + 4, 8 },              /* b's rec_len: shorter than its name */
		{ 16 + 8, '.' },            /* b named "." */
		{ 32 + 0, (uint8_t)max },   /* c's inode number: max_inodes */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (i == 3) {
			blk[32 + 1] = (uint8_t)(max >> 8);
			blk[32 + 2] = (uint8_t)(max >> 16);
			blk[32 + 3] = (uint8_t)(max >> 24);
		}
		blk[bad[i].off] = bad[i].val;
		lfs_dir_free_index(dp);
		uint32_t ino;
		ck_assert_int_eq(lfs_dir_lookup(fs, dp, "a", &ino, NULL), -EFSCORRUPTED);
		ck_assert_ptr_null(dp->dir);
		ck_assert(!lfs_dir_empty(fs, dp));
		size_t seen = 0;
		ck_assert_int_eq(lfs_dir_iterate(fs, dp, 0, count_one, &seen), -EFSCORRUPTED);
		ck_assert_uint_eq(seen, bad[i].off / 16); /* the records before the bad one */
		memcpy(blk, saved, sizeof(saved));
	}
	lfs_dir_free_index(dp);
	static const char *const names[] = { "a", "b", "c" };
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(lfs_dir_remove(fs, dp, names[i]), 0);
	testfs_finish(fs);
}
END_TEST

/* lfs_dir_set (rename over a name) rewrites the inode and type of the
 * record in place: the name keeps its position, so a reader's cookie
 * stays valid across a rename onto it; an absent name is ENOENT.  The
 * type stored is the DT_* value Linux gives the file type. */
START_TEST(set_in_place_and_types)
{
	struct lfs_inode *dp;
	uint32_t t;
	struct lfs_fs *fs = dir_fs(&dp, &t);
	add(fs, dp, "a", t);
	add(fs, dp, "b", t);
	ck_assert_int_eq(lfs_dir_set(fs, dp, "b", LFS_ROOT_INO, 4), 0);
	const uint8_t *blk = dir_block(fs, dp, 0);
	ck_assert_uint_eq(blk[16], LFS_ROOT_INO);
	ck_assert_uint_eq(blk[16 + 7], 4);
	ck_assert_uint_eq(pos_of(fs, dp, "b"), 16);
	uint32_t ino;
	uint8_t type;
	ck_assert_int_eq(lfs_dir_lookup(fs, dp, "b", &ino, &type), 0);
	ck_assert_uint_eq(ino, LFS_ROOT_INO);
	ck_assert_uint_eq(type, 4);
	ck_assert_int_eq(lfs_dir_set(fs, dp, "c", t, REG), -ENOENT);
	ck_assert_int_eq(lfs_dir_lookup(fs, dp, "c", &ino, &type), -ENOENT);
	ck_assert_uint_eq(lfs_mode_to_dt(S_IFIFO | 0644), 1);
	ck_assert_uint_eq(lfs_mode_to_dt(S_IFCHR), 2);
	ck_assert_uint_eq(lfs_mode_to_dt(S_IFDIR | 0755), 4);
	ck_assert_uint_eq(lfs_mode_to_dt(S_IFBLK), 6);
	ck_assert_uint_eq(lfs_mode_to_dt(S_IFREG | 04755), 8);
	ck_assert_uint_eq(lfs_mode_to_dt(S_IFLNK | 0777), 10);
	ck_assert_uint_eq(lfs_mode_to_dt(S_IFSOCK), 12);
	ck_assert_int_eq(lfs_dir_remove(fs, dp, "a"), 0);
	ck_assert_int_eq(lfs_dir_remove(fs, dp, "b"), 0);
	testfs_finish(fs);
}
END_TEST

/* A directory at LFS_DIR_MAX_SIZE (2 GiB, so positions fit the 32 bits
 * of the index) takes no new block: ENOSPC, with the name neither in
 * the index nor in a block.  The size is set in memory only: 2 GiB of
 * directory would not fit a scratch image. */
START_TEST(full_directory_enospc)
{
	struct lfs_inode *dp;
	uint32_t t;
	struct lfs_fs *fs = dir_fs(&dp, &t);
	char nm[256];
	for (unsigned i = 0; i < 15; i++)
		add(fs, dp, long_name(nm, 255, 'q', i), t);
	uint64_t size = dp->di.size;
	ck_assert_uint_eq(size, 4096);
	dp->di.size = (1ull << 31) - 4096 + 1;
	ck_assert_int_eq(lfs_dir_add(fs, dp, long_name(nm, 255, 'q', 15), t, REG), -ENOSPC);
	dp->di.size = size;
	uint32_t ino;
	ck_assert_int_eq(lfs_dir_lookup(fs, dp, nm, &ino, NULL), -ENOENT);
	ck_assert_uint_eq(dp->dir->nentries, 15);
	ck_assert_uint_eq(dp->dir->nblocks, 1);
	struct walk w = { 0 };
	walk(fs, dp, 0, 0, &w);
	ck_assert_uint_eq(w.n, 15);
	for (size_t i = 0; i < w.n; i++)
		ck_assert_int_eq(lfs_dir_remove(fs, dp, w.name[i]), 0);
	walk_free(&w);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("dir", "directories", 60, records_tile_blocks, remove_merges_and_reuses,
	   cookies_survive_removals, large_directory, empty_and_name_limits, corrupt_records_refused,
	   set_in_place_and_types, full_directory_enospc)
