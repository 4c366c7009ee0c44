/*
 * mount.c — layer 6: bringing a filesystem up and down: mount (superblock,
 * checkpoint, roll-forward), unmount, shutdown on request, mkfs's
 * format, the periodic tick.
 */
#include "lfs_int.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <unistd.h>

void
lfs_opts_default(struct lfs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ckpt_interval_s = 30;
	o->ckpt_segs = 32; /* bounds roll-forward at mount to 32 segments of log */
	o->flush_interval_ms = 5000;
	o->dirty_limit = 64u << 20;
	o->cache_bytes = LFS_CACHE_DEFAULT;
}

static void
fs_free(struct lfs_fs *fs)
{
	if (!fs)
		return;
	lfs_inode_evict_all(fs);
	u64map_free(&fs->icache);
	u64map_free(&fs->irefs);
	u64map_free(&fs->dirty);
	u64map_free(&fs->tombstones);
	lfs_relink_free(fs);
	lfs_imap_free(fs);
	free(fs->imap_addr);
	free(fs->imap_addr_set);
	free(fs->imap_dirty);
	free(fs->segs);
	free(fs->sut_addr);
	free(fs->sut_dirty);
	free(fs->sut_dirty_list);
	free(fs->imap_dirty_list);
	lfs_region_free(fs);
	free(fs->pbuf);
	lfs_writeout_free(fs);
	free(fs->freeable_list);
	free(fs->trim_list);
	free(fs->load_list);
	lfs_verify_free(fs);
	lfs_retain_free(fs);
	lfs_bdev_close(&fs->dev);
	pthread_cond_destroy(&fs->disk_cond);
	pthread_cond_destroy(&fs->lock_served_cv);
	pthread_cond_destroy(&fs->out_cv);
	pthread_cond_destroy(&fs->room_cv);
	pthread_mutex_destroy(&fs->out_mu);
	pthread_mutex_destroy(&fs->trim_mu);
	pthread_mutex_destroy(&fs->trim_run_mu);
	pthread_mutex_destroy(&fs->lock);
	free(fs);
}

const struct lfs_upcalls lfs_upcalls = {
	.admit = lfs_space_admit,
	.room_pending = lfs_space_room_pending,
	.flush = lfs_flush,
	.settle = lfs_ckpt_settle,
	.view_read = lfs_retain_read,
};

