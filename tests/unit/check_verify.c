/*
 * check_verify.c — verify.c, the read verifier.  Holds lfs_verify_blocks
 * to its rule: a block read from the log is accepted only if a valid
 * summary describes it and its crc matches the one recorded there; else
 * -EIO and a log line naming it, never wrong data.  And holds the
 * summary cache to being a cache: the same answers whether it was filled
 * by the writer (lfs_verify_note_pseg) or by walking the segment, a
 * failed read never cached as "nothing here", a segment rewritten from
 * its start forgetting its old blocks.
 */
#include "testfs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NBLK 3

/* A file of NBLK blocks, flushed in one group; the address of its first
 * block (the rest follow it), and the group's summary block. */
static struct lfs_fs *
logged_file(uint64_t *ino, uint64_t *addr, uint64_t *summary)
{
	testfs_make(64ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	*ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	uint8_t buf[NBLK * 4096];
	fill_pattern(buf, sizeof(buf), 1);
	ck_assert_int_eq(lfs_write(fs, *ino, buf, sizeof(buf), 0, NULL), (ssize_t)sizeof(buf));
	*summary = lfs_seg_first_block(fs, fs->cur_seg) + fs->cur_off;
	ck_assert_int_eq(lfs_flush(fs), 0);
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, *ino, &ip), 0);
	for (uint64_t i = 0; i < NBLK; i++) {
		uint64_t a;
		ck_assert_int_eq(lfs_bmap_get(fs, ip, i, &a), 0);
		if (i == 0)
			*addr = a;
		ck_assert_uint_eq(a, *addr + i);
	}
	return fs;
}

/* Empty the summary cache: the next check walks the segment again. */
static void
reset_cache(struct lfs_fs *fs)
{
	lfs_verify_free(fs);
	ck_assert_ptr_null(fs->sumcache);
	ck_assert_int_eq(lfs_verify_init(fs), 0);
}

/* Blocks as written verify, several at once, whether the crcs come from
 * the writer or from a walk of the segment. */
START_TEST(logged_blocks_verify)
{
	uint64_t ino, addr, sum;
	struct lfs_fs *fs = logged_file(&ino, &addr, &sum);
	uint8_t buf[NBLK * 4096];
	ck_assert_int_eq(lfs_bdev_read(&fs->dev, addr, NBLK, buf), 0);
	ck_assert_int_eq(lfs_verify_blocks(fs, addr, NBLK, buf), 0);
	reset_cache(fs);
	ck_assert_int_eq(lfs_verify_blocks(fs, addr, NBLK, buf), 0);
	ck_assert_int_eq(lfs_verify_blocks(fs, addr + 1, 1, buf + 4096), 0);
	/* the right data at the wrong address is wrong */
	ck_assert_int_eq(lfs_verify_blocks(fs, addr + 1, 1, buf), -EIO);
	testfs_finish(fs);
}
END_TEST

/* One flipped bit in one block fails the whole request with EIO and says
 * which block; on disk, a damaged block reaches no reader: lfs_read_block
 * and lfs_read both fail rather than return it. */
START_TEST(damaged_block_is_eio)
{
	uint64_t ino, addr, sum;
	struct lfs_fs *fs = logged_file(&ino, &addr, &sum);
	ck_assert_int_eq(lfs_checkpoint(fs), 0); /* the remount below needs no roll-forward */
	uint8_t buf[NBLK * 4096];
	ck_assert_int_eq(lfs_bdev_read(&fs->dev, addr, NBLK, buf), 0);
	buf[4096 + 100] ^= 0x10;
	char needle[64];
	snprintf(needle, sizeof(needle), "block %llu (segment", (unsigned long long)(addr + 1));
	testfs_capture_log();
	int err = lfs_verify_blocks(fs, addr, NBLK, buf);
	ck_assert_int_eq(testfs_release_log(needle), 1);
	ck_assert_int_eq(err, -EIO);
	ck_assert_int_eq(lfs_verify_blocks(fs, addr, 1, buf), 0);

	ck_assert_int_eq(lfs_bdev_write(&fs->dev, addr + 1, 1, buf + 4096), 0);
	uint8_t one[4096];
	ck_assert_int_eq(lfs_read_block(fs, addr + 1, one), -EIO);
	ck_assert_int_eq(lfs_read_block(fs, addr, one), 0);
	ck_assert(memcmp(one, buf, 4096) == 0);
	/* the file's pages are cached: drop them by a remount */
	lfs_abandon(fs);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_read(fs, ino, buf, sizeof(buf), 0), -EIO);
	ck_assert_int_eq(lfs_read(fs, ino, buf, 4096, 0), 4096);
	lfs_abandon(fs);
	testfs_remove();
}
END_TEST

