// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_landing.c - the landing: the auto policy driven by a fake cost
 * source (it settles on the cheaper kind after warm-up, explores the other
 * one landing in 64 times the ratio of their costs, recovers when the
 * costs flip, is not flipped by one outlier, nor decided by one slow
 * first landing, even one that would end the warm-up of its kind, times
 * landings cheap next to a clock read one in many, remaps only when they
 * win by a margin),
 * and the uffd-move exchange through the library's own landing
 * code: whole 2 MiB units of a zcr_mem_alloc block moved at two offsets
 * (a spare with pages left over) and the rest copied, the block's huge
 * pages kept, a
 * user range unmapped and mapped again at the
 * same address (registered again), plain malloc memory, auto staging a
 * class that lands by copy in plain memory, the kmod
 * backend's 2 MiB units (in the VM), and zcr_ctx_landing_stats(). Run: build/tests/unit/test_landing [name].
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

#include <linux/zcrecv.h>

#include "core/core.h"
#include "zt.h"

/* n landings of class c at the given true costs; how many remapped. */
static int drive(struct zcr_land_class *c, double copy_ns, double remap_ns,
		 int n)
{
	int i, remaps = 0;

	for (i = 0; i < n; i++) {
		int k = __zcr_land_choose(c);

		remaps += k == ZCR_LAND_REMAP;
		__zcr_land_record(c, k, k == ZCR_LAND_REMAP ? remap_ns :
				  copy_ns);
	}
	return remaps;
}

ZT_TEST(policy_picks_the_cheaper_after_warmup)
{
	struct zcr_land_class c = { 0 };
	int r;

	/* No prior: ZCR_LAND_WARM of each, then the cheaper one. */
	ZT_EXPECT_EQ(drive(&c, 100, 300, 2 * ZCR_LAND_WARM), ZCR_LAND_WARM);
	/* Remap (3x dearer) only on the exploring landings: 1 in 3 * 64. */
	ZT_EXPECT_EQ(__zcr_land_explore_period(&c), 3 * ZCR_LAND_EXPLORE);
	r = drive(&c, 100, 300, 6 * 3 * ZCR_LAND_EXPLORE);
	ZT_EXPECT_EQ(r, 6);
	memset(&c, 0, sizeof(c));
	drive(&c, 300, 100, 2 * ZCR_LAND_WARM);
	ZT_EXPECT_EQ(drive(&c, 300, 100, 6 * 3 * ZCR_LAND_EXPLORE),
		     6 * 3 * ZCR_LAND_EXPLORE - 6);
	/* Nearly equal costs: one in 64. */
	memset(&c, 0, sizeof(c));
	drive(&c, 100, 101, 2 * ZCR_LAND_WARM);
	ZT_EXPECT_EQ(drive(&c, 100, 101, 640), 10);
}

/*
 * A kind 100 times dearer is explored once in 64 * 64 landings: what the
 * exploring costs stays within 1/64 of what the class costs anyway.
 */
ZT_TEST(policy_explores_a_much_dearer_kind_rarely)
{
	struct zcr_land_class c = { 0 };
	int r;

	drive(&c, 100, 10000, 2 * ZCR_LAND_WARM);
	ZT_EXPECT_EQ(__zcr_land_explore_period(&c),
		     ZCR_LAND_EXPLORE * ZCR_LAND_EXPLORE_SCALE);
	r = drive(&c, 100, 10000, 2 * ZCR_LAND_EXPLORE *
		  ZCR_LAND_EXPLORE_SCALE);
	ZT_EXPECT_EQ(r, 2);
}

ZT_TEST(policy_a_wrong_prior_is_corrected)
{
	struct zcr_land_class c = { 0 };

	/* Calibration said remap is 10x cheaper; it is 3x dearer: the
	 * first real sample outweighs the prior. */
	__zcr_land_prior(&c, ZCR_LAND_COPY, 1000);
	__zcr_land_prior(&c, ZCR_LAND_REMAP, 100);
	ZT_EXPECT_EQ(drive(&c, 1000, 3000, 2), 1);
	/* Then remap, 3x dearer: the rest of the warm-up, then once in
	 * 3 * 64 landings at most. */
	ZT_ASSERT(drive(&c, 1000, 3000, 3 * ZCR_LAND_EXPLORE) <=
		  ZCR_LAND_WARM - 1);
}

/*
 * As drive() from priors of copy_prior and remap_prior, the class's first
 * real copy costing first_copy_ns: how many of n landings remapped.
 */
static int drive_slow_first_copy(struct zcr_land_class *c,
				 double copy_prior, double remap_prior,
				 double first_copy_ns, double copy_ns,
				 double remap_ns, int n)
{
	int i, remaps = 0;

	__zcr_land_prior(c, ZCR_LAND_COPY, copy_prior);
	__zcr_land_prior(c, ZCR_LAND_REMAP, remap_prior);
	for (i = 0; i < n; i++) {
		int k = __zcr_land_choose(c);
		bool first = k == ZCR_LAND_COPY && c->n[ZCR_LAND_COPY] == 1;

		remaps += k == ZCR_LAND_REMAP;
		__zcr_land_record(c, k, k == ZCR_LAND_REMAP ? remap_ns :
				  first ? first_copy_ns : copy_ns);
	}
	return remaps;
}

/*
 * The case seen in zcbench: hot calibration priors (copy 60, remap 50),
 * then one slow first copy (1200) while copies really cost 150 and
 * remaps 505. The warm-up's three real samples of each kind keep that
 * one copy from deciding: a few remaps at most, not every landing until
 * the first exploration.
 */
ZT_TEST(policy_one_slow_first_landing_does_not_decide)
{
	struct zcr_land_class c = { 0 };
	int remaps = drive_slow_first_copy(&c, 60, 50, 1200, 150, 505, 60);

	ZT_ASSERT_MSG(remaps <= 8, "%d of 60 remapped (copy %.0f, remap %.0f)",
		      remaps, c.cost[ZCR_LAND_COPY], c.cost[ZCR_LAND_REMAP]);
	ZT_EXPECT_EQ(__zcr_land_choose(&c), ZCR_LAND_COPY);
}

