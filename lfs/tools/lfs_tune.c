/*
 * lfs_tune.c — lfs-tune: show the tunables of an unmounted lfs, and
 * change its label and UUID (lfs-tune(8)), as tune2fs and nilfs-tune do.
 *
 *   lfs-tune [-l] [-L LABEL] [-U UUID|random] [-O xattr_blocks|snapshots|relink|unwritten] DEVICE|IMAGE
 *
 * Only the superblock changes, both copies: the backup first, then
 * block 0, so that either copy a crash leaves behind is whole.  The UUID
 * seeds every checksum in the log: the first time it changes, the seed
 * it gave is kept in the superblock (LFS_FEATURE_CSUM_SEED, format.h),
 * which lfs versions before it do not read.  -O xattr_blocks turns on
 * LFS_FEATURE_XATTR_BLOCKS for an image made before it: this lfs reads
 * the one-block attributes it has, and writes new ones in XATTR blocks.
 * -O relink lets fsyncs log relink records (LFS_FEATURE_RELINK).
 * -O unwritten lets fallocate reserve blocks without writing them
 * (LFS_FEATURE_UNWRITTEN): records and checkpoints before it hold zero
 * where the counts go, so an older image needs nothing else.
 */
#include "image.h"
#include "lfs.h"
#include "text.h"
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void
usage(FILE *f)
{
	fprintf(f, "usage: lfs-tune [-l] [-L LABEL] [-U UUID|random] [-O xattr_blocks|snapshots|relink|unwritten] DEVICE|IMAGE\n"
		   "  -l        list the superblock's settings (the default without -L or -U)\n"
		   "  -L LABEL  set the label (at most 64 bytes of printable UTF-8; \"\" clears it)\n"
		   "  -U UUID   set the UUID: 32 hex digits, or \"random\"\n"
		   "  -O xattr_blocks  turn on extended attributes beyond one block per inode\n"
		   "  -O snapshots     turn on snapshots (see lfs-ckpt)\n"
		   "  -O relink        let an fsync of overwrites leave the nodes above leaves for later\n"
		   "  -O unwritten     let fallocate reserve blocks without writing them\n" LFS_TOOL_HELP_LINES);
}

static void
list(const char *path, const struct lfs_super *sb)
{
	char uuid[LFS_UUID_STR];
	lfs_uuid_format(sb->uuid, uuid);
	printf("lfs on %s\n", path);
	char label[LFS_ESC_LEN(LFS_LABEL_MAX)];
	printf("  label                 '%s'%s\n", lfs_escape(sb->label, LFS_ESC_SHOW, label, sizeof(label)),
	       sb->label_refused ? " (shown escaped: bytes lfs-tune -L would refuse)" : "");
	printf("  uuid                  %s\n", uuid);
	printf("  checksum seed         %#010x%s\n", lfs_super_seed(sb),
	       sb->feature_incompat & LFS_FEATURE_CSUM_SEED ? " (kept from an earlier uuid)" : " (from the uuid)");
	printf("  format version        %u\n", sb->version);
	printf("  features              compat %#x%s, incompat %#x%s%s%s%s%s%s\n", sb->feature_compat,
	       sb->feature_compat & LFS_FEATURE_BACKUP_SB ? " (backup superblock)" : "", sb->feature_incompat,
	       sb->feature_incompat & LFS_FEATURE_CSUM_SEED ? " (checksum seed)" : "",
	       sb->feature_incompat & LFS_FEATURE_XATTR_BLOCKS ? " (xattr blocks)" : "",
	       sb->feature_incompat & LFS_FEATURE_RECORD_CHARGE ? " (record charge)" : "",
	       sb->feature_incompat & LFS_FEATURE_SNAPSHOTS ? " (snapshots)" : "",
	       sb->feature_incompat & LFS_FEATURE_RELINK ? " (relink)" : "",
	       sb->feature_incompat & LFS_FEATURE_UNWRITTEN ? " (unwritten)" : "");
	printf("  block size            %u\n", sb->block_size);
	printf("  segment size          %u KiB (%u blocks)\n", sb->seg_blocks * (sb->block_size / 1024), sb->seg_blocks);
	printf("  segments              %" PRIu64 ", %u reserved\n", sb->nsegs, sb->reserved_segs);
	printf("  size                  %" PRIu64 " blocks in use\n", sb->nblocks);
	printf("  inodes                %u\n", sb->max_inodes);
	printf("  checkpoint regions    blocks %" PRIu64 " and %" PRIu64 ", %u blocks each\n", sb->ckpt_addr[0],
	       sb->ckpt_addr[1], sb->ckpt_blocks);
	if (sb->feature_compat & LFS_FEATURE_BACKUP_SB)
		printf("  backup superblock     block %" PRIu64 "\n", sb->backup_sb);
	printf("  created               %" PRIu64 ".%09" PRIu64 " (s since the Epoch)\n", sb->created_ns / 1000000000,
	       sb->created_ns % 1000000000);
}

