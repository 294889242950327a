/* SPDX-License-Identifier: GPL-2.0 */
/*
 * layout.c - the uAPI structs have the same size and offsets for 64-bit and
 * 32-bit user space, so compat_ptr_ioctl is right for 32-bit callers and
 * ioctl numbers agree. Compiled (never run) with -m64 and -m32 by
 * tests/abi/check-compat.sh; a mismatch is a compile error.
 */
#include <stddef.h>
#include <linux/zcrecv.h>

#define SAME(expr, val) _Static_assert((expr) == (val), #expr)

SAME(sizeof(struct zcrecv_api), 80);
SAME(offsetof(struct zcrecv_api, out_features), 8);
SAME(offsetof(struct zcrecv_api, out_max_zone_pages), 32);
SAME(offsetof(struct zcrecv_api, out_huge_unit_size), 48);
SAME(offsetof(struct zcrecv_api, reserved), 56);
SAME(sizeof(struct zcrecv_zone_create), 48);
SAME(offsetof(struct zcrecv_zone_create, out_offset), 16);
SAME(offsetof(struct zcrecv_zone_create, reserved), 32);
SAME(sizeof(struct zcrecv_remap_entry), 32);
SAME(offsetof(struct zcrecv_remap_entry, flags), 24);
SAME(sizeof(struct zcrecv_remap), 48);
SAME(offsetof(struct zcrecv_remap, out_done), 16);
SAME(offsetof(struct zcrecv_remap, out_pages), 24);
SAME(offsetof(struct zcrecv_remap, reserved), 32);
SAME(ZCRECV_IOC_API, 0xc050b900u);
SAME(ZCRECV_IOC_ZONE_CREATE, 0xc030b901u);
SAME(ZCRECV_IOC_REMAP, 0xc030b902u);
SAME(ZCRECV_FEATURE_HUGE, 8);
SAME(ZCRECV_ZONE_HUGE, 1);
SAME(sizeof(struct zcrecv_pagever), 80);
SAME(offsetof(struct zcrecv_pagever, op), 16);
SAME(offsetof(struct zcrecv_pagever, out_offset), 24);
SAME(offsetof(struct zcrecv_pagever, out_pages), 56);
SAME(offsetof(struct zcrecv_pagever, reserved), 64);
SAME(sizeof(struct zcrecv_pagever_head), 64);
SAME(offsetof(struct zcrecv_pagever_head, ver), 64);
SAME(ZCRECV_IOC_PAGEVER, 0xc050b903u);
SAME(ZCRECV_FEATURE_PAGEVER, 16);
SAME(ZCRECV_ZONE_PAGEVER, 2);
