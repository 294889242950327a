// SPDX-License-Identifier: GPL-2.0
/*
 * zcrecv - page versions of ZCRECV_ZONE_PAGEVER zones (ZCRECV_IOC_PAGEVER).
 *
 * Each such zone has a version array (struct zcrecv_pagever_head, one u64
 * per page index) in vmalloc memory that the owner maps read-only, so a
 * reader looks at versions without a system call. The array lives in the
 * zone's own offset window, after the zone's pages and one gap page, and
 * is found by mmap through zcrecv_pv_by_pgoff.
 *
 * The protocol (uAPI "page versions"): even = armed (every mapping of the
 * page read-only), odd = written since. Versions only grow.
 *
 * - The zone's VMA has ->page_mkwrite, so the core maps its pages
 *   read-only and a write to one faults into zcrecv_pv_page_mkwrite(),
 *   which makes the version odd and returns with the page locked; the core
 *   makes the entry writable only after that, and only if the entry is
 *   still the one the fault started from (finish_mkwrite_fault() compares
 *   it under the page-table lock).
 * - ZCRECV_PAGEVER_ARM, for each odd version: locks the page, makes the
 *   version even, zaps the page's entries (unmap_mapping_range), unlocks.
 *   The page lock is what makes this safe: a write fault holds it from
 *   ->page_mkwrite until its entry is writable, so ARM waits for a write
 *   fault in flight, and a fault that reaches ->page_mkwrite after ARM
 *   finds the version even and makes it odd. Without the lock a write is
 *   lost to an ABA on the page-table entry: a fault remembers the
 *   read-only entry, calls ->page_mkwrite (version already odd: nothing
 *   to do), ARM makes it even and zaps the entry, a read fault maps the
 *   same page read-only again (the same entry value), and the first
 *   fault's re-check (finish_mkwrite_fault() compares the entry) passes
 *   and makes it writable under an even version. A zapped page faults
 *   back in read-only (zcrecv_vm_fault), so its next write comes back
 *   here. Zapping instead of write-protecting in place needs no
 *   page->mapping on driver pages (which folio_mkclean's reverse map
 *   walk would) at the price of a read fault after the page is armed.
 * - Pinned pages (pin_user_pages) can be written through the pin without
 *   a fault: ARM leaves them odd, so every read reports them changed.
 * - An exchange (zcrecv_remap.c) and ZCRECV_PAGEVER_BUMP add two: parity
 *   kept, value changed.
 *
 * Concurrency. Versions are changed by cmpxchg only: the fault path holds
 * the page's lock (not the zone's; it may race an exchange that moved the
 * page, and then bumps an index that no longer holds it: a spurious
 * change, never a lost one), ARM holds zone->lock and the page's lock,
 * the exchange zone->lock (it zaps the pages and replaces them: a fault
 * in flight on the old page finds its entry gone).
 *
 * Lifetime. The array is reference counted: the zone holds one reference
 * and each mapping of the array one. When the zone is freed the array is
 * marked ZCRECV_PAGEVER_DEAD and leaves zcrecv_pv_by_pgoff; the zone's
 * offset window is given back only with the last reference, so no other
 * zone is placed over a version mapping that is still there.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kref.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/overflow.h>
#include <linux/pagemap.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/xarray.h>

#include "zcrecv_internal.h"

struct zcrecv_pv {
	struct kref ref;
	struct zcrecv_pagever_head *head;	/* vmalloc_user() */
	unsigned long nr_pages;			/* of the array's mapping */
	pgoff_t pgoff;				/* offset of its mapping */
	unsigned int order, slot;		/* the zone's window, */
	bool owns_window;			/* given back at release */
};

/* Version arrays by their mmap offset; changed under the file's lock. */
static DEFINE_XARRAY(zcrecv_pv_by_pgoff);

unsigned long zcrecv_pv_window_pages(unsigned long zone_pages)
{
	/* At most ZCRECV_ZONE_PAGES_CAP pages: no overflow. */
	return DIV_ROUND_UP(sizeof(struct zcrecv_pagever_head) +
			    zone_pages * sizeof(__u64), PAGE_SIZE);
}

