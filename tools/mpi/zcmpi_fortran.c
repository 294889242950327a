// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcmpi_fortran.c - libzcrecv-mpi.so's Fortran bindings of Open MPI.
 *
 * Open MPI's Fortran bindings (mpif.h and `use mpi`, gfortran names) call
 * PMPI_* directly, past the C wrappers of zcmpi.c and zcmpi_request.c:
 * these entry points send the Fortran calls through them. MPICH's Fortran
 * bindings call the C MPI_* functions and need nothing (this file builds
 * to nothing there). Our requests have Fortran handles from FREQ_BASE on;
 * the real MPI's are converted with MPI_Request_f2c/c2f.
 *
 * The collectives too (zcmpi_coll.c carries them, or hands them to PMPI
 * and counts them): their buffers may be Fortran's MPI_IN_PLACE or
 * MPI_BOTTOM, which are the addresses of common blocks of Open MPI's
 * (mpi_fortran_in_place_, mpi_fortran_bottom_), not C's sentinels; they
 * are translated here before the C call sees them.
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdlib.h>

#include "zcmpi.h"

#ifdef OPEN_MPI
#define FREAL(name, ...)						\
	static void (*real)(__VA_ARGS__);				\
	if (!real)							\
		*(void **)&real = dlsym(RTLD_NEXT, name);		\
	if (!real)							\
		__zcmpi_die("%s not found", name)

static MPI_Fint *f_status_ignore, *f_statuses_ignore;
static void *f_in_place, *f_bottom;

/* Fortran's counts and displacements are passed as C int arrays. */
_Static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint is not an int");

/* Fortran handles: ours from FREQ_BASE on, the real MPI's converted. */
#define F_HANDLES(T, f2c, c2f, ours, Z, H, real_f2c, real_c2f)		\
static T f2c(MPI_Fint f)						\
{									\
	if (__zcmpi_pool && f >= FREQ_BASE &&				\
	    f - FREQ_BASE < __zcmpi_pool_top)				\
		return H(&__zcmpi_pool[f - FREQ_BASE]);			\
	return real_f2c(f);						\
}									\
static MPI_Fint c2f(T r)						\
{									\
	if (ours(r))							\
		return FREQ_BASE + (MPI_Fint)(Z(r) - __zcmpi_pool);	\
	return real_c2f(r);						\
}
F_HANDLES(MPI_Request, f2c_req, c2f_req, ours, Z, H, PMPI_Request_f2c,
	  PMPI_Request_c2f)
F_HANDLES(MPI_Message, f2c_msg, c2f_msg, ours_msg, ZM, HM, PMPI_Message_f2c,
	  PMPI_Message_c2f)

static void f_lookup(void)
{
	if (!f_status_ignore) {
		f_status_ignore = dlsym(RTLD_DEFAULT,
					"mpi_fortran_status_ignore_");
		f_statuses_ignore = dlsym(RTLD_DEFAULT,
					  "mpi_fortran_statuses_ignore_");
		f_in_place = dlsym(RTLD_DEFAULT, "mpi_fortran_in_place_");
		f_bottom = dlsym(RTLD_DEFAULT, "mpi_fortran_bottom_");
	}
}

/* A C status for Fortran status f (NULL: ignored). */
#define FST(f, c)	((f) == f_status_ignore ? MPI_STATUS_IGNORE : &(c))
#define FST_OUT(f, c)							\
	do {								\
		if ((f) != f_status_ignore)				\
			PMPI_Status_c2f(&(c), (f));			\
	} while (0)
#define FT(x)	PMPI_Type_f2c(*(x))
#define FC(x)	PMPI_Comm_f2c(*(x))

void mpi_init_(MPI_Fint *ierr)
{
	FREAL("mpi_init_", MPI_Fint *);
	real(ierr);
	f_lookup();
	if (*ierr == MPI_SUCCESS && !__zcmpi_ctx)
		__zcmpi_zc_init();
}

void mpi_init_thread_(MPI_Fint *req, MPI_Fint *prov, MPI_Fint *ierr)
{
	FREAL("mpi_init_thread_", MPI_Fint *, MPI_Fint *, MPI_Fint *);
	real(req, prov, ierr);
	f_lookup();
	if (*ierr == MPI_SUCCESS && !__zcmpi_ctx)
		__zcmpi_zc_init();
}

