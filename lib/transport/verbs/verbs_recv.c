// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * verbs_recv.c - the verbs transport's receiving side: the data queue of
 * received cells in arrival order, RDMA READs of announced messages into
 * where match says, the completion queue, and a peer that went away. The
 * protocol is described in verbs.c.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "base/ctx.h"
#include "match/match.h"
#include "pagever/pagever.h"
#include "prefetch/prefetch.h"
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

/*
 * The message offset of wire byte w of the current message, and in *k
 * how many wire bytes follow it there: prefetching leaves pages out, and
 * only the runs between them (cut at what lands, rd->span) are pulled.
 */
static uint64_t wire_at(const struct vread *rd, uint64_t w, uint64_t *k)
{
	size_t j;

	for (j = 0; j < rd->nruns; j++) {
		uint64_t off = rd->runs[j].off, len = rd->runs[j].len;

		if (off >= rd->span)
			break;
		if (len > rd->span - off)
			len = rd->span - off;
		if (w < len) {
			*k = len - w;
			return off + w;
		}
		w -= len;
	}
	*k = rd->n - w;		/* no runs: the message is one */
	return w;
}

/* The wire bytes of the current message that land: rd->n. */
static uint64_t wire_len(const struct vread *rd)
{
	uint64_t n = 0, k;
	size_t j;

	if (!rd->nruns)
		return rd->span;
	for (j = 0; j < rd->nruns; j++) {
		if (rd->runs[j].off >= rd->span)
			break;
		k = rd->span - rd->runs[j].off;
		n += rd->runs[j].len < k ? rd->runs[j].len : k;
	}
	return n;
}

/* Post one RDMA READ of n bytes from the peer's (raddr, rkey) to laddr. */
static int post_read(struct vep *ve, int kind, uintptr_t laddr, uint32_t lkey,
		     uint64_t raddr, uint32_t rkey, uint64_t n)
{
	struct ibv_sge sg = { laddr, (uint32_t)n, lkey };
	struct ibv_send_wr wr = { 0 }, *bad;

	wr.wr_id = wrid(kind, 0);
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return -ibv_post_send(ve->qp, &wr, &bad);
}

/* Post READs of the rest of the current message (bounce: one chunk). */
static int post_reads(struct vep *ve)
{
	struct vread *rd = &ve->rd;
	struct zcr_ep *ep = ve->ep;
	int ret;

	while (rd->posted < rd->n) {
		uint64_t k, at = wire_at(rd, rd->posted, &k);

		if (rd->bounce) {
			if (rd->out)
				break;
			if (k > BOUNCE)
				k = BOUNCE;
			rd->boff = at;
			ret = post_read(ve, W_READ, (uintptr_t)bounce(ve),
					ve->mr->lkey, ve->cur.addr + at,
					ve->cur.rkey, k);
		} else {
			if (rd->out >= RD_OUT)
				break;
			if (k > ve->vc->rd_chunk)
				k = ve->vc->rd_chunk;
			ret = post_read(ve, W_READ, (uintptr_t)ep->rx.dst + at,
					rd->mr->lkey, ve->cur.addr + at,
					ve->cur.rkey, k);
		}
		if (ret)
			return ret;
		rd->posted += k;
		rd->out++;
	}
	return 0;
}

/*
 * A message's payload is in at ep->rx.dst: the pages it left out come
 * from the pre-send, then match hears of it, then the stream's next
 * message may be asked for (as over TCP, finish_payload()).
 */
static void landed(struct zcr_ep *ep)
{
	struct zcr_pf_ask a;

	if (ep->pf)
		__zcr_pf_data_done_locked(ep, ep->rx.dst, ep->rx.room);
	V(ep)->pf_runs = NULL;
	V(ep)->pf_nruns = 0;
	__zcr_match_payload_done_locked(ep->ctx, &ep->rx);
	if (ep->pf && ep->state == ZCR_EP_OPEN &&
	    __zcr_pf_ask_next_locked(ep, &a) && __zcr_verbs_pf_ask(ep, &a))
		__zcr_pf_asked_failed_locked(ep);
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
	if (!rd->staged && rd->span)
		__zcr_pv_bump(ep->ctx->pv, ep->rx.dst, rd->span);
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
	landed(ep);
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
	rd->span = ep->rx.room < ve->cur.len ? ep->rx.room : ve->cur.len;
	rd->runs = ve->pf_runs;
	rd->nruns = ve->pf_nruns;
	rd->n = wire_len(rd);
	rd->staged = !ep->rx.req;
	if (!rd->n)
		return rndv_done(ep);
	if (rd->staged && vc->land_copy) {
		rd->bounce = true;
	} else {
		if (rd->staged)
			rd->mr = __zcr_verbs_reg(vc, ep->rx.dst, rd->span,
						 IBV_ACCESS_LOCAL_WRITE);
		else
			rd->mr = __zcr_verbs_cache_get(vc, ep->rx.dst,
						       rd->span, &rd->ce);
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
		memcpy(ep->rx.dst + rd->boff, bounce(ve), k);
		ve->vc->st.bounce_bytes += k;
		rd->off = rd->posted;
	} else if (!rd->out) {
		/* RC completes in order: all posted is in. */
		rd->off = rd->posted;
	}
	if (rd->off == rd->n)
		return rndv_done(ep);
	ret = post_reads(ve);
	if (ret)
		__zcr_ep_fail_locked(ep, ret, "verbs: cannot post RDMA READ");
	return 0;
}

