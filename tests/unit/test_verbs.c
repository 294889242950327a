// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_verbs.c - the RDMA verbs transport (lib/transport/verbs/) on a real
 * device: in the VM, soft-RoCE (rxe0, tools/vm/run-vm.sh -R). Every test
 * is skipped, saying why, where libibverbs finds no device (the host).
 *
 * Two contexts in one process are pumped from one thread, so early
 * arrival is deterministic: a message sent before its receive is posted
 * is staged. Every payload is checked byte for byte.
 */
#include <ifaddrs.h>
#include <net/if.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <infiniband/verbs.h>
#include <linux/capability.h>

#include "zcr_pair.h"
#include "zcr_rdma.h"
#include "transport/verbs/verbs.h"
#include "../selftests/zcrecv_util.h"

/* Rank 0 listens on verbs, rank 1 connects. */
static void vpair_open(struct pair *p, const struct zcr_ctx_attr *attr)
{
	struct zcr_ctx_attr a;
	struct zcr_ep *ep = NULL;
	int i;

	need_device();
	memset(p, 0, sizeof(*p));
	p->n = 2;
	for (i = 0; i < 2; i++) {
		if (attr)
			a = *attr;
		else
			memset(&a, 0, sizeof(a));
		a.rank = i;
		a.quiet = 1;
		ZT_EXPECT_EQ(zcr_ctx_create_sized(&a, sizeof(a), &p->c[i]), 0);
	}
	p->port = zcr_ctx_listen(p->c[0], "verbs://127.0.0.1:0");
	ZT_ASSERT_MSG(p->port > 0, "verbs listen: %s", strerror(-p->port));
	snprintf(p->addr, sizeof(p->addr), "verbs://127.0.0.1:%d", p->port);
	ZT_EXPECT_EQ(zcr_ep_connect(p->c[1], p->addr, &p->to0[1]), 0);
	PAIR_PUMP_UNTIL(p, zcr_ep_accept(p->c[0], 0, &ep) == 0);
	p->from[1] = ep;
	PAIR_PUMP_UNTIL(p, zcr_ep_rank(p->to0[1]) == 0);
	PAIR_PUMP_UNTIL(p, zcr_ep_rank(ep) == 1);
}

static struct zcr_verbs_stats vstats(struct zcr_ctx *c)
{
	struct zcr_verbs_stats vs;

	ZT_EXPECT_EQ(__zcr_verbs_stats(c, &vs), 0);
	return vs;
}

/*
 * One message of len bytes from c[from] to c[to], seed-patterned, into
 * rbuf; early: sent and pumped until staged before the receive is posted.
 */
static void one_msg(struct pair *p, int from, int to, void *sbuf, void *rbuf,
		    size_t len, uint32_t seed, bool early)
{
	struct zcr_ep *ep = from ? p->to0[1] : p->from[1];
	struct zcr_req *s = NULL, *r = NULL;
	struct zcr_status st;
	uint64_t e0 = pair_stats(p->c[to]).early;
	int rc;

	pattern_fill(sbuf, len, seed);
	memset(rbuf, 0xee, len);
	if (!early)
		ZT_EXPECT_EQ(zcr_irecv(p->c[to], rbuf, len, from, 7, &r), 0);
	ZT_EXPECT_EQ(zcr_isend(ep, sbuf, len, 7, &s), 0);
	if (early) {
		PAIR_PUMP_UNTIL(p, pair_stats(p->c[to]).early > e0);
		ZT_EXPECT_EQ(zcr_irecv(p->c[to], rbuf, len, from, 7, &r), 0);
	}
	PAIR_PUMP_UNTIL(p, (rc = zcr_test(r, &st)) != 0);
	ZT_EXPECT_EQ(rc, 1);
	ZT_EXPECT_EQ(st.len, len);
	PAIR_PUMP_UNTIL(p, (rc = zcr_test(s, &st)) != 0);
	ZT_EXPECT_EQ(rc, 1);
	ZT_ASSERT_MSG(!pattern_bad(rbuf, len, seed),
		      "%zu-byte message corrupt at byte %zu", len,
		      pattern_bad(rbuf, len, seed) - 1);
}

