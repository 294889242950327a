// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_verbs_offer.c - offered receive buffers over verbs
 * (lib/transport/verbs/verbs_offer.c): a started persistent receive gives
 * its sender its buffer, and the sender writes the message straight into
 * it (RDMA WRITE with immediate). Checks that the writes really happen
 * (the transport's counters), every byte, the status, MPI's order when
 * offered receives mix with nonblocking traffic on the same tag,
 * truncation, cancel and free while offered, and that a peer that does
 * not take offers never gets one. Runs on soft-RoCE in the VM
 * (tests/vm-rxe.list); skipped where libibverbs lists no device.
 *
 * Two contexts in one process are pumped from one thread, so what each
 * side has seen of the other is under the test's control.
 */
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "zcr_pair.h"
#include "zcr_rdma.h"
#include "transport/verbs/verbs.h"

#define TAG	9

/*
 * Rank 0 listens on verbs, rank 1 connects; rank i's context is created
 * with ZCRECV_VERBS_ADVERT=advert[i] and attr's policy (NULL: default).
 */
static void opair_attr(struct pair *p, const char *advert0,
		       const char *advert1, const struct zcr_ctx_attr *attr)
{
	const char *adv[2] = { advert0, advert1 };
	struct zcr_ctx_attr a;
	struct zcr_ep *ep = NULL;
	int i;

	need_device();
	memset(p, 0, sizeof(*p));
	p->n = 2;
	for (i = 0; i < 2; i++) {
		memset(&a, 0, sizeof(a));
		if (attr)
			a.policy = attr->policy;
		a.rank = i;
		a.quiet = 1;
		setenv("ZCRECV_VERBS_ADVERT", adv[i], 1);
		ZT_EXPECT_EQ(zcr_ctx_create_sized(&a, sizeof(a), &p->c[i]), 0);
	}
	unsetenv("ZCRECV_VERBS_ADVERT");
	p->port = zcr_ctx_listen(p->c[0], "verbs://127.0.0.1:0");
	ZT_ASSERT_MSG(p->port > 0, "verbs listen: %s", strerror(-p->port));
	snprintf(p->addr, sizeof(p->addr), "verbs://127.0.0.1:%d", p->port);
	ZT_EXPECT_EQ(zcr_ep_connect(p->c[1], p->addr, &p->to0[1]), 0);
	PAIR_PUMP_UNTIL(p, zcr_ep_accept(p->c[0], 0, &ep) == 0);
	p->from[1] = ep;
	PAIR_PUMP_UNTIL(p, zcr_ep_rank(p->to0[1]) == 0);
	PAIR_PUMP_UNTIL(p, zcr_ep_rank(ep) == 1);
}

static void opair(struct pair *p, const char *advert0, const char *advert1)
{
	opair_attr(p, advert0, advert1, NULL);
}

static struct zcr_verbs_stats vst(struct zcr_ctx *c)
{
	struct zcr_verbs_stats vs;

	ZT_EXPECT_EQ(__zcr_verbs_stats(c, &vs), 0);
	return vs;
}

/* Pump until the sender, rank 1 - to, has the offer rank to just made. */
static void settle_to(struct pair *p, int to)
{
	uint64_t made = vst(p->c[to]).adv_sent;

	PAIR_PUMP_UNTIL(p, vst(p->c[!to]).adv_got == made);
}

static void settle(struct pair *p)
{
	settle_to(p, 0);
}

/* Wait for r; its status in *st; returns what zcr_test returned. */
static int finish(struct pair *p, struct zcr_req *r, struct zcr_status *st)
{
	int rc;

	PAIR_PUMP_UNTIL(p, (rc = zcr_test(r, st)) != 0);
	return rc;
}

static void check_bytes(const char *buf, size_t len, uint32_t seed)
{
	size_t bad = pattern_bad(buf, len, seed);

	ZT_ASSERT_MSG(!bad, "%zu-byte message corrupt at byte %zu", len,
		      bad - 1);
}

/*
 * Every size from 1 byte to the 4 MiB of the buffer into one offered
 * receive, restarted for each: the large ones are written into it, the
 * eager-sized ones come as usual and land there too.
 */
ZT_TEST(offered_receive_all_sizes)
{
	static const size_t sizes[] = { 1, 63, 4096, 8192, 8193, 12345,
		65536, 65536 + 123, 1 << 20, (1 << 20) + 7, 3 << 20,
		4 << 20 };
	const size_t cap = 4 << 20;
	unsigned int i, nw = 0, no = 0;
	struct zcr_verbs_stats v0, v1;
	struct zcr_preq *pr;
	struct zcr_req *r, *s;
	struct zcr_status st;
	struct pair p;
	char *a, *b;

	opair(&p, "1", "1");
	a = malloc(cap);
	b = malloc(cap + 64);
	ZT_ASSERT(a && b);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, b, cap, 1, TAG, 0, &pr),
		     0);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		pattern_fill(a, sizes[i], i);
		memset(b, 0xee, cap + 64);
		ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
		settle(&p);	/* the offer reaches the sender */
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], a, sizes[i], TAG, &s), 0);
		ZT_EXPECT_EQ(finish(&p, r, &st), 1);
		ZT_EXPECT_EQ(st.len, sizes[i]);
		ZT_EXPECT_EQ(st.source, 1);
		ZT_EXPECT_EQ(st.tag, TAG);
		ZT_EXPECT_EQ(finish(&p, s, &st), 1);
		check_bytes(b, sizes[i], i);
		ZT_ASSERT_MSG((unsigned char)b[sizes[i]] == 0xee,
			      "byte past a %zu-byte message written",
			      sizes[i]);
		if (sizes[i] > 8192)
			nw++;
		else
			no++;
	}
	v0 = vst(p.c[0]);
	v1 = vst(p.c[1]);
	ZT_EXPECT_EQ(v0.adv_sent, i);
	ZT_EXPECT_EQ(v0.adv_written, nw);
	ZT_EXPECT_EQ(v0.adv_other, no);
	ZT_EXPECT_EQ(v1.writes, nw);
	ZT_EXPECT_EQ(v0.rndv, 0);
	ZT_EXPECT_EQ(v0.live_adv_mrs, 1);	/* registered once */
	zcr_preq_free(pr);
	ZT_EXPECT_EQ(vst(p.c[0]).live_adv_mrs, 0);
	pair_close(&p);
	free(a);
	free(b);
}

