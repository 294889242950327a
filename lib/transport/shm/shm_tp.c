// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shm_tp.c - the intra-node transport: an endpoint whose peer runs on this
 * host, handed over from TCP after the handshake (upgrade.c negotiates
 * it, carried by TCP).
 *
 * Each side reads its own ring and writes the peer's. A message of up to
 * one cell's payload travels inline (eager: copied in, copied out), as
 * does one of up to ZCRECV_SHM_FRAG_MAX bytes over several consecutive
 * cells when the peer takes that (its offer says so); a bigger one is
 * announced with its address in the sender (RTS) and the
 * receiver moves it in one copy with process_vm_readv(2), at the moment
 * match says where it goes: straight into the posted receive, or into a
 * staging slot at the page offset of the predicted buffer (remapped on a
 * hit, like any early message). The receiver consumes the RTS cell only
 * after the pull, and the sender's request completes when it sees the
 * ring's head pass that cell: the head is the acknowledgement, so no
 * message flows back. A message with nowhere to go yet (no posted receive,
 * staging full) stays unconsumed in the ring, which holds the sender back.
 *
 * A peer that exits is noticed by its pidfd (or a failing pull), one that
 * closes by the old connection's end: as over TCP, what it sent is read
 * on, and the endpoint fails when its ring is empty; then its mappings
 * and descriptors are released at once. A sender that closes revokes the
 * announcements not yet consumed, whose sends fail (settle_sends()).
 *
 * Files: this one keeps the context, the progress engine's side (progress,
 * the spin before sleeping, poll) and the end of an endpoint, with the
 * hand-off that makes one (adopt); shm_send.c and shm_recv.c the two
 * directions, shm_priv.h what they share; upgrade.c the negotiation TCP
 * carries to move a connection here, offer.c its offer, shm.c the rings
 * and the copies between processes.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/ctx.h"
#include "base/probe.h"
#include "match/match.h"
#include "prefetch/prefetch.h"
#include "transport/shm/shm.h"
#include "transport/shm/shm_priv.h"
#include "transport/transport.h"

#define SHM_SPINS_PER_YIELD	16
#define SHM_QUICK_YIELDS	6
#define SHM_YIELD_TAKEN_NS	(20 * 1000ULL)

static int shm_init(struct zcr_ctx *ctx, void **priv)
{
	struct shm_ctx *sc = calloc(1, sizeof(*sc));
	const struct zcr_env_val *env = ctx->env.v;

	if (!sc)
		return -ENOMEM;
	zcr_list_init(&sc->eps);
	/*
	 * The defaults are in base/config.c. ZCRECV_SHM_SPIN_MAX_US (5000):
	 * while the recent peak of waits for a peer is at most this long,
	 * waits are spun through (1.5 times the peak, up to this) rather
	 * than slept in poll(2): waking from poll costs 50-200 µs on some
	 * virtual machines, longer than the wait itself in a ping-pong of
	 * megabytes.
	 */
	sc->spin_ns = env[ZCR_ENV_SHM_SPIN_US].u * 1000;
	sc->spin_max_ns = env[ZCR_ENV_SHM_SPIN_MAX_US].u * 1000;
	/*
	 * ZCRECV_SHM_FRAG_MAX (32 KiB): messages up to this size travel
	 * eager over several cells (two copies, no pull) to a peer that
	 * takes it, up to ZCR_SHM_FRAG_CELLS cells. Above it the shared
	 * pull wins (from 64 KiB pulled messages took about two thirds of
	 * the eager time in zcbench; at 32 KiB the two ways split):
	 * Documentation/benchmarks.md, "Where eager ends".
	 */
	sc->frag_max = env[ZCR_ENV_SHM_FRAG_MAX].u;
	/*
	 * ZCRECV_SHM_SPLIT_MIN (32 KiB): pulls of at least this many bytes
	 * are shared with a sender that waits for them (shm.h, enum
	 * zcr_shm_help). Every pull above the eager limit: unshared, 48 KiB
	 * took 8.5-8.8 us in zcbench and 5.6 in NPopenmpi under
	 * libzcrecv-mpi, shared 5.9-6.0 and 3.9 (eager 8.3 and 3.7-3.9;
	 * benchmarks.md).
	 */
	sc->split_min = env[ZCR_ENV_SHM_SPLIT_MIN].u;
	*priv = sc;
	return 0;
}

