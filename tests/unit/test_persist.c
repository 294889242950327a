// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_persist.c - persistent sends and receives (zcr_send_init_comm(),
 * zcr_recv_init_comm(), zcr_start(), zcr_preq_free()): started many times,
 * each start sends the buffer as it is then and receives into the bound
 * buffer; a persistent receive's early arrivals are staged at its
 * buffer's page offset (every one a hit) on traffic the predictor alone
 * misses; two persistent receives of one (source, tag) started in turn
 * each get their own messages' offsets; freeing one while started or
 * with a message staged for it loses nothing; bad arguments; a context
 * destroyed with persistent requests still bound (the sanitizer build
 * finds a leak); zcr_start_test() completing a start within the call.
 * Run: build/tests/unit/test_persist [name]
 */
#include <stdlib.h>

#include "zcr_pair.h"

#define LEN	(64 * 1024)
#define ROUNDS	30

/* A buffer of n bytes starting off bytes past a page boundary. */
static char *at_offset(struct pair *p, size_t n, size_t off, void **base)
{
	ZT_EXPECT_EQ(zcr_mem_alloc(p->c[0], n + 2 * 4096, base), 0);
	return (char *)*base + off;
}

/* Send LEN bytes of seed with tag from rank 1; pump until staged. */
static void send_early(struct pair *p, char *sb, int tag, uint32_t seed)
{
	uint64_t before = pair_stats(p->c[0]).early;
	struct zcr_req *s;

	pattern_fill(sb, LEN, seed);
	ZT_EXPECT_EQ(zcr_isend(p->to0[1], sb, LEN, tag, &s), 0);
	PAIR_PUMP_UNTIL(p, pair_stats(p->c[0]).early == before + 1);
	PAIR_PUMP_UNTIL(p, zcr_test(s, NULL) != 0);
}

/* Pump until r completes; its status in st, the test's result returned. */
static int complete(struct pair *p, struct zcr_req *r, struct zcr_status *st)
{
	int ret;

	PAIR_PUMP_UNTIL(p, (ret = zcr_test(r, st)) != 0);
	return ret;
}

/* A persistent send and receive started many times carry every version. */
ZT_TEST(start_many_times)
{
	struct zcr_preq *ps, *pr;
	struct zcr_req *s, *r;
	struct zcr_status st;
	char *sb, *rb;
	struct pair p;
	int i;

	pair_open(&p, 2, NULL);
	sb = malloc(LEN);
	rb = malloc(LEN);
	ZT_EXPECT_EQ(zcr_send_init_comm(p.to0[1], 0, sb, LEN, 5, 0, &ps),
		     0);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, rb, LEN, 1, 5, 0, &pr),
		     0);
	for (i = 0; i < 20; i++) {
		pattern_fill(sb, LEN, (uint32_t)i);
		/* Posted first on even rounds, arriving first on odd ones. */
		if (i % 2 == 0)
			ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
		ZT_EXPECT_EQ(zcr_start(ps, &s), 0);
		if (i % 2)
			ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
		ZT_EXPECT_EQ(complete(&p, r, &st), 1);
		ZT_EXPECT_EQ(complete(&p, s, NULL), 1);
		ZT_EXPECT_EQ(st.source, 1);
		ZT_EXPECT_EQ(st.tag, 5);
		ZT_EXPECT_EQ(st.len, LEN);
		ZT_EXPECT_EQ(pattern_bad(rb, LEN, (uint32_t)i), 0);
	}
	zcr_preq_free(ps);
	zcr_preq_free(pr);
	free(sb);
	free(rb);
	pair_close(&p);
}

/*
 * Three persistent receives (tags 1-3, buffers at three page offsets)
 * started in a random order, each message arriving before its receive:
 * ROUNDS hits. The same traffic into plain receives under the cycle
 * predictor misses (a random order has no cycle). Returns the hits.
 */
