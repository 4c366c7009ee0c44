/*
 * stream.c — layer 1: the send stream's one encoder and one decoder
 * (stream.h; lfs(5), SEND STREAMS).  A record is a 16-byte header and a
 * payload:
 *
 *   0 type (u16)  2 reserved, 0 (u16)  4 payload length (u32)
 *   8 index (u32, the record's number from 0)  12 crc32 (u32) of
 *   bytes 0..11 and the payload
 *
 * little-endian, as the image is.  The length is checked against
 * LFS_STREAM_REC_MAX before a byte of the payload is read, so the
 * reader's one buffer bounds what a hostile stream can make it hold, and
 * every record is read once: linear in the stream.
 */
#include "stream.h"

#include "format.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* payload layouts: offsets, and the fixed parts' sizes */
enum {
	BEGIN_MAGIC = 0, BEGIN_VERSION = 8, BEGIN_FLAGS = 12, BEGIN_UUID = 16, BEGIN_SEQ = 32,
	BEGIN_PARENT_SEQ = 40, BEGIN_NAME = 48, BEGIN_PARENT_NAME = 88, BEGIN_SIZE = 128,
	INODE_ID = 0, INODE_MODE = 8, INODE_UID = 12, INODE_GID = 16, INODE_FLAGS = 20, INODE_RDEV = 24,
	INODE_SIZE_ = 32, INODE_NLINK = 40, INODE_RSVD = 44, INODE_ATIME = 48, INODE_MTIME = 60,
	INODE_CTIME = 72, INODE_FIXED = 84,
	LINK_DIR = 0, LINK_ID = 8, LINK_FIXED = 16,
	DATA_ID = 0, DATA_OFF = 8, DATA_FIXED = 16,
	XATTR_ID = 0, XATTR_NLEN = 8, XATTR_RSVD = 10, XATTR_FIXED = 12,
	REF_ID = 0, REF_DIR = 8, REF_FIXED = 16,
	HOLE_ID = 0, HOLE_OFF = 8, HOLE_LEN = 16, HOLE_SIZE = 24,
	RMX_ID = 0, RMX_FIXED = 8,
	END_RECORDS = 0, END_BYTES = 8, END_CRC = 16, END_RSVD = 20, END_SIZE = 24,
};
_Static_assert(BEGIN_PARENT_NAME + LFS_STREAM_SNAP_NAME == BEGIN_SIZE, "begin record size");
_Static_assert(DATA_FIXED + LFS_STREAM_DATA_MAX <= LFS_STREAM_REC_MAX, "data record fits the buffer");
_Static_assert(XATTR_FIXED + LFS_STREAM_NAME_MAX + LFS_STREAM_XVAL_MAX <= LFS_STREAM_REC_MAX,
	       "xattr record fits the buffer");
_Static_assert(INODE_FIXED + LFS_STREAM_LINK_MAX <= LFS_STREAM_REC_MAX, "inode record fits the buffer");

#define MAX_OFFSET ((uint64_t)INT64_MAX)

const char *
lfs_stream_type_name(unsigned type)
{
	static const char *names[] = { "?",   "BEGIN", "INODE", "LINK", "DATA",
				       "XATTR", "END", "REF",   "UNLINK", "HOLE", "RMXATTR" };
	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}

bool
lfs_stream_name_ok(const char *name, size_t len)
{
	if (len == 0 || len > LFS_STREAM_NAME_MAX || memchr(name, '/', len) || memchr(name, '\0', len))
		return false;
	return !(len == 1 && name[0] == '.') && !(len == 2 && name[0] == '.' && name[1] == '.');
}

/* ---------------------------------------------------------------- writing */

static int
emit(struct lfs_stream_wr *w, const void *buf, size_t len)
{
	return len ? w->write(w->ctx, buf, len) : 0;
}

