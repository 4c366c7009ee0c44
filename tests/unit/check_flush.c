/*
 * check_flush.c — flush.c, the writer of log groups.  Holds lfs_flush to
 * its rules: one flush is one group whose last pseg alone carries
 * LFS_PSEG_END; tombstones come first, then per dirty inode its data,
 * xattr blocks and block-map nodes (deepest first), then the records,
 * packed by decreasing lfs_inode_charge; afterwards nothing is dirty and
 * the usage table counts the new record and no longer the old one; a
 * failed flush keeps its dirty state and is never retried; and a flush
 * followed by lfs_sync is what fsync relies on to survive a crash.
 */
#include "testfs.h"
#include "logwalk.h"

#include <errno.h>
#include <string.h>


/* What a walk of the log saw from a given head: every block with its
 * summary entry, and for INODE blocks the records packed in them. */
#define MAX_BLOCKS 64
#define MAX_RECS 16
#define MAX_PSEGS 16

struct seen_block {
	struct lfs_pseg_entry e;
	unsigned pseg;
	unsigned nrec;
	struct lfs_dinode rec[MAX_RECS];
};

struct seen {
	unsigned nblocks, npsegs;
	uint32_t pseg_flags[MAX_PSEGS];
	struct seen_block b[MAX_BLOCKS];
};

/* Walk segment `seg` from block offset `from`: what the flush that
 * started there wrote (the group stays in one segment in these tests). */
static void
walk_from(struct lfs_fs *fs, uint64_t seg, uint32_t from, struct seen *s)
{
	memset(s, 0, sizeof(*s));
	struct lfs_logwalk w;
	ck_assert_int_eq(lfs_logwalk_init(&w, &fs->dev, &fs->sb, fs->seed, LFS_LOGWALK_BLOCKS), 0);
	lfs_logwalk_segment(&w, seg);
	int r;
	while ((r = lfs_logwalk_next(&w)) > 0) {
		if (w.pseg_off < from)
			continue;
		ck_assert_uint_lt(s->npsegs, MAX_PSEGS);
		s->pseg_flags[s->npsegs] = w.h.flags;
		for (uint32_t j = 0; j < w.h.nblocks; j++) {
			ck_assert_uint_lt(s->nblocks, MAX_BLOCKS);
			struct seen_block *b = &s->b[s->nblocks++];
			lfs_logwalk_entry(&w, j, &b->e);
			b->pseg = s->npsegs;
			ck_assert(lfs_logwalk_block_ok(&w, j));
			if (b->e.kind != LFS_BK_INODE)
				continue;
			const uint8_t *blk = lfs_logwalk_block(&w, j);
			uint32_t off = lfs_inode_block_next(blk, fs->bsize, 0);
			while (off < fs->bsize) {
				ck_assert_uint_lt(b->nrec, MAX_RECS);
				int len = lfs_dinode_decode(&b->rec[b->nrec++], blk + off, fs->bsize - off);
				ck_assert_int_gt(len, 0);
				off = lfs_inode_block_next(blk, fs->bsize, off + (uint32_t)len);
			}
		}
		s->npsegs++;
	}
	ck_assert_int_eq(r, 0);
	lfs_logwalk_free(&w);
}

/* Index of the first block of the walk matching kind/ino (and lblk unless
 * any_lblk), or -1. */
static int
find_block(const struct seen *s, uint8_t kind, uint32_t ino, uint64_t lblk, bool any_lblk)
{
	for (unsigned i = 0; i < s->nblocks; i++)
		if (s->b[i].e.kind == kind && s->b[i].e.ino == ino && (any_lblk || s->b[i].e.lblk == lblk))
			return (int)i;
	return -1;
}

/* Index of the INODE block holding a live record of ino, or -1. */
static int
find_record(const struct seen *s, uint32_t ino)
{
	for (unsigned i = 0; i < s->nblocks; i++)
		for (unsigned k = 0; k < s->b[i].nrec; k++)
			if (s->b[i].rec[k].ino == ino && s->b[i].rec[k].mode)
				return (int)i;
	return -1;
}

