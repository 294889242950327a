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
 */
#include <stdlib.h>

#include "core/ctx.h"

static void slot_release(struct zcr_ctx *ctx, struct zcr_slot *s)
{
	s->ops->slot_free(ctx, __zcr_remap_state(ctx, s->ops)->priv, s->base,
			  s->cap);
	ctx->staging_bytes -= s->cap;
	free(s);
}

struct zcr_slot *__zcr_slot_get_locked(struct zcr_ctx *ctx,
				       const struct zcr_remap_ops *ops,
				       size_t len)
{
	struct zcr_backend_state *bs = __zcr_remap_state(ctx, ops);
	struct zcr_slot *best = NULL, *s;
	struct zcr_list *pos, *tmp;
	size_t cap = (len + ctx->page - 1) & ~(ctx->page - 1);

	if (!cap)
		cap = ctx->page;
	if (ops->slot_size)
		cap = ops->slot_size(ctx, bs->priv, cap);
	/* Smallest idle slot of this kind that fits and wastes under half. */
	for (pos = ctx->free_slots.next; pos != &ctx->free_slots;
	     pos = pos->next) {
		s = zcr_container_of(pos, struct zcr_slot, link);
		if (s->ops == ops && s->cap >= cap && s->cap / 2 <= cap &&
		    (!best || s->cap < best->cap))
			best = s;
	}
	if (best) {
		zcr_list_del(&best->link);
		return best;
	}
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
