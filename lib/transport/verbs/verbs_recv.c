// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * verbs_recv.c - the verbs transport's receiving side: the data queue of
 * received cells in arrival order, RDMA READs of announced messages into
 * where match says, the completion queue, and a peer that went away. The
 * protocol is described in verbs.c.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "base/ctx.h"
#include "match/match.h"
#include "pagever/pagever.h"
#include "transport/transport.h"
#include "transport/verbs/verbs_priv.h"

/* ---- receiving ---- */

static int repost(struct vep *ve, uint32_t i)
{
	struct ibv_sge sg = { (uintptr_t)rcell(ve, i), CELL, ve->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wrid(W_RECV, i), .sg_list = &sg,
				  .num_sge = 1 }, *bad;

	if (ve->gone)
		return 0;	/* nothing more will come into it */
	return -ibv_post_recv(ve->qp, &wr, &bad);
}

/* Post READs of the rest of the current message (bounce: one chunk). */
static int post_reads(struct vep *ve)
{
	struct vread *rd = &ve->rd;
	struct zcr_ep *ep = ve->ep;
	int ret;

	while (rd->posted < rd->n) {
		uint64_t k = rd->n - rd->posted;
		struct ibv_sge sg;
		struct ibv_send_wr wr = { 0 }, *bad;

		if (rd->bounce) {
			if (rd->out)
				break;
			if (k > BOUNCE)
				k = BOUNCE;
			sg.addr = (uintptr_t)bounce(ve);
			sg.lkey = ve->mr->lkey;
		} else {
			if (rd->out >= RD_OUT)
				break;
			if (k > ve->vc->rd_chunk)
				k = ve->vc->rd_chunk;
			sg.addr = (uintptr_t)ep->rx.dst + rd->posted;
			sg.lkey = rd->mr->lkey;
		}
		sg.length = (uint32_t)k;
		wr.wr_id = wrid(W_READ, 0);
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = ve->cur.addr + rd->posted;
		wr.wr.rdma.rkey = ve->cur.rkey;
		ret = ibv_post_send(ve->qp, &wr, &bad);
		if (ret)
			return -ret;
		rd->posted += k;
		rd->out++;
	}
	return 0;
}

/* The current message is all in (or was empty): tell match, FIN. */
static int rndv_done(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct vread *rd = &ve->rd;
	struct vctx *vc = ve->vc;
	uint32_t cell = ve->dq[ve->dq_head];
	int ret;

	/*
	 * The slot's registration ends before match hears of the payload:
	 * the remap engine may exchange the slot's pages from then on, and
	 * no key of this registration can reach them any more.
	 */
	if (rd->mr) {
		__zcr_verbs_cache_put(vc, rd->mr, rd->ce);
		if (rd->staged && !rd->ce)
			vc->st.live_slot_mrs--;
	}
	/*
	 * READ into the posted buffer itself: the device wrote it behind
	 * the page tables' back, where no page version sees a write
	 * (pagever.h). A staged message is bumped when it lands.
	 */
	if (!rd->staged && rd->n)
		__zcr_pv_bump(ep->ctx->pv, ep->rx.dst, rd->n);
	memset(rd, 0, sizeof(*rd));
	ve->arriving = false;
	ve->dq_head = (ve->dq_head + 1) % NRECV;
	ve->dq_n--;
	ret = __zcr_verbs_queue_fin(ve, ve->cur.cookie);
	if (!ret)
		ret = repost(ve, cell);
	if (ret) {
		__zcr_ep_fail_locked(ep, ret, "verbs: cannot repost");
		return 0;
	}
	ve->ret_credits++;
	vc->st.rndv++;
	__zcr_match_payload_done_locked(ep->ctx, &ep->rx);
	return 1;
}

/* Start pulling the current RTS into ep->rx.dst. */
static int rndv_start(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct vread *rd = &ve->rd;
	struct vctx *vc = ve->vc;
	int ret;

	memset(rd, 0, sizeof(*rd));
	rd->active = true;
	rd->n = ep->rx.room < ve->cur.len ? ep->rx.room : ve->cur.len;
	rd->staged = !ep->rx.req;
	if (!rd->n)
		return rndv_done(ep);
	if (rd->staged && vc->land_copy) {
		rd->bounce = true;
	} else {
		if (rd->staged)
			rd->mr = __zcr_verbs_reg(vc, ep->rx.dst, rd->n,
						 IBV_ACCESS_LOCAL_WRITE);
		else
			rd->mr = __zcr_verbs_cache_get(vc, ep->rx.dst, rd->n,
						       &rd->ce);
		if (!rd->mr) {
			vc->st.reg_failed++;
			rd->bounce = true;
		} else if (rd->staged) {
			vc->st.live_slot_mrs++;
		}
	}
	if (rd->bounce)
		vc->st.bounced++;
	else if (rd->staged)
		vc->st.direct_staged++;
	else
		vc->st.direct_posted++;
	ret = post_reads(ve);
	if (ret)
		__zcr_ep_fail_locked(ep, ret, "verbs: cannot post RDMA READ");
	return 0;
}

