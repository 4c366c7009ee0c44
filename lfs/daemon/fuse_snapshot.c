/*
 * fuse_snapshot.c — layer 7: a snapshot mounted beside the live tree
 * (lfs -o snapshot=NAME while the image is mounted): this daemon serves
 * the kept checkpoint read-only, and every block it reads comes over the
 * control socket of the daemon that has the image (LFS_CTL_VIEW_READ),
 * which finds it through its held table: only that daemon knows where
 * the cleaner has moved a block.  The kernel mount is read-only, so no
 * write reaches even the page cache.  The connection holds the
 * checkpoint (LFS_CTL_VIEW_HOLD, with this mount point) for as long as
 * this daemon runs: lfs-ckpt cannot delete it from under the mount.
 */
#include "fuse_snapshot.h"

#include "cleaner.h"
#include "format.h"
#include "text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Single blocks kept by address (direct-mapped): the inode block the
 * records of its neighbours are read from one after another, a
 * directory's or an indirect block read again, come over the socket
 * once.  A kept checkpoint's blocks never change, wherever the cleaner
 * moves them, so what was read stays true. */
#define REMOTE_CACHE 256u

struct lfs_remote {
	struct lfs_ctl_client cl;
	uint32_t bsize;
	uint64_t tag[REMOTE_CACHE]; /* the address + 1 in each slot, 0: none */
	uint8_t *cache;             /* REMOTE_CACHE blocks */
};

static int
remote_read(void *ctx, uint64_t seq, uint64_t addr, uint32_t n, void *buf)
{
	struct lfs_remote *r = ctx;
	uint32_t most = LFS_CTL_VIEW_READ_BYTES / r->bsize, slot = (uint32_t)(addr % REMOTE_CACHE);
	uint8_t *cached = r->cache ? r->cache + (size_t)slot * r->bsize : NULL;
	if (n == 1 && cached && r->tag[slot] == addr + 1) {
		memcpy(buf, cached, r->bsize);
		return 0;
	}
	int err = 0;
	for (uint32_t i = 0, k; i < n && !err; i += k) {
		k = n - i < most ? n - i : most;
		struct lfs_ctl_req req = { .op = LFS_CTL_VIEW_READ, .count = k, .arg = { seq, addr + i } };
		struct lfs_ctl_resp resp;
		/* exactly k blocks, or -EPROTO */
		err = lfs_ctl_call(&r->cl, &req, NULL, 0, &resp, (uint8_t *)buf + (size_t)i * r->bsize,
				   (size_t)k * r->bsize, NULL);
		if (!err && resp.count != k)
			err = -EPROTO;
	}
	if (!err && n == 1 && cached) {
		memcpy(cached, buf, r->bsize);
		r->tag[slot] = addr + 1;
	}
	if (err)
		lfs_log("snapshot %" PRIu64 ": block %" PRIu64 " from the mounted filesystem: %s", seq, addr,
			lfs_ctl_strerror(err));
	/* the live daemon gone or the snapshot deleted: the reader gets EIO */
	return err == -ESTALE || err == -EFSCORRUPTED || err == -ENOMEM ? err : err ? -EIO : 0;
}

static int
remote_imap(void *ctx, uint64_t seq, uint64_t *addrs, uint32_t n, uint32_t *root)
{
	struct lfs_remote *r = ctx;
	uint32_t have = 0;
	while (have < n) {
		uint32_t want = n - have < LFS_CTL_MAX_RECORDS ? n - have : LFS_CTL_MAX_RECORDS;
		struct lfs_ctl_req req = { .op = LFS_CTL_VIEW_IMAP, .count = want, .arg = { seq, have } };
		struct lfs_ctl_resp resp;
		size_t got;
		int err = lfs_ctl_call(&r->cl, &req, NULL, 0, &resp, addrs + have, want * sizeof(*addrs), &got);
		if (!err && (resp.val[0] != n || !resp.count || resp.count > want || got != resp.count * sizeof(*addrs)))
			err = -EPROTO; /* another geometry, or a malformed answer */
		if (err)
			return err;
		if (resp.val[1] > UINT32_MAX)
			return -EPROTO;
		*root = (uint32_t)resp.val[1];
		have += resp.count;
	}
	return 0;
}

