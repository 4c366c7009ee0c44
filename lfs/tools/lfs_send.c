/*
 * lfs_send.c — lfs-send: write a snapshot of a mounted lfs to standard
 * output as a send stream (lfs(5), SEND STREAMS), for lfs-receive.
 *
 *   lfs-send [-p PARENT] SNAPSHOT MOUNTPOINT
 *
 * With -p, only what changed since the older snapshot PARENT
 * (lfs_send_incr), for a target that has PARENT already.
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
	fprintf(f, "usage: lfs-send [-p PARENT] SNAPSHOT MOUNTPOINT > STREAM\n"
		   "  write the snapshot (a name or a kept checkpoint's number, as lfs-ckpt lists them) of the lfs\n"
		   "  mounted at MOUNTPOINT to standard output, as a full send stream\n"
		   "  -p, --parent PARENT  an incremental stream: what changed since the older snapshot PARENT\n" LFS_TOOL_HELP_LINES);
}

static int
write_all(int fd, const void *buf, size_t len)
{
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

/* The stream goes out in large writes, not one or more per record: a
 * pipe's reader is woken once per OUT_BUF bytes. */
#define OUT_BUF (1u << 20)
struct out {
	int fd;
	size_t n;
	uint8_t *buf;
};

static int
flush_out(struct out *o)
{
	int err = write_all(o->fd, o->buf, o->n);
	o->n = 0;
	return err;
}

static int
write_out(void *ctx, const void *buf, size_t len)
{
	struct out *o = ctx;
	if (o->n + len > OUT_BUF) {
		int err = flush_out(o);
		if (err)
			return err;
	}
	if (len >= OUT_BUF)
		return write_all(o->fd, buf, len);
	memcpy(o->buf + o->n, buf, len);
	o->n += len;
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

/* A number names a plain checkpoint as well: the stream has no name then. */
static const char *
stream_name(const char *spec)
{
	return spec[strspn(spec, "0123456789")] == '\0' ? "" : spec;
}

int
main(int argc, char **argv)
{
	static const struct lfs_tool tool = { "lfs-send", usage, 2 };
	static const struct option longopts[] = { { "parent", required_argument, NULL, 'p' }, LFS_TOOL_LONGOPTS,
						  { NULL, 0, NULL, 0 } };
	const char *parent = NULL;
	int c;
	while ((c = getopt_long(argc, argv, "p:" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1) {
		if (c != 'p')
			return lfs_tool_opt(&tool, c);
		parent = optarg;
	}
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
	struct lfs_remote *r, *pr = NULL;
	struct lfs_fs *view, *pview = NULL;
	int err = lfs_remote_view(image, mnt, spec, "(lfs-send)", &r, &view);
	if (err)
		return 1; /* the library said why */
	if (parent && lfs_remote_view(image, mnt, parent, "(lfs-send -p)", &pr, &pview)) {
		lfs_abandon(view);
		lfs_remote_free(r);
		return 1;
	}
	struct out o = { .fd = STDOUT_FILENO, .buf = malloc(OUT_BUF) };
	if (!o.buf)
		err = -ENOMEM;
	else if (!pview)
		err = lfs_send(view, stream_name(spec), write_out, &o);
	else if ((err = lfs_send_incr(pview, view, stream_name(spec), stream_name(parent), write_out, &o)) == -EINVAL)
		fprintf(stderr, "lfs-send: %s is not a snapshot older than %s\n", parent, spec);
	else if (err == -EOPNOTSUPP)
		fprintf(stderr, "lfs-send: -p: %s or %s is a received snapshot: send it in full\n", parent, spec);
	/* what was sent before a failure goes out too: the receiver
	 * sees a stream cut short, not one cut at a buffer's edge */
	int ferr = o.buf ? flush_out(&o) : 0;
	err = err ? err : ferr;
	free(o.buf);
	if (pview) {
		lfs_abandon(pview);
		lfs_remote_free(pr);
	}
	lfs_abandon(view);
	lfs_remote_free(r);
	if (err) {
		fprintf(stderr, "lfs-send: sending %s of %s: %s\n", spec, mnt, strerror(-err));
		return 1;
	}
	return 0;
}
