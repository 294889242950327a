// SPDX-License-Identifier: GPL-2.0
/*
 * zcrecv - zones: arrays of driver-owned pages mapped into one process.
 *
 * Lifetimes. Each open file has a struct zcrecv_file bound to the mm that
 * opened it. A zone belongs to one file; ZCRECV_IOC_ZONE_CREATE gives it a
 * unique window of file offsets (never reused, so unmap_mapping_range on one
 * zone cannot touch another zone's mapping, even of another process: every
 * open of the misc device shares one inode and so one address_space). A
 * mapped zone's VMAs hold the file, so a zone never outlives its file. The
 * zone is freed when its last VMA closes (munmap, exit) or, if it was never
 * mapped, when the file is released. A child that inherits a mapping (only
 * possible after madvise(MADV_DOFORK)) gets a detached copy: no zone, no
 * pages, SIGBUS on access.
 *
 * Locking. zf->lock protects zf->zones and every zone's nr_vmas/mapped.
 * zone->lock protects zone->pages[] and is held while pages are inserted into
 * page tables, so a fault and an exchange never see a half-swapped array.
 * Order: mmap_lock (or the per-VMA lock) -> zone->lock; two zones are locked
 * in ascending id order. zcrecv_owners_lock protects the per-mm accounting.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "zcrecv_internal.h"

/* Per-process (per-mm) accounting of reserved zone pages. */
struct zcrecv_owner {
	struct list_head node;
	struct mm_struct *mm;		/* mmgrab()ed: the pointer stays unique */
	unsigned int nr_files;
	unsigned long reserved;		/* pages of live zones */
};

static LIST_HEAD(zcrecv_owners);
static DEFINE_MUTEX(zcrecv_owners_lock);
static unsigned long zcrecv_global_reserved;	/* under zcrecv_owners_lock */
static atomic64_t zcrecv_next_pgoff = ATOMIC64_INIT(1);
static atomic64_t zcrecv_next_zone_id = ATOMIC64_INIT(1);

static const struct vm_operations_struct zcrecv_vm_ops;

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
	    zcrecv_global_reserved + pages > READ_ONCE(zcrecv_max_global_pages)) {
		ret = -ENOSPC;
	} else {
		owner->reserved += pages;
		zcrecv_global_reserved += pages;
		zcrecv_count(ZCRECV_CNT_PAGES_RESERVED, pages);
	}
	mutex_unlock(&zcrecv_owners_lock);
	return ret;
}

static void zcrecv_unreserve(struct zcrecv_owner *owner, unsigned long pages)
{
	mutex_lock(&zcrecv_owners_lock);
	owner->reserved -= pages;
	zcrecv_global_reserved -= pages;
	zcrecv_count(ZCRECV_CNT_PAGES_RESERVED, -(long)pages);
	mutex_unlock(&zcrecv_owners_lock);
}

static void zcrecv_zap_zone(struct zcrecv_zone *zone)
{
	unmap_mapping_range(zone->mapping, (loff_t)zone->pgoff << PAGE_SHIFT,
			    (loff_t)zone->nr_pages << PAGE_SHIFT, 1);
}

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

static void zcrecv_zone_free(struct zcrecv_zone *zone)
{
	unsigned long freed;

	/*
	 * No VMA of the owner maps the zone any more; detached copies in
	 * children had their entries zapped when they were made. Zap the
	 * window once more so that no page-table entry can outlive the
	 * zone's pages, whatever order a kernel's fork uses.
	 */
	zcrecv_zap_zone(zone);

	if (zone->huge)
		freed = zcrecv_huge_free(zone);
	else
		freed = zcrecv_free_pages(zone);
	zcrecv_count(ZCRECV_CNT_PAGES_FREED, freed);
	zcrecv_count(ZCRECV_CNT_ZONES_LIVE, -1);
	zcrecv_unreserve(zone->zf->owner, zone->nr_pages);
	pr_debug("zone %llu freed (%lu pages, %lu allocated)\n", zone->id,
		 zone->nr_pages, freed);
	kvfree(zone->pages);
	kfree(zone->scratch);
	kfree(zone);
}

