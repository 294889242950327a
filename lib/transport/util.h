/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * util.h - transport-neutral pieces every transport shares
 * (lib/transport/util.c): the end of a send, and the progress timeout of
 * a message in flight. The socket rules are in sock.h, the job secret in
 * auth.h, the hand-over of a connection to another transport in
 * upgrade.h. Documentation/design.md, "Shared transport code".
 */
#ifndef ZCR_TP_UTIL_H
#define ZCR_TP_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/ctx.h"

/**
 * __zcr_ep_send_done_locked() - every byte of send @r has left on @ep
 * @ep:	the endpoint
 * @r:	the send, already off ep->sendq (or never queued)
 *
 * Counts it, then completes it; a synchronous send instead waits on
 * ep->ackq for the peer's acknowledgement (the core completes it then,
 * or fails it with the connection). Inline: it is on every send's path.
 */
static inline void __zcr_ep_send_done_locked(struct zcr_ep *ep,
					     struct zcr_req *r)
{
	struct zcr_ctx *ctx = ep->ctx;

	ctx->st.msgs_sent++;
	ctx->st.bytes_sent += r->len;
	if (r->sync)
		zcr_list_add_tail(&r->link, &ep->ackq);
	else
		__zcr_req_complete_locked(r, 0);
}

/* A message in flight must bring this much, or its end, per timeout. */
#define ZCR_PROGRESS_QUANTUM	(64 << 10)

/**
 * struct zcr_rx_watch - the progress timeout of one connection's receive
 * @total:	bytes ever received (the transport adds to it)
 * @mark:	@total when @deadline was set
 * @deadline:	monotonic ns; 0: nothing in flight
 */
struct zcr_rx_watch {
	uint64_t total;
	uint64_t mark;
	uint64_t deadline;
};

/*
 * A message in flight (@busy: a header or a payload partly received, not
 * paused by us) must bring ZCR_PROGRESS_QUANTUM bytes or its end within
 * ctx->progress_timeout_ns: a peer trickling its payload, or gone silent
 * mid-message, would otherwise hold its connection, its landing and a
 * receive for ever. Fails ep with -ETIMEDOUT and returns 1 when it is
 * late; else 0.
 */
int __zcr_rx_watch_check(struct zcr_ep *ep, struct zcr_rx_watch *w,
			 bool busy, uint64_t now);

#endif /* ZCR_TP_UTIL_H */
