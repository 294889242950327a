// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * uffd_async.c - ZCR_PV_UFFD_ASYNC: userfaultfd write-protect in
 * asynchronous mode (UFFD_FEATURE_WP_ASYNC, Linux >= 6.7) read back with
 * PAGEMAP_SCAN on /proc/self/pagemap.
 *
 * A tracked range is registered in write-protect mode and write-protected
 * whole; WP_UNPOPULATED puts a marker into every empty page-table entry,
 * so a page never touched is protected too. A write to a protected page
 * (a store, or the kernel writing for a system call, another process's
 * process_vm_writev, a copy-on-write after fork) takes a fault the kernel
 * resolves itself: it clears the entry's uffd-wp bit, and no thread of
 * ours runs. The read is then two walks of the range's page tables:
 *
 *  1. PAGEMAP_SCAN with PM_SCAN_WP_MATCHING for the pages in category
 *     PAGE_IS_WRITTEN (present or swapped without the uffd-wp bit, and on
 *     the kernels that say so, empty entries): they are listed and
 *     write-protected again in the same walk, under the page-table lock,
 *     so a write after the walk passed a page faults again. This is the
 *     kernel's fast path (category and return mask PAGE_IS_WRITTEN
 *     alone). PM_SCAN_CHECK_WPASYNC fails it (EPERM) on any VMA of the
 *     range not registered with an async uffd: the range was unmapped and
 *     mapped again, or remapped.
 *  2. PAGEMAP_SCAN without write-protecting, listing the pages present or
 *     swapped (a uffd-wp marker counts as swapped). A page in neither was
 *     zapped (MADV_DONTNEED drops an anonymous page and its marker, and
 *     Linux >= 6.14 may free the emptied page table: a hole the first
 *     walk may skip), and its bytes are now zeros: it counts as written.
 *     A page outside any VMA is skipped by both walks: msync() tells it,
 *     and the read fails.
 *
 * A zap between the two walks is seen by the second; one after it leaves
 * an empty entry that the next read's second walk sees. The walks never
 * block a writer for long: each takes the page-table lock a page table at
 * a time. Versions live in r->ver[] and are bumped for each page found
 * written; a THP written anywhere is reported whole (all its 512 pages
 * change version), unless the kernel split it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pagever/compat_pagemap.h"
#include "pagever/pv_int.h"

#define ASYNC_VEC	256	/* regions per PAGEMAP_SCAN call */

struct async_priv {
	int uffd;
	int pagemap;
	struct page_region vec[ASYNC_VEC];
};

/*
 * Open a userfaultfd and do the API handshake asking for features (0: ask
 * none and learn which the kernel has, in *have). UFFD_USER_MODE_ONLY
 * first: it needs no privilege under vm.unprivileged_userfaultfd = 0, and
 * the asynchronous mode never delivers a fault, so it loses nothing.
 * Returns the descriptor or -errno.
 */
static int uffd_open(uint64_t features, uint64_t *have)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	int fd, ret;

	fd = (int)syscall(SYS_userfaultfd,
			  O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd < 0)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == EPERM || errno == ENOSYS ? -EOPNOTSUPP : -errno;
	if (ioctl(fd, UFFDIO_API, &api) < 0) {
		ret = errno == EINVAL ? -EOPNOTSUPP : -errno;
		close(fd);
		return ret;
	}
	if (have)
		*have = api.features;
	return fd;
}

static int async_open(struct zcr_pv *pv)
{
	uint64_t want = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED;
	struct pm_scan_arg arg;
	struct async_priv *a;
	uint64_t have = 0;
	int fd;

	fd = uffd_open(0, &have);
	if (fd < 0)
		return fd;
	close(fd);
	if ((have & want) != want)
		return -EOPNOTSUPP;
	/* shmem and hugetlbfs too, where the kernel can. */
	want |= have & UFFD_FEATURE_WP_HUGETLBFS_SHMEM;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (a->pagemap < 0) {
		free(a);
		return -EOPNOTSUPP;
	}
	/* An empty scan: ENOTTY before Linux 6.7. */
	memset(&arg, 0, sizeof(arg));
	arg.size = sizeof(arg);
	if (ioctl(a->pagemap, PAGEMAP_SCAN, &arg) < 0) {
		close(a->pagemap);
		free(a);
		return -EOPNOTSUPP;
	}
	a->uffd = uffd_open(want, NULL);
	if (a->uffd < 0) {
		fd = a->uffd;
		close(a->pagemap);
		free(a);
		return fd;
	}
	pv->priv = a;
	return 0;
}

