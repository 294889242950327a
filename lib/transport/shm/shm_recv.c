// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shm_recv.c - the shm transport's receiving side: the cell at our ring's
 * head checked and handed to match, its payload copied out (eager) or
 * pulled from the sender (RTS; shared with a sender that waits, shm.h),
 * deferred announcements, MATCHED cells, prefetch cells, and a peer that
 * closes or exits.
 * Described in shm_tp.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/ctx.h"
#include "base/probe.h"
#include "match/match.h"
#include "prefetch/prefetch.h"
#include "transport/shm/shm.h"
#include "transport/shm/shm_priv.h"
#include "transport/transport.h"

/*
 * An announced message with no receive posted for it, while our own
 * announced send to that peer has not completed here yet: the
 * application is most likely about to see that send complete and post
 * the receive (a ping-pong's answer overtaking the sender's return from
 * its send). Leave it unread for up to this long rather than pull it
 * into staging and copy it a second time.
 */
static void drop_open(struct zcr_ep *ep);
static int claim_cell(struct shm_ep *se);

/*
 * After this many offers in a row nobody took, offer only about one pull
 * in SHM_HELP_EVERY until one is taken again. An offer not taken costs the
 * receiver its part pulled by a second process_vm_readv(2): a 1 MiB part
 * took 71 us in two calls against 68 in one, while both ranks of an
 * all-to-all pull at once and neither waits to take the other's offer
 * (benchmarks.md, History "The carried all-to-all and all-gather against
 * stock, call by call").
 */
#define SHM_HELP_MISSES		8
#define SHM_HELP_EVERY		16

/*
 * The peer closed the connection or exited (why). Our sends to it will
 * not be read: what it consumed completes, the rest fails. What it sent
 * us stays to be read (rx_ep()), but for its announcements: nothing to
 * pull from any more (dropped, drop_open()). With nothing left in the
 * ring, the endpoint fails now.
 */
static void peer_gone(struct zcr_ep *ep, const char *why)
{
	struct shm_ep *se = S(ep);

	se->gone = why;
	__zcr_shm_settle_sends(ep);
	__zcr_ep_fail_sends_locked(ep, -ECONNRESET);
	if (se->cell_open && se->cur.type == ZCR_SHM_RTS)
		drop_open(ep);		/* nothing to pull from any more */
	if (!se->cell_open && !__zcr_shm_ring_ready(&se->in))
		__zcr_ep_fail_locked(ep, -ECONNRESET, "%s", why);
}

/*
 * A MATCHED cell at our ring's head: the peer matched our synchronous
 * message h->seq. Consumed here; false when the endpoint failed.
 */
static bool take_matched(struct zcr_ep *ep, const struct zcr_shm_cell *h)
{
	struct shm_ep *se = S(ep);

	if (!ep->sync_ok || h->src != ep->rank) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO, "shm: acknowledgement out of "
				     "protocol (src %d, seq %llu)", h->src,
				     (unsigned long long)h->seq);
		return false;
	}
	__zcr_shm_ring_consume(&se->in);
	kick_peer(se);			/* a full ring has room again */
	/*
	 * An announced synchronous send moves to the ACK queue when we see
	 * the peer pulled it; the peer may have matched it in the same
	 * breath, before we looked: look now.
	 */
	__zcr_shm_push_sends(ep, false);
	__zcr_ep_acked_locked(ep, h->seq);
	return ep->state == ZCR_EP_OPEN;
}

/*
 * A pre-send came (PF_DATA h, its body at h->cookie in the sender): pull
 * its bitmap, then its pages where lib/prefetch keeps them. The body is
 * the sender's own copy, made when it answered and kept until we consume
 * the cell, so a pull fails only when the sender is gone or out of
 * protocol, and then the connection fails with it: no later message of
 * that sender can leave pages out on a pre-send we do not hold.
 */
