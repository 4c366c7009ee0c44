/*
 * check_clean.c — the cleaner's mechanism (lfs/write/clean.c): the scan of a
 * segment yields only blocks that verify, liveness is judged against the
 * current state alone (a stale request never moves a dead block), a move
 * re-dirties the block's owner so that the next flush writes it anew, a
 * cleaned segment is left with nothing live and turns clean at the next
 * checkpoint, the cost model counts what a move really writes, and the
 * victims and costs it must refuse are refused.
 */
#include "testfs.h"
#include "ctl_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#define SEG (64u << 10)        /* 16 blocks: a small file spans segments */
#define NBLK 20u               /* file "a": 12 direct blocks and 8 under one node */

/* Every block a scan of one segment yielded, with a copy of its contents. */
struct seen {
	size_t n;
	struct lfs_pseg_entry e[64];
	uint64_t addr[64];
	uint8_t *blk[64];
};

static int
collect(struct lfs_fs *fs, const struct lfs_pseg_entry *e, uint64_t addr, const uint8_t *blk, void *ctx)
{
	struct seen *s = ctx;
	ck_assert_uint_lt(s->n, 64);
	s->e[s->n] = *e;
	s->addr[s->n] = addr;
	s->blk[s->n] = malloc(fs->bsize);
	memcpy(s->blk[s->n], blk, fs->bsize);
	s->n++;
	return 0;
}

static void
scan(struct lfs_fs *fs, uint64_t seg, struct seen *s)
{
	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(lfs_clean_scan(fs, seg, collect, s), 0);
}

static void
seen_free(struct seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->blk[i]);
	s->n = 0;
}

/* The index in s of the entry of `kind` for (ino, lblk); -1 if none. */
static int
find(const struct seen *s, uint8_t kind, uint32_t ino, uint64_t lblk)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->e[i].kind == kind && s->e[i].ino == ino && s->e[i].lblk == lblk)
			return (int)i;
	return -1;
}

/* File "a" reads back as pattern 1, but for lblk `changed` (if below
 * NBLK), which reads as pattern `seed`. */
static void
expect_a(struct lfs_fs *fs, uint64_t ino, uint64_t changed, unsigned seed)
{
	static uint8_t want[NBLK * 4096], got[NBLK * 4096];
	fill_pattern(want, sizeof(want), 1);
	if (changed < NBLK)
		fill_pattern(want + changed * 4096, 4096, seed);
	ck_assert_int_eq(lfs_read(fs, ino, got, sizeof(got), 0), (ssize_t)sizeof(got));
	ck_assert(memcmp(got, want, sizeof(got)) == 0);
}

/* Remove name from the root, close the file and drop the reference its
 * creation gave (lfs_create opens it, as FUSE's create does): only then
 * is the inode freed. */
static void
remove_file(struct lfs_fs *fs, const char *name, uint64_t ino)
{
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, name), 0);
	ck_assert_int_eq(lfs_release(fs, ino), 0);
	lfs_forget(fs, ino, 1);
}

static void
write_image(uint64_t addr, const uint8_t *blk)
{
	int fd = open(testfs_path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, blk, 4096, (off_t)(addr * 4096)), 4096);
	close(fd);
}

static int
fail_at_first(struct lfs_fs *fs, const struct lfs_pseg_entry *e, uint64_t addr, const uint8_t *blk, void *ctx)
{
	(void)fs, (void)e, (void)addr, (void)blk;
	++*(int *)ctx;
	return -EOWNERDEAD;
}

/* The scan hands over each block of a segment with its own summary
 * entry, at its address, as written; a block that fails its crc is never
 * handed over (the cleaner would copy garbage into the log as live
 * data); a segment never written yields nothing; the callback's error
 * ends the scan and is returned. */
START_TEST(scan_yields_verifying_blocks)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &a);
	uint64_t seg = lfs_addr_seg(fs, testfs_addr_of(fs, a, 0));
	struct seen s;
	scan(fs, seg, &s);
	unsigned in_seg = 0;
	static uint8_t want[NBLK * 4096];
	fill_pattern(want, sizeof(want), 1);
	for (uint64_t l = 0; l < NBLK; l++) {
		if (lfs_addr_seg(fs, testfs_addr_of(fs, a, l)) != seg)
			continue;
		in_seg++;
		int i = find(&s, LFS_BK_DATA, (uint32_t)a, l);
		ck_assert_int_ge(i, 0);
		ck_assert_uint_eq(s.addr[i], testfs_addr_of(fs, a, l));
		ck_assert_uint_eq(s.e[i].version, lfs_imap_get(fs, a)->version);
		ck_assert(memcmp(s.blk[i], want + l * 4096, 4096) == 0);
	}
	ck_assert_uint_ge(in_seg, 3);
	size_t before = s.n;

	/* lblk 2's block, damaged on disk behind the filesystem's back */
	uint64_t victim = testfs_addr_of(fs, a, 2);
	int i = find(&s, LFS_BK_DATA, (uint32_t)a, 2);
	ck_assert_int_ge(i, 0);
	uint8_t bad[4096];
	memcpy(bad, s.blk[i], sizeof(bad));
	bad[100] ^= 0x40;
	write_image(victim, bad);
	struct seen t;
	scan(fs, seg, &t);
	ck_assert_uint_eq(t.n, before - 1);
	for (size_t j = 0; j < t.n; j++)
		ck_assert_uint_ne(t.addr[j], victim);
	write_image(victim, s.blk[i]);
	seen_free(&s);
	seen_free(&t);

	int calls = 0;
	ck_assert_int_eq(lfs_clean_scan(fs, seg, fail_at_first, &calls), -EOWNERDEAD);
	ck_assert_int_eq(calls, 1);
	calls = 0;
	ck_assert_int_eq(lfs_clean_scan(fs, fs->sb.nsegs - 1, fail_at_first, &calls), 0);
	ck_assert_int_eq(calls, 0);
	testfs_finish(fs);
}
END_TEST

