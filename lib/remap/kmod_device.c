// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * kmod_device.c - opening /dev/zcrecv and the handshake ioctl.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/zcrecv.h>

#include "zcrecv.h"
#include "remap/remap.h"

int __zcr_kmod_open(struct zcr_kmod_info *info)
{
	struct zcrecv_api api;
	int fd;

	fd = open("/dev/" ZCRECV_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;

	memset(&api, 0, sizeof(api));
	api.abi_version = ZCRECV_ABI_VERSION;
	if (ioctl(fd, ZCRECV_IOC_API, &api) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (info) {
		info->abi_version = api.out_abi_version;
		info->page_size = api.out_page_size;
		info->max_batch = api.out_max_batch;
		info->features = api.out_features;
		info->max_zone_pages = api.out_max_zone_pages;
		info->max_process_pages = api.out_max_process_pages;
		info->huge_unit_size = api.out_features & ZCRECV_FEATURE_HUGE ?
				       api.out_huge_unit_size : 0;
	}
	return fd;
}
