/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * verbs_priv.h - what the files of the RDMA verbs transport share, and no
 * one else: the wire formats (data header, HELLO), the per-context and
 * per-endpoint state, and the functions one file calls in another.
 * verbs.c describes the transport; Documentation/verbs.md its protocol.
 */
#ifndef ZCR_VERBS_PRIV_H
#define ZCR_VERBS_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "base/ctx.h"
#include "prefetch/prefetch.h"
#include "transport/sock.h"
#include "transport/verbs/verbs.h"

#define HDR		64
#define CELL		(HDR + 8192)
#define EAGER_MAX	(CELL - HDR)
#define DCRED		32		/* data messages in flight, each way */
#define ADV_MAX		8		/* receives offered per endpoint */
/*
 * Cells posted: the DCRED data messages, and the control messages a peer
 * can send between two of our progress calls: a FIN for each of our
 * DCRED announced messages and a CREDIT per DCRED/2 data messages, with
 * a margin; and for offered receives an ADV and a REVOKE (or, the other
 * way, a REVOKED) each; and one PF_DATA, which waits in the data queue
 * (one request outstanding at a time). RNR retries stay infinite as a
 * last resort.
 */
#define NRECV		(2 * DCRED + DCRED / 2 + 8 + 2 * ADV_MAX + 1)
#define NSEND		NRECV
#define BOUNCE		(256u << 10)	/* copy path: READ into this, copy */
#define RD_CHUNK	(1u << 20)	/* largest READ work request */
#define RD_OUT		16		/* READs in flight per endpoint */
#define HELLO_LEN	128
/*
 * How long a closing endpoint waits for what it posted to reach the peer,
 * and for its QP to settle (verbs_ep_close()). A live peer's NIC answers
 * in microseconds; this only bounds a peer that cannot answer any more.
 */
#define CLOSE_NS	(200ull * 1000000)
#define FLUSH_NS	(20ull * 1000000)
#define VMAGIC		0x5652435aU	/* "ZCRV" */
#define VVERSION	1
/*
 * HELLO feature bits (vhello.feat; a peer that predates them sends 0):
 * VFEAT_ADVERT, the side takes offered receive buffers and offers its own
 * (ZCRECV_VERBS_ADVERT); both must say so.
 */
#define VFEAT_ADVERT	1u
/*
 * VFEAT_PREFETCH: the side prefetches (ZCRECV_PREFETCH=1, lib/prefetch);
 * both must say so. A bit of feat, not of flags: a peer before it
 * fails a HELLO with an unknown flag, and ignores feat bits it does not
 * know (feat was padding before VFEAT_ADVERT, which it ANDs out).
 */
#define VFEAT_PREFETCH	2u
/* Tags of our last data messages kept, by sequence number (see vep). */
#define TAG_RING	64

/*
 * T_ADV, T_REVOKE, T_REVOKED: an offered receive buffer, its revocation
 * and the answer (control messages, no credit). T_WRITE never travels as
 * a header: it is what the receiver writes into the cell of an RDMA
 * WRITE with immediate, so that the data queue sees one more message.
 */
/*
 * Prefetching (both said VFEAT_PREFETCH; Documentation/prefetch.md,
 * "Over verbs"): T_PFRTS is an RTS that carries the send's PF_INFO
 * (status: the pre-send's token, pad: the send buffer's address, the
 * payload: the bitmap of pages left out), a data message; T_PF_REQ (tag:
 * token, addr and len: the buffer asked for) and T_PF_DONE (tag: token)
 * are control messages; T_PF_DATA (tag: token, seq: the buffer asked
 * for, len: bytes of the answer, 0 for none, addr and rkey: where the
 * receiver READs them) is a control message that waits in the data
 * queue, so that it is taken in its order among the data messages.
 */
enum vtype { T_EAGER = 1, T_RTS = 2, T_FIN = 3, T_CREDIT = 4, T_ADV = 5,
	     T_REVOKE = 6, T_REVOKED = 7, T_WRITE = 8, T_PFRTS = 9,
	     T_PF_REQ = 10, T_PF_DATA = 11, T_PF_DONE = 12 };
enum wkind { W_RECV = 1, W_SEND = 2, W_READ = 3, W_WRITE = 4,
	     W_PFREAD = 5 };

