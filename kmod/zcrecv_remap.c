// SPDX-License-Identifier: GPL-2.0
/*
 * zcrecv - ZCRECV_IOC_REMAP: exchange page frames between zone ranges.
 *
 * For each entry: resolve both user ranges to (zone, first page) under the
 * mmap read lock, lock the zone(s), refuse pinned pages, unmap both ranges
 * from every page table (unmap_mapping_range on the zones' unique offset
 * windows), swap the page-array entries, and map the new pages at dst and
 * src again (vm_insert_pages) so the next access does not fault and the
 * pages stay in the process's RSS. The mmap lock is taken per entry so a
 * concurrent munmap can proceed between entries; the entries after it then
 * fail cleanly.
 *
 * Huge zones (zcrecv_huge.c) share the resolution of the ranges and the
 * helpers below, then exchange whole 2 MiB units and map both sides again
 * by faulting them in (one PMD per unit).
 *
 * Why exchange and not move: the source slot needs pages again for the next
 * message; taking dst's old pages means nothing is allocated, zeroed or freed
 * on the receive path.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/uaccess.h>

#include "zcrecv_internal.h"

/*
 * A range may cover several VMAs of one zone (mprotect or a flag-changing
 * madvise split the mapping; mlock does not, a zone mapping is special) as
 * long as they follow each other in both address and file offset, i.e. the
 * range is one run of the zone's pages.
 */
int zcrecv_resolve(struct zcrecv_file *zf, unsigned long addr,
		   unsigned long len, struct zcrecv_range *r)
{
	struct vm_area_struct *vma = vma_lookup(zf->mm, addr);
	unsigned long end = addr + len;

	if (!vma)
		return -EFAULT;
	r->zone = zcrecv_vma_zone(zf, vma);
	if (!r->zone)
		return -EINVAL;
	r->first = ((addr - vma->vm_start) >> PAGE_SHIFT) + vma->vm_pgoff -
		   r->zone->pgoff;
	while (end > vma->vm_end) {
		struct vm_area_struct *next = vma_lookup(zf->mm, vma->vm_end);

		if (!next || zcrecv_vma_zone(zf, next) != r->zone ||
		    next->vm_pgoff != vma->vm_pgoff + vma_pages(vma))
			return -EINVAL;	/* leaves the zone's run of pages */
		vma = next;
	}
	return 0;
}

/*
 * Pages pinned by pin_user_pages are flagged; any other extra reference
 * (get_user_pages, a vmsplice'd pipe buffer) shows in the refcount once
 * every mapping is gone: our array holds exactly one reference. A huge
 * zone's entry is a compound page: the same tests apply to the whole unit.
 */
bool zcrecv_range_busy(struct zcrecv_range *r, unsigned long n, bool unmapped)
{
	unsigned long i;

	for (i = 0; i < n; i++) {
		struct page *page = r->zone->pages[r->first + i];

		if (!page)
			continue;
		if (folio_maybe_dma_pinned(page_folio(page)))
			return true;
		if (unmapped && page_count(page) != 1)
			return true;
	}
	return false;
}

void zcrecv_unmap(struct zcrecv_range *r, unsigned long n)
{
	unmap_mapping_range(r->zone->mapping,
			    (loff_t)(r->zone->pgoff + r->first) << PAGE_SHIFT,
			    (loff_t)n << PAGE_SHIFT, 1);
}

/* Map the present pages of one VMA's part of dst; best effort. */
static void zcrecv_prefault_vma(struct vm_area_struct *vma, unsigned long addr,
				struct page **pages, unsigned long n)
{
	unsigned long i = 0;

	/* Inaccessible (PROT_NONE) parts are left to fault, never mapped. */
	if (!(vma->vm_flags & (VM_READ | VM_WRITE)))
		return;
	while (i < n) {
		unsigned long run = 0, num;

		while (i < n && !pages[i])
			i++;
		while (i + run < n && pages[i + run])
			run++;
		if (!run)
			break;
		num = run;
		if (vm_insert_pages(vma, addr + (i << PAGE_SHIFT), pages + i,
				    &num))
			break;
		i += run;
	}
}

/* Map n pages at addr at once, VMA by VMA: no fault on the next access. */
static void zcrecv_prefault_pages(struct zcrecv_file *zf,
				  unsigned long addr, struct page **pages,
				  unsigned long n)
{
	while (n) {
		struct vm_area_struct *vma = vma_lookup(zf->mm, addr);
		unsigned long seg;

		if (!vma)
			break;
		seg = min(n, (vma->vm_end - addr) >> PAGE_SHIFT);
		zcrecv_prefault_vma(vma, addr, pages, seg);
		addr += seg << PAGE_SHIFT;
		pages += seg;
		n -= seg;
	}
}

void zcrecv_lock_two(struct zcrecv_zone *a, struct zcrecv_zone *b)
{
	if (a == b) {
		mutex_lock(&a->lock);
		return;
	}
	if (a->id > b->id)
		swap(a, b);
	mutex_lock(&a->lock);
	mutex_lock_nested(&b->lock, SINGLE_DEPTH_NESTING);
}

