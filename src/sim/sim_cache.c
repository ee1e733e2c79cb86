#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

/* The prefix cache: block hashes in an open-addressing table (linear
 * probing, backward-shift deletion) over a pool of nodes on a recency
 * list. Memory grows with the blocks actually seen, up to the capacity,
 * so a large --kv-tokens costs nothing until it is used. */

#define NIL (-1)

struct sim_cache_node {
	uint64_t hash;
	int32_t prev, next;	/* recency list: prev towards the MRU head */
};

static size_t slot_of(const struct sim_cache *c, uint64_t h)
{
	/* Block hashes are already mixed: their low bits are as good as any. */
	return (size_t)h & c->mask;
}

static int32_t find(const struct sim_cache *c, uint64_t h)
{
	if (!c->tab)
		return NIL;
	for (size_t i = slot_of(c, h);; i = (i + 1) & c->mask) {
		int32_t x = c->tab[i];
		if (x == NIL || c->node[x].hash == h)
			return x;
	}
}

static void list_unlink(struct sim_cache *c, int32_t x)
{
	struct sim_cache_node *n = &c->node[x];
	if (n->prev != NIL)
		c->node[n->prev].next = n->next;
	else
		c->head = n->next;
	if (n->next != NIL)
		c->node[n->next].prev = n->prev;
	else
		c->tail = n->prev;
}

static void list_push_head(struct sim_cache *c, int32_t x)
{
	struct sim_cache_node *n = &c->node[x];
	n->prev = NIL;
	n->next = c->head;
	if (c->head != NIL)
		c->node[c->head].prev = x;
	else
		c->tail = x;
	c->head = x;
}

static void tab_put(struct sim_cache *c, int32_t x)
{
	size_t i = slot_of(c, c->node[x].hash);
	while (c->tab[i] != NIL)
		i = (i + 1) & c->mask;
	c->tab[i] = x;
}

static void tab_del(struct sim_cache *c, uint64_t h)
{
	size_t i = slot_of(c, h);
	while (c->node[c->tab[i]].hash != h)
		i = (i + 1) & c->mask;
	/* Backward shift: pull later entries of the run into the hole when
	 * their home slot is not between the hole and them. */
	for (size_t j = (i + 1) & c->mask;; j = (j + 1) & c->mask) {
		int32_t y = c->tab[j];
		if (y == NIL)
			break;
		size_t home = slot_of(c, c->node[y].hash);
		if (((j - home) & c->mask) >= ((j - i) & c->mask)) {
			c->tab[i] = y;
			i = j;
		}
	}
	c->tab[i] = NIL;
}

/* Keeps the table at most half full. */
static int tab_grow(struct sim_cache *c)
{
	size_t need = (size_t)c->n + 1;
	size_t size = c->tab ? c->mask + 1 : 0;
	if (need * 2 <= size)
		return 0;
	size_t nsize = size ? size * 2 : 64;
	while (need * 2 > nsize)
		nsize *= 2;
	int32_t *t = malloc(nsize * sizeof *t);
	if (!t)
		return -1;
	for (size_t i = 0; i < nsize; i++)
		t[i] = NIL;
	free(c->tab);
	c->tab = t;
	c->mask = nsize - 1;
	for (int32_t x = c->head; x != NIL; x = c->node[x].next)
		tab_put(c, x);
	return 0;
}

/* A node for hash h at the MRU end: a new one while under capacity, else
 * the LRU one recycled. -1 when out of memory. */
static int32_t insert(struct sim_cache *c, uint64_t h)
{
	int32_t x;
	if (c->n < c->cap) {
		if (c->n == c->node_cap) {
			long ncap = c->node_cap ? c->node_cap * 2 : 64;
			if (ncap > c->cap)
				ncap = c->cap;
			struct sim_cache_node *nn = realloc(c->node, (size_t)ncap * sizeof *nn);
			if (!nn)
				return NIL;
			c->node = nn;
			c->node_cap = ncap;
		}
		if (tab_grow(c) != 0)
			return NIL;
		x = (int32_t)c->n++;
	} else {
		x = c->tail;
		tab_del(c, c->node[x].hash);
		list_unlink(c, x);
		c->evictions++;
	}
	c->node[x].hash = h;
	tab_put(c, x);
	list_push_head(c, x);
	return x;
}

void sim_cache_init(struct sim_cache *c, long cap_blocks)
{
	memset(c, 0, sizeof *c);
	/* The pool is indexed by int32_t. */
	c->cap = cap_blocks > INT32_MAX / 2 ? INT32_MAX / 2 : cap_blocks;
	c->head = c->tail = NIL;
}

void sim_cache_fini(struct sim_cache *c)
{
	free(c->tab);
	free(c->node);
	memset(c, 0, sizeof *c);
	c->head = c->tail = NIL;
}

long sim_cache_lookup(struct sim_cache *c, const uint64_t *hash, long n, long max_hit)
{
	if (c->cap <= 0)
		return 0;
	long hit = 0;
	while (hit < n && hit < max_hit && find(c, hash[hit]) != NIL)
		hit++;
	/* Last block first, so that the first block ends most recent: under
	 * pressure a prompt loses its tail before its head, as vLLM frees a
	 * request's blocks tail first, and the shared prefix lives longest. */
	for (long i = n - 1; i >= 0; i--) {
		int32_t x = find(c, hash[i]);
		if (x != NIL) {
			list_unlink(c, x);
			list_push_head(c, x);
		} else if (insert(c, hash[i]) == NIL) {
			break;	/* out of memory: the cache just stays smaller */
		}
	}
	return hit;
}
