// SPDX-License-Identifier: GPL-2.0
/*
 * zcrecv_huge_test - kselftests of huge zones (ZCRECV_ZONE_HUGE, 2 MiB
 * units): the handshake's feature bit and unit size, create and mmap rules,
 * first touch (one zeroed, physically contiguous unit, mapped whole by
 * one PMD: FilePmdMapped in smaps), exchanges of one and many units both
 * ways with stamped data and swapped page frames, dst mapped right after
 * the exchange (pagemap, not fault counting) and by one PMD again (by PTEs
 * where MADV_NOHUGEPAGE forbids the PMD), readers on another thread during
 * exchanges seeing whole units only, 4 KiB against huge zones and partial units refused with EINVAL,
 * pinned units refused with EBUSY (vmsplice, io_uring), teardown by munmap,
 * close, fork and exit, and an allocation failure (a full memory cgroup)
 * ending in EFAULT from MADV_POPULATE_WRITE and SIGBUS on access, without a
 * kernel warning. Every fixture test ends with
 * the module's counters balanced. Run in the VM (make test).
 */
#include <linux/io_uring.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "zcrecv_util.h"

#define NUNITS		4	/* units per zone in the fixture */

FIXTURE(huge) {
	int fd;
	long page;
	size_t unit;		/* bytes */
	unsigned long upages;	/* pages per unit */
	struct zcrecv_zone_map a, b;
	struct zcrecv_leak_check before;
};

FIXTURE_SETUP(huge)
{
	struct zcrecv_api api;

	self->a.addr = self->b.addr = NULL;
	self->page = zcrecv_page_size();
	self->fd = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s missing: zcrecv.ko not loaded", ZCRECV_DEV);
	ASSERT_LE(0, self->fd);
	zcrecv_leak_snapshot(&self->before);
	ASSERT_EQ(0, zcrecv_handshake(self->fd, &api));
	if (!(api.out_features & ZCRECV_FEATURE_HUGE))
		SKIP(return, "module without ZCRECV_FEATURE_HUGE");
	self->unit = api.out_huge_unit_size;
	self->upages = self->unit / self->page;
	ASSERT_EQ(0, zcrecv_zone_map_flags(self->fd, NUNITS * self->upages,
					   ZCRECV_ZONE_HUGE, &self->a));
	ASSERT_EQ(0, zcrecv_zone_map_flags(self->fd, NUNITS * self->upages,
					   ZCRECV_ZONE_HUGE, &self->b));
}

FIXTURE_TEARDOWN(huge)
{
	if (self->fd < 0)
		return;
	zcrecv_zone_unmap(&self->a);
	zcrecv_zone_unmap(&self->b);
	close(self->fd);
	EXPECT_TRUE(zcrecv_leak_same(&self->before));
}

/* How many of n pages from addr have a present page-table entry. */
static size_t present(const void *addr, size_t n)
{
	uint64_t *pm = calloc(n, sizeof(*pm));
	size_t i, c = 0;

	if (!pm || zcrecv_pagemap(addr, n, pm)) {
		free(pm);
		return (size_t)-1;
	}
	for (i = 0; i < n; i++)
		c += !!(pm[i] & ZCRECV_PM_PRESENT);
	free(pm);
	return c;
}

/*
 * The first frame of the unit at addr if its n pages are mapped by one
 * naturally aligned run of frames, 0 if pagemap hides frames (no
 * CAP_SYS_ADMIN), -1 if they are not one block.
 */
static long long unit_pfn(const void *addr, size_t n)
{
	uint64_t *pm = calloc(n, sizeof(*pm));
	long long pfn = -1;
	size_t i;

	if (!pm || zcrecv_pagemap(addr, n, pm))
		goto out;
	pfn = pm[0] & ZCRECV_PM_PFN_MASK;
	if (!pfn)
		goto out;
	for (i = 0; i < n; i++)
		if (!(pm[i] & ZCRECV_PM_PRESENT) ||
		    (pm[i] & ZCRECV_PM_PFN_MASK) != (uint64_t)pfn + i)
			pfn = -1;
	if (pfn > 0 && pfn % n)
		pfn = -1;
out:
	free(pm);
	return pfn;
}