int zcrecv_pv_create(struct zcrecv_zone *zone)
{
	struct zcrecv_pv *pv;

	pv = kzalloc(sizeof(*pv), GFP_KERNEL_ACCOUNT);
	if (!pv)
		return -ENOMEM;
	pv->nr_pages = zcrecv_pv_window_pages(zone->nr_pages);
	pv->head = vmalloc_user(pv->nr_pages << PAGE_SHIFT);
	if (!pv->head) {
		kfree(pv);
		return -ENOMEM;
	}
	pv->head->pages = zone->nr_pages;
	kref_init(&pv->ref);
	zone->pv = pv;
	zcrecv_count(ZCRECV_CNT_PAGEVER_ARRAYS, 1);
	return 0;
}

static void zcrecv_pv_release(struct kref *ref)
{
	struct zcrecv_pv *pv = container_of(ref, struct zcrecv_pv, ref);

	if (pv->owns_window)
		zcrecv_window_free(pv->order, pv->slot);
	vfree(pv->head);
	kfree(pv);
	zcrecv_count(ZCRECV_CNT_PAGEVER_ARRAYS, -1);
}

/* After the zone has its window: make the array mappable. */
int zcrecv_pv_publish(struct zcrecv_zone *zone)
{
	struct zcrecv_pv *pv = zone->pv;

	pv->pgoff = zone->pgoff + zone->nr_pages + 1;
	pv->order = zone->order;
	pv->slot = zone->slot;
	return xa_insert(&zcrecv_pv_by_pgoff, pv->pgoff, zone, GFP_KERNEL);
}

void zcrecv_pv_unpublish(struct zcrecv_zone *zone)
{
	mutex_lock(&zone->zf->lock);
	xa_erase(&zcrecv_pv_by_pgoff, zone->pv->pgoff);
	mutex_unlock(&zone->zf->lock);
}

/* A zone that failed to be created: its array was never mapped. */
void zcrecv_pv_discard(struct zcrecv_zone *zone)
{
	kref_put(&zone->pv->ref, zcrecv_pv_release);
	zone->pv = NULL;
}

/* Under zf->lock: a mapping of the zone appeared, split, moved or went. */
void zcrecv_pv_changed_mapping(struct zcrecv_zone *zone)
{
	if (zone->pv)
		WRITE_ONCE(zone->pv->head->gen, zone->pv->head->gen + 1);
}

/*
 * The zone is being freed (its window is still reserved): readers of a
 * mapped array see it dead, and the window goes with the last reference.
 */
void zcrecv_pv_zone_gone(struct zcrecv_zone *zone)
{
	struct zcrecv_pv *pv = zone->pv;

	mutex_lock(&zone->zf->lock);
	xa_erase(&zcrecv_pv_by_pgoff, pv->pgoff);
	WRITE_ONCE(pv->head->flags, pv->head->flags | ZCRECV_PAGEVER_DEAD);
	WRITE_ONCE(pv->head->gen, pv->head->gen + 1);
	mutex_unlock(&zone->zf->lock);
	pv->owns_window = true;
	kref_put(&pv->ref, zcrecv_pv_release);
	zone->pv = NULL;
}

/* Add @n to a version; false if @need_odd/@need_even does not hold. */
static bool zcrecv_pv_add(u64 *v, u64 n, bool need_odd, bool need_even)
{
	u64 old = READ_ONCE(*v), prev;

	for (;;) {
		if ((need_odd && !(old & 1)) || (need_even && (old & 1)))
			return false;
		prev = cmpxchg64(v, old, old + n);
		if (prev == old)
			return true;
		old = prev;
	}
}

/* The exchange filled [first, first + n) of a zone: every version +2. */
void zcrecv_pv_bump(struct zcrecv_zone *zone, unsigned long first,
		    unsigned long n)
{
	unsigned long i;

	if (!zone->pv)
		return;
	for (i = 0; i < n; i++) {
		zcrecv_pv_add(&zone->pv->head->ver[first + i], 2, false,
			      false);
		if (!(i & 4095))
			cond_resched();
	}
}

