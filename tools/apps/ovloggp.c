// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ovloggp.c - the LogGP parameters of the stack it runs under, measured
 * the way the overlap models of Documentation/apps.md ("The models") need
 * them, per message size: both ranks send N messages of one size to each
 * other, their receives posted late (after the sends) or early (before the
 * opening barrier, --post). With nothing between the sends, the time
 * each MPI_Isend takes is the gap g and the whole flood, per byte sent in
 * one direction, is G; with a computation before each send (--work) and
 * each message completed before the next, the time an MPI_Isend takes
 * (the median) is the overhead o. L is half the round trip of an 8-byte ping-pong;
 * copy the time per byte of a rank's put to itself (a memcpy, the
 * probes' own slab). Medians over --iters repetitions, with their range.
 * Checks: after the timed part the receive area is cleared and one more
 * flood of every size runs; every message must hold the peer's pattern.
 *   mpirun -np 2 ovloggp [--sizes LIST] [--size BYTES] [--iters K]
 *                        [--work F] [--post late|early]
 */
#include "apps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TAG_FLOOD 80
#define TAG_PING 81
#define SEED 0x4c47
#define MAX_SIZES 16
#define MIN_COUNT 4
#define MAX_COUNT 1024
#define PINGS 500
#define MAX_BYTES (1L << 30)

enum { P_L, P_O, P_G, P_GB, P_COPY, NPARAM };

static const struct app_opt opts[] = {
	{ "sizes", "LIST",
	  "                   message sizes in bytes, comma-separated, up to 16\n"
	  "                   (default 8,65536,262144,1048576,4194304,8388608:\n"
	  "                   the overlap probes' messages at their defaults)" },
	{ "work", "F",
	  "                   the computation before each send when o is\n"
	  "                   measured (one message at a time), as a multiple\n"
	  "                   of the flood's time per message (default 2; > 0)" },
	{ NULL, NULL, NULL }
};

static long opt_sizes[MAX_SIZES] = { 8, 65536, 262144, 1048576, 4194304,
				     8388608 };
static int opt_nsizes = 6;
static double opt_work = 2;

static const char *parse(int i, const char *val)
{
	const char *p = val;
	char *end;
	double d;
	long v;
	int n = 0;

	if (i == 1) {
		d = strtod(val, &end);
		if (*end || end == val || !(d > 0 && d <= 1000))
			return "expected a number above 0, at most 1000";
		opt_work = d;
		return NULL;
	}
	for (;;) {
		v = strtol(p, &end, 10);
		if (end == p || v < 1 || v > MAX_BYTES / MIN_COUNT)
			return "expected sizes from 1 to 268435456 bytes, "
			       "comma-separated";
		if (n == MAX_SIZES)
			return "more than 16 sizes";
		opt_sizes[n++] = v;
		if (!*end)
			break;
		if (*end != ',')
			return "expected sizes from 1 to 268435456 bytes, "
			       "comma-separated";
		p = end + 1;
	}
	opt_nsizes = n;
	return NULL;
}

static const struct app_desc desc = {
	.name = "ovloggp",
	.what = "LogGP parameters of the stack, per message size, for the\n"
		"overlap models: L (half an 8-byte round trip), o (one send after\n"
		"computation), g (one send right after another), G (a flood both\n"
		"ways, per byte) and the cost of a put to oneself; a table and\n"
		"csv, lines before the result line.",
	.size_help = "BYTES each flood moves one way (the message count is\n"
		"                   BYTES / size, at least 4, at most 1024)",
	.iters_help = "repetitions of every measurement (medians reported)",
	.def_size = 16L << 20, .def_iters = 5,
	.paper_size = 64L << 20, .paper_iters = 9,
	.paper_help = "floods of 64 MiB, 9 repetitions",
	.ranks_help = "2",
	.comm_help =
		"                   p2p only: MPI_Isend/MPI_Irecv, MPI_Send/MPI_Recv",
	.post_help =
		"                   early: a flood's receives are posted before its\n"
		"                   opening barrier; late: after its sends",
	.coll_early = 0,
	.opts = opts,
	.opt = parse,
};

