// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zctrace.c - MPI receive-call tracer, an LD_PRELOAD library over PMPI.
 *
 *   ZCRECV_TRACE_DIR=dir mpirun -x LD_PRELOAD=libzctrace.so -np 4 ./app
 *
 * Writes dir/rank-NNNN.trace (default dir: the current directory) in the
 * format of Documentation/design.md ("Trace format"): one line per receive call of
 * MPI_Recv, MPI_Irecv, MPI_Sendrecv(_replace), and one per sending rank of
 * the collectives (bcast, scatter(v), gather(v), allgather(v), alltoall(v);
 * reduce and allreduce as one receive from -2). The call site is the return
 * address of the wrapper. Receives from MPI_PROC_NULL move no data and are
 * not written.
 *
 * Fortran: Open MPI's Fortran bindings call PMPI_* directly, so the C
 * wrappers never see them; the mpi_*_ entry points are wrapped too. MPICH's
 * Fortran bindings call the C MPI_* symbols, so while a Fortran wrapper
 * runs the C wrappers stay silent (a thread-local flag): no double counts.
 * Build once per MPI (mpicc for Open MPI, mpicc.mpich for MPICH).
 */
#include <dlfcn.h>
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static unsigned long long seq;
static __thread int in_fortran;

static void trace_close(void)
{
	pthread_mutex_lock(&lock);
	if (out)
		fclose(out);
	out = NULL;
	pthread_mutex_unlock(&lock);
}

static int trace_open(void)
{
	static int bad_dir;	/* said once; no trace then */
	struct zcr_env_val dir;
	char path[PATH_MAX];
	int rank = 0, size = 1, inited = 0;

	if (bad_dir)
		return -1;
	if (__zcr_env_get(ZCR_ENV_TRACE_DIR, false, &dir)) {
		bad_dir = 1;
		return -1;
	}
	PMPI_Initialized(&inited);
	if (!inited)
		return -1;
	PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &size);
	snprintf(path, sizeof(path), "%s/rank-%04d.trace",
		 dir.s ? dir.s : ".", rank);
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return -1;
	}
	setvbuf(out, NULL, _IOFBF, 1 << 16);
	fprintf(out, "# zcrecv-trace v1\n# rank %d of %d\n"
		"# seq op buf size src tag comm site\n", rank, size);
	atexit(trace_close);
	return 0;
}

static uint64_t handle(const void *h, size_t len)
{
	uint64_t v = 0;

	memcpy(&v, h, len < sizeof(v) ? len : sizeof(v));
	return v;
}

/* Write one record; src and tag already in trace terms (-1 any, -2 reduce). */
static void emit_raw(const char *op, const void *buf, uint64_t size, int src,
		     int tag, MPI_Comm comm, const void *site)
{
	pthread_mutex_lock(&lock);
	if (out || !trace_open())
		fprintf(out, "%llu %s %#llx %llu %d %d %#llx %#llx\n", seq++,
			op, (unsigned long long)(uintptr_t)buf,
			(unsigned long long)size, src, tag,
			(unsigned long long)handle(&comm, sizeof(comm)),
			(unsigned long long)(uintptr_t)site);
	pthread_mutex_unlock(&lock);
}

/*
 * A receive with the caller's source and tag: MPI_PROC_NULL moves nothing,
 * and the wildcards differ between MPIs (MPICH's MPI_ANY_SOURCE is -2).
 */
static void emit(const char *op, const void *buf, uint64_t size, int src,
		 int tag, MPI_Comm comm, const void *site)
{
	if (src == MPI_PROC_NULL)
		return;
	if (src == MPI_ANY_SOURCE)
		src = -1;
	if (tag == MPI_ANY_TAG)
		tag = -1;
	emit_raw(op, buf, size, src, tag, comm, site);
}

static uint64_t tsize(MPI_Datatype t, int count)
{
	int s = 0;

	PMPI_Type_size(t, &s);
	return (uint64_t)s * (uint64_t)(count < 0 ? 0 : count);
}

static MPI_Aint textent(MPI_Datatype t)
{
	MPI_Aint lb, ext = 0;

	PMPI_Type_get_extent(t, &lb, &ext);
	return ext;
}

