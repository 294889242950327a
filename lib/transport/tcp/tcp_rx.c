// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tcp_rx.c - the TCP transport's receive state machine: a header, then
 * its payload straight into the landing place match gives (or, for a
 * control message, into the endpoint), read with recv(2) or a batch of
 * io_uring receives. Described in tcp.c.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#ifdef ZCR_HAVE_LIBURING
#include <liburing.h>
#endif

#include "base/ctx.h"
#include "match/match.h"
#include "prefetch/prefetch.h"
#include "transport/tcp/tcp_priv.h"
#include "transport/transport.h"
#include "transport/util.h"
#include "transport/wire.h"

/* The payload of the current message is in: tell match, await a header. */
static void finish_payload(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);

	/* Pre-sent pages left out of it are copied in first. */
	if (ep->pf)
		__zcr_pf_data_done_locked(ep, ep->rx.dst, ep->rx.room);
	te->runs = NULL;
	if (te->rx_t0) {
		uint64_t dt = zcr_now_ns() - te->rx_t0;

		te->rate = dt ? (uint64_t)((double)te->want * 1e9 / (double)dt) :
		      UINT64_MAX;
		te->rx_t0 = 0;
		te->ndefer = 0;
	}
	__zcr_match_payload_done_locked(ep->ctx, &ep->rx);
	te->have_hdr = false;
	te->hdr_got = 0;
	/* Ask for the stream's next message now, where that pays. */
	if (ep->pf) {
		struct zcr_pf_ask a;

		if (__zcr_pf_ask_next_locked(ep, &a) && ep->tp->pf_ask(ep, &a))
			__zcr_pf_asked_failed_locked(ep);
	}
}

/* A prefetch frame's body is in. */
static bool pf_frame_done(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);

	if (te->h.type == ZCR_WIRE_PF_DATA)
		__zcr_pf_presend_done_locked(ep);
	te->pf_body = NULL;
	te->pf_dst = NULL;
	te->runs = NULL;
	te->have_hdr = false;
	te->hdr_got = 0;
	return true;
}

/* A PF_INFO's or PF_DATA's bitmap is in: PF_DATA's pages follow. */
static bool pf_bitmap_done(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);

	te->pf_body = NULL;
	if (te->h.type != ZCR_WIRE_PF_DATA)
		return pf_frame_done(ep);
	if (__zcr_pf_presend_map_locked(ep, &te->pf_dst, &te->runs,
					&te->nruns)) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO, "pre-sent pages do not fit "
				     "their bitmap");
		return false;
	}
	te->run = 0;
	te->run_got = 0;
	return true;
}

/*
 * A prefetch frame's header (lib/prefetch; wire.h says what its fields
 * hold): only on a connection that negotiated it, from its peer, never
 * between a PF_INFO and its DATA.
 */
static bool rx_prefetch(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);
	uint32_t token = (uint32_t)te->h.tag;
	uint8_t *bm = NULL;
	char *dst = NULL;
	uint64_t len;
	int ret;

	te->pf_len = te->h.len;

	te->hdr_got = 0;
	if (!ep->pf || ep->state != ZCR_EP_OPEN || te->h.src != ep->rank ||
	    __zcr_pf_info_pending(ep)) {
		ret = -EPROTO;
		goto bad;
	}
	switch (te->h.type) {
	case ZCR_WIRE_PF_INFO:
		ret = __zcr_pf_info_locked(ep, token, te->h.seq, te->h.len,
					   &bm);
		break;
	case ZCR_WIRE_PF_REQ:
		ret = __zcr_pf_request_locked(ep, token, te->h.seq, te->h.len,
					      &dst, &len);
		/* Answered always, if only with nothing. */
		if (!ret)
			ret = __zcr_tcp_ctl(ep, ZCR_WIRE_PF_DATA, token,
					    te->h.seq, len, dst, len);
		if (ret && ret != -ENOMEM)
			return true;	/* cannot write: the reads go on */
		break;
	default:
		ret = __zcr_pf_presend_in_locked(ep, token, te->h.seq,
						 te->h.len, &bm);
		/* The bitmap first; its length is the pre-send's. */
		if (bm)
			te->pf_len = (te->h.len > 0 ?
				      __zcr_pf_presend_bmlen(ep) : 0);
		break;
	}
	if (ret)
		goto bad;
	if (bm) {
		te->pf_body = (char *)bm;
		te->have_hdr = true;
		te->got = 0;
	}
	return true;
bad:
	if (ret == -ENOMEM) {
		__zcr_ep_fail_locked(ep, ret, "out of memory");
		return false;
	}
	ep->ctx->st.bad_headers++;
	__zcr_ep_fail_locked(ep, -EPROTO, "prefetch message out of protocol "
			     "(type %d)", te->h.type);
	return false;
}

