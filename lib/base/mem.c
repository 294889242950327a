// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * mem.c - zero-copy-eligible memory: zones of /dev/zcrecv when the module
 * is there, anonymous private memory otherwise.
 *
 * Zone memory is what the kmod backend can exchange pages with; anonymous
 * private memory is what UFFDIO_MOVE can move pages into. Either way the
 * allocation is page aligned, so a receive into its start has page offset 0
 * and every full page of it can be remapped. Anonymous allocations of 2 MiB
 * or more are 2 MiB aligned, a multiple of 2 MiB long and advised
 * MADV_HUGEPAGE: where transparent huge pages are enabled ("always" or
 * "madvise"), UFFDIO_MOVE then moves each 2 MiB unit as one PMD. While the
 * uffd-move backend is in use, so are anonymous allocations from 1 MiB
 * (ZCR_MEM_HUGE_MIN) where THP is not "never": a message that fills such
 * a block lands as whole 2 MiB units, the block's unused end moving along
 * (__zcr_mem_room), at the price of up to twice the memory for blocks of
 * 1-2 MiB.
 * Under the kmod backend, blocks from ZCR_MEM_HUGE_MIN are huge zones
 * (ZCRECV_ZONE_HUGE) where the module has them (ZCRECV_HUGE_ZONES=0: not),
 * mapped 2 MiB aligned and rounded up to 2 MiB: the module exchanges
 * their 2 MiB-aligned middle unit by unit (one PMD each), and nothing
 * smaller than a unit, so the head and tail around the units are copied;
 * a message that fills its block to the end moves the block's unused end
 * along (__zcr_mem_room), so a 1 MiB message in a 1 MiB block moves as
 * one unit. Smaller blocks are 4 KiB zones, whose every full page can be
 * exchanged (one PTE each).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <linux/zcrecv.h>

#include "base/ctx.h"

bool __zcr_zone_huge(struct zcr_ctx *ctx, size_t len)
{
	return ctx->huge_zones && ctx->kmod.huge_unit_size == ZCR_HUGE_SIZE &&
	       len >= ZCR_HUGE_SIZE && !(len & (ZCR_HUGE_SIZE - 1));
}

static int zone_map(struct zcr_ctx *ctx, size_t len, bool huge, bool pv,
		    void **p);

int __zcr_zone_map(struct zcr_ctx *ctx, size_t len, bool huge, void **p)
{
	return zone_map(ctx, len, huge, false, p);
}

int __zcr_zone_map_versioned(struct zcr_ctx *ctx, size_t len, void **p)
{
	bool pv = ctx->env.v[ZCR_ENV_PREFETCH].u &&
		  (ctx->kmod.features & ZCRECV_FEATURE_PAGEVER);

	return zone_map(ctx, len, false, pv, p);
}

static int zone_map(struct zcr_ctx *ctx, size_t len, bool huge, bool pv,
		    void **p)
{
	struct zcrecv_zone_create zc;
	size_t extra = huge ? ZCR_HUGE_SIZE : 0;
	char *a, *b;
	void *m;
	int ret;

	if (ctx->kmod_fd < 0 || !(ctx->kmod.features & ZCRECV_FEATURE_ZONES))
		return -EOPNOTSUPP;
	if (huge && !__zcr_zone_huge(ctx, len))
		return -EINVAL;
	memset(&zc, 0, sizeof(zc));
	zc.pages = len / ctx->page;
	zc.flags = (huge ? ZCRECV_ZONE_HUGE : 0) | (pv ? ZCRECV_ZONE_PAGEVER : 0);
	/* Address space first: a huge zone goes at a 2 MiB boundary in it. */
	a = mmap(NULL, len + extra, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a == MAP_FAILED)
		return -errno;
	b = a;
	if (huge)
		b = (char *)(((uintptr_t)a + ZCR_HUGE_SIZE - 1) &
			     ~(uintptr_t)(ZCR_HUGE_SIZE - 1));
	if (ioctl(ctx->kmod_fd, ZCRECV_IOC_ZONE_CREATE, &zc) < 0) {
		ret = -errno;
		munmap(a, len + extra);
		return ret;
	}
	/*
	 * A zone whose mmap fails stays with the file (the module frees it
	 * when the context closes /dev/zcrecv).
	 */
	m = mmap(b, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 ctx->kmod_fd, (off_t)zc.out_offset);
	if (m == MAP_FAILED) {
		ret = -errno;
		munmap(a, len + extra);
		return ret;
	}
	if (b > a)
		munmap(a, (size_t)(b - a));
	if (a + len + extra > b + len)
		munmap(b + len, (size_t)(a + len + extra - (b + len)));
	*p = b;
	return 0;
}

