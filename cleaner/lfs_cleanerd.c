/*
 * lfs_cleanerd.c — the segment cleaner daemon.
 *
 *   lfs_cleanerd [-f] [-c CONFIG] MOUNTPOINT
 *   lfs_cleanerd --status [--json] MOUNTPOINT
 *
 * The main loop reads top to bottom: get the statistics -> decide
 * whether to clean -> get the usage table -> select victims by policy ->
 * read their summaries
 * and blocks from the image (read-only) -> ask which blocks are live ->
 * have the live ones rewritten, oldest first -> ask for the emptied
 * segments to be marked clean -> wait.  The daemon that owns the log
 * checks every request, so this process can be killed at any moment.
 */
#include "cleaner.h"
#include "image.h"
#include "scrub.h"
#include "lfs.h"
#include "text.h"
#include "tool.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef LFS_SYSCONFDIR
#define LFS_SYSCONFDIR "/etc"
#endif
#define LFS_DEFAULT_CONFIG LFS_SYSCONFDIR "/lfs_cleanerd.conf"

static volatile sig_atomic_t got_stop, got_reload;

/* SIGUSR1, from the daemon: lfs-clean asked something; the handler only
 * cuts the sleep short (no SA_RESTART), and the loop asks what. */
static void on_wake(int sig) { (void)sig; }
static void on_stop(int sig) { (void)sig; got_stop = 1; }
static void on_hup(int sig) { (void)sig; got_reload = 1; }

/* The daemon's state. */
struct cleaner {
	struct lfs_ctl_client cl;
	struct lfs_cleaner_config cfg;
	const char *config_path;    /* NULL: defaults */
	bool foreground;            /* log to stderr, not syslog */
	struct lfs_bdev dev;        /* the image, read-only (fd -1: not open) */
	struct lfs_super sb;        /* its superblock, for the log reader */
	uint32_t bsize, seg_blocks;
	uint32_t seed;              /* checksum seed, from the superblock */
	uint64_t nsegs, seg0, seg_bytes;
	uint64_t reserved;          /* segments writers never get */
	struct lfs_ctl_seg *usage;  /* nsegs entries, refreshed before victims are chosen */
	bool cleaning;              /* between the min and max thresholds */
	/* A pass after which no more segments were clean than before, and
	 * that freed less than a segment elsewhere, gained nothing; the next
	 * waits until something more is freed (the daemon's bytes_freed):
	 * an idle filesystem then sees no passes. */
	bool futile;
	uint64_t futile_at;
	bool said_idle, said_no_room; /* each reason is logged once */
	bool no_victims;            /* the last wake-up below the target found no
				     * segment with dead space to clean */
	uint32_t state;             /* enum lfs_cleaner_state last told the daemon */
	struct lfs_scrub *scrub;    /* scrub_interval: the scrub under way (NULL: none yet) */
	char scrub_path[PATH_MAX];  /* its state file */
	uint64_t passes, segs_cleaned, bytes_read, blocks_moved;
};

static bool log_stderr;
static bool log_stamp;          /* LFS_LOG=stamp */
static const char *log_mnt = "";

static void
say(int prio, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char msg[2048];
	if (log_stderr && log_stamp) {
		/* the daemon's log file: its lines' time, pid, and which
		 * filesystem (the mount point) */
		char when[32];
		vsnprintf(msg, sizeof(msg), fmt, ap);
		time_t now = time(NULL);
		struct tm tm;
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
		fprintf(stderr, "%s lfs_cleanerd[%d]: %s: %s\n", when, (int)getpid(), log_mnt, msg);
	} else if (log_stderr) {
		fputs("lfs_cleanerd: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	} else {
		/* syslog names the program and pid; the line the mount */
		vsnprintf(msg, sizeof(msg), fmt, ap);
		syslog(prio, "%s%s%s", log_mnt, log_mnt[0] ? ": " : "", msg);
	}
	va_end(ap);
}

static uint64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The signals with handlers (on_stop, on_hup, on_wake) are blocked but
 * while the cleaner sleeps: one that comes during a request waits for
 * the next sleep and ends it at once.
 * Let through at any moment, it could come after the loop looked at
 * got_stop and before the sleep began, and be lost for a whole
 * cleaning_interval (an unmount waits for the cleaner to end); and it
 * would cut a request short with EINTR. */
static sigset_t asleep_mask;

static void
block_signals(void)
{
	sigset_t handled;
	sigemptyset(&handled);
	sigaddset(&handled, SIGTERM);
	sigaddset(&handled, SIGINT);
	sigaddset(&handled, SIGHUP);
	sigaddset(&handled, SIGUSR1);
	sigprocmask(SIG_BLOCK, &handled, &asleep_mask);
	for (int sig = SIGHUP; sig < NSIG; sig++)
		if (sigismember(&handled, sig))
			sigdelset(&asleep_mask, sig);
}

static void
sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - floor(s)) * 1e9) };
	if (!got_stop)
		ppoll(NULL, 0, &ts, &asleep_mask);
}

static int
call(struct cleaner *c, uint16_t op, uint32_t count, uint64_t arg0, const void *payload, size_t plen,
     struct lfs_ctl_resp *resp, void *out, size_t out_len)
{
	struct lfs_ctl_req req = { .op = op, .count = count, .arg = { arg0 } };
	return lfs_ctl_call(&c->cl, &req, payload, plen, resp, out, out_len, NULL);
}

static int
load_usage(struct cleaner *c)
{
	for (uint64_t first = 0; first < c->nsegs; first += LFS_CTL_MAX_RECORDS) {
		uint32_t n = (uint32_t)(c->nsegs - first < LFS_CTL_MAX_RECORDS ? c->nsegs - first : LFS_CTL_MAX_RECORDS);
		struct lfs_ctl_resp r;
		int err = call(c, LFS_CTL_USAGE, n, first, NULL, 0, &r, c->usage + first, n * sizeof(struct lfs_ctl_seg));
		if (err)
			return err;
	}
	return 0;
}

