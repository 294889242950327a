// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * dummy.c - a remap backend that stages in plain memory and moves
 * nothing (the engine copies): the smallest complete backend, copied to
 * lib/remap/dummy/ by tests/extend/check-extend.sh to show that a backend
 * is one folder plus one registry line. ZCRECV_BACKEND=dummy chooses it.
 */
#include <sys/mman.h>

#include "base/ctx.h"
#include "remap/remap.h"

static int dummy_slot_alloc(struct zcr_ctx *ctx, void *priv, size_t len,
			    void **p)
{
	(void)ctx;
	(void)priv;
	return __zcr_anon_map(len, false, p);
}

static void dummy_slot_free(struct zcr_ctx *ctx, void *priv, void *p,
			    size_t len)
{
	(void)ctx;
	(void)priv;
	munmap(p, len);
}

ZCR_REMAP_BACKEND(dummy) = {
	.size = sizeof(struct zcr_remap_ops),
	.name = "dummy",
	.id = ZCR_REMAP_ID_PRIVATE + 1,
	.slot_alloc = dummy_slot_alloc,
	.slot_free = dummy_slot_free,
};
