/*
 * check_corrupt.c — crafted images with valid checksums.  crc32 is no
 * defence: each test edits one structure through the format module,
 * re-seals every crc (tests/lib/imgedit.c) and mounts.  The broken inode
 * must fail with EFSCORRUPTED, everything else must stay usable, and
 * nothing may read or write out of bounds (this suite runs under ASan and
 * UBSan in CI).  Each case reproduces an overflow found in review.
 */
#include "imgedit.h"
#include "testfs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>


/* Where the inode map of the image puts inode ino's record. */
static void
record_of(uint64_t ino, uint64_t *daddr, uint16_t *slot)
{
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.readonly = true;
	struct lfs_fs *fs;
	ck_assert_int_eq(lfs_mount(testfs_path, &o, &fs), 0);
	ck_assert(lfs_imap_valid_ino(fs, ino));
	*daddr = lfs_imap_get(fs, ino)->daddr;
	*slot = lfs_imap_get(fs, ino)->slot;
	lfs_abandon(fs);
}

/* Decode inode ino's record, let fn change it, encode it, re-seal. */
static void
craft_record(uint64_t daddr, uint16_t slot, void (*fn)(struct lfs_dinode *))
{
	size_t len;
	uint8_t *buf = testfs_image_load(&len);
	struct img im;
	ck_assert_int_eq(img_open(&im, buf, len), 0);
	uint8_t *p = img_record(&im, daddr, slot), inl[4096];
	ck_assert_ptr_nonnull(p);
	struct lfs_dinode di;
	ck_assert_int_gt(lfs_dinode_decode(&di, p, im.bs - slot * LFS_INODE_ALIGN), 0);
	memcpy(inl, p + LFS_INODE_HDR_SIZE, di.inline_len);
	uint32_t len0 = lfs_inode_reclen(di.inline_len);
	fn(&di);
	ck_assert_uint_eq(lfs_inode_reclen(di.inline_len), len0); /* fits where it was */
	lfs_dinode_encode(&di, inl, p);
	img_reseal(&im);
	img_close(&im);
	testfs_image_store(buf, len);
	free(buf);
}

static uint64_t
fsck_problems(void)
{
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.readonly = true;
	struct lfs_fs *fs;
	ck_assert_int_eq(lfs_mount(testfs_path, &o, &fs), 0);
	uint64_t problems = 0;
	ck_assert_int_eq(lfs_fsck(fs, &problems), 0);
	lfs_abandon(fs);
	return problems;
}

static uint64_t
mkfile(struct lfs_fs *fs, uint64_t dir, const char *name, const char *content)
{
	uint64_t ino = testfs_mkfile(fs, dir, name);
	ssize_t n = (ssize_t)strlen(content);
	ck_assert_int_eq(lfs_write(fs, ino, content, (size_t)n, 0, NULL), n);
	return ino;
}

/* The rest of the filesystem works: the intact file reads back, a new one
 * is written and survives a remount. */
static void
rest_is_usable(struct lfs_fs *fs, const char *intact)
{
	struct stat st;
	char back[64] = { 0 };
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "intact", &st), 0);
	ck_assert_int_eq(lfs_read(fs, st.st_ino, back, sizeof(back), 0), (ssize_t)strlen(intact));
	ck_assert_str_eq(back, intact);
	mkfile(fs, LFS_ROOT_INO, "new", "written after the damage");
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "new", &st), 0);
	memset(back, 0, sizeof(back));
	ck_assert_int_eq(lfs_read(fs, st.st_ino, back, sizeof(back), 0), 24);
	ck_assert_int_eq(lfs_unmount(fs), 0);
}

/* A re-sealed image with no edit is sound: the crafting itself is honest. */
START_TEST(reseal_alone_is_harmless)
{
	testfs_make(16 << 20, 256 << 10);
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino = mkfile(fs, LFS_ROOT_INO, "intact", "still here");
	ck_assert_int_eq(lfs_unmount(fs), 0);
	uint64_t daddr;
	uint16_t slot;
	record_of(ino, &daddr, &slot);
	size_t len;
	uint8_t *buf = testfs_image_load(&len);
	struct img im;
	ck_assert_int_eq(img_open(&im, buf, len), 0);
	ck_assert_uint_gt(im.count[IMG_INODE], 1);
	ck_assert_uint_gt(im.count[IMG_DIRENT], 0);
	/* an edit without a re-seal is caught by the crc, as before */
	struct img_edit e = { .target = IMG_SUPER, .field = 12 /* max_inodes */, .op = IMG_ADD, .value = 1 };
	ck_assert_int_eq(img_apply(&im, &e), 0);
	/* (the mount would fall back to the backup superblock: decode block 0) */
	struct lfs_super sb0;
	ck_assert_int_eq(lfs_super_decode(&sb0, buf), -EFSCORRUPTED);
	e.value = (uint64_t)-1;
	ck_assert_int_eq(img_apply(&im, &e), 0);
	img_reseal(&im);
	img_close(&im);
	testfs_image_store(buf, len);
	free(buf);
	ck_assert_uint_eq(fsck_problems(), 0);
	rest_is_usable(testfs_mount(), "still here");
	testfs_remove();
}
END_TEST