/* ---- prefetching: a pre-send pulled, a message that leaves pages out ---- */

/*
 * The bytes of a T_PFRTS's bitmap: one bit per 4 KiB page the send
 * buffer touches when it used a pre-send (lib/prefetch checks it again).
 */
static uint64_t pfrts_bmlen(const struct vhdr *h)
{
	if (!h->status)
		return 0;
	return ((h->pad % ZCR_PF_PAGE + h->len + ZCR_PF_PAGE - 1) /
		ZCR_PF_PAGE + 7) / 8;
}

static void pf_bad(struct zcr_ep *ep, const char *what)
{
	ep->ctx->st.bad_headers++;
	__zcr_ep_fail_locked(ep, -EPROTO, "verbs: %s", what);
}

/* The T_PF_DATA at the head of the data queue is taken: its cell back. */
static void pull_end(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	uint32_t cell = ve->dq[ve->dq_head];

	if (ve->pull.mr)
		__zcr_verbs_dereg(ve->vc, ve->pull.mr);
	free(ve->pull.buf);
	memset(&ve->pull, 0, sizeof(ve->pull));
	ve->dq_head = (ve->dq_head + 1) % NRECV;
	ve->dq_n--;
	if (repost(ve, cell))
		__zcr_ep_fail_locked(ep, -EIO, "verbs: cannot repost");
}

static int post_pf_reads(struct vep *ve)
{
	struct vpfpull *pl = &ve->pull;

	while (pl->posted < pl->n && pl->out < RD_OUT) {
		uint64_t k = pl->n - pl->posted;
		int ret;

		if (k > ve->vc->rd_chunk)
			k = ve->vc->rd_chunk;
		ret = post_read(ve, W_PFREAD, (uintptr_t)pl->buf + pl->posted,
				pl->mr->lkey, pl->raddr + pl->posted,
				pl->rkey, k);
		if (ret)
			return ret;
		pl->posted += k;
		pl->out++;
	}
	return 0;
}

/*
 * The answer to our request is at the head of the data queue, in its
 * order among the peer's data messages (a message that used the older
 * pre-send came before it, one that uses this one after). Start pulling
 * it: the bitmap and the pages, READ whole into a registered buffer.
 * The data queue waits until it is in. false: the endpoint failed.
 */
static bool pull_start(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct vpfpull *pl = &ve->pull;
	uint8_t *bm = NULL;
	struct vhdr h;
	int ret;

	memcpy(&h, rcell(ve, ve->dq[ve->dq_head]), HDR);
	ret = __zcr_pf_presend_in_locked(ep, (uint32_t)h.tag, h.seq, h.len,
					 &bm);
	if (ret == -ENOMEM)
		__zcr_ep_fail_locked(ep, ret, "verbs: out of memory");
	else if (ret)
		pf_bad(ep, "an answer to no request of ours");
	if (ret)
		return false;
	if (!bm) {
		pull_end(ep);	/* nothing came */
		return ep->state == ZCR_EP_OPEN;
	}
	pl->active = true;
	pl->token = (uint32_t)h.tag;
	pl->bm = bm;
	pl->raddr = h.addr;
	pl->rkey = h.rkey;
	pl->n = h.len;
	pl->buf = malloc(h.len);
	if (pl->buf)
		pl->mr = __zcr_verbs_reg(ve->vc, pl->buf, h.len,
					 IBV_ACCESS_LOCAL_WRITE);
	if (!pl->mr) {
		ve->vc->st.reg_failed += !!pl->buf;
		__zcr_ep_fail_locked(ep, -ENOMEM, "verbs: no memory to pull "
				     "a pre-send into");
		return false;
	}
	ret = post_pf_reads(ve);
	if (ret) {
		__zcr_ep_fail_locked(ep, ret, "verbs: cannot post RDMA READ");
		return false;
	}
	return true;
}

/*
 * A READ of the pre-send completed. When all are in, lib/prefetch takes
 * the bitmap and the pages, and the sender hears it may free its copy.
 */
