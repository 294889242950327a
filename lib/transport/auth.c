// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * auth.c - the job secret in the handshake: SHA-256 and HMAC-SHA256
 * (FIPS 180-4, RFC 2104), per-connection nonces, and the MAC each side
 * of a connection proves it knows the secret with.
 *
 * Each side's HELLO carries a fresh 64-bit nonce from getrandom(2). On
 * the peer's HELLO a side sends AUTH: the first 16 bytes of
 * HMAC-SHA256(secret, "ZCR1-AUTH" | from rank | to rank | to's nonce |
 * from's nonce). The MAC binds both ranks and the receiver's own fresh
 * nonce, so it cannot be replayed on another connection nor reflected
 * back as the other rank's (Documentation/design.md, "Wire format").
 * The policy on top (both sides have a secret or neither, the MAC must
 * check out) is here too, once for every transport.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "base/ctx.h"
#include "transport/auth.h"
#include "transport/transport.h"

struct sha256 {
	uint32_t h[8];
	uint8_t buf[64];
	uint64_t len;		/* bytes hashed */
};

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b,
	0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
	0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7,
	0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
	0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152,
	0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
	0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
	0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
	0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

static void sha256_block(struct sha256 *s, const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (i = 16; i < 64; i++)
		w[i] = w[i - 16] + (ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^
				    (w[i - 15] >> 3)) +
		       w[i - 7] + (ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^
				   (w[i - 2] >> 10));
	a = s->h[0]; b = s->h[1]; c = s->h[2]; d = s->h[3];
	e = s->h[4]; f = s->h[5]; g = s->h[6]; h = s->h[7];
	for (i = 0; i < 64; i++) {
		t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +
		     ((e & f) ^ (~e & g)) + K[i] + w[i];
		t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) +
		     ((a & b) ^ (a & c) ^ (b & c));
		h = g; g = f; f = e; e = d + t1;
		d = c; c = b; b = a; a = t1 + t2;
	}
	s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d;
	s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
}

static void sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
}

static void sha256_update(struct sha256 *s, const void *data, size_t n)
{
	const uint8_t *p = data;
	size_t fill = s->len % 64, take;

	s->len += n;
	while (n) {
		take = 64 - fill < n ? 64 - fill : n;
		memcpy(s->buf + fill, p, take);
		fill += take;
		p += take;
		n -= take;
		if (fill == 64) {
			sha256_block(s, s->buf);
			fill = 0;
		}
	}
}

static void sha256_final(struct sha256 *s, uint8_t out[32])
{
	uint64_t bits = s->len * 8;
	uint8_t pad[72] = { 0x80 };
	size_t fill = s->len % 64, n = (fill < 56 ? 56 : 120) - fill;
	int i;

	for (i = 0; i < 8; i++)
		pad[n + i] = (uint8_t)(bits >> (56 - 8 * i));
	sha256_update(s, pad, n + 8);
	for (i = 0; i < 32; i++)
		out[i] = (uint8_t)(s->h[i / 4] >> (24 - 8 * (i % 4)));
}

void __zcr_sha256(const void *data, size_t n, uint8_t out[32])
{
	struct sha256 s;

	sha256_init(&s);
	sha256_update(&s, data, n);
	sha256_final(&s, out);
}

void __zcr_hmac_sha256(const void *key, size_t klen, const void *msg,
		       size_t mlen, uint8_t out[32])
{
	uint8_t k[64] = { 0 }, pad[64], inner[32];
	struct sha256 s;
	int i;

	if (klen > 64)
		__zcr_sha256(key, klen, k);
	else if (klen)
		memcpy(k, key, klen);
	for (i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&s);
	sha256_update(&s, pad, 64);
	sha256_update(&s, msg, mlen);
	sha256_final(&s, inner);
	for (i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_init(&s);
	sha256_update(&s, pad, 64);
	sha256_update(&s, inner, 32);
	sha256_final(&s, out);
}

int __zcr_auth_nonce(uint64_t *nonce)
{
	ssize_t n;

	do
		n = getrandom(nonce, sizeof(*nonce), 0);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(*nonce) ? 0 : n < 0 ? -errno : -EIO;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void __zcr_auth_mac(const struct zcr_ctx *ctx, int from, int to,
		    uint64_t to_nonce, uint64_t from_nonce,
		    uint8_t mac[ZCR_AUTH_MAC_LEN])
{
	uint8_t m[9 + 24], full[32];

	memcpy(m, "ZCR1-AUTH", 9);
	put_le(m + 9, (uint32_t)from, 4);
	put_le(m + 13, (uint32_t)to, 4);
	put_le(m + 17, to_nonce, 8);
	put_le(m + 25, from_nonce, 8);
	__zcr_hmac_sha256(ctx->secret, ctx->secret_len, m, sizeof(m), full);
	memcpy(mac, full, ZCR_AUTH_MAC_LEN);
}

bool __zcr_auth_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint8_t d = 0;
	size_t i;

	for (i = 0; i < n; i++)
		d |= a[i] ^ b[i];
	return !d;
}

/*
 * The handshake's policy, the same on every transport: both sides have a
 * job secret, or neither; a peer's MAC must be the one ours gives.
 */
int __zcr_auth_hello_check(struct zcr_ep *ep, bool peer_auth, int claimed)
{
	if (!ep->ctx->secret_len == !peer_auth)
		return 0;
	__zcr_ep_fail_locked(ep, -EACCES, ep->ctx->secret_len ?
			     "peer (claiming rank %d) does not know the job "
			     "secret" :
			     "peer (claiming rank %d) requires a job secret, "
			     "we have none", claimed);
	return -EACCES;
}

int __zcr_auth_check(struct zcr_ep *ep, int peer, uint64_t my_nonce,
		     uint64_t peer_nonce, const uint8_t got[ZCR_AUTH_MAC_LEN])
{
	uint8_t want[ZCR_AUTH_MAC_LEN];

	__zcr_auth_mac(ep->ctx, peer, ep->ctx->rank, my_nonce, peer_nonce,
		       want);
	if (__zcr_auth_equal(want, got, sizeof(want)))
		return 0;
	__zcr_ep_fail_locked(ep, -EACCES, "peer (claiming rank %d) failed "
			     "authentication: another job secret", peer);
	return -EACCES;
}

void __zcr_auth_mac_pack(const uint8_t mac[ZCR_AUTH_MAC_LEN], uint64_t *lo,
			 uint64_t *hi)
{
	int i;

	*lo = *hi = 0;
	for (i = 0; i < 8; i++) {
		*lo |= (uint64_t)mac[i] << (8 * i);
		*hi |= (uint64_t)mac[8 + i] << (8 * i);
	}
}

void __zcr_auth_mac_unpack(uint64_t lo, uint64_t hi,
			   uint8_t mac[ZCR_AUTH_MAC_LEN])
{
	put_le(mac, lo, 8);
	put_le(mac + 8, hi, 8);
}
