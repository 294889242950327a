/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * zcrecv.h - the public API of libzcrecv.
 *
 * Conventions (Documentation/library.md): every function returns >= 0 on
 * success and a negative errno value on failure; errno is never the channel.
 * Destroy functions return void. Symbols appear in lib/libzcrecv.map with
 * the version that introduced them.
 */
#ifndef ZCRECV_H
#define ZCRECV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZCRECV_VERSION_MAJOR	0
#define ZCRECV_VERSION_MINOR	1
#define ZCRECV_VERSION_PATCH	0

/**
 * zcr_version() - the library's version string, "MAJOR.MINOR.PATCH".
 * Since 0.1.
 */
const char *zcr_version(void);

/**
 * struct zcr_kmod_info - what the zcrecv.ko handshake reported
 * @abi_version:	ABI version the module speaks
 * @page_size:		the kernel's page size in bytes
 * @max_batch:		most entries in one remap call
 * @features:		ZCRECV_FEATURE_* bits (<linux/zcrecv.h>)
 * @max_zone_pages:	largest zone, in pages
 * @max_process_pages:	most zone pages one process may hold
 */
struct zcr_kmod_info {
	uint32_t abi_version;
	uint32_t page_size;
	uint32_t max_batch;
	uint64_t features;
	uint64_t max_zone_pages;
	uint64_t max_process_pages;
};

/**
 * zcr_kmod_probe() - open /dev/zcrecv and run the handshake ioctl
 * @info: filled on success (may be NULL)
 *
 * Return: 0 when the module is present and speaks this library's ABI;
 * -ENOENT when there is no device; -EOPNOTSUPP on an ABI mismatch; another
 * negative errno from open or ioctl otherwise. Since 0.1.
 */
int zcr_kmod_probe(struct zcr_kmod_info *info);

#ifdef __cplusplus
}
#endif

#endif /* ZCRECV_H */