static int pf_presend_in(struct zcr_ep *ep, const struct zcr_shm_cell *h)
{
	struct shm_ep *se = S(ep);
	const struct zcr_pf_run *runs;
	uint64_t src = h->cookie, bmlen;
	size_t nruns, i;
	uint8_t *bm;
	char *dst;
	int ret;

	ret = __zcr_pf_presend_in_locked(ep, (uint32_t)h->tag, h->addr,
					 h->len, &bm);
	if (ret || !bm)
		return ret;
	bmlen = __zcr_pf_presend_bmlen(ep);
	ret = __zcr_shm_pull(se->peer, bm, src, bmlen);
	if (ret)
		return ret;
	src += bmlen;
	if (__zcr_pf_presend_map_locked(ep, &dst, &runs, &nruns))
		return -EPROTO;		/* pages that do not fit the bitmap */
	for (i = 0; i < nruns; i++) {
		ret = __zcr_shm_pull(se->peer, dst + runs[i].off, src,
				     runs[i].len);
		if (ret)
			return ret;
		src += runs[i].len;
	}
	__zcr_pf_presend_done_locked(ep);
	return 0;
}

/*
 * A prefetch cell h at our ring's head (ZCR_SHM_PF_*; lib/prefetch):
 * only on a connection that negotiated it, from its peer, never between
 * a PF_INFO and its RTS, as over TCP. Consumed here; false when the
 * endpoint failed.
 */
static bool take_pf(struct zcr_ep *ep, const struct zcr_shm_cell *h)
{
	struct shm_ep *se = S(ep);
	uint64_t k = 1, len;
	uint8_t *bm = NULL;
	char *body = NULL;
	int ret = -EPROTO, claimed;

	if (!ep->pf || h->src != ep->rank || __zcr_pf_info_pending(ep))
		goto bad;
	switch (h->type) {
	case ZCR_SHM_PF_INFO:
		if (h->len > ZCR_PF_BITMAP_MAX(ep->ctx->max_msg))
			goto bad;
		k = zcr_shm_cells_for(&se->in, h->len);
		if (k > ZCR_SHM_FRAG_CELLS || k > __zcr_shm_ring_ready(&se->in))
			goto bad;
		ret = 0;
		if (se->gone)
			break;	/* its announcement is dropped: open_cell() */
		ret = __zcr_pf_info_locked(ep, (uint32_t)h->tag, h->addr,
					   h->len, &bm);
		if (!ret && bm)
			__zcr_shm_ring_get(&se->in, bm, h->len);
		break;
	case ZCR_SHM_PF_REQ:
		ret = 0;
		if (se->gone)
			break;		/* nobody to answer */
		/*
		 * Sends the peer consumed before it asked are complete:
		 * else the one just pulled, still on our queue until our
		 * next pass, would make the request look late.
		 */
		__zcr_shm_push_sends(ep, false);
		ret = __zcr_pf_request_locked(ep, (uint32_t)h->tag, h->addr,
					      h->len, &body, &len);
		/* Answered always, if only with nothing. */
		if (!ret)
			ret = __zcr_shm_pf_ctl(ep, ZCR_SHM_PF_DATA,
					       (uint32_t)h->tag, h->addr, body,
					       len);
		if (ret == -ECONNRESET)
			ret = 0;	/* the peer went meanwhile */
		break;
	default:
		/* A gone sender's pre-send: nothing to pull, no use. */
		if (se->gone) {
			ret = 0;
			break;
		}
		ret = pf_presend_in(ep, h);
		/*
		 * A sender that closes revokes the answers we did not
		 * consume yet and frees their bodies (settle_sends()): what
		 * we pulled may be anything, and every announcement after
		 * it is revoked too. Not an error: the peer closed.
		 */
		claimed = claim_cell(se);
		if (claimed == -ECONNRESET) {
			__zcr_pf_presend_drop_locked(ep);
			peer_gone(ep, "shm: peer closed the connection");
			ret = 0;
		} else if (!ret) {
			ret = claimed;
		}
		break;
	}
	if (ret)
		goto bad;
	__zcr_shm_ring_consume_n(&se->in, k);
	kick_peer(se);			/* a full ring has room again */
	return ep->state == ZCR_EP_OPEN;
bad:
	if (ret == -ENOMEM) {
		__zcr_ep_fail_locked(ep, ret, "out of memory");
		return false;
	}
	if (ret == -EPROTO || ret == -EINVAL)
		ep->ctx->st.bad_headers++;
	__zcr_ep_fail_locked(ep, ret == -EINVAL ? -EPROTO : ret,
			     "shm: prefetch cell out of protocol or its "
			     "pre-send unreadable (type %u, %s)", h->type,
			     strerror(ret < 0 ? -ret : ret));
	return false;
}

