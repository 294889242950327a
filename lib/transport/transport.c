// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * transport.c - the transport registry and the part of an endpoint's life
 * that is the same whatever carries it: creation, the end of the
 * handshake, failure, sending, hand-off to another transport, freeing.
 *
 * A new transport is one folder under lib/transport/ and one line in
 * TRANSPORTS below (Documentation/extending.md).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ctx.h"
#include "base/ops.h"
#include "match/match.h"
#include "prefetch/prefetch.h"
#include "transport/transport.h"

/*
 * The registry: every transport, one line X(NAME) each, in the order a
 * context sets them up; the first also takes addresses without a scheme,
 * so a new one is appended (each line ends in a backslash, up to the
 * closing comment). X(NAME) declares NAME's table
 * (ZCR_TRANSPORT(NAME) in its folder) and defines its completed copy.
 */
#define TRANSPORTS(X)	\
	X(tcp)		\
	X(shm)		\
	X(verbs)	\
	/* end of the registry */

#define DECLARE(n) \
	extern ZCR_TRANSPORT(n); \
	struct zcr_transport_ops __zcr_transport_##n;
TRANSPORTS(DECLARE)

static const struct zcr_reg_entry registry[] = {
#define ENTRY(n) { #n, &__zcr_transport_##n##_def, &__zcr_transport_##n },
	TRANSPORTS(ENTRY)
};

#define NREG	(int)(sizeof(registry) / sizeof(registry[0]))

_Static_assert(NREG <= ZCR_MAX_TRANSPORTS,
	       "more transports than ZCR_MAX_TRANSPORTS (lib/base/ctx.h)");

/* The defaults of the optional ops (lib/transport/transport.h). */
static int no_init(struct zcr_ctx *ctx, void **priv)
{
	(void)ctx;
	*priv = NULL;
	return 0;
}

static void no_fini(struct zcr_ctx *ctx, void *priv)
{
	(void)ctx;
	(void)priv;
}

static int no_listen(struct zcr_ctx *ctx, void *priv, const char *addr)
{
	(void)ctx;
	(void)priv;
	(void)addr;
	return -EOPNOTSUPP;
}

static int no_connect(struct zcr_ctx *ctx, void *priv, const char *addr,
		      void **ep_priv)
{
	(void)ctx;
	(void)priv;
	(void)addr;
	(void)ep_priv;
	return -EOPNOTSUPP;
}

static void no_start(struct zcr_ep *ep)
{
	(void)ep;
}

static unsigned int no_poll_max(struct zcr_ctx *ctx, void *priv)
{
	(void)ctx;
	(void)priv;
	return 0;
}

static unsigned int no_poll_fill(struct zcr_ctx *ctx, void *priv,
				 struct pollfd *pfd, unsigned int max,
				 uint64_t *deadline)
{
	(void)ctx;
	(void)priv;
	(void)pfd;
	(void)max;
	(void)deadline;
	return 0;
}

static int no_progress(struct zcr_ctx *ctx, void *priv)
{
	(void)ctx;
	(void)priv;
	return 0;
}

static void no_poll_done(struct zcr_ctx *ctx, void *priv,
			 const struct pollfd *pfd, unsigned int n)
{
	(void)ctx;
	(void)priv;
	(void)pfd;
	(void)n;
}

static int no_adopt(struct zcr_ep *ep, const struct zcr_transport_ops *prev,
		    void *prev_priv, void *arg)
{
	(void)ep;
	(void)prev;
	(void)prev_priv;
	(void)arg;
	return -EOPNOTSUPP;
}

static int no_pf_ask(struct zcr_ep *ep, const struct zcr_pf_ask *a)
{
	(void)ep;
	(void)a;
	return -EOPNOTSUPP;
}

static int no_recv_offer(struct zcr_ep *ep, struct zcr_req *r, void **bind)
{
	(void)ep;
	(void)r;
	(void)bind;
	return 0;
}

static int no_recv_cancel(struct zcr_ep *ep, struct zcr_req *r)
{
	(void)ep;
	(void)r;
	return -EBUSY;
}

static void no_bind_put(struct zcr_ctx *ctx, void *bind)
{
	(void)ctx;
	(void)bind;
}

static void no_send_unbind(struct zcr_ctx *ctx, void *priv, const void *buf,
			   size_t len)
{
	(void)ctx;
	(void)priv;
	(void)buf;
	(void)len;
}

