// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tcp.c - the TCP transport: sockets, the per-connection receive
 * state machine (header, then payload straight into its landing place) and
 * the send queue.
 *
 * Every socket is nonblocking; all of it runs under ctx->lock. A
 * connection whose next message has no posted receive and no room in the
 * staging pool is "stalled": we stop reading it (and polling it for input),
 * so the kernel's socket buffer fills and TCP flow control holds the sender
 * back. Nothing is dropped and the pool does not grow.
 *
 * A malformed header, a protocol violation or a peer that disappears closes
 * that one connection, records why in the endpoint, fails the requests that
 * depended on it and leaves every other connection alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#ifdef ZCR_HAVE_LIBURING
#include <liburing.h>
#endif

#include "core/ctx.h"
#include "match/match.h"
#include "transport/transport.h"

static int split_hostport(const char *hostport, char *host, size_t hlen,
			  const char **port)
{
	const char *c = strrchr(hostport, ':');
	size_t n;

	if (!c || !c[1])
		return -EINVAL;
	/* getaddrinfo() takes "99999" and binds port 99999 % 65536. */
	if (c[1] >= '0' && c[1] <= '9') {
		char *end;
		unsigned long v = strtoul(c + 1, &end, 10);

		if (!*end && v > 65535)
			return -EINVAL;
	}
	n = (size_t)(c - hostport);
	if (n >= hlen)
		return -EINVAL;
	memcpy(host, hostport, n);
	host[n] = 0;
	*port = c + 1;
	return 0;
}

static int resolve(const char *hostport, bool passive, struct addrinfo **res)
{
	struct addrinfo hints;
	const char *port;
	char host[256];
	int ret;

	ret = split_hostport(hostport, host, sizeof(host), &port);
	if (ret)
		return ret;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	ret = getaddrinfo(host[0] ? host : NULL, port, &hints, res);
	if (ret)
		return ret == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	return 0;
}

static void tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int __zcr_tcp_listen(const char *hostport, int *port)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct addrinfo *res;
	int fd, one = 1, ret;

	ret = resolve(hostport, true, &res);
	if (ret)
		return ret;
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 ||
	    listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		ret = -errno;
		close(fd);
		goto out;
	}
	*port = ntohs(ss.ss_family == AF_INET6 ?
		      ((struct sockaddr_in6 *)&ss)->sin6_port :
		      ((struct sockaddr_in *)&ss)->sin_port);
	ret = fd;
out:
	freeaddrinfo(res);
	return ret;
}

int __zcr_tcp_connect(const char *hostport)
{
	struct addrinfo *res, *ai;
	int fd = -1, ret;

	ret = resolve(hostport, false, &res);
	if (ret)
		return ret;
	ret = -ECONNREFUSED;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		ret = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return ret;
	tune(fd);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

static void send_hello(struct zcr_ep *ep)
{
	struct zcr_wire_hdr h = {
		.magic = ZCR_WIRE_MAGIC,
		.version = ZCR_WIRE_VERSION,
		.type = ZCR_WIRE_HELLO,
		.hdr_len = ZCR_WIRE_HDR_LEN,
		.src = ep->ctx->rank,
	};
	uint8_t buf[ZCR_WIRE_HDR_LEN];

	__zcr_wire_encode(&h, buf);
	/* The first bytes on a fresh socket always fit its buffer. */
	if (send(ep->fd, buf, sizeof(buf), MSG_NOSIGNAL) != sizeof(buf))
		__zcr_ep_fail_locked(ep, errno ? -errno : -EIO,
				     "cannot send the handshake");
}

struct zcr_ep *__zcr_ep_new_locked(struct zcr_ctx *ctx, int fd, bool accepted)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[48], serv[16];
	struct zcr_ep *ep;

	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return NULL;
	ep->ctx = ctx;
	ep->fd = fd;
	ep->rank = -1;
	ep->accepted = accepted;
	ep->state = ZCR_EP_HANDSHAKE;
	ep->hs_deadline = zcr_now_ns() + ctx->hs_timeout_ns;
	ctx->nhandshake++;
	zcr_list_init(&ep->sendq);
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 &&
	    getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv,
			sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) == 0)
		snprintf(ep->peer, sizeof(ep->peer), "%s:%s", host, serv);
	else
		snprintf(ep->peer, sizeof(ep->peer), "fd %d", fd);
	zcr_list_add_tail(&ep->link, &ctx->eps);
	ctx->nep++;
	send_hello(ep);
	return ep;
}

