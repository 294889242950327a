// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * verbs_send.c - the verbs transport's sending side: headers and eager
 * payloads from send cells, announced (RTS) sends that the peer pulls and
 * answers with FIN, and the FINs we owe. The protocol is described in
 * verbs.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "base/ctx.h"
#include "prefetch/prefetch.h"
#include "transport/transport.h"
#include "transport/util.h"
#include "transport/verbs/verbs_priv.h"

/* ---- sending ---- */

/* Post one header (+ eager payload) from a free send cell. */
int __zcr_verbs_post_msg(struct vep *ve, struct vhdr *h, const void *payload,
			 size_t n)
{
	struct ibv_sge sg;
	struct ibv_send_wr wr = { 0 }, *bad;
	uint32_t i = ve->sfree[--ve->nsfree];
	char *c = scell(ve, i);
	int ret;

	h->credits = ve->ret_credits;
	memcpy(c, h, HDR);
	if (n)
		memcpy(c + HDR, payload, n);
	sg.addr = (uintptr_t)c;
	sg.length = (uint32_t)(HDR + n);
	sg.lkey = ve->mr->lkey;
	wr.wr_id = wrid(W_SEND, i);
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	ret = ibv_post_send(ve->qp, &wr, &bad);
	if (ret) {
		ve->sfree[ve->nsfree++] = i;
		return -ret;
	}
	ve->ret_credits = 0;
	return 0;
}

/* Queue control message c for the next free send cell. */
static int queue_vctl(struct vep *ve, const struct vctl *c)
{
	if (ve->gone)
		return 0;	/* nobody waits for it any more */
	if (ve->nfin == ve->fin_cap) {
		unsigned int cap = ve->fin_cap ? 2 * ve->fin_cap : 16;
		struct vctl *f = realloc(ve->fins, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		ve->fins = f;
		ve->fin_cap = cap;
	}
	ve->fins[ve->nfin++] = *c;
	return 0;
}

int __zcr_verbs_queue_ctl(struct vep *ve, uint32_t type, uint64_t cookie)
{
	struct vctl c = { .type = type, .cookie = cookie };

	return queue_vctl(ve, &c);
}

int __zcr_verbs_queue_fin(struct vep *ve, uint64_t cookie)
{
	return __zcr_verbs_queue_ctl(ve, T_FIN, cookie);
}

/* Data message r was posted: what an offer coming later must know. */
void __zcr_verbs_sent(struct vep *ve, const struct zcr_req *r)
{
	ve->sent_seq = r->seq;
	ve->sent_tag[r->seq % TAG_RING] = r->st.tag;
}

/*
 * The peer offers a receive buffer (ADV, in CQ order). It binds our first
 * message with its tag numbered above k: one posted already (sent as
 * usual, it lands in that receive all the same) settles it now; else it
 * waits for the next send with that tag (push_sends()). The peer had
 * returned the credits of its messages up to k only, so at most DCRED of
 * ours are above k: TAG_RING of them are kept.
 */
void __zcr_verbs_rx_adv(struct zcr_ep *ep, const struct vhdr *h)
{
	struct vep *ve = V(ep);
	struct zcr_list *pos;
	struct vpadv *pa;
	uint64_t s;

	for (pos = ve->padvs.next; pos != &ve->padvs; pos = pos->next)
		if (zcr_container_of(pos, struct vpadv, link)->tag == h->tag)
			break;
	if (!ve->adv_ok || h->tag < 0 || h->len <= EAGER_MAX ||
	    pos != &ve->padvs || ve->npadv >= ADV_MAX || h->seq > ve->sent_seq ||
	    ve->sent_seq - h->seq > TAG_RING) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO, "verbs: offer out of "
				     "protocol (tag %d, after %llu of %llu)",
				     h->tag, (unsigned long long)h->seq,
				     (unsigned long long)ve->sent_seq);
		return;
	}
	ve->vc->st.adv_got++;
	for (s = h->seq + 1; s <= ve->sent_seq; s++)
		if (ve->sent_tag[s % TAG_RING] == h->tag)
			return;		/* bound to message s, sent already */
	pa = calloc(1, sizeof(*pa));
	if (!pa) {
		__zcr_ep_fail_locked(ep, -ENOMEM, "verbs: out of memory");
		return;
	}
	pa->id = (uint32_t)h->cookie;
	pa->tag = h->tag;
	pa->addr = h->addr;
	pa->len = h->len;
	pa->rkey = h->rkey;
	zcr_list_add_tail(&pa->link, &ve->padvs);
	ve->npadv++;
}

