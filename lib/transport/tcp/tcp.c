// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tcp.c - the TCP transport: sockets, the per-connection receive
 * state machine (header, then payload straight into the landing place
 * match gives) and the send queue. It is driven through
 * struct zcr_transport_ops (transport/transport.h) only.
 *
 * Every socket is nonblocking; all of it runs under ctx->lock. A
 * connection whose next message has no posted receive and no room in the
 * staging pool is "stalled" (match says so in ep->rx): we stop reading it (and polling it for input),
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#ifdef ZCR_HAVE_LIBURING
#include <liburing.h>
#endif

#include "base/ctx.h"
#include "match/match.h"
#include "transport/auth.h"
#include "transport/shm/shm.h"
#include "transport/transport.h"
#include "transport/wire.h"

/* Per context. */
struct tcp_ctx {
	int listen_fd;
	uint64_t accept_resume;		/* no accept() before; 0: not paused */
	uint64_t accept_next;		/* next accept() without a poll hint */
	uint64_t paused_look;		/* last look at paused connections */
	bool listen_ready;		/* poll saw a connection waiting */
	struct io_uring *ring;		/* batched receives, or NULL */
	uint64_t spin_ns;		/* look before sleeping (ctx.h) */
	/*
	 * Endpoints of ours not freed yet. 0 once every connection moved
	 * to shm: a pass then only looks at the listener, instead of
	 * walking the endpoints three times for nothing. Atomic: one is
	 * made by zcr_ep_connect() before it takes the context's lock (it
	 * is on ctx->eps, where a pass looks, only under it).
	 */
	unsigned int neps;
};

/*
 * ZCRECV_TCP_SPIN_US (base/config.c, default 2000): how long an
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
	/* Wire version 2: the shm negotiation (Documentation/shm.md). */
	int ver;			/* wire version of this connection */
	bool hold;			/* sends wait: negotiating */
	bool ctl_rx;			/* reading an offer into offer[] */
	bool take_ok;			/* the peer's offer suits us */
	unsigned int nego;		/* NEGO_* */
	int my_switch, peer_switch;	/* 0: moving to shm, else errno */
	char *redial;			/* where we dialled, to dial again */
	bool legacy;			/* a 0.1 peer: HELLO fields all 0 */
	struct zcr_shm_nego *sn;
	uint8_t offer[ZCR_WIRE_OFFER_LEN];
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
	/* progress of a message in flight */
	uint64_t rx_total;		/* bytes ever read */
	uint64_t rx_mark;		/* rx_total when rx_deadline was set */
	uint64_t rx_deadline;		/* 0: nothing in flight */
};

/* A message in flight must bring this much, or its end, per timeout. */
#define ZCR_PROGRESS_QUANTUM	(64 << 10)

static int push(struct zcr_ep *ep);
static bool hello_auth(struct zcr_ep *ep);
static bool hello_open(struct zcr_ep *ep);
static void encode_data(struct zcr_ep *ep, struct zcr_req *r);

#define NEGO_SENT_SWITCH	1u
#define NEGO_GOT_SWITCH		2u

_Static_assert(ZCR_WIRE_HDR_LEN <= ZCR_TX_SCRATCH, "header in r->tx");

static inline struct tcp_ep *T(struct zcr_ep *ep)
{
	return ep->tp_priv;
}

static inline bool is_tcp(const struct zcr_ep *ep)
{
	return ep->tp == &__zcr_transport_tcp;
}

/*
 * "HOST:PORT", "[IPV6]:PORT" or ":PORT" (empty host) into host and port.
 */
static int split_hostport(const char *hostport, char *host, size_t hlen,
			  const char **port)
{
	const char *c = strrchr(hostport, ':');
	size_t n;

	if (hostport[0] == '[') {
		const char *e = strchr(hostport, ']');

		if (!e || e[1] != ':')
			return -EINVAL;
		c = e + 1;
		n = (size_t)(e - hostport - 1);
		if (n >= hlen)
			return -EINVAL;
		memcpy(host, hostport + 1, n);
		host[n] = 0;
		hostport = NULL;	/* host done */
	}
	if (!c || !c[1])
		return -EINVAL;
	/* getaddrinfo() takes "99999" and binds port 99999 % 65536. */
	if (c[1] >= '0' && c[1] <= '9') {
		char *end;
		unsigned long v = strtoul(c + 1, &end, 10);

		if (!*end && v > 65535)
			return -EINVAL;
	}
	if (hostport) {
		n = (size_t)(c - hostport);
		if (n >= hlen)
			return -EINVAL;
		memcpy(host, hostport, n);
		host[n] = 0;
	}
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
	switch (ret) {
	case 0:
		return 0;
	case EAI_SYSTEM:
		return -errno;
	case EAI_NONAME:
	case EAI_NODATA:
	case EAI_ADDRFAMILY:
		return -ENXIO;		/* no such host */
	case EAI_AGAIN:
		return -EAGAIN;		/* the resolver failed, for now */
	case EAI_MEMORY:
		return -ENOMEM;
	default:
		return -EHOSTUNREACH;
	}
}

