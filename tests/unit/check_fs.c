/*
 * check_fs.c — the filesystem API of lfs.h, called directly (no FUSE):
 * files, directories, links, renames, xattrs, persistence across
 * remount, recovery after a simulated crash, and a full filesystem.
 */
#include "ctl_ops.h"
#include "testfs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>


START_TEST(write_read_remount)
{
	testfs_make(64 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	size_t sizes[] = { 0, 1, 1000, 3840, 3841, 4096, 100000, 3 << 20 };
	uint8_t *buf = malloc(3 << 20), *back = malloc(3 << 20);
	char name[32];
	for (size_t i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "f%zu", i);
		uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, name);
		fill_pattern(buf, sizes[i], (unsigned)i);
		ck_assert_int_eq(lfs_write(fs, ino, buf, sizes[i], 0, NULL), (ssize_t)sizes[i]);
		ck_assert_int_eq(lfs_read(fs, ino, back, sizes[i] + 10, 0), (ssize_t)sizes[i]);
		ck_assert(memcmp(buf, back, sizes[i]) == 0);
	}
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	for (size_t i = 0; i < 8; i++) {
		struct stat st;
		snprintf(name, sizeof(name), "f%zu", i);
		ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, name, &st), 0);
		ck_assert_int_eq(st.st_size, (off_t)sizes[i]);
		fill_pattern(buf, sizes[i], (unsigned)i);
		ck_assert_int_eq(lfs_read(fs, st.st_ino, back, sizes[i], 0), (ssize_t)sizes[i]);
		ck_assert(memcmp(buf, back, sizes[i]) == 0);
	}
	ck_assert_int_eq(lfs_unmount(fs), 0);
	free(buf);
	free(back);
	testfs_remove();
}
END_TEST

START_TEST(sparse_terabyte_and_truncate)
{
	testfs_make(32 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "sparse");
	const off_t far = (1ll << 40) - 4096;
	ck_assert_int_eq(lfs_write(fs, ino, "tail", 4, far, NULL), 4);
	struct stat st;
	ck_assert_int_eq(lfs_getattr(fs, ino, &st), 0);
	ck_assert_int_eq(st.st_size, far + 4);
	char buf[8192];
	memset(buf, 1, sizeof(buf));
	ck_assert_int_eq(lfs_read(fs, ino, buf, sizeof(buf), 1ll << 30), (ssize_t)sizeof(buf));
	for (size_t i = 0; i < sizeof(buf); i++)
		ck_assert_int_eq(buf[i], 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_read(fs, ino, buf, 4, far), 4);
	ck_assert_int_eq(memcmp(buf, "tail", 4), 0);
	/* truncate down in the middle of a block, then up again: zeros */
	struct stat a = { .st_size = 5000 };
	uint8_t data[12288];
	fill_pattern(data, sizeof(data), 9);
	ck_assert_int_eq(lfs_write(fs, ino, data, sizeof(data), 0, NULL), (ssize_t)sizeof(data));
	ck_assert_int_eq(lfs_setattr(fs, ino, &a, LFS_SET_SIZE, &st), 0);
	ck_assert_int_eq(st.st_size, 5000);
	a.st_size = 12288;
	ck_assert_int_eq(lfs_setattr(fs, ino, &a, LFS_SET_SIZE, &st), 0);
	uint8_t back[12288];
	ck_assert_int_eq(lfs_read(fs, ino, back, sizeof(back), 0), (ssize_t)sizeof(back));
	ck_assert(memcmp(back, data, 5000) == 0);
	for (size_t i = 5000; i < sizeof(back); i++)
		ck_assert_int_eq(back[i], 0);
	/* punch a hole across block boundaries */
	ck_assert_int_eq(lfs_write(fs, ino, data, sizeof(data), 0, NULL), (ssize_t)sizeof(data));
	ck_assert_int_eq(lfs_fallocate(fs, ino, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 9000), 0);
	ck_assert_int_eq(lfs_read(fs, ino, back, sizeof(back), 0), (ssize_t)sizeof(back));
	ck_assert(memcmp(back, data, 100) == 0);
	for (size_t i = 100; i < 9100; i++)
		ck_assert_int_eq(back[i], 0);
	ck_assert(memcmp(back + 9100, data + 9100, sizeof(back) - 9100) == 0);
	ck_assert_int_eq(lfs_fallocate(fs, ino, FALLOC_FL_PUNCH_HOLE, 0, 10), -EOPNOTSUPP);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

static int
count_entry(void *ctx, const char *name, const struct stat *st, off_t next)
{
	(void)st;
	(void)next;
	if (strcmp(name, ".") && strcmp(name, ".."))
		(*(int *)ctx)++;
	return 0;
}

START_TEST(directories)
{
	testfs_make(64 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	struct stat st, d;
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "d", 0755, &testfs_me, &d), 0);
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "d", 0755, &testfs_me, &st), -EEXIST);
	char name[300];
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "entry-%05d", i);
		testfs_mkfile(fs, d.st_ino, name);
	}
	memset(name, 'x', 256);
	name[256] = '\0';
	ck_assert_int_eq(lfs_create(fs, d.st_ino, name, 0644, true, &testfs_me, &st), -ENAMETOOLONG);
	name[255] = '\0';
	ck_assert_int_eq(lfs_create(fs, d.st_ino, name, 0644, true, &testfs_me, &st), 0);
	for (int i = 0; i < 5000; i += 2) {
		snprintf(name, sizeof(name), "entry-%05d", i);
		ck_assert_int_eq(lfs_unlink(fs, d.st_ino, name), 0);
	}
	ck_assert_int_eq(lfs_rmdir(fs, LFS_ROOT_INO, "d"), -ENOTEMPTY);
	int n = 0;
	ck_assert_int_eq(lfs_readdir(fs, d.st_ino, 0, count_entry, &n), 0);
	ck_assert_int_eq(n, 2501);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	n = 0;
	ck_assert_int_eq(lfs_readdir(fs, d.st_ino, 0, count_entry, &n), 0);
	ck_assert_int_eq(n, 2501);
	ck_assert_int_eq(lfs_lookup(fs, d.st_ino, "entry-00001", &st), 0);
	ck_assert_int_eq(lfs_lookup(fs, d.st_ino, "entry-00002", &st), -ENOENT);
	ck_assert_int_eq(lfs_getattr(fs, LFS_ROOT_INO, &st), 0);
	ck_assert_int_eq(st.st_nlink, 3);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