void __zcr_ep_free(struct zcr_ep *ep)
{
	struct zcr_list *pos, *tmp;

	zcr_list_for_each_safe(pos, tmp, &ep->sendq) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		zcr_list_del(&r->link);
		free(r);
	}
	if (ep->fd >= 0)
		close(ep->fd);
	zcr_list_del(&ep->link);
	ep->ctx->nep--;
	if (ep->state == ZCR_EP_HANDSHAKE)
		ep->ctx->nhandshake--;
	free(ep);
}

static bool rank_has_open_ep(struct zcr_ctx *ctx, int rank)
{
	struct zcr_list *pos;

	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (ep->state == ZCR_EP_OPEN && ep->rank == rank)
			return true;
	}
	return false;
}

void __zcr_ep_fail_locked(struct zcr_ep *ep, int err, const char *fmt, ...)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct zcr_list *pos, *tmp;
	va_list ap;
	bool gone;

	if (ep->state == ZCR_EP_CLOSED)
		return;
	if (ep->state == ZCR_EP_HANDSHAKE)
		ctx->nhandshake--;
	ep->state = ZCR_EP_CLOSED;
	ep->error = err;
	va_start(ap, fmt);
	vsnprintf(ep->errmsg, sizeof(ep->errmsg), fmt, ap);
	va_end(ap);
	if (!ctx->quiet)
		fprintf(stderr, "zcrecv: rank %d: connection to %s (rank %d) "
			"closed: %s (%s)\n", ctx->rank, ep->peer, ep->rank,
			ep->errmsg, strerror(-err));
	close(ep->fd);
	ep->fd = -1;
	ctx->st.disconnects++;

	zcr_list_for_each_safe(pos, tmp, &ep->sendq) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		zcr_list_del(&r->link);
		__zcr_req_complete_locked(r, -ECONNRESET);
	}
	/* A message cut short is never delivered. */
	if (ep->rreq)
		__zcr_req_complete_locked(ep->rreq, -ECONNRESET);
	if (ep->rmsg) {
		struct zcr_msg *m = ep->rmsg;

		zcr_list_del(&m->link);
		if (m->req)
			__zcr_req_complete_locked(m->req, -ECONNRESET);
		__zcr_slot_put_locked(ctx, m->slot);
		free(m);
	}
	ep->rreq = NULL;
	ep->rmsg = NULL;
	ep->have_hdr = ep->stalled = false;
	/* The slot just freed may be what a stalled connection waits for. */
	__zcr_retry_stalled_locked(ctx);
	/*
	 * Receives that only this peer could satisfy will never complete:
	 * those naming its rank, and those that no connection left (nor,
	 * for ANY_SOURCE, the listener) can satisfy, e.g. a source named
	 * while this connection was still in its handshake.
	 */
	gone = ep->rank >= 0 && !rank_has_open_ep(ctx, ep->rank);
	zcr_list_for_each_safe(pos, tmp, &ctx->posted) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		if ((gone && r->src == ep->rank) ||
		    !__zcr_source_possible(ctx, r->src)) {
			zcr_list_del(&r->link);
			__zcr_req_complete_locked(r, -ECONNRESET);
		}
	}
}

static int handle_hello(struct zcr_ep *ep)
{
	if (ep->state != ZCR_EP_HANDSHAKE) {
		__zcr_ep_fail_locked(ep, -EPROTO, "second handshake");
		return -1;
	}
	if (ep->h.src == ep->ctx->rank || rank_has_open_ep(ep->ctx, ep->h.src)) {
		__zcr_ep_fail_locked(ep, -EADDRINUSE,
				     "peer claims rank %d, already in use",
				     ep->h.src);
		return -1;
	}
	ep->rank = ep->h.src;
	ep->state = ZCR_EP_OPEN;
	ep->ctx->nhandshake--;
	ep->have_hdr = false;
	ep->hdr_got = 0;
	pthread_cond_broadcast(&ep->ctx->cond);
	return 0;
}