ZT_TEST(policy_recovers_when_costs_flip)
{
	struct zcr_land_class c = { 0 };
	int i, r = 0;

	drive(&c, 100, 300, 200);
	ZT_ASSERT(c.cost[ZCR_LAND_COPY] < c.cost[ZCR_LAND_REMAP]);
	/* The machine changed: copying now costs 5x a remap. */
	for (i = 0; i < 4 * ZCR_LAND_EXPLORE; i++)
		r = drive(&c, 1000, 200, 1);
	ZT_ASSERT_MSG(r == 1 && c.cost[ZCR_LAND_REMAP] < c.cost[ZCR_LAND_COPY],
		      "still copying after %d landings: copy %.0f remap %.0f",
		      4 * ZCR_LAND_EXPLORE, c.cost[ZCR_LAND_COPY],
		      c.cost[ZCR_LAND_REMAP]);
	/* And once switched it stays on the cheaper one. */
	r = drive(&c, 1000, 200, 5 * 5 * ZCR_LAND_EXPLORE);
	ZT_ASSERT(r >= 5 * 5 * ZCR_LAND_EXPLORE - 6);
	/* Flip back: the chosen kind got 10x dearer; it is measured on
	 * every landing, so a few landings see it. */
	ZT_ASSERT(drive(&c, 100, 2000, 16) <= 8);
	ZT_ASSERT(c.cost[ZCR_LAND_COPY] < c.cost[ZCR_LAND_REMAP]);
}

/*
 * A remap is chosen only when its landings cost a quarter less than a
 * copy's at least: an exchange's TLB flush falls on what is touched next,
 * outside the landing. Remaps 10% cheaper: the class copies (and explores
 * remap); 30% cheaper: it remaps.
 */
ZT_TEST(policy_remap_must_win_by_a_margin)
{
	struct zcr_land_class c = { 0 };
	uint64_t p;

	drive(&c, 100, 90, 2 * ZCR_LAND_WARM);
	p = __zcr_land_explore_period(&c);
	ZT_EXPECT_EQ(drive(&c, 100, 90, 640), 640 / p);
	memset(&c, 0, sizeof(c));
	drive(&c, 100, 70, 2 * ZCR_LAND_WARM);
	p = __zcr_land_explore_period(&c);
	ZT_EXPECT_EQ(drive(&c, 100, 70, 640), 640 - 640 / p);
}

ZT_TEST(policy_one_outlier_does_not_flip)
{
	struct zcr_land_class c = { 0 };

	drive(&c, 100, 150, 100);
	/* A preempted copy: 1000x its cost, once. Copy stays the choice
	 * (the next landing itself may be an exploring one). */
	__zcr_land_record(&c, ZCR_LAND_COPY, 100000);
	ZT_ASSERT(c.cost[ZCR_LAND_COPY] < c.cost[ZCR_LAND_REMAP]);
}

/*
 * Warming a much dearer kind up costs little: with copies at 100 and
 * remaps at 10000 (and priors saying they are equal), two real remaps
 * (one alone could be an unlucky one), then only the exploring ones.
 */
ZT_TEST(policy_warms_a_much_dearer_kind_briefly)
{
	struct zcr_land_class c = { 0 };

	__zcr_land_prior(&c, ZCR_LAND_COPY, 100);
	__zcr_land_prior(&c, ZCR_LAND_REMAP, 100);
	ZT_EXPECT_EQ(drive(&c, 100, 10000, 200), 2);
	ZT_EXPECT_EQ(__zcr_land_choose(&c), ZCR_LAND_COPY);
}

/*
 * Seen in the 6.1 guest: a 4 KiB class whose first real copy took about
 * 5 ms (a fault, or the emulator descheduled), copies 11 us after it,
 * remaps 99 us. The slow copy may neither end the copies' warm-up nor
 * stay in their cost: before, it made the class remap every landing
 * after it (the exploring copy due once in 4096).
 */
ZT_TEST(policy_one_slow_first_copy_does_not_end_the_warmup)
{
	struct zcr_land_class c = { 0 };
	int remaps = drive_slow_first_copy(&c, 10000, 150000, 5200000, 11000,
					   99000, 200);

	ZT_ASSERT_MSG(remaps <= ZCR_LAND_WARM,
		      "%d of 200 remapped (copy %.0f, remap %.0f)", remaps,
		      c.cost[ZCR_LAND_COPY], c.cost[ZCR_LAND_REMAP]);
	ZT_EXPECT_EQ(__zcr_land_choose(&c), ZCR_LAND_COPY);
}

/*
 * A copy timed at 0 ns (a clock too coarse for it) while copies really
 * cost 5000 and remaps 3000: the warm-up's cheapest copy is then 0, and
 * the moving average must still climb from it (a clamp at twice the
 * average would keep it at 0 for good, copying every landing).
 */
ZT_TEST(policy_a_zero_sample_does_not_stick)
{
	struct zcr_land_class c = { 0 };
	int remaps = drive_slow_first_copy(&c, 5000, 3000, 0, 5000, 3000,
					   200);

	ZT_ASSERT_MSG(c.cost[ZCR_LAND_REMAP] < c.cost[ZCR_LAND_COPY] &&
		      remaps >= 180, "%d of 200 remapped (copy %.0f, remap "
		      "%.0f)", remaps, c.cost[ZCR_LAND_COPY],
		      c.cost[ZCR_LAND_REMAP]);
}

/*
 * As drive(), timing the landings as the engine does with a clock read
 * of clock_ns: how many landings were timed (recorded).
 */
static int drive_timed(struct zcr_land_class *c, double copy_ns,
		       double remap_ns, double clock_ns, int n)
{
	int i, timed = 0;

	for (i = 0; i < n; i++) {
		int k = __zcr_land_choose(c);

		if (!__zcr_land_timed(c, k, clock_ns))
			continue;
		timed++;
		__zcr_land_record(c, k, k == ZCR_LAND_REMAP ? remap_ns :
				  copy_ns);
	}
	return timed;
}

/*
 * Landings cheap next to the clock (copies of 1 us, a clock read of 3 us
 * as in an emulated guest) are timed one in ZCR_LAND_SAMPLE_MAX once the
 * class is warm, the exploring ones always; landings a hundred times
 * dearer than two reads, every one. A choice that turned dear is still
 * noticed from the samples.
 */