/*
 * A persistent send and a persistent receive, restarted many times both
 * ways (a ping-pong): every message of the pong direction too is written
 * into the offered buffer.
 */
ZT_TEST(offered_pingpong_restarted)
{
	const size_t len = 64 << 10;
	const int iters = 300;
	struct zcr_preq *ps[2], *pr[2];
	struct zcr_verbs_stats v[2];
	uint64_t regs0[2];
	struct zcr_req *r, *s;
	struct zcr_status st;
	char *sb[2], *rb[2];
	struct pair p;
	int i, k;

	opair(&p, "1", "1");
	for (k = 0; k < 2; k++) {
		sb[k] = malloc(len);
		rb[k] = malloc(len);
		ZT_ASSERT(sb[k] && rb[k]);
		ZT_EXPECT_EQ(zcr_send_init_comm(k ? p.to0[1] : p.from[1], 0,
						sb[k], len, TAG, 0, &ps[k]), 0);
		ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[k], 0, rb[k], len, !k,
						TAG, 0, &pr[k]), 0);
	}
	for (k = 0; k < 2; k++)
		regs0[k] = vst(p.c[k]).regs;
	for (i = 0; i < iters; i++) {
		int from = i & 1, to = !from;

		pattern_fill(sb[from], len, (uint32_t)i);
		ZT_EXPECT_EQ(zcr_start(pr[to], &r), 0);
		settle_to(&p, to);
		ZT_EXPECT_EQ(zcr_start(ps[from], &s), 0);
		ZT_EXPECT_EQ(finish(&p, r, &st), 1);
		ZT_EXPECT_EQ(st.len, len);
		ZT_EXPECT_EQ(finish(&p, s, &st), 1);
		check_bytes(rb[to], len, (uint32_t)i);
	}
	for (k = 0; k < 2; k++) {
		v[k] = vst(p.c[k]);
		ZT_EXPECT_EQ(v[k].adv_written, iters / 2);
		ZT_EXPECT_EQ(v[k].writes, iters / 2);
		ZT_EXPECT_EQ(v[k].rndv, 0);
		/* Once each: the offered buffer and the persistent send's. */
		ZT_EXPECT_EQ(v[k].regs - regs0[k], 2);
		ZT_EXPECT_EQ(v[k].live_pins, 1);
		zcr_preq_free(ps[k]);
		zcr_preq_free(pr[k]);
		ZT_EXPECT_EQ(vst(p.c[k]).live_adv_mrs, 0);
		ZT_EXPECT_EQ(vst(p.c[k]).live_pins, 0);
	}
	pair_close(&p);
	for (k = 0; k < 2; k++) {
		free(sb[k]);
		free(rb[k]);
	}
}

