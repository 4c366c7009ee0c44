/*
 * salvage.h — fsck.lfs --salvage: the files of an image its checkpoints
 * no longer describe, copied out from what its log says of itself.
 */
#ifndef LFS_SALVAGE_H
#define LFS_SALVAGE_H

#include "bdev.h"
#include "format.h"

#include <stdint.h>

struct lfs_salvage_report {
	uint64_t segs, psegs, bad_blocks, read_errors;  /* the scan */
	uint64_t records, blocks;                       /* kept from it */
	uint64_t files, dirs, symlinks, specials, links; /* copied out */
	uint64_t lost_found;                            /* of those, under lost+found */
	uint64_t incomplete, missing_blocks;            /* files with blocks that were not found */
	uint64_t skipped;                               /* could not be made (named on stderr) */
};

/* Scan every segment of the image open on `dev` (superblock `sb`) and
 * copy what it holds into the directory `dir`, which must exist and be
 * empty.  Each incomplete or skipped file is named on standard error.
 * 0, or -errno when the scan or `dir` cannot be used at all. */
int lfs_salvage(struct lfs_bdev *dev, const struct lfs_super *sb, const char *dir,
		struct lfs_salvage_report *r);

#endif
