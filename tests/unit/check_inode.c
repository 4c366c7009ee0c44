/*
 * check_inode.c — mirrors lfs/inode/inode.c and inode_drop.c, the in-memory
 * inode: lfs_iget's
 * cache and its refusals, new inodes (numbers, versions, the attributes
 * they inherit), dirty tracking and what it charges to admission
 * control, eviction that keeps the kernel's references, freeing, the
 * record reader's verdicts, and what stat reports.  Holds it to the
 * rules the rest of the core relies on: one struct per cached inode, a
 * freed number's next user a new generation, dirty units counted once,
 * nothing of a failed load left in the cache.
 */
#include "testfs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/sysmacros.h>

#define IMG_BYTES (16u << 20)
#define SEG_BYTES (256u << 10)

static struct lfs_fs *
fresh(void)
{
	testfs_make(IMG_BYTES, SEG_BYTES);
	return testfs_mount();
}

static struct lfs_inode *
cached(struct lfs_fs *fs, uint64_t ino)
{
	return u64map_get(&fs->icache, ino);
}

/* A file `name` in the root holding `len` bytes of pattern `seed`, all
 * of it written to the log: its inode is clean. */
static uint64_t
clean_file(struct lfs_fs *fs, const char *name, size_t len, unsigned seed)
{
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, name);
	uint8_t *buf = malloc(len + 1);
	fill_pattern(buf, len, seed);
	ck_assert_int_eq(lfs_write(fs, ino, buf, len, 0, NULL), (ssize_t)len);
	free(buf);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	ck_assert(!cached(fs, ino)->dirty);
	return ino;
}

/* Free an inode lfs_inode_new made and nothing names. */
static void
drop_new(struct lfs_fs *fs, struct lfs_inode *ip)
{
	ip->di.nlink = 0;
	lfs_inode_maybe_free(fs, ip);
}

/* One struct per cached inode: a second lfs_iget is the same pointer.
 * A number outside the map or not in use is ESTALE (what the kernel
 * gets for a stale handle); a number in use with no record, or whose
 * record is another inode's, is EFSCORRUPTED and leaves nothing in the
 * cache, so that the next lfs_iget tries again. */
START_TEST(iget_cache_and_refusals)
{
	struct lfs_fs *fs = fresh();
	struct lfs_inode *a, *b;
	ck_assert_int_eq(lfs_iget(fs, LFS_ROOT_INO, &a), 0);
	ck_assert_int_eq(lfs_iget(fs, LFS_ROOT_INO, &b), 0);
	ck_assert_ptr_eq(a, b);
	ck_assert_uint_eq(a->di.ino, 1);
	ck_assert(S_ISDIR(a->di.mode));
	ck_assert_int_eq(lfs_iget(fs, 0, &a), -ESTALE);
	ck_assert_int_eq(lfs_iget(fs, 7, &a), -ESTALE);             /* never used */
	ck_assert_int_eq(lfs_iget(fs, 4096, &a), -ESTALE);          /* max_inodes */
	ck_assert_int_eq(lfs_iget(fs, (1ull << 32) + 1, &a), -ESTALE);

	uint64_t ia = clean_file(fs, "a", 100, 1), ib = clean_file(fs, "b", 200, 2);
	size_t count = fs->icache.count;
	uint32_t ino, version;
	ck_assert_int_eq(lfs_imap_alloc(fs, &ino, &version), 0);
	ck_assert_int_eq(lfs_iget(fs, ino, &a), -EFSCORRUPTED);
	ck_assert_uint_eq(fs->icache.count, count);
	ck_assert_int_eq(lfs_imap_release(fs, ino, version), 0);

	/* b's map entry pointed at a's record */
	ck_assert_int_eq(lfs_inode_evict(fs, cached(fs, ib)), 0);
	count = fs->icache.count;
	struct lfs_imap_entry *e = lfs_imap_ent(fs, (uint32_t)ib), saved = *e;
	e->daddr = lfs_imap_get(fs, ia)->daddr;
	e->slot = lfs_imap_get(fs, ia)->slot;
	ck_assert_int_eq(lfs_iget(fs, ib, &b), -EFSCORRUPTED);
	ck_assert_uint_eq(fs->icache.count, count);
	ck_assert_ptr_null(cached(fs, ib));
	*e = saved;
	ck_assert_int_eq(lfs_iget(fs, ib, &b), 0);
	ck_assert_uint_eq(b->di.ino, ib);
	ck_assert_uint_eq(b->di.size, 200);
	ck_assert_uint_eq(b->nlookup, 1); /* the create's reference, kept through it all */
	testfs_finish(fs);
}
END_TEST

