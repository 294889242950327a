// SPDX-License-Identifier: LGPL-2.1-or-later
/* mixed_c.c - the C half of mixed.f90: receive in C, send from C. */
#include <mpi.h>
#include <stdio.h>

void cside_(void);

void cside_(void)
{
	int buf[100], i, n;
	MPI_Status st;

	MPI_Recv(buf, 100, MPI_INT, 0, 11, MPI_COMM_WORLD, &st);
	MPI_Get_count(&st, MPI_INT, &n);
	if (n != 100 || buf[99] != 100 || st.MPI_SOURCE != 0) {
		fprintf(stderr, "mixed: C side got %d ints, last %d\n", n,
			buf[99]);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	for (i = 0; i < 50; i++)
		buf[i] = 2 * (i + 1);
	MPI_Send(buf, 50, MPI_INT, 0, 12, MPI_COMM_WORLD);
}
