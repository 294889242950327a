// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * replay.c - evaluators: score a predictor on a stream of calls (replay.h).
 *
 * The +k predictions wait in a ring of k slots per stream, each holding
 * every candidate (set predictors offer several), so hits are decided when
 * the predicted call actually arrives.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "predict/impl.h"
#include "replay.h"

#define EVAL_MAXCAND	64

struct pending {
	uint64_t target;	/* stream index of the call predicted */
	int n;
	struct zcr_call *cand;
};

struct stream {
	int32_t src, tag;
	struct zcr_predictor *p;
	uint64_t calls;
	struct pending *ring;	/* k slots */
	struct zcr_call *cand;	/* k * ncand, backing of ring[].cand */
};

struct zcr_eval {
	struct zcr_eval_cfg cfg;
	int ncand;
	struct zcr_eval_stats st;
	struct stream *s;
	uint32_t n, cap;
	uint32_t *slots;	/* stream index + 1 */
	uint32_t mask;
	struct zcr_call tmp[EVAL_MAXCAND];
};

double __zcr_eval_pct(uint64_t hits, uint64_t calls)
{
	return calls ? 100.0 * (double)hits / (double)calls : 0.0;
}

static uint32_t sslot(const struct zcr_eval *e, int32_t src, int32_t tag)
{
	uint64_t h = ((uint64_t)(uint32_t)src << 32 | (uint32_t)tag) *
		     0x9e3779b97f4a7c15ULL;

	return (uint32_t)(h >> 32) & e->mask;
}

static int stream_init(struct zcr_eval *e, struct stream *s)
{
	uint32_t i;

	s->p = __zcr_pred_create(e->cfg.pred, e->cfg.window);
	s->ring = calloc(e->cfg.k, sizeof(*s->ring));
	s->cand = calloc((size_t)e->cfg.k * e->ncand, sizeof(*s->cand));
	if (!s->p || !s->ring || !s->cand)
		return -ENOMEM;
	for (i = 0; i < e->cfg.k; i++) {
		s->ring[i].target = UINT64_MAX;
		s->ring[i].cand = s->cand + (size_t)i * e->ncand;
	}
	return 0;
}

static struct stream *stream_get(struct zcr_eval *e, const struct zcr_call *c)
{
	int32_t src = e->cfg.per_stream ? c->src : 0;
	int32_t tag = e->cfg.per_stream ? c->tag : 0;
	uint32_t j, i;

	j = sslot(e, src, tag);
	while (e->slots[j]) {
		struct stream *s = &e->s[e->slots[j] - 1];

		if (s->src == src && s->tag == tag)
			return s;
		j = (j + 1) & e->mask;
	}
	if ((e->n + 1) * 2 > e->mask + 1) {
		uint32_t sz = (e->mask + 1) * 2, *sl = calloc(sz, sizeof(*sl));

		if (!sl)
			return NULL;
		free(e->slots);
		e->slots = sl;
		e->mask = sz - 1;
		for (i = 0; i < e->n; i++) {
			j = sslot(e, e->s[i].src, e->s[i].tag);
			while (sl[j])
				j = (j + 1) & e->mask;
			sl[j] = i + 1;
		}
		j = sslot(e, src, tag);
		while (sl[j])
			j = (j + 1) & e->mask;
	}
	if (__zcr_grow((void **)&e->s, &e->cap, e->n + 1, sizeof(*e->s)))
		return NULL;
	e->s[e->n].src = src;
	e->s[e->n].tag = tag;
	if (stream_init(e, &e->s[e->n])) {
		__zcr_pred_destroy(e->s[e->n].p);
		free(e->s[e->n].ring);
		free(e->s[e->n].cand);
		memset(&e->s[e->n], 0, sizeof(e->s[e->n]));
		return NULL;
	}
	e->slots[j] = e->n + 1;
	return &e->s[e->n++];
}

struct zcr_eval *__zcr_eval_create(const struct zcr_eval_cfg *cfg)
{
	struct zcr_eval *e;
	struct zcr_predictor *probe;

