/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * replay.h - scoring predictors against a sequence of receive calls
 * (internal; tools/zcpredict, tools/zcpredict-bench and the tests).
 *
 * An evaluator runs one predictor over one rank's calls, either on the
 * global stream or with one predictor instance per (source, tag) stream,
 * and counts hits at +1 and +k under both hit definitions, over all calls
 * and over those of at least @threshold bytes. Before each call is
 * observed it is compared with the prediction made for it: +1 from the
 * state just before it, +k from the state k calls earlier in its stream.
 * A call nothing was predicted for is a miss.
 */
#ifndef ZCR_REPLAY_H
#define ZCR_REPLAY_H

#include "predict/predict.h"

struct zcr_eval_cfg {
	const char *pred;	/* predictor name */
	unsigned int window;	/* passed to __zcr_pred_create (0 default) */
	unsigned int k;		/* the +k horizon (>= 1) */
	uint64_t threshold;	/* "large message" size in bytes */
	bool per_stream;	/* one predictor per (src, tag) */
};

struct zcr_eval_stats {
	uint64_t calls, big;			/* big: size >= threshold */
	uint64_t hit[ZCR_HIT_NDEFS][2];		/* [def][0: +1, 1: +k] */
	uint64_t hitbig[ZCR_HIT_NDEFS][2];
	uint64_t streams;
	unsigned int period;	/* dpd period / cycle length; 0 none */
	size_t memory;		/* bytes held by the predictors */
};

struct zcr_eval;

struct zcr_eval *__zcr_eval_create(const struct zcr_eval_cfg *cfg);
/* 0, or -ENOMEM (the call is then not counted). */
int __zcr_eval_feed(struct zcr_eval *e, const struct zcr_call *c);
void __zcr_eval_get(const struct zcr_eval *e, struct zcr_eval_stats *s);
void __zcr_eval_destroy(struct zcr_eval *e);

/* Add the counters of @b to @a (period: keep a's unless it has none). */
void __zcr_eval_add(struct zcr_eval_stats *a, const struct zcr_eval_stats *b);

/*
 * The window argument zcpredict gives @pred: @win for the set predictors,
 * @dpd_n for dpd, the +k horizon @k for the selector, 0 otherwise.
 */
unsigned int __zcr_eval_window(const char *pred, unsigned int k,
			       unsigned int win, unsigned int dpd_n);

/* Percentage of hits, 0 when there were no calls. */
double __zcr_eval_pct(uint64_t hits, uint64_t calls);

#endif /* ZCR_REPLAY_H */
