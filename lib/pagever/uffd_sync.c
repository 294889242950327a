// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * uffd_sync.c - ZCR_PV_UFFD_SYNC: classic userfaultfd write-protect, for
 * kernels without WP_ASYNC (Linux 6.1 of Debian 12).
 *
 * The range is registered in write-protect mode, populated
 * (MADV_POPULATE_WRITE: before Linux 6.4 an empty entry cannot be
 * protected, and a first write to it would go unseen) and protected. A
 * write to a protected page stops the writing thread (a store, and the
 * kernel's own writes for a system call or another process's
 * process_vm_writev: so the descriptor is opened without
 * UFFD_USER_MODE_ONLY, which would fail those with EFAULT) until the
 * handler thread lifts the protection of that page. The handler keeps no
 * state: the page tables do. A read looks at them through
 * /proc/self/pagemap (present or swapped, and the uffd-wp bit, reported
 * since Linux 5.19): a page not both present-or-swapped and protected was
 * written (the handler let a write through), zapped (MADV_DONTNEED drops
 * page and protection) or unmapped; its version is bumped, it is
 * populated again if empty and protected again. A page of a VMA replaced
 * by munmap + mmap fails the protection (ENOENT: not registered) or the
 * populate (ENOMEM: nothing mapped), and the read with it.
 *
 * Per page, a read samples the page-table entry once: a write or a zap
 * after that leaves the page unprotected, which the next read sees. The
 * handler and a read race harmlessly: a fault queued before a read and
 * served after it lifts a protection the read just set, and the next read
 * sees that page as written.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pagever/compat_pagemap.h"
#include "pagever/pv_int.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE	23
#endif

/* /proc/PID/pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst) */
#define PM_UFFD_WP	(1ULL << 57)
#define PM_SWAP		(1ULL << 62)
#define PM_PRESENT	(1ULL << 63)

struct sync_priv {
	int uffd;
	int pagemap;
	int stop[2];		/* a pipe: the handler's stop signal */
	pthread_t handler;
	uint64_t *pm;		/* pagemap entries of the range read */
	size_t pm_cap;
};

/*
 * The handler: lift the protection of each page a thread faulted on
 * (which wakes it). It touches no tracked memory, so it never faults.
 */
static void *sync_handler(void *arg)
{
	struct sync_priv *s = arg;
	struct pollfd pfd[2] = {
		{ .fd = s->uffd, .events = POLLIN },
		{ .fd = s->stop[0], .events = POLLIN },
	};
	struct uffd_msg msg[16];
	ssize_t n, i;

	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents)
			break;
		n = read(s->uffd, msg, sizeof(msg));
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			break;
		}
		for (i = 0; i < n / (ssize_t)sizeof(msg[0]); i++) {
			uint64_t page;
			struct uffdio_writeprotect wp;
			struct uffdio_range range;

			if (msg[i].event != UFFD_EVENT_PAGEFAULT)
				continue;
			page = msg[i].arg.pagefault.address &
			       ~(uint64_t)(ZCR_PV_PAGE - 1);
			memset(&wp, 0, sizeof(wp));
			wp.range.start = page;
			wp.range.len = ZCR_PV_PAGE;
			if (ioctl(s->uffd, UFFDIO_WRITEPROTECT, &wp) == 0)
				continue;
			/* Unregistered meanwhile: let the thread retry. */
			range.start = page;
			range.len = ZCR_PV_PAGE;
			ioctl(s->uffd, UFFDIO_WAKE, &range);
		}
	}
	return NULL;
}

