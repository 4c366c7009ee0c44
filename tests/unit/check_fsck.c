/*
 * check_fsck.c — the checks of fsck.lfs (lfs/fs/fsck_core.c, lfs_fsck):
 * each kind of inconsistency it claims to find is found, on an image
 * damaged behind the checksums (tests/lib/imgedit.h re-seals them, so
 * only the check under test can notice), with a message naming what is
 * wrong and where; and a sound image, unmounted or mounted with changes
 * still in memory, shows none.  A verifier that misses damage lets the
 * crash tests pass on broken images; one that cries wolf is ignored.
 */
#include "imgedit.h"
#include "testfs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#define SEG (256u << 10)        /* 64 blocks */
#define BIG_BLOCKS 300u         /* d/f: past the direct blocks, over several segments */

/* Where the sample image keeps things, read from a read-only mount. */
struct facts {
	uint64_t d, f, g, s;        /* directory d, d/f, g (an xattr), s (inline) */
	struct lfs_imap_entry rec_d, rec_f, rec_g, rec_s;
	uint64_t f_blk0, f_blk100, g_blk0;
	uint64_t f_node;            /* the block-map root of f's first tree */
	uint64_t seg_f0, seg_g0;    /* the segments of f's and g's first blocks */
	uint64_t seg_s;             /* of s's record */
	uint64_t sut0;              /* usage-table block 0 */
	uint64_t seg100;            /* the segment of f's block 100 */
	uint32_t live100;           /* its live bytes */
	uint32_t meta100;           /* and its table blocks */
};

static uint64_t
make_file(struct lfs_fs *fs, uint64_t dir, const char *name, uint32_t nblocks, unsigned seed)
{
	uint64_t ino = testfs_mkfile(fs, dir, name);
	uint8_t *buf = malloc((size_t)nblocks * 4096);
	fill_pattern(buf, (size_t)nblocks * 4096, seed);
	ck_assert_int_eq(lfs_write(fs, ino, buf, (size_t)nblocks * 4096, 0, NULL), (ssize_t)nblocks * 4096);
	free(buf);
	return ino;
}

static uint64_t
block_of(struct lfs_fs *fs, uint64_t ino, uint64_t lblk)
{
	struct lfs_inode *ip;
	uint64_t addr = 0;
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	ck_assert_int_eq(lfs_bmap_get(fs, ip, lblk, &addr), 0);
	ck_assert_uint_ne(addr, 0);
	return addr;
}

/* The sample: /d/f of BIG_BLOCKS blocks, /g of 2 blocks with an
 * attribute and a second name /d/g2, /s inline, a symlink, unmounted
 * cleanly; *fx says where its parts are. */
static void
make_sample(struct facts *fx)
{
	testfs_make(32 << 20, SEG);
	struct lfs_fs *fs = testfs_mount();
	struct stat st;
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "d", 0755, &testfs_me, &st), 0);
	fx->d = st.st_ino;
	fx->f = make_file(fs, fx->d, "f", BIG_BLOCKS, 1);
	fx->g = make_file(fs, LFS_ROOT_INO, "g", 2, 2);
	ck_assert_int_eq(lfs_setxattr(fs, fx->g, "user.k", "v", 1, 0), 0);
	fx->s = testfs_mkfile(fs, LFS_ROOT_INO, "s");
	ck_assert_int_eq(lfs_write(fs, fx->s, "inline", 6, 0, NULL), 6);
	ck_assert_int_eq(lfs_symlink(fs, LFS_ROOT_INO, "l", "d/f", &testfs_me, &st), 0);
	ck_assert_int_eq(lfs_link(fs, fx->g, fx->d, "g2", &st), 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);

	fs = testfs_mount_ro();
	fx->rec_d = *lfs_imap_get(fs, fx->d);
	fx->rec_f = *lfs_imap_get(fs, fx->f);
	fx->rec_g = *lfs_imap_get(fs, fx->g);
	fx->rec_s = *lfs_imap_get(fs, fx->s);
	fx->f_blk0 = block_of(fs, fx->f, 0);
	fx->f_blk100 = block_of(fs, fx->f, 100);
	fx->g_blk0 = block_of(fs, fx->g, 0);
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, fx->f, &ip), 0);
	fx->f_node = ip->di.ind[0];
	fx->seg_f0 = lfs_addr_seg(fs, fx->f_blk0);
	fx->seg_g0 = lfs_addr_seg(fs, fx->g_blk0);
	fx->seg_s = lfs_addr_seg(fs, fx->rec_s.daddr);
	fx->sut0 = fs->sut_addr[0];
	fx->seg100 = lfs_addr_seg(fs, fx->f_blk100);
	fx->live100 = fs->segs[fx->seg100].live_bytes;
	fx->meta100 = fs->segs[fx->seg100].meta_blocks;
	lfs_abandon(fs);
}

