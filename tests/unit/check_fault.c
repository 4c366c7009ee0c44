/*
 * check_fault.c — failing hardware and memory never cause silent loss.
 * Faults are injected below everything (fault.h): the Nth pread, pwrite
 * or fdatasync of the image, the Nth allocation of the core.
 *
 *  - a failed pwrite or fdatasync fails the filesystem at once: later
 *    writes, fsyncs and checkpoints fail with EIO (no retried fdatasync
 *    reaches the device), reads go on, the log says so once, and a
 *    remount finds every file whose fsync returned 0;
 *  - a read error or ENOMEM while mounting fails the mount and writes
 *    nothing; a mount that succeeds has every fsynced file;
 *  - ENOMEM at any allocation of a workload fails an operation or
 *    nothing: every operation that succeeded is found after a crash.
 * The sweeps try every N the workload reaches.
 */
#include "testfs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

/* the sweeps flush thousands of times; the faults count the calls, the
 * host's disk has nothing to add */
TESTFS_IN_MEMORY


/* The image must verify: no problem for fsck, whatever was lost. */
static void
assert_fsck_clean(void)
{
	struct lfs_fs *fs = testfs_mount_ro();
	uint64_t problems = 1;
	ck_assert_int_eq(lfs_fsck(fs, &problems), 0);
	ck_assert_uint_eq(problems, 0);
	lfs_abandon(fs);
}

/* File `name` in the root holds exactly `len` bytes of pattern `seed`. */
static void
assert_file(struct lfs_fs *fs, const char *name, size_t len, unsigned seed)
{
	struct stat st;
	ck_assert_msg(lfs_lookup(fs, LFS_ROOT_INO, name, &st) == 0, "%s is missing", name);
	ck_assert_int_eq(st.st_size, (off_t)len);
	uint8_t *want = malloc(len + 1), *got = malloc(len + 1);
	fill_pattern(want, len, seed);
	ck_assert_int_eq(lfs_read(fs, st.st_ino, got, len + 1, 0), (ssize_t)len);
	ck_assert_msg(memcmp(want, got, len) == 0, "%s has wrong content", name);
	free(want);
	free(got);
	lfs_forget(fs, st.st_ino, 1);
}

/* Create `name` with `len` bytes of pattern `seed`; 0 or the first error. */
static int
write_file(struct lfs_fs *fs, const char *name, size_t len, unsigned seed, uint64_t *ino)
{
	struct stat st;
	int err = lfs_create(fs, LFS_ROOT_INO, name, 0644, true, &testfs_me, &st);
	if (err)
		return err;
	*ino = st.st_ino;
	uint8_t *buf = malloc(len);
	fill_pattern(buf, len, seed);
	ssize_t n = lfs_write(fs, st.st_ino, buf, len, 0, NULL);
	free(buf);
	if (n < 0)
		return (int)n;
	return n == (ssize_t)len ? 0 : -EIO;
}

START_TEST(rules)
{
	const char *bad[] = { "pread", "pread:1", "pread:0:EIO", "pread:x:EIO", "pread:1:ENOMEM",
			      "alloc:1:EIO", "fdatasync:1:short", "pwrite:1:EIO+", "write:1:EIO",
			      "pwrite:-1:EIO", "pwrite:1:EIO:" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(lfs_fault_arm(bad[i]) == -EINVAL, "%s accepted", bad[i]);
	ck_assert_int_eq(lfs_fault_arm("pread:2:EIO+pwrite:1:short+alloc:3:ENOMEM+fdatasync:1:ENOSPC"), 0);
	ck_assert_int_eq(lfs_fault_check(LFS_FAULT_PREAD), 0);
	ck_assert_int_eq(lfs_fault_check(LFS_FAULT_PREAD), -EIO);
	ck_assert_int_eq(lfs_fault_check(LFS_FAULT_PREAD), 0); /* once */
	ck_assert_int_eq(lfs_fault_check(LFS_FAULT_PWRITE), LFS_FAULT_SHORT);
	ck_assert_int_eq(lfs_fault_check(LFS_FAULT_SYNC), -ENOSPC);
	void *a = lfs_malloc(8), *b = lfs_calloc(1, 8), *c = lfs_realloc(NULL, 8);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_null(c);
	free(a);
	free(b);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_PREAD), 3);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_ALLOC), 3);
	lfs_fault_disarm();
	ck_assert_int_eq(lfs_fault_check(LFS_FAULT_PWRITE), 0);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_PWRITE), 0);
}
END_TEST

