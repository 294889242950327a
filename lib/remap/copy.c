// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * copy.c - the copy backend: anonymous staging, never remaps. It is
 * what every other backend falls back to, and what a conventional library
 * does for every early message.
 */
#include <errno.h>
#include <sys/mman.h>

#include "core/ctx.h"

static int copy_slot_alloc(struct zcr_ctx *ctx, void *priv, size_t len,
			   void **p)
{
	void *a;

	(void)ctx;
	(void)priv;
	a = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED)
		return -errno;
	*p = a;
	return 0;
}

static void copy_slot_free(struct zcr_ctx *ctx, void *priv, void *p,
			   size_t len)
{
	(void)ctx;
	(void)priv;
	munmap(p, len);
}

const struct zcr_remap_ops __zcr_remap_copy = {
	.name = "copy",
	.id = ZCRECV_BACKEND_COPY,
	.slot_alloc = copy_slot_alloc,
	.slot_free = copy_slot_free,
};
