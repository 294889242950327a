// SPDX-License-Identifier: GPL-2.0
/*
 * zcrecv - zones: arrays of driver-owned pages mapped into one process.
 *
 * Lifetimes. Each open file has a struct zcrecv_file bound to the mm that
 * opened it. A zone belongs to one file; ZCRECV_IOC_ZONE_CREATE gives it a
 * window of file offsets no other live zone has (every open file maps the
 * module's one inode and so one address_space, so unmap_mapping_range
 * on one zone's window must not reach another zone's mapping, even of
 * another process). A window is reused only after its zone is freed, and a
 * freed zone has no page-table entry left in its window (see
 * zcrecv_zone_destroy). A
 * mapped zone's VMAs hold the file, so a zone never outlives its file. The
 * zone is freed when its last VMA closes (munmap, exit) or, if it was never
 * mapped, when the file is released. A child that inherits a mapping (only
 * possible after madvise(MADV_DOFORK)) gets a detached copy: no zone, no
 * pages, SIGBUS on access (see zcrecv_vm_open).
 *
 * Locking. zf->lock protects zf->zones, every zone's nr_vmas/mapped and the
 * removal of the file's zones from zcrecv_zones_by_pgoff.
 * zone->lock protects zone->pages[] and is held while a 4 KiB zone's pages
 * are inserted into page tables, so a fault and an exchange never see a
 * half-swapped array (huge zones use the units' folio locks for that, see
 * zcrecv_huge.c). Order: mmap_lock (or the per-VMA lock) -> zone->lock ->
 * folio locks; two zones are locked in ascending id order.
 * zcrecv_owners_lock protects the per-mm accounting.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/list.h>
#include <linux/idr.h>
#include <linux/log2.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "zcrecv_internal.h"

/* Per-process (per-mm) accounting of reserved zone pages. */
struct zcrecv_owner {
	struct list_head node;
	struct mm_struct *mm;		/* mmgrab()ed: the pointer stays unique */
	unsigned int nr_files;
	unsigned long reserved;		/* pages of live zones */
	unsigned long nr_zones;		/* live zones */
};

static LIST_HEAD(zcrecv_owners);
static DEFINE_MUTEX(zcrecv_owners_lock);
static unsigned long zcrecv_global_reserved;	/* under zcrecv_owners_lock */
static atomic64_t zcrecv_next_zone_id = ATOMIC64_INIT(1);

/*
 * Offset windows. A zone of n pages gets a window of 2^k offsets, the least
 * power of two above n (so at least one page of gap follows the zone), at
 * slot s of order k: slots come from one IDA per order, lowest free first,
 * so a window is reused as soon as its zone is freed. The slots of order k
 * fill region k of the first 2^32 pages of offset (24 regions of 2^27
 * pages: 32-bit callers pass offsets below 2^32 pages to mmap2), then an
 * overflow area of 2^40 pages per order above it that only 64-bit callers
 * can reach. Windows of different orders never overlap, and every window
 * is naturally aligned (its first offset is a multiple of 2^k: the region
 * and overflow bases are). A huge zone's window is at least one unit
 * (2^ZCRECV_HUGE_ORDER), so its offset, and with thp_get_unmapped_area
 * its mapping, start on a unit boundary.
 *
 * zcrecv_zones_by_pgoff finds a zone by the first offset of its window, for
 * mmap. A zone enters it when created and leaves it, under its file's lock,
 * when freed; zones are freed after an RCU grace period, so mmap may look
 * at another file's zone under rcu_read_lock.
 */
#define ZCRECV_ORDERS		24	/* windows of 2^1 .. 2^23 pages */
#define ZCRECV_REGION_SHIFT	27
#define ZCRECV_OVERFLOW_SHIFT	40

static struct ida zcrecv_slots[ZCRECV_ORDERS];
static DEFINE_XARRAY(zcrecv_zones_by_pgoff);

