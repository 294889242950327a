/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * core.h - the top layer: the progress engine (lib/core/context.c) under
 * the public API (the other files of lib/core). Only lib/core includes it.
 */
#ifndef ZCR_CORE_H
#define ZCR_CORE_H

#include "base/ctx.h"
#include "match/match.h"
#include "predict/predict.h"
#include "prefetch/prefetch.h"
#include "remap/remap.h"
#include "staging/staging.h"
#include "transport/auth.h"
#include "transport/transport.h"

/*
 * The pollfd array of one poll(2) call. poll runs without the lock, so
 * each poller takes a set of its own from ctx->pollsets and gives it back
 * afterwards; sets only grow (geometrically), so a steady number of
 * connections and pollers allocates nothing.
 */
struct zcr_pollset {
	struct zcr_pollset *next;
	unsigned int cap;
	struct pollfd *fds;
};

int __zcr_progress_locked(struct zcr_ctx *ctx, int timeout_ms);
/*
 * The application was in the library just now (the last waiter left
 * zcr_wait(), a test or probe made a pass): the progress thread stays
 * parked a grace from now. Reads the clock; arms the park's timer only
 * when it would fire within the grace (context.c).
 */
void __zcr_park_push_locked(struct zcr_ctx *ctx);
/*
 * This thread's own wake-up eventfd (created on first use; -1 if it
 * cannot be): zcr_wait() polls it, and another thread completing the
 * request it waits for writes it.
 */
int __zcr_thread_wake_fd(void);
/* The bodies of zcr_isend*() and zcr_irecv*() (request.c). */
int __zcr_isend(struct zcr_ep *ep, uint32_t comm, const void *buf,
		size_t len, int tag, struct zcr_req **out, bool sync);
/*
 * The same, started by a persistent send when persist (r->persist). With
 * reap, a request already complete when the call lets go of the context
 * lock (an eager send in the ring, a receive whose message was there) is
 * taken off the completed list under that lock and 1 is returned: the
 * caller owns it and hands it back with __zcr_req_finish(), with no wait.
 */
int __zcr_isend_as(struct zcr_ep *ep, uint32_t comm, const void *buf,
		   size_t len, int tag, struct zcr_req **out, bool sync,
		   bool persist, bool reap);
/*
 * A standard send that the endpoint's transport completes within the
 * call, with no request (transport.h, send_now): its status into st and
 * 1; -EAGAIN when the general path must take it (nothing was done); or
 * the error that path would give.
 */
int __zcr_send_now(struct zcr_ep *ep, uint32_t comm, const void *buf,
		   size_t len, int tag, struct zcr_status *st, size_t st_size);
/*
 * A receive whose message is queued complete already, taken with no
 * request (match.h, __zcr_match_take_now_locked(); known: the persistent
 * receive's, or NULL): its status (error -EMSGSIZE when cut short) into
 * st and 1; -EAGAIN when the general path must post it (nothing done).
 */
int __zcr_recv_now(struct zcr_ctx *ctx, uint32_t comm, void *buf,
		   size_t size, int src, int tag, struct zcr_expect *known,
		   struct zcr_status *st, size_t st_size);
/*
 * learn: the predictor sees the call (false: ZCRECV_RECV_NO_LEARN, a call
 * the caller never makes again).
 */
int __zcr_irecv(struct zcr_ctx *ctx, uint32_t comm, void *buf, size_t size,
		int src, int tag, struct zcr_req **out, const void *site,
		struct zcr_expect *known, bool reap, bool learn);
/* Status of complete, reaped r into st (may be NULL), r freed; r's error. */
int __zcr_req_finish(struct zcr_req *r, struct zcr_status *st,
		     size_t st_size);
/* Free the persistent requests never freed (persist.c). */
void __zcr_preqs_fini(struct zcr_ctx *ctx);
/* Free a job's wire-up state (lib/core/job.c); NULL is ignored. */
void __zcr_job_free(struct zcr_job *job);

#endif /* ZCR_CORE_H */