/* Stamp (or check) len bytes at p, page by page, from seed on. */
static void stamp(char *p, size_t len, long page, unsigned int seed)
{
	zcrecv_fill_pages(p, page, len / page, seed);
}

static int stamped(const char *p, size_t len, long page, unsigned int seed)
{
	return zcrecv_check_pages(p, page, len / page, seed);
}

TEST_F(huge, populate_allocates_every_unit)
{
	long long alloc = zcrecv_counter("pages_allocated");

	ASSERT_EQ(0, madvise(self->a.addr, self->a.len, MADV_POPULATE_WRITE));
	EXPECT_EQ(alloc + NUNITS * (long long)self->upages,
		  zcrecv_counter("pages_allocated"));
	EXPECT_EQ(NUNITS * self->upages, present(self->a.addr,
						 NUNITS * self->upages));
}

TEST_F(huge, handshake_reports_feature_and_unit)
{
	struct zcrecv_api api;

	ASSERT_EQ(0, zcrecv_handshake(self->fd, &api));
	EXPECT_TRUE(api.out_features & ZCRECV_FEATURE_HUGE);
	/* one PMD's worth of pages: 2 MiB with 4 KiB pages */
	EXPECT_EQ((size_t)self->page * (self->page / 8), api.out_huge_unit_size);
	EXPECT_EQ(0, api.reserved[0]);
}

