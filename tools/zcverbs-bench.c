// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcverbs-bench - what each way of bringing an early RDMA arrival from a
 * registered staging slot into the user's buffer costs, per message size.
 *
 * Pinned pages are never exchanged (/dev/zcrecv refuses them with EBUSY),
 * so a slot the NIC wrote into reaches the user's buffer either by a copy
 * (the slot stays registered), or by ending its registration and
 * exchanging its pages (ibv_dereg_mr, the exchange, ibv_reg_mr again for
 * the next message), or by ibv_rereg_mr of the slot after the exchange,
 * or with an on-demand-paging MR that is never pinned. This tool times the
 * pieces on the first RDMA device, on zone memory of /dev/zcrecv:
 *   copy        memcpy of the message from the slot to the buffer
 *   reg+dereg   ibv_reg_mr and ibv_dereg_mr of the slot's pages
 *   exchange    the page exchange of the slot's full pages (ioctl)
 *   rereg       ibv_rereg_mr(IBV_REREG_MR_CHANGE_TRANSLATION) of the slot
 *   odp reg     ibv_reg_mr with IBV_ACCESS_ON_DEMAND
 * and says "n/a (why)" for what the device or kernel refuses.
 *
 * Usage: zcverbs-bench [--min BYTES] [--max BYTES] [--iters N]
 *                      [--csv FILE|-] [--emulated]
 *        zcverbs-bench -h|--help
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <linux/zcrecv.h>
#include "bench.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: zcverbs-bench [--min BYTES] [--max BYTES] [--iters N]\n"
"                     [--csv FILE|-] [--emulated]\n"
"Times, per message size, the ways an early RDMA arrival in a registered\n"
"staging slot can reach the user's buffer: copy, ibv_reg_mr+ibv_dereg_mr\n"
"around a page exchange, ibv_rereg_mr, on-demand paging (Documentation/\n"
"verbs.md). Needs an RDMA device and /dev/zcrecv.\n"
"  --min BYTES   smallest size (default 4096)\n"
"  --max BYTES   largest size (default 4194304); sizes double\n"
"  --iters N     timed repetitions per size (default 20)\n"
"  --csv FILE|-  CSV too (-: stdout between zcverbs-csv-begin/end lines)\n"
"  --emulated    mark the figures as measured under emulation\n"
"  -h, --help    this help\n"
"Exit status: 0 done, 1 no device or /dev/zcrecv, 2 bad usage.\n");
}

/* A zone of /dev/zcrecv of len bytes, mapped; NULL on failure. */
static char *zone(int fd, size_t len)
{
	struct zcrecv_zone_create zc = { .pages = len / 4096 };
	void *p;

	if (ioctl(fd, ZCRECV_IOC_ZONE_CREATE, &zc))
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)zc.out_offset);
	return p == MAP_FAILED ? NULL : p;
}

static int exchange(int fd, void *a, void *b, size_t len)
{
	struct zcrecv_remap_entry e = { .src = (uintptr_t)a,
					.dst = (uintptr_t)b, .len = len };
	struct zcrecv_remap r = { .entries = (uintptr_t)&e, .count = 1 };

	return ioctl(fd, ZCRECV_IOC_REMAP, &r) ? -errno : 0;
}

struct row {
	uint64_t size;
	double copy, regdereg, exch, rereg, odp;	/* us; <0: n/a */
};

#define REPS	5
#define ACC	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)

/*
 * One run of every option for size bytes, iters times each (us per
 * iteration; -1: refused). why: where to say why rereg is refused (NULL:
 * known already, skip it); odp: the device has ODP.
 */
static void measure(struct row *rw, struct ibv_pd *pd, int fd, char *slot,
		    char *buf, uint64_t size, unsigned int iters, char *why,
		    bool odp)
{
	struct ibv_mr *mr;
	unsigned int i;
	double t;
	int r;

	rw->size = size;
	t = zct_now_us();
	for (i = 0; i < iters; i++)
		memcpy(buf, slot, size);
	rw->copy = (zct_now_us() - t) / iters;
	t = zct_now_us();
	for (i = 0; i < iters; i++) {
		mr = ibv_reg_mr(pd, slot, size, ACC);
		if (!mr)
			break;
		ibv_dereg_mr(mr);
	}
	rw->regdereg = i == iters ? (zct_now_us() - t) / iters : -1;
	t = zct_now_us();
	for (i = 0; i < iters; i++)
		if (exchange(fd, slot, buf, size))
			break;
	rw->exch = i == iters ? (zct_now_us() - t) / iters : -1;
	/* rereg of the slot's (new) pages, as after an exchange. */
	rw->rereg = -1;
	mr = why ? ibv_reg_mr(pd, slot, size, ACC) : NULL;
	if (mr) {
		t = zct_now_us();
		for (i = 0; i < iters; i++) {
			r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION,
					 NULL, slot, size, 0);
			if (r) {
				snprintf(why, 96, "n/a: ibv_rereg_mr(CHANGE_"
					 "TRANSLATION): %s", strerror(errno));
				break;
			}
		}
		if (i == iters)
			rw->rereg = (zct_now_us() - t) / iters;
		ibv_dereg_mr(mr);
	}
	rw->odp = -1;
	if (!odp)
		return;
	t = zct_now_us();
	for (i = 0; i < iters; i++) {
		mr = ibv_reg_mr(pd, slot, size, ACC | IBV_ACCESS_ON_DEMAND);
		if (!mr)
			break;
		ibv_dereg_mr(mr);
	}
	if (i == iters)
		rw->odp = (zct_now_us() - t) / iters;
}

