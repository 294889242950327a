// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * app-0.2.c - an application as it was built against libzcrecv 0.2: it sees
 * only tests/abi/zcrecv-0.2.h. tests/abi/check-lib-abi.sh compiles it
 * against that header and runs it with the current libzcrecv.so. It calls
 * the 0.2 entry points with the 0.2 struct sizes and checks that the
 * library reads no byte past the 0.2 struct zcr_ctx_attr and writes none
 * past the 0.2 struct zcr_stats and struct zcr_status (guard bytes follow
 * each), and that messages of a communicator, a synchronous send, a probe,
 * a matched probe, a cancel and a one-rank job still work. Exit 0 on
 * success.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "zcrecv-0.2.h"

#define GUARD	64

struct guarded_status {
	struct zcr_status st;
	unsigned char guard[GUARD];
};

static unsigned char ff[GUARD];

static int fail(const char *what, int ret)
{
	fprintf(stderr, "app-0.2: %s (%d)\n", what, ret);
	return 1;
}

static void status_init(struct guarded_status *s)
{
	memset(s, 0xff, sizeof(*s));
}

static int status_guarded(const struct guarded_status *s)
{
	return !memcmp(s->guard, ff, sizeof(ff));
}

/* One rank: every rank's address is its own. */
static int allgather1(const void *mine, void *all, size_t len, void *arg)
{
	(void)arg;
	memcpy(all, mine, len);
	return 0;
}

static int job_self(void)
{
	struct zcr_ctx_attr a = { .quiet = 1, .backend = ZCRECV_BACKEND_COPY,
				  .job_secret = "app-0.2 job secret 0123456789" };
	struct zcr_job_attr ja = { .rank = 0, .size = 1,
				   .allgather = allgather1 };
	char msg[] = "job to itself", buf[32] = "";
	struct guarded_status st;
	struct zcr_req *rr, *sr;
	struct zcr_ctx *c;
	struct zcr_ep *ep;
	int ret, rank = -1, size = -1;

	ret = zcr_ctx_create_job(&a, sizeof(a), &ja, sizeof(ja), &c);
	if (ret)
		return fail("zcr_ctx_create_job", ret);
	ret = zcr_ctx_job(c, &rank, &size);
	if (ret || rank != 0 || size != 1)
		return fail("zcr_ctx_job", ret);
	ret = zcr_job_ep(c, 0, &ep);
	if (ret)
		return fail("zcr_job_ep", ret);
	ret = zcr_irecv_comm(c, 9, buf, sizeof(buf), 0, 3, &rr);
	if (ret)
		return fail("zcr_irecv_comm (job)", ret);
	ret = zcr_isend_comm(ep, 9, msg, sizeof(msg), 3, &sr);
	if (ret)
		return fail("zcr_isend_comm (job)", ret);
	status_init(&st);
	ret = zcr_wait_timeout(rr, &st.st, 10000);
	if (ret || st.st.len != sizeof(msg) || strcmp(buf, msg) ||
	    !status_guarded(&st))
		return fail("job message through", ret);
	ret = zcr_wait(sr, NULL);
	if (ret)
		return fail("job send", ret);
	zcr_ctx_destroy(c);
	return 0;
}

