/*
 * check_stream.c — mirrors lfs/format/stream.c, the send stream's
 * encoder and decoder (stream.h; lfs(5), SEND STREAMS): what is written
 * reads back the same; a stream cut anywhere is -EPIPE; any byte
 * changed, any record dropped, repeated or moved, any field out of its
 * bounds (re-sealed, so that the crc does not hide it) is refused with
 * -EBADMSG and a reason, and the decoder never reads past its buffer.
 * The same for an incremental stream (version 2) and its records (REF,
 * UNLINK, HOLE, RMXATTR), which a full stream (version 1) may not hold.
 */
#include "check_run.h"
#include "memstream.h"
#include "format.h"
#include "stream.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint8_t data[3000];

/* A small stream of every record type. */
static void
sample(struct mem *m)
{
	struct lfs_stream_wr w = { .write = mem_write, .ctx = m };
	struct lfs_stream_begin b = { .seq = 7, .uuid = { 1, 2, 3 } };
	strcpy(b.name, "snap");
	ck_assert_int_eq(lfs_stream_put_begin(&w, &b), 0);
	struct lfs_stream_inode root = { .id = 1, .mode = S_IFDIR | 0755, .nlink = 1, .mtime = { 5, 999999999 } };
	ck_assert_int_eq(lfs_stream_put_inode(&w, &root, NULL, 0), 0);
	struct lfs_stream_inode f = { .id = 9, .mode = S_IFREG | 04644, .uid = 1000, .nlink = 2, .size = 1 << 20 };
	ck_assert_int_eq(lfs_stream_put_inode(&w, &f, NULL, 0), 0);
	ck_assert_int_eq(lfs_stream_put_link(&w, 1, 9, "file"), 0);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	ck_assert_int_eq(lfs_stream_put_data(&w, 9, 65536, data, sizeof(data)), 0);
	ck_assert_int_eq(lfs_stream_put_xattr(&w, 9, "user.k", "value", 5), 0);
	ck_assert_int_eq(lfs_stream_put_link(&w, 1, 9, "again"), 0);
	struct lfs_stream_inode l = { .id = 10, .mode = S_IFLNK | 0777, .nlink = 1, .size = 6 };
	ck_assert_int_eq(lfs_stream_put_inode(&w, &l, "target", 6), 0);
	ck_assert_int_eq(lfs_stream_put_link(&w, 1, 10, "sym"), 0);
	ck_assert_int_eq(lfs_stream_put_end(&w), 0);
}

#define ROOT_ID (3ull << 32 | 1)
#define DIR_ID (7ull << 32 | 12)
#define FILE_ID (1ull << 32 | 40)

/* A small incremental stream of every record type it may hold. */
static void
sample_incr(struct mem *m)
{
	struct lfs_stream_wr w = { .write = mem_write, .ctx = m };
	struct lfs_stream_begin b = { .seq = 9, .parent_seq = 7, .uuid = { 4, 5, 6 } };
	strcpy(b.name, "s2");
	strcpy(b.parent_name, "p1");
	ck_assert_int_eq(lfs_stream_put_begin(&w, &b), 0);
	ck_assert_int_eq(lfs_stream_put_ref(&w, ROOT_ID, 0, ""), 0);
	ck_assert_int_eq(lfs_stream_put_ref(&w, DIR_ID, ROOT_ID, "d"), 0);
	ck_assert_int_eq(lfs_stream_put_ref(&w, FILE_ID, DIR_ID, "f"), 0);
	ck_assert_int_eq(lfs_stream_put_unlink(&w, DIR_ID, FILE_ID, "f"), 0);
	ck_assert_int_eq(lfs_stream_put_link(&w, ROOT_ID, FILE_ID, "g"), 0);
	struct lfs_stream_inode f = { .id = FILE_ID, .mode = S_IFREG | 0600, .nlink = 1, .size = 1 << 20 };
	ck_assert_int_eq(lfs_stream_put_inode(&w, &f, NULL, 0), 0);
	ck_assert_int_eq(lfs_stream_put_hole(&w, FILE_ID, 8192, 4096), 0);
	ck_assert_int_eq(lfs_stream_put_data(&w, FILE_ID, 4096, data, 100), 0);
	ck_assert_int_eq(lfs_stream_put_xattr(&w, FILE_ID, "user.new", "v", 1), 0);
	ck_assert_int_eq(lfs_stream_put_rmxattr(&w, FILE_ID, "user.old"), 0);
	struct lfs_stream_inode root = { .id = ROOT_ID, .mode = S_IFDIR | 0755, .nlink = 1 };
	ck_assert_int_eq(lfs_stream_put_inode(&w, &root, NULL, 0), 0);
	ck_assert_int_eq(lfs_stream_put_end(&w), 0);
}

