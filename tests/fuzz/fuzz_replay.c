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
 */
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

#define INPUT_MAX 4096

static unsigned long long executions;
static unsigned mutations = 48;
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

int
main(int argc, char **argv)
{
	int c;
	while ((c = getopt(argc, argv, "n:")) != -1) {
		if (c == 'n') {
			mutations = (unsigned)strtoul(optarg, NULL, 10);
		} else {
			fprintf(stderr, "usage: fuzz_replay [-n MUTATIONS_PER_SEED] [FILE|DIR]...\n");
			return 2;
		}
	}
	LLVMFuzzerInitialize(&argc, &argv);
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
		"fuzz_replay: %u inputs and %u mutations of each: %llu executions (%llu mounted read-write, "
		"%llu of them unmounted cleanly), no crash\n",
		files, mutations, executions, fuzz_mounted, fuzz_unmounted);
	if (files == 0) {
		fprintf(stderr, "fuzz_replay: no inputs found\n");
		return 1;
	}
	return err ? 1 : 0;
}
