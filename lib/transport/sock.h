/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sock.h - the socket rules every transport that sets up over TCP shares
 * (lib/transport/sock.c): addresses and their resolution, the listening
 * rule (no job secret: loopback only), accepting with back-off, dialling,
 * naming the peer. The TCP transport carries its messages on these
 * sockets; the verbs transport uses one per connection for its set-up.
 * Documentation/design.md, "Shared transport code".
 */
#ifndef ZCR_SOCK_H
#define ZCR_SOCK_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct addrinfo;
struct zcr_ctx;
struct zcr_ep;
struct zcr_transport_ops;

/**
 * struct zcr_listener - a listening socket and its accept pacing
 * @fd:		the listening socket, or -1
 * @resume:	no accept() before this monotonic ns time (out of
 *		descriptors or memory); 0: not backing off
 * @next:	without a poll that saw @fd readable, the next look at it
 * @ready:	poll saw a connection waiting: accept at once
 *
 * Changed under ctx->lock only.
 */
struct zcr_listener {
	int fd;
	uint64_t resume;
	uint64_t next;
	bool ready;
};

/*
 * Out of descriptors (or memory), accept() fails and leaves the connection
 * queued, so the listening socket stays readable and every poll would
 * return at once: stop accepting, and polling the listener, this long.
 */
#define ZCR_ACCEPT_BACKOFF_NS	(100 * 1000000ULL)
/*
 * Without a poll that saw the listening socket readable, look at it at
 * most this often: progress runs once per message (more when spinning),
 * and a look is a system call, dear under virtualisation. A dialler then
 * waits at most this long (plus a timer tick: the coarse clock tells
 * when, as a precise read at every pass cost a tenth of a small shm
 * round trip's work) for its accept when the acceptor only ever calls
 * progress with a zero timeout. (A thread that sleeps in poll(2) hears
 * the listener at once.)
 */
#define ZCR_ACCEPT_POLL_NS	(1000000ULL)

/**
 * __zcr_sock_resolve() - "HOST:PORT", "[IPV6]:PORT" or ":PORT" to addresses
 * @hostport:	the address without its scheme
 * @passive:	for bind(2): an empty host is the wildcard address
 * @res:	out: the getaddrinfo(3) list, for freeaddrinfo(3)
 *
 * Return: 0, -EINVAL (malformed, or a port above 65535), -ENXIO (no such
 * host), -EAGAIN (the resolver failed, for now), -ENOMEM, -EHOSTUNREACH.
 */
int __zcr_sock_resolve(const char *hostport, bool passive,
		       struct addrinfo **res);

/* Is sa a loopback address (127.0.0.0/8, ::1, ::ffff:127.x.x.x)? */
bool __zcr_sock_is_loopback(const struct sockaddr *sa);

/**
 * __zcr_sock_listen_rule() - the listening rule, applied to one address
 * @ctx:	the context (ctx->lock held)
 * @sa:		the address to bind, rewritten in place
 *
 * Without a job secret any local process can claim a rank, so a listener
 * stays on loopback: an empty or wildcard host becomes loopback (said
 * once per context), another address is refused.
 *
 * Return: 0, or -EACCES with the reason printed (unless ctx->quiet).
 */
int __zcr_sock_listen_rule(struct zcr_ctx *ctx, struct sockaddr *sa);

/**
 * __zcr_sock_listen() - listen on @hostport under the listening rule
 * @ctx:	the context; called unlocked (takes ctx->lock)
 * @l:		the transport's listener, set under ctx->lock
 * @hostport:	the address without its scheme
 *
 * Return: the port listened on, or -errno: -EBUSY if @l listens already,
 * -EACCES (the rule), an error of __zcr_sock_resolve(), or of socket(2),
 * bind(2) or listen(2).
 */
int __zcr_sock_listen(struct zcr_ctx *ctx, struct zcr_listener *l,
		      const char *hostport);

void __zcr_listener_init(struct zcr_listener *l);
void __zcr_listener_close(struct zcr_listener *l);

/*
 * Fill (at most max) pollfd entries for the listener: none while it backs
 * off, when *deadline is lowered to the end of the back-off. Returns the
 * entries used.
 */
unsigned int __zcr_listener_poll_fill(struct zcr_listener *l,
				      struct pollfd *pfd, unsigned int max,
				      uint64_t *deadline);
/* The entries poll_fill gave, with revents: is the listener readable? */
void __zcr_listener_poll_done(struct zcr_listener *l,
			      const struct pollfd *pfd, unsigned int n);

/*
 * Make a transport's endpoint state for the accepted socket fd (ctx->lock
 * held): 0 with *ep_priv set, or -errno (the caller closes fd).
 */
typedef int (*zcr_accept_fn)(struct zcr_ctx *ctx, void *arg, int fd,
			     void **ep_priv);

/**
 * __zcr_listener_accept() - accept what waits on @l, paced and bounded
 * @ctx:	the context (ctx->lock held)
 * @l:		the listener
 * @ops:	the transport the new endpoints belong to
 * @make:	makes each new endpoint's transport state
 * @arg:	for @make
 *
 * Looks at the listener only when poll said it is readable, or once per
 * ZCR_ACCEPT_POLL_NS; past ctx->max_conns live endpoints a new connection
 * is closed at once (said once per context); out of descriptors or
 * memory, stops for ZCR_ACCEPT_BACKOFF_NS. Every accepted socket is
 * nonblocking, close-on-exec and TCP_NODELAY.
 *
 * Return: connections accepted or closed.
 */
int __zcr_listener_accept(struct zcr_ctx *ctx, struct zcr_listener *l,
			  const struct zcr_transport_ops *ops,
			  zcr_accept_fn make, void *arg);

/*
 * Dial hostport (each address in turn, blocking), then make the socket
 * nonblocking and TCP_NODELAY. Returns the descriptor or -errno.
 */
int __zcr_sock_dial(const char *hostport);

/* TCP_NODELAY: handshakes and small messages leave at once. */
void __zcr_sock_tune(int fd);

/* Name ep's peer after fd's remote address ("HOST:PORT", or "fd N"). */
void __zcr_sock_peer_name(struct zcr_ep *ep, int fd);

#endif /* ZCR_SOCK_H */
