/*
 * mkfs.c — mkfs.lfs: make a new lfs on an image file or block device.
 *
 *   mkfs.lfs [-s SIZE] [-S SEGMENT_SIZE] [-b BLOCK_SIZE] [-N INODES] [-L LABEL] [-f] DEVICE|IMAGE
 */
#include "lfs_int.h"

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
	fprintf(f, "usage: mkfs.lfs [-s SIZE] [-S SEGMENT_SIZE] [-b BLOCK_SIZE] [-N INODES] [-L LABEL] [-f] "
		   "DEVICE|IMAGE\n"
		   "  sizes take K, M, G, T suffixes; SIZE is required for a new image file\n");
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
		blkid_probe_lookup_value(pr, "LABEL", &label, NULL);
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

int
main(int argc, char **argv)
{
	uint64_t size = 0, segsize = LFS_DEFAULT_SEG_SIZE, bs = LFS_DEFAULT_BLOCK_SIZE, inodes = 0;
	const char *label = "";
	bool force = false;
	int c;
	while ((c = getopt(argc, argv, "s:S:b:N:L:fhV")) != -1) {
		switch (c) {
		case 's':
			if (lfs_parse_size(optarg, &size)) {
				fprintf(stderr, "mkfs.lfs: bad size '%s'\n", optarg);
				return 2;
			}
			break;
		case 'S':
			if (lfs_parse_size(optarg, &segsize)) {
				fprintf(stderr, "mkfs.lfs: bad segment size '%s'\n", optarg);
				return 2;
			}
			break;
		case 'b':
			if (lfs_parse_size(optarg, &bs)) {
				fprintf(stderr, "mkfs.lfs: bad block size '%s'\n", optarg);
				return 2;
			}
			break;
		case 'N':
			if (lfs_parse_size(optarg, &inodes) || inodes > LFS_MAX_INODES) {
				fprintf(stderr, "mkfs.lfs: bad inode count '%s' (at most %u)\n", optarg, LFS_MAX_INODES);
				return 2;
			}
			break;
		case 'L':
			label = optarg;
			if (strlen(label) > LFS_LABEL_MAX) {
				fprintf(stderr, "mkfs.lfs: label longer than %d bytes\n", LFS_LABEL_MAX);
				return 2;
			}
			break;
		case 'f':
			force = true;
			break;
		case 'V':
			printf("mkfs.lfs %s (on-disk format %d)\n", PACKAGE_VERSION, LFS_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	const char *path = argv[optind];
	if (!is_pow2(bs) || bs < LFS_MIN_BLOCK_SIZE || bs > LFS_MAX_BLOCK_SIZE) {
		fprintf(stderr, "mkfs.lfs: block size must be a power of two from %d to %d\n", LFS_MIN_BLOCK_SIZE,
			LFS_MAX_BLOCK_SIZE);
		return 2;
	}
	if (!is_pow2(segsize) || segsize < LFS_MIN_SEG_BLOCKS * bs || segsize / bs > LFS_MAX_SEG_BLOCKS) {
		fprintf(stderr, "mkfs.lfs: segment size must be a power of two of %d to %u blocks\n",
			LFS_MIN_SEG_BLOCKS, LFS_MAX_SEG_BLOCKS);
		return 2;
	}

	struct stat st;
	bool exists = stat(path, &st) == 0;
	if (!exists) {
		if (!size) {
			fprintf(stderr, "mkfs.lfs: %s does not exist; give its size with -s\n", path);
			return 2;
		}
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
			fprintf(stderr, "mkfs.lfs: cannot create %s: %s\n", path, strerror(errno));
			return 1;
		}
		close(fd);
	}
	struct lfs_bdev dev;
	int err = lfs_bdev_open(&dev, path, false);
	if (err) {
		fprintf(stderr, "mkfs.lfs: %s: %s\n", path, strerror(-err));
		return 1;
	}
	if (flock(dev.fd, LOCK_EX | LOCK_NB) < 0) {
		fprintf(stderr, "mkfs.lfs: %s is in use by a mounted lfs; unmount it first\n", path);
		lfs_bdev_close(&dev);
		return 1;
	}
	if (exists && !force) {
		/* block 0, or the backup when block 0 is damaged (lfs.5) */
		struct lfs_super old;
		struct lfs_super_where w;
		char what[256];
		int found = 0;
		if (lfs_super_find(&dev, 0, &old, &w) != -EINVAL) {
			snprintf(what, sizeof(what), "an lfs filesystem");
			found = 1;
		} else if ((found = probe_other(path, what, sizeof(what))) < 0) {
			fprintf(stderr, "mkfs.lfs: %s: cannot probe for an existing filesystem: %s; use -f to "
				"overwrite it anyway\n", path, strerror(-found));
			lfs_bdev_close(&dev);
			return 1;
		}
		if (found) {
			fprintf(stderr, "mkfs.lfs: %s already holds %s; use -f to overwrite it\n", path, what);
			lfs_bdev_close(&dev);
			return 1;
		}
	}
	if (exists && S_ISREG(st.st_mode) && size > dev.size_bytes) {
		if (ftruncate(dev.fd, (off_t)size) < 0) {
			fprintf(stderr, "mkfs.lfs: cannot grow %s: %s\n", path, strerror(errno));
			lfs_bdev_close(&dev);
			return 1;
		}
		dev.size_bytes = size;
	}
	if (!size || size > dev.size_bytes)
		size = dev.size_bytes;
	lfs_bdev_close(&dev);

	struct lfs_super sb;
	err = lfs_plan_geometry(&sb, size, (uint32_t)bs, (uint32_t)segsize, inodes);
	if (err) {
		fprintf(stderr, "mkfs.lfs: %llu bytes is too small for segments of %llu bytes\n",
			(unsigned long long)size, (unsigned long long)segsize);
		return 1;
	}
	snprintf(sb.label, sizeof(sb.label), "%s", label);
	err = lfs_format(path, &sb, getuid(), getgid());
	if (err) {
		fprintf(stderr, "mkfs.lfs: writing %s: %s\n", path, strerror(-err));
		return 1;
	}
	char uuid[37];
	const uint8_t *u = sb.uuid;
	snprintf(uuid, sizeof(uuid), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	printf("mkfs.lfs: %s: %llu MiB, %u-byte blocks, %llu segments of %u KiB (%u reserved), "
	       "%u inodes, label '%s', uuid %s, backup superblock at block %llu\n",
	       path, (unsigned long long)(sb.nblocks * sb.block_size >> 20), sb.block_size,
	       (unsigned long long)sb.nsegs, sb.seg_blocks * sb.block_size / 1024, sb.reserved_segs,
	       sb.max_inodes, sb.label, uuid, (unsigned long long)sb.backup_sb);
	return 0;
}
