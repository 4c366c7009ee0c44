/*
 * check_recover.c — roll-forward (recover.c, and its usage accounting in
 * rf_account.c and rf_repl.c, from the lists of replaced addresses the
 * writer logs, repl.c; the relink records an fsync writes, relink.c):
 * what a mount after a crash reads must follow what was
 * logged since the checkpoint, not the size of the files touched, and
 * the usage table it rebuilds must be the one fsck computes from the
 * inodes, whatever a crafted log makes it count.
 */
#include "testfs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>

/* what is tested is the log read back, not the host's disk flushing it */
TESTFS_IN_MEMORY


#define BIG (256ull << 20)     /* 65,536 blocks: 128 leaves, 4 levels deep at most */
#define CHUNK (4u << 20)

/* `len` bytes of pattern `seed` at 0, in chunks. */
static void
fill_file(struct lfs_fs *fs, uint64_t ino, uint64_t len, unsigned seed)
{
	uint8_t *buf = malloc(CHUNK);
	for (uint64_t off = 0; off < len; off += CHUNK) {
		fill_pattern(buf, CHUNK, seed + (unsigned)(off / CHUNK));
		ck_assert_int_eq(lfs_write(fs, ino, buf, CHUNK, (off_t)off, NULL), (ssize_t)CHUNK);
	}
	free(buf);
}

static struct lfs_fs *
mount_comparing_maps(bool compare)
{
	struct lfs_opts o = testfs_opts();
	o.rf_compare_maps = compare;
	return testfs_mount_opts(&o);
}

/* A crash after fsynced one-byte writes all over a 256 MiB file: the
 * mount reads about what was logged (each group: the data block, the
 * path of nodes above it, the record, a summary).  Counted from the
 * addresses each record replaced (logged with it), it reads nothing
 * older but the file's record; compared map to map (an image written
 * before those were logged), at most one old path per group, asked for
 * ahead, not both versions of the whole 128-leaf block map for every
 * group (about 1 MiB a group, 300 MiB here). */
static void
large_file_crash(bool compare)
{
	testfs_make(768ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "big");
	fill_file(fs, ino, BIG, 7);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	lfs_abandon(fs);

	/* the mount of the same image with nothing after the checkpoint */
	fs = testfs_mount();
	uint64_t base = testfs_read(fs);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t w0 = testfs_written(fs);
	enum { N = 300 };
	uint64_t offs[N];
	uint32_t x = 12345;
	for (int i = 0; i < N; i++) {
		x = x * 1103515245u + 12345u;
		offs[i] = ((uint64_t)x * 4099u) % BIG;
		uint8_t c = (uint8_t)(i + 1);
		ck_assert_int_eq(lfs_write(fs, ino, &c, 1, (off_t)offs[i], NULL), 1);
		ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	}
	uint64_t logged = testfs_written(fs) - w0;
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	uint64_t seq = st.ckpt_seq;
	lfs_abandon(fs); /* crash */

	uint64_t t0 = lfs_now_ns();
	fs = mount_comparing_maps(compare);
	double ms = (double)(lfs_now_ns() - t0) / 1e6;
	uint64_t got = testfs_read(fs);
	fprintf(stderr, "roll-forward of %d fsynced writes to a %llu MiB file%s: %.1f ms, read %.1f MiB "
		"(clean mount %.1f MiB; logged since the checkpoint %.1f MiB)\n", N,
		(unsigned long long)(BIG >> 20), compare ? ", maps compared" : "", ms, got / 1048576.0,
		base / 1048576.0, logged / 1048576.0);
	/* the workload must not have checkpointed, or nothing is rolled forward */
	lfs_get_stats(fs, &st);
	ck_assert_uint_eq(st.ckpt_seq, seq + 1);
	fprintf(stderr, "records counted from their lists %llu; older blocks read %llu, asked for ahead %llu, "
		"summaries read ahead %llu\n",
		(unsigned long long)fs->rf_listed, (unsigned long long)fs->rf_old_reads,
		(unsigned long long)fs->rf_old_reads_ahead, (unsigned long long)fs->rf_summaries_ahead);
	if (compare) {
		ck_assert_msg(got <= base + 3 * logged, "mount read %llu bytes, more than 3x the %llu logged",
			      (unsigned long long)(got - base), (unsigned long long)logged);
		/* the old leaves were asked for before they were needed, all
		 * but those of the first groups (what leads to them is not
		 * yet in memory): the mount does not wait for the device once
		 * per leaf; and the summaries that check them, each segment's
		 * chain walked beside the others' (verify.c) */
		ck_assert_uint_eq(fs->rf_listed, 0);
		ck_assert_uint_gt(fs->rf_summaries_ahead, 0);
		ck_assert_uint_gt(fs->rf_old_reads, 100);
		ck_assert_msg(fs->rf_old_reads_ahead * 10 >= fs->rf_old_reads * 9,
			      "only %llu of the %llu older blocks read were asked for ahead",
			      (unsigned long long)fs->rf_old_reads_ahead, (unsigned long long)fs->rf_old_reads);
	} else {
		/* what was logged, and of the older blocks the file's record;
		 * checking the checkpoint's table blocks may walk the chain of
		 * the segment they share with the first groups: a segment more */
		ck_assert_uint_eq(fs->rf_listed, N);
		ck_assert_uint_le(fs->rf_old_reads, 1);
		ck_assert_msg(got <= base + logged + (uint64_t)fs->sb.seg_blocks * fs->bsize,
			      "mount read %llu bytes, %llu logged", (unsigned long long)(got - base),
			      (unsigned long long)logged);
	}
	/* every write is there, the rest is untouched */
	uint8_t *back = malloc(CHUNK), *want = malloc(CHUNK);
	for (uint64_t off = 0; off < BIG; off += CHUNK) {
		fill_pattern(want, CHUNK, 7 + (unsigned)(off / CHUNK));
		for (int j = 0; j < N; j++)
			if (offs[j] >= off && offs[j] < off + CHUNK)
				want[offs[j] - off] = (uint8_t)(j + 1);
		ck_assert_int_eq(lfs_read(fs, ino, back, CHUNK, (off_t)off), (ssize_t)CHUNK);
		ck_assert_msg(memcmp(back, want, CHUNK) == 0, "wrong content in the 4 MiB at %llu",
			      (unsigned long long)off);
	}
	free(back);
	free(want);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}