TEST_F(huge, create_rules)
{
	struct zcrecv_zone_create zc;
	struct zcrecv_zone_map z;

	memset(&zc, 0, sizeof(zc));
	zc.flags = ZCRECV_ZONE_HUGE;
	zc.pages = self->upages - 1;
	EXPECT_EQ(-EINVAL, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	zc.pages = self->upages + 1;
	EXPECT_EQ(-EINVAL, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	zc.pages = self->upages;
	zc.flags = ZCRECV_ZONE_HUGE | 4;	/* no such flag */
	EXPECT_EQ(-EINVAL, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	zc.flags = 0x80000000u;
	EXPECT_EQ(-EINVAL, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	/* the fixture's zones: unit-aligned offsets and addresses */
	EXPECT_EQ(0, self->a.offset % self->unit);
	EXPECT_EQ(0, (uintptr_t)self->a.addr % self->unit);
	EXPECT_EQ(0, (uintptr_t)self->b.addr % self->unit);
	/* one unit is the smallest huge zone; nothing allocated yet */
	ASSERT_EQ(0, zcrecv_zone_map_flags(self->fd, self->upages,
					   ZCRECV_ZONE_HUGE, &z));
	EXPECT_EQ(0, (uintptr_t)z.addr % self->unit);
	EXPECT_EQ(0, present(z.addr, self->upages));
	zcrecv_zone_unmap(&z);
}

/* Offset of a huge zone of @pages pages, created, mapped and unmapped. */
static __u64 short_lived_offset(int fd, unsigned long pages)
{
	struct zcrecv_zone_map z;

	if (zcrecv_zone_map_flags(fd, pages, ZCRECV_ZONE_HUGE, &z))
		return 0;
	zcrecv_zone_unmap(&z);
	return z.offset;
}

/*
 * Huge zones take their offset windows from the same allocator as 4 KiB
 * zones: reused after the zone is freed, still unit aligned, also for the
 * largest zone max_zone_pages allows.
 */
TEST_F(huge, offsets_unit_aligned_and_reused)
{
	long long most = zcrecv_param("max_zone_pages");
	long long room = zcrecv_param("max_process_pages") -
			 2LL * NUNITS * self->upages;	/* the fixture's */
	__u64 first;
	int i;

	first = short_lived_offset(self->fd, self->upages);
	ASSERT_NE(0, first);
	EXPECT_EQ(0, first % self->unit);
	for (i = 0; i < 16; i++)
		EXPECT_EQ(first, short_lived_offset(self->fd, self->upages));
	/* the fixture's zones (4 units) are elsewhere, and aligned too */
	EXPECT_NE(first, self->a.offset);
	EXPECT_EQ(0, self->b.offset % self->unit);

	/* the largest zone the window allocator must serve */
	if (most > room)
		most = room;
	most -= most % self->upages;
	ASSERT_LT(0, most);
	first = short_lived_offset(self->fd, most);
	ASSERT_NE(0, first);
	EXPECT_EQ(0, first % self->unit);
	EXPECT_EQ(first, short_lived_offset(self->fd, most));
}

TEST_F(huge, mmap_must_cover_the_zone)
{
	struct zcrecv_zone_create zc;
	void *p;

	memset(&zc, 0, sizeof(zc));
	zc.flags = ZCRECV_ZONE_HUGE;
	zc.pages = 2 * self->upages;
	ASSERT_EQ(0, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	p = mmap(NULL, self->unit, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, zc.out_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* never mapped: freed when the file is closed (teardown checks) */
}

/*
 * FilePmdMapped of the mapping that holds addr, in kB (/proc/self/smaps),
 * or -1 if there is no such line (a kernel without transparent huge pages).
 */
static long pmd_mapped_kb(const void *addr)
{
	unsigned long lo, hi, a = (unsigned long)addr;
	char line[256];
	long kb = -1;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = a >= lo && a < hi;
			continue;
		}
		if (in && sscanf(line, "FilePmdMapped: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

TEST_F(huge, units_are_mapped_by_one_pmd_each)
{
	char *src = self->a.addr, *dst = self->b.addr;
	long kb = (long)(self->unit >> 10);
	struct zcrecv_remap_entry e = {
		.src = (__u64)(uintptr_t)dst,
		.dst = (__u64)(uintptr_t)(src + self->unit),
		.len = self->unit,
	};
	struct zcrecv_remap r;

	if (pmd_mapped_kb(src) < 0)
		SKIP(return, "no FilePmdMapped in smaps (no THP in this kernel)");
	if (prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1)
		SKIP(return, "THP disabled for this process (PR_SET_THP_DISABLE)");
	EXPECT_EQ(0, pmd_mapped_kb(src));
	stamp(src, 2 * self->unit, self->page, 300);
	stamp(dst, self->unit, self->page, 400);
	EXPECT_EQ(2 * kb, pmd_mapped_kb(src));
	EXPECT_EQ(kb, pmd_mapped_kb(dst));
	/* an exchange maps both sides again, by PMD */
	ASSERT_EQ(0, zcrecv_remap1(self->fd, src + self->unit, dst, self->unit));
	EXPECT_EQ(2 * kb, pmd_mapped_kb(src));
	EXPECT_EQ(kb, pmd_mapped_kb(dst));
	EXPECT_TRUE(stamped(dst, self->unit, self->page, 300 + self->upages));
	EXPECT_TRUE(stamped(src + self->unit, self->unit, self->page, 400));
	/* without prefault the next access maps the unit, by PMD too */
	ASSERT_EQ(0, zcrecv_remap(self->fd, &e, 1, ZCRECV_REMAP_NO_PREFAULT,
				  &r));
	EXPECT_EQ(kb, pmd_mapped_kb(src));
	EXPECT_EQ(0, pmd_mapped_kb(dst));
	EXPECT_TRUE(stamped(src + self->unit, self->unit, self->page,
			    300 + self->upages));
	EXPECT_TRUE(stamped(dst, self->unit, self->page, 400));
	EXPECT_EQ(2 * kb, pmd_mapped_kb(src));
	EXPECT_EQ(kb, pmd_mapped_kb(dst));
}

/*
 * Where a unit cannot be one PMD (THP off for the mapping: MADV_NOHUGEPAGE,
 * which 6.12 honours for file THPs and 6.1 does not), it is still mapped
 * whole after an exchange, page by page, with the right data.
 */
TEST_F(huge, nohugepage_part_still_mapped_whole_after_exchange)
{
	char *src = self->a.addr, *dst = self->b.addr;

	stamp(src, self->unit, self->page, 800);
	stamp(dst, 2 * self->unit, self->page, 900);
	if (madvise(dst, self->unit, MADV_NOHUGEPAGE) && errno == EINVAL)
		SKIP(return, "no MADV_NOHUGEPAGE (no THP in this kernel)");
	ASSERT_EQ(0, zcrecv_remap1(self->fd, src, dst, self->unit));
	EXPECT_EQ(self->upages, present(dst, self->upages));
	EXPECT_EQ(self->upages, present(src, self->upages));
	EXPECT_TRUE(stamped(dst, self->unit, self->page, 800));
	EXPECT_TRUE(stamped(src, self->unit, self->page, 900));
	EXPECT_TRUE(stamped(dst + self->unit, self->unit, self->page,
			    900 + self->upages));
	ASSERT_EQ(0, zcrecv_remap1(self->fd, dst, src, self->unit));
	EXPECT_TRUE(stamped(src, self->unit, self->page, 800));
	EXPECT_TRUE(stamped(dst, self->unit, self->page, 900));
}

/*
 * A reader on another thread while units go back and forth: the first
 * word of every page it reads is that page's word of one of the two units
 * (read as one load: a page read byte by byte may straddle an exchange,
 * as it could straddle a copy), never a zero or a stale unit's (a fault
 * never maps a unit that an exchange is moving away). Every other
 * exchange leaves dst unmapped (ZCRECV_REMAP_NO_PREFAULT), so that the
 * reader's own faults race the next exchange too.
 */
struct reader {
	const char *p;
	size_t len;
	long page;
	uint64_t tag_a, tag_b;
	volatile int stop;
	unsigned long reads, bad;
};

static void tag_pages(char *p, size_t len, long page, uint64_t tag)
{
	size_t i;

	for (i = 0; i < len / page; i++)
		*(uint64_t *)(p + i * page) = tag << 32 | i;
}

static bool tagged(const char *p, size_t len, long page, uint64_t tag)
{
	size_t i;

	for (i = 0; i < len / page; i++)
		if (*(const uint64_t *)(p + i * page) != (tag << 32 | i))
			return false;
	return true;
}

static void *read_units(void *arg)
{
	struct reader *r = arg;
	size_t n = r->len / r->page, i;

	while (!r->stop) {
		for (i = 0; i < n; i++) {
			uint64_t w = __atomic_load_n((const uint64_t *)
						     (r->p + i * r->page),
						     __ATOMIC_RELAXED);

			if (w != (r->tag_a << 32 | i) &&
			    w != (r->tag_b << 32 | i))
				r->bad++;
			r->reads++;
		}
	}
	return NULL;
}

TEST_F(huge, readers_during_exchanges_see_whole_units)
{
	struct reader rd = {
		.p = self->b.addr, .len = self->unit, .page = self->page,
		.tag_a = 0xa, .tag_b = 0xb,
	};
	char *src = self->a.addr, *dst = self->b.addr;
	int i, failed = 0, wrong = 0;
	struct zcrecv_remap_entry e;
	struct zcrecv_remap r;
	time_t end = time(NULL) + 30;
	pthread_t t;

	tag_pages(src, self->unit, self->page, 0xb);
	tag_pages(dst, self->unit, self->page, 0xa);
	ASSERT_EQ(0, pthread_create(&t, NULL, read_units, &rd));
	/*
	 * 200 exchanges, and more until the reader has run at all: on a
	 * loaded host a TCG guest once did all 200 before it was scheduled.
	 */
	for (i = 0; (i < 200 || (!__atomic_load_n(&rd.reads, __ATOMIC_RELAXED) &&
				 time(NULL) < end)) && !failed && !wrong; i++) {
		e = (struct zcrecv_remap_entry){
			.src = (__u64)(uintptr_t)src,
			.dst = (__u64)(uintptr_t)dst, .len = self->unit,
		};
		failed = zcrecv_remap(self->fd, &e, 1,
				      i % 2 ? ZCRECV_REMAP_NO_PREFAULT : 0, &r);
		if (!failed)
			wrong = !tagged(dst, self->unit, self->page,
					i % 2 ? 0xa : 0xb) ||
				!tagged(src, self->unit, self->page,
					i % 2 ? 0xb : 0xa);
	}
	/* the reader stops before anything is checked: teardown unmaps */
	rd.stop = 1;
	pthread_join(t, NULL);
	TH_LOG("%lu page reads during %d exchanges", rd.reads, i);
	EXPECT_EQ(0, failed);
	EXPECT_EQ(0, wrong);
	EXPECT_EQ(0, rd.bad);
	EXPECT_LT(0, rd.reads);
}

TEST_F(huge, first_touch_maps_one_zeroed_unit)
{
	long long alloc = zcrecv_counter("pages_allocated");
	char *u1 = self->a.addr + self->unit;
	size_t i;

	/* one byte in the middle of unit 1 */
	EXPECT_EQ(0, u1[self->unit / 2 + 5]);
	EXPECT_EQ(alloc + (long long)self->upages,
		  zcrecv_counter("pages_allocated"));
	/* the whole unit is mapped by that one fault, its neighbours not */
	EXPECT_EQ(self->upages, present(u1, self->upages));
	EXPECT_EQ(0, present(self->a.addr, self->upages));
	EXPECT_EQ(0, present(u1 + self->unit, self->upages));
	EXPECT_NE(-1, unit_pfn(u1, self->upages));
	for (i = 0; i < self->unit; i += sizeof(long))
		ASSERT_EQ(0, *(long *)(u1 + i));
}

TEST_F(huge, exchange_one_unit_both_ways)
{
	long long exch = zcrecv_counter("pages_exchanged");
	char *src = self->a.addr + 2 * self->unit;
	char *dst = self->b.addr + self->unit;
	long long ps, pd, alloc;
	struct zcrecv_remap_entry e = {
		.src = (__u64)(uintptr_t)src, .dst = (__u64)(uintptr_t)dst,
		.len = self->unit,
	};
	struct zcrecv_remap r;

	stamp(src, self->unit, self->page, 100);
	stamp(dst, self->unit, self->page, 9000);
	ps = unit_pfn(src, self->upages);
	pd = unit_pfn(dst, self->upages);
	ASSERT_NE(-1, ps);
	ASSERT_NE(-1, pd);
	alloc = zcrecv_counter("pages_allocated");
	ASSERT_EQ(0, zcrecv_remap(self->fd, &e, 1, 0, &r));
	EXPECT_EQ(self->upages, r.out_pages);
	EXPECT_EQ(exch + (long long)self->upages,
		  zcrecv_counter("pages_exchanged"));
	/*
	 * Both ranges mapped again at once: dst needs no fault, and the
	 * unit src got stays in the process's RSS.
	 */
	EXPECT_EQ(self->upages, present(dst, self->upages));
	EXPECT_EQ(self->upages, present(src, self->upages));
	/* the frames moved, as one block each */
	if (ps > 0) {
		EXPECT_EQ(ps, unit_pfn(dst, self->upages));
	}
	EXPECT_TRUE(stamped(dst, self->unit, self->page, 100));
	EXPECT_TRUE(stamped(src, self->unit, self->page, 9000));
	if (pd > 0) {
		EXPECT_EQ(pd, unit_pfn(src, self->upages));
	}
	/* and back */
	ASSERT_EQ(0, zcrecv_remap1(self->fd, dst, src, self->unit));
	EXPECT_TRUE(stamped(src, self->unit, self->page, 100));
	EXPECT_TRUE(stamped(dst, self->unit, self->page, 9000));
	EXPECT_EQ(alloc, zcrecv_counter("pages_allocated"));
}

TEST_F(huge, exchange_many_units_in_a_batch)
{
	struct zcrecv_remap_entry e[3];
	struct zcrecv_remap r;
	size_t u = self->unit;

	stamp(self->a.addr, NUNITS * u, self->page, 1);
	stamp(self->b.addr, NUNITS * u, self->page, 50000);
	/* a0-a1 <-> b2-b3 in one entry, a2 <-> b0, a3 <-> b1 */
	e[0] = (struct zcrecv_remap_entry){
		.src = (__u64)(uintptr_t)self->a.addr,
		.dst = (__u64)(uintptr_t)(self->b.addr + 2 * u), .len = 2 * u };
	e[1] = (struct zcrecv_remap_entry){
		.src = (__u64)(uintptr_t)(self->a.addr + 2 * u),
		.dst = (__u64)(uintptr_t)self->b.addr, .len = u };
	e[2] = (struct zcrecv_remap_entry){
		.src = (__u64)(uintptr_t)(self->a.addr + 3 * u),
		.dst = (__u64)(uintptr_t)(self->b.addr + u), .len = u };
	ASSERT_EQ(0, zcrecv_remap(self->fd, e, 3, 0, &r));
	EXPECT_EQ(3, r.out_done);
	EXPECT_EQ(NUNITS * self->upages, r.out_pages);
	EXPECT_EQ(NUNITS * self->upages, present(self->b.addr,
						 NUNITS * self->upages));
	EXPECT_TRUE(stamped(self->b.addr + 2 * u, 2 * u, self->page, 1));
	EXPECT_TRUE(stamped(self->b.addr, u, self->page, 1 + 2 * self->upages));
	EXPECT_TRUE(stamped(self->b.addr + u, u, self->page,
			    1 + 3 * self->upages));
	EXPECT_TRUE(stamped(self->a.addr, 2 * u, self->page,
			    50000 + 2 * self->upages));
	EXPECT_TRUE(stamped(self->a.addr + 2 * u, u, self->page, 50000));
	EXPECT_TRUE(stamped(self->a.addr + 3 * u, u, self->page,
			    50000 + self->upages));
	/* whole zones in one entry (a = a2 a3 a0 a1), then within a zone */
	EXPECT_EQ(0, zcrecv_remap1(self->fd, self->a.addr, self->b.addr,
				   NUNITS * u));
	EXPECT_EQ(0, zcrecv_remap1(self->fd, self->a.addr, self->a.addr + 2 * u,
				   2 * u));
	EXPECT_TRUE(stamped(self->a.addr, NUNITS * u, self->page, 1));
	EXPECT_TRUE(stamped(self->b.addr, 2 * u, self->page,
			    50000 + 2 * self->upages));
	EXPECT_TRUE(stamped(self->b.addr + 2 * u, 2 * u, self->page, 50000));
}

TEST_F(huge, untouched_unit_exchanges_as_a_hole)
{
	char *dst = self->b.addr;

	memset(dst, 0xee, self->unit);
	ASSERT_EQ(0, zcrecv_remap1(self->fd, self->a.addr + self->unit, dst,
				   self->unit));
	EXPECT_EQ(0, present(dst, self->upages));
	EXPECT_EQ(0, dst[0]);
	EXPECT_EQ(0, dst[self->unit - 1]);
	EXPECT_EQ((char)0xee, self->a.addr[self->unit]);
}

TEST_F(huge, partial_unit_einval)
{
	char *s = self->a.addr, *d = self->b.addr;
	size_t u = self->unit;
	long p = self->page;

	stamp(s, u, p, 7);
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, s, d, p));
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, s, d, u - p));
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, s, d, u + p));
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, s + p, d, u));
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, s, d + p, u));
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, s + u, d + u / 2, u));
	EXPECT_TRUE(stamped(s, u, p, 7));
}

