// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * engine.c - the remap engine: which backends a context uses, the landing
 * decision (remap the full pages or copy), and the calibration that makes
 * the automatic policy never slower than copying.
 *
 * Calibration, at context creation, per backend: the best of several runs
 * of copying and of remapping N1 and N2 pages gives copy cost c per page and
 * remap cost a + b*n. Remapping n full pages pays off when a + b*n is below
 * c*n by a margin for noise: n >= a / (c*(1 - margin) - b). When b is not
 * below c*(1 - margin), no size pays off and the auto policy always copies.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "core/ctx.h"

#define CAL_N1		8
#define CAL_N2		64
#define CAL_RUNS	7
#define CAL_MARGIN	0.10

static const struct zcr_remap_ops *const backends[] = {
	&__zcr_remap_kmod,
	&__zcr_remap_uffd,
};

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void touch(char *p, size_t len, int v)
{
	memset(p, v, len);
}

/* Memory a backend can remap into, as an application would have it. */
static int cal_dst(struct zcr_ctx *ctx, const struct zcr_remap_ops *ops,
		   size_t len, void **p)
{
	if (ops->id == ZCRECV_BACKEND_KMOD)
		return __zcr_zone_map(ctx, len, p);
	*p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return *p == MAP_FAILED ? -errno : 0;
}

static void calibrate(struct zcr_ctx *ctx, struct zcr_backend_state *bs)
{
	size_t len = CAL_N2 * ctx->page;
	double copy[2] = { 1e30, 1e30 }, rm[2] = { 1e30, 1e30 };
	size_t n[2] = { CAL_N1, CAL_N2 };
	void *src = NULL, *dst = NULL;
	double c, a, b, t;
	int i, k;

	bs->min_pages = 0;
	if (bs->ops->slot_alloc(ctx, len, &src) < 0)
		return;
	if (cal_dst(ctx, bs->ops, len, &dst) < 0) {
		bs->ops->slot_free(ctx, src, len);
		return;
	}
	touch(dst, len, 1);
	for (i = 0; i < CAL_RUNS; i++) {
		for (k = 0; k < 2; k++) {
			size_t l = n[k] * ctx->page;

			touch(src, l, 2 + i);
			t = now_ns();
			memcpy(dst, src, l);
			t = now_ns() - t;
			if (t < copy[k])
				copy[k] = t;
			t = now_ns();
			if (bs->ops->remap(ctx, dst, src, l) != (long)l)
				goto out;
			t = now_ns() - t;
			if (t < rm[k])
				rm[k] = t;
		}
	}
	c = copy[1] / CAL_N2;
	b = (rm[1] - rm[0]) / (CAL_N2 - CAL_N1);
	if (b < 0)
		b = 0;
	a = rm[0] - b * CAL_N1;
	if (a < 0)
		a = 0;
	bs->copy_ns = c;
	bs->remap_ns = rm[1] / CAL_N2;
	if (b < c * (1 - CAL_MARGIN)) {
		double m = a / (c * (1 - CAL_MARGIN) - b);

		bs->min_pages = (uint64_t)m + 1;
	}
out:
	munmap(dst, len);
	bs->ops->slot_free(ctx, src, len);
}

int __zcr_remap_setup(struct zcr_ctx *ctx, int want)
{
	size_t i;

	ctx->nbe = 0;
	if (want != ZCRECV_BACKEND_COPY) {
		for (i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
			const struct zcr_remap_ops *ops = backends[i];

			if (want != ZCRECV_BACKEND_AUTO && want != ops->id)
				continue;
			if (ops->init && ops->init(ctx) < 0)
				continue;
			ctx->be[ctx->nbe].ops = ops;
			calibrate(ctx, &ctx->be[ctx->nbe]);
			ctx->nbe++;
		}
	}
	/* Copy is always last: it stages what no other backend can take. */
	ctx->be[ctx->nbe].ops = &__zcr_remap_copy;
	ctx->nbe++;
	if (want != ZCRECV_BACKEND_AUTO && ctx->be[0].ops->id != want)
		return -EOPNOTSUPP;
	return 0;
}

void __zcr_remap_teardown(struct zcr_ctx *ctx)
{
	int i;

	for (i = 0; i < ctx->nbe; i++)
		if (ctx->be[i].ops->fini)
			ctx->be[i].ops->fini(ctx);
	ctx->nbe = 0;
}

static struct zcr_backend_state *state_of(struct zcr_ctx *ctx,
					  const struct zcr_remap_ops *ops)
{
	int i;

	for (i = 0; i < ctx->nbe; i++)
		if (ctx->be[i].ops == ops)
			return &ctx->be[i];
	return &ctx->be[ctx->nbe - 1];
}

const struct zcr_remap_ops *__zcr_remap_pick(struct zcr_ctx *ctx,
					     const void *dst, size_t len)
{
	int i;

	if (dst && ctx->policy != ZCRECV_POLICY_COPY)
		for (i = 0; i < ctx->nbe - 1; i++)
			if (ctx->be[i].ops->eligible(ctx, dst, len))
				return ctx->be[i].ops;
	return &__zcr_remap_copy;
}

static uint64_t min_pages(struct zcr_ctx *ctx, struct zcr_backend_state *bs)
{
	switch (ctx->policy) {
	case ZCRECV_POLICY_COPY:
		return 0;
	case ZCRECV_POLICY_REMAP:
		return 1;
	default:
		return bs->min_pages;
	}
}

void __zcr_remap_deliver_locked(struct zcr_ctx *ctx,
				const struct zcr_remap_ops *ops, char *dst,
				const char *src, size_t n, bool same_offset)
{
	uintptr_t a = ((uintptr_t)dst + ctx->page - 1) & ~(ctx->page - 1);
	uintptr_t e = ((uintptr_t)dst + n) & ~(ctx->page - 1);
	struct zcr_backend_state *bs = state_of(ctx, ops);
	uint64_t minp = min_pages(ctx, bs);
	size_t head, full;
	long done;

	if (!same_offset || ops->id == ZCRECV_BACKEND_COPY || !minp ||
	    e <= a || (e - a) / ctx->page < minp ||
	    !ops->eligible(ctx, (void *)a, e - a))
		goto copy_all;
	head = a - (uintptr_t)dst;
	full = e - a;
	done = ops->remap(ctx, (void *)a, (void *)(src + head), full);
	if (done <= 0) {
		ctx->st.remap_fallbacks++;
		goto copy_all;
	}
	ctx->st.remaps++;
	ctx->st.pages_remapped += (uint64_t)done / ctx->page;
	if ((size_t)done < full)
		ctx->st.remap_fallbacks++;
	/* Partial head and tail pages, and whatever the backend left. */
	memcpy(dst, src, head);
	memcpy(dst + head + done, src + head + done, n - head - (size_t)done);
	ctx->st.bytes_copied += n - (size_t)done;
	return;
copy_all:
	/* dst may be NULL for a zero-size receive: memcpy must not see it. */
	if (n)
		memcpy(dst, src, n);
	ctx->st.bytes_copied += n;
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

const char *zcr_backend_name(int backend)
{
	switch (backend) {
	case ZCRECV_BACKEND_AUTO:
		return "auto";
	case ZCRECV_BACKEND_KMOD:
		return "kmod";
	case ZCRECV_BACKEND_UFFD:
		return "uffd-move";
	case ZCRECV_BACKEND_COPY:
		return "copy";
	}
	return "?";
}
