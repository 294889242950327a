// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * kmod.c - ZCR_PV_KMOD: page versions kept by zcrecv.ko for the pages of
 * zones created with ZCRECV_ZONE_PAGEVER (<linux/zcrecv.h>, "page
 * versions"; Documentation/module.md).
 *
 * The module counts write faults into a version array per zone that this
 * file maps read-only, once per zone and tracker. A version is even while
 * the page is write-protected and odd once it was written. A read looks
 * at the range's versions in that array: when all are even nothing was
 * written and no system call is made; when one is odd, one
 * ZCRECV_PAGEVER_ARM ioctl write-protects the written pages of the range
 * again (their versions become even) and the versions are read after it.
 * The module orders a write fault in flight against that ioctl, so a write
 * that lands after a read returned has changed the version the next read
 * sees.
 *
 * The array's head counts changes of the zone's mappings (gen) and says
 * when the zone is gone (ZCRECV_PAGEVER_DEAD): a read that sees gen moved
 * checks the range again with the ioctl, which fails when the range is no
 * longer the same run of the same zone (unmapped, remapped elsewhere).
 *
 * Versions returned are the module's plus twice the range's bump count
 * (__zcr_pv_bump): both only grow, so the sum changes when either does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/zcrecv.h>

#include "pagever/pv_int.h"

/* One zone's version array, mapped once per tracker. */
struct kmod_arr {
	struct kmod_arr *next;
	uint64_t off, size;
	const struct zcrecv_pagever_head *head;
	unsigned int refs;
};

struct kmod_priv {
	int fd;			/* a duplicate of the context's /dev/zcrecv */
	struct kmod_arr *arrs;
};

struct kmod_range {
	struct kmod_arr *arr;
	uint64_t first;		/* index of the range's first page in it */
	uint64_t gen;		/* head->gen when the range was last checked */
};

int __zcr_pv_kmod_attach(struct zcr_pv *pv, int kmod_fd)
{
	struct zcrecv_api api;
	struct kmod_priv *k;
	int fd;

	if (kmod_fd < 0)
		return -EOPNOTSUPP;
	/* Version 0: only ask, whatever ABI the module speaks. */
	memset(&api, 0, sizeof(api));
	if (ioctl(kmod_fd, ZCRECV_IOC_API, &api) < 0)
		return -EOPNOTSUPP;
	if (!(api.out_features & ZCRECV_FEATURE_PAGEVER) ||
	    api.out_page_size != ZCR_PV_PAGE)
		return -EOPNOTSUPP;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	/* The same open file: zones belong to the file that made them. */
	fd = fcntl(kmod_fd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0) {
		free(k);
		return -errno;
	}
	k->fd = fd;
	pv->kmod = k;
	return 0;
}

void __zcr_pv_kmod_detach(struct zcr_pv *pv)
{
	struct kmod_priv *k = pv->kmod;

	if (!k)
		return;
	while (k->arrs) {
		struct kmod_arr *a = k->arrs;

		k->arrs = a->next;
		munmap((void *)a->head, a->size);
		free(a);
	}
	close(k->fd);
	free(k);
	pv->kmod = NULL;
}

static int arm(struct kmod_priv *k, const struct zcr_pv_range *r,
	       struct zcrecv_pagever *req)
{
	memset(req, 0, sizeof(*req));
	req->addr = r->start;
	req->len = r->npages * ZCR_PV_PAGE;
	req->op = ZCRECV_PAGEVER_ARM;
	return ioctl(k->fd, ZCRECV_IOC_PAGEVER, req) < 0 ? -errno : 0;
}

static struct kmod_arr *arr_get(struct kmod_priv *k, uint64_t off,
				uint64_t size)
{
	struct kmod_arr *a;
	void *p;

	for (a = k->arrs; a; a = a->next) {
		if (a->off == off) {
			a->refs++;
			return a;
		}
	}
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, k->fd, (off_t)off);
	if (p == MAP_FAILED)
		return NULL;
	a = calloc(1, sizeof(*a));
	if (!a) {
		munmap(p, size);
		return NULL;
	}
	a->off = off;
	a->size = size;
	a->head = p;
	a->refs = 1;
	a->next = k->arrs;
	k->arrs = a;
	return a;
}

