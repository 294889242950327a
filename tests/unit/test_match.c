// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_match.c - MPI matching semantics over loopback TCP: messages of one
 * (source, tag) arrive in order (non-overtaking), receives may pick another
 * tag first, ZCRECV_ANY_SOURCE / ZCRECV_ANY_TAG match anything, and a
 * message larger than the buffer fills it and completes with -EMSGSIZE.
 * Each case is run with the receive posted first and with the message
 * already arrived (early). Run: build/tests/unit/test_match [name]
 */
#include <malloc.h>

#include "zcr_pair.h"

#define NMSG 16

static void send_seq(struct zcr_ep *ep, int tag, uint32_t first, int n,
		     size_t len, struct zcr_req **reqs, char *bufs)
{
	int i;

	for (i = 0; i < n; i++) {
		pattern_fill(bufs + i * len, len, first + (uint32_t)i);
		ZT_EXPECT_EQ(zcr_isend(ep, bufs + i * len, len, tag, &reqs[i]),
			     0);
	}
}

static void wait_all(struct pair *p, struct zcr_req **reqs, int n)
{
	int i, r;

	for (i = 0; i < n; i++) {
		PAIR_PUMP_UNTIL(p, (r = zcr_test(reqs[i], NULL)) != 0);
		ZT_EXPECT_EQ(r, 1);
	}
}

static void ordering(bool early)
{
	static char sbuf[NMSG * 8192], rbuf[8192];
	struct zcr_req *sreq[NMSG];
	struct zcr_status st;
	struct pair p;
	int i;

	pair_open(&p, 2, NULL);
	send_seq(p.to0[1], 5, 100, NMSG, 8192, sreq, sbuf);
	if (early)
		PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == NMSG);
	for (i = 0; i < NMSG; i++) {
		struct zcr_req *r;

		ZT_EXPECT_EQ(zcr_irecv(p.c[0], rbuf, sizeof(rbuf), 1, 5, &r),
			     0);
		PAIR_PUMP_UNTIL(&p, zcr_test(r, &st) != 0);
		ZT_EXPECT_EQ(st.error, 0);
		ZT_EXPECT_EQ(st.source, 1);
		ZT_EXPECT_EQ(st.tag, 5);
		ZT_EXPECT_EQ(st.len, 8192);
		ZT_EXPECT_EQ(pattern_bad(rbuf, 8192, 100 + (uint32_t)i), 0);
	}
	wait_all(&p, sreq, NMSG);
	ZT_EXPECT_EQ(pair_stats(p.c[0]).msgs_recv, NMSG);
	pair_close(&p);
}

ZT_TEST(ordering_posted)
{
	ordering(false);
}

ZT_TEST(ordering_early)
{
	ordering(true);
}

/* Tag 2 was sent after tag 1, but a receive for tag 2 takes it first. */
ZT_TEST(other_tag_first)
{
	char a[100], b[100], r[100];
	struct zcr_req *s[2];
	struct zcr_status st;
	struct pair p;

	pair_open(&p, 2, NULL);
	pattern_fill(a, 100, 1);
	pattern_fill(b, 100, 2);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], a, 100, 1, &s[0]), 0);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], b, 100, 2, &s[1]), 0);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == 2);
	ZT_EXPECT_EQ(zcr_recv(p.c[0], r, 100, 1, 2, &st), 0);
	ZT_EXPECT_EQ(pattern_bad(r, 100, 2), 0);
	ZT_EXPECT_EQ(zcr_recv(p.c[0], r, 100, ZCRECV_ANY_SOURCE, 1, &st), 0);
	ZT_EXPECT_EQ(pattern_bad(r, 100, 1), 0);
	wait_all(&p, s, 2);
	pair_close(&p);
}

static void wildcards(bool early)
{
	char sb[3][64], r[64];
	struct zcr_req *s[3], *rq;
	struct zcr_status st;
	int seen[3] = { 0 }, i;
	struct pair p;

	pair_open(&p, 3, NULL);
	pattern_fill(sb[1], 64, 11);
	pattern_fill(sb[2], 64, 22);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb[1], 64, 7, &s[1]), 0);
	ZT_EXPECT_EQ(zcr_isend(p.to0[2], sb[2], 64, 9, &s[2]), 0);
	if (early)
		PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == 2);
	for (i = 0; i < 2; i++) {
		ZT_EXPECT_EQ(zcr_irecv(p.c[0], r, 64, ZCRECV_ANY_SOURCE,
				       ZCRECV_ANY_TAG, &rq), 0);
		PAIR_PUMP_UNTIL(&p, zcr_test(rq, &st) != 0);
		ZT_EXPECT_EQ(st.error, 0);
		ZT_ASSERT(st.source == 1 || st.source == 2);
		ZT_EXPECT_EQ(st.tag, st.source == 1 ? 7 : 9);
		ZT_EXPECT_EQ(pattern_bad(r, 64, st.source == 1 ? 11 : 22), 0);
		seen[st.source]++;
	}
	ZT_EXPECT_EQ(seen[1], 1);
	ZT_EXPECT_EQ(seen[2], 1);
	/* Any tag from one source only. */
	ZT_EXPECT_EQ(zcr_isend(p.to0[2], sb[2], 64, 3, &s[0]), 0);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], r, 64, 2, ZCRECV_ANY_TAG, &rq), 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(rq, &st) != 0);
	ZT_EXPECT_EQ(st.source, 2);
	ZT_EXPECT_EQ(st.tag, 3);
	wait_all(&p, s, 3);
	pair_close(&p);
}

