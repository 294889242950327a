// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shm_send.c - the shm transport's sending side: eager messages into the
 * peer's ring (one cell, or several), announcements (RTS) the peer pulls,
 * the part of a pull the peer offers us to write (shm.h, enum
 * zcr_shm_help), MATCHED cells, prefetch cells, and the sends still
 * announced when the connection ends. Described in shm_tp.c.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "base/ctx.h"
#include "base/probe.h"
#include "prefetch/prefetch.h"
#include "transport/shm/shm.h"
#include "transport/shm/shm_priv.h"
#include "transport/transport.h"
#include "transport/util.h"

/*
 * The peer is pulling our announced send r (cell c) and offers us the
 * first part: write it into the peer ourselves while it pulls the rest.
 */
static void help_pull(struct shm_ep *se, struct zcr_req *r,
		      struct zcr_shm_cell *c)
{
	struct pollfd p = { .fd = se->pidfd, .events = POLLIN };
	int32_t st = ZCR_SHM_HELP_OFFERED;
	uint64_t dst, part;
	int ret;

	if (!__atomic_compare_exchange_n(&c->status, &st, ZCR_SHM_HELP_TAKEN,
					 false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;			/* withdrawn meanwhile */
	dst = __atomic_load_n(&c->cookie, __ATOMIC_RELAXED);
	part = __atomic_load_n(&c->pad[0], __ATOMIC_RELAXED);
	/*
	 * Never more than the message: the rest of our memory is ours. The
	 * write goes to a pid: not to a dead receiver's, which the system
	 * may have given to another process.
	 */
	ret = !part || part >= r->len ? -EINVAL :
	      poll(&p, 1, 0) != 0 ? -ESRCH :
	      __zcr_shm_push(se->peer, dst, r->sbuf, part);
	/* Sequentially consistent: the receiver may be about to sleep. */
	__atomic_store_n(&c->status, ret ? ZCR_SHM_HELP_FAILED :
			 ZCR_SHM_HELP_DONE, __ATOMIC_SEQ_CST);
	kick_peer(se);
	if (!ret)
		se->ep->ctx->st.bytes_pushed += part;
}

/* A message's header into cell c and, eager, its payload after it. */
static void put_msg(struct shm_ep *se, struct zcr_shm_cell *c, bool eager,
		    uint32_t comm, const void *buf, uint64_t len, int tag,
		    uint64_t seq, uint64_t flags)
{
	memset(c, 0, sizeof(*c));
	c->type = eager ? ZCR_SHM_EAGER : ZCR_SHM_RTS;
	c->src = se->ep->ctx->rank;
	c->tag = tag;
	c->len = len;
	c->seq = seq;
	c->pad[0] = comm;	/* 0 for an old peer */
	c->flags = flags;
	c->addr = (uintptr_t)buf;
	if (eager && len)
		__zcr_shm_ring_put(&se->out, buf, len);
#ifdef ZCR_PROBES
	if (eager)
		c->cookie = ZCR_PROBE_STAMP();	/* the receiver's probes */
#endif
}

/* Write send r's header (and, eager, its payload) into its cells c. */
static void fill_cells(struct shm_ep *se, struct zcr_shm_cell *c,
		       struct zcr_req *r, bool eager)
{
	put_msg(se, c, eager, r->comm, r->sbuf, r->len, r->st.tag, r->seq,
		r->sync ? ZCR_SHM_F_SYNC : 0);
}

/*
 * A prefetch frame of ours (struct shm_pf_ctl) into its cell: false when
 * the ring is full. A PF_DATA's body stays with r until the peer
 * consumed the cell: it pulls the body from there.
 */
static bool put_pf_ctl(struct shm_ep *se, struct zcr_req *r)
{
	struct shm_pf_ctl pc;
	struct zcr_shm_cell *c = __zcr_shm_ring_reserve(&se->out);

	if (!c)
		return false;
	memcpy(&pc, r->tx, sizeof(pc));
	memset(c, 0, sizeof(*c));
	c->type = pc.type;
	c->src = se->ep->ctx->rank;
	c->tag = (int32_t)pc.token;
	c->addr = pc.addr;
	c->len = r->len;
	c->cookie = (uintptr_t)r->own;
	set_idx(r, se->out.tail);
	__zcr_shm_ring_publish(&se->out);
	r->sent = 1;
	return true;
}

/*
 * A send that prefetching planned (r->pf): its PF_INFO cells (the bitmap
 * of pages left out inline) and its RTS, published together so that
 * nothing comes between them. Always announced, never eager: the
 * receiver pulls only the pages that were not left out. False when the
 * ring has no room for all of them.
 */
static bool put_pf_send(struct shm_ep *se, struct zcr_req *r)
{
	uint64_t ki = zcr_shm_cells_for(&se->out, r->pf->bmlen);
	struct zcr_shm_cell *c = __zcr_shm_ring_reserve_n(&se->out, ki + 1);

	if (!c)
		return false;
	memset(c, 0, sizeof(*c));
	c->type = ZCR_SHM_PF_INFO;
	c->src = se->ep->ctx->rank;
	c->tag = (int32_t)r->pf->token;
	c->addr = r->pf->saddr;
	c->len = r->pf->bmlen;
	if (r->pf->bmlen)
		__zcr_shm_ring_put(&se->out, r->pf->bm, r->pf->bmlen);
	fill_cells(se, __zcr_shm_ring_cell(&se->out, se->out.tail + ki), r,
		   false);
	set_idx(r, se->out.tail + ki);
	__zcr_shm_ring_publish_n(&se->out, ki + 1);
	r->sent = 1;
	return true;
}

/*
 * Announce what fits into the peer's ring, in order, and complete what
 * the peer has consumed. Returns the number of sends completed.
 */
int __zcr_shm_push_sends(struct zcr_ep *ep, bool help)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct shm_ep *se = S(ep);
	struct zcr_list *pos, *tmp;
	uint64_t head;
	int n = 0;

	head = atomic_load_explicit(&se->out.ctl->head, memory_order_acquire);
	se->acked = head;
	zcr_list_for_each_safe(pos, tmp, &ep->sendq) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);
		struct zcr_shm_cell *c;
		uint64_t k = zcr_shm_cells_for(&se->out, r->len);
		bool eager = k == 1 ||
			     (se->frag_ok && r->len <= se->sc->frag_max &&
			      k <= ZCR_SHM_FRAG_CELLS && k <= se->out.ncell);

