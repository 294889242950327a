// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * dummy.c - a predictor that expects every next call to repeat the last
 * one: the smallest complete predictor, copied to lib/predict/dummy/ by
 * tests/extend/check-extend.sh to show that a predictor is one folder
 * plus one registry line. ZCRECV_PREDICTOR=dummy chooses it.
 */
#include "predict/impl.h"

struct dummy_pred {
	uint32_t last;
	bool seen;
};

static void dummy_observe(struct zcr_predictor *p, uint32_t id,
			  const struct zcr_call *c)
{
	struct dummy_pred *d = p->priv;

	(void)c;
	d->last = id;
	d->seen = true;
}

static bool dummy_predict(struct zcr_predictor *p, unsigned int k,
			  uint32_t *id)
{
	const struct dummy_pred *d = p->priv;

	(void)k;
	*id = d->last;
	return d->seen;
}

static size_t dummy_memory(const struct zcr_predictor *p)
{
	(void)p;
	return 0;
}

ZCR_PREDICTOR(dummy) = {
	.size = sizeof(struct zcr_pred_ops),
	.name = "dummy",
	.priv_size = sizeof(struct dummy_pred),
	.observe = dummy_observe,
	.predict = dummy_predict,
	.memory = dummy_memory,
};
