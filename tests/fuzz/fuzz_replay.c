/*
 * fuzz_replay.c — run the fuzz target (fuzz_mount.c) without libFuzzer:
 * every input of the seed corpus and of the regression inputs (each a
 * crash the fuzzer once found), then, from each seed, a fixed number of
 * inputs made by the target's own structure-aware mutator with fixed
 * seeds.  make check runs it (so under gcc's ASan and UBSan too); the
 * same inputs give the same images, every run.
 *
 *   fuzz_replay [-n MUTATIONS_PER_SEED] [FILE|DIR]...
 *
 * Without FILE or DIR, $top_srcdir/tests/fuzz/corpus and .../regress.
 * FUZZ_MUTATIONS sets what -n does; FUZZ_MUTATIONS_ELSEWHERE=M leaves
 * the first M mutations of each input to another run: scripts/test.sh's
 * sanitizer pass runs the first half, its plain pass the rest.
 *
 * First it checks that the image the inputs edit holds every structure
 * the decoders read, through the library (a decoder with nothing to read
 * is never fuzzed): kept checkpoints and snapshots in the history, held
 * entries in more than one page of the held table, replaced-address
 * lists and relink records rolled forward, a file's attributes in
 * leaves and value blocks, unwritten blocks, views of kept checkpoints;
 * and that the editor finds an instance of every target (imgedit.h).
 */
#include "imgedit.h"
#include "lfs_int.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
extern unsigned long long fuzz_mounted, fuzz_unmounted;
const char *fuzz_base_path(void);
const struct img *fuzz_base_index(void);

#define INPUT_MAX 4096

static unsigned long long executions;
static unsigned mutations = 20;
/* mutations below this one are made (each builds on the one before) but
 * run elsewhere: FUZZ_MUTATIONS_ELSEWHERE, as crash_lib.sh's seeds */
static unsigned first_run;
static unsigned rng_state = 1;

/* libFuzzer's byte-level mutator, which the custom one falls back to:
 * here a byte changed, inserted or removed. */
size_t
LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size)
{
	rng_state = rng_state * 1103515245u + 12345u;
	unsigned r = rng_state >> 8;
	if (size == 0 || (r % 3 == 0 && size < max_size)) {
		size_t at = size ? r / 3 % size : 0;
		memmove(data + at + 1, data + at, size - at);
		data[at] = (uint8_t)(r >> 16);
		return size + 1;
	}
	if (r % 3 == 1 && size > 1) {
		size_t at = r / 3 % size;
		memmove(data + at, data + at + 1, size - at - 1);
		return size - 1;
	}
	data[r / 3 % size] ^= (uint8_t)(1u << (r >> 20) % 8);
	return size;
}

static int missing;

static void
expect(bool ok, const char *what, unsigned long long n)
{
	fprintf(stderr, "fuzz_replay: base image: %-50s %s (%llu)\n", what, ok ? "yes" : "MISSING", n);
	missing += !ok;
}

/* What a read-only mount of the base image decodes, rolling forward. */
static void
check_decoded(struct lfs_fs *fs)
{
	expect(fs->hist.count >= 3, "checkpoint history: kept checkpoints", fs->hist.count);
	uint64_t snaps = 0;
	for (uint64_t i = 0; i < fs->hist.tab.nslots; i++)
		snaps += (fs->hist.ent[i].flags & LFS_HIST_SNAPSHOT) != 0;
	expect(snaps >= 2, "checkpoint history: snapshots", snaps);
	expect(fs->held.tab.npages >= 2, "held table: pages", fs->held.tab.npages);
	expect(fs->held.count > 0, "held table: entries", fs->held.count);
	expect(fs->rf_listed > 0, "roll-forward: inodes accounted from REPL lists", fs->rf_listed);
	expect(fs->rf_relinked > 0, "roll-forward: relink records applied", fs->rf_relinked);
	/* 40 reserved, 2 written, 16 more past the end, 4 punched (fuzz_mount.c) */
	expect(fs->unwritten == 50, "unwritten blocks, traded by roll-forward", fs->unwritten);
	struct stat st;
	uint64_t blocks = 0;
	char val[8192];
	ssize_t len = -1;
	if (lfs_lookup(fs, LFS_ROOT_INO, "xa", &st) == 0) {
		blocks = (uint64_t)st.st_blocks * 512 / fs->bsize;
		len = lfs_getxattr(fs, st.st_ino, "user.big", val, sizeof(val));
		lfs_forget(fs, st.st_ino, 1);
	}
	expect(blocks >= 4 && len > (ssize_t)fs->bsize, "xattrs in a root, leaves and value blocks", blocks);
	struct lfs_ckpt_info *ci;
	size_t n = 0;
	uint64_t held = 0;
	if (lfs_snapshot_list(fs, &ci, &n, &held) == 0)
		free(ci);
	expect(n >= 3 && held > 0, "snapshot list: kept checkpoints, bytes held", n);
	struct lfs_fs *v;
	bool view = lfs_view_open(fs, "first", false, &v) == 0;
	if (view) {
		view = lfs_lookup(v, LFS_ROOT_INO, "xa", &st) == 0;
		lfs_abandon(v);
	}
	expect(view, "a view of the snapshot \"first\"", view);
}