/* One damage: fn edits the indexed image; then every checksum is
 * re-sealed, unless the damage is to be one a checksum catches. */
typedef void damage_fn(struct img *im, const struct facts *fx);

static void
damage(damage_fn *fn, const struct facts *fx, bool reseal)
{
	size_t len;
	uint8_t *buf = testfs_image_load(&len);
	struct img im;
	ck_assert_int_eq(img_open(&im, buf, len), 0);
	fn(&im, fx);
	if (reseal)
		img_reseal(&im);
	img_close(&im);
	testfs_image_store(buf, len);
	free(buf);
}

/* lfs_fsck_memo (memo NULL: lfs_fsck) of the mounted fs, its report
 * (stdout) in out: the problems. */
static uint64_t
fsck_memo_on(struct lfs_fs *fs, struct lfs_fsck_memo *memo, char *out, size_t len)
{
	fflush(stdout);
	int saved = dup(1);
	FILE *tmp = tmpfile();
	ck_assert_ptr_nonnull(tmp);
	ck_assert_int_ge(dup2(fileno(tmp), 1), 0);
	uint64_t problems = 0;
	int err = lfs_fsck_memo(fs, memo, &problems);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	ck_assert_int_eq(err, 0);
	rewind(tmp);
	size_t n = fread(out, 1, len - 1, tmp);
	out[n] = 0;
	fclose(tmp);
	return problems;
}

static uint64_t
fsck_on(struct lfs_fs *fs, char *out, size_t len)
{
	return fsck_memo_on(fs, NULL, out, len);
}

/* lfs_fsck(_memo) of the image as it is on disk (a read-only mount). */
static uint64_t
fsck_image_memo(struct lfs_fsck_memo *memo, char *out, size_t len)
{
	struct lfs_fs *fs = testfs_mount_ro();
	uint64_t problems = fsck_memo_on(fs, memo, out, len);
	lfs_abandon(fs);
	return problems;
}

static uint64_t
fsck_image(char *out, size_t len)
{
	return fsck_image_memo(NULL, out, len);
}

/* The report holds `what`, and exactly `n` problems were counted, one
 * line each. */
static void
expect_report(uint64_t problems, const char *out, uint64_t n, const char *what)
{
	ck_assert_msg(strstr(out, what), "report lacks \"%s\":\n%.2000s", what, out);
	ck_assert_msg(problems == n, "%llu problems, want %llu:\n%.2000s", (unsigned long long)problems,
		      (unsigned long long)n, out);
	uint64_t lines = 0;
	for (const char *p = out; *p; p++)
		lines += *p == '\n';
	ck_assert_uint_eq(lines, n);
}

/* The record of an inode, decoded for fn to change, encoded in place. */
static void
edit_record(struct img *im, const struct lfs_imap_entry *rec, void (*fn)(struct lfs_dinode *, const struct facts *),
	    const struct facts *fx)
{
	uint8_t *p = img_record(im, rec->daddr, rec->slot);
	ck_assert_ptr_nonnull(p);
	struct lfs_dinode di;
	uint8_t inl[4096];
	ck_assert_int_gt(lfs_dinode_decode(&di, p, im->bs - rec->slot * LFS_INODE_ALIGN), 0);
	memcpy(inl, p + LFS_INODE_HDR_SIZE, di.inline_len);
	fn(&di, fx);
	lfs_dinode_encode(&di, inl, p);
}

