// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcmpi_coll.c - the collectives libzcrecv-mpi leaves to the real MPI,
 * counted: how many calls and how many bytes this rank received through
 * them, so that the report at MPI_Finalize says how much of a program's
 * traffic zcrecv never saw. Every wrapper passes its arguments through to
 * PMPI unchanged; nothing here changes what the MPI does.
 *
 * "Bytes received" is the payload this rank's buffers get from other
 * ranks: a broadcast's count at a non-root, a gather's other ranks' parts
 * at the root, an all-to-all's parts from every other rank; a reduction's
 * result counts once (the algorithm decides how often it really moves).
 * Calls on intercommunicators are counted, their bytes are not; the
 * neighbourhood collectives are not counted.
 * Open MPI's Fortran bindings call PMPI_* directly and are not counted.
 */
#include <mpi.h>
#include <stdint.h>

#include "zcmpi.h"

static uint64_t coll_calls, coll_bytes;

void __zcmpi_coll_stats(uint64_t *calls, uint64_t *bytes)
{
	*calls = __atomic_load_n(&coll_calls, __ATOMIC_RELAXED);
	*bytes = __atomic_load_n(&coll_bytes, __ATOMIC_RELAXED);
}

static void note(uint64_t bytes)
{
	__atomic_add_fetch(&coll_calls, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&coll_bytes, bytes, __ATOMIC_RELAXED);
}

/* Rank and size of an intracommunicator; false for an intercommunicator. */
static bool intra(MPI_Comm comm, int *rank, int *size)
{
	int inter = 0;

	if (comm == MPI_COMM_NULL ||
	    PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
		return false;
	PMPI_Comm_rank(comm, rank);
	PMPI_Comm_size(comm, size);
	return true;
}

static uint64_t bytes_of(int count, MPI_Datatype t)
{
	int s = 0;

	if (count <= 0 || t == MPI_DATATYPE_NULL ||
	    PMPI_Type_size(t, &s) != MPI_SUCCESS || s <= 0)
		return 0;
	return (uint64_t)count * (uint64_t)s;
}

/* A root's or everyone's share from all the other ranks. */
static uint64_t from_others(int count, MPI_Datatype t, MPI_Comm comm)
{
	int rank, size;

	if (!intra(comm, &rank, &size))
		return 0;
	return (uint64_t)(size - 1) * bytes_of(count, t);
}

/* Sum of counts[i] over i != this rank. */
static uint64_t from_others_v(const int *counts, MPI_Datatype t,
			      MPI_Comm comm)
{
	uint64_t sum = 0;
	int rank, size, i;

	if (!counts || !intra(comm, &rank, &size))
		return 0;
	for (i = 0; i < size; i++)
		if (i != rank)
			sum += bytes_of(counts[i], t);
	return sum;
}

static uint64_t rooted(int root, MPI_Comm comm, uint64_t at_root,
		       uint64_t elsewhere)
{
	int rank, size;

	if (!intra(comm, &rank, &size))
		return 0;
	return rank == root ? at_root : elsewhere;
}

int MPI_Barrier(MPI_Comm comm)
{
	note(0);
	return PMPI_Barrier(comm);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm)
{
	note(rooted(root, comm, 0, bytes_of(count, t)));
	return PMPI_Bcast(buf, count, t, root, comm);
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm,
	       MPI_Request *req)
{
	note(rooted(root, comm, 0, bytes_of(count, t)));
	return PMPI_Ibcast(buf, count, t, root, comm, req);
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
	       int rcount, MPI_Datatype rt, int root, MPI_Comm comm)
{
	note(rooted(root, comm, from_others(rcount, rt, comm), 0));
	return PMPI_Gather(sbuf, scount, st, rbuf, rcount, rt, root, comm);
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		const int rcounts[], const int displs[], MPI_Datatype rt,
		int root, MPI_Comm comm)
{
	note(rooted(root, comm, from_others_v(rcounts, rt, comm), 0));
	return PMPI_Gatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, root,
			    comm);
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		int rcount, MPI_Datatype rt, int root, MPI_Comm comm)
{
	note(rooted(root, comm, 0, bytes_of(rcount, rt)));
	return PMPI_Scatter(sbuf, scount, st, rbuf, rcount, rt, root, comm);
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[],
		 MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
		 int root, MPI_Comm comm)
{
	note(rooted(root, comm, 0, bytes_of(rcount, rt)));
	return PMPI_Scatterv(sbuf, scounts, displs, st, rbuf, rcount, rt, root,
			     comm);
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		  int rcount, MPI_Datatype rt, MPI_Comm comm)
{
	note(from_others(rcount, rt, comm));
	return PMPI_Allgather(sbuf, scount, st, rbuf, rcount, rt, comm);
}

