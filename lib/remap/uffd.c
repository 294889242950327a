// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * uffd.c - the uffd-move backend: UFFDIO_MOVE (Linux >= 6.8) between
 * anonymous private mappings, no module needed.
 *
 * UFFDIO_MOVE moves pages rather than exchanging them, and requires the
 * destination VMA to be registered with our userfaultfd. An exchange is
 * two moves: the user's old pages go into an empty spare region (at the
 * slot's offset), the staged pages go into the user's buffer; then the
 * regions swap roles: the spare, now holding the user's old pages, becomes
 * the slot (the next landing finds pages there and does not fault), and the
 * drained slot becomes the next spare. Nothing is copied back or zeroed; a
 * drained slot of 2 MiB units is dropped whole (MADV_DONTNEED: what is
 * left in it is nobody's), or mapped anew where it may keep page tables:
 * they would make a huge page moved in later split (spare_drop()).
 *
 * 2 MiB units: slots of 2 MiB or more, and their spares, are 2 MiB aligned
 * and advised MADV_HUGEPAGE, and the engine stages a message at the
 * predicted buffer's offset modulo 2 MiB (unit()). The 2 MiB-aligned middle
 * of the user's range then lines up with whole huge pages of the slot, and
 * the kernel moves each as one PMD when the source is a huge page, the
 * move covers it whole and the destination PMD is empty (mm/userfaultfd.c
 * move_pages(); otherwise it splits the huge page and moves 4 KiB pages).
 * The user's huge pages leave as PMDs into the spare's empty PMDs, which
 * empties the user's PMDs for the slot's. A user range of 4 KiB pages
 * keeps an (emptied) page table after the first move; dropping that with
 * MADV_DONTNEED (Linux >= 6.14 with CONFIG_PT_RECLAIM frees empty page
 * tables) lets the slot's huge page move in whole (a user's range is not
 * ours to unmap; our own regions are, spare_drop()). In a zcr_mem_alloc
 * block of 2 MiB units the engine moves only whole units and copies the
 * rest (moving part of one would split its huge page and the slot's for
 * good: remap_range()); elsewhere head and tail pages that do not fill a
 * 2 MiB unit move as 4 KiB pages.
 *
 * Registration is in write-protect mode, and we never write-protect a page:
 * such a registration traps no fault at all. (Missing mode would trap the
 * kernel's own copy_to_user into a hole of a staging slot, and with
 * UFFD_USER_MODE_ONLY that is an EFAULT.) Slots and spares are registered
 * when mapped. The user's range is registered when a move into it first
 * fails with EINVAL (what Linux 6.18 answers for an unregistered
 * destination), and stays registered: the registration lives in the VMA,
 * so a munmap drops it and a new mapping at the same address fails the
 * move once more and is registered then. Registering another buffer's
 * 2 MiB units may split a mapping this range shares; the move out of it
 * then fails with EINVAL too (a source must lie in one VMA), and
 * registering this range lets the kernel merge the parts again. Any
 * failure leaves every byte not yet delivered in the slot, and the engine
 * copies those.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat_uffd.h"
#include "base/ctx.h"
#include "remap/remap.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY		1
#endif

#define UFFD_SPARES	8		/* idle spare regions kept */
#define UFFD_RETRIES	4		/* EAGAIN: the mm changed under us */
#define UFFD_BUSY_RETRIES 3		/* EBUSY: see uffd_move() */

struct uffd_region {
	char *base;
	size_t cap;
};

struct uffd_priv {
	int fd;
	unsigned int nspare;
	struct uffd_region spare[UFFD_SPARES];
};

static bool is_huge(size_t len)
{
	return len >= ZCR_HUGE_SIZE;
}

static int uffd_register(struct uffd_priv *u, void *p, size_t len)
{
	struct uffdio_register reg;

	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)p;
	reg.range.len = len;
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	return ioctl(u->fd, UFFDIO_REGISTER, &reg) < 0 ? -errno : 0;
}

/* Move len bytes; returns bytes moved (a prefix) or -errno if none. */
static long uffd_move(struct uffd_priv *u, void *dst, const void *src,
		      size_t len)
{
	struct uffdio_move mv;
	size_t done = 0;
	int tries = 0, busy = 0;

	while (done < len) {
		memset(&mv, 0, sizeof(mv));
		mv.dst = (uintptr_t)dst + done;
		mv.src = (uintptr_t)src + done;
		mv.len = len - done;
		mv.mode = UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES;
		if (ioctl(u->fd, UFFDIO_MOVE, &mv) == 0)
			return (long)len;
		if (mv.move > 0)
			done += (size_t)mv.move;
		if (errno == EBUSY && busy++ < UFFD_BUSY_RETRIES) {
			/*
			 * Linux 6.18 answers EBUSY now and then for pages that
			 * move a moment later: right after the range was
			 * registered, or at a huge page the move must split
			 * (seen in about 1 of 500 runs of test_landing, every
			 * time through after one or two yields). Pinned or
			 * shared pages stay busy, and after these few tries
			 * the engine copies.
			 */
			sched_yield();
			continue;
		}
		if (errno != EAGAIN || ++tries > UFFD_RETRIES)
			break;
	}
	return done ? (long)done : -errno;
}

