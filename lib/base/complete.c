// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * complete.c - request completion and the context's wake-up, the part of
 * a request's life every layer reaches: a transport completes a send once
 * written, match a receive once its message landed.
 *
 * Completion only records and wakes: it sets the status, queues the
 * request on ctx->done_reqs (so that zcr_ctx_destroy() frees it if it is
 * never handed back) and wakes whoever waits for it. It calls nothing
 * above the base, so a completion never re-enters the progress engine
 * (Documentation/design.md, "Layers").
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/ctx.h"

void __zcr_req_complete_locked(struct zcr_req *r, int error)
{
	r->st.error = error;
	r->done = true;
	/* A send's prefetching plan (lib/prefetch) is of no more use. */
	if (r->pf) {
		free(r->pf);
		r->pf = NULL;
	}
	if (!r->in_done) {
		zcr_list_add_tail(&r->done_link, &r->ctx->done_reqs);
		r->in_done = true;
	}
	/*
	 * No broadcast on ctx->cond: only zcr_ep_accept() sleeps on it, for
	 * a connection that opens (transport.c), never for a request.
	 */
	/*
	 * Its waiter may sleep in poll(2) with nothing else to wake it: its
	 * own eventfd (the context's may be read by another poller first).
	 */
	if (r->waited && !pthread_equal(r->waiter, pthread_self())) {
		uint64_t one = 1;

		if (r->waiter_fd < 0) {
			/* None (no eventfd to be had): the context's. */
			__zcr_wake(r->ctx);
		} else if (write(r->waiter_fd, &one, sizeof(one)) ==
			   (ssize_t)sizeof(one)) {
			r->woken = true;
		}
	}
}

void __zcr_wake(struct zcr_ctx *ctx)
{
	uint64_t one = 1;

	if (write(ctx->wake_fd, &one, sizeof(one)) < 0) {
		/* The counter is saturated: a wake-up is pending anyway. */
	}
}
