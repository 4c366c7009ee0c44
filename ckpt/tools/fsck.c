/*
 * fsck.c — fsck.lfs [-fnpayvhV] [-b BLOCK] IMAGE: verify an image
 * (fsck_core.c), and check the two copies of its superblock.
 *
 * The one repair it knows is the superblock: with -p, -a or -y, a copy
 * (block 0, or the backup in the last block) that differs from the one
 * in use is rewritten from it.  Everything else it only reports.  The
 * exit status follows fsck(8), bits or-ed: 0 no problems, 1 problems
 * corrected, 4 problems left uncorrected, 8 the image cannot be opened,
 * 16 usage.
 */
#include "image.h"
#include "lfs.h"
#include "salvage.h"
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void
usage(FILE *f)
{
	fprintf(f, "usage: fsck.lfs [-fnv] [-p|-a|-y] [-b BLOCK] IMAGE\n"
		   "       fsck.lfs --salvage DIR [-b BLOCK] IMAGE\n"
		   "  -n        only check (the default)\n"
		   "  -p, -a, -y  also rewrite a damaged superblock copy from the one in use\n"
		   "  -b BLOCK  use the superblock at BLOCK (the backup: see mkfs.lfs's output or lfs(5))\n"
		   "  -f        accepted: every run checks everything\n"
		   "  -v        say which superblock copies are intact, and what recovery did\n"
		   "  --salvage DIR  copy every file the log still holds into DIR (empty), whatever\n"
		   "            the checkpoints say: for an image that no longer mounts\n"
		   LFS_TOOL_HELP_LINES);
}

/* Rewrite the damaged copies (`bad` lists their blocks) from `sb` under
 * the image lock; returns how many were rewritten, or -errno. */
static int
fsck_repair_super(const char *path, const struct lfs_super *sb, const uint64_t *bad, int nbad)
{
	struct lfs_bdev dev;
	struct lfs_tool_open how = { .flags = LFS_OPEN_WRITE | LFS_OPEN_DEVICE_ONLY, .fd = -1 };
	int err = lfs_tool_open("fsck.lfs", path, &how, &dev, NULL, NULL);
	if (err)
		return err;
	dev.block_size = sb->block_size;
	int n = 0;
	for (int i = 0; i < nbad && !err; i++)
		if (!(err = lfs_super_write_copy(&dev, sb, bad[i])))
			n++;
	lfs_bdev_close(&dev);
	return err ? err : n;
}

/* fsck.lfs --salvage DIR IMAGE: 0 if every segment was there and verified
 * and everything found was copied whole; 4 if not (what may be missing is
 * not known); 8 if the salvage could not be made. */
static int
salvage(const char *path, const char *dir, uint64_t sb_block)
{
	struct lfs_bdev dev;
	struct lfs_super sb;
	char msg[4608];
	/* not checked against the device: a truncated image is salvaged */
	struct lfs_tool_open how = { .flags = LFS_OPEN_FOUND_ONLY, .fd = -1, .sb_block = sb_block, .msg = msg,
				     .msg_len = sizeof(msg) };
	int err = lfs_tool_open("fsck.lfs", path, &how, &dev, &sb, NULL);
	if (err) {
		fprintf(stderr, "fsck.lfs: %s%s\n", msg,
			err == -EINVAL || err == -EFSCORRUPTED ? ": its geometry is unknown; try -b BLOCK" : "");
		return 8;
	}
	if (msg[0])
		fprintf(stderr, "fsck.lfs: %s\n", msg);
	/* a truncated image: the segments it still has whole */
	uint64_t blocks = dev.size_bytes / sb.block_size;
	uint64_t have = blocks > sb.seg0 ? (blocks - sb.seg0) / sb.seg_blocks : 0;
	bool truncated = have < sb.nsegs;
	if (truncated) {
		fprintf(stderr, "fsck.lfs: %s holds %llu of the filesystem's %llu segments\n", path,
			(unsigned long long)have, (unsigned long long)sb.nsegs);
		sb.nsegs = have;
	}
	struct lfs_salvage_report r;
	err = lfs_salvage(&dev, &sb, dir, &r);
	lfs_bdev_close(&dev);
	if (err) {
		fprintf(stderr, "fsck.lfs: salvage into %s: %s\n", dir, strerror(-err));
		return 8;
	}
	printf("fsck.lfs: salvage of %s: %llu segments scanned, %llu blocks failed their checks, %llu read errors; "
	       "%llu files, %llu directories, %llu symbolic links, %llu special files, %llu hard links copied "
	       "into %s (%llu under lost+found); %llu files incomplete (%llu blocks not found), %llu not copied\n",
	       path, (unsigned long long)r.segs, (unsigned long long)r.bad_blocks, (unsigned long long)r.read_errors,
	       (unsigned long long)r.files, (unsigned long long)r.dirs, (unsigned long long)r.symlinks,
	       (unsigned long long)r.specials, (unsigned long long)r.links, dir, (unsigned long long)r.lost_found,
	       (unsigned long long)r.incomplete, (unsigned long long)r.missing_blocks,
	       (unsigned long long)r.skipped);
	return r.incomplete || r.skipped || r.bad_blocks || r.read_errors || truncated ? 4 : 0;
}

