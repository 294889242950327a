/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * zcr_rdma.h - for the unit tests that need an RDMA device (the verbs
 * transport; in the VM, soft-RoCE: tools/vm/run-vm.sh -R): skip, saying
 * why, where libibverbs lists none (the host).
 */
#ifndef ZCR_RDMA_H
#define ZCR_RDMA_H

#include <infiniband/verbs.h>

#include "zt.h"

static inline void need_device(void)
{
	struct ibv_device **l;
	int n = 0;

	l = ibv_get_device_list(&n);
	if (l)
		ibv_free_device_list(l);
	if (n <= 0)
		ZT_SKIP("no RDMA device (libibverbs lists none; in the VM "
			"run-vm.sh -R creates rxe0)");
}

#endif /* ZCR_RDMA_H */
