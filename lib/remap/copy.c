// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * copy.c - the copy backend: anonymous staging, never remaps. It is
 * what every other backend falls back to, and what a conventional library
 * does for every early message.
 *
 * Slots of 2 MiB or more are 2 MiB aligned and advised MADV_HUGEPAGE like
 * zcr_mem_alloc()'s: filling a slot from another process (shm pulls, a
 * peer writing its part) walks the slot's page tables once per page, and
 * copying out of it takes a TLB miss per page, both ~512 times cheaper
 * per byte over huge pages (early arrivals of 2-16 MiB over shm took
 * 7-31% less time end to end on the machine of
 * Documentation/benchmarks.md).
 */
#include <sys/mman.h>

#include "base/ctx.h"
#include "remap/remap.h"

static int copy_slot_alloc(struct zcr_ctx *ctx, void *priv, size_t len,
			   void **p)
{
	(void)ctx;
	(void)priv;
	return __zcr_anon_map(len, len >= ZCR_HUGE_SIZE, p);
}

static void copy_slot_free(struct zcr_ctx *ctx, void *priv, void *p,
			   size_t len)
{
	(void)ctx;
	(void)priv;
	munmap(p, len);
}

ZCR_REMAP_BACKEND(copy) = {
	.size = sizeof(struct zcr_remap_ops),
	.name = "copy",
	.id = ZCRECV_BACKEND_COPY,
	.slot_alloc = copy_slot_alloc,
	.slot_free = copy_slot_free,
};