/* Every size class both ways, posted and early; eager and rendezvous. */
ZT_TEST(pingpong_all_sizes)
{
	static const size_t sizes[] = { 0, 1, 63, 64, 4095, 4096, 8191, 8192,
		8193, 12345, 65536, 65536 + 123, 1 << 20, (1 << 20) + 7,
		3 << 20, 8 << 20 };
	struct pair p;
	char *a, *b;
	unsigned int i;
	struct zcr_verbs_stats vs;

	vpair_open(&p, NULL);
	a = malloc(8 << 20);
	b = malloc(8 << 20);
	ZT_ASSERT(a && b);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		one_msg(&p, 1, 0, a, b, sizes[i], i, false);
		one_msg(&p, 0, 1, b, a, sizes[i], i + 100, false);
		one_msg(&p, 1, 0, a, b, sizes[i], i + 200, true);
		one_msg(&p, 0, 1, b, a, sizes[i], i + 300, true);
	}
	/* More 1 MiB READs than the endpoint keeps in flight (16). */
	free(a);
	free(b);
	a = malloc((24 << 20) + 5);
	b = malloc((24 << 20) + 5);
	ZT_ASSERT(a && b);
	one_msg(&p, 1, 0, a, b, (24 << 20) + 5, 77, false);
	vs = vstats(p.c[0]);
	ZT_ASSERT(vs.eager > 0 && vs.rndv > 0);
	ZT_ASSERT(vs.direct_posted > 0 && vs.direct_staged > 0);
	ZT_EXPECT_EQ(vs.live_slot_mrs, 0);
	free(a);
	free(b);
	pair_close(&p);
}

/*
 * A receive smaller than the message: eager and rendezvous, posted and
 * early, fill the buffer, complete with -EMSGSIZE and leave the byte after
 * it alone; the next message is intact.
 */
ZT_TEST(truncated_receives)
{
	static const size_t lens[] = { 6000, 300000 };
	struct zcr_req *s, *r;
	struct zcr_status st;
	struct pair p;
	char *sb, *rb;
	unsigned int i;
	int ret, early;

	vpair_open(&p, NULL);
	sb = malloc(300000);
	rb = malloc(300000);
	ZT_ASSERT(sb && rb);
	for (i = 0; i < 2; i++)
		for (early = 0; early < 2; early++) {
			uint64_t e0 = pair_stats(p.c[0]).early;
			size_t room = lens[i] / 2 + 1;

			pattern_fill(sb, lens[i], i + 10 * early);
			memset(rb, 0xee, lens[i]);
			ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb, lens[i], 3, &s), 0);
			if (early)
				PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early >
						e0);
			ZT_EXPECT_EQ(zcr_irecv(p.c[0], rb, room, 1, 3, &r), 0);
			PAIR_PUMP_UNTIL(&p, (ret = zcr_test(r, &st)) != 0);
			ZT_EXPECT_EQ(ret, -EMSGSIZE);
			ZT_EXPECT_EQ(st.len, lens[i]);
			ZT_EXPECT_EQ(pattern_bad(rb, room, i + 10 * early), 0);
			ZT_EXPECT_EQ((unsigned char)rb[room], 0xee);
			PAIR_PUMP_UNTIL(&p, (ret = zcr_test(s, &st)) != 0);
			ZT_EXPECT_EQ(ret, 1);
			one_msg(&p, 1, 0, sb, rb, lens[i], 99, false);
		}
	free(sb);
	free(rb);
	pair_close(&p);
}

/* A job secret: the same one connects, another one is refused. */
ZT_TEST(job_secret)
{
	struct zcr_ctx_attr a = { .quiet = 1, .job_secret = "s3cret-one" };
	struct zcr_ctx *c0, *c1;
	struct zcr_ep *e;
	const char *why = NULL;
	struct pair p;
	char addr[48], sb[64], rb[64];
	int port, st;
	double t0;

	vpair_open(&p, &a);
	one_msg(&p, 1, 0, sb, rb, sizeof(sb), 1, false);
	pair_close(&p);
	a.rank = 0;
	ZT_EXPECT_EQ(zcr_ctx_create_sized(&a, sizeof(a), &c0), 0);
	a.rank = 1;
	a.job_secret = "another-one";
	ZT_EXPECT_EQ(zcr_ctx_create_sized(&a, sizeof(a), &c1), 0);
	port = zcr_ctx_listen(c0, "verbs://127.0.0.1:0");
	ZT_ASSERT(port > 0);
	snprintf(addr, sizeof(addr), "verbs://127.0.0.1:%d", port);
	ZT_EXPECT_EQ(zcr_ep_connect(c1, addr, &e), 0);
	t0 = pair_now();
	while ((st = zcr_ep_error(e, &why)) == 0) {
		zcr_progress(c0, 0);
		zcr_progress(c1, 0);
		ZT_ASSERT_MSG(pair_now() - t0 < 20, "no refusal");
	}
	ZT_EXPECT_EQ(st, -EACCES);
	ZT_ASSERT(why && strstr(why, "job secret"));
	ZT_ASSERT(zcr_ep_rank(e) < 0);
	zcr_ctx_destroy(c1);
	zcr_ctx_destroy(c0);
}

/* What zcr_ctx_listen(addr) of a fresh rank-0 context printed; *ret. */
static void listen_said(const char *secret, const char *addr, int *ret,
			char *msg, size_t len)
{
	struct zcr_ctx_attr a = { .job_secret = secret };
	struct zcr_ctx *c;
	int saved = dup(2), p[2];
	ssize_t n;

	ZT_EXPECT_EQ(zcr_ctx_create_sized(&a, sizeof(a), &c), 0);
	ZT_ASSERT(saved >= 0 && pipe(p) == 0);
	fflush(stderr);
	dup2(p[1], 2);
	*ret = zcr_ctx_listen(c, addr);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(p[1]);
	n = read(p[0], msg, len - 1);
	msg[n > 0 ? n : 0] = 0;
	close(p[0]);
	zcr_ctx_destroy(c);
}

