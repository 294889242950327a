// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_sock.c - the socket rules every transport shares
 * (lib/transport/sock.c): address parsing, the listening rule (no job
 * secret: loopback only, the same refusal whatever the transport), and
 * accepting with back-off when the process is out of descriptors. Host
 * only: nothing leaves loopback (a refused address is refused before any
 * socket is made).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "zt.h"
#include "zcrecv.h"
#include "base/ctx.h"
#include "transport/sock.h"
#include "transport/transport.h"

static struct zcr_ctx *ctx_new(const char *secret, int quiet)
{
	struct zcr_ctx_attr a = { .rank = 0, .quiet = quiet,
				  .job_secret = secret };
	struct zcr_ctx *c = NULL;

	ZT_EXPECT_EQ(zcr_ctx_create_sized(&a, sizeof(a), &c), 0);
	return c;
}

ZT_TEST(resolve_refuses_malformed_addresses)
{
	struct addrinfo *res;

	ZT_EXPECT_EQ(__zcr_sock_resolve("127.0.0.1", false, &res), -EINVAL);
	ZT_EXPECT_EQ(__zcr_sock_resolve("127.0.0.1:", false, &res), -EINVAL);
	/* getaddrinfo() would take it as port 99999 % 65536. */
	ZT_EXPECT_EQ(__zcr_sock_resolve("127.0.0.1:99999", false, &res),
		     -EINVAL);
	ZT_EXPECT_EQ(__zcr_sock_resolve("[::1:7000", false, &res), -EINVAL);
	ZT_EXPECT_EQ(__zcr_sock_resolve("[::1]:7000", true, &res), 0);
	ZT_EXPECT_EQ(res->ai_family, AF_INET6);
	freeaddrinfo(res);
	ZT_EXPECT_EQ(__zcr_sock_resolve(":7000", true, &res), 0);
	freeaddrinfo(res);
}

/* The rule on addresses: wildcards become loopback, others are refused. */
ZT_TEST(listen_rule_keeps_a_context_without_secret_on_loopback)
{
	struct zcr_ctx *c = ctx_new(NULL, 1), *s = ctx_new("sock-secret", 1);
	struct sockaddr_in in = { .sin_family = AF_INET };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };

	in.sin_addr.s_addr = htonl(INADDR_ANY);
	ZT_EXPECT_EQ(__zcr_sock_listen_rule(c, (struct sockaddr *)&in), 0);
	ZT_EXPECT_EQ(ntohl(in.sin_addr.s_addr), INADDR_LOOPBACK);
	in6.sin6_addr = in6addr_any;
	ZT_EXPECT_EQ(__zcr_sock_listen_rule(c, (struct sockaddr *)&in6), 0);
	ZT_ASSERT(IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr));
	in.sin_addr.s_addr = htonl(0xc0000201);		/* 192.0.2.1 */
	ZT_EXPECT_EQ(__zcr_sock_listen_rule(c, (struct sockaddr *)&in),
		     -EACCES);
	in.sin_addr.s_addr = htonl(0x7f000002);		/* 127.0.0.2 */
	ZT_EXPECT_EQ(__zcr_sock_listen_rule(c, (struct sockaddr *)&in), 0);
	/* With a job secret every address is the caller's choice. */
	in.sin_addr.s_addr = htonl(0xc0000201);
	ZT_EXPECT_EQ(__zcr_sock_listen_rule(s, (struct sockaddr *)&in), 0);
	in.sin_addr.s_addr = htonl(INADDR_ANY);
	ZT_EXPECT_EQ(__zcr_sock_listen_rule(s, (struct sockaddr *)&in), 0);
	ZT_EXPECT_EQ(in.sin_addr.s_addr, htonl(INADDR_ANY));
	zcr_ctx_destroy(c);
	zcr_ctx_destroy(s);
}

