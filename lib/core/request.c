// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * request.c - sends and receives, blocking and nonblocking, and their
 * completion.
 *
 * A request belongs to the context until it completes, then to the caller
 * until zcr_test() or zcr_wait() hands back its status and frees it; the
 * context keeps completed ones on ctx->done_reqs meanwhile, so that
 * zcr_ctx_destroy() frees those never handed back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/probe.h"
#include "base/zero.h"
#include "core/core.h"
#include "core/sized.h"

/*
 * A spare request of ctx (ctx->spare_reqs), or NULL. Under
 * AddressSanitizer there are none: every request is really freed, so
 * that a use of one after zcr_test()/zcr_wait() handed it back is still
 * caught.
 */
static struct zcr_req *spare_take(struct zcr_ctx *ctx)
{
#ifndef __SANITIZE_ADDRESS__
	unsigned int i;

	for (i = 0; i < ZCR_SPARE_REQS; i++)
		if (__atomic_load_n(&ctx->spare_reqs[i], __ATOMIC_RELAXED)) {
			struct zcr_req *r;

			r = __atomic_exchange_n(&ctx->spare_reqs[i], NULL,
						__ATOMIC_ACQUIRE);
			if (r)
				return r;
		}
#else
	(void)ctx;
#endif
	return NULL;
}