/* After a failed write or flush: everything that would write fails with
 * EIO, without another fdatasync reaching the device; reads work. */
static void
assert_failed_state(struct lfs_fs *fs, uint64_t ino, const uint8_t *data, size_t len)
{
	uint64_t syncs = lfs_fault_count(LFS_FAULT_SYNC), writes = lfs_fault_count(LFS_FAULT_PWRITE);
	struct stat st;
	uint8_t *back = malloc(len);
	ck_assert_int_eq(lfs_fsync(fs, ino, false), -EIO);
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, true), -EIO);
	ck_assert_int_eq(lfs_write(fs, ino, data, 10, 0, NULL), -EIO);
	ck_assert_int_eq(lfs_create(fs, LFS_ROOT_INO, "after", 0644, true, &testfs_me, &st), -EIO);
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "afterdir", 0755, &testfs_me, &st), -EIO);
	ck_assert_int_eq(lfs_rename(fs, LFS_ROOT_INO, "before", LFS_ROOT_INO, "renamed", 0), -EIO);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "before"), -EIO);
	ck_assert_int_eq(lfs_setxattr(fs, ino, "user.a", "b", 1, 0), -EIO);
	ck_assert_int_eq(lfs_open(fs, ino, O_WRONLY), -EIO);
	ck_assert_int_eq(lfs_checkpoint(fs), -EIO);
	lfs_tick(fs);
	ck_assert_int_eq(lfs_read(fs, ino, back, len, 0), (ssize_t)len);
	ck_assert(memcmp(back, data, len) == 0);
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "before", &st), 0);
	lfs_forget(fs, st.st_ino, 1);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_SYNC), syncs);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_PWRITE), writes);
	free(back);
}

/* A file "before" of `len` bytes, fsynced, and a file "lost" written
 * but not synced yet. */
static struct lfs_fs *
start_failing(uint8_t *data, size_t len, unsigned seed, uint64_t *before, uint64_t *lost)
{
	testfs_make(32 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	fill_pattern(data, len, seed);
	ck_assert_int_eq(write_file(fs, "before", len, seed, before), 0);
	ck_assert_int_eq(lfs_fsync(fs, *before, false), 0);
	ck_assert_int_eq(write_file(fs, "lost", 300000, seed + 1, lost), 0);
	return fs;
}

/* The failed filesystem unmounts with EIO, writing nothing; a remount
 * has "before". */
static void
finish_failing(struct lfs_fs *fs, size_t len, unsigned seed)
{
	uint64_t syncs = lfs_fault_count(LFS_FAULT_SYNC), writes = lfs_fault_count(LFS_FAULT_PWRITE);
	ck_assert_int_eq(lfs_unmount(fs), -EIO);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_SYNC), syncs);
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_PWRITE), writes);
	lfs_fault_disarm();
	fs = testfs_mount();
	assert_file(fs, "before", len, seed);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	assert_fsck_clean();
	testfs_remove();
}

/* The failure the issue names: a failed fdatasync, then fsync again. */
START_TEST(failed_fdatasync_is_final)
{
	uint8_t data[50000];
	uint64_t ino, lost;
	struct lfs_fs *fs = start_failing(data, sizeof(data), 1, &ino, &lost);
	testfs_capture_log();
	ck_assert_int_eq(lfs_fault_arm("fdatasync:1:EIO"), 0);
	ck_assert_int_eq(lfs_fsync(fs, lost, false), -EIO);
	assert_failed_state(fs, ino, data, sizeof(data));
	ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_SYNC), 1); /* never retried */
	finish_failing(fs, sizeof(data), 1);
	ck_assert_int_eq(testfs_release_log("the filesystem has failed"), 1);
}
END_TEST

