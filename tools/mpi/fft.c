// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fft.c - 2-D FFT by transposition: each rank transforms its rows, the
 * matrix is transposed with MPI_Alltoall, the rows are transformed again
 * and transposed back; a checksum is reduced (MPI_Allreduce) per round.
 * A trace source for zcpredict.
 *   mpirun -np 4 fft [rounds]
 */
#include <complex.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 64	/* N x N complex matrix */

static void fft1(double complex *x, int n)
{
	int i, j, len;

	for (i = 1, j = 0; i < n; i++) {
		int bit = n >> 1;

		for (; j & bit; bit >>= 1)
			j ^= bit;
		j ^= bit;
		if (i < j) {
			double complex t = x[i];

			x[i] = x[j];
			x[j] = t;
		}
	}
	for (len = 2; len <= n; len <<= 1) {
		double complex w = cexp(-2 * M_PI * I / len);

		for (i = 0; i < n; i += len) {
			double complex wk = 1;

			for (j = 0; j < len / 2; j++) {
				double complex u = x[i + j];
				double complex v = x[i + j + len / 2] * wk;

				x[i + j] = u + v;
				x[i + j + len / 2] = u - v;
				wk *= w;
			}
		}
	}
}

/* Rows [rank * nl, +nl) of an N x N matrix; transposed via a and b. */
static void transpose(double complex *a, double complex *b, int nl, int size)
{
	int p, i, j;

	for (p = 0; p < size; p++)
		for (i = 0; i < nl; i++)
			for (j = 0; j < nl; j++)
				b[p * nl * nl + j * nl + i] =
					a[i * N + p * nl + j];
	MPI_Alltoall(b, nl * nl * 2, MPI_DOUBLE, a, nl * nl * 2, MPI_DOUBLE,
		     MPI_COMM_WORLD);
	for (p = 0; p < size; p++)
		for (i = 0; i < nl; i++)
			for (j = 0; j < nl; j++)
				b[i * N + p * nl + j] =
					a[p * nl * nl + i * nl + j];
}

int main(int argc, char **argv)
{
	int rank, size, r, rounds = argc > 1 ? atoi(argv[1]) : 15, i, nl;
	double complex *a, *b;
	double sum, gsum = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	nl = N / size;
	a = calloc(nl * N, sizeof(*a));
	b = calloc(nl * N, sizeof(*b));
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < nl * N; i++)
			a[i] = (rank * nl * N + i + r) % 11;
		for (i = 0; i < nl; i++)
			fft1(a + i * N, N);
		transpose(a, b, nl, size);
		for (i = 0; i < nl; i++)
			fft1(b + i * N, N);
		transpose(b, a, nl, size);
		sum = 0;
		for (i = 0; i < nl * N; i++)
			sum += cabs(a[i]);
		MPI_Allreduce(&sum, &gsum, 1, MPI_DOUBLE, MPI_SUM,
			      MPI_COMM_WORLD);
	}
	if (!rank)
		printf("fft: checksum %g\n", gsum);
	free(a);
	free(b);
	MPI_Finalize();
	return 0;
}