START_TEST(large_file_reads_what_was_logged)
{
	large_file_crash(false);
}
END_TEST

START_TEST(large_file_maps_compared)
{
	large_file_crash(true);
}
END_TEST

/* What frees blocks without logging new ones — punch, truncate, unlink,
 * an xattr removed, an open file unlinked — must be uncounted by
 * roll-forward exactly as by the running filesystem: fsck recomputes the
 * usage table from the inodes and compares. */
START_TEST(frees_are_accounted)
{
	testfs_make(768ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t a = testfs_mkfile(fs, LFS_ROOT_INO, "a"), b = testfs_mkfile(fs, LFS_ROOT_INO, "b"), c = testfs_mkfile(fs, LFS_ROOT_INO, "c"), d = testfs_mkfile(fs, LFS_ROOT_INO, "d");
	fill_file(fs, a, 64 << 20, 1);
	fill_file(fs, b, 64 << 20, 2);
	fill_file(fs, c, 32 << 20, 3);
	fill_file(fs, d, 16 << 20, 4);
	ck_assert_int_eq(lfs_setxattr(fs, a, "user.x", "1", 1, 0), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);

	/* after the checkpoint, each step fsynced */
	ck_assert_int_eq(lfs_fallocate(fs, a, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 3 << 20, 5 << 20), 0);
	ck_assert_int_eq(lfs_fsync(fs, a, false), 0);
	ck_assert_int_eq(lfs_removexattr(fs, a, "user.x"), 0);
	ck_assert_int_eq(lfs_fsync(fs, a, false), 0);
	struct stat attr = { .st_size = 5 << 20 }, st;
	ck_assert_int_eq(lfs_setattr(fs, b, &attr, LFS_SET_SIZE, &st), 0);
	ck_assert_int_eq(lfs_fsync(fs, b, false), 0);
	uint8_t blk[8192];
	fill_pattern(blk, sizeof(blk), 9);
	ck_assert_int_eq(lfs_write(fs, b, blk, sizeof(blk), 40 << 20, NULL), (ssize_t)sizeof(blk));
	ck_assert_int_eq(lfs_fsync(fs, b, false), 0);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "c"), 0);
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	ck_assert_int_eq(lfs_open(fs, d, O_RDWR), 0);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "d"), 0);
	ck_assert_int_eq(lfs_write(fs, d, blk, sizeof(blk), 10 << 20, NULL), (ssize_t)sizeof(blk));
	ck_assert_int_eq(lfs_fsync(fs, d, false), 0);
	lfs_abandon(fs); /* crash, d still open */

	fs = testfs_mount();
	testfs_fsck_clean(fs);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "c", &st), -ENOENT);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "b", &st), 0);
	ck_assert_int_eq(st.st_size, (40 << 20) + 8192);
	uint8_t back[8192];
	ck_assert_int_eq(lfs_read(fs, b, back, sizeof(back), 40 << 20), (ssize_t)sizeof(back));
	ck_assert(memcmp(back, blk, sizeof(blk)) == 0);
	ck_assert_int_eq(lfs_read(fs, b, back, sizeof(back), 5 << 20), (ssize_t)sizeof(back));
	for (size_t i = 0; i < sizeof(back); i++)
		ck_assert_uint_eq(back[i], 0);
	ck_assert_int_eq(lfs_read(fs, a, back, sizeof(back), 4 << 20), (ssize_t)sizeof(back));
	for (size_t i = 0; i < sizeof(back); i++)
		ck_assert_uint_eq(back[i], 0);
	ck_assert_int_eq(lfs_getxattr(fs, a, "user.x", back, sizeof(back)), -ENODATA);
	lfs_forget(fs, st.st_ino, 1);
	testfs_finish(fs);
}
END_TEST

