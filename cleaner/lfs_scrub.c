/*
 * lfs_scrub.c — lfs-scrub: read every block of a mounted lfs in use
 * against its checksum and name the damaged files (lfs-scrub(8)).
 *
 *   lfs-scrub [-j] [-r MIB] [-p] [-n SEGS] [-s FILE] [--resume] MOUNTPOINT
 *
 * The reading is done here, from the image opened read-only (scrub.h),
 * on another core than the daemon's; the daemon is asked only about the
 * blocks that fail, and a path for each damaged inode is found by walking
 * the mount.  Where the scan is stays in a state file, keyed by the
 * filesystem's UUID, so that a scrub stopped (a signal, -n, an unmount)
 * goes on with --resume, after a remount too.
 */
#include "cleaner.h"
#include "out.h"
#include "scrub.h"
#include "tool.h"

#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* exit status bits (lfs-scrub(8)) */
#define ST_DAMAGE 1
#define ST_USAGE 2
#define ST_PAUSED 4
#define ST_ERROR 8

static volatile sig_atomic_t got_stop;
static void on_stop(int sig) { (void)sig; got_stop = 1; }

static void
usage(FILE *f)
{
	fprintf(f, "usage: lfs-scrub [-j] [-r MIB] [-p] [-n SEGMENTS] [-s FILE] [--resume] MOUNTPOINT\n"
		   "  -j, --json              print the report as one JSON object\n"
		   "  -r, --rate MIB          read at most MIB MiB a second\n"
		   "  -p, --progress          show progress even when standard error is not a terminal\n"
		   "  -n, --max-segments N    read at most N segments in this run, then pause\n"
		   "  -s, --state FILE        keep where the scan is in FILE\n"
		   "      --resume            go on from where a paused scrub stopped\n" LFS_TOOL_HELP_LINES);
}

static double
mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleep up to s seconds; a signal cuts it short. */
static void
nap(double s)
{
	if (s <= 0 || got_stop)
		return;
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	nanosleep(&ts, NULL);
}

/* ---------------------------------------------------------------- paths */

/* The inodes to name, sorted, and the path found for each (NULL: none). */
static uint32_t *want_ino;
static char **want_path;
static size_t want_n, want_left;

static int
by_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int
visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag;
	(void)ftw;
	uint32_t ino = (uint32_t)st->st_ino;
	uint32_t *hit = bsearch(&ino, want_ino, want_n, sizeof(*want_ino), by_u32);
	if (hit && !want_path[hit - want_ino]) {
		want_path[hit - want_ino] = strdup(path);
		if (want_path[hit - want_ino])
			want_left--;
	}
	return want_left == 0; /* all found: the walk ends */
}

/* A path for each damaged inode, by one walk of the mount that ends when
 * all are found: only damage needs it, and a walk sees what the user
 * sees (a name the kernel reaches), hard links taking the first name. */
static void
find_paths(const char *mnt, const struct lfs_scrub_damage *d, size_t n)
{
	want_ino = calloc(n + 1, sizeof(*want_ino));
	want_path = calloc(n + 1, sizeof(*want_path));
	if (!want_ino || !want_path)
		return;
	for (size_t i = 0; i < n; i++) {
		uint32_t ino = d[i].ino ? d[i].ino : d[i].d.ino;
		if (ino && (d[i].d.flags & LFS_DAMAGE_LIVE) && (!want_n || want_ino[want_n - 1] != ino))
			want_ino[want_n++] = ino; /* d is sorted by inode */
	}
	want_left = want_n;
	if (want_n)
		nftw(mnt, visit, 32, FTW_PHYS | FTW_MOUNT);
}

static const char *
path_of(uint32_t ino)
{
	uint32_t *hit = want_ino ? bsearch(&ino, want_ino, want_n, sizeof(*want_ino), by_u32) : NULL;
	return hit ? want_path[hit - want_ino] : NULL;
}

/* ---------------------------------------------------------------- report */

static const char *
what_of(const struct lfs_scrub_damage *x)
{
	switch (x->d.kind) {
	case LFS_SCRUB_SUMMARY: return "summary";
	case LFS_BK_DATA: return (x->d.flags & LFS_DAMAGE_DIR) ? "directory" : "data";
	case LFS_BK_INDIR: return "block map";
	case LFS_BK_INODE: return "inode";
	case LFS_BK_XATTR: return "xattrs";
	case LFS_BK_IMAP: return "inode map";
	case LFS_BK_SUT: return "usage table";
	case LFS_BK_TABLE: return "snapshot table";
	case LFS_BK_HELD: return "held copy";
	default: return "block";
	}
}