/*
 * The receive state machine in two halves, so that plain recv(2) and a
 * batch of io_uring receives drive it alike: rx_target() says where the
 * next bytes go (0: nothing to read now), rx_done() accounts for what a
 * receive returned and says whether to read on.
 */
static char rx_discard[65536];

static size_t rx_target(struct zcr_ep *ep, char **p)
{
	struct tcp_ep *te = T(ep);
	uint64_t left, off;

	if (ep->state == ZCR_EP_CLOSED || !is_tcp(ep))
		return 0;
	if (te->ctl_rx) {
		*p = (char *)te->body + te->got;
		return te->h.len - te->got;
	}
	if (te->pf_body) {
		*p = te->pf_body + te->got;
		return te->pf_len - te->got;
	}
	if (te->pf_dst) {
		*p = te->pf_dst + te->runs[te->run].off + te->run_got;
		return te->runs[te->run].len - te->run_got;
	}
	if (te->have_hdr && ep->rx.state != ZCR_RX_LANDING)
		return 0;	/* stalled: match finds room first */
	/* Complete: a message with no payload, or one just unstalled. */
	if (te->have_hdr && te->got == te->want)
		finish_payload(ep);
	if (!te->have_hdr) {
		*p = (char *)te->hdr + te->hdr_got;
		return ZCR_WIRE_HDR_LEN - te->hdr_got;
	}
	/* Where the next wire bytes belong in the message. */
	if (te->runs) {
		off = te->runs[te->run].off + te->run_got;
		left = te->runs[te->run].len - te->run_got;
	} else {
		off = te->got;
		left = te->want - te->got;
	}
	if (off < ep->rx.room) {
		*p = ep->rx.dst + off;
		return left < ep->rx.room - off ? left : ep->rx.room - off;
	}
	/* The part of a truncated message that does not fit the buffer. */
	*p = rx_discard;
	return left < sizeof(rx_discard) ? left : sizeof(rx_discard);
}


/*
 * May a large payload with no receive posted wait in the socket for one
 * (match.h, ZCR_DEFER_ANY)? Staged, it is read out of the socket while
 * the rank computes, by the progress thread on the rank's own processor
 * or by whichever call of the rank comes first. Where the network is
 * slow, that is the point: the network keeps working while the rank
 * computes, and a payload left in the socket would stop the sender (IS
 * across two emulated nodes at 1 Gbit/s under the copy policy took 1.13x
 * stock Open MPI's time when every large early payload was deferred).
 * Where it delivers faster than that overlap can use, the read only takes
 * processor time from the computation (IS and FT at 10 Gbit/s: 5-14%
 * slower than stock Open MPI, a rank computing 0.035-0.041 s longer),
 * and the payload comes as fast once its receive is posted. So the
 * connection's own rate decides: a payload of ZCR_TCP_DEFER_LEN or more
 * read as it came is timed from its header to its last byte; while the
 * last one timed came at the rate ZCRECV_TCP_DEFER_RATE or faster, large
 * early payloads are deferred, all but every ZCR_TCP_DEFER_PROBE-th,
 * which is staged and timed again (the network's rate may change).
 * Across the emulated nodes IS's 8 MiB payloads came at 84-133 MB/s at 1
 * Gbit/s and 259-6977 MB/s at 10 Gbit/s.
 */
static int rx_may_defer(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);

	if (!te->tc->defer_rate || te->h.len < ZCR_TCP_DEFER_LEN || ep->pf ||
	    te->rate < te->tc->defer_rate ||
	    te->ndefer + 1 >= ZCR_TCP_DEFER_PROBE)
		return 0;
	return ZCR_DEFER_ANY;
}

