/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mem.h - zero-copy-eligible memory (lib/base/mem.c): the allocations of
 * zcr_mem_alloc() and the zones of /dev/zcrecv. A bottom layer: the remap
 * backends use it, it calls nothing of the library.
 */
#ifndef ZCR_MEM_H
#define ZCR_MEM_H

#include <stdbool.h>
#include <stddef.h>

#include "base/list.h"

struct zcr_ctx;

#define ZCR_HUGE_SIZE	(2UL << 20)	/* one PMD of x86-64 and arm64/4K */

struct zcr_mem {
	struct zcr_list link;
	char *addr;
	size_t len;		/* mapped */
	size_t size;		/* asked for: the caller's bytes */
	bool zone;
	bool huge;		/* zone: a huge zone (2 MiB units) */
	bool thp;		/* anonymous, advised MADV_HUGEPAGE, THP on */
};

/*
 * zcr_mem_alloc blocks from this size are mapped in 2 MiB units: huge
 * zones under the kmod backend, anonymous THP-advised memory under
 * uffd-move (see zcr_mem_alloc).
 */
#define ZCR_MEM_HUGE_MIN	(1UL << 20)

/*
 * A zone of len bytes (a page multiple) mapped read-write and shared.
 * huge: a ZCRECV_ZONE_HUGE zone, 2 MiB aligned (len: see __zcr_zone_huge).
 * Returns 0 or -errno.
 */
int __zcr_zone_map(struct zcr_ctx *ctx, size_t len, bool huge, void **p);
/*
 * A 4 KiB zone that keeps page versions (ZCRECV_ZONE_PAGEVER) when the
 * module can and message prefetching is on (its send buffers are then
 * tracked without a system call per page, lib/pagever/kmod.c); otherwise
 * as __zcr_zone_map(ctx, len, false, p).
 */
int __zcr_zone_map_versioned(struct zcr_ctx *ctx, size_t len, void **p);
/*
 * Whether huge zones are wanted (ZCRECV_HUGE_ZONES, on by default), the
 * module makes them, and len (a multiple of 2 MiB) fits one.
 */
bool __zcr_zone_huge(struct zcr_ctx *ctx, size_t len);
/*
 * Anonymous private memory of len bytes (a multiple of the page size).
 * huge: 2 MiB aligned and advised MADV_HUGEPAGE, so that its 2 MiB
 * units are transparent huge pages where the system allows them
 * (/sys/kernel/mm/transparent_hugepage/enabled not "never"); else
 * MADV_NOHUGEPAGE. Returns 0 or -errno.
 */
int __zcr_anon_map(size_t len, bool huge, void **p);
bool __zcr_mem_in_zone(struct zcr_ctx *ctx, const void *p, size_t len);
/*
 * The unit of the zone that holds [p, p + len): ZCR_HUGE_SIZE for a huge
 * zone, the page size for a 4 KiB one, 0 if no zone holds it.
 */
size_t __zcr_mem_zone_unit(struct zcr_ctx *ctx, const void *p, size_t len);
/*
 * Whether [p, p + len) overlaps an anonymous zcr_mem_alloc block whose 2
 * MiB units may be transparent huge pages (2 MiB aligned, advised
 * MADV_HUGEPAGE, THP not "never"). Moving less than a whole unit of such
 * a block splits its huge page, and the 4 KiB pages then travel on
 * through the staging slots. Under ctx->lock.
 */
bool __zcr_mem_thp(struct zcr_ctx *ctx, const void *p, size_t len);
/* Whether the context has such a block at all. Under ctx->lock. */
bool __zcr_mem_thp_any(struct zcr_ctx *ctx);
/* THP "always" or "madvise": MADV_HUGEPAGE may give huge pages here. */
bool __zcr_thp_enabled(void);
/*
 * Bytes mapped after [p, p + len) that are nobody's: when the range lies
 * in a zcr_mem_alloc block of 2 MiB units (a huge zone, or anonymous
 * memory where THP is not "never") and reaches the end of what its caller
 * asked for, the rest of the block's mapping; else 0 (in 4 KiB memory
 * moving them would only move more 4 KiB pages). A landing may overwrite
 * them. Under ctx->lock.
 */
size_t __zcr_mem_room(struct zcr_ctx *ctx, const void *p, size_t len);

#endif /* ZCR_MEM_H */
