// SPDX-License-Identifier: GPL-2.0
/*
 * zcrecv_remap_test - kselftests of ZCRECV_IOC_REMAP: data moves correctly
 * (one range, many ranges, a full batch; both directions of the exchange),
 * dst is mapped (to the right pages) before its first touch, each error
 * path of the ioctl, partial-batch reporting, pinned pages refused with
 * EBUSY, and a zone unmapped by another thread during a long batch. Every test ends with
 * the module's page and zone counters balanced. Run in the VM (make test).
 */
#include <linux/io_uring.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "kselftest_harness.h"
#include "zcrecv_util.h"

#define ZPAGES 1024	/* pages per zone in the fixture */

FIXTURE(remap) {
	int fd;
	long page;
	unsigned int max_batch;
	struct zcrecv_zone_map a, b;
	struct zcrecv_leak_check before;
};

FIXTURE_SETUP(remap)
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
	ASSERT_TRUE(api.out_features & ZCRECV_FEATURE_REMAP);
	self->max_batch = api.out_max_batch;
	ASSERT_EQ(0, zcrecv_zone_map(self->fd, ZPAGES, &self->a));
	ASSERT_EQ(0, zcrecv_zone_map(self->fd, ZPAGES, &self->b));
}

FIXTURE_TEARDOWN(remap)
{
	if (self->fd < 0)
		return;
	zcrecv_zone_unmap(&self->a);
	zcrecv_zone_unmap(&self->b);
	close(self->fd);
	EXPECT_TRUE(zcrecv_leak_same(&self->before));
}

TEST_F(remap, one_range_both_directions)
{
	long long exch = zcrecv_counter("pages_exchanged");
	long long alloc = zcrecv_counter("pages_allocated");
	char *src = self->a.addr + 3 * self->page;
	char *dst = self->b.addr + 100 * self->page;

	zcrecv_fill_pages(src, self->page, 16, 1000);
	zcrecv_fill_pages(dst, self->page, 16, 2000);
	alloc = zcrecv_counter("pages_allocated") - alloc;
	ASSERT_EQ(0, zcrecv_remap1(self->fd, src, dst, 16 * self->page));
	EXPECT_TRUE(zcrecv_check_pages(dst, self->page, 16, 1000));
	EXPECT_TRUE(zcrecv_check_pages(src, self->page, 16, 2000));
	EXPECT_EQ(exch + 16, zcrecv_counter("pages_exchanged"));
	/* nothing was allocated by the exchange itself */
	EXPECT_EQ(32, alloc);
	/* and back */
	ASSERT_EQ(0, zcrecv_remap1(self->fd, dst, src, 16 * self->page));
	EXPECT_TRUE(zcrecv_check_pages(src, self->page, 16, 1000));
	EXPECT_TRUE(zcrecv_check_pages(dst, self->page, 16, 2000));
}

TEST_F(remap, many_ranges_in_one_batch)
{
	struct zcrecv_remap_entry e[64];
	struct zcrecv_remap r;
	unsigned int i, pg = 0, total = 0;

	zcrecv_fill_pages(self->a.addr, self->page, ZPAGES, 1);
	zcrecv_fill_pages(self->b.addr, self->page, ZPAGES, 100000);
	for (i = 0; i < 64; i++) {
		unsigned int n = 1 + i % 7;

		e[i] = (struct zcrecv_remap_entry){
			.src = (__u64)(uintptr_t)(self->a.addr + (size_t)pg * self->page),
			.dst = (__u64)(uintptr_t)(self->b.addr + (size_t)(ZPAGES - pg - n) * self->page),
			.len = (__u64)n * self->page,
		};
		pg += n + 1;
		total += n;
	}
	ASSERT_EQ(0, zcrecv_remap(self->fd, e, 64, 0, &r));
	EXPECT_EQ(64, r.out_done);
	EXPECT_EQ(0, r.out_error);
	EXPECT_EQ(total, r.out_pages);
	for (i = 0, pg = 0; i < 64; i++) {
		unsigned int n = 1 + i % 7;
		unsigned int dpg = ZPAGES - pg - n;

		EXPECT_TRUE(zcrecv_check_pages(self->b.addr + (size_t)dpg * self->page,
					self->page, n, 1 + pg));
		EXPECT_TRUE(zcrecv_check_pages(self->a.addr + (size_t)pg * self->page,
					self->page, n, 100000 + dpg));
		pg += n + 1;
	}
}

