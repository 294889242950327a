// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * prefetch.c - message prefetching: the state and the decisions of both
 * sides (prefetch.h). Documentation/prefetch.md describes the protocol;
 * in short, on one connection:
 *
 *   receiver                               sender
 *   a receive waits, nothing matched;
 *   predicted buffer (saddr, slen) --PF_REQ n-->
 *                                          versions now against those of
 *                                          the last send of that buffer:
 *                                          the pages that look final are
 *                                          copied out and pre-sent
 *                        <--PF_DATA n (first len bytes)--
 *   kept as the pre-send n
 *                                          the send: pre-sent pages whose
 *                                          version did not change since
 *                                          are left out
 *                        <--PF_INFO n, bitmap; DATA (the other pages)--
 *   wire bytes land, the pre-sent ones
 *   are copied in from pre-send n
 *
 * Every large DATA has a PF_INFO before it, with the sender's buffer
 * address: that is what the receiver predicts from, per (communicator,
 * tag) of the connection. A pre-send is used by one send at most; the
 * receiver keeps it until the send that uses it arrives or the answer to
 * its next request does (the sender forgets every pre-send of the
 * connection when a new request comes, and answers in order, so no DATA
 * can use an older one behind that answer).
 *
 * Correctness rests on the page versions (pagever.h): versions are read
 * before the bytes are copied out, so a page written during or after the
 * copy has another version at the send and goes again.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/ctx.h"
#include "base/list.h"
#include "pagever/pagever.h"
#include "pagever/pv_int.h"
#include "prefetch/prefetch.h"

#define PRED_N		16	/* (comm, tag) predictions per connection */
#define PRED_HIST	4	/* buffers remembered per prediction */
#define BUFS_MAX	64	/* send buffers tracked per context */
#define MISS_BACKOFF	4	/* empty answers in a row before backing off */
#define BAD_BACKOFF	3	/* mostly rewritten pre-sends in a row */
#define IDLE_MAX	3	/* requests for nothing before untracking */
#define UNASKED_MAX	16	/* sends asked for by no one (above the
				 * receiver's longest back-off) */
#define HASH_BAD	2	/* sends whose rewritten pages mostly
				 * changed, before contents go unhashed */
#define HASH_SKIP	16	/* sends unhashed, then a new look */
#define GONE_N		8	/* untracked buffers whose order failed */
#define NOTRACK_PROBE	4	/* sends of such a buffer from a look at its
				 * bytes to the next, at first ... */
#define NOTRACK_PROBE_MAX 16	/* ... and at most: a look that finds
				 * nothing stable doubles it */
#define CONTENTS_IN	2	/* sends written whole with the same bytes,
				 * before the versions give way to hashes */
#define CONTENTS_OUT	2	/* sends mostly changed, before contents
				 * mode gives way to versions again */

/* A send buffer whose pages are versioned (shared by the connections). */
struct pf_buf {
	struct zcr_list link;		/* on pf->bufs, most recent first */
	uint64_t saddr, slen;
	struct zcr_pv_range *range;
	size_t npages;
	unsigned int refs;		/* pf_snd using it */
	/*
	 * Contents mode (Documentation/prefetch.md, "Buffers written whole
	 * with the same bytes"): range untracked, a page's version is the
	 * hash of its bytes.
	 */
	bool contents;
};

/* What a connection's sender remembers of one buffer. */
struct pf_snd {
	struct zcr_list link;		/* on pe->snds */
	struct pf_buf *buf;
	uint64_t *last;			/* versions at the last send */
	bool have_last;
	/*
	 * Pages rewritten between the last two sends (have_rew: known):
	 * those that were not are the buffer's stable part.
	 */
	uint8_t *rew;
	bool have_rew;
	/* the pre-send of this buffer to this peer, when token != 0 */
	uint32_t token;
	uint8_t *pre_set;		/* the pages pre-sent */
	uint64_t pre_bytes;
	uint64_t *pre;			/* versions when pre-sent */
	/* when not to */
	unsigned int bad, skip;
	/*
	 * Tracking costs the application a write fault per page per send
	 * interval (pagever.h): a buffer whose requests keep coming to
	 * nothing (idle), or that is sent again and again unasked
	 * (unasked), is no longer tracked.
	 */
	unsigned int idle, unasked;
	bool pre_order;			/* the pre-send trusted the order */
	unsigned int distrust;		/* requests left: stable part only */
	unsigned int nbad_order;	/* order-trusting pre-sends gone bad */
	/*
	 * The order is trusted only once a trial held: the pages the order
	 * rules would have picked beyond the stable part (trial, ntrial of
	 * them, versions in pre[]) are withheld at one request, and the
	 * send says whether they would have been left out (FT's slabs,
	 * written again by the FFTs after the copy that writes their last
	 * page, would have been wasted on the link).
	 */
	bool order_ok;
	unsigned int nostable;		/* sends in a row with < 1/8 stable */
	/*
	 * Times this buffer was untracked for having nothing stable while
	 * its order was distrusted: each time for longer (notrack_for()),
	 * and tracked again it must show a stable part or a trial that
	 * holds before it is untracked once more.
	 */
	unsigned int nnotrack;
	bool have_trial;
	uint8_t *trial;
	uint64_t ntrial;
	/*
	 * Contents (Documentation/prefetch.md, "Rewritten with the same
	 * bytes"): a hash of each page at the last send (have_hlast) and
	 * of each page pre-sent as it was copied out (have_hpre). A page
	 * the application wrote again with the bytes it had is neither
	 * rewritten for the rules nor sent again. Hashing stops for a
	 * while (hash_skip sends) when the rewritten pages mostly changed.
	 */
	uint64_t *hlast, *hpre;
	bool have_hlast, have_hpre;
	unsigned int hash_bad, hash_skip;
	/*
	 * The mode last[], pre[] and rew were taken in (= buf->contents
	 * unless another connection switched the buffer), and the sends in
	 * a row that argue for the other mode.
	 */
	bool contents;
	unsigned int same_run, changed_run;
};

/* A prediction of the sender's buffer for (comm, tag). */
struct pf_pred {
	bool used;
	uint32_t comm;
	int tag;
	uint64_t age;
	uint64_t a[PRED_HIST], l[PRED_HIST];	/* newest first */
	unsigned int n;
	unsigned int miss, skip;
	/*
	 * Ask for the next message as soon as this one is in (not when its
	 * receive is posted): while the last pre-send of the stream covered
	 * most of the buffer and most of it stayed out of the send. An
	 * arrival ask that got little or nothing skips the next 2, 4, 8,
	 * then 16 messages (arrive_skip), until a pre-send pays again: a
	 * sender a step ahead answers one late now and then (IS), and
	 * stopping for good until a receive's ask paid lost the stream.
	 */
	bool arrive;
	unsigned int arrive_fail, arrive_skip;
};

struct zcr_pf_ep {
	/* the peer shares our memory: we never ask (__zcr_pf_ep_local()) */
	bool local;
	/* receiver */
	struct pf_pred pred[PRED_N];
	uint64_t clock;
	uint32_t next_token;
	uint32_t asked;			/* outstanding request, 0: none */
	uint64_t asked_saddr, asked_slen;
	struct pf_pred *asked_pred;
	bool asked_arrival;		/* asked when the last message came */
	struct pf_pred *came;		/* the stream of the DATA being read */
	struct {			/* the pre-send kept */
		uint32_t token;
		uint64_t saddr, slen;
		char *buf;		/* slen bytes, at their offsets */
		uint8_t *have;		/* the pages pre-sent */
		uint64_t bytes;		/* how many bytes that is */
		struct pf_pred *pred;	/* the stream it was asked for */
		bool arrival;		/* asked when the last message came */
		bool fresh;		/* no message of its stream since */
	} store;
	char *in_buf;			/* a PF_DATA being read: its pages */
	uint8_t *in_bm;			/* and its bitmap */
	uint64_t in_len, in_bmlen, in_saddr;
	uint32_t in_token;
	struct zcr_pf_run *in_runs;
	/* the PF_INFO of the next DATA */
	bool info;
	uint32_t info_token;
	uint64_t info_saddr, info_bmlen;
	uint8_t *info_bm;
	struct zcr_pf_run *runs;	/* the DATA being read */
	size_t nruns;
	bool fill;			/* pre-sent pages to copy in */
	uint64_t fill_len, fill_saddr;
	/* sender */
	struct zcr_list snds;
	/*
	 * Buffers no longer tracked whose order-trusting pre-sends went
	 * bad: tracked again, they do not start trusting the order afresh
	 * (FT's requests come late three times, its buffer is untracked,
	 * asked for again, and its slabs pre-sent in full again).
	 */
	struct {
		uint64_t saddr, slen;
		unsigned int nbad_order, distrust;
		bool order_ok;
		/*
		 * Requests still answered with nothing, untracked: a buffer
		 * whose order failed and that has no stable part would only
		 * cost the application write faults.
		 */
		unsigned int notrack;
		unsigned int nnotrack;		/* pf_snd's */
		/*
		 * A look at its bytes without tracking it, at the first
		 * send while notrack lasts and then probe_gap sends after
		 * the last look (probe_wait counts them down): the page
		 * hashes at that send (ph[], NULL between looks) against
		 * those at the next. A buffer that turned stable is
		 * tracked at its next request.
		 */
		unsigned int probe_wait, probe_gap;
		uint64_t *ph;
	} gone[GONE_N];
	unsigned int gone_next;
};

