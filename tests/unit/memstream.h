/* memstream.h — a send stream in memory for the unit suites of the
 * stream's encoder and of lfs_send: a writer that appends, a reader
 * that reads from `at`. */
#ifndef LFS_MEMSTREAM_H
#define LFS_MEMSTREAM_H

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct mem {
	uint8_t *buf;
	size_t len, cap, at;
};

static inline int
mem_write(void *ctx, const void *buf, size_t len)
{
	struct mem *m = ctx;
	if (m->len + len > m->cap) {
		m->cap = (m->len + len) * 2;
		m->buf = realloc(m->buf, m->cap);
		ck_assert_ptr_nonnull(m->buf);
	}
	memcpy(m->buf + m->len, buf, len);
	m->len += len;
	return 0;
}

static inline int
mem_read(void *ctx, void *buf, size_t len)
{
	struct mem *m = ctx;
	size_t n = m->len - m->at < len ? m->len - m->at : len;
	memcpy(buf, m->buf + m->at, n);
	m->at += n;
	return (int)n;
}

#endif
