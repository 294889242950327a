// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * verbs_offer.c - offered receive buffers, the receiving side: a started
 * persistent receive tells its sender where its buffer is (ADV), and the
 * sender writes its next message with that tag straight into it with an
 * RDMA WRITE with immediate: no announcement, no READ round trip.
 *
 * Which message goes into an offered buffer is decided by a rule both
 * sides apply on their own, with no further exchange: the offer carries
 * k, the number of the sender's last message we had seen when we made it,
 * and binds the sender's first message with the offer's tag numbered
 * above k. Both sides see the messages in the same order (the sender in
 * the order it posts them, we in the order they complete in the CQ, which
 * an RC queue pair keeps), so they bind the same message. The sender
 * writes it into the buffer when it fits (and is not small enough to go
 * eager); any other message bound to the offer is sent as usual and lands
 * in the offered receive all the same. Because the receive was the first
 * one that message could take when it was offered, and left match's
 * posted queue then, MPI's order holds: no receive posted after it takes
 * the message, and no message sent after it takes the receive.
 *
 * Cancelling an offered receive needs the sender's word (REVOKE, answered
 * with REVOKED): until then a write may be on its way. The answer comes
 * behind any message the sender had bound to the offer, so when it
 * arrives with nothing bound, nothing will be. The buffer's registration
 * is the persistent receive's (struct vbind), made once and kept across
 * starts; it pins the buffer, so an early message staged for that
 * receive is copied into it, never remapped (Documentation/verbs.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "base/ctx.h"
#include "match/match.h"
#include "transport/transport.h"
#include "transport/verbs/verbs_priv.h"

struct vadv *__zcr_verbs_adv_id(struct vep *ve, uint32_t id)
{
	struct zcr_list *pos;

	for (pos = ve->advs.next; pos != &ve->advs; pos = pos->next) {
		struct vadv *ad = zcr_container_of(pos, struct vadv, link);

		if (ad->id == id)
			return ad;
	}
	return NULL;
}

struct vadv *__zcr_verbs_adv_bound(struct vep *ve, uint64_t seq)
{
	struct zcr_list *pos;

	for (pos = ve->advs.next; pos != &ve->advs; pos = pos->next) {
		struct vadv *ad = zcr_container_of(pos, struct vadv, link);

		if (ad->bound == seq)
			return ad;
	}
	return NULL;
}

static struct vadv *adv_tag(struct vep *ve, int tag)
{
	struct zcr_list *pos;

	for (pos = ve->advs.next; pos != &ve->advs; pos = pos->next) {
		struct vadv *ad = zcr_container_of(pos, struct vadv, link);

		if (ad->tag == tag)
			return ad;
	}
	return NULL;
}

void __zcr_verbs_bind_put(struct zcr_ctx *ctx, void *bind)
{
	struct vbind *b = bind;

	(void)ctx;
	if (!b || --b->refs)
		return;
	if (b->mr) {
		if (!foreign(b->vc))
			__zcr_verbs_dereg(b->vc, b->mr);
		b->vc->st.live_adv_mrs--;
	}
	free(b);
}

/* The offer ad is settled (its message came, or it was revoked). */
void __zcr_verbs_adv_end(struct vep *ve, struct vadv *ad)
{
	zcr_list_del(&ad->link);
	ve->nadv--;
	__zcr_verbs_bind_put(NULL, ad->b);
	free(ad);
}

/* Does a message with this tag wait in the data queue, not yet matched? */
static bool queued_tag(struct vep *ve, int tag)
{
	unsigned int j;

	for (j = ve->arriving ? 1 : 0; j < ve->dq_n; j++) {
		struct vhdr h;

		memcpy(&h, rcell(ve, ve->dq[(ve->dq_head + j) % NRECV]), HDR);
		if (h.tag == tag)
			return true;
	}
	return false;
}

int __zcr_verbs_recv_offer(struct zcr_ep *ep, struct zcr_req *r, void **bind)
{
	struct vep *ve = V(ep);
	struct vctx *vc = ve->vc;
	struct vbind *b = *bind;
	struct vadv *ad;
	struct vhdr h;
	int ret;

	/*
	 * Eager-sized receives are not worth an offer: their message comes
	 * whole in one SEND anyway. One offer per tag at a time: the next
	 * one waits until the first has its message.
	 */
	if (!ve->adv_ok || ve->stage != 3 || ve->gone || ve->broken ||
	    foreign(vc) || r->comm || r->size <= EAGER_MAX ||
	    ve->nadv >= ADV_MAX || !ve->nsfree || adv_tag(ve, r->tag) ||
	    queued_tag(ve, r->tag))
		return 0;
	if (b && (b->buf != r->buf || b->size != r->size))
		return 0;
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b)
			return -ENOMEM;
		b->vc = vc;
		b->buf = r->buf;
		b->size = r->size;
		b->refs = 1;
		*bind = b;
	}
	if (b->failed)
		return 0;
	if (!b->mr) {
		b->mr = __zcr_verbs_reg(vc, r->buf, r->size,
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE);
		if (!b->mr) {
			b->failed = true;	/* RLIMIT_MEMLOCK: as usual */
			vc->st.reg_failed++;
			return 0;
		}
		vc->st.live_adv_mrs++;
	}
	ad = calloc(1, sizeof(*ad));
	if (!ad)
		return -ENOMEM;
	if (!__zcr_match_unpost_first_locked(ep->ctx, r)) {
		free(ad);
		return 0;
	}
	ad->id = ++ve->adv_id;
	ad->tag = r->tag;
	ad->k = ep->recv_seq;
	ad->r = r;
	ad->b = b;
	b->refs++;
	zcr_list_add_tail(&ad->link, &ve->advs);
	ve->nadv++;
	memset(&h, 0, sizeof(h));
	h.type = T_ADV;
	h.src = ep->ctx->rank;
	h.tag = r->tag;
	h.len = r->size;
	h.seq = ad->k;
	h.addr = (uintptr_t)r->buf;
	h.rkey = b->mr->rkey;
	h.cookie = ad->id;
	ret = __zcr_verbs_post_msg(ve, &h, NULL, 0);
	if (ret)	/* the close completes r */
		__zcr_ep_fail_locked(ep, ret, "verbs: cannot post a send");
	else
		vc->st.adv_sent++;
	return 1;
}

