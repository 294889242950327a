// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tcp.c - the TCP transport: its context, listener and dialling (the
 * socket rules are transport/sock.c's), the progress engine's side
 * (poll, progress) and the end of a connection. It is driven through
 * struct zcr_transport_ops (transport/transport.h) only.
 *
 * Every socket is nonblocking; all of it runs under ctx->lock. A
 * connection whose next message has no posted receive and no room in the
 * staging pool is "stalled" (match says so in ep->rx): we stop reading it
 * (and polling it for input), so the kernel's socket buffer fills and TCP
 * flow control holds the sender back. Nothing is dropped and the pool
 * does not grow.
 *
 * A malformed header, a protocol violation or a peer that disappears closes
 * that one connection, records why in the endpoint, fails the requests that
 * depended on it and leaves every other connection alone.
 *
 * Files: this one; tcp_conn.c the handshake (and the upgrade to another
 * transport it may carry, transport/upgrade.h), tcp_rx.c the receive
 * state machine, tcp_send.c the send queue; tcp_priv.h what they share.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef ZCR_HAVE_LIBURING
#include <liburing.h>
#endif

#include "base/ctx.h"
#include "transport/sock.h"
#include "transport/tcp/tcp_priv.h"
#include "transport/transport.h"
#include "transport/upgrade.h"
#include "transport/util.h"

static int tcp_listen(struct zcr_ctx *ctx, void *priv, const char *hostport)
{
	struct tcp_ctx *tc = priv;

	return __zcr_sock_listen(ctx, &tc->ls, hostport);
}

static int tcp_ep_alloc(struct zcr_ctx *ctx, void *priv, int fd,
			void **ep_priv)
{
	struct tcp_ctx *tc = priv;
	struct tcp_ep *te = calloc(1, sizeof(*te));

	(void)ctx;
	if (!te)
		return -ENOMEM;
	te->fd = fd;
	te->tc = tc;
	__atomic_add_fetch(&tc->neps, 1, __ATOMIC_RELAXED);
	*ep_priv = te;
	return 0;
}

static int tcp_connect(struct zcr_ctx *ctx, void *priv, const char *hostport,
		       void **ep_priv)
{
	const struct zcr_transport_ops *up = __zcr_tcp_upgrade_of(ctx);
	struct tcp_ep *te;
	char *redial;
	int fd, ret;

	/*
	 * Kept to dial again for an old peer: in wire version 1 when it does
	 * not speak 2 (offering an upgrade is version 2), in the 0.1 form of
	 * the HELLO when it is 0.1 (see rx_hello).
	 */
	redial = strdup(hostport);
	if (!redial)
		return -ENOMEM;
	fd = __zcr_sock_dial(hostport);
	if (fd < 0) {
		free(redial);
		return fd;
	}
	ret = tcp_ep_alloc(ctx, priv, fd, ep_priv);
	if (ret) {
		close(fd);
		free(redial);
		return ret;
	}
	te = *ep_priv;
	te->redial = redial;
	te->up_tp = up;
	te->ver = up && up->upgrade->wanted(ctx) ? 2 : 1;
	return 0;
}

/*
 * Closing a socket that holds bytes of the peer's not yet read makes the
 * kernel reset the connection and drop what we wrote that has not left
 * yet: sends that completed here would never arrive. So say we are done
 * writing first (our end of stream goes after our data), then take in
 * what the peer sent (ours to drop: the endpoint goes), at most 1 MiB,
 * and close.
 */
static void close_gently(int fd)
{
	char buf[4096];
	int i;

	shutdown(fd, SHUT_WR);
	for (i = 0; i < 256; i++)
		if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
			break;
	close(fd);
}

static void tcp_ep_close(struct zcr_ep *ep, void *ep_priv)
{
	struct tcp_ep *te = ep_priv;

	__zcr_tcp_up_end(te);
	if (te->fd >= 0) {
		/*
		 * Handed off (ep is another transport's now, and keeps a
		 * duplicate of the socket as its control channel): just
		 * drop our descriptor.
		 */
		if (ep && ep->tp_priv == ep_priv)
			close_gently(te->fd);
		else
			close(te->fd);
		te->fd = -1;
	}
	te->have_hdr = false;
}

