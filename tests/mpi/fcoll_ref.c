// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fcoll_ref.c - the reference half of tests/mpi/fcoll.F90: the MPI's own
 * result of each collective the Fortran program checks, the same call
 * made through PMPI_* from C, which libzcrecv-mpi does not wrap (the
 * Fortran PMPI bindings would not do: MPICH's call the C MPI_* functions,
 * so through the layer). Fortran handles converted with MPI_*_f2c.
 * ip: 1 when the send buffer is MPI_IN_PLACE, 2 the receive buffer
 * (MPI_Scatter at the root), else 0; the Fortran side passes the flag,
 * never its own MPI_IN_PLACE, so nothing here translates a sentinel.
 */
#include <mpi.h>
#include <stdlib.h>
#include <time.h>

#define C(x)	PMPI_Comm_f2c(*(x))
#define T(x)	PMPI_Type_f2c(*(x))
#define O(x)	PMPI_Op_f2c(*(x))
#define S(ip, b)	(*(ip) == 1 ? MPI_IN_PLACE : (const void *)(b))
#define R(ip, b)	(*(ip) == 2 ? MPI_IN_PLACE : (void *)(b))

/* The prototypes gfortran's callers need none of: -Wmissing-prototypes. */
void ref_alltoall_(int *ip, void *s, int *sc, int *st, void *r, int *rc,
		   int *rt, int *comm, int *ierr);
void ref_alltoallv_(int *ip, void *s, int *sc, int *sd, int *st, void *r,
		    int *rc, int *rd, int *rt, int *comm, int *ierr);
void ref_alltoallw_(int *ip, void *s, int *sc, int *sd, int *st, void *r,
		    int *rc, int *rd, int *rt, int *comm, int *ierr);
void ref_allgather_(int *ip, void *s, int *sc, int *st, void *r, int *rc,
		    int *rt, int *comm, int *ierr);
void ref_allgatherv_(int *ip, void *s, int *sc, int *st, void *r, int *rc,
		     int *rd, int *rt, int *comm, int *ierr);
void ref_bcast_(void *b, int *n, int *t, int *root, int *comm, int *ierr);
void ref_gather_(int *ip, void *s, int *sc, int *st, void *r, int *rc,
		 int *rt, int *root, int *comm, int *ierr);
void ref_gatherv_(int *ip, void *s, int *sc, int *st, void *r, int *rc,
		  int *rd, int *rt, int *root, int *comm, int *ierr);
void ref_scatter_(int *ip, void *s, int *sc, int *st, void *r, int *rc,
		  int *rt, int *root, int *comm, int *ierr);
void ref_scatterv_(int *ip, void *s, int *sc, int *sd, int *st, void *r,
		   int *rc, int *rt, int *root, int *comm, int *ierr);
void ref_reduce_(void *s, void *r, int *n, int *t, int *op, int *root,
		 int *comm, int *ierr);
void ref_allreduce_(void *s, void *r, int *n, int *t, int *op, int *comm,
		    int *ierr);
void ref_reduce_scatter_(void *s, void *r, int *rc, int *t, int *op,
			 int *comm, int *ierr);
void ref_reduce_scatter_block_(void *s, void *r, int *n, int *t, int *op,
			       int *comm, int *ierr);
void ref_scan_(void *s, void *r, int *n, int *t, int *op, int *comm,
	       int *ierr);
void ref_exscan_(void *s, void *r, int *n, int *t, int *op, int *comm,
		 int *ierr);
void ref_barrier_(int *comm, int *ierr);
void ref_clock_(double *t);

void ref_alltoall_(int *ip, void *s, int *sc, int *st, void *r, int *rc,
		   int *rt, int *comm, int *ierr)
{
	*ierr = PMPI_Alltoall(S(ip, s), *sc, T(st), r, *rc, T(rt), C(comm));
}

void ref_alltoallv_(int *ip, void *s, int *sc, int *sd, int *st, void *r,
		    int *rc, int *rd, int *rt, int *comm, int *ierr)
{
	*ierr = PMPI_Alltoallv(S(ip, s), sc, sd, T(st), r, rc, rd, T(rt),
			       C(comm));
}