/* The byte offset of the summary entry that names block addr. */
static uint64_t
entry_of(const struct img *im, uint64_t addr)
{
	for (size_t i = 0; i < im->npsegs; i++)
		if (addr > im->psegs[i].addr && addr <= im->psegs[i].addr + im->psegs[i].n)
			return im->psegs[i].addr * im->bs + LFS_PSEG_HDR_SIZE +
			       (addr - im->psegs[i].addr - 1) * LFS_PSEG_ENTRY_SIZE;
	ck_abort_msg("no summary names block %llu", (unsigned long long)addr);
	return 0;
}

/* The directory record named `name` in the image. */
static uint8_t *
dirent_named(const struct img *im, const char *name)
{
	for (size_t i = 0; i < im->count[IMG_DIRENT]; i++) {
		uint8_t *p = im->buf + im->at[IMG_DIRENT][i];
		if (p[LFS_DE_OFF_NAMELEN] == strlen(name) && !memcmp(p + LFS_DIRENT_HDR, name, strlen(name)))
			return p;
	}
	ck_abort_msg("no directory record '%s'", name);
	return NULL;
}

#define REPORT 16384

/* ---------------------------------------------------------------- */

static void
no_edit(struct img *im, const struct facts *fx)
{
	(void)im, (void)fx;
}

/* A sound image has no problem, nor does it after a re-seal alone (the
 * damage tests below change only what they say); nor a mounted
 * filesystem whose changes are still in memory: a dirty page, a page
 * over a hole (blocks not counted on disk yet), a dirty attribute, a
 * name removed. */
START_TEST(sound_image_has_no_problem)
{
	struct facts fx;
	make_sample(&fx);
	char out[REPORT];
	ck_assert_uint_eq(fsck_image(out, sizeof(out)), 0);
	ck_assert_str_eq(out, "");
	damage(no_edit, &fx, true);
	ck_assert_uint_eq(fsck_image(out, sizeof(out)), 0);

	struct lfs_fs *fs = testfs_mount();
	ck_assert_int_eq(lfs_write(fs, fx.f, "xyz", 3, 7 * 4096 + 5, NULL), 3);
	ck_assert_int_eq(lfs_write(fs, fx.g, "abc", 3, 20 * 4096, NULL), 3);
	ck_assert_int_eq(lfs_setxattr(fs, fx.g, "user.more", "w", 1, 0), 0);
	ck_assert_int_eq(lfs_unlink(fs, fx.d, "g2"), 0);
	uint64_t p = fsck_on(fs, out, sizeof(out));
	ck_assert_msg(p == 0, "%.2000s", out);
	ck_assert_str_eq(out, "");
	/* and with an inode whose record is not written yet, and one
	 * unlinked while open whose record still has its link */
	uint64_t a = testfs_mkfile(fs, LFS_ROOT_INO, "new");
	uint64_t b = testfs_mkfile(fs, LFS_ROOT_INO, "open");
	ck_assert_int_eq(lfs_fsync(fs, b, false), 0);
	ck_assert_int_eq(lfs_open(fs, b, O_RDWR), 0);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "open"), 0);
	p = fsck_on(fs, out, sizeof(out));
	ck_assert_msg(p == 0, "%.2000s", out);
	ck_assert_int_eq(lfs_release(fs, b), 0);
	lfs_forget(fs, b, 1);
	ck_assert_int_eq(lfs_fsync(fs, a, false), 0);
	testfs_finish(fs);
}
END_TEST

static void
flip_data_byte(struct img *im, const struct facts *fx)
{
	im->buf[fx->f_blk100 * im->bs + 77] ^= 1;
}

static void
flip_node_byte(struct img *im, const struct facts *fx)
{
	im->buf[fx->f_node * im->bs + 4000] ^= 1;
}

static void
summary_names_other_inode(struct img *im, const struct facts *fx)
{
	uint8_t *e = im->buf + entry_of(im, fx->f_blk0);
	ck_assert_uint_eq(lfs_get32(e + LFS_PE_OFF_INO), fx->f);
	lfs_put32(e + LFS_PE_OFF_INO, (uint32_t)fx->g);
}