static void tcp_ep_free(struct zcr_ep *ep, void *ep_priv)
{
	struct tcp_ep *te = ep_priv;

	tcp_ep_close(ep, ep_priv);
	__atomic_sub_fetch(&te->tc->neps, 1, __ATOMIC_RELAXED);
	free(te->ra);
	free(te);
}

/*
 * A paused connection is polled for POLLRDHUP only (errors and hang-ups
 * are reported whatever poll is asked): once the peer reset or closed it,
 * the connection must not sit paused for ever holding its descriptor.
 * Poll said so of fd: check again (fd may have been closed and reused
 * meanwhile). A reset closes the connection. After a clean close, the
 * paused message can still complete only if all of it is in the socket's
 * buffer: then keep it (a receive may take it) and stop polling; else
 * close the connection now.
 */
static void paused_error(struct zcr_ctx *ctx, int fd)
{
	struct pollfd q = { .fd = fd, .events = POLLRDHUP };
	socklen_t sl = sizeof(int);
	struct zcr_list *pos;
	struct zcr_ep *ep;
	int err = 0, avail = 0;

	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		ep = zcr_container_of(pos, struct zcr_ep, link);
		if (is_tcp(ep) && T(ep)->fd == fd &&
		    ep->state != ZCR_EP_CLOSED &&
		    ep->rx.state == ZCR_RX_STALLED)
			break;
	}
	if (pos == &ctx->eps || poll(&q, 1, 0) <= 0)
		return;
	if (!(q.revents & (POLLERR | POLLHUP | POLLRDHUP)))
		return;
	/*
	 * Closed or reset: the bytes already in the socket stay readable
	 * (a reset does not take them back).
	 */
	if (ioctl(fd, FIONREAD, &avail) == 0 && avail >= 0 &&
	    (uint64_t)avail + tcp_ra_left(T(ep)) >=
	    T(ep)->h.len - T(ep)->got) {
		T(ep)->peer_done = true;
		return;
	}
	if (!(q.revents & (POLLERR | POLLHUP))) {
		__zcr_ep_fail_locked(ep, -ECONNRESET, "peer closed the "
				     "connection mid-message (paused)");
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0 || !err)
		err = ECONNRESET;
	__zcr_ep_fail_locked(ep, -err, "connection reset while paused");
}

/*
 * io_uring when liburing was built in, the kernel lets us set up a ring and
 * it supports IORING_OP_RECV (5.6); plain sockets otherwise, or with
 * ZCRECV_NO_URING=1.
 */
static struct io_uring *ring_init(struct zcr_ctx *ctx)
{
#ifdef ZCR_HAVE_LIBURING
	struct io_uring_probe *probe;
	struct io_uring *ring;

	if (ctx->env.v[ZCR_ENV_NO_URING].u)
		return NULL;
	ring = calloc(1, sizeof(*ring));
	if (!ring)
		return NULL;
	if (io_uring_queue_init(128, ring, 0) < 0) {
		free(ring);
		return NULL;
	}
	probe = io_uring_get_probe_ring(ring);
	if (!probe || !io_uring_opcode_supported(probe, IORING_OP_RECV)) {
		if (probe)
			io_uring_free_probe(probe);
		io_uring_queue_exit(ring);
		free(ring);
		return NULL;
	}
	io_uring_free_probe(probe);
	return ring;
#else
	(void)ctx;
	return NULL;
#endif
}

static int tcp_init(struct zcr_ctx *ctx, void **priv)
{
	struct tcp_ctx *tc = calloc(1, sizeof(*tc));

	if (!tc)
		return -ENOMEM;
	__zcr_listener_init(&tc->ls);
	tc->ring = ring_init(ctx);
	tc->spin_ns = ctx->env.v[ZCR_ENV_TCP_SPIN_US].u * 1000;
	tc->defer_rate = ctx->env.v[ZCR_ENV_TCP_DEFER_RATE].u * 1000000;
	*priv = tc;
	return 0;
}

static void tcp_fini(struct zcr_ctx *ctx, void *priv)
{
	struct tcp_ctx *tc = priv;

	(void)ctx;
	if (!tc)
		return;
#ifdef ZCR_HAVE_LIBURING
	if (tc->ring)
		io_uring_queue_exit(tc->ring);
#endif
	free(tc->ring);
	__zcr_listener_close(&tc->ls);
	free(tc);
}

static unsigned int tcp_poll_max(struct zcr_ctx *ctx, void *priv)
{
	(void)priv;
	return ctx->nep + 1;
}

