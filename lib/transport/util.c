// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * util.c - transport-neutral rules every transport shares: the progress
 * timeout of a message in flight (util.h). The stream transports (TCP)
 * read a message's bytes themselves and check it; an RDMA READ is
 * bounded by the queue pair's own retry timeout, which fails the
 * endpoint, and a handshake of any transport by the handshake timeout
 * (__zcr_ep_expire_handshakes_locked()).
 */
#include <errno.h>

#include "base/ctx.h"
#include "transport/transport.h"
#include "transport/util.h"

int __zcr_rx_watch_check(struct zcr_ep *ep, struct zcr_rx_watch *w,
			 bool busy, uint64_t now)
{
	struct zcr_ctx *ctx = ep->ctx;

	if (!busy) {
		w->deadline = 0;
		return 0;
	}
	if (!w->deadline || w->total - w->mark >= ZCR_PROGRESS_QUANTUM) {
		w->deadline = now + ctx->progress_timeout_ns;
		w->mark = w->total;
		return 0;
	}
	if (now < w->deadline)
		return 0;
	__zcr_ep_fail_locked(ep, -ETIMEDOUT, "no progress mid-message for "
			     "%llu ms", (unsigned long long)
			     (ctx->progress_timeout_ns / 1000000));
	return 1;
}