/* A READ completed. */
static int read_done(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct vread *rd = &ve->rd;
	uint64_t k;
	int ret;

	if (!rd->active || !rd->out)
		return 0;
	rd->out--;
	if (rd->bounce) {
		k = rd->posted - rd->off;
		memcpy(ep->rx.dst + rd->off, bounce(ve), k);
		ve->vc->st.bounce_bytes += k;
		rd->off = rd->posted;
	} else {
		/* RC completes in order: one more chunk is in. */
		rd->off += ve->vc->rd_chunk;
		if (rd->off > rd->posted || !rd->out)
			rd->off = rd->posted;
	}
	if (rd->off == rd->n)
		return rndv_done(ep);
	ret = post_reads(ve);
	if (ret)
		__zcr_ep_fail_locked(ep, ret, "verbs: cannot post RDMA READ");
	return 0;
}

/* The type of the data message at the head of the queue (dq_n > 0). */
static uint32_t head_type(struct vep *ve)
{
	struct vhdr h;

	memcpy(&h, rcell(ve, ve->dq[ve->dq_head]), HDR);
	return h.type;
}

/* Move the data queue on as far as match lets it. */
static int rx_data(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct vhdr *h = &ve->cur;
	int n = 0;

	while (ep->state == ZCR_EP_OPEN && ve->dq_n && !ve->rd.active) {
		uint32_t cell = ve->dq[ve->dq_head];

		/*
		 * A gone peer's announcement cannot be pulled any more (its
		 * QP is gone), and its send did not complete: the message is
		 * cut short (a receive it claimed fails, a wildcard one waits
		 * for another), and what the peer sent after it, which did
		 * complete there, is still delivered.
		 */
		if (ve->gone && head_type(ve) == T_RTS) {
			if (ve->arriving)
				__zcr_match_abort_locked(ep->ctx, &ep->rx);
			else
				ep->recv_seq++;
			ve->arriving = false;
			ve->dq_head = (ve->dq_head + 1) % NRECV;
			ve->dq_n--;
			n++;
			continue;
		}
		if (!ve->arriving) {
			struct vadv *ad;

			memcpy(h, rcell(ve, cell), HDR);
			if (h->src != ep->rank || h->tag < 0 ||
			    h->seq != ep->recv_seq + 1 ||
			    h->len > ep->ctx->max_msg ||
			    (h->type == T_EAGER && h->len > EAGER_MAX)) {
				ep->ctx->st.bad_headers++;
				__zcr_ep_fail_locked(ep, -EPROTO, "verbs: "
						     "header out of protocol "
						     "(src %d, seq %llu, len "
						     "%llu)", h->src,
						     (unsigned long long)h->seq,
						     (unsigned long long)h->len);
				return n;
			}
			ep->recv_seq = h->seq;
			ve->arriving = true;
			/* An offered receive's message (verbs_offer.c). */
			ad = ve->nadv ? __zcr_verbs_adv_bound(ve, h->seq) :
			     NULL;
			if (ad) {
				struct zcr_req *r = ad->r;

				if (h->type != T_WRITE)
					ve->vc->st.adv_other++;
				__zcr_verbs_adv_end(ve, ad);
				__zcr_match_arrive_bound_locked(ep->ctx,
								&ep->rx, r,
								h->src, h->tag,
								h->len);
			} else if (__zcr_match_arrive_locked(ep->ctx, &ep->rx,
							     h->src, h->tag,
							     h->len) < 0) {
				return n;	/* stalled */
			}
		}
		if (ep->rx.state != ZCR_RX_LANDING)
			return n;
		if (h->type == T_RTS) {
			n += rndv_start(ep);
			continue;
		}
		/*
		 * A write's payload is in the buffer already, put there by
		 * the device where no page version sees it (pagever.h).
		 */
		if (h->type == T_WRITE)
			__zcr_pv_bump(ep->ctx->pv, ep->rx.dst,
				      ep->rx.room < h->len ? ep->rx.room :
				      h->len);
		if (h->type == T_EAGER && ep->rx.room)
			memcpy(ep->rx.dst, rcell(ve, cell) + HDR,
			       ep->rx.room < h->len ? ep->rx.room : h->len);
		ve->arriving = false;
		ve->dq_head = (ve->dq_head + 1) % NRECV;
		ve->dq_n--;
		if (repost(ve, cell)) {
			__zcr_ep_fail_locked(ep, -EIO, "verbs: cannot repost");
			return n;
		}
		ve->ret_credits++;
		if (h->type == T_WRITE)
			ve->vc->st.adv_written++;
		else
			ve->vc->st.eager++;
		__zcr_match_payload_done_locked(ep->ctx, &ep->rx);
		n++;
	}
	return n;
}

