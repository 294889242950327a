/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * transport.h - the transport interface: how the progress engine drives a
 * transport, and the transport-independent endpoint code every transport
 * shares (lib/transport/transport.c).
 *
 * A transport is one folder under lib/transport/ that defines its struct
 * zcr_transport_ops with ZCR_TRANSPORT(NAME), and one line X(NAME) in the
 * registry of lib/transport/transport.c (the registry convention:
 * base/ops.h). The core never looks inside an endpoint's
 * transport state: it calls the ops. A transport calls down into match
 * (match/match.h) when a header arrives and when its payload is in; it
 * never calls the core. See Documentation/design.md and
 * Documentation/extending.md.
 *
 * Everything here runs under ctx->lock except the ops documented as
 * "unlocked".
 */
#ifndef ZCR_TRANSPORT_H
#define ZCR_TRANSPORT_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct zcr_ctx;
struct zcr_ep;
struct zcr_pf_ask;
struct zcr_req;
struct zcr_upgrade_ops;

/**
 * struct zcr_transport_ops - one transport
 * @size:	sizeof(struct zcr_transport_ops) the transport was built
 *		with: ops past @size are absent, so the struct can grow
 * @name:	required; short name for messages and statistics ("tcp")
 * @scheme:	address scheme it serves: "tcp" takes "tcp://HOST:PORT";
 *		the first transport of the registry also takes addresses
 *		without a scheme. NULL (the default): none, the transport
 *		is reached by hand-off only
 * @init:	per context, at zcr_ctx_create(): set *@priv to the
 *		transport's context state (may stay NULL). Returns 0 or
 *		-errno (the context is then not created). Default: no state
 * @fini:	per context, at zcr_ctx_destroy(), after every endpoint of
 *		the transport was freed. Default: nothing
 * @listen:	unlocked; bind and listen on @addr (scheme removed). Returns
 *		the port or another positive number identifying the
 *		listener, or -errno; -EBUSY if the transport listens already.
 *		Accepted connections become endpoints during @progress.
 *		Default: -EOPNOTSUPP
 * @connect:	unlocked; open a connection to @addr (scheme removed) and
 *		set *@ep_priv to its per-endpoint state. Returns 0 or -errno.
 *		The core then makes the endpoint and calls @start. Default:
 *		-EOPNOTSUPP
 * @start:	the endpoint @ep (ep->tp_priv set) was just created: begin
 *		the handshake (send HELLO). Failure is reported with
 *		__zcr_ep_fail_locked(). Default: nothing
 * @poll_max:	upper bound of the pollfd entries @poll_fill needs now.
 *		Default: 0
 * @poll_fill:	fill up to @max entries of @pfd with what the transport
 *		waits for (descriptors and events); lower *@deadline to the
 *		monotonic ns time it must run again at the latest (on entry
 *		it holds the caller's own deadline, UINT64_MAX for none: a
 *		transport that looks before it sleeps stops looking there,
 *		and may unlock ctx->lock meanwhile if it keeps nothing it
 *		found under it);
 *		0: work is waiting, poll not (the transports after this
 *		one are then neither filled nor told @poll_done). Returns
 *		the number of entries used. Default: none, no deadline
 * @poll_done:	after every @poll_fill, once poll(2) returned or was not
 *		needed: the @n entries @poll_fill gave, with revents (0 when
 *		poll timed out, failed or did not run; ctx->poll_answered
 *		says whether poll answered, a timeout included). Default:
 *		nothing
 * @progress:	do what can be done without blocking: accept, handshake,
 *		read (calling match upward for each header and each payload
 *		completed), write queued sends. Returns the number of events
 *		(messages moved, connections accepted or closed) or -errno.
 *		Default: 0 (a transport that moves data only in @send)
 * @send:	required; queue send request @r (on ep->sendq, r->sent =
 *		0) and start pushing it once the endpoint is open (until
 *		then the core may still renumber r->seq or fail r: see
 *		__zcr_ep_open_locked()); the transport completes it with
 *		__zcr_req_complete_locked() once written, or the endpoint
 *		fails. Returns 0 or -errno (r not queued)
 * @ep_close:	required; the endpoint failed or was closed: stop the I/O
 *		of its state @ep_priv and release its system resources
 *		(descriptors); @ep_priv stays until @ep_free. @ep is NULL
 *		for state that never became an endpoint
 * @ep_free:	required; free @ep_priv (after @ep_close); @ep may be NULL
 *		as for @ep_close
 * @adopt:	the endpoint's data path moves to this transport
 *		(see __zcr_ep_handoff_locked()): set ep->tp_priv from @arg;
 *		@prev and @prev_priv are the old transport and its endpoint
 *		state, now owned by this transport (it may keep the old
 *		connection as a control channel, and must release it with
 *		@prev->ep_close and @prev->ep_free). Returns 0 or -errno;
 *		on error the endpoint stays with @prev. Default:
 *		-EOPNOTSUPP, and __zcr_ep_handoff_locked() refuses the
 *		transport before anything changes
 * @upgrade:	optional. This transport can take over a connection of a
 *		stream transport once its handshake is through; the stream
 *		transport carries the negotiation (transport/upgrade.h)
 * @pf_ask:	send the prefetch request @a on @ep, which negotiated
 *		prefetching (ep->pf set; lib/prefetch). Returns 0 or -errno.
 *		Default: -EOPNOTSUPP (a transport that never sets ep->pf)
 * @recv_offer:	offer the buffer of receive @r to @ep's peer, which then
 *		writes its next message with r->tag straight into it. @r
 *		is a started persistent receive naming that peer and a tag,
 *		posted, and @ep is the only connection to it; *@bind is
 *		the transport's state of the buffer (its registration),
 *		kept by the persistent receive across its starts (NULL at
 *		the first), which @bind_put releases. The transport takes
 *		@r off match's posted queue itself
 *		(__zcr_match_unpost_first_locked()) and completes it.
 *		Returns 1 when it took @r, 0 when not (@r stays posted),
 *		or -errno. Default: 0
 * @recv_cancel: cancel receive @r that @recv_offer took on @ep: 0 when
 *		asked (@r completes later, with -ECANCELED or with the
 *		message the peer had already sent into it), -EBUSY when a
 *		message is known to be on its way into it. Default: -EBUSY
 * @bind_put:	the persistent receive that kept @bind is freed; the
 *		state may outlive it while an offer uses it. Default:
 *		nothing
 * @send_unbind: a persistent send of @len bytes at @buf is freed: a
 *		registration the transport kept for its sends (r->persist)
 *		must not outlive it (the buffer may be freed next).
 *		Default: nothing
 * @send_now:	optional; send @len bytes at @buf with @tag on @comm as
 *		message number @seq of open endpoint @ep and complete it
 *		within the call, with no request: only where the transport
 *		can do all of it at once (shm: one eager cell, nothing
 *		queued before it, room in the ring). 0 when sent; -EAGAIN
 *		when not (nothing done: the caller takes the general path,
 *		and @seq is not used); another -errno is the send's error.
 *		The core's checks of __zcr_ep_send_locked() come first.
 *		Default: -EAGAIN
 *
 * Receive side: for every incoming message a transport calls
 * __zcr_match_arrive_locked() with the header before it moves payload
 * bytes, lands the payload where the returned struct zcr_arrival says
 * (possibly writing it from another process, straight into a staging slot
 * or a posted buffer), then calls __zcr_match_payload_done_locked(). While
 * the arrival is stalled (ZCR_RX_STALLED: no room yet) it must not read
 * more from that endpoint; the progress engine drains stalled arrivals and
 * the state becomes ZCR_RX_LANDING when room was found.
 */