void zcrecv_file_release(struct zcrecv_file *zf)
{
	struct zcrecv_owner *owner = zf->owner;
	struct zcrecv_zone *zone, *tmp;

	/*
	 * Mapped zones hold the file, so what is left was never mapped (or
	 * its mmap failed after ->mmap succeeded, which on some kernels does
	 * not call ->close).
	 */
	list_for_each_entry_safe(zone, tmp, &zf->zones, node) {
		list_del(&zone->node);
		zcrecv_zone_free(zone);
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
	bool huge;
	s64 pgoff;
	int ret;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if ((req.flags & ~ZCRECV_ZONE_HUGE) || req.reserved0 ||
	    req.reserved[0] || req.reserved[1])
		return -EINVAL;
	huge = req.flags & ZCRECV_ZONE_HUGE;
	if (!req.pages || (huge && !IS_ALIGNED(req.pages, ZCRECV_HUGE_NR)))
		return -EINVAL;
	if (req.pages > READ_ONCE(zcrecv_max_zone_pages))
		return -EOVERFLOW;
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

	/*
	 * A window of offsets no other zone will ever use; one page of gap
	 * keeps neighbouring windows apart. The offset must fit in a signed
	 * loff_t once shifted. A huge zone's window starts on a unit boundary
	 * so that thp_get_unmapped_area aligns its mapping.
	 */
	pgoff = atomic64_fetch_add(req.pages + 1 + (huge ? ZCRECV_HUGE_NR : 0),
				   &zcrecv_next_pgoff);
	if (huge)
		pgoff = round_up(pgoff, ZCRECV_HUGE_NR);
	ret = -ENOSPC;
	if (pgoff + req.pages + 1 > (S64_MAX >> PAGE_SHIFT))
		goto err_free_pages;

	mutex_init(&zone->lock);
	zone->zf = zf;
	zone->mapping = zf->mapping;
	zone->pgoff = pgoff;
	zone->id = atomic64_inc_return(&zcrecv_next_zone_id) - 1;

	req.out_offset = (u64)pgoff << PAGE_SHIFT;
	req.out_zone_id = zone->id;
	ret = -EFAULT;
	if (copy_to_user(uarg, &req, sizeof(req)))
		goto err_free_pages;

	mutex_lock(&zf->lock);
	list_add_tail(&zone->node, &zf->zones);
	mutex_unlock(&zf->lock);
	zcrecv_count(ZCRECV_CNT_ZONES_LIVE, 1);
	zcrecv_count(ZCRECV_CNT_ZONES_CREATED, 1);
	pr_debug("zone %llu created: %llu pages at offset %#llx\n", zone->id,
		 req.pages, req.out_offset);
	return 0;

err_free_pages:
	kvfree(zone->pages);
err_free_zone:
	kfree(zone->scratch);
	kfree(zone);
err_unreserve:
	zcrecv_unreserve(zf->owner, req.pages);
	return ret;
}

static void zcrecv_vm_open(struct vm_area_struct *vma)
{
	struct zcrecv_zone *zone = vma->vm_private_data;

	if (!zone)
		return;		/* a split of a detached copy, see below */

	/*
	 * A fork after madvise(MADV_DOFORK) cleared VM_DONTCOPY: the child's
	 * copy must not share the zone. Detach it (its faults get SIGBUS, it
	 * holds no zone reference) and zap the page-table entries fork just
	 * copied; the owner's own entries simply fault back in.
	 */
	if (vma->vm_mm != zone->zf->mm) {
		vma->vm_private_data = NULL;
		zcrecv_zap_zone(zone);
		return;
	}

	/* A split (mprotect, partial munmap) or an mremap move. */
	mutex_lock(&zone->zf->lock);
	zone->nr_vmas++;
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
		list_del(&zone->node);
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
		page = alloc_page(GFP_HIGHUSER | __GFP_ZERO | __GFP_ACCOUNT);
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

	mutex_lock(&zf->lock);
	list_for_each_entry(zone, &zf->zones, node) {
		if (zone->pgoff == vma->vm_pgoff) {
			found = zone;
			break;
		}
	}
	if (!found || found->nr_pages != pages)
		ret = -EINVAL;
	else if (found->mapped)
		ret = -EBUSY;
	if (ret) {
		mutex_unlock(&zf->lock);
		return ret;
	}
	found->mapped = true;
	found->nr_vmas = 1;
	mutex_unlock(&zf->lock);

	/*
	 * MIXEDMAP: struct pages inserted with vm_insert_page, so GUP works
	 * (RDMA, O_DIRECT) and such pins can be detected. DONTCOPY: fork does
	 * not share the zone. DONTEXPAND: mremap cannot grow it.
	 */
	zcrecv_vm_flags_set(vma, VM_MIXEDMAP | VM_DONTCOPY | VM_DONTEXPAND);
	vma->vm_ops = &zcrecv_vm_ops;
	vma->vm_private_data = found;
	pr_debug("zone %llu mapped at %#lx\n", found->id, vma->vm_start);
	return 0;
}

struct zcrecv_zone *zcrecv_vma_zone(struct zcrecv_file *zf,
				    struct vm_area_struct *vma)
{
	struct zcrecv_zone *zone;

	if (vma->vm_ops != &zcrecv_vm_ops)
		return NULL;
	zone = vma->vm_private_data;
	return zone && zone->zf == zf ? zone : NULL;
}
