// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * engine.c - the remap engine: the registry of backends, which of them a
 * context uses, where a message is staged for them, and the landing
 * policy: copy the staged bytes or remap the full pages.
 *
 * The auto policy decides per backend and per size class (messages of 2^k
 * to 2^(k+1) - 1 bytes) from what landings of that class actually cost:
 * the landings the engine decides are timed whole (moves, registration,
 * faults, the first read of every moved page, head and tail copies, any
 * fallback copy) and folded into a moving average of their kind: every
 * one, but the cheaper kind's in a warm class when the clock's reads
 * would cost over 1% of them (remap.h, ZCR_LAND_TIMING_SHARE). The cheaper
 * kind wins; one landing in ZCR_LAND_EXPLORE takes the other (fewer when
 * the other costs several times more: exploring never costs more than
 * 1/ZCR_LAND_EXPLORE of the class's landings), so a wrong estimate or a
 * machine that changed is noticed and corrected. A
 * calibration at context creation (copy and remap of 64 KiB and of one
 * 2 MiB unit, best of three) seeds every class as one sample: a prior,
 * replaced by the first real landing; a class takes ZCR_LAND_WARM
 * samples of each kind (the prior counts) before it trusts the cheaper
 * one, fewer of a kind two real landings measured 8x dearer. While it
 * warms up, a kind's cost is its cheapest real landing (one slowed by a
 * fault cannot decide the class); the moving average starts from there.
 * Forced remap landings are timed too; under the copy policy messages are
 * staged in plain memory (the copy backend), so those copies are not
 * timed here.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "base/ctx.h"
#include "base/ops.h"
#include "remap/remap.h"

#define CAL_SMALL	(64UL << 10)
#define CAL_RUNS	3
#define CAL_CLOCK_READS	32
#define LAND_CLAMP	2.0	/* a sample counts at most 2x the average */
#define LAND_WARM_SKIP	8.0	/* warm-up ends for a kind 8x dearer */
#define LAND_WEIGHT	0.25	/* of a sample in the moving average */
#define LAND_WEIGHT_RARE 0.5	/* of one of the dearer kind */

/*
 * The registry: every backend, one line X(NAME) each, in the order auto
 * tries them (copy, the fallback, is tried last wherever it is listed;
 * each line ends in a backslash, up to the closing comment).
 * X(NAME) declares NAME's table (ZCR_REMAP_BACKEND(NAME) in its file or
 * folder) and defines its completed copy.
 */
#define BACKENDS(X)	\
	X(kmod)		\
	X(uffd)		\
	X(copy)		\
	/* end of the registry */

#define DECLARE(n) \
	extern ZCR_REMAP_BACKEND(n); \
	struct zcr_remap_ops __zcr_remap_##n;
BACKENDS(DECLARE)

static const struct zcr_reg_entry registry[] = {
#define ENTRY(n) { #n, &__zcr_remap_##n##_def, &__zcr_remap_##n },
	BACKENDS(ENTRY)
};

#define NREG	(sizeof(registry) / sizeof(registry[0]))

/* The defaults of the optional ops (remap.h). */
static int no_init(struct zcr_ctx *ctx, void *priv)
{
	(void)ctx;
	(void)priv;
	return 0;
}

static void no_fini(struct zcr_ctx *ctx, void *priv)
{
	(void)ctx;
	(void)priv;
}

static size_t same_size(struct zcr_ctx *ctx, void *priv, size_t len)
{
	(void)ctx;
	(void)priv;
	return len;
}

static bool never(struct zcr_ctx *ctx, void *priv, const void *dst,
		  size_t len)
{
	(void)ctx;
	(void)priv;
	(void)dst;
	(void)len;
	return false;
}

static const struct zcr_remap_ops defaults = {
	.size = sizeof(struct zcr_remap_ops),
	.init = no_init,
	.fini = no_fini,
	.slot_size = same_size,
	.eligible = never,
};

/* The capabilities (unit, unit_at, remap, prepare, unprepare) stay NULL. */
#define OP(m, req)	ZCR_OP(struct zcr_remap_ops, m, req)
static const struct zcr_op members[] = {
	OP(name, true), OP(init, false), OP(fini, false),
	OP(slot_size, false), OP(slot_alloc, true), OP(slot_free, true),
	OP(eligible, false),
};

