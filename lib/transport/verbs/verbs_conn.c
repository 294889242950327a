// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * verbs_conn.c - the verbs transport's connection set-up: the TCP
 * connection of its own that carries the HELLO, the job secret's MAC and
 * the READY byte each way, the queue pair brought to RTS, and the
 * listener. The sockets, the listening rule and the handshake's secret
 * policy are every transport's (transport/sock.c, transport/auth.c).
 * The protocol is described in verbs.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "base/ctx.h"
#include "transport/auth.h"
#include "transport/sock.h"
#include "transport/transport.h"
#include "transport/verbs/verbs_priv.h"
#include "transport/wire.h"

/* ---- TCP set-up connection ---------------------------------------------- */

/*
 * The listener is TCP's, with its rule (transport/sock.c): without a job
 * secret, loopback only; a non-loopback address is refused with the same
 * error and message. The rule comes before the device: a refused address
 * is refused on any machine.
 */
int __zcr_verbs_listen(struct zcr_ctx *ctx, void *priv, const char *addr)
{
	struct vctx *vc = priv;
	int port, ret;

	port = __zcr_sock_listen(ctx, &vc->ls, addr);
	if (port < 0)
		return port;
	ret = __zcr_verbs_dev_open(vc);
	if (ret) {
		pthread_mutex_lock(&ctx->lock);
		__zcr_listener_close(&vc->ls);
		pthread_mutex_unlock(&ctx->lock);
		return ret;
	}
	return port;
}

/*
 * A new endpoint's verbs state: CQ with its channel, the RC QP in INIT,
 * the cells (registered), all receive cells posted; and our HELLO.
 */
static int vep_new(struct zcr_ctx *ctx, struct vctx *vc, int fd,
		   struct vep **out)
{
	struct ibv_qp_init_attr qi = { 0 };
	struct ibv_qp_attr qa = { 0 };
	struct vep *ve = calloc(1, sizeof(*ve));
	uint32_t i;
	int ret = -ENOMEM;

	if (!ve)
		return -ENOMEM;
	ve->vc = vc;
	ve->fd = fd;
	zcr_list_init(&ve->link);
	zcr_list_init(&ve->advs);
	zcr_list_init(&ve->padvs);
	ve->memlen = (size_t)(NRECV + NSEND) * CELL + BOUNCE;
	ve->mem = mmap(NULL, ve->memlen, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ve->mem == MAP_FAILED) {
		ve->mem = NULL;
		goto fail;
	}
	ve->mr = __zcr_verbs_reg(vc, ve->mem, ve->memlen,
				 IBV_ACCESS_LOCAL_WRITE);
	if (!ve->mr) {
		ret = errno ? -errno : -ENOMEM;
		vc->st.reg_failed++;
		goto fail;
	}
	ve->ch = ibv_create_comp_channel(vc->dev);
	if (!ve->ch)
		goto fail_errno;
	fcntl(ve->ch->fd, F_SETFL, fcntl(ve->ch->fd, F_GETFL) | O_NONBLOCK);
	ve->cq = ibv_create_cq(vc->dev, 2 * (NRECV + NSEND) + 64, ve, ve->ch,
			       0);
	if (!ve->cq)
		goto fail_errno;
	qi.send_cq = ve->cq;
	qi.recv_cq = ve->cq;
	qi.qp_type = IBV_QPT_RC;
	qi.cap.max_send_wr = NSEND + RD_OUT + DCRED;	/* + writes */
	qi.cap.max_recv_wr = NRECV;
	qi.cap.max_send_sge = 1;
	qi.cap.max_recv_sge = 1;
	ve->qp = ibv_create_qp(vc->pd, &qi);
	if (!ve->qp)
		goto fail_errno;
	qa.qp_state = IBV_QPS_INIT;
	qa.pkey_index = 0;
	qa.port_num = (uint8_t)vc->port;
	/* Writes reach only a buffer registered for them (an offer). */
	qa.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	ret = ibv_modify_qp(ve->qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret) {
		ret = -ret;
		goto fail;
	}
	for (i = 0; i < NRECV; i++) {
		struct ibv_sge sg = { (uintptr_t)rcell(ve, i), CELL,
				      ve->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = wrid(W_RECV, i),
					  .sg_list = &sg, .num_sge = 1 }, *bad;

		ret = ibv_post_recv(ve->qp, &wr, &bad);
		if (ret) {
			ret = -ret;
			goto fail;
		}
	}
	for (i = 0; i < NSEND; i++)
		ve->sfree[i] = NSEND - 1 - i;
	ve->nsfree = NSEND;
	ve->credits = DCRED;
	ve->mine.magic = VMAGIC;
	ve->mine.version = VVERSION;
	ve->mine.rank = ctx->rank;
	ve->mine.flags = ctx->secret_len ? ZCR_HELLO_AUTH : 0;
	ve->mine.max_msg = ctx->max_msg;
	if (__zcr_auth_nonce(&ve->mine.nonce)) {
		ret = -EIO;
		goto fail;
	}
	ve->mine.qpn = ve->qp->qp_num;
	ve->mine.psn = (uint32_t)(ve->mine.nonce & 0xffffff);
	memcpy(ve->mine.gid, vc->gid.raw, 16);
	ve->mine.lid = vc->pa.lid;
	ve->mine.mtu = (uint8_t)vc->pa.active_mtu;
	ve->mine.credits = DCRED;
	ve->mine.cell = CELL;
	ve->mine.feat = (vc->advert ? VFEAT_ADVERT : 0) |
			(ctx->pf ? VFEAT_PREFETCH : 0);
	*out = ve;
	return 0;
fail_errno:
	ret = errno ? -errno : -ENOMEM;
fail:
	ve->fd = -1;		/* the caller closes fd */
	__zcr_verbs_vep_release(ve);
	free(ve);
	return ret;
}

