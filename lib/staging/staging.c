// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * staging.c - the staging pool: where early messages land.
 *
 * A slot is page-aligned memory of one backend's kind, big enough for the
 * payload plus its offset in the slot (the predicted buffer's offset modulo
 * the backend's unit: a page, or 2 MiB for uffd-move's huge slots), rounded
 * up to what the backend maps. Slots are kept for reuse (after a
 * remap a slot holds the user's old pages, so reuse allocates nothing).
 * The pool never holds more than its limit: when a new slot would exceed
 * it, idle slots are released first, and if that is not enough the caller
 * gets NULL and stops reading from that peer (back-pressure through TCP).
 * A slot of 2 MiB units that took small pages in an exchange (slot->small)
 * is not given to a message predicted for a block of huge pages while a
 * new slot can be made.
 */
#include <stdlib.h>

#include "base/ctx.h"
#include "remap/remap.h"
#include "staging/staging.h"

static void slot_release(struct zcr_ctx *ctx, struct zcr_slot *s)
{
	s->ops->slot_free(ctx, __zcr_remap_state(ctx, s->ops)->priv, s->base,
			  s->cap);
	ctx->staging_bytes -= s->cap;
	free(s);
}

/* A new slot of cap bytes, idle ones released to make room; or NULL. */
static struct zcr_slot *slot_new(struct zcr_ctx *ctx,
				 const struct zcr_remap_ops *ops, size_t cap)
{
	struct zcr_backend_state *bs = __zcr_remap_state(ctx, ops);
	struct zcr_list *pos, *tmp;
	struct zcr_slot *s;

	if (cap > ctx->staging_limit)
		return NULL;
	zcr_list_for_each_safe(pos, tmp, &ctx->free_slots) {
		if (ctx->staging_bytes + cap <= ctx->staging_limit)
			break;
		s = zcr_container_of(pos, struct zcr_slot, link);
		zcr_list_del(&s->link);
		slot_release(ctx, s);
	}
	if (ctx->staging_bytes + cap > ctx->staging_limit)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (ops->slot_alloc(ctx, bs->priv, cap, (void **)&s->base) < 0) {
		free(s);
		return NULL;
	}
	zcr_list_init(&s->link);
	s->ops = ops;
	s->cap = cap;
	ctx->staging_bytes += cap;
	if (ctx->staging_bytes > ctx->st.staging_peak)
		ctx->st.staging_peak = ctx->staging_bytes;
	return s;
}

struct zcr_slot *__zcr_slot_get_locked(struct zcr_ctx *ctx,
				       const struct zcr_remap_ops *ops,
				       size_t len, bool block)
{
	struct zcr_backend_state *bs = __zcr_remap_state(ctx, ops);
	struct zcr_slot *best = NULL, *s;
	struct zcr_list *pos;
	size_t cap = (len + ctx->page - 1) & ~(ctx->page - 1);

	if (!cap)
		cap = ctx->page;
	cap = ops->slot_size(ctx, bs->priv, cap);
	/*
	 * Smallest idle slot of this kind that fits and wastes under half,
	 * holding small pages for memory of small pages and huge ones for a
	 * block where there is one: an exchange with small pages makes a
	 * slot small, so one that is small already serves those best.
	 */
	for (pos = ctx->free_slots.next; pos != &ctx->free_slots;
	     pos = pos->next) {
		s = zcr_container_of(pos, struct zcr_slot, link);
		if (s->ops != ops || s->cap < cap || s->cap / 2 > cap)
			continue;
		if (!best || (s->small != block && best->small == block) ||
		    (s->small == best->small && s->cap < best->cap))
			best = s;
		/*
		 * Nothing beats an exact fit of the preferred kind: stop.
		 * Below 2 MiB no candidate (at most twice cap) can be
		 * marked small (only slots of 2 MiB units are, engine.c),
		 * so any exact fit is the best. Many small early messages
		 * (a row each) leave thousands of idle slots of one size,
		 * and a full scan per message made the pool quadratic (a
		 * quarter of a rank's time in OVFT Pencils, --paper).
		 */
		if (best->cap == cap &&
		    (best->small != block || 2 * cap + 1 < ZCR_HUGE_SIZE))
			break;
	}
	if (!best)
		return slot_new(ctx, ops, cap);
	zcr_list_del(&best->link);
	if (!block || !best->small)
		return best;
	/*
	 * Only a slot of small pages for a block: a new one instead (the
	 * message would be copied out of that one). Where the pool has no
	 * room for both, the marked one makes room first; else it stays
	 * idle at the head of the list, the first released later. No new
	 * slot: the marked one after all.
	 */
	if (ctx->staging_bytes + cap > ctx->staging_limit) {
		slot_release(ctx, best);
		return slot_new(ctx, ops, cap);
	}
	s = slot_new(ctx, ops, cap);
	if (!s)
		return best;
	zcr_list_add_tail(&best->link, ctx->free_slots.next);
	return s;
}

void __zcr_slot_put_locked(struct zcr_ctx *ctx, struct zcr_slot *s)
{
	zcr_list_add_tail(&s->link, &ctx->free_slots);
}

void __zcr_staging_fini(struct zcr_ctx *ctx)
{
	struct zcr_list *pos, *tmp;

	zcr_list_for_each_safe(pos, tmp, &ctx->free_slots) {
		struct zcr_slot *s = zcr_container_of(pos, struct zcr_slot,
						      link);

		zcr_list_del(&s->link);
		slot_release(ctx, s);
	}
}
