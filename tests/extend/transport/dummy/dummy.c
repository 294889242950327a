// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * dummy.c - a transport that loops every send back into its own context,
 * as a message from rank 1: the smallest complete transport, copied to
 * lib/transport/dummy/ by tests/extend/check-extend.sh to show that a
 * transport is one folder plus one registry line. "dummy://ANY" is its
 * address: listen answers 4242, connect opens at once. It has nothing to
 * poll and no progress to make: the defaults of those ops serve.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/ctx.h"
#include "match/match.h"
#include "transport/transport.h"

#define DUMMY_PEER	1	/* the rank its messages come from */

static int dummy_listen(struct zcr_ctx *ctx, void *priv, const char *addr)
{
	(void)ctx;
	(void)priv;
	(void)addr;
	return 4242;
}

static int dummy_connect(struct zcr_ctx *ctx, void *priv, const char *addr,
			 void **ep_priv)
{
	(void)ctx;
	(void)priv;
	(void)addr;
	*ep_priv = calloc(1, 1);
	return *ep_priv ? 0 : -ENOMEM;
}

/* No handshake: the peer is known. */
static void dummy_start(struct zcr_ep *ep)
{
	__zcr_ep_open_locked(ep, DUMMY_PEER);
}

/*
 * The header goes to match first, the payload where match says, then
 * the send is written: as a stream transport does it, in one call. A
 * stall (no staging room) is refused rather than waited for.
 */
static int dummy_send(struct zcr_ep *ep, struct zcr_req *r)
{
	struct zcr_ctx *ctx = ep->ctx;
	int ret;

	ret = __zcr_match_arrive_locked(ctx, &ep->rx, ep->rank, r->st.tag,
					r->len);
	if (ret)
		return ret == -EAGAIN ? -ENOBUFS : ret;
	memcpy(ep->rx.dst, r->sbuf, ep->rx.room);
	__zcr_match_payload_done_locked(ctx, &ep->rx);
	__zcr_req_complete_locked(r, 0);
	return 0;
}

static void dummy_ep_close(struct zcr_ep *ep, void *ep_priv)
{
	(void)ep;
	(void)ep_priv;
}

static void dummy_ep_free(struct zcr_ep *ep, void *ep_priv)
{
	(void)ep;
	free(ep_priv);
}

ZCR_TRANSPORT(dummy) = {
	.size = sizeof(struct zcr_transport_ops),
	.name = "dummy",
	.scheme = "dummy",
	.listen = dummy_listen,
	.connect = dummy_connect,
	.start = dummy_start,
	.send = dummy_send,
	.ep_close = dummy_ep_close,
	.ep_free = dummy_ep_free,
};
