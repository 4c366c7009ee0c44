/* fault.c — layer 1: the fault injector of fault.h: rules, counters,
 * allocators. */
#include "fault.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MAX_RULES 8

struct rule {
	enum lfs_fault_op op;
	uint64_t nth;
	int err;                    /* -errno or LFS_FAULT_SHORT */
};

/* Rules change only while the core is idle (tests arm them between
 * calls, the daemon before it mounts); the counters are atomic because
 * the FUSE threads, the control server and the tick thread all count. */
static struct rule rules[MAX_RULES];
static int nrules;
static atomic_bool armed;
static atomic_uint_fast64_t counts[LFS_FAULT_NOPS];

static const char *const op_names[LFS_FAULT_NOPS] = { "pread", "pwrite", "fdatasync", "alloc", "discard" };

static int
parse_rule(const char *s, size_t len, struct rule *r)
{
	char buf[64];
	if (len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	char *nth = strchr(buf, ':');
	char *err = nth ? strchr(nth + 1, ':') : NULL;
	if (!err)
		return -EINVAL;
	*nth++ = '\0';
	*err++ = '\0';
	int op = -1;
	for (int i = 0; i < LFS_FAULT_NOPS; i++)
		if (strcmp(buf, op_names[i]) == 0)
			op = i;
	char *end;
	unsigned long long n = strtoull(nth, &end, 10);
	if (op < 0 || *nth < '0' || *nth > '9' || *end || n == 0)
		return -EINVAL;
	r->op = (enum lfs_fault_op)op;
	r->nth = n;
	if (strcmp(err, "EIO") == 0 && op != LFS_FAULT_ALLOC)
		r->err = -EIO;
	else if (strcmp(err, "ENOSPC") == 0 && op != LFS_FAULT_ALLOC)
		r->err = -ENOSPC;
	else if (strcmp(err, "ENOMEM") == 0 && op == LFS_FAULT_ALLOC)
		r->err = -ENOMEM;
	else if (strcmp(err, "EOPNOTSUPP") == 0 && op == LFS_FAULT_DISCARD)
		r->err = -EOPNOTSUPP;
	else if (strcmp(err, "short") == 0 && op == LFS_FAULT_PWRITE)
		r->err = LFS_FAULT_SHORT;
	else
		return -EINVAL;
	return 0;
}

int
lfs_fault_arm(const char *spec)
{
	struct rule parsed[MAX_RULES];
	int n = 0;
	for (const char *s = spec; *s;) {
		size_t len = strcspn(s, "+");
		if (n == MAX_RULES || parse_rule(s, len, &parsed[n]))
			return -EINVAL;
		n++;
		s += len;
		if (*s == '+' && !*++s)
			return -EINVAL;
	}
	atomic_store(&armed, false);
	memcpy(rules, parsed, sizeof(parsed[0]) * (size_t)n);
	nrules = n;
	for (int i = 0; i < LFS_FAULT_NOPS; i++)
		atomic_store(&counts[i], 0);
	atomic_store(&armed, true);
	return 0;
}

void
lfs_fault_disarm(void)
{
	atomic_store(&armed, false);
	nrules = 0;
	for (int i = 0; i < LFS_FAULT_NOPS; i++)
		atomic_store(&counts[i], 0);
}

uint64_t
lfs_fault_count(enum lfs_fault_op op)
{
	return atomic_load(&counts[op]);
}

int
lfs_fault_check(enum lfs_fault_op op)
{
	if (!atomic_load_explicit(&armed, memory_order_relaxed))
		return 0;
	uint64_t n = atomic_fetch_add(&counts[op], 1) + 1;
	for (int i = 0; i < nrules; i++)
		if (rules[i].op == op && rules[i].nth == n)
			return rules[i].err;
	return 0;
}

static void (*_Atomic hooks[LFS_FAULT_NOPS])(void);

void
lfs_fault_set_hook(enum lfs_fault_op op, void (*hook)(void))
{
	atomic_store(&hooks[op], hook);
}

void
lfs_fault_hook(enum lfs_fault_op op)
{
	void (*hook)(void) = atomic_load_explicit(&hooks[op], memory_order_relaxed);
	if (hook)
		hook();
}

/* Tables as large as the filesystem (a TiB has a million segments) are
 * backed by huge pages where the kernel gives them: the first touch of
 * each 4 KiB page is a fault, and a large mount would take thousands.
 * Only the 2 MiB-aligned part of an allocation can be. */
#define HUGE_PAGE (2u << 20)

static void
advise_huge(void *p, size_t bytes)
{
	uintptr_t a = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
	uintptr_t e = ((uintptr_t)p + bytes) & ~(uintptr_t)(HUGE_PAGE - 1);
	if (e > a)
		(void)madvise((void *)a, e - a, MADV_HUGEPAGE); /* a hint */
}

void *
lfs_malloc(size_t size)
{
	if (lfs_fault_check(LFS_FAULT_ALLOC))
		return NULL;
	if (size < HUGE_PAGE)
		return malloc(size);
	/* aligned, so that all of it can be (its contents are the
	 * caller's to write) */
	void *p;
	if (posix_memalign(&p, HUGE_PAGE, size))
		return NULL;
	advise_huge(p, size);
	return p;
}

void *
lfs_calloc(size_t n, size_t size)
{
	if (lfs_fault_check(LFS_FAULT_ALLOC))
		return NULL;
	/* calloc's own memory: a large one is fresh from the kernel, zero
	 * without being touched, and stays untouched where the caller
	 * leaves it so */
	void *p = calloc(n, size);
	if (p && size && n >= 2 * (size_t)HUGE_PAGE / size)
		advise_huge(p, n * size);
	return p;
}

void *
lfs_realloc(void *p, size_t size)
{
	return lfs_fault_check(LFS_FAULT_ALLOC) ? NULL : realloc(p, size);
}

int
lfs_array_room(void *arrayp, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 64;
	while (n < need)
		n *= 2;
	void **a = arrayp;
	void *p = lfs_realloc(*a, n * elem);
	if (!p)
		return -ENOMEM;
	*a = p;
	*cap = n;
	return 0;
}