static void finish_payload(struct zcr_ep *ep)
{
	struct zcr_ctx *ctx = ep->ctx;

	ctx->st.bytes_recv += ep->h.len;
	if (ep->rreq) {
		struct zcr_req *r = ep->rreq;

		r->st.len = ep->h.len;
		ctx->st.msgs_recv++;
		__zcr_req_complete_locked(r, ep->h.len > r->size ? -EMSGSIZE :
						 0);
	} else if (ep->rmsg) {
		struct zcr_msg *m = ep->rmsg;

		m->complete = true;
		if (m->req)
			__zcr_msg_deliver_locked(ctx, m, m->req);
	}
	ep->rreq = NULL;
	ep->rmsg = NULL;
	ep->have_hdr = false;
	ep->hdr_got = 0;
}

/*
 * The receive state machine in two halves, so that plain recv(2) and a
 * batch of io_uring receives drive it alike: rx_target() says where the
 * next bytes go (0: nothing to read now), rx_done() accounts for what a
 * receive returned and says whether to read on.
 */
static char rx_discard[65536];

static size_t rx_target(struct zcr_ep *ep, char **p)
{
	uint64_t left;

	if (ep->state == ZCR_EP_CLOSED || ep->stalled)
		return 0;
	/* Complete: a message with no payload, or one just unstalled. */
	if (ep->have_hdr && (ep->rreq || ep->rmsg) && ep->got == ep->h.len)
		finish_payload(ep);
	if (!ep->have_hdr) {
		*p = (char *)ep->hdr + ep->hdr_got;
		return ZCR_WIRE_HDR_LEN - ep->hdr_got;
	}
	if (!ep->rreq && !ep->rmsg)
		return 0;
	if (ep->got < ep->room) {
		*p = ep->dst + ep->got;
		return ep->room - ep->got;
	}
	/* The part of a truncated message that does not fit the buffer. */
	left = ep->h.len - ep->got;
	*p = rx_discard;
	return left < sizeof(rx_discard) ? left : sizeof(rx_discard);
}

/* A header is complete: validate it and find where its payload goes. */
static bool rx_header(struct zcr_ep *ep)
{
	const char *why;
	int ret;

	ret = __zcr_wire_parse(ep->hdr, ep->ctx->max_msg, &ep->h, &why);
	if (ret) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, ret, "malformed header: %s", why);
		return false;
	}
	if (ep->h.type == ZCR_WIRE_HELLO)
		return handle_hello(ep) == 0;
	if (ep->state != ZCR_EP_OPEN || ep->h.src != ep->rank ||
	    ep->h.seq != ep->recv_seq + 1) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO,
				     "header out of protocol (src %d, seq %llu)",
				     ep->h.src, (unsigned long long)ep->h.seq);
		return false;
	}
	ep->recv_seq = ep->h.seq;
	ep->have_hdr = true;
	ep->got = 0;
	__zcr_begin_message_locked(ep);
	return true;
}

static bool rx_done(struct zcr_ep *ep, long r)
{
	if (ep->state == ZCR_EP_CLOSED)
		return false;
	if (r == -EAGAIN || r == -EWOULDBLOCK || r == -EINTR)
		return false;
	if (r == 0) {
		__zcr_ep_fail_locked(ep, -ECONNRESET,
				     ep->have_hdr || ep->hdr_got ?
				     "peer closed the connection mid-message" :
				     "peer closed the connection");
		return false;
	}
	if (r < 0) {
		__zcr_ep_fail_locked(ep, (int)r, "receive failed");
		return false;
	}
	if (!ep->have_hdr) {
		ep->hdr_got += (size_t)r;
		if (ep->hdr_got < ZCR_WIRE_HDR_LEN)
			return true;
		return rx_header(ep);
	}
	ep->got += (uint64_t)r;
	if (ep->got == ep->h.len)
		finish_payload(ep);
	return true;
}

/* Read what is there with recv(2); returns how many reads moved data. */
static int read_ep(struct zcr_ep *ep)
{
	int n = 0;
	size_t len;
	char *p;

	while ((len = rx_target(ep, &p)) > 0) {
		ssize_t r = recv(ep->fd, p, len, 0);

		if (r > 0)
			n++;
		if (!rx_done(ep, r < 0 ? -errno : (long)r))
			break;
	}
	return n;
}