struct zcr_pf {
	struct zcr_pv *pv;		/* = ctx->pv, once opened */
	bool pv_failed;
	uint64_t min;			/* ZCRECV_PREFETCH_MIN */
	bool local_all;			/* ZCRECV_PREFETCH_SHM_ALL */
	struct zcr_list bufs;
	unsigned int nbufs;
	/*
	 * The last pre-send a receiver used, kept for the next one: a fresh
	 * allocation of megabytes is fresh pages, each zeroed by the kernel
	 * as the pre-send lands in it.
	 */
	char *spare;
	uint64_t spare_len;
};

/* ---- pages of a buffer on the wire ---- */

static uint64_t npages_of(uint64_t saddr, uint64_t len)
{
	return (saddr % ZCR_PF_PAGE + len + ZCR_PF_PAGE - 1) / ZCR_PF_PAGE;
}

/* Message bytes [*lo, *hi) of page k of the buffer (saddr, len). */
static void page_bytes(uint64_t saddr, uint64_t len, uint64_t k,
		       uint64_t *lo, uint64_t *hi)
{
	uint64_t off0 = saddr % ZCR_PF_PAGE;
	uint64_t end = (k + 1) * ZCR_PF_PAGE - off0;

	*lo = k ? k * ZCR_PF_PAGE - off0 : 0;
	*hi = end < len ? end : len;
}

static bool bit(const uint8_t *bm, uint64_t k)
{
	return bm[k / 8] & (1u << (k % 8));
}

/*
 * Page k of the buffer (saddr, len) is page *j of the buffer (taddr,
 * tlen), the same page of memory: true when the bytes of the first on it
 * lie within those of the second (exact: are the same bytes).
 */
static bool page_in(uint64_t saddr, uint64_t len, uint64_t k,
		    uint64_t taddr, uint64_t tlen, bool exact, uint64_t *j)
{
	uint64_t lo, hi, tlo, thi, p = saddr / ZCR_PF_PAGE + k;

	if (p < taddr / ZCR_PF_PAGE ||
	    p - taddr / ZCR_PF_PAGE >= npages_of(taddr, tlen))
		return false;
	*j = p - taddr / ZCR_PF_PAGE;
	page_bytes(saddr, len, k, &lo, &hi);
	page_bytes(taddr, tlen, *j, &tlo, &thi);
	if (exact)
		return saddr + lo == taddr + tlo && saddr + hi == taddr + thi;
	return saddr + lo >= taddr + tlo && saddr + hi <= taddr + thi;
}

/*
 * Two buffers are one that drifts (a count of keys before it changed):
 * they share at least 7/8 of the longer one's bytes.
 */
static bool near(uint64_t a, uint64_t al, uint64_t b, uint64_t bl)
{
	uint64_t lo = a > b ? a : b, hi = a + al < b + bl ? a + al : b + bl;
	uint64_t most = al > bl ? al : bl;

	return hi > lo && (hi - lo) * 8 >= most * 7;
}

/* ---- context and connection ---- */

int __zcr_pf_ctx_init(struct zcr_ctx *ctx)
{
	struct zcr_pf *pf;

	ctx->pf = NULL;
	if (!ctx->env.v[ZCR_ENV_PREFETCH].u)
		return 0;
	/* The wire counts 4 KiB pages; versions are per system page. */
	if (ctx->page != ZCR_PF_PAGE)
		return 0;
	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	pf->min = ctx->env.v[ZCR_ENV_PREFETCH_MIN].u;
	pf->local_all = ctx->env.v[ZCR_ENV_PREFETCH_SHM_ALL].u;
	zcr_list_init(&pf->bufs);
	ctx->pf = pf;
	return 0;
}

static void buf_put(struct zcr_pf *pf, struct pf_buf *b)
{
	if (--b->refs)
		return;
	zcr_list_del(&b->link);
	pf->nbufs--;
	if (b->range)
		__zcr_pv_untrack(pf->pv, b->range);
	free(b);
}

void __zcr_pf_ctx_fini(struct zcr_ctx *ctx)
{
	struct zcr_pf *pf = ctx->pf;

	if (!pf)
		return;
	/* Every connection's state went with its endpoint. */
	__zcr_pv_close(pf->pv);
	ctx->pv = NULL;
	free(pf->spare);
	free(pf);
	ctx->pf = NULL;
}

int __zcr_pf_ep_init(struct zcr_ep *ep)
{
	struct zcr_pf_ep *pe;

	if (!ep->ctx->pf || ep->pf)
		return 0;
	pe = calloc(1, sizeof(*pe));
	if (!pe)
		return -ENOMEM;
	zcr_list_init(&pe->snds);
	ep->pf = pe;
	return 0;
}

void __zcr_pf_ep_local(struct zcr_ep *ep)
{
	if (ep->pf && !ep->ctx->pf->local_all)
		ep->pf->local = true;
}

static void store_free(struct zcr_pf *pf, struct zcr_pf_ep *pe)
{
	if (pe->store.buf && pe->store.slen > pf->spare_len) {
		free(pf->spare);
		pf->spare = pe->store.buf;
		pf->spare_len = pe->store.slen;
	} else {
		free(pe->store.buf);
	}
	free(pe->store.have);
	memset(&pe->store, 0, sizeof(pe->store));
}

static void snd_free(struct zcr_pf *pf, struct pf_snd *s)
{
	zcr_list_del(&s->link);
	buf_put(pf, s->buf);
	free(s->last);
	free(s->pre);
	free(s->rew);
	free(s->pre_set);
	free(s->hlast);
	free(s->hpre);
	free(s->trial);
	free(s);
}

void __zcr_pf_ep_fini(struct zcr_ep *ep)
{
	struct zcr_pf_ep *pe = ep->pf;
	struct zcr_list *pos, *tmp;
	unsigned int g;

	if (!pe)
		return;
	zcr_list_for_each_safe(pos, tmp, &pe->snds) {
		struct pf_snd *s = zcr_container_of(pos, struct pf_snd, link);

		if (s->token)
			ep->ctx->st.pf_wasted_bytes += s->pre_bytes;
		snd_free(ep->ctx->pf, s);
	}
	for (g = 0; g < GONE_N; g++)
		free(pe->gone[g].ph);
	store_free(ep->ctx->pf, pe);
	free(pe->in_buf);
	free(pe->in_bm);
	free(pe->in_runs);
	free(pe->info_bm);
	free(pe->runs);
	free(pe);
	ep->pf = NULL;
}

/* ---- receiver ---- */

static struct pf_pred *pred_find(struct zcr_pf_ep *pe, uint32_t comm,
				 int tag, bool make)
{
	struct pf_pred *old = &pe->pred[0];
	unsigned int i;

	for (i = 0; i < PRED_N; i++) {
		struct pf_pred *p = &pe->pred[i];

		if (p->used && p->comm == comm && p->tag == tag) {
			p->age = ++pe->clock;
			return p;
		}
		if (!p->used || (old->used && p->age < old->age))
			old = p;
	}
	if (!make)
		return NULL;
	if (pe->asked_pred == old)
		pe->asked_pred = NULL;
	if (pe->came == old)
		pe->came = NULL;
	/* The pre-send kept lost its stream: no longer anyone's next. */
	if (pe->store.pred == old) {
		pe->store.pred = NULL;
		pe->store.fresh = false;
	}
	memset(old, 0, sizeof(*old));
	old->used = true;
	old->comm = comm;
	old->tag = tag;
	old->age = ++pe->clock;
	return old;
}

/*
 * The buffer the next message of p will come from: the same one three
 * times in a row, or two buffers in turn (double buffering) twice over.
 */
static bool pred_next(const struct pf_pred *p, uint64_t *saddr,
		      uint64_t *slen)
{
	if (p->n >= 3 && p->a[0] == p->a[1] && p->a[1] == p->a[2] &&
	    p->l[0] == p->l[1] && p->l[1] == p->l[2]) {
		*saddr = p->a[0];
		*slen = p->l[0];
		return true;
	}
	if (p->n >= 4 && p->a[0] == p->a[2] && p->a[1] == p->a[3] &&
	    p->l[0] == p->l[2] && p->l[1] == p->l[3] && p->a[0] != p->a[1]) {
		*saddr = p->a[1];
		*slen = p->l[1];
		return true;
	}
	/* One buffer whose start or end moves a little: the last one. */
	if (p->n >= 3 && near(p->a[0], p->l[0], p->a[1], p->l[1]) &&
	    near(p->a[1], p->l[1], p->a[2], p->l[2])) {
		*saddr = p->a[0];
		*slen = p->l[0];
		return true;
	}
	return false;
}

