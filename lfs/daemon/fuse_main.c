/*
 * fuse_main.c — layer 7: the lfs daemon's main program: its options,
 * the mount, and the helpers it runs beside the operations (fuse_ops.c).
 *
 * The session loop runs a few threads: the core serializes
 * on one lock, but fetching and answering requests overlaps with it.  A
 * tick thread runs the flush and checkpoint timers.
 *
 *   lfs [-f] [-o OPTIONS] IMAGE MOUNTPOINT
 */
#define FUSE_USE_VERSION 34
#include "fuse_daemon.h"
#include "format.h"
#include "loopdev.h"
#include "text.h"
#include "fuse_snapshot.h"
#include "tool.h"
#include "lfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *
ticker(void *arg)
{
	struct lfs_daemon *d = arg;
	for (unsigned n = 0; !d->stop; n++) {
		usleep(200 * 1000);
		if (!d->stop)
			lfs_tick(d->fs);
		/* the kernel keeps the bound as a share of a dirty limit that
		 * follows free memory */
		if (d->writeback && n % 25 == 0)
			lfs_set_cache_headroom(d->fs, lfs_fuse_cache_headroom(&d->cache, d->usable));
	}
	return NULL;
}

static void *
reclaimer(void *arg)
{
	lfs_reclaim_serve(arg);
	return NULL;
}

struct cmdline {
	char *image;
	char *mountpoint;
	int foreground;
	int show_help;
	int show_version;
	unsigned ckpt_interval;
	unsigned ckpt_segs;
	unsigned flush_ms;
	unsigned dirty_mb;
	char *trace;
	char *cache;                /* -o cache=SIZE */
	char *fault;
	int no_cleaner;
	char *cleaner_conf;
	double timeout;             /* -o cache_timeout; NAN: not given */
	double entry_timeout;       /* -o entry_timeout; NAN: not given */
	int ro;
	int ro_given;               /* ro or rw named: the last counts */
	unsigned max_ratio;
	int writethrough;
	int writeback;              /* the cache even where it is not bounded */
	int noacl;
	int noblkdev;
	int discard;                /* -o discard, -o nodiscard: the last counts */
	char *log;
	int verbose;                /* -o verbose: the debug lines too */
	char *snapshot;             /* -o snapshot=NAME|NUMBER */
	char *cp;                   /* -o cp=NUMBER, as NILFS names it */
	/* the standard mount options lfs honours itself (opt_proc) */
	enum lfs_atime atime;
	int nodiratime;
	int sync, dirsync;
	int uring;                  /* -o uring 1, -o nouring 0: the last counts; -1 neither */
};

#define OPT(t, p) { t, offsetof(struct cmdline, p), 1 }
static const struct fuse_opt lfs_fuse_opts[] = {
	OPT("ckpt_interval=%u", ckpt_interval),
	OPT("ckpt_segs=%u", ckpt_segs),
	OPT("flush_ms=%u", flush_ms),
	OPT("dirty_mb=%u", dirty_mb),
	OPT("cache=%s", cache),
	OPT("trace=%s", trace),
	OPT("fault=%s", fault),
	OPT("nocleaner", no_cleaner),
	OPT("cleaner_conf=%s", cleaner_conf),
	OPT("cache_timeout=%lf", timeout),
	OPT("entry_timeout=%lf", entry_timeout),
	OPT("max_ratio=%u", max_ratio),
	OPT("writethrough", writethrough),
	OPT("writeback", writeback),
	OPT("noacl", noacl),
	OPT("noblkdev", noblkdev),
	OPT("discard", discard),
	{ "nodiscard", offsetof(struct cmdline, discard), 0 },
	OPT("log=%s", log),
	OPT("verbose", verbose),
	OPT("snapshot=%s", snapshot),
	OPT("cp=%s", cp),
	{ "uring", offsetof(struct cmdline, uring), 1 },
	{ "nouring", offsetof(struct cmdline, uring), 0 },
	OPT("-f", foreground),
	OPT("-h", show_help),
	OPT("--help", show_help),
	OPT("-V", show_version),
	OPT("--version", show_version),
	FUSE_OPT_END
};