/* 100,000 names: lookups and creates cost the same at the end as at the
 * start (probes count names and blocks examined, so this is exact). */
START_TEST(large_directory)
{
	testfs_make(512 << 20, 1 << 20); /* room for 131072 inodes */
	struct lfs_fs *fs = testfs_mount();
	struct stat d, st;
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "big", 0755, &testfs_me, &d), 0);
	char name[64];
	uint64_t first_probes = 0, last_probes = 0;
	struct lfs_inode *dp;
	for (int i = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "file-with-a-longish-name-%06d", i);
		ck_assert_int_eq(lfs_mknod(fs, d.st_ino, name, S_IFREG | 0644, 0, &testfs_me, &st), 0);
		lfs_forget(fs, st.st_ino, 1);
		if (i == 9999 || i == 99999) {
			ck_assert_int_eq(lfs_iget(fs, d.st_ino, &dp), 0);
			uint64_t p0 = dp->dir->probes;
			for (int j = 0; j < 1000; j++) {
				snprintf(name, sizeof(name), "file-with-a-longish-name-%06d", (j * 7919) % (i + 1));
				ck_assert_int_eq(lfs_lookup(fs, d.st_ino, name, &st), 0);
				lfs_forget(fs, st.st_ino, 1);
				snprintf(name, sizeof(name), "extra-%d-%d", i, j);
				ck_assert_int_eq(lfs_mknod(fs, d.st_ino, name, S_IFREG | 0644, 0, &testfs_me, &st), 0);
				lfs_forget(fs, st.st_ino, 1);
			}
			*(i == 9999 ? &first_probes : &last_probes) = dp->dir->probes - p0;
		}
	}
	/* a linear scan would examine ten times as much at 100,000 */
	ck_assert_uint_lt(last_probes, 2 * first_probes + 2000);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_lookup(fs, d.st_ino, "file-with-a-longish-name-054321", &st), 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