struct zcr_transport_ops {
	size_t size;
	const char *name;
	const char *scheme;
	int (*init)(struct zcr_ctx *ctx, void **priv);
	void (*fini)(struct zcr_ctx *ctx, void *priv);
	int (*listen)(struct zcr_ctx *ctx, void *priv, const char *addr);
	int (*connect)(struct zcr_ctx *ctx, void *priv, const char *addr,
		       void **ep_priv);
	void (*start)(struct zcr_ep *ep);
	unsigned int (*poll_max)(struct zcr_ctx *ctx, void *priv);
	unsigned int (*poll_fill)(struct zcr_ctx *ctx, void *priv,
				  struct pollfd *pfd, unsigned int max,
				  uint64_t *deadline);
	void (*poll_done)(struct zcr_ctx *ctx, void *priv,
			  const struct pollfd *pfd, unsigned int n);
	int (*progress)(struct zcr_ctx *ctx, void *priv);
	int (*send)(struct zcr_ep *ep, struct zcr_req *r);
	void (*ep_close)(struct zcr_ep *ep, void *ep_priv);
	void (*ep_free)(struct zcr_ep *ep, void *ep_priv);
	int (*adopt)(struct zcr_ep *ep, const struct zcr_transport_ops *prev,
		     void *prev_priv, void *arg);
	const struct zcr_upgrade_ops *upgrade;
	int (*pf_ask)(struct zcr_ep *ep, const struct zcr_pf_ask *a);
	int (*recv_offer)(struct zcr_ep *ep, struct zcr_req *r, void **bind);
	int (*recv_cancel)(struct zcr_ep *ep, struct zcr_req *r);
	void (*bind_put)(struct zcr_ctx *ctx, void *bind);
	void (*send_unbind)(struct zcr_ctx *ctx, void *priv, const void *buf,
			    size_t len);
	int (*send_now)(struct zcr_ep *ep, uint32_t comm, const void *buf,
			size_t len, int tag, uint64_t seq);
};