static int
opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct cmdline *c = data;
	(void)outargs;
	if (key == FUSE_OPT_KEY_NONOPT) {
		if (!c->image) {
			c->image = realpath(arg, NULL);
			if (!c->image) {
				fprintf(stderr, "lfs: %s: %s\n", arg, strerror(errno));
				return -1;
			}
			return 0;
		}
		if (!c->mountpoint) {
			/* /dev/fd/N: a /dev/fuse descriptor its opener has
			 * mounted already (mount.fuse3 -o drop_privileges);
			 * libfuse takes it as it stands */
			unsigned n;
			char end;
			c->mountpoint = sscanf(arg, "/dev/fd/%u%c", &n, &end) == 1 ? strdup(arg) : realpath(arg, NULL);
			if (!c->mountpoint) {
				fprintf(stderr, "lfs: %s: %s\n", arg, strerror(errno));
				return -1;
			}
			return 0;
		}
		fprintf(stderr, "lfs: unexpected argument '%s'\n", arg);
		return -1;
	}
	if (key != FUSE_OPT_KEY_OPT)
		return 1;
	/* mount(8)'s standard options: libfuse knows some (it passes them
	 * to the kernel as mount flags: 1 keeps them), the rest are lfs's
	 * alone (0 drops them).  The kernel leaves atime to a FUSE daemon,
	 * and fsyncs data writes itself on a sync mount. */
	static const struct { const char *name; int keep; } std[] = {
		{ "ro", 1 }, { "rw", 1 }, { "atime", 1 }, { "noatime", 1 }, { "relatime", 0 },
		{ "strictatime", 0 }, { "nodiratime", 0 }, { "diratime", 0 }, { "lazytime", 0 },
		{ "nolazytime", 0 }, { "sync", 1 }, { "async", 1 }, { "dirsync", 1 },
	};
	for (size_t i = 0; i < sizeof(std) / sizeof(std[0]); i++) {
		if (strcmp(arg, std[i].name) != 0)
			continue;
		if (strcmp(arg, "ro") == 0 || strcmp(arg, "rw") == 0)
			c->ro = arg[1] == 'o', c->ro_given = 1;
		else if (strcmp(arg, "noatime") == 0)
			c->atime = LFS_ATIME_NOATIME;
		else if (strcmp(arg, "atime") == 0 || strcmp(arg, "relatime") == 0)
			c->atime = LFS_ATIME_RELATIME; /* "atime": Linux's default meaning since 2.6.30 */
		else if (strcmp(arg, "strictatime") == 0)
			c->atime = LFS_ATIME_STRICT;
		else if (strcmp(arg, "nodiratime") == 0 || strcmp(arg, "diratime") == 0)
			c->nodiratime = arg[0] == 'n';
		else if (strcmp(arg, "sync") == 0 || strcmp(arg, "async") == 0)
			c->sync = arg[0] == 's';
		else if (strcmp(arg, "dirsync") == 0)
			c->dirsync = 1;
		/* lazytime: atime updates stay in memory until the next flush
		 * anyway; nothing to change */
		return std[i].keep;
	}
	if (strcmp(arg, "remount") == 0 || strncmp(arg, "remount,", 8) == 0) {
		fprintf(stderr, "lfs: -o remount: a mounted lfs is switched by mount -o remount through "
			"mount.fuse.lfs(8), or by lfs-clean --ro|--rw MOUNTPOINT; this would start a second daemon\n");
		return -1;
	}
	return 1;
}

/* The image lock covers the image's own name; a mount of it through a
 * loop device (the one lfs attached, or another), or of the loop device
 * through the image, is found in the mount table instead (mounted.c):
 * refused at once, before a second daemon recovers a live image. */
static bool
refuse_mounted(const char *image)
{
	struct lfs_in_use u;
	if (lfs_in_use(image, &u) != 0 || u.how != LFS_IN_USE_MOUNTED)
		return false;
	fprintf(stderr, "lfs: cannot mount %s: it is already mounted at %s (%s); unmount it first\n", image,
		u.where, u.fstype);
	return true;
}

/* cp=N is snapshot=N for NILFS's users; either mounts read-only, and
 * a view asked to be written is refused rather than quietly read-only. */
