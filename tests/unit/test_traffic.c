// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_traffic.c - seeded random traffic checked against MPI's matching
 * rules. Ranks 1 and 2 send to rank 0 (over shm, over TCP, one of each,
 * with a staging pool too small for the big messages, with a progress
 * thread); rank 0 posts receives of a specific or wildcard source and tag,
 * some shorter than the message they get, at a few offsets of a few
 * zcr_mem_alloc buffers reused in turn, before, between and after the
 * arrivals; it cancels some, probes (iprobe, then a receive with the same
 * arguments; improbe + imrecv) and tests in a random order. Sizes run from
 * 8 bytes to 3 MiB: one cell, several cells, pulled, remapped.
 *
 * Every message carries its number in its first eight bytes and a pattern
 * after them. Each completed receive must hold a message its arguments
 * accept, exactly once, with its source, tag and length in the status,
 * -EMSGSIZE exactly when it was longer than the receive, every byte that
 * fits, and no byte changed outside the receive's range. Order, as MPI
 * has it: of two receives that both accept both messages they got from
 * one sender, the one posted first got the one sent first (checked over
 * every pair at the end). A cancel that succeeds completes the receive
 * with -ECANCELED and no message; one that fails leaves it to complete
 * as usual. At the end every message was received, every send completed,
 * and no shared segment is left.
 *
 * ZT_TRAFFIC_SEED=N, ZT_TRAFFIC_STEPS=N (default 700) replay a run.
 * Run: build/tests/unit/test_traffic [name]
 */
#include <dirent.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "zcr_pair.h"

#define MSG_MAX		600	/* messages a run, at most */
#define RCV_MAX		1400	/* receives a run, at most */
#define OPEN_MAX	24	/* sent and not yet received, at most */
#define NBUF		8	/* receive buffers, so receives pending */
#define BIG		((3u << 20) + 123)	/* largest message */
#define OFF_MAX		8192
#define GUARD		4096
#define BUF_CAP		(OFF_MAX + BIG + GUARD)
#define CANARY		0xa5
#define HDR_MAGIC	0x7a63727466666963ULL	/* first word: ^ number */

struct msg {
	int src, tag;
	size_t len;
	unsigned char *sb;
	struct zcr_req *s;	/* the send, until it completed */
	int got_by;		/* the receive that got it, or -1 */
};

struct rcv {
	int src, tag;		/* the receive's arguments */
	size_t size, off;
	int buf;		/* its buffer, until it completed */
	struct zcr_req *r;
	int got;		/* the message it got, or -1 */
	bool cancelled;		/* zcr_cancel() said 0 */
	bool probed;		/* posted after an iprobe found st */
	struct zcr_status pst;
};

struct traffic {
	struct pair p;
	uint64_t x;		/* the script's random state */
	struct msg m[MSG_MAX];
	struct rcv r[RCV_MAX];
	int nm, nr, open;
	unsigned char *buf[NBUF];
	int buf_owner[NBUF];	/* receive using it, or -1 */
	int pending;		/* receives not completed */
	/* what the run reached */
	int truncated, cancelled, cancel_busy, probes, mprobes, early;
};

static uint64_t rnd(struct traffic *t)
{
	uint64_t x = t->x;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return t->x = x;
}

static unsigned int pick(struct traffic *t, unsigned int n)
{
	return (unsigned int)(rnd(t) % n);
}

static unsigned char pat(size_t i, int k)
{
	return (unsigned char)((i * 167 + (size_t)k * 29 + (i >> 12)) ^
			       (unsigned int)k);
}

/* The first byte of [p, p + n) that is not CANARY, or n. */
static size_t canary_end(const unsigned char *p, size_t n)
{
	static unsigned char c[4096];
	size_t i = 0, l;

	if (!c[0])
		memset(c, CANARY, sizeof(c));
	for (; i < n; i += l) {
		l = n - i < sizeof(c) ? n - i : sizeof(c);
		if (memcmp(p + i, c, l))
			break;
	}
	for (; i < n && p[i] == CANARY; i++)
		;
	return i;
}