/* Decode all of m: 0 after a clean end, else the error (why in rd). */
static int
decode(struct mem *m, struct lfs_stream_rd *rd, unsigned *records)
{
	m->at = 0;
	ck_assert_int_eq(lfs_stream_rd_init(rd, mem_read, m), 0);
	struct lfs_stream_rec rec;
	int err;
	*records = 0;
	while ((err = lfs_stream_next(rd, &rec)) == 0)
		(*records)++;
	lfs_stream_rd_free(rd);
	return err == 1 ? 0 : err;
}

START_TEST(round_trip)
{
	struct mem m = { 0 };
	sample(&m);
	m.at = 0;
	struct lfs_stream_rd rd;
	ck_assert_int_eq(lfs_stream_rd_init(&rd, mem_read, &m), 0);
	struct lfs_stream_rec rec;
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(rec.type, LFS_SR_BEGIN);
	ck_assert_uint_eq(rec.begin.seq, 7);
	ck_assert_str_eq(rec.begin.name, "snap");
	ck_assert_int_eq(rec.begin.uuid[2], 3);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(rec.type, LFS_SR_INODE);
	ck_assert_uint_eq(rec.inode.mtime.ns, 999999999);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_uint_eq(rec.inode.mode, S_IFREG | 04644);
	ck_assert_uint_eq(rec.inode.uid, 1000);
	ck_assert_uint_eq(rec.inode.size, 1 << 20);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(rec.type, LFS_SR_LINK);
	ck_assert_str_eq(rec.name, "file");
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(rec.type, LFS_SR_DATA);
	ck_assert_uint_eq(rec.off, 65536);
	ck_assert_uint_eq(rec.dlen, sizeof(data));
	ck_assert_mem_eq(rec.data, data, sizeof(data));
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(rec.type, LFS_SR_XATTR);
	ck_assert_str_eq(rec.name, "user.k");
	ck_assert_uint_eq(rec.dlen, 5);
	ck_assert_mem_eq(rec.data, "value", 5);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_str_eq(rec.name, "again");
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_uint_eq(rec.dlen, 6);
	ck_assert_mem_eq(rec.data, "target", 6);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(rec.type, LFS_SR_END);
	ck_assert_uint_eq(rec.end_records, 9);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 1);
	lfs_stream_rd_free(&rd);
	free(m.buf);
}
END_TEST

START_TEST(incr_round_trip)
{
	struct mem m = { 0 };
	sample_incr(&m);
	struct lfs_stream_rd rd;
	struct lfs_stream_rec rec;
	ck_assert_int_eq(lfs_stream_rd_init(&rd, mem_read, &m), 0);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_uint_eq(rec.begin.version, LFS_STREAM_VERSION_INCR);
	ck_assert_uint_eq(rec.begin.parent_seq, 7);
	ck_assert_str_eq(rec.begin.parent_name, "p1");
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(rec.type, LFS_SR_REF);
	ck_assert_uint_eq(rec.id, ROOT_ID);
	ck_assert_uint_eq(rec.dir, 0);
	ck_assert_uint_eq(rec.nlen, 0);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_uint_eq(rec.id, DIR_ID);
	ck_assert_uint_eq(rec.dir, ROOT_ID);
	ck_assert_str_eq(rec.name, "d");
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(rec.type, LFS_SR_UNLINK);
	ck_assert_uint_eq(rec.dir, DIR_ID);
	ck_assert_uint_eq(rec.id, FILE_ID);
	ck_assert_str_eq(rec.name, "f");
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(rec.type, LFS_SR_HOLE);
	ck_assert_uint_eq(rec.off, 8192);
	ck_assert_uint_eq(rec.len, 4096);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(rec.type, LFS_SR_RMXATTR);
	ck_assert_uint_eq(rec.id, FILE_ID);
	ck_assert_str_eq(rec.name, "user.old");
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 0);
	ck_assert_int_eq(rec.type, LFS_SR_END);
	ck_assert_int_eq(lfs_stream_next(&rd, &rec), 1);
	lfs_stream_rd_free(&rd);
	free(m.buf);
}
END_TEST

/* Cut at every byte: never a clean end, -EPIPE. */
static void
cut_anywhere_of(void (*make)(struct mem *))
{
	struct mem m = { 0 };
	make(&m);
	size_t full = m.len;
	for (size_t cut = 0; cut < full; cut++) {
		m.len = cut;
		struct lfs_stream_rd rd;
		unsigned n;
		int err = decode(&m, &rd, &n);
		ck_assert_msg(err == -EPIPE, "cut at %zu of %zu: %d", cut, full, err);
	}
	free(m.buf);
}

