/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pv_int.h - what the mechanisms of lib/pagever share (pagever.c keeps the
 * trackers and ranges and dispatches; uffd_async.c, uffd_sync.c and
 * hash.c each fill one struct zcr_pv_ops). Private to lib/pagever.
 */
#ifndef ZCR_PV_INT_H
#define ZCR_PV_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pagever/pagever.h"

#define ZCR_PV_PAGE	4096UL

/**
 * struct zcr_pv_range - one tracked range
 * @start:	first byte of the first page
 * @npages:	pages tracked
 * @ver:	the uffd mechanisms' versions, one per page, bumped when a
 *		page was seen written; hash: a per-page seed bumped by
 *		__zcr_pv_bump()
 * @dead:	the mechanism can no longer vouch (every read fails)
 * @ops:	the mechanism serving it: the tracker's, or under ZCR_PV_AUTO
 *		the module's for a range of a versioned zone
 * @priv:	that mechanism's state of the range (kmod)
 * @next:	the tracker's list
 */
struct zcr_pv_range {
	uintptr_t start;
	size_t npages;
	uint64_t *ver;
	bool dead;
	const struct zcr_pv_ops *ops;
	void *priv;
	struct zcr_pv_range *next;
};

struct zcr_pv;

/*
 * struct zcr_pv_ops - one mechanism. open fills pv->priv (or returns
 * -EOPNOTSUPP when the kernel lacks it); track arms a new range (its
 * ver[] zeroed); untrack undoes the protection; read fills ver[] as
 * pagever.h says.
 */
struct zcr_pv_ops {
	enum zcr_pv_mech mech;
	const char *name;
	int (*open)(struct zcr_pv *pv);
	void (*close)(struct zcr_pv *pv);
	int (*track)(struct zcr_pv *pv, struct zcr_pv_range *r);
	void (*untrack)(struct zcr_pv *pv, struct zcr_pv_range *r);
	int (*read)(struct zcr_pv *pv, struct zcr_pv_range *r, uint64_t *ver);
};

/*
 * struct zcr_pv - one tracker. @pid: the process that opened it: the uffd
 * mechanisms' descriptors (/proc/self/pagemap opened then) keep naming
 * that process's memory in a child after fork. @kmod: zcrecv.ko's page
 * versions (kmod.c), when the tracker was given /dev/zcrecv and the module
 * keeps them: the mechanism of ZCR_PV_KMOD, and under ZCR_PV_AUTO the one
 * tried first for each range.
 */
struct zcr_pv {
	const struct zcr_pv_ops *ops;
	int pid;
	struct zcr_pv_range *ranges;
	void *priv;
	void *kmod;
	bool auto_kmod;
};

extern const struct zcr_pv_ops __zcr_pv_uffd_async_ops;
extern const struct zcr_pv_ops __zcr_pv_uffd_sync_ops;
extern const struct zcr_pv_ops __zcr_pv_hash_ops;
extern const struct zcr_pv_ops __zcr_pv_kmod_ops;

/*
 * zcrecv.ko's versions (kmod.c): attach to the device @kmod_fd (the file
 * whose zones will be tracked; duplicated) if the module keeps page
 * versions (-EOPNOTSUPP otherwise); detach undoes it.
 */
int __zcr_pv_kmod_attach(struct zcr_pv *pv, int kmod_fd);
void __zcr_pv_kmod_detach(struct zcr_pv *pv);

/*
 * userfaultfd write-protect (uffd_wp.c): protect (or lift) a range,
 * VMA by VMA where the kernel needs it; register a range in
 * write-protect mode (-EBUSY: another uffd has it); lift and unregister.
 */
int __zcr_pv_uffd_wp(int fd, uint64_t start, uint64_t len, bool protect);
int __zcr_pv_uffd_register(int fd, uint64_t start, uint64_t len);
void __zcr_pv_uffd_release(int fd, uint64_t start, uint64_t len);

/* 0 when every page of [start, start + len) is mapped, else -ENOMEM. */
int __zcr_pv_mapped(uintptr_t start, size_t len);

/* The 64-bit hash of one 4 KiB page, seeded. */
uint64_t __zcr_pv_hash_page(const void *page, uint64_t seed);
uint64_t __zcr_pv_hash_page_scalar(const void *page, uint64_t seed);

#endif /* ZCR_PV_INT_H */
