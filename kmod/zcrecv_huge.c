// SPDX-License-Identifier: GPL-2.0
/*
 * zcrecv - huge zones (ZCRECV_ZONE_HUGE): zones made of 2 MiB units.
 *
 * A unit is one compound page of order ZCRECV_HUGE_ORDER, allocated zeroed
 * on first touch of any of its pages. zone->pages[] holds one entry per
 * unit (the head page), so an exchange swaps one entry per 2 MiB.
 *
 * Page tables: one PMD per unit. A huge zone's mapping is not
 * VM_MIXEDMAP; its fault handler follows the page cache's protocol
 * instead: it returns the faulting subpage of the unit, referenced and
 * locked, and the core's finish_fault() maps the whole unit with one PMD
 * (do_set_pmd(), as for a shmem or page-cache THP) when the PMD is empty
 * and the VMA covers the unit's aligned 2 MiB; otherwise (a VMA split
 * inside a unit, THP disabled for the process or the VMA) it maps the one
 * subpage with a PTE, and each 4 KiB page faults once. The PMD is an
 * ordinary file THP mapping: it holds a reference and the entire mapcount,
 * get_user_pages and pin_user_pages work on it (io_uring fixed buffers,
 * RDMA, O_DIRECT), a pin shows on the whole unit (folio_maybe_dma_pinned)
 * and is refused with EBUSY. The exported PMD inserters would not do:
 * vmf_insert_pfn_pmd() makes a special (6.12) or devmap (6.1) PMD that
 * holds no reference and that GUP refuses, and they need VM_MIXEDMAP or
 * VM_PFNMAP, under which 6.1 never maps a file PMD at all.
 *
 * Exchange: with both zones' locks held, the units' folios are locked
 * (a fault locks the unit's folio before it drops the zone lock and maps
 * it only while it holds that lock), both ranges are unmapped (one PMD
 * per unit), the entries are swapped, and both ranges are faulted in
 * again through the same handler (fixup_user_fault(), one fault per unit)
 * so that the next access does not fault and the units stay in the
 * process's RSS.
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
#include <linux/pagemap.h>
#include <linux/sched.h>
#include <linux/sched/coredump.h>
#include <linux/slab.h>

#include "zcrecv_internal.h"

#define ZCRECV_HUGE_GFP	(GFP_HIGHUSER | __GFP_COMP | __GFP_ZERO | \
			 __GFP_ACCOUNT | __GFP_NORETRY | __GFP_NOWARN)

/* The unit array. */
int zcrecv_huge_init(struct zcrecv_zone *zone)
{
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

/*
 * A fault in a unit: allocate it on first touch, then hand the core the
 * faulting subpage, referenced and locked; finish_fault() maps the unit
 * with one PMD where it can (see above). The folio lock orders the fault
 * against an exchange, which swaps units only with their folios locked:
 * the lock is taken before the zone lock is dropped, so the unit stays
 * here (and allocated: the zone holds it) until the fault is done with it.
 * No holder of a unit's folio lock waits for a zone lock, so holding the
 * zone lock while we wait for the folio's cannot deadlock.
 *
 * The reference is taken only once the lock is held and only if the
 * fault will map something, so that a fault waiting for the lock, or one
 * that finds the unit mapped already, does not look like a
 * get_user_pages reference to an exchange (which would refuse with
 * EBUSY): the core drops a failed fault's reference only after it
 * unlocked the folio.
 */
vm_fault_t zcrecv_huge_fault(struct vm_fault *vmf, struct zcrecv_zone *zone,
			     unsigned long idx)
{
	unsigned long u = idx >> ZCRECV_HUGE_ORDER;
	struct folio *folio;
	struct page *head, *page;

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
		/* finish_fault() checks index + size against i_size */
		page_folio(head)->index = 0;
		zone->pages[u] = head;
		zcrecv_count(ZCRECV_CNT_PAGES_ALLOCATED, ZCRECV_HUGE_NR);
	}
	folio = page_folio(head);
	folio_lock(folio);
	mutex_unlock(&zone->lock);

	page = folio_page(folio, idx & (ZCRECV_HUGE_NR - 1));
	/*
	 * A poisoned page is not handed to the core: its poison path would
	 * unmap the folio through folio->mapping, which a unit has not.
	 */
	if (PageHWPoison(page)) {
		folio_unlock(folio);
		return VM_FAULT_HWPOISON;
	}
	/*
	 * Mapped whole already, by the fault or the exchange's prefault that
	 * held the lock before us (only a holder of this lock maps this unit,
	 * so a huge PMD here is it): nothing to map, and no reference.
	 */
	if (pmd_trans_huge(READ_ONCE(*vmf->pmd))) {
		folio_unlock(folio);
		return VM_FAULT_NOPAGE;
	}
	folio_get(folio);
	vmf->page = page;
	return VM_FAULT_LOCKED;
}

/* Lock or unlock the folios of the allocated units of @r. */
static void zcrecv_huge_lock_units(struct zcrecv_range *r, unsigned long nu,
				   bool lock)
{
	unsigned long u;

	for (u = 0; u < nu; u++) {
		struct page *head = r->zone->pages[r->first + u];

		if (!head)
			continue;
		if (lock)
			folio_lock(page_folio(head));
		else
			folio_unlock(page_folio(head));
	}
}