TEST_F(huge, four_kib_zone_against_huge_zone_einval)
{
	struct zcrecv_zone_map small;

	ASSERT_EQ(0, zcrecv_zone_map(self->fd, self->upages, &small));
	memset(small.addr, 3, small.len);
	memset(self->a.addr, 4, self->unit);
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, small.addr, self->a.addr,
					 self->unit));
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, self->a.addr, small.addr,
					 self->unit));
	EXPECT_EQ(3, small.addr[small.len - 1]);
	EXPECT_EQ(4, self->a.addr[self->unit - 1]);
	zcrecv_zone_unmap(&small);
}

TEST_F(huge, range_past_zone_end_einval)
{
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, self->a.addr +
					 (NUNITS - 1) * self->unit,
					 self->b.addr, 2 * self->unit));
}

TEST_F(huge, exchange_across_a_split_mapping)
{
	size_t u = self->unit;
	long p = self->page;

	stamp(self->a.addr, u, p, 600);
	stamp(self->b.addr, u, p, 700);
	/* a read-only page in the middle of a's unit 0 splits the VMA */
	ASSERT_EQ(0, mprotect(self->a.addr + 10 * p, p, PROT_READ));
	ASSERT_EQ(0, zcrecv_remap1(self->fd, self->b.addr, self->a.addr, u));
	EXPECT_EQ(self->upages, present(self->a.addr, self->upages));
	EXPECT_TRUE(stamped(self->a.addr, u, p, 700));
	EXPECT_TRUE(stamped(self->b.addr, u, p, 600));
	ASSERT_EQ(0, mprotect(self->a.addr + 10 * p, p, PROT_READ | PROT_WRITE));
}

