// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcremap-bench - cost per page of zcrecv.ko's page exchange against memcpy
 * of the same bytes (hot: the same buffers again and again; cold: walking a
 * buffer much larger than the last-level cache) and against UFFDIO_MOVE
 * where the kernel has it (>= 6.8), for ranges of 1 to 512 pages.
 *
 * With -t: also UFFDIO_MOVE followed by the first read of every moved page,
 * which is where a hypervisor that shadows page tables charges for the
 * move. With -b: every figure is taken while a process spins on another
 * processor, as the peer of a ping-pong does while it waits.
 *
 * With -H: the exchange of 2 MiB units between huge zones (ZCRECV_ZONE_HUGE)
 * against the exchange of the same bytes between 4 KiB zones and memcpy of
 * them, per 2 MiB, for ranges of 1 to 8 units.
 *
 * Usage: zcremap-bench [-c] [-t] [-b] [-H] [-r MS] [-m MAX]
 *   -c      print CSV instead of the table
 *   -t      add UFFDIO_MOVE + first read of each moved page
 *   -b      measure while another process spins (a busy peer)
 *   -H      2 MiB-unit mode (huge zones)
 *   -r MS   milliseconds per measurement (default 20); each figure is the
 *           median of 5 measurements
 *   -m N    largest range in pages (default 512), with -H in units (8)
 * Run inside the VM with the module loaded: tools/vm/run-vm.sh -k 6.12
 * -f build/tools/zcremap-bench -- ./zcremap-bench. Under QEMU TCG the
 * figures are emulated: compare the ratios, not the nanoseconds.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include "remap/compat_uffd.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <linux/zcrecv.h>
#include "bench.h"

#define COLD_BYTES	(64UL << 20)
#define NSAMPLES	5

static long page;
static double run_ms = 20;

/* Median over NSAMPLES of the time per call of fn, each sample run_ms long. */
static double measure(int (*fn)(void *, unsigned long), void *ctx,
		      unsigned long pages)
{
	double samples[NSAMPLES];
	int s;

	for (s = 0; s < NSAMPLES; s++) {
		double t0 = zct_now_ns(), t;
		unsigned long calls = 0;

		do {
			if (fn(ctx, pages))
				return -1;
			calls++;
			t = zct_now_ns();
		} while (t - t0 < run_ms * 1e6);
		samples[s] = (t - t0) / calls / pages;
	}
	return zct_median(samples, NSAMPLES);
}

struct remap_ctx {
	int fd;
	char *a, *b;
};

static int do_remap(void *p, unsigned long pages)
{
	struct remap_ctx *c = p;
	struct zcrecv_remap_entry e = {
		.src = (uintptr_t)c->a, .dst = (uintptr_t)c->b,
		.len = pages * page,
	};
	struct zcrecv_remap r = { .entries = (uintptr_t)&e, .count = 1 };

	return ioctl(c->fd, ZCRECV_IOC_REMAP, &r) ? -errno : 0;
}

struct copy_ctx {
	char *src, *dst;
	size_t span, off;
};

static int do_copy(void *p, unsigned long pages)
{
	struct copy_ctx *c = p;
	size_t len = pages * page;

	if (c->off + len > c->span)
		c->off = 0;
	memcpy(c->dst + c->off, c->src + c->off, len);
	c->off += c->span > len ? len : 0;
	/* keep the copy from being optimised away */
	__asm__ volatile("" : : "r"(c->dst) : "memory");
	return 0;
}

struct uffd_ctx {
	int uffd;
	char *a, *b;
	int dir;
};

static int do_uffd_move(void *p, unsigned long pages)
{
	struct uffd_ctx *c = p;
	struct uffdio_move mv = {
		.src = (uintptr_t)(c->dir ? c->b : c->a),
		.dst = (uintptr_t)(c->dir ? c->a : c->b),
		.len = pages * page,
	};

	if (ioctl(c->uffd, UFFDIO_MOVE, &mv))
		return -errno;
	c->dir ^= 1;
	return 0;
}

/* A move, then the first read of every page it moved. */
static int do_uffd_move_touch(void *p, unsigned long pages)
{
	struct uffd_ctx *c = p;
	const char *dst = c->dir ? c->a : c->b;
	unsigned long i;
	int ret = do_uffd_move(p, pages);

	for (i = 0; !ret && i < pages; i++)
		(void)*(volatile const char *)(dst + i * page);
	return ret;
}

static int uffd_setup(struct uffd_ctx *c, unsigned long maxpages)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_MOVE };
	struct uffdio_register reg;
	size_t len = maxpages * page;

	c->uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (c->uffd < 0)
		return -errno;
	if (ioctl(c->uffd, UFFDIO_API, &api) ||
	    !(api.features & UFFD_FEATURE_MOVE)) {
		close(c->uffd);
		return -EOPNOTSUPP;
	}
	c->a = mmap(NULL, 2 * len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->a == MAP_FAILED)
		return -errno;
	c->b = c->a + len;
	/* a is populated before registering (a missing-page fault with no
	 * handler would block); b stays a hole: MOVE fills holes. */
	memset(c->a, 1, len);
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)c->a;
	reg.range.len = 2 * len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(c->uffd, UFFDIO_REGISTER, &reg))
		return -errno;
	c->dir = 0;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: zcremap-bench [-c] [-t] [-b] [-H] [-r MS] [-m MAX] [-h|--help]\n"
