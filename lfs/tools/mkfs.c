/*
 * mkfs.c — mkfs.lfs: make a new lfs on an image file or block device.
 *
 *   mkfs.lfs [-fnq] [-s SIZE] [-S SEGMENT_SIZE] [-b BLOCK_SIZE] [-N INODES] [-L LABEL] [-U UUID] DEVICE|IMAGE
 *
 * An image file it creates and then fails to fill is removed again: a
 * failed mkfs leaves nothing behind it did not find.
 */
#include "image.h"
#include "lfs.h"
#include "text.h"
#include "tool.h"

#include <blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static void
usage(FILE *f)
{
	fprintf(f, "usage: mkfs.lfs [-fnq] [-s SIZE] [-S SEGMENT_SIZE] [-b BLOCK_SIZE] [-N INODES] [-L LABEL] "
		   "[-U UUID] DEVICE|IMAGE\n"
		   "  -s SIZE          size of the filesystem (required for a new image file)\n"
		   "  -S SEGMENT_SIZE  bytes per segment (default 1M)\n"
		   "  -b BLOCK_SIZE    bytes per block (default 4K)\n"
		   "  -N INODES        number of inodes\n"
		   "  -L LABEL         volume label (at most 64 bytes of printable UTF-8)\n"
		   "  -U UUID          the filesystem's UUID instead of a random one\n"
		   "  -f               overwrite another filesystem found there\n"
		   "  -n               say what would be made, write nothing\n"
		   "  -q               print nothing but errors\n"
		   LFS_TOOL_HELP_LINES
		   "  sizes take K, M, G, T suffixes\n");
}

/* What other filesystem or partition table libblkid finds on `path`:
 * 1 and a description in `what`, 0 nothing, or -errno. */
static int
probe_other(const char *path, char *what, size_t len)
{
	blkid_probe pr = blkid_new_probe_from_filename(path);
	if (!pr)
		return errno ? -errno : -EIO;
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_LABEL);
	blkid_probe_enable_partitions(pr, 1);
	int rc = blkid_do_safeprobe(pr), found = 0;
	const char *type = NULL, *label = NULL;
	if (rc == 0 && blkid_probe_lookup_value(pr, "TYPE", &type, NULL) == 0) {
		/* the other filesystem's label is its maker's bytes */
		char shown[LFS_ESC_LEN(256)];
		if (blkid_probe_lookup_value(pr, "LABEL", &label, NULL) == 0)
			label = lfs_escape(label, LFS_ESC_SHOW, shown, sizeof(shown));
		snprintf(what, len, "a filesystem of type %s%s%s%s", type, label ? " labelled '" : "",
			 label ? label : "", label ? "'" : "");
		found = 1;
	} else if (rc == 0 && blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL) == 0) {
		snprintf(what, len, "a partition table of type %s", type);
		found = 1;
	} else if (rc == -2) {
		snprintf(what, len, "signatures of more than one filesystem");
		found = 1;
	} else if (rc < 0) {
		found = -EIO;
	}
	blkid_free_probe(pr);
	return found;
}

static bool
is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* The smallest device lfs_plan_geometry accepts for this geometry, in
 * bytes (a whole number of blocks): what mkfs.lfs tells a user whose
 * device is too small. */