/* Message sizes: one cell, several cells, pulled, remapped. */
static size_t msg_len(struct traffic *t)
{
	switch (pick(t, 10)) {
	case 0: case 1: case 2:
		return 8 + pick(t, 200);
	case 3: case 4:
		return 200 + pick(t, 16 << 10);
	case 5:
		return (16 << 10) + pick(t, 24 << 10);
	case 6: case 7:
		return (40 << 10) + pick(t, 600 << 10);
	default:
		return pick(t, 4) ? (1u << 20) * (1 + pick(t, 3)) +
				    pick(t, 2) * 4096 : BIG;
	}
}

static void do_send(struct traffic *t)
{
	int k = t->nm++;
	struct msg *m = &t->m[k];
	uint64_t h = HDR_MAGIC ^ (uint64_t)k;
	size_t i;

	m->src = 1 + (int)pick(t, 2);
	m->tag = (int)pick(t, 4);
	m->len = msg_len(t);
	m->got_by = -1;
	m->sb = malloc(m->len);
	ZT_ASSERT(m->sb);
	for (i = 8; i < m->len; i++)
		m->sb[i] = pat(i, k);
	memcpy(m->sb, &h, 8);
	if (pick(t, 8))
		ZT_EXPECT_EQ(zcr_isend(t->p.to0[m->src], m->sb, m->len,
				       m->tag, &m->s), 0);
	else		/* synchronous: completes once matched, or as isend */
		ZT_EXPECT_EQ(zcr_issend_comm(t->p.to0[m->src], 0, m->sb,
					     m->len, m->tag, &m->s), 0);
	t->open++;
}

static int free_buf(struct traffic *t)
{
	int b;

	for (b = 0; b < NBUF; b++)	/* the lowest: a pattern to predict */
		if (t->buf_owner[b] < 0)
			return b;
	return -1;
}

/* A new receive's record: buffer b, at an offset, of some size. */
static struct rcv *new_rcv(struct traffic *t, int b, int src, int tag,
			   bool any_size)
{
	static const size_t offs[] = { 0, 0, 0, 100, 4096, 4096 + 100 };
	struct rcv *r;

	ZT_ASSERT(t->nr < RCV_MAX);
	r = &t->r[t->nr];
	memset(r, 0, sizeof(*r));
	r->src = src;
	r->tag = tag;
	r->buf = b;
	r->got = -1;
	r->off = offs[pick(t, 6)];
	r->size = any_size || pick(t, 10) < 7 ? BIG : 8 + pick(t, BIG - 8);
	/* Everything the receive must not touch, and what it may. */
	memset(t->buf[b], CANARY, BUF_CAP);
	t->buf_owner[b] = t->nr;
	return r;
}

static void posted(struct traffic *t, struct rcv *r)
{
	(void)r;
	t->nr++;
	t->pending++;
}

static void do_recv(struct traffic *t, int src, int tag, bool any_size)
{
	int b = free_buf(t);
	struct rcv *r;

	if (b < 0)
		return;
	r = new_rcv(t, b, src, tag, any_size);
	ZT_EXPECT_EQ(zcr_irecv(t->p.c[0], t->buf[b] + r->off, r->size, src,
			       tag, &r->r), 0);
	posted(t, r);
}

static int rnd_src(struct traffic *t)
{
	return pick(t, 10) < 3 ? ZCRECV_ANY_SOURCE : 1 + (int)pick(t, 2);
}

static int rnd_tag(struct traffic *t)
{
	return pick(t, 10) < 3 ? ZCRECV_ANY_TAG : (int)pick(t, 4);
}

static bool accepts(const struct rcv *r, const struct msg *m)
{
	return (r->src == ZCRECV_ANY_SOURCE || r->src == m->src) &&
	       (r->tag == ZCRECV_ANY_TAG || r->tag == m->tag);
}

