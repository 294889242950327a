// SPDX-License-Identifier: GPL-2.0
/*
 * zcrecv_zone_test - kselftests of zones: creation, mapping rules, first
 * touch allocation, teardown by munmap/close/exit without leaking a page,
 * fork isolation, mremap growth refused, page and zone limits, offsets
 * reused after a zone is freed, and unload refused while a zone exists. Run inside a VM with zcrecv.ko loaded (make test).
 */
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "zcrecv_util.h"

FIXTURE(zone) {
	int fd;
	struct zcrecv_leak_check before;
	long page;
};

FIXTURE_SETUP(zone)
{
	self->page = zcrecv_page_size();
	self->fd = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
	if (self->fd < 0 && errno == ENOENT)
		SKIP(return, "%s missing: zcrecv.ko not loaded", ZCRECV_DEV);
	ASSERT_LE(0, self->fd);
	zcrecv_leak_snapshot(&self->before);
}

FIXTURE_TEARDOWN(zone)
{
	if (self->fd < 0)
		return;
	close(self->fd);
	/* Every test leaves the module's books balanced. */
	EXPECT_TRUE(zcrecv_leak_same(&self->before));
}

TEST_F(zone, first_touch_allocates_zeroed_pages)
{
	long long alloc = zcrecv_counter("pages_allocated");
	struct zcrecv_zone_map z;
	size_t i;

	ASSERT_EQ(0, zcrecv_zone_map(self->fd, 16, &z));
	EXPECT_EQ(alloc, zcrecv_counter("pages_allocated"));
	for (i = 0; i < z.len; i += 512)
		ASSERT_EQ(0, z.addr[i]);
	EXPECT_EQ(alloc + 16, zcrecv_counter("pages_allocated"));
	memset(z.addr, 0x5a, z.len);
	EXPECT_EQ(0x5a, z.addr[z.len - 1]);
	zcrecv_zone_unmap(&z);
}

TEST_F(zone, munmap_frees_the_zone)
{
	long long live = zcrecv_counter("zones_live");
	struct zcrecv_zone_map z;

	ASSERT_EQ(0, zcrecv_zone_map(self->fd, 8, &z));
	memset(z.addr, 1, z.len);
	EXPECT_EQ(live + 1, zcrecv_counter("zones_live"));
	zcrecv_zone_unmap(&z);
	EXPECT_EQ(live, zcrecv_counter("zones_live"));
}

TEST_F(zone, partial_munmap_keeps_the_rest)
{
	struct zcrecv_zone_map z;

	ASSERT_EQ(0, zcrecv_zone_map(self->fd, 4, &z));
	memset(z.addr, 7, z.len);
	ASSERT_EQ(0, munmap(z.addr + self->page, self->page));
	EXPECT_EQ(7, z.addr[0]);
	EXPECT_EQ(7, z.addr[2 * self->page]);
	munmap(z.addr, self->page);
	munmap(z.addr + 2 * self->page, 2 * self->page);
}

TEST_F(zone, unmapped_zone_freed_on_close)
{
	struct zcrecv_zone_create zc;
	long long live = zcrecv_counter("zones_live");
	int fd2 = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd2);
	memset(&zc, 0, sizeof(zc));
	zc.pages = 32;
	ASSERT_EQ(0, zcrecv_ioctl(fd2, ZCRECV_IOC_ZONE_CREATE, &zc));
	EXPECT_EQ(live + 1, zcrecv_counter("zones_live"));
	close(fd2);
	EXPECT_EQ(live, zcrecv_counter("zones_live"));
}