/*
 * The request a (a->saddr, a->slen filled) for stream p goes out: a new
 * token, remembered as the one outstanding request of the connection.
 */
static bool ask_made(struct zcr_ep *ep, struct pf_pred *p,
		     struct zcr_pf_ask *a, bool arrival)
{
	struct zcr_pf_ep *pe = ep->pf;

	if (++pe->next_token > INT32_MAX)
		pe->next_token = 1;
	a->token = pe->next_token;
	pe->asked = a->token;
	pe->asked_saddr = a->saddr;
	pe->asked_slen = a->slen;
	pe->asked_pred = p;
	pe->asked_arrival = arrival;
	ep->ctx->st.pf_requests++;
	return true;
}

bool __zcr_pf_ask_locked(struct zcr_ep *ep, const struct zcr_req *r,
			 struct zcr_pf_ask *a)
{
	struct zcr_pf_ep *pe = ep->pf;
	struct zcr_pf *pf = ep->ctx->pf;
	struct pf_pred *p;

	if (!pe || !pf || pe->asked || r->tag < 0 || r->size < pf->min)
		return false;
	p = pred_find(pe, r->comm, r->tag, false);
	if (!p || pe->local || !pred_next(p, &a->saddr, &a->slen) ||
	    a->slen > r->size || a->slen < pf->min)
		return false;
	/*
	 * Asked for when the last message came, and most of it is here
	 * already: a new request would make both sides forget it. Only
	 * for its own stream: one that lost its prediction meanwhile (16
	 * other streams, or taken while it was asked for) would otherwise
	 * stay "fresh", and no receive of its buffer would ask again.
	 */
	if (pe->store.token && pe->store.fresh && pe->store.pred == p &&
	    pe->store.saddr == a->saddr &&
	    pe->store.slen == a->slen && pe->store.bytes * 8 >= a->slen * 7)
		return false;
	if (p->skip) {
		p->skip--;
		return false;
	}
	return ask_made(ep, p, a, false);
}

bool __zcr_pf_ask_next_locked(struct zcr_ep *ep, struct zcr_pf_ask *a)
{
	struct zcr_pf_ep *pe = ep->pf;
	struct zcr_pf *pf = ep->ctx->pf;
	struct pf_pred *p;

	if (!pe || !pf || !pe->came)
		return false;
	p = pe->came;
	pe->came = NULL;
	if (pe->asked || pe->local || !p->arrive ||
	    !pred_next(p, &a->saddr, &a->slen) || a->slen < pf->min)
		return false;
	if (p->arrive_skip) {
		p->arrive_skip--;
		return false;
	}
	return ask_made(ep, p, a, true);
}

/* An arrival ask of p got little or nothing: not at every message. */
static void arrive_off(struct pf_pred *p)
{
	p->arrive_skip = 2u << (p->arrive_fail < 3 ? p->arrive_fail : 3);
	p->arrive_fail++;
}

void __zcr_pf_asked_failed_locked(struct zcr_ep *ep)
{
	if (ep->pf)
		ep->pf->asked = 0;
}

bool __zcr_pf_info_pending(const struct zcr_ep *ep)
{
	return ep->pf && ep->pf->info;
}

int __zcr_pf_info_locked(struct zcr_ep *ep, uint32_t token, uint64_t saddr,
			 uint64_t bmlen, uint8_t **bm)
{
	struct zcr_pf_ep *pe = ep->pf;

	*bm = NULL;
	if (!pe || pe->info)
		return -EPROTO;
	if (!token != !bmlen)
		return -EPROTO;	/* a bitmap goes with a pre-send */
	if (bmlen) {
		pe->info_bm = malloc(bmlen);
		if (!pe->info_bm)
			return -ENOMEM;
	}
	pe->info = true;
	pe->info_token = token;
	pe->info_saddr = saddr;
	pe->info_bmlen = bmlen;
	*bm = pe->info_bm;
	return 0;
}

static void info_clear(struct zcr_pf_ep *pe)
{
	free(pe->info_bm);
	pe->info_bm = NULL;
	pe->info = false;
}

/* Remember where a message of (comm, tag) came from. */
static struct pf_pred *pred_learn(struct zcr_pf_ep *pe, uint32_t comm,
				  int tag, uint64_t saddr, uint64_t len)
{
	struct pf_pred *p = pred_find(pe, comm, tag, true);

	memmove(p->a + 1, p->a, sizeof(p->a[0]) * (PRED_HIST - 1));
	memmove(p->l + 1, p->l, sizeof(p->l[0]) * (PRED_HIST - 1));
	p->a[0] = saddr;
	p->l[0] = len;
	if (p->n < PRED_HIST)
		p->n++;
	return p;
}

int __zcr_pf_data_locked(struct zcr_ep *ep, uint32_t comm, int tag,
			 uint64_t len, const struct zcr_pf_run **runs,
			 size_t *nruns, uint64_t *wire_len)
{
	struct zcr_pf_ep *pe = ep->pf;
	uint64_t np, k, lo, hi, off = 0;
	size_t n = 0;

	*runs = NULL;
	*nruns = 0;
	*wire_len = len;
	if (!pe || !pe->info)
		return 0;	/* a small message: no PF_INFO */
	pe->came = pred_learn(pe, comm, tag, pe->info_saddr, len);
	/* A message of the stream came: the pre-send kept is for no other. */
	if (pe->store.pred == pe->came)
		pe->store.fresh = false;
	if (!pe->info_token) {
		/* Asked for at its arrival and not used: ask less (once). */
		if (pe->store.token && pe->store.pred == pe->came &&
		    pe->store.arrival) {
			arrive_off(pe->came);
			pe->store.arrival = false;
		}
		info_clear(pe);
		return 0;
	}
	/*
	 * The pre-send it uses: ours. The message may start or end
	 * elsewhere than the buffer asked for; each page left out must
	 * have come whole in the pre-send.
	 */
	np = npages_of(pe->info_saddr, len);
	if (pe->store.token != pe->info_token ||
	    pe->info_bmlen != (np + 7) / 8 ||
	    pe->info_saddr + len < pe->info_saddr ||
	    pe->store.saddr + pe->store.slen < pe->store.saddr)
		return -EPROTO;	/* (and no range past the end of memory) */
	free(pe->runs);
	pe->runs = calloc(np / 2 + 1, sizeof(*pe->runs));
	if (!pe->runs)
		return -ENOMEM;
	/* Pages left out must be pre-sent ones; the others make runs. */
	*wire_len = 0;
	for (k = 0; k < np; k++) {
		page_bytes(pe->info_saddr, len, k, &lo, &hi);
		if (bit(pe->info_bm, k)) {
			uint64_t j;

			if (!page_in(pe->info_saddr, len, k, pe->store.saddr,
				     pe->store.slen, false, &j) ||
			    !bit(pe->store.have, j))
				return -EPROTO;
			if (off < lo) {
				pe->runs[n].off = off;
				pe->runs[n++].len = lo - off;
				*wire_len += lo - off;
			}
			off = hi;
		}
	}
	if (off < len) {
		pe->runs[n].off = off;
		pe->runs[n++].len = len - off;
		*wire_len += len - off;
	}
	/* Bits past the last page must be clear. */
	for (k = np; k < pe->info_bmlen * 8; k++)
		if (bit(pe->info_bm, k))
			return -EPROTO;
	/*
	 * Whether the stream's last pre-send paid: most of the buffer
	 * pre-sent, most of that left out of this message.
	 */
	if (pe->store.pred == pe->came && pe->came) {
		uint64_t out = len - *wire_len;

		if (pe->store.bytes * 8 >= pe->store.slen * 7 &&
		    out * 4 >= pe->store.bytes * 3) {
			pe->came->arrive = true;
			pe->came->arrive_fail = 0;
		} else if (pe->store.arrival) {
			arrive_off(pe->came);
		}
	}
	pe->nruns = n;
	pe->fill = true;
	pe->fill_len = len;
	pe->fill_saddr = pe->info_saddr;
	*runs = pe->runs;
	*nruns = n ? n : 1;	/* everything left out: one empty run */
	if (!n) {
		pe->runs[0].off = 0;
		pe->runs[0].len = 0;
	}
	return 0;
}

void __zcr_pf_data_done_locked(struct zcr_ep *ep, char *dst, uint64_t room)
{
	struct zcr_pf_ep *pe = ep->pf;
	uint64_t np, k, lo, hi;

	if (!pe || !pe->fill) {
		if (pe && pe->info)
			info_clear(pe);
		return;
	}
	np = npages_of(pe->fill_saddr, pe->fill_len);
	for (k = 0; k < np; k++) {
		if (!bit(pe->info_bm, k))
			continue;
		page_bytes(pe->fill_saddr, pe->fill_len, k, &lo, &hi);
		if (lo >= room)
			break;
		if (hi > room)
			hi = room;
		/* Within the pre-send: __zcr_pf_data_locked checked it. */
		memcpy(dst + lo, pe->store.buf + (pe->fill_saddr + lo -
						  pe->store.saddr), hi - lo);
	}
	/* Used once. */
	store_free(ep->ctx->pf, pe);
	pe->fill = false;
	info_clear(pe);
	free(pe->runs);
	pe->runs = NULL;
	pe->nruns = 0;
}