TEST_F(huge, unit_held_by_get_user_pages_ebusy)
{
	long long busy = zcrecv_counter("remap_busy");
	struct iovec iov = { self->a.addr + 7 * self->page, self->page };
	int pipefd[2];
	char buf[4096];

	stamp(self->a.addr, self->unit, self->page, 300);
	ASSERT_EQ(0, pipe(pipefd));
	/* one page of the unit in a pipe holds the whole unit */
	ASSERT_EQ(self->page, vmsplice(pipefd[1], &iov, 1, 0));
	EXPECT_EQ(-EBUSY, zcrecv_remap1(self->fd, self->a.addr, self->b.addr,
					self->unit));
	EXPECT_EQ(-EBUSY, zcrecv_remap1(self->fd, self->b.addr, self->a.addr,
					self->unit));
	EXPECT_EQ(busy + 2, zcrecv_counter("remap_busy"));
	EXPECT_TRUE(stamped(self->a.addr, self->unit, self->page, 300));
	close(pipefd[1]);
	while (read(pipefd[0], buf, sizeof(buf)) > 0)
		;
	close(pipefd[0]);
	EXPECT_EQ(0, zcrecv_remap1(self->fd, self->a.addr, self->b.addr,
				   self->unit));
	EXPECT_TRUE(stamped(self->b.addr, self->unit, self->page, 300));
}