static const struct zcr_kind kind = {
	.kind = "remap backend",
	.full = sizeof(struct zcr_remap_ops),
	.dflt = &defaults,
	.ops = members,
	.nops = sizeof(members) / sizeof(members[0]),
};

int __zcr_remap_ops_set(struct zcr_remap_ops *out,
			const struct zcr_remap_ops *in, const char *name)
{
	return __zcr_ops_set(&kind, name, out, in);
}

static pthread_once_t registered = PTHREAD_ONCE_INIT;
static int register_err;

static void register_all(void)
{
	register_err = __zcr_registry_complete(&kind, registry, NREG);
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int __zcr_remap_lookup(const char *name)
{
	size_t i;

	if (!strcmp(name, "auto"))
		return ZCRECV_BACKEND_AUTO;
	for (i = 0; i < NREG; i++) {
		const struct zcr_remap_ops *ops = registry[i].def;

		if (!strcmp(name, ops->name) ||
		    (ops->alias && !strcmp(name, ops->alias)))
			return ops->id;
	}
	return -EINVAL;
}

const char *zcr_backend_name(int backend)
{
	size_t i;

	if (backend == ZCRECV_BACKEND_AUTO)
		return "auto";
	for (i = 0; i < NREG; i++) {
		const struct zcr_remap_ops *ops = registry[i].def;

		if (ops->id == backend)
			return ops->name;
	}
	return "?";
}

const char *zcr_policy_name(int policy)
{
	switch (policy) {
	case ZCRECV_POLICY_AUTO:
		return "auto";
	case ZCRECV_POLICY_COPY:
		return "copy";
	case ZCRECV_POLICY_REMAP:
		return "remap";
	}
	return "?";
}

/* ---- the policy ----------------------------------------------------------- */

uint64_t __zcr_land_explore_period(const struct zcr_land_class *c)
{
	double lo = c->cost[ZCR_LAND_COPY], hi = c->cost[ZCR_LAND_REMAP], r;

	if (lo > hi) {
		r = lo;
		lo = hi;
		hi = r;
	}
	r = lo > 0 ? hi / lo : ZCR_LAND_EXPLORE_SCALE;
	if (r < 1)
		r = 1;
	if (r > ZCR_LAND_EXPLORE_SCALE)
		r = ZCR_LAND_EXPLORE_SCALE;
	return (uint64_t)(ZCR_LAND_EXPLORE * r);
}

/*
 * Still warming kind k up? Until it has ZCR_LAND_WARM samples, unless two
 * real ones already put it LAND_WARM_SKIP times above the other kind:
 * more samples of a kind that much dearer would cost more than they tell.
 * Two, not one: a first landing slowed by a fault or a preemption (a 4
 * KiB copy of 5 ms in an emulated guest, against remaps of 100 us) would
 * otherwise end the warm-up of the kind it befell, and the class stayed
 * on the other for thousands of landings, until exploring.
 */
static bool warming(const struct zcr_land_class *c, int k)
{
	return c->n[k] < ZCR_LAND_WARM &&
	       (c->n[k] - c->prior[k] < 2 ||
		c->cost[k] < LAND_WARM_SKIP * c->cost[!k]);
}

static int cheaper(const struct zcr_land_class *c)
{
	return c->cost[ZCR_LAND_REMAP] * ZCR_LAND_REMAP_BIAS <
	       c->cost[ZCR_LAND_COPY] ? ZCR_LAND_REMAP : ZCR_LAND_COPY;
}

int __zcr_land_choose(struct zcr_land_class *c)
{
	int k, best;

	c->tick++;
	best = cheaper(c);
	if (warming(c, ZCR_LAND_COPY) || warming(c, ZCR_LAND_REMAP)) {
		/* Warming up: the kind with fewer samples, else the cheaper. */
		k = c->n[ZCR_LAND_COPY] < c->n[ZCR_LAND_REMAP] ?
		    ZCR_LAND_COPY : ZCR_LAND_REMAP;
		if (c->n[ZCR_LAND_COPY] == c->n[ZCR_LAND_REMAP] ||
		    !warming(c, k))
			k = best;
	} else if (++c->since >= __zcr_land_explore_period(c)) {
		c->since = 0;
		k = !best;
	} else {
		k = best;
	}
	c->last = k;
	return k;
}

bool __zcr_land_copy_ahead(struct zcr_land_class *c)
{
	bool explore;

	if (warming(c, ZCR_LAND_COPY) || warming(c, ZCR_LAND_REMAP))
		return false;
	explore = c->since + 1 >= __zcr_land_explore_period(c);
	if ((cheaper(c) == ZCR_LAND_COPY) == explore)
		return false;
	/*
	 * This landing is decided now, as __zcr_land_choose() would: a copy,
	 * either the class's own (one more towards the next exploring
	 * landing) or the one that explores copy for a remapping class.
	 */
	c->tick++;
	c->since = explore ? 0 : c->since + 1;
	c->last = ZCR_LAND_COPY;
	return true;
}

void __zcr_land_prior(struct zcr_land_class *c, int k, double ns)
{
	c->cost[k] = ns > 0 ? ns : 0;
	c->n[k] = 1;
	c->prior[k] = 1;
}

bool __zcr_land_timed(struct zcr_land_class *c, int k, double clock_ns)
{
	double every;

	if (warming(c, ZCR_LAND_COPY) || warming(c, ZCR_LAND_REMAP) ||
	    k != cheaper(c) || c->cost[k] <= 0)
		return true;
	every = 2 * clock_ns * ZCR_LAND_TIMING_SHARE / c->cost[k];
	if (every > ZCR_LAND_SAMPLE_MAX)
		every = ZCR_LAND_SAMPLE_MAX;
	if ((double)++c->untimed < every)
		return false;
	c->untimed = 0;
	return true;
}

void __zcr_land_record(struct zcr_land_class *c, int k, double ns)
{
	double *avg = &c->cost[k];

	if (ns < 0)
		ns = 0;
	if (c->n[k] == c->prior[k]) {
		/* The first real sample: it replaces the prior. */
		*avg = ns;
		c->n[k]++;
		return;
	}
	if (c->n[k] < ZCR_LAND_WARM) {
		/*
		 * Warming up: the cheapest real landing so far. Landings are
		 * only ever slowed by what befalls them (a fault, a
		 * preemption): the cheapest of a few is what the kind costs,
		 * the mean of a few is as bad as the worst of them. The
		 * moving average takes over from there.
		 */
		if (ns < *avg)
			*avg = ns;
		c->n[k]++;
		return;
	}
	/* One preempted landing must not flip an established choice (an
	 * average of 0, from a clock too coarse for the landing, follows). */
	if (*avg > 0 && ns > LAND_CLAMP * *avg)
		ns = LAND_CLAMP * *avg;
	/* A moving average; rare samples of the other kind weigh more, so
	 * that a change is seen in few of them. */
	*avg += (ns - *avg) * (k == cheaper(c) ? LAND_WEIGHT :
			       LAND_WEIGHT_RARE);
	c->n[k]++;
}

static unsigned int class_of(size_t n)
{
	unsigned int k = n ? 63 - (unsigned int)__builtin_clzll(n) : 0;

	return k < ZCR_LAND_CLASSES ? k : ZCR_LAND_CLASSES - 1;
}

/* ---- backends of a context ------------------------------------------------ */

struct zcr_backend_state *__zcr_remap_state(struct zcr_ctx *ctx,
					    const struct zcr_remap_ops *ops)
{
	int i;

	for (i = 0; i < ctx->nbe; i++)
		if (ctx->be[i].ops == ops)
			return &ctx->be[i];
	return &ctx->be[ctx->nbe - 1];
}

/* Memory a backend can remap into, as an application would have it. */
static int cal_dst(struct zcr_ctx *ctx, const struct zcr_remap_ops *ops,
		   size_t len, void **p)
{
	if (ops->id == ZCRECV_BACKEND_KMOD)
		return __zcr_zone_map(ctx, len, __zcr_zone_huge(ctx, len), p);
	return __zcr_anon_map(len, len >= ZCR_HUGE_SIZE, p);
}

static void touch_pages(struct zcr_ctx *ctx, const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i += ctx->page)
		(void)*(volatile const char *)(p + i);
}

