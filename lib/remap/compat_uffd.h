/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * compat_uffd.h - UFFDIO_MOVE for builds whose <linux/userfaultfd.h> predates
 * it (Debian 12's linux-libc-dev is 6.1; the ioctl arrived in Linux 6.8).
 * The values are the kernel ABI; a kernel without the feature answers
 * UFFDIO_API without UFFD_FEATURE_MOVE and the caller falls back.
 */
#ifndef ZCR_COMPAT_UFFD_H
#define ZCR_COMPAT_UFFD_H

#include <linux/types.h>
#include <linux/userfaultfd.h>

#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE			(1 << 16)
#define _UFFDIO_MOVE				(0x05)
#define UFFDIO_MOVE_MODE_DONTWAKE		((__u64)1 << 0)
#define UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES	((__u64)1 << 1)

struct uffdio_move {
	__u64 dst;
	__u64 src;
	__u64 len;
	__u64 mode;
	__s64 move;	/* out: bytes moved, or -errno */
};

#define UFFDIO_MOVE	_IOWR(UFFDIO, _UFFDIO_MOVE, struct uffdio_move)
#endif

#endif /* ZCR_COMPAT_UFFD_H */