TEST_F(remap, full_batch)
{
	unsigned int n = self->max_batch < ZPAGES ? self->max_batch : ZPAGES;
	struct zcrecv_remap_entry *e = calloc(n, sizeof(*e));
	struct zcrecv_remap r;
	unsigned int i;

	ASSERT_NE(NULL, e);
	zcrecv_fill_pages(self->a.addr, self->page, n, 7);
	for (i = 0; i < n; i++)
		e[i] = (struct zcrecv_remap_entry){
			.src = (__u64)(uintptr_t)(self->a.addr + (size_t)i * self->page),
			.dst = (__u64)(uintptr_t)(self->b.addr + (size_t)(n - 1 - i) * self->page),
			.len = self->page,
		};
	ASSERT_EQ(0, zcrecv_remap(self->fd, e, n, 0, &r));
	EXPECT_EQ(n, r.out_done);
	for (i = 0; i < n; i++)
		ASSERT_TRUE(zcrecv_check(self->b.addr + (size_t)(n - 1 - i) * self->page,
					 self->page, 7 + i));
	/* one more than the limit is refused whole */
	free(e);
	e = calloc(self->max_batch + 1, sizeof(*e));
	ASSERT_NE(NULL, e);
	EXPECT_EQ(-EINVAL, zcrecv_remap(self->fd, e, self->max_batch + 1, 0, NULL));
	free(e);
}

/*
 * After an exchange every page of dst is mapped already, and mapped to the
 * page that was at src: read from /proc/self/pagemap before dst is touched,
 * so a fault anywhere else in the process cannot blur the answer (counting
 * minor faults with getrusage could: it counts the whole process).
 */
TEST_F(remap, dst_mapped_before_first_touch)
{
	enum { N = 256 };
	uint64_t before[N], after[N];
	int i, absent = 0, moved = 0;

	zcrecv_fill_pages(self->a.addr, self->page, N, 11);
	memset(self->b.addr, 0, N * self->page);
	ASSERT_EQ(0, zcrecv_pagemap(self->a.addr, N, before));
	ASSERT_EQ(0, zcrecv_remap1(self->fd, self->a.addr, self->b.addr,
				   N * self->page));
	ASSERT_EQ(0, zcrecv_pagemap(self->b.addr, N, after));
	for (i = 0; i < N; i++) {
		if (!(after[i] & ZCRECV_PM_PRESENT))
			absent++;
		else if ((after[i] & ZCRECV_PM_PFN_MASK) ==
			 (before[i] & ZCRECV_PM_PFN_MASK))
			moved++;
	}
	EXPECT_EQ(0, absent);
	/* PFNs read as 0 without CAP_SYS_ADMIN: then only presence counts */
	if (before[0] & ZCRECV_PM_PFN_MASK) {
		EXPECT_EQ(N, moved);
	} else {
		TH_LOG("page frame numbers hidden (not root): presence only");
	}
	EXPECT_TRUE(zcrecv_check_pages(self->b.addr, self->page, N, 11));
}

TEST_F(remap, untouched_source_gives_zero_pages)
{
	char *dst = self->b.addr;

	memset(dst, 0xee, 4 * self->page);
	/* a's pages were never touched: nothing to exchange but holes */
	ASSERT_EQ(0, zcrecv_remap1(self->fd, self->a.addr + 8 * self->page, dst,
				   4 * self->page));
	EXPECT_EQ(0, dst[0]);
	EXPECT_EQ(0, dst[4 * self->page - 1]);
	EXPECT_EQ((char)0xee, self->a.addr[8 * self->page]);
}

TEST_F(remap, exchange_within_one_zone)
{
	char *x = self->a.addr, *y = self->a.addr + 512 * self->page;

	zcrecv_fill_pages(x, self->page, 8, 50);
	zcrecv_fill_pages(y, self->page, 8, 60);
	ASSERT_EQ(0, zcrecv_remap1(self->fd, x, y, 8 * self->page));
	EXPECT_TRUE(zcrecv_check_pages(y, self->page, 8, 50));
	EXPECT_TRUE(zcrecv_check_pages(x, self->page, 8, 60));
}