/* One record: the fixed part, then up to two variable parts. */
static int
put(struct lfs_stream_wr *w, unsigned type, const uint8_t *fixed, size_t flen, const void *a, size_t alen,
    const void *b, size_t blen)
{
	size_t len = flen + alen + blen;
	if (len > LFS_STREAM_REC_MAX)
		return -EINVAL;
	uint8_t h[LFS_STREAM_HDR];
	lfs_put16(h, (uint16_t)type);
	lfs_put16(h + 2, 0);
	lfs_put32(h + 4, (uint32_t)len);
	lfs_put32(h + 8, w->index);
	/* each byte read once: the record's crc and the whole stream's
	 * are both made from the body's */
	uint32_t body = lfs_crc(lfs_crc(lfs_crc(0, fixed, flen), a, alen), b, blen);
	uint32_t op = lfs_crc_combine_gen(len);
	lfs_put32(h + 12, lfs_crc_combine(lfs_crc(0, h, 12), body, op));
	w->crc = lfs_crc_combine(lfs_crc(w->crc, h, sizeof(h)), body, op);
	w->bytes += sizeof(h) + len;
	int err = emit(w, h, sizeof(h));
	if (!err)
		err = emit(w, fixed, flen);
	if (!err)
		err = emit(w, a, alen);
	if (!err)
		err = emit(w, b, blen);
	w->index++;
	return err;
}

int
lfs_stream_put_begin(struct lfs_stream_wr *w, const struct lfs_stream_begin *b)
{
	uint8_t p[BEGIN_SIZE] = { 0 };
	memcpy(p + BEGIN_MAGIC, LFS_STREAM_MAGIC, 8);
	lfs_put32(p + BEGIN_VERSION, b->parent_seq ? LFS_STREAM_VERSION_INCR : LFS_STREAM_VERSION);
	lfs_put32(p + BEGIN_FLAGS, b->flags);
	memcpy(p + BEGIN_UUID, b->uuid, 16);
	lfs_put64(p + BEGIN_SEQ, b->seq);
	lfs_put64(p + BEGIN_PARENT_SEQ, b->parent_seq);
	memcpy(p + BEGIN_NAME, b->name, strnlen(b->name, LFS_STREAM_SNAP_NAME));
	memcpy(p + BEGIN_PARENT_NAME, b->parent_name, strnlen(b->parent_name, LFS_STREAM_SNAP_NAME));
	w->crc = 0;
	w->bytes = 0;
	w->index = 0;
	return put(w, LFS_SR_BEGIN, p, sizeof(p), NULL, 0, NULL, 0);
}

static void
put_time(uint8_t *p, const struct lfs_stream_time *t)
{
	lfs_put64(p, (uint64_t)t->s);
	lfs_put32(p + 8, t->ns);
}

int
lfs_stream_put_inode(struct lfs_stream_wr *w, const struct lfs_stream_inode *in, const char *target, size_t tlen)
{
	uint8_t p[INODE_FIXED] = { 0 };
	lfs_put64(p + INODE_ID, in->id);
	lfs_put32(p + INODE_MODE, in->mode);
	lfs_put32(p + INODE_UID, in->uid);
	lfs_put32(p + INODE_GID, in->gid);
	lfs_put32(p + INODE_FLAGS, in->flags);
	lfs_put64(p + INODE_RDEV, in->rdev);
	lfs_put64(p + INODE_SIZE_, in->size);
	lfs_put32(p + INODE_NLINK, in->nlink);
	put_time(p + INODE_ATIME, &in->atime);
	put_time(p + INODE_MTIME, &in->mtime);
	put_time(p + INODE_CTIME, &in->ctime);
	return put(w, LFS_SR_INODE, p, sizeof(p), target, tlen, NULL, 0);
}

int
lfs_stream_put_link(struct lfs_stream_wr *w, uint64_t dir, uint64_t id, const char *name)
{
	uint8_t p[LINK_FIXED];
	lfs_put64(p + LINK_DIR, dir);
	lfs_put64(p + LINK_ID, id);
	return put(w, LFS_SR_LINK, p, sizeof(p), name, strlen(name), NULL, 0);
}

int
lfs_stream_put_ref(struct lfs_stream_wr *w, uint64_t id, uint64_t dir, const char *name)
{
	uint8_t p[REF_FIXED];
	lfs_put64(p + REF_ID, id);
	lfs_put64(p + REF_DIR, dir);
	return put(w, LFS_SR_REF, p, sizeof(p), name, strlen(name), NULL, 0);
}

