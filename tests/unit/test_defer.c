// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_defer.c - deferred early arrivals: over shm, a large message that
 * arrives before its receive and would only be copied out of staging
 * stays in the sender (its announcement unread) and lands once, straight
 * into the receive that takes it. Checked: the bytes, the counters
 * (deferred, not early; nothing copied out of staging), the sender's send
 * completing only then, the threshold (ZCRECV_DEFER_MIN, its bad values),
 * the remap policy staging as before, TCP staging as before (the network
 * goes on while the application computes), and everything that must not
 * wait behind a deferred message: a receive posted for a later one, a
 * probe, an ANY_SOURCE receive, a synchronous send whose acknowledgement
 * comes behind it.
 * Run: build/tests/unit/test_defer [name]
 */
#include <stdlib.h>

#include "core/core.h"
#include "zcr_pair.h"

#define BIG	(256 * 1024)
#define SMALL	(4 * 1024)

static const struct zcr_ctx_attr copy_attr = {
	.policy = ZCRECV_POLICY_COPY,
};

/* Two ranks under attr, over shm when shm is set (checked), else TCP. */
static void open_pair(struct pair *p, const struct zcr_ctx_attr *attr,
		      bool shm)
{
	if (shm)
		setenv("ZCRECV_SHM", "1", 1);
	else
		unsetenv("ZCRECV_SHM");
	pair_open(p, 2, attr);
	unsetenv("ZCRECV_SHM");
	if (shm) {
		PAIR_PUMP_UNTIL(p, !strcmp(pair_tp(p->from[1]), "shm") &&
				   !strcmp(pair_tp(p->to0[1]), "shm"));
	} else {
		ZT_ASSERT(!strcmp(pair_tp(p->from[1]), ""));
	}
}

/* Two ranks over shm whose synchronous sends wait for an acknowledgement. */
static void open_sync_pair(struct pair *p, const struct zcr_ctx_attr *attr)
{
	struct zcr_ctx_attr a = *attr;
	int i;

	setenv("ZCRECV_SHM", "1", 1);
	memset(p, 0, sizeof(*p));
	p->n = 2;
	for (i = 0; i < 2; i++) {
		a.rank = i;
		a.quiet = 1;
		ZT_EXPECT_EQ(zcr_ctx_create_sized(&a, sizeof(a), &p->c[i]), 0);
	}
	p->c[1]->comm_ids = true;	/* as a job's context dials */
	p->port = zcr_ctx_listen(p->c[0], "127.0.0.1:0");
	snprintf(p->addr, sizeof(p->addr), "127.0.0.1:%d", p->port);
	ZT_EXPECT_EQ(zcr_ep_connect(p->c[1], p->addr, &p->to0[1]), 0);
	PAIR_PUMP_UNTIL(p, zcr_ep_accept(p->c[0], 0, &p->from[1]) == 0);
	PAIR_PUMP_UNTIL(p, !strcmp(pair_tp(p->from[1]), "shm") &&
			   !strcmp(pair_tp(p->to0[1]), "shm"));
	unsetenv("ZCRECV_SHM");
	ZT_ASSERT(p->from[1]->sync_ok);
}

/* Pump until rank 0 has deferred n messages in all. */
static void until_deferred(struct pair *p, uint64_t n)
{
	PAIR_PUMP_UNTIL(p, pair_stats(p->c[0]).deferred == n);
}

/* Receive len bytes of (1, tag) into a fresh buffer, check seed. */
static void recv_check(struct pair *p, size_t len, int tag, uint32_t seed)
{
	char *rb = malloc(len);
	struct zcr_status st;
	struct zcr_req *r;

	ZT_ASSERT(rb);
	memset(rb, 0, len);
	ZT_EXPECT_EQ(zcr_irecv(p->c[0], rb, len, 1, tag, &r), 0);
	PAIR_PUMP_UNTIL(p, zcr_test(r, &st) != 0);
	ZT_EXPECT_EQ(st.error, 0);
	ZT_EXPECT_EQ(st.len, len);
	ZT_EXPECT_EQ(st.tag, tag);
	ZT_EXPECT_EQ(pattern_bad(rb, len, seed), 0);
	free(rb);
}

static struct zcr_req *send_seed(struct pair *p, char *sb, size_t len,
				 int tag, uint32_t seed)
{
	struct zcr_req *s;

	pattern_fill(sb, len, seed);
	ZT_EXPECT_EQ(zcr_isend(p->to0[1], sb, len, tag, &s), 0);
	return s;
}

/*
 * A large early message under the copy policy waits and lands once; a
 * small one is staged as before. Over shm the sender's send stays
 * incomplete until the receive pulls it (its bytes are the sender's).
 */