TEST_F(remap, unaligned_arguments_einval)
{
	char *s = self->a.addr, *d = self->b.addr;
	long p = self->page;

	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, s + 1, d, p));
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, s, d + 8, p));
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, s, d, p + 1));
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, s, d, p - 1));
}

TEST_F(remap, zero_length_einval)
{
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, self->a.addr, self->b.addr, 0));
}

TEST_F(remap, overlapping_ranges_einval)
{
	char *s = self->a.addr;
	long p = self->page;

	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, s, s + p, 2 * p));
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, s + p, s, 2 * p));
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, s, s, p));
}

TEST_F(remap, range_crossing_zone_end_einval)
{
	long p = self->page;

	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, self->a.addr + (ZPAGES - 1) * p,
					 self->b.addr, 2 * p));
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, self->a.addr,
					 self->b.addr + (ZPAGES - 1) * p, 2 * p));
}

TEST_F(remap, not_a_zone_einval)
{
	long p = self->page;
	char *anon = mmap(NULL, 4 * p, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, anon);
	memset(anon, 1, 4 * p);
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, anon, self->b.addr, p));
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, self->a.addr, anon, p));
	EXPECT_EQ(1, anon[0]);
	munmap(anon, 4 * p);
}

TEST_F(remap, unmapped_address_efault)
{
	long p = self->page;
	char *hole = mmap(NULL, p, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, hole);
	munmap(hole, p);
	EXPECT_EQ(-EFAULT, zcrecv_remap1(self->fd, hole, self->b.addr, p));
	EXPECT_EQ(-EFAULT, zcrecv_remap1(self->fd, self->a.addr, hole, p));
}

TEST_F(remap, address_overflow_eoverflow)
{
	EXPECT_EQ(-EOVERFLOW, zcrecv_remap1(self->fd, (void *)-self->page,
					    self->b.addr, 2 * self->page));
}

TEST_F(remap, bad_header_fields)
{
	struct zcrecv_remap_entry e = {
		.src = (__u64)(uintptr_t)self->a.addr,
		.dst = (__u64)(uintptr_t)self->b.addr,
		.len = self->page,
	};
	struct zcrecv_remap req;

	EXPECT_EQ(-EINVAL, zcrecv_remap(self->fd, &e, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, zcrecv_remap(self->fd, &e, 1, 0x80000000u, NULL));
	EXPECT_EQ(-EINVAL, zcrecv_remap(self->fd, &e, 1, 2, NULL));
	memset(&req, 0, sizeof(req));
	req.entries = (__u64)(uintptr_t)&e;
	req.count = 1;
	req.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, zcrecv_ioctl(self->fd, ZCRECV_IOC_REMAP, &req));
	e.flags = 1;
	EXPECT_EQ(-EINVAL, zcrecv_remap(self->fd, &e, 1, 0, NULL));
	e.flags = 0;
	e.reserved0 = 1;
	EXPECT_EQ(-EINVAL, zcrecv_remap(self->fd, &e, 1, 0, NULL));
	EXPECT_EQ(-EFAULT, zcrecv_ioctl(self->fd, ZCRECV_IOC_REMAP, NULL));
	EXPECT_EQ(-EFAULT, zcrecv_remap(self->fd, (void *)8, 1, 0, NULL));
}

TEST_F(remap, failed_entry_reports_index_and_error)
{
	struct zcrecv_remap_entry e[4];
	struct zcrecv_remap r;
	long p = self->page;
	int i;

	zcrecv_fill_pages(self->a.addr, p, 4, 900);
	for (i = 0; i < 4; i++)
		e[i] = (struct zcrecv_remap_entry){
			.src = (__u64)(uintptr_t)(self->a.addr + i * p),
			.dst = (__u64)(uintptr_t)(self->b.addr + i * p),
			.len = p,
		};
	e[2].len = p + 1;
	EXPECT_EQ(-EINVAL, zcrecv_remap(self->fd, e, 4, 0, &r));
	EXPECT_EQ(2, r.out_done);
	EXPECT_EQ(-EINVAL, r.out_error);
	EXPECT_EQ(2, r.out_pages);
	/* entries before the failure are done, the rest untouched */
	EXPECT_TRUE(zcrecv_check_pages(self->b.addr, p, 2, 900));
	EXPECT_TRUE(zcrecv_check_pages(self->a.addr + 2 * p, p, 2, 902));
}