int
lfs_stream_put_unlink(struct lfs_stream_wr *w, uint64_t dir, uint64_t id, const char *name)
{
	uint8_t p[LINK_FIXED];
	lfs_put64(p + LINK_DIR, dir);
	lfs_put64(p + LINK_ID, id);
	return put(w, LFS_SR_UNLINK, p, sizeof(p), name, strlen(name), NULL, 0);
}

int
lfs_stream_put_hole(struct lfs_stream_wr *w, uint64_t id, uint64_t off, uint64_t len)
{
	uint8_t p[HOLE_SIZE];
	lfs_put64(p + HOLE_ID, id);
	lfs_put64(p + HOLE_OFF, off);
	lfs_put64(p + HOLE_LEN, len);
	return put(w, LFS_SR_HOLE, p, sizeof(p), NULL, 0, NULL, 0);
}

int
lfs_stream_put_rmxattr(struct lfs_stream_wr *w, uint64_t id, const char *name)
{
	uint8_t p[RMX_FIXED];
	size_t nlen = strlen(name);
	if (nlen == 0 || nlen > LFS_STREAM_NAME_MAX)
		return -EINVAL;
	lfs_put64(p + RMX_ID, id);
	return put(w, LFS_SR_RMXATTR, p, sizeof(p), name, nlen, NULL, 0);
}

int
lfs_stream_put_data(struct lfs_stream_wr *w, uint64_t id, uint64_t off, const void *buf, size_t len)
{
	uint8_t p[DATA_FIXED];
	lfs_put64(p + DATA_ID, id);
	lfs_put64(p + DATA_OFF, off);
	return len > LFS_STREAM_DATA_MAX ? -EINVAL : put(w, LFS_SR_DATA, p, sizeof(p), buf, len, NULL, 0);
}

int
lfs_stream_put_xattr(struct lfs_stream_wr *w, uint64_t id, const char *name, const void *val, size_t len)
{
	uint8_t p[XATTR_FIXED] = { 0 };
	size_t nlen = strlen(name);
	if (nlen == 0 || nlen > LFS_STREAM_NAME_MAX || len > LFS_STREAM_XVAL_MAX)
		return -EINVAL;
	lfs_put64(p + XATTR_ID, id);
	lfs_put16(p + XATTR_NLEN, (uint16_t)nlen);
	return put(w, LFS_SR_XATTR, p, sizeof(p), name, nlen, val, len);
}

int
lfs_stream_put_end(struct lfs_stream_wr *w)
{
	uint8_t p[END_SIZE] = { 0 };
	lfs_put64(p + END_RECORDS, w->index);
	lfs_put64(p + END_BYTES, w->bytes);
	lfs_put32(p + END_CRC, w->crc);
	return put(w, LFS_SR_END, p, sizeof(p), NULL, 0, NULL, 0);
}

/* ---------------------------------------------------------------- reading */

int
lfs_stream_rd_init(struct lfs_stream_rd *r, int (*read)(void *, void *, size_t), void *ctx)
{
	memset(r, 0, sizeof(*r));
	r->read = read;
	r->ctx = ctx;
	/* one more byte: the NUL that ends a name at the end of a payload */
	r->buf = malloc(LFS_STREAM_REC_MAX + 1);
	return r->buf ? 0 : -ENOMEM;
}

void
lfs_stream_rd_free(struct lfs_stream_rd *r)
{
	free(r->buf);
	r->buf = NULL;
}

static int __attribute__((format(printf, 3, 4)))
refuse(struct lfs_stream_rd *r, int err, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(r->why, sizeof(r->why), "record %u: ", r->index);
	va_start(ap, fmt);
	vsnprintf(r->why + n, sizeof(r->why) - (size_t)n, fmt, ap);
	va_end(ap);
	return err;
}

/* len bytes, or fewer only at the end of the input: how many, or -errno. */
static ssize_t
read_full(struct lfs_stream_rd *r, void *buf, size_t len)
{
	size_t have = 0;
	while (have < len) {
		int n = r->read(r->ctx, (uint8_t *)buf + have, len - have);
		if (n < 0)
			return n;
		if (n == 0)
			break;
		have += (size_t)n;
	}
	return (ssize_t)have;
}

