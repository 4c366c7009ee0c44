/*
 * scrub.c — the scrubber's mechanism (scrub.h): read the log, keep the
 * blocks that fail their check, ask the daemon which are damage, save
 * and load where a scan is.
 */
#include "scrub.h"
#include "image.h"
#include "logwalk.h"
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double
mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
lfs_scrub_open(struct lfs_scrub *s, struct lfs_ctl_client *cl, char *msg, size_t len)
{
	memset(s, 0, sizeof(*s));
	s->dev.fd = -1;
	s->dfd = -1;
	s->dev.trace_fd = -1;
	s->cl = cl;
	struct lfs_ctl_resp r;
	char path[LFS_CTL_PATH_MAX];
	int err = lfs_ctl_ask_info(cl, &r, path);
	if (err) {
		snprintf(msg, len, "%s", lfs_ctl_strerror(err));
		return err;
	}
	if ((err = lfs_ctl_open_image(path, &r, &s->dev, &s->sb, msg, len)))
		return err;
	msg[0] = '\0';
	s->bsize = s->sb.block_size;
	s->seg_blocks = s->sb.seg_blocks;
	s->nsegs = s->sb.nsegs;
	s->seed = lfs_super_seed(&s->sb);
	lfs_uuid_format(s->sb.uuid, s->uuid);
	s->usage = calloc(s->nsegs ? s->nsegs : 1, sizeof(*s->usage));
	s->sus = malloc(LFS_SCRUB_MAX_SUSPECTS * sizeof(*s->sus));
	/* a pseg's blocks, aligned for O_DIRECT; where the image's file
	 * system has no O_DIRECT (tmpfs), reads go through the page cache */
	void *buf = NULL;
	if (posix_memalign(&buf, 4096, (size_t)s->seg_blocks * s->bsize))
		buf = NULL;
	s->buf = buf;
	s->dfd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
	if (!s->usage || !s->sus || !s->buf) {
		lfs_scrub_close(s);
		snprintf(msg, len, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	return 0;
}

void
lfs_scrub_close(struct lfs_scrub *s)
{
	if (s->dev.fd >= 0)
		lfs_bdev_close(&s->dev);
	s->dev.fd = -1;
	if (s->dfd >= 0)
		close(s->dfd);
	s->dfd = -1;
	free(s->usage);
	free(s->sus);
	free(s->buf);
	s->usage = NULL;
	s->sus = NULL;
	s->buf = NULL;
}

void
lfs_scrub_reset(struct lfs_scrub *s)
{
	s->next_seg = s->segs_done = s->blocks = s->bytes = s->sus_more = s->finished = 0;
	s->nsus = 0;
	s->seconds = 0;
	s->complete = false;
}

int
lfs_scrub_usage(struct lfs_scrub *s)
{
	for (uint64_t first = 0; first < s->nsegs; first += LFS_CTL_MAX_RECORDS) {
		uint32_t n = (uint32_t)(s->nsegs - first < LFS_CTL_MAX_RECORDS ? s->nsegs - first : LFS_CTL_MAX_RECORDS);
		struct lfs_ctl_req req = { .op = LFS_CTL_USAGE, .count = n, .arg = { first } };
		struct lfs_ctl_resp r;
		int err = lfs_ctl_call(s->cl, &req, NULL, 0, &r, s->usage + first, n * sizeof(*s->usage), NULL);
		if (err)
			return err;
	}
	return 0;
}

uint64_t
lfs_scrub_left(const struct lfs_scrub *s, uint64_t from)
{
	uint64_t n = 0;
	for (uint64_t i = from; i < s->nsegs; i++)
		n += s->usage[i].state != 0;
	return n;
}

static void
suspect(struct lfs_scrub *s, const struct lfs_ctl_blk *b)
{
	if (s->nsus < LFS_SCRUB_MAX_SUSPECTS)
		s->sus[s->nsus++] = *b;
	else
		s->sus_more++;
}

/* Read n blocks at addr into s->buf, from the medium where the image
 * allows it (dfd, O_DIRECT): 0 or -errno. */
static int
read_blocks(struct lfs_scrub *s, uint64_t addr, uint32_t n)
{
	int fd = s->dfd >= 0 ? s->dfd : s->dev.fd;
	size_t len = (size_t)n * s->bsize, done = 0;
	while (done < len) {
		ssize_t r = pread(fd, s->buf + done, len - done, (off_t)(addr * s->bsize + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		done += (size_t)r;
	}
	s->bytes += len;
	return 0;
}

/* The blocks of the pseg the walk is at, against their entries' crcs; a
 * block the device cannot read is a suspect as one that fails. */
static void
scrub_pseg(struct lfs_scrub *s, const struct lfs_logwalk *w)
{
	uint32_t n = w->h.nblocks;
	bool whole = read_blocks(s, w->addr + 1, n) == 0;
	for (uint32_t j = 0; j < n; j++) {
		struct lfs_pseg_entry e;
		lfs_logwalk_entry(w, j, &e);
		const uint8_t *blk = s->buf + (size_t)(whole ? j : 0) * s->bsize;
		if ((whole || read_blocks(s, w->addr + 1 + j, 1) == 0) && lfs_crc(s->seed, blk, s->bsize) == e.crc)
			continue;
		suspect(s, &(struct lfs_ctl_blk){ .addr = w->addr + 1 + j, .lblk = e.lblk, .ino = e.ino,
						 .version = e.version, .kind = e.kind });
	}
}

/* Whether a chain that ended where w did, `held` blocks described, was
 * cut short by a summary that fails (a wrong magic too: damage may
 * replace a whole block): the segment counts more live bytes than the
 * psegs before it hold.  Only a segment no longer written is judged; in
 * the one being written, what is counted may not be on the disk yet. */
static bool
chain_cut(const struct lfs_logwalk *w, const struct lfs_ctl_seg *u, uint64_t held, uint32_t bsize)
{
	return u->state == 1 && u->live_bytes > held * bsize &&
	       (w->end == LFS_LOGWALK_BAD_SUMMARY || w->end == LFS_LOGWALK_OVERRUN || w->end == LFS_LOGWALK_NO_SUMMARY);
}

/* Read segment seg's chain: the summaries with the one log reader, the
 * blocks each describes past the page cache (its copy is what the
 * daemon reads, and what the medium holds is what is checked; nor does
 * a scan push the daemon's pages out). */
static int
scrub_segment(struct lfs_scrub *s, struct lfs_logwalk *w, uint64_t seg)
{
	uint64_t held = 0;          /* blocks of the verified psegs */
	uint64_t before = s->dev.bytes_read;
	int err;
	lfs_logwalk_segment(w, seg);
	while ((err = lfs_logwalk_next(w)) > 0) {
		scrub_pseg(s, w);
		held += w->h.nblocks;
		s->blocks += 1 + w->h.nblocks;
	}
	s->bytes += s->dev.bytes_read - before;
	if (err < 0)
		return err;
	uint64_t live = s->usage[seg].live_bytes, have = held * s->bsize;
	if (chain_cut(w, &s->usage[seg], held, s->bsize))
		suspect(s, &(struct lfs_ctl_blk){ .addr = s->sb.seg0 + seg * s->seg_blocks + w->off,
						 .lblk = live - have, .kind = LFS_SCRUB_SUMMARY });
	return 0;
}

int
lfs_scrub_step(struct lfs_scrub *s)
{
	while (s->next_seg < s->nsegs && s->usage[s->next_seg].state == 0)
		s->next_seg++;
	if (s->next_seg >= s->nsegs) {
		if (!s->complete)
			s->finished = (uint64_t)time(NULL);
		s->complete = true;
		return 0;
	}
	struct lfs_logwalk w;
	int err = lfs_logwalk_init(&w, &s->dev, &s->sb, s->seed, 0);
	if (err)
		return err;
	double t0 = mono_s();
	err = scrub_segment(s, &w, s->next_seg);
	lfs_logwalk_free(&w);
	s->seconds += mono_s() - t0;
	if (err)
		return err;
	s->next_seg++;
	s->segs_done++;
	return 1;
}

/* The inodes whose records an inode block holds, appended to *out. */
static int
block_inodes(struct lfs_scrub *s, const struct lfs_ctl_damage *d, struct lfs_scrub_damage **out, size_t *n,
	     size_t *cap, uint32_t *inos)
{
	uint64_t next = LFS_ROOT_INO;
	do {
		struct lfs_ctl_req req = { .op = LFS_CTL_SCRUB_INODES, .count = LFS_CTL_MAX_RECORDS,
					   .arg = { d->addr, next } };
		struct lfs_ctl_resp r;
		size_t got;
		int err = lfs_ctl_call(s->cl, &req, NULL, 0, &r, inos, LFS_CTL_REPLY_SCRUB_INODES_MAX, &got);
		if (err)
			return err;
		/* the daemon's answer is checked: it moves on, and fits */
		if (got != r.count * sizeof(uint32_t) || (r.val[0] && r.val[0] <= next))
			return -EPROTO;
		next = r.val[0];
		for (uint32_t i = 0; i < r.count; i++) {
			if (*n == *cap) {
				size_t c = *cap ? 2 * *cap : 64;
				struct lfs_scrub_damage *g = realloc(*out, c * sizeof(**out));
				if (!g)
					return -ENOMEM;
				*out = g;
				*cap = c;
			}
			(*out)[(*n)++] = (struct lfs_scrub_damage){ .d = *d, .ino = inos[i] };
			(*out)[*n - 1].d.flags |= LFS_DAMAGE_LIVE;
		}
	} while (next);
	return 0;
}

static int
by_owner(const void *a, const void *b)
{
	const struct lfs_scrub_damage *x = a, *y = b;
	uint32_t xi = x->ino ? x->ino : x->d.ino, yi = y->ino ? y->ino : y->d.ino;
	if (xi != yi)
		return xi < yi ? -1 : 1;
	if (x->d.kind != y->d.kind)
		return x->d.kind < y->d.kind ? -1 : 1;
	if (x->d.lblk != y->d.lblk)
		return x->d.lblk < y->d.lblk ? -1 : 1;
	return x->d.addr < y->d.addr ? -1 : x->d.addr > y->d.addr;
}

static int
keep(struct lfs_scrub_damage **out, size_t *n, size_t *cap, const struct lfs_ctl_damage *d)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		struct lfs_scrub_damage *g = realloc(*out, c * sizeof(**out));
		if (!g)
			return -ENOMEM;
		*out = g;
		*cap = c;
	}
	(*out)[(*n)++] = (struct lfs_scrub_damage){ .d = *d };
	return 0;
}

/* Whether the summary at addr still ends its segment's chain, the
 * segment (as the daemon counts it now) holding live bytes past what the
 * verified psegs before it hold: *lost those bytes, or 0. */
static int
summary_lost(struct lfs_scrub *s, uint64_t addr, uint64_t *lost)
{
	*lost = 0;
	if (addr < s->sb.seg0 || (addr - s->sb.seg0) / s->seg_blocks >= s->nsegs)
		return 0;
	uint64_t seg = (addr - s->sb.seg0) / s->seg_blocks;
	struct lfs_ctl_req req = { .op = LFS_CTL_USAGE, .count = 1, .arg = { seg } };
	struct lfs_ctl_resp r;
	int err = lfs_ctl_call(s->cl, &req, NULL, 0, &r, &s->usage[seg], sizeof(s->usage[seg]), NULL);
	if (err || s->usage[seg].state == 0)
		return err;
	struct lfs_logwalk w;
	if ((err = lfs_logwalk_init(&w, &s->dev, &s->sb, s->seed, 0)))
		return err;
	uint64_t held = 0;
	lfs_logwalk_segment(&w, seg);
	while ((err = lfs_logwalk_next(&w)) > 0)
		held += w.h.nblocks;
	uint64_t at = s->sb.seg0 + seg * s->seg_blocks + w.off;
	if (err == 0 && at == addr && chain_cut(&w, &s->usage[seg], held, s->bsize))
		*lost = s->usage[seg].live_bytes - held * s->bsize;
	lfs_logwalk_free(&w);
	return err < 0 ? err : 0;
}

/* One page of suspects [i, i + k): the daemon's answers into `rec`. */
static int
confirm_page(struct lfs_scrub *s, size_t i, uint32_t k, struct lfs_ctl_blk *page, struct lfs_ctl_damage *rec)
{
	uint32_t m = 0;
	for (uint32_t j = 0; j < k; j++)
		if (s->sus[i + j].kind != LFS_SCRUB_SUMMARY)
			page[m++] = s->sus[i + j];
	if (!m)
		return 0;
	struct lfs_ctl_req req = { .op = LFS_CTL_SCRUB_WHO, .count = m };
	struct lfs_ctl_resp r;
	int err = lfs_ctl_call(s->cl, &req, page, m * sizeof(*page), &r, rec, m * sizeof(*rec), NULL);
	if (err)
		return err;
	/* answers for what was asked, in order */
	for (uint32_t j = 0; j < m; j++)
		if (rec[j].addr != page[j].addr || rec[j].kind != page[j].kind)
			return -EPROTO;
	return (int)m;
}

int
lfs_scrub_confirm(struct lfs_scrub *s, struct lfs_scrub_damage **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	size_t cap = 0;
	struct lfs_ctl_blk *page = malloc(LFS_CTL_MAX_RECORDS * sizeof(*page));
	struct lfs_ctl_damage *rec = malloc(LFS_CTL_MAX_RECORDS * sizeof(*rec));
	uint32_t *inos = malloc(LFS_CTL_REPLY_SCRUB_INODES_MAX);
	int err = page && rec && inos ? 0 : -ENOMEM;
	for (size_t i = 0; i < s->nsus && !err; i += LFS_CTL_MAX_RECORDS) {
		uint32_t k = (uint32_t)(s->nsus - i < LFS_CTL_MAX_RECORDS ? s->nsus - i : LFS_CTL_MAX_RECORDS);
		int m = confirm_page(s, i, k, page, rec);
		if (m < 0)
			err = m;
		for (int j = 0; j < m && !err; j++) {
			const struct lfs_ctl_damage *d = &rec[j];
			if (!(d->flags & LFS_DAMAGE_BAD))
				continue;
			size_t had = *n;
			if (d->kind == LFS_BK_INODE)
				err = block_inodes(s, d, out, n, &cap, inos);
			if (!err && *n == had && (d->flags & (LFS_DAMAGE_LIVE | LFS_DAMAGE_HELD)))
				err = keep(out, n, &cap, d);
		}
		/* summaries: damage if their segment's chain still ends there
		 * with live data behind */
		for (uint32_t j = 0; j < k && !err; j++) {
			const struct lfs_ctl_blk *b = &s->sus[i + j];
			uint64_t lost = 0;
			if (b->kind == LFS_SCRUB_SUMMARY && (err = summary_lost(s, b->addr, &lost)) == 0 && lost)
				err = keep(out, n, &cap, &(struct lfs_ctl_damage){ .addr = b->addr, .lblk = lost,
										     .kind = LFS_SCRUB_SUMMARY,
										     .flags = LFS_DAMAGE_BAD |
											      LFS_DAMAGE_LIVE });
		}
	}
	free(page);
	free(rec);
	free(inos);
	if (err) {
		free(*out);
		*out = NULL;
		*n = 0;
		return err;
	}
	if (*n)
		qsort(*out, *n, sizeof(**out), by_owner);
	return 0;
}

/* ---------------------------------------------------------------- state */

int
lfs_scrub_state_path(const char *uuid, char *out, size_t len)
{
	char dir[PATH_MAX];
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	if (geteuid() == 0)
		snprintf(dir, sizeof(dir), "/var/lib/lfs");
	else if (xdg && xdg[0] == '/')
		snprintf(dir, sizeof(dir), "%s/lfs", xdg);
	else if (home && home[0] == '/')
		snprintf(dir, sizeof(dir), "%s/.local/state/lfs", home);
	else
		return -ENOENT;
	/* each level, as mkdir -p */
	for (char *p = dir + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(dir, 0700) && errno != EEXIST)
				return -errno;
			*p = c;
			if (!c)
				break;
		}
	}
	if (snprintf(out, len, "%s/scrub-%s", dir, uuid) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

#define STATE_MAGIC "lfs-scrub-state 1"

int
lfs_scrub_save(const struct lfs_scrub *s, const char *path)
{
	char tmp[4200];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "%s\nuuid %s\nnsegs %" PRIu64 "\nnext_seg %" PRIu64 "\nsegs_done %" PRIu64 "\nblocks %" PRIu64
		"\nbytes %" PRIu64 "\nseconds %.3f\nsuspects_more %" PRIu64 "\ncomplete %d\nfinished %" PRIu64 "\n",
		STATE_MAGIC, s->uuid, s->nsegs, s->next_seg, s->segs_done, s->blocks, s->bytes, s->seconds,
		s->sus_more, s->complete, s->finished);
	for (size_t i = 0; i < s->nsus; i++) {
		const struct lfs_ctl_blk *b = &s->sus[i];
		fprintf(f, "suspect %" PRIu64 " %" PRIu64 " %u %u %u\n", b->addr, b->lblk, b->ino, b->version, b->kind);
	}
	int err = 0;
	if (fflush(f) || fsync(fileno(f)))
		err = -errno;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* One "key value" line of the state file into s. */
static bool
state_line(struct lfs_scrub *s, const char *line)
{
	uint64_t v;
	double d;
	char uuid[40];
	unsigned ino, version, kind;
	struct lfs_ctl_blk b = { 0 };
	if (sscanf(line, "uuid %39s", uuid) == 1)
		return strcmp(uuid, s->uuid) == 0;
	if (sscanf(line, "nsegs %" SCNu64, &v) == 1)
		return v == s->nsegs;
	if (sscanf(line, "next_seg %" SCNu64, &v) == 1)
		return (s->next_seg = v) <= s->nsegs;
	if (sscanf(line, "segs_done %" SCNu64, &v) == 1)
		return (s->segs_done = v) <= s->nsegs;
	if (sscanf(line, "blocks %" SCNu64, &s->blocks) == 1 || sscanf(line, "bytes %" SCNu64, &s->bytes) == 1 ||
	    sscanf(line, "suspects_more %" SCNu64, &s->sus_more) == 1 ||
	    sscanf(line, "finished %" SCNu64, &s->finished) == 1)
		return true;
	if (sscanf(line, "seconds %lf", &d) == 1)
		return (s->seconds = d) >= 0 && d < 1e12;
	if (sscanf(line, "complete %u", &kind) == 1) {
		s->complete = kind != 0;
		return kind <= 1;
	}
	if (sscanf(line, "suspect %" SCNu64 " %" SCNu64 " %u %u %u", &b.addr, &b.lblk, &ino, &version, &kind) == 5) {
		if (kind > LFS_BK_HELD)
			return false;
		b.ino = ino;
		b.version = version;
		b.kind = (uint8_t)kind;
		suspect(s, &b);
		return true;
	}
	return false;
}

int
lfs_scrub_load(struct lfs_scrub *s, const char *path, char *msg, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	lfs_scrub_reset(s);
	char line[256];
	unsigned no = 0;
	int err = 0;
	bool uuid = false;
	while (!err && fgets(line, sizeof(line), f)) {
		no++;
		if (!strchr(line, '\n') && !feof(f)) {
			err = -EINVAL; /* longer than any line this writes */
			break;
		}
		if (no == 1) {
			if (strncmp(line, STATE_MAGIC "\n", sizeof(STATE_MAGIC)) != 0)
				err = -EINVAL;
			continue;
		}
		uuid |= strncmp(line, "uuid ", 5) == 0;
		if (!state_line(s, line))
			err = -EINVAL;
	}
	if (!err && (no == 0 || !uuid))
		err = -EINVAL;
	fclose(f);
	if (err) {
		snprintf(msg, len, "%s: line %u: not a scrub state of filesystem %s (%" PRIu64 " segments)", path, no,
			 s->uuid, s->nsegs);
		lfs_scrub_reset(s);
	}
	return err;
}
