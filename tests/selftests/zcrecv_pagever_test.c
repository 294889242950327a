// SPDX-License-Identifier: GPL-2.0
/*
 * zcrecv_pagever_test - kselftests of page versions (ZCRECV_ZONE_PAGEVER
 * zones, ZCRECV_IOC_PAGEVER, the read-only version array): a write (a
 * store, a system call writing the page) makes a version odd, ARM makes it
 * even and the next write is seen again, reads change nothing, an exchange
 * and BUMP add two, the array marks a freed zone dead and counts mapping
 * changes, it cannot be made writable; each error path of the ioctl and of
 * zone creation and array mmap; and writer threads racing a reader that
 * arms all the time never get a write past it (a version unchanged over a
 * changed page). Every test ends with the module's counters balanced. Run
 * in the VM (make test).
 */
#include <pthread.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "zcrecv_util.h"

#define ZPAGES 64	/* pages of the fixture's zones */

FIXTURE(pagever) {
	int fd;
	long page;
	struct zcrecv_zone_map z;	/* versioned */
	struct zcrecv_zone_map plain;	/* not versioned */
	const struct zcrecv_pagever_head *head;
	size_t head_size;
	__u64 first;
	struct zcrecv_leak_check before;
};

static int pv_ioctl(int fd, const void *addr, __u64 len, __u32 op,
		    struct zcrecv_pagever *out)
{
	struct zcrecv_pagever req;
	int ret;

	memset(&req, 0, sizeof(req));
	req.addr = (__u64)(uintptr_t)addr;
	req.len = len;
	req.op = op;
	ret = zcrecv_ioctl(fd, ZCRECV_IOC_PAGEVER, &req);
	if (out)
		*out = req;
	return ret;
}

static __u64 ver(const struct zcrecv_pagever_head *h, size_t i)
{
	return __atomic_load_n(&h->ver[i], __ATOMIC_ACQUIRE);
}

FIXTURE_SETUP(pagever)
{
	struct zcrecv_pagever req;
	struct zcrecv_api api;
	void *p;

	self->z.addr = self->plain.addr = NULL;
	self->head = NULL;
	self->page = zcrecv_page_size();
	self->fd = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s missing: zcrecv.ko not loaded", ZCRECV_DEV);
	ASSERT_LE(0, self->fd);
	zcrecv_leak_snapshot(&self->before);
	ASSERT_EQ(0, zcrecv_handshake(self->fd, &api));
	if (!(api.out_features & ZCRECV_FEATURE_PAGEVER))
		SKIP(return, "module without ZCRECV_FEATURE_PAGEVER");
	ASSERT_EQ(0, zcrecv_zone_map_flags(self->fd, ZPAGES,
					   ZCRECV_ZONE_PAGEVER, &self->z));
	ASSERT_EQ(0, zcrecv_zone_map(self->fd, ZPAGES, &self->plain));
	ASSERT_EQ(0, pv_ioctl(self->fd, self->z.addr, self->z.len,
			      ZCRECV_PAGEVER_ARM, &req));
	self->first = req.out_first;
	self->head_size = req.out_size;
	p = mmap(NULL, req.out_size, PROT_READ, MAP_SHARED, self->fd,
		 req.out_offset);
	ASSERT_NE(MAP_FAILED, p);
	self->head = p;
}

FIXTURE_TEARDOWN(pagever)
{
	if (self->fd < 0)
		return;
	if (self->head)
		munmap((void *)self->head, self->head_size);
	zcrecv_zone_unmap(&self->z);
	zcrecv_zone_unmap(&self->plain);
	close(self->fd);
	EXPECT_TRUE(zcrecv_leak_same(&self->before));
}

TEST_F(pagever, fresh_zone_all_even)
{
	size_t i;

	EXPECT_EQ(0, self->first);
	EXPECT_EQ(ZPAGES, self->head->pages);
	EXPECT_EQ(0, self->head->flags);
	EXPECT_GE(self->head_size, sizeof(*self->head) + ZPAGES * 8);
	for (i = 0; i < ZPAGES; i++)
		EXPECT_EQ(0, ver(self->head, i));
}