/* Liveness is decided against the current state only: a block is live
 * while its owner still points at that address with that version; an
 * overwritten block, a block of another version of the inode number or
 * of an inode not in use, and a map block no longer at its address are
 * dead, and so is an INODE block once every record in it was rewritten.
 * A stale or forged request can then never move a dead block over a
 * live one. */
START_TEST(liveness_follows_current_state)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &a);
	uint64_t seg = lfs_addr_seg(fs, testfs_addr_of(fs, a, NBLK - 1));
	struct seen s;
	scan(fs, seg, &s);
	int node = find(&s, LFS_BK_INDIR, (uint32_t)a, lfs_node_id(0, 0, 0));
	int last = find(&s, LFS_BK_DATA, (uint32_t)a, NBLK - 1);
	int rec = -1;
	for (size_t i = 0; i < s.n; i++)
		if (s.e[i].kind == LFS_BK_INODE && s.addr[i] == lfs_imap_get(fs, a)->daddr)
			rec = (int)i;
	ck_assert_int_ge(node, 0);
	ck_assert_int_ge(last, 0);
	ck_assert_int_ge(rec, 0);
	for (size_t i = 0; i < s.n; i++)
		if (s.e[i].kind == LFS_BK_DATA || s.e[i].kind == LFS_BK_INDIR || s.e[i].kind == LFS_BK_INODE)
			ck_assert_msg(lfs_clean_block_live(fs, &s.e[i], s.addr[i], s.blk[i]),
				      "block %llu (kind %u) is current but judged dead",
				      (unsigned long long)s.addr[i], s.e[i].kind);

	/* the same entry under another version, or another inode number */
	struct lfs_pseg_entry e = s.e[last];
	e.version++;
	ck_assert(!lfs_clean_block_live(fs, &e, s.addr[last], s.blk[last]));
	e = s.e[last];
	e.ino = 100; /* never allocated */
	ck_assert(!lfs_clean_block_live(fs, &e, s.addr[last], s.blk[last]));
	/* node ids that name no node */
	e = s.e[node];
	e.lblk &= ~LFS_NODE_FLAG;
	ck_assert(!lfs_clean_block_live(fs, &e, s.addr[node], s.blk[node]));
	e.lblk = lfs_node_id(LFS_NINDIRECT, 0, 0);
	ck_assert(!lfs_clean_block_live(fs, &e, s.addr[node], s.blk[node]));
	/* a record is live only at the slot the inode map gives it: the
	 * block reduced to a's record, then with that record one slot on */
	const struct lfs_imap_entry *ie = lfs_imap_get(fs, a);
	uint32_t at = ie->slot * LFS_INODE_ALIGN, to = at ? 0 : LFS_INODE_ALIGN;
	struct lfs_dinode di;
	int reclen = lfs_dinode_decode(&di, s.blk[rec] + at, 4096 - at);
	ck_assert_int_eq(reclen, LFS_INODE_HDR_SIZE);
	uint8_t forged[4096] = { 0 };
	memcpy(forged + at, s.blk[rec] + at, (size_t)reclen);
	ck_assert(lfs_clean_block_live(fs, &s.e[rec], s.addr[rec], forged));
	memset(forged, 0, sizeof(forged));
	memcpy(forged + to, s.blk[rec] + at, (size_t)reclen);
	ck_assert(!lfs_clean_block_live(fs, &s.e[rec], s.addr[rec], forged));
	/* map blocks: live at the address the checkpoint gave them only */
	struct lfs_pseg_entry im = { .kind = LFS_BK_IMAP, .lblk = 0 }, su = { .kind = LFS_BK_SUT, .lblk = 0 };
	ck_assert(lfs_clean_block_live(fs, &im, fs->imap_addr[0], NULL));
	ck_assert(!lfs_clean_block_live(fs, &im, fs->imap_addr[0] + 1, NULL));
	im.lblk = fs->n_imap_blocks;
	ck_assert(!lfs_clean_block_live(fs, &im, fs->imap_addr[0], NULL));
	ck_assert(lfs_clean_block_live(fs, &su, fs->sut_addr[0], NULL));
	ck_assert(!lfs_clean_block_live(fs, &su, fs->sut_addr[0] + 1, NULL));
	su.lblk = fs->n_sut_blocks;
	ck_assert(!lfs_clean_block_live(fs, &su, fs->sut_addr[0], NULL));

	/* the last block overwritten, and every record in the INODE block
	 * rewritten (the root's by a new name in it) */
	uint8_t buf[4096];
	fill_pattern(buf, sizeof(buf), 9);
	ck_assert_int_eq(lfs_write(fs, a, buf, sizeof(buf), (NBLK - 1) * 4096, NULL), 4096);
	testfs_mkfile(fs, LFS_ROOT_INO, "b");
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert(!lfs_clean_block_live(fs, &s.e[last], s.addr[last], s.blk[last]));
	ck_assert(!lfs_clean_block_live(fs, &s.e[rec], s.addr[rec], s.blk[rec]));
	e = s.e[last];
	ck_assert(lfs_clean_block_live(fs, &e, testfs_addr_of(fs, a, NBLK - 1), buf));
	/* the rest of the file is where it was */
	int other = find(&s, LFS_BK_DATA, (uint32_t)a, NBLK - 2);
	ck_assert_int_ge(other, 0);
	ck_assert(lfs_clean_block_live(fs, &s.e[other], s.addr[other], s.blk[other]));

	/* once the file is gone, nothing of it is live */
	remove_file(fs, "a", a);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert(!lfs_clean_block_live(fs, &s.e[other], s.addr[other], s.blk[other]));
	ck_assert(!lfs_clean_block_live(fs, &s.e[node], s.addr[node], s.blk[node]));
	seen_free(&s);
	testfs_finish(fs);
}
END_TEST

