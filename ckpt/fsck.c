/*
 * fsck.c — fsck.lfs [-anpvyf] IMAGE: verify an image read-only
 * (fsck_core.c).  The exit status follows fsck(8): 0 no problems, 4
 * problems found (it never changes the image, so they are left
 * uncorrected), 8 the image cannot be opened, 16 usage.  -a, -p, -n,
 * -y and -f are accepted for fsck(8)'s sake and change nothing.
 */
#include "lfs_int.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

int
main(int argc, char **argv)
{
	int opt;
	bool verbose = false;
	while ((opt = getopt(argc, argv, "vhanpyf")) != -1) {
		if (opt == 'v')
			verbose = true;
		else if (opt == 'h' || opt == '?') {
			fprintf(opt == 'h' ? stdout : stderr, "usage: fsck.lfs [-anpvyf] IMAGE\n");
			return opt == 'h' ? 0 : 16;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: fsck.lfs [-anpvyf] IMAGE\n");
		return 16;
	}
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.readonly = true;
	struct lfs_fs *fs;
	(void)verbose;
	int err = lfs_mount(argv[optind], &o, &fs);
	if (err) {
		fprintf(stderr, "fsck.lfs: %s cannot be opened: %s\n", argv[optind], strerror(-err));
		return 8;
	}
	uint64_t problems = 0;
	err = lfs_fsck(fs, &problems);
	if (err) {
		fprintf(stderr, "fsck.lfs: %s\n", strerror(-err));
		return 8;
	}
	struct lfs_stats st;
	lfs_get_stats(fs, &st);
	printf("fsck.lfs: %s: %llu inodes, %llu of %llu segments clean, %.1f MiB live: %llu problem%s\n", argv[optind],
	       (unsigned long long)fs->inodes_used, (unsigned long long)st.segs_clean,
	       (unsigned long long)st.segs_total, (double)st.live_bytes / 1048576.0, (unsigned long long)problems,
	       problems == 1 ? "" : "s");
	lfs_abandon(fs);
	return problems ? 4 : 0;
}