static uint64_t random_order(bool persistent)
{
	static const size_t off[3] = { 0, 1024, 3000 };
	struct zcr_ctx_attr attr = { .predictor = "cycle" };
	struct zcr_preq *pr[3];
	struct zcr_stats s0, s;
	void *base[3];
	char *buf[3], *sb;
	struct zcr_req *r;
	struct zcr_status st;
	struct pair p;
	unsigned int seed = 7;
	int i, t;

	pair_open(&p, 2, &attr);
	sb = malloc(LEN);
	for (t = 0; t < 3; t++) {
		buf[t] = at_offset(&p, LEN, off[t], &base[t]);
		if (persistent)
			ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, buf[t],
							LEN, 1, t + 1, 0,
							&pr[t]), 0);
	}
	s0 = pair_stats(p.c[0]);
	for (i = 0; i < ROUNDS; i++) {
		t = rand_r(&seed) % 3;
		send_early(&p, sb, t + 1, (uint32_t)i);
		if (persistent)
			ZT_EXPECT_EQ(zcr_start(pr[t], &r), 0);
		else
			ZT_EXPECT_EQ(zcr_irecv(p.c[0], buf[t], LEN, 1, t + 1,
					       &r), 0);
		ZT_EXPECT_EQ(complete(&p, r, &st), 1);
		ZT_EXPECT_EQ(st.tag, t + 1);
		ZT_EXPECT_EQ(pattern_bad(buf[t], LEN, (uint32_t)i), 0);
	}
	s = pair_stats(p.c[0]);
	ZT_EXPECT_EQ(s.early - s0.early, ROUNDS);
	ZT_EXPECT_EQ(s.expected - s0.expected, persistent ? ROUNDS : 0);
	printf("# %s: %llu of %d early arrivals hit\n",
	       persistent ? "persistent" : "plain",
	       (unsigned long long)(s.hits - s0.hits), ROUNDS);
	for (t = 0; t < 3; t++) {
		if (persistent)
			zcr_preq_free(pr[t]);
		zcr_mem_free(p.c[0], base[t]);
	}
	free(sb);
	pair_close(&p);
	return s.hits - s0.hits;
}

ZT_TEST(early_arrivals_always_hit)
{
	ZT_ASSERT(random_order(false) < ROUNDS);
	ZT_EXPECT_EQ(random_order(true), ROUNDS);
}

/*
 * Two persistent receives of one (source, tag), buffers A and B at other
 * offsets, started A, B, A, B...: two messages arrive before each pair of
 * starts, the first staged for A, the second for B.
 */
ZT_TEST(rotation_of_buffers)
{
	struct zcr_preq *pa, *pb;
	struct zcr_req *ra, *rb;
	struct zcr_stats s;
	void *base[2];
	char *a, *b, *sb;
	struct pair p;
	int i;

	pair_open(&p, 2, NULL);
	sb = malloc(LEN);
	a = at_offset(&p, LEN, 512, &base[0]);
	b = at_offset(&p, LEN, 2048, &base[1]);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, a, LEN, 1, 9, 0, &pa),
		     0);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, b, LEN, 1, 9, 0, &pb),
		     0);
	for (i = 0; i < 10; i++) {
		send_early(&p, sb, 9, (uint32_t)(2 * i));
		send_early(&p, sb, 9, (uint32_t)(2 * i + 1));
		ZT_EXPECT_EQ(zcr_start(pa, &ra), 0);
		ZT_EXPECT_EQ(zcr_start(pb, &rb), 0);
		ZT_EXPECT_EQ(complete(&p, ra, NULL), 1);
		ZT_EXPECT_EQ(complete(&p, rb, NULL), 1);
		ZT_EXPECT_EQ(pattern_bad(a, LEN, (uint32_t)(2 * i)), 0);
		ZT_EXPECT_EQ(pattern_bad(b, LEN, (uint32_t)(2 * i + 1)), 0);
	}
	s = pair_stats(p.c[0]);
	ZT_EXPECT_EQ(s.expected, 20);
	ZT_EXPECT_EQ(s.hits, 20);
	ZT_EXPECT_EQ(s.misses, 0);
	zcr_preq_free(pa);
	zcr_preq_free(pb);
	zcr_mem_free(p.c[0], base[0]);
	zcr_mem_free(p.c[0], base[1]);
	free(sb);
	pair_close(&p);
}

