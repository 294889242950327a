// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_api.c - what a new user of the API runs into: receives naming a
 * rank that has not connected yet, the status of a failed receive, the
 * environment variables, IPv6 and unresolvable addresses.
 * Run: build/tests/unit/test_api [name]
 */
#include <fcntl.h>
#include <stdlib.h>

#include "core/core.h"
#include "zcr_pair.h"

/* As MPI: a receive may be posted before its source connected. */
ZT_TEST(recv_before_the_source_connects)
{
	struct zcr_req *r;
	struct zcr_status st;
	struct pair p;
	char buf[16];
	int ret;

	pair_open(&p, 1, NULL);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], buf, sizeof(buf), 1, 7, &r), 0);
	/* Now rank 1 connects and sends. */
	ZT_EXPECT_EQ(zcr_ctx_create(&(struct zcr_ctx_attr){ .rank = 1,
							     .quiet = 1 },
				    &p.c[1]), 0);
	p.n = 2;
	ZT_EXPECT_EQ(zcr_ep_connect(p.c[1], p.addr, &p.to0[1]), 0);
	PAIR_PUMP_UNTIL(&p, zcr_ep_rank(p.to0[1]) == 0);
	ZT_EXPECT_EQ(zcr_send(p.to0[1], "late", 5, 7), 0);
	PAIR_PUMP_UNTIL(&p, (ret = zcr_test(r, &st)) != 0);
	ZT_EXPECT_EQ(ret, 1);
	ZT_EXPECT_EQ(st.source, 1);
	ZT_EXPECT_EQ(strcmp(buf, "late"), 0);
	pair_close(&p);
}

/*
 * A receive that failed before any message matched it says so: source
 * and tag ZCRECV_ANY_SOURCE / ZCRECV_ANY_TAG (-1; rank 0 is a real
 * rank), len 0.
 */
ZT_TEST(status_of_a_failed_receive)
{
	struct zcr_status st;
	struct zcr_req *r;
	struct pair p;
	char buf[16];
	int ret;

	pair_open(&p, 2, NULL);
	ZT_EXPECT_EQ(zcr_irecv(p.c[1], buf, sizeof(buf), 0, 3, &r), 0);
	zcr_ctx_destroy(p.c[0]);
	p.c[0] = p.c[1];
	p.n = 1;
	PAIR_PUMP_UNTIL(&p, (ret = zcr_test(r, &st)) != 0);
	ZT_EXPECT_EQ(ret, -ECONNRESET);
	ZT_EXPECT_EQ(st.error, -ECONNRESET);
	ZT_EXPECT_EQ(st.source, ZCRECV_ANY_SOURCE);
	ZT_EXPECT_EQ(st.tag, ZCRECV_ANY_TAG);
	ZT_EXPECT_EQ(st.len, 0);
	zcr_ctx_destroy(p.c[1]);
}

/* What zcr_ctx_create() wrote on stderr, with var=val in the environment. */
static int create_with_env(const char *var, const char *val, char *err,
			   size_t len, struct zcr_ctx **c)
{
	char path[] = "/tmp/zt-api-XXXXXX";
	int fd = mkstemp(path), saved = dup(2), ret;
	ssize_t n;

	ZT_ASSERT(fd >= 0 && saved >= 0);
	unlink(path);
	setenv(var, val, 1);
	fflush(stderr);
	dup2(fd, 2);
	ret = zcr_ctx_create(NULL, c);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	unsetenv(var);
	n = pread(fd, err, len - 1, 0);
	err[n > 0 ? n : 0] = 0;
	close(fd);
	return ret;
}

ZT_TEST(environment_values)
{
	static const char *const bad[][2] = {
		{ "ZCRECV_POLICY", "fast" },
		{ "ZCRECV_HANDSHAKE_TIMEOUT_MS", "10s" },
		{ "ZCRECV_QUIET", "yes" },
		{ "ZCRECV_HUGE_ZONES", "2" },
	};
	struct zcr_ctx *c;
	char err[512], want[128];
	unsigned int i;

	/* ZCRECV_QUIET=0 means not quiet, 1 quiet. */
	ZT_EXPECT_EQ(create_with_env("ZCRECV_QUIET", "0", err, sizeof(err),
				     &c), 0);
	ZT_EXPECT_EQ(c->quiet, 0);
	zcr_ctx_destroy(c);
	ZT_EXPECT_EQ(create_with_env("ZCRECV_QUIET", "1", err, sizeof(err),
				     &c), 0);
	ZT_EXPECT_EQ(c->quiet, 1);
	zcr_ctx_destroy(c);
	/* A bad value fails and names the variable. */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ZT_EXPECT_EQ(create_with_env(bad[i][0], bad[i][1], err,
					     sizeof(err), &c), -EINVAL);
		snprintf(want, sizeof(want), "zcrecv: %s=%s: expected ",
			 bad[i][0], bad[i][1]);
		printf("# %s", err);
		ZT_ASSERT_MSG(strstr(err, want), "no \"%s\" on stderr", want);
	}
}