static void shm_fini(struct zcr_ctx *ctx, void *priv)
{
	(void)ctx;
	free(priv);
}

static int shm_progress(struct zcr_ctx *ctx, void *priv)
{
	struct shm_ctx *sc = priv;
	struct zcr_list *pos, *tmp;
	/* The clock only every 64th pass: a spinning caller's passes are
	 * a few µs apart. */
	uint64_t now = ++sc->calls % 64 ? 0 : zcr_now_ns();
	int n = 0;

	(void)ctx;
	zcr_list_for_each_safe(pos, tmp, &sc->eps) {
		struct shm_ep *se = zcr_container_of(pos, struct shm_ep, link);
		struct zcr_ep *ep = se->ep;

		if (ep->state != ZCR_EP_OPEN)
			continue;
		if (now && !se->gone &&
		    now - se->end_checked >= SHM_END_CHECK_NS) {
			struct pollfd q[2] = {
				{ .fd = se->pidfd, .events = POLLIN },
				{ .fd = se->ctl_fd, .events = POLLIN },
			};

			se->end_checked = now;
			if (poll(q, 2, 0) > 0)
				__zcr_shm_peer_end(se, q[0].revents,
						   q[1].revents);
			if (ep->state != ZCR_EP_OPEN)
				continue;
		}
		if (se->sleeping && !sc->sleepers) {
			__zcr_shm_ring_sleep_end(&se->in);
			se->sleeping = false;
		}
		/* The common case of an idle connection, without a call. */
		if (!se->cell_open && !se->gone &&
		    atomic_load_explicit(&se->in.ctl->tail,
					 memory_order_acquire) == se->in.head)
			continue;
		ZCR_PROBE(ZCR_PP_RX);
		n += __zcr_shm_rx_ep(ep);
	}
	/*
	 * Sends complete after every endpoint was read: an answer found on
	 * one endpoint while our send to its sender, on another, is still
	 * to complete here is deferred (defer_rts), not staged.
	 */
	zcr_list_for_each_safe(pos, tmp, &sc->eps) {
		struct shm_ep *se = zcr_container_of(pos, struct shm_ep, link);
		struct zcr_ep *ep = se->ep;

		if (ep->state == ZCR_EP_OPEN && !zcr_list_empty(&ep->sendq))
			n += __zcr_shm_push_sends(ep, true);
	}
	if (n > 0)
		sc->passes++;
	return n;
}

static unsigned int shm_poll_max(struct zcr_ctx *ctx, void *priv)
{
	(void)ctx;
	return 3 * ((struct shm_ctx *)priv)->n;
}

/* Would progress find work on se now? Inline: it is the spin's look. */
static inline bool has_work(struct shm_ep *se)
{
	struct zcr_ep *ep = se->ep;
	uint64_t head;

	if (se->help_wait) {
		/* The sender writes a part of the open cell: its word. */
		if (__atomic_load_n(&se->live->status, __ATOMIC_SEQ_CST) !=
		    ZCR_SHM_HELP_TAKEN)
			return true;
		se->help_seen = zcr_now_ns();	/* still writing */
	} else if (ep->rx.state != ZCR_RX_STALLED &&
		   atomic_load(&se->in.ctl->tail) != se->in.head) {
		zcr_shm_ring_prefetch_head(&se->in);
		return true;
	}
	if (zcr_list_empty(&ep->sendq))
		return false;
	head = atomic_load(&se->out.ctl->head);
	return head != se->acked || offered(se, head);
}

