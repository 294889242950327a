/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * wire.h - the stream wire header (lib/transport/wire.c), shared by the
 * stream transports. Format: Documentation/design.md, "Wire format".
 */
#ifndef ZCR_WIRE_H
#define ZCR_WIRE_H

#include <stdint.h>

#include "prefetch/prefetch.h"	/* ZCR_PF_PAGE, ZCR_PF_BITMAP_MAX */

#define ZCR_WIRE_MAGIC		0x3152435aU	/* "ZCR1" in little endian */
#define ZCR_WIRE_VERSION	1	/* what a plain connection speaks */
#define ZCR_WIRE_VERSION_MAX	2	/* 2: the upgrade negotiation types */
#define ZCR_WIRE_OFFER_LEN	128	/* an upgrade offer's body */
#define ZCR_WIRE_HDR_LEN	32

enum zcr_wire_type {
	ZCR_WIRE_HELLO = 1,	/* handshake: see ZCR_HELLO_* below */
	ZCR_WIRE_DATA = 2,	/* one message: src, tag, len, seq */
	/*
	 * Version 2 only, after both HELLOs: the negotiation of the
	 * transport that may take the connection over (upgrade.h; shm,
	 * Documentation/shm.md).
	 */
	ZCR_WIRE_UP_OFFER = 3,	/* len = ZCR_WIRE_OFFER_LEN, the offer */
	ZCR_WIRE_UP_GRANT = 4,	/* tag 0: you may attach; else errno */
	ZCR_WIRE_UP_SWITCH = 5,	/* tag 0: moving over; else errno */
	ZCR_WIRE_AUTH = 6,	/* src; len, seq: the handshake MAC */
	/* With ZCR_HELLO_SYNC on both HELLOs: */
	ZCR_WIRE_ACK = 7,	/* src; seq: number of the DATA now matched */
	/*
	 * With ZCR_HELLO_PREFETCH on both HELLOs (message prefetching,
	 * lib/prefetch, Documentation/prefetch.md):
	 */
	ZCR_WIRE_PF_INFO = 8,	/* before a DATA: tag the pre-send it uses
				 * (0: none), seq the sender's buffer
				 * address, len the bytes of the bitmap of
				 * pages left out that follows (0: none) */
	ZCR_WIRE_PF_REQ = 9,	/* tag a request number (> 0), seq the
				 * predicted buffer address, len its size */
	ZCR_WIRE_PF_DATA = 10,	/* the answer to request tag: len bytes,
				 * the first of the buffer at seq (0: none) */
};
#define ZCR_WIRE_TYPE_MAX	ZCR_WIRE_PF_DATA

/* HELLO: tag holds flags, len the sender's max_msg, seq its nonce. */
#define ZCR_HELLO_AUTH		1	/* the sender will send AUTH */
/*
 * The sender carries communicator ids: with it on both HELLOs, DATA's seq
 * is the message number mod 2^32 in bits 0-31 and the id in bits 32-63.
 * Only the dialling side sets it first; the side that accepted answers it.
 */
#define ZCR_HELLO_COMM		2
/*
 * The sender acknowledges synchronous sends: with it (and ZCR_HELLO_COMM)
 * on both HELLOs, DATA's seq bit 31 asks for an ACK once a receive
 * matched it, and the message number takes bits 0-30 only. Offered and
 * answered as ZCR_HELLO_COMM. On wire version 2 it also says that the
 * sender's shm transport acknowledges them (zcrecv 0.2.0 offered it on
 * version 1 only: Documentation/design.md).
 */
#define ZCR_HELLO_SYNC		4
/*
 * The sender takes part in message prefetching: it answers PF_REQ and
 * sends PF_INFO before its large DATA. Offered and answered as
 * ZCR_HELLO_COMM, by contexts with ZCRECV_PREFETCH=1 only.
 */
#define ZCR_HELLO_PREFETCH	8
#define ZCR_HELLO_FLAGS		(ZCR_HELLO_AUTH | ZCR_HELLO_COMM | \
				 ZCR_HELLO_SYNC | ZCR_HELLO_PREFETCH)
#define ZCR_SEQ_MASK		0xffffffffULL
#define ZCR_SEQ_SYNC		0x80000000ULL
#define ZCR_SEQ_MASK_SYNC	0x7fffffffULL

struct zcr_wire_hdr {
	uint32_t magic;
	uint8_t version;
	uint8_t type;
	uint16_t hdr_len;
	int32_t src;
	int32_t tag;
	uint64_t len;
	uint64_t seq;
};

void __zcr_wire_encode(const struct zcr_wire_hdr *h,
		       uint8_t out[ZCR_WIRE_HDR_LEN]);
/*
 * Parse and validate one header. Returns 0, or -EBADMSG (magic, type, header
 * length, negative src/tag, unknown HELLO flags, AUTH with a tag),
 * -EPROTONOSUPPORT (version), -EMSGSIZE (a DATA len above max_len); *why
 * says which, for humans. HELLO's len (the peer's max_msg) and seq (its
 * nonce), AUTH's len and seq (its MAC) are not lengths.
 */
int __zcr_wire_parse(const uint8_t in[ZCR_WIRE_HDR_LEN], uint64_t max_len,
		     struct zcr_wire_hdr *h, const char **why);

#endif /* ZCR_WIRE_H */