/*
 * The peer revokes an offer: forget it if no message took it yet. The
 * answer goes behind whatever we posted, so the peer sees a bound
 * message before it.
 */
void __zcr_verbs_rx_revoke(struct zcr_ep *ep, const struct vhdr *h)
{
	struct vep *ve = V(ep);
	struct zcr_list *pos;

	for (pos = ve->padvs.next; pos != &ve->padvs; pos = pos->next) {
		struct vpadv *pa = zcr_container_of(pos, struct vpadv, link);

		if (pa->id == (uint32_t)h->cookie) {
			zcr_list_del(&pa->link);
			ve->npadv--;
			free(pa);
			break;
		}
	}
	if (__zcr_verbs_queue_ctl(ve, T_REVOKED, h->cookie))
		__zcr_ep_fail_locked(ep, -ENOMEM, "verbs: out of memory");
}

/* The peer's offer for a message with this tag, taken off the list. */
static struct vpadv *padv_take(struct vep *ve, int tag)
{
	struct zcr_list *pos;

	if (!ve->npadv)
		return NULL;
	for (pos = ve->padvs.next; pos != &ve->padvs; pos = pos->next) {
		struct vpadv *pa = zcr_container_of(pos, struct vpadv, link);

		if (pa->tag == tag) {
			zcr_list_del(&pa->link);
			ve->npadv--;
			return pa;
		}
	}
	return NULL;
}

/* The registration an announced send keeps in its scratch. */
struct rts_state {
	struct ibv_mr *mr;
	struct rc_ent *ce;
};

/* An announced send's registration ends: nothing will pull it any more. */
void __zcr_verbs_unannounce(struct vep *ve, struct zcr_req *r)
{
	struct rts_state rs;

	memcpy(&rs, r->tx, sizeof(rs));
	__zcr_verbs_cache_put(ve->vc, rs.mr, rs.ce);
	r->sent = 0;
}

/* Post the queued control messages as far as send cells allow. */
int __zcr_verbs_post_fins(struct vep *ve)
{
	struct vhdr h;
	unsigned int k;
	int ret = 0;

	for (k = 0; k < ve->nfin && ve->nsfree; k++) {
		memset(&h, 0, sizeof(h));
		h.type = ve->fins[k].type;
		h.src = ve->ep->ctx->rank;
		h.cookie = ve->fins[k].cookie;
		h.tag = ve->fins[k].tag;
		h.len = ve->fins[k].len;
		h.seq = ve->fins[k].seq;
		h.addr = ve->fins[k].addr;
		h.rkey = ve->fins[k].rkey;
		ret = __zcr_verbs_post_msg(ve, &h, NULL, 0);
		if (ret)
			break;
	}
	/* With nothing queued ever, fins is NULL: no memmove of it. */
	if (k) {
		memmove(ve->fins, ve->fins + k,
			(ve->nfin - k) * sizeof(*ve->fins));
		ve->nfin -= k;
	}
	return ret;
}

/*
 * Write r straight into the peer's offered buffer pa: one RDMA WRITE
 * with immediate (the offer's id), which takes a data credit and a
 * receive cell of the peer like any data message. r completes when the
 * write does (write_done()). 1 when written; 0: not possible, send it as
 * usual; -1: the endpoint failed.
 */
