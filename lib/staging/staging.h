/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * staging.h - the staging pool (lib/staging/staging.c): page-aligned slots
 * where early messages land, bounded by the context's staging limit.
 */
#ifndef ZCR_STAGING_H
#define ZCR_STAGING_H

#include <stddef.h>

#include "base/list.h"
#include "remap/remap.h"

struct zcr_ctx;

/* struct zcr_slot, the memory of one slot, is remap.h's: the backends move it. */
/*
 * An idle slot of ops for len bytes, or a new one; block: the message is
 * predicted for a zcr_mem_alloc block of huge pages (then a slot that
 * holds small pages is the last choice).
 */
struct zcr_slot *__zcr_slot_get_locked(struct zcr_ctx *ctx,
				       const struct zcr_remap_ops *ops,
				       size_t len, bool block);
void __zcr_slot_put_locked(struct zcr_ctx *ctx, struct zcr_slot *s);
void __zcr_staging_fini(struct zcr_ctx *ctx);

#endif /* ZCR_STAGING_H */
