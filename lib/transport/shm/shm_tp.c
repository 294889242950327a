// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * shm_tp.c - the intra-node transport: an endpoint whose peer runs on this
 * host, handed over from TCP after the handshake (tcp.c offers it).
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
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/ctx.h"
#include "match/match.h"
#include "transport/shm/shm.h"
#include "transport/transport.h"

#define SHM_SPINS_PER_YIELD	16
/*
 * An announced message with no receive posted for it, while our own
 * announced send to that peer has not completed here yet: the
 * application is most likely about to see that send complete and post
 * the receive (a ping-pong's answer overtaking the sender's return from
 * its send). Leave it unread for up to this long rather than pull it
 * into staging and copy it a second time.
 */
#define SHM_DEFER_NS		(100 * 1000ULL)
/*
 * A peer's exit or close is seen when progress sleeps in poll(2); one
 * that never sleeps (timeout 0, a spinning application) looks at the
 * pidfd and the control connection this often instead.
 */
#define SHM_END_CHECK_NS	(10 * 1000 * 1000ULL)

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#else
	__asm__ volatile("" ::: "memory");
#endif
}

struct shm_ctx {
	struct zcr_list eps;		/* struct shm_ep */
	unsigned int n;
	uint64_t spin_ns;		/* busy-wait before sleeping */
	uint64_t spin_max_ns;		/* longest learned busy-wait */
	uint64_t wait_peak_ns;		/* longest recent wait for a peer */
	uint64_t passes;		/* of shm_progress() that did work */
	/*
	 * Threads between announcing sleep (poll_fill) and poll_done: while
	 * any, the announcements stay (another thread's pass may not end
	 * them under a sleeper, whom the peer would then not wake).
	 */
	unsigned int sleepers;
	uint64_t frag_max;		/* eager over several cells up to */
	uint64_t split_min;		/* share pulls of this many bytes */
	unsigned int calls;		/* of shm_progress(): clock looks */
};

struct shm_ep {
	struct zcr_list link;		/* on sc->eps */
	struct shm_ctx *sc;
	struct zcr_ep *ep;
	struct zcr_shm_ring in, out;
	pid_t peer;
	int pidfd;
	int ctl_fd;
	bool cell_open;			/* in's head cell is ep->rx */
	struct zcr_shm_cell cur;	/* its header, copied out */
	struct zcr_shm_cell *live;	/* and the cell itself, shared */
	bool sleeping;
	bool frag_ok;			/* the peer takes multi-cell eager */
	bool help_ok;			/* and parts of our pulls */
	/* The open cell's first part is the sender's to write (TAKEN). */
	bool help_wait;
	int help_ret;			/* how our own part went */
	uint64_t help_part;		/* its length, at ep->rx.dst */
	unsigned int help_share;	/* the sender's, of the next one */
	uint64_t help_t0;		/* ns: offered (0: nothing to learn) */
	uint64_t help_seen;		/* ns: last saw it TAKEN (0: asleep) */
	uint64_t help_own, help_own_ns;	/* our own part: bytes, ns */
	uint64_t defer_head;		/* in.head + 1 of the cell deferred */
	uint64_t defer_until;		/* ns: then it is read anyway */
	uint64_t acked;			/* out's head as last seen */
	/*
	 * The peer closed the connection or exited: why. What it left in
	 * our ring is still read (it sent it), but for announcements
	 * (nothing to pull from: dropped); the endpoint fails once the ring
	 * is empty.
	 */
	const char *gone;
	uint64_t end_checked;		/* ns: last look without poll(2) */
};

static inline struct shm_ep *S(struct zcr_ep *ep)
{
	return ep->tp_priv;
}

/* Ring index of an announced (RTS) send, kept in the request. */
static void set_idx(struct zcr_req *r, uint64_t i)
{
	memcpy(r->tx, &i, sizeof(i));
}

static uint64_t get_idx(const struct zcr_req *r)
{
	uint64_t i;

	memcpy(&i, r->tx, sizeof(i));
	return i;
}

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
	 * pull wins: on the host of 2026-11-26 (Documentation/benchmarks.md,
	 * "Where eager ends"), 64 KiB 6.5-6.9 us pulled against 9.4-10.1
	 * eager in zcbench and level in NPopenmpi under libzcrecv-mpi, 128
	 * KiB 9-10 against 16 and 12 against 17; at 32 KiB the two ways
	 * split (zcbench 4.9-5.1 pulled against 6.4, NPopenmpi 6.4-6.7
	 * against 5.7-5.8).
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