static int uffd_map(struct uffd_priv *u, size_t len, void **p)
{
	int ret;

	ret = __zcr_anon_map(len, is_huge(len), p);
	if (ret)
		return ret;
	ret = uffd_register(u, *p, len);
	if (ret)
		munmap(*p, len);
	return ret;
}

static int uffd_init(struct zcr_ctx *ctx, void *priv)
{
	struct uffd_priv *u = priv;
	struct uffdio_api api;
	int fd;

	(void)ctx;
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
	u->fd = fd;
	return 0;
}

static void uffd_fini(struct zcr_ctx *ctx, void *priv)
{
	struct uffd_priv *u = priv;
	unsigned int i;

	(void)ctx;
	for (i = 0; i < u->nspare; i++)
		munmap(u->spare[i].base, u->spare[i].cap);
	u->nspare = 0;
	close(u->fd);
}

static size_t uffd_unit(struct zcr_ctx *ctx, void *priv, size_t len)
{
	(void)priv;
	return is_huge(len) ? ZCR_HUGE_SIZE : ctx->page;
}

static size_t uffd_slot_size(struct zcr_ctx *ctx, void *priv, size_t len)
{
	(void)ctx;
	(void)priv;
	if (!is_huge(len))
		return len;
	return (len + ZCR_HUGE_SIZE - 1) & ~(ZCR_HUGE_SIZE - 1);
}

static int uffd_slot_alloc(struct zcr_ctx *ctx, void *priv, size_t len,
			   void **p)
{
	(void)ctx;
	return uffd_map(priv, len, p);
}

static void uffd_slot_free(struct zcr_ctx *ctx, void *priv, void *p,
			   size_t len)
{
	(void)ctx;
	(void)priv;
	munmap(p, len);
}

static bool uffd_eligible(struct zcr_ctx *ctx, void *priv, const void *dst,
			  size_t len)
{
	(void)priv;
	/* Zone memory is MAP_SHARED: UFFDIO_MOVE cannot move into it. */
	return !__zcr_mem_in_zone(ctx, dst, len);
}

/* An empty region as large as a slot of cap bytes: kept, or new. */
static char *spare_get(struct uffd_priv *u, size_t cap)
{
	unsigned int i;
	void *p;

	for (i = 0; i < u->nspare; i++)
		if (u->spare[i].cap == cap) {
			p = u->spare[i].base;
			u->spare[i] = u->spare[--u->nspare];
			return p;
		}
	return uffd_map(u, cap, &p) ? NULL : p;
}

static void spare_put(struct uffd_priv *u, char *base, size_t cap)
{
	if (u->nspare == UFFD_SPARES) {
		/* Drop the oldest: a slot size no longer in use, likely. */
		munmap(u->spare[0].base, u->spare[0].cap);
		u->spare[0] = u->spare[--u->nspare];
	}
	u->spare[u->nspare].base = base;
	u->spare[u->nspare++].cap = cap;
}

/*
 * A drained region back to the spares; what is left in it is nobody's. A
 * region of 2 MiB units that may keep page tables (tables:
 * may_keep_tables()) is mapped anew in place (MAP_FIXED), which frees
 * them on every kernel (MADV_DONTNEED does only on Linux >= 6.14 with
 * CONFIG_PT_RECLAIM): a huge page moved into a PMD that still has a table
 * is split. If that fails, spare_get() maps a new region later.
 */
