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
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/zcrecv.h>

#define ZCRECV_DEV		"/dev/" ZCRECV_DEVICE_NAME
#define ZCRECV_COUNTER_DIR	"/sys/class/misc/zcrecv/counters/"
#define ZCRECV_PARAM_DIR	"/sys/module/zcrecv/parameters/"

/* Read a number from DIR/NAME in sysfs; -1 when it cannot be read. */
static inline long long zcrecv_sysfs_read(const char *dir, const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* One module counter, or -1. */
static inline long long zcrecv_counter(const char *name)
{
	return zcrecv_sysfs_read(ZCRECV_COUNTER_DIR, name);
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

/* A zone mapped into this process. */
struct zcrecv_zone_map {
	char *addr;
	size_t len;
	__u64 id;
	__u64 offset;
};

static inline long zcrecv_page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

/* Create a zone of @pages pages with ZCRECV_ZONE_* @flags and map it. */
static inline int zcrecv_zone_map_flags(int fd, __u64 pages, __u32 flags,
					struct zcrecv_zone_map *z)
{
	struct zcrecv_zone_create zc;
	void *p;
	int ret;

	memset(z, 0, sizeof(*z));
	memset(&zc, 0, sizeof(zc));
	zc.pages = pages;
	zc.flags = flags;
	ret = zcrecv_ioctl(fd, ZCRECV_IOC_ZONE_CREATE, &zc);
	if (ret)
		return ret;
	z->len = pages * zcrecv_page_size();
	p = mmap(NULL, z->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 zc.out_offset);
	if (p == MAP_FAILED)
		return -errno;
	z->addr = p;
	z->id = zc.out_zone_id;
	z->offset = zc.out_offset;
	return 0;
}

/* Create a zone of @pages pages and map it; returns 0 or -errno. */
static inline int zcrecv_zone_map(int fd, __u64 pages,
				  struct zcrecv_zone_map *z)
{
	return zcrecv_zone_map_flags(fd, pages, 0, z);
}

static inline void zcrecv_zone_unmap(struct zcrecv_zone_map *z)
{
	if (z->addr)
		munmap(z->addr, z->len);
	z->addr = NULL;
}

/* One-entry or multi-entry remap; fills *r (may be NULL). */
static inline int zcrecv_remap(int fd, struct zcrecv_remap_entry *e,
			       __u32 count, __u32 flags, struct zcrecv_remap *r)
{
	struct zcrecv_remap req;
	int ret;

	memset(&req, 0, sizeof(req));
	req.entries = (__u64)(uintptr_t)e;
	req.count = count;
	req.flags = flags;
	ret = zcrecv_ioctl(fd, ZCRECV_IOC_REMAP, &req);
	if (r)
		*r = req;
	return ret;
}

static inline int zcrecv_remap1(int fd, void *src, void *dst, size_t len)
{
	struct zcrecv_remap_entry e = {
		.src = (__u64)(uintptr_t)src,
		.dst = (__u64)(uintptr_t)dst,
		.len = len,
	};

	return zcrecv_remap(fd, &e, 1, 0, NULL);
}

/* Fill a page with a pattern derived from a seed; check it back. */
static inline void zcrecv_fill(void *p, size_t len, unsigned int seed)
{
	unsigned int *w = p;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		w[i] = seed * 2654435761u + (unsigned int)i;
}

static inline int zcrecv_check(const void *p, size_t len, unsigned int seed)
{
	const unsigned int *w = p;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		if (w[i] != seed * 2654435761u + (unsigned int)i)
			return 0;
	return 1;
}

/* n pages from base, page i filled (or checked) with seed + i. */
static inline void zcrecv_fill_pages(char *base, long page, size_t n,
				     unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		zcrecv_fill(base + i * page, page, seed + i);
}

static inline int zcrecv_check_pages(const char *base, long page, size_t n,
				     unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!zcrecv_check(base + i * page, page, seed + i))
			return 0;
	return 1;
}

/*
 * /proc/self/pagemap entries of @n pages from @addr: bit 63 says present,
 * bits 0-54 hold the page frame number (readable by root only, else 0).
 * Reading it does not fault the pages in. Returns 0 or -errno.
 */
#define ZCRECV_PM_PRESENT	(1ULL << 63)
#define ZCRECV_PM_PFN_MASK	((1ULL << 55) - 1)

static inline int zcrecv_pagemap(const void *addr, size_t n, uint64_t *out)
{
	long page = sysconf(_SC_PAGESIZE);
	off_t off = (off_t)((uintptr_t)addr / page) * sizeof(*out);
	size_t len = n * sizeof(*out);
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = pread(fd, out, len, off);
	close(fd);
	if (r < 0)
		return -errno;
	return (size_t)r == len ? 0 : -EIO;
}

/* A "Name:   N kB" line of /proc/self/status, in kB; -1 if missing. */
static inline long zcrecv_status_kb(const char *name)
{
	char line[256];
	size_t n = strlen(name);
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

/* Zones, allocated pages and freed pages must balance after a test. */
struct zcrecv_leak_check {
	long long zones_live;
	long long alloc_minus_freed;
	long long reserved;
	long long pagever_arrays;	/* -1 on a module without them */
};

static inline void zcrecv_leak_snapshot(struct zcrecv_leak_check *c)
{
	c->zones_live = zcrecv_counter("zones_live");
	c->alloc_minus_freed = zcrecv_counter("pages_allocated") -
			       zcrecv_counter("pages_freed");
	c->reserved = zcrecv_counter("pages_reserved");
	c->pagever_arrays = zcrecv_counter("pagever_arrays");
}

static inline int zcrecv_leak_same(const struct zcrecv_leak_check *a)
{
	struct zcrecv_leak_check b;

	zcrecv_leak_snapshot(&b);
	return a->zones_live == b.zones_live &&
	       a->alloc_minus_freed == b.alloc_minus_freed &&
	       a->reserved == b.reserved &&
	       a->pagever_arrays == b.pagever_arrays;
}

/* Path of zcrecv.ko for reload tests (the VM runner sets ZCRECV_KO). */
static inline const char *zcrecv_ko(void)
{
	return getenv("ZCRECV_KO");
}

/* insmod the module from ZCRECV_KO with parameters ARGS ("" for none). */
static inline int zcrecv_insmod_args(const char *args)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "insmod %s %s 2>/dev/null", zcrecv_ko(),
		 args);
	return system(cmd);
}

/* insmod the module from ZCRECV_KO again; the exit status of insmod. */
static inline int zcrecv_insmod(void)
{
	return zcrecv_insmod_args("");
}

/* A module parameter (sysfs), or -1. */
static inline long long zcrecv_param(const char *name)
{
	return zcrecv_sysfs_read(ZCRECV_PARAM_DIR, name);
}

/* Write a module parameter; 0 or -errno (EINVAL when out of range). */
static inline int zcrecv_param_write(const char *name, long long v)
{
	char path[256], buf[32];
	int fd, n, ret = 0;

	snprintf(path, sizeof(path), ZCRECV_PARAM_DIR "%s", name);
	n = snprintf(buf, sizeof(buf), "%lld\n", v);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

#endif /* ZCRECV_UTIL_H */