static bool is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr)
			>> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a =
			&((const struct sockaddr_in6 *)sa)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/*
 * Without a job secret any local process can claim a rank, so the
 * listener stays on loopback: an empty or wildcard host becomes loopback
 * (said once), another address is refused.
 */
static int loopback_only(struct zcr_ctx *ctx, struct addrinfo *ai)
{
	if (ctx->secret_len || is_loopback(ai->ai_addr))
		return 0;
	if (ai->ai_family == AF_INET &&
	    ((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr ==
	    htonl(INADDR_ANY)) {
		((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr =
			htonl(INADDR_LOOPBACK);
	} else if (ai->ai_family == AF_INET6 &&
		   IN6_IS_ADDR_UNSPECIFIED(
			&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr)) {
		((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr =
			in6addr_loopback;
	} else {
		if (!ctx->quiet)
			fprintf(stderr, "zcrecv: rank %d: listening on a "
				"non-loopback address needs a job secret "
				"(ZCRECV_JOB_SECRET)\n", ctx->rank);
		return -EACCES;
	}
	if (!ctx->quiet && !ctx->loopback_warned)
		fprintf(stderr, "zcrecv: rank %d: no job secret "
			"(ZCRECV_JOB_SECRET): listening on loopback only\n",
			ctx->rank);
	ctx->loopback_warned = true;
	return 0;
}

static void tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int tcp_listen(struct zcr_ctx *ctx, void *priv, const char *hostport)
{
	struct tcp_ctx *tc = priv;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct addrinfo *res;
	int fd, one = 1, ret;

	ret = resolve(hostport, true, &res);
	if (ret)
		return ret;
	pthread_mutex_lock(&ctx->lock);
	ret = loopback_only(ctx, res);
	pthread_mutex_unlock(&ctx->lock);
	if (ret)
		goto out;
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
	ret = ntohs(ss.ss_family == AF_INET6 ?
		    ((struct sockaddr_in6 *)&ss)->sin6_port :
		    ((struct sockaddr_in *)&ss)->sin_port);
	pthread_mutex_lock(&ctx->lock);
	if (tc->listen_fd >= 0) {
		close(fd);
		ret = -EBUSY;
	} else {
		tc->listen_fd = fd;
	}
	pthread_mutex_unlock(&ctx->lock);
out:
	freeaddrinfo(res);
	return ret;
}

static int tcp_ep_alloc(struct tcp_ctx *tc, int fd, void **ep_priv)
{
	struct tcp_ep *te = calloc(1, sizeof(*te));

	if (!te)
		return -ENOMEM;
	te->fd = fd;
	te->tc = tc;
	__atomic_add_fetch(&tc->neps, 1, __ATOMIC_RELAXED);
	*ep_priv = te;
	return 0;
}

static int dial(const char *hostport)
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

static int tcp_connect(struct zcr_ctx *ctx, void *priv, const char *hostport,
		       void **ep_priv)
{
	struct tcp_ep *te;
	char *redial;
	int fd, ret;

	(void)ctx;
	/*
	 * Kept to dial again for an old peer: in wire version 1 when it does
	 * not speak 2 (offering shm is version 2), in the 0.1 form of the
	 * HELLO when it is 0.1 (see rx_hello).
	 */
	redial = strdup(hostport);
	if (!redial)
		return -ENOMEM;
	fd = dial(hostport);
	if (fd < 0) {
		free(redial);
		return fd;
	}
	ret = tcp_ep_alloc(priv, fd, ep_priv);
	if (ret) {
		close(fd);
		free(redial);
		return ret;
	}
	te = *ep_priv;
	te->redial = redial;
	te->ver = __zcr_shm_wanted() ? 2 : 1;
	return 0;
}

/* Send one header (and body) of the handshake on a fresh socket. */
static int send_ctl(struct zcr_ep *ep, int type, int tag, const void *body,
		    size_t len)
{
	struct zcr_wire_hdr h = {
		.magic = ZCR_WIRE_MAGIC,
		.version = (uint8_t)T(ep)->ver,
		.type = (uint8_t)type,
		.hdr_len = ZCR_WIRE_HDR_LEN,
		.src = type == ZCR_WIRE_HELLO ? ep->ctx->rank : 0,
		.tag = tag,
		.len = len,
	};
	uint8_t buf[ZCR_WIRE_HDR_LEN + ZCR_WIRE_OFFER_LEN];
	ssize_t w;

	__zcr_wire_encode(&h, buf);
	if (len)
		memcpy(buf + ZCR_WIRE_HDR_LEN, body, len);
	/* Nothing else is queued yet: these always fit the socket buffer. */
	w = send(T(ep)->fd, buf, ZCR_WIRE_HDR_LEN + len, MSG_NOSIGNAL);
	if (w == (ssize_t)(ZCR_WIRE_HDR_LEN + len))
		return 0;
	__zcr_ep_fail_locked(ep, w < 0 ? -errno : -EIO,
			     "cannot send the handshake");
	return -1;
}

/*
 * Our HELLO: our rank, whether we will prove the job secret (AUTH), the
 * largest message we take, and this connection's nonce. To a 0.1 peer,
 * which refuses a HELLO with any of these set, only the rank.
 */
static int send_hello(struct zcr_ep *ep)
{
	struct zcr_ctx *ctx = ep->ctx;
	/*
	 * Communicator ids and acknowledged sync sends: the dialler offers
	 * them, the acceptor answers. On wire version 2 SYNC also says that
	 * our shm transport acknowledges (MATCHED cells): 0.2.0 offered
	 * SYNC on version 1 only, as its shm had no acknowledgement, and
	 * such a peer neither sends nor answers it there.
	 */
	bool comm = ep->accepted ? (T(ep)->h.tag & ZCR_HELLO_COMM) :
		    ctx->comm_ids;
	bool sync = comm &&
		    (!ep->accepted || (T(ep)->h.tag & ZCR_HELLO_SYNC));
	struct zcr_wire_hdr h = {
		.magic = ZCR_WIRE_MAGIC,
		.version = (uint8_t)T(ep)->ver,
		.type = ZCR_WIRE_HELLO,
		.hdr_len = ZCR_WIRE_HDR_LEN,
		.src = ctx->rank,
		.tag = (ctx->secret_len ? ZCR_HELLO_AUTH : 0) |
		       (comm ? ZCR_HELLO_COMM : 0) |
		       (sync ? ZCR_HELLO_SYNC : 0),
		.len = ctx->max_msg,
		.seq = T(ep)->nonce,
	};
	uint8_t buf[ZCR_WIRE_HDR_LEN];

	if (T(ep)->legacy)
		h.tag = 0, h.len = 0, h.seq = 0;
	__zcr_wire_encode(&h, buf);
	if (send(T(ep)->fd, buf, sizeof(buf), MSG_NOSIGNAL) == sizeof(buf))
		return 0;
	__zcr_ep_fail_locked(ep, errno ? -errno : -EIO,
			     "cannot send the handshake");
	return -1;
}

/* Our AUTH: the MAC of the job secret over both ranks and nonces. */
static int send_auth(struct zcr_ep *ep)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct tcp_ep *te = T(ep);
	uint8_t mac[ZCR_AUTH_MAC_LEN], buf[ZCR_WIRE_HDR_LEN];
	struct zcr_wire_hdr h = {
		.magic = ZCR_WIRE_MAGIC,
		.version = (uint8_t)te->ver,
		.type = ZCR_WIRE_AUTH,
		.hdr_len = ZCR_WIRE_HDR_LEN,
		.src = ctx->rank,
	};
	int i;

	__zcr_auth_mac(ctx, ctx->rank, te->hello_src, te->peer_nonce,
		       te->nonce, mac);
	for (i = 0; i < 8; i++) {
		h.len |= (uint64_t)mac[i] << (8 * i);
		h.seq |= (uint64_t)mac[8 + i] << (8 * i);
	}
	__zcr_wire_encode(&h, buf);
	if (send(te->fd, buf, sizeof(buf), MSG_NOSIGNAL) == sizeof(buf))
		return 0;
	__zcr_ep_fail_locked(ep, errno ? -errno : -EIO,
			     "cannot send the handshake");
	return -1;
}

/* Name the peer, then send our HELLO (or await the peer's). */
static void tcp_start(struct zcr_ep *ep)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[48], serv[16];
	int fd = T(ep)->fd, ret;

	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 &&
	    getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv,
			sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) == 0)
		snprintf(ep->peer, sizeof(ep->peer), "%s:%s", host, serv);
	else
		snprintf(ep->peer, sizeof(ep->peer), "fd %d", fd);
	ret = __zcr_auth_nonce(&T(ep)->nonce);
	if (ret) {
		__zcr_ep_fail_locked(ep, ret, "no random nonce");
		return;
	}
	/*
	 * The side that accepted answers the HELLO in the version it came
	 * in: an old peer is never sent version 2.
	 */
	if (ep->accepted)
		return;
	if (!T(ep)->ver)
		T(ep)->ver = ZCR_WIRE_VERSION;
	T(ep)->hold = T(ep)->ver > ZCR_WIRE_VERSION;
	send_hello(ep);
}

static void nego_end(struct tcp_ep *te)
{
	if (te->sn) {
		__zcr_shm_nego_release(te->sn);
		free(te->sn);
		te->sn = NULL;
	}
	free(te->redial);
	te->redial = NULL;
	te->hold = false;
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

	nego_end(te);
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
	free(te);
}

/* The payload of the current message is in: tell match, await a header. */
static void finish_payload(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);

	__zcr_match_payload_done_locked(ep->ctx, &ep->rx);
	te->have_hdr = false;
	te->hdr_got = 0;
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
	struct tcp_ep *te = T(ep);
	uint64_t left;

	if (ep->state == ZCR_EP_CLOSED || !is_tcp(ep))
		return 0;
	if (te->ctl_rx) {
		*p = (char *)te->offer + te->got;
		return ZCR_WIRE_OFFER_LEN - te->got;
	}
	if (te->have_hdr && ep->rx.state != ZCR_RX_LANDING)
		return 0;	/* stalled: match finds room first */
	/* Complete: a message with no payload, or one just unstalled. */
	if (te->have_hdr && te->got == te->h.len)
		finish_payload(ep);
	if (!te->have_hdr) {
		*p = (char *)te->hdr + te->hdr_got;
		return ZCR_WIRE_HDR_LEN - te->hdr_got;
	}
	if (te->got < ep->rx.room) {
		*p = ep->rx.dst + te->got;
		return ep->rx.room - te->got;
	}
	/* The part of a truncated message that does not fit the buffer. */
	left = te->h.len - te->got;
	*p = rx_discard;
	return left < sizeof(rx_discard) ? left : sizeof(rx_discard);
}

/* A HELLO as zcrecv 0.1 sends it: the rank alone, nothing it refuses. */
static bool hello_is_legacy(const struct zcr_wire_hdr *h)
{
	return h->version == 1 && !h->tag && !h->len && !h->seq;
}

/*
 * The peer's HELLO. The side that accepted answers in the same version,
 * and in the 0.1 form to a 0.1 HELLO. The side that dialled hears an old
 * peer, which is closing on our HELLO, when it hears version 1 after
 * offering version 2, or a 0.1 HELLO after sending a full one: dial again
 * in version 1, in the 0.1 form if the peer is 0.1. (A 0.1 peer sends
 * its HELLO at once on both sides; a later one answers the dialler's.)
 */
static bool rx_hello(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);
	bool legacy = hello_is_legacy(&te->h);
	int fd;

	te->hdr_got = 0;
	if (te->got_hello) {
		__zcr_ep_fail_locked(ep, -EPROTO, "second handshake");
		return false;
	}
	if (ep->state == ZCR_EP_HANDSHAKE && ep->accepted) {
		te->ver = te->h.version;
		te->legacy = legacy;
		if (send_hello(ep))
			return false;
	} else if (ep->state == ZCR_EP_HANDSHAKE && te->redial &&
		   te->h.version == 1 &&
		   (te->ver == 2 || (legacy && !te->legacy))) {
		if (legacy && ep->ctx->secret_len) {
			__zcr_ep_fail_locked(ep, -EACCES, "peer is zcrecv "
					     "0.1, which has no job secret");
			return false;
		}
		fd = dial(te->redial);
		if (fd < 0) {
			__zcr_ep_fail_locked(ep, fd, "cannot dial again in "
					     "wire version 1");
			return false;
		}
		close(te->fd);
		te->fd = fd;
		te->legacy = legacy;
		if (te->ver == 2) {
			/* the address stays ours: nego_end frees redial */
			char *again = te->redial;

			te->redial = NULL;
			te->ver = 1;
			nego_end(te);
			te->redial = again;
			snprintf(ep->errmsg, sizeof(ep->errmsg),
				 "tcp (shm: peer speaks wire version 1 only)");
		}
		if (__zcr_auth_nonce(&te->nonce)) {
			__zcr_ep_fail_locked(ep, -EIO, "no random nonce");
			return false;
		}
		return send_hello(ep) == 0;
	} else if (te->h.version != te->ver) {
		__zcr_ep_fail_locked(ep, -EPROTO, "peer answered in wire "
				     "version %d", te->h.version);
		return false;
	}
	return hello_auth(ep);
}

