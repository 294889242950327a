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
