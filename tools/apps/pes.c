// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * pes.c - an iterative 2-D Poisson (Laplace) solver: Jacobi sweeps over
 * an N x N grid whose rows are split evenly over the ranks. After each
 * sweep every rank sends its first row to the rank above and its last
 * row to the rank below, and receives their edge rows into two ghost
 * rows it reads in the next sweep. Boundary: the bilinear function
 * f(x, y) = (1 - x)(1 - y) + xy on the grid's edges, so the corners
 * (0,0) and (N-1,N-1) are 1 and (0,N-1), (N-1,0) are 0, the edges are
 * linear between them, and the exact solution is f itself.
 * Checks: the largest change per sweep never grows, the distance to the
 * exact solution shrank, and on small grids rank 0 repeats the sweeps
 * serially and must get the same grid bit for bit.
 *   mpirun -np 2 pes [--size N] [--iters K] [--comm p2p|coll]
 *                    [--post late|early] [--alloc mpi|malloc] [--paper]
 */
#include "apps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TAG_UP 11	/* a rank's first row, to the rank above */
#define TAG_DOWN 12	/* a rank's last row, to the rank below */
#define REF_LIMIT (1L << 27)	/* serial reference up to N*N*K points */

static const struct app_desc desc = {
	.name = "pes",
	.what = "Jacobi sweeps of the 2-D Laplace equation on an N x N grid,\n"
		"rows split evenly over the ranks, ghost rows exchanged with\n"
		"the neighbours after every sweep.",
	.size_help = "grid points per side (N x N grid; N >= 2 P)",
	.iters_help = "Jacobi sweeps",
	.def_size = 4096, .def_iters = 130,
	.paper_size = 5120, .paper_iters = 2000,
	.paper_help = "5120 x 5120, 2000 sweeps",
	.ranks_help = "any P >= 1 with N >= 2 P (rows N/P or N/P + 1 each)",
	.comm_help =
		"                   both: MPI_Isend/MPI_Irecv of the edge rows\n"
		"                   (the exchange is point to point either way)",
	.post_help =
		"                   the ghost-row receives are posted before the\n"
		"                   sweep (two ghost rows per side alternate then)",
	.coll_early = 1,
};

/* The exact solution, also the boundary values. */
static double exact(long i, long j, long n)
{
	double x = (double)i / (double)(n - 1), y = (double)j / (double)(n - 1);

	return (1 - x) * (1 - y) + x * y;
}

/* Initial value: the boundary, zero inside. */
static double initial(long i, long j, long n)
{
	return i == 0 || j == 0 || i == n - 1 || j == n - 1 ?
	       exact(i, j, n) : 0.0;
}

/*
 * One row of a sweep: out[j] from the row above, the row and the row
 * below; returns the largest change. Boundary columns are copied.
 */
static double sweep_row(double *out, const double *up, const double *c,
			const double *dn, long n)
{
	double d, res = 0;
	long j;

	out[0] = c[0];
	out[n - 1] = c[n - 1];
	for (j = 1; j < n - 1; j++) {
		out[j] = 0.25 * (up[j] + dn[j] + c[j - 1] + c[j + 1]);
		d = fabs(out[j] - c[j]);
		res = d > res ? d : res;
	}
	return res;
}

/* Digest word of rows [lo, lo + rows) held in g. */
static uint64_t grid_word(const double *g, long lo, long rows, long n)
{
	uint64_t w = 0;
	long i, j;

	for (i = 0; i < rows; i++)
		for (j = 0; j < n; j++)
			w += app_elem((uint64_t)(lo + i) * (uint64_t)n +
				      (uint64_t)j, g[i * n + j]);
	return w;
}