void mpi_finalize_(MPI_Fint *ierr)
{
	*ierr = MPI_Finalize();
}

#define FSEND(fname, cname)						\
void fname(void *buf, MPI_Fint *count, MPI_Fint *t, MPI_Fint *dest,	\
	   MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *ierr)		\
{									\
	*ierr = cname(buf, *count, FT(t), *dest, *tag, FC(comm));	\
}
FSEND(mpi_send_, MPI_Send)
FSEND(mpi_ssend_, MPI_Ssend)
FSEND(mpi_bsend_, MPI_Bsend)
FSEND(mpi_rsend_, MPI_Rsend)

#define FISEND(fname, cname)						\
void fname(void *buf, MPI_Fint *count, MPI_Fint *t, MPI_Fint *dest,	\
	   MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr) \
{									\
	MPI_Request r;							\
									\
	*ierr = cname(buf, *count, FT(t), *dest, *tag, FC(comm), &r);	\
	if (*ierr == MPI_SUCCESS)					\
		*req = c2f_req(r);					\
}
FISEND(mpi_isend_, MPI_Isend)
FISEND(mpi_issend_, MPI_Issend)
FISEND(mpi_ibsend_, MPI_Ibsend)
FISEND(mpi_irsend_, MPI_Irsend)
FISEND(mpi_irecv_, MPI_Irecv)
FISEND(mpi_send_init_, MPI_Send_init)
FISEND(mpi_bsend_init_, MPI_Bsend_init)
FISEND(mpi_rsend_init_, MPI_Rsend_init)
FISEND(mpi_ssend_init_, MPI_Ssend_init)
FISEND(mpi_recv_init_, MPI_Recv_init)

void mpi_mprobe_(MPI_Fint *src, MPI_Fint *tag, MPI_Fint *comm,
		 MPI_Fint *msg, MPI_Fint *st, MPI_Fint *ierr)
{
	MPI_Message m;
	MPI_Status c;

	f_lookup();
	*ierr = MPI_Mprobe(*src, *tag, FC(comm), &m, FST(st, c));
	if (*ierr == MPI_SUCCESS) {
		*msg = c2f_msg(m);
		FST_OUT(st, c);
	}
}

void mpi_improbe_(MPI_Fint *src, MPI_Fint *tag, MPI_Fint *comm,
		  MPI_Fint *flag, MPI_Fint *msg, MPI_Fint *st, MPI_Fint *ierr)
{
	MPI_Message m;
	MPI_Status c;
	int f = 0;

	f_lookup();
	*ierr = MPI_Improbe(*src, *tag, FC(comm), &f, &m, FST(st, c));
	*flag = f;
	if (f) {
		*msg = c2f_msg(m);
		FST_OUT(st, c);
	}
}

void mpi_mrecv_(void *buf, MPI_Fint *count, MPI_Fint *t, MPI_Fint *msg,
		MPI_Fint *st, MPI_Fint *ierr)
{
	MPI_Message m = f2c_msg(*msg);
	MPI_Status c;

	f_lookup();
	*ierr = MPI_Mrecv(buf, *count, FT(t), &m, FST(st, c));
	*msg = c2f_msg(m);
	FST_OUT(st, c);
}

void mpi_imrecv_(void *buf, MPI_Fint *count, MPI_Fint *t, MPI_Fint *msg,
		 MPI_Fint *req, MPI_Fint *ierr)
{
	MPI_Message m = f2c_msg(*msg);
	MPI_Request r;

	*ierr = MPI_Imrecv(buf, *count, FT(t), &m, &r);
	*msg = c2f_msg(m);
	if (*ierr == MPI_SUCCESS)
		*req = c2f_req(r);
}

void mpi_start_(MPI_Fint *req, MPI_Fint *ierr)
{
	MPI_Request r = f2c_req(*req);

	*ierr = MPI_Start(&r);
	*req = c2f_req(r);
}

void mpi_startall_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *ierr)
{
	MPI_Request *r = calloc((size_t)*n + 1, sizeof(*r));
	int i;

	if (!r)
		__zcmpi_die("out of memory");
	for (i = 0; i < *n; i++)
		r[i] = f2c_req(reqs[i]);
	*ierr = MPI_Startall(*n, r);
	for (i = 0; i < *n; i++)
		reqs[i] = c2f_req(r[i]);
	free(r);
}

