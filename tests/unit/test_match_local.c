// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_match_local.c - matching without sockets: a fake in-memory transport
 * drives match through its upward interface (match/match.h) exactly as a
 * real transport does: header -> __zcr_match_arrive_locked() says where the
 * payload goes, the fake copies it there, then
 * __zcr_match_payload_done_locked(). Receives are posted and completed
 * through the public API; the progress engine (zcr_test) drains stalled
 * arrivals. Run: build/tests/unit/test_match_local [name]
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/core.h"
#include "match/match.h"
#include "transport/transport.h"
#include "zt.h"

#define QMAX	32

struct fake_msg {
	int tag;
	const char *data;
	uint64_t len;
};

/* One fake connection: messages "on the wire", delivered by pump(). */
struct fake_ep {
	struct fake_msg q[QMAX];
	int head, tail;
	bool hdr_given;		/* q[head]'s header went to match */
	uint64_t got;		/* payload bytes of q[head] landed */
	int closes, frees, adopted;
};

static void fake_close(struct zcr_ep *ep, void *priv)
{
	(void)ep;
	((struct fake_ep *)priv)->closes++;
}

static void fake_free(struct zcr_ep *ep, void *priv)
{
	(void)ep;
	((struct fake_ep *)priv)->frees++;
}

static int fake_send(struct zcr_ep *ep, struct zcr_req *r)
{
	(void)ep;
	__zcr_req_complete_locked(r, 0);
	return 0;
}

static int fake_adopt(struct zcr_ep *ep, const struct zcr_transport_ops *prev,
		      void *prev_priv, void *arg)
{
	struct fake_ep *fe = arg;

	/* The old state moves with the endpoint: its queue goes on. */
	*fe = *(struct fake_ep *)prev_priv;
	fe->adopted++;
	ep->tp_priv = fe;
	prev->ep_close(ep, prev_priv);
	prev->ep_free(ep, prev_priv);
	return 0;
}

static const struct zcr_transport_ops fake_a_def = {
	.size = sizeof(struct zcr_transport_ops),
	.name = "fake-a",
	.send = fake_send,
	.ep_close = fake_close,
	.ep_free = fake_free,
};

static const struct zcr_transport_ops fake_b_def = {
	.size = sizeof(struct zcr_transport_ops),
	.name = "fake-b",
	.send = fake_send,
	.ep_close = fake_close,
	.ep_free = fake_free,
	.adopt = fake_adopt,
};

/* Completed as the registry completes a transport's table (base/ops.h). */
static struct zcr_transport_ops fake_a, fake_b;

static struct zcr_ctx *ctx_new(uint64_t staging, const char *pred)
{
	struct zcr_ctx_attr a = { .rank = 0, .quiet = 1,
				  .backend = ZCRECV_BACKEND_COPY,
				  .staging_bytes = staging, .predictor = pred };
	struct zcr_ctx *c;

	ZT_EXPECT_EQ(zcr_ctx_create(&a, &c), 0);
	return c;
}

/* An open endpoint of the fake transport whose peer is rank. */
static struct zcr_ep *ep_new(struct zcr_ctx *c, struct fake_ep *fe, int rank)
{
	struct zcr_ep *ep;

	if (!fake_a.size) {
		ZT_EXPECT_EQ(__zcr_transport_ops_set(&fake_a, &fake_a_def,
						     "fake-a"), 0);
		ZT_EXPECT_EQ(__zcr_transport_ops_set(&fake_b, &fake_b_def,
						     "fake-b"), 0);
	}
	memset(fe, 0, sizeof(*fe));
	pthread_mutex_lock(&c->lock);
	ep = __zcr_ep_new_locked(c, &fake_a, fe, false);
	ZT_ASSERT(ep);
	ZT_EXPECT_EQ(__zcr_ep_open_locked(ep, rank), 0);
	pthread_mutex_unlock(&c->lock);
	return ep;
}