/* Rank 0: the same sweeps on the whole grid; its digest word. */
static uint64_t serial_reference(struct app *a, long n, long k)
{
	double *u = app_alloc_plain(a, (size_t)(n * n) * sizeof(double));
	double *v = app_alloc_plain(a, (size_t)(n * n) * sizeof(double));
	double *t;
	uint64_t w;
	long i, j, it;

	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			u[i * n + j] = v[i * n + j] = initial(i, j, n);
	for (it = 0; it < k; it++) {
		for (i = 1; i < n - 1; i++)
			sweep_row(v + i * n, u + (i - 1) * n, u + i * n,
				  u + (i + 1) * n, n);
		t = u;
		u = v;
		v = t;
	}
	w = grid_word(u, 0, n, n);
	free(u);
	free(v);
	return w;
}

int main(int argc, char **argv)
{
	struct app a;
	struct app_xchg x;
	long n, k, lo, hi, rows, i, j, it;
	double *u, *v, *t, *ghost, *gup[2], *gdn[2], *res, err0 = 0, err = 0;
	double e, r;
	size_t pitch;
	int up, dn, nb, cur, nxt, rc;
	uint64_t w[3];

	app_init(&a, &desc, argc, argv);
	n = a.size;
	k = a.iters;
	if (n < 2L * a.nranks || n < 3)
		app_reject(&a, "--size %ld: needs N >= 3 and N >= 2 * ranks "
			   "(%d ranks)", n, a.nranks);
	lo = n * a.rank / a.nranks;
	hi = n * (a.rank + 1) / a.nranks;
	rows = hi - lo;
	up = a.rank > 0 ? a.rank - 1 : MPI_PROC_NULL;
	dn = a.rank < a.nranks - 1 ? a.rank + 1 : MPI_PROC_NULL;

	/*
	 * The grid's own rows, twice (the sweep reads one and writes the
	 * other), and the ghost rows, each on its own pages so that a
	 * received row lands page-aligned at the same address every time:
	 * one per side, two per side with early posting (the receive for
	 * the next sweep is outstanding while this sweep reads the other).
	 */
	u = app_alloc_plain(&a, (size_t)(rows * n) * sizeof(double));
	v = app_alloc_plain(&a, (size_t)(rows * n) * sizeof(double));
	nb = a.post == APP_EARLY ? 2 : 1;
	pitch = app_page_round((size_t)n * sizeof(double)) / sizeof(double);
	ghost = app_alloc(&a, 2 * (size_t)nb * pitch * sizeof(double));
	for (i = 0; i < nb; i++) {
		gup[i] = ghost + (size_t)(2 * i) * pitch;
		gdn[i] = ghost + (size_t)(2 * i + 1) * pitch;
	}
	if (nb == 1) {
		gup[1] = gup[0];
		gdn[1] = gdn[0];
	}
	res = calloc((size_t)k, sizeof(*res));
	if (!res)
		app_die(&a, "out of memory");
	for (i = 0; i < rows; i++)
		for (j = 0; j < n; j++) {
			u[i * n + j] = v[i * n + j] = initial(lo + i, j, n);
			e = fabs(u[i * n + j] - exact(lo + i, j, n));
			err0 = e > err0 ? e : err0;
		}
	/* The first ghost rows (setup, not timed). */
	MPI_Sendrecv(u, (int)n, MPI_DOUBLE, up, TAG_UP, gdn[0], (int)n,
		     MPI_DOUBLE, dn, TAG_UP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Sendrecv(u + (rows - 1) * n, (int)n, MPI_DOUBLE, dn, TAG_DOWN,
		     gup[0], (int)n, MPI_DOUBLE, up, TAG_DOWN, MPI_COMM_WORLD,
		     MPI_STATUS_IGNORE);
	app_xchg_init(&a, &x, 4);

	app_begin(&a);
	for (it = 0; it < k; it++) {
		double t0;

		cur = (int)(it & 1);
		nxt = cur ^ 1;
		if (a.post == APP_EARLY) {
			app_irecv(&a, &x, gup[nxt], (int)n, MPI_DOUBLE, up,
				  TAG_DOWN, MPI_COMM_WORLD);
			app_irecv(&a, &x, gdn[nxt], (int)n, MPI_DOUBLE, dn,
				  TAG_UP, MPI_COMM_WORLD);
		}
		t0 = app_now();
		r = 0;
		for (i = 0; i < rows; i++) {
			long gi = lo + i;
			const double *pu, *pd;

			if (gi == 0 || gi == n - 1)
				continue;	/* fixed boundary row */
			pu = i > 0 ? u + (i - 1) * n : gup[cur];
			pd = i < rows - 1 ? u + (i + 1) * n : gdn[cur];
			e = sweep_row(v + i * n, pu, u + i * n, pd, n);
			r = e > r ? e : r;
		}
		res[it] = r;
		t = u;
		u = v;
		v = t;
		app_comp(&a, t0);
		if (a.post == APP_LATE) {
			app_irecv(&a, &x, gup[nxt], (int)n, MPI_DOUBLE, up,
				  TAG_DOWN, MPI_COMM_WORLD);
			app_irecv(&a, &x, gdn[nxt], (int)n, MPI_DOUBLE, dn,
				  TAG_UP, MPI_COMM_WORLD);
		}
		/* Edge rows straight from the grid: nothing packed. */
		if (up != MPI_PROC_NULL)
			app_isend(&a, &x, u, (int)n, MPI_DOUBLE, up, TAG_UP,
				  MPI_COMM_WORLD);
		if (dn != MPI_PROC_NULL)
			app_isend(&a, &x, u + (rows - 1) * n, (int)n,
				  MPI_DOUBLE, dn, TAG_DOWN, MPI_COMM_WORLD);
		app_waitall(&a, &x);
	}
	app_end(&a);

	/* Checks, in maxima (exact whatever the order or the ranks). */
	for (i = 0; i < rows; i++)
		for (j = 0; j < n; j++) {
			e = fabs(u[i * n + j] - exact(lo + i, j, n));
			err = e > err ? e : err;
		}
	MPI_Allreduce(MPI_IN_PLACE, res, (int)k, MPI_DOUBLE, MPI_MAX,
		      MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_DOUBLE, MPI_MAX,
		      MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &err0, 1, MPI_DOUBLE, MPI_MAX,
		      MPI_COMM_WORLD);
	/*
	 * The change of a Jacobi sweep is the previous change times a
	 * matrix of non-negative entries whose rows sum to at most 1: its
	 * largest entry never grows (up to rounding).
	 */
	for (it = 1; it < k; it++)
		if (res[it] > res[it - 1] * (1 + 1e-9) + 1e-15) {
			if (a.rank == 0)
				app_fail(&a, "sweep %ld changed the grid by "
					 "%.17g, more than sweep %ld (%.17g)",
					 it + 1, res[it], it, res[it - 1]);
			break;
		}
	if (a.rank == 0 && !(err < err0))
		app_fail(&a, "the distance to the exact solution did not "
			 "shrink: %.17g, at the start %.17g", err, err0);
	w[0] = grid_word(u, lo, rows, n);
	w[1] = a.rank == 0 ? app_bits(err) : 0;
	w[2] = a.rank == 0 ? app_bits(res[k - 1]) : 0;
	app_sum_words(&a, w, 3);
	if (a.rank == 0 && n * n * k <= REF_LIMIT &&
	    serial_reference(&a, n, k) != w[0])
		app_fail(&a, "the grid differs from the serial sweeps'");
	if (a.verbose && a.rank == 0)
		fprintf(stderr, "pes: largest change %.6g in the first sweep, "
			"%.6g in the last; distance to the exact solution "
			"%.6g (%.6g at the start)\n", res[0], res[k - 1], err,
			err0);
	app_xchg_free(&x);
	app_free(&a, ghost);
	free(u);
	free(v);
	free(res);
	rc = app_finish(&a, w, 3);
	return rc;
}