/* A receive completed into cell i. */
static int rx_cell(struct zcr_ep *ep, uint32_t i, uint32_t bytes)
{
	struct vep *ve = V(ep);
	struct vhdr h;

	memcpy(&h, rcell(ve, i), HDR);
	if (bytes < HDR || h.credits > DCRED ||
	    ve->credits + h.credits > DCRED ||
	    (h.type < T_EAGER || h.type > T_REVOKED) ||
	    (h.type >= T_ADV && !ve->adv_ok) ||
	    (h.type == T_EAGER && bytes != HDR + h.len) ||
	    (h.type != T_EAGER && bytes != HDR) || ve->stage != 3) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO, "verbs: message out of "
				     "protocol (type %u, %u bytes)", h.type,
				     bytes);
		return 0;
	}
	ve->credits += h.credits;
	if (h.type == T_EAGER || h.type == T_RTS) {
		ve->cq_seq++;
		__zcr_verbs_adv_bind(ep, &h);
		ve->dq[(ve->dq_head + ve->dq_n) % NRECV] = i;
		ve->dq_n++;
		return 0;
	}
	if (repost(ve, i)) {
		__zcr_ep_fail_locked(ep, -EIO, "verbs: cannot repost");
		return 0;
	}
	switch (h.type) {
	case T_FIN:
		__zcr_verbs_rx_fin(ep, &h);
		return 1;
	case T_ADV:
		__zcr_verbs_rx_adv(ep, &h);
		return 1;
	case T_REVOKE:
		__zcr_verbs_rx_revoke(ep, &h);
		return 1;
	case T_REVOKED:
		__zcr_verbs_rx_revoked(ep, &h);
		return 1;
	}
	return 0;
}

/*
 * The peer wrote a message into an offered buffer of ours: an RDMA WRITE
 * with immediate (the offer's id) completed into cell i, whose bytes it
 * did not touch. The cell gets the header the message would have had, so
 * that it takes its place in the data queue like any other.
 */
static int rx_write(struct zcr_ep *ep, uint32_t i, const struct ibv_wc *wc)
{
	struct vep *ve = V(ep);
	struct vadv *ad = NULL;
	struct vhdr h;

	if (ve->stage == 3 && ve->adv_ok && (wc->wc_flags & IBV_WC_WITH_IMM))
		ad = __zcr_verbs_adv_id(ve, ntohl(wc->imm_data));
	if (!ad || ad->bound || ve->cq_seq + 1 <= ad->k ||
	    wc->byte_len > ad->r->size) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO, "verbs: write into no "
				     "offered buffer (%u bytes)",
				     wc->byte_len);
		return 0;
	}
	ve->cq_seq++;
	ad->bound = ve->cq_seq;
	memset(&h, 0, sizeof(h));
	h.type = T_WRITE;
	h.src = ep->rank;
	h.tag = ad->tag;
	h.len = wc->byte_len;
	h.seq = ve->cq_seq;
	h.cookie = ad->id;
	memcpy(rcell(ve, i), &h, HDR);
	ve->dq[(ve->dq_head + ve->dq_n) % NRECV] = i;
	ve->dq_n++;
	return 0;
}

static const char *wr_name(int kind)
{
	return kind == W_RECV ? "receive" : kind == W_SEND ? "send" :
	       kind == W_WRITE ? "RDMA WRITE" : "RDMA READ";
}

