/*
 * recv_mount.c — lfs-receive MNT: a stream made a snapshot of the lfs
 * mounted at MNT.  The daemon stages a directory no name leads to
 * (LFS_CTL_RECV_BEGIN), the tree is made in it, and the daemon commits it
 * as a snapshot in one checkpoint (LFS_CTL_RECV_COMMIT); closing the
 * connection before that lets the tree go.  An incremental stream's
 * parent is looked for among the target's snapshots before anything is
 * written, and its tree made anew in the staged directory (a child sends
 * it in full from a view of it, this process receives it) for the
 * changes to apply to.
 */
#include "cleaner.h"
#include "ctl_proto.h"
#include "fuse_snapshot.h"
#include "lfs.h"
#include "recv.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define bad recv_bad
#define sys recv_sys

/* The directory the daemon staged, by the name only lookups find. */
static int
open_staged(const char *mnt, uint64_t ino, uint32_t gen)
{
	char path[LFS_CTL_PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/" LFS_STAGED_PREFIX "%" PRIu64 ".%" PRIu32, mnt, ino, gen);
	return open(path, O_RDONLY | O_DIRECTORY);
}

static int
ctl_simple(struct lfs_ctl_client *cl, uint16_t op, uint64_t a0, uint64_t a1, const void *payload, size_t plen,
	   struct lfs_ctl_resp *resp)
{
	struct lfs_ctl_req req = { .op = op, .count = plen ? 1 : 0, .arg = { a0, a1 } };
	return lfs_ctl_call(cl, &req, payload, plen, resp, NULL, 0, NULL);
}

static void
uuid_hex(char out[33], const uint8_t uuid[16])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", uuid[i]);
}

/* The target's snapshot that is the stream's parent: received from the
 * same checkpoint of the same filesystem (its origin record).  Asked
 * before anything is written; so is whether the name is free. */
static int
find_parent(struct lfs_ctl_client *cl, struct recv *rv, const struct lfs_stream_begin *b, uint64_t *pseq)
{
	struct lfs_ckpt_info *ci;
	size_t n;
	uint64_t held;
	uint32_t protect;
	int err = lfs_ctl_ask_snapshots(cl, &ci, &n, &held, &protect);
	if (err)
		return bad(rv, err, "listing the target's snapshots: %s", lfs_ctl_strerror(err));
	bool taken = false;
	*pseq = 0;
	for (size_t i = 0; i < n; i++) {
		if ((ci[i].flags & LFS_CKPT_INFO_RECEIVED) && ci[i].src_seq == b->parent_seq &&
		    !memcmp(ci[i].src_uuid, b->uuid, sizeof(b->uuid)))
			*pseq = ci[i].seq;
		taken |= (ci[i].flags & LFS_CKPT_INFO_SNAPSHOT) && !strcmp(ci[i].name, b->name);
	}
	free(ci);
	char hex[33];
	uuid_hex(hex, b->uuid);
	if (!*pseq)
		return bad(rv, -ENOENT, "the stream's parent '%s' is checkpoint %" PRIu64 " of %s; the target has no "
			   "snapshot received from it (send that one first, or in full)", b->parent_name,
			   b->parent_seq, hex);
	return taken ? bad(rv, -EEXIST, "the target has a snapshot '%s' already", b->name) : 0;
}

static int
write_fd(void *ctx, const void *buf, size_t len)
{
	int fd = *(int *)ctx;
	for (const char *p = buf; len;) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		}
	}
	return 0;
}

/* The child: the target's checkpoint pseq as a full stream on fd. */
static int
send_parent(const char *image, const char *mnt, uint64_t pseq, int fd)
{
	char spec[24];
	struct lfs_remote *r;
	struct lfs_fs *v;
	snprintf(spec, sizeof(spec), "%" PRIu64, pseq);
	if (lfs_remote_view(image, mnt, spec, "(lfs-receive)", &r, &v))
		return 1;
	int err = lfs_send(v, "", write_fd, &fd);
	lfs_abandon(v);
	lfs_remote_free(r);
	return err ? 1 : 0;
}

/* The parent's tree made anew in the staged directory (cwd), which the
 * incremental stream then changes: the target's snapshot pseq, sent as
 * a full stream by a child and received here. */
static int
copy_parent(struct lfs_ctl_client *cl, struct recv *rv, const char *mnt, uint64_t pseq)
{
	char image[LFS_CTL_PATH_MAX];
	struct lfs_ctl_resp info;
	int pfd[2];
	int err = lfs_ctl_ask_info(cl, &info, image);
	if (err)
		return bad(rv, err, "%s: the daemon's image: %s", mnt, lfs_ctl_strerror(err));
	if (pipe(pfd) < 0)
		return sys(rv, -1, "making a pipe for", "the parent's tree");
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		_exit(send_parent(image, mnt, pseq, pfd[1]));
	}
	close(pfd[1]);
	struct recv copy = { .apply = true };
	struct lfs_stream_begin b = { 0 };
	struct lfs_stream_rd rd;
	err = pid < 0 ? sys(rv, -1, "forking to read", "the parent's tree") : recv_stream_open(&copy, &rd, &pfd[0], &b);
	if (!err && !b.parent_seq)
		err = recv_stream_rest(&copy, &rd, &b);
	if (pid >= 0)
		lfs_stream_rd_free(&rd);
	close(pfd[0]);
	int status = 0;
	if (pid > 0 && (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) && !err)
		err = bad(rv, -EIO, "reading the target's parent snapshot (checkpoint %" PRIu64 ") failed", pseq);
	if (err && !rv->why[0])
		bad(rv, err, "making the parent's tree anew: %s", copy.why[0] ? copy.why : strerror(-err));
	recv_free(&copy);
	return err;
}

