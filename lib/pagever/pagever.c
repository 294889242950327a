// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * pagever.c - the trackers and ranges of lib/pagever, the choice of a
 * mechanism and the dispatch to it (pv_int.h). The mechanisms and what
 * each costs: Documentation/prefetch.md, "Page versions".
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/config.h"
#include "pagever/pv_int.h"

static const struct zcr_pv_ops *const mechs[ZCR_PV_NMECH] = {
	[ZCR_PV_UFFD_ASYNC] = &__zcr_pv_uffd_async_ops,
	[ZCR_PV_UFFD_SYNC] = &__zcr_pv_uffd_sync_ops,
	[ZCR_PV_HASH] = &__zcr_pv_hash_ops,
	[ZCR_PV_KMOD] = &__zcr_pv_kmod_ops,
};

/*
 * What AUTO tries, in order: the asynchronous write-protect costs nothing
 * per clean page but a page-table walk, and its fault is resolved in the
 * kernel; the hash works on any memory and any kernel. uffd-sync and
 * mprotect stop the writing thread at its first write to each page (a
 * round trip to a thread or a signal), which costs more than hashing the
 * page at the next read (Documentation/prefetch.md): never chosen. Before
 * all of them, per range, zcrecv.ko's own versions where the range is in
 * a versioned zone (a look at a mapped array, no system call while no
 * page was written): see __zcr_pv_track().
 */
static const enum zcr_pv_mech auto_order[] = {
	ZCR_PV_UFFD_ASYNC, ZCR_PV_HASH,
};

static const char *const mech_names[ZCR_PV_NMECH] = {
	[ZCR_PV_AUTO] = "auto",
	[ZCR_PV_UFFD_ASYNC] = "uffd-async",
	[ZCR_PV_UFFD_SYNC] = "uffd-sync",
	[ZCR_PV_MPROTECT] = "mprotect",
	[ZCR_PV_HASH] = "hash",
	[ZCR_PV_KMOD] = "kmod",
};

const char *__zcr_pv_mech_name(enum zcr_pv_mech mech)
{
	return (unsigned int)mech < ZCR_PV_NMECH ? mech_names[mech] : "?";
}

enum zcr_pv_mech __zcr_pv_mech(const struct zcr_pv *pv)
{
	return pv->ops->mech;
}

enum zcr_pv_mech __zcr_pv_range_mech(const struct zcr_pv_range *r)
{
	return r->ops->mech;
}

bool __zcr_pv_kmod(const struct zcr_pv *pv)
{
	return pv->kmod != NULL;
}

static int open_one(struct zcr_pv **pvp, enum zcr_pv_mech mech, int kmod_fd)
{
	struct zcr_pv *pv;
	int ret;

	/*
	 * mprotect + SIGSEGV is not built: a read(2) into a protected page
	 * fails with EFAULT instead of faulting, which changes what the
	 * application sees (Documentation/prefetch.md).
	 */
	if (!mechs[mech])
		return -EOPNOTSUPP;
	pv = calloc(1, sizeof(*pv));
	if (!pv)
		return -ENOMEM;
	pv->ops = mechs[mech];
	pv->pid = getpid();
	/* The module's versions: the mechanism itself, or AUTO's first try. */
	if (mech == ZCR_PV_KMOD || kmod_fd >= 0) {
		ret = __zcr_pv_kmod_attach(pv, kmod_fd);
		if (ret == -ENOMEM || (ret < 0 && mech == ZCR_PV_KMOD)) {
			free(pv);
			return ret;
		}
		pv->auto_kmod = pv->kmod && mech != ZCR_PV_KMOD;
	}
	ret = pv->ops->open(pv);
	if (ret < 0) {
		__zcr_pv_kmod_detach(pv);
		free(pv);
		return ret;
	}
	*pvp = pv;
	return 0;
}

int __zcr_pv_open(struct zcr_pv **pvp, enum zcr_pv_mech mech)
{
	return __zcr_pv_open_kmod(pvp, mech, -1);
}

int __zcr_pv_open_kmod(struct zcr_pv **pvp, enum zcr_pv_mech mech,
		       int kmod_fd)
{
	struct zcr_env_val v;
	size_t i;
	int ret;

	if (!pvp || (unsigned int)mech >= ZCR_PV_NMECH)
		return -EINVAL;
	/* Versions are per 4 KiB page: the hash and the scans assume it. */
	if (sysconf(_SC_PAGESIZE) != (long)ZCR_PV_PAGE)
		return -EOPNOTSUPP;
	if (mech == ZCR_PV_AUTO) {
		/* A bad value was said when the context read its variables. */
		if (__zcr_env_get(ZCR_ENV_PREFETCH_PAGEVER, true, &v) == 0 &&
		    v.set && v.u != ZCR_PV_AUTO && v.u < ZCR_PV_NMECH)
			mech = (enum zcr_pv_mech)v.u;
	}
	if (mech != ZCR_PV_AUTO)
		return open_one(pvp, mech, mech == ZCR_PV_KMOD ? kmod_fd : -1);
	ret = -EOPNOTSUPP;
	for (i = 0; i < sizeof(auto_order) / sizeof(auto_order[0]); i++) {
		ret = open_one(pvp, auto_order[i], kmod_fd);
		if (ret != -EOPNOTSUPP && ret != -EPERM && ret != -ENOSYS)
			break;
	}
	return ret;
}

