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
 * zcrecv context per rank; collectives, one-sided, I/O and everything on
 * other communicators stay with the real MPI. Design, rules and limits:
 * Documentation/mpi.md. Built once per MPI (mpicc, mpicc.mpich).
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
#include "core/config.h"
#include "zcmpi.h"

/* ---- state ------------------------------------------------------------ */

struct zcomm {
	uint32_t id;		/* communicator id on the wire */
	int rank, size;
	int *world;		/* comm rank -> world rank */
	int *local;		/* world rank -> comm rank, or -1 */
};

/* ZR_SSEND: only as what to start (a synchronous ZR_SEND). */
enum { ZR_FREE = 0, ZR_SEND, ZR_RECV, ZR_NULL, ZR_MSG, ZR_SSEND };

/* One of our requests: what MPI_Request handles of ours point at. */
struct zreq {
	int kind;
	bool done;		/* completed, status below */
	bool freed;		/* MPI_Request_free'd: release once done */
	bool cancelled;
	int err;		/* MPI error code of the completion */
	struct zcr_req *r;	/* NULL once completed */
	struct zcr_message *msg;	/* ZR_MSG: claimed by MPI_(I)mprobe */
	MPI_Comm comm;
	struct zcomm *zc;
	/* receive */
	void *buf;
	int count;
	MPI_Datatype type;
	void *tmp;		/* packed bytes (non-contiguous), or NULL */
	size_t cap;		/* bytes the receive takes */
	int src, tag;		/* status: comm rank, tag */
	uint64_t len;		/* status: bytes */
	int peer;		/* world rank named (send: dest) or -1 */
	int next;		/* free list */
	/*
	 * Persistent (MPI_*_init): the operation each MPI_Start starts.
	 * Inactive (not started, or completed by a Wait/Test) it stays
	 * allocated until MPI_Request_free.
	 */
	bool persistent;
	bool active;
	int pkind;		/* ZR_SEND, ZR_SSEND or ZR_RECV */
	const void *pbuf;
	int pcount, prank, ptag;
	MPI_Datatype ptype;
};

#define NREQ		(1 << 20)
#define FREQ_BASE	0x40000000	/* Fortran handles of ours */

static struct zcr_ctx *ctx;
static unsigned char *peer_used;	/* world ranks we sent to */
static struct zcomm world;
static int world_rank, world_size, keyval = MPI_KEYVAL_INVALID;
static uint32_t next_id = 1;
static struct zreq *pool;
static int free_head = -1, pool_top;
static unsigned int nfreed;	/* requests freed by the user, pending */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int depth;
static bool timed;		/* ZCRECV_REPORT=1: the report's layer time */
static uint64_t layer_ns;
static struct mem { void *p; struct mem *next; } *mems;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/*
 * Time spent in the layer: outermost wrapper only, and only for the
 * report line (two clock reads and a thread-local per call otherwise,
 * several per cent of a small message's round trip). timed is set once
 * in MPI_Init, before any wrapper that times runs.
 */
#define ENTER	uint64_t t_enter = timed && !depth++ ? now_ns() : 0
#define LEAVE(ret)							\
	do {								\
		int ret_ = (ret);					\
		if (timed && !--depth)					\
			__atomic_add_fetch(&layer_ns,			\
					   now_ns() - t_enter,		\
					   __ATOMIC_RELAXED);		\
		return ret_;						\
	} while (0)

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void die(const char *fmt, ...)
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

/* ---- request handles ---------------------------------------------------- */

/*
 * Handles of ours point into the pool: Open MPI's handles are pointers,
 * so ours are addresses in the pool; MPICH's are ints, ours carry a top
 * byte no MPICH handle has (one for requests, one for messages) and the
 * pool index.
 */
#ifdef OPEN_MPI
#define HANDLES(T, ours, Z, H, prefix)					\
static inline bool ours(T h)						\
{									\
	return pool && (char *)h >= (char *)pool &&			\
	       (char *)h < (char *)(pool + NREQ);			\
}									\
static inline struct zreq *Z(T h) { return (struct zreq *)h; }		\
static inline T H(struct zreq *z) { return (T)z; }
#else
#define HANDLES(T, ours, Z, H, prefix)					\
static inline bool ours(T h)						\
{									\
	return pool && ((unsigned int)h & 0xff000000U) == (prefix) &&	\
	       ((unsigned int)h & 0xffffffU) < NREQ;			\
}									\
static inline struct zreq *Z(T h)					\
{									\
	return &pool[(unsigned int)h & 0xffffffU];			\
}									\
static inline T H(struct zreq *z)					\
{									\
	return (T)((prefix) | (int)(z - pool));				\
}
#endif
HANDLES(MPI_Request, ours, Z, H, 0x01000000U)
HANDLES(MPI_Message, ours_msg, ZM, HM, 0x02000000U)

/*
 * The pool's free list is shared between threads only where they may
 * call the MPI at once (MPI_THREAD_MULTIPLE): otherwise its lock is two
 * pairs of calls per message for nothing.
 */
static bool threads;

static void pool_lock(void)
{
	if (threads)
		pthread_mutex_lock(&lock);
}

static void pool_unlock(void)
{
	if (threads)
		pthread_mutex_unlock(&lock);
}

static struct zreq *zreq_new(int kind, MPI_Comm comm, struct zcomm *zc)
{
	struct zreq *z = NULL;
	int i;

	pool_lock();
	if (free_head >= 0) {
		i = free_head;
		free_head = pool[i].next;
		z = &pool[i];
	} else if (pool_top < NREQ) {
		z = &pool[pool_top++];
	}
	pool_unlock();
	if (!z)
		die("more than %d requests pending", NREQ);
	memset(z, 0, sizeof(*z));
	z->kind = kind;
	z->comm = comm;
	z->zc = zc;
	z->peer = -1;
	return z;
}