int __zcr_pf_presend_in_locked(struct zcr_ep *ep, uint32_t token,
			       uint64_t saddr, uint64_t len, uint8_t **bm)
{
	struct zcr_pf *pf = ep->ctx->pf;
	struct zcr_pf_ep *pe = ep->pf;
	struct pf_pred *p;
	uint64_t np;

	*bm = NULL;
	if (!pe || !pe->asked || token != pe->asked ||
	    saddr != pe->asked_saddr || pe->in_bm)
		return -EPROTO;
	np = npages_of(saddr, pe->asked_slen);
	if (len && (len <= (np + 7) / 8 || len - (np + 7) / 8 >
					     pe->asked_slen))
		return -EPROTO;
	/* The sender forgot every older pre-send: so do we. */
	store_free(ep->ctx->pf, pe);
	p = pe->asked_pred;
	if (!len) {
		pe->asked = 0;
		if (p && pe->asked_arrival)
			arrive_off(p);
		/* Nothing came: after a few in a row, ask less often. */
		if (p && ++p->miss >= MISS_BACKOFF)
			p->skip = 2u << (p->miss - MISS_BACKOFF < 2 ?
					 p->miss - MISS_BACKOFF : 2);
		return 0;
	}
	if (p)
		p->miss = 0;
	pe->in_bmlen = (np + 7) / 8;
	pe->in_bm = malloc(pe->in_bmlen);
	if (pf->spare && pf->spare_len >= pe->asked_slen) {
		pe->in_buf = pf->spare;
		pf->spare = NULL;
		pf->spare_len = 0;
	} else {
		pe->in_buf = malloc(pe->asked_slen);
	}
	pe->in_runs = calloc(np / 2 + 1, sizeof(*pe->in_runs));
	if (!pe->in_bm || !pe->in_buf || !pe->in_runs)
		return -ENOMEM;	/* the connection fails: freed with it */
	pe->in_len = len - pe->in_bmlen;
	pe->in_token = token;
	pe->in_saddr = saddr;
	*bm = pe->in_bm;
	return 0;
}

uint64_t __zcr_pf_presend_bmlen(const struct zcr_ep *ep)
{
	return ep->pf->in_bmlen;
}

int __zcr_pf_presend_map_locked(struct zcr_ep *ep, char **dst,
				const struct zcr_pf_run **runs, size_t *nruns)
{
	struct zcr_pf_ep *pe = ep->pf;
	uint64_t slen = pe->asked_slen, np = npages_of(pe->in_saddr, slen);
	uint64_t k, lo, hi, sum = 0;
	size_t n = 0;

	for (k = np; k < pe->in_bmlen * 8; k++)
		if (bit(pe->in_bm, k))
			return -EPROTO;
	/* The pages pre-sent, in runs, into the buffer at their offsets. */
	for (k = 0; k < np; k++) {
		if (!bit(pe->in_bm, k))
			continue;
		page_bytes(pe->in_saddr, slen, k, &lo, &hi);
		if (n && pe->in_runs[n - 1].off + pe->in_runs[n - 1].len == lo) {
			pe->in_runs[n - 1].len += hi - lo;
		} else {
			pe->in_runs[n].off = lo;
			pe->in_runs[n++].len = hi - lo;
		}
		sum += hi - lo;
	}
	if (!n || sum != pe->in_len)
		return -EPROTO;
	*dst = pe->in_buf;
	*runs = pe->in_runs;
	*nruns = n;
	return 0;
}

void __zcr_pf_presend_done_locked(struct zcr_ep *ep)
{
	struct zcr_pf_ep *pe = ep->pf;

	pe->store.token = pe->in_token;
	pe->store.saddr = pe->in_saddr;
	pe->store.slen = pe->asked_slen;
	pe->store.buf = pe->in_buf;
	pe->store.have = pe->in_bm;
	pe->store.bytes = pe->in_len;
	pe->store.pred = pe->asked_pred;
	pe->store.arrival = pe->asked_arrival;
	pe->store.fresh = true;
	/* An arrival ask answered with a small part: not worth asking. */
	if (pe->asked_arrival && pe->asked_pred &&
	    pe->in_len * 8 < pe->asked_slen * 7)
		arrive_off(pe->asked_pred);
	pe->in_buf = NULL;
	pe->in_bm = NULL;
	free(pe->in_runs);
	pe->in_runs = NULL;
	pe->asked = 0;
}

/*
 * The answer being taken in, or just taken, is void: its sender closed
 * the connection and freed what we pulled it from (shm: a revoked
 * PF_DATA cell), so its bytes may be anything. No later message of that
 * sender can use it: the sender revoked every announcement after it.
 */
void __zcr_pf_presend_drop_locked(struct zcr_ep *ep)
{
	struct zcr_pf_ep *pe = ep->pf;

	if (!pe)
		return;
	free(pe->in_buf);
	free(pe->in_bm);
	free(pe->in_runs);
	pe->in_buf = NULL;
	pe->in_bm = NULL;
	pe->in_runs = NULL;
	store_free(ep->ctx->pf, pe);
	pe->asked = 0;
}

/* ---- sender ---- */

/*
 * What this connection's sender remembers of the buffer (saddr, slen):
 * that very buffer, or else one near it (a buffer that drifts, near()).
 */
static struct pf_snd *snd_find(struct zcr_pf_ep *pe, uint64_t saddr,
			       uint64_t slen)
{
	struct pf_snd *nearby = NULL;
	struct zcr_list *pos;

	for (pos = pe->snds.next; pos != &pe->snds; pos = pos->next) {
		struct pf_snd *s = zcr_container_of(pos, struct pf_snd, link);

		if (s->buf->saddr == saddr && s->buf->slen == slen)
			return s;
		if (!nearby && near(s->buf->saddr, s->buf->slen, saddr, slen))
			nearby = s;
	}
	return nearby;
}