/*
 * A verbs listener on a non-loopback address needs a job secret, as a TCP
 * one does: without one both are refused with -EACCES and the same
 * message; with one the verbs listener takes the address. The address is
 * one of this machine's, the one rxe0 runs on in the VM (dummy0).
 */
ZT_TEST(listen_off_loopback_needs_a_secret_as_tcp)
{
	struct ifaddrs *ifa, *i;
	char host[64] = "", addr[96], tcp_msg[256], verbs_msg[256];
	int ret;

	need_device();
	ZT_ASSERT(getifaddrs(&ifa) == 0);
	for (i = ifa; i && !host[0]; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    !(i->ifa_flags & IFF_LOOPBACK))
			inet_ntop(AF_INET, &((struct sockaddr_in *)
				  i->ifa_addr)->sin_addr, host, sizeof(host));
	freeifaddrs(ifa);
	if (!host[0])
		ZT_SKIP("no non-loopback IPv4 address here");
	snprintf(addr, sizeof(addr), "tcp://%s:0", host);
	listen_said(NULL, addr, &ret, tcp_msg, sizeof(tcp_msg));
	ZT_EXPECT_EQ(ret, -EACCES);
	snprintf(addr, sizeof(addr), "verbs://%s:0", host);
	listen_said(NULL, addr, &ret, verbs_msg, sizeof(verbs_msg));
	ZT_EXPECT_EQ(ret, -EACCES);
	ZT_ASSERT_MSG(strstr(tcp_msg, "needs a job secret"), "tcp: %s",
		      tcp_msg);
	ZT_ASSERT_MSG(!strcmp(tcp_msg, verbs_msg), "tcp: %s verbs: %s",
		      tcp_msg, verbs_msg);
	listen_said("verbs-listen-secret", addr, &ret, verbs_msg,
		    sizeof(verbs_msg));
	ZT_ASSERT_MSG(ret > 0, "verbs listen on %s with a secret: %s", host,
		      strerror(-ret));
}

/*
 * Early arrivals that hit the prediction reach the user's buffer by
 * remapping (pages_remapped, no bytes copied for them), after an RDMA READ
 * straight into the staging slot; misses (another page offset) are
 * copied. The slot's registration is gone before delivery.
 */
ZT_TEST(early_hit_and_miss)
{
	struct zcr_ctx_attr attr = { .policy = ZCRECV_POLICY_REMAP };
	const size_t len = 256 << 10;
	struct zcr_stats s0, s1;
	struct zcr_verbs_stats vs;
	struct pair p;
	char *sbuf, *rbuf;
	int i;

	vpair_open(&p, &attr);
	sbuf = malloc(len + 4096);
	ZT_ASSERT(sbuf);
	ZT_EXPECT_EQ(zcr_mem_alloc(p.c[0], len + 4096, (void **)&rbuf), 0);
	for (i = 0; i < 12; i++)
		one_msg(&p, 1, 0, sbuf, rbuf, len, i, true);
	s0 = pair_stats(p.c[0]);
	vs = vstats(p.c[0]);
	ZT_ASSERT_MSG(s0.hits >= 6, "hits %llu", (unsigned long long)s0.hits);
	ZT_ASSERT_MSG(s0.pages_remapped >= 6 * (len / 4096),
		      "pages_remapped %llu",
		      (unsigned long long)s0.pages_remapped);
	ZT_EXPECT_EQ(vs.bounced, 0);
	ZT_EXPECT_EQ(vs.bounce_bytes, 0);
	ZT_ASSERT(vs.direct_staged >= 12);
	ZT_EXPECT_EQ(vs.live_slot_mrs, 0);
	/* A miss: the same size at another page offset is copied. */
	one_msg(&p, 1, 0, sbuf, rbuf + 100, len, 99, true);
	s1 = pair_stats(p.c[0]);
	ZT_ASSERT(s1.misses > s0.misses);
	ZT_ASSERT(s1.bytes_copied >= s0.bytes_copied + len);
	zcr_mem_free(p.c[0], rbuf);
	free(sbuf);
	pair_close(&p);
}

/* The copy option: staging landings READ into the bounce buffer. */
ZT_TEST(staging_copy_option)
{
	const size_t len = 300 << 10;
	struct zcr_verbs_stats vs;
	struct pair p;
	char *a, *b;
	int i;

	setenv("ZCRECV_VERBS_LAND", "copy", 1);
	vpair_open(&p, NULL);
	a = malloc(len);
	b = malloc(len);
	ZT_ASSERT(a && b);
	for (i = 0; i < 4; i++)
		one_msg(&p, 1, 0, a, b, len, i, true);
	vs = vstats(p.c[0]);
	ZT_EXPECT_EQ(vs.direct_staged, 0);
	ZT_ASSERT(vs.bounced >= 4 && vs.bounce_bytes >= 4 * len);
	free(a);
	free(b);
	pair_close(&p);
}

