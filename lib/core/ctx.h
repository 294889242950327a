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
#include "core/list.h"
#include "core/mem.h"
#include "match/match.h"
#include "predict/predict.h"
#include "remap/remap.h"
#include "staging/staging.h"
#include "transport/wire.h"

enum zcr_req_kind { ZCR_REQ_SEND = 1, ZCR_REQ_RECV = 2 };

struct zcr_ep;

struct zcr_req {
	struct zcr_list link;
	struct zcr_ctx *ctx;
	int kind;
	bool done;
	struct zcr_status st;
	/* receive */
	char *buf;
	size_t size;
	int src, tag;
	/* send */
	struct zcr_ep *ep;
	uint8_t hdr[ZCR_WIRE_HDR_LEN];
	const char *sbuf;
	uint64_t len;
	uint64_t sent;			/* header and payload bytes written */
};

enum zcr_ep_state { ZCR_EP_HANDSHAKE, ZCR_EP_OPEN, ZCR_EP_CLOSED };

struct zcr_ep {
	struct zcr_list link;
	struct zcr_ctx *ctx;
	int fd;
	int state;
	int rank;
	bool accepted;			/* came from our listening socket */
	bool returned;			/* handed out by zcr_ep_accept */
	int error;
	char errmsg[160];
	char peer[64];
	uint64_t send_seq, recv_seq;
	uint64_t hs_deadline;		/* zcr_now_ns() the handshake ends */
	struct zcr_list sendq;
	/* receive state machine: header, then payload into one target */
	uint8_t hdr[ZCR_WIRE_HDR_LEN];
	size_t hdr_got;
	bool have_hdr;
	bool stalled;			/* header read, no room to land it */
	struct zcr_wire_hdr h;
	char *dst;			/* where payload goes, NULL: discard */
	uint64_t room;			/* bytes of payload that go to dst */
	uint64_t got;
	struct zcr_req *rreq;		/* landing into a posted receive */
	struct zcr_msg *rmsg;		/* landing into staging */
};

struct zcr_ctx {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* a request completed */
	int rank;
	int policy;
	int quiet;
	uint64_t max_msg;
	size_t page;
	int listen_fd;
	uint64_t accept_resume;		/* no accept() before; 0: not paused */
	int wake_fd;			/* eventfd: wake a poller */
	int kmod_fd;
	struct zcr_kmod_info kmod;
	struct zcr_list eps;
	struct zcr_list posted;		/* struct zcr_req, in posting order */
	struct zcr_list unexpected;	/* struct zcr_msg, in arrival order */
	struct zcr_list mems;		/* struct zcr_mem */
	/* staging pool */
	struct zcr_list free_slots;
	uint64_t staging_bytes, staging_limit;
	/* remap engine */
	struct zcr_backend_state be[ZCR_MAX_BACKENDS];
	int nbe;
	int uffd;
	char *uffd_tmp;
	size_t uffd_tmp_len;
	struct io_uring *ring;		/* batched receives, or NULL */
	/* progress */
	unsigned int nep;		/* endpoints on eps */
	unsigned int nhandshake;	/* of them in ZCR_EP_HANDSHAKE */
	uint64_t hs_timeout_ns;
	struct zcr_pollset *pollsets;	/* idle poll sets, for reuse */
	/* prediction */
	struct zcr_predictor *pred;
	char pred_name[32];
	/* progress thread */
	pthread_t thread;
	bool thread_on, thread_stop;
	struct zcr_stats st;
};

/* Complete r with error (0 or -errno) and wake its waiters; calls nothing. */
void __zcr_req_complete_locked(struct zcr_req *r, int error);

#endif /* ZCR_CTX_H */