/* How many entries from d[i] on make one run of a file's bytes: data
 * blocks of one inode, one after the other, used alike. */
static size_t
run_len(const struct lfs_scrub_damage *d, size_t n, size_t i)
{
	size_t k = 1;
	if (d[i].d.kind != LFS_BK_DATA)
		return 1;
	while (i + k < n && d[i + k].d.kind == LFS_BK_DATA && d[i + k].d.ino == d[i].d.ino &&
	       d[i + k].d.flags == d[i].d.flags && d[i + k].d.lblk == d[i].d.lblk + k)
		k++;
	return k;
}

static void
report_one(struct lfs_out *o, const struct lfs_scrub *s, const struct lfs_scrub_damage *d, size_t k,
	   unsigned id)
{
	const struct lfs_scrub_damage *x = d;
	uint32_t ino = x->ino ? x->ino : x->d.ino;
	lfs_out_item(o, "damaged", id, true);
	lfs_out_str(o, "what", what_of(x));
	bool owned = x->d.kind == LFS_BK_DATA || x->d.kind == LFS_BK_INDIR || x->d.kind == LFS_BK_XATTR ||
		     (x->d.kind == LFS_BK_INODE && x->ino);
	if (owned) {
		lfs_out_u64(o, "ino", ino);
		const char *p = (x->d.flags & LFS_DAMAGE_LIVE) ? path_of(ino) : NULL;
		if (p)
			lfs_out_str(o, "path", p);
	}
	if (x->d.kind == LFS_BK_DATA) {
		lfs_out_u64(o, "offset", x->d.lblk * s->bsize);
		lfs_out_u64(o, "length", (uint64_t)k * s->bsize);
	}
	if (x->d.kind == LFS_SCRUB_SUMMARY)
		lfs_out_u64(o, "live_bytes_lost", x->d.lblk);
	if (x->d.kind == LFS_BK_HELD || (x->d.flags & LFS_DAMAGE_HELD && x->d.orig != x->d.addr && x->d.orig))
		lfs_out_u64(o, "held_address", x->d.orig);
	lfs_out_bool(o, "live", (x->d.flags & LFS_DAMAGE_LIVE) != 0);
	lfs_out_bool(o, "held", (x->d.flags & LFS_DAMAGE_HELD) != 0);
	lfs_out_u64(o, "address", x->d.addr);
	lfs_out_u64(o, "blocks", k);
	lfs_out_end(o);
}

/* The report on standard output; the number of damage records. */
static unsigned
report(const char *mnt, const struct lfs_scrub *s, const struct lfs_scrub_damage *d, size_t n, bool json)
{
	struct lfs_out o;
	lfs_out_init(&o, json);
	lfs_out_begin(&o, NULL, '}');
	lfs_out_str(&o, "mountpoint", mnt);
	lfs_out_str(&o, "uuid", s->uuid);
	lfs_out_bool(&o, "complete", s->complete);
	lfs_out_u64(&o, "segments", s->segs_done);
	lfs_out_u64(&o, "segments_left", s->complete ? 0 : lfs_scrub_left(s, s->next_seg));
	lfs_out_u64(&o, "blocks_read", s->blocks);
	lfs_out_u64(&o, "bytes_read", s->bytes);
	char secs[32];
	snprintf(secs, sizeof(secs), "%.3f", s->seconds);
	lfs_out_field(&o, "seconds", secs, secs);
	lfs_out_u64(&o, "suspects_unnamed", s->sus_more);
	unsigned id = 0;
	lfs_out_begin(&o, "damage", ']');
	for (size_t i = 0; i < n;) {
		size_t k = run_len(d, n, i);
		report_one(&o, s, d + i, k, ++id);
		i += k;
	}
	lfs_out_end(&o);
	lfs_out_u64(&o, "damaged", id);
	lfs_out_end(&o);
	return id;
}

/* ---------------------------------------------------------------- the scan */

struct run {
	double rate;                /* MiB/s, 0: as fast as it goes */
	bool progress, tty;
	uint64_t max_segs;          /* 0: no limit */
};

