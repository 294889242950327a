/* SPDX-License-Identifier: GPL-2.0 */
/*
 * zcrecv_util.h - helpers shared by the zcrecv kselftests: device access,
 * the module's sysfs counters, and loading/unloading the module.
 */
#ifndef ZCRECV_UTIL_H
#define ZCRECV_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/zcrecv.h>

#define ZCRECV_DEV		"/dev/" ZCRECV_DEVICE_NAME
#define ZCRECV_COUNTER_DIR	"/sys/class/misc/zcrecv/counters/"

/* Read one module counter; -1 when it cannot be read. */
static inline long long zcrecv_counter(const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), ZCRECV_COUNTER_DIR "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* ioctl returning -errno, so tests compare one value. */
static inline int zcrecv_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

static inline int zcrecv_handshake(int fd, struct zcrecv_api *api)
{
	memset(api, 0, sizeof(*api));
	api->abi_version = ZCRECV_ABI_VERSION;
	return zcrecv_ioctl(fd, ZCRECV_IOC_API, api);
}

/* Path of zcrecv.ko for reload tests (the VM runner sets ZCRECV_KO). */
static inline const char *zcrecv_ko(void)
{
	return getenv("ZCRECV_KO");
}

#endif /* ZCRECV_UTIL_H */
