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

#include "base/ctx.h"
#include "base/zero.h"
#include "predict/predict.h"
#include "remap/remap.h"
#include "staging/staging.h"
#include "match/match.h"
#include "pagever/pagever.h"

#define PREDICT_SCAN	8
/*
 * Past this many queued messages no prediction is asked for: the receive
 * that far ahead is a guess, and asking costs some predictors O(k) steps,
 * which an arrival must not (a peer sending 64 Ki messages of a page
 * would freeze the rank in a quadratic walk). Those land at page offset
 * 0. Smaller messages never ask (__zcr_pred_small()) and do not count.
 */
#define PREDICT_HORIZON	128

bool __zcr_match(int want_src, int want_tag, int src, int tag)
{
	return (want_src == ZCRECV_ANY_SOURCE || want_src == src) &&
	       (want_tag == ZCRECV_ANY_TAG || want_tag == tag);
}

/* The first posted receive a message (comm, src, tag) would take. */
static struct zcr_req *find_posted(struct zcr_ctx *ctx, uint32_t comm,
				   int src, int tag)
{
	struct zcr_list *pos;

	for (pos = ctx->posted.next; pos != &ctx->posted; pos = pos->next) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		if (r->comm == comm && __zcr_match(r->src, r->tag, src, tag))
			return r;
	}
	return NULL;
}

static struct zcr_req *match_posted(struct zcr_ctx *ctx, uint32_t comm,
				    int src, int tag)
{
	struct zcr_req *r = find_posted(ctx, comm, src, tag);

	if (r) {
		zcr_list_del(&r->link);
		r->posted = false;
	}
	return r;
}

bool __zcr_match_has_posted_locked(struct zcr_ctx *ctx, uint32_t comm,
				   int src, int tag)
{
	return find_posted(ctx, comm, src, tag) != NULL;
}

/*
 * A receive matched a message that came on ep: if it asked for an ACK,
 * queue one for the progress engine (ctx->acks). Without memory the
 * sender's synchronous send waits for its connection to end.
 */
static void matched(struct zcr_ctx *ctx, struct zcr_ep *ep, int rank,
		    uint64_t ack)
{
	struct zcr_ack *k;

	if (!ack)
		return;
	k = malloc(sizeof(*k));
	if (!k)
		return;
	k->ep = ep;
	k->rank = rank;
	k->seq = ack;
	zcr_list_add_tail(&k->link, &ctx->acks);
}

static struct zcr_ep *ep_of(struct zcr_arrival *a)
{
	return zcr_container_of(a, struct zcr_ep, rx);
}

static void unstall(struct zcr_arrival *a)
{
	if (a->state == ZCR_RX_STALLED)
		zcr_list_del(&a->stall_link);
	a->deferred = false;
	a->release = false;
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
	matched(ctx, ep_of(a), ep_of(a)->rank, a->ack);
}

/*
 * The predicted page offset of the receive that will take a message from
 * (src, tag): the first of the next predicted calls that could match it,
 * starting after the receives the already-queued messages will take. The
 * predictor sees only receives of a page or more (request.c), which the
 * queued messages of a page or more will take; smaller ones are taken by
 * receives it did not see, so they are not counted.
 */
bool __zcr_match_unlearnt(const struct zcr_ctx *ctx, uint32_t comm)
{
	unsigned int i;

	for (i = 0; i < ctx->nunlearnt; i++)
		if (ctx->unlearnt[i] == comm)
			return true;
	return false;
}

void __zcr_match_unlearn_locked(struct zcr_ctx *ctx, uint32_t comm)
{
	if (ctx->nunlearnt < ZCR_UNLEARNT_MAX &&
	    !__zcr_match_unlearnt(ctx, comm))
		ctx->unlearnt[ctx->nunlearnt++] = comm;
}