/*
 * The peer's HELLO is in (the versions agree). Without a job secret the
 * connection opens now. With one, we send our AUTH and open when the
 * peer's AUTH proves it knows the secret too; a peer that will not prove
 * it is refused at once.
 */
static bool hello_auth(struct zcr_ep *ep)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct tcp_ep *te = T(ep);

	if (ep->state != ZCR_EP_HANDSHAKE) {
		__zcr_ep_fail_locked(ep, -EPROTO, "second handshake");
		return false;
	}
	ep->peer_max_msg = te->h.len ? te->h.len : UINT64_MAX;
	ep->comm_ok = (te->h.tag & ZCR_HELLO_COMM) &&
		      (ep->accepted || ctx->comm_ids);
	ep->sync_ok = ep->comm_ok && (te->h.tag & ZCR_HELLO_SYNC);
	te->peer_nonce = te->h.seq;
	te->hello_src = te->h.src;
	if (!ctx->secret_len) {
		if (te->h.tag & ZCR_HELLO_AUTH) {
			__zcr_ep_fail_locked(ep, -EACCES, "peer requires a "
					     "job secret, we have none");
			return false;
		}
		return hello_open(ep);
	}
	if (!(te->h.tag & ZCR_HELLO_AUTH)) {
		__zcr_ep_fail_locked(ep, -EACCES, "peer (claiming rank %d) "
				     "does not know the job secret",
				     te->h.src);
		return false;
	}
	te->got_hello = true;
	return send_auth(ep) == 0;
}

