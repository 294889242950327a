// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ovspmv.c - the SpMV-derived overlap probe (Documentation/apps.md,
 * "OVSPMV"): y = A x for a random sparse N x N matrix in row blocks, x in
 * blocks of the same rows, each rank needing every other rank's block of
 * x. The versions differ in when the blocks move: B fetches all of them
 * and then computes; G asks the owners eta blocks ahead (a small request
 * message the owner answers between rows) and computes each block as it
 * comes; S has the owners push eta blocks ahead. --scale sets the
 * share of each block's rows multiplied, down to none.
 * Checks: before the finish the receive buffers are cleared and one more,
 * untimed product runs; the blocks of x received must equal the owners'
 * bit for bit, and every rank's rows of y must equal the product made
 * again here from x as generated, in the same order, bit for bit.
 *   mpirun -np 2 ovspmv [--size N] [--nnz K] [--iters K]
 *                       [--version B|G|S] [--eta E] [--scale S]
 *                       [--post late|early]
 */
#include "apps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TAG_X 70	/* a block of x */
#define TAG_REQ 71	/* a request for one */
#define SEED_A 0x5350
#define SEED_X 0x5358
#define SERVE_ROWS 4096	/* rows between two looks for requests */

static const struct app_opt opts[] = {
	{ "nnz", "K",
	  "                   nonzeros per row at --scale 1 (default 16)" },
	{ "version", "B|G|S",
	  "                   B: fetch every block of x, then compute; G: ask\n"
	  "                   the owners eta blocks ahead, compute each block as\n"
	  "                   it comes; S: the owners push eta blocks ahead\n"
	  "                   (default B)" },
	{ "eta", "E",
	  "                   blocks asked for or pushed ahead, 1..P-1 (default\n"
	  "                   1; more than P-1 is taken as P-1)" },
	{ "scale", "S",
	  "                   0..1: the share of each block's rows multiplied\n"
	  "                   (rounded; 0: no computation at all; default 1)" },
	{ NULL, NULL, NULL }
};

enum version { V_B, V_G, V_S };

static long opt_nnz = 16, opt_eta = 1;
static enum version opt_version = V_B;
static double opt_scale = 1;

static const char *parse(int i, const char *val)
{
	char *end;
	long v;

	switch (i) {
	case 0:
	case 2:
		v = strtol(val, &end, 10);
		if (*end || end == val || v < 1 || v > 4096)
			return "expected a whole number from 1 to 4096";
		*(i ? &opt_eta : &opt_nnz) = v;
		return NULL;
	case 1:
		if (!strcmp(val, "B"))
			opt_version = V_B;
		else if (!strcmp(val, "G"))
			opt_version = V_G;
		else if (!strcmp(val, "S"))
			opt_version = V_S;
		else
			return "expected B, G or S";
		return NULL;
	default:
		return app_parse_share(val, &opt_scale);
	}
}

static const struct app_desc desc = {
	.name = "ovspmv",
	.what = "SpMV-derived overlap probe: y = A x, A a random sparse N x N\n"
		"matrix in row blocks, each rank fetching (or being sent) the\n"
		"other ranks' blocks of x before (B) or while (G, S) it computes.",
	.size_help = "N: rows of A (and of x); P divides N",
	.iters_help = "products, each between two barriers",
	.def_size = 1L << 20, .def_iters = 80,
	.paper_size = 1L << 22, .paper_iters = 10,
	.paper_help = "N = 2^22, 10 products",
	.ranks_help = "any P that divides N",
	.comm_help =
		"                   p2p only: MPI_Isend/MPI_Irecv of the blocks of x\n"
		"                   (and, for B and G, of 4-byte requests)",
	.post_help =
		"                   early: every receive of a block is posted before\n"
		"                   the product's opening barrier; late: just before\n"
		"                   its wait, after the computation before it",
	.coll_early = 0,
	.opts = opts,
	.opt = parse,
};

struct spmv {
	long n, nb, k;		/* rows, rows per block, nonzeros per row */
	long rows;		/* rows of each block multiplied (--scale) */
	int eta;
	enum version v;
	long *ptr;		/* block b of row i: ptr[b * (nb + 1) + i] */
	int *col;		/* column within its block */
	double *val;
	double *x;		/* this rank's block of x, as generated */
	double *xr;		/* every block of x, received at b nb */
	double *y;
	/* requests for this rank's block (B, G) and the answers to them */
	MPI_Request *req_in;
	int *req_buf, *idx, served;
	struct app_xchg answers;
	/* where the receive of each block is in the exchange, -1: not posted */
	int *rx;
};