TEST_F(huge, unit_pinned_by_io_uring_ebusy)
{
	struct io_uring_params params;
	struct iovec iov = { self->a.addr + self->unit - self->page,
			     2 * self->page };
	int ring, ret;

	stamp(self->a.addr, 2 * self->unit, self->page, 400);
	memset(&params, 0, sizeof(params));
	ring = syscall(__NR_io_uring_setup, 4, &params);
	if (ring < 0)
		SKIP(return, "io_uring_setup: %s", strerror(errno));
	/* the last page of unit 0 and the first of unit 1 */
	ret = syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS,
		      &iov, 1);
	if (ret < 0) {
		int err = errno;

		close(ring);
		SKIP(return, "io_uring refuses to pin device memory here: %s",
		     strerror(err));
	}
	EXPECT_EQ(-EBUSY, zcrecv_remap1(self->fd, self->a.addr, self->b.addr,
					self->unit));
	EXPECT_EQ(-EBUSY, zcrecv_remap1(self->fd, self->b.addr,
					self->a.addr + self->unit, self->unit));
	/* an unpinned unit of the same zone still moves */
	EXPECT_EQ(0, zcrecv_remap1(self->fd, self->a.addr + 2 * self->unit,
				   self->b.addr, self->unit));
	EXPECT_TRUE(stamped(self->a.addr, 2 * self->unit, self->page, 400));
	close(ring);	/* unpins (io_uring frees the ring asynchronously) */
	for (ret = 0; ret < 200; ret++) {
		if (!zcrecv_remap1(self->fd, self->a.addr, self->b.addr + self->unit,
				   self->unit))
			break;
		usleep(10000);
	}
	EXPECT_TRUE(stamped(self->b.addr + self->unit, self->unit, self->page,
			    400));
}