/* What moving blocks costs: each block, each block-map node above a
 * data block once per file (blocks of one leaf share it), a record per
 * 16 inodes (256 bytes each in 4 KiB), and the checkpoint that frees
 * the victims (the inode-map blocks of the moved records, the usage
 * table, its summary), a summary per half pseg, and 16 blocks of
 * slack.  Underestimating lets cleaning start what it cannot finish:
 * counting a record per 8 inodes, no ancestors of a moved node and no
 * checkpoint, cleaning took batches for gains that lost. */
START_TEST(cost_counts_what_a_move_writes)
{
	testfs_make(16 << 20, SEG);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_uint_eq(fs->max_pseg, 15); /* a summary per 7 blocks below */
	ck_assert_uint_eq(fs->n_sut_blocks, 1);
	ck_assert_uint_eq(fs->n_imap_blocks, 16);
	struct lfs_clean_cost c;
	lfs_clean_cost_init(&c);
	/* nothing moved: the checkpoint's usage table and summary */
	ck_assert_uint_eq(lfs_clean_cost_blocks(&c, fs), 18);
	static const struct {
		struct lfs_pseg_entry e;
		uint64_t want;
	} steps[] = {
		{ { .kind = LFS_BK_IMAP, .lblk = 0 }, 19 },                    /* a block, no owner */
		{ { .kind = LFS_BK_DATA, .ino = 5, .lblk = 0 }, 22 },          /* direct: its record, imap block */
		{ { .kind = LFS_BK_DATA, .ino = 5, .lblk = 12 }, 25 },         /* its first leaf (a summary more) */
		{ { .kind = LFS_BK_DATA, .ino = 5, .lblk = 13 }, 26 },         /* the same leaf */
		{ { .kind = LFS_BK_DATA, .ino = 6, .lblk = 13 }, 28 },         /* another file's leaf */
		{ { .kind = LFS_BK_DATA, .ino = 7, .lblk = 12 + 512 }, 32 },   /* two levels */
		{ { .kind = LFS_BK_INDIR, .ino = 7, .lblk = LFS_NODE_FLAG | (1ull << 56) | (1ull << 52) }, 32 },
		{ { .kind = LFS_BK_INDIR, .ino = 8, .lblk = LFS_NODE_FLAG | (1ull << 56) | (1ull << 52) | 3 }, 34 },
		{ { .kind = LFS_BK_INODE }, 53 },                              /* records unread: 16 imap blocks */
	};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		ck_assert_int_eq(lfs_clean_cost_add(&c, fs, &steps[i].e, NULL), 0);
		ck_assert_msg(lfs_clean_cost_blocks(&c, fs) == steps[i].want, "step %zu: %llu blocks, want %llu", i,
			      (unsigned long long)lfs_clean_cost_blocks(&c, fs), (unsigned long long)steps[i].want);
	}
	/* sixteen more inodes (their xattr roots): one more block of records */
	for (uint32_t ino = 10; ino < 26; ino++) {
		struct lfs_pseg_entry x = { .kind = LFS_BK_XATTR, .ino = ino, .lblk = 0 };
		ck_assert_int_eq(lfs_clean_cost_add(&c, fs, &x, NULL), 0);
	}
	ck_assert_uint_eq(c.blocks, 23);
	ck_assert_uint_eq(c.nodes.count, 6);
	ck_assert_uint_eq(c.inos.count, 20);
	ck_assert_uint_eq(lfs_clean_cost_blocks(&c, fs), 73);
	/* victims: their usage-table block, once */
	ck_assert_int_eq(lfs_clean_cost_victim(&c, fs, 3), 0);
	ck_assert_int_eq(lfs_clean_cost_victim(&c, fs, 4), 0);
	ck_assert_uint_eq(lfs_clean_cost_blocks(&c, fs), 74);
	lfs_clean_cost_free(&c);
	testfs_finish(fs);
}
END_TEST

/* Cleaning may spend no more than the room above the checkpoint's
 * floor, and cleaning that writes more than its victims free stops at
 * the floor of cleaning at a loss, so a full filesystem keeps the room
 * to delete and to checkpoint. */
