// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * match.c - MPI-style matching: the posted-receive queue, the unexpected
 * (early-arrival) queue, and where an early message lands.
 *
 * Matching happens when a header arrives, in order: an arriving message
 * takes the first posted receive it matches; a posted receive takes the
 * first queued message it matches, else the first header held back by a
 * stalled connection. Both queues are in order and a connection delivers
 * headers in order, so two messages of one (source, tag) are never received
 * out of order (non-overtaking).
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

struct zcr_req *__zcr_match_posted_locked(struct zcr_ctx *ctx, int src,
					  int tag)
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

/* Land the payload of ep's current message straight into receive r. */
static void land_posted(struct zcr_ep *ep, struct zcr_req *r)
{
	ep->rreq = r;
	ep->dst = r->buf;
	ep->room = ep->h.len < r->size ? ep->h.len : r->size;
	r->st.source = ep->h.src;
	r->st.tag = ep->h.tag;
	r->st.len = ep->h.len;
	ep->ctx->st.posted++;
}

/*
 * The predicted page offset of the receive that will take a message from
 * (src, tag): the first of the next predicted calls that could match it,
 * starting after the receives the already-queued messages will take.
 */
size_t __zcr_predict_offset_locked(struct zcr_ctx *ctx, int src, int tag,
				   uint64_t len, const void **buf)
{
	unsigned int queued = 0, k;
	struct zcr_list *pos;
	struct zcr_call c;

	(void)len;
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

void __zcr_begin_message_locked(struct zcr_ep *ep)
{
	struct zcr_ctx *ctx = ep->ctx;
	const struct zcr_remap_ops *ops;
	struct zcr_slot *slot;
	struct zcr_msg *m;
	const void *pbuf;
	struct zcr_req *r;
	size_t off;

	r = __zcr_match_posted_locked(ctx, ep->h.src, ep->h.tag);
	if (r) {
		ep->stalled = false;
		land_posted(ep, r);
		return;
	}
	off = __zcr_predict_offset_locked(ctx, ep->h.src, ep->h.tag, ep->h.len,
					  &pbuf);
	ops = __zcr_remap_pick(ctx, pbuf, ep->h.len);
	/*
	 * max_msg and staging_bytes may be lifted to UINT64_MAX: a length
	 * near 2^64 must not wrap off + len, rounded up to pages, into a
	 * small slot. It can never be staged; it waits for a receive.
	 */
	slot = NULL;
	if (ep->h.len <= SIZE_MAX - 2 * ctx->page) {
		slot = __zcr_slot_get_locked(ctx, ops, off + ep->h.len);
		if (!slot && ops != &__zcr_remap_copy)
			slot = __zcr_slot_get_locked(ctx, &__zcr_remap_copy,
						     off + ep->h.len);
	}
	m = slot ? calloc(1, sizeof(*m)) : NULL;
	if (!m) {
		if (slot)
			__zcr_slot_put_locked(ctx, slot);
		if (!ep->stalled)
			ctx->st.stalls++;
		ep->stalled = true;
		return;
	}
	ep->stalled = false;
	m->ep = ep;
	m->src = ep->h.src;
	m->tag = ep->h.tag;
	m->len = ep->h.len;
	m->slot = slot;
	m->off = off;
	zcr_list_add_tail(&m->link, &ctx->unexpected);
	ep->rmsg = m;
	ep->dst = slot->base + off;
	ep->room = ep->h.len;
	ctx->st.early++;
}

/* Copy or remap a complete staged message into receive r, free it. */
void __zcr_msg_deliver_locked(struct zcr_ctx *ctx, struct zcr_msg *m,
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
	__zcr_slot_put_locked(ctx, m->slot);
	free(m);
	__zcr_req_complete_locked(r, r->st.len > r->size ? -EMSGSIZE : 0);
	__zcr_retry_stalled_locked(ctx);
}

/* A connection paused for lack of room may land now. */
void __zcr_retry_stalled_locked(struct zcr_ctx *ctx)
{
	struct zcr_list *pos;

	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (ep->state != ZCR_EP_CLOSED && ep->stalled)
			__zcr_begin_message_locked(ep);
	}
}

bool __zcr_source_possible(struct zcr_ctx *ctx, int src)
{
	struct zcr_list *pos;

	if (src == ZCRECV_ANY_SOURCE && ctx->listen_fd >= 0)
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

int __zcr_post_recv_locked(struct zcr_ctx *ctx, struct zcr_req *r)
{
	struct zcr_list *pos;

	for (pos = ctx->unexpected.next; pos != &ctx->unexpected;
	     pos = pos->next) {
		struct zcr_msg *m = zcr_container_of(pos, struct zcr_msg, link);

		if (m->req || !__zcr_match(r->src, r->tag, m->src, m->tag))
			continue;
		if (m->complete)
			__zcr_msg_deliver_locked(ctx, m, r);
		else
			m->req = r;	/* delivered when the payload is in */
		return 0;
	}
	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (ep->state == ZCR_EP_CLOSED || !ep->stalled ||
		    !__zcr_match(r->src, r->tag, ep->h.src, ep->h.tag))
			continue;
		ep->stalled = false;
		land_posted(ep, r);
		return 0;
	}
	if (!__zcr_source_possible(ctx, r->src))
		return r->src == ZCRECV_ANY_SOURCE ? -ENOTCONN : -ECONNRESET;
	zcr_list_add_tail(&r->link, &ctx->posted);
	return 0;
}
