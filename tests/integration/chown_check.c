/*
 * chown_check.c — what chown(2) does to set-user-ID and set-group-ID, for
 * chown.sh, which runs it on kernel ext4 and on lfs and compares:
 *
 *   chown_check DIR   make, in DIR, one node per {type, mode, case}, run
 *                     the case's chown and print one line per node: the
 *                     call's result, then the mode, owner and group left
 *
 * Types are the five kinds of non-directory that hold a mode (regular
 * file, FIFO, socket, block and character device); modes mix the two
 * bits with and without group execute.  A case is a caller (the owner,
 * uid 1000 in groups 1000 and 1001; root; root without CAP_FSETID; a
 * stranger) and a call (fchownat with a new, the same or no (-1) owner
 * and group, or fchown on an open file).  Each node starts as
 * 1000:1000, or 1000:2000 where the owner is outside the file's group.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

enum { OWNER = 1000, OWNG = 1000, OWNG2 = 1001, OTHER = 2000, OTHG = 2000 };
#define NONE ((unsigned)-1)

enum caller { BY_OWNER, BY_ROOT, BY_ROOT_NOFSETID, BY_STRANGER };

static const struct type {
	const char *name;
	mode_t fmt;
	dev_t rdev;
} types[] = {
	{ "reg", S_IFREG, 0 },
	{ "fifo", S_IFIFO, 0 },
	{ "sock", S_IFSOCK, 0 },
	{ "blk", S_IFBLK, 0x0700 },
	{ "chr", S_IFCHR, 0x0103 },
};

static const mode_t modes[] = { 06755, 06555, 06745, 04755, 02755, 02745, 07745, 02700 };

/* the call; all but CHOWN only on regular files (a device node opened
 * for writing on ext4 would be the device) */
enum op { CHOWN, FCHOWN, WRITE, TRUNCATE };

static const struct kase {
	const char *name;
	enum caller by;
	unsigned start_gid;   /* the node's group before the call */
	enum op op;
	unsigned uid, gid;    /* a chown's arguments */
} cases[] = {
	{ "owner-chgrp", BY_OWNER, OWNG, CHOWN, NONE, OWNG2 },
	{ "owner-chgrp-from-outside", BY_OWNER, OTHG, CHOWN, NONE, OWNG2 },
	{ "owner-chown-self", BY_OWNER, OWNG, CHOWN, OWNER, NONE },
	{ "owner-same", BY_OWNER, OWNG, CHOWN, OWNER, OWNG },
	{ "owner-none", BY_OWNER, OWNG, CHOWN, NONE, NONE },
	{ "owner-none-outside", BY_OWNER, OTHG, CHOWN, NONE, NONE },
	{ "owner-fchown", BY_OWNER, OWNG, FCHOWN, NONE, OWNG2 },
	{ "root-uid", BY_ROOT, OWNG, CHOWN, OTHER, NONE },
	{ "root-gid", BY_ROOT, OWNG, CHOWN, NONE, OTHG },
	{ "root-both", BY_ROOT, OWNG, CHOWN, OTHER, OTHG },
	{ "root-same", BY_ROOT, OWNG, CHOWN, OWNER, OWNG },
	{ "root-none", BY_ROOT, OWNG, CHOWN, NONE, NONE },
	{ "root-fchown", BY_ROOT, OWNG, FCHOWN, OTHER, NONE },
	{ "root-nofsetid-gid", BY_ROOT_NOFSETID, OTHG, CHOWN, NONE, OWNG },
	{ "root-nofsetid-none", BY_ROOT_NOFSETID, OTHG, CHOWN, NONE, NONE },
	{ "stranger-chgrp", BY_STRANGER, OWNG, CHOWN, NONE, OWNG },
	{ "owner-write", BY_OWNER, OWNG, WRITE, 0, 0 },
	{ "owner-write-outside", BY_OWNER, OTHG, WRITE, 0, 0 },
	{ "root-write", BY_ROOT, OTHG, WRITE, 0, 0 },
	{ "root-nofsetid-write", BY_ROOT_NOFSETID, OTHG, WRITE, 0, 0 },
	{ "owner-truncate", BY_OWNER, OWNG, TRUNCATE, 0, 0 },
	{ "owner-truncate-outside", BY_OWNER, OTHG, TRUNCATE, 0, 0 },
	{ "root-truncate", BY_ROOT, OTHG, TRUNCATE, 0, 0 },
	{ "root-nofsetid-truncate", BY_ROOT_NOFSETID, OTHG, TRUNCATE, 0, 0 },
};

