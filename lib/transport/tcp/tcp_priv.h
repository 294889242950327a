/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tcp_priv.h - what the files of the TCP transport share, and no one
 * else: the per-context and per-endpoint state and the functions one file
 * calls in another. tcp.c describes the transport; the wire format is in
 * Documentation/design.md.
 */
#ifndef ZCR_TCP_PRIV_H
#define ZCR_TCP_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/ctx.h"
#include "transport/sock.h"
#include "transport/transport.h"
#include "transport/util.h"
#include "transport/wire.h"

struct io_uring;

/* Per context. */
struct tcp_ctx {
	struct zcr_listener ls;
	uint64_t paused_look;		/* last look at paused connections */
	struct io_uring *ring;		/* batched receives, or NULL */
	uint64_t defer_rate;		/* bytes/s, ZCRECV_TCP_DEFER_RATE */
	uint64_t spin_ns;		/* look before sleeping (ctx.h) */
	/*
	 * Endpoints of ours not freed yet. 0 once every connection moved
	 * to another transport (shm): a pass then only looks at the
	 * listener, instead of walking the endpoints three times for
	 * nothing. Atomic: one is made by zcr_ep_connect() before it takes
	 * the context's lock (it is on ctx->eps, where a pass looks, only
	 * under it).
	 */
	unsigned int neps;
	/*
	 * A poll answered (tcp.c, tcp_poll_done()): the connections it found
	 * with nothing to read are marked quiet, and the next pass reads
	 * only the others.
	 */
	bool after_poll;
};

/*
 * ZCRECV_TCP_SPIN_US (core/config.c, default 2000): how long an
 * application thread with a connection open polls it without sleeping
 * before it sleeps in poll(2) (0: sleep at once). Open MPI's TCP BTL
 * never sleeps in a wait; waking from poll costs about 24 us here
 * (between two network namespaces of a virtual machine: an 8-byte round
 * trip took 77 us sleeping, 13 under Open MPI), 50-200 us on some virtual
 * machines. A wait longer than the spin pays one wake-up: at 2 ms, at
 * most a few percent of that wait.
 */

/* Per endpoint (ep->tp_priv): the socket and the receive state machine. */
struct tcp_ep {
	struct tcp_ctx *tc;		/* the transport's, counts us */
	int fd;
	uint8_t hdr[ZCR_WIRE_HDR_LEN];
	size_t hdr_got;
	bool have_hdr;			/* hdr complete, h parsed */
	struct zcr_wire_hdr h;
	uint64_t got;			/* payload bytes read */
	/*
	 * Wire version 2: another transport's negotiation to take the
	 * connection over (transport/upgrade.h), run after the handshake.
	 */
	int ver;			/* wire version of this connection */
	bool hold;			/* sends wait: negotiating */
	bool ctl_rx;			/* reading a control body into body[] */
	const struct zcr_transport_ops *up_tp;	/* offers the upgrade */
	void *up;			/* its negotiation, while it runs */
	uint8_t body[ZCR_WIRE_OFFER_LEN];
	/* Old peers (Documentation/design.md, "Wire format"). */
	char *redial;			/* where we dialled, to dial again */
	bool legacy;			/* a 0.1 peer: HELLO fields all 0 */
	bool peer_done;			/* paused, and the peer closed */
	/*
	 * Writing failed because the peer closed or reset the connection:
	 * our sends fail with this, but what the peer sent before is still
	 * read (the socket keeps it), as after any end of stream.
	 */
	int wdead;
	/* job secret (lib/transport/auth.c) */
	uint64_t nonce, peer_nonce;
	bool got_hello;			/* the peer's HELLO; AUTH awaited */
	int hello_src;			/* the rank it claimed */
	struct zcr_rx_watch watch;	/* progress of a message in flight */
	/*
	 * The connection's delivery rate (tcp_rx.c, rx_may_defer()): when
	 * the header of a large payload read as it came was taken (0: none
	 * being timed), the rate of the last one timed (bytes/s, 0: none
	 * yet), and the large early payloads deferred since.
	 */
	uint64_t rx_t0;
	uint64_t rate;
	unsigned int ndefer;
	/*
	 * Message prefetching (lib/prefetch): a PF_INFO's or PF_DATA's
	 * bitmap being read into pf_body, then PF_DATA's pages into runs
	 * of pf_dst; for a DATA, the payload bytes on the wire (want,
	 * normally h.len) and, when pre-sent pages stay out, the runs of
	 * the message they fill (run: the current one, run_got of its
	 * bytes in).
	 */
	char *pf_body;
	uint64_t pf_len;		/* bytes of pf_body */
	char *pf_dst;			/* PF_DATA's pages: runs of it */
	uint64_t want;
	const struct zcr_pf_run *runs;
	size_t nruns, run;
	uint64_t run_got;
	/*
	 * Read-ahead (tcp_rx.c): when the state machine wants a header or
	 * a short payload, one recv(2) takes up to ZCR_TCP_RA_LEN bytes
	 * here, the next header and payload with them; ra[ra_off, ra_len)
	 * is fed to the state machine before the socket is read again.
	 * Allocated at the first use; only on an open connection with no
	 * upgrade under way (bytes past the negotiation are another
	 * transport's).
	 */
	char *ra;
	uint32_t ra_off, ra_len;
	bool ra_ring;			/* an io_uring recv fills ra */
	/*
	 * The connection's entry in the last poll set filled, and whether
	 * that poll, answered, found nothing to read on it: the pass after
	 * it does not read it.
	 */
	unsigned int pidx;
	bool quiet;
};

