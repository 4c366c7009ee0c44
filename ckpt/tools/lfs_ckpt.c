/*
 * lfs_ckpt.c — lfs-ckpt: list the two checkpoint regions of an lfs image
 * and the checkpoints it keeps, force a checkpoint, make, keep and delete
 * snapshots on a mounted filesystem.
 *
 *   lfs-ckpt [-l] [-j] IMAGE|MOUNTPOINT
 *   lfs-ckpt -c [-l] MOUNTPOINT
 *   lfs-ckpt -s [-n NAME] MOUNTPOINT
 *   lfs-ckpt -k CP [-n NAME] | -u CP | -d CP|NAME  MOUNTPOINT
 *   lfs-ckpt -S fullsync|metaflush|nologflush|fs MOUNTPOINT
 *
 * Listing reads the regions from the image itself, read-only and without
 * a lock (for a mountpoint, the daemon names its image over the control
 * socket), and judges both regions with lfs_ckpt_judge_both(), as a
 * mount does; the kept checkpoints come from the daemon, or, for an
 * image, from a read-only look at it.  Everything else goes through the
 * daemon (LFS_CTL_*): only the process that owns the log may write it.  Shutting down (-S) is the ioctl on the
 * mountpoint (LFS_IOC_SHUTDOWN, or "fs": the generic FS_IOC_SHUTDOWN that
 * xfs_io and godown send), answered by the daemon itself.
 */
#include "cleaner.h"
#include "image.h"
#include "lfs.h"
#include "out.h"
#include "text.h"
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