struct flood {
	long m, n;		/* message size, messages */
	char *sbuf;		/* one message, sent n times */
	char *rbuf;		/* n slots of m */
	char *cbuf;		/* the put to oneself lands here */
};

static volatile double sink;

/* A computation that keeps the processor busy for secs, in its caches. */
static void work(double secs)
{
	double t0 = app_now(), x = 1;
	int i;

	while (app_now() - t0 < secs)
		for (i = 0; i < 256; i++)
			x = x * 1.0000001 + 1e-9;
	sink = x;
}

/* Byte j of a message from rank q: the same on every rank. */
static char pattern(int q, long j)
{
	return (char)(app_mix(((uint64_t)q << 40) ^ (uint64_t)j ^ SEED) & 0xff);
}

static void recv_slot(struct app *a, struct flood *f, struct app_xchg *x,
		      long i)
{
	app_irecv(a, x, f->rbuf + i * f->m, (int)f->m, MPI_BYTE, 1 - a->rank,
		  TAG_FLOOD, MPI_COMM_WORLD);
}

/*
 * n sends of m bytes to the peer, the receives of the peer's n posted as
 * --post says. Without computation (secs 0) a flood: the sends back to
 * back, then the receives, then one wait. With it, one message at a
 * time, each after secs of computation and completed (with its receive)
 * before the next: every send finds the way clear, which is what the
 * computation before each send is for. Leaves the time each MPI_Isend
 * took in ti[0..n) and returns the time from the opening barrier to the
 * last completion, on this rank.
 */
static double flood(struct app *a, struct flood *f, struct app_xchg *x,
		    double secs, double *ti)
{
	double t0, t1, s;
	long i;

	if (a->post == APP_EARLY && !secs)
		for (i = 0; i < f->n; i++)
			recv_slot(a, f, x, i);
	app_barrier(a);
	t0 = app_now();
	for (i = 0; i < f->n; i++) {
		if (secs > 0) {
			if (a->post == APP_EARLY)
				recv_slot(a, f, x, i);
			s = app_now();
			work(secs);
			app_comp(a, s);
		}
		s = app_now();
		app_isend(a, x, f->sbuf, (int)f->m, MPI_BYTE, 1 - a->rank,
			  TAG_FLOOD, MPI_COMM_WORLD);
		ti[i] = app_now() - s;
		if (secs > 0) {
			if (a->post == APP_LATE)
				recv_slot(a, f, x, i);
			app_waitall(a, x);
		}
	}
	if (a->post == APP_LATE && !secs)
		for (i = 0; i < f->n; i++)
			recv_slot(a, f, x, i);
	app_waitall(a, x);
	t1 = app_now();
	app_barrier(a);
	return t1 - t0;
}

