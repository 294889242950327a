// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * matmul.c - master/worker matrix multiply: the master scatters row blocks
 * of A (MPI_Scatter), broadcasts B (MPI_Bcast) and gathers the blocks of C
 * (MPI_Gather); then it hands out extra row blocks one by one
 * (MPI_Send/MPI_Recv from any worker). A trace source for zcpredict.
 *   mpirun -np 4 matmul [rounds]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 64

int main(int argc, char **argv)
{
	int rank, size, r, rounds = argc > 1 ? atoi(argv[1]) : 20, i, j, l;
	double *a, *b, *c, *la, *lc, sum = 0;
	int rows;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	rows = N / size;
	a = calloc(N * N, sizeof(*a));
	b = calloc(N * N, sizeof(*b));
	c = calloc(N * N, sizeof(*c));
	la = calloc(rows * N, sizeof(*la));
	lc = calloc(rows * N, sizeof(*lc));
	for (r = 0; r < rounds; r++) {
		if (!rank)
			for (i = 0; i < N * N; i++) {
				a[i] = i % 7 + r;
				b[i] = i % 5;
			}
		MPI_Scatter(a, rows * N, MPI_DOUBLE, la, rows * N, MPI_DOUBLE,
			    0, MPI_COMM_WORLD);
		MPI_Bcast(b, N * N, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		for (i = 0; i < rows; i++)
			for (j = 0; j < N; j++) {
				double s = 0;

				for (l = 0; l < N; l++)
					s += la[i * N + l] * b[l * N + j];
				lc[i * N + j] = s;
			}
		MPI_Gather(lc, rows * N, MPI_DOUBLE, c, rows * N, MPI_DOUBLE,
			   0, MPI_COMM_WORLD);
		/* A row of results from each worker, in arrival order. */
		if (!rank) {
			for (i = 1; i < size; i++) {
				MPI_Status st;

				MPI_Recv(c, N, MPI_DOUBLE, MPI_ANY_SOURCE, 7,
					 MPI_COMM_WORLD, &st);
				sum += c[1];
			}
		} else {
			MPI_Send(lc, N, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
		}
	}
	/* Summed: which row lands last in c depends on arrival order. */
	if (!rank)
		printf("matmul: c[1] summed over the rows received = %g\n",
		       sum);
	free(a);
	free(b);
	free(c);
	free(la);
	free(lc);
	MPI_Finalize();
	return 0;
}
