// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * select.c - the selector: runs the point predictors side by side
 * on one stream, scores each by how often it has lately been right, and
 * answers with the one scoring best.
 *
 * Scores are kept separately for +1 and for +K (K = the window argument,
 * default 10), because a predictor good at the next call is not always good
 * ten calls ahead (graph versus dpd on long nested periods). A score is an
 * exponentially decaying hit count, score = score * (1 - 2^-S) + hit, in
 * fixed point; the current choice is kept on a tie, so the selector does
 * not flap between equally good predictors. Every sub-predictor shares the
 * selector's interning table, so a call is hashed once per observe.
 * Cost: the sum of the sub-predictors' observe plus one +1 and one +K
 * predict each; memory: theirs plus 2 + K ids per sub-predictor.
 */
#include <stdlib.h>
#include <string.h>

#include "impl.h"

#define SEL_K_DEFAULT	10
#define SEL_K_MAX	64
#define SEL_SHIFT	5		/* decay 1/32 per call */
#define SEL_ONE		(1u << 16)
#define SEL_MIX		4	/* weight of +K over +1 in the +K choice */

static const char *const sel_subs[] = {
	"cycle", "tagbettercycle", "tagcycle", "tag", "dpd", "graph",
};
#define SEL_NSUB	(sizeof(sel_subs) / sizeof(sel_subs[0]))
#define SEL_DPD		4	/* index of dpd in sel_subs[] */

struct sel_priv {
	struct zcr_predictor *sub[SEL_NSUB];
	uint32_t score1[SEL_NSUB], scorek[SEL_NSUB];
	uint32_t pend1[SEL_NSUB];
	uint32_t pendk[SEL_NSUB][SEL_K_MAX];
	uint32_t k;
	uint64_t t;
	uint32_t cur1, curk;
};

static int sel_init(struct zcr_predictor *p, unsigned int w)
{
	struct sel_priv *s = p->priv;
	size_t i, j;

	s->k = w ? w : SEL_K_DEFAULT;
	if (s->k > SEL_K_MAX)
		s->k = SEL_K_MAX;
	for (i = 0; i < SEL_NSUB; i++) {
		s->sub[i] = __zcr_pred_create_shared(sel_subs[i], 0, p->syms);
		if (!s->sub[i])
			goto err;
		s->pend1[i] = ZCR_NOID;
		for (j = 0; j < SEL_K_MAX; j++)
			s->pendk[i][j] = ZCR_NOID;
	}
	return 0;
err:
	while (i--)
		__zcr_pred_destroy(s->sub[i]);
	return -1;
}

static void sel_fini(struct zcr_predictor *p)
{
	struct sel_priv *s = p->priv;
	size_t i;

	for (i = 0; i < SEL_NSUB; i++)
		__zcr_pred_destroy(s->sub[i]);
}

static uint32_t sel_decay(uint32_t score, bool hit)
{
	return score - (score >> SEL_SHIFT) + (hit ? SEL_ONE : 0);
}

/*
 * Best by score, a primary score weighted by @w plus a tie-breaking one;
 * the current choice wins ties, then the lowest index.
 */
static uint32_t sel_best(const uint32_t *major, uint64_t w,
			 const uint32_t *minor, uint32_t cur)
{
	uint64_t v, bestv = (uint64_t)major[cur] * w + minor[cur];
	uint32_t i, best = cur;

	for (i = 0; i < SEL_NSUB; i++) {
		v = (uint64_t)major[i] * w + minor[i];
		if (v > bestv) {
			best = i;
			bestv = v;
		}
	}
	return best;
}

static void sel_observe(struct zcr_predictor *p, uint32_t id,
			const struct zcr_call *c)
{
	struct sel_priv *s = p->priv;
	uint32_t slot = (uint32_t)(s->t % s->k), nid;
	size_t i;

	for (i = 0; i < SEL_NSUB; i++) {
		struct zcr_predictor *sub = s->sub[i];

		s->score1[i] = sel_decay(s->score1[i], s->pend1[i] == id);
		s->scorek[i] = sel_decay(s->scorek[i],
					 s->pendk[i][slot] == id);
		__zcr_pred_observe_id(sub, id, c);
		s->pend1[i] = __zcr_pred_predict_id(sub, 1, &nid) ? nid
								 : ZCR_NOID;
		s->pendk[i][slot] = __zcr_pred_predict_id(sub, s->k, &nid) ?
				    nid : ZCR_NOID;
	}
	s->t++;
	s->cur1 = sel_best(s->score1, 0, s->score1, s->cur1);
	/*
	 * +K scores lag K calls behind; the +1 scores break their ties, so
	 * the choice is sensible while the +K evidence is still thin.
	 */
	s->curk = sel_best(s->scorek, SEL_MIX, s->score1, s->curk);
}

static bool sel_predict(struct zcr_predictor *p, unsigned int k,
			uint32_t *id)
{
	struct sel_priv *s = p->priv;
	uint32_t cur = k == 1 ? s->cur1 : s->curk, i;

	if (k == 1) {
		*id = s->pend1[cur];
		if (*id != ZCR_NOID)
			return true;
	} else if (__zcr_pred_predict_id(s->sub[cur], k, id)) {
		return true;
	}
	/* The chosen one has nothing to say: ask the others in order. */
	for (i = 0; i < SEL_NSUB; i++)
		if (i != cur && __zcr_pred_predict_id(s->sub[i], k, id))
			return true;
	return false;
}

static size_t sel_memory(const struct zcr_predictor *p)
{
	const struct sel_priv *s = p->priv;
	size_t i, m = 0;

	for (i = 0; i < SEL_NSUB; i++)
		m += __zcr_pred_memory(s->sub[i]);
	return m;
}

static unsigned int sel_period(const struct zcr_predictor *p)
{
	const struct sel_priv *s = p->priv;

	return __zcr_pred_period(s->sub[SEL_DPD]);
}

ZCR_PREDICTOR(select) = {
	.size = sizeof(struct zcr_pred_ops),
	.name = "select",
	.priv_size = sizeof(struct sel_priv),
	.init = sel_init,
	.fini = sel_fini,
	.observe = sel_observe,
	.predict = sel_predict,
	.memory = sel_memory,
	.period = sel_period,
};