/* Each column's median over the REPS runs. */
static void row_median(struct row *out, const struct row *rep)
{
	double v[5][REPS];
	int k;

	for (k = 0; k < REPS; k++) {
		v[0][k] = rep[k].copy;
		v[1][k] = rep[k].regdereg;
		v[2][k] = rep[k].exch;
		v[3][k] = rep[k].rereg;
		v[4][k] = rep[k].odp;
	}
	out->size = rep[0].size;
	out->copy = zct_median(v[0], REPS);
	out->regdereg = zct_median(v[1], REPS);
	out->exch = zct_median(v[2], REPS);
	out->rereg = zct_median(v[3], REPS);
	out->odp = zct_median(v[4], REPS);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "min", 1, NULL, 's' }, { "max", 1, NULL, 'S' },
		{ "iters", 1, NULL, 'i' }, { "csv", 1, NULL, 'c' },
		{ "emulated", 0, NULL, 'E' }, { "help", 0, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t min = 4096, max = 4 << 20, size;
	unsigned int iters = 20, i;
	const char *csv = NULL, *rereg_why = NULL, *odp_why = NULL;
	struct ibv_device **list;
	struct ibv_device_attr_ex dx;
	struct ibv_context *dev;
	struct ibv_pd *pd;
	struct zcrecv_api api = { .abi_version = ZCRECV_ABI_VERSION };
	struct row rows[32];
	int o, n = 0, fd, nrows = 0, emulated = 0;
	char *slot, *buf;
	char why1[96] = "", why2[96];
	FILE *f;

	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 's': min = strtoull(optarg, NULL, 0); break;
		case 'S': max = strtoull(optarg, NULL, 0); break;
		case 'i': iters = (unsigned int)atoi(optarg); break;
		case 'c': csv = optarg; break;
		case 'E': emulated = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || min < 4096 || max < min || !iters ||
	    (min & (min - 1)) || max > (256ull << 20)) {
		usage(stderr);
		return 2;
	}
	list = ibv_get_device_list(&n);
	if (!list || n <= 0) {
		fprintf(stderr, "zcverbs-bench: no RDMA device\n");
		return 1;
	}
	dev = ibv_open_device(list[0]);
	pd = dev ? ibv_alloc_pd(dev) : NULL;
	fd = open("/dev/zcrecv", O_RDWR);
	if (!pd || fd < 0 || ioctl(fd, ZCRECV_IOC_API, &api)) {
		fprintf(stderr, "zcverbs-bench: %s\n", !pd ? "cannot open the "
			"RDMA device" : "no /dev/zcrecv (load zcrecv.ko)");
		return 1;
	}
	slot = zone(fd, max);
	buf = zone(fd, max);
	if (!slot || !buf) {
		fprintf(stderr, "zcverbs-bench: cannot map zones\n");
		return 1;
	}
	memset(slot, 1, max);
	memset(buf, 2, max);
	memset(&dx, 0, sizeof(dx));
	if (ibv_query_device_ex(dev, NULL, &dx) ||
	    !(dx.odp_caps.general_caps & IBV_ODP_SUPPORT)) {
		snprintf(why2, sizeof(why2), "n/a: %s reports no ODP support",
			 ibv_get_device_name(dev->device));
		odp_why = why2;
	}
	for (size = min; size <= max && nrows < 32; size *= 2) {
		struct row rep[REPS];
		int k;

		for (k = 0; k < REPS; k++)
			measure(&rep[k], pd, fd, slot, buf, size, iters,
				rereg_why ? NULL : why1, odp_why == NULL);
		if (rep[0].rereg < 0 && why1[0])
			rereg_why = why1;
		row_median(&rows[nrows++], rep);
	}
	printf("zcverbs-bench: device %s, zone memory of /dev/zcrecv, "
	       "median of %d runs of %u iterations%s\n",
	       ibv_get_device_name(dev->device), REPS, iters,
	       emulated ? " (EMULATED timings: compare ratios only)" : "");
	printf("%9s %10s %12s %11s %26s %10s\n", "size", "copy_us",
	       "reg+dereg_us", "exchange_us", "dereg+exchange+reg_us",
	       "rereg_us");
	for (i = 0; i < (unsigned int)nrows; i++)
		printf("%9llu %10.1f %12.1f %11.1f %26.1f %10.1f\n",
		       (unsigned long long)rows[i].size, rows[i].copy,
		       rows[i].regdereg, rows[i].exch,
		       rows[i].regdereg + rows[i].exch, rows[i].rereg);
	if (rereg_why)
		printf("rereg: %s\n", rereg_why);
	if (odp_why)
		printf("odp: %s\n", odp_why);
	if (csv) {
		f = strcmp(csv, "-") ? fopen(csv, "w") : stdout;
		if (!f) {
			perror(csv);
			return 1;
		}
		if (f == stdout)
			printf("zcverbs-csv-begin\n");
		fprintf(f, "size,copy_us,reg_dereg_us,exchange_us,rereg_us,"
			"odp_reg_dereg_us\n");
		for (i = 0; i < (unsigned int)nrows; i++)
			fprintf(f, "%llu,%.2f,%.2f,%.2f,%.2f,%.2f\n",
				(unsigned long long)rows[i].size, rows[i].copy,
				rows[i].regdereg, rows[i].exch, rows[i].rereg,
				rows[i].odp);
		if (f == stdout)
			printf("zcverbs-csv-end\n");
		else
			fclose(f);
	}
	return 0;
}