START_TEST(affordable_keeps_the_floors)
{
	testfs_make(16 << 20, SEG);
	struct lfs_fs *fs = testfs_mount();
	uint64_t room = lfs_space_for_cleaning(fs), clean = lfs_seg_clean_blocks(fs);
	uint64_t loss = lfs_space_floor(fs, LFS_SPACE_CLEAN_AT_LOSS);
	ck_assert_uint_gt(room, 2 * SEG / 4096);
	/* beyond the room: never, however much it would free */
	ck_assert(!lfs_clean_affordable(fs, room + 1, fs->sb.nsegs));
	ck_assert(lfs_clean_affordable(fs, room, fs->sb.nsegs));
	/* gaining (cost below the victims' blocks): up to the room */
	ck_assert(lfs_clean_affordable(fs, 15, 1));
	/* at a loss: only while the loss floor stays clean */
	ck_assert_uint_gt(room + loss, clean);
	ck_assert(!lfs_clean_affordable(fs, room, 0));
	ck_assert(lfs_clean_affordable(fs, clean - loss, 0));
	ck_assert(!lfs_clean_affordable(fs, clean - loss + 1, 0));
	ck_assert(lfs_clean_affordable(fs, 16, 1)); /* cost equal to what it frees: at a loss, affordable here */
	testfs_finish(fs);
}
END_TEST

/* Only a dirty segment inside the filesystem is a victim: a segment
 * number out of range, a clean segment and the log head are refused
 * with EINVAL, nothing is moved and nothing counted as cleaned. */
START_TEST(refuses_bad_victims)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &a);
	struct lfs_stats s0, s1;
	lfs_get_stats(fs, &s0);
	uint64_t clean = fs->sb.nsegs - 1, moved = 0;
	ck_assert_uint_eq(fs->segs[clean].state, LFS_SEG_CLEAN);
	ck_assert_uint_eq(fs->segs[fs->cur_seg].state, LFS_SEG_ACTIVE);
	ck_assert_int_eq(lfs_clean_segment(fs, fs->sb.nsegs, &moved), -EINVAL);
	ck_assert_int_eq(lfs_clean_segment(fs, UINT64_MAX, &moved), -EINVAL);
	ck_assert_int_eq(lfs_clean_segment(fs, clean, &moved), -EINVAL);
	ck_assert_int_eq(lfs_clean_segment(fs, fs->cur_seg, &moved), -EINVAL);
	ck_assert_int_eq(lfs_clean_segment(fs, fs->next_seg, &moved), -EINVAL);
	ck_assert_uint_eq(moved, 0);
	lfs_get_stats(fs, &s1);
	ck_assert_uint_eq(s1.blocks_cleaned, s0.blocks_cleaned);
	ck_assert_uint_eq(s1.segs_clean, s0.segs_clean);
	expect_a(fs, a, NBLK, 0);
	testfs_finish(fs);
}
END_TEST

/* A move re-dirties the owner and reads nothing more: a data block
 * without a cached page becomes a dirty page holding the block just
 * read; one whose page holds newer data keeps the newer data (a move
 * must not undo a write); a block-map node is marked dirty; map blocks
 * are marked to be written at the next checkpoint.  After the cleaning flush the old copies are dead
 * and the file reads as it should. */
START_TEST(move_redirties_owner)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &a);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount(); /* no page cached */
	uint64_t seg = lfs_addr_seg(fs, testfs_addr_of(fs, a, 0));
	struct seen s;
	scan(fs, seg, &s);
	int b0 = find(&s, LFS_BK_DATA, (uint32_t)a, 0), b1 = find(&s, LFS_BK_DATA, (uint32_t)a, 1);
	ck_assert_int_ge(b0, 0);
	ck_assert_int_ge(b1, 0);
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, a, &ip), 0);
	ck_assert_ptr_null(u64map_get(&ip->pages, 1));

	uint64_t r0 = fs->dev.bytes_read;
	ck_assert_int_eq(lfs_clean_move_block(fs, &s.e[b1], s.addr[b1], s.blk[b1]), 0);
	ck_assert_uint_eq(fs->dev.bytes_read, r0);
	struct lfs_page *pg = u64map_get(&ip->pages, 1);
	ck_assert_ptr_nonnull(pg);
	ck_assert(pg->dirty);
	ck_assert(memcmp(pg->data, s.blk[b1], 4096) == 0);

	/* lblk 0 rewritten in the cache since the scan read it */
	uint8_t buf[4096];
	fill_pattern(buf, sizeof(buf), 5);
	ck_assert_int_eq(lfs_write(fs, a, buf, sizeof(buf), 0, NULL), 4096);
	ck_assert(lfs_clean_block_live(fs, &s.e[b0], s.addr[b0], s.blk[b0])); /* not flushed yet */
	ck_assert_int_eq(lfs_clean_move_block(fs, &s.e[b0], s.addr[b0], s.blk[b0]), 0);

	struct lfs_pseg_entry im = { .kind = LFS_BK_IMAP, .lblk = 0 }, su = { .kind = LFS_BK_SUT, .lblk = 0 };
	ck_assert_int_eq(lfs_clean_move_block(fs, &im, fs->imap_addr[0], NULL), 0);
	ck_assert_int_eq(lfs_clean_move_block(fs, &su, fs->sut_addr[0], NULL), 0);
	ck_assert_uint_eq(fs->imap_dirty[0], 1);
	ck_assert_uint_eq(fs->sut_dirty[0], 1);
	uint64_t imap0 = fs->imap_addr[0];
	/* the block-map node, from the segment it is in */
	uint64_t node0 = ip->di.ind[0], id = lfs_node_id(0, 0, 0);
	struct seen ns;
	scan(fs, lfs_addr_seg(fs, node0), &ns);
	int nd = find(&ns, LFS_BK_INDIR, (uint32_t)a, id);
	ck_assert_int_ge(nd, 0);
	ck_assert_uint_eq(ns.addr[nd], node0);
	ck_assert_int_eq(lfs_clean_move_block(fs, &ns.e[nd], ns.addr[nd], ns.blk[nd]), 0);
	struct lfs_node *node;
	ck_assert_int_eq(lfs_bmap_get_node(fs, ip, id, false, &node), 0);
	ck_assert_ptr_nonnull(node);
	ck_assert(node->dirty);

	struct lfs_stats s0, s1;
	lfs_get_stats(fs, &s0);
	struct u64map victims;
	u64map_init(&victims);
	ck_assert_int_eq(u64map_put(&victims, seg, (void *)1), 0);
	ck_assert_int_eq(lfs_clean_flush(fs, fs->segs[seg].mtime_ns, &victims), 0);
	u64map_free(&victims);
	lfs_get_stats(fs, &s1);
	ck_assert_uint_ge(s1.cleaning_bytes_written - s0.cleaning_bytes_written, 2 * 4096);
	ck_assert(!fs->cleaning);
	ck_assert(!lfs_clean_block_live(fs, &s.e[b1], s.addr[b1], s.blk[b1]));
	ck_assert(!lfs_clean_block_live(fs, &s.e[b0], s.addr[b0], s.blk[b0]));
	ck_assert(!lfs_clean_block_live(fs, &ns.e[nd], ns.addr[nd], ns.blk[nd]));
	ck_assert_int_eq(lfs_iget(fs, a, &ip), 0); /* the flush may have evicted it */
	ck_assert_uint_ne(ip->di.ind[0], node0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_ne(fs->imap_addr[0], imap0);
	expect_a(fs, a, 0, 5);
	seen_free(&s);
	seen_free(&ns);
	testfs_finish(fs);
}
END_TEST

