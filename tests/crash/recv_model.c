/*
 * recv_model.c — crashsim -V: receives among the workload's operations
 * and the checks of them in every crash state (recv_model.h).  A receive
 * is made in steps, other operations and checkpoints between them: the
 * staged directory, then a subdirectory and files written in it, then
 * the commit (three times in four) or the abort.  The last one may be
 * under way at the crash.
 */
#include "recv_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct lfs_cred root = { 0, 0, 022 };

static int
begin(struct recv_set *rs, struct lfs_fs *fs)
{
	struct recv_model *r = &rs->r[rs->n];
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "recv%d", rs->n);
	r->want = 1 + (int)rs->rnd_below(RECV_FILES);
	int err = lfs_recv_begin(fs, &r->ino, &r->gen);
	if (err)
		return err == -ENOSPC ? 0 : err;
	struct stat st;
	if ((err = lfs_mkdir(fs, r->ino, "sub", 0755, &root, &st))) {
		int aerr = lfs_recv_abort(fs, r->ino);
		return err != -ENOSPC ? err : aerr;
	}
	r->sub = st.st_ino;
	lfs_forget(fs, r->sub, 1);
	r->open = true;
	rs->n++;
	return 0;
}

/* One file in the staged tree, written (ENOSPC: not made). */
static int
add_file(struct recv_set *rs, struct lfs_fs *fs, struct recv_model *r)
{
	struct recv_file *f = &r->f[r->n];
	f->in_sub = rs->rnd_below(2);
	snprintf(f->name, sizeof(f->name), "f%d", r->n);
	f->size = rs->rnd_below(4) ? rs->rnd_below(9000) : 30000 + rs->rnd_below(60000);
	f->data = malloc(f->size + 1);
	for (size_t i = 0; i < f->size; i++)
		f->data[i] = (uint8_t)rs->rnd_below(256);
	struct stat st;
	int err = lfs_create(fs, f->in_sub ? r->sub : r->ino, f->name, 0644, true, &root, &st);
	ssize_t n = err ? err : lfs_write(fs, st.st_ino, f->data, f->size, 0, NULL);
	if (!err) {
		lfs_release(fs, st.st_ino);
		lfs_forget(fs, st.st_ino, 1);
	}
	if (n >= 0 && (size_t)n != f->size)
		n = -ENOSPC; /* a short write: the filesystem is full */
	if (n < 0 && n != -ENOSPC)
		return (int)n;
	r->n++;
	if (n < 0)
		f->size = 0; /* made, empty or partly written: that is given up below */
	return n < 0 ? -ENOSPC : 0;
}

static int
finish(struct recv_set *rs, struct lfs_fs *fs, struct recv_model *r, bool commit)
{
	r->open = false;
	int err = -ENOSPC;
	if (commit) {
		uint8_t uuid[16] = { 0x5a };
		uint64_t seq;
		r->commit_begun = rs->trace_len(rs->trace);
		err = lfs_recv_commit(fs, r->ino, r->name, uuid, 1 + (uint64_t)(r - rs->r), &seq);
		r->commit_done = rs->trace_len(rs->trace);
		if (!err) {
			rs->committed++;
			return 0;
		}
		r->commit_begun = r->commit_done = 0;
		if (err != -ENOSPC)
			return err;
	}
	rs->aborted++;
	return lfs_recv_abort(fs, r->ino);
}

int
recvsim_op(struct recv_set *rs, struct lfs_fs *fs)
{
	struct recv_model *r = rs->n ? &rs->r[rs->n - 1] : NULL;
	if (!r || !r->open)
		return rs->n < RECV_MAX ? begin(rs, fs) : 0;
	if (r->n < r->want) {
		int err = add_file(rs, fs, r);
		/* a receive that ran out of room is given up */
		return err == -ENOSPC ? finish(rs, fs, r, false) : err;
	}
	return finish(rs, fs, r, rs->rnd_below(4) != 0);
}

