/*
 * check_tool.c — tool.c, what every lfs program answers alike (tool.h):
 * -h/--help the usage on standard output and 0, -V/--version the
 * version line and 0, a bad option the usage on standard error and the
 * program's own usage status; the UUID text form; and opening an
 * unmounted image, which holds the lock a second writer is refused by.
 * Standard output and error are caught in files for each call.
 */
#include "testfs.h"
#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

static int usage_calls;

static void
usage(FILE *f)
{
	usage_calls++;
	fprintf(f, "usage: mkfs.lfs [options] IMAGE\n" LFS_TOOL_HELP_LINES);
}

static const struct lfs_tool mkfs_tool = { "mkfs.lfs", usage, 2 };
static const struct lfs_tool fsck_tool = { "fsck.lfs", usage, 16 };

/* What one call wrote to standard output and error. */
struct caught {
	char out[1024], err[1024];
	int rc;
};

static void
read_back(int fd, char *buf, size_t size)
{
	ssize_t n = pread(fd, buf, size - 1, 0);
	ck_assert_int_ge(n, 0);
	buf[n] = 0;
	close(fd);
}

static int
scratch_fd(void)
{
	char p[] = "/tmp/lfs-tool-XXXXXX";
	int fd = mkstemp(p);
	ck_assert_int_ge(fd, 0);
	unlink(p);
	return fd;
}

/* Run getopt_long over argv with the shared options as a tool would,
 * handing what it returns to lfs_tool_opt. */
static void
run_tool(const struct lfs_tool *t, int argc, char **argv, struct caught *c)
{
	int fo = scratch_fd(), fe = scratch_fd();
	fflush(stdout);
	fflush(stderr);
	int so = dup(1), se = dup(2);
	ck_assert_int_eq(dup2(fo, 1), 1);
	ck_assert_int_eq(dup2(fe, 2), 2);
	static const struct option longopts[] = { LFS_TOOL_LONGOPTS, { NULL, 0, NULL, 0 } };
	optind = 1;
	c->rc = -1;
	int ch;
	while ((ch = getopt_long(argc, argv, "s:" LFS_TOOL_SHORTOPTS, longopts, NULL)) != -1)
		if (ch != 's') {
			c->rc = lfs_tool_opt(t, ch);
			break;
		}
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	read_back(fo, c->out, sizeof(c->out));
	read_back(fe, c->err, sizeof(c->err));
}

#define ARGV(...) ((char *[]){ "prog", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "prog", __VA_ARGS__ }) / sizeof(char *)))
#define RUN(t, c, ...) run_tool((t), ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (c))

/* -h and --help: the usage once, on standard output, status 0, nothing
 * on standard error (a help that goes to stderr cannot be paged). */
START_TEST(help_to_stdout)
{
	struct caught c;
	RUN(&mkfs_tool, &c, "--help");
	ck_assert_int_eq(c.rc, 0);
	ck_assert_int_eq(usage_calls, 1);
	ck_assert_str_eq(c.out, "usage: mkfs.lfs [options] IMAGE\n" LFS_TOOL_HELP_LINES);
	ck_assert_str_eq(c.err, "");
	RUN(&fsck_tool, &c, "-s", "1", "-h");
	ck_assert_int_eq(c.rc, 0);
	ck_assert_int_eq(usage_calls, 2);
	ck_assert_str_eq(c.err, "");
}
END_TEST

/* -V and --version: "NAME VERSION (on-disk format N)" on standard output,
 * status 0; the format number is the superblock's LFS_VERSION, 1. */
START_TEST(version_line)
{
	struct caught c;
	RUN(&mkfs_tool, &c, "--version");
	ck_assert_int_eq(c.rc, 0);
	ck_assert_str_eq(c.out, "mkfs.lfs 0.1.0 (on-disk format 1)\n");
	ck_assert_str_eq(c.err, "");
	RUN(&fsck_tool, &c, "-V");
	ck_assert_str_eq(c.out, "fsck.lfs 0.1.0 (on-disk format 1)\n");
	ck_assert_int_eq(usage_calls, 0);
}
END_TEST