#ifdef ZCR_HAVE_LIBURING
/*
 * One io_uring submission carries a nonblocking receive for every
 * connection that can take data, instead of one recv(2) per connection;
 * with many peers most of them idle, that is one system call rather than
 * many. The connections that got data are then drained with recv(2).
 */
static int read_batch(struct zcr_ctx *ctx)
{
	struct io_uring *ring = ctx->ring;
	struct zcr_list *pos;
	struct io_uring_cqe *cqe;
	unsigned int queued = 0, i;
	int n = 0;

	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);
		struct io_uring_sqe *sqe;
		size_t len;
		char *p;

		len = rx_target(ep, &p);
		if (!len)
			continue;
		sqe = io_uring_get_sqe(ring);
		if (!sqe) {
			n += read_ep(ep);	/* the ring is full */
			continue;
		}
		io_uring_prep_recv(sqe, ep->fd, p, len, MSG_DONTWAIT);
		io_uring_sqe_set_data(sqe, ep);
		queued++;
	}
	if (!queued)
		return 0;
	if (io_uring_submit_and_wait(ring, queued) < 0)
		return -1;
	for (i = 0; i < queued; i++) {
		struct zcr_ep *ep;

		if (io_uring_wait_cqe(ring, &cqe) < 0)
			return -1;
		ep = io_uring_cqe_get_data(cqe);
		if (cqe->res > 0)
			n++;
		/* Bytes that arrived are in place; the rest by recv(2). */
		if (rx_done(ep, cqe->res) && cqe->res > 0)
			n += read_ep(ep);
		io_uring_cqe_seen(ring, cqe);
	}
	return n;
}
#endif

void __zcr_ep_send_locked(struct zcr_ep *ep)
{
	struct zcr_ctx *ctx = ep->ctx;

	while (ep->state != ZCR_EP_CLOSED && !zcr_list_empty(&ep->sendq)) {
		struct zcr_req *r = zcr_container_of(ep->sendq.next,
						     struct zcr_req, link);
		struct iovec iov[2];
		struct msghdr mh;
		int niov = 0;
		ssize_t w;

		if (r->sent < ZCR_WIRE_HDR_LEN) {
			iov[niov].iov_base = r->hdr + r->sent;
			iov[niov++].iov_len = ZCR_WIRE_HDR_LEN - r->sent;
			iov[niov].iov_base = (void *)r->sbuf;
			iov[niov++].iov_len = r->len;
		} else {
			iov[niov].iov_base = (void *)(r->sbuf + r->sent -
						      ZCR_WIRE_HDR_LEN);
			iov[niov++].iov_len = r->len + ZCR_WIRE_HDR_LEN -
					      r->sent;
		}
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = iov;
		mh.msg_iovlen = (size_t)niov;
		w = sendmsg(ep->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK ||
			    errno == EINTR)
				return;
			__zcr_ep_fail_locked(ep, -errno, "send failed");
			return;
		}
		r->sent += (uint64_t)w;
		if (r->sent == r->len + ZCR_WIRE_HDR_LEN) {
			zcr_list_del(&r->link);
			ctx->st.msgs_sent++;
			ctx->st.bytes_sent += r->len;
			__zcr_req_complete_locked(r, 0);
		}
	}
}

/*
 * A paused connection is polled for no event, but poll reports errors and
 * hang-ups whatever it is asked: once the peer reset it, every poll would
 * return at once and the caller spin. Poll said so of fd: check again
 * (fd may have been closed and reused meanwhile) and close the connection.
 */
void __zcr_tcp_paused_error_locked(struct zcr_ctx *ctx, int fd)
{
	struct pollfd q = { .fd = fd };
	socklen_t sl = sizeof(int);
	struct zcr_list *pos;
	struct zcr_ep *ep;
	int err = 0;

	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		ep = zcr_container_of(pos, struct zcr_ep, link);
		if (ep->fd == fd && ep->state != ZCR_EP_CLOSED && ep->stalled)
			break;
	}
	if (pos == &ctx->eps || poll(&q, 1, 0) <= 0 ||
	    !(q.revents & (POLLERR | POLLHUP)))
		return;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0 || !err)
		err = ECONNRESET;
	__zcr_ep_fail_locked(ep, -err, "connection reset while paused");
}