int
main(int argc, char **argv)
{
	static const struct lfs_tool tool = { "fsck.lfs", usage, 16 };
	static const struct option longopts[] = { LFS_TOOL_LONGOPTS, { "salvage", required_argument, NULL, 'S' },
						  { NULL, 0, NULL, 0 } };
	const char *salvage_dir = NULL;
	int opt;
	bool verbose = false, repair = false, check_only = false;
	uint64_t sb_block = 0;
	while ((opt = getopt_long(argc, argv, "vanpyfb:" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1) {
		switch (opt) {
		case 'v': verbose = true; break;
		case 'a': case 'p': case 'y': repair = true; break;
		case 'n': check_only = true; break;
		case 'f': break;
		case 'S': salvage_dir = optarg; break;
		case 'b': {
			char *end;
			errno = 0;
			sb_block = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || optarg[0] == '-') {
				fprintf(stderr, "fsck.lfs: bad block number '%s'\n", optarg);
				return 16;
			}
			break;
		}
		default: return lfs_tool_opt(&tool, opt);
		}
	}
	if (optind != argc - 1)
		return lfs_tool_usage_error(&tool);
	if (repair && check_only) {
		fprintf(stderr, "fsck.lfs: -n cannot be combined with -p, -a or -y\n");
		return 16;
	}
	const char *path = argv[optind];
	if (salvage_dir) {
		if (repair) {
			fprintf(stderr, "fsck.lfs: --salvage cannot be combined with -p, -a or -y\n");
			return 16;
		}
		return salvage(path, salvage_dir, sb_block);
	}
	/* roll-forward is what a healthy image after a crash, or a live
	 * one, needs: not a problem to report */
	lfs_log_set_quiet_info(!verbose);
	lfs_log_set_debug(verbose);
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.readonly = true;
	o.sb_block = sb_block;
	struct lfs_fs *fs;
	int err = lfs_mount(path, &o, &fs);
	if (err) {
		fprintf(stderr, "fsck.lfs: %s cannot be opened: %s\n", path, strerror(-err));
		return 8;
	}
	uint64_t problems = 0;
	err = lfs_fsck(fs, &problems);
	if (err) {
		fprintf(stderr, "fsck.lfs: %s\n", strerror(-err));
		lfs_abandon(fs);
		return 8;
	}
	/* both copies of the superblock must be the one in use */
	const struct lfs_super *sb = lfs_fs_super(fs);
	uint64_t copies[2], bad[2];
	int ncopies, errs[2];
	int nbad = lfs_fsck_super_copies(fs, copies, &ncopies, bad, errs);
	for (int i = 0, b = 0; i < ncopies; i++) {
		const char *what = i ? "backup superblock" : "superblock";
		if (b < nbad && bad[b] == copies[i]) {
			printf("fsck.lfs: %s at block %" PRIu64 " %s\n", what, copies[i],
			       errs[b] == -EFSCORRUPTED ? "is damaged (it differs from the superblock in use)"
							: strerror(-errs[b]));
			b++;
		} else if (verbose) {
			printf("fsck.lfs: %s at block %" PRIu64 " is intact\n", what, copies[i]);
		}
	}
	if (ncopies == 1 && verbose)
		printf("fsck.lfs: this image has no backup superblock (made before mkfs.lfs wrote one)\n");
	int status = 0;
	if (nbad && repair) {
		int n = fsck_repair_super(path, sb, bad, nbad);
		if (n == nbad) {
			for (int i = 0; i < nbad; i++)
				printf("fsck.lfs: rewrote the superblock copy at block %" PRIu64 "\n", bad[i]);
			status |= 1;
		} else {
			printf("fsck.lfs: could not rewrite the superblock copies: %s\n",
			       n == -EBUSY ? "the image is in use by a mounted lfs" : strerror(n < 0 ? -n : EIO));
			status |= 4;
		}
	} else if (nbad) {
		status |= 4;
	}
	problems += (uint64_t)nbad;
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	printf("fsck.lfs: %s: %llu inodes, %llu of %llu segments clean, %.1f MiB live: %llu problem%s\n", path,
	       (unsigned long long)st.inodes_used, (unsigned long long)st.segs_clean,
	       (unsigned long long)st.segs_total, (double)st.live_bytes / 1048576.0, (unsigned long long)problems,
	       problems == 1 ? "" : "s");
	lfs_abandon(fs);
	if (problems > (uint64_t)nbad)
		status |= 4;
	return status;
}