TEST_F(zone, create_bad_arguments)
{
	struct zcrecv_zone_create zc;

	memset(&zc, 0, sizeof(zc));
	EXPECT_EQ(-EINVAL, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	zc.pages = 1;
	zc.flags = 1;
	EXPECT_EQ(-EINVAL, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	zc.flags = 0;
	zc.reserved0 = 1;
	EXPECT_EQ(-EINVAL, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	zc.reserved0 = 0;
	zc.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	zc.reserved[1] = 0;
	zc.pages = ~0ULL;
	EXPECT_EQ(-EOVERFLOW, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	EXPECT_EQ(-EFAULT, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, NULL));
}

TEST_F(zone, mmap_rules)
{
	struct zcrecv_zone_create zc;
	void *p;

	memset(&zc, 0, sizeof(zc));
	zc.pages = 4;
	ASSERT_EQ(0, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	/* private mapping */
	p = mmap(NULL, 4 * self->page, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		 self->fd, zc.out_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* wrong size */
	p = mmap(NULL, 2 * self->page, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, zc.out_offset);
	EXPECT_EQ(MAP_FAILED, p);
	/* offset of no zone */
	p = mmap(NULL, 4 * self->page, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, zc.out_offset + self->page);
	EXPECT_EQ(MAP_FAILED, p);
	p = mmap(NULL, 4 * self->page, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	/* right: once */
	p = mmap(NULL, 4 * self->page, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, zc.out_offset);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4 * self->page, PROT_READ,
				   MAP_SHARED, self->fd, zc.out_offset));
	EXPECT_EQ(EBUSY, errno);
	munmap(p, 4 * self->page);
}

TEST_F(zone, mremap_cannot_grow)
{
	struct zcrecv_zone_map z;
	void *p;

	ASSERT_EQ(0, zcrecv_zone_map(self->fd, 2, &z));
	p = mremap(z.addr, z.len, 2 * z.len, MREMAP_MAYMOVE);
	EXPECT_EQ(MAP_FAILED, p);
	zcrecv_zone_unmap(&z);
}

TEST_F(zone, fork_child_cannot_see_zone)
{
	struct zcrecv_zone_map z;
	int status;
	pid_t pid;

	ASSERT_EQ(0, zcrecv_zone_map(self->fd, 2, &z));
	memset(z.addr, 0x42, z.len);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* The inherited fd belongs to the parent's mm. */
		if (mmap(NULL, z.len, PROT_READ, MAP_SHARED, self->fd,
			 z.offset) != MAP_FAILED || errno != EPERM)
			_exit(3);
		/* The zone is not mapped here: this must fault. */
		_exit(*(volatile char *)z.addr == 0x42 ? 1 : 2);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	if (WIFSIGNALED(status)) {
		EXPECT_EQ(SIGSEGV, WTERMSIG(status));
	} else {
		TH_LOG("child exited with %d", WEXITSTATUS(status));
	}
	EXPECT_EQ(0x42, z.addr[0]);
	zcrecv_zone_unmap(&z);
}

/*
 * madvise(MADV_DOFORK) clears VM_DONTCOPY; the child must still not see
 * the zone: its copy is detached (SIGBUS), and the parent's unmap frees
 * the zone while the child lives on.
 */
TEST_F(zone, fork_after_dofork_child_gets_sigbus)
{
	long long live = zcrecv_counter("zones_live");
	struct zcrecv_zone_map z;
	int status, pipefd[2];
	char c;
	pid_t pid;

	ASSERT_EQ(0, zcrecv_zone_map(self->fd, 2, &z));
	memset(z.addr, 0x42, z.len);
	ASSERT_EQ(0, madvise(z.addr, z.len, MADV_DOFORK));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* wait until the parent has unmapped, then touch */
		close(pipefd[1]);
		if (read(pipefd[0], &c, 1) != 1)
			_exit(3);
		_exit(*(volatile char *)z.addr == 0x42 ? 1 : 2);
	}
	close(pipefd[0]);
	EXPECT_EQ(0x42, z.addr[z.len - 1]);
	zcrecv_zone_unmap(&z);
	/* the child's copy holds nothing: the zone is gone already */
	EXPECT_EQ(live, zcrecv_counter("zones_live"));
	ASSERT_EQ(1, write(pipefd[1], "x", 1));
	close(pipefd[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	if (WIFSIGNALED(status)) {
		EXPECT_EQ(SIGBUS, WTERMSIG(status));
	} else {
		TH_LOG("child exited with %d", WEXITSTATUS(status));
	}
}

TEST_F(zone, exit_with_live_zones_frees_everything)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct zcrecv_zone_map z;
		int fd = open(ZCRECV_DEV, O_RDWR), i;

		for (i = 0; i < 4; i++) {
			if (zcrecv_zone_map(fd, 64, &z))
				_exit(1);
			memset(z.addr, i, z.len);
		}
		/* plus one zone never mapped */
		struct zcrecv_zone_create zc = { .pages = 8 };

		if (zcrecv_ioctl(fd, ZCRECV_IOC_ZONE_CREATE, &zc))
			_exit(1);
		_exit(0);	/* no munmap, no close */
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	/* teardown checks the counters */
}

TEST_F(zone, process_page_limit)
{
	long old = zcrecv_param("max_process_pages");
	struct zcrecv_zone_map a, b;
	struct zcrecv_zone_create zc;

	ASSERT_LT(0, old);
	ASSERT_EQ(0, zcrecv_param_write("max_process_pages", 64));
	EXPECT_EQ(0, zcrecv_zone_map(self->fd, 48, &a));
	memset(&zc, 0, sizeof(zc));
	zc.pages = 17;
	EXPECT_EQ(-ENOSPC, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	/* the limit is per process: a second fd shares it */
	int fd2 = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);

	EXPECT_EQ(-ENOSPC, zcrecv_ioctl(fd2, ZCRECV_IOC_ZONE_CREATE, &zc));
	EXPECT_EQ(0, zcrecv_zone_map(fd2, 16, &b));
	zcrecv_zone_unmap(&a);
	EXPECT_EQ(0, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	zcrecv_zone_unmap(&b);
	close(fd2);
	EXPECT_EQ(0, zcrecv_param_write("max_process_pages", old));
}

TEST_F(zone, global_page_limit)
{
	long old = zcrecv_param("max_global_pages");
	long long used = zcrecv_counter("pages_reserved");
	struct zcrecv_zone_create zc;

	ASSERT_LT(0, old);
	ASSERT_EQ(0, zcrecv_param_write("max_global_pages", used + 10));
	memset(&zc, 0, sizeof(zc));
	zc.pages = 11;
	EXPECT_EQ(-ENOSPC, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	zc.pages = 10;
	EXPECT_EQ(0, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	EXPECT_EQ(0, zcrecv_param_write("max_global_pages", old));
}

/* Create a zone of @pages pages on a fresh file, close it: its offset. */
static __u64 offset_of_a_short_lived_zone(__u64 pages)
{
	struct zcrecv_zone_create zc;
	int fd = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
	__u64 off = 0;

	memset(&zc, 0, sizeof(zc));
	zc.pages = pages;
	if (fd >= 0 && !zcrecv_ioctl(fd, ZCRECV_IOC_ZONE_CREATE, &zc))
		off = zc.out_offset;
	if (fd >= 0)
		close(fd);
	return off;
}

/*
 * Offsets are reused once a zone is gone, also after a create that failed
 * writing its answer back (EFAULT), so a process that creates and drops
 * zones forever cannot use up the offsets 32-bit mmap2 can reach.
 */
TEST_F(zone, offsets_reused_after_free)
{
	long pages = zcrecv_param("max_zone_pages");
	struct zcrecv_zone_create *ro;
	__u64 first, off;
	int i;

	ASSERT_LT(0, pages);
	if (pages > 1L << 18)
		pages = 1L << 18;
	first = offset_of_a_short_lived_zone(pages);
	ASSERT_NE(0, first);
	for (i = 0; i < 64; i++) {
		off = offset_of_a_short_lived_zone(pages);
		ASSERT_EQ(first, off);
	}
	/* readable, not writable: the create succeeds up to copy_to_user */
	ro = mmap(NULL, self->page, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	ro->pages = pages;
	ASSERT_EQ(0, mprotect(ro, self->page, PROT_READ));
	for (i = 0; i < 16; i++)
		EXPECT_EQ(-EFAULT,
			  zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, ro));
	munmap(ro, self->page);
	EXPECT_EQ(first, offset_of_a_short_lived_zone(pages));
	/* within what a 32-bit process can pass to mmap2 */
	EXPECT_GT(1ULL << 32, first / self->page + pages);
}

/* The number of zones per process is bounded too (slab per zone). */
TEST_F(zone, process_zone_limit)
{
	long old = zcrecv_param("max_process_zones");
	struct zcrecv_zone_create zc;
	int i, fd2;

	ASSERT_LT(0, old);
	ASSERT_EQ(0, zcrecv_param_write("max_process_zones", 8));
	memset(&zc, 0, sizeof(zc));
	zc.pages = 1;
	for (i = 0; i < 8; i++)
		EXPECT_EQ(0, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE,
					  &zc));
	EXPECT_EQ(-ENOSPC, zcrecv_ioctl(self->fd, ZCRECV_IOC_ZONE_CREATE, &zc));
	/* per process: a second file shares the count */
	fd2 = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-ENOSPC, zcrecv_ioctl(fd2, ZCRECV_IOC_ZONE_CREATE, &zc));
	close(self->fd);	/* frees the eight in one pass */
	self->fd = fd2;
	EXPECT_EQ(0, zcrecv_ioctl(fd2, ZCRECV_IOC_ZONE_CREATE, &zc));
	EXPECT_EQ(-EINVAL, zcrecv_param_write("max_process_zones", 1L << 21));
	EXPECT_EQ(0, zcrecv_param_write("max_process_zones", old));
}

/* Many unmapped zones of one file go at close, counters balanced. */
TEST_F(zone, close_frees_many_zones)
{
	long long live = zcrecv_counter("zones_live");
	struct zcrecv_zone_create zc;
	struct zcrecv_zone_map z;
	int i, fd2 = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd2);
	memset(&zc, 0, sizeof(zc));
	zc.pages = 1;
	for (i = 0; i < 4000; i++)
		ASSERT_EQ(0, zcrecv_ioctl(fd2, ZCRECV_IOC_ZONE_CREATE, &zc));
	/* mmap finds its zone among them */
	ASSERT_EQ(0, zcrecv_zone_map(fd2, 2, &z));
	memset(z.addr, 9, z.len);
	EXPECT_EQ(live + 4001, zcrecv_counter("zones_live"));
	EXPECT_EQ(9, z.addr[z.len - 1]);
	zcrecv_zone_unmap(&z);	/* a mapping holds the file: unmap first */
	EXPECT_EQ(live + 4000, zcrecv_counter("zones_live"));
	close(fd2);
	EXPECT_EQ(live, zcrecv_counter("zones_live"));
}

/*
 * Up to 6.1 a task caches its own RSS changes (page faults, vm_insert_page)
 * and adds them to the mm's counters, which /proc and the OOM killer read,
 * every 64 faults; zaps go to the mm directly. Fault 128 fresh pages so the
 * cache is flushed before a reading (the munmap then takes back what
 * reached the mm: what is off is less than 64 pages).
 */
static void rss_settle(long page)
{
	char *p = mmap(NULL, 128 * page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int i;

	if (p == MAP_FAILED)
		return;
	for (i = 0; i < 128; i++)
		((volatile char *)p)[i * page] = 1;
	munmap(p, 128 * page);
}

/*
 * Zone memory counts where the OOM killer looks (RSS, hence oom_score): the
 * pages of a touched zone are mapped, and an exchange maps both sides again
 * instead of leaving the source's new pages unmapped (an unmapped zone page
 * counts nowhere).
 */
TEST_F(zone, zone_memory_visible_to_oom_killer)
{
	const long pages = 8192;	/* 32 MiB per zone */
	struct zcrecv_zone_map a, b;
	long rss0, rss1, rss2, oom0, oom1, oom2, old_pp;
	long long ram_kb = sysconf(_SC_PHYS_PAGES) * (self->page >> 10);

	old_pp = zcrecv_param("max_process_pages");
	if (old_pp < 2 * pages)
		ASSERT_EQ(0, zcrecv_param_write("max_process_pages", 2 * pages));
	rss_settle(self->page);
	rss0 = zcrecv_status_kb("VmRSS");
	oom0 = zcrecv_sysfs_read("/proc/self/", "oom_score");
	ASSERT_EQ(0, zcrecv_zone_map(self->fd, pages, &a));
	ASSERT_EQ(0, zcrecv_zone_map(self->fd, pages, &b));
	memset(a.addr, 1, a.len);
	memset(b.addr, 2, b.len);
	rss_settle(self->page);
	rss1 = zcrecv_status_kb("VmRSS");
	oom1 = zcrecv_sysfs_read("/proc/self/", "oom_score");
	EXPECT_LE(rss0 + 2 * pages * (self->page >> 10), rss1);
	/* oom_score is in thousandths of RAM: at least half the zones' share */
	EXPECT_LE(oom0 + 2 * pages * (self->page >> 10) * 1000 / ram_kb / 2,
		  oom1);

	ASSERT_EQ(0, zcrecv_remap1(self->fd, a.addr, b.addr, a.len));
	rss_settle(self->page);
	rss2 = zcrecv_status_kb("VmRSS");
	oom2 = zcrecv_sysfs_read("/proc/self/", "oom_score");
	TH_LOG("VmRSS %ld -> %ld -> %ld kB, oom_score %ld -> %ld -> %ld",
	       rss0, rss1, rss2, oom0, oom1, oom2);
	/* less than 1 MiB off (see rss_settle); the source side was 32 */
	EXPECT_LE(rss1 - 1024, rss2);
	EXPECT_LE(oom1 - 1, oom2);
	EXPECT_EQ(2, a.addr[0]);
	EXPECT_EQ(1, b.addr[b.len - 1]);
	zcrecv_zone_unmap(&a);
	zcrecv_zone_unmap(&b);
	EXPECT_EQ(0, zcrecv_param_write("max_process_pages", old_pp));
}

/* A fork that copies a zone's VMA (MADV_DOFORK) leaves the owner mapped. */
TEST_F(zone, dofork_keeps_owner_pages_mapped)
{
	enum { N = 16 };
	struct zcrecv_zone_map z;
	uint64_t pm[N];
	int i, status, absent = 0;
	pid_t pid;

	ASSERT_EQ(0, zcrecv_zone_map(self->fd, N, &z));
	memset(z.addr, 0x42, z.len);
	ASSERT_EQ(0, madvise(z.addr, z.len, MADV_DOFORK));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(*(volatile char *)z.addr == 0x42 ? 1 : 2);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS);
	ASSERT_EQ(0, zcrecv_pagemap(z.addr, N, pm));
	for (i = 0; i < N; i++)
		if (!(pm[i] & ZCRECV_PM_PRESENT))
			absent++;
	EXPECT_EQ(0, absent);
	zcrecv_zone_unmap(&z);
}

#define CG_ROOT "/sys/fs/cgroup/"

static int cg_write(const char *cg, const char *file, const char *val)
{
	char path[256];
	int fd, n = strlen(val), ret = 0;

	snprintf(path, sizeof(path), CG_ROOT "%s%s%s", cg, *cg ? "/" : "",
		 file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

static long long cg_read(const char *cg, const char *file)
{
	char path[128];

	snprintf(path, sizeof(path), CG_ROOT "%.64s/", cg);
	return zcrecv_sysfs_read(path, file);
}

/* Move the calling process into cgroup @cg. */
static int cg_enter(const char *cg)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", getpid());
	return cg_write(cg, "cgroup.procs", pid);
}

/*
 * A zone's pages are charged to the memory cgroup of the process that
 * created the zone, not to the first toucher: a process in a small cgroup
 * that reads another process's untouched zone with process_vm_readv is not
 * charged for it (and not OOM-killed). Also for a huge zone (@flags
 * ZCRECV_ZONE_HUGE), whose 2 MiB units would not fit the reader's cgroup.
 */
static void foreign_reader(struct __test_metadata *_metadata,
			   unsigned int flags)
{
	const size_t zone_len = 32 << 20, chunk = 1 << 20;
	int to_parent[2], to_owner[2], status;
	unsigned long long addr = 0;
	long long owner_mem, reader_mem;
	pid_t owner, reader;
	char c;

	if (access(CG_ROOT "cgroup.controllers", F_OK))
		mount("none", CG_ROOT, "cgroup2", 0, NULL);
	if (cg_write("", "cgroup.subtree_control", "+memory"))
		SKIP(return, "no cgroup v2 memory controller");
	rmdir(CG_ROOT "zcr_owner");
	rmdir(CG_ROOT "zcr_reader");
	ASSERT_EQ(0, mkdir(CG_ROOT "zcr_owner", 0755));
	ASSERT_EQ(0, mkdir(CG_ROOT "zcr_reader", 0755));
	ASSERT_EQ(0, cg_write("zcr_reader", "memory.max", "16M"));
	ASSERT_EQ(0, pipe(to_parent));
	ASSERT_EQ(0, pipe(to_owner));

	owner = fork();
	ASSERT_LE(0, owner);
	if (owner == 0) {
		struct zcrecv_zone_map z;
		int fd;

		if (cg_enter("zcr_owner"))
			_exit(2);
		fd = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
		if (fd < 0 || zcrecv_zone_map_flags(fd, zone_len / getpagesize(),
						    flags, &z))
			_exit(3);
		addr = (uintptr_t)z.addr;	/* never touched here */
		if (write(to_parent[1], &addr, sizeof(addr)) != sizeof(addr))
			_exit(4);
		if (read(to_owner[0], &c, 1) != 1)
			_exit(5);
		_exit(0);
	}
	ASSERT_EQ(sizeof(addr), read(to_parent[0], &addr, sizeof(addr)));

	reader = fork();
	ASSERT_LE(0, reader);
	if (reader == 0) {
		char *buf = malloc(chunk);
		size_t off;

		if (!buf || cg_enter("zcr_reader"))
			_exit(2);
		for (off = 0; off < zone_len; off += chunk) {
			struct iovec l = { buf, chunk };
			struct iovec r = { (void *)(uintptr_t)(addr + off), chunk };

			if (process_vm_readv(owner, &l, 1, &r, 1, 0) != (ssize_t)chunk)
				_exit(3);
			if (buf[0] || buf[chunk - 1])
				_exit(4);
		}
		_exit(0);
	}
	ASSERT_EQ(reader, waitpid(reader, &status, 0));
	reader_mem = cg_read("zcr_reader", "memory.current");
	owner_mem = cg_read("zcr_owner", "memory.current");
	EXPECT_TRUE(WIFEXITED(status));
	if (WIFEXITED(status)) {
		EXPECT_EQ(0, WEXITSTATUS(status));
	} else {
		TH_LOG("reader killed by signal %d", WTERMSIG(status));
	}
	TH_LOG("after reading the zone: reader cgroup %lld kB, owner cgroup %lld kB",
	       reader_mem >> 10, owner_mem >> 10);
	/* the reader paid for its own few pages, the owner for the zone */
	EXPECT_GT(8LL << 20, reader_mem);
	EXPECT_LE((long long)zone_len, owner_mem);

	ASSERT_EQ(1, write(to_owner[1], "x", 1));
	ASSERT_EQ(owner, waitpid(owner, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(0, rmdir(CG_ROOT "zcr_reader"));
	EXPECT_EQ(0, rmdir(CG_ROOT "zcr_owner"));
}

TEST(foreign_reader_charges_the_owner)
{
	foreign_reader(_metadata, 0);
}

TEST(foreign_reader_charges_the_owner_huge)
{
	struct zcrecv_api api;
	int fd = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, zcrecv_handshake(fd, &api));
	close(fd);
	if (!(api.out_features & ZCRECV_FEATURE_HUGE))
		SKIP(return, "module without ZCRECV_FEATURE_HUGE");
	foreign_reader(_metadata, ZCRECV_ZONE_HUGE);
}

TEST(unload_refused_while_zone_exists)
{
	struct zcrecv_zone_map z;
	int fd;

	if (!zcrecv_ko())
		SKIP(return, "ZCRECV_KO not set: cannot reload the module");
	fd = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, zcrecv_zone_map(fd, 4, &z));
	close(fd);	/* the mapping still holds the file */
	memset(z.addr, 3, z.len);
	EXPECT_NE(0, system("rmmod zcrecv 2>/dev/null"));
	EXPECT_EQ(3, z.addr[z.len - 1]);
	zcrecv_zone_unmap(&z);
	EXPECT_EQ(0, zcrecv_counter("zones_live"));
	EXPECT_EQ(zcrecv_counter("pages_allocated"),
		  zcrecv_counter("pages_freed"));
	ASSERT_EQ(0, system("rmmod zcrecv"));
	ASSERT_EQ(0, zcrecv_insmod());
}

TEST_HARNESS_MAIN