/* A new inode: the lowest free number after the root, version 1 on a
 * fresh map; the caller's ids; all four times equal; regular files and
 * symlinks start inline, directories do not and record their parent; a
 * set-group-ID directory passes on its group, and the bit to
 * subdirectories only.  It is dirty from the start, charging a whole
 * block (16 units) when inline, one unit otherwise; freed unwritten, it
 * gives the units back and logs no tombstone. */
START_TEST(new_inode_attributes)
{
	struct lfs_fs *fs = fresh();
	struct stat st;
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "sgid", 0755, &testfs_me, &st), 0);
	struct lfs_inode *dp;
	ck_assert_int_eq(lfs_iget(fs, st.st_ino, &dp), 0);
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	uint64_t units0 = fs->dirty_units, used0 = fs->inodes_used;
	ck_assert_uint_eq(units0, 0);
	struct lfs_cred cred = { 1234, 5678, 0 };

	struct lfs_inode *f, *d, *l;
	ck_assert_int_eq(lfs_inode_new(fs, S_IFREG | 0644, &cred, dp, &f), 0);
	ck_assert_uint_eq(f->ino, 3);
	ck_assert_uint_eq(f->di.ino, 3);
	ck_assert_uint_eq(f->di.version, 1);
	ck_assert_uint_eq(f->di.mode, S_IFREG | 0644);
	ck_assert_uint_eq(f->di.uid, 1234);
	ck_assert_uint_eq(f->di.gid, 5678);
	ck_assert_uint_eq(f->di.flags, LFS_DI_INLINE);
	ck_assert_uint_eq(f->di.parent, 0);
	ck_assert_uint_eq(f->di.nlink, 0);
	ck_assert(f->di.mtime_sec == f->di.atime_sec && f->di.ctime_sec == f->di.atime_sec &&
		  f->di.btime_sec == f->di.atime_sec && f->di.mtime_nsec == f->di.atime_nsec &&
		  f->di.btime_nsec == f->di.atime_nsec);
	ck_assert(f->dirty);
	ck_assert_ptr_eq(u64map_get(&fs->dirty, 3), f);
	ck_assert_uint_eq(f->units, 16);
	ck_assert_ptr_eq(cached(fs, 3), f);

	ck_assert_int_eq(lfs_inode_new(fs, S_IFDIR | 0700, &cred, dp, &d), 0);
	ck_assert_uint_eq(d->ino, 4);
	ck_assert_uint_eq(d->di.flags, 0);
	ck_assert_uint_eq(d->di.parent, dp->ino);
	ck_assert_uint_eq(d->units, 1);
	ck_assert_int_eq(lfs_inode_new(fs, S_IFLNK | 0777, &cred, NULL, &l), 0);
	ck_assert_uint_eq(l->di.flags, LFS_DI_INLINE);
	ck_assert_uint_eq(fs->dirty_units, units0 + 16 + 1 + 16);
	ck_assert_uint_eq(fs->inodes_used, used0 + 3);
	ck_assert(fs->changed_since_ckpt);
	drop_new(fs, f);
	drop_new(fs, d);
	drop_new(fs, l);
	ck_assert_uint_eq(fs->dirty_units, units0);
	ck_assert_uint_eq(fs->inodes_used, used0);
	ck_assert_uint_eq(fs->tombstones.count, 0);

	dp->di.mode |= S_ISGID;
	dp->di.gid = 4242;
	ck_assert_int_eq(lfs_inode_new(fs, S_IFREG | 0644, &cred, dp, &f), 0);
	ck_assert_uint_eq(f->di.gid, 4242);
	ck_assert_uint_eq(f->di.mode, S_IFREG | 0644);
	ck_assert_int_eq(lfs_inode_new(fs, S_IFDIR | 0755, &cred, dp, &d), 0);
	ck_assert_uint_eq(d->di.gid, 4242);
	ck_assert_uint_eq(d->di.mode, S_IFDIR | S_ISGID | 0755);
	ck_assert_uint_eq(d->di.uid, 1234);
	drop_new(fs, f);
	drop_new(fs, d);
	dp->di.mode &= ~(uint32_t)S_ISGID;
	dp->di.gid = testfs_me.gid;
	testfs_finish(fs);
}
END_TEST