static void defers_large(void)
{
	char *sb = malloc(BIG), *sb2 = malloc(SMALL);
	struct zcr_req *s, *s2;
	struct zcr_stats a, b;
	struct pair p;
	int i;

	ZT_ASSERT(sb && sb2);
	open_pair(&p, &copy_attr, true);
	a = pair_stats(p.c[0]);
	s = send_seed(&p, sb, BIG, 1, 11);
	until_deferred(&p, a.deferred + 1);
	for (i = 0; i < 100; i++)
		pair_pump(&p);
	b = pair_stats(p.c[0]);
	ZT_EXPECT_EQ(b.early, a.early);
	ZT_EXPECT_EQ(b.deferred, a.deferred + 1);
	ZT_EXPECT_EQ(zcr_test(s, NULL), 0);	/* its bytes are the sender's */
	recv_check(&p, BIG, 1, 11);
	PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
	b = pair_stats(p.c[0]);
	ZT_EXPECT_EQ(b.bytes_copied, a.bytes_copied);
	ZT_EXPECT_EQ(b.posted, a.posted + 1);
	ZT_EXPECT_EQ(b.early, a.early);

	/* Below ZCRECV_DEFER_MIN (64 KiB): staged, copied out. */
	s2 = send_seed(&p, sb2, SMALL, 2, 12);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == a.early + 1);
	recv_check(&p, SMALL, 2, 12);
	PAIR_PUMP_UNTIL(&p, zcr_test(s2, NULL) != 0);
	b = pair_stats(p.c[0]);
	ZT_EXPECT_EQ(b.deferred, a.deferred + 1);
	ZT_EXPECT_EQ(b.bytes_copied, a.bytes_copied + SMALL);
	pair_close(&p);
	free(sb);
	free(sb2);
}

ZT_TEST(shm_large_early_message_waits_and_lands_once)
{
	defers_large();
}

/*
 * A receive posted for a message that is still to come from the sender of
 * a deferred one: the deferred one is staged (nothing is behind it yet),
 * the later one lands in its receive, then the first in its own.
 */
static void later_receive_releases(void)
{
	char *sb = malloc(BIG), *sb2 = malloc(SMALL), *rb = malloc(SMALL);
	struct zcr_req *s, *s2, *r;
	struct zcr_status st;
	struct zcr_stats a;
	struct pair p;

	ZT_ASSERT(sb && sb2 && rb);
	open_pair(&p, &copy_attr, true);
	a = pair_stats(p.c[0]);
	s = send_seed(&p, sb, BIG, 1, 21);
	until_deferred(&p, a.deferred + 1);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], rb, SMALL, 1, 2, &r), 0);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == a.early + 1);
	s2 = send_seed(&p, sb2, SMALL, 2, 22);
	PAIR_PUMP_UNTIL(&p, zcr_test(r, &st) != 0);
	ZT_EXPECT_EQ(st.len, SMALL);
	ZT_EXPECT_EQ(pattern_bad(rb, SMALL, 22), 0);
	recv_check(&p, BIG, 1, 21);
	PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0 && zcr_test(s2, NULL) != 0);
	pair_close(&p);
	free(sb);
	free(sb2);
	free(rb);
}

ZT_TEST(shm_receive_for_a_later_message_releases)
{
	later_receive_releases();
}

/*
 * A probe (claiming or not) that misses may look for what comes behind
 * a deferred message: the deferred one is staged.
 */
static void probe_releases(bool claim)
{
	char *sb = malloc(BIG);
	struct zcr_message *m;
	struct zcr_status st;
	struct zcr_req *s;
	struct zcr_stats a;
	struct pair p;

	ZT_ASSERT(sb);
	open_pair(&p, &copy_attr, true);
	a = pair_stats(p.c[0]);
	s = send_seed(&p, sb, BIG, 1, 31);
	until_deferred(&p, a.deferred + 1);
	/* The deferred one itself is there for a probe to see. */
	ZT_EXPECT_EQ(zcr_iprobe(p.c[0], 0, 1, 1, &st), 1);
	ZT_EXPECT_EQ(st.len, BIG);
	ZT_EXPECT_EQ(pair_stats(p.c[0]).early, a.early);
	if (claim)
		ZT_EXPECT_EQ(zcr_improbe(p.c[0], 0, 1, 2, &m, &st), 0);
	else
		ZT_EXPECT_EQ(zcr_iprobe(p.c[0], 0, 1, 2, &st), 0);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == a.early + 1);
	recv_check(&p, BIG, 1, 31);
	PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
	pair_close(&p);
	free(sb);
}

