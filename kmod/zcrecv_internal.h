/* SPDX-License-Identifier: GPL-2.0 */
/*
 * zcrecv - declarations shared by the module's source files.
 */
#ifndef _ZCRECV_INTERNAL_H
#define _ZCRECV_INTERNAL_H

#include <linux/atomic.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/sysfs.h>
#include <linux/types.h>
#include <linux/zcrecv.h>

/* Most entries one ZCRECV_IOC_REMAP accepts: bounds the kernel copy. */
#define ZCRECV_MAX_BATCH	512

/*
 * Cap of max_zone_pages: 16 GiB of 4 KiB pages. The offset windows
 * (zcrecv_zone.c) are sized so that a zone this large still gets one.
 */
#define ZCRECV_ZONE_PAGES_CAP	BIT(22)

extern unsigned long zcrecv_max_zone_pages;
extern unsigned long zcrecv_max_process_pages;
extern unsigned long zcrecv_max_global_pages;
extern unsigned long zcrecv_max_process_zones;

struct mem_cgroup;
struct zcrecv_owner;
struct zcrecv_pv;

/* One open file of /dev/zcrecv: bound to the mm that opened it. */
struct zcrecv_file {
	struct mm_struct *mm;		/* not a reference: the owner holds one */
	struct zcrecv_owner *owner;	/* per-mm page accounting */
	struct mutex lock;		/* zones list, zone->nr_vmas, ->mapped */
	struct list_head zones;
	struct address_space *mapping;	/* zcrecv_inode's, shared by all opens */
};

/* A zone: an array of driver-owned pages behind one file-offset window. */
struct zcrecv_zone {
	struct zcrecv_file *zf;
	struct address_space *mapping;	/* zf->mapping */
	struct list_head node;		/* in zf->zones once created */
	struct rcu_head rcu;		/* freed after an RCU grace period */
	u64 id;
	pgoff_t pgoff;			/* first page's offset in the device */
	unsigned int order;		/* the window: 2^order offsets, */
	unsigned int slot;		/* slot of that order, see zcrecv_zone.c */
	unsigned long nr_pages;
	unsigned int nr_vmas;		/* under zf->lock */
	bool mapped;			/* under zf->lock: mmap()ed once */
	struct mutex lock;		/* pages[] and page-table inserts */
	struct page **pages;		/* NULL until first touch */
	struct mem_cgroup *memcg;	/* the creator's: pays for the pages */
	bool huge;			/* ZCRECV_ZONE_HUGE: pages[] per unit */
	struct zcrecv_pv *pv;		/* ZCRECV_ZONE_PAGEVER, or NULL */
};

/* Units of huge zones: one PMD's worth of pages, a compound page each. */
#define ZCRECV_HUGE_ORDER	(PMD_SHIFT - PAGE_SHIFT)
#define ZCRECV_HUGE_NR		BIT(ZCRECV_HUGE_ORDER)

/* A range of an exchange: a zone and the index of its first page. */
struct zcrecv_range {
	struct zcrecv_zone *zone;
	unsigned long first;		/* index in zone->pages */
};

void zcrecv_zones_init(void);
void zcrecv_zones_exit(void);
int zcrecv_file_init(struct file *file);
void zcrecv_file_release(struct zcrecv_file *zf);
int zcrecv_mmap(struct file *file, struct vm_area_struct *vma);
long zcrecv_ioctl_zone_create(struct zcrecv_file *zf, void __user *uarg);
long zcrecv_ioctl_remap(struct zcrecv_file *zf, void __user *uarg);
struct zcrecv_zone *zcrecv_vma_zone(struct zcrecv_file *zf,
				    struct vm_area_struct *vma);
void zcrecv_window_free(unsigned int order, unsigned int slot);
int zcrecv_resolve(struct zcrecv_file *zf, unsigned long addr,
		   unsigned long len, struct zcrecv_range *r);