/* A mounted scratch filesystem whose state is all on disk. */
static struct lfs_fs *
clean_fs(void)
{
	testfs_make(64ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	return fs;
}

/* `len` bytes of pattern `seed` at `off` of ino. */
static void
put(struct lfs_fs *fs, uint64_t ino, size_t len, uint64_t off, unsigned seed)
{
	uint8_t buf[8192];
	ck_assert_uint_le(len, sizeof(buf));
	fill_pattern(buf, len, seed);
	ck_assert_int_eq(lfs_write(fs, ino, buf, len, (off_t)off, NULL), (ssize_t)len);
}

/* Nothing dirty: a flush writes nothing at all, not even an empty group
 * (fsync of a clean filesystem must not cost a pseg and a sequence
 * number); and what a flush wrote leaves nothing dirty behind. */
START_TEST(flush_of_nothing_writes_nothing)
{
	struct lfs_fs *fs = clean_fs();
	uint64_t bytes = fs->dev.bytes_written, seq = fs->pseg_seq;
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_uint_eq(fs->dev.bytes_written, bytes);
	ck_assert_uint_eq(fs->pseg_seq, seq);

	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	put(fs, ino, 5000, 0, 1);
	ck_assert_uint_eq(fs->dirty.count, 2); /* the file and the root */
	ck_assert_uint_gt(fs->dirty_units, 0);
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_uint_eq(fs->dirty.count, 0);
	ck_assert_uint_eq(fs->dirty_units, 0);
	ck_assert_uint_eq(fs->pseg_seq, seq + 1);
	bytes = fs->dev.bytes_written;
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_uint_eq(fs->dev.bytes_written, bytes);
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	ck_assert(!ip->dirty);
	ck_assert_uint_eq(ip->ndirty_pages, 0);
	testfs_finish(fs);
}
END_TEST

/* The layout of a group: the tombstone first, an inode's data before its
 * xattr block before its block-map nodes, the leaf node before the root
 * above it (a node is written after what it points to, so it can name
 * their new addresses), the records last; and only the last of the
 * group's psegs carries LFS_PSEG_END, because roll-forward applies a
 * group whole or not at all.  psegs are made small to split the group. */
START_TEST(group_layout)
{
	struct lfs_fs *fs = clean_fs();
	uint64_t gone = testfs_mkfile(fs, LFS_ROOT_INO, "gone");
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "gone"), 0);
	lfs_forget(fs, gone, 1);
	lfs_release(fs, gone); /* testfs_mkfile leaves it open */
	ck_assert_uint_eq(fs->tombstones.count, 1);
	/* lblk 12 + 512 + 1: the second tree, two levels of nodes */
	uint64_t far = LFS_NDIRECT + fs->nptr + 1;
	put(fs, f, 4096, 0, 2);
	put(fs, f, 4096, far * 4096, 3);
	ck_assert_int_eq(lfs_setxattr(fs, f, "user.k", "v", 1, 0), 0);
	uint64_t ids[LFS_NINDIRECT];
	ck_assert_uint_eq(lfs_bmap_path(fs, far, ids), 2);

	uint64_t seg = fs->cur_seg;
	uint32_t from = fs->cur_off, saved = fs->max_pseg;
	fs->max_pseg = 3;
	int err = lfs_flush(fs);
	fs->max_pseg = saved;
	ck_assert_int_eq(err, 0);
	ck_assert_uint_eq(fs->tombstones.count, 0);

	struct seen s;
	walk_from(fs, seg, from, &s);
	ck_assert_uint_ge(s.npsegs, 3);
	for (unsigned p = 0; p + 1 < s.npsegs; p++)
		ck_assert_uint_eq(s.pseg_flags[p] & LFS_PSEG_END, 0);
	ck_assert_uint_eq(s.pseg_flags[s.npsegs - 1] & LFS_PSEG_END, LFS_PSEG_END);

	ck_assert_uint_eq(s.b[0].e.kind, LFS_BK_INODE);
	ck_assert_uint_ge(s.b[0].nrec, 1);
	ck_assert_uint_eq(s.b[0].rec[0].ino, gone);
	ck_assert_uint_eq(s.b[0].rec[0].mode, 0);

	int d0 = find_block(&s, LFS_BK_DATA, (uint32_t)f, 0, false);
	int dfar = find_block(&s, LFS_BK_DATA, (uint32_t)f, far, false);
	int x = find_block(&s, LFS_BK_XATTR, (uint32_t)f, 0, true);
	int leaf = find_block(&s, LFS_BK_INDIR, (uint32_t)f, ids[0], false);
	int root = find_block(&s, LFS_BK_INDIR, (uint32_t)f, ids[1], false);
	int rec = find_record(&s, (uint32_t)f);
	ck_assert_int_ge(d0, 1);
	ck_assert_int_gt(dfar, d0);
	ck_assert_int_gt(x, dfar);
	ck_assert_int_gt(leaf, x);
	ck_assert_int_gt(root, leaf);
	ck_assert_int_gt(rec, root);
	ck_assert_int_gt(find_record(&s, LFS_ROOT_INO), root);
	/* the root directory (a lower number) has its content first */
	ck_assert_int_lt(find_block(&s, LFS_BK_DATA, LFS_ROOT_INO, 0, false), d0);
	testfs_finish(fs);
}
END_TEST

/* Records go out in decreasing order of lfs_inode_charge, equal ones by
 * number, so that an INODE block holds records of one size class: a
 * 2,100-byte inline file (charge 4096) fills a block alone, the 1,000-
 * (1,365), 300- (585) and empty ones (256) share the next. */
