// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_pagever.c - the contract of lib/pagever (pagever.h) for every
 * mechanism this kernel has (uffd-async, uffd-sync, hash; one it lacks
 * skips with the reason; mechs_here says which ran):
 *  - a write changes the page's version, by a store, read(2) and pread(2)
 *    into the range, process_vm_writev() from another process,
 *    MADV_DONTNEED (alone and then a rewrite), munmap + mmap at the same
 *    address (or the read fails), copy-on-write in the parent after fork,
 *    in THP memory;
 *  - random page subsets written between reads for many rounds: written
 *    pages change, clean pages keep their version;
 *  - other threads storing while the library reads: no write missed;
 *  - an unmapped range fails the read; untrack and close give back
 *    normal memory; memory another userfaultfd registered is -EBUSY (the
 *    hash takes it); bad arguments are -EINVAL; AUTO and
 *    ZCRECV_PREFETCH_PAGEVER choose.
 * kmod (zcrecv.ko's versions, in the VMs where the module is loaded; the
 * memory is then a ZCRECV_ZONE_PAGEVER zone) runs the tests that apply to
 * zones (a zone is not inherited by fork, is no THP and takes no
 * userfaultfd), and its own: MADV_DONTNEED keeps a zone's bytes, munmap,
 * mmap over and mremap away fail the read, an exchange into the range
 * changes versions, reads of a clean range make no system call, AUTO
 * takes the module's versions for versioned zones only, and a module
 * without them (or no module) leaves the other mechanisms.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/zcrecv.h>

#include "pagever/pagever.h"
#include "pagever/pv_int.h"
#include "zt.h"

#define PG	4096UL
#define NPG	64		/* pages of the usual test range */
#define ROUNDS	200

/* kmod: /dev/zcrecv, and the mechanism of the running test. */
static int kfd = -1;
static enum zcr_pv_mech cur_mech;

static int kmod_fd_or_skip(void)
{
	struct zcrecv_api api;

	if (kfd < 0)
		kfd = open("/dev/" ZCRECV_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (kfd < 0)
		ZT_SKIP("kmod: no /dev/zcrecv here (the VMs load zcrecv.ko)");
	memset(&api, 0, sizeof(api));
	ZT_ASSERT(ioctl(kfd, ZCRECV_IOC_API, &api) == 0);
	if (!(api.out_features & ZCRECV_FEATURE_PAGEVER))
		ZT_SKIP("kmod: this zcrecv.ko keeps no page versions");
	return kfd;
}

/* A zone of n pages of the kmod descriptor, mapped; flags of the zone. */
static char *map_zone(size_t n, unsigned int flags)
{
	struct zcrecv_zone_create zc;
	char *p;

	memset(&zc, 0, sizeof(zc));
	zc.pages = n;
	zc.flags = flags;
	ZT_ASSERT(ioctl(kfd, ZCRECV_IOC_ZONE_CREATE, &zc) == 0);
	p = mmap(NULL, n * PG, PROT_READ | PROT_WRITE, MAP_SHARED, kfd,
		 (off_t)zc.out_offset);
	ZT_ASSERT(p != MAP_FAILED);
	return p;
}

static struct zcr_pv *open_or_skip(enum zcr_pv_mech m)
{
	struct zcr_pv *pv = NULL;
	int ret;

	cur_mech = m;
	if (m == ZCR_PV_KMOD)
		ret = __zcr_pv_open_kmod(&pv, m, kmod_fd_or_skip());
	else
		ret = __zcr_pv_open(&pv, m);

	if (ret == -EOPNOTSUPP)
		ZT_SKIP("%s: not available on this kernel",
			__zcr_pv_mech_name(m));
	ZT_ASSERT_MSG(ret == 0, "open %s: %d", __zcr_pv_mech_name(m), ret);
	ZT_EXPECT_EQ(__zcr_pv_mech(pv), m);
	return pv;
}

/* Memory to track: a versioned zone under kmod, else anonymous. */
static char *map_pages(size_t n)
{
	char *p;

	if (cur_mech == ZCR_PV_KMOD)
		return map_zone(n, ZCRECV_ZONE_PAGEVER);
	p = mmap(NULL, n * PG, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ZT_ASSERT(p != MAP_FAILED);
	return p;
}

/* Fill every page with a byte pattern of @round (never all zeros). */
static void fill(char *p, size_t n, int round)
{
	size_t i;

	for (i = 0; i < n; i++)
		memset(p + i * PG, 1 + (int)((round * 7 + i) % 250), PG);
}

static void rd(struct zcr_pv *pv, struct zcr_pv_range *r, uint64_t *v)
{
	int ret = __zcr_pv_read(pv, r, v);

	ZT_ASSERT_MSG(ret == 0, "read: %d", ret);
}

/* Pages [lo, hi) changed, the others of the range n kept their version. */
static void expect(const uint64_t *a, const uint64_t *b, size_t n,
		   size_t lo, size_t hi, const char *what)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (i >= lo && i < hi)
			ZT_ASSERT_MSG(a[i] != b[i], "%s: page %zu written, "
				      "version kept", what, i);
		else
			ZT_ASSERT_MSG(a[i] == b[i], "%s: page %zu clean, "
				      "version changed", what, i);
	}
}