/* The peer's AUTH: its MAC must be the one the job secret gives. */
static bool rx_auth(struct zcr_ep *ep)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct tcp_ep *te = T(ep);
	uint8_t want[ZCR_AUTH_MAC_LEN], got[ZCR_AUTH_MAC_LEN];
	int i;

	te->hdr_got = 0;
	if (!ctx->secret_len || !te->got_hello ||
	    ep->state != ZCR_EP_HANDSHAKE || te->h.src != te->hello_src) {
		ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO, "authentication out of "
				     "protocol");
		return false;
	}
	for (i = 0; i < 8; i++) {
		got[i] = (uint8_t)(te->h.len >> (8 * i));
		got[8 + i] = (uint8_t)(te->h.seq >> (8 * i));
	}
	__zcr_auth_mac(ctx, te->hello_src, ctx->rank, te->nonce,
		       te->peer_nonce, want);
	if (!__zcr_auth_equal(want, got, sizeof(want))) {
		__zcr_ep_fail_locked(ep, -EACCES, "peer (claiming rank %d) "
				     "failed authentication: another job "
				     "secret", te->hello_src);
		return false;
	}
	return hello_open(ep);
}

/* The handshake is through: open, then (version 2) negotiate shm. */
static bool hello_open(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);

	if (__zcr_ep_open_locked(ep, te->hello_src))
		return false;
	if (te->ver < 2) {
		free(te->redial);	/* no old peer to dial again for */
		te->redial = NULL;
		return true;
	}
	/* Version 2: offer shm (or say why not) before any message. */
	te->sn = calloc(1, sizeof(*te->sn));
	if (!te->sn) {
		__zcr_ep_fail_locked(ep, -ENOMEM, "out of memory");
		return false;
	}
	te->hold = true;
	__zcr_shm_offer(te->sn, te->offer);
	return send_ctl(ep, ZCR_WIRE_SHM_OFFER, 0, te->offer,
			ZCR_WIRE_OFFER_LEN) == 0;
}

