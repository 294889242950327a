/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * compat_pagemap.h - userfaultfd's asynchronous write-protect features
 * (Linux >= 6.4: WP_UNPOPULATED; >= 6.7: WP_ASYNC) and the PAGEMAP_SCAN
 * ioctl of /proc/PID/pagemap (Linux >= 6.7) for builds whose headers
 * predate them (Debian 12's linux-libc-dev is 6.1). The values are the
 * kernel ABI; a kernel without a feature leaves its bit out of UFFDIO_API's
 * answer, and one without PAGEMAP_SCAN answers the ioctl with ENOTTY.
 */
#ifndef ZCR_COMPAT_PAGEMAP_H
#define ZCR_COMPAT_PAGEMAP_H

#include <linux/fs.h>
#include <linux/ioctl.h>
#include <linux/types.h>
#include <linux/userfaultfd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY		1
#endif
#ifndef UFFD_FEATURE_WP_HUGETLBFS_SHMEM
#define UFFD_FEATURE_WP_HUGETLBFS_SHMEM	(1 << 12)
#endif
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED	(1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC		(1 << 15)
#endif

#ifndef PAGEMAP_SCAN
#define PAGE_IS_WPALLOWED	(1 << 0)
#define PAGE_IS_WRITTEN		(1 << 1)
#define PAGE_IS_FILE		(1 << 2)
#define PAGE_IS_PRESENT		(1 << 3)
#define PAGE_IS_SWAPPED		(1 << 4)
#define PAGE_IS_PFNZERO		(1 << 5)
#define PAGE_IS_HUGE		(1 << 6)
#define PAGE_IS_SOFT_DIRTY	(1 << 7)

struct page_region {
	__u64 start;
	__u64 end;
	__u64 categories;
};

#define PM_SCAN_WP_MATCHING	(1 << 0)
#define PM_SCAN_CHECK_WPASYNC	(1 << 1)

struct pm_scan_arg {
	__u64 size;
	__u64 flags;
	__u64 start;
	__u64 end;
	__u64 walk_end;
	__u64 vec;
	__u64 vec_len;
	__u64 max_pages;
	__u64 category_inverted;
	__u64 category_mask;
	__u64 category_anyof_mask;
	__u64 return_mask;
};

#define PAGEMAP_SCAN	_IOWR('f', 16, struct pm_scan_arg)
#endif

#endif /* ZCR_COMPAT_PAGEMAP_H */
