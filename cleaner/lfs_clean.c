/*
 * lfs_clean.c — lfs-clean: tell the daemon of a mounted lfs what its
 * cleaner is to do, with nilfs-clean's verbs (lfs-clean(8)):
 *
 *   lfs-clean [-n|--now] MOUNTPOINT   a cleaning pass now (the default)
 *   lfs-clean -s|--suspend MOUNTPOINT    -r|--resume MOUNTPOINT
 *   lfs-clean --start MOUNTPOINT         -q|--stop MOUNTPOINT
 *   lfs-clean --ro MOUNTPOINT            --rw MOUNTPOINT
 *
 * One request (LFS_CTL_CLEANER_CTL) over the control socket; the daemon
 * does the rest.  --ro first has the kernel write its dirty pages to
 * the daemon (syncfs), as a kernel remount,ro would.
 */
#include "cleaner.h"
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void
usage(FILE *f)
{
	fprintf(f, "usage: lfs-clean [-n|-s|-r|-q|--start|--ro|--rw] MOUNTPOINT\n"
		   "  -n, --now      make a cleaning pass now (the default)\n"
		   "  -s, --suspend  make no passes until --resume\n"
		   "  -r, --resume   clean again as configured\n"
		   "  -q, --stop     stop the cleaner; the daemon does not restart it\n"
		   "      --start    start the cleaner again (after --stop, or a mount without one)\n"
		   "      --ro       write everything buffered, then refuse changes (remount,ro)\n"
		   "      --rw       accept changes again (remount,rw)\n" LFS_TOOL_HELP_LINES);
}

enum { OPT_START = 256, OPT_RO, OPT_RW };

/* -errno of a verb -> what to tell the user */
static const char *
verb_error(int verb, int err)
{
	switch (err) {
	case -ESRCH: return "no cleaner is running (lfs-clean --start starts one)";
	case -EAGAIN: return "cleaning is suspended (lfs-clean --resume first)";
	case -EOPNOTSUPP: return "this daemon runs no cleaner (mounted read-only?)";
	case -EROFS: return verb == LFS_CLEAN_RW ? "its image could not be opened for writing (a read-only device or file)" : strerror(-err);
	case -EBUSY: return "the filesystem is being unmounted";
	default: return lfs_ctl_strerror(err);
	}
}

int
main(int argc, char **argv)
{
	static const struct lfs_tool tool = { "lfs-clean", usage, 2 };
	static const struct option longopts[] = {
		{ "now", no_argument, NULL, 'n' }, { "suspend", no_argument, NULL, 's' },
		{ "resume", no_argument, NULL, 'r' }, { "stop", no_argument, NULL, 'q' },
		{ "start", no_argument, NULL, OPT_START }, { "ro", no_argument, NULL, OPT_RO },
		{ "rw", no_argument, NULL, OPT_RW }, LFS_TOOL_LONGOPTS, { NULL, 0, NULL, 0 },
	};
	int verb = 0, c;
	while ((c = getopt_long(argc, argv, "nsrq" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1) {
		int v;
		switch (c) {
		case 'n': v = LFS_CLEAN_NOW; break;
		case 's': v = LFS_CLEAN_SUSPEND; break;
		case 'r': v = LFS_CLEAN_RESUME; break;
		case 'q': v = LFS_CLEAN_STOP; break;
		case OPT_START: v = LFS_CLEAN_START; break;
		case OPT_RO: v = LFS_CLEAN_RO; break;
		case OPT_RW: v = LFS_CLEAN_RW; break;
		default: return lfs_tool_opt(&tool, c);
		}
		if (verb && verb != v) {
			fprintf(stderr, "lfs-clean: one verb at a time\n");
			return lfs_tool_usage_error(&tool);
		}
		verb = v;
	}
	if (optind != argc - 1)
		return lfs_tool_usage_error(&tool);
	if (!verb)
		verb = LFS_CLEAN_NOW;
	const char *mnt = argv[optind];
	if (verb == LFS_CLEAN_RO) {
		/* the kernel's dirty pages reach the daemon before it turns
		 * read-only; afterwards their writeback would fail with EROFS */
		int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || syncfs(fd) < 0) {
			fprintf(stderr, "lfs-clean: %s: %s\n", mnt, strerror(errno));
			if (fd >= 0)
				close(fd);
			return 1;
		}
		close(fd);
	}
	struct lfs_ctl_client cl = { -1 };
	int err = lfs_ctl_connect(&cl, mnt);
	if (err) {
		fprintf(stderr, "lfs-clean: %s: cannot reach the lfs daemon: %s\n", mnt, lfs_ctl_strerror(err));
		return 1;
	}
	struct lfs_ctl_req req = { .op = LFS_CTL_CLEANER_CTL, .arg = { (uint64_t)verb } };
	struct lfs_ctl_resp r;
	err = lfs_ctl_call(&cl, &req, NULL, 0, &r, NULL, 0, NULL);
	lfs_ctl_close(&cl);
	if (err) {
		fprintf(stderr, "lfs-clean: %s: %s\n", mnt, verb_error(verb, err));
		return 1;
	}
	return 0;
}