static void arr_put(struct kmod_priv *k, struct kmod_arr *a)
{
	struct kmod_arr **pp;

	if (--a->refs)
		return;
	for (pp = &k->arrs; *pp; pp = &(*pp)->next) {
		if (*pp == a) {
			*pp = a->next;
			break;
		}
	}
	munmap((void *)a->head, a->size);
	free(a);
}

static int kmod_open(struct zcr_pv *pv)
{
	return pv->kmod ? 0 : -EOPNOTSUPP;
}

static void kmod_close(struct zcr_pv *pv)
{
	(void)pv;
}

static int kmod_track(struct zcr_pv *pv, struct zcr_pv_range *r)
{
	struct zcrecv_pagever req;
	struct kmod_range *kr;
	struct kmod_arr *a;
	int ret;

	if (!pv->kmod)
		return -EINVAL;
	ret = arm(pv->kmod, r, &req);
	if (ret < 0)	/* not (all) in a versioned zone of this file */
		return ret == -EOPNOTSUPP || ret == -EFAULT ? -EINVAL : ret;
	kr = calloc(1, sizeof(*kr));
	if (!kr)
		return -ENOMEM;
	a = arr_get(pv->kmod, req.out_offset, req.out_size);
	if (!a) {
		free(kr);
		return -ENOMEM;
	}
	if (a->head->pages < req.out_first + r->npages) {
		arr_put(pv->kmod, a);
		free(kr);
		return -EIO;
	}
	kr->arr = a;
	kr->first = req.out_first;
	kr->gen = req.out_gen;
	r->priv = kr;
	return 0;
}

static void kmod_untrack(struct zcr_pv *pv, struct zcr_pv_range *r)
{
	struct kmod_range *kr = r->priv;

	if (!kr)
		return;
	arr_put(pv->kmod, kr->arr);
	free(kr);
	r->priv = NULL;
}

/*
 * Arm the range's written pages again, and check that it is still the same
 * run of the same zone (its zone's mappings may have changed).
 */
static int recheck(struct kmod_priv *k, struct zcr_pv_range *r,
		   struct kmod_range *kr)
{
	struct zcrecv_pagever req;
	int ret = arm(k, r, &req);

	if (ret == -EFAULT)
		return -ENOMEM;		/* nothing mapped there now */
	if (ret == -EINVAL || ret == -EOPNOTSUPP)
		return -EPERM;		/* something else mapped there */
	if (ret < 0)
		return ret;
	if (req.out_offset != kr->arr->off || req.out_first != kr->first)
		return -EPERM;		/* another zone or another place */
	kr->gen = req.out_gen;
	return 0;
}

static int kmod_read(struct zcr_pv *pv, struct zcr_pv_range *r,
		     uint64_t *ver)
{
	struct kmod_range *kr = r->priv;
	const struct zcrecv_pagever_head *h = kr->arr->head;
	const __u64 *v = h->ver + kr->first;
	uint64_t odd = 0;
	size_t i;
	int ret;

	if (__atomic_load_n(&h->flags, __ATOMIC_ACQUIRE) & ZCRECV_PAGEVER_DEAD)
		return -ENOMEM;
	for (i = 0; i < r->npages; i++)
		odd |= __atomic_load_n(&v[i], __ATOMIC_ACQUIRE);
	/*
	 * A written page (odd) is write-protected again by the ioctl, which
	 * also checks the range; a mapping change alone needs the check.
	 */
	if ((odd & 1) || __atomic_load_n(&h->gen, __ATOMIC_ACQUIRE) != kr->gen) {
		ret = recheck(pv->kmod, r, kr);
		if (ret < 0)
			return ret;
	}
	for (i = 0; i < r->npages; i++)
		ver[i] = __atomic_load_n(&v[i], __ATOMIC_ACQUIRE) +
			 2 * r->ver[i];
	return 0;
}

const struct zcr_pv_ops __zcr_pv_kmod_ops = {
	.mech = ZCR_PV_KMOD,
	.name = "kmod",
	.open = kmod_open,
	.close = kmod_close,
	.track = kmod_track,
	.untrack = kmod_untrack,
	.read = kmod_read,
};