/* A block no summary describes is EIO whatever it holds: the summary
 * block itself, the block after the log head, a block of a segment never
 * written (all zeros, as a fresh image reads). */
START_TEST(undescribed_block_is_eio)
{
	uint64_t ino, addr, sum;
	struct lfs_fs *fs = logged_file(&ino, &addr, &sum);
	uint8_t buf[4096];
	uint64_t head = lfs_seg_first_block(fs, fs->cur_seg) + fs->cur_off;
	uint64_t never = lfs_seg_first_block(fs, fs->sb.nsegs - 1) + 3;
	ck_assert_uint_eq(fs->segs[fs->sb.nsegs - 1].state, LFS_SEG_CLEAN);
	for (int pass = 0; pass < 2; pass++) {
		ck_assert_int_eq(lfs_bdev_read(&fs->dev, sum, 1, buf), 0);
		ck_assert_int_eq(lfs_pseg_verify(buf, fs->bsize, fs->seed), 0);
		ck_assert_int_eq(lfs_verify_blocks(fs, sum, 1, buf), -EIO);
		ck_assert_int_eq(lfs_bdev_read(&fs->dev, head, 1, buf), 0);
		ck_assert_int_eq(lfs_verify_blocks(fs, head, 1, buf), -EIO);
		ck_assert_int_eq(lfs_bdev_read(&fs->dev, never, 1, buf), 0);
		ck_assert_int_eq(lfs_verify_blocks(fs, never, 1, buf), -EIO);
		reset_cache(fs); /* and again from walks of the segments */
	}
	testfs_finish(fs);
}
END_TEST

/* A read error while walking a segment's summaries is returned, and the
 * walk is not cached: the next check reads the segment again and
 * succeeds.  Once walked, a segment is not read again; psegs the writer
 * adds to it are known without a read. */
START_TEST(cache_reads_once_and_not_after_errors)
{
	uint64_t ino, addr, sum;
	struct lfs_fs *fs = logged_file(&ino, &addr, &sum);
	uint8_t buf[4096];
	ck_assert_int_eq(lfs_bdev_read(&fs->dev, addr, 1, buf), 0);
	reset_cache(fs);
	ck_assert_int_eq(lfs_fault_arm("pread:1:EIO"), 0);
	ck_assert_int_eq(lfs_verify_blocks(fs, addr, 1, buf), -EIO);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_PREAD), 1);
	ck_assert_int_eq(lfs_verify_blocks(fs, addr, 1, buf), 0);
	uint64_t reads = lfs_fault_count(LFS_FAULT_PREAD);
	ck_assert_uint_gt(reads, 1);
	ck_assert_int_eq(lfs_verify_blocks(fs, addr, 1, buf), 0);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_PREAD), reads);

	uint8_t more[4096];
	fill_pattern(more, sizeof(more), 2);
	ck_assert_int_eq(lfs_write(fs, ino, more, sizeof(more), NBLK * 4096, NULL), 4096);
	ck_assert_int_eq(lfs_flush(fs), 0);
	struct lfs_inode *ip;
	uint64_t a;
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	ck_assert_int_eq(lfs_bmap_get(fs, ip, NBLK, &a), 0);
	ck_assert_uint_eq(lfs_addr_seg(fs, a), lfs_addr_seg(fs, addr));
	reads = lfs_fault_count(LFS_FAULT_PREAD);
	ck_assert_int_eq(lfs_verify_blocks(fs, a, 1, more), 0);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_PREAD), reads);
	lfs_fault_disarm();
	testfs_finish(fs);
}
END_TEST

/* A summary noted at offset 0 starts the segment's new life: the blocks
 * of its earlier psegs are forgotten (a reused segment's leftovers must
 * not verify), the new pseg's blocks are known with their crcs. */