/*
 * How much of a large message one call moves (tcp_send.c, tcp_rx.c):
 * zcr_isend() writes the first ZCR_TCP_PART bytes and leaves the rest
 * queued, and the progress thread writes and reads at most this much
 * per endpoint and pass, then yields (a write goes up to ZCR_TCP_TAIL
 * further rather than leave less than that of a message behind). Whoever sits in the library to
 * wait (zcr_wait(), zcr_test(), a probe, zcr_progress()) writes up to
 * the socket's send buffer per pass (ZCR_TCP_SNDBUF) and reads all
 * there is.
 */
#define ZCR_TCP_PART		(256u << 10)
/* A message is not cut to leave fewer bytes than this behind (tcp_send.c). */
#define ZCR_TCP_TAIL		(16u << 10)
#define ZCR_TCP_SNDBUF		UINT64_MAX	/* budget: SO_SNDBUF */

/* What a progress pass of the calling thread may write, and read. */
static inline uint64_t tcp_tx_budget(const struct zcr_ctx *ctx)
{
	return __zcr_is_progress_thread(ctx) ? ZCR_TCP_PART : ZCR_TCP_SNDBUF;
}

static inline uint64_t tcp_rx_budget(const struct zcr_ctx *ctx)
{
	return __zcr_is_progress_thread(ctx) ? ZCR_TCP_PART : UINT64_MAX;
}

/*
 * Large early payloads on a fast connection (tcp_rx.c, rx_may_defer()):
 * payloads this long or more are timed from header to last byte when
 * read as they come, and when the last one timed came at
 * ZCRECV_TCP_DEFER_RATE or faster, the next that finds no receive posted
 * waits in the socket for it (deferred), as stock Open MPI's rendezvous
 * leaves it with the sender; all but every ZCR_TCP_DEFER_PROBE-th, which
 * is staged and timed again.
 */
#define ZCR_TCP_DEFER_LEN	(1u << 20)
#define ZCR_TCP_DEFER_PROBE	8

/*
 * Connections a pass must have before it reads them with one io_uring
 * submission rather than a recv(2) each (tcp.c, tcp_progress()). Here an
 * io_uring receive cost 1.5-2.4 times a recv(2) at 1 to 32 connections
 * (567 against 236 ns for one, 11.4 against 7.5 us for 32, sockets with
 * nothing to read): the batch only pays where a system call costs more
 * than this host's.
 */
#define ZCR_TCP_BATCH_MIN	64

/* Read-ahead buffer; wanted reads at least this long go straight in. */
#define ZCR_TCP_RA_LEN		16384

static inline uint32_t tcp_ra_left(const struct tcp_ep *te)
{
	return te->ra_len - te->ra_off;
}

_Static_assert(ZCR_WIRE_HDR_LEN <= ZCR_TX_SCRATCH, "header in r->tx");

static inline struct tcp_ep *T(struct zcr_ep *ep)
{
	return ep->tp_priv;
}

static inline bool is_tcp(const struct zcr_ep *ep)
{
	return ep->tp == &__zcr_transport_tcp;
}

/* tcp_conn.c: the handshake and the upgrade it may carry */
void __zcr_tcp_start(struct zcr_ep *ep);
bool __zcr_tcp_rx_control(struct zcr_ep *ep);
bool __zcr_tcp_rx_body(struct zcr_ep *ep);
void __zcr_tcp_up_end(struct tcp_ep *te);
const struct zcr_transport_ops *__zcr_tcp_upgrade_of(struct zcr_ctx *ctx);

/* tcp_rx.c: the receive state machine; budget: bytes, UINT64_MAX all */
int __zcr_tcp_read_ep(struct zcr_ep *ep, uint64_t budget);
int __zcr_tcp_read_batch(struct zcr_ctx *ctx, struct io_uring *ring,
			  uint64_t budget);

/* tcp_send.c: the send queue */
int __zcr_tcp_push(struct zcr_ep *ep, uint64_t budget);
int __zcr_tcp_send(struct zcr_ep *ep, struct zcr_req *r);
int __zcr_tcp_ctl(struct zcr_ep *ep, int type, uint32_t tag, uint64_t seq,
		  uint64_t hlen, char *body, uint64_t blen);
int __zcr_tcp_pf_ask(struct zcr_ep *ep, const struct zcr_pf_ask *a);

#endif /* ZCR_TCP_PRIV_H */
