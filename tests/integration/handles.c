/*
 * handles.c — file handles, as an NFS server keeps them (handles.sh):
 *
 *   handles save PATH OUT          name_to_handle_at(PATH) into OUT
 *   handles cat MOUNT IN [NAME]    open_by_handle_at(IN) on MOUNT's
 *                                  filesystem and copy the file to stdout;
 *                                  with NAME, the handle is a directory's
 *                                  and NAME is opened relative to it
 *   handles ino MOUNT IN           the inode number the handle opens
 *
 * An error prints the errno's name on stderr (ESTALE, ...) and exits 1;
 * bad usage exits 2.  open_by_handle_at needs CAP_DAC_READ_SEARCH.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int
fail(const char *what, int err)
{
	const char *name = strerrorname_np(err);
	fprintf(stderr, "%s: %s\n", what, name ? name : strerror(err));
	return 1;
}

static int
save(const char *path, const char *out)
{
	struct file_handle *h = malloc(sizeof(*h) + MAX_HANDLE_SZ);
	if (!h)
		return fail("malloc", errno);
	h->handle_bytes = MAX_HANDLE_SZ;
	int mount_id;
	if (name_to_handle_at(AT_FDCWD, path, h, &mount_id, 0) < 0)
		return fail("name_to_handle_at", errno);
	FILE *f = fopen(out, "we");
	size_t len = sizeof(*h) + h->handle_bytes;
	if (!f || fwrite(h, 1, len, f) != len || fclose(f) != 0)
		return fail(out, errno);
	free(h);
	return 0;
}

/* the handle saved in `in`, opened on mount's filesystem; -errno */
static int
open_saved(const char *mount, const char *in, int flags)
{
	struct file_handle *h = calloc(1, sizeof(*h) + MAX_HANDLE_SZ);
	FILE *f = fopen(in, "re");
	if (!h || !f)
		return -errno;
	size_t n = fread(h, 1, sizeof(*h) + MAX_HANDLE_SZ, f);
	fclose(f);
	if (n < sizeof(*h) || h->handle_bytes > MAX_HANDLE_SZ || n != sizeof(*h) + h->handle_bytes) {
		free(h);
		return -EINVAL;
	}
	int mfd = open(mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0) {
		free(h);
		return -errno;
	}
	int fd = open_by_handle_at(mfd, h, flags | O_CLOEXEC);
	int err = fd < 0 ? -errno : fd;
	close(mfd);
	free(h);
	return err;
}

static int
copy_out(int fd)
{
	char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
			return fail("stdout", errno);
	return n < 0 ? fail("read", errno) : 0;
}

static int
cat(const char *mount, const char *in, const char *name)
{
	int fd = open_saved(mount, in, name ? O_RDONLY | O_DIRECTORY : O_RDONLY);
	if (fd < 0)
		return fail("open_by_handle_at", -fd);
	if (name) {
		int dfd = fd;
		fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
		close(dfd);
		if (fd < 0)
			return fail("openat", errno);
	}
	int rc = copy_out(fd);
	close(fd);
	return rc;
}

static int
ino(const char *mount, const char *in)
{
	int fd = open_saved(mount, in, O_PATH);
	struct stat st;
	if (fd < 0)
		return fail("open_by_handle_at", -fd);
	if (fstat(fd, &st) < 0)
		return fail("fstat", errno);
	printf("%llu\n", (unsigned long long)st.st_ino);
	close(fd);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "save") == 0)
		return save(argv[2], argv[3]);
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "cat") == 0)
		return cat(argv[2], argv[3], argc == 5 ? argv[4] : NULL);
	if (argc == 4 && strcmp(argv[1], "ino") == 0)
		return ino(argv[2], argv[3]);
	fprintf(stderr, "usage: handles save PATH OUT | cat MOUNT IN [NAME] | ino MOUNT IN\n");
	return 2;
}