struct found {
	struct lfs_ctl_blk *b;
	uint64_t *age;              /* pseg timestamp per block, for the age sort */
	size_t n, cap;
};

static int
add_block(struct found *f, const struct lfs_pseg_entry *e, uint64_t addr, uint64_t ts)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 1024;
		struct lfs_ctl_blk *nb = realloc(f->b, cap * sizeof(*nb));
		if (!nb)
			return -ENOMEM;
		f->b = nb;
		uint64_t *na = realloc(f->age, cap * sizeof(*na));
		if (!na)
			return -ENOMEM;
		f->age = na;
		f->cap = cap;
	}
	f->b[f->n] = (struct lfs_ctl_blk){ .addr = addr, .lblk = e->lblk, .ino = e->ino, .version = e->version,
					   .kind = e->kind };
	f->age[f->n] = ts;
	f->n++;
	return 0;
}

/* Read a victim's chain of summaries, one block each, with the one log
 * reader (logwalk.h), and collect the blocks they describe.  The blocks
 * themselves are not read here: the daemon reads only those still live
 * when it moves them, verifying each against its summary's crc. */
static int
read_segment(struct cleaner *c, uint64_t seg, struct lfs_logwalk *w, struct found *f)
{
	uint64_t before = c->dev.bytes_read;
	int err;
	lfs_logwalk_segment(w, seg);
	while ((err = lfs_logwalk_next(w)) > 0) {
		err = 0;
		for (uint32_t j = 0; j < w->h.nblocks && !err; j++) {
			struct lfs_pseg_entry e;
			lfs_logwalk_entry(w, j, &e);
			err = add_block(f, &e, w->addr + 1 + j, w->h.timestamp_ns);
		}
		if (err)
			break;
	}
	c->bytes_read += c->dev.bytes_read - before;
	return err;
}

static uint64_t *sort_age;