struct vhdr {
	uint32_t type;
	int32_t src;
	int32_t tag;
	uint32_t credits;		/* data cells reposted since last told */
	uint64_t len;			/* ADV: the buffer's size */
	uint64_t seq;			/* ADV: our last message number seen */
	uint64_t addr;			/* RTS: payload in the sender; ADV:
					 * the receive's buffer */
	uint32_t rkey;
	int32_t status;			/* FIN: 0 or -errno of the pull;
					 * PFRTS: the pre-send's token */
	uint64_t cookie;		/* RTS/FIN: the sender's request;
					 * ADV/REVOKE/REVOKED: the offer */
	uint64_t pad;			/* PFRTS: the send buffer */
};

_Static_assert(sizeof(struct vhdr) == HDR, "verbs header is 64 bytes");

/* HELLO, sent raw over the TCP connection (both ends little endian). */
struct vhello {
	uint32_t magic;
	uint32_t version;
	int32_t rank;
	uint32_t flags;			/* ZCR_HELLO_AUTH */
	uint64_t max_msg;
	uint64_t nonce;
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
	uint16_t lid;
	uint8_t mtu;			/* enum ibv_mtu */
	uint8_t pad0;
	uint32_t credits;		/* DCRED */
	uint32_t cell;			/* CELL */
	uint32_t feat;			/* VFEAT_*; was padding: 0 */
	uint8_t pad[56];
};

_Static_assert(sizeof(struct vhello) == HELLO_LEN, "HELLO is 128 bytes");

/* Registration cache entry (ZCRECV_VERBS_REGCACHE entries per context). */
struct rc_ent {
	uintptr_t a;
	size_t len;
	struct ibv_mr *mr;
	uint64_t use;
	unsigned int refs;
	bool dead;			/* pins: deregister at the last put */
};

/* Persistent sends' buffers kept registered per context (vctx.pins). */
#define PIN_N		16

/*
 * A persistent receive's buffer as offered (struct zcr_preq keeps it):
 * registered for the peer's writes at the first offer, deregistered once
 * the persistent receive is freed and no offer uses it (refs).
 */
struct vbind {
	struct vctx *vc;
	void *buf;
	size_t size;
	struct ibv_mr *mr;
	unsigned int refs;
	bool failed;			/* registration refused: never offered */
};

/*
 * One of our receives offered to the peer (ve->advs). The peer's first
 * message with its tag numbered above k goes into it: by RDMA WRITE with
 * immediate, or as any message (too big, eager); bound is that message's
 * number once it showed in the completion queue.
 */
struct vadv {
	struct zcr_list link;
	uint32_t id;
	int tag;
	uint64_t k;
	uint64_t bound;
	struct zcr_req *r;
	struct vbind *b;
	bool revoking;			/* REVOKE sent or queued */
};

/* The peer's offer (ve->padvs), for our next message with its tag. */
struct vpadv {
	struct zcr_list link;
	uint32_t id;
	int tag;
	uint64_t addr, len;
	uint32_t rkey;
};

/*
 * A control message waiting for a send cell: FIN, REVOKE or REVOKED (a
 * cookie), or a prefetch message (the fields of struct vhdr it sets).
 */
struct vctl {
	uint32_t type;
	int32_t tag;
	uint32_t rkey;
	uint64_t cookie;
	uint64_t len, seq, addr;
};

struct vctx {
	struct zcr_list eps;		/* struct vep */
	unsigned int n;
	struct zcr_listener ls;		/* the set-up connections' */
	pthread_mutex_t dev_lock;	/* the lazy device open */
	bool dev_tried;
	int dev_err;
	struct ibv_context *dev;
	struct ibv_pd *pd;
	struct ibv_port_attr pa;
	int port, gidx;
	int gid_want;			/* ZCRECV_VERBS_GID, or -1: choose */
	char dev_name[64];		/* ZCRECV_VERBS_DEV, or "": the first */
	union ibv_gid gid;
	bool land_copy;			/* staging landings via bounce buffer */
	unsigned int cache_n;
	struct rc_ent *cache;
	/*
	 * Registrations of persistent sends' buffers, kept from their first
	 * send until the persistent send is freed (send_unbind): the same
	 * buffer goes out at every start. Apart from the cache, which is
	 * off by default because a cached registration outlives what it
	 * covers; these end with the request that vouches for the buffer.
	 */
	struct rc_ent pins[PIN_N];
	uint64_t cache_tick;
	bool print;
	uint32_t rd_chunk;		/* largest READ: RD_CHUNK or less */
	uint64_t spin_ns;		/* look at the CQs before sleeping */
	bool advert;			/* ZCRECV_VERBS_ADVERT */
	pid_t owner;			/* the process that opened dev */
	struct zcr_verbs_stats st;
};

/*
 * After fork(2) the child shares the device's file with its parent: a
 * child that destroys an inherited context must not destroy the parent's
 * verbs objects (they are the same kernel objects). It leaves them alone.
 */