/*
 * Both SWITCHes are through: move to shm if both said yes, else stay
 * here and let the held sends go. Returns false once ep is no longer ours.
 */
static bool nego_resolve(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);
	struct zcr_shm_nego *sn = te->sn;
	int ret = -EPROTO;

	if ((te->nego & (NEGO_SENT_SWITCH | NEGO_GOT_SWITCH)) !=
	    (NEGO_SENT_SWITCH | NEGO_GOT_SWITCH))
		return true;
	if (!te->my_switch && !te->peer_switch) {
		sn->a.ctl_fd = fcntl(te->fd, F_DUPFD_CLOEXEC, 0);
		te->sn = NULL;
		te->hold = false;
		snprintf(ep->errmsg, sizeof(ep->errmsg), "shm");
		if (sn->a.ctl_fd >= 0)
			ret = __zcr_ep_handoff_locked(ep, &__zcr_transport_shm,
						      &sn->a);
		if (!ret) {
			free(sn);
			return false;	/* te is gone with the old path */
		}
		__zcr_shm_nego_release(sn);
		free(sn);
		snprintf(ep->errmsg, sizeof(ep->errmsg),
			 "tcp (shm: hand-off failed: %s)", strerror(-ret));
	} else if (te->my_switch) {
		snprintf(ep->errmsg, sizeof(ep->errmsg), "tcp (shm: %s)",
			 sn->why);
	} else {
		snprintf(ep->errmsg, sizeof(ep->errmsg),
			 "tcp (shm: the peer could not attach: %s)",
			 strerror(te->peer_switch));
	}
	nego_end(te);
	push(ep);
	return true;
}

/* OFFER (its body follows), GRANT or SWITCH from the peer. */
static bool rx_nego(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);
	int ret;

	te->hdr_got = 0;
	if (te->ver < 2 || ep->state != ZCR_EP_OPEN || !te->sn) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO, "shm negotiation out of "
				     "protocol (type %d)", te->h.type);
		return false;
	}
	switch (te->h.type) {
	case ZCR_WIRE_SHM_OFFER:
		te->have_hdr = true;
		te->ctl_rx = true;
		te->got = 0;
		return true;
	case ZCR_WIRE_SHM_GRANT:
		ret = -EOPNOTSUPP;
		if (!te->h.tag && te->take_ok)
			ret = __zcr_shm_attach_peer(te->sn);
		else if (te->h.tag == EBUSY && !te->sn->why[0])
			/* We were willing; the peer was not (shm.c). */
			snprintf(te->sn->why, sizeof(te->sn->why),
				 "the peer lets another process read it "
				 "(Yama ptrace_scope 1)");
		else if (te->h.tag && !te->sn->why[0])
			snprintf(te->sn->why, sizeof(te->sn->why),
				 "the peer refused shm: %s",
				 strerror(te->h.tag));
		te->my_switch = -ret;
		te->nego |= NEGO_SENT_SWITCH;
		if (send_ctl(ep, ZCR_WIRE_SHM_SWITCH, -ret, NULL, 0))
			return false;
		return nego_resolve(ep);
	default:
		te->peer_switch = te->h.tag;
		te->nego |= NEGO_GOT_SWITCH;
		return nego_resolve(ep);
	}
}