static size_t predict_offset(struct zcr_ctx *ctx, uint32_t comm, int src,
			     int tag, const void **buf)
{
	unsigned int queued = ctx->nunexpected_big, k;
	struct zcr_call c;

	/* Taken by a receive the predictor never sees. */
	if (queued >= PREDICT_HORIZON || __zcr_match_unlearnt(ctx, comm))
		return 0;
	for (k = queued + 1; k <= queued + PREDICT_SCAN; k++) {
		if (!__zcr_pred_predict(ctx->pred, k, &c))
			break;
		if ((c.src < 0 || c.src == src) && (c.tag < 0 || c.tag == tag)) {
			*buf = (const void *)(uintptr_t)c.buf;
			return (size_t)(c.buf & (ctx->page - 1));
		}
	}
	return 0;
}

void __zcr_match_expect_locked(struct zcr_ctx *ctx, struct zcr_expect *e)
{
	e->turn = 0;
	zcr_list_add_tail(&e->link, &ctx->expects);
}

void __zcr_match_expect_started_locked(struct zcr_ctx *ctx,
				       struct zcr_expect *e)
{
	e->turn = ++ctx->expect_turn;
}

void __zcr_match_unexpect_locked(struct zcr_ctx *ctx, struct zcr_expect *e)
{
	(void)ctx;
	zcr_list_del(&e->link);
}

/*
 * The receive known in advance that will take a message (comm, src,
 * tag): of those that could, the one whose turn is oldest. NULL when none
 * could. Promised the message (its turn taken) only once the message is
 * staged for it: a stalled or deferred one asks again.
 */
static struct zcr_expect *expected(struct zcr_ctx *ctx, uint32_t comm,
				   int src, int tag)
{
	struct zcr_expect *best = NULL;
	struct zcr_list *pos;

	for (pos = ctx->expects.next; pos != &ctx->expects; pos = pos->next) {
		struct zcr_expect *e = zcr_container_of(pos, struct zcr_expect,
							link);

		if (e->comm != comm || !__zcr_match(e->src, e->tag, src, tag))
			continue;
		if (!best || e->turn < best->turn)
			best = e;
	}
	return best;
}

/*
 * Where a message (comm, src, tag) is staged: at the page offset of the
 * receive known to take it (*known), else of the predicted one; 0 with
 * *buf NULL when neither is known.
 */
static size_t landing_offset(struct zcr_ctx *ctx, uint32_t comm, int src,
			     int tag, const void **buf,
			     struct zcr_expect **known)
{
	*buf = NULL;
	*known = NULL;
	if (!zcr_list_empty(&ctx->expects)) {
		*known = expected(ctx, comm, src, tag);
		if (*known) {
			*buf = (*known)->buf;
			return (size_t)((uintptr_t)*buf & (ctx->page - 1));
		}
	}
	return predict_offset(ctx, comm, src, tag, buf);
}

static struct zcr_peer *peer_find(struct zcr_ctx *ctx, int rank, bool make)
{
	struct zcr_list *pos;
	struct zcr_peer *p;

	for (pos = ctx->peers.next; pos != &ctx->peers; pos = pos->next) {
		p = zcr_container_of(pos, struct zcr_peer, link);
		if (p->rank == rank)
			return p;
	}
	if (!make)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->rank = rank;
	zcr_list_add_tail(&p->link, &ctx->peers);
	ctx->npeers++;
	return p;
}

/* A rank neither connected nor holding staging no longer has a share. */
static void peer_put(struct zcr_ctx *ctx, struct zcr_peer *p)
{
	if (p->nopen || p->bytes)
		return;
	zcr_list_del(&p->link);
	free(p);
	ctx->npeers--;
	/* The others' shares grew. */
	if (!zcr_list_empty(&ctx->stalled))
		ctx->drain_pending = true;
}

int __zcr_match_peer_open_locked(struct zcr_ctx *ctx, int rank)
{
	struct zcr_peer *p = peer_find(ctx, rank, true);

	if (!p)
		return -ENOMEM;
	p->nopen++;
	return 0;
}

void __zcr_match_peer_closed_locked(struct zcr_ctx *ctx, int rank)
{
	struct zcr_peer *p = peer_find(ctx, rank, false);

	if (p && p->nopen) {
		p->nopen--;
		peer_put(ctx, p);
	}
}