/* Cleaning a segment moves exactly its live blocks, of every kind it
 * holds (data, block-map node, inode records, the inode map), leaves it
 * with no live bytes and no table block, and the next checkpoint makes
 * it clean; the file's content does not change and no block of it is
 * left in the victim. */
START_TEST(clean_segment_empties_it)
{
	uint64_t a;
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, NBLK, &a);
	uint64_t seg = lfs_addr_seg(fs, testfs_addr_of(fs, a, NBLK - 1));
	ck_assert_uint_eq(fs->segs[seg].state, LFS_SEG_DIRTY);
	/* what is live there, by the owners' own maps */
	uint64_t want = 0;
	for (uint64_t l = 0; l < NBLK; l++)
		want += lfs_addr_seg(fs, testfs_addr_of(fs, a, l)) == seg;
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, a, &ip), 0);
	bool has_node = lfs_addr_seg(fs, ip->di.ind[0]) == seg;
	bool has_rec = lfs_addr_seg(fs, lfs_imap_get(fs, a)->daddr) == seg;
	bool has_imap = lfs_addr_seg(fs, fs->imap_addr[0]) == seg;
	ck_assert(has_node && has_rec && has_imap); /* every kind is exercised */
	want += 3;
	ck_assert_uint_eq(fs->segs[seg].meta_blocks, 1);

	struct lfs_stats s0, s1;
	lfs_get_stats(fs, &s0);
	uint64_t moved = 0;
	ck_assert_int_eq(lfs_clean_segment(fs, seg, &moved), 0);
	ck_assert_uint_eq(moved, want);
	lfs_get_stats(fs, &s1);
	ck_assert_uint_eq(s1.blocks_cleaned - s0.blocks_cleaned, want);
	ck_assert_uint_eq(fs->segs[seg].live_bytes, 0);
	for (uint64_t l = 0; l < NBLK; l++)
		ck_assert_uint_ne(lfs_addr_seg(fs, testfs_addr_of(fs, a, l)), seg);
	ck_assert_int_eq(lfs_iget(fs, a, &ip), 0);
	ck_assert_uint_ne(lfs_addr_seg(fs, ip->di.ind[0]), seg);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_eq(fs->segs[seg].meta_blocks, 0);
	ck_assert_uint_eq(fs->segs[seg].state, LFS_SEG_CLEAN);
	expect_a(fs, a, NBLK, 0);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* The daemon's last resort: with less than a segment dead in all the
 * dirty segments there is nothing to gain (ENOSPC, nothing moved: the
 * moves would cost more than they free); a
 * dirty segment with nothing live is freed by the checkpoint alone,
 * moving nothing; segments half dead are cleaned together and the clean
 * segments grow, the surviving files intact. */