/* Receive j completed with st: check it against everything it may be. */
static void check_rcv(struct traffic *t, int j, const struct zcr_status *st,
		      int ret)
{
	struct rcv *r = &t->r[j];
	const unsigned char *b = t->buf[r->buf], *d = b + r->off;
	size_t i, n;
	uint64_t h;
	struct msg *m;
	int k;

	t->pending--;
	if (r->cancelled) {
		ZT_EXPECT_EQ(ret, -ECANCELED);
		ZT_EXPECT_EQ(st->error, -ECANCELED);
		ZT_EXPECT_EQ(st->source, -1);
		ZT_EXPECT_EQ(st->tag, -1);
		i = canary_end(b, BUF_CAP);
		ZT_ASSERT_MSG(i == BUF_CAP, "cancelled receive %d: byte %zu "
			      "of its buffer changed", j, i);
		t->buf_owner[r->buf] = -1;
		return;
	}
	ZT_ASSERT_MSG(ret == 1 || ret == -EMSGSIZE,
		      "receive %d completed with %d", j, ret);
	ZT_ASSERT(r->size >= 8);
	memcpy(&h, d, 8);
	k = (int)(h ^ HDR_MAGIC);
	ZT_ASSERT_MSG(k >= 0 && k < t->nm, "receive %d: no message's header "
		      "(%#llx)", j, (unsigned long long)h);
	m = &t->m[k];
	ZT_ASSERT_MSG(m->got_by < 0, "message %d received twice (%d, %d)",
		      k, m->got_by, j);
	ZT_ASSERT_MSG(accepts(r, m), "receive %d (src %d tag %d) got message "
		      "%d (src %d tag %d)", j, r->src, r->tag, k, m->src,
		      m->tag);
	ZT_EXPECT_EQ(st->source, m->src);
	ZT_EXPECT_EQ(st->tag, m->tag);
	ZT_EXPECT_EQ(st->len, m->len);
	ZT_EXPECT_EQ(ret, m->len > r->size ? -EMSGSIZE : 1);
	ZT_EXPECT_EQ(st->error, m->len > r->size ? -EMSGSIZE : 0);
	if (r->probed) {	/* the message the probe saw */
		ZT_EXPECT_EQ(r->pst.source, m->src);
		ZT_EXPECT_EQ(r->pst.tag, m->tag);
		ZT_EXPECT_EQ(r->pst.len, m->len);
	}
	n = m->len < r->size ? m->len : r->size;
	for (i = 8; i < n; i++)
		ZT_ASSERT_MSG(d[i] == pat(i, k), "receive %d, message %d (%zu "
			      "bytes into %zu at offset %zu): byte %zu is %#x, "
			      "not %#x", j, k, m->len, r->size, r->off, i,
			      d[i], pat(i, k));
	i = canary_end(b, r->off);
	ZT_ASSERT_MSG(i == r->off, "receive %d: byte %zu before its range "
		      "changed", j, i);
	i = r->off + n + canary_end(d + n, BUF_CAP - r->off - n);
	ZT_ASSERT_MSG(i == BUF_CAP, "receive %d: byte %zu after its message "
		      "(%zu bytes at %zu) changed", j, i, n, r->off);
	t->truncated += m->len > r->size;
	m->got_by = j;
	r->got = k;
	t->open--;
	t->buf_owner[r->buf] = -1;
}

/* Complete what has completed: receives, then sends. */
static void test_all(struct traffic *t)
{
	struct zcr_status st;
	int b, k, ret;

	for (b = 0; b < NBUF; b++) {
		int j = t->buf_owner[b];

		if (j < 0)
			continue;
		memset(&st, 0x5a, sizeof(st));
		ret = zcr_test(t->r[j].r, &st);
		if (ret)
			check_rcv(t, j, &st, ret);
	}
	for (k = 0; k < t->nm; k++) {
		if (!t->m[k].s)
			continue;
		ret = zcr_test(t->m[k].s, &st);
		if (!ret)
			continue;
		ZT_ASSERT_MSG(ret == 1, "send %d: %d", k, ret);
		ZT_EXPECT_EQ(st.len, t->m[k].len);
		t->m[k].s = NULL;
	}
}