/* lfs_inode_dirty charges admission control what the record will take
 * in the log, once however often it is called: a block (16 units) for
 * an inline record, 1 unit otherwise, and 3 blocks more for the
 * interior block-map nodes of a file past its first tree (the direct
 * blocks and one leaf under the inode need none). */
START_TEST(dirty_units)
{
	struct lfs_fs *fs = fresh();
	static const struct { size_t len; unsigned units; } cases[] = {
		{ 100, 16 },                 /* inline */
		{ 2 * 4096, 1 },             /* direct blocks */
		{ 13 * 4096, 1 },            /* one past the 12 direct ones: a leaf */
		{ (12 + 512 + 1) * 4096, 1 + 3 * 16 }, /* one past the first leaf */
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char name[8] = { 'f', (char)('0' + i), 0 };
		uint64_t ino = clean_file(fs, name, cases[i].len, i);
		ck_assert_int_eq(lfs_checkpoint(fs), 0);
		ck_assert(!fs->changed_since_ckpt);
		struct lfs_inode *ip;
		ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
		uint64_t before = fs->dirty_units;
		lfs_inode_dirty(fs, ip);
		ck_assert(ip->dirty);
		ck_assert_ptr_eq(u64map_get(&fs->dirty, ino), ip);
		ck_assert_uint_eq(ip->units, cases[i].units);
		ck_assert_uint_eq(fs->dirty_units, before + cases[i].units);
		ck_assert(fs->changed_since_ckpt);
		lfs_inode_dirty(fs, ip);
		ck_assert_uint_eq(fs->dirty_units, before + cases[i].units);
		ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
		ck_assert(!ip->dirty);
		ck_assert_uint_eq(fs->dirty_units, 0);
	}
	testfs_finish(fs);
}
END_TEST

/* An inode is freed only when nothing holds it: no name, no kernel
 * reference, no open handle, and never the root.  Its number then goes
 * back to the map keeping its version, so the next inode to get the
 * number is a new generation (NFS handles and FUSE generations tell the
 * two apart), on disk too. */
START_TEST(free_and_versions)
{
	struct lfs_fs *fs = fresh();
	uint64_t ino = clean_file(fs, "a", 100, 1);
	struct lfs_inode *ip = cached(fs, ino);
	ck_assert_uint_eq(ino, 2);
	ck_assert_uint_eq(ip->di.version, 1);

	/* each holder alone keeps it */
	ip->di.nlink = 0;
	ip->nlookup = 0;
	ip->nopen = 1;
	lfs_inode_maybe_free(fs, ip);
	ck_assert_ptr_eq(cached(fs, ino), ip);
	ip->nopen = 0;
	ip->nlookup = 1;
	lfs_inode_maybe_free(fs, ip);
	ck_assert_ptr_eq(cached(fs, ino), ip);
	ip->nlookup = 0;
	ip->di.nlink = 1;
	lfs_inode_maybe_free(fs, ip);
	ck_assert_ptr_eq(cached(fs, ino), ip);
	ck_assert(lfs_imap_valid_ino(fs, ino));
	ip->nlookup = 1; /* the create's, as before */
	struct lfs_inode *root;
	ck_assert_int_eq(lfs_iget(fs, LFS_ROOT_INO, &root), 0);
	uint32_t rlink = root->di.nlink;
	uint64_t rlookup = root->nlookup;
	root->di.nlink = 0;
	root->nlookup = 0;
	lfs_inode_maybe_free(fs, root);
	ck_assert_ptr_eq(cached(fs, LFS_ROOT_INO), root);
	ck_assert(lfs_imap_valid_ino(fs, LFS_ROOT_INO));
	root->di.nlink = rlink;
	root->nlookup = rlookup;

	/* unlinked and forgotten: freed, a tombstone logged, version kept */
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "a"), 0);
	ck_assert_ptr_eq(cached(fs, ino), ip);      /* the kernel's reference */
	lfs_forget(fs, ino, 1);
	ck_assert_ptr_null(cached(fs, ino));
	ck_assert(!lfs_imap_valid_ino(fs, ino));
	ck_assert_uint_eq(lfs_imap_get(fs, ino)->version, 1);
	ck_assert_uint_eq((uintptr_t)u64map_get(&fs->tombstones, ino), 0x100000001ull);
	struct lfs_inode *again;
	ck_assert_int_eq(lfs_inode_new(fs, S_IFREG | 0600, &testfs_me, NULL, &again), 0);
	ck_assert_uint_eq(again->ino, 2);
	ck_assert_uint_eq(again->di.version, 2);
	drop_new(fs, again);
	ck_assert_uint_eq(lfs_imap_get(fs, ino)->version, 2);
	uint64_t b = clean_file(fs, "b", 10, 2);
	ck_assert_uint_eq(b, 2);
	ck_assert_uint_eq(cached(fs, b)->di.version, 3);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_iget(fs, 2, &ip), 0);
	ck_assert_uint_eq(ip->di.version, 3);
	testfs_finish(fs);
}
END_TEST