/*
 * MPI's order on one (source, tag): an offered receive takes the first
 * message sent after the offer, a nonblocking receive posted after it
 * the second, a later one the third (early); with messages of another
 * tag in between, which the offer lets pass.
 */
ZT_TEST(offered_receive_keeps_order_with_nonblocking)
{
	const size_t len = 100000;
	struct zcr_req *r, *x, *y, *o, *s[4];
	struct zcr_status st;
	struct zcr_preq *pr;
	char *sb[4], *rb, *xb, *yb, *ob;
	struct pair p;
	int i, round;

	opair(&p, "1", "1");
	for (i = 0; i < 4; i++) {
		sb[i] = malloc(len);
		ZT_ASSERT(sb[i]);
	}
	rb = malloc(len);
	xb = malloc(len);
	yb = malloc(len);
	ob = malloc(len);
	ZT_ASSERT(rb && xb && yb && ob);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, rb, len, 1, TAG, 0, &pr),
		     0);
	for (round = 0; round < 20; round++) {
		for (i = 0; i < 4; i++)
			pattern_fill(sb[i], len, (uint32_t)(round * 4 + i));
		ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
		ZT_EXPECT_EQ(zcr_irecv(p.c[0], xb, len, 1, TAG, &x), 0);
		settle(&p);
		/* TAG, other, TAG, TAG: r, o, x, then y (early) */
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb[0], len, TAG, &s[0]), 0);
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb[1], len, TAG + 1, &s[1]),
			     0);
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb[2], len, TAG, &s[2]), 0);
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb[3], len, TAG, &s[3]), 0);
		ZT_EXPECT_EQ(finish(&p, r, &st), 1);
		ZT_EXPECT_EQ(finish(&p, x, &st), 1);
		ZT_EXPECT_EQ(zcr_irecv(p.c[0], yb, len, 1, TAG, &y), 0);
		ZT_EXPECT_EQ(zcr_irecv(p.c[0], ob, len, 1, TAG + 1, &o), 0);
		ZT_EXPECT_EQ(finish(&p, y, &st), 1);
		ZT_EXPECT_EQ(finish(&p, o, &st), 1);
		for (i = 0; i < 4; i++)
			ZT_EXPECT_EQ(finish(&p, s[i], &st), 1);
		check_bytes(rb, len, (uint32_t)(round * 4));
		check_bytes(ob, len, (uint32_t)(round * 4 + 1));
		check_bytes(xb, len, (uint32_t)(round * 4 + 2));
		check_bytes(yb, len, (uint32_t)(round * 4 + 3));
	}
	ZT_EXPECT_EQ(vst(p.c[0]).adv_written, 20);
	zcr_preq_free(pr);
	pair_close(&p);
	for (i = 0; i < 4; i++)
		free(sb[i]);
	free(rb);
	free(xb);
	free(yb);
	free(ob);
}

/*
 * The offer crosses a message: the sender posted one with the tag before
 * the offer reached it, and the receiver had not seen it when it offered.
 * That message is the offer's (sent as usual, landing in the offered
 * receive); the next one goes to the receive posted after.
 */