/* A snapshot's name field: NUL-padded, so nothing after its end. */
static bool
snap_name(char *out, const uint8_t *p)
{
	size_t len = strnlen((const char *)p, LFS_STREAM_SNAP_NAME);
	for (size_t i = len; i < LFS_STREAM_SNAP_NAME; i++)
		if (p[i])
			return false;
	memcpy(out, p, len);
	out[len] = '\0';
	return true;
}

static int
dec_begin(struct lfs_stream_rd *r, const uint8_t *p, size_t len, struct lfs_stream_rec *rec)
{
	struct lfs_stream_begin *b = &rec->begin;
	if (len != BEGIN_SIZE || memcmp(p + BEGIN_MAGIC, LFS_STREAM_MAGIC, 8))
		return refuse(r, -EBADMSG, "not an lfs send stream (no BEGIN record)");
	b->version = lfs_get32(p + BEGIN_VERSION);
	b->flags = lfs_get32(p + BEGIN_FLAGS);
	if (b->version != LFS_STREAM_VERSION && b->version != LFS_STREAM_VERSION_INCR)
		return refuse(r, -EBADMSG, "stream version %u, this lfs reads versions %u and %u", b->version,
			      LFS_STREAM_VERSION, LFS_STREAM_VERSION_INCR);
	if (b->flags)
		return refuse(r, -EBADMSG, "unknown flags %#x", b->flags);
	memcpy(b->uuid, p + BEGIN_UUID, 16);
	b->seq = lfs_get64(p + BEGIN_SEQ);
	b->parent_seq = lfs_get64(p + BEGIN_PARENT_SEQ);
	if (!snap_name(b->name, p + BEGIN_NAME) || !snap_name(b->parent_name, p + BEGIN_PARENT_NAME))
		return refuse(r, -EBADMSG, "a snapshot's name not NUL-padded");
	if (!b->seq || b->parent_seq >= b->seq || (!b->parent_seq && b->parent_name[0]))
		return refuse(r, -EBADMSG, "checkpoint %llu after parent %llu", (unsigned long long)b->seq,
			      (unsigned long long)b->parent_seq);
	/* a full stream has no parent, an incremental one always has */
	if ((b->version == LFS_STREAM_VERSION_INCR) != (b->parent_seq != 0))
		return refuse(r, -EBADMSG, "version %u with parent checkpoint %llu", b->version,
			      (unsigned long long)b->parent_seq);
	r->version = b->version;
	return 0;
}

static int
get_time(struct lfs_stream_rd *r, const uint8_t *p, struct lfs_stream_time *t)
{
	t->s = (int64_t)lfs_get64(p);
	t->ns = lfs_get32(p + 8);
	return t->ns < 1000000000u ? 0 : refuse(r, -EBADMSG, "a time's nanoseconds %u", t->ns);
}

/* The attributes only a type may have: a symlink's target, a device's number. */
static int
check_inode_kind(struct lfs_stream_rd *r, const struct lfs_stream_inode *in, size_t tlen, const uint8_t *t)
{
	mode_t type = in->mode & S_IFMT;
	if (type != S_IFREG && type != S_IFDIR && type != S_IFLNK && type != S_IFCHR && type != S_IFBLK &&
	    type != S_IFIFO && type != S_IFSOCK)
		return refuse(r, -EBADMSG, "inode %llu: mode %#o", (unsigned long long)in->id, in->mode);
	if (type == S_IFLNK && (tlen == 0 || tlen > LFS_STREAM_LINK_MAX || memchr(t, '\0', tlen)))
		return refuse(r, -EBADMSG, "inode %llu: a symbolic link's target of %zu bytes",
			      (unsigned long long)in->id, tlen);
	if (type != S_IFLNK && tlen)
		return refuse(r, -EBADMSG, "inode %llu: %zu bytes after its attributes", (unsigned long long)in->id,
			      tlen);
	if (in->rdev && type != S_IFCHR && type != S_IFBLK)
		return refuse(r, -EBADMSG, "inode %llu: a device number on a mode %#o", (unsigned long long)in->id,
			      in->mode);
	if ((type == S_IFDIR && in->nlink != 1) || in->nlink == 0)
		return refuse(r, -EBADMSG, "inode %llu: %u links", (unsigned long long)in->id, in->nlink);
	if (in->size > MAX_OFFSET || (type == S_IFLNK && in->size != tlen))
		return refuse(r, -EBADMSG, "inode %llu: size %llu", (unsigned long long)in->id,
			      (unsigned long long)in->size);
	return 0;
}