TEST_F(huge, munmap_and_close_free_units)
{
	long long freed = zcrecv_counter("pages_freed");
	struct zcrecv_zone_map z;
	int fd2 = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, zcrecv_zone_map_flags(fd2, 3 * self->upages,
					   ZCRECV_ZONE_HUGE, &z));
	memset(z.addr, 1, 2 * self->unit);
	/* a partial munmap keeps the zone and its units */
	ASSERT_EQ(0, munmap(z.addr + self->unit, self->page));
	EXPECT_EQ(freed, zcrecv_counter("pages_freed"));
	EXPECT_EQ(1, z.addr[self->unit + self->page]);
	zcrecv_zone_unmap(&z);
	EXPECT_EQ(freed + 2 * (long long)self->upages,
		  zcrecv_counter("pages_freed"));
	/* never mapped: close frees it */
	ASSERT_EQ(0, zcrecv_ioctl(fd2, ZCRECV_IOC_ZONE_CREATE,
				  &(struct zcrecv_zone_create){
					.pages = self->upages,
					.flags = ZCRECV_ZONE_HUGE }));
	close(fd2);
}

TEST_F(huge, exit_with_live_huge_zones_frees_everything)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct zcrecv_zone_map z;
		int fd = open(ZCRECV_DEV, O_RDWR), i;

		for (i = 0; i < 3; i++) {
			if (zcrecv_zone_map_flags(fd, 2 * self->upages,
						  ZCRECV_ZONE_HUGE, &z))
				_exit(1);
			memset(z.addr, i, z.len);
			if (zcrecv_remap1(fd, z.addr, z.addr + self->unit,
					  self->unit))
				_exit(2);
		}
		_exit(0);	/* no munmap, no close */
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_F(huge, fork_child_does_not_share_units)
{
	int status;
	pid_t pid;

	memset(self->a.addr, 0x5a, self->unit);
	ASSERT_EQ(0, madvise(self->a.addr, self->unit, MADV_DOFORK));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* the copy is detached: SIGBUS, never the parent's data */
		_exit(*(volatile char *)(self->a.addr + self->unit - 1) == 0x5a ?
		      1 : 2);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	if (WIFSIGNALED(status)) {
		EXPECT_EQ(SIGBUS, WTERMSIG(status));
	} else {
		TH_LOG("child exited with %d", WEXITSTATUS(status));
	}
	/*
	 * VM_WIPEONFORK: fork copied no entry, so the parent's stay (its
	 * unit is still in its RSS), and the unit is still usable.
	 */
	EXPECT_EQ(self->upages, present(self->a.addr, self->upages));
	EXPECT_EQ(0x5a, self->a.addr[0]);
	EXPECT_EQ(0, zcrecv_remap1(self->fd, self->a.addr, self->b.addr,
				   self->unit));
	EXPECT_EQ(0x5a, self->b.addr[self->unit - 1]);
}

