/*
 * out.h — the tools' output: one emitter for text and JSON, so a tool's
 * --json can never drift from what its text shows (dumplfs, lfs-ckpt).
 * Text prints objects as "key value" lines and array items either as
 * one "label id key=value ..." line (a row) or as an indented block;
 * JSON rows are kept on one line.  Strings from disk may be any bytes:
 * JSON stays valid UTF-8 (other bytes become \u00XX), text escapes them
 * as lfs-probe and lfs-tune do (text.h, LFS_ESC_SHOW).
 */
#ifndef LFS_OUT_H
#define LFS_OUT_H

#include <stdbool.h>
#include <stdint.h>

#define LFS_OUT_MAX_DEPTH 8

struct lfs_out_frame {
	char close;                 /* json: '}' or ']' */
	bool row;                   /* fields on one line */
	unsigned n;                 /* json: items so far */
	int indent;                 /* text: of the lines inside */
};

struct lfs_out {
	bool json;
	bool line_open;             /* text: a row line awaits its newline */
	int depth;
	struct lfs_out_frame f[LFS_OUT_MAX_DEPTH];
};

void lfs_out_init(struct lfs_out *o, bool json);
/* An object (close '}') or array (']') under `key` of the current object. */
void lfs_out_begin(struct lfs_out *o, const char *key, char close);
/* An item of the current array, named `key id`: a row keeps all its
 * fields on one text line. */
void lfs_out_item(struct lfs_out *o, const char *key, uint64_t id, bool row);
void lfs_out_end(struct lfs_out *o);
/* A field: `jv` is the JSON value, already encoded, `tv` the text one. */
void lfs_out_field(struct lfs_out *o, const char *key, const char *jv, const char *tv);
void lfs_out_u64(struct lfs_out *o, const char *key, uint64_t v);
/* Magic numbers and flag words: hex in text, plain numbers in JSON. */
void lfs_out_hex(struct lfs_out *o, const char *key, uint64_t v);
void lfs_out_bool(struct lfs_out *o, const char *key, bool v);
void lfs_out_str(struct lfs_out *o, const char *key, const char *s);
/* Nanoseconds since the epoch: the number in JSON, UTC in text, where
 * the key loses its "_ns". */
void lfs_out_time(struct lfs_out *o, const char *key, uint64_t ns);

#endif
