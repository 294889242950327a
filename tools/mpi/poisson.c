// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * poisson.c - 2-D Poisson (Jacobi) solver, rows split across ranks; each
 * iteration exchanges ghost rows with the neighbours (MPI_Irecv, MPI_Send)
 * and reduces the residual (MPI_Allreduce). A trace source for zcpredict.
 *   mpirun -np 4 poisson [iterations]
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define NX 1024		/* doubles per row: 8 KiB ghost rows */
#define ROWS 16

int main(int argc, char **argv)
{
	int rank, size, it, iters = argc > 1 ? atoi(argv[1]) : 60, i, j;
	double *u, *v, res, gres = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	u = calloc((ROWS + 2) * NX, sizeof(*u));
	v = calloc((ROWS + 2) * NX, sizeof(*v));
	for (i = 0; i < NX; i++)
		u[NX + i] = rank == 0 ? 1.0 : 0.0;
	for (it = 0; it < iters; it++) {
		MPI_Request rq[2];
		int up = rank > 0 ? rank - 1 : MPI_PROC_NULL;
		int down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
		double *t;

		MPI_Irecv(u, NX, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, &rq[0]);
		MPI_Irecv(u + (ROWS + 1) * NX, NX, MPI_DOUBLE, down, 2,
			  MPI_COMM_WORLD, &rq[1]);
		MPI_Send(u + NX, NX, MPI_DOUBLE, up, 2, MPI_COMM_WORLD);
		MPI_Send(u + ROWS * NX, NX, MPI_DOUBLE, down, 1,
			 MPI_COMM_WORLD);
		MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
		res = 0;
		for (i = 1; i <= ROWS; i++)
			for (j = 1; j < NX - 1; j++) {
				v[i * NX + j] = 0.25 * (u[(i - 1) * NX + j] +
					u[(i + 1) * NX + j] + u[i * NX + j - 1] +
					u[i * NX + j + 1]);
				res += fabs(v[i * NX + j] - u[i * NX + j]);
			}
		t = u;
		u = v;
		v = t;
		MPI_Allreduce(&res, &gres, 1, MPI_DOUBLE, MPI_SUM,
			      MPI_COMM_WORLD);
	}
	if (!rank)
		printf("poisson: residual %g\n", gres);
	free(u);
	free(v);
	MPI_Finalize();
	return 0;
}