/* A pwrite that fails (EIO, ENOSPC of the backing store, or torn: half
 * written) during an fsync, then during a checkpoint. */
START_TEST(failed_pwrite_is_final)
{
	const char *specs[] = { "pwrite:1:EIO", "pwrite:1:ENOSPC", "pwrite:1:short" };
	for (int during_ckpt = 0; during_ckpt < 2; during_ckpt++) {
		for (size_t i = 0; i < 3; i++) {
			uint8_t data[70000];
			uint64_t ino, lost;
			struct lfs_fs *fs = start_failing(data, sizeof(data), 3, &ino, &lost);
			ck_assert_int_eq(lfs_fault_arm(specs[i]), 0);
			if (during_ckpt)
				ck_assert_int_eq(lfs_checkpoint(fs), -EIO);
			else
				ck_assert_int_eq(lfs_fsync(fs, lost, false), -EIO);
			ck_assert_uint_eq(lfs_fault_count(LFS_FAULT_SYNC), 0);
			assert_failed_state(fs, ino, data, sizeof(data));
			finish_failing(fs, sizeof(data), 3);
		}
	}
}
END_TEST

/*
 * The sweep: a workload of fsynced files and checkpoints, with its Nth
 * pwrite or fdatasync failing, for every N it reaches.  Every file whose
 * fsync returned 0 is intact after a remount; after the first failure
 * nothing succeeds any more.
 */
#define SWEEP_FILES 12

static size_t
sweep_len(int i)
{
	static const size_t lens[] = { 100, 5000, 70000, 4096, 200000, 1 };
	return lens[i % 6];
}

/* Returns how many files were acknowledged (fsync returned 0). */
static int
sweep_workload(struct lfs_fs *fs)
{
	int acked = 0;
	bool failed = false;
	for (int i = 0; i < SWEEP_FILES; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", i);
		uint64_t ino = 0;
		int err = write_file(fs, name, sweep_len(i), (unsigned)i + 10, &ino);
		if (!err)
			err = lfs_fsync(fs, ino, false);
		if (!err && i % 4 == 3)
			err = lfs_checkpoint(fs);
		if (err) {
			ck_assert_msg(err == -EIO, "file %d: %s", i, strerror(-err));
			failed = true;
		} else {
			ck_assert_msg(!failed, "file %d was acknowledged after a failure", i);
			acked = i + 1;
		}
		if (ino)
			lfs_forget(fs, ino, 1);
	}
	return acked;
}

static void
sweep(const char *op, const char *err)
{
	/* a dry run counts the operations */
	testfs_make(32 << 20, 1 << 20);
	struct lfs_fs *fs = testfs_mount();
	ck_assert_int_eq(lfs_fault_arm(""), 0);
	ck_assert_int_eq(sweep_workload(fs), SWEEP_FILES);
	enum lfs_fault_op kind = strcmp(op, "pwrite") == 0 ? LFS_FAULT_PWRITE : LFS_FAULT_SYNC;
	uint64_t total = lfs_fault_count(kind);
	lfs_fault_disarm();
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
	ck_assert_uint_gt(total, SWEEP_FILES);
	for (uint64_t n = 1; n <= total; n++) {
		char spec[64];
		snprintf(spec, sizeof(spec), "%s:%llu:%s", op, (unsigned long long)n, err);
		testfs_make(32 << 20, 1 << 20);
		fs = testfs_mount();
		ck_assert_int_eq(lfs_fault_arm(spec), 0);
		int acked = sweep_workload(fs);
		ck_assert_msg(acked < SWEEP_FILES, "%s: nothing failed", spec);
		ck_assert_int_eq(lfs_unmount(fs), -EIO);
		lfs_fault_disarm();
		fs = testfs_mount();
		for (int i = 0; i < acked; i++) {
			char name[16];
			snprintf(name, sizeof(name), "f%d", i);
			assert_file(fs, name, sweep_len(i), (unsigned)i + 10);
		}
		ck_assert_int_eq(lfs_unmount(fs), 0);
		assert_fsck_clean();
		testfs_remove();
	}
}