static int sync_open(struct zcr_pv *pv)
{
	struct uffdio_api api = { .api = UFFD_API };
	sigset_t all, old;
	struct sync_priv *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->stop[0] = s->stop[1] = -1;
	s->pagemap = -1;
	/* Not UFFD_USER_MODE_ONLY: see the top of the file. */
	s->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (s->uffd < 0) {
		ret = errno == EPERM || errno == ENOSYS || errno == EINVAL ?
		      -EOPNOTSUPP : -errno;
		goto out_free;
	}
	if (ioctl(s->uffd, UFFDIO_API, &api) < 0) {
		ret = -EOPNOTSUPP;
		goto out_uffd;
	}
	s->pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (s->pagemap < 0) {
		ret = -EOPNOTSUPP;
		goto out_uffd;
	}
	if (pipe2(s->stop, O_CLOEXEC) < 0) {
		ret = -errno;
		goto out_pagemap;
	}
	/*
	 * The handler runs with every signal blocked: a signal handler of
	 * the application run on it could store to a tracked page, and the
	 * thread that lifts protections would wait for itself.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&s->handler, NULL, sync_handler, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret < 0)
		goto out_pipe;
	pv->priv = s;
	return 0;

out_pipe:
	close(s->stop[0]);
	close(s->stop[1]);
out_pagemap:
	close(s->pagemap);
out_uffd:
	close(s->uffd);
out_free:
	free(s);
	return ret;
}

static void sync_close(struct zcr_pv *pv)
{
	struct sync_priv *s = pv->priv;
	char c = 0;

	if (write(s->stop[1], &c, 1) == 1)
		pthread_join(s->handler, NULL);
	close(s->stop[0]);
	close(s->stop[1]);
	close(s->pagemap);
	close(s->uffd);
	free(s->pm);
	free(s);
}

static int sync_track(struct zcr_pv *pv, struct zcr_pv_range *r)
{
	struct sync_priv *s = pv->priv;
	uint64_t len = r->npages * ZCR_PV_PAGE;
	int ret;

	ret = __zcr_pv_uffd_register(s->uffd, r->start, len);
	if (ret < 0)
		return ret;
	if (madvise((void *)r->start, len, MADV_POPULATE_WRITE) < 0)
		ret = -errno;
	else
		ret = __zcr_pv_uffd_wp(s->uffd, r->start, len, true);
	if (ret < 0)
		__zcr_pv_uffd_release(s->uffd, r->start, len);
	return ret;
}

static void sync_untrack(struct zcr_pv *pv, struct zcr_pv_range *r)
{
	struct sync_priv *s = pv->priv;

	__zcr_pv_uffd_release(s->uffd, r->start, r->npages * ZCR_PV_PAGE);
}

/* Pages [i, j) of r were not protected: populate if empty, protect. */
static int rearm(struct sync_priv *s, struct zcr_pv_range *r, size_t i,
		 size_t j, bool empty)
{
	uint64_t start = r->start + i * ZCR_PV_PAGE;
	uint64_t len = (j - i) * ZCR_PV_PAGE;

	if (empty && madvise((void *)start, len, MADV_POPULATE_WRITE) < 0)
		return -errno;
	return __zcr_pv_uffd_wp(s->uffd, start, len, true);
}

static int sync_read(struct zcr_pv *pv, struct zcr_pv_range *r,
		     uint64_t *ver)
{
	struct sync_priv *s = pv->priv;
	size_t bytes = r->npages * sizeof(uint64_t), i, run = 0;
	off_t off = (off_t)(r->start / ZCR_PV_PAGE) * 8;
	bool in_run = false, empty = false;
	ssize_t n;
	int ret;

	if (s->pm_cap < r->npages) {
		uint64_t *pm = realloc(s->pm, bytes);

		if (!pm)
			return -ENOMEM;
		s->pm = pm;
		s->pm_cap = r->npages;
	}
	n = pread(s->pagemap, s->pm, bytes, off);
	if (n < 0)
		return -errno;
	if ((size_t)n != bytes)
		return -EIO;
	for (i = 0; i < r->npages; i++) {
		uint64_t e = s->pm[i];
		bool ok = (e & (PM_PRESENT | PM_SWAP)) && (e & PM_UFFD_WP);

		if (ok) {
			if (in_run) {
				ret = rearm(s, r, run, i, empty);
				if (ret < 0)
					return ret;
				in_run = false;
			}
			continue;
		}
		r->ver[i]++;
		if (!in_run) {
			in_run = true;
			empty = false;
			run = i;
		}
		if (!(e & (PM_PRESENT | PM_SWAP)))
			empty = true;
	}
	if (in_run) {
		ret = rearm(s, r, run, r->npages, empty);
		if (ret < 0)
			return ret;
	}
	memcpy(ver, r->ver, bytes);
	return 0;
}

const struct zcr_pv_ops __zcr_pv_uffd_sync_ops = {
	.mech = ZCR_PV_UFFD_SYNC,
	.name = "uffd-sync",
	.open = sync_open,
	.close = sync_close,
	.track = sync_track,
	.untrack = sync_untrack,
	.read = sync_read,
};
