// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * predict_fallback.c - a stand-in for the predictors of branch `predict`
 * (lib/predict_*.c), so the receive path builds and runs before they land.
 * DELETE THIS FILE when merging `predict`: both define __zcr_pred_*.
 *
 * One single-cycle predictor: it finds the shortest period p (up to
 * HIST / 2) with which the recent calls repeat, and predicts the k-th next
 * call as the call p - k (mod p) + 1 places back; with no cycle in sight
 * it predicts that the last call repeats. Every name it accepts
 * ("cycle", and "select" as an alias) gives this predictor.
 */
#include <stdlib.h>
#include <string.h>

#include "predict.h"

#define HIST 64

struct zcr_predictor {
	char name[16];
	struct zcr_call h[HIST];
	unsigned int n;		/* calls observed */
	unsigned int period;	/* 0: none found */
};

struct zcr_predictor *__zcr_pred_create(const char *name, unsigned int window)
{
	struct zcr_predictor *p;

	(void)window;
	if (!name || (strcmp(name, "cycle") && strcmp(name, "select")))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (p)
		strncpy(p->name, name, sizeof(p->name) - 1);
	return p;
}

void __zcr_pred_destroy(struct zcr_predictor *p)
{
	free(p);
}

static const struct zcr_call *back(const struct zcr_predictor *p,
				   unsigned int i)
{
	return &p->h[(p->n - 1 - i) % HIST];
}

static bool same(const struct zcr_call *a, const struct zcr_call *b)
{
	return a->buf == b->buf && a->size == b->size && a->src == b->src &&
	       a->tag == b->tag;
}

void __zcr_pred_observe(struct zcr_predictor *p, const struct zcr_call *c)
{
	unsigned int per, i, avail;

	p->h[p->n % HIST] = *c;
	p->n++;
	avail = p->n < HIST ? p->n : HIST;
	p->period = 0;
	for (per = 1; per <= avail / 2; per++) {
		for (i = 0; i < per; i++)
			if (!same(back(p, i), back(p, i + per)))
				break;
		if (i == per) {
			p->period = per;
			return;
		}
	}
	/* No cycle in sight: assume the last call repeats. */
	p->period = 1;
}

bool __zcr_pred_predict(struct zcr_predictor *p, unsigned int k,
			struct zcr_call *out)
{
	if (!p->period || !k)
		return false;
	*out = *back(p, p->period - 1 - (k - 1) % p->period);
	return true;
}

const char *__zcr_pred_name(const struct zcr_predictor *p)
{
	return p->name;
}

size_t __zcr_pred_memory(const struct zcr_predictor *p)
{
	return sizeof(*p);
}