/* Best of CAL_RUNS copies and remaps of len bytes: ns each, 0 if none. */
static void cal_size(struct zcr_ctx *ctx, struct zcr_backend_state *bs,
		     size_t len, double *copy, double *rm)
{
	const struct zcr_remap_ops *ops = bs->ops;
	struct zcr_slot s = { .ops = ops };
	void *dst;
	double t;
	int i;

	*copy = *rm = 0;
	s.cap = ops->slot_size(ctx, bs->priv, len);
	if (ops->slot_alloc(ctx, bs->priv, s.cap, (void **)&s.base) < 0)
		return;
	if (cal_dst(ctx, ops, len, &dst) < 0) {
		ops->slot_free(ctx, bs->priv, s.base, s.cap);
		return;
	}
	memset(dst, 1, len);
	for (i = 0; i < CAL_RUNS; i++) {
		memset(s.base, 2 + i, len);
		t = now_ns();
		memcpy(dst, s.base, len);
		t = now_ns() - t;
		if (!*copy || t < *copy)
			*copy = t;
		t = now_ns();
		if (ops->remap(ctx, bs->priv, dst, &s, 0, len) != (long)len) {
			*rm = 0;
			break;
		}
		touch_pages(ctx, dst, len);
		t = now_ns() - t;
		if (!*rm || t < *rm)
			*rm = t;
	}
	munmap(dst, len);
	ops->slot_free(ctx, bs->priv, s.base, s.cap);
}