ZT_TEST(offer_crossing_a_message_binds_it)
{
	const size_t len = 70000;
	struct zcr_req *r, *x, *s0, *s1;
	struct zcr_verbs_stats v;
	struct zcr_status st;
	struct zcr_preq *pr;
	char *a, *b, *rb, *xb;
	struct pair p;
	int round;

	opair(&p, "1", "1");
	a = malloc(len);
	b = malloc(len);
	rb = malloc(len);
	xb = malloc(len);
	ZT_ASSERT(a && b && rb && xb);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, rb, len, 1, TAG, 0, &pr),
		     0);
	for (round = 0; round < 10; round++) {
		pattern_fill(a, len, 1000 + round);
		pattern_fill(b, len, 2000 + round);
		/* Only the sender progresses: its RTS is on the wire. */
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], a, len, TAG, &s0), 0);
		zcr_progress(p.c[1], 0);
		ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
		ZT_EXPECT_EQ(zcr_irecv(p.c[0], xb, len, 1, TAG, &x), 0);
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], b, len, TAG, &s1), 0);
		ZT_EXPECT_EQ(finish(&p, r, &st), 1);
		ZT_EXPECT_EQ(finish(&p, x, &st), 1);
		ZT_EXPECT_EQ(finish(&p, s0, &st), 1);
		ZT_EXPECT_EQ(finish(&p, s1, &st), 1);
		check_bytes(rb, len, 1000 + round);
		check_bytes(xb, len, 2000 + round);
	}
	v = vst(p.c[0]);
	/* Each round offered before the RTS was seen: the RTS takes it. */
	ZT_EXPECT_EQ(v.adv_sent, 10);
	ZT_EXPECT_EQ(v.adv_written, 0);
	ZT_EXPECT_EQ(v.adv_other, v.adv_sent);
	zcr_preq_free(pr);
	pair_close(&p);
	free(a);
	free(b);
	free(rb);
	free(xb);
}

/*
 * A message larger than the offered buffer is sent as usual, lands
 * truncated in the offered receive (-EMSGSIZE, as MPI's truncation
 * error), and nothing past the buffer is written.
 */
ZT_TEST(offered_receive_truncates_a_bigger_message)
{
	const size_t cap = 64 << 10, len = 200000;
	struct zcr_req *r, *s;
	struct zcr_status st;
	struct zcr_preq *pr;
	char *a, *b;
	struct pair p;

	opair(&p, "1", "1");
	a = malloc(len);
	b = malloc(cap + 4096);
	ZT_ASSERT(a && b);
	memset(b, 0xee, cap + 4096);
	pattern_fill(a, len, 5);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, b, cap, 1, TAG, 0, &pr),
		     0);
	ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
	settle(&p);
	ZT_EXPECT_EQ(vst(p.c[0]).adv_sent, 1);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], a, len, TAG, &s), 0);
	ZT_EXPECT_EQ(finish(&p, r, &st), -EMSGSIZE);
	ZT_EXPECT_EQ(st.len, len);
	ZT_EXPECT_EQ(finish(&p, s, &st), 1);
	check_bytes(b, cap, 5);
	ZT_ASSERT((unsigned char)b[cap] == 0xee &&
		  (unsigned char)b[cap + 4095] == 0xee);
	ZT_EXPECT_EQ(vst(p.c[0]).adv_other, 1);
	ZT_EXPECT_EQ(vst(p.c[1]).writes, 0);
	zcr_preq_free(pr);
	pair_close(&p);
	free(a);
	free(b);
}

/*
 * Cancel while offered: the receive completes with -ECANCELED once the
 * sender confirmed, its buffer is untouched, and the next message with
 * the tag goes to the receive posted after (never into the cancelled
 * buffer). Then the race: the sender wrote before the cancel was seen;
 * the receive completes with that message, which is delivered once.
 */