static void put(struct zcr_ep *ep, int tag, const char *data, uint64_t len)
{
	struct fake_ep *fe = ep->tp_priv;

	ZT_ASSERT(fe->tail < QMAX);
	fe->q[fe->tail++] = (struct fake_msg){ tag, data, len };
}

/*
 * Move at most limit payload bytes of what is queued on ep, the way a
 * transport does: one header at a time, payload only where match says.
 */
static void pump_n(struct zcr_ep *ep, uint64_t limit)
{
	struct zcr_ctx *c = ep->ctx;
	struct fake_ep *fe = ep->tp_priv;

	pthread_mutex_lock(&c->lock);
	while (fe->head < fe->tail && ep->state != ZCR_EP_CLOSED) {
		struct fake_msg *m = &fe->q[fe->head];
		uint64_t n;

		if (!fe->hdr_given && !limit)
			break;
		if (!fe->hdr_given) {
			fe->hdr_given = true;
			fe->got = 0;
			__zcr_match_arrive_locked(c, &ep->rx, ep->rank, m->tag,
						  m->len);
		}
		if (ep->rx.state != ZCR_RX_LANDING)
			break;		/* stalled: read nothing more */
		n = ep->rx.room - fe->got;
		if (n > limit)
			n = limit;
		memcpy(ep->rx.dst + fe->got, m->data + fe->got, n);
		fe->got += n;
		limit -= n;
		if (fe->got < ep->rx.room)
			break;
		/* The rest of a truncated message is read and dropped. */
		__zcr_match_payload_done_locked(c, &ep->rx);
		fe->hdr_given = false;
		fe->head++;
	}
	pthread_mutex_unlock(&c->lock);
}

static void pump(struct zcr_ep *ep)
{
	pump_n(ep, UINT64_MAX);
}

static struct zcr_stats stats(struct zcr_ctx *c)
{
	struct zcr_stats st;

	ZT_EXPECT_EQ(zcr_ctx_stats(c, &st), 0);
	return st;
}

static void fill(char *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (char)(seed * 131 + i * 7);
}

ZT_TEST(posted_then_arrival)
{
	static char src[5000], dst[8192];
	struct zcr_ctx *c = ctx_new(0, NULL);
	struct fake_ep fe;
	struct zcr_ep *ep = ep_new(c, &fe, 1);
	struct zcr_status st;
	struct zcr_req *r;

	fill(src, sizeof(src), 1);
	ZT_EXPECT_EQ(zcr_irecv(c, dst, sizeof(dst), 1, 7, &r), 0);
	ZT_EXPECT_EQ(zcr_test(r, NULL), 0);
	put(ep, 7, src, sizeof(src));
	pump(ep);
	ZT_EXPECT_EQ(zcr_test(r, &st), 1);
	ZT_EXPECT_EQ(st.source, 1);
	ZT_EXPECT_EQ(st.tag, 7);
	ZT_EXPECT_EQ(st.len, sizeof(src));
	ZT_EXPECT_EQ(memcmp(src, dst, sizeof(src)), 0);
	ZT_EXPECT_EQ(stats(c).posted, 1);
	ZT_EXPECT_EQ(stats(c).early, 0);
	zcr_ctx_destroy(c);
	ZT_EXPECT_EQ(fe.closes, 1);
	ZT_EXPECT_EQ(fe.frees, 1);
}

/*
 * Receives into one buffer at page offset 123 teach the predictor; the
 * next message arrives before its receive and must be staged at that
 * offset (a hit), then be delivered intact.
 */