START_TEST(sweep_pwrite_eio) { sweep("pwrite", "EIO"); }
END_TEST
START_TEST(sweep_pwrite_short) { sweep("pwrite", "short"); }
END_TEST
START_TEST(sweep_fdatasync_eio) { sweep("fdatasync", "EIO"); }
END_TEST

/*
 * Mounting after a crash, with the Nth read or allocation failing: the
 * mount fails, and then has written nothing, or it succeeds, and then
 * has every fsynced file.  Roll-forward must not take a failed read for
 * the end of the log.
 */
#define CRASH_FILES 8

static uint8_t *
read_image(size_t *len)
{
	FILE *f = fopen(testfs_path, "rb");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	uint8_t *buf = malloc(*len);
	ck_assert_uint_eq(fread(buf, 1, *len, f), *len);
	fclose(f);
	return buf;
}

static void
write_image(const uint8_t *buf, size_t len)
{
	FILE *f = fopen(testfs_path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
}

static void
mount_sweep(enum lfs_fault_op kind, const char *op, const char *err)
{
	/* an image with a log to roll forward: fsynced groups after the
	 * mount's checkpoint, in several segments, one unlinked file */
	testfs_make(8 << 20, 256 << 10);
	struct lfs_fs *fs = testfs_mount();
	for (int i = 0; i < CRASH_FILES; i++) {
		char name[16];
		snprintf(name, sizeof(name), "c%d", i);
		uint64_t ino;
		ck_assert_int_eq(write_file(fs, name, sweep_len(i), (unsigned)i + 40, &ino), 0);
		ck_assert_int_eq(lfs_fsync(fs, ino, false), 0);
		lfs_forget(fs, ino, 1);
	}
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "c1"), 0);
	ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
	lfs_abandon(fs); /* crash */
	size_t len;
	uint8_t *pristine = read_image(&len);

	ck_assert_int_eq(lfs_fault_arm(""), 0);
	fs = testfs_mount();
	uint64_t total = lfs_fault_count(kind);
	lfs_fault_disarm();
	ck_assert_int_eq(lfs_unmount(fs), 0);
	ck_assert_uint_gt(total, 2);
	uint64_t refused = 0;
	for (uint64_t n = 1; n <= total; n++) {
		char spec[64];
		snprintf(spec, sizeof(spec), "%s:%llu:%s", op, (unsigned long long)n, err);
		write_image(pristine, len);
		struct lfs_opts o;
		lfs_opts_default(&o);
		o.ckpt_interval_s = 0;
		o.fault = spec;
		fs = NULL;
		int e = lfs_mount(testfs_path, &o, &fs);
		uint64_t writes = lfs_fault_count(LFS_FAULT_PWRITE);
		lfs_fault_disarm();
		if (e) {
			ck_assert_msg(e == -EIO || e == -ENOMEM, "%s: mount: %s", spec, strerror(-e));
			refused++;
			if (writes == 0) {  /* failed before the mount's checkpoint */
				size_t len2;
				uint8_t *now = read_image(&len2);
				ck_assert_msg(len2 == len && memcmp(now, pristine, len) == 0,
					      "%s: the failed mount changed the image", spec);
				free(now);
			}
			fs = testfs_mount();
		} else {
			/* the counts the mount made agree with its segments, also
			 * when the list of segments it names could not grow and it
			 * scanned them all (lfs_seg_load_done) */
			testfs_fsck_clean(fs);
		}
		for (int i = 0; i < CRASH_FILES; i++) {
			char name[16];
			struct stat st;
			snprintf(name, sizeof(name), "c%d", i);
			if (i == 1)
				ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, name, &st), -ENOENT);
			else
				assert_file(fs, name, sweep_len(i), (unsigned)i + 40);
		}
		ck_assert_int_eq(lfs_unmount(fs), 0);
	}
	/* roll-forward itself reads and allocates: those mounts must fail */
	ck_assert_uint_gt(refused, total / 2);
	assert_fsck_clean();
	free(pristine);
	testfs_remove();
}

START_TEST(mount_read_errors) { mount_sweep(LFS_FAULT_PREAD, "pread", "EIO"); }
END_TEST
START_TEST(mount_enomem) { mount_sweep(LFS_FAULT_ALLOC, "alloc", "ENOMEM"); }
END_TEST