		if (r->ctl) {
			/* A prefetch frame: a PF_DATA's body is kept until
			 * the peer consumed its cell. */
			if (!r->sent && !put_pf_ctl(se, r))
				break;
			if (r->own && head <= get_idx(r))
				continue;
			zcr_list_del(&r->link);
			__zcr_req_free_ctl(r);
			continue;
		}
		if (r->kind == ZCR_REQ_ACK) {
			/*
			 * A receive matched message r->seq of the peer. Not
			 * while that message's cell is still open here (its
			 * sender writes a part of it): the sender awaits the
			 * acknowledgement only once our head passed the cell.
			 */
			if (se->cell_open && se->cur.seq == r->seq)
				continue;	/* MATCHED cells need no order */
			c = __zcr_shm_ring_reserve(&se->out);
			if (!c)
				break;
			memset(c, 0, sizeof(*c));
			c->type = ZCR_SHM_MATCHED;
			c->src = ctx->rank;
			c->seq = r->seq;
			__zcr_shm_ring_publish(&se->out);
			zcr_list_del(&r->link);
			free(r);
			continue;
		}
		if (r->sent) {
			/* Announced: done once the peer consumed its cell. */
			if (help && head == get_idx(r) &&
			    (c = offer_at(se, head)))
				help_pull(se, r, c);
			if (head <= get_idx(r))
				continue;
		} else if (r->pf) {
			if (!put_pf_send(se, r))
				break;
			continue;
		} else {
			if (!eager)
				k = 1;
			c = __zcr_shm_ring_reserve_n(&se->out, k);
			if (!c)
				break;
			fill_cells(se, c, r, eager);
			set_idx(r, se->out.tail);
			__zcr_shm_ring_publish_n(&se->out, k);
			r->sent = 1;
			if (!eager)
				continue;
		}
		zcr_list_del(&r->link);
		/* A synchronous one waits for the peer's MATCHED. */
		__zcr_ep_send_done_locked(ep, r);
		n++;
	}
	return n;
}

/*
 * Prefetching's plan for send r (r->pf), or none where its bitmap would
 * not fit the cells one eager message may take (a message of gigabytes):
 * then it goes whole, which is always right (its pre-send is not used).
 */
static void plan_pf_send(struct shm_ep *se, struct zcr_req *r)
{
	__zcr_pf_send_locked(se->ep, r);
	if (r->pf && zcr_shm_cells_for(&se->out, r->pf->bmlen) + 1 >
		     (se->out.ncell < ZCR_SHM_FRAG_CELLS ? se->out.ncell :
		      ZCR_SHM_FRAG_CELLS)) {
		free(r->pf);
		r->pf = NULL;
	}
}

int __zcr_shm_pf_ctl(struct zcr_ep *ep, uint32_t type, uint32_t token,
		     uint64_t addr, char *body, uint64_t len)
{
	struct shm_pf_ctl pc = {
		.type = type, .token = token, .addr = addr,
	};
	struct zcr_req *r;

	if (S(ep)->gone) {
		free(body);
		return -ECONNRESET;
	}
	r = __zcr_ep_ctl_req(ep, body, len);
	if (!r)
		return -ENOMEM;
	memcpy(r->tx, &pc, sizeof(pc));
	zcr_list_add_tail(&r->link, &ep->sendq);
	__zcr_shm_push_sends(ep, false);
	return 0;
}

