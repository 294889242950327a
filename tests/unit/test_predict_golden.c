// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_predict_golden.c - golden hit ratios on the bundled MPI traces.
 *
 * Replays every app under tests/traces/ (recorded by tools/mpi/zctrace.so,
 * regenerated with tools/mpi/make-traces.sh, which also rewrites
 * tests/traces/golden.csv) through every predictor, globally and per
 * (source, tag), at +1 and +10, and checks:
 *  - each ratio equals golden.csv (the predictors are deterministic);
 *  - the selector is within one point of the best single point predictor;
 *  - the best predictor reaches 90% at +1 (all these apps are regular;
 *    the Fortran ring, 20 calls a rank, is too short to leave warm-up).
 * Traces are found in $ZCRECV_TRACES, else tests/traces from the current
 * directory (tools/run-tests.sh runs from the repository root), else
 * relative to this binary. Missing traces fail, never skip.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "replay.h"
#include "trace.h"
#include "zt.h"

#define K 10
#define THRESHOLD 8192

static const char *traces_dir(void)
{
	static char buf[PATH_MAX];
	const char *env = getenv("ZCRECV_TRACES");
	ssize_t n;
	char *s;

	if (env && *env)
		return env;
	if (!access("tests/traces/golden.csv", R_OK))
		return "tests/traces";
	/* build/tests/unit/<binary> -> ../../../tests/traces */
	n = readlink("/proc/self/exe", buf, sizeof(buf) - 32);
	if (n > 0) {
		buf[n] = '\0';
		s = strstr(buf, "/build/tests/unit/");
		if (s) {
			strcpy(s, "/tests/traces");
			if (!access(buf, R_OK))
				return buf;
		}
	}
	zt_fail(__FILE__, __LINE__,
		"bundled traces not found: set ZCRECV_TRACES or run from the repository root");
}

static void replay_app(const char *app, const char *pred, bool per_stream,
		       struct zcr_eval_stats *tot)
{
	struct zcr_eval_cfg cfg = {
		.pred = pred, .window = __zcr_eval_window(pred, K, 4, 256),
		.k = K, .threshold = THRESHOLD, .per_stream = per_stream,
	};
	char path[PATH_MAX], **files = NULL;
	size_t n = 0, i;

	snprintf(path, sizeof(path), "%s/%s", traces_dir(), app);
	ZT_ASSERT_MSG(!__zcr_trace_expand(path, &files, &n) && n,
		      "no traces in %s", path);
	memset(tot, 0, sizeof(*tot));
	for (i = 0; i < n; i++) {
		struct zcr_eval *e = __zcr_eval_create(&cfg);
		struct zcr_eval_stats s;
		struct zcr_trace_rec r;
		struct zcr_trace t;
		int ret;

		ZT_ASSERT(e);
		ZT_ASSERT_MSG(!__zcr_trace_open(&t, files[i]), "%s", t.err);
		while ((ret = __zcr_trace_next(&t, &r)) > 0)
			ZT_ASSERT(!__zcr_eval_feed(e, &r.call));
		ZT_ASSERT_MSG(ret == 0, "%s", t.err);
		__zcr_eval_get(e, &s);
		__zcr_eval_add(tot, &s);
		__zcr_eval_destroy(e);
		__zcr_trace_close(&t);
		free(files[i]);
	}
	free(files);
}

static void format_row(char *out, size_t len, const char *app,
		       const char *pred, bool ps,
		       const struct zcr_eval_stats *s)
{
	const int I = ZCR_HIT_IDENT, B = ZCR_HIT_BUFFER;

	snprintf(out, len, "%s,%s,%s,%llu,%.2f,%.2f,%.2f,%.2f,%llu,%.2f,%.2f,%u",
		 app, pred, ps ? "stream" : "global",
		 (unsigned long long)s->calls,
		 __zcr_eval_pct(s->hit[I][0], s->calls),
		 __zcr_eval_pct(s->hit[I][1], s->calls),
		 __zcr_eval_pct(s->hit[B][0], s->calls),
		 __zcr_eval_pct(s->hit[B][1], s->calls),
		 (unsigned long long)s->big,
		 __zcr_eval_pct(s->hitbig[B][0], s->big),
		 __zcr_eval_pct(s->hitbig[B][1], s->big), s->period);
}