void ref_alltoallw_(int *ip, void *s, int *sc, int *sd, int *st, void *r,
		    int *rc, int *rd, int *rt, int *comm, int *ierr)
{
	MPI_Comm c = C(comm);
	MPI_Datatype *cst, *crt;
	int n, i;

	PMPI_Comm_size(c, &n);
	cst = malloc((size_t)n * sizeof(*cst));
	crt = malloc((size_t)n * sizeof(*crt));
	if (!cst || !crt)
		PMPI_Abort(MPI_COMM_WORLD, 3);
	for (i = 0; i < n; i++) {
		cst[i] = *ip == 1 ? MPI_DATATYPE_NULL : PMPI_Type_f2c(st[i]);
		crt[i] = PMPI_Type_f2c(rt[i]);
	}
	*ierr = PMPI_Alltoallw(S(ip, s), sc, sd, cst, r, rc, rd, crt, c);
	free(cst);
	free(crt);
}

void ref_allgather_(int *ip, void *s, int *sc, int *st, void *r, int *rc,
		    int *rt, int *comm, int *ierr)
{
	*ierr = PMPI_Allgather(S(ip, s), *sc, T(st), r, *rc, T(rt), C(comm));
}

void ref_allgatherv_(int *ip, void *s, int *sc, int *st, void *r, int *rc,
		     int *rd, int *rt, int *comm, int *ierr)
{
	*ierr = PMPI_Allgatherv(S(ip, s), *sc, T(st), r, rc, rd, T(rt),
				C(comm));
}

void ref_bcast_(void *b, int *n, int *t, int *root, int *comm, int *ierr)
{
	*ierr = PMPI_Bcast(b, *n, T(t), *root, C(comm));
}

void ref_gather_(int *ip, void *s, int *sc, int *st, void *r, int *rc,
		 int *rt, int *root, int *comm, int *ierr)
{
	*ierr = PMPI_Gather(S(ip, s), *sc, T(st), r, *rc, T(rt), *root,
			    C(comm));
}

void ref_gatherv_(int *ip, void *s, int *sc, int *st, void *r, int *rc,
		  int *rd, int *rt, int *root, int *comm, int *ierr)
{
	*ierr = PMPI_Gatherv(S(ip, s), *sc, T(st), r, rc, rd, T(rt), *root,
			     C(comm));
}

void ref_scatter_(int *ip, void *s, int *sc, int *st, void *r, int *rc,
		  int *rt, int *root, int *comm, int *ierr)
{
	*ierr = PMPI_Scatter(s, *sc, T(st), R(ip, r), *rc, T(rt), *root,
			     C(comm));
}

void ref_scatterv_(int *ip, void *s, int *sc, int *sd, int *st, void *r,
		   int *rc, int *rt, int *root, int *comm, int *ierr)
{
	*ierr = PMPI_Scatterv(s, sc, sd, T(st), R(ip, r), *rc, T(rt), *root,
			      C(comm));
}

void ref_reduce_(void *s, void *r, int *n, int *t, int *op, int *root,
		 int *comm, int *ierr)
{
	*ierr = PMPI_Reduce(s, r, *n, T(t), O(op), *root, C(comm));
}

void ref_allreduce_(void *s, void *r, int *n, int *t, int *op, int *comm,
		    int *ierr)
{
	*ierr = PMPI_Allreduce(s, r, *n, T(t), O(op), C(comm));
}

void ref_reduce_scatter_(void *s, void *r, int *rc, int *t, int *op,
			 int *comm, int *ierr)
{
	*ierr = PMPI_Reduce_scatter(s, r, rc, T(t), O(op), C(comm));
}

void ref_reduce_scatter_block_(void *s, void *r, int *n, int *t, int *op,
			       int *comm, int *ierr)
{
	*ierr = PMPI_Reduce_scatter_block(s, r, *n, T(t), O(op), C(comm));
}

void ref_scan_(void *s, void *r, int *n, int *t, int *op, int *comm,
	       int *ierr)
{
	*ierr = PMPI_Scan(s, r, *n, T(t), O(op), C(comm));
}

void ref_exscan_(void *s, void *r, int *n, int *t, int *op, int *comm,
		 int *ierr)
{
	*ierr = PMPI_Exscan(s, r, *n, T(t), O(op), C(comm));
}

void ref_barrier_(int *comm, int *ierr)
{
	*ierr = PMPI_Barrier(C(comm));
}

/* The host's monotonic clock in seconds: the same for every rank. */
void ref_clock_(double *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	*t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
