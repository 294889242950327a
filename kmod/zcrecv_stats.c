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
#define ZCRECV_COUNTER_NAME(cid, name) [cid] = #name,
	ZCRECV_COUNTERS(ZCRECV_COUNTER_NAME)
#undef ZCRECV_COUNTER_NAME
};

struct zcrecv_counter_attr {
	struct device_attribute attr;
	enum zcrecv_counter id;
};

static ssize_t zcrecv_counter_show(struct device *dev,
				   struct device_attribute *attr, char *buf)
{
	struct zcrecv_counter_attr *ca =
		container_of(attr, struct zcrecv_counter_attr, attr);

	return sysfs_emit(buf, "%lld\n", atomic64_read(&zcrecv_counters[ca->id]));
}

#define ZCRECV_COUNTER_ATTR(cid, name)					\
	static struct zcrecv_counter_attr zcrecv_attr_##cid = {		\
		.attr = __ATTR(name, 0444, zcrecv_counter_show, NULL),	\
		.id = cid,						\
	};
ZCRECV_COUNTERS(ZCRECV_COUNTER_ATTR)
#undef ZCRECV_COUNTER_ATTR

static struct attribute *zcrecv_counter_attrs[] = {
#define ZCRECV_COUNTER_PTR(id, name) &zcrecv_attr_##id.attr.attr,
	ZCRECV_COUNTERS(ZCRECV_COUNTER_PTR)
#undef ZCRECV_COUNTER_PTR
	NULL,
};

static const struct attribute_group zcrecv_counter_group = {
	.name = "counters",
	.attrs = zcrecv_counter_attrs,
};

const struct attribute_group *zcrecv_attr_groups[] = {
	&zcrecv_counter_group,
	NULL,
};

/* Used by pr_debug and the tests' messages: a stable name per counter. */
const char *zcrecv_counter_name(enum zcrecv_counter id)
{
	return id < ZCRECV_NR_COUNTERS ? zcrecv_counter_names[id] : "?";
}