ZT_TEST(arrival_then_post_staged_at_predicted_offset)
{
	long pg = sysconf(_SC_PAGESIZE);
	static char src[3 * 4096];
	struct zcr_ctx *c = ctx_new(0, "cycle");
	struct fake_ep fe;
	struct zcr_ep *ep = ep_new(c, &fe, 1);
	struct zcr_stats st;
	struct zcr_status s;
	struct zcr_req *r;
	char *mem, *buf;
	int i;

	mem = mmap(NULL, (size_t)pg * 8, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ZT_ASSERT(mem != MAP_FAILED);
	buf = mem + 123;
	for (i = 0; i < 4; i++) {
		fill(src, sizeof(src), (unsigned int)i);
		ZT_EXPECT_EQ(zcr_irecv(c, buf, sizeof(src), 1, 3, &r), 0);
		put(ep, 3, src, sizeof(src));
		pump(ep);
		ZT_EXPECT_EQ(zcr_test(r, NULL), 1);
	}
	fill(src, sizeof(src), 99);
	put(ep, 3, src, sizeof(src));
	pump(ep);
	st = stats(c);
	ZT_EXPECT_EQ(st.early, 1);
	/* Staged where the predicted receive's payload starts in its page. */
	pthread_mutex_lock(&c->lock);
	{
		struct zcr_msg *m = zcr_container_of(c->unexpected.next,
						     struct zcr_msg, link);

		ZT_ASSERT(!zcr_list_empty(&c->unexpected));
		ZT_EXPECT_EQ(m->off, 123);
		ZT_ASSERT(m->complete);
	}
	pthread_mutex_unlock(&c->lock);
	memset(buf, 0, sizeof(src));
	ZT_EXPECT_EQ(zcr_irecv(c, buf, sizeof(src), 1, 3, &r), 0);
	ZT_EXPECT_EQ(zcr_test(r, &s), 1);
	ZT_EXPECT_EQ(memcmp(buf, src, sizeof(src)), 0);
	ZT_EXPECT_EQ(stats(c).hits, st.hits + 1);
	zcr_ctx_destroy(c);
	munmap(mem, (size_t)pg * 8);
}

ZT_TEST(wildcards)
{
	static char a[100], b[200], d[4][512];
	struct zcr_ctx *c = ctx_new(0, NULL);
	struct fake_ep f1, f2;
	struct zcr_ep *e1 = ep_new(c, &f1, 1), *e2 = ep_new(c, &f2, 2);
	struct zcr_req *r[4];
	struct zcr_status st;

	fill(a, sizeof(a), 1);
	fill(b, sizeof(b), 2);
	/* Posted: any source with tag 9, then tag 4 from anyone. */
	ZT_EXPECT_EQ(zcr_irecv(c, d[0], 512, ZCRECV_ANY_SOURCE, 9, &r[0]), 0);
	ZT_EXPECT_EQ(zcr_irecv(c, d[1], 512, ZCRECV_ANY_SOURCE,
			       ZCRECV_ANY_TAG, &r[1]), 0);
	put(e2, 9, b, sizeof(b));
	pump(e2);
	put(e1, 4, a, sizeof(a));
	pump(e1);
	ZT_EXPECT_EQ(zcr_test(r[0], &st), 1);
	ZT_EXPECT_EQ(st.source, 2);
	ZT_EXPECT_EQ(st.len, sizeof(b));
	ZT_EXPECT_EQ(zcr_test(r[1], &st), 1);
	ZT_EXPECT_EQ(st.source, 1);
	ZT_EXPECT_EQ(st.tag, 4);
	/* Early: a named source with any tag takes only that source's. */
	put(e1, 11, a, sizeof(a));
	pump(e1);
	put(e2, 11, b, sizeof(b));
	pump(e2);
	ZT_EXPECT_EQ(zcr_irecv(c, d[2], 512, 2, ZCRECV_ANY_TAG, &r[2]), 0);
	ZT_EXPECT_EQ(zcr_test(r[2], &st), 1);
	ZT_EXPECT_EQ(st.source, 2);
	ZT_EXPECT_EQ(memcmp(d[2], b, sizeof(b)), 0);
	ZT_EXPECT_EQ(zcr_irecv(c, d[3], 512, ZCRECV_ANY_SOURCE,
			       ZCRECV_ANY_TAG, &r[3]), 0);
	ZT_EXPECT_EQ(zcr_test(r[3], &st), 1);
	ZT_EXPECT_EQ(st.source, 1);
	ZT_EXPECT_EQ(memcmp(d[3], a, sizeof(a)), 0);
	zcr_ctx_destroy(c);
}

/* Messages of one (source, tag) complete in sending order, early or not. */
ZT_TEST(non_overtaking)
{
	static char src[8][300], dst[300];
	struct zcr_ctx *c = ctx_new(0, NULL);
	struct fake_ep fe;
	struct zcr_ep *ep = ep_new(c, &fe, 1);
	struct zcr_req *r[2];
	struct zcr_status st;
	int i;

	for (i = 0; i < 8; i++) {
		fill(src[i], sizeof(src[i]), (unsigned int)i + 10);
		/* Interleave another tag that must not disturb the order. */
		put(ep, i % 2 ? 6 : 5, src[i], sizeof(src[i]));
	}
	pump_n(ep, 4 * sizeof(src[0]) + 17);	/* half in, one cut */
	for (i = 0; i < 8; i += 2) {
		ZT_EXPECT_EQ(zcr_irecv(c, dst, sizeof(dst), 1, 5, &r[0]), 0);
		pump(ep);
		ZT_EXPECT_EQ(zcr_test(r[0], &st), 1);
		ZT_EXPECT_EQ(memcmp(dst, src[i], sizeof(dst)), 0);
	}
	for (i = 1; i < 8; i += 2) {
		ZT_EXPECT_EQ(zcr_irecv(c, dst, sizeof(dst), 1,
				       ZCRECV_ANY_TAG, &r[1]), 0);
		ZT_EXPECT_EQ(zcr_test(r[1], &st), 1);
		ZT_EXPECT_EQ(st.tag, 6);
		ZT_EXPECT_EQ(memcmp(dst, src[i], sizeof(dst)), 0);
	}
	zcr_ctx_destroy(c);
}

ZT_TEST(truncation_emsgsize)
{
	static char src[300], dst[100 + 16];
	struct zcr_ctx *c = ctx_new(0, NULL);
	struct fake_ep fe;
	struct zcr_ep *ep = ep_new(c, &fe, 1);
	struct zcr_status st;
	struct zcr_req *r;
	int early;

	fill(src, sizeof(src), 5);
	for (early = 0; early < 2; early++) {
		memset(dst, 0x5a, sizeof(dst));
		if (early) {
			put(ep, 1, src, sizeof(src));
			pump(ep);
		}
		ZT_EXPECT_EQ(zcr_irecv(c, dst, 100, 1, 1, &r), 0);
		if (!early) {
			put(ep, 1, src, sizeof(src));
			pump(ep);
		}
		ZT_EXPECT_EQ(zcr_test(r, &st), -EMSGSIZE);
		ZT_EXPECT_EQ(st.error, -EMSGSIZE);
		ZT_EXPECT_EQ(st.len, sizeof(src));
		ZT_EXPECT_EQ(memcmp(dst, src, 100), 0);
		ZT_EXPECT_EQ((unsigned char)dst[100], 0x5a);
	}
	zcr_ctx_destroy(c);
}

/*
 * A source lost mid-message: its landing receive and the receives naming
 * it fail with -ECONNRESET; receives another source can satisfy stay.
 */
ZT_TEST(abort_of_a_source)
{
	static char src[4096], d[3][4096];
	struct zcr_ctx *c = ctx_new(0, NULL);
	struct fake_ep f1, f2;
	struct zcr_ep *e1 = ep_new(c, &f1, 1), *e2 = ep_new(c, &f2, 2);
	struct zcr_req *r[3];
	struct zcr_status st;

	fill(src, sizeof(src), 3);
	ZT_EXPECT_EQ(zcr_irecv(c, d[0], 4096, 1, 0, &r[0]), 0);
	ZT_EXPECT_EQ(zcr_irecv(c, d[1], 4096, 1, 1, &r[1]), 0);
	ZT_EXPECT_EQ(zcr_irecv(c, d[2], 4096, ZCRECV_ANY_SOURCE, 2, &r[2]),
		     0);
	put(e1, 0, src, sizeof(src));
	pump_n(e1, 1000);		/* cut mid-payload */
	ZT_EXPECT_EQ(zcr_test(r[0], NULL), 0);
	pthread_mutex_lock(&c->lock);
	__zcr_ep_fail_locked(e1, -ECONNRESET, "test: source lost");
	pthread_mutex_unlock(&c->lock);
	ZT_EXPECT_EQ(zcr_test(r[0], &st), -ECONNRESET);
	ZT_EXPECT_EQ(zcr_test(r[1], &st), -ECONNRESET);
	ZT_EXPECT_EQ(zcr_test(r[2], NULL), 0);
	/* A new receive naming the lost source fails at once. */
	ZT_EXPECT_EQ(zcr_irecv(c, d[0], 4096, 1, 0, &r[0]), -ECONNRESET);
	put(e2, 2, src, sizeof(src));
	pump(e2);
	ZT_EXPECT_EQ(zcr_test(r[2], &st), 1);
	ZT_EXPECT_EQ(st.source, 2);
	ZT_EXPECT_EQ(f1.closes, 1);
	ZT_EXPECT_EQ(stats(c).disconnects, 1);
	zcr_ctx_destroy(c);
}

/*
 * No staging room: the arrival stalls (the transport reads nothing more),
 * match keeps it; a delivery that frees room does not re-enter the
 * transport, the progress engine's drain lands it.
 */
ZT_TEST(stalled_arrival_drained_by_progress)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *src = calloc(3, (size_t)pg);
	char *dst = aligned_alloc((size_t)pg, (size_t)pg);
	struct zcr_ctx *c = ctx_new((uint64_t)pg, NULL);
	struct fake_ep fe;
	struct zcr_ep *ep = ep_new(c, &fe, 1);
	struct zcr_status st;
	struct zcr_req *r;
	int i;

	for (i = 0; i < 3; i++) {
		fill(src + i * pg, (size_t)pg, (unsigned int)i);
		put(ep, 8, src + i * pg, (uint64_t)pg);
	}
	pump(ep);
	ZT_EXPECT_EQ(fe.head, 1);
	ZT_EXPECT_EQ(ep->rx.state, ZCR_RX_STALLED);
	ZT_EXPECT_EQ(stats(c).stalls, 1);
	/* Delivered from staging; the stalled one waits for the drain. */
	ZT_EXPECT_EQ(zcr_irecv(c, dst, (size_t)pg, 1, 8, &r), 0);
	ZT_EXPECT_EQ(ep->rx.state, ZCR_RX_STALLED);
	ZT_ASSERT(c->drain_pending);
	ZT_EXPECT_EQ(zcr_progress(c, 0) >= 1, 1);
	ZT_EXPECT_EQ(ep->rx.state, ZCR_RX_LANDING);
	ZT_EXPECT_EQ(zcr_test(r, &st), 1);
	ZT_EXPECT_EQ(memcmp(dst, src, (size_t)pg), 0);
	pump(ep);
	ZT_EXPECT_EQ(fe.head, 2);
	ZT_EXPECT_EQ(stats(c).early, 2);
	ZT_EXPECT_EQ(ep->rx.state, ZCR_RX_STALLED);
	/* A posted receive takes a stalled arrival directly. */
	for (i = 1; i < 3; i++) {
		ZT_EXPECT_EQ(zcr_irecv(c, dst, (size_t)pg, 1, 8, &r), 0);
		pump(ep);
		ZT_EXPECT_EQ(zcr_test(r, &st), 1);
		ZT_EXPECT_EQ(memcmp(dst, src + i * pg, (size_t)pg), 0);
	}
	ZT_EXPECT_EQ(fe.head, 3);
	zcr_ctx_destroy(c);
	free(src);
	free(dst);
}