TEST_F(remap, entry_array_running_into_a_hole_efault)
{
	struct zcrecv_remap_entry *arr;
	struct zcrecv_remap r;
	long p = self->page;
	char *buf;

	buf = mmap(NULL, 2 * p, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	ASSERT_EQ(0, munmap(buf + p, p));
	/* one good entry at the very end of the page, the next in the hole */
	arr = (struct zcrecv_remap_entry *)(buf + p) - 1;
	*arr = (struct zcrecv_remap_entry){
		.src = (__u64)(uintptr_t)self->a.addr,
		.dst = (__u64)(uintptr_t)self->b.addr,
		.len = p,
	};
	self->a.addr[0] = 5;
	EXPECT_EQ(-EFAULT, zcrecv_remap(self->fd, arr, 2, 0, &r));
	EXPECT_EQ(1, r.out_done);
	EXPECT_EQ(-EFAULT, r.out_error);
	EXPECT_EQ(5, self->b.addr[0]);
	munmap(buf, p);
}

TEST_F(remap, zone_of_another_file_einval)
{
	struct zcrecv_zone_map other;
	int fd2 = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, zcrecv_zone_map(fd2, 4, &other));
	other.addr[0] = 9;
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, other.addr, self->b.addr,
					 self->page));
	EXPECT_EQ(-EINVAL, zcrecv_remap1(fd2, other.addr, self->b.addr,
					 self->page));
	EXPECT_EQ(9, other.addr[0]);
	zcrecv_zone_unmap(&other);
	close(fd2);
}

TEST_F(remap, split_mapping_still_works)
{
	long p = self->page;

	zcrecv_fill_pages(self->a.addr, p, 8, 70);
	/* split a's mapping in three, with a read-only middle */
	ASSERT_EQ(0, mprotect(self->a.addr + 4 * p, p, PROT_READ));
	EXPECT_EQ(0, zcrecv_remap1(self->fd, self->a.addr + 5 * p,
				   self->b.addr, 2 * p));
	EXPECT_TRUE(zcrecv_check_pages(self->b.addr, p, 2, 75));
	/* a range across the splits is still one run of the zone's pages */
	EXPECT_EQ(0, zcrecv_remap1(self->fd, self->a.addr + 3 * p,
				   self->b.addr + 8 * p, 2 * p));
	EXPECT_TRUE(zcrecv_check_pages(self->b.addr + 8 * p, p, 2, 73));
	/* and as a destination across them (the read-only part included) */
	zcrecv_fill_pages(self->b.addr + 16 * p, p, 4, 500);
	EXPECT_EQ(0, zcrecv_remap1(self->fd, self->b.addr + 16 * p,
				   self->a.addr + 2 * p, 4 * p));
	EXPECT_TRUE(zcrecv_check_pages(self->a.addr + 2 * p, p, 4, 500));
	ASSERT_EQ(0, mprotect(self->a.addr + 4 * p, p, PROT_READ | PROT_WRITE));
}

/* Mappings of /proc/self/maps that overlap [addr, addr + len). */
static int maps_overlapping(const char *addr, size_t len)
{
	unsigned long lo, hi, a = (uintptr_t)addr;
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo < a + len &&
		    a < hi)
			n++;
	fclose(f);
	return n;
}

/*
 * mlock on part of a zone neither splits the mapping (a special mapping:
 * mlock leaves its flags alone, VmLck does not grow) nor locks anything:
 * it only faults the pages in. The range still exchanges as one run.
 */