/*
 * The header at our ring's head, checked; false when the endpoint failed
 * or the cell was not a message (an acknowledgement, taken here: then
 * *again is set).
 */
static bool open_cell(struct zcr_ep *ep, const struct zcr_shm_cell *c,
		      bool *again)
{
	struct shm_ep *se = S(ep);
	struct zcr_shm_cell *h = &se->cur;

	memcpy(h, c, sizeof(*h));	/* the peer may scribble on c */
	se->live = (struct zcr_shm_cell *)c;
	*again = false;
	if (h->type == ZCR_SHM_MATCHED && !__zcr_pf_info_pending(ep)) {
		*again = take_matched(ep, h);
		return false;
	}
	if (h->type >= ZCR_SHM_PF_INFO && h->type <= ZCR_SHM_PF_DATA) {
		*again = take_pf(ep, h);
		return false;
	}
	se->pf_runs = NULL;
	se->pf_nruns = 0;
	if ((h->type != ZCR_SHM_EAGER && h->type != ZCR_SHM_RTS) ||
	    (h->type == ZCR_SHM_EAGER && __zcr_pf_info_pending(ep)) ||
	    (h->flags & ~ZCR_SHM_F_SYNC) ||
	    ((h->flags & ZCR_SHM_F_SYNC) && !ep->sync_ok) ||
	    h->src != ep->rank || h->tag < 0 ||
	    h->seq != ep->recv_seq + 1 || h->len > ep->ctx->max_msg ||
	    (h->type == ZCR_SHM_EAGER &&
	     (zcr_shm_cells_for(&se->in, h->len) > ZCR_SHM_FRAG_CELLS ||
	      zcr_shm_cells_for(&se->in, h->len) >
	      __zcr_shm_ring_ready(&se->in)))) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO, "shm: cell out of protocol "
				     "(type %u, src %d, seq %llu, len %llu)",
				     h->type, h->src,
				     (unsigned long long)h->seq,
				     (unsigned long long)h->len);
		return false;
	}
	ep->recv_seq = h->seq;
	/* Which of its bytes to pull; the others were pre-sent. */
	if (ep->pf && h->type == ZCR_SHM_RTS && !se->gone) {
		uint64_t wire_len;
		int ret = __zcr_pf_data_locked(ep, ep->comm_ok ?
					       (uint32_t)h->pad[0] : 0,
					       h->tag, h->len, &se->pf_runs,
					       &se->pf_nruns, &wire_len);

		if (ret) {
			ep->ctx->st.bad_headers++;
			__zcr_ep_fail_locked(ep, ret, "shm: a message's pages "
					     "left out do not fit its "
					     "pre-send");
			return false;
		}
	}
	se->cell_open = true;
	return true;
}

/*
 * The sender took the first part of the open cell's copy: -EINPROGRESS
 * while it writes; then 0 or -errno once every byte is in (a part it
 * failed to write, or anything else it left in the cell, we pull
 * ourselves). No timeout: until the sender says it is done or exits, it
 * may write into the destination, so the receive may not complete.
 */
static void learn_share(struct shm_ep *se, uint64_t its_ns)
{
	se->help_share = __zcr_shm_share_next(se->help_share,
					      se->help_own,
					      se->help_own_ns, se->help_part,
					      its_ns);
	se->help_t0 = 0;
}