static int no_send_now(struct zcr_ep *ep, uint32_t comm, const void *buf,
		       size_t len, int tag, uint64_t seq)
{
	(void)ep;
	(void)comm;
	(void)buf;
	(void)len;
	(void)tag;
	(void)seq;
	return -EAGAIN;
}

static const struct zcr_transport_ops defaults = {
	.size = sizeof(struct zcr_transport_ops),
	.init = no_init,
	.fini = no_fini,
	.listen = no_listen,
	.connect = no_connect,
	.start = no_start,
	.poll_max = no_poll_max,
	.poll_fill = no_poll_fill,
	.poll_done = no_poll_done,
	.progress = no_progress,
	.adopt = no_adopt,
	.pf_ask = no_pf_ask,
	.recv_offer = no_recv_offer,
	.recv_cancel = no_recv_cancel,
	.bind_put = no_bind_put,
	.send_unbind = no_send_unbind,
	.send_now = no_send_now,
};

#define OP(m, req)	ZCR_OP(struct zcr_transport_ops, m, req)
static const struct zcr_op members[] = {
	OP(name, true), OP(scheme, false), OP(init, false), OP(fini, false),
	OP(listen, false), OP(connect, false), OP(start, false),
	OP(poll_max, false), OP(poll_fill, false), OP(poll_done, false),
	OP(progress, false), OP(send, true), OP(ep_close, true),
	OP(ep_free, true), OP(adopt, false), OP(pf_ask, false),
	OP(recv_offer, false), OP(recv_cancel, false), OP(bind_put, false),
	OP(send_unbind, false), OP(send_now, false),
};

static const struct zcr_kind kind = {
	.kind = "transport",
	.full = sizeof(struct zcr_transport_ops),
	.dflt = &defaults,
	.ops = members,
	.nops = sizeof(members) / sizeof(members[0]),
};

int __zcr_transport_ops_set(struct zcr_transport_ops *out,
			    const struct zcr_transport_ops *in,
			    const char *name)
{
	return __zcr_ops_set(&kind, name, out, in);
}

static pthread_once_t registered = PTHREAD_ONCE_INIT;
static int register_err;

static void register_all(void)
{
	register_err = __zcr_registry_complete(&kind, registry, NREG);
}

int __zcr_transports_init(struct zcr_ctx *ctx)
{
	int i, ret;

	pthread_once(&registered, register_all);
	if (register_err)
		return register_err;
	for (i = 0; i < NREG; i++) {
		const struct zcr_transport_ops *ops = registry[i].ops;
		struct zcr_transport *t = &ctx->tr[ctx->ntr];

		t->ops = ops;
		t->priv = NULL;
		ret = ops->init(ctx, &t->priv);
		if (ret) {
			__zcr_transports_fini(ctx);
			return ret;
		}
		ctx->ntr++;
	}
	return ctx->ntr ? 0 : -ENOPROTOOPT;
}

void __zcr_transports_send_unbind(struct zcr_ctx *ctx, const void *buf,
				  size_t len)
{
	int i;

	for (i = 0; i < ctx->ntr; i++)
		ctx->tr[i].ops->send_unbind(ctx, ctx->tr[i].priv, buf, len);
}

void __zcr_transports_fini(struct zcr_ctx *ctx)
{
	while (ctx->ntr > 0) {
		struct zcr_transport *t = &ctx->tr[--ctx->ntr];

		t->ops->fini(ctx, t->priv);
		t->priv = NULL;
	}
}

struct zcr_transport *__zcr_transport_find(struct zcr_ctx *ctx,
					   const char *addr,
					   const char **rest)
{
	const char *sep = strstr(addr, "://");
	size_t n;
	int i;

	if (!sep) {
		*rest = addr;
		return ctx->ntr ? &ctx->tr[0] : NULL;
	}
	n = (size_t)(sep - addr);
	for (i = 0; i < ctx->ntr; i++) {
		const char *s = ctx->tr[i].ops->scheme;

		if (s && strlen(s) == n && !memcmp(s, addr, n)) {
			*rest = sep + 3;
			return &ctx->tr[i];
		}
	}
	return NULL;
}