static int
view_options(struct cmdline *c)
{
	if (c->cp) {
		char *end;
		errno = 0;
		unsigned long long n = strtoull(c->cp, &end, 10);
		if (errno || end == c->cp || *end || !n || (c->snapshot && strcmp(c->snapshot, c->cp) != 0)) {
			char shown[LFS_ESC_LEN(256)];
			fprintf(stderr, "lfs: -o cp=%s: not a checkpoint number%s\n",
				lfs_escape(c->cp, LFS_ESC_SHOW, shown, sizeof(shown)),
				c->snapshot ? ", the same as snapshot= if both are given" : "");
			return -1;
		}
		if (!c->snapshot)
			c->snapshot = strdup(c->cp);
		if (!c->snapshot)
			return -1;
	}
	if (c->snapshot && c->ro_given && !c->ro) {
		char shown[LFS_ESC_LEN(256)];
		fprintf(stderr, "lfs: a snapshot or kept checkpoint mounts read-only: -o %s=%s cannot be "
			"mounted rw (leave rw out, or give ro)\n", c->cp ? "cp" : "snapshot",
			lfs_escape(c->snapshot, LFS_ESC_SHOW, shown, sizeof(shown)));
		return -1;
	}
	return 0;
}

static void
cmdline_free(struct cmdline *c, struct fuse_args *args)
{
	fuse_opt_free_args(args);
	free(c->image);
	free(c->mountpoint);
	free(c->trace);
	free(c->cache);
	free(c->fault);
	free(c->cleaner_conf);
	free(c->log);
	free(c->snapshot);
	free(c->cp);
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: lfs [-f] [-o OPTIONS] IMAGE MOUNTPOINT\n\n"
	       "lfs options (see lfs(8)):\n"
	       "    -o ckpt_interval=N   checkpoint every N seconds (default 30, 0 = off)\n"
	       "    -o ckpt_segs=M       checkpoint after M segments written (default 32, 0 = off)\n"
	       "    -o flush_ms=N        write buffered data to the log every N ms (default 5000)\n"
	       "    -o dirty_mb=N        flush when N MiB are buffered (default 64)\n"
	       "    -o cache=SIZE        inode cache budget, K/M/G suffix (default 32M, 0 = no limit)\n"
	       "    -o nocleaner         do not start lfs_cleanerd\n"
	       "    -o cleaner_conf=F    config file for lfs_cleanerd\n"
	       "    -o cache_timeout=S   kernel attribute cache time (default 1.0)\n"
	       "    -o entry_timeout=S   kernel name and negative lookup cache time\n"
	       "                         (default: cache_timeout if given, else 600)\n"
	       "    -o max_ratio=N       share of the dirty page cache the mount may use, %% (default 40)\n"
	       "    -o log=FILE          append messages to FILE (default: stderr with -f; else\n"
	       "                         syslog, or /var/log/lfs.log or ~/.lfs.log without one)\n"
	       "    -o verbose           log the details too (what recovery counted)\n"
	       "    -o noblkdev          plain FUSE mount, not fuseblk over a loop device (root):\n"
	       "                         sync(1) and umount then do not wait for the daemon\n"
	       "    -o writethrough      every write() reaches the daemon: a full filesystem fails\n"
	       "                         it with ENOSPC at write(), not at fsync or close\n"
	       "    -o writeback         the kernel's writeback cache even where lfs cannot keep\n"
	       "                         room for all it may hold (default: write through there)\n"
	       "    -o noacl             no POSIX ACLs (the kernel checks the mode bits alone)\n"
	       "    -o discard           give segments back to the storage as they become clean\n"
	       "                         (holes in an image file)\n"
	       "    -o nodiscard         do not (default): fstrim(8) gives them back\n"
	       "    -o snapshot=NAME     mount a snapshot or kept checkpoint (lfs-ckpt), read-only\n"
	       "    -o cp=N              mount kept checkpoint N, as snapshot=N (NILFS's name)\n"
	       "    -o uring             take the kernel's requests over io_uring where the kernel\n"
	       "                         offers it (the fuse module's enable_uring)\n"
	       "    -o nouring           take them over /dev/fuse (default)\n"
	       "    -o trace=FILE        record every block write and flush (crash tests)\n"
	       "    -o fault=OP:N:ERR    make the Nth pread/pwrite/fdatasync/alloc/discard fail\n"
	       "    -o relatime, atime, strictatime, noatime, nodiratime, diratime, lazytime, nolazytime\n"
	       "                         when reads update atime (default relatime)\n"
	       "    -o sync, dirsync, async  changes on disk before the reply (default async)\n"
	       "    -f                   stay in the foreground\n"
	       "    -h, --help           print this text\n"
	       "    -V, --version        print the version\n"
	       "and the generic FUSE mount options (ro, allow_other, ...).\n");
}

