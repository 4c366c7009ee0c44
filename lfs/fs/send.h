/*
 * send.h — layer 6: what a full send (send.c) and an incremental one
 * (send_incr.c) share: the records of one inode as a full stream has
 * them.  `id` names the inode in the stream, `ino` in the view.
 */
#ifndef LFS_SEND_H
#define LFS_SEND_H

#include "stream.h"

#include <stdint.h>
#include <sys/types.h>
#include <sys/stat.h>

struct lfs_fs;

struct sender {
	struct lfs_fs *fs;
	struct lfs_stream_wr w;
	uint8_t *buf;            /* a DATA record's bytes, or an attribute's value */
};

/* A directory's entries but "." and "..", sorted by name. */
struct lfs_send_ent {
	char *name;
	uint64_t ino;
	mode_t type;             /* S_IFMT bits */
};
struct lfs_send_dir {
	struct lfs_send_ent *e;
	size_t n, cap;
	int err;
};
int lfs_send_list(struct lfs_fs *fs, uint64_t dir, struct lfs_send_dir *l);
void lfs_send_list_free(struct lfs_send_dir *l);

#define SEND_DEPTH_MAX 4096u /* directories deep: a walk's bound */

/* The buffer a sender needs; NULL without memory. */
uint8_t *lfs_send_buf(void);
/* The INODE record of the inode st describes, a symlink's target with it. */
int lfs_send_inode(struct sender *s, uint64_t id, const struct stat *st);
/* Every extent with data, in DATA records (holes are not sent). */
int lfs_send_data(struct sender *s, uint64_t id, uint64_t ino);
/* Bytes [off, end) of ino, open, in DATA records. */
int lfs_send_range(struct sender *s, uint64_t id, uint64_t ino, off_t off, off_t end);
/* The names of ino's extended attributes (*list the caller's to free). */
int lfs_send_xattr_names(struct lfs_fs *fs, uint64_t ino, char **list, ssize_t *len);
/* Every extended attribute, in XATTR records. */
int lfs_send_xattrs(struct sender *s, uint64_t id, uint64_t ino);

#endif