static int
dec_inode(struct lfs_stream_rd *r, const uint8_t *p, size_t len, struct lfs_stream_rec *rec)
{
	struct lfs_stream_inode *in = &rec->inode;
	if (len < INODE_FIXED)
		return refuse(r, -EBADMSG, "an INODE record of %zu bytes", len);
	in->id = lfs_get64(p + INODE_ID);
	in->mode = lfs_get32(p + INODE_MODE);
	in->uid = lfs_get32(p + INODE_UID);
	in->gid = lfs_get32(p + INODE_GID);
	in->flags = lfs_get32(p + INODE_FLAGS);
	in->rdev = lfs_get64(p + INODE_RDEV);
	in->size = lfs_get64(p + INODE_SIZE_);
	in->nlink = lfs_get32(p + INODE_NLINK);
	if (!in->id || lfs_get32(p + INODE_RSVD) || (in->mode & ~(uint32_t)(S_IFMT | 07777)))
		return refuse(r, -EBADMSG, "inode %llu: mode %#o", (unsigned long long)in->id, in->mode);
	int err = get_time(r, p + INODE_ATIME, &in->atime);
	if (!err)
		err = get_time(r, p + INODE_MTIME, &in->mtime);
	if (!err)
		err = get_time(r, p + INODE_CTIME, &in->ctime);
	rec->data = p + INODE_FIXED;
	rec->dlen = len - INODE_FIXED;
	return err ? err : check_inode_kind(r, in, rec->dlen, rec->data);
}

static int
dec_link(struct lfs_stream_rd *r, uint8_t *p, size_t len, struct lfs_stream_rec *rec)
{
	if (len < LINK_FIXED)
		return refuse(r, -EBADMSG, "a %s record of %zu bytes", lfs_stream_type_name(rec->type), len);
	rec->dir = lfs_get64(p + LINK_DIR);
	rec->id = lfs_get64(p + LINK_ID);
	rec->name = (const char *)p + LINK_FIXED;
	rec->nlen = len - LINK_FIXED;
	if (!rec->dir || !rec->id || rec->dir == rec->id || !lfs_stream_name_ok(rec->name, rec->nlen))
		return refuse(r, -EBADMSG, "a %s of inode %llu in %llu, a name of %zu bytes",
			      lfs_stream_type_name(rec->type), (unsigned long long)rec->id, (unsigned long long)rec->dir, rec->nlen);
	p[len] = '\0'; /* the buffer has the byte */
	return 0;
}

/* REF: an inode, and a directory and a name it has in the parent's
 * tree; the root is the one with neither. */
static int
dec_ref(struct lfs_stream_rd *r, uint8_t *p, size_t len, struct lfs_stream_rec *rec)
{
	if (len < REF_FIXED)
		return refuse(r, -EBADMSG, "a REF record of %zu bytes", len);
	rec->id = lfs_get64(p + REF_ID);
	rec->dir = lfs_get64(p + REF_DIR);
	rec->name = (const char *)p + REF_FIXED;
	rec->nlen = len - REF_FIXED;
	bool root = !rec->dir && !rec->nlen;
	if (!rec->id || rec->dir == rec->id || (!root && (!rec->dir || !lfs_stream_name_ok(rec->name, rec->nlen))))
		return refuse(r, -EBADMSG, "a REF of inode %llu in %llu, a name of %zu bytes",
			      (unsigned long long)rec->id, (unsigned long long)rec->dir, rec->nlen);
	p[len] = '\0'; /* the buffer has the byte */
	return 0;
}

static int
dec_hole(struct lfs_stream_rd *r, const uint8_t *p, size_t len, struct lfs_stream_rec *rec)
{
	if (len != HOLE_SIZE)
		return refuse(r, -EBADMSG, "a HOLE record of %zu bytes", len);
	rec->id = lfs_get64(p + HOLE_ID);
	rec->off = lfs_get64(p + HOLE_OFF);
	rec->len = lfs_get64(p + HOLE_LEN);
	if (!rec->id || !rec->len || rec->off > MAX_OFFSET || rec->len > MAX_OFFSET - rec->off)
		return refuse(r, -EBADMSG, "a HOLE of inode %llu at %llu, %llu bytes", (unsigned long long)rec->id,
			      (unsigned long long)rec->off, (unsigned long long)rec->len);
	return 0;
}