/*
 * May peer p stage another cap bytes? Each rank connected or holding
 * staging gets an equal share of the pool; a rank holding nothing may
 * always try (a message larger than a share is still staged when the
 * pool has room).
 */
static bool within_share(struct zcr_ctx *ctx, struct zcr_peer *p,
			 uint64_t cap)
{
	uint64_t share = ctx->staging_limit / (ctx->npeers ? ctx->npeers : 1);

	return !p || !p->bytes || p->bytes + cap <= share;
}

/* A slot of ops for len bytes, if the peer's share allows it. */
static struct zcr_slot *slot_in_share(struct zcr_ctx *ctx,
				      struct zcr_peer *p,
				      const struct zcr_remap_ops *ops,
				      size_t len, bool block)
{
	uint64_t cap = (len + ctx->page - 1) & ~(uint64_t)(ctx->page - 1);

	return within_share(ctx, p, cap) ?
	       __zcr_slot_get_locked(ctx, ops, len, block) : NULL;
}

/*
 * Must a message from src be staged rather than deferred? Yes while a
 * receive that could take a later message from src is posted (it did not
 * take this one), or a synchronous send of ours to src waits: its
 * acknowledgement comes behind. The same events later release a deferred
 * arrival (__zcr_match_release_deferred_locked()).
 */
static bool defer_blocked(struct zcr_ctx *ctx, int src)
{
	struct zcr_list *pos, *q;

	for (pos = ctx->posted.next; pos != &ctx->posted; pos = pos->next) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		if (r->src == src || r->src == ZCRECV_ANY_SOURCE)
			return true;
	}
	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (ep->rank != src)
			continue;
		if (!zcr_list_empty(&ep->ackq))
			return true;
		for (q = ep->sendq.next; q != &ep->sendq; q = q->next)
			if (zcr_container_of(q, struct zcr_req, link)->sync)
				return true;
	}
	return false;
}

/*
 * Stall a by choice: its payload would only be copied out of staging
 * (the copy policy, no remap backend for it, or auto copies its class),
 * so it stays with the transport until a receive takes it and lands
 * there, once: a copy in, a copy out, and the processor time of the
 * first, saved.
 */
static void defer(struct zcr_ctx *ctx, struct zcr_arrival *a)
{
	a->deferred = true;
	a->release = false;
	a->state = ZCR_RX_STALLED;
	zcr_list_add_tail(&a->stall_link, &ctx->stalled);
	ctx->st.deferred++;
}

void __zcr_match_release_arrival_locked(struct zcr_ctx *ctx,
				       struct zcr_arrival *a)
{
	if (a->deferred && !a->release) {
		a->release = true;
		ctx->drain_pending = true;
	}
}

void __zcr_match_release_deferred_locked(struct zcr_ctx *ctx, int src)
{
	struct zcr_list *pos;

	for (pos = ctx->stalled.next; pos != &ctx->stalled; pos = pos->next) {
		struct zcr_arrival *a = zcr_container_of(pos,
							 struct zcr_arrival,
							 stall_link);

		if (src == ZCRECV_ANY_SOURCE || a->src == src)
			__zcr_match_release_arrival_locked(ctx, a);
	}
}

