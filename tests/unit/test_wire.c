// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_wire.c - the wire header parser and malformed traffic. Checks that
 * encode/parse round-trip, that each invalid field is refused with its
 * errno, a fuzzer (random headers, and bit flips and byte changes of valid
 * ones: the parser never crashes and accepts only headers whose every field
 * is valid), and, live over loopback, that malformed or oversized headers
 * and garbage sent to a listening endpoint close that connection with a
 * clear error while a well-behaved peer keeps working.
 * Run: build/tests/unit/test_wire [name]; ZT_FUZZ_ITERS=N for more.
 */
#include <malloc.h>
#include <stdlib.h>

#include "transport/auth.h"
#include "transport/wire.h"
#include "zcr_pair.h"

#define MAXLEN (1ULL << 30)

static struct zcr_wire_hdr valid(void)
{
	struct zcr_wire_hdr h = {
		.magic = ZCR_WIRE_MAGIC, .version = ZCR_WIRE_VERSION,
		.type = ZCR_WIRE_DATA, .hdr_len = ZCR_WIRE_HDR_LEN,
		.src = 3, .tag = 77, .len = 123456, .seq = 9,
	};
	return h;
}

ZT_TEST(roundtrip)
{
	struct zcr_wire_hdr h = valid(), g;
	uint8_t b[32], r[32];

	__zcr_wire_encode(&h, b);
	ZT_EXPECT_EQ(__zcr_wire_parse(b, MAXLEN, &g, NULL), 0);
	ZT_ASSERT(memcmp(&h, &g, sizeof(h)) == 0);
	/* The encoding is little endian whatever the host: pin it. */
	raw_hdr(r, RAW_MAGIC, 1, 2, 32, 3, 77, 123456, 9);
	ZT_ASSERT(memcmp(b, r, 32) == 0);
}

static int parse_mod(void (*mod)(struct zcr_wire_hdr *h), uint64_t max)
{
	struct zcr_wire_hdr h = valid(), g;
	const char *why = NULL;
	uint8_t b[32];
	int ret;

	mod(&h);
	__zcr_wire_encode(&h, b);
	ret = __zcr_wire_parse(b, max, &g, &why);
	ZT_ASSERT(ret == 0 || (why && *why));
	return ret;
}

static void m_magic(struct zcr_wire_hdr *h) { h->magic ^= 1; }
static void m_version(struct zcr_wire_hdr *h) { h->version = 3; }
static void m_hlen(struct zcr_wire_hdr *h) { h->hdr_len = 33; }
static void m_type(struct zcr_wire_hdr *h) { h->type = 11; }
static void m_src(struct zcr_wire_hdr *h) { h->src = -1; }
static void m_tag(struct zcr_wire_hdr *h) { h->tag = -5; }
static void m_hello(struct zcr_wire_hdr *h) { h->type = ZCR_WIRE_HELLO; }
static void m_hello_ok(struct zcr_wire_hdr *h)
{
	h->type = ZCR_WIRE_HELLO;
	h->tag = ZCR_HELLO_AUTH;
	h->len = ~0ULL;		/* the peer's max_msg, not a length */
}
static void m_auth_tag(struct zcr_wire_hdr *h) { h->type = ZCR_WIRE_AUTH; }
static void m_auth(struct zcr_wire_hdr *h)
{
	h->type = ZCR_WIRE_AUTH;
	h->tag = 0;
	h->len = ~0ULL;		/* half of the MAC */
}
static void m_ack_tag(struct zcr_wire_hdr *h) { h->type = ZCR_WIRE_ACK; }
static void m_ack_len(struct zcr_wire_hdr *h)
{
	h->type = ZCR_WIRE_ACK;
	h->tag = 0;
}
static void m_ack(struct zcr_wire_hdr *h)
{
	h->type = ZCR_WIRE_ACK;
	h->tag = 0;
	h->len = 0;
	h->seq = ~0ULL;		/* a message number, any */
}
static void m_none(struct zcr_wire_hdr *h) { (void)h; }
/* Prefetching's frames (lib/prefetch): a request needs its number, size */
static void m_pfreq(struct zcr_wire_hdr *h)
{
	h->type = ZCR_WIRE_PF_REQ;
	h->tag = 3;
}
static void m_pfreq_notok(struct zcr_wire_hdr *h)
{
	h->type = ZCR_WIRE_PF_REQ;
	h->tag = 0;
}
static void m_pfdata_big(struct zcr_wire_hdr *h)
{
	h->type = ZCR_WIRE_PF_DATA;
	h->tag = 3;
	h->len = MAXLEN + 1;
}
static void m_pfinfo_big(struct zcr_wire_hdr *h)
{
	h->type = ZCR_WIRE_PF_INFO;
	h->len = ZCR_PF_BITMAP_MAX(MAXLEN) + 1;
}
static void m_pfinfo(struct zcr_wire_hdr *h)
{
	h->type = ZCR_WIRE_PF_INFO;
	h->len = ZCR_PF_BITMAP_MAX(MAXLEN);
}

