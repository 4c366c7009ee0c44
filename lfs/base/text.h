/*
 * text.h — strings that come from images and users (labels, snapshot
 * names, paths a daemon reports): which labels may be set, and the one
 * way each kind of output shows such a string (text.c).
 *
 * A label is read from an image that anyone may have crafted, and
 * 59-lfs.rules makes udev import, as root, every KEY=VALUE line that
 * lfs-probe -o udev prints: nothing read from an image is printed
 * before it is escaped here.  Every escape is \xNN of one byte, so
 * that what was shown can be turned back into the bytes:
 *
 *   lfs_escape("a b\n\"", LFS_ESC_SHOW)      = "a b\x0a\x22"
 *   lfs_escape("a b\n\"", LFS_ESC_UDEV)      = "a\x20b\x0a\x22"   (ID_FS_LABEL_ENC)
 *   lfs_escape(" a  b\n", LFS_ESC_UDEV_SAFE) = "a_b"              (ID_FS_LABEL)
 */
#ifndef LFS_TEXT_H
#define LFS_TEXT_H

#include <stddef.h>
#include <stdio.h>

enum lfs_esc {
	/* for people (lfs-probe's full format, lfs-tune -l, the logs):
	 * printable ASCII and UTF-8 kept; control characters (C0, DEL,
	 * C1), bytes that are not UTF-8, '\' and '"' escaped */
	LFS_ESC_SHOW,
	/* udev's ID_FS_*_ENC, as blkid_encode_string: ASCII letters,
	 * digits and "#+-.:=@_" and printable UTF-8 kept, the rest escaped */
	LFS_ESC_UDEV,
	/* udev's ID_FS_LABEL, as blkid_safe_string: white space trimmed
	 * and each run of it one '_'; printable ASCII and UTF-8 kept, but
	 * '/', quotes and '\' become '_', as does every other byte */
	LFS_ESC_UDEV_SAFE,
};

/* Room for the escape of a string of n bytes, NUL included. */
#define LFS_ESC_LEN(n) (4 * (n) + 1)

/* `s` escaped for `how` into buf (len bytes, NUL-terminated; cut short
 * at a whole character if it does not fit).  Returns buf, for printf. */
char *lfs_escape(const char *s, enum lfs_esc how, char *buf, size_t len);
/* The same, written to `f` whatever its length. */
void lfs_escape_put(FILE *f, const char *s, enum lfs_esc how);

/* Length of the valid UTF-8 sequence of two to four bytes at p, 0 if
 * there is none (overlong forms and surrogates are not valid). */
size_t lfs_utf8_len(const unsigned char *p, size_t avail);

/* Whether `label` may be set by mkfs.lfs or lfs-tune: 0, or -EINVAL
 * with *why (if why is not NULL) saying what is wrong.  At most
 * LFS_LABEL_MAX bytes of printable UTF-8: no control character (C0,
 * DEL, C1) and no byte that is not part of a valid sequence. */
int lfs_label_check(const char *label, const char **why);

#endif