/* The usage table after roll-forward of everything of a file system
 * changing after a checkpoint (each step fsynced): counted from the
 * addresses each record replaced, it must be the table that comparing
 * the block maps gives, segment by segment, and the one fsck computes. */
START_TEST(lists_count_as_maps_compared)
{
	testfs_make(256ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t a = testfs_mkfile(fs, LFS_ROOT_INO, "a"), b = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	uint64_t c = testfs_mkfile(fs, LFS_ROOT_INO, "c"), d = testfs_mkfile(fs, LFS_ROOT_INO, "d");
	uint64_t e = testfs_mkfile(fs, LFS_ROOT_INO, "e");
	fill_file(fs, a, 32 << 20, 1);
	fill_file(fs, b, 8 << 20, 2);
	fill_file(fs, c, 4 << 20, 3);
	static uint8_t big[3 * 4096 + 100], blk[8192];
	fill_pattern(big, sizeof(big), 4);
	fill_pattern(blk, sizeof(blk), 5);
	ck_assert_int_eq(lfs_setxattr(fs, d, "user.v", big, sizeof(big), 0), 0);
	ck_assert_int_eq(lfs_write(fs, e, "tiny", 4, 0, NULL), 4);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t a_seg = lfs_addr_seg(fs, testfs_addr_of(fs, a, 100));

	/* after the checkpoint */
	uint32_t x = 99;
	for (int i = 0; i < 200; i++) {
		x = x * 1103515245u + 12345u;
		ck_assert_int_eq(lfs_write(fs, a, blk, 4096, (off_t)((x % 8192) * 4096), NULL), 4096);
		if (i % 10 == 0)
			ck_assert_int_eq(lfs_fsync(fs, a, false), 0);
	}
	ck_assert_int_eq(lfs_fsync(fs, a, false), 0);
	struct stat attr = { .st_size = 3 << 20 }, st;
	ck_assert_int_eq(lfs_setattr(fs, a, &attr, LFS_SET_SIZE, &st), 0);
	ck_assert_int_eq(lfs_write(fs, a, blk, sizeof(blk), 20 << 20, NULL), (ssize_t)sizeof(blk));
	ck_assert_int_eq(lfs_fsync(fs, a, false), 0);
	ck_assert_int_eq(lfs_fallocate(fs, b, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1 << 20, 2 << 20), 0);
	ck_assert_int_eq(lfs_write(fs, b, blk, sizeof(blk), 5 << 20, NULL), (ssize_t)sizeof(blk));
	ck_assert_int_eq(lfs_fsync(fs, b, false), 0);
	fill_pattern(big, sizeof(big), 6);
	ck_assert_int_eq(lfs_setxattr(fs, d, "user.v", big, sizeof(big), 0), 0);
	ck_assert_int_eq(lfs_setxattr(fs, d, "user.w", "w", 1, 0), 0);
	ck_assert_int_eq(lfs_fsync(fs, d, false), 0);
	ck_assert_int_eq(lfs_removexattr(fs, d, "user.v"), 0);
	ck_assert_int_eq(lfs_fsync(fs, d, false), 0);
	ck_assert_int_eq(lfs_write(fs, e, blk, sizeof(blk), 100, NULL), (ssize_t)sizeof(blk));
	ck_assert_int_eq(lfs_fsync(fs, e, false), 0);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "c"), 0);
	ck_assert_int_eq(lfs_rename(fs, LFS_ROOT_INO, "e", LFS_ROOT_INO, "e2", 0), 0);
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	ck_assert_int_eq(lfs_write(fs, f, blk, sizeof(blk), 0, NULL), (ssize_t)sizeof(blk));
	ck_assert_int_eq(lfs_fsync(fs, f, false), 0);
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	/* the cleaner moves what is left of a's first segment */
	uint64_t moved = 0;
	struct lfs_stats s0, s1;
	lfs_get_stats(fs, &s0);
	ck_assert_int_eq(lfs_clean_segment(fs, a_seg, &moved), 0);
	ck_assert_uint_gt(moved, 0);
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	lfs_get_stats(fs, &s1);
	ck_assert_uint_eq(s1.ckpt_seq, s0.ckpt_seq); /* or nothing of it is rolled forward */
	lfs_abandon(fs); /* crash */

	size_t len;
	uint8_t *img = testfs_image_load(&len);
	fs = mount_comparing_maps(true);
	ck_assert_uint_eq(fs->rf_listed, 0);
	uint64_t nsegs = fs->sb.nsegs;
	uint32_t *live = malloc(nsegs * sizeof(*live));
	for (uint64_t s = 0; s < nsegs; s++)
		live[s] = fs->segs[s].live_bytes;
	testfs_fsck_clean(fs);
	lfs_abandon(fs);

	testfs_image_store(img, len);
	free(img);
	fs = mount_comparing_maps(false);
	ck_assert_uint_gt(fs->rf_listed, 10);
	for (uint64_t s = 0; s < nsegs; s++)
		ck_assert_msg(fs->segs[s].live_bytes == live[s], "segment %llu: %u live bytes from the lists, %u "
			      "with the maps compared", (unsigned long long)s, fs->segs[s].live_bytes, live[s]);
	free(live);
	testfs_fsck_clean(fs);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "c", &st), -ENOENT);
	uint8_t back[8192];
	ck_assert_int_eq(lfs_read(fs, a, back, sizeof(back), 20 << 20), (ssize_t)sizeof(back));
	ck_assert(memcmp(back, blk, sizeof(back)) == 0);
	ck_assert_int_eq(lfs_getxattr(fs, d, "user.w", back, sizeof(back)), 1);
	testfs_finish(fs);
}
END_TEST