static void spare_drop(struct uffd_priv *u, char *base, size_t cap,
		       bool tables)
{
	if (!is_huge(cap)) {
		spare_put(u, base, cap);
		return;
	}
	madvise(base, cap, MADV_DONTNEED);
	if (!tables) {
		spare_put(u, base, cap);
		return;
	}
	if (mmap(base, cap, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		/*
		 * The old mapping may be gone or still there (empty now);
		 * unmapping the range could unmap what another thread has
		 * mapped there since. Forget it.
		 */
		return;
	madvise(base, cap, MADV_HUGEPAGE);
	if (uffd_register(u, base, cap)) {
		munmap(base, cap);
		return;
	}
	spare_put(u, base, cap);
}

/*
 * Whether a region of 2 MiB units that exchanged pages with the user's
 * [dst, dst + len) may keep page tables: its pages were small
 * (slot->small), or the user's memory there is not a block of huge pages
 * (its small pages leave tables where they go, and a huge page moved into
 * a PMD that has a table is split at the source). Only a context with
 * such blocks cares. Under ctx->lock (calibration calls remap() before
 * the context is shared, and it has no blocks then).
 */
static bool may_keep_tables(struct zcr_ctx *ctx, const struct zcr_slot *s,
			    const void *dst, size_t len)
{
	return __zcr_mem_thp_any(ctx) &&
	       (s->small || !__zcr_mem_thp(ctx, dst, len));
}

/*
 * Register the user's range [p, p + len): the 2 MiB units around it
 * first (one VMA is not split in three, and its neighbours' huge pages
 * stay whole), else exactly the range.
 */
static int user_register(struct uffd_priv *u, char *p, size_t len)
{
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(ZCR_HUGE_SIZE - 1);
	uintptr_t e = ((uintptr_t)p + len + ZCR_HUGE_SIZE - 1) &
		      ~(uintptr_t)(ZCR_HUGE_SIZE - 1);

	if (uffd_register(u, (void *)a, e - a) == 0)
		return 0;
	return uffd_register(u, p, len);
}

/* The emptied 2 MiB units of a range: free their page tables. */
static void user_drop_tables(char *dst, size_t len)
{
	uintptr_t a = ((uintptr_t)dst + ZCR_HUGE_SIZE - 1) &
		      ~(uintptr_t)(ZCR_HUGE_SIZE - 1);
	uintptr_t e = ((uintptr_t)dst + len) & ~(uintptr_t)(ZCR_HUGE_SIZE - 1);

	if (e > a)
		madvise((void *)a, e - a, MADV_DONTNEED);
}

/* The user's old pages, now at old, go back to dst (len bytes). */
static void user_restore(struct uffd_priv *u, char *dst, char *old,
			 size_t len)
{
	long r = uffd_move(u, dst, old, len);

	if (r < 0 && r == -EINVAL && user_register(u, dst, len) == 0)
		r = uffd_move(u, dst, old, len);
	if (r < 0)
		r = 0;
	/* Not movable back: copy (dst has holes there now). */
	if ((size_t)r < len)
		memcpy(dst + r, old + r, len - (size_t)r);
}

/*
 * First half of an exchange: the user's pages of [dst, dst + len) into the
 * empty spare sp at old (= sp + the slot offset). 0, or -errno with dst as
 * it was.
 */
static long evict(struct uffd_priv *u, char *dst, char *old, size_t len,
		  size_t cap)
{
	long a, b;

	a = uffd_move(u, old, dst, len);
	if (a == -EINVAL && user_register(u, dst, len) == 0) {
		/*
		 * The user's range lies in two VMAs (a move's source must lie
		 * in one): registering the 2 MiB units around another buffer
		 * split its mapping there. Registering this range too gives
		 * both parts the same flags, and the kernel merges them.
		 */
		a = uffd_move(u, old, dst, len);
	}
	if (a >= 0 && (size_t)a < len && errno == EEXIST) {
		/*
		 * Pages left in the spare outside the range its last exchange
		 * moved (a slot's head or tail, staged at another offset):
		 * drop them and go on.
		 */
		madvise(old + a, len - (size_t)a, MADV_DONTNEED);
		b = uffd_move(u, old + a, dst + a, len - (size_t)a);
		a += b > 0 ? b : 0;
	} else if (a == -EEXIST) {
		madvise(old, len, MADV_DONTNEED);
		a = uffd_move(u, old, dst, len);
	}
	if (a < 0)
		return a;
	if ((size_t)a < len) {
		/* Put back what left dst; nothing was delivered. */
		user_restore(u, dst, old, (size_t)a);
		return -EBUSY;
	}
	if (is_huge(cap))
		user_drop_tables(dst, len);
	return 0;
}

/*
 * An exchange of [off, off + len) of a slot of 2 MiB units is complete:
 * the spare sp, which holds the user's old pages there and nothing else,
 * becomes the slot. The old slot's other whole units (where the message's
 * head and tail were staged, and copied out) go over to sp first, each
 * one PMD move: dropped with the old slot, they were faulted in again at
 * the next landing at that offset, a new huge page zeroed per unit and
 * message. Units that [off, off + len) covers in part stay: moving them
 * would split a huge page. What does not move (sp has pages there) is
 * dropped as before.
 */
static void keep_units(struct uffd_priv *u, char *sp, char *old, size_t cap,
		       size_t off, size_t len)
{
	size_t a = off & ~(ZCR_HUGE_SIZE - 1);
	size_t e = (off + len + ZCR_HUGE_SIZE - 1) & ~(ZCR_HUGE_SIZE - 1);

	if (a)
		uffd_move(u, sp, old, a);
	if (e < cap)
		uffd_move(u, sp + e, old + e, cap - e);
}

/*
 * Second half: the slot's pages at off into dst, emptied by evict() into
 * the spare sp. Returns the bytes delivered (a prefix).
 */
static long fill(struct uffd_priv *u, char *dst, struct zcr_slot *s,
		 char *sp, size_t off, size_t len, bool tables)
{
	char *src = s->base + off, *old = sp + off;
	long b;

	b = uffd_move(u, dst, src, len);
	if (b == -EINVAL && user_register(u, dst, len) == 0)
		b = uffd_move(u, dst, src, len);
	if (b == (long)len) {
		/*
		 * The spare holds the user's old pages: it is the slot now.
		 * The old slot becomes a spare, holding nothing anyone needs
		 * (the message's head and tail were copied before the move)
		 * once its whole units are kept (keep_units()): dropped
		 * whole, mapped anew if it may keep page tables.
		 */
		if (is_huge(s->cap))
			keep_units(u, sp, s->base, s->cap, off, len);
		spare_drop(u, s->base, s->cap, tables);
		s->base = sp;
		return b;
	}
	if (b < 0)
		b = 0;
	/*
	 * Delivered a prefix only: the user's old pages of the rest go back
	 * (the engine copies the staged bytes over them, as into any
	 * receive buffer); the spare keeps nothing the user needs.
	 */
	user_restore(u, dst + b, old + b, len - (size_t)b);
	if (!is_huge(s->cap))
		madvise(old, len, MADV_DONTNEED);
	spare_drop(u, sp, s->cap, tables);
	return b;
}

static void uffd_unprepare(struct zcr_ctx *ctx, void *priv,
			   struct zcr_slot *s, bool abandoned)
{
	struct uffd_priv *u = priv;
	char *sp = s->prep;

	if (!sp)
		return;
	s->prep = NULL;
	/*
	 * A receive that will never complete: its buffer may have been freed
	 * and reused. A move into a range nothing was mapped into again
	 * changes nothing the application has; no registration, no copy.
	 */
	if (abandoned)
		uffd_move(u, s->prep_dst, sp + s->prep_off, s->prep_len);
	else
		user_restore(u, s->prep_dst, sp + s->prep_off, s->prep_len);
	if (!is_huge(s->cap))
		madvise(sp + s->prep_off, s->prep_len, MADV_DONTNEED);
	spare_drop(u, sp, s->cap,
		   may_keep_tables(ctx, s, s->prep_dst, s->prep_len));
}

/*
 * The receive is posted, the payload still lands in the slot: take the
 * user's pages out now, so that the landing only moves the slot's in.
 */
static int uffd_prepare(struct zcr_ctx *ctx, void *priv, void *dstp,
			struct zcr_slot *s, size_t off, size_t len)
{
	struct uffd_priv *u = priv;
	char *sp;
	long ret;

	if (s->prep)
		return -EBUSY;
	sp = spare_get(u, s->cap);
	if (!sp)
		return -ENOMEM;
	ret = evict(u, dstp, sp + off, len, s->cap);
	if (ret < 0) {
		/* Pages may have gone in and come back out. */
		spare_drop(u, sp, s->cap, may_keep_tables(ctx, s, dstp, len));
		return (int)ret;
	}
	s->prep = sp;
	s->prep_dst = dstp;
	s->prep_off = off;
	s->prep_len = len;
	return 0;
}

static long uffd_remap(struct zcr_ctx *ctx, void *priv, void *dstp,
		       struct zcr_slot *s, size_t off, size_t len)
{
	char *dst = dstp, *sp;
	int ret;

	if (s->prep && (s->prep_dst != dst || s->prep_off != off ||
			s->prep_len != len))
		uffd_unprepare(ctx, priv, s, false);	/* another range */
	if (!s->prep) {
		ret = uffd_prepare(ctx, priv, dstp, s, off, len);
		if (ret)
			return ret;
	}
	sp = s->prep;			/* the user's pages are out */
	s->prep = NULL;
	return fill(priv, dst, s, sp, off, len,
		    may_keep_tables(ctx, s, dst, len));
}

ZCR_REMAP_BACKEND(uffd) = {
	.size = sizeof(struct zcr_remap_ops),
	.name = "uffd-move",
	.alias = "uffd",
	.id = ZCRECV_BACKEND_UFFD,
	.priv_size = sizeof(struct uffd_priv),
	.init = uffd_init,
	.fini = uffd_fini,
	.unit = uffd_unit,
	.slot_size = uffd_slot_size,
	.slot_alloc = uffd_slot_alloc,
	.slot_free = uffd_slot_free,
	.eligible = uffd_eligible,
	.remap = uffd_remap,
	.prepare = uffd_prepare,
	.unprepare = uffd_unprepare,
};
