/*
 * scrub.h — reading a mounted filesystem's log against its checksums
 * while it is in use (lfs-scrub, and lfs_cleanerd's scrub_interval).
 *
 * The scrubber reads the image itself, read-only, segment by segment
 * with the one log reader (logwalk.h): every block of every pseg in
 * every segment that is not clean, checked against the crc its summary
 * entry recorded.  That covers every block the live tree uses and every
 * block a snapshot or kept checkpoint reads (they lie in segments that
 * stay dirty while held), dead blocks too: a segment is read whole, as
 * one sequential run.  The blocks are read past the page cache (O_DIRECT
 * where the image allows it): what is checked is what the medium holds,
 * and a scan does not push out the pages the daemon reads.  A block the
 * device cannot read is a suspect too.  Only the blocks that fail (suspects) go to the
 * daemon (LFS_CTL_SCRUB_WHO), which says whether each is used, by whom,
 * and whether its own read fails too: a block read torn while it was
 * written, or in a segment reused meanwhile, is not damage.
 *
 * A summary that fails its check (or whose magic is gone: damage may
 * replace a whole block) ends its segment's chain: what follows it
 * cannot be checked, by the scrubber or the daemon.  It is damage when
 * the segment, no longer written, counts more live bytes than the
 * verified psegs before it hold; the chain is read again to confirm.
 *
 * The scan's position and suspects can be saved in a small state file
 * and taken up again, after a remount too (lfs_scrub_save/_load).
 */
#ifndef LFS_SCRUB_H
#define LFS_SCRUB_H

#include "bdev.h"
#include "cleaner.h"
#include "format.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most suspects one scrub keeps (a disk failing everywhere gives
 * more: the rest are counted, not named). */
#define LFS_SCRUB_MAX_SUSPECTS 65536

/* A suspect whose kind is this is a summary that failed its check,
 * lblk the live bytes after it that no verified pseg accounts for. */
#define LFS_SCRUB_SUMMARY 0

struct lfs_scrub {
	struct lfs_ctl_client *cl;
	struct lfs_bdev dev;        /* the image, read-only: the summaries */
	int dfd;                    /* the same, O_DIRECT (-1: none): the blocks */
	uint8_t *buf;               /* a segment's blocks, aligned */
	struct lfs_super sb;
	uint32_t seed, bsize, seg_blocks;
	uint64_t nsegs;
	char uuid[37];
	struct lfs_ctl_seg *usage;  /* nsegs entries, as of lfs_scrub_usage */
	/* the scan: saved and loaded with the state */
	uint64_t next_seg;          /* where it goes on */
	uint64_t segs_done, blocks, bytes; /* read so far */
	double seconds;             /* spent reading, over every run */
	struct lfs_ctl_blk *sus;    /* the suspects (LFS_SCRUB_MAX_SUSPECTS at most) */
	size_t nsus;
	uint64_t sus_more;          /* failed beyond that */
	bool complete;              /* every segment was read */
	uint64_t finished;          /* when it completed, seconds since the epoch */
};

/* Open the image of the daemon `cl` reaches; 0, or -errno with msg. */
int lfs_scrub_open(struct lfs_scrub *s, struct lfs_ctl_client *cl, char *msg, size_t len);
void lfs_scrub_close(struct lfs_scrub *s);
/* Start again from the first segment. */
void lfs_scrub_reset(struct lfs_scrub *s);
/* Fetch the usage table (which segments are clean). */
int lfs_scrub_usage(struct lfs_scrub *s);
/* Segments not clean, from segment `from` on. */
uint64_t lfs_scrub_left(const struct lfs_scrub *s, uint64_t from);
/* Read the next segment that is not clean: 1, 0 when the scan is
 * complete, or -errno. */
int lfs_scrub_step(struct lfs_scrub *s);

/* One confirmed damage: a block the daemon also read bad, used. */
struct lfs_scrub_damage {
	struct lfs_ctl_damage d;    /* kind LFS_SCRUB_SUMMARY: a summary */
	uint32_t ino;               /* an inode whose record an inode block held (0: see d) */
};
/* Ask the daemon about every suspect; *out the damage (the caller frees
 * it), *n of them, sorted by inode and offset. */
int lfs_scrub_confirm(struct lfs_scrub *s, struct lfs_scrub_damage **out, size_t *n);

/* The state file: 0, -ENOENT (none), or -errno (-EINVAL: not one of this
 * filesystem's, or malformed; `msg` says which). */
int lfs_scrub_load(struct lfs_scrub *s, const char *path, char *msg, size_t len);
int lfs_scrub_save(const struct lfs_scrub *s, const char *path);
/* The default state file of filesystem `uuid`: /var/lib/lfs/scrub-UUID
 * for root, else under $XDG_STATE_HOME or ~/.local/state; the directory
 * is made if need be. */
int lfs_scrub_state_path(const char *uuid, char *out, size_t len);

#endif
