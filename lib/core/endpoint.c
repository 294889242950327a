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

int zcr_ep_accept(struct zcr_ctx *ctx, int timeout_ms, struct zcr_ep **out)
{
	struct timespec t0;
	struct zcr_list *pos;
	int ret = -ETIMEDOUT;

	if (!ctx || !out)
		return -EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_mutex_lock(&ctx->lock);
	for (;;) {
		for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
			struct zcr_ep *ep = zcr_container_of(pos,
							     struct zcr_ep,
							     link);

			if (ep->accepted && !ep->returned &&
			    ep->state == ZCR_EP_OPEN) {
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

void zcr_ep_close(struct zcr_ep *ep)
{
	if (!ep)
		return;
	pthread_mutex_lock(&ep->ctx->lock);
	if (ep->state != ZCR_EP_CLOSED) {
		int q = ep->ctx->quiet;

		ep->ctx->quiet = 1;
		__zcr_ep_fail_locked(ep, -ESHUTDOWN, "closed locally");
		ep->ctx->quiet = q;
		ep->ctx->st.disconnects--;
	}
	pthread_mutex_unlock(&ep->ctx->lock);
}
