/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pagever.h - page versions: which pages of a range of the process's
 * memory changed between two looks (lib/pagever). The sender side of
 * message prefetching (lib/prefetch) uses them to pre-send the pages of a
 * send buffer that look final and to leave out of the real send the
 * pre-sent pages that did not change since. Mechanisms and their costs:
 * Documentation/prefetch.md.
 *
 * The contract every mechanism keeps, and the tests check:
 *
 *   If any byte of page i of a tracked range changes after
 *   __zcr_pv_read() returned ver[i] = v, by any means the process or the
 *   kernel uses (a store, a system call writing the page, the page
 *   unmapped and mapped again, MADV_DONTNEED), then every later
 *   __zcr_pv_read() of that page returns a value other than v.
 *
 * The converse need not hold: a version may change although no byte did
 * (that costs a page sent twice, never a wrong byte; a THP written
 * anywhere may change all its 512 pages). Versions are only compared for
 * equality. ZCR_PV_HASH keeps the contract in the form the caller relies
 * on: its version is a hash of the page's bytes, so equal versions mean
 * equal bytes (up to a 2^-64 collision per changed page), even if a page
 * was changed and changed back in between. Writes the mechanism cannot see (a page moved
 * into the range by the library's remap backend, a device or RDMA write)
 * are reported with __zcr_pv_bump().
 *
 * Not thread-safe by itself: the library calls it under ctx->lock; a
 * mechanism's own fault handler (a thread, a signal) is its business.
 */
#ifndef ZCR_PAGEVER_H
#define ZCR_PAGEVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum zcr_pv_mech {
	ZCR_PV_AUTO = 0,	/* the cheapest one that works here */
	ZCR_PV_UFFD_ASYNC,	/* userfaultfd WP_ASYNC + PAGEMAP_SCAN */
	ZCR_PV_UFFD_SYNC,	/* userfaultfd write-protect, handler thread */
	ZCR_PV_MPROTECT,	/* mprotect + SIGSEGV: only when asked for */
	ZCR_PV_HASH,		/* a 64-bit hash of each page's contents */
	ZCR_PV_KMOD,		/* zcrecv.ko's versions of a versioned zone */
	ZCR_PV_NMECH
};

struct zcr_pv;		/* one tracker */
struct zcr_pv_range;	/* one tracked range */

/*
 * Open a tracker using @mech (ZCR_PV_AUTO: choose). Returns 0, or
 * -EOPNOTSUPP when that mechanism does not work on this kernel, or
 * another -errno.
 */
int __zcr_pv_open(struct zcr_pv **pvp, enum zcr_pv_mech mech);
/*
 * The same, given the context's /dev/zcrecv (@kmod_fd, or -1): ZCR_PV_KMOD
 * needs it (and a module with ZCRECV_FEATURE_PAGEVER), and ZCR_PV_AUTO
 * then tracks each range that lies in a ZCRECV_ZONE_PAGEVER zone of that
 * file with the module's versions, any other with the mechanism it chose.
 */
int __zcr_pv_open_kmod(struct zcr_pv **pvp, enum zcr_pv_mech mech,
		       int kmod_fd);
/* Stop tracking every range (protections undone) and free. NULL: nothing. */
void __zcr_pv_close(struct zcr_pv *pv);
enum zcr_pv_mech __zcr_pv_mech(const struct zcr_pv *pv);
/* The mechanism serving one range (under AUTO: kmod or the tracker's). */
enum zcr_pv_mech __zcr_pv_range_mech(const struct zcr_pv_range *r);
/* Whether the tracker uses zcrecv.ko's versions (ZCR_PV_KMOD or AUTO). */
bool __zcr_pv_kmod(const struct zcr_pv *pv);
const char *__zcr_pv_mech_name(enum zcr_pv_mech mech);

/*
 * Track the pages covering [addr, addr + len) (len > 0; the range is
 * widened to whole pages). Returns 0 and *rp, or -errno: -EBUSY when the
 * memory cannot be tracked by this mechanism because something else owns
 * it (another userfaultfd, such as the uffd-move backend's registration
 * of a receive buffer) or a range of this tracker already covers one of
 * its pages (uffd mechanisms), -ENOMEM when part of it is not mapped,
 * -EINVAL for a mapping kind the mechanism does not serve (ZCR_PV_KMOD:
 * anything but one run of a versioned zone of the tracker's file).
 */
int __zcr_pv_track(struct zcr_pv *pv, const void *addr, size_t len,
		   struct zcr_pv_range **rp);
void __zcr_pv_untrack(struct zcr_pv *pv, struct zcr_pv_range *r);
/* Number of pages of the range: the length of ver[] below. */
size_t __zcr_pv_npages(const struct zcr_pv_range *r);

/*
 * The current version of every page of @r into ver[0 .. npages), and arm
 * the tracking so that the contract above holds from the return on.
 * Returns 0, or -errno when the versions cannot be trusted any more (the
 * range was unmapped: -ENOMEM; unmapped and mapped again: -EPERM or
 * -ENOENT; a forked child reading its parent's tracker: -ECHILD; a read
 * after one failed: -ESTALE): the caller must then treat every page as
 * changed and untrack the range.
 */
int __zcr_pv_read(struct zcr_pv *pv, struct zcr_pv_range *r, uint64_t *ver);

/* Pages of [addr, addr + len) changed behind the mechanism's back. */
void __zcr_pv_bump(struct zcr_pv *pv, const void *addr, size_t len);

#endif /* ZCR_PAGEVER_H */