/* The cleaner: where make install put it, or the program LFS_CLEANERD
 * names (a build tree's, for the tests).  Never one found by a search
 * (PATH, or beside this program): a daemon run by root would run as
 * root whatever a user put there.  NULL after a message if the variable
 * is not an absolute path. */
static const char *
cleaner_path(char *buf, size_t len)
{
	const char *env = getenv(LFS_CLEANERD_ENV);
	if (env && env[0] != '/') {
		fprintf(stderr, "lfs: %s=%s: not an absolute path\n", LFS_CLEANERD_ENV, env);
		return NULL;
	}
	snprintf(buf, len, "%s", env ? env : LFS_SBINDIR "/lfs_cleanerd");
	return buf;
}

/* Where messages go once detached: -o log=FILE; else syslog if the host
 * has one; else a file named now, on standard error, while it is seen. */
static int
choose_log(struct cmdline *c)
{
	char path[PATH_MAX];
	if (c->log) {
		snprintf(path, sizeof(path), "%s", c->log);
	} else if (c->foreground) {
		return 0;
	} else if (lfs_log_syslog_present()) {
		lfs_log_use_syslog(true);
		setenv("LFS_LOG", "syslog", 1); /* for the cleaner */
		return 0;
	} else if (getuid() == 0) {
		snprintf(path, sizeof(path), "/var/log/lfs.log");
	} else {
		const char *home = getenv("HOME");
		snprintf(path, sizeof(path), "%s/.lfs.log", home ? home : "/tmp");
	}
	int err = lfs_log_to_file(path);
	if (err) {
		fprintf(stderr, "lfs: log file %s: %s\n", path, strerror(-err));
		return err;
	}
	if (!c->log)
		fprintf(stderr, "lfs: no syslog on this host: messages go to %s\n", path);
	setenv("LFS_LOG", "stamp", 1); /* the cleaner's lines, as this file's */
	return 0;
}

/* The -o options as given, for the line at mount. */
static void
given_options(int argc, char *argv[], char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 1; i < argc && n < len; i++) {
		const char *o = strcmp(argv[i], "-o") == 0 && i + 1 < argc ? argv[++i] :
				strncmp(argv[i], "-o", 2) == 0 ? argv[i] + 2 : NULL;
		if (o) {
			int w = snprintf(buf + n, len - n, "%s%s", n ? "," : "", o);
			n = w < 0 ? len : n + (size_t)w;
		}
	}
}

/* The line an administrator looks for: what was mounted, where, how,
 * how long it took, and whether the last unmount was clean. */
static void
log_mounted(const struct cmdline *c, struct lfs_fs *fs, const char *opts, uint64_t t0)
{
	const char *how = c->snapshot ? "snapshot, read-only" : c->ro ? "read-only" : "read-write";
	const char *state = c->snapshot ? "" :
			    !lfs_needs_recovery(fs) ? "; the last unmount was clean" :
			    c->ro ? "; the last mount did not end cleanly: recovered in memory, the image is unchanged" :
				    "; the last mount did not end cleanly: recovered";
	lfs_log("mounted at %s (%s%s%s) in %.0f ms%s", c->mountpoint, how, opts[0] ? ", -o " : "", opts,
		(double)(lfs_daemon_now_ns() - t0) / 1e6, state);
}

/* The kernel's bound on the mount's cached writes, and the room kept for
 * them; before FUSE_INIT, which asks for the writeback cache or not. */
static void
setup_cache(struct lfs_daemon *d, const struct cmdline *c)
{
	struct statvfs sv;
	if (lfs_statfs(d->fs, &sv) == 0)
		d->usable = (uint64_t)sv.f_blocks * sv.f_frsize;
	lfs_fuse_cache_setup(&d->cache, c->mountpoint, d->usable, c->max_ratio);
	/* cached writes beyond the room kept for them could be lost at
	 * writeback: such a mount writes through unless told (lfs(8)); a
	 * read-only one too, as it may be remounted read-write */
	if (d->writeback && !c->writeback && !lfs_fuse_cache_bounded(&d->cache, d->usable)) {
		d->writeback = false;
		lfs_log("cache: so writes to %s go through to the daemon; -o writeback buffers them anyway, "
			"and a full filesystem may then fail writes only at fsync or close", c->mountpoint);
	}
}