/*
 * Freed while its start is posted: the started receive still completes.
 * Freed with a message staged for it: a plain receive takes that message,
 * and later arrivals are no longer placed for it.
 */
ZT_TEST(free_while_started_or_staged)
{
	struct zcr_preq *pr;
	struct zcr_req *s, *r;
	struct zcr_stats s0;
	void *base;
	char *buf, *sb;
	struct pair p;

	pair_open(&p, 2, NULL);
	sb = malloc(LEN);
	buf = at_offset(&p, LEN, 1000, &base);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, buf, LEN, 1, 3, 0, &pr),
		     0);
	ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
	zcr_preq_free(pr);
	pattern_fill(sb, LEN, 11);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb, LEN, 3, &s), 0);
	ZT_EXPECT_EQ(complete(&p, r, NULL), 1);
	ZT_EXPECT_EQ(complete(&p, s, NULL), 1);
	ZT_EXPECT_EQ(pattern_bad(buf, LEN, 11), 0);

	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, buf, LEN, 1, 3, 0, &pr),
		     0);
	s0 = pair_stats(p.c[0]);
	send_early(&p, sb, 3, 12);
	ZT_EXPECT_EQ(pair_stats(p.c[0]).expected, s0.expected + 1);
	zcr_preq_free(pr);
	memset(buf, 0, LEN);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], buf, LEN, 1, 3, &r), 0);
	ZT_EXPECT_EQ(complete(&p, r, NULL), 1);
	ZT_EXPECT_EQ(pattern_bad(buf, LEN, 12), 0);
	send_early(&p, sb, 3, 13);
	ZT_EXPECT_EQ(pair_stats(p.c[0]).expected, s0.expected + 1);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], buf, LEN, 1, 3, &r), 0);
	ZT_EXPECT_EQ(complete(&p, r, NULL), 1);
	ZT_EXPECT_EQ(pattern_bad(buf, LEN, 13), 0);
	zcr_mem_free(p.c[0], base);
	free(sb);
	pair_close(&p);
}

/* Wildcards, a synchronous send, truncation. */
ZT_TEST(wildcards_sync_truncation)
{
	struct zcr_preq *ps, *pr, *small;
	struct zcr_req *s, *r;
	struct zcr_status st;
	char *sb, *rb;
	struct pair p;

	pair_open(&p, 2, NULL);
	sb = malloc(LEN);
	rb = malloc(LEN);
	ZT_EXPECT_EQ(zcr_send_init_comm(p.to0[1], 0, sb, LEN, 4,
					ZCRECV_SEND_SYNC, &ps), 0);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, rb, LEN, ZCRECV_ANY_SOURCE,
					ZCRECV_ANY_TAG, 0, &pr), 0);
	pattern_fill(sb, LEN, 21);
	ZT_EXPECT_EQ(zcr_start(ps, &s), 0);
	ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
	ZT_EXPECT_EQ(complete(&p, r, &st), 1);
	ZT_EXPECT_EQ(complete(&p, s, NULL), 1);
	ZT_EXPECT_EQ(st.source, 1);
	ZT_EXPECT_EQ(st.tag, 4);
	ZT_EXPECT_EQ(pattern_bad(rb, LEN, 21), 0);

	/* A receive of half the length: -EMSGSIZE, the first half there. */
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, rb, LEN / 2, 1, 4, 0,
					&small), 0);
	memset(rb, 0, LEN);
	ZT_EXPECT_EQ(zcr_start(ps, &s), 0);
	ZT_EXPECT_EQ(zcr_start(small, &r), 0);
	ZT_EXPECT_EQ(complete(&p, r, &st), -EMSGSIZE);
	ZT_EXPECT_EQ(st.len, LEN);
	ZT_EXPECT_EQ(pattern_bad(rb, LEN / 2, 21), 0);
	/* The sync send completes once matched, truncated or not. */
	ZT_EXPECT_EQ(complete(&p, s, NULL), 1);
	zcr_preq_free(small);
	zcr_preq_free(ps);
	zcr_preq_free(pr);
	free(sb);
	free(rb);
	pair_close(&p);
}