ZT_TEST(invalid_fields)
{
	ZT_EXPECT_EQ(parse_mod(m_magic, MAXLEN), -EBADMSG);
	ZT_EXPECT_EQ(parse_mod(m_version, MAXLEN), -EPROTONOSUPPORT);
	ZT_EXPECT_EQ(parse_mod(m_hlen, MAXLEN), -EBADMSG);
	ZT_EXPECT_EQ(parse_mod(m_type, MAXLEN), -EBADMSG);
	ZT_EXPECT_EQ(parse_mod(m_src, MAXLEN), -EBADMSG);
	ZT_EXPECT_EQ(parse_mod(m_tag, MAXLEN), -EBADMSG);
	ZT_EXPECT_EQ(parse_mod(m_hello, MAXLEN), -EBADMSG);	/* flags 77 */
	ZT_EXPECT_EQ(parse_mod(m_hello_ok, MAXLEN), 0);
	ZT_EXPECT_EQ(parse_mod(m_auth_tag, MAXLEN), -EBADMSG);
	ZT_EXPECT_EQ(parse_mod(m_auth, MAXLEN), 0);
	ZT_EXPECT_EQ(parse_mod(m_ack_tag, MAXLEN), -EBADMSG);
	ZT_EXPECT_EQ(parse_mod(m_ack_len, MAXLEN), -EMSGSIZE);
	ZT_EXPECT_EQ(parse_mod(m_ack, MAXLEN), 0);
	ZT_EXPECT_EQ(parse_mod(m_pfreq, MAXLEN), 0);
	ZT_EXPECT_EQ(parse_mod(m_pfreq_notok, MAXLEN), -EBADMSG);
	ZT_EXPECT_EQ(parse_mod(m_pfdata_big, MAXLEN), -EMSGSIZE);
	ZT_EXPECT_EQ(parse_mod(m_pfinfo_big, MAXLEN), -EMSGSIZE);
	ZT_EXPECT_EQ(parse_mod(m_pfinfo, MAXLEN), 0);
	ZT_EXPECT_EQ(parse_mod(m_none, 1000), -EMSGSIZE);
	ZT_EXPECT_EQ(parse_mod(m_none, 123456), 0);
}