ZT_TEST(shm_improbe_for_a_later_message_releases)
{
	probe_releases(true);
}

ZT_TEST(shm_probe_for_a_later_message_releases)
{
	probe_releases(false);
}

/*
 * The sender goes on: whatever it sends after a deferred message (here
 * many small ones, more than the ring holds) gets the deferred one
 * staged, and completes without any receive posted.
 */
ZT_TEST(shm_later_sends_are_not_held_behind_a_deferred_message)
{
	enum { N = 1000 };
	char *sb = malloc(BIG), small[64], rb[64];
	struct zcr_req *s, *t[N];
	struct zcr_stats a;
	struct pair p;
	int i;

	ZT_ASSERT(sb);
	open_pair(&p, &copy_attr, true);
	a = pair_stats(p.c[0]);
	s = send_seed(&p, sb, BIG, 1, 91);
	until_deferred(&p, a.deferred + 1);
	memset(small, 5, sizeof(small));
	for (i = 0; i < N; i++)
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], small, sizeof(small), 2,
				       &t[i]), 0);
	for (i = 0; i < N; i++)
		PAIR_PUMP_UNTIL(&p, zcr_test(t[i], NULL) != 0);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == a.early + 1 + N);
	recv_check(&p, BIG, 1, 91);
	for (i = 0; i < N; i++) {
		ZT_EXPECT_EQ(zcr_recv(p.c[0], rb, sizeof(rb), 1, 2, NULL), 0);
		ZT_EXPECT_EQ(memcmp(rb, small, sizeof(rb)), 0);
	}
	PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
	pair_close(&p);
	free(sb);
}

/*
 * An ANY_SOURCE receive waiting (for another tag) may want what comes
 * behind: nothing is deferred while it is posted.
 */
ZT_TEST(any_source_receive_posted_stages)
{
	char *sb = malloc(BIG), rb[8];
	struct zcr_req *s, *r;
	struct zcr_stats a;
	struct pair p;

	ZT_ASSERT(sb);
	open_pair(&p, &copy_attr, true);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], rb, sizeof(rb), ZCRECV_ANY_SOURCE, 9,
			       &r), 0);
	a = pair_stats(p.c[0]);
	s = send_seed(&p, sb, BIG, 1, 41);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == a.early + 1);
	ZT_EXPECT_EQ(pair_stats(p.c[0]).deferred, a.deferred);
	recv_check(&p, BIG, 1, 41);
	PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
	ZT_EXPECT_EQ(zcr_cancel(r), 0);
	pair_close(&p);
	free(sb);
}

/*
 * Rank 0 deferred rank 1's large message, then sends rank 1 a synchronous
 * message: its acknowledgement travels behind the deferred one (over TCP
 * the pair shares one connection; over shm, one ring each way), so the
 * deferred one must be staged for the synchronous send to complete.
 */
static void sync_send_releases(void)
{
	char *sb = malloc(BIG), msg[64], rb[64];
	struct zcr_req *s, *ss, *r;
	struct zcr_stats a;
	struct pair p;

	ZT_ASSERT(sb);
	open_sync_pair(&p, &copy_attr);
	a = pair_stats(p.c[0]);
	s = send_seed(&p, sb, BIG, 1, 51);
	until_deferred(&p, a.deferred + 1);
	memset(msg, 7, sizeof(msg));
	ZT_EXPECT_EQ(zcr_issend_comm(p.from[1], 0, msg, sizeof(msg), 3, &ss), 0);
	ZT_EXPECT_EQ(zcr_irecv(p.c[1], rb, sizeof(rb), 0, 3, &r), 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(r, NULL) != 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(ss, NULL) != 0);
	ZT_EXPECT_EQ(memcmp(rb, msg, sizeof(rb)), 0);
	recv_check(&p, BIG, 1, 51);
	PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
	pair_close(&p);
	free(sb);
}

ZT_TEST(shm_sync_send_behind_a_deferred_message_completes)
{
	sync_send_releases();
}

/* The remap policy stages every early arrival, as before. */
ZT_TEST(remap_policy_never_defers)
{
	const struct zcr_ctx_attr attr = { .policy = ZCRECV_POLICY_REMAP };
	char *sb = malloc(BIG);
	struct zcr_req *s;
	struct zcr_stats a;
	struct pair p;

	ZT_ASSERT(sb);
	open_pair(&p, &attr, true);
	a = pair_stats(p.c[0]);
	s = send_seed(&p, sb, BIG, 1, 61);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == a.early + 1);
	ZT_EXPECT_EQ(pair_stats(p.c[0]).deferred, a.deferred);
	recv_check(&p, BIG, 1, 61);
	PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
	pair_close(&p);
	free(sb);
}

