/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * zcmpi.h - what the files of libzcrecv-mpi.so share: zcmpi.c (state,
 * communicators, data types, starting operations, MPI_Init/Finalize, the
 * point-to-point calls), zcmpi_request.c (the request pool and its
 * handles, completion, persistent requests, the Wait/Test calls),
 * zcmpi_part.c (MPI-4 partitioned communication), zcmpi_fortran.c
 * (Open MPI's Fortran bindings) and zcmpi_coll.c. Nothing
 * here is exported: the library's only interface is the MPI calls it
 * wraps.
 */
#ifndef ZCMPI_H
#define ZCMPI_H

#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "zcrecv.h"

#define ZCMPI_HIDDEN __attribute__((visibility("hidden")))

/*
 * Collectives (zcmpi_coll.c): calls and bytes this rank received, of
 * those left to the MPI and of those carried by zcrecv.
 */
struct zcmpi_coll_stats {
	uint64_t mpi_calls, mpi_bytes;
	uint64_t zc_calls, zc_bytes;
};
ZCMPI_HIDDEN void __zcmpi_coll_stats(struct zcmpi_coll_stats *s);
struct zcr_env_set;
/* At MPI_Init, collective over MPI_COMM_WORLD: rank 0's settings. */
ZCMPI_HIDDEN void __zcmpi_coll_init(const struct zcr_env_set *env);
/*
 * Nonblocking collectives carried by zcrecv: a ZR_COLL request runs a
 * schedule of sends, receives and local steps (struct zsched).
 * coll_poll advances z's and says whether it is done (z->done, z->err
 * set); coll_wait advances it until it is; coll_progress advances every
 * schedule still running (any wait of the layer calls it, so a schedule
 * moves while its rank waits for something else); coll_drain runs them
 * all to the end (MPI_Finalize, for those the program freed).
 */
struct zreq;
ZCMPI_HIDDEN bool __zcmpi_coll_poll(struct zreq *z);
ZCMPI_HIDDEN void __zcmpi_coll_wait(struct zreq *z);
ZCMPI_HIDDEN void __zcmpi_coll_progress(void);
ZCMPI_HIDDEN void __zcmpi_coll_drain(void);
struct zcomm;
/* Forget zc's landing hints (its communicator is freed); all of them. */
ZCMPI_HIDDEN void __zcmpi_coll_hints_free(struct zcomm *zc);
ZCMPI_HIDDEN void __zcmpi_coll_hints_free_all(void);
extern ZCMPI_HIDDEN unsigned int __zcmpi_coll_running;

/* ---- state (zcmpi.c) ---------------------------------------------------- */

struct zcomm {
	uint32_t id;		/* communicator id on the wire */
	int rank, size;
	int *world;		/* comm rank -> world rank */
	int *local;		/* world rank -> comm rank, or -1 */
	/*
	 * Carried collectives started on it: their tag. Every member calls
	 * the collectives of a communicator in one order, so all agree.
	 */
	uint32_t coll_seq;
	/*
	 * Where its last carried all-to-all received each part
	 * (zcmpi_coll.c, struct chints): the next one's early parts are
	 * staged at those offsets. NULL: none.
	 */
	struct chints *hints;
	/*
	 * A collective's copy (zcmpi_coll.c: id in the reserved space, tag
	 * the call's number): its receives are never made again, so the
	 * library's predictor does not learn them (ZCRECV_RECV_NO_LEARN).
	 */
	bool coll;
};

/* ZR_SSEND: only as what to start (a synchronous ZR_SEND). */
enum { ZR_FREE = 0, ZR_SEND, ZR_RECV, ZR_NULL, ZR_MSG, ZR_SSEND, ZR_COLL };

/* One of our requests: what MPI_Request handles of ours point at. */
struct zreq {
	int kind;
	bool done;		/* completed, status below */
	bool freed;		/* MPI_Request_free'd: release once done */
	bool cancelled;
	int err;		/* MPI error code of the completion */
	struct zcr_req *r;	/* NULL once completed */
	struct zcr_message *msg;	/* ZR_MSG: claimed by MPI_(I)mprobe */
	struct zsched *coll;	/* ZR_COLL: its schedule, NULL once done */
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
	/*
	 * The library's persistent request, bound once (contiguous data,
	 * a real peer): MPI_Start starts it without looking anything up
	 * again, and a receive's early arrivals are staged at its offset.
	 */
	struct zcr_preq *preq;
	size_t pbytes;
	/*
	 * Partitioned (MPI_Psend_init, MPI_Precv_init; zcmpi_part.c): a
	 * persistent request whose rounds zcmpi_part.c starts and polls.
	 */
	struct zpart *part;
};

#define NREQ		(1 << 20)
#define FREQ_BASE	0x40000000	/* Fortran handles of ours */

/* zcmpi.c */
extern ZCMPI_HIDDEN struct zcr_ctx *__zcmpi_ctx;
extern ZCMPI_HIDDEN int __zcmpi_world_size;
extern ZCMPI_HIDDEN __thread int __zcmpi_depth;
extern ZCMPI_HIDDEN bool __zcmpi_timed;
extern ZCMPI_HIDDEN uint64_t __zcmpi_layer_ns;
ZCMPI_HIDDEN void __zcmpi_die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
ZCMPI_HIDDEN struct zcomm *__zcmpi_zcomm_of(MPI_Comm comm);
ZCMPI_HIDDEN int __zcmpi_type_size(MPI_Datatype t);
ZCMPI_HIDDEN bool __zcmpi_contig(const void *buf, int count, MPI_Datatype t,
				 void **ptr, size_t *bytes);
ZCMPI_HIDDEN int __zcmpi_comm_error(MPI_Comm comm, int code);
ZCMPI_HIDDEN int __zcmpi_mpi_code(int err, int kind, int peer);
ZCMPI_HIDDEN void __zcmpi_zreq_reset(struct zreq *z);
ZCMPI_HIDDEN void __zcmpi_zreq_bind(struct zreq *z);
ZCMPI_HIDDEN int __zcmpi_zreq_start_bound(struct zreq *z);
ZCMPI_HIDDEN int __zcmpi_zreq_start(struct zreq *z, int kind, const void *buf,
				    int count, MPI_Datatype t, int rank,
				    int tag);
ZCMPI_HIDDEN int __zcmpi_zwait(MPI_Request *req, MPI_Status *st);
ZCMPI_HIDDEN int __zcmpi_zwait_quiet(MPI_Request *req, MPI_Status *st);
ZCMPI_HIDDEN void __zcmpi_zc_init(void);
ZCMPI_HIDDEN int __zcmpi_send_ep(int peer, struct zcr_ep **ep);

/* zcmpi_request.c */
extern ZCMPI_HIDDEN struct zreq *__zcmpi_pool;
extern ZCMPI_HIDDEN int __zcmpi_pool_top;
extern ZCMPI_HIDDEN pthread_mutex_t __zcmpi_lock;
extern ZCMPI_HIDDEN bool __zcmpi_threads;

ZCMPI_HIDDEN struct zreq *__zcmpi_zreq_new(int kind, MPI_Comm comm,
					   struct zcomm *zc);
ZCMPI_HIDDEN void __zcmpi_zreq_release(struct zreq *z);
ZCMPI_HIDDEN void __zcmpi_zreq_finish(struct zreq *z, int ret,
				      const struct zcr_status *st);
ZCMPI_HIDDEN void __zcmpi_status_set(MPI_Status *st, int src, int tag,
				     uint64_t len, bool cancelled, int err);
ZCMPI_HIDDEN int __zcmpi_zreq_collect(struct zreq *z, MPI_Status *st,
				      MPI_Request *req);
ZCMPI_HIDDEN bool __zcmpi_zreq_poll(struct zreq *z);
ZCMPI_HIDDEN bool __zcmpi_zreq_wait_ms(struct zreq *z, int ms);
ZCMPI_HIDDEN void __zcmpi_reap_freed(void);

/*
 * Locks shared between threads only where they may call the MPI at once
 * (MPI_THREAD_MULTIPLE): otherwise two calls per use for nothing.
 */
static inline void zcmpi_mlock(pthread_mutex_t *m)
{
	if (__zcmpi_threads)
		pthread_mutex_lock(m);
}

static inline void zcmpi_munlock(pthread_mutex_t *m)
{
	if (__zcmpi_threads)
		pthread_mutex_unlock(m);
}

ZCMPI_HIDDEN void __zcmpi_idle(void);

/* zcmpi_part.c */
struct zpart;
ZCMPI_HIDDEN bool __zcmpi_part_poll(struct zreq *z);
ZCMPI_HIDDEN int __zcmpi_part_start(struct zreq *z);
ZCMPI_HIDDEN void __zcmpi_part_wait(struct zreq *z);
ZCMPI_HIDDEN bool __zcmpi_part_idle(struct zreq *z, int timeout_ms);
ZCMPI_HIDDEN void __zcmpi_part_progress(void);
ZCMPI_HIDDEN void __zcmpi_part_free(struct zreq *z);

static inline uint64_t now_ns(void)
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
#define ENTER								\
	uint64_t t_enter = __zcmpi_timed && !__zcmpi_depth++ ? now_ns() : 0
#define LEAVE(ret)							\
	do {								\
		int ret_ = (ret);					\
		if (__zcmpi_timed && !--__zcmpi_depth)			\
			__atomic_add_fetch(&__zcmpi_layer_ns,		\
					   now_ns() - t_enter,		\
					   __ATOMIC_RELAXED);		\
		return ret_;						\
	} while (0)

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
	return __zcmpi_pool && (char *)h >= (char *)__zcmpi_pool &&	\
	       (char *)h < (char *)(__zcmpi_pool + NREQ);		\
}									\
static inline struct zreq *Z(T h) { return (struct zreq *)h; }		\
static inline T H(struct zreq *z) { return (T)z; }
#else
#define HANDLES(T, ours, Z, H, prefix)					\
static inline bool ours(T h)						\
{									\
	return __zcmpi_pool &&						\
	       ((unsigned int)h & 0xff000000U) == (prefix) &&		\
	       ((unsigned int)h & 0xffffffU) < NREQ;			\
}									\
static inline struct zreq *Z(T h)					\
{									\
	return &__zcmpi_pool[(unsigned int)h & 0xffffffU];		\
}									\
static inline T H(struct zreq *z)					\
{									\
	return (T)((prefix) | (int)(z - __zcmpi_pool));			\
}
#endif
HANDLES(MPI_Request, ours, Z, H, 0x01000000U)
HANDLES(MPI_Message, ours_msg, ZM, HM, 0x02000000U)

#endif