TEST_F(pagever, store_makes_odd_once)
{
	long long w = zcrecv_counter("pagever_writes");

	self->z.addr[5 * self->page + 7] = 1;
	EXPECT_EQ(1, ver(self->head, 5));
	/* writable now: more stores do not fault or count */
	self->z.addr[5 * self->page + 8] = 2;
	EXPECT_EQ(1, ver(self->head, 5));
	EXPECT_EQ(0, ver(self->head, 4));
	EXPECT_EQ(0, ver(self->head, 6));
	EXPECT_EQ(w + 1, zcrecv_counter("pagever_writes"));
}

TEST_F(pagever, arm_then_write_again)
{
	struct zcrecv_pagever req;

	self->z.addr[5 * self->page] = 1;
	self->z.addr[9 * self->page] = 1;
	ASSERT_EQ(0, pv_ioctl(self->fd, self->z.addr, self->z.len,
			      ZCRECV_PAGEVER_ARM, &req));
	EXPECT_EQ(2, req.out_pages);
	EXPECT_EQ(2, ver(self->head, 5));
	EXPECT_EQ(2, ver(self->head, 9));
	/* the data survived the zap */
	EXPECT_EQ(1, self->z.addr[5 * self->page]);
	EXPECT_EQ(2, ver(self->head, 5));
	self->z.addr[5 * self->page] = 2;
	EXPECT_EQ(3, ver(self->head, 5));
	EXPECT_EQ(2, ver(self->head, 9));
	/* a clean range arms nothing */
	ASSERT_EQ(0, pv_ioctl(self->fd, self->z.addr + 10 * self->page,
			      self->page, ZCRECV_PAGEVER_ARM, &req));
	EXPECT_EQ(0, req.out_pages);
	EXPECT_EQ(10, req.out_first);
}

TEST_F(pagever, reads_change_nothing)
{
	volatile char *p = self->z.addr;
	unsigned int sum = 0;
	size_t i;

	for (i = 0; i < ZPAGES; i++)
		sum += p[i * self->page];
	EXPECT_EQ(0, sum);
	for (i = 0; i < ZPAGES; i++)
		EXPECT_EQ(0, ver(self->head, i));
}

TEST_F(pagever, syscall_write_counts)
{
	struct iovec local, remote;
	char buf[64] = "written by the kernel";
	int pfd[2];

	/* read(2) from a pipe into page 3 */
	ASSERT_EQ(0, pipe(pfd));
	ASSERT_EQ(sizeof(buf), write(pfd[1], buf, sizeof(buf)));
	ASSERT_EQ(sizeof(buf), read(pfd[0], self->z.addr + 3 * self->page,
				    sizeof(buf)));
	close(pfd[0]);
	close(pfd[1]);
	EXPECT_EQ(1, ver(self->head, 3));
	/* process_vm_writev (GUP for writing) into page 7 */
	local.iov_base = buf;
	local.iov_len = sizeof(buf);
	remote.iov_base = self->z.addr + 7 * self->page;
	remote.iov_len = sizeof(buf);
	ASSERT_EQ(sizeof(buf), process_vm_writev(getpid(), &local, 1,
						 &remote, 1, 0));
	EXPECT_EQ(1, ver(self->head, 7));
	EXPECT_EQ(0, memcmp(self->z.addr + 7 * self->page, buf, sizeof(buf)));
}

TEST_F(pagever, exchange_adds_two)
{
	char *dst = self->z.addr + 8 * self->page;
	char *src = self->plain.addr + 20 * self->page;
	size_t i;

	zcrecv_fill_pages(src, self->page, 4, 77);
	ASSERT_EQ(0, zcrecv_remap1(self->fd, src, dst, 4 * self->page));
	EXPECT_TRUE(zcrecv_check_pages(dst, self->page, 4, 77));
	for (i = 8; i < 12; i++)
		EXPECT_EQ(2, ver(self->head, i));
	EXPECT_EQ(0, ver(self->head, 7));
	EXPECT_EQ(0, ver(self->head, 12));
	/* the pages that came in are armed: a store faults */
	dst[1] = 5;
	EXPECT_EQ(3, ver(self->head, 8));
	/* as source of an exchange too */
	ASSERT_EQ(0, zcrecv_remap1(self->fd, dst, src, 4 * self->page));
	EXPECT_EQ(5, ver(self->head, 8));
	EXPECT_EQ(4, ver(self->head, 9));
}