ZT_TEST(policy_times_cheap_landings_one_in_many)
{
	const int n = 6 * 3 * ZCR_LAND_EXPLORE;	/* 6 exploring remaps */
	struct zcr_land_class c = { 0 };
	int i;

	ZT_EXPECT_EQ(drive_timed(&c, 1000, 3000, 3000, 2 * ZCR_LAND_WARM),
		     2 * ZCR_LAND_WARM);
	ZT_EXPECT_EQ(drive_timed(&c, 1000, 3000, 3000, n),
		     6 + (n - 6) / ZCR_LAND_SAMPLE_MAX);
	/* 200 ns copies, a 30 ns clock: one copy in 2 * 30 * 100 / 200. */
	memset(&c, 0, sizeof(c));
	drive_timed(&c, 200, 600, 30, 2 * ZCR_LAND_WARM);
	ZT_EXPECT_EQ(drive_timed(&c, 200, 600, 30, n),
		     6 + (n - 6) / 30);
	/* 1 ms landings, a 30 ns clock: all. */
	memset(&c, 0, sizeof(c));
	drive_timed(&c, 1e6, 3e6, 30, 2 * ZCR_LAND_WARM);
	ZT_EXPECT_EQ(drive_timed(&c, 1e6, 3e6, 30, n), n);
	/* The cheap copies of the first case turn 20x dearer. */
	memset(&c, 0, sizeof(c));
	drive_timed(&c, 1000, 3000, 3000, 2 * ZCR_LAND_WARM + n);
	ZT_ASSERT(c.cost[ZCR_LAND_COPY] < c.cost[ZCR_LAND_REMAP]);
	for (i = 0; i < 8 * ZCR_LAND_SAMPLE_MAX; i++)
		drive_timed(&c, 20000, 3000, 3000, 1);
	ZT_ASSERT_MSG(c.cost[ZCR_LAND_REMAP] < c.cost[ZCR_LAND_COPY],
		      "still copying after %d landings: copy %.0f remap %.0f",
		      8 * ZCR_LAND_SAMPLE_MAX, c.cost[ZCR_LAND_COPY],
		      c.cost[ZCR_LAND_REMAP]);
}

/* A context with the uffd-move backend, or skip. */
static struct zcr_ctx *uffd_ctx(int policy)
{
	struct zcr_ctx_attr a = { .policy = policy,
				  .backend = ZCRECV_BACKEND_UFFD };
	struct zcr_ctx *ctx;
	int ret;

	setenv("ZCRECV_BACKEND", "uffd-move", 1);
	ret = zcr_ctx_create(&a, &ctx);
	if (ret == -EOPNOTSUPP)
		ZT_SKIP("no UFFDIO_MOVE on this kernel");
	ZT_EXPECT_EQ(ret, 0);
	return ctx;
}

/*
 * Stage n bytes for dst as the receive path does (with the room after the
 * message when with_room, as match.c asks for it) and land them; every
 * byte checked.
 */
/*
 * With ctx locked: stage n bytes of pattern seed in s at off, land them in
 * dst, give s back, unlock, and check every byte.
 */
static void stage_and_land(struct zcr_ctx *ctx, struct zcr_slot *s,
			   size_t off, char *dst, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		s->base[off + i] = (char)(i * 7 + seed + i / 4096);
	__zcr_remap_deliver_locked(ctx, s, off, dst, n, true, NULL);
	__zcr_slot_put_locked(ctx, s);
	pthread_mutex_unlock(&ctx->lock);
	for (i = 0; i < n; i++)
		if (dst[i] != (char)(i * 7 + seed + i / 4096))
			zt_fail(__FILE__, __LINE__, "byte %zu of %zu wrong", i,
				n);
}

static void land_as(struct zcr_ctx *ctx, char *dst, size_t n, unsigned seed,
		    bool with_room)
{
	const struct zcr_remap_ops *ops;
	struct zcr_slot *s;
	size_t off, room = 0;

	pthread_mutex_lock(&ctx->lock);
	ops = __zcr_remap_pick(ctx, dst, n, NULL);
	off = __zcr_remap_stage_offset(ctx, ops, dst, n,
				       with_room ? &room : NULL);
	s = __zcr_slot_get_locked(ctx, ops, off + n + room,
				  __zcr_mem_thp(ctx, dst, n));
	ZT_ASSERT(s);
	stage_and_land(ctx, s, off, dst, n, seed);
}

static void land(struct zcr_ctx *ctx, char *dst, size_t n, unsigned seed)
{
	land_as(ctx, dst, n, seed, false);
}

static struct zcr_stats stats_of(struct zcr_ctx *ctx)
{
	struct zcr_stats st;

	ZT_EXPECT_EQ(zcr_ctx_stats(ctx, &st), 0);
	return st;
}

static uint64_t pages(struct zcr_ctx *ctx)
{
	return stats_of(ctx).pages_remapped;
}

