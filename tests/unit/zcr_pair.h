/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * zcr_pair.h - helpers for the receive-path unit tests: contexts connected
 * over loopback (127.0.0.1, ephemeral ports), a pump that drives progress
 * on several contexts from one thread (so early arrival is deterministic),
 * raw sockets that speak (or break) the wire protocol, and payload
 * patterns that make every byte checkable.
 */
#ifndef ZCR_PAIR_H
#define ZCR_PAIR_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "zcrecv.h"
#include "zt.h"

#define PAIR_MAX 16

/*
 * The transport pair_open() connects over: a test that includes this
 * after defining PAIR_SCHEME "verbs://" runs over verbs, and
 * PAIR_BEFORE_OPEN() may skip it where there is no device.
 */
#ifndef PAIR_SCHEME
#define PAIR_SCHEME ""
#endif
#ifndef PAIR_BEFORE_OPEN
#define PAIR_BEFORE_OPEN() do { } while (0)
#endif

struct pair {
	struct zcr_ctx *c[PAIR_MAX];	/* c[0] listens; c[i] is rank i */
	struct zcr_ep *to0[PAIR_MAX];	/* c[i]'s endpoint to rank 0 */
	struct zcr_ep *from[PAIR_MAX];	/* c[0]'s endpoint to rank i */
	int n;
	int port;
	char addr[32];
};

static inline double pair_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Progress every context once (no waiting). */
static inline void pair_pump(struct pair *p)
{
	int i;

	for (i = 0; i < p->n; i++)
		ZT_ASSERT(zcr_progress(p->c[i], 0) >= 0);
}

/* Pump until cond holds, at most 20 s. */
#define PAIR_PUMP_UNTIL(p, cond)					\
	do {								\
		double zt_t0 = pair_now();				\
		while (!(cond)) {					\
			pair_pump(p);					\
			ZT_ASSERT_MSG(pair_now() - zt_t0 < 20,		\
				      "timeout waiting for %s", #cond);	\
		}							\
	} while (0)

/* What carries ep: "shm", "" (TCP), or why not shm (zcr_ep_error()). */
static inline const char *pair_tp(struct zcr_ep *ep)
{
	const char *msg = NULL;

	zcr_ep_error(ep, &msg);
	return msg ? msg : "";
}

/* Mappings of shm transport segments in this process. */
static inline int pair_shm_maps(void)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	ZT_ASSERT(f);
	while (fgets(line, sizeof(line), f))
		n += !!strstr(line, "zcrecv-shm");
	fclose(f);
	return n;
}

static inline struct zcr_stats pair_stats(struct zcr_ctx *c)
{
	struct zcr_stats st;

	ZT_EXPECT_EQ(zcr_ctx_stats_sized(c, &st, sizeof(st)), 0);
	return st;
}

/* n contexts, rank 0 listening, none connected. attr may be NULL. */
static inline void pair_create(struct pair *p, int n,
			       const struct zcr_ctx_attr *attr)
{
	struct zcr_ctx_attr a;
	int i;

	PAIR_BEFORE_OPEN();
	memset(p, 0, sizeof(*p));
	p->n = n;
	for (i = 0; i < n; i++) {
		if (attr)
			a = *attr;
		else
			memset(&a, 0, sizeof(a));
		a.rank = i;
		a.quiet = 1;
		ZT_EXPECT_EQ(zcr_ctx_create_sized(&a, sizeof(a), &p->c[i]),
			     0);
	}
	p->port = zcr_ctx_listen(p->c[0], PAIR_SCHEME "127.0.0.1:0");
	ZT_ASSERT(p->port > 0);
	snprintf(p->addr, sizeof(p->addr), PAIR_SCHEME "127.0.0.1:%d",
		 p->port);
}

/* Rank i > 0 of pair_create()'s connects to rank 0. */
static inline void pair_connect(struct pair *p)
{
	int i;

	for (i = 1; i < p->n; i++) {
		struct zcr_ep *ep = NULL;

		ZT_EXPECT_EQ(zcr_ep_connect(p->c[i], p->addr, &p->to0[i]), 0);
		PAIR_PUMP_UNTIL(p, zcr_ep_accept(p->c[0], 0, &ep) == 0);
		ZT_ASSERT(zcr_ep_rank(ep) > 0 && zcr_ep_rank(ep) < p->n);
		p->from[zcr_ep_rank(ep)] = ep;
		PAIR_PUMP_UNTIL(p, zcr_ep_rank(p->to0[i]) == 0);
	}
}

/* n contexts; rank i > 0 connects to rank 0. attr may be NULL. */
static inline void pair_open(struct pair *p, int n,
			     const struct zcr_ctx_attr *attr)
{
	pair_create(p, n, attr);
	pair_connect(p);
}

static inline void pair_close(struct pair *p)
{
	int i;

	for (i = 0; i < p->n; i++)
		zcr_ctx_destroy(p->c[i]);
}

/* A thread of c waiting 300 ms for a message from rank 1 that never comes. */
struct pair_idle {
	struct zcr_ctx *c;
	int tag;
	int ret;	/* zcr_wait_timeout()'s: -ETIMEDOUT is the idea */
	pthread_t t;
};