static int write_offered(struct zcr_ep *ep, struct zcr_req *r,
			 const struct vpadv *pa)
{
	struct vep *ve = V(ep);
	struct ibv_sge sg;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct rts_state rs;
	int ret;

	rs.mr = r->persist ?
		__zcr_verbs_pin_get(ve->vc, r->sbuf, r->len, &rs.ce) :
		__zcr_verbs_cache_get(ve->vc, r->sbuf, r->len, &rs.ce);
	if (!rs.mr) {
		ve->vc->st.reg_failed++;
		return 0;	/* the announcement says why, if it fails */
	}
	sg.addr = (uintptr_t)r->sbuf;
	sg.length = (uint32_t)r->len;
	sg.lkey = rs.mr->lkey;
	wr.wr_id = wrid(W_WRITE, 0);
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htonl(pa->id);
	wr.wr.rdma.remote_addr = pa->addr;
	wr.wr.rdma.rkey = pa->rkey;
	ret = ibv_post_send(ve->qp, &wr, &bad);
	if (ret) {
		__zcr_verbs_cache_put(ve->vc, rs.mr, rs.ce);
		__zcr_ep_fail_locked(ep, -ret, "verbs: cannot post RDMA WRITE");
		return -1;
	}
	memcpy(r->tx, &rs, sizeof(rs));
	ve->credits--;
	__zcr_verbs_sent(ve, r);
	r->sent = 2;
	ve->vc->st.writes++;
	return 1;
}

/*
 * An RDMA WRITE completed: the peer's NIC has the bytes. Writes complete
 * in the order they were posted, which is the send queue's order.
 */
void __zcr_verbs_write_done(struct zcr_ep *ep)
{
	struct zcr_list *pos;

	for (pos = ep->sendq.next; pos != &ep->sendq; pos = pos->next) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		if (r->sent != 2)
			continue;
		__zcr_verbs_unannounce(V(ep), r);
		zcr_list_del(&r->link);
		__zcr_ep_send_done_locked(ep, r);
		return;
	}
}

/*
 * An announced send of a connection that prefetches: its PF_INFO, or
 * NULL. Decided here, as the RTS is posted, and not when the send was
 * called (as over TCP): push_sends() posts the queued answers to
 * requests (T_PF_DATA) first, and an older pre-send is forgotten when a
 * request comes, so a send that used one must already be on the wire
 * then. A bitmap that does not fit a cell (a message over 256 MiB) is
 * dropped and the message goes whole.
 */
static const struct zcr_pf_tx *pf_plan(struct zcr_ep *ep, struct zcr_req *r)
{
	if (!ep->pf || r->kind != ZCR_REQ_SEND)
		return NULL;
	if (!r->pf)
		__zcr_pf_send_locked(ep, r);
	if (r->pf && r->pf->bmlen > EAGER_MAX) {
		free(r->pf);
		r->pf = NULL;
	}
	return r->pf;
}