"  -c      CSV instead of the table\n"
"  -t      also UFFDIO_MOVE followed by the first read of each moved page\n"
"  -b      measure while another process spins (a ping-pong's waiting\n"
"          peer)\n"
"  -r MS   milliseconds per measurement (default 20); each figure is the\n"
"          median of 5 measurements\n"
"  -H      2 MiB-unit zones: unit exchange vs 4 KiB exchange vs memcpy,\n"
"          per 2 MiB (needs zcrecv.ko with huge zones)\n"
"  -m N    largest range in pages, 1..65536 (default 512); with -H in\n"
"          2 MiB units, 1..64 (default 8)\n"
"  -h      this help\n");
}

/* Two zones of @pages pages with @flags, mapped and touched, in rc. */
/* The memcpy references: hot over hot_bytes, cold walking COLD_BYTES. */
static int copy_setup(struct copy_ctx *hot, struct copy_ctx *cold,
		      size_t hot_bytes)
{
	hot->src = aligned_alloc(page, hot_bytes);
	hot->dst = aligned_alloc(page, hot_bytes);
	cold->src = aligned_alloc(page, COLD_BYTES);
	cold->dst = aligned_alloc(page, COLD_BYTES);
	if (!hot->src || !hot->dst || !cold->src || !cold->dst) {
		fprintf(stderr, "zcremap-bench: out of memory\n");
		return -1;
	}
	memset(hot->src, 1, hot_bytes);
	memset(hot->dst, 2, hot_bytes);
	memset(cold->src, 1, COLD_BYTES);
	memset(cold->dst, 2, COLD_BYTES);
	hot->span = hot_bytes;
	cold->span = COLD_BYTES;
	hot->off = cold->off = 0;
	return 0;
}

static int zones_setup(struct remap_ctx *rc, unsigned long pages, __u32 flags)
{
	struct zcrecv_zone_create zc = { .pages = pages, .flags = flags };
	char *z[2];
	int i;

	for (i = 0; i < 2; i++) {
		zc.pages = pages;
		if (ioctl(rc->fd, ZCRECV_IOC_ZONE_CREATE, &zc))
			return -errno;
		z[i] = mmap(NULL, pages * page, PROT_READ | PROT_WRITE,
			    MAP_SHARED, rc->fd, zc.out_offset);
		if (z[i] == MAP_FAILED)
			return -errno;
		memset(z[i], i + 1, pages * page);
	}
	rc->a = z[0];
	rc->b = z[1];
	return 0;
}

