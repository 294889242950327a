// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * uffd.c - the uffd-move backend: UFFDIO_MOVE (Linux >= 6.8) between
 * anonymous private mappings, no module needed.
 *
 * UFFDIO_MOVE moves pages rather than exchanging them, and requires the
 * destination VMA to be registered with the userfaultfd. An exchange is
 * three moves through a scratch area of ours: user pages -> scratch,
 * staging -> user, scratch -> staging, so the slot keeps pages and the next
 * landing does not fault and zero new ones.
 *
 * Registration is in write-protect mode, and we never write-protect a page:
 * such a registration traps no fault at all. (Missing mode would trap the
 * kernel's own copy_to_user into a hole of a staging slot, and with
 * UFFD_USER_MODE_ONLY that is an EFAULT.) Staging slots and the scratch
 * area stay registered; the user's range is registered for the exchange
 * only. Any failure leaves every byte not yet moved in the slot, and the
 * engine copies those.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat_uffd.h"
#include "core/ctx.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY		1
#endif

#define UFFD_TMP_PAGES	1024

static int uffd_register(struct zcr_ctx *ctx, void *p, size_t len)
{
	struct uffdio_register reg;

	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)p;
	reg.range.len = len;
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	return ioctl(ctx->uffd, UFFDIO_REGISTER, &reg) < 0 ? -errno : 0;
}

static void uffd_unregister(struct zcr_ctx *ctx, void *p, size_t len)
{
	struct uffdio_range r = { .start = (uintptr_t)p, .len = len };

	ioctl(ctx->uffd, UFFDIO_UNREGISTER, &r);
}

/* Move len bytes; returns bytes moved (a prefix) or -errno if none. */
static long uffd_move(struct zcr_ctx *ctx, void *dst, void *src, size_t len)
{
	struct uffdio_move mv;

	memset(&mv, 0, sizeof(mv));
	mv.dst = (uintptr_t)dst;
	mv.src = (uintptr_t)src;
	mv.len = len;
	mv.mode = UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES;
	if (ioctl(ctx->uffd, UFFDIO_MOVE, &mv) == 0)
		return (long)len;
	return mv.move > 0 ? mv.move : -errno;
}

static int uffd_map(struct zcr_ctx *ctx, size_t len, void **p)
{
	void *a;
	int ret;

	a = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED)
		return -errno;
	/* Huge pages would have to be split on the first partial move. */
	madvise(a, len, MADV_NOHUGEPAGE);
	ret = uffd_register(ctx, a, len);
	if (ret) {
		munmap(a, len);
		return ret;
	}
	*p = a;
	return 0;
}

static int uffd_init(struct zcr_ctx *ctx)
{
	struct uffdio_api api;
	void *tmp;
	int fd, ret;

	fd = (int)syscall(SYS_userfaultfd,
			  O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd < 0)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	memset(&api, 0, sizeof(api));
	api.api = UFFD_API;
	api.features = UFFD_FEATURE_MOVE;
	if (ioctl(fd, UFFDIO_API, &api) < 0 ||
	    !(api.features & UFFD_FEATURE_MOVE)) {
		close(fd);
		return -EOPNOTSUPP;
	}
	ctx->uffd = fd;
	ctx->uffd_tmp_len = UFFD_TMP_PAGES * ctx->page;
	ret = uffd_map(ctx, ctx->uffd_tmp_len, &tmp);
	if (ret) {
		close(fd);
		ctx->uffd = -1;
		return ret;
	}
	ctx->uffd_tmp = tmp;
	return 0;
}

static void uffd_fini(struct zcr_ctx *ctx)
{
	if (ctx->uffd_tmp)
		munmap(ctx->uffd_tmp, ctx->uffd_tmp_len);
	ctx->uffd_tmp = NULL;
	if (ctx->uffd >= 0)
		close(ctx->uffd);
	ctx->uffd = -1;
}

static void uffd_slot_free(struct zcr_ctx *ctx, void *p, size_t len)
{
	(void)ctx;
	munmap(p, len);
}

static bool uffd_eligible(struct zcr_ctx *ctx, const void *dst, size_t len)
{
	/* Zone memory is MAP_SHARED: UFFDIO_MOVE cannot move into it. */
	return ctx->uffd >= 0 && !__zcr_mem_in_zone(ctx, dst, len);
}

/* Exchange one chunk no larger than the scratch area. */
static long uffd_exchange(struct zcr_ctx *ctx, char *dst, char *src,
			  size_t len)
{
	char *tmp = ctx->uffd_tmp;
	long a, b;

	a = uffd_move(ctx, tmp, dst, len);
	if (a < 0)
		return a;
	if ((size_t)a < len) {
		/* Put back what left dst; nothing was delivered. */
		uffd_move(ctx, dst, tmp, (size_t)a);
		madvise(tmp, (size_t)a, MADV_DONTNEED);
		return -EBUSY;
	}
	b = uffd_move(ctx, dst, src, len);
	if (b < 0)
		b = 0;
	/* The user's old pages refill the slot where its pages left. */
	if (b > 0)
		uffd_move(ctx, src, tmp, (size_t)b);
	/* Old pages whose place in dst was not refilled are dropped. */
	madvise(tmp, len, MADV_DONTNEED);
	return b;
}

static long uffd_remap(struct zcr_ctx *ctx, void *dst, void *src, size_t len)
{
	size_t done = 0;
	long m = 0;
	int ret;

	ret = uffd_register(ctx, dst, len);
	if (ret)
		return ret;
	while (done < len) {
		size_t n = len - done;

		if (n > ctx->uffd_tmp_len)
			n = ctx->uffd_tmp_len;
		m = uffd_exchange(ctx, (char *)dst + done, (char *)src + done,
				  n);
		if (m < 0)
			break;
		done += (size_t)m;
		if ((size_t)m < n)
			break;
	}
	uffd_unregister(ctx, dst, len);
	/* A prefix was moved: report it; the engine copies the rest. */
	return done || m >= 0 ? (long)done : m;
}

const struct zcr_remap_ops __zcr_remap_uffd = {
	.name = "uffd-move",
	.id = ZCRECV_BACKEND_UFFD,
	.init = uffd_init,
	.fini = uffd_fini,
	.slot_alloc = uffd_map,
	.slot_free = uffd_slot_free,
	.eligible = uffd_eligible,
	.remap = uffd_remap,
};
