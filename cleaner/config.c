/*
 * config.c — lfs_cleanerd.conf: "keyword value" lines, # comments.  The
 * keyword table holds each knob's parser; the defaults sit beside it.
 */
#include "cleaner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void
lfs_cleaner_config_default(struct lfs_cleaner_config *c)
{
	c->policy = LFS_POLICY_COST_BENEFIT;
	c->age_sort = true;
	c->min_clean_pct = 4;
	c->max_clean_pct = 8;
	c->interval_s = 2;
	c->segs_per_pass = 4;
	c->protection_s = 5;
	c->keep_ckpt_s = 3600;
	c->max_io_mib_s = 0;
	c->scrub_interval_s = 0;
	c->scrub_state[0] = '\0';
}

static int
parse_double(const char *v, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || end == v || *end || !(d >= lo && d <= hi)) /* NaN fails too */
		return -EINVAL;
	*out = d;
	return 0;
}

static int kw_policy(struct lfs_cleaner_config *c, const char *v)
{
	if (!strcasecmp(v, "greedy"))
		c->policy = LFS_POLICY_GREEDY;
	else if (!strcasecmp(v, "cost-benefit") || !strcasecmp(v, "cost_benefit"))
		c->policy = LFS_POLICY_COST_BENEFIT;
	else
		return -EINVAL;
	return 0;
}
static int kw_age_sort(struct lfs_cleaner_config *c, const char *v)
{
	if (!strcasecmp(v, "yes") || !strcmp(v, "1") || !strcasecmp(v, "on"))
		c->age_sort = true;
	else if (!strcasecmp(v, "no") || !strcmp(v, "0") || !strcasecmp(v, "off"))
		c->age_sort = false;
	else
		return -EINVAL;
	return 0;
}
static int kw_min(struct lfs_cleaner_config *c, const char *v) { return parse_double(v, 0, 100, &c->min_clean_pct); }
static int kw_max(struct lfs_cleaner_config *c, const char *v) { return parse_double(v, 0, 100, &c->max_clean_pct); }
static int kw_interval(struct lfs_cleaner_config *c, const char *v) { return parse_double(v, 0.01, 3600, &c->interval_s); }
static int kw_protect(struct lfs_cleaner_config *c, const char *v) { return parse_double(v, 0, 1e6, &c->protection_s); }
static int kw_keep(struct lfs_cleaner_config *c, const char *v) { return parse_double(v, 0, 1e8, &c->keep_ckpt_s); }
static int kw_rate(struct lfs_cleaner_config *c, const char *v) { return parse_double(v, 0, 1e6, &c->max_io_mib_s); }
static int kw_scrub(struct lfs_cleaner_config *c, const char *v) { return parse_double(v, 0, 1e9, &c->scrub_interval_s); }
static int kw_scrub_state(struct lfs_cleaner_config *c, const char *v)
{
	size_t n = strlen(v);
	if (v[0] != '/' || n >= sizeof(c->scrub_state))
		return -EINVAL;
	memcpy(c->scrub_state, v, n + 1);
	return 0;
}
static int kw_segs(struct lfs_cleaner_config *c, const char *v)
{
	double d;
	int err = parse_double(v, 1, 1024, &d);
	if (!err)
		c->segs_per_pass = (unsigned)d;
	return err;
}

static const struct {
	const char *name;
	int (*parse)(struct lfs_cleaner_config *, const char *);
} keywords[] = {
	{ "policy", kw_policy },                       /* cost-benefit */
	{ "age_sort", kw_age_sort },                   /* yes */
	{ "min_clean_segments", kw_min },              /* 4 (% of usable segments) */
	{ "max_clean_segments", kw_max },              /* 8 (%) */
	{ "cleaning_interval", kw_interval },          /* 2 s */
	{ "segments_per_clean", kw_segs },             /* 4 */
	{ "protection_period", kw_protect },           /* 5 s */
	{ "checkpoint_protection", kw_keep },          /* 3600 s, as NILFS2 */
	{ "max_io_rate", kw_rate },                    /* 0 MiB/s: unlimited */
	{ "scrub_interval", kw_scrub },                /* 0 s: never */
	{ "scrub_state", kw_scrub_state },             /* lfs-scrub's default file */
};

int
lfs_cleaner_config_load(struct lfs_cleaner_config *c, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	struct lfs_cleaner_config n;
	lfs_cleaner_config_default(&n);
	char line[512];
	int lineno = 0, ret = 0;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *key = strtok(line, " \t\r\n");
		if (!key)
			continue;
		char *val = strtok(NULL, " \t\r\n"), *rest = strtok(NULL, " \t\r\n");
		size_t i;
		for (i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++)
			if (!strcmp(key, keywords[i].name))
				break;
		if (i == sizeof(keywords) / sizeof(keywords[0])) {
			snprintf(err, errlen, "%s:%d: unknown keyword '%s'", path, lineno, key);
			ret = -EINVAL;
			break;
		}
		if (!val || rest || keywords[i].parse(&n, val)) {
			snprintf(err, errlen, "%s:%d: bad value for '%s'", path, lineno, key);
			ret = -EINVAL;
			break;
		}
	}
	fclose(f);
	if (!ret && n.max_clean_pct < n.min_clean_pct) {
		snprintf(err, errlen, "%s: max_clean_segments is below min_clean_segments", path);
		ret = -EINVAL;
	}
	if (!ret)
		*c = n;
	return ret;
}