static void do_cancel(struct traffic *t)
{
	int b = pick(t, NBUF), j = t->buf_owner[b], ret;

	if (j < 0 || t->r[j].cancelled)
		return;
	ret = zcr_cancel(t->r[j].r);
	ZT_ASSERT_MSG(ret == 0 || ret == -EBUSY, "cancel: %d", ret);
	t->r[j].cancelled = !ret;
	t->cancelled += !ret;
	t->cancel_busy += !!ret;
}

static void do_probe(struct traffic *t)
{
	int src = rnd_src(t), tag = rnd_tag(t), b = free_buf(t);
	struct zcr_message *msg;
	struct zcr_status st;
	struct rcv *r;

	if (b < 0)
		return;
	if (pick(t, 2)) {
		if (zcr_iprobe(t->p.c[0], 0, src, tag, &st) != 1)
			return;
		/* A receive posted now with the same arguments takes it. */
		r = new_rcv(t, b, src, tag, false);
		r->probed = true;
		r->pst = st;
		ZT_EXPECT_EQ(zcr_irecv(t->p.c[0], t->buf[b] + r->off, r->size,
				       src, tag, &r->r), 0);
		t->probes++;
	} else {
		if (zcr_improbe(t->p.c[0], 0, src, tag, &msg, &st) != 1)
			return;
		r = new_rcv(t, b, src, tag, false);
		r->probed = true;
		r->pst = st;
		ZT_EXPECT_EQ(zcr_imrecv(msg, t->buf[b] + r->off, r->size,
					&r->r), 0);
		t->mprobes++;
	}
	posted(t, r);
}

static void pump(struct traffic *t, unsigned int n)
{
	while (n--)
		pair_pump(&t->p);
}

/* Of two receives that accept both messages they got from one sender,
 * the one posted first got the one sent first. */
static void check_order(struct traffic *t)
{
	int a, b;

	for (a = 0; a < t->nr; a++) {
		const struct rcv *ra = &t->r[a];

		if (ra->got < 0)
			continue;
		for (b = a + 1; b < t->nr; b++) {
			const struct rcv *rb = &t->r[b];
			const struct msg *ma = &t->m[ra->got], *mb;

			if (rb->got < 0)
				continue;
			mb = &t->m[rb->got];
			if (ma->src != mb->src || !accepts(ra, mb) ||
			    !accepts(rb, ma))
				continue;
			ZT_ASSERT_MSG(ra->got < rb->got, "receive %d (posted "
				      "before %d) got message %d, sent after "
				      "message %d that %d got (src %d)", a, b,
				      ra->got, rb->got, b, ma->src);
		}
	}
}

/*
 * Every buffer is taken by a receive that nothing arrived for, while the
 * messages that would match it wait behind ones no receive takes, with
 * no staging room for those (an MPI program relying on buffering): cancel
 * one such receive, so that a wildcard one takes the messages in order.
 * Returns 0 (the idle count anew).
 */
static int unblock(struct traffic *t)
{
	int b;

	for (b = 0; b < NBUF; b++) {
		struct rcv *r = &t->r[t->buf_owner[b]];

		if (r->cancelled || (r->src == ZCRECV_ANY_SOURCE &&
				     r->tag == ZCRECV_ANY_TAG))
			continue;
		r->cancelled = !zcr_cancel(r->r);
		t->cancelled += r->cancelled;
		break;
	}
	return 0;
}

