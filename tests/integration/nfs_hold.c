/*
 * nfs_hold.c — an NFS client that keeps a file handle, as a client of a
 * server that restarts does (nfs_export.sh):
 *
 *   nfs_hold URL OUT
 *
 * opens the file at URL (libnfs's form, NFSv3), copies it to OUT.1 and
 * says "open"; then, for each line read on stdin, copies it again by the
 * same NFS file handle to OUT.2, OUT.3, ... and says "read N".  An error
 * prints its errno's name (ESTALE, ...) or libnfs's message and exits 1.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nfsc/libnfs.h>

static int
fail(struct nfs_context *nfs, const char *what)
{
	fprintf(stderr, "%s: %s\n", what, nfs ? nfs_get_error(nfs) : "out of memory");
	return 1;
}

/* the whole file by `fh` into path; 0 or 1 */
static int
copy_out(struct nfs_context *nfs, struct nfsfh *fh, const char *path)
{
	static char buf[65536];
	FILE *out = fopen(path, "we");
	if (!out) {
		perror(path);
		return 1;
	}
	uint64_t off = 0;
	int n;
	while ((n = nfs_pread(nfs, fh, off, sizeof(buf), buf)) > 0) {
		if (fwrite(buf, 1, (size_t)n, out) != (size_t)n)
			break;
		off += (uint64_t)n;
	}
	if (fclose(out) != 0 || n > 0) {
		perror(path);
		return 1;
	}
	if (n < 0) {
		const char *name = strerrorname_np(-n);
		fprintf(stderr, "pread: %s (%s)\n", name ? name : strerror(-n), nfs_get_error(nfs));
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: nfs_hold URL OUT\n");
		return 2;
	}
	struct nfs_context *nfs = nfs_init_context();
	if (!nfs)
		return fail(NULL, "nfs_init_context");
	/* the server may have restarted between two reads */
	nfs_set_autoreconnect(nfs, 20);
	struct nfs_url *url = nfs_parse_url_full(nfs, argv[1]);
	if (!url)
		return fail(nfs, "URL");
	struct nfsfh *fh;
	if (nfs_mount(nfs, url->server, url->path) != 0)
		return fail(nfs, "mount");
	if (nfs_open(nfs, url->file, O_RDONLY, &fh) != 0)
		return fail(nfs, "open");
	size_t len = strlen(argv[2]) + 16;
	char *path = malloc(len), line[64];
	if (!path)
		return fail(NULL, "malloc");
	snprintf(path, len, "%s.1", argv[2]);
	if (copy_out(nfs, fh, path))
		return 1;
	printf("open\n");
	fflush(stdout);
	for (int k = 2; fgets(line, sizeof(line), stdin); k++) {
		snprintf(path, len, "%s.%d", argv[2], k);
		if (copy_out(nfs, fh, path))
			return 1;
		printf("read %d\n", k);
		fflush(stdout);
	}
	nfs_close(nfs, fh);
	nfs_destroy_url(url);
	free(path);
	nfs_destroy_context(nfs);
	return 0;
}
