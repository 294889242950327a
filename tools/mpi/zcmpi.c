// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcmpi.c - libzcrecv-mpi.so: the point-to-point traffic of unmodified MPI
 * programs over zcrecv, an LD_PRELOAD library over PMPI.
 *
 *   mpirun -np 4 -x LD_PRELOAD=libzcrecv-mpi.so ./app          (Open MPI)
 *   mpiexec.mpich -n 4 -genv LD_PRELOAD libzcrecv-mpi-mpich.so ./app
 *
 * Every point-to-point call on MPI_COMM_WORLD and on the communicators
 * derived from it (dup, split, create, cart, graph) goes through one
 * zcrecv context per rank, and so do their large collectives, blocking
 * and nonblocking (zcmpi_coll.c); the other collectives,
 * one-sided, I/O and everything on other communicators stay with the
 * real MPI. Design, rules and limits: Documentation/mpi.md. Built once
 * per MPI (mpicc, mpicc.mpich).
 *
 * This file keeps the state, communicators, data types, starting
 * operations, MPI_Init and MPI_Finalize and the point-to-point calls;
 * zcmpi_request.c the requests and their completion, zcmpi_fortran.c
 * Open MPI's Fortran bindings, zcmpi_coll.c the collectives (carried or
 * counted).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "zcrecv.h"
#include "base/config.h"
#include "zcmpi.h"

/* ---- state ------------------------------------------------------------ */

struct zcr_ctx *__zcmpi_ctx;
static unsigned char *peer_used;	/* world ranks we sent to */
static struct zcomm world;
static int world_rank, keyval = MPI_KEYVAL_INVALID;
int __zcmpi_world_size;
static uint32_t next_id = 1;
__thread int __zcmpi_depth;
bool __zcmpi_timed;		/* ZCRECV_REPORT=1: the report's layer time */
uint64_t __zcmpi_layer_ns;
static struct mem { void *p; struct mem *next; } *mems;

void __zcmpi_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "zcrecv-mpi: rank %d: ", world_rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	PMPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}


/* ---- communicators ------------------------------------------------------ */

struct zcomm *__zcmpi_zcomm_of(MPI_Comm comm)
{
	struct zcomm *zc;
	int flag = 0;

	if (!__zcmpi_ctx)
		return NULL;
	if (comm == MPI_COMM_WORLD)
		return &world;
	if (comm == MPI_COMM_NULL || keyval == MPI_KEYVAL_INVALID)
		return NULL;
	if (PMPI_Comm_get_attr(comm, keyval, &zc, &flag) != MPI_SUCCESS ||
	    !flag)
		return NULL;
	return zc;
}

static int zcomm_delete(MPI_Comm comm, int kv, void *attr, void *extra)
{
	struct zcomm *zc = attr;

	(void)comm;
	(void)kv;
	(void)extra;
	__zcmpi_coll_hints_free(zc);
	free(zc->world);
	free(zc->local);
	free(zc);
	return MPI_SUCCESS;
}

static int zcomm_fill(struct zcomm *zc, MPI_Comm comm)
{
	MPI_Group wg, g;
	int *in, i;

	PMPI_Comm_rank(comm, &zc->rank);
	PMPI_Comm_size(comm, &zc->size);
	zc->world = calloc((size_t)zc->size, sizeof(int));
	zc->local = malloc((size_t)__zcmpi_world_size * sizeof(int));
	in = calloc((size_t)zc->size, sizeof(int));
	if (!zc->world || !zc->local || !in)
		__zcmpi_die("out of memory");
	for (i = 0; i < zc->size; i++)
		in[i] = i;
	PMPI_Comm_group(comm, &g);
	PMPI_Comm_group(MPI_COMM_WORLD, &wg);
	PMPI_Group_translate_ranks(g, zc->size, in, wg, zc->world);
	PMPI_Group_free(&g);
	PMPI_Group_free(&wg);
	free(in);
	for (i = 0; i < __zcmpi_world_size; i++)
		zc->local[i] = -1;
	for (i = 0; i < zc->size; i++)
		zc->local[zc->world[i]] = i;
	return 0;
}

/*
 * A communicator just created from parent: carried by zcrecv when parent
 * is (every member comes from parent, so all agree). The id: the largest
 * next id of the members, so no member has used it; collective over it.
 */
static void zcomm_new(MPI_Comm parent, MPI_Comm comm)
{
	struct zcomm *zc;
	uint32_t id;
	int inter = 0;

	if (!__zcmpi_zcomm_of(parent) || comm == MPI_COMM_NULL)
		return;
	PMPI_Comm_test_inter(comm, &inter);
	if (inter)
		return;
	PMPI_Allreduce(&next_id, &id, 1, MPI_UINT32_T, MPI_MAX, comm);
	if (id >= 0x7fffffffU)
		return;		/* out of ids: the real MPI carries it */
	next_id = id + 1;
	zc = calloc(1, sizeof(*zc));
	if (!zc)
		__zcmpi_die("out of memory");
	zc->id = id;
	zcomm_fill(zc, comm);
	PMPI_Comm_set_attr(comm, keyval, zc);
}

/* ---- data types ------------------------------------------------------- */

/* What contig() needs to know of a datatype. */
struct tfacts {
	MPI_Datatype t;
	bool known;			/* a slot of tfacts[] in use */
	int size;
	MPI_Aint ext, tlb, text;
};

/*
 * The facts of the common predefined types, learnt in MPI_Init and only
 * read after it: asking the MPI costs three calls per send and receive,
 * several per cent of a small message's round trip. Predefined types are
 * never freed, so their handles and facts never change; a derived type's
 * handle may be freed and reused for another type, so those are asked
 * each time.
 */