/*
 * ->page_mkwrite of a versioned zone: a write to a read-only entry. The
 * version turns odd before the core makes the entry writable, and the page
 * stays locked until then: the page has no ->mapping, so the core would
 * otherwise retry the fault for ever (do_page_mkwrite()).
 */
vm_fault_t zcrecv_pv_page_mkwrite(struct vm_fault *vmf)
{
	struct zcrecv_zone *zone = vmf->vma->vm_private_data;
	struct page *page = vmf->page;
	unsigned long idx;

	if (!zone || !zone->pv)
		return VM_FAULT_SIGBUS;
	idx = vmf->pgoff - zone->pgoff;
	if (vmf->pgoff < zone->pgoff || idx >= zone->nr_pages)
		return VM_FAULT_SIGBUS;
	lock_page(page);
	if (zcrecv_pv_add(&zone->pv->head->ver[idx], 1, false, true))
		zcrecv_count(ZCRECV_CNT_PAGEVER_WRITES, 1);
	return VM_FAULT_LOCKED;
}

/* Longest run of pages held locked at once by ARM. */
#define ZCRECV_PV_RUN	64

/*
 * ARM [first, first + n) of a zone, under zone->lock: odd versions become
 * even and their pages lose their entries, run by run, each page locked
 * meanwhile (see the top of the file). Pages are locked in index order
 * under zone->lock, and a fault holds at most one: no deadlock. Returns
 * the number of pages armed (pinned ones not counted: they stay odd).
 */
static unsigned long zcrecv_pv_arm(struct zcrecv_zone *zone,
				   unsigned long first, unsigned long n)
{
	u64 *ver = zone->pv->head->ver + first;
	struct page **pages = zone->pages + first;
	unsigned long i = 0, armed = 0;

	while (i < n) {
		struct zcrecv_range run = { zone, first + i };
		unsigned long len = 0, k;

		while (i + len < n && len < ZCRECV_PV_RUN &&
		       (READ_ONCE(ver[i + len]) & 1)) {
			/*
			 * The lock waits for a write fault between
			 * ->page_mkwrite and its entry turning writable.
			 */
			if (pages[i + len])
				lock_page(pages[i + len]);
			zcrecv_pv_add(&ver[i + len], 1, true, false);
			len++;
		}
		if (!len) {
			i++;
			if (!(i & 4095))
				cond_resched();
			continue;
		}
		zcrecv_unmap(&run, len);
		for (k = 0; k < len; k++) {
			struct page *page = pages[i + k];

			if (!page) {
				armed++;
				continue;
			}
			/* Writes through a pin need no fault: always changed. */
			if (folio_maybe_dma_pinned(page_folio(page)))
				zcrecv_pv_add(&ver[i + k], 1, false, true);
			else
				armed++;
			unlock_page(page);
		}
		i += len;
		cond_resched();
	}
	return armed;
}

long zcrecv_ioctl_pagever(struct zcrecv_file *zf, void __user *uarg)
{
	struct zcrecv_pagever req;
	struct zcrecv_range r;
	struct zcrecv_pv *pv;
	unsigned long n, end;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if (req.flags || req.reserved[0] || req.reserved[1])
		return -EINVAL;
	if (req.op != ZCRECV_PAGEVER_ARM && req.op != ZCRECV_PAGEVER_BUMP)
		return -EOPNOTSUPP;
	if (!req.len || !PAGE_ALIGNED(req.addr) || !PAGE_ALIGNED(req.len))
		return -EINVAL;
	if (check_add_overflow(req.addr, req.len, &end))
		return -EOVERFLOW;
	if (current->mm != zf->mm)
		return -EPERM;
	n = req.len >> PAGE_SHIFT;

	if (mmap_read_lock_killable(zf->mm))
		return -EINTR;
	ret = zcrecv_resolve(zf, req.addr, req.len, &r);
	if (ret)
		goto out_mm;
	ret = -EOPNOTSUPP;
	pv = r.zone->pv;
	if (!pv)
		goto out_mm;

	mutex_lock(&r.zone->lock);
	if (req.op == ZCRECV_PAGEVER_ARM) {
		req.out_pages = zcrecv_pv_arm(r.zone, r.first, n);
		zcrecv_count(ZCRECV_CNT_PAGEVER_ARMED, req.out_pages);
	} else {
		zcrecv_pv_bump(r.zone, r.first, n);
		req.out_pages = n;
	}
	mutex_unlock(&r.zone->lock);
	/*
	 * The mapping generation while the range is known good: a change of
	 * the VMAs needs the mmap lock for writing, so none happened since
	 * zcrecv_resolve(); a later one changes gen.
	 */
	req.out_gen = READ_ONCE(pv->head->gen);
	req.out_offset = (u64)pv->pgoff << PAGE_SHIFT;
	req.out_size = (u64)pv->nr_pages << PAGE_SHIFT;
	req.out_first = r.first;
	ret = 0;
out_mm:
	mmap_read_unlock(zf->mm);
	if (ret)
		return ret;
	if (copy_to_user(uarg, &req, sizeof(req)))
		return -EFAULT;
	return 0;
}