/*
 * The data path of an open endpoint moves to another transport between
 * messages; order holds across the switch. Mid-message it is refused.
 */
ZT_TEST(handoff_between_transports)
{
	static char src[4][256], dst[256];
	struct zcr_ctx *c = ctx_new(0, NULL);
	struct fake_ep fa, fb;
	struct zcr_ep *ep = ep_new(c, &fa, 1);
	struct zcr_status st;
	struct zcr_req *r;
	int i;

	for (i = 0; i < 4; i++) {
		fill(src[i], sizeof(src[i]), (unsigned int)i + 40);
		put(ep, 2, src[i], sizeof(src[i]));
	}
	pump_n(ep, 256 + 10);		/* second message cut */
	pthread_mutex_lock(&c->lock);
	ZT_EXPECT_EQ(__zcr_ep_handoff_locked(ep, &fake_b, &fb), -EBUSY);
	ZT_EXPECT_EQ(__zcr_ep_handoff_locked(ep, &fake_a, &fb), -EOPNOTSUPP);
	pthread_mutex_unlock(&c->lock);
	pump_n(ep, 256 - 10);
	pthread_mutex_lock(&c->lock);
	ZT_EXPECT_EQ(__zcr_ep_handoff_locked(ep, &fake_b, &fb), 0);
	pthread_mutex_unlock(&c->lock);
	ZT_ASSERT(ep->tp == &fake_b);
	ZT_EXPECT_EQ(fb.adopted, 1);
	ZT_EXPECT_EQ(fa.frees, 1);
	pump(ep);
	for (i = 0; i < 4; i++) {
		ZT_EXPECT_EQ(zcr_irecv(c, dst, sizeof(dst), 1, 2, &r), 0);
		ZT_EXPECT_EQ(zcr_test(r, &st), 1);
		ZT_EXPECT_EQ(memcmp(dst, src[i], sizeof(dst)), 0);
	}
	zcr_ctx_destroy(c);
	ZT_EXPECT_EQ(fb.frees, 1);
}

