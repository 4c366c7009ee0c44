/*
 * check_imap.c — the inode map (imap.c): which numbers allocation hands
 * out (never 0 or the root's, the lowest free one after a release, round
 * to the start at max_inodes, ENOSPC when all are taken), the version a
 * reused number gets, release and the in-use count, the entries' layout
 * in an IMAP block, and that an entry names the block and slot of its
 * inode's record in the log, before and after a remount.
 */
#include "testfs.h"

#include <errno.h>
#include <string.h>

#define MIB (1ull << 20)

static uint32_t
alloc_ok(struct lfs_fs *fs, uint32_t *version)
{
	uint32_t ino = 0;
	ck_assert_int_eq(lfs_imap_alloc(fs, &ino, version), 0);
	return ino;
}

/* A fresh number is in use with no record yet (daddr 0: nothing to read
 * until the flush writes one), and its IMAP block is marked for the next
 * checkpoint.  A released number keeps the version it had, so the next
 * inode to get it has a new generation: an NFS-style handle of the old
 * file (ino, version) never finds the new one. */
START_TEST(alloc_and_release_versions)
{
	testfs_make(64 * MIB, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_uint_eq(fs->inodes_used, 1);
	ck_assert_uint_eq(fs->imap_dirty[0], 0);
	uint32_t v2, v3;
	ck_assert_uint_eq(alloc_ok(fs, &v2), 2);
	ck_assert_uint_eq(alloc_ok(fs, &v3), 3);
	ck_assert_uint_eq(v2, 1);
	ck_assert_uint_eq(v3, 1);
	ck_assert_uint_eq(fs->inodes_used, 3);
	ck_assert_uint_eq(fs->imap_dirty[0], 1);
	const struct lfs_imap_entry *e = lfs_imap_get(fs, 2);
	ck_assert_uint_eq(e->flags, LFS_IMAP_INUSE);
	ck_assert_uint_eq(e->daddr, 0);
	ck_assert_uint_eq(e->slot, 0);
	ck_assert(lfs_imap_valid_ino(fs, 2));

	ck_assert_int_eq(lfs_imap_release(fs, 2, 7), 0);
	ck_assert_uint_eq(fs->inodes_used, 2);
	ck_assert(!lfs_imap_valid_ino(fs, 2));
	e = lfs_imap_get(fs, 2);
	ck_assert_uint_eq(e->flags, 0);
	ck_assert_uint_eq(e->version, 7);
	/* a second release of a free number counts nothing */
	ck_assert_int_eq(lfs_imap_release(fs, 2, 7), 0);
	ck_assert_uint_eq(fs->inodes_used, 2);
	/* the lowest free number comes back first, one generation on */
	uint32_t v;
	ck_assert_uint_eq(alloc_ok(fs, &v), 2);
	ck_assert_uint_eq(v, 8);
	ck_assert_uint_eq(alloc_ok(fs, &v), 4);
	ck_assert_uint_eq(v, 1);
	ck_assert_uint_eq(fs->inodes_used, 4);
	for (uint32_t ino = 2; ino <= 4; ino++)
		ck_assert_int_eq(lfs_imap_release(fs, ino, lfs_imap_get(fs, ino)->version), 0);
	ck_assert_uint_eq(fs->inodes_used, 1);
	testfs_finish(fs);
}
END_TEST

/* A number asked for by name (the root at mkfs, roll-forward) is refused
 * when it is in use or beyond max_inodes, and otherwise taken with the
 * next version, like any other allocation. */
START_TEST(alloc_at_rules)
{
	testfs_make(4 * MIB, 32768);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_uint_eq(fs->sb.max_inodes, 1024);
	uint32_t v = 0;
	ck_assert_int_eq(lfs_imap_alloc_at(fs, LFS_ROOT_INO, &v), -EEXIST);
	ck_assert_int_eq(lfs_imap_alloc_at(fs, 1024, &v), -EEXIST);
	ck_assert_int_eq(lfs_imap_alloc_at(fs, UINT32_MAX, &v), -EEXIST);
	ck_assert_uint_eq(fs->inodes_used, 1);
	ck_assert_int_eq(lfs_imap_alloc_at(fs, 1023, &v), 0);
	ck_assert_uint_eq(v, 1);
	ck_assert_int_eq(lfs_imap_alloc_at(fs, 1023, &v), -EEXIST);
	ck_assert_uint_eq(fs->inodes_used, 2);
	ck_assert_int_eq(lfs_imap_release(fs, 1023, 5), 0);
	ck_assert_int_eq(lfs_imap_alloc_at(fs, 1023, &v), 0);
	ck_assert_uint_eq(v, 6);
	ck_assert_int_eq(lfs_imap_release(fs, 1023, 6), 0);
	testfs_finish(fs);
}
END_TEST

/* max_inodes bounds the map: every number from 2 to max_inodes - 1 can
 * be handed out once, then ENOSPC; the search starts after the last
 * number given and goes round past the end to the lowest, never to 0
 * (no inode) or the root. */
START_TEST(limits_at_max_inodes)
{
	testfs_make(4 * MIB, 32768);
	struct lfs_fs *fs = testfs_mount();
	uint32_t max = fs->sb.max_inodes, v;
	ck_assert_uint_eq(max, 1024);
	/* round from the end */
	fs->ino_hint = 1023;
	ck_assert_uint_eq(alloc_ok(fs, &v), 1023);
	ck_assert_uint_eq(alloc_ok(fs, &v), 2);
	ck_assert_uint_eq(alloc_ok(fs, &v), 3);

	static uint8_t seen[1024];
	memset(seen, 0, sizeof(seen));
	seen[1023] = seen[2] = seen[3] = 1;
	uint32_t n = 3, ino;
	int err;
	while ((err = lfs_imap_alloc(fs, &ino, &v)) == 0) {
		ck_assert_uint_gt(ino, LFS_ROOT_INO);
		ck_assert_uint_lt(ino, 1024);
		ck_assert_msg(!seen[ino], "inode %u handed out twice", ino);
		seen[ino] = 1;
		n++;
	}
	ck_assert_int_eq(err, -ENOSPC);
	ck_assert_uint_eq(n, 1022);
	ck_assert_uint_eq(fs->inodes_used, 1023);
	/* what is given back is found again, lowest first */
	ck_assert_int_eq(lfs_imap_release(fs, 700, 1), 0);
	ck_assert_int_eq(lfs_imap_release(fs, 9, 1), 0);
	ck_assert_uint_eq(alloc_ok(fs, &v), 9);
	ck_assert_uint_eq(v, 2);
	ck_assert_uint_eq(alloc_ok(fs, &v), 700);
	ck_assert_int_eq(lfs_imap_alloc(fs, &ino, &v), -ENOSPC);
	for (ino = 2; ino < 1024; ino++)
		ck_assert_int_eq(lfs_imap_release(fs, ino, lfs_imap_get(fs, ino)->version), 0);
	ck_assert_uint_eq(fs->inodes_used, 1);
	testfs_finish(fs);
}
END_TEST

/* Memory follows the inodes that exist: looking up a number whose block
 * was never used allocates nothing and reads as a free entry, as do
 * numbers beyond the map; the root is the first valid number. */
START_TEST(lookup_outside_and_unused)
{
	testfs_make(64 * MIB, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_uint_eq(fs->sb.max_inodes, 16384);
	ck_assert_uint_eq(fs->n_imap_blocks, 64);
	static const struct lfs_imap_entry zero;
	ck_assert_ptr_null(fs->imap[63]);
	ck_assert(memcmp(lfs_imap_get(fs, 16383), &zero, sizeof(zero)) == 0);
	ck_assert_ptr_null(fs->imap[63]);
	ck_assert(memcmp(lfs_imap_get(fs, 16384), &zero, sizeof(zero)) == 0);
	ck_assert(memcmp(lfs_imap_get(fs, 1ull << 40), &zero, sizeof(zero)) == 0);
	ck_assert(!lfs_imap_valid_ino(fs, 0));
	ck_assert(lfs_imap_valid_ino(fs, LFS_ROOT_INO));
	ck_assert(!lfs_imap_valid_ino(fs, 2));
	ck_assert(!lfs_imap_valid_ino(fs, 16384));
	ck_assert(!lfs_imap_valid_ino(fs, 1ull << 32));
	/* the entry to change: its block (256 entries of 16 bytes) appears */
	struct lfs_imap_entry *e = lfs_imap_ent(fs, 16383);
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_nonnull(fs->imap[63]);
	ck_assert_ptr_eq(e, &fs->imap[63][255]);
	ck_assert_ptr_null(fs->imap[62]);
	testfs_finish(fs);
}
END_TEST

/* An entry set from a record (roll-forward, the flush) is in use, an
 * orphan if the record has no links, and is encoded at its place in its
 * IMAP block: entry ino % 256 of block ino / 256, daddr at 0, version at
 * 8, slot at 12, flags at 14, little-endian. */
START_TEST(set_and_encode)
{
	testfs_make(64 * MIB, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint32_t ino = 300;
	ck_assert_int_eq(lfs_imap_set(fs, ino, 0x123456789aull, 7, 9, true), 0);
	ck_assert_uint_eq(fs->inodes_used, 2);
	ck_assert_uint_eq(fs->imap_dirty[1], 1);
	ck_assert_uint_eq(lfs_imap_get(fs, ino)->flags, LFS_IMAP_INUSE | LFS_IMAP_ORPHAN);
	ck_assert_int_eq(lfs_imap_set(fs, ino, 0x123456789aull, 7, 9, false), 0);
	ck_assert_uint_eq(fs->inodes_used, 2);
	uint8_t blk[4096];
	lfs_imap_encode_block(fs, 1, blk);
	const uint8_t *p = blk + 44 * 16;
	ck_assert_uint_eq(lfs_get64(p), 0x123456789aull);
	ck_assert_uint_eq(p[0], 0x9a);
	ck_assert_uint_eq(lfs_get32(p + 8), 9);
	ck_assert_uint_eq(lfs_get16(p + 12), 7);
	ck_assert_uint_eq(lfs_get16(p + 14), LFS_IMAP_INUSE);
	for (unsigned i = 0; i < 4096; i++)
		if (i < 44 * 16 || i >= 45 * 16)
			ck_assert_msg(blk[i] == 0, "byte %u of the block is %u", i, blk[i]);
	/* released: only the version stays */
	ck_assert_int_eq(lfs_imap_release(fs, ino, 9), 0);
	ck_assert_uint_eq(fs->inodes_used, 1);
	lfs_imap_encode_block(fs, 1, blk);
	ck_assert_uint_eq(lfs_get64(p), 0);
	ck_assert_uint_eq(lfs_get32(p + 8), 9);
	ck_assert_uint_eq(lfs_get32(p + 12), 0);
	testfs_finish(fs);
}
END_TEST

/* A new file that nothing holds (lfs_create opens it and gives a
 * reference): its number is free again as soon as it is unlinked. */
static uint64_t
new_file(struct lfs_fs *fs, const char *name)
{
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, name);
	ck_assert_int_eq(lfs_release(fs, ino), 0);
	lfs_forget(fs, ino, 1);
	return ino;
}

/* Where the entry of `ino` points, its record must be: an INODE block
 * whose record at slot * 64 is that inode with the entry's version. */
static void
entry_names_record(struct lfs_fs *fs, uint64_t ino, size_t inline_len)
{
	const struct lfs_imap_entry *e = lfs_imap_get(fs, ino);
	ck_assert_uint_eq(e->flags, LFS_IMAP_INUSE);
	ck_assert(lfs_addr_valid(fs, e->daddr));
	struct lfs_dinode di;
	ck_assert_int_eq(lfs_inode_read_record(fs, e->daddr, e->slot, &di, NULL, NULL), 0);
	ck_assert_uint_eq(di.ino, ino);
	ck_assert_uint_eq(di.version, e->version);
	ck_assert_uint_eq(di.size, inline_len);
}

/* Through the filesystem: after a flush each entry names its inode's
 * record; an unlinked file's number is released with its version and
 * reused one generation on; a checkpoint and remount keep it all. */
START_TEST(entries_follow_records)
{
	testfs_make(64 * MIB, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	static const size_t len[3] = { 10, 1500, 3000 };
	uint64_t ino[3];
	uint8_t buf[4096];
	for (unsigned i = 0; i < 3; i++) {
		char name[4] = { 'f', (char)('0' + i), 0 };
		ino[i] = new_file(fs, name);
		fill_pattern(buf, len[i], i);
		ck_assert_int_eq(lfs_write(fs, ino[i], buf, len[i], 0, NULL), (ssize_t)len[i]);
	}
	ck_assert_uint_eq(ino[0], 2);
	ck_assert_uint_eq(ino[2], 4);
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	for (unsigned i = 0; i < 3; i++)
		entry_names_record(fs, ino[i], len[i]);
	/* a flush writes records by decreasing charge (3,264 bytes count a
	 * block, 1,792 half, 320 a twelfth) so that a block holds one class:
	 * the largest alone, then the other two together */
	const struct lfs_imap_entry *e0 = lfs_imap_get(fs, ino[0]), *e1 = lfs_imap_get(fs, ino[1]),
				    *e2 = lfs_imap_get(fs, ino[2]);
	ck_assert_uint_eq(e2->slot, 0);
	ck_assert_uint_eq(e1->daddr, e2->daddr + 1);
	ck_assert_uint_eq(e1->slot, 0);
	ck_assert_uint_eq(e0->daddr, e1->daddr);
	ck_assert_uint_eq(e0->slot, 28);

	uint32_t old = lfs_imap_get(fs, ino[1])->version;
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "f1"), 0);
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	ck_assert_uint_eq(lfs_imap_get(fs, ino[1])->flags, 0);
	ck_assert_uint_eq(lfs_imap_get(fs, ino[1])->version, old);
	uint64_t again = new_file(fs, "g");
	ck_assert_uint_eq(again, ino[1]);
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	ck_assert_uint_eq(lfs_imap_get(fs, again)->version, old + 1);
	entry_names_record(fs, again, 0);

	struct lfs_imap_entry before[5];
	for (uint64_t i = 0; i < 5; i++)
		before[i] = *lfs_imap_get(fs, i);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	for (uint64_t i = 0; i < 5; i++) {
		const struct lfs_imap_entry *e = lfs_imap_get(fs, i);
		ck_assert_uint_eq(e->daddr, before[i].daddr);
		ck_assert_uint_eq(e->slot, before[i].slot);
		ck_assert_uint_eq(e->version, before[i].version);
		ck_assert_uint_eq(e->flags, before[i].flags);
	}
	ck_assert_uint_eq(fs->inodes_used, 4);
	entry_names_record(fs, ino[2], len[2]);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("imap", "inode map", 30, alloc_and_release_versions, alloc_at_rules, limits_at_max_inodes,
	   lookup_outside_and_unused, set_and_encode, entries_follow_records)
