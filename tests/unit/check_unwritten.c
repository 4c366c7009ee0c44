/*
 * check_unwritten.c — unwritten blocks (format.h, LFS_ADDR_UNWRITTEN):
 * fallocate reserves a range without writing it, the reservation is
 * counted used by df and in st_blocks, reads give zeros, writing into it
 * takes no new space, punch, truncate and unlink give it back, and the
 * counts come back exactly after a remount and after a crash (from the
 * checkpoint and roll-forward); fsck agrees at every step.
 */
#include "testfs.h"

#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>

#define BS 4096
#define MIB (1ull << 20)

static uint64_t
bavail(struct lfs_fs *fs)
{
	struct statvfs st;
	ck_assert_int_eq(lfs_statfs(fs, &st), 0);
	return st.f_bavail;
}

/* Every byte of [off, off + len) reads as c. */
static void
reads_as(struct lfs_fs *fs, uint64_t ino, uint64_t off, size_t len, uint8_t c)
{
	uint8_t *buf = malloc(len);
	ck_assert_int_eq(lfs_read(fs, ino, buf, len, (off_t)off), (ssize_t)len);
	/* one assertion, not one a byte: each costs Check a write(2) */
	size_t i = 0;
	while (i < len && buf[i] == c)
		i++;
	ck_assert_msg(i == len, "byte %llu: %u, not %u", (unsigned long long)(off + i), i < len ? buf[i] : c, c);
	free(buf);
}

static void
fill(struct lfs_fs *fs, uint64_t ino, uint64_t off, size_t len, uint8_t c)
{
	uint8_t *buf = malloc(len);
	memset(buf, c, len);
	ck_assert_int_eq(lfs_write(fs, ino, buf, len, (off_t)off, NULL), (ssize_t)len);
	free(buf);
}

static long
st_blocks(struct lfs_fs *fs, uint64_t ino)
{
	struct stat st;
	lfs_inode_stat(fs, testfs_inode(fs, ino), &st);
	return (long)st.st_blocks;
}

/* 600 MiB reserved writes a few blocks, not 600 MiB; df and st_blocks
 * count it all at once; a write into it takes nothing more; punch and
 * truncate give it back; a remount keeps every count. */