#define NTFACTS		64		/* a power of two */
static struct tfacts tfacts[NTFACTS];

static unsigned int tfacts_slot(MPI_Datatype t)
{
	return (unsigned int)(((uint64_t)(uintptr_t)t *
			       0x9e3779b97f4a7c15ULL) >> 58) & (NTFACTS - 1);
}

static void type_facts(MPI_Datatype t, struct tfacts *f)
{
	MPI_Aint lb;

	f->t = t;
	f->size = 0;
	PMPI_Type_size(t, &f->size);
	PMPI_Type_get_extent(t, &lb, &f->ext);
	PMPI_Type_get_true_extent(t, &f->tlb, &f->text);
}

static const struct tfacts *tfacts_of(MPI_Datatype t)
{
	unsigned int i = tfacts_slot(t), n;

	for (n = 0; n < NTFACTS && tfacts[i].known;
	     n++, i = (i + 1) & (NTFACTS - 1))
		if (tfacts[i].t == t)
			return &tfacts[i];
	return NULL;
}

static void tfacts_init(void)
{
	const MPI_Datatype common[] = {
		MPI_BYTE, MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR,
		MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED,
		MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG,
		MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE,
		MPI_LONG_DOUBLE, MPI_WCHAR, MPI_C_BOOL, MPI_INT8_T,
		MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T,
		MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T,
		MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_AINT,
		MPI_OFFSET, MPI_COUNT, MPI_PACKED,
	};
	size_t k;

	for (k = 0; k < sizeof(common) / sizeof(common[0]); k++) {
		unsigned int i = tfacts_slot(common[k]);

		/* An MPI may lack one (MPI_DATATYPE_NULL), or alias two. */
		if (common[k] == MPI_DATATYPE_NULL || tfacts_of(common[k]))
			continue;
		while (tfacts[i].known)
			i = (i + 1) & (NTFACTS - 1);
		type_facts(common[k], &tfacts[i]);
		tfacts[i].known = true;
	}
}

/*
 * Where count elements of t at buf lie, if they are one contiguous run of
 * bytes: *ptr and *bytes; else false (the caller packs).
 */
static bool contig(const void *buf, int count, MPI_Datatype t, void **ptr,
		   size_t *bytes)
{
	const struct tfacts *f = tfacts_of(t);
	struct tfacts asked;

	if (!f) {
		type_facts(t, &asked);
		f = &asked;
	}
	*bytes = (size_t)f->size * (size_t)(count > 0 ? count : 0);
	*ptr = (void *)buf;
	if (!*bytes)
		return true;
	if (f->text != f->size || (count > 1 && f->ext != f->size))
		return false;
	*ptr = (char *)buf + f->tlb;
	return true;
}

bool __zcmpi_contig(const void *buf, int count, MPI_Datatype t, void **ptr,
		    size_t *bytes)
{
	return contig(buf, count, t, ptr, bytes);
}

int __zcmpi_type_size(MPI_Datatype t)
{
	int s = 0;

	PMPI_Type_size(t, &s);
	return s;
}

/* ---- errors ------------------------------------------------------------- */

static const char *what(int kind)
{
	return kind == ZR_SEND ? "send to" : "receive from";
}

/* An error of our own on comm: through its error handler, as MPI does. */
int __zcmpi_comm_error(MPI_Comm comm, int code)
{
	PMPI_Comm_call_errhandler(comm, code);
	return code;
}

/* A zcrecv error as an MPI error code, said on stderr when not plain. */
int __zcmpi_mpi_code(int err, int kind, int peer)
{
	if (err == -EMSGSIZE)
		return MPI_ERR_TRUNCATE;
	fprintf(stderr, "zcrecv-mpi: rank %d: %s rank %d failed: %s\n",
		world_rank, what(kind), peer, strerror(-err));
	return MPI_ERR_OTHER;
}


/* ---- starting operations ------------------------------------------------ */

/* z completes at once as an operation with MPI_PROC_NULL. */
static void null_op(struct zreq *z)
{
	z->kind = ZR_NULL;
	z->done = true;
	z->src = MPI_PROC_NULL;
	z->tag = MPI_ANY_TAG;
}

/* Forget the outcome of z's last run: it starts again (MPI_Start). */
void __zcmpi_zreq_reset(struct zreq *z)
{
	free(z->tmp);
	z->tmp = NULL;
	z->r = NULL;
	z->done = false;
	z->cancelled = false;
	z->err = 0;
	z->len = 0;
	z->peer = -1;
}

/* The endpoint to world rank peer, dialled if need be, counted as used. */
int __zcmpi_send_ep(int peer, struct zcr_ep **ep)
{
	int ret = zcr_ctx_job_ep(__zcmpi_ctx, peer, 0, ep);

	if (!ret && peer_used)
		peer_used[peer] = 1;
	return ret;
}

