// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * cg.c - conjugate gradient on a 1-D Laplacian split across ranks: each
 * iteration exchanges halo values with the neighbours (MPI_Sendrecv) for
 * the sparse matrix-vector product and reduces two dot products
 * (MPI_Allreduce); every 10 iterations the residual norm goes to rank 0
 * (MPI_Reduce). A trace source for zcpredict.
 *   mpirun -np 4 cg [iterations]
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define NL 2048		/* unknowns per rank */

static double dot(const double *x, const double *y)
{
	double s = 0, g = 0;
	int i;

	for (i = 0; i < NL; i++)
		s += x[i] * y[i];
	MPI_Allreduce(&s, &g, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	return g;
}

/* q = A p, p with one ghost cell each side (p[-1], p[NL]). */
static void spmv(double *p, double *q, int rank, int size)
{
	int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
	int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
	int i;

	p[-1] = p[NL] = 0;
	MPI_Sendrecv(&p[NL - 1], 1, MPI_DOUBLE, right, 3, &p[-1], 1,
		     MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Sendrecv(&p[0], 1, MPI_DOUBLE, left, 4, &p[NL], 1, MPI_DOUBLE,
		     right, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	for (i = 0; i < NL; i++)
		q[i] = 2 * p[i] - p[i - 1] - p[i + 1];
}

int main(int argc, char **argv)
{
	int rank, size, it, iters = argc > 1 ? atoi(argv[1]) : 50, i;
	double *x, *r, *pp, *p, *q, rr, alpha, beta, rr2, nrm, gn = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	x = calloc(NL, sizeof(*x));
	r = calloc(NL, sizeof(*r));
	pp = calloc(NL + 2, sizeof(*pp));
	q = calloc(NL, sizeof(*q));
	p = pp + 1;
	for (i = 0; i < NL; i++)
		r[i] = p[i] = 1.0;
	rr = dot(r, r);
	for (it = 0; it < iters; it++) {
		spmv(p, q, rank, size);
		alpha = rr / dot(p, q);
		for (i = 0; i < NL; i++) {
			x[i] += alpha * p[i];
			r[i] -= alpha * q[i];
		}
		rr2 = dot(r, r);
		beta = rr2 / rr;
		rr = rr2;
		for (i = 0; i < NL; i++)
			p[i] = r[i] + beta * p[i];
		if (it % 10 == 9) {
			nrm = sqrt(rr);
			MPI_Reduce(&nrm, &gn, 1, MPI_DOUBLE, MPI_MAX, 0,
				   MPI_COMM_WORLD);
		}
	}
	if (!rank)
		printf("cg: residual %g\n", gn);
	free(x);
	free(r);
	free(pp);
	free(q);
	MPI_Finalize();
	return 0;
}