START_TEST(reclaim_gains_or_refuses)
{
	testfs_make(16 << 20, SEG);
	struct lfs_fs *fs = testfs_mount();
	/* segments full but for their summaries: together less than one
	 * segment is dead */
	uint64_t full = testfs_mkfile(fs, LFS_ROOT_INO, "full");
	static uint8_t fullbuf[60 * 4096];
	ck_assert_int_eq(lfs_write(fs, full, fullbuf, sizeof(fullbuf), 0, NULL), (ssize_t)sizeof(fullbuf));
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t dirty = 0;
	for (uint64_t seg = 0; seg < fs->sb.nsegs; seg++)
		dirty += fs->segs[seg].state == LFS_SEG_DIRTY;
	ck_assert_uint_ge(dirty, 3);
	struct lfs_reclaim_tally t = {0};
	uint64_t nclean = fs->nclean;
	ck_assert_int_eq(lfs_clean_reclaim(fs, false, &t), -ENOSPC);
	ck_assert_uint_eq(t.moved, 0);
	ck_assert_uint_eq(fs->nclean, nclean);

	/* eight files of 6 blocks: half of them removed, their segments
	 * about half dead */
	static uint8_t buf[6 * 4096];
	char name[8];
	uint64_t ino[8];
	for (unsigned i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		ino[i] = testfs_mkfile(fs, LFS_ROOT_INO, name);
		fill_pattern(buf, sizeof(buf), i);
		ck_assert_int_eq(lfs_write(fs, ino[i], buf, sizeof(buf), 0, NULL), (ssize_t)sizeof(buf));
		ck_assert_int_eq(lfs_fsync(fs, ino[i], false), 0);
	}
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	for (unsigned i = 0; i < 8; i += 2) {
		snprintf(name, sizeof(name), "f%u", i);
		remove_file(fs, name, ino[i]);
	}
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	nclean = fs->nclean;
	struct lfs_stats s0, s1;
	lfs_get_stats(fs, &s0);
	ck_assert_int_eq(lfs_clean_reclaim(fs, false, &t), 0);
	lfs_get_stats(fs, &s1);
	ck_assert_uint_gt(t.moved, 0);
	ck_assert_uint_gt(s1.segs_cleaned, s0.segs_cleaned);
	/* the round's own tally: what it moved was written, and the
	 * victims it emptied outweigh it */
	ck_assert_uint_eq(t.victims, s1.segs_cleaned - s0.segs_cleaned);
	/* every segment cleaned is in the histogram once: both are counted
	 * where a segment turns clean */
	uint64_t in_hist = 0;
	for (unsigned b = 0; b < 10; b++)
		in_hist += s1.victim_hist[b] - s0.victim_hist[b];
	ck_assert_uint_eq(in_hist, s1.segs_cleaned - s0.segs_cleaned);
	ck_assert_uint_ge(t.written, t.moved * fs->bsize);
	ck_assert_uint_gt(t.victims * fs->sb.seg_blocks * fs->bsize, t.written);
	/* a cleaner naming every segment after it, those the round cleaned
	 * among them, is told which are clean, but none is counted again */
	static uint64_t all[1024];
	ck_assert_uint_le(fs->sb.nsegs, 1024);
	for (uint64_t s = 0; s < fs->sb.nsegs; s++)
		all[s] = s;
	uint64_t answered = 0;
	ck_assert_int_eq(lfs_ctl_segclean(fs, all, (uint32_t)fs->sb.nsegs, &answered), 0);
	ck_assert_uint_eq(answered, fs->nclean);
	lfs_get_stats(fs, &s0);
	ck_assert_uint_eq(s0.segs_cleaned, s1.segs_cleaned);
	ck_assert_uint_gt(fs->nclean, nclean);
	static uint8_t back[6 * 4096];
	for (unsigned i = 1; i < 8; i += 2) {
		fill_pattern(buf, sizeof(buf), i);
		ck_assert_int_eq(lfs_read(fs, ino[i], back, sizeof(back), 0), (ssize_t)sizeof(back));
		ck_assert(memcmp(back, buf, sizeof(buf)) == 0);
	}
	testfs_fsck_clean(fs);

	/* a file filling whole segments, removed: they are dead already */
	uint64_t big = testfs_mkfile(fs, LFS_ROOT_INO, "big");
	static uint8_t bigbuf[64 * 4096];
	ck_assert_int_eq(lfs_write(fs, big, bigbuf, sizeof(bigbuf), 0, NULL), (ssize_t)sizeof(bigbuf));
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	remove_file(fs, "big", big);
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	ck_assert_uint_gt(lfs_seg_freeable(fs), 0);
	nclean = fs->nclean;
	t = (struct lfs_reclaim_tally){0};
	ck_assert_int_eq(lfs_clean_reclaim(fs, false, &t), 0);
	ck_assert_uint_eq(t.moved, 0);
	ck_assert_uint_gt(fs->nclean, nclean);
	ck_assert_uint_eq(lfs_seg_freeable(fs), 0);
	testfs_finish(fs);
}
END_TEST

/* A batch reads a victim once, and of it only the summaries, its inode
 * blocks and the blocks found live (reading it whole, twice, made
 * cleaning's reads most of its cost): a segment left with two live
 * blocks of sixteen costs a handful of block reads, the two are moved
 * and the file reads back unchanged.  A live block that fails its
 * checksum on disk is never moved: it stays where it is, still live. */