int main(void)
{
	/* What follows each struct is what the old binary owns. */
	struct {
		struct zcr_ctx_attr a;
		unsigned char guard[GUARD];
	} attr;
	struct {
		struct zcr_stats st;
		unsigned char guard[GUARD];
	} stats;
	char port[32], msg[] = "built against 0.2", buf[64] = "";
	struct zcr_ctx *c0, *c1;
	struct zcr_ep *e01, *e10;
	struct guarded_status st;
	struct zcr_message *m;
	struct zcr_req *r, *s;
	int ret, p;

	memset(ff, 0xff, sizeof(ff));
	memset(&attr, 0, sizeof(attr));
	/* Garbage past the 0.2 struct: a newer library must not read it. */
	memset(attr.guard, 0xff, sizeof(attr.guard));
	attr.a.rank = 0;
	attr.a.quiet = 1;
	attr.a.backend = ZCRECV_BACKEND_COPY;
	attr.a.staging_bytes = 1 << 20;
	attr.a.max_conns = 16;
	ret = zcr_ctx_create_sized(&attr.a, sizeof(attr.a), &c0);
	if (ret)
		return fail("zcr_ctx_create_sized rank 0", ret);
	attr.a.rank = 1;
	ret = zcr_ctx_create_sized(&attr.a, sizeof(attr.a), &c1);
	if (ret)
		return fail("zcr_ctx_create_sized rank 1", ret);
	p = zcr_ctx_listen(c0, "127.0.0.1:0");
	if (p <= 0)
		return fail("zcr_ctx_listen", p);
	snprintf(port, sizeof(port), "127.0.0.1:%d", p);
	ret = zcr_ep_connect(c1, port, &e10);
	if (ret)
		return fail("zcr_ep_connect", ret);
	ret = zcr_ep_accept_rank(c0, 1, 10000, &e01);
	if (ret)
		return fail("zcr_ep_accept_rank", ret);

	/* A cancelled receive reports no sender. */
	ret = zcr_irecv(c0, buf, sizeof(buf), 1, 7, &r);
	if (ret)
		return fail("zcr_irecv", ret);
	ret = zcr_cancel(r);
	if (ret)
		return fail("zcr_cancel", ret);
	status_init(&st);
	ret = zcr_wait(r, &st.st);
	if (ret != -ECANCELED || st.st.source != -1 || !status_guarded(&st))
		return fail("cancelled receive", ret);

	/*
	 * A synchronous send, seen by a probe first (communicator 0: plain
	 * contexts carry no other; the job below does). One thread drives
	 * both contexts: the sender's progress writes the message.
	 */
	ret = zcr_issend_comm(e10, 0, msg, sizeof(msg), 42, &s);
	if (ret)
		return fail("zcr_issend_comm", ret);
	status_init(&st);
	do
		ret = zcr_progress(c1, 0) < 0 ? -1 :
		      zcr_iprobe(c0, 0, ZCRECV_ANY_SOURCE, 42, &st.st);
	while (ret == 0);
	if (ret != 1 || st.st.source != 1 || st.st.len != sizeof(msg) ||
	    !status_guarded(&st))
		return fail("zcr_iprobe", ret);
	ret = zcr_irecv_comm(c0, 0, buf, sizeof(buf), 1, 42, &r);
	if (ret)
		return fail("zcr_irecv_comm", ret);
	status_init(&st);
	ret = zcr_wait_timeout(r, &st.st, 10000);
	if (ret || st.st.len != sizeof(msg) || strcmp(buf, msg) ||
	    !status_guarded(&st))
		return fail("message through", ret);
	status_init(&st);
	ret = zcr_wait_timeout(s, &st.st, 10000);
	if (ret || !status_guarded(&st))
		return fail("synchronous send", ret);

	/* A matched probe and its receive. */
	memset(buf, 0, sizeof(buf));
	ret = zcr_isend(e10, msg, sizeof(msg), 43, &s);
	if (ret)
		return fail("zcr_isend", ret);
	status_init(&st);
	do
		ret = zcr_progress(c1, 0) < 0 ? -1 :
		      zcr_improbe(c0, 0, 1, ZCRECV_ANY_TAG, &m, &st.st);
	while (ret == 0);
	if (ret != 1 || st.st.tag != 43 || !status_guarded(&st))
		return fail("zcr_improbe", ret);
	ret = zcr_imrecv(m, buf, sizeof(buf), &r);
	if (ret)
		return fail("zcr_imrecv", ret);
	status_init(&st);
	do
		ret = zcr_test(r, &st.st);
	while (ret == 0);
	if (ret != 1 || strcmp(buf, msg) || !status_guarded(&st))
		return fail("zcr_test of zcr_imrecv", ret);
	ret = zcr_wait(s, NULL);
	if (ret)
		return fail("zcr_isend completion", ret);

	memset(&stats, 0xff, sizeof(stats));
	ret = zcr_ctx_stats_sized(c0, &stats.st, sizeof(stats.st));
	if (ret)
		return fail("zcr_ctx_stats_sized", ret);
	if (memcmp(stats.guard, ff, sizeof(ff)))
		return fail("zcr_ctx_stats_sized wrote past the 0.2 struct", 0);
	if (stats.st.msgs_recv != 2 || stats.st.bytes_recv != 2 * sizeof(msg) ||
	    stats.st.staging_limit != 1 << 20 ||
	    stats.st.backend != ZCRECV_BACKEND_COPY ||
	    strcmp(stats.st.backend_name, "copy"))
		return fail("statistics of the 0.2 struct", 0);
	/* 0.2 closes free the endpoint. */
	zcr_ep_close(e10);
	zcr_ep_close(e01);
	zcr_ctx_destroy(c1);
	zcr_ctx_destroy(c0);
	if (job_self())
		return 1;
	printf("app-0.2: ok against libzcrecv %s\n", zcr_version());
	return 0;
}