static void zreq_release(struct zreq *z)
{
	free(z->tmp);
	z->kind = ZR_FREE;
	pool_lock();
	z->next = free_head;
	free_head = (int)(z - pool);
	pool_unlock();
}

/* ---- communicators ------------------------------------------------------ */

static struct zcomm *zcomm_of(MPI_Comm comm)
{
	struct zcomm *zc;
	int flag = 0;

	if (!ctx)
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
	zc->local = malloc((size_t)world_size * sizeof(int));
	in = calloc((size_t)zc->size, sizeof(int));
	if (!zc->world || !zc->local || !in)
		die("out of memory");
	for (i = 0; i < zc->size; i++)
		in[i] = i;
	PMPI_Comm_group(comm, &g);
	PMPI_Comm_group(MPI_COMM_WORLD, &wg);
	PMPI_Group_translate_ranks(g, zc->size, in, wg, zc->world);
	PMPI_Group_free(&g);
	PMPI_Group_free(&wg);
	free(in);
	for (i = 0; i < world_size; i++)
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

	if (!zcomm_of(parent) || comm == MPI_COMM_NULL)
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
		die("out of memory");
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

static int type_size(MPI_Datatype t)
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
static int comm_error(MPI_Comm comm, int code)
{
	PMPI_Comm_call_errhandler(comm, code);
	return code;
}

/* A zcrecv error as an MPI error code, said on stderr when not plain. */
static int mpi_code(int err, int kind, int peer)
{
	if (err == -EMSGSIZE)
		return MPI_ERR_TRUNCATE;
	fprintf(stderr, "zcrecv-mpi: rank %d: %s rank %d failed: %s\n",
		world_rank, what(kind), peer, strerror(-err));
	return MPI_ERR_OTHER;
}

/* ---- completion ------------------------------------------------------- */

/* Record how our request z completed: zcr_test/zcr_wait's ret and st. */
static void zreq_finish(struct zreq *z, int ret, const struct zcr_status *st)
{
	int n, pos = 0;

	z->r = NULL;
	z->done = true;
	if (z->kind == ZR_SEND) {
		if (ret < 0)
			z->err = mpi_code(ret, z->kind, z->peer);
		return;
	}
	if (ret == -ECANCELED) {
		z->cancelled = true;
		z->src = MPI_ANY_SOURCE;
		z->tag = MPI_ANY_TAG;
		z->len = 0;
		return;
	}
	z->src = st->source >= 0 && st->source < world_size ?
		 z->zc->local[st->source] : MPI_ANY_SOURCE;
	z->tag = st->tag;
	z->len = st->len;
	if (ret < 0 && ret != -EMSGSIZE) {
		z->err = mpi_code(ret, z->kind, st->source >= 0 ? st->source :
				  z->peer);
		return;
	}
	if (ret == -EMSGSIZE) {
		z->err = MPI_ERR_TRUNCATE;
		z->len = z->cap;
	}
	if (z->tmp) {
		n = type_size(z->type);
		n = n ? (int)(z->len / (uint64_t)n) : 0;
		if (PMPI_Unpack(z->tmp, (int)z->cap, &pos, z->buf, n,
				z->type, z->comm) != MPI_SUCCESS && !z->err)
			z->err = MPI_ERR_OTHER;
	}
}

/* Poll z once; true when it is done (its status recorded in z). */
static bool zreq_poll(struct zreq *z)
{
	struct zcr_status st;
	int ret;

	if (z->done)
		return true;
	ret = zcr_test(z->r, &st);
	if (!ret)
		return false;
	zreq_finish(z, ret == 1 ? 0 : ret, &st);
	return true;
}

static void status_set(MPI_Status *st, int src, int tag, uint64_t len,
		       bool cancelled, int err)
{
	if (st == MPI_STATUS_IGNORE)
		return;
	st->MPI_SOURCE = src;
	st->MPI_TAG = tag;
	st->MPI_ERROR = err;
	PMPI_Status_set_elements_x(st, MPI_BYTE, (MPI_Count)len);
	PMPI_Status_set_cancelled(st, cancelled);
}

/*
 * Hand out the status of done z; its MPI error code. A plain request is
 * released and *req becomes MPI_REQUEST_NULL; a persistent one becomes
 * inactive and *req stays (released only if MPI_Request_free'd).
 */
static int zreq_collect(struct zreq *z, MPI_Status *st, MPI_Request *req)
{
	int err = z->err;

	if (z->kind == ZR_RECV || z->kind == ZR_NULL)
		status_set(st, z->src, z->tag, z->len, z->cancelled, err);
	else
		status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, 0, false, err);
	if (z->persistent && !z->freed) {
		free(z->tmp);
		z->tmp = NULL;
		z->active = false;
		return err;
	}
	zreq_release(z);
	*req = MPI_REQUEST_NULL;
	return err;
}

static void empty_status(MPI_Status *st)
{
	status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, 0, false, MPI_SUCCESS);
}

/* A null request, or a persistent one of ours not started. */
static bool inactive(MPI_Request h)
{
	return h == MPI_REQUEST_NULL ||
	       (ours(h) && Z(h)->persistent && !Z(h)->active);
}