/* Find a landing for a: a posted receive, else staging. 0 or -EAGAIN. */
static int find_landing(struct zcr_ctx *ctx, struct zcr_arrival *a)
{
	const struct zcr_remap_ops *ops;
	struct zcr_expect *known = NULL;
	struct zcr_peer *peer;
	struct zcr_backend_state *by;
	struct zcr_slot *slot;
	struct zcr_msg *m;
	const void *pbuf;
	struct zcr_req *r;
	size_t off, room = 0;
	bool block;

	r = match_posted(ctx, a->comm, a->src, a->tag);
	if (r) {
		land_posted(ctx, a, r);
		return 0;
	}
	/* Deferred: it waits for its receive until something needs it. */
	if (a->deferred) {
		if (!a->release)
			return -EAGAIN;
		a->deferred = false;
		a->may_defer = false;
		a->defer_any = false;
	}
	/* Too small to remap: staged in plain memory, no prediction. */
	off = 0;
	pbuf = NULL;
	if (!__zcr_pred_small(ctx, a->len))
		off = landing_offset(ctx, a->comm, a->src, a->tag, &pbuf,
				     &known);
	ops = __zcr_remap_pick(ctx, pbuf, a->len, &by);
	if (a->may_defer && (ops == &__zcr_remap_copy || a->defer_any) &&
	    ctx->defer_min &&
	    a->len >= ctx->defer_min && a->state != ZCR_RX_STALLED &&
	    !defer_blocked(ctx, a->src)) {
		defer(ctx, a);
		return -EAGAIN;
	}
	if (pbuf)
		off = __zcr_remap_stage_offset(ctx, ops, pbuf, a->len, &room);
	/*
	 * max_msg and staging_bytes may be lifted to UINT64_MAX: a length
	 * near 2^64 must not wrap off + len + room, rounded up to pages,
	 * into a small slot. It can never be staged; it waits for a
	 * receive. A slot with room (the last unit moves whole) if there
	 * is one, else one without, else a copy slot.
	 */
	slot = NULL;
	peer = peer_find(ctx, a->src, true);
	/*
	 * Only slots of 2 MiB or more are ever marked small (staging.h):
	 * below that, no walk of the context's blocks.
	 */
	block = pbuf && a->len && off + a->len + room >= ZCR_HUGE_SIZE &&
		__zcr_mem_thp(ctx, pbuf, a->len);
	if (a->len <= SIZE_MAX - off - room - 2 * ctx->page) {
		if (room)
			slot = slot_in_share(ctx, peer, ops,
					     off + a->len + room, block);
		if (!slot)
			slot = slot_in_share(ctx, peer, ops, off + a->len,
					     block);
		if (!slot && ops != &__zcr_remap_copy)
			slot = slot_in_share(ctx, peer, &__zcr_remap_copy,
					     off + a->len, false);
	}
	m = slot ? calloc(1, sizeof(*m)) : NULL;
	if (!m) {
		if (slot)
			__zcr_slot_put_locked(ctx, slot);
		if (peer)
			peer_put(ctx, peer);	/* made here, holds nothing */
		if (a->state != ZCR_RX_STALLED) {
			ctx->st.stalls++;
			a->state = ZCR_RX_STALLED;
			zcr_list_add_tail(&a->stall_link, &ctx->stalled);
		}
		return -EAGAIN;
	}
	unstall(a);
	if (known) {
		known->turn = ++ctx->expect_turn;
		ctx->st.expected++;
	}
	m->comm = a->comm;
	m->src = a->src;
	m->tag = a->tag;
	m->len = a->len;
	m->slot = slot;
	m->off = off;
	m->by = by;
	m->peer = peer;
	m->ep = ep_of(a);
	m->rank = ep_of(a)->rank;
	m->ack = a->ack;
	if (peer)
		peer->bytes += slot->cap;
	zcr_list_add_tail(&m->link, &ctx->unexpected);
	m->counted = !__zcr_pred_small(ctx, m->len) &&
		     !__zcr_match_unlearnt(ctx, m->comm);
	if (m->counted)
		ctx->nunexpected_big++;
	a->state = ZCR_RX_LANDING;
	a->msg = m;
	a->req = NULL;
	a->dst = slot->base + off;
	a->room = a->len;
	ctx->st.early++;
	return 0;
}

int __zcr_match_arrive_defer_locked(struct zcr_ctx *ctx, struct zcr_arrival *a,
				    uint32_t comm, int src, int tag,
				    uint64_t len, uint64_t ack, int may_defer)
{
	zcr_zero(a, sizeof(*a));
	zcr_list_init(&a->stall_link);
	a->comm = comm;
	a->src = src;
	a->tag = tag;
	a->len = len;
	a->ack = ack;
	a->may_defer = may_defer && ctx->policy != ZCRECV_POLICY_REMAP;
	a->defer_any = a->may_defer && may_defer == ZCR_DEFER_ANY;
	return find_landing(ctx, a);
}