TEST_F(remap, mlock_populates_without_splitting)
{
	long p = self->page, vmlck = zcrecv_status_kb("VmLck");
	uint64_t pm[6];

	ASSERT_EQ(1, maps_overlapping(self->a.addr, ZPAGES * p));
	if (mlock(self->a.addr + 2 * p, 2 * p))
		SKIP(return, "mlock: %s", strerror(errno));
	EXPECT_EQ(1, maps_overlapping(self->a.addr, ZPAGES * p));
	EXPECT_EQ(vmlck, zcrecv_status_kb("VmLck"));
	/* populated: the two locked pages only */
	ASSERT_EQ(0, zcrecv_pagemap(self->a.addr, 6, pm));
	EXPECT_FALSE(pm[1] & ZCRECV_PM_PRESENT);
	EXPECT_TRUE(pm[2] & ZCRECV_PM_PRESENT);
	EXPECT_TRUE(pm[3] & ZCRECV_PM_PRESENT);
	EXPECT_FALSE(pm[4] & ZCRECV_PM_PRESENT);

	zcrecv_fill_pages(self->a.addr, p, 6, 90);
	EXPECT_EQ(0, zcrecv_remap1(self->fd, self->a.addr, self->b.addr, 6 * p));
	EXPECT_TRUE(zcrecv_check_pages(self->b.addr, p, 6, 90));
	EXPECT_EQ(0, munlock(self->a.addr + 2 * p, 2 * p));
	EXPECT_EQ(1, maps_overlapping(self->a.addr, ZPAGES * p));
}

TEST_F(remap, range_across_two_adjacent_zones_einval)
{
	struct zcrecv_zone_create zc;
	long p = self->page;
	char *area, *z1, *z2;

	/* two 4-page zones mapped back to back */
	area = mmap(NULL, 8 * p, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, area);
	memset(&zc, 0, sizeof(zc));
	zc.pages = 4;
	ASSERT_EQ(0, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	z1 = mmap(area, 4 * p, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		  self->fd, zc.out_offset);
	ASSERT_EQ(area, z1);
	ASSERT_EQ(0, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	z2 = mmap(area + 4 * p, 4 * p, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_FIXED, self->fd, zc.out_offset);
	ASSERT_EQ(area + 4 * p, z2);
	memset(area, 1, 8 * p);
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, area + 2 * p,
					 self->b.addr, 4 * p));
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, self->b.addr,
					 area + 2 * p, 4 * p));
	EXPECT_EQ(1, area[7 * p]);
	munmap(area, 8 * p);
}

TEST_F(remap, range_over_reordered_pieces_of_a_zone_einval)
{
	long p = self->page;
	char *x = self->a.addr, *tmp;

	/* swap the places of pages 0-1 and 2-3 of zone a with mremap */
	tmp = mmap(NULL, 2 * p, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, tmp);
	ASSERT_EQ(tmp, mremap(x, 2 * p, 2 * p, MREMAP_MAYMOVE | MREMAP_FIXED,
			      tmp));
	ASSERT_EQ(x, mremap(x + 2 * p, 2 * p, 2 * p,
			    MREMAP_MAYMOVE | MREMAP_FIXED, x));
	ASSERT_EQ(x + 2 * p, mremap(tmp, 2 * p, 2 * p,
				    MREMAP_MAYMOVE | MREMAP_FIXED, x + 2 * p));
	/* contiguous addresses, but not one run of the zone's pages */
	EXPECT_EQ(-EINVAL, zcrecv_remap1(self->fd, x, self->b.addr, 4 * p));
	/* each piece alone is fine */
	EXPECT_EQ(0, zcrecv_remap1(self->fd, x, self->b.addr, 2 * p));
}