/* Nonzero j of global row r: its column and value (any rank, any scale). */
static void nonzero(const struct spmv *s, long r, long j, long *c, double *v)
{
	uint64_t i = (uint64_t)r * (uint64_t)opt_nnz + (uint64_t)j;

	*c = (long)(app_mix(SEED_A ^ app_mix(i)) % (uint64_t)s->n);
	*v = app_unif(SEED_A, i) - 0.5;
}

static double x_of(long c)
{
	return app_unif(SEED_X, (uint64_t)c) - 0.5;
}

/* This rank's rows of A, one CSR per block of columns. */
static void make_matrix(struct app *a, struct spmv *s)
{
	long i, j, c, b, pos, nb = s->nb, *fill, tot = nb * s->k;
	int nr = a->nranks;
	double v;

	s->ptr = calloc((size_t)(nr * (nb + 1)), sizeof(*s->ptr));
	s->col = malloc((size_t)(tot ? tot : 1) * sizeof(*s->col));
	s->val = malloc((size_t)(tot ? tot : 1) * sizeof(*s->val));
	fill = calloc((size_t)(nr * (nb + 1)), sizeof(*fill));
	if (!s->ptr || !s->col || !s->val || !fill)
		app_die(a, "out of memory");
	for (i = 0; i < nb; i++)
		for (j = 0; j < s->k; j++) {
			nonzero(s, a->rank * nb + i, j, &c, &v);
			s->ptr[c / nb * (nb + 1) + i + 1]++;
		}
	/* Blocks one after the other in one array. */
	for (b = 0, c = 0; b < nr; b++)
		for (i = 0; i <= nb; i++) {
			c += s->ptr[b * (nb + 1) + i];
			s->ptr[b * (nb + 1) + i] = c;
		}
	for (i = 0; i < nb; i++)
		for (j = 0; j < s->k; j++) {
			nonzero(s, a->rank * nb + i, j, &c, &v);
			b = c / nb;
			pos = s->ptr[b * (nb + 1) + i] + fill[b * (nb + 1) + i]++;
			s->col[pos] = (int)(c % nb);
			s->val[pos] = v;
		}
	free(fill);
}

/* Answer the requests for this rank's block that have come. */
static void serve(struct app *a, struct spmv *s)
{
	int n, i, q;

	if (s->v == V_S || s->served == a->nranks - 1)
		return;
	MPI_Testsome(a->nranks, s->req_in, &n, s->idx, MPI_STATUSES_IGNORE);
	if (n == MPI_UNDEFINED)
		return;
	for (i = 0; i < n; i++) {
		q = s->idx[i];
		app_isend(a, &s->answers, s->x, (int)s->nb, MPI_DOUBLE, q,
			  TAG_X, MPI_COMM_WORLD);
		s->served++;
	}
}

/* y += block b of A times block b of x, looking for requests between rows. */
static void compute(struct app *a, struct spmv *s, int b, const double *xb)
{
	const long *ptr = s->ptr + b * (s->nb + 1);
	long i, i0, j;
	double t0, sum;

	for (i0 = 0; i0 < s->rows; i0 += SERVE_ROWS) {
		t0 = app_now();
		for (i = i0; i < s->rows && i < i0 + SERVE_ROWS; i++) {
			sum = s->y[i];
			for (j = ptr[i]; j < ptr[i + 1]; j++)
				sum += s->val[j] * xb[s->col[j]];
			s->y[i] = sum;
		}
		app_comp(a, t0);
		serve(a, s);
	}
}

static void post_recv(struct app *a, struct spmv *s, struct app_xchg *x,
		      int q)
{
	if (s->rx[q] >= 0)
		return;
	s->rx[q] = x->n;
	app_irecv(a, x, s->xr + q * s->nb, (int)s->nb, MPI_DOUBLE, q, TAG_X,
		  MPI_COMM_WORLD);
}

