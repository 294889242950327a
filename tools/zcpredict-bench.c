// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcpredict-bench - cost of each predictor on the host: nanoseconds per
 * observe + predict(+1), and per observe + predict(+10), on a warmed-up
 * stream, and bytes of memory per stream.
 *
 *   zcpredict-bench [-n ITERATIONS] [-c]      (-c: CSV instead of a table)
 *
 * The stream repeats a 24-call pattern of 8 buffers, 3 sources and 2 call
 * sites with an inner repeat, like a halo exchange plus reductions. Targets
 * (Documentation/predictors.md): cycle and tag predictors <= 50 ns, graph
 * <= 200 ns, dpd with N = 256 <= 1 us per sample.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "predict/predict.h"
#include "bench.h"

#define PATTERN 24

static struct zcr_call calls[PATTERN];

static void make_pattern(void)
{
	int i;

	for (i = 0; i < PATTERN; i++) {
		int b = i < 12 ? i % 4 : 4 + i % 4;

		calls[i].buf = 0x7f0000000000ULL + (uint64_t)b * 0x10000;
		calls[i].size = b < 4 ? 8192 : 64;
		calls[i].src = i % 3;
		calls[i].tag = b < 4 ? 1 : -1;
		calls[i].comm = 0x44000000;
		calls[i].site = b < 4 ? 0x401000 : 0x402000;
	}
}

/* ns per observe + predict(k); sink keeps the predictions alive. */
static double measure(const char *name, unsigned int k, long iters,
		      size_t *mem, uint64_t *sink)
{
	struct zcr_predictor *p = __zcr_pred_create(name, 0);
	struct zcr_call out;
	double t0, t1;
	long i;

	if (!p) {
		fprintf(stderr, "zcpredict-bench: cannot create %s\n", name);
		exit(1);
	}
	for (i = 0; i < 10000; i++) {
		__zcr_pred_observe(p, &calls[i % PATTERN]);
		__zcr_pred_predict(p, k, &out);
	}
	t0 = zct_now_ns();
	for (i = 0; i < iters; i++) {
		__zcr_pred_observe(p, &calls[i % PATTERN]);
		if (__zcr_pred_predict(p, k, &out))
			*sink += out.buf;
	}
	t1 = zct_now_ns();
	*mem = __zcr_pred_memory(p);
	__zcr_pred_destroy(p);
	return (t1 - t0) / (double)iters;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: zcpredict-bench [-n ITERATIONS] [-c] [-h|--help]\n"
"  -n N   timed observe+predict calls per predictor and horizon\n"
"         (default 2000000)\n"
"  -c     CSV instead of a table\n"
"  -h     this help\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	long iters = 2000000;
	bool csv = false;
	uint64_t sink = 0;
	int c, i;

	while ((c = getopt_long(argc, argv, "n:ch", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			iters = atol(optarg);
			break;
		case 'c':
			csv = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (iters < 1)
		iters = 1;
	make_pattern();
	if (csv)
		printf("predictor,ns_plus1,ns_plus10,bytes_per_stream\n");
	else
		printf("%-15s %12s %12s %16s\n", "predictor", "ns/op +1",
		       "ns/op +10", "bytes/stream");
	for (i = 0; __zcr_pred_names[i]; i++) {
		const char *n = __zcr_pred_names[i];
		size_t mem;
		double a = measure(n, 1, iters, &mem, &sink);
		double b = measure(n, 10, iters, &mem, &sink);

		if (csv)
			printf("%s,%.1f,%.1f,%zu\n", n, a, b, mem);
		else
			printf("%-15s %12.1f %12.1f %16zu\n", n, a, b, mem);
	}
	/* Print nothing from sink; it only defeats dead-code elimination. */
	return sink == 1 ? 3 : 0;
}