ZT_TEST(wildcards_posted)
{
	wildcards(false);
}

ZT_TEST(wildcards_early)
{
	wildcards(true);
}

static void truncation(bool early)
{
	static char sb[20000], r[20000];
	struct zcr_req *s, *rq;
	struct zcr_status st;
	struct pair p;
	int ret;

	pair_open(&p, 2, NULL);
	pattern_fill(sb, sizeof(sb), 5);
	memset(r, 0xee, sizeof(r));
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb, 20000, 4, &s), 0);
	if (early)
		PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == 1);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], r, 9000, 1, 4, &rq), 0);
	PAIR_PUMP_UNTIL(&p, (ret = zcr_test(rq, &st)) != 0);
	ZT_EXPECT_EQ(ret, -EMSGSIZE);
	ZT_EXPECT_EQ(st.error, -EMSGSIZE);
	ZT_EXPECT_EQ(st.len, 20000);
	ZT_EXPECT_EQ(pattern_bad(r, 9000, 5), 0);
	ZT_EXPECT_EQ((unsigned char)r[9000], 0xee);
	/* The connection goes on: the next message is intact. */
	wait_all(&p, &s, 1);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb, 100, 4, &s), 0);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], r, 100, 1, 4, &rq), 0);
	PAIR_PUMP_UNTIL(&p, (ret = zcr_test(rq, &st)) != 0);
	ZT_EXPECT_EQ(ret, 1);
	ZT_EXPECT_EQ(pattern_bad(r, 100, 5), 0);
	wait_all(&p, &s, 1);
	pair_close(&p);
}

ZT_TEST(truncation_posted)
{
	truncation(false);
}

ZT_TEST(truncation_early)
{
	truncation(true);
}

ZT_TEST(zero_length)
{
	struct zcr_req *s, *rq;
	struct zcr_status st;
	struct pair p;
	char r[1];

	pair_open(&p, 2, NULL);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], NULL, 0, 0, &s), 0);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], r, 0, 1, 0, &rq), 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(rq, &st) != 0);
	ZT_EXPECT_EQ(st.len, 0);
	wait_all(&p, &s, 1);
	pair_close(&p);
}

ZT_TEST(bad_arguments)
{
	struct zcr_ctx_attr a = { .rank = -1 };
	struct zcr_ctx *c;
	struct zcr_req *r;
	char b[4];

	ZT_EXPECT_EQ(zcr_ctx_create(&a, &c), -EINVAL);
	ZT_EXPECT_EQ(zcr_ctx_create(NULL, &c), 0);
	ZT_EXPECT_EQ(zcr_irecv(c, b, 4, -5, 0, &r), -EINVAL);
	ZT_EXPECT_EQ(zcr_irecv(c, b, 4, 0, -3, &r), -EINVAL);
	/* No connection and no listener: nobody can ever send. */
	ZT_EXPECT_EQ(zcr_irecv(c, b, 4, ZCRECV_ANY_SOURCE, 0, &r), -ENOTCONN);
	ZT_EXPECT_EQ(zcr_irecv(c, b, 4, 3, 0, &r), -ECONNRESET);
	zcr_ctx_destroy(c);
}

/*
 * A receive posted while it could still be satisfied must fail, not hang,
 * once no peer can ever send it: the only peer (ANY_SOURCE, no listener)
 * goes away, or the connection still in its handshake fails.
 */