START_TEST(renames_and_links)
{
	testfs_make(32 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	struct stat a, b, st;
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "a", 0755, &testfs_me, &a), 0);
	ck_assert_int_eq(lfs_mkdir(fs, a.st_ino, "b", 0755, &testfs_me, &b), 0);
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	uint64_t g = testfs_mkfile(fs, LFS_ROOT_INO, "g");
	ck_assert_int_eq(lfs_write(fs, g, "gg", 2, 0, NULL), 2);
	/* a directory into its own subtree */
	ck_assert_int_eq(lfs_rename(fs, LFS_ROOT_INO, "a", b.st_ino, "x", 0), -EINVAL);
	ck_assert_int_eq(lfs_rename(fs, LFS_ROOT_INO, "f", LFS_ROOT_INO, "g", LFS_RENAME_NOREPLACE), -EEXIST);
	ck_assert_int_eq(lfs_rename(fs, LFS_ROOT_INO, "f", LFS_ROOT_INO, "a", 0), -EISDIR);
	ck_assert_int_eq(lfs_rename(fs, LFS_ROOT_INO, "f", LFS_ROOT_INO, "g", LFS_RENAME_EXCHANGE), 0);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "f", &st), 0);
	ck_assert_uint_eq(st.st_ino, g);
	/* replace: g (now the old f) disappears */
	ck_assert_int_eq(lfs_rename(fs, LFS_ROOT_INO, "f", LFS_ROOT_INO, "g", 0), 0);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "f", &st), -ENOENT);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "g", &st), 0);
	ck_assert_uint_eq(st.st_ino, g);
	(void)f;
	/* a directory moved across: parents' link counts follow */
	ck_assert_int_eq(lfs_rename(fs, a.st_ino, "b", LFS_ROOT_INO, "b", 0), 0);
	ck_assert_int_eq(lfs_getattr(fs, a.st_ino, &st), 0);
	ck_assert_int_eq(st.st_nlink, 2);
	ck_assert_int_eq(lfs_getattr(fs, LFS_ROOT_INO, &st), 0);
	ck_assert_int_eq(st.st_nlink, 4);
	ck_assert_int_eq(lfs_lookup(fs, b.st_ino, "..", &st), 0);
	ck_assert_uint_eq(st.st_ino, LFS_ROOT_INO);
	/* hard links */
	ck_assert_int_eq(lfs_link(fs, g, a.st_ino, "g2", &st), 0);
	ck_assert_int_eq(st.st_nlink, 2);
	ck_assert_int_eq(lfs_link(fs, a.st_ino, LFS_ROOT_INO, "dirlink", &st), -EPERM);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "g"), 0);
	char buf[4];
	ck_assert_int_eq(lfs_read(fs, g, buf, 4, 0), 2);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_lookup(fs, a.st_ino, "g2", &st), 0);
	ck_assert_int_eq(st.st_nlink, 1);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

/* RENAME_WHITEOUT: the old name becomes a character device 0/0 of mode 0
 * owned by the caller, in the same step; a whiteout is refused with an
 * exchange, and a refused rename leaves no whiteout; across a remount
 * fsck finds the whiteout's inode accounted for. */
START_TEST(rename_whiteout)
{
	testfs_make(32 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	struct lfs_cred other = { 1234, 5678, 022 };
	struct stat st, d;
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	uint64_t g = testfs_mkfile(fs, LFS_ROOT_INO, "g");
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "d", 0755, &testfs_me, &d), 0);
	ck_assert_int_eq(lfs_rename_whiteout(fs, LFS_ROOT_INO, "f", LFS_ROOT_INO, "g", LFS_RENAME_EXCHANGE, &other),
			 -EINVAL);
	ck_assert_int_eq(lfs_rename_whiteout(fs, LFS_ROOT_INO, "f", LFS_ROOT_INO, "g", LFS_RENAME_NOREPLACE, &other),
			 -EEXIST);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "f", &st), 0);
	ck_assert_uint_eq(st.st_ino, f);
	/* over an existing name, into another directory */
	ck_assert_int_eq(lfs_rename_whiteout(fs, LFS_ROOT_INO, "f", LFS_ROOT_INO, "g", 0, &other), 0);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "g", &st), 0);
	ck_assert_uint_eq(st.st_ino, f);
	ck_assert_int_eq(lfs_getattr(fs, g, &st), 0); /* the test's lookup reference keeps it */
	ck_assert_uint_eq(st.st_nlink, 0);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "f", &st), 0);
	ck_assert_uint_ne(st.st_ino, f);
	ck_assert_uint_eq(st.st_mode, S_IFCHR);
	ck_assert_uint_eq(st.st_rdev, 0);
	ck_assert_uint_eq(st.st_nlink, 1);
	ck_assert_uint_eq(st.st_uid, 1234);
	ck_assert_uint_eq(st.st_gid, 5678);
	uint64_t wo = st.st_ino;
	ck_assert_int_eq(lfs_rename_whiteout(fs, LFS_ROOT_INO, "g", d.st_ino, "h", LFS_RENAME_NOREPLACE, &testfs_me), 0);
	ck_assert_int_eq(lfs_lookup(fs, d.st_ino, "h", &st), 0);
	ck_assert_uint_eq(st.st_ino, f);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "g", &st), 0);
	ck_assert(S_ISCHR(st.st_mode) && st.st_rdev == 0);
	/* the test's open and lookup references go, as a close and FORGET would */
	uint64_t made[] = { f, g };
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(lfs_release(fs, made[i]), 0);
		lfs_forget(fs, made[i], 1);
	}
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	testfs_fsck_clean(fs);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "f", &st), 0);
	ck_assert_uint_eq(st.st_ino, wo);
	ck_assert(S_ISCHR(st.st_mode) && st.st_rdev == 0);
	testfs_fsck_clean(fs);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