void mpi_recv_(void *buf, MPI_Fint *count, MPI_Fint *t, MPI_Fint *src,
	       MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *st, MPI_Fint *ierr)
{
	MPI_Status c;

	f_lookup();
	*ierr = MPI_Recv(buf, *count, FT(t), *src, *tag, FC(comm),
			 FST(st, c));
	FST_OUT(st, c);
}

void mpi_sendrecv_(void *sbuf, MPI_Fint *scount, MPI_Fint *stype,
		   MPI_Fint *dest, MPI_Fint *stag, void *rbuf,
		   MPI_Fint *rcount, MPI_Fint *rtype, MPI_Fint *src,
		   MPI_Fint *rtag, MPI_Fint *comm, MPI_Fint *st,
		   MPI_Fint *ierr)
{
	MPI_Status c;

	f_lookup();
	*ierr = MPI_Sendrecv(sbuf, *scount, FT(stype), *dest, *stag, rbuf,
			     *rcount, FT(rtype), *src, *rtag, FC(comm),
			     FST(st, c));
	FST_OUT(st, c);
}

void mpi_sendrecv_replace_(void *buf, MPI_Fint *count, MPI_Fint *t,
			   MPI_Fint *dest, MPI_Fint *stag, MPI_Fint *src,
			   MPI_Fint *rtag, MPI_Fint *comm, MPI_Fint *st,
			   MPI_Fint *ierr)
{
	MPI_Status c;

	f_lookup();
	*ierr = MPI_Sendrecv_replace(buf, *count, FT(t), *dest, *stag, *src,
				     *rtag, FC(comm), FST(st, c));
	FST_OUT(st, c);
}

void mpi_probe_(MPI_Fint *src, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *st,
		MPI_Fint *ierr)
{
	MPI_Status c;

	f_lookup();
	*ierr = MPI_Probe(*src, *tag, FC(comm), FST(st, c));
	FST_OUT(st, c);
}

void mpi_iprobe_(MPI_Fint *src, MPI_Fint *tag, MPI_Fint *comm,
		 MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr)
{
	MPI_Status c;
	int f = 0;

	f_lookup();
	*ierr = MPI_Iprobe(*src, *tag, FC(comm), &f, FST(st, c));
	*flag = f;	/* gfortran's .true. is 1, as Open MPI's */
	if (f)
		FST_OUT(st, c);
}

void mpi_wait_(MPI_Fint *req, MPI_Fint *st, MPI_Fint *ierr)
{
	MPI_Request r = f2c_req(*req);
	MPI_Status c;

	f_lookup();
	*ierr = MPI_Wait(&r, FST(st, c));
	*req = c2f_req(r);
	FST_OUT(st, c);
}

void mpi_test_(MPI_Fint *req, MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr)
{
	MPI_Request r = f2c_req(*req);
	MPI_Status c;
	int f = 0;

	f_lookup();
	*ierr = MPI_Test(&r, &f, FST(st, c));
	*flag = f;
	*req = c2f_req(r);
	if (f)
		FST_OUT(st, c);
}