static int pull_read_done(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct vpfpull *pl = &ve->pull;
	const struct zcr_pf_run *runs;
	uint64_t bmlen, off;
	size_t nruns, j;
	char *dst;
	int ret;

	if (!pl->active || !pl->out)
		return 0;
	pl->out--;
	if (pl->posted < pl->n) {
		ret = post_pf_reads(ve);
		if (ret)
			__zcr_ep_fail_locked(ep, ret, "verbs: cannot post "
					     "RDMA READ");
		return 0;
	}
	if (pl->out)
		return 0;
	bmlen = __zcr_pf_presend_bmlen(ep);
	memcpy(pl->bm, pl->buf, bmlen);
	if (__zcr_pf_presend_map_locked(ep, &dst, &runs, &nruns)) {
		pf_bad(ep, "pre-sent pages do not fit their bitmap");
		return 0;
	}
	/* The map checked the runs add up to the pages that came. */
	for (j = 0, off = bmlen; j < nruns; off += runs[j++].len)
		memcpy(dst + runs[j].off, pl->buf + off, runs[j].len);
	__zcr_pf_presend_done_locked(ep);
	ret = __zcr_verbs_queue_pf_done(ve, pl->token);
	pull_end(ep);
	if (ret)
		__zcr_ep_fail_locked(ep, ret, "verbs: out of memory");
	return 1;
}

/*
 * A data message's header, before match: a T_PFRTS's PF_INFO, and which
 * of its bytes come on the wire (ve->pf_runs). false: the endpoint
 * failed.
 */
static bool pf_arrive(struct zcr_ep *ep, uint32_t cell)
{
	struct vep *ve = V(ep);
	const struct vhdr *h = &ve->cur;
	uint64_t bmlen = 0, wire;
	uint8_t *bm = NULL;
	int ret = 0;

	if (h->type == T_PFRTS) {
		bmlen = pfrts_bmlen(h);
		ret = __zcr_pf_info_locked(ep, (uint32_t)h->status, h->pad,
					   bmlen, &bm);
		if (bm)
			memcpy(bm, rcell(ve, cell) + HDR, bmlen);
	}
	if (!ret)
		ret = __zcr_pf_data_locked(ep, 0, h->tag, h->len,
					   &ve->pf_runs, &ve->pf_nruns, &wire);
	if (ret == -ENOMEM)
		__zcr_ep_fail_locked(ep, ret, "verbs: out of memory");
	else if (ret)
		pf_bad(ep, "a message's pages left out do not fit its "
		       "pre-send");
	return !ret;
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

	while (ep->state == ZCR_EP_OPEN && ve->dq_n && !ve->rd.active &&
	       !ve->pull.active) {
		uint32_t cell = ve->dq[ve->dq_head];

		/* An answer to our request: pulled before what follows. */
		if (!ve->arriving && head_type(ve) == T_PF_DATA) {
			if (ve->gone)
				pull_end(ep);	/* cannot be pulled */
			else if (!pull_start(ep))
				return n;
			n++;
			continue;
		}

		/*
		 * A gone peer's announcement cannot be pulled any more (its
		 * QP is gone), and its send did not complete: the message is
		 * cut short (a receive it claimed fails, a wildcard one waits
		 * for another), and what the peer sent after it, which did
		 * complete there, is still delivered.
		 */
		if (ve->gone && (head_type(ve) == T_RTS ||
				 head_type(ve) == T_PFRTS)) {
			if (ve->arriving)
				__zcr_match_abort_locked(ep->ctx, &ep->rx);
			else
				ep->recv_seq++;
			/*
			 * Its plan (a T_PFRTS taken in) goes with it: the
			 * next message is checked against no PF_INFO.
			 */
			if (ep->pf && ve->arriving)
				__zcr_pf_data_done_locked(ep, NULL, 0);
			ve->pf_runs = NULL;
			ve->pf_nruns = 0;
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
			if (ep->pf && !pf_arrive(ep, cell))
				return n;
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
		if (h->type == T_RTS || h->type == T_PFRTS) {
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
		landed(ep);
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
	    (h.type < T_EAGER || h.type > T_PF_DONE || h.type == T_WRITE) ||
	    (h.type >= T_ADV && h.type <= T_REVOKED && !ve->adv_ok) ||
	    (h.type >= T_PFRTS && !ep->pf) ||
	    (h.type == T_EAGER && bytes != HDR + h.len) ||
	    (h.type == T_PFRTS && (h.len > ep->ctx->max_msg ||
				   bytes != HDR + pfrts_bmlen(&h))) ||
	    (h.type != T_EAGER && h.type != T_PFRTS && bytes != HDR) ||
	    ve->stage != 3) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO, "verbs: message out of "
				     "protocol (type %u, %u bytes)", h.type,
				     bytes);
		return 0;
	}
	ve->credits += h.credits;
	if (h.type == T_EAGER || h.type == T_RTS || h.type == T_PFRTS) {
		ve->cq_seq++;
		__zcr_verbs_adv_bind(ep, &h);
		ve->dq[(ve->dq_head + ve->dq_n) % NRECV] = i;
		ve->dq_n++;
		return 0;
	}
	/* Not a data message (no credit), but taken in their order. */
	if (h.type == T_PF_DATA) {
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
	case T_PF_REQ:
		__zcr_verbs_rx_pf_req(ep, &h);
		return 1;
	case T_PF_DONE:
		__zcr_verbs_rx_pf_done(ep, &h);
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
	if (kind == W_PFREAD)
		return pull_read_done(ep);
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
	if (ve->rd.active || ve->pull.active) {
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
