/*
 * fuzz_mount.c — libFuzzer target for the mount path.
 *
 * A small valid image (a few files, directories, a symlink, xattrs,
 * psegs after the last checkpoint) is built once.  Each input is a list
 * of patches, records of  le32 offset | u8 length | bytes,  applied to a
 * copy of it; offsets are steered towards the metadata (superblock,
 * checkpoint regions, the first segments).  The patched image is mounted
 * read-only and checked with fsck, every file is read, then it is mounted
 * read-write (roll-forward, a checkpoint) and unmounted.  Any crash, hang
 * or sanitizer report is a bug; errors are expected and fine.
 */
#include "lfs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define IMG (2u << 20)

static uint8_t *base;
static int memfd = -1;
static char path[64];

static void
build_base(void)
{
	memfd = memfd_create("lfs-fuzz", 0);
	if (memfd < 0 || ftruncate(memfd, IMG) < 0)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	struct lfs_super sb;
	if (lfs_plan_geometry(&sb, IMG, 4096, 64 << 10, 1024) || lfs_format(path, &sb, 0, 0))
		abort();
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.ckpt_interval_s = 0;
	struct lfs_fs *fs;
	if (lfs_mount(path, &o, &fs))
		abort();
	struct lfs_cred c = { 0, 0 };
	struct stat st, d;
	char buf[20000];
	memset(buf, 'x', sizeof(buf));
	lfs_mkdir(fs, LFS_ROOT_INO, "dir", 0755, &c, &d);
	lfs_create(fs, d.st_ino, "small", 0644, true, &c, &st);
	lfs_write(fs, st.st_ino, "hello", 5, 0, NULL);
	lfs_create(fs, LFS_ROOT_INO, "big", 0644, true, &c, &st);
	lfs_write(fs, st.st_ino, buf, sizeof(buf), 0, NULL);
	lfs_write(fs, st.st_ino, buf, 100, 70000, NULL); /* through an indirect block */
	lfs_setxattr(fs, st.st_ino, "user.k", "v", 1, 0);
	lfs_symlink(fs, d.st_ino, "link", "../big", &c, &st);
	lfs_checkpoint(fs);
	lfs_create(fs, LFS_ROOT_INO, "after", 0644, true, &c, &st); /* rolled forward */
	lfs_write(fs, st.st_ino, buf, 6000, 0, NULL);
	lfs_fsync(fs, st.st_ino, false);
	lfs_abandon(fs);
	base = malloc(IMG);
	if (pread(memfd, base, IMG, 0) != IMG)
		abort();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	build_base();
	return 0;
}

struct names {
	uint64_t ino[64];
	int n;
};

/* readdir calls back with the filesystem locked: collect, read later */
static int
collect(void *ctx, const char *name, const struct stat *st, off_t next)
{
	struct names *l = ctx;
	(void)name;
	(void)next;
	if (S_ISREG(st->st_mode) && l->n < 64)
		l->ino[l->n++] = st->st_ino;
	return 0;
}

static void
read_dir(struct lfs_fs *fs, uint64_t dir)
{
	static char buf[65536];
	struct names l = { .n = 0 };
	lfs_readdir(fs, dir, 0, collect, &l);
	for (int i = 0; i < l.n; i++)
		lfs_read(fs, l.ino[i], buf, sizeof(buf), 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *img = malloc(IMG);
	memcpy(img, base, IMG);
	for (size_t p = 0; p + 5 <= size;) {
		uint32_t off = lfs_get32(data + p);
		uint8_t len = data[p + 4];
		p += 5;
		if (len > size - p)
			len = (uint8_t)(size - p);
		/* most patches land in the first 512 KiB: metadata and early segments */
		off = (off & 0x80000000u) ? off % IMG : off % (512u << 10);
		if (off + len > IMG)
			len = (uint8_t)(IMG - off);
		memcpy(img + off, data + p, len);
		p += len;
	}
	if (pwrite(memfd, img, IMG, 0) != IMG)
		abort();
	free(img);
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.readonly = true;
	o.ckpt_interval_s = 0;
	struct lfs_fs *fs;
	if (lfs_mount(path, &o, &fs) == 0) {
		uint64_t problems;
		lfs_fsck(fs, &problems);
		lfs_abandon(fs);
	}
	o.readonly = false;
	if (lfs_mount(path, &o, &fs) == 0) {
		read_dir(fs, LFS_ROOT_INO);
		struct stat st;
		if (lfs_lookup(fs, LFS_ROOT_INO, "dir", &st) == 0)
			read_dir(fs, st.st_ino);
		lfs_unmount(fs);
	}
	return 0;
}