/* A bad option: the usage on standard error, nothing on standard output,
 * and each program's own status (fsck's 16 is its "usage error" bit, not
 * a filesystem verdict). */
START_TEST(bad_option_usage_status)
{
	struct caught c;
	RUN(&mkfs_tool, &c, "--bogus");
	ck_assert_int_eq(c.rc, 2);
	ck_assert_str_eq(c.out, "");
	ck_assert_ptr_nonnull(strstr(c.err, "usage: mkfs.lfs [options] IMAGE\n"));
	RUN(&fsck_tool, &c, "-s");  /* missing argument */
	ck_assert_int_eq(c.rc, 16);
	ck_assert_str_eq(c.out, "");
}
END_TEST

/* The UUID text form is 8-4-4-4-12 lower-case hex; parsing takes either
 * case with or without dashes, refuses anything but exactly 32 digits,
 * and leaves the output alone when it refuses. */
START_TEST(uuid_text)
{
	uint8_t u[16], back[16];
	for (int i = 0; i < 16; i++)
		u[i] = (uint8_t)(i * 17 + 10);
	char s[LFS_UUID_STR];
	lfs_uuid_format(u, s);
	ck_assert_str_eq(s, "0a1b2c3d-4e5f-7081-92a3-b4c5d6e7f809");
	ck_assert_int_eq(lfs_uuid_parse("0A1B2C3D4E5F708192A3B4C5D6E7F809", back), 0);
	ck_assert(memcmp(back, u, 16) == 0);
	memset(back, 0x5a, sizeof(back));
	ck_assert_int_eq(lfs_uuid_parse("0a1b2c3d-4e5f-7081-92a3-b4c5d6e7f80", back), -EINVAL);
	ck_assert_int_eq(lfs_uuid_parse("0a1b2c3d-4e5f-7081-92a3-b4c5d6e7f8090", back), -EINVAL);
	ck_assert_int_eq(lfs_uuid_parse("0a1b2c3d-4e5f-7081-92a3-b4c5d6e7f80g", back), -EINVAL);
	ck_assert_int_eq(lfs_uuid_parse("", back), -EINVAL);
	for (int i = 0; i < 16; i++)
		ck_assert_uint_eq(back[i], 0x5a);
}
END_TEST

/* lfs_tool_open, to change the image or to read it, as lfs-tune does. */
static int
open_image(const char *name, const char *path, bool write, struct lfs_bdev *dev, struct lfs_super *sb)
{
	struct lfs_tool_open how = { .flags = write ? LFS_OPEN_WRITE : 0, .fd = -1 };
	return lfs_tool_open(name, path, &how, dev, sb, NULL);
}

/* Opening an image to change it takes its lock: a second writer is
 * refused with -EBUSY and told so on standard error, a reader is only
 * warned; a missing image is -ENOENT, named in the message; closing
 * gives the lock back. */
START_TEST(open_image_locks)
{
	testfs_make(16 << 20, 16 * 4096);
	struct lfs_bdev d1, d2;
	struct lfs_super sb1, sb2;
	ck_assert_int_eq(open_image("tunefs.lfs", testfs_path, true, &d1, &sb1), 0);
	ck_assert_uint_eq(sb1.seg_blocks, 16);
	int fe = scratch_fd(), se = dup(2);
	fflush(stderr);
	dup2(fe, 2);
	int busy = open_image("tunefs.lfs", testfs_path, true, &d2, &sb2);
	int missing = open_image("tunefs.lfs", "/tmp/lfs-no-such-image", false, &d2, &sb2);
	int reader = open_image("dumpfs.lfs", testfs_path, false, &d2, &sb2);
	fflush(stderr);
	dup2(se, 2);
	close(se);
	char err[1024];
	read_back(fe, err, sizeof(err));
	ck_assert_int_eq(busy, -EBUSY);
	ck_assert_int_eq(missing, -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "is in use by a mounted lfs"));
	ck_assert_ptr_nonnull(strstr(err, "tunefs.lfs: /tmp/lfs-no-such-image: No such file or directory\n"));
	ck_assert_int_eq(reader, 0);
	ck_assert_ptr_nonnull(strstr(err, "dumpfs.lfs: warning: "));
	ck_assert_uint_eq(sb2.nsegs, sb1.nsegs);
	lfs_bdev_close(&d2);
	lfs_bdev_close(&d1);
	ck_assert_int_eq(open_image("tunefs.lfs", testfs_path, true, &d1, &sb1), 0);
	lfs_bdev_close(&d1);
	testfs_remove();
}
END_TEST

