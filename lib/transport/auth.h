/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * auth.h - the job secret in the handshake (lib/transport/auth.c):
 * SHA-256, HMAC-SHA256, nonces and the handshake MAC.
 */
#ifndef ZCR_AUTH_H
#define ZCR_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct zcr_ctx;
struct zcr_ep;

#define ZCR_AUTH_MAC_LEN	16	/* bytes of the HMAC sent (len, seq) */

void __zcr_sha256(const void *data, size_t n, uint8_t out[32]);
void __zcr_hmac_sha256(const void *key, size_t klen, const void *msg,
		       size_t mlen, uint8_t out[32]);
/* A fresh random nonce (getrandom(2)): 0 or -errno. */
int __zcr_auth_nonce(uint64_t *nonce);
/*
 * The MAC rank from sends rank to on a connection where to's HELLO said
 * to_nonce and from's said from_nonce, keyed with ctx's job secret.
 */
void __zcr_auth_mac(const struct zcr_ctx *ctx, int from, int to,
		    uint64_t to_nonce, uint64_t from_nonce,
		    uint8_t mac[ZCR_AUTH_MAC_LEN]);
/* Compare n bytes in time independent of where they differ. */
bool __zcr_auth_equal(const uint8_t *a, const uint8_t *b, size_t n);

/*
 * The peer's HELLO said whether it will prove the job secret (peer_auth),
 * claiming rank claimed. Both sides must have a secret, or neither:
 * returns 0, or -EACCES with ep failed and the reason recorded.
 */
int __zcr_auth_hello_check(struct zcr_ep *ep, bool peer_auth, int claimed);
/*
 * The peer (rank peer) sent MAC got on a connection where our HELLO said
 * my_nonce and its HELLO peer_nonce: 0 if the job secret gives it, else
 * -EACCES with ep failed.
 */
int __zcr_auth_check(struct zcr_ep *ep, int peer, uint64_t my_nonce,
		     uint64_t peer_nonce, const uint8_t got[ZCR_AUTH_MAC_LEN]);
/* A MAC in two little-endian 64-bit fields (the wire's len and seq). */
void __zcr_auth_mac_pack(const uint8_t mac[ZCR_AUTH_MAC_LEN], uint64_t *lo,
			 uint64_t *hi);
void __zcr_auth_mac_unpack(uint64_t lo, uint64_t hi,
			   uint8_t mac[ZCR_AUTH_MAC_LEN]);

#endif /* ZCR_AUTH_H */