static bool
in_group_1000(void *ctx, gid_t gid)
{
	(void)ctx;
	return gid == 1000;
}

/* chown(2) of a non-directory, as on ext4: set-user-ID goes, whoever
 * asks and even for -1, -1 (LFS_SET_CHOWN alone); set-group-ID goes with
 * group execute, or, without, for a caller neither in the file's group
 * nor privileged; a directory keeps both. */
START_TEST(chown_clears_setid)
{
	testfs_make(32 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	static const mode_t types[] = { S_IFREG, S_IFIFO, S_IFSOCK, S_IFBLK, S_IFCHR };
	const struct lfs_caller owner = { in_group_1000, NULL };
	struct stat st, a = { .st_gid = 1000 };
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		char name[8];
		snprintf(name, sizeof(name), "n%zu", i);
		ck_assert_int_eq(lfs_mknod(fs, LFS_ROOT_INO, name, types[i] | 06555, 0, &testfs_me, &st), 0);
		uint64_t ino = st.st_ino;
		ck_assert_uint_eq(st.st_mode & 07777, 06555);
		ck_assert_int_eq(lfs_setattr_as(fs, ino, &a, LFS_SET_GID, &owner, &st), 0);
		ck_assert_uint_eq(st.st_mode, types[i] | 0555);
		a.st_mode = 06745;
		ck_assert_int_eq(lfs_setattr(fs, ino, &a, LFS_SET_MODE, &st), 0);
		ck_assert_int_eq(lfs_setattr_as(fs, ino, &a, LFS_SET_CHOWN, &owner, &st), 0);
		ck_assert_uint_eq(st.st_mode & 07777, 02745);
		a.st_gid = 1001;
		ck_assert_int_eq(lfs_setattr(fs, ino, &a, LFS_SET_GID, &st), 0);
		ck_assert_uint_eq(st.st_mode & 07777, 02745);
		ck_assert_int_eq(lfs_setattr_as(fs, ino, &a, LFS_SET_CHOWN, &owner, &st), 0);
		ck_assert_uint_eq(st.st_mode & 07777, 0745);
		a.st_gid = 1000;
	}
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "d", 0755, &testfs_me, &st), 0);
	a.st_mode = 06755;
	ck_assert_int_eq(lfs_setattr(fs, st.st_ino, &a, LFS_SET_MODE, &st), 0);
	ck_assert_int_eq(lfs_setattr_as(fs, st.st_ino, &a, LFS_SET_GID | LFS_SET_CHOWN, &owner, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 06755);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

/* chattr's flags: nodump and noatime are kept across a remount and
 * change ctime; noatime leaves atime alone at a read that would move
 * it (relatime: atime not after mtime); any other flag is refused. */
START_TEST(file_flags)
{
	testfs_make(32 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	ck_assert_int_eq(lfs_write(fs, f, "data", 4, 0, NULL), 4);
	uint32_t fl = 99;
	struct stat before, after;
	char buf[4];
	ck_assert_int_eq(lfs_get_flags(fs, f, &fl), 0);
	ck_assert_uint_eq(fl, 0);
	ck_assert_int_eq(lfs_set_flags(fs, f, 16), -EOPNOTSUPP);
	ck_assert_int_eq(lfs_set_flags(fs, f, LFS_DI_INLINE), -EOPNOTSUPP);
	ck_assert_int_eq(lfs_getattr(fs, f, &before), 0);
	/* until the clock inode times come from (lfs_inode_now) ticks */
	struct timespec t0, t1, pause = { 0, 200000 };
	lfs_inode_now(&t0);
	do {
		nanosleep(&pause, NULL);
		lfs_inode_now(&t1);
	} while (t1.tv_sec == t0.tv_sec && t1.tv_nsec == t0.tv_nsec);
	ck_assert_int_eq(lfs_set_flags(fs, f, LFS_DI_NOATIME | LFS_DI_NODUMP), 0);
	ck_assert_int_eq(lfs_getattr(fs, f, &after), 0);
	ck_assert(after.st_ctim.tv_sec > before.st_ctim.tv_sec ||
		  (after.st_ctim.tv_sec == before.st_ctim.tv_sec && after.st_ctim.tv_nsec > before.st_ctim.tv_nsec));
	ck_assert_int_eq(lfs_read(fs, f, buf, 4, 0), 4);
	ck_assert_int_eq(lfs_getattr(fs, f, &after), 0);
	ck_assert_int_eq(after.st_atim.tv_sec, before.st_atim.tv_sec);
	ck_assert_int_eq(after.st_atim.tv_nsec, before.st_atim.tv_nsec);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_get_flags(fs, f, &fl), 0);
	ck_assert_uint_eq(fl, LFS_DI_NOATIME | LFS_DI_NODUMP);
	ck_assert_int_eq(lfs_set_flags(fs, f, LFS_DI_NODUMP), 0);
	ck_assert_int_eq(lfs_read(fs, f, buf, 4, 0), 4);
	ck_assert_int_eq(lfs_getattr(fs, f, &after), 0);
	ck_assert(after.st_atim.tv_sec != before.st_atim.tv_sec || after.st_atim.tv_nsec != before.st_atim.tv_nsec);
	ck_assert_int_eq(lfs_get_flags(fs, f, &fl), 0);
	ck_assert_uint_eq(fl, LFS_DI_NODUMP);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

START_TEST(unlink_open_file)
{
	testfs_make(32 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "tmp"); /* create opens it */
	uint8_t data[20000], back[20000];
	fill_pattern(data, sizeof(data), 3);
	ck_assert_int_eq(lfs_write(fs, ino, data, sizeof(data), 0, NULL), (ssize_t)sizeof(data));
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "tmp"), 0);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	ck_assert_int_eq(lfs_read(fs, ino, back, sizeof(back), 0), (ssize_t)sizeof(back));
	ck_assert(memcmp(back, data, sizeof(data)) == 0);
	struct lfs_stats before, after;
	lfs_get_stats(fs, &before);
	ck_assert_int_eq(lfs_release(fs, ino), 0);
	lfs_forget(fs, ino, 1);
	lfs_get_stats(fs, &after);
	ck_assert_uint_lt(after.live_bytes, before.live_bytes);
	struct stat st;
	ck_assert_int_eq(lfs_getattr(fs, ino, &st), -ESTALE);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

START_TEST(xattrs)
{
	testfs_make(32 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "x");
	char v[64];
	ck_assert_int_eq(lfs_getxattr(fs, ino, "user.a", v, sizeof(v)), -ENODATA);
	ck_assert_int_eq(lfs_setxattr(fs, ino, "user.a", "1\0002", 3, 0), 0);
	ck_assert_int_eq(lfs_setxattr(fs, ino, "user.a", "x", 1, XATTR_CREATE), -EEXIST);
	ck_assert_int_eq(lfs_setxattr(fs, ino, "user.b", "x", 1, XATTR_REPLACE), -ENODATA);
	ck_assert_int_eq(lfs_setxattr(fs, ino, "user.b", "bb", 2, 0), 0);
	ck_assert_int_eq(lfs_getxattr(fs, ino, "user.a", NULL, 0), 3);
	ck_assert_int_eq(lfs_getxattr(fs, ino, "user.a", v, 2), -ERANGE);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_getxattr(fs, ino, "user.a", v, sizeof(v)), 3);
	ck_assert_int_eq(memcmp(v, "1\0002", 3), 0);
	char list[64];
	ck_assert_int_eq(lfs_listxattr(fs, ino, list, sizeof(list)), 14);
	ck_assert_str_eq(list, "user.a");
	ck_assert_int_eq(lfs_removexattr(fs, ino, "user.a"), 0);
	ck_assert_int_eq(lfs_removexattr(fs, ino, "user.a"), -ENODATA);
	ck_assert_int_eq(lfs_setxattr(fs, ino, "system.posix_acl_access", "x", 1, 0), -EINVAL);
	ck_assert_int_eq(lfs_setxattr(fs, ino, "system.other", "x", 1, 0), -EOPNOTSUPP);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

/* An ACL in Linux's xattr encoding: version 2, then {tag, perm, id}. */
static size_t
acl_encode(uint8_t *b, const uint16_t (*ents)[3], size_t n)
{
	b[0] = 2, b[1] = b[2] = b[3] = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t *e = b + 4 + 8 * i;
		e[0] = (uint8_t)ents[i][0], e[1] = (uint8_t)(ents[i][0] >> 8);
		e[2] = (uint8_t)ents[i][1], e[3] = 0;
		e[4] = (uint8_t)ents[i][2], e[5] = (uint8_t)(ents[i][2] >> 8), e[6] = e[7] = 0;
	}
	return 4 + 8 * n;
}

