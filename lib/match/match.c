// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * match.c - MPI-style matching: the posted-receive queue, the unexpected
 * (early-arrival) queue, stalled arrivals, and where an early message lands.
 *
 * Matching happens when a header arrives, in order: an arriving message
 * takes the first posted receive it matches; a posted receive takes the
 * first queued message it matches, else the first stalled header. Both
 * queues are in order and an endpoint delivers headers in order, so two
 * messages of one (source, tag) are never received out of order
 * (non-overtaking).
 *
 * Nothing here calls a transport or the progress engine: a transport calls
 * in (match.h), and whatever match decides is state the transport reads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/ctx.h"
#include "match/match.h"

#define PREDICT_SCAN	8

bool __zcr_match(int want_src, int want_tag, int src, int tag)
{
	return (want_src == ZCRECV_ANY_SOURCE || want_src == src) &&
	       (want_tag == ZCRECV_ANY_TAG || want_tag == tag);
}

static struct zcr_req *match_posted(struct zcr_ctx *ctx, int src, int tag)
{
	struct zcr_list *pos;

	for (pos = ctx->posted.next; pos != &ctx->posted; pos = pos->next) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		if (__zcr_match(r->src, r->tag, src, tag)) {
			zcr_list_del(&r->link);
			return r;
		}
	}
	return NULL;
}

static void unstall(struct zcr_arrival *a)
{
	if (a->state == ZCR_RX_STALLED)
		zcr_list_del(&a->stall_link);
}

/* Land the payload of arrival a straight into receive r. */
static void land_posted(struct zcr_ctx *ctx, struct zcr_arrival *a,
			struct zcr_req *r)
{
	unstall(a);
	a->state = ZCR_RX_LANDING;
	a->req = r;
	a->msg = NULL;
	a->dst = r->buf;
	a->room = a->len < r->size ? a->len : r->size;
	r->st.source = a->src;
	r->st.tag = a->tag;
	r->st.len = a->len;
	ctx->st.posted++;
}

/*
 * The predicted page offset of the receive that will take a message from
 * (src, tag): the first of the next predicted calls that could match it,
 * starting after the receives the already-queued messages will take.
 */
static size_t predict_offset(struct zcr_ctx *ctx, int src, int tag,
			     const void **buf)
{
	unsigned int queued = 0, k;
	struct zcr_list *pos;
	struct zcr_call c;

	for (pos = ctx->unexpected.next; pos != &ctx->unexpected;
	     pos = pos->next)
		queued++;
	for (k = queued + 1; k <= queued + PREDICT_SCAN; k++) {
		if (!__zcr_pred_predict(ctx->pred, k, &c))
			break;
		if ((c.src < 0 || c.src == src) && (c.tag < 0 || c.tag == tag)) {
			*buf = (const void *)(uintptr_t)c.buf;
			return (size_t)(c.buf & (ctx->page - 1));
		}
	}
	*buf = NULL;
	return 0;
}

