// SPDX-License-Identifier: LGPL-2.1-or-later
/* kmod_info.c - zcr_kmod_probe(): what the zcrecv.ko handshake reports. */
#include <errno.h>
#include <unistd.h>

#include "zcrecv.h"
#include "core/sized.h"
#include "remap/remap.h"

int zcr_kmod_probe_sized(struct zcr_kmod_info *info, size_t info_size)
{
	struct zcr_kmod_info full;
	int fd;

	if (info && info_size < ZCR_KMOD_INFO_SIZE_0_1)
		return -EINVAL;
	fd = __zcr_kmod_open(&full);
	if (fd < 0)
		return fd;
	close(fd);
	if (info)
		zcr_sized_out(info, info_size, &full, sizeof(full));
	return 0;
}

int zcr_kmod_probe(struct zcr_kmod_info *info)
{
	return zcr_kmod_probe_sized(info, ZCR_KMOD_INFO_SIZE_0_1);
}