/* Requests the user freed before they completed: release the done ones. */
static void reap_freed(void)
{
	static pthread_mutex_t reaping = PTHREAD_MUTEX_INITIALIZER;
	int i;

	if (!__atomic_load_n(&nfreed, __ATOMIC_RELAXED))
		return;
	/*
	 * One reaper at a time under MPI_THREAD_MULTIPLE: two threads that
	 * both saw a freed request complete would release it twice, and the
	 * library, which reuses its requests, would hand one out twice.
	 * The others skip: the next call reaps what is left.
	 */
	if (threads && pthread_mutex_trylock(&reaping))
		return;
	for (i = 0; i < pool_top; i++) {
		struct zreq *z = &pool[i];

		if (z->kind != ZR_FREE && z->freed && zreq_poll(z)) {
			zreq_release(z);
			__atomic_sub_fetch(&nfreed, 1, __ATOMIC_RELAXED);
		}
	}
	if (threads)
		pthread_mutex_unlock(&reaping);
}

/* Wait a little for something to happen on the context. */
static void idle(void)
{
	zcr_progress(ctx, 1);
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
static void zreq_reset(struct zreq *z)
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
		return comm_error(comm, MPI_ERR_RANK);
	if (tag < 0)
		return comm_error(comm, MPI_ERR_TAG);
	if (count < 0)
		return comm_error(comm, MPI_ERR_COUNT);
	z->kind = ZR_SEND;
	z->peer = zc->world[dest];
	if (!contig(buf, count, t, &ptr, &bytes)) {
		PMPI_Pack_size(count, t, comm, &cap);
		z->tmp = malloc(cap ? (size_t)cap : 1);
		if (!z->tmp)
			die("out of memory");
		PMPI_Pack(buf, count, t, z->tmp, cap, &pos, comm);
		ptr = z->tmp;
		bytes = (size_t)pos;
	}
	ret = zcr_job_ep(ctx, z->peer, &ep);
	if (!ret && peer_used)
		peer_used[z->peer] = 1;
	if (!ret)
		ret = (sync ? zcr_issend_comm : zcr_isend_comm)(ep, zc->id, ptr,
								bytes, tag,
								&z->r);
	if (ret) {
		free(z->tmp);
		z->tmp = NULL;
		return comm_error(comm, mpi_code(ret, ZR_SEND, z->peer));
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
			die("out of memory");
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
	struct zcr_ep *ep;
	void *ptr;
	int ret, wsrc;

	if (src == MPI_PROC_NULL) {
		null_op(z);
		return MPI_SUCCESS;
	}
	if (src != MPI_ANY_SOURCE && (src < 0 || src >= zc->size))
		return comm_error(comm, MPI_ERR_RANK);
	if (tag < 0 && tag != MPI_ANY_TAG)
		return comm_error(comm, MPI_ERR_TAG);
	if (count < 0)
		return comm_error(comm, MPI_ERR_COUNT);
	wsrc = src == MPI_ANY_SOURCE ? ZCRECV_ANY_SOURCE : zc->world[src];
	z->peer = wsrc;
	ptr = recv_landing(z, buf, count, t);
	/*
	 * Dial the source now: should it die, the connection's loss fails
	 * this receive instead of leaving it waiting for ever.
	 */
	if (wsrc >= 0)
		zcr_job_ep(ctx, wsrc, &ep);
	ret = zcr_irecv_comm(ctx, zc->id, ptr, z->cap, wsrc,
			     tag == MPI_ANY_TAG ? ZCRECV_ANY_TAG : tag, &z->r);
	if (ret) {
		free(z->tmp);
		z->tmp = NULL;
		return comm_error(comm, mpi_code(ret, ZR_RECV, wsrc));
	}
	return MPI_SUCCESS;
}

/* Start a send or receive (kind) on z; an MPI error code. */
static int zreq_start(struct zreq *z, int kind, const void *buf, int count,
		      MPI_Datatype t, int rank, int tag)
{
	if (kind == ZR_SEND || kind == ZR_SSEND)
		return send_into(z, buf, count, t, rank, tag,
				 kind == ZR_SSEND);
	return recv_into(z, (void *)buf, count, t, rank, tag);
}

/* A new request of ours for a send or receive (kind) started at once. */
static int start_op(int kind, const void *buf, int count, MPI_Datatype t,
		    int rank, int tag, MPI_Comm comm, struct zcomm *zc,
		    MPI_Request *req)
{
	struct zreq *z = zreq_new(kind, comm, zc);
	int ret = zreq_start(z, kind, buf, count, t, rank, tag);

	if (ret) {
		zreq_release(z);
		return ret;
	}
	*req = H(z);
	return MPI_SUCCESS;
}

#define start_send(...)	start_op(ZR_SEND, __VA_ARGS__)
#define start_recv(...)	start_op(ZR_RECV, __VA_ARGS__)

/* Wait for our request *req and collect it; MPI error through comm. */
static int zwait(MPI_Request *req, MPI_Status *st)
{
	struct zreq *z = Z(*req);
	MPI_Comm comm = z->comm;
	int err;

	while (!z->done) {
		struct zcr_status zs;
		int ret = zcr_wait_timeout(z->r, &zs, 200);

		if (ret != -ETIMEDOUT)
			zreq_finish(z, ret, &zs);
	}
	err = zreq_collect(z, st, req);
	if (err)
		comm_error(comm, err);
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
		die("a ZCRECV_* variable has a bad value%s", quiet.u ?
		    " (ZCRECV_QUIET=1: zcinfo --env shows them)" : " (above)");
}

static void zc_init(void)
{
	enum { AUTO, PMIX, MPI, ENV };	/* ZCRECV_MPI_WIREUP's choices */
	struct zcr_ctx_attr a = { 0 };
	struct zcr_job_attr ja = { 0 };
	struct zcr_env_set env;
	int ret, how, level = MPI_THREAD_MULTIPLE;
	bool pmix;

	PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &world_size);
	env_check(&env);
	timed = env.v[ZCR_ENV_REPORT].u;
	PMPI_Query_thread(&level);
	threads = level == MPI_THREAD_MULTIPLE;
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
	ja.size = world_size;
	ja.allgather = mpi_allgather;
	a.progress_thread = env.v[ZCR_ENV_MPI_PROGRESS_THREAD].u;
	/* Peers closing at MPI_Finalize are no news; failures we say. */
	a.quiet = 1;
	ret = zcr_ctx_create_job(&a, sizeof(a), pmix ? NULL : &ja, sizeof(ja),
				 &ctx);
	if (ret)
		die("cannot wire up the job over zcrecv (%s)%s",
		    strerror(-ret), pmix ? ": no usable PMIx server; "
		    "ZCRECV_MPI_WIREUP=mpi exchanges the addresses through "
		    "MPI_Allgather instead" : "");
	peer_used = calloc((size_t)world_size, 1);
	zcr_ctx_job(ctx, &ret, NULL);
	if (ret != world_rank)
		die("the PMIx rank %d is not the MPI rank %d", ret, world_rank);
	world.id = 0;
	zcomm_fill(&world, MPI_COMM_WORLD);
	tfacts_init();
	PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, zcomm_delete, &keyval,
				NULL);
	pool = mmap(NULL, (size_t)NREQ * sizeof(*pool), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (pool == MAP_FAILED)
		die("cannot map the request table");
}

