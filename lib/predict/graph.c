// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * graph.c - graph predictor: a state is the last three calls, each
 * state counts the calls that followed it, and the prediction walks from
 * the current state to its most frequent successor (the most recent one on
 * a tie), k steps for +k. Each state caches its best successor, so a step
 * is one hash lookup.
 */
#include <stdlib.h>
#include <string.h>

#include "impl.h"

struct gsucc {
	uint32_t id, count;
};

struct gnode {
	uint32_t s[3];
	uint32_t best, bestcnt;
	uint32_t n, cap;
	struct gsucc *succ;
};

struct graph_priv {
	struct gnode *nodes;
	uint32_t nnodes, cap;
	uint32_t *slots;	/* node index + 1 */
	uint32_t mask;
	uint32_t h[3];		/* last three calls, h[2] newest */
	uint32_t seen;
};

static uint32_t gslot(const struct graph_priv *g, const uint32_t *s)
{
	uint64_t x = (s[0] * 0x9e3779b97f4a7c15ULL) ^
		     (s[1] * 0xc2b2ae3d27d4eb4fULL) ^
		     (s[2] * 0x165667b19e3779f9ULL);

	return (uint32_t)((x ^ (x >> 31)) >> 7) & g->mask;
}

static struct gnode *gfind(const struct graph_priv *g, const uint32_t *s)
{
	uint32_t j = gslot(g, s);

	while (g->slots[j]) {
		struct gnode *n = &g->nodes[g->slots[j] - 1];

		if (n->s[0] == s[0] && n->s[1] == s[1] && n->s[2] == s[2])
			return n;
		j = (j + 1) & g->mask;
	}
	return NULL;
}

static void ginsert_slot(struct graph_priv *g, uint32_t idx)
{
	uint32_t j = gslot(g, g->nodes[idx].s);

	while (g->slots[j])
		j = (j + 1) & g->mask;
	g->slots[j] = idx + 1;
}

static struct gnode *gadd(struct graph_priv *g, const uint32_t *s)
{
	struct gnode *n = gfind(g, s);
	uint32_t i;

	if (n)
		return n;
	if ((g->nnodes + 1) * 2 > g->mask + 1) {
		uint32_t sz = (g->mask + 1) * 2;
		uint32_t *sl = calloc(sz, sizeof(*sl));

		if (!sl)
			return NULL;
		free(g->slots);
		g->slots = sl;
		g->mask = sz - 1;
		for (i = 0; i < g->nnodes; i++)
			ginsert_slot(g, i);
	}
	if (__zcr_grow((void **)&g->nodes, &g->cap, g->nnodes + 1,
		       sizeof(*g->nodes)))
		return NULL;
	n = &g->nodes[g->nnodes];
	memcpy(n->s, s, sizeof(n->s));
	n->best = ZCR_NOID;
	ginsert_slot(g, g->nnodes++);
	return n;
}

static int graph_init(struct zcr_predictor *p, unsigned int w)
{
	struct graph_priv *g = p->priv;

	(void)w;
	g->mask = 63;
	g->slots = calloc(g->mask + 1, sizeof(*g->slots));
	return g->slots ? 0 : -1;
}

static void graph_fini(struct zcr_predictor *p)
{
	struct graph_priv *g = p->priv;
	uint32_t i;

	for (i = 0; i < g->nnodes; i++)
		free(g->nodes[i].succ);
	free(g->nodes);
	free(g->slots);
}

static void graph_observe(struct zcr_predictor *p, uint32_t id,
			  const struct zcr_call *c)
{
	struct graph_priv *g = p->priv;
	struct gnode *n;
	uint32_t i;

	(void)c;
	if (g->seen >= 3 && (n = gadd(g, g->h))) {
		for (i = 0; i < n->n && n->succ[i].id != id; i++)
			;
		if (i == n->n && !__zcr_grow((void **)&n->succ, &n->cap,
					     n->n + 1, sizeof(*n->succ)))
			n->succ[n->n++].id = id;
		if (i < n->n) {
			n->succ[i].count++;
			if (n->succ[i].count >= n->bestcnt) {
				n->best = id;
				n->bestcnt = n->succ[i].count;
			}
		}
	}
	g->h[0] = g->h[1];
	g->h[1] = g->h[2];
	g->h[2] = id;
	if (g->seen < 3)
		g->seen++;
}

static bool graph_predict(struct zcr_predictor *p, unsigned int k,
			  uint32_t *id)
{
	struct graph_priv *g = p->priv;
	uint32_t s[3];
	unsigned int i;

	if (g->seen < 3)
		return false;
	memcpy(s, g->h, sizeof(s));
	for (i = 0; i < k; i++) {
		struct gnode *n = gfind(g, s);

		if (!n || n->best == ZCR_NOID)
			return false;
		s[0] = s[1];
		s[1] = s[2];
		s[2] = n->best;
	}
	*id = s[2];
	return true;
}

static size_t graph_memory(const struct zcr_predictor *p)
{
	const struct graph_priv *g = p->priv;
	size_t m = (size_t)g->cap * sizeof(*g->nodes) +
		   (size_t)(g->mask + 1) * sizeof(*g->slots);
	uint32_t i;

	for (i = 0; i < g->nnodes; i++)
		m += (size_t)g->nodes[i].cap * sizeof(struct gsucc);
	return m;
}

ZCR_PREDICTOR(graph) = {
	.size = sizeof(struct zcr_pred_ops),
	.name = "graph",
	.priv_size = sizeof(struct graph_priv),
	.init = graph_init,
	.fini = graph_fini,
	.observe = graph_observe,
	.predict = graph_predict,
	.memory = graph_memory,
};
