// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * smoke.c - the dummy transport, backend and predictor of
 * tests/extend/check-extend.sh, through the public API only: the backend
 * and the predictor chosen by ZCRECV_BACKEND=dummy and
 * ZCRECV_PREDICTOR=dummy (the script sets them), the transport by the
 * scheme of its addresses; one message received as posted, one staged
 * early and received afterwards. Exit 0 when all is as expected.
 */
#include <stdio.h>
#include <string.h>

#include "zcrecv.h"

#define N	8192

static int fails;

static void check(int ok, const char *what)
{
	printf("%s %s\n", ok ? "ok" : "not ok", what);
	fails += !ok;
}

int main(void)
{
	static char out[N], in[N];
	struct zcr_ctx_attr a = { .rank = 0 };
	struct zcr_status st;
	struct zcr_stats s;
	struct zcr_ctx *ctx;
	struct zcr_ep *ep;
	struct zcr_req *r;
	int i;

	for (i = 0; i < N; i++)
		out[i] = (char)(i * 7 + 1);
	if (zcr_ctx_create(&a, &ctx)) {
		printf("not ok context created\n");
		return 1;
	}
	check(!zcr_ctx_stats(ctx, &s) && !strcmp(s.backend_name, "dummy"),
	      "backend chosen by ZCRECV_BACKEND=dummy");
	check(!strcmp(zcr_backend_name(s.backend), "dummy"),
	      "zcr_backend_name() knows it");
	check(!strcmp(s.predictor, "dummy"),
	      "predictor chosen by ZCRECV_PREDICTOR=dummy");
	check(zcr_ctx_listen(ctx, "dummy://anywhere") == 4242,
	      "dummy:// addresses reach the dummy transport (listen)");
	check(!zcr_ep_connect(ctx, "dummy://peer", &ep) &&
	      zcr_ep_rank(ep) == 1, "connect through it, peer rank 1");

	/* Posted first: lands in the buffer. */
	check(!zcr_irecv(ctx, in, N, 1, 7, &r) && !zcr_send(ep, out, N, 7) &&
	      !zcr_wait(r, &st) && st.source == 1 && st.tag == 7 &&
	      st.len == N && !memcmp(in, out, N),
	      "a posted receive gets the message");
	/* Sent first: staged, then delivered. */
	memset(in, 0, N);
	out[0] ^= 0x55;
	check(!zcr_send(ep, out, N, 8) &&
	      !zcr_recv(ctx, in, N, 1, 8, &st) && st.len == N &&
	      !memcmp(in, out, N), "an early message is staged, then taken");
	zcr_ctx_destroy(ctx);
	printf("extend smoke: %s\n", fails ? "FAILED" : "all passed");
	return fails ? 1 : 0;
}