/* zcrecv_pagever.c: page versions of ZCRECV_ZONE_PAGEVER zones. */
unsigned long zcrecv_pv_window_pages(unsigned long zone_pages);
int zcrecv_pv_create(struct zcrecv_zone *zone);
int zcrecv_pv_publish(struct zcrecv_zone *zone);
void zcrecv_pv_unpublish(struct zcrecv_zone *zone);
void zcrecv_pv_zone_gone(struct zcrecv_zone *zone);
void zcrecv_pv_discard(struct zcrecv_zone *zone);
void zcrecv_pv_changed_mapping(struct zcrecv_zone *zone);
int zcrecv_pv_mmap(struct zcrecv_file *zf, struct vm_area_struct *vma);
vm_fault_t zcrecv_pv_page_mkwrite(struct vm_fault *vmf);
void zcrecv_pv_bump(struct zcrecv_zone *zone, unsigned long first,
		    unsigned long n);
long zcrecv_ioctl_pagever(struct zcrecv_file *zf, void __user *uarg);

/* zcrecv_remap.c helpers the huge-zone exchange reuses. */
void zcrecv_lock_two(struct zcrecv_zone *a, struct zcrecv_zone *b);
void zcrecv_unlock_two(struct zcrecv_zone *a, struct zcrecv_zone *b);
bool zcrecv_range_busy(struct zcrecv_range *r, unsigned long n, bool unmapped);
void zcrecv_unmap(struct zcrecv_range *r, unsigned long n);

/* zcrecv_huge.c: zones of 2 MiB units (ZCRECV_ZONE_HUGE). */
int zcrecv_huge_init(struct zcrecv_zone *zone);
unsigned long zcrecv_huge_free(struct zcrecv_zone *zone);
vm_fault_t zcrecv_huge_fault(struct vm_fault *vmf, struct zcrecv_zone *zone,
			     unsigned long idx);
int zcrecv_huge_remap(struct zcrecv_file *zf,
		      const struct zcrecv_remap_entry *e,
		      struct zcrecv_range *src, struct zcrecv_range *dst,
		      bool prefault);

/* vm_flags became read-only with vm_flags_set() in 6.3 (Kbuild probe). */
static inline void zcrecv_vm_flags_set(struct vm_area_struct *vma,
				       unsigned long flags)
{
#ifdef ZCRECV_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

static inline void zcrecv_vm_flags_clear(struct vm_area_struct *vma,
					 unsigned long flags)
{
#ifdef ZCRECV_HAVE_VM_FLAGS_SET
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

/* Counters, one sysfs file each; zcrecv_stats.c names them. */
enum zcrecv_counter {
	ZCRECV_CNT_OPEN_FILES,
	ZCRECV_CNT_ZONES_LIVE,
	ZCRECV_CNT_ZONES_CREATED,
	ZCRECV_CNT_PAGES_RESERVED,
	ZCRECV_CNT_PAGES_ALLOCATED,
	ZCRECV_CNT_PAGES_FREED,
	ZCRECV_CNT_PAGES_EXCHANGED,
	ZCRECV_CNT_IOCTLS,
	ZCRECV_CNT_REMAP_BUSY,
	ZCRECV_CNT_ERR_INVAL,
	ZCRECV_CNT_ERR_FAULT,
	ZCRECV_CNT_ERR_NOTTY,
	ZCRECV_CNT_ERR_NOSPC,
	ZCRECV_CNT_ERR_PERM,
	ZCRECV_CNT_ERR_OTHER,
	ZCRECV_CNT_HUGE_ALLOC_FAILED,
	ZCRECV_CNT_PAGEVER_WRITES,
	ZCRECV_CNT_PAGEVER_ARMED,
	ZCRECV_CNT_PAGEVER_ARRAYS,
	ZCRECV_NR_COUNTERS
};

extern atomic64_t zcrecv_counters[ZCRECV_NR_COUNTERS];
extern const struct attribute_group *zcrecv_attr_groups[];
void zcrecv_stats_init(void);

static inline void zcrecv_count(enum zcrecv_counter id, long n)
{
	atomic64_add(n, &zcrecv_counters[id]);
}

#endif /* _ZCRECV_INTERNAL_H */