/* Evicting a clean inode frees its struct and inline buffer but keeps
 * the kernel's references (nlookup) in fs->irefs, and the next load
 * takes them back, with the record as it was; without references
 * nothing is kept. */
START_TEST(evict_keeps_references)
{
	struct lfs_fs *fs = fresh();
	uint64_t ino = clean_file(fs, "a", 300, 5);
	struct stat st;
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "a", &st), 0);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "a", &st), 0);
	struct lfs_inode *ip = cached(fs, ino);
	ck_assert_uint_eq(ip->nlookup, 3);
	struct lfs_dinode di = ip->di;
	uint8_t inl[300];
	memcpy(inl, ip->inl, sizeof(inl));
	uint64_t inl0 = fs->cache_inl;

	ck_assert_int_eq(lfs_inode_evict(fs, ip), 0);
	ck_assert_ptr_null(cached(fs, ino));
	ck_assert_uint_eq((uintptr_t)u64map_get(&fs->irefs, ino), 3);
	ck_assert_uint_eq(fs->cache_inl, inl0 - 1);
	/* a forget while evicted counts against what is kept */
	lfs_forget(fs, ino, 1);
	ck_assert_uint_eq((uintptr_t)u64map_get(&fs->irefs, ino), 2);

	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	ck_assert_uint_eq(ip->nlookup, 2);
	ck_assert_ptr_null(u64map_get(&fs->irefs, ino));
	ck_assert_uint_eq(fs->cache_inl, inl0);
	ck_assert_uint_eq(ip->di.size, 300);
	ck_assert_uint_eq(ip->di.version, di.version);
	ck_assert_int_eq(ip->di.mtime_sec, di.mtime_sec);
	ck_assert_uint_eq(ip->di.mtime_nsec, di.mtime_nsec);
	ck_assert_mem_eq(ip->inl, inl, sizeof(inl));
	ck_assert(!ip->dirty);

	ip->nlookup = 0;
	ck_assert_int_eq(lfs_inode_evict(fs, ip), 0);
	ck_assert_uint_eq(fs->irefs.count, 0);
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	ck_assert_uint_eq(ip->nlookup, 0);
	testfs_finish(fs);
}
END_TEST

/* The record reader: a slot past the end of the block and bytes that are
 * no record are EFSCORRUPTED with the reason in words (fsck prints it);
 * a record that decodes but breaks an invariant too; a good one decodes
 * with its inline content in a buffer of inline_max bytes. */
START_TEST(record_verdicts)
{
	struct lfs_fs *fs = fresh();
	uint64_t ino = clean_file(fs, "a", 100, 3);
	const struct lfs_imap_entry *e = lfs_imap_get(fs, ino);
	struct lfs_dinode di;
	uint8_t *inl = NULL, want[100];
	const char *why = "unset";
	ck_assert_int_eq(lfs_inode_read_record(fs, e->daddr, e->slot, &di, &inl, &why), 0);
	ck_assert_ptr_null(why);
	ck_assert_uint_eq(di.ino, ino);
	ck_assert_uint_eq(di.inline_len, 100);
	ck_assert_ptr_nonnull(inl);
	fill_pattern(want, sizeof(want), 3);
	ck_assert_mem_eq(inl, want, sizeof(want));
	free(inl);

	uint8_t *blk = calloc(1, 4096);
	inl = NULL;
	ck_assert_int_eq(lfs_inode_decode_record(fs, blk, 99, 64, &di, &inl, &why), -EFSCORRUPTED);
	ck_assert_str_eq(why, "slot past the end of the block");
	ck_assert_int_eq(lfs_inode_decode_record(fs, blk, 99, 0, &di, &inl, &why), -EFSCORRUPTED);
	ck_assert_str_eq(why, "not a well-formed record");
	ck_assert_ptr_null(inl);

	/* well-formed, but a directory with inline content */
	struct lfs_dinode bad = { .ino = 5, .version = 1, .mode = S_IFDIR | 0755, .nlink = 2,
				  .flags = LFS_DI_INLINE, .inline_len = 10, .size = 10, .parent = 1 };
	lfs_dinode_encode(&bad, "0123456789", blk + 128);
	ck_assert_int_eq(lfs_inode_decode_record(fs, blk, 99, 2, &di, &inl, &why), -EFSCORRUPTED);
	ck_assert_str_eq(why, "inline content in an inode that is not a file or symlink");
	ck_assert_ptr_null(inl);
	bad.mode = S_IFREG | 0644;
	bad.nlink = 1;
	bad.parent = 0;
	lfs_dinode_encode(&bad, "0123456789", blk + 128);
	ck_assert_int_eq(lfs_inode_decode_record(fs, blk, 99, 2, &di, &inl, &why), 0);
	ck_assert_ptr_null(why);
	ck_assert_uint_eq(di.ino, 5);
	ck_assert_mem_eq(inl, "0123456789", 10);
	free(inl);
	free(blk);
	testfs_finish(fs);
}
END_TEST