/*
 * Out of descriptors (or memory), accept() fails and leaves the connection
 * queued, so the listening socket stays readable and every poll would
 * return at once: stop accepting, and polling the listener, for a while.
 */
#define ZCR_ACCEPT_BACKOFF_NS	(100 * 1000000ULL)

static int accept_all(struct zcr_ctx *ctx)
{
	int n = 0, fd;

	if (ctx->listen_fd < 0)
		return 0;
	if (ctx->accept_resume) {
		if (zcr_now_ns() < ctx->accept_resume)
			return 0;
		ctx->accept_resume = 0;
	}
	while ((fd = accept4(ctx->listen_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		tune(fd);
		if (!__zcr_ep_new_locked(ctx, fd, true))
			close(fd);
		n++;
	}
	if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
	    errno == ENOMEM)
		ctx->accept_resume = zcr_now_ns() + ZCR_ACCEPT_BACKOFF_NS;
	return n;
}

/*
 * io_uring when liburing was built in, the kernel lets us set up a ring and
 * it supports IORING_OP_RECV (5.6); plain sockets otherwise, or with
 * ZCRECV_NO_URING=1.
 */
void __zcr_tcp_ring_init(struct zcr_ctx *ctx)
{
#ifdef ZCR_HAVE_LIBURING
	struct io_uring_probe *probe;
	struct io_uring *ring;
	const char *off = getenv("ZCRECV_NO_URING");

	ctx->ring = NULL;
	if (off && *off && strcmp(off, "0"))
		return;
	ring = calloc(1, sizeof(*ring));
	if (!ring)
		return;
	if (io_uring_queue_init(128, ring, 0) < 0) {
		free(ring);
		return;
	}
	probe = io_uring_get_probe_ring(ring);
	if (!probe || !io_uring_opcode_supported(probe, IORING_OP_RECV)) {
		if (probe)
			io_uring_free_probe(probe);
		io_uring_queue_exit(ring);
		free(ring);
		return;
	}
	io_uring_free_probe(probe);
	ctx->ring = ring;
#else
	ctx->ring = NULL;
#endif
}

void __zcr_tcp_ring_fini(struct zcr_ctx *ctx)
{
#ifdef ZCR_HAVE_LIBURING
	if (ctx->ring) {
		io_uring_queue_exit(ctx->ring);
		free(ctx->ring);
	}
#endif
	ctx->ring = NULL;
}

/*
 * A connection we accepted that closed before zcr_ep_accept() handed it
 * out is unreachable: the application has no pointer to it and, once
 * closed, nothing dereferences it (its queued messages keep m->ep only as
 * a record). Free it, or a peer that connects and
 * drops in a loop grows the context without bound.
 */
static void reap_unreturned(struct zcr_ctx *ctx)
{
	struct zcr_list *pos, *tmp;

	zcr_list_for_each_safe(pos, tmp, &ctx->eps) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (ep->state == ZCR_EP_CLOSED && ep->accepted && !ep->returned)
			__zcr_ep_free(ep);
	}
}

/*
 * A peer that connects and never completes its handshake would hold its
 * descriptor forever and, as a connection that might yet turn out to be
 * any rank, keep receives naming absent sources posted. Runs after the
 * reads, so a handshake that did arrive is taken even if we were slow to
 * look. Returns how many connections it closed.
 */
static int expire_handshakes(struct zcr_ctx *ctx)
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

int __zcr_tcp_work_locked(struct zcr_ctx *ctx)
{
	struct zcr_list *pos, *tmp;
	int n, r = -1;

	reap_unreturned(ctx);
	n = accept_all(ctx);

	zcr_list_for_each_safe(pos, tmp, &ctx->eps) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);
		uint64_t before;

		if (ep->state == ZCR_EP_CLOSED || zcr_list_empty(&ep->sendq))
			continue;
		before = ctx->st.msgs_sent;
		__zcr_ep_send_locked(ep);
		n += (int)(ctx->st.msgs_sent - before);
	}
#ifdef ZCR_HAVE_LIBURING
	if (ctx->ring)
		r = read_batch(ctx);
#endif
	if (r >= 0)
		return n + r + expire_handshakes(ctx);
	zcr_list_for_each_safe(pos, tmp, &ctx->eps)
		n += read_ep(zcr_container_of(pos, struct zcr_ep, link));
	return n + expire_handshakes(ctx);
}