static int comm_rank(MPI_Comm c)
{
	int r = 0;

	PMPI_Comm_rank(c, &r);
	return r;
}

static int comm_size(MPI_Comm c)
{
	int n = 1, inter = 0;

	PMPI_Comm_test_inter(c, &inter);
	if (inter)
		PMPI_Comm_remote_size(c, &n);
	else
		PMPI_Comm_size(c, &n);
	return n;
}

/*
 * One receive per sending rank: from each rank r (but @skip) a block of
 * counts[r] (or @count) elements at displs[r] (or r * count) of recvbuf.
 */
static void emit_blocks(const char *op, const void *rbuf, int count,
			const int *counts, const int *displs, MPI_Datatype t,
			MPI_Comm comm, int skip, const void *site)
{
	MPI_Aint ext = textent(t);
	int r, n = comm_size(comm);

	for (r = 0; r < n; r++) {
		int c = counts ? counts[r] : count;
		MPI_Aint d = displs ? displs[r] : (MPI_Aint)r * count;

		if (r == skip)
			continue;
		emit_raw(op, (const char *)rbuf + d * ext, tsize(t, c), r, -1,
			 comm, site);
	}
}

#define SITE __builtin_return_address(0)
#define QUIET (in_fortran)

/* ---- C bindings ------------------------------------------------------ */

int MPI_Recv(void *buf, int count, MPI_Datatype t, int src, int tag,
	     MPI_Comm comm, MPI_Status *st)
{
	if (!QUIET)
		emit("recv", buf, tsize(t, count), src, tag, comm, SITE);
	return PMPI_Recv(buf, count, t, src, tag, comm, st);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype t, int src, int tag,
	      MPI_Comm comm, MPI_Request *req)
{
	if (!QUIET)
		emit("irecv", buf, tsize(t, count), src, tag, comm, SITE);
	return PMPI_Irecv(buf, count, t, src, tag, comm, req);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest,
		 int stag, void *rbuf, int rcount, MPI_Datatype rtype, int src,
		 int rtag, MPI_Comm comm, MPI_Status *st)
{
	if (!QUIET)
		emit("sendrecv", rbuf, tsize(rtype, rcount), src, rtag, comm,
		     SITE);
	return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount,
			     rtype, src, rtag, comm, st);
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype t, int dest,
			 int stag, int src, int rtag, MPI_Comm comm,
			 MPI_Status *st)
{
	if (!QUIET)
		emit("sendrecv_replace", buf, tsize(t, count), src, rtag, comm,
		     SITE);
	return PMPI_Sendrecv_replace(buf, count, t, dest, stag, src, rtag,
				     comm, st);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm)
{
	if (!QUIET && comm_rank(comm) != root)
		emit("bcast", buf, tsize(t, count), root, -1, comm, SITE);
	return PMPI_Bcast(buf, count, t, root, comm);
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
	       MPI_Op op, int root, MPI_Comm comm)
{
	if (!QUIET && comm_rank(comm) == root)
		emit_raw("reduce", rbuf, tsize(t, count), -2, -1, comm, SITE);
	return PMPI_Reduce(sbuf, rbuf, count, t, op, root, comm);
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
		  MPI_Op op, MPI_Comm comm)
{
	if (!QUIET)
		emit_raw("allreduce", rbuf, tsize(t, count), -2, -1, comm,
			 SITE);
	return PMPI_Allreduce(sbuf, rbuf, count, t, op, comm);
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
	       int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
	if (!QUIET && comm_rank(comm) == root)
		emit_blocks("gather", rbuf, rcount, NULL, NULL, rtype, comm,
			    root, SITE);
	return PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root,
			   comm);
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		const int rcounts[], const int displs[], MPI_Datatype rtype,
		int root, MPI_Comm comm)
{
	if (!QUIET && comm_rank(comm) == root)
		emit_blocks("gatherv", rbuf, 0, rcounts, displs, rtype, comm,
			    root, SITE);
	return PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype,
			    root, comm);
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
	if (!QUIET && comm_rank(comm) != root)
		emit("scatter", rbuf, tsize(rtype, rcount), root, -1, comm,
		     SITE);
	return PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root,
			    comm);
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[],
		 MPI_Datatype stype, void *rbuf, int rcount,
		 MPI_Datatype rtype, int root, MPI_Comm comm)
{
	if (!QUIET && comm_rank(comm) != root)
		emit("scatterv", rbuf, tsize(rtype, rcount), root, -1, comm,
		     SITE);
	return PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount,
			     rtype, root, comm);
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype,
		  void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
	if (!QUIET)
		emit_blocks("allgather", rbuf, rcount, NULL, NULL, rtype, comm,
			    comm_rank(comm), SITE);
	return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype,
		   void *rbuf, const int rcounts[], const int displs[],
		   MPI_Datatype rtype, MPI_Comm comm)
{
	if (!QUIET)
		emit_blocks("allgatherv", rbuf, 0, rcounts, displs, rtype,
			    comm, comm_rank(comm), SITE);
	return PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs,
			       rtype, comm);
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype,
		 void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
	if (!QUIET)
		emit_blocks("alltoall", rbuf, rcount, NULL, NULL, rtype, comm,
			    comm_rank(comm), SITE);
	return PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
		  MPI_Datatype stype, void *rbuf, const int rcounts[],
		  const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
	if (!QUIET)
		emit_blocks("alltoallv", rbuf, 0, rcounts, rdispls, rtype,
			    comm, comm_rank(comm), SITE);
	return PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts,
			      rdispls, rtype, comm);
}