int __zcr_match_arrive_sync_locked(struct zcr_ctx *ctx, struct zcr_arrival *a,
				   uint32_t comm, int src, int tag,
				   uint64_t len, uint64_t ack)
{
	return __zcr_match_arrive_defer_locked(ctx, a, comm, src, tag, len,
					       ack, 0);
}

int __zcr_match_arrive_comm_locked(struct zcr_ctx *ctx, struct zcr_arrival *a,
				   uint32_t comm, int src, int tag,
				   uint64_t len)
{
	return __zcr_match_arrive_sync_locked(ctx, a, comm, src, tag, len, 0);
}

int __zcr_match_arrive_locked(struct zcr_ctx *ctx, struct zcr_arrival *a,
			      int src, int tag, uint64_t len)
{
	return __zcr_match_arrive_comm_locked(ctx, a, 0, src, tag, len);
}

void __zcr_match_arrive_bound_locked(struct zcr_ctx *ctx,
				     struct zcr_arrival *a, struct zcr_req *r,
				     int src, int tag, uint64_t len)
{
	zcr_zero(a, sizeof(*a));
	zcr_list_init(&a->stall_link);
	a->comm = r->comm;
	a->src = src;
	a->tag = tag;
	a->len = len;
	land_posted(ctx, a, r);
}

bool __zcr_match_unpost_first_locked(struct zcr_ctx *ctx, struct zcr_req *r)
{
	if (!r->posted || find_posted(ctx, r->comm, r->src, r->tag) != r)
		return false;
	zcr_list_del(&r->link);
	r->posted = false;
	return true;
}

/*
 * Take m off the queue and give its slot back. Staging room was freed:
 * stalled arrivals may land at the next drain.
 */
static void msg_free_as(struct zcr_ctx *ctx, struct zcr_msg *m,
			bool abandoned)
{
	/* Not delivered (aborted, or the context goes): dst as it was. */
	__zcr_remap_unprepare_locked(ctx, m->slot, abandoned);
	zcr_list_del(&m->link);
	if (m->counted)
		ctx->nunexpected_big--;
	if (m->peer) {
		m->peer->bytes -= m->slot->cap;
		peer_put(ctx, m->peer);
	}
	__zcr_slot_put_locked(ctx, m->slot);
	if (!zcr_list_empty(&ctx->stalled))
		ctx->drain_pending = true;
	free(m);
}

static void msg_free(struct zcr_ctx *ctx, struct zcr_msg *m)
{
	msg_free_as(ctx, m, false);
}

/* Bytes of m for r, and may they be remapped (r has m's page offset)? */
static size_t msg_fit_buf(struct zcr_ctx *ctx, struct zcr_msg *m,
			  const void *buf, size_t size, bool *same)
{
	*same = ((uintptr_t)buf & (ctx->page - 1)) ==
		(m->off & (ctx->page - 1));
	return m->len < size ? m->len : size;
}

static size_t msg_fit(struct zcr_ctx *ctx, struct zcr_msg *m,
		      struct zcr_req *r, bool *same)
{
	return msg_fit_buf(ctx, m, r->buf, r->size, same);
}

/*
 * Receive r takes m, whose payload is still landing: delivered when it is
 * in; meanwhile the landing is decided and a remap prepared (the backend
 * may take r's old pages out while the payload comes).
 */
static void msg_await(struct zcr_ctx *ctx, struct zcr_msg *m,
		      struct zcr_req *r)
{
	bool same;
	size_t n = msg_fit(ctx, m, r, &same);

	m->req = r;
	__zcr_remap_prepare_locked(ctx, m->slot, m->off, r->buf, n,
				   same && m->len <= r->size, m->by);
}