static const char *const points[] = {
	"cycle", "tag", "tagcycle", "tagbettercycle", "graph", "dpd",
};
#define NPOINTS (sizeof(points) / sizeof(points[0]))

static void check_app(const char *app, bool long_enough)
{
	char path[PATH_MAX], line[512], mine[512], *nl;
	struct zcr_eval_stats s, best[2], sel[2];
	int rows = 0, d, k, m;
	FILE *f;

	memset(best, 0, sizeof(best));
	snprintf(path, sizeof(path), "%s/golden.csv", traces_dir());
	f = fopen(path, "r");
	ZT_ASSERT_MSG(f, "cannot open %s", path);
	while (fgets(line, sizeof(line), f)) {
		char pred[32], mode[16];
		size_t al = strlen(app);
		bool ps;
		size_t i;

		if (strncmp(line, app, al) || line[al] != ',')
			continue;
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		ZT_ASSERT(sscanf(line + al + 1, "%31[^,],%15[^,]", pred,
				 mode) == 2);
		ps = !strcmp(mode, "stream");
		replay_app(app, pred, ps, &s);
		format_row(mine, sizeof(mine), app, pred, ps, &s);
		ZT_ASSERT_MSG(!strcmp(mine, line), "golden %s\n#    now    %s",
			      line, mine);
		rows++;
		if (!strcmp(pred, "select"))
			sel[ps] = s;
		for (i = 0; i < NPOINTS; i++)
			if (!strcmp(pred, points[i]))
				for (d = 0; d < ZCR_HIT_NDEFS; d++)
					for (k = 0; k < 2; k++)
						if (s.hit[d][k] >
						    best[ps].hit[d][k])
							best[ps].hit[d][k] =
								s.hit[d][k];
		best[ps].calls = s.calls;
	}
	fclose(f);
	ZT_ASSERT_MSG(rows == 20, "%s: %d golden rows, want 20", app, rows);
	for (m = 0; m < 2; m++) {
		uint64_t n = best[m].calls;

		for (d = 0; d < ZCR_HIT_NDEFS; d++)
			for (k = 0; k < 2; k++)
				ZT_ASSERT_MSG(__zcr_eval_pct(sel[m].hit[d][k], n) >=
					      __zcr_eval_pct(best[m].hit[d][k], n) - 1.0,
					      "%s %s def %d +%d: select %.2f best %.2f",
					      app, m ? "stream" : "global", d,
					      k ? K : 1,
					      __zcr_eval_pct(sel[m].hit[d][k], n),
					      __zcr_eval_pct(best[m].hit[d][k], n));
		if (!long_enough)
			continue;
		ZT_ASSERT_MSG(__zcr_eval_pct(best[m].hit[ZCR_HIT_IDENT][0], n) >= 90.0,
			      "%s: best +1 only %.2f", app,
			      __zcr_eval_pct(best[m].hit[ZCR_HIT_IDENT][0], n));
	}
}

ZT_TEST(golden_poisson) { check_app("poisson", true); }
ZT_TEST(golden_matmul) { check_app("matmul", true); }
ZT_TEST(golden_nbody) { check_app("nbody", true); }
ZT_TEST(golden_fft) { check_app("fft", true); }
ZT_TEST(golden_cg) { check_app("cg", true); }
ZT_TEST(golden_cg_mpich) { check_app("cg-mpich", true); }
ZT_TEST(golden_ring_f90) { check_app("ring-f90", false); }
ZT_TEST(golden_ring_f90_mpich) { check_app("ring-f90-mpich", false); }