int MPI_Init(int *argc, char ***argv)
{
	int ret = PMPI_Init(argc, argv);

	if (ret == MPI_SUCCESS)
		zc_init();
	return ret;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int ret = PMPI_Init_thread(argc, argv, required, provided);

	if (ret == MPI_SUCCESS)
		zc_init();
	return ret;
}

/*
 * How many of the peers we sent to are carried by shared memory and how
 * many by TCP (zcr_job_ep() only hands out the endpoints the sends
 * dialled; asking for one dials nothing new then).
 */
static void peers_by_transport(unsigned int *shm, unsigned int *tcp)
{
	struct zcr_ep *ep;
	const char *msg;
	int r;

	*shm = *tcp = 0;
	for (r = 0; r < world_size; r++) {
		if (r == world_rank || !peer_used[r] ||
		    zcr_job_ep(ctx, r, &ep))
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
	uint64_t coll_calls, coll_bytes;

	/* Checked at MPI_Init: a bad value stopped the job there. */
	if (__zcr_env_get(ZCR_ENV_REPORT, false, &v) || !v.u ||
	    zcr_ctx_stats_sized(ctx, &s, sizeof(s)))
		return;
	peers_by_transport(&shm, &tcp);
	__zcmpi_coll_stats(&coll_calls, &coll_bytes);
	fprintf(stderr, "zcrecv-mpi: rank %d: msgs %llu sent %llu received, "
		"early %llu, hits %llu, remaps %llu, pages %llu, copied "
		"%llu B, backend %s, peers %u shm %u tcp, shared %llu, "
		"in layer %.3f s, collectives %llu calls %llu B, "
		"deferred %llu\n",
		world_rank,
		(unsigned long long)s.msgs_sent,
		(unsigned long long)s.msgs_recv,
		(unsigned long long)s.early, (unsigned long long)s.hits,
		(unsigned long long)s.remaps,
		(unsigned long long)s.pages_remapped,
		(unsigned long long)s.bytes_copied, s.backend_name, shm, tcp,
		(unsigned long long)s.shared_pulls, (double)layer_ns / 1e9,
		(unsigned long long)coll_calls, (unsigned long long)coll_bytes,
		(unsigned long long)s.deferred);
}

int MPI_Finalize(void)
{
	struct mem *m;

	if (ctx) {
		reap_freed();
		/*
		 * Everyone is done receiving: no message is still on its
		 * way when the connections close.
		 */
		PMPI_Barrier(MPI_COMM_WORLD);
		report();
		while ((m = mems)) {
			mems = m->next;
			free(m);
		}
		zcr_ctx_destroy(ctx);
		ctx = NULL;
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
	struct zcomm *zc = zcomm_of(comm);
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
	struct zcomm *zc = zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Issend(buf, count, t, dest, tag, comm, req));
	LEAVE(start_op(ZR_SSEND, buf, count, t, dest, tag, comm, zc, req));
}

int MPI_Ibsend(const void *buf, int count, MPI_Datatype t, int dest, int tag,
	       MPI_Comm comm, MPI_Request *req)
{
	struct zcomm *zc = zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Ibsend(buf, count, t, dest, tag, comm, req));
	LEAVE(start_send(buf, count, t, dest, tag, comm, zc, req));
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype t, int dest, int tag,
	       MPI_Comm comm, MPI_Request *req)
{
	struct zcomm *zc = zcomm_of(comm);
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
	return zwait(&r, MPI_STATUS_IGNORE);
}

int MPI_Send(const void *buf, int count, MPI_Datatype t, int dest, int tag,
	     MPI_Comm comm)
{
	struct zcomm *zc = zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Send(buf, count, t, dest, tag, comm));
	LEAVE(blocking_send(ZR_SEND, buf, count, t, dest, tag, comm, zc));
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype t, int dest, int tag,
	      MPI_Comm comm)
{
	struct zcomm *zc = zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Ssend(buf, count, t, dest, tag, comm));
	LEAVE(blocking_send(ZR_SSEND, buf, count, t, dest, tag, comm, zc));
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype t, int dest, int tag,
	      MPI_Comm comm)
{
	struct zcomm *zc = zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Bsend(buf, count, t, dest, tag, comm));
	LEAVE(blocking_send(ZR_SEND, buf, count, t, dest, tag, comm, zc));
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype t, int dest, int tag,
	      MPI_Comm comm)
{
	struct zcomm *zc = zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Rsend(buf, count, t, dest, tag, comm));
	LEAVE(blocking_send(ZR_SEND, buf, count, t, dest, tag, comm, zc));
}

