/*
 * policy.c — which segments to clean.
 *
 *   greedy:        the emptiest first (score = 1 - u)
 *   cost-benefit:  Sprite LFS's (1 - u) * age / (1 + u): cold segments
 *                  are worth cleaning at a higher utilization than hot
 *                  ones, since their free space stays free.
 *
 * u is live bytes / segment bytes; age is now - the segment's newest
 * write.  Segments written within the protection period are left alone,
 * as are full ones (nothing to gain) and active ones.
 */
#include "cleaner.h"

#include <stdlib.h>

double
lfs_policy_score(enum lfs_policy p, const struct lfs_ctl_seg *s, uint64_t seg_bytes, uint64_t now_ns)
{
	double u = (double)s->live_bytes / (double)seg_bytes;
	if (u > 1)
		u = 1;
	if (p == LFS_POLICY_GREEDY)
		return 1 - u;
	double age = now_ns > s->mtime_ns ? (double)(now_ns - s->mtime_ns) / 1e9 : 0;
	return (1 - u) * (age + 1) / (1 + u);
}

struct cand {
	uint64_t seg;
	double score;
};

static int
by_score(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->seg < y->seg ? -1 : x->seg > y->seg;
}

size_t
lfs_policy_select(const struct lfs_cleaner_config *c, const struct lfs_ctl_seg *segs, size_t nsegs,
		  uint64_t seg_bytes, uint64_t now_ns, size_t max, uint64_t *victims)
{
	struct cand *cs = malloc(nsegs * sizeof(*cs) + 1);
	if (!cs)
		return 0;
	size_t n = 0;
	uint64_t protect = (uint64_t)(c->protection_s * 1e9);
	for (size_t i = 0; i < nsegs; i++) {
		const struct lfs_ctl_seg *s = &segs[i];
		if (s->state != 1 || s->live_bytes >= seg_bytes - seg_bytes / 64)
			continue;
		if (now_ns < s->mtime_ns + protect && s->live_bytes > 0)
			continue;
		cs[n].seg = i;
		cs[n].score = lfs_policy_score(c->policy, s, seg_bytes, now_ns);
		n++;
	}
	qsort(cs, n, sizeof(*cs), by_score);
	size_t k = n < max ? n : max;
	for (size_t i = 0; i < k; i++)
		victims[i] = cs[i].seg;
	free(cs);
	return k;
}