static inline bool foreign(const struct vctx *vc)
{
	return vc->dev && vc->owner != getpid();
}

/* The pending RDMA READ of the message at the head of the data queue. */
struct vread {
	bool active;
	bool bounce;
	bool staged;			/* into a staging slot */
	struct ibv_mr *mr;		/* dst's registration (not bounce) */
	struct rc_ent *ce;		/* or its cache entry */
	uint64_t n, off, posted;	/* bytes to pull, done, requested */
	unsigned int out;		/* READs not completed */
	/*
	 * Prefetching: the message's bytes on the wire are these runs
	 * (nruns 0: all of it), the others come from the pre-send. off and
	 * posted count wire bytes; span is the message's bytes that land.
	 */
	const struct zcr_pf_run *runs;
	size_t nruns;
	uint64_t span;
	uint64_t boff;			/* where the bounce chunk lands */
};

/*
 * The receiver's pull of a pre-send (T_PF_DATA at the head of the data
 * queue): READ whole into buf, then taken in as lib/prefetch says.
 */
struct vpfpull {
	bool active;
	char *buf;
	struct ibv_mr *mr;
	uint32_t token;
	uint8_t *bm;			/* lib/prefetch's, for the bitmap */
	uint64_t raddr;
	uint32_t rkey;
	uint64_t n, posted;
	unsigned int out;
};

struct vep {
	struct zcr_list link;		/* on vc->eps */
	struct vctx *vc;
	struct zcr_ep *ep;
	int fd;				/* the TCP connection */
	/* handshake */
	struct vhello mine, peer;
	uint8_t in[HELLO_LEN];
	size_t got;
	int stage;			/* 0 HELLO, 1 AUTH, 2 READY, 3 open */
	bool rts;			/* QP is ready to send */
	/* verbs */
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	char *mem;			/* NRECV + NSEND cells, bounce */
	size_t memlen;
	struct ibv_mr *mr;
	/* receive: data cells in arrival order */
	uint32_t dq[NRECV];
	unsigned int dq_head, dq_n;
	bool arriving;			/* dq's head is ep->rx */
	struct vhdr cur;		/* its header, copied out */
	struct vread rd;
	unsigned int ret_credits;	/* data cells reposted, untold */
	unsigned int credits;		/* data messages we may send */
	/* send */
	uint32_t sfree[NSEND];
	unsigned int nsfree;
	struct ibv_wc stash[16];	/* taken by poll_fill's look */
	int nstash;
	struct vctl *fins;		/* control messages waiting for a */
	unsigned int nfin, fin_cap;	/* send cell, in order */
	int fin_status;
	/*
	 * Offered receive buffers (both sides said VFEAT_ADVERT): ours
	 * (advs, at most ADV_MAX, one per tag) and the peer's (padvs).
	 * cq_seq numbers the peer's data messages as they complete in the
	 * CQ, which is where the offer binds them; sent_seq and sent_tag
	 * keep the number and tag of our last data messages posted, for an
	 * offer that comes after the message it binds.
	 */
	bool adv_ok;
	uint32_t adv_id;
	struct zcr_list advs, padvs;
	unsigned int nadv, npadv;
	unsigned int revokes;		/* REVOKEs sent, not answered */
	uint64_t cq_seq, sent_seq;
	int32_t sent_tag[TAG_RING];
	/*
	 * The peer closed its end of the TCP connection, or exited: why.
	 * What it sent before is in our CQ and cells, and is still
	 * delivered but for announcements (dropped); the endpoint fails
	 * once none is left (gone_settle()).
	 */
	const char *gone;
	bool broken;			/* a work request failed: QP in error */
	/*
	 * Prefetching (ep->pf set): as the sender, the answer the peer
	 * READs, kept registered until its T_PF_DONE; as the receiver, the
	 * pull of one.
	 */
	bool pf_ok;
	char *pf_body;
	struct ibv_mr *pf_mr;
	uint32_t pf_token;
	struct vpfpull pull;
	const struct zcr_pf_run *pf_runs;	/* the arriving message's */
	size_t pf_nruns;
};

static inline struct vep *V(struct zcr_ep *ep)
{
	return ep->tp_priv;
}

static inline uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline char *rcell(struct vep *ve, uint32_t i)
{
	return ve->mem + (size_t)i * CELL;
}

static inline char *scell(struct vep *ve, uint32_t i)
{
	return ve->mem + (size_t)(NRECV + i) * CELL;
}

static inline char *bounce(struct vep *ve)
{
	return ve->mem + (size_t)(NRECV + NSEND) * CELL;
}