/* Endpoints come only from a hand-off: nothing to listen on or dial. */
static int shm_listen(struct zcr_ctx *ctx, void *priv, const char *addr)
{
	(void)ctx;
	(void)priv;
	(void)addr;
	return -EOPNOTSUPP;
}

static int shm_connect(struct zcr_ctx *ctx, void *priv, const char *addr,
		       void **ep_priv)
{
	(void)ctx;
	(void)priv;
	(void)addr;
	(void)ep_priv;
	return -EOPNOTSUPP;
}

static void kick_peer(struct shm_ep *se)
{
	uint64_t one = 1;

	/*
	 * Our store (a head, a status word) before our look at the peer's
	 * flag: the peer stores its flag, then looks at ours (shm.c); without
	 * the fence both could read the old values, and it sleeps on work
	 * that is done.
	 */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load(&se->out.ctl->sleeping) &&
	    write(se->out.evfd, &one, sizeof(one)) < 0) {
		/* Saturated: a wake-up is pending anyway. */
	}
}

/* The cell at ring index head (the one the peer reads now) if it holds
 * an offer of part of its copy (shm.h), else NULL. */
static struct zcr_shm_cell *offer_at(struct shm_ep *se, uint64_t head)
{
	struct zcr_shm_cell *c;

	if (head == se->out.tail || se->out.tail - head > se->out.ncell)
		return NULL;
	c = __zcr_shm_ring_cell(&se->out, head);
	return __atomic_load_n(&c->status, __ATOMIC_ACQUIRE) ==
	       ZCR_SHM_HELP_OFFERED ? c : NULL;
}

/* An offer at head in the cell of one of our announced sends? (An offer
 * in any other cell is ignored.) */
static bool offered(struct shm_ep *se, uint64_t head)
{
	struct zcr_list *pos;

	if (!offer_at(se, head))
		return false;
	for (pos = se->ep->sendq.next; pos != &se->ep->sendq;
	     pos = pos->next) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		if (r->kind != ZCR_REQ_ACK && r->sent && get_idx(r) == head)
			return true;
	}
	return false;
}

/*
 * The peer is pulling our announced send r (cell c) and offers us the
 * first part: write it into the peer ourselves while it pulls the rest.
 */
static void help_pull(struct shm_ep *se, struct zcr_req *r,
		      struct zcr_shm_cell *c)
{
	struct pollfd p = { .fd = se->pidfd, .events = POLLIN };
	int32_t st = ZCR_SHM_HELP_OFFERED;
	uint64_t dst, part;
	int ret;

	if (!__atomic_compare_exchange_n(&c->status, &st, ZCR_SHM_HELP_TAKEN,
					 false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;			/* withdrawn meanwhile */
	dst = __atomic_load_n(&c->cookie, __ATOMIC_RELAXED);
	part = __atomic_load_n(&c->pad[0], __ATOMIC_RELAXED);
	/*
	 * Never more than the message: the rest of our memory is ours. The
	 * write goes to a pid: not to a dead receiver's, which the system
	 * may have given to another process.
	 */
	ret = !part || part >= r->len ? -EINVAL :
	      poll(&p, 1, 0) != 0 ? -ESRCH :
	      __zcr_shm_push(se->peer, dst, r->sbuf, part);
	/* Sequentially consistent: the receiver may be about to sleep. */
	__atomic_store_n(&c->status, ret ? ZCR_SHM_HELP_FAILED :
			 ZCR_SHM_HELP_DONE, __ATOMIC_SEQ_CST);
	kick_peer(se);
	if (!ret)
		se->ep->ctx->st.bytes_pushed += part;
}

/* Write send r's header (and, eager, its payload) into its cells c. */
static void fill_cells(struct shm_ep *se, struct zcr_shm_cell *c,
		       struct zcr_req *r, bool eager)
{
	memset(c, 0, sizeof(*c));
	c->type = eager ? ZCR_SHM_EAGER : ZCR_SHM_RTS;
	c->src = se->ep->ctx->rank;
	c->tag = r->st.tag;
	c->len = r->len;
	c->seq = r->seq;
	c->pad[0] = r->comm;	/* 0 for an old peer */
	c->flags = r->sync ? ZCR_SHM_F_SYNC : 0;
	c->addr = (uintptr_t)r->sbuf;
	if (eager && r->len)
		__zcr_shm_ring_put(&se->out, r->sbuf, r->len);
}

/*
 * Announce what fits into the peer's ring, in order, and complete what
 * the peer has consumed. Returns the number of sends completed.
 */
static int push_sends(struct zcr_ep *ep, bool help)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct shm_ep *se = S(ep);
	struct zcr_list *pos, *tmp;
	uint64_t head;
	int n = 0;

	head = atomic_load_explicit(&se->out.ctl->head, memory_order_acquire);
	se->acked = head;
	zcr_list_for_each_safe(pos, tmp, &ep->sendq) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);
		struct zcr_shm_cell *c;
		uint64_t k = zcr_shm_cells_for(&se->out, r->len);
		bool eager = k == 1 ||
			     (se->frag_ok && r->len <= se->sc->frag_max &&
			      k <= ZCR_SHM_FRAG_CELLS && k <= se->out.ncell);