/* The versioned buffer (saddr, slen), tracked now if need be; or NULL. */
static struct pf_buf *buf_get(struct zcr_ctx *ctx, uint64_t saddr,
			      uint64_t slen)
{
	struct zcr_pf *pf = ctx->pf;
	struct zcr_list *pos;
	struct pf_buf *b;

	for (pos = pf->bufs.next; pos != &pf->bufs; pos = pos->next) {
		b = zcr_container_of(pos, struct pf_buf, link);
		if (b->saddr == saddr && b->slen == slen) {
			b->refs++;
			return b;
		}
	}
	if (pf->pv_failed || pf->nbufs >= BUFS_MAX)
		return NULL;
	if (!pf->pv) {
		/*
		 * The hash reads the buffer itself, and a request may come
		 * for a buffer the application is unmapping that moment:
		 * prefetch uses it only when asked to by name
		 * (ZCRECV_PREFETCH_PAGEVER=hash), not as AUTO's fallback.
		 * With zcrecv.ko's versions, buffers in versioned zones
		 * (zcr_mem_alloc) are tracked whatever AUTO fell back to.
		 */
		if (__zcr_pv_open_kmod(&pf->pv, ZCR_PV_AUTO, ctx->kmod_fd) ||
		    (__zcr_pv_mech(pf->pv) == ZCR_PV_HASH &&
		     !ctx->env.v[ZCR_ENV_PREFETCH_PAGEVER].u &&
		     !__zcr_pv_kmod(pf->pv))) {
			__zcr_pv_close(pf->pv);
			pf->pv = NULL;
			pf->pv_failed = true;	/* no mechanism works here */
			return NULL;
		}
		ctx->pv = pf->pv;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	if (__zcr_pv_track(pf->pv, (const void *)(uintptr_t)saddr, slen,
			   &b->range)) {
		free(b);
		return NULL;
	}
	if (__zcr_pv_range_mech(b->range) == ZCR_PV_HASH &&
	    !ctx->env.v[ZCR_ENV_PREFETCH_PAGEVER].u) {
		__zcr_pv_untrack(pf->pv, b->range);	/* see above */
		free(b);
		return NULL;
	}
	b->saddr = saddr;
	b->slen = slen;
	b->npages = __zcr_pv_npages(b->range);
	b->refs = 1;
	zcr_list_add_tail(&b->link, &pf->bufs);
	pf->nbufs++;
	return b;
}

static struct pf_snd *snd_new(struct zcr_ctx *ctx, struct zcr_pf_ep *pe,
			      uint64_t saddr, uint64_t slen)
{
	struct zcr_pf *pf = ctx->pf;
	struct pf_buf *b = buf_get(ctx, saddr, slen);
	struct pf_snd *s;

	if (!b)
		return NULL;
	/* The page grids must agree: one version per wire page. */
	if (b->npages != npages_of(saddr, slen)) {
		buf_put(pf, b);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		buf_put(pf, b);
		return NULL;
	}
	s->buf = b;
	s->contents = b->contents;
	zcr_list_add_tail(&s->link, &pe->snds);
	s->last = calloc(b->npages, sizeof(*s->last));
	s->pre = calloc(b->npages, sizeof(*s->pre));
	s->rew = calloc((b->npages + 7) / 8, 1);
	s->pre_set = calloc((b->npages + 7) / 8, 1);
	s->hlast = calloc(b->npages, sizeof(*s->hlast));
	s->hpre = calloc(b->npages, sizeof(*s->hpre));
	s->trial = calloc((b->npages + 7) / 8, 1);
	if (!s->last || !s->pre || !s->rew || !s->pre_set || !s->hlast ||
	    !s->hpre || !s->trial) {
		snd_free(pf, s);
		return NULL;
	}
	return s;
}

static bool gone_live(const struct zcr_pf_ep *pe, unsigned int g)
{
	return pe->gone[g].nbad_order || pe->gone[g].order_ok ||
	       pe->gone[g].notrack || pe->gone[g].nnotrack;
}

/*
 * Where to remember a buffer being untracked: a free entry if there is
 * one (snd_recall() frees them), else the next in turn. Overwriting a live
 * entry while another is free would restart a buffer's untracked
 * periods (notrack_for()) from the shortest.
 */
static unsigned int gone_slot(struct zcr_pf_ep *pe)
{
	unsigned int g;

	for (g = 0; g < GONE_N; g++)
		if (!gone_live(pe, g))
			return g;
	return pe->gone_next++ % GONE_N;
}

/*
 * Untrack s (policy: idle, unasked, or an order that failed on a buffer
 * with no stable part), remembering what its order did; the next
 * notrack requests for it are answered with nothing, untracked.
 */
static void snd_retire(struct zcr_pf *pf, struct zcr_pf_ep *pe,
		       struct pf_snd *s, unsigned int notrack)
{
	if (s->nbad_order || s->order_ok || notrack || s->nnotrack) {
		unsigned int g = gone_slot(pe);

		free(pe->gone[g].ph);
		memset(&pe->gone[g], 0, sizeof(pe->gone[g]));
		pe->gone[g].saddr = s->buf->saddr;
		pe->gone[g].slen = s->buf->slen;
		pe->gone[g].nbad_order = s->nbad_order;
		/* Untracked for a while: that is the distrust. */
		pe->gone[g].distrust = notrack ? 0 : s->distrust;
		pe->gone[g].order_ok = s->order_ok;
		pe->gone[g].notrack = notrack;
		pe->gone[g].nnotrack = s->nnotrack;
	}
	snd_free(pf, s);
}

/* The untracked buffer near (saddr, slen) remembered, or -1. */
static int gone_find(const struct zcr_pf_ep *pe, uint64_t saddr,
		     uint64_t slen)
{
	unsigned int g;

	for (g = 0; g < GONE_N; g++)
		if (gone_live(pe, g) &&
		    near(pe->gone[g].saddr, pe->gone[g].slen, saddr, slen))
			return (int)g;
	return -1;
}

/* s is tracked again: what its order did before it was untracked. */
static void snd_recall(struct zcr_pf_ep *pe, struct pf_snd *s)
{
	int g = gone_find(pe, s->buf->saddr, s->buf->slen);

	if (g < 0)
		return;
	s->nbad_order = pe->gone[g].nbad_order;
	s->distrust = pe->gone[g].distrust;
	s->order_ok = pe->gone[g].order_ok;
	s->nnotrack = pe->gone[g].nnotrack;
	free(pe->gone[g].ph);
	memset(&pe->gone[g], 0, sizeof(pe->gone[g]));
}

/*
 * An order-trusting pre-send of s, or a trial of the order, went bad:
 * only the stable part for the next 8, 32, 128, then 512 requests, and
 * a trial again before the order is trusted.
 */
static void order_bad(struct pf_snd *s)
{
	s->distrust = 8u << 2 * (s->nbad_order < 3 ? s->nbad_order : 3);
	s->nbad_order++;
	s->order_ok = false;
}

/* The versions of s's buffer now into v; false: they cannot be had. */
static bool read_versions(struct zcr_pf *pf, struct pf_snd *s, uint64_t *v)
{
	return __zcr_pv_read(pf->pv, s->buf->range, v) == 0;
}

/* A pre-send of s that is not used: its bytes were for nothing. */
static void pre_drop(struct zcr_ctx *ctx, struct pf_snd *s)
{
	if (s->token)
		ctx->st.pf_wasted_bytes += s->pre_bytes;
	s->token = 0;
	s->pre_bytes = 0;
	s->have_hpre = false;
	s->have_trial = false;
}

/*
 * Another connection switched s's buffer to contents mode: what s kept
 * was taken in the other mode and cannot be compared with what comes
 * now. Start afresh (the next send is the baseline).
 */
static void snd_mode(struct zcr_ctx *ctx, struct pf_snd *s)
{
	if (s->contents == s->buf->contents)
		return;
	pre_drop(ctx, s);
	s->contents = s->buf->contents;
	s->have_last = false;
	s->have_rew = false;
	s->have_hlast = false;
	s->hash_skip = 0;
	s->same_run = 0;
	s->changed_run = 0;
}

/*
 * A hash of the len bytes at p (one page's bytes of a message, len <=
 * ZCR_PF_PAGE): the page hash of the hash mechanism (lib/pagever/hash.c),
 * a partial page padded with zeros and told apart by its length.
 */
static uint64_t bytes_hash(const char *p, uint64_t len)
{
	uint64_t page[ZCR_PF_PAGE / 8], seed = len % ZCR_PF_PAGE;

	/* The same bytes hash the same wherever they are (aligned or not). */
	if (!seed && (uintptr_t)p % 8 == 0)
		return __zcr_pv_hash_page(p, 0);
	memset(page, 0, sizeof(page));
	memcpy(page, p, len);
	return __zcr_pv_hash_page(page, seed);
}

/* A send of (saddr, slen) on ep is queued and not all written. */
static bool send_under_way(struct zcr_ep *ep, uint64_t saddr, uint64_t slen)
{
	struct zcr_list *pos;

	for (pos = ep->sendq.next; pos != &ep->sendq; pos = pos->next) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		if (r->kind == ZCR_REQ_SEND &&
		    near((uint64_t)(uintptr_t)r->sbuf, r->len, saddr, slen))
			return true;
	}
	return false;
}

/*
 * The bytes of the pages of set of the buffer (saddr, slen), in order,
 * to dst, read from our own memory without trusting that it is still
 * mapped (the application may have freed the buffer since its last
 * send): process_vm_readv(2) on ourselves fails instead of faulting.
 * False: it could not be read.
 */
static bool copy_out(char *dst, uint64_t saddr, uint64_t slen,
		     const uint8_t *set, uint64_t np)
{
	uint64_t k, lo, hi, at = 0;
	struct iovec l, rm[64];
	unsigned int nr = 0;

	for (k = 0; k <= np; k++) {
		bool flush = k == np || nr == 64;

		if (k < np && bit(set, k) && !flush) {
			page_bytes(saddr, slen, k, &lo, &hi);
			if (nr && (char *)rm[nr - 1].iov_base +
				  rm[nr - 1].iov_len ==
				  (char *)(uintptr_t)(saddr + lo)) {
				rm[nr - 1].iov_len += hi - lo;
			} else {
				rm[nr].iov_base = (void *)(uintptr_t)(saddr + lo);
				rm[nr++].iov_len = hi - lo;
			}
			continue;
		}
		if (nr) {
			uint64_t want = 0;
			unsigned int i;

			for (i = 0; i < nr; i++)
				want += rm[i].iov_len;
			l.iov_base = dst + at;
			l.iov_len = want;
			if (process_vm_readv(getpid(), &l, 1, rm, nr, 0) !=
			    (ssize_t)want)
				return false;
			at += want;
			nr = 0;
		}
		if (flush && k < np)
			k--;	/* this page again, in a fresh batch */
	}
	return true;
}

/*
 * PF_DATA's body for the pages of set: the bitmap, then the pages
 * (copy_out). NULL: they could not be read (or no memory).
 */
static char *gather(uint64_t saddr, uint64_t slen, const uint8_t *set,
		    uint64_t np, uint64_t *len)
{
	uint64_t bml = (np + 7) / 8, k, lo, hi, n = 0;
	char *body;

	for (k = 0; k < np; k++) {
		if (bit(set, k)) {
			page_bytes(saddr, slen, k, &lo, &hi);
			n += hi - lo;
		}
	}
	body = malloc(bml + n);
	if (!body)
		return NULL;
	memcpy(body, set, bml);
	*len = bml + n;
	if (!copy_out(body + bml, saddr, slen, set, np)) {
		free(body);
		return NULL;
	}
	return body;
}

