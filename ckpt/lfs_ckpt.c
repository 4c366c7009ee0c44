/*
 * lfs_ckpt.c — lfs-ckpt: list the two checkpoint regions of an lfs image,
 * or force a checkpoint on a mounted filesystem.
 *
 *   lfs-ckpt [-l] IMAGE|MOUNTPOINT
 *   lfs-ckpt -c [-l] MOUNTPOINT
 *   lfs-ckpt -S fullsync|metaflush|nologflush|fs MOUNTPOINT
 *
 * Listing reads the image itself, read-only and without a lock (for a
 * mountpoint, the daemon names its image over the control socket), and
 * judges each region with lfs_ckpt_read_region(), as a mount does.
 * Forcing goes through the daemon (LFS_CTL_CHECKPOINT): only the process
 * that owns the log may write it.  Shutting down (-S) is the ioctl on the
 * mountpoint (LFS_IOC_SHUTDOWN, or "fs": the generic FS_IOC_SHUTDOWN that
 * xfs_io and godown send), answered by the daemon itself.
 */
#include "cleaner.h"
#include "image.h"
#include "lfs.h"
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

struct region {
	int err;                    /* from lfs_ckpt_read_region */
	char why[160];
	bool decoded;               /* the header is worth showing */
	struct lfs_ckpt_hdr h;
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: lfs-ckpt [-l] IMAGE|MOUNTPOINT    list the checkpoint regions\n"
		   "       lfs-ckpt -c [-l] MOUNTPOINT       write a checkpoint now, print its sequence number\n"
		   "       lfs-ckpt -S HOW MOUNTPOINT        shut the filesystem down: HOW is fullsync,\n"
		   "                                         metaflush, nologflush, or fs (FS_IOC_SHUTDOWN)\n"
		   "  -l  list the checkpoint regions (the default)\n"
		   "  -c  write a checkpoint now\n"
		   "  -S  shut the filesystem down\n" LFS_TOOL_HELP_LINES);
}

/* The shutdown ioctl on the mountpoint; 0 or 1 after a message. */
static int
lfs_ckpt_shutdown(const char *mnt, const char *how)
{
	static const char *const names[] = { "fullsync", "metaflush", "nologflush" };
	uint32_t flags = 0;
	bool generic = strcmp(how, "fs") == 0;
	if (!generic) {
		while (flags < 3 && strcmp(how, names[flags]) != 0)
			flags++;
		if (flags == 3) {
			fprintf(stderr, "lfs-ckpt: -S %s: not fullsync, metaflush, nologflush or fs\n", how);
			return 2;
		}
	}
	int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "lfs-ckpt: %s: %s\n", mnt, strerror(errno));
		return 1;
	}
	int r = generic ? ioctl(fd, LFS_FS_IOC_SHUTDOWN, &flags) : ioctl(fd, LFS_IOC_SHUTDOWN, &flags);
	int err = errno;
	close(fd);
	if (r < 0) {
		fprintf(stderr, "lfs-ckpt: %s: shutdown (%s): %s\n", mnt, how, strerror(err));
		return 1;
	}
	return 0;
}

/* Ask the daemon at `mnt` for its image; 0 or -errno after a message. */
static int
lfs_ckpt_image_of(const char *mnt, char path[LFS_CTL_PATH_MAX])
{
	struct lfs_ctl_client cl = { -1 };
	int err = lfs_ctl_connect(&cl, mnt);
	if (err) {
		fprintf(stderr, "lfs-ckpt: %s: cannot reach the lfs daemon: %s\n", mnt, lfs_ctl_strerror(err));
		return err;
	}
	struct lfs_ctl_resp resp;
	err = lfs_ctl_ask_info(&cl, &resp, path);
	lfs_ctl_close(&cl);
	if (err)
		fprintf(stderr, "lfs-ckpt: %s: asking the daemon for its image: %s\n", mnt, lfs_ctl_strerror(err));
	return err;
}

/* Force a checkpoint through the daemon; prints its sequence number. */
static int
lfs_ckpt_force(const char *mnt)
{
	struct lfs_ctl_client cl = { -1 };
	int err = lfs_ctl_connect(&cl, mnt);
	if (err) {
		fprintf(stderr, "lfs-ckpt: %s: cannot reach the lfs daemon: %s\n", mnt, lfs_ctl_strerror(err));
		return err;
	}
	struct lfs_ctl_req req = { .op = LFS_CTL_CHECKPOINT };
	struct lfs_ctl_resp resp;
	err = lfs_ctl_call(&cl, &req, NULL, 0, &resp, NULL, 0, NULL);
	lfs_ctl_close(&cl);
	if (err) {
		fprintf(stderr, "lfs-ckpt: %s: checkpoint failed: %s\n", mnt, strerror(-err));
		return err;
	}
	printf("%" PRIu64 "\n", resp.val[0]);
	return 0;
}

/* Read and check the superblock (lfs_super_open, as the mount and every
 * tool); 0 or -errno after a message. */
static int
lfs_ckpt_read_super(struct lfs_bdev *dev, const char *path, struct lfs_super *sb)
{
	struct lfs_super_where w;
	char why[256];
	int err = lfs_super_open(dev, 0, sb, &w, why, sizeof(why));
	if (err) {
		fprintf(stderr, "lfs-ckpt: %s: %s\n", path, why);
		return err;
	}
	if (w.primary_err)
		fprintf(stderr, "lfs-ckpt: %s: block 0 %s; read the backup superblock at block %" PRIu64 "\n", path,
			lfs_super_why(w.primary_err), w.block);
	return 0;
}

