/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * match.h - MPI-style matching (lib/match/match.c) and its upward interface
 * for transports.
 *
 * A transport tells match about each incoming message in three calls:
 * __zcr_match_arrive_locked() with the header, before any payload byte
 * moves, which says where the payload goes (a posted receive buffer, a
 * staging slot at the predicted page offset, or nowhere yet: stalled);
 * __zcr_match_payload_done_locked() once the payload is in; and
 * __zcr_match_abort_locked() when the connection is lost mid-message.
 * Match calls only down (staging, predict, remap, request completion);
 * completing a request sets its state and signals ctx->cond, nothing more.
 *
 * Stalled arrivals (no posted receive, no room in staging) belong to
 * match: they wait on ctx->stalled and are given room by
 * __zcr_match_drain_locked(), which the progress engine calls, or by a
 * matching receive when it is posted.
 */
#ifndef ZCR_MATCH_H
#define ZCR_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/ctx.h"

struct zcr_backend_state;
struct zcr_ctx;
struct zcr_req;
struct zcr_slot;
struct zcr_status;

/*
 * A source rank's account of staging: the pool is shared out between the
 * ranks that are connected or still hold staged messages, so one peer
 * (one that left included) cannot pin the whole pool
 * (Documentation/library.md, "Staging pool").
 */
struct zcr_peer {
	struct zcr_list link;		/* on ctx->peers */
	int rank;
	unsigned int nopen;		/* open endpoints with this rank */
	uint64_t bytes;			/* staging its queued messages hold */
};

/*
 * A synchronous message was matched: the transport of ep (if still open
 * and still rank's) sends the ACK of message number seq.
 */
struct zcr_ack {
	struct zcr_list link;		/* on ctx->acks */
	struct zcr_ep *ep;		/* compared, never dereferenced */
	int rank;
	uint64_t seq;
};

/* A message whose header arrived before a matching receive was posted. */
struct zcr_msg {
	struct zcr_list link;		/* on ctx->unexpected */
	uint32_t comm;
	int src, tag;
	uint64_t len;
	struct zcr_slot *slot;
	size_t off;			/* payload at slot->base + off */
	/* staged in plain memory because auto's landing of its class at
	 * this backend copies (__zcr_remap_pick), or NULL */
	struct zcr_backend_state *by;
	bool complete;
	struct zcr_req *req;		/* matched while still arriving */
	struct zcr_peer *peer;		/* charged slot->cap, or NULL */
	struct zcr_ep *ep;		/* came on ep; ACK it when matched */
	int rank;
	uint64_t ack;			/* its number to ACK, or 0 */
	bool counted;			/* in ctx->nunexpected_big */
};

/* ---- upward interface for transports ----------------------------------- */

/*
 * A header (src, tag, len) arrived in a, which must be idle. Returns 0 with
 * a landing (a->dst, a->room), or -EAGAIN: stalled, read nothing more from
 * this endpoint until a->state becomes ZCR_RX_LANDING.
 */
int __zcr_match_arrive_locked(struct zcr_ctx *ctx, struct zcr_arrival *a,
			      int src, int tag, uint64_t len);
/* The same for a message of communicator comm (the other call: comm 0). */
int __zcr_match_arrive_comm_locked(struct zcr_ctx *ctx, struct zcr_arrival *a,
				   uint32_t comm, int src, int tag,
				   uint64_t len);
/*
 * The same for a synchronous message, number ack (not 0) on its endpoint:
 * once a receive matches it, a struct zcr_ack goes on ctx->acks.
 */
int __zcr_match_arrive_sync_locked(struct zcr_ctx *ctx, struct zcr_arrival *a,
				   uint32_t comm, int src, int tag,
				   uint64_t len, uint64_t ack);
/*
 * The same, from a transport that can leave a payload of len bytes
 * unread (may_defer ZCR_DEFER_COPY): with no receive posted for it, a
 * message that would be copied out of staging anyway (no remap) may then
 * stall by choice (a->deferred) instead of being staged, and land once,
 * straight into the receive that takes it. ZCR_DEFER_ANY: a remapped one
 * too (the transport found that taking its payload early does not pay,
 * tcp_rx.c). Read nothing more from the endpoint until a->state becomes
 * ZCR_RX_LANDING, as for any stall. 0: never deferred.
 */
#define ZCR_DEFER_COPY	1
#define ZCR_DEFER_ANY	2
int __zcr_match_arrive_defer_locked(struct zcr_ctx *ctx, struct zcr_arrival *a,
				    uint32_t comm, int src, int tag,
				    uint64_t len, uint64_t ack, int may_defer);
/*
 * Would a message (comm, src, tag) arriving now find a posted receive?
 * Nothing is taken.
 */
bool __zcr_match_has_posted_locked(struct zcr_ctx *ctx, uint32_t comm,
				   int src, int tag);
/*
 * A header (src, tag, len) arrived in a (idle) for receive r, which the
 * transport took off the posted queue (__zcr_match_unpost_first_locked())
 * and whose buffer it offered to the sender: the message lands in r,
 * whatever else is posted. Always lands (a->state ZCR_RX_LANDING).
 */
void __zcr_match_arrive_bound_locked(struct zcr_ctx *ctx,
				     struct zcr_arrival *a, struct zcr_req *r,
				     int src, int tag, uint64_t len);
/*
 * If r is posted and the first posted receive a message (r->comm,
 * r->src, r->tag) would take, take it off the posted queue (the
 * transport now owns it) and return true; else false.
 */