/*
 * Contents mode, a request for (saddr, slen): the pages of it that are
 * the very bytes of a page of s's buffer (qall), copied out in order at
 * body + hdr (room for PF_DATA's bitmap before them), and the hash of
 * each into v[j] of its page j, the versions of this mode; a page of
 * s's buffer not among them is not read and keeps its last version
 * (only the rules read it: it cannot be pre-sent). The copy is in the
 * grid asked for, so that pre-sending all of it moves no byte. NULL:
 * not readable, or no memory.
 */
static char *contents_read(const struct pf_snd *s, uint64_t saddr,
			   uint64_t slen, uint8_t *qall, uint64_t *v)
{
	uint64_t nq = npages_of(saddr, slen), hdr = (nq + 7) / 8;
	uint64_t k, j, lo, hi, n = 0, at;
	char *body;

	memcpy(v, s->last, s->buf->npages * sizeof(*v));
	memset(qall, 0, hdr);
	for (k = 0; k < nq; k++) {
		if (page_in(saddr, slen, k, s->buf->saddr, s->buf->slen, true,
			    &j)) {
			qall[k / 8] |= (uint8_t)(1u << (k % 8));
			page_bytes(saddr, slen, k, &lo, &hi);
			n += hi - lo;
		}
	}
	body = malloc(hdr + n);
	if (!body)
		return NULL;
	if (!copy_out(body + hdr, saddr, slen, qall, nq)) {
		free(body);
		return NULL;
	}
	at = hdr;
	for (k = 0; k < nq; k++) {
		if (!bit(qall, k))
			continue;
		page_bytes(saddr, slen, k, &lo, &hi);
		page_in(saddr, slen, k, s->buf->saddr, s->buf->slen, true, &j);
		v[j] = bytes_hash(body + at, hi - lo);
		at += hi - lo;
	}
	return body;
}

/*
 * Contents mode: PF_DATA's body for the pages of qset (a subset of
 * qall) made in place from contents_read()'s copy: the bitmap, then
 * those pages moved down in order (none when they are all of qall).
 */
static char *contents_body(char *body, uint64_t saddr, uint64_t slen,
			   const uint8_t *qall, const uint8_t *qset,
			   uint64_t *len)
{
	uint64_t nq = npages_of(saddr, slen), hdr = (nq + 7) / 8;
	uint64_t k, lo, hi, at = hdr, from = hdr;

	for (k = 0; k < nq; k++) {
		if (!bit(qall, k))
			continue;
		page_bytes(saddr, slen, k, &lo, &hi);
		if (bit(qset, k)) {
			if (from != at)
				memmove(body + at, body + from, hi - lo);
			at += hi - lo;
		}
		from += hi - lo;
	}
	memcpy(body, qset, hdr);
	*len = at;
	return body;
}

/*
 * The hashes of the pages of s pre-sent (qset, in the grid of the buffer
 * asked for, saddr and slen; their bytes at body), as the bytes left: a
 * page not written since the last send (s->pre against s->last) nor
 * while it was copied out (the versions read again now) left with the
 * bytes it had at that send, whose hash is kept; the others are hashed.
 * In contents mode the versions read at the request are those hashes.
 */
static void pre_hashes(struct zcr_pf *pf, struct pf_snd *s, uint64_t saddr,
		       uint64_t slen, const uint8_t *qset, const char *body)
{
	uint64_t nq = npages_of(saddr, slen), k, j, lo, hi;
	uint64_t *now = NULL;
	bool same = false;

	if (!s->contents) {
		now = malloc(s->buf->npages * sizeof(*now));
		same = now && s->have_hlast && read_versions(pf, s, now);
	}
	for (k = 0; k < nq; k++) {
		if (!bit(qset, k))
			continue;
		page_bytes(saddr, slen, k, &lo, &hi);
		page_in(saddr, slen, k, s->buf->saddr, s->buf->slen, true, &j);
		if (s->contents)
			s->hpre[j] = s->pre[j];	/* the hash of these bytes */
		else if (same && s->pre[j] == s->last[j] && now[j] == s->pre[j])
			s->hpre[j] = s->hlast[j];
		else
			s->hpre[j] = bytes_hash(body, hi - lo);
		body += hi - lo;
	}
	free(now);
}

int __zcr_pf_request_locked(struct zcr_ep *ep, uint32_t token,
			    uint64_t saddr, uint64_t slen, char **data,
			    uint64_t *len)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct zcr_pf *pf = ctx->pf;
	struct zcr_pf_ep *pe = ep->pf;
	struct zcr_list *pos;
	struct pf_snd *s;
	uint64_t *cur, k, j, np, nq, lo, hi, n = 0;
	char *whole = NULL;
	uint8_t *qset, *qall = NULL;
	int64_t top = -1;
	bool trial;

	*data = NULL;
	*len = 0;
	/* The receiver forgets every older pre-send: so do we. */
	for (pos = pe->snds.next; pos != &pe->snds; pos = pos->next)
		pre_drop(ctx, zcr_container_of(pos, struct pf_snd, link));
	if (slen < pf->min)
		goto dropped;
	s = snd_find(pe, saddr, slen);
	/*
	 * Asked for while its send is on the wire: too late, and no reason
	 * to start tracking it (IS asks only for messages in flight).
	 */
	if (!s && send_under_way(ep, saddr, slen)) {
		ctx->st.pf_late++;
		return 0;
	}
	if (!s) {
		int g = gone_find(pe, saddr, slen);

		/* Its order failed and nothing of it is stable: not yet. */
		if (g >= 0 && pe->gone[g].notrack) {
			/*
			 * Asked for: its looks come NOTRACK_PROBE sends apart
			 * again. They back off only while nobody asks; backed
			 * off while FT's receiver still asked, FT ran 1.5%
			 * slower with prefetching than without (1.015 against
			 * 1.000, means of six paired runs of four trials),
			 * for a reason not found.
			 */
			pe->gone[g].probe_gap = 0;
			/* The last of them: a look half done is moot. */
			if (!--pe->gone[g].notrack) {
				free(pe->gone[g].ph);
				pe->gone[g].ph = NULL;
			}
			goto dropped;
		}
		/*
		 * Not tracked yet: from now on. Its versions now are the
		 * baseline, as if it had just been sent.
		 */
		s = snd_new(ctx, pe, saddr, slen);
		if (s)
			snd_recall(pe, s);
		if (s && !s->contents && read_versions(pf, s, s->last))
			s->have_last = true;
		goto dropped;
	}
	s->unasked = 0;
	snd_mode(ctx, s);
	if (send_under_way(ep, saddr, slen))
		goto late;
	if (s->skip) {
		s->skip--;
		goto dropped;
	}
	cur = s->pre;		/* read into the pre-send's versions */
	nq = npages_of(saddr, slen);
	if (s->contents) {
		/* No versions but the bytes' hashes: read them all. */
		if (!s->have_last)
			goto dropped;
		qall = calloc((nq + 7) / 8, 1);
		whole = qall ? contents_read(s, saddr, slen, qall, cur) : NULL;
		if (!whole) {
			free(qall);
			snd_free(pf, s);
			goto dropped;
		}
	} else if (!read_versions(pf, s, cur)) {
		snd_free(pf, s);
		goto dropped;
	}
	np = s->buf->npages;
	if (!s->have_last) {
		memcpy(s->last, cur, np * sizeof(*cur));
		s->have_last = true;
		goto dropped;
	}
	/*
	 * Which pages look final (Documentation/prefetch.md, "What is
	 * pre-sent"). The producer rewrites the buffer in order since its
	 * last send: the pages below the highest rewritten one are done
	 * (that one may be in the middle of being written), all of them
	 * once the last page was rewritten. Past it, a page not rewritten
	 * now is final if it was not rewritten before the last send either
	 * (the stable part of the buffer); one that was will be again.
	 */
	for (k = 0; k < np; k++)
		if (cur[k] != s->last[k])
			top = (int64_t)k;
	/*
	 * A buffer not written in order (an FFT's, a sort's) made the
	 * order-trusting rules pre-send pages that were rewritten before
	 * the send: for a while after that, only its stable part goes.
	 */
	s->pre_order = !s->distrust && s->order_ok;
	trial = !s->distrust && !s->order_ok;
	if (s->distrust)
		s->distrust--;
	memset(s->pre_set, 0, (np + 7) / 8);
	memset(s->trial, 0, (np + 7) / 8);
	s->ntrial = 0;
	for (k = 0; k < np; k++) {
		bool stable = s->have_rew && !bit(s->rew, k) &&
			      cur[k] == s->last[k];
		bool order;

		if (top == (int64_t)np - 1)
			order = true;
		else if ((int64_t)k < top)
			order = true;
		else if ((int64_t)k == top)
			order = false;
		else
			order = stable;
		if (s->pre_order ? order : stable)
			s->pre_set[k / 8] |= (uint8_t)(1u << (k % 8));
		else if (trial && order) {
			/* Withheld: what the send makes of it decides. */
			s->trial[k / 8] |= (uint8_t)(1u << (k % 8));
			s->ntrial++;
		}
	}
	s->have_trial = s->ntrial != 0;
	/*
	 * The answer counts the pages of the buffer asked for, which may
	 * start or end elsewhere than the one tracked (a buffer that
	 * drifts): only the pages whose bytes are the same in both go.
	 */
	qset = calloc((nq + 7) / 8, 1);
	if (!qset) {
		free(whole);
		free(qall);
		goto dropped;
	}
	for (k = 0; k < nq; k++) {
		if (page_in(saddr, slen, k, s->buf->saddr, s->buf->slen, true,
			    &j) && bit(s->pre_set, j)) {
			qset[k / 8] |= (uint8_t)(1u << (k % 8));
			page_bytes(saddr, slen, k, &lo, &hi);
			n += hi - lo;
		}
	}
	memset(s->pre_set, 0, (np + 7) / 8);
	for (k = 0; k < nq; k++)
		if (bit(qset, k) && page_in(saddr, slen, k, s->buf->saddr,
					    s->buf->slen, true, &j))
			s->pre_set[j / 8] |= (uint8_t)(1u << (j % 8));
	if (!n) {
		free(whole);
		free(qall);
		free(qset);
		if (s->have_trial)
			goto dropped;	/* a trial of the order, no more */
		goto late;	/* what was asked for went, or is not begun */
	}
	if (whole)
		*data = contents_body(whole, saddr, slen, qall, qset, len);
	else
		*data = gather(saddr, slen, qset, nq, len);
	free(qall);
	if (!*data) {
		free(qset);
		snd_free(pf, s);
		goto dropped;
	}
	s->token = token;
	s->pre_bytes = n;
	s->idle = 0;
	s->have_hpre = !s->hash_skip;
	if (s->have_hpre)
		pre_hashes(pf, s, saddr, slen, qset, *data + (nq + 7) / 8);
	free(qset);
	ctx->st.pf_presend_bytes += n;
	return 0;