TEST_F(pagever, bump_adds_two)
{
	struct zcrecv_pagever req;

	self->z.addr[2 * self->page] = 1;
	ASSERT_EQ(0, pv_ioctl(self->fd, self->z.addr + self->page,
			      3 * self->page, ZCRECV_PAGEVER_BUMP, &req));
	EXPECT_EQ(3, req.out_pages);
	EXPECT_EQ(2, ver(self->head, 1));
	EXPECT_EQ(3, ver(self->head, 2));
	EXPECT_EQ(2, ver(self->head, 3));
	EXPECT_EQ(0, ver(self->head, 4));
}

TEST_F(pagever, split_changes_gen)
{
	struct zcrecv_pagever req;
	__u64 gen = self->head->gen;

	ASSERT_EQ(0, mprotect(self->z.addr + 4 * self->page, self->page,
			      PROT_READ));
	EXPECT_NE(gen, self->head->gen);
	/* the range spans the split pieces: still one run of the zone */
	ASSERT_EQ(0, pv_ioctl(self->fd, self->z.addr, self->z.len,
			      ZCRECV_PAGEVER_ARM, &req));
	EXPECT_EQ(self->head->gen, req.out_gen);
	ASSERT_EQ(0, mprotect(self->z.addr + 4 * self->page, self->page,
			      PROT_READ | PROT_WRITE));
	/* mprotect does not make an armed page writable behind our back */
	self->z.addr[4 * self->page] = 1;
	EXPECT_EQ(1, ver(self->head, 4));
}

TEST_F(pagever, freed_zone_marked_dead)
{
	__u64 gen = self->head->gen;
	char *old = self->z.addr;

	old[0] = 1;
	zcrecv_zone_unmap(&self->z);
	EXPECT_EQ(ZCRECV_PAGEVER_DEAD, self->head->flags);
	EXPECT_NE(gen, self->head->gen);
	/* the array stays readable, with its last versions */
	EXPECT_EQ(1, ver(self->head, 0));
	EXPECT_EQ(-EFAULT, pv_ioctl(self->fd, old, self->page,
				    ZCRECV_PAGEVER_ARM, NULL));
}