/* Start a send on z (comm and zc set); an MPI error code. */
static int send_into(struct zreq *z, const void *buf, int count,
		     MPI_Datatype t, int dest, int tag, bool sync)
{
	MPI_Comm comm = z->comm;
	struct zcomm *zc = z->zc;
	struct zcr_ep *ep;
	size_t bytes;
	void *ptr;
	int ret, pos = 0, cap = 0;

	if (dest == MPI_PROC_NULL) {
		null_op(z);
		return MPI_SUCCESS;
	}
	if (dest < 0 || dest >= zc->size)
		return __zcmpi_comm_error(comm, MPI_ERR_RANK);
	if (tag < 0)
		return __zcmpi_comm_error(comm, MPI_ERR_TAG);
	if (count < 0)
		return __zcmpi_comm_error(comm, MPI_ERR_COUNT);
	z->kind = ZR_SEND;
	z->peer = zc->world[dest];
	if (!contig(buf, count, t, &ptr, &bytes)) {
		PMPI_Pack_size(count, t, comm, &cap);
		z->tmp = malloc(cap ? (size_t)cap : 1);
		if (!z->tmp)
			__zcmpi_die("out of memory");
		PMPI_Pack(buf, count, t, z->tmp, cap, &pos, comm);
		ptr = z->tmp;
		bytes = (size_t)pos;
	}
	ret = zcr_ctx_job_ep(__zcmpi_ctx, z->peer, 0, &ep);
	if (!ret && peer_used)
		peer_used[z->peer] = 1;
	if (!ret && !sync) {
		struct zcr_status st;

		/*
		 * An eager send complete within the call (shm: written into
		 * the peer's ring) makes no library request: recorded now,
		 * MPI_Wait only hands it out, as for a persistent start.
		 */
		ret = zcr_isend_test_comm(ep, zc->id, ptr, bytes, tag, &z->r,
					  &st, sizeof(st));
		if (ret == 1) {
			__zcmpi_zreq_finish(z, st.error, &st);
			free(z->tmp);	/* the packed copy went with it */
			z->tmp = NULL;
			return MPI_SUCCESS;
		}
	} else if (!ret) {
		ret = zcr_issend_comm(ep, zc->id, ptr, bytes, tag, &z->r);
	}
	if (ret) {
		free(z->tmp);
		z->tmp = NULL;
		return __zcmpi_comm_error(comm, __zcmpi_mpi_code(ret, ZR_SEND,
								 z->peer));
	}
	return MPI_SUCCESS;
}

/*
 * Where a receive of count t into buf lands: the user's buffer, or (not
 * contiguous) z->tmp, unpacked on completion. Sets z->buf, count, type,
 * cap; returns the landing address.
 */
static void *recv_landing(struct zreq *z, void *buf, int count,
			  MPI_Datatype t)
{
	size_t bytes;
	void *ptr;
	int cap = 0;

	z->kind = ZR_RECV;
	z->buf = buf;
	z->count = count;
	z->type = t;
	if (!contig(buf, count, t, &ptr, &bytes)) {
		PMPI_Pack_size(count, t, z->comm, &cap);
		z->tmp = malloc(cap ? (size_t)cap : 1);
		if (!z->tmp)
			__zcmpi_die("out of memory");
		ptr = z->tmp;
		bytes = (size_t)cap;
	}
	z->cap = bytes;
	return ptr;
}

/* Start a receive on z (comm and zc set); an MPI error code. */
static int recv_into(struct zreq *z, void *buf, int count, MPI_Datatype t,
		     int src, int tag)
{
	MPI_Comm comm = z->comm;
	struct zcomm *zc = z->zc;
	struct zcr_status st;
	struct zcr_ep *ep;
	void *ptr;
	int ret, wsrc;

	if (src == MPI_PROC_NULL) {
		null_op(z);
		return MPI_SUCCESS;
	}
	if (src != MPI_ANY_SOURCE && (src < 0 || src >= zc->size))
		return __zcmpi_comm_error(comm, MPI_ERR_RANK);
	if (tag < 0 && tag != MPI_ANY_TAG)
		return __zcmpi_comm_error(comm, MPI_ERR_TAG);
	if (count < 0)
		return __zcmpi_comm_error(comm, MPI_ERR_COUNT);
	wsrc = src == MPI_ANY_SOURCE ? ZCRECV_ANY_SOURCE : zc->world[src];
	z->peer = wsrc;
	ptr = recv_landing(z, buf, count, t);
	/*
	 * Dial the source now: should it die, the connection's loss fails
	 * this receive instead of leaving it waiting for ever.
	 */
	if (wsrc >= 0)
		zcr_ctx_job_ep(__zcmpi_ctx, wsrc, 0, &ep);
	/*
	 * A message there in full already (a halo's, a reply that came
	 * first) is taken within the call and leaves no library request:
	 * recorded now, MPI_Wait only hands it out, as for a send.
	 */
	ret = zcr_irecv_test_comm(__zcmpi_ctx, zc->id, ptr, z->cap, wsrc,
				  tag == MPI_ANY_TAG ? ZCRECV_ANY_TAG : tag,
				  zc->coll ? ZCRECV_RECV_NO_LEARN : 0, &z->r,
				  &st, sizeof(st));
	if (ret == 1) {
		__zcmpi_zreq_finish(z, st.error, &st);
		free(z->tmp);	/* unpacked by the finish */
		z->tmp = NULL;
		return MPI_SUCCESS;
	}
	if (ret) {
		free(z->tmp);
		z->tmp = NULL;
		return __zcmpi_comm_error(comm, __zcmpi_mpi_code(ret, ZR_RECV,
								 wsrc));
	}
	return MPI_SUCCESS;
}

/* Start a send or receive (kind) on z; an MPI error code. */
int __zcmpi_zreq_start(struct zreq *z, int kind, const void *buf, int count,
		       MPI_Datatype t, int rank, int tag)
{
	if (kind == ZR_SEND || kind == ZR_SSEND)
		return send_into(z, buf, count, t, rank, tag,
				 kind == ZR_SSEND);
	return recv_into(z, (void *)buf, count, t, rank, tag);
}

