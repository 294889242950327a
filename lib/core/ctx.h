/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ctx.h - the objects of libzcrecv: the context (one rank), its endpoints
 * and requests. Every layer is handed the context and reaches its own part
 * of it through this header; it declares data and request completion only,
 * no calls into any layer (Documentation/design.md, "Layers").
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

#include "zcrecv.h"
#include "core/config.h"
#include "core/list.h"
#include "core/mem.h"
#include "match/match.h"
#include "predict/predict.h"
#include "remap/remap.h"
#include "staging/staging.h"
#include "transport/auth.h"
#include "transport/transport.h"

/* ZCR_REQ_ACK: an acknowledgement queued on ep->sendq, freed once sent. */
enum zcr_req_kind { ZCR_REQ_SEND = 1, ZCR_REQ_RECV = 2, ZCR_REQ_ACK = 3 };

/* Requests a context keeps for reuse (struct zcr_ctx, spare_reqs). */
#define ZCR_SPARE_REQS	8

/* Bytes of a send request the transport may use as it likes (a header). */
#define ZCR_TX_SCRATCH	32

struct zcr_ep;
struct zcr_job;

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
	uint64_t sent;			/* transport's progress (bytes) */
	uint8_t tx[ZCR_TX_SCRATCH];	/* transport's scratch */
};

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
	/*
	 * A job's connection that never carried our DATA: the one the peer
	 * dialled carries our sends to it instead (job.c, zcr_job_ep()).
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
	 * Messages on unexpected that are not __zcr_pred_small(): each will
	 * take one of the receives the predictor sees (match.c).
	 */
	unsigned int nunexpected_big;
	uint64_t post_seq;		/* receives posted so far */
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
	/* remap engine */
	struct zcr_backend_state be[ZCR_MAX_BACKENDS];
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
	 * Set by a transport's poll_fill: how long the application's thread
	 * should poll the set without sleeping first, because that
	 * transport cannot look at its connections before sleeping any
	 * cheaper than poll(2) can (0: sleep at once). Reset per round.
	 */
	uint64_t poll_spin_ns;
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
	/* prediction */
	struct zcr_predictor *pred;
	char pred_name[32];
	/*
	 * progress thread: parked on park while an application thread waits
	 * in zcr_wait() and drives progress itself (waiters > 0)
	 */
	pthread_t thread;
	bool thread_on, thread_stop;
	bool thread_busy;		/* in a progress call, maybe in poll */
	unsigned int waiters;
	uint64_t park_until;		/* ns: the last waiter left + grace */
	pthread_cond_t park;
	struct zcr_stats st;
};

#define ZCR_PARK_GRACE_NS	(2 * 1000000ULL)
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

/* Complete r with error (0 or -errno) and wake its waiters; calls nothing. */
void __zcr_req_complete_locked(struct zcr_req *r, int error);

#endif /* ZCR_CTX_H */