/* Write a string to a cgroup file; 0 or -errno. */
static int cg_write(const char *dir, const char *file, const char *val)
{
	char path[256];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

#define CG_ROOT	"/sys/fs/cgroup"
#define CG_TEST	CG_ROOT "/zcrecv_huge_test"

/*
 * A unit the memory cgroup of the zone's creator cannot hold: the 2 MiB
 * allocation fails quietly (__GFP_NORETRY | __GFP_NOWARN), the access gets
 * SIGBUS, not the OOM killer and not a kernel warning (the VM runner checks
 * the log).
 */
TEST_F(huge, allocation_failure_gives_sigbus)
{
	long long failed = zcrecv_counter("huge_alloc_failed");
	int status, sync[2];
	char c, buf[32];
	pid_t pid;

	if (access(CG_ROOT "/cgroup.controllers", F_OK))
		mount("none", CG_ROOT, "cgroup2", 0, NULL);
	if (cg_write(CG_ROOT, "cgroup.subtree_control", "+memory"))
		SKIP(return, "no cgroup2 memory controller here");
	rmdir(CG_TEST);
	ASSERT_EQ(0, mkdir(CG_TEST, 0755));
	ASSERT_EQ(0, cg_write(CG_TEST, "memory.max", "1048576"));
	ASSERT_EQ(0, pipe(sync));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct zcrecv_zone_map z;
		int fd;

		/*
		 * Joined by the parent first: the zone's creator's cgroup
		 * pays for its units. Then create, populate, touch.
		 */
		if (read(sync[0], &c, 1) != 1)
			_exit(2);
		fd = open(ZCRECV_DEV, O_RDWR);
		if (zcrecv_zone_map_flags(fd, self->upages, ZCRECV_ZONE_HUGE,
					  &z))
			_exit(1);
		if (!madvise(z.addr, z.len, MADV_POPULATE_WRITE))
			_exit(4);
		if (errno != EFAULT)
			_exit(5);
		z.addr[0] = 1;
		_exit(3);
	}
	snprintf(buf, sizeof(buf), "%d", pid);
	ASSERT_EQ(0, cg_write(CG_TEST, "cgroup.procs", buf));
	ASSERT_EQ(1, write(sync[1], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	close(sync[0]);
	close(sync[1]);
	rmdir(CG_TEST);
	EXPECT_TRUE(WIFSIGNALED(status));
	if (WIFSIGNALED(status)) {
		EXPECT_EQ(SIGBUS, WTERMSIG(status));
	} else {
		TH_LOG("child exited with %d", WEXITSTATUS(status));
	}
	/* once for MADV_POPULATE_WRITE (EFAULT), once for the touch */
	EXPECT_EQ(failed + 2, zcrecv_counter("huge_alloc_failed"));
}

TEST_HARNESS_MAIN