/* The command line read and checked, and the cleaner's path found: -1
 * to go on and mount, else the exit status (0 after --help or
 * --version). */
static int
read_cmdline(struct cmdline *c, struct fuse_args *args, char *cleaner, size_t cleaner_len)
{
	if (fuse_opt_parse(args, c, lfs_fuse_opts, opt_proc) == -1)
		return 2;
	lfs_log_set_debug(c->verbose);
	if (c->show_help || c->show_version) {
		if (c->show_help)
			usage(stdout);
		else
			lfs_tool_version("lfs");
		return 0;
	}
	if (!c->image || !c->mountpoint) {
		usage(stderr);
		return 2;
	}
	if (c->cleaner_conf) {
		/* the daemon changes directory to / when it detaches */
		char *abs = realpath(c->cleaner_conf, NULL);
		if (!abs) {
			fprintf(stderr, "lfs: cleaner_conf %s: %s\n", c->cleaner_conf, strerror(errno));
			return 2;
		}
		free(c->cleaner_conf);
		c->cleaner_conf = abs;
	}
	if (!cleaner_path(cleaner, cleaner_len) || view_options(c))
		return 2;
	if (c->snapshot && !c->ro) {
		/* a snapshot is read-only: the kernel is told so too */
		c->ro = 1;
		fuse_opt_add_arg(args, "-oro");
	}
	return -1;
}

/* -o uring or -o nouring, else LFS_URING (on, off), else 0 and c->uring
 * left at -1: io_uring where the kernel offers it.  -1 after a message. */
static int
uring_option(struct cmdline *c)
{
	const char *env = getenv("LFS_URING");
	if (c->uring >= 0 || !env || !*env)
		return 0;
	if (strcmp(env, "on") != 0 && strcmp(env, "off") != 0) {
		char shown[LFS_ESC_LEN(64)];
		fprintf(stderr, "lfs: LFS_URING=%s: on or off\n", lfs_escape(env, LFS_ESC_SHOW, shown, sizeof(shown)));
		return -1;
	}
	c->uring = env[1] == 'n';
	return 0;
}

/* The kernel's cache times: attributes 1 s, so that a writer near a full
 * filesystem is asked again soon (op_getattr); names and negative lookups
 * longer, since only this daemon changes the tree and a name the kernel
 * must look up again costs a request, in the middle of every create that
 * a stat or open of the same name preceded.  cache_timeout alone sets
 * both, as it always did.  -1 after a message. */
static int
cache_times(struct cmdline *c)
{
	if (isnan(c->entry_timeout))
		c->entry_timeout = isnan(c->timeout) ? LFS_ENTRY_TIMEOUT : c->timeout;
	if (isnan(c->timeout))
		c->timeout = LFS_ATTR_TIMEOUT;
	/* the kernel keeps the times in whole seconds: a day is plenty */
	if (!(c->timeout >= 0 && c->timeout <= 86400 && c->entry_timeout >= 0 && c->entry_timeout <= 86400)) {
		fprintf(stderr, "lfs: cache_timeout and entry_timeout: 0 to 86400 seconds\n");
		return -1;
	}
	return 0;
}

/* The library's options from the command line's; -1 after a message. */
static int
mount_options(const struct cmdline *c, struct lfs_opts *o)
{
	lfs_opts_default(o);
	if (c->ckpt_interval != UINT_MAX)
		o->ckpt_interval_s = c->ckpt_interval;
	if (c->ckpt_segs != UINT_MAX)
		o->ckpt_segs = c->ckpt_segs;
	if (c->flush_ms != UINT_MAX)
		o->flush_interval_ms = c->flush_ms ? c->flush_ms : 1;
	if (c->dirty_mb != UINT_MAX)
		o->dirty_limit = c->dirty_mb ? (uint64_t)c->dirty_mb << 20 : 1;
	if (c->cache && lfs_parse_size(c->cache, &o->cache_bytes)) {
		fprintf(stderr, "lfs: cache=%s: not a size (a number, with K, M, G or T)\n", c->cache);
		return -1;
	}
	o->trace_path = c->trace;
	o->fault = c->fault ? c->fault : getenv("LFS_FAULT");
	o->readonly = c->ro;
	/* mount -o remount,rw makes a -o ro mount writable, as ext4's;
	 * a snapshot stays read-only */
	o->upgradable = c->ro && !c->snapshot;
	o->snapshot = c->snapshot;
	o->hold_lock = true; /* one daemon per image, read-only or not */
	o->atime = c->atime;
	o->nodiratime = c->nodiratime;
	o->sync = c->sync;
	o->dirsync = c->dirsync;
	o->discard = c->discard;
	return 0;
}

