// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_hostile.c - a receiving rank against peers that misbehave on
 * purpose (raw sockets speaking the wire format): each test is one way a
 * hostile or broken peer could hold resources or stall honest traffic,
 * and checks that the rank frees what it holds and honest peers go on.
 * Run: build/tests/unit/test_hostile [name]
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/ctx.h"
#include "match/match.h"
#include "zcr_pair.h"

static void raw_data(int fd, int src, int tag, uint64_t len, uint64_t seq)
{
	unsigned char h[32];

	raw_hdr(h, RAW_MAGIC, 1, 2, 32, src, tag, len, seq);
	ZT_ASSERT(write(fd, h, 32) == 32);
}

/* Progress c until ep is closed or secs pass; returns its error. */
static int closed_within(struct zcr_ctx *c, struct zcr_ep *ep, double secs)
{
	double t0 = pair_now();

	while (!zcr_ep_error(ep, NULL) && pair_now() - t0 < secs)
		ZT_ASSERT(zcr_progress(c, 20) >= 0);
	return zcr_ep_error(ep, NULL);
}

/*
 * Accept the raw peer of fd that said HELLO as rank, and read what the
 * rank sent it (so that closing fd sends FIN, not a reset).
 */
static struct zcr_ep *accept_raw(struct pair *p, int fd, int rank)
{
	struct zcr_ep *ep = NULL;
	char b[256];

	raw_hello(fd, rank);
	PAIR_PUMP_UNTIL(p, zcr_ep_accept(p->c[0], 0, &ep) == 0);
	ZT_EXPECT_EQ(zcr_ep_rank(ep), rank);
	while (recv(fd, b, sizeof(b), MSG_DONTWAIT) > 0)
		;
	return ep;
}

/*
 * F1: a connection paused because its message does not fit in staging is
 * polled for no input, so the peer's clean close (FIN) must still wake
 * it: the message can never complete, the connection is closed and its
 * descriptor freed, not left in CLOSE-WAIT.
 */
ZT_TEST(fin_on_a_paused_connection)
{
	struct zcr_ctx_attr a = { .staging_bytes = 1 << 20 };
	struct zcr_ep *ep;
	struct pair p;
	const char *msg;
	int fd;

	pair_open(&p, 1, &a);
	fd = raw_connect(&p);
	ep = accept_raw(&p, fd, 1);
	raw_data(fd, 1, 0, 512ULL << 20, 1);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).stalls == 1);
	close(fd);
	ZT_EXPECT_EQ(closed_within(p.c[0], ep, 3), -ECONNRESET);
	zcr_ep_error(ep, &msg);
	printf("# closed: %s\n", msg);
	pair_close(&p);
}

/*
 * F2: each arrival does O(1) work however many messages are queued: the
 * CPU time per arrival with 64 Ki messages queued is not much above that
 * with 8 Ki (a walk of the queue per arrival makes it 8 times as much).
 * Arrivals are fed to match directly, as a transport does.
 */
static double per_arrival(unsigned int n)
{
	struct zcr_ctx_attr a = { .staging_bytes = 1ULL << 30, .quiet = 1 };
	struct zcr_arrival rx;
	struct timespec t0, t1;
	struct zcr_ctx *c;
	unsigned int i;

	ZT_EXPECT_EQ(zcr_ctx_create(&a, &c), 0);
	pthread_mutex_lock(&c->lock);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	for (i = 0; i < n; i++) {
		ZT_EXPECT_EQ(__zcr_match_arrive_locked(c, &rx, 1, 0, 0), 0);
		__zcr_match_payload_done_locked(c, &rx);
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	pthread_mutex_unlock(&c->lock);
	ZT_EXPECT_EQ(pair_stats(c).early, n);
	zcr_ctx_destroy(c);
	return ((double)(t1.tv_sec - t0.tv_sec) +
		(double)(t1.tv_nsec - t0.tv_nsec) * 1e-9) / n;
}

ZT_TEST(arrival_work_does_not_grow_with_the_queue)
{
	double small = per_arrival(8192), big = per_arrival(65536);

	printf("# per arrival: %.2f us with 8 Ki queued, %.2f us with 64 Ki "
	       "(ratio %.2f)\n", small * 1e6, big * 1e6, big / small);
	ZT_ASSERT_MSG(big < 3 * small, "per-arrival work grew %.1f times",
		      big / small);
}