static int
dec_rmxattr(struct lfs_stream_rd *r, uint8_t *p, size_t len, struct lfs_stream_rec *rec)
{
	if (len <= RMX_FIXED)
		return refuse(r, -EBADMSG, "an RMXATTR record of %zu bytes", len);
	rec->id = lfs_get64(p + RMX_ID);
	rec->name = (const char *)p + RMX_FIXED;
	rec->nlen = len - RMX_FIXED;
	if (!rec->id || rec->nlen > LFS_STREAM_NAME_MAX || memchr(rec->name, '\0', rec->nlen))
		return refuse(r, -EBADMSG, "an RMXATTR of inode %llu, a name of %zu bytes", (unsigned long long)rec->id,
			      rec->nlen);
	p[len] = '\0'; /* the buffer has the byte */
	return 0;
}

static int
dec_data(struct lfs_stream_rd *r, const uint8_t *p, size_t len, struct lfs_stream_rec *rec)
{
	if (len <= DATA_FIXED || len - DATA_FIXED > LFS_STREAM_DATA_MAX)
		return refuse(r, -EBADMSG, "a DATA record of %zu bytes", len);
	rec->id = lfs_get64(p + DATA_ID);
	rec->off = lfs_get64(p + DATA_OFF);
	rec->data = p + DATA_FIXED;
	rec->dlen = len - DATA_FIXED;
	if (!rec->id || rec->off > MAX_OFFSET - rec->dlen)
		return refuse(r, -EBADMSG, "DATA of inode %llu at offset %llu", (unsigned long long)rec->id,
			      (unsigned long long)rec->off);
	return 0;
}

static int
dec_xattr(struct lfs_stream_rd *r, uint8_t *p, size_t len, struct lfs_stream_rec *rec)
{
	if (len < XATTR_FIXED)
		return refuse(r, -EBADMSG, "an XATTR record of %zu bytes", len);
	rec->id = lfs_get64(p + XATTR_ID);
	rec->nlen = lfs_get16(p + XATTR_NLEN);
	if (!rec->id || lfs_get16(p + XATTR_RSVD) || rec->nlen == 0 || rec->nlen > LFS_STREAM_NAME_MAX ||
	    rec->nlen > len - XATTR_FIXED || len - XATTR_FIXED - rec->nlen > LFS_STREAM_XVAL_MAX ||
	    memchr(p + XATTR_FIXED, '\0', rec->nlen))
		return refuse(r, -EBADMSG, "an XATTR of inode %llu: name of %zu bytes in %zu",
			      (unsigned long long)rec->id, rec->nlen, len);
	/* the name moves to the front to end it with a NUL: the value follows it */
	rec->data = p + XATTR_FIXED + rec->nlen;
	rec->dlen = len - XATTR_FIXED - rec->nlen;
	memmove(p, p + XATTR_FIXED, rec->nlen);
	p[rec->nlen] = '\0';
	rec->name = (const char *)p;
	return 0;
}

static int
dec_end(struct lfs_stream_rd *r, const uint8_t *p, size_t len, struct lfs_stream_rec *rec, uint32_t crc_before,
	uint64_t bytes_before)
{
	if (len != END_SIZE || lfs_get32(p + END_RSVD))
		return refuse(r, -EBADMSG, "an END record of %zu bytes", len);
	rec->end_records = lfs_get64(p + END_RECORDS);
	rec->end_bytes = lfs_get64(p + END_BYTES);
	rec->end_crc = lfs_get32(p + END_CRC);
	if (rec->end_records != r->index || rec->end_bytes != bytes_before)
		return refuse(r, -EBADMSG, "END counts %llu records, %llu bytes; %u and %llu came",
			      (unsigned long long)rec->end_records, (unsigned long long)rec->end_bytes, r->index,
			      (unsigned long long)bytes_before);
	if (rec->end_crc != crc_before)
		return refuse(r, -EBADMSG, "the stream's crc %#x, END says %#x", crc_before, rec->end_crc);
	return 0;
}

