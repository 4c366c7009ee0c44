/* u64map.c — layer 1: chained hash map with power-of-two growth. */
#include "u64map.h"
#include "fault.h"

#include <errno.h>
#include <stdlib.h>

static size_t
bucket(const struct u64map *m, uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)key & (m->nbuckets - 1);
}

void
u64map_init(struct u64map *m)
{
	m->tab = NULL;
	m->nbuckets = 0;
	m->count = 0;
	m->spare = NULL;
	m->nspare = 0;
	m->reserved = 0;
}

static void
free_chain(struct u64map_ent *e)
{
	while (e) {
		struct u64map_ent *n = e->next;
		free(e);
		e = n;
	}
}

void
u64map_free(struct u64map *m)
{
	for (size_t i = 0; i < m->nbuckets; i++)
		free_chain(m->tab[i]);
	free_chain(m->spare);
	free(m->tab);
	u64map_init(m);
}

/* A deleted entry is kept while the reservation needs it. */
static void
release(struct u64map *m, struct u64map_ent *e)
{
	if (m->count + m->nspare < m->reserved) {
		e->next = m->spare;
		m->spare = e;
		m->nspare++;
	} else {
		free(e);
	}
}

void
u64map_clear(struct u64map *m)
{
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct u64map_ent *e = m->tab[i];
		m->tab[i] = NULL;
		while (e) {
			struct u64map_ent *n = e->next;
			m->count--;
			release(m, e);
			e = n;
		}
	}
}

void *
u64map_get(const struct u64map *m, uint64_t key)
{
	if (!m->nbuckets)
		return NULL;
	for (struct u64map_ent *e = m->tab[bucket(m, key)]; e; e = e->next)
		if (e->key == key)
			return e->val;
	return NULL;
}

static int
grow(struct u64map *m)
{
	size_t nb = m->nbuckets ? m->nbuckets * 2 : 16;
	struct u64map_ent **tab = lfs_calloc(nb, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	struct u64map old = *m;
	m->tab = tab;
	m->nbuckets = nb;
	for (size_t i = 0; i < old.nbuckets; i++) {
		struct u64map_ent *e = old.tab[i];
		while (e) {
			struct u64map_ent *n = e->next;
			size_t b = bucket(m, e->key);
			e->next = m->tab[b];
			m->tab[b] = e;
			e = n;
		}
	}
	free(old.tab);
	return 0;
}

int
u64map_put(struct u64map *m, uint64_t key, void *val)
{
	if (m->nbuckets) {
		for (struct u64map_ent *e = m->tab[bucket(m, key)]; e; e = e->next)
			if (e->key == key) {
				e->val = val;
				return 0;
			}
	}
	if (m->count >= m->nbuckets) {
		int err = grow(m);
		if (err)
			return err;
	}
	struct u64map_ent *e = m->spare;
	if (e) {
		m->spare = e->next;
		m->nspare--;
	} else if (!(e = lfs_malloc(sizeof(*e)))) {
		return -ENOMEM;
	}
	size_t b = bucket(m, key);
	e->key = key;
	e->val = val;
	e->next = m->tab[b];
	m->tab[b] = e;
	m->count++;
	return 0;
}

void *
u64map_del(struct u64map *m, uint64_t key)
{
	if (!m->nbuckets)
		return NULL;
	for (struct u64map_ent **pp = &m->tab[bucket(m, key)]; *pp; pp = &(*pp)->next) {
		struct u64map_ent *e = *pp;
		if (e->key == key) {
			void *v = e->val;
			*pp = e->next;
			m->count--;
			release(m, e);
			return v;
		}
	}
	return NULL;
}

int
u64map_reserve(struct u64map *m, size_t n)
{
	while (m->nbuckets < n)
		if (grow(m))
			return -ENOMEM;
	while (m->count + m->nspare < n) {
		struct u64map_ent *e = lfs_malloc(sizeof(*e));
		if (!e)
			return -ENOMEM;
		e->next = m->spare;
		m->spare = e;
		m->nspare++;
	}
	if (n > m->reserved)
		m->reserved = n;
	return 0;
}

void
u64map_remove_if(struct u64map *m, int (*fn)(uint64_t, void *, void *), void *ctx)
{
	for (size_t i = 0; i < m->nbuckets; i++) {
		for (struct u64map_ent **pp = &m->tab[i]; *pp;) {
			struct u64map_ent *e = *pp;
			if (fn(e->key, e->val, ctx)) {
				*pp = e->next;
				m->count--;
				release(m, e);
			} else {
				pp = &e->next;
			}
		}
	}
}

void
u64map_each(const struct u64map *m, void (*fn)(uint64_t, void *, void *), void *ctx)
{
	for (size_t i = 0; i < m->nbuckets; i++)
		for (struct u64map_ent *e = m->tab[i]; e; e = e->next)
			fn(e->key, e->val, ctx);
}

int
u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void
u64map_sorted_keys(const struct u64map *m, uint64_t *keys)
{
	size_t n = 0;
	for (size_t i = 0; i < m->nbuckets; i++)
		for (struct u64map_ent *e = m->tab[i]; e; e = e->next)
			keys[n++] = e->key;
	qsort(keys, n, sizeof(*keys), u64_cmp);
}