/* -H: 2 MiB units vs 4 KiB pages vs memcpy, ns per 2 MiB. */
static int run_huge(int csv, unsigned long maxunits)
{
	struct remap_ctx huge = { .fd = -1 }, small;
	struct zcrecv_api api = { .abi_version = ZCRECV_ABI_VERSION };
	unsigned long upages, n;
	struct copy_ctx hot, cold;
	struct utsname un;
	size_t unit;
	int ret;

	uname(&un);
	huge.fd = open("/dev/" ZCRECV_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (huge.fd < 0 || ioctl(huge.fd, ZCRECV_IOC_API, &api) ||
	    !(api.out_features & ZCRECV_FEATURE_HUGE)) {
		fprintf(stderr, "zcremap-bench: -H needs zcrecv.ko with huge zones\n");
		return 1;
	}
	unit = api.out_huge_unit_size;
	upages = unit / page;
	small = huge;
	ret = zones_setup(&huge, maxunits * upages, ZCRECV_ZONE_HUGE);
	if (!ret)
		ret = zones_setup(&small, maxunits * upages, 0);
	if (ret) {
		fprintf(stderr, "zcremap-bench: zones: %s\n", strerror(-ret));
		return 1;
	}
	if (copy_setup(&hot, &cold, maxunits * unit))
		return 1;

	if (csv) {
		printf("kernel,units,remap_2m_ns_per_unit,remap_4k_ns_per_unit,"
		       "memcpy_hot_ns_per_unit,memcpy_cold_ns_per_unit\n");
	} else {
		printf("# zcremap-bench -H on Linux %s, unit %zu bytes; ns per "
		       "unit, median of %d runs of %.0f ms\n", un.release, unit,
		       NSAMPLES, run_ms);
		printf("%6s %11s %11s %11s %11s %9s %9s %9s\n", "units",
		       "remap-2m", "remap-4k", "copy-hot", "copy-cold",
		       "2m/4k", "2m/hot", "2m/cold");
	}
	for (n = 1; n <= maxunits; n *= 2) {
		unsigned long pages = n * upages;
		double r2 = measure(do_remap, &huge, pages) * upages;
		double r4 = measure(do_remap, &small, pages) * upages;
		double h = measure(do_copy, &hot, pages) * upages;
		double c = measure(do_copy, &cold, pages) * upages;

		if (r2 < 0 || r4 < 0) {
			fprintf(stderr, "zcremap-bench: remap failed\n");
			return 1;
		}
		if (csv)
			printf("%s,%lu,%.0f,%.0f,%.0f,%.0f\n", un.release, n,
			       r2, r4, h, c);
		else
			printf("%6lu %11.0f %11.0f %11.0f %11.0f %9.3f %9.3f "
			       "%9.3f\n", n, r2, r4, h, c, r2 / r4, r2 / h,
			       r2 / c);
	}
	if (!csv)
		printf("# ratio < 1: the 2 MiB-unit exchange is cheaper\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	unsigned long maxpages = ULONG_MAX, n;
	struct remap_ctx rc = { .fd = -1 };
	struct copy_ctx hot, cold;
	struct uffd_ctx uc;
	struct utsname un;
	int csv = 0, huge = 0, touch = 0, busy = 0, opt, have_uffd;
	pid_t peer = -1;

	while ((opt = getopt_long(argc, argv, "ctbHr:m:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': csv = 1; break;
		case 't': touch = 1; break;
		case 'b': busy = 1; break;
		case 'H': huge = 1; break;
		case 'r': run_ms = atof(optarg); break;
		case 'm': maxpages = strtoul(optarg, NULL, 0); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (maxpages == ULONG_MAX)
		maxpages = huge ? 8 : 512;
	if (run_ms <= 0 || !maxpages || maxpages > (huge ? 64 : 65536)) {
		fprintf(stderr, "zcremap-bench: bad -r or -m\n");
		return 2;
	}
	page = sysconf(_SC_PAGESIZE);
	if (busy) {
		peer = zct_spinner_start();
		if (peer < 0) {
			perror("zcremap-bench: fork");
			return 1;
		}
	}
	if (huge) {
		opt = run_huge(csv, maxpages);
		goto out;
	}
	uname(&un);

	rc.fd = open("/dev/" ZCRECV_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (rc.fd >= 0) {
		int ret = zones_setup(&rc, maxpages, 0);

		if (ret) {
			fprintf(stderr, "zcremap-bench: zones: %s\n",
				strerror(-ret));
			return 1;
		}
	}
	if (copy_setup(&hot, &cold, maxpages * page))
		return 1;
	have_uffd = uffd_setup(&uc, maxpages) == 0;

	if (csv) {
		printf("kernel,pages,remap_ns_per_page,memcpy_hot_ns_per_page,"
		       "memcpy_cold_ns_per_page,uffd_move_ns_per_page,"
		       "uffd_move_touch_ns_per_page,busy_peer\n");
	} else {
		printf("# zcremap-bench on Linux %s, page %ld bytes; ns per page, "
		       "median of %d runs of %.0f ms\n", un.release, page,
		       NSAMPLES, run_ms);
		printf("# module: %s; UFFDIO_MOVE: %s; %s\n",
		       rc.fd >= 0 ? "loaded" : "absent",
		       have_uffd ? "yes" : "no",
		       busy ? "a busy process on another CPU" :
		       "no other load from us");
		printf("%6s %10s %10s %10s %10s %11s %11s %11s %11s\n", "pages",
		       "remap", "copy-hot", "copy-cold", "uffd-move",
		       "uffd+touch", "remap/hot", "remap/cold", "uffd/cold");
	}
	for (n = 1; n <= maxpages; n *= 2) {
		double r = rc.fd >= 0 ? measure(do_remap, &rc, n) : -1;
		double h = measure(do_copy, &hot, n);
		double c = measure(do_copy, &cold, n);
		double u = have_uffd ? measure(do_uffd_move, &uc, n) : -1;
		double ut = -1;

		/* leave all pages in a again for the next size */
		if (have_uffd && uc.dir && do_uffd_move(&uc, n))
			have_uffd = 0;
		if (have_uffd && touch) {
			ut = measure(do_uffd_move_touch, &uc, n);
			if (uc.dir && do_uffd_move(&uc, n))
				have_uffd = 0;
		}

		if (csv) {
			printf("%s,%lu,%.1f,%.1f,%.1f,%.1f,%.1f,%d\n",
			       un.release, n, r, h, c, u, ut, busy);
			continue;
		}
		printf("%6lu %10.1f %10.1f %10.1f %10.1f %11.1f %11.2f %11.2f "
		       "%11.2f\n", n, r, h, c, u, ut, r > 0 ? r / h : 0,
		       r > 0 ? r / c : 0, u > 0 ? u / c : 0);
	}
	if (!csv)
		printf("# ratio < 1: the exchange (or move) is cheaper than "
		       "copying; -1 = not available here (uffd+touch: -t)\n");
	opt = 0;
out:
	zct_spinner_stop(peer);
	return opt;
}
