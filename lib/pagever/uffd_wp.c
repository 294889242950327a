// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * uffd_wp.c - the userfaultfd write-protect steps both uffd mechanisms
 * take (uffd_async.c, uffd_sync.c): register a range, protect or lift,
 * release.
 */
#include <errno.h>
#include <sys/ioctl.h>

#include "pagever/compat_pagemap.h"
#include "pagever/pv_int.h"

/*
 * Before Linux 6.5 UFFDIO_WRITEPROTECT's range must lie in one VMA (else
 * ENOENT), and a tracked range may span several (two mappings side by
 * side, a VMA split by mprotect): on ENOENT, halve until each part lies
 * in one. A single page that still fails is not registered.
 */
int __zcr_pv_uffd_wp(int fd, uint64_t start, uint64_t len, bool protect)
{
	struct uffdio_writeprotect wp = {
		.range = { .start = start, .len = len },
		.mode = protect ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};
	uint64_t half;
	int ret;

	if (ioctl(fd, UFFDIO_WRITEPROTECT, &wp) == 0)
		return 0;
	if (errno != ENOENT || len <= ZCR_PV_PAGE)
		return -errno;
	half = (len / 2) & ~(uint64_t)(ZCR_PV_PAGE - 1);
	ret = __zcr_pv_uffd_wp(fd, start, half, protect);
	if (ret < 0 && protect)
		return ret;
	return __zcr_pv_uffd_wp(fd, start + half, len - half, protect);
}

int __zcr_pv_uffd_register(int fd, uint64_t start, uint64_t len)
{
	struct uffdio_register reg = {
		.range = { .start = start, .len = len },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	/* EBUSY: another userfaultfd has it (the uffd-move backend). */
	if (ioctl(fd, UFFDIO_REGISTER, &reg) < 0)
		return -errno;
	if (!(reg.ioctls & (1ULL << _UFFDIO_WRITEPROTECT))) {
		ioctl(fd, UFFDIO_UNREGISTER, &reg.range);
		return -EINVAL;
	}
	return 0;
}

void __zcr_pv_uffd_release(int fd, uint64_t start, uint64_t len)
{
	struct uffdio_range range = { .start = start, .len = len };

	/*
	 * Lift the protection first: it wakes the threads stopped on it,
	 * and kernels before 6.4 may leave uffd-wp bits behind an
	 * unregister. Both fail harmlessly (ENOENT, EINVAL) on a range
	 * unmapped meanwhile.
	 */
	__zcr_pv_uffd_wp(fd, start, len, false);
	ioctl(fd, UFFDIO_UNREGISTER, &range);
}
