/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * zcr_internal.h - declarations shared inside libzcrecv. Non-static internal
 * symbols are named __zcr_* and stay out of lib/libzcrecv.map.
 */
#ifndef ZCR_INTERNAL_H
#define ZCR_INTERNAL_H

#include "zcrecv.h"

/* Open /dev/zcrecv, run the handshake; returns the fd or -errno. */
int __zcr_kmod_open(struct zcr_kmod_info *info);

#endif /* ZCR_INTERNAL_H */