/*
 * zcr_start_test(): a receive whose messages are there completes within
 * the start (1, no request), in their order, with their statuses; a
 * truncated one reports -EMSGSIZE in its status; a wildcard one takes
 * the next message; one started before its message returns 0 and a
 * request that completes later; a send returns 1 with no request or 0
 * with one, and its message arrives either way.
 */
ZT_TEST(start_test_completes_at_once)
{
	struct zcr_preq *ps, *pr, *pa, *small;
	struct zcr_req *s, *r;
	struct zcr_status st;
	uint32_t sb[4], rb[4];
	struct pair p;
	int i, k, ret;

	pair_open(&p, 2, NULL);
	ZT_EXPECT_EQ(zcr_send_init_comm(p.to0[1], 0, sb, sizeof(sb), 7, 0,
					&ps), 0);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, rb, sizeof(rb), 1, 7, 0,
					&pr), 0);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, rb, sizeof(rb),
					ZCRECV_ANY_SOURCE, ZCRECV_ANY_TAG, 0,
					&pa), 0);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, rb, 8, 1, 9, 0, &small),
		     0);
	for (i = 0; i < 3; i++) {
		for (k = 0; k < 4; k++)
			sb[k] = (uint32_t)(100 * i + k);
		ret = zcr_start_test(ps, &s, &st, sizeof(st));
		ZT_ASSERT(ret == 0 || ret == 1);
		if (ret == 1)
			ZT_ASSERT(s == NULL && st.error == 0);
		else
			ZT_EXPECT_EQ(complete(&p, s, NULL), 1);
	}
	sb[0] = 8;
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb, sizeof(sb), 8, &s), 0);
	ZT_EXPECT_EQ(complete(&p, s, NULL), 1);
	sb[0] = 9;
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb, sizeof(sb), 9, &s), 0);
	ZT_EXPECT_EQ(complete(&p, s, NULL), 1);
	/* The last one is there, so are those before it. */
	PAIR_PUMP_UNTIL(&p, zcr_iprobe(p.c[0], 0, 1, 9, NULL) == 1);
	for (i = 0; i < 3; i++) {
		memset(rb, 0, sizeof(rb));
		r = (struct zcr_req *)&r;
		ZT_EXPECT_EQ(zcr_start_test(pr, &r, &st, sizeof(st)), 1);
		ZT_ASSERT(r == NULL);
		ZT_EXPECT_EQ(st.source, 1);
		ZT_EXPECT_EQ(st.tag, 7);
		ZT_EXPECT_EQ(st.len, sizeof(rb));
		ZT_EXPECT_EQ(st.error, 0);
		for (k = 0; k < 4; k++)
			ZT_EXPECT_EQ(rb[k], (uint32_t)(100 * i + k));
	}
	ZT_EXPECT_EQ(zcr_start_test(pa, &r, &st, sizeof(st)), 1);
	ZT_EXPECT_EQ(st.tag, 8);
	ZT_EXPECT_EQ(rb[0], 8);
	ZT_EXPECT_EQ(zcr_start_test(small, &r, &st, sizeof(st)), 1);
	ZT_EXPECT_EQ(st.error, -EMSGSIZE);
	ZT_EXPECT_EQ(st.len, sizeof(sb));
	ZT_EXPECT_EQ(rb[0], 9);
	/* Nothing there: a request, completed by the message later. */
	ZT_EXPECT_EQ(zcr_start_test(pr, &r, &st, sizeof(st)), 0);
	ZT_ASSERT(r != NULL);
	sb[0] = 77;
	ret = zcr_start_test(ps, &s, &st, sizeof(st));
	if (ret == 0)
		ZT_EXPECT_EQ(complete(&p, s, NULL), 1);
	ZT_EXPECT_EQ(complete(&p, r, &st), 1);
	ZT_EXPECT_EQ(rb[0], 77);
	ZT_EXPECT_EQ(zcr_start_test(NULL, &r, &st, sizeof(st)), -EINVAL);
	ZT_EXPECT_EQ(zcr_start_test(pr, &r, NULL, sizeof(st)), -EINVAL);
	ZT_EXPECT_EQ(zcr_start_test(pr, &r, &st, 4), -EINVAL);
	zcr_preq_free(small);
	zcr_preq_free(pa);
	zcr_preq_free(ps);
	zcr_preq_free(pr);
	pair_close(&p);
}

