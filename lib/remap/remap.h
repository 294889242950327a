/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * remap.h - remap backends (lib/remap/{kmod,uffd,copy}.c), the engine and
 * its landing policy (lib/remap/engine.c) and the /dev/zcrecv handshake
 * (lib/remap/kmod_device.c).
 */
#ifndef ZCR_REMAP_H
#define ZCR_REMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zcrecv.h"
#include "base/list.h"
#include "base/mem.h"

struct zcr_ctx;
struct zcr_slot;

/*
 * One slot of staging memory, of the kind its backend (ops) can move: the
 * record the backends work on. The staging pool (lib/staging) keeps them.
 */
struct zcr_slot {
	struct zcr_list link;
	const struct zcr_remap_ops *ops;
	char *base;
	size_t cap;
	/*
	 * A receive waits for the payload still landing here: what the
	 * engine decided for it then (kind + 1; 0: nothing yet; timed: 0
	 * not decided, 1 untimed, 2 timed), and, when that was a remap the
	 * backend prepared (ops->prepare), the backend's note of it until
	 * remap() or unprepare() (prep != NULL) and what preparing cost
	 * (ns, added to the landing's time).
	 */
	int kind, timed;
	void *prep;
	char *prep_dst;
	size_t prep_off, prep_len;
	double prep_ns;
	/*
	 * A slot of 2 MiB units whose last exchange took the pages of
	 * memory outside zcr_mem_alloc's blocks of huge pages (malloc's
	 * 4 KiB pages, say): it never moves them into such a block
	 * (remap_range() copies instead), and a message predicted for a
	 * block is staged in another slot where there is one.
	 */
	bool small;
};

/*
 * Open /dev/zcrecv, run the handshake; returns the fd or -errno. info (may
 * be NULL): every field of this library's struct zcr_kmod_info.
 */
int __zcr_kmod_open(struct zcr_kmod_info *info);

/*
 * One backend. Staging slots come from the backend that will remap them,
 * so that source and destination are the kind of memory it can move.
 * Every operation gets the backend's per-context state (priv_size bytes,
 * zeroed before init, freed after fini).
 *
 * unit() is the alignment a message of len bytes is staged at: the slot
 * keeps the predicted buffer's offset modulo the unit, so that the
 * buffer's unit-aligned middle lines up with whole units of the slot.
 * slot_size() rounds a slot up to what slot_alloc() maps.
 *
 * remap() moves the full pages at s->base + off into dst (both page
 * aligned, len a multiple of the page size) and returns the bytes moved
 * from the start (a prefix; possibly 0) or -errno with nothing moved; the
 * caller copies the rest, which is still at s->base + off + returned. It
 * may give the slot other memory (s->base changes, s->cap does not).
 *
 * Registration (base/ops.h): size first; name, slot_alloc and slot_free
 * are required; init (nothing), fini (nothing), slot_size (len as is) and
 * eligible (never) have defaults. unit, unit_at, remap, prepare and
 * unprepare are what the backend can do, and stay NULL when it cannot:
 * the engine copies instead (copy has none of them).
 */
struct zcr_remap_ops {
	size_t size;			/* sizeof(struct zcr_remap_ops) */
	const char *name;		/* what ZCRECV_BACKEND takes and stats
					 * print */
	const char *alias;		/* also accepted, or NULL */
	int id;				/* enum zcr_backend; one outside it
					 * (ZCR_REMAP_ID_PRIVATE up) is chosen
					 * by ZCRECV_BACKEND only */
	size_t priv_size;
	int (*init)(struct zcr_ctx *ctx, void *priv);
	void (*fini)(struct zcr_ctx *ctx, void *priv);
	size_t (*unit)(struct zcr_ctx *ctx, void *priv, size_t len);
	size_t (*slot_size)(struct zcr_ctx *ctx, void *priv, size_t len);
	int (*slot_alloc)(struct zcr_ctx *ctx, void *priv, size_t len,
			  void **p);
	void (*slot_free)(struct zcr_ctx *ctx, void *priv, void *p,
			  size_t len);
	bool (*eligible)(struct zcr_ctx *ctx, void *priv, const void *dst,
			 size_t len);
	/*
	 * remap() moves whole units of unit(s->cap) only: the engine copies
	 * the head and tail of a message that do not fill one.
	 */
	bool units_only;
	/*
	 * units_only backends whose memory comes in several units (kmod:
	 * 4 KiB and huge zones): the unit of the memory at [dst, dst + len),
	 * 0 if it is not theirs. An exchange needs the same unit on both
	 * sides; a landing whose slot and buffer differ is copied. Needs
	 * unit; at landing it stands in for eligible (one look up).
	 */
	size_t (*unit_at)(struct zcr_ctx *ctx, void *priv, const void *dst,
			  size_t len);
	long (*remap)(struct zcr_ctx *ctx, void *priv, void *dst,
		      struct zcr_slot *s, size_t off, size_t len);
	/*
	 * Optional. A receive for [dst, dst + len) was posted while the
	 * payload still lands in s at off: do now, while the receiver
	 * waits, what of remap() does not need the payload (uffd-move takes
	 * the user's pages out). 0 when done (s->prep set): remap() of
	 * exactly that range then finishes it, unprepare() puts dst back as
	 * it was; else -errno, with nothing changed. abandoned: the receive
	 * will never complete (the context goes) and dst may no longer be
	 * the application's: give back only what needs no write into it.
	 */
	int (*prepare)(struct zcr_ctx *ctx, void *priv, void *dst,
		       struct zcr_slot *s, size_t off, size_t len);
	void (*unprepare)(struct zcr_ctx *ctx, void *priv,
			  struct zcr_slot *s, bool abandoned);
};