static void
show_progress(const struct lfs_scrub *s, uint64_t total, uint64_t done, double mib_s, bool tty, bool last)
{
	uint64_t left = total > done ? total - done : 0;
	double eta = mib_s > 0 ? (double)left * s->seg_blocks * s->bsize / (mib_s * 1048576.0) : 0;
	fprintf(stderr, "%sscrub: %" PRIu64 "/%" PRIu64 " segments, %.1f MiB/s, %u:%02u left, %zu suspect%s%s",
		tty ? "\r" : "", done, total, mib_s, (unsigned)(eta / 60), (unsigned)eta % 60, s->nsus,
		s->nsus == 1 ? "" : "s", tty && !last ? "  " : "\n");
	fflush(stderr);
}

/* Read segments until the scan completes, a signal, or the run's limit:
 * 0 (complete), 1 (paused) or -errno. */
static int
scan(struct lfs_scrub *s, const struct run *r)
{
	uint64_t total = s->segs_done + lfs_scrub_left(s, s->next_seg), start_done = s->segs_done;
	uint64_t bytes0 = s->bytes;
	double t0 = mono_s(), shown = 0;
	int err;
	while (!got_stop && (!r->max_segs || s->segs_done - start_done < r->max_segs)) {
		if ((err = lfs_scrub_step(s)) <= 0) {
			if (r->progress)
				show_progress(s, total, s->segs_done, 0, r->tty, true);
			return err;
		}
		double el = mono_s() - t0, mib = (double)(s->bytes - bytes0) / 1048576.0;
		if (r->progress && (!r->tty || el - shown >= 0.5)) {
			shown = el;
			/* the rate it is held to, once the limit bites */
			double rate = el > 0 ? mib / el : 0;
			show_progress(s, total, s->segs_done, r->rate > 0 && rate > r->rate ? r->rate : rate, r->tty,
				      false);
		}
		if (r->rate > 0)
			nap(mib / r->rate - el);
	}
	if (r->progress && r->tty)
		fputc('\n', stderr);
	/* the last segment may have completed the scan */
	while (s->next_seg < s->nsegs && s->usage[s->next_seg].state == 0)
		s->next_seg++;
	if (s->next_seg >= s->nsegs)
		return lfs_scrub_step(s);
	return 1;
}

static int
parse_count(const char *arg, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || x == 0)
		return -EINVAL;
	*v = x;
	return 0;
}

enum { OPT_RESUME = 256 };

/* What the command line asks for. */
struct args {
	struct run r;
	bool json, resume;
	const char *state;          /* --state FILE, or NULL */
	const char *mnt;
};

static const struct lfs_tool tool = { "lfs-scrub", usage, ST_USAGE };

/* The options read into `a`: -1 to go on, else the exit status. */
static int
read_args(int argc, char **argv, struct args *a)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' }, { "rate", required_argument, NULL, 'r' },
		{ "progress", no_argument, NULL, 'p' }, { "max-segments", required_argument, NULL, 'n' },
		{ "state", required_argument, NULL, 's' }, { "resume", no_argument, NULL, OPT_RESUME },
		LFS_TOOL_LONGOPTS, { NULL, 0, NULL, 0 },
	};
	a->r.tty = isatty(STDERR_FILENO);
	a->r.progress = a->r.tty;
	int c;
	while ((c = getopt_long(argc, argv, "jr:pn:s:" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'j': a->json = true; break;
		case 'p': a->r.progress = true; break;
		case 's': a->state = optarg; break;
		case OPT_RESUME: a->resume = true; break;
		case 'r':
			a->r.rate = strtod(optarg, &end);
			if (end == optarg || *end || !(a->r.rate > 0 && a->r.rate < 1e9)) {
				fprintf(stderr, "lfs-scrub: --rate %s: not a positive number of MiB a second\n", optarg);
				return ST_USAGE;
			}
			break;
		case 'n':
			if (parse_count(optarg, &a->r.max_segs)) {
				fprintf(stderr, "lfs-scrub: --max-segments %s: not a positive count\n", optarg);
				return ST_USAGE;
			}
			break;
		default: return lfs_tool_opt(&tool, c);
		}
	}
	if (optind != argc - 1)
		return lfs_tool_usage_error(&tool);
	a->mnt = argv[optind];
	return -1;
}

/* Where the scan's state is kept, and with --resume, where the last scan
 * paused: 0 or ST_ERROR after a message. */