ZT_TEST(posted_receive_fails_when_nobody_can_send)
{
	unsigned char h[32];
	struct zcr_req *r;
	struct zcr_status st;
	struct zcr_ctx *c;
	struct zcr_ep *ep;
	struct pair p;
	char b[16], addr[32];
	int lfd, fd, ret;

	/* ANY_SOURCE on rank 1, whose only peer is rank 0. */
	pair_open(&p, 2, NULL);
	ZT_EXPECT_EQ(zcr_irecv(p.c[1], b, sizeof(b), ZCRECV_ANY_SOURCE, 0,
			       &r), 0);
	zcr_ctx_destroy(p.c[0]);
	p.n = 1;
	p.c[0] = p.c[1];
	PAIR_PUMP_UNTIL(&p, (ret = zcr_test(r, &st)) != 0);
	ZT_EXPECT_EQ(ret, -ECONNRESET);
	zcr_ctx_destroy(p.c[1]);

	/* A named source, posted during a handshake that then fails. */
	lfd = raw_listen(addr, sizeof(addr));
	memset(&p, 0, sizeof(p));
	ZT_EXPECT_EQ(zcr_ctx_create(&(struct zcr_ctx_attr){ .rank = 1,
							     .quiet = 1 },
				    &p.c[0]), 0);
	c = p.c[0];
	p.n = 1;
	ZT_EXPECT_EQ(zcr_ep_connect(c, addr, &ep), 0);
	ZT_EXPECT_EQ(zcr_irecv(c, b, sizeof(b), 0, 0, &r), 0);
	fd = accept(lfd, NULL, NULL);
	ZT_ASSERT(fd >= 0);
	raw_hdr(h, 0xdeadbeef, 1, 1, 32, 0, 0, 0, 0);
	ZT_ASSERT(write(fd, h, 32) == 32);
	PAIR_PUMP_UNTIL(&p, zcr_ep_error(ep, NULL) != 0);
	ZT_EXPECT_EQ(zcr_ep_error(ep, NULL), -EBADMSG);
	PAIR_PUMP_UNTIL(&p, (ret = zcr_test(r, &st)) != 0);
	ZT_EXPECT_EQ(ret, -ECONNRESET);
	zcr_ctx_destroy(c);
	close(fd);
	close(lfd);
}

/*
 * zcr_ctx_destroy() abandons pending requests: the context frees them
 * (receives still posted, or matched to a message still arriving) as it
 * frees pending sends, instead of leaking them.
 */
ZT_TEST(destroy_frees_pending_receives)
{
	static char big[256 << 10], rb[100];
	struct mallinfo2 m0, m1;
	struct zcr_req *r, *s;
	struct pair p;
	int i;

	pair_open(&p, 2, NULL);
	zcr_ctx_destroy(p.c[1]);
	zcr_ctx_destroy(p.c[0]);
	m0 = mallinfo2();
	pair_open(&p, 2, NULL);
	for (i = 0; i < 1000; i++)
		ZT_EXPECT_EQ(zcr_irecv(p.c[0], rb, sizeof(rb), 1, 3, &r), 0);
	/* One receive still landing (posted), one staged message's. */
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], rb, sizeof(rb), 1, 4, &r), 0);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], big, sizeof(big), 4, &s), 0);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], big, sizeof(big), 5, &s), 0);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == 1);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], rb, sizeof(rb), 1, 5, &r), 0);
	pair_close(&p);
	m1 = mallinfo2();
	printf("# heap in use changed by %lld bytes\n",
	       (long long)m1.uordblks - (long long)m0.uordblks);
	ZT_ASSERT(m1.uordblks < m0.uordblks + 32768);
}

/*
 * A zero-size receive with a NULL buffer takes a staged zero-length
 * message (complete) and a staged non-empty one (-EMSGSIZE, st.len the
 * sent length) without handing NULL to memcpy (-fsanitize=undefined).
 */
ZT_TEST(zero_size_null_buffer_early)
{
	struct zcr_req *s[2], *rq;
	struct zcr_status st;
	struct pair p;
	char b[10] = "abcdefghi";
	int ret;

	pair_open(&p, 2, NULL);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], NULL, 0, 0, &s[0]), 0);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], b, 10, 0, &s[1]), 0);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == 2);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], NULL, 0, 1, 0, &rq), 0);
	PAIR_PUMP_UNTIL(&p, (ret = zcr_test(rq, &st)) != 0);
	ZT_EXPECT_EQ(ret, 1);
	ZT_EXPECT_EQ(st.len, 0);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], NULL, 0, 1, 0, &rq), 0);
	PAIR_PUMP_UNTIL(&p, (ret = zcr_test(rq, &st)) != 0);
	ZT_EXPECT_EQ(ret, -EMSGSIZE);
	ZT_EXPECT_EQ(st.len, 10);
	wait_all(&p, s, 2);
	pair_close(&p);
}

/* A port number out of range is refused, not wrapped modulo 65536. */
ZT_TEST(port_out_of_range)
{
	struct zcr_ctx *c;
	struct zcr_ep *ep;

	ZT_EXPECT_EQ(zcr_ctx_create(NULL, &c), 0);
	ZT_EXPECT_EQ(zcr_ctx_listen(c, "127.0.0.1:99999"), -EINVAL);
	ZT_EXPECT_EQ(zcr_ctx_listen(c, "127.0.0.1:0000000000065536"), -EINVAL);
	ZT_EXPECT_EQ(zcr_ep_connect(c, "127.0.0.1:70000", &ep), -EINVAL);
	ZT_ASSERT(zcr_ctx_listen(c, "127.0.0.1:0") > 0);
	zcr_ctx_destroy(c);
}
