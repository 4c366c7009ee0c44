/*
 * lfs_requests.c — lfs-requests: the FUSE requests the daemon of a
 * mounted lfs has served, by opcode, and the notifications it sent the
 * kernel (lfs-requests(8)):
 *
 *   lfs-requests [--json] [--reset] MOUNTPOINT
 *
 * One request (LFS_CTL_REQUESTS) over the control socket.  Each request
 * is one read of /dev/fuse by the daemon, so the count of a workload is
 * its number of round trips: run it between two --reset calls, or take
 * the difference of two readings.  Beside each count, the time the
 * daemon took from reading such a request to answering it: the mean and
 * the longest.
 */
#include "cleaner.h"
#include "tool.h"

#include <errno.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <string.h>

static void
usage(FILE *f)
{
	fprintf(f, "usage: lfs-requests [--json] [--reset] MOUNTPOINT\n"
		   "  -j, --json     print one JSON object\n"
		   "  -r, --reset    start the counts again from zero once read\n" LFS_TOOL_HELP_LINES);
}

enum { LFS_FUSE_STATX = 52, LFS_FUSE_COPY_FILE_RANGE_64 = 53 };

/* The names of linux/fuse.h, without FUSE_. */
static const char *const opnames[LFS_CTL_REQ_SLOTS] = {
	[FUSE_LOOKUP] = "LOOKUP", [FUSE_FORGET] = "FORGET", [FUSE_GETATTR] = "GETATTR",
	[FUSE_SETATTR] = "SETATTR", [FUSE_READLINK] = "READLINK", [FUSE_SYMLINK] = "SYMLINK",
	[FUSE_MKNOD] = "MKNOD", [FUSE_MKDIR] = "MKDIR", [FUSE_UNLINK] = "UNLINK",
	[FUSE_RMDIR] = "RMDIR", [FUSE_RENAME] = "RENAME", [FUSE_LINK] = "LINK", [FUSE_OPEN] = "OPEN",
	[FUSE_READ] = "READ", [FUSE_WRITE] = "WRITE", [FUSE_STATFS] = "STATFS",
	[FUSE_RELEASE] = "RELEASE", [FUSE_FSYNC] = "FSYNC", [FUSE_SETXATTR] = "SETXATTR",
	[FUSE_GETXATTR] = "GETXATTR", [FUSE_LISTXATTR] = "LISTXATTR", [FUSE_REMOVEXATTR] = "REMOVEXATTR",
	[FUSE_FLUSH] = "FLUSH", [FUSE_INIT] = "INIT", [FUSE_OPENDIR] = "OPENDIR",
	[FUSE_READDIR] = "READDIR", [FUSE_RELEASEDIR] = "RELEASEDIR", [FUSE_FSYNCDIR] = "FSYNCDIR",
	[FUSE_GETLK] = "GETLK", [FUSE_SETLK] = "SETLK", [FUSE_SETLKW] = "SETLKW",
	[FUSE_ACCESS] = "ACCESS", [FUSE_CREATE] = "CREATE", [FUSE_INTERRUPT] = "INTERRUPT",
	[FUSE_BMAP] = "BMAP", [FUSE_DESTROY] = "DESTROY", [FUSE_IOCTL] = "IOCTL", [FUSE_POLL] = "POLL",
	[FUSE_NOTIFY_REPLY] = "NOTIFY_REPLY", [FUSE_BATCH_FORGET] = "BATCH_FORGET",
	[FUSE_FALLOCATE] = "FALLOCATE", [FUSE_READDIRPLUS] = "READDIRPLUS", [FUSE_RENAME2] = "RENAME2",
	[FUSE_LSEEK] = "LSEEK", [FUSE_COPY_FILE_RANGE] = "COPY_FILE_RANGE",
	[FUSE_SETUPMAPPING] = "SETUPMAPPING", [FUSE_REMOVEMAPPING] = "REMOVEMAPPING",
	[FUSE_SYNCFS] = "SYNCFS", [FUSE_TMPFILE] = "TMPFILE",
	/* newer than Debian 12's linux/fuse.h, which stops at TMPFILE */
	[LFS_FUSE_STATX] = "STATX", [LFS_FUSE_COPY_FILE_RANGE_64] = "COPY_FILE_RANGE_64",
	[LFS_CTL_REQ_SLOTS - 1] = "OTHER",
};
_Static_assert(LFS_FUSE_COPY_FILE_RANGE_64 < LFS_CTL_REQ_SLOTS - 1, "a slot of its own for every named opcode");

static const char *
opname(unsigned i, char *buf, size_t len)
{
	if (opnames[i])
		return opnames[i];
	snprintf(buf, len, "OP%u", i);
	return buf;
}

/* s as a JSON string's contents */
static void
json_string(const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
}