START_TEST(clean_reads_only_live_blocks)
{
	uint64_t a;
	enum { N = 60 };
	struct lfs_fs *fs = testfs_with_file(16 << 20, SEG, N, &a);
	uint64_t seg = lfs_addr_seg(fs, testfs_addr_of(fs, a, 20));
	uint64_t keep[2], nkeep = 0;
	static uint8_t want[N * 4096], buf[4096];
	fill_pattern(want, sizeof(want), 1);
	for (uint64_t l = 0; l < N; l++) {
		if (lfs_addr_seg(fs, testfs_addr_of(fs, a, l)) != seg)
			continue;
		if (nkeep < 2) {
			keep[nkeep++] = l;
			continue;
		}
		fill_pattern(buf, sizeof(buf), 7 + (unsigned)l);
		memcpy(want + l * 4096, buf, 4096);
		ck_assert_int_eq(lfs_write(fs, a, buf, sizeof(buf), l * 4096, NULL), 4096);
	}
	ck_assert_uint_eq(nkeep, 2);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount(); /* nothing cached: the liveness checks read too */
	ck_assert_uint_eq(fs->segs[seg].state, LFS_SEG_DIRTY);
	ck_assert_uint_eq(fs->segs[seg].live_bytes, 2 * 4096);

	uint64_t r0 = fs->dev.bytes_read, moved = 0;
	ck_assert_int_eq(lfs_clean_segment(fs, seg, &moved), 0);
	uint64_t blocks_read = (fs->dev.bytes_read - r0) / 4096;
	ck_assert_uint_eq(moved, 2);
	/* the summary, the two blocks, and what finds them: a's record and
	 * its block-map node */
	ck_assert_msg(blocks_read <= 6, "cleaning read %llu blocks", (unsigned long long)blocks_read);
	ck_assert_uint_eq(fs->segs[seg].live_bytes, 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_eq(fs->segs[seg].state, LFS_SEG_CLEAN);
	static uint8_t got[N * 4096];
	ck_assert_int_eq(lfs_read(fs, a, got, sizeof(got), 0), (ssize_t)sizeof(got));
	ck_assert(memcmp(got, want, sizeof(got)) == 0);
	testfs_fsck_clean(fs);

	/* one of the two, now in another segment (the log head moved on
	 * past it), damaged on disk */
	uint64_t filler = testfs_mkfile(fs, LFS_ROOT_INO, "filler");
	ck_assert_int_eq(lfs_write(fs, filler, got, 40 * 4096, 0, NULL), 40 * 4096);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t addr = testfs_addr_of(fs, a, keep[0]);
	seg = lfs_addr_seg(fs, addr);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	memcpy(buf, want + keep[0] * 4096, 4096);
	buf[9] ^= 1;
	write_image(addr, buf);
	fs = testfs_mount();
	ck_assert_uint_eq(fs->segs[seg].state, LFS_SEG_DIRTY);
	moved = 0;
	ck_assert_int_eq(lfs_clean_segment(fs, seg, &moved), 0);
	ck_assert_uint_eq(testfs_addr_of(fs, a, keep[0]), addr);
	ck_assert_uint_ne(lfs_addr_seg(fs, testfs_addr_of(fs, a, keep[1])), seg);
	/* repaired, the file reads back whole */
	ck_assert_int_eq(lfs_unmount(fs), 0);
	write_image(addr, want + keep[0] * 4096);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_read(fs, a, got, sizeof(got), 0), (ssize_t)sizeof(got));
	ck_assert(memcmp(got, want, sizeof(got)) == 0);
	testfs_finish(fs);
}
END_TEST

/* A state of many one-block files and three large files written a
 * block at a time between them (their leaves spread over the log), then
 * half the small files removed and blocks of the large ones overwritten:
 * every segment is partly dead, and a victim's blocks belong to many
 * files and leaves. */
#define ROUND_SMALL 600u
#define ROUND_BIG 3u
#define ROUND_BIG_BLOCKS 700u

static void
make_round_state(struct lfs_fs *fs, uint64_t *big)
{
	static uint8_t blk[4096];
	char name[16];
	for (unsigned f = 0; f < ROUND_BIG; f++) {
		snprintf(name, sizeof(name), "big%u", f);
		big[f] = testfs_mkfile(fs, LFS_ROOT_INO, name);
	}
	unsigned small = 0;
	for (unsigned b = 0; b < ROUND_BIG_BLOCKS; b++) {
		for (unsigned f = 0; f < ROUND_BIG; f++) {
			fill_pattern(blk, sizeof(blk), f * 100000 + b);
			ck_assert_int_eq(lfs_write(fs, big[f], blk, sizeof(blk), (uint64_t)b * 4096, NULL), 4096);
		}
		if (b % 7 == 0 || small >= ROUND_SMALL)
			ck_assert_int_eq(lfs_flush(fs), 0);
		if (small >= ROUND_SMALL)
			continue;
		snprintf(name, sizeof(name), "s%u", small);
		uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, name);
		fill_pattern(blk, sizeof(blk), 900000 + small);
		ck_assert_int_eq(lfs_write(fs, ino, blk, sizeof(blk), 0, NULL), 4096);
		ck_assert_int_eq(lfs_release(fs, ino), 0);
		lfs_forget(fs, ino, 1);
		small++;
	}
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	for (unsigned i = 0; i < ROUND_SMALL; i += 2) {
		snprintf(name, sizeof(name), "s%u", i);
		ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, name), 0);
	}
	/* every third block of the large files overwritten, in an order
	 * that is not the file's */
	for (unsigned i = 0; i < ROUND_BIG_BLOCKS / 3; i++) {
		unsigned b = (i * 37) % ROUND_BIG_BLOCKS;
		for (unsigned f = 0; f < ROUND_BIG; f++) {
			fill_pattern(blk, sizeof(blk), f * 100000 + b + 50000);
			ck_assert_int_eq(lfs_write(fs, big[f], blk, sizeof(blk), (uint64_t)b * 4096, NULL), 4096);
		}
		if (i % 16 == 0)
			ck_assert_int_eq(lfs_flush(fs), 0);
	}
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
}

