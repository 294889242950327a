// SPDX-License-Identifier: GPL-2.0
/*
 * zcrecv_fuzz_test - a randomized fuzzer of /dev/zcrecv: several threads
 * issue at least 100,000 ioctls (ZCRECV_FUZZ_OPS to change) with random
 * commands and arguments, valid and invalid mixed, while other threads map,
 * touch and unmap zones under them, madvise, mlock and fork them, change
 * the writable module parameters, and files are closed and reopened. Zones
 * are 4 KiB, 4 KiB with page versions (ZCRECV_IOC_PAGEVER arms and bumps
 * them, their version arrays are mapped, read and unmapped under the
 * others) or huge (2 MiB units; lengths and offsets are often whole units
 * so that huge exchanges really happen). It checks that every ioctl
 * answers with a documented errno, that the process
 * survives, and that the module's counters balance at the end (the VM runner
 * checks the kernel log). ZCRECV_FUZZ_SEED reproduces a run.
 */
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "zcrecv_util.h"

#define NTHREADS	4
#define POOL		16

struct pool_zone {
	char *addr;
	size_t len;
	int fd_index;
};

/* Writable parameters the fuzzer changes under the others (as root). */
static const char * const fuzz_params[] = {
	"max_process_pages", "max_global_pages", "max_process_zones",
};
#define NPARAMS	(sizeof(fuzz_params) / sizeof(fuzz_params[0]))

struct fuzz {
	int fds[2];			/* shared files */
	void *ro_arg;			/* a zone request on a read-only page */
	long long params[NPARAMS];	/* values at the start, restored */
	pthread_mutex_t lock;		/* pool bookkeeping and touches */
	struct pool_zone pool[POOL];
	long page;
	size_t unit;			/* huge zones' unit, bytes */
	unsigned long ops_per_thread;
	unsigned long long seed;
	unsigned long bad_errno;
	unsigned long ioctls;
	unsigned long huge_zones;	/* huge zones created */
};

struct worker {
	struct fuzz *f;
	unsigned long long rng;
	int own_fd;
	unsigned long done;
};

