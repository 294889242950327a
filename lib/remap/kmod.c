// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * kmod.c - the kmod backend: staging slots are zones of /dev/zcrecv,
 * and ZCRECV_IOC_REMAP exchanges their pages with the full pages of a user
 * buffer from zcr_mem_alloc() (also a zone). After the exchange the slot
 * holds the buffer's old pages: nothing is allocated, zeroed or freed.
 * Pinned pages make the ioctl fail with EBUSY; the engine then copies.
 *
 * 2 MiB units: where the module has huge zones (ZCRECV_FEATURE_HUGE),
 * slots of 2 MiB or more are huge zones mapped 2 MiB aligned, messages of
 * 2 MiB or more are staged at the predicted buffer's offset modulo 2 MiB,
 * and a buffer from zcr_mem_alloc() of 2 MiB or more is a huge zone too:
 * the module then exchanges the 2 MiB-aligned middle unit by unit (a
 * compound page and 512 PTEs per unit, one ioctl), and the engine copies
 * the head and tail that do not fill a unit (units_only). A huge zone
 * never trades pages with a 4 KiB zone; such a landing is copied.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <linux/zcrecv.h>

#include "base/ctx.h"
#include "remap/remap.h"

static int kmod_init(struct zcr_ctx *ctx, void *priv)
{
	const uint64_t need = ZCRECV_FEATURE_ZONES | ZCRECV_FEATURE_REMAP;

	(void)priv;
	if (ctx->kmod_fd < 0)
		return -ENODEV;
	if ((ctx->kmod.features & need) != need)
		return -EOPNOTSUPP;
	return 0;
}

static size_t kmod_unit(struct zcr_ctx *ctx, void *priv, size_t len)
{
	(void)priv;
	return __zcr_zone_huge(ctx, ZCR_HUGE_SIZE) && len >= ZCR_HUGE_SIZE ?
	       ZCR_HUGE_SIZE : ctx->page;
}

static size_t kmod_slot_size(struct zcr_ctx *ctx, void *priv, size_t len)
{
	size_t unit = kmod_unit(ctx, priv, len);

	return (len + unit - 1) & ~(unit - 1);
}

static int kmod_slot_alloc(struct zcr_ctx *ctx, void *priv, size_t len,
			   void **p)
{
	(void)priv;
	return __zcr_zone_map(ctx, len, __zcr_zone_huge(ctx, len), p);
}

static void kmod_slot_free(struct zcr_ctx *ctx, void *priv, void *p,
			   size_t len)
{
	(void)ctx;
	(void)priv;
	munmap(p, len);
}

static bool kmod_eligible(struct zcr_ctx *ctx, void *priv, const void *dst,
			  size_t len)
{
	(void)priv;
	return __zcr_mem_in_zone(ctx, dst, len);
}

static size_t kmod_unit_at(struct zcr_ctx *ctx, void *priv, const void *dst,
			   size_t len)
{
	(void)priv;
	return __zcr_mem_zone_unit(ctx, dst, len);
}

static long kmod_remap(struct zcr_ctx *ctx, void *priv, void *dst,
		       struct zcr_slot *s, size_t off, size_t len)
{
	struct zcrecv_remap_entry e;
	struct zcrecv_remap r;

	(void)priv;
	memset(&e, 0, sizeof(e));
	e.src = (uintptr_t)(s->base + off);
	e.dst = (uintptr_t)dst;
	e.len = len;
	memset(&r, 0, sizeof(r));
	r.entries = (uintptr_t)&e;
	r.count = 1;
	if (ioctl(ctx->kmod_fd, ZCRECV_IOC_REMAP, &r) < 0)
		return r.out_pages ? (long)(r.out_pages * ctx->page) : -errno;
	return (long)(r.out_pages * ctx->page);
}

ZCR_REMAP_BACKEND(kmod) = {
	.size = sizeof(struct zcr_remap_ops),
	.name = "kmod",
	.id = ZCRECV_BACKEND_KMOD,
	.init = kmod_init,
	.unit = kmod_unit,
	.slot_size = kmod_slot_size,
	.slot_alloc = kmod_slot_alloc,
	.slot_free = kmod_slot_free,
	.eligible = kmod_eligible,
	.units_only = true,
	.unit_at = kmod_unit_at,
	.remap = kmod_remap,
};
