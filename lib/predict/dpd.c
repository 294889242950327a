// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * dpd.c - periodicity predictor (dynamic periodicity detection).
 *
 * For delays 1 <= m < M over the last N samples, d(m) = sign(sum |x(i) -
 * x(i - m)|); x is the call id, so d(m) = 0 exactly when every sample in
 * the window equals the one m before it. The period is the smallest m with
 * d(m) = 0 once at least one whole period has been compared; +k is then
 * x(t + k - p * ceil(k / p)). If no delay is exact, the delay with the
 * fewest mismatches is used when they are under 1/8 of the pairs (a single
 * irregular call then does not blind the predictor for N samples).
 *
 * Incremental: cnt[m] holds the mismatches of the pairs in the window; a
 * new sample adds its M - 1 pairs and the sample leaving the window removes
 * its own, O(M) per sample. Samples are stored twice in a ring of N + M so
 * that x(t - m) for all m is one contiguous run (vectorisable loop). Slots
 * never written hold ZCR_NOID, which matches no call: pairs reaching before
 * the first sample count as mismatches and are subtracted back while the
 * predictor warms up.
 */
#include <stdlib.h>
#include <string.h>

#include "impl.h"

#define DPD_N_DEFAULT	256
#define DPD_N_MAX	65536

struct dpd_priv {
	uint32_t n, m, c;	/* window N, delays < M, ring size N + M */
	uint32_t *h;		/* 2 * c samples */
	uint32_t *cnt;		/* m counters */
	uint64_t t;		/* samples seen */
	uint32_t hi;		/* index in h of the newest sample (upper copy) */
	uint32_t period;
};

static int dpd_init(struct zcr_predictor *p, unsigned int w)
{
	struct dpd_priv *d = p->priv;
	uint32_t i;

	d->n = w ? w : DPD_N_DEFAULT;
	if (d->n < 2)
		d->n = 2;
	if (d->n > DPD_N_MAX)
		d->n = DPD_N_MAX;
	d->m = d->n;
	d->c = d->n + d->m;
	d->h = malloc(2 * (size_t)d->c * sizeof(*d->h));
	d->cnt = calloc(d->m, sizeof(*d->cnt));
	if (!d->h || !d->cnt) {
		free(d->h);
		free(d->cnt);
		return -1;
	}
	for (i = 0; i < 2 * d->c; i++)
		d->h[i] = ZCR_NOID;
	return 0;
}

static void dpd_fini(struct zcr_predictor *p)
{
	struct dpd_priv *d = p->priv;

	free(d->h);
	free(d->cnt);
}

/* Pairs (i, i - m) in the window whose i - m precedes the first sample. */
static uint32_t dpd_unseen(const struct dpd_priv *d, uint32_t m)
{
	uint64_t first = d->t > d->n ? d->t - d->n : 0;	/* oldest in window */
	uint64_t end = m < d->t ? m : d->t;

	return end > first ? (uint32_t)(end - first) : 0;
}

static void dpd_observe(struct zcr_predictor *p, uint32_t id,
			const struct zcr_call *c)
{
	struct dpd_priv *d = p->priv;
	uint32_t w = (uint32_t)(d->t % d->c), hi = w + d->c, m;
	uint32_t *cnt = d->cnt, *h = d->h, x = id;
	uint32_t inwin, best = 0, bestmis = UINT32_MAX;

	(void)c;
	h[w] = id;
	h[hi] = id;
	for (m = 1; m < d->m; m++)
		cnt[m] += x != h[hi - m];
	if (d->t >= d->n) {
		uint32_t lo = hi - d->n, y = h[lo];

		for (m = 1; m < d->m; m++)
			cnt[m] -= y != h[lo - m];
	}
	d->t++;
	d->hi = hi;
	inwin = d->t < d->n ? (uint32_t)d->t : d->n;

	d->period = 0;
	if (d->t >= (uint64_t)d->n + d->m) {
		/* Warmed up: every pair is real. */
		for (m = 1; m < d->m; m++) {
			if (!cnt[m]) {
				d->period = m;
				return;
			}
			if (cnt[m] < bestmis) {
				bestmis = cnt[m];
				best = m;
			}
		}
		if (bestmis * 8 <= inwin)
			d->period = best;
		return;
	}
	for (m = 1; m < d->m && m < d->t; m++) {
		uint32_t un = dpd_unseen(d, m), pairs = inwin - un;
		uint32_t mis = cnt[m] - un;

		if (pairs < m)
			break;
		if (!mis) {
			d->period = m;
			return;
		}
		if (pairs >= 2 * m && mis < bestmis) {
			bestmis = mis;
			best = m;
		}
	}
	if (best && bestmis * 8 <= inwin)
		d->period = best;
}

static bool dpd_predict(struct zcr_predictor *p, unsigned int k,
			uint32_t *id)
{
	struct dpd_priv *d = p->priv;
	uint32_t per = d->period, back;

	if (!per)
		return false;
	back = (uint32_t)(((uint64_t)k + per - 1) / per * per - k);
	*id = d->h[d->hi - back];
	return *id != ZCR_NOID;
}

static size_t dpd_memory(const struct zcr_predictor *p)
{
	const struct dpd_priv *d = p->priv;

	return (2 * (size_t)d->c + d->m) * sizeof(uint32_t);
}

static unsigned int dpd_period(const struct zcr_predictor *p)
{
	const struct dpd_priv *d = p->priv;

	return d->period;
}

ZCR_PREDICTOR(dpd) = {
	.size = sizeof(struct zcr_pred_ops),
	.name = "dpd",
	.priv_size = sizeof(struct dpd_priv),
	.init = dpd_init,
	.fini = dpd_fini,
	.observe = dpd_observe,
	.predict = dpd_predict,
	.memory = dpd_memory,
	.period = dpd_period,
};
