/*
 * fault.h — fault injection below everything, a testing aid.
 *
 * The block device (bdev.c) asks before every pread, pwrite,
 * fdatasync and discard of the image, and the core allocates through lfs_malloc(),
 * lfs_calloc() and lfs_realloc(), which ask before every allocation.
 * A rule makes the Nth such operation, counted from when the rules were
 * armed, fail once:
 *
 *   pread:3:EIO           the 3rd pread fails with EIO
 *   pwrite:2:short        the 2nd pwrite writes its first half, then EIO
 *   pwrite:1:ENOSPC       the 1st pwrite writes nothing, ENOSPC
 *   fdatasync:4:EIO       the 4th fdatasync does not sync, EIO
 *   discard:1:EOPNOTSUPP  the 1st discard discards nothing, EOPNOTSUPP
 *   alloc:100:ENOMEM      the 100th allocation returns NULL
 *
 * Several rules are joined with '+' ("fdatasync:4:EIO+alloc:9:ENOMEM").
 * The unit tests arm rules directly; the daemon takes them from the
 * fault= mount option or the LFS_FAULT environment variable (lfs(8)).
 * Disarmed, each check is one atomic load.
 */
#ifndef LFS_FAULT_H
#define LFS_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum lfs_fault_op {
	LFS_FAULT_PREAD,
	LFS_FAULT_PWRITE,
	LFS_FAULT_SYNC,
	LFS_FAULT_ALLOC,
	LFS_FAULT_DISCARD,
	LFS_FAULT_NOPS
};

/* What an injected pwrite fault does besides failing. */
#define LFS_FAULT_SHORT (-1000) /* lfs_fault_check's answer: write half, then EIO */

/* Parse SPEC (the grammar above), reset the counters and arm its rules;
 * -EINVAL (nothing armed) on a malformed spec. */
int lfs_fault_arm(const char *spec);
/* Reset the counters and forget all rules: nothing fails, nothing counts. */
void lfs_fault_disarm(void);
/* How many operations of this kind were asked about since arming. */
uint64_t lfs_fault_count(enum lfs_fault_op op);
/* Called before each operation: 0 to go ahead, else -errno (or
 * LFS_FAULT_SHORT for a pwrite). */
int lfs_fault_check(enum lfs_fault_op op);

/* A test's function called on the thread about to make each pread,
 * pwrite, fdatasync or discard of the image, just before it (NULL:
 * none): a test holds a read, a write or a flush there to see what goes
 * on meanwhile.  Never set by
 * the daemon. */
void lfs_fault_set_hook(enum lfs_fault_op op, void (*hook)(void));
void lfs_fault_hook(enum lfs_fault_op op);

void *lfs_malloc(size_t size);
void *lfs_calloc(size_t n, size_t size);
void *lfs_realloc(void *p, size_t size);
/* Room for `need` elements of `elem` bytes in the array *arrayp holds
 * `*cap` of, doubling (from 64); the array is kept on -ENOMEM. */
int lfs_array_room(void *arrayp, size_t *cap, size_t need, size_t elem);

#endif
