// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * persist.c - persistent sends and receives: zcr_send_init_comm(),
 * zcr_recv_init_comm(), zcr_start(), zcr_start_test(), zcr_preq_free().
 *
 * A persistent request keeps its arguments, checked once, and starts an
 * ordinary send or receive each time (request.c), so completion is the
 * same as for zcr_isend_comm() and zcr_irecv_comm(). A persistent receive
 * is also registered with match as a receive known in advance
 * (struct zcr_expect): early arrivals it could take are staged at its
 * buffer's page offset without asking the predictor.
 */
#include <errno.h>
#include <stdlib.h>

#include "core/core.h"
#include "core/sized.h"

struct zcr_preq {
	struct zcr_list link;		/* on ctx->preqs */
	struct zcr_ctx *ctx;
	struct zcr_ep *ep;		/* a send's */
	bool recv;
	bool sync;
	uint32_t comm;
	const void *sbuf;
	size_t len;
	int tag;
	struct zcr_expect exp;		/* a receive's: buf, size, src, tag */
	/*
	 * A receive's buffer as a transport keeps it for offers to the
	 * sender (its registration), from the first offer until the free.
	 */
	const struct zcr_transport_ops *bind_tp;
	void *bind;
};

static struct zcr_preq *preq_new(struct zcr_ctx *ctx)
{
	struct zcr_preq *p = calloc(1, sizeof(*p));

	if (p) {
		p->ctx = ctx;
		zcr_list_init(&p->exp.link);
	}
	return p;
}

int zcr_send_init_comm(struct zcr_ep *ep, uint32_t comm, const void *buf,
		       size_t len, int tag, unsigned int flags,
		       struct zcr_preq **out)
{
	struct zcr_preq *p;
	struct zcr_ctx *ctx;

	if (!ep || !out || (len && !buf) || tag < 0 ||
	    (flags & ~ZCRECV_SEND_SYNC))
		return -EINVAL;
	ctx = ep->ctx;
	if (len > ctx->max_msg)
		return -EMSGSIZE;
	p = preq_new(ctx);
	if (!p)
		return -ENOMEM;
	p->ep = ep;
	p->sync = flags & ZCRECV_SEND_SYNC;
	p->comm = comm;
	p->sbuf = buf;
	p->len = len;
	p->tag = tag;
	pthread_mutex_lock(&ctx->lock);
	zcr_list_add_tail(&p->link, &ctx->preqs);
	pthread_mutex_unlock(&ctx->lock);
	*out = p;
	return 0;
}

int zcr_recv_init_comm(struct zcr_ctx *ctx, uint32_t comm, void *buf,
		       size_t size, int src, int tag, unsigned int flags,
		       struct zcr_preq **out)
{
	struct zcr_preq *p;

	if (!ctx || !out || (size && !buf) || src < ZCRECV_ANY_SOURCE ||
	    tag < ZCRECV_ANY_TAG || flags)
		return -EINVAL;
	p = preq_new(ctx);
	if (!p)
		return -ENOMEM;
	p->recv = true;
	p->comm = comm;
	p->exp.comm = comm;
	p->exp.src = src;
	p->exp.tag = tag;
	p->exp.buf = buf;
	p->exp.size = size;
	pthread_mutex_lock(&ctx->lock);
	zcr_list_add_tail(&p->link, &ctx->preqs);
	/* Less than a page is copied wherever it lands: nothing to place. */
	if (!__zcr_pred_small(ctx, size))
		__zcr_match_expect_locked(ctx, &p->exp);
	pthread_mutex_unlock(&ctx->lock);
	*out = p;
	return 0;
}

/*
 * A started receive that nothing matched is offered to its sender where
 * the transport can take it (verbs: the sender writes the message
 * straight into the buffer). Its buffer is known and stays the same from
 * start to start, which is what makes the offer worth its registration.
 * With reap (zcr_start_test()), an operation complete when the start lets
 * go of the lock is reaped there and 1 returned (request.c).
 */