late:
	ctx->st.pf_late++;
	if (++s->idle >= IDLE_MAX)
		snd_retire(pf, pe, s, 0);
	return 0;
dropped:
	ctx->st.pf_dropped++;
	return 0;
}

/*
 * The hash of every page of s's buffer as send r goes: a page whose
 * version did not change since the last send keeps the hash it had then.
 * The application does not write a buffer being sent, so its bytes are
 * read here as they go on the wire; a page of s's buffer not within the
 * message (r drifted from it) is not read, and gets a hash other than
 * its last (rewritten, for the rules; left out of r it cannot be).
 * cur NULL (contents mode): every page within r hashed, the others
 * keep their last. NULL: no memory.
 */
static uint64_t *send_hashes(const struct pf_snd *s, const struct zcr_req *r,
			     const uint64_t *cur)
{
	uint64_t saddr = (uint64_t)(uintptr_t)r->sbuf, np = s->buf->npages;
	uint64_t *h = malloc(np * sizeof(*h)), k, m, lo, hi;

	if (!h)
		return NULL;
	for (k = 0; k < np; k++) {
		if (cur && s->have_hlast && cur[k] == s->last[k]) {
			h[k] = s->hlast[k];
			continue;
		}
		if (!page_in(s->buf->saddr, s->buf->slen, k, saddr, r->len,
			     false, &m)) {
			/*
			 * In contents mode these are its versions: unread,
			 * taken as they were (only the rules read them).
			 */
			h[k] = cur ? ~s->hlast[k] : s->hlast[k];
			continue;
		}
		page_bytes(s->buf->saddr, s->buf->slen, k, &lo, &hi);
		h[k] = bytes_hash((const char *)(uintptr_t)(s->buf->saddr + lo),
				  hi - lo);
	}
	return h;
}

/*
 * Version mode, after a send of s: a buffer written whole (7/8 of its
 * pages or more) with the same bytes (7/8 of them or more) CONTENTS_IN
 * sends in a row gains nothing from its versions (every page is
 * written, every page is hashed) and pays a write fault per page per
 * send: untrack it and let the hashes be its versions.
 */
static void contents_in(struct zcr_pf *pf, struct pf_snd *s, uint64_t written,
			uint64_t same)
{
	uint64_t np = s->buf->npages;

	if (written * 8 < np * 7 || same * 8 < written * 7) {
		s->same_run = 0;
		return;
	}
	if (++s->same_run < CONTENTS_IN || s->buf->contents)
		return;
	s->same_run = 0;
	__zcr_pv_untrack(pf->pv, s->buf->range);
	s->buf->range = NULL;
	s->buf->contents = true;
	s->contents = true;
	s->hash_skip = 0;
}

/*
 * After a send of s: keep its page hashes (hnow, NULL when not hashed)
 * for the next one, and stop hashing for a while when the pages the
 * application rewrote mostly got other bytes (HASH_BAD sends in a row):
 * then hashing only costs. In version mode a buffer that is written
 * whole with the same bytes goes to contents mode (contents_in()).
 */
static void hash_policy(struct zcr_pf *pf, struct pf_snd *s,
			const uint64_t *cur, const uint64_t *hnow)
{
	uint64_t k, np = s->buf->npages, written = 0, same = 0;

	if (!hnow) {
		if (s->hash_skip)
			s->hash_skip--;
		s->have_hlast = false;
		s->same_run = 0;
		return;
	}
	if (s->have_hlast && s->have_last) {
		for (k = 0; k < np; k++) {
			if (cur[k] == s->last[k])
				continue;
			written++;
			same += hnow[k] == s->hlast[k];
		}
		if (written && same * 2 < written) {
			if (++s->hash_bad >= HASH_BAD) {
				s->hash_bad = 0;
				s->hash_skip = HASH_SKIP;
			}
		} else if (written) {
			s->hash_bad = 0;
		}
		contents_in(pf, s, written, same);
	}
	memcpy(s->hlast, hnow, np * sizeof(*hnow));
	s->have_hlast = true;
}

/*
 * Contents mode, after a send of s: true when the buffer's pages mostly
 * got other bytes CONTENTS_OUT sends in a row. Then hashing all of it
 * at every send is paid for little: s is to be untracked, and tracked
 * with versions when asked for again.
 */
static bool contents_out(struct pf_snd *s, const uint64_t *cur)
{
	uint64_t k, np = s->buf->npages, changed = 0;

	if (!s->have_last)
		return false;
	for (k = 0; k < np; k++)
		changed += cur[k] != s->last[k];
	if (changed * 2 <= np) {
		s->changed_run = 0;
		return false;
	}
	return ++s->changed_run >= CONTENTS_OUT;
}

/* The pages of s not rewritten between its last two sends. */
static uint64_t stable_pages(const struct pf_snd *s)
{
	uint64_t k, n = 0;

	for (k = 0; k < s->buf->npages; k++)
		n += !bit(s->rew, k);
	return n;
}

/*
 * s is untracked for having nothing stable while its order was
 * distrusted: for how many requests. 8, 32, 128, then 512, counted
 * over the run: FT's slabs, tracked again after 8, showed no stable
 * part and decided no trial (its requests come before the iteration
 * writes anything) and stayed tracked for the rest of the run, paying
 * the write faults. A buffer that turns stable meanwhile is found by
 * probe_send(), not by these running out.
 */
static unsigned int notrack_for(struct pf_snd *s)
{
	unsigned int n = s->nnotrack < 3 ? s->nnotrack : 3;

	s->nnotrack++;
	return 8u << 2 * n;
}

/*
 * Send r of a buffer untracked by notrack_for(): at the first send
 * while it is untracked, then NOTRACK_PROBE sends after the last look,
 * twice that after each look that found nothing (up to
 * NOTRACK_PROBE_MAX), hash its pages (as send_hashes() does: the
 * application does not write a buffer being sent), and at the next send
 * compare. 1/8 of its pages or more with the same bytes is a stable
 * part: tracked at its next request, pre-sent at the ones after. Two
 * passes of the page hash a look, no write fault. Only a send at the
 * untracked buffer's own address and length is looked at: one that
 * drifted comes back when its untracked requests run out. Counted in
 * sends, not requests:
 * a receiver whose asks got nothing asks seldom (the late sender's
 * buffer, all new bytes for a while, then half of it left alone, was
 * asked for three times in the 14 rounds after it was untracked).
 */