struct zcr_ep *__zcr_ep_new_locked(struct zcr_ctx *ctx,
				   const struct zcr_transport_ops *ops,
				   void *ep_priv, bool accepted)
{
	struct zcr_ep *ep;

	ep = calloc(1, sizeof(*ep));
	if (!ep) {
		ops->ep_close(NULL, ep_priv);
		ops->ep_free(NULL, ep_priv);
		return NULL;
	}
	ep->ctx = ctx;
	ep->tp = ops;
	ep->tp_priv = ep_priv;
	ep->rank = -1;
	ep->peer_max_msg = UINT64_MAX;
	ep->accepted = accepted;
	ep->state = ZCR_EP_HANDSHAKE;
	ep->hs_deadline = zcr_now_ns() + ctx->hs_timeout_ns;
	ctx->nhandshake++;
	zcr_list_init(&ep->sendq);
	zcr_list_init(&ep->ackq);
	zcr_list_init(&ep->rx.stall_link);
	snprintf(ep->peer, sizeof(ep->peer), "%s peer", ops->name);
	zcr_list_add_tail(&ep->link, &ctx->eps);
	ctx->nep++;
	ops->start(ep);
	return ep;
}

unsigned int __zcr_ep_live_locked(struct zcr_ctx *ctx)
{
	struct zcr_list *pos;
	unsigned int n = 0;

	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next)
		if (zcr_container_of(pos, struct zcr_ep, link)->state !=
		    ZCR_EP_CLOSED)
			n++;
	return n;
}

/*
 * Is rank taken by an open endpoint? In a job (zcr_ctx_create_job()) a
 * pair may have two connections, one dialled by each
 * (zcr_ctx_job_ep()): only one of the same direction as like (if not
 * NULL) counts.
 */
static bool rank_has_open_ep(struct zcr_ctx *ctx, int rank,
			     const struct zcr_ep *like)
{
	struct zcr_list *pos;

	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (ep->state == ZCR_EP_OPEN && ep->rank == rank &&
		    (!like || !ctx->job || ep->accepted == like->accepted))
			return true;
	}
	return false;
}

/*
 * Sends queued during the handshake (transports hold them until the
 * endpoint opens): fail those above the peer's max_msg, now known, and
 * number the rest from 1 again.
 */
static void sends_checked(struct zcr_ep *ep)
{
	struct zcr_list *pos, *tmp;

	ep->send_seq = 0;
	zcr_list_for_each_safe(pos, tmp, &ep->sendq) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		if (r->len > ep->peer_max_msg || (r->comm && !ep->comm_ok)) {
			zcr_list_del(&r->link);
			__zcr_req_complete_locked(r, r->comm && !ep->comm_ok ?
						  -EPROTONOSUPPORT : -EMSGSIZE);
		} else {
			r->seq = ++ep->send_seq;
			r->sync = r->sync && ep->sync_ok;
		}
	}
}

int __zcr_ep_open_locked(struct zcr_ep *ep, int rank)
{
	struct zcr_ctx *ctx = ep->ctx;

	if (ep->state != ZCR_EP_HANDSHAKE) {
		__zcr_ep_fail_locked(ep, -EPROTO, "second handshake");
		return -EPROTO;
	}
	/* A job's rank may talk to itself: its two ends are one process. */
	if (rank < 0 || (rank == ctx->rank && !ctx->job) ||
	    rank_has_open_ep(ctx, rank, ep)) {
		__zcr_ep_fail_locked(ep, -EADDRINUSE,
				     "peer claims rank %d, already in use",
				     rank);
		return -EADDRINUSE;
	}
	if (__zcr_match_peer_open_locked(ctx, rank)) {
		__zcr_ep_fail_locked(ep, -ENOMEM, "out of memory");
		return -ENOMEM;
	}
	ep->rank = rank;
	ep->state = ZCR_EP_OPEN;
	ctx->nhandshake--;
	sends_checked(ep);
	pthread_cond_broadcast(&ctx->cond);
	return 0;
}

/*
 * In a job both directions of a pair may ride on one connection (job.c:
 * a pair that talks both ways shares one) while the other stays open and
 * idle. A connection that carried the pair's messages ends the pair:
 * otherwise the idle one would keep the rank "reachable" and a receive
 * from it would wait for ever for messages nothing can carry any more.
 */
static bool carried_pair(struct zcr_ctx *ctx, const struct zcr_ep *ep)
{
	struct zcr_list *pos;

	if (!ctx->job || ep->rank < 0)
		return false;
	if (ep->send_seq || ep->recv_seq)
		return true;
	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *e = zcr_container_of(pos, struct zcr_ep, link);

		if (e->send_via == ep)
			return true;
	}
	return false;
}