/* acl.c without the kernel: the worked example of its header comment,
 * chmod rewriting the entries, an equivalent ACL setting only the mode. */
START_TEST(posix_acls)
{
	testfs_make(32 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	struct stat d, f, g;
	uint8_t acl[128], back[128];
	static const uint16_t dflt[][3] = { { 1, 7, 0 }, { 2, 5, 1000 }, { 4, 5, 0 }, { 0x10, 7, 0 }, { 0x20, 0, 0 } };
	size_t n = acl_encode(acl, dflt, 5);
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "d", 0755, &testfs_me, &d), 0);
	ck_assert_int_eq(lfs_setxattr(fs, d.st_ino, "system.posix_acl_default", acl, n, 0), 0);
	const struct lfs_cred masked = { 1000, 1000, 077 };
	ck_assert_int_eq(lfs_create(fs, d.st_ino, "f", 0666, true, &masked, &f), 0);
	ck_assert_uint_eq(f.st_mode & 07777, 0660); /* the umask is not used */
	static const uint16_t want[][3] = { { 1, 6, 0 }, { 2, 5, 1000 }, { 4, 5, 0 }, { 0x10, 6, 0 }, { 0x20, 0, 0 } };
	uint8_t expect[128];
	ck_assert_int_eq(lfs_getxattr(fs, f.st_ino, "system.posix_acl_access", back, sizeof(back)), (int)n);
	acl_encode(expect, want, 5);
	ck_assert_int_eq(memcmp(back, expect, n), 0);
	ck_assert_int_eq(lfs_getxattr(fs, f.st_ino, "system.posix_acl_default", back, sizeof(back)), -ENODATA);
	ck_assert_int_eq(lfs_mkdir(fs, d.st_ino, "sub", 0777, &masked, &g), 0);
	ck_assert_uint_eq(g.st_mode & 07777, 0770);
	ck_assert_int_eq(lfs_getxattr(fs, g.st_ino, "system.posix_acl_default", back, sizeof(back)), (int)n);
	/* chmod 0741: owner rwx, mask r--, other --x */
	struct stat a = { .st_mode = 0741 };
	ck_assert_int_eq(lfs_setattr(fs, f.st_ino, &a, LFS_SET_MODE, &g), 0);
	static const uint16_t chm[][3] = { { 1, 7, 0 }, { 2, 5, 1000 }, { 4, 5, 0 }, { 0x10, 4, 0 }, { 0x20, 1, 0 } };
	acl_encode(expect, chm, 5);
	ck_assert_int_eq(lfs_getxattr(fs, f.st_ino, "system.posix_acl_access", back, sizeof(back)), (int)n);
	ck_assert_int_eq(memcmp(back, expect, n), 0);
	/* without a default ACL the umask counts */
	ck_assert_int_eq(lfs_create(fs, LFS_ROOT_INO, "p", 0666, true, &masked, &g), 0);
	ck_assert_uint_eq(g.st_mode & 07777, 0600);
	/* u::r-x g::-w- o::r-- says no more than mode 0524: only the mode is set */
	static const uint16_t eq[][3] = { { 1, 5, 0 }, { 4, 2, 0 }, { 0x20, 4, 0 } };
	size_t m = acl_encode(acl, eq, 3);
	ck_assert_int_eq(lfs_setxattr(fs, g.st_ino, "system.posix_acl_access", acl, m, 0), 0);
	ck_assert_int_eq(lfs_getattr(fs, g.st_ino, &g), 0);
	ck_assert_uint_eq(g.st_mode & 07777, 0524);
	ck_assert_int_eq(lfs_getxattr(fs, g.st_ino, "system.posix_acl_access", back, sizeof(back)), -ENODATA);
	/* a named user without a mask is no ACL; a default ACL only on directories */
	static const uint16_t nomask[][3] = { { 1, 7, 0 }, { 2, 7, 5 }, { 4, 5, 0 }, { 0x20, 4, 0 } };
	m = acl_encode(acl, nomask, 4);
	ck_assert_int_eq(lfs_setxattr(fs, g.st_ino, "system.posix_acl_access", acl, m, 0), -EINVAL);
	ck_assert_int_eq(lfs_setxattr(fs, g.st_ino, "system.posix_acl_default", expect, n, 0), -EACCES);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_getxattr(fs, f.st_ino, "system.posix_acl_access", back, sizeof(back)), (int)n);
	ck_assert_int_eq(memcmp(back, expect, n), 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

START_TEST(crash_keeps_fsynced_data)
{
	testfs_make(64 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint8_t data[50000], back[50000];
	fill_pattern(data, sizeof(data), 5);
	struct stat d;
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "dir", 0755, &testfs_me, &d), 0);
	uint64_t ino = testfs_mkfile(fs, d.st_ino, "durable");
	ck_assert_int_eq(lfs_write(fs, ino, data, sizeof(data), 0, NULL), (ssize_t)sizeof(data));
	ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
	uint64_t lost = testfs_mkfile(fs, LFS_ROOT_INO, "not-synced");
	ck_assert_int_eq(lfs_write(fs, lost, data, 100, 0, NULL), 100);
	lfs_abandon(fs); /* crash: nothing more reaches the disk */
	fs = testfs_mount();
	struct stat st;
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "dir", &st), 0);
	ck_assert_int_eq(lfs_lookup(fs, st.st_ino, "durable", &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)sizeof(data));
	ck_assert_int_eq(lfs_read(fs, st.st_ino, back, sizeof(back), 0), (ssize_t)sizeof(back));
	ck_assert(memcmp(back, data, sizeof(data)) == 0);
	/* a second crash right after recovery */
	lfs_abandon(fs);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_lookup(fs, d.st_ino, "durable", &st), 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

