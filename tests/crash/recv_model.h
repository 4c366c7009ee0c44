/*
 * recv_model.h — crashsim -V: receives (lfs_recv_begin, a tree made in
 * the staged directory, lfs_recv_commit or lfs_recv_abort) among the
 * workload's operations, and what every crash state must show of them:
 * a snapshot whose commit returned before the state's flush is there,
 * whole; one whose commit had not begun (or that was given up) is not;
 * one in between is there whole or not at all; and once mounted
 * read-write, no staged tree is left (recv_model.c).
 */
#ifndef CRASH_RECV_MODEL_H
#define CRASH_RECV_MODEL_H

#include "lfs_int.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define RECV_MAX 6
#define RECV_FILES 8

struct recv_model {
	char name[16];
	uint64_t ino, sub;          /* the staged directory, its subdirectory */
	uint32_t gen;
	struct recv_file {
		bool in_sub;
		char name[16];
		uint8_t *data;
		size_t size;
	} f[RECV_FILES];
	int n, want;                /* files made, to make before the end */
	off_t commit_begun, commit_done; /* trace lengths; 0: not committed */
	bool open;                  /* begun, neither committed nor given up */
};

struct recv_set {
	struct recv_model r[RECV_MAX];
	int n;
	uint64_t (*rnd_below)(uint64_t);
	off_t (*trace_len)(const char *);
	const char *trace;
	uint64_t committed, aborted; /* by the workload */
};

/* One step of the current receive, or a new one (0, or -errno). */
int recvsim_op(struct recv_set *rs, struct lfs_fs *fs);
/* The received snapshots of fs (a state made durable up to `durable`)
 * as they must be; failures and views read added to. */
void recvsim_check(const struct recv_set *rs, struct lfs_fs *fs, off_t durable, const char *what, uint64_t *failures,
		   uint64_t *views);
/* fs mounted read-write: no staged tree any receive made is found, and
 * the snapshots are as recvsim_check wants. */
void recvsim_check_gone(const struct recv_set *rs, struct lfs_fs *fs, off_t durable, const char *what,
			uint64_t *failures, uint64_t *views);
/* The run's receives said; 1 if it exercised none (a failure). */
unsigned recvsim_report(const struct recv_set *rs, unsigned seed, uint64_t views, bool full);
/* -F: every received snapshot in fs deleted (0, or -errno said). */
int recvsim_delete_all(const struct recv_set *rs, struct lfs_fs *fs, const char *what);
void recvsim_free(struct recv_set *rs);

#endif