/* Allocate the in-memory state for a device whose superblock is known. */
static int
fs_alloc(const struct lfs_super *sb, const struct lfs_opts *opts, struct lfs_fs **out)
{
	struct lfs_fs *fs = lfs_calloc(1, sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	pthread_mutex_init(&fs->lock, NULL);
	pthread_cond_init(&fs->disk_cond, NULL);
	pthread_cond_init(&fs->lock_served_cv, NULL);
	pthread_mutex_init(&fs->out_mu, NULL);
	pthread_cond_init(&fs->out_cv, NULL);
	pthread_cond_init(&fs->room_cv, NULL);
	pthread_mutex_init(&fs->trim_run_mu, NULL);
	pthread_mutex_init(&fs->trim_mu, NULL);
	fs->dev.fd = fs->dev.trace_fd = -1;
	fs->sb = *sb;
	fs->opts = *opts;
	fs->up = &lfs_upcalls;
	fs->acl = true; /* until the FUSE glue says the kernel does not check them */
	fs->bsize = sb->block_size;
	fs->want_region = fs->region_used = -1;
	fs->seed = lfs_super_seed(sb);
	fs->nptr = fs->bsize / 8;
	fs->max_pseg = lfs_pseg_max_entries(fs->bsize);
	if (fs->max_pseg > sb->seg_blocks - 1)
		fs->max_pseg = sb->seg_blocks - 1;
	fs->n_sut_blocks = lfs_sut_nblocks(sb->nsegs, fs->bsize);
	/* zeroed and untouched: the mount sets only the segments in use
	 * (lfs_seg_load_usage), so only their pages are ever faulted in */
	fs->segs = lfs_calloc(sb->nsegs, sizeof(*fs->segs));
	fs->segs_cap = sb->nsegs;
	fs->sut_addr = lfs_calloc(fs->n_sut_blocks, sizeof(uint64_t));
	fs->sut_dirty = lfs_calloc(fs->n_sut_blocks, 1);
	/* twice: a block written at a checkpoint may be dirtied again (by the
	 * pseg it went into) before the list is compacted (ckpt.c) */
	fs->sut_dirty_list = lfs_malloc(2 * (size_t)fs->n_sut_blocks * sizeof(uint32_t));
	u64map_init(&fs->icache);
	u64map_init(&fs->irefs);
	u64map_init(&fs->dirty);
	u64map_init(&fs->tombstones);
	u64map_init(&fs->relink);
	/* -o discard: each segment a checkpoint makes clean, listed once */
	if (opts->discard)
		fs->trim_list = lfs_malloc(sb->nsegs * sizeof(uint32_t));
	int err = (!fs->segs || !fs->sut_addr || !fs->sut_dirty || !fs->sut_dirty_list ||
		   (opts->discard && !fs->trim_list)) ? -ENOMEM : 0;
	if (!err)
		err = lfs_imap_init(fs);
	if (!err)
		err = lfs_seg_init(fs);
	if (!err)
		err = lfs_verify_init(fs);
	if (!err)
		err = lfs_retain_init(fs);
	if (err) {
		fs_free(fs);
		return err;
	}
	*out = fs;
	return 0;
}

static void
free_orphans(struct lfs_fs *fs)
{
	/* only IMAP blocks in memory hold inodes in use; the list of them
	 * may grow while inodes are freed, so it is read afresh each time */
	uint32_t per = lfs_imap_per_block(fs->bsize);
	for (size_t k = 0; k < fs->imap_nheld; k++) {
		uint32_t b = fs->imap_held[k];
		for (uint32_t i = 0; i < per; i++) {
			uint64_t ino = (uint64_t)b * per + i;
			if (ino <= LFS_ROOT_INO || ino >= fs->sb.max_inodes ||
			    (lfs_imap_get(fs, ino)->flags & (LFS_IMAP_INUSE | LFS_IMAP_ORPHAN)) !=
				    (LFS_IMAP_INUSE | LFS_IMAP_ORPHAN))
				continue;
			struct lfs_inode *ip;
			if (lfs_iget(fs, ino, &ip) == 0 && (ip->di.flags & LFS_DI_STAGED)) {
				(void)lfs_staged_drop_orphan(fs, (uint32_t)ino); /* logs why not */
				continue;
			}
			if (lfs_iget(fs, ino, &ip) == 0 && ip->di.nlink == 0) {
				lfs_inode_maybe_free(fs, ip);
				lfs_log("freed orphan inode %llu (unlinked while open)", (unsigned long long)ino);
			}
		}
	}
}

/* Where the image at `path` is mounted: a mount whose source is the
 * image, or a loop device over it (fuse_main.c mounts fuseblk through
 * one).  Returns 1 and the mount point in `where`, else 0. */
int
lfs_image_mounted_at(const char *path, char *where, size_t len)
{
	char *real = realpath(path, NULL);
	FILE *mi = fopen("/proc/self/mountinfo", "r");
	char line[8192];
	int found = 0;
	while (real && mi && !found && fgets(line, sizeof(line), mi)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
		char mnt[4096], fstype[256], source[256];
		char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
		    sscanf(dash + 3, "%255s %255s", fstype, source) != 2)
			continue;
		if (strcmp(fstype, "fuse.lfs") != 0 && strcmp(fstype, "fuseblk.lfs") != 0)
			continue;
		char backing[4096] = "";
		if (strncmp(source, "/dev/loop", 9) == 0) {
			char sys[320];
			snprintf(sys, sizeof(sys), "/sys/block/%s/loop/backing_file", source + 5);
			FILE *f = fopen(sys, "r");
			if (f && fgets(backing, sizeof(backing), f))
				backing[strcspn(backing, "\n")] = '\0';
			if (f)
				fclose(f);
		}
		if (strcmp(source, real) == 0 || strcmp(backing, real) == 0) {
			/* mountinfo escapes blanks as \040 and so on; shown as is */
			snprintf(where, len, "%s", mnt);
			found = 1;
		}
	}
	if (mi)
		fclose(mi);
	free(real);
	return found;
}

int
lfs_image_busy(int fd, const char *path, char *where, size_t len)
{
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
		flock(fd, LOCK_UN);
		return 0;
	}
	if (errno != EWOULDBLOCK)
		return 0;
	if (!lfs_image_mounted_at(path, where, len))
		snprintf(where, len, "(a daemon finishing its unmount)");
	return 1;
}

/* One daemon per image.  An image mounted elsewhere is refused at once,
 * naming the mount; a daemon still finishing its unmount (a plain FUSE
 * mount lets umount(8) return before the daemon's last checkpoint) is
 * waited for, up to a minute.  The wait is for an event, not a guess:
 * the holder lets go of the lock when it closes the image (at its exit
 * at the latest), and inotify reports every close of the file, so each
 * close wakes the wait and the lock is tried again at once.
 *
 * A daemon (`hold`: the FUSE daemon, read-only or not) holds the lock
 * alone for as long as it runs, so that no second daemon mounts or
 * recovers the image beside it: a read-only daemon beside a writer
 * would serve a stale image, and a writer beside a read-only daemon
 * would change the image under it.  A reader that is no daemon
 * (fsck.lfs) only checks that no daemon holds it. */