START_TEST(records_by_charge)
{
	struct lfs_fs *fs = clean_fs();
	static const size_t sizes[] = { 0, 300, 1000, 2100 };
	uint64_t ino[4];
	char name[8];
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		ino[i] = testfs_mkfile(fs, LFS_ROOT_INO, name);
		if (sizes[i])
			put(fs, ino[i], sizes[i], 0, (unsigned)i);
	}
	uint64_t seg = fs->cur_seg;
	uint32_t from = fs->cur_off;
	ck_assert_int_eq(lfs_flush(fs), 0);
	struct seen s;
	walk_from(fs, seg, from, &s);
	uint32_t order[5];
	unsigned n = 0, iblocks = 0, first_nrec = 0;
	for (unsigned i = 0; i < s.nblocks; i++) {
		if (s.b[i].e.kind != LFS_BK_INODE)
			continue;
		if (!iblocks++)
			first_nrec = s.b[i].nrec;
		for (unsigned k = 0; k < s.b[i].nrec && n < 5; k++)
			order[n++] = s.b[i].rec[k].ino;
	}
	ck_assert_uint_eq(n, 5);
	ck_assert_uint_eq(iblocks, 2);
	ck_assert_uint_eq(first_nrec, 1);
	ck_assert_uint_eq(order[0], ino[3]);
	ck_assert_uint_eq(order[1], ino[2]);
	ck_assert_uint_eq(order[2], ino[1]);
	ck_assert_uint_eq(order[3], LFS_ROOT_INO);
	ck_assert_uint_eq(order[4], ino[0]);
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, ino[3], &ip), 0);
	ck_assert_uint_eq(ip->disk_charge, 4096);
	testfs_finish(fs);
}
END_TEST

/* Rewriting a record moves its usage count: the new record's charge is
 * counted, the old one's uncounted, exactly (1,000 inline bytes: a
 * 1,280-byte record, charge 1,365; 100 bytes: 384, charge 409), and the
 * inode map points at the new copy.  A leak here would make df and the
 * cleaner's choices drift with every rewrite. */
START_TEST(record_usage_moves)
{
	struct lfs_fs *fs = clean_fs();
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	put(fs, ino, 1000, 0, 5);
	ck_assert_int_eq(lfs_flush(fs), 0);
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	ck_assert_uint_eq(ip->disk_charge, 1365);
	uint64_t old = lfs_imap_get(fs, ino)->daddr, live = fs->live_total;

	struct stat attr = { .st_size = 0 }, st;
	ck_assert_int_eq(lfs_setattr(fs, ino, &attr, LFS_SET_SIZE, &st), 0);
	put(fs, ino, 100, 0, 6);
	ck_assert_uint_eq(fs->dirty.count, 1);
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	ck_assert_uint_eq(ip->disk_charge, 409);
	ck_assert(!ip->dirty);
	ck_assert_uint_eq(fs->live_total, live - 1365 + 409);
	uint64_t now = lfs_imap_get(fs, ino)->daddr;
	ck_assert_uint_ne(now, old);
	ck_assert_uint_ge(now, lfs_seg_first_block(fs, fs->cur_seg));
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* A flush that fails to write leaves the inodes dirty and the filesystem
 * failed: the next flush returns the failure without a write reaching
 * the device (a retried group could land on top of a torn one). */
START_TEST(failed_flush_is_not_retried)
{
	struct lfs_fs *fs = clean_fs();
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	put(fs, ino, 6000, 0, 7);
	ck_assert_int_eq(lfs_fault_arm("pwrite:1:EIO"), 0);
	ck_assert_int_eq(lfs_flush(fs), -EIO);
	ck_assert_int_eq(fs->fatal, -EIO);
	ck_assert_uint_eq(fs->dirty.count, 2);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_PWRITE), 1);
	ck_assert_int_eq(lfs_flush(fs), -EIO);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_PWRITE), 1);
	lfs_fault_disarm();
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

/* What fsync relies on: after lfs_flush and lfs_sync a crash loses
 * nothing, while what was only buffered is gone (so the first part is
 * the flush's doing, not the crash's). */
START_TEST(flushed_group_survives_crash)
{
	struct lfs_fs *fs = clean_fs();
	uint64_t a = testfs_mkfile(fs, LFS_ROOT_INO, "a");
	put(fs, a, 7000, 0, 8);
	ck_assert_int_eq(lfs_flush(fs), 0);
	ck_assert_int_eq(lfs_sync(fs), 0);
	ck_assert_uint_eq(fs->synced_bytes, fs->dev.bytes_written);
	testfs_mkfile(fs, LFS_ROOT_INO, "b");
	lfs_abandon(fs); /* crash */

	fs = testfs_mount();
	struct stat st;
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "a", &st), 0);
	ck_assert_int_eq(st.st_size, 7000);
	uint8_t want[7000], got[7000];
	fill_pattern(want, sizeof(want), 8);
	ck_assert_int_eq(lfs_read(fs, st.st_ino, got, sizeof(got), 0), 7000);
	ck_assert(memcmp(want, got, sizeof(got)) == 0);
	lfs_forget(fs, st.st_ino, 1);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "b", &st), -ENOENT);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("flush", "flush", 30, flush_of_nothing_writes_nothing, group_layout, records_by_charge,
	   record_usage_moves, failed_flush_is_not_retried, flushed_group_survives_crash)
