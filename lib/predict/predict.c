// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * predict.c - registry of the receive-call predictors, the call interning
 * table they share, and the dispatch of the interface in predict.h.
 *
 * Interning turns each distinct call identity into a dense id once, on
 * observe; after warm-up (no new distinct calls) nothing here allocates.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "impl.h"

/*
 * The registry: every predictor, one line X(NAME) each, NAME being what
 * ZCRECV_PREDICTOR and zcr_ctx_attr.predictor take (each line ends in a
 * backslash, up to the closing comment). X(NAME) declares
 * NAME's table (ZCR_PREDICTOR(NAME) in its file or folder) and defines
 * its completed copy.
 */
#define PREDICTORS(X)		\
	X(cycle)		\
	X(tag)			\
	X(tagcycle)		\
	X(tagbettercycle)	\
	X(lru)			\
	X(fifo)			\
	X(lfu)			\
	X(graph)		\
	X(dpd)			\
	X(select)		\
	/* end of the registry */

#define DECLARE(n) \
	extern ZCR_PREDICTOR(n); \
	struct zcr_pred_ops __zcr_pred_##n##_ops;
PREDICTORS(DECLARE)

static const struct zcr_reg_entry registry[] = {
#define ENTRY(n) { #n, &__zcr_pred_##n##_ops_def, &__zcr_pred_##n##_ops },
	PREDICTORS(ENTRY)
};

#define NREG	(sizeof(registry) / sizeof(registry[0]))

#define NAME(n)	#n,
const char *const __zcr_pred_names[] = { PREDICTORS(NAME) NULL };

/* The defaults of the optional ops (impl.h). */
static int no_init(struct zcr_predictor *p, unsigned int window)
{
	(void)p;
	(void)window;
	return 0;
}

static void no_fini(struct zcr_predictor *p)
{
	(void)p;
}

static int one_candidate(struct zcr_predictor *p, unsigned int k,
			 uint32_t *ids, int max)
{
	(void)max;
	return p->ops->predict(p, k, &ids[0]) ? 1 : 0;
}

static unsigned int no_period(const struct zcr_predictor *p)
{
	(void)p;
	return 0;
}

static const struct zcr_pred_ops defaults = {
	.size = sizeof(struct zcr_pred_ops),
	.init = no_init,
	.fini = no_fini,
	.candidates = one_candidate,
	.period = no_period,
};

#define OP(m, req)	ZCR_OP(struct zcr_pred_ops, m, req)
static const struct zcr_op members[] = {
	OP(name, true), OP(init, false), OP(fini, false),
	OP(observe, true), OP(predict, true), OP(candidates, false),
	OP(memory, true), OP(period, false),
};

/* .named: the name follows the size. */
_Static_assert(offsetof(struct zcr_pred_ops, name) == sizeof(size_t),
	       "struct zcr_pred_ops starts with size, then name");

static const struct zcr_kind kind = {
	.kind = "predictor",
	.full = sizeof(struct zcr_pred_ops),
	.dflt = &defaults,
	.ops = members,
	.nops = sizeof(members) / sizeof(members[0]),
	.named = true,
};

int __zcr_pred_ops_set(struct zcr_pred_ops *out,
		       const struct zcr_pred_ops *in, const char *name)
{
	return __zcr_ops_set(&kind, name, out, in);
}

static pthread_once_t registered = PTHREAD_ONCE_INIT;
static int register_err;

static void register_all(void)
{
	register_err = __zcr_registry_complete(&kind, registry, NREG);
}

int __zcr_grow(void **arr, uint32_t *cap, uint32_t need, size_t sz)
{
	uint32_t ncap = *cap ? *cap : 8;
	void *n;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*arr, (size_t)ncap * sz);
	if (!n)
		return -ENOMEM;
	memset((char *)n + (size_t)*cap * sz, 0, (size_t)(ncap - *cap) * sz);
	*arr = n;
	*cap = ncap;
	return 0;
}

bool __zcr_call_match(const struct zcr_call *a, const struct zcr_call *b,
		      enum zcr_hit_def def)
{
	if (a->buf != b->buf || a->size != b->size || a->src != b->src)
		return false;
	if (def == ZCR_HIT_BUFFER)
		return true;
	return a->tag == b->tag && a->comm == b->comm;
}

static uint64_t call_hash(const struct zcr_call *c)
{
	uint64_t h = c->buf * 0x9e3779b97f4a7c15ULL;

	h ^= (c->size + ((uint64_t)(uint32_t)c->src << 32)) *
	     0xc2b2ae3d27d4eb4fULL;
	h ^= ((uint64_t)(uint32_t)c->tag + c->comm) * 0x165667b19e3779f9ULL;
	return h ^ (h >> 29);
}

static int sym_rehash(struct zcr_symtab *t, uint32_t nslots)
{
	uint32_t *s = calloc(nslots, sizeof(*s));
	uint32_t i;

	if (!s)
		return -ENOMEM;
	for (i = 0; i < t->n; i++) {
		uint32_t j = call_hash(&t->calls[i]) & (nslots - 1);

		while (s[j])
			j = (j + 1) & (nslots - 1);
		s[j] = i + 1;
	}
	free(t->slots);
	t->slots = s;
	t->mask = nslots - 1;
	return 0;
}