TEST_F(remap, page_held_by_get_user_pages_ebusy)
{
	long long busy = zcrecv_counter("remap_busy");
	long p = self->page;
	struct iovec iov = { self->a.addr, p };
	int pipefd[2];
	char buf[64];

	zcrecv_fill_pages(self->a.addr, p, 2, 300);
	ASSERT_EQ(0, pipe(pipefd));
	/* vmsplice takes a page reference with get_user_pages */
	ASSERT_EQ(p, vmsplice(pipefd[1], &iov, 1, 0));
	EXPECT_EQ(-EBUSY, zcrecv_remap1(self->fd, self->a.addr, self->b.addr, p));
	EXPECT_EQ(busy + 1, zcrecv_counter("remap_busy"));
	/* nothing moved, the data is intact and readable */
	EXPECT_TRUE(zcrecv_check_pages(self->a.addr, p, 1, 300));
	close(pipefd[1]);
	while (read(pipefd[0], buf, sizeof(buf)) > 0)
		;
	close(pipefd[0]);
	EXPECT_EQ(0, zcrecv_remap1(self->fd, self->a.addr, self->b.addr, p));
	EXPECT_TRUE(zcrecv_check_pages(self->b.addr, p, 1, 300));
}

TEST_F(remap, page_pinned_by_io_uring_ebusy)
{
	struct io_uring_params params;
	long p = self->page;
	struct iovec iov = { self->a.addr, 2 * p };
	int ring, ret;

	zcrecv_fill_pages(self->a.addr, p, 2, 400);
	memset(&params, 0, sizeof(params));
	ring = syscall(__NR_io_uring_setup, 4, &params);
	if (ring < 0)
		SKIP(return, "io_uring_setup: %s", strerror(errno));
	ret = syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS,
		      &iov, 1);
	if (ret < 0) {
		int err = errno;

		close(ring);
		SKIP(return, "io_uring refuses to pin device memory here: %s",
		     strerror(err));
	}
	/* pin_user_pages(FOLL_LONGTERM) on both pages */
	EXPECT_EQ(-EBUSY, zcrecv_remap1(self->fd, self->a.addr + p,
					self->b.addr, p));
	EXPECT_EQ(-EBUSY, zcrecv_remap1(self->fd, self->b.addr,
					self->a.addr, p));
	EXPECT_TRUE(zcrecv_check_pages(self->a.addr, p, 2, 400));
	close(ring);	/* unpins (io_uring frees the ring asynchronously) */
	for (ret = 0; ret < 200; ret++) {
		if (!zcrecv_remap1(self->fd, self->a.addr + p, self->b.addr, p))
			break;
		usleep(10000);
	}
	EXPECT_TRUE(zcrecv_check_pages(self->b.addr, p, 1, 401));
}

struct unmap_race {
	int fd;
	struct zcrecv_remap_entry *e;
	unsigned int n;
	int rounds;
	int last_ret;
};

static void *remap_loop(void *arg)
{
	struct unmap_race *u = arg;
	int i;

	for (i = 0; i < u->rounds; i++) {
		u->last_ret = zcrecv_remap(u->fd, u->e, u->n, 0, NULL);
		if (u->last_ret)
			break;
	}
	return NULL;
}

TEST_F(remap, zone_unmapped_during_long_batch)
{
	unsigned int n = self->max_batch < ZPAGES ? self->max_batch : ZPAGES;
	struct unmap_race u = { .fd = self->fd, .n = n, .rounds = 1000 };
	pthread_t th;
	unsigned int i;

	u.e = calloc(n, sizeof(*u.e));
	ASSERT_NE(NULL, u.e);
	memset(self->a.addr, 1, self->a.len);
	memset(self->b.addr, 2, self->b.len);
	for (i = 0; i < n; i++)
		u.e[i] = (struct zcrecv_remap_entry){
			.src = (__u64)(uintptr_t)(self->a.addr + (size_t)i * self->page),
			.dst = (__u64)(uintptr_t)(self->b.addr + (size_t)i * self->page),
			.len = self->page,
		};
	ASSERT_EQ(0, pthread_create(&th, NULL, remap_loop, &u));
	usleep(20000);
	zcrecv_zone_unmap(&self->b);
	ASSERT_EQ(0, pthread_join(th, NULL));
	/* the batch saw the zone go away: a clean error, not a crash */
	EXPECT_TRUE(u.last_ret == -EFAULT || u.last_ret == 0);
	/* a's pages are each one of the two patterns, never garbage */
	for (i = 0; i < n; i++) {
		char c = self->a.addr[(size_t)i * self->page];

		ASSERT_TRUE(c == 1 || c == 2);
	}
	free(u.e);
}

TEST_HARNESS_MAIN