/* What one clock read costs: the best of a few runs of reads. */
static double cal_clock(void)
{
	double best = 0, t0, t;
	int run, i;

	for (run = 0; run < 3; run++) {
		t0 = now_ns();
		for (i = 0; i < CAL_CLOCK_READS; i++)
			t = now_ns();
		t = (t - t0) / CAL_CLOCK_READS;
		if (!run || t < best)
			best = t;
	}
	return best;
}

_Static_assert(ZCR_LAND_CLASSES <= 64, "a bit per class in remapping");

/* Keep bit k of bs->remapping for class k = c after its costs changed. */
static void note_class(struct zcr_backend_state *bs,
		       const struct zcr_land_class *c)
{
	uint64_t bit = 1ULL << (c - bs->cls);

	if (c->n[ZCR_LAND_REMAP] && cheaper(c) == ZCR_LAND_REMAP)
		bs->remapping |= bit;
	else
		bs->remapping &= ~bit;
}

/* Seed every size class with one sample scaled from the calibration. */
static void calibrate(struct zcr_ctx *ctx, struct zcr_backend_state *bs)
{
	double c[2], r[2];
	unsigned int k;

	bs->clock_ns = cal_clock();
	cal_size(ctx, bs, CAL_SMALL, &c[0], &r[0]);
	cal_size(ctx, bs, ZCR_HUGE_SIZE, &c[1], &r[1]);
	bs->copy_ns = c[0] / (double)(CAL_SMALL / ctx->page);
	bs->remap_ns = r[0] / (double)(CAL_SMALL / ctx->page);
	for (k = 0; k < ZCR_LAND_CLASSES; k++) {
		struct zcr_land_class *cl = &bs->cls[k];
		double size = (double)(1ULL << (k < 62 ? k : 62));
		int i = size >= ZCR_HUGE_SIZE && r[1] > 0 ? 1 : 0;
		double base = i ? ZCR_HUGE_SIZE : CAL_SMALL;

		if (!c[i] || !r[i])
			continue;
		/* Copies scale with the bytes; a remap has a fixed cost. */
		__zcr_land_prior(cl, ZCR_LAND_COPY, c[i] * size / base);
		__zcr_land_prior(cl, ZCR_LAND_REMAP, size < base ? r[i] :
				 r[i] * size / base);
		note_class(bs, cl);
	}
}

int __zcr_remap_setup(struct zcr_ctx *ctx, int want)
{
	size_t k;

	pthread_once(&registered, register_all);
	if (register_err)
		return register_err;
	ctx->nbe = 0;
	ctx->be = calloc(NREG, sizeof(*ctx->be));
	if (!ctx->be)
		return -ENOMEM;
	/* Copy last: the fallback, and what __zcr_remap_pick() assumes. */
	for (k = 0; k <= NREG; k++) {
		const struct zcr_remap_ops *ops;
		struct zcr_backend_state *bs = &ctx->be[ctx->nbe];
		bool last = k == NREG;

		if (!last && registry[k].ops == &__zcr_remap_copy)
			continue;
		ops = last ? &__zcr_remap_copy : registry[k].ops;
		if (!last && (want == ZCRECV_BACKEND_COPY ||
			      (want != ZCRECV_BACKEND_AUTO && want != ops->id)))
			continue;
		memset(bs, 0, sizeof(*bs));
		bs->ops = ops;
		if (ops->priv_size) {
			bs->priv = calloc(1, ops->priv_size);
			if (!bs->priv)
				continue;
		}
		if (ops->init(ctx, bs->priv) < 0) {
			free(bs->priv);
			continue;
		}
		ctx->nbe++;
		if (ops->remap)
			calibrate(ctx, bs);
	}
	if (want != ZCRECV_BACKEND_AUTO && ctx->be[0].ops->id != want)
		return -EOPNOTSUPP;
	return 0;
}