/* The body of the peer's OFFER is in: say whether it may attach. */
static bool rx_offer(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);
	int ret;

	te->ctl_rx = false;
	te->have_hdr = false;
	ret = __zcr_shm_offer_take(te->sn, te->offer);
	te->take_ok = !ret;
	return send_ctl(ep, ZCR_WIRE_SHM_GRANT, -ret, NULL, 0) == 0;
}

/* A header is complete: validate it and ask match where its payload goes. */
static bool rx_header(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);
	const char *why;
	uint64_t mask;
	bool sync;
	int ret;

	ret = __zcr_wire_parse(te->hdr, ep->ctx->max_msg, &te->h, &why);
	if (ret) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, ret, "malformed header: %s", why);
		return false;
	}
	if (te->h.type == ZCR_WIRE_HELLO)
		return rx_hello(ep);
	if (te->h.type == ZCR_WIRE_AUTH)
		return rx_auth(ep);
	if (te->h.type == ZCR_WIRE_ACK && ep->state == ZCR_EP_OPEN &&
	    ep->sync_ok && te->h.src == ep->rank) {
		te->hdr_got = 0;
		__zcr_ep_acked_locked(ep, te->h.seq);
		return ep->state == ZCR_EP_OPEN;
	}
	if (te->h.type != ZCR_WIRE_DATA)
		return rx_nego(ep);
	mask = ep->sync_ok ? ZCR_SEQ_MASK_SYNC : ep->comm_ok ? ZCR_SEQ_MASK :
	       UINT64_MAX;
	if (ep->state != ZCR_EP_OPEN || te->h.src != ep->rank ||
	    (te->h.seq & mask) != ((ep->recv_seq + 1) & mask)) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO,
				     "header out of protocol (src %d, seq %llu)",
				     te->h.src, (unsigned long long)te->h.seq);
		return false;
	}
	ep->recv_seq++;
	te->have_hdr = true;
	te->got = 0;
	sync = ep->sync_ok && (te->h.seq & ZCR_SEQ_SYNC);
	/*
	 * -EAGAIN: stalled; rx_target() reads nothing until it lands. Never
	 * deferred (match.h): a payload left in the socket stops the
	 * sender, and the network's time would no longer overlap the
	 * application's. Across two emulated nodes at 1 Gbit/s, IS under
	 * the copy policy took 1.13x stock Open MPI's time deferred (0.53 s
	 * more waiting per rank), where staged and copied it is level.
	 */
	__zcr_match_arrive_sync_locked(ep->ctx, &ep->rx, ep->comm_ok ?
				       (uint32_t)(te->h.seq >> 32) : 0,
				       te->h.src, te->h.tag, te->h.len,
				       sync ? ep->recv_seq : 0);
	return true;
}