/*
 * The registration cache (ZCRECV_VERBS_REGCACHE): rendezvous into the same
 * posted buffer registers it once. A cached registration pins the buffer,
 * so an early message predicted for it cannot be exchanged in: the remap
 * is refused (remap_fallbacks) and the message is copied, intact.
 */
ZT_TEST(registration_cache_pins_its_buffers)
{
	struct zcr_ctx_attr attr = { .policy = ZCRECV_POLICY_REMAP };
	const size_t len = 128 << 10;
	struct zcr_verbs_stats vs;
	struct zcr_stats s0, s1;
	struct pair p;
	char *sbuf, *rbuf;
	int i;

	setenv("ZCRECV_VERBS_REGCACHE", "8", 1);
	vpair_open(&p, &attr);
	sbuf = malloc(len);
	ZT_ASSERT(sbuf);
	ZT_EXPECT_EQ(zcr_mem_alloc(p.c[0], len, (void **)&rbuf), 0);
	for (i = 0; i < 6; i++)
		one_msg(&p, 1, 0, sbuf, rbuf, len, i, false);
	vs = vstats(p.c[0]);
	ZT_ASSERT_MSG(vs.cache_hits >= 4, "cache hits %llu",
		      (unsigned long long)vs.cache_hits);
	ZT_ASSERT(vs.regs < 6);
	s0 = pair_stats(p.c[0]);
	for (i = 0; i < 8; i++)
		one_msg(&p, 1, 0, sbuf, rbuf, len, 50 + i, true);
	s1 = pair_stats(p.c[0]);
	ZT_ASSERT(s1.hits > s0.hits);
	ZT_ASSERT_MSG(s1.remap_fallbacks > s0.remap_fallbacks,
		      "a remap into a pinned buffer was not refused");
	ZT_EXPECT_EQ(s1.pages_remapped, s0.pages_remapped);
	zcr_mem_free(p.c[0], rbuf);
	free(sbuf);
	pair_close(&p);
}

/*
 * Slots are recycled under load: bursts of early messages, more than the
 * credits, of mixed sizes, received in order in batches.
 */
ZT_TEST(slot_recycling_under_load)
{
	enum { N = 96, BATCH = 24 };
	struct zcr_req *s[N], *r[N];
	struct zcr_status st;
	struct pair p;
	char *sb[N], *rb[N];
	size_t len[N];
	int i, k, rc;

	vpair_open(&p, NULL);
	for (i = 0; i < N; i++) {
		len[i] = (i % 3 == 0) ? 2000 + i : (64 << 10) + 4096 * i + i;
		sb[i] = malloc(len[i]);
		rb[i] = malloc(len[i]);
		ZT_ASSERT(sb[i] && rb[i]);
		pattern_fill(sb[i], len[i], 1000 + i);
	}
	for (k = 0; k < N; k += BATCH) {
		for (i = k; i < k + BATCH; i++)
			ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb[i], len[i], i,
					       &s[i]), 0);
		for (i = 0; i < 200; i++)
			pair_pump(&p);
		for (i = k; i < k + BATCH; i++)
			ZT_EXPECT_EQ(zcr_irecv(p.c[0], rb[i], len[i], 1, i,
					       &r[i]), 0);
		for (i = k; i < k + BATCH; i++) {
			PAIR_PUMP_UNTIL(&p, (rc = zcr_test(r[i], &st)) != 0);
			ZT_EXPECT_EQ(rc, 1);
			ZT_ASSERT_MSG(!pattern_bad(rb[i], len[i], 1000 + i),
				      "message %d corrupt", i);
			PAIR_PUMP_UNTIL(&p, (rc = zcr_test(s[i], &st)) != 0);
			ZT_EXPECT_EQ(rc, 1);
		}
	}
	ZT_ASSERT(pair_stats(p.c[0]).early > 0);
	ZT_EXPECT_EQ(vstats(p.c[0]).live_slot_mrs, 0);
	for (i = 0; i < N; i++) {
		free(sb[i]);
		free(rb[i]);
	}
	pair_close(&p);
}

/*
 * A peer process that dies after announcing 4 MiB: the receive fails
 * with a clear reason, nothing hangs.
 */