static void
inline_size_1mib(struct lfs_dinode *di)
{
	di->size = 1 << 20;
}

/* An inline file whose size says 1 MiB but holds 10 bytes: reading it
 * copied 64 KiB out of a 3,840-byte buffer, punching a hole wrote past it. */
START_TEST(inline_size_beyond_inline_data)
{
	testfs_make(16 << 20, 256 << 10);
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino = mkfile(fs, LFS_ROOT_INO, "small", "ten bytes!");
	mkfile(fs, LFS_ROOT_INO, "intact", "still here");
	ck_assert_int_eq(lfs_unmount(fs), 0);
	uint64_t daddr;
	uint16_t slot;
	record_of(ino, &daddr, &slot);
	craft_record(daddr, slot, inline_size_1mib);

	fs = testfs_mount();
	static char buf[65536];
	struct stat st;
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "small", &st), -EFSCORRUPTED);
	ck_assert_int_eq(lfs_read(fs, ino, buf, sizeof(buf), 0), -EFSCORRUPTED);
	ck_assert_int_eq(lfs_fallocate(fs, ino, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 65536),
			 -EFSCORRUPTED);
	ck_assert_int_eq(lfs_write(fs, ino, "x", 1, 100000, NULL), -EFSCORRUPTED);
	ck_assert_int_eq(lfs_getattr(fs, ino, &st), -EFSCORRUPTED);
	rest_is_usable(fs, "still here");
	ck_assert_uint_ge(fsck_problems(), 1); /* fsck.lfs applies the same check */
	testfs_remove();
}
END_TEST

static void
dir_size_wraps(struct lfs_dinode *di)
{
	di->size = 0xffffffffull * 4096; /* (uint32_t)(size / 4096) + 1 == 0 */
}

/* A directory of 0xFFFFFFFF blocks: the block count wrapped in 32 bits,
 * the index arrays got 0 bytes and were written past. */
/* Directory d holding "inside", and a file "intact"; then fn crafts d's
 * record.  Returns d's inode number. */
static uint64_t
craft_dir(void (*fn)(struct lfs_dinode *))
{
	testfs_make(16 << 20, 256 << 10);
	struct lfs_fs *fs = testfs_mount();
	struct stat d;
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "d", 0755, &testfs_me, &d), 0);
	mkfile(fs, d.st_ino, "inside", "x");
	mkfile(fs, LFS_ROOT_INO, "intact", "still here");
	ck_assert_int_eq(lfs_unmount(fs), 0);
	uint64_t daddr;
	uint16_t slot;
	record_of(d.st_ino, &daddr, &slot);
	craft_record(daddr, slot, fn);
	return d.st_ino;
}

START_TEST(directory_size_wraps)
{
	uint64_t dino = craft_dir(dir_size_wraps);
	struct lfs_fs *fs = testfs_mount();
	struct stat st;
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "d", &st), -EFSCORRUPTED);
	ck_assert_int_eq(lfs_lookup(fs, dino, "inside", &st), -EFSCORRUPTED);
	ck_assert_int_eq(lfs_create(fs, dino, "more", 0644, true, &testfs_me, &st), -EFSCORRUPTED);
	ck_assert_int_eq(lfs_rmdir(fs, LFS_ROOT_INO, "d"), -EFSCORRUPTED);
	rest_is_usable(fs, "still here");
	ck_assert_uint_ge(fsck_problems(), 1);
	testfs_remove();
}
END_TEST

static void
dir_size_odd(struct lfs_dinode *di)
{
	di->size += 100; /* not a whole number of blocks */
}

START_TEST(directory_size_not_whole_blocks)
{
	uint64_t dino = craft_dir(dir_size_odd);
	struct lfs_fs *fs = testfs_mount();
	struct stat st;
	ck_assert_int_eq(lfs_lookup(fs, dino, "inside", &st), -EFSCORRUPTED);
	rest_is_usable(fs, "still here");
	testfs_remove();
}
END_TEST

/* A record in the log after the checkpoint (roll-forward) whose inline
 * length makes the record length wrap, and one whose size breaks the
 * inline rule: the mount rolls forward past them, only they fail. */
