// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcpagever-bench - what each page-version mechanism of lib/pagever costs
 * (Documentation/prefetch.md, "Page versions"): per page, a
 * __zcr_pv_read() of a range no page of which was written since the last
 * read (clean), one of a range every page of which was (written), and the
 * first store to each page after a read (the write-protect fault; the
 * hash arms nothing, so its column is a plain store), for ranges of
 * 64 KiB to 16 MiB of 4 KiB pages and of THP memory (2 MiB aligned,
 * MADV_HUGEPAGE); kmod (zcrecv.ko's versions) runs on a zone that keeps
 * them (memory "zone": /dev/zcrecv with ZCRECV_FEATURE_PAGEVER needed).
 * Each figure is the median of the repetitions run in the time given per
 * cell (at least 3).
 *
 * Usage: zcpagever-bench [-m LIST] [-M SIZE] [-t MS] [-c] [--csv FILE]
 *   -m LIST      mechanisms, comma-separated (default
 *                uffd-async,uffd-sync,hash,kmod; one not available here
 *                is reported and skipped)
 *   -M SIZE      the largest range in KiB (default 16384)
 *   -t MS        milliseconds per cell (default 200)
 *   -c           print CSV on stdout instead of the table
 *   --csv FILE   also write the CSV to FILE
 * In a VM: tools/vm/run-vm.sh -B -k 6.1 -f build/tools/zcpagever-bench
 * -- ./zcpagever-bench (without -n: kmod needs the module). Under QEMU TCG the times are emulated: compare
 * ratios, not nanoseconds.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <linux/zcrecv.h>

#include "bench.h"
#include "pagever/pagever.h"

#define PG	4096UL
#define HUGE	(2UL << 20)
#define MAXREP	64

static const char *const mech_names[] = {
	"uffd-async", "uffd-sync", "hash", "kmod",
};
static const enum zcr_pv_mech mech_ids[] = {
	ZCR_PV_UFFD_ASYNC, ZCR_PV_UFFD_SYNC, ZCR_PV_HASH, ZCR_PV_KMOD,
};
#define NMECH	4

static int kmod_fd = -1;	/* /dev/zcrecv, for kmod */

static void usage(FILE *f)
{
	fputs("Usage: zcpagever-bench [-m LIST] [-M SIZE] [-t MS] [-c] "
	      "[--csv FILE]\n"
	      "  -m LIST      mechanisms: uffd-async,uffd-sync,hash,kmod "
	      "(default all)\n"
	      "  -M SIZE      the largest range in KiB (default 16384)\n"
	      "  -t MS        milliseconds per cell (default 200)\n"
	      "  -c           print CSV instead of the table\n"
	      "  --csv FILE   also write the CSV to FILE\n"
	      "Per mechanism, memory kind (4k, thp; kmod: a zone) and range "
	      "size: ns per page\nof a read of a clean range, of a range "
	      "written whole, and of the first store\nto a page after a "
	      "read.\n", f);
}

/* A zone of len bytes that keeps page versions, filled; or NULL. */
static char *alloc_zone(size_t len)
{
	struct zcrecv_zone_create zc;
	char *p;

	memset(&zc, 0, sizeof(zc));
	zc.pages = len / PG;
	zc.flags = ZCRECV_ZONE_PAGEVER;
	if (ioctl(kmod_fd, ZCRECV_IOC_ZONE_CREATE, &zc) < 0)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, kmod_fd,
		 (off_t)zc.out_offset);
	if (p == MAP_FAILED)
		return NULL;
	memset(p, 1, len);
	return p;
}

/* Anonymous memory of len bytes, 2 MiB aligned; advised huge if thp. */
static char *alloc(size_t len, int thp, void **raw, size_t *rawlen)
{
	char *p;

	*rawlen = len + HUGE;
	*raw = mmap(NULL, *rawlen, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (*raw == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)*raw + HUGE - 1) & ~(HUGE - 1));
	madvise(p, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	memset(p, 1, len);
	return p;
}

