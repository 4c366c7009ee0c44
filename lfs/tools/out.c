/*
 * out.c — layer 7: the tools' text and JSON output (out.h).
 */
#include "out.h"

#include "text.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Strings from disk may be any bytes.  Text shows them as lfs-probe and
 * lfs-tune do (text.h); JSON must stay valid UTF-8 (bytes that are not
 * become \u00XX). */
static void
lfs_out_put_string(bool json, const char *s)
{
	if (!json) {
		lfs_escape_put(stdout, s, LFS_ESC_SHOW);
		return;
	}
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s);
	putchar('"');
	for (size_t i = 0; i < len;) {
		unsigned c = p[i];
		size_t n = 0;
		if (c == '"' || c == '\\') {
			printf("\\%c", c);
			i++;
		} else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !(n = lfs_utf8_len(p + i, len - i)))) {
			printf("\\u%04x", c);
			i++;
		} else if (c >= 0x80) {
			fwrite(p + i, 1, n, stdout);
			i += n;
		} else {
			putchar((int)c);
			i++;
		}
	}
	putchar('"');
}

void
lfs_out_init(struct lfs_out *o, bool json)
{
	memset(o, 0, sizeof(*o));
	o->json = json;
}

static void
lfs_out_end_line(struct lfs_out *o)
{
	if (o->line_open)
		putchar('\n');
	o->line_open = false;
}

/* JSON: the separator, indentation and key before a value. */
static void
lfs_out_json_key(struct lfs_out *o, const char *key)
{
	struct lfs_out_frame *f = &o->f[o->depth];
	if (o->depth == 0)
		return;
	if (f->n++)
		fputs(f->row ? ", " : ",", stdout);
	if (!f->row)
		printf("\n%*s", 2 * o->depth, "");
	if (key) {
		lfs_out_put_string(true, key);
		fputs(": ", stdout);
	}
}

static void
lfs_out_push(struct lfs_out *o, char close, bool row, int indent)
{
	if (o->depth + 1 >= LFS_OUT_MAX_DEPTH)
		abort(); /* a bug in this file, not in the image */
	o->depth++;
	o->f[o->depth] = (struct lfs_out_frame){ .close = close, .row = row, .indent = indent };
}

/* An object (close '}') or array (']') under `key` of the current object. */
void
lfs_out_begin(struct lfs_out *o, const char *key, char close)
{
	if (o->json) {
		lfs_out_json_key(o, key);
		putchar(close == '}' ? '{' : '[');
		lfs_out_push(o, close, false, 0);
		return;
	}
	const struct lfs_out_frame *p = &o->f[o->depth];
	int indent = p->indent;
	if (p->row) {
		/* an array inside a row: its items go on the lines below */
		lfs_out_end_line(o);
		lfs_out_push(o, close, false, indent + 2);
		return;
	}
	if (key)
		printf("%*s%s:\n", indent, "", key);
	lfs_out_push(o, close, false, key ? indent + 2 : indent);
}

/* An item of the current array, named `key id`: a row keeps all its
 * fields on one text line. */
void
lfs_out_item(struct lfs_out *o, const char *key, uint64_t id, bool row)
{
	if (o->json) {
		lfs_out_json_key(o, NULL);
		printf("{");
		lfs_out_push(o, '}', row, 0);
		lfs_out_json_key(o, key);
		printf("%" PRIu64, id);
		return;
	}
	lfs_out_end_line(o);
	int indent = o->f[o->depth].indent;
	printf("%*s%s %" PRIu64 "%s", indent, "", key, id, row ? "" : ":\n");
	o->line_open = row;
	lfs_out_push(o, '}', row, row ? indent : indent + 2);
}

void
lfs_out_end(struct lfs_out *o)
{
	struct lfs_out_frame f = o->f[o->depth];
	o->depth--;
	if (o->json) {
		if (!f.row && f.n)
			printf("\n%*s", 2 * o->depth, "");
		putchar(f.close);
		if (o->depth == 0)
			putchar('\n');
	} else if (f.row) {
		lfs_out_end_line(o);
	}
}

/* A field: `jv` is the JSON value, already encoded, `tv` the text one. */
void
lfs_out_field(struct lfs_out *o, const char *key, const char *jv, const char *tv)
{
	if (o->json) {
		lfs_out_json_key(o, key);
		fputs(jv, stdout);
		return;
	}
	const struct lfs_out_frame *f = &o->f[o->depth];
	if (f->row) {
		if (!o->line_open) /* after a nested array: continue below it */
			printf("%*s ", f->indent + 2, "");
		o->line_open = true;
		printf(" %s=%s", key, tv);
	} else {
		printf("%*s%-18s %s\n", f->indent, "", key, tv);
	}
}

void
lfs_out_u64(struct lfs_out *o, const char *key, uint64_t v)
{
	char b[24];
	snprintf(b, sizeof(b), "%" PRIu64, v);
	lfs_out_field(o, key, b, b);
}

/* Magic numbers and flag words: hex in text, plain numbers in JSON. */
void
lfs_out_hex(struct lfs_out *o, const char *key, uint64_t v)
{
	char j[24], t[24];
	snprintf(j, sizeof(j), "%" PRIu64, v);
	snprintf(t, sizeof(t), "%#" PRIx64, v);
	lfs_out_field(o, key, j, t);
}

void
lfs_out_bool(struct lfs_out *o, const char *key, bool v)
{
	lfs_out_field(o, key, v ? "true" : "false", v ? "yes" : "no");
}

void
lfs_out_str(struct lfs_out *o, const char *key, const char *s)
{
	if (o->json) {
		lfs_out_json_key(o, key);
		lfs_out_put_string(true, s);
		return;
	}
	const struct lfs_out_frame *f = &o->f[o->depth];
	bool quote = f->row && (strchr(s, ' ') || !*s);
	if (f->row) {
		if (!o->line_open)
			printf("%*s ", f->indent + 2, "");
		o->line_open = true;
		printf(" %s=", key);
	} else {
		printf("%*s%-18s ", f->indent, "", key);
	}
	if (quote)
		putchar('"');
	lfs_out_put_string(false, s);
	if (quote)
		putchar('"');
	if (!f->row)
		putchar('\n');
}

/* Nanoseconds since the epoch: the number in JSON, UTC in text, where
 * the key loses its "_ns". */
void
lfs_out_time(struct lfs_out *o, const char *key, uint64_t ns)
{
	char j[24], t[64], k[32];
	size_t kl = strlen(key);
	if (kl > 3 && kl < sizeof(k) && !strcmp(key + kl - 3, "_ns")) {
		memcpy(k, key, kl - 3);
		k[kl - 3] = '\0';
		if (!o->json)
			key = k;
	}
	snprintf(j, sizeof(j), "%" PRIu64, ns);
	time_t s = (time_t)(ns / 1000000000u);
	struct tm tm;
	size_t n;
	if (ns && gmtime_r(&s, &tm) && (n = strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%S", &tm)) > 0)
		snprintf(t + n, sizeof(t) - n, ".%03uZ", (unsigned)(ns / 1000000u % 1000u));
	else
		snprintf(t, sizeof(t), "%s", j);
	lfs_out_field(o, key, j, t);
}