static void
fmt_time(char *t, size_t len, uint64_t ns)
{
	time_t s = (time_t)(ns / 1000000000u);
	struct tm tm;
	size_t n;
	if (ns && gmtime_r(&s, &tm) && (n = strftime(t, len, "%Y-%m-%dT%H:%M:%S", &tm)) > 0)
		snprintf(t + n, len - n, ".%03uZ", (unsigned)(ns / 1000000u % 1000u));
	else
		snprintf(t, len, "%" PRIu64, ns);
}

/* List both regions of the image at `path`; the exit status. */
static int
lfs_ckpt_list(const char *path, const char *mnt)
{
	struct lfs_bdev dev;
	struct lfs_super sb;
	int err = lfs_bdev_open(&dev, path, true);
	if (err) {
		fprintf(stderr, "lfs-ckpt: %s: %s\n", path,
			err == -ENOTBLK ? "not a regular file, block device or directory" : strerror(-err));
		return 1;
	}
	if (lfs_ckpt_read_super(&dev, path, &sb)) {
		lfs_bdev_close(&dev);
		return 1;
	}
	char where[4096];
	if (!mnt && lfs_image_busy(dev.fd, path, where, sizeof(where)))
		fprintf(stderr, "lfs-ckpt: warning: %s is mounted at %s: the regions may be about to change; "
			"lfs-ckpt -l %s asks the daemon\n", path, where, where);
	struct region r[2];
	for (int i = 0; i < 2; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		/* judged, and the verdict worded, as a mount judges it */
		r[i].err = lfs_ckpt_judge_region(&dev, &sb, i, &r[i].h, NULL, r[i].why, sizeof(r[i].why));
		r[i].decoded = r[i].err == 0 || r[i].err == -EFSCORRUPTED;
	}
	lfs_bdev_close(&dev);
	/* the same choice as lfs_ckpt_load() */
	int newest = -1;
	if (!r[0].err && !r[1].err)
		newest = r[1].h.ckpt_seq > r[0].h.ckpt_seq;
	else if (!r[0].err)
		newest = 0;
	else if (!r[1].err)
		newest = 1;

	if (mnt)
		printf("image %s, mounted at %s\n", path, mnt);
	else
		printf("image %s\n", path);
	printf("  %-6s %-6s %-8s %-24s %-5s %-12s %-8s %-10s %-8s %-14s %s\n", "REGION", "BLOCK", "SEQ", "TIME",
	       "STATE", "HEAD", "NEXT_SEG", "NEXT_PSEG", "INODES", "WRITTEN", "STATUS");
	for (int i = 0; i < 2; i++) {
		const struct lfs_ckpt_hdr *h = &r[i].h;
		char seq[24] = "-", t[64] = "-", head[48] = "-", nseg[24] = "-", npseg[24] = "-", ino[24] = "-",
		     wr[24] = "-";
		const char *state = "-";
		if (r[i].decoded) {
			snprintf(seq, sizeof(seq), "%" PRIu64, h->ckpt_seq);
			fmt_time(t, sizeof(t), h->timestamp_ns);
			state = h->flags & LFS_CKPT_CLEAN ? "clean" : "dirty";
			snprintf(head, sizeof(head), "%" PRIu64 "+%u", h->head_seg, h->head_off);
			snprintf(nseg, sizeof(nseg), "%" PRIu64, h->next_seg);
			snprintf(npseg, sizeof(npseg), "%" PRIu64, h->next_pseg_seq);
			snprintf(ino, sizeof(ino), "%" PRIu64, h->inodes_used);
			snprintf(wr, sizeof(wr), "%" PRIu64, h->bytes_written);
		}
		printf("%c %-6d %-6" PRIu64 " %-8s %-24s %-5s %-12s %-8s %-10s %-8s %-14s %s\n", newest == i ? '*' : ' ',
		       i, sb.ckpt_addr[i], seq, t, state, head, nseg, npseg, ino, wr, r[i].why);
	}
	if (newest < 0) {
		fflush(stdout);
		fprintf(stderr, "lfs-ckpt: %s: no valid checkpoint region\n", path);
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	bool list = false, force = false;
	const char *shut = NULL;
	static const struct lfs_tool tool = { "lfs-ckpt", usage, 2 };
	static const struct option longopts[] = { LFS_TOOL_LONGOPTS, { NULL, 0, NULL, 0 } };
	int c;
	while ((c = getopt_long(argc, argv, "lcS:" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1) {
		switch (c) {
		case 'l': list = true; break;
		case 'S': shut = optarg; break;
		case 'c': force = true; break;
		default: return lfs_tool_opt(&tool, c);
		}
	}
	if (optind != argc - 1)
		return lfs_tool_usage_error(&tool);
	const char *arg = argv[optind];
	if (shut)
		return lfs_ckpt_shutdown(arg, shut);
	struct stat st;
	if (stat(arg, &st) < 0) {
		fprintf(stderr, "lfs-ckpt: %s: %s\n", arg, strerror(errno));
		return 1;
	}
	bool mounted = S_ISDIR(st.st_mode);
	if (force && !mounted) {
		fprintf(stderr, "lfs-ckpt: %s: -c needs the mountpoint of a mounted lfs\n", arg);
		return 2;
	}
	if (force && lfs_ckpt_force(arg))
		return 1;
	if (force && !list)
		return 0;
	if (!mounted)
		return lfs_ckpt_list(arg, NULL);
	char path[LFS_CTL_PATH_MAX];
	if (lfs_ckpt_image_of(arg, path))
		return 1;
	return lfs_ckpt_list(path, arg);
}