/* A block that fails its checksum reads as EIO, never as wrong data. */
START_TEST(corrupt_block_is_eio)
{
	testfs_make(32 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint8_t data[3 * 4096], back[3 * 4096];
	fill_pattern(data, sizeof(data), 21);
	uint64_t ino = testfs_mkfile(fs, LFS_ROOT_INO, "victim");
	ck_assert_int_eq(lfs_write(fs, ino, data, sizeof(data), 0, NULL), (ssize_t)sizeof(data));
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	uint64_t addr = ip->di.direct[1], bs = fs->bsize;
	ck_assert_uint_ne(addr, 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	/* flip one byte of the file's second block in the image */
	int fd = open(testfs_path, O_RDWR);
	uint8_t b;
	ck_assert_int_eq(pread(fd, &b, 1, (off_t)(addr * bs + 100)), 1);
	b ^= 0x40;
	ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)(addr * bs + 100)), 1);
	close(fd);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_read(fs, ino, back, 4096, 0), 4096);        /* block 0 is fine */
	ck_assert(memcmp(back, data, 4096) == 0);
	ck_assert_int_eq(lfs_read(fs, ino, back, sizeof(back), 0), -EIO); /* the run covers block 1 */
	ck_assert_int_eq(lfs_read(fs, ino, back, 10, 4096 + 50), -EIO);
	ck_assert_int_eq(lfs_read(fs, ino, back, 4096, 8192), 4096);     /* block 2 is fine */
	ck_assert(memcmp(back, data + 8192, 4096) == 0);
	/* a cleaner's request to move all three moves the two intact blocks
	 * and leaves the corrupt one, instead of failing the request */
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	struct lfs_ctl_blk req[3];
	for (int i = 0; i < 3; i++)
		req[i] = (struct lfs_ctl_blk){ .addr = ip->di.direct[i], .lblk = (uint64_t)i, .ino = (uint32_t)ino,
					       .version = ip->di.version, .kind = LFS_BK_DATA };
	uint64_t moved = 0;
	ck_assert_int_eq(lfs_ctl_move(fs, req, 3, 0, &moved), 0);
	ck_assert_uint_eq(moved, 2);
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	ck_assert_uint_ne(ip->di.direct[0], req[0].addr);
	ck_assert_uint_eq(ip->di.direct[1], req[1].addr);
	ck_assert_int_eq(lfs_read(fs, ino, back, 4096, 0), 4096);
	ck_assert(memcmp(back, data, 4096) == 0);
	ck_assert_int_eq(lfs_read(fs, ino, back, 10, 4096 + 50), -EIO);
	ck_assert_int_eq(lfs_read(fs, ino, back, 4096, 8192), 4096);
	ck_assert(memcmp(back, data + 8192, 4096) == 0);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