void zcrecv_zones_init(void)
{
	int k;

	BUILD_BUG_ON((u64)ZCRECV_ORDERS << ZCRECV_REGION_SHIFT > 1ULL << 32);
	/* The largest zone (and its gap page) fits the largest window... */
	BUILD_BUG_ON(ZCRECV_ZONE_PAGES_CAP + 1 > BIT(ZCRECV_ORDERS - 1));
	/* ...and a unit fits one too, so huge windows stay unit aligned. */
	BUILD_BUG_ON(ZCRECV_HUGE_ORDER >= ZCRECV_ORDERS);
	for (k = 0; k < ZCRECV_ORDERS; k++)
		ida_init(&zcrecv_slots[k]);
}

void zcrecv_zones_exit(void)
{
	int k;

	for (k = 0; k < ZCRECV_ORDERS; k++)
		ida_destroy(&zcrecv_slots[k]);
}

/*
 * A ZCRECV_ZONE_PAGEVER zone's window also holds its version array, after
 * the zone's pages and one gap page: zcrecv_pv_window_pages() more.
 */
static unsigned int zcrecv_window_order(unsigned long pages, bool huge)
{
	unsigned int k = order_base_2(pages + 1);

	/* pages + 1 > one unit already; max() states the alignment rule */
	return huge ? max_t(unsigned int, k, ZCRECV_HUGE_ORDER) : k;
}

/* Slots of order @k: the low region, and on 64-bit the overflow area. */
static unsigned long zcrecv_window_slots(unsigned int k)
{
	unsigned long low = 1UL << (ZCRECV_REGION_SHIFT - k);

	if (IS_ENABLED(CONFIG_64BIT))
		return min(low + (1UL << (ZCRECV_OVERFLOW_SHIFT - k)),
			   (unsigned long)INT_MAX);
	return low;
}

static pgoff_t zcrecv_window_pgoff(unsigned int k, unsigned long slot)
{
	unsigned long low = 1UL << (ZCRECV_REGION_SHIFT - k);

	if (slot < low)
		return ((pgoff_t)k << ZCRECV_REGION_SHIFT) + (slot << k);
	slot -= low;
	return (1ULL << 32) + ((u64)k << ZCRECV_OVERFLOW_SHIFT) +
	       ((u64)slot << k);
}

static const struct vm_operations_struct zcrecv_vm_ops;
static const struct vm_operations_struct zcrecv_pv_vm_ops;

void zcrecv_window_free(unsigned int order, unsigned int slot)
{
	ida_free(&zcrecv_slots[order], slot);
}

int zcrecv_file_init(struct file *file)
{
	struct zcrecv_owner *owner, *o;
	struct zcrecv_file *zf;

	if (!current->mm)
		return -EPERM;
	zf = kzalloc(sizeof(*zf), GFP_KERNEL_ACCOUNT);
	owner = kzalloc(sizeof(*owner), GFP_KERNEL_ACCOUNT);
	if (!zf || !owner) {
		kfree(zf);
		kfree(owner);
		return -ENOMEM;
	}
	mutex_init(&zf->lock);
	INIT_LIST_HEAD(&zf->zones);
	zf->mm = current->mm;
	zf->mapping = file->f_mapping;

	mutex_lock(&zcrecv_owners_lock);
	list_for_each_entry(o, &zcrecv_owners, node) {
		if (o->mm == zf->mm) {
			kfree(owner);
			owner = o;
			break;
		}
	}
	if (!owner->nr_files && !owner->mm) {
		owner->mm = zf->mm;
		mmgrab(owner->mm);
		list_add(&owner->node, &zcrecv_owners);
	}
	owner->nr_files++;
	mutex_unlock(&zcrecv_owners_lock);

	zf->owner = owner;
	file->private_data = zf;
	return 0;
}

static int zcrecv_reserve(struct zcrecv_owner *owner, unsigned long pages)
{
	int ret = 0;

	mutex_lock(&zcrecv_owners_lock);
	if (owner->reserved + pages > READ_ONCE(zcrecv_max_process_pages) ||
	    owner->nr_zones + 1 > READ_ONCE(zcrecv_max_process_zones) ||
	    zcrecv_global_reserved + pages > READ_ONCE(zcrecv_max_global_pages)) {
		ret = -ENOSPC;
	} else {
		owner->reserved += pages;
		owner->nr_zones++;
		zcrecv_global_reserved += pages;
		zcrecv_count(ZCRECV_CNT_PAGES_RESERVED, pages);
	}
	mutex_unlock(&zcrecv_owners_lock);
	return ret;
}