/*
 * Does an extra reference hold a unit of either range, now unmapped?
 * Some are on their way out while we hold the locks: a fault that failed
 * in the core after it took its reference (a PTE-mapped unit whose page
 * another thread mapped first) drops it after unlocking the folio; a
 * GUP-fast that saw the PMD change, a MADV_DONTNEED's batch, a NUMA
 * hinting fault hold one briefly. Look again a few times, then once after
 * a tick (a vCPU of a guest can stall that long), before calling it a
 * get_user_pages reference (EBUSY). Pins were refused before unmapping.
 */
#define ZCRECV_HUGE_BUSY_TRIES	8

static bool zcrecv_huge_busy(struct zcrecv_range *su, struct zcrecv_range *du,
			     unsigned long nu)
{
	int i;

	for (i = 0; i <= ZCRECV_HUGE_BUSY_TRIES; i++) {
		if (!zcrecv_range_busy(su, nu, true) &&
		    !zcrecv_range_busy(du, nu, true))
			return false;
		if (i < ZCRECV_HUGE_BUSY_TRIES - 1)
			cond_resched();
		else if (i == ZCRECV_HUGE_BUSY_TRIES - 1)
			schedule_timeout_uninterruptible(1);
	}
	return true;
}

/*
 * Will a fault at the unit at @addr map it with one PMD? The conditions of
 * finish_fault()/do_set_pmd(): a 2 MiB-aligned unit (its file offset is),
 * one VMA over all of it, THP not disabled for the VMA or the process
 * (6.12 checks; 6.1 maps the PMD anyway, and the page-by-page faults
 * below then find it and return at once).
 */
static bool zcrecv_huge_pmd_ok(struct vm_area_struct *vma, unsigned long addr)
{
	const unsigned long usize = ZCRECV_HUGE_NR << PAGE_SHIFT;

	return IS_ENABLED(CONFIG_TRANSPARENT_HUGEPAGE) && vma &&
	       IS_ALIGNED(addr, usize) && addr + usize <= vma->vm_end &&
	       !(vma->vm_flags & VM_NOHUGEPAGE) &&
	       !test_bit(MMF_DISABLE_THP, &vma->vm_mm->flags);
}

/* A read fault where the mapping is readable, else (PROT_WRITE) a write. */
static unsigned int zcrecv_huge_fault_flags(struct vm_area_struct *vma)
{
	return vma->vm_flags & VM_READ ? 0 : FAULT_FLAG_WRITE;
}

/*
 * Fault the allocated units of @r at [addr, addr + nu units) in again:
 * one fault per unit where it maps a PMD, else one per page. Best effort:
 * an inaccessible part stays unmapped and faults on access; a hole (no
 * unit) is left a hole, not allocated.
 */
static void zcrecv_huge_prefault(struct zcrecv_file *zf, struct zcrecv_range *r,
				 unsigned long addr, unsigned long nu)
{
	const unsigned long usize = ZCRECV_HUGE_NR << PAGE_SHIFT;
	unsigned long u, a;

	for (u = 0; u < nu; u++, addr += usize) {
		struct vm_area_struct *vma;

		if (!READ_ONCE(r->zone->pages[r->first + u]))
			continue;
		vma = vma_lookup(zf->mm, addr);
		if (zcrecv_huge_pmd_ok(vma, addr)) {
			fixup_user_fault(zf->mm, addr, zcrecv_huge_fault_flags(vma),
					 NULL);
		} else {
			for (a = addr; a < addr + usize; a += PAGE_SIZE) {
				vma = vma_lookup(zf->mm, a);
				if (vma)
					fixup_user_fault(zf->mm, a,
							 zcrecv_huge_fault_flags(vma),
							 NULL);
			}
		}
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
	zcrecv_huge_lock_units(&su, nu, true);
	zcrecv_huge_lock_units(&du, nu, true);
	zcrecv_unmap(src, n);
	zcrecv_unmap(dst, n);
	if (zcrecv_huge_busy(&su, &du, nu))
		goto out_unlock_units;	/* unmapped units simply fault back */

	for (u = 0; u < nu; u++)
		swap(src->zone->pages[su.first + u],
		     dst->zone->pages[du.first + u]);
	ret = 0;
	pr_debug("exchanged %lu units: zone %llu+%lu <-> zone %llu+%lu\n", nu,
		 src->zone->id, su.first, dst->zone->id, du.first);
out_unlock_units:
	/* the same folios: the swap only moved them between the ranges */
	zcrecv_huge_lock_units(&su, nu, false);
	zcrecv_huge_lock_units(&du, nu, false);
out_unlock:
	zcrecv_unlock_two(src->zone, dst->zone);
	/*
	 * Both sides, as for 4 KiB zones: dst so that its first access does
	 * not fault, src so that the units it got stay mapped and so in the
	 * process's RSS, where the OOM killer sees them. Our fault handler
	 * takes the zone and folio locks: not before they are dropped.
	 */
	if (!ret && prefault) {
		zcrecv_huge_prefault(zf, &du, e->dst, nu);
		zcrecv_huge_prefault(zf, &su, e->src, nu);
	}
	return ret;
}