void __zcr_remap_teardown(struct zcr_ctx *ctx)
{
	int i;

	for (i = 0; i < ctx->nbe; i++) {
		ctx->be[i].ops->fini(ctx, ctx->be[i].priv);
		free(ctx->be[i].priv);
	}
	ctx->nbe = 0;
	free(ctx->be);
	ctx->be = NULL;
}

const struct zcr_remap_ops *__zcr_remap_pick(struct zcr_ctx *ctx,
					     const void *dst, size_t len,
					     struct zcr_backend_state **by)
{
	struct zcr_backend_state *bs;
	int i;

	if (by)
		*by = NULL;
	if (!dst || ctx->policy == ZCRECV_POLICY_COPY)
		return &__zcr_remap_copy;
	for (i = 0; i < ctx->nbe - 1; i++) {
		bs = &ctx->be[i];
		if (!bs->ops->eligible(ctx, bs->priv, dst, len))
			continue;
		/*
		 * Auto, and this landing will copy (the class copies, or it
		 * remaps and this one explores copy): stage in plain memory,
		 * as a copy in earnest is. In the emulated guest a message
		 * staged in a zone slot of /dev/zcrecv and copied out cost
		 * about 3% more at 4-256 KiB than one staged in anonymous
		 * memory, and up to 4 times as much at 1 MiB
		 * (Documentation/library.md, "Staging pool"): timed from
		 * the slot, copy would be explored at a cost it never has.
		 * The landing that explores remap gets the backend's slot.
		 */
		if (by && ctx->policy == ZCRECV_POLICY_AUTO &&
		    __zcr_land_copy_ahead(&bs->cls[class_of(len)])) {
			*by = bs;
			return &__zcr_remap_copy;
		}
		return bs->ops;
	}
	return &__zcr_remap_copy;
}

/*
 * Room a landing of len bytes into dst may move along after the message:
 * the bytes from its end to the next unit boundary, when they are the
 * unused end of dst's zcr_mem_alloc block (__zcr_mem_room) and the
 * message plus them hold a whole unit the message alone does not reach
 * the end of (a 1 MiB message filling a 1 MiB block mapped as one 2 MiB
 * unit moves as one PMD instead of 256 pages). 0 otherwise.
 */
static size_t room_for(struct zcr_ctx *ctx, const struct zcr_remap_ops *ops,
		       struct zcr_backend_state *bs, const void *dst,
		       size_t len)
{
	uintptr_t end = (uintptr_t)dst + len, a, ue;
	size_t room, unit;

	if (!ops->unit || !dst || !len ||
	    len > SIZE_MAX - 4 * ZCR_HUGE_SIZE)
		return 0;
	room = __zcr_mem_room(ctx, dst, len);
	if (!room)
		return 0;
	unit = ops->unit(ctx, bs->priv, len + room);
	if (unit <= ctx->page)
		return 0;
	a = ((uintptr_t)dst + unit - 1) & ~(uintptr_t)(unit - 1);
	ue = (end + unit - 1) & ~(uintptr_t)(unit - 1);
	if (ue == end || ue - end > room || ue - a < unit)
		return 0;
	return ue - end;
}

size_t __zcr_remap_stage_offset(struct zcr_ctx *ctx,
				const struct zcr_remap_ops *ops,
				const void *dst, size_t len, size_t *room)
{
	struct zcr_backend_state *bs = __zcr_remap_state(ctx, ops);
	size_t r = room_for(ctx, ops, bs, dst, len);
	size_t unit = ops->unit ? ops->unit(ctx, bs->priv, len + r) :
		      ctx->page;

	if (room)
		*room = r;
	return (size_t)((uintptr_t)dst & (unit - 1));
}

