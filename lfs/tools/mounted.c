/*
 * mounted.c — layer 7: whether a device or image is in use by a mount
 * of any filesystem, or as swap, so that the tools that write one
 * (mkfs.lfs, lfs-tune, lfs-resize) refuse it even when told to force,
 * as e2fsprogs' check_mount does (tool.h).
 *
 * The image lock (mount.c) only speaks for lfs daemons that hold it; an
 * ext4 on a loop device, the image behind that loop device, or an lfs
 * image reached through the loop device its mount attached share no lock
 * with the path a tool is given.  So the mount table is read instead
 * (/proc/self/mountinfo): a block device is mounted when a mount's
 * device number (MAJ:MIN, the superblock's device) or its source is the
 * same device; an image file when a mount's source is the same file (a
 * FUSE mount of the image; a snapshot mount names "IMAGE@NAME"), or a
 * mount is on a loop device whose backing file is the same inode; a loop
 * device also when its backing file is mounted so.
 * Files are compared by device and inode, never by name.  Last, a block
 * device another part of the kernel has claimed (a mount this mount
 * namespace does not show, device-mapper, RAID, a partition of it in
 * use) cannot be opened O_EXCL: EBUSY.
 */
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define LOOP_DEV_MAJOR 7            /* linux/major.h's LOOP_MAJOR */

/* mountinfo and /proc/swaps write a blank, tab, newline and backslash
 * in a path as \040, \011, \012 and \134: undone in place. */
static void
unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
		    r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* Whether `path` names the target: the same block device, or the same
 * file (device and inode). */
static bool
same_target(const char *path, const struct stat *t)
{
	struct stat st;
	if (path[0] != '/' || stat(path, &st) < 0 || (st.st_mode & S_IFMT) != (t->st_mode & S_IFMT))
		return false;
	if (S_ISBLK(t->st_mode))
		return st.st_rdev == t->st_rdev;
	return st.st_dev == t->st_dev && st.st_ino == t->st_ino;
}

/* Whether the loop device `dev` (its number) reads the file t. */
static bool
loop_backs(dev_t dev, const char *source, const struct stat *t)
{
	char path[64];
	struct stat st;
	/* the mount's source when it is that device, else udev's link */
	if (stat(source, &st) < 0 || !S_ISBLK(st.st_mode) || st.st_rdev != dev)
		snprintf(path, sizeof(path), "/dev/block/%u:%u", major(dev), minor(dev));
	else
		snprintf(path, sizeof(path), "%s", source);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct loop_info64 li;
	if (fd >= 0 && ioctl(fd, LOOP_GET_STATUS64, &li) == 0) {
		close(fd);
		return li.lo_device == t->st_dev && li.lo_inode == t->st_ino;
	}
	if (fd >= 0)
		close(fd);
	/* no device node to ask: the name sysfs keeps, compared as a file */
	char sys[96], backing[4096] = "";
	snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u/loop/backing_file", major(dev), minor(dev));
	FILE *f = fopen(sys, "r");
	if (f && fgets(backing, sizeof(backing), f))
		backing[strcspn(backing, "\n")] = '\0';
	if (f)
		fclose(f);
	return backing[0] && same_target(backing, t);
}

/* Whether one mountinfo line is a mount of the target; its mount point
 * and type into u. */
static bool
mount_line(char *line, const struct stat *t, struct lfs_in_use *u)
{
	/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
	unsigned maj, min;
	int mp_at = -1, mp_end = -1;
	char *dash = strstr(line, " - "), *save;
	if (!dash || sscanf(line, "%*s %*s %u:%u %*s %n%*s%n", &maj, &min, &mp_at, &mp_end) != 2 || mp_end < 0 ||
	    line + mp_end > dash)
		return false;
	*dash = '\0';
	char *fstype = strtok_r(dash + 3, " \n", &save), *source = fstype ? strtok_r(NULL, " \n", &save) : NULL;
	if (!source)
		return false;
	line[mp_end] = '\0';
	unescape(source);
	dev_t dev = makedev(maj, min);
	bool hit;
	if (S_ISBLK(t->st_mode)) {
		hit = dev == t->st_rdev || same_target(source, t);
	} else {
		char *at = strrchr(source, '@');
		hit = same_target(source, t) || (maj == LOOP_DEV_MAJOR && loop_backs(dev, source, t));
		if (!hit && at) { /* a snapshot mount: "IMAGE@NAME" */
			*at = '\0';
			hit = same_target(source, t);
		}
	}
	if (hit) {
		unescape(line + mp_at);
		snprintf(u->where, sizeof(u->where), "%s", line + mp_at);
		snprintf(u->fstype, sizeof(u->fstype), "%s", fstype);
	}
	return hit;
}