START_TEST(full_filesystem)
{
	testfs_make(24 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	uint8_t *buf = malloc(1 << 20);
	fill_pattern(buf, 1 << 20, 11);
	char name[32];
	/* fill with 1 MiB files: the write that reaches the end is short, as
	 * on ext4, and the next one fails with ENOSPC */
	int files = 0, err = 0;
	ssize_t last = 0;
	for (; files < 100; files++) {
		snprintf(name, sizeof(name), "big%d", files);
		struct stat st;
		err = lfs_create(fs, LFS_ROOT_INO, name, 0644, true, &testfs_me, &st);
		if (err)
			break;
		last = lfs_write(fs, st.st_ino, buf, 1 << 20, 0, NULL);
		lfs_release(fs, st.st_ino);
		lfs_forget(fs, st.st_ino, 1); /* as the kernel would, later */
		if (last != 1 << 20)
			break;
	}
	ck_assert_int_gt(files, 5);
	ck_assert_int_lt(files, 100);
	if (last > 0) {
		/* the short file holds exactly what the write accepted */
		struct stat st;
		snprintf(name, sizeof(name), "big%d", files);
		ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, name, &st), 0);
		ck_assert_int_eq(st.st_size, last);
		ck_assert_int_eq(lfs_write(fs, st.st_ino, buf, 1 << 20, last, NULL), -ENOSPC);
		ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, name), 0);
		lfs_forget(fs, st.st_ino, 1);
	} else {
		ck_assert_int_eq(err ? err : last, -ENOSPC);
	}
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	/* every complete earlier file is intact */
	uint8_t *back = malloc(1 << 20);
	for (int i = 0; i < files; i++) {
		struct stat st;
		snprintf(name, sizeof(name), "big%d", i);
		ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, name, &st), 0);
		ck_assert_int_eq(lfs_read(fs, st.st_ino, back, 1 << 20, 0), 1 << 20);
		ck_assert(memcmp(back, buf, 1 << 20) == 0);
		lfs_forget(fs, st.st_ino, 1);
	}
	/* deleting makes room again, through cleaning if need be */
	for (int i = 0; i < files; i += 2) {
		snprintf(name, sizeof(name), "big%d", i);
		ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, name), 0);
	}
	struct stat st;
	ck_assert_int_eq(lfs_create(fs, LFS_ROOT_INO, "again", 0644, true, &testfs_me, &st), 0);
	ck_assert_int_eq(lfs_write(fs, st.st_ino, buf, 1 << 20, 0, NULL), 1 << 20);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	for (int i = 1; i < files; i += 2) {
		snprintf(name, sizeof(name), "big%d", i);
		ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, name, &st), 0);
		ck_assert_int_eq(lfs_read(fs, st.st_ino, back, 1 << 20, 0), 1 << 20);
		ck_assert(memcmp(back, buf, 1 << 20) == 0);
	}
	ck_assert_int_eq(lfs_unmount(fs), 0);
	free(buf);
	free(back);
	testfs_remove();
}
END_TEST