ZT_TEST(peer_disappears)
{
	struct zcr_ctx_attr a = { .rank = 0, .quiet = 1 };
	struct zcr_ctx *c0;
	struct zcr_ep *ep = NULL;
	struct zcr_req *r;
	struct zcr_status st;
	const char *why = NULL;
	char addr[48], *buf;
	double t0;
	int port, rc;
	pid_t pid;

	need_device();
	ZT_EXPECT_EQ(zcr_ctx_create_sized(&a, sizeof(a), &c0), 0);
	port = zcr_ctx_listen(c0, "verbs://127.0.0.1:0");
	ZT_ASSERT(port > 0);
	snprintf(addr, sizeof(addr), "verbs://127.0.0.1:%d", port);
	pid = fork();
	ZT_ASSERT(pid >= 0);
	if (pid == 0) {
		struct zcr_ctx_attr b = { .rank = 1, .quiet = 1 };
		struct zcr_ctx *c1;
		struct zcr_ep *e;
		struct zcr_req *s;
		char *m = malloc(4 << 20);

		if (!m || zcr_ctx_create_sized(&b, sizeof(b), &c1) ||
		    zcr_ep_connect(c1, addr, &e))
			_exit(1);
		while (zcr_ep_rank(e) != 0)
			zcr_progress(c1, 10);
		memset(m, 1, 4 << 20);
		zcr_isend(e, m, 4 << 20, 5, &s);
		zcr_progress(c1, 0);
		kill(getpid(), SIGKILL);
		_exit(2);
	}
	t0 = pair_now();
	while (zcr_ep_accept(c0, 0, &ep) != 0) {
		zcr_progress(c0, 10);
		ZT_ASSERT(pair_now() - t0 < 20);
	}
	buf = malloc(8 << 20);
	ZT_ASSERT(buf);
	ZT_EXPECT_EQ(zcr_irecv(c0, buf, 8 << 20, 1, 5, &r), 0);
	while ((rc = zcr_test(r, &st)) == 0) {
		zcr_progress(c0, 10);
		ZT_ASSERT_MSG(pair_now() - t0 < 30, "receive hangs");
	}
	ZT_ASSERT_MSG(rc < 0, "a message from a killed peer completed");
	zcr_ep_error(ep, &why);
	ZT_ASSERT(why && strstr(why, "verbs"));
	printf("# receive: %s; connection: %s\n", strerror(-rc), why);
	waitpid(pid, &rc, 0);
	free(buf);
	zcr_ctx_destroy(c0);
}

/* ---- a peer that closes: what it sent is still delivered ---- */

/*
 * Receive the messages of len bytes tagged first..end-1 from rank 1,
 * patterned as vsend_burst() wrote them; each must arrive intact.
 */
static void vrecv_burst(struct zcr_ctx *c, char *rb, size_t len, int first,
			int end)
{
	struct zcr_status st;
	struct zcr_req *r;
	int i, rc;

	for (i = first; i < end; i++) {
		memset(rb, 0xee, len);
		ZT_EXPECT_EQ(zcr_irecv(c, rb, len, 1, i, &r), 0);
		rc = zcr_wait_timeout(r, &st, 20000);
		ZT_ASSERT_MSG(rc == 0, "message %d: %s", i, strerror(-rc));
		ZT_EXPECT_EQ(st.len, len);
		ZT_ASSERT_MSG(!pattern_bad(rb, len, (uint32_t)i),
			      "message %d corrupt", i);
	}
}

/* n eager messages from ep, tags 0..n-1, each complete once posted. */
static void vsend_burst(struct zcr_ep *ep, char *sb, size_t len, int n)
{
	struct zcr_req *s;
	int i;

	for (i = 0; i < n; i++) {
		pattern_fill(sb + i * len, len, (uint32_t)i);
		ZT_EXPECT_EQ(zcr_isend(ep, sb + i * len, len, i, &s), 0);
		ZT_EXPECT_EQ(zcr_test(s, NULL), 1);
	}
}

/*
 * A rank sends eager messages (each complete on its side once posted), one
 * announced message, and closes its endpoint; the receiver has not looked
 * at its queues since, so it finds the peer's end of stream and the
 * messages at once. The eager messages are delivered, in order; the
 * announced one cannot be read any more: it fails on both sides (it is
 * dropped), and the endpoint closes once the rest is taken.
 */
ZT_TEST(eager_messages_outlive_a_closed_sender)
{
	enum { N = 16, LEN = 8000 };
	const size_t big = 1 << 20;
	struct zcr_status st;
	struct zcr_req *s, *s2, *r;
	const char *why = NULL;
	struct pair p;
	char *sb, *rb;

	vpair_open(&p, NULL);
	sb = malloc(N * LEN + big);
	rb = malloc(big);
	ZT_ASSERT(sb && rb);
	/* Posted before the end: a later one waits for another rank 1. */
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], rb, big, 1, N, &r), 0);
	vsend_burst(p.to0[1], sb, LEN, N);
	pattern_fill(sb + N * LEN, big, N);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb + N * LEN, big, N, &s), 0);
	/* One more eager message after it: complete, so delivered too. */
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb, LEN, N + 1, &s2), 0);
	ZT_EXPECT_EQ(zcr_test(s2, &st), 1);
	zcr_ep_close(p.to0[1]);
	p.to0[1] = NULL;
	ZT_EXPECT_EQ(zcr_test(s, &st), -ECONNRESET);
	ZT_EXPECT_EQ(zcr_wait_timeout(r, &st, 20000), -ECONNRESET);
	vrecv_burst(p.c[0], rb, LEN, 0, N);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], rb, LEN, 1, N + 1, &r), 0);
	ZT_EXPECT_EQ(zcr_wait_timeout(r, &st, 20000), 0);
	ZT_EXPECT_EQ(pattern_bad(rb, LEN, 0), 0);
	ZT_EXPECT_EQ(zcr_ep_error(p.from[1], &why), -ECONNRESET);
	ZT_ASSERT_MSG(why && strstr(why, "peer closed the connection"),
		      "reason: %s", why);
	free(sb);
	free(rb);
	pair_close(&p);
}