/* Keep r as a spare of ctx: false when there is no room. */
static bool spare_put(struct zcr_ctx *ctx, struct zcr_req *r)
{
#ifndef __SANITIZE_ADDRESS__
	unsigned int i;

	for (i = 0; i < ZCR_SPARE_REQS; i++) {
		struct zcr_req *none = NULL;

		if (!__atomic_load_n(&ctx->spare_reqs[i], __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&ctx->spare_reqs[i], &none, r,
						false, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return true;
	}
#else
	(void)ctx;
	(void)r;
#endif
	return false;
}

/* A new request of ctx, or NULL. */
static struct zcr_req *req_new(struct zcr_ctx *ctx, int kind, uint32_t comm)
{
	struct zcr_req *r = spare_take(ctx);

	if (r)
		zcr_zero(r, sizeof(*r));
	else
		r = calloc(1, sizeof(*r));
	if (r) {
		r->ctx = ctx;
		r->kind = kind;
		r->comm = comm;
	}
	return r;
}

/* r goes back to the caller: off the context's list of completed ones. */
static void reaped_locked(struct zcr_req *r)
{
	if (r->in_done) {
		zcr_list_del(&r->done_link);
		r->in_done = false;
	}
}

/*
 * The application is in the library: the progress thread stays parked
 * for another grace (context.c). A count, not a clock read (a persistent
 * start is a few times a clock read): every ctx->park_stride-th call
 * reads the clock and pushes the park's timer, so that a stream of calls
 * ends no park either, and so does the first call after the timer was
 * disarmed (someone waited). The stride follows the calls' pace
 * (__zcr_park_push_locked(), the thread).
 */
static void app_seen_locked(struct zcr_ctx *ctx)
{
	if (ctx->thread_on && !ctx->waiters &&
	    (++ctx->app_calls - ctx->app_calls_pushed >= ctx->park_stride ||
	     !ctx->park_until))
		__zcr_park_push_locked(ctx);
}

/* Reap r if complete already, as a wait would (the lock held). */
static bool reap_now_locked(struct zcr_ctx *ctx, struct zcr_req *r)
{
	if (!r->done)
		return false;
	app_seen_locked(ctx);
	reaped_locked(r);
	return true;
}

/* r is no longer anyone's. */
static void req_free(struct zcr_ctx *ctx, struct zcr_req *r)
{
	if (!spare_put(ctx, r))
		free(r);
}

int __zcr_isend(struct zcr_ep *ep, uint32_t comm, const void *buf,
		size_t len, int tag, struct zcr_req **out, bool sync)
{
	return __zcr_isend_as(ep, comm, buf, len, tag, out, sync, false,
			      false);
}

int __zcr_isend_as(struct zcr_ep *ep, uint32_t comm, const void *buf,
		   size_t len, int tag, struct zcr_req **out, bool sync,
		   bool persist, bool reap)
{
	struct zcr_ctx *ctx;
	struct zcr_req *r;
	bool wake, reaped;
	int ret;

	if (!ep || !out || (len && !buf) || tag < 0)
		return -EINVAL;
	ZCR_PROBE(ZCR_PP_SEND_IN);
	ctx = ep->ctx;
	if (len > ctx->max_msg)
		return -EMSGSIZE;
	r = req_new(ctx, ZCR_REQ_SEND, comm);
	if (!r)
		return -ENOMEM;
	r->sbuf = buf;
	r->len = len;
	r->sync = sync;
	r->persist = persist;
	r->st.tag = tag;
	r->st.len = len;
	r->st.source = ctx->rank;
	pthread_mutex_lock(&ctx->lock);
	/*
	 * Followed under the lock that zcr_ctx_job_ep() switches under: no DATA
	 * goes on an endpoint once its sends moved, so none can overtake.
	 */
	if (ep->send_via)
		ep = ep->send_via;
	r->ep = ep;
	/* Its acknowledgement may come behind a message we deferred. */
	if (sync && !zcr_list_empty(&ctx->stalled))
		__zcr_match_release_deferred_locked(ctx, ep->rank);
	ret = __zcr_ep_send_locked(ep, r);
	/*
	 * Read under the lock: once it is dropped the progress thread may
	 * complete r (and write r->done) at any time.
	 */
	wake = !ret && ctx->thread_busy && !r->done;
	reaped = !ret && reap && reap_now_locked(ctx, r);
	pthread_mutex_unlock(&ctx->lock);
	if (ret) {
		req_free(ctx, r);
		return ret;
	}
	if (wake)
		__zcr_wake(ctx);
	*out = r;
	return reaped;
}

int __zcr_send_now(struct zcr_ep *ep, uint32_t comm, const void *buf,
		   size_t len, int tag, struct zcr_status *st, size_t st_size)
{
	struct zcr_status s = { 0 };
	struct zcr_ctx *ctx;
	int ret;

	if (!ep || (len && !buf) || tag < 0)
		return -EINVAL;
	ZCR_PROBE(ZCR_PP_SEND_IN);
	ctx = ep->ctx;
	if (len > ctx->max_msg)
		return -EMSGSIZE;
	pthread_mutex_lock(&ctx->lock);
	if (ep->send_via)	/* as __zcr_isend_as() follows it */
		ep = ep->send_via;
	ret = __zcr_ep_send_now_locked(ep, comm, buf, len, tag);
	if (!ret)
		app_seen_locked(ctx);	/* as a wait for it would */
	pthread_mutex_unlock(&ctx->lock);
	if (ret)
		return ret;
	s.source = ctx->rank;
	s.tag = tag;
	s.len = len;
	zcr_sized_out(st, st_size, &s, sizeof(s));
	return 1;
}

int zcr_isend(struct zcr_ep *ep, const void *buf, size_t len, int tag,
	      struct zcr_req **out)
{
	return __zcr_isend(ep, 0, buf, len, tag, out, false);
}

int zcr_isend_comm(struct zcr_ep *ep, uint32_t comm, const void *buf,
		   size_t len, int tag, struct zcr_req **out)
{
	return __zcr_isend(ep, comm, buf, len, tag, out, false);
}

/*
 * zcr_isend_comm(), and an eager send that the transport completes
 * within the call (shm: one cell written into the peer's ring with
 * nothing queued before it) is handed back at once with no request, as
 * zcr_start_test() does for a persistent send: MPI_Isend of a small
 * message under libzcrecv-mpi makes no request and its MPI_Wait no call.
 */
int zcr_isend_test_comm(struct zcr_ep *ep, uint32_t comm, const void *buf,
			size_t len, int tag, struct zcr_req **out,
			struct zcr_status *st, size_t st_size)
{
	int ret;

	if (!ep || !out || !st || st_size < ZCR_STATUS_SIZE_0_1)
		return -EINVAL;
	ret = __zcr_send_now(ep, comm, buf, len, tag, st, st_size);
	if (ret != -EAGAIN) {
		*out = NULL;
		return ret;
	}
	ret = __zcr_isend_as(ep, comm, buf, len, tag, out, false, false, true);
	if (ret != 1)
		return ret;
	/* Complete already (the general path's eager send): reaped, its
	 * outcome in *st, as zcr_start_test() hands it. */
	__zcr_req_finish(*out, st, st_size);
	*out = NULL;
	return 1;
}

int zcr_issend_comm(struct zcr_ep *ep, uint32_t comm, const void *buf,
		    size_t len, int tag, struct zcr_req **out)
{
	return __zcr_isend(ep, comm, buf, len, tag, out, true);
}

int zcr_issend(struct zcr_ep *ep, const void *buf, size_t len, int tag,
	       struct zcr_req **out)
{
	return __zcr_isend(ep, 0, buf, len, tag, out, true);
}

/*
 * A receive with nothing matched (just posted, waited on, or tested:
 * MPI_Waitall polls tests): its sender may pre-send what it has of the
 * message already (lib/prefetch), once per receive.
 */
static void pf_ask_locked(struct zcr_ctx *ctx, struct zcr_req *r)
{
	if (ctx->pf && r->kind == ZCR_REQ_RECV && r->posted && !r->pf_asked) {
		r->pf_asked = true;
		__zcr_ep_pf_ask_locked(ctx, r);
	}
}

/*
 * site: the caller's return address, what the predictor calls a site;
 * known: the persistent receive starting it (persist.c), or NULL.
 */
int __zcr_irecv(struct zcr_ctx *ctx, uint32_t comm, void *buf, size_t size,
		int src, int tag, struct zcr_req **out, const void *site,
		struct zcr_expect *known, bool reap, bool learn)
{
	struct zcr_call c = { 0 };
	struct zcr_req *r;
	bool wake, reaped;
	int ret;

	ZCR_PROBE(ZCR_PP_RECV_IN);
	if (!ctx || !out || (size && !buf) || src < ZCRECV_ANY_SOURCE ||
	    tag < ZCRECV_ANY_TAG)
		return -EINVAL;
	r = req_new(ctx, ZCR_REQ_RECV, comm);
	if (!r)
		return -ENOMEM;
	r->buf = buf;
	r->size = size;
	r->src = src;
	r->tag = tag;
	/* Until a message matches: a failed receive reports no sender. */
	r->st.source = ZCRECV_ANY_SOURCE;
	r->st.tag = ZCRECV_ANY_TAG;
	c.buf = (uintptr_t)buf;
	c.size = size;
	c.src = src;
	c.tag = tag;
	c.site = (uintptr_t)site;
	pthread_mutex_lock(&ctx->lock);
	/*
	 * Only receives that could ever take a remap teach the predictor:
	 * one of less than a page holds no whole page, so where its message
	 * is staged does not matter (match asks no prediction for such a
	 * message either: __zcr_pred_small()). The selector's observe is
	 * about 8000 instructions, half of an 8-byte round trip under
	 * libzcrecv-mpi when every receive paid it. Nor do receives the
	 * caller will never make again (ZCRECV_RECV_NO_LEARN): each would be
	 * a new call to the predictor, which it can never predict, and its
	 * cycle predictors look through every call logged since their head
	 * for one that repeats (up to ZCR_CYC_MAX): 0.8 us per receive
	 * growing to 4 us after 4000 of them (benchmarks.md, History "The
	 * carried all-to-all and all-gather against stock, call by call").
	 */
	if (known)
		__zcr_match_expect_started_locked(ctx, known);
	else if (!learn)
		__zcr_match_unlearn_locked(ctx, comm);
	else if (!__zcr_pred_small(ctx, size))
		__zcr_pred_observe(ctx->pred, &c);
	ret = __zcr_post_recv_locked(ctx, r);
	/*
	 * Posted with nothing to match: ask now rather than at the wait,
	 * so that what the sender has ready moves while we still compute
	 * or send (its own rules say what is ready).
	 */
	if (!ret)
		pf_ask_locked(ctx, r);
	if (!zcr_list_empty(&ctx->acks))	/* it matched a sync send */
		__zcr_ep_acks_flush_locked(ctx);
	/*
	 * Staging freed by a delivery: the progress engine drains stalls.
	 * r->done is read here, under the lock, never after it is dropped.
	 */
	wake = !ret && ctx->thread_busy &&
	       (ctx->drain_pending || !r->done);
	reaped = !ret && reap && reap_now_locked(ctx, r);
	pthread_mutex_unlock(&ctx->lock);
	if (ret) {
		req_free(ctx, r);
		return ret;
	}
	if (wake)
		__zcr_wake(ctx);
	*out = r;
	ZCR_PROBE(ZCR_PP_RECV_OUT);
	return reaped;
}

int __zcr_recv_now(struct zcr_ctx *ctx, uint32_t comm, void *buf,
		   size_t size, int src, int tag, struct zcr_expect *known,
		   struct zcr_status *st, size_t st_size)
{
	struct zcr_status s = { 0 };
	bool took, wake;

	if (!ctx || (size && !buf) || src < ZCRECV_ANY_SOURCE ||
	    tag < ZCRECV_ANY_TAG)
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	took = __zcr_match_take_now_locked(ctx, comm, src, tag, buf, size, &s);
	if (took) {
		/* What __zcr_irecv() does around a receive taking it. */
		if (known)
			__zcr_match_expect_started_locked(ctx, known);
		if (!zcr_list_empty(&ctx->acks))   /* a sync send's */
			__zcr_ep_acks_flush_locked(ctx);
		app_seen_locked(ctx);
	}
	/* Staging freed: the progress engine drains stalls. */
	wake = took && ctx->thread_busy && ctx->drain_pending;
	pthread_mutex_unlock(&ctx->lock);
	if (!took)
		return -EAGAIN;
	if (wake)
		__zcr_wake(ctx);
	zcr_sized_out(st, st_size, &s, sizeof(s));
	return 1;
}

int zcr_irecv(struct zcr_ctx *ctx, void *buf, size_t size, int src, int tag,
	      struct zcr_req **out)
{
	return __zcr_irecv(ctx, 0, buf, size, src, tag, out,
			   __builtin_return_address(0), NULL, false, true);
}

int zcr_irecv_comm(struct zcr_ctx *ctx, uint32_t comm, void *buf,
		   size_t size, int src, int tag, struct zcr_req **out)
{
	return __zcr_irecv(ctx, comm, buf, size, src, tag, out,
			   __builtin_return_address(0), NULL, false, true);
}

int zcr_irecv_flags_comm(struct zcr_ctx *ctx, uint32_t comm, void *buf,
			 size_t size, int src, int tag, unsigned int flags,
			 struct zcr_req **out)
{
	if (flags & ~ZCRECV_RECV_NO_LEARN)
		return -EINVAL;
	return __zcr_irecv(ctx, comm, buf, size, src, tag, out,
			   __builtin_return_address(0), NULL, false,
			   !(flags & ZCRECV_RECV_NO_LEARN));
}

/*
 * zcr_irecv_flags_comm(), and a receive that its posting completed (its
 * message was there in full: a halo's, a reply that came first) is
 * handed back at once with its status, as zcr_start_test() does for a
 * persistent receive: MPI_Irecv under libzcrecv-mpi then leaves no
 * request and its MPI_Wait no call into the library. One pass under the
 * lock, as zcr_irecv_comm()'s: trying the queue first with
 * __zcr_recv_now() would put a second lock and unlock on the way of every
 * receive posted before its message (a ping-pong's, where the posting
 * stands between the reply and the next ping), to save the request's
 * allocation (a spare, zcr_zero()) only on the others.
 */
int zcr_irecv_test_comm(struct zcr_ctx *ctx, uint32_t comm, void *buf,
			size_t size, int src, int tag, unsigned int flags,
			struct zcr_req **out, struct zcr_status *st,
			size_t st_size)
{
	int ret;

	if (!ctx || !out || !st || st_size < ZCR_STATUS_SIZE_0_1 ||
	    (flags & ~ZCRECV_RECV_NO_LEARN))
		return -EINVAL;
	ret = __zcr_irecv(ctx, comm, buf, size, src, tag, out,
			  __builtin_return_address(0), NULL, true,
			  !(flags & ZCRECV_RECV_NO_LEARN));
	if (ret != 1)
		return ret;
	/* Reaped already: its outcome in *st, the request a spare again. */
	__zcr_req_finish(*out, st, st_size);
	*out = NULL;
	return 1;
}

/*
 * A progress pass without waiting, on the application's thread (a test or
 * a probe): the application is in the library again and again, so the
 * progress thread stays parked a while longer (ctx.h; counted, as
 * app_seen_locked() does, not a clock read per test).
 */
static void app_progress_locked(struct zcr_ctx *ctx)
{
	__zcr_progress_locked(ctx, 0);
	app_seen_locked(ctx);
}

/* The arguments every probe checks: flags and the caller's status size. */
static bool probe_args_bad(struct zcr_ctx *ctx, int src, int tag,
			   unsigned int flags, const struct zcr_status *st,
			   size_t st_size)
{
	return !ctx || src < ZCRECV_ANY_SOURCE || tag < ZCRECV_ANY_TAG ||
	       (flags & ~ZCRECV_PROBE_NO_PROGRESS) ||
	       (st && st_size < ZCR_STATUS_SIZE_0_1);
}

int zcr_iprobe_comm(struct zcr_ctx *ctx, uint32_t comm, int src, int tag,
		    unsigned int flags, struct zcr_status *st, size_t st_size)
{
	struct zcr_status tmp;
	bool found;

	if (probe_args_bad(ctx, src, tag, flags, st, st_size))
		return -EINVAL;
	pthread_mutex_lock(&ctx->lock);
	found = __zcr_match_probe_locked(ctx, comm, src, tag, &tmp);
	if (!found && !(flags & ZCRECV_PROBE_NO_PROGRESS)) {
		app_progress_locked(ctx);
		found = __zcr_match_probe_locked(ctx, comm, src, tag, &tmp);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (found && st)
		zcr_sized_out(st, st_size, &tmp, sizeof(tmp));
	return found;
}

int zcr_iprobe(struct zcr_ctx *ctx, uint32_t comm, int src, int tag,
	       struct zcr_status *st)
{
	return zcr_iprobe_comm(ctx, comm, src, tag, 0, st,
			       ZCR_STATUS_SIZE_0_1);
}

int zcr_improbe_comm(struct zcr_ctx *ctx, uint32_t comm, int src, int tag,
		     unsigned int flags, struct zcr_message **msg,
		     struct zcr_status *st, size_t st_size)
{
	struct zcr_status tmp;
	struct zcr_req *r;
	int ret;

	if (!msg || probe_args_bad(ctx, src, tag, flags, st, st_size))
		return -EINVAL;
	r = req_new(ctx, ZCR_REQ_RECV, comm);
	if (!r)
		return -ENOMEM;
	r->claim = true;
	pthread_mutex_lock(&ctx->lock);
	ret = __zcr_match_claim_locked(ctx, r, src, tag);
	if (!ret && !(flags & ZCRECV_PROBE_NO_PROGRESS)) {
		app_progress_locked(ctx);
		ret = __zcr_match_claim_locked(ctx, r, src, tag);
	}
	__zcr_ep_acks_flush_locked(ctx);
	if (ret == 1) {
		tmp = r->st;
		tmp.error = 0;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (ret != 1) {
		req_free(ctx, r);
		return ret;
	}
	if (st)
		zcr_sized_out(st, st_size, &tmp, sizeof(tmp));
	*msg = (struct zcr_message *)r;
	return 1;
}

int zcr_improbe(struct zcr_ctx *ctx, uint32_t comm, int src, int tag,
		struct zcr_message **msg, struct zcr_status *st)
{
	return zcr_improbe_comm(ctx, comm, src, tag, 0, msg, st,
				ZCR_STATUS_SIZE_0_1);
}

int zcr_imrecv(struct zcr_message *msg, void *buf, size_t size,
	       struct zcr_req **out)
{
	struct zcr_req *r = (struct zcr_req *)msg;
	struct zcr_call c = { 0 };
	struct zcr_ctx *ctx;
	bool wake;

	if (!r || !out || (size && !buf) || !r->claim)
		return -EINVAL;
	ctx = r->ctx;
	c.buf = (uintptr_t)buf;
	c.size = size;
	c.src = r->src;
	c.tag = r->tag;
	c.site = (uintptr_t)__builtin_return_address(0);
	pthread_mutex_lock(&ctx->lock);
	if (!__zcr_pred_small(ctx, size))
		__zcr_pred_observe(ctx->pred, &c);
	__zcr_match_mrecv_locked(ctx, r, buf, size);
	wake = ctx->thread_busy && (ctx->drain_pending || !r->done);
	pthread_mutex_unlock(&ctx->lock);
	if (wake)
		__zcr_wake(ctx);
	*out = r;
	return 0;
}

static int finish(struct zcr_req *r, struct zcr_status *st, size_t st_size)
{
	int err;

	/* A claimed message that landed in a buffer of its own. */
	if (r->own) {
		size_t n = r->st.len < r->usize ? r->st.len : r->usize;

		if (r->ubuf && n)
			memcpy(r->ubuf, r->own, n);
		if (!r->st.error && r->st.len > r->usize)
			r->st.error = -EMSGSIZE;
		free(r->own);
	}
	err = r->st.error;

	if (st)
		zcr_sized_out(st, st_size, &r->st, sizeof(r->st));
	req_free(r->ctx, r);
	return err;
}

int __zcr_req_finish(struct zcr_req *r, struct zcr_status *st, size_t st_size)
{
	return finish(r, st, st_size);
}

int zcr_test_sized(struct zcr_req *r, struct zcr_status *st, size_t st_size)
{
	struct zcr_ctx *ctx;
	bool done;
	int err;

	if (!r || (st && st_size < ZCR_STATUS_SIZE_0_1))
		return -EINVAL;
	ctx = r->ctx;
	pthread_mutex_lock(&ctx->lock);
	/* Tested in a loop is waited on too (MPI_Waitall polls tests). */
	pf_ask_locked(ctx, r);
	if (!r->done)
		app_progress_locked(ctx);
	done = r->done;
	if (done)
		reaped_locked(r);
	pthread_mutex_unlock(&ctx->lock);
	if (!done)
		return 0;
	err = finish(r, st, st_size);
	ZCR_PROBE(ZCR_PP_WAITED);
	return err ? err : 1;
}

int zcr_test(struct zcr_req *r, struct zcr_status *st)
{
	return zcr_test_sized(r, st, ZCR_STATUS_SIZE_0_1);
}

/* Milliseconds left until the monotonic deadline end (0 when past). */
static int ms_left(uint64_t end)
{
	uint64_t now = zcr_now_ns();

	return now >= end ? 0 : (int)((end - now + 999999) / 1000000);
}

/*
 * Progress (or wait for the progress thread) until r completes or
 * timeout_ms passes (-1: no limit). 0, -ETIMEDOUT or a progress error;
 * the request is freed only when it completed.
 */
static int wait_for(struct zcr_req *r, struct zcr_status *st,
		    size_t st_size, int timeout_ms)
{
	struct zcr_ctx *ctx = r->ctx;
	int ret = 0, left = 100;
	bool done, wake;
	uint64_t end;

	pthread_mutex_lock(&ctx->lock);
	if (r->done) {
		/*
		 * Nothing to wait for (an eager send completes in its
		 * zcr_isend()): no progress, so no doorbell taken from the
		 * progress thread either; only its grace starts again, the
		 * application being back in the library.
		 */
		app_seen_locked(ctx);
		reaped_locked(r);
		pthread_mutex_unlock(&ctx->lock);
		return finish(r, st, st_size);
	}
	end = timeout_ms < 0 ? UINT64_MAX :
	      zcr_now_ns() + (uint64_t)timeout_ms * 1000000;
	/*
	 * We drive progress ourselves, the progress thread parks meanwhile:
	 * the receive completes on this thread, with no hand-over between
	 * threads, and only one thread runs while the peer answers (page
	 * moves, TLB flushes and the peer's processor are not shared with a
	 * second spinner).
	 */
	ctx->waiters++;
	pf_ask_locked(ctx, r);
	if (!r->done) {
		r->waited = true;
		r->waiter = pthread_self();
		r->waiter_fd = __zcr_thread_wake_fd();
	}
	while (!r->done) {
		/* Progress at least once, even with no time left (0 ms). */
		if (end != UINT64_MAX) {
			left = ms_left(end);
			if (left > 100)
				left = 100;
		}
		ret = __zcr_progress_locked(ctx, left);
		if (ret < 0)
			break;
		ret = 0;
		if (!r->done && end != UINT64_MAX && !ms_left(end)) {
			ret = -ETIMEDOUT;
			break;
		}
	}
	/*
	 * The last waiter leaves: a count, not a clock read on the way out
	 * of the wait that a message ended (22 ns of one way of an 8-byte
	 * message); app_seen_locked() reads the clock and pushes the park's
	 * timer every park_stride calls, or at once if the timer is disarmed
	 * (the thread sleeps untimed while anyone waits: this arms it). If
	 * the thread sleeps in poll, we may have taken the doorbells it was
	 * waiting on: wake it, so that it sleeps again with its own
	 * announcements.
	 */
	if (!--ctx->waiters)
		app_seen_locked(ctx);
	wake = !ctx->waiters && ctx->thread_busy;
	done = r->done;
	if (done)
		reaped_locked(r);
	r->waited = false;
	if (r->woken) {
		uint64_t v;

		/* Not to end the next wait of this thread for nothing. */
		if (read(r->waiter_fd, &v, sizeof(v)) < 0) {
			/* Already read by our poll. */
		}
		r->woken = false;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (wake)
		__zcr_wake(ctx);
	if (!done)
		return ret;	/* the request stays pending */
	ret = finish(r, st, st_size);
	ZCR_PROBE(ZCR_PP_WAITED);
	return ret;
}

int zcr_wait_sized(struct zcr_req *r, struct zcr_status *st, size_t st_size,
		   int timeout_ms)
{
	if (!r || timeout_ms < -1 || (st && st_size < ZCR_STATUS_SIZE_0_1))
		return -EINVAL;
	return wait_for(r, st, st_size, timeout_ms);
}

int zcr_wait(struct zcr_req *r, struct zcr_status *st)
{
	return zcr_wait_sized(r, st, ZCR_STATUS_SIZE_0_1, -1);
}

int zcr_wait_timeout(struct zcr_req *r, struct zcr_status *st,
		     int timeout_ms)
{
	return zcr_wait_sized(r, st, ZCR_STATUS_SIZE_0_1, timeout_ms);
}

int zcr_cancel(struct zcr_req *r)
{
	int ret;

	if (!r)
		return -EINVAL;
	if (r->kind != ZCR_REQ_RECV)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&r->ctx->lock);
	if (r->done)
		ret = -EBUSY;
	else if (r->offered)	/* its sender may be writing into it */
		ret = __zcr_ep_cancel_offered_locked(r);
	else
		ret = __zcr_match_cancel_locked(r->ctx, r);
	pthread_mutex_unlock(&r->ctx->lock);
	return ret;
}

int zcr_send(struct zcr_ep *ep, const void *buf, size_t len, int tag)
{
	struct zcr_req *r;
	int ret;

	ret = zcr_isend(ep, buf, len, tag, &r);
	if (ret)
		return ret;
	return zcr_wait(r, NULL);
}

int zcr_recv_sized(struct zcr_ctx *ctx, void *buf, size_t size, int src,
		   int tag, struct zcr_status *st, size_t st_size)
{
	struct zcr_req *r;
	int ret;

	if (st && st_size < ZCR_STATUS_SIZE_0_1)
		return -EINVAL;
	ret = zcr_irecv(ctx, buf, size, src, tag, &r);
	if (ret)
		return ret;
	return zcr_wait_sized(r, st, st_size, -1);
}

int zcr_recv(struct zcr_ctx *ctx, void *buf, size_t size, int src, int tag,
	     struct zcr_status *st)
{
	return zcr_recv_sized(ctx, buf, size, src, tag, st,
			      ZCR_STATUS_SIZE_0_1);
}