/* The one opener's other uses: a truncated image is refused as the mount
 * refuses it, but found for a salvage (LFS_OPEN_FOUND_ONLY); with a
 * message buffer nothing goes to stderr and the buffer says why; a
 * damaged block 0 is read from the backup, said, and refuses a change;
 * not an image at all is -EINVAL. */
START_TEST(open_image_ways)
{
	testfs_make(16 << 20, 16 * 4096);
	struct lfs_bdev dev;
	struct lfs_super sb;
	struct lfs_super_where w;
	char msg[4608];
	struct lfs_tool_open quiet = { .fd = -1, .msg = msg, .msg_len = sizeof(msg) };
	struct lfs_tool_open salvage = quiet;
	salvage.flags = LFS_OPEN_FOUND_ONLY;
	int fe = scratch_fd(), se = dup(2);
	fflush(stderr);
	dup2(fe, 2);
	/* block 0 destroyed: the backup, said; a change refused */
	int fd = open(testfs_path, O_WRONLY);
	uint8_t junk[4096];
	memset(junk, 0xa5, sizeof(junk));
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), 0), (ssize_t)sizeof(junk));
	close(fd);
	ck_assert_int_eq(lfs_tool_open("x", testfs_path, &quiet, &dev, &sb, &w), 0);
	ck_assert_ptr_nonnull(strstr(msg, "read the backup superblock at block"));
	ck_assert_uint_ne(w.block, 0);
	lfs_bdev_close(&dev);
	struct lfs_tool_open change = { .flags = LFS_OPEN_WRITE, .fd = -1 };
	ck_assert_int_eq(lfs_tool_open("tunefs.lfs", testfs_path, &change, &dev, &sb, &w), -EUCLEAN);
	/* truncated to half, block 0 intact */
	testfs_remove();
	testfs_make(16 << 20, 16 * 4096);
	ck_assert_int_eq(truncate(testfs_path, 8 << 20), 0);
	ck_assert_int_eq(lfs_tool_open("x", testfs_path, &quiet, &dev, &sb, &w), -EFSCORRUPTED);
	ck_assert_ptr_nonnull(strstr(msg, "image is truncated"));
	ck_assert_int_eq(dev.fd, -1);
	ck_assert_int_eq(lfs_tool_open("x", testfs_path, &salvage, &dev, &sb, &w), 0);
	ck_assert_str_eq(msg, "");
	ck_assert_uint_eq(dev.block_size, sb.block_size);
	ck_assert_uint_eq(sb.seg_blocks, 16);
	lfs_bdev_close(&dev);
	/* not an lfs at all */
	testfs_remove();
	fd = open(testfs_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
	close(fd);
	ck_assert_int_eq(lfs_tool_open("x", testfs_path, &salvage, &dev, &sb, &w), -EINVAL);
	ck_assert_ptr_nonnull(strstr(msg, "not an lfs image"));
	fflush(stderr);
	dup2(se, 2);
	close(se);
	char err[1024];
	read_back(fe, err, sizeof(err));
	/* only the refused change spoke */
	ck_assert_ptr_nonnull(strstr(err, "run fsck.lfs -y to rewrite it from the backup first\n"));
	ck_assert_int_eq(strncmp(err, "tunefs.lfs: ", 12), 0);
	ck_assert_ptr_null(strstr(err, "x: "));
	testfs_remove();
}
END_TEST

CHECK_MAIN("tool", "options", 30, help_to_stdout, version_line, bad_option_usage_status, uuid_text,
	   open_image_locks, open_image_ways)