/*
 * Messages held by the receiver for want of staging room when the sender
 * closes are delivered once receives are posted; meanwhile the endpoint
 * sleeps (the closed connection does not keep waking it), refuses new
 * sends to the peer, and closes once the last message is delivered.
 */
ZT_TEST(stalled_messages_outlive_a_closed_sender)
{
	struct zcr_ctx_attr a = { .staging_bytes = 64 << 10 };
	enum { N = 16, LEN = 8000 };
	struct zcr_status st;
	struct zcr_req *s, *r;
	const char *why = NULL;
	struct pair p;
	char *sb, *rb, x[8];
	int calls = 0;
	double t0;

	vpair_open(&p, &a);
	sb = malloc(N * LEN);
	rb = malloc(LEN);
	ZT_ASSERT(sb && rb);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], x, sizeof(x), 1, N, &r), 0);
	vsend_burst(p.to0[1], sb, LEN, N);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).stalls > 0);
	zcr_ep_close(p.to0[1]);
	p.to0[1] = NULL;
	/* Progress that waits up to 100 ms each time, 300 ms long. */
	t0 = pair_now();
	while (pair_now() - t0 < 0.3) {
		ZT_ASSERT(zcr_progress(p.c[0], 100) >= 0);
		calls++;
	}
	ZT_ASSERT_MSG(calls < 20, "%d calls of progress in 300 ms: it spins",
		      calls);
	ZT_EXPECT_EQ(zcr_ep_error(p.from[1], NULL), 0);
	vrecv_burst(p.c[0], rb, LEN, 0, 1);
	ZT_EXPECT_EQ(zcr_isend(p.from[1], sb, 10, 0, &s), -ECONNRESET);
	vrecv_burst(p.c[0], rb, LEN, 1, N);
	ZT_EXPECT_EQ(zcr_ep_error(p.from[1], &why), -ECONNRESET);
	ZT_ASSERT_MSG(why && !strcmp(why, "verbs: peer closed the connection"),
		      "reason: %s", why);
	ZT_EXPECT_EQ(zcr_wait_timeout(r, &st, 20000), -ECONNRESET);
	free(sb);
	free(rb);
	pair_close(&p);
}

/*
 * An announced message the receiver read in full, then the receiver
 * closes: its FIN reaches the sender before the connection's end, so the
 * send completes. The sender has not looked since it sent: it finds the
 * end and the FIN at once when it progresses, or, when it closes its own
 * endpoint too (both), its close finds the FIN.
 */
static void read_then_closed(bool both)
{
	const size_t len = 1 << 20;
	struct zcr_status st;
	struct zcr_req *s, *r;
	struct pair p;
	char *sb, *rb;
	int rc;

	vpair_open(&p, NULL);
	sb = malloc(len);
	rb = malloc(len);
	ZT_ASSERT(sb && rb);
	pattern_fill(sb, len, 5);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], rb, len, 1, 5, &r), 0);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb, len, 5, &s), 0);
	ZT_EXPECT_EQ(zcr_wait_timeout(r, &st, 20000), 0);
	ZT_EXPECT_EQ(pattern_bad(rb, len, 5), 0);
	zcr_ep_close(p.from[1]);
	if (both) {
		zcr_ep_close(p.to0[1]);
		p.to0[1] = NULL;
	}
	rc = zcr_wait_timeout(s, &st, 20000);
	ZT_ASSERT_MSG(rc == 0, "a send the receiver read failed: %s",
		      strerror(-rc));
	free(sb);
	free(rb);
	pair_close(&p);
}

ZT_TEST(a_send_read_before_the_receiver_closed_completes)
{
	read_then_closed(false);
}

ZT_TEST(a_send_read_before_both_closed_completes)
{
	read_then_closed(true);
}

/* Without CAP_IPC_LOCK, RLIMIT_MEMLOCK bounds what may be registered. */
static void drop_ipc_lock(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	ZT_EXPECT_EQ(syscall(SYS_capget, &h, d), 0);
	d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	d[CAP_IPC_LOCK / 32].permitted &= ~(1u << (CAP_IPC_LOCK % 32));
	ZT_EXPECT_EQ(syscall(SYS_capset, &h, d), 0);
}

