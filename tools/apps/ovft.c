// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ovft.c - the FT-derived overlap probe (Documentation/apps.md, "OVFT"):
 * every rank holds an N x R array of complex numbers, runs a length-R FFT
 * on each row and sends rows [p N/P, (p+1) N/P) to rank p, the exchange
 * in the middle of a 3-D FFT. The versions differ only in when the sends
 * start: E after all FFTs, S after each destination's slab, P after each
 * row, X:k after each k-th of a slab. --scale cuts the FFTs after a share
 * of their butterfly stages, down to none.
 * Checks: before the finish the receive buffers are cleared and one more,
 * untimed exchange runs; every received row must hold 2^stages times the
 * sender's row energy, and every eighth row (every row of small arrays)
 * must equal the receiver's own transform of that row bit for bit.
 *   mpirun -np 2 ovft [--size N] [--len R] [--iters K]
 *                     [--version E|S|P|X:k] [--scale S] [--post late|early]
 */
#include "apps.h"
#include "fft.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TAG 60		/* + the message's index within its slab */
#define SEED 0x4f56
#define FULL_CHECK (1L << 18)	/* every row rebuilt up to this many points */

static const struct app_opt opts[] = {
	{ "len", "R",
	  "                   R: the row length, complex numbers, a power of 2\n"
	  "                   (default 4096)" },
	{ "version", "E|S|P|X:k",
	  "                   E: all FFTs, then one message per destination;\n"
	  "                   S: FFT a destination's slab, send it; P: send each\n"
	  "                   row after its FFT; X:k: k messages per destination,\n"
	  "                   each sent after its rows' FFTs (default E)" },
	{ "scale", "S",
	  "                   0..1: the share of the FFTs' log2 R butterfly\n"
	  "                   stages run (rounded up; 0: no computation at all,\n"
	  "                   1: the whole FFT; default 1)" },
	{ NULL, NULL, NULL }
};

static long opt_len;		/* 0: 4096, or 512 with --paper */
static long opt_k = 1;		/* messages per destination */
static int opt_e;		/* E: all FFTs first */
static double opt_scale = 1;

static const char *parse(int i, const char *val)
{
	char *end;
	long v;

	switch (i) {
	case 0:
		v = strtol(val, &end, 10);
		if (*end || end == val || v < 2 || v > (1L << 20) ||
		    (v & (v - 1)))
			return "expected a power of 2 from 2 to 2^20";
		opt_len = v;
		return NULL;
	case 1:
		opt_e = 0;
		opt_k = 1;
		if (!strcmp(val, "E"))
			opt_e = 1;
		else if (!strcmp(val, "S"))
			opt_k = 1;
		else if (!strcmp(val, "P"))
			opt_k = 0;	/* one row a message: N/P */
		else if (val[0] == 'X' && val[1] == ':') {
			v = strtol(val + 2, &end, 10);
			if (*end || end == val + 2 || v < 1 || v > 30000)
				return "X:k needs k from 1 to 30000";
			opt_k = v;
		} else {
			return "expected E, S, P or X:k";
		}
		return NULL;
	default:
		return app_parse_share(val, &opt_scale);
	}
}

static const struct app_desc desc = {
	.name = "ovft",
	.what = "FT-derived overlap probe: an N x R complex array per rank, an FFT\n"
		"per row, and rows [p N/P, (p+1) N/P) sent to rank p, early or\n"
		"late in the computation (--version).",
	.size_help = "N: rows per rank; P divides N",
	.iters_help = "exchanges, each between two barriers",
	.def_size = 256, .def_iters = 100,
	.paper_size = 8192, .paper_iters = 4,
	.paper_help = "the many-small-messages shape: N = 8192 rows of\n"
		"                   R = 512 (unless --len), 4 exchanges",
	.ranks_help = "any P that divides N",
	.comm_help =
		"                   p2p only: MPI_Isend/MPI_Irecv of the slabs",
	.post_help =
		"                   early: every receive of an exchange is posted\n"
		"                   before its opening barrier; late: after the\n"
		"                   computation and sends, just before the wait",
	.coll_early = 0,
	.opts = opts,
	.opt = parse,
};

struct ovft {
	long n, r, nr, k;	/* rows, row length, rows per slab, msgs */
	int stages, e;
	struct fft_plan plan;
	struct cplx *in;	/* the rows as made, never changed */
	struct cplx *out;	/* the rows transformed: sent from here */
	struct cplx *recv;	/* slab q from rank q at rows q nr */
};