static unsigned int tcp_poll_fill(struct zcr_ctx *ctx, void *priv,
				  struct pollfd *pfd, unsigned int max,
				  uint64_t *deadline)
{
	struct tcp_ctx *tc = priv;
	struct zcr_list *pos;
	unsigned int n;

	n = __zcr_listener_poll_fill(&tc->ls, pfd, max, deadline);
	if (!__atomic_load_n(&tc->neps, __ATOMIC_RELAXED))
		return n;
	for (pos = ctx->eps.next; pos != &ctx->eps && n < max;
	     pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (!is_tcp(ep) || ep->state == ZCR_EP_CLOSED)
			continue;
		/*
		 * Paused with all of its message in, the peer gone: nothing
		 * to wait for (a reset would be reported at every poll).
		 */
		if (ep->rx.state == ZCR_RX_STALLED && T(ep)->peer_done &&
		    zcr_list_empty(&ep->sendq))
			continue;
		/* Bytes read ahead that can go on: work, no sleep. */
		if (ep->rx.state != ZCR_RX_STALLED && tcp_ra_left(T(ep)))
			*deadline = 0;
		T(ep)->pidx = n;
		pfd[n].fd = T(ep)->fd;
		if (ep->rx.state != ZCR_RX_STALLED)
			pfd[n].events = POLLIN;
		else
			pfd[n].events = POLLRDHUP;
		if (!zcr_list_empty(&ep->sendq) && !T(ep)->hold &&
		    ep->state == ZCR_EP_OPEN)
			pfd[n].events |= POLLOUT;
		if (T(ep)->watch.deadline && T(ep)->watch.deadline < *deadline)
			*deadline = T(ep)->watch.deadline;
		/*
		 * Only poll(2) can tell whether a peer wrote: ask the engine
		 * to look a while before sleeping (its caller permitting).
		 */
		if (ep->state == ZCR_EP_OPEN && ctx->poll_spin_ns < tc->spin_ns)
			ctx->poll_spin_ns = tc->spin_ns;
		n++;
	}
	return n;
}

/*
 * Poll answered: the connections it was asked to watch for input and
 * found nothing on are quiet, and the pass that follows reads only the
 * others (tcp_progress()), each with one recv(2). A small message's way
 * in was an io_uring submission of a receive for every connection, the
 * one poll had just woken us for and the idle ones alike: 0.93 us for
 * two connections against 0.24 for one recv here, on both sides of a
 * round trip. Bytes that come after the poll, on a connection it found
 * quiet, wait for the next pass: the next poll (level-triggered) or the
 * next call into the library, as bytes coming just after any pass do. An
 * entry is
 * the connection's only if it still holds its socket (another thread
 * may have filled a set since, and a connection may have gone).
 */
static void mark_quiet(struct zcr_ctx *ctx, struct tcp_ctx *tc,
		       const struct pollfd *pfd, unsigned int n)
{
	struct zcr_list *pos;

	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);
		struct tcp_ep *te = T(ep);

		if (is_tcp(ep) && te->pidx < n && pfd[te->pidx].fd == te->fd &&
		    (pfd[te->pidx].events & POLLIN) && !pfd[te->pidx].revents)
			te->quiet = true;
	}
	tc->after_poll = true;
}

/*
 * A readable listening socket is accepted from at once; only paused
 * connections are polled without POLLIN.
 */
static void tcp_poll_done(struct zcr_ctx *ctx, void *priv,
			  const struct pollfd *pfd, unsigned int n)
{
	struct tcp_ctx *tc = priv;
	unsigned int i;

	__zcr_listener_poll_done(&tc->ls, pfd, n);
	for (i = 0; i < n; i++)
		if (pfd[i].fd != tc->ls.fd &&
		    (pfd[i].revents & (POLLERR | POLLHUP | POLLRDHUP)) &&
		    !(pfd[i].events & POLLIN))
			paused_error(ctx, pfd[i].fd);
	if (ctx->poll_answered && n)
		mark_quiet(ctx, tc, pfd, n);
}

/*
 * A message in flight on an open connection (a header or a payload partly
 * read, not paused by us) is watched by the progress timeout (util.h).
 * Returns 1 if ep was closed.
 */