static inline uint64_t wrid(int kind, uint32_t i)
{
	return (uint64_t)kind << 56 | i;
}

/* verbs_dev.c: the device and the registration cache */
int __zcr_verbs_dev_open(struct vctx *vc);
struct ibv_mr *__zcr_verbs_reg(struct vctx *vc, const void *p, size_t n,
			       int access);
void __zcr_verbs_dereg(struct vctx *vc, struct ibv_mr *mr);
struct ibv_mr *__zcr_verbs_cache_get(struct vctx *vc, const void *p,
				     size_t n, struct rc_ent **ce);
void __zcr_verbs_cache_put(struct vctx *vc, struct ibv_mr *mr,
			   struct rc_ent *ce);
struct ibv_mr *__zcr_verbs_pin_get(struct vctx *vc, const void *p, size_t n,
				   struct rc_ent **ce);
void __zcr_verbs_send_unbind(struct zcr_ctx *ctx, void *priv, const void *buf,
			     size_t len);

/* verbs_conn.c: connection set-up over TCP, and the handshake */
int __zcr_verbs_listen(struct zcr_ctx *ctx, void *priv, const char *addr);
int __zcr_verbs_connect(struct zcr_ctx *ctx, void *priv, const char *addr,
			void **ep_priv);
void __zcr_verbs_start(struct zcr_ep *ep);
int __zcr_verbs_rx_sock(struct zcr_ep *ep);
int __zcr_verbs_accept_all(struct zcr_ctx *ctx, struct vctx *vc);
void __zcr_verbs_poll_done(struct zcr_ctx *ctx, void *priv,
			   const struct pollfd *pfd, unsigned int n);

/* verbs_send.c: sending */
int __zcr_verbs_post_msg(struct vep *ve, struct vhdr *h, const void *payload,
			 size_t n);
int __zcr_verbs_queue_fin(struct vep *ve, uint64_t cookie);
int __zcr_verbs_queue_ctl(struct vep *ve, uint32_t type, uint64_t cookie);
void __zcr_verbs_sent(struct vep *ve, const struct zcr_req *r);
void __zcr_verbs_write_done(struct zcr_ep *ep);
void __zcr_verbs_rx_adv(struct zcr_ep *ep, const struct vhdr *h);
void __zcr_verbs_rx_revoke(struct zcr_ep *ep, const struct vhdr *h);
void __zcr_verbs_unannounce(struct vep *ve, struct zcr_req *r);
int __zcr_verbs_post_fins(struct vep *ve);
int __zcr_verbs_push_sends(struct zcr_ep *ep);
bool __zcr_verbs_fin_send(struct zcr_ep *ep, uint64_t cookie);
void __zcr_verbs_rx_fin(struct zcr_ep *ep, const struct vhdr *h);
int __zcr_verbs_pf_ask(struct zcr_ep *ep, const struct zcr_pf_ask *a);
void __zcr_verbs_rx_pf_req(struct zcr_ep *ep, const struct vhdr *h);
void __zcr_verbs_rx_pf_done(struct zcr_ep *ep, const struct vhdr *h);
void __zcr_verbs_pf_body_free(struct vep *ve);
int __zcr_verbs_queue_pf_done(struct vep *ve, uint32_t token);
int __zcr_verbs_send(struct zcr_ep *ep, struct zcr_req *r);

/* verbs_offer.c: offered receive buffers, the receiving side */
int __zcr_verbs_recv_offer(struct zcr_ep *ep, struct zcr_req *r, void **bind);
int __zcr_verbs_recv_cancel(struct zcr_ep *ep, struct zcr_req *r);
void __zcr_verbs_bind_put(struct zcr_ctx *ctx, void *bind);
struct vadv *__zcr_verbs_adv_id(struct vep *ve, uint32_t id);
struct vadv *__zcr_verbs_adv_bound(struct vep *ve, uint64_t seq);
void __zcr_verbs_adv_bind(struct zcr_ep *ep, const struct vhdr *h);
void __zcr_verbs_adv_end(struct vep *ve, struct vadv *ad);
void __zcr_verbs_rx_revoked(struct zcr_ep *ep, const struct vhdr *h);
void __zcr_verbs_advs_close(struct zcr_ep *ep, struct vep *ve);

/* verbs_recv.c: receiving, and the completion queue */
int __zcr_verbs_gone_settle(struct zcr_ep *ep);
int __zcr_verbs_ep_progress(struct zcr_ep *ep);

/* verbs.c: the teardown */
void __zcr_verbs_vep_release(struct vep *ve);

#endif /* ZCR_VERBS_PRIV_H */