int __zcr_verbs_push_sends(struct zcr_ep *ep)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct vep *ve = V(ep);
	struct zcr_list *pos, *tmp;
	struct vhdr h;
	int n = 0, ret;

	if (ve->gone)
		return 0;	/* gone_settle() failed what was queued */
	/* FINs first: they unblock the peer's sends. */
	ret = __zcr_verbs_post_fins(ve);
	if (ret)
		goto fail;
	zcr_list_for_each_safe(pos, tmp, &ep->sendq) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);
		const struct zcr_pf_tx *pfi;
		struct rts_state rs;
		struct vpadv *pa;

		if (r->sent)
			continue;	/* announced or written: waits */
		if (!ve->credits || !ve->nsfree)
			break;
		/* An offer binds this message whichever way it goes. */
		pa = padv_take(ve, r->st.tag);
		if (pa) {
			ret = 0;
			if (r->len > EAGER_MAX && r->len <= pa->len &&
			    r->len <= ve->vc->pa.max_msg_sz)
				ret = write_offered(ep, r, pa);
			free(pa);
			if (ret < 0)
				return n;	/* the endpoint failed */
			if (ret)
				continue;
		}
		memset(&h, 0, sizeof(h));
		h.src = ctx->rank;
		h.tag = r->st.tag;
		h.len = r->len;
		h.seq = r->seq;
		if (r->len <= EAGER_MAX) {
			h.type = T_EAGER;
			ret = __zcr_verbs_post_msg(ve, &h, r->sbuf, r->len);
			if (ret)
				goto fail;
			ve->credits--;
			__zcr_verbs_sent(ve, r);
			zcr_list_del(&r->link);
			__zcr_ep_send_done_locked(ep, r);
			n++;
			continue;
		}
		pfi = pf_plan(ep, r);
		rs.ce = NULL;
		if (r->persist)
			rs.mr = __zcr_verbs_pin_get(ve->vc, r->sbuf, r->len,
						    &rs.ce);
		else if (ep->pf)
			/*
			 * Read-only for the NIC: a registration for its writes
			 * pins the pages as a write would (a write fault on
			 * each), and prefetching's page versions then saw the
			 * whole buffer rewritten at every send.
			 */
			rs.mr = __zcr_verbs_reg(ve->vc, r->sbuf, r->len,
						IBV_ACCESS_REMOTE_READ);
		else
			rs.mr = __zcr_verbs_cache_get(ve->vc, r->sbuf, r->len,
						      &rs.ce);
		if (!rs.mr) {
			ret = errno ? -errno : -ENOMEM;
			ve->vc->st.reg_failed++;
			__zcr_ep_fail_locked(ep, ret, "verbs: cannot register "
					     "%llu bytes to send (%s; "
					     "RLIMIT_MEMLOCK?)",
					     (unsigned long long)r->len,
					     strerror(-ret));
			return n;
		}
		h.type = T_RTS;
		h.addr = (uintptr_t)r->sbuf;
		h.rkey = rs.mr->rkey;
		h.cookie = (uintptr_t)r;
		if (pfi) {
			/* The PF_INFO rides in the RTS: one data message. */
			h.type = T_PFRTS;
			h.status = (int32_t)pfi->token;
			h.pad = pfi->saddr;
		}
		ret = __zcr_verbs_post_msg(ve, &h, pfi ? pfi->bm : NULL,
					   pfi ? pfi->bmlen : 0);
		if (ret) {
			__zcr_verbs_cache_put(ve->vc, rs.mr, rs.ce);
			goto fail;
		}
		memcpy(r->tx, &rs, sizeof(rs));
		ve->credits--;
		__zcr_verbs_sent(ve, r);
		r->sent = 1;
	}
	return n;
fail:
	__zcr_ep_fail_locked(ep, ret, "verbs: cannot post a send");
	return n;
}

/*
 * The peer pulled the announced send cookie (its FIN): complete it. false
 * when no announced send has that cookie.
 */
bool __zcr_verbs_fin_send(struct zcr_ep *ep, uint64_t cookie)
{
	struct zcr_list *pos;

	for (pos = ep->sendq.next; pos != &ep->sendq; pos = pos->next) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		if ((uintptr_t)r != cookie || r->sent != 1)
			continue;
		__zcr_verbs_unannounce(V(ep), r);
		zcr_list_del(&r->link);
		__zcr_ep_send_done_locked(ep, r);
		return true;
	}
	return false;
}

void __zcr_verbs_rx_fin(struct zcr_ep *ep, const struct vhdr *h)
{
	if (__zcr_verbs_fin_send(ep, h->cookie))
		return;
	ep->ctx->st.bad_headers++;
	__zcr_ep_fail_locked(ep, -EPROTO, "verbs: FIN for no announced send");
}

/* ---- prefetching (Documentation/prefetch.md, "Over verbs") ---- */

int __zcr_verbs_pf_ask(struct zcr_ep *ep, const struct zcr_pf_ask *a)
{
	struct vep *ve = V(ep);
	struct vctl c = { .type = T_PF_REQ, .tag = (int32_t)a->token,
			  .addr = a->saddr, .len = a->slen };
	int ret;

	if (ve->gone || ve->stage != 3)
		return -ECONNRESET;
	ret = queue_vctl(ve, &c);
	/* Now: the sender is to answer while its application computes. */
	if (!ret)
		ret = __zcr_verbs_post_fins(ve);
	return ret;
}