/* One completion. */
static int handle_wc(struct zcr_ep *ep, const struct ibv_wc *wc)
{
	struct vep *ve = V(ep);
	int kind = (int)(wc->wr_id >> 56);
	uint32_t i = (uint32_t)(wc->wr_id & 0xffffffffu);

	if (wc->status != IBV_WC_SUCCESS) {
		ve->broken = true;
		/*
		 * Once the peer is gone its QP is, and ours may fail work
		 * requests to it: that ends nothing the peer sent before.
		 * A READ left unfinished fails the endpoint (gone_settle()).
		 */
		if (ve->gone)
			return 0;
		__zcr_ep_fail_locked(ep, wc->status == IBV_WC_WR_FLUSH_ERR ?
				     -ECONNRESET : -EIO, "verbs: %s failed: "
				     "%s (peer gone?)", wr_name(kind),
				     ibv_wc_status_str(wc->status));
		return 0;
	}
	if (kind == W_RECV)
		return wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM ?
		       rx_write(ep, i, wc) : rx_cell(ep, i, wc->byte_len);
	if (kind == W_SEND) {
		ve->sfree[ve->nsfree++] = i;
		return 0;
	}
	if (kind == W_WRITE) {
		__zcr_verbs_write_done(ep);
		return 1;
	}
	return read_done(ep);
}

/* Drain the completion queue; *seen: completions taken. */
static int poll_cq(struct zcr_ep *ep, int *seen)
{
	struct vep *ve = V(ep);
	struct ibv_wc wc[16];
	int n = 0, k, j;

	*seen = ve->nstash;
	for (j = 0; j < ve->nstash && ep->state == ZCR_EP_OPEN; j++)
		n += handle_wc(ep, &ve->stash[j]);
	ve->nstash = 0;
	while (ep->state == ZCR_EP_OPEN) {
		k = ibv_poll_cq(ve->cq, 16, wc);
		if (k <= 0) {
			if (k < 0)
				__zcr_ep_fail_locked(ep, -EIO, "verbs: cannot "
						     "poll the CQ");
			break;
		}
		*seen += k;
		for (j = 0; j < k && ep->state == ZCR_EP_OPEN; j++)
			n += handle_wc(ep, &wc[j]);
	}
	return n;
}

/*
 * The peer is gone, and what completed in our CQ until now was taken
 * (ep_progress()): its FINs completed our sends it had pulled. The rest of
 * our sends fail, the peer will not read them. What it sent us is
 * delivered but its announcements, which cannot be pulled any more
 * (rx_data() drops them); the endpoint fails once nothing is left, or
 * when a READ was under way. 1 when it failed.
 */
int __zcr_verbs_gone_settle(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct zcr_list *pos;

	for (pos = ep->sendq.next; pos != &ep->sendq; pos = pos->next) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		if (r->sent)
			__zcr_verbs_unannounce(ve, r);
	}
	__zcr_ep_fail_sends_locked(ep, -ECONNRESET);
	ve->nfin = 0;
	if (ve->rd.active) {
		__zcr_ep_fail_locked(ep, -ECONNRESET, "%s mid-message",
				     ve->gone);
		return 1;
	}
	if (!ve->dq_n) {
		__zcr_ep_fail_locked(ep, -ECONNRESET, "%s", ve->gone);
		return 1;
	}
	return 0;
}

int __zcr_verbs_ep_progress(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct ibv_cq *cq;
	void *cctx;
	int n = 0, seen;
	struct vhdr h;

	n += __zcr_verbs_rx_sock(ep);
	if (ep->state != ZCR_EP_OPEN || ve->stage != 3)
		return n;
	while (!ibv_get_cq_event(ve->ch, &cq, &cctx))
		ibv_ack_cq_events(cq, 1);
	n += poll_cq(ep, &seen);
	for (;;) {
		n += rx_data(ep);
		if (ep->state == ZCR_EP_OPEN)
			n += __zcr_verbs_push_sends(ep);
		if (ep->state == ZCR_EP_OPEN && !ve->gone &&
		    ve->ret_credits >= DCRED / 2 && ve->nsfree) {
			memset(&h, 0, sizeof(h));
			h.type = T_CREDIT;
			h.src = ep->ctx->rank;
			if (__zcr_verbs_post_msg(ve, &h, NULL, 0))
				__zcr_ep_fail_locked(ep, -EIO, "verbs: cannot "
						     "post a send");
		}
		if (ep->state != ZCR_EP_OPEN)
			break;
		/* Arm, then look once more: no completion slips by. */
		ibv_req_notify_cq(ve->cq, 0);
		n += poll_cq(ep, &seen);
		if (!seen)
			break;
	}
	if (ve->gone && ep->state == ZCR_EP_OPEN)
		n += __zcr_verbs_gone_settle(ep);
	return n;
}