/* Row i of rank q's array as made: the same on every rank. */
static void make_row(const struct ovft *o, int q, long i, struct cplx *row)
{
	uint64_t g = ((uint64_t)q * (uint64_t)o->n + (uint64_t)i) *
		     (uint64_t)o->r;
	long j;

	for (j = 0; j < o->r; j++) {
		row[j].re = app_unif(SEED, 2 * (g + (uint64_t)j)) - 0.5;
		row[j].im = app_unif(SEED, 2 * (g + (uint64_t)j) + 1) - 0.5;
	}
}

/* First row and row count of message c of a slab. */
static long chunk_lo(const struct ovft *o, long c)
{
	return c * o->nr / o->k;
}

/* The FFTs of rows [lo, hi) of slab p (at scale 0 nothing at all). */
static void compute(struct app *a, struct ovft *o, int p, long lo, long hi)
{
	double t0 = app_now();
	long i;

	if (!o->stages)
		return;
	for (i = p * o->nr + lo; i < p * o->nr + hi; i++) {
		memcpy(o->out + i * o->r, o->in + i * o->r,
		       (size_t)o->r * sizeof(struct cplx));
		fft_stages(o->out + i * o->r, &o->plan, -1, o->stages);
	}
	app_comp(a, t0);
}

/* Message c of slab p: to rank p, or into place when p is this rank. */
static void send_chunk(struct app *a, struct ovft *o, struct app_xchg *x,
		       int p, long c)
{
	long lo = chunk_lo(o, c), rows = chunk_lo(o, c + 1) - lo;
	struct cplx *src = o->out + (p * o->nr + lo) * o->r;
	double t0;

	if (p != a->rank) {
		app_isend(a, x, src, (int)(2 * rows * o->r), MPI_DOUBLE, p,
			  TAG + (int)c, MPI_COMM_WORLD);
		return;
	}
	/* The put to itself: communication, so scale 0 keeps it. */
	t0 = app_now();
	memcpy(o->recv + (a->rank * o->nr + lo) * o->r, src,
	       (size_t)(rows * o->r) * sizeof(struct cplx));
	a->st.start += app_now() - t0;
}

static void post_recvs(struct app *a, struct ovft *o, struct app_xchg *x)
{
	long c, lo;
	int t, q;

	for (c = 0; c < o->k; c++)
		for (t = 1; t < a->nranks; t++) {
			q = (a->rank + a->nranks - t) % a->nranks;
			lo = chunk_lo(o, c);
			app_irecv(a, x, o->recv + (q * o->nr + lo) * o->r,
				  (int)(2 * (chunk_lo(o, c + 1) - lo) * o->r),
				  MPI_DOUBLE, q, TAG + (int)c, MPI_COMM_WORLD);
		}
}

/* One exchange, between two barriers (the paper's lines 1 to 13). */
static void exchange(struct app *a, struct ovft *o, struct app_xchg *x)
{
	long c;
	int t, p;

	if (a->post == APP_EARLY)
		post_recvs(a, o, x);
	app_barrier(a);
	if (o->e) {
		for (p = 0; p < a->nranks; p++)
			compute(a, o, p, 0, o->nr);
		for (t = 1; t <= a->nranks; t++)
			send_chunk(a, o, x, (a->rank + t) % a->nranks, 0);
	} else {
		for (c = 0; c < o->k; c++)
			for (t = 1; t <= a->nranks; t++) {
				p = (a->rank + t) % a->nranks;
				compute(a, o, p, chunk_lo(o, c),
					chunk_lo(o, c + 1));
				send_chunk(a, o, x, p, c);
			}
	}
	if (a->post == APP_LATE)
		post_recvs(a, o, x);
	app_waitall(a, x);
	app_barrier(a);
}

static double energy(const struct cplx *row, long n)
{
	double s = 0;
	long j;

	for (j = 0; j < n; j++)
		s += row[j].re * row[j].re + row[j].im * row[j].im;
	return s;
}

/*
 * The received slabs against the senders' rows made again here: the
 * energy of every row, and every eighth row (all of small arrays) bit for
 * bit after the same transform. Returns the digest word of the slabs.
 */