/* The array forms: convert, call the C wrapper, convert back. */
static int f_array(MPI_Fint n, MPI_Fint *freqs, MPI_Fint *fsts, int what,
		   MPI_Fint *a, MPI_Fint *b)
{
	MPI_Request *r = calloc((size_t)n + 1, sizeof(*r));
	MPI_Status *s = calloc((size_t)n + 1, sizeof(*s));
	bool ign = fsts == f_statuses_ignore || fsts == f_status_ignore;
	int i, ret, one = 0, flag = 0, cnt = 0, *idx;

	idx = calloc((size_t)n + 1, sizeof(*idx));
	if (!r || !s || !idx)
		__zcmpi_die("out of memory");
	for (i = 0; i < n; i++)
		r[i] = f2c_req(freqs[i]);
	switch (what) {
	case 0:
		ret = MPI_Waitall(n, r, ign ? MPI_STATUSES_IGNORE : s);
		cnt = n;
		break;
	case 1:
		ret = MPI_Testall(n, r, &flag, ign ? MPI_STATUSES_IGNORE : s);
		*a = flag;
		cnt = flag ? n : 0;
		break;
	case 2:
	case 3:
		ret = what == 2 ?
		      MPI_Waitany(n, r, &one, ign ? MPI_STATUS_IGNORE : s) :
		      MPI_Testany(n, r, &one, &flag,
				  ign ? MPI_STATUS_IGNORE : s);
		*a = one == MPI_UNDEFINED ? one : one + 1;
		if (what == 3)
			*b = flag;
		cnt = one == MPI_UNDEFINED ? 0 : 1;
		break;
	default:	/* 4: Waitsome, 5: Testsome; Fortran indices from 1 */
		ret = (what == 4 ? MPI_Waitsome : MPI_Testsome)
			(n, r, &cnt, idx, ign ? MPI_STATUSES_IGNORE : s);
		*a = cnt;
		if (cnt == MPI_UNDEFINED)
			cnt = 0;
		for (i = 0; i < cnt; i++)
			b[i] = idx[i] + 1;
		break;
	}
	for (i = 0; i < n; i++)
		freqs[i] = c2f_req(r[i]);
	if (!ign)
		for (i = 0; i < cnt; i++)
			PMPI_Status_c2f(&s[i], fsts + (size_t)i *
					(sizeof(MPI_Status) / sizeof(int)));
	free(r);
	free(s);
	free(idx);
	return ret;
}

void mpi_waitall_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *sts, MPI_Fint *ierr)
{
	f_lookup();
	*ierr = f_array(*n, reqs, sts, 0, NULL, NULL);
}

void mpi_testall_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *flag, MPI_Fint *sts,
		  MPI_Fint *ierr)
{
	f_lookup();
	*ierr = f_array(*n, reqs, sts, 1, flag, NULL);
}

void mpi_waitany_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *index,
		  MPI_Fint *st, MPI_Fint *ierr)
{
	f_lookup();
	*ierr = f_array(*n, reqs, st, 2, index, NULL);
}

void mpi_testany_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *index,
		  MPI_Fint *flag, MPI_Fint *st, MPI_Fint *ierr)
{
	f_lookup();
	*ierr = f_array(*n, reqs, st, 3, index, flag);
}

void mpi_waitsome_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *outcount,
		   MPI_Fint *idx, MPI_Fint *sts, MPI_Fint *ierr)
{
	f_lookup();
	*ierr = f_array(*n, reqs, sts, 4, outcount, idx);
}

void mpi_testsome_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *outcount,
		   MPI_Fint *idx, MPI_Fint *sts, MPI_Fint *ierr)
{
	f_lookup();
	*ierr = f_array(*n, reqs, sts, 5, outcount, idx);
}

void mpi_request_get_status_(MPI_Fint *req, MPI_Fint *flag, MPI_Fint *st,
			     MPI_Fint *ierr)
{
	MPI_Status c;
	int f = 0;

	f_lookup();
	*ierr = MPI_Request_get_status(f2c_req(*req), &f, FST(st, c));
	*flag = f;
	if (f)
		FST_OUT(st, c);
}

void mpi_request_free_(MPI_Fint *req, MPI_Fint *ierr)
{
	MPI_Request r = f2c_req(*req);

	*ierr = MPI_Request_free(&r);
	*req = c2f_req(r);
}

void mpi_cancel_(MPI_Fint *req, MPI_Fint *ierr)
{
	MPI_Request r = f2c_req(*req);

	*ierr = MPI_Cancel(&r);
}

void mpi_comm_dup_(MPI_Fint *comm, MPI_Fint *out, MPI_Fint *ierr)
{
	MPI_Comm c;

	*ierr = MPI_Comm_dup(FC(comm), &c);
	if (*ierr == MPI_SUCCESS)
		*out = PMPI_Comm_c2f(c);
}

void mpi_comm_split_(MPI_Fint *comm, MPI_Fint *color, MPI_Fint *key,
		     MPI_Fint *out, MPI_Fint *ierr)
{
	MPI_Comm c;

	*ierr = MPI_Comm_split(FC(comm), *color, *key, &c);
	if (*ierr == MPI_SUCCESS)
		*out = PMPI_Comm_c2f(c);
}
/* ---- collectives -------------------------------------------------------- */