/* The view of received snapshot r holds exactly its tree; 0, or why not. */
static const char *
tree_differs(const struct recv_model *r, struct lfs_fs *v)
{
	static char why[96];
	struct stat st;
	if (lfs_lookup(v, LFS_ROOT_INO, "sub", &st))
		return "has no subdirectory";
	uint64_t sub = st.st_ino;
	uint8_t *buf = malloc(100000);
	const char *bad = NULL;
	for (int i = 0; i < r->n && !bad; i++) {
		const struct recv_file *f = &r->f[i];
		int err = lfs_lookup(v, f->in_sub ? sub : LFS_ROOT_INO, f->name, &st);
		ssize_t n = err ? err : lfs_read(v, st.st_ino, buf, 100000, 0);
		if (err || n != (ssize_t)f->size || (f->size && memcmp(buf, f->data, f->size))) {
			snprintf(why, sizeof(why), "file %s%s (%zu bytes) %s", f->in_sub ? "sub/" : "", f->name,
				 f->size, err ? strerror(-err) : "differs");
			bad = why;
		}
	}
	free(buf);
	return bad;
}

void
recvsim_check(const struct recv_set *rs, struct lfs_fs *fs, off_t durable, const char *what, uint64_t *failures,
	      uint64_t *views)
{
	for (int k = 0; k < rs->n; k++) {
		const struct recv_model *r = &rs->r[k];
		bool must = r->commit_done && r->commit_done <= durable;
		bool mustnt = !r->commit_begun || r->commit_begun > durable;
		uint64_t seq;
		bool there = lfs_snapshot_find(fs, r->name, &seq) == 0;
		if ((must && !there) || (mustnt && there)) {
			printf("crashsim: %s: received snapshot %s %s\n", what, r->name,
			       there ? "is there, but its commit had not begun" : "is missing");
			++*failures;
			return;
		}
		if (!there)
			continue;
		struct lfs_fs *v = NULL;
		int err = lfs_view_open(fs, r->name, false, &v);
		const char *why = err ? strerror(-err) : tree_differs(r, v);
		*views += !err;
		if (v)
			lfs_abandon(v);
		if (why) {
			printf("crashsim: %s: received snapshot %s: %s\n", what, r->name, why);
			++*failures;
			return;
		}
	}
}

void
recvsim_check_gone(const struct recv_set *rs, struct lfs_fs *fs, off_t durable, const char *what,
		   uint64_t *failures, uint64_t *views)
{
	for (int k = 0; k < rs->n; k++) {
		char name[LFS_STAGED_NAME_MAX];
		struct stat st;
		snprintf(name, sizeof(name), LFS_STAGED_PREFIX "%llu.%u", (unsigned long long)rs->r[k].ino, rs->r[k].gen);
		int err = lfs_lookup(fs, LFS_ROOT_INO, name, &st);
		if (!err)
			lfs_forget(fs, st.st_ino, 1);
		if (err != -ENOENT) {
			printf("crashsim: %s: the staged tree of %s is still there after the mount (%s)\n", what,
			       rs->r[k].name, err ? strerror(-err) : "found");
			++*failures;
			return;
		}
	}
	recvsim_check(rs, fs, durable, what, failures, views);
}

unsigned
recvsim_report(const struct recv_set *rs, unsigned seed, uint64_t views, bool full)
{
	printf("crashsim: seed %u: %d receives, %llu committed, %llu given up, %s at the crash; %llu snapshot views "
	       "read in the states (received trees)\n", seed, rs->n, (unsigned long long)rs->committed,
	       (unsigned long long)rs->aborted, rs->n && rs->r[rs->n - 1].open ? "one under way" : "none",
	       (unsigned long long)views);
	/* the workload is there to make them: a run without is no test (on
	 * a full filesystem, one begun at least) */
	if (full ? !rs->n : !rs->committed || !views) {
		printf("crashsim: seed %u: -V committed no receive, or no state held one\n", seed);
		return 1;
	}
	return 0;
}

int
recvsim_delete_all(const struct recv_set *rs, struct lfs_fs *fs, const char *what)
{
	for (int k = 0; k < rs->n; k++) {
		uint64_t seq;
		if (lfs_snapshot_find(fs, rs->r[k].name, &seq))
			continue;
		int err = lfs_snapshot_delete(fs, seq);
		if (err) {
			printf("crashsim: %s: deleting received snapshot %s after the crash: %s\n", what, rs->r[k].name,
			       strerror(-err));
			return err;
		}
	}
	return 0;
}

void
recvsim_free(struct recv_set *rs)
{
	for (int k = 0; k < rs->n; k++)
		for (int i = 0; i < rs->r[k].n; i++)
			free(rs->r[k].f[i].data);
}