/* stat as the kernel sees it: st_blocks in 512-byte units counts data
 * blocks, blocks still to be allocated and inline bytes rounded up;
 * devices' numbers in the Linux encoding (minor's low 8 bits, major,
 * minor's high bits), so that 259:300 survives the 32-bit field. */
START_TEST(stat_and_rdev)
{
	ck_assert_uint_eq(lfs_rdev_encode(makedev(8, 1)), 0x801);
	ck_assert_uint_eq(lfs_rdev_encode(makedev(259, 300)), 0x11032c);
	ck_assert_uint_eq(lfs_rdev_encode(makedev(0, 0)), 0);

	struct lfs_fs *fs = fresh();
	struct stat st;
	ck_assert_int_eq(lfs_mknod(fs, LFS_ROOT_INO, "dev", S_IFCHR | 0600, makedev(259, 300), &testfs_me, &st), 0);
	struct lfs_inode *ip = cached(fs, st.st_ino);
	ck_assert_uint_eq(ip->di.rdev, 0x11032c);
	lfs_inode_stat(fs, ip, &st);
	ck_assert_uint_eq(major(st.st_rdev), 259);
	ck_assert_uint_eq(minor(st.st_rdev), 300);
	ck_assert_int_eq(st.st_blksize, 4096);

	static const struct { size_t len; blkcnt_t blocks; } cases[] = {
		{ 0, 0 }, { 1, 1 }, { 512, 1 }, { 513, 2 }, { 3 * 4096, 24 },
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char name[8] = { 's', (char)('0' + i), 0 };
		uint64_t ino = clean_file(fs, name, cases[i].len, i);
		lfs_inode_stat(fs, cached(fs, ino), &st);
		ck_assert_uint_eq(st.st_ino, ino);
		ck_assert_int_eq(st.st_size, (off_t)cases[i].len);
		ck_assert_int_eq(st.st_nlink, 1);
		ck_assert_uint_eq(st.st_uid, testfs_me.uid);
		ck_assert_msg(st.st_blocks == cases[i].blocks, "%zu bytes: st_blocks %lld, expected %lld",
			      cases[i].len, (long long)st.st_blocks, (long long)cases[i].blocks);
	}
	/* blocks written but not yet allocated in the log count already */
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "pending");
	uint8_t buf[2 * 4096];
	fill_pattern(buf, sizeof(buf), 9);
	ck_assert_int_eq(lfs_write(fs, ino, buf, sizeof(buf), 0, NULL), (ssize_t)sizeof(buf));
	ip = cached(fs, ino);
	ck_assert_uint_eq(ip->di.blocks + ip->pending_new, 2);
	lfs_inode_stat(fs, ip, &st);
	ck_assert_int_eq(st.st_blocks, 16);

	/* touch moves only the times it is asked to */
	ip->di.mtime_sec = ip->di.ctime_sec = 0;
	lfs_inode_touch(ip, true, false);
	ck_assert_int_gt(ip->di.mtime_sec, 0);
	ck_assert_int_eq(ip->di.ctime_sec, 0);
	lfs_inode_touch(ip, false, true);
	ck_assert_int_gt(ip->di.ctime_sec, 0);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("inode", "cache", 30, iget_cache_and_refusals, new_inode_attributes, dirty_units,
	   free_and_versions, evict_keeps_references, record_verdicts, stat_and_rdev)
