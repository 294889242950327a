// SPDX-License-Identifier: GPL-2.0
/*
 * zcrecv - huge zones (ZCRECV_ZONE_HUGE): zones made of 2 MiB units.
 *
 * A unit is one compound page of order ZCRECV_HUGE_ORDER, allocated zeroed
 * on first touch of any of its pages. zone->pages[] holds one entry per
 * unit (the head page), so an exchange swaps one entry per 2 MiB.
 *
 * Page tables. The unit is mapped by 512 PTEs inserted in one
 * vm_insert_pages() call, both at first touch and after an exchange; not by
 * one PMD. The exported PMD inserter cannot be used on refcounted memory
 * that must stay pinnable: on 6.1 vmf_insert_pfn_pmd_prot() accepts a
 * VM_MIXEDMAP mapping only for a pfn marked PFN_DEV|PFN_MAP, which makes a
 * devmap PMD over ordinary RAM, and on 6.12 vmf_insert_pfn_pmd() makes a
 * special PMD. Either way the PMD holds no page reference and no mapcount,
 * GUP refuses it (get_dev_pagemap() fails for RAM; vm_normal_page_pmd()
 * returns NULL for special PMDs), so io_uring, RDMA and O_DIRECT would fail
 * with EFAULT, and it can only be inserted from inside a fault, so dst
 * could not be mapped eagerly after an exchange. PTE mappings of a compound
 * page are ordinary file rmap: each PTE holds a reference and a mapcount on
 * its subpage, zap and fork handle them like the 4 KiB zones' pages, GUP
 * and pin_user_pages work, and a pin shows on the whole unit
 * (folio_maybe_dma_pinned), so a pinned unit is refused with EBUSY.
 *
 * Allocation. GFP_HIGHUSER | __GFP_COMP | __GFP_ZERO | __GFP_ACCOUNT, plus
 * __GFP_NORETRY | __GFP_NOWARN: when memory is too fragmented for a 2 MiB
 * block (or the memory cgroup is full) the allocation fails quietly after
 * light reclaim and compaction, the faulting access gets SIGBUS (not the
 * OOM killer: memory may be plentiful, just not contiguous) and the counter
 * huge_alloc_failed counts it. The unit is charged to the memory cgroup
 * of the zone's creator (zone->memcg), whoever touches it first.
 *
 * Everything else is the 4 KiB zones' code: the offset window (unit
 * aligned, see zcrecv_zone.c), VM_WIPEONFORK and the detach of a forked
 * copy, teardown, and the rule that an exchange maps both ranges again.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/gfp.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "zcrecv_internal.h"

#define ZCRECV_HUGE_GFP	(GFP_HIGHUSER | __GFP_COMP | __GFP_ZERO | \
			 __GFP_ACCOUNT | __GFP_NORETRY | __GFP_NOWARN)

/* The unit array and the per-zone scratch list of subpages. */
int zcrecv_huge_init(struct zcrecv_zone *zone)
{
	zone->scratch = kmalloc_array(ZCRECV_HUGE_NR, sizeof(*zone->scratch),
				      GFP_KERNEL_ACCOUNT);
	if (!zone->scratch)
		return -ENOMEM;
	zone->pages = kvcalloc(zone->nr_pages >> ZCRECV_HUGE_ORDER,
			       sizeof(*zone->pages), GFP_KERNEL_ACCOUNT);
	return zone->pages ? 0 : -ENOMEM;
}

/* Free every allocated unit; returns the number of pages freed. */
unsigned long zcrecv_huge_free(struct zcrecv_zone *zone)
{
	unsigned long u, freed = 0;

	for (u = 0; u < zone->nr_pages >> ZCRECV_HUGE_ORDER; u++) {
		if (zone->pages[u]) {
			__free_pages(zone->pages[u], ZCRECV_HUGE_ORDER);
			freed += ZCRECV_HUGE_NR;
		}
		cond_resched();
	}
	return freed;
}

/* Fill zone->scratch with n subpages of @head from @from on. */
static struct page **zcrecv_huge_subpages(struct zcrecv_zone *zone,
					  struct page *head, unsigned long from,
					  unsigned long n)
{
	struct folio *folio = page_folio(head);
	unsigned long i;

	for (i = 0; i < n; i++)
		zone->scratch[i] = folio_page(folio, from + i);
	return zone->scratch;
}

/*
 * First touch of a unit, or a touch after its PTEs were zapped: allocate it
 * if needed and map the whole part of it that lies in this VMA at once.
 */
