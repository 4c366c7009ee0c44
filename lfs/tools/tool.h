/*
 * tool.h — what every lfs program answers alike: -h/--help prints the
 * usage on standard output and exits 0, -V/--version prints the version
 * and exits 0, a bad option or operand prints the usage on standard
 * error and exits with the program's usage status.
 *
 * Each program keeps its own usage() text (the man page test compares it
 * with the page) and hands getopt_long's other answers to
 * lfs_tool_opt():
 *
 *	static const struct option longopts[] = { LFS_TOOL_LONGOPTS, ... };
 *	while ((c = getopt_long(argc, argv, "s:" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1)
 *		switch (c) {
 *		case 's': ...; break;
 *		default: return lfs_tool_opt(&tool, c);
 *		}
 */
#ifndef LFS_TOOL_H
#define LFS_TOOL_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#define LFS_TOOL_SHORTOPTS "hV"
/* the lines every usage text ends with */
#define LFS_TOOL_HELP_LINES "  -h, --help     print this text\n  -V, --version  print the version\n"
#define LFS_TOOL_LONGOPTS { "help", no_argument, NULL, 'h' }, { "version", no_argument, NULL, 'V' }

struct lfs_tool {
	const char *name;           /* as in messages: "mkfs.lfs" */
	void (*usage)(FILE *f);
	int usage_status;           /* the exit status of a usage error: 2, fsck's 16 */
};

/* -h, -V or a bad option `c`: do what it asks; returns the exit status. */
int lfs_tool_opt(const struct lfs_tool *t, int c);

/* "NAME VERSION (on-disk format N)" on standard output. */
void lfs_tool_version(const char *name);

/* The usage on standard error; returns t->usage_status. */
int lfs_tool_usage_error(const struct lfs_tool *t);


#include <stdint.h>

#define LFS_UUID_STR 37             /* "8-4-4-4-12" hex digits and the NUL */

struct lfs_bdev;
struct lfs_super;
struct lfs_super_where;
/* How a tool opens an image (lfs_tool_open). */
enum {
	/* to change it: the image lock is held until lfs_bdev_close, so that
	 * no daemon mounts it meanwhile; refused when the image is mounted by
	 * any name (lfs_tool_refuse_in_use) or its block 0 is damaged */
	LFS_OPEN_WRITE = 1 << 0,
	/* the superblock only found, not checked against the device: a look
	 * for an lfs, a salvage of a truncated image */
	LFS_OPEN_FOUND_ONLY = 1 << 1,
	/* no warning that a daemon has the image mounted: the caller knows */
	LFS_OPEN_MOUNTED_OK = 1 << 2,
	/* the device alone, no superblock read (sb and w may be NULL): with
	 * LFS_OPEN_WRITE, fsck.lfs rewriting a damaged block 0 from the copy
	 * it has already read and checked */
	LFS_OPEN_DEVICE_ONLY = 1 << 3,
};
struct lfs_tool_open {
	unsigned flags;             /* LFS_OPEN_* */
	int fd;                     /* `path` opened by the caller (the device owns it from
				     * now on; read-write for a change), or -1 */
	uint64_t sb_block;          /* only the superblock at this block; 0: block 0, or its backup */
	const char *busy_note;      /* what the warning that it is mounted adds (NULL: the default) */
	char *msg;                  /* NULL: messages go to stderr, after the tool's name; else
				     * msg gets what is wrong, or that the backup was read, or "",
				     * and nothing is said of a mount */
	size_t msg_len;
};
/* The one opening of an unmounted image by a tool (every program but the
 * daemon): the device, then the superblock found and checked as the
 * mount checks it (lfs_super_open).  Read-only, a damaged block 0 is
 * said (the backup was read; *w says where, if w is not NULL).  Says
 * what is wrong, "PATH: ...", on stderr after `name` or in how->msg; 0,
 * or -errno with the device closed.  Neither a regular file nor a block
 * device: -ENOTBLK. */
int lfs_tool_open(const char *name, const char *path, const struct lfs_tool_open *how, struct lfs_bdev *dev,
		  struct lfs_super *sb, struct lfs_super_where *w);

/* A label given to -L (mkfs.lfs, lfs-tune): 0, or -EINVAL after saying
 * on stderr, with the label escaped, why it is refused. */
int lfs_tool_check_label(const char *name, const char *label);

/* What a device or image is in use by (mounted.c): LFS_IN_USE_MOUNTED,
 * a mount of any filesystem, at `where`, of type `fstype`; _SWAP, swap
 * (`where`: the name /proc/swaps gives); _HELD, a block device the
 * kernel has claimed for something not in this mount namespace's table. */
enum { LFS_IN_USE_NONE, LFS_IN_USE_MOUNTED, LFS_IN_USE_SWAP, LFS_IN_USE_HELD };
struct lfs_in_use {
	int how;                    /* LFS_IN_USE_* */
	char where[4096];
	char fstype[64];
};
/* Whether `path` (a block device or an image file) is in use, from
 * /proc/self/mountinfo and /proc/swaps; 0 and *u, or -errno when that
 * cannot be told.  lfs_in_use_from reads the tables from the files given
 * (the unit tests' own). */
int lfs_in_use(const char *path, struct lfs_in_use *u);
int lfs_in_use_from(const char *path, const char *mountinfo, const char *swaps, struct lfs_in_use *u);
/* For a tool about to write `path`: 0 when nothing uses it, else -EBUSY
 * (or the error that kept it from telling) after saying on stderr, with
 * the tool's name, where it is mounted. */
int lfs_tool_refuse_in_use(const char *name, const char *path);

/* 16 bytes -> "0123abcd-...": `out` holds LFS_UUID_STR bytes. */
void lfs_uuid_format(const uint8_t uuid[16], char *out);

/* "0123abcd-..." (dashes optional, either case) -> 16 bytes; 0 or -EINVAL. */
int lfs_uuid_parse(const char *s, uint8_t uuid[16]);

#endif