/* Fail every other open connection to ep's rank (each fails once). */
static void fail_pair(struct zcr_ctx *ctx, struct zcr_ep *ep, int err)
{
	struct zcr_list *pos;
	bool again = true;

	while (again) {
		again = false;
		for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
			struct zcr_ep *e = zcr_container_of(pos, struct zcr_ep,
							    link);

			if (e == ep || e->rank != ep->rank ||
			    e->state != ZCR_EP_OPEN)
				continue;
			/*
			 * Failing one may touch the list: look again. The
			 * message names the transport first, as its own
			 * failures do (libzcrecv-mpi's report counts shm
			 * peers by it).
			 */
			__zcr_ep_fail_locked(e, err, "%s: the connection "
					     "that carried this pair's "
					     "messages ended", e->tp->name);
			again = true;
			break;
		}
	}
}

void __zcr_ep_fail_locked(struct zcr_ep *ep, int err, const char *fmt, ...)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct zcr_list *pos, *tmp;
	va_list ap;

	if (ep->state == ZCR_EP_CLOSED)
		return;
	if (ep->state == ZCR_EP_HANDSHAKE)
		ctx->nhandshake--;
	else
		__zcr_match_peer_closed_locked(ctx, ep->rank);
	ep->state = ZCR_EP_CLOSED;
	if (ep->accepted && !ep->returned)
		ctx->reap_pending = true;	/* nobody else will free it */
	ep->error = err;
	va_start(ap, fmt);
	vsnprintf(ep->errmsg, sizeof(ep->errmsg), fmt, ap);
	va_end(ap);
	if (!ctx->quiet)
		fprintf(stderr, "zcrecv: rank %d: connection to %s (rank %d) "
			"closed: %s (%s)\n", ctx->rank, ep->peer, ep->rank,
			ep->errmsg, strerror(-err));
	ep->tp->ep_close(ep, ep->tp_priv);
	ctx->st.disconnects++;

	__zcr_ep_fail_sends_locked(ep, -ECONNRESET);
	/* Sent, but no receive is known to have matched them. */
	zcr_list_for_each_safe(pos, tmp, &ep->ackq) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		zcr_list_del(&r->link);
		__zcr_req_complete_locked(r, -ECONNRESET);
	}
	/* A message cut short is never delivered. */
	__zcr_match_abort_locked(ctx, &ep->rx);
	if (carried_pair(ctx, ep))
		fail_pair(ctx, ep, err);
	__zcr_match_source_lost_locked(ctx, ep->rank, ep->rank >= 0 &&
				       !rank_has_open_ep(ctx, ep->rank, NULL));
}

void __zcr_ep_fail_sends_locked(struct zcr_ep *ep, int err)
{
	struct zcr_list *pos, *tmp;

	zcr_list_for_each_safe(pos, tmp, &ep->sendq) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		zcr_list_del(&r->link);
		if (r->kind == ZCR_REQ_ACK)
			__zcr_req_free_ctl(r);
		else
			__zcr_req_complete_locked(r, err);
	}
}

int __zcr_ep_send_locked(struct zcr_ep *ep, struct zcr_req *r)
{
	if (ep->state == ZCR_EP_CLOSED)
		return ep->error ? ep->error : -ENOTCONN;
	if (r->len > ep->peer_max_msg)
		return -EMSGSIZE;
	if (r->comm && ep->state == ZCR_EP_OPEN && !ep->comm_ok)
		return -EPROTONOSUPPORT;	/* an old peer: comm 0 only */
	/* A peer that does not acknowledge: a standard send. */
	if (ep->state == ZCR_EP_OPEN && !ep->sync_ok)
		r->sync = false;
	r->seq = ++ep->send_seq;
	r->sent = 0;
	return ep->tp->send(ep, r);
}

