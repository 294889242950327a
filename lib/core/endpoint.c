// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * endpoint.c - endpoints: listening, connecting, the handshake as the
 * application sees it, and why a connection was closed.
 */
#include <errno.h>
#include <time.h>

#include "core/core.h"

int zcr_ctx_listen(struct zcr_ctx *ctx, const char *addr)
{
	struct zcr_transport *t;
	const char *rest;
	int ret;

	if (!ctx || !addr)
		return -EINVAL;
	t = __zcr_transport_find(ctx, addr, &rest);
	if (!t)
		return -EPROTONOSUPPORT;
	ret = t->ops->listen(ctx, t->priv, rest);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&ctx->lock);
	ctx->listening = true;
	pthread_mutex_unlock(&ctx->lock);
	__zcr_wake(ctx);
	return ret;
}

int zcr_ep_connect(struct zcr_ctx *ctx, const char *addr,
		   struct zcr_ep **out)
{
	struct zcr_transport *t;
	struct zcr_ep *ep;
	const char *rest;
	void *priv;
	int ret;

	if (!ctx || !addr || !out)
		return -EINVAL;
	t = __zcr_transport_find(ctx, addr, &rest);
	if (!t)
		return -EPROTONOSUPPORT;
	pthread_mutex_lock(&ctx->lock);
	ret = __zcr_ep_live_locked(ctx) >= ctx->max_conns ? -EMFILE : 0;
	pthread_mutex_unlock(&ctx->lock);
	if (ret)
		return ret;
	ret = t->ops->connect(ctx, t->priv, rest, &priv);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&ctx->lock);
	ep = __zcr_ep_new_locked(ctx, t->ops, priv, false);
	pthread_mutex_unlock(&ctx->lock);
	if (!ep)
		return -ENOMEM;
	__zcr_wake(ctx);
	*out = ep;
	return 0;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* An accepted endpoint of rank (-1: any) not handed out yet, waiting. */
static int accept_rank(struct zcr_ctx *ctx, int rank, int timeout_ms,
		       struct zcr_ep **out)
{
	struct timespec t0;
	struct zcr_list *pos;
	int ret = -ETIMEDOUT;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_mutex_lock(&ctx->lock);
	for (;;) {
		for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
			struct zcr_ep *ep = zcr_container_of(pos,
							     struct zcr_ep,
							     link);

			if (ep->accepted && !ep->returned &&
			    ep->state == ZCR_EP_OPEN &&
			    (rank < 0 || ep->rank == rank)) {
				ep->returned = true;
				*out = ep;
				ret = 0;
				goto out;
			}
		}
		if (timeout_ms >= 0 && ms_since(&t0) >= timeout_ms)
			break;
		if (ctx->thread_on) {
			struct timespec dl;

			clock_gettime(CLOCK_REALTIME, &dl);
			dl.tv_nsec += 10 * 1000000;
			if (dl.tv_nsec >= 1000000000) {
				dl.tv_sec++;
				dl.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&ctx->cond, &ctx->lock, &dl);
		} else {
			ret = __zcr_progress_locked(ctx, 10);
			if (ret < 0)
				goto out;
			ret = -ETIMEDOUT;
		}
	}
out:
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int zcr_ep_accept(struct zcr_ctx *ctx, int timeout_ms, struct zcr_ep **out)
{
	if (!ctx || !out)
		return -EINVAL;
	return accept_rank(ctx, -1, timeout_ms, out);
}

int zcr_ep_accept_rank(struct zcr_ctx *ctx, int rank, int timeout_ms,
		       struct zcr_ep **out)
{
	if (!ctx || !out || rank < 0)
		return -EINVAL;
	return accept_rank(ctx, rank, timeout_ms, out);
}

int zcr_ep_rank(struct zcr_ep *ep)
{
	int ret;

	if (!ep)
		return -EINVAL;
	pthread_mutex_lock(&ep->ctx->lock);
	if (ep->rank >= 0)
		ret = ep->rank;
	else
		ret = ep->state == ZCR_EP_CLOSED ? -ENOTCONN : -EAGAIN;
	pthread_mutex_unlock(&ep->ctx->lock);
	return ret;
}

int zcr_ep_error(struct zcr_ep *ep, const char **msg)
{
	int ret;

	if (!ep)
		return -EINVAL;
	pthread_mutex_lock(&ep->ctx->lock);
	ret = ep->error;
	if (msg)
		*msg = ep->errmsg;	/* open: what carries it, and why */
	pthread_mutex_unlock(&ep->ctx->lock);
	return ret;
}

/* Close ep (if open); release: and free it, the caller drops its pointer. */
static void ep_close(struct zcr_ep *ep, bool release)
{
	struct zcr_ctx *ctx;

	if (!ep)
		return;
	ctx = ep->ctx;
	pthread_mutex_lock(&ctx->lock);
	if (ep->state != ZCR_EP_CLOSED) {
		int q = ctx->quiet;

		ctx->quiet = 1;
		__zcr_ep_fail_locked(ep, -ESHUTDOWN, "closed locally");
		ctx->quiet = q;
		ctx->st.disconnects--;
	}
	if (release)
		__zcr_ep_free(ep);
	pthread_mutex_unlock(&ctx->lock);
}

/*
 * zcr_ep_close@ZCRECV_0.1 kept the closed endpoint until the context was
 * destroyed, and 0.1 programs may still read it (zcr_ep_error) after
 * closing it; from 0.2 on it is freed, or a long-running rank that
 * accepts and closes peers grows without bound. Binaries linked against
 * 0.1 keep the 0.1 behaviour.
 */
void __zcr_ep_close_0_1(struct zcr_ep *ep);
void __zcr_ep_close_0_2(struct zcr_ep *ep);
__asm__(".symver __zcr_ep_close_0_1, zcr_ep_close@ZCRECV_0.1");
__asm__(".symver __zcr_ep_close_0_2, zcr_ep_close@@ZCRECV_0.2");

void __zcr_ep_close_0_1(struct zcr_ep *ep)
{
	ep_close(ep, false);
}

void __zcr_ep_close_0_2(struct zcr_ep *ep)
{
	ep_close(ep, true);
}
