// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * app-0.1.c - an application as it was built against libzcrecv 0.1: it sees
 * only tests/abi/zcrecv-0.1.h. tests/abi/check-lib-abi.sh compiles it
 * against that header and runs it with the current libzcrecv.so. It checks
 * that the 0.1 entry points read no byte past the 0.1 struct zcr_ctx_attr
 * and write no byte past the 0.1 struct zcr_stats (guard bytes follow each),
 * and that a message still goes through. Exit 0 on success.
 */
#include <stdio.h>
#include <string.h>

#include "zcrecv-0.1.h"

#define GUARD	64

static int fail(const char *what, int ret)
{
	fprintf(stderr, "app-0.1: %s (%d)\n", what, ret);
	return 1;
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
	char port[32], msg[] = "built against 0.1", buf[64] = "";
	struct zcr_ctx *c0, *c1;
	struct zcr_ep *e01, *e10;
	struct zcr_status st;
	struct zcr_req *r;
	unsigned char ff[GUARD];
	int ret, p;

	memset(ff, 0xff, sizeof(ff));
	memset(&attr, 0, sizeof(attr));
	/* Garbage past the 0.1 struct: a newer library must not read it. */
	memset(attr.guard, 0xff, sizeof(attr.guard));
	attr.a.rank = 0;
	attr.a.quiet = 1;
	attr.a.backend = ZCRECV_BACKEND_COPY;
	attr.a.staging_bytes = 1 << 20;
	ret = zcr_ctx_create(&attr.a, &c0);
	if (ret)
		return fail("zcr_ctx_create rank 0", ret);
	attr.a.rank = 1;
	ret = zcr_ctx_create(&attr.a, &c1);
	if (ret)
		return fail("zcr_ctx_create rank 1", ret);
	p = zcr_ctx_listen(c0, "127.0.0.1:0");
	if (p <= 0)
		return fail("zcr_ctx_listen", p);
	snprintf(port, sizeof(port), "127.0.0.1:%d", p);
	ret = zcr_ep_connect(c1, port, &e10);
	if (ret)
		return fail("zcr_ep_connect", ret);
	ret = zcr_ep_accept(c0, 10000, &e01);
	if (ret)
		return fail("zcr_ep_accept", ret);
	ret = zcr_irecv(c0, buf, sizeof(buf), 1, 42, &r);
	if (ret)
		return fail("zcr_irecv", ret);
	ret = zcr_send(e10, msg, sizeof(msg), 42);
	if (ret)
		return fail("zcr_send", ret);
	ret = zcr_wait(r, &st);
	if (ret || st.len != sizeof(msg) || strcmp(buf, msg))
		return fail("message through", ret);

	memset(&stats, 0xff, sizeof(stats));
	ret = zcr_ctx_stats(c0, &stats.st);
	if (ret)
		return fail("zcr_ctx_stats", ret);
	if (memcmp(stats.guard, ff, sizeof(ff)))
		return fail("zcr_ctx_stats wrote past the 0.1 struct", 0);
	if (stats.st.msgs_recv != 1 || stats.st.bytes_recv != sizeof(msg) ||
	    stats.st.staging_limit != 1 << 20 ||
	    stats.st.backend != ZCRECV_BACKEND_COPY ||
	    strcmp(stats.st.backend_name, "copy") ||
	    strcmp(stats.st.predictor, "select"))
		return fail("statistics of the 0.1 struct", 0);
	zcr_ctx_destroy(c1);
	zcr_ctx_destroy(c0);
	printf("app-0.1: ok against libzcrecv %s\n", zcr_version());
	return 0;
}