/* Copy or remap a complete staged message into receive r, free it. */
/*
 * The complete message m into buf (size bytes), its status into st; m is
 * freed. Returns 0, or -EMSGSIZE when it was longer than size.
 */
static int msg_land(struct zcr_ctx *ctx, struct zcr_msg *m, void *buf,
		    size_t size, struct zcr_status *st)
{
	bool same;
	size_t n = msg_fit_buf(ctx, m, buf, size, &same);

	if (same)
		ctx->st.hits++;
	else
		ctx->st.misses++;
	/* A truncated message is copied: its last page is not the sender's. */
	__zcr_remap_deliver_locked(ctx, m->slot, m->off, buf, n,
				   same && m->len <= size, m->by);
	/* Pages moved in behind the page versions' back (pagever.h). */
	if (ctx->pv && n)
		__zcr_pv_bump(ctx->pv, buf, n);
	st->source = m->src;
	st->tag = m->tag;
	st->len = m->len;
	ctx->st.msgs_recv++;
	msg_free(ctx, m);
	return st->len > size ? -EMSGSIZE : 0;
}

static void msg_deliver(struct zcr_ctx *ctx, struct zcr_msg *m,
			struct zcr_req *r)
{
	int err = msg_land(ctx, m, r->buf, r->size, &r->st);

	r->mmsg = NULL;
	__zcr_req_complete_locked(r, err);
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
		if (m->req && !m->req->claim)
			msg_deliver(ctx, m, m->req);
	}
	a->req = NULL;
	a->msg = NULL;
	a->state = ZCR_RX_IDLE;
}

static bool take_queued(struct zcr_ctx *ctx, struct zcr_req *r);

/*
 * The message that claimed receive r was cut short. A receive naming its
 * source fails; a wildcard one (ZCRECV_ANY_SOURCE) could have taken any
 * other message, so it goes back to the posted queue in the place it was
 * posted, and takes a message that arrived meanwhile if one matches.
 */
static void claimant_lost(struct zcr_ctx *ctx, struct zcr_req *r)
{
	struct zcr_list *pos;

	r->mmsg = NULL;
	if (r->src != ZCRECV_ANY_SOURCE) {
		__zcr_req_complete_locked(r, -ECONNRESET);
		return;
	}
	r->st.source = ZCRECV_ANY_SOURCE;
	r->st.tag = ZCRECV_ANY_TAG;
	r->st.len = 0;
	if (take_queued(ctx, r))
		return;
	for (pos = ctx->posted.prev; pos != &ctx->posted; pos = pos->prev)
		if (zcr_container_of(pos, struct zcr_req, link)->post_seq <
		    r->post_seq)
			break;
	zcr_list_add_tail(&r->link, pos->next);
	r->posted = true;
	/* Posted again: what it waits for may be behind a deferred one. */
	if (!zcr_list_empty(&ctx->stalled))
		__zcr_match_release_deferred_locked(ctx, ZCRECV_ANY_SOURCE);
}

void __zcr_match_abort_locked(struct zcr_ctx *ctx, struct zcr_arrival *a)
{
	struct zcr_req *r = a->req;

	unstall(a);
	a->req = NULL;
	if (r)
		claimant_lost(ctx, r);
	if (a->msg) {
		struct zcr_msg *m = a->msg;

		r = m->req;
		a->msg = NULL;
		msg_free(ctx, m);
		if (r)
			claimant_lost(ctx, r);
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

	/* As in MPI, a receive may name a rank that has not connected yet. */
	if (ctx->listening)
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
	 * those naming its rank, and those that no connection left (nor the
	 * listener, while there is one) can satisfy, e.g. a source named
	 * while this connection was still in its handshake.
	 */
	zcr_list_for_each_safe(pos, tmp, &ctx->posted) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		if ((gone && r->src == rank) ||
		    !__zcr_source_possible(ctx, r->src)) {
			zcr_list_del(&r->link);
			r->posted = false;
			__zcr_req_complete_locked(r, -ECONNRESET);
		}
	}
}

