// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcpredict - replay receive-call traces through the predictors.
 *
 *   zcpredict [options] TRACE|DIR...
 *
 * Each file is one rank (a directory: every regular file in it, sorted by
 * name). For every predictor and stream mode it prints the hit ratio at +1
 * and +k over all receives and over those of at least -t bytes, the
 * detected period and the memory the predictors hold, per rank and over
 * all ranks. See Documentation/predictors.md for the CSV and JSON columns.
 * Malformed input: "file:line: reason" on stderr and exit status 1.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "predict/predict.h"
#include "replay.h"
#include "trace.h"

enum fmt { FMT_TABLE, FMT_CSV, FMT_JSON };

struct opts {
	const char *preds[16];
	int npreds;
	unsigned int k, win, dpd_n;
	uint64_t threshold;
	int modes;		/* bit 0 global, bit 1 per (src, tag) */
	enum zcr_hit_def def;
	enum fmt fmt;
	bool quiet;
};

static const char *mode_name(int m)
{
	return m ? "src,tag" : "global";
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: zcpredict [options] TRACE|DIR...\n"
"  -p LIST    predictors, comma separated, or 'all' (default all):\n"
"             cycle tag tagcycle tagbettercycle lru fifo lfu graph dpd select\n"
"  -k K       the +k horizon (default 10)\n"
"  -t BYTES   size threshold of the 'big' columns (default 8192)\n"
"  -s MODE    streams: global, stream (per source and tag) or both (default)\n"
"  -w W       window of lru/fifo/lfu (default 4)\n"
"  -N N       window of dpd (default 256)\n"
"  -d DEF     hit definition of the table: ident (default) or buffer\n"
"  -f FMT     output: table (default), csv or json\n"
"  -q         overall rows only\n"
"  -h, --help this help\n");
}

static int parse_preds(struct opts *o, char *arg)
{
	char *tok, *save = NULL;
	int i;

	o->npreds = 0;
	for (tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "all")) {
			for (i = 0; __zcr_pred_names[i] && o->npreds < 16; i++)
				o->preds[o->npreds++] = __zcr_pred_names[i];
			continue;
		}
		for (i = 0; __zcr_pred_names[i]; i++)
			if (!strcmp(tok, __zcr_pred_names[i]))
				break;
		if (!__zcr_pred_names[i]) {
			fprintf(stderr, "zcpredict: unknown predictor '%s'\n",
				tok);
			return -1;
		}
		if (o->npreds < 16)
			o->preds[o->npreds++] = __zcr_pred_names[i];
	}
	return o->npreds ? 0 : -1;
}

static bool json_first = true;

/* The machine-readable columns, in order; the CSV header and the JSON keys. */
static const char *const field_names[] = {
	"rank", "predictor", "stream", "k", "threshold", "calls",
	"ident_1", "ident_k", "buffer_1", "buffer_k", "big_calls",
	"big_ident_1", "big_ident_k", "big_buffer_1", "big_buffer_k",
	"streams", "period", "memory_bytes",
};
#define NFIELDS (sizeof(field_names) / sizeof(field_names[0]))
#define NTEXT 3		/* the first three fields are strings */

static void print_header(const struct opts *o)
{
	size_t i;

	if (o->fmt == FMT_CSV) {
		for (i = 0; i < NFIELDS; i++)
			printf("%s%s", i ? "," : "", field_names[i]);
		printf("\n");
	} else if (o->fmt == FMT_JSON) {
		printf("[");
	} else {
		printf("hit definition: %s; big = size >= %llu bytes\n",
		       o->def == ZCR_HIT_IDENT ?
		       "receive-call identity (src tag size buf comm)" :
		       "buffer (buf size src)",
		       (unsigned long long)o->threshold);
		printf("%-18s %-14s %-7s %9s %6s %6s %9s %6s %6s %6s %10s\n",
		       "rank", "predictor", "stream", "calls", "+1%", "+k%",
		       "big", "big+1%", "big+k%", "period", "memory");
	}
}

