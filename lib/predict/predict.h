/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * predict.h - receive-call predictors (internal to libzcrecv).
 *
 * One interface for every predictor: observe one receive call, then ask for
 * the k-th next call (k = 1 is the very next). Implementations live in
 * the files of lib/predict/; the receive path (lib/) and tools/zcpredict use them.
 * Predictors are deterministic: the same calls give the same predictions.
 */
#ifndef ZCR_PREDICT_H
#define ZCR_PREDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One receive call, as observed or predicted. */
struct zcr_call {
	uint64_t buf;		/* user buffer address */
	uint64_t size;		/* bytes */
	int32_t src;		/* source rank; -1 any, -2 reduction */
	int32_t tag;		/* tag; -1 for collectives */
	uint64_t comm;		/* communicator handle */
	uint64_t site;		/* call site (return address), 0 if unknown */
};

struct zcr_predictor;

/*
 * Create a predictor by name: "cycle", "tag", "tagcycle", "tagbettercycle",
 * "lru", "fifo", "lfu", "graph", "dpd", "select" (see
 * Documentation/predictors.md). window: set size for lru/fifo/lfu, N for dpd
 * (0 = default). Returns NULL on unknown name or no memory.
 */
struct zcr_predictor *__zcr_pred_create(const char *name, unsigned int window);
void __zcr_pred_destroy(struct zcr_predictor *p);

/* Learn from one call. */
void __zcr_pred_observe(struct zcr_predictor *p, const struct zcr_call *c);

/*
 * Predict the k-th next call (k >= 1). Returns true and fills *out, or
 * false for "no prediction".
 */
bool __zcr_pred_predict(struct zcr_predictor *p, unsigned int k,
			struct zcr_call *out);

/* Name as given to __zcr_pred_create, and bytes of memory in use. */
const char *__zcr_pred_name(const struct zcr_predictor *p);
size_t __zcr_pred_memory(const struct zcr_predictor *p);

/*
 * Additions for evaluation (tools/zcpredict, tests); the receive path needs
 * none of them.
 */

/*
 * Every candidate for the k-th next call, best first: up to @max calls in
 * out[], returns how many (0 = no prediction). Set predictors (lru, fifo,
 * lfu) return their whole window; the others at most one call.
 */
int __zcr_pred_candidates(struct zcr_predictor *p, unsigned int k,
			  struct zcr_call *out, int max);

/* Detected period (dpd) or current cycle length (cycle), 0 if none. */
unsigned int __zcr_pred_period(const struct zcr_predictor *p);

/* Names accepted by __zcr_pred_create, NULL-terminated. */
extern const char *const __zcr_pred_names[];

/* Hit definitions: which fields of a call must match. */
enum zcr_hit_def {
	ZCR_HIT_IDENT,	/* receive-call identity: src, tag, size, buf, comm */
	ZCR_HIT_BUFFER,	/* buffer prediction: buf, size, src */
	ZCR_HIT_NDEFS
};

bool __zcr_call_match(const struct zcr_call *a, const struct zcr_call *b,
		      enum zcr_hit_def def);

#endif /* ZCR_PREDICT_H */