START_TEST(reserve_writes_nothing)
{
	testfs_make(1ull << 30, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	const uint64_t n = 600 * MIB / BS;
	uint64_t a0 = bavail(fs), w0 = testfs_written(fs);
	ck_assert_int_eq(lfs_fallocate(fs, ino, 0, 0, (off_t)(n * BS)), 0);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	uint64_t written = testfs_written(fs) - w0;
	ck_assert_msg(written < 64 * BS, "fallocate of 600 MiB wrote %llu bytes", (unsigned long long)written);
	ck_assert_uint_eq(testfs_inode(fs, ino)->di.unwritten, n);
	ck_assert_uint_eq(fs->unwritten, n);
	ck_assert_uint_eq(testfs_inode(fs, ino)->di.size, n * BS);
	ck_assert_int_ge(st_blocks(fs, ino), (long)(n * (BS / 512)));
	ck_assert_int_le(st_blocks(fs, ino), (long)((n + 16) * (BS / 512)));
	uint64_t a1 = bavail(fs);
	ck_assert_msg(a0 - a1 >= n && a0 - a1 <= n + 16, "df went from %llu to %llu for %llu blocks",
		      (unsigned long long)a0, (unsigned long long)a1, (unsigned long long)n);
	reads_as(fs, ino, 0, 64 * 1024, 0);
	reads_as(fs, ino, 300 * MIB - 5, 70000, 0);
	reads_as(fs, ino, n * BS - 4096, 4096, 0);
	testfs_fsck_clean(fs);

	/* 1 MiB written into the middle: no new space, 256 fewer unwritten */
	fill(fs, ino, 300 * MIB, MIB, 0xa5);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	ck_assert_uint_eq(fs->unwritten, n - 256);
	ck_assert_uint_eq(testfs_inode(fs, ino)->di.unwritten, n - 256);
	uint64_t a2 = bavail(fs);
	ck_assert_msg(a2 + 4 >= a1, "writing into the reserved range took %llu blocks", (unsigned long long)(a1 - a2));
	reads_as(fs, ino, 300 * MIB, MIB, 0xa5);
	reads_as(fs, ino, 300 * MIB - BS, BS, 0);
	testfs_fsck_clean(fs);

	/* punching 2 MiB of what is still unwritten gives 512 blocks back */
	ck_assert_int_eq(lfs_fallocate(fs, ino, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)(100 * MIB),
				       (off_t)(2 * MIB)), 0);
	ck_assert_uint_eq(fs->unwritten, n - 256 - 512);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	ck_assert_uint_ge(bavail(fs), a2 + 512 - 4);
	testfs_fsck_clean(fs);

	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_uint_eq(fs->unwritten, n - 768);
	ck_assert_uint_eq(testfs_inode(fs, ino)->di.unwritten, n - 768);
	reads_as(fs, ino, 300 * MIB, MIB, 0xa5);
	reads_as(fs, ino, 100 * MIB - 10, 2 * MIB + 20, 0);
	testfs_fsck_clean(fs);

	/* truncate gives back the rest, and df its space */
	struct stat st = { .st_size = 0 };
	ck_assert_int_eq(lfs_setattr(fs, ino, &st, LFS_SET_SIZE, &st), 0);
	ck_assert_uint_eq(fs->unwritten, 0);
	ck_assert_uint_eq(testfs_inode(fs, ino)->di.unwritten, 0);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	ck_assert_uint_ge(bavail(fs) + 16, a0);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* A crash after fsynced fallocates, a write into one range, a punch and
 * an unlink: roll-forward from the checkpoint gives every count back
 * exactly, and the next checkpoint carries it. */
START_TEST(reserve_survives_crash)
{
	testfs_make(256ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t a = testfs_mkfile(fs, LFS_ROOT_INO, "a");
	uint64_t b = testfs_mkfile(fs, LFS_ROOT_INO, "b");
	uint64_t c = testfs_mkfile(fs, LFS_ROOT_INO, "c");
	ck_assert_int_eq(lfs_fallocate(fs, c, 0, 0, (off_t)(8 * MIB)), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t a0 = bavail(fs);
	ck_assert_int_eq(lfs_fallocate(fs, a, 0, 0, (off_t)(100 * MIB)), 0);
	ck_assert_int_eq(lfs_fsync(fs, a, false), 0);
	fill(fs, a, 50 * MIB, BS, 0x5a);
	ck_assert_int_eq(lfs_fsync(fs, a, false), 0);
	ck_assert_int_eq(lfs_fallocate(fs, b, 0, (off_t)(3 * BS), (off_t)(10 * MIB)), 0);
	ck_assert_int_eq(lfs_fsync(fs, b, false), 0);
	ck_assert_int_eq(lfs_fallocate(fs, b, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)MIB, (off_t)MIB),
			 0);
	ck_assert_int_eq(lfs_fsync(fs, b, false), 0);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "c"), 0);
	/* the kernel's open and reference from the create */
	ck_assert_int_eq(lfs_release(fs, c), 0);
	lfs_forget(fs, c, 1);
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	uint64_t want = 100 * MIB / BS - 1 + 10 * MIB / BS - 256;
	ck_assert_uint_eq(fs->unwritten, want);
	uint64_t a1 = bavail(fs);
	lfs_abandon(fs); /* crash */

	fs = testfs_mount();
	ck_assert_uint_eq(fs->unwritten, want);
	ck_assert_uint_eq(testfs_inode(fs, a)->di.unwritten, 100 * MIB / BS - 1);
	ck_assert_uint_eq(testfs_inode(fs, b)->di.unwritten, 10 * MIB / BS - 256);
	ck_assert_uint_eq(testfs_inode(fs, b)->di.size, 3 * BS + 10 * MIB);
	ck_assert_int_eq(lfs_iget(fs, c, &(struct lfs_inode *){ NULL }), -ESTALE);
	ck_assert_uint_eq(bavail(fs), a1);
	/* c's 8 MiB came back, the reservations went, a few nodes more */
	ck_assert_uint_le(bavail(fs), a0 + 2048 - want);
	ck_assert_uint_ge(bavail(fs), a0 + 2048 - want - 32);
	reads_as(fs, a, 50 * MIB, BS, 0x5a);
	reads_as(fs, a, 50 * MIB - BS, BS, 0);
	testfs_fsck_clean(fs);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_uint_eq(fs->unwritten, want);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* fallocate grants exactly df's Avail, one block more is ENOSPC, and
 * the promise holds: the whole range is written over, df staying at 0. */
START_TEST(grant_exactly_df)
{
	testfs_make(64ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t n = bavail(fs);
	ck_assert_int_eq(lfs_fallocate(fs, ino, 0, 0, (off_t)((n + 1) * BS)), -ENOSPC);
	ck_assert_uint_eq(bavail(fs), n);
	ck_assert_int_eq(lfs_fallocate(fs, ino, 0, 0, (off_t)(n * BS)), 0);
	ck_assert_uint_eq(bavail(fs), 0);
	ck_assert_uint_eq(fs->unwritten, n);
	for (uint64_t off = 0; off < n * BS; off += MIB)
		fill(fs, ino, off, off + MIB < n * BS ? MIB : n * BS - off, 0x33);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	ck_assert_uint_eq(fs->unwritten, 0);
	reads_as(fs, ino, n * BS - MIB, MIB, 0x33);
	testfs_fsck_clean(fs);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	reads_as(fs, ino, 0, MIB, 0x33);
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

/* A record with unwritten pointers or counts is refused where the image
 * or the file cannot have them; the checkpoint header keeps the sum. */
START_TEST(decoders_check)
{
	struct lfs_super sb;
	ck_assert_int_eq(lfs_plan_geometry(&sb, 64ull << 20, 4096, 1 << 20, 0), 0);
	struct lfs_dinode di = { .ino = 5, .mode = S_IFREG | 0644, .nlink = 1, .size = 8 * BS, .blocks = 3 };
	const char *why;
	di.direct[0] = LFS_ADDR_UNWRITTEN;
	di.unwritten = 1;
	ck_assert_int_eq(lfs_dinode_check(&di, &sb, &why), 0);
	di.unwritten = 4;
	ck_assert_int_eq(lfs_dinode_check(&di, &sb, &why), -EFSCORRUPTED);
	di.unwritten = 1;
	di.mode = S_IFDIR | 0755;
	di.parent = 1;
	ck_assert_int_eq(lfs_dinode_check(&di, &sb, &why), -EFSCORRUPTED);
	di.mode = S_IFREG | 0644;
	sb.feature_incompat &= ~LFS_FEATURE_UNWRITTEN;
	ck_assert_int_eq(lfs_dinode_check(&di, &sb, &why), -EFSCORRUPTED);
	di.unwritten = 0;
	ck_assert_int_eq(lfs_dinode_check(&di, &sb, &why), -EFSCORRUPTED);

	uint8_t rec[LFS_INODE_HDR_SIZE];
	struct lfs_dinode back;
	di.unwritten = 77;
	lfs_dinode_encode(&di, NULL, rec);
	ck_assert_int_eq(lfs_dinode_decode(&back, rec, sizeof(rec)), LFS_INODE_HDR_SIZE);
	ck_assert_uint_eq(back.unwritten, 77);
	uint8_t hdr[LFS_CKPT_HDR_SIZE];
	struct lfs_ckpt_hdr h = { .magic = LFS_CKPT_MAGIC, .unwritten = 1ull << 40 }, hb;
	lfs_ckpt_hdr_encode(&h, hdr);
	lfs_ckpt_hdr_decode(&hb, hdr);
	ck_assert_uint_eq(hb.unwritten, 1ull << 40);
}
END_TEST

/* The model of a file of unwritten blocks: each block a hole (0),
 * unwritten (1) or written with pattern seed (its value, > 1). */
#define MB 3072                 /* 12 MiB: direct, tree 0 and tree 1 leaves */
struct model {
	uint8_t state[MB];
};

static unsigned
model_unwritten(const struct model *m)
{
	unsigned n = 0;
	for (unsigned b = 0; b < MB; b++)
		n += m->state[b] == 1;
	return n;
}

static void
model_write(struct lfs_fs *fs, uint64_t ino, struct model *m, unsigned b, unsigned n, uint8_t seed)
{
	uint8_t *buf = malloc((size_t)n * BS);
	for (unsigned i = 0; i < n; i++) {
		fill_pattern(buf + (size_t)i * BS, BS, seed + b + i);
		m->state[b + i] = seed;
	}
	ck_assert_int_eq(lfs_write(fs, ino, buf, (size_t)n * BS, (off_t)b * BS, NULL), (ssize_t)n * BS);
	free(buf);
}

/* The file named `name` on fs (a view too) reads as the model says. */
static void
model_check(struct lfs_fs *fs, const char *name, const struct model *m)
{
	struct stat st;
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, name, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)MB * BS);
	uint8_t *got = malloc((size_t)MB * BS), want[BS];
	ck_assert_int_eq(lfs_read(fs, st.st_ino, got, (size_t)MB * BS, 0), (ssize_t)MB * BS);
	for (unsigned b = 0; b < MB; b++) {
		if (m->state[b] > 1)
			fill_pattern(want, BS, m->state[b] + b);
		else
			memset(want, 0, BS);
		ck_assert_msg(!memcmp(got + (size_t)b * BS, want, BS), "%s: block %u differs (state %u)", name, b,
			      m->state[b]);
	}
	free(got);
	lfs_forget(fs, st.st_ino, 1);
}

/* Every dirty segment but the log head's, cleaned, each followed by a
 * checkpoint that frees it (the snapshot's blocks fill some: cleaning
 * them is at a loss): the moves carry maps with unwritten pointers. */
static uint64_t
clean_all(struct lfs_fs *fs)
{
	uint64_t total = 0, nsegs = fs->sb.nsegs;
	for (uint64_t s = 0; s < nsegs; s++) {
		uint64_t moved = 0;
		lfs_lock(fs);
		bool victim = fs->segs[s].state == LFS_SEG_DIRTY && s != fs->cur_seg && s != fs->next_seg;
		if (victim)
			ck_assert_int_eq(lfs_clean_segment(fs, s, &moved), 0);
		pthread_mutex_unlock(&fs->lock);
		if (victim)
			ck_assert_int_eq(lfs_checkpoint(fs), 0);
		total += moved;
	}
	return total;
}

/* A file reserved and written in places, a snapshot of it, then
 * overwrites, a punch and writes into its reservation; every segment
 * cleaned under both: the file and the snapshot read as they were, the
 * counts are exact, fsck agrees; and so after a remount. */
START_TEST(cleaned_with_snapshot)
{
	testfs_make(64ull << 20, 256u << 10);
	struct lfs_fs *fs = testfs_mount();
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "f"), g = testfs_mkfile(fs, LFS_ROOT_INO, "g");
	static struct model m, snap;
	ck_assert_int_eq(lfs_fallocate(fs, f, 0, 0, (off_t)MB * BS), 0);
	memset(m.state, 1, sizeof(m.state));
	uint8_t *buf = malloc(2 * MIB);
	fill_pattern(buf, 2 * MIB, 9);
	const unsigned at[] = { 3, 11, 100, 523, 600, 1500, 2047, 3000, 3071 };
	for (unsigned i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		model_write(fs, f, &m, at[i], 1, 10 + (uint8_t)i);
		/* interleaved with another file's blocks: f's spread over segments */
		ck_assert_int_eq(lfs_write(fs, g, buf, 128 * 1024, (off_t)i * 128 * 1024, NULL), 128 * 1024);
		ck_assert_int_eq(lfs_fsync(fs, f, false), 0);
	}
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_eq(fs->unwritten, model_unwritten(&m));
	uint64_t seq;
	ck_assert_int_eq(lfs_snapshot_make(fs, "s", &seq), 0);
	snap = m;

	model_write(fs, f, &m, 100, 4, 40);
	model_write(fs, f, &m, 2500, 8, 50);
	ck_assert_int_eq(lfs_fallocate(fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 2048 * BS, 256 * BS), 0);
	memset(m.state + 2048, 0, 256);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "g"), 0);
	ck_assert_int_eq(lfs_release(fs, g), 0);
	lfs_forget(fs, g, 1);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	free(buf);

	uint64_t moved = clean_all(fs);
	ck_assert_uint_gt(moved, MB / 512); /* f's nodes and written blocks at least */
	ck_assert_uint_eq(fs->unwritten, model_unwritten(&m));
	ck_assert_uint_eq(testfs_inode(fs, f)->di.unwritten, model_unwritten(&m));
	model_check(fs, "f", &m);
	struct lfs_fs *v;
	ck_assert_int_eq(lfs_view_open(fs, "s", false, &v), 0);
	model_check(v, "f", &snap);
	lfs_abandon(v);
	testfs_fsck_clean(fs);
	/* and cleaned once more, the moved blocks moved again */
	clean_all(fs);
	model_check(fs, "f", &m);
	testfs_fsck_clean(fs);

	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_uint_eq(fs->unwritten, model_unwritten(&m));
	ck_assert_uint_eq(testfs_inode(fs, f)->di.unwritten, model_unwritten(&m));
	model_check(fs, "f", &m);
	ck_assert_int_eq(lfs_view_open(fs, "s", false, &v), 0);
	model_check(v, "f", &snap);
	lfs_abandon(v);
	testfs_fsck_clean(fs);
	/* deleting the snapshot changes no reservation */
	ck_assert_int_eq(lfs_snapshot_delete(fs, seq), 0);
	ck_assert_uint_eq(fs->unwritten, model_unwritten(&m));
	testfs_fsck_clean(fs);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("unwritten", "core", 120, reserve_writes_nothing, reserve_survives_crash, grant_exactly_df,
	   decoders_check, cleaned_with_snapshot)