/* Addresses choose the transport by scheme; a bare HOST:PORT is TCP. */
ZT_TEST(address_schemes)
{
	struct zcr_ctx *c0 = ctx_new(0, NULL), *c1;
	struct zcr_ctx_attr a = { .rank = 1, .quiet = 1,
				  .backend = ZCRECV_BACKEND_COPY };
	struct zcr_ep *e10, *e01;
	char addr[64];
	int port;

	ZT_EXPECT_EQ(zcr_ctx_create(&a, &c1), 0);
	ZT_EXPECT_EQ(zcr_ctx_listen(c0, "udp://127.0.0.1:0"),
		     -EPROTONOSUPPORT);
	ZT_EXPECT_EQ(zcr_ep_connect(c1, "shm://127.0.0.1:1", &e10),
		     -EPROTONOSUPPORT);
	port = zcr_ctx_listen(c0, "tcp://127.0.0.1:0");
	ZT_ASSERT(port > 0);
	ZT_EXPECT_EQ(zcr_ctx_listen(c0, "127.0.0.1:0"), -EBUSY);
	snprintf(addr, sizeof(addr), "tcp://127.0.0.1:%d", port);
	ZT_EXPECT_EQ(zcr_ep_connect(c1, addr, &e10), 0);
	ZT_EXPECT_EQ(zcr_ep_accept(c0, 10000, &e01), 0);
	ZT_EXPECT_EQ(zcr_ep_rank(e01), 1);
	ZT_ASSERT(e01->tp == &__zcr_transport_tcp);
	zcr_ctx_destroy(c1);
	zcr_ctx_destroy(c0);
}