int MPI_Finalize(void)
{
	pthread_mutex_lock(&lock);
	if (out)
		fflush(out);
	pthread_mutex_unlock(&lock);
	return PMPI_Finalize();
}

/* ---- Fortran bindings (gfortran: lower case, one underscore) ---------- */

/*
 * Find the real Fortran entry point behind ours. Every argument is passed
 * by reference; handles are MPI_Fint.
 */
#define FREAL(name, ...)						\
	static void (*real)(__VA_ARGS__);				\
	if (!real)							\
		*(void **)&real = dlsym(RTLD_NEXT, name);		\
	if (!real) {							\
		fprintf(stderr, "zctrace: %s not found\n", name);	\
		abort();						\
	}

#define FCALL(...)							\
	do {								\
		in_fortran++;						\
		real(__VA_ARGS__);					\
		in_fortran--;						\
	} while (0)

#define FTYPE(x) MPI_Type_f2c(*(x))
#define FCOMM(x) MPI_Comm_f2c(*(x))

void mpi_recv_(void *buf, MPI_Fint *count, MPI_Fint *t, MPI_Fint *src,
	       MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *st, MPI_Fint *ierr)
{
	FREAL("mpi_recv_", void *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
	      MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
	emit("recv", buf, tsize(FTYPE(t), *count), *src, *tag, FCOMM(comm),
	     SITE);
	FCALL(buf, count, t, src, tag, comm, st, ierr);
}

void mpi_irecv_(void *buf, MPI_Fint *count, MPI_Fint *t, MPI_Fint *src,
		MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
{
	FREAL("mpi_irecv_", void *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
	      MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
	emit("irecv", buf, tsize(FTYPE(t), *count), *src, *tag, FCOMM(comm),
	     SITE);
	FCALL(buf, count, t, src, tag, comm, req, ierr);
}

void mpi_sendrecv_(void *sbuf, MPI_Fint *scount, MPI_Fint *stype,
		   MPI_Fint *dest, MPI_Fint *stag, void *rbuf,
		   MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *src,
		   MPI_Fint *rtag, MPI_Fint *comm, MPI_Fint *st,
		   MPI_Fint *ierr)
{
	FREAL("mpi_sendrecv_", void *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
	      MPI_Fint *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
	      MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
	emit("sendrecv", rbuf, tsize(FTYPE(rtype), *rcount), *src, *rtag,
	     FCOMM(comm), SITE);
	FCALL(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag,
	      comm, st, ierr);
}

void mpi_sendrecv_replace_(void *buf, MPI_Fint *count, MPI_Fint *t,
			   MPI_Fint *dest, MPI_Fint *stag, MPI_Fint *src,
			   MPI_Fint *rtag, MPI_Fint *comm, MPI_Fint *st,
			   MPI_Fint *ierr)
{
	FREAL("mpi_sendrecv_replace_", void *, MPI_Fint *, MPI_Fint *,
	      MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
	      MPI_Fint *, MPI_Fint *);
	emit("sendrecv_replace", buf, tsize(FTYPE(t), *count), *src, *rtag,
	     FCOMM(comm), SITE);
	FCALL(buf, count, t, dest, stag, src, rtag, comm, st, ierr);
}

void mpi_bcast_(void *buf, MPI_Fint *count, MPI_Fint *t, MPI_Fint *root,
		MPI_Fint *comm, MPI_Fint *ierr)
{
	FREAL("mpi_bcast_", void *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
	      MPI_Fint *, MPI_Fint *);
	if (comm_rank(FCOMM(comm)) != *root)
		emit("bcast", buf, tsize(FTYPE(t), *count), *root, -1,
		     FCOMM(comm), SITE);
	FCALL(buf, count, t, root, comm, ierr);
}

void mpi_reduce_(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *t,
		 MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
{
	FREAL("mpi_reduce_", void *, void *, MPI_Fint *, MPI_Fint *,
	      MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
	if (comm_rank(FCOMM(comm)) == *root)
		emit_raw("reduce", rbuf, tsize(FTYPE(t), *count), -2, -1,
		     FCOMM(comm), SITE);
	FCALL(sbuf, rbuf, count, t, op, root, comm, ierr);
}

void mpi_allreduce_(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *t,
		    MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr)
{
	FREAL("mpi_allreduce_", void *, void *, MPI_Fint *, MPI_Fint *,
	      MPI_Fint *, MPI_Fint *, MPI_Fint *);
	emit_raw("allreduce", rbuf, tsize(FTYPE(t), *count), -2, -1, FCOMM(comm),
	     SITE);
	FCALL(sbuf, rbuf, count, t, op, comm, ierr);
}

/* gather, scatter, allgather and alltoall share one signature. */
#define FCOLL(fname, opname, who)					\
void fname(void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf,	\
	   MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *root,		\
	   MPI_Fint *comm, MPI_Fint *ierr)				\
{									\
	FREAL(#fname, void *, MPI_Fint *, MPI_Fint *, void *,		\
	      MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,		\
	      MPI_Fint *);						\
	who;								\
	FCALL(sbuf, scount, stype, rbuf, rcount, rtype, root, comm,	\
	      ierr);							\
}

FCOLL(mpi_gather_, "gather",
      if (comm_rank(FCOMM(comm)) == *root)
		emit_blocks("gather", rbuf, *rcount, NULL, NULL,
			    FTYPE(rtype), FCOMM(comm), *root, SITE))
FCOLL(mpi_scatter_, "scatter",
      if (comm_rank(FCOMM(comm)) != *root)
		emit("scatter", rbuf, tsize(FTYPE(rtype), *rcount), *root,
		     -1, FCOMM(comm), SITE))

/*
 * allgather and alltoall have no root: the 7th argument is the
 * communicator and the 8th ierr.
 */
#define FCOLL_ALL(fname, opname)					\
void fname(void *sbuf, MPI_Fint *scount, MPI_Fint *stype, void *rbuf,	\
	   MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *comm,		\
	   MPI_Fint *ierr)						\
{									\
	FREAL(#fname, void *, MPI_Fint *, MPI_Fint *, void *,		\
	      MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);		\
	emit_blocks(opname, rbuf, *rcount, NULL, NULL, FTYPE(rtype),	\
		    FCOMM(comm), comm_rank(FCOMM(comm)), SITE);		\
	FCALL(sbuf, scount, stype, rbuf, rcount, rtype, comm, ierr);	\
}

FCOLL_ALL(mpi_allgather_, "allgather")
FCOLL_ALL(mpi_alltoall_, "alltoall")

void mpi_finalize_(MPI_Fint *ierr)
{
	FREAL("mpi_finalize_", MPI_Fint *);
	pthread_mutex_lock(&lock);
	if (out)
		fflush(out);
	pthread_mutex_unlock(&lock);
	FCALL(ierr);
}