uint64_t __zcr_remap_min_pages(struct zcr_ctx *ctx)
{
	struct zcr_backend_state *bs = &ctx->be[0];
	unsigned int k;

	if (!bs->ops->remap || ctx->policy == ZCRECV_POLICY_COPY)
		return 0;
	if (ctx->policy == ZCRECV_POLICY_REMAP)
		return 1;
	if (!bs->remapping)
		return 0;
	k = (unsigned int)__builtin_ctzll(bs->remapping);
	return ((1ULL << k) + ctx->page - 1) / ctx->page;
}

/* ---- landing -------------------------------------------------------------- */

/*
 * The first read of a page moved at 4 KiB granularity may cost a page-table
 * fill (a few µs under nested virtualisation): pay it here, where the
 * landing is timed, not later in the application. Whole 2 MiB units moved
 * as one PMD cost one fill each; their pages are not read one by one (that
 * would pull 512 cache lines from memory for nothing).
 */
static void touch_moved(struct zcr_ctx *ctx, struct zcr_backend_state *bs,
			struct zcr_slot *s, const char *p, size_t len)
{
	uintptr_t a = ((uintptr_t)p + ZCR_HUGE_SIZE - 1) &
		      ~(uintptr_t)(ZCR_HUGE_SIZE - 1);
	uintptr_t e = ((uintptr_t)p + len) & ~(uintptr_t)(ZCR_HUGE_SIZE - 1);

	if (!bs->ops->unit ||
	    bs->ops->unit(ctx, bs->priv, s->cap) < ZCR_HUGE_SIZE || e <= a) {
		touch_pages(ctx, p, len);
		return;
	}
	touch_pages(ctx, p, a - (uintptr_t)p);
	for (; a < e; a += ZCR_HUGE_SIZE)
		(void)*(volatile const char *)a;
	touch_pages(ctx, (const char *)e, (uintptr_t)p + len - e);
}

/*
 * Remap the full pages [a, e) of dst; copy the rest. e may lie past the
 * message's end, in room the landing may overwrite (room_for()).
 */
static void land_remap(struct zcr_ctx *ctx, struct zcr_backend_state *bs,
		       struct zcr_slot *s, size_t off, char *dst, size_t n,
		       uintptr_t a, uintptr_t e)
{
	size_t head = a - (uintptr_t)dst, full = e - a;
	size_t body = e > (uintptr_t)dst + n ? n - head : full;
	const char *src = s->base + off;
	size_t moved;
	long done;

	/* Head and tail first: a remap may hand the slot other memory. */
	memcpy(dst, src, head);
	memcpy(dst + head + body, src + head + body, n - head - body);
	done = bs->ops->remap(ctx, bs->priv, (void *)a, s, off + head, full);
	if (done < 0)
		done = 0;
	if (done)
		ctx->st.remaps++;
	/*
	 * A whole exchange leaves the slot holding the pages that were at
	 * [a, e): small ones unless they came from a block of huge pages
	 * (staging.h). Only slots of 2 MiB units care (uffd-move).
	 */
	if ((size_t)done == full && !s->ops->units_only && s->ops->unit &&
	    s->ops->unit(ctx, bs->priv, s->cap) >= ZCR_HUGE_SIZE)
		s->small = !__zcr_mem_thp(ctx, (void *)a, full);
	/* What of the message moved; room that did not is nobody's. */
	moved = (size_t)done < body ? (size_t)done : body;
	if (moved < body) {
		ctx->st.remap_fallbacks++;
		src = s->base + off;
		memcpy(dst + head + moved, src + head + moved, body - moved);
	}
	touch_moved(ctx, bs, s, (const char *)a, moved);
	/* a last page partly message, partly room, counts as remapped */
	ctx->st.pages_remapped += ((uint64_t)moved + ctx->page - 1) /
				  ctx->page;
	ctx->st.bytes_copied += n - moved;
}

/*
 * One landing of class c of bs by kind k, timed when the policy asks for
 * a sample: [a, e) is what a remap may move. What preparing it cost
 * (s->prep_ns) is part of its time.
 */