static void async_close(struct zcr_pv *pv)
{
	struct async_priv *a = pv->priv;

	close(a->uffd);
	close(a->pagemap);
	free(a);
}

static int async_track(struct zcr_pv *pv, struct zcr_pv_range *r)
{
	struct async_priv *a = pv->priv;
	uint64_t len = r->npages * ZCR_PV_PAGE;
	int ret;

	ret = __zcr_pv_uffd_register(a->uffd, r->start, len);
	if (ret < 0)
		return ret;
	ret = __zcr_pv_uffd_wp(a->uffd, r->start, len, true);
	if (ret < 0)
		__zcr_pv_uffd_release(a->uffd, r->start, len);
	return ret;
}

static void async_untrack(struct zcr_pv *pv, struct zcr_pv_range *r)
{
	struct async_priv *a = pv->priv;

	__zcr_pv_uffd_release(a->uffd, r->start, r->npages * ZCR_PV_PAGE);
}

static void bump(struct zcr_pv_range *r, uint64_t start, uint64_t end)
{
	size_t i = (start - r->start) / ZCR_PV_PAGE;
	size_t n = (end - r->start) / ZCR_PV_PAGE;

	for (; i < n && i < r->npages; i++)
		r->ver[i]++;
}

static int async_read(struct zcr_pv *pv, struct zcr_pv_range *r,
		      uint64_t *ver)
{
	struct async_priv *a = pv->priv;
	uint64_t end = r->start + r->npages * ZCR_PV_PAGE, at, covered;
	struct pm_scan_arg arg;
	bool holes = false;
	long i, n;

	/* 1: list and write-protect again the written pages. */
	for (at = r->start; at < end; at = arg.walk_end) {
		memset(&arg, 0, sizeof(arg));
		arg.size = sizeof(arg);
		arg.flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC;
		arg.start = at;
		arg.end = end;
		arg.vec = (uintptr_t)a->vec;
		arg.vec_len = ASYNC_VEC;
		arg.category_mask = PAGE_IS_WRITTEN;
		arg.return_mask = PAGE_IS_WRITTEN;
		n = ioctl(a->pagemap, PAGEMAP_SCAN, &arg);
		if (n < 0)
			return -errno;
		for (i = 0; i < n; i++)
			bump(r, a->vec[i].start, a->vec[i].end);
		if (arg.walk_end <= at)
			return -EIO;
	}
	/* 2: the pages neither present nor swapped were zapped. */
	covered = r->start;
	for (at = r->start; at < end; at = arg.walk_end) {
		memset(&arg, 0, sizeof(arg));
		arg.size = sizeof(arg);
		arg.flags = PM_SCAN_CHECK_WPASYNC;
		arg.start = at;
		arg.end = end;
		arg.vec = (uintptr_t)a->vec;
		arg.vec_len = ASYNC_VEC;
		arg.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED;
		n = ioctl(a->pagemap, PAGEMAP_SCAN, &arg);
		if (n < 0)
			return -errno;
		for (i = 0; i < n; i++) {
			if (a->vec[i].start > covered) {
				bump(r, covered, a->vec[i].start);
				holes = true;
			}
			covered = a->vec[i].end;
		}
		if (arg.walk_end <= at)
			return -EIO;
	}
	if (covered < end) {
		bump(r, covered, end);
		holes = true;
	}
	if (holes) {
		int ret = __zcr_pv_mapped(r->start, end - r->start);

		if (ret < 0)
			return ret;
	}
	memcpy(ver, r->ver, r->npages * sizeof(*ver));
	return 0;
}

const struct zcr_pv_ops __zcr_pv_uffd_async_ops = {
	.mech = ZCR_PV_UFFD_ASYNC,
	.name = "uffd-async",
	.open = async_open,
	.close = async_close,
	.track = async_track,
	.untrack = async_untrack,
	.read = async_read,
};
