// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * nbody.c - N-body steps: every rank owns a block of bodies, all positions
 * are shared each step (MPI_Allgather) and the energy is reduced to rank 0
 * every 5 steps (MPI_Reduce). A trace source for zcpredict.
 *   mpirun -np 4 nbody [steps]
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define NB 512		/* bodies in all; 3 doubles each */

int main(int argc, char **argv)
{
	int rank, size, s, steps = argc > 1 ? atoi(argv[1]) : 40, i, j, nl;
	double *pos, *mine, *vel, e = 0, ge = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	nl = NB / size;
	pos = calloc(NB * 3, sizeof(*pos));
	mine = calloc(nl * 3, sizeof(*mine));
	vel = calloc(nl * 3, sizeof(*vel));
	for (i = 0; i < nl * 3; i++)
		mine[i] = (rank * nl * 3 + i) % 17;
	for (s = 0; s < steps; s++) {
		MPI_Allgather(mine, nl * 3, MPI_DOUBLE, pos, nl * 3,
			      MPI_DOUBLE, MPI_COMM_WORLD);
		for (i = 0; i < nl; i++)
			for (j = 0; j < NB; j += 8) {
				double dx = pos[j * 3] - mine[i * 3];

				vel[i * 3] += dx / (1.0 + dx * dx);
			}
		for (i = 0; i < nl * 3; i++)
			mine[i] += 0.01 * vel[i];
		if (s % 5 == 4) {
			e = 0;
			for (i = 0; i < nl * 3; i++)
				e += vel[i] * vel[i];
			MPI_Reduce(&e, &ge, 1, MPI_DOUBLE, MPI_SUM, 0,
				   MPI_COMM_WORLD);
		}
	}
	if (!rank)
		printf("nbody: energy %g\n", ge);
	free(pos);
	free(mine);
	free(vel);
	MPI_Finalize();
	return 0;
}