/* [IPv6]:PORT works; an unresolvable host is not "unreachable". */
ZT_TEST(addresses)
{
	struct zcr_ctx *c0, *c1;
	struct zcr_ep *ep, *e;
	struct pair p;
	char addr[64];
	int port, fd, ret;

	ZT_EXPECT_EQ(zcr_ctx_create(&(struct zcr_ctx_attr){ .quiet = 1 },
				    &c0), 0);
	ZT_EXPECT_EQ(zcr_ctx_create(&(struct zcr_ctx_attr){ .rank = 1,
							     .quiet = 1 },
				    &c1), 0);
	/*
	 * No such host: -ENXIO, or -EAGAIN where no resolver answers at
	 * all (as in the test VMs); never "unreachable".
	 */
	ret = zcr_ep_connect(c1, "no-such-host.invalid:1", &ep);
	ZT_ASSERT_MSG(ret == -ENXIO || ret == -EAGAIN, "connect: %d", ret);
	ret = zcr_ctx_listen(c0, "no-such-host.invalid:0");
	ZT_ASSERT_MSG(ret == -ENXIO || ret == -EAGAIN, "listen: %d", ret);
	ZT_EXPECT_EQ(zcr_ctx_listen(c0, "[::1:0"), -EINVAL);
	fd = socket(AF_INET6, SOCK_STREAM, 0);
	if (fd < 0) {
		zcr_ctx_destroy(c0);
		zcr_ctx_destroy(c1);
		ZT_SKIP("no IPv6");
	}
	close(fd);
	port = zcr_ctx_listen(c0, "[::1]:0");
	ZT_ASSERT_MSG(port > 0, "listen on [::1]:0: %d", port);
	snprintf(addr, sizeof(addr), "tcp://[::1]:%d", port);
	ZT_EXPECT_EQ(zcr_ep_connect(c1, addr, &ep), 0);
	memset(&p, 0, sizeof(p));
	p.c[0] = c0;
	p.c[1] = c1;
	p.n = 2;
	PAIR_PUMP_UNTIL(&p, zcr_ep_accept(c0, 0, &e) == 0);
	ZT_EXPECT_EQ(zcr_ep_rank(e), 1);
	PAIR_PUMP_UNTIL(&p, zcr_ep_rank(ep) == 0);
	zcr_ctx_destroy(c1);
	zcr_ctx_destroy(c0);
}

/*
 * zcr_cancel(): a posted receive no message matched is cancelled, its
 * status says so; a matched one is not; a send cannot be.
 */
ZT_TEST(cancel)
{
	struct zcr_req *r, *s;
	struct zcr_status st;
	struct pair p;
	char buf[16];
	int ret;

	pair_open(&p, 2, NULL);
	ZT_EXPECT_EQ(zcr_cancel(NULL), -EINVAL);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], buf, sizeof(buf), 1, 9, &r), 0);
	ZT_EXPECT_EQ(zcr_cancel(r), 0);
	ZT_EXPECT_EQ(zcr_cancel(r), -EBUSY);	/* completed (cancelled) */
	ZT_EXPECT_EQ(zcr_wait(r, &st), -ECANCELED);
	ZT_EXPECT_EQ(st.error, -ECANCELED);
	ZT_EXPECT_EQ(st.source, ZCRECV_ANY_SOURCE);
	ZT_EXPECT_EQ(st.tag, ZCRECV_ANY_TAG);
	ZT_EXPECT_EQ(st.len, 0);
	/* The message it would have taken goes to the next receive. */
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], "abc", 4, 9, &s), 0);
	ZT_EXPECT_EQ(zcr_cancel(s), -EOPNOTSUPP);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], buf, sizeof(buf), 1, 9, &r), 0);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).msgs_recv == 1);
	ZT_EXPECT_EQ(zcr_cancel(r), -EBUSY);
	ZT_EXPECT_EQ(zcr_test(r, &st), 1);
	ZT_EXPECT_EQ(st.source, 1);
	ZT_EXPECT_EQ(strcmp(buf, "abc"), 0);
	PAIR_PUMP_UNTIL(&p, (ret = zcr_test(s, NULL)) != 0);
	ZT_EXPECT_EQ(ret, 1);
	pair_close(&p);
}