/* ---- a receive posted while its message lands (uffd-move) ---------------- */

/* A context that remaps with UFFDIO_MOVE and predicts by cycles, or a skip. */
static struct zcr_ctx *uffd_ctx_new(void)
{
	struct zcr_ctx_attr a = { .rank = 0, .quiet = 1,
				  .backend = ZCRECV_BACKEND_UFFD,
				  .policy = ZCRECV_POLICY_REMAP,
				  .predictor = "cycle" };
	struct zcr_ctx *c;
	int ret = zcr_ctx_create(&a, &c);

	if (ret == -EOPNOTSUPP || ret == -EPERM || ret == -ENOSYS)
		ZT_SKIP("no UFFDIO_MOVE here");
	ZT_EXPECT_EQ(ret, 0);
	return c;
}

/* n bytes of anonymous memory at a 2 MiB boundary, huge pages advised. */
static char *huge_buf(size_t n, void **map, size_t *maplen)
{
	size_t h = 2 << 20;
	char *p;

	*maplen = n + h;
	*map = mmap(NULL, *maplen, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ZT_ASSERT(*map != MAP_FAILED);
	p = (char *)(((uintptr_t)*map + h - 1) & ~(uintptr_t)(h - 1));
	madvise(p, n, MADV_HUGEPAGE);
	return p;
}

/*
 * Teach the predictor buf (receives posted first), land one message early
 * and remap it whole (buf is registered with userfaultfd from then on, and
 * its huge page split if n needs that: the first move into a range may
 * meet EBUSY a few times), then let the next message arrive early and land
 * half its payload; returns the staged message, still landing.
 */
static struct zcr_msg *half_landed(struct zcr_ctx *c, struct zcr_ep *ep,
				   char *buf, char *src, size_t n)
{
	struct zcr_req *r;
	struct zcr_msg *m;
	unsigned int i;

	for (i = 0; i < 4; i++) {
		fill(src, n, i);
		ZT_EXPECT_EQ(zcr_irecv(c, buf, n, 1, 3, &r), 0);
		put(ep, 3, src, n);
		pump(ep);
		ZT_EXPECT_EQ(zcr_test(r, NULL), 1);
	}
	fill(src, n, 76);
	put(ep, 3, src, n);
	pump(ep);
	ZT_EXPECT_EQ(zcr_irecv(c, buf, n, 1, 3, &r), 0);
	ZT_EXPECT_EQ(zcr_test(r, NULL), 1);
	ZT_EXPECT_EQ(memcmp(buf, src, n), 0);
	fill(src, n, 77);
	put(ep, 3, src, n);
	pump_n(ep, n / 2);
	pthread_mutex_lock(&c->lock);
	ZT_ASSERT(!zcr_list_empty(&c->unexpected));
	m = zcr_container_of(c->unexpected.next, struct zcr_msg, link);
	ZT_ASSERT(!m->complete);
	ZT_EXPECT_EQ(m->off, 0);	/* buf starts a 2 MiB unit */
	pthread_mutex_unlock(&c->lock);
	return m;
}

/*
 * A receive that takes a message still landing has its remap prepared at
 * once: the user's pages leave while the rest of the payload comes (the
 * slot notes it), and the landing then only moves the staged pages in.
 * Every byte checked, at 4 KiB units (256 KiB) and at one 2 MiB unit, and
 * through zcr_improbe() + zcr_imrecv() (MPI_Mprobe, MPI_Mrecv): prepared
 * when zcr_imrecv() names the buffer.
 */
ZT_TEST(receive_posted_while_landing_prepares_the_remap)
{
	static const size_t sizes[] = { 256 << 10, 2 << 20, 2 << 20 };
	unsigned int k;

	for (k = 0; k < 3; k++) {
		size_t n = sizes[k], maplen;
		struct zcr_ctx *c = uffd_ctx_new();
		struct fake_ep fe;
		struct zcr_ep *ep = ep_new(c, &fe, 1);
		char *src = malloc(n), *buf;
		struct zcr_message *msg;
		struct zcr_stats st0;
		struct zcr_status s;
		struct zcr_slot *slot;
		struct zcr_msg *m;
		struct zcr_req *r;
		void *map;

		ZT_ASSERT(src);
		buf = huge_buf(n, &map, &maplen);
		m = half_landed(c, ep, buf, src, n);
		st0 = stats(c);
		memset(buf, 0x5a, n);
		ZT_EXPECT_EQ(zt_resident(buf, n, c->page), n / c->page);
		if (k == 2) {
			ZT_EXPECT_EQ(zcr_improbe(c, 0, 1, 3, &msg, &s), 1);
			pthread_mutex_lock(&c->lock);
			ZT_ASSERT(m->slot->prep == NULL);  /* no buffer yet */
			pthread_mutex_unlock(&c->lock);
			ZT_EXPECT_EQ(zcr_imrecv(msg, buf, n, &r), 0);
		} else {
			ZT_EXPECT_EQ(zcr_irecv(c, buf, n, 1, 3, &r), 0);
		}
		ZT_EXPECT_EQ(zcr_test(r, NULL), 0);
		pthread_mutex_lock(&c->lock);
		slot = m->slot;
		ZT_ASSERT(m->req == r);
		ZT_ASSERT(slot->prep != NULL);
		ZT_ASSERT(slot->prep_dst == buf);
		ZT_EXPECT_EQ(slot->prep_len, n);
		ZT_EXPECT_EQ(slot->kind, ZCR_LAND_REMAP + 1);
		pthread_mutex_unlock(&c->lock);
		/* The user's pages left at the post, not at the landing. */
		ZT_EXPECT_EQ(zt_resident(buf, n, c->page), 0);
		pump(ep);
		ZT_EXPECT_EQ(zcr_test(r, &s), 1);
		ZT_EXPECT_EQ(s.len, n);
		ZT_EXPECT_EQ(memcmp(buf, src, n), 0);
		ZT_EXPECT_EQ(stats(c).hits, st0.hits + 1);
		ZT_EXPECT_EQ(stats(c).pages_remapped - st0.pages_remapped,
			     n / c->page);
		ZT_EXPECT_EQ(stats(c).bytes_copied, st0.bytes_copied);
		/* Nothing of the decision stays with the slot (reused). */
		pthread_mutex_lock(&c->lock);
		ZT_ASSERT(slot->prep == NULL);
		ZT_EXPECT_EQ(slot->kind, 0);
		ZT_EXPECT_EQ(slot->timed, 0);
		ZT_ASSERT(slot->prep_ns == 0);
		pthread_mutex_unlock(&c->lock);
		zcr_ctx_destroy(c);
		munmap(map, maplen);
		free(src);
	}
}

/*
 * A prepared receive whose message is cut short (its source lost), or
 * whose context goes first: the user's pages come back, and the buffer
 * holds what it held before the receive. A receive abandoned that way
 * never completes, so its buffer may be the application's again by then
 * (here: written after the post): the context's end must not write it.
 */
ZT_TEST(prepared_receive_not_delivered_keeps_the_buffer)
{
	size_t n = 2 << 20, maplen;
	unsigned int k;

	for (k = 0; k < 3; k++) {
		struct zcr_ctx *c = uffd_ctx_new();
		struct fake_ep fe;
		struct zcr_ep *ep = ep_new(c, &fe, 1);
		char *src = malloc(n), *keep = malloc(n), *buf;
		struct zcr_msg *m;
		struct zcr_req *r;
		void *map;

		ZT_ASSERT(src && keep);
		buf = huge_buf(n, &map, &maplen);
		m = half_landed(c, ep, buf, src, n);
		fill(keep, n, 5);
		memcpy(buf, keep, n);
		ZT_EXPECT_EQ(zcr_irecv(c, buf, n, 1, 3, &r), 0);
		pthread_mutex_lock(&c->lock);
		ZT_ASSERT(m->slot->prep != NULL);
		if (k == 0)
			__zcr_ep_fail_locked(ep, -ECONNRESET,
					     "test: source lost");
		pthread_mutex_unlock(&c->lock);
		if (k == 0) {
			ZT_EXPECT_EQ(zcr_test(r, NULL), -ECONNRESET);
			ZT_EXPECT_EQ(memcmp(buf, keep, n), 0);
		}
		if (k == 2) {
			fill(keep, n, 6);
			memcpy(buf, keep, n);
		}
		zcr_ctx_destroy(c);
		ZT_EXPECT_EQ(memcmp(buf, keep, n), 0);
		munmap(map, maplen);
		free(src);
		free(keep);
	}
}
