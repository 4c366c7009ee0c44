/*
 * fuse_snapshot.h — a snapshot served beside the live mount, its blocks
 * read through the live daemon (fuse_snapshot.c).
 */
#ifndef LFS_FUSE_SNAPSHOT_H
#define LFS_FUSE_SNAPSHOT_H

#include "lfs.h"

struct lfs_remote;

/* A read-only view of the kept checkpoint spec (a snapshot's name or a
 * number) of image, which the daemon at mnt has mounted, to be mounted
 * at `where`; *out_r is the connection it reads through, which holds the
 * checkpoint (no deleting it) until it is freed (lfs_remote_free) after
 * the view (lfs_abandon).  0 or -errno, logged. */
int lfs_remote_view(const char *image, const char *mnt, const char *spec, const char *where,
		    struct lfs_remote **out_r, struct lfs_fs **out_fs);
void lfs_remote_free(struct lfs_remote *r);

#endif
