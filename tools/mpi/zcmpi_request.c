// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcmpi_request.c - libzcrecv-mpi.so's requests: the pool that MPI_Request
 * and MPI_Message handles of ours point into, how a request completes and
 * is collected, persistent requests (MPI_*_init, MPI_Start), and the
 * completion calls (MPI_Wait, MPI_Test and their all/any/some forms,
 * MPI_Request_free, MPI_Cancel, MPI_Request_get_status). zcmpi.c starts
 * the operations; Documentation/mpi.md.
 */
#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zcrecv.h"
#include "base/zero.h"
#include "zcmpi.h"

struct zreq *__zcmpi_pool;
static int free_head = -1;
int __zcmpi_pool_top;
static unsigned int nfreed;	/* requests freed by the user, pending */
pthread_mutex_t __zcmpi_lock = PTHREAD_MUTEX_INITIALIZER;


/* MPI_THREAD_MULTIPLE: the pool's free list is shared (zcmpi_mlock()). */
bool __zcmpi_threads;

struct zreq *__zcmpi_zreq_new(int kind, MPI_Comm comm, struct zcomm *zc)
{
	struct zreq *z = NULL;
	int i;

	zcmpi_mlock(&__zcmpi_lock);
	if (free_head >= 0) {
		i = free_head;
		free_head = __zcmpi_pool[i].next;
		z = &__zcmpi_pool[i];
	} else if (__zcmpi_pool_top < NREQ) {
		z = &__zcmpi_pool[__zcmpi_pool_top++];
	}
	zcmpi_munlock(&__zcmpi_lock);
	if (!z)
		__zcmpi_die("more than %d requests pending", NREQ);
	zcr_zero(z, sizeof(*z));
	z->kind = kind;
	z->comm = comm;
	z->zc = zc;
	z->peer = -1;
	return z;
}

void __zcmpi_zreq_release(struct zreq *z)
{
	free(z->tmp);
	if (z->part)
		__zcmpi_part_free(z);
	if (z->preq) {
		zcr_preq_free(z->preq);
		z->preq = NULL;
	}
	z->kind = ZR_FREE;
	zcmpi_mlock(&__zcmpi_lock);
	z->next = free_head;
	free_head = (int)(z - __zcmpi_pool);
	zcmpi_munlock(&__zcmpi_lock);
}

/* ---- completion ------------------------------------------------------- */

/* Record how our request z completed: zcr_test/zcr_wait's ret and st. */
void __zcmpi_zreq_finish(struct zreq *z, int ret, const struct zcr_status *st)
{
	int n, pos = 0;

	z->r = NULL;
	z->done = true;
	if (z->kind == ZR_SEND) {
		if (ret < 0)
			z->err = __zcmpi_mpi_code(ret, z->kind, z->peer);
		return;
	}
	if (ret == -ECANCELED) {
		z->cancelled = true;
		z->src = MPI_ANY_SOURCE;
		z->tag = MPI_ANY_TAG;
		z->len = 0;
		return;
	}
	z->src = st->source >= 0 && st->source < __zcmpi_world_size ?
		 z->zc->local[st->source] : MPI_ANY_SOURCE;
	z->tag = st->tag;
	z->len = st->len;
	if (ret < 0 && ret != -EMSGSIZE) {
		z->err = __zcmpi_mpi_code(ret, z->kind, st->source >= 0 ?
					  st->source : z->peer);
		return;
	}
	if (ret == -EMSGSIZE) {
		z->err = MPI_ERR_TRUNCATE;
		z->len = z->cap;
	}
	if (z->tmp) {
		n = __zcmpi_type_size(z->type);
		n = n ? (int)(z->len / (uint64_t)n) : 0;
		if (PMPI_Unpack(z->tmp, (int)z->cap, &pos, z->buf, n,
				z->type, z->comm) != MPI_SUCCESS && !z->err)
			z->err = MPI_ERR_OTHER;
	}
}

/*
 * Poll z once; true when it is done (its status recorded in z). A
 * collective's schedule is advanced as far as it goes.
 */
static bool zreq_poll(struct zreq *z)
{
	struct zcr_status st;
	int ret;

	if (z->done)
		return true;
	if (z->part)
		return __zcmpi_part_poll(z);
	if (z->kind == ZR_COLL)
		return __zcmpi_coll_poll(z);
	ret = zcr_test_sized(z->r, &st, sizeof(st));
	if (!ret)
		return false;
	__zcmpi_zreq_finish(z, ret == 1 ? 0 : ret, &st);
	return true;
}

bool __zcmpi_zreq_poll(struct zreq *z)
{
	return zreq_poll(z);
}