static uint64_t
min_size(uint32_t bs, uint32_t segsize, uint64_t inodes)
{
	struct lfs_super sb;
	uint64_t hi = segsize;
	while (lfs_plan_geometry(&sb, hi, bs, segsize, inodes) != 0 && hi < (1ull << 50))
		hi *= 2;
	/* geometry grows with the size (inodes, tables): take the first
	 * that fits, by bisection in blocks */
	uint64_t lo = 1;
	hi /= bs;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (lfs_plan_geometry(&sb, mid * bs, bs, segsize, inodes) == 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return hi * bs;
}

/* Remove the image this run created: nothing of a failed mkfs stays. */
static int
fail_created(const char *path, bool created)
{
	if (created && unlink(path) < 0)
		fprintf(stderr, "mkfs.lfs: cannot remove %s, which it created: %s\n", path, strerror(errno));
	return 1;
}

/* What the command line asks for. */
struct mkfs_args {
	uint64_t size, segsize, bs, inodes;
	const char *label;
	bool force, dry_run, quiet, set_uuid;
	uint8_t uuid[16];
	const char *path;
};

static const struct lfs_tool tool = { "mkfs.lfs", usage, 2 };

/* The options read into `a`: -1 to go on, else the exit status. */
static int
read_args(int argc, char **argv, struct mkfs_args *a)
{
	static const struct option longopts[] = { LFS_TOOL_LONGOPTS, { NULL, 0, NULL, 0 } };
	int c;
	while ((c = getopt_long(argc, argv, "s:S:b:N:L:U:fnq" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (lfs_parse_size(optarg, &a->size)) {
				fprintf(stderr, "mkfs.lfs: bad size '%s'\n", optarg);
				return 2;
			}
			break;
		case 'S':
			if (lfs_parse_size(optarg, &a->segsize)) {
				fprintf(stderr, "mkfs.lfs: bad segment size '%s'\n", optarg);
				return 2;
			}
			break;
		case 'b':
			if (lfs_parse_size(optarg, &a->bs)) {
				fprintf(stderr, "mkfs.lfs: bad block size '%s'\n", optarg);
				return 2;
			}
			break;
		case 'N':
			if (lfs_parse_size(optarg, &a->inodes) || a->inodes > LFS_MAX_INODES) {
				fprintf(stderr, "mkfs.lfs: bad inode count '%s' (at most %u)\n", optarg, LFS_MAX_INODES);
				return 2;
			}
			break;
		case 'L':
			a->label = optarg;
			if (lfs_tool_check_label("mkfs.lfs", a->label))
				return 2;
			break;
		case 'U':
			if (lfs_uuid_parse(optarg, a->uuid)) {
				fprintf(stderr, "mkfs.lfs: bad UUID '%s' (32 hex digits, dashes allowed)\n", optarg);
				return 2;
			}
			a->set_uuid = true;
			break;
		case 'f': a->force = true; break;
		case 'n': a->dry_run = true; break;
		case 'q': a->quiet = true; break;
		default: return lfs_tool_opt(&tool, c);
		}
	}
	if (optind != argc - 1)
		return lfs_tool_usage_error(&tool);
	a->path = argv[optind];
	if (!is_pow2(a->bs) || a->bs < LFS_MIN_BLOCK_SIZE || a->bs > LFS_MAX_BLOCK_SIZE) {
		fprintf(stderr, "mkfs.lfs: block size must be a power of two from %d to %d\n", LFS_MIN_BLOCK_SIZE,
			LFS_MAX_BLOCK_SIZE);
		return 2;
	}
	if (!is_pow2(a->segsize) || a->segsize < LFS_MIN_SEG_BLOCKS * a->bs ||
	    a->segsize / a->bs > LFS_MAX_SEG_BLOCKS) {
		fprintf(stderr, "mkfs.lfs: segment size must be a power of two of %d to %u blocks\n",
			LFS_MIN_SEG_BLOCKS, LFS_MAX_SEG_BLOCKS);
		return 2;
	}
	return -1;
}

/* A new image file of `size` bytes: 0, or the exit status after a
 * message (and the file removed). */
static int
create_image(const char *path, uint64_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
	if (fd < 0) {
		fprintf(stderr, "mkfs.lfs: cannot create %s: %s\n", path, strerror(errno));
		return 1;
	}
	int terr = ftruncate(fd, (off_t)size) < 0 ? errno : 0;
	close(fd);
	if (terr) {
		fprintf(stderr, "mkfs.lfs: cannot make %s %llu bytes long: %s\n", path, (unsigned long long)size,
			strerror(terr));
		return fail_created(path, true);
	}
	return 0;
}

/* Whether an lfs superblock, intact or not, is found at `path`: block 0,
 * or the backup when block 0 is damaged (lfs.5). */
static bool
holds_lfs(const char *path)
{
	struct lfs_bdev dev;
	struct lfs_super sb;
	char quiet[4608];
	struct lfs_tool_open how = { .flags = LFS_OPEN_FOUND_ONLY, .fd = -1, .msg = quiet, .msg_len = sizeof(quiet) };
	int err = lfs_tool_open("mkfs.lfs", path, &how, &dev, &sb, NULL);
	if (!err)
		lfs_bdev_close(&dev);
	return err != -EINVAL;
}

/* Refuse an existing device or image that is in use, or (without -f)
 * holds a filesystem: block 0, or the backup when block 0 is damaged
 * (lfs.5), or anything libblkid knows.  0 or the exit status. */
static int
refuse_existing(const struct mkfs_args *a, struct lfs_bdev *dev)
{
	char where[4096];
	if (lfs_image_busy(dev->fd, a->path, where, sizeof(where))) {
		fprintf(stderr, "mkfs.lfs: %s is in use by a mounted lfs (%s); unmount it first\n", a->path, where);
		return 1;
	}
	/* mounted as anything, even through another name: -f or not */
	if (lfs_tool_refuse_in_use("mkfs.lfs", a->path))
		return 1;
	if (a->force)
		return 0;
	char what[256];
	int found = 0;
	if (holds_lfs(a->path)) {
		snprintf(what, sizeof(what), "an lfs filesystem");
		found = 1;
	} else if ((found = probe_other(a->path, what, sizeof(what))) < 0) {
		fprintf(stderr, "mkfs.lfs: %s: cannot probe for an existing filesystem: %s; use -f to "
			"overwrite it anyway\n", a->path, strerror(-found));
		return 1;
	}
	if (found) {
		fprintf(stderr, "mkfs.lfs: %s already holds %s; use -f to overwrite it\n", a->path, what);
		return 1;
	}
	return 0;
}

/* The size of an existing device or image, which grows an image file to
 * -s SIZE if that is larger: 0, or the exit status after a message. */
static int
existing_size(const struct mkfs_args *a, const struct stat *st, uint64_t *dev_bytes)
{
	struct lfs_bdev dev;
	int err = lfs_bdev_open(&dev, a->path, a->dry_run);
	if (err) {
		fprintf(stderr, "mkfs.lfs: %s: %s\n", a->path, strerror(-err));
		return 1;
	}
	int ret = refuse_existing(a, &dev);
	*dev_bytes = dev.size_bytes;
	if (!ret && S_ISREG(st->st_mode) && a->size > dev.size_bytes) {
		if (!a->dry_run && ftruncate(dev.fd, (off_t)a->size) < 0) {
			fprintf(stderr, "mkfs.lfs: cannot grow %s: %s\n", a->path, strerror(errno));
			ret = 1;
		}
		*dev_bytes = a->size;
	}
	lfs_bdev_close(&dev);
	return ret;
}

/* Plan the geometry for `size` bytes and write it (unless -n): 0, or
 * the exit status after a message. */
static int
make(const struct mkfs_args *a, uint64_t size, bool created)
{
	struct lfs_super sb;
	uint32_t bs = (uint32_t)a->bs, segsize = (uint32_t)a->segsize;
	int err = lfs_plan_geometry(&sb, size, bs, segsize, a->inodes);
	if (err) {
		uint64_t min = min_size(bs, segsize, a->inodes);
		fprintf(stderr, "mkfs.lfs: %s: %llu bytes is too small: with %llu-byte blocks and %llu KiB segments "
			"an lfs needs at least %llu bytes (%.1f MiB)\n", a->path, (unsigned long long)size,
			(unsigned long long)bs, (unsigned long long)segsize / 1024, (unsigned long long)min,
			(double)min / 1048576.0);
		return fail_created(a->path, created);
	}
	snprintf(sb.label, sizeof(sb.label), "%s", a->label);
	if (a->set_uuid)
		memcpy(sb.uuid, a->uuid, sizeof(sb.uuid));
	if (!a->dry_run && (err = lfs_format(a->path, &sb, getuid(), getgid()))) {
		fprintf(stderr, "mkfs.lfs: writing %s: %s\n", a->path, strerror(-err));
		return fail_created(a->path, created);
	}
	char uuid[LFS_UUID_STR];
	lfs_uuid_format(sb.uuid, uuid);
	if (!a->quiet)
		printf("mkfs.lfs: %s%s: %llu MiB, %u-byte blocks, %llu segments of %u KiB (%u reserved), "
		       "%u inodes, label '%s', uuid %s, backup superblock at block %llu\n",
		       a->dry_run ? "would make " : "", a->path, (unsigned long long)(sb.nblocks * sb.block_size >> 20),
		       sb.block_size, (unsigned long long)sb.nsegs, sb.seg_blocks * sb.block_size / 1024,
		       sb.reserved_segs, sb.max_inodes, sb.label, uuid, (unsigned long long)sb.backup_sb);
	return 0;
}

int
main(int argc, char **argv)
{
	struct mkfs_args a = { .segsize = LFS_DEFAULT_SEG_SIZE, .bs = LFS_DEFAULT_BLOCK_SIZE, .label = "" };
	int ret = read_args(argc, argv, &a);
	if (ret >= 0)
		return ret;
	struct stat st;
	bool exists = stat(a.path, &st) == 0, created = false;
	if (!exists && errno != ENOENT) {
		fprintf(stderr, "mkfs.lfs: %s: %s\n", a.path, strerror(errno));
		return 1;
	}
	if (!exists && !a.size) {
		fprintf(stderr, "mkfs.lfs: %s does not exist; give its size with -s\n", a.path);
		return 2;
	}
	if (!exists && !a.dry_run) {
		if ((ret = create_image(a.path, a.size)))
			return ret;
		created = true;
	}
	uint64_t dev_bytes = a.size;
	if (exists && (ret = existing_size(&a, &st, &dev_bytes)))
		return ret;
	uint64_t size = !a.size || a.size > dev_bytes ? dev_bytes : a.size;
	return make(&a, size, created);
}