/* A list the writer did not write (an address outside the log, as a
 * crafted summary, sealed again, could hold) is not taken: the group's
 * inodes are compared map to map, and the table is still right. */
START_TEST(malformed_list_compares_maps)
{
	testfs_make(64ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t a = testfs_mkfile(fs, LFS_ROOT_INO, "a");
	fill_file(fs, a, 8 << 20, 1);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint8_t blk[4096];
	fill_pattern(blk, sizeof(blk), 2);
	ck_assert_int_eq(lfs_write(fs, a, blk, sizeof(blk), 4096 * 700, NULL), (ssize_t)sizeof(blk));
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, a, &ip), 0);
	lfs_repl_note(fs, ip, fs->sb.nblocks + 5, LFS_BK_DATA);
	ck_assert_int_eq(lfs_fsync(fs, a, false), 0);
	lfs_abandon(fs);

	testfs_capture_log();
	fs = testfs_mount();
	ck_assert_int_eq(testfs_release_log("an address outside the log; the group's inodes are compared map to map"),
			 1);
	ck_assert_uint_eq(fs->rf_listed, 0);
	testfs_fsck_clean(fs);
	uint8_t back[4096];
	ck_assert_int_eq(lfs_read(fs, a, back, sizeof(back), 4096 * 700), (ssize_t)sizeof(back));
	ck_assert(memcmp(back, blk, sizeof(back)) == 0);
	testfs_finish(fs);
}
END_TEST

/* Inode records count their share of a block (RECORD_CHARGE): after
 * files of mixed inline sizes, written in groups, some rewritten into
 * another size class and some removed, then a crash, roll-forward's
 * usage table is the one fsck computes; and 2,100-byte files, which
 * take a block each, count a block each (df sees what they hold). */
START_TEST(record_charges)
{
	testfs_make(64ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	ck_assert(fs->sb.feature_incompat & LFS_FEATURE_RECORD_CHARGE);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	static const size_t sizes[] = { 0, 100, 600, 1000, 1800, 2100, 3000, 3840 };
	uint8_t buf[4096];
	char name[32];
	uint64_t ino[96];
	for (unsigned i = 0; i < 96; i++) {
		snprintf(name, sizeof(name), "m%u", i);
		ino[i] = testfs_mkfile(fs, LFS_ROOT_INO, name);
		size_t n = sizes[(i * 5) % 8];
		fill_pattern(buf, n, i);
		ck_assert_int_eq(lfs_write(fs, ino[i], buf, n, 0, NULL), (ssize_t)n);
		if (i % 10 == 9)
			ck_assert_int_eq(lfs_fsync(fs, ino[i], false), 0);
	}
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	for (unsigned i = 0; i < 96; i += 3) {
		size_t n = sizes[(i * 3 + 1) % 8];
		struct stat attr = { .st_size = 0 }, st;
		ck_assert_int_eq(lfs_setattr(fs, ino[i], &attr, LFS_SET_SIZE, &st), 0);
		fill_pattern(buf, n, i + 1000);
		ck_assert_int_eq(lfs_write(fs, ino[i], buf, n, 0, NULL), (ssize_t)n);
	}
	for (unsigned i = 1; i < 96; i += 7) {
		snprintf(name, sizeof(name), "m%u", i);
		ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, name), 0);
	}
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	lfs_abandon(fs);

	fs = testfs_mount();
	testfs_fsck_clean(fs);
	struct stat dir0, dir1;
	ck_assert_int_eq(lfs_getattr(fs, LFS_ROOT_INO, &dir0), 0);
	struct lfs_stats st0, st1;
	lfs_get_stats(fs, &st0);
	for (unsigned i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "s%u", i);
		uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, name);
		fill_pattern(buf, 2100, i);
		ck_assert_int_eq(lfs_write(fs, f, buf, 2100, 0, NULL), 2100);
	}
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	lfs_get_stats(fs, &st1);
	ck_assert_int_eq(lfs_getattr(fs, LFS_ROOT_INO, &dir1), 0);
	/* 200 records of a block each, and the directory's new blocks */
	ck_assert_uint_eq(st1.live_bytes - st0.live_bytes, 200u * 4096 + (uint64_t)(dir1.st_blocks - dir0.st_blocks) * 512);
	testfs_finish(fs);
}
END_TEST