static void check_accepted(const struct zcr_wire_hdr *g)
{
	ZT_EXPECT_EQ(g->magic, ZCR_WIRE_MAGIC);
	ZT_ASSERT(g->version >= ZCR_WIRE_VERSION &&
		  g->version <= ZCR_WIRE_VERSION_MAX);
	ZT_EXPECT_EQ(g->hdr_len, ZCR_WIRE_HDR_LEN);
	ZT_ASSERT(g->type >= ZCR_WIRE_HELLO && g->type <= ZCR_WIRE_TYPE_MAX);
	/* The shm negotiation exists in version 2 only. */
	ZT_ASSERT(g->type < ZCR_WIRE_UP_OFFER || g->type > ZCR_WIRE_UP_SWITCH ||
		  g->version == 2);
	if (g->type == ZCR_WIRE_PF_REQ)
		ZT_ASSERT(g->tag && g->len && g->len <= MAXLEN);
	if (g->type == ZCR_WIRE_PF_DATA)
		ZT_ASSERT(g->tag && g->len <= MAXLEN);
	if (g->type == ZCR_WIRE_PF_INFO)
		ZT_ASSERT(g->len <= ZCR_PF_BITMAP_MAX(MAXLEN));
	ZT_ASSERT(g->src >= 0 && g->tag >= 0);
	if (g->type == ZCR_WIRE_DATA)
		ZT_ASSERT(g->len <= MAXLEN);
	if (g->type == ZCR_WIRE_HELLO)
		ZT_ASSERT(!(g->tag & ~ZCR_HELLO_FLAGS));
	if (g->type == ZCR_WIRE_AUTH)
		ZT_ASSERT(!g->tag);
	if (g->type == ZCR_WIRE_ACK)
		ZT_ASSERT(!g->tag && !g->len);
	if (g->type >= ZCR_WIRE_UP_OFFER && g->type <= ZCR_WIRE_UP_SWITCH)
		ZT_ASSERT(!g->seq && g->len == (g->type == ZCR_WIRE_UP_OFFER ?
						ZCR_WIRE_OFFER_LEN : 0));
}