/* Ask rank q for its block (B, G) or push ours to rank q (S). */
static void initiate(struct app *a, struct spmv *s, struct app_xchg *x,
		     int q)
{
	static int one = 1;

	if (s->v == V_S)
		app_isend(a, x, s->x, (int)s->nb, MPI_DOUBLE, q, TAG_X,
			  MPI_COMM_WORLD);
	else
		app_isend(a, x, &one, 1, MPI_INT, q, TAG_REQ,
			  MPI_COMM_WORLD);
}

/* Wait for block q, answering requests meanwhile (as wait time). */
static void wait_block(struct app *a, struct spmv *s, struct app_xchg *x,
		       int q)
{
	double t0;
	int done = 0;

	if (a->post == APP_LATE)
		post_recv(a, s, x, q);
	t0 = app_now();
	while (!done) {
		MPI_Test(&x->req[s->rx[q]], &done, MPI_STATUS_IGNORE);
		if (!done)
			serve(a, s);
	}
	a->st.wait += app_now() - t0;
}

/* One product, between two barriers (the paper's lines 1 to 21). */
static void product(struct app *a, struct spmv *s, struct app_xchg *x)
{
	int nr = a->nranks, me = a->rank, t, q, count = 0, ahead;
	double t0;
	long i;

	/* Requests are answered within the product: always posted first. */
	s->served = 0;
	t0 = app_now();
	for (q = 0; q < nr; q++)
		if (q != me && s->v != V_S)
			MPI_Irecv(&s->req_buf[q], 1, MPI_INT, q, TAG_REQ,
				  MPI_COMM_WORLD, &s->req_in[q]);
	a->st.start += app_now() - t0;
	for (q = 0; q < nr; q++)
		s->rx[q] = -1;
	if (a->post == APP_EARLY)
		for (t = 1; t < nr; t++)
			post_recv(a, s, x, (me + t) % nr);
	app_barrier(a);
	t0 = app_now();
	for (i = 0; i < s->rows; i++)
		s->y[i] = 0;
	app_comp(a, t0);
	ahead = s->v == V_B ? nr - 1 : s->eta;
	/* G asks rank me+1, me+2, ...; S pushes to me-1, me-2, ... */
	for (; count < ahead; count++)
		initiate(a, s, x, s->v == V_S ? (me + nr - 1 - count) % nr :
			 (me + 1 + count) % nr);
	if (s->v == V_B)
		for (t = 1; t < nr; t++)
			wait_block(a, s, x, (me + t) % nr);
	for (t = 0; t < nr; t++) {
		q = (me + t) % nr;
		if (count < nr - 1) {
			initiate(a, s, x, s->v == V_S ?
				 (me + nr - 1 - count) % nr :
				 (me + 1 + count) % nr);
			count++;
		}
		if (t > 0 && s->v != V_B)
			wait_block(a, s, x, q);
		compute(a, s, q, q == me ? s->x : s->xr + q * s->nb);
	}
	/* Every request answered, then every send and receive complete. */
	t0 = app_now();
	while (s->v != V_S && s->served < nr - 1)
		serve(a, s);
	a->st.wait += app_now() - t0;
	app_waitall(a, &s->answers);
	app_waitall(a, x);
	app_barrier(a);
}