static int check_progress(struct zcr_ep *ep, uint64_t now)
{
	struct tcp_ep *te = T(ep);
	bool busy;

	busy = ep->state == ZCR_EP_OPEN &&
	       ((!te->have_hdr && te->hdr_got) ||
		(te->have_hdr && ep->rx.state == ZCR_RX_LANDING));
	return __zcr_rx_watch_check(ep, &te->watch, busy, now);
}

#define ZCR_PAUSED_LOOK_NS	(10 * 1000000ULL)

static int tcp_progress(struct zcr_ctx *ctx, void *priv)
{
	struct tcp_ctx *tc = priv;
	struct zcr_list *pos, *tmp;
	uint64_t now, tx, rx;
	int n, r = -1;
	bool look, after;

	n = __zcr_listener_accept(ctx, &tc->ls, &__zcr_transport_tcp,
				  tcp_ep_alloc, tc);
	if (!__atomic_load_n(&tc->neps, __ATOMIC_RELAXED))
		return n;
	/*
	 * The progress thread moves a bounded part of each connection's
	 * traffic per pass (tcp_priv.h, ZCR_TCP_PART) and yields between
	 * passes: it shares a processor with the rank's computation.
	 */
	tx = tcp_tx_budget(ctx);
	rx = tcp_rx_budget(ctx);
	zcr_list_for_each_safe(pos, tmp, &ctx->eps) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (is_tcp(ep) && ep->state != ZCR_EP_CLOSED)
			n += __zcr_tcp_push(ep, tx);
	}
	/*
	 * Right after poll answered, it did the batch's work: only the
	 * connections it did not find quiet are read, one recv(2) each. A
	 * few connections are read with recv(2) anyway (ZCR_TCP_BATCH_MIN).
	 */
	after = tc->after_poll;
	tc->after_poll = false;
#ifdef ZCR_HAVE_LIBURING
	if (tc->ring && !after &&
	    __atomic_load_n(&tc->neps, __ATOMIC_RELAXED) >= ZCR_TCP_BATCH_MIN)
		r = __zcr_tcp_read_batch(ctx, tc->ring, rx);
#endif
	if (r >= 0) {
		n += r;
	} else {
		zcr_list_for_each_safe(pos, tmp, &ctx->eps) {
			struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep,
							     link);

			/*
			 * Skipped only with nothing to do without the wire:
			 * no bytes read ahead, and no message whose last
			 * byte is in (no payload, or all of it pre-sent)
			 * waiting to complete since it was unstalled.
			 */
			if (is_tcp(ep) && T(ep)->quiet) {
				struct tcp_ep *te = T(ep);

				te->quiet = false;
				if (after && !tcp_ra_left(te) &&
				    !(te->have_hdr && te->got == te->want &&
				      ep->rx.state == ZCR_RX_LANDING))
					continue;
			}
			n += __zcr_tcp_read_ep(ep, rx);
		}
	}
	now = zcr_now_ns();
	/*
	 * A paused connection's end is seen by poll(2), which a caller
	 * that only ever tests (zero timeouts) never reaches: look every
	 * ZCR_PAUSED_LOOK_NS while anything is paused.
	 */
	look = !zcr_list_empty(&ctx->stalled) &&
	       now - tc->paused_look >= ZCR_PAUSED_LOOK_NS;
	if (look)
		tc->paused_look = now;
	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (!is_tcp(ep) || ep->state == ZCR_EP_CLOSED)
			continue;
		n += check_progress(ep, now);
		if (look && ep->state == ZCR_EP_OPEN &&
		    ep->rx.state == ZCR_RX_STALLED && !T(ep)->peer_done)
			paused_error(ctx, T(ep)->fd);
	}
	return n;
}

ZCR_TRANSPORT(tcp) = {
	.size = sizeof(struct zcr_transport_ops),
	.name = "tcp",
	.scheme = "tcp",
	.init = tcp_init,
	.fini = tcp_fini,
	.listen = tcp_listen,
	.connect = tcp_connect,
	.start = __zcr_tcp_start,
	.poll_max = tcp_poll_max,
	.poll_fill = tcp_poll_fill,
	.poll_done = tcp_poll_done,
	.progress = tcp_progress,
	.send = __zcr_tcp_send,
	.ep_close = tcp_ep_close,
	.ep_free = tcp_ep_free,
	.pf_ask = __zcr_tcp_pf_ask,
};