static int
run(const struct kase *k, const char *path)
{
	int fd;
	switch (k->op) {
	case CHOWN:
		return fchownat(AT_FDCWD, path, (uid_t)k->uid, (gid_t)k->gid, AT_SYMLINK_NOFOLLOW);
	case FCHOWN:
		fd = open(path, O_RDONLY);
		return fd < 0 ? -1 : fchown(fd, (uid_t)k->uid, (gid_t)k->gid);
	case WRITE:
		fd = open(path, O_WRONLY);
		return fd < 0 || write(fd, "x", 1) != 1 || close(fd) < 0 ? -1 : 0;
	case TRUNCATE:
		return truncate(path, 1);
	}
	return -1;
}

/* Drop CAP_FSETID from the effective set, keeping the rest. */
static int
drop_fsetid(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return -1;
	d[CAP_FSETID / 32].effective &= ~(1u << (CAP_FSETID % 32));
	return (int)syscall(SYS_capset, &h, d);
}

static int
become(enum caller by)
{
	static const gid_t owner_groups[] = { OWNG, OWNG2 };
	static const gid_t stranger_groups[] = { OTHG, OWNG };
	switch (by) {
	case BY_OWNER:
		return setgroups(2, owner_groups) || setresgid(OWNG, OWNG, OWNG) ||
		       setresuid(OWNER, OWNER, OWNER) ? -1 : 0;
	case BY_STRANGER:
		return setgroups(2, stranger_groups) || setresgid(OTHG, OTHG, OTHG) ||
		       setresuid(OTHER, OTHER, OTHER) ? -1 : 0;
	case BY_ROOT_NOFSETID:
		return setgroups(0, NULL) || drop_fsetid() ? -1 : 0;
	case BY_ROOT:
		break;
	}
	return 0;
}

/* Run the case's call on `path` as its caller: 0 or an errno. */
static int
call(const struct kase *k, const char *path)
{
	pid_t pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		if (become(k->by) < 0)
			_exit(250);
		_exit(run(k, path) < 0 ? errno : 0);
	}
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
		return 255;
	return WEXITSTATUS(status);
}

/* Make `path` as a node of type t, owned OWNER:gid, with mode m. */
static int
make(const char *path, const struct type *t, mode_t m, unsigned gid)
{
	if (mknod(path, t->fmt | 0600, t->rdev) < 0)
		return -1;
	/* the mode after the owner: root's chown would take the bits away */
	if (lchown(path, OWNER, (gid_t)gid) < 0 || chmod(path, m) < 0)
		return -1;
	struct stat st;
	if (lstat(path, &st) < 0 || (st.st_mode & 07777) != m) {
		errno = EPROTO;
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc != 2 || chdir(argv[1]) < 0) {
		fprintf(stderr, "usage: chown_check DIR (a directory to fill)\n");
		return 2;
	}
	int bad = 0;
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
		for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
			for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
				const struct kase *k = &cases[c];
				if (k->op != CHOWN && types[t].fmt != S_IFREG)
					continue;
				char path[96];
				snprintf(path, sizeof(path), "%s-%04o-%s", types[t].name, (unsigned)modes[m],
					 k->name);
				if (make(path, &types[t], modes[m], k->start_gid) < 0) {
					printf("%s: cannot make: %s\n", path, strerror(errno));
					bad = 1;
					continue;
				}
				int r = call(k, path);
				struct stat st;
				if (lstat(path, &st) < 0) {
					printf("%s: lstat: %s\n", path, strerror(errno));
					bad = 1;
					continue;
				}
				printf("%s: %s %04o %u:%u\n", path, r ? (strerrorname_np(r) ? strerrorname_np(r) : "exit") : "ok",
				       (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)st.st_gid);
			}
	return bad;
}