bool __zcr_match_take_now_locked(struct zcr_ctx *ctx, uint32_t comm,
				 int src, int tag, void *buf, size_t size,
				 struct zcr_status *st)
{
	struct zcr_list *pos;

	for (pos = ctx->unexpected.next; pos != &ctx->unexpected;
	     pos = pos->next) {
		struct zcr_msg *m = zcr_container_of(pos, struct zcr_msg, link);

		if (m->req || m->comm != comm ||
		    !__zcr_match(src, tag, m->src, m->tag))
			continue;
		/* Still landing: a request to complete later (general). */
		if (!m->complete)
			return false;
		/* As msg_deliver() does for a request, into buf. */
		matched(ctx, m->ep, m->rank, m->ack);
		st->error = msg_land(ctx, m, buf, size, st);
		return true;
	}
	return false;
}

/*
 * Receive r takes the first queued message it matches, else the first
 * stalled header. Returns true when it got one.
 */
static bool take_queued(struct zcr_ctx *ctx, struct zcr_req *r)
{
	struct zcr_list *pos;

	for (pos = ctx->unexpected.next; pos != &ctx->unexpected;
	     pos = pos->next) {
		struct zcr_msg *m = zcr_container_of(pos, struct zcr_msg, link);

		if (m->req || m->comm != r->comm ||
		    !__zcr_match(r->src, r->tag, m->src, m->tag))
			continue;
		matched(ctx, m->ep, m->rank, m->ack);
		if (m->complete)
			msg_deliver(ctx, m, r);
		else
			msg_await(ctx, m, r);
		return true;
	}
	for (pos = ctx->stalled.next; pos != &ctx->stalled; pos = pos->next) {
		struct zcr_arrival *a = zcr_container_of(pos,
							 struct zcr_arrival,
							 stall_link);

		if (a->comm == r->comm &&
		    __zcr_match(r->src, r->tag, a->src, a->tag)) {
			land_posted(ctx, a, r);
			return true;
		}
	}
	return false;
}

int __zcr_match_claim_locked(struct zcr_ctx *ctx, struct zcr_req *r,
			     int src, int tag)
{
	struct zcr_arrival *a = NULL;
	struct zcr_list *pos;
	struct zcr_msg *m;

	for (pos = ctx->unexpected.next; pos != &ctx->unexpected;
	     pos = pos->next) {
		m = zcr_container_of(pos, struct zcr_msg, link);
		if (!m->req && m->comm == r->comm &&
		    __zcr_match(src, tag, m->src, m->tag)) {
			m->req = r;	/* no receive takes it now */
			r->mmsg = m;
			matched(ctx, m->ep, m->rank, m->ack);
			r->src = m->src;
			r->tag = m->tag;
			r->st.source = m->src;
			r->st.tag = m->tag;
			r->st.len = m->len;
			return 1;
		}
	}
	for (pos = ctx->stalled.next; pos != &ctx->stalled; pos = pos->next) {
		a = zcr_container_of(pos, struct zcr_arrival, stall_link);
		if (a->comm == r->comm && __zcr_match(src, tag, a->src, a->tag))
			break;
		a = NULL;
	}
	if (!a) {
		/* It may come behind a deferred message: stage those. */
		if (!zcr_list_empty(&ctx->stalled))
			__zcr_match_release_deferred_locked(ctx, src);
		return 0;
	}
	/* Staging is full: it lands in a buffer of its own. */
	r->own = a->len <= SIZE_MAX ? malloc(a->len ? (size_t)a->len : 1) :
		 NULL;
	if (!r->own)
		return -ENOMEM;
	r->buf = r->own;
	r->size = (size_t)a->len;
	r->src = a->src;
	r->tag = a->tag;
	land_posted(ctx, a, r);
	return 1;
}

void __zcr_match_mrecv_locked(struct zcr_ctx *ctx, struct zcr_req *r,
			      void *buf, size_t size)
{
	r->claim = false;
	if (!r->mmsg) {		/* in r->own, or failed */
		r->ubuf = buf;
		r->usize = size;
		return;
	}
	r->buf = buf;
	r->size = size;
	if (r->mmsg->complete)
		msg_deliver(ctx, r->mmsg, r);
	else
		msg_await(ctx, r->mmsg, r);
}