/*
 * Define transport NAME's ops table, starting with .size (base/ops.h):
 *
 *	ZCR_TRANSPORT(NAME) = {
 *		.size = sizeof(struct zcr_transport_ops),
 *		.name = "NAME",
 *		...
 *	};
 *
 * The registry's line X(NAME) declares it; the library calls its
 * completed copy __zcr_transport_NAME (missing optional ops filled in).
 */
#define ZCR_TRANSPORT(n) \
	const struct zcr_transport_ops __zcr_transport_##n##_def

/*
 * The completed tables of the transports that name each other (a hand-off,
 * a transport recognising its own endpoints); set at the first context.
 */
extern struct zcr_transport_ops __zcr_transport_tcp;
extern struct zcr_transport_ops __zcr_transport_shm;
extern struct zcr_transport_ops __zcr_transport_verbs;

/*
 * Complete the table in (registered as name) into out: what the registry
 * does for each transport; a test's fake transport goes through it too.
 * 0, or -EINVAL with the reason on stderr (a required op missing).
 */
int __zcr_transport_ops_set(struct zcr_transport_ops *out,
			    const struct zcr_transport_ops *in,
			    const char *name);

/* A persistent send of len bytes at buf is freed: tell every transport. */
void __zcr_transports_send_unbind(struct zcr_ctx *ctx, const void *buf,
				  size_t len);

/* Set up / tear down every registered transport for ctx. */
int __zcr_transports_init(struct zcr_ctx *ctx);
void __zcr_transports_fini(struct zcr_ctx *ctx);

/*
 * The transport for addr ("SCHEME://REST", or REST for the first one);
 * *rest points past the scheme. NULL for an unknown scheme.
 */
struct zcr_transport *__zcr_transport_find(struct zcr_ctx *ctx,
					   const char *addr,
					   const char **rest);

/* ---- endpoints: transport-independent part (lib/transport/transport.c) */

/*
 * A new endpoint carried by ops with state ep_priv, in the handshake;
 * ops->start is called. NULL when out of memory (ep_priv is then
 * released with ops->ep_close and ops->ep_free).
 */
struct zcr_ep *__zcr_ep_new_locked(struct zcr_ctx *ctx,
				   const struct zcr_transport_ops *ops,
				   void *ep_priv, bool accepted);
