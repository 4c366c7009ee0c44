/*
 * state_img.h — the image crashsim mounts for each crash state.
 *
 * One memfd holds the durable image (everything up to the flush point)
 * but for the blocks the state at hand changes: a state is an overlay,
 * the blocks its writes in flight touch, written in before its mounts;
 * afterwards those blocks and every block the recovering mount wrote
 * (its own trace, lfs_bdev_trace) are put back from the durable image
 * in memory.  A state costs what it changes, not a copy of the image.
 */
#ifndef CRASH_STATE_IMG_H
#define CRASH_STATE_IMG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STATE_BLK 4096u

struct state_img {
	uint8_t *img;               /* the durable image */
	size_t bytes, nblk;
	int fd;                     /* the memfd mounted; path names it */
	char path[64];
	int trace_fd;               /* where a read-write mount of it traces its writes */
	char trace_path[64];
	uint8_t *dirty;             /* per block: the memfd may differ from img */
	uint8_t *changed;           /* per block: written since state_img_changed */
	uint64_t blocks_written;    /* into the memfd, to load or undo states */
};

/* A state: blocks that differ from the durable image (NULL: the same). */
struct overlay {
	uint8_t **blk;
	size_t n;                   /* blocks held */
};

/* The durable image starts as base (bytes long, whole blocks). */
int state_img_init(struct state_img *s, const uint8_t *base, size_t bytes);
void state_img_free(struct state_img *s);
/* A write in flight reached the disk for good: into img and the memfd
 * (data NULL: a discard, zeros). */
int state_img_apply(struct state_img *s, uint64_t off, const uint8_t *data, size_t len);
/* Mount the memfd as it is now (the durable image with an overlay). */
int state_img_load(struct state_img *s, const struct overlay *ov);
/* Back to the durable image after the state's mounts: its overlay and
 * what a read-write mount traced to trace_path. */
int state_img_undo(struct state_img *s);
/* fn(off, len, ctx) for each run of bytes of the memfd written since
 * the last call (what a read-write mount wrote too, from its trace); 0,
 * or -errno if the trace cannot be read. */
int state_img_changed(struct state_img *s, void (*fn)(uint64_t off, uint64_t len, void *ctx), void *ctx);
/* The memfd equals the durable image: 0, or -EIO. */
int state_img_verify(struct state_img *s);
/* The memfd as it is now, copied to path. */
int state_img_save(const struct state_img *s, const char *path);

void overlay_init(struct overlay *ov, const struct state_img *s);
/* len bytes of data at off land on the state, over what it holds (data
 * NULL: a discard, zeros). */
void overlay_add(struct overlay *ov, const struct state_img *s, uint64_t off, const uint8_t *data, size_t len);
/* Drop the blocks that equal the durable image's again. */
void overlay_settle(struct overlay *ov, const struct state_img *s);
/* Settled overlays a and b make the same bytes. */
bool overlay_same(const struct overlay *a, const struct overlay *b, const struct state_img *s);
void overlay_free(struct overlay *ov, const struct state_img *s);

#endif