START_TEST(rolled_forward_records)
{
	testfs_make(16 << 20, 256 << 10);
	struct lfs_fs *fs = testfs_mount();
	mkfile(fs, LFS_ROOT_INO, "intact", "still here");
	uint64_t a = mkfile(fs, LFS_ROOT_INO, "a", "old a");
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_int_eq(lfs_write(fs, a, "new a", 5, 0, NULL), 5);
	uint64_t b = mkfile(fs, LFS_ROOT_INO, "b", "bee");
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	ck_assert_int_eq(lfs_fsync(fs, a, false), 0);
	ck_assert_int_eq(lfs_fsync(fs, b, false), 0);
	struct lfs_imap_entry ea = *lfs_imap_get(fs, a), eb = *lfs_imap_get(fs, b);
	lfs_abandon(fs); /* a crash: the new records are only in the log */

	size_t len;
	uint8_t *buf = testfs_image_load(&len);
	struct img im;
	ck_assert_int_eq(img_open(&im, buf, len), 0);
	uint8_t *p = img_record(&im, ea.daddr, ea.slot);
	lfs_put32(p + LFS_DI_OFF_INLINE, 0xffffffc1u); /* reclen wraps to 256 */
	lfs_put32(p + LFS_DI_OFF_RECLEN, lfs_inode_reclen(0xffffffc1u));
	p = img_record(&im, eb.daddr, eb.slot);
	struct lfs_dinode di;
	ck_assert_int_gt(lfs_dinode_decode(&di, p, im.bs - eb.slot * LFS_INODE_ALIGN), 0);
	lfs_put64(p + LFS_DI_OFF_SIZE, 1 << 20);
	img_reseal(&im);
	img_close(&im);
	testfs_image_store(buf, len);
	free(buf);

	fs = testfs_mount();
	char back[16] = { 0 };
	/* a keeps the version of the checkpoint; b never came to be */
	ck_assert_int_eq(lfs_read(fs, a, back, sizeof(back), 0), 5);
	ck_assert_str_eq(back, "old a");
	struct stat st;
	ck_assert_int_lt(lfs_lookup(fs, LFS_ROOT_INO, "b", &st), 0);
	rest_is_usable(fs, "still here");
	testfs_remove();
}
END_TEST

static void
one_block_more(struct lfs_dinode *di)
{
	di->blocks++;
}

/* An inode whose block count disagrees with its block map is reported:
 * the count is what stat(2) shows, and fsck checks it (a file past the
 * direct pointers, so that block-map nodes count too). */
START_TEST(block_count_checked)
{
	testfs_make(16 << 20, 256 << 10);
	struct lfs_fs *fs = testfs_mount();
	struct stat st;
	ck_assert_int_eq(lfs_create(fs, LFS_ROOT_INO, "big", 0644, true, &testfs_me, &st), 0);
	static char data[(LFS_NDIRECT + 3) * 4096];
	memset(data, 'x', sizeof(data));
	ck_assert_int_eq(lfs_write(fs, st.st_ino, data, sizeof(data), 0, NULL), (ssize_t)sizeof(data));
	ck_assert_int_eq(lfs_unmount(fs), 0);
	ck_assert_uint_eq(fsck_problems(), 0);
	uint64_t daddr;
	uint16_t slot;
	record_of(st.st_ino, &daddr, &slot);
	craft_record(daddr, slot, one_block_more);
	ck_assert_uint_eq(fsck_problems(), 1);
	testfs_remove();
}
END_TEST

static int
mount_with_super(void (*fn)(struct lfs_super *))
{
	size_t len;
	uint8_t *buf = testfs_image_load(&len);
	struct lfs_super sb;
	ck_assert_int_eq(lfs_super_decode(&sb, buf), 0);
	fn(&sb);
	lfs_super_encode(&sb, buf); /* sealed */
	/* the same in the backup copy, or the mount would fall back to it */
	if (sb.feature_compat & LFS_FEATURE_BACKUP_SB)
		memcpy(buf + (size_t)sb.backup_sb * 4096, buf, LFS_SB_SIZE);
	testfs_image_store(buf, len);
	free(buf);
	struct lfs_opts o;
	lfs_opts_default(&o);
	struct lfs_fs *fs = NULL;
	int err = lfs_mount(testfs_path, &o, &fs);
	if (!err)
		lfs_unmount(fs);
	return err;
}

static void huge_max_inodes(struct lfs_super *sb) { sb->max_inodes = UINT32_MAX; }
static void huge_segments(struct lfs_super *sb) { sb->seg_blocks = 1u << 20; }

