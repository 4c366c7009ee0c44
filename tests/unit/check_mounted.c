/*
 * check_mounted.c — mounted.c, whether a device or image is in use
 * (lfs_in_use_from), read from mount and swap tables written here: a
 * FUSE mount whose source is the image, by another name (a symbolic or
 * a hard link) too, and a snapshot mount's "IMAGE@NAME"; a mount point
 * with escaped blanks; a line longer than any buffer; malformed lines
 * skipped; a swap file; a block device by its device number; and a
 * table that cannot be read is an error, not "not mounted".  Loop
 * devices need the kernel: tests/integration/mounted.sh.
 */
#include "check_run.h"
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static char dir[PATH_MAX], img[PATH_MAX + 16], info[PATH_MAX + 16], swaps[PATH_MAX + 16];

static void
setup_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/lfs-mounted.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(img, sizeof(img), "%s/img", dir);
	snprintf(info, sizeof(info), "%s/mountinfo", dir);
	snprintf(swaps, sizeof(swaps), "%s/swaps", dir);
	int fd = open(img, O_RDWR | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

static void
put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* A mountinfo line: device maj:min, mount point, type, source. */
static void
add_mount(FILE *f, const char *majmin, const char *mnt, const char *type, const char *source)
{
	fprintf(f, "36 25 %s / %s rw,nosuid,nodev shared:1 - %s %s rw,user_id=0,group_id=0\n", majmin, mnt, type,
		source);
}

static int
ask(const char *path, struct lfs_in_use *u)
{
	return lfs_in_use_from(path, info, swaps, u);
}

static void
cleanup_dir(void)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(fuse_source_by_any_name)
{
	setup_dir();
	char other[PATH_MAX + 16], sym[PATH_MAX + 16], hard[PATH_MAX + 16], snap[PATH_MAX + 32];
	snprintf(other, sizeof(other), "%s/img2", dir);
	snprintf(sym, sizeof(sym), "%s/sym", dir);
	snprintf(hard, sizeof(hard), "%s/hard", dir);
	put(other, "");
	ck_assert_int_eq(symlink(img, sym), 0);
	ck_assert_int_eq(link(img, hard), 0);
	put(swaps, "Filename\tType\tSize\tUsed\tPriority\n");

	/* another file, a name that only begins like it, nothing */
	FILE *f = fopen(info, "w");
	add_mount(f, "0:50", "/mnt/a", "fuse.lfs", other);
	add_mount(f, "0:51", "/mnt/b", "tmpfs", "tmpfs");
	fprintf(f, "garbage without the separator\n\n - \n");
	fclose(f);
	struct lfs_in_use u;
	ck_assert_int_eq(ask(img, &u), 0);
	ck_assert_int_eq(u.how, LFS_IN_USE_NONE);

	/* the source by a symbolic link, the mount point with a blank */
	f = fopen(info, "a");
	add_mount(f, "0:52", "/mnt/with\\040blank", "fuse.lfs", sym);
	fclose(f);
	ck_assert_int_eq(ask(img, &u), 0);
	ck_assert_int_eq(u.how, LFS_IN_USE_MOUNTED);
	ck_assert_str_eq(u.where, "/mnt/with blank");
	ck_assert_str_eq(u.fstype, "fuse.lfs");
	/* asked by the hard link's name: the same inode */
	ck_assert_int_eq(ask(hard, &u), 0);
	ck_assert_int_eq(u.how, LFS_IN_USE_MOUNTED);

	/* a snapshot mount names IMAGE@NAME; after a line longer than any
	 * fixed buffer */
	f = fopen(info, "w");
	char *longsrc = malloc(20000);
	ck_assert_ptr_nonnull(longsrc);
	memset(longsrc, 'x', 19999);
	longsrc[0] = '/';
	longsrc[19999] = '\0';
	add_mount(f, "0:53", "/mnt/long", "fuse.other", longsrc);
	free(longsrc);
	snprintf(snap, sizeof(snap), "%s@daily", img);
	add_mount(f, "0:54", "/mnt/snap", "fuse.lfs", snap);
	fclose(f);
	ck_assert_int_eq(ask(img, &u), 0);
	ck_assert_int_eq(u.how, LFS_IN_USE_MOUNTED);
	ck_assert_str_eq(u.where, "/mnt/snap");
	cleanup_dir();
}
END_TEST

START_TEST(swap_file)
{
	setup_dir();
	put(info, "");
	char text[2 * PATH_MAX];
	snprintf(text, sizeof(text), "Filename\tType\tSize\tUsed\tPriority\n%s file 1024 0 -2\n", img);
	put(swaps, text);
	struct lfs_in_use u;
	ck_assert_int_eq(ask(img, &u), 0);
	ck_assert_int_eq(u.how, LFS_IN_USE_SWAP);
	ck_assert_str_eq(u.where, img);
	/* no swap table (a kernel without swap) is no swap */
	unlink(swaps);
	ck_assert_int_eq(ask(img, &u), 0);
	ck_assert_int_eq(u.how, LFS_IN_USE_NONE);
	cleanup_dir();
}
END_TEST

START_TEST(unreadable_table_is_an_error)
{
	setup_dir();
	struct lfs_in_use u;
	ck_assert_int_eq(ask(img, &u), -ENOENT); /* no mountinfo */
	char missing[PATH_MAX + 16];
	snprintf(missing, sizeof(missing), "%s/none", dir);
	ck_assert_int_eq(ask(missing, &u), -ENOENT);
	/* what is neither a file nor a block device is never in use here */
	ck_assert_int_eq(ask(dir, &u), 0);
	ck_assert_int_eq(u.how, LFS_IN_USE_NONE);
	cleanup_dir();
}
END_TEST

/* A block device is matched by the mount's device number, whatever the
 * source says (a node made here, for a device that is not there). */
START_TEST(block_device_by_number)
{
	setup_dir();
	char node[PATH_MAX + 16];
	snprintf(node, sizeof(node), "%s/blk", dir);
	if (mknod(node, S_IFBLK | 0600, makedev(250, 77)) < 0) {
		ck_assert_int_eq(errno, EPERM);
		printf("check_mounted: not root: the block device case is tests/integration/mounted.sh's\n");
		cleanup_dir();
		return;
	}
	put(swaps, "");
	FILE *f = fopen(info, "w");
	add_mount(f, "250:76", "/mnt/other", "ext4", "/dev/other");
	fclose(f);
	struct lfs_in_use u;
	ck_assert_int_eq(ask(node, &u), 0);
	ck_assert_int_eq(u.how, LFS_IN_USE_NONE);
	f = fopen(info, "a");
	add_mount(f, "250:77", "/mnt/disk", "ext4", "/dev/mapper/renamed");
	fclose(f);
	ck_assert_int_eq(ask(node, &u), 0);
	ck_assert_int_eq(u.how, LFS_IN_USE_MOUNTED);
	ck_assert_str_eq(u.where, "/mnt/disk");
	ck_assert_str_eq(u.fstype, "ext4");
	cleanup_dir();
}
END_TEST

CHECK_MAIN("mounted", "mounted", 30, fuse_source_by_any_name, swap_file, unreadable_table_is_an_error,
	   block_device_by_number)