/* lfs_fsck_memo walks again the segments it is told were written: a
 * data block damaged there is reported as lfs_fsck reports it.  Untold,
 * it takes the segment from its memo (what makes it cheaper), which
 * the damage does not reach. */
START_TEST(memo_walks_what_was_written)
{
	struct facts fx;
	make_sample(&fx);
	struct lfs_fsck_memo *memo;
	ck_assert_int_eq(lfs_fsck_memo_new(&memo), 0);
	char out[REPORT], want[160];
	ck_assert_uint_eq(fsck_image_memo(memo, out, sizeof(out)), 0);
	damage(flip_data_byte, &fx, false);
	ck_assert_uint_eq(fsck_image_memo(memo, out, sizeof(out)), 0);
	/* another segment written: this one is still taken from the memo */
	bool s_there = fx.seg100 == fx.seg_s;
	ck_assert_uint_ne(s_there ? fx.seg_g0 : fx.seg_s, fx.seg100);
	lfs_fsck_memo_forget(memo, (s_there ? fx.g_blk0 : fx.rec_s.daddr) * 4096, 4096);
	ck_assert_uint_eq(fsck_image_memo(memo, out, sizeof(out)), 0);
	lfs_fsck_memo_forget(memo, fx.f_blk100 * 4096 + 77, 1);
	uint64_t p = fsck_image_memo(memo, out, sizeof(out));
	snprintf(want, sizeof(want), "inode %llu (/d/f): block %llu (kind 1) is not described by any verifying summary",
		 (unsigned long long)fx.f, (unsigned long long)fx.f_blk100);
	expect_report(p, out, 1, want);
	lfs_fsck_memo_free(memo);
	testfs_remove();
}
END_TEST

/* Every block an inode references must be named by a verifying summary
 * entry, for that inode and of that kind, with a matching checksum: a
 * data block that no longer matches its crc, and an entry that names
 * another owner, are each one problem, naming the file by its path; a
 * block-map node that fails its crc is reported, and so is the map it
 * leaves unreadable. */
START_TEST(summary_must_name_each_block)
{
	struct facts fx;
	make_sample(&fx);
	char out[REPORT], want[160];
	damage(flip_data_byte, &fx, false);
	uint64_t p = fsck_image(out, sizeof(out));
	snprintf(want, sizeof(want), "inode %llu (/d/f): block %llu (kind 1) is not described by any verifying summary",
		 (unsigned long long)fx.f, (unsigned long long)fx.f_blk100);
	expect_report(p, out, 1, want);
	testfs_remove();

	make_sample(&fx);
	damage(summary_names_other_inode, &fx, true);
	p = fsck_image(out, sizeof(out));
	snprintf(want, sizeof(want), "block %llu: summary says inode %llu kind 1, but inode %llu (/d/f) references it as kind 1",
		 (unsigned long long)fx.f_blk0, (unsigned long long)fx.g, (unsigned long long)fx.f);
	expect_report(p, out, 1, want);
	testfs_remove();

	make_sample(&fx);
	damage(flip_node_byte, &fx, false);
	p = fsck_image(out, sizeof(out));
	snprintf(want, sizeof(want), "inode %llu (/d/f): block %llu (kind 2) is not described by any verifying summary",
		 (unsigned long long)fx.f, (unsigned long long)fx.f_node);
	ck_assert_msg(strstr(out, want), "report lacks \"%s\":\n%.2000s", want, out);
	/* the blocks under it go unclaimed: the segments holding them are
	 * reported too */
	snprintf(want, sizeof(want), "inode %llu (/d/f): block map cannot be read (Input/output error)",
		 (unsigned long long)fx.f);
	ck_assert_msg(strstr(out, want), "report lacks \"%s\":\n%.2000s", want, out);
	ck_assert_uint_ge(p, 3);
	testfs_remove();
}
END_TEST

static void
unknown_mode_bits(struct lfs_dinode *di, const struct facts *fx)
{
	(void)fx;
	di->mode |= 010000000;
}

static void
break_s_record(struct img *im, const struct facts *fx)
{
	edit_record(im, &fx->rec_s, unknown_mode_bits, fx);
}