START_TEST(cut_anywhere)
{
	cut_anywhere_of(sample);
	cut_anywhere_of(sample_incr);
}
END_TEST

/* Every bit flipped, one at a time: refused, -EBADMSG (a flip in a
 * length may also make the stream look cut: -EPIPE). */
static void
every_bit_flipped_of(void (*make)(struct mem *))
{
	struct mem m = { 0 };
	make(&m);
	for (size_t i = 0; i < m.len * 8; i++) {
		m.buf[i / 8] ^= (uint8_t)(1u << i % 8);
		struct lfs_stream_rd rd;
		unsigned n;
		int err = decode(&m, &rd, &n);
		ck_assert_msg(err == -EBADMSG || err == -EPIPE, "bit %zu: %d", i, err);
		ck_assert_msg(rd.why[0], "bit %zu: refused without a reason", i);
		m.buf[i / 8] ^= (uint8_t)(1u << i % 8);
	}
	free(m.buf);
}

START_TEST(every_bit_flipped)
{
	every_bit_flipped_of(sample);
	every_bit_flipped_of(sample_incr);
}
END_TEST

/* Record i of m starts at *at: its offset, type, length. */
static size_t
record_at(const struct mem *m, unsigned want)
{
	size_t at = 0;
	for (unsigned i = 0; i < want; i++)
		at += LFS_STREAM_HDR + lfs_get32(m->buf + at + 4);
	return at;
}

/* Re-seal record i (its crc) and the stream (END's crc and counts)
 * after an edit, as a crafted stream would. */
static void
reseal(struct mem *m)
{
	uint32_t crc = 0;
	size_t at = 0;
	for (unsigned i = 0; at < m->len; i++) {
		uint8_t *h = m->buf + at;
		size_t len = lfs_get32(h + 4);
		if (lfs_get16(h) == LFS_SR_END) {
			lfs_put64(h + LFS_STREAM_HDR, i);
			lfs_put64(h + LFS_STREAM_HDR + 8, at);
			lfs_put32(h + LFS_STREAM_HDR + 16, crc);
		}
		lfs_put32(h + 8, i);
		lfs_put32(h + 12, lfs_crc(lfs_crc(0, h, 12), h + LFS_STREAM_HDR, len));
		crc = lfs_crc(crc, h, LFS_STREAM_HDR + len);
		at += LFS_STREAM_HDR + len;
	}
}

static void
refused_resealed(struct mem *m, const char *what)
{
	reseal(m);
	struct lfs_stream_rd rd;
	unsigned n;
	int err = decode(m, &rd, &n);
	ck_assert_msg(err == -EBADMSG, "%s: %d (%s)", what, err, rd.why);
}

/* Fields out of bounds in records whose crcs were made to match. */
START_TEST(crafted_fields)
{
	struct {
		unsigned rec, off;
		uint32_t val;
		const char *what;
	} edits[] = {
		{ 0, 8, 2, "version 2" },
		{ 0, 12, 1, "unknown flags" },
		{ 0, 32, 0, "checkpoint 0" },
		{ 1, 8, 0170755, "a mode of no type" },
		{ 2, 40, 0, "no links" },
		{ 2, 56, 1000000000, "nanoseconds past a second" },
		{ 3, 16, '/', "a '/' in a name" },
		{ 3, 0, 0, "a name in directory 0" },
		{ 4, 12, 0x80000000u, "data past the largest offset" },
		{ 5, 8, 0, "an attribute with no name" },
		{ 5, 8, 200, "an attribute name longer than its record" },
		{ 7, 84, 0, "a NUL in a link's target" },
		{ 1, 0, 0, "inode 0" },
	};
	for (size_t e = 0; e < sizeof(edits) / sizeof(edits[0]); e++) {
		struct mem m = { 0 };
		sample(&m);
		uint8_t *p = m.buf + record_at(&m, edits[e].rec) + LFS_STREAM_HDR + edits[e].off;
		if (edits[e].off == 16 && edits[e].rec == 3)
			p[0] = (uint8_t)edits[e].val;
		else if (edits[e].rec == 5 && edits[e].off == 8)
			lfs_put16(p, (uint16_t)edits[e].val);
		else if (edits[e].rec == 7 && edits[e].off == 84)
			p[0] = 0;
		else
			lfs_put32(p, edits[e].val);
		refused_resealed(&m, edits[e].what);
		free(m.buf);
	}
}
END_TEST

