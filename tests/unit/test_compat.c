// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_compat.c - a rank and a zcrecv 0.1 peer in one job. The 0.1 peer
 * is played by a raw socket that behaves as 0.1 did: it sends its HELLO
 * (the rank, every other field 0) as soon as the connection exists, on
 * both sides, and closes a connection whose HELLO has a flag, a length or
 * a nonce. Each test checks that the connection opens (or is refused
 * with a clear reason, with a job secret) and that messages cross it both
 * ways with every byte intact.
 * Run: build/tests/unit/test_compat [name]
 */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>

#include "zcr_pair.h"

struct hdr {
	uint32_t magic;
	int version, type, hlen;
	int32_t src, tag;
	uint64_t len, seq;
};

static uint64_t le(const unsigned char *p, int n)
{
	uint64_t v = 0;
	int i;

	for (i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Read one header from fd within 20 s, driving c meanwhile; 0 on EOF. */
static int read_hdr(struct zcr_ctx *c, int fd, struct hdr *h)
{
	unsigned char b[32];
	size_t got = 0;
	double t0 = pair_now();
	ssize_t n;

	while (got < sizeof(b)) {
		ZT_ASSERT_MSG(pair_now() - t0 < 20, "no header from the rank");
		n = recv(fd, b + got, sizeof(b) - got, MSG_DONTWAIT);
		if (n == 0)
			return 0;
		if (n < 0) {
			ZT_ASSERT(errno == EAGAIN || errno == ECONNRESET);
			if (errno == ECONNRESET)
				return 0;
			if (c)
				ZT_ASSERT(zcr_progress(c, 5) >= 0);
			else
				poll(&(struct pollfd){ .fd = fd, .events = POLLIN },
				     1, 5);
			continue;
		}
		got += (size_t)n;
	}
	h->magic = (uint32_t)le(b, 4);
	h->version = b[4];
	h->type = b[5];
	h->hlen = (int)le(b + 6, 2);
	h->src = (int32_t)le(b + 8, 4);
	h->tag = (int32_t)le(b + 12, 4);
	h->len = le(b + 16, 8);
	h->seq = le(b + 24, 8);
	return 1;
}

/* What a 0.1 peer accepted as a HELLO. */
static int old_peer_accepts(const struct hdr *h, int32_t rank)
{
	return h->magic == RAW_MAGIC && h->version == 1 && h->type == 1 &&
	       h->hlen == 32 && h->src == rank && !h->tag && !h->len &&
	       !h->seq;
}

static void raw_send(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		ZT_ASSERT(n > 0);
		p += n;
		len -= (size_t)n;
	}
}

/* Send one DATA message (header and payload) as the 0.1 peer. */
static void raw_message(int fd, int src, int tag, const void *buf,
			size_t len, uint64_t seq)
{
	unsigned char h[32];

	raw_hdr(h, RAW_MAGIC, 1, 2, 32, src, tag, len, seq);
	raw_send(fd, h, 32);
	raw_send(fd, buf, len);
}

/* Read a DATA message from the rank as the 0.1 peer and check its bytes. */
static void raw_expect(struct zcr_ctx *c, int fd, int src, int tag,
		       size_t len, uint32_t seed)
{
	char *buf = malloc(len + 1);
	size_t got = 0;
	struct hdr h;
	ssize_t n;

	ZT_ASSERT(buf);
	ZT_ASSERT(read_hdr(c, fd, &h));
	ZT_EXPECT_EQ(h.type, 2);
	ZT_EXPECT_EQ(h.src, src);
	ZT_EXPECT_EQ(h.tag, tag);
	ZT_EXPECT_EQ(h.len, (uint64_t)len);
	ZT_EXPECT_EQ(h.seq, 1);
	while (got < len) {
		n = recv(fd, buf + got, len - got, 0);
		ZT_ASSERT(n > 0);
		got += (size_t)n;
	}
	ZT_EXPECT_EQ(pattern_bad(buf, len, seed), 0);
	free(buf);
}

/*
 * One message each way between rank me (context c, endpoint ep) and the
 * 0.1 peer (rank peer, socket fd), every byte checked.
 */
static void both_ways(struct zcr_ctx *c, struct zcr_ep *ep, int fd, int me,
		      int peer, uint32_t seed)
{
	const size_t len = 300000;
	struct zcr_status st;
	char *buf = malloc(len);

	ZT_ASSERT(buf);
	pattern_fill(buf, len, seed);
	raw_message(fd, peer, 7, buf, len, 1);
	memset(buf, 0, len);
	ZT_EXPECT_EQ(zcr_recv(c, buf, len, peer, 7, &st), 0);
	ZT_EXPECT_EQ(st.len, len);
	ZT_EXPECT_EQ(pattern_bad(buf, len, seed), 0);
	pattern_fill(buf, len, seed + 1);
	ZT_EXPECT_EQ(zcr_send(ep, buf, len, 9), 0);
	raw_expect(c, fd, me, 9, len, seed + 1);
	free(buf);
}

static struct zcr_ctx *ctx_rank(int rank)
{
	struct zcr_ctx *c = NULL;

	ZT_EXPECT_EQ(zcr_ctx_create(&(struct zcr_ctx_attr){ .rank = rank,
							     .quiet = 1 },
				    &c), 0);
	ZT_ASSERT(c);
	return c;
}

/* A 0.1 rank dials us: we answer in the form it accepts, messages flow. */
ZT_TEST(old_peer_dials_us)
{
	struct zcr_ctx *c = ctx_rank(0);
	struct zcr_ep *ep = NULL;
	unsigned char hello[32];
	struct hdr h;
	int port, fd;
	double t0;

	port = zcr_ctx_listen(c, "127.0.0.1:0");
	ZT_ASSERT(port > 0);
	fd = raw_connect_port(port);
	raw_hdr(hello, RAW_MAGIC, 1, 1, 32, 3, 0, 0, 0);
	raw_send(fd, hello, 32);
	ZT_ASSERT(read_hdr(c, fd, &h));
	ZT_ASSERT_MSG(old_peer_accepts(&h, 0), "answer a 0.1 peer refuses: "
		      "version %d type %d tag %d len %llu seq %llu",
		      h.version, h.type, h.tag, (unsigned long long)h.len,
		      (unsigned long long)h.seq);
	t0 = pair_now();
	while (zcr_ep_accept(c, 0, &ep)) {
		ZT_ASSERT(zcr_progress(c, 5) >= 0);
		ZT_ASSERT(pair_now() - t0 < 20);
	}
	ZT_EXPECT_EQ(zcr_ep_rank(ep), 3);
	ZT_EXPECT_EQ(zcr_ep_error(ep, NULL), 0);

	both_ways(c, ep, fd, 0, 3, 11);
	close(fd);
	zcr_ctx_destroy(c);
}

/*
 * We dial a 0.1 rank: it sends its HELLO and closes on our full one; we
 * hear the 0.1 HELLO, dial again and say HELLO in the 0.1 form.
 * shm: the same when we offer shared memory (wire version 2).
 */
static void dial_old_peer(int shm)
{
	struct zcr_ctx *c;
	struct zcr_ep *ep = NULL;
	unsigned char hello[32];
	char addr[32];
	struct hdr h;
	int lfd, fd;
	const char *why;
	double t0;

	if (shm)
		setenv("ZCRECV_SHM", "1", 1);
	c = ctx_rank(2);
	unsetenv("ZCRECV_SHM");
	lfd = raw_listen(addr, sizeof(addr));
	ZT_EXPECT_EQ(zcr_ep_connect(c, addr, &ep), 0);
	raw_hdr(hello, RAW_MAGIC, 1, 1, 32, 0, 0, 0, 0);
	/* first connection: HELLO at once, read theirs, close if not 0.1 */
	fd = accept(lfd, NULL, NULL);
	ZT_ASSERT(fd >= 0);
	raw_send(fd, hello, 32);
	ZT_ASSERT(read_hdr(c, fd, &h));
	ZT_EXPECT_EQ(h.src, 2);
	if (!old_peer_accepts(&h, 2)) {
		close(fd);
		fcntl(lfd, F_SETFL, O_NONBLOCK);
		t0 = pair_now();
		while ((fd = accept(lfd, NULL, NULL)) < 0) {
			ZT_ASSERT(errno == EAGAIN);
			ZT_ASSERT(zcr_progress(c, 5) >= 0);
			ZT_ASSERT_MSG(pair_now() - t0 < 20,
				      "no second dial after the 0.1 HELLO");
		}
		fcntl(fd, F_SETFL, 0);
		raw_send(fd, hello, 32);
		ZT_ASSERT(read_hdr(c, fd, &h));
		ZT_ASSERT_MSG(old_peer_accepts(&h, 2), "second HELLO still "
			      "not 0.1: version %d tag %d len %llu seq %llu",
			      h.version, h.tag, (unsigned long long)h.len,
			      (unsigned long long)h.seq);
	}
	t0 = pair_now();
	while (zcr_ep_rank(ep) != 0 && !zcr_ep_error(ep, NULL)) {
		ZT_ASSERT(zcr_progress(c, 5) >= 0);
		ZT_ASSERT(pair_now() - t0 < 20);
	}
	ZT_EXPECT_EQ(zcr_ep_error(ep, &why), 0);
	ZT_EXPECT_EQ(zcr_ep_rank(ep), 0);

	both_ways(c, ep, fd, 2, 0, 21);
	close(fd);
	close(lfd);
	zcr_ctx_destroy(c);
}

ZT_TEST(we_dial_an_old_peer)
{
	dial_old_peer(0);
}

ZT_TEST(we_dial_an_old_peer_offering_shm)
{
	dial_old_peer(1);
}

/* With a job secret a 0.1 peer cannot prove it: refused, and said why. */
ZT_TEST(old_peer_with_a_job_secret)
{
	struct zcr_ctx *c;
	struct zcr_ep *ep = NULL;
	unsigned char hello[32];
	char addr[32];
	const char *why = NULL;
	struct hdr h;
	int lfd, fd, dials = 1;
	double t0;

	setenv("ZCRECV_JOB_SECRET", "compat-secret-0123456789", 1);
	c = ctx_rank(1);
	unsetenv("ZCRECV_JOB_SECRET");
	lfd = raw_listen(addr, sizeof(addr));
	ZT_EXPECT_EQ(zcr_ep_connect(c, addr, &ep), 0);
	fd = accept(lfd, NULL, NULL);
	ZT_ASSERT(fd >= 0);
	raw_hdr(hello, RAW_MAGIC, 1, 1, 32, 0, 0, 0, 0);
	raw_send(fd, hello, 32);
	ZT_ASSERT(read_hdr(c, fd, &h));
	t0 = pair_now();
	while (!zcr_ep_error(ep, NULL)) {
		ZT_ASSERT(zcr_progress(c, 5) >= 0);
		ZT_ASSERT(pair_now() - t0 < 20);
	}
	ZT_EXPECT_EQ(zcr_ep_error(ep, &why), -EACCES);
	printf("# 0.1 peer with a secret: %s\n", why);
	ZT_EXPECT_EQ(why && strstr(why, "0.1"), 1);
	/* and it did not dial again */
	fcntl(lfd, F_SETFL, O_NONBLOCK);
	if (accept(lfd, NULL, NULL) >= 0)
		dials++;
	ZT_EXPECT_EQ(dials, 1);
	close(fd);
	close(lfd);
	zcr_ctx_destroy(c);
}