/* A record in use must satisfy the invariants every mount applies
 * (lfs_dinode_check), and the report says which one it breaks, and
 * where the inode is. */
START_TEST(record_invariants_checked)
{
	struct facts fx;
	make_sample(&fx);
	damage(break_s_record, &fx, true);
	char out[REPORT], want[160];
	uint64_t p = fsck_image(out, sizeof(out));
	snprintf(want, sizeof(want), "inode %llu (/s) cannot be read (Structure needs cleaning): "
		 "unknown file type or mode bits", (unsigned long long)fx.s);
	ck_assert_msg(strstr(out, want), "report lacks \"%s\":\n%.2000s", want, out);
	snprintf(want, sizeof(want), "directory 1 (/): entry 's': inode %llu cannot be read", (unsigned long long)fx.s);
	ck_assert_msg(strstr(out, want), "report lacks \"%s\":\n%.2000s", want, out);
	/* and its record, no longer claimed, leaves its segment's count off */
	snprintf(want, sizeof(want), "segment %llu: usage table says", (unsigned long long)fx.seg_s);
	expect_report(p, out, 3, want);
	testfs_remove();
}
END_TEST

static void
one_link_more(struct lfs_dinode *di, const struct facts *fx)
{
	(void)fx;
	di->nlink++;
}

static void
g_one_link_more(struct img *im, const struct facts *fx)
{
	edit_record(im, &fx->rec_g, one_link_more, fx);
}

static void
s_named_as_directory(struct img *im, const struct facts *fx)
{
	(void)fx;
	dirent_named(im, "s")[LFS_DE_OFF_TYPE] = 4; /* DT_DIR */
}

static void
s_name_removed(struct img *im, const struct facts *fx)
{
	(void)fx;
	lfs_put32(dirent_named(im, "s") + LFS_DE_OFF_INO, 0);
}

static void
l_names_unused_inode(struct img *im, const struct facts *fx)
{
	(void)fx;
	lfs_put32(dirent_named(im, "l") + LFS_DE_OFF_INO, 900);
}

static void
parent_is_g(struct lfs_dinode *di, const struct facts *fx)
{
	di->parent = (uint32_t)fx->g;
}

static void
d_parent_wrong(struct img *im, const struct facts *fx)
{
	edit_record(im, &fx->rec_d, parent_is_g, fx);
}

/* The tree: a link count that disagrees with the names (a file freed
 * while named, or never freed), an entry whose type is not its inode's,
 * an inode in use that no name reaches (space lost for good), a name of
 * an inode not in use, a directory whose parent is not the directory
 * holding it (".." would lead elsewhere).  Each is reported once. */