/* Give back @pages pages of @zones zones at once. */
static void zcrecv_unreserve(struct zcrecv_owner *owner, unsigned long pages,
			     unsigned long zones)
{
	mutex_lock(&zcrecv_owners_lock);
	owner->reserved -= pages;
	owner->nr_zones -= zones;
	zcrecv_global_reserved -= pages;
	zcrecv_count(ZCRECV_CNT_PAGES_RESERVED, -(long)pages);
	mutex_unlock(&zcrecv_owners_lock);
}

static void zcrecv_zap_zone(struct zcrecv_zone *zone)
{
	unmap_mapping_range(zone->mapping, (loff_t)zone->pgoff << PAGE_SHIFT,
			    (loff_t)zone->nr_pages << PAGE_SHIFT, 1);
}

/* A 4 KiB zone's pages; returns the number freed (zcrecv_huge_free: units). */
static unsigned long zcrecv_free_pages(struct zcrecv_zone *zone)
{
	unsigned long i, freed = 0;

	for (i = 0; i < zone->nr_pages; i++) {
		if (zone->pages[i]) {
			__free_page(zone->pages[i]);
			freed++;
		}
		if (!(i & 4095))
			cond_resched();
	}
	return freed;
}

/*
 * Free a zone that is out of its file's list: its window is given back
 * (it leaves the index under the file's lock), its pages or units go back.
 * Returns the number of pages it had allocated; the caller gives back the
 * reservation, once for many zones at release.
 */
static unsigned long zcrecv_zone_destroy(struct zcrecv_zone *zone)
{
	struct zcrecv_file *zf = zone->zf;
	unsigned long freed;

	/*
	 * No VMA of the owner maps the zone any more; detached copies in
	 * children had their entries zapped when they were made. Zap the
	 * window once more so that no page-table entry can outlive the
	 * zone's pages, whatever order a kernel's fork uses. A zone that
	 * was never mapped has no entries to zap.
	 */
	if (zone->mapped)
		zcrecv_zap_zone(zone);
	mutex_lock(&zf->lock);
	xa_erase(&zcrecv_zones_by_pgoff, zone->pgoff);
	mutex_unlock(&zf->lock);
	/* A version array still mapped keeps the window until it goes. */
	if (zone->pv)
		zcrecv_pv_zone_gone(zone);
	else
		ida_free(&zcrecv_slots[zone->order], zone->slot);

	if (zone->huge)
		freed = zcrecv_huge_free(zone);
	else
		freed = zcrecv_free_pages(zone);
	pr_debug("zone %llu freed (%lu pages, %lu allocated)\n", zone->id,
		 zone->nr_pages, freed);
	mem_cgroup_put(zone->memcg);
	kvfree(zone->pages);
	kfree_rcu(zone, rcu);
	return freed;
}

static void zcrecv_zone_free(struct zcrecv_zone *zone)
{
	struct zcrecv_owner *owner = zone->zf->owner;
	unsigned long pages = zone->nr_pages;

	zcrecv_count(ZCRECV_CNT_PAGES_FREED, zcrecv_zone_destroy(zone));
	zcrecv_count(ZCRECV_CNT_ZONES_LIVE, -1);
	zcrecv_unreserve(owner, pages, 1);
}

void zcrecv_file_release(struct zcrecv_file *zf)
{
	struct zcrecv_owner *owner = zf->owner;
	unsigned long pages = 0, freed = 0, zones = 0;
	struct zcrecv_zone *zone, *tmp;

	/*
	 * Mapped zones hold the file, so what is left was never mapped (or
	 * its mmap failed after ->mmap succeeded, which on some kernels does
	 * not call ->close). One pass: the reservation and the counters are
	 * settled once for all of them.
	 */
	list_for_each_entry_safe(zone, tmp, &zf->zones, node) {
		list_del_init(&zone->node);
		pages += zone->nr_pages;
		zones++;
		freed += zcrecv_zone_destroy(zone);
	}
	if (zones) {
		zcrecv_count(ZCRECV_CNT_PAGES_FREED, freed);
		zcrecv_count(ZCRECV_CNT_ZONES_LIVE, -(long)zones);
		zcrecv_unreserve(owner, pages, zones);
	}

	mutex_lock(&zcrecv_owners_lock);
	if (!--owner->nr_files) {
		list_del(&owner->node);
		mmdrop(owner->mm);
		kfree(owner);
	}
	mutex_unlock(&zcrecv_owners_lock);
	kfree(zf);
}

