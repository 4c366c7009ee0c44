/*
 * lfs_resize.c — lfs-resize: grow or shrink an lfs (lfs-resize(8)), as
 * resize2fs and nilfs-resize do.
 *
 *   lfs-resize [-n] DEVICE|IMAGE|MOUNTPOINT [SIZE]
 *
 * A mounted filesystem (its mount point, or its image or device) is
 * resized by its daemon, asked over the control socket (resize.c does
 * the work).  An unmounted one is grown here (grow.c), and shrunk by
 * mounting it in this process, as the daemon would, for the same work.
 *
 * The image may come from anyone, and root may be the one resizing it:
 * it is opened once, never through a symbolic link, and checked as
 * fsck.lfs checks it, read-only, before anything is written.  An image
 * that was not cleanly unmounted is refused rather than recovered here:
 * mounting and unmounting it does that, with the daemon's care.  Then,
 * under the image lock taken at the open, an image file is extended and
 * grow.c rewrites the checkpoint and both superblocks.
 */
#include "cleaner.h"
#include "ctl_proto.h"
#include "image.h"
#include "lfs.h"
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static void
usage(FILE *f)
{
	fprintf(f, "usage: lfs-resize [-n] DEVICE|IMAGE|MOUNTPOINT [SIZE]\n"
		   "  SIZE  the new size (K, M, G, T suffixes); default: the device's or file's size;\n"
		   "        an image file is extended or cut to it; a mounted filesystem is\n"
		   "        resized by its daemon\n"
		   "  -n    say what would be done, change nothing\n" LFS_TOOL_HELP_LINES);
}

/* Check the image open on `fd` as fsck.lfs does, read-only (roll-forward,
 * if it needs one, in memory only), with the image lock held (`locked`)
 * or not; 0, or -1 after saying why not. */
static int
check_image(const char *path, int fd, bool locked)
{
	char fdpath[32];
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	lfs_log_set_quiet_info(true);
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.readonly = true;
	o.lock_held = locked;
	struct lfs_fs *fs;
	int err = lfs_mount(fdpath, &o, &fs);
	if (err) {
		fprintf(stderr, "lfs-resize: %s cannot be opened: %s; see fsck.lfs\n", path, strerror(-err));
		return -1;
	}
	uint64_t problems = 0, copies[2], bad[2];
	int ncopies, errs[2];
	err = lfs_fsck(fs, &problems);
	if (!err)
		problems += (uint64_t)lfs_fsck_super_copies(fs, copies, &ncopies, bad, errs);
	bool recover = lfs_needs_recovery(fs);
	lfs_abandon(fs);
	if (err || problems) {
		fprintf(stderr, "lfs-resize: %s: %s%s; nothing was changed: run fsck.lfs %s\n", path,
			err ? "cannot be checked: " : "fsck.lfs finds problems", err ? strerror(-err) : "", path);
		return -1;
	}
	if (recover) {
		fprintf(stderr, "lfs-resize: %s was not cleanly unmounted; nothing was changed: mount it with lfs "
				"and unmount it first, which recovers it\n", path);
		return -1;
	}
	return 0;
}