START_TEST(segment_restart_forgets_old_blocks)
{
	uint64_t ino, addr, sum;
	struct lfs_fs *fs = logged_file(&ino, &addr, &sum);
	uint64_t seg = lfs_addr_seg(fs, addr), first = lfs_seg_first_block(fs, seg);
	uint8_t old[4096], blk[4096], s[4096];
	ck_assert_int_eq(lfs_bdev_read(&fs->dev, addr, 1, old), 0);
	ck_assert_int_eq(lfs_verify_blocks(fs, addr, 1, old), 0); /* the segment is cached */
	ck_assert_uint_gt(addr, first + 1);

	fill_pattern(blk, sizeof(blk), 9);
	memset(s, 0, sizeof(s));
	struct lfs_pseg_hdr h = { .magic = LFS_PSEG_MAGIC, .nblocks = 1 };
	lfs_pseg_hdr_encode(&h, s);
	struct lfs_pseg_entry e = { .ino = 5, .kind = LFS_BK_DATA, .crc = lfs_crc(fs->seed, blk, 4096) };
	lfs_pseg_entry_encode(&e, s, 0);
	lfs_verify_note_pseg(fs, seg, 0, s);
	ck_assert_int_eq(lfs_verify_blocks(fs, first + 1, 1, blk), 0);
	ck_assert_int_eq(lfs_verify_blocks(fs, addr, 1, old), -EIO);
	/* a summary further on adds to what is known */
	struct lfs_pseg_entry e2 = { .ino = 5, .kind = LFS_BK_DATA, .crc = lfs_crc(fs->seed, old, 4096) };
	lfs_pseg_entry_encode(&e2, s, 0);
	lfs_verify_note_pseg(fs, seg, (uint32_t)(addr - first - 1), s);
	ck_assert_int_eq(lfs_verify_blocks(fs, addr, 1, old), 0);
	ck_assert_int_eq(lfs_verify_blocks(fs, first + 1, 1, blk), 0);
	reset_cache(fs); /* back to what the disk says */
	testfs_finish(fs);
}
END_TEST

/* The epochs the cache keeps, as lfs_seg_birth (seg.c) reads them: a
 * block's birth is one more than its pseg's ckpt_seq, the same from the
 * writer's notes and from a walk of the segment: blocks written between
 * checkpoints k and k+1 are born k+1, those after k+1 born k+2, one still
 * in the pseg being built is born after the last checkpoint; an address
 * no summary describes is EIO, one outside the log refused. */
START_TEST(birth_follows_checkpoints)
{
	uint64_t ino, addr, summary;
	struct lfs_fs *fs = logged_file(&ino, &addr, &summary);
	uint64_t k = fs->ckpt_seq, b;
	for (uint64_t i = 0; i < NBLK; i++) {
		ck_assert_int_eq(lfs_seg_birth(fs, addr + i, &b), 0);
		ck_assert_uint_eq(b, k + 1);
	}
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_eq(fs->ckpt_seq, k + 1);
	uint8_t buf[4096];
	fill_pattern(buf, sizeof(buf), 2);
	ck_assert_int_eq(lfs_write(fs, ino, buf, sizeof(buf), 0, NULL), 4096);
	ck_assert_int_eq(lfs_flush(fs), 0);
	struct lfs_inode *ip;
	uint64_t again;
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	ck_assert_int_eq(lfs_bmap_get(fs, ip, 0, &again), 0);
	ck_assert_uint_ne(again, addr);
	for (int pass = 0; pass < 2; pass++) { /* notes, then a walk */
		ck_assert_int_eq(lfs_seg_birth(fs, addr + 1, &b), 0);
		ck_assert_uint_eq(b, k + 1);
		ck_assert_int_eq(lfs_seg_birth(fs, again, &b), 0);
		ck_assert_uint_eq(b, k + 2);
		reset_cache(fs);
	}
	/* in the pseg being built */
	fill_pattern(buf, sizeof(buf), 3);
	ck_assert_int_eq(lfs_write(fs, ino, buf, sizeof(buf), 4096, NULL), 4096);
	uint64_t next = lfs_seg_first_block(fs, fs->cur_seg) + fs->cur_off + 1;
	ck_assert_int_eq(lfs_seg_birth(fs, next + 5, &b), -EIO); /* nothing there yet */
	uint64_t built;
	ck_assert_int_eq(lfs_seg_append(fs, LFS_BK_DATA, (uint32_t)ino, 0, 99, buf, &built), 0);
	ck_assert_uint_eq(fs->pstart ? 1 : 0, 1);
	ck_assert_int_eq(lfs_seg_birth(fs, built, &b), 0);
	ck_assert_uint_eq(b, k + 2);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_eq(fs->ckpt_seq, k + 2);
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	ck_assert_int_eq(lfs_bmap_get(fs, ip, 1, &again), 0);
	ck_assert_int_eq(lfs_seg_birth(fs, again, &b), 0);
	ck_assert_uint_eq(b, k + 2);
	ck_assert_int_eq(lfs_seg_birth(fs, fs->sb.seg0 - 1, &b), -EFSCORRUPTED);
	testfs_finish(fs);
}
END_TEST