/* Ids of backends that have no value in the public enum zcr_backend. */
#define ZCR_REMAP_ID_PRIVATE	256

/*
 * Define backend NAME's ops table, starting with .size (base/ops.h):
 * ZCR_REMAP_BACKEND(NAME) = { .size = sizeof(struct zcr_remap_ops), ... };
 * the registry's line X(NAME) in lib/remap/engine.c declares it, and the
 * engine calls its completed copy __zcr_remap_NAME.
 */
#define ZCR_REMAP_BACKEND(n) \
	const struct zcr_remap_ops __zcr_remap_##n##_def

/* The completed table of the copy backend, which the engine names. */
extern struct zcr_remap_ops __zcr_remap_copy;

/*
 * Complete the table in (registered as name) into out, as the registry
 * does for each backend. 0, or -EINVAL with the reason on stderr.
 */
int __zcr_remap_ops_set(struct zcr_remap_ops *out,
			const struct zcr_remap_ops *in, const char *name);

/*
 * The landing policy's record of one size class (messages of 2^k to
 * 2^(k+1) - 1 bytes) of one backend: what a copy and a remap landing
 * cost (ns, moving average of what they actually cost, seeded by the
 * calibration at context creation as one sample), how many landings were
 * timed, and a counter for exploring the other choice now and then.
 */
#define ZCR_LAND_CLASSES	40	/* at most 64: a bit each in remapping */
#define ZCR_LAND_COPY		0
#define ZCR_LAND_REMAP		1
/*
 * Samples of each kind (the prior included) before the cheaper one is
 * trusted: three real ones, so that one slow first landing (a fault, a
 * preemption) cannot decide a class on its own. With one, a first copy
 * of 1.2 ms against ~150 us made a class remap at 3x the cost for ~80
 * landings, until exploring corrected it.
 */
#define ZCR_LAND_WARM		4
/*
 * One landing in ZCR_LAND_EXPLORE tries the other kind, or fewer when it
 * costs more than the cheaper one: one in ZCR_LAND_EXPLORE times the
 * ratio of their costs (at most ZCR_LAND_EXPLORE_SCALE times), so that
 * exploring costs at most 1/ZCR_LAND_EXPLORE of what the landings of the
 * class cost anyway.
 */
#define ZCR_LAND_EXPLORE	64
#define ZCR_LAND_EXPLORE_SCALE	64
/*
 * A remap is chosen only when its landings cost less than a copy's by
 * this factor: an exchange costs more than its landing shows. Its TLB
 * flush (a full one past 33 pages on x86; under TCG all of the vCPU's
 * TLB) falls on whatever the process touches next. Where the two kinds'
 * landings cost about the same, forced remap ran the round trip slower
 * (natively and in the TCG guests, by a tenth to a fifth), and where
 * remap wins its landings are several times cheaper: the figures are in
 * Documentation/benchmarks.md, "Remap must win by a
 * quarter".
 */
#define ZCR_LAND_REMAP_BIAS	1.25
/*
 * Timing a landing costs two clock reads, each 30 ns natively and 3 us in
 * an emulated guest whose clock is the HPET: there as much as a small
 * landing. Once a class is warm, its cheaper kind is timed one landing in
 * so many that the reads cost at most 1/ZCR_LAND_TIMING_SHARE of what
 * they time, but at least one in ZCR_LAND_SAMPLE_MAX; warming and
 * exploring landings are always timed.
 */
#define ZCR_LAND_TIMING_SHARE	100
#define ZCR_LAND_SAMPLE_MAX	64