/* Where take_queued() would look, in the same order; nothing taken. */
bool __zcr_match_probe_locked(struct zcr_ctx *ctx, uint32_t comm, int src,
			      int tag, struct zcr_status *st)
{
	struct zcr_list *pos;
	int s = -1, t = -1;
	uint64_t len = 0;

	for (pos = ctx->unexpected.next; pos != &ctx->unexpected;
	     pos = pos->next) {
		struct zcr_msg *m = zcr_container_of(pos, struct zcr_msg, link);

		if (!m->req && m->comm == comm &&
		    __zcr_match(src, tag, m->src, m->tag)) {
			s = m->src;
			t = m->tag;
			len = m->len;
			goto found;
		}
	}
	for (pos = ctx->stalled.next; pos != &ctx->stalled; pos = pos->next) {
		struct zcr_arrival *a = zcr_container_of(pos,
							 struct zcr_arrival,
							 stall_link);

		if (a->comm == comm && __zcr_match(src, tag, a->src, a->tag)) {
			s = a->src;
			t = a->tag;
			len = a->len;
			goto found;
		}
	}
	/* What the probe looks for may come behind a deferred message. */
	if (!zcr_list_empty(&ctx->stalled))
		__zcr_match_release_deferred_locked(ctx, src);
	return false;
found:
	st->source = s;
	st->tag = t;
	st->len = len;
	st->error = 0;
	return true;
}

int __zcr_post_recv_locked(struct zcr_ctx *ctx, struct zcr_req *r)
{
	r->post_seq = ++ctx->post_seq;
	if (take_queued(ctx, r))
		return 0;
	if (!__zcr_source_possible(ctx, r->src))
		return r->src == ZCRECV_ANY_SOURCE ? -ENOTCONN : -ECONNRESET;
	zcr_list_add_tail(&r->link, &ctx->posted);
	r->posted = true;
	/* Its message may come behind one deferred from its source. */
	if (!zcr_list_empty(&ctx->stalled))
		__zcr_match_release_deferred_locked(ctx, r->src);
	return 0;
}

int __zcr_match_cancel_locked(struct zcr_ctx *ctx, struct zcr_req *r)
{
	(void)ctx;
	if (!r->posted)
		return -EBUSY;
	zcr_list_del(&r->link);
	r->posted = false;
	__zcr_req_complete_locked(r, -ECANCELED);
	return 0;
}

void __zcr_match_fini(struct zcr_ctx *ctx)
{
	struct zcr_list *pos, *tmp;

	/*
	 * Pending requests are abandoned, so they are ours to free: receives
	 * still posted, landing (a->req) or matched to a message still
	 * arriving (m->req). Completed ones are on ctx->done_reqs, which
	 * zcr_ctx_destroy() frees.
	 */
	zcr_list_for_each_safe(pos, tmp, &ctx->posted) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		zcr_list_del(&r->link);
		free(r);
	}
	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (ep->rx.req && !ep->rx.req->done) {
			free(ep->rx.req->own);
			free(ep->rx.req);
		}
		ep->rx.req = NULL;
		ep->rx.msg = NULL;
	}
	zcr_list_for_each_safe(pos, tmp, &ctx->unexpected) {
		struct zcr_msg *m = zcr_container_of(pos, struct zcr_msg, link);

		if (m->req && !m->req->done)
			free(m->req);
		msg_free_as(ctx, m, true);	/* its receive is abandoned */
	}
	zcr_list_for_each_safe(pos, tmp, &ctx->peers) {
		zcr_list_del(pos);
		free(zcr_container_of(pos, struct zcr_peer, link));
	}
	zcr_list_for_each_safe(pos, tmp, &ctx->acks) {
		zcr_list_del(pos);
		free(zcr_container_of(pos, struct zcr_ack, link));
	}
	ctx->npeers = 0;
}