static int help_settle(struct zcr_ep *ep)
{
	struct shm_ep *se = S(ep);
	int32_t st = __atomic_load_n(&se->live->status, __ATOMIC_SEQ_CST);
	uint64_t now = zcr_now_ns();

	if (st == ZCR_SHM_HELP_TAKEN) {
		se->help_seen = now;
		return -EINPROGRESS;
	}
	se->help_wait = false;
	if (st == ZCR_SHM_REVOKED) {	/* the sender closed meanwhile */
		se->help_t0 = 0;
		return -ECONNRESET;
	}
	/*
	 * It ended after our part, between our last look (spinning, or
	 * its doorbell waking us) and now: learn if that tells its time
	 * well enough (not after we slept past a timeout, or went back to
	 * the application, before looking again).
	 */
	if (st == ZCR_SHM_HELP_DONE && !se->help_ret && se->help_t0 &&
	    se->help_seen && now - se->help_seen <= (now - se->help_t0) / 4)
		learn_share(se, now - se->help_t0);
	se->help_t0 = 0;
	if (se->help_ret)
		return se->help_ret;
	if (st == ZCR_SHM_HELP_DONE) {
		ep->ctx->st.shared_pulls++;
		return 0;
	}
	return __zcr_shm_pull(se->peer, ep->rx.dst, se->cur.addr,
			      se->help_part);
}

/*
 * Pull n bytes of the open RTS cell into dst, the first part shared with
 * the sender (shm.h, enum zcr_shm_help). 0, -errno, or -EINPROGRESS
 * while the sender writes its part (help_settle() says when it is in).
 */