int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		   int rcount, MPI_Datatype rt, MPI_Comm comm,
		   MPI_Request *req)
{
	note(from_others(rcount, rt, comm));
	return PMPI_Iallgather(sbuf, scount, st, rbuf, rcount, rt, comm, req);
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		   const int rcounts[], const int displs[], MPI_Datatype rt,
		   MPI_Comm comm)
{
	note(from_others_v(rcounts, rt, comm));
	return PMPI_Allgatherv(sbuf, scount, st, rbuf, rcounts, displs, rt,
			       comm);
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		 int rcount, MPI_Datatype rt, MPI_Comm comm)
{
	note(from_others(rcount, rt, comm));
	return PMPI_Alltoall(sbuf, scount, st, rbuf, rcount, rt, comm);
}

int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		  int rcount, MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
	note(from_others(rcount, rt, comm));
	return PMPI_Ialltoall(sbuf, scount, st, rbuf, rcount, rt, comm, req);
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
		  MPI_Datatype st, void *rbuf, const int rcounts[],
		  const int rdispls[], MPI_Datatype rt, MPI_Comm comm)
{
	note(from_others_v(rcounts, rt, comm));
	return PMPI_Alltoallv(sbuf, scounts, sdispls, st, rbuf, rcounts,
			      rdispls, rt, comm);
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
	       MPI_Op op, int root, MPI_Comm comm)
{
	note(rooted(root, comm, bytes_of(count, t), 0));
	return PMPI_Reduce(sbuf, rbuf, count, t, op, root, comm);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
		  MPI_Op op, MPI_Comm comm)
{
	note(bytes_of(count, t));
	return PMPI_Allreduce(sbuf, rbuf, count, t, op, comm);
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
		   MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
	note(bytes_of(count, t));
	return PMPI_Iallreduce(sbuf, rbuf, count, t, op, comm, req);
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[],
		       MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	int rank, size;

	note(rcounts && intra(comm, &rank, &size) ?
	     bytes_of(rcounts[rank], t) : 0);
	return PMPI_Reduce_scatter(sbuf, rbuf, rcounts, t, op, comm);
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
			     MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	note(bytes_of(rcount, t));
	return PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, t, op, comm);
}

int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
	     MPI_Op op, MPI_Comm comm)
{
	note(bytes_of(count, t));
	return PMPI_Scan(sbuf, rbuf, count, t, op, comm);
}

int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
	       MPI_Op op, MPI_Comm comm)
{
	note(bytes_of(count, t));
	return PMPI_Exscan(sbuf, rbuf, count, t, op, comm);
}

/* The nonblocking forms, counted when they start, and the rest. */

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
	note(0);
	return PMPI_Ibarrier(comm, req);
}

int MPI_Igather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		int rcount, MPI_Datatype rt, int root, MPI_Comm comm,
		MPI_Request *req)
{
	note(rooted(root, comm, from_others(rcount, rt, comm), 0));
	return PMPI_Igather(sbuf, scount, st, rbuf, rcount, rt, root, comm,
			    req);
}