long zcrecv_ioctl_zone_create(struct zcrecv_file *zf, void __user *uarg)
{
	struct zcrecv_zone_create req;
	struct zcrecv_zone *zone;
	unsigned long pgoff;
	unsigned long window;
	bool huge, pagever;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if ((req.flags & ~(ZCRECV_ZONE_HUGE | ZCRECV_ZONE_PAGEVER)) ||
	    req.reserved0 || req.reserved[0] || req.reserved[1])
		return -EINVAL;
	huge = req.flags & ZCRECV_ZONE_HUGE;
	pagever = req.flags & ZCRECV_ZONE_PAGEVER;
	if (!req.pages || (huge && !IS_ALIGNED(req.pages, ZCRECV_HUGE_NR)))
		return -EINVAL;
	if (req.pages > READ_ONCE(zcrecv_max_zone_pages))
		return -EOVERFLOW;
	/* A unit is mapped by one PMD: no per-page write fault to count. */
	if (huge && pagever)
		return -EOPNOTSUPP;
	if (current->mm != zf->mm)
		return -EPERM;

	ret = zcrecv_reserve(zf->owner, req.pages);
	if (ret)
		return ret;

	ret = -ENOMEM;
	zone = kzalloc(sizeof(*zone), GFP_KERNEL_ACCOUNT);
	if (!zone)
		goto err_unreserve;
	zone->nr_pages = req.pages;
	zone->huge = huge;
	/* Bounded by the parameter's cap; a failure is ENOMEM, not a splat. */
	if (huge)
		ret = zcrecv_huge_init(zone);
	else
		zone->pages = kvcalloc(req.pages, sizeof(*zone->pages),
				       GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!zone->pages)
		goto err_free_zone;
	if (pagever) {
		ret = zcrecv_pv_create(zone);
		if (ret)
			goto err_free_pages;
	}
	mutex_init(&zone->lock);
	INIT_LIST_HEAD(&zone->node);
	zone->zf = zf;
	zone->mapping = zf->mapping;
	zone->id = atomic64_inc_return(&zcrecv_next_zone_id) - 1;
	/* NULL without memory cgroups; a reference otherwise */
	zone->memcg = get_mem_cgroup_from_mm(zf->mm);

	/*
	 * The lowest free window of its order. mmap finds the zone only once
	 * it is in the file's list.
	 */
	window = req.pages;
	if (pagever)
		window += 1 + zcrecv_pv_window_pages(req.pages);
	zone->order = zcrecv_window_order(window, huge);
	ret = -ENOSPC;
	if (zone->order >= ZCRECV_ORDERS)
		goto err_free_pages;
	ret = ida_alloc_max(&zcrecv_slots[zone->order],
			    zcrecv_window_slots(zone->order) - 1, GFP_KERNEL);
	if (ret < 0)
		goto err_free_pages;
	zone->slot = ret;
	pgoff = zcrecv_window_pgoff(zone->order, zone->slot);
	zone->pgoff = pgoff;
	ret = xa_insert(&zcrecv_zones_by_pgoff, pgoff, zone, GFP_KERNEL);
	if (ret)
		goto err_free_slot;
	if (zone->pv) {
		ret = zcrecv_pv_publish(zone);
		if (ret)
			goto err_erase;
	}

	req.out_offset = (u64)pgoff << PAGE_SHIFT;
	req.out_zone_id = zone->id;
	if (copy_to_user(uarg, &req, sizeof(req))) {
		ret = -EFAULT;
		goto err_erase;
	}

	mutex_lock(&zf->lock);
	list_add_tail(&zone->node, &zf->zones);
	mutex_unlock(&zf->lock);
	zcrecv_count(ZCRECV_CNT_ZONES_LIVE, 1);
	zcrecv_count(ZCRECV_CNT_ZONES_CREATED, 1);
	pr_debug("zone %llu created: %llu pages at offset %#llx\n", zone->id,
		 req.pages, req.out_offset);
	return 0;

err_erase:
	mutex_lock(&zf->lock);
	xa_erase(&zcrecv_zones_by_pgoff, pgoff);
	mutex_unlock(&zf->lock);
	if (zone->pv)
		zcrecv_pv_unpublish(zone);
err_free_slot:
	ida_free(&zcrecv_slots[zone->order], zone->slot);
err_free_pages:
	mem_cgroup_put(zone->memcg);
	if (zone->pv)
		zcrecv_pv_discard(zone);
	kvfree(zone->pages);
err_free_zone:
	kfree_rcu(zone, rcu);
err_unreserve:
	zcrecv_unreserve(zf->owner, req.pages, 1);
	return ret;
}

