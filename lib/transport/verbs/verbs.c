// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * verbs.c - the RDMA verbs transport: "verbs://HOST:PORT".
 *
 * Set-up: a TCP connection of the transport's own carries one 128-byte
 * HELLO each way (rank, max_msg, nonce, queue pair number, PSN, GID or
 * LID, MTU), the job secret's MAC when there is one, and a READY byte
 * once the reliable-connected QP is in RTS; no librdmacm. The TCP
 * connection stays open, unused, so that a peer that goes away is
 * noticed at once (like shm's control descriptor).
 *
 * Data: every message starts with a 64-byte header sent with IBV_WR_SEND
 * into one of the receive cells the peer keeps posted. Up to EAGER_MAX
 * bytes travel inline in that cell (eager); a bigger message is announced
 * (RTS: the sender's address and rkey) and the receiver pulls it with RDMA
 * READ at the moment match says where it goes: straight into a posted
 * receive, or into a staging slot at the page offset of the predicted
 * buffer. The receiver then answers FIN, which completes the send.
 *
 * Pinned pages are never exchanged: a staging slot is registered only for
 * the READ that fills it and deregistered before match is told the
 * payload is in, so the remap engine may exchange its pages afterwards,
 * and no rkey or lkey of the slot outlives the registration
 * (Documentation/verbs.md, "Pinned pages").
 *
 * Flow control: DCRED credits per direction for data messages (EAGER and
 * RTS), returned in every header and by CREDIT messages; FIN and CREDIT
 * messages use cells posted beyond the credits (see NRECV).
 *
 * End: a closing endpoint lets what it posted reach the peer, reads the
 * FINs that came, and destroys its QP before it closes the TCP
 * connection (quiesce()). The peer takes that connection's end as TCP's
 * end of stream: what arrived before it is delivered, in order, but for
 * announcements, which cannot be pulled any more (dropped: their sends
 * did not complete), and the endpoint fails when nothing is left
 * (gone_settle()).
 *
 * Files: this one keeps the context, the progress engine and the
 * teardown, and the ops table; verbs_dev.c the device and the
 * registration cache, verbs_conn.c the connection set-up, verbs_send.c
 * and verbs_recv.c the two directions; verbs_priv.h what they share.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "base/ctx.h"
#include "transport/transport.h"
#include "transport/verbs/verbs.h"
#include "transport/verbs/verbs_priv.h"

/* ---- context ------------------------------------------------------------ */

static int verbs_init(struct zcr_ctx *ctx, void **priv)
{
	struct vctx *vc = calloc(1, sizeof(*vc));
	const struct zcr_env_val *env = ctx->env.v;

	if (!vc)
		return -ENOMEM;
	zcr_list_init(&vc->eps);
	__zcr_listener_init(&vc->ls);
	pthread_mutex_init(&vc->dev_lock, NULL);
	/* The device is opened at the first listen or connect: keep these. */
	if (env[ZCR_ENV_VERBS_DEV].s)
		snprintf(vc->dev_name, sizeof(vc->dev_name), "%s",
			 env[ZCR_ENV_VERBS_DEV].s);
	vc->gid_want = env[ZCR_ENV_VERBS_GID].set ?
		       (int)env[ZCR_ENV_VERBS_GID].u : -1;
	vc->land_copy = env[ZCR_ENV_VERBS_LAND].u == 1;
	vc->cache_n = (unsigned int)env[ZCR_ENV_VERBS_REGCACHE].u;
	if (vc->cache_n) {
		vc->cache = calloc(vc->cache_n, sizeof(*vc->cache));
		if (!vc->cache)
			vc->cache_n = 0;
	}
	vc->print = env[ZCR_ENV_VERBS_STATS].u;
	vc->spin_ns = env[ZCR_ENV_VERBS_SPIN_US].u * 1000;
	vc->advert = env[ZCR_ENV_VERBS_ADVERT].u;
	*priv = vc;
	return 0;
}

static void print_stats(struct zcr_ctx *ctx, const struct zcr_verbs_stats *s)
{
	fprintf(stderr, "zcrecv-verbs: rank %d eager %llu rndv %llu "
		"direct_posted %llu direct_staged %llu bounced %llu "
		"bounce_bytes %llu regs %llu reg_ns %llu deregs %llu "
		"dereg_ns %llu reg_failed %llu cache_hits %llu adv_sent %llu "
		"adv_written %llu adv_other %llu adv_revoked %llu writes %llu\n",
		ctx->rank,
		(unsigned long long)s->eager, (unsigned long long)s->rndv,
		(unsigned long long)s->direct_posted,
		(unsigned long long)s->direct_staged,
		(unsigned long long)s->bounced,
		(unsigned long long)s->bounce_bytes,
		(unsigned long long)s->regs, (unsigned long long)s->reg_ns,
		(unsigned long long)s->deregs,
		(unsigned long long)s->dereg_ns,
		(unsigned long long)s->reg_failed,
		(unsigned long long)s->cache_hits,
		(unsigned long long)s->adv_sent,
		(unsigned long long)s->adv_written,
		(unsigned long long)s->adv_other,
		(unsigned long long)s->adv_revoked,
		(unsigned long long)s->writes);
}

static void verbs_fini(struct zcr_ctx *ctx, void *priv)
{
	struct vctx *vc = priv;
	unsigned int i;

	if (vc->print && vc->dev && !foreign(vc))
		print_stats(ctx, &vc->st);
	for (i = 0; i < vc->cache_n && !foreign(vc); i++)
		if (vc->cache[i].mr)
			ibv_dereg_mr(vc->cache[i].mr);
	for (i = 0; i < PIN_N && !foreign(vc); i++)
		if (vc->pins[i].mr)
			ibv_dereg_mr(vc->pins[i].mr);
	free(vc->cache);
	__zcr_listener_close(&vc->ls);
	if (vc->pd && !foreign(vc))
		ibv_dealloc_pd(vc->pd);
	if (vc->dev && !foreign(vc))
		ibv_close_device(vc->dev);
	pthread_mutex_destroy(&vc->dev_lock);
	free(vc);
}

static struct vctx *vctx_of(struct zcr_ctx *ctx)
{
	int i;

	for (i = 0; i < ctx->ntr; i++)
		if (ctx->tr[i].ops == &__zcr_transport_verbs)
			return ctx->tr[i].priv;
	return NULL;
}

int __zcr_verbs_stats(struct zcr_ctx *ctx, struct zcr_verbs_stats *vs)
{
	struct vctx *vc;
	int ret = -ENODEV;

	pthread_mutex_lock(&ctx->lock);
	vc = vctx_of(ctx);
	if (vc && vc->dev) {
		unsigned int i;

		*vs = vc->st;
		vs->live_pins = 0;
		for (i = 0; i < PIN_N; i++)
			vs->live_pins += vc->pins[i].mr != NULL;
		ret = 0;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

/* ---- progress engine ---- */

static int verbs_progress(struct zcr_ctx *ctx, void *priv)
{
	struct vctx *vc = priv;
	struct zcr_list *pos, *tmp;
	int n = __zcr_verbs_accept_all(ctx, vc);

	zcr_list_for_each_safe(pos, tmp, &vc->eps) {
		struct vep *ve = zcr_container_of(pos, struct vep, link);

		if (ve->ep->state != ZCR_EP_CLOSED)
			n += __zcr_verbs_ep_progress(ve->ep);
	}
	return n;
}

static unsigned int verbs_poll_max(struct zcr_ctx *ctx, void *priv)
{
	(void)ctx;
	return 1 + 2 * ((struct vctx *)priv)->n;
}

/* Would progress find work on ve without waiting? */
static bool has_work(struct vep *ve)
{
	struct zcr_ep *ep = ve->ep;

	if (ve->stage != 3)
		return false;
	if (ve->nstash)
		return true;
	/* Not while a pre-send is read: its completion wakes us. */
	if (ve->dq_n && !ve->rd.active && !ve->pull.active &&
	    (!ve->arriving || ep->rx.state == ZCR_RX_LANDING))
		return true;
	if (ve->nfin && ve->nsfree)
		return true;
	return !zcr_list_empty(&ep->sendq) && ve->credits && ve->nsfree;
}

static unsigned int verbs_poll_fill(struct zcr_ctx *ctx, void *priv,
				    struct pollfd *pfd, unsigned int max,
				    uint64_t *deadline)
{
	struct vctx *vc = priv;
	struct zcr_list *pos;
	unsigned int k;
	uint64_t until = 0;
	bool work = false;

	/*
	 * A peer's answer usually comes within microseconds: look at the
	 * completion queues for a while (ZCRECV_VERBS_SPIN_US, yielding the
	 * processor in between) before sleeping on their channels, unless
	 * we are the progress thread (ctx.h). Completions found are kept
	 * for progress.
	 */
	if (vc->spin_ns && vc->n && !__zcr_is_progress_thread(ctx)) {
		until = zcr_now_ns() + vc->spin_ns;
		if (until > *deadline)	/* the caller's, transport.h */
			until = *deadline;
	}
	while (until) {
		for (pos = vc->eps.next; pos != &vc->eps && !work;
		     pos = pos->next) {
			struct vep *ve = zcr_container_of(pos, struct vep,
							  link);

			if (ve->ep->state != ZCR_EP_OPEN || ve->stage != 3)
				continue;
			if (has_work(ve) || ve->nstash) {
				work = true;
				break;
			}
			ve->nstash = ibv_poll_cq(ve->cq, 16, ve->stash);
			if (ve->nstash < 0)
				ve->nstash = 0;
			work = ve->nstash > 0;
		}
		if (work || zcr_now_ns() >= until)
			break;
		sched_yield();
	}
	if (work)
		*deadline = 0;
	k = __zcr_listener_poll_fill(&vc->ls, pfd, max, deadline);
	for (pos = vc->eps.next; pos != &vc->eps; pos = pos->next) {
		struct vep *ve = zcr_container_of(pos, struct vep, link);

		if (ve->ep->state == ZCR_EP_CLOSED || k + 2 > max)
			continue;
		if (has_work(ve))
			*deadline = 0;
		/* Its end was read: it would wake every poll at once. */
		if (!ve->gone) {
			pfd[k].fd = ve->fd;
			pfd[k++].events = POLLIN;
		}
		pfd[k].fd = ve->ch->fd;
		pfd[k++].events = POLLIN;
	}
	return k;
}

/* ---- teardown ---- */

/* Stop the NIC first (destroy the QP), then drop what it could touch. */
void __zcr_verbs_vep_release(struct vep *ve)
{
	struct vctx *vc = ve->vc;

	if (foreign(vc)) {
		ve->qp = NULL;
		ve->cq = NULL;
		ve->ch = NULL;
		ve->mr = NULL;
		memset(&ve->rd, 0, sizeof(ve->rd));
	}
	if (ve->qp)
		ibv_destroy_qp(ve->qp);
	ve->qp = NULL;
	if (ve->rd.mr) {
		__zcr_verbs_cache_put(vc, ve->rd.mr, ve->rd.ce);
		if (ve->rd.staged && !ve->rd.ce)
			vc->st.live_slot_mrs--;
	}
	memset(&ve->rd, 0, sizeof(ve->rd));
	/* The QP is gone: no READ of ours or of the peer's is under way. */
	if (foreign(vc)) {
		ve->pf_mr = NULL;
		ve->pull.mr = NULL;
	}
	__zcr_verbs_pf_body_free(ve);
	if (ve->pull.mr)
		__zcr_verbs_dereg(vc, ve->pull.mr);
	free(ve->pull.buf);
	memset(&ve->pull, 0, sizeof(ve->pull));
	if (ve->cq)
		ibv_destroy_cq(ve->cq);
	ve->cq = NULL;
	if (ve->ch)
		ibv_destroy_comp_channel(ve->ch);
	ve->ch = NULL;
	if (ve->mr)
		__zcr_verbs_dereg(vc, ve->mr);
	ve->mr = NULL;
	if (ve->mem)
		munmap(ve->mem, ve->memlen);
	ve->mem = NULL;
	if (ve->fd >= 0)
		close(ve->fd);
	ve->fd = -1;
	ve->nstash = 0;
	free(ve->fins);
	ve->fins = NULL;
	ve->nfin = ve->fin_cap = 0;
}

/*
 * One completion of a closing endpoint: nothing is delivered any more,
 * but a FIN still completes its send (the peer has every byte of it).
 * *rq_done: a receive failed, which on a stopped QP means every receive
 * before it has completed.
 */
static void close_wc(struct zcr_ep *ep, const struct ibv_wc *wc,
		     bool *rq_done)
{
	struct vep *ve = V(ep);
	int kind = (int)(wc->wr_id >> 56);
	uint32_t i = (uint32_t)(wc->wr_id & 0xffffffffu);
	struct vhdr h;

	if (wc->status != IBV_WC_SUCCESS) {
		ve->broken = true;
		if (kind == W_RECV)
			*rq_done = true;
		return;
	}
	if (kind == W_SEND) {
		ve->sfree[ve->nsfree++] = i;
	} else if (kind == W_WRITE) {
		__zcr_verbs_write_done(ep);	/* the peer has it all */
	} else if (kind == W_RECV && wc->opcode == IBV_WC_RECV &&
		   wc->byte_len == HDR) {
		memcpy(&h, rcell(ve, i), HDR);
		if (h.type == T_FIN)
			__zcr_verbs_fin_send(ep, h.cookie);
		else if (h.type == T_PF_DONE && ve->pf_body &&
			 (uint32_t)h.tag == ve->pf_token)
			__zcr_verbs_pf_body_free(ve);
	}
}

/* Take what completed, poll_fill's look first; how many. */
static int close_drain(struct zcr_ep *ep, bool *rq_done)
{
	struct vep *ve = V(ep);
	struct ibv_wc wc[16];
	int n = ve->nstash, k, j;

	for (j = 0; j < ve->nstash; j++)
		close_wc(ep, &ve->stash[j], rq_done);
	ve->nstash = 0;
	while ((k = ibv_poll_cq(ve->cq, 16, wc)) > 0) {
		for (j = 0; j < k; j++)
			close_wc(ep, &wc[j], rq_done);
		n += k;
	}
	return n;
}

/*
 * Take completions until the close can go on: lingering, once every send
 * cell is back and no FIN waits (posting those queued as cells free up)
 * and the peer has READ the pre-send we answered with (it takes what we
 * sent after it only then), or a work request failed; else once a
 * receive was flushed. Sleeps on the CQ's channel, at most until @until;
 * lingering, the end of the set-up connection (the peer closed or
 * exited: nothing reaches it any more) ends the wait too.
 */
static void close_take(struct zcr_ep *ep, uint64_t until, bool linger,
		       bool *rq_done)
{
	struct vep *ve = V(ep);
	struct pollfd pfd[2];
	struct ibv_cq *cq;
	void *cctx;
	uint64_t t;

	for (;;) {
		if (linger && !ve->broken && __zcr_verbs_post_fins(ve))
			return;
		if (close_drain(ep, rq_done))
			continue;
		if (linger ? ve->broken || (ve->nsfree == NSEND && !ve->nfin &&
					    !ve->pf_body) :
		    *rq_done)
			return;
		/* Arm, then look once more: no completion slips by. */
		ibv_req_notify_cq(ve->cq, 0);
		if (close_drain(ep, rq_done))
			continue;
		t = now_ns();
		if (t >= until)
			return;
		memset(pfd, 0, sizeof(pfd));
		pfd[0].fd = ve->ch->fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = ve->fd;
		pfd[1].events = POLLIN;
		if (poll(pfd, linger ? 2 : 1,
			 (int)((until - t + 999999) / 1000000)) > 0 &&
		    pfd[1].revents)
			return;
		while (!ibv_get_cq_event(ve->ch, &cq, &cctx))
			ibv_ack_cq_events(cq, 1);
	}
}

/*
 * Before a closing endpoint destroys its QP. What we posted reaches the
 * peer first (an eager send completed when it was posted; a FIN tells
 * the peer its send is delivered). Then, with announced sends of ours
 * left, the QP is stopped (error state) and what it completed until then
 * is read: a FIN that arrived completes its send, as progress would
 * have. Without this, a send the peer had read in full failed, and eager
 * messages completed here could be lost on the way. Bounded by CLOSE_NS
 * and FLUSH_NS. Not for a peer that is gone: nothing reaches it, and
 * gone_settle() ended our sends.
 */
static void quiesce(struct zcr_ep *ep, struct vep *ve)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct zcr_list *pos;
	bool rq_done = false;

	if (ve->gone)
		return;
	close_take(ep, now_ns() + CLOSE_NS, true, &rq_done);
	for (pos = ep->sendq.next; pos != &ep->sendq; pos = pos->next)
		if (zcr_container_of(pos, struct zcr_req, link)->sent)
			break;
	if (pos == &ep->sendq)
		return;		/* no FIN is awaited */
	/* A QP we stop ourselves flushes the receives still posted. */
	if (!ve->broken && !ibv_modify_qp(ve->qp, &qa, IBV_QP_STATE))
		close_take(ep, now_ns() + FLUSH_NS, false, &rq_done);
	else
		close_drain(ep, &rq_done);
}

static void verbs_ep_close(struct zcr_ep *ep, void *ep_priv)
{
	struct vep *ve = ep_priv;
	struct zcr_list *pos;

	if (!ve)
		return;
	if (ep && ve->qp && ve->stage == 3 && !foreign(ve->vc))
		quiesce(ep, ve);
	if (ve->adv_ok) {
		ve->adv_ok = false;
		__atomic_sub_fetch(&ep->ctx->offer_eps, 1, __ATOMIC_RELAXED);
	}
	if (ve->qp && !foreign(ve->vc))
		ibv_destroy_qp(ve->qp);
	ve->qp = NULL;
	/* The NIC is stopped: no write into an offered buffer any more. */
	__zcr_verbs_advs_close(ep, ve);
	/* Announced sends: the peer can no longer pull them. */
	if (ep && !foreign(ve->vc)) {
		for (pos = ep->sendq.next; pos != &ep->sendq;
		     pos = pos->next) {
			struct zcr_req *r = zcr_container_of(pos,
							     struct zcr_req,
							     link);

			if (r->sent)
				__zcr_verbs_unannounce(ve, r);
		}
	}
	__zcr_verbs_vep_release(ve);
}

static void verbs_ep_free(struct zcr_ep *ep, void *ep_priv)
{
	struct vep *ve = ep_priv;

	if (!ve)
		return;
	verbs_ep_close(ep, ve);
	if (ve->ep) {
		ve->vc->n--;
		zcr_list_del(&ve->link);
	}
	free(ve);
}

ZCR_TRANSPORT(verbs) = {
	.size = sizeof(struct zcr_transport_ops),
	.name = "verbs",
	.scheme = "verbs",
	.init = verbs_init,
	.fini = verbs_fini,
	.listen = __zcr_verbs_listen,
	.connect = __zcr_verbs_connect,
	.start = __zcr_verbs_start,
	.poll_max = verbs_poll_max,
	.poll_fill = verbs_poll_fill,
	.poll_done = __zcr_verbs_poll_done,
	.progress = verbs_progress,
	.send = __zcr_verbs_send,
	.pf_ask = __zcr_verbs_pf_ask,
	.ep_close = verbs_ep_close,
	.ep_free = verbs_ep_free,
	.recv_offer = __zcr_verbs_recv_offer,
	.recv_cancel = __zcr_verbs_recv_cancel,
	.bind_put = __zcr_verbs_bind_put,
	.send_unbind = __zcr_verbs_send_unbind,
};