/* A header is complete: validate it and ask match where its payload goes. */
static bool rx_header(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);
	const char *why;
	uint64_t mask;
	bool sync;
	int ret;

	ret = __zcr_wire_parse(te->hdr, ep->ctx->max_msg, &te->h, &why);
	if (ret) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, ret, "malformed header: %s", why);
		return false;
	}
	if (te->h.type == ZCR_WIRE_ACK && ep->state == ZCR_EP_OPEN &&
	    ep->sync_ok && te->h.src == ep->rank) {
		te->hdr_got = 0;
		__zcr_ep_acked_locked(ep, te->h.seq);
		return ep->state == ZCR_EP_OPEN;
	}
	if (te->h.type >= ZCR_WIRE_PF_INFO && te->h.type <= ZCR_WIRE_PF_DATA)
		return rx_prefetch(ep);
	if (te->h.type != ZCR_WIRE_DATA)
		return __zcr_tcp_rx_control(ep);
	mask = ep->sync_ok ? ZCR_SEQ_MASK_SYNC : ep->comm_ok ? ZCR_SEQ_MASK :
	       UINT64_MAX;
	if (ep->state != ZCR_EP_OPEN || te->h.src != ep->rank ||
	    (te->h.seq & mask) != ((ep->recv_seq + 1) & mask)) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO,
				     "header out of protocol (src %d, seq %llu)",
				     te->h.src, (unsigned long long)te->h.seq);
		return false;
	}
	ep->recv_seq++;
	te->have_hdr = true;
	te->got = 0;
	te->want = te->h.len;
	te->runs = NULL;
	if (ep->pf) {
		ret = __zcr_pf_data_locked(ep, ep->comm_ok ?
					   (uint32_t)(te->h.seq >> 32) : 0,
					   te->h.tag, te->h.len, &te->runs,
					   &te->nruns, &te->want);
		if (ret) {
			ep->ctx->st.bad_headers++;
			__zcr_ep_fail_locked(ep, ret, "a message's pages left "
					     "out do not fit its pre-send");
			return false;
		}
		te->run = 0;
		te->run_got = 0;
	}
	sync = ep->sync_ok && (te->h.seq & ZCR_SEQ_SYNC);
	/* -EAGAIN: stalled; rx_target() reads nothing until it lands. */
	__zcr_match_arrive_defer_locked(ep->ctx, &ep->rx, ep->comm_ok ?
					(uint32_t)(te->h.seq >> 32) : 0,
					te->h.src, te->h.tag, te->h.len,
					sync ? ep->recv_seq : 0,
					rx_may_defer(ep));
	if (ep->rx.deferred)
		te->ndefer++;
	/* Read as it comes (not stalled): timed. */
	te->rx_t0 = ep->rx.state == ZCR_RX_LANDING &&
		    te->want >= ZCR_TCP_DEFER_LEN ? zcr_now_ns() : 0;
	/* Nothing on the wire to wait for: complete it now. */
	if (ep->rx.state == ZCR_RX_LANDING && te->want == 0)
		finish_payload(ep);
	return true;
}

static bool rx_done(struct zcr_ep *ep, long r)
{
	struct tcp_ep *te = T(ep);

	if (ep->state == ZCR_EP_CLOSED)
		return false;
	if (r == -EAGAIN || r == -EWOULDBLOCK || r == -EINTR)
		return false;
	if (r == 0) {
		__zcr_ep_fail_locked(ep, -ECONNRESET,
				     te->have_hdr || te->hdr_got ?
				     "peer closed the connection mid-message" :
				     "peer closed the connection");
		return false;
	}
	if (r < 0) {
		__zcr_ep_fail_locked(ep, (int)r, "receive failed");
		return false;
	}
	te->watch.total += (uint64_t)r;
	if (!te->have_hdr) {
		te->hdr_got += (size_t)r;
		if (te->hdr_got < ZCR_WIRE_HDR_LEN)
			return true;
		return rx_header(ep);
	}
	te->got += (uint64_t)r;
	if (te->ctl_rx)
		return te->got < te->h.len || __zcr_tcp_rx_body(ep);
	if (te->pf_body)
		return te->got < te->pf_len || pf_bitmap_done(ep);
	if (te->pf_dst) {
		te->run_got += (uint64_t)r;
		if (te->run_got < te->runs[te->run].len)
			return true;
		te->run_got = 0;
		return ++te->run < te->nruns || pf_frame_done(ep);
	}
	if (te->runs) {
		te->run_got += (uint64_t)r;
		if (te->run_got == te->runs[te->run].len &&
		    te->run + 1 < te->nruns) {
			te->run++;
			te->run_got = 0;
		}
	}
	if (te->got == te->want)
		finish_payload(ep);
	return true;
}

/*
 * Read ahead into te->ra rather than straight where the bytes belong?
 * Only for a header or a payload shorter than the buffer, on an open
 * connection with no upgrade under way (what follows the negotiation on
 * the socket is the new transport's, not ours to take).
 */
static bool ra_use(struct zcr_ep *ep, size_t want)
{
	struct tcp_ep *te = T(ep);

	if (want >= ZCR_TCP_RA_LEN || ep->state != ZCR_EP_OPEN || te->hold ||
	    te->up || te->ctl_rx)
		return false;
	if (!te->ra)
		te->ra = malloc(ZCR_TCP_RA_LEN);
	return te->ra != NULL;
}

/*
 * Hand the read-ahead bytes to the state machine. False when it stopped
 * with bytes left (the message is stalled or the connection ended): they
 * wait in te->ra for the next call.
 */