void zcrecv_unlock_two(struct zcrecv_zone *a, struct zcrecv_zone *b)
{
	if (a != b)
		mutex_unlock(&b->lock);
	mutex_unlock(&a->lock);
}

static int zcrecv_remap_one(struct zcrecv_file *zf,
			    const struct zcrecv_remap_entry *e, bool prefault,
			    unsigned long *pages_done)
{
	struct zcrecv_range src, dst;
	unsigned long n, i, end;
	int ret;

	if (e->flags || e->reserved0)
		return -EINVAL;
	if (!e->len || !PAGE_ALIGNED(e->src) || !PAGE_ALIGNED(e->dst) ||
	    !PAGE_ALIGNED(e->len))
		return -EINVAL;
	if (check_add_overflow(e->src, e->len, &end) ||
	    check_add_overflow(e->dst, e->len, &end))
		return -EOVERFLOW;
	if (e->src < e->dst + e->len && e->dst < e->src + e->len)
		return -EINVAL;		/* overlapping ranges */
	n = e->len >> PAGE_SHIFT;

	if (mmap_read_lock_killable(zf->mm))
		return -EINTR;
	ret = zcrecv_resolve(zf, e->src, e->len, &src);
	if (!ret)
		ret = zcrecv_resolve(zf, e->dst, e->len, &dst);
	if (ret)
		goto out_mm;
	if (src.zone->huge || dst.zone->huge) {
		ret = zcrecv_huge_remap(zf, e, &src, &dst, prefault);
		if (!ret)
			*pages_done += n;
		goto out_mm;
	}

	zcrecv_lock_two(src.zone, dst.zone);
	ret = -EBUSY;
	if (zcrecv_range_busy(&src, n, false) ||
	    zcrecv_range_busy(&dst, n, false))
		goto out_unlock;
	zcrecv_unmap(&src, n);
	zcrecv_unmap(&dst, n);
	if (zcrecv_range_busy(&src, n, true) ||
	    zcrecv_range_busy(&dst, n, true))
		goto out_unlock;	/* unmapped pages simply fault back */

	for (i = 0; i < n; i++) {
		swap(src.zone->pages[src.first + i],
		     dst.zone->pages[dst.first + i]);
		if (!(i & 1023))
			cond_resched();
	}
	/* The pages of both ranges changed without a write fault. */
	zcrecv_pv_bump(src.zone, src.first, n);
	zcrecv_pv_bump(dst.zone, dst.first, n);
	/*
	 * Both sides: dst so that its first access does not fault, src so
	 * that the pages it got stay mapped, i.e. in the process's RSS where
	 * the OOM killer sees them (an unmapped zone page counts nowhere).
	 */
	if (prefault) {
		zcrecv_prefault_pages(zf, e->dst, dst.zone->pages + dst.first,
				      n);
		zcrecv_prefault_pages(zf, e->src, src.zone->pages + src.first,
				      n);
	}
	*pages_done += n;
	ret = 0;
	pr_debug("exchanged %lu pages: zone %llu+%lu <-> zone %llu+%lu\n", n,
		 src.zone->id, src.first, dst.zone->id, dst.first);
out_unlock:
	zcrecv_unlock_two(src.zone, dst.zone);
out_mm:
	mmap_read_unlock(zf->mm);
	return ret;
}

long zcrecv_ioctl_remap(struct zcrecv_file *zf, void __user *uarg)
{
	struct zcrecv_remap_entry __user *uent;
	struct zcrecv_remap req;
	unsigned long pages = 0;
	bool prefault;
	u32 i;
	int ret = 0;

	if (copy_from_user(&req, uarg, sizeof(req)))
		return -EFAULT;
	if ((req.flags & ~ZCRECV_REMAP_NO_PREFAULT) || req.reserved[0] ||
	    req.reserved[1])
		return -EINVAL;
	if (!req.count || req.count > ZCRECV_MAX_BATCH)
		return -EINVAL;
	if (current->mm != zf->mm)
		return -EPERM;
	prefault = !(req.flags & ZCRECV_REMAP_NO_PREFAULT);
	uent = u64_to_user_ptr(req.entries);

	for (i = 0; i < req.count; i++) {
		struct zcrecv_remap_entry e;

		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		if (copy_from_user(&e, &uent[i], sizeof(e))) {
			ret = -EFAULT;
			break;
		}
		ret = zcrecv_remap_one(zf, &e, prefault, &pages);
		if (ret)
			break;
	}

	zcrecv_count(ZCRECV_CNT_PAGES_EXCHANGED, pages);
	if (ret == -EBUSY)
		zcrecv_count(ZCRECV_CNT_REMAP_BUSY, 1);
	req.out_done = i;
	req.out_error = ret;
	req.out_pages = pages;
	if (copy_to_user(uarg, &req, sizeof(req)))
		return -EFAULT;
	return ret;
}
