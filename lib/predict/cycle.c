// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * cycle.c - the cycle engine and the Single-cycle predictor.
 *
 * A cycle starts at a head call; the calls are logged until the head comes
 * back, and from then on the log is replayed. A miss makes the missing call
 * the new head. While a cycle forms, the previous call is offered as the
 * prediction. Initialisation phase: calls made once at start-up never come
 * back, so their head would never return; once the log is longer than
 * ZCR_CYC_INIT, a call that repeats any logged call closes the cycle there
 * and the calls before it are dropped as initialisation.
 */
#include <stdlib.h>
#include <string.h>

#include "impl.h"

static inline uint64_t bloom_bit(uint32_t id)
{
	return 1ULL << ((id * 0x9e3779b1u) >> 26);
}

static void cyc_restart(struct zcr_cyc *c, uint32_t id)
{
	c->formed = false;
	c->len = 0;
	c->bloom = 0;
	if (__zcr_grow((void **)&c->log, &c->cap, 1, sizeof(*c->log)))
		return;
	c->log[c->len++] = id;
	c->bloom = bloom_bit(id);
}

static int cyc_find(const struct zcr_cyc *c, uint32_t id)
{
	uint32_t i;

	if (!(c->bloom & bloom_bit(id)))
		return -1;
	for (i = 0; i < c->len; i++)
		if (c->log[i] == id)
			return (int)i;
	return -1;
}

void __zcr_cyc_observe(struct zcr_cyc *c, uint32_t id)
{
	int j;

	c->last = id;
	if (c->formed) {
		uint32_t nxt = c->pos + 1 == c->len ? 0 : c->pos + 1;

		if (c->log[nxt] == id) {
			c->pos = nxt;
			return;
		}
		if (c->resync) {
			j = cyc_find(c, id);
			if (j >= 0) {
				c->pos = (uint32_t)j;
				return;
			}
		}
		cyc_restart(c, id);
		return;
	}
	if (!c->len) {
		cyc_restart(c, id);
		return;
	}
	if (c->log[0] == id) {
		c->formed = true;
		c->pos = 0;
		return;
	}
	if (c->len > ZCR_CYC_INIT) {
		j = cyc_find(c, id);
		if (j > 0) {
			memmove(c->log, c->log + j,
				(c->len - (uint32_t)j) * sizeof(*c->log));
			c->len -= (uint32_t)j;
			c->formed = true;
			c->pos = 0;
			return;
		}
	}
	if (c->len >= ZCR_CYC_MAX ||
	    __zcr_grow((void **)&c->log, &c->cap, c->len + 1, sizeof(*c->log))) {
		cyc_restart(c, id);
		return;
	}
	c->log[c->len++] = id;
	c->bloom |= bloom_bit(id);
}

bool __zcr_cyc_predict(const struct zcr_cyc *c, unsigned int k, uint32_t *id)
{
	if (c->formed) {
		uint64_t i = (uint64_t)c->pos + k;

		/* usually k < len: spare the division on the +k walk */
		if (i >= c->len)
			i = i - c->len < c->len ? i - c->len : i % c->len;
		*id = c->log[i];
		return true;
	}
	if (!c->len)
		return false;
	*id = c->last;
	return true;
}

void __zcr_cyc_free(struct zcr_cyc *c)
{
	free(c->log);
	memset(c, 0, sizeof(*c));
}

static void cycle_fini(struct zcr_predictor *p)
{
	__zcr_cyc_free(p->priv);
}

static void cycle_observe(struct zcr_predictor *p, uint32_t id,
			  const struct zcr_call *call)
{
	(void)call;
	__zcr_cyc_observe(p->priv, id);
}

static bool cycle_predict(struct zcr_predictor *p, unsigned int k,
			  uint32_t *id)
{
	return __zcr_cyc_predict(p->priv, k, id);
}

static size_t cycle_memory(const struct zcr_predictor *p)
{
	const struct zcr_cyc *c = p->priv;

	return (size_t)c->cap * sizeof(*c->log);
}

static unsigned int cycle_period(const struct zcr_predictor *p)
{
	const struct zcr_cyc *c = p->priv;

	return c->formed ? c->len : 0;
}

ZCR_PREDICTOR(cycle) = {
	.size = sizeof(struct zcr_pred_ops),
	.name = "cycle",
	.priv_size = sizeof(struct zcr_cyc),
	.fini = cycle_fini,
	.observe = cycle_observe,
	.predict = cycle_predict,
	.memory = cycle_memory,
	.period = cycle_period,
};