/* ZCRECV_DEFER_MIN: 0 stages everything; a bad value fails clearly. */
ZT_TEST(defer_min_zero_stages_and_bad_values_fail)
{
	static const char *const bad[] = { "abc", "-1", "12k", "", " 5",
					   "99999999999999999999" };
	struct zcr_ctx_attr attr = { .policy = ZCRECV_POLICY_COPY };
	char *sb = malloc(BIG);
	struct zcr_ctx *c;
	struct zcr_req *s;
	struct zcr_stats a;
	struct pair p;
	unsigned int i;

	ZT_ASSERT(sb);
	setenv("ZCRECV_DEFER_MIN", "0", 1);
	open_pair(&p, &copy_attr, true);
	a = pair_stats(p.c[0]);
	s = send_seed(&p, sb, BIG, 1, 71);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == a.early + 1);
	ZT_EXPECT_EQ(pair_stats(p.c[0]).deferred, 0);
	recv_check(&p, BIG, 1, 71);
	PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
	pair_close(&p);

	/* Larger than the message: staged too. */
	setenv("ZCRECV_DEFER_MIN", "1048576", 1);
	open_pair(&p, &copy_attr, true);
	s = send_seed(&p, sb, BIG, 1, 72);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == 1);
	ZT_EXPECT_EQ(pair_stats(p.c[0]).deferred, 0);
	recv_check(&p, BIG, 1, 72);
	PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
	pair_close(&p);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("ZCRECV_DEFER_MIN", bad[i], 1);
		attr.quiet = 1;
		c = NULL;
		/* "" is unset: the default. */
		ZT_EXPECT_EQ(zcr_ctx_create_sized(&attr, sizeof(attr), &c),
			     *bad[i] ? -EINVAL : 0);
		if (c)
			zcr_ctx_destroy(c);
	}
	unsetenv("ZCRECV_DEFER_MIN");
	free(sb);
}

/*
 * Over TCP an early message shorter than 1 MiB is staged as before,
 * whatever the policy (and so is a large one until its connection is
 * known to be fast, below): left in the socket it would stop the sender,
 * and the network would wait for the receive instead of working while
 * the application computes.
 */
ZT_TEST(tcp_large_early_message_is_staged)
{
	char *sb = malloc(BIG);
	struct zcr_req *s;
	struct zcr_stats a, b;
	struct pair p;

	ZT_ASSERT(sb);
	open_pair(&p, &copy_attr, false);
	a = pair_stats(p.c[0]);
	s = send_seed(&p, sb, BIG, 1, 81);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == a.early + 1);
	recv_check(&p, BIG, 1, 81);
	PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
	b = pair_stats(p.c[0]);
	ZT_EXPECT_EQ(b.deferred, a.deferred);
	ZT_EXPECT_EQ(b.bytes_copied, a.bytes_copied + BIG);
	pair_close(&p);
	free(sb);
}

#define HUGE	(2 << 20)	/* timed and deferred over TCP: 1 MiB or more */

/*
 * Send len bytes of (1, tag) with the receive posted first, and time its
 * delivery: slow, the sender progresses only after the receiver has
 * waited 0.2 s with the first part (what zcr_isend() writes) in; else at
 * once.
 */
static void posted_delivery(struct pair *p, char *sb, size_t len, int tag,
			    bool slow)
{
	char *rb = malloc(len);
	struct zcr_status st;
	struct zcr_req *r, *s;
	double t0;

	ZT_ASSERT(rb);
	ZT_EXPECT_EQ(zcr_irecv(p->c[0], rb, len, 1, tag, &r), 0);
	s = send_seed(p, sb, len, tag, (uint32_t)tag);
	if (slow) {
		t0 = pair_now();
		while (pair_now() - t0 < 0.2)
			ZT_ASSERT(zcr_progress(p->c[0], 0) >= 0);
		ZT_EXPECT_EQ(zcr_test(r, NULL), 0);
	}
	PAIR_PUMP_UNTIL(p, zcr_test(r, &st) != 0);
	PAIR_PUMP_UNTIL(p, zcr_test(s, NULL) != 0);
	ZT_EXPECT_EQ(st.error, 0);
	ZT_EXPECT_EQ(pattern_bad(rb, len, (uint32_t)tag), 0);
	free(rb);
}

/*
 * An early message of len bytes, (1, tag): deferred (left in the socket
 * until its receive) or staged? Its bytes are checked either way, and a
 * deferred one lands straight in its receive: nothing copied, nothing
 * remapped.
 */