ZT_TEST(bad_arguments)
{
	struct zcr_preq *pq = NULL;
	struct zcr_req *r;
	struct zcr_ctx *c;
	struct zcr_ep *ep;
	char b[16];
	struct pair p;

	pair_open(&p, 2, NULL);
	c = p.c[0];
	ep = p.to0[1];
	ZT_EXPECT_EQ(zcr_send_init_comm(NULL, 0, b, 16, 1, 0, &pq), -EINVAL);
	ZT_EXPECT_EQ(zcr_send_init_comm(ep, 0, b, 16, -1, 0, &pq), -EINVAL);
	ZT_EXPECT_EQ(zcr_send_init_comm(ep, 0, NULL, 16, 1, 0, &pq), -EINVAL);
	ZT_EXPECT_EQ(zcr_send_init_comm(ep, 0, b, 16, 1, 2, &pq), -EINVAL);
	ZT_EXPECT_EQ(zcr_send_init_comm(ep, 0, b, 16, 1, 0, NULL), -EINVAL);
	ZT_EXPECT_EQ(zcr_recv_init_comm(NULL, 0, b, 16, 1, 1, 0, &pq), -EINVAL);
	ZT_EXPECT_EQ(zcr_recv_init_comm(c, 0, b, 16, -2, 1, 0, &pq), -EINVAL);
	ZT_EXPECT_EQ(zcr_recv_init_comm(c, 0, b, 16, 1, -2, 0, &pq), -EINVAL);
	ZT_EXPECT_EQ(zcr_recv_init_comm(c, 0, b, 16, 1, 1, ZCRECV_SEND_SYNC,
					&pq), -EINVAL);
	ZT_EXPECT_EQ(zcr_recv_init_comm(c, 0, NULL, 16, 1, 1, 0, &pq),
		     -EINVAL);
	ZT_ASSERT(pq == NULL);
	ZT_EXPECT_EQ(zcr_start(NULL, &r), -EINVAL);
	ZT_EXPECT_EQ(zcr_recv_init_comm(c, 0, b, 16, 1, 1, 0, &pq), 0);
	ZT_EXPECT_EQ(zcr_start(pq, NULL), -EINVAL);
	zcr_preq_free(pq);
	zcr_preq_free(NULL);
	pair_close(&p);
}

/* Bound, started, never freed: zcr_ctx_destroy() frees them. */
ZT_TEST(destroy_frees_them)
{
	struct zcr_preq *ps, *pr;
	struct zcr_req *s, *r;
	char *sb, *rb;
	struct pair p;

	pair_open(&p, 2, NULL);
	sb = malloc(LEN);
	rb = malloc(LEN);
	ZT_EXPECT_EQ(zcr_send_init_comm(p.to0[1], 0, sb, LEN, 6, 0, &ps), 0);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, rb, LEN, 1, 6, 0, &pr), 0);
	ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
	ZT_EXPECT_EQ(zcr_start(ps, &s), 0);
	(void)r;
	(void)s;
	pair_close(&p);
	free(sb);
	free(rb);
}