ZT_TEST(cancel_while_offered)
{
	const size_t len = 50000;
	struct zcr_req *r, *x, *s;
	struct zcr_status st;
	struct zcr_preq *pr;
	char *a, *rb, *xb;
	struct pair p;
	int round;

	opair(&p, "1", "1");
	a = malloc(len);
	rb = malloc(len);
	xb = malloc(len);
	ZT_ASSERT(a && rb && xb);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, rb, len, 1, TAG, 0, &pr),
		     0);
	for (round = 0; round < 10; round++) {
		memset(rb, 0xee, len);
		pattern_fill(a, len, 300 + round);
		ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
		settle(&p);
		ZT_EXPECT_EQ(zcr_cancel(r), 0);
		ZT_EXPECT_EQ(finish(&p, r, &st), -ECANCELED);
		ZT_EXPECT_EQ(st.source, ZCRECV_ANY_SOURCE);
		ZT_EXPECT_EQ(zcr_irecv(p.c[0], xb, len, 1, TAG, &x), 0);
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], a, len, TAG, &s), 0);
		ZT_EXPECT_EQ(finish(&p, x, &st), 1);
		ZT_EXPECT_EQ(finish(&p, s, &st), 1);
		check_bytes(xb, len, 300 + round);
		ZT_ASSERT(rb[0] == (char)0xee && rb[len - 1] == (char)0xee);
	}
	ZT_EXPECT_EQ(vst(p.c[0]).adv_revoked, 10);
	/* The race: written before the receiver looked at its CQ. */
	for (round = 0; round < 10; round++) {
		pattern_fill(a, len, 400 + round);
		ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
		settle(&p);
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], a, len, TAG, &s), 0);
		zcr_progress(p.c[1], 0);
		ZT_EXPECT_EQ(zcr_cancel(r), 0);
		ZT_EXPECT_EQ(finish(&p, r, &st), 1);
		ZT_EXPECT_EQ(st.len, len);
		ZT_EXPECT_EQ(finish(&p, s, &st), 1);
		check_bytes(rb, len, 400 + round);
	}
	ZT_EXPECT_EQ(vst(p.c[0]).adv_written, 10);
	ZT_EXPECT_EQ(vst(p.c[0]).adv_revoked, 10);
	zcr_preq_free(pr);
	ZT_EXPECT_EQ(vst(p.c[0]).live_adv_mrs, 0);
	pair_close(&p);
	free(a);
	free(rb);
	free(xb);
}

/*
 * The persistent receive freed while its start is offered: the start
 * goes on and takes its message; the buffer's registration ends with it.
 */
ZT_TEST(free_while_offered)
{
	const size_t len = 1 << 20;
	struct zcr_req *r, *s;
	struct zcr_status st;
	struct zcr_preq *pr;
	char *a, *b;
	struct pair p;

	opair(&p, "1", "1");
	a = malloc(len);
	b = malloc(len);
	ZT_ASSERT(a && b);
	pattern_fill(a, len, 77);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, b, len, 1, TAG, 0, &pr),
		     0);
	ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
	settle(&p);
	zcr_preq_free(pr);
	ZT_EXPECT_EQ(vst(p.c[0]).live_adv_mrs, 1);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], a, len, TAG, &s), 0);
	ZT_EXPECT_EQ(finish(&p, r, &st), 1);
	ZT_EXPECT_EQ(finish(&p, s, &st), 1);
	check_bytes(b, len, 77);
	ZT_EXPECT_EQ(vst(p.c[0]).adv_written, 1);
	ZT_EXPECT_EQ(vst(p.c[0]).live_adv_mrs, 0);
	pair_close(&p);
	free(a);
	free(b);
}

/*
 * What is not offered: a wildcard receive; a receive behind an earlier
 * posted one that a message could take first; and everything when one
 * side does not take offers (ZCRECV_VERBS_ADVERT=0, as a peer that
 * predates them): messages then go the usual way, correctly.
 */