static void probe_send(struct zcr_pf_ep *pe, const struct zcr_req *r)
{
	uint64_t saddr = (uint64_t)(uintptr_t)r->sbuf, np, k, lo, hi, same = 0;
	unsigned int g;
	uint64_t h;
	bool first;

	for (g = 0; g < GONE_N; g++)
		if (pe->gone[g].notrack && pe->gone[g].saddr == saddr &&
		    pe->gone[g].slen == r->len)
			break;
	if (g == GONE_N)
		return;
	first = !pe->gone[g].ph;
	if (first && pe->gone[g].probe_wait) {
		pe->gone[g].probe_wait--;
		return;
	}
	np = npages_of(saddr, r->len);
	if (first) {
		pe->gone[g].ph = malloc(np * sizeof(*pe->gone[g].ph));
		if (!pe->gone[g].ph)
			return;
	}
	for (k = 0; k < np; k++) {
		page_bytes(saddr, r->len, k, &lo, &hi);
		h = bytes_hash((const char *)(uintptr_t)(saddr + lo), hi - lo);
		if (first)
			pe->gone[g].ph[k] = h;
		else
			same += h == pe->gone[g].ph[k];
	}
	if (first)
		return;
	if (same * 8 >= np) {
		pe->gone[g].notrack = 0;
	} else {
		/*
		 * Nothing stable: the next look further off until the next
		 * request, so that a buffer whose receiver stopped asking
		 * (notrack then never runs out) costs its sends ever fewer
		 * hash passes.
		 */
		unsigned int gap = pe->gone[g].probe_gap ?
				   pe->gone[g].probe_gap : NOTRACK_PROBE;

		/* This send and the look's were two of the gap. */
		pe->gone[g].probe_wait = gap - 2;
		pe->gone[g].probe_gap = gap * 2 < NOTRACK_PROBE_MAX ?
					gap * 2 : NOTRACK_PROBE_MAX;
	}
	free(pe->gone[g].ph);
	pe->gone[g].ph = NULL;
}

int __zcr_pf_send_locked(struct zcr_ep *ep, struct zcr_req *r)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct zcr_pf *pf = ctx->pf;
	struct zcr_pf_ep *pe = ep->pf;
	uint64_t saddr = (uint64_t)(uintptr_t)r->sbuf;
	uint64_t np, k, lo, hi, saved = 0, off = 0;
	struct zcr_pf_tx *tx;
	struct pf_snd *s;
	uint64_t *cur = NULL, *hnow = NULL;
	size_t n = 0, extra = 0;
	bool have = false, failed = false, skipping;

	if (!pe || !pf || r->len < pf->min)
		return 0;
	np = npages_of(saddr, r->len);
	s = snd_find(pe, saddr, r->len);
	if (s)
		snd_mode(ctx, s);
	else
		probe_send(pe, r);
	/* Not hashed: its rewritten pages mostly changed, not long ago. */
	skipping = s && s->hash_skip;
	if (s && s->contents) {
		/* The versions are the hashes of the bytes being sent. */
		hnow = send_hashes(s, r, NULL);
		cur = hnow ? malloc(s->buf->npages * sizeof(*cur)) : NULL;
		have = cur != NULL;
		if (have)
			memcpy(cur, hnow, s->buf->npages * sizeof(*cur));
	} else if (s) {
		cur = malloc(s->buf->npages * sizeof(*cur));
		have = cur && read_versions(pf, s, cur);
	}
	if (s && have && !s->contents && !s->hash_skip)
		hnow = send_hashes(s, r, cur);
	/* One block, freed with the request: bitmap, then the runs. */
	if (s && s->token)
		extra = ((np + 7) / 8 + 7) / 8 * 8 +
			(np / 2 + 1) * sizeof(struct zcr_pf_run);
	tx = calloc(1, sizeof(*tx) + extra);
	if (!tx) {
		free(cur);
		free(hnow);
		return -ENOMEM;
	}
	if (extra)
		tx->runs = (struct zcr_pf_run *)(void *)
			   (tx->bm + ((np + 7) / 8 + 7) / 8 * 8);
	tx->saddr = saddr;
	tx->wire_len = r->len;
	if (s && s->token && have) {
		/*
		 * Pre-sent pages whose version did not change stay out, and
		 * those rewritten with the bytes that were pre-sent.
		 */
		uint64_t j;

		for (k = 0; k < np; k++) {
			/* The same bytes as page j of the tracked buffer. */
			if (page_in(saddr, r->len, k, s->buf->saddr,
				    s->buf->slen, true, &j) &&
			    bit(s->pre_set, j) &&
			    (cur[j] == s->pre[j] ||
			     (hnow && s->have_hpre && hnow[j] == s->hpre[j]))) {
				tx->bm[k / 8] |= (uint8_t)(1u << (k % 8));
				page_bytes(saddr, r->len, k, &lo, &hi);
				saved += hi - lo;
			}
		}
	}
	if (saved) {
		for (k = 0; k < np; k++) {
			if (!bit(tx->bm, k))
				continue;
			page_bytes(saddr, r->len, k, &lo, &hi);
			if (off < lo) {
				tx->runs[n].off = off;
				tx->runs[n++].len = lo - off;
			}
			off = hi;
		}
		if (off < r->len) {
			tx->runs[n].off = off;
			tx->runs[n++].len = r->len - off;
		}
		tx->nruns = n;
		tx->token = s->token;
		tx->bmlen = (np + 7) / 8;
		tx->wire_len = r->len - saved;
		ctx->st.pf_saved_bytes += saved;
	}
	if (s && s->token) {
		/* When not to: pre-sends mostly rewritten before the send. */
		ctx->st.pf_wasted_bytes += s->pre_bytes - saved;
		if (saved * 2 < s->pre_bytes) {
			if (s->pre_order) {
				order_bad(s);
				failed = true;
			}
			if (++s->bad >= BAD_BACKOFF)
				s->skip = 4u << (s->bad - BAD_BACKOFF < 4 ?
						 s->bad - BAD_BACKOFF : 4);
		} else {
			s->bad = 0;
			if (s->pre_order)
				s->nbad_order = 0;
			/* More than a tenth wasted: a trial first again. */
			if (s->pre_order && saved * 10 < s->pre_bytes * 9)
				s->order_ok = false;
		}
		s->token = 0;	/* one send uses a pre-send */
		s->pre_bytes = 0;
		s->have_hpre = false;
	}
	if (s && s->have_trial && have) {
		/*
		 * The pages the order would have pre-sent: left alone since
		 * the request (9/10 of them: at most a tenth wasted), the
		 * order holds; else they would have been wasted.
		 */
		uint64_t held = 0;

		for (k = 0; k < s->buf->npages; k++)
			if (bit(s->trial, k) && cur[k] == s->pre[k])
				held++;
		if (held * 10 >= s->ntrial * 9) {
			s->order_ok = true;
		} else {
			order_bad(s);
			failed = true;
		}
		s->have_trial = false;
	} else if (s) {
		s->have_trial = false;
	}
	if (s && have && (++s->unasked >= UNASKED_MAX ||
			  (s->contents && contents_out(s, cur)))) {
		snd_retire(pf, pe, s, 0);
		s = NULL;
	}
	if (s && have) {
		if (s->have_last) {
			/* Rewritten: another version, and other bytes. */
			np = s->buf->npages;
			memset(s->rew, 0, (np + 7) / 8);
			for (k = 0; k < np; k++)
				if (cur[k] != s->last[k] &&
				    !(hnow && s->have_hlast &&
				      hnow[k] == s->hlast[k]))
					s->rew[k / 8] |= (uint8_t)(1u << (k % 8));
			s->have_rew = true;
		}
		if (!s->contents) {
			hash_policy(pf, s, cur, hnow);
		} else {
			memcpy(s->hlast, hnow, s->buf->npages * sizeof(*hnow));
			s->have_hlast = true;
		}
		/* (contents_in() may have switched s: hashes are versions) */
		memcpy(s->last, s->contents ? hnow : cur,
		       s->buf->npages * sizeof(*cur));
		s->have_last = true;
		/*
		 * When not to: its order failed and hardly a page of it was
		 * left alone between its sends, twice in a row, by the page
		 * hashes (FT's slabs, new bytes everywhere each iteration;
		 * once may be a change of phase, and pages written again with
		 * their bytes, as the late sender's, are not rewritten), or
		 * by the versions while the hashes are skipped (they said the
		 * rewritten pages mostly changed). Nothing of it can be
		 * pre-sent while the order is distrusted, and tracking it
		 * costs the application a write fault per page per send:
		 * untrack it (notrack_for()). Tracked again, it is untracked
		 * at once unless a stable part or a trial that holds shows:
		 * its requests may come before anything is written (FT's),
		 * and then no trial fails either.
		 */
		if ((hnow || skipping) && s->have_rew &&
		    stable_pages(s) * 8 < s->buf->npages)
			s->nostable++;
		else
			s->nostable = 0;
		if (s->nostable >= 2 &&
		    (failed || (s->nnotrack && !s->order_ok))) {
			snd_retire(pf, pe, s, notrack_for(s));
			s = NULL;
		}
	} else if (s) {
		snd_free(pf, s);	/* its versions cannot be had */
	}
	free(cur);
	free(hnow);
	r->pf = tx;
	return 0;
}