int __zcr_ep_send_now_locked(struct zcr_ep *ep, uint32_t comm,
			     const void *buf, size_t len, int tag)
{
	int ret;

	/*
	 * The general path's checks, but for a connection still in its
	 * handshake (its sends queue, and may be renumbered) or one that
	 * prefetches (its sends carry plans): those take that path.
	 */
	if (ep->state != ZCR_EP_OPEN || ep->pf)
		return -EAGAIN;
	if (len > ep->peer_max_msg)
		return -EMSGSIZE;
	if (comm && !ep->comm_ok)
		return -EPROTONOSUPPORT;
	ret = ep->tp->send_now(ep, comm, buf, len, tag, ep->send_seq + 1);
	if (ret)
		return ret;
	ep->send_seq++;
	ep->ctx->st.msgs_sent++;
	ep->ctx->st.bytes_sent += len;
	return 0;
}

/* Free the requests on list q: abandoned with their endpoint. */
static void reqs_free(struct zcr_list *q)
{
	struct zcr_list *pos, *tmp;

	zcr_list_for_each_safe(pos, tmp, q) {
		zcr_list_del(pos);
		__zcr_req_free_ctl(zcr_container_of(pos, struct zcr_req, link));
	}
}

void __zcr_ep_free(struct zcr_ep *ep)
{
	reqs_free(&ep->sendq);
	reqs_free(&ep->ackq);
	if (ep->rx.state == ZCR_RX_STALLED)
		zcr_list_del(&ep->rx.stall_link);
	if (ep->state != ZCR_EP_CLOSED)
		ep->tp->ep_close(ep, ep->tp_priv);
	ep->tp->ep_free(ep, ep->tp_priv);
	ep->tp_priv = NULL;
	__zcr_pf_ep_fini(ep);
	zcr_list_del(&ep->link);
	ep->ctx->nep--;
	if (ep->state == ZCR_EP_HANDSHAKE)
		ep->ctx->nhandshake--;
	free(ep);
}

/*
 * Send the ACKs match queued (ctx->acks) on their endpoints, each behind
 * the messages already queued there; those whose endpoint closed are
 * dropped (the sender's send failed with the connection).
 */
void __zcr_ep_acks_flush_locked(struct zcr_ctx *ctx)
{
	struct zcr_list *pos, *tmp, *e;

	zcr_list_for_each_safe(pos, tmp, &ctx->acks) {
		struct zcr_ack *k = zcr_container_of(pos, struct zcr_ack, link);
		struct zcr_ep *ep = NULL;
		struct zcr_req *r;

		for (e = ctx->eps.next; e != &ctx->eps; e = e->next)
			if (zcr_container_of(e, struct zcr_ep, link) == k->ep) {
				ep = k->ep;
				break;
			}
		r = ep && ep->state == ZCR_EP_OPEN && ep->rank == k->rank &&
		    ep->sync_ok ? calloc(1, sizeof(*r)) : NULL;
		if (ep && !r && ep->state == ZCR_EP_OPEN && ep->sync_ok)
			return;		/* no memory: try again later */
		zcr_list_del(&k->link);
		if (r) {
			r->ctx = ctx;
			r->kind = ZCR_REQ_ACK;
			r->ep = ep;
			r->seq = k->seq;
			/* Refused (the peer is gone): nobody awaits it. */
			if (ep->tp->send(ep, r))
				free(r);
		}
		free(k);
	}
}

void __zcr_ep_acked_locked(struct zcr_ep *ep, uint64_t seq)
{
	struct zcr_list *pos;

	for (pos = ep->ackq.next; pos != &ep->ackq; pos = pos->next) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		if (r->seq == seq) {
			zcr_list_del(&r->link);
			__zcr_req_complete_locked(r, 0);
			return;
		}
	}
	__zcr_ep_fail_locked(ep, -EPROTO, "acknowledgement of message %llu, "
			     "not awaited", (unsigned long long)seq);
}

int __zcr_ep_handoff_locked(struct zcr_ep *ep,
			    const struct zcr_transport_ops *to, void *arg)
{
	const struct zcr_transport_ops *prev = ep->tp;
	void *prev_priv = ep->tp_priv;
	struct zcr_list *pos;
	int ret;

	if (to->adopt == no_adopt)
		return -EOPNOTSUPP;
	if (ep->state != ZCR_EP_OPEN)
		return -ENOTCONN;
	if (ep->rx.state != ZCR_RX_IDLE)
		return -EBUSY;
	/* Queued sends move along, unless one has started on the old path. */
	for (pos = ep->sendq.next; pos != &ep->sendq; pos = pos->next)
		if (zcr_container_of(pos, struct zcr_req, link)->sent)
			return -EBUSY;
	ep->tp = to;
	ep->tp_priv = NULL;
	ret = to->adopt(ep, prev, prev_priv, arg);
	if (ret) {
		ep->tp = prev;
		ep->tp_priv = prev_priv;
	}
	return ret;
}