		if (r->kind == ZCR_REQ_ACK) {
			/*
			 * A receive matched message r->seq of the peer. Not
			 * while that message's cell is still open here (its
			 * sender writes a part of it): the sender awaits the
			 * acknowledgement only once our head passed the cell.
			 */
			if (se->cell_open && se->cur.seq == r->seq)
				continue;	/* MATCHED cells need no order */
			c = __zcr_shm_ring_reserve(&se->out);
			if (!c)
				break;
			memset(c, 0, sizeof(*c));
			c->type = ZCR_SHM_MATCHED;
			c->src = ctx->rank;
			c->seq = r->seq;
			__zcr_shm_ring_publish(&se->out);
			zcr_list_del(&r->link);
			free(r);
			continue;
		}
		if (r->sent) {
			/* Announced: done once the peer consumed its cell. */
			if (help && head == get_idx(r) &&
			    (c = offer_at(se, head)))
				help_pull(se, r, c);
			if (head <= get_idx(r))
				continue;
		} else {
			if (!eager)
				k = 1;
			c = __zcr_shm_ring_reserve_n(&se->out, k);
			if (!c)
				break;
			fill_cells(se, c, r, eager);
			set_idx(r, se->out.tail);
			__zcr_shm_ring_publish_n(&se->out, k);
			r->sent = 1;
			if (!eager)
				continue;
		}
		zcr_list_del(&r->link);
		ctx->st.msgs_sent++;
		ctx->st.bytes_sent += r->len;
		if (r->sync)	/* done when the peer's MATCHED comes */
			zcr_list_add_tail(&r->link, &ep->ackq);
		else
			__zcr_req_complete_locked(r, 0);
		n++;
	}
	return n;
}

static int shm_send(struct zcr_ep *ep, struct zcr_req *r)
{
	struct shm_ep *se = S(ep);
	struct zcr_shm_cell *c;

	if (se->gone)
		return -ECONNRESET;	/* nobody reads our ring any more */
	/*
	 * The common case, a message of one cell with nothing queued before
	 * it: into the ring and complete now, as push_sends() would, without
	 * the queue (a third of the library's part of a small send). Not an
	 * acknowledgement (ZCR_REQ_ACK): that is a MATCHED cell.
	 */
	if (r->kind == ZCR_REQ_SEND && !r->sync &&
	    zcr_list_empty(&ep->sendq) &&
	    r->len <= zcr_shm_eager_max(&se->out) &&
	    (c = __zcr_shm_ring_reserve(&se->out))) {
		fill_cells(se, c, r, true);
		__zcr_shm_ring_publish(&se->out);
		r->sent = 1;
		ep->ctx->st.msgs_sent++;
		ep->ctx->st.bytes_sent += r->len;
		__zcr_req_complete_locked(r, 0);
		return 0;
	}
	zcr_list_add_tail(&r->link, &ep->sendq);
	push_sends(ep, false);	/* helping is for progress, not for isend */
	return 0;
}