struct zcr_land_class {
	double cost[2];			/* ns per landing */
	uint64_t n[2];			/* samples, prior included */
	uint8_t prior[2];		/* n counts a prior, __zcr_land_prior */
	uint64_t tick;			/* landings decided */
	uint64_t since;			/* landings since the last explored */
	uint64_t untimed;		/* cheaper kind's, since one timed */
	int last;			/* last choice */
};

/* Landings between two explorations of the dearer kind of c. */
uint64_t __zcr_land_explore_period(const struct zcr_land_class *c);

/* Pick ZCR_LAND_COPY or ZCR_LAND_REMAP for the next landing of c. */
int __zcr_land_choose(struct zcr_land_class *c);
/* Record that a landing of kind k cost ns. */
void __zcr_land_record(struct zcr_land_class *c, int k, double ns);
/* Seed kind k of an empty class with an estimate (one sample's weight). */
void __zcr_land_prior(struct zcr_land_class *c, int k, double ns);
/*
 * Will the next landing of c copy, as auto decides it once warm (copy
 * the cheaper and this landing does not explore, or remap the cheaper
 * and this one explores copy)? Then that landing is counted as decided
 * now, at staging, and true.
 */
bool __zcr_land_copy_ahead(struct zcr_land_class *c);
/* Time the landing of kind k just chosen for c (a clock read: clock_ns)? */
bool __zcr_land_timed(struct zcr_land_class *c, int k, double clock_ns);

struct zcr_backend_state {
	const struct zcr_remap_ops *ops;
	void *priv;
	struct zcr_land_class cls[ZCR_LAND_CLASSES];
	double copy_ns, remap_ns;	/* per page at 64 KiB, calibrated */
	double clock_ns;		/* one clock read, calibrated */
	/*
	 * Bit k: class k has remap samples and remaps: what
	 * zcr_ctx_stats() reports as min_remap_pages, in one look rather
	 * than a walk over the classes with a floating-point comparison
	 * each (under TCG, where floating point is emulated, a call cost
	 * 3.0-4.0 us with the walk, 2.4-2.6 us without).
	 */
	uint64_t remapping;
};

/* Backend ids by name ("auto" included), or -EINVAL. */
int __zcr_remap_lookup(const char *name);
int __zcr_remap_setup(struct zcr_ctx *ctx, int want);
void __zcr_remap_teardown(struct zcr_ctx *ctx);
struct zcr_backend_state *__zcr_remap_state(struct zcr_ctx *ctx,
					    const struct zcr_remap_ops *ops);
/*
 * The backend a message predicted for dst should be staged for. by (may
 * be NULL: the policy is not asked): set to the backend whose auto
 * landing of this message will copy, when the copy backend is returned
 * for that reason (pass it to __zcr_remap_deliver_locked), else NULL.
 */
const struct zcr_remap_ops *__zcr_remap_pick(struct zcr_ctx *ctx,
					     const void *dst, size_t len,
					     struct zcr_backend_state **by);
/*
 * Where in a slot of ops a message of len bytes for dst is staged. room
 * (may be NULL): the bytes after the message the slot should also hold,
 * the unused end of dst's zcr_mem_alloc block up to a unit boundary,
 * which the landing moves along so that the last unit moves whole.
 */
size_t __zcr_remap_stage_offset(struct zcr_ctx *ctx,
				const struct zcr_remap_ops *ops,
				const void *dst, size_t len, size_t *room);
/*
 * Deliver n bytes staged at s->base + off into dst; same_offset: dst has
 * the staged page offset and the whole message fits (remapping allowed);
 * by: what __zcr_remap_pick said when the message was staged (NULL if
 * nothing).
 */
void __zcr_remap_deliver_locked(struct zcr_ctx *ctx, struct zcr_slot *s,
				size_t off, char *dst, size_t n,
				bool same_offset, struct zcr_backend_state *by);
/*
 * A receive for dst (n bytes, same_offset and by as for delivery) took s's
 * message while its payload still lands: decide the landing now and let
 * the backend prepare a remap (ops->prepare) while the payload comes in.
 * __zcr_remap_deliver_locked() then lands it as decided.
 */
void __zcr_remap_prepare_locked(struct zcr_ctx *ctx, struct zcr_slot *s,
				size_t off, char *dst, size_t n,
				bool same_offset, struct zcr_backend_state *by);
/*
 * The message in s will not be delivered: undo what was prepared;
 * abandoned as for ops->unprepare.
 */
void __zcr_remap_unprepare_locked(struct zcr_ctx *ctx, struct zcr_slot *s,
				  bool abandoned);
/* The least full pages auto remaps now (0: none), for zcr_stats. */
uint64_t __zcr_remap_min_pages(struct zcr_ctx *ctx);

#endif /* ZCR_REMAP_H */
