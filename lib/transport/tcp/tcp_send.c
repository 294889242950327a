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
#include "prefetch/prefetch.h"
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

#define SEGS_MAX	64	/* iovecs per sendmsg */

/*
 * The bytes request r puts on the wire, as segments, from byte skip on:
 * a plain DATA is its header and payload; a prefetching one (r->pf) its
 * PF_INFO and bitmap, then the DATA header and the runs of the payload
 * that were not pre-sent; a frame of the library's own (r->ctl) its
 * header and body. Returns the segments filled; *total the bytes of r.
 */
static int segments(struct zcr_req *r, uint64_t skip, struct iovec *iov,
		    uint64_t *total)
{
	struct zcr_pf_tx *pf = r->pf;
	struct iovec all[4];
	int n = 0, na = 0, i;
	size_t k;

	*total = 0;
	if (pf) {
		all[na].iov_base = pf->hdr;
		all[na++].iov_len = ZCR_WIRE_HDR_LEN;
		if (pf->bmlen) {
			all[na].iov_base = pf->bm;
			all[na++].iov_len = pf->bmlen;
		}
	}
	all[na].iov_base = r->tx;
	all[na++].iov_len = ZCR_WIRE_HDR_LEN;
	for (i = 0; i < na; i++) {
		*total += all[i].iov_len;
		if (skip >= all[i].iov_len) {
			skip -= all[i].iov_len;
			continue;
		}
		iov[n].iov_base = (char *)all[i].iov_base + skip;
		iov[n++].iov_len = all[i].iov_len - skip;
		skip = 0;
	}
	if (!pf || pf->wire_len == r->len) {
		*total += r->len;
		if (skip < r->len) {
			iov[n].iov_base = (void *)(r->sbuf + skip);
			iov[n++].iov_len = r->len - skip;
		}
		return n;
	}
	for (k = 0; k < pf->nruns; k++) {
		const struct zcr_pf_run *run = &pf->runs[k];

		*total += run->len;
		if (skip >= run->len) {
			skip -= run->len;
			continue;
		}
		if (n < SEGS_MAX) {
			iov[n].iov_base = (void *)(r->sbuf + run->off + skip);
			iov[n++].iov_len = run->len - skip;
		}
		skip = 0;
	}
	return n;
}

/* Cut the segments iov[0, n) to at most max bytes; returns how many remain. */
static int segments_cut(struct iovec *iov, int n, uint64_t max)
{
	int i;

	for (i = 0; i < n; i++) {
		if (iov[i].iov_len >= max) {
			iov[i].iov_len = (size_t)max;
			return i + 1;
		}
		max -= iov[i].iov_len;
	}
	return n;
}

/*
 * How much of the left bytes of a message to ask the socket to take, with
 * room bytes of the budget left: all of them when the budget would leave
 * fewer than ZCR_TCP_TAIL behind. The budget counts the header: a message
 * of ZCR_TCP_PART bytes went out as ZCR_TCP_PART bytes and then a tail of
 * ZCR_WIRE_HDR_LEN in a sendmsg(2) of its own, which its receiver, with
 * all the rest in, waited for until the sender's next progress; a second
 * segment and a second wake-up on both sides for 32 bytes.
 */
static uint64_t tx_cut(uint64_t left, uint64_t room)
{
	return room >= left || left - room < ZCR_TCP_TAIL ? left : room;
}

/*
 * The socket's send buffer, what one pass of a waiting thread writes at
 * most: asked only once a pass has written ZCR_TCP_PART (small messages
 * pay no system call for it), and never below that.
 */
static uint64_t sndbuf(struct zcr_ep *ep)
{
	socklen_t sl = sizeof(int);
	int v = 0;

	if (getsockopt(T(ep)->fd, SOL_SOCKET, SO_SNDBUF, &v, &sl) < 0 ||
	    (uint64_t)v < ZCR_TCP_PART)
		return ZCR_TCP_PART;
	return (uint64_t)v;
}

/*
 * Write what the socket takes of ep's queue, budget bytes at most
 * (ZCR_TCP_SNDBUF: the socket's send buffer). Returns the messages
 * completed, plus one when the budget ran out with bytes left to write:
 * the caller has work, it should come back rather than sleep.
 */