/* The size of the file or device at path, or 0 after a message. */
static uint64_t
device_bytes(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint64_t n = 0;
	if (fd < 0 || fstat(fd, &st) < 0)
		fprintf(stderr, "lfs-resize: %s: %s\n", path, strerror(errno));
	else if (S_ISREG(st.st_mode))
		n = (uint64_t)st.st_size;
	else if (S_ISBLK(st.st_mode) && ioctl(fd, BLKGETSIZE64, &n) < 0)
		fprintf(stderr, "lfs-resize: %s: %s\n", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return n;
}

/* Say what lfs_resize did or would do (-n), or why not; the status. */
static int
report(const char *path, int err, bool dry_run, uint64_t from, uint64_t to, uint64_t moved, const char *why)
{
	if (err == -EALREADY) {
		/* as resize2fs: the size asked for is the size it has */
		printf("lfs-resize: %s: %s: nothing to do\n", path, why[0] ? why : "it has that size");
		return 0;
	}
	if (err) {
		fprintf(stderr, "lfs-resize: %s: %s; nothing was changed\n", path, why[0] ? why : strerror(-err));
		return 1;
	}
	const char *verb = to > from ? "grow" : "shrink";
	if (dry_run)
		printf("lfs-resize: would %s %s from %" PRIu64 " to %" PRIu64 " MiB\n", verb, path, from >> 20,
		       to >> 20);
	else
		printf("lfs-resize: %s: %s from %" PRIu64 " to %" PRIu64 " MiB, %" PRIu64 " blocks moved\n", path,
		       to > from ? "grown" : "shrunk", from >> 20, to >> 20, moved);
	return 0;
}

/* Ask the daemon serving the mount at mnt to resize it; the status. */
static int
resize_mounted(const char *path, const char *mnt, uint64_t size, bool dry_run)
{
	struct lfs_ctl_client cl = { -1 };
	int err = lfs_ctl_connect(&cl, mnt);
	if (err) {
		fprintf(stderr, "lfs-resize: %s: cannot reach the lfs daemon: %s\n", mnt, lfs_ctl_strerror(err));
		return 1;
	}
	struct lfs_ctl_resp resp;
	if (!size) {
		static char image[LFS_CTL_PATH_MAX];
		err = lfs_ctl_ask_info(&cl, &resp, image);
		size = err ? 0 : device_bytes(image);
		if (err)
			fprintf(stderr, "lfs-resize: %s: asking the daemon for its image: %s\n", mnt,
				lfs_ctl_strerror(err));
		if (!size) {
			lfs_ctl_close(&cl);
			return 1;
		}
	}
	struct lfs_ctl_req req = { .op = LFS_CTL_RESIZE, .arg = { size, dry_run ? LFS_CTL_RESIZE_DRY : 0 } };
	char why[LFS_CTL_RESIZE_WHY_MAX + 1] = { 0 };
	size_t got = 0;
	memset(&resp, 0, sizeof(resp));
	err = lfs_ctl_call(&cl, &req, NULL, 0, &resp, why, LFS_CTL_RESIZE_WHY_MAX, &got);
	lfs_ctl_close(&cl);
	if (err && !resp.magic) {
		fprintf(stderr, "lfs-resize: %s: asking the daemon to resize: %s\n", mnt, lfs_ctl_strerror(err));
		return 1;
	}
	return report(path, err, dry_run, resp.val[0], resp.val[1], resp.val[2], why);
}

/* Shrink the unmounted image open (and locked) as `dev`: mounted here,
 * as the daemon mounts it, for lfs_resize; the status. */
static int
shrink_unmounted(const char *path, struct lfs_bdev *dev, uint64_t size, bool dry_run)
{
	char fdpath[32];
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", dev->fd);
	/* the mount takes the image lock itself, on its own open of it */
	if (!dry_run)
		flock(dev->fd, LOCK_UN);
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.readonly = dry_run;
	o.ckpt_interval_s = 0;
	struct lfs_fs *fs;
	int err = lfs_mount(fdpath, &o, &fs);
	if (err) {
		fprintf(stderr, "lfs-resize: %s cannot be mounted: %s\n", path, strerror(-err));
		return 1;
	}
	struct lfs_resize_info ri;
	char why[512];
	err = lfs_resize(fs, size, dry_run ? LFS_RESIZE_DRY : 0, &ri, why, sizeof(why));
	int uerr = dry_run ? (lfs_abandon(fs), 0) : lfs_unmount(fs);
	int status = report(path, err, dry_run, ri.old_bytes, ri.new_bytes, ri.moved_blocks, why);
	if (!err && uerr) {
		fprintf(stderr, "lfs-resize: %s: unmounting after the shrink: %s\n", path, strerror(-uerr));
		status = 1;
	}
	return status;
}

/* path opened with `flags`, never through a symbolic link, and *st: the
 * descriptor, or -1 after a message. */
static int
open_nofollow(const char *path, int flags, struct stat *st)
{
	int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, st) < 0) {
		fprintf(stderr, "lfs-resize: %s: %s\n", path,
			errno == ELOOP ? "a symbolic link: name the image file or device itself" : strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int
main(int argc, char **argv)
{
	static const struct lfs_tool tool = { "lfs-resize", usage, 2 };
	static const struct option longopts[] = { LFS_TOOL_LONGOPTS, { NULL, 0, NULL, 0 } };
	bool dry_run = false;
	int c;
	while ((c = getopt_long(argc, argv, "n" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1) {
		switch (c) {
		case 'n': dry_run = true; break;
		default: return lfs_tool_opt(&tool, c);
		}
	}
	if (optind != argc - 1 && optind != argc - 2)
		return lfs_tool_usage_error(&tool);
	const char *path = argv[optind];
	uint64_t size = 0;
	if (optind == argc - 2 && lfs_parse_size(argv[optind + 1], &size)) {
		fprintf(stderr, "lfs-resize: bad size '%s'\n", argv[optind + 1]);
		return 2;
	}
	if (optind == argc - 2 && size == 0) {
		fprintf(stderr, "lfs-resize: bad size '%s'\n", argv[optind + 1]);
		return 2;
	}
	/* never through a link (one swapped in after a look at it would
	 * be followed): the file or device itself, then only this descriptor */
	struct stat st;
	int fd = open_nofollow(path, O_RDONLY, &st);
	if (fd < 0)
		return 1;
	close(fd);
	/* mounted: its daemon resizes it */
	char where[4096];
	if (S_ISDIR(st.st_mode))
		return resize_mounted(path, path, size, dry_run);
	if (lfs_image_mounted_at(path, where, sizeof(where)) == 1)
		return resize_mounted(path, where, size, dry_run);
	fd = open_nofollow(path, dry_run ? O_RDONLY : O_RDWR, &st);
	if (fd < 0)
		return 1;
	struct lfs_bdev dev;
	struct lfs_super old, grown;
	if (lfs_tool_open("lfs-resize", path, &(struct lfs_tool_open){ .flags = dry_run ? 0 : LFS_OPEN_WRITE, .fd = fd },
			  &dev, &old, NULL))
		return 1;
	if (check_image(path, dev.fd, !dry_run)) {
		lfs_bdev_close(&dev);
		return 1;
	}
	int status = 1;
	if (!size)
		size = dev.size_bytes;
	if (!S_ISREG(st.st_mode) && size > dev.size_bytes) {
		fprintf(stderr, "lfs-resize: %s: %" PRIu64 " bytes is larger than the device (%" PRIu64 ")\n", path,
			size, dev.size_bytes);
		goto out;
	}
	char why[512];
	int err = lfs_resize_plan(&old, size, &grown, why, sizeof(why));
	if (!err && grown.nsegs < old.nsegs) {
		status = shrink_unmounted(path, &dev, size, dry_run);
		goto out;
	}
	if (err == -EALREADY) {
		/* as resize2fs: the size asked for is the size it has */
		printf("lfs-resize: %s: %s: nothing to do\n", path, why);
		status = 0;
		goto out;
	}
	if (err) {
		fprintf(stderr, "lfs-resize: %s: %s\n", path, why);
		goto out;
	}
	if (dry_run) {
		printf("lfs-resize: would grow %s from %" PRIu64 " to %" PRIu64 " segments (%" PRIu64 " to %" PRIu64
		       " MiB)\n", path, old.nsegs, grown.nsegs, old.nblocks * old.block_size >> 20,
		       grown.nblocks * grown.block_size >> 20);
		status = 0;
		goto out;
	}
	if (S_ISREG(st.st_mode) && size > dev.size_bytes) {
		if (ftruncate(dev.fd, (off_t)size) < 0) {
			fprintf(stderr, "lfs-resize: cannot extend %s: %s\n", path, strerror(errno));
			goto out;
		}
		dev.size_bytes = size;
	}
	err = lfs_grow(&dev, &old, &grown);
	if (err) {
		fprintf(stderr, "lfs-resize: %s: %s\n", path,
			err == -EUCLEAN ? "its newest checkpoint is not clean (mounted meanwhile?); try again"
					: strerror(-err));
		goto out;
	}
	printf("lfs-resize: %s: grown from %" PRIu64 " to %" PRIu64 " segments (%" PRIu64 " to %" PRIu64
	       " MiB), %u reserved, backup superblock at block %" PRIu64 "\n", path, old.nsegs, grown.nsegs,
	       old.nblocks * old.block_size >> 20, grown.nblocks * grown.block_size >> 20, grown.reserved_segs,
	       grown.backup_sb);
	status = 0;
out:
	lfs_bdev_close(&dev);
	return status;
}