/* kB of AnonHugePages of the process (smaps_rollup), or -1. */
static long huge_kb(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

struct cell {
	double clean, written, store;	/* ns per page */
	long huge_kb;
};

static int run_cell(enum zcr_pv_mech m, size_t len, int thp, double ms,
		    struct cell *c)
{
	double clean[MAXREP], written[MAXREP], store[MAXREP], t0, t1, t2, end;
	size_t n = len / PG, i;
	struct zcr_pv_range *r;
	struct zcr_pv *pv;
	uint64_t *ver;
	size_t rawlen;
	int rep, ret;
	void *raw;
	long h0;
	char *p;

	if (m == ZCR_PV_KMOD) {
		if (kmod_fd < 0)
			kmod_fd = open("/dev/" ZCRECV_DEVICE_NAME,
				       O_RDWR | O_CLOEXEC);
		ret = __zcr_pv_open_kmod(&pv, m, kmod_fd);
	} else {
		ret = __zcr_pv_open(&pv, m);
	}
	if (ret < 0)
		return ret;
	h0 = huge_kb();
	if (m == ZCR_PV_KMOD) {
		p = alloc_zone(len);
		raw = p;
		rawlen = len;
	} else {
		p = alloc(len, thp, &raw, &rawlen);
	}
	ver = calloc(n, sizeof(*ver));
	if (!p || !ver) {
		__zcr_pv_close(pv);
		free(ver);
		return -ENOMEM;
	}
	c->huge_kb = h0 < 0 ? -1 : huge_kb() - h0;
	ret = __zcr_pv_track(pv, p, len, &r);
	if (ret == 0)
		ret = __zcr_pv_read(pv, r, ver);
	end = zct_now_ns() + ms * 1e6;
	for (rep = 0; ret == 0 && rep < MAXREP; rep++) {
		if (rep >= 3 && zct_now_ns() > end)
			break;
		t0 = zct_now_ns();
		ret = __zcr_pv_read(pv, r, ver);
		t1 = zct_now_ns();
		for (i = 0; i < n; i++)
			p[i * PG + (rep & 63)] += 1;
		t2 = zct_now_ns();
		if (ret == 0)
			ret = __zcr_pv_read(pv, r, ver);
		clean[rep] = (t1 - t0) / n;
		store[rep] = (t2 - t1) / n;
		written[rep] = (zct_now_ns() - t2) / n;
	}
	if (ret == 0) {
		c->clean = zct_median(clean, rep);
		c->store = zct_median(store, rep);
		c->written = zct_median(written, rep);
	}
	__zcr_pv_close(pv);
	if (raw)
		munmap(raw, rawlen);
	free(ver);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "csv", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int mechs = (1 << NMECH) - 1, csv_only = 0, opt, k, thp;
	const char *csv_path = NULL;
	unsigned long max_kb = 16384;
	FILE *csv = NULL;
	struct utsname u;
	double ms = 200;
	size_t len;

	while ((opt = getopt_long(argc, argv, "m:M:t:ch", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'm':
			mechs = zct_parse_list(optarg, mech_names, NMECH);
			if (mechs <= 0) {
				usage(stderr);
				return 2;
			}
			break;
		case 'M':
			max_kb = strtoul(optarg, NULL, 10);
			if (max_kb < 64) {
				usage(stderr);
				return 2;
			}
			break;
		case 't':
			ms = atof(optarg);
			if (ms <= 0) {
				usage(stderr);
				return 2;
			}
			break;
		case 'c':
			csv_only = 1;
			break;
		case 'C':
			csv_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (csv_path) {
		csv = fopen(csv_path, "w");
		if (!csv) {
			fprintf(stderr, "zcpagever-bench: %s: %s\n", csv_path,
				strerror(errno));
			return 1;
		}
	}
	uname(&u);
	if (csv_only)
		csv = stdout;
	if (csv)
		fprintf(csv, "kernel,mech,memory,kib,huge_kib,read_clean_ns,"
			"read_written_ns,store_ns\n");
	if (!csv_only)
		printf("Linux %s; ns per 4 KiB page, median of >= 3 runs\n"
		       "%-10s %-4s %6s %8s %10s %12s %10s\n", u.release,
		       "mechanism", "mem", "KiB", "huge KiB", "read clean",
		       "read written", "1st store");
	for (k = 0; k < NMECH; k++) {
		if (!(mechs & (1 << k)))
			continue;
		for (thp = 0; thp < 2; thp++) {
			const char *mem = mech_ids[k] == ZCR_PV_KMOD ? "zone" :
					  thp ? "thp" : "4k";

			/* a zone is 4 KiB pages only */
			if (mech_ids[k] == ZCR_PV_KMOD && thp)
				break;
			for (len = 64 << 10; len <= max_kb << 10; len *= 4) {
				struct cell c = { 0 };
				int ret = run_cell(mech_ids[k], len, thp, ms,
						   &c);

				if (ret < 0) {
					if (!csv_only)
						printf("%-10s %-4s %6zu  %s\n",
						       mech_names[k], mem,
						       len >> 10,
						       strerror(-ret));
					if (ret == -EOPNOTSUPP)
						goto next_mech;
					continue;
				}
				if (!csv_only)
					printf("%-10s %-4s %6zu %8ld %10.1f "
					       "%12.1f %10.1f\n",
					       mech_names[k], mem, len >> 10,
					       c.huge_kb, c.clean, c.written,
					       c.store);
				if (csv)
					fprintf(csv, "%s,%s,%s,%zu,%ld,%.1f,"
						"%.1f,%.1f\n", u.release,
						mech_names[k], mem, len >> 10,
						c.huge_kb, c.clean, c.written,
						c.store);
			}
		}
next_mech:;
	}
	if (csv && csv != stdout)
		fclose(csv);
	if (kmod_fd >= 0)
		close(kmod_fd);
	return 0;
}