/* Wait up to ms for send or receive z; true when it is done. */
bool __zcmpi_zreq_wait_ms(struct zreq *z, int ms)
{
	struct zcr_status st;
	int ret;

	if (z->done)
		return true;
	ret = zcr_wait_sized(z->r, &st, sizeof(st), ms);
	if (ret == -ETIMEDOUT)
		return false;
	__zcmpi_zreq_finish(z, ret, &st);
	return true;
}

void __zcmpi_status_set(MPI_Status *st, int src, int tag, uint64_t len,
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
int __zcmpi_zreq_collect(struct zreq *z, MPI_Status *st, MPI_Request *req)
{
	int err = z->err;

	if (z->kind == ZR_RECV || z->kind == ZR_NULL)
		__zcmpi_status_set(st, z->src, z->tag, z->len, z->cancelled,
				   err);
	else
		__zcmpi_status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, 0, false,
				   err);
	if (z->persistent && !z->freed) {
		free(z->tmp);
		z->tmp = NULL;
		z->active = false;
		return err;
	}
	__zcmpi_zreq_release(z);
	*req = MPI_REQUEST_NULL;
	return err;
}

static void empty_status(MPI_Status *st)
{
	__zcmpi_status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, 0, false,
			   MPI_SUCCESS);
}

/* A null request, or a persistent one of ours not started. */
static bool inactive(MPI_Request h)
{
	return h == MPI_REQUEST_NULL ||
	       (ours(h) && Z(h)->persistent && !Z(h)->active);
}

/* Requests the user freed before they completed: release the done ones. */
void __zcmpi_reap_freed(void)
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
	if (__zcmpi_threads && pthread_mutex_trylock(&reaping))
		return;
	for (i = 0; i < __zcmpi_pool_top; i++) {
		struct zreq *z = &__zcmpi_pool[i];

		if (z->kind != ZR_FREE && z->freed && zreq_poll(z)) {
			__zcmpi_zreq_release(z);
			__atomic_sub_fetch(&nfreed, 1, __ATOMIC_RELAXED);
		}
	}
	if (__zcmpi_threads)
		pthread_mutex_unlock(&reaping);
}

/*
 * Wait a little for something to happen on the context; the schedules
 * of nonblocking collectives move on meanwhile.
 */
void __zcmpi_idle(void)
{
	__zcmpi_part_progress();
	zcr_progress(__zcmpi_ctx, 1);
	if (__atomic_load_n(&__zcmpi_coll_running, __ATOMIC_RELAXED))
		__zcmpi_coll_progress();
}

static bool any_ours(int n, const MPI_Request *reqs);

/*
 * Nothing of reqs done yet: wait a little. On a partitioned request of
 * ours, in the library (its wake-up is the request's own; see
 * __zcmpi_part_idle()), else on the context.
 */
static void idle_on(int n, const MPI_Request *reqs, const char *done)
{
	int i;

	for (i = 0; i < n; i++)
		if (!done[i] && ours(reqs[i]) && Z(reqs[i])->part &&
		    Z(reqs[i])->active && __zcmpi_part_idle(Z(reqs[i]), 1))
			return;
	__zcmpi_idle();
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
		return __zcmpi_comm_error(comm, MPI_ERR_RANK);
	if (tag < 0 && !(kind == ZR_RECV && tag == MPI_ANY_TAG))
		return __zcmpi_comm_error(comm, MPI_ERR_TAG);
	if (count < 0)
		return __zcmpi_comm_error(comm, MPI_ERR_COUNT);
	z = __zcmpi_zreq_new(kind, comm, zc);
	z->persistent = true;
	z->done = true;
	z->pkind = kind;
	z->pbuf = buf;
	z->pcount = count;
	z->ptype = t;
	z->prank = rank;
	z->ptag = tag;
	__zcmpi_zreq_bind(z);
	*req = H(z);
	return MPI_SUCCESS;
}

#define SEND_INIT(name, kind)						\
int MPI_##name(const void *buf, int count, MPI_Datatype t, int dest,	\
	       int tag, MPI_Comm comm, MPI_Request *req)		\
{									\
	struct zcomm *zc = __zcmpi_zcomm_of(comm);			\
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
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
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
		LEAVE(__zcmpi_comm_error(z->comm, MPI_ERR_REQUEST));
	if (z->part)
		LEAVE(__zcmpi_part_start(z));
	__zcmpi_zreq_reset(z);
	z->active = true;
	if (z->preq)
		ret = __zcmpi_zreq_start_bound(z);
	else
		ret = __zcmpi_zreq_start(z, z->pkind, z->pbuf, z->pcount,
					 z->ptype, z->prank, z->ptag);
	if (ret)
		z->active = false;
	LEAVE(ret);
}