static void land_kind(struct zcr_ctx *ctx, struct zcr_backend_state *bs,
		      struct zcr_land_class *c, int k, struct zcr_slot *s,
		      size_t off, char *dst, size_t n, uintptr_t a,
		      uintptr_t e)
{
	bool timed = s->timed ? s->timed == 2 :
		     __zcr_land_timed(c, k, bs->clock_ns);
	double t = timed ? now_ns() : 0;

	s->timed = 0;
	if (k == ZCR_LAND_REMAP) {
		land_remap(ctx, bs, s, off, dst, n, a, e);
	} else {
		memcpy(dst, s->base + off, n);
		ctx->st.bytes_copied += n;
	}
	if (timed) {
		__zcr_land_record(c, k, now_ns() - t + s->prep_ns);
		note_class(bs, c);
	}
	s->prep_ns = 0;
}

/*
 * The part [*ap, *ep) of dst that a landing of n bytes staged in s at off
 * may remap, with the backend's state; false when it can only be copied.
 */
static bool remap_range(struct zcr_ctx *ctx, struct zcr_slot *s, size_t off,
			char *dst, size_t n, bool same_offset,
			struct zcr_backend_state **bsp, uintptr_t *ap,
			uintptr_t *ep)
{
	uintptr_t a = ((uintptr_t)dst + ctx->page - 1) & ~(ctx->page - 1);
	uintptr_t e = ((uintptr_t)dst + n) & ~(ctx->page - 1);
	struct zcr_backend_state *bs = __zcr_remap_state(ctx, s->ops);
	bool thp;

	/*
	 * Whole units only: a backend whose memory comes in units (kmod),
	 * or the huge pages of a zcr_mem_alloc block (uffd-move), from a
	 * huge slot at the same offset; the rest is copied. A move of part
	 * of a block's unit splits its huge page and the slot's, and their
	 * 4 KiB pages go on circulating between slots and buffers: each
	 * later exchange of those units moves 512 pages instead of one PMD
	 * (a 2 MiB landing 30-40 times dearer, Documentation/library.md).
	 */
	thp = !s->ops->units_only && s->ops->unit && e > a &&
	      __zcr_mem_thp(ctx, (void *)a, e - a);
	if ((s->ops->units_only || thp) && s->ops->unit) {
		/* the slot is unit aligned: so is dst's part at its offset */
		uintptr_t u = s->ops->unit(ctx, bs->priv, s->cap);

		if (thp && (u < ZCR_HUGE_SIZE || s->small ||
			    ((off ^ (uintptr_t)dst) & (u - 1))))
			return false;
		a = (a + u - 1) & ~(u - 1);
		e &= ~(u - 1);
	}
	if (same_offset && s->ops->unit) {
		/* Room after the message: its last unit may move whole. */
		size_t room = room_for(ctx, s->ops, bs, dst, n);
		uintptr_t u = s->ops->unit(ctx, bs->priv, s->cap);

		if (room && off + n + room <= s->cap &&
		    !((off ^ (uintptr_t)dst) & (u - 1)))
			e = (uintptr_t)dst + n + room;
	}
	if (!same_offset || !s->ops->remap || e <= a)
		return false;
	/*
	 * [a, e) must be the backend's memory and, where it comes in several
	 * units (kmod), of the slot's unit (a huge zone and a 4 KiB one
	 * cannot trade): unit_at answers both in one look up.
	 */
	if (s->ops->unit_at ?
	    s->ops->unit_at(ctx, bs->priv, (void *)a, e - a) !=
	    s->ops->unit(ctx, bs->priv, s->cap) :
	    !s->ops->eligible(ctx, bs->priv, (void *)a, e - a))
		return false;
	*bsp = bs;
	*ap = a;
	*ep = e;
	return true;
}

static int land_decide(struct zcr_ctx *ctx, struct zcr_land_class *c)
{
	if (ctx->policy == ZCRECV_POLICY_COPY)
		return ZCR_LAND_COPY;
	if (ctx->policy == ZCRECV_POLICY_REMAP)
		return ZCR_LAND_REMAP;
	return __zcr_land_choose(c);
}

void __zcr_remap_unprepare_locked(struct zcr_ctx *ctx, struct zcr_slot *s,
				  bool abandoned)
{
	if (s->prep && s->ops->unprepare)
		s->ops->unprepare(ctx, __zcr_remap_state(ctx, s->ops)->priv, s,
				  abandoned);
	s->prep = NULL;
	s->kind = 0;
	s->timed = 0;
	s->prep_ns = 0;
}