int MPI_Igatherv(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		 const int rcounts[], const int displs[], MPI_Datatype rt,
		 int root, MPI_Comm comm, MPI_Request *req)
{
	note(rooted(root, comm, from_others_v(rcounts, rt, comm), 0));
	return PMPI_Igatherv(sbuf, scount, st, rbuf, rcounts, displs, rt, root,
			     comm, req);
}

int MPI_Iscatter(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		 int rcount, MPI_Datatype rt, int root, MPI_Comm comm,
		 MPI_Request *req)
{
	note(rooted(root, comm, 0, bytes_of(rcount, rt)));
	return PMPI_Iscatter(sbuf, scount, st, rbuf, rcount, rt, root, comm,
			     req);
}

int MPI_Iscatterv(const void *sbuf, const int scounts[], const int displs[],
		  MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
		  int root, MPI_Comm comm, MPI_Request *req)
{
	note(rooted(root, comm, 0, bytes_of(rcount, rt)));
	return PMPI_Iscatterv(sbuf, scounts, displs, st, rbuf, rcount, rt,
			      root, comm, req);
}

int MPI_Iallgatherv(const void *sbuf, int scount, MPI_Datatype st,
		    void *rbuf, const int rcounts[], const int displs[],
		    MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
	note(from_others_v(rcounts, rt, comm));
	return PMPI_Iallgatherv(sbuf, scount, st, rbuf, rcounts, displs, rt,
				comm, req);
}

int MPI_Ialltoallv(const void *sbuf, const int scounts[],
		   const int sdispls[], MPI_Datatype st, void *rbuf,
		   const int rcounts[], const int rdispls[], MPI_Datatype rt,
		   MPI_Comm comm, MPI_Request *req)
{
	note(from_others_v(rcounts, rt, comm));
	return PMPI_Ialltoallv(sbuf, scounts, sdispls, st, rbuf, rcounts,
			       rdispls, rt, comm, req);
}

/* Each part its own type: the bytes of every other rank's part. */
static uint64_t from_others_w(const int *counts, const MPI_Datatype *types,
			      MPI_Comm comm)
{
	uint64_t sum = 0;
	int rank, size, i;

	if (!counts || !types || !intra(comm, &rank, &size))
		return 0;
	for (i = 0; i < size; i++)
		if (i != rank)
			sum += bytes_of(counts[i], types[i]);
	return sum;
}

int MPI_Alltoallw(const void *sbuf, const int scounts[], const int sdispls[],
		  const MPI_Datatype stypes[], void *rbuf, const int rcounts[],
		  const int rdispls[], const MPI_Datatype rtypes[],
		  MPI_Comm comm)
{
	note(from_others_w(rcounts, rtypes, comm));
	return PMPI_Alltoallw(sbuf, scounts, sdispls, stypes, rbuf, rcounts,
			      rdispls, rtypes, comm);
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
		MPI_Op op, int root, MPI_Comm comm, MPI_Request *req)
{
	note(rooted(root, comm, bytes_of(count, t), 0));
	return PMPI_Ireduce(sbuf, rbuf, count, t, op, root, comm, req);
}

int MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int rcounts[],
			MPI_Datatype t, MPI_Op op, MPI_Comm comm,
			MPI_Request *req)
{
	int rank, size;

	note(rcounts && intra(comm, &rank, &size) ?
	     bytes_of(rcounts[rank], t) : 0);
	return PMPI_Ireduce_scatter(sbuf, rbuf, rcounts, t, op, comm, req);
}

int MPI_Ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
			      MPI_Datatype t, MPI_Op op, MPI_Comm comm,
			      MPI_Request *req)
{
	note(bytes_of(rcount, t));
	return PMPI_Ireduce_scatter_block(sbuf, rbuf, rcount, t, op, comm,
					  req);
}

int MPI_Iscan(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
	      MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
	note(bytes_of(count, t));
	return PMPI_Iscan(sbuf, rbuf, count, t, op, comm, req);
}

int MPI_Iexscan(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
		MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
	note(bytes_of(count, t));
	return PMPI_Iexscan(sbuf, rbuf, count, t, op, comm, req);
}