vm_fault_t zcrecv_huge_fault(struct vm_fault *vmf, struct zcrecv_zone *zone,
			     unsigned long idx)
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long u = idx >> ZCRECV_HUGE_ORDER;
	pgoff_t unit = zone->pgoff + (u << ZCRECV_HUGE_ORDER);
	pgoff_t first = max(unit, vma->vm_pgoff);
	pgoff_t end = min(unit + ZCRECV_HUGE_NR,
			  vma->vm_pgoff + vma_pages(vma));
	unsigned long num = end - first;
	struct page *head, **pages;
	int err;

	mutex_lock(&zone->lock);
	head = zone->pages[u];
	if (!head) {
		struct mem_cgroup *old;

		/*
		 * Charged to the zone creator's memory cgroup, as for 4 KiB
		 * zones, not to whoever touches the unit first.
		 */
		old = set_active_memcg(zone->memcg);
		head = alloc_pages(ZCRECV_HUGE_GFP, ZCRECV_HUGE_ORDER);
		set_active_memcg(old);
		if (!head) {
			mutex_unlock(&zone->lock);
			zcrecv_count(ZCRECV_CNT_HUGE_ALLOC_FAILED, 1);
			pr_debug("zone %llu: no 2 MiB block for unit %lu\n",
				 zone->id, u);
			return VM_FAULT_SIGBUS;
		}
		zone->pages[u] = head;
		zcrecv_count(ZCRECV_CNT_PAGES_ALLOCATED, ZCRECV_HUGE_NR);
	}
	pages = zcrecv_huge_subpages(zone, head, first - unit, num);
	err = vm_insert_pages(vma, vma->vm_start +
			      ((first - vma->vm_pgoff) << PAGE_SHIFT),
			      pages, &num);
	if (err == -EBUSY)	/* partly mapped already: map just this page */
		err = vm_insert_page(vma, vmf->address & PAGE_MASK,
				     folio_page(page_folio(head),
						vmf->pgoff - unit));
	mutex_unlock(&zone->lock);

	switch (err) {
	case 0:
	case -EBUSY:	/* another thread mapped it first */
		return VM_FAULT_NOPAGE;
	case -ENOMEM:
		return VM_FAULT_OOM;
	default:
		return VM_FAULT_SIGBUS;
	}
}

/* Map the allocated units of @r (unit indexes) at @addr, unit by unit. */
static void zcrecv_huge_prefault(struct zcrecv_file *zf,
				 struct zcrecv_range *r, unsigned long addr,
				 unsigned long nu)
{
	unsigned long u;

	for (u = 0; u < nu; u++, addr += ZCRECV_HUGE_NR << PAGE_SHIFT) {
		struct page *head = r->zone->pages[r->first + u];

		if (head)
			zcrecv_prefault_pages(zf, addr,
					      zcrecv_huge_subpages(r->zone,
								   head, 0,
								   ZCRECV_HUGE_NR),
					      ZCRECV_HUGE_NR);
		cond_resched();
	}
}

/*
 * Exchange whole units between two huge zones; the caller holds the mmap
 * read lock and has resolved both ranges (first = page index in the zone).
 */
int zcrecv_huge_remap(struct zcrecv_file *zf,
		      const struct zcrecv_remap_entry *e,
		      struct zcrecv_range *src, struct zcrecv_range *dst,
		      bool prefault)
{
	unsigned long n = e->len >> PAGE_SHIFT, nu, u;
	struct zcrecv_range su, du;
	int ret;

	if (!src->zone->huge || !dst->zone->huge)
		return -EINVAL;		/* a 4 KiB zone against a huge one */
	if (!IS_ALIGNED(src->first | dst->first | n, ZCRECV_HUGE_NR))
		return -EINVAL;		/* part of a unit */
	nu = n >> ZCRECV_HUGE_ORDER;
	su = (struct zcrecv_range){ src->zone, src->first >> ZCRECV_HUGE_ORDER };
	du = (struct zcrecv_range){ dst->zone, dst->first >> ZCRECV_HUGE_ORDER };

	zcrecv_lock_two(src->zone, dst->zone);
	ret = -EBUSY;
	if (zcrecv_range_busy(&su, nu, false) ||
	    zcrecv_range_busy(&du, nu, false))
		goto out_unlock;
	zcrecv_unmap(src, n);
	zcrecv_unmap(dst, n);
	if (zcrecv_range_busy(&su, nu, true) ||
	    zcrecv_range_busy(&du, nu, true))
		goto out_unlock;	/* unmapped units simply fault back */

	for (u = 0; u < nu; u++)
		swap(src->zone->pages[su.first + u],
		     dst->zone->pages[du.first + u]);
	/*
	 * Both sides, as for 4 KiB zones: dst so that its first access does
	 * not fault, src so that the units it got stay mapped and so in the
	 * process's RSS, where the OOM killer sees them.
	 */
	if (prefault) {
		zcrecv_huge_prefault(zf, &du, e->dst, nu);
		zcrecv_huge_prefault(zf, &su, e->src, nu);
	}
	ret = 0;
	pr_debug("exchanged %lu units: zone %llu+%lu <-> zone %llu+%lu\n", nu,
		 src->zone->id, su.first, dst->zone->id, du.first);
out_unlock:
	zcrecv_unlock_two(src->zone, dst->zone);
	return ret;
}