/* libfuse judges its options only when the session is made: a bad one
 * must be refused before the image is opened or recovered. */
static bool
fuse_options_valid(const struct fuse_args *args)
{
	struct fuse_args probe = FUSE_ARGS_INIT(0, NULL);
	for (int i = 0; i < args->argc; i++)
		fuse_opt_add_arg(&probe, args->argv[i]);
	struct fuse_session *check = fuse_session_new(&probe, &lfs_fuse_ops, sizeof(lfs_fuse_ops), NULL);
	fuse_opt_free_args(&probe);
	if (!check) {
		fprintf(stderr, "lfs: bad mount options; nothing was mounted\n");
		return false;
	}
	fuse_session_destroy(check);
	return true;
}

/* The filesystem behind the mount: the image's, or, for a snapshot of a
 * mounted image, a view read through its daemon.  0, or the exit
 * status after a message. */
static int
open_fs(const struct cmdline *c, const struct lfs_opts *o, struct lfs_daemon *d, struct lfs_remote **remote)
{
	char live_mnt[PATH_MAX];
	int err = c->snapshot && lfs_image_mounted_at(c->image, live_mnt, sizeof(live_mnt)) ?
			  lfs_remote_view(c->image, live_mnt, c->snapshot, c->mountpoint, remote, &d->fs) :
			  lfs_mount(c->image, o, &d->fs);
	if (!err)
		return 0;
	char shown[LFS_ESC_LEN(LFS_HIST_NAME_MAX + 1)];
	lfs_log_release(true);
	fprintf(stderr, "lfs: cannot mount %s%s%s: %s\n", c->image, c->snapshot ? ", snapshot " : "",
		c->snapshot ? lfs_escape(c->snapshot, LFS_ESC_SHOW, shown, sizeof(shown)) : "", strerror(-err));
	return 1;
}

/* As root, mount fuseblk: the kernel then passes sync(1) and syncfs(2)
 * on (FUSE_SYNCFS) and umount(2) waits for FUSE_DESTROY.  An image file
 * gets a loop device as the mount's source, whose descriptor is
 * returned (-1 if none) for the caller to close once mounted.  A
 * snapshot's mount is not the image's: no loop device (which would make
 * it look like the image's mount to the tools and to the next snapshot
 * mount) and its own name. */
static int
kernel_mount_args(const struct cmdline *c, struct fuse_args *args)
{
	char source[PATH_MAX] = "";
	int loop_fd = -1;
	struct stat ist;
	if (getuid() == 0 && !c->noblkdev && !c->snapshot && stat(c->image, &ist) == 0) {
		if (S_ISBLK(ist.st_mode)) {
			snprintf(source, sizeof(source), "%s", c->image);
		} else if ((loop_fd = lfs_loop_attach(c->image, source, sizeof(source))) < 0) {
			lfs_log("no loop device for %s (%s): a plain FUSE mount, which sync(1) and "
				"umount do not wait for", c->image, strerror(-loop_fd));
			source[0] = '\0';
		}
	}
	char fsname[2 * PATH_MAX + 16];
	if (c->snapshot)
		snprintf(fsname, sizeof(fsname), "-ofsname=%s@%s", c->image, c->snapshot);
	else
		snprintf(fsname, sizeof(fsname), "-ofsname=%s", source[0] ? source : c->image);
	fuse_opt_add_arg(args, fsname);
	if (source[0])
		fuse_opt_add_arg(args, "-oblkdev");
	fuse_opt_add_arg(args, "-osubtype=lfs");
	fuse_opt_add_arg(args, "-odefault_permissions");
	if (getuid() == 0)
		fuse_opt_add_arg(args, "-oallow_other");
	return loop_fd;
}