/*
 * Out of registrable memory: a connection that cannot register its cells
 * is refused with -ENOMEM; a send too big to register closes the
 * connection with a reason naming RLIMIT_MEMLOCK; nothing hangs.
 */
ZT_TEST(registration_out_of_memory)
{
	struct rlimit rl = { 6 << 20, 6 << 20 };
	struct zcr_status st;
	struct zcr_req *s;
	const char *why = NULL;
	struct pair p;
	char *m;
	int rc;

	need_device();
	drop_ipc_lock();
	ZT_EXPECT_EQ(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
	vpair_open(&p, NULL);
	m = malloc(16 << 20);
	ZT_ASSERT(m);
	memset(m, 3, 16 << 20);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], m, 16 << 20, 1, &s), 0);
	PAIR_PUMP_UNTIL(&p, (rc = zcr_test(s, &st)) != 0);
	ZT_ASSERT(rc < 0);
	zcr_ep_error(p.to0[1], &why);
	ZT_ASSERT_MSG(why && strstr(why, "RLIMIT_MEMLOCK"), "reason: %s",
		      why ? why : "(none)");
	printf("# send: %s; connection: %s\n", strerror(-rc), why);
	pair_close(&p);
	/* Too little for a connection's own cells. */
	rl.rlim_cur = 256 << 10;
	ZT_EXPECT_EQ(setrlimit(RLIMIT_MEMLOCK, &rl), 0);
	{
		struct zcr_ctx_attr a = { .rank = 0, .quiet = 1 };
		struct zcr_ctx *c0, *c1;
		struct zcr_ep *e;
		char addr[48];
		int port, ret;

		ZT_EXPECT_EQ(zcr_ctx_create_sized(&a, sizeof(a), &c0), 0);
		a.rank = 1;
		ZT_EXPECT_EQ(zcr_ctx_create_sized(&a, sizeof(a), &c1), 0);
		port = zcr_ctx_listen(c0, "verbs://127.0.0.1:0");
		ZT_ASSERT(port > 0);
		snprintf(addr, sizeof(addr), "verbs://127.0.0.1:%d", port);
		ret = zcr_ep_connect(c1, addr, &e);
		ZT_EXPECT_EQ(ret, -ENOMEM);
		zcr_ctx_destroy(c1);
		zcr_ctx_destroy(c0);
	}
	free(m);
}

/* ---- the old-MR rule, on raw verbs and /dev/zcrecv ---- */

struct loop {
	struct ibv_context *dev;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
};

static void loop_open(struct loop *l)
{
	struct ibv_device **list;
	struct ibv_qp_init_attr qi = { 0 };
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int n = 0, i, gidx = 1;

	list = ibv_get_device_list(&n);
	ZT_ASSERT(list && n > 0);
	l->dev = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	ZT_ASSERT(l->dev);
	ZT_EXPECT_EQ(ibv_query_port(l->dev, 1, &pa), 0);
	if (ibv_query_gid(l->dev, 1, gidx, &gid) || !gid.raw[10])
		gidx = 0;
	ZT_EXPECT_EQ(ibv_query_gid(l->dev, 1, gidx, &gid), 0);
	l->pd = ibv_alloc_pd(l->dev);
	l->cq = ibv_create_cq(l->dev, 16, NULL, NULL, 0);
	ZT_ASSERT(l->pd && l->cq);
	qi.send_cq = qi.recv_cq = l->cq;
	qi.qp_type = IBV_QPT_RC;
	qi.cap.max_send_wr = qi.cap.max_recv_wr = 8;
	qi.cap.max_send_sge = qi.cap.max_recv_sge = 1;
	for (i = 0; i < 2; i++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT,
			.port_num = 1, .qp_access_flags =
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };

		l->qp[i] = ibv_create_qp(l->pd, &qi);
		ZT_ASSERT(l->qp[i]);
		ZT_EXPECT_EQ(ibv_modify_qp(l->qp[i], &a, IBV_QP_STATE |
					   IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					   IBV_QP_ACCESS_FLAGS), 0);
	}
	for (i = 0; i < 2; i++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR,
			.path_mtu = pa.active_mtu,
			.dest_qp_num = l->qp[1 - i]->qp_num, .rq_psn = 0,
			.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
			.ah_attr = { .is_global = 1, .port_num = 1,
				     .dlid = pa.lid,
				     .grh = { .dgid = gid,
					      .sgid_index = (uint8_t)gidx,
					      .hop_limit = 64 } } };

		ZT_EXPECT_EQ(ibv_modify_qp(l->qp[i], &a, IBV_QP_STATE |
					   IBV_QP_AV | IBV_QP_PATH_MTU |
					   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					   IBV_QP_MAX_DEST_RD_ATOMIC |
					   IBV_QP_MIN_RNR_TIMER), 0);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 10;
		a.retry_cnt = 1;
		a.rnr_retry = 1;
		a.max_rd_atomic = 1;
		ZT_EXPECT_EQ(ibv_modify_qp(l->qp[i], &a, IBV_QP_STATE |
					   IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					   IBV_QP_MAX_QP_RD_ATOMIC), 0);
	}
}

