/*
 * lfs_send.c — lfs-send: write a snapshot of a mounted lfs to standard
 * output as a send stream (lfs(5), SEND STREAMS), for lfs-receive.
 *
 *   lfs-send SNAPSHOT MOUNTPOINT
 *
 * The snapshot is read as a snapshot's mount reads it (fuse_snapshot.c):
 * a view of the kept checkpoint, every block through the mounted
 * daemon's control socket, held for as long as the send runs.  The walk
 * and the records are the library's (lfs_send).
 */
#include "cleaner.h"
#include "fuse_snapshot.h"
#include "lfs.h"
#include "tool.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
usage(FILE *f)
{
	fprintf(f, "usage: lfs-send SNAPSHOT MOUNTPOINT > STREAM\n"
		   "  write the snapshot (a name or a kept checkpoint's number, as lfs-ckpt lists them) of the lfs\n"
		   "  mounted at MOUNTPOINT to standard output, as a full send stream\n" LFS_TOOL_HELP_LINES);
}

static int
write_out(void *ctx, const void *buf, size_t len)
{
	int fd = *(int *)ctx;
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The image the daemon at mnt has open. */
static int
image_of(const char *mnt, char path[LFS_CTL_PATH_MAX])
{
	struct lfs_ctl_client cl = { .fd = -1 };
	struct lfs_ctl_resp info;
	int err = lfs_ctl_connect(&cl, mnt);
	if (!err)
		err = lfs_ctl_ask_info(&cl, &info, path);
	lfs_ctl_close(&cl);
	if (err)
		fprintf(stderr, "lfs-send: %s: not a mounted lfs, or its daemon cannot be reached: %s\n", mnt,
			lfs_ctl_strerror(err));
	return err;
}

int
main(int argc, char **argv)
{
	static const struct lfs_tool tool = { "lfs-send", usage, 2 };
	static const struct option longopts[] = { LFS_TOOL_LONGOPTS, { NULL, 0, NULL, 0 } };
	int c;
	while ((c = getopt_long(argc, argv, LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1)
		return lfs_tool_opt(&tool, c);
	if (argc - optind != 2)
		return lfs_tool_usage_error(&tool);
	const char *spec = argv[optind], *mnt = argv[optind + 1];
	if (isatty(STDOUT_FILENO)) {
		fprintf(stderr, "lfs-send: standard output is a terminal: send the stream to a file or a pipe\n");
		return 2;
	}
	char image[LFS_CTL_PATH_MAX];
	if (image_of(mnt, image))
		return 1;
	struct lfs_remote *r;
	struct lfs_fs *view;
	int err = lfs_remote_view(image, mnt, spec, "(lfs-send)", &r, &view);
	if (err)
		return 1; /* the library said why */
	/* a number names a plain checkpoint as well: the stream has no name then */
	bool numeric = spec[strspn(spec, "0123456789")] == '\0';
	int fd = STDOUT_FILENO;
	err = lfs_send(view, numeric ? "" : spec, write_out, &fd);
	lfs_abandon(view);
	lfs_remote_free(r);
	if (err) {
		fprintf(stderr, "lfs-send: sending %s of %s: %s\n", spec, mnt, strerror(-err));
		return 1;
	}
	return 0;
}