/* The array's mapping. */

static void zcrecv_pv_vm_open(struct vm_area_struct *vma)
{
	struct zcrecv_pv *pv = vma->vm_private_data;

	kref_get(&pv->ref);
}

static void zcrecv_pv_vm_close(struct vm_area_struct *vma)
{
	struct zcrecv_pv *pv = vma->vm_private_data;

	kref_put(&pv->ref, zcrecv_pv_release);
}

static vm_fault_t zcrecv_pv_vm_fault(struct vm_fault *vmf)
{
	struct zcrecv_pv *pv = vmf->vma->vm_private_data;
	unsigned long idx = vmf->pgoff - pv->pgoff;
	struct page *page;
	int err;

	if (vmf->pgoff < pv->pgoff || idx >= pv->nr_pages)
		return VM_FAULT_SIGBUS;
	page = vmalloc_to_page((char *)pv->head + (idx << PAGE_SHIFT));
	err = vm_insert_page(vmf->vma, vmf->address & PAGE_MASK, page);
	if (!err || err == -EBUSY)
		return VM_FAULT_NOPAGE;
	return err == -ENOMEM ? VM_FAULT_OOM : VM_FAULT_SIGBUS;
}

static const struct vm_operations_struct zcrecv_pv_array_vm_ops = {
	.open	= zcrecv_pv_vm_open,
	.close	= zcrecv_pv_vm_close,
	.fault	= zcrecv_pv_vm_fault,
};

/*
 * mmap of a version array: the whole array, read-only (and never made
 * writable by mprotect), at the offset ZCRECV_IOC_PAGEVER reported, by the
 * file whose zone it is. Anything else is EINVAL (EACCES for PROT_WRITE).
 */
int zcrecv_pv_mmap(struct zcrecv_file *zf, struct vm_area_struct *vma)
{
	struct zcrecv_zone *zone;
	struct zcrecv_pv *pv = NULL;

	/*
	 * Entries leave under their file's lock, and zones are freed after
	 * an RCU grace period: a zone of another file is only looked at.
	 */
	mutex_lock(&zf->lock);
	rcu_read_lock();
	zone = xa_load(&zcrecv_pv_by_pgoff, vma->vm_pgoff);
	if (zone && zone->zf == zf && zone->pv &&
	    zone->pv->pgoff == vma->vm_pgoff)
		pv = zone->pv;
	rcu_read_unlock();
	if (!pv || vma_pages(vma) != pv->nr_pages) {
		mutex_unlock(&zf->lock);
		return -EINVAL;
	}
	if (vma->vm_flags & VM_WRITE) {
		mutex_unlock(&zf->lock);
		return -EACCES;
	}
	kref_get(&pv->ref);
	mutex_unlock(&zf->lock);

	zcrecv_vm_flags_clear(vma, VM_MAYWRITE);
	zcrecv_vm_flags_set(vma, VM_MIXEDMAP | VM_DONTCOPY | VM_WIPEONFORK |
			    VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &zcrecv_pv_array_vm_ops;
	vma->vm_private_data = pv;
	return 0;
}