bool __zcr_match_unpost_first_locked(struct zcr_ctx *ctx, struct zcr_req *r);
/*
 * A receive (comm, src, tag) of size bytes at buf that needs no request:
 * if the first queued message it matches is complete, it is delivered
 * into buf (copied, or remapped as for a posted receive), freed, and its
 * status written to *st (error -EMSGSIZE when cut short); true. False
 * when nothing queued matches or the match is still landing: nothing
 * changed, the caller posts a receive (a stalled header, which a posted
 * receive would take next, is left to it too).
 */
bool __zcr_match_take_now_locked(struct zcr_ctx *ctx, uint32_t comm,
				 int src, int tag, void *buf, size_t size,
				 struct zcr_status *st);
/* All len payload bytes of a landing arrival are in: complete it. */
void __zcr_match_payload_done_locked(struct zcr_ctx *ctx,
				     struct zcr_arrival *a);
/*
 * The connection of a is lost: a message cut short is never delivered;
 * its receive (if any) fails with -ECONNRESET. a becomes idle.
 */
void __zcr_match_abort_locked(struct zcr_ctx *ctx, struct zcr_arrival *a);
/*
 * A source went away: fail the posted receives naming rank (when gone)
 * and those no endpoint can satisfy any more, with -ECONNRESET.
 */
void __zcr_match_source_lost_locked(struct zcr_ctx *ctx, int rank, bool gone);

/*
 * An endpoint of rank opened (0 or -ENOMEM) or closed: the ranks connected
 * share the staging pool.
 */
int __zcr_match_peer_open_locked(struct zcr_ctx *ctx, int rank);
void __zcr_match_peer_closed_locked(struct zcr_ctx *ctx, int rank);

/* ---- for the progress engine and the API ------------------------------- */

/*
 * Something may wait behind the deferred arrivals from src
 * (ZCRECV_ANY_SOURCE: from anyone): a synchronous send to src waits for
 * an acknowledgement that comes behind them. Stage them at the next drain.
 */
void __zcr_match_release_deferred_locked(struct zcr_ctx *ctx, int src);
/* The same for arrival a alone: its transport has more behind it. */
void __zcr_match_release_arrival_locked(struct zcr_ctx *ctx,
				       struct zcr_arrival *a);
/* Give room to stalled arrivals; returns how many got it. */
int __zcr_match_drain_locked(struct zcr_ctx *ctx);
/* Match receive r against queued and stalled messages, else post it. */
int __zcr_post_recv_locked(struct zcr_ctx *ctx, struct zcr_req *r);
/*
 * Cancel receive r if it is still posted (not matched): it completes with
 * -ECANCELED. Returns 0, or -EBUSY when it matched a message already.
 */
int __zcr_match_cancel_locked(struct zcr_ctx *ctx, struct zcr_req *r);
/*
 * The first message receive (comm, src, tag) would take, queued or
 * stalled, without taking it: true with *st set (error 0), else false.
 */
bool __zcr_match_probe_locked(struct zcr_ctx *ctx, uint32_t comm, int src,
			      int tag, struct zcr_status *st);
/*
 * Claim for r (r->comm, src, tag) the message receive r would take: 1
 * (r->src, r->tag and r->st say which), 0 none, -ENOMEM.
 */
int __zcr_match_claim_locked(struct zcr_ctx *ctx, struct zcr_req *r,
			     int src, int tag);
/* The claimed message of r goes to buf (size bytes). */
void __zcr_match_mrecv_locked(struct zcr_ctx *ctx, struct zcr_req *r,
			      void *buf, size_t size);
/* Can an endpoint, or a peer yet to connect to our listener, bring src? */
bool __zcr_source_possible(struct zcr_ctx *ctx, int src);
/*
 * A receive known in advance (a persistent receive, zcr_recv_init_comm()): its
 * buffer is where every message it can take will land, so a message that
 * arrives before it is started is staged at that buffer's page offset,
 * with no prediction asked. On ctx->expects while registered. Of several
 * that could take a message, the one started (or promised a message)
 * longest ago is taken: receives bound to a rotation of buffers are
 * started in turn.
 */
struct zcr_expect {
	struct zcr_list link;
	uint32_t comm;
	int src, tag;			/* may be the wildcards */
	const void *buf;
	size_t size;
	uint64_t turn;			/* last start or promise, from 1 */
};

/*
 * Receives on comm are posted unseen by the predictor
 * (ZCRECV_RECV_NO_LEARN): its messages take no predicted offset and do
 * not count among those taking predicted receives.
 */
void __zcr_match_unlearn_locked(struct zcr_ctx *ctx, uint32_t comm);
bool __zcr_match_unlearnt(const struct zcr_ctx *ctx, uint32_t comm);
/* Register e (its fields set); the context lock held. */
void __zcr_match_expect_locked(struct zcr_ctx *ctx, struct zcr_expect *e);
/* e is started now: the next message it could take is another's turn. */
void __zcr_match_expect_started_locked(struct zcr_ctx *ctx,
				       struct zcr_expect *e);
/* Forget e; messages already staged for it stay where they are. */
void __zcr_match_unexpect_locked(struct zcr_ctx *ctx, struct zcr_expect *e);

/* At context destruction: free queued messages and pending receives. */
void __zcr_match_fini(struct zcr_ctx *ctx);

bool __zcr_match(int want_src, int want_tag, int src, int tag);

#endif /* ZCR_MATCH_H */
