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

#endif /* ZCR_AUTH_H */