/*
 * Bind persistent z (its p* fields set, arguments checked) to a
 * persistent request of the library where its data is contiguous and its
 * peer a real rank; otherwise each MPI_Start takes the generic path.
 */
void __zcmpi_zreq_bind(struct zreq *z)
{
	struct zcomm *zc = z->zc;
	struct zcr_ep *ep;
	size_t bytes;
	void *ptr;
	int peer;

	if (z->prank == MPI_PROC_NULL ||
	    !contig(z->pbuf, z->pcount, z->ptype, &ptr, &bytes))
		return;
	z->pbytes = bytes;
	if (z->pkind == ZR_RECV) {
		peer = z->prank == MPI_ANY_SOURCE ? ZCRECV_ANY_SOURCE :
		       zc->world[z->prank];
		/* Dialled now, as recv_into() does at every start. */
		if (peer >= 0)
			zcr_job_ep(__zcmpi_ctx, peer, &ep);
		if (zcr_recv_init_comm(__zcmpi_ctx, zc->id, ptr, bytes, peer,
				       z->ptag == MPI_ANY_TAG ? ZCRECV_ANY_TAG :
				       z->ptag, 0, &z->preq))
			z->preq = NULL;
		return;
	}
	peer = zc->world[z->prank];
	if (zcr_job_ep(__zcmpi_ctx, peer, &ep) ||
	    zcr_send_init_comm(ep, zc->id, ptr, bytes, z->ptag,
			       z->pkind == ZR_SSEND ? ZCRECV_SEND_SYNC : 0,
			       &z->preq)) {
		z->preq = NULL;
		return;
	}
	if (peer_used)
		peer_used[peer] = 1;
}

/* MPI_Start of bound z (z->preq, reset): an MPI error code. */
int __zcmpi_zreq_start_bound(struct zreq *z)
{
	struct zcr_status st;
	int ret, peer;

	if (z->pkind == ZR_RECV) {
		z->kind = ZR_RECV;
		z->buf = (void *)z->pbuf;
		z->count = z->pcount;
		z->type = z->ptype;
		z->cap = z->pbytes;
		peer = z->prank == MPI_ANY_SOURCE ? ZCRECV_ANY_SOURCE :
		       z->zc->world[z->prank];
	} else {
		z->kind = ZR_SEND;
		peer = z->zc->world[z->prank];
	}
	z->peer = peer;
	/*
	 * Complete within the start (an eager send in the ring, a message
	 * that was there): recorded now, so that MPI_Wait or MPI_Test only
	 * hands it out, with no call into the library.
	 */
	ret = zcr_start_test(z->preq, &z->r, &st, sizeof(st));
	if (ret == 1) {
		__zcmpi_zreq_finish(z, st.error, &st);
		return MPI_SUCCESS;
	}
	if (ret)
		return __zcmpi_comm_error(z->comm,
					  __zcmpi_mpi_code(ret, z->kind, peer));
	return MPI_SUCCESS;
}

/* A new request of ours for a send or receive (kind) started at once. */
static int start_op(int kind, const void *buf, int count, MPI_Datatype t,
		    int rank, int tag, MPI_Comm comm, struct zcomm *zc,
		    MPI_Request *req)
{
	struct zreq *z = __zcmpi_zreq_new(kind, comm, zc);
	int ret = __zcmpi_zreq_start(z, kind, buf, count, t, rank, tag);

	if (ret) {
		__zcmpi_zreq_release(z);
		return ret;
	}
	*req = H(z);
	return MPI_SUCCESS;
}

#define start_send(...)	start_op(ZR_SEND, __VA_ARGS__)
#define start_recv(...)	start_op(ZR_RECV, __VA_ARGS__)

/* Wait for our request *req and collect it; its MPI error code. */
int __zcmpi_zwait_quiet(MPI_Request *req, MPI_Status *st)
{
	struct zreq *z = Z(*req);

	if (z->part)
		__zcmpi_part_wait(z);
	if (z->kind == ZR_COLL)
		__zcmpi_coll_wait(z);
	/*
	 * While nonblocking collectives run, in short slices: their
	 * schedules move on between them (another rank may wait for this
	 * one's next step before it sends what this wait waits for).
	 * Partitioned sends waiting for their receiver's hello move on too.
	 */
	while (!__zcmpi_zreq_wait_ms(z, __zcmpi_coll_running ? 1 : 200)) {
		__zcmpi_part_progress();
		if (__atomic_load_n(&__zcmpi_coll_running, __ATOMIC_RELAXED))
			__zcmpi_coll_progress();
	}
	return __zcmpi_zreq_collect(z, st, req);
}

/* The same, an error through the communicator's handler. */
int __zcmpi_zwait(MPI_Request *req, MPI_Status *st)
{
	MPI_Comm comm = Z(*req)->comm;
	int err = __zcmpi_zwait_quiet(req, st);

	if (err)
		__zcmpi_comm_error(comm, err);
	return err;
}

/* ---- initialisation and finalisation -------------------------------------- */

static int mpi_allgather(const void *mine, void *all, size_t len, void *arg)
{
	(void)arg;
	return PMPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len,
			      MPI_BYTE, MPI_COMM_WORLD) != MPI_SUCCESS;
}

/*
 * Our variables, and the library's: the context is created quiet (peers
 * closing at MPI_Finalize are no news), so it would fail a bad value
 * without naming it. Each bad one is said here, then the job stops.
 */