/* A Fortran buffer argument: its sentinels as C's. */
static void *fbuf(void *b)
{
	f_lookup();
	if (b && b == f_in_place)
		return MPI_IN_PLACE;
	if (b && b == f_bottom)
		return MPI_BOTTOM;
	return b;
}

#define FO(x)	PMPI_Op_f2c(*(x))

/* The request of a nonblocking call that succeeded, in Fortran terms. */
#define FREQ_OUT(ret, r, req)						\
	do {								\
		if ((ret) == MPI_SUCCESS)				\
			*(req) = c2f_req(r);				\
	} while (0)

void mpi_barrier_(MPI_Fint *comm, MPI_Fint *ierr)
{
	*ierr = MPI_Barrier(FC(comm));
}

void mpi_ibarrier_(MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
{
	MPI_Request r;

	*ierr = MPI_Ibarrier(FC(comm), &r);
	FREQ_OUT(*ierr, r, req);
}

void mpi_bcast_(void *buf, MPI_Fint *count, MPI_Fint *t, MPI_Fint *root,
		MPI_Fint *comm, MPI_Fint *ierr)
{
	*ierr = MPI_Bcast(fbuf(buf), *count, FT(t), *root, FC(comm));
}

void mpi_ibcast_(void *buf, MPI_Fint *count, MPI_Fint *t, MPI_Fint *root,
		 MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr)
{
	MPI_Request r;

	*ierr = MPI_Ibcast(fbuf(buf), *count, FT(t), *root, FC(comm), &r);
	FREQ_OUT(*ierr, r, req);
}

/* Gather and scatter: one part each way, a root. */
#define FROOTED(fname, cname)						\
void fname(void *sbuf, MPI_Fint *scount, MPI_Fint *st, void *rbuf,	\
	   MPI_Fint *rcount, MPI_Fint *rt, MPI_Fint *root,		\
	   MPI_Fint *comm, MPI_Fint *ierr)				\
{									\
	*ierr = cname(fbuf(sbuf), *scount, FT(st), fbuf(rbuf), *rcount,	\
		      FT(rt), *root, FC(comm));				\
}
FROOTED(mpi_gather_, MPI_Gather)
FROOTED(mpi_scatter_, MPI_Scatter)

void mpi_gatherv_(void *sbuf, MPI_Fint *scount, MPI_Fint *st, void *rbuf,
		  MPI_Fint *rcounts, MPI_Fint *displs, MPI_Fint *rt,
		  MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
{
	*ierr = MPI_Gatherv(fbuf(sbuf), *scount, FT(st), fbuf(rbuf), rcounts,
			    displs, FT(rt), *root, FC(comm));
}

void mpi_scatterv_(void *sbuf, MPI_Fint *scounts, MPI_Fint *displs,
		   MPI_Fint *st, void *rbuf, MPI_Fint *rcount, MPI_Fint *rt,
		   MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
{
	*ierr = MPI_Scatterv(fbuf(sbuf), scounts, displs, FT(st), fbuf(rbuf),
			     *rcount, FT(rt), *root, FC(comm));
}

/* Allgather and alltoall, blocking and not: one part a rank. */
#define FALL(fname, cname)						\
void fname(void *sbuf, MPI_Fint *scount, MPI_Fint *st, void *rbuf,	\
	   MPI_Fint *rcount, MPI_Fint *rt, MPI_Fint *comm,		\
	   MPI_Fint *ierr)						\
{									\
	*ierr = cname(fbuf(sbuf), *scount, FT(st), fbuf(rbuf), *rcount,	\
		      FT(rt), FC(comm));				\
}
FALL(mpi_allgather_, MPI_Allgather)
FALL(mpi_alltoall_, MPI_Alltoall)

#define FIALL(fname, cname)						\
void fname(void *sbuf, MPI_Fint *scount, MPI_Fint *st, void *rbuf,	\
	   MPI_Fint *rcount, MPI_Fint *rt, MPI_Fint *comm,		\
	   MPI_Fint *req, MPI_Fint *ierr)				\
{									\
	MPI_Request r;							\
									\
	*ierr = cname(fbuf(sbuf), *scount, FT(st), fbuf(rbuf), *rcount,	\
		      FT(rt), FC(comm), &r);				\
	FREQ_OUT(*ierr, r, req);					\
}
FIALL(mpi_iallgather_, MPI_Iallgather)
FIALL(mpi_ialltoall_, MPI_Ialltoall)

void mpi_allgatherv_(void *sbuf, MPI_Fint *scount, MPI_Fint *st, void *rbuf,
		     MPI_Fint *rcounts, MPI_Fint *displs, MPI_Fint *rt,
		     MPI_Fint *comm, MPI_Fint *ierr)
{
	*ierr = MPI_Allgatherv(fbuf(sbuf), *scount, FT(st), fbuf(rbuf),
			       rcounts, displs, FT(rt), FC(comm));
}

void mpi_alltoallv_(void *sbuf, MPI_Fint *scounts, MPI_Fint *sdispls,
		    MPI_Fint *st, void *rbuf, MPI_Fint *rcounts,
		    MPI_Fint *rdispls, MPI_Fint *rt, MPI_Fint *comm,
		    MPI_Fint *ierr)
{
	*ierr = MPI_Alltoallv(fbuf(sbuf), scounts, sdispls, FT(st),
			      fbuf(rbuf), rcounts, rdispls, FT(rt), FC(comm));
}

/*
 * Alltoallw: a type a part, each converted (the send types are not read
 * in place, where Fortran may pass anything).
 */
void mpi_alltoallw_(void *sbuf, MPI_Fint *scounts, MPI_Fint *sdispls,
		    MPI_Fint *sts, void *rbuf, MPI_Fint *rcounts,
		    MPI_Fint *rdispls, MPI_Fint *rts, MPI_Fint *comm,
		    MPI_Fint *ierr)
{
	MPI_Comm c = FC(comm);
	MPI_Datatype *st, *rt;
	void *s = fbuf(sbuf);
	int n = 0, i;

	if (PMPI_Comm_size(c, &n) != MPI_SUCCESS) {
		*ierr = MPI_Alltoallw(s, scounts, sdispls, NULL, fbuf(rbuf),
				      rcounts, rdispls, NULL, c);
		return;
	}
	st = calloc((size_t)n + 1, sizeof(*st));
	rt = calloc((size_t)n + 1, sizeof(*rt));
	if (!st || !rt)
		__zcmpi_die("out of memory");
	for (i = 0; i < n; i++) {
		st[i] = s == MPI_IN_PLACE ? MPI_DATATYPE_NULL :
			PMPI_Type_f2c(sts[i]);
		rt[i] = PMPI_Type_f2c(rts[i]);
	}
	*ierr = MPI_Alltoallw(s, scounts, sdispls, st, fbuf(rbuf), rcounts,
			      rdispls, rt, c);
	free(st);
	free(rt);
}

void mpi_reduce_(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *t,
		 MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
{
	*ierr = MPI_Reduce(fbuf(sbuf), fbuf(rbuf), *count, FT(t), FO(op),
			   *root, FC(comm));
}

/* Allreduce, Scan, Exscan: a vector, an operation. */
#define FRED(fname, cname)						\
void fname(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *t,	\
	   MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr)		\
{									\
	*ierr = cname(fbuf(sbuf), fbuf(rbuf), *count, FT(t), FO(op),	\
		      FC(comm));					\
}
FRED(mpi_allreduce_, MPI_Allreduce)
FRED(mpi_scan_, MPI_Scan)
FRED(mpi_exscan_, MPI_Exscan)
FRED(mpi_reduce_scatter_block_, MPI_Reduce_scatter_block)

void mpi_iallreduce_(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *t,
		     MPI_Fint *op, MPI_Fint *comm, MPI_Fint *req,
		     MPI_Fint *ierr)
{
	MPI_Request r;

	*ierr = MPI_Iallreduce(fbuf(sbuf), fbuf(rbuf), *count, FT(t), FO(op),
			       FC(comm), &r);
	FREQ_OUT(*ierr, r, req);
}

void mpi_reduce_scatter_(void *sbuf, void *rbuf, MPI_Fint *rcounts,
			 MPI_Fint *t, MPI_Fint *op, MPI_Fint *comm,
			 MPI_Fint *ierr)
{
	*ierr = MPI_Reduce_scatter(fbuf(sbuf), fbuf(rbuf), rcounts, FT(t),
				   FO(op), FC(comm));
}
#endif