START_TEST(tree_checked)
{
	static const struct {
		damage_fn *fn;
		uint64_t problems;
		const char *what;
	} cases[] = {
		{ g_one_link_more, 1, "(/g) has link count 3, but 2 names refer to it" },
		{ s_named_as_directory, 1, "entry 's' has type 4, inode" },
		{ s_name_removed, 2, "(mode 100644, 1 links) is in use but not reachable from the root" },
		{ l_names_unused_inode, 3, "entry 'l' points at inode 900, which is not in use" },
		{ d_parent_wrong, 1, "('d') says its parent is" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct facts fx;
		make_sample(&fx);
		damage(cases[i].fn, &fx, true);
		char out[REPORT];
		uint64_t p = fsck_image(out, sizeof(out));
		expect_report(p, out, cases[i].problems, cases[i].what);
		testfs_remove();
	}
}
END_TEST

static void
share_f_block(struct lfs_dinode *di, const struct facts *fx)
{
	di->direct[0] = fx->f_blk0;
}

static void
g_takes_f_block(struct img *im, const struct facts *fx)
{
	edit_record(im, &fx->rec_g, share_f_block, fx);
}

static void
two_xattr_blocks(struct lfs_dinode *di, const struct facts *fx)
{
	(void)fx;
	ck_assert_uint_ne(di->xattr, 0);
	di->xattr_blocks = 2;
}

static void
g_xattr_count_wrong(struct img *im, const struct facts *fx)
{
	edit_record(im, &fx->rec_g, two_xattr_blocks, fx);
}

/* Every block is owned once: g's first block made f's is owned twice
 * (and its summary names f); and the counts a record keeps of its
 * blocks must match what its maps name: st_blocks and df depend on it. */
START_TEST(ownership_and_counts_checked)
{
	struct facts fx;
	make_sample(&fx);
	damage(g_takes_f_block, &fx, true);
	char out[REPORT], want[160];
	uint64_t p = fsck_image(out, sizeof(out));
	snprintf(want, sizeof(want), "block %llu is owned twice: inode %llu (kind 1) and inode %llu (kind 1)",
		 (unsigned long long)fx.f_blk0, (unsigned long long)fx.f, (unsigned long long)fx.g);
	ck_assert_msg(strstr(out, want), "report lacks \"%s\":\n%.2000s", want, out);
	snprintf(want, sizeof(want), "block %llu: summary says inode %llu kind 1, but inode %llu (/g) references it",
		 (unsigned long long)fx.f_blk0, (unsigned long long)fx.f, (unsigned long long)fx.g);
	ck_assert_msg(strstr(out, want), "report lacks \"%s\":\n%.2000s", want, out);
	/* g's own block is no longer referenced: its segment's count is off
	 * by a block, and f's by one the other way, unless they share one */
	uint64_t problems = fx.seg_f0 == fx.seg_g0 ? 2 : 4;
	ck_assert_uint_eq(p, problems);
	testfs_remove();

	make_sample(&fx);
	damage(g_xattr_count_wrong, &fx, true);
	p = fsck_image(out, sizeof(out));
	snprintf(want, sizeof(want), "inode %llu (/g) holds 1 xattr blocks, but its record says 2", (unsigned long long)fx.g);
	expect_report(p, out, 1, want);
	testfs_remove();
}
END_TEST

static void
sut_entry(struct img *im, const struct facts *fx, uint32_t live)
{
	uint8_t *e = im->buf + fx->sut0 * im->bs + fx->seg100 * LFS_SUT_ENTRY_SIZE;
	ck_assert_uint_eq(lfs_get32(e + LFS_SU_OFF_LIVE), fx->live100);
	lfs_put32(e + LFS_SU_OFF_LIVE, live);
}

static void
sut_counts_a_block_more(struct img *im, const struct facts *fx)
{
	sut_entry(im, fx, fx->live100 + 4096);
}

static void
sut_says_empty(struct img *im, const struct facts *fx)
{
	sut_entry(im, fx, 0);
}

/* The usage table must count what the inodes reference, byte for byte
 * (the cleaner picks victims and frees segments by it), and a segment
 * it leaves clean must hold nothing live (the log would be written over
 * live data). */
START_TEST(usage_table_checked)
{
	struct facts fx;
	make_sample(&fx);
	ck_assert_uint_eq(fx.meta100, 0); /* all of it is f's */
	ck_assert_uint_eq(fx.live100, SEG - 4096); /* all but its summary */
	damage(sut_counts_a_block_more, &fx, true);
	char out[REPORT], want[160];
	uint64_t p = fsck_image(out, sizeof(out));
	snprintf(want, sizeof(want), "segment %llu: usage table says 262144 live bytes, the inodes reference 258048",
		 (unsigned long long)fx.seg100);
	expect_report(p, out, 1, want);
	testfs_remove();

	make_sample(&fx);
	damage(sut_says_empty, &fx, true);
	p = fsck_image(out, sizeof(out));
	/* a clean segment's summaries are not read: each of its 63 blocks is
	 * reported too */
	snprintf(want, sizeof(want), "segment %llu is marked clean but holds live blocks", (unsigned long long)fx.seg100);
	expect_report(p, out, 2 + 63, want);
	snprintf(want, sizeof(want), "inode %llu (/d/f): block %llu (kind 1) is not described by any verifying summary",
		 (unsigned long long)fx.f, (unsigned long long)fx.f_blk100);
	ck_assert_msg(strstr(out, want), "report lacks \"%s\":\n%.2000s", want, out);
	snprintf(want, sizeof(want), "segment %llu: usage table says 0 live bytes, the inodes reference 258048",
		 (unsigned long long)fx.seg100);
	ck_assert_msg(strstr(out, want), "report lacks \"%s\":\n%.2000s", want, out);
	testfs_remove();
}
END_TEST

/* The running counts a mounted filesystem keeps (seg.c) must agree with
 * its segments: a count off by one, and a segment gone freeable without
 * being listed to be freed, are reported; put right, nothing is. */
START_TEST(running_counts_checked)
{
	testfs_make(16 << 20, SEG);
	struct lfs_fs *fs = testfs_mount();
	char out[REPORT];
	fs->nclean++;
	uint64_t p = fsck_on(fs, out, sizeof(out));
	fs->nclean--;
	expect_report(p, out, 1, "running counts: ");
	uint64_t s = fs->sb.nsegs - 1;
	ck_assert_uint_eq(fs->segs[s].state, LFS_SEG_CLEAN);
	fs->segs[s].state = LFS_SEG_DIRTY; /* behind seg.c's back */
	p = fsck_on(fs, out, sizeof(out));
	fs->segs[s].state = LFS_SEG_CLEAN;
	char want[96];
	snprintf(want, sizeof(want), "segment %llu is freeable but not listed", (unsigned long long)s);
	expect_report(p, out, 2, want);
	ck_assert_uint_eq(fsck_on(fs, out, sizeof(out)), 0);
	testfs_finish(fs);
}
END_TEST

static void
blocks_one_more(struct lfs_dinode *di, const struct facts *fx)
{
	(void)fx;
	di->blocks++;
}

static void
f_counts_a_block_more(struct img *im, const struct facts *fx)
{
	edit_record(im, &fx->rec_f, blocks_one_more, fx);
}

/* A record that kept checkpoints of different trees share (snapshots
 * s1 and s2, a file made between them) is checked in each tree: damage
 * to it is reported for the live tree and for each snapshot, though
 * fsck checks an inode a kept tree found sound only once for all the
 * trees that read the same record and blocks. */
START_TEST(damage_shared_by_kept_trees_reported_in_each)
{
	struct facts fx;
	make_sample(&fx);
	struct lfs_fs *fs = testfs_mount();
	uint64_t s1, s2;
	ck_assert_int_eq(lfs_snapshot_make(fs, "s1", &s1), 0);
	make_file(fs, LFS_ROOT_INO, "x", 3, 3);
	ck_assert_int_eq(lfs_snapshot_make(fs, "s2", &s2), 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount_ro();
	const struct lfs_imap_entry *e = lfs_imap_get(fs, fx.f);
	ck_assert_uint_eq(e->daddr, fx.rec_f.daddr); /* f itself is unchanged */
	ck_assert_uint_eq(e->slot, fx.rec_f.slot);
	lfs_abandon(fs);
	char out[REPORT], want[160];
	ck_assert_uint_eq(fsck_image(out, sizeof(out)), 0);

	damage(f_counts_a_block_more, &fx, true);
	uint64_t p = fsck_image(out, sizeof(out));
	snprintf(want, sizeof(want), "fsck.lfs: inode %llu (/d/f): its block count says %u blocks, its block map names %u",
		 (unsigned long long)fx.f, BIG_BLOCKS + 2, BIG_BLOCKS + 1); /* and a node */
	expect_report(p, out, 3, want);
	/* each snapshot its own tree: a file was made between them */
	uint64_t seqs[2] = { s1, s2 };
	for (int i = 0; i < 2; i++) {
		snprintf(want, sizeof(want), "fsck.lfs: checkpoint %llu: inode %llu (/d/f): its block count says",
			 (unsigned long long)seqs[i], (unsigned long long)fx.f);
		ck_assert_msg(strstr(out, want), "report lacks \"%s\":\n%.2000s", want, out);
	}
	testfs_remove();
}
END_TEST

CHECK_MAIN("fsck", "checks", 60, sound_image_has_no_problem, summary_must_name_each_block,
	   record_invariants_checked, tree_checked, ownership_and_counts_checked, usage_table_checked,
	   running_counts_checked, damage_shared_by_kept_trees_reported_in_each, memo_walks_what_was_written)