/* zcr_wait_timeout(): -ETIMEDOUT and still pending, then completes. */
ZT_TEST(wait_timeout)
{
	struct zcr_req *r;
	struct zcr_status st;
	struct pair p;
	char buf[16];
	double t0;

	pair_open(&p, 2, NULL);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], buf, sizeof(buf), 1, 2, &r), 0);
	ZT_EXPECT_EQ(zcr_wait_timeout(r, &st, -2), -EINVAL);
	ZT_EXPECT_EQ(zcr_wait_timeout(r, &st, 0), -ETIMEDOUT);
	t0 = pair_now();
	ZT_EXPECT_EQ(zcr_wait_timeout(r, &st, 150), -ETIMEDOUT);
	t0 = pair_now() - t0;
	printf("# timed out after %.0f ms\n", t0 * 1e3);
	ZT_ASSERT(t0 >= 0.14 && t0 < 5);
	ZT_EXPECT_EQ(zcr_send(p.to0[1], "x", 2, 2), 0);
	/* zcr_wait_timeout() also drives rank 0's progress. */
	ZT_EXPECT_EQ(zcr_wait_timeout(r, &st, 5000), 0);
	ZT_EXPECT_EQ(st.source, 1);
	pair_close(&p);
}

/*
 * zcr_ep_accept_rank() hands out the endpoint of one rank and leaves the
 * others; zcr_test() says 1, zcr_wait() 0 for the same success.
 */
ZT_TEST(accept_rank_and_return_values)
{
	struct zcr_ctx *c[3];
	struct zcr_ep *to0[3], *ep;
	struct zcr_req *r;
	struct pair p;
	char buf[8];
	int i;

	pair_open(&p, 1, NULL);
	for (i = 1; i < 3; i++) {
		ZT_EXPECT_EQ(zcr_ctx_create(&(struct zcr_ctx_attr){
			.rank = i, .quiet = 1 }, &c[i]), 0);
		ZT_EXPECT_EQ(zcr_ep_connect(c[i], p.addr, &to0[i]), 0);
		p.c[i] = c[i];
	}
	p.n = 3;
	ZT_EXPECT_EQ(zcr_ep_accept_rank(p.c[0], -1, 0, &ep), -EINVAL);
	PAIR_PUMP_UNTIL(&p, zcr_ep_rank(to0[1]) == 0 &&
			zcr_ep_rank(to0[2]) == 0);
	ZT_EXPECT_EQ(zcr_ep_accept_rank(p.c[0], 5, 50, &ep), -ETIMEDOUT);
	ZT_EXPECT_EQ(zcr_ep_accept_rank(p.c[0], 2, 1000, &ep), 0);
	ZT_EXPECT_EQ(zcr_ep_rank(ep), 2);
	ZT_EXPECT_EQ(zcr_ep_accept_rank(p.c[0], 2, 0, &ep), -ETIMEDOUT);
	ZT_EXPECT_EQ(zcr_ep_accept(p.c[0], 0, &ep), 0);
	ZT_EXPECT_EQ(zcr_ep_rank(ep), 1);
	ZT_EXPECT_EQ(zcr_send(ep, "hi", 3, 0), 0);
	ZT_EXPECT_EQ(zcr_irecv(c[1], buf, sizeof(buf), 0, 0, &r), 0);
	PAIR_PUMP_UNTIL(&p, pair_stats(c[1]).msgs_recv == 1);
	ZT_EXPECT_EQ(zcr_test(r, NULL), 1);
	ZT_EXPECT_EQ(zcr_send(ep, "hi", 3, 0), 0);
	ZT_EXPECT_EQ(zcr_irecv(c[1], buf, sizeof(buf), 0, 0, &r), 0);
	ZT_EXPECT_EQ(zcr_wait(r, NULL), 0);
	pair_close(&p);
}