/* The first line of `file` for which `match` holds; 1, 0 or -errno. */
static int
scan(const char *file, bool (*match)(char *, const struct stat *, struct lfs_in_use *), const struct stat *t,
     struct lfs_in_use *u)
{
	FILE *f = fopen(file, "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t cap = 0;
	int found = 0;
	while (!found && getline(&line, &cap, f) > 0)
		found = match(line, t, u);
	free(line);
	fclose(f);
	return found;
}

/* One line of /proc/swaps: "Filename Type Size Used Priority". */
static bool
swap_line(char *line, const struct stat *t, struct lfs_in_use *u)
{
	char *save, *name = strtok_r(line, " \t\n", &save);
	if (!name)
		return false;
	unescape(name);
	if (!same_target(name, t))
		return false;
	snprintf(u->where, sizeof(u->where), "%s", name);
	snprintf(u->fstype, sizeof(u->fstype), "swap");
	return true;
}

/* The file a loop device at `path` reads, as a stat of it (its device
 * and inode, as the kernel keeps them): false for anything else. */
static bool
loop_file(const char *path, const struct stat *t, struct stat *file)
{
	if (!S_ISBLK(t->st_mode) || major(t->st_rdev) != LOOP_DEV_MAJOR)
		return false;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct loop_info64 li;
	bool ok = fd >= 0 && ioctl(fd, LOOP_GET_STATUS64, &li) == 0;
	if (fd >= 0)
		close(fd);
	if (!ok)
		return false;
	memset(file, 0, sizeof(*file));
	file->st_mode = S_IFREG;
	file->st_dev = (dev_t)li.lo_device;
	file->st_ino = (ino_t)li.lo_inode;
	return true;
}

int
lfs_in_use_from(const char *path, const char *mountinfo, const char *swaps, struct lfs_in_use *u)
{
	memset(u, 0, sizeof(*u));
	struct stat t;
	if (stat(path, &t) < 0)
		return -errno;
	if (!S_ISBLK(t.st_mode) && !S_ISREG(t.st_mode))
		return 0;
	int r = scan(mountinfo, mount_line, &t, u);
	/* a loop device is another name for its file: a mount of the file,
	 * or through another loop device of it, uses this one too */
	struct stat file;
	if (!r && loop_file(path, &t, &file))
		r = scan(mountinfo, mount_line, &file, u);
	if (r) {
		u->how = r > 0 ? LFS_IN_USE_MOUNTED : LFS_IN_USE_NONE;
		return r < 0 ? r : 0;
	}
	/* a kernel without swap has no /proc/swaps */
	if ((r = scan(swaps, swap_line, &t, u)) != 0 && r != -ENOENT) {
		u->how = r > 0 ? LFS_IN_USE_SWAP : LFS_IN_USE_NONE;
		return r < 0 ? r : 0;
	}
	if (S_ISBLK(t.st_mode)) {
		int fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
		if (fd >= 0)
			close(fd);
		else if (errno == EBUSY)
			u->how = LFS_IN_USE_HELD;
	}
	return 0;
}

int
lfs_in_use(const char *path, struct lfs_in_use *u)
{
	return lfs_in_use_from(path, "/proc/self/mountinfo", "/proc/swaps", u);
}

int
lfs_tool_refuse_in_use(const char *name, const char *path)
{
	struct lfs_in_use u;
	int err = lfs_in_use(path, &u);
	if (err) {
		fprintf(stderr, "%s: %s: cannot tell whether it is mounted: %s\n", name, path, strerror(-err));
		return err;
	}
	switch (u.how) {
	case LFS_IN_USE_MOUNTED:
		fprintf(stderr, "%s: %s is mounted at %s (%s); will not write it: unmount it first\n", name, path,
			u.where, u.fstype);
		return -EBUSY;
	case LFS_IN_USE_SWAP:
		fprintf(stderr, "%s: %s is in use as swap (%s); will not write it: swapoff it first\n", name, path,
			u.where);
		return -EBUSY;
	case LFS_IN_USE_HELD:
		fprintf(stderr, "%s: %s is in use by the system (a mount elsewhere, device-mapper, RAID, "
			"or a partition of it); will not write it\n", name, path);
		return -EBUSY;
	default:
		return 0;
	}
}
