// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * window.c - LRU, FIFO and LFU windows: baselines that keep a set
 * of W calls and count a hit when the next call is in the set. predict()
 * offers the set's first element (most recent, newest, most frequent);
 * candidates() the whole set, for any k.
 */
#include <stdlib.h>
#include <string.h>

#include "impl.h"

#define WIN_DEFAULT	4
#define WIN_MAX		64

enum win_kind { WIN_LRU, WIN_FIFO, WIN_LFU };

struct win_priv {
	enum win_kind kind;
	uint32_t w, n;
	uint32_t set[WIN_MAX];
	uint32_t *count;	/* LFU: uses per id */
	uint32_t cap;
};

static int win_init_kind(struct zcr_predictor *p, unsigned int w,
			 enum win_kind kind)
{
	struct win_priv *s = p->priv;

	s->kind = kind;
	s->w = w ? w : WIN_DEFAULT;
	if (s->w > WIN_MAX)
		s->w = WIN_MAX;
	return 0;
}

static int lru_init(struct zcr_predictor *p, unsigned int w)
{
	return win_init_kind(p, w, WIN_LRU);
}

static int fifo_init(struct zcr_predictor *p, unsigned int w)
{
	return win_init_kind(p, w, WIN_FIFO);
}

static int lfu_init(struct zcr_predictor *p, unsigned int w)
{
	return win_init_kind(p, w, WIN_LFU);
}

static void win_fini(struct zcr_predictor *p)
{
	struct win_priv *s = p->priv;

	free(s->count);
}

static int win_find(const struct win_priv *s, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < s->n; i++)
		if (s->set[i] == id)
			return (int)i;
	return -1;
}

/* Put @id first, shifting set[0..upto) down by one. */
static void win_push_front(struct win_priv *s, uint32_t id, uint32_t upto)
{
	memmove(s->set + 1, s->set, upto * sizeof(s->set[0]));
	s->set[0] = id;
}

/* LFU keeps set[] sorted by use count, most used first. */
static void lfu_observe(struct win_priv *s, uint32_t id)
{
	int j;
	uint32_t i;

	if (__zcr_grow((void **)&s->count, &s->cap, id + 1, sizeof(*s->count)))
		return;
	s->count[id]++;
	j = win_find(s, id);
	if (j < 0) {
		if (s->n < s->w)
			j = (int)s->n++;
		else if (s->count[id] > s->count[s->set[s->n - 1]])
			j = (int)s->n - 1;
		else
			return;
		s->set[j] = id;
	}
	for (i = (uint32_t)j; i > 0 &&
	     s->count[s->set[i - 1]] < s->count[s->set[i]]; i--) {
		uint32_t x = s->set[i - 1];

		s->set[i - 1] = s->set[i];
		s->set[i] = x;
	}
}

static void win_observe(struct zcr_predictor *p, uint32_t id,
			const struct zcr_call *c)
{
	struct win_priv *s = p->priv;
	int j;

	(void)c;
	if (s->kind == WIN_LFU) {
		lfu_observe(s, id);
		return;
	}
	j = win_find(s, id);
	if (j >= 0) {
		if (s->kind == WIN_LRU)
			win_push_front(s, id, (uint32_t)j);
		return;
	}
	if (s->n < s->w)
		s->n++;
	win_push_front(s, id, s->n - 1);
}

static bool win_predict(struct zcr_predictor *p, unsigned int k,
			uint32_t *id)
{
	struct win_priv *s = p->priv;

	(void)k;
	if (!s->n)
		return false;
	*id = s->set[0];
	return true;
}

static int win_candidates(struct zcr_predictor *p, unsigned int k,
			  uint32_t *ids, int max)
{
	struct win_priv *s = p->priv;
	int n = (int)s->n < max ? (int)s->n : max;

	(void)k;
	memcpy(ids, s->set, (size_t)n * sizeof(*ids));
	return n;
}

static size_t win_memory(const struct zcr_predictor *p)
{
	const struct win_priv *s = p->priv;

	return (size_t)s->cap * sizeof(*s->count);
}

ZCR_PREDICTOR(lru) = {
	.size = sizeof(struct zcr_pred_ops),
	.name = "lru",
	.priv_size = sizeof(struct win_priv),
	.init = lru_init,
	.fini = win_fini,
	.observe = win_observe,
	.predict = win_predict,
	.candidates = win_candidates,
	.memory = win_memory,
};

ZCR_PREDICTOR(fifo) = {
	.size = sizeof(struct zcr_pred_ops),
	.name = "fifo",
	.priv_size = sizeof(struct win_priv),
	.init = fifo_init,
	.fini = win_fini,
	.observe = win_observe,
	.predict = win_predict,
	.candidates = win_candidates,
	.memory = win_memory,
};

ZCR_PREDICTOR(lfu) = {
	.size = sizeof(struct zcr_pred_ops),
	.name = "lfu",
	.priv_size = sizeof(struct win_priv),
	.init = lfu_init,
	.fini = win_fini,
	.observe = win_observe,
	.predict = win_predict,
	.candidates = win_candidates,
	.memory = win_memory,
};