/* Build the tree in the staged directory ino (cwd there), then commit. */
static int
fill_and_commit(struct lfs_ctl_client *cl, uint64_t ino, struct recv *rv, struct lfs_stream_rd *rd,
		struct lfs_stream_begin *b, uint64_t *seq)
{
	int err = recv_stream_rest(rv, rd, b);
	/* nothing of the tree held open: the kernel forgets it whole when
	 * the daemon lets it go */
	if (rv->open_fd >= 0)
		close(rv->open_fd);
	rv->open_fd = -1;
	if (chdir("/") < 0 && !err)
		err = sys(rv, -1, "leaving", "the staged tree");
	struct lfs_ctl_resp resp;
	if (err) {
		(void)ctl_simple(cl, LFS_CTL_RECV_ABORT, ino, 0, NULL, 0, &resp);
		return err;
	}
	struct lfs_ctl_recv r = { .name = { 0 } };
	snprintf(r.name, sizeof(r.name), "%s", b->name);
	memcpy(r.uuid, b->uuid, sizeof(r.uuid));
	err = ctl_simple(cl, LFS_CTL_RECV_COMMIT, ino, b->seq, &r, sizeof(r), &resp);
	if (err)
		bad(rv, err, "committing snapshot '%s': %s", b->name,
		    err == -EEXIST ? "the target has a snapshot of that name" : lfs_ctl_strerror(err));
	*seq = resp.val[0];
	return err;
}

/* The staged directory the daemon gives, made cwd; an incremental
 * stream's parent made anew in it.  *ino: the directory (0: none). */
static int
stage(struct lfs_ctl_client *cl, struct recv *rv, const char *mnt, uint64_t pseq, uint64_t *ino)
{
	struct lfs_ctl_resp resp;
	int err = ctl_simple(cl, LFS_CTL_RECV_BEGIN, 0, 0, NULL, 0, &resp);
	if (err)
		return bad(rv, err, "%s: the daemon takes no stream: %s", mnt, lfs_ctl_strerror(err));
	*ino = resp.val[0];
	int dir = open_staged(mnt, *ino, (uint32_t)resp.val[1]);
	if (dir < 0 || fchdir(dir) < 0)
		err = sys(rv, -1, "opening the staged tree in", mnt);
	if (dir >= 0)
		close(dir);
	if (!err && pseq)
		err = copy_parent(cl, rv, mnt, pseq);
	if (err)
		(void)ctl_simple(cl, LFS_CTL_RECV_ABORT, *ino, 0, NULL, 0, &resp);
	return err;
}

int
recv_into_mount(const char *mnt, bool verbose)
{
	struct lfs_ctl_client cl = { .fd = -1 };
	struct recv rv = { .apply = true, .open_fd = -1 };
	struct lfs_stream_begin b = { 0 };
	struct lfs_stream_rd rd = { .buf = NULL };
	uint64_t seq = 0, ino = 0, pseq = 0;
	int mnt_fd = open(mnt, O_RDONLY | O_DIRECTORY);
	int err = mnt_fd < 0 ? sys(&rv, -1, "opening", mnt) : lfs_ctl_connect(&cl, mnt);
	if (mnt_fd >= 0 && err)
		bad(&rv, err, "%s: not a mounted lfs, or its daemon cannot be reached: %s", mnt, lfs_ctl_strerror(err));
	if (!err)
		err = recv_stream_open(&rv, &rd, NULL, &b);
	if (!err && !lfs_stream_name_ok(b.name, strlen(b.name)))
		err = bad(&rv, -EINVAL, "the stream's snapshot has no name a snapshot can have");
	/* the parent, checked before anything is written */
	if (!err && b.parent_seq)
		err = find_parent(&cl, &rv, &b, &pseq);
	if (!err)
		err = stage(&cl, &rv, mnt, pseq, &ino);
	if (!err)
		err = fill_and_commit(&cl, ino, &rv, &rd, &b, &seq);
	lfs_stream_rd_free(&rd);
	lfs_ctl_close(&cl); /* a receive not committed: the daemon lets the tree go */
	if (mnt_fd >= 0)
		close(mnt_fd);
	if (err)
		fprintf(stderr, "lfs-receive: nothing received: %s\n", rv.why[0] ? rv.why : strerror(-err));
	else if (verbose)
		printf("received snapshot '%s' (checkpoint %" PRIu64 " of the source%s): %zu inodes, %" PRIu64
		       " bytes of data, as checkpoint %" PRIu64 " of %s\n", b.name, b.seq,
		       b.parent_seq ? ", changes since its parent" : "", rv.n + rv.changed, rv.data_bytes, seq, mnt);
	recv_free(&rv);
	return err ? 1 : 0;
}