int __zcr_verbs_recv_cancel(struct zcr_ep *ep, struct zcr_req *r)
{
	struct vep *ve = V(ep);
	struct zcr_list *pos;
	struct vadv *ad = NULL;

	for (pos = ve->advs.next; pos != &ve->advs; pos = pos->next) {
		ad = zcr_container_of(pos, struct vadv, link);
		if (ad->r == r)
			break;
		ad = NULL;
	}
	/*
	 * Bound: its message is in our CQ already. Gone: nothing can answer
	 * the revocation; the connection's end completes it.
	 */
	if (!ad || ad->bound || ve->gone || ep->state != ZCR_EP_OPEN)
		return -EBUSY;
	if (ad->revoking)
		return 0;
	if (__zcr_verbs_queue_ctl(ve, T_REVOKE, ad->id))
		return -ENOMEM;
	ad->revoking = true;
	ve->revokes++;
	if (__zcr_verbs_post_fins(ve))
		__zcr_ep_fail_locked(ep, -EIO, "verbs: cannot post a send");
	return 0;
}

/*
 * A data message (h, numbered ve->cq_seq) completed in the CQ: the first
 * with an offer's tag numbered above its k is that offer's. For a
 * header that breaks the numbering this binds nothing that matters: the
 * data queue fails the endpoint when it gets there.
 */
void __zcr_verbs_adv_bind(struct zcr_ep *ep, const struct vhdr *h)
{
	struct vep *ve = V(ep);
	struct vadv *ad;

	if (!ve->nadv)
		return;
	ad = adv_tag(ve, h->tag);
	if (ad && !ad->bound && ve->cq_seq > ad->k)
		ad->bound = ve->cq_seq;
}

/* The peer's answer to our REVOKE: nothing bound by now, nothing will be. */
void __zcr_verbs_rx_revoked(struct zcr_ep *ep, const struct vhdr *h)
{
	struct vep *ve = V(ep);
	struct vadv *ad = __zcr_verbs_adv_id(ve, (uint32_t)h->cookie);
	struct zcr_req *r;

	/*
	 * Not there any more: its message came before this answer (it was
	 * bound) and ended it; it was revoked all the same.
	 */
	if (!ve->revokes || (ad && !ad->revoking) ||
	    (!ad && (uint32_t)h->cookie > ve->adv_id)) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO, "verbs: REVOKED for no "
				     "revoked offer");
		return;
	}
	ve->revokes--;
	if (!ad || ad->bound)
		return;		/* its message completes the receive */
	r = ad->r;
	__zcr_verbs_adv_end(ve, ad);
	ve->vc->st.adv_revoked++;
	__zcr_req_complete_locked(r, -ECANCELED);
}

/*
 * The endpoint closes: our offered receives fail as any receive from a
 * lost peer; the peer's offers are forgotten.
 */
void __zcr_verbs_advs_close(struct zcr_ep *ep, struct vep *ve)
{
	struct zcr_list *pos, *tmp;

	zcr_list_for_each_safe(pos, tmp, &ve->advs) {
		struct vadv *ad = zcr_container_of(pos, struct vadv, link);
		struct zcr_req *r = ad->r;

		__zcr_verbs_adv_end(ve, ad);
		if (ep && !r->done)
			__zcr_req_complete_locked(r, -ECONNRESET);
	}
	zcr_list_for_each_safe(pos, tmp, &ve->padvs) {
		zcr_list_del(pos);
		free(zcr_container_of(pos, struct vpadv, link));
	}
	ve->npadv = 0;
}