/* A crafted log: an INODE block whose records count more than a block
 * (a 2,176-byte record counts a block, and two more records share it).
 * No RECORD_CHARGE writer closes a block so late; the writer here is
 * made to by clearing the feature in memory only, so the image keeps
 * it.  Roll-forward applies the records while they fit in a block's
 * count and not the rest: those inodes keep their checkpointed version,
 * the usage table stays within each segment, and fsck agrees. */
START_TEST(crafted_block_charges)
{
	testfs_make(64ull << 20, 32768);
	struct lfs_fs *fs = testfs_mount();
	ck_assert(fs->sb.feature_incompat & LFS_FEATURE_RECORD_CHARGE);
	static const size_t old_len = 100, new_len[3] = { 1900, 1100, 200 };
	uint8_t buf[4096], back[4096];
	uint64_t ino[3];
	for (unsigned i = 0; i < 3; i++) {
		char name[8] = { 'f', (char)('0' + i), 0 };
		ino[i] = testfs_mkfile(fs, LFS_ROOT_INO, name);
		fill_pattern(buf, old_len, i);
		ck_assert_int_eq(lfs_write(fs, ino[i], buf, old_len, 0, NULL), (ssize_t)old_len);
	}
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_eq(lfs_inode_reclen(new_len[0]) + lfs_inode_reclen(new_len[1]) + lfs_inode_reclen(new_len[2]),
			  4096);
	fs->sb.feature_incompat &= ~LFS_FEATURE_RECORD_CHARGE;
	for (unsigned i = 0; i < 3; i++) {
		fill_pattern(buf, new_len[i], i + 10);
		ck_assert_int_eq(lfs_write(fs, ino[i], buf, new_len[i], 0, NULL), (ssize_t)new_len[i]);
	}
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	lfs_abandon(fs);

	fs = testfs_mount();
	ck_assert(fs->sb.feature_incompat & LFS_FEATURE_RECORD_CHARGE);
	for (unsigned i = 0; i < 3; i++) {
		size_t n = i == 0 ? new_len[i] : old_len;
		struct stat st;
		ck_assert_int_eq(lfs_getattr(fs, ino[i], &st), 0);
		ck_assert_int_eq(st.st_size, (off_t)n);
		fill_pattern(buf, n, i == 0 ? i + 10 : i);
		ck_assert_int_eq(lfs_read(fs, ino[i], back, sizeof(back), 0), (ssize_t)n);
		ck_assert_msg(memcmp(back, buf, n) == 0, "file %u: wrong content", i);
	}
	for (uint64_t seg = 0; seg < fs->sb.nsegs; seg++)
		ck_assert_uint_le(fs->segs[seg].live_bytes, 32768);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* Whatever a crafted log makes roll-forward count, a segment's usage
 * ends within the segment, so the checkpoint that records it mounts; on
 * the way, roll-forward may count past it (new blocks before the old
 * ones they replace), and nothing of that may be lost. */
START_TEST(usage_stays_within_segment)
{
	testfs_make(64ull << 20, 32768);
	struct lfs_fs *fs = testfs_mount();
	uint64_t seg = fs->cur_seg;
	uint32_t live = fs->segs[seg].live_bytes;
	lfs_seg_use(fs, lfs_seg_first_block(fs, seg), 3 * 32768);
	ck_assert_uint_eq(fs->segs[seg].live_bytes, live + 3 * 32768);
	lfs_seg_unuse(fs, lfs_seg_first_block(fs, seg), 3 * 32768);
	ck_assert_uint_eq(fs->segs[seg].live_bytes, live);
	lfs_seg_use(fs, lfs_seg_first_block(fs, seg), 3 * 32768);
	lfs_seg_fit_usage(fs, seg);
	ck_assert_uint_eq(fs->segs[seg].live_bytes, 32768);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	lfs_abandon(fs);
	fs = testfs_mount();
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

/* A crafted log that counts blocks twice: after the checkpoint, file b's
 * record names every block of file a, so roll-forward counts a's full
 * segments twice over.  The mount settles each such segment to its size
 * (logged), and the checkpoint it then writes mounts again: the crafted
 * image costs its own consistency (fsck's business), never the mount. */
START_TEST(double_counted_log_mounts)
{
	testfs_make(64ull << 20, 32768);
	struct lfs_fs *fs = testfs_mount();
	uint64_t a = testfs_mkfile(fs, LFS_ROOT_INO, "a"), b = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	enum { N = 21 };
	static uint8_t buf[N * 4096];
	fill_pattern(buf, sizeof(buf), 5);
	ck_assert_int_eq(lfs_write(fs, a, buf, sizeof(buf), 0, NULL), (ssize_t)sizeof(buf));
	ck_assert_int_eq(lfs_fsync(fs, a, false), 0);
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, b, &ip), 0);
	for (uint64_t k = 0; k < N; k++) {
		uint64_t old;
		ck_assert_int_eq(lfs_bmap_set(fs, ip, k, testfs_addr_of(fs, a, k), &old), 0);
	}
	ip->di.flags &= ~LFS_DI_INLINE;
	ip->di.size = sizeof(buf);
	lfs_inode_dirty(fs, ip);
	ip->repl_lost = true; /* as crafted: no list of what b's record replaced */
	ck_assert_int_eq(lfs_fsync(fs, b, false), 0);
	lfs_abandon(fs);

	testfs_capture_log();
	fs = testfs_mount();
	int settled = testfs_release_log("more than it holds");
	ck_assert_int_ge(settled, 1);
	for (uint64_t seg = 0; seg < fs->sb.nsegs; seg++)
		ck_assert_uint_le(fs->segs[seg].live_bytes, 32768);
	uint8_t back[4096];
	ck_assert_int_eq(lfs_read(fs, b, back, sizeof(back), 4096 * 7), (ssize_t)sizeof(back));
	ck_assert(memcmp(back, buf + 4096 * 7, sizeof(back)) == 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	lfs_abandon(fs);
	fs = testfs_mount();
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

/* An 8 MiB file: blocks 524.. are in tree 1, three of its leaves, under
 * one node.  `relink`: the image has LFS_FEATURE_RELINK. */
static struct lfs_fs *
relink_fs(bool relink, uint64_t *ino)
{
	testfs_make_without(64 << 20, 1 << 20, relink ? 0 : LFS_FEATURE_RELINK);
	struct lfs_fs *fs = testfs_mount();
	*ino = testfs_mkfile(fs, LFS_ROOT_INO, "db");
	fill_file(fs, *ino, 8u << 20, 3);
	ck_assert_int_eq(lfs_fsync(fs, *ino, false), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	return fs;
}

static const uint64_t relink_offs[] = { 600 * 4096 + 100, 1200 * 4096, 1201 * 4096 + 7, 1700 * 4096 };

/* Blocks in two leaves of tree 1 overwritten, and each fsync's group:
 * returns the bytes the fsync wrote. */
static uint64_t
overwrite_fsync(struct lfs_fs *fs, uint64_t ino, int from, int to, uint8_t c)
{
	uint64_t w0 = testfs_written(fs);
	for (int i = from; i < to; i++)
		ck_assert_int_eq(lfs_write(fs, ino, &c, 1, (off_t)relink_offs[i], NULL), 1);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	return testfs_written(fs) - w0;
}

static void
relink_check(struct lfs_fs *fs, uint64_t ino, const uint8_t *want)
{
	uint8_t *buf = malloc(CHUNK), *pat = malloc(CHUNK);
	for (uint64_t off = 0; off < (8u << 20); off += CHUNK) {
		fill_pattern(pat, CHUNK, 3 + (unsigned)(off / CHUNK));
		for (int i = 0; i < 4; i++)
			if (relink_offs[i] >= off && relink_offs[i] < off + CHUNK)
				pat[relink_offs[i] - off] = want[i];
		ck_assert_int_eq(lfs_read(fs, ino, buf, CHUNK, (off_t)off), (ssize_t)CHUNK);
		ck_assert_msg(memcmp(buf, pat, CHUNK) == 0, "file differs in the 4 MiB at %llu",
			      (unsigned long long)off);
	}
	free(buf);
	free(pat);
}

/* An fsync of overwrites in tree 1 logs the data, the leaves and the
 * record, not the node above the leaves: relink records.  Chained, then
 * a crash: the mount puts the leaves in place and its checkpoint writes
 * the node above them, so a second mount rolls nothing forward; fsck is
 * clean on the mounted filesystem (leaves named by a node in memory
 * only), after the crash read-only (relinks in memory) and after the
 * recovering mount. */
START_TEST(fsync_logs_leaves_not_nodes)
{
	uint64_t ino;
	struct lfs_fs *fs = relink_fs(true, &ino);
	struct lfs_stats st;
	/* a summary, 2 data blocks, 2 leaves, an INODE block */
	ck_assert_uint_eq(overwrite_fsync(fs, ino, 0, 2, 'a'), 6 * 4096);
	ck_assert_uint_eq(overwrite_fsync(fs, ino, 2, 4, 'b'), 6 * 4096);
	/* two blocks in one leaf */
	ck_assert_uint_eq(overwrite_fsync(fs, ino, 1, 3, 'c'), 5 * 4096);
	lfs_get_stats(fs, &st);
	ck_assert_uint_eq(st.relink_records, 3);
	const uint8_t want[4] = { 'a', 'c', 'c', 'b' };
	relink_check(fs, ino, want);
	testfs_fsck_clean(fs);
	lfs_abandon(fs); /* crash */

	fs = testfs_mount_ro();
	ck_assert_uint_eq(fs->rf_relinked, 3);
	relink_check(fs, ino, want);
	testfs_fsck_clean(fs);
	lfs_abandon(fs);

	fs = testfs_mount();
	ck_assert_uint_eq(fs->rf_relinked, 3);
	relink_check(fs, ino, want);
	testfs_fsck_clean(fs);
	lfs_abandon(fs); /* crash again: the recovering mount's checkpoint holds it all */

	fs = testfs_mount();
	ck_assert_uint_eq(fs->rf_relinked, 0);
	relink_check(fs, ino, want);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* Relink records, then a plain flush (a checkpoint) and more of them,
 * and a truncate that drops a leaf: the plain records carry the nodes,
 * the relinks after them start from those. */
START_TEST(relinks_around_plain_records)
{
	uint64_t ino;
	struct lfs_fs *fs = relink_fs(true, &ino);
	overwrite_fsync(fs, ino, 0, 2, 'd');
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	overwrite_fsync(fs, ino, 1, 4, 'e');
	/* not a relink: a leaf's pointers go */
	struct stat a = { .st_size = (8 << 20) - 4096 }, st;
	ck_assert_int_eq(lfs_setattr(fs, ino, &a, LFS_SET_SIZE, &st), 0);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	a.st_size = 8 << 20;
	ck_assert_int_eq(lfs_setattr(fs, ino, &a, LFS_SET_SIZE, &st), 0);
	overwrite_fsync(fs, ino, 0, 1, 'f');
	struct lfs_stats s;
	lfs_get_stats(fs, &s);
	ck_assert_uint_eq(s.relink_records, 3);
	lfs_abandon(fs);

	fs = testfs_mount();
	ck_assert_uint_eq(fs->rf_relinked, 2);
	uint8_t buf[4096];
	ck_assert_int_eq(lfs_read(fs, ino, buf, 4096, (8 << 20) - 4096), 4096);
	for (int i = 0; i < 4096; i++)
		ck_assert_uint_eq(buf[i], 0);
	const uint8_t want[4] = { 'f', 'e', 'e', 'e' };
	uint8_t got;
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(lfs_read(fs, ino, &got, 1, (off_t)relink_offs[i]), 1);
		ck_assert_uint_eq(got, want[i]);
	}
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* A crafted relink record (checksums sealed by the writer) whose roots
 * are not those of the inode's record before it: not applied, logged;
 * the inode keeps its last good version, the next relink record on top
 * of the crafted one is refused too, and the usage table is the one
 * fsck counts. */
START_TEST(relink_record_of_another_map)
{
	uint64_t ino;
	struct lfs_fs *fs = relink_fs(true, &ino);
	overwrite_fsync(fs, ino, 0, 1, 'h');
	uint8_t c = 'i';
	ck_assert_int_eq(lfs_write(fs, ino, &c, 1, (off_t)relink_offs[3], NULL), 1);
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	/* the tree's root and the leaf's parent are in memory: only the
	 * record carries the crafted root */
	ip->di.ind[1] += 1;
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	overwrite_fsync(fs, ino, 1, 2, 'j');
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	ck_assert_uint_eq(st.relink_records, 3);
	lfs_abandon(fs);

	testfs_capture_log();
	fs = testfs_mount();
	ck_assert_int_eq(testfs_release_log("a relink record, but not of the block map"), 2);
	ck_assert_uint_eq(fs->rf_relinked, 1);
	const uint8_t want[4] = { 'h', 0, 0, 0 };
	uint8_t got, pat[1];
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(lfs_read(fs, ino, &got, 1, (off_t)relink_offs[i]), 1);
		if (want[i]) {
			ck_assert_uint_eq(got, want[i]);
		} else {
			/* the fill's byte there, untouched */
			uint8_t *blk = malloc(CHUNK);
			fill_pattern(blk, CHUNK, 3 + (unsigned)(relink_offs[i] / CHUNK));
			pat[0] = blk[relink_offs[i] % CHUNK];
			free(blk);
			ck_assert_uint_eq(got, pat[0]);
		}
	}
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* An image without the feature: every record plain, the node above the
 * leaves logged with them. */
START_TEST(no_relink_without_the_feature)
{
	uint64_t ino;
	struct lfs_fs *fs = relink_fs(false, &ino);
	ck_assert_uint_eq(overwrite_fsync(fs, ino, 0, 2, 'g'), 7 * 4096);
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	ck_assert_uint_eq(st.relink_records, 0);
	lfs_abandon(fs);
	fs = testfs_mount();
	ck_assert_uint_eq(fs->rf_relinked, 0);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* Set the drag count of both checkpoint regions to `drag` (0: as a
 * checkpoint from before it was kept), sealed again. */
static void
set_drag(uint64_t drag)
{
	size_t len;
	uint8_t *img = testfs_image_load(&len);
	struct lfs_super sb;
	ck_assert_int_eq(lfs_super_decode(&sb, img), 0);
	for (int i = 0; i < 2; i++) {
		uint8_t *r = img + sb.ckpt_addr[i] * sb.block_size;
		size_t rlen = (size_t)sb.ckpt_blocks * sb.block_size;
		struct lfs_ckpt_hdr h;
		lfs_ckpt_hdr_decode(&h, r);
		h.drag = drag;
		lfs_ckpt_hdr_encode(&h, r);
		lfs_ckpt_seal(r, rlen, lfs_super_seed(&sb));
	}
	testfs_image_store(img, len);
	free(img);
}

/* The bytes of block-map nodes and inode records the live tree holds
 * (what moving other blocks drags along) are counted exactly through
 * writes, frees and roll-forward (fsck recomputes them), recorded by
 * each checkpoint, counted afresh from an image whose checkpoint does
 * not have them, and bounded where they are read. */
START_TEST(drag_is_counted_exactly)
{
	testfs_make(64ull << 20, 256u << 10);
	struct lfs_fs *fs = testfs_mount();
	uint64_t sparse = testfs_mkfile(fs, LFS_ROOT_INO, "sparse"), dense = testfs_mkfile(fs, LFS_ROOT_INO, "dense");
	uint64_t gone = testfs_mkfile(fs, LFS_ROOT_INO, "gone");
	uint64_t empty = fs->drag_bytes;
	uint8_t blk[4096];
	fill_pattern(blk, sizeof(blk), 3);
	/* a block in each of 40 leaves, far apart: 40 leaves and the nodes above */
	for (unsigned i = 0; i < 40; i++)
		ck_assert_int_eq(lfs_write(fs, sparse, blk, sizeof(blk), (off_t)i * fs->nptr * 4096 * 3, NULL), 4096);
	fill_file(fs, dense, 2 << 20, 4);
	fill_file(fs, gone, 1 << 20, 5);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	testfs_fsck_clean(fs);
	ck_assert_uint_ge(fs->drag_bytes, empty + 40ull * 4096);
	/* after the checkpoint, fsynced: some leaves freed, some written */
	struct stat attr = { .st_size = (off_t)20 * fs->nptr * 4096 * 3 }, st;
	ck_assert_int_eq(lfs_setattr(fs, sparse, &attr, LFS_SET_SIZE, &st), 0);
	ck_assert_int_eq(lfs_fsync(fs, sparse, false), 0);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "gone"), 0);
	/* closed and forgotten: freed now, not an orphan recovery frees */
	ck_assert_int_eq(lfs_release(fs, gone), 0);
	lfs_forget(fs, gone, 1);
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	ck_assert_int_eq(lfs_write(fs, dense, blk, sizeof(blk), 64 << 20, NULL), 4096);
	ck_assert_int_eq(lfs_fsync(fs, dense, false), 0);
	testfs_fsck_clean(fs);
	uint64_t before = fs->drag_bytes;
	lfs_abandon(fs); /* crash */

	fs = testfs_mount();
	testfs_fsck_clean(fs);
	ck_assert_uint_eq(fs->drag_bytes, before);
	ck_assert_int_eq(lfs_unmount(fs), 0);

	/* a checkpoint from before the count: counted at mount, the same */
	set_drag(0);
	fs = testfs_mount();
	ck_assert_uint_eq(fs->drag_bytes, before);
	testfs_fsck_clean(fs);
	ck_assert_int_eq(lfs_unmount(fs), 0);

	/* more than the image holds: refused */
	set_drag(LFS_CKPT_DRAG_KNOWN | (65ull << 20));
	struct lfs_opts o = testfs_opts();
	ck_assert_int_eq(lfs_mount(testfs_path, &o, &fs), -EFSCORRUPTED);
	testfs_remove();
}
END_TEST

CHECK_MAIN("recover", "roll-forward", 300, large_file_reads_what_was_logged, large_file_maps_compared,
	   lists_count_as_maps_compared, malformed_list_compares_maps, frees_are_accounted,
	   record_charges, crafted_block_charges, usage_stays_within_segment,
	   double_counted_log_mounts, fsync_logs_leaves_not_nodes, relinks_around_plain_records,
	   no_relink_without_the_feature, relink_record_of_another_map, drag_is_counted_exactly)