int __zcr_anon_map(size_t len, bool huge, void **p)
{
	size_t map = huge ? len + ZCR_HUGE_SIZE : len;
	char *a, *b;

	a = mmap(NULL, map, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED)
		return -errno;
	b = a;
	if (huge) {
		/* Keep the 2 MiB aligned len bytes, unmap the rest. */
		b = (char *)(((uintptr_t)a + ZCR_HUGE_SIZE - 1) &
			     ~(uintptr_t)(ZCR_HUGE_SIZE - 1));
		if (b > a)
			munmap(a, (size_t)(b - a));
		if (a + map > b + len)
			munmap(b + len, (size_t)(a + map - (b + len)));
	}
	/* Advice only: a kernel without THP says EINVAL, which is fine. */
	madvise(b, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	*p = b;
	return 0;
}

/*
 * Whether anonymous memory advised MADV_HUGEPAGE may get transparent huge
 * pages here: THP "always" or "madvise", read once per process.
 */
static int thp_state = -1;

bool __zcr_thp_enabled(void)
{
	int st = __atomic_load_n(&thp_state, __ATOMIC_RELAXED);
	char buf[128] = "";
	FILE *f;

	if (st >= 0)
		return st;
	f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	st = strstr(buf, "[always]") || strstr(buf, "[madvise]");
	__atomic_store_n(&thp_state, st, __ATOMIC_RELAXED);
	return st;
}

bool __zcr_mem_in_zone(struct zcr_ctx *ctx, const void *p, size_t len)
{
	const char *c = p;
	struct zcr_list *pos;

	for (pos = ctx->mems.next; pos != &ctx->mems; pos = pos->next) {
		struct zcr_mem *m = zcr_container_of(pos, struct zcr_mem, link);

		if (m->zone && c >= m->addr && c + len <= m->addr + m->len)
			return true;
	}
	return false;
}

bool __zcr_mem_thp(struct zcr_ctx *ctx, const void *p, size_t len)
{
	const char *c = p;
	struct zcr_list *pos;

	for (pos = ctx->mems.next; pos != &ctx->mems; pos = pos->next) {
		struct zcr_mem *m = zcr_container_of(pos, struct zcr_mem, link);

		if (m->thp && c < m->addr + m->len && c + len > m->addr)
			return true;
	}
	return false;
}

bool __zcr_mem_thp_any(struct zcr_ctx *ctx)
{
	struct zcr_list *pos;

	for (pos = ctx->mems.next; pos != &ctx->mems; pos = pos->next)
		if (zcr_container_of(pos, struct zcr_mem, link)->thp)
			return true;
	return false;
}

size_t __zcr_mem_zone_unit(struct zcr_ctx *ctx, const void *p, size_t len)
{
	const char *c = p;
	struct zcr_list *pos;

	for (pos = ctx->mems.next; pos != &ctx->mems; pos = pos->next) {
		struct zcr_mem *m = zcr_container_of(pos, struct zcr_mem, link);

		if (m->zone && c >= m->addr && c + len <= m->addr + m->len)
			return m->huge ? ZCR_HUGE_SIZE : ctx->page;
	}
	return 0;
}

size_t __zcr_mem_room(struct zcr_ctx *ctx, const void *p, size_t len)
{
	const char *c = p;
	struct zcr_list *pos;
	/* without huge pages, room would only be more 4 KiB pages to move */
	bool thp = __zcr_thp_enabled();

	for (pos = ctx->mems.next; pos != &ctx->mems; pos = pos->next) {
		struct zcr_mem *m = zcr_container_of(pos, struct zcr_mem, link);

		size_t at = (size_t)(c - m->addr);

		if ((m->zone ? !m->huge : !thp) || c < m->addr ||
		    len > m->len || at > m->len - len)
			continue;
		return at + len >= m->size ? m->len - at - len : 0;
	}
	return 0;
}