/* Find a landing for a: a posted receive, else staging. 0 or -EAGAIN. */
static int find_landing(struct zcr_ctx *ctx, struct zcr_arrival *a)
{
	const struct zcr_remap_ops *ops;
	struct zcr_slot *slot;
	struct zcr_msg *m;
	const void *pbuf;
	struct zcr_req *r;
	size_t off;

	r = match_posted(ctx, a->src, a->tag);
	if (r) {
		land_posted(ctx, a, r);
		return 0;
	}
	off = predict_offset(ctx, a->src, a->tag, &pbuf);
	ops = __zcr_remap_pick(ctx, pbuf, a->len);
	/*
	 * max_msg and staging_bytes may be lifted to UINT64_MAX: a length
	 * near 2^64 must not wrap off + len, rounded up to pages, into a
	 * small slot. It can never be staged; it waits for a receive.
	 */
	slot = NULL;
	if (a->len <= SIZE_MAX - 2 * ctx->page) {
		slot = __zcr_slot_get_locked(ctx, ops, off + a->len);
		if (!slot && ops != &__zcr_remap_copy)
			slot = __zcr_slot_get_locked(ctx, &__zcr_remap_copy,
						     off + a->len);
	}
	m = slot ? calloc(1, sizeof(*m)) : NULL;
	if (!m) {
		if (slot)
			__zcr_slot_put_locked(ctx, slot);
		if (a->state != ZCR_RX_STALLED) {
			ctx->st.stalls++;
			a->state = ZCR_RX_STALLED;
			zcr_list_add_tail(&a->stall_link, &ctx->stalled);
		}
		return -EAGAIN;
	}
	unstall(a);
	m->src = a->src;
	m->tag = a->tag;
	m->len = a->len;
	m->slot = slot;
	m->off = off;
	zcr_list_add_tail(&m->link, &ctx->unexpected);
	a->state = ZCR_RX_LANDING;
	a->msg = m;
	a->req = NULL;
	a->dst = slot->base + off;
	a->room = a->len;
	ctx->st.early++;
	return 0;
}

int __zcr_match_arrive_locked(struct zcr_ctx *ctx, struct zcr_arrival *a,
			      int src, int tag, uint64_t len)
{
	memset(a, 0, sizeof(*a));
	zcr_list_init(&a->stall_link);
	a->src = src;
	a->tag = tag;
	a->len = len;
	return find_landing(ctx, a);
}

/* Staging room was freed: stalled arrivals may land at the next drain. */
static void slot_freed(struct zcr_ctx *ctx, struct zcr_slot *s)
{
	__zcr_slot_put_locked(ctx, s);
	if (!zcr_list_empty(&ctx->stalled))
		ctx->drain_pending = true;
}

/* Copy or remap a complete staged message into receive r, free it. */
static void msg_deliver(struct zcr_ctx *ctx, struct zcr_msg *m,
			struct zcr_req *r)
{
	size_t n = m->len < r->size ? m->len : r->size;
	bool same = ((uintptr_t)r->buf & (ctx->page - 1)) == m->off;

	if (same)
		ctx->st.hits++;
	else
		ctx->st.misses++;
	/* A truncated message is copied: its last page is not the sender's. */
	__zcr_remap_deliver_locked(ctx, m->slot->ops, r->buf,
				   m->slot->base + m->off, n,
				   same && m->len <= r->size);
	r->st.source = m->src;
	r->st.tag = m->tag;
	r->st.len = m->len;
	ctx->st.msgs_recv++;
	zcr_list_del(&m->link);
	slot_freed(ctx, m->slot);
	free(m);
	__zcr_req_complete_locked(r, r->st.len > r->size ? -EMSGSIZE : 0);
}

void __zcr_match_payload_done_locked(struct zcr_ctx *ctx,
				     struct zcr_arrival *a)
{
	ctx->st.bytes_recv += a->len;
	if (a->req) {
		struct zcr_req *r = a->req;

		r->st.len = a->len;
		ctx->st.msgs_recv++;
		__zcr_req_complete_locked(r, a->len > r->size ? -EMSGSIZE : 0);
	} else if (a->msg) {
		struct zcr_msg *m = a->msg;

		m->complete = true;
		if (m->req)
			msg_deliver(ctx, m, m->req);
	}
	a->req = NULL;
	a->msg = NULL;
	a->state = ZCR_RX_IDLE;
}

void __zcr_match_abort_locked(struct zcr_ctx *ctx, struct zcr_arrival *a)
{
	unstall(a);
	if (a->req)
		__zcr_req_complete_locked(a->req, -ECONNRESET);
	if (a->msg) {
		struct zcr_msg *m = a->msg;

		zcr_list_del(&m->link);
		if (m->req)
			__zcr_req_complete_locked(m->req, -ECONNRESET);
		slot_freed(ctx, m->slot);
		free(m);
	}
	a->req = NULL;
	a->msg = NULL;
	a->state = ZCR_RX_IDLE;
}