/*
 * The handshake of ep completed: the peer is rank (the transport has set
 * ep->peer_max_msg if the peer said it). Fails the endpoint (and returns
 * -errno) if rank is ours or taken by another open endpoint. Sends queued
 * meanwhile that exceed the peer's max_msg fail with -EMSGSIZE; the others
 * are numbered from 1 again.
 */
int __zcr_ep_open_locked(struct zcr_ep *ep, int rank);
/*
 * Close ep for err (-errno), record why, fail its sends, abort its arrival
 * (match) and the receives no connection can satisfy any more.
 */
void __zcr_ep_fail_locked(struct zcr_ep *ep, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Fail every send queued on ep with err (the MATCHED answers we owe are
 * dropped); the connection itself stays as it is.
 */
void __zcr_ep_fail_sends_locked(struct zcr_ep *ep, int err);
/* Endpoints not closed (open or in their handshake): what max_conns bounds. */
unsigned int __zcr_ep_live_locked(struct zcr_ctx *ctx);
/* Queue a send request on ep's transport. Returns 0 or -errno. */
int __zcr_ep_send_locked(struct zcr_ep *ep, struct zcr_req *r);
/*
 * A standard send completed within the call with no request, where the
 * endpoint's transport can (its send_now op): 0 when sent (numbered and
 * counted), -EAGAIN when the general path must take it, or the error the
 * general path would give.
 */
int __zcr_ep_send_now_locked(struct zcr_ep *ep, uint32_t comm,
			     const void *buf, size_t len, int tag);
/* Send the ACKs queued on ctx->acks (lib/match) on their endpoints. */
void __zcr_ep_acks_flush_locked(struct zcr_ctx *ctx);
/*
 * The ACK of message seq came on ep: complete the synchronous send
 * awaiting it (else the peer broke the protocol: ep fails).
 */
void __zcr_ep_acked_locked(struct zcr_ep *ep, uint64_t seq);
void __zcr_ep_free(struct zcr_ep *ep);
/*
 * Receive r waits and nothing matched it: if its sender's connection
 * prefetches and a buffer is predicted, ask for it (lib/prefetch).
 */
void __zcr_ep_pf_ask_locked(struct zcr_ctx *ctx, struct zcr_req *r);
/*
 * A request of the library's own carrying a prefetch frame on ep
 * (ZCR_REQ_ACK, ctl): body (malloc'd or NULL, len bytes) is the
 * request's to free. NULL when out of memory (body freed).
 */
struct zcr_req *__zcr_ep_ctl_req(struct zcr_ep *ep, char *body,
				 uint64_t len);
/*
 * Move ep's data path to transport to (to->adopt gets arg). Only between
 * messages: no arrival under way and no send started on ep, else -EBUSY;
 * sends queued but not started move to the new transport. Sequence numbers go on across the hand-off, so the peer must
 * switch at the same message boundary.
 */
int __zcr_ep_handoff_locked(struct zcr_ep *ep,
			    const struct zcr_transport_ops *to, void *arg);
/*
 * Receive r, a started persistent receive, is posted: offer its buffer
 * to its sender when exactly one connection, open, leads to r->src and
 * its transport takes offers (recv_offer). *tp and *bind: the persistent
 * receive's transport state of the buffer, set at the first offer. 1
 * when offered (r->offered, r->ep), 0 when not, -errno.
 */
int __zcr_ep_offer_recv_locked(struct zcr_ctx *ctx, struct zcr_req *r,
			       const struct zcr_transport_ops **tp,
			       void **bind);
/* Cancel receive r, offered (r->offered, not done): see recv_cancel. */
int __zcr_ep_cancel_offered_locked(struct zcr_req *r);
/* Close endpoints whose handshake outlived its deadline; how many. */
int __zcr_ep_expire_handshakes_locked(struct zcr_ctx *ctx);
/* Free accepted endpoints that closed before zcr_ep_accept() saw them. */
void __zcr_ep_reap_locked(struct zcr_ctx *ctx);

#endif /* ZCR_TRANSPORT_H */
