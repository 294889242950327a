/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * shm_priv.h - what the files of the shm transport's endpoint side share,
 * and no one else: the per-context and per-endpoint state, the inline
 * looks of the hot paths, and the functions one file calls in another.
 * shm_tp.c describes the transport; shm.h its mechanics (rings, pulls).
 */
#ifndef ZCR_SHM_PRIV_H
#define ZCR_SHM_PRIV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "base/ctx.h"
#include "transport/shm/shm.h"

struct zcr_pf_ask;
struct zcr_pf_run;

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
	/*
	 * sched_yield() calls in a row that came back at once (nobody
	 * else wanted the processor): the more, the rarer the yields of a
	 * look before sleeping (shm_poll_fill()).
	 */
	unsigned int quick_yields;
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
	unsigned int help_missed;	/* offers in a row nobody took */
	unsigned int help_skip;		/* pulls left to make unshared */
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
	/*
	 * Message prefetching (ep->pf set: both offers took prefetch
	 * cells): the open RTS's byte runs to pull, the others come from
	 * the pre-send (lib/prefetch; nruns 0: all of it).
	 */
	const struct zcr_pf_run *pf_runs;
	size_t pf_nruns;
};

static inline struct shm_ep *S(struct zcr_ep *ep)
{
	return ep->tp_priv;
}

/* Ring index of an announced (RTS) send, kept in the request. */
static inline void set_idx(struct zcr_req *r, uint64_t i)
{
	memcpy(r->tx, &i, sizeof(i));
}

static inline uint64_t get_idx(const struct zcr_req *r)
{
	uint64_t i;

	memcpy(&i, r->tx, sizeof(i));
	return i;
}

/*
 * GCC refuses atomic_thread_fence() under ThreadSanitizer where it is
 * inlined (-Wtsan; the sanitizer does not model fences): out of line
 * there, as it was in one file before the split; inline otherwise.
 */
#ifdef __SANITIZE_THREAD__
static __attribute__((noinline, unused)) void kick_peer(struct shm_ep *se)
#else
static inline void kick_peer(struct shm_ep *se)
#endif
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
static inline struct zcr_shm_cell *offer_at(struct shm_ep *se, uint64_t head)
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
static inline bool offered(struct shm_ep *se, uint64_t head)
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
 * A prefetch frame of ours waiting in ep->sendq for its cell (a
 * ZCR_REQ_ACK with ctl set): the cell's fields, in r->tx after the ring
 * index; a PF_DATA's body is r->own (r->len bytes), freed once the peer
 * consumed the cell (it pulls the body from there).
 */
struct shm_pf_ctl {
	uint64_t idx;			/* set_idx()'s */
	uint32_t type;			/* ZCR_SHM_PF_REQ or _PF_DATA */
	uint32_t token;
	uint64_t addr;
};

_Static_assert(sizeof(struct shm_pf_ctl) <= ZCR_TX_SCRATCH,
	       "a prefetch frame's cell fits the request's scratch");

/* shm_send.c: sending */
int __zcr_shm_pf_ctl(struct zcr_ep *ep, uint32_t type, uint32_t token,
		     uint64_t addr, char *body, uint64_t len);
int __zcr_shm_pf_ask(struct zcr_ep *ep, const struct zcr_pf_ask *a);
int __zcr_shm_push_sends(struct zcr_ep *ep, bool help);
int __zcr_shm_send(struct zcr_ep *ep, struct zcr_req *r);
int __zcr_shm_send_now(struct zcr_ep *ep, uint32_t comm, const void *buf,
		       size_t len, int tag, uint64_t seq);
void __zcr_shm_settle_sends(struct zcr_ep *ep);

/* shm_recv.c: receiving, and a peer that goes */
int __zcr_shm_rx_ep(struct zcr_ep *ep);
void __zcr_shm_peer_end(struct shm_ep *se, short pid_ev, short ctl_ev);

#endif /* ZCR_SHM_PRIV_H */
