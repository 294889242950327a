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
#include <linux/sysfs.h>
#include <linux/types.h>
#include <linux/zcrecv.h>

/* Most entries one ZCRECV_IOC_REMAP accepts: bounds the kernel copy. */
#define ZCRECV_MAX_BATCH	512

extern unsigned long zcrecv_max_zone_pages;
extern unsigned long zcrecv_max_process_pages;
extern unsigned long zcrecv_max_global_pages;

struct zcrecv_owner;

/* One open file of /dev/zcrecv: bound to the mm that opened it. */
struct zcrecv_file {
	struct mm_struct *mm;		/* not a reference: the owner holds one */
	struct zcrecv_owner *owner;	/* per-mm page accounting */
	struct mutex lock;		/* zones list, zone->nr_vmas, ->mapped */
	struct list_head zones;
};

/* A zone: an array of driver-owned pages behind one file-offset window. */
struct zcrecv_zone {
	struct zcrecv_file *zf;
	struct list_head node;		/* in zf->zones */
	u64 id;
	pgoff_t pgoff;			/* first page's offset in the device */
	unsigned long nr_pages;
	unsigned int nr_vmas;		/* under zf->lock */
	bool mapped;			/* under zf->lock: mmap()ed once */
	struct mutex lock;		/* pages[] and page-table inserts */
	struct page **pages;		/* NULL until first touch */
};

int zcrecv_file_init(struct file *file);
void zcrecv_file_release(struct zcrecv_file *zf);
int zcrecv_mmap(struct file *file, struct vm_area_struct *vma);
long zcrecv_ioctl_zone_create(struct zcrecv_file *zf, void __user *uarg);
long zcrecv_ioctl_remap(struct zcrecv_file *zf, void __user *uarg);
struct zcrecv_zone *zcrecv_vma_zone(struct zcrecv_file *zf,
				    struct vm_area_struct *vma);

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

/*
 * Counters, one sysfs file each (Documentation/module.md lists them).
 * X(enum id, file name).
 */
#define ZCRECV_COUNTERS(X)					\
	X(ZCRECV_CNT_OPEN_FILES, open_files)			\
	X(ZCRECV_CNT_ZONES_LIVE, zones_live)			\
	X(ZCRECV_CNT_ZONES_CREATED, zones_created)		\
	X(ZCRECV_CNT_PAGES_RESERVED, pages_reserved)		\
	X(ZCRECV_CNT_PAGES_ALLOCATED, pages_allocated)		\
	X(ZCRECV_CNT_PAGES_FREED, pages_freed)			\
	X(ZCRECV_CNT_PAGES_EXCHANGED, pages_exchanged)		\
	X(ZCRECV_CNT_IOCTLS, ioctls)				\
	X(ZCRECV_CNT_REMAP_BUSY, remap_busy)			\
	X(ZCRECV_CNT_ERR_INVAL, errors_inval)			\
	X(ZCRECV_CNT_ERR_FAULT, errors_fault)			\
	X(ZCRECV_CNT_ERR_NOTTY, errors_notty)			\
	X(ZCRECV_CNT_ERR_NOSPC, errors_nospc)			\
	X(ZCRECV_CNT_ERR_PERM, errors_perm)			\
	X(ZCRECV_CNT_ERR_OTHER, errors_other)

enum zcrecv_counter {
#define ZCRECV_COUNTER_ENUM(id, name) id,
	ZCRECV_COUNTERS(ZCRECV_COUNTER_ENUM)
#undef ZCRECV_COUNTER_ENUM
	ZCRECV_NR_COUNTERS
};

extern atomic64_t zcrecv_counters[ZCRECV_NR_COUNTERS];
extern const struct attribute_group *zcrecv_attr_groups[];
const char *zcrecv_counter_name(enum zcrecv_counter id);

static inline void zcrecv_count(enum zcrecv_counter id, long n)
{
	atomic64_add(n, &zcrecv_counters[id]);
}

#endif /* _ZCRECV_INTERNAL_H */