/* Through the API, over TCP: refused, and the wildcard is loopback. */
ZT_TEST(tcp_listener_without_secret_is_refused_off_loopback)
{
	struct zcr_ctx *c = ctx_new(NULL, 1);
	struct sockaddr_in to = { .sin_family = AF_INET };
	int port, fd;

	ZT_EXPECT_EQ(zcr_ctx_listen(c, "tcp://192.0.2.1:0"), -EACCES);
	ZT_EXPECT_EQ(zcr_ctx_listen(c, "192.0.2.1:0"), -EACCES);
	port = zcr_ctx_listen(c, "tcp://0.0.0.0:0");
	ZT_ASSERT_MSG(port > 0, "wildcard listen: %d", port);
	/* It is reachable on loopback ... */
	to.sin_port = htons((uint16_t)port);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ZT_EXPECT_EQ(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	close(fd);
	/* ... and only there: 127.0.0.2 is loopback too, but not bound. */
	to.sin_addr.s_addr = htonl(0x7f000002);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ZT_EXPECT_EQ(connect(fd, (struct sockaddr *)&to, sizeof(to)), -1);
	ZT_EXPECT_EQ(errno, ECONNREFUSED);
	close(fd);
	zcr_ctx_destroy(c);
}

/* The same refusal, word for word, from every transport that listens. */
ZT_TEST(every_transport_refuses_alike)
{
	static const char *const addrs[] = { "tcp://192.0.2.1:7000",
					     "verbs://192.0.2.1:7000" };
	char msg[2][256];
	int i, saved = dup(2), p[2];
	ssize_t n;

	for (i = 0; i < 2; i++) {
		struct zcr_ctx *c = ctx_new(NULL, 0);

		ZT_ASSERT(pipe(p) == 0);
		fflush(stderr);
		dup2(p[1], 2);
		ZT_EXPECT_EQ(zcr_ctx_listen(c, addrs[i]), -EACCES);
		fflush(stderr);
		dup2(saved, 2);
		close(p[1]);
		n = read(p[0], msg[i], sizeof(msg[i]) - 1);
		close(p[0]);
		msg[i][n > 0 ? n : 0] = 0;
		zcr_ctx_destroy(c);
	}
	close(saved);
	ZT_ASSERT_MSG(strstr(msg[0], "non-loopback address needs a job "
			     "secret"), "tcp said: %s", msg[0]);
	ZT_ASSERT_MSG(!strcmp(msg[0], msg[1]), "tcp said: %s verbs said: %s",
		      msg[0], msg[1]);
}

static int made_calls;

/* A zcr_accept_fn that counts and makes nothing. */
static int count_make(struct zcr_ctx *ctx, void *arg, int fd, void **ep_priv)
{
	(void)ctx;
	(void)arg;
	(void)fd;
	(void)ep_priv;
	made_calls++;
	return -ECANCELED;
}

/*
 * Out of descriptors, accept() fails with EMFILE and leaves the
 * connection queued: the listener stops accepting and is not polled for
 * ZCR_ACCEPT_BACKOFF_NS, instead of waking every poll at once.
 */
ZT_TEST(accept_backs_off_when_out_of_descriptors)
{
	struct zcr_ctx *c = ctx_new(NULL, 1);
	struct sockaddr_in to = { .sin_family = AF_INET };
	struct zcr_listener l;
	struct rlimit old, low;
	struct pollfd pfd[2];
	uint64_t deadline = UINT64_MAX, t0;
	int port, fd, next;

	__zcr_listener_init(&l);
	port = __zcr_sock_listen(c, &l, "127.0.0.1:0");
	ZT_ASSERT_MSG(port > 0, "listen: %d", port);
	to.sin_port = htons((uint16_t)port);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ZT_EXPECT_EQ(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);

	/* No descriptor left: the lowest free one is the limit. */
	next = dup(0);
	close(next);
	ZT_ASSERT(getrlimit(RLIMIT_NOFILE, &old) == 0);
	low = old;
	low.rlim_cur = (rlim_t)next;
	ZT_ASSERT(setrlimit(RLIMIT_NOFILE, &low) == 0);

	pthread_mutex_lock(&c->lock);
	t0 = zcr_now_ns();
	l.ready = true;
	ZT_EXPECT_EQ(__zcr_listener_accept(c, &l, &__zcr_transport_tcp,
					   count_make, NULL), 0);
	ZT_ASSERT_MSG(l.resume >= t0 + ZCR_ACCEPT_BACKOFF_NS,
		      "no back-off after EMFILE (resume %llu)",
		      (unsigned long long)l.resume);
	/* Not polled while backing off: the deadline says when to retry. */
	ZT_EXPECT_EQ(__zcr_listener_poll_fill(&l, pfd, 2, &deadline), 0);
	ZT_EXPECT_EQ(deadline, l.resume);

	/* Descriptors again, but the back-off holds until it ends. */
	ZT_ASSERT(setrlimit(RLIMIT_NOFILE, &old) == 0);
	l.ready = true;
	ZT_EXPECT_EQ(__zcr_listener_accept(c, &l, &__zcr_transport_tcp,
					   count_make, NULL), 0);
	ZT_EXPECT_EQ(made_calls, 0);
	l.resume = 1;		/* over */
	ZT_EXPECT_EQ(__zcr_listener_accept(c, &l, &__zcr_transport_tcp,
					   count_make, NULL), 1);
	ZT_EXPECT_EQ(made_calls, 1);
	ZT_EXPECT_EQ(l.resume, 0);
	ZT_EXPECT_EQ(__zcr_listener_poll_fill(&l, pfd, 2, &deadline), 1);
	ZT_EXPECT_EQ(pfd[0].fd, l.fd);
	__zcr_listener_close(&l);
	pthread_mutex_unlock(&c->lock);
	close(fd);
	zcr_ctx_destroy(c);
}

/* A listener is looked at once per ZCR_ACCEPT_POLL_NS without a hint. */
ZT_TEST(accept_looks_at_an_idle_listener_sparingly)
{
	struct zcr_ctx *c = ctx_new(NULL, 1);
	struct sockaddr_in to = { .sin_family = AF_INET };
	struct zcr_listener l;
	int port, fd;

	__zcr_listener_init(&l);
	port = __zcr_sock_listen(c, &l, "127.0.0.1:0");
	ZT_ASSERT(port > 0);
	ZT_EXPECT_EQ(__zcr_sock_listen(c, &l, "127.0.0.1:0"), -EBUSY);
	pthread_mutex_lock(&c->lock);
	ZT_EXPECT_EQ(__zcr_listener_accept(c, &l, &__zcr_transport_tcp,
					   count_make, NULL), 0);
	ZT_ASSERT(l.next > zcr_coarse_ns());
	to.sin_port = htons((uint16_t)port);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ZT_EXPECT_EQ(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0);
	made_calls = 0;
	l.next = UINT64_MAX;	/* not yet time to look */
	ZT_EXPECT_EQ(__zcr_listener_accept(c, &l, &__zcr_transport_tcp,
					   count_make, NULL), 0);
	/* A poll that saw it readable: at once. */
	l.ready = true;
	ZT_EXPECT_EQ(__zcr_listener_accept(c, &l, &__zcr_transport_tcp,
					   count_make, NULL), 1);
	ZT_EXPECT_EQ(made_calls, 1);
	__zcr_listener_close(&l);
	pthread_mutex_unlock(&c->lock);
	close(fd);
	zcr_ctx_destroy(c);
}