/*
 * The connection ends (closed here, or the peer gone) with announced
 * sends of ours in the peer's ring. One whose cell the peer consumed was
 * delivered: it completes now, as the next pass would have completed it.
 * Every other one is revoked in its cell (shm.h, ZCR_SHM_REVOKED) before
 * the caller fails it, so that a peer still pulling it does not deliver
 * it: once the send failed, the application may write into its buffer.
 */
static void settle_sends(struct zcr_ep *ep)
{
	struct shm_ep *se = S(ep);
	struct zcr_list *pos, *tmp;
	uint64_t head;

	if (!se->out.ctl)
		return;
	head = atomic_load(&se->out.ctl->head);
	zcr_list_for_each_safe(pos, tmp, &ep->sendq) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);
		struct zcr_shm_cell *c;
		int32_t st;
		int tries;

		if (r->kind == ZCR_REQ_ACK || !r->sent)
			continue;
		if (head <= get_idx(r)) {
			c = __zcr_shm_ring_cell(&se->out, get_idx(r));
			st = __atomic_load_n(&c->status, __ATOMIC_SEQ_CST);
			/* A few tries: only a peer out of protocol keeps
			 * changing it, and then the send fails. */
			for (tries = 0; st != ZCR_SHM_CONSUMED && tries < 8 &&
			     !__atomic_compare_exchange_n(&c->status, &st,
							  ZCR_SHM_REVOKED,
							  false,
							  __ATOMIC_SEQ_CST,
							  __ATOMIC_SEQ_CST);
			     tries++)
				;
			if (st != ZCR_SHM_CONSUMED)
				continue;	/* revoked: failed by the caller */
		}
		zcr_list_del(&r->link);
		ep->ctx->st.msgs_sent++;
		ep->ctx->st.bytes_sent += r->len;
		if (r->sync)	/* the caller fails it: no MATCHED will come */
			zcr_list_add_tail(&r->link, &ep->ackq);
		else
			__zcr_req_complete_locked(r, 0);
	}
}

static void drop_open(struct zcr_ep *ep);

/*
 * The peer closed the connection or exited (why). Our sends to it will
 * not be read: what it consumed completes, the rest fails. What it sent
 * us stays to be read (rx_ep()), but for its announcements: nothing to
 * pull from any more (dropped, drop_open()). With nothing left in the
 * ring, the endpoint fails now.
 */
static void peer_gone(struct zcr_ep *ep, const char *why)
{
	struct shm_ep *se = S(ep);

	se->gone = why;
	settle_sends(ep);
	__zcr_ep_fail_sends_locked(ep, -ECONNRESET);
	if (se->cell_open && se->cur.type == ZCR_SHM_RTS)
		drop_open(ep);		/* nothing to pull from any more */
	if (!se->cell_open && !__zcr_shm_ring_ready(&se->in))
		__zcr_ep_fail_locked(ep, -ECONNRESET, "%s", why);
}

/*
 * A MATCHED cell at our ring's head: the peer matched our synchronous
 * message h->seq. Consumed here; false when the endpoint failed.
 */
static bool take_matched(struct zcr_ep *ep, const struct zcr_shm_cell *h)
{
	struct shm_ep *se = S(ep);

	if (!ep->sync_ok || h->src != ep->rank) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO, "shm: acknowledgement out of "
				     "protocol (src %d, seq %llu)", h->src,
				     (unsigned long long)h->seq);
		return false;
	}
	__zcr_shm_ring_consume(&se->in);
	kick_peer(se);			/* a full ring has room again */
	/*
	 * An announced synchronous send moves to the ACK queue when we see
	 * the peer pulled it; the peer may have matched it in the same
	 * breath, before we looked: look now.
	 */
	push_sends(ep, false);
	__zcr_ep_acked_locked(ep, h->seq);
	return ep->state == ZCR_EP_OPEN;
}

/*
 * The header at our ring's head, checked; false when the endpoint failed
 * or the cell was not a message (an acknowledgement, taken here: then
 * *again is set).
 */