int __zcr_verbs_connect(struct zcr_ctx *ctx, void *priv, const char *addr,
			void **ep_priv)
{
	struct vctx *vc = priv;
	struct vep *ve;
	int fd, ret;

	ret = __zcr_verbs_dev_open(vc);
	if (ret)
		return ret;
	fd = __zcr_sock_dial(addr);
	if (fd < 0)
		return fd;
	pthread_mutex_lock(&ctx->lock);
	ret = vep_new(ctx, vc, fd, &ve);
	pthread_mutex_unlock(&ctx->lock);
	if (ret) {
		close(fd);
		return ret;
	}
	*ep_priv = ve;
	return 0;
}

/* Write all of a small handshake message (a fresh socket takes it). */
static int send_all(struct vep *ve, const void *p, size_t n)
{
	ssize_t w = send(ve->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (w == (ssize_t)n)
		return 0;
	return w < 0 ? -errno : -EAGAIN;
}

void __zcr_verbs_start(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	int ret;

	ve->ep = ep;
	zcr_list_add_tail(&ve->link, &ve->vc->eps);
	ve->vc->n++;
	__zcr_sock_peer_name(ep, ve->fd);
	snprintf(ep->errmsg, sizeof(ep->errmsg), "verbs");
	ret = send_all(ve, &ve->mine, sizeof(ve->mine));
	if (ret)
		__zcr_ep_fail_locked(ep, ret, "verbs: cannot send HELLO");
}

/* The peer's HELLO is in: QP to RTR and RTS. */
static int qp_connect(struct vep *ve)
{
	struct vctx *vc = ve->vc;
	struct ibv_qp_attr qa = { 0 };
	struct ibv_device_attr da;
	int rd = 4, ret;

	if (!ibv_query_device(vc->dev, &da) && da.max_qp_rd_atom < rd)
		rd = da.max_qp_rd_atom > 0 ? da.max_qp_rd_atom : 1;
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = ve->peer.mtu < ve->mine.mtu ? ve->peer.mtu :
		      ve->mine.mtu;
	qa.dest_qp_num = ve->peer.qpn;
	qa.rq_psn = ve->peer.psn & 0xffffff;
	qa.max_dest_rd_atomic = (uint8_t)rd;
	qa.min_rnr_timer = 12;
	qa.ah_attr.port_num = (uint8_t)vc->port;
	qa.ah_attr.dlid = ve->peer.lid;
	if (vc->pa.link_layer == IBV_LINK_LAYER_ETHERNET || !vc->pa.lid) {
		qa.ah_attr.is_global = 1;
		memcpy(qa.ah_attr.grh.dgid.raw, ve->peer.gid, 16);
		qa.ah_attr.grh.sgid_index = (uint8_t)vc->gidx;
		qa.ah_attr.grh.hop_limit = 64;
	}
	ret = ibv_modify_qp(ve->qp, &qa, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return -ret;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.timeout = 14;		/* 4.096 us * 2^14 = 67 ms */
	qa.retry_cnt = 7;
	qa.rnr_retry = 7;		/* infinite: flow control is credits */
	qa.sq_psn = ve->mine.psn;
	qa.max_rd_atomic = (uint8_t)rd;
	ret = ibv_modify_qp(ve->qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT |
			    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (ret)
		return -ret;
	ve->rts = true;
	return 0;
}

/* Our MAC: the job secret over both ranks and nonces (auth.c). */
static void mac_ours(struct vep *ve, uint8_t mac[ZCR_AUTH_MAC_LEN])
{
	struct zcr_ctx *ctx = ve->ep->ctx;

	__zcr_auth_mac(ctx, ctx->rank, ve->peer.rank, ve->peer.nonce,
		       ve->mine.nonce, mac);
}

/* One handshake step is complete in ve->in. false: the endpoint failed. */
static bool hs_step(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct zcr_ctx *ctx = ep->ctx;
	uint8_t mac[ZCR_AUTH_MAC_LEN];
	const char *bad = NULL;
	int ret;

	ve->got = 0;
	if (ve->stage == 0) {
		memcpy(&ve->peer, ve->in, sizeof(ve->peer));
		if (ve->peer.magic != VMAGIC)
			bad = "not a verbs HELLO";
		else if (ve->peer.version != VVERSION)
			bad = "unknown verbs version";
		else if (ve->peer.rank < 0)
			bad = "negative rank";
		else if (ve->peer.credits != DCRED || ve->peer.cell != CELL)
			bad = "other credits or cell size";
		else if (ve->peer.flags & ~(uint32_t)ZCR_HELLO_AUTH)
			bad = "unknown flags";
		if (bad) {
			__zcr_ep_fail_locked(ep, -EPROTO, "verbs: bad HELLO: %s",
					     bad);
			return false;
		}
		if (__zcr_auth_hello_check(ep, ve->peer.flags & ZCR_HELLO_AUTH,
					   ve->peer.rank))
			return false;
		ep->peer_max_msg = ve->peer.max_msg ? ve->peer.max_msg :
				   UINT64_MAX;
		ret = qp_connect(ve);
		if (ret) {
			__zcr_ep_fail_locked(ep, ret, "verbs: cannot connect "
					     "the queue pair");
			return false;
		}
		if (ctx->secret_len) {
			mac_ours(ve, mac);
			ve->stage = 1;
			ret = send_all(ve, mac, sizeof(mac));
		} else {
			ve->stage = 2;
			ret = send_all(ve, "R", 1);
		}
	} else if (ve->stage == 1) {
		if (__zcr_auth_check(ep, ve->peer.rank, ve->mine.nonce,
				     ve->peer.nonce, ve->in))
			return false;
		ve->stage = 2;
		ret = send_all(ve, "R", 1);
	} else {
		if (ve->in[0] != 'R') {
			__zcr_ep_fail_locked(ep, -EPROTO, "verbs: bad READY");
			return false;
		}
		ve->stage = 3;
		/*
		 * Unknown feature bits of a newer peer are not ours; an older
		 * peer, or one without it, never prefetches.
		 */
		ve->pf_ok = ve->mine.feat & ve->peer.feat & VFEAT_PREFETCH;
		if (ve->pf_ok && __zcr_pf_ep_init(ep)) {
			__zcr_ep_fail_locked(ep, -ENOMEM, "out of memory");
			return false;
		}
		if (__zcr_ep_open_locked(ep, ve->peer.rank))
			return false;
		ve->adv_ok = ve->mine.feat & ve->peer.feat & VFEAT_ADVERT;
		if (ve->adv_ok)
			__atomic_add_fetch(&ctx->offer_eps, 1,
					   __ATOMIC_RELAXED);
		return true;
	}
	if (ret) {
		__zcr_ep_fail_locked(ep, ret, "verbs: handshake send failed");
		return false;
	}
	return true;
}

/* Read the TCP connection: the handshake, then only its end. */
int __zcr_verbs_rx_sock(struct zcr_ep *ep)
{
	static const size_t need[3] = { HELLO_LEN, ZCR_AUTH_MAC_LEN, 1 };
	struct vep *ve = V(ep);
	ssize_t r;
	char b;

	while (ep->state != ZCR_EP_CLOSED) {
		if (ve->stage == 3) {
			if (ve->gone)
				return 0;
			r = recv(ve->fd, &b, 1, MSG_DONTWAIT);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				return 0;
			if (r > 0) {
				__zcr_ep_fail_locked(ep, -ECONNRESET, "verbs: "
						     "data on the set-up "
						     "connection");
				return 1;
			}
			/*
			 * Its end (or a reset): the peer closed the endpoint
			 * or exited. Not a failure yet: what it sent before
			 * is still to be read, as over TCP.
			 */
			ve->gone = "verbs: peer closed the connection";
			return 0;
		}
		r = recv(ve->fd, ve->in + ve->got, need[ve->stage] - ve->got,
			 MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (r <= 0) {
			__zcr_ep_fail_locked(ep, r ? -errno : -ECONNRESET,
					     "verbs: connection closed in the "
					     "handshake");
			return 1;
		}
		ve->got += (size_t)r;
		if (ve->got == need[ve->stage] && !hs_step(ep))
			return 1;
	}
	return 0;
}

/* A set-up connection accepted: its verbs state (sock.h, zcr_accept_fn). */
static int accept_one(struct zcr_ctx *ctx, void *arg, int fd, void **ep_priv)
{
	struct vep *ve;
	int ret = vep_new(ctx, arg, fd, &ve);

	if (!ret)
		*ep_priv = ve;
	return ret;
}

int __zcr_verbs_accept_all(struct zcr_ctx *ctx, struct vctx *vc)
{
	return __zcr_listener_accept(ctx, &vc->ls, &__zcr_transport_verbs,
				     accept_one, vc);
}

void __zcr_verbs_poll_done(struct zcr_ctx *ctx, void *priv,
			   const struct pollfd *pfd, unsigned int n)
{
	struct vctx *vc = priv;

	(void)ctx;
	__zcr_listener_poll_done(&vc->ls, pfd, n);
}