/* The same for an incremental stream's records. */
START_TEST(crafted_incr_fields)
{
	struct {
		unsigned rec, off;
		uint64_t val;
		const char *what;
	} edits[] = {
		{ 0, 8, 1, "version 1 with a parent" },
		{ 0, 40, 0, "version 2 without a parent" },
		{ 0, 40, 9, "a parent not older" },
		{ 1, 0, 0, "a REF of inode 0" },
		{ 2, 8, 0, "a REF with a name and no directory" },
		{ 2, 8, DIR_ID, "a REF in itself" },
		{ 2, 16, '/', "a '/' in a REF's name" },
		{ 4, 16, '/', "a '/' in an UNLINK's name" },
		{ 4, 0, 0, "an UNLINK in directory 0" },
		{ 7, 16, 0, "a HOLE of no bytes" },
		{ 7, 8, UINT64_MAX - 100, "a HOLE past the largest offset" },
		{ 10, 8, 0, "a NUL in an RMXATTR's name" },
		{ 10, 0, 0, "an RMXATTR of inode 0" },
	};
	for (size_t e = 0; e < sizeof(edits) / sizeof(edits[0]); e++) {
		struct mem m = { 0 };
		sample_incr(&m);
		uint8_t *p = m.buf + record_at(&m, edits[e].rec) + LFS_STREAM_HDR + edits[e].off;
		if (edits[e].val == '/' || (edits[e].rec == 10 && edits[e].off == 8))
			p[0] = (uint8_t)edits[e].val;
		else if (edits[e].rec == 0 && edits[e].off == 8)
			lfs_put32(p, (uint32_t)edits[e].val);
		else
			lfs_put64(p, edits[e].val);
		refused_resealed(&m, edits[e].what);
		free(m.buf);
	}
	/* the records of an incremental stream in a full one */
	struct mem m = { 0 };
	struct lfs_stream_wr w = { .write = mem_write, .ctx = &m };
	struct lfs_stream_begin b = { .seq = 9 };
	ck_assert_int_eq(lfs_stream_put_begin(&w, &b), 0);
	ck_assert_int_eq(lfs_stream_put_ref(&w, ROOT_ID, 0, ""), 0);
	ck_assert_int_eq(lfs_stream_put_end(&w), 0);
	struct lfs_stream_rd rd;
	unsigned n;
	ck_assert_int_eq(decode(&m, &rd, &n), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(rd.why, "unknown type 7"));
	free(m.buf);
}
END_TEST

/* Records moved, dropped, a length past the buffer: refused before the
 * payload is read. */
START_TEST(crafted_order)
{
	struct mem m = { 0 };
	sample(&m);
	/* a header saying 4 GiB: refused from the header alone */
	lfs_put32(m.buf + record_at(&m, 1) + 4, 0xffffffffu);
	struct lfs_stream_rd rd;
	unsigned n;
	ck_assert_int_eq(decode(&m, &rd, &n), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(rd.why, "at most"));
	free(m.buf);

	/* record 3 dropped: numbering (unsealed), then END's count (sealed) */
	m = (struct mem){ 0 };
	sample(&m);
	size_t a = record_at(&m, 3), b = record_at(&m, 4);
	memmove(m.buf + a, m.buf + b, m.len - b);
	m.len -= b - a;
	ck_assert_int_eq(decode(&m, &rd, &n), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(rd.why, "numbered"));
	free(m.buf);

	/* bytes after END */
	m = (struct mem){ 0 };
	sample(&m);
	mem_write(&m, "x", 1);
	ck_assert_int_eq(decode(&m, &rd, &n), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(rd.why, "after the END"));
	free(m.buf);

	/* not a stream at all */
	m = (struct mem){ 0 };
	mem_write(&m, "this is a tar file, not a stream....", 36);
	ck_assert_int_ne(decode(&m, &rd, &n), 0);
	free(m.buf);
}
END_TEST

/* What the writer refuses to make. */
START_TEST(writer_bounds)
{
	struct mem m = { 0 };
	struct lfs_stream_wr w = { .write = mem_write, .ctx = &m };
	static uint8_t big[LFS_STREAM_DATA_MAX + 1];
	ck_assert_int_eq(lfs_stream_put_data(&w, 1, 0, big, sizeof(big)), -EINVAL);
	ck_assert_int_eq(lfs_stream_put_xattr(&w, 1, "", "", 0), -EINVAL);
	ck_assert_int_eq(lfs_stream_put_xattr(&w, 1, "user.a", big, LFS_STREAM_XVAL_MAX + 1), -EINVAL);
	ck_assert(lfs_stream_name_ok("a", 1));
	ck_assert(!lfs_stream_name_ok("..", 2));
	ck_assert(!lfs_stream_name_ok("a/b", 3));
	free(m.buf);
}
END_TEST

CHECK_MAIN("stream", "core", 10, round_trip, incr_round_trip, cut_anywhere, every_bit_flipped, crafted_fields,
	   crafted_incr_fields, crafted_order, writer_bounds)
