// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * wire.c - the TCP wire header: encode and parse.
 *
 * 32 bytes, little endian whatever the host:
 *   0 magic "ZCR1"  4 version  5 type  6 header length
 *   8 src rank     12 tag     16 payload length  24 sequence number
 * The parser trusts nothing: it is what a malformed or hostile peer reaches
 * first, and tests/unit/test_wire.c fuzzes it.
 */
#include <errno.h>
#include <string.h>

#include "transport/wire.h"

static void put_le(uint8_t *p, uint64_t v, int n)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	int i;

	for (i = n - 1; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

void __zcr_wire_encode(const struct zcr_wire_hdr *h,
		       uint8_t out[ZCR_WIRE_HDR_LEN])
{
	put_le(out, h->magic, 4);
	out[4] = h->version;
	out[5] = h->type;
	put_le(out + 6, h->hdr_len, 2);
	put_le(out + 8, (uint32_t)h->src, 4);
	put_le(out + 12, (uint32_t)h->tag, 4);
	put_le(out + 16, h->len, 8);
	put_le(out + 24, h->seq, 8);
}

int __zcr_wire_parse(const uint8_t in[ZCR_WIRE_HDR_LEN], uint64_t max_len,
		     struct zcr_wire_hdr *h, const char **why)
{
	const char *dummy;

	if (!why)
		why = &dummy;
	memset(h, 0, sizeof(*h));
	h->magic = (uint32_t)get_le(in, 4);
	h->version = in[4];
	h->type = in[5];
	h->hdr_len = (uint16_t)get_le(in + 6, 2);
	h->src = (int32_t)(uint32_t)get_le(in + 8, 4);
	h->tag = (int32_t)(uint32_t)get_le(in + 12, 4);
	h->len = get_le(in + 16, 8);
	h->seq = get_le(in + 24, 8);

	if (h->magic != ZCR_WIRE_MAGIC) {
		*why = "bad magic";
		return -EBADMSG;
	}
	if (h->version < ZCR_WIRE_VERSION ||
	    h->version > ZCR_WIRE_VERSION_MAX) {
		*why = "unsupported version";
		return -EPROTONOSUPPORT;
	}
	if (h->hdr_len != ZCR_WIRE_HDR_LEN) {
		*why = "bad header length";
		return -EBADMSG;
	}
	if (h->type < ZCR_WIRE_HELLO || h->type > ZCR_WIRE_TYPE_MAX ||
	    (h->version < 2 && h->type >= ZCR_WIRE_UP_OFFER &&
	     h->type <= ZCR_WIRE_UP_SWITCH)) {
		*why = "unknown message type";
		return -EBADMSG;
	}
	if (h->src < 0 || h->tag < 0) {
		*why = "negative rank or tag";
		return -EBADMSG;
	}
	if ((h->type == ZCR_WIRE_HELLO && (h->tag & ~ZCR_HELLO_FLAGS)) ||
	    ((h->type == ZCR_WIRE_AUTH || h->type == ZCR_WIRE_ACK) &&
	     h->tag)) {
		*why = "unknown handshake flags";
		return -EBADMSG;
	}
	if (h->type >= ZCR_WIRE_UP_OFFER && h->type <= ZCR_WIRE_UP_SWITCH &&
	    (h->seq || h->len != (h->type == ZCR_WIRE_UP_OFFER ?
				  ZCR_WIRE_OFFER_LEN : 0))) {
		*why = "upgrade negotiation of the wrong size";
		return -EMSGSIZE;
	}
	if (h->type == ZCR_WIRE_ACK && h->len) {
		*why = "acknowledgement with a payload";
		return -EMSGSIZE;
	}
	if ((h->type == ZCR_WIRE_PF_REQ && (!h->tag || !h->len)) ||
	    (h->type == ZCR_WIRE_PF_DATA && !h->tag)) {
		*why = "prefetch message without a request number or size";
		return -EBADMSG;
	}
	if ((h->type == ZCR_WIRE_PF_REQ || h->type == ZCR_WIRE_PF_DATA) &&
	    h->len > max_len) {
		*why = "prefetch larger than the message limit";
		return -EMSGSIZE;
	}
	if (h->type == ZCR_WIRE_PF_INFO &&
	    h->len > ZCR_PF_BITMAP_MAX(max_len)) {
		*why = "prefetch bitmap larger than the largest message";
		return -EMSGSIZE;
	}
	if (h->type != ZCR_WIRE_DATA) {
		*why = NULL;
		return 0;	/* the limit is for messages, not these */
	}
	if (h->len > max_len) {
		*why = "message larger than the limit";
		return -EMSGSIZE;
	}
	*why = NULL;
	return 0;
}
