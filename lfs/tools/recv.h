/*
 * recv.h — what lfs-receive's full receive (lfs_receive.c) and its
 * incremental one (recv_incr.c) share: the state that carries why a
 * stream was refused, and the calls that make an inode and give it its
 * last attributes.
 */
#ifndef LFS_RECV_H
#define LFS_RECV_H

#include "stream.h"
#include "u64map.h"

#include <stdbool.h>
#include <stdint.h>

struct node;

struct recv {
	bool apply;
	struct u64map nodes;        /* id -> struct node */
	struct node **order;        /* in the order received */
	size_t n, cap;
	uint64_t root, data_bytes, records;
	size_t changed;             /* an incremental stream: the inodes it names */
	struct node *open_node;     /* the file open_fd writes */
	int open_fd;
	char why[256];
};

int recv_bad(struct recv *rv, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* ret < 0: errno said why `what` of path failed */
int recv_sys(struct recv *rv, int ret, const char *what, const char *path);
/* A new inode at path, as `in` says: its type, size, owner and mode. */
int recv_make(struct recv *rv, const struct lfs_stream_inode *in, const char *target, const char *path);
/* What nothing changes after: chattr(1)'s flags (all of them if
 * `all_flags`, else only those set), then the times. */
int recv_finish(struct recv *rv, const struct lfs_stream_inode *in, const char *path, bool all_flags);
/* Remove path, and all under it if it is a directory. */
int recv_remove(struct recv *rv, const char *path);

/* The stream on *fd (NULL: standard input) opened, its BEGIN read into *b. */
int recv_stream_open(struct recv *rv, struct lfs_stream_rd *rd, int *fd, struct lfs_stream_begin *b);
/* Every record after BEGIN to the end: a full stream's tree made, or
 * an incremental one's changes applied (recv_incr). */
int recv_stream_rest(struct recv *rv, struct lfs_stream_rd *rd, const struct lfs_stream_begin *b);
void recv_free(struct recv *rv);
/* recv_mount.c: make the stream's tree snapshot NAME of the lfs mounted
 * at mnt; 0 or 1, what went wrong said. */
int recv_into_mount(const char *mnt, bool verbose);

/* The records after an incremental stream's BEGIN, applied (rv->apply)
 * in the directory that is the parent's tree made anew (cwd). */
int recv_incr(struct recv *rv, struct lfs_stream_rd *rd);

#endif