int __zcr_shm_pf_ask(struct zcr_ep *ep, const struct zcr_pf_ask *a)
{
	return __zcr_shm_pf_ctl(ep, ZCR_SHM_PF_REQ, a->token, a->saddr, NULL,
				a->slen);
}

int __zcr_shm_send(struct zcr_ep *ep, struct zcr_req *r)
{
	struct shm_ep *se = S(ep);
	struct zcr_shm_cell *c;

	if (se->gone)
		return -ECONNRESET;	/* nobody reads our ring any more */
	/* Large sends say where they come from; some leave pages out. */
	if (ep->pf && r->kind == ZCR_REQ_SEND)
		plan_pf_send(se, r);
	/*
	 * The common case, a message of one cell with nothing queued before
	 * it: into the ring and complete now, as push_sends() would, without
	 * the queue (a third of the library's part of a small send). Not an
	 * acknowledgement (ZCR_REQ_ACK): that is a MATCHED cell.
	 */
	if (r->kind == ZCR_REQ_SEND && !r->sync && !r->pf &&
	    zcr_list_empty(&ep->sendq) &&
	    r->len <= zcr_shm_eager_max(&se->out) &&
	    (c = __zcr_shm_ring_reserve(&se->out))) {
		fill_cells(se, c, r, true);
		__zcr_shm_ring_publish(&se->out);
		ZCR_PROBE(ZCR_PP_PUBLISH);
		r->sent = 1;
		__zcr_ep_send_done_locked(ep, r);	/* not sync: done */
		return 0;
	}
	zcr_list_add_tail(&r->link, &ep->sendq);
	__zcr_shm_push_sends(ep, false);	/* helping is for progress, not for isend */
	return 0;
}

/*
 * The transport's send_now: the common case of __zcr_shm_send() (one
 * cell, nothing queued before it, room) with no request at all, for a
 * persistent send started with zcr_start_test(): the header written from
 * the arguments it keeps, the cell published, done. Anything else takes
 * the general path (-EAGAIN), which also says a gone peer's error.
 */
int __zcr_shm_send_now(struct zcr_ep *ep, uint32_t comm, const void *buf,
		       size_t len, int tag, uint64_t seq)
{
	struct shm_ep *se = S(ep);
	struct zcr_shm_cell *c;

	if (se->gone || !zcr_list_empty(&ep->sendq) ||
	    len > zcr_shm_eager_max(&se->out) ||
	    !(c = __zcr_shm_ring_reserve(&se->out)))
		return -EAGAIN;
	put_msg(se, c, true, comm, buf, len, tag, seq, 0);
	__zcr_shm_ring_publish(&se->out);
	ZCR_PROBE(ZCR_PP_PUBLISH);
	return 0;
}

/*
 * The connection ends (closed here, or the peer gone) with announced
 * sends of ours in the peer's ring. One whose cell the peer consumed was
 * delivered: it completes now, as the next pass would have completed it.
 * Every other one is revoked in its cell (shm.h, ZCR_SHM_REVOKED) before
 * the caller fails it, so that a peer still pulling it does not deliver
 * it: once the send failed, the application may write into its buffer.
 * The same for our answers to prefetch requests, whose bodies the caller
 * frees.
 */
void __zcr_shm_settle_sends(struct zcr_ep *ep)
{
	struct shm_ep *se = S(ep);
	struct zcr_list *pos, *tmp;
	uint64_t head;

	if (!se->out.ctl)
		return;
	head = atomic_load(&se->out.ctl->head);
	zcr_list_for_each_safe(pos, tmp, &ep->sendq) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);
		struct zcr_shm_cell *c;
		int32_t st;
		int tries;

		/*
		 * An answer to a prefetch request (a PF_DATA with a body)
		 * is revoked as an announcement is: its body is freed with
		 * the connection, and the peer must not take what it
		 * pulled from there for a pre-send.
		 */
		if (!r->sent ||
		    (r->kind == ZCR_REQ_ACK && !(r->ctl && r->own)))
			continue;
		if (head <= get_idx(r)) {
			c = __zcr_shm_ring_cell(&se->out, get_idx(r));
			st = __atomic_load_n(&c->status, __ATOMIC_SEQ_CST);
			/* A few tries: only a peer out of protocol keeps
			 * changing it, and then the send fails. */
			for (tries = 0; st != ZCR_SHM_CONSUMED && tries < 8 &&
			     !__atomic_compare_exchange_n(&c->status, &st,
							  ZCR_SHM_REVOKED,
							  false,
							  __ATOMIC_SEQ_CST,
							  __ATOMIC_SEQ_CST);
			     tries++)
				;
			if (st != ZCR_SHM_CONSUMED)
				continue;	/* revoked: failed by the caller */
		}
		zcr_list_del(&r->link);
		if (r->ctl) {
			__zcr_req_free_ctl(r);	/* the peer is done with it */
			continue;
		}
		/* A synchronous one: the caller fails it, no MATCHED comes. */
		__zcr_ep_send_done_locked(ep, r);
	}
}