ZT_TEST(no_offer_where_it_cannot_hold)
{
	const size_t len = 90000;
	struct zcr_req *r, *w, *s;
	struct zcr_status st;
	struct zcr_preq *pr, *pw;
	char *a, *b, *c;
	struct pair p;
	int side;

	a = malloc(len);
	b = malloc(len);
	c = malloc(len);
	ZT_ASSERT(a && b && c);
	opair(&p, "1", "1");
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, b, len, ZCRECV_ANY_SOURCE,
					TAG, 0, &pw), 0);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, c, len, 1, TAG, 0, &pr),
		     0);
	ZT_EXPECT_EQ(zcr_start(pw, &w), 0);	/* wildcard: not offered */
	ZT_EXPECT_EQ(zcr_start(pr, &r), 0);	/* behind w: not offered */
	settle(&p);
	ZT_EXPECT_EQ(vst(p.c[0]).adv_sent, 0);
	pattern_fill(a, len, 11);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], a, len, TAG, &s), 0);
	ZT_EXPECT_EQ(finish(&p, w, &st), 1);
	ZT_EXPECT_EQ(finish(&p, s, &st), 1);
	check_bytes(b, len, 11);
	pattern_fill(a, len, 12);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], a, len, TAG, &s), 0);
	ZT_EXPECT_EQ(finish(&p, r, &st), 1);
	ZT_EXPECT_EQ(finish(&p, s, &st), 1);
	check_bytes(c, len, 12);
	ZT_EXPECT_EQ(vst(p.c[1]).writes, 0);
	zcr_preq_free(pw);
	zcr_preq_free(pr);
	pair_close(&p);

	for (side = 0; side < 2; side++) {
		opair(&p, side ? "1" : "0", side ? "0" : "1");
		ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, c, len, 1, TAG, 0,
						&pr), 0);
		pattern_fill(a, len, 20 + side);
		ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
		settle(&p);
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], a, len, TAG, &s), 0);
		ZT_EXPECT_EQ(finish(&p, r, &st), 1);
		ZT_EXPECT_EQ(finish(&p, s, &st), 1);
		check_bytes(c, len, 20 + side);
		ZT_EXPECT_EQ(vst(p.c[0]).adv_sent, 0);
		ZT_EXPECT_EQ(vst(p.c[0]).rndv, 1);
		ZT_EXPECT_EQ(vst(p.c[1]).writes, 0);
		zcr_preq_free(pr);
		pair_close(&p);
	}
	free(a);
	free(b);
	free(c);
}

/*
 * The sender's connection ends while a receive is offered: the receive
 * fails with -ECONNRESET, as any receive from a lost peer, and the
 * registration ends with the persistent receive.
 */
ZT_TEST(offered_receive_fails_with_its_connection)
{
	const size_t len = 40000;
	struct zcr_req *r;
	struct zcr_status st;
	struct zcr_preq *pr;
	struct pair p;
	char *b;

	opair(&p, "1", "1");
	b = malloc(len);
	ZT_ASSERT(b);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, b, len, 1, TAG, 0, &pr),
		     0);
	ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
	settle(&p);
	ZT_EXPECT_EQ(vst(p.c[0]).adv_sent, 1);
	zcr_ep_close(p.to0[1]);
	p.to0[1] = NULL;
	ZT_EXPECT_EQ(finish(&p, r, &st), -ECONNRESET);
	zcr_preq_free(pr);
	ZT_EXPECT_EQ(vst(p.c[0]).live_adv_mrs, 0);
	pair_close(&p);
	free(b);
}

/*
 * A persistent send's buffer stays registered from its first send until
 * the persistent send is freed; freed while a send it started is still
 * being pulled, the registration ends when that send completes.
 */
