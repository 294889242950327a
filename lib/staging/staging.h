/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * staging.h - the staging pool (lib/staging/staging.c): page-aligned slots
 * where early messages land, bounded by the context's staging limit.
 */
#ifndef ZCR_STAGING_H
#define ZCR_STAGING_H

#include <stddef.h>

#include "core/list.h"
#include "remap/remap.h"

struct zcr_ctx;

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