/*
 * A done flag per request, on the caller's stack for up to DONE_ON_STACK
 * requests (a malloc and a free per call were a tenth of the layer's
 * part of a small message's MPI_Waitall).
 */
#define DONE_ON_STACK	64

static char *done_flags(char *stack, int n)
{
	char *done;

	if (n < DONE_ON_STACK)
		return zcr_zero(stack, (size_t)n + 1);
	done = calloc((size_t)n + 1, 1);
	if (!done)
		__zcmpi_die("out of memory");
	return done;
}

static void done_flags_put(char *done, char *stack)
{
	if (done != stack)
		free(done);
}

/*
 * A bound standard send of ours small enough to go into the peer's ring
 * within its start (an eager cell; bigger ones may be announced).
 */
#define EARLY_SEND_MAX	4096

static bool early_send(MPI_Request r)
{
	struct zreq *z;

	if (!ours(r))
		return false;
	z = Z(r);
	return z->persistent && !z->active && !z->part && z->preq &&
	       z->pkind == ZR_SEND && z->pbytes <= EARLY_SEND_MAX;
}

/*
 * MPI_Startall starts its requests "in some arbitrary order" (MPI 4.0,
 * 3.9): the small bound sends first, in their order, then the rest in
 * theirs. A ping-pong's or a halo's receive started before its send
 * would put the receive's posting (a request, the lock twice) on the
 * message's way to the peer; started after it, a reply that already
 * came is taken within the start with no request (zcr_start_test).
 */
int MPI_Startall(int n, MPI_Request reqs[])
{
	char *early, stack[DONE_ON_STACK];
	int i, ret = MPI_SUCCESS;
	ENTER;

	if (!any_ours(n, reqs))
		LEAVE(PMPI_Startall(n, reqs));
	early = done_flags(stack, n);
	for (i = 0; i < n && !ret; i++)
		if ((early[i] = early_send(reqs[i])))
			ret = MPI_Start(&reqs[i]);
	for (i = 0; i < n && !ret; i++)
		if (!early[i])
			ret = MPI_Start(&reqs[i]);
	done_flags_put(early, stack);
	LEAVE(ret);
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
	ret = __zcmpi_zwait(req, st);
	__zcmpi_reap_freed();
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

		ret = __zcmpi_zreq_collect(z, st, req);
		if (ret)
			__zcmpi_comm_error(comm, ret);
	}
	__zcmpi_reap_freed();
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
			__zcmpi_zreq_collect(z, st_at(sts, i), &reqs[i]);
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
	char *done, stack[DONE_ON_STACK];
	ENTER;

	if (!any_ours(n, reqs))
		LEAVE(PMPI_Waitall(n, reqs, sts));
	done = done_flags(stack, n);
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
		idle_on(n, reqs, done);
	}
	done_flags_put(done, stack);
	__zcmpi_reap_freed();
	if (err) {
		ret = sts == MPI_STATUSES_IGNORE ? err : MPI_ERR_IN_STATUS;
		__zcmpi_comm_error(ecomm, ret);
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
		__zcmpi_die("out of memory");
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
		__zcmpi_comm_error(ecomm, ret);
	}
	LEAVE(ret);
}

static int any_some(int n, MPI_Request reqs[], int *outcount, int idx[],
		    MPI_Status sts[], bool one, bool block, int *flag)
{
	int i, active, err = 0, k = 0, ndone;
	MPI_Comm ecomm = MPI_COMM_WORLD;
	MPI_Status *tmp = NULL;
	char *done, stack[DONE_ON_STACK];

	done = done_flags(stack, n);
	if (one)
		tmp = calloc((size_t)n + 1, sizeof(*tmp));
	if (one && !tmp)
		__zcmpi_die("out of memory");
	for (;;) {
		ndone = poll_all(n, reqs, one ? tmp : sts, done, &active,
				 &err, &ecomm, true, one);
		if (ndone || !active || !block)
			break;
		idle_on(n, reqs, done);
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
	done_flags_put(done, stack);
	free(tmp);
	__zcmpi_reap_freed();
	if (err) {
		int ret = one || sts == MPI_STATUSES_IGNORE ? err :
			  MPI_ERR_IN_STATUS;

		__zcmpi_comm_error(ecomm, ret);
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
		__zcmpi_zreq_release(z);
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
	if (*flag && (z->kind == ZR_RECV || z->kind == ZR_NULL))
		__zcmpi_status_set(st, z->src, z->tag, z->len, z->cancelled,
				   z->err);
	else if (*flag)
		__zcmpi_status_set(st, MPI_ANY_SOURCE, MPI_ANY_TAG, 0, false,
				   z->err);
	LEAVE(MPI_SUCCESS);
}