/*
 * ENOMEM at the Nth allocation of a workload that touches every kind of
 * update: each operation either succeeds or fails with ENOMEM and
 * changes nothing; after an fsync and a crash, the image holds exactly
 * what the operations that succeeded did.
 */
struct model {
	bool exists[6];
	size_t len[6];              /* the size */
	size_t data[6];             /* how much of it is the pattern; zeros follow */
	unsigned seed[6];
	mode_t mode[6];
	bool xattr[6];
	bool in_dir[6];             /* under "d" instead of the root */
};

static const char *const mnames[6] = { "m0", "m1", "m2", "m3", "m4", "m5" };

/* The directory a file is in: the root or "d"; 0 or -ENOMEM. */
static int
dir_ino(struct lfs_fs *fs, bool in_dir, uint64_t *dir)
{
	struct stat st;
	*dir = LFS_ROOT_INO;
	if (!in_dir)
		return 0;
	int err = lfs_lookup(fs, LFS_ROOT_INO, "d", &st);
	if (!err) {
		lfs_forget(fs, st.st_ino, 1);
		*dir = st.st_ino;
	}
	return err;
}

static void
expect_ok_or_enomem(int err, const char *what)
{
	ck_assert_msg(err == 0 || err == -ENOMEM, "%s: %s", what, strerror(-err));
}

static void
enomem_workload(struct lfs_fs *fs, struct model *m, bool *have_dir)
{
	struct stat st;
	int err = lfs_mkdir(fs, LFS_ROOT_INO, "d", 0755, &testfs_me, &st);
	expect_ok_or_enomem(err, "mkdir");
	if (!err) {
		*have_dir = true;
		lfs_forget(fs, st.st_ino, 1);
	}
	for (int i = 0; i < 6; i++) {
		err = lfs_create(fs, LFS_ROOT_INO, mnames[i], 0644, true, &testfs_me, &st);
		expect_ok_or_enomem(err, "create");
		if (err)
			continue;
		m->exists[i] = true;
		m->mode[i] = 0644;
		size_t len = sweep_len(i);
		uint8_t *buf = malloc(len);
		fill_pattern(buf, len, (unsigned)i + 70);
		ssize_t n = lfs_write(fs, st.st_ino, buf, len, 0, NULL);
		free(buf);
		expect_ok_or_enomem(n < 0 ? (int)n : 0, "write");
		/* a short write is a success for its bytes */
		m->len[i] = m->data[i] = n > 0 ? (size_t)n : 0;
		m->seed[i] = (unsigned)i + 70;
		lfs_forget(fs, st.st_ino, 1);
	}
	for (int i = 0; i < 6; i++) {
		uint64_t dir;
		if (!m->exists[i])
			continue;
		err = dir_ino(fs, m->in_dir[i], &dir);
		if (!err)
			err = lfs_lookup(fs, dir, mnames[i], &st);
		expect_ok_or_enomem(err, "lookup");
		if (err)
			continue;
		uint64_t ino = st.st_ino;
		struct stat a = { .st_mode = 0600 };
		err = lfs_setattr(fs, ino, &a, LFS_SET_MODE, &st);
		expect_ok_or_enomem(err, "chmod");
		if (!err)
			m->mode[i] = 0600;
		err = lfs_setxattr(fs, ino, "user.k", "v", 1, 0);
		expect_ok_or_enomem(err, "setxattr");
		if (!err)
			m->xattr[i] = true;
		if (i == 2 || i == 4) {
			struct stat t = { .st_size = 3000 };
			err = lfs_setattr(fs, ino, &t, LFS_SET_SIZE, &st);
			expect_ok_or_enomem(err, "truncate");
			if (!err) {
				m->len[i] = 3000;
				if (m->data[i] > 3000)
					m->data[i] = 3000;
			}
		}
		lfs_forget(fs, ino, 1);
		uint64_t d;
		if (i == 3 && *have_dir && !dir_ino(fs, true, &d)) {
			err = lfs_rename(fs, LFS_ROOT_INO, mnames[i], d, mnames[i], 0);
			expect_ok_or_enomem(err, "rename");
			if (!err)
				m->in_dir[i] = true;
		}
		if (i == 5) {
			err = lfs_unlink(fs, dir, mnames[i]);
			expect_ok_or_enomem(err, "unlink");
			if (!err)
				m->exists[i] = false;
		}
	}
}