static bool open_cell(struct zcr_ep *ep, const struct zcr_shm_cell *c,
		      bool *again)
{
	struct shm_ep *se = S(ep);
	struct zcr_shm_cell *h = &se->cur;

	memcpy(h, c, sizeof(*h));	/* the peer may scribble on c */
	se->live = (struct zcr_shm_cell *)c;
	*again = false;
	if (h->type == ZCR_SHM_MATCHED) {
		*again = take_matched(ep, h);
		return false;
	}
	if ((h->type != ZCR_SHM_EAGER && h->type != ZCR_SHM_RTS) ||
	    (h->flags & ~ZCR_SHM_F_SYNC) ||
	    ((h->flags & ZCR_SHM_F_SYNC) && !ep->sync_ok) ||
	    h->src != ep->rank || h->tag < 0 ||
	    h->seq != ep->recv_seq + 1 || h->len > ep->ctx->max_msg ||
	    (h->type == ZCR_SHM_EAGER &&
	     (zcr_shm_cells_for(&se->in, h->len) > ZCR_SHM_FRAG_CELLS ||
	      zcr_shm_cells_for(&se->in, h->len) >
	      __zcr_shm_ring_ready(&se->in)))) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO, "shm: cell out of protocol "
				     "(type %u, src %d, seq %llu, len %llu)",
				     h->type, h->src,
				     (unsigned long long)h->seq,
				     (unsigned long long)h->len);
		return false;
	}
	ep->recv_seq = h->seq;
	se->cell_open = true;
	return true;
}

/*
 * The sender took the first part of the open cell's copy: -EINPROGRESS
 * while it writes; then 0 or -errno once every byte is in (a part it
 * failed to write, or anything else it left in the cell, we pull
 * ourselves). No timeout: until the sender says it is done or exits, it
 * may write into the destination, so the receive may not complete.
 */
static void learn_share(struct shm_ep *se, uint64_t its_ns)
{
	se->help_share = __zcr_shm_share_next(se->help_share,
					      se->help_own,
					      se->help_own_ns, se->help_part,
					      its_ns);
	se->help_t0 = 0;
}

static int help_settle(struct zcr_ep *ep)
{
	struct shm_ep *se = S(ep);
	int32_t st = __atomic_load_n(&se->live->status, __ATOMIC_SEQ_CST);
	uint64_t now = zcr_now_ns();

	if (st == ZCR_SHM_HELP_TAKEN) {
		se->help_seen = now;
		return -EINPROGRESS;
	}
	se->help_wait = false;
	if (st == ZCR_SHM_REVOKED) {	/* the sender closed meanwhile */
		se->help_t0 = 0;
		return -ECONNRESET;
	}
	/*
	 * It ended after our part, between our last look (spinning, or
	 * its doorbell waking us) and now: learn if that tells its time
	 * well enough (not after we slept past a timeout, or went back to
	 * the application, before looking again).
	 */
	if (st == ZCR_SHM_HELP_DONE && !se->help_ret && se->help_t0 &&
	    se->help_seen && now - se->help_seen <= (now - se->help_t0) / 4)
		learn_share(se, now - se->help_t0);
	se->help_t0 = 0;
	if (se->help_ret)
		return se->help_ret;
	if (st == ZCR_SHM_HELP_DONE) {
		ep->ctx->st.shared_pulls++;
		return 0;
	}
	return __zcr_shm_pull(se->peer, ep->rx.dst, se->cur.addr,
			      se->help_part);
}

/*
 * Pull n bytes of the open RTS cell into dst, the first part shared with
 * the sender (shm.h, enum zcr_shm_help). 0, -errno, or -EINPROGRESS
 * while the sender writes its part (help_settle() says when it is in).
 */
