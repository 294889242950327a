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
 * - ENOSPC: a page limit (per process or global) or the per-process zone
 *   limit would be exceeded.
 * - EBUSY: a page is pinned (pin_user_pages/get_user_pages) or the object is
 *   in use; the caller should copy instead.
 * - EPERM: the file or zone belongs to another process.
 *
 * ZCRECV_IOC_PAGEVER adds: EOPNOTSUPP for a range in a zone created without
 * ZCRECV_ZONE_PAGEVER or for an unknown op; EINVAL for a range that is not
 * one run of pages of a zone of the calling file.
 */

/* Feature bits reported by ZCRECV_IOC_API in out_features. */
#define ZCRECV_FEATURE_ZONES	(1ULL << 0)	/* ZCRECV_IOC_ZONE_CREATE */
#define ZCRECV_FEATURE_REMAP	(1ULL << 1)	/* ZCRECV_IOC_REMAP */
#define ZCRECV_FEATURE_PINCHECK	(1ULL << 2)	/* pinned pages give EBUSY */
#define ZCRECV_FEATURE_HUGE	(1ULL << 3)	/* ZCRECV_ZONE_HUGE zones */
#define ZCRECV_FEATURE_PAGEVER	(1ULL << 4)	/* ZCRECV_ZONE_PAGEVER zones,
						 * ZCRECV_IOC_PAGEVER */

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
 * @out_huge_unit_size: out: bytes of one unit of a ZCRECV_ZONE_HUGE zone
 *	(2 MiB on x86-64), or 0 when ZCRECV_FEATURE_HUGE is not reported
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
	__u64 out_huge_unit_size;
	__u64 reserved[3];
};

/**
 * struct zcrecv_zone_create - create a zone of driver-owned pages
 * @pages: in: size of the zone in pages, 1..out_max_zone_pages; for a
 *	ZCRECV_ZONE_HUGE zone a multiple of out_huge_unit_size / page size
 * @flags: in: ZCRECV_ZONE_* bits
 * @reserved0: must be 0
 * @out_offset: out: pass as the offset to mmap(2), with length
 *	@pages * page size, PROT_READ | PROT_WRITE and MAP_SHARED
 * @out_zone_id: out: an id for messages and counters
 * @reserved: must be 0
 *
 * Pages are allocated on first touch (zeroed, charged to the caller's memory
 * cgroup). The zone may be mapped once, by the process that created it; the
 * mapping is not inherited across fork (a child's copy made after
 * MADV_DOFORK is detached: SIGBUS on access) and cannot grow. Unmapping it all
 * frees the zone; a zone never mapped is freed when the file is closed.
 *
 * A ZCRECV_ZONE_HUGE zone is made of units of out_huge_unit_size bytes, each
 * one physically contiguous block allocated (zeroed) when any of its pages is
 * first touched; if no such block can be had the access gets SIGBUS. mmap
 * with a NULL address returns a unit-aligned address. ZCRECV_IOC_REMAP on a
 * huge zone exchanges whole units only.
 */
struct zcrecv_zone_create {
	__u64 pages;
	__u32 flags;
	__u32 reserved0;
	__u64 out_offset;
	__u64 out_zone_id;
	__u64 reserved[2];
};

/* ZCRECV_IOC_ZONE_CREATE flags */
#define ZCRECV_ZONE_HUGE	(1U << 0) /* units of out_huge_unit_size */
#define ZCRECV_ZONE_PAGEVER	(1U << 1) /* keep page versions (4 KiB only) */

/**
 * struct zcrecv_remap_entry - one exchange of a ZCRECV_IOC_REMAP batch
 * @src: user address of the source range, page aligned, inside a zone
 * @dst: user address of the destination range, page aligned, inside a zone
 * @len: bytes, a nonzero multiple of the page size
 * @flags: must be 0
 * @reserved0: must be 0
 *
 * After the exchange @dst holds the pages that were at @src and @src holds
 * the pages that were at @dst. The ranges must not overlap, and each must be
 * one run of pages of a zone of the calling file (it may span mappings that
 * mprotect or madvise split, not pieces that mremap reordered; mlock does
 * not split a zone's mapping, it only faults its pages in). Both zones must
 * be of the same kind; for ZCRECV_ZONE_HUGE zones both ranges must start
 * and end on unit boundaries of their zones (EINVAL otherwise).
 */
struct zcrecv_remap_entry {
	__u64 src;
	__u64 dst;
	__u64 len;
	__u32 flags;
	__u32 reserved0;
};

/* ZCRECV_IOC_REMAP flags */
#define ZCRECV_REMAP_NO_PREFAULT	(1U << 0) /* do not refill dst eagerly */

/**
 * struct zcrecv_remap - exchange page frames between zone ranges, in a batch
 * @entries: in: user pointer to an array of struct zcrecv_remap_entry
 * @count: in: number of entries, 1..out_max_batch of the handshake
 * @flags: in: ZCRECV_REMAP_* bits
 * @out_done: out: number of entries completed, in order
 * @out_error: out: 0, or the negative errno of entry @out_done
 * @out_pages: out: pages exchanged by the completed entries
 * @reserved: must be 0
 *
 * Each entry is all or nothing. On failure of an entry the ioctl fails with
 * that entry's error, after writing @out_done, @out_error and @out_pages;
 * entries before it stay done. Pinned pages (pin_user_pages,
 * get_user_pages) give EBUSY: copy instead.
 */