static uint64_t check(struct app *a, struct ovft *o, struct cplx *row)
{
	long i, j, every = o->n * o->r * a->nranks <= FULL_CHECK ? 1 : 8;
	double want, got;
	const struct cplx *rx;
	uint64_t w = 0, g;
	int q;

	for (q = 0; q < a->nranks; q++)
		for (i = 0; i < o->nr; i++) {
			rx = o->recv + (q * o->nr + i) * o->r;
			make_row(o, q, a->rank * o->nr + i, row);
			want = ldexp(energy(row, o->r), o->stages);
			got = energy(rx, o->r);
			if (!(fabs(got - want) <= 1e-9 * want))
				app_fail(a, "row %ld from rank %d: energy %.15g, "
					 "expected %.15g", a->rank * o->nr + i,
					 q, got, want);
			if (i % every == 0) {
				fft_stages(row, &o->plan, -1, o->stages);
				if (memcmp(row, rx, (size_t)o->r * sizeof(*row)))
					app_fail(a, "row %ld from rank %d differs "
						 "from its transform made here",
						 a->rank * o->nr + i, q);
			}
			g = ((uint64_t)q * (uint64_t)o->n +
			     (uint64_t)(a->rank * o->nr + i)) * (uint64_t)o->r;
			for (j = 0; j < o->r; j++)
				w += app_elem(2 * (g + (uint64_t)j), rx[j].re) +
				     app_elem(2 * (g + (uint64_t)j) + 1,
					      rx[j].im);
		}
	return w;
}

int main(int argc, char **argv)
{
	struct app a;
	struct app_xchg x;
	struct ovft o;
	struct cplx *row;
	uint64_t w[4];
	size_t bytes;
	char ver[24];
	long i, it;
	int rc;

	app_init(&a, &desc, argc, argv);
	if (a.comm == APP_COLL)
		app_reject(&a, "--comm coll: the versions differ in when each "
			   "point-to-point send starts; use p2p or persist");
	o.n = a.size;
	o.r = opt_len ? opt_len : a.paper ? 512 : 4096;
	o.e = opt_e;
	if (o.n % a.nranks)
		app_reject(&a, "%d ranks: P must divide N (%ld)", a.nranks,
			   o.n);
	o.nr = o.n / a.nranks;
	o.k = opt_k ? opt_k : o.nr;
	if (o.k > o.nr)
		app_reject(&a, "X:%ld: more messages than the %ld rows of a "
			   "slab", o.k, o.nr);
	if ((double)o.nr * (double)o.r * 2 > (double)INT32_MAX)
		app_reject(&a, "--size %ld --len %ld: slabs too large", o.n,
			   o.r);
	fft_plan_make(&a, &o.plan, o.r);
	o.stages = (int)ceil(opt_scale * o.plan.bits - 1e-9);
	bytes = (size_t)(o.n * o.r) * sizeof(struct cplx);
	o.in = app_alloc_plain(&a, bytes);
	o.out = app_alloc_plain(&a, bytes);
	o.recv = app_alloc(&a, bytes);
	row = app_alloc_plain(&a, (size_t)o.r * sizeof(*row));
	for (i = 0; i < o.n; i++)
		make_row(&o, a.rank, i, o.in + i * o.r);
	/* At scale 0 nothing is computed: out keeps the rows as made. */
	memcpy(o.out, o.in, bytes);
	memset(o.recv, 0, bytes);
	app_xchg_init(&a, &x, 2 * (int)o.k * a.nranks);
	if (o.e || o.k == 1 || !opt_k)
		snprintf(ver, sizeof(ver), "%s", o.e ? "E" : opt_k ? "S" : "P");
	else
		snprintf(ver, sizeof(ver), "X:%ld", o.k);
	snprintf(a.tail, sizeof(a.tail), "version=%s len=%ld scale=%g "
		 "stages=%d", ver, o.r, opt_scale, o.stages);

	app_begin(&a);
	for (it = 0; it < a.iters; it++)
		exchange(&a, &o, &x);
	app_end(&a);

	/* One more exchange into cleared buffers, for the checks. */
	memset(o.recv, 0, bytes);
	exchange(&a, &o, &x);
	w[0] = check(&a, &o, row);
	app_sum_words(&a, w, 1);
	w[1] = (uint64_t)o.n;
	w[2] = (uint64_t)o.r;
	w[3] = (uint64_t)o.stages;
	if (a.verbose && a.rank == 0)
		fprintf(stderr, "ovft: %ld rows of %ld, %ld messages per "
			"destination, %d of %d stages\n", o.n, o.r, o.e ? 1 :
			o.k, o.stages, o.plan.bits);
	app_xchg_free(&x);
	free(o.in);
	free(o.out);
	free(row);
	app_free(&a, o.recv);
	fft_plan_free(&o.plan);
	rc = app_finish(&a, w, 4);
	return rc;
}