static void hex(const uint8_t *b, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

/* SHA-256 (FIPS 180-4 examples) and HMAC-SHA256 (RFC 4231 cases 1, 2, 6). */
ZT_TEST(sha256_and_hmac_vectors)
{
	static const char *const abc56 =
		"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	uint8_t d[32], key[131];
	char s[65];

	__zcr_sha256("abc", 3, d);
	hex(d, 32, s);
	ZT_EXPECT_EQ(strcmp(s, "ba7816bf8f01cfea414140de5dae2223"
			       "b00361a396177a9cb410ff61f20015ad"), 0);
	__zcr_sha256(abc56, strlen(abc56), d);
	hex(d, 32, s);
	ZT_EXPECT_EQ(strcmp(s, "248d6a61d20638b8e5c026930c3e6039"
			       "a33ce45964ff2167f6ecedd419db06c1"), 0);
	__zcr_sha256("", 0, d);
	hex(d, 32, s);
	ZT_EXPECT_EQ(strcmp(s, "e3b0c44298fc1c149afbf4c8996fb924"
			       "27ae41e4649b934ca495991b7852b855"), 0);
	memset(key, 0x0b, 20);
	__zcr_hmac_sha256(key, 20, "Hi There", 8, d);
	hex(d, 32, s);
	ZT_EXPECT_EQ(strcmp(s, "b0344c61d8db38535ca8afceaf0bf12b"
			       "881dc200c9833da726e9376c2e32cff7"), 0);
	__zcr_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
	hex(d, 32, s);
	ZT_EXPECT_EQ(strcmp(s, "5bdcc146bf60754e6a042426089575c7"
			       "5a003f089d2739839dec58b964ec3843"), 0);
	memset(key, 0xaa, sizeof(key));
	__zcr_hmac_sha256(key, sizeof(key),
			  "Test Using Larger Than Block-Size Key - Hash Key "
			  "First", 54, d);
	hex(d, 32, s);
	ZT_EXPECT_EQ(strcmp(s, "60e431591ee0b67f0d8a26aacbf5b77f"
			       "8e0bc6213728c5140546040f0ee37f54"), 0);
}

static unsigned int iters(void)
{
	const char *e = getenv("ZT_FUZZ_ITERS");

	return e && atoi(e) > 0 ? (unsigned int)atoi(e) : 200000;
}

ZT_TEST(fuzz_parser)
{
	struct zcr_wire_hdr h = valid(), g;
	unsigned int i, n = iters(), ok = 0;
	uint8_t base[32], b[32];
	int j;

	srand(12345);	/* deterministic */
	__zcr_wire_encode(&h, base);
	for (i = 0; i < n; i++) {
		switch (i % 3) {
		case 0:		/* random bytes */
			for (j = 0; j < 32; j++)
				b[j] = (uint8_t)rand();
			break;
		case 1:		/* a valid header with one bit flipped */
			memcpy(b, base, 32);
			b[rand() % 32] ^= (uint8_t)(1u << (rand() % 8));
			break;
		default:	/* a valid header with bytes replaced */
			memcpy(b, base, 32);
			for (j = rand() % 4; j >= 0; j--)
				b[rand() % 32] = (uint8_t)rand();
			break;
		}
		if (__zcr_wire_parse(b, MAXLEN, &g, NULL) == 0) {
			check_accepted(&g);
			ok++;
		}
	}
	printf("# %u headers fuzzed, %u accepted\n", n, ok);
	ZT_ASSERT(ok > 0 && ok < n);
}

/* Send bytes on a raw connection and expect rank 0 to close it. */
static void expect_closed(struct pair *p, const void *bytes, size_t n,
			  bool hello_first)
{
	uint64_t bad = pair_stats(p->c[0]).disconnects;
	char c[64];
	ssize_t r;
	int fd = raw_connect(p);

	if (hello_first)
		raw_hello(fd, 7);
	ZT_ASSERT(write(fd, bytes, n) == (ssize_t)n);
	PAIR_PUMP_UNTIL(p, pair_stats(p->c[0]).disconnects == bad + 1);
	/* Past its handshake, the library's side is closed: EOF or reset. */
	while ((r = read(fd, c, sizeof(c))) > 0)
		;
	ZT_ASSERT(r <= 0);
	close(fd);
}

/* A well-behaved peer still gets through. */
static void still_works(struct pair *p, uint32_t seed)
{
	char sb[3000], rb[3000];
	struct zcr_req *s, *r;
	struct zcr_status st;
	int ret;

	pattern_fill(sb, sizeof(sb), seed);
	ZT_EXPECT_EQ(zcr_isend(p->to0[1], sb, sizeof(sb), 1, &s), 0);
	ZT_EXPECT_EQ(zcr_irecv(p->c[0], rb, sizeof(rb), 1, 1, &r), 0);
	PAIR_PUMP_UNTIL(p, (ret = zcr_test(r, &st)) != 0);
	ZT_EXPECT_EQ(ret, 1);
	ZT_EXPECT_EQ(pattern_bad(rb, sizeof(rb), seed), 0);
	PAIR_PUMP_UNTIL(p, zcr_test(s, NULL) != 0);
}

/* Headers that must close the connection (rank 7 once it said hello). */
static const struct bad_hdr {
	uint32_t magic;
	int version, type, hlen, src;
	uint64_t len, seq;
	bool after_hello;
} bad[] = {
	{ 0xdeadbeef, 1, 1, 32, 7, 0, 0, false },	/* bad magic */
	{ RAW_MAGIC, 9, 1, 32, 7, 0, 0, false },	/* unknown version */
	{ RAW_MAGIC, 1, 1, 64, 7, 0, 0, false },	/* bad header length */
	{ RAW_MAGIC, 1, 2, 32, 7, 10, 1, false },	/* data before hello */
	{ RAW_MAGIC, 1, 2, 32, 7, (1 << 20) + 1, 1, true }, /* oversized */
	{ RAW_MAGIC, 1, 2, 32, 8, 10, 1, true },	/* wrong source */
	{ RAW_MAGIC, 1, 2, 32, 7, 10, 5, true },	/* wrong sequence */
	{ RAW_MAGIC, 1, 1, 32, 7, 0, 0, true },		/* second hello */
	{ RAW_MAGIC, 1, 1, 32, 1, 0, 0, false },	/* rank taken */
};

ZT_TEST(malformed_traffic_to_listener)
{
	struct zcr_ctx_attr a = { .max_msg = 1 << 20 };
	unsigned char h[32], junk[256];
	struct zcr_ep *ep;
	struct pair p;
	int i, fd;

	pair_open(&p, 2, &a);
	for (i = 0; i < (int)(sizeof(bad) / sizeof(bad[0])); i++) {
		const struct bad_hdr *b = &bad[i];

		raw_hdr(h, b->magic, b->version, b->type, b->hlen, b->src, 0,
			b->len, b->seq);
		expect_closed(&p, h, 32, b->after_hello);
	}
	still_works(&p, 1);
	/* Random garbage, deterministic. */
	srand(777);
	for (i = 0; i < 30; i++) {
		size_t j;

		for (j = 0; j < sizeof(junk); j++)
			junk[j] = (unsigned char)rand();
		expect_closed(&p, junk, sizeof(junk), i & 1);
	}
	ZT_ASSERT(pair_stats(p.c[0]).bad_headers >= 30);
	still_works(&p, 2);
	/* The error is there to read, on the endpoint that was closed. */
	fd = raw_connect(&p);
	raw_hdr(h, 0x12345678, 1, 1, 32, 7, 0, 0, 0);
	raw_hello(fd, 9);
	PAIR_PUMP_UNTIL(&p, zcr_ep_accept(p.c[0], 0, &ep) == 0);
	ZT_ASSERT(write(fd, h, 32) == 32);
	PAIR_PUMP_UNTIL(&p, zcr_ep_error(ep, NULL) != 0);
	{
		const char *msg;

		ZT_EXPECT_EQ(zcr_ep_error(ep, &msg), -EBADMSG);
		ZT_ASSERT(strstr(msg, "malformed header: bad magic"));
		printf("# closed with: %s\n", msg);
	}
	close(fd);
	pair_close(&p);
}

/*
 * Connections that are opened and dropped (before or right after their
 * handshake) and never handed to the application leave nothing behind:
 * a peer looping on connect/close must not grow the listener's memory.
 */
ZT_TEST(dropped_connections_do_not_accumulate)
{
	struct mallinfo2 m0 = { 0 }, m1;
	struct pair p;
	int fds[50], i, j;
	uint64_t d;

	pair_open(&p, 2, NULL);
	for (j = 0; j < 12; j++) {
		if (j == 2)
			m0 = mallinfo2();
		d = pair_stats(p.c[0]).disconnects;
		for (i = 0; i < 50; i++) {
			fds[i] = raw_connect(&p);
			if (i & 1)
				raw_hello(fds[i], 100 + i);
		}
		/* Let them be accepted (and greeted) before they go. */
		PAIR_PUMP_UNTIL(&p, zcr_progress(p.c[0], 0) == 0);
		for (i = 0; i < 50; i++)
			close(fds[i]);
		PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).disconnects == d + 50);
	}
	pair_pump(&p);
	m1 = mallinfo2();
	printf("# heap in use changed by %lld bytes over 500 connections\n",
	       (long long)m1.uordblks - (long long)m0.uordblks);
	ZT_ASSERT(m1.uordblks < m0.uordblks + 16384);
	still_works(&p, 3);
	pair_close(&p);
}