/* One CSV line or JSON object; counts print as integers, ratios as %.2f. */
static void print_fields(const struct opts *o, const char *rank,
			 const char *pred, int mode,
			 const struct zcr_eval_stats *s)
{
	const int I = ZCR_HIT_IDENT, B = ZCR_HIT_BUFFER;
	const char *text[NTEXT] = { rank, pred, mode ? "stream" : "global" };
	const double num[NFIELDS - NTEXT] = {
		o->k, (double)o->threshold, (double)s->calls,
		__zcr_eval_pct(s->hit[I][0], s->calls),
		__zcr_eval_pct(s->hit[I][1], s->calls),
		__zcr_eval_pct(s->hit[B][0], s->calls),
		__zcr_eval_pct(s->hit[B][1], s->calls),
		(double)s->big,
		__zcr_eval_pct(s->hitbig[I][0], s->big),
		__zcr_eval_pct(s->hitbig[I][1], s->big),
		__zcr_eval_pct(s->hitbig[B][0], s->big),
		__zcr_eval_pct(s->hitbig[B][1], s->big),
		(double)s->streams, s->period, (double)s->memory,
	};
	/* which numeric fields are ratios */
	const unsigned int ratio_mask = 0xf << 3 | 0xf << 8;
	bool json = o->fmt == FMT_JSON;
	size_t i;

	if (json)
		printf("%s\n {", json_first ? "" : ",");
	for (i = 0; i < NFIELDS; i++) {
		const char *sep = i ? (json ? ", " : ",") : "";

		if (json)
			printf("%s\"%s\": ", sep, field_names[i]);
		else
			printf("%s", sep);
		if (i < NTEXT)
			printf(json ? "\"%s\"" : "%s", text[i]);
		else if (ratio_mask & (1u << (i - NTEXT)))
			printf("%.2f", num[i - NTEXT]);
		else
			printf("%.0f", num[i - NTEXT]);
	}
	printf(json ? "}" : "\n");
	json_first = false;
}

