/*
 * image.h — the library's interface for tools: access to an image that
 * is not mounted (read-only but for lfs-tune's superblock copies,
 * mkfs.lfs and lfs-resize).  Every program (dumplfs, lfs-ckpt, lfs-tune,
 * lfs-probe, lfs-resize, mkfs.lfs, fsck.lfs, lfs_cleanerd) uses this and
 * lfs.h, the filesystem API, never the core's internal header lfs_int.h
 * (tests/integration/layering.sh checks it).
 *
 *   - the superblock: found (block 0, or its backup) and checked the one
 *     way the mount checks it (super.c);
 *   - the checkpoint regions: read and judged as the mount judges them
 *     (ckpt/ckpt.c);
 *   - the log: the one reader of segments, psegs and summary entries
 *     (logwalk.h);
 *   - the decoded structures and their encode/decode (format.h), and
 *     block I/O (bdev.h).
 */
#ifndef LFS_IMAGE_H
#define LFS_IMAGE_H

#include "bdev.h"
#include "format.h"
#include "logwalk.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct lfs_fs;

/* super.c: find the superblock (block 0, or its backup; see format.h) */
struct lfs_super_where {
	uint64_t block;             /* where the superblock in use was read */
	int primary_err;            /* 0, or why block 0 was passed over */
};
/* Quiet: returns 0, or block 0's error (-EINVAL no lfs magic,
 * -EPROTONOSUPPORT, -EFSCORRUPTED, -EIO) when no backup verifies either.
 * `block` non-zero: only the superblock at that block, of any block size
 * that superblock names (-EINVAL if none). */
int lfs_super_find(struct lfs_bdev *dev, uint64_t block, struct lfs_super *sb, struct lfs_super_where *w);
/* Why block 0 was passed over, for a message: "holds a corrupt superblock ...". */
const char *lfs_super_why(int primary_err);
/* The one opening of an image's superblock, for the mount and every
 * tool (lfs_tool_open): lfs_super_find, then, if `fit_device`, the
 * checks of what it found against itself and the device (segments
 * inside the filesystem, the filesystem inside the device).  0
 * (dev->block_size set; *w says whether the backup was used), or -errno
 * with `why` saying what is wrong, in words for a message
 * "PROGRAM: PATH: why". */
int lfs_super_open(struct lfs_bdev *dev, uint64_t block, bool fit_device, struct lfs_super *sb,
		   struct lfs_super_where *w, char *why, size_t len);
/* Whether the copy at `block` holds exactly `sb`, encoded: 0, -EFSCORRUPTED, -EIO. */
int lfs_super_check_copy(struct lfs_bdev *dev, const struct lfs_super *sb, uint64_t block);
/* Write `sb` at `block` (0 or its backup_sb) and flush. */
int lfs_super_write_copy(struct lfs_bdev *dev, const struct lfs_super *sb, uint64_t block);

/* ckpt/ckpt.c */
/* Read checkpoint region `which` and judge it as the mount does: 0
 * (valid; *addrs, if asked, the table block addresses), -EINVAL (bad
 * magic), -EFSCORRUPTED (*hdr decoded, but its crc or its contents are
 * wrong), or another -errno (unreadable).  `why` (may be NULL) gets the
 * verdict in words for the tools: "valid", "bad magic", "crc mismatch",
 * "damaged: ...", "unreadable: ...". */
int lfs_ckpt_judge_region(struct lfs_bdev *dev, const struct lfs_super *sb, int which, struct lfs_ckpt_hdr *hdr,
			  uint64_t **addrs, char *why, size_t wlen);
int lfs_ckpt_read_region(struct lfs_bdev *dev, const struct lfs_super *sb, int which,
			 struct lfs_ckpt_hdr *hdr, uint64_t **addrs);
/* The region a mount uses of two judged (errs, and headers hs): the
 * newer of the valid ones; -1 if neither is. */
int lfs_ckpt_newest(const int errs[2], const struct lfs_ckpt_hdr hs[2]);
/* One region as lfs_ckpt_judge_both judges it, for the tools. */
struct lfs_ckpt_verdict {
	int err;                    /* lfs_ckpt_judge_region's */
	char why[160];              /* its verdict, in words */
	bool decoded;               /* the header is worth showing: valid, or decoded but wrong */
	struct lfs_ckpt_hdr h;
	uint64_t *addrs;            /* if asked, of a valid one: the table blocks (free) */
};
/* Both regions judged as the mount judges them, with the table block
 * addresses of the valid ones if `addrs`; returns the region a mount
 * uses (lfs_ckpt_newest), or -1. */
int lfs_ckpt_judge_both(struct lfs_bdev *dev, const struct lfs_super *sb, bool addrs,
			struct lfs_ckpt_verdict v[2]);

/* mount.c: dumplfs.  The snapshot tables (lfs(5), SNAPSHOTS) of
 * checkpoint h of the image on dev, read by the mount's own readers and
 * refused as the mount refuses them (lfs_retain_load: the paged tables'
 * nodes, every record and entry, the limits); then hist gets each
 * history record in use and held each held entry, by slot (either may
 * be NULL).  0, or -errno with the reason logged. */
int lfs_kept_walk(const struct lfs_bdev *dev, const struct lfs_super *sb, const struct lfs_ckpt_hdr *h,
		  void (*hist)(void *ctx, uint64_t slot, const struct lfs_hist_entry *e),
		  void (*held)(void *ctx, uint64_t slot, const struct lfs_held_entry *e), void *ctx);

/* mount.c: mkfs.lfs */
/* Geometry for a device of `bytes` (inodes 0: one per 4 KiB). */
int lfs_plan_geometry(struct lfs_super *sb, uint64_t bytes, uint32_t bs, uint32_t segsize, uint64_t inodes);
/* Write an empty filesystem of geometry `sb` to `path`, its root owned by uid:gid. */
int lfs_format(const char *path, const struct lfs_super *sb, uid_t uid, gid_t gid);

/* grow.c: lfs-resize.  The geometry of `old` grown to a device of
 * `bytes`: 0, -EINVAL for a smaller size, -EALREADY for one that adds
 * no segment (the message in `why`), -EFBIG when the checkpoint regions
 * would have to grow. */
int lfs_grow_plan(const struct lfs_super *old, uint64_t bytes, struct lfs_super *grown, char *why, size_t len);
/* The same for any size: a smaller one gives the shrunk geometry (0), or
 * -EINVAL below the smallest the superblock checks accept (named in why);
 * resize.c then moves the data (lfs_resize of lfs.h). */
int lfs_resize_plan(const struct lfs_super *old, uint64_t bytes, struct lfs_super *g, char *why, size_t len);
/* Rewrite the image on `dev` (open for writing, locked, at least as
 * large as `grown` needs, its newest checkpoint clean) from `old` to
 * `grown`: a checkpoint with the longer usage table in the older region,
 * the new backup superblock, then block 0 (the commit point), then the
 * old backup zeroed.  0 or -errno. */
int lfs_grow(struct lfs_bdev *dev, const struct lfs_super *old, const struct lfs_super *grown);

/* A mounted filesystem's superblock and device, for fsck.lfs's checks
 * of the superblock copies (read-only use; valid until unmount). */
const struct lfs_super *lfs_fs_super(const struct lfs_fs *fs);
struct lfs_bdev *lfs_fs_bdev(struct lfs_fs *fs);

#endif