/*
 * With the size limit lifted (max_msg = UINT64_MAX), a header announcing
 * nearly 2^64 bytes must not wrap the staging size computation into a
 * one-page slot that the payload then overruns: it cannot be staged, so
 * the connection stalls, and nothing is written anywhere.
 */
ZT_TEST(absurd_length_without_limit)
{
	struct zcr_ctx_attr a = { .max_msg = UINT64_MAX };
	static unsigned char junk[1 << 16];
	unsigned char h[32];
	struct zcr_ep *ep;
	struct pair p;
	int fd, i;

	pair_open(&p, 2, &a);
	fd = raw_connect(&p);
	raw_hello(fd, 5);
	PAIR_PUMP_UNTIL(&p, zcr_ep_accept(p.c[0], 0, &ep) == 0);
	raw_hdr(h, RAW_MAGIC, 1, 2, 32, 5, 0, UINT64_MAX - 100, 1);
	ZT_ASSERT(write(fd, h, 32) == 32);
	memset(junk, 0xee, sizeof(junk));
	ZT_ASSERT(write(fd, junk, sizeof(junk)) == sizeof(junk));
	for (i = 0; i < 200; i++)
		pair_pump(&p);
	ZT_EXPECT_EQ(pair_stats(p.c[0]).early, 0);
	ZT_EXPECT_EQ(pair_stats(p.c[0]).stalls, 1);
	ZT_EXPECT_EQ(zcr_ep_error(ep, NULL), 0);
	still_works(&p, 5);
	close(fd);
	pair_close(&p);
}