static void env_check(struct zcr_env_set *mine)
{
	static const enum zcr_env_reader theirs[] = { ZCR_ENV_CTX,
						      ZCR_ENV_JOB };
	struct zcr_env_set set;
	struct zcr_env_val quiet;
	unsigned int i;
	int bad;

	__zcr_env_get(ZCR_ENV_QUIET, true, &quiet);
	bad = __zcr_env_load(mine, ZCR_ENV_MPI, false);
	for (i = 0; i < sizeof(theirs) / sizeof(theirs[0]); i++)
		bad |= __zcr_env_load(&set, theirs[i], quiet.u);
	if (bad)
		__zcmpi_die("a ZCRECV_* variable has a bad value%s", quiet.u ?
			    " (ZCRECV_QUIET=1: zcinfo --env shows them)" :
			    " (above)");
}

void __zcmpi_zc_init(void)
{
	enum { AUTO, PMIX, MPI, ENV };	/* ZCRECV_MPI_WIREUP's choices */
	struct zcr_ctx_attr a = { 0 };
	struct zcr_job_attr ja = { 0 };
	struct zcr_env_set env;
	int ret, how, level = MPI_THREAD_MULTIPLE;
	bool pmix;

	PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &__zcmpi_world_size);
	env_check(&env);
	__zcmpi_timed = env.v[ZCR_ENV_REPORT].u;
	PMPI_Query_thread(&level);
	__zcmpi_threads = level == MPI_THREAD_MULTIPLE;
	how = (int)env.v[ZCR_ENV_MPI_WIREUP].u;
	/*
	 * auto: the launcher's PMIx when there is one, else the MPI's own
	 * MPI_Allgather; env: the library's environment fallback.
	 */
	pmix = how == PMIX || how == ENV ? true : how == MPI ? false :
	       getenv("PMIX_NAMESPACE") != NULL;
	if (pmix)
		setenv("ZCRECV_WIREUP", how == ENV ? "env" : "pmix", 1);
	/*
	 * Ranks on one host talk through shared memory (synchronous sends
	 * included) unless the user said otherwise: ZCRECV_SHM=0 keeps TCP.
	 */
	setenv("ZCRECV_SHM", "1", 0);
	ja.rank = world_rank;
	ja.size = __zcmpi_world_size;
	ja.allgather = mpi_allgather;
	a.progress_thread = env.v[ZCR_ENV_MPI_PROGRESS_THREAD].u;
	/* Peers closing at MPI_Finalize are no news; failures we say. */
	a.quiet = 1;
	ret = zcr_ctx_create_job(&a, sizeof(a), pmix ? NULL : &ja, sizeof(ja),
				 &__zcmpi_ctx);
	if (ret)
		__zcmpi_die("cannot wire up the job over zcrecv (%s)%s",
			    strerror(-ret), pmix ? ": no usable PMIx server; "
			    "ZCRECV_MPI_WIREUP=mpi exchanges the addresses "
			    "through MPI_Allgather instead" : "");
	peer_used = calloc((size_t)__zcmpi_world_size, 1);
	zcr_ctx_job(__zcmpi_ctx, &ret, NULL);
	if (ret != world_rank)
		__zcmpi_die("the PMIx rank %d is not the MPI rank %d", ret,
			    world_rank);
	world.id = 0;
	zcomm_fill(&world, MPI_COMM_WORLD);
	tfacts_init();
	PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, zcomm_delete, &keyval,
				NULL);
	__zcmpi_pool = mmap(NULL, (size_t)NREQ * sizeof(*__zcmpi_pool),
			    PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (__zcmpi_pool == MAP_FAILED)
		__zcmpi_die("cannot map the request table");
	__zcmpi_coll_init(&env);
}

int MPI_Init(int *argc, char ***argv)
{
	int ret = PMPI_Init(argc, argv);

	if (ret == MPI_SUCCESS)
		__zcmpi_zc_init();
	return ret;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int ret = PMPI_Init_thread(argc, argv, required, provided);

	if (ret == MPI_SUCCESS)
		__zcmpi_zc_init();
	return ret;
}

/*
 * How many of the peers we sent to are carried by shared memory and how
 * many by TCP (zcr_ctx_job_ep() only hands out the endpoints the sends
 * dialled; asking for one dials nothing new then).
 */
static void peers_by_transport(unsigned int *shm, unsigned int *tcp)
{
	struct zcr_ep *ep;
	const char *msg;
	int r;

	*shm = *tcp = 0;
	for (r = 0; r < __zcmpi_world_size; r++) {
		if (r == world_rank || !peer_used[r] ||
		    zcr_ctx_job_ep(__zcmpi_ctx, r, 0, &ep))
			continue;
		msg = "";
		zcr_ep_error(ep, &msg);
		/* "shm", or "shm: why it closed" once the peer finalized */
		if (!strncmp(msg, "shm", 3))
			(*shm)++;
		else
			(*tcp)++;
	}
}

