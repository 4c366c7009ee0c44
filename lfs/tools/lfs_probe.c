/*
 * lfs_probe.c — lfs-probe: what blkid(8) says of other filesystems, for
 * lfs, whose signature libblkid does not know (its probers are compiled
 * into it: libblkid/src/superblocks/superblocks.c lists them, with no way
 * to add one from outside).  See lfs-probe(8).
 *
 *   lfs-probe [-o full|udev|device] [DEVICE|IMAGE...]
 *   lfs-probe -t NAME=VALUE [-o device] [DEVICE|IMAGE...]
 *
 * Without paths it looks at every block device in /proc/partitions and
 * every image file listed in SYSCONFDIR/lfs/images (one path a line).
 * -o udev prints ID_FS_* for the udev rule 59-lfs.rules, which makes
 * /dev/disk/by-uuid and by-label links, so that mount(8) finds UUID= and
 * LABEL= of lfs block devices itself; -t finds the one with that UUID or
 * LABEL, as findfs(8) does, for mount.fuse.lfs and lfs:UUID= sources.
 */
#include "image.h"
#include "lfs.h"
#include "text.h"
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LFS_SYSCONFDIR
#define LFS_SYSCONFDIR "/etc"
#endif
#define IMAGES_LIST LFS_SYSCONFDIR "/lfs/images"

static void
usage(FILE *f)
{
	fprintf(f, "usage: lfs-probe [-o full|udev|device] [DEVICE|IMAGE...]\n"
		   "       lfs-probe -t UUID=uuid|LABEL=label [-o device] [DEVICE|IMAGE...]\n"
		   "  -o FORMAT  full: DEVICE: UUID=\"...\" LABEL=\"...\" TYPE=\"lfs\" (the default);\n"
		   "             udev: ID_FS_* lines; device: the path only\n"
		   "  -t TAG     only the filesystem with this UUID or LABEL (as findfs)\n"
		   "  without paths: the block devices in /proc/partitions and the images in\n"
		   "  " IMAGES_LIST "\n" LFS_TOOL_HELP_LINES);
}

enum format { FULL, UDEV, DEVICE };

/* Superblock of `path` if it is lfs: 1, else 0. */
static int
probe(const char *path, struct lfs_super *sb)
{
	struct lfs_bdev dev;
	char quiet[512];
	struct lfs_tool_open how = { .flags = LFS_OPEN_FOUND_ONLY, .fd = -1, .msg = quiet, .msg_len = sizeof(quiet) };
	if (lfs_tool_open("lfs-probe", path, &how, &dev, sb, NULL))
		return 0;
	lfs_bdev_close(&dev);
	return 1;
}

/* The label comes from the image: whoever made it chose its bytes, and
 * udev imports as root every KEY=VALUE line printed here.  It is shown
 * only escaped (text.h), as blkid does for the other filesystems. */
static void
print(const char *path, const struct lfs_super *sb, enum format f)
{
	char uuid[LFS_UUID_STR], label[LFS_ESC_LEN(LFS_LABEL_MAX)];
	lfs_uuid_format(sb->uuid, uuid);
	switch (f) {
	case FULL:
		printf("%s: ", path);
		if (sb->label[0])
			printf("LABEL=\"%s\" ", lfs_escape(sb->label, LFS_ESC_SHOW, label, sizeof(label)));
		printf("UUID=\"%s\" TYPE=\"lfs\" VERSION=\"%u\"\n", uuid, sb->version);
		break;
	case UDEV:
		printf("ID_FS_TYPE=lfs\nID_FS_USAGE=filesystem\nID_FS_VERSION=%u\nID_FS_UUID=%s\nID_FS_UUID_ENC=%s\n",
		       sb->version, uuid, uuid);
		if (sb->label[0]) {
			printf("ID_FS_LABEL=%s\n", lfs_escape(sb->label, LFS_ESC_UDEV_SAFE, label, sizeof(label)));
			printf("ID_FS_LABEL_ENC=%s\n", lfs_escape(sb->label, LFS_ESC_UDEV, label, sizeof(label)));
		}
		break;
	case DEVICE:
		printf("%s\n", path);
		break;
	}
}

/* Whether `sb` has the UUID or LABEL of `tag` ("UUID=..." / "LABEL=..."). */
static bool
matches(const struct lfs_super *sb, const char *tag)
{
	if (strncmp(tag, "LABEL=", 6) == 0)
		return strcmp(sb->label, tag + 6) == 0;
	uint8_t u[16];
	return strncmp(tag, "UUID=", 5) == 0 && lfs_uuid_parse(tag + 5, u) == 0 && memcmp(u, sb->uuid, 16) == 0;
}

/* Probe one candidate; returns 1 if it was lfs and shown. */
static int
one(const char *path, const char *tag, enum format f)
{
	struct lfs_super sb;
	if (!probe(path, &sb) || (tag && !matches(&sb, tag)))
		return 0;
	print(path, &sb, f);
	return 1;
}

/* Every block device and listed image; with a tag, stop at the first. */
static int
scan(const char *tag, enum format f)
{
	int found = 0;
	char line[4096];
	FILE *p = fopen("/proc/partitions", "re");
	while (p && fgets(line, sizeof(line), p) && !(tag && found)) {
		char name[256], path[300];
		if (sscanf(line, " %*u %*u %*u %255s", name) == 1) {
			snprintf(path, sizeof(path), "/dev/%s", name);
			found += one(path, tag, f);
		}
	}
	if (p)
		fclose(p);
	FILE *l = fopen(IMAGES_LIST, "re");
	while (l && fgets(line, sizeof(line), l) && !(tag && found)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '/')
			found += one(line, tag, f);
	}
	if (l)
		fclose(l);
	return found;
}

int
main(int argc, char **argv)
{
	static const struct lfs_tool tool = { "lfs-probe", usage, 4 };
	static const struct option longopts[] = { LFS_TOOL_LONGOPTS, { NULL, 0, NULL, 0 } };
	enum format f = FULL;
	const char *tag = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "o:t:" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (strcmp(optarg, "full") == 0)
				f = FULL;
			else if (strcmp(optarg, "udev") == 0)
				f = UDEV;
			else if (strcmp(optarg, "device") == 0)
				f = DEVICE;
			else
				return lfs_tool_usage_error(&tool);
			break;
		case 't':
			tag = optarg;
			if (strncmp(tag, "UUID=", 5) != 0 && strncmp(tag, "LABEL=", 6) != 0) {
				fprintf(stderr, "lfs-probe: -t takes UUID=... or LABEL=...\n");
				return 4;
			}
			break;
		default: return lfs_tool_opt(&tool, c);
		}
	}
	int found = 0;
	if (optind == argc) {
		found = scan(tag, f);
	} else {
		for (int i = optind; i < argc && !(tag && found); i++)
			found += one(argv[i], tag, f);
	}
	if (!found && tag)
		fprintf(stderr, "lfs-probe: no lfs filesystem with %s\n", tag);
	/* as blkid: 2 when nothing was found */
	return found ? 0 : 2;
}