/* Track NPG fresh pages, filled, and read once into v. */
static char *setup(struct zcr_pv *pv, struct zcr_pv_range **r, uint64_t *v)
{
	char *p = map_pages(NPG);

	fill(p, NPG, 0);
	ZT_EXPECT_EQ(__zcr_pv_track(pv, p, NPG * PG, r), 0);
	ZT_EXPECT_EQ(__zcr_pv_npages(*r), NPG);
	rd(pv, *r, v);
	return p;
}

/*
 * The usual start of a test: tracker pv of mechanism m (or a skip), NPG
 * filled pages p tracked as r, read once into a; b for the next read.
 */
#define PV_FIXTURE(m)							\
	struct zcr_pv *pv = open_or_skip(m);				\
	uint64_t a[NPG], b[NPG];					\
	struct zcr_pv_range *r;						\
	char *p = setup(pv, &r, a)

/* Random subsets of pages stored to between reads, many rounds. */
static void t_rounds(enum zcr_pv_mech m)
{
	PV_FIXTURE(m);
	unsigned int seed = 12345;
	char w[NPG];
	int round;
	size_t i;

	for (round = 1; round <= ROUNDS; round++) {
		for (i = 0; i < NPG; i++) {
			w[i] = rand_r(&seed) % 4 == 0;
			if (w[i])	/* one byte, anywhere in the page */
				p[i * PG + rand_r(&seed) % PG] += 1 + round % 200;
		}
		rd(pv, r, b);
		for (i = 0; i < NPG; i++) {
			if (w[i])
				ZT_ASSERT_MSG(a[i] != b[i], "round %d: page "
					      "%zu written, version kept",
					      round, i);
			else
				ZT_ASSERT_MSG(a[i] == b[i], "round %d: page "
					      "%zu clean, version changed",
					      round, i);
		}
		memcpy(a, b, NPG * sizeof(*a));
	}
	__zcr_pv_close(pv);
}

/* Never-touched pages count too: the first store to each is seen. */
static void t_untouched(enum zcr_pv_mech m)
{
	struct zcr_pv *pv = open_or_skip(m);
	uint64_t a[NPG], b[NPG];
	char *p = map_pages(NPG);
	struct zcr_pv_range *r;

	ZT_EXPECT_EQ(__zcr_pv_track(pv, p, NPG * PG, &r), 0);
	rd(pv, r, a);
	rd(pv, r, b);
	expect(a, b, NPG, 0, 0, "untouched, twice");
	p[5 * PG] = 1;
	p[63 * PG + 100] = 1;
	rd(pv, r, b);
	ZT_ASSERT(a[5] != b[5] && a[63] != b[63]);
	ZT_ASSERT(a[4] == b[4] && a[6] == b[6]);
	__zcr_pv_close(pv);
}