int main(int argc, char **argv)
{
	struct app a;
	struct app_xchg x;
	struct spmv s;
	double *ref, sum;
	uint64_t w[4];
	long i, j, it, c;
	int q, rc;

	app_init(&a, &desc, argc, argv);
	if (a.comm == APP_COLL)
		app_reject(&a, "--comm coll: the versions differ in when each "
			   "block moves; use p2p or persist");
	memset(&s, 0, sizeof(s));
	s.n = a.size;
	if (s.n % a.nranks)
		app_reject(&a, "%d ranks: P must divide N (%ld)", a.nranks,
			   s.n);
	s.nb = s.n / a.nranks;
	if ((double)s.nb * (double)opt_nnz > (double)INT32_MAX * 8)
		app_reject(&a, "--size %ld --nnz %ld: too many nonzeros", s.n,
			   opt_nnz);
	s.k = opt_nnz;
	s.rows = lround(opt_scale * (double)s.nb);
	s.v = opt_version;
	s.eta = (int)(opt_eta < a.nranks - 1 ? opt_eta : a.nranks - 1);
	if (s.eta < 1)
		s.eta = 1;
	make_matrix(&a, &s);
	s.x = app_alloc_plain(&a, (size_t)s.nb * sizeof(double));
	s.xr = app_alloc(&a, (size_t)s.n * sizeof(double));
	s.y = app_alloc_plain(&a, (size_t)s.nb * sizeof(double));
	ref = app_alloc_plain(&a, (size_t)s.nb * sizeof(double));
	s.req_in = malloc((size_t)a.nranks * sizeof(*s.req_in));
	s.req_buf = calloc((size_t)a.nranks, sizeof(*s.req_buf));
	s.rx = malloc((size_t)a.nranks * sizeof(*s.rx));
	s.idx = malloc((size_t)a.nranks * sizeof(*s.idx));
	if (!s.req_in || !s.req_buf || !s.rx || !s.idx)
		app_die(&a, "out of memory");
	for (q = 0; q < a.nranks; q++)
		s.req_in[q] = MPI_REQUEST_NULL;
	for (i = 0; i < s.nb; i++)
		s.x[i] = x_of(a.rank * s.nb + i);
	memset(s.xr, 0, (size_t)s.n * sizeof(double));
	/* The rows past --scale's share stay 0. */
	memset(s.y, 0, (size_t)s.nb * sizeof(double));
	app_xchg_init(&a, &x, 4 * a.nranks);
	app_xchg_init(&a, &s.answers, a.nranks);
	snprintf(a.tail, sizeof(a.tail), "version=%s eta=%d nnz=%ld scale=%g "
		 "rows=%ld", s.v == V_B ? "B" : s.v == V_G ? "G" : "S", s.eta,
		 s.k, opt_scale, s.rows);

	app_begin(&a);
	for (it = 0; it < a.iters; it++)
		product(&a, &s, &x);
	app_end(&a);

	/* One more product into cleared buffers, for the checks. */
	memset(s.xr, 0, (size_t)s.n * sizeof(double));
	product(&a, &s, &x);
	for (q = 0; q < a.nranks; q++)
		for (i = 0; q != a.rank && i < s.nb; i++)
			if (s.xr[q * s.nb + i] != x_of(q * s.nb + i)) {
				app_fail(&a, "element %ld of x from rank %d is "
					 "%.17g, expected %.17g", q * s.nb + i,
					 q, s.xr[q * s.nb + i],
					 x_of(q * s.nb + i));
				break;
			}
	/* The same sums in the same order, from x as generated. */
	for (i = 0; i < s.nb; i++)
		ref[i] = 0;
	for (q = 0; q < a.nranks; q++) {
		int b = (a.rank + q) % a.nranks;
		const long *ptr = s.ptr + b * (s.nb + 1);

		for (i = 0; i < s.rows; i++) {
			sum = ref[i];
			for (j = ptr[i]; j < ptr[i + 1]; j++)
				sum += s.val[j] * x_of(b * s.nb + s.col[j]);
			ref[i] = sum;
		}
	}
	w[0] = 0;
	for (i = 0, c = 0; i < s.nb; i++) {
		if (app_bits(ref[i]) != app_bits(s.y[i]) && c++ < 3)
			app_fail(&a, "y[%ld] is %.17g, expected %.17g",
				 a.rank * s.nb + i, s.y[i], ref[i]);
		w[0] += app_elem((uint64_t)(a.rank * s.nb + i), s.y[i]);
	}
	app_sum_words(&a, w, 1);
	w[1] = (uint64_t)s.n;
	w[2] = (uint64_t)(s.k * s.n + s.rows);
	w[3] = (uint64_t)a.nranks;
	if (a.verbose && a.rank == 0)
		fprintf(stderr, "ovspmv: %ld rows, %ld nonzeros per row, "
			"blocks of %ld\n", s.n, s.k, s.nb);
	app_xchg_free(&x);
	app_xchg_free(&s.answers);
	free(s.ptr);
	free(s.col);
	free(s.val);
	free(s.x);
	free(s.y);
	free(ref);
	free(s.req_in);
	free(s.req_buf);
	free(s.rx);
	free(s.idx);
	app_free(&a, s.xr);
	rc = app_finish(&a, w, 4);
	return rc;
}