/* What the kernel asks to open a file handle (NFS): "." in an inode's
 * number, ".." of a directory, and the generation, new for each inode
 * that takes a freed number, across remounts too. */
START_TEST(handles_by_number)
{
	testfs_make(64 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	struct stat d, st;
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "d", 0755, &testfs_me, &d), 0);
	ck_assert_int_eq(lfs_mkdir(fs, d.st_ino, "e", 0755, &testfs_me, &st), 0);
	uint64_t e = st.st_ino, f = testfs_mkfile(fs, d.st_ino, "f");
	ck_assert_int_eq(lfs_lookup(fs, f, ".", &st), 0);
	ck_assert_uint_eq(st.st_ino, f);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(lfs_lookup(fs, f, "..", &st), -ENOTDIR);
	ck_assert_int_eq(lfs_rename(fs, d.st_ino, "e", LFS_ROOT_INO, "e", 0), 0);
	uint32_t g1, g2, g3;
	ck_assert_int_eq(lfs_generation(fs, f, &g1), 0);
	/* unlinked: stale while the kernel still holds it, and once freed */
	ck_assert_int_eq(lfs_unlink(fs, d.st_ino, "f"), 0);
	ck_assert_int_eq(lfs_lookup(fs, f, ".", &st), -ESTALE);
	lfs_release(fs, f); /* lfs_create opened it */
	lfs_forget(fs, f, 2);
	ck_assert_int_eq(lfs_lookup(fs, f, ".", &st), -ESTALE);
	ck_assert_int_eq(lfs_generation(fs, f, &g2), -ESTALE);
	ck_assert_uint_eq(testfs_mkfile(fs, d.st_ino, "g"), f);
	ck_assert_int_eq(lfs_generation(fs, f, &g2), 0);
	ck_assert_uint_ne(g2, g1);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_lookup(fs, e, "..", &st), 0);
	ck_assert_uint_eq(st.st_ino, LFS_ROOT_INO);
	ck_assert_int_eq(lfs_lookup(fs, f, ".", &st), 0);
	ck_assert_int_eq(lfs_generation(fs, f, &g3), 0);
	ck_assert_uint_eq(g3, g2);
	ck_assert_int_eq(lfs_unlink(fs, d.st_ino, "g"), 0);
	lfs_forget(fs, f, 1);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	ck_assert_int_eq(lfs_lookup(fs, f, ".", &st), -ESTALE);
	ck_assert_uint_eq(testfs_mkfile(fs, d.st_ino, "h"), f);
	ck_assert_int_eq(lfs_generation(fs, f, &g3), 0);
	ck_assert_uint_ne(g3, g2);
	ck_assert_uint_ne(g3, g1);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

CHECK_MAIN("fs", "api", 120, write_read_remount, sparse_terabyte_and_truncate, directories,
	   posix_acls, large_directory, renames_and_links, rename_whiteout, chown_clears_setid, file_flags,
	   unlink_open_file, xattrs, crash_keeps_fsynced_data, corrupt_block_is_eio, full_filesystem,
	   handles_by_number)