/* The kept checkpoint spec names: a snapshot's name, or a number. */
static int
resolve(struct lfs_remote *r, const char *spec, uint64_t *seq)
{
	struct lfs_ckpt_info *ci;
	size_t n;
	uint64_t held;
	uint32_t protect;
	int err = lfs_ctl_ask_snapshots(&r->cl, &ci, &n, &held, &protect);
	if (err)
		return err;
	char *end;
	unsigned long long num = strtoull(spec, &end, 10);
	bool numeric = *spec >= '0' && *spec <= '9' && !*end;
	err = -ENOENT;
	for (size_t i = 0; i < n && err; i++) {
		bool named = (ci[i].flags & LFS_CKPT_INFO_SNAPSHOT) && !strcmp(ci[i].name, spec);
		if ((ci[i].flags & LFS_CKPT_INFO_KEPT) && (named || (numeric && ci[i].seq == num))) {
			*seq = ci[i].seq;
			err = 0;
		}
	}
	free(ci);
	return err;
}

/* Hold checkpoint seq for the view mounted at `where`. */
static int
hold(struct lfs_remote *r, uint64_t seq, const char *where)
{
	static struct lfs_ctl_path p; /* 4 KiB, off the stack; one view per process */
	if (strlen(where) >= sizeof(p.path))
		return -ENAMETOOLONG;
	memset(&p, 0, sizeof(p));
	memcpy(p.path, where, strlen(where));
	struct lfs_ctl_req req = { .op = LFS_CTL_VIEW_HOLD, .count = 1, .arg = { seq } };
	struct lfs_ctl_resp resp;
	return lfs_ctl_call(&r->cl, &req, &p, sizeof(p), &resp, NULL, 0, NULL);
}

int
lfs_remote_view(const char *image, const char *mnt, const char *spec, const char *where,
		struct lfs_remote **out_r, struct lfs_fs **out_fs)
{
	struct lfs_remote *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->cl.fd = -1;
	int err = lfs_ctl_connect(&r->cl, mnt);
	struct lfs_ctl_resp info;
	char path[LFS_CTL_PATH_MAX];
	if (!err)
		err = lfs_ctl_ask_info(&r->cl, &info, path);
	/* a block size of lfs's, or reads would not come in whole blocks */
	if (!err && (info.val[0] < 512 || info.val[0] > LFS_CTL_BLOCK_MAX || (info.val[0] & (info.val[0] - 1))))
		err = -EPROTO;
	if (err) {
		lfs_log("%s is mounted at %s; its daemon cannot be reached: %s", image, mnt, lfs_ctl_strerror(err));
		lfs_remote_free(r);
		return err;
	}
	r->bsize = (uint32_t)info.val[0];
	r->cache = malloc((size_t)REMOTE_CACHE * r->bsize); /* none: every read asks */
	uint64_t seq;
	if ((err = resolve(r, spec, &seq))) {
		char shown[LFS_ESC_LEN(LFS_HIST_NAME_MAX + 1)];
		lfs_log("%s (mounted at %s): no snapshot or kept checkpoint '%s' (lfs-ckpt -l lists them): %s", image,
			mnt, lfs_escape(spec, LFS_ESC_SHOW, shown, sizeof(shown)), lfs_ctl_strerror(err));
		lfs_remote_free(r);
		return err;
	}
	if ((err = hold(r, seq, where))) {
		lfs_log("%s (mounted at %s): holding checkpoint %" PRIu64 " for %s: %s", image, mnt, seq, where,
			lfs_ctl_strerror(err));
		lfs_remote_free(r);
		return err;
	}
	struct lfs_view_source src = { remote_read, remote_imap, r };
	if ((err = lfs_view_open_remote(image, seq, &src, out_fs))) {
		lfs_remote_free(r);
		return err;
	}
	*out_r = r;
	return 0;
}

void
lfs_remote_free(struct lfs_remote *r)
{
	if (!r)
		return;
	lfs_ctl_close(&r->cl);
	free(r->cache);
	free(r);
}