static void drain(struct traffic *t)
{
	double t0 = pair_now();
	int k, b, idle = 0, done;

	for (;;) {
		int left = 0;

		for (k = 0; k < t->nm; k++)
			left += t->m[k].got_by < 0 || t->m[k].s;
		if (!left)
			break;
		if (pair_now() - t0 > 20) {
			for (k = 0; k < t->nm; k++)
				if (t->m[k].got_by < 0 || t->m[k].s)
					fprintf(stderr, "# message %d (src %d "
						"tag %d, %zu bytes): %s\n", k,
						t->m[k].src, t->m[k].tag,
						t->m[k].len,
						t->m[k].got_by < 0 ?
						"not received" :
						"send not complete");
			for (b = 0; b < NBUF; b++)
				if (t->buf_owner[b] >= 0)
					fprintf(stderr, "# receive %d posted: "
						"src %d tag %d size %zu%s\n",
						t->buf_owner[b],
						t->r[t->buf_owner[b]].src,
						t->r[t->buf_owner[b]].tag,
						t->r[t->buf_owner[b]].size,
						t->r[t->buf_owner[b]].cancelled
						? " (cancelled)" : "");
			ZT_ASSERT_MSG(0, "%d messages not through after 20 s",
				      left);
		}
		if (t->open > 0 && free_buf(t) >= 0)
			do_recv(t, ZCRECV_ANY_SOURCE, ZCRECV_ANY_TAG, true);
		else if (t->open > 0 && ++idle > 200)
			idle = unblock(t);
		pump(t, 1);
		done = t->nr - t->pending;
		test_all(t);
		if (t->nr - t->pending != done)
			idle = 0;
	}
	/* Nothing left to match: every receive still posted cancels. */
	for (b = 0; b < NBUF; b++) {
		int j = t->buf_owner[b];

		if (j < 0)
			continue;
		ZT_EXPECT_EQ(zcr_cancel(t->r[j].r), 0);
		t->r[j].cancelled = true;
	}
	test_all(t);
	ZT_EXPECT_EQ(t->pending, 0);
}

enum variant { V_SHM, V_TCP, V_MIXED, V_SMALL_STAGING, V_THREAD };

static void connect_ranks(struct traffic *t, enum variant v)
{
	struct pair *p = &t->p;
	int i;

	memset(p, 0, sizeof(*p));
	p->n = 3;
	for (i = 0; i < 3; i++) {
		struct zcr_ctx_attr a = { .quiet = 1, .rank = i };

		if (v == V_SMALL_STAGING && i == 0)
			a.staging_bytes = 2 << 20;
		if (v == V_THREAD && i == 0)
			a.progress_thread = 1;
		ZT_EXPECT_EQ(zcr_ctx_create_sized(&a, sizeof(a), &p->c[i]),
			     0);
	}
	p->port = zcr_ctx_listen(p->c[0], "127.0.0.1:0");
	ZT_ASSERT(p->port > 0);
	snprintf(p->addr, sizeof(p->addr), "127.0.0.1:%d", p->port);
	for (i = 1; i < 3; i++) {
		struct zcr_ep *ep = NULL;
		bool shm = v != V_TCP && !(v == V_MIXED && i == 2);

		if (shm)
			setenv("ZCRECV_SHM", "1", 1);
		else
			unsetenv("ZCRECV_SHM");
		ZT_EXPECT_EQ(zcr_ep_connect(p->c[i], p->addr, &p->to0[i]), 0);
		PAIR_PUMP_UNTIL(p, zcr_ep_accept(p->c[0], 0, &ep) == 0);
		ZT_EXPECT_EQ(zcr_ep_rank(ep), i);
		p->from[i] = ep;
		PAIR_PUMP_UNTIL(p, zcr_ep_rank(p->to0[i]) == 0);
		if (shm) {
			PAIR_PUMP_UNTIL(p, !strcmp(pair_tp(p->from[i]), "shm"));
			PAIR_PUMP_UNTIL(p, !strcmp(pair_tp(p->to0[i]), "shm"));
		} else {
			ZT_ASSERT_MSG(!*pair_tp(p->from[i]), "%s",
				      pair_tp(p->from[i]));
		}
	}
	unsetenv("ZCRECV_SHM");
}