static void
expect_round_state(struct lfs_fs *fs, const uint64_t *big)
{
	static uint8_t want[4096], got[4096];
	char name[16];
	for (unsigned f = 0; f < ROUND_BIG; f++)
		for (unsigned b = 0; b < ROUND_BIG_BLOCKS; b++) {
			bool over = false;
			for (unsigned i = 0; i < ROUND_BIG_BLOCKS / 3 && !over; i++)
				over = (i * 37) % ROUND_BIG_BLOCKS == b;
			fill_pattern(want, sizeof(want), f * 100000 + b + (over ? 50000 : 0));
			ck_assert_int_eq(lfs_read(fs, big[f], got, sizeof(got), (uint64_t)b * 4096), 4096);
			ck_assert(memcmp(got, want, sizeof(got)) == 0);
		}
	for (unsigned i = 1; i < ROUND_SMALL; i += 2) {
		snprintf(name, sizeof(name), "s%u", i);
		struct stat st;
		ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, name, &st), 0);
		uint64_t ino = st.st_ino;
		fill_pattern(want, sizeof(want), 900000 + i);
		ck_assert_int_eq(lfs_read(fs, ino, got, sizeof(got), 0), 4096);
		ck_assert(memcmp(got, want, sizeof(got)) == 0);
	}
}

/* A round of cleaning writes each block-map node and inode record it
 * drags along once, however many of its victims' blocks hang below it:
 * its drag D (the nodes and records its flushes wrote) is at most the
 * live tree's M (drag_bytes), even when its moves are flushed in many
 * slices (a small dirty limit), since the moves go file by file and a
 * slice ends only between two files.  Cleaning the same victims one at
 * a time drags the shared nodes and records once per victim. */
START_TEST(round_drags_each_node_once)
{
	testfs_make(32 << 20, SEG);
	struct lfs_opts o = testfs_opts();
	o.dirty_limit = 4 * 4096; /* a slice ends every few files */
	struct lfs_fs *fs = testfs_mount_opts(&o);
	uint64_t big[ROUND_BIG];
	make_round_state(fs, big);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	/* the same state twice: one image for the round, one for cleaning
	 * its victims one at a time */
	char copy[80];
	snprintf(copy, sizeof(copy), "%s.one", testfs_path);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "cp %s %s", testfs_path, copy);
	ck_assert_int_eq(system(cmd), 0);

	fs = testfs_mount_opts(&o);
	struct lfs_stats s0, s1;
	lfs_get_stats(fs, &s0);
	struct lfs_reclaim_tally t = {0};
	ck_assert_int_eq(lfs_clean_reclaim(fs, false, &t), 0);
	lfs_get_stats(fs, &s1);
	ck_assert_uint_eq(s1.rounds, s0.rounds + 1);
	ck_assert_uint_ge(t.victims, 8);
	ck_assert_uint_gt(s1.clean_slices, s0.clean_slices + 4);
	ck_assert_uint_gt(t.drag, 0);
	ck_assert_uint_eq(s1.round_drag_bytes, t.drag);
	ck_assert_uint_eq(s1.round_tree_bytes, fs->drag_bytes);
	ck_assert_msg(t.drag <= fs->drag_bytes, "a round of %llu victims dragged %llu bytes, the tree holds %llu",
		      (unsigned long long)t.victims, (unsigned long long)t.drag,
		      (unsigned long long)fs->drag_bytes);
	uint64_t victims = t.victims, drag = t.drag;
	expect_round_state(fs, big);
	testfs_fsck_clean(fs);
	ck_assert_int_eq(lfs_unmount(fs), 0);

	/* one victim at a time, the emptiest first, as many as the round
	 * cleaned */
	snprintf(cmd, sizeof(cmd), "mv %s %s", copy, testfs_path);
	ck_assert_int_eq(system(cmd), 0);
	fs = testfs_mount_opts(&o);
	uint64_t segbytes = (uint64_t)fs->sb.seg_blocks * fs->bsize;
	for (uint64_t nv = 0; nv < victims; nv++) {
		uint64_t best = UINT64_MAX, at = 0;
		for (uint64_t s = 0; s < fs->sb.nsegs; s++) {
			uint64_t live = lfs_seg_live(fs, s);
			if (fs->segs[s].state == LFS_SEG_DIRTY && live && live < segbytes && live < best) {
				best = live;
				at = s;
			}
		}
		ck_assert_uint_ne(best, UINT64_MAX);
		uint64_t moved = 0;
		ck_assert_int_eq(lfs_clean_segment(fs, at, &moved), 0);
	}
	lfs_get_stats(fs, &s1);
	ck_assert_msg(s1.clean_drag_bytes > drag, "one at a time: %llu bytes, the round: %llu",
		      (unsigned long long)s1.clean_drag_bytes, (unsigned long long)drag);
	expect_round_state(fs, big);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("clean", "mechanism", 60, scan_yields_verifying_blocks, liveness_follows_current_state,
	   cost_counts_what_a_move_writes, affordable_keeps_the_floors, refuses_bad_victims,
	   move_redirties_owner, clean_segment_empties_it, reclaim_gains_or_refuses,
	   clean_reads_only_live_blocks, round_drags_each_node_once)