static int shared_pull(struct zcr_ep *ep, char *dst, uint64_t n)
{
	struct shm_ep *se = S(ep);
	struct zcr_shm_cell *c = se->live;
	uint64_t src = se->cur.addr, part;
	uintptr_t pg = ep->ctx->page;
	int32_t st = ZCR_SHM_HELP_OFFERED;
	uint64_t t0;
	int ret;

	/* The sender's share (shm.h), at a page boundary of dst. */
	part = (((uintptr_t)dst + n / ZCR_SHM_SHARE_ONE * se->help_share) &
		~(pg - 1)) - (uintptr_t)dst;
	if (!part || part >= n)
		return __zcr_shm_pull(se->peer, dst, src, n);
	__atomic_store_n(&c->cookie, (uint64_t)(uintptr_t)dst,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&c->pad[0], part, __ATOMIC_RELAXED);
	/*
	 * Only over a fresh word: the cell may have waited open (no room
	 * yet) while its sender closed and revoked it (settle_sends()); a
	 * plain store would erase that, and the message be delivered with
	 * whatever the application wrote into the buffer since.
	 */
	st = ZCR_SHM_HELP_NONE;
	if (!__atomic_compare_exchange_n(&c->status, &st,
					 ZCR_SHM_HELP_OFFERED, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		if (st == ZCR_SHM_REVOKED)
			return -ECONNRESET;
		return __zcr_shm_pull(se->peer, dst, src, n);
	}
	st = ZCR_SHM_HELP_OFFERED;
	t0 = zcr_now_ns();
	ret = __zcr_shm_pull(se->peer, dst + part, src + part, n - part);
	if (__atomic_compare_exchange_n(&c->status, &st,
					ZCR_SHM_HELP_WITHDRAWN, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* Not taken: a step back towards half, so that a share
		 * grown large (our part, the window to take it, small)
		 * cannot keep every later offer untaken. */
		if (se->help_share > ZCR_SHM_SHARE_ONE / 2)
			se->help_share -= ZCR_SHM_SHARE_STEP / 2;
		/*
		 * Gaps of 16 and 15 pulls in turn: a gap that never
		 * changed would keep offering at the same place of a
		 * traffic that repeats every 2, 4, 8 or 16 pulls (an
		 * all-to-all's parts, whose senders pull too, and then a
		 * send whose sender waits), and never where a sender
		 * would take it.
		 */
		if (++se->help_missed >= SHM_HELP_MISSES)
			se->help_skip = SHM_HELP_EVERY - 1 -
					(se->help_missed & 1);
		return ret ? ret : __zcr_shm_pull(se->peer, dst, src, part);
	}
	se->help_missed = 0;
	/*
	 * Taken (or the peer wrote something else): even if our part
	 * failed, wait until the sender is done with dst.
	 */
	se->help_wait = true;
	se->help_ret = ret;
	se->help_part = part;
	se->help_own = n - part;
	se->help_seen = zcr_now_ns();
	se->help_own_ns = se->help_seen - t0;
	se->help_t0 = ret ? 0 : t0;
	if (se->help_t0 && st == ZCR_SHM_HELP_DONE)
		learn_share(se, 0);	/* done before we were */
	return help_settle(ep);
}

/* A pull to make unshared after offers nobody took (SHM_HELP_MISSES)? */
static bool skip_offer(struct shm_ep *se)
{
	if (!se->help_skip)
		return false;
	se->help_skip--;
	return true;
}

/*
 * Every byte of the open RTS is in: say so in its cell, unless the sender
 * revoked it first (it closed the connection, and its buffer may hold
 * other bytes by now). shm.h, ZCR_SHM_CONSUMED. 0, -ECONNRESET, or
 * -EPROTO for a sender that keeps changing the word.
 */
static int claim_cell(struct shm_ep *se)
{
	int32_t st = __atomic_load_n(&se->live->status, __ATOMIC_SEQ_CST);
	int tries;

	for (tries = 0; tries < 8; tries++) {
		if (st == ZCR_SHM_REVOKED)
			return -ECONNRESET;
		if (__atomic_compare_exchange_n(&se->live->status, &st,
						ZCR_SHM_CONSUMED, false,
						__ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			return 0;
	}
	return -EPROTO;
}

/*
 * The open announcement will never be read: its sender revoked it (it
 * closed the connection, and failed that send) or is gone. The message
 * is cut short, as when a connection ends in the middle of one (the
 * receive it claimed fails, or a wildcard one waits for another), but
 * what the sender wrote after it is still read: those sends completed.
 */
static void drop_open(struct zcr_ep *ep)
{
	struct shm_ep *se = S(ep);

	__zcr_match_abort_locked(ep->ctx, &ep->rx);
	/* Its pre-send, if it used one, is used: forgotten as over TCP. */
	if (ep->pf && se->cur.type == ZCR_SHM_RTS)
		__zcr_pf_data_done_locked(ep, NULL, 0);
	se->cell_open = false;
	se->help_wait = false;
	__zcr_shm_ring_consume(&se->in);
	kick_peer(se);
}

/*
 * Pull the open RTS's bytes that were not pre-sent (se->pf_runs), as far
 * as the first n bytes go: the pre-sent pages are copied in from the
 * pre-send once every byte pulled is in (land()).
 */
static int pull_runs(struct zcr_ep *ep, uint64_t n)
{
	struct shm_ep *se = S(ep);
	size_t i;
	int ret;

	for (i = 0; i < se->pf_nruns; i++) {
		uint64_t off = se->pf_runs[i].off, len = se->pf_runs[i].len;

		if (off >= n)
			break;
		if (len > n - off)
			len = n - off;
		ret = len ? __zcr_shm_pull(se->peer, ep->rx.dst + off,
					   se->cur.addr + off, len) : 0;
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Move the open cell's payload where match said: 1 when it is in, 0 when
 * not yet (the sender writes a part) or the endpoint failed.
 */
static int land(struct zcr_ep *ep)
{
	struct shm_ep *se = S(ep);
	struct zcr_shm_cell *h = &se->cur;
	uint64_t n = ep->rx.room < h->len ? ep->rx.room : h->len, k = 1;
	int ret = 0;

	if (h->type == ZCR_SHM_EAGER) {
		k = zcr_shm_cells_for(&se->in, h->len);	/* checked: open */
		if (n)
			__zcr_shm_ring_get(&se->in, ep->rx.dst, n);
	} else if (se->help_wait) {
		ret = help_settle(ep);
	} else if (__atomic_load_n(&se->live->status, __ATOMIC_SEQ_CST) ==
		   ZCR_SHM_REVOKED) {
		ret = -ECONNRESET;	/* not worth a pull: claim_cell() */
	} else if (n && se->pf_nruns) {
		ret = pull_runs(ep, n);	/* prefetched: not shared */
	} else if (n) {
		ret = se->help_ok && se->sc->split_min &&
		      n >= se->sc->split_min &&
		      h->status == ZCR_SHM_HELP_NONE && !skip_offer(se) ?
		      shared_pull(ep, ep->rx.dst, n) :
		      __zcr_shm_pull(se->peer, ep->rx.dst, h->addr, n);
	}
	if (ret == -EINPROGRESS)
		return 0;
	if (!ret && h->type == ZCR_SHM_RTS)
		ret = claim_cell(se);
	if (ret == -ECONNRESET) {
		/* Revoked: the sender closed, whether or not poll said so. */
		drop_open(ep);
		if (!se->gone)
			peer_gone(ep, "shm: peer closed the connection");
		return ep->state == ZCR_EP_OPEN;
	}
	if (ret) {
		__zcr_ep_fail_locked(ep, ret, "shm: cannot read the message in "
				     "the peer (%s)",
				     ret == -ESRCH ? "peer exited" :
				     ret == -EFAULT ? "bad address" :
				     ret == -EPROTO ? "cell out of protocol" :
				     "ptrace policy");
		return 0;
	}
	/* Pre-sent pages left out of it are copied in first. */
	if (ep->pf && h->type == ZCR_SHM_RTS)
		__zcr_pf_data_done_locked(ep, ep->rx.dst, ep->rx.room);
	se->cell_open = false;
	__zcr_shm_ring_consume_n(&se->in, k);
	/* An RTS's send completes now; a full ring has room again. */
	kick_peer(se);
	ZCR_PROBE(ZCR_PP_LANDED);
	__zcr_match_payload_done_locked(ep->ctx, &ep->rx);
	ZCR_PROBE(ZCR_PP_COMPLETE);
	/* Ask for the stream's next message now, where that pays. */
	if (ep->pf && h->type == ZCR_SHM_RTS && !se->gone) {
		struct zcr_pf_ask a;

		if (__zcr_pf_ask_next_locked(ep, &a) && ep->tp->pf_ask(ep, &a))
			__zcr_pf_asked_failed_locked(ep);
	}
	return 1;
}

/*
 * Is one of our announced sends to the process behind ep still to be
 * completed (pulled by the peer or not: the pass that completes it runs
 * after the reads)? It may travel on another endpoint: a job dials each
 * rank it sends to, so two ranks that both send hold two connections, one
 * for each direction.
 */
static bool own_send_pending(struct zcr_ep *ep)
{
	struct zcr_list *e, *pos;

	for (e = S(ep)->sc->eps.next; e != &S(ep)->sc->eps; e = e->next) {
		struct shm_ep *se = zcr_container_of(e, struct shm_ep, link);

		if (se->peer != S(ep)->peer || se->ep->state != ZCR_EP_OPEN)
			continue;
		for (pos = se->ep->sendq.next; pos != &se->ep->sendq;
		     pos = pos->next) {
			struct zcr_req *r = zcr_container_of(pos,
							     struct zcr_req,
							     link);

			if (r->kind != ZCR_REQ_ACK && r->sent)
				return true;
		}
		/* Synchronous sends wait here for their MATCHED. */
		if (!zcr_list_empty(&se->ep->ackq))
			return true;
	}
	return false;
}

/* Leave the announcement c unread for now (SHM_DEFER_NS)? */
static bool defer_rts(struct zcr_ep *ep, const struct zcr_shm_cell *c)
{
	struct shm_ep *se = S(ep);
	struct zcr_shm_cell h;
	uint64_t now;

	/*
	 * Not on the progress thread: the application is away (it would
	 * post the receive), and the thread would hold the lock meanwhile.
	 */
	if (__zcr_is_progress_thread(ep->ctx))
		return false;
	memcpy(&h, c, sizeof(h));	/* checked for real by open_cell */
	if (h.type != ZCR_SHM_RTS || h.tag < 0 || !own_send_pending(ep) ||
	    __zcr_match_has_posted_locked(ep->ctx, ep->comm_ok ?
					  (uint32_t)h.pad[0] : 0,
					  ep->rank, h.tag))
		return false;
	now = zcr_now_ns();
	if (se->defer_head != se->in.head + 1) {
		se->defer_head = se->in.head + 1;
		se->defer_until = now + SHM_DEFER_NS;
	}
	return now < se->defer_until;
}

int __zcr_shm_rx_ep(struct zcr_ep *ep)
{
	struct shm_ep *se = S(ep);
	struct zcr_shm_cell *c;
	int n = 0, err;
	bool again;

	while (ep->state == ZCR_EP_OPEN) {
		if (se->gone && se->cell_open && se->cur.type == ZCR_SHM_RTS) {
			/* Exited: nothing to pull from; closed: revoked. */
			drop_open(ep);
			n++;
			continue;
		}
		if (!se->cell_open) {
			c = __zcr_shm_ring_peek(&se->in, &err);
			if (err) {
				__zcr_ep_fail_locked(ep, err,
						     "shm: ring corrupted");
				break;
			}
			if (se->gone && !c) {
				/* All it sent is in. */
				__zcr_ep_fail_locked(ep, -ECONNRESET, "%s",
						     se->gone);
				break;
			}
			if (!c || (!se->gone && defer_rts(ep, c)))
				break;
			if (!open_cell(ep, c, &again)) {
				if (!again)
					break;
				n++;	/* an acknowledgement, taken */
				continue;
			}
			ZCR_PROBE(ZCR_PP_OPEN);
			if (se->cur.type == ZCR_SHM_EAGER)
				ZCR_PROBE_SENT_AT(se->cur.cookie);
			if (se->gone && se->cur.type == ZCR_SHM_RTS) {
				drop_open(ep);	/* as above; not matched */
				n++;
				continue;
			}
			/* An announcement may wait: its bytes are the
			 * sender's until pulled. */
			if (__zcr_match_arrive_defer_locked(ep->ctx, &ep->rx,
					ep->comm_ok ?
					(uint32_t)se->cur.pad[0] : 0,
					se->cur.src, se->cur.tag,
					se->cur.len,
					(se->cur.flags & ZCR_SHM_F_SYNC) ?
					se->cur.seq : 0,
					se->cur.type == ZCR_SHM_RTS) < 0)
				break;	/* stalled: stays in the ring */
			ZCR_PROBE(ZCR_PP_MATCH);
		}
		/*
		 * A deferred announcement (match.h) holds the ring's head:
		 * once the sender wrote anything behind it, it is staged,
		 * so that the sender's later messages never wait for our
		 * receive (the announcement is one cell).
		 */
		if (ep->rx.state == ZCR_RX_STALLED && ep->rx.deferred &&
		    __zcr_shm_ring_ready(&se->in) > 1)
			__zcr_match_release_arrival_locked(ep->ctx, &ep->rx);
		if (ep->rx.state != ZCR_RX_LANDING || !land(ep))
			break;
		n++;
	}
	return n;
}

/*
 * Poll said the peer's pidfd (pid_ev) or control connection (ctl_ev) is
 * readable: it exited, or closed (the connection's end), or wrote on the
 * connection, which is out of protocol.
 */
void __zcr_shm_peer_end(struct shm_ep *se, short pid_ev, short ctl_ev)
{
	ssize_t got;
	char b;

	if (pid_ev) {
		peer_gone(se->ep, "shm: peer process exited");
		return;
	}
	if (!ctl_ev)
		return;
	got = recv(se->ctl_fd, &b, 1, MSG_DONTWAIT);
	if (got == 0)
		peer_gone(se->ep, "shm: peer closed the connection");
	else if (got > 0)
		__zcr_ep_fail_locked(se->ep, -EPROTO, "shm: peer wrote on the "
				     "control connection");
}