int MPI_Irecv(void *buf, int count, MPI_Datatype t, int src, int tag,
	      MPI_Comm comm, MPI_Request *req)
{
	struct zcomm *zc = zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Irecv(buf, count, t, src, tag, comm, req));
	LEAVE(start_recv(buf, count, t, src, tag, comm, zc, req));
}

int MPI_Recv(void *buf, int count, MPI_Datatype t, int src, int tag,
	     MPI_Comm comm, MPI_Status *st)
{
	struct zcomm *zc = zcomm_of(comm);
	MPI_Request r;
	int ret;
	ENTER;

	if (!zc)
		LEAVE(PMPI_Recv(buf, count, t, src, tag, comm, st));
	ret = start_recv(buf, count, t, src, tag, comm, zc, &r);
	if (ret)
		LEAVE(ret);
	LEAVE(zwait(&r, st));
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest,
		 int stag, void *rbuf, int rcount, MPI_Datatype rtype,
		 int src, int rtag, MPI_Comm comm, MPI_Status *st)
{
	struct zcomm *zc = zcomm_of(comm);
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
		zwait(&rr, MPI_STATUS_IGNORE);
		LEAVE(ret);
	}
	ret2 = zwait(&sr, MPI_STATUS_IGNORE);
	ret = zwait(&rr, st);
	LEAVE(ret ? ret : ret2);
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype t, int dest,
			 int stag, int src, int rtag, MPI_Comm comm,
			 MPI_Status *st)
{
	struct zcomm *zc = zcomm_of(comm);
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
		die("out of memory");
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
		status_set(st, MPI_PROC_NULL, MPI_ANY_TAG, 0, false, 0);
		return MPI_SUCCESS;
	}
	if (src != MPI_ANY_SOURCE && (src < 0 || src >= zc->size))
		return comm_error(comm, MPI_ERR_RANK);
	if (tag < 0 && tag != MPI_ANY_TAG)
		return comm_error(comm, MPI_ERR_TAG);
	wsrc = src == MPI_ANY_SOURCE ? ZCRECV_ANY_SOURCE : zc->world[src];
	wtag = tag == MPI_ANY_TAG ? ZCRECV_ANY_TAG : tag;
	for (;;) {
		ret = message ? zcr_improbe(ctx, zc->id, wsrc, wtag, &m, &zs) :
		      zcr_iprobe(ctx, zc->id, wsrc, wtag, &zs);
		if (ret < 0)
			return comm_error(comm, ret == -ENOMEM ?
					  MPI_ERR_NO_MEM : MPI_ERR_ARG);
		if (ret || !block)
			break;
		idle();
	}
	*flag = ret;
	if (message && !ret)
		*message = MPI_MESSAGE_NULL;
	if (!ret)
		return MPI_SUCCESS;
	if (message) {
		z = zreq_new(ZR_MSG, comm, zc);
		z->msg = m;
		z->peer = zs.source;
		*message = HM(z);
	}
	status_set(st, zc->local[zs.source], zs.tag, zs.len, false, 0);
	return MPI_SUCCESS;
}

int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *st)
{
	struct zcomm *zc = zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Iprobe(src, tag, comm, flag, st));
	LEAVE(probe(src, tag, comm, zc, flag, NULL, st, false));
}

int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *st)
{
	struct zcomm *zc = zcomm_of(comm);
	int flag;
	ENTER;

	if (!zc)
		LEAVE(PMPI_Probe(src, tag, comm, st));
	LEAVE(probe(src, tag, comm, zc, &flag, NULL, st, true));
}

static bool any_ours(int n, const MPI_Request *reqs);

/* ---- matched probes ----------------------------------------------------- */

int MPI_Improbe(int src, int tag, MPI_Comm comm, int *flag,
		MPI_Message *message, MPI_Status *st)
{
	struct zcomm *zc = zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Improbe(src, tag, comm, flag, message, st));
	LEAVE(probe(src, tag, comm, zc, flag, message, st, false));
}

int MPI_Mprobe(int src, int tag, MPI_Comm comm, MPI_Message *message,
	       MPI_Status *st)
{
	struct zcomm *zc = zcomm_of(comm);
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

		zreq_release(z);
		return comm_error(comm, mpi_code(ret, ZR_RECV, -1));
	}
	*req = H(z);
	return MPI_SUCCESS;
}

int MPI_Imrecv(void *buf, int count, MPI_Datatype t, MPI_Message *message,
	       MPI_Request *req)
{
	struct zreq *z;
	ENTER;

	if (*message == MPI_MESSAGE_NO_PROC && ctx) {
		z = zreq_new(ZR_NULL, MPI_COMM_WORLD, &world);
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
		status_set(st, MPI_PROC_NULL, MPI_ANY_TAG, 0, false, 0);
		LEAVE(MPI_SUCCESS);
	}
	if (!ours_msg(*message))
		LEAVE(PMPI_Mrecv(buf, count, t, message, st));
	ret = mrecv_start(buf, count, t, message, &r);
	if (ret)
		LEAVE(ret);
	LEAVE(zwait(&r, st));
}

/* ---- persistent requests ------------------------------------------------ */