#define LOCK_WAIT_MS 60000

static int
lock_image(struct lfs_bdev *dev, const char *path, bool readonly, bool hold)
{
	bool exclusive = !readonly || hold;
	/* watched before each try, so a close between the try and the wait
	 * is not missed; -1 (no inotify): the wait polls every 100 ms */
	int in = -1;
	uint64_t deadline = lfs_now_ns() + (uint64_t)LOCK_WAIT_MS * 1000000u;
	int err = -EBUSY;
	for (bool said = false;;) {
		if (flock(dev->fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0) {
			if (!exclusive)
				flock(dev->fd, LOCK_UN);
			err = 0;
			break;
		}
		if (errno != EWOULDBLOCK) {
			err = -errno;
			break;
		}
		char where[4096];
		if (lfs_image_mounted_at(path, where, sizeof(where))) {
			lfs_log("%s is already mounted at %s%s", path, where,
				readonly ? "; one daemon per image, read-only or not: unmount it first" : "");
			break;
		}
		uint64_t now = lfs_now_ns();
		if (now >= deadline) {
			lfs_log("%s is still in use; giving up", path);
			break;
		}
		if (!said) {
			lfs_log("%s is held by another lfs process that is not mounted (finishing an "
				"unmount?); waiting up to %d s for it to let go", path, LOCK_WAIT_MS / 1000);
			said = true;
			in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
			if (in >= 0 && inotify_add_watch(in, path, IN_CLOSE_WRITE | IN_CLOSE_NOWRITE) < 0) {
				close(in);
				in = -1;
			}
			continue; /* try again, now that a close cannot be missed */
		}
		uint64_t left_ms = (deadline - now) / 1000000u + 1;
		struct pollfd pfd = { .fd = in, .events = POLLIN };
		if (in < 0) {
			usleep(100 * 1000);
		} else if (poll(&pfd, 1, (int)left_ms) > 0) {
			char ev[4096];
			while (read(in, ev, sizeof(ev)) > 0)
				; /* drained: which close it was does not matter */
		}
	}
	if (in >= 0)
		close(in);
	return err;
}

/* -o ro that may become rw (upgradable): opened for writing when the
 * image allows it, and marked read-only until lfs_set_readonly lifts it. */
static int
open_image(struct lfs_bdev *dev, const char *path, const struct lfs_opts *opts)
{
	if (!opts->readonly || !opts->upgradable)
		return lfs_bdev_open(dev, path, opts->readonly);
	int err = lfs_bdev_open(dev, path, false);
	if (err == -EACCES || err == -EROFS || err == -EPERM || err == -ETXTBSY)
		return lfs_bdev_open(dev, path, true);
	dev->readonly = true;
	return err;
}

static int
add_node(void *ctx, uint64_t addr, uint8_t kind, uint64_t lblk)
{
	(void)addr;
	(void)lblk;
	struct lfs_fs *fs = ctx;
	if (kind == LFS_BK_INDIR)
		fs->drag_bytes += fs->bsize;
	return 0;
}

/* drag_bytes of a checkpoint written before it was kept: every inode's
 * record and block-map nodes, counted once at its first mount by this
 * version (the next checkpoint records the count). */
static int
count_drag(struct lfs_fs *fs)
{
	uint64_t inodes = 0;
	fs->drag_bytes = 0;
	for (uint32_t ino = LFS_ROOT_INO; ino < fs->sb.max_inodes; ino++) {
		if (!lfs_imap_valid_ino(fs, ino))
			continue;
		bool was_cached = u64map_get(&fs->icache, ino) != NULL;
		struct lfs_inode *ip;
		int err = lfs_iget(fs, ino, &ip);
		if (!err) {
			if (lfs_imap_get(fs, ino)->daddr)
				fs->drag_bytes += lfs_inode_charge(&fs->sb, lfs_inode_reclen(ip->di.inline_len));
			err = lfs_bmap_walk_disk(fs, &ip->di, add_node, fs);
			if (!was_cached && !ip->dirty)
				lfs_inode_evict(fs, ip);
		}
		if (err == -EFSCORRUPTED || err == -EIO)
			lfs_log("inode %u: its block map cannot be read to count its nodes (%s); counted in part", ino,
				strerror(-err));
		else if (err)
			return err;
		inodes++;
	}
	fs->drag_known = true;
	lfs_log_info("counted the block-map nodes and records of %llu inodes: %llu bytes (a checkpoint from "
		     "before the count was kept)", (unsigned long long)inodes, (unsigned long long)fs->drag_bytes);
	return 0;
}

int
lfs_mount_open_log(struct lfs_fs *fs)
{
	/* what the regions hold, so that checkpoints write only what
	 * changes (region.c) */
	int err = 0;
	for (int w = 0; w < 2 && !err; w++)
		err = lfs_region_adopt(fs, w);
	if (err)
		return err;
	if (fs->needs_recovery) {
		/* Continue in fresh segments, so psegs left after the end
		 * of the log can never follow new ones (recover.c). */
		err = lfs_seg_pick_next(fs, &fs->cur_seg);
		if (!err)
			err = lfs_seg_pick_next(fs, &fs->next_seg);
		fs->cur_off = 0;
	} else {
		/* roll-forward marked them dirty: the log goes on in them */
		lfs_seg_set_state(fs, fs->cur_seg, LFS_SEG_ACTIVE);
		lfs_seg_set_state(fs, fs->next_seg, LFS_SEG_ACTIVE);
	}
	/* the leaves relink records left out are written by the
	 * checkpoint below; a read-only mount keeps the relinks */
	if (!err)
		err = lfs_recover_relinks(fs);
	if (!err)
		free_orphans(fs);
	/* A new epoch: psegs of this mount are told apart from any
	 * left behind by earlier ones. */
	if (!err)
		err = lfs_ckpt_write(fs, false);
	if (!err)
		lfs_relink_free(fs);
	return err;
}

/* One try at a mount from checkpoint region t->region (-1: the newer);
 * t->used and t->seq say which region and checkpoint it took. */
struct mount_try {
	int region, used;
	uint64_t seq;
};

static int
mount_from(const char *path, const struct lfs_opts *opts, struct mount_try *t, struct lfs_fs **out)
{
	struct lfs_bdev dev;
	int err = open_image(&dev, path, opts);
	if (err) {
		lfs_log("%s: %s", path, strerror(-err));
		return err;
	}
	if ((!opts->lock_held || !opts->readonly) && (err = lock_image(&dev, path, opts->readonly, opts->hold_lock))) {
		lfs_bdev_close(&dev);
		return err;
	}
	struct lfs_super sb;
	err = lfs_read_super(&dev, opts->sb_block, &sb);
	if (err) {
		lfs_bdev_close(&dev);
		return err;
	}
	struct lfs_fs *fs;
	err = fs_alloc(&sb, opts, &fs);
	if (err) {
		lfs_bdev_close(&dev);
		return err;
	}
	fs->dev = dev;
	fs->want_region = t->region;
	/* record from the first write on: the image as it was before the
	 * mount plus the trace rebuilds every state (lfs-crashsim) */
	if (!opts->readonly && opts->trace_path && (err = lfs_bdev_trace(&fs->dev, opts->trace_path))) {
		fs_free(fs);
		return err;
	}
	struct lfs_ckpt_hdr hdr = { 0 };
	uint64_t found = 0;
	err = lfs_ckpt_load(fs, &hdr);
	t->used = fs->region_used;
	t->seq = hdr.ckpt_seq;
	if (!err && opts->snapshot) {
		/* what a kept checkpoint reads is on disk as its checkpoint
		 * left it: nothing after it is needed */
		uint64_t seq;
		char shown[LFS_ESC_LEN(LFS_HIST_NAME_MAX + 1)];
		if (!opts->readonly)
			err = -EINVAL;
		else if (!fs->snapshots)
			err = -EOPNOTSUPP;
		else if ((err = lfs_snapshot_find(fs, opts->snapshot, &seq)))
			lfs_log("%s: no snapshot or kept checkpoint '%s' (lfs-ckpt -l lists them)", path,
				lfs_escape(opts->snapshot, LFS_ESC_SHOW, shown, sizeof(shown)));
		else
			err = lfs_ckpt_load_view(fs, fs, seq);
		if (err) {
			fs_free(fs);
			return err;
		}
		fs->last_flush_ns = lfs_now_ns();
		*out = fs;
		return 0;
	}
	if (!err)
		err = lfs_recover(fs, &hdr, &found);
	if (!err && !fs->drag_known)
		err = count_drag(fs);
	fs->needs_recovery = found || !(hdr.flags & LFS_CKPT_CLEAN);
	if (!err && !lfs_imap_valid_ino(fs, LFS_ROOT_INO)) {
		lfs_log("the root directory is missing from the inode map");
		err = -EFSCORRUPTED;
	}
	if (!err && !opts->readonly)
		err = lfs_mount_open_log(fs);
	if (err) {
		fs_free(fs);
		return err;
	}
	fs->last_flush_ns = lfs_now_ns();
	*out = fs;
	return 0;
}

/* Whether a read-only mount that failed with err may try the older
 * checkpoint: its newest one, or the log after it, is unreadable or
 * damaged (a bad block, a crafted table), not the mount's own fault. */
static bool
may_degrade(const struct lfs_opts *opts, const struct mount_try *t, int err)
{
	return (err == -EIO || err == -EFSCORRUPTED) && t->used >= 0 && opts->readonly && !opts->snapshot &&
	       opts->sb_block == 0;
}

int
lfs_mount(const char *path, const struct lfs_opts *opts, struct lfs_fs **out)
{
	/* counted from here: the mount's own reads and writes count */
	if (opts->fault && lfs_fault_arm(opts->fault)) {
		lfs_log("fault=%s: not a list of OP:N:ERR rules (see lfs(8))", opts->fault);
		return -EINVAL;
	}
	struct mount_try t = { -1, -1, 0 };
	int err = mount_from(path, opts, &t, out);
	if (!err || !may_degrade(opts, &t, err)) {
		if (err && t.used >= 0 && (err == -EIO || err == -EFSCORRUPTED) && !opts->readonly)
			lfs_log("checkpoint %llu cannot be used (%s); a read-only mount (-o ro) falls back to the "
				"older checkpoint", (unsigned long long)t.seq, strerror(-err));
		return err;
	}
	struct mount_try old = { !t.used, -1, 0 };
	int e = mount_from(path, opts, &old, out);
	if (e) {
		lfs_log("the older checkpoint cannot be used either (%s)", strerror(-e));
		return err;
	}
	(*out)->degraded_from = t.seq;
	lfs_log("checkpoint %llu cannot be used (%s): mounted read-only from checkpoint %llu, the older one, "
		"and the log after it as far as it verifies; what only the newer one held is not shown, and "
		"files whose blocks are damaged read as EIO (fsck.lfs)", (unsigned long long)t.seq, strerror(-err),
		(unsigned long long)old.seq);
	return 0;
}

bool
lfs_needs_recovery(const struct lfs_fs *fs)
{
	return fs->needs_recovery;
}

void
lfs_abandon(struct lfs_fs *fs)
{
	fs_free(fs);
}

int
lfs_view_open(struct lfs_fs *src, const char *spec, bool lock_src, struct lfs_fs **out)
{
	uint64_t seq;
	int err = lfs_snapshot_find(src, spec, &seq);
	if (err)
		return err;
	struct lfs_opts o = src->opts;
	o.readonly = true;
	o.trace_path = o.fault = o.snapshot = NULL;
	struct lfs_fs *v;
	if ((err = fs_alloc(&src->sb, &o, &v)))
		return err;
	/* no device of its own: every block comes through src */
	v->dev.readonly = true;
	v->dev.block_size = src->bsize;
	v->acl = src->acl;
	v->view_lock_src = lock_src;
	if (lock_src)
		lfs_lock(src);
	err = lfs_hist_get(&src->hist, seq) ? lfs_ckpt_load_view(v, src, seq) : -ENOENT;
	if (lock_src)
		pthread_mutex_unlock(&src->lock);
	if (err) {
		fs_free(v);
		return err;
	}
	v->last_flush_ns = lfs_now_ns();
	*out = v;
	return 0;
}

int
lfs_kept_walk(const struct lfs_bdev *dev, const struct lfs_super *sb, const struct lfs_ckpt_hdr *h,
	      void (*hist)(void *ctx, uint64_t slot, const struct lfs_hist_entry *e),
	      void (*held)(void *ctx, uint64_t slot, const struct lfs_held_entry *e), void *ctx)
{
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.readonly = true;
	struct lfs_fs *fs;
	int err = fs_alloc(sb, &o, &fs);
	if (err)
		return err;
	/* the tool's device, lent: read through, never closed here */
	fs->dev = *dev;
	fs->dev.readonly = true;
	err = lfs_retain_load(fs, h);
	for (uint64_t i = 0; !err && hist && i < fs->hist.tab.nslots; i++)
		if (fs->hist.ent[i].seq)
			hist(ctx, i, &fs->hist.ent[i]);
	for (uint64_t i = 0; !err && held && i < fs->held.tab.nslots; i++)
		if (fs->held.ent[i].orig)
			held(ctx, i, &fs->held.ent[i]);
	fs->dev.fd = fs->dev.trace_fd = -1;
	fs_free(fs);
	return err;
}

int
lfs_view_open_remote(const char *path, uint64_t seq, const struct lfs_view_source *src, struct lfs_fs **out)
{
	/* the superblock only: the image is another daemon's, held by it */
	struct lfs_bdev dev;
	int err = lfs_bdev_open(&dev, path, true);
	if (err) {
		lfs_log("%s: %s", path, strerror(-err));
		return err;
	}
	struct lfs_super sb;
	err = lfs_read_super(&dev, 0, &sb);
	lfs_bdev_close(&dev);
	if (err)
		return err;
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.readonly = true;
	struct lfs_fs *v;
	if ((err = fs_alloc(&sb, &o, &v)))
		return err;
	v->dev.readonly = true;
	v->dev.block_size = sb.block_size;
	v->view_remote = *src;
	uint64_t *addrs = lfs_calloc(v->n_imap_blocks, sizeof(*addrs));
	uint32_t root = 0;
	err = addrs ? src->imap(src->ctx, seq, addrs, v->n_imap_blocks, &root) : -ENOMEM;
	if (!err)
		err = lfs_ckpt_load_view_at(v, seq, addrs, root);
	free(addrs);
	if (err) {
		fs_free(v);
		return err;
	}
	v->last_flush_ns = lfs_now_ns();
	*out = v;
	return 0;
}

uint64_t
lfs_view_seq(const struct lfs_fs *v)
{
	return v->view_seq;
}

int
lfs_quiesce(struct lfs_fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	/* a request still waiting for the disk ends before the device does */
	lfs_sync_drain(fs);
	int err = fs->quiesce_err;
	if (!fs->dev.readonly) {
		/* the kernel is gone: nobody holds unlinked inodes any more */
		size_t n = fs->icache.count;
		uint64_t *inos = lfs_malloc(n * sizeof(uint64_t) + 1);
		if (inos) {
			u64map_sorted_keys(&fs->icache, inos);
			for (size_t i = 0; i < n; i++) {
				struct lfs_inode *ip = u64map_get(&fs->icache, inos[i]);
				if (ip && ip->di.nlink == 0) {
					ip->nlookup = 0;
					ip->nopen = 0;
					lfs_inode_maybe_free(fs, ip);
				}
			}
			free(inos);
		}
		err = lfs_ckpt_write(fs, true);
		if (err && fs->shut_down)
			err = 0; /* asked for: lfs_shutdown said what the next mount does */
		else if (err && fs->fatal)
			lfs_log("unmount: the filesystem had failed, so no final checkpoint; the next mount "
				"recovers the last durable state");
		else if (err)
			lfs_log("unmount: final checkpoint failed: %s", strerror(-err));
		if (!err)
			(void)lfs_trim_final(fs); /* a failure is logged; nothing is lost */
		/* nothing may follow the final checkpoint; a second call
		 * (lfs_unmount after FUSE_DESTROY) reports the same */
		fs->dev.readonly = true;
		fs->quiesce_err = err;
	}
	fs->quiesced = true;
	/* Nothing is written after this, so the image is let go here: a
	 * tool or the next mount run right after umount(8) finds it free,
	 * not held until this process has exited. */
	if (fs->dev.fd >= 0)
		flock(fs->dev.fd, LOCK_UN);
	pthread_mutex_unlock(&fs->lock);
	return err;
}

int
lfs_unmount(struct lfs_fs *fs)
{
	int err = lfs_quiesce(fs);
	if (fs->stats.inodes_evicted || fs->stats.nodes_dropped)
		lfs_log("inode cache: %llu inodes evicted and %llu block-map nodes dropped to stay within %llu KiB",
			(unsigned long long)fs->stats.inodes_evicted, (unsigned long long)fs->stats.nodes_dropped,
			(unsigned long long)(fs->opts.cache_bytes >> 10));
	if (fs->stats.relink_records)
		lfs_log("fsync: %llu relink records written (the nodes above their leaves later)",
			(unsigned long long)fs->stats.relink_records);
	if (fs->stats.trim_segs)
		lfs_log("discard: %llu segments (%llu MiB) given back to the storage since mount",
			(unsigned long long)fs->stats.trim_segs, (unsigned long long)(fs->stats.trim_bytes >> 20));
	fs_free(fs);
	return err;
}

/* A burst of writes leaves the malloc heaps as large as its peak: the
 * dirty pages of the next flush pile up while the last one's psegs are
 * written, and free memory in the middle of a heap is not given back by
 * free().  It is kept while writes go on (taking it back costs a page
 * fault per 4 KiB) and given back once the filesystem has been quiet
 * for a second. */
#define TRIM_AFTER_NS 1000000000ull

void
lfs_tick(struct lfs_fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	uint64_t now = lfs_now_ns();
	if (!fs->dev.readonly && !fs->fatal) {
		if ((fs->dirty.count || fs->tombstones.count) &&
		    now - fs->last_flush_ns >= (uint64_t)fs->opts.flush_interval_ms * 1000000ull)
			lfs_flush_unlocked(fs, false);
		if (fs->changed_since_ckpt && fs->opts.ckpt_interval_s &&
		    now - fs->ckpt_time_ns >= (uint64_t)fs->opts.ckpt_interval_s * 1000000000ull)
			lfs_ckpt_write_unlocked(fs);
	}
	bool trim = fs->trimmed_flush_ns != fs->last_flush_ns && !fs->dirty_bytes &&
		    now - fs->last_flush_ns >= TRIM_AFTER_NS;
	if (trim)
		fs->trimmed_flush_ns = fs->last_flush_ns;
	bool discard = fs->ntrim > 0;
	pthread_mutex_unlock(&fs->lock);
	if (trim)
		malloc_trim(0);
	if (discard)
		lfs_trim_freed(fs);
}

/* ---------------------------------------------------------------- */

uint64_t
lfs_reserve_segs(uint64_t nsegs, uint32_t nimap, uint32_t nsut, uint32_t seg_blocks)
{
	uint64_t tables = (nimap + nsut) / seg_blocks + 1;
	uint64_t reserve = nsegs / 10;
	if (reserve < 4)
		reserve = 4;
	return reserve + tables;
}

/* Lay out the geometry for a device of `bytes`. */
int
lfs_plan_geometry(struct lfs_super *sb, uint64_t bytes, uint32_t bs, uint32_t segsize, uint64_t inodes)
{
	memset(sb, 0, sizeof(*sb));
	sb->magic = LFS_SB_MAGIC;
	sb->version = LFS_VERSION;
	sb->block_size = bs;
	sb->seg_blocks = segsize / bs;
	uint64_t nblocks = bytes / bs;
	if (!inodes)
		inodes = bytes / 4096;
	if (inodes < LFS_MIN_INODES)
		inodes = LFS_MIN_INODES;
	if (inodes > lfs_inodes_cap(nblocks, bs))
		inodes = lfs_inodes_cap(nblocks, bs);
	sb->max_inodes = (uint32_t)inodes;
	/* the last block holds the backup superblock: segments end before it */
	sb->backup_sb = lfs_super_backup_block(bytes, bs);
	sb->feature_compat |= LFS_FEATURE_BACKUP_SB;
	sb->feature_incompat |=
		LFS_FEATURE_XATTR_BLOCKS | LFS_FEATURE_RECORD_CHARGE | LFS_FEATURE_SNAPSHOTS | LFS_FEATURE_RELINK |
		LFS_FEATURE_UNWRITTEN;
	if (nblocks < 2)
		return -ENOSPC;
	nblocks = sb->backup_sb;
	uint32_t nimap = lfs_imap_nblocks(sb->max_inodes, bs);
	/* nsegs bounds the SUT; size the checkpoint region for the largest */
	uint64_t maxsegs = nblocks / sb->seg_blocks;
	uint32_t nsut = lfs_sut_nblocks(maxsegs, bs);
	sb->ckpt_blocks = (uint32_t)((lfs_ckpt_region_bytes(nimap, nsut) + bs - 1) / bs);
	sb->ckpt_addr[0] = 1;
	sb->ckpt_addr[1] = 1 + (uint64_t)sb->ckpt_blocks;
	uint64_t meta_end = 1 + 2ull * sb->ckpt_blocks;
	sb->seg0 = (meta_end + sb->seg_blocks - 1) / sb->seg_blocks * sb->seg_blocks;
	if (nblocks <= sb->seg0)
		return -ENOSPC;
	sb->nsegs = (nblocks - sb->seg0) / sb->seg_blocks;
	/* Reserve: room to write every map block at a checkpoint, and
	 * overprovisioning so that cleaning keeps up at a full df.  Moving a
	 * block of a file also rewrites the leaf that points to it, so under
	 * random overwrites a cleaned segment costs about twice its live
	 * blocks: with too small a reserve, the segments of a nearly full
	 * filesystem stay so live that cleaning loses ground until writes
	 * fail. */
	uint64_t reserve = lfs_reserve_segs(sb->nsegs, nimap, nsut, sb->seg_blocks);
	sb->reserved_segs = (uint32_t)reserve;
	if (sb->nsegs < reserve + LFS_MIN_FREE_SEGS)
		return -ENOSPC;
	sb->nblocks = sb->seg0 + sb->nsegs * sb->seg_blocks;
	sb->created_ns = lfs_now_ns();
	return lfs_uuid_generate(sb->uuid);
}

int
lfs_format(const char *path, const struct lfs_super *sb, uid_t uid, gid_t gid)
{
	struct lfs_opts opts;
	lfs_opts_default(&opts);
	struct lfs_fs *fs;
	int err = fs_alloc(sb, &opts, &fs);
	if (err)
		return err;
	err = lfs_bdev_open(&fs->dev, path, false);
	if (err) {
		fs_free(fs);
		return err;
	}
	fs->dev.block_size = sb->block_size;
	uint8_t *blk = lfs_calloc(1, sb->block_size);
	if (!blk) {
		fs_free(fs);
		return -ENOMEM;
	}
	/* Superblock; both checkpoint regions zeroed so no old one verifies. */
	lfs_super_encode(sb, blk);
	err = lfs_bdev_write(&fs->dev, 0, 1, blk);
	if (!err && (sb->feature_compat & LFS_FEATURE_BACKUP_SB))
		err = lfs_bdev_write(&fs->dev, sb->backup_sb, 1, blk);
	memset(blk, 0, sb->block_size);
	for (uint64_t b = 1; b < 1 + 2ull * sb->ckpt_blocks && !err; b++)
		err = lfs_bdev_write(&fs->dev, b, 1, blk);
	free(blk);
	if (err) {
		fs_free(fs);
		return err;
	}
	fs->nclean = sb->nsegs;
	fs->cur_seg = sb->nsegs - 1;
	err = lfs_seg_pick_next(fs, &fs->cur_seg);
	if (!err)
		err = lfs_seg_pick_next(fs, &fs->next_seg);
	fs->pseg_seq = 1;
	fs->ckpt_seq = 0;
	/* the root directory, always inode 1 */
	struct lfs_cred cred = { uid, gid, 0 };
	struct lfs_inode *root = NULL;
	uint32_t version = 0;
	if (!err)
		err = lfs_imap_alloc_at(fs, LFS_ROOT_INO, &version);
	if (!err)
		err = lfs_inode_init(fs, LFS_ROOT_INO, version, S_IFDIR | 0755, &cred, NULL, &root);
	if (!err) {
		root->di.nlink = 2;
		root->di.parent = LFS_ROOT_INO;
		root->nlookup = 1;
		err = lfs_ckpt_write(fs, true);
	}
	fs_free(fs);
	return err;
}

void
lfs_get_stats(struct lfs_fs *fs, struct lfs_stats *st)
{
	pthread_mutex_lock(&fs->lock);
	*st = fs->stats;
	st->bytes_written = fs->base_bytes_written + fs->dev.bytes_written;
	st->bytes_read = fs->dev.bytes_read;
	st->segs_total = fs->sb.nsegs;
	st->segs_clean = fs->nclean;
	st->ckpt_seq = fs->ckpt_seq;
	st->live_bytes = fs->live_total;
	st->inodes_used = fs->inodes_used;
	pthread_mutex_unlock(&fs->lock);
}

const struct lfs_super *
lfs_fs_super(const struct lfs_fs *fs)
{
	return &fs->sb;
}

struct lfs_bdev *
lfs_fs_bdev(struct lfs_fs *fs)
{
	return &fs->dev;
}

/* The failed state of fail.c, on request (FS_IOC_SHUTDOWN): what it
 * leaves unwritten is lost exactly as in a power cut at that moment,
 * which is what crash tests and cluster fencing want from it. */
int
lfs_shutdown(struct lfs_fs *fs, unsigned how)
{
	static const char *const names[] = { "fullsync", "metaflush", "nologflush" };
	if (how > LFS_SHUTDOWN_NOLOGFLUSH)
		return -EINVAL;
	pthread_mutex_lock(&fs->lock);
	if (fs->fatal) {
		/* ext4 answers a second shutdown with success and does nothing */
		pthread_mutex_unlock(&fs->lock);
		return 0;
	}
	int err = 0;
	if (!fs->dev.readonly && how == LFS_SHUTDOWN_FULLSYNC)
		err = lfs_flush(fs);
	/* the log already written reaches the medium; in a log-structured
	 * filesystem that is the journal ext4's METAFLUSH commits */
	if (!err && !fs->dev.readonly && how != LFS_SHUTDOWN_NOLOGFLUSH &&
	    fs->dev.bytes_written != fs->synced_bytes)
		err = lfs_sync(fs);
	if (err)
		lfs_log("shutdown (%s): the flush before it failed: %s; shutting down anyway", names[how],
			strerror(-err));
	lfs_log("shut down on request (%s): writes, fsync and checkpoints now fail with EIO; the next "
		"mount recovers as after a power cut", names[how]);
	fs->fatal = -EIO;
	fs->shut_down = true;
	/* also a pwrite or fdatasync already under way without the lock
	 * (an fsync's writeout, a checkpoint's wait) goes no further */
	lfs_bdev_fence(&fs->dev);
	pthread_mutex_unlock(&fs->lock);
	return 0;
}