static void zcrecv_vm_open(struct vm_area_struct *vma)
{
	struct zcrecv_zone *zone = vma->vm_private_data;

	if (!zone)
		return;		/* a split of a detached copy, see below */

	/*
	 * A fork after madvise(MADV_DOFORK) cleared VM_DONTCOPY: the child's
	 * copy must not share the zone. Detach it: its faults get SIGBUS and
	 * it holds no zone reference. Its page tables must not hold the
	 * zone's pages either:
	 * - VM_WIPEONFORK, set at mmap and inherited by the copy before
	 *   ->open, makes fork skip copy_page_range for it: nothing to undo,
	 *   and the owner's entries stay (its zone memory stays in its RSS).
	 * - If user space cleared that with MADV_KEEPONFORK, zap the zone's
	 *   window. On kernels that call ->open before copy_page_range and
	 *   before putting the copy in the file's i_mmap tree (6.12), this
	 *   zaps the owner's entries (its mmap lock is held for write, so
	 *   none come back), and copy_page_range then finds nothing to copy;
	 *   on kernels that copy first, the copy is in i_mmap already and
	 *   loses the entries it just got. The owner's refault.
	 */
	if (vma->vm_mm != zone->zf->mm) {
		vma->vm_private_data = NULL;
		if (!(vma->vm_flags & VM_WIPEONFORK))
			zcrecv_zap_zone(zone);
		return;
	}

	/* A split (mprotect, partial munmap) or an mremap move. */
	mutex_lock(&zone->zf->lock);
	zone->nr_vmas++;
	zcrecv_pv_changed_mapping(zone);
	mutex_unlock(&zone->zf->lock);
}

static void zcrecv_vm_close(struct vm_area_struct *vma)
{
	struct zcrecv_zone *zone = vma->vm_private_data;
	struct zcrecv_file *zf;
	bool last;

	if (!zone)
		return;
	zf = zone->zf;

	mutex_lock(&zf->lock);
	last = !--zone->nr_vmas;
	if (last)
		list_del_init(&zone->node);
	zcrecv_pv_changed_mapping(zone);
	mutex_unlock(&zf->lock);
	if (last)
		zcrecv_zone_free(zone);
}

static vm_fault_t zcrecv_vm_fault(struct vm_fault *vmf)
{
	struct zcrecv_zone *zone = vmf->vma->vm_private_data;
	struct page *page;
	unsigned long idx;
	vm_fault_t ret;
	int err;

	if (!zone)
		return VM_FAULT_SIGBUS;		/* detached copy in a child */
	idx = vmf->pgoff - zone->pgoff;
	if (vmf->pgoff < zone->pgoff || idx >= zone->nr_pages)
		return VM_FAULT_SIGBUS;
	if (zone->huge)
		return zcrecv_huge_fault(vmf, zone, idx);

	mutex_lock(&zone->lock);
	page = zone->pages[idx];
	if (!page) {
		struct mem_cgroup *old;

		/*
		 * Charged to the zone creator's memory cgroup, not to whoever
		 * touches the page first (get_user_pages from another
		 * process, e.g. process_vm_readv, faults here too).
		 */
		old = set_active_memcg(zone->memcg);
		page = alloc_page(GFP_HIGHUSER | __GFP_ZERO | __GFP_ACCOUNT);
		set_active_memcg(old);
		if (!page) {
			mutex_unlock(&zone->lock);
			return VM_FAULT_OOM;
		}
		zone->pages[idx] = page;
		zcrecv_count(ZCRECV_CNT_PAGES_ALLOCATED, 1);
	}
	err = vm_insert_page(vmf->vma, vmf->address & PAGE_MASK, page);
	mutex_unlock(&zone->lock);

	switch (err) {
	case 0:
	case -EBUSY:	/* another thread mapped it first */
		ret = VM_FAULT_NOPAGE;
		break;
	case -ENOMEM:
		ret = VM_FAULT_OOM;
		break;
	default:
		ret = VM_FAULT_SIGBUS;
		break;
	}
	return ret;
}