/* The kernel forgets name in the root, and every unused name it has
 * under it (lfs_ctl_kernel): their inodes' last lookups come back as
 * FORGETs. */
static void
forget_name(void *ctx, const char *name)
{
	struct lfs_daemon *d = ctx;
	int err = fuse_lowlevel_notify_inval_entry(d->se, FUSE_ROOT_ID, name, strlen(name));
	if (err && err != -ENOENT)
		lfs_log("asking the kernel to forget %s: %s", name, strerror(-err));
}

/* The helpers beside the request loop: the tick and reclaim threads,
 * the control socket and the supervised cleaner.  The reclaimer takes
 * the requests refused room, which wait for its rounds instead of
 * cleaning; a -o ro mount may become writable, a snapshot may not.
 * True if the reclaimer runs. */
static bool
start_helpers(struct lfs_daemon *d, const struct cmdline *c, const char *cleaner, bool counted)
{
	pthread_create(&d->ticker, NULL, ticker, d);
	bool writable = !c->snapshot;
	bool reclaiming = writable && pthread_create(&d->reclaimer, NULL, reclaimer, d->fs) == 0;
	struct lfs_ctl_server *ctl = NULL;
	int err = c->snapshot ? 0 : lfs_ctl_server_start(d->fs, c->image, &ctl);
	if (err)
		lfs_log("control socket for %s: %s (no cleaner, no lfs-ckpt)", c->mountpoint, strerror(-err));
	d->ctl = ctl;
	if (ctl) {
		struct lfs_ctl_kernel k = { d, forget_name };
		lfs_ctl_server_set_kernel(ctl, &k);
	}
	if (ctl && counted) {
		struct lfs_ctl_requests rq = { &d->io, lfs_daemon_requests };
		lfs_ctl_server_set_requests(ctl, &rq);
	}
	/* supervised: restarted when it dies, started and stopped by
	 * lfs-clean; on a read-only mount it waits, suspended, for
	 * mount -o remount,rw */
	if (!err && writable &&
	    (err = lfs_supervisor_start(ctl, cleaner, c->mountpoint, c->cleaner_conf, !c->no_cleaner, &d->sup)))
		lfs_log("cannot supervise a cleaner: %s", strerror(-err));
	return reclaiming;
}

/* unless DESTROY stopped them */
static void
stop_helpers(struct lfs_daemon *d, bool reclaiming)
{
	lfs_supervisor_stop(d->sup);
	lfs_supervisor_free(d->sup);
	d->sup = NULL;
	lfs_ctl_server_stop(d->ctl);
	d->ctl = NULL;
	d->stop = 1;
	pthread_join(d->ticker, NULL);
	if (reclaiming) {
		lfs_reclaim_stop(d->fs);
		pthread_join(d->reclaimer, NULL);
	}
}

/* Mount, serve the requests until unmounted, and stop: the exit status. */
static int
serve(struct lfs_daemon *d, struct cmdline *c, struct fuse_args *args, const char *cleaner,
      const char *opts_given, uint64_t t0)
{
	int loop_fd = kernel_mount_args(c, args);
	struct fuse_session *se = fuse_session_new(args, &lfs_fuse_ops, sizeof(lfs_fuse_ops), d);
	d->se = se;
	d->mountpoint = c->mountpoint;
	int ret = 1;
	if (!se)
		goto out_loop;
	if (fuse_set_signal_handlers(se))
		goto out_se;
	int mounted = fuse_session_mount(se, c->mountpoint);
	/* the mount holds the loop device now, or it never will */
	if (loop_fd >= 0)
		close(loop_fd);
	loop_fd = -1;
	if (mounted)
		goto out_sig;
	d->io.syncfs = lfs_daemon_syncfs;
	d->io.ctx = d->fs;
	d->io.uring = c->uring < 0 ? LFS_URING_AUTO : c->uring ? LFS_URING_ON : LFS_URING_OFF;
	int err = lfs_fuse_io_attach(se, &d->io);
	bool counted = !err;        /* the requests are counted where they are read */
	if (err)
		lfs_log("fuse: own request handling unavailable (%s): the kernel will ask for "
			"security.capability before every write, and no request is counted",
			strerror(err < 0 ? -err : err));
	setup_cache(d, c);
	lfs_log_release(false);
	fuse_daemonize(c->foreground);
	/* threads do not survive the fork that detaches */
	if (counted)
		lfs_fuse_io_start_ring(&d->io);
	log_mounted(c, d->fs, opts_given, t0);
	d->mounted_ns = lfs_daemon_now_ns();
	/* the cleaner, started with -f, writes to our standard error */
	if (lfs_log_fd() >= 0)
		dup2(lfs_log_fd(), STDERR_FILENO);
	bool reclaiming = start_helpers(d, c, cleaner, counted);
	/* several threads: one can be in the kernel fetching or answering
	 * requests while another holds the filesystem lock */
	struct fuse_loop_config lc = { .clone_fd = 0, .max_idle_threads = 4 };
	ret = fuse_session_loop_mt(se, &lc) ? 1 : 0;
	/* the ring's threads serve requests too: they end before the
	 * filesystem does */
	lfs_fuse_io_detach(&d->io);
	stop_helpers(d, reclaiming);
	fuse_session_unmount(se);
out_sig:
	fuse_remove_signal_handlers(se);
out_se:
	fuse_session_destroy(se);
out_loop:
	if (loop_fd >= 0)
		close(loop_fd);
	return ret;
}