/* How the daemon takes its requests (LFS_CTL_REQUESTS val2). */
static const char *
transport(const struct lfs_ctl_resp *r)
{
	return r->val[2] == LFS_CTL_TRANSPORT_URING ? "io_uring" : "/dev/fuse";
}

/* n: the counts, then the microseconds summed, then the longest */
static void
print_text(const char *mnt, const uint64_t *n, const struct lfs_ctl_resp *r, uint64_t total)
{
	char buf[16];
	const uint64_t *us = n + LFS_CTL_REQ_SLOTS, *max = n + 2 * LFS_CTL_REQ_SLOTS;
	printf("%s: %llu requests in %.3f s; %llu notifications sent\n", mnt, (unsigned long long)total,
	       (double)r->val[1] / 1000, (unsigned long long)r->val[0]);
	printf("transport: %s; %llu of the requests came over io_uring\n", transport(r), (unsigned long long)r->val[3]);
	printf("%-16s %12s %10s %10s\n", "request", "count", "mean ms", "max ms");
	for (unsigned i = 0; i < LFS_CTL_REQ_SLOTS; i++)
		if (n[i])
			printf("%-16s %12llu %10.3f %10.3f\n", opname(i, buf, sizeof(buf)), (unsigned long long)n[i],
			       (double)us[i] / 1000 / (double)n[i], (double)max[i] / 1000);
}

/* "name": value for each opcode counted, values from v */
static void
json_ops(const char *key, const uint64_t *n, const uint64_t *v, double scale)
{
	char buf[16];
	printf(", \"%s\": {", key);
	const char *sep = "";
	for (unsigned i = 0; i < LFS_CTL_REQ_SLOTS; i++) {
		if (!n[i])
			continue;
		printf("%s\"%s\": ", sep, opname(i, buf, sizeof(buf)));
		if (scale == 1)
			printf("%llu", (unsigned long long)v[i]);
		else
			printf("%.3f", (double)v[i] * scale);
		sep = ", ";
	}
	printf("}");
}

static void
print_json(const char *mnt, const uint64_t *n, const struct lfs_ctl_resp *r, uint64_t total)
{
	printf("{\"mountpoint\": \"");
	json_string(mnt);
	printf("\", \"seconds\": %.3f, \"total\": %llu, \"notifications\": %llu", (double)r->val[1] / 1000,
	       (unsigned long long)total, (unsigned long long)r->val[0]);
	printf(", \"transport\": \"%s\", \"over_uring\": %llu", transport(r), (unsigned long long)r->val[3]);
	json_ops("requests", n, n, 1);
	json_ops("service_ms", n, n + LFS_CTL_REQ_SLOTS, 0.001);
	json_ops("max_ms", n, n + 2 * LFS_CTL_REQ_SLOTS, 0.001);
	printf("}\n");
}

int
main(int argc, char **argv)
{
	static const struct lfs_tool tool = { "lfs-requests", usage, 2 };
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' }, { "reset", no_argument, NULL, 'r' },
		LFS_TOOL_LONGOPTS, { NULL, 0, NULL, 0 },
	};
	bool json = false, reset = false;
	int c;
	while ((c = getopt_long(argc, argv, "jr" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'r': reset = true; break;
		default: return lfs_tool_opt(&tool, c);
		}
	}
	if (optind != argc - 1)
		return lfs_tool_usage_error(&tool);
	const char *mnt = argv[optind];
	struct lfs_ctl_client cl = { -1 };
	int err = lfs_ctl_connect(&cl, mnt);
	if (err) {
		fprintf(stderr, "lfs-requests: %s: cannot reach the lfs daemon: %s\n", mnt, lfs_ctl_strerror(err));
		return 1;
	}
	struct lfs_ctl_req req = { .op = LFS_CTL_REQUESTS, .arg = { reset ? LFS_CTL_REQUESTS_RESET : 0 } };
	struct lfs_ctl_resp r;
	uint64_t n[3 * LFS_CTL_REQ_SLOTS];
	err = lfs_ctl_call(&cl, &req, NULL, 0, &r, n, sizeof(n), NULL);
	lfs_ctl_close(&cl);
	if (!err && r.count != 3 * LFS_CTL_REQ_SLOTS)
		err = -EPROTO;
	if (err) {
		fprintf(stderr, "lfs-requests: %s: %s\n", mnt,
			err == -EOPNOTSUPP ? "this daemon does not count its requests (see its log)"
					   : lfs_ctl_strerror(err));
		return 1;
	}
	uint64_t total = 0;
	for (unsigned i = 0; i < LFS_CTL_REQ_SLOTS; i++)
		total += n[i];
	if (json)
		print_json(mnt, n, &r, total);
	else
		print_text(mnt, n, &r, total);
	return 0;
}