/*
 * A send announced to a peer completes when the peer has pulled it, which
 * takes time in proportion to its length: keep looking for as long as the
 * pulls of our announced sends should take (at 2 bytes/ns, the slow end of
 * process_vm_readv), at most 20 ms, rather than sleep and be woken.
 */
static uint64_t pull_wait_ns(struct shm_ctx *sc)
{
	struct zcr_list *pos, *q;
	uint64_t bytes = 0;

	for (pos = sc->eps.next; pos != &sc->eps; pos = pos->next) {
		struct shm_ep *se = zcr_container_of(pos, struct shm_ep, link);

		if (se->ep->state != ZCR_EP_OPEN)
			continue;
		for (q = se->ep->sendq.next; q != &se->ep->sendq; q = q->next) {
			struct zcr_req *r = zcr_container_of(q, struct zcr_req,
							     link);

			if (r->sent)
				bytes += r->len;
		}
	}
	bytes /= 2;
	return bytes < 20000000 ? bytes : 20000000;
}

/*
 * A wait for a peer ended after ns. The peak of recent waits forgets an
 * eighth of itself per wait: the long wait of each round of a ping-pong
 * (the peer's whole turn) stays in it across the short ones between.
 */
static void wait_seen(struct shm_ctx *sc, uint64_t ns)
{
	uint64_t decayed = sc->wait_peak_ns - sc->wait_peak_ns / 8;

	sc->wait_peak_ns = ns > decayed ? ns : decayed;
}

/*
 * This thread's wait under way, if any: per thread, so that two threads
 * waiting on one context do not end each other's (the progress thread
 * has none). A wait begins when a first look found nothing.
 */
static __thread struct {
	const struct shm_ctx *sc;
	uint64_t t0;			/* ns; 0: none */
} cur_wait;

/* A look begins: a wait of ours still open ended without a peer's work
 * (a timeout, another transport): long, as far as spinning goes. */
static void wait_look(struct shm_ctx *sc)
{
	if (cur_wait.sc == sc && cur_wait.t0)
		wait_seen(sc, 2 * sc->spin_max_ns);
	cur_wait.t0 = 0;
}

static void wait_begin(struct shm_ctx *sc, uint64_t t0)
{
	cur_wait.sc = sc;
	cur_wait.t0 = t0;
}

/*
 * A peer's work ended our wait (if we had one). now: the clock as the
 * look last read it (at most SHM_SPINS_PER_YIELD looks ago), or 0 to
 * read it here (after a sleep). A look that finds the peer's message is
 * on the message's way to its receiver: no clock read there (22 ns here,
 * a tenth of one way of an 8-byte message); the length learnt is then
 * short by at most those looks, and only waits near ZCRECV_SHM_SPIN_US
 * (200 us) and beyond change how long the next look lasts.
 */
static void wait_end(struct shm_ctx *sc, uint64_t now)
{
	if (cur_wait.sc == sc && cur_wait.t0) {
		if (!now)
			now = zcr_now_ns();
		wait_seen(sc, now > cur_wait.t0 ? now - cur_wait.t0 : 0);
	}
	cur_wait.t0 = 0;
}

/* An open connection of ctx that shm does not look at while it spins. */
static bool other_transports(struct zcr_ctx *ctx)
{
	struct zcr_list *pos;

	for (pos = ctx->eps.next; pos != &ctx->eps; pos = pos->next) {
		struct zcr_ep *ep = zcr_container_of(pos, struct zcr_ep, link);

		if (ep->state != ZCR_EP_CLOSED &&
		    ep->tp != &__zcr_transport_shm)
			return true;
	}
	return false;
}

/*
 * How long to look at the rings before sleeping: ZCRECV_SHM_SPIN_US plus
 * the time our announced sends should take to be pulled, or 1.5 times
 * the peak of recent waits if that is longer, while the peak is short
 * (ZCRECV_SHM_SPIN_MAX_US) and no connection of another transport could need
 * us meanwhile.
 */