/*
 * A peer that connects and never completes its handshake would hold its
 * descriptor forever and, as a connection that might yet turn out to be
 * any rank, keep receives naming absent sources posted. The progress
 * engine calls this after the reads, so a handshake that did arrive is
 * taken even if we were slow to look.
 */
/*
 * The offer is made only where one connection leads to the sender: a
 * message of the same source and tag on another connection would not be
 * ordered with the one written into the buffer. A connection still in
 * its handshake may turn out to be that source's: no offer then either.
 */
int __zcr_ep_offer_recv_locked(struct zcr_ctx *ctx, struct zcr_req *r,
			       const struct zcr_transport_ops **tp,
			       void **bind)
{
	struct zcr_ep *ep = NULL;
	struct zcr_list *pos;
	int ret;

	if (!ctx->offer_eps || !r->posted || r->done || r->src < 0 ||
	    r->tag < 0 || ctx->nhandshake)
		return 0;
	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *e = zcr_container_of(pos, struct zcr_ep, link);

		if (e->state == ZCR_EP_CLOSED || e->rank != r->src)
			continue;
		if (ep)
			return 0;
		ep = e;
	}
	if (!ep || ep->state != ZCR_EP_OPEN || (*tp && *tp != ep->tp))
		return 0;
	ret = ep->tp->recv_offer(ep, r, bind);
	if (*bind)
		*tp = ep->tp;
	if (ret == 1) {
		r->offered = true;
		r->ep = ep;
	}
	return ret;
}

int __zcr_ep_cancel_offered_locked(struct zcr_req *r)
{
	return r->ep->tp->recv_cancel(r->ep, r);
}

int __zcr_ep_expire_handshakes_locked(struct zcr_ctx *ctx)
{
	struct zcr_list *pos, *tmp;
	uint64_t now;
	int n = 0;

	if (!ctx->nhandshake)
		return 0;
	now = zcr_now_ns();
	zcr_list_for_each_safe(pos, tmp, &ctx->eps) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (ep->state == ZCR_EP_HANDSHAKE && now >= ep->hs_deadline) {
			__zcr_ep_fail_locked(ep, -ETIMEDOUT,
					     "handshake timed out");
			n++;
		}
	}
	return n;
}

/*
 * An endpoint we accepted that closed before zcr_ep_accept() handed it
 * out is unreachable: the application has no pointer to it and, once
 * closed, nothing dereferences it. Free it, or a peer that connects and
 * drops in a loop grows the context without bound.
 */
void __zcr_ep_reap_locked(struct zcr_ctx *ctx)
{
	struct zcr_list *pos, *tmp;

	/* Every progress pass asks: walk the endpoints only when one is. */
	if (!ctx->reap_pending)
		return;
	ctx->reap_pending = false;
	zcr_list_for_each_safe(pos, tmp, &ctx->eps) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (ep->state == ZCR_EP_CLOSED && ep->accepted && !ep->returned)
			__zcr_ep_free(ep);
	}
}

struct zcr_req *__zcr_ep_ctl_req(struct zcr_ep *ep, char *body,
				 uint64_t len)
{
	struct zcr_req *r = calloc(1, sizeof(*r));

	if (!r) {
		free(body);
		return NULL;
	}
	r->ctx = ep->ctx;
	r->kind = ZCR_REQ_ACK;
	r->ctl = true;
	r->ep = ep;
	r->own = body;
	r->sbuf = body;
	r->len = len;
	return r;
}

void __zcr_ep_pf_ask_locked(struct zcr_ctx *ctx, struct zcr_req *r)
{
	struct zcr_list *pos;
	struct zcr_pf_ask a;

	if (r->src < 0)
		return;		/* a wildcard: whose buffer to ask for? */
	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		/*
		 * A rank may have two connections (both dialled at once):
		 * the one its messages came by holds the prediction.
		 */
		if (ep->rank != r->src || ep->state != ZCR_EP_OPEN || !ep->pf ||
		    !__zcr_pf_ask_locked(ep, r, &a))
			continue;
		if (ep->tp->pf_ask(ep, &a))
			__zcr_pf_asked_failed_locked(ep);
		return;
	}
}