/* Returns the id of @c, a new one if never seen; ZCR_NOID if out of memory. */
uint32_t __zcr_sym_intern(struct zcr_symtab *t, const struct zcr_call *c)
{
	uint32_t j, id;

	if (!t->slots && sym_rehash(t, 64))
		return ZCR_NOID;
	j = call_hash(c) & t->mask;
	while (t->slots[j]) {
		id = t->slots[j] - 1;
		if (__zcr_call_match(&t->calls[id], c, ZCR_HIT_IDENT)) {
			t->calls[id].site = c->site;
			return id;
		}
		j = (j + 1) & t->mask;
	}
	if (__zcr_grow((void **)&t->calls, &t->cap, t->n + 1,
		       sizeof(*t->calls)))
		return ZCR_NOID;
	id = t->n++;
	t->calls[id] = *c;
	t->slots[j] = id + 1;
	if (t->n * 2 > t->mask + 1 && sym_rehash(t, (t->mask + 1) * 2)) {
		t->n--;
		return ZCR_NOID;
	}
	return id;
}

size_t __zcr_sym_memory(const struct zcr_symtab *t)
{
	return (size_t)t->cap * sizeof(*t->calls) +
	       (t->slots ? (size_t)(t->mask + 1) * sizeof(*t->slots) : 0);
}

static const struct zcr_pred_ops *find_ops(const char *name)
{
	size_t i;

	pthread_once(&registered, register_all);
	if (register_err)
		return NULL;
	for (i = 0; i < NREG; i++)
		if (!strcmp(registry[i].name, name))
			return registry[i].ops;
	return NULL;
}

struct zcr_predictor *__zcr_pred_create_shared(const char *name,
					       unsigned int window,
					       struct zcr_symtab *syms)
{
	const struct zcr_pred_ops *ops = name ? find_ops(name) : NULL;
	struct zcr_predictor *p;

	if (!ops)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->ops = ops;
	p->window = window;
	p->syms = syms ? syms : &p->own;
	if (ops->priv_size) {
		p->priv = calloc(1, ops->priv_size);
		if (!p->priv)
			goto err;
	}
	if (ops->init(p, window))
		goto err;
	return p;
err:
	free(p->priv);
	free(p);
	return NULL;
}

struct zcr_predictor *__zcr_pred_create(const char *name, unsigned int window)
{
	return __zcr_pred_create_shared(name, window, NULL);
}

void __zcr_pred_destroy(struct zcr_predictor *p)
{
	if (!p)
		return;
	if (!p->off)
		p->ops->fini(p);
	free(p->own.calls);
	free(p->own.slots);
	free(p->priv);
	free(p);
}

void __zcr_pred_observe_id(struct zcr_predictor *p, uint32_t id,
			   const struct zcr_call *c)
{
	p->ops->observe(p, id, c);
}

/*
 * A program whose receives never repeat (a new buffer or a new tag every
 * time) teaches the predictor nothing it can use, yet every distinct call
 * stays in the interning table and in the tables of the predictors built
 * on it: without a bound they grow for as long as the program runs. Past
 * ZCR_SYM_MAX distinct calls the predictor starts over, empty, and learns
 * the program's current calls again (a cycle of a few calls within its
 * length). Only a predictor with its own table: a selector's members
 * start over with it (its fini and init).
 */
static void restart(struct zcr_predictor *p)
{
	p->ops->fini(p);
	free(p->own.calls);
	free(p->own.slots);
	memset(&p->own, 0, sizeof(p->own));
	if (p->ops->priv_size)
		memset(p->priv, 0, p->ops->priv_size);
	if (p->ops->init(p, p->window)) {
		/* Nothing to fini: init cleaned up after itself. */
		p->off = true;
		if (p->ops->priv_size)
			memset(p->priv, 0, p->ops->priv_size);
	}
}

void __zcr_pred_observe(struct zcr_predictor *p, const struct zcr_call *c)
{
	uint32_t id;

	if (p->syms == &p->own && p->own.n >= ZCR_SYM_MAX && !p->off)
		restart(p);
	if (p->off)
		return;
	id = __zcr_sym_intern(p->syms, c);

	/* Out of memory: skip learning rather than fail the receive. */
	if (id != ZCR_NOID)
		p->ops->observe(p, id, c);
}

bool __zcr_pred_predict_id(struct zcr_predictor *p, unsigned int k,
			   uint32_t *id)
{
	if (!k || p->off)
		return false;
	return p->ops->predict(p, k, id);
}

bool __zcr_pred_predict(struct zcr_predictor *p, unsigned int k,
			struct zcr_call *out)
{
	uint32_t id;

	if (!__zcr_pred_predict_id(p, k, &id) || id >= p->syms->n)
		return false;
	*out = p->syms->calls[id];
	return true;
}

int __zcr_pred_candidates(struct zcr_predictor *p, unsigned int k,
			  struct zcr_call *out, int max)
{
	uint32_t ids[64];
	int n, i, m = 0;

	if (!k || max <= 0 || p->off)
		return 0;
	if (max > 64)
		max = 64;
	n = p->ops->candidates(p, k, ids, max);
	for (i = 0; i < n; i++)
		if (ids[i] < p->syms->n)
			out[m++] = p->syms->calls[ids[i]];
	return m;
}

const char *__zcr_pred_name(const struct zcr_predictor *p)
{
	return p->ops->name;
}

size_t __zcr_pred_memory(const struct zcr_predictor *p)
{
	size_t m = sizeof(*p) + p->ops->priv_size;

	if (!p->off)
		m += p->ops->memory(p);

	if (p->syms == &p->own)
		m += __zcr_sym_memory(&p->own);
	return m;
}

unsigned int __zcr_pred_period(const struct zcr_predictor *p)
{
	if (p->off)
		return 0;
	return p->ops->period(p);
}