static void run(enum variant v, uint64_t seed0)
{
	const char *s = getenv("ZT_TRAFFIC_SEED"), *n = getenv("ZT_TRAFFIC_STEPS");
	uint64_t seed = s ? strtoull(s, NULL, 0) : seed0;
	int steps = n ? atoi(n) : 700, step, b, k;
	struct traffic *t = calloc(1, sizeof(*t));
	struct zcr_stats s0;

	ZT_ASSERT(t);
	t->x = seed * 0x9e3779b97f4a7c15ULL + 1;
	connect_ranks(t, v);
	/* Every hit with a full page remaps (auto: as measured). */
	if (v != V_THREAD)
		ZT_EXPECT_EQ(zcr_ctx_set_policy(t->p.c[0],
						ZCRECV_POLICY_REMAP), 0);
	s0 = pair_stats(t->p.c[0]);
	for (b = 0; b < NBUF; b++) {
		void *q;

		/* Blocks of 2 MiB units, and 4 KiB pages of an mmap. */
		if (b % 2) {
			q = mmap(NULL, BUF_CAP, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			ZT_ASSERT(q != MAP_FAILED);
			madvise(q, BUF_CAP, MADV_NOHUGEPAGE);
		} else {
			ZT_EXPECT_EQ(zcr_mem_alloc(t->p.c[0], BUF_CAP, &q), 0);
		}
		t->buf[b] = q;
		t->buf_owner[b] = -1;
	}
	for (step = 0; step < steps; step++) {
		unsigned int op = pick(t, 100);

		if (op < 35) {
			if (t->open < OPEN_MAX && t->nm < MSG_MAX)
				do_send(t);
		} else if (op < 65) {
			do_recv(t, rnd_src(t), rnd_tag(t), false);
		} else if (op < 82) {
			pump(t, 1 + pick(t, 4));
		} else if (op < 93) {
			test_all(t);
		} else if (op < 96) {
			do_cancel(t);
		} else {
			do_probe(t);
		}
	}
	drain(t);
	check_order(t);
	t->early = (int)(pair_stats(t->p.c[0]).early - s0.early);
	printf("# seed %llu: %d messages, %d receives (%d truncated, %d "
	       "cancelled, %d too late to cancel), %d probes, %d matched "
	       "probes, %d early; rank 0: %llu hits, %llu pages remapped, "
	       "%llu stalls\n", (unsigned long long)seed, t->nm, t->nr,
	       t->truncated, t->cancelled, t->cancel_busy, t->probes,
	       t->mprobes, t->early,
	       (unsigned long long)(pair_stats(t->p.c[0]).hits - s0.hits),
	       (unsigned long long)(pair_stats(t->p.c[0]).pages_remapped -
				    s0.pages_remapped),
	       (unsigned long long)(pair_stats(t->p.c[0]).stalls -
				    s0.stalls));
	/* The script reached what it is for (with the default steps). */
	if (!n) {
		ZT_ASSERT(t->nm > 100);
		ZT_ASSERT(t->truncated > 0 && t->cancelled > 0);
		ZT_ASSERT(t->probes + t->mprobes > 0 && t->early > 0);
	}
	for (b = 0; b < NBUF; b++)
		if (b % 2)
			munmap(t->buf[b], BUF_CAP);
		else
			zcr_mem_free(t->p.c[0], t->buf[b]);
	for (k = 0; k < t->nm; k++)
		free(t->m[k].sb);
	pair_close(&t->p);
	ZT_EXPECT_EQ(pair_shm_maps(), 0);
	free(t);
}

ZT_TEST(shm_three_ranks)
{
	run(V_SHM, 1);
}

ZT_TEST(tcp_three_ranks)
{
	run(V_TCP, 2);
}

ZT_TEST(shm_and_tcp_senders)
{
	run(V_MIXED, 3);
}

ZT_TEST(shm_staging_smaller_than_a_message)
{
	run(V_SMALL_STAGING, 4);
}

ZT_TEST(shm_progress_thread)
{
	run(V_THREAD, 5);
}