ZT_TEST(uffd_munmap_and_mmap_at_the_same_address)
{
	struct zcr_ctx *ctx = uffd_ctx(ZCRECV_POLICY_REMAP);
	size_t n = 3 << 20;
	char *u, *v;
	uint64_t p0;

	u = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	ZT_ASSERT(u != MAP_FAILED);
	memset(u, 1, n);
	p0 = pages(ctx);
	land(ctx, u, n, 1);
	land(ctx, u, n, 2);
	ZT_EXPECT_EQ(pages(ctx) - p0, 2 * n / 4096);
	/* The registration went with the mapping; the next landing must
	 * register the new one and still move every page. */
	ZT_EXPECT_EQ(munmap(u, n), 0);
	v = mmap(u, n, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ZT_ASSERT(v == u);
	memset(v, 3, n);
	p0 = pages(ctx);
	land(ctx, v, n, 3);
	land(ctx, v + 4096, n - 8192, 4);
	ZT_EXPECT_EQ(pages(ctx) - p0, (2 * n - 8192) / 4096);
	munmap(v, n);
	zcr_ctx_destroy(ctx);
}

/*
 * The 64 KiB class of ctx's first backend (uffd-move), warmed up at the
 * given costs, and an anonymous mapping of n bytes to land in (*u).
 */
static struct zcr_land_class *warm_class(struct zcr_ctx *ctx, double copy_ns,
					 double remap_ns, size_t n, char **u)
{
	struct zcr_backend_state *bs = &ctx->be[0];
	struct zcr_land_class *c = &bs->cls[16];	/* 64 KiB - 128 KiB */

	ZT_EXPECT_EQ(bs->ops->id, ZCRECV_BACKEND_UFFD);
	*u = mmap(NULL, n, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ZT_ASSERT(*u != MAP_FAILED);
	memset(c, 0, sizeof(*c));
	drive(c, copy_ns, remap_ns, 2 * ZCR_LAND_WARM);
	ZT_EXPECT_EQ(__zcr_land_explore_period(c), 3 * ZCR_LAND_EXPLORE);
	return c;
}

/* Land a patterned message from a plain-memory slot for class of bs. */
static void land_plain(struct zcr_ctx *ctx, struct zcr_backend_state *bs,
		       char *u, size_t n, unsigned int seed)
{
	struct zcr_slot *s = __zcr_slot_get_locked(ctx, &__zcr_remap_copy, n,
						   false);
	size_t j;

	ZT_ASSERT(s);
	for (j = 0; j < n; j++)
		s->base[j] = (char)(j * 3 + seed);
	__zcr_remap_deliver_locked(ctx, s, 0, u, n, true, bs);
	for (j = 0; j < n; j++)
		if (u[j] != (char)(j * 3 + seed))
			zt_fail(__FILE__, __LINE__, "byte %zu wrong", j);
	__zcr_slot_put_locked(ctx, s);
}

/*
 * Stage 2 periods' worth of messages for u under auto, as match.c asks:
 * how many were staged in plain memory (the first two of them at at[0],
 * at[1]). The others get the backend's slot and land by remap at
 * remap_ns. Every message counts as one landing decided.
 */
static uint64_t pick_round(struct zcr_ctx *ctx, struct zcr_land_class *c,
			   char *u, size_t n, double remap_ns, uint64_t *at)
{
	struct zcr_backend_state *bs = &ctx->be[0], *by;
	uint64_t period = __zcr_land_explore_period(c), i, plain = 0;
	uint64_t tick0 = c->tick;
	const struct zcr_remap_ops *ops;

	pthread_mutex_lock(&ctx->lock);
	for (i = 0; i < 2 * period; i++) {
		ops = __zcr_remap_pick(ctx, u, n, &by);
		if (ops == &__zcr_remap_copy) {
			ZT_ASSERT(by == bs);
			ZT_EXPECT_EQ(c->last, ZCR_LAND_COPY);
			if (at && plain < 2)
				at[plain] = i;
			plain++;
			continue;
		}
		ZT_ASSERT(ops == bs->ops && !by);
		ZT_EXPECT_EQ(__zcr_land_choose(c), ZCR_LAND_REMAP);
		__zcr_land_record(c, ZCR_LAND_REMAP, remap_ns);
	}
	pthread_mutex_unlock(&ctx->lock);
	ZT_EXPECT_EQ(c->tick - tick0, 2 * period);
	return plain;
}

/*
 * Auto, a class that lands by copy: its messages are staged in plain
 * memory (the copy backend's slots), all but the one in each exploring
 * period that tries remap, which gets the backend's slot; exploring goes
 * on at the same rate as when the landing decides. The copies from
 * plain memory are timed for the class, every byte right.
 */
ZT_TEST(uffd_auto_stages_a_copy_class_in_plain_memory)
{
	struct zcr_ctx *ctx = uffd_ctx(ZCRECV_POLICY_AUTO);
	const size_t n = 64 << 10;
	struct zcr_backend_state *bs = &ctx->be[0];
	struct zcr_land_class *c;
	uint64_t period, i, timed0;
	char *u;

	c = warm_class(ctx, 100, 300, n, &u);	/* copy the cheaper */
	period = __zcr_land_explore_period(c);
	/* all in plain memory but the two exploring remaps */
	ZT_EXPECT_EQ(pick_round(ctx, c, u, n, 300, NULL), 2 * period - 2);
	pthread_mutex_lock(&ctx->lock);
	/* Without by the policy is not asked. */
	ZT_ASSERT(__zcr_remap_pick(ctx, u, n, NULL) == bs->ops);
	/* Landings from plain memory for bs: timed as copies of the class. */
	timed0 = c->n[ZCR_LAND_COPY];
	for (i = 0; i < ZCR_LAND_SAMPLE_MAX; i++)
		land_plain(ctx, bs, u, n, (unsigned int)i);
	pthread_mutex_unlock(&ctx->lock);
	ZT_ASSERT(c->n[ZCR_LAND_COPY] > timed0);
	munmap(u, n);
	zcr_ctx_destroy(ctx);
}

/*
 * Auto, a class that lands by remap: the one landing in each exploring
 * period that tries copy is staged in plain memory too, where a copy in
 * earnest would come from, and times copy for the class; every other
 * message gets the backend's slot. The exploring rate is the one the
 * landing itself would keep.
 */
ZT_TEST(uffd_auto_explores_copy_from_plain_memory)
{
	struct zcr_ctx *ctx = uffd_ctx(ZCRECV_POLICY_AUTO);
	const size_t n = 64 << 10;
	struct zcr_backend_state *bs = &ctx->be[0];
	struct zcr_land_class *c;
	uint64_t period, at[2] = { 0, 0 }, timed0;
	char *u;

	c = warm_class(ctx, 300, 100, n, &u);	/* remap the cheaper */
	period = __zcr_land_explore_period(c);
	/* one exploring copy per period, exactly a period apart */
	ZT_EXPECT_EQ(pick_round(ctx, c, u, n, 100, at), 2);
	ZT_ASSERT(at[0] < period);
	ZT_EXPECT_EQ(at[1] - at[0], period);
	/* Its copy from plain memory is timed for the class. */
	timed0 = c->n[ZCR_LAND_COPY];
	pthread_mutex_lock(&ctx->lock);
	land_plain(ctx, bs, u, n, 1);
	pthread_mutex_unlock(&ctx->lock);
	ZT_EXPECT_EQ(c->n[ZCR_LAND_COPY], timed0 + 1);
	munmap(u, n);
	zcr_ctx_destroy(ctx);
}

/* min_remap_pages as a walk over every class computes it. */
static uint64_t min_pages_walked(struct zcr_ctx *ctx)
{
	struct zcr_backend_state *bs = &ctx->be[0];
	unsigned int k;

	for (k = 0; k < ZCR_LAND_CLASSES; k++) {
		const struct zcr_land_class *c = &bs->cls[k];

		if (c->n[ZCR_LAND_REMAP] && c->cost[ZCR_LAND_REMAP] *
		    ZCR_LAND_REMAP_BIAS < c->cost[ZCR_LAND_COPY])
			return ((1ULL << k) + ctx->page - 1) / ctx->page;
	}
	return 0;
}

/*
 * zcr_ctx_stats() reports the least class that remaps without walking the
 * classes: what it says must follow every change of a class's choice
 * made by a timed landing, both ways.
 */
ZT_TEST(uffd_min_remap_pages_follows_the_classes)
{
	struct zcr_ctx *ctx = uffd_ctx(ZCRECV_POLICY_AUTO);
	const size_t n = 64 << 10;
	struct zcr_backend_state *bs = &ctx->be[0];
	struct zcr_land_class *c;
	uint64_t first;
	unsigned int i;
	char *u;

	ZT_EXPECT_EQ(stats_of(ctx).min_remap_pages, min_pages_walked(ctx));
	/* The 64 KiB class remaps once a landing is timed in it. */
	c = warm_class(ctx, 300, 100, n, &u);
	pthread_mutex_lock(&ctx->lock);
	land_plain(ctx, bs, u, n, 7);
	pthread_mutex_unlock(&ctx->lock);
	first = min_pages_walked(ctx);
	ZT_ASSERT(first && first <= n / ctx->page);
	ZT_EXPECT_EQ(stats_of(ctx).min_remap_pages, first);
	ZT_ASSERT(bs->remapping & (1ULL << 16));	/* 64 KiB: class 16 */
	/* Remap becomes dear: the next timed landing (at least one in
	 * ZCR_LAND_SAMPLE_MAX) turns the class to copy, and the report
	 * moves on to the next class that remaps. */
	c->cost[ZCR_LAND_REMAP] = 1e12;
	pthread_mutex_lock(&ctx->lock);
	for (i = 0; i < ZCR_LAND_SAMPLE_MAX; i++)
		land_plain(ctx, bs, u, n, 8 + i);
	pthread_mutex_unlock(&ctx->lock);
	ZT_ASSERT(c->cost[ZCR_LAND_REMAP] * ZCR_LAND_REMAP_BIAS >=
		  c->cost[ZCR_LAND_COPY]);
	ZT_EXPECT_EQ(stats_of(ctx).min_remap_pages, min_pages_walked(ctx));
	ZT_ASSERT(!(bs->remapping & (1ULL << 16)));
	if (first == n / ctx->page)	/* no smaller class remapped */
		ZT_ASSERT(stats_of(ctx).min_remap_pages != first);
	munmap(u, n);
	zcr_ctx_destroy(ctx);
}

/*
 * kB of transparent huge pages mapped in the mappings that overlap [p, p +
 * len), from /proc/self/smaps; -1 if it cannot be read.
 */
static long thp_kb(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p, lo, hi;
	char line[256];
	bool in = false;
	long kb, sum = 0;
	FILE *f = fopen("/proc/self/smaps", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = lo < a + len && hi > a;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			sum += kb;
	}
	fclose(f);
	return sum;
}

/* /proc/vmstat's thp_fault_fallback: huge page faults the system could
 * not serve with a huge page (-1 if unreadable). */
static long thp_fallbacks(void)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/vmstat", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "thp_fault_fallback %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/*
 * A zcr_mem_alloc block of 2 MiB units: only whole units move (as PMDs),
 * the head and tail around them are copied, at either offset of the slot
 * (a spare with pages left over), and the block keeps its huge pages. A
 * message staged in a 4 KiB slot (the prediction named another buffer) is
 * copied whole. Moving part of a unit would split the block's huge page
 * and the slot's, and every later exchange of those units would move 512
 * pages instead of one PMD.
 */
ZT_TEST(uffd_huge_blocks_move_whole_units)
{
	struct zcr_ctx *ctx = uffd_ctx(ZCRECV_POLICY_REMAP);
	size_t n = 8 << 20, mib = 1 << 20;
	long kb0, kb1 = -1, fb0 = thp_fallbacks();
	char *v;
	void *u;
	int i;

	if (!__zcr_thp_enabled()) {
		zcr_ctx_destroy(ctx);
		ZT_SKIP("transparent huge pages are \"never\" here: no blocks "
			"of huge pages");
	}
	ZT_EXPECT_EQ(zcr_mem_alloc(ctx, n, &u), 0);
	ZT_EXPECT_EQ((uintptr_t)u % ZCR_HUGE_SIZE, 0);
	memset(u, 1, n);
	kb0 = thp_kb(u, n);
	/* offset 0: units [0, 6 MiB); offset 4 KiB: [2 MiB, 6 MiB) */
	for (i = 0; i < 4; i++)
		land(ctx, (char *)u + (i & 1) * 4096, n - 8192, (unsigned)i);
	ZT_EXPECT_EQ(pages(ctx), 2 * (6 + 4) * mib / 4096);
	if (kb0 == (long)(n >> 10))
		kb1 = thp_kb(u, n);
	/* A 1 MiB block (one 2 MiB unit): a 4 KiB slot copies, room moves. */
	ZT_EXPECT_EQ(zcr_mem_alloc(ctx, mib, (void **)&v), 0);
	memset(v, 2, mib);
	land(ctx, v, mib, 7);
	ZT_EXPECT_EQ(pages(ctx), 2 * (6 + 4) * mib / 4096);
	land_as(ctx, v, mib, 8, true);
	ZT_EXPECT_EQ(pages(ctx), (2 * (6 + 4) + 1) * mib / 4096);
	/*
	 * The slots' pages come from faults too: where the system served
	 * any huge page fault with small pages meanwhile (a fragmented
	 * guest), a unit may be small without a split.
	 */
	if (kb0 == (long)(n >> 10) && thp_fallbacks() == fb0 && fb0 >= 0) {
		ZT_EXPECT_EQ(kb1, kb0);
		ZT_EXPECT_EQ(thp_kb(v, mib), (long)(ZCR_HUGE_SIZE >> 10));
	} else {
		printf("# huge pages not served (%ld kB of %zu at first touch, "
		       "fault fallbacks %ld -> %ld): the split check did not "
		       "run\n", kb0, n >> 10, fb0, thp_fallbacks());
	}
	zcr_mem_free(ctx, v);
	zcr_mem_free(ctx, u);
	zcr_ctx_destroy(ctx);
}

/* Stage n bytes for dst in slot s (already taken) and land them. */
static void land_in(struct zcr_ctx *ctx, struct zcr_slot *s, char *dst,
		    size_t n, unsigned seed)
{
	const struct zcr_remap_ops *ops;
	size_t off;

	pthread_mutex_lock(&ctx->lock);
	ops = __zcr_remap_pick(ctx, dst, n, NULL);
	ZT_ASSERT(ops == s->ops);
	off = __zcr_remap_stage_offset(ctx, ops, dst, n, NULL);
	ZT_ASSERT(off + n <= s->cap);
	stage_and_land(ctx, s, off, dst, n, seed);
}

/* Idle slots of cap bytes. */
static int slots_of(struct zcr_ctx *ctx, size_t cap)
{
	struct zcr_list *pos;
	int k = 0;

	for (pos = ctx->free_slots.next; pos != &ctx->free_slots;
	     pos = pos->next)
		k += zcr_container_of(pos, struct zcr_slot, link)->cap == cap;
	return k;
}

/* Idle slots holding small pages. */
static int small_slots(struct zcr_ctx *ctx)
{
	struct zcr_list *pos;
	int k = 0;

	for (pos = ctx->free_slots.next; pos != &ctx->free_slots;
	     pos = pos->next)
		k += zcr_container_of(pos, struct zcr_slot, link)->small;
	return k;
}

/*
 * uffd-move, memory of 4 KiB pages and a block of huge pages received into
 * in turn: the slot that exchanged with the small pages takes them
 * (slot->small) and is not used for the block while another slot can be
 * made, so the block keeps its huge pages and every landing still moves;
 * given to a block anyway, that slot's message is copied.
 */
ZT_TEST(uffd_small_pages_stay_out_of_blocks)
{
	const size_t n = 4 << 20, unit = ZCR_HUGE_SIZE;
	struct zcr_ctx *ctx = NULL;
	struct zcr_slot *s;
	char *m, *mp;
	size_t pad, len;
	uint64_t p0;
	long kb0, fb0;
	void *u, *v;
	int i;

	if (!__zcr_thp_enabled())
		ZT_SKIP("transparent huge pages are \"never\" here: no blocks "
			"of huge pages");
	ZT_ASSERT(posix_memalign(&u, ZCR_HUGE_SIZE, n) == 0);
	m = u;
	ZT_EXPECT_EQ(madvise(m, n, MADV_NOHUGEPAGE), 0);
	memset(m, 1, n);
	/* The other memory 2 MiB aligned, then 4 KiB past it. */
	for (pad = 0; pad <= 4096; pad += 4096) {
		ctx = uffd_ctx(ZCRECV_POLICY_REMAP);
		mp = m + pad;
		len = n - 2 * pad;
		fb0 = thp_fallbacks();
		ZT_EXPECT_EQ(zcr_mem_alloc(ctx, n, &u), 0);
		memset(u, 1, n);
		kb0 = thp_kb(u, n);
		for (i = 0; i < 6; i++) {
			p0 = pages(ctx);
			land(ctx, i & 1 ? u : mp, i & 1 ? n : len, (unsigned)i);
			/* both kinds move every page */
			ZT_EXPECT_EQ(pages(ctx) - p0, (i & 1 ? n : len) / 4096);
			if (!(i & 1))
				ZT_EXPECT_EQ(small_slots(ctx) >= 1, 1);
		}
		/*
		 * The block's pages stayed huge, where the system served
		 * them (the regions that held small pages are mapped anew
		 * before they are reused: their page tables would split the
		 * huge pages moved into them on kernels that keep emptied
		 * tables).
		 */
		if (kb0 == (long)(n >> 10) && thp_fallbacks() == fb0 &&
		    fb0 >= 0)
			ZT_EXPECT_EQ(thp_kb(u, n), kb0);
		else
			printf("# huge pages not served (%ld kB of %zu at first "
			       "touch, fault fallbacks %ld -> %ld): the page "
			       "check did not run\n",
			       kb0, n >> 10, fb0, thp_fallbacks());
		/* A slot of small pages given to the block anyway: copied. */
		land(ctx, mp, len, 10);
		pthread_mutex_lock(&ctx->lock);
		s = __zcr_slot_get_locked(ctx,
					  __zcr_remap_pick(ctx, mp, len, NULL),
					  n, false);
		pthread_mutex_unlock(&ctx->lock);
		ZT_ASSERT(s);
		ZT_EXPECT_EQ(s->small, true);
		p0 = pages(ctx);
		land_in(ctx, s, u, n, 11);
		ZT_EXPECT_EQ(pages(ctx) - p0, 0);
		zcr_mem_free(ctx, u);
		zcr_ctx_destroy(ctx);
	}
	/*
	 * A full pool (6 MiB: an idle 2 MiB slot and a marked 4 MiB one):
	 * for a 4 MiB block the marked slot goes, the other stays, and the
	 * new slot moves every page.
	 */
	ctx = uffd_ctx(ZCRECV_POLICY_REMAP);
	ctx->staging_limit = n + unit;
	ZT_EXPECT_EQ(zcr_mem_alloc(ctx, n, &u), 0);
	ZT_EXPECT_EQ(zcr_mem_alloc(ctx, unit, &v), 0);
	memset(u, 1, n);
	memset(v, 1, unit);
	land(ctx, v, unit, 12);
	land(ctx, m, n, 13);
	ZT_EXPECT_EQ(small_slots(ctx), 1);
	ZT_EXPECT_EQ(ctx->staging_bytes, n + unit);
	p0 = pages(ctx);
	land(ctx, u, n, 14);
	ZT_EXPECT_EQ(pages(ctx) - p0, n / 4096);
	ZT_EXPECT_EQ(small_slots(ctx), 0);
	ZT_EXPECT_EQ(ctx->staging_bytes, n + unit);
	ZT_EXPECT_EQ(slots_of(ctx, unit), 1);
	zcr_mem_free(ctx, u);
	zcr_mem_free(ctx, v);
	zcr_ctx_destroy(ctx);
	free(m);
}

ZT_TEST(uffd_malloc_memory)
{
	struct zcr_ctx *ctx = uffd_ctx(ZCRECV_POLICY_REMAP);
	size_t n = (4 << 20) + 100;
	char *u = malloc(n);
	int i;

	ZT_ASSERT(u);
	memset(u, 1, n);
	for (i = 0; i < 3; i++)
		land(ctx, u + 3, n - 3, (unsigned)i);
	ZT_ASSERT(pages(ctx) > 0);
	free(u);
	zcr_ctx_destroy(ctx);
}

/*
 * kmod with huge zones (ZCRECV_HUGE_ZONES=1, the default; in the VM):
 * buffers and slots of 2 MiB or more are 2 MiB units; a landing exchanges
 * the whole units of its middle and copies the head and tail around them,
 * every byte right.
 */
ZT_TEST(kmod_huge_units)
{
	struct zcr_ctx_attr a = { .policy = ZCRECV_POLICY_REMAP,
				  .backend = ZCRECV_BACKEND_KMOD, .quiet = 1 };
	const size_t n = 8 << 20, unit_pages = ZCR_HUGE_SIZE / 4096;
	struct zcr_stats st;
	struct zcr_ctx *ctx;
	uint64_t p0;
	char *u;
	void *v;
	int ret;

	setenv("ZCRECV_HUGE_ZONES", "1", 1);
	ret = zcr_ctx_create(&a, &ctx);
	unsetenv("ZCRECV_HUGE_ZONES");
	if (ret == -ENODEV || ret == -EOPNOTSUPP)
		ZT_SKIP("no zcrecv.ko (kmod backend): %d", ret);
	ZT_EXPECT_EQ(ret, 0);
	if (!(ctx->kmod.features & ZCRECV_FEATURE_HUGE)) {
		zcr_ctx_destroy(ctx);
		ZT_SKIP("zcrecv.ko without 2 MiB huge zones");
	}
	ZT_EXPECT_EQ(zcr_mem_alloc(ctx, n, &v), 0);
	u = v;
	ZT_EXPECT_EQ((uintptr_t)u % ZCR_HUGE_SIZE, 0);
	memset(u, 1, n);
	/* aligned: all four units */
	p0 = pages(ctx);
	land(ctx, u, n, 1);
	land(ctx, u, n, 2);
	ZT_EXPECT_EQ(pages(ctx) - p0, 2 * 4 * unit_pages);
	/* 4 KiB in: the two whole units of the middle, the rest copied */
	p0 = pages(ctx);
	land(ctx, u + 4096, n - 8192, 3);
	ZT_EXPECT_EQ(pages(ctx) - p0, 2 * unit_pages);
	/* less than a unit: copied */
	p0 = pages(ctx);
	land(ctx, u + 4096, ZCR_HUGE_SIZE, 4);
	ZT_EXPECT_EQ(pages(ctx) - p0, 0);
	ZT_EXPECT_EQ(zcr_ctx_stats(ctx, &st), 0);
	ZT_EXPECT_EQ(st.remap_fallbacks, 0);
	ZT_EXPECT_EQ(strcmp(zcr_backend_name(st.backend), "kmod"), 0);
	zcr_mem_free(ctx, u);
	zcr_ctx_destroy(ctx);
}

/* A kmod context in the VM with ZCRECV_HUGE_ZONES=huge, or NULL (skip). */
static struct zcr_ctx *kmod_ctx(const char *huge)
{
	struct zcr_ctx_attr a = { .policy = ZCRECV_POLICY_REMAP,
				  .backend = ZCRECV_BACKEND_KMOD, .quiet = 1 };
	struct zcr_ctx *ctx;
	int ret;

	if (huge)
		setenv("ZCRECV_HUGE_ZONES", huge, 1);
	ret = zcr_ctx_create(&a, &ctx);
	unsetenv("ZCRECV_HUGE_ZONES");
	if (ret == -ENODEV || ret == -EOPNOTSUPP)
		return NULL;
	ZT_EXPECT_EQ(ret, 0);
	return ret ? NULL : ctx;
}

/*
 * The default block sizes under kmod: from 1 MiB a huge zone (a 1 MiB
 * message filling its 1 MiB block moves as one unit, its unused end
 * along); a smaller message that does not reach its block's end is copied
 * without trying an exchange (a 4 KiB slot cannot trade with a huge
 * zone); below 1 MiB a 4 KiB zone, every page exchanged. With
 * ZCRECV_HUGE_ZONES=0, an 8 MiB block is a 4 KiB zone: every page moves.
 */
ZT_TEST(kmod_block_sizes_and_units)
{
	const size_t mib = 1 << 20, upages = ZCR_HUGE_SIZE / 4096;
	struct zcr_ctx *ctx = kmod_ctx(NULL);
	struct zcr_stats st;
	void *one, *four, *small, *big;
	uint64_t p0;

	if (!ctx)
		ZT_SKIP("no zcrecv.ko (kmod backend)");
	if (!(ctx->kmod.features & ZCRECV_FEATURE_HUGE)) {
		zcr_ctx_destroy(ctx);
		ZT_SKIP("zcrecv.ko without 2 MiB huge zones");
	}
	ZT_EXPECT_EQ(zcr_mem_alloc(ctx, mib, &one), 0);
	ZT_EXPECT_EQ(zcr_mem_alloc(ctx, 4 * mib, &four), 0);
	ZT_EXPECT_EQ(zcr_mem_alloc(ctx, 64 << 10, &small), 0);
	ZT_EXPECT_EQ(__zcr_mem_zone_unit(ctx, one, mib), ZCR_HUGE_SIZE);
	ZT_EXPECT_EQ(__zcr_mem_zone_unit(ctx, four, 4 * mib), ZCR_HUGE_SIZE);
	ZT_EXPECT_EQ(__zcr_mem_zone_unit(ctx, small, 64 << 10), 4096);
	memset(one, 1, mib);
	memset(four, 1, 4 * mib);
	memset(small, 1, 64 << 10);

	p0 = pages(ctx);
	land_as(ctx, one, mib, 1, true);
	ZT_EXPECT_EQ(pages(ctx) - p0, mib / 4096);
	p0 = pages(ctx);
	land_as(ctx, four, mib, 2, true);
	ZT_EXPECT_EQ(pages(ctx) - p0, 0);
	p0 = pages(ctx);
	land_as(ctx, four, 4 * mib, 3, true);
	ZT_EXPECT_EQ(pages(ctx) - p0, 2 * upages);
	p0 = pages(ctx);
	land_as(ctx, small, 64 << 10, 4, true);
	ZT_EXPECT_EQ(pages(ctx) - p0, 16);
	ZT_EXPECT_EQ(zcr_ctx_stats(ctx, &st), 0);
	ZT_EXPECT_EQ(st.remap_fallbacks, 0);
	zcr_mem_free(ctx, one);
	zcr_mem_free(ctx, four);
	zcr_mem_free(ctx, small);
	zcr_ctx_destroy(ctx);

	ctx = kmod_ctx("0");
	ZT_ASSERT(ctx);
	ZT_EXPECT_EQ(zcr_mem_alloc(ctx, 8 * mib, &big), 0);
	ZT_EXPECT_EQ(__zcr_mem_zone_unit(ctx, big, 8 * mib), 4096);
	memset(big, 1, 8 * mib);
	p0 = pages(ctx);
	land_as(ctx, (char *)big + 4096, 8 * mib - 8192, 5, true);
	ZT_EXPECT_EQ(pages(ctx) - p0, 8 * mib / 4096 - 2);
	ZT_EXPECT_EQ(zcr_ctx_stats(ctx, &st), 0);
	ZT_EXPECT_EQ(st.remap_fallbacks, 0);
	zcr_mem_free(ctx, big);
	zcr_ctx_destroy(ctx);
}

/*
 * The staging pool gives the smallest idle slot that fits (and wastes
 * under half), the first of equals, and stops at an exact fit: thousands
 * of idle slots of one size (small early messages) must not be scanned
 * for every message, nor change which slot is taken.
 */
ZT_TEST(staging_takes_the_smallest_fitting_slot_first)
{
	struct zcr_ctx_attr a = { .backend = ZCRECV_BACKEND_COPY };
	const struct zcr_remap_ops *ops = &__zcr_remap_copy;
	struct zcr_slot *d, *w, *b, *c, *s, *many[4096];
	struct zcr_ctx *ctx;
	size_t pg;
	int i;

	unsetenv("ZCRECV_BACKEND");
	ZT_EXPECT_EQ(zcr_ctx_create(&a, &ctx), 0);
	pg = ctx->page;
	pthread_mutex_lock(&ctx->lock);
	/* Many of one size: each taken once, none of the others. */
	for (i = 0; i < 4096; i++) {
		many[i] = __zcr_slot_get_locked(ctx, ops, pg, false);
		ZT_ASSERT(many[i]);
		ZT_EXPECT_EQ(many[i]->cap, pg);
	}
	for (i = 0; i < 4096; i++)
		__zcr_slot_put_locked(ctx, many[i]);
	for (i = 0; i < 4096; i++)
		ZT_ASSERT(__zcr_slot_get_locked(ctx, ops, pg, false) ==
			  many[i]);
	for (i = 0; i < 4096; i++)
		__zcr_slot_put_locked(ctx, many[i]);
	d = __zcr_slot_get_locked(ctx, ops, 4 * pg, false);
	w = __zcr_slot_get_locked(ctx, ops, 3 * pg, false);
	b = __zcr_slot_get_locked(ctx, ops, 2 * pg, false);
	c = __zcr_slot_get_locked(ctx, ops, 2 * pg - 100, false);
	ZT_ASSERT(d && w && b && c);
	ZT_EXPECT_EQ(c->cap, 2 * pg);
	/* Idle in this order: the larger ones ahead of the exact fits. */
	__zcr_slot_put_locked(ctx, d);
	__zcr_slot_put_locked(ctx, w);
	__zcr_slot_put_locked(ctx, b);
	__zcr_slot_put_locked(ctx, c);
	ZT_ASSERT(__zcr_slot_get_locked(ctx, ops, 2 * pg, false) == b);
	ZT_ASSERT(__zcr_slot_get_locked(ctx, ops, 2 * pg, false) == c);
	ZT_ASSERT(__zcr_slot_get_locked(ctx, ops, 2 * pg, false) == w);
	ZT_ASSERT(__zcr_slot_get_locked(ctx, ops, 2 * pg, false) == d);
	s = __zcr_slot_get_locked(ctx, ops, 2 * pg, false);	/* a new one */
	ZT_ASSERT(s);
	ZT_ASSERT(s != b && s != c && s != w && s != d);
	__zcr_slot_put_locked(ctx, b);
	__zcr_slot_put_locked(ctx, c);
	__zcr_slot_put_locked(ctx, w);
	__zcr_slot_put_locked(ctx, d);
	__zcr_slot_put_locked(ctx, s);
	pthread_mutex_unlock(&ctx->lock);
	zcr_ctx_destroy(ctx);
}

ZT_TEST(landing_stats_reports_the_classes)
{
	struct zcr_ctx *ctx = uffd_ctx(ZCRECV_POLICY_AUTO);
	struct zcr_landing_class lc[8];
	size_t n = 64 << 10;
	uint64_t old[2];
	void *u;
	int i, got;

	ZT_EXPECT_EQ(zcr_mem_alloc(ctx, n, &u), 0);
	memset(u, 1, n);
	ZT_EXPECT_EQ(zcr_ctx_landing_stats(ctx, lc, sizeof(lc[0]), 8), 0);
	for (i = 0; i < 10; i++)
		land(ctx, u, n, (unsigned)i);
	got = zcr_ctx_landing_stats(ctx, lc, sizeof(lc[0]), 8);
	ZT_EXPECT_EQ(got, 1);
	ZT_EXPECT_EQ(lc[0].size_min, n);
	/*
	 * The prior counts as one sample of each kind; every landing of the
	 * warm-up is timed (at least two real ones of each kind), the
	 * cheaper kind's after it one in a few (ZCR_LAND_TIMING_SHARE).
	 */
	ZT_ASSERT_MSG(lc[0].copy_samples + lc[0].remap_samples >= 6 &&
		      lc[0].copy_samples + lc[0].remap_samples <= 12,
		      "%llu + %llu samples of 10 landings and the prior",
		      (unsigned long long)lc[0].copy_samples,
		      (unsigned long long)lc[0].remap_samples);
	ZT_ASSERT(lc[0].copy_ns > 0 && lc[0].remap_ns > 0);
	/* remap only when a quarter cheaper (ZCR_LAND_REMAP_BIAS) */
	ZT_ASSERT(lc[0].choice ==
		  (lc[0].remap_ns * ZCR_LAND_REMAP_BIAS < lc[0].copy_ns ?
		   ZCRECV_POLICY_REMAP : ZCRECV_POLICY_COPY));
	ZT_ASSERT(!strcmp(lc[0].backend, "uffd-move"));
	/* A caller knowing only the first two fields gets those only. */
	memset(old, 0xff, sizeof(old));
	ZT_EXPECT_EQ(zcr_ctx_landing_stats(ctx, (void *)old, sizeof(old), 1),
		     1);
	ZT_EXPECT_EQ(old[0], n);
	ZT_EXPECT_EQ(zcr_ctx_landing_stats(ctx, lc, 0, 8), -EINVAL);
	zcr_mem_free(ctx, u);
	zcr_ctx_destroy(ctx);
}

ZT_TEST(backend_names_and_aliases)
{
	struct zcr_ctx *ctx;
	struct zcr_stats st;

	ZT_EXPECT_EQ(__zcr_remap_lookup("uffd"), ZCRECV_BACKEND_UFFD);
	ZT_EXPECT_EQ(__zcr_remap_lookup("uffd-move"), ZCRECV_BACKEND_UFFD);
	ZT_EXPECT_EQ(__zcr_remap_lookup("bogus"), -EINVAL);
	ZT_ASSERT(!strcmp(zcr_backend_name(ZCRECV_BACKEND_UFFD),
			  "uffd-move"));
	setenv("ZCRECV_BACKEND", "bogus", 1);
	ZT_EXPECT_EQ(zcr_ctx_create(NULL, &ctx), -EINVAL);
	setenv("ZCRECV_BACKEND", "copy", 1);
	ZT_EXPECT_EQ(zcr_ctx_create(NULL, &ctx), 0);
	ZT_EXPECT_EQ(zcr_ctx_stats(ctx, &st), 0);
	ZT_ASSERT(!strcmp(st.backend_name, "copy"));
	zcr_ctx_destroy(ctx);
}