static bool ra_feed(struct zcr_ep *ep, int *fed)
{
	struct tcp_ep *te = T(ep);

	while (tcp_ra_left(te)) {
		uint32_t n;
		size_t len;
		char *p;

		len = rx_target(ep, &p);
		if (!len)
			return false;
		n = len < tcp_ra_left(te) ? (uint32_t)len : tcp_ra_left(te);
		memcpy(p, te->ra + te->ra_off, n);
		te->ra_off += n;
		(*fed)++;	/* progress: the caller must not sleep */
		if (!rx_done(ep, n))
			return false;
	}
	return true;
}

/*
 * Read what is there with recv(2), budget bytes at most (UINT64_MAX: no
 * limit); returns how many reads moved data. A read that returns less
 * than it asked for drained the socket: the next bytes are poll's to
 * announce, not another recv's to fail on.
 */
int __zcr_tcp_read_ep(struct zcr_ep *ep, uint64_t budget)
{
	struct tcp_ep *te = T(ep);
	uint64_t got = 0;
	bool ahead;
	size_t len;
	int n = 0;
	char *p;

	if (is_tcp(ep) && !ra_feed(ep, &n))
		return n;
	while (got < budget && (len = rx_target(ep, &p)) > 0) {
		ssize_t r;

		ahead = ra_use(ep, len);
		if (ahead) {
			p = te->ra;
			len = ZCR_TCP_RA_LEN;
		} else if (len > budget - got) {
			len = (size_t)(budget - got);
		}
		r = recv(te->fd, p, len, 0);
		if (r > 0) {
			n++;
			got += (uint64_t)r;
		}
		if (ahead && r > 0) {
			te->ra_off = 0;
			te->ra_len = (uint32_t)r;
			if (!ra_feed(ep, &n))
				break;
		} else if (!rx_done(ep, r < 0 ? -errno : (long)r)) {
			break;
		}
		if ((size_t)r < len)
			break;
	}
	return n;
}

#ifdef ZCR_HAVE_LIBURING
/*
 * One io_uring submission carries a nonblocking receive for every
 * connection that can take data, instead of one recv(2) per connection;
 * with many peers most of them idle, that is one system call rather than
 * many. The connections that got data are then drained with recv(2).
 */
int __zcr_tcp_read_batch(struct zcr_ctx *ctx, struct io_uring *ring,
			  uint64_t budget)
{
	struct zcr_list *pos;
	struct io_uring_cqe *cqe;
	unsigned int queued = 0, i;
	int n = 0, res;

	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);
		struct io_uring_sqe *sqe;
		size_t len;
		char *p;

		if (is_tcp(ep) && tcp_ra_left(T(ep))) {
			/* Bytes read ahead go first. */
			n += __zcr_tcp_read_ep(ep, budget);
			continue;
		}
		len = rx_target(ep, &p);
		if (!len)
			continue;
		sqe = io_uring_get_sqe(ring);
		if (!sqe) {
			n += __zcr_tcp_read_ep(ep, budget); /* ring full */
			continue;
		}
		T(ep)->ra_ring = ra_use(ep, len);
		if (T(ep)->ra_ring) {
			p = T(ep)->ra;
			len = ZCR_TCP_RA_LEN;
		} else if (len > budget) {
			len = (size_t)budget;
		}
		io_uring_prep_recv(sqe, T(ep)->fd, p, len, MSG_DONTWAIT);
		io_uring_sqe_set_data(sqe, ep);
		queued++;
	}
	if (!queued)
		return n;
	if (io_uring_submit_and_wait(ring, queued) < 0)
		return -1;
	for (i = 0; i < queued; i++) {
		struct zcr_ep *ep;

		if (io_uring_wait_cqe(ring, &cqe) < 0)
			return -1;
		ep = io_uring_cqe_get_data(cqe);
		res = cqe->res;
		io_uring_cqe_seen(ring, cqe);
		if (res > 0)
			n++;
		if (T(ep)->ra_ring && res > 0) {
			/* Read ahead: fed; a full buffer leaves more. */
			T(ep)->ra_ring = false;
			T(ep)->ra_off = 0;
			T(ep)->ra_len = (uint32_t)res;
			if (ra_feed(ep, &n) && res == ZCR_TCP_RA_LEN)
				n += __zcr_tcp_read_ep(ep, budget -
						       (uint64_t)res);
			continue;
		}
		T(ep)->ra_ring = false;
		/* Bytes that arrived are in place; the rest by recv(2). */
		if (rx_done(ep, res) && res > 0 && (uint64_t)res < budget)
			n += __zcr_tcp_read_ep(ep, budget - (uint64_t)res);
	}
	return n;
}
#endif