static bool rx_done(struct zcr_ep *ep, long r)
{
	struct tcp_ep *te = T(ep);

	if (ep->state == ZCR_EP_CLOSED)
		return false;
	if (r == -EAGAIN || r == -EWOULDBLOCK || r == -EINTR)
		return false;
	if (r == 0) {
		__zcr_ep_fail_locked(ep, -ECONNRESET,
				     te->have_hdr || te->hdr_got ?
				     "peer closed the connection mid-message" :
				     "peer closed the connection");
		return false;
	}
	if (r < 0) {
		__zcr_ep_fail_locked(ep, (int)r, "receive failed");
		return false;
	}
	te->rx_total += (uint64_t)r;
	if (!te->have_hdr) {
		te->hdr_got += (size_t)r;
		if (te->hdr_got < ZCR_WIRE_HDR_LEN)
			return true;
		return rx_header(ep);
	}
	te->got += (uint64_t)r;
	if (te->ctl_rx)
		return te->got < ZCR_WIRE_OFFER_LEN || rx_offer(ep);
	if (te->got == te->h.len)
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
		ssize_t r = recv(T(ep)->fd, p, len, 0);

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
static int read_batch(struct zcr_ctx *ctx, struct io_uring *ring)
{
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
		io_uring_prep_recv(sqe, T(ep)->fd, p, len, MSG_DONTWAIT);
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

/*
 * The peer closed or reset the connection, and we learn it by writing:
 * our queued sends fail (a message cut short is the peer's to discard),
 * but the bytes the peer sent before are still in the socket; reading
 * goes on, and its end of stream (or the reset, after those bytes) closes
 * the endpoint as usual.
 */
static void write_dead(struct zcr_ep *ep, int err)
{
	T(ep)->wdead = err;
	__zcr_ep_fail_sends_locked(ep, err);
}

/* Write what the socket takes of ep's queue; returns messages completed. */
static int push(struct zcr_ep *ep)
{
	struct zcr_ctx *ctx = ep->ctx;
	int n = 0;

	if (T(ep)->hold)
		return 0;	/* negotiating: the path is not chosen yet */
	/* Held until the handshake is through (the core renumbers then). */
	while (ep->state == ZCR_EP_OPEN && !zcr_list_empty(&ep->sendq)) {
		struct zcr_req *r = zcr_container_of(ep->sendq.next,
						     struct zcr_req, link);
		struct iovec iov[2];
		struct msghdr mh;
		int niov = 0;
		ssize_t w;

		if (!r->sent)
			encode_data(ep, r);
		if (r->sent < ZCR_WIRE_HDR_LEN) {
			iov[niov].iov_base = r->tx + r->sent;
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
		w = sendmsg(T(ep)->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK ||
			    errno == EINTR)
				break;
			if (errno == EPIPE || errno == ECONNRESET)
				write_dead(ep, -ECONNRESET);
			else
				__zcr_ep_fail_locked(ep, -errno, "send failed");
			break;
		}
		r->sent += (uint64_t)w;
		if (r->sent == r->len + ZCR_WIRE_HDR_LEN) {
			zcr_list_del(&r->link);
			if (r->kind == ZCR_REQ_ACK) {
				free(r);
				continue;
			}
			ctx->st.msgs_sent++;
			ctx->st.bytes_sent += r->len;
			if (r->sync)	/* done when the peer matched it */
				zcr_list_add_tail(&r->link, &ep->ackq);
			else
				__zcr_req_complete_locked(r, 0);
			n++;
		}
	}
	return n;
}

static void encode_data(struct zcr_ep *ep, struct zcr_req *r)
{
	struct zcr_wire_hdr h = {
		.magic = ZCR_WIRE_MAGIC,
		.version = ZCR_WIRE_VERSION,
		.type = ZCR_WIRE_DATA,
		.hdr_len = ZCR_WIRE_HDR_LEN,
		.src = ep->ctx->rank,
		.tag = r->st.tag,
		.len = r->len,
		.seq = ep->comm_ok ? ((uint64_t)r->comm << 32) |
				     (r->seq & ZCR_SEQ_MASK) : r->seq,
	};

	if (ep->sync_ok)
		h.seq = (h.seq & ~ZCR_SEQ_MASK) | (r->seq & ZCR_SEQ_MASK_SYNC) |
			(r->sync ? ZCR_SEQ_SYNC : 0);
	/* An ACK: the number of a message matched. */
	if (r->kind == ZCR_REQ_ACK) {
		h.type = ZCR_WIRE_ACK;
		h.tag = 0;
		h.seq = r->seq;
	}

	__zcr_wire_encode(&h, r->tx);
}

static int tcp_send(struct zcr_ep *ep, struct zcr_req *r)
{
	if (T(ep)->wdead)
		return T(ep)->wdead;
	zcr_list_add_tail(&r->link, &ep->sendq);
	/* Start writing now: a small message usually leaves at once. */
	push(ep);
	return 0;
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
	    (uint64_t)avail >= T(ep)->h.len - T(ep)->got) {
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
 * Out of descriptors (or memory), accept() fails and leaves the connection
 * queued, so the listening socket stays readable and every poll would
 * return at once: stop accepting, and polling the listener, for a while.
 */
#define ZCR_ACCEPT_BACKOFF_NS	(100 * 1000000ULL)
/*
 * Without a poll that saw the listening socket readable, look at it at
 * most this often: progress runs once per message (more when spinning),
 * and a look is a system call, dear under virtualisation. A dialler then
 * waits at most this long for its accept when the acceptor only ever
 * calls progress with a zero timeout.
 */
#define ZCR_ACCEPT_POLL_NS	(1000000ULL)

static int accept_all(struct zcr_ctx *ctx, struct tcp_ctx *tc)
{
	unsigned int live = ~0u;
	int n = 0, fd;
	void *te;

	if (tc->listen_fd < 0)
		return 0;
	if (tc->accept_resume) {
		if (zcr_now_ns() < tc->accept_resume)
			return 0;
		tc->accept_resume = 0;
	}
	if (!tc->listen_ready) {
		struct pollfd p = { .fd = tc->listen_fd, .events = POLLIN };
		uint64_t now = zcr_now_ns();

		if (now < tc->accept_next)
			return 0;
		tc->accept_next = now + ZCR_ACCEPT_POLL_NS;
		/*
		 * accept() allocates a socket and a file before it finds the
		 * queue empty (5-30 us here); poll() only looks (0.5 us).
		 */
		if (poll(&p, 1, 0) <= 0)
			return 0;
	}
	tc->listen_ready = false;
	while ((fd = accept4(tc->listen_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		if (live == ~0u)
			live = __zcr_ep_live_locked(ctx);
		if (live >= ctx->max_conns) {
			/* Closed at once: the peer sees it, nothing is held. */
			if (!ctx->quiet && !ctx->conns_warned)
				fprintf(stderr, "zcrecv: rank %d: %u "
					"connections (max_conns): closing new "
					"ones\n", ctx->rank, ctx->max_conns);
			ctx->conns_warned = true;
			close(fd);
			n++;
			continue;
		}
		live++;
		tune(fd);
		if (tcp_ep_alloc(tc, fd, &te))
			close(fd);
		else
			__zcr_ep_new_locked(ctx, &__zcr_transport_tcp, te,
					    true);
		n++;
	}
	if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
	    errno == ENOMEM)
		tc->accept_resume = zcr_now_ns() + ZCR_ACCEPT_BACKOFF_NS;
	return n;
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
	tc->listen_fd = -1;
	tc->ring = ring_init(ctx);
	tc->spin_ns = ctx->env.v[ZCR_ENV_TCP_SPIN_US].u * 1000;
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
	if (tc->listen_fd >= 0)
		close(tc->listen_fd);
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
	unsigned int n = 0;

	if (tc->listen_fd >= 0 && tc->accept_resume) {
		if (tc->accept_resume < *deadline)
			*deadline = tc->accept_resume;	/* backing off */
	} else if (tc->listen_fd >= 0 && n < max) {
		pfd[n].fd = tc->listen_fd;
		pfd[n++].events = POLLIN;
	}
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
		pfd[n].fd = T(ep)->fd;
		if (ep->rx.state != ZCR_RX_STALLED)
			pfd[n].events = POLLIN;
		else
			pfd[n].events = POLLRDHUP;
		if (!zcr_list_empty(&ep->sendq) && !T(ep)->hold &&
		    ep->state == ZCR_EP_OPEN)
			pfd[n].events |= POLLOUT;
		if (T(ep)->rx_deadline && T(ep)->rx_deadline < *deadline)
			*deadline = T(ep)->rx_deadline;
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
 * A readable listening socket is accepted from at once; only paused
 * connections are polled without POLLIN.
 */
static void tcp_poll_done(struct zcr_ctx *ctx, void *priv,
			  const struct pollfd *pfd, unsigned int n)
{
	struct tcp_ctx *tc = priv;
	unsigned int i;

	for (i = 0; i < n; i++)
		if (pfd[i].fd == tc->listen_fd && tc->listen_fd >= 0) {
			if (pfd[i].revents)
				tc->listen_ready = true;
		} else if ((pfd[i].revents & (POLLERR | POLLHUP | POLLRDHUP)) &&
		    !(pfd[i].events & POLLIN))
			paused_error(ctx, pfd[i].fd);
}

/*
 * A message in flight on an open connection (a header or a payload partly
 * read, not paused by us) must bring ZCR_PROGRESS_QUANTUM bytes or its
 * end within the progress timeout: a peer trickling its payload, or gone
 * silent mid-message, would otherwise hold its connection, its landing
 * and a receive for ever. Returns 1 if ep was closed.
 */
static int check_progress(struct zcr_ep *ep, uint64_t now)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct tcp_ep *te = T(ep);
	bool busy;

	busy = ep->state == ZCR_EP_OPEN &&
	       ((!te->have_hdr && te->hdr_got) ||
		(te->have_hdr && ep->rx.state == ZCR_RX_LANDING));
	if (!busy) {
		te->rx_deadline = 0;
		return 0;
	}
	if (!te->rx_deadline ||
	    te->rx_total - te->rx_mark >= ZCR_PROGRESS_QUANTUM) {
		te->rx_deadline = now + ctx->progress_timeout_ns;
		te->rx_mark = te->rx_total;
		return 0;
	}
	if (now < te->rx_deadline)
		return 0;
	__zcr_ep_fail_locked(ep, -ETIMEDOUT, "no progress mid-message for "
			     "%llu ms", (unsigned long long)
			     (ctx->progress_timeout_ns / 1000000));
	return 1;
}

#define ZCR_PAUSED_LOOK_NS	(10 * 1000000ULL)

static int tcp_progress(struct zcr_ctx *ctx, void *priv)
{
	struct tcp_ctx *tc = priv;
	struct zcr_list *pos, *tmp;
	int n, r = -1;
	uint64_t now;
	bool look;

	n = accept_all(ctx, tc);
	if (!__atomic_load_n(&tc->neps, __ATOMIC_RELAXED))
		return n;
	zcr_list_for_each_safe(pos, tmp, &ctx->eps) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (is_tcp(ep) && ep->state != ZCR_EP_CLOSED)
			n += push(ep);
	}
#ifdef ZCR_HAVE_LIBURING
	if (tc->ring)
		r = read_batch(ctx, tc->ring);
#endif
	if (r >= 0) {
		n += r;
	} else {
		zcr_list_for_each_safe(pos, tmp, &ctx->eps)
			n += read_ep(zcr_container_of(pos, struct zcr_ep,
						      link));
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
	.start = tcp_start,
	.poll_max = tcp_poll_max,
	.poll_fill = tcp_poll_fill,
	.poll_done = tcp_poll_done,
	.progress = tcp_progress,
	.send = tcp_send,
	.ep_close = tcp_ep_close,
	.ep_free = tcp_ep_free,
};