static bool early_deferred(struct pair *p, char *sb, size_t len, int tag)
{
	struct zcr_stats a = pair_stats(p->c[0]), b;
	struct zcr_req *s;
	bool deferred;

	s = send_seed(p, sb, len, tag, (uint32_t)tag);
	PAIR_PUMP_UNTIL(p, pair_stats(p->c[0]).deferred == a.deferred + 1 ||
			   pair_stats(p->c[0]).early == a.early + 1);
	deferred = pair_stats(p->c[0]).deferred == a.deferred + 1;
	recv_check(p, len, tag, (uint32_t)tag);
	PAIR_PUMP_UNTIL(p, zcr_test(s, NULL) != 0);
	b = pair_stats(p->c[0]);
	if (deferred) {
		ZT_EXPECT_EQ(b.early, a.early);
		ZT_EXPECT_EQ(b.posted, a.posted + 1);
		ZT_EXPECT_EQ(b.bytes_copied, a.bytes_copied);
		ZT_EXPECT_EQ(b.remaps, a.remaps);
	} else {
		ZT_EXPECT_EQ(b.early, a.early + 1);
	}
	return deferred;
}

/*
 * Over TCP the connection's own rate decides (ZCRECV_TCP_DEFER_RATE,
 * default 250 MB/s): a large payload read as it came is timed, and while
 * the last one timed came fast, large early payloads wait in the socket
 * for their receive, under auto (remap landings) as under copy; every
 * 8th is staged and timed again. Loopback delivers GB/s (hundreds of
 * MB/s under ThreadSanitizer, hence a threshold of 50 MB/s here); held
 * back by its sender for 0.2 s, 2 MiB come at 10 MB/s or less.
 */
static void tcp_rate_decides(const struct zcr_ctx_attr *attr)
{
	char *sb = malloc(HUGE);
	struct pair p;
	int i, n;

	ZT_ASSERT(sb);
	setenv("ZCRECV_TCP_DEFER_RATE", "50", 1);
	open_pair(&p, attr, false);
	unsetenv("ZCRECV_TCP_DEFER_RATE");
	/* Nothing timed yet: staged. */
	ZT_EXPECT_EQ(early_deferred(&p, sb, HUGE, 1), false);
	/* Delivered slowly: staged. */
	posted_delivery(&p, sb, HUGE, 2, true);
	ZT_EXPECT_EQ(early_deferred(&p, sb, HUGE, 3), false);
	/* Fast: deferred, and a small one still staged. */
	posted_delivery(&p, sb, HUGE, 4, false);
	ZT_EXPECT_EQ(early_deferred(&p, sb, HUGE, 5), true);
	ZT_EXPECT_EQ(early_deferred(&p, sb, SMALL, 6), false);
	/* Every 8th is staged (and timed: fast, deferred again after). */
	for (i = 0, n = 1; i < 7; i++)
		n += early_deferred(&p, sb, HUGE, 7 + i);
	ZT_EXPECT_EQ(n, 7);
	ZT_EXPECT_EQ(early_deferred(&p, sb, HUGE, 14), true);
	/* Slow again: staged again. */
	posted_delivery(&p, sb, HUGE, 15, true);
	ZT_EXPECT_EQ(early_deferred(&p, sb, HUGE, 16), false);
	pair_close(&p);
	free(sb);
}

ZT_TEST(tcp_fast_connection_defers_large_early_payloads_auto)
{
	static const struct zcr_ctx_attr auto_attr = {
		.policy = ZCRECV_POLICY_AUTO,
	};

	tcp_rate_decides(&auto_attr);
}

ZT_TEST(tcp_fast_connection_defers_large_early_payloads_copy)
{
	tcp_rate_decides(&copy_attr);
}

/* ZCRECV_TCP_DEFER_RATE=0, or a rate loopback never reaches: staged. */
ZT_TEST(tcp_defer_rate_zero_or_unreached_stages)
{
	static const char *const rate[] = { "0", "1000000" };
	char *sb = malloc(HUGE);
	struct pair p;
	size_t i;

	ZT_ASSERT(sb);
	for (i = 0; i < 2; i++) {
		setenv("ZCRECV_TCP_DEFER_RATE", rate[i], 1);
		open_pair(&p, &copy_attr, false);
		unsetenv("ZCRECV_TCP_DEFER_RATE");
		posted_delivery(&p, sb, HUGE, 1, false);
		ZT_EXPECT_EQ(early_deferred(&p, sb, HUGE, 2), false);
		pair_close(&p);
	}
	free(sb);
}
