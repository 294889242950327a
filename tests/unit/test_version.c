// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_version.c - the library reports its version, and probing the module
 * on a machine without /dev/zcrecv answers -ENOENT rather than failing oddly.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "zcrecv.h"
#include "zt.h"

ZT_TEST(version_string)
{
	char want[32];

	snprintf(want, sizeof(want), "%d.%d.%d", ZCRECV_VERSION_MAJOR,
		 ZCRECV_VERSION_MINOR, ZCRECV_VERSION_PATCH);
	ZT_ASSERT(strcmp(zcr_version(), want) == 0);
}

ZT_TEST(kmod_probe_without_device)
{
	struct zcr_kmod_info info;
	int ret;

	if (access("/dev/zcrecv", F_OK) == 0) {
		ret = zcr_kmod_probe(&info);
		ZT_EXPECT_EQ(ret, 0);
		ZT_EXPECT_EQ(info.abi_version, 1);
		ZT_EXPECT_EQ(info.page_size, sysconf(_SC_PAGESIZE));
		return;
	}
	ZT_EXPECT_EQ(zcr_kmod_probe(&info), -ENOENT);
}