/* The header of the next record: its type and payload length, checked. */
static int
read_header(struct lfs_stream_rd *r, uint8_t *h, unsigned *type, size_t *len)
{
	ssize_t n = read_full(r, h, LFS_STREAM_HDR);
	if (n < 0)
		return refuse(r, (int)n, "reading the stream: %s", strerror((int)-n));
	if (n == 0)
		return refuse(r, -EPIPE, "the stream ends without its END record (cut short?)");
	if (n < LFS_STREAM_HDR)
		return refuse(r, -EPIPE, "the stream ends inside a record's header");
	*type = lfs_get16(h);
	*len = lfs_get32(h + 4);
	if (lfs_get16(h + 2) || *len > LFS_STREAM_REC_MAX)
		return refuse(r, -EBADMSG, "a header saying %zu bytes (at most %u)", *len, LFS_STREAM_REC_MAX);
	if (lfs_get32(h + 8) != r->index)
		return refuse(r, -EBADMSG, "numbered %u (a record lost, repeated or moved?)", lfs_get32(h + 8));
	if (*type < LFS_SR_BEGIN || *type > LFS_SR_RMXATTR ||
	    (*type > LFS_SR_END && r->version != LFS_STREAM_VERSION_INCR))
		return refuse(r, -EBADMSG, "unknown type %u (in a version %u stream)", *type, r->version);
	if ((*type == LFS_SR_BEGIN) != (r->index == 0))
		return refuse(r, -EBADMSG, "%s", r->index ? "a second BEGIN" : "the stream does not start with BEGIN");
	return 0;
}

/* After END: the input must end too. */
static int
after_end(struct lfs_stream_rd *r)
{
	uint8_t b;
	ssize_t n = read_full(r, &b, 1);
	if (n < 0)
		return refuse(r, (int)n, "reading the stream: %s", strerror((int)-n));
	return n ? refuse(r, -EBADMSG, "bytes after the END record") : 1;
}

int
lfs_stream_next(struct lfs_stream_rd *r, struct lfs_stream_rec *rec)
{
	if (r->ended)
		return after_end(r);
	memset(rec, 0, sizeof(*rec));
	uint8_t h[LFS_STREAM_HDR];
	unsigned type = 0;
	size_t len = 0;
	int err = read_header(r, h, &type, &len);
	if (err)
		return err;
	ssize_t n = read_full(r, r->buf, len);
	if (n < 0)
		return refuse(r, (int)n, "reading the stream: %s", strerror((int)-n));
	if ((size_t)n < len)
		return refuse(r, -EPIPE, "the stream ends inside a %s record", lfs_stream_type_name(type));
	uint32_t c = lfs_crc(lfs_crc(0, h, 12), r->buf, len);
	if (c != lfs_get32(h + 12))
		return refuse(r, -EBADMSG, "%s: crc %#x, the record says %#x", lfs_stream_type_name(type), c,
			      lfs_get32(h + 12));
	uint32_t crc_before = r->crc;
	uint64_t bytes_before = r->bytes;
	r->crc = lfs_crc(lfs_crc(r->crc, h, sizeof(h)), r->buf, len);
	r->bytes += sizeof(h) + len;
	rec->type = (uint16_t)type;
	rec->index = r->index;
	switch (type) {
	case LFS_SR_BEGIN: err = dec_begin(r, r->buf, len, rec); break;
	case LFS_SR_INODE: err = dec_inode(r, r->buf, len, rec); break;
	case LFS_SR_LINK: err = dec_link(r, r->buf, len, rec); break;
	case LFS_SR_DATA: err = dec_data(r, r->buf, len, rec); break;
	case LFS_SR_XATTR: err = dec_xattr(r, r->buf, len, rec); break;
	case LFS_SR_REF: err = dec_ref(r, r->buf, len, rec); break;
	case LFS_SR_UNLINK: err = dec_link(r, r->buf, len, rec); break;
	case LFS_SR_HOLE: err = dec_hole(r, r->buf, len, rec); break;
	case LFS_SR_RMXATTR: err = dec_rmxattr(r, r->buf, len, rec); break;
	default: err = dec_end(r, r->buf, len, rec, crc_before, bytes_before); r->ended = !err; break;
	}
	r->index++;
	return err;
}
