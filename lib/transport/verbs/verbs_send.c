// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * verbs_send.c - the verbs transport's sending side: headers and eager
 * payloads from send cells, announced (RTS) sends that the peer pulls and
 * answers with FIN, and the FINs we owe. The protocol is described in
 * verbs.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "base/ctx.h"
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

int __zcr_verbs_queue_fin(struct vep *ve, uint64_t cookie)
{
	if (ve->gone)
		return 0;	/* nobody waits for it any more */
	if (ve->nfin == ve->fin_cap) {
		unsigned int cap = ve->fin_cap ? 2 * ve->fin_cap : 16;
		uint64_t *f = realloc(ve->fins, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		ve->fins = f;
		ve->fin_cap = cap;
	}
	ve->fins[ve->nfin++] = cookie;
	return 0;
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

/* Post the queued FINs as far as send cells allow. */
int __zcr_verbs_post_fins(struct vep *ve)
{
	struct vhdr h;
	unsigned int k;
	int ret = 0;

	for (k = 0; k < ve->nfin && ve->nsfree; k++) {
		memset(&h, 0, sizeof(h));
		h.type = T_FIN;
		h.src = ve->ep->ctx->rank;
		h.cookie = ve->fins[k];
		ret = __zcr_verbs_post_msg(ve, &h, NULL, 0);
		if (ret)
			break;
	}
	memmove(ve->fins, ve->fins + k, (ve->nfin - k) * sizeof(*ve->fins));
	ve->nfin -= k;
	return ret;
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
		struct rts_state rs;

		if (r->sent)
			continue;	/* announced: waits for its FIN */
		if (!ve->credits || !ve->nsfree)
			break;
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
			zcr_list_del(&r->link);
			__zcr_ep_send_done_locked(ep, r);
			n++;
			continue;
		}
		rs.mr = __zcr_verbs_cache_get(ve->vc, r->sbuf, r->len, &rs.ce);
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
		ret = __zcr_verbs_post_msg(ve, &h, NULL, 0);
		if (ret) {
			__zcr_verbs_cache_put(ve->vc, rs.mr, rs.ce);
			goto fail;
		}
		memcpy(r->tx, &rs, sizeof(rs));
		ve->credits--;
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

		if ((uintptr_t)r != cookie || !r->sent)
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

int __zcr_verbs_send(struct zcr_ep *ep, struct zcr_req *r)
{
	if (V(ep)->gone)
		return -ECONNRESET;	/* nobody reads what we send */
	zcr_list_add_tail(&r->link, &ep->sendq);
	if (V(ep)->stage == 3)
		__zcr_verbs_push_sends(ep);
	return 0;
}