static void report(void)
{
	struct zcr_stats s;
	struct zcr_env_val v;
	unsigned int shm, tcp;
	struct zcmpi_coll_stats c;

	/* Checked at MPI_Init: a bad value stopped the job there. */
	if (__zcr_env_get(ZCR_ENV_REPORT, false, &v) || !v.u ||
	    zcr_ctx_stats_sized(__zcmpi_ctx, &s, sizeof(s)))
		return;
	peers_by_transport(&shm, &tcp);
	__zcmpi_coll_stats(&c);
	fprintf(stderr, "zcrecv-mpi: rank %d: msgs %llu sent %llu received, "
		"early %llu, hits %llu, remaps %llu, pages %llu, copied "
		"%llu B, backend %s, peers %u shm %u tcp, shared %llu, "
		"in layer %.3f s, collectives %llu calls %llu B, "
		"deferred %llu, expected %llu, carried coll %llu (%llu B), "
		"prefetch asked %llu pre-sent %llu B saved %llu B wasted "
		"%llu B late %llu dropped %llu\n",
		world_rank,
		(unsigned long long)s.msgs_sent,
		(unsigned long long)s.msgs_recv,
		(unsigned long long)s.early, (unsigned long long)s.hits,
		(unsigned long long)s.remaps,
		(unsigned long long)s.pages_remapped,
		(unsigned long long)s.bytes_copied, s.backend_name, shm, tcp,
		(unsigned long long)s.shared_pulls,
		(double)__zcmpi_layer_ns / 1e9,
		(unsigned long long)c.mpi_calls,
		(unsigned long long)c.mpi_bytes,
		(unsigned long long)s.deferred,
		(unsigned long long)s.expected,
		(unsigned long long)c.zc_calls,
		(unsigned long long)c.zc_bytes,
		(unsigned long long)s.pf_requests,
		(unsigned long long)s.pf_presend_bytes,
		(unsigned long long)s.pf_saved_bytes,
		(unsigned long long)s.pf_wasted_bytes,
		(unsigned long long)s.pf_late,
		(unsigned long long)s.pf_dropped);
}

int MPI_Finalize(void)
{
	struct mem *m;

	if (__zcmpi_ctx) {
		/* Nonblocking collectives the program freed run to the end. */
		__zcmpi_coll_drain();
		__zcmpi_reap_freed();
		/*
		 * Everyone is done receiving: no message is still on its
		 * way when the connections close.
		 */
		PMPI_Barrier(MPI_COMM_WORLD);
		report();
		__zcmpi_coll_hints_free_all();
		while ((m = mems)) {
			mems = m->next;
			free(m);
		}
		zcr_ctx_destroy(__zcmpi_ctx);
		__zcmpi_ctx = NULL;
		free(peer_used);
		peer_used = NULL;
		free(world.world);
		free(world.local);
	}
	return PMPI_Finalize();
}

/* ---- point to point --------------------------------------------------- */

int MPI_Isend(const void *buf, int count, MPI_Datatype t, int dest, int tag,
	      MPI_Comm comm, MPI_Request *req)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Isend(buf, count, t, dest, tag, comm, req));
	LEAVE(start_send(buf, count, t, dest, tag, comm, zc, req));
}

/* Buffered and ready modes are standard sends; synchronous ones wait for
 * the receiver's match (zcr_issend_comm). */
int MPI_Issend(const void *buf, int count, MPI_Datatype t, int dest, int tag,
	       MPI_Comm comm, MPI_Request *req)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Issend(buf, count, t, dest, tag, comm, req));
	LEAVE(start_op(ZR_SSEND, buf, count, t, dest, tag, comm, zc, req));
}

int MPI_Ibsend(const void *buf, int count, MPI_Datatype t, int dest, int tag,
	       MPI_Comm comm, MPI_Request *req)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Ibsend(buf, count, t, dest, tag, comm, req));
	LEAVE(start_send(buf, count, t, dest, tag, comm, zc, req));
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype t, int dest, int tag,
	       MPI_Comm comm, MPI_Request *req)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Irsend(buf, count, t, dest, tag, comm, req));
	LEAVE(start_send(buf, count, t, dest, tag, comm, zc, req));
}

static int blocking_send(int kind, const void *buf, int count,
			 MPI_Datatype t, int dest, int tag, MPI_Comm comm,
			 struct zcomm *zc)
{
	MPI_Request r;
	int ret = start_op(kind, buf, count, t, dest, tag, comm, zc, &r);

	if (ret)
		return ret;
	return __zcmpi_zwait(&r, MPI_STATUS_IGNORE);
}

int MPI_Send(const void *buf, int count, MPI_Datatype t, int dest, int tag,
	     MPI_Comm comm)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Send(buf, count, t, dest, tag, comm));
	LEAVE(blocking_send(ZR_SEND, buf, count, t, dest, tag, comm, zc));
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype t, int dest, int tag,
	      MPI_Comm comm)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Ssend(buf, count, t, dest, tag, comm));
	LEAVE(blocking_send(ZR_SSEND, buf, count, t, dest, tag, comm, zc));
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype t, int dest, int tag,
	      MPI_Comm comm)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Bsend(buf, count, t, dest, tag, comm));
	LEAVE(blocking_send(ZR_SEND, buf, count, t, dest, tag, comm, zc));
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype t, int dest, int tag,
	      MPI_Comm comm)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Rsend(buf, count, t, dest, tag, comm));
	LEAVE(blocking_send(ZR_SEND, buf, count, t, dest, tag, comm, zc));
}

int MPI_Irecv(void *buf, int count, MPI_Datatype t, int src, int tag,
	      MPI_Comm comm, MPI_Request *req)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Irecv(buf, count, t, src, tag, comm, req));
	LEAVE(start_recv(buf, count, t, src, tag, comm, zc, req));
}