static void print_row(const struct opts *o, const char *rank,
		      const char *pred, int mode,
		      const struct zcr_eval_stats *s)
{
	if (o->fmt == FMT_CSV || o->fmt == FMT_JSON) {
		print_fields(o, rank, pred, mode, s);
	} else {
		char per[16];

		if (s->period)
			snprintf(per, sizeof(per), "%u", s->period);
		else
			snprintf(per, sizeof(per), "-");
		printf("%-18.18s %-14s %-7s %9llu %6.1f %6.1f %9llu %6.1f "
		       "%6.1f %6s %10zu\n", rank, pred, mode_name(mode),
		       (unsigned long long)s->calls,
		       __zcr_eval_pct(s->hit[o->def][0], s->calls),
		       __zcr_eval_pct(s->hit[o->def][1], s->calls),
		       (unsigned long long)s->big,
		       __zcr_eval_pct(s->hitbig[o->def][0], s->big),
		       __zcr_eval_pct(s->hitbig[o->def][1], s->big),
		       per, s->memory);
	}
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Replay one rank through every evaluator; 0, or 1 after an error. */
static int run_rank(const struct opts *o, const char *path,
		    struct zcr_eval_stats *total)
{
	struct zcr_eval *ev[32] = { NULL };
	struct zcr_trace_rec r;
	struct zcr_trace t;
	int ne = 0, i, m, ret, status = 0;

	ret = __zcr_trace_open(&t, path);
	if (ret) {
		fprintf(stderr, "zcpredict: %s\n", t.err);
		return 1;
	}
	for (i = 0; i < o->npreds; i++)
		for (m = 0; m < 2; m++) {
			struct zcr_eval_cfg cfg = {
				.pred = o->preds[i],
				.window = __zcr_eval_window(o->preds[i], o->k,
							    o->win, o->dpd_n),
				.k = o->k,
				.threshold = o->threshold,
				.per_stream = m,
			};

			if (!(o->modes & (1 << m)))
				continue;
			ev[ne] = __zcr_eval_create(&cfg);
			if (!ev[ne++]) {
				fprintf(stderr, "zcpredict: out of memory\n");
				status = 1;
				goto out;
			}
		}
	while ((ret = __zcr_trace_next(&t, &r)) > 0)
		for (i = 0; i < ne; i++)
			if (__zcr_eval_feed(ev[i], &r.call)) {
				fprintf(stderr, "zcpredict: out of memory\n");
				status = 1;
				goto out;
			}
	if (ret < 0) {
		fprintf(stderr, "%s\n", t.err);
		status = 1;
		goto out;
	}
	ne = 0;
	for (i = 0; i < o->npreds; i++)
		for (m = 0; m < 2; m++) {
			struct zcr_eval_stats s;

			if (!(o->modes & (1 << m)))
				continue;
			__zcr_eval_get(ev[ne++], &s);
			if (!o->quiet)
				print_row(o, base_name(path), o->preds[i], m,
					  &s);
			__zcr_eval_add(&total[i * 2 + m], &s);
		}
out:
	for (i = 0; i < ne; i++)
		__zcr_eval_destroy(ev[i]);
	__zcr_trace_close(&t);
	return status;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.k = 10, .win = 4, .dpd_n = 256, .threshold = 8192,
		.modes = 3, .def = ZCR_HIT_IDENT, .fmt = FMT_TABLE,
	};
	struct zcr_eval_stats total[32];
	char **files = NULL, all[] = "all", *end;
	size_t nfiles = 0, f;
	static const struct option lopts[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int c, i, m, ret;

	parse_preds(&o, all);
	while ((c = getopt_long(argc, argv, "p:k:t:s:w:N:d:f:qh", lopts,
				NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_preds(&o, optarg))
				return 2;
			break;
		case 'k':
			o.k = (unsigned int)strtoul(optarg, &end, 10);
			if (*end || o.k < 1 || o.k > 64) {
				fprintf(stderr, "zcpredict: -k wants 1..64\n");
				return 2;
			}
			break;
		case 't':
			o.threshold = strtoull(optarg, &end, 0);
			if (*end) {
				fprintf(stderr, "zcpredict: bad -t\n");
				return 2;
			}
			break;
		case 's':
			if (!strcmp(optarg, "global"))
				o.modes = 1;
			else if (!strcmp(optarg, "stream"))
				o.modes = 2;
			else if (!strcmp(optarg, "both"))
				o.modes = 3;
			else {
				usage(stderr);
				return 2;
			}
			break;
		case 'w':
			o.win = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'N':
			o.dpd_n = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'd':
			if (!strcmp(optarg, "ident"))
				o.def = ZCR_HIT_IDENT;
			else if (!strcmp(optarg, "buffer"))
				o.def = ZCR_HIT_BUFFER;
			else {
				usage(stderr);
				return 2;
			}
			break;
		case 'f':
			if (!strcmp(optarg, "table"))
				o.fmt = FMT_TABLE;
			else if (!strcmp(optarg, "csv"))
				o.fmt = FMT_CSV;
			else if (!strcmp(optarg, "json"))
				o.fmt = FMT_JSON;
			else {
				usage(stderr);
				return 2;
			}
			break;
		case 'q':
			o.quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind == argc) {
		usage(stderr);
		return 2;
	}
	for (i = optind; i < argc; i++) {
		ret = __zcr_trace_expand(argv[i], &files, &nfiles);
		if (ret) {
			fprintf(stderr, "zcpredict: %s: %s\n", argv[i],
				strerror(-ret));
			return 1;
		}
	}
	if (!nfiles) {
		fprintf(stderr, "zcpredict: no trace files\n");
		return 1;
	}
	memset(total, 0, sizeof(total));
	print_header(&o);
	ret = 0;
	for (f = 0; f < nfiles && !ret; f++)
		ret = run_rank(&o, files[f], total);
	if (!ret)
		for (i = 0; i < o.npreds; i++)
			for (m = 0; m < 2; m++)
				if (o.modes & (1 << m))
					print_row(&o, "all", o.preds[i], m,
						  &total[i * 2 + m]);
	if (o.fmt == FMT_JSON)
		printf("\n]\n");
	for (f = 0; f < nfiles; f++)
		free(files[f]);
	free(files);
	return ret;
}