static uint64_t spin_for(struct zcr_ctx *ctx, struct shm_ctx *sc)
{
	uint64_t ns = sc->spin_ns + pull_wait_ns(sc), learned;

	if (sc->wait_peak_ns && sc->wait_peak_ns <= sc->spin_max_ns &&
	    !other_transports(ctx)) {
		learned = sc->wait_peak_ns + sc->wait_peak_ns / 2;
		if (learned > sc->spin_max_ns)
			learned = sc->spin_max_ns;
		if (learned > ns)
			ns = learned;
	}
	return ns;
}

/*
 * Yield the processor in a look before sleeping (unlocked), and learn
 * whether anyone wanted it. A yield that nobody takes is a system call
 * for nothing (half a microsecond here, as long as a small message's
 * whole round trip over shm), and a message that lands during it waits for it: after each quick
 * one the next comes after twice as many looks, up to SHM_QUICK_YIELDS
 * doublings; one that another thread took (more ranks than processors)
 * starts over at every SHM_SPINS_PER_YIELD looks.
 */
static bool yield_taken(uint64_t t0)
{
	sched_yield();
	return zcr_now_ns() - t0 >= SHM_YIELD_TAKEN_NS;
}

/* What the yield taught, under the context's lock again. */
static void yield_learn(struct shm_ctx *sc, bool taken)
{
	if (taken)
		sc->quick_yields = 0;
	else if (sc->quick_yields < SHM_QUICK_YIELDS)
		sc->quick_yields++;
}

static unsigned int shm_poll_fill(struct zcr_ctx *ctx, void *priv,
				  struct pollfd *pfd, unsigned int max,
				  uint64_t *deadline)
{
	struct shm_ctx *sc = priv;
	struct zcr_list *pos;
	unsigned int k = 0;
	uint64_t until = 0, now = 0;
	unsigned int spins;
	bool work = false, learn;

	if (!sc->n)
		return 0;
	/*
	 * A peer on this host usually answers within microseconds: look
	 * again for a while before sleeping (spin_for()), yielding the
	 * processor now and then, as the peer may be waiting for it (more
	 * ranks than cores); never past the caller's deadline. The progress
	 * thread sleeps at once, and its waits teach nothing.
	 */
	learn = sc->spin_ns && !__zcr_is_progress_thread(ctx);
	if (learn) {
		now = zcr_now_ns();
		wait_look(sc);
		until = now + spin_for(ctx, sc);
		if (until > *deadline)
			until = *deadline;
	}
	for (spins = 1;; spins++) {
		for (pos = sc->eps.next; pos != &sc->eps && !work;
		     pos = pos->next) {
			struct shm_ep *se = zcr_container_of(pos,
							     struct shm_ep,
							     link);

			work = se->ep->state == ZCR_EP_OPEN && has_work(se);
		}
		if (!work && spins == 1 && learn)
			wait_begin(sc, now);
		if (work || !until)
			break;
		/*
		 * sched_yield() is a system call (a few µs in some guests):
		 * between two, look a few times with only a pause, and
		 * more times while yields go untaken (yield_taken()). Around
		 * it the context is unlocked, so that the application's
		 * other threads are not held up by our look (nothing found
		 * under the lock is kept across: the next look starts over).
		 * The clock is read there too, not at every look: a look
		 * is well under a microsecond, and the clock cost as much.
		 */
		if (spins % SHM_SPINS_PER_YIELD) {
			cpu_relax();
		} else if ((now = zcr_now_ns()) >= until) {
			break;
		} else {
			uint64_t passes = sc->passes;
			bool yield = !((spins / SHM_SPINS_PER_YIELD) &
				       ((1u << sc->quick_yields) - 1));
			bool taken = false;

			pthread_mutex_unlock(&ctx->lock);
			if (yield)
				taken = yield_taken(now);
			pthread_mutex_lock(&ctx->lock);
			if (yield)
				yield_learn(sc, taken);
			/*
			 * Another thread did work meanwhile (perhaps what our
			 * caller waits for): back to it. Not a peer ending
			 * our wait: nothing to learn from it. No connection
			 * left: nothing to look at.
			 */
			if (sc->passes != passes || !sc->n) {
				cur_wait.t0 = 0;
				work = true;
				break;
			}
		}
	}
	if (work) {
		if (learn)
			ZCR_PROBE(ZCR_PP_DETECT);
		/* Found while looking: no sleep to announce, no poll. */
		wait_end(sc, now);
		*deadline = 0;
		return 0;
	}
	for (pos = sc->eps.next; pos != &sc->eps; pos = pos->next) {
		struct shm_ep *se = zcr_container_of(pos, struct shm_ep, link);

		if (se->ep->state != ZCR_EP_OPEN || se->gone || k + 3 > max)
			continue;
		/* Announce the sleep, then look once more (shm.c). */
		atomic_store(&se->in.ctl->sleeping, 1);
		se->sleeping = true;
		if (has_work(se))
			work = true;
		else if (se->help_wait)
			se->help_seen = 0;	/* until its doorbell rings */
		pfd[k].fd = se->in.evfd;
		pfd[k++].events = POLLIN;
		pfd[k].fd = se->pidfd;
		pfd[k++].events = POLLIN;
		pfd[k].fd = se->ctl_fd;
		pfd[k++].events = POLLIN;
	}
	if (work) {
		wait_end(sc, now);
		*deadline = 0;
	}
	if (k)
		sc->sleepers++;
	return k;
}