static int
by_age(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	if (sort_age[x] != sort_age[y])
		return sort_age[x] < sort_age[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int
clean_pass(struct cleaner *c, const uint64_t *victims, size_t nv)
{
	struct lfs_logwalk w;
	struct found f = { 0 };
	int err = lfs_logwalk_init(&w, &c->dev, &c->sb, c->seed, 0);
	uint64_t read_before = c->bytes_read;
	/* a stop (delivered in the throttle's sleeps) abandons the pass:
	 * nothing is moved yet, and the unmount waits for this cleaner */
	for (size_t i = 0; i < nv && !err && !got_stop; i++) {
		err = read_segment(c, victims[i], &w, &f);
		if (!err && c->cfg.max_io_mib_s > 0)
			sleep_s((double)c->seg_bytes / (c->cfg.max_io_mib_s * 1048576.0));
	}
	if (w.buf)
		lfs_logwalk_free(&w);
	/* ask which are live, in chunks */
	for (size_t i = 0; i < f.n && !err && !got_stop; i += LFS_CTL_MAX_RECORDS) {
		size_t k = f.n - i < LFS_CTL_MAX_RECORDS ? f.n - i : LFS_CTL_MAX_RECORDS;
		struct lfs_ctl_resp r;
		err = call(c, LFS_CTL_LIVE, (uint32_t)k, 0, f.b + i, k * sizeof(*f.b), &r, f.b + i, k * sizeof(*f.b));
	}
	/* live ones, oldest first when age-sorting, so cold data lands together */
	size_t *idx = malloc((f.n + 1) * sizeof(size_t)), nl = 0;
	if (!idx && !err)
		err = -ENOMEM;
	for (size_t i = 0; i < f.n && !err && !got_stop; i++)
		if (f.b[i].live)
			idx[nl++] = i;
	if (!err && c->cfg.age_sort) {
		sort_age = f.age;
		qsort(idx, nl, sizeof(size_t), by_age);
	}
	struct lfs_ctl_blk *chunk = malloc(LFS_CTL_MAX_RECORDS * sizeof(*chunk));
	if (!chunk && !err)
		err = -ENOMEM;
	for (size_t i = 0; i < nl && !err; i += LFS_CTL_MAX_RECORDS) {
		size_t k = nl - i < LFS_CTL_MAX_RECORDS ? nl - i : LFS_CTL_MAX_RECORDS;
		for (size_t j = 0; j < k; j++)
			chunk[j] = f.b[idx[i + j]];
		struct lfs_ctl_resp r;
		err = call(c, LFS_CTL_MOVE, (uint32_t)k, i == 0 ? c->bytes_read - read_before : 0, chunk,
			   k * sizeof(*chunk), &r, NULL, 0);
		if (!err)
			c->blocks_moved += r.val[0];
	}
	if (!err && !got_stop) {
		struct lfs_ctl_resp r;
		if (nl == 0) {
			/* nothing moved: still report what was read */
			struct lfs_ctl_req req = { .op = LFS_CTL_MOVE, .count = 0, .arg = { c->bytes_read - read_before } };
			err = lfs_ctl_call(&c->cl, &req, NULL, 0, &r, NULL, 0, NULL);
		}
		if (!err)
			err = call(c, LFS_CTL_SEGCLEAN, (uint32_t)nv, 0, victims, nv * sizeof(uint64_t), &r, NULL, 0);
		if (!err)
			c->segs_cleaned += r.val[0];
	}
	free(chunk);
	free(idx);
	free(f.b);
	free(f.age);
	return err;
}

/* The end of a scheduled scrub: what it found, in the log. */
static void
scrub_report(struct cleaner *c, struct lfs_scrub *s)
{
	struct lfs_scrub_damage *d;
	size_t n;
	int err = lfs_scrub_confirm(s, &d, &n);
	if (err) {
		say(LOG_WARNING, "scrub: asking about %zu blocks that fail their check: %s", s->nsus,
		    lfs_ctl_strerror(err));
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct lfs_ctl_damage *x = &d[i].d;
		uint32_t ino = d[i].ino ? d[i].ino : x->ino;
		if (x->kind == LFS_BK_DATA)
			say(LOG_ERR, "scrub: block %" PRIu64 " is damaged: bytes %" PRIu64 "-%" PRIu64
			    " of inode %u%s", x->addr, x->lblk * c->bsize, (x->lblk + 1) * c->bsize - 1, ino,
			    x->flags & LFS_DAMAGE_LIVE ? "" : ", as a snapshot or kept checkpoint holds it");
		else if (x->kind == LFS_BK_INODE && d[i].ino)
			say(LOG_ERR, "scrub: block %" PRIu64 " is damaged: the record of inode %u", x->addr, ino);
		else
			say(LOG_ERR, "scrub: block %" PRIu64 " is damaged: %s (kind %u in lfs(5)%s)", x->addr,
			    x->kind == LFS_SCRUB_SUMMARY ? "a summary" : "metadata", x->kind,
			    x->ino ? ", of an inode" : "");
	}
	say(n ? LOG_ERR : LOG_INFO, "scrub: complete, %" PRIu64 " segments, %.1f MiB read in %.1f s: %s%s", s->segs_done,
	    (double)s->bytes / 1048576.0, s->seconds, n ? "damage found" : "no damage",
	    n ? " (lfs-scrub names the files)" : "");
	free(d);
}

/* scrub_interval: while there is nothing to clean, a slice of the scrub
 * (as many segments as a pass may take victims), paced by max_io_rate;
 * its state file says where it is and when the last one ended, across
 * restarts. */
static void
scrub_tick(struct cleaner *c)
{
	if (c->cfg.scrub_interval_s <= 0 || got_stop)
		return;
	char msg[1024];
	if (!c->scrub) {
		struct lfs_scrub *s = calloc(1, sizeof(*s));
		int err = s ? lfs_scrub_open(s, &c->cl, msg, sizeof(msg)) : -ENOMEM;
		if (!err && c->cfg.scrub_state[0])
			snprintf(c->scrub_path, sizeof(c->scrub_path), "%s", c->cfg.scrub_state);
		else if (!err)
			err = lfs_scrub_state_path(s->uuid, c->scrub_path, sizeof(c->scrub_path));
		if (err) {
			say(LOG_WARNING, "scrub: %s; not scrubbing", err == -ENOMEM ? strerror(ENOMEM) : msg);
			c->cfg.scrub_interval_s = 0;
			free(s);
			return;
		}
		err = lfs_scrub_load(s, c->scrub_path, msg, sizeof(msg));
		if (err && err != -ENOENT)
			say(LOG_WARNING, "scrub: %s; starting a new one", err == -EINVAL ? msg : strerror(-err));
		if (err)
			s->complete = true; /* none has ended: one is due now */
		c->scrub = s;
	}
	struct lfs_scrub *s = c->scrub;
	if (s->complete) {
		if ((double)time(NULL) < (double)s->finished + c->cfg.scrub_interval_s)
			return;
		lfs_scrub_reset(s);
		say(LOG_INFO, "scrub: starting (scrub_interval %.0f s)", c->cfg.scrub_interval_s);
	}
	int err = lfs_scrub_usage(s);
	for (unsigned k = 0; !err && k < c->cfg.segs_per_pass && !got_stop; k++) {
		if ((err = lfs_scrub_step(s)) <= 0)
			break;
		err = 0;
		if (c->cfg.max_io_mib_s > 0)
			sleep_s((double)c->seg_bytes / (c->cfg.max_io_mib_s * 1048576.0));
	}
	if (err < 0)
		say(LOG_WARNING, "scrub: %s", strerror(-err));
	/* saved before the report: whoever reads the log's "complete" finds
	 * the state file saying so, until the next scrub begins */
	if ((err = lfs_scrub_save(s, c->scrub_path)))
		say(LOG_WARNING, "scrub: %s: %s", c->scrub_path, strerror(-err));
	if (s->complete)
		scrub_report(c, s);
}

/* Tell the daemon what this cleaner is doing; *cmd gets what it asks
 * (LFS_CLEANER_CMD_*). */
static int
report_state(struct cleaner *c, uint32_t state, uint64_t *cmd)
{
	struct lfs_ctl_resp r;
	int err = call(c, LFS_CTL_CLEANER_STATE, 0, state, NULL, 0, &r, NULL, 0);
	if (!err) {
		c->state = state;
		*cmd = r.val[0];
	}
	return err;
}

/* Take the filesystem's one cleaner place (ctl_proto.h); 0, or -EBUSY
 * after saying who holds it. */
static int
register_cleaner(struct cleaner *c, const char *mnt)
{
	struct lfs_ctl_resp r;
	int err = call(c, LFS_CTL_CLEANER_HELLO, 0, (uint64_t)getpid(), NULL, 0, &r, NULL, 0);
	if (err == -EBUSY)
		say(LOG_ERR, "%s already has a cleaner (pid %llu); not starting another", mnt,
		    (unsigned long long)r.val[0]);
	else if (err)
		say(LOG_ERR, "%s: %s", mnt, lfs_ctl_strerror(err));
	return err;
}

/* Tell the daemon how long plain checkpoints are kept (it records the
 * period in the image, lfs(5)); an image without snapshots cannot. */
static void
send_checkpoint_protection(struct cleaner *c)
{
	struct lfs_ctl_resp r;
	uint32_t s = (uint32_t)c->cfg.keep_ckpt_s;
	int err = call(c, LFS_CTL_PROTECT, 0, s, NULL, 0, &r, NULL, 0);
	/* a read-only mount takes it when it goes read-write (resumed) */
	if (err && err != -EROFS && (s || err != -EOPNOTSUPP))
		say(LOG_WARNING, "checkpoint_protection %u: %s", s,
		    err == -EOPNOTSUPP ? "the image has no snapshots (lfs-tune -O snapshots); no checkpoint is kept" :
					 lfs_ctl_strerror(err));
}

/* Follow what the daemon asks (suspend, resume) and reload the
 * configuration when told to: 1 while suspended, 0 to go on, or -errno.
 * *cmd: what the daemon asks (LFS_CLEANER_CMD_*). */
static int
follow_daemon(struct cleaner *c, uint64_t *cmd)
{
	int err = report_state(c, c->state, cmd);
	if (err)
		return err;
	if (*cmd & LFS_CLEANER_CMD_SUSPEND) {
		if (c->state != LFS_CLEANER_SUSPENDED) {
			say(LOG_INFO, "suspended");
			if ((err = report_state(c, LFS_CLEANER_SUSPENDED, cmd)))
				return err;
		}
		sleep_s(c->cfg.interval_s); /* SIGUSR1 ends it early */
		return 1;
	}
	if (c->state == LFS_CLEANER_SUSPENDED) {
		say(LOG_INFO, "resumed");
		send_checkpoint_protection(c);
	}
	if (got_reload) {
		got_reload = 0;
		char msg[512];
		if (c->config_path && lfs_cleaner_config_load(&c->cfg, c->config_path, msg, sizeof(msg))) {
			say(LOG_ERR, "reload: %s (keeping the old settings)", msg);
		} else {
			say(LOG_INFO, "configuration reloaded");
			send_checkpoint_protection(c);
		}
	}
	return 0;
}

/* What the last pass started from, to tell whether it gained anything. */
struct progress {
	bool passed;
	uint64_t clean_before, freed_before;
};

/* Whether to clean, and the state that says so (--status says why a
 * cleaner below its target does not clean).  Thresholds count the clean
 * segments writers may use: with the reserve counted, a low
 * min_clean_segments would wait until writers are already stalled.
 * *waiting: the last pass gained nothing and nothing was freed since. */
static uint32_t
judge(struct cleaner *c, const struct lfs_ctl_stats *st, struct progress *p, bool *waiting)
{
	uint64_t clean = st->segs_clean;
	if (p->passed) {
		p->passed = false;
		/* progress: clean segments, or dead space made in other
		 * segments (the old leaves of moved blocks) */
		if (clean <= p->clean_before && st->bytes_freed - p->freed_before < c->seg_bytes) {
			c->futile = true;
			c->futile_at = st->bytes_freed;
		} else {
			c->futile = false;
			c->said_idle = false;
		}
	}
	clean = clean > c->reserved ? clean - c->reserved : 0;
	double pct = 100.0 * (double)clean / (double)(c->nsegs - c->reserved);
	if (pct < c->cfg.min_clean_pct)
		c->cleaning = true;
	else if (pct >= c->cfg.max_clean_pct)
		c->cleaning = false;
	*waiting = c->cleaning && c->futile && st->bytes_freed == c->futile_at;
	return !c->cleaning ? LFS_CLEANER_IDLE :
	       *waiting || c->said_no_room || c->no_victims ? LFS_CLEANER_WAITING :
							      LFS_CLEANER_CLEANING;
}

/* The victims of a pass (none unless `pass`): those the policy picks
 * whose live blocks fit one request, as the daemon moves a request whole
 * or not at all.  The usage table (a million segments at 1 TiB, a
 * thousand requests) is fetched only here. */
static int
choose_victims(struct cleaner *c, bool pass, uint64_t *victims, size_t *nv)
{
	*nv = 0;
	if (!pass)
		return 0;
	int err = load_usage(c);
	if (err)
		return err;
	size_t max = c->cfg.segs_per_pass < 1024 ? c->cfg.segs_per_pass : 1024;
	size_t n = lfs_policy_select(&c->cfg, c->usage, c->nsegs, c->seg_bytes, now_ns(), max, victims);
	uint64_t blocks = 0;
	size_t fit = 0;
	for (; fit < n; fit++) {
		blocks += c->usage[victims[fit]].live_bytes / c->bsize + 1;
		if (fit > 0 && blocks > LFS_CTL_MAX_RECORDS)
			break;
	}
	*nv = fit;
	return 0;
}

/* Clean the nv victims, one alone if all do not find room, and report
 * the totals: the number cleaned (0 if there was no room or the mount
 * went read-only), or -errno. */
static int
clean_victims(struct cleaner *c, uint64_t *victims, size_t nv)
{
	int err = clean_pass(c, victims, nv);
	if (err == -ENOSPC && nv > 1) {
		nv = 1;
		err = clean_pass(c, victims, 1);
	}
	if (err == -EROFS) {
		/* switched read-only (lfs-clean --ro): the next report_state
		 * says suspend */
		nv = 0;
	} else if (err == -ENOSPC) {
		if (!c->said_no_room)
			say(LOG_WARNING, "no room to move the live blocks of the chosen segments; "
			    "waiting until data is deleted");
		c->said_no_room = true;
		nv = 0;
	} else if (err) {
		return err;
	} else {
		c->said_no_room = false;
	}
	c->passes++;
	struct lfs_ctl_resp r;
	struct lfs_ctl_req req = { .op = LFS_CTL_CLEANER_STATS,
				   .arg = { c->segs_cleaned, c->bytes_read, c->passes } };
	err = lfs_ctl_call(&c->cl, &req, NULL, 0, &r, NULL, 0, NULL);
	return err ? err : (int)nv;
}

static int follow_resize(struct cleaner *c);

static int
run(struct cleaner *c)
{
	uint64_t *victims = malloc(1024 * sizeof(uint64_t));
	if (!victims)
		return -ENOMEM;
	int err = 0;
	struct progress prog = { 0 };
	while (!got_stop) {
		uint64_t cmd = 0;
		if ((err = follow_daemon(c, &cmd)) < 0)
			break;
		if (err) {
			err = 0;
			continue;
		}
		bool now = cmd & LFS_CLEANER_CMD_NOW;
		struct lfs_ctl_resp sr;
		struct lfs_ctl_stats st;
		if ((err = call(c, LFS_CTL_STATS, 0, 0, NULL, 0, &sr, &st, sizeof(st))))
			break;
		if (st.segs_total != c->nsegs && (err = follow_resize(c)))
			break;
		bool waiting;
		uint32_t state = judge(c, &st, &prog, &waiting);
		if (state != c->state) {
			uint64_t more;
			if ((err = report_state(c, state, &more)))
				break;
			now |= more & LFS_CLEANER_CMD_NOW;
		}
		if (waiting && !c->said_idle) {
			say(LOG_INFO, "not cleaning: the last pass gained no segment (%llu of %llu clean); "
			    "waiting until data is deleted or overwritten",
			    (unsigned long long)st.segs_clean, (unsigned long long)c->nsegs);
			c->said_idle = true;
		}
		if (now)
			say(LOG_INFO, "a pass now, as asked (%llu of %llu segments clean)",
			    (unsigned long long)st.segs_clean, (unsigned long long)c->nsegs);
		size_t nv;
		if ((err = choose_victims(c, (c->cleaning && !waiting) || now, victims, &nv)))
			break;
		c->no_victims = c->cleaning && !waiting && !now && nv == 0;
		if (nv) {
			prog = (struct progress){ true, st.segs_clean, st.bytes_freed };
			int n = clean_victims(c, victims, nv);
			if (n < 0) {
				err = n;
				break;
			}
			nv = (size_t)n;
		}
		if (!nv)
			scrub_tick(c);
		/* busy while below the target, idle otherwise */
		sleep_s(nv ? 0.05 : c->cfg.interval_s);
	}
	free(victims);
	if (err == -ECONNRESET || err == -EPIPE)
		err = 0; /* the filesystem was unmounted */
	return err;
}

/* Open the image the daemon named (lfs_ctl_open_image) and make room
 * for its usage table. */
static int
open_image(struct cleaner *c, const char *path, const struct lfs_ctl_resp *info)
{
	struct lfs_bdev dev;
	struct lfs_super sb;
	char msg[1024];
	int err = lfs_ctl_open_image(path, info, &dev, &sb, msg, sizeof(msg));
	if (msg[0])
		say(err ? LOG_ERR : LOG_WARNING, "%s", msg);
	if (err)
		return err;
	c->usage = calloc(c->nsegs, sizeof(*c->usage));
	if (!c->usage) {
		say(LOG_ERR, "%s", strerror(ENOMEM));
		lfs_bdev_close(&dev);
		return -ENOMEM;
	}
	c->dev = dev; /* closed at exit */
	c->sb = sb;
	c->seg_bytes = (uint64_t)c->bsize * c->seg_blocks;
	c->seed = lfs_super_seed(&sb);
	c->reserved = sb.reserved_segs < c->nsegs ? sb.reserved_segs : 0;
	return 0;
}

/* The filesystem was resized (lfs-resize): its geometry and image
 * again, as at the start.  0, or -errno after a message. */
static int
follow_resize(struct cleaner *c)
{
	struct lfs_ctl_resp r;
	char path[LFS_CTL_PATH_MAX];
	int err = lfs_ctl_ask_info(&c->cl, &r, path);
	if (err) {
		say(LOG_ERR, "after a resize: %s", lfs_ctl_strerror(err));
		return err;
	}
	say(LOG_INFO, "the filesystem was resized: %llu segments, %llu before",
	    (unsigned long long)r.val[2], (unsigned long long)c->nsegs);
	lfs_bdev_close(&c->dev);
	free(c->usage);
	c->usage = NULL;
	c->bsize = (uint32_t)r.val[0];
	c->seg_blocks = (uint32_t)r.val[1];
	c->nsegs = r.val[2];
	c->seg0 = r.val[3];
	return open_image(c, path, &r);
}

static const char *
state_name(uint64_t state)
{
	static const char *const names[] = {
		[LFS_CLEANER_ABSENT] = "absent", [LFS_CLEANER_STARTING] = "starting",
		[LFS_CLEANER_RESTARTING] = "restarting", [LFS_CLEANER_STOPPED] = "stopped",
		[LFS_CLEANER_IDLE] = "idle", [LFS_CLEANER_CLEANING] = "cleaning",
		[LFS_CLEANER_SUSPENDED] = "suspended", [LFS_CLEANER_WAITING] = "waiting",
	};
	return state < sizeof(names) / sizeof(names[0]) && names[state] ? names[state] : "unknown";
}

/* What the kept checkpoints hold (lfs_ctl_ask_snapshots): how many of
 * each kind, the bytes held for each kind alone, and in all. */
struct holders {
	unsigned snaps, kept;
	uint64_t snap_bytes, kept_bytes, held;
	uint32_t protect;
	uint64_t worth;             /* less than this is not worth naming (a segment) */
};

/* Why a running cleaner does not clean, into buf ("" if it cleans;
 * `full`: df has no room): on a full filesystem, what holds the space,
 * kept checkpoints named before files when they hold it. */
static const char *
why_not_cleaning(const struct lfs_ctl_stats *st, bool full, const struct holders *h, char *buf, size_t len)
{
	buf[0] = '\0';
	if (st->cleaner_state == LFS_CLEANER_WAITING)
		return "no segment it may clean (past protection_period) holds dead space to gain, or "
		       "there is no room for the blocks it would move; it cleans again once data is "
		       "deleted or overwritten";
	if (st->cleaner_state != LFS_CLEANER_IDLE || !full)
		return buf;
	int n = snprintf(buf, len, "enough segments are clean; the filesystem is full of live data, which cleaning "
			 "cannot shrink");
	/* held for kept checkpoints alone, or shared by them and snapshots */
	uint64_t kept = h->kept ? h->held - (h->snap_bytes < h->held ? h->snap_bytes : h->held) : 0;
	if (kept < h->worth)
		kept = 0;
	if (n > 0 && (size_t)n < len && kept)
		n += snprintf(buf + n, len - (size_t)n, "; %u kept checkpoint%s (checkpoint_protection %lu s) hold "
			      "%.1f MiB of it: let them go (lfs-ckpt -d, or a shorter checkpoint_protection)", h->kept,
			      h->kept == 1 ? "" : "s", (unsigned long)h->protect, (double)kept / 1048576.0);
	if (n > 0 && (size_t)n < len && h->snaps && h->snap_bytes >= h->worth)
		n += snprintf(buf + n, len - (size_t)n, "; %u snapshot%s hold %.1f MiB of it: delete snapshots "
			      "(lfs-ckpt -d)", h->snaps, h->snaps == 1 ? "" : "s", (double)h->snap_bytes / 1048576.0);
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "; %s", kept || (h->snaps && h->snap_bytes >= h->worth) ? "or delete files"
			 : "delete files or snapshots (lfs-ckpt -d)");
	return buf;
}

/* "running (pid 12), idle" or "restarting in 2 s; the last one was
 * killed by signal 9": who cleans now, for --status */
static void
describe_cleaner(const struct lfs_ctl_stats *st, bool full, const struct holders *h, char *buf, size_t len)
{
	int n;
	char whybuf[512];
	const char *why = why_not_cleaning(st, full, h, whybuf, sizeof(whybuf));
	if (st->cleaner_pid)
		n = snprintf(buf, len, "running (pid %llu), %s%s%s", (unsigned long long)st->cleaner_pid,
			     state_name(st->cleaner_state), *why ? ": " : "", why);
	else if (st->cleaner_state == LFS_CLEANER_RESTARTING)
		n = snprintf(buf, len, "restarting in %.1f s", (double)st->cleaner_restart_ms / 1000.0);
	else
		n = snprintf(buf, len, "%s%s", state_name(st->cleaner_state),
			     st->cleaner_state == LFS_CLEANER_STOPPED ? " (lfs-clean --start starts it)" : "");
	if (n < 0 || (size_t)n >= len)
		return;
	if (st->cleaner_restarts)
		n += snprintf(buf + n, len - (size_t)n, "; restarted %llu time%s", (unsigned long long)st->cleaner_restarts,
			      st->cleaner_restarts == 1 ? "" : "s");
	if (st->cleaner_last_exit != ~0ull && (size_t)n < len) {
		int ws = (int)st->cleaner_last_exit;
		if (WIFSIGNALED(ws))
			snprintf(buf + n, len - (size_t)n, "; the last one was killed by signal %d", WTERMSIG(ws));
		else
			snprintf(buf + n, len - (size_t)n, "; the last one exited with status %d", WEXITSTATUS(ws));
	}
}

/* How the daemon takes the kernel's requests (lfs-requests(8) counts
 * them): "io_uring", "/dev/fuse", or "unknown" where it does not say. */
static const char *
transport(struct cleaner *c)
{
	struct lfs_ctl_resp r;
	uint64_t n[3 * LFS_CTL_REQ_SLOTS];
	if (call(c, LFS_CTL_REQUESTS, 0, 0, NULL, 0, &r, n, sizeof(n)))
		return "unknown";
	return r.val[2] == LFS_CTL_TRANSPORT_URING ? "io_uring" : "/dev/fuse";
}

static int
status(const char *mountpoint, bool json)
{
	struct cleaner c = { .cl = { -1 } };
	int err = lfs_ctl_connect(&c.cl, mountpoint);
	if (err) {
		fprintf(stderr, "lfs_cleanerd: %s: cannot reach the lfs daemon: %s\n", mountpoint, lfs_ctl_strerror(err));
		return 1;
	}
	struct lfs_ctl_resp r;
	struct lfs_ctl_stats st;
	char path[LFS_CTL_PATH_MAX];
	if ((err = call(&c, LFS_CTL_STATS, 0, 0, NULL, 0, &r, &st, sizeof(st))) ||
	    (err = lfs_ctl_ask_info(&c.cl, &r, path))) {
		fprintf(stderr, "lfs_cleanerd: %s: %s\n", mountpoint, lfs_ctl_strerror(err));
		return 1;
	}
	c.nsegs = r.val[2];
	c.seg_bytes = r.val[0] * r.val[1];
	c.usage = calloc(c.nsegs, sizeof(*c.usage));
	if (!c.usage || load_usage(&c)) {
		fprintf(stderr, "lfs_cleanerd: cannot read the usage table\n");
		return 1;
	}
	/* the checkpoints kept, and what they hold that the live tree does
	 * not (counted in live_bytes: df's used space) */
	struct lfs_ckpt_info *ci = NULL;
	size_t nci = 0;
	struct holders h = { .worth = c.seg_bytes };
	if (!lfs_ctl_ask_snapshots(&c.cl, &ci, &nci, &h.held, &h.protect))
		for (size_t i = 0; i < nci; i++) {
			if (ci[i].flags & LFS_CKPT_INFO_SNAPSHOT) {
				h.snaps++;
				h.snap_bytes += ci[i].own_bytes;
			} else if (ci[i].flags & LFS_CKPT_INFO_KEPT) {
				h.kept++;
				h.kept_bytes += ci[i].own_bytes;
			}
		}
	free(ci);
	unsigned snaps = h.snaps, kept = h.kept;
	uint64_t held = h.held;
	uint32_t protect = h.protect;
	char whybuf[512];
	unsigned hist[LFS_CTL_BINS] = { 0 };
	for (uint64_t s = 0; s < c.nsegs; s++)
		if (c.usage[s].state == 1)
			hist[lfs_ctl_bin(c.usage[s].live_bytes, c.seg_bytes)]++;
	struct statvfs sv;
	bool full = statvfs(mountpoint, &sv) == 0 && sv.f_bavail == 0;
	/* moves and cleaner reads are counted since the mount: so is new data */
	double new_data = (double)(st.bytes_written_mount - st.bytes_moved);
	double wcost = new_data > 0 ? (new_data + (double)st.cleaner_bytes_read + (double)st.bytes_moved) / new_data : 1;
	if (json) {
		printf("{\"segments\":%llu,\"clean\":%llu,\"reserved\":%llu,\"live_bytes\":%llu,\"bytes_written\":%llu,"
		       "\"segments_cleaned\":%llu,\"blocks_moved\":%llu,\"bytes_moved\":%llu,\"cleaner_bytes_read\":%llu,"
		       "\"cleaner_passes\":%llu,\"cleaner_pid\":%llu,\"cleaner_state\":\"%s\","
		       "\"cleaner_why\":\"%s\",\"cleaner_restarts\":%llu,\"readonly\":%s,\"checkpoints\":%llu,\"write_cost\":%.4f,"
		       "\"snapshots\":%u,\"kept_checkpoints\":%u,\"held_bytes\":%llu,\"protection_period_s\":%llu,"
		       "\"utilization_histogram\":[",
		       (unsigned long long)st.segs_total, (unsigned long long)st.segs_clean,
		       (unsigned long long)st.segs_reserved, (unsigned long long)st.live_bytes,
		       (unsigned long long)st.bytes_written, (unsigned long long)st.segs_cleaned,
		       (unsigned long long)st.blocks_moved, (unsigned long long)st.bytes_moved,
		       (unsigned long long)st.cleaner_bytes_read, (unsigned long long)st.cleaner_passes,
		       (unsigned long long)st.cleaner_pid, state_name(st.cleaner_state), why_not_cleaning(&st, full, &h, whybuf, sizeof(whybuf)),
		       (unsigned long long)st.cleaner_restarts, st.readonly ? "true" : "false",
		       (unsigned long long)st.checkpoints, wcost, snaps, kept, (unsigned long long)held,
		       (unsigned long long)protect);
		for (int i = 0; i < LFS_CTL_BINS; i++)
			printf("%s%u", i ? "," : "", hist[i]);
		printf("],\"cleaned_utilization_histogram\":[");
		for (int i = 0; i < LFS_CTL_BINS; i++)
			printf("%s%llu", i ? "," : "", (unsigned long long)st.victim_hist[i]);
		printf("],\"transport\":\"%s\"}\n", transport(&c));
	} else {
		/* the image's path is the daemon's word, shown escaped as names are */
		printf("lfs on %s (image ", mountpoint);
		lfs_escape_put(stdout, path, LFS_ESC_SHOW);
		printf(")%s\n", st.readonly ? ", read-only" : "");
		printf("  segments        %llu total, %llu clean, %llu reserved, %.1f MiB live\n",
		       (unsigned long long)st.segs_total, (unsigned long long)st.segs_clean,
		       (unsigned long long)st.segs_reserved, (double)st.live_bytes / 1048576.0);
		printf("  written         %.1f MiB to the backing store, %llu checkpoints\n",
		       (double)st.bytes_written / 1048576.0, (unsigned long long)st.checkpoints);
		printf("  snapshots       %u, and %u plain checkpoints kept (protection period %llu s); "
		       "%.1f MiB of the live bytes held for them\n",
		       snaps, kept, (unsigned long long)protect, (double)held / 1048576.0);
		char who[512];
		describe_cleaner(&st, full, &h, who, sizeof(who));
		printf("  cleaner         %s\n", who);
		printf("  requests        over %s\n", transport(&c));
		printf("  cleaning        %llu passes, %llu segments cleaned, %.1f MiB read, %llu blocks moved\n",
		       (unsigned long long)st.cleaner_passes,
		       (unsigned long long)st.segs_cleaned, (double)st.cleaner_bytes_read / 1048576.0,
		       (unsigned long long)st.blocks_moved);
		printf("  write cost      %.3f  ((new + cleaner read + cleaner written) / new)\n", wcost);
		printf("  utilization     of dirty segments now | of segments cleaned, when chosen\n");
		for (int i = 0; i < LFS_CTL_BINS; i++)
			printf("    %3d-%3d%%  %8u | %llu\n", i * 10, i * 10 + 10, hist[i],
			       (unsigned long long)st.victim_hist[i]);
	}
	free(c.usage);
	lfs_ctl_close(&c.cl);
	return 0;
}

static void
usage(FILE *f)
{
	fprintf(f, "usage: lfs_cleanerd [-f] [-c CONFIG] MOUNTPOINT\n"
		   "       lfs_cleanerd --status [--json] MOUNTPOINT\n"
		   "  -f, --foreground  stay in the foreground, log to standard error\n"
		   "  -c, --config=CONFIG  read the settings from CONFIG\n"
		   "  --status          print the cleaner's and the filesystem's state\n"
		   "  --json            with --status: one JSON object\n"
		   LFS_TOOL_HELP_LINES);
}

/* Become the filesystem's one cleaner: refused when it has one (said
 * here, in the process that was started), detached unless -f.  0, or -1
 * after a message. */
static int
take_place(struct cleaner *c, const char *mnt)
{
	int err;
	if (!c->foreground) {
		/* the place is taken after daemon(), by the process that
		 * stays (the daemon knows its cleaner by its pid) */
		struct lfs_ctl_resp sr;
		struct lfs_ctl_stats st;
		if ((err = call(c, LFS_CTL_STATS, 0, 0, NULL, 0, &sr, &st, sizeof(st))) == 0 && st.cleaner_pid)
			err = -EBUSY;
		if (err == -EBUSY)
			say(LOG_ERR, "%s already has a cleaner (pid %llu); not starting another", mnt,
			    (unsigned long long)st.cleaner_pid);
		else if (err)
			say(LOG_ERR, "%s: %s", mnt, lfs_ctl_strerror(err));
		if (err || daemon(0, 0) < 0) {
			if (!err)
				say(LOG_ERR, "daemon: %s", strerror(errno));
			return -1;
		}
		log_stderr = false;
		lfs_ctl_close(&c->cl);
		if ((err = lfs_ctl_connect(&c->cl, mnt))) {
			say(LOG_ERR, "%s: cannot reach the lfs daemon: %s", mnt, lfs_ctl_strerror(err));
			return -1;
		}
	}
	if (register_cleaner(c, mnt))
		return -1;
	send_checkpoint_protection(c);
	c->state = LFS_CLEANER_IDLE;
	say(LOG_INFO, "cleaning %s (%llu segments of %llu KiB, policy %s%s, settings from %s)", mnt,
	    (unsigned long long)c->nsegs, (unsigned long long)c->seg_bytes / 1024,
	    c->cfg.policy == LFS_POLICY_GREEDY ? "greedy" : "cost-benefit", c->cfg.age_sort ? ", age-sorted" : "",
	    c->config_path ? c->config_path : "the built-in defaults");
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct lfs_tool tool = { "lfs_cleanerd", usage, 2 };
	static const struct option longopts[] = {
		{ "status", no_argument, NULL, 's' }, { "json", no_argument, NULL, 'j' },
		{ "foreground", no_argument, NULL, 'f' }, { "config", required_argument, NULL, 'c' },
		LFS_TOOL_LONGOPTS, { NULL, 0, NULL, 0 },
	};
	struct cleaner c = { .cl = { -1 }, .dev = { .fd = -1, .trace_fd = -1 } };
	lfs_cleaner_config_default(&c.cfg);
	bool want_status = false, json = false;
	int opt;
	while ((opt = getopt_long(argc, argv, "fc:" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1) {
		switch (opt) {
		case 'f': c.foreground = true; break;
		case 'c': c.config_path = optarg; break;
		case 's': want_status = true; break;
		case 'j': json = true; break;
		default: return lfs_tool_opt(&tool, opt);
		}
	}
	if (optind != argc - 1)
		return lfs_tool_usage_error(&tool);
	const char *mnt = argv[optind];
	if (want_status)
		return status(mnt, json);
	/* as nilfs_cleanerd does: the installed file unless told otherwise;
	 * none installed means the built-in defaults */
	if (!c.config_path && access(LFS_DEFAULT_CONFIG, F_OK) == 0)
		c.config_path = LFS_DEFAULT_CONFIG;

	/* started by a detached lfs on a host with syslog: log there too;
	 * else standard error until this process detaches, so that a
	 * cleaner that cannot start says why where it was started */
	const char *via = getenv("LFS_LOG");
	bool to_syslog = !c.foreground || (via && strcmp(via, "syslog") == 0);
	log_stderr = !(c.foreground && to_syslog);
	log_stamp = c.foreground && via && strcmp(via, "stamp") == 0;
	log_mnt = mnt;
	if (to_syslog)
		openlog("lfs_cleanerd", LOG_PID, LOG_DAEMON);
	char msg[512];
	if (c.config_path && lfs_cleaner_config_load(&c.cfg, c.config_path, msg, sizeof(msg))) {
		say(LOG_ERR, "%s", msg);
		return 1;
	}
	/* started by the daemon: told its socket, so the mount point is
	 * left alone (an umount right after the mount would find it busy) */
	const char *parent = c.foreground ? getenv(LFS_CTL_SOCKET_ENV) : NULL;
	int err = parent ? lfs_ctl_connect_parent(&c.cl, parent) : lfs_ctl_connect(&c.cl, mnt);
	if (err == -EINVAL && parent) {
		say(LOG_ERR, "%s=%s: not the name of an lfs control socket", LFS_CTL_SOCKET_ENV, parent);
		return 1;
	}
	if (err) {
		say(LOG_ERR, "%s: cannot reach the lfs daemon%s: %s", mnt, parent ? " that started this cleaner" : "",
		    lfs_ctl_strerror(err));
		return 1;
	}
	struct lfs_ctl_resp r;
	char path[LFS_CTL_PATH_MAX];
	if ((err = lfs_ctl_ask_info(&c.cl, &r, path))) {
		say(LOG_ERR, "%s: %s", mnt, lfs_ctl_strerror(err));
		return 1;
	}
	c.bsize = (uint32_t)r.val[0];
	c.seg_blocks = (uint32_t)r.val[1];
	c.nsegs = r.val[2];
	c.seg0 = r.val[3];
	if ((err = open_image(&c, path, &r))) {
		lfs_ctl_close(&c.cl);
		return 1;
	}
	/* SIGUSR1 may come as soon as the place is ours */
	struct sigaction sa = { .sa_handler = on_stop, .sa_flags = SA_RESTART };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_wake;
	sa.sa_flags = 0;
	sigaction(SIGUSR1, &sa, NULL);
	block_signals();
	if (!take_place(&c, mnt)) {
		err = run(&c);
		if (err)
			say(LOG_ERR, "stopping: %s", strerror(-err));
		else
			say(LOG_INFO, "stopped: %llu passes, %llu segments cleaned, %llu blocks moved",
			    (unsigned long long)c.passes, (unsigned long long)c.segs_cleaned,
			    (unsigned long long)c.blocks_moved);
	} else {
		err = -EBUSY;
	}
	if (c.scrub) {
		lfs_scrub_close(c.scrub);
		free(c.scrub);
	}
	lfs_bdev_close(&c.dev);
	lfs_ctl_close(&c.cl);
	free(c.usage);
	return err ? 1 : 0;
}