static void
check_base(void)
{
	struct lfs_opts o;
	lfs_opts_default(&o);
	o.readonly = true;
	o.ckpt_interval_s = 0;
	struct lfs_fs *fs;
	int err = lfs_mount(fuzz_base_path(), &o, &fs);
	expect(err == 0, "mounts read-only", (unsigned long long)-err);
	if (!err) {
		check_decoded(fs);
		lfs_abandon(fs);
	}
	o.snapshot = "second"; /* lfs -o snapshot=second */
	err = lfs_mount(fuzz_base_path(), &o, &fs);
	expect(err == 0, "a mount of the snapshot \"second\"", (unsigned long long)-err);
	if (!err)
		lfs_abandon(fs);
	const struct img *im = fuzz_base_index();
	for (unsigned t = 0; t < IMG_NTARGETS; t++) {
		char what[64];
		snprintf(what, sizeof(what), "edit target %u: %s", t, img_target_name(t));
		expect(im->count[t] > 0, what, im->count[t]);
	}
}

static int
run_file(const char *path)
{
	static uint8_t in[INPUT_MAX], buf[INPUT_MAX];
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	size_t n = fread(in, 1, sizeof(in), f);
	fclose(f);
	LLVMFuzzerTestOneInput(in, n);
	executions++;
	/* the mutator's seed comes from the input, so each file gets its own */
	unsigned seed = 2166136261u;
	for (size_t i = 0; i < n; i++)
		seed = (seed ^ in[i]) * 16777619u;
	memcpy(buf, in, n);
	size_t len = n;
	for (unsigned i = 0; i < mutations; i++) {
		rng_state = seed + i;
		len = LLVMFuzzerCustomMutator(buf, len, sizeof(buf), seed + i);
		if (i < first_run)
			continue;
		LLVMFuzzerTestOneInput(buf, len);
		executions++;
	}
	return 0;
}

static int
run_path(const char *path, unsigned *files)
{
	DIR *d = opendir(path);
	if (!d) {
		(*files)++;
		return run_file(path);
	}
	struct dirent **names;
	int n = scandir(path, &names, NULL, alphasort), err = 0;
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			char p[4096];
			snprintf(p, sizeof(p), "%s/%s", path, names[i]->d_name);
			(*files)++;
			if (run_file(p))
				err = -1;
		}
		free(names[i]);
	}
	free(names);
	closedir(d);
	return n < 0 ? -1 : err;
}

/* env NAME as a count, or DEF */
static unsigned
env_count(const char *name, unsigned def)
{
	const char *v = getenv(name);
	return v && *v ? (unsigned)strtoul(v, NULL, 10) : def;
}

int
main(int argc, char **argv)
{
	int c;
	mutations = env_count("FUZZ_MUTATIONS", mutations);
	first_run = env_count("FUZZ_MUTATIONS_ELSEWHERE", 0);
	while ((c = getopt(argc, argv, "n:")) != -1) {
		if (c == 'n') {
			mutations = (unsigned)strtoul(optarg, NULL, 10);
		} else {
			fprintf(stderr, "usage: fuzz_replay [-n MUTATIONS_PER_SEED] [FILE|DIR]...\n");
			return 2;
		}
	}
	if (first_run && first_run >= mutations) {
		fprintf(stderr, "fuzz_replay: FUZZ_MUTATIONS_ELSEWHERE=%u leaves none of %u mutations here\n",
			first_run, mutations);
		return 2;
	}
	LLVMFuzzerInitialize(&argc, &argv);
	check_base();
	if (missing) {
		fprintf(stderr, "fuzz_replay: the base image lacks %d of the structures above: the decoders of "
				"those are not fuzzed\n", missing);
		return 1;
	}
	unsigned files = 0;
	int err = 0;
	if (optind < argc) {
		for (int i = optind; i < argc; i++)
			err |= run_path(argv[i], &files);
	} else {
		const char *top = getenv("top_srcdir");
		char p[4096];
		snprintf(p, sizeof(p), "%s/tests/fuzz/corpus", top ? top : ".");
		err |= run_path(p, &files);
		snprintf(p, sizeof(p), "%s/tests/fuzz/regress", top ? top : ".");
		err |= run_path(p, &files);
	}
	fprintf(stderr,
		"fuzz_replay: %u inputs and mutations %u to %u of each: %llu executions (%llu mounted read-write, "
		"%llu of them unmounted cleanly), no crash\n",
		files, first_run + 1, mutations, executions, fuzz_mounted, fuzz_unmounted);
	if (files == 0) {
		fprintf(stderr, "fuzz_replay: no inputs found\n");
		return 1;
	}
	return err ? 1 : 0;
}