	if (!cfg->k || !cfg->pred)
		return NULL;
	probe = __zcr_pred_create(cfg->pred, cfg->window);
	if (!probe)
		return NULL;
	__zcr_pred_destroy(probe);
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->cfg = *cfg;
	e->ncand = EVAL_MAXCAND;
	e->mask = 15;
	e->slots = calloc(e->mask + 1, sizeof(*e->slots));
	if (!e->slots) {
		free(e);
		return NULL;
	}
	return e;
}

static void score(uint64_t hit[ZCR_HIT_NDEFS][2],
		  uint64_t hitbig[ZCR_HIT_NDEFS][2], int kidx, bool big,
		  const struct zcr_call *c, const struct zcr_call *cand,
		  int n)
{
	int d, i;

	for (d = 0; d < ZCR_HIT_NDEFS; d++) {
		for (i = 0; i < n; i++)
			if (__zcr_call_match(&cand[i], c, d))
				break;
		if (i < n) {
			hit[d][kidx]++;
			if (big)
				hitbig[d][kidx]++;
		}
	}
}

int __zcr_eval_feed(struct zcr_eval *e, const struct zcr_call *c)
{
	struct stream *s = stream_get(e, c);
	bool big = c->size >= e->cfg.threshold;
	struct pending *pd;
	uint64_t j;
	int n;

	if (!s)
		return -ENOMEM;
	j = s->calls;
	e->st.calls++;
	if (big)
		e->st.big++;
	n = __zcr_pred_candidates(s->p, 1, e->tmp, e->ncand);
	score(e->st.hit, e->st.hitbig, 0, big, c, e->tmp, n);
	pd = &s->ring[j % e->cfg.k];
	if (pd->target == j)
		score(e->st.hit, e->st.hitbig, 1, big, c, pd->cand, pd->n);

	__zcr_pred_observe(s->p, c);
	s->calls++;
	pd = &s->ring[(j + e->cfg.k) % e->cfg.k];
	pd->target = j + e->cfg.k;
	pd->n = __zcr_pred_candidates(s->p, e->cfg.k, pd->cand, e->ncand);
	return 0;
}

void __zcr_eval_get(const struct zcr_eval *e, struct zcr_eval_stats *st)
{
	uint64_t most = 0;
	uint32_t i;

	*st = e->st;
	st->streams = e->n;
	st->memory = 0;
	st->period = 0;
	for (i = 0; i < e->n; i++) {
		st->memory += __zcr_pred_memory(e->s[i].p);
		if (e->s[i].calls > most) {
			most = e->s[i].calls;
			st->period = __zcr_pred_period(e->s[i].p);
		}
	}
}

void __zcr_eval_destroy(struct zcr_eval *e)
{
	uint32_t i;

	if (!e)
		return;
	for (i = 0; i < e->n; i++) {
		__zcr_pred_destroy(e->s[i].p);
		free(e->s[i].ring);
		free(e->s[i].cand);
	}
	free(e->s);
	free(e->slots);
	free(e);
}

void __zcr_eval_add(struct zcr_eval_stats *a, const struct zcr_eval_stats *b)
{
	int d, k;

	a->calls += b->calls;
	a->big += b->big;
	for (d = 0; d < ZCR_HIT_NDEFS; d++)
		for (k = 0; k < 2; k++) {
			a->hit[d][k] += b->hit[d][k];
			a->hitbig[d][k] += b->hitbig[d][k];
		}
	a->streams += b->streams;
	a->memory += b->memory;
	if (!a->period)
		a->period = b->period;
}

unsigned int __zcr_eval_window(const char *pred, unsigned int k,
			       unsigned int win, unsigned int dpd_n)
{
	if (!strcmp(pred, "lru") || !strcmp(pred, "fifo") ||
	    !strcmp(pred, "lfu"))
		return win;
	if (!strcmp(pred, "dpd"))
		return dpd_n;
	if (!strcmp(pred, "select"))
		return k;
	return 0;
}