void __zcr_remap_prepare_locked(struct zcr_ctx *ctx, struct zcr_slot *s,
				size_t off, char *dst, size_t n,
				bool same_offset, struct zcr_backend_state *by)
{
	struct zcr_backend_state *bs;
	struct zcr_land_class *c;
	uintptr_t a, e;
	double t = 0;
	int k;

	/* Staged in plain memory to be copied (by), or nothing to move. */
	if (by || !n || !s->ops->prepare || s->kind ||
	    !remap_range(ctx, s, off, dst, n, same_offset, &bs, &a, &e))
		return;
	c = &bs->cls[class_of(n)];
	k = land_decide(ctx, c);
	s->kind = k + 1;
	if (k != ZCR_LAND_REMAP)
		return;
	/* Whether the landing is a sample: decided now, as for its kind. */
	s->timed = __zcr_land_timed(c, k, bs->clock_ns) ? 2 : 1;
	if (s->timed == 2)
		t = now_ns();
	/* Exactly what land_remap() will ask ops->remap() to move. */
	if (s->ops->prepare(ctx, bs->priv, (void *)a, s,
			    off + (a - (uintptr_t)dst), e - a) == 0 &&
	    s->timed == 2)
		s->prep_ns = now_ns() - t;
}

void __zcr_remap_deliver_locked(struct zcr_ctx *ctx, struct zcr_slot *s,
				size_t off, char *dst, size_t n,
				bool same_offset, struct zcr_backend_state *by)
{
	struct zcr_backend_state *bs;
	struct zcr_land_class *c;
	uintptr_t a, e;
	int k;

	if (by && same_offset && n) {
		/*
		 * Staged in plain memory because auto's landing of its class
		 * at by copies (__zcr_remap_pick): that copy is the class's
		 * landing, timed for it as one from by's slot would be.
		 */
		land_kind(ctx, by, &by->cls[class_of(n)], ZCR_LAND_COPY, s,
			  off, dst, n, 0, 0);
		return;
	}
	if (!remap_range(ctx, s, off, dst, n, same_offset, &bs, &a, &e))
		goto copy_all;
	c = &bs->cls[class_of(n)];
	/* Decided when the receive took the message still landing. */
	k = s->kind ? s->kind - 1 : land_decide(ctx, c);
	s->kind = 0;
	land_kind(ctx, bs, c, k, s, off, dst, n, a, e);
	return;
copy_all:
	__zcr_remap_unprepare_locked(ctx, s, false);
	/* dst may be NULL for a zero-size receive: memcpy must not see it. */
	if (n)
		memcpy(dst, s->base + off, n);
	ctx->st.bytes_copied += n;
}

int zcr_ctx_landing_stats(struct zcr_ctx *ctx, struct zcr_landing_class *out,
			  size_t size_of_struct, unsigned int max)
{
	unsigned int k, got = 0;
	int i;

	if (!ctx || !size_of_struct || (max && !out))
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	for (i = 0; i < ctx->nbe; i++) {
		struct zcr_backend_state *bs = &ctx->be[i];

		for (k = 0; k < ZCR_LAND_CLASSES && bs->ops->remap; k++) {
			const struct zcr_land_class *c = &bs->cls[k];
			struct zcr_landing_class lc;

			if (c->n[0] + c->n[1] <= 2 && !c->tick)
				continue;	/* the prior only */
			if (got == max)
				goto out;
			memset(&lc, 0, sizeof(lc));
			lc.size_min = 1ULL << k;
			lc.copy_ns = c->cost[ZCR_LAND_COPY];
			lc.remap_ns = c->cost[ZCR_LAND_REMAP];
			lc.copy_samples = c->n[ZCR_LAND_COPY];
			lc.remap_samples = c->n[ZCR_LAND_REMAP];
			lc.choice = cheaper(c) == ZCR_LAND_REMAP ?
				    ZCRECV_POLICY_REMAP : ZCRECV_POLICY_COPY;
			snprintf(lc.backend, sizeof(lc.backend), "%s",
				 bs->ops->name);
			memcpy((char *)out + (size_t)got * size_of_struct, &lc,
			       size_of_struct < sizeof(lc) ? size_of_struct :
			       sizeof(lc));
			got++;
		}
	}
out:
	pthread_mutex_unlock(&ctx->lock);
	return (int)got;
}