static void shm_poll_done(struct zcr_ctx *ctx, void *priv,
			  const struct pollfd *pfd, unsigned int n)
{
	struct shm_ctx *sc = priv;
	struct zcr_list *pos, *tmp;
	unsigned int k;

	(void)ctx;
	if (n)
		sc->sleepers--;
	for (k = 0; k + 3 <= n; k += 3)
		if (pfd[k].revents & POLLIN)	/* a doorbell rang */
			wait_end(sc, 0);
	for (k = 0; k + 3 <= n; k += 3) {
		zcr_list_for_each_safe(pos, tmp, &sc->eps) {
			struct shm_ep *se = zcr_container_of(pos,
							     struct shm_ep,
							     link);
			if (se->pidfd != pfd[k + 1].fd ||
			    se->in.evfd != pfd[k].fd ||
			    se->ep->state != ZCR_EP_OPEN)
				continue;
			if ((pfd[k].revents & POLLIN) && se->help_wait)
				se->help_seen = zcr_now_ns();
			/*
			 * Take the ring in: left readable (the announcement
			 * stays while another thread sleeps), it would end
			 * every poll at once. The pass that follows does what
			 * it rang for, and a request of another sleeper that
			 * it completes wakes that one (its own eventfd).
			 */
			if (pfd[k].revents & POLLIN)
				__zcr_shm_ring_drain(&se->in);
			__zcr_shm_peer_end(se, pfd[k + 1].revents,
					   pfd[k + 2].revents);
			break;
		}
	}
}

/*
 * The endpoint goes while the sender writes a part of the open cell's
 * copy: the receive completes (with an error) once we return, so let the
 * sender finish first, until it says so, exits, or the progress timeout
 * passes (a stopped sender: then it could still write later).
 */
static void help_drain(struct zcr_ep *ep, struct shm_ep *se)
{
	uint64_t end = zcr_now_ns() + ep->ctx->progress_timeout_ns;
	struct pollfd p = { .fd = se->pidfd, .events = POLLIN };

	while (__atomic_load_n(&se->live->status, __ATOMIC_SEQ_CST) ==
	       ZCR_SHM_HELP_TAKEN && zcr_now_ns() < end) {
		int r = poll(&p, 1, 1);

		/* A signal is no reason to stop waiting; an exit is. */
		if (r > 0 || (r < 0 && errno != EINTR))
			break;
	}
	se->help_wait = false;
}