/* max_inodes of 2^32-1 (a 64 GiB map and a 2^32 loop at mount) and
 * segments of 2^20 blocks (a 1.25 GiB summary cache) are refused before
 * anything is allocated by them. */
START_TEST(superblock_geometry_caps)
{
	testfs_make(16 << 20, 256 << 10);
	ck_assert_int_eq(mount_with_super(huge_max_inodes), -EFSCORRUPTED);
	testfs_remove();
	testfs_make(16 << 20, 256 << 10);
	ck_assert_int_eq(mount_with_super(huge_segments), -EFSCORRUPTED);
	testfs_remove();
}
END_TEST

static uint32_t craft_unwritten;

static void
set_unwritten(struct lfs_dinode *di)
{
	di->unwritten = craft_unwritten;
}

static void
direct_unwritten(struct lfs_dinode *di)
{
	di->direct[0] = LFS_ADDR_UNWRITTEN;
}

/* The checkpoint regions' sum of unwritten blocks set to v, re-sealed. */
static void
craft_ckpt_unwritten(uint64_t v)
{
	size_t len;
	uint8_t *buf = testfs_image_load(&len);
	struct img im;
	ck_assert_int_eq(img_open(&im, buf, len), 0);
	for (uint32_t r = 0; r < 2; r++) {
		uint64_t off;
		unsigned w;
		/* the last field: the sum */
		ck_assert_int_eq(img_field(&im, IMG_CKPT, img_nfields(IMG_CKPT) - 1, r, 0, &off, &w), 0);
		ck_assert_uint_eq(w, 8);
		lfs_put64(buf + off, v);
	}
	img_reseal(&im);
	img_close(&im);
	testfs_image_store(buf, len);
	free(buf);
}

/* Unwritten blocks (format.h) crafted where they cannot be: a count
 * larger than the file's blocks, and a marker in a directory, make the
 * inode EFSCORRUPTED; a count the map does not match is fsck's problem;
 * a checkpoint's sum beyond the image refuses the mount, one that
 * differs from the inodes' is fsck's problem.  The rest stays usable. */
START_TEST(unwritten_counts_checked)
{
	testfs_make(16 << 20, 256 << 10);
	struct lfs_fs *fs = testfs_mount();
	mkfile(fs, LFS_ROOT_INO, "intact", "still here");
	uint64_t r = testfs_mkfile(fs, LFS_ROOT_INO, "r");
	ck_assert_int_eq(lfs_fallocate(fs, r, 0, 0, 40 * 4096), 0);
	ck_assert_int_eq(lfs_write(fs, r, "x", 1, 5 * 4096, NULL), 1);
	struct stat st;
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "d", 0755, &testfs_me, &st), 0);
	uint64_t d = st.st_ino;
	mkfile(fs, d, "in-d", "x");
	ck_assert_int_eq(lfs_unmount(fs), 0);
	ck_assert_uint_eq(fsck_problems(), 0);
	size_t len;
	uint8_t *pristine = testfs_image_load(&len);
	uint64_t daddr;
	uint16_t slot;

	/* more unwritten than blocks */
	record_of(r, &daddr, &slot);
	craft_unwritten = 1000;
	craft_record(daddr, slot, set_unwritten);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "r", &st), -EFSCORRUPTED);
	rest_is_usable(fs, "still here");

	/* one fewer than the map marks: the record and the sum disagree */
	testfs_image_store(pristine, len);
	craft_unwritten = 38;
	craft_record(daddr, slot, set_unwritten);
	ck_assert_uint_eq(fsck_problems(), 2);

	/* a marker in a directory's map */
	testfs_image_store(pristine, len);
	record_of(d, &daddr, &slot);
	craft_record(daddr, slot, direct_unwritten);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "d", &st), -EFSCORRUPTED);
	rest_is_usable(fs, "still here");

	/* the checkpoint's sum: beyond the image, then one too many */
	testfs_image_store(pristine, len);
	craft_ckpt_unwritten(1ull << 40);
	struct lfs_opts o = testfs_opts();
	fs = NULL;
	ck_assert_int_eq(lfs_mount(testfs_path, &o, &fs), -EFSCORRUPTED);
	testfs_image_store(pristine, len);
	craft_ckpt_unwritten(40);
	ck_assert_uint_eq(fsck_problems(), 1);
	free(pristine);
	testfs_remove();
}
END_TEST

CHECK_MAIN("corrupt", "crafted", 120, reseal_alone_is_harmless, inline_size_beyond_inline_data,
	   directory_size_wraps, directory_size_not_whole_blocks, rolled_forward_records,
	   superblock_geometry_caps, block_count_checked, unwritten_counts_checked)