/* RDMA WRITE len bytes from src (lkey) to raddr/rkey; the status. */
static int loop_write(struct loop *l, void *src, uint32_t lkey,
		      uint64_t raddr, uint32_t rkey, size_t len)
{
	struct ibv_sge sg = { (uintptr_t)src, (uint32_t)len, lkey };
	struct ibv_send_wr wr = { .sg_list = &sg, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { raddr, rkey } }, *bad;
	struct ibv_wc wc;
	double t0 = pair_now();
	int k;

	ZT_EXPECT_EQ(ibv_post_send(l->qp[0], &wr, &bad), 0);
	while ((k = ibv_poll_cq(l->cq, 1, &wc)) == 0)
		ZT_ASSERT_MSG(pair_now() - t0 < 20, "no completion");
	ZT_EXPECT_EQ(k, 1);
	return wc.status;
}

static bool all_bytes(const char *p, size_t n, char c)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != c)
			return false;
	return true;
}

/*
 * A staging slot registered for the NIC cannot be exchanged (EBUSY: the
 * pages are pinned); once it is deregistered and exchanged, its old rkey
 * cannot write anywhere: not into the slot's new pages and not into the
 * pages the user's buffer now owns. Also reports the device's ODP caps.
 */
ZT_TEST(old_mr_cannot_reach_exchanged_pages)
{
	struct zcrecv_zone_map zs, zu;
	struct zcrecv_api api;
	struct ibv_device_attr_ex dx;
	struct ibv_mr *mr, *smr;
	struct loop l = { 0 };
	const size_t pages = 16;
	size_t len;
	uint32_t old_rkey;
	char *src;
	int fd, ret;

	need_device();
	fd = open(ZCRECV_DEV, O_RDWR);
	if (fd < 0)
		ZT_SKIP("no %s (zcrecv.ko not loaded)", ZCRECV_DEV);
	ZT_EXPECT_EQ(zcrecv_handshake(fd, &api), 0);
	ZT_EXPECT_EQ(zcrecv_zone_map(fd, pages, &zs), 0);
	ZT_EXPECT_EQ(zcrecv_zone_map(fd, pages, &zu), 0);
	len = zs.len;
	memset(zs.addr, 'S', len);
	memset(zu.addr, 'U', len);
	loop_open(&l);
	memset(&dx, 0, sizeof(dx));
	if (!ibv_query_device_ex(l.dev, NULL, &dx))
		printf("# %s ODP caps: general 0x%llx rc 0x%x\n",
		       ibv_get_device_name(l.dev->device),
		       (unsigned long long)dx.odp_caps.general_caps,
		       dx.odp_caps.per_transport_caps.rc_odp_caps);
	src = malloc(len);
	ZT_ASSERT(src);
	smr = ibv_reg_mr(l.pd, src, len, IBV_ACCESS_LOCAL_WRITE);
	ZT_ASSERT(smr);

	/* The slot, registered: its pages are pinned, never exchanged. */
	mr = ibv_reg_mr(l.pd, zs.addr, len, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE);
	ZT_ASSERT_MSG(mr, "ibv_reg_mr on a zone: %s", strerror(errno));
	ret = zcrecv_remap1(fd, zs.addr, zu.addr, len);
	ZT_EXPECT_EQ(ret, -EBUSY);
	ZT_ASSERT(all_bytes(zu.addr, len, 'U'));
	memset(src, 'W', len);
	ZT_EXPECT_EQ(loop_write(&l, src, smr->lkey, (uintptr_t)zs.addr,
				mr->rkey, len), IBV_WC_SUCCESS);
	ZT_ASSERT(all_bytes(zs.addr, len, 'W'));

	/* Deregistered, then exchanged: the user's buffer has the pages. */
	old_rkey = mr->rkey;
	ZT_EXPECT_EQ(ibv_dereg_mr(mr), 0);
	ZT_EXPECT_EQ(zcrecv_remap1(fd, zs.addr, zu.addr, len), 0);
	ZT_ASSERT(all_bytes(zu.addr, len, 'W'));
	ZT_ASSERT(all_bytes(zs.addr, len, 'U'));

	/* The old key: refused, and no byte changes on either side. */
	memset(src, 'X', len);
	ret = loop_write(&l, src, smr->lkey, (uintptr_t)zs.addr, old_rkey,
			 len);
	printf("# RDMA WRITE with the old rkey: %s\n",
	       ibv_wc_status_str((enum ibv_wc_status)ret));
	ZT_ASSERT(ret != IBV_WC_SUCCESS);
	ZT_ASSERT_MSG(all_bytes(zu.addr, len, 'W'),
		      "the old MR wrote into the user's buffer");
	ZT_ASSERT(all_bytes(zs.addr, len, 'U'));
	zcrecv_zone_unmap(&zs);
	zcrecv_zone_unmap(&zu);
	close(fd);
}