/* A persistent request of ours, inactive: MPI_Start starts it. */
static int persist(int kind, const void *buf, int count, MPI_Datatype t,
		   int rank, int tag, MPI_Comm comm, struct zcomm *zc,
		   MPI_Request *req)
{
	struct zreq *z;

	if (rank != MPI_PROC_NULL &&
	    !(kind == ZR_RECV && rank == MPI_ANY_SOURCE) &&
	    (rank < 0 || rank >= zc->size))
		return comm_error(comm, MPI_ERR_RANK);
	if (tag < 0 && !(kind == ZR_RECV && tag == MPI_ANY_TAG))
		return comm_error(comm, MPI_ERR_TAG);
	if (count < 0)
		return comm_error(comm, MPI_ERR_COUNT);
	z = zreq_new(kind, comm, zc);
	z->persistent = true;
	z->done = true;
	z->pkind = kind;
	z->pbuf = buf;
	z->pcount = count;
	z->ptype = t;
	z->prank = rank;
	z->ptag = tag;
	*req = H(z);
	return MPI_SUCCESS;
}

#define SEND_INIT(name, kind)						\
int MPI_##name(const void *buf, int count, MPI_Datatype t, int dest,	\
	       int tag, MPI_Comm comm, MPI_Request *req)		\
{									\
	struct zcomm *zc = zcomm_of(comm);				\
	ENTER;								\
									\
	if (!zc)							\
		LEAVE(PMPI_##name(buf, count, t, dest, tag, comm, req)); \
	LEAVE(persist(kind, buf, count, t, dest, tag, comm, zc, req));	\
}
SEND_INIT(Send_init, ZR_SEND)
SEND_INIT(Bsend_init, ZR_SEND)
SEND_INIT(Rsend_init, ZR_SEND)
SEND_INIT(Ssend_init, ZR_SSEND)

int MPI_Recv_init(void *buf, int count, MPI_Datatype t, int src, int tag,
		  MPI_Comm comm, MPI_Request *req)
{
	struct zcomm *zc = zcomm_of(comm);
	ENTER;

	if (!zc)
		LEAVE(PMPI_Recv_init(buf, count, t, src, tag, comm, req));
	LEAVE(persist(ZR_RECV, buf, count, t, src, tag, comm, zc, req));
}

int MPI_Start(MPI_Request *req)
{
	struct zreq *z;
	int ret;
	ENTER;

	if (!ours(*req))
		LEAVE(PMPI_Start(req));
	z = Z(*req);
	if (!z->persistent || z->active)
		LEAVE(comm_error(z->comm, MPI_ERR_REQUEST));
	zreq_reset(z);
	z->active = true;
	ret = zreq_start(z, z->pkind, z->pbuf, z->pcount, z->ptype, z->prank,
			 z->ptag);
	if (ret)
		z->active = false;
	LEAVE(ret);
}

int MPI_Startall(int n, MPI_Request reqs[])
{
	int i, ret;
	ENTER;

	if (!any_ours(n, reqs))
		LEAVE(PMPI_Startall(n, reqs));
	for (i = 0; i < n; i++) {
		ret = MPI_Start(&reqs[i]);
		if (ret)
			LEAVE(ret);
	}
	LEAVE(MPI_SUCCESS);
}

/* ---- completion calls ----------------------------------------------------- */

int MPI_Wait(MPI_Request *req, MPI_Status *st)
{
	int ret;
	ENTER;

	if (!ours(*req))
		LEAVE(PMPI_Wait(req, st));
	if (inactive(*req)) {
		empty_status(st);
		LEAVE(MPI_SUCCESS);
	}
	ret = zwait(req, st);
	reap_freed();
	LEAVE(ret);
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
	struct zreq *z;
	int ret;
	ENTER;

	if (!ours(*req))
		LEAVE(PMPI_Test(req, flag, st));
	if (inactive(*req)) {
		*flag = 1;
		empty_status(st);
		LEAVE(MPI_SUCCESS);
	}
	z = Z(*req);
	*flag = zreq_poll(z);
	if (!*flag)
		LEAVE(MPI_SUCCESS);
	{
		MPI_Comm comm = z->comm;

		ret = zreq_collect(z, st, req);
		if (ret)
			comm_error(comm, ret);
	}
	reap_freed();
	LEAVE(ret);
}

static MPI_Status *st_at(MPI_Status *sts, int i)
{
	return sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &sts[i];
}

/*
 * Poll every request once: ours through zcrecv, the real MPI's through
 * PMPI_Test. Complete the done ones into sts (done[i] set) when take;
 * returns how many are done, *active how many were not null.
 */
static int poll_all(int n, MPI_Request *reqs, MPI_Status *sts, char *done,
		    int *active, int *firsterr, MPI_Comm *errcomm, bool take,
		    bool one)
{
	int i, ndone = 0, flag, ret;

	*active = 0;
	for (i = 0; i < n; i++) {
		if (done[i] || inactive(reqs[i]))
			continue;
		(*active)++;
		if (ours(reqs[i])) {
			struct zreq *z = Z(reqs[i]);

			if (!zreq_poll(z))
				continue;
			if (!take) {
				ndone++;
				continue;
			}
			if (z->err && !*firsterr) {
				*firsterr = z->err;
				*errcomm = z->comm;
			}
			zreq_collect(z, st_at(sts, i), &reqs[i]);
		} else {
			if (!take)
				continue;
			ret = PMPI_Test(&reqs[i], &flag, st_at(sts, i));
			if (ret && !*firsterr) {
				*firsterr = ret;
				*errcomm = MPI_COMM_WORLD;
			}
			if (!flag && !ret)
				continue;
		}
		done[i] = 1;
		ndone++;
		if (one)
			break;
	}
	return ndone;
}

static bool any_ours(int n, const MPI_Request *reqs)
{
	int i;

	for (i = 0; i < n; i++)
		if (ours(reqs[i]))
			return true;
	return false;
}

/* Are any of ours among reqs not done yet? */
static bool any_ours_left(int n, const MPI_Request *reqs, const char *done)
{
	int i;

	for (i = 0; i < n; i++)
		if (!done[i] && !inactive(reqs[i]) && ours(reqs[i]))
			return true;
	return false;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
	int i, active, err = 0, ret = MPI_SUCCESS;
	MPI_Comm ecomm = MPI_COMM_WORLD;
	char *done;
	ENTER;

	if (!any_ours(n, reqs))
		LEAVE(PMPI_Waitall(n, reqs, sts));
	done = calloc((size_t)n + 1, 1);
	if (!done)
		die("out of memory");
	for (i = 0; i < n; i++)
		if (inactive(reqs[i]))
			empty_status(st_at(sts, i));
	for (;;) {
		poll_all(n, reqs, sts, done, &active, &err, &ecomm, true,
			 false);
		if (!active)
			break;
		if (!any_ours_left(n, reqs, done)) {
			for (i = 0; i < n; i++)
				if (!done[i] && !inactive(reqs[i])) {
					int r = PMPI_Wait(&reqs[i],
							  st_at(sts, i));

					if (r && !err)
						err = r;
				}
			break;
		}
		idle();
	}
	free(done);
	reap_freed();
	if (err) {
		ret = sts == MPI_STATUSES_IGNORE ? err : MPI_ERR_IN_STATUS;
		comm_error(ecomm, ret);
	}
	LEAVE(ret);
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status sts[])
{
	int i, active, err = 0, ret = MPI_SUCCESS, nreal = 0, rflag = 1;
	MPI_Comm ecomm = MPI_COMM_WORLD;
	MPI_Request *real;
	MPI_Status *rst = NULL;
	char *done;
	int *map;
	ENTER;

	if (!any_ours(n, reqs))
		LEAVE(PMPI_Testall(n, reqs, flag, sts));
	/* All or nothing: first see whether ours are all done. */
	for (i = 0; i < n; i++)
		if (!inactive(reqs[i]) && ours(reqs[i]) &&
		    !zreq_poll(Z(reqs[i]))) {
			*flag = 0;
			LEAVE(MPI_SUCCESS);
		}
	real = calloc((size_t)n + 1, sizeof(*real));
	map = calloc((size_t)n + 1, sizeof(*map));
	done = calloc((size_t)n + 1, 1);
	if (sts != MPI_STATUSES_IGNORE)
		rst = calloc((size_t)n + 1, sizeof(*rst));
	if (!real || !map || !done || (sts != MPI_STATUSES_IGNORE && !rst))
		die("out of memory");
	for (i = 0; i < n; i++)
		if (!ours(reqs[i]) && reqs[i] != MPI_REQUEST_NULL) {
			map[nreal] = i;
			real[nreal++] = reqs[i];
		}
	if (nreal)
		ret = PMPI_Testall(nreal, real, &rflag,
				   rst ? rst : MPI_STATUSES_IGNORE);
	*flag = rflag;
	if (rflag) {
		for (i = 0; i < nreal; i++) {
			reqs[map[i]] = real[i];
			done[map[i]] = 1;
			if (rst)
				sts[map[i]] = rst[i];
		}
		for (i = 0; i < n; i++)
			if (inactive(reqs[i]) && !done[i])
				empty_status(st_at(sts, i));
		poll_all(n, reqs, sts, done, &active, &err, &ecomm, true,
			 false);
	}
	free(real);
	free(map);
	free(done);
	free(rst);
	if (err) {
		ret = sts == MPI_STATUSES_IGNORE ? err : MPI_ERR_IN_STATUS;
		comm_error(ecomm, ret);
	}
	LEAVE(ret);
}

static int any_some(int n, MPI_Request reqs[], int *outcount, int idx[],
		    MPI_Status sts[], bool one, bool block, int *flag)
{
	int i, active, err = 0, k = 0, ndone;
	MPI_Comm ecomm = MPI_COMM_WORLD;
	MPI_Status *tmp = NULL;
	char *done;

	done = calloc((size_t)n + 1, 1);
	if (one)
		tmp = calloc((size_t)n + 1, sizeof(*tmp));
	if (!done || (one && !tmp))
		die("out of memory");
	for (;;) {
		ndone = poll_all(n, reqs, one ? tmp : sts, done, &active,
				 &err, &ecomm, true, one);
		if (ndone || !active || !block)
			break;
		idle();
	}
	for (i = 0; i < n; i++) {
		if (!done[i])
			continue;
		if (one) {
			idx[0] = i;
			if (sts != MPI_STATUSES_IGNORE)
				sts[0] = tmp[i];
		} else {
			if (sts != MPI_STATUSES_IGNORE && k != i)
				sts[k] = sts[i];
			idx[k] = i;
		}
		k++;
	}
	if (flag)
		*flag = k > 0 || !active;
	if (!active && !k) {
		*outcount = MPI_UNDEFINED;
		if (one) {
			idx[0] = MPI_UNDEFINED;
			empty_status(sts);
		}
	} else {
		*outcount = k;
	}
	free(done);
	free(tmp);
	reap_freed();
	if (err) {
		int ret = one || sts == MPI_STATUSES_IGNORE ? err :
			  MPI_ERR_IN_STATUS;

		comm_error(ecomm, ret);
		return ret;
	}
	return MPI_SUCCESS;
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *st)
{
	int cnt;
	ENTER;

	if (!any_ours(n, reqs))
		LEAVE(PMPI_Waitany(n, reqs, index, st));
	LEAVE(any_some(n, reqs, &cnt, index, st, true, true, NULL));
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag,
		MPI_Status *st)
{
	int cnt, ret;
	ENTER;

	if (!any_ours(n, reqs))
		LEAVE(PMPI_Testany(n, reqs, index, flag, st));
	ret = any_some(n, reqs, &cnt, index, st, true, false, flag);
	if (!*flag)
		*index = MPI_UNDEFINED;
	LEAVE(ret);
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int idx[],
		 MPI_Status sts[])
{
	ENTER;

	if (!any_ours(n, reqs))
		LEAVE(PMPI_Waitsome(n, reqs, outcount, idx, sts));
	LEAVE(any_some(n, reqs, outcount, idx, sts, false, true, NULL));
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int idx[],
		 MPI_Status sts[])
{
	int flag;
	ENTER;

	if (!any_ours(n, reqs))
		LEAVE(PMPI_Testsome(n, reqs, outcount, idx, sts));
	LEAVE(any_some(n, reqs, outcount, idx, sts, false, false, &flag));
}

int MPI_Request_free(MPI_Request *req)
{
	struct zreq *z;
	ENTER;

	if (!ours(*req))
		LEAVE(PMPI_Request_free(req));
	z = Z(*req);
	*req = MPI_REQUEST_NULL;
	if ((z->persistent && !z->active) || zreq_poll(z)) {
		zreq_release(z);
	} else {
		z->freed = true;
		__atomic_add_fetch(&nfreed, 1, __ATOMIC_RELAXED);
	}
	LEAVE(MPI_SUCCESS);
}

/*
 * Receives that no message matched yet are cancelled. Sends never are (MPI
 * lets a cancel fail): the send completes normally, its status says not
 * cancelled, and the message is delivered; never cancelled and delivered.
 */
int MPI_Cancel(MPI_Request *req)
{
	struct zreq *z;
	ENTER;

	if (!ours(*req))
		LEAVE(PMPI_Cancel(req));
	z = Z(*req);
	if (z->kind == ZR_RECV && !z->done && z->r)
		zcr_cancel(z->r);
	LEAVE(MPI_SUCCESS);
}

int MPI_Request_get_status(MPI_Request req, int *flag, MPI_Status *st)
{
	struct zreq *z;
	ENTER;

	if (!ours(req))
		LEAVE(PMPI_Request_get_status(req, flag, st));
	if (inactive(req)) {
		*flag = 1;
		empty_status(st);
		LEAVE(MPI_SUCCESS);
	}
	z = Z(req);
	*flag = zreq_poll(z);
	if (*flag)
		status_set(st, z->kind == ZR_SEND ? MPI_ANY_SOURCE : z->src,
			   z->kind == ZR_SEND ? MPI_ANY_TAG : z->tag,
			   z->kind == ZR_SEND ? 0 : z->len, z->cancelled,
			   z->err);
	LEAVE(MPI_SUCCESS);
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

	if (!ctx || size <= 0 || zcr_mem_alloc(ctx, (size_t)size, &p))
		return PMPI_Alloc_mem(size, info, baseptr);
	m = malloc(sizeof(*m));
	if (!m) {
		zcr_mem_free(ctx, p);
		return PMPI_Alloc_mem(size, info, baseptr);
	}
	pthread_mutex_lock(&lock);
	m->p = p;
	m->next = mems;
	mems = m;
	pthread_mutex_unlock(&lock);
	*(void **)baseptr = p;
	return MPI_SUCCESS;
}

int MPI_Free_mem(void *base)
{
	struct mem **pp, *m = NULL;

	pthread_mutex_lock(&lock);
	for (pp = &mems; *pp; pp = &(*pp)->next)
		if ((*pp)->p == base) {
			m = *pp;
			*pp = m->next;
			break;
		}
	pthread_mutex_unlock(&lock);
	if (!m)
		return PMPI_Free_mem(base);
	free(m);
	zcr_mem_free(ctx, base);
	return MPI_SUCCESS;
}

/* ---- Fortran bindings of Open MPI ---------------------------------------- */

/*
 * Open MPI's Fortran bindings (mpif.h and `use mpi`, gfortran names) call
 * PMPI_* directly, past the C wrappers above: these entry points send the
 * Fortran calls through them. MPICH's Fortran bindings call the C MPI_*
 * functions and need nothing. Our requests have Fortran handles from
 * FREQ_BASE on; the real MPI's are converted with MPI_Request_f2c/c2f.
 */
#ifdef OPEN_MPI
#define FREAL(name, ...)						\
	static void (*real)(__VA_ARGS__);				\
	if (!real)							\
		*(void **)&real = dlsym(RTLD_NEXT, name);		\
	if (!real)							\
		die("%s not found", name)

static MPI_Fint *f_status_ignore, *f_statuses_ignore;

/* Fortran handles: ours from FREQ_BASE on, the real MPI's converted. */
#define F_HANDLES(T, f2c, c2f, ours, Z, H, real_f2c, real_c2f)		\
static T f2c(MPI_Fint f)						\
{									\
	if (pool && f >= FREQ_BASE && f - FREQ_BASE < pool_top)		\
		return H(&pool[f - FREQ_BASE]);				\
	return real_f2c(f);						\
}									\
static MPI_Fint c2f(T r)						\
{									\
	if (ours(r))							\
		return FREQ_BASE + (MPI_Fint)(Z(r) - pool);		\
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
	if (*ierr == MPI_SUCCESS && !ctx)
		zc_init();
}

void mpi_init_thread_(MPI_Fint *req, MPI_Fint *prov, MPI_Fint *ierr)
{
	FREAL("mpi_init_thread_", MPI_Fint *, MPI_Fint *, MPI_Fint *);
	real(req, prov, ierr);
	f_lookup();
	if (*ierr == MPI_SUCCESS && !ctx)
		zc_init();
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
		die("out of memory");
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
		die("out of memory");
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
#endif
