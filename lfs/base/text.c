/*
 * text.c — layer 1: strings from images and users (text.h): which
 * labels may be set, and their escapes for people and for udev.
 */
#include "text.h"

#include "format.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

size_t
lfs_utf8_len(const unsigned char *p, size_t avail)
{
	size_t n;
	uint32_t cp, min;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2, cp = p[0] & 0x1fu, min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		n = 3, cp = p[0] & 0x0fu, min = 0x800;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4, cp = p[0] & 0x07u, min = 0x10000;
	} else {
		return 0;
	}
	if (n > avail)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3fu);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* The printable UTF-8 character of two to four bytes at p: its length,
 * 0 if the bytes are not one or it is a C1 control (U+0080-U+009F,
 * which terminals take as escapes as they do ESC). */
static size_t
utf8_printable(const unsigned char *p, size_t avail)
{
	size_t n = lfs_utf8_len(p, avail);
	return n == 2 && p[0] == 0xc2 && p[1] < 0xa0 ? 0 : n;
}

static bool
ascii_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

static bool
udev_kept(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c && strchr("#+-.:=@_", c));
}

static bool
space(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/*
 * One step of the escape of s (len bytes) at s[i]: up to 4 bytes of
 * output in out (*n of them); returns how many bytes of s it took.
 */
static size_t
esc_step(const unsigned char *s, size_t len, size_t i, enum lfs_esc how, char out[4], size_t *n)
{
	unsigned char c = s[i];
	size_t u = c >= 0x80 ? utf8_printable(s + i, len - i) : 0;
	*n = 0;
	if (u) {
		memcpy(out, s + i, u);
		*n = u;
		return u;
	}
	if (how == LFS_ESC_UDEV_SAFE) {
		if (space(c)) {
			size_t j = i;
			while (j < len && space(s[j]))
				j++;
			if (i > 0 && j < len) /* a run inside: one '_'; at either end: none */
				out[(*n)++] = '_';
			return j - i;
		}
		out[(*n)++] = c >= 0x80 || ascii_control(c) || strchr("/\"'\\", c) ? '_' : (char)c;
		return 1;
	}
	bool keep = how == LFS_ESC_UDEV ? udev_kept(c) : c < 0x80 && !ascii_control(c) && c != '\\' && c != '"';
	if (keep) {
		out[(*n)++] = (char)c;
	} else {
		static const char hex[] = "0123456789abcdef";
		out[0] = '\\', out[1] = 'x', out[2] = hex[c >> 4], out[3] = hex[c & 15];
		*n = 4;
	}
	return 1;
}

char *
lfs_escape(const char *s, enum lfs_esc how, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t slen = strlen(s), o = 0;
	for (size_t i = 0, n; i < slen;) {
		char step[4];
		size_t took = esc_step(p, slen, i, how, step, &n);
		if (o + n >= len)
			break;
		memcpy(buf + o, step, n);
		o += n;
		i += took;
	}
	if (len)
		buf[o] = '\0';
	return buf;
}

void
lfs_escape_put(FILE *f, const char *s, enum lfs_esc how)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t slen = strlen(s);
	for (size_t i = 0, n; i < slen;) {
		char step[4];
		i += esc_step(p, slen, i, how, step, &n);
		fwrite(step, 1, n, f);
	}
}

int
lfs_label_check(const char *label, const char **why)
{
	_Static_assert(LFS_LABEL_MAX == 64, "the message below says 64");
	const unsigned char *p = (const unsigned char *)label;
	size_t len = strlen(label);
	const char *bad = len > LFS_LABEL_MAX ? "longer than 64 bytes" : NULL;
	for (size_t i = 0, n; !bad && i < len; i += n) {
		n = p[i] >= 0x80 ? lfs_utf8_len(p + i, len - i) : 1;
		if (n == 0)
			bad = "holds bytes that are not UTF-8";
		else if (ascii_control(p[i]) || (n > 1 && !utf8_printable(p + i, len - i)))
			bad = "holds a control character";
	}
	if (bad && why)
		*why = bad;
	return bad ? -EINVAL : 0;
}
