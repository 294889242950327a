// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * sock.c - the socket rules of every transport that sets up over TCP,
 * written once: address parsing and resolution, the listening rule, the
 * listener and its accept pacing, dialling, naming the peer. tcp/ carries
 * its messages on these sockets, verbs/ its set-up; shm/ takes over
 * connections TCP made. Where the transports used to differ, the rule
 * kept is TCP's, the stricter one: a port above 65535 is refused rather
 * than wrapped, resolver errors keep their meaning, a listener without a
 * job secret stays on loopback, and a process out of descriptors backs
 * off instead of polling a listener it cannot accept from.
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
#include <sys/socket.h>
#include <unistd.h>

#include "base/ctx.h"
#include "transport/sock.h"
#include "transport/transport.h"

/* "HOST:PORT", "[IPV6]:PORT" or ":PORT" (empty host) into host and port. */
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

int __zcr_sock_resolve(const char *hostport, bool passive,
		       struct addrinfo **res)
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

bool __zcr_sock_is_loopback(const struct sockaddr *sa)
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

int __zcr_sock_listen_rule(struct zcr_ctx *ctx, struct sockaddr *sa)
{
	if (ctx->secret_len || __zcr_sock_is_loopback(sa))
		return 0;
	if (sa->sa_family == AF_INET &&
	    ((struct sockaddr_in *)sa)->sin_addr.s_addr == htonl(INADDR_ANY)) {
		((struct sockaddr_in *)sa)->sin_addr.s_addr =
			htonl(INADDR_LOOPBACK);
	} else if (sa->sa_family == AF_INET6 &&
		   IN6_IS_ADDR_UNSPECIFIED(
			&((struct sockaddr_in6 *)sa)->sin6_addr)) {
		((struct sockaddr_in6 *)sa)->sin6_addr = in6addr_loopback;
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

void __zcr_listener_init(struct zcr_listener *l)
{
	memset(l, 0, sizeof(*l));
	l->fd = -1;
}

void __zcr_listener_close(struct zcr_listener *l)
{
	if (l->fd >= 0)
		close(l->fd);
	__zcr_listener_init(l);
}

int __zcr_sock_listen(struct zcr_ctx *ctx, struct zcr_listener *l,
		      const char *hostport)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct addrinfo *res;
	int fd, one = 1, ret;

	ret = __zcr_sock_resolve(hostport, true, &res);
	if (ret)
		return ret;
	pthread_mutex_lock(&ctx->lock);
	ret = __zcr_sock_listen_rule(ctx, res->ai_addr);
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
	if (l->fd >= 0) {
		close(fd);
		ret = -EBUSY;
	} else {
		__zcr_listener_init(l);
		l->fd = fd;
	}
	pthread_mutex_unlock(&ctx->lock);
out:
	freeaddrinfo(res);
	return ret;
}

unsigned int __zcr_listener_poll_fill(struct zcr_listener *l,
				      struct pollfd *pfd, unsigned int max,
				      uint64_t *deadline)
{
	if (l->fd < 0)
		return 0;
	if (l->resume) {
		if (l->resume < *deadline)
			*deadline = l->resume;	/* backing off */
		return 0;
	}
	if (!max)
		return 0;
	pfd->fd = l->fd;
	pfd->events = POLLIN;
	return 1;
}

void __zcr_listener_poll_done(struct zcr_listener *l,
			      const struct pollfd *pfd, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n && l->fd >= 0; i++)
		if (pfd[i].fd == l->fd && pfd[i].revents)
			l->ready = true;
}

void __zcr_sock_tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int __zcr_listener_accept(struct zcr_ctx *ctx, struct zcr_listener *l,
			  const struct zcr_transport_ops *ops,
			  zcr_accept_fn make, void *arg)
{
	unsigned int live = ~0u;
	void *ep_priv;
	int n = 0, fd, ret;

	if (l->fd < 0)
		return 0;
	if (l->resume) {
		if (zcr_now_ns() < l->resume)
			return 0;
		l->resume = 0;
	}
	if (!l->ready) {
		struct pollfd p = { .fd = l->fd, .events = POLLIN };
		uint64_t now = zcr_coarse_ns();

		if (now < l->next)
			return 0;
		l->next = now + ZCR_ACCEPT_POLL_NS;
		/*
		 * accept() allocates a socket and a file before it finds the
		 * queue empty (5-30 us); poll() only looks (0.5 us).
		 */
		if (poll(&p, 1, 0) <= 0)
			return 0;
	}
	l->ready = false;
	while ((fd = accept4(l->fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		if (live == ~0u)
			live = __zcr_ep_live_locked(ctx);
		n++;
		if (live >= ctx->max_conns) {
			/* Closed at once: the peer sees it, nothing is held. */
			if (!ctx->quiet && !ctx->conns_warned)
				fprintf(stderr, "zcrecv: rank %d: %u "
					"connections (max_conns): closing new "
					"ones\n", ctx->rank, ctx->max_conns);
			ctx->conns_warned = true;
			close(fd);
			continue;
		}
		live++;
		__zcr_sock_tune(fd);
		ret = make(ctx, arg, fd, &ep_priv);
		if (ret) {
			if (!ctx->quiet)
				fprintf(stderr, "zcrecv: rank %d: %s: cannot "
					"set up a connection: %s\n", ctx->rank,
					ops->name, strerror(-ret));
			close(fd);
			continue;
		}
		__zcr_ep_new_locked(ctx, ops, ep_priv, true);
	}
	if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
	    errno == ENOMEM)
		l->resume = zcr_now_ns() + ZCR_ACCEPT_BACKOFF_NS;
	return n;
}

int __zcr_sock_dial(const char *hostport)
{
	struct addrinfo *res, *ai;
	int fd = -1, ret;

	ret = __zcr_sock_resolve(hostport, false, &res);
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
	__zcr_sock_tune(fd);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

void __zcr_sock_peer_name(struct zcr_ep *ep, int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[48], serv[16];

	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 &&
	    getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv,
			sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) == 0)
		snprintf(ep->peer, sizeof(ep->peer), "%s:%s", host, serv);
	else
		snprintf(ep->peer, sizeof(ep->peer), "fd %d", fd);
}