/* Our pull of the peer's answer token is in: it may free its copy. */
int __zcr_verbs_queue_pf_done(struct vep *ve, uint32_t token)
{
	struct vctl c = { .type = T_PF_DONE, .tag = (int32_t)token };

	return queue_vctl(ve, &c);
}

/* The pre-send the peer READ is done with, or the connection's end. */
void __zcr_verbs_pf_body_free(struct vep *ve)
{
	if (ve->pf_mr)
		__zcr_verbs_dereg(ve->vc, ve->pf_mr);
	ve->pf_mr = NULL;
	free(ve->pf_body);
	ve->pf_body = NULL;
	ve->pf_token = 0;
}

static void pf_bad(struct zcr_ep *ep, const struct vhdr *h)
{
	ep->ctx->st.bad_headers++;
	__zcr_ep_fail_locked(ep, -EPROTO, "prefetch message out of protocol "
			     "(type %u, token %d)", h->type, h->tag);
}

/*
 * The peer asks for a buffer (T_PF_REQ): answer with T_PF_DATA, if only
 * with nothing. What is pre-sent stays in a registered copy that the
 * peer READs, until its T_PF_DONE. The peer asks again only after that
 * (one request outstanding; it says T_PF_DONE when its READs are in,
 * and its control messages keep their order), so a request while we
 * keep a copy is out of protocol.
 */
void __zcr_verbs_rx_pf_req(struct zcr_ep *ep, const struct vhdr *h)
{
	struct vep *ve = V(ep);
	struct vctl c = { .type = T_PF_DATA, .tag = h->tag, .seq = h->addr };
	char *body = NULL;
	uint64_t len = 0;
	int ret;

	if (ve->pf_body || h->tag <= 0) {
		pf_bad(ep, h);
		return;
	}
	/*
	 * Taken as it completes, also while a message of the peer's that
	 * left pages out is arriving: the request is the sending side's.
	 */
	ret = __zcr_pf_request_locked(ep, (uint32_t)h->tag, h->addr, h->len,
				      &body, &len);
	if (ret) {
		__zcr_ep_fail_locked(ep, ret, "verbs: out of memory");
		return;
	}
	if (len) {
		/*
		 * Without the copy registered the peer could not have the
		 * pages our next send leaves out: the connection cannot go
		 * on as prefetching planned it.
		 */
		ve->pf_mr = __zcr_verbs_reg(ve->vc, body, len,
					    IBV_ACCESS_REMOTE_READ);
		if (!ve->pf_mr) {
			free(body);
			ve->vc->st.reg_failed++;
			__zcr_ep_fail_locked(ep, -ENOMEM, "verbs: cannot "
					     "register a pre-send");
			return;
		}
		ve->pf_body = body;
		ve->pf_token = (uint32_t)h->tag;
		c.addr = (uintptr_t)body;
		c.rkey = ve->pf_mr->rkey;
		c.len = len;
	}
	if (queue_vctl(ve, &c))
		__zcr_ep_fail_locked(ep, -ENOMEM, "verbs: out of memory");
}

/* The peer has READ our answer (T_PF_DONE): it may go. */
void __zcr_verbs_rx_pf_done(struct zcr_ep *ep, const struct vhdr *h)
{
	struct vep *ve = V(ep);

	if (!ve->pf_body || (uint32_t)h->tag != ve->pf_token) {
		pf_bad(ep, h);
		return;
	}
	__zcr_verbs_pf_body_free(ve);
}

int __zcr_verbs_send(struct zcr_ep *ep, struct zcr_req *r)
{
	if (V(ep)->gone)
		return -ECONNRESET;	/* nobody reads what we send */
	zcr_list_add_tail(&r->link, &ep->sendq);
	if (V(ep)->stage == 3)
		__zcr_verbs_push_sends(ep);
	return 0;
}

