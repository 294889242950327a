// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * mem.c - zcr_mem_alloc() and zcr_mem_free(): the kind of memory a block
 * gets depends on the backend the remap engine chose for the context
 * (zones for kmod, THP-advised anonymous memory for uffd-move), so the
 * calls are the core's; the mapping helpers they use, and that the remap
 * backends use too, are the base's (lib/base/mem.c, which says what each
 * kind of memory is for).
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "core/core.h"
#include "remap/remap.h"

int zcr_mem_alloc(struct zcr_ctx *ctx, size_t size, void **ptr)
{
	struct zcr_mem *m;
	size_t len;
	void *a;
	int ret;

	if (!ctx || !ptr || !size)
		return -EINVAL;
	len = (size + ctx->page - 1) & ~(ctx->page - 1);
	if (len < size)
		return -EOVERFLOW;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	/* Zones only serve the kmod backend; uffd-move needs anonymous. */
	ret = -EOPNOTSUPP;
	if (ctx->be[0].ops->id == ZCRECV_BACKEND_KMOD) {
		size_t hlen = (len + ZCR_HUGE_SIZE - 1) & ~(ZCR_HUGE_SIZE - 1);

		/* 2 MiB units where the module has them, else 4 KiB pages */
		if (len >= ZCR_MEM_HUGE_MIN && hlen >= len &&
		    __zcr_zone_huge(ctx, hlen)) {
			ret = __zcr_zone_map(ctx, hlen, true, &a);
			if (ret == 0) {
				len = hlen;
				m->huge = true;
			}
		}
		if (ret)
			ret = __zcr_zone_map_versioned(ctx, len, &a);
	}
	if (ret == 0) {
		m->zone = true;
	} else {
		bool huge = len >= ZCR_HUGE_SIZE ||
			    (len >= ZCR_MEM_HUGE_MIN &&
			     ctx->be[0].ops->id == ZCRECV_BACKEND_UFFD &&
			     __zcr_thp_enabled());

		if (huge) {
			len = (len + ZCR_HUGE_SIZE - 1) & ~(ZCR_HUGE_SIZE - 1);
			if (len < size) {
				free(m);
				return -EOVERFLOW;
			}
		}
		ret = __zcr_anon_map(len, huge, &a);
		if (ret) {
			free(m);
			return ret;
		}
		m->thp = huge && __zcr_thp_enabled();
	}
	m->addr = a;
	m->len = len;
	m->size = size;
	pthread_mutex_lock(&ctx->lock);
	zcr_list_add_tail(&m->link, &ctx->mems);
	pthread_mutex_unlock(&ctx->lock);
	*ptr = a;
	return 0;
}

void zcr_mem_free(struct zcr_ctx *ctx, void *ptr)
{
	struct zcr_list *pos, *tmp;

	if (!ctx || !ptr)
		return;
	pthread_mutex_lock(&ctx->lock);
	zcr_list_for_each_safe(pos, tmp, &ctx->mems) {
		struct zcr_mem *m = zcr_container_of(pos, struct zcr_mem, link);

		if (m->addr == ptr) {
			zcr_list_del(&m->link);
			munmap(m->addr, m->len);
			free(m);
			break;
		}
	}
	pthread_mutex_unlock(&ctx->lock);
}
