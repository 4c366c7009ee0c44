/*
 * ctl_ops.h — layer 6: the filesystem's side of the control protocol,
 * what ctl_server.c calls for each request (ctl_ops.c).  The wire structs
 * are ctl_proto.h's; they stay out of lfs.h, the filesystem API.
 */
#ifndef LFS_CTL_OPS_H
#define LFS_CTL_OPS_H

#include "ctl_proto.h"

#include <stddef.h>
#include <stdint.h>

struct lfs_fs;

void lfs_ctl_info(struct lfs_fs *fs, uint64_t val[4]);
uint32_t lfs_ctl_usage(struct lfs_fs *fs, uint64_t first, uint32_t n, struct lfs_ctl_seg *out);
int lfs_ctl_live(struct lfs_fs *fs, struct lfs_ctl_blk *b, uint32_t n);
int lfs_ctl_move(struct lfs_fs *fs, const struct lfs_ctl_blk *b, uint32_t n, uint64_t cleaner_read,
		 uint64_t *moved);
int lfs_ctl_segclean(struct lfs_fs *fs, const uint64_t *segs, uint32_t n, uint64_t *cleaned);
/* LFS_CTL_CLEANER_STATS: the registered cleaner's passes.  Its victims'
 * counts are not taken: the daemon counts each segment cleaned itself,
 * by its share when chosen, where it turns clean (seg.c), so a victim
 * that stayed dirty or a pass the cleaner did not live to report counts
 * neither more nor less than it cleaned. */
void lfs_ctl_cleaner_report(struct lfs_fs *fs, uint64_t passes);
void lfs_ctl_stats(struct lfs_fs *fs, struct lfs_ctl_stats *out);
/* LFS_CTL_VIEW_IMAP: up to n of kept checkpoint seq's inode-map block
 * addresses from the first-th into out (*got of them; *total in all);
 * *root its tree's root (0: the filesystem's). */
int lfs_ctl_view_imap(struct lfs_fs *fs, uint64_t seq, uint64_t first, uint32_t n, uint64_t *out, uint32_t *got,
		      uint64_t *total, uint32_t *root);
/* LFS_CTL_VIEW_READ: the n blocks (0: one) seq reads as addr on into out
 * (*len bytes); -EINVAL for more than LFS_CTL_VIEW_READ_BYTES of them. */
int lfs_ctl_view_read(struct lfs_fs *fs, uint64_t seq, uint64_t addr, uint32_t n, uint8_t *out, uint64_t *len);
/* Up to n kept checkpoints from number `from` up (LFS_CTL_SNAP_LIST): the
 * records into out; their count, the total, the bytes held, the
 * protection period and the records left after them into resp. */
int lfs_ctl_snap_list(struct lfs_fs *fs, uint64_t from, uint32_t n, struct lfs_ctl_ckpt *out,
		      struct lfs_ctl_resp *resp);
/* LFS_CTL_SCRUB_WHO: for each of the n blocks a scrubber found failing
 * its check, whether the live tree uses it (not judged for inode blocks:
 * lfs_ctl_scrub_inodes), whether retained checkpoints read it, and
 * whether the daemon's own read of it fails too, into out. */
int lfs_ctl_scrub_who(struct lfs_fs *fs, const struct lfs_ctl_blk *b, uint32_t n, struct lfs_ctl_damage *out);
/* LFS_CTL_SCRUB_INODES: up to n inodes from `first` up whose record is
 * in the block at addr, into out (*got of them); *next the inode to go on
 * from, 0 when every inode was looked at.  A request looks at
 * LFS_CTL_SCRUB_INODES_SPAN inodes at most. */
#define LFS_CTL_SCRUB_INODES_SPAN 65536
/* LFS_CTL_RESIZE: resize to `bytes` (flags LFS_CTL_RESIZE_*), its
 * figures into val (ctl_proto.h), why it was refused into why (len
 * bytes, "" if it was not). */
int lfs_ctl_resize(struct lfs_fs *fs, uint64_t bytes, uint64_t flags, uint64_t val[4], char *why, size_t len);
void lfs_ctl_scrub_inodes(struct lfs_fs *fs, uint64_t addr, uint64_t first, uint32_t n, uint32_t *out,
			  uint32_t *got, uint64_t *next);

#endif