static int shared_pull(struct zcr_ep *ep, char *dst, uint64_t n)
{
	struct shm_ep *se = S(ep);
	struct zcr_shm_cell *c = se->live;
	uint64_t src = se->cur.addr, part;
	uintptr_t pg = ep->ctx->page;
	int32_t st = ZCR_SHM_HELP_OFFERED;
	uint64_t t0;
	int ret;

	/* The sender's share (shm.h), at a page boundary of dst. */
	part = (((uintptr_t)dst + n / ZCR_SHM_SHARE_ONE * se->help_share) &
		~(pg - 1)) - (uintptr_t)dst;
	if (!part || part >= n)
		return __zcr_shm_pull(se->peer, dst, src, n);
	__atomic_store_n(&c->cookie, (uint64_t)(uintptr_t)dst,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&c->pad[0], part, __ATOMIC_RELAXED);
	/*
	 * Only over a fresh word: the cell may have waited open (no room
	 * yet) while its sender closed and revoked it (settle_sends()); a
	 * plain store would erase that, and the message be delivered with
	 * whatever the application wrote into the buffer since.
	 */
	st = ZCR_SHM_HELP_NONE;
	if (!__atomic_compare_exchange_n(&c->status, &st,
					 ZCR_SHM_HELP_OFFERED, false,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		if (st == ZCR_SHM_REVOKED)
			return -ECONNRESET;
		return __zcr_shm_pull(se->peer, dst, src, n);
	}
	st = ZCR_SHM_HELP_OFFERED;
	t0 = zcr_now_ns();
	ret = __zcr_shm_pull(se->peer, dst + part, src + part, n - part);
	if (__atomic_compare_exchange_n(&c->status, &st,
					ZCR_SHM_HELP_WITHDRAWN, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* Not taken: a step back towards half, so that a share
		 * grown large (our part, the window to take it, small)
		 * cannot keep every later offer untaken. */
		if (se->help_share > ZCR_SHM_SHARE_ONE / 2)
			se->help_share -= ZCR_SHM_SHARE_STEP / 2;
		return ret ? ret : __zcr_shm_pull(se->peer, dst, src, part);
	}
	/*
	 * Taken (or the peer wrote something else): even if our part
	 * failed, wait until the sender is done with dst.
	 */
	se->help_wait = true;
	se->help_ret = ret;
	se->help_part = part;
	se->help_own = n - part;
	se->help_seen = zcr_now_ns();
	se->help_own_ns = se->help_seen - t0;
	se->help_t0 = ret ? 0 : t0;
	if (se->help_t0 && st == ZCR_SHM_HELP_DONE)
		learn_share(se, 0);	/* done before we were */
	return help_settle(ep);
}

/*
 * Every byte of the open RTS is in: say so in its cell, unless the sender
 * revoked it first (it closed the connection, and its buffer may hold
 * other bytes by now). shm.h, ZCR_SHM_CONSUMED. 0, -ECONNRESET, or
 * -EPROTO for a sender that keeps changing the word.
 */
static int claim_cell(struct shm_ep *se)
{
	int32_t st = __atomic_load_n(&se->live->status, __ATOMIC_SEQ_CST);
	int tries;

	for (tries = 0; tries < 8; tries++) {
		if (st == ZCR_SHM_REVOKED)
			return -ECONNRESET;
		if (__atomic_compare_exchange_n(&se->live->status, &st,
						ZCR_SHM_CONSUMED, false,
						__ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			return 0;
	}
	return -EPROTO;
}

/*
 * The open announcement will never be read: its sender revoked it (it
 * closed the connection, and failed that send) or is gone. The message
 * is cut short, as when a connection ends in the middle of one (the
 * receive it claimed fails, or a wildcard one waits for another), but
 * what the sender wrote after it is still read: those sends completed.
 */
static void drop_open(struct zcr_ep *ep)
{
	struct shm_ep *se = S(ep);

	__zcr_match_abort_locked(ep->ctx, &ep->rx);
	se->cell_open = false;
	se->help_wait = false;
	__zcr_shm_ring_consume(&se->in);
	kick_peer(se);
}

/*
 * Move the open cell's payload where match said: 1 when it is in, 0 when
 * not yet (the sender writes a part) or the endpoint failed.
 */
static int land(struct zcr_ep *ep)
{
	struct shm_ep *se = S(ep);
	struct zcr_shm_cell *h = &se->cur;
	uint64_t n = ep->rx.room < h->len ? ep->rx.room : h->len, k = 1;
	int ret = 0;

	if (h->type == ZCR_SHM_EAGER) {
		k = zcr_shm_cells_for(&se->in, h->len);	/* checked: open */
		if (n)
			__zcr_shm_ring_get(&se->in, ep->rx.dst, n);
	} else if (se->help_wait) {
		ret = help_settle(ep);
	} else if (__atomic_load_n(&se->live->status, __ATOMIC_SEQ_CST) ==
		   ZCR_SHM_REVOKED) {
		ret = -ECONNRESET;	/* not worth a pull: claim_cell() */
	} else if (n) {
		ret = se->help_ok && se->sc->split_min &&
		      n >= se->sc->split_min &&
		      h->status == ZCR_SHM_HELP_NONE ?
		      shared_pull(ep, ep->rx.dst, n) :
		      __zcr_shm_pull(se->peer, ep->rx.dst, h->addr, n);
	}
	if (ret == -EINPROGRESS)
		return 0;
	if (!ret && h->type == ZCR_SHM_RTS)
		ret = claim_cell(se);
	if (ret == -ECONNRESET) {
		/* Revoked: the sender closed, whether or not poll said so. */
		drop_open(ep);
		if (!se->gone)
			peer_gone(ep, "shm: peer closed the connection");
		return ep->state == ZCR_EP_OPEN;
	}
	if (ret) {
		__zcr_ep_fail_locked(ep, ret, "shm: cannot read the message in "
				     "the peer (%s)",
				     ret == -ESRCH ? "peer exited" :
				     ret == -EFAULT ? "bad address" :
				     ret == -EPROTO ? "cell out of protocol" :
				     "ptrace policy");
		return 0;
	}
	se->cell_open = false;
	__zcr_shm_ring_consume_n(&se->in, k);
	/* An RTS's send completes now; a full ring has room again. */
	kick_peer(se);
	__zcr_match_payload_done_locked(ep->ctx, &ep->rx);
	return 1;
}

/*
 * Is one of our announced sends to the process behind ep still to be
 * completed (pulled by the peer or not: the pass that completes it runs
 * after the reads)? It may travel on another endpoint: a job dials each
 * rank it sends to, so two ranks that both send hold two connections, one
 * for each direction.
 */
static bool own_send_pending(struct zcr_ep *ep)
{
	struct zcr_list *e, *pos;

	for (e = S(ep)->sc->eps.next; e != &S(ep)->sc->eps; e = e->next) {
		struct shm_ep *se = zcr_container_of(e, struct shm_ep, link);

		if (se->peer != S(ep)->peer || se->ep->state != ZCR_EP_OPEN)
			continue;
		for (pos = se->ep->sendq.next; pos != &se->ep->sendq;
		     pos = pos->next) {
			struct zcr_req *r = zcr_container_of(pos,
							     struct zcr_req,
							     link);

			if (r->kind != ZCR_REQ_ACK && r->sent)
				return true;
		}
		/* Synchronous sends wait here for their MATCHED. */
		if (!zcr_list_empty(&se->ep->ackq))
			return true;
	}
	return false;
}

/* Leave the announcement c unread for now (SHM_DEFER_NS)? */
static bool defer_rts(struct zcr_ep *ep, const struct zcr_shm_cell *c)
{
	struct shm_ep *se = S(ep);
	struct zcr_shm_cell h;
	uint64_t now;

	/*
	 * Not on the progress thread: the application is away (it would
	 * post the receive), and the thread would hold the lock meanwhile.
	 */
	if (__zcr_is_progress_thread(ep->ctx))
		return false;
	memcpy(&h, c, sizeof(h));	/* checked for real by open_cell */
	if (h.type != ZCR_SHM_RTS || h.tag < 0 || !own_send_pending(ep) ||
	    __zcr_match_has_posted_locked(ep->ctx, ep->comm_ok ?
					  (uint32_t)h.pad[0] : 0,
					  ep->rank, h.tag))
		return false;
	now = zcr_now_ns();
	if (se->defer_head != se->in.head + 1) {
		se->defer_head = se->in.head + 1;
		se->defer_until = now + SHM_DEFER_NS;
	}
	return now < se->defer_until;
}

static int rx_ep(struct zcr_ep *ep)
{
	struct shm_ep *se = S(ep);
	struct zcr_shm_cell *c;
	int n = 0, err;
	bool again;

	while (ep->state == ZCR_EP_OPEN) {
		if (se->gone && se->cell_open && se->cur.type == ZCR_SHM_RTS) {
			/* Exited: nothing to pull from; closed: revoked. */
			drop_open(ep);
			n++;
			continue;
		}
		if (!se->cell_open) {
			c = __zcr_shm_ring_peek(&se->in, &err);
			if (err) {
				__zcr_ep_fail_locked(ep, err,
						     "shm: ring corrupted");
				break;
			}
			if (se->gone && !c) {
				/* All it sent is in. */
				__zcr_ep_fail_locked(ep, -ECONNRESET, "%s",
						     se->gone);
				break;
			}
			if (!c || (!se->gone && defer_rts(ep, c)))
				break;
			if (!open_cell(ep, c, &again)) {
				if (!again)
					break;
				n++;	/* an acknowledgement, taken */
				continue;
			}
			if (se->gone && se->cur.type == ZCR_SHM_RTS) {
				drop_open(ep);	/* as above; not matched */
				n++;
				continue;
			}
			/* An announcement may wait: its bytes are the
			 * sender's until pulled. */
			if (__zcr_match_arrive_defer_locked(ep->ctx, &ep->rx,
					ep->comm_ok ?
					(uint32_t)se->cur.pad[0] : 0,
					se->cur.src, se->cur.tag,
					se->cur.len,
					(se->cur.flags & ZCR_SHM_F_SYNC) ?
					se->cur.seq : 0,
					se->cur.type == ZCR_SHM_RTS) < 0)
				break;	/* stalled: stays in the ring */
		}
		/*
		 * A deferred announcement (match.h) holds the ring's head:
		 * once the sender wrote anything behind it, it is staged,
		 * so that the sender's later messages never wait for our
		 * receive (the announcement is one cell).
		 */
		if (ep->rx.state == ZCR_RX_STALLED && ep->rx.deferred &&
		    __zcr_shm_ring_ready(&se->in) > 1)
			__zcr_match_release_arrival_locked(ep->ctx, &ep->rx);
		if (ep->rx.state != ZCR_RX_LANDING || !land(ep))
			break;
		n++;
	}
	return n;
}

/*
 * Poll said the peer's pidfd (pid_ev) or control connection (ctl_ev) is
 * readable: it exited, or closed (the connection's end), or wrote on the
 * connection, which is out of protocol.
 */
static void peer_end(struct shm_ep *se, short pid_ev, short ctl_ev)
{
	ssize_t got;
	char b;

	if (pid_ev) {
		peer_gone(se->ep, "shm: peer process exited");
		return;
	}
	if (!ctl_ev)
		return;
	got = recv(se->ctl_fd, &b, 1, MSG_DONTWAIT);
	if (got == 0)
		peer_gone(se->ep, "shm: peer closed the connection");
	else if (got > 0)
		__zcr_ep_fail_locked(se->ep, -EPROTO, "shm: peer wrote on the "
				     "control connection");
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
				peer_end(se, q[0].revents, q[1].revents);
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
		n += rx_ep(ep);
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
			n += push_sends(ep, true);
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

/* A peer's work ended our wait (if we had one). */
static void wait_end(struct shm_ctx *sc)
{
	if (cur_wait.sc == sc && cur_wait.t0)
		wait_seen(sc, zcr_now_ns() - cur_wait.t0);
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
		 * between two, look a few times with only a pause. Around
		 * it the context is unlocked, so that the application's
		 * other threads are not held up by our look (nothing found
		 * under the lock is kept across: the next look starts over).
		 * The clock is read there too, not at every look: a look
		 * is well under a microsecond, and the clock cost as much.
		 */
		if (spins % SHM_SPINS_PER_YIELD) {
			cpu_relax();
		} else if (zcr_now_ns() >= until) {
			break;
		} else {
			uint64_t passes = sc->passes;

			pthread_mutex_unlock(&ctx->lock);
			sched_yield();
			pthread_mutex_lock(&ctx->lock);
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
		/* Found while looking: no sleep to announce, no poll. */
		wait_end(sc);
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
		wait_end(sc);
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
			wait_end(sc);
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
			peer_end(se, pfd[k + 1].revents, pfd[k + 2].revents);
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
	settle_sends(ep);	/* before the caller fails the rest */
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
	.listen = shm_listen,
	.connect = shm_connect,
	.poll_max = shm_poll_max,
	.poll_fill = shm_poll_fill,
	.poll_done = shm_poll_done,
	.progress = shm_progress,
	.send = shm_send,
	.ep_close = shm_ep_close,
	.ep_free = shm_ep_free,
	.adopt = shm_adopt,
};