static size_t
chain_length(struct lfs_fs *fs, uint64_t seg)
{
	return testfs_walk_seg(&fs->dev, &fs->sb, fs->seed, seg, 0, NULL);
}

/* lfs_verify_prefetch reads ahead every summary of the chains that
 * verifying the given blocks would walk: as many as walks of their
 * segments find; none of a segment already cached, none for an address
 * outside the log.  A block read and verified after it still checks. */
START_TEST(prefetch_walks_every_chain)
{
	testfs_make(64ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	enum { BIG = 300 }; /* blocks: more than a 1 MiB segment holds */
	uint8_t *buf = malloc(BIG * 4096);
	fill_pattern(buf, BIG * 4096, 4);
	ck_assert_int_eq(lfs_write(fs, ino, buf, BIG * 4096, 0, NULL), (ssize_t)(BIG * 4096));
	ck_assert_int_eq(lfs_flush(fs), 0);
	for (int i = 0; i < 5; i++) { /* more psegs in the last segment */
		fill_pattern(buf, 4096, 10 + i);
		ck_assert_int_eq(lfs_write(fs, ino, buf, 4096, (off_t)(BIG + i) * 4096, NULL), 4096);
		ck_assert_int_eq(lfs_flush(fs), 0);
	}
	struct lfs_inode *ip;
	uint64_t a[2];
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	ck_assert_int_eq(lfs_bmap_get(fs, ip, 0, &a[0]), 0);
	ck_assert_int_eq(lfs_bmap_get(fs, ip, BIG + 4, &a[1]), 0);
	uint64_t s0 = lfs_addr_seg(fs, a[0]), s1 = lfs_addr_seg(fs, a[1]);
	ck_assert_uint_ne(s0, s1);
	size_t n0 = chain_length(fs, s0), n1 = chain_length(fs, s1);
	ck_assert_uint_ge(n1, 6);
	reset_cache(fs);
	ck_assert_uint_eq(lfs_verify_prefetch(fs, a, 2), n0 + n1);
	/* verifying a block of the first segment caches its summaries */
	ck_assert_int_eq(lfs_bdev_read(&fs->dev, a[0], 1, buf), 0);
	ck_assert_int_eq(lfs_verify_blocks(fs, a[0], 1, buf), 0);
	ck_assert_uint_eq(lfs_verify_prefetch(fs, a, 2), n1);
	ck_assert_int_eq(lfs_bdev_read(&fs->dev, a[1], 1, buf), 0);
	ck_assert_int_eq(lfs_verify_blocks(fs, a[1], 1, buf), 0);
	ck_assert_uint_eq(lfs_verify_prefetch(fs, a, 2), 0);
	uint64_t outside = fs->sb.seg0 - 1;
	reset_cache(fs);
	ck_assert_uint_eq(lfs_verify_prefetch(fs, &outside, 1), 0);
	free(buf);
	testfs_finish(fs);
}
END_TEST

/* The read-ahead the device was asked for (lfs_bdev_prefetch's
 * POSIX_FADV_WILLNEED), recorded here on its way to the kernel: what
 * the code asked, which the host's page cache (its own read-ahead, the
 * filesystem under /tmp, memory pressure) would only blur. */
static struct willneed {
	int fd;
	off_t off, len;
} willneed[256];
static size_t nwillneed;

int
posix_fadvise(int fd, off_t off, off_t len, int advice)
{
	if (advice == POSIX_FADV_WILLNEED && nwillneed < sizeof(willneed) / sizeof(willneed[0]))
		willneed[nwillneed++] = (struct willneed){ fd, off, len };
	return syscall(SYS_fadvise64, fd, off, len, advice) ? errno : 0;
}

/* The length of the first request since nwillneed was zeroed that asked
 * for block `blk` of the image; 0 if none did. */
static off_t
asked_with(struct lfs_fs *fs, uint64_t blk)
{
	off_t at = (off_t)(blk * fs->bsize);
	for (size_t i = 0; i < nwillneed; i++)
		if (willneed[i].fd == fs->dev.fd && willneed[i].off <= at && at + (off_t)fs->bsize <= willneed[i].off + willneed[i].len)
			return willneed[i].len;
	return 0;
}

/* A segment of small psegs (a group per fsync) would take one wait per
 * summary however many chains walk beside it: once its chain shows a
 * few small psegs in a row, the rest of the segment is asked for in one
 * request.  A segment of large psegs is walked summary by summary. */
START_TEST(prefetch_reads_small_pseg_segments_whole)
{
	testfs_make(64ull << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	uint8_t *buf = malloc(100 * 4096);
	/* a fresh segment: two large psegs, then nothing */
	ck_assert_int_eq(lfs_flush(fs), 0);
	while (fs->cur_off)
		ck_assert_int_eq(lfs_seg_append(fs, LFS_BK_INODE, 0, 0, 0, NULL, &(uint64_t){ 0 }), 0);
	fill_pattern(buf, 100 * 4096, 1);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(lfs_write(fs, ino, buf, 100 * 4096, (off_t)i * 100 * 4096, NULL), 100 * 4096);
		ck_assert_int_eq(lfs_flush(fs), 0);
	}
	uint64_t big = testfs_addr_of(fs, ino, 0), seg_big = lfs_addr_seg(fs, big);
	/* the next segment: a dozen one-block groups */
	while (lfs_addr_seg(fs, testfs_addr_of(fs, ino, 199)) == fs->cur_seg && fs->cur_off)
		ck_assert_int_eq(lfs_seg_append(fs, LFS_BK_INODE, 0, 0, 0, NULL, &(uint64_t){ 0 }), 0);
	ck_assert_int_eq(lfs_flush(fs), 0);
	for (int i = 0; i < 12; i++) {
		fill_pattern(buf, 4096, 20 + i);
		ck_assert_int_eq(lfs_write(fs, ino, buf, 4096, (off_t)(300 + i) * 4096, NULL), 4096);
		ck_assert_int_eq(lfs_flush(fs), 0);
	}
	uint64_t small = testfs_addr_of(fs, ino, 311), seg_small = lfs_addr_seg(fs, small);
	ck_assert_uint_ne(seg_big, seg_small);
	ck_assert_uint_ge(chain_length(fs, seg_small), 12);
	uint64_t last_big = lfs_seg_first_block(fs, seg_big) + fs->sb.seg_blocks - 1;
	uint64_t last_small = lfs_seg_first_block(fs, seg_small) + fs->sb.seg_blocks - 1;

	reset_cache(fs);
	nwillneed = 0;
	uint64_t a[2] = { big < small ? big : small, big < small ? small : big };
	ck_assert_uint_gt(lfs_verify_prefetch(fs, a, 2), 12);
	/* the small psegs' segment to its end, in one request of many
	 * blocks; nothing past the large psegs' last summary */
	ck_assert_uint_gt(asked_with(fs, last_small), fs->bsize);
	ck_assert_uint_eq(asked_with(fs, last_big), 0);
	/* and what was read ahead still verifies */
	ck_assert_int_eq(lfs_bdev_read(&fs->dev, small, 1, buf), 0);
	ck_assert_int_eq(lfs_verify_blocks(fs, small, 1, buf), 0);
	free(buf);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("verify", "verify", 30, logged_blocks_verify, damaged_block_is_eio,
	   undescribed_block_is_eio, cache_reads_once_and_not_after_errors,
	   segment_restart_forgets_old_blocks, birth_follows_checkpoints, prefetch_walks_every_chain,
	   prefetch_reads_small_pseg_segments_whole)