static unsigned long long rnd(struct worker *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

static int allowed_errno(int e)
{
	switch (e) {
	case 0: case EINVAL: case EFAULT: case ENOTTY: case EOPNOTSUPP:
	case EOVERFLOW: case ENOMEM: case ENOSPC: case EBUSY: case EPERM:
	case EINTR:
		return 1;
	}
	return 0;
}

/* An address somewhere interesting: a pool zone (maybe off by a bit), a
 * stack or heap address, NULL, a kernel address, or noise. */
static __u64 pick_addr(struct worker *w)
{
	struct fuzz *f = w->f;
	struct pool_zone *z = &f->pool[rnd(w) % POOL];
	char *base = z->addr;		/* racy on purpose: may be stale */
	size_t len = z->len;

	switch (rnd(w) % 8) {
	case 0: return 0;
	case 1: return 0xffff888000000000ULL + (rnd(w) & ~0xfffULL);
	case 2: return rnd(w);
	case 3: return (__u64)(uintptr_t)&z;
	case 4:
		if (!base || len < f->unit)
			return rnd(w) & ~0xfffULL;
		return (__u64)(uintptr_t)base +
		       (rnd(w) % (len / f->unit + 1)) * f->unit;
	default:
		if (!base || !len)
			return rnd(w) & ~0xfffULL;
		return (__u64)(uintptr_t)base +
		       ((rnd(w) % (len / f->page + 2)) * f->page) +
		       (rnd(w) % 16 == 0 ? rnd(w) % f->page : 0);
	}
}

static __u64 pick_len(struct worker *w)
{
	switch (rnd(w) % 7) {
	case 0: return 0;
	case 1: return rnd(w);
	case 2: return (rnd(w) % 4096) + 1;
	case 3: return ((rnd(w) % 2) + 1) * w->f->unit;
	default: return ((rnd(w) % 16) + 1) * w->f->page;
	}
}

static int pick_fd(struct worker *w)
{
	int r = rnd(w) % 3;

	return r == 2 ? w->own_fd : w->f->fds[r];
}

static void do_ioctl(struct worker *w, int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	__atomic_add_fetch(&w->f->ioctls, 1, __ATOMIC_RELAXED);
	w->done++;
	if (ret < 0 && !allowed_errno(errno)) {
		__atomic_add_fetch(&w->f->bad_errno, 1, __ATOMIC_RELAXED);
		fprintf(stderr, "# cmd %#lx gave errno %d\n", cmd, errno);
	}
}

static void op_api(struct worker *w)
{
	struct zcrecv_api api;
	unsigned int i;

	for (i = 0; i < sizeof(api); i++)
		((unsigned char *)&api)[i] = rnd(w) % 4 ? 0 : rnd(w);
	if (rnd(w) % 2)
		api.abi_version = rnd(w) % 3;
	do_ioctl(w, pick_fd(w), ZCRECV_IOC_API,
		 rnd(w) % 8 ? (void *)&api : (void *)(uintptr_t)pick_addr(w));
}

static void op_zone(struct worker *w)
{
	struct fuzz *f = w->f;
	struct zcrecv_zone_create zc;
	int fdi = rnd(w) % 2, slot = rnd(w) % POOL;
	void *p;

	memset(&zc, 0, sizeof(zc));
	zc.pages = rnd(w) % 10 ? (rnd(w) % 32) + 1 : rnd(w) >> (rnd(w) % 64);
	if (rnd(w) % 4 == 0) {
		zc.flags = ZCRECV_ZONE_HUGE;
		zc.pages = ((rnd(w) % 2) + 1) * (f->unit / f->page) +
			   (rnd(w) % 10 ? 0 : rnd(w) % 8);
	} else if (rnd(w) % 3 == 0) {
		zc.flags = ZCRECV_ZONE_PAGEVER;
	}
	if (rnd(w) % 10 == 0)
		zc.flags = rnd(w);
	if (rnd(w) % 10 == 0)
		zc.reserved[rnd(w) % 2] = rnd(w);
	if (rnd(w) % 16 == 0) {
		/* a valid request, read-only: fails at copy_to_user, EFAULT */
		do_ioctl(w, f->fds[fdi], ZCRECV_IOC_ZONE_CREATE, f->ro_arg);
		return;
	}
	if (ioctl(f->fds[fdi], ZCRECV_IOC_ZONE_CREATE, &zc)) {
		__atomic_add_fetch(&f->ioctls, 1, __ATOMIC_RELAXED);
		w->done++;
		if (!allowed_errno(errno))
			__atomic_add_fetch(&f->bad_errno, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_add_fetch(&f->ioctls, 1, __ATOMIC_RELAXED);
	w->done++;
	if (zc.flags & ZCRECV_ZONE_HUGE)
		__atomic_add_fetch(&f->huge_zones, 1, __ATOMIC_RELAXED);
	if (rnd(w) % 8 == 0)
		return;		/* leave it unmapped: close must free it */
	p = mmap(NULL, zc.pages * f->page, PROT_READ | PROT_WRITE,
		 rnd(w) % 16 ? MAP_SHARED : MAP_PRIVATE, f->fds[fdi],
		 zc.out_offset);
	if (p == MAP_FAILED)
		return;
	pthread_mutex_lock(&f->lock);
	if (f->pool[slot].addr)
		munmap(f->pool[slot].addr, f->pool[slot].len);
	f->pool[slot].addr = p;
	f->pool[slot].len = zc.pages * f->page;
	f->pool[slot].fd_index = fdi;
	/* touch some pages so there is something to exchange */
	memset(p, (int)rnd(w), f->page * (1 + rnd(w) % (zc.pages < 4 ? zc.pages : 4)));
	pthread_mutex_unlock(&f->lock);
}

static void op_unmap(struct worker *w)
{
	struct fuzz *f = w->f;
	struct pool_zone *z = &f->pool[rnd(w) % POOL];

	pthread_mutex_lock(&f->lock);
	if (z->addr && z->len > (size_t)f->page && rnd(w) % 2) {
		/* partial: the zone lives on in its other part */
		munmap(z->addr, f->page);
		z->addr += f->page;
		z->len -= f->page;
	} else if (z->addr) {
		munmap(z->addr, z->len);
		z->addr = NULL;
		z->len = 0;
	}
	pthread_mutex_unlock(&f->lock);
}

static void op_remap(struct worker *w)
{
	struct zcrecv_remap_entry e[8];
	struct zcrecv_remap req;
	unsigned int i, n = 1 + rnd(w) % 8;

	for (i = 0; i < n; i++) {
		e[i].src = pick_addr(w);
		e[i].dst = pick_addr(w);
		e[i].len = pick_len(w);
		e[i].flags = rnd(w) % 20 ? 0 : rnd(w);
		e[i].reserved0 = rnd(w) % 20 ? 0 : rnd(w);
	}
	memset(&req, 0, sizeof(req));
	req.entries = rnd(w) % 10 ? (__u64)(uintptr_t)e : pick_addr(w);
	req.count = rnd(w) % 10 ? n : rnd(w) % 1024;
	req.flags = rnd(w) % 10 ? (rnd(w) % 2) : rnd(w);
	if (rnd(w) % 20 == 0)
		req.reserved[rnd(w) % 2] = rnd(w);
	do_ioctl(w, pick_fd(w), ZCRECV_IOC_REMAP, &req);
}

/*
 * ZCRECV_IOC_PAGEVER with random ranges, ops and fields; when it answers,
 * sometimes map the version array it names (read-only: a writable mapping
 * must fail), read a word of it and unmap it again.
 */
static void op_pagever(struct worker *w)
{
	struct zcrecv_pagever req;
	int fd = pick_fd(w);
	void *p;

	memset(&req, 0, sizeof(req));
	req.addr = pick_addr(w);
	req.len = pick_len(w);
	req.op = rnd(w) % 10 ? 1 + rnd(w) % 2 : (__u32)rnd(w);
	req.flags = rnd(w) % 20 ? 0 : rnd(w);
	if (rnd(w) % 20 == 0)
		req.reserved[rnd(w) % 2] = rnd(w);
	if (rnd(w) % 20 == 0) {
		do_ioctl(w, fd, ZCRECV_IOC_PAGEVER,
			 (void *)(uintptr_t)pick_addr(w));
		return;
	}
	if (ioctl(fd, ZCRECV_IOC_PAGEVER, &req)) {
		__atomic_add_fetch(&w->f->ioctls, 1, __ATOMIC_RELAXED);
		w->done++;
		if (!allowed_errno(errno))
			__atomic_add_fetch(&w->f->bad_errno, 1,
					   __ATOMIC_RELAXED);
		return;
	}
	__atomic_add_fetch(&w->f->ioctls, 1, __ATOMIC_RELAXED);
	w->done++;
	if (rnd(w) % 4)
		return;
	p = mmap(NULL, req.out_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 req.out_offset);
	if (p != MAP_FAILED)	/* never writable */
		__atomic_add_fetch(&w->f->bad_errno, 1, __ATOMIC_RELAXED);
	p = mmap(NULL, req.out_size, PROT_READ,
		 rnd(w) % 8 ? MAP_SHARED : MAP_PRIVATE, fd, req.out_offset);
	if (p == MAP_FAILED)
		return;		/* its zone went meanwhile */
	(void)*(volatile __u64 *)((char *)p + (rnd(w) % req.out_size & ~7));
	if (rnd(w) % 4)
		madvise(p, req.out_size, MADV_DONTNEED);
	munmap(p, req.out_size);
}

/*
 * ioctl types the VFS answers before the driver sees them (do_vfs_ioctl:
 * FIGETBSZ 0x00, FS_IOC_GETFSUUID 0x15, FIO* 'T', FIFREEZE 'X',
 * FS_IOC_[GS]ETFLAGS 'f', FICLONE 0x94): their errnos are the VFS's (FICLONE
 * with a random source fd is EBADF), and some change the device node for
 * everyone (an immutable /dev/zcrecv), so the fuzzer leaves them alone.
 */
static bool vfs_ioctl_type(unsigned int type)
{
	switch (type) {
	case 0x00: case 0x15: case 'T': case 'X': case 'f': case 0x94:
		return true;
	}
	return false;
}

static void op_garbage(struct worker *w)
{
	unsigned char buf[256];
	unsigned int i, type;
	unsigned long cmd;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = rnd(w);
	do
		type = rnd(w) % 4 ? ZCRECV_IOC_MAGIC : rnd(w) & 0xff;
	while (type != ZCRECV_IOC_MAGIC && vfs_ioctl_type(type));
	cmd = _IOC(rnd(w) % 4, type, rnd(w) % 16, rnd(w) % 200);
	do_ioctl(w, pick_fd(w), cmd, rnd(w) % 4 ? (void *)buf :
		 (void *)(uintptr_t)pick_addr(w));
}

/*
 * Parameters: a random value, sometimes out of range; the write must
 * succeed or fail with EINVAL (EACCES without root). Values stay small
 * enough for the others to keep working most of the time.
 */
static void op_param(struct worker *w)
{
	unsigned int i = rnd(w) % NPARAMS;
	long long v;
	int ret;

	switch (rnd(w) % 4) {
	case 0: v = (long long)(rnd(w) >> 1); break;	/* mostly too big */
	case 1: v = -(long long)(rnd(w) % 100); break;
	default: v = w->f->params[i] / 2 + rnd(w) % (w->f->params[i] + 1);
	}
	ret = zcrecv_param_write(fuzz_params[i], v);
	if (ret && ret != -EINVAL && ret != -EACCES && ret != -EPERM) {
		__atomic_add_fetch(&w->f->bad_errno, 1, __ATOMIC_RELAXED);
		fprintf(stderr, "# param %s=%lld gave %d\n", fuzz_params[i], v,
			ret);
	}
}

/*
 * What user space may do to a mapped zone behind the module's back:
 * madvise (zap, fork flags), mlock, and a fork whose child touches it (it
 * must die or see zeroes/its own copy, never crash the kernel).
 */
static void op_vm(struct worker *w)
{
	static const int advice[] = {
		MADV_DONTNEED, MADV_DOFORK, MADV_DONTFORK, MADV_KEEPONFORK,
		MADV_WIPEONFORK, MADV_DONTDUMP,
	};
	struct fuzz *f = w->f;
	struct pool_zone *z = &f->pool[rnd(w) % POOL];
	int status;
	pid_t pid;

	pthread_mutex_lock(&f->lock);
	if (!z->addr) {
		pthread_mutex_unlock(&f->lock);
		return;
	}
	switch (rnd(w) % 4) {
	case 0:
	case 1:
		madvise(z->addr, z->len,
			advice[rnd(w) % (sizeof(advice) / sizeof(advice[0]))]);
		break;
	case 2:
		if (!mlock(z->addr, f->page))
			munlock(z->addr, f->page);
		break;
	default:
		pid = fork();
		if (pid == 0)
			_exit(*(volatile char *)z->addr);
		if (pid > 0)
			waitpid(pid, &status, 0);
		break;
	}
	pthread_mutex_unlock(&f->lock);
}

static void op_reopen(struct worker *w)
{
	close(w->own_fd);
	w->own_fd = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	while (w->done < w->f->ops_per_thread) {
		unsigned int r = rnd(w) % 100;

		if (r < 10)
			op_api(w);
		else if (r < 25)
			op_zone(w);
		else if (r < 30)
			op_unmap(w);
		else if (r < 72)
			op_remap(w);
		else if (r < 82)
			op_pagever(w);
		else if (r < 95)
			op_garbage(w);
		else if (r < 96)
			op_param(w);
		else if (r < 98)
			op_vm(w);
		else
			op_reopen(w);
	}
	return NULL;
}

FIXTURE(fuzz) {
	int unused;
};

FIXTURE_SETUP(fuzz)
{
}

FIXTURE_TEARDOWN(fuzz)
{
}

/* Emulated (TCG) VMs are slow: allow five minutes. */
TEST_F_TIMEOUT(fuzz, random_ioctls_from_threads, 300)
{
	struct zcrecv_leak_check before;
	struct worker w[NTHREADS];
	struct zcrecv_api api;
	pthread_t th[NTHREADS];
	struct fuzz f;
	const char *s;
	int i;

	memset(&f, 0, sizeof(f));
	f.page = zcrecv_page_size();
	f.ops_per_thread = 100000 / NTHREADS;
	s = getenv("ZCRECV_FUZZ_OPS");
	if (s && atol(s) > 0)
		f.ops_per_thread = atol(s) / NTHREADS;
	s = getenv("ZCRECV_FUZZ_SEED");
	f.seed = s ? strtoull(s, NULL, 0) : (unsigned long long)time(NULL);
	TH_LOG("seed %llu (ZCRECV_FUZZ_SEED reproduces), %lu ioctls per thread",
	       f.seed, f.ops_per_thread);
	pthread_mutex_init(&f.lock, NULL);

	if (access(ZCRECV_DEV, F_OK))
		SKIP(return, "%s missing: zcrecv.ko not loaded", ZCRECV_DEV);
	for (i = 0; i < (int)NPARAMS; i++) {
		f.params[i] = zcrecv_param(fuzz_params[i]);
		ASSERT_LE(0, f.params[i]);
	}
	f.ro_arg = mmap(NULL, f.page, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, f.ro_arg);
	((struct zcrecv_zone_create *)f.ro_arg)->pages = 1 + f.seed % 8;
	ASSERT_EQ(0, mprotect(f.ro_arg, f.page, PROT_READ));
	zcrecv_leak_snapshot(&before);
	for (i = 0; i < 2; i++) {
		f.fds[i] = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, f.fds[i]);
	}
	ASSERT_EQ(0, zcrecv_handshake(f.fds[0], &api));
	/* without ZCRECV_FEATURE_HUGE huge creates just fail with EINVAL */
	f.unit = api.out_huge_unit_size ? api.out_huge_unit_size :
		 (size_t)f.page * (f.page / 8);
	for (i = 0; i < NTHREADS; i++) {
		w[i].f = &f;
		w[i].rng = f.seed * 0x9e3779b97f4a7c15ULL + i + 1;
		w[i].done = 0;
		w[i].own_fd = open(ZCRECV_DEV, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, w[i].own_fd);
		ASSERT_EQ(0, pthread_create(&th[i], NULL, worker_main, &w[i]));
	}
	for (i = 0; i < NTHREADS; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
		if (w[i].own_fd >= 0)
			close(w[i].own_fd);
	}
	for (i = 0; i < POOL; i++)
		if (f.pool[i].addr)
			munmap(f.pool[i].addr, f.pool[i].len);
	close(f.fds[0]);
	close(f.fds[1]);
	for (i = 0; i < (int)NPARAMS; i++)
		EXPECT_EQ(0, zcrecv_param_write(fuzz_params[i], f.params[i]));
	munmap(f.ro_arg, f.page);

	TH_LOG("%lu ioctls issued, %lu huge zones", f.ioctls, f.huge_zones);
	if (api.out_features & ZCRECV_FEATURE_HUGE)
		EXPECT_LT(0, f.huge_zones);
	EXPECT_LE(NTHREADS * f.ops_per_thread, f.ioctls);
	EXPECT_EQ(0, f.bad_errno);
	/* Partially unmapped zones are gone now too: the books balance. */
	EXPECT_EQ(before.zones_live, zcrecv_counter("zones_live"));
	EXPECT_EQ(before.alloc_minus_freed,
		  zcrecv_counter("pages_allocated") - zcrecv_counter("pages_freed"));
	EXPECT_EQ(before.reserved, zcrecv_counter("pages_reserved"));
	EXPECT_EQ(0, zcrecv_counter("open_files"));
}

TEST_HARNESS_MAIN
