// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tcp_send.c - the TCP transport's send queue: a message's header and
 * payload in one sendmsg(2), what did not fit pushed by the progress
 * engine, and the acknowledgements (ACK) we owe. Described in tcp.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "base/ctx.h"
#include "transport/tcp/tcp_priv.h"
#include "transport/transport.h"
#include "transport/util.h"
#include "transport/wire.h"

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

static void encode_data(struct zcr_ep *ep, struct zcr_req *r);

/* Write what the socket takes of ep's queue; returns messages completed. */
int __zcr_tcp_push(struct zcr_ep *ep)
{
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
			__zcr_ep_send_done_locked(ep, r);
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

int __zcr_tcp_send(struct zcr_ep *ep, struct zcr_req *r)
{
	if (T(ep)->wdead)
		return T(ep)->wdead;
	zcr_list_add_tail(&r->link, &ep->sendq);
	/* Start writing now: a small message usually leaves at once. */
	__zcr_tcp_push(ep);
	return 0;
}
