// SPDX-License-Identifier: GPL-2.0
/*
 * zcrecv - counters, read-only in sysfs under /sys/class/misc/zcrecv/counters/
 *
 * Tests read them before and after a run: a balanced pair (allocated and
 * freed pages, live zones back to zero) is the module's own leak check.
 */
#include <linux/device.h>
#include <linux/kernel.h>
#include <linux/sysfs.h>

#include "zcrecv_internal.h"

atomic64_t zcrecv_counters[ZCRECV_NR_COUNTERS];

static const char * const zcrecv_counter_names[ZCRECV_NR_COUNTERS] = {
	[ZCRECV_CNT_OPEN_FILES]		= "open_files",
	[ZCRECV_CNT_ZONES_LIVE]		= "zones_live",
	[ZCRECV_CNT_ZONES_CREATED]	= "zones_created",
	[ZCRECV_CNT_PAGES_RESERVED]	= "pages_reserved",
	[ZCRECV_CNT_PAGES_ALLOCATED]	= "pages_allocated",
	[ZCRECV_CNT_PAGES_FREED]	= "pages_freed",
	[ZCRECV_CNT_PAGES_EXCHANGED]	= "pages_exchanged",
	[ZCRECV_CNT_IOCTLS]		= "ioctls",
	[ZCRECV_CNT_REMAP_BUSY]		= "remap_busy",
	[ZCRECV_CNT_ERR_INVAL]		= "errors_inval",
	[ZCRECV_CNT_ERR_FAULT]		= "errors_fault",
	[ZCRECV_CNT_ERR_NOTTY]		= "errors_notty",
	[ZCRECV_CNT_ERR_NOSPC]		= "errors_nospc",
	[ZCRECV_CNT_ERR_PERM]		= "errors_perm",
	[ZCRECV_CNT_ERR_OTHER]		= "errors_other",
	[ZCRECV_CNT_HUGE_ALLOC_FAILED]	= "huge_alloc_failed",
	[ZCRECV_CNT_PAGEVER_WRITES]	= "pagever_writes",
	[ZCRECV_CNT_PAGEVER_ARMED]	= "pagever_armed",
	[ZCRECV_CNT_PAGEVER_ARRAYS]	= "pagever_arrays",
};

struct zcrecv_counter_attr {
	struct device_attribute attr;
	enum zcrecv_counter id;
};

static struct zcrecv_counter_attr zcrecv_cattrs[ZCRECV_NR_COUNTERS];
static struct attribute *zcrecv_counter_attrs[ZCRECV_NR_COUNTERS + 1];

static ssize_t zcrecv_counter_show(struct device *dev,
				   struct device_attribute *attr, char *buf)
{
	struct zcrecv_counter_attr *ca =
		container_of(attr, struct zcrecv_counter_attr, attr);

	return sysfs_emit(buf, "%lld\n", atomic64_read(&zcrecv_counters[ca->id]));
}

static const struct attribute_group zcrecv_counter_group = {
	.name = "counters",
	.attrs = zcrecv_counter_attrs,
};

const struct attribute_group *zcrecv_attr_groups[] = {
	&zcrecv_counter_group,
	NULL,
};

/* Fill the attribute table from the names; before misc_register(). */
void zcrecv_stats_init(void)
{
	int i;

	for (i = 0; i < ZCRECV_NR_COUNTERS; i++) {
		struct zcrecv_counter_attr *ca = &zcrecv_cattrs[i];

		sysfs_attr_init(&ca->attr.attr);
		ca->attr.attr.name = zcrecv_counter_names[i];
		ca->attr.attr.mode = 0444;
		ca->attr.show = zcrecv_counter_show;
		ca->id = i;
		zcrecv_counter_attrs[i] = &ca->attr.attr;
	}
}