int MPI_Recv(void *buf, int count, MPI_Datatype t, int src, int tag,
	     MPI_Comm comm, MPI_Status *st)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	MPI_Request r;
	int ret;
	ENTER;

	if (!zc)
		LEAVE(PMPI_Recv(buf, count, t, src, tag, comm, st));
	ret = start_recv(buf, count, t, src, tag, comm, zc, &r);
	if (ret)
		LEAVE(ret);
	LEAVE(__zcmpi_zwait(&r, st));
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest,
		 int stag, void *rbuf, int rcount, MPI_Datatype rtype,
		 int src, int rtag, MPI_Comm comm, MPI_Status *st)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	MPI_Request rr, sr;
	int ret, ret2;
	ENTER;

	if (!zc)
		LEAVE(PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf,
				    rcount, rtype, src, rtag, comm, st));
	ret = start_recv(rbuf, rcount, rtype, src, rtag, comm, zc, &rr);
	if (ret)
		LEAVE(ret);
	ret = start_send(sbuf, scount, stype, dest, stag, comm, zc, &sr);
	if (ret) {
		zcr_cancel(Z(rr)->r);
		__zcmpi_zwait(&rr, MPI_STATUS_IGNORE);
		LEAVE(ret);
	}
	ret2 = __zcmpi_zwait(&sr, MPI_STATUS_IGNORE);
	ret = __zcmpi_zwait(&rr, st);
	LEAVE(ret ? ret : ret2);
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype t, int dest,
			 int stag, int src, int rtag, MPI_Comm comm,
			 MPI_Status *st)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	int cap = 0, pos = 0, ret;
	void *tmp;
	ENTER;

	if (!zc)
		LEAVE(PMPI_Sendrecv_replace(buf, count, t, dest, stag, src,
					    rtag, comm, st));
	/* Send a packed copy: the receive may land in buf at once. */
	PMPI_Pack_size(count, t, comm, &cap);
	tmp = malloc(cap ? (size_t)cap : 1);
	if (!tmp)
		__zcmpi_die("out of memory");
	PMPI_Pack(buf, count, t, tmp, cap, &pos, comm);
	ret = MPI_Sendrecv(tmp, pos, MPI_PACKED, dest, stag, buf, count, t,
			   src, rtag, comm, st);
	free(tmp);
	LEAVE(ret);
}

/*
 * MPI_(I)probe, or with message MPI_(I)mprobe: the message found is then
 * claimed (no other receive or probe sees it) and *message names it.
 */
static int probe(int src, int tag, MPI_Comm comm, struct zcomm *zc,
		 int *flag, MPI_Message *message, MPI_Status *st, bool block)
{
	struct zcr_message *m = NULL;
	struct zcr_status zs;
	struct zreq *z;
	int ret, wsrc, wtag;

	if (src == MPI_PROC_NULL) {
		*flag = 1;
		if (message)
			*message = MPI_MESSAGE_NO_PROC;
		__zcmpi_status_set(st, MPI_PROC_NULL, MPI_ANY_TAG, 0, false, 0);
		return MPI_SUCCESS;
	}
	if (src != MPI_ANY_SOURCE && (src < 0 || src >= zc->size))
		return __zcmpi_comm_error(comm, MPI_ERR_RANK);
	if (tag < 0 && tag != MPI_ANY_TAG)
		return __zcmpi_comm_error(comm, MPI_ERR_TAG);
	wsrc = src == MPI_ANY_SOURCE ? ZCRECV_ANY_SOURCE : zc->world[src];
	wtag = tag == MPI_ANY_TAG ? ZCRECV_ANY_TAG : tag;
	for (;;) {
		ret = message ? zcr_improbe_comm(__zcmpi_ctx, zc->id, wsrc,
						 wtag, 0, &m, &zs,
						 sizeof(zs)) :
		      zcr_iprobe_comm(__zcmpi_ctx, zc->id, wsrc, wtag, 0, &zs,
				      sizeof(zs));
		if (ret < 0)
			return __zcmpi_comm_error(comm, ret == -ENOMEM ?
						  MPI_ERR_NO_MEM : MPI_ERR_ARG);
		if (ret || !block)
			break;
		__zcmpi_idle();
	}
	*flag = ret;
	if (message && !ret)
		*message = MPI_MESSAGE_NULL;
	if (!ret)
		return MPI_SUCCESS;
	if (message) {
		z = __zcmpi_zreq_new(ZR_MSG, comm, zc);
		z->msg = m;
		z->peer = zs.source;
		*message = HM(z);
	}
	__zcmpi_status_set(st, zc->local[zs.source], zs.tag, zs.len, false, 0);
	return MPI_SUCCESS;
}

int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *st)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Iprobe(src, tag, comm, flag, st));
	LEAVE(probe(src, tag, comm, zc, flag, NULL, st, false));
}

int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *st)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	int flag;
	ENTER;

	if (!zc)
		LEAVE(PMPI_Probe(src, tag, comm, st));
	LEAVE(probe(src, tag, comm, zc, &flag, NULL, st, true));
}

/* ---- matched probes ----------------------------------------------------- */

int MPI_Improbe(int src, int tag, MPI_Comm comm, int *flag,
		MPI_Message *message, MPI_Status *st)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Improbe(src, tag, comm, flag, message, st));
	LEAVE(probe(src, tag, comm, zc, flag, message, st, false));
}

int MPI_Mprobe(int src, int tag, MPI_Comm comm, MPI_Message *message,
	       MPI_Status *st)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	int flag;
	ENTER;

	if (!zc)
		LEAVE(PMPI_Mprobe(src, tag, comm, message, st));
	LEAVE(probe(src, tag, comm, zc, &flag, message, st, true));
}

/*
 * Receive the message of ours *message into buf: *req (ours) receives it;
 * *message becomes MPI_MESSAGE_NULL.
 */
