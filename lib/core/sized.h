/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sized.h - public structs grow by appending fields, and the _sized entry
 * points are told the caller's sizeof (Documentation/abi-library.md):
 * where each struct ended in the release that first published it (what
 * the unsized names read and write, whatever is appended later), and the
 * copy of an output struct into a caller's of any size. Only lib/core
 * includes it.
 */
#ifndef ZCR_CORE_SIZED_H
#define ZCR_CORE_SIZED_H

#include <stddef.h>
#include <string.h>

#include "zcrecv.h"

#define ZCR_END(type, m)	(offsetof(type, m) + sizeof(((type *)0)->m))
#define ZCR_ATTR_SIZE_0_1	ZCR_END(struct zcr_ctx_attr, handshake_timeout_ms)
#define ZCR_STATS_SIZE_0_1	ZCR_END(struct zcr_stats, backend_name)
#define ZCR_STATUS_SIZE_0_1	ZCR_END(struct zcr_status, error)
#define ZCR_KMOD_INFO_SIZE_0_1	ZCR_END(struct zcr_kmod_info, max_process_pages)

/*
 * Output: src (this library's struct, src_size bytes) into the caller's
 * of dst_size: an older caller gets its own fields only, a newer one zeros
 * past ours.
 */
static inline void zcr_sized_out(void *dst, size_t dst_size, const void *src,
				 size_t src_size)
{
	memcpy(dst, src, dst_size < src_size ? dst_size : src_size);
	if (dst_size > src_size)
		memset((char *)dst + src_size, 0, dst_size - src_size);
}

#endif /* ZCR_CORE_SIZED_H */