struct zcrecv_remap {
	__u64 entries;
	__u32 count;
	__u32 flags;
	__u32 out_done;
	__s32 out_error;
	__u64 out_pages;
	__u64 reserved[2];
};

/**
 * DOC: page versions
 *
 * A zone created with ZCRECV_ZONE_PAGEVER keeps one 64-bit version per page
 * (per page index of the zone, not per page frame). Every version only ever
 * grows, and its low bit says whether the page may be written without the
 * module noticing:
 *
 * - even: armed. Every mapping of the page is read-only, so the next write
 *   (a store, a system call writing it, get_user_pages for writing) takes a
 *   write fault, and the module makes the version odd before the write can
 *   proceed.
 * - odd: written since it was last armed; it may be writable now.
 *
 * ZCRECV_IOC_PAGEVER with ZCRECV_PAGEVER_ARM makes the odd versions of a
 * range even again (plus one) and write-protects those pages; a page pinned
 * by pin_user_pages stays odd (plus two): writes through the pin cannot be
 * seen. An exchange (ZCRECV_IOC_REMAP) adds two to every version of the
 * range it fills, and ZCRECV_PAGEVER_BUMP adds two for a write the caller
 * knows of that bypassed the page tables (a device or RDMA write).
 *
 * The versions are read without a system call: mmap(2) the file at
 * out_offset, out_size bytes, PROT_READ, and read struct zcrecv_pagever_head
 * there. A reader that sees only even versions in a range needs no ioctl;
 * one that sees an odd version calls ZCRECV_PAGEVER_ARM on it and reads
 * again. Whatever it returns then, a later write to a page makes that
 * page's version differ. The mapping stays valid after the zone is freed
 * (its @flags then has ZCRECV_PAGEVER_DEAD); @gen changes whenever a
 * mapping of the zone is created, split, moved or removed, and a reader
 * that sees it change checks its range again with the ioctl.
 */

/**
 * struct zcrecv_pagever_head - a zone's versions, mapped read-only
 * @gen: changes when a mapping of the zone is created, split, moved or
 *	removed
 * @pages: number of entries of @ver (the zone's pages)
 * @flags: ZCRECV_PAGEVER_DEAD once the zone was freed
 * @reserved: 0
 * @ver: one version per page of the zone, in page order
 */
struct zcrecv_pagever_head {
	__u64 gen;
	__u64 pages;
	__u64 flags;
	__u64 reserved[5];
	__u64 ver[];
};

/* struct zcrecv_pagever_head flags */
#define ZCRECV_PAGEVER_DEAD	(1ULL << 0)

/**
 * struct zcrecv_pagever - arm or bump the page versions of a zone range
 * @addr: in: user address of the range, page aligned
 * @len: in: bytes, a nonzero multiple of the page size; [@addr, @addr +
 *	@len) must be one run of pages of a ZCRECV_ZONE_PAGEVER zone of the
 *	calling file (as for ZCRECV_IOC_REMAP)
 * @op: in: ZCRECV_PAGEVER_ARM or ZCRECV_PAGEVER_BUMP
 * @flags: in: must be 0
 * @out_offset: out: mmap(2) offset of the zone's struct zcrecv_pagever_head
 * @out_size: out: bytes to map there
 * @out_first: out: index in @ver of the head of the page at @addr
 * @out_gen: out: @gen of the head when the range was checked
 * @out_pages: out: pages armed again (ARM) or bumped (BUMP)
 * @reserved: must be 0
 *
 * ARM: every odd version of the range becomes even (see "page versions")
 * and its page is write-protected; a write fault in flight on such a page
 * is either finished before or made to fault again after. BUMP: every
 * version of the range grows by two. Both report where the versions are
 * mapped, so ARM on a fresh range is also how a reader finds them.
 */
struct zcrecv_pagever {
	__u64 addr;
	__u64 len;
	__u32 op;
	__u32 flags;
	__u64 out_offset;
	__u64 out_size;
	__u64 out_first;
	__u64 out_gen;
	__u64 out_pages;
	__u64 reserved[2];
};

/* struct zcrecv_pagever op */
#define ZCRECV_PAGEVER_ARM	1
#define ZCRECV_PAGEVER_BUMP	2

#define ZCRECV_IOC_API		_IOWR(ZCRECV_IOC_MAGIC, 0x00, struct zcrecv_api)
#define ZCRECV_IOC_ZONE_CREATE	_IOWR(ZCRECV_IOC_MAGIC, 0x01, struct zcrecv_zone_create)
#define ZCRECV_IOC_REMAP	_IOWR(ZCRECV_IOC_MAGIC, 0x02, struct zcrecv_remap)
#define ZCRECV_IOC_PAGEVER	_IOWR(ZCRECV_IOC_MAGIC, 0x03, struct zcrecv_pagever)

#endif /* _UAPI_LINUX_ZCRECV_H */
