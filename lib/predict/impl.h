/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * impl.h - what predictor implementations share (internal).
 *
 * The generic layer (predict.c) interns every distinct receive call into a
 * small integer id (struct zcr_symtab), so the predictors work on uint32
 * ids and never compare whole calls. Each implementation is one struct
 * zcr_pred_ops defined with ZCR_PREDICTOR(NAME), listed on one line of
 * the registry of predict.c (the registry convention: base/ops.h).
 */
#ifndef ZCR_PREDICT_IMPL_H
#define ZCR_PREDICT_IMPL_H

#include "base/ops.h"
#include "predict.h"

#define ZCR_NOID	UINT32_MAX

/* Interning table: call identity (buf, size, src, tag, comm) -> id. */
struct zcr_symtab {
	struct zcr_call *calls;	/* by id; site = site of the last sighting */
	uint32_t *slots;	/* open addressing, id + 1, 0 = empty */
	uint32_t n, cap;	/* ids in use, capacity of calls[] */
	uint32_t mask;		/* slots[] size - 1 */
};

/*
 * Registration (base/ops.h): size first; name (the registry line's NAME),
 * observe, predict and memory are required; init (nothing to set up),
 * fini (nothing), candidates (the one call predict() gives) and period
 * (0) have defaults.
 */
struct zcr_pred_ops {
	size_t size;		/* sizeof(struct zcr_pred_ops) */
	const char *name;
	size_t priv_size;
	int (*init)(struct zcr_predictor *p, unsigned int window);
	void (*fini)(struct zcr_predictor *p);
	void (*observe)(struct zcr_predictor *p, uint32_t id,
			const struct zcr_call *c);
	bool (*predict)(struct zcr_predictor *p, unsigned int k,
			uint32_t *id);
	/* Optional: every candidate for +k (set predictors); else predict. */
	int (*candidates)(struct zcr_predictor *p, unsigned int k,
			  uint32_t *ids, int max);
	size_t (*memory)(const struct zcr_predictor *p);
	/* Optional: detected period or cycle length, 0 if none. */
	unsigned int (*period)(const struct zcr_predictor *p);
};

struct zcr_predictor {
	const struct zcr_pred_ops *ops;
	struct zcr_symtab *syms;	/* own, or the selector's */
	struct zcr_symtab own;
	void *priv;
	unsigned int window;		/* as created: for a restart */
	bool off;			/* a restart found no memory */
};

/*
 * Distinct calls a predictor learns before it starts over, empty
 * (predict.c, restart()).
 */
#define ZCR_SYM_MAX	(1u << 15)

/* Symbol table helpers (predict.c). */
uint32_t __zcr_sym_intern(struct zcr_symtab *t, const struct zcr_call *c);
size_t __zcr_sym_memory(const struct zcr_symtab *t);


/* Create a predictor that shares the interning table @syms (selector). */
struct zcr_predictor *__zcr_pred_create_shared(const char *name,
					       unsigned int window,
					       struct zcr_symtab *syms);
void __zcr_pred_observe_id(struct zcr_predictor *p, uint32_t id,
			   const struct zcr_call *c);
bool __zcr_pred_predict_id(struct zcr_predictor *p, unsigned int k,
			   uint32_t *id);

/* Grow *arr (element size @sz) to hold at least @need; 0 or -ENOMEM. */
int __zcr_grow(void **arr, uint32_t *cap, uint32_t need, size_t sz);

/*
 * Cycle engine shared by Single-cycle, Tag-cycle and Tag-bettercycle
 * (cycle.c).
 */
#define ZCR_CYC_MAX	4096	/* longest cycle kept */
#define ZCR_CYC_INIT	5	/* a first cycle longer than this may drop
				 * its leading (initialisation) calls */
struct zcr_cyc {
	uint32_t *log;		/* the cycle, or the calls since the head */
	uint32_t len, cap;
	uint32_t pos;		/* index of the last observed call (formed) */
	uint32_t last;		/* last observed call */
	uint64_t bloom;		/* ids in log, for a cheap "not there" */
	bool formed;
	bool resync;		/* bettercycle: realign instead of restart */
};

void __zcr_cyc_observe(struct zcr_cyc *c, uint32_t id);
bool __zcr_cyc_predict(const struct zcr_cyc *c, unsigned int k,
		       uint32_t *id);
void __zcr_cyc_free(struct zcr_cyc *c);

/*
 * Define predictor NAME's ops table, starting with .size:
 * ZCR_PREDICTOR(NAME) = { .size = sizeof(struct zcr_pred_ops), ... };
 * the registry's line X(NAME) in predict.c declares it and the library
 * calls its completed copy __zcr_pred_NAME_ops.
 */
#define ZCR_PREDICTOR(n) \
	const struct zcr_pred_ops __zcr_pred_##n##_ops_def

/*
 * Complete the table in (registered as name) into out, as the registry
 * does for each predictor. 0, or -EINVAL with the reason on stderr.
 */
int __zcr_pred_ops_set(struct zcr_pred_ops *out,
		       const struct zcr_pred_ops *in, const char *name);


#endif /* ZCR_PREDICT_IMPL_H */