static inline void *pair_idle_wait(void *arg)
{
	struct pair_idle *w = arg;
	struct zcr_req *r;
	char b[64];

	w->ret = zcr_irecv(w->c, b, sizeof(b), 1, w->tag, &r);
	if (w->ret)
		return NULL;
	w->ret = zcr_wait_timeout(r, NULL, 300);
	if (w->ret == -ETIMEDOUT) {	/* else it is complete, and freed */
		zcr_cancel(r);
		zcr_wait(r, NULL);
	}
	return NULL;
}

/* n idle waiters on c, tags tag0, tag0 + step, ... */
static inline void pair_idle_start(struct pair_idle *w, int n,
				   struct zcr_ctx *c, int tag0, int step)
{
	int i;

	for (i = 0; i < n; i++) {
		w[i].c = c;
		w[i].tag = tag0 + i * step;
		ZT_ASSERT(pthread_create(&w[i].t, NULL, pair_idle_wait,
					 &w[i]) == 0);
	}
}

/* Join them; each wait must have timed out, as meant. */
static inline void pair_idle_join(struct pair_idle *w, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		pthread_join(w[i].t, NULL);
		ZT_EXPECT_EQ(w[i].ret, -ETIMEDOUT);
	}
}

/* Processor time of the process so far, in seconds. */
static inline double pair_cpu(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
	       (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

/* A byte pattern that differs per message (seed) and per position. */
static inline void pattern_fill(void *buf, size_t len, uint32_t seed)
{
	unsigned char *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = (unsigned char)((i * 131 + seed * 7 + (i >> 12)) ^ seed);
}

static inline size_t pattern_bad(const void *buf, size_t len, uint32_t seed)
{
	const unsigned char *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != (unsigned char)((i * 131 + seed * 7 + (i >> 12)) ^
					    seed))
			return i + 1;
	return 0;
}

/*
 * Rank 0 receives messages with tags 0 .. n-1 from rank 1 into rb (len
 * bytes each, pattern seed = tag), each within 5 s and intact; then the
 * connection from rank 1 must end (its peer is gone).
 */
static inline void pair_recv_to_end(struct pair *p, char *rb, size_t len,
				    int n)
{
	struct zcr_status st;
	struct zcr_req *r;
	int i;

	for (i = 0; i < n; i++) {
		memset(rb, 0, len);
		ZT_EXPECT_EQ(zcr_irecv(p->c[0], rb, len, 1, i, &r), 0);
		ZT_ASSERT_MSG(zcr_wait_timeout(r, &st, 5000) == 0, "message %d "
			      "of %d: %d (%s)", i, n, st.error,
			      pair_tp(p->from[1]));
		ZT_EXPECT_EQ(pattern_bad(rb, len, (uint32_t)i), 0);
	}
	PAIR_PUMP_UNTIL(p, zcr_ep_error(p->from[1], NULL) != 0);
}

/* A raw TCP connection to a loopback port, for tests that misbehave. */
static inline int raw_connect_port(int port)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ZT_ASSERT(fd >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ZT_ASSERT(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	return fd;
}

/* A raw TCP connection to rank 0 of @p. */
static inline int raw_connect(struct pair *p)
{
	return raw_connect_port(p->port);
}

/*
 * A raw listening socket on an ephemeral loopback port that never answers
 * (a peer stuck in its handshake); "127.0.0.1:PORT" goes into @addr.
 */
static inline int raw_listen(char *addr, size_t len)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	ZT_ASSERT(lfd >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ZT_ASSERT(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	ZT_ASSERT(listen(lfd, 1) == 0);
	ZT_ASSERT(getsockname(lfd, (struct sockaddr *)&sa, &sl) == 0);
	snprintf(addr, len, "127.0.0.1:%d", ntohs(sa.sin_port));
	return lfd;
}

/* Encode a header in the wire format (independently of lib/wire.c). */
static inline void raw_hdr(unsigned char out[32], uint32_t magic, int version,
			   int type, int hlen, int32_t src, int32_t tag,
			   uint64_t len, uint64_t seq)
{
	uint64_t f[2] = { len, seq };
	int i, j;

	for (i = 0; i < 4; i++)
		out[i] = (unsigned char)(magic >> (8 * i));
	out[4] = (unsigned char)version;
	out[5] = (unsigned char)type;
	out[6] = (unsigned char)hlen;
	out[7] = (unsigned char)(hlen >> 8);
	for (i = 0; i < 4; i++) {
		out[8 + i] = (unsigned char)((uint32_t)src >> (8 * i));
		out[12 + i] = (unsigned char)((uint32_t)tag >> (8 * i));
	}
	for (j = 0; j < 2; j++)
		for (i = 0; i < 8; i++)
			out[16 + 8 * j + i] = (unsigned char)(f[j] >> (8 * i));
}

#define RAW_MAGIC 0x3152435aU

static inline void raw_hello(int fd, int rank)
{
	unsigned char h[32];

	raw_hdr(h, RAW_MAGIC, 1, 1, 32, rank, 0, 0, 0);
	ZT_ASSERT(write(fd, h, 32) == 32);
}

#endif /* ZCR_PAIR_H */