TEST_F(pagever, array_never_writable)
{
	struct zcrecv_pagever req;
	void *p;

	ASSERT_EQ(0, pv_ioctl(self->fd, self->z.addr, self->page,
			      ZCRECV_PAGEVER_ARM, &req));
	p = mmap(NULL, req.out_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, req.out_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect((void *)self->head, self->head_size,
			       PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
}

TEST_F(pagever, array_mmap_wrong_size_or_offset)
{
	struct zcrecv_pagever req;
	void *p;

	ASSERT_EQ(0, pv_ioctl(self->fd, self->z.addr, self->page,
			      ZCRECV_PAGEVER_ARM, &req));
	p = mmap(NULL, req.out_size + self->page, PROT_READ, MAP_SHARED,
		 self->fd, req.out_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* the gap page between the zone and its array is nothing */
	p = mmap(NULL, self->page, PROT_READ, MAP_SHARED, self->fd,
		 req.out_offset - self->page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(pagever, array_of_other_file_refused)
{
	struct zcrecv_pagever req;
	int fd2 = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
	void *p;

	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, pv_ioctl(self->fd, self->z.addr, self->page,
			      ZCRECV_PAGEVER_ARM, &req));
	p = mmap(NULL, req.out_size, PROT_READ, MAP_SHARED, fd2,
		 req.out_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* nor does another file's ioctl see the zone */
	EXPECT_EQ(-EINVAL, pv_ioctl(fd2, self->z.addr, self->page,
				    ZCRECV_PAGEVER_ARM, NULL));
	close(fd2);
}

TEST_F(pagever, err_reserved_and_flags)
{
	struct zcrecv_pagever req;

	memset(&req, 0, sizeof(req));
	req.addr = (__u64)(uintptr_t)self->z.addr;
	req.len = self->page;
	req.op = ZCRECV_PAGEVER_ARM;
	req.flags = 1;
	EXPECT_EQ(-EINVAL, zcrecv_ioctl(self->fd, ZCRECV_IOC_PAGEVER, &req));
	req.flags = 0;
	req.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, zcrecv_ioctl(self->fd, ZCRECV_IOC_PAGEVER, &req));
}

TEST_F(pagever, err_unknown_op)
{
	EXPECT_EQ(-EOPNOTSUPP, pv_ioctl(self->fd, self->z.addr, self->page, 0,
					NULL));
	EXPECT_EQ(-EOPNOTSUPP, pv_ioctl(self->fd, self->z.addr, self->page, 3,
					NULL));
	EXPECT_EQ(-EOPNOTSUPP, pv_ioctl(self->fd, self->z.addr, self->page,
					0xffffffffu, NULL));
}

TEST_F(pagever, err_unaligned_or_empty)
{
	EXPECT_EQ(-EINVAL, pv_ioctl(self->fd, self->z.addr + 1, self->page,
				    ZCRECV_PAGEVER_ARM, NULL));
	EXPECT_EQ(-EINVAL, pv_ioctl(self->fd, self->z.addr, self->page - 1,
				    ZCRECV_PAGEVER_ARM, NULL));
	EXPECT_EQ(-EINVAL, pv_ioctl(self->fd, self->z.addr, 0,
				    ZCRECV_PAGEVER_ARM, NULL));
}

TEST_F(pagever, err_overflow)
{
	EXPECT_EQ(-EOVERFLOW, pv_ioctl(self->fd, self->z.addr,
				       (__u64)0 - 2 * self->page,
				       ZCRECV_PAGEVER_ARM, NULL));
}

TEST_F(pagever, err_huge_count_leaves_zone)
{
	/* far more pages than the zone: the range leaves it */
	EXPECT_EQ(-EINVAL, pv_ioctl(self->fd, self->z.addr,
				    1ULL << 40, ZCRECV_PAGEVER_ARM, NULL));
	EXPECT_EQ(-EINVAL, pv_ioctl(self->fd, self->z.addr + self->page,
				    self->z.len, ZCRECV_PAGEVER_BUMP, NULL));
}

TEST_F(pagever, err_outside_zones)
{
	char *anon = mmap(NULL, self->page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_NE(MAP_FAILED, anon);
	EXPECT_EQ(-EINVAL, pv_ioctl(self->fd, anon, self->page,
				    ZCRECV_PAGEVER_ARM, NULL));
	munmap(anon, self->page);
	/* nothing mapped there now */
	EXPECT_EQ(-EFAULT, pv_ioctl(self->fd, anon, self->page,
				    ZCRECV_PAGEVER_ARM, NULL));
}

TEST_F(pagever, err_zone_without_versions)
{
	EXPECT_EQ(-EOPNOTSUPP, pv_ioctl(self->fd, self->plain.addr,
					self->page, ZCRECV_PAGEVER_ARM, NULL));
}

TEST_F(pagever, err_bad_pointer)
{
	struct zcrecv_pagever *req;

	EXPECT_EQ(-EFAULT, zcrecv_ioctl(self->fd, ZCRECV_IOC_PAGEVER, NULL));
	/* a good request the answer cannot be written back to */
	req = mmap(NULL, self->page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, req);
	req->addr = (__u64)(uintptr_t)self->z.addr;
	req->len = self->page;
	req->op = ZCRECV_PAGEVER_BUMP;
	ASSERT_EQ(0, mprotect(req, self->page, PROT_READ));
	EXPECT_EQ(-EFAULT, zcrecv_ioctl(self->fd, ZCRECV_IOC_PAGEVER, req));
	munmap(req, self->page);
}

TEST_F(pagever, err_other_process)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (!pid) {
		/* the child's copy of the file is not its own */
		_exit(pv_ioctl(self->fd, self->z.addr, self->page,
			       ZCRECV_PAGEVER_ARM, NULL) == -EPERM ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(pagever, err_create_huge_with_versions)
{
	struct zcrecv_zone_create zc;

	memset(&zc, 0, sizeof(zc));
	zc.pages = 512;
	zc.flags = ZCRECV_ZONE_PAGEVER | ZCRECV_ZONE_HUGE;
	EXPECT_EQ(-EOPNOTSUPP, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE,
					    &zc));
	zc.flags = ZCRECV_ZONE_PAGEVER << 1;
	EXPECT_EQ(-EINVAL, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE,
					&zc));
}

/*
 * Writers store unique values into random pages while the reader runs the
 * library's read protocol over and over: look at the versions, arm the
 * range when one is odd, look again. Between two reads the reader copies
 * the zone twice (right after the first read, right before the second):
 * a page whose version is the same in both reads must hold the same bytes
 * in both copies, or a write got past the versions.
 */
#define RACE_WRITERS	2
#define RACE_ROUNDS	3000
#define RACE_SECONDS	20

struct race {
	char *base;
	long page;
	volatile int stop;
	unsigned long seq;
};

static void *race_writer(void *arg)
{
	struct race *r = arg;
	unsigned int seed = (unsigned int)(uintptr_t)&seed;

	while (!r->stop) {
		unsigned long v = __atomic_add_fetch(&r->seq, 1,
						     __ATOMIC_RELAXED);
		size_t pg = rand_r(&seed) % ZPAGES;
		size_t w = rand_r(&seed) % (r->page / sizeof(long));
		unsigned int spin = rand_r(&seed) % 4096;

		__atomic_store_n((unsigned long *)(r->base + pg * r->page) + w,
				 v, __ATOMIC_RELAXED);
		/* a pause, so that some pages stay clean for a round */
		while (spin--)
			__asm__ __volatile__("" ::: "memory");
	}
	return NULL;
}

static void race_read(int fd, struct race *r,
		      const struct zcrecv_pagever_head *h, __u64 *out)
{
	size_t i;
	bool odd = false;

	for (i = 0; i < ZPAGES; i++)
		odd |= ver(h, i) & 1;
	if (odd)
		pv_ioctl(fd, r->base, ZPAGES * r->page, ZCRECV_PAGEVER_ARM,
			 NULL);
	for (i = 0; i < ZPAGES; i++)
		out[i] = ver(h, i);
}

TEST_F(pagever, writers_race_reader)
{
	size_t len = ZPAGES * self->page;
	char *after = malloc(len), *before = malloc(len);
	__u64 v1[ZPAGES], v2[ZPAGES];
	pthread_t t[RACE_WRITERS];
	struct race r = { self->z.addr, self->page, 0, 0 };
	time_t end = time(NULL) + RACE_SECONDS;
	unsigned long lost = 0, same = 0, rounds = 0;
	size_t i;

	ASSERT_TRUE(after && before);
	for (i = 0; i < RACE_WRITERS; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, race_writer, &r));
	race_read(self->fd, &r, self->head, v1);
	while (rounds < RACE_ROUNDS && time(NULL) < end) {
		memcpy(after, self->z.addr, len);
		usleep(50);
		memcpy(before, self->z.addr, len);
		race_read(self->fd, &r, self->head, v2);
		for (i = 0; i < ZPAGES; i++) {
			if (v1[i] != v2[i])
				continue;
			same++;
			if (memcmp(after + i * self->page,
				   before + i * self->page, self->page))
				lost++;
		}
		memcpy(v1, v2, sizeof(v1));
		rounds++;
	}
	r.stop = 1;
	for (i = 0; i < RACE_WRITERS; i++)
		pthread_join(t[i], NULL);
	TH_LOG("%lu rounds, %lu writes, %lu unchanged page versions",
	       rounds, r.seq, same);
	EXPECT_EQ(0, lost);
	EXPECT_LT(100, rounds);
	/* not vacuous: some pages were compared */
	EXPECT_LT(0, same);
	free(after);
	free(before);
}

TEST_HARNESS_MAIN
