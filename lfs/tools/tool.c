/*
 * tool.c — layer 7: the options every lfs program shares (tool.h).
 */
#include "tool.h"
#include "lfs_int.h"
#include "text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

void
lfs_tool_version(const char *name)
{
	printf("%s %s (on-disk format %d)\n", name, PACKAGE_VERSION, LFS_VERSION);
}

int
lfs_tool_usage_error(const struct lfs_tool *t)
{
	t->usage(stderr);
	return t->usage_status;
}

int
lfs_tool_opt(const struct lfs_tool *t, int c)
{
	switch (c) {
	case 'h':
		t->usage(stdout);
		return 0;
	case 'V':
		lfs_tool_version(t->name);
		return 0;
	default:
		/* getopt has said which option was wrong */
		return lfs_tool_usage_error(t);
	}
}

void
lfs_uuid_format(const uint8_t u[16], char *out)
{
	snprintf(out, LFS_UUID_STR, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
		 u[15]);
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
lfs_uuid_parse(const char *s, uint8_t uuid[16])
{
	uint8_t u[16];
	int n = 0;
	for (; *s && n < 32; s++) {
		if (*s == '-')
			continue;
		int v = hexval(*s);
		if (v < 0)
			return -EINVAL;
		if (n % 2 == 0)
			u[n / 2] = (uint8_t)(v << 4);
		else
			u[n / 2] |= (uint8_t)v;
		n++;
	}
	if (n != 32 || *s)
		return -EINVAL;
	memcpy(uuid, u, 16);
	return 0;
}

/* A message of lfs_tool_open: into the caller's buffer, or on stderr
 * after the tool's name. */
static void say(const char *name, const struct lfs_tool_open *how, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void
say(const char *name, const struct lfs_tool_open *how, const char *fmt, ...)
{
	char line[4608];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (how->msg)
		snprintf(how->msg, how->msg_len, "%s", line);
	else
		fprintf(stderr, "%s: %s\n", name, line);
}

/* Hold the image lock for a change, and refuse an image mounted by any
 * name (through a loop device, say). */
static int
lock_for_change(const char *name, const char *path, struct lfs_bdev *dev)
{
	char where[4096];
	if (flock(dev->fd, LOCK_EX | LOCK_NB) == 0)
		return lfs_tool_refuse_in_use(name, path);
	int err = errno == EWOULDBLOCK ? -EBUSY : -errno;
	if (err == -EBUSY && !lfs_image_mounted_at(path, where, sizeof(where)))
		snprintf(where, sizeof(where), "(a daemon finishing its unmount?)");
	if (err == -EBUSY)
		fprintf(stderr, "%s: %s is in use by a mounted lfs at %s; unmount it first\n", name, path, where);
	else
		fprintf(stderr, "%s: %s: cannot lock it: %s\n", name, path, strerror(-err));
	return err;
}

/* The superblock, as `how` asks; a damaged block 0 refuses a change and
 * is said otherwise. */
static int
open_super(const char *name, const char *path, const struct lfs_tool_open *how, struct lfs_bdev *dev,
	   struct lfs_super *sb, struct lfs_super_where *w)
{
	char why[256];
	int err = lfs_super_open(dev, how->sb_block, !(how->flags & LFS_OPEN_FOUND_ONLY), sb, w, why, sizeof(why));
	if (err) {
		say(name, how, "%s: %s", path, why);
		return err;
	}
	if (w->primary_err && (how->flags & LFS_OPEN_WRITE)) {
		say(name, how, "%s: block 0 %s; run fsck.lfs -y to rewrite it from the backup first", path,
		    lfs_super_why(w->primary_err));
		return -EUCLEAN;
	}
	if (w->primary_err)
		say(name, how, "%s: block 0 %s; read the backup superblock at block %llu", path,
		    lfs_super_why(w->primary_err), (unsigned long long)w->block);
	return 0;
}

int
lfs_tool_open(const char *name, const char *path, const struct lfs_tool_open *how, struct lfs_bdev *dev,
	      struct lfs_super *sb, struct lfs_super_where *w)
{
	bool write = how->flags & LFS_OPEN_WRITE;
	struct lfs_super_where here;
	if (!w)
		w = &here;
	if (how->msg)
		how->msg[0] = '\0';
	int fd = how->fd >= 0 ? how->fd : open(path, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	int err = fd < 0 ? -errno : lfs_bdev_adopt(dev, fd, !write);
	if (err) {
		dev->fd = dev->trace_fd = -1; /* closed, if it was opened */
		say(name, how, "%s: %s", path,
		    err == -ENOTBLK ? "neither a regular file nor a block device" : strerror(-err));
		return err;
	}
	char where[4096];
	if (write)
		err = lock_for_change(name, path, dev);
	else if (!how->msg && !(how->flags & LFS_OPEN_MOUNTED_OK) && dev->size_bytes >= LFS_SB_SIZE &&
		 lfs_image_busy(dev->fd, path, where, sizeof(where)))
		fprintf(stderr, "%s: warning: %s is mounted at %s: %s\n", name, path, where,
			how->busy_note ? how->busy_note : "its daemon may change what is shown");
	if (!err && !(how->flags & LFS_OPEN_DEVICE_ONLY))
		err = open_super(name, path, how, dev, sb, w);
	if (err)
		lfs_bdev_close(dev);
	return err;
}

int
lfs_tool_check_label(const char *name, const char *label)
{
	const char *why;
	if (!lfs_label_check(label, &why))
		return 0;
	char shown[LFS_ESC_LEN(LFS_LABEL_MAX)];
	fprintf(stderr, "%s: label '%s%s' %s: a label is at most %d bytes of printable UTF-8, without control "
		"characters\n", name, lfs_escape(label, LFS_ESC_SHOW, shown, sizeof(shown)),
		strlen(label) > LFS_LABEL_MAX ? "..." : "", why, LFS_LABEL_MAX);
	return -EINVAL;
}
