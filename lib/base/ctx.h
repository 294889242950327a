/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ctx.h - the objects of libzcrecv: the context (one rank), its endpoints
 * and requests. Every layer is handed the context and reaches its own part
 * of it through this header. It is part of the base, the bottom layer
 * (Documentation/design.md, "Layers"): it includes only the base and the
 * public headers, so the records the layers keep inside the objects are
 * either defined here (an endpoint's arrival, a context's transports) or
 * held through a pointer to a type only its layer defines (the remap
 * engine's backends, the predictor, the poll sets). It declares request
 * completion and the context's wake-up (lib/base/complete.c), which call
 * nothing above the base.
 *
 * Locking: one mutex per context (ctx->lock) protects everything the
 * context owns: endpoints, queues, staging pool, predictor, statistics.
 * Functions whose name ends in _locked expect it held. Only poll(2) runs
 * without it, so a progress thread and the application can both progress.
 */
#ifndef ZCR_CTX_H
#define ZCR_CTX_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "zcrecv.h"
#include "base/config.h"
#include "base/list.h"
#include "base/mem.h"

/* ZCR_REQ_ACK: an acknowledgement queued on ep->sendq, freed once sent. */
enum zcr_req_kind { ZCR_REQ_SEND = 1, ZCR_REQ_RECV = 2, ZCR_REQ_ACK = 3 };

/* Requests a context keeps for reuse (struct zcr_ctx, spare_reqs). */
#define ZCR_SPARE_REQS	8

/* Bytes of a send request the transport may use as it likes (a header). */
#define ZCR_TX_SCRATCH	32

#define ZCR_SECRET_MAX		256	/* longest job secret, bytes */

/*
 * Transports a context can hold: the registry of lib/transport/transport.c
 * fails to build with more.
 */
#define ZCR_MAX_TRANSPORTS	8

struct zcr_backend_state;
struct zcr_ep;
struct zcr_job;
struct zcr_pf;
struct zcr_pf_ep;
struct zcr_pf_tx;
struct zcr_pv;
struct zcr_msg;
struct zcr_pollset;
struct zcr_predictor;
struct zcr_transport_ops;

enum zcr_rx_state {
	ZCR_RX_IDLE = 0,	/* between messages */
	ZCR_RX_STALLED,		/* header in, nowhere to land it yet */
	ZCR_RX_LANDING,		/* payload goes to dst */
};

/**
 * struct zcr_arrival - one message coming in on one endpoint
 * @state:	enum zcr_rx_state; only match changes it
 * @comm:	communicator id, from the header (0 where the wire has none)
 * @src:	sender's rank, from the header
 * @tag:	tag, from the header
 * @len:	payload length, from the header
 * @dst:	while ZCR_RX_LANDING: payload bytes [0, @room) go to @dst
 * @room:	bytes that go to @dst; the transport discards the other
 *		@len - @room bytes (a truncated receive)
 * @req:	landing in this posted receive, or NULL
 * @msg:	landing in this staged message, or NULL
 * @stall_link:	on ctx->stalled while ZCR_RX_STALLED
 * @ack:	a synchronous message: its number, ACKed once matched; or 0
 * @may_defer:	the transport can leave the payload where it is (in the
 *		sender over shm, in the socket over TCP) until a receive
 *		takes it
 * @defer_any:	may_defer even when the landing would be a remap: the
 *		transport found taking the payload early does not pay
 *		(TCP on a fast connection, tcp_rx.c)
 * @deferred:	stalled by choice, not for want of room: the landing
 *		would be a copy out of staging (or @defer_any), so the
 *		payload waits for its receive and lands once, straight
 *		into it
 * @release:	a receive, probe or synchronous send needs what comes
 *		after it from this endpoint: stage it after all
 *
 * Embedded in each endpoint (ep->rx); zero means idle.
 */
struct zcr_arrival {
	int state;
	uint32_t comm;
	int src, tag;
	uint64_t len;
	char *dst;
	uint64_t room;
	struct zcr_req *req;
	struct zcr_msg *msg;
	struct zcr_list stall_link;
	uint64_t ack;
	bool may_defer, defer_any, deferred, release;
};

/* One registered transport in a context (lib/transport/transport.c). */
struct zcr_transport {
	const struct zcr_transport_ops *ops;
	void *priv;
};

struct zcr_req {
	struct zcr_list link;
	struct zcr_ctx *ctx;
	int kind;
	bool done;
	/*
	 * A thread waits for it in zcr_wait() (waiter): completed by another
	 * thread, it must wake that one, which may sleep in poll(2).
	 */
	bool waited;
	pthread_t waiter;
	int waiter_fd;			/* its __zcr_thread_wake_fd() */
	bool woken;			/* waiter_fd written for it */
	/*
	 * Completed, not yet returned by zcr_test/zcr_wait: on
	 * ctx->done_reqs, so that zcr_ctx_destroy() frees it if it never is.
	 */
	bool in_done;
	struct zcr_list done_link;
	struct zcr_status st;
	/* receive */
	char *buf;
	size_t size;
	uint32_t comm;			/* communicator id; 0: the default */
	int src, tag;
	bool posted;			/* on ctx->posted (match's) */
	uint64_t post_seq;		/* posting order, from 1 */
	/*
	 * A claim of zcr_improbe(): a staged message (mmsg, its m->req is
	 * this) delivered only once claim is cleared by zcr_imrecv(); or a
	 * stalled one landing in own, copied to ubuf at completion.
	 */
	bool claim;
	struct zcr_msg *mmsg;
	char *own, *ubuf;
	size_t usize;
	/* send */
	struct zcr_ep *ep;
	const char *sbuf;
	uint64_t len;
	uint64_t seq;			/* message number on ep, from 1 */
	bool sync;			/* completes on the peer's ACK */
	/*
	 * Started by a persistent send: its buffer is sent again and again,
	 * so a transport may keep it registered until the persistent send
	 * is freed (transport.h, send_unbind).
	 */
	bool persist;
	uint64_t sent;			/* transport's progress (bytes) */
	uint8_t tx[ZCR_TX_SCRATCH];	/* transport's scratch */
	/*
	 * Message prefetching (lib/prefetch): a large send's PF_INFO and
	 * the pages it leaves out; for a ZCR_REQ_ACK with ctl set, a
	 * prefetch frame whose header the transport built in tx and whose
	 * payload is own (both freed once sent: __zcr_req_free_ctl()).
	 */
	struct zcr_pf_tx *pf;
	bool ctl;
	bool pf_asked;			/* a receive's wait asked already */
	/*
	 * A started persistent receive whose buffer the transport of ep
	 * offered to its sender (__zcr_ep_offer_recv_locked()): it is off
	 * match's posted queue, and that transport completes it.
	 */
	bool offered;
};

/* A request of the library's own (ZCR_REQ_ACK), and what it owns. */
static inline void __zcr_req_free_ctl(struct zcr_req *r)
{
	free(r->pf);
	free(r->own);
	free(r);
}

enum zcr_ep_state { ZCR_EP_HANDSHAKE, ZCR_EP_OPEN, ZCR_EP_CLOSED };

/*
 * An endpoint: the connection to one peer, whatever carries it. Its data
 * path is transport tp with per-endpoint state tp_priv (opaque here); rx
 * is match's record of the message coming in.
 */
struct zcr_ep {
	struct zcr_list link;
	struct zcr_ctx *ctx;
	const struct zcr_transport_ops *tp;
	void *tp_priv;
	int state;
	int rank;
	bool accepted;			/* came from a listener */
	bool returned;			/* handed out by zcr_ep_accept */
	int error;
	char errmsg[160];
	char peer[64];
	uint64_t send_seq, recv_seq;	/* last message numbers */
	uint64_t hs_deadline;		/* zcr_now_ns() the handshake ends */
	uint64_t peer_max_msg;		/* the peer's limit (UINT64_MAX: unknown) */
	bool comm_ok;			/* both sides carry communicator ids */
	bool sync_ok;			/* both sides ACK sync sends */
	struct zcr_list sendq;		/* send requests, in order */
	struct zcr_list ackq;		/* sync sends sent, ACK awaited */
	struct zcr_arrival rx;
	struct zcr_pf_ep *pf;		/* prefetching negotiated, or NULL */
	/*
	 * A job's connection that never carried our DATA: the one the peer
	 * dialled carries our sends to it instead (job.c, zcr_ctx_job_ep()).
	 */
	struct zcr_ep *send_via;
};

struct zcr_ctx {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* a request completed */
	int rank;
	int policy;
	int quiet;
	/*
	 * The ZCRECV_* variables as zcr_ctx_create() read them (config.h);
	 * their strings point into the environment, so whoever keeps one
	 * past the creation (a transport's init) copies it.
	 */
	struct zcr_env_set env;
	uint64_t max_msg;
	size_t page;
	bool listening;			/* some transport accepts peers */
	bool comm_ids;			/* dial announcing communicator ids */
	struct zcr_job *job;		/* zcr_ctx_create_job(), or NULL */
	int wake_fd;			/* eventfd: wake a poller */
	int kmod_fd;
	struct zcr_kmod_info kmod;
	bool huge_zones;		/* ZCRECV_HUGE_ZONES (default 1) */
	struct zcr_list eps;
	struct zcr_list posted;		/* struct zcr_req, in posting order */
	struct zcr_list unexpected;	/* struct zcr_msg, in arrival order */
	struct zcr_list stalled;	/* struct zcr_arrival, in stall order */
	/*
	 * Messages on unexpected that are not __zcr_pred_small() nor on a
	 * communicator of unlearnt[]: each will take one of the receives
	 * the predictor sees (match.c).
	 */
	unsigned int nunexpected_big;
	/*
	 * Communicators whose receives were posted with
	 * ZCRECV_RECV_NO_LEARN (an MPI layer's collective space): their
	 * messages take receives the predictor never sees, so they neither
	 * count among those the queued messages will take nor are staged
	 * at a predicted offset (match.c, predict_offset()). The first
	 * ZCR_UNLEARNT_MAX only; later ones are treated as any other.
	 */
#define ZCR_UNLEARNT_MAX	8
	uint32_t unlearnt[ZCR_UNLEARNT_MAX];
	unsigned int nunlearnt;
	uint64_t post_seq;		/* receives posted so far */
	struct zcr_list expects;	/* struct zcr_expect (match.h) */
	uint64_t expect_turn;		/* turns handed out to them */
	struct zcr_list preqs;		/* struct zcr_preq (persist.c) */
	struct zcr_list peers;		/* struct zcr_peer: staging shares */
	unsigned int npeers;
	bool drain_pending;		/* staging freed while some stalled */
	uint64_t defer_min;		/* ZCRECV_DEFER_MIN; 0: never defer */
	struct zcr_list acks;		/* struct zcr_ack: ACKs to send */
	struct zcr_list done_reqs;	/* completed requests not reaped */
	struct zcr_list mems;		/* struct zcr_mem */
	/* staging pool */
	struct zcr_list free_slots;
	uint64_t staging_bytes, staging_limit;
	/* remap engine: nbe backends, in its order (copy last) */
	struct zcr_backend_state *be;
	int nbe;
	/* transports */
	struct zcr_transport tr[ZCR_MAX_TRANSPORTS];
	int ntr;
	unsigned int nep;		/* endpoints on eps */
	bool reap_pending;		/* one accepted, closed, not taken */
	unsigned int nhandshake;	/* of them in ZCR_EP_HANDSHAKE */
	uint64_t hs_timeout_ns;
	uint64_t progress_timeout_ns;	/* a message in flight must move */
	unsigned int max_conns;		/* most live endpoints */
	/*
	 * Open endpoints whose transport can be offered a persistent
	 * receive's buffer (transport.h, recv_offer): kept by the transports;
	 * while 0, zcr_start() looks for none.
	 */
	unsigned int offer_eps;
	/*
	 * Set by a transport's poll_fill: how long the application's thread
	 * should poll the set without sleeping first, because that
	 * transport cannot look at its connections before sleeping any
	 * cheaper than poll(2) can (0: sleep at once). Reset per round.
	 */
	uint64_t poll_spin_ns;
	/*
	 * The revents handed to poll_done are poll(2)'s answer (it ran and
	 * returned, a timeout included), not zeros because it did not run
	 * or failed: a transport may then take an entry with no revents as
	 * "nothing to read there" for the pass that follows.
	 */
	bool poll_answered;
	bool conns_warned, loopback_warned;
	/* job secret (lib/transport/auth.c); secret_len 0: none */
	uint8_t secret[ZCR_SECRET_MAX];
	size_t secret_len;
	/* progress */
	struct zcr_pollset *pollsets;	/* idle poll sets, for reuse */
	/*
	 * Requests handed back by zcr_test()/zcr_wait(), kept for the next
	 * send or receive (request.c): a calloc() and a free() for each of
	 * the two requests of a small message's round trip cost as much as
	 * the rest of the library's part of it. Taken and put back with
	 * atomic exchanges, outside ctx->lock; freed with the context.
	 */
	struct zcr_req *spare_reqs[ZCR_SPARE_REQS];
	struct zcr_pf *pf;		/* ZCRECV_PREFETCH=1, or NULL */
	/*
	 * Page versions of send buffers (lib/pagever), opened by prefetch
	 * at its first tracked buffer: a remap into our memory bumps them.
	 */
	struct zcr_pv *pv;
	/* prediction */
	struct zcr_predictor *pred;
	char pred_name[32];
	/*
	 * progress thread: parked while an application thread waits in
	 * zcr_wait() and drives progress itself (waiters > 0), and for a
	 * grace after the application's last call. It parks in a read of
	 * park_fd, a timer the application pushes further without waking
	 * it (__zcr_park_push_locked()): a stream of calls costs the thread
	 * no wake-up at all, and the application a timerfd_settime(2) per
	 * ZCR_PARK_SLACK_NS at most (Documentation/library.md).
	 */
	pthread_t thread;
	bool thread_on, thread_stop;
	bool thread_busy;		/* in a progress call, maybe in poll */
	unsigned int waiters;
	int park_fd;			/* the park's timerfd; -1: no thread */
	uint64_t park_until;		/* ns park_fd fires at; 0: disarmed */
	uint64_t park_wakes;		/* parks ended (tests count them) */
	/*
	 * The application's calls (waits, tests, probes, persistent starts
	 * that completed): they count, with no clock read, and every
	 * park_stride-th pushes the park's end (app_calls_pushed: the count
	 * then). The stride doubles (to ZCR_PARK_STRIDE_MAX) when a push
	 * finds the timer a grace ahead still, and halves when the timer
	 * fired while the count moved: a push every 1-3 ms of calls. The
	 * thread, when its park ends, parks another grace if the count moved.
	 */
	uint64_t app_calls, app_calls_seen, app_calls_pushed;
	unsigned int park_stride;
	struct zcr_stats st;
};

/*
 * The progress thread runs no earlier than ZCR_PARK_GRACE_NS after the
 * application's last call, no later than ZCR_PARK_GRACE_NS +
 * ZCR_PARK_SLACK_NS: a call pushes the timer only when it would fire
 * within the grace, and then to the grace plus the slack.
 */
#define ZCR_PARK_GRACE_NS	(2 * 1000000ULL)
#define ZCR_PARK_SLACK_NS	(ZCR_PARK_GRACE_NS / 2)
#define ZCR_PARK_STRIDE_MAX	64
/* poll(2) sleeps this long at most before the poll set is built again. */
#define ZCR_POLL_SLICE_MS	100

/*
 * Is the caller the context's progress thread? It makes progress in the
 * background only: it sleeps in poll at once instead of spinning (a spin
 * holds the context's lock, which the application's next call needs).
 */
static inline bool __zcr_is_progress_thread(const struct zcr_ctx *ctx)
{
	return ctx->thread_on && pthread_equal(pthread_self(), ctx->thread);
}

/*
 * Is a receive (or a message) of size bytes too small ever to be
 * remapped? Less than a page holds no whole page, so it is copied
 * wherever it is staged: such receives are not shown to the predictor,
 * and such messages are staged without asking it.
 */
static inline bool __zcr_pred_small(const struct zcr_ctx *ctx, uint64_t size)
{
	return size < ctx->page;
}

/*
 * Complete r with error (0 or -errno): set its status and done, queue it
 * on ctx->done_reqs and wake its waiters (the condition variable, the
 * waiter's eventfd or the context's). Calls nothing above the base.
 */
void __zcr_req_complete_locked(struct zcr_req *r, int error);
/* Wake a thread of ctx asleep in poll(2): write the context's eventfd. */
void __zcr_wake(struct zcr_ctx *ctx);

#endif /* ZCR_CTX_H */