int __zcr_match_drain_locked(struct zcr_ctx *ctx)
{
	struct zcr_list *pos, *tmp;
	int n = 0;

	ctx->drain_pending = false;
	zcr_list_for_each_safe(pos, tmp, &ctx->stalled) {
		struct zcr_arrival *a = zcr_container_of(pos,
							 struct zcr_arrival,
							 stall_link);

		if (find_landing(ctx, a) == 0)
			n++;
	}
	return n;
}

bool __zcr_source_possible(struct zcr_ctx *ctx, int src)
{
	struct zcr_list *pos;

	if (src == ZCRECV_ANY_SOURCE && ctx->listening)
		return true;
	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (ep->state == ZCR_EP_CLOSED)
			continue;
		if (src == ZCRECV_ANY_SOURCE || ep->rank == src ||
		    ep->state == ZCR_EP_HANDSHAKE)
			return true;
	}
	return false;
}

void __zcr_match_source_lost_locked(struct zcr_ctx *ctx, int rank, bool gone)
{
	struct zcr_list *pos, *tmp;

	/*
	 * Receives that only this peer could satisfy will never complete:
	 * those naming its rank, and those that no connection left (nor,
	 * for ANY_SOURCE, the listener) can satisfy, e.g. a source named
	 * while this connection was still in its handshake.
	 */
	zcr_list_for_each_safe(pos, tmp, &ctx->posted) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		if ((gone && r->src == rank) ||
		    !__zcr_source_possible(ctx, r->src)) {
			zcr_list_del(&r->link);
			__zcr_req_complete_locked(r, -ECONNRESET);
		}
	}
}

int __zcr_post_recv_locked(struct zcr_ctx *ctx, struct zcr_req *r)
{
	struct zcr_list *pos;

	for (pos = ctx->unexpected.next; pos != &ctx->unexpected;
	     pos = pos->next) {
		struct zcr_msg *m = zcr_container_of(pos, struct zcr_msg, link);

		if (m->req || !__zcr_match(r->src, r->tag, m->src, m->tag))
			continue;
		if (m->complete)
			msg_deliver(ctx, m, r);
		else
			m->req = r;	/* delivered when the payload is in */
		return 0;
	}
	for (pos = ctx->stalled.next; pos != &ctx->stalled; pos = pos->next) {
		struct zcr_arrival *a = zcr_container_of(pos,
							 struct zcr_arrival,
							 stall_link);

		if (__zcr_match(r->src, r->tag, a->src, a->tag)) {
			land_posted(ctx, a, r);
			return 0;
		}
	}
	if (!__zcr_source_possible(ctx, r->src))
		return r->src == ZCRECV_ANY_SOURCE ? -ENOTCONN : -ECONNRESET;
	zcr_list_add_tail(&r->link, &ctx->posted);
	return 0;
}

void __zcr_match_fini(struct zcr_ctx *ctx)
{
	struct zcr_list *pos, *tmp;

	/*
	 * Pending requests are abandoned, so they are ours to free: receives
	 * still posted, landing (a->req) or matched to a message still
	 * arriving (m->req). Completed ones are the caller's and on no list.
	 */
	zcr_list_for_each_safe(pos, tmp, &ctx->posted) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		zcr_list_del(&r->link);
		free(r);
	}
	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (ep->rx.req && !ep->rx.req->done)
			free(ep->rx.req);
		ep->rx.req = NULL;
		ep->rx.msg = NULL;
	}
	zcr_list_for_each_safe(pos, tmp, &ctx->unexpected) {
		struct zcr_msg *m = zcr_container_of(pos, struct zcr_msg, link);

		if (m->req && !m->req->done)
			free(m->req);
		zcr_list_del(&m->link);
		__zcr_slot_put_locked(ctx, m->slot);
		free(m);
	}
}