/* read(2) from a pipe and pread(2) from a file into the range. */
static void t_syscall(enum zcr_pv_mech m)
{
	PV_FIXTURE(m);
	char tmpl[] = "/tmp/zt_pagever_XXXXXX", buf[3 * PG];
	int fds[2], fd;

	ZT_ASSERT(pipe(fds) == 0);
	memset(buf, 0xa5, sizeof(buf));
	ZT_EXPECT_EQ(write(fds[1], buf, 100), 100);
	ZT_EXPECT_EQ(read(fds[0], p + 10 * PG + 50, 100), 100);
	rd(pv, r, b);
	expect(a, b, NPG, 10, 11, "read(2)");
	memcpy(a, b, NPG * sizeof(*a));

	fd = mkstemp(tmpl);
	ZT_ASSERT(fd >= 0);
	unlink(tmpl);
	memset(buf, 0x5a, sizeof(buf));
	ZT_EXPECT_EQ(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	ZT_EXPECT_EQ(pread(fd, p + 20 * PG, 2 * PG, 0), (ssize_t)(2 * PG));
	rd(pv, r, b);
	expect(a, b, NPG, 20, 22, "pread(2)");
	close(fd);
	close(fds[0]);
	close(fds[1]);
	__zcr_pv_close(pv);
}

/* Another process writes into the range with process_vm_writev(). */
static void t_remote(enum zcr_pv_mech m)
{
	PV_FIXTURE(m);
	pid_t parent = getpid(), child;
	int status;

	/* Yama ptrace_scope 1: let the child write our memory. */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	child = fork();
	ZT_ASSERT(child >= 0);
	if (child == 0) {
		char data[2 * PG];
		struct iovec l = { data, sizeof(data) };
		struct iovec rv = { p + 30 * PG + 8, sizeof(data) };

		memset(data, 0x77, sizeof(data));
		_exit(process_vm_writev(parent, &l, 1, &rv, 1, 0) ==
		      (ssize_t)sizeof(data) ? 0 : 1);
	}
	ZT_ASSERT(waitpid(child, &status, 0) == child);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		ZT_SKIP("process_vm_writev into the parent not allowed here");
	ZT_EXPECT_EQ((unsigned char)p[31 * PG], 0x77);
	rd(pv, r, b);
	expect(a, b, NPG, 30, 33, "process_vm_writev");
	__zcr_pv_close(pv);
}

/* MADV_DONTNEED alone (the bytes become zeros), then a rewrite. */
static void t_dontneed(enum zcr_pv_mech m)
{
	PV_FIXTURE(m);
	int i;

	ZT_ASSERT(madvise(p + 8 * PG, 4 * PG, MADV_DONTNEED) == 0);
	rd(pv, r, b);
	expect(a, b, NPG, 8, 12, "MADV_DONTNEED");
	for (i = 0; i < 5; i++) {
		/* A page zapped and written again before the next read. */
		memcpy(a, b, NPG * sizeof(*a));
		ZT_ASSERT(madvise(p + 40 * PG, PG, MADV_DONTNEED) == 0);
		p[40 * PG + 7] = (char)(i + 1);
		rd(pv, r, b);
		expect(a, b, NPG, 40, 41, "MADV_DONTNEED + rewrite");
		/* Rewritten after a read that saw it zapped. */
		memcpy(a, b, NPG * sizeof(*a));
		p[8 * PG + 9] = (char)(i + 1);
		rd(pv, r, b);
		ZT_ASSERT_MSG(a[8] != b[8], "rewrite after MADV_DONTNEED");
	}
	__zcr_pv_close(pv);
}

/*
 * munmap + mmap at the same address: the read fails, or every page of
 * the new mapping changed version; then a plain munmap fails the read.
 */
static void t_remap(enum zcr_pv_mech m)
{
	PV_FIXTURE(m);
	char *q;
	int ret;
	size_t i;

	ZT_ASSERT(munmap(p + 16 * PG, 8 * PG) == 0);
	q = mmap(p + 16 * PG, 8 * PG, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ZT_ASSERT(q == p + 16 * PG);
	ret = __zcr_pv_read(pv, r, b);
	if (ret == 0) {
		for (i = 16; i < 24; i++)
			ZT_ASSERT_MSG(a[i] != b[i], "page %zu remapped, "
				      "version kept", i);
	} else {
		ZT_ASSERT_MSG(ret < 0, "read: %d", ret);
	}
	__zcr_pv_untrack(pv, r);
	/* A hole in the range: the read must fail, not vouch. */
	ZT_EXPECT_EQ(__zcr_pv_track(pv, p, NPG * PG, &r), 0);
	rd(pv, r, a);
	ZT_ASSERT(munmap(p + 50 * PG, PG) == 0);
	ret = __zcr_pv_read(pv, r, b);
	ZT_ASSERT_MSG(ret < 0, "read of a range with a hole: %d", ret);
	ZT_ASSERT(__zcr_pv_read(pv, r, b) < 0);
	__zcr_pv_untrack(pv, r);
	__zcr_pv_close(pv);
}

/*
 * fork: the parent's stores after fork are copy-on-write faults on pages
 * the child shares; they change versions like any store. The child's own
 * stores do not touch the parent's pages.
 */
static void t_fork(enum zcr_pv_mech m)
{
	PV_FIXTURE(m);
	int status, round;
	pid_t child;

	for (round = 0; round < 4; round++) {
		int pipefd[2];
		char c;

		ZT_ASSERT(pipe(pipefd) == 0);
		child = fork();
		ZT_ASSERT(child >= 0);
		if (child == 0) {
			/* Store into the child's copy, then wait. */
			memset(p, 0x33, NPG * PG);
			_exit(read(pipefd[0], &c, 1) == 1 ? 0 : 1);
		}
		/* Stores while the child still shares the pages. */
		p[(size_t)(3 + round) * PG] ^= 0x1;
		p[50 * PG + 1] ^= 0x1;
		rd(pv, r, b);
		ZT_ASSERT_MSG(a[3 + round] != b[3 + round] && a[50] != b[50],
			      "round %d: copy-on-write after fork", round);
		ZT_ASSERT(a[0] == b[0] && a[60] == b[60]);
		ZT_EXPECT_EQ(write(pipefd[1], "x", 1), 1);
		ZT_ASSERT(waitpid(child, &status, 0) == child);
		ZT_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		close(pipefd[0]);
		close(pipefd[1]);
		ZT_EXPECT_EQ((unsigned char)p[0], 1);
		memcpy(a, b, NPG * sizeof(*a));
	}
	__zcr_pv_close(pv);
}

/* THP: a 2 MiB-aligned range advised MADV_HUGEPAGE, random rounds. */
static void t_thp(enum zcr_pv_mech m)
{
	enum { n = 1024 };	/* two 2 MiB units */
	struct zcr_pv *pv = open_or_skip(m);
	uint64_t a[n], b[n];
	size_t i;
	unsigned int seed = 99;
	struct zcr_pv_range *r;
	char *raw, *p;
	int round;

	raw = mmap(NULL, (n + 512) * PG, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ZT_ASSERT(raw != MAP_FAILED);
	p = (char *)(((uintptr_t)raw + (2UL << 20) - 1) & ~((2UL << 20) - 1));
	madvise(p, n * PG, MADV_HUGEPAGE);
	fill(p, n, 0);
	ZT_EXPECT_EQ(__zcr_pv_track(pv, p, n * PG, &r), 0);
	rd(pv, r, a);
	rd(pv, r, b);
	expect(a, b, n, 0, 0, "THP, no write");
	for (round = 1; round <= 50; round++) {
		size_t k = rand_r(&seed) % n;

		p[k * PG + rand_r(&seed) % PG] += 1;
		rd(pv, r, b);
		/* A THP may report its whole 2 MiB: only k is certain. */
		ZT_ASSERT_MSG(a[k] != b[k], "round %d: THP page %zu written, "
			      "version kept", round, k);
		memcpy(a, b, n * sizeof(*a));
	}
	/* Clean again: nothing changes. */
	rd(pv, r, b);
	for (i = 0; i < n; i++)
		ZT_ASSERT(a[i] == b[i]);
	__zcr_pv_close(pv);
	munmap(raw, (n + 512) * PG);
}

/*
 * Threads store while the library reads. Each store writes a new value
 * (a global sequence) into the first word of a page. The main thread
 * samples the words after a read returned and again before the next: a
 * page whose word changed in between must have changed version.
 */
struct writers {
	uint64_t *words[NPG];
	atomic_ullong seq;
	atomic_int stop;
};

static void *writer(void *arg)
{
	struct writers *w = arg;
	unsigned int seed = (unsigned int)(uintptr_t)pthread_self();

	while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
		size_t i = rand_r(&seed) % NPG;

		if (i % 3 == 0)		/* a third of the pages stay clean */
			continue;
		__atomic_store_n(w->words[i], atomic_fetch_add(&w->seq, 1) + 1,
				 __ATOMIC_RELAXED);
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void t_threads(enum zcr_pv_mech m)
{
	PV_FIXTURE(m);
	uint64_t x1[NPG], x2[NPG];
	static struct writers w;
	pthread_t t[2];
	int round, seen = 0;
	double end;
	size_t i;

#ifdef __SANITIZE_THREAD__
	if (m == ZCR_PV_HASH)
		ZT_SKIP("the hash reads pages the writers store to: a race "
			"by design");
#endif
	for (i = 0; i < NPG; i++)
		w.words[i] = (uint64_t *)(p + i * PG);
	for (i = 0; i < 2; i++)
		ZT_ASSERT(pthread_create(&t[i], NULL, writer, &w) == 0);
	/*
	 * 2000 rounds, or 20 s of them: in a TCG guest on a loaded host a
	 * synchronous write fault or a hash of the range takes milliseconds,
	 * and 2000 rounds once took more than the test's minute.
	 */
	end = now_s() + 20;
	for (round = 0; round < 2000 && (round < 20 || now_s() < end);
	     round++) {
		for (i = 0; i < NPG; i++)
			x1[i] = __atomic_load_n(w.words[i], __ATOMIC_RELAXED);
		usleep(50);
		for (i = 0; i < NPG; i++)
			x2[i] = __atomic_load_n(w.words[i], __ATOMIC_RELAXED);
		rd(pv, r, b);
		for (i = 0; i < NPG; i++) {
			if (x1[i] != x2[i])
				ZT_ASSERT_MSG(a[i] != b[i], "round %d: page "
					      "%zu stored to, version kept",
					      round, i);
			seen += x1[i] != x2[i];
			if (i % 3 == 0)
				ZT_ASSERT_MSG(a[i] == b[i], "round %d: page "
					      "%zu clean, version changed",
					      round, i);
		}
		memcpy(a, b, NPG * sizeof(*a));
	}
	atomic_store(&w.stop, 1);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	ZT_ASSERT(seen > 100);
	__zcr_pv_close(pv);
}

/* Untrack and close give back memory that stores and read(2) can use. */
static void t_release(enum zcr_pv_mech m)
{
	struct zcr_pv *pv = open_or_skip(m);
	uint64_t a[NPG];
	struct zcr_pv_range *r, *r2;
	char *p = setup(pv, &r, a), *q = map_pages(NPG);
	int fds[2];

	__zcr_pv_untrack(pv, r);
	memset(p, 0x11, NPG * PG);
	ZT_ASSERT(pipe(fds) == 0);
	ZT_EXPECT_EQ(write(fds[1], "abcd", 4), 4);
	ZT_EXPECT_EQ(read(fds[0], p + 3 * PG, 4), 4);
	/* Tracked again, and closed with the range still tracked. */
	ZT_EXPECT_EQ(__zcr_pv_track(pv, p, NPG * PG, &r), 0);
	ZT_EXPECT_EQ(__zcr_pv_track(pv, q + 1, 10 * PG, &r2), 0);
	ZT_EXPECT_EQ(__zcr_pv_npages(r2), 11);
	rd(pv, r, a);
	__zcr_pv_close(pv);
	memset(p, 0x22, NPG * PG);
	memset(q, 0x22, NPG * PG);
	ZT_EXPECT_EQ(write(fds[1], "abcd", 4), 4);
	ZT_EXPECT_EQ(read(fds[0], q + 3 * PG, 4), 4);
	ZT_EXPECT_EQ(q[3 * PG], 'a');
	close(fds[0]);
	close(fds[1]);
}

/* Memory another userfaultfd registered: -EBUSY (the hash takes it). */
static void t_busy(enum zcr_pv_mech m)
{
	struct zcr_pv *pv = open_or_skip(m);
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	struct zcr_pv_range *r;
	char *p = map_pages(NPG);
	int fd, ret;

	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | 1);
	if (fd < 0)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		ZT_SKIP("no userfaultfd here: %s", strerror(errno));
	ZT_ASSERT(ioctl(fd, UFFDIO_API, &api) == 0);
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)p;
	reg.range.len = NPG * PG;
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	ZT_ASSERT(ioctl(fd, UFFDIO_REGISTER, &reg) == 0);
	ret = __zcr_pv_track(pv, p + 4 * PG, 4 * PG, &r);
	if (m == ZCR_PV_HASH) {
		ZT_EXPECT_EQ(ret, 0);
	} else {
		ZT_EXPECT_EQ(ret, -EBUSY);
		/* The other registration still works: the memory is fine. */
		memset(p, 1, NPG * PG);
	}
	/* Two ranges of one uffd tracker may not share a page. */
	p = map_pages(NPG);
	ZT_EXPECT_EQ(__zcr_pv_track(pv, p + 40 * PG, 4 * PG, &r), 0);
	ret = __zcr_pv_track(pv, p + 43 * PG, 4 * PG, &r);
	ZT_EXPECT_EQ(ret, m == ZCR_PV_HASH ? 0 : -EBUSY);
	__zcr_pv_close(pv);
	close(fd);
}

static void t_args(enum zcr_pv_mech m)
{
	struct zcr_pv *pv = open_or_skip(m);
	char *p = map_pages(NPG);
	struct zcr_pv_range *r;

	ZT_EXPECT_EQ(__zcr_pv_track(pv, p, 0, &r), -EINVAL);
	ZT_EXPECT_EQ(__zcr_pv_track(pv, NULL, PG, &r), -EINVAL);
	ZT_EXPECT_EQ(__zcr_pv_track(NULL, p, PG, &r), -EINVAL);
	ZT_EXPECT_EQ(__zcr_pv_track(pv, p, PG, NULL), -EINVAL);
	ZT_EXPECT_EQ(__zcr_pv_track(pv, (void *)(uintptr_t)-PG, 2 * PG, &r),
		     -EINVAL);
	ZT_ASSERT(munmap(p + 8 * PG, PG) == 0);
	ZT_ASSERT(__zcr_pv_track(pv, p, NPG * PG, &r) < 0);
	ZT_EXPECT_EQ(__zcr_pv_track(pv, p, PG, &r), 0);
	ZT_EXPECT_EQ(__zcr_pv_read(pv, r, NULL), -EINVAL);
	ZT_EXPECT_EQ(__zcr_pv_read(NULL, r, (uint64_t *)p), -EINVAL);
	ZT_EXPECT_EQ(__zcr_pv_read(pv, NULL, (uint64_t *)p), -EINVAL);
	__zcr_pv_bump(pv, NULL, 0);
	__zcr_pv_untrack(pv, NULL);
	__zcr_pv_close(pv);
	__zcr_pv_close(NULL);
}

/* __zcr_pv_bump() changes exactly the pages it names. */
static void t_bump(enum zcr_pv_mech m)
{
	PV_FIXTURE(m);

	__zcr_pv_bump(pv, p + 7 * PG + 100, PG);	/* pages 7 and 8 */
	rd(pv, r, b);
	expect(a, b, NPG, 7, 9, "bump");
	__zcr_pv_close(pv);
}

#define PV_TESTS(kind)							\
	ZT_TEST(kind##_uffd_async) { t_##kind(ZCR_PV_UFFD_ASYNC); }	\
	ZT_TEST(kind##_uffd_sync) { t_##kind(ZCR_PV_UFFD_SYNC); }	\
	ZT_TEST(kind##_hash) { t_##kind(ZCR_PV_HASH); }
/* The tests that apply to a zone as well. */
#define PV_TESTS_ZONE(kind)						\
	PV_TESTS(kind)							\
	ZT_TEST(kind##_kmod) { t_##kind(ZCR_PV_KMOD); }

PV_TESTS_ZONE(rounds)
PV_TESTS_ZONE(untouched)
PV_TESTS_ZONE(syscall)
PV_TESTS_ZONE(remote)
PV_TESTS(dontneed)
PV_TESTS(remap)
PV_TESTS(fork)
PV_TESTS(thp)
PV_TESTS_ZONE(threads)
PV_TESTS_ZONE(release)
PV_TESTS(busy)
PV_TESTS_ZONE(args)
PV_TESTS_ZONE(bump)

/* MADV_DONTNEED keeps a zone's bytes; the next store is still seen. */
ZT_TEST(dontneed_kmod)
{
	PV_FIXTURE(ZCR_PV_KMOD);
	int i;

	ZT_ASSERT(madvise(p + 8 * PG, 4 * PG, MADV_DONTNEED) == 0);
	ZT_EXPECT_EQ((unsigned char)p[8 * PG], 1 + (8 % 250));
	rd(pv, r, b);
	expect(a, b, NPG, 0, 0, "MADV_DONTNEED of a zone");
	for (i = 0; i < 5; i++) {
		ZT_ASSERT(madvise(p + 40 * PG, PG, MADV_DONTNEED) == 0);
		p[40 * PG + 7] = (char)(i + 1);
		rd(pv, r, b);
		expect(a, b, NPG, 40, 41, "MADV_DONTNEED + rewrite");
		memcpy(a, b, NPG * sizeof(*a));
	}
	__zcr_pv_close(pv);
}

/* munmap, mmap over, mremap away: the read fails and keeps failing. */
ZT_TEST(remap_kmod)
{
	PV_FIXTURE(ZCR_PV_KMOD);
	struct zcr_pv_range *r2;
	char *q, *z;

	ZT_ASSERT(munmap(p + 16 * PG, 8 * PG) == 0);
	q = mmap(p + 16 * PG, 8 * PG, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ZT_ASSERT(q == p + 16 * PG);
	ZT_ASSERT(__zcr_pv_read(pv, r, b) < 0);
	ZT_EXPECT_EQ(__zcr_pv_read(pv, r, b), -ESTALE);
	__zcr_pv_untrack(pv, r);
	/* the range over anonymous memory is not the module's */
	ZT_EXPECT_EQ(__zcr_pv_track(pv, p, NPG * PG, &r), -EINVAL);
	/* a zone moved away by mremap: nothing at the old address */
	z = map_pages(NPG);
	ZT_EXPECT_EQ(__zcr_pv_track(pv, z, NPG * PG, &r2), 0);
	rd(pv, r2, a);
	q = mmap(NULL, NPG * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	ZT_ASSERT(q != MAP_FAILED);
	ZT_ASSERT(mremap(z, NPG * PG, NPG * PG, MREMAP_MAYMOVE | MREMAP_FIXED,
			 q) == q);
	ZT_EXPECT_EQ(__zcr_pv_read(pv, r2, b), -ENOMEM);
	/* the whole zone unmapped: its array says dead */
	z = map_pages(NPG);
	ZT_EXPECT_EQ(__zcr_pv_track(pv, z + PG, 2 * PG, &r2), 0);
	ZT_ASSERT(munmap(z, NPG * PG) == 0);
	ZT_EXPECT_EQ(__zcr_pv_read(pv, r2, b), -ENOMEM);
	__zcr_pv_close(pv);
}

/* An exchange into (and out of) the range changes exactly its pages. */
ZT_TEST(exchange_kmod)
{
	PV_FIXTURE(ZCR_PV_KMOD);
	char *src = map_zone(8, 0);
	struct zcrecv_remap_entry e = {
		.src = (uintptr_t)src, .dst = (uintptr_t)(p + 4 * PG),
		.len = 8 * PG,
	};
	struct zcrecv_remap req = { .entries = (uintptr_t)&e, .count = 1 };

	memset(src, 0x42, 8 * PG);
	ZT_ASSERT(ioctl(kfd, ZCRECV_IOC_REMAP, &req) == 0);
	ZT_EXPECT_EQ(p[4 * PG], 0x42);
	rd(pv, r, b);
	expect(a, b, NPG, 4, 12, "exchange into the range");
	memcpy(a, b, NPG * sizeof(*a));
	/* the pages that came in are armed: a store is seen */
	p[5 * PG + 1] = 9;
	rd(pv, r, b);
	expect(a, b, NPG, 5, 6, "store after an exchange");
	__zcr_pv_close(pv);
}

/* The module's ioctl counter (sysfs), or -1. */
static long long kmod_ioctls(void)
{
	FILE *f = fopen("/sys/class/misc/zcrecv/counters/ioctls", "r");
	long long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Reading a clean range makes no system call: the array alone. */
ZT_TEST(clean_read_no_ioctl_kmod)
{
	PV_FIXTURE(ZCR_PV_KMOD);
	long long n0 = kmod_ioctls();
	int i;

	for (i = 0; i < 1000; i++)
		rd(pv, r, b);
	expect(a, b, NPG, 0, 0, "1000 clean reads");
	ZT_EXPECT_EQ(kmod_ioctls(), n0);
	/* a written page costs one ioctl, to arm it again */
	p[3 * PG] = 1;
	rd(pv, r, b);
	expect(a, b, NPG, 3, 4, "then one store");
	ZT_EXPECT_EQ(kmod_ioctls(), n0 + 1);
	__zcr_pv_close(pv);
}

/*
 * AUTO with the module's descriptor: its versions for a versioned zone,
 * AUTO's own mechanism for anonymous memory; a zone without versions is
 * left to that mechanism too (which may refuse it).
 */
ZT_TEST(auto_kmod)
{
	struct zcr_pv *pv;
	struct zcr_pv_range *r1, *r2, *r3;
	char *z, *anon;
	int ret;

	kmod_fd_or_skip();
	cur_mech = ZCR_PV_KMOD;
	z = map_pages(NPG);
	cur_mech = ZCR_PV_AUTO;
	anon = map_pages(NPG);
	ZT_ASSERT(__zcr_pv_open_kmod(&pv, ZCR_PV_AUTO, kfd) == 0);
	ZT_ASSERT(__zcr_pv_kmod(pv));
	ZT_EXPECT_EQ(__zcr_pv_track(pv, z, NPG * PG, &r1), 0);
	ZT_EXPECT_EQ(__zcr_pv_range_mech(r1), ZCR_PV_KMOD);
	ZT_EXPECT_EQ(__zcr_pv_track(pv, anon, NPG * PG, &r2), 0);
	ZT_EXPECT_EQ(__zcr_pv_range_mech(r2), __zcr_pv_mech(pv));
	/* overlapping ranges of a zone are fine for the module */
	ZT_EXPECT_EQ(__zcr_pv_track(pv, z + PG, PG, &r3), 0);
	__zcr_pv_untrack(pv, r3);
	ret = __zcr_pv_track(pv, map_zone(4, 0), 4 * PG, &r3);
	if (ret == 0)
		ZT_EXPECT_EQ(__zcr_pv_range_mech(r3), ZCR_PV_HASH);
	__zcr_pv_close(pv);
}

/* No module, or one without page versions: the other mechanisms. */
ZT_TEST(auto_without_kmod)
{
	struct zcr_pv *pv;
	struct zcr_pv_range *r;
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	char *anon;

	ZT_ASSERT(devnull >= 0);
	cur_mech = ZCR_PV_AUTO;
	anon = map_pages(NPG);
	/* a descriptor that answers no zcrecv handshake */
	ZT_ASSERT(__zcr_pv_open_kmod(&pv, ZCR_PV_AUTO, devnull) == 0);
	ZT_ASSERT(!__zcr_pv_kmod(pv));
	ZT_ASSERT(__zcr_pv_mech(pv) == ZCR_PV_UFFD_ASYNC ||
		  __zcr_pv_mech(pv) == ZCR_PV_HASH);
	ZT_EXPECT_EQ(__zcr_pv_track(pv, anon, NPG * PG, &r), 0);
	ZT_EXPECT_EQ(__zcr_pv_range_mech(r), __zcr_pv_mech(pv));
	__zcr_pv_close(pv);
	ZT_EXPECT_EQ(__zcr_pv_open_kmod(&pv, ZCR_PV_KMOD, devnull),
		     -EOPNOTSUPP);
	ZT_EXPECT_EQ(__zcr_pv_open_kmod(&pv, ZCR_PV_KMOD, -1), -EOPNOTSUPP);
	ZT_EXPECT_EQ(__zcr_pv_open(&pv, ZCR_PV_KMOD), -EOPNOTSUPP);
	close(devnull);
}

/* Which mechanisms this kernel has: the log says what ran. */
ZT_TEST(mechs_here)
{
	static const enum zcr_pv_mech all[] = {
		ZCR_PV_UFFD_ASYNC, ZCR_PV_UFFD_SYNC, ZCR_PV_MPROTECT,
		ZCR_PV_HASH, ZCR_PV_KMOD,
	};
	int fd = open("/dev/" ZCRECV_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	struct zcr_pv *pv;
	size_t i;

	printf("# page-version mechanisms here:");
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		int ret = __zcr_pv_open_kmod(&pv, all[i], fd);

		printf(" %s=%s", __zcr_pv_mech_name(all[i]),
		       ret == 0 ? "yes" : ret == -EOPNOTSUPP ? "no" : "error");
		if (ret == 0)
			__zcr_pv_close(pv);
	}
	ZT_EXPECT_EQ(__zcr_pv_open(&pv, ZCR_PV_AUTO), 0);
	printf("; auto picks %s\n", __zcr_pv_mech_name(__zcr_pv_mech(pv)));
	ZT_ASSERT(__zcr_pv_mech(pv) == ZCR_PV_UFFD_ASYNC ||
		  __zcr_pv_mech(pv) == ZCR_PV_HASH);
	__zcr_pv_close(pv);
	ZT_EXPECT_EQ(__zcr_pv_open(&pv, ZCR_PV_MPROTECT), -EOPNOTSUPP);
	ZT_EXPECT_EQ(__zcr_pv_open(&pv, ZCR_PV_NMECH), -EINVAL);
	if (fd >= 0)
		close(fd);
}

/* ZCRECV_PREFETCH_PAGEVER overrides what AUTO picks. */
ZT_TEST(env_override)
{
	struct zcr_pv *pv;

	setenv("ZCRECV_PREFETCH_PAGEVER", "hash", 1);
	ZT_EXPECT_EQ(__zcr_pv_open(&pv, ZCR_PV_AUTO), 0);
	ZT_EXPECT_EQ(__zcr_pv_mech(pv), ZCR_PV_HASH);
	__zcr_pv_close(pv);
	/* An explicit mechanism wins over the variable. */
	ZT_EXPECT_EQ(__zcr_pv_open(&pv, ZCR_PV_HASH), 0);
	__zcr_pv_close(pv);
	setenv("ZCRECV_PREFETCH_PAGEVER", "mprotect", 1);
	ZT_EXPECT_EQ(__zcr_pv_open(&pv, ZCR_PV_AUTO), -EOPNOTSUPP);
	setenv("ZCRECV_PREFETCH_PAGEVER", "bogus", 1);
	ZT_EXPECT_EQ(__zcr_pv_open(&pv, ZCR_PV_AUTO), 0);
	__zcr_pv_close(pv);
	unsetenv("ZCRECV_PREFETCH_PAGEVER");
}

/*
 * The page hash picks its fastest version at run time (AVX-512 where the
 * processor has it): every version gives the scalar one's value, so a
 * hash taken by one compares with one taken by another. Random pages
 * and seeds, and pages one word away from each other (which the hash
 * always tells apart).
 */
ZT_TEST(hash_versions_agree)
{
	uint64_t *page = aligned_alloc(64, ZCR_PV_PAGE), seed, h0;
	unsigned int rs = 99;
	size_t i, w;

	ZT_ASSERT(page);
#if defined(__x86_64__)
	__builtin_cpu_init();
	printf("# hash: %s\n", __builtin_cpu_supports("avx512dq") ?
	       "avx512" : "scalar");
#endif
	for (i = 0; i < 2000; i++) {
		for (w = 0; w < ZCR_PV_PAGE / 8; w++)
			page[w] = (uint64_t)rand_r(&rs) << 33 ^
				  (uint64_t)rand_r(&rs) << 11 ^ rand_r(&rs);
		seed = i % 3 ? (uint64_t)rand_r(&rs) * rand_r(&rs) : i;
		ZT_EXPECT_EQ(__zcr_pv_hash_page(page, seed),
			     __zcr_pv_hash_page_scalar(page, seed));
		h0 = __zcr_pv_hash_page(page, seed);
		w = (size_t)rand_r(&rs) % (ZCR_PV_PAGE / 8);
		page[w] ^= 1ULL << (rand_r(&rs) % 64);
		ZT_ASSERT(__zcr_pv_hash_page(page, seed) != h0);
		ZT_EXPECT_EQ(__zcr_pv_hash_page(page, seed),
			     __zcr_pv_hash_page_scalar(page, seed));
	}
	free(page);
}