static int start(struct zcr_preq *p, struct zcr_req **out, bool reap)
{
	struct zcr_ctx *ctx;
	int ret;

	if (!p->recv)
		return __zcr_isend_as(p->ep, p->comm, p->sbuf, p->len, p->tag,
				      out, p->sync, true, reap);
	ctx = p->ctx;
	ret = __zcr_irecv(ctx, p->comm, (void *)p->exp.buf, p->exp.size,
			  p->exp.src, p->exp.tag, out, NULL,
			  zcr_list_empty(&p->exp.link) ? NULL : &p->exp, reap,
			  true);
	if (ret || p->exp.src < 0 || p->exp.tag < 0 ||
	    !__atomic_load_n(&ctx->offer_eps, __ATOMIC_RELAXED))
		return ret;
	pthread_mutex_lock(&ctx->lock);
	/* Not offered (or no memory): it stays posted, as any receive. */
	__zcr_ep_offer_recv_locked(ctx, *out, &p->bind_tp, &p->bind);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int zcr_start(struct zcr_preq *p, struct zcr_req **out)
{
	if (!p || !out)
		return -EINVAL;
	return start(p, out, false);
}

/*
 * The same, and an operation complete within the call (an eager send in
 * the ring, a receive whose message had arrived) is handed back at once:
 * no request, no wait, the context's lock taken once.
 */
int zcr_start_test(struct zcr_preq *p, struct zcr_req **out,
		   struct zcr_status *st, size_t st_size)
{
	int ret;

	if (!p || !out || !st || st_size < ZCR_STATUS_SIZE_0_1)
		return -EINVAL;
	/*
	 * A standard send the transport completes at once needs no
	 * request: its header is written from what p keeps (shm: one cell
	 * write; 63 against 78 ns a send at 8 bytes, benchmarks.md).
	 */
	if (!p->recv && !p->sync)
		ret = __zcr_send_now(p->ep, p->comm, p->sbuf, p->len, p->tag,
				     st, st_size);
	/* So does a receive whose message is queued complete. */
	else if (p->recv)
		ret = __zcr_recv_now(p->ctx, p->comm, (void *)p->exp.buf,
				     p->exp.size, p->exp.src, p->exp.tag,
				     zcr_list_empty(&p->exp.link) ? NULL :
				     &p->exp, st, st_size);
	else
		ret = -EAGAIN;
	if (ret != -EAGAIN) {
		*out = NULL;
		return ret;
	}
	ret = start(p, out, true);
	if (ret != 1)
		return ret;
	__zcr_req_finish(*out, st, st_size);
	*out = NULL;
	return 1;
}

/* p off the context's lists; the lock held. */
static void preq_del_locked(struct zcr_ctx *ctx, struct zcr_preq *p)
{
	zcr_list_del(&p->link);
	if (!zcr_list_empty(&p->exp.link))
		__zcr_match_unexpect_locked(ctx, &p->exp);
	if (p->bind)
		p->bind_tp->bind_put(ctx, p->bind);
	p->bind = NULL;
	if (!p->recv)
		__zcr_transports_send_unbind(ctx, p->sbuf, p->len);
}

void zcr_preq_free(struct zcr_preq *p)
{
	struct zcr_ctx *ctx;

	if (!p)
		return;
	ctx = p->ctx;
	pthread_mutex_lock(&ctx->lock);
	preq_del_locked(ctx, p);
	pthread_mutex_unlock(&ctx->lock);
	free(p);
}

void __zcr_preqs_fini(struct zcr_ctx *ctx)
{
	struct zcr_list *pos, *tmp;

	zcr_list_for_each_safe(pos, tmp, &ctx->preqs) {
		struct zcr_preq *p = zcr_container_of(pos, struct zcr_preq,
						      link);

		preq_del_locked(ctx, p);
		free(p);
	}
}