int
main(int argc, char **argv)
{
	static const struct lfs_tool tool = { "lfs-tune", usage, 2 };
	static const struct option longopts[] = { LFS_TOOL_LONGOPTS, { NULL, 0, NULL, 0 } };
	const char *label = NULL, *uuid_arg = NULL;
	uint32_t add_incompat = 0;
	bool want_list = false;
	uint8_t uuid[16];
	int c;
	while ((c = getopt_long(argc, argv, "lL:U:O:" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1) {
		switch (c) {
		case 'l': want_list = true; break;
		case 'L':
			label = optarg;
			if (lfs_tool_check_label("lfs-tune", label))
				return 2;
			break;
		case 'U':
			uuid_arg = optarg;
			if (strcmp(optarg, "random") == 0) {
				int gerr = lfs_uuid_generate(uuid);
				if (gerr) {
					fprintf(stderr, "lfs-tune: getrandom: %s\n", strerror(-gerr));
					return 1;
				}
			} else if (lfs_uuid_parse(optarg, uuid)) {
				fprintf(stderr, "lfs-tune: bad UUID '%s' (32 hex digits, dashes allowed, or random)\n",
					optarg);
				return 2;
			}
			break;
		case 'O':
			if (!strcmp(optarg, "xattr_blocks")) {
				add_incompat |= LFS_FEATURE_XATTR_BLOCKS;
			} else if (!strcmp(optarg, "snapshots")) {
				add_incompat |= LFS_FEATURE_SNAPSHOTS;
			} else if (!strcmp(optarg, "relink")) {
				add_incompat |= LFS_FEATURE_RELINK;
			} else if (!strcmp(optarg, "unwritten")) {
				add_incompat |= LFS_FEATURE_UNWRITTEN;
			} else {
				fprintf(stderr, "lfs-tune: unknown feature '%s' (xattr_blocks, snapshots, relink, "
					"unwritten)\n",
					optarg);
				return 2;
			}
			break;
		default: return lfs_tool_opt(&tool, c);
		}
	}
	if (optind != argc - 1)
		return lfs_tool_usage_error(&tool);
	const char *path = argv[optind];
	bool change = label || uuid_arg || add_incompat;
	struct lfs_bdev dev;
	struct lfs_super sb;
	if (lfs_tool_open("lfs-tune", path, &(struct lfs_tool_open){ .flags = change ? LFS_OPEN_WRITE : 0, .fd = -1 },
			  &dev, &sb, NULL))
		return 1;
	int err = 0;
	if (change) {
		if (label)
			snprintf(sb.label, sizeof(sb.label), "%s", label);
		sb.feature_incompat |= add_incompat;
		if (uuid_arg) {
			if (!(sb.feature_incompat & LFS_FEATURE_CSUM_SEED)) {
				sb.csum_seed = lfs_super_seed(&sb);
				sb.feature_incompat |= LFS_FEATURE_CSUM_SEED;
			}
			memcpy(sb.uuid, uuid, sizeof(uuid));
		}
		if (sb.feature_compat & LFS_FEATURE_BACKUP_SB)
			err = lfs_super_write_copy(&dev, &sb, sb.backup_sb);
		if (!err)
			err = lfs_super_write_copy(&dev, &sb, 0);
		if (err)
			fprintf(stderr, "lfs-tune: %s: writing the superblock: %s\n", path, strerror(-err));
	}
	if (!err && (want_list || !change))
		list(path, &sb);
	lfs_bdev_close(&dev);
	return err ? 1 : 0;
}