int __zcr_tcp_push(struct zcr_ep *ep, uint64_t budget)
{
	uint64_t done = 0, limit = budget;
	bool grow = budget == ZCR_TCP_SNDBUF;
	int n = 0;

	if (T(ep)->hold)
		return 0;	/* negotiating: the path is not chosen yet */
	/* Held until the handshake is through (the core renumbers then). */
	while (ep->state == ZCR_EP_OPEN && !zcr_list_empty(&ep->sendq)) {
		struct zcr_req *r = zcr_container_of(ep->sendq.next,
						     struct zcr_req, link);
		struct iovec iov[SEGS_MAX + 4];
		struct msghdr mh;
		uint64_t total;
		ssize_t w;

		if (grow) {
			limit = ZCR_TCP_PART;
			if (done >= limit) {
				limit = sndbuf(ep);
				grow = false;
			}
		}
		if (done >= limit) {
			n++;
			break;
		}
		if (!r->sent && !r->ctl)
			encode_data(ep, r);
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = iov;
		mh.msg_iovlen = (size_t)segments(r, r->sent, iov, &total);
		mh.msg_iovlen = (size_t)segments_cut(iov, (int)mh.msg_iovlen,
						     tx_cut(total - r->sent,
							    limit - done));
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
		done += (uint64_t)w;
		if (r->sent == total) {
			zcr_list_del(&r->link);
			if (r->kind == ZCR_REQ_ACK) {
				__zcr_req_free_ctl(r);
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
	if (r->pf) {
		struct zcr_wire_hdr i = {
			.magic = ZCR_WIRE_MAGIC,
			.version = ZCR_WIRE_VERSION,
			.type = ZCR_WIRE_PF_INFO,
			.hdr_len = ZCR_WIRE_HDR_LEN,
			.src = ep->ctx->rank,
			.tag = (int32_t)r->pf->token,
			.len = r->pf->bmlen,
			.seq = r->pf->saddr,
		};

		__zcr_wire_encode(&i, r->pf->hdr);
	}
}

/*
 * Queue a prefetch frame of our own (PF_REQ, PF_DATA): its header (len
 * in it: hlen) and body (blen bytes, malloc'd, ours to free once sent;
 * NULL for none).
 */
int __zcr_tcp_ctl(struct zcr_ep *ep, int type, uint32_t tag, uint64_t seq,
		  uint64_t hlen, char *body, uint64_t blen)
{
	struct zcr_wire_hdr h = {
		.magic = ZCR_WIRE_MAGIC,
		.version = ZCR_WIRE_VERSION,
		.type = (uint8_t)type,
		.hdr_len = ZCR_WIRE_HDR_LEN,
		.src = ep->ctx->rank,
		.tag = (int32_t)tag,
		.len = hlen,
		.seq = seq,
	};
	struct zcr_req *r;

	if (T(ep)->wdead) {
		free(body);
		return T(ep)->wdead;
	}
	r = __zcr_ep_ctl_req(ep, body, blen);
	if (!r)
		return -ENOMEM;
	__zcr_wire_encode(&h, r->tx);
	zcr_list_add_tail(&r->link, &ep->sendq);
	__zcr_tcp_push(ep, ZCR_TCP_PART);
	return 0;
}

int __zcr_tcp_pf_ask(struct zcr_ep *ep, const struct zcr_pf_ask *a)
{
	return __zcr_tcp_ctl(ep, ZCR_WIRE_PF_REQ, a->token, a->saddr, a->slen,
			     NULL, 0);
}

int __zcr_tcp_send(struct zcr_ep *ep, struct zcr_req *r)
{
	if (T(ep)->wdead)
		return T(ep)->wdead;
	/* Large sends say where they come from; some leave pages out. */
	if (ep->pf && r->kind == ZCR_REQ_SEND)
		__zcr_pf_send_locked(ep, r);
	zcr_list_add_tail(&r->link, &ep->sendq);
	/*
	 * Start writing now: a small message usually leaves at once. Of a
	 * large one only the first ZCR_TCP_PART bytes: writing all the
	 * socket takes kept the sender in zcr_isend() for as long as the
	 * network needed to carry megabytes (MPI_Isend of FT's and IS's
	 * blocks across two emulated nodes at 10 Gbit/s: 0.2-0.3 s a rank
	 * more in starting than stock Open MPI). The rest goes from the
	 * progress thread while the application computes, or from its
	 * wait.
	 */
	__zcr_tcp_push(ep, ZCR_TCP_PART);
	return 0;
}
