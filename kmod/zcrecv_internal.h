/* SPDX-License-Identifier: GPL-2.0 */
/*
 * zcrecv - declarations shared by the module's source files.
 */
#ifndef _ZCRECV_INTERNAL_H
#define _ZCRECV_INTERNAL_H

#include <linux/atomic.h>
#include <linux/sysfs.h>
#include <linux/zcrecv.h>

/* Most entries one ZCRECV_IOC_REMAP accepts: bounds the kernel copy. */
#define ZCRECV_MAX_BATCH	512

extern unsigned long zcrecv_max_zone_pages;
extern unsigned long zcrecv_max_process_pages;

/*
 * Counters, one sysfs file each (Documentation/module.md lists them).
 * X(enum id, file name).
 */
#define ZCRECV_COUNTERS(X)					\
	X(ZCRECV_CNT_OPEN_FILES, open_files)			\
	X(ZCRECV_CNT_IOCTLS, ioctls)				\
	X(ZCRECV_CNT_ERR_INVAL, errors_inval)			\
	X(ZCRECV_CNT_ERR_FAULT, errors_fault)			\
	X(ZCRECV_CNT_ERR_NOTTY, errors_notty)			\
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
