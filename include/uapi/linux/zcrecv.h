/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * zcrecv - kernel-assisted zero-copy receive: the kernel ABI.
 *
 * One copy of this header is shared by the module (kmod/), the library
 * (lib/) and the selftests. The rules it follows (Documentation/abi.md):
 * fixed-width fields only, explicit padding, every struct a multiple of
 * 8 bytes, reserved fields and unknown flag bits must be zero, outputs are
 * named out_*, and an ioctl never changes meaning once released.
 */
#ifndef _UAPI_LINUX_ZCRECV_H
#define _UAPI_LINUX_ZCRECV_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define ZCRECV_DEVICE_NAME	"zcrecv"
#define ZCRECV_ABI_VERSION	1

/* 0xB9 is unassigned in Documentation/userspace-api/ioctl/ioctl-number.rst */
#define ZCRECV_IOC_MAGIC	0xB9

/**
 * DOC: errors
 *
 * Every ioctl returns 0 on success or -1 with errno set to one of:
 *
 * - ENOTTY: unknown ioctl command.
 * - EINVAL: a reserved field or unknown flag bit is nonzero, or an argument
 *   is malformed (unaligned, zero length, overlapping, outside a zone).
 * - EOPNOTSUPP: a well-formed request this module does not support (for
 *   example an ABI version it does not speak).
 * - EFAULT: a user pointer (the argument or an array it points to) is bad.
 * - EOVERFLOW: a size or address computation would overflow.
 * - ENOMEM: the kernel could not allocate memory.
 * - ENOSPC: a page limit (per process or global) would be exceeded.
 * - EBUSY: a page is pinned (pin_user_pages/get_user_pages) or the object is
 *   in use; the caller should copy instead.
 * - EPERM: the file or zone belongs to another process.
 */

/* Feature bits reported by ZCRECV_IOC_API in out_features. */
#define ZCRECV_FEATURE_ZONES	(1ULL << 0)	/* ZCRECV_IOC_ZONE_CREATE */
#define ZCRECV_FEATURE_REMAP	(1ULL << 1)	/* ZCRECV_IOC_REMAP */
#define ZCRECV_FEATURE_PINCHECK	(1ULL << 2)	/* pinned pages give EBUSY */

/**
 * struct zcrecv_api - handshake, the first ioctl a user issues
 * @abi_version: in: ZCRECV_ABI_VERSION, or 0 to only ask; any other value
 *	fails with EOPNOTSUPP
 * @flags: in: must be 0
 * @out_features: out: ZCRECV_FEATURE_* bits this module implements
 * @out_abi_version: out: the ABI version the module speaks
 * @out_page_size: out: PAGE_SIZE of the running kernel, in bytes
 * @out_max_batch: out: most entries one ZCRECV_IOC_REMAP accepts
 * @reserved0: must be 0
 * @out_max_zone_pages: out: largest zone, in pages
 * @out_max_process_pages: out: most zone pages one process may hold
 * @reserved: must be 0
 */
struct zcrecv_api {
	__u32 abi_version;
	__u32 flags;
	__u64 out_features;
	__u32 out_abi_version;
	__u32 out_page_size;
	__u32 out_max_batch;
	__u32 reserved0;
	__u64 out_max_zone_pages;
	__u64 out_max_process_pages;
	__u64 reserved[4];
};

#define ZCRECV_IOC_API		_IOWR(ZCRECV_IOC_MAGIC, 0x00, struct zcrecv_api)

#endif /* _UAPI_LINUX_ZCRECV_H */