static void
usage(FILE *f)
{
	fprintf(f, "usage: lfs-ckpt [-l] [-j] IMAGE|MOUNTPOINT  list the checkpoint regions and kept checkpoints\n"
		   "       lfs-ckpt -c [-l] MOUNTPOINT       write a checkpoint now, print its sequence number\n"
		   "       lfs-ckpt -s [-n NAME] MOUNTPOINT  make a snapshot now, print its number\n"
		   "       lfs-ckpt -k CP [-n NAME] MOUNTPOINT  keep checkpoint CP as a snapshot\n"
		   "       lfs-ckpt -u CP MOUNTPOINT         make snapshot CP a plain checkpoint again\n"
		   "       lfs-ckpt -d CP|NAME MOUNTPOINT    delete a kept checkpoint or snapshot\n"
		   "       lfs-ckpt -S HOW MOUNTPOINT        shut the filesystem down: HOW is fullsync,\n"
		   "                                         metaflush, nologflush, or fs (FS_IOC_SHUTDOWN)\n"
		   "  -l  list (the default)\n"
		   "  -j, --json  list as one JSON object\n"
		   "  -c  write a checkpoint now\n"
		   "  -s  make a snapshot now\n"
		   "  -n  the snapshot's name (1 to 39 printable bytes, no '/')\n"
		   "  -k, -u, -d  keep as a snapshot, let go, delete\n"
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

/* The kept checkpoints, from the daemon at mnt or from the image at
 * path (read-only); 0 or -errno after a message. */
static int
kept_list(const char *path, const char *mnt, struct lfs_ckpt_info **ci, size_t *n, uint64_t *held,
	  uint32_t *protect)
{
	*ci = NULL;
	*n = 0;
	if (!mnt) {
		struct lfs_opts o;
		lfs_opts_default(&o);
		o.readonly = true;
		lfs_log_set_quiet_info(true);
		struct lfs_fs *fs;
		int err = lfs_mount(path, &o, &fs);
		if (!err) {
			err = lfs_snapshot_list(fs, ci, n, held);
			*protect = lfs_snapshot_protection(fs);
			lfs_abandon(fs);
		}
		if (err)
			fprintf(stderr, "lfs-ckpt: %s: reading its kept checkpoints: %s\n", path, strerror(-err));
		return err;
	}
	struct lfs_ctl_client cl = { -1 };
	int err = lfs_ctl_connect(&cl, mnt);
	if (err) {
		fprintf(stderr, "lfs-ckpt: %s: cannot reach the lfs daemon: %s\n", mnt, lfs_ctl_strerror(err));
		return err;
	}
	err = lfs_ctl_ask_snapshots(&cl, ci, n, held, protect);
	if (err)
		fprintf(stderr, "lfs-ckpt: %s: listing the kept checkpoints: %s\n", mnt, lfs_ctl_strerror(err));
	lfs_ctl_close(&cl);
	return err;
}

static const char *
kind_of(const struct lfs_ckpt_info *c)
{
	if (c->flags & LFS_CKPT_INFO_RECEIVED)
		return "received";
	return c->flags & LFS_CKPT_INFO_SNAPSHOT ? "snapshot" : c->flags & LFS_CKPT_INFO_KEPT ? "kept" : "current";
}

static void
print_json(const char *path, const char *mnt, const struct lfs_super *sb, const struct lfs_ckpt_verdict r[2],
	   int newest, const struct lfs_ckpt_info *ci, size_t n, uint64_t held, uint32_t protect)
{
	struct lfs_out o;
	lfs_out_init(&o, true);
	lfs_out_begin(&o, NULL, '}');
	lfs_out_str(&o, "image", path);
	if (mnt)
		lfs_out_str(&o, "mountpoint", mnt);
	lfs_out_begin(&o, "regions", ']');
	for (int i = 0; i < 2; i++) {
		lfs_out_item(&o, "region", (uint64_t)i, true);
		lfs_out_u64(&o, "block", sb->ckpt_addr[i]);
		lfs_out_bool(&o, "newest", newest == i);
		lfs_out_str(&o, "status", r[i].why);
		if (r[i].decoded) {
			const struct lfs_ckpt_hdr *h = &r[i].h;
			lfs_out_u64(&o, "seq", h->ckpt_seq);
			lfs_out_time(&o, "time_ns", h->timestamp_ns);
			lfs_out_bool(&o, "clean", h->flags & LFS_CKPT_CLEAN);
			lfs_out_u64(&o, "head_seg", h->head_seg);
			lfs_out_u64(&o, "head_off", h->head_off);
			lfs_out_u64(&o, "next_seg", h->next_seg);
			lfs_out_u64(&o, "next_pseg_seq", h->next_pseg_seq);
			lfs_out_u64(&o, "inodes_used", h->inodes_used);
			lfs_out_u64(&o, "bytes_written", h->bytes_written);
		}
		lfs_out_end(&o);
	}
	lfs_out_end(&o);
	lfs_out_u64(&o, "protection_period_s", protect);
	lfs_out_u64(&o, "held_bytes", held);
	lfs_out_begin(&o, "checkpoints", ']');
	for (size_t i = 0; i < n; i++) {
		lfs_out_item(&o, "seq", ci[i].seq, true);
		lfs_out_time(&o, "time_ns", ci[i].time_ns);
		lfs_out_bool(&o, "snapshot", ci[i].flags & LFS_CKPT_INFO_SNAPSHOT);
		lfs_out_bool(&o, "current", ci[i].flags & LFS_CKPT_INFO_CURRENT);
		lfs_out_str(&o, "name", ci[i].name);
		lfs_out_u64(&o, "own_bytes", ci[i].own_bytes);
		if (ci[i].flags & LFS_CKPT_INFO_RECEIVED) {
			char u[LFS_UUID_STR];
			lfs_uuid_format(ci[i].src_uuid, u);
			lfs_out_str(&o, "source_uuid", u);
			lfs_out_u64(&o, "source_seq", ci[i].src_seq);
		}
		lfs_out_end(&o);
	}
	lfs_out_end(&o);
	lfs_out_end(&o);
}

/* List both regions of the image at `path` and the checkpoints it
 * keeps; the exit status. */
static int
lfs_ckpt_list(const char *path, const char *mnt, bool json)
{
	struct lfs_bdev dev;
	struct lfs_super sb;
	/* a mounted image's kept checkpoints are asked of its daemon */
	if (lfs_tool_open("lfs-ckpt", path, &(struct lfs_tool_open){ .flags = LFS_OPEN_MOUNTED_OK, .fd = -1 }, &dev,
			  &sb, NULL))
		return 1;
	char where[4096];
	bool busy = !mnt && lfs_image_busy(dev.fd, path, where, sizeof(where));
	if (busy)
		fprintf(stderr, "lfs-ckpt: warning: %s is mounted at %s: the regions may be about to change; "
			"lfs-ckpt -l %s asks the daemon, and lists its kept checkpoints\n", path, where, where);
	struct lfs_ckpt_verdict r[2];
	int newest = lfs_ckpt_judge_both(&dev, &sb, false, r);
	lfs_bdev_close(&dev);
	struct lfs_ckpt_info *ci = NULL;
	size_t n = 0;
	uint64_t held = 0;
	uint32_t protect = 0;
	/* an image no mount accepts has nothing more to show; a mounted
	 * one's daemon holds it */
	int kerr = newest < 0 || busy ? 0 : kept_list(path, mnt, &ci, &n, &held, &protect);
	if (json) {
		print_json(path, mnt, &sb, r, newest, ci, n, held, protect);
	} else {
		/* with mnt, the path is the daemon's word: shown escaped */
		printf("image ");
		lfs_escape_put(stdout, path, LFS_ESC_SHOW);
		if (mnt)
			printf(", mounted at %s", mnt);
		putchar('\n');
		printf("  %-6s %-6s %-8s %-24s %-5s %-12s %-8s %-10s %-8s %-14s %s\n", "REGION", "BLOCK", "SEQ",
		       "TIME", "STATE", "HEAD", "NEXT_SEG", "NEXT_PSEG", "INODES", "WRITTEN", "STATUS");
		for (int i = 0; i < 2; i++) {
			const struct lfs_ckpt_hdr *h = &r[i].h;
			char seq[24] = "-", t[64] = "-", head[48] = "-", nseg[24] = "-", npseg[24] = "-",
			     ino[24] = "-", wr[24] = "-";
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
			printf("%c %-6d %-6" PRIu64 " %-8s %-24s %-5s %-12s %-8s %-10s %-8s %-14s %s\n",
			       newest == i ? '*' : ' ', i, sb.ckpt_addr[i], seq, t, state, head, nseg, npseg, ino, wr,
			       r[i].why);
		}
		if (n) {
			printf("kept checkpoints: protection period %" PRIu32 " s; %" PRIu64
			       " bytes held for them\n", protect, held);
			printf("  %-10s %-24s %-8s %-14s %s\n", "CP", "TIME", "KIND", "OWN_BYTES", "NAME");
			for (size_t i = 0; i < n; i++) {
				char t[64], name[LFS_ESC_LEN(sizeof(ci[i].name))];
				fmt_time(t, sizeof(t), ci[i].time_ns);
				char from[LFS_UUID_STR + 48] = "";
				if (ci[i].flags & LFS_CKPT_INFO_RECEIVED) {
					char u[LFS_UUID_STR];
					lfs_uuid_format(ci[i].src_uuid, u);
					snprintf(from, sizeof(from), "  from %s checkpoint %" PRIu64, u, ci[i].src_seq);
				}
				printf("  %-10" PRIu64 " %-24s %-8s %-14" PRIu64 " %s%s\n", ci[i].seq, t, kind_of(&ci[i]),
				       ci[i].own_bytes, lfs_escape(ci[i].name, LFS_ESC_SHOW, name, sizeof(name)), from);
			}
		}
	}
	free(ci);
	if (newest < 0) {
		fflush(stdout);
		fprintf(stderr, "lfs-ckpt: %s: no valid checkpoint region\n", path);
		return 1;
	}
	return kerr ? 1 : 0;
}

/* Where a view holding checkpoint seq is mounted (LFS_CTL_VIEW_WHO):
 * 0 and the path in `where`, or -errno. */
static int
view_who(struct lfs_ctl_client *cl, uint64_t seq, char where[LFS_CTL_PATH_MAX])
{
	struct lfs_ctl_req req = { .op = LFS_CTL_VIEW_WHO, .arg = { seq } };
	struct lfs_ctl_resp resp;
	size_t got;
	int err = lfs_ctl_call(cl, &req, NULL, 0, &resp, where, LFS_CTL_PATH_MAX, &got);
	/* exactly one NUL, the last byte */
	if (!err && (got < 2 || where[got - 1] != '\0' || strlen(where) != got - 1))
		err = -EPROTO;
	return err;
}

/* One snapshot request to the daemon at mnt; 0 or 1 after a message. */
static int
snap_call(const char *mnt, struct lfs_ctl_req *req, const char *name, const char *what)
{
	struct lfs_ctl_name nm = { { 0 } };
	if (name && strlen(name) >= sizeof(nm.name)) {
		fprintf(stderr, "lfs-ckpt: -n %s: a name is at most %zu bytes\n", name, sizeof(nm.name) - 1);
		return 2;
	}
	if (name)
		snprintf(nm.name, sizeof(nm.name), "%s", name);
	/* the tree as its users see it: what the kernel still holds (pages,
	 * and the times its writeback cache keeps) goes to the daemon first */
	int mfd = req->op == LFS_CTL_SNAP_MAKE ? open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (mfd >= 0) {
		if (syncfs(mfd) < 0)
			fprintf(stderr, "lfs-ckpt: %s: syncfs: %s (the snapshot may miss what was just written)\n",
				mnt, strerror(errno));
		close(mfd);
	}
	struct lfs_ctl_client cl = { -1 };
	int err = lfs_ctl_connect(&cl, mnt);
	if (err) {
		fprintf(stderr, "lfs-ckpt: %s: cannot reach the lfs daemon: %s\n", mnt, lfs_ctl_strerror(err));
		return 1;
	}
	bool named = req->op == LFS_CTL_SNAP_MAKE || req->op == LFS_CTL_SNAP_KEEP;
	req->count = named ? 1 : 0;
	struct lfs_ctl_resp resp;
	err = lfs_ctl_call(&cl, req, named ? &nm : NULL, named ? sizeof(nm) : 0, &resp, NULL, 0, NULL);
	/* a snapshot mounted (lfs -o snapshot=) is not taken from its mount */
	static char where[LFS_CTL_PATH_MAX];
	bool held = err == -EBUSY && req->op != LFS_CTL_SNAP_MAKE;
	int werr = held ? view_who(&cl, req->arg[0], where) : 0;
	lfs_ctl_close(&cl);
	if (held && !werr)
		fprintf(stderr, "lfs-ckpt: %s: %s: checkpoint %" PRIu64 " is mounted at %s (lfs -o snapshot=); "
			"unmount it first\n", mnt, what, req->arg[0], where);
	else if (held)
		fprintf(stderr, "lfs-ckpt: %s: %s: checkpoint %" PRIu64 " is held by a snapshot mount that is going "
			"away (%s); try again\n", mnt, what, req->arg[0], lfs_ctl_strerror(werr));
	if (held)
		return 1;
	if (err) {
		const char *why = err == -EOPNOTSUPP ? "the image has no snapshots (lfs-tune -O snapshots)" :
				  err == -EEXIST	? "another snapshot has that name" :
				  err == -EINVAL	? "not an allowed name (1 to 39 printable bytes, no '/')" :
				  err == -ENOENT	? "no such kept checkpoint (lfs-ckpt -l lists them)" :
							  lfs_ctl_strerror(err);
		fprintf(stderr, "lfs-ckpt: %s: %s: %s\n", mnt, what, why);
		return 1;
	}
	if (req->op == LFS_CTL_SNAP_MAKE)
		printf("%" PRIu64 "\n", resp.val[0]);
	return 0;
}

/* A checkpoint named by number, or (for -d) a snapshot by name. */
static int
resolve_cp(const char *mnt, const char *spec, uint64_t *seq)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(spec, &end, 10);
	if (*spec >= '0' && *spec <= '9' && !*end && !errno) {
		*seq = v;
		return 0;
	}
	struct lfs_ckpt_info *ci;
	size_t n;
	uint64_t held;
	uint32_t protect;
	if (kept_list(NULL, mnt, &ci, &n, &held, &protect))
		return 1;
	int ret = 1;
	for (size_t i = 0; i < n; i++)
		if ((ci[i].flags & LFS_CKPT_INFO_SNAPSHOT) && !strcmp(ci[i].name, spec)) {
			*seq = ci[i].seq;
			ret = 0;
		}
	free(ci);
	if (ret)
		fprintf(stderr, "lfs-ckpt: %s: no snapshot called '%s' (lfs-ckpt -l lists them)\n", mnt, spec);
	return ret;
}

int
main(int argc, char **argv)
{
	bool list = false, force = false, json = false, make = false;
	const char *shut = NULL, *name = NULL, *keep = NULL, *unkeep = NULL, *del = NULL;
	static const struct lfs_tool tool = { "lfs-ckpt", usage, 2 };
	static const struct option longopts[] = { LFS_TOOL_LONGOPTS, { "json", no_argument, NULL, 'j' },
						  { NULL, 0, NULL, 0 } };
	int c;
	while ((c = getopt_long(argc, argv, "lcjsn:k:u:d:S:" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1) {
		switch (c) {
		case 'l': list = true; break;
		case 'S': shut = optarg; break;
		case 'c': force = true; break;
		case 'j': json = list = true; break;
		case 's': make = true; break;
		case 'n': name = optarg; break;
		case 'k': keep = optarg; break;
		case 'u': unkeep = optarg; break;
		case 'd': del = optarg; break;
		default: return lfs_tool_opt(&tool, c);
		}
	}
	if (optind != argc - 1)
		return lfs_tool_usage_error(&tool);
	const char *arg = argv[optind];
	if (shut)
		return lfs_ckpt_shutdown(arg, shut);
	int verbs = make + !!keep + !!unkeep + !!del;
	if (verbs > 1 || (verbs && (force || list)) || (name && !make && !keep)) {
		fprintf(stderr, "lfs-ckpt: one of -s, -k, -u, -d at a time, alone (-n goes with -s or -k)\n");
		return 2;
	}
	struct stat st;
	if (stat(arg, &st) < 0) {
		fprintf(stderr, "lfs-ckpt: %s: %s\n", arg, strerror(errno));
		return 1;
	}
	bool mounted = S_ISDIR(st.st_mode);
	if ((force || verbs) && !mounted) {
		fprintf(stderr, "lfs-ckpt: %s: -%c needs the mountpoint of a mounted lfs\n", arg,
			force ? 'c' : make ? 's' : keep ? 'k' : unkeep ? 'u' : 'd');
		return 2;
	}
	if (verbs) {
		struct lfs_ctl_req req = { .op = 0 };
		const char *cp = keep ? keep : unkeep ? unkeep : del;
		uint64_t seq = 0;
		if (cp && resolve_cp(arg, cp, &seq))
			return 1;
		req.arg[0] = seq;
		if (make) {
			req.op = LFS_CTL_SNAP_MAKE;
			return snap_call(arg, &req, name, "making a snapshot");
		}
		if (keep || unkeep) {
			req.op = LFS_CTL_SNAP_KEEP;
			req.arg[1] = keep != NULL;
			return snap_call(arg, &req, name, keep ? "keeping it as a snapshot" : "letting it go");
		}
		req.op = LFS_CTL_SNAP_DELETE;
		return snap_call(arg, &req, NULL, "deleting it");
	}
	if (force && lfs_ckpt_force(arg))
		return 1;
	if (force && !list)
		return 0;
	if (!mounted)
		return lfs_ckpt_list(arg, NULL, json);
	char path[LFS_CTL_PATH_MAX];
	if (lfs_ckpt_image_of(arg, path))
		return 1;
	return lfs_ckpt_list(path, arg, json);
}