static int mrecv_start(void *buf, int count, MPI_Datatype t,
		       MPI_Message *message, MPI_Request *req)
{
	struct zreq *z = ZM(*message);
	void *ptr;
	int ret;

	*message = MPI_MESSAGE_NULL;
	ptr = recv_landing(z, buf, count, t);
	ret = zcr_imrecv(z->msg, ptr, z->cap, &z->r);
	z->msg = NULL;
	if (ret) {
		MPI_Comm comm = z->comm;

		__zcmpi_zreq_release(z);
		return __zcmpi_comm_error(comm, __zcmpi_mpi_code(ret, ZR_RECV,
								 -1));
	}
	*req = H(z);
	return MPI_SUCCESS;
}

int MPI_Imrecv(void *buf, int count, MPI_Datatype t, MPI_Message *message,
	       MPI_Request *req)
{
	struct zreq *z;
	ENTER;

	if (*message == MPI_MESSAGE_NO_PROC && __zcmpi_ctx) {
		z = __zcmpi_zreq_new(ZR_NULL, MPI_COMM_WORLD, &world);
		null_op(z);
		*message = MPI_MESSAGE_NULL;
		*req = H(z);
		LEAVE(MPI_SUCCESS);
	}
	if (!ours_msg(*message))
		LEAVE(PMPI_Imrecv(buf, count, t, message, req));
	LEAVE(mrecv_start(buf, count, t, message, req));
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype t, MPI_Message *message,
	      MPI_Status *st)
{
	MPI_Request r;
	int ret;
	ENTER;

	if (*message == MPI_MESSAGE_NO_PROC) {
		*message = MPI_MESSAGE_NULL;
		__zcmpi_status_set(st, MPI_PROC_NULL, MPI_ANY_TAG, 0, false, 0);
		LEAVE(MPI_SUCCESS);
	}
	if (!ours_msg(*message))
		LEAVE(PMPI_Mrecv(buf, count, t, message, st));
	ret = mrecv_start(buf, count, t, message, &r);
	if (ret)
		LEAVE(ret);
	LEAVE(__zcmpi_zwait(&r, st));
}


/* ---- communicators ------------------------------------------------------ */

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *out)
{
	int ret = PMPI_Comm_dup(comm, out);

	if (ret == MPI_SUCCESS)
		zcomm_new(comm, *out);
	return ret;
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *out)
{
	int ret = PMPI_Comm_dup_with_info(comm, info, out);

	if (ret == MPI_SUCCESS)
		zcomm_new(comm, *out);
	return ret;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out)
{
	int ret = PMPI_Comm_split(comm, color, key, out);

	if (ret == MPI_SUCCESS)
		zcomm_new(comm, *out);
	return ret;
}

int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info,
			MPI_Comm *out)
{
	int ret = PMPI_Comm_split_type(comm, type, key, info, out);

	if (ret == MPI_SUCCESS)
		zcomm_new(comm, *out);
	return ret;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group g, MPI_Comm *out)
{
	int ret = PMPI_Comm_create(comm, g, out);

	if (ret == MPI_SUCCESS)
		zcomm_new(comm, *out);
	return ret;
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group g, int tag, MPI_Comm *out)
{
	int ret = PMPI_Comm_create_group(comm, g, tag, out);

	if (ret == MPI_SUCCESS)
		zcomm_new(comm, *out);
	return ret;
}

int MPI_Cart_create(MPI_Comm comm, int nd, const int dims[],
		    const int periods[], int reorder, MPI_Comm *out)
{
	int ret = PMPI_Cart_create(comm, nd, dims, periods, reorder, out);

	if (ret == MPI_SUCCESS)
		zcomm_new(comm, *out);
	return ret;
}

int MPI_Cart_sub(MPI_Comm comm, const int remain[], MPI_Comm *out)
{
	int ret = PMPI_Cart_sub(comm, remain, out);

	if (ret == MPI_SUCCESS)
		zcomm_new(comm, *out);
	return ret;
}

int MPI_Graph_create(MPI_Comm comm, int n, const int index[],
		     const int edges[], int reorder, MPI_Comm *out)
{
	int ret = PMPI_Graph_create(comm, n, index, edges, reorder, out);

	if (ret == MPI_SUCCESS)
		zcomm_new(comm, *out);
	return ret;
}

/* ---- memory ------------------------------------------------------------- */

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
	struct mem *m;
	void *p;

	if (!__zcmpi_ctx || size <= 0 ||
	    zcr_mem_alloc(__zcmpi_ctx, (size_t)size, &p))
		return PMPI_Alloc_mem(size, info, baseptr);
	m = malloc(sizeof(*m));
	if (!m) {
		zcr_mem_free(__zcmpi_ctx, p);
		return PMPI_Alloc_mem(size, info, baseptr);
	}
	pthread_mutex_lock(&__zcmpi_lock);
	m->p = p;
	m->next = mems;
	mems = m;
	pthread_mutex_unlock(&__zcmpi_lock);
	*(void **)baseptr = p;
	return MPI_SUCCESS;
}

int MPI_Free_mem(void *base)
{
	struct mem **pp, *m = NULL;

	pthread_mutex_lock(&__zcmpi_lock);
	for (pp = &mems; *pp; pp = &(*pp)->next)
		if ((*pp)->p == base) {
			m = *pp;
			*pp = m->next;
			break;
		}
	pthread_mutex_unlock(&__zcmpi_lock);
	if (!m)
		return PMPI_Free_mem(base);
	free(m);
	zcr_mem_free(__zcmpi_ctx, base);
	return MPI_SUCCESS;
}
