/*
 * lfs_resize.c — lfs-resize: grow an unmounted lfs to a larger image
 * file or device (lfs-resize(8)), as resize2fs and nilfs-resize do.
 *
 *   lfs-resize [-n] DEVICE|IMAGE [SIZE]
 *
 * The image may come from anyone, and root may be the one resizing it:
 * it is opened once, never through a symbolic link, and checked as
 * fsck.lfs checks it, read-only, before anything is written.  An image
 * that was not cleanly unmounted is refused rather than recovered here:
 * mounting and unmounting it does that, with the daemon's care.  Then,
 * under the image lock taken at the open, an image file is extended and
 * grow.c rewrites the checkpoint and both superblocks.  Shrinking is
 * refused.
 */
#include "image.h"
#include "lfs.h"
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void
usage(FILE *f)
{
	fprintf(f, "usage: lfs-resize [-n] DEVICE|IMAGE [SIZE]\n"
		   "  SIZE  the new size (K, M, G, T suffixes); default: the device's or file's size;\n"
		   "        an image file is extended to it; only growing is supported\n"
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
	/* never through a link (one swapped in after a look at it would
	 * be followed): the file or device itself, then only this descriptor */
	int fd = open(path, (dry_run ? O_RDONLY : O_RDWR) | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "lfs-resize: %s: %s\n", path,
			errno == ELOOP ? "a symbolic link: name the image file or device itself" : strerror(errno));
		return 1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		fprintf(stderr, "lfs-resize: %s: %s\n", path, strerror(errno));
		close(fd);
		return 1;
	}
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
	int err = lfs_grow_plan(&old, size, &grown, why, sizeof(why));
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