ZT_TEST(persistent_send_registration_ends_with_it)
{
	const size_t len = 300000;
	struct zcr_req *r, *s;
	struct zcr_status st;
	struct zcr_preq *ps;
	struct pair p;
	char *a, *b;
	int i;

	opair(&p, "1", "1");
	a = malloc(len);
	b = malloc(len);
	ZT_ASSERT(a && b);
	ZT_EXPECT_EQ(zcr_send_init_comm(p.to0[1], 0, a, len, TAG, 0, &ps), 0);
	for (i = 0; i < 5; i++) {
		pattern_fill(a, len, 50 + i);
		ZT_EXPECT_EQ(zcr_start(ps, &s), 0);
		ZT_EXPECT_EQ(zcr_irecv(p.c[0], b, len, 1, TAG, &r), 0);
		ZT_EXPECT_EQ(finish(&p, r, &st), 1);
		ZT_EXPECT_EQ(finish(&p, s, &st), 1);
		check_bytes(b, len, 50 + i);
		ZT_EXPECT_EQ(vst(p.c[1]).live_pins, 1);
	}
	/* Announced, not pulled yet: the free leaves it to the send. */
	pattern_fill(a, len, 60);
	ZT_EXPECT_EQ(zcr_start(ps, &s), 0);
	zcr_preq_free(ps);
	ZT_EXPECT_EQ(vst(p.c[1]).live_pins, 1);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], b, len, 1, TAG, &r), 0);
	ZT_EXPECT_EQ(finish(&p, r, &st), 1);
	ZT_EXPECT_EQ(finish(&p, s, &st), 1);
	check_bytes(b, len, 60);
	ZT_EXPECT_EQ(vst(p.c[1]).live_pins, 0);
	pair_close(&p);
	free(a);
	free(b);
}

/*
 * The pinned-page rule for an offered buffer: it stays registered between
 * starts, so a message that arrives before the next start is staged at
 * its page offset as usual, but the exchange into the buffer is refused
 * (remap_fallbacks) and the message is copied, intact; no page is
 * remapped into the registered buffer.
 */
ZT_TEST(offered_buffer_is_never_remapped_into)
{
	struct zcr_ctx_attr attr = { .policy = ZCRECV_POLICY_REMAP };
	const size_t len = 128 << 10;
	struct zcr_stats s0, s1;
	struct zcr_req *r, *s;
	struct zcr_status st;
	struct zcr_preq *pr;
	struct pair p;
	char *a, *b;
	int i;

	opair_attr(&p, "1", "1", &attr);
	a = malloc(len);
	ZT_ASSERT(a);
	ZT_EXPECT_EQ(zcr_mem_alloc(p.c[0], len, (void **)&b), 0);
	ZT_EXPECT_EQ(zcr_recv_init_comm(p.c[0], 0, b, len, 1, TAG, 0, &pr),
		     0);
	/* Offered and written: the buffer is registered from now on. */
	pattern_fill(a, len, 90);
	ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
	settle(&p);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], a, len, TAG, &s), 0);
	ZT_EXPECT_EQ(finish(&p, r, &st), 1);
	ZT_EXPECT_EQ(finish(&p, s, &st), 1);
	check_bytes(b, len, 90);
	ZT_EXPECT_EQ(vst(p.c[0]).live_adv_mrs, 1);
	s0 = pair_stats(p.c[0]);
	for (i = 0; i < 4; i++) {
		uint64_t e0 = pair_stats(p.c[0]).early;

		pattern_fill(a, len, 91 + i);
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], a, len, TAG, &s), 0);
		PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early > e0);
		ZT_EXPECT_EQ(zcr_start(pr, &r), 0);
		ZT_EXPECT_EQ(finish(&p, r, &st), 1);
		ZT_EXPECT_EQ(st.len, len);
		ZT_EXPECT_EQ(finish(&p, s, &st), 1);
		check_bytes(b, len, 91 + i);
	}
	s1 = pair_stats(p.c[0]);
	ZT_EXPECT_EQ(s1.hits - s0.hits, 4);
	ZT_EXPECT_EQ(s1.pages_remapped, s0.pages_remapped);
	/*
	 * Zone memory of /dev/zcrecv (the VM loads it): the exchange was
	 * tried and refused, as for any registered buffer.
	 */
	ZT_ASSERT_MSG(s1.remap_fallbacks >= s0.remap_fallbacks + 4,
		      "a remap into the offered buffer was not refused");
	ZT_EXPECT_EQ(vst(p.c[0]).adv_sent, 1);
	zcr_preq_free(pr);
	ZT_EXPECT_EQ(vst(p.c[0]).live_adv_mrs, 0);
	zcr_mem_free(p.c[0], b);
	free(a);
	pair_close(&p);
}
