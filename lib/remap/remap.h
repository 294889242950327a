/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * remap.h - remap backends (lib/remap/{kmod,uffd,copy}.c), the engine and
 * its policy (lib/remap/engine.c) and the /dev/zcrecv handshake
 * (lib/remap/kmod_device.c).
 */
#ifndef ZCR_REMAP_H
#define ZCR_REMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zcrecv.h"

struct zcr_ctx;

/* Open /dev/zcrecv, run the handshake; returns the fd or -errno. */
int __zcr_kmod_open(struct zcr_kmod_info *info);

/*
 * One backend. Staging slots come from the backend that will remap them,
 * so that source and destination are the kind of memory it can move.
 * remap() moves the full pages of src into dst (dst and src page aligned,
 * len a multiple of the page size) and returns the bytes moved from the
 * start (a prefix; possibly 0) or -errno with nothing moved; the caller
 * copies the rest. A backend without an operation returns -EOPNOTSUPP.
 */
struct zcr_remap_ops {
	const char *name;
	int id;				/* enum zcr_backend */
	int (*init)(struct zcr_ctx *ctx);
	void (*fini)(struct zcr_ctx *ctx);
	int (*slot_alloc)(struct zcr_ctx *ctx, size_t len, void **p);
	void (*slot_free)(struct zcr_ctx *ctx, void *p, size_t len);
	bool (*eligible)(struct zcr_ctx *ctx, const void *dst, size_t len);
	long (*remap)(struct zcr_ctx *ctx, void *dst, void *src, size_t len);
};

extern const struct zcr_remap_ops __zcr_remap_kmod;
extern const struct zcr_remap_ops __zcr_remap_uffd;
extern const struct zcr_remap_ops __zcr_remap_copy;

#define ZCR_MAX_BACKENDS	3

struct zcr_backend_state {
	const struct zcr_remap_ops *ops;
	uint64_t min_pages;		/* 0: never worth it (auto policy) */
	double copy_ns, remap_ns;	/* per page, calibrated */
};

int __zcr_remap_setup(struct zcr_ctx *ctx, int want);
void __zcr_remap_teardown(struct zcr_ctx *ctx);
/* The backend a message predicted for dst should be staged for. */
const struct zcr_remap_ops *__zcr_remap_pick(struct zcr_ctx *ctx,
					     const void *dst, size_t len);
/* Deliver n bytes staged at src (same page offset or not) into dst. */
void __zcr_remap_deliver_locked(struct zcr_ctx *ctx,
				const struct zcr_remap_ops *ops, char *dst,
				const char *src, size_t n, bool same_offset);

#endif /* ZCR_REMAP_H */