void __zcr_pv_close(struct zcr_pv *pv)
{
	if (!pv)
		return;
	while (pv->ranges)
		__zcr_pv_untrack(pv, pv->ranges);
	pv->ops->close(pv);
	__zcr_pv_kmod_detach(pv);
	free(pv);
}

/*
 * The uffd mechanisms keep their state in the VMA and page tables:
 * untracking one of two overlapping ranges would unregister the other's
 * pages. One range per page, then, among the ranges they serve.
 */
static int track_own(struct zcr_pv *pv, struct zcr_pv_range *r,
		     uintptr_t start, uintptr_t end)
{
	struct zcr_pv_range *o;

	if (pv->ops->mech == ZCR_PV_HASH || pv->ops->mech == ZCR_PV_KMOD)
		return pv->ops->track(pv, r);
	for (o = pv->ranges; o; o = o->next)
		if (o->ops == pv->ops &&
		    start < o->start + o->npages * ZCR_PV_PAGE &&
		    o->start < end)
			return -EBUSY;
	return pv->ops->track(pv, r);
}

int __zcr_pv_track(struct zcr_pv *pv, const void *addr, size_t len,
		   struct zcr_pv_range **rp)
{
	uintptr_t start, end;
	struct zcr_pv_range *r;
	int ret;

	if (!pv || !addr || !len || !rp)
		return -EINVAL;
	start = (uintptr_t)addr & ~(ZCR_PV_PAGE - 1);
	if ((uintptr_t)addr + len < (uintptr_t)addr ||
	    (uintptr_t)addr + len > UINTPTR_MAX - ZCR_PV_PAGE)
		return -EINVAL;
	end = ((uintptr_t)addr + len + ZCR_PV_PAGE - 1) & ~(ZCR_PV_PAGE - 1);
	ret = __zcr_pv_mapped(start, end - start);
	if (ret < 0)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->start = start;
	r->npages = (end - start) / ZCR_PV_PAGE;
	r->ver = calloc(r->npages, sizeof(*r->ver));
	if (!r->ver) {
		free(r);
		return -ENOMEM;
	}
	/* AUTO: the module's versions where it keeps them, quietly not. */
	ret = -EINVAL;
	if (pv->auto_kmod) {
		ret = __zcr_pv_kmod_ops.track(pv, r);
		if (ret == 0)
			r->ops = &__zcr_pv_kmod_ops;
		else if (ret != -EINVAL)
			goto err;
	}
	if (!r->ops) {
		ret = track_own(pv, r, start, end);
		if (ret == 0)
			r->ops = pv->ops;
	}
	if (ret < 0) {
err:
		free(r->ver);
		free(r);
		return ret;
	}
	r->next = pv->ranges;
	pv->ranges = r;
	*rp = r;
	return 0;
}

void __zcr_pv_untrack(struct zcr_pv *pv, struct zcr_pv_range *r)
{
	struct zcr_pv_range **pp;

	if (!pv || !r)
		return;
	for (pp = &pv->ranges; *pp; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	r->ops->untrack(pv, r);
	free(r->ver);
	free(r);
}

size_t __zcr_pv_npages(const struct zcr_pv_range *r)
{
	return r ? r->npages : 0;
}

int __zcr_pv_read(struct zcr_pv *pv, struct zcr_pv_range *r, uint64_t *ver)
{
	int ret;

	if (!pv || !r || !ver)
		return -EINVAL;
	if (r->dead)
		return -ESTALE;
	/* A forked child: the descriptors still name the parent's memory. */
	if (r->ops->mech != ZCR_PV_HASH && getpid() != pv->pid)
		return -ECHILD;
	ret = r->ops->read(pv, r, ver);
	if (ret < 0)
		r->dead = true;
	return ret;
}

void __zcr_pv_bump(struct zcr_pv *pv, const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr, end = a + len;
	struct zcr_pv_range *r;
	size_t i, first, last;

	if (!pv || !len)
		return;
	for (r = pv->ranges; r; r = r->next) {
		uintptr_t rend = r->start + r->npages * ZCR_PV_PAGE;

		if (end <= r->start || a >= rend)
			continue;
		first = a <= r->start ? 0 : (a - r->start) / ZCR_PV_PAGE;
		last = end >= rend ? r->npages :
		       (end - r->start + ZCR_PV_PAGE - 1) / ZCR_PV_PAGE;
		for (i = first; i < last; i++)
			r->ver[i]++;
	}
}

/*
 * msync(MS_ASYNC) fails with ENOMEM when part of the range is not mapped,
 * and otherwise (since Linux 2.6.19) only walks the VMAs: the cheapest way
 * to tell a hole.
 */
int __zcr_pv_mapped(uintptr_t start, size_t len)
{
	if (msync((void *)start, len, MS_ASYNC) < 0)
		return errno == ENOMEM ? -ENOMEM : -errno;
	return 0;
}
