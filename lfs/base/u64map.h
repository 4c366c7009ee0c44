/*
 * u64map.h — a small hash map from 64-bit keys to pointers, used for the
 * inode cache, per-inode page and node caches and directory indexes.
 * Not thread-safe: callers hold the filesystem lock.
 */
#ifndef LFS_U64MAP_H
#define LFS_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map_ent {
	uint64_t key;
	void *val;
	struct u64map_ent *next;
};

struct u64map {
	struct u64map_ent **tab;
	size_t nbuckets;            /* power of two, or 0 before first insert */
	size_t count;
	struct u64map_ent *spare;   /* entries kept for puts that must not fail */
	size_t nspare;
	size_t reserved;            /* see u64map_reserve */
};

void u64map_init(struct u64map *m);
void u64map_free(struct u64map *m);    /* frees entries, not values */
/* Empty the map, keeping what u64map_reserve set aside. */
void u64map_clear(struct u64map *m);
/* Make room for n entries in all: until the map holds n, u64map_put
 * allocates nothing and cannot fail.  0 or -ENOMEM. */
int u64map_reserve(struct u64map *m, size_t n);
void *u64map_get(const struct u64map *m, uint64_t key);
int u64map_put(struct u64map *m, uint64_t key, void *val);  /* 0 or -ENOMEM; replaces */
void *u64map_del(struct u64map *m, uint64_t key);           /* returns old value */
/* Calls fn for each entry; fn may not modify the map. */
void u64map_each(const struct u64map *m, void (*fn)(uint64_t key, void *val, void *ctx), void *ctx);
/* Deletes the entries for which fn returns true, calling it once per
 * entry; allocates nothing.  fn may free its value but not use the map. */
void u64map_remove_if(struct u64map *m, int (*fn)(uint64_t key, void *val, void *ctx), void *ctx);
/* Fills keys (count entries, caller-allocated) and sorts them ascending. */
void u64map_sorted_keys(const struct u64map *m, uint64_t *keys);
/* qsort's comparison of uint64_t, ascending. */
int u64_cmp(const void *a, const void *b);

#endif
