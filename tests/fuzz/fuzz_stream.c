/*
 * fuzz_stream.c — libFuzzer target for the send stream's decoder
 * (lfs/format/stream.c): the input is a stream, whose record crcs and
 * END record (count, length, crc) are re-sealed first where its headers
 * can be followed, so that mutations reach the checks behind the
 * checksums, as a crafted stream would.  Every record is decoded until
 * the decoder stops; it must stop, with a reason when it refuses.  An
 * incremental stream's records go on to lfs-receive's checks of how they
 * fit together (recv_incr.c, checking only: nothing made), which must
 * stop with a reason too.  Seeds: tests/fuzz/stream (streams lfs-send
 * wrote, full and incremental).
 */
#include "format.h"
#include "recv.h"
#include "stream.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* lfs-receive's calls that make things: a check never makes any */
int
recv_sys(struct recv *rv, int ret, const char *what, const char *path)
{
	(void)rv, (void)ret, (void)what, (void)path;
	abort();
}

int
recv_make(struct recv *rv, const struct lfs_stream_inode *in, const char *target, const char *path)
{
	(void)rv, (void)in, (void)target, (void)path;
	abort();
}

int
recv_finish(struct recv *rv, const struct lfs_stream_inode *in, const char *path, bool all_flags)
{
	(void)rv, (void)in, (void)path, (void)all_flags;
	abort();
}

int
recv_remove(struct recv *rv, const char *path)
{
	(void)rv, (void)path;
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct in {
	const uint8_t *p;
	size_t len, at;
};

static int
in_read(void *ctx, void *buf, size_t len)
{
	struct in *in = ctx;
	size_t n = in->len - in->at < len ? in->len - in->at : len;
	memcpy(buf, in->p + in->at, n);
	in->at += n;
	return (int)n;
}

/* Re-seal each whole record's crc, and END's fields, in place. */
static void
reseal(uint8_t *b, size_t size)
{
	uint32_t crc = 0;
	size_t at = 0;
	for (uint32_t i = 0; at + LFS_STREAM_HDR <= size; i++) {
		uint8_t *h = b + at;
		size_t len = lfs_get32(h + 4);
		if (len > size - at - LFS_STREAM_HDR)
			break;
		if (lfs_get16(h) == LFS_SR_END && len >= 20) {
			lfs_put64(h + LFS_STREAM_HDR, i);
			lfs_put64(h + LFS_STREAM_HDR + 8, at);
			lfs_put32(h + LFS_STREAM_HDR + 16, crc);
		}
		lfs_put32(h + 12, lfs_crc(lfs_crc(0, h, 12), h + LFS_STREAM_HDR, len));
		crc = lfs_crc(crc, h, LFS_STREAM_HDR + len);
		at += LFS_STREAM_HDR + len;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *b = malloc(size ? size : 1);
	if (!b)
		return 0;
	memcpy(b, data, size);
	reseal(b, size);
	struct in in = { b, size, 0 };
	struct lfs_stream_rd rd;
	if (lfs_stream_rd_init(&rd, in_read, &in) == 0) {
		struct lfs_stream_rec rec;
		struct recv rv = { .apply = false };
		int err = lfs_stream_next(&rd, &rec);
		unsigned n = 0;
		if (err == 0 && rec.begin.parent_seq) {
			err = recv_incr(&rv, &rd);
			n = (unsigned)rv.records;
		} else {
			while (err == 0 && (err = lfs_stream_next(&rd, &rec)) == 0)
				n++;
		}
		if (err < 0 && !rd.why[0] && !rv.why[0])
			abort(); /* refused without a reason */
		if (n > size / LFS_STREAM_HDR + 1)
			abort(); /* more records than the input can hold */
		lfs_stream_rd_free(&rd);
	}
	free(b);
	return 0;
}