static void
assert_model(struct lfs_fs *fs, const struct model *m, bool have_dir)
{
	struct stat st;
	ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, "d", &st), have_dir ? 0 : -ENOENT);
	if (have_dir)
		lfs_forget(fs, st.st_ino, 1);
	for (int i = 0; i < 6; i++) {
		uint64_t dir;
		ck_assert_int_eq(dir_ino(fs, m->in_dir[i], &dir), 0);
		int err = lfs_lookup(fs, dir, mnames[i], &st);
		ck_assert_msg(err == (m->exists[i] ? 0 : -ENOENT), "%s: lookup %d", mnames[i], err);
		if (!m->exists[i])
			continue;
		if (m->in_dir[i])
			ck_assert_int_eq(lfs_lookup(fs, LFS_ROOT_INO, mnames[i], &st), -ENOENT);
		ck_assert_msg((st.st_mode & 07777) == m->mode[i], "%s: mode %o", mnames[i], st.st_mode);
		ck_assert_uint_eq(st.st_nlink, 1);
		ck_assert_int_eq(st.st_size, (off_t)m->len[i]);
		size_t len = m->len[i];
		uint8_t *want = calloc(1, len + 1), *got = malloc(len + 1);
		fill_pattern(want, m->data[i], m->seed[i]);
		ck_assert_int_eq(lfs_read(fs, st.st_ino, got, len + 1, 0), (ssize_t)len);
		ck_assert_msg(memcmp(want, got, len) == 0, "%s: content", mnames[i]);
		free(want);
		free(got);
		char v[4];
		ck_assert_int_eq(lfs_getxattr(fs, st.st_ino, "user.k", v, sizeof(v)), m->xattr[i] ? 1 : -ENODATA);
		lfs_forget(fs, st.st_ino, 1);
	}
}

START_TEST(enomem_sweep)
{
	testfs_make(16 << 20, 512 << 10);
	size_t len;
	struct lfs_fs *fs = testfs_mount();
	ck_assert_int_eq(lfs_unmount(fs), 0);
	uint8_t *fresh = read_image(&len);
	struct model m0 = { 0 };
	bool dir0 = false;
	fs = testfs_mount();
	ck_assert_int_eq(lfs_fault_arm(""), 0);
	enomem_workload(fs, &m0, &dir0);
	uint64_t total = lfs_fault_count(LFS_FAULT_ALLOC);
	lfs_fault_disarm();
	ck_assert_int_eq(lfs_unmount(fs), 0);
	fs = testfs_mount();
	assert_model(fs, &m0, dir0);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	ck_assert_uint_gt(total, 50);
	for (uint64_t n = 1; n <= total; n++) {
		char spec[64];
		snprintf(spec, sizeof(spec), "alloc:%llu:ENOMEM", (unsigned long long)n);
		write_image(fresh, len);
		fs = testfs_mount();
		struct model m = { 0 };
		bool have_dir = false;
		ck_assert_int_eq(lfs_fault_arm(spec), 0);
		enomem_workload(fs, &m, &have_dir);
		lfs_fault_disarm();
		/* nothing failed for good: the filesystem goes on */
		ck_assert_int_eq(lfs_fsync(fs, LFS_ROOT_INO, false), 0);
		lfs_abandon(fs); /* crash: what was fsynced must be all there is */
		fs = testfs_mount();
		assert_model(fs, &m, have_dir);
		ck_assert_int_eq(lfs_unmount(fs), 0);
		assert_fsck_clean();
	}
	free(fresh);
	testfs_remove();
}
END_TEST

CHECK_MAIN("fault", "fault", 600, rules, failed_fdatasync_is_final, failed_pwrite_is_final,
	   sweep_pwrite_eio, sweep_pwrite_short, sweep_fdatasync_eio, mount_read_errors, mount_enomem,
	   enomem_sweep)