/* Half the round trip of an 8-byte message, rank 0 starting. */
static double pingpong(struct app *a)
{
	char b[8] = { 0 };
	double t0;
	int i;

	app_barrier(a);
	t0 = app_now();
	for (i = 0; i < PINGS; i++) {
		if (a->rank == 0) {
			MPI_Send(b, 8, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD);
			MPI_Recv(b, 8, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(b, 8, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(b, 8, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD);
		}
	}
	a->st.msgs += PINGS;
	a->st.bytes += 8 * PINGS;
	return (app_now() - t0) / (2.0 * PINGS);
}

/* The put to oneself: n copies of m bytes, seconds per byte. */
static double selfcopy(struct flood *f)
{
	double t0 = app_now();
	long i;

	for (i = 0; i < f->n; i++)
		memcpy(f->cbuf + i * f->m, f->sbuf, (size_t)f->m);
	return (app_now() - t0) / ((double)f->n * (double)f->m);
}

/* The mean over both ranks (every rank gets it). */
static double mean2(double v)
{
	double s;

	MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	return s / 2;
}

static double max2(double v)
{
	double s;

	MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return s;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/* Median of v[0..n) (sorts v). */
static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double mean(const double *v, long n)
{
	double s = 0;
	long i;

	for (i = 0; i < n; i++)
		s += v[i];
	return s / (double)n;
}

/* Every slot of the receive area holds the peer's pattern; digest word. */
static uint64_t check(struct app *a, struct flood *f)
{
	int peer = 1 - a->rank;
	uint64_t w = 0;
	long i, j;

	for (i = 0; i < f->n; i++)
		for (j = 0; j < f->m; j++) {
			if (f->rbuf[i * f->m + j] != pattern(peer, j)) {
				app_fail(a, "message %ld of %ld bytes from "
					 "rank %d: byte %ld differs", i, f->m,
					 peer, j);
				return w;
			}
			if (i == 0)
				w += app_elem(((uint64_t)f->m << 32) ^
					      (uint64_t)j,
					      (double)(unsigned char)
					      f->rbuf[j]);
		}
	return w;
}

int main(int argc, char **argv)
{
	struct app a;
	struct app_xchg x;
	struct flood *f;
	double *v[NPARAM], *ti, t, per;
	double med[MAX_SIZES][NPARAM], lo[MAX_SIZES][NPARAM],
	       hi[MAX_SIZES][NPARAM];
	uint64_t w[2] = { 0, 0 };
	long it, j, maxn = 0, maxb = 0;
	int s, k, rc;

	app_init(&a, &desc, argc, argv);
	if (a.comm == APP_COLL)
		app_reject(&a, "--comm coll: it measures point-to-point sends");
	if (a.persist)
		app_reject(&a, "--comm persist: it measures plain sends");
	if (a.nranks != 2)
		app_reject(&a, "%d ranks: it measures a pair, run 2",
			   a.nranks);
	if (a.size > MAX_BYTES)
		app_reject(&a, "--size %ld: at most %ld bytes", a.size,
			   MAX_BYTES);
	f = calloc((size_t)opt_nsizes, sizeof(*f));
	for (k = 0; k < NPARAM; k++)
		v[k] = calloc((size_t)a.iters, sizeof(double));
	if (!f)
		app_die(&a, "out of memory");
	for (k = 0; k < NPARAM; k++)
		if (!v[k])
			app_die(&a, "out of memory");
	for (s = 0; s < opt_nsizes; s++) {
		f[s].m = opt_sizes[s];
		f[s].n = a.size / f[s].m;
		if (f[s].n < MIN_COUNT)
			f[s].n = MIN_COUNT;
		if (f[s].n > MAX_COUNT)
			f[s].n = MAX_COUNT;
		if (f[s].n > maxn)
			maxn = f[s].n;
		if (f[s].n * f[s].m > maxb)
			maxb = f[s].n * f[s].m;
	}
	/* One receive area and one copy area for all sizes: the largest. */
	f[0].rbuf = app_alloc(&a, (size_t)maxb);
	f[0].cbuf = app_alloc_plain(&a, (size_t)maxb);
	f[0].sbuf = app_alloc_plain(&a, (size_t)opt_sizes[0]);
	for (s = 0; s < opt_nsizes; s++) {
		f[s].rbuf = f[0].rbuf;
		f[s].cbuf = f[0].cbuf;
		f[s].sbuf = s ? app_alloc_plain(&a, (size_t)f[s].m) : f[0].sbuf;
		for (j = 0; j < f[s].m; j++)
			f[s].sbuf[j] = pattern(a.rank, j);
	}
	memset(f[0].rbuf, 0, (size_t)maxb);
	memset(f[0].cbuf, 0, (size_t)maxb);
	app_xchg_init(&a, &x, 2 * (int)maxn);
	ti = calloc((size_t)maxn, sizeof(*ti));
	if (!ti)
		app_die(&a, "out of memory");
	snprintf(a.tail, sizeof(a.tail), "sizes=%d work=%g", opt_nsizes,
		 opt_work);

	app_begin(&a);
	for (s = 0; s < opt_nsizes; s++) {
		for (it = 0; it < a.iters; it++) {
			v[P_L][it] = mean2(pingpong(&a));
			/* g: the mean, queueing behind earlier sends included. */
			t = max2(flood(&a, &f[s], &x, 0, ti));
			v[P_G][it] = mean2(mean(ti, f[s].n));
			v[P_GB][it] = t / ((double)f[s].n * (double)f[s].m);
			/* Long enough for the previous message to have gone. */
			per = opt_work * t / (double)f[s].n;
			/* o: the median, one message at a time; a send the
			 * scheduler stopped does not make it. */
			flood(&a, &f[s], &x, per, ti);
			v[P_O][it] = mean2(median(ti, f[s].n));
			v[P_COPY][it] = mean2(selfcopy(&f[s]));
		}
		for (k = 0; k < NPARAM; k++) {
			med[s][k] = median(v[k], a.iters);
			lo[s][k] = v[k][0];
			hi[s][k] = v[k][a.iters - 1];
		}
	}
	app_end(&a);

	/* One more flood of every size into a cleared area, for the checks. */
	for (s = 0; s < opt_nsizes; s++) {
		memset(f[s].rbuf, 0, (size_t)(f[s].n * f[s].m));
		flood(&a, &f[s], &x, 0, ti);
		w[0] += check(&a, &f[s]);
		w[1] += (uint64_t)f[s].m;
	}
	app_sum_words(&a, w, 1);

	if (a.rank == 0) {
		printf("ovloggp: 2 ranks, receives posted %s, %ld repetitions: "
		       "medians (range)\n", a.post == APP_LATE ? "late" :
		       "early", a.iters);
		printf("%10s %5s %18s %20s %20s %22s %7s %9s\n", "bytes",
		       "count", "L us", "o us", "g us", "G ns/B", "GB/s",
		       "copy ns/B");
		for (s = 0; s < opt_nsizes; s++) {
			char c[4][48];

			for (k = 0; k < 4; k++) {
				int p = k == 0 ? P_L : k == 1 ? P_O :
					k == 2 ? P_G : P_GB;
				double u = p == P_GB ? 1e9 : 1e6;

				snprintf(c[k], sizeof(c[k]), "%.3f (%.2f..%.2f)",
					 med[s][p] * u, lo[s][p] * u,
					 hi[s][p] * u);
			}
			printf("%10ld %5ld %18s %20s %20s %22s %7.2f %9.4f\n",
			       f[s].m, f[s].n, c[0], c[1], c[2], c[3],
			       1e-9 / med[s][P_GB], med[s][P_COPY] * 1e9);
		}
		/* Seconds, and seconds per byte for G and copy. */
		printf("csv,bytes,count,L,o,g,G,copy,L_min,L_max,o_min,o_max,"
		       "g_min,g_max,G_min,G_max\n");
		for (s = 0; s < opt_nsizes; s++)
			printf("csv,%ld,%ld,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,"
			       "%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n", f[s].m,
			       f[s].n, med[s][P_L], med[s][P_O], med[s][P_G],
			       med[s][P_GB], med[s][P_COPY], lo[s][P_L],
			       hi[s][P_L], lo[s][P_O], hi[s][P_O], lo[s][P_G],
			       hi[s][P_G], lo[s][P_GB], hi[s][P_GB]);
		fflush(stdout);
	}
	app_xchg_free(&x);
	free(ti);
	for (s = 1; s < opt_nsizes; s++)
		free(f[s].sbuf);
	free(f[0].sbuf);
	free(f[0].cbuf);
	app_free(&a, f[0].rbuf);
	for (k = 0; k < NPARAM; k++)
		free(v[k]);
	free(f);
	rc = app_finish(&a, w, 2);
	return rc;
}