static void shm_ep_close(struct zcr_ep *ep, void *ep_priv)
{
	struct shm_ep *se = ep_priv;

	if (!se)
		return;
	if (se->help_wait)
		help_drain(ep, se);
	__zcr_shm_settle_sends(ep);	/* before the caller fails the rest */
	__zcr_shm_ring_destroy(&se->in);
	__zcr_shm_ring_destroy(&se->out);
	if (se->pidfd >= 0)
		close(se->pidfd);
	if (se->ctl_fd >= 0)
		close(se->ctl_fd);
	se->pidfd = se->ctl_fd = -1;
	se->cell_open = false;
}

static void shm_ep_free(struct zcr_ep *ep, void *ep_priv)
{
	struct shm_ep *se = ep_priv;

	if (!se)
		return;
	shm_ep_close(ep, se);
	se->sc->n--;
	zcr_list_del(&se->link);
	free(se);
}

static void adopt_release(struct zcr_shm_adopt *a)
{
	__zcr_shm_ring_destroy(&a->in);
	__zcr_shm_ring_destroy(&a->out);
	if (a->pidfd >= 0)
		close(a->pidfd);
	if (a->ctl_fd >= 0)
		close(a->ctl_fd);
	a->pidfd = a->ctl_fd = -1;
}

static int shm_adopt(struct zcr_ep *ep, const struct zcr_transport_ops *prev,
		     void *prev_priv, void *arg)
{
	struct zcr_shm_adopt *a = arg;
	struct shm_ctx *sc = NULL;
	struct shm_ep *se;
	int i;

	for (i = 0; i < ep->ctx->ntr; i++)
		if (ep->ctx->tr[i].ops == &__zcr_transport_shm)
			sc = ep->ctx->tr[i].priv;
	se = sc ? calloc(1, sizeof(*se)) : NULL;
	if (!se) {
		adopt_release(a);
		return sc ? -ENOMEM : -ENOPROTOOPT;
	}
	se->ep = ep;
	se->sc = sc;
	se->in = a->in;
	se->out = a->out;
	se->peer = a->peer;
	se->pidfd = a->pidfd;
	se->ctl_fd = a->ctl_fd;
	se->frag_ok = a->frag;
	se->help_ok = a->help;
	se->help_share = ZCR_SHM_SHARE_ONE / 2;
	/*
	 * Prefetching negotiated over TCP goes on here only if the peer
	 * takes prefetch cells; an older one would close on them.
	 */
	if (!a->pf) {
		struct zcr_list *pos, *tmp;

		/* Sends planned on TCP meanwhile go whole. */
		zcr_list_for_each_safe(pos, tmp, &ep->sendq) {
			struct zcr_req *r = zcr_container_of(pos,
							     struct zcr_req,
							     link);

			free(r->pf);
			r->pf = NULL;
		}
		__zcr_pf_ep_fini(ep);
	} else
		__zcr_pf_ep_local(ep);
	se->acked = atomic_load(&se->out.ctl->head);
	memset(a, 0, sizeof(*a));
	a->in.memfd = a->in.evfd = a->out.memfd = a->out.evfd = -1;
	a->pidfd = a->ctl_fd = -1;
	zcr_list_add_tail(&se->link, &sc->eps);
	sc->n++;
	ep->tp_priv = se;
	/* The old connection's state is ours to release. */
	prev->ep_close(ep, prev_priv);
	prev->ep_free(ep, prev_priv);
	return 0;
}

ZCR_TRANSPORT(shm) = {
	.size = sizeof(struct zcr_transport_ops),
	.name = "shm",
	.scheme = NULL,		/* endpoints only by hand-off */
	.init = shm_init,
	.fini = shm_fini,
	/* No listen or connect: endpoints come only from a hand-off. */
	.poll_max = shm_poll_max,
	.poll_fill = shm_poll_fill,
	.poll_done = shm_poll_done,
	.progress = shm_progress,
	.send = __zcr_shm_send,
	.send_now = __zcr_shm_send_now,
	.ep_close = shm_ep_close,
	.ep_free = shm_ep_free,
	.adopt = shm_adopt,
	.pf_ask = __zcr_shm_pf_ask,
	.upgrade = &__zcr_shm_upgrade,
};