static int
find_state(struct lfs_scrub *s, const struct args *a, char *spath, size_t len)
{
	char msg[1024];
	int err;
	if (a->state)
		snprintf(spath, len, "%s", a->state);
	else if ((err = lfs_scrub_state_path(s->uuid, spath, len))) {
		fprintf(stderr, "lfs-scrub: no place for the state file (%s): give one with --state\n",
			strerror(-err));
		return ST_ERROR;
	}
	if (!a->resume)
		return 0;
	err = lfs_scrub_load(s, spath, msg, sizeof(msg));
	if (err == -ENOENT) {
		fprintf(stderr, "lfs-scrub: %s: no paused scrub to resume; starting one\n", spath);
	} else if (err) {
		fprintf(stderr, "lfs-scrub: %s\n", err == -EINVAL ? msg : strerror(-err));
		return ST_ERROR;
	} else if (s->complete) {
		lfs_scrub_reset(s); /* that one ended: a new one */
	} else {
		fprintf(stderr, "lfs-scrub: resuming at segment %" PRIu64 " of %" PRIu64 "\n", s->next_seg,
			s->nsegs);
	}
	return 0;
}

/* Scan, keep where the scan is, and report what the daemon confirms:
 * the exit status. */
static int
scrub(struct lfs_scrub *s, const struct args *a, const char *spath)
{
	int status = 0, err, paused = 0;
	if ((err = lfs_scrub_usage(s))) {
		fprintf(stderr, "lfs-scrub: %s: %s\n", a->mnt, lfs_ctl_strerror(err));
		return ST_ERROR;
	}
	if ((paused = scan(s, &a->r)) < 0) {
		fprintf(stderr, "lfs-scrub: %s: reading the image: %s\n", a->mnt, strerror(-paused));
		return ST_ERROR;
	}
	/* what was read is reported even if where the scan is cannot be kept */
	bool saved = true;
	if ((err = lfs_scrub_save(s, spath))) {
		fprintf(stderr, "lfs-scrub: %s: %s (a later --resume cannot go on from here)\n", spath,
			strerror(-err));
		saved = false;
	}
	struct lfs_scrub_damage *d = NULL;
	size_t n = 0;
	if ((err = lfs_scrub_confirm(s, &d, &n))) {
		/* the daemon went away (an unmount): what was read is saved */
		fprintf(stderr, "lfs-scrub: %s: %s%s\n", a->mnt, lfs_ctl_strerror(err),
			s->complete ? "" : "; --resume goes on after a remount");
		free(d);
		return ST_ERROR | (s->complete ? 0 : ST_PAUSED);
	}
	find_paths(a->mnt, d, n);
	if (report(a->mnt, s, d, n, a->json))
		status |= ST_DAMAGE;
	if (paused == 1) {
		status |= ST_PAUSED;
		fprintf(stderr, "lfs-scrub: paused at segment %" PRIu64 " of %" PRIu64 "%s\n", s->next_seg,
			s->nsegs, saved ? " (lfs-scrub --resume goes on)" : "");
	}
	if (!saved)
		status |= ST_ERROR;
	free(d);
	return status;
}

int
main(int argc, char **argv)
{
	struct args a = { .r = { .rate = 0 } };
	int status = read_args(argc, argv, &a);
	if (status >= 0)
		return status;
	struct lfs_ctl_client cl;
	int err = lfs_ctl_connect(&cl, a.mnt);
	if (err) {
		fprintf(stderr, "lfs-scrub: %s: %s\n", a.mnt, lfs_ctl_strerror(err));
		return ST_ERROR;
	}
	struct lfs_scrub s;
	char msg[1024], spath[PATH_MAX];
	if ((err = lfs_scrub_open(&s, &cl, msg, sizeof(msg)))) {
		fprintf(stderr, "lfs-scrub: %s: %s\n", a.mnt, msg);
		lfs_ctl_close(&cl);
		return ST_ERROR;
	}
	if (msg[0])
		fprintf(stderr, "lfs-scrub: %s\n", msg);
	status = find_state(&s, &a, spath, sizeof(spath));
	struct sigaction sa = { .sa_handler = on_stop };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (!status)
		status = scrub(&s, &a, spath);
	lfs_scrub_close(&s);
	lfs_ctl_close(&cl);
	return status;
}