int
main(int argc, char *argv[])
{
	/* One malloc heap for all threads: a heap per FUSE thread stays as
	 * large as its peak and is faulted in anew, which multiplies the
	 * resident memory and slows writes.  Most of the work is under the
	 * filesystem's lock anyway. */
	mallopt(M_ARENA_MAX, 1);
	uint64_t t0 = lfs_daemon_now_ns();
	char opts_given[1024];
	given_options(argc, argv, opts_given, sizeof(opts_given));
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct cmdline c = { .timeout = NAN, .entry_timeout = NAN, .ckpt_interval = UINT_MAX, .ckpt_segs = UINT_MAX,
			   .flush_ms = UINT_MAX, .dirty_mb = UINT_MAX, .max_ratio = UINT_MAX, .uring = -1 };
	char cleaner[PATH_MAX];
	struct lfs_opts o;
	int ret = read_cmdline(&c, &args, cleaner, sizeof(cleaner));
	if (ret < 0 && (mount_options(&c, &o) || uring_option(&c) || cache_times(&c) || !fuse_options_valid(&args)))
		ret = 2;
	/* a /dev/fd/N mount point was mounted by its opener: the table
	 * shows that mount already */
	if (ret < 0 && !c.snapshot && strncmp(c.mountpoint, "/dev/fd/", 8) != 0 && refuse_mounted(c.image))
		ret = 1;
	if (ret >= 0) {
		cmdline_free(&c, &args);
		return ret;
	}
	/* The log is chosen before the image is opened: what the mount
	 * says (recovery, the cache's bound) goes there, not to the
	 * caller's standard error, which sees it only if the mount fails.
	 * Each line of the file or syslog names the image. */
	char name[PATH_MAX + LFS_HIST_NAME_MAX + 2];
	snprintf(name, sizeof(name), "%s%s%s", c.image, c.snapshot ? "@" : "", c.snapshot ? c.snapshot : "");
	lfs_log_set_name(name);
	if (choose_log(&c)) {
		cmdline_free(&c, &args);
		return 1;
	}
	lfs_log_hold();
	struct lfs_daemon d = { .timeout = c.timeout, .entry_timeout = c.entry_timeout,
				.writeback = !c.writethrough, .acl = !c.noacl,
				.flush_past_eof = PTHREAD_MUTEX_INITIALIZER };
	lfs_fuse_cache_init(&d.cache);
	struct lfs_remote *remote = NULL;
	ret = open_fs(&c, &o, &d, &remote);
	if (ret) {
		lfs_fuse_cache_free(&d.cache);
		cmdline_free(&c, &args);
		return ret;
	}
	ret = serve(&d, &c, &args, cleaner, opts_given, t0);
	lfs_log_release(true); /* unless the mount was made */
	bool ro = lfs_is_readonly(d.fs);
	int err = lfs_unmount(d.fs);
	if (err)
		ret = 1;
	lfs_daemon_log_unmount(&d, err, ro); /* unless DESTROY did */
	lfs_remote_free(remote);
	lfs_fuse_cache_free(&d.cache);
	cmdline_free(&c, &args);
	return ret;
}