static const struct vm_operations_struct zcrecv_vm_ops = {
	.open	= zcrecv_vm_open,
	.close	= zcrecv_vm_close,
	.fault	= zcrecv_vm_fault,
};

/*
 * ZCRECV_ZONE_PAGEVER zones: with ->page_mkwrite the core maps the zone's
 * pages read-only (the mapping "wants write notification"), and the first
 * write to each page after it was (re)inserted or armed comes here
 * (zcrecv_pagever.c). Other zones keep writable entries: no such fault.
 */
static const struct vm_operations_struct zcrecv_pv_vm_ops = {
	.open		= zcrecv_vm_open,
	.close		= zcrecv_vm_close,
	.fault		= zcrecv_vm_fault,
	.page_mkwrite	= zcrecv_pv_page_mkwrite,
};

int zcrecv_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct zcrecv_file *zf = file->private_data;
	unsigned long pages = vma_pages(vma);
	struct zcrecv_zone *zone, *found = NULL;
	int ret = 0;

	if (current->mm != zf->mm)
		return -EPERM;
	/* A private mapping would copy pages on write: nothing to exchange. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;

	/*
	 * Only this file's zones are taken out of the tree under zf->lock;
	 * another file's zone is looked at under RCU only (it is freed after
	 * a grace period).
	 */
	mutex_lock(&zf->lock);
	rcu_read_lock();
	zone = xa_load(&zcrecv_zones_by_pgoff, vma->vm_pgoff);
	if (zone && zone->zf == zf && zone->pgoff == vma->vm_pgoff &&
	    !list_empty(&zone->node))
		found = zone;
	rcu_read_unlock();
	if (!found) {
		mutex_unlock(&zf->lock);
		/* Or the version array of one of this file's zones. */
		return zcrecv_pv_mmap(zf, vma);
	}
	if (found->nr_pages != pages)
		ret = -EINVAL;
	else if (found->mapped)
		ret = -EBUSY;
	if (ret) {
		mutex_unlock(&zf->lock);
		return ret;
	}
	found->mapped = true;
	found->nr_vmas = 1;
	zcrecv_pv_changed_mapping(found);
	mutex_unlock(&zf->lock);

	/*
	 * MIXEDMAP (4 KiB zones): struct pages inserted with vm_insert_page,
	 * so GUP works (RDMA, O_DIRECT) and such pins can be detected; a huge
	 * zone's units are mapped by the core from its fault handler instead
	 * (zcrecv_huge.c), which MIXEDMAP would keep from using PMDs.
	 * DONTCOPY: fork does not share the zone. WIPEONFORK: if MADV_DOFORK
	 * makes fork copy the VMA anyway, no page-table entry is copied (see
	 * zcrecv_vm_open). DONTEXPAND: mremap cannot grow it (and, as a
	 * VM_SPECIAL flag, keeps mlock and khugepaged away).
	 */
	zcrecv_vm_flags_set(vma, (found->huge ? 0 : VM_MIXEDMAP) |
			    VM_DONTCOPY | VM_WIPEONFORK | VM_DONTEXPAND);
	vma->vm_ops = found->pv ? &zcrecv_pv_vm_ops : &zcrecv_vm_ops;
	vma->vm_private_data = found;
	pr_debug("zone %llu mapped at %#lx\n", found->id, vma->vm_start);
	return 0;
}

struct zcrecv_zone *zcrecv_vma_zone(struct zcrecv_file *zf,
				    struct vm_area_struct *vma)
{
	struct zcrecv_zone *zone;

	if (vma->vm_ops != &zcrecv_vm_ops && vma->vm_ops != &zcrecv_pv_vm_ops)
		return NULL;
	zone = vma->vm_private_data;
	return zone && zone->zf == zf ? zone : NULL;
}
