/*
 * stream.h — the send stream (lfs(5), SEND STREAMS): a snapshot's tree
 * as a sequence of records, each checksummed, the whole checksummed by
 * the last.  lfs-send writes one (send.c walks the tree), lfs-receive
 * reads one; this is its one encoder and its one decoder.
 */
#ifndef LFS_STREAM_H
#define LFS_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LFS_STREAM_MAGIC "lfs-send"
#define LFS_STREAM_VERSION 1u            /* a full stream */
#define LFS_STREAM_VERSION_INCR 2u       /* an incremental one: the changes since a parent */
#define LFS_STREAM_HDR 16u               /* type 2, reserved 2, length 4, index 4, crc 4 */
#define LFS_STREAM_DATA_MAX (128u << 10) /* a DATA record's bytes, at most */
#define LFS_STREAM_NAME_MAX 255u         /* a name or an attribute's name */
#define LFS_STREAM_XVAL_MAX (64u << 10)  /* an attribute's value (XATTR_SIZE_MAX) */
#define LFS_STREAM_LINK_MAX 4095u        /* a symbolic link's target */
#define LFS_STREAM_SNAP_NAME 40u         /* a snapshot's name, NUL-padded */
/* the largest payload any record may have: the decoder's buffer */
#define LFS_STREAM_REC_MAX (LFS_STREAM_DATA_MAX + 16u)

enum lfs_stream_type {
	LFS_SR_BEGIN = 1, /* first: what the stream holds */
	LFS_SR_INODE = 2, /* an inode's attributes (a symlink's target after them) */
	LFS_SR_LINK = 3,  /* a name in a directory for an inode sent before */
	LFS_SR_DATA = 4,  /* bytes of a regular file at an offset (holes are not sent) */
	LFS_SR_XATTR = 5, /* an extended attribute (POSIX ACLs are these) */
	LFS_SR_END = 6,   /* last: the records and bytes before it, their crc */
	/* incremental streams only (version 2) */
	LFS_SR_REF = 7,     /* an inode of the parent's tree, by a name it has there */
	LFS_SR_UNLINK = 8,  /* a name of the parent's tree that the snapshot has not */
	LFS_SR_HOLE = 9,    /* bytes of a regular file that are a hole now */
	LFS_SR_RMXATTR = 10, /* an extended attribute the snapshot has not */
};

struct lfs_stream_begin {
	uint32_t version, flags;
	uint8_t uuid[16];                /* the source filesystem's */
	uint64_t seq, parent_seq;        /* the snapshot's checkpoint; the parent's, 0: a full stream */
	char name[LFS_STREAM_SNAP_NAME + 1], parent_name[LFS_STREAM_SNAP_NAME + 1];
};

struct lfs_stream_time {
	int64_t s;
	uint32_t ns;
};

struct lfs_stream_inode {
	uint64_t id;                     /* the source's inode number: names it in the stream */
	uint32_t mode, uid, gid, flags;  /* flags: chattr(1)'s, as FS_IOC_GETFLAGS has them */
	uint64_t rdev, size;
	uint32_t nlink;                  /* names that LINK records give it (directories: 1) */
	struct lfs_stream_time atime, mtime, ctime;
};

/* One decoded record; pointers point into the reader's buffer, valid
 * until the next call. */
struct lfs_stream_rec {
	uint16_t type;
	uint32_t index;
	struct lfs_stream_begin begin;   /* BEGIN */
	struct lfs_stream_inode inode;   /* INODE */
	uint64_t id, dir, off, len;      /* LINK, UNLINK, REF: dir (REF: 0 the root), id; DATA: id,
					    off; HOLE: id, off, len; XATTR, RMXATTR: id */
	const char *name;                /* LINK, UNLINK, REF, XATTR, RMXATTR: NUL-terminated, nlen bytes */
	size_t nlen;
	const uint8_t *data;             /* DATA: the bytes; XATTR: the value; INODE: a symlink's target */
	size_t dlen;
	uint64_t end_records, end_bytes; /* END */
	uint32_t end_crc;
};

/* Writing: every record goes to write(ctx, buf, len), which returns 0 or
 * -errno; the writer counts and checksums what went out. */
struct lfs_stream_wr {
	int (*write)(void *ctx, const void *buf, size_t len);
	void *ctx;
	uint32_t crc, index;
	uint64_t bytes;
};
int lfs_stream_put_begin(struct lfs_stream_wr *w, const struct lfs_stream_begin *b);
int lfs_stream_put_inode(struct lfs_stream_wr *w, const struct lfs_stream_inode *in, const char *target,
			 size_t tlen);
int lfs_stream_put_link(struct lfs_stream_wr *w, uint64_t dir, uint64_t id, const char *name);
int lfs_stream_put_data(struct lfs_stream_wr *w, uint64_t id, uint64_t off, const void *buf, size_t len);
int lfs_stream_put_xattr(struct lfs_stream_wr *w, uint64_t id, const char *name, const void *val, size_t len);
int lfs_stream_put_end(struct lfs_stream_wr *w);
/* Incremental streams (a BEGIN with a parent): dir 0 and name "" refer
 * to the tree's root. */
int lfs_stream_put_ref(struct lfs_stream_wr *w, uint64_t id, uint64_t dir, const char *name);
int lfs_stream_put_unlink(struct lfs_stream_wr *w, uint64_t dir, uint64_t id, const char *name);
int lfs_stream_put_hole(struct lfs_stream_wr *w, uint64_t id, uint64_t off, uint64_t len);
int lfs_stream_put_rmxattr(struct lfs_stream_wr *w, uint64_t id, const char *name);

/* Reading: read(ctx, buf, len) returns the bytes read (0 at the end of
 * the input, fewer only there) or -errno.  lfs_stream_next gives one
 * record at a time, each checked whole before it is returned: its
 * length bounded before anything is read into the buffer, its crc, its
 * place (BEGIN first, indices in order, END last and agreeing with
 * what came before it), every length and name inside it.  Refused:
 * -EBADMSG with why[] saying what and where; a stream that stops short
 * of END: -EPIPE (why[] too).  After END, lfs_stream_next returns 1 if
 * the input ends there, else -EBADMSG. */
struct lfs_stream_rd {
	int (*read)(void *ctx, void *buf, size_t len);
	void *ctx;
	uint8_t *buf;                    /* LFS_STREAM_REC_MAX bytes */
	uint32_t crc, index;
	uint64_t bytes;
	uint32_t version;                /* BEGIN's */
	bool ended;
	char why[160];
};
int lfs_stream_rd_init(struct lfs_stream_rd *r, int (*read)(void *, void *, size_t), void *ctx);
void lfs_stream_rd_free(struct lfs_stream_rd *r);
int lfs_stream_next(struct lfs_stream_rd *r, struct lfs_stream_rec *rec);
/* Whether name may be a name in a directory: 1 to 255 bytes, no '/',
 * not "." or "..". */
bool lfs_stream_name_ok(const char *name, size_t len);
const char *lfs_stream_type_name(unsigned type);

#endif
