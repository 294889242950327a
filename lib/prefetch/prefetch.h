/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * prefetch.h - message prefetching (lib/prefetch/prefetch.c): a receiver
 * that waits on nothing asks the sender for the buffer it predicts the
 * send will use; the sender pre-sends the pages its page versions
 * (lib/pagever) say are final; the real send then carries only the pages
 * written since. Protocol, rules and figures: Documentation/prefetch.md.
 *
 * The layer keeps the state and makes the decisions; a transport that
 * negotiated prefetching (TCP: ZCR_HELLO_PREFETCH; shm, moved from TCP,
 * when both offers said so) carries the three frames (transport/wire.h:
 * PF_INFO, PF_REQ, PF_DATA; shm.h: ZCR_SHM_PF_*) and calls in here.
 * Everything runs under ctx->lock.
 */
#ifndef ZCR_PREFETCH_H
#define ZCR_PREFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/ctx.h"

/*
 * Prefetching counts a buffer in pages of this size on the wire, whatever
 * the page size of either side; a bitmap has one bit per page the buffer
 * touches (head and tail pages partial).
 */
#define ZCR_PF_PAGE		4096ULL
#define ZCR_PF_BITMAP_MAX(max_len) \
	(((max_len) / ZCR_PF_PAGE + 2 + 7) / 8)

/* A request the receiver sends (PF_REQ). */
struct zcr_pf_ask {
	uint32_t token;			/* > 0, never 2^31 or more */
	uint64_t saddr, slen;		/* the predicted send buffer */
};

/* Message bytes [off, off + len) that travel on the wire. */
struct zcr_pf_run {
	uint64_t off, len;
};

/*
 * A large send's prefetching (r->pf): the PF_INFO frame that goes before
 * its DATA, and which of its bytes go on the wire. Freed with the request.
 */
struct zcr_pf_tx {
	uint32_t token;			/* the pre-send used, 0: none */
	uint64_t saddr;			/* the send buffer's address */
	uint8_t hdr[32];		/* PF_INFO, the transport's to encode */
	uint64_t wire_len;		/* payload bytes on the wire */
	size_t nruns;			/* runs[] (wire_len < len) */
	struct zcr_pf_run *runs;
	uint64_t bmlen;			/* bytes of bm[] on the wire */
	uint8_t bm[];			/* pages left out, 1 bit each */
};

/* Per context: ZCRECV_PREFETCH=1 sets ctx->pf up; NULL when off. */
int __zcr_pf_ctx_init(struct zcr_ctx *ctx);
void __zcr_pf_ctx_fini(struct zcr_ctx *ctx);
/* Per connection, once both HELLOs said ZCR_HELLO_PREFETCH. */
int __zcr_pf_ep_init(struct zcr_ep *ep);
void __zcr_pf_ep_fini(struct zcr_ep *ep);
/*
 * ep's peer shares our memory (the shm transport): a pre-send costs more
 * than it saves there (Documentation/prefetch.md, "When not to, on one
 * host"), so we never ask; we still answer, and learn from, a peer's
 * frames (ZCRECV_PREFETCH_SHM_ALL=1: ask as over TCP).
 */
void __zcr_pf_ep_local(struct zcr_ep *ep);

/* ---- receiver ---- */

/*
 * Receive r waits with nothing matched and its sender is on ep: whether
 * to ask (fills *a; the caller sends PF_REQ). False: no prediction, a
 * request outstanding, too small, backing off.
 */
bool __zcr_pf_ask_locked(struct zcr_ep *ep, const struct zcr_req *r,
			 struct zcr_pf_ask *a);
/*
 * A large DATA of ep is all in: whether to ask for the stream's next
 * message now (fills *a; the caller sends PF_REQ), where its last
 * pre-send paid (Documentation/prefetch.md, "Asking when the last
 * message came").
 */
bool __zcr_pf_ask_next_locked(struct zcr_ep *ep, struct zcr_pf_ask *a);
/* The request *a could not be sent: none is outstanding. */
void __zcr_pf_asked_failed_locked(struct zcr_ep *ep);
/* A PF_INFO came and its DATA not yet: the next frame must be that DATA. */
bool __zcr_pf_info_pending(const struct zcr_ep *ep);
/*
 * PF_INFO in: the next DATA of ep came from buffer saddr and uses the
 * pre-send numbered token (0: none); its bitmap of pages left out
 * (bmlen bytes) is to be read into *bm. -errno: out of protocol.
 */
int __zcr_pf_info_locked(struct zcr_ep *ep, uint32_t token, uint64_t saddr,
			 uint64_t bmlen, uint8_t **bm);
/*
 * A DATA header of ep (comm, tag, len) is in: which of its bytes come on
 * the wire (*nruns 0: all of them; *wire_len bytes in any case). -errno:
 * the PF_INFO before it does not fit this message or the pre-send.
 */
int __zcr_pf_data_locked(struct zcr_ep *ep, uint32_t comm, int tag,
			 uint64_t len, const struct zcr_pf_run **runs,
			 size_t *nruns, uint64_t *wire_len);
/* Its wire bytes landed at dst (room bytes): fill in the pre-sent ones. */
void __zcr_pf_data_done_locked(struct zcr_ep *ep, char *dst, uint64_t room);
/*
 * PF_DATA in, the answer to request token: len bytes (0: nothing came),
 * a bitmap of the pages of the buffer at saddr it holds, then those
 * pages. The bitmap is to be read into *bm; then
 * __zcr_pf_presend_map_locked() says where the pages go. -errno: not
 * the answer to our request, or a length that cannot be.
 */
int __zcr_pf_presend_in_locked(struct zcr_ep *ep, uint32_t token,
			       uint64_t saddr, uint64_t len, uint8_t **bm);
/* The bytes of that bitmap. */
uint64_t __zcr_pf_presend_bmlen(const struct zcr_ep *ep);
/* Its bitmap is in: the pages go to runs of *dst. -errno: a bad bitmap. */
int __zcr_pf_presend_map_locked(struct zcr_ep *ep, char **dst,
				const struct zcr_pf_run **runs, size_t *nruns);
void __zcr_pf_presend_done_locked(struct zcr_ep *ep);
/* Forget the pre-send being taken in or just taken (its sender closed). */
void __zcr_pf_presend_drop_locked(struct zcr_ep *ep);

/* ---- sender ---- */

/*
 * PF_REQ in: decide what to pre-send. *data (malloc'd, the caller's to
 * send and free) holds *len bytes, PF_DATA's body: the bitmap of pages,
 * then those pages; NULL and 0: nothing (the caller answers with an
 * empty PF_DATA all the same). -errno: out of memory. It touches only
 * the sending side's state: a transport whose frames are one stream
 * (TCP, shm) refuses a request between a PF_INFO and its DATA itself;
 * over verbs a request is taken as it completes, a message of the
 * peer's arriving or not.
 */
int __zcr_pf_request_locked(struct zcr_ep *ep, uint32_t token,
			    uint64_t saddr, uint64_t slen, char **data,
			    uint64_t *len);
/*
 * Send r is about to be queued on ep: for a large one, set r->pf (its
 * PF_INFO; pre-sent pages that did not change left out). 0 or -ENOMEM
 * (r then goes out as a plain DATA).
 */
int __zcr_pf_send_locked(struct zcr_ep *ep, struct zcr_req *r);

#endif /* ZCR_PREFETCH_H */
