// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcmpi_coll.c - the collectives of libzcrecv-mpi. MPI_Alltoall(v,w),
 * MPI_Allgather(v), MPI_Bcast, MPI_Gather(v), MPI_Scatter(v), the
 * nonblocking MPI_Ialltoall, MPI_Iallgather, MPI_Ibcast and, of a
 * predefined type, MPI_Reduce, MPI_Allreduce, MPI_Iallreduce,
 * MPI_Reduce_scatter(_block), MPI_Scan and MPI_Exscan of a carried
 * communicator go over zcrecv point-to-point from a size up, and
 * MPI_Barrier and MPI_Ibarrier when asked for (Documentation/mpi.md,
 * "Collectives"); the nonblocking ones as schedules their requests
 * advance (struct zsched);
 * every other collective, and those below their size, pass through to
 * PMPI unchanged. Both kinds are counted: how many calls and how many
 * bytes this rank received through them, for the report at MPI_Finalize.
 *
 * The rule that keeps a job from deadlocking: whether a call goes over
 * zcrecv or to the MPI is decided from values every rank of the call
 * agrees on (a part's size in bytes fixed by the type signature; for
 * MPI_Alltoallv, whose counts differ per rank, the largest part over all
 * ranks, learnt by one PMPI_Allreduce; the settings of rank 0), never
 * from anything local such as a datatype's layout. One call never splits
 * between the two.
 *
 * Carried calls match in a space of their own: communicator id
 * zc->id | 0x80000000 (carried ids are below 0x7fffffff), tag the
 * communicator's count of carried collectives, so they never meet the
 * program's messages nor each other.
 *
 * "Bytes received" is the payload this rank's buffers get from other
 * ranks: a broadcast's count at a non-root, a gather's other ranks' parts
 * at the root, an all-to-all's parts from every other rank; a reduction's
 * result counts once (the algorithm decides how often it really moves).
 * Calls on intercommunicators are counted, their bytes are not; the
 * neighbourhood collectives are not counted.
 * Open MPI's Fortran bindings call PMPI_* directly: zcmpi_fortran.c
 * sends them here.
 */
#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "zcmpi.h"

/* The reserved matching space of carried collectives. */
#define COLL_ID		0x80000000U
/* The largest message the library takes by default (zcr_ctx_attr). */
#define PART_MAX	(1ULL << 30)

static struct zcmpi_coll_stats stats;

/* Rank 0's ZCRECV_MPI_COLL* (so every rank decides alike). */
static struct {
	uint64_t on, alltoall_min, allgather_min, bcast_min;
	uint64_t gather_min, scatter_min, reduce_min, allreduce_min;
	uint64_t reduce_scatter_min, scan_min, barrier, allreduce_rsag_max;
	uint64_t hints;
} set;

void __zcmpi_coll_init(const struct zcr_env_set *env)
{
	set.on = env->v[ZCR_ENV_MPI_COLL].u;
	set.alltoall_min = env->v[ZCR_ENV_MPI_COLL_ALLTOALL_MIN].u;
	set.allgather_min = env->v[ZCR_ENV_MPI_COLL_ALLGATHER_MIN].u;
	set.bcast_min = env->v[ZCR_ENV_MPI_COLL_BCAST_MIN].u;
	set.gather_min = env->v[ZCR_ENV_MPI_COLL_GATHER_MIN].u;
	set.scatter_min = env->v[ZCR_ENV_MPI_COLL_SCATTER_MIN].u;
	set.reduce_min = env->v[ZCR_ENV_MPI_COLL_REDUCE_MIN].u;
	set.allreduce_min = env->v[ZCR_ENV_MPI_COLL_ALLREDUCE_MIN].u;
	set.reduce_scatter_min = env->v[ZCR_ENV_MPI_COLL_REDUCE_SCATTER_MIN].u;
	set.scan_min = env->v[ZCR_ENV_MPI_COLL_SCAN_MIN].u;
	set.barrier = env->v[ZCR_ENV_MPI_COLL_BARRIER].u;
	set.hints = env->v[ZCR_ENV_MPI_COLL_HINTS].u;
	set.allreduce_rsag_max = env->v[ZCR_ENV_MPI_COLL_ALLREDUCE_RSAG_MAX].u;
	PMPI_Bcast(&set, sizeof(set), MPI_BYTE, 0, MPI_COMM_WORLD);
}

void __zcmpi_coll_stats(struct zcmpi_coll_stats *s)
{
	s->mpi_calls = __atomic_load_n(&stats.mpi_calls, __ATOMIC_RELAXED);
	s->mpi_bytes = __atomic_load_n(&stats.mpi_bytes, __ATOMIC_RELAXED);
	s->zc_calls = __atomic_load_n(&stats.zc_calls, __ATOMIC_RELAXED);
	s->zc_bytes = __atomic_load_n(&stats.zc_bytes, __ATOMIC_RELAXED);
}

/* A call left to the MPI. */
static void note(uint64_t bytes)
{
	__atomic_add_fetch(&stats.mpi_calls, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&stats.mpi_bytes, bytes, __ATOMIC_RELAXED);
}

/* A call carried by zcrecv. */
static void note_zc(uint64_t bytes)
{
	__atomic_add_fetch(&stats.zc_calls, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&stats.zc_bytes, bytes, __ATOMIC_RELAXED);
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

/* ---- carried collectives ------------------------------------------------ */

/*
 * The communicator if a call whose parts have part bytes goes over
 * zcrecv (min: its collective's threshold), else NULL. part must be a
 * value every rank of the call agrees on.
 */
static struct zcomm *carry(MPI_Comm comm, uint64_t part, uint64_t min)
{
	if (!set.on || part < min || part > PART_MAX)
		return NULL;
	return __zcmpi_zcomm_of(comm);
}

/* One carried call: its requests (ours) and its first error. */
struct cop {
	MPI_Comm comm;
	struct zcomm cz;	/* the communicator, in the reserved space */
	int tag;
	int n;
	MPI_Request *req;
	int err;
	bool said;		/* err went through the error handler */
};

static void op_init(struct cop *op, MPI_Comm comm, struct zcomm *zc,
		    int nreq)
{
	uint32_t seq = __atomic_fetch_add(&zc->coll_seq, 1, __ATOMIC_RELAXED);

	op->comm = comm;
	op->cz = *zc;
	op->cz.id = zc->id | COLL_ID;
	op->cz.coll = true;
	/* Wraps after 2^31 calls: by then no message of the old one moves. */
	op->tag = (int)(seq & ZCRECV_TAG_MAX);
	op->n = 0;
	op->err = 0;
	op->said = false;
	op->req = malloc((size_t)(nreq > 0 ? nreq : 1) * sizeof(*op->req));
	if (!op->req)
		__zcmpi_die("out of memory");
}

static void op_fail(struct cop *op, int err, bool said)
{
	if (err && !op->err) {
		op->err = err;
		op->said = said;
	}
}

/* Start a send or receive (kind) of the call; its index, or -1. */
static int op_start(struct cop *op, int kind, const void *buf, int count,
		    MPI_Datatype t, int rank)
{
	struct zreq *z = __zcmpi_zreq_new(kind, op->comm, &op->cz);
	int ret = __zcmpi_zreq_start(z, kind, buf, count, t, rank, op->tag);

	if (ret) {
		/* Said through the handler by the start already. */
		__zcmpi_zreq_release(z);
		op_fail(op, ret, true);
		return -1;
	}
	op->req[op->n] = H(z);
	return op->n++;
}

/* Complete request i of the call (once; -1 and done ones are skipped). */
static void op_wait(struct cop *op, int i)
{
	if (i < 0 || op->req[i] == MPI_REQUEST_NULL)
		return;
	op_fail(op, __zcmpi_zwait_quiet(&op->req[i], MPI_STATUS_IGNORE),
		false);
}

/*
 * Complete the call. After an error its receives still pending are
 * cancelled: their senders may never come. An MPI error code, said
 * through the communicator's handler once.
 */
static int op_end(struct cop *op)
{
	int i;

	for (i = 0; i < op->n; i++) {
		struct zreq *z;

		if (op->req[i] == MPI_REQUEST_NULL)
			continue;
		z = Z(op->req[i]);
		if (op->err && z->kind == ZR_RECV && !z->done && z->r)
			zcr_cancel(z->r);
		op_wait(op, i);
	}
	free(op->req);
	if (op->err && !op->said)
		__zcmpi_comm_error(op->comm, op->err);
	return op->err;
}

/*
 * Where each part of a collective lies: counts (of the call's type) and
 * byte offsets from the buffer, so the calls without v and those with
 * share one algorithm.
 */
struct parts {
	const int *count;
	MPI_Aint *off;
	int *own;		/* counts, when the call gave one for all */
	const MPI_Datatype *type;	/* MPI_Alltoallw's, else NULL */
};

static MPI_Aint extent(MPI_Datatype t)
{
	MPI_Aint lb = 0, ext = 0;

	PMPI_Type_get_extent(t, &lb, &ext);
	return ext;
}

/* Parts of n ranks: counts[i] (or count for all when counts is NULL). */
static void parts_of(struct parts *pt, int n, const int *counts, int count,
		     const int *displs, MPI_Datatype t)
{
	MPI_Aint ext = extent(t);
	int i;

	pt->own = NULL;
	pt->type = NULL;
	pt->off = malloc((size_t)n * sizeof(*pt->off));
	if (!counts) {
		pt->own = malloc((size_t)n * sizeof(*pt->own));
		if (pt->own)
			for (i = 0; i < n; i++)
				pt->own[i] = count;
		counts = pt->own;
	}
	if (!pt->off || !counts)
		__zcmpi_die("out of memory");
	pt->count = counts;
	for (i = 0; i < n; i++)
		pt->off[i] = (displs ? (MPI_Aint)displs[i] :
			      (MPI_Aint)i * count) * ext;
}

static void parts_free(struct parts *pt)
{
	free(pt->off);
	free(pt->own);
}

/*
 * Parts of MPI_Alltoallw: counts[i] of types[i] at displs[i] bytes.
 */
static void parts_w(struct parts *pt, int n, const int *counts,
		    const int *displs, const MPI_Datatype *types)
{
	int i;

	pt->own = NULL;
	pt->count = counts;
	pt->type = types;
	pt->off = malloc((size_t)n * sizeof(*pt->off));
	if (!pt->off)
		__zcmpi_die("out of memory");
	for (i = 0; i < n; i++)
		pt->off[i] = displs[i];
}

/* Part i of pt at buf. */
static char *at(const void *buf, const struct parts *pt, int i)
{
	return (char *)buf + pt->off[i];
}

/* The type of part i: its own (MPI_Alltoallw), else the call's t. */
static MPI_Datatype ty(const struct parts *pt, MPI_Datatype t, int i)
{
	return pt->type ? pt->type[i] : t;
}

/*
 * Bytes of one memcpy() in copy_bytes(). A part copied in pieces of this
 * size took 10% less time than in one call: a rank's own 4 MiB part
 * 155-179 us against 173-204 in the carried all-to-all, a 4 MiB copy
 * alone 61.5 us against 65.3 at best (benchmarks.md, History "The
 * carried all-to-all and all-gather against stock, call by call").
 */
#define COPY_PIECE	(128 * 1024)

/* n bytes from s to r, which may overlap. */
static void copy_bytes(void *r, const void *s, size_t n)
{
	const char *from = s;
	char *to = r;
	size_t o;

	if (from < to + n && to < from + n) {
		memmove(to, from, n);
		return;
	}
	for (o = 0; o < n; o += COPY_PIECE)
		memcpy(to + o, from + o,
		       n - o < COPY_PIECE ? n - o : COPY_PIECE);
}

/* This rank's own part: scount of st at s into rcount of rt at r. */
static int copy_self(const void *s, int scount, MPI_Datatype st, void *r,
		     int rcount, MPI_Datatype rt, MPI_Comm comm)
{
	size_t sb, rb;
	void *sp, *rp, *tmp;
	int cap = 0, pos = 0, upos = 0, n, size;

	if (__zcmpi_contig(s, scount, st, &sp, &sb) &&
	    __zcmpi_contig(r, rcount, rt, &rp, &rb)) {
		if (sb > rb)
			return MPI_ERR_TRUNCATE;
		if (sb && sp != rp)
			copy_bytes(rp, sp, sb);
		return MPI_SUCCESS;
	}
	PMPI_Pack_size(scount, st, comm, &cap);
	tmp = malloc(cap ? (size_t)cap : 1);
	if (!tmp)
		__zcmpi_die("out of memory");
	PMPI_Pack(s, scount, st, tmp, cap, &pos, comm);
	size = __zcmpi_type_size(rt);
	n = size ? pos / size : 0;
	if (n > rcount) {
		free(tmp);
		return MPI_ERR_TRUNCATE;
	}
	PMPI_Unpack(tmp, pos, &upos, r, n, rt, comm);
	free(tmp);
	return MPI_SUCCESS;
}

/*
 * Landing hints of all-to-all receives. A part that arrives before its
 * rank has entered the call (its receive not posted) would be deferred or
 * staged at no particular page offset, and then copied into the receive.
 * Programs call an all-to-all with the same receive buffer again and
 * again (an FFT's transpose, a sort's exchange), so after a carried call
 * the parts' places are kept as persistent receives of the library that
 * are never started: a receive known in advance (zcr_recv_init_comm()),
 * of any tag in the communicator's collective space, from each peer.
 * An early part of the next call is staged at its place's page offset and,
 * when that call names the same place, lands by remap; where it names
 * another, the part is copied as before. They only place messages: the
 * call's own receives still match them.
 */
struct chint {
	void *buf;
	size_t bytes;
	struct zcr_preq *preq;
};

struct chints {
	struct chints *next, **pprev;	/* on all_hints */
	struct zcomm *zc;
	int n;
	struct chint h[];
};

static struct chints *all_hints;
static pthread_mutex_t hints_lock = PTHREAD_MUTEX_INITIALIZER;

static void hint_drop(struct chint *h)
{
	if (h->preq)
		zcr_preq_free(h->preq);
	h->preq = NULL;
	h->buf = NULL;
	h->bytes = 0;
}

static void hints_free_locked(struct chints *hs)
{
	int i;

	for (i = 0; i < hs->n; i++)
		hint_drop(&hs->h[i]);
	*hs->pprev = hs->next;
	if (hs->next)
		hs->next->pprev = hs->pprev;
	hs->zc->hints = NULL;
	free(hs);
}

void __zcmpi_coll_hints_free(struct zcomm *zc)
{
	pthread_mutex_lock(&hints_lock);
	/* After MPI_Finalize's free_all the library's context is gone. */
	if (zc->hints && __zcmpi_ctx)
		hints_free_locked(zc->hints);
	pthread_mutex_unlock(&hints_lock);
}

void __zcmpi_coll_hints_free_all(void)
{
	pthread_mutex_lock(&hints_lock);
	while (all_hints)
		hints_free_locked(all_hints);
	pthread_mutex_unlock(&hints_lock);
}

/*
 * Keep where the carried all-to-all on zc (collective space id) that
 * just ended received each part: rp at rbuf, of type rt. Parts that are
 * not one contiguous run of bytes get no hint.
 */
static void hints_keep(struct zcomm *zc, uint32_t id, void *rbuf,
		       const struct parts *rp, MPI_Datatype rt)
{
	struct chints *hs;
	size_t bytes;
	void *ptr;
	int i;

	if (!set.hints || rp->type)
		return;
	pthread_mutex_lock(&hints_lock);
	hs = zc->hints;
	if (!hs) {
		hs = calloc(1, sizeof(*hs) + (size_t)zc->size * sizeof(hs->h[0]));
		if (!hs) {
			pthread_mutex_unlock(&hints_lock);
			return;		/* only a loss of speed */
		}
		hs->zc = zc;
		hs->n = zc->size;
		hs->next = all_hints;
		hs->pprev = &all_hints;
		if (all_hints)
			all_hints->pprev = &hs->next;
		all_hints = hs;
		zc->hints = hs;
	}
	for (i = 0; i < hs->n; i++) {
		struct chint *h = &hs->h[i];

		if (i == zc->rank ||
		    !__zcmpi_contig(at(rbuf, rp, i), rp->count[i], rt, &ptr,
				    &bytes) || !bytes) {
			hint_drop(h);
			continue;
		}
		if (h->preq && h->buf == ptr && h->bytes == bytes)
			continue;
		hint_drop(h);
		if (zcr_recv_init_comm(__zcmpi_ctx, id, ptr, bytes,
				       zc->world[i], ZCRECV_ANY_TAG, 0,
				       &h->preq)) {
			h->preq = NULL;
			continue;
		}
		h->buf = ptr;
		h->bytes = bytes;
	}
	pthread_mutex_unlock(&hints_lock);
}

/*
 * Pairwise exchange: every receive is posted first (each part's address
 * is known at the call, so early arrivals are staged at its offset), then
 * the sends in a rotating order, rank + 1 first, so that no rank is every
 * other's first. In place: the parts to send are packed first and go as
 * bytes (a packed message meets a typed receive, Documentation/mpi.md).
 * Parts of MPI_Alltoallw carry their own types (st, rt unused then).
 */
static int alltoallv_zc(const void *sbuf, const struct parts *sp,
			MPI_Datatype st, void *rbuf, const struct parts *rp,
			MPI_Datatype rt, MPI_Comm comm, struct zcomm *zc)
{
	int p = zc->size, me = zc->rank, i, k, cap = 0, c, pos = 0;
	bool in_place = sbuf == MPI_IN_PLACE;
	char *packed = NULL;
	int *poff = NULL;
	struct cop op;

	if (in_place) {
		poff = malloc((size_t)(p + 1) * sizeof(*poff));
		if (!poff)
			__zcmpi_die("out of memory");
		for (i = 0; i < p; i++) {
			c = 0;
			if (i != me)
				PMPI_Pack_size(rp->count[i], ty(rp, rt, i),
					       comm, &c);
			cap += c;
		}
		packed = malloc(cap ? (size_t)cap : 1);
		if (!packed)
			__zcmpi_die("out of memory");
		for (i = 0; i < p; i++) {
			poff[i] = pos;
			if (i != me)
				PMPI_Pack(at(rbuf, rp, i), rp->count[i],
					  ty(rp, rt, i), packed, cap, &pos,
					  comm);
		}
		poff[p] = pos;
	}
	op_init(&op, comm, zc, 2 * p);
	/* In the order they come: rank - 1 sends to us first. */
	for (k = 1; k < p; k++) {
		i = (me - k + p) % p;
		op_start(&op, ZR_RECV, at(rbuf, rp, i), rp->count[i],
			 ty(rp, rt, i), i);
	}
	for (k = 1; k < p; k++) {
		i = (me + k) % p;
		if (in_place)
			op_start(&op, ZR_SEND, packed + poff[i],
				 poff[i + 1] - poff[i], MPI_BYTE, i);
		else
			op_start(&op, ZR_SEND, at(sbuf, sp, i), sp->count[i],
				 ty(sp, st, i), i);
	}
	/* After the sends: the peers take their parts while this one copies. */
	if (!in_place)
		op_fail(&op, copy_self(at(sbuf, sp, me), sp->count[me],
				       ty(sp, st, me), at(rbuf, rp, me),
				       rp->count[me], ty(rp, rt, me), comm),
			false);
	c = op_end(&op);
	if (!c && !in_place)
		hints_keep(zc, op.cz.id, rbuf, rp, rt);
	free(packed);
	free(poff);
	return c;
}

/* A ring's neighbours, and room for the indices of its p receives. */
static int *ring_of(const struct zcomm *zc, int *left, int *right)
{
	int *ri = malloc((size_t)zc->size * sizeof(*ri));

	if (!ri)
		__zcmpi_die("out of memory");
	*left = (zc->rank - 1 + zc->size) % zc->size;
	*right = (zc->rank + 1) % zc->size;
	return ri;
}

/*
 * Ring: at step k a rank sends part (rank - k) to rank + 1 and receives
 * part (rank - k - 1) from rank - 1. Every receive is posted first (one
 * source, one tag: they match in the order posted); the part received at
 * one step is forwarded at the next.
 */
static int allgatherv_zc(const void *sbuf, int scount, MPI_Datatype st,
			 void *rbuf, const struct parts *rp, MPI_Datatype rt,
			 MPI_Comm comm, struct zcomm *zc)
{
	int p = zc->size, me = zc->rank, left, right, k, b, prev = -1, ret;
	struct cop op;
	int *ri;

	ri = ring_of(zc, &left, &right);
	op_init(&op, comm, zc, 2 * p);
	for (k = 0; k < p - 1; k++) {
		b = (me - k - 1 + 2 * p) % p;
		ri[k] = op_start(&op, ZR_RECV, at(rbuf, rp, b), rp->count[b],
				 rt, left);
	}
	/*
	 * This rank's own part goes first, straight from the send buffer
	 * (the same type signature as its place in rbuf), and is copied
	 * into rbuf while the right neighbour takes it.
	 */
	if (sbuf != MPI_IN_PLACE && p > 1) {
		op_start(&op, ZR_SEND, sbuf, scount, st, right);
		prev = ri[0];
	}
	if (sbuf != MPI_IN_PLACE)
		op_fail(&op, copy_self(sbuf, scount, st, at(rbuf, rp, me),
				       rp->count[me], rt, comm), false);
	for (k = sbuf != MPI_IN_PLACE ? 1 : 0; k < p - 1; k++) {
		b = (me - k + 2 * p) % p;
		op_wait(&op, prev);
		op_start(&op, ZR_SEND, at(rbuf, rp, b), rp->count[b], rt,
			 right);
		prev = ri[k];
	}
	ret = op_end(&op);
	free(ri);
	return ret;
}

/*
 * Binomial tree from root: a rank receives once from its parent, then
 * sends to its children, the farthest first.
 */
static int bcast_zc(void *buf, int count, MPI_Datatype t, int root,
		    MPI_Comm comm, struct zcomm *zc)
{
	int p = zc->size, vr = (zc->rank - root + p) % p, mask;
	struct cop op;

	op_init(&op, comm, zc, 33);
	for (mask = 1; mask < p; mask <<= 1)
		if (vr & mask) {
			op_wait(&op, op_start(&op, ZR_RECV, buf, count, t,
					      (vr - mask + root) % p));
			break;
		}
	for (mask >>= 1; mask > 0; mask >>= 1)
		if (vr + mask < p)
			op_start(&op, ZR_SEND, buf, count, t,
				 (vr + mask + root) % p);
	return op_end(&op);
}

/*
 * Linear gather (kind ZR_RECV at the root) or scatter (ZR_SEND): the
 * root's parts are at all, laid out by ap, of type at; this rank's part
 * is count of t at one. A gathering root posts a receive for every other
 * rank's part at its offset first (early arrivals are staged there),
 * then copies its own; a scattering root sends every other rank its part.
 * The others send or receive their one part. In place (one is
 * MPI_IN_PLACE at the root) the root's part stays where it is.
 */
static int linear_zc(int kind, void *all, const struct parts *ap,
		     MPI_Datatype at_, void *one, int count, MPI_Datatype t,
		     int root, MPI_Comm comm, struct zcomm *zc)
{
	int p = zc->size, k, i;
	struct cop op;

	op_init(&op, comm, zc, p);
	if (zc->rank != root) {
		op_start(&op, kind == ZR_RECV ? ZR_SEND : ZR_RECV, one, count,
			 t, root);
		return op_end(&op);
	}
	for (k = 1; k < p; k++) {
		i = (root + k) % p;
		op_start(&op, kind, at(all, ap, i), ap->count[i], at_, i);
	}
	if (one != MPI_IN_PLACE && kind == ZR_RECV)
		op_fail(&op, copy_self(one, count, t, at(all, ap, root),
				       ap->count[root], at_, comm), false);
	else if (one != MPI_IN_PLACE)
		op_fail(&op, copy_self(at(all, ap, root), ap->count[root], at_,
				       one, count, t, comm), false);
	return op_end(&op);
}

/* Linear gather of scount of st at sbuf into the root's parts rp. */
static int gatherv_zc(const void *sbuf, int scount, MPI_Datatype st,
		      void *rbuf, const struct parts *rp, MPI_Datatype rt,
		      int root, MPI_Comm comm, struct zcomm *zc)
{
	return linear_zc(ZR_RECV, rbuf, rp, rt, (void *)sbuf, scount, st,
			 root, comm, zc);
}

/* Linear scatter of the root's parts sp into rcount of rt at rbuf. */
static int scatterv_zc(const void *sbuf, const struct parts *sp,
		       MPI_Datatype st, void *rbuf, int rcount,
		       MPI_Datatype rt, int root, MPI_Comm comm,
		       struct zcomm *zc)
{
	return linear_zc(ZR_SEND, (void *)sbuf, sp, st, rbuf, rcount, rt,
			 root, comm, zc);
}

/* ---- reductions --------------------------------------------------------- */

/*
 * A reduction works on whole vectors of a predefined type laid out by its
 * extent; the operation itself is PMPI_Reduce_local, so every predefined
 * operation on every type the MPI defines it for, and user-defined ones,
 * behave exactly as under the MPI. Buffers of our own are page-aligned so
 * that a block received into them can be remapped.
 */
static void *vec_alloc(size_t bytes)
{
	void *v = NULL;

	if (posix_memalign(&v, 4096, bytes ? (bytes + 4095) & ~(size_t)4095 :
			   4096))
		__zcmpi_die("out of memory");
	return v;
}

/*
 * Blocks of a vector: counts[i] elements each (or count split as evenly
 * as it goes when counts is NULL), one after another.
 */
static void blocks_of(struct parts *pt, int n, const int *counts, int count,
		      MPI_Datatype t)
{
	int *displs = malloc((size_t)n * sizeof(*displs)), i, d = 0;
	int *even = NULL;

	if (!displs)
		__zcmpi_die("out of memory");
	if (!counts) {
		even = malloc((size_t)n * sizeof(*even));
		if (!even)
			__zcmpi_die("out of memory");
		for (i = 0; i < n; i++)
			even[i] = count / n + (i < count % n);
		counts = even;
	}
	for (i = 0; i < n; i++) {
		displs[i] = d;
		d += counts[i];
	}
	parts_of(pt, n, counts, 0, displs, t);
	/* parts_of keeps counts: hand the even split over as its own. */
	pt->own = even;
	free(displs);
}

static void reduce_local(const void *in, void *inout, int count,
			 MPI_Datatype t, MPI_Op mop, struct cop *op)
{
	if (!op->err && count > 0)
		op_fail(op, PMPI_Reduce_local(in, inout, count, t, mop),
			false);
}

/*
 * Ring reduce-scatter of acc, split in blocks pt: at step k a rank sends
 * its partial of block rank - k - 1 to rank + 1 and receives rank - 1's
 * partial of block rank - k - 2, which it reduces into its own; after
 * p - 1 steps block rank of acc holds the result. All receives are posted
 * first, each at its block's offset in tmp (a block is received once), so
 * early arrivals land where they belong. The contributions to a block
 * meet in ring order, not rank order: commutative operations only.
 */
static int rsc_ring(void *acc, void *tmp, const struct parts *pt,
		    MPI_Datatype t, MPI_Op mop, MPI_Comm comm,
		    struct zcomm *zc)
{
	int p = zc->size, me = zc->rank, left, right, k, b, ret;
	struct cop op;
	int *ri;

	if (p < 2)
		return MPI_SUCCESS;
	ri = ring_of(zc, &left, &right);
	op_init(&op, comm, zc, 2 * p);
	for (k = 0; k < p - 1; k++) {
		b = (me - k - 2 + 2 * p) % p;
		ri[k] = op_start(&op, ZR_RECV, at(tmp, pt, b), pt->count[b],
				 t, left);
	}
	for (k = 0; k < p - 1; k++) {
		b = (me - k - 1 + 2 * p) % p;
		if (k) {
			/* The block received last step: reduce, forward. */
			op_wait(&op, ri[k - 1]);
			reduce_local(at(tmp, pt, b), at(acc, pt, b),
				     pt->count[b], t, mop, &op);
		}
		op_start(&op, ZR_SEND, at(acc, pt, b), pt->count[b], t,
			 right);
	}
	op_wait(&op, ri[p - 2]);
	reduce_local(at(tmp, pt, me), at(acc, pt, me), pt->count[me], t, mop,
		     &op);
	ret = op_end(&op);
	free(ri);
	return ret;
}

/*
 * Binomial tree toward rank 0 in rank order, for any operation: the
 * subtree of rank r is ranks r .. r + 2^j - 1, its children r + 1,
 * r + 2, r + 4 ... are combined lowest first as acc op child, so a
 * non-commutative operation sees its operands in rank order. The
 * children's receives are posted first, each into a buffer of its own.
 * At rank 0 the result is copied to res (which may be in).
 */
static int reduce_tree(const void *in, void *res, int count, MPI_Datatype t,
		       MPI_Op mop, MPI_Comm comm, struct zcomm *zc)
{
	int p = zc->size, me = zc->rank, mask, nc = 0, i, ret, ci[32];
	size_t bytes = (size_t)count * (size_t)extent(t);
	const void *acc = in;
	void *kid[32];
	struct cop op;

	op_init(&op, comm, zc, 33);
	for (mask = 1; mask < p && !(me & mask); mask <<= 1)
		if (me + mask < p) {
			kid[nc] = vec_alloc(bytes);
			ci[nc] = op_start(&op, ZR_RECV, kid[nc], count, t,
					  me + mask);
			nc++;
		}
	for (i = 0; i < nc; i++) {
		op_wait(&op, ci[i]);
		/* kid = acc op kid: the lower ranks on the left. */
		reduce_local(acc, kid[i], count, t, mop, &op);
		acc = kid[i];
	}
	if (me)
		op_start(&op, ZR_SEND, acc, count, t, me - mask);
	ret = op_end(&op);
	if (!me && !ret && bytes && acc != res)
		memcpy(res, acc, bytes);
	for (i = 0; i < nc; i++)
		free(kid[i]);
	return ret;
}

static bool commutative(MPI_Op mop)
{
	int c = 1;

	return PMPI_Op_commutative(mop, &c) != MPI_SUCCESS || c;
}

/*
 * A reduction of count elements of t over zcrecv, or NULL. Only
 * predefined types: MPI requires the same type on every rank of a
 * reduction, so all decide alike, and a named type's elements lie one
 * after another at its extent (a derived type's need not, whose blocks
 * the ring would cut). Derived types go to the MPI.
 */
static struct zcomm *carry_red(MPI_Comm comm, int count, MPI_Datatype t,
			       MPI_Op mop, uint64_t min)
{
	int ni, na, nd, comb = -1;

	if (!set.on || count < 0 || t == MPI_DATATYPE_NULL ||
	    mop == MPI_OP_NULL ||
	    PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS ||
	    comb != MPI_COMBINER_NAMED)
		return NULL;
	return carry(comm, bytes_of(count, t), min);
}

/* Elements of blocks lo .. hi - 1 of pt (one after another). */
static int span(const struct parts *pt, int lo, int hi)
{
	int c = 0;

	while (lo < hi)
		c += pt->count[lo++];
	return c;
}

/*
 * Rabenseifner's allreduce of a commutative operation on p = 2^k ranks,
 * in acc: a reduce-scatter by recursive halving, then an allgather by
 * recursive doubling. The vector is cut in p blocks; at the step of
 * distance d (p / 2 down to 1) a rank keeps the half of its window of
 * blocks on the side of its bit d, sends the other half to its partner
 * (rank ^ d) and reduces the partner's copy of the kept half into its
 * own, so rank j ends with block j reduced; the allgather retraces the
 * steps (d = 1 up), each rank sending its window and receiving its
 * partner's beside it, into the half it sent at that distance. Every
 * receive of the halving is posted at the call, each into a region of
 * tmp of its own (an early arrival is staged there). 2 log2 p steps
 * instead of the ring's 2 (p - 1), the same bytes.
 */
static int allreduce_rsag(void *acc, void *tmp, int count, MPI_Datatype t,
			  MPI_Op mop, MPI_Comm comm, struct zcomm *zc)
{
	int p = zc->size, me = zc->rank, d, k, ret;
	int lo = 0, hi = p, mid, klo, khi, slo, shi, ri[32], si[32];
	MPI_Aint ext = extent(t), used = 0;
	struct parts pt;
	struct cop op;

	blocks_of(&pt, p, NULL, count, t);
	op_init(&op, comm, zc, 4 * 32);
	for (d = p / 2, k = 0; d >= 1; d /= 2, k++) {
		mid = (lo + hi) / 2;
		klo = me & d ? mid : lo;
		khi = me & d ? hi : mid;
		ri[k] = op_start(&op, ZR_RECV, (char *)tmp + used,
				 span(&pt, klo, khi), t, me ^ d);
		used += (MPI_Aint)span(&pt, klo, khi) * ext;
		lo = klo;
		hi = khi;
	}
	lo = 0;
	hi = p;
	used = 0;
	for (d = p / 2, k = 0; d >= 1; d /= 2, k++) {
		mid = (lo + hi) / 2;
		klo = me & d ? mid : lo;
		khi = me & d ? hi : mid;
		slo = me & d ? lo : mid;
		shi = me & d ? mid : hi;
		si[k] = op_start(&op, ZR_SEND, at(acc, &pt, slo),
				 span(&pt, slo, shi), t, me ^ d);
		op_wait(&op, ri[k]);
		reduce_local((char *)tmp + used, at(acc, &pt, klo),
			     span(&pt, klo, khi), t, mop, &op);
		used += (MPI_Aint)span(&pt, klo, khi) * ext;
		lo = klo;
		hi = khi;
	}
	for (d = 1, k--; d < p; d *= 2, k--) {
		slo = me & d ? lo - (hi - lo) : hi;
		shi = me & d ? lo : hi + (hi - lo);
		/* The half sent at this distance is received into. */
		op_wait(&op, si[k]);
		ri[k] = op_start(&op, ZR_RECV, at(acc, &pt, slo),
				 span(&pt, slo, shi), t, me ^ d);
		op_wait(&op, op_start(&op, ZR_SEND, at(acc, &pt, lo),
				      span(&pt, lo, hi), t, me ^ d));
		op_wait(&op, ri[k]);
		lo = lo < slo ? lo : slo;
		hi = hi > shi ? hi : shi;
	}
	ret = op_end(&op);
	parts_free(&pt);
	return ret;
}

/*
 * Allreduce: commutative, on a power of two ranks and up to
 * set.allreduce_rsag_max bytes Rabenseifner's (allreduce_rsag), else the
 * ring reduce-scatter into rbuf then the allgather ring over the reduced
 * blocks; non-commutative, the rank-order tree to rank 0 and a broadcast.
 */
static int allreduce_zc(const void *sbuf, void *rbuf, int count,
			MPI_Datatype t, MPI_Op mop, MPI_Comm comm,
			struct zcomm *zc)
{
	size_t bytes = (size_t)count * (size_t)extent(t);
	struct parts pt;
	int ret, ret2;
	void *tmp;

	if (sbuf != MPI_IN_PLACE && bytes)
		memcpy(rbuf, sbuf, bytes);
	if (!commutative(mop)) {
		ret = reduce_tree(rbuf, rbuf, count, t, mop, comm, zc);
		/* Every rank takes part in each step, whatever the last gave. */
		ret2 = bcast_zc(rbuf, count, t, 0, comm, zc);
		return ret ? ret : ret2;
	}
	tmp = vec_alloc(bytes);
	if (bytes <= set.allreduce_rsag_max && set.allreduce_rsag_max &&
	    zc->size > 1 && !(zc->size & (zc->size - 1))) {
		ret = allreduce_rsag(rbuf, tmp, count, t, mop, comm, zc);
		free(tmp);
		return ret;
	}
	blocks_of(&pt, zc->size, NULL, count, t);
	ret = rsc_ring(rbuf, tmp, &pt, t, mop, comm, zc);
	ret2 = allgatherv_zc(MPI_IN_PLACE, 0, t, rbuf, &pt, t, comm, zc);
	free(tmp);
	parts_free(&pt);
	return ret ? ret : ret2;
}

/*
 * Reduce: commutative, ring reduce-scatter then the blocks gathered to
 * the root; otherwise the rank-order tree to rank 0, which sends the
 * result to the root. The root reduces in rbuf itself.
 */
static int reduce_zc(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
		     MPI_Op mop, int root, MPI_Comm comm, struct zcomm *zc)
{
	size_t bytes = (size_t)count * (size_t)extent(t);
	int me = zc->rank, ret, ret2;
	struct parts pt;
	void *acc, *tmp;
	struct cop op;

	if (me == root) {
		acc = rbuf;
		if (sbuf != MPI_IN_PLACE && bytes)
			memcpy(rbuf, sbuf, bytes);
	} else {
		acc = vec_alloc(bytes);
		if (bytes)
			memcpy(acc, sbuf, bytes);
	}
	if (!commutative(mop)) {
		ret = reduce_tree(acc, acc, count, t, mop, comm, zc);
		op_init(&op, comm, zc, 1);
		if (root && !me)
			op_start(&op, ZR_SEND, acc, count, t, root);
		else if (root && me == root)
			op_start(&op, ZR_RECV, rbuf, count, t, 0);
		ret2 = op_end(&op);
	} else {
		blocks_of(&pt, zc->size, NULL, count, t);
		tmp = vec_alloc(bytes);
		ret = rsc_ring(acc, tmp, &pt, t, mop, comm, zc);
		free(tmp);
		ret2 = gatherv_zc(me == root ? MPI_IN_PLACE : at(acc, &pt, me),
				  pt.count[me], t, rbuf, &pt, t, root, comm,
				  zc);
		parts_free(&pt);
	}
	if (acc != rbuf)
		free(acc);
	return ret ? ret : ret2;
}

/*
 * Reduce-scatter with counts[i] for rank i: commutative, the ring
 * reduce-scatter on a copy of the vector (rbuf itself in place); otherwise
 * the rank-order tree to rank 0, which sends each rank its block.
 */
static int reduce_scatter_zc(const void *sbuf, void *rbuf, const int *counts,
			     MPI_Datatype t, MPI_Op mop, MPI_Comm comm,
			     struct zcomm *zc)
{
	int p = zc->size, me = zc->rank, total = 0, i, ret, ret2 = 0;
	MPI_Aint ext = extent(t);
	struct parts pt;
	void *acc, *tmp;
	struct cop op;
	size_t bytes;

	for (i = 0; i < p; i++)
		total += counts[i];
	bytes = (size_t)total * (size_t)ext;
	blocks_of(&pt, p, counts, 0, t);
	if (sbuf == MPI_IN_PLACE) {
		acc = rbuf;
	} else {
		acc = vec_alloc(bytes);
		if (bytes)
			memcpy(acc, sbuf, bytes);
	}
	if (commutative(mop)) {
		tmp = vec_alloc(bytes);
		ret = rsc_ring(acc, tmp, &pt, t, mop, comm, zc);
		free(tmp);
	} else {
		ret = reduce_tree(acc, acc, total, t, mop, comm, zc);
		op_init(&op, comm, zc, p);
		for (i = 1; i < p; i++)
			if (!me)
				op_start(&op, ZR_SEND, at(acc, &pt, i),
					 counts[i], t, i);
		if (me)
			op_start(&op, ZR_RECV, at(acc, &pt, me), counts[me],
				 t, 0);
		ret2 = op_end(&op);
	}
	if (counts[me] && at(acc, &pt, me) != (char *)rbuf)
		memmove(rbuf, at(acc, &pt, me), (size_t)counts[me] * ext);
	if (acc != rbuf)
		free(acc);
	parts_free(&pt);
	return ret ? ret : ret2;
}

/*
 * Scan (inclusive) and Exscan, recursive doubling, any operation: at the
 * step of distance d a rank sends its partial (the reduction of ranks
 * rank - d + 1 .. rank, in a buffer of its own) to rank + d and receives
 * rank - d's, which covers the ranks just below its partial: it goes on
 * the left of both the partial and the result, so a non-commutative
 * operation sees rank order. Exscan's result starts with the first block
 * received; rank 0's is left as it was (MPI leaves it undefined).
 */
static int scan_zc(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
		   MPI_Op mop, bool ex, MPI_Comm comm, struct zcomm *zc)
{
	size_t bytes = (size_t)count * (size_t)extent(t);
	int p = zc->size, me = zc->rank, d, si, ri, ret;
	const void *in = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
	void *part = vec_alloc(bytes), *tmp = vec_alloc(bytes);
	bool have = false;
	struct cop op;

	if (bytes)
		memcpy(part, in, bytes);
	if (!ex && in != rbuf && bytes)
		memcpy(rbuf, in, bytes);
	op_init(&op, comm, zc, 64);
	for (d = 1; d < p; d <<= 1) {
		si = me + d < p ? op_start(&op, ZR_SEND, part, count, t,
					   me + d) : -1;
		ri = me - d >= 0 ? op_start(&op, ZR_RECV, tmp, count, t,
					    me - d) : -1;
		/* The partial changes below: its send must be done. */
		op_wait(&op, si);
		op_wait(&op, ri);
		if (ri < 0 || op.err)
			continue;
		reduce_local(tmp, part, count, t, mop, &op);
		if (ex && !have && bytes)
			memcpy(rbuf, tmp, bytes);
		else if (!ex || have)
			reduce_local(tmp, rbuf, count, t, mop, &op);
		have = true;
	}
	ret = op_end(&op);
	free(part);
	free(tmp);
	return ret;
}

/* ---- nonblocking collectives -------------------------------------------- */

/*
 * A nonblocking collective is a schedule of steps that start in the order
 * they were added, each once the step it names (after) is complete: the
 * receives an algorithm can post at once are added first and so posted
 * when the call starts (an early arrival is staged at its buffer's
 * offset), and a send that forwards data waits for the receive that
 * brings it. Sends and receives are requests of ours in the reserved
 * space, with the call's tag; a reduction completes as it starts. Starting
 * in order also keeps one source's receives in the order its sends come.
 * Every schedule still running advances in every Test and Wait of the
 * layer, whichever request it is for; the sends and receives it started
 * move with the library's progress meanwhile.
 */
enum { S_SEND, S_RECV, S_REDUCE };

struct step {
	int kind;
	int after;		/* the step to complete first, or -1 */
	const void *in;		/* S_REDUCE: in op buf into buf */
	void *buf;
	int count;
	MPI_Datatype t;
	int peer;		/* S_SEND, S_RECV: comm rank */
	MPI_Request req;	/* started send or receive, ours */
	bool done;
};

struct zsched {
	MPI_Comm comm;
	struct zcomm cz;	/* the communicator, in the reserved space */
	int tag;
	MPI_Op mop;
	struct step *st;
	int n, cap;
	int next;		/* the first step not started */
	int first;		/* the first step not complete */
	int err;
	bool cancelled;		/* after err: receives left cancelled */
	void *mem[2];		/* freed when the call completes */
	struct zreq *z;		/* its request */
	struct zsched *prev, *succ;	/* the running schedules */
};

unsigned int __zcmpi_coll_running;
static struct zsched *running;
/* Under MPI_THREAD_MULTIPLE: one thread advances schedules at a time. */
static pthread_mutex_t sched_lock = PTHREAD_MUTEX_INITIALIZER;
/* What zero-byte messages point at. */
static char nothing;

static struct zsched *sched_new(MPI_Comm comm, struct zcomm *zc)
{
	uint32_t seq = __atomic_fetch_add(&zc->coll_seq, 1, __ATOMIC_RELAXED);
	struct zsched *s = calloc(1, sizeof(*s));

	if (!s)
		__zcmpi_die("out of memory");
	s->comm = comm;
	s->cz = *zc;
	s->cz.id = zc->id | COLL_ID;
	s->cz.coll = true;
	s->tag = (int)(seq & ZCRECV_TAG_MAX);
	s->mop = MPI_OP_NULL;
	return s;
}

/* Add a step; its index. */
static int sched_add(struct zsched *s, int kind, int after, const void *in,
		     void *buf, int count, MPI_Datatype t, int peer)
{
	struct step *x;

	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->st = realloc(s->st, (size_t)s->cap * sizeof(*s->st));
		if (!s->st)
			__zcmpi_die("out of memory");
	}
	x = &s->st[s->n];
	memset(x, 0, sizeof(*x));
	x->kind = kind;
	x->after = after;
	x->in = in;
	x->buf = buf;
	x->count = count;
	x->t = t;
	x->peer = peer;
	x->req = MPI_REQUEST_NULL;
	return s->n++;
}

static int sched_send(struct zsched *s, int after, const void *buf,
		      int count, MPI_Datatype t, int peer)
{
	return sched_add(s, S_SEND, after, NULL, (void *)buf, count, t, peer);
}

static int sched_recv(struct zsched *s, int after, void *buf, int count,
		      MPI_Datatype t, int peer)
{
	return sched_add(s, S_RECV, after, NULL, buf, count, t, peer);
}

/* inout = in op inout, once step after is complete. */
static int sched_reduce(struct zsched *s, int after, const void *in,
			void *inout, int count, MPI_Datatype t)
{
	return sched_add(s, S_REDUCE, after, in, inout, count, t, -1);
}

static void sched_fail(struct zsched *s, int err)
{
	if (err && !s->err)
		s->err = err;
}

static void step_start(struct zsched *s, struct step *x)
{
	int kind = x->kind == S_SEND ? ZR_SEND : ZR_RECV, ret;
	struct zreq *z;

	if (x->kind == S_REDUCE) {
		if (x->count > 0)
			sched_fail(s, PMPI_Reduce_local(x->in, x->buf,
							x->count, x->t,
							s->mop));
		x->done = true;
		return;
	}
	z = __zcmpi_zreq_new(kind, s->comm, &s->cz);
	ret = __zcmpi_zreq_start(z, kind, x->buf, x->count, x->t, x->peer,
				 s->tag);
	if (ret) {
		/* Said through the handler by the start already. */
		__zcmpi_zreq_release(z);
		sched_fail(s, ret);
		x->done = true;
		return;
	}
	x->req = H(z);
}

static void step_poll(struct zsched *s, struct step *x)
{
	if (x->done || !__zcmpi_zreq_poll(Z(x->req)))
		return;
	sched_fail(s, __zcmpi_zreq_collect(Z(x->req), MPI_STATUS_IGNORE,
					   &x->req));
	x->done = true;
}

/*
 * After an error no step starts, and the receives still pending are
 * cancelled: their senders may never come.
 */
static void sched_cancel(struct zsched *s)
{
	int i;

	s->cancelled = true;
	for (i = s->first; i < s->next; i++) {
		struct step *x = &s->st[i];
		struct zreq *z;

		if (x->done)
			continue;
		z = Z(x->req);
		if (z->kind == ZR_RECV && !z->done && z->r)
			zcr_cancel(z->r);
	}
}

/* The call is complete: its request says so, the schedule goes. */
static void sched_end(struct zsched *s)
{
	struct zreq *z = s->z;

	if (s->prev)
		s->prev->succ = s->succ;
	else
		running = s->succ;
	if (s->succ)
		s->succ->prev = s->prev;
	__atomic_sub_fetch(&__zcmpi_coll_running, 1, __ATOMIC_RELAXED);
	free(s->mem[0]);
	free(s->mem[1]);
	free(s->st);
	free(s);
	z->coll = NULL;
	z->done = true;
}

/* Advance s as far as it goes; true when the call completed (s freed). */
static bool sched_advance(struct zsched *s)
{
	bool moved;
	int i;

	do {
		moved = false;
		for (i = s->first; i < s->next; i++)
			step_poll(s, &s->st[i]);
		while (s->first < s->next && s->st[s->first].done)
			s->first++;
		while (!s->err && s->next < s->n) {
			struct step *x = &s->st[s->next];

			if (x->after >= 0 && !s->st[x->after].done)
				break;
			step_start(s, x);
			s->next++;
			moved = true;
		}
	} while (moved);
	if (s->err && !s->cancelled)
		sched_cancel(s);
	if (s->first < s->next || (!s->err && s->next < s->n))
		return false;
	s->z->err = s->err;
	sched_end(s);
	return true;
}

bool __zcmpi_coll_poll(struct zreq *z)
{
	bool done;

	zcmpi_mlock(&sched_lock);
	done = z->done || sched_advance(z->coll);
	zcmpi_munlock(&sched_lock);
	return done;
}

void __zcmpi_coll_progress(void)
{
	struct zsched *s, *succ;

	if (__zcmpi_threads && pthread_mutex_trylock(&sched_lock))
		return;
	for (s = running; s; s = succ) {
		succ = s->succ;
		sched_advance(s);
	}
	zcmpi_munlock(&sched_lock);
}

/*
 * Wait on the first step still pending, in short slices while other
 * schedules run (they advance between). Under MPI_THREAD_MULTIPLE another
 * thread may complete that step, or the whole schedule, at any time:
 * there the context's progress instead, z->coll never read unlocked.
 */
void __zcmpi_coll_wait(struct zreq *z)
{
	while (!__zcmpi_coll_poll(z)) {
		struct zreq *w = NULL;
		struct zsched *s;
		int i;

		if (__zcmpi_threads) {
			__zcmpi_idle();
			continue;
		}
		s = z->coll;
		for (i = s->first; i < s->next; i++)
			if (!s->st[i].done) {
				w = Z(s->st[i].req);
				break;
			}
		if (!w) {
			__zcmpi_idle();
			continue;
		}
		__zcmpi_zreq_wait_ms(w, __zcmpi_coll_running > 1 ? 1 : 50);
		if (__zcmpi_coll_running > 1)
			__zcmpi_coll_progress();
	}
}

void __zcmpi_coll_drain(void)
{
	while (__atomic_load_n(&__zcmpi_coll_running, __ATOMIC_RELAXED)) {
		__zcmpi_coll_progress();
		zcr_progress(__zcmpi_ctx, 1);
	}
}

/* Start schedule s: its request in *req. */
static int sched_go(struct zsched *s, MPI_Request *req)
{
	struct zreq *z = __zcmpi_zreq_new(ZR_COLL, s->comm, NULL);

	z->coll = s;
	s->z = z;
	*req = H(z);
	zcmpi_mlock(&sched_lock);
	s->succ = running;
	if (running)
		running->prev = s;
	running = s;
	__atomic_add_fetch(&__zcmpi_coll_running, 1, __ATOMIC_RELAXED);
	sched_advance(s);
	zcmpi_munlock(&sched_lock);
	return MPI_SUCCESS;
}

/*
 * Broadcast: up to 4 ranks the root sends to every other rank, all at the
 * start, so the data moves while the program computes whether or not it
 * calls into the MPI; beyond, the binomial tree of bcast_zc, each rank's
 * forwards waiting for its receive.
 */
#define IBCAST_LINEAR_MAX	4

static void ibcast_sched(struct zsched *s, void *buf, int count,
			 MPI_Datatype t, int root, struct zcomm *zc)
{
	int p = zc->size, vr = (zc->rank - root + p) % p, mask, from = -1;
	int k;

	if (p <= IBCAST_LINEAR_MAX) {
		if (vr)
			sched_recv(s, -1, buf, count, t, root);
		for (k = 1; !vr && k < p; k++)
			sched_send(s, -1, buf, count, t, (root + k) % p);
		return;
	}
	for (mask = 1; mask < p; mask <<= 1)
		if (vr & mask) {
			from = sched_recv(s, -1, buf, count, t,
					  (vr - mask + root) % p);
			break;
		}
	for (mask >>= 1; mask > 0; mask >>= 1)
		if (vr + mask < p)
			sched_send(s, from, buf, count, t,
				   (vr + mask + root) % p);
}

/*
 * Allgather, direct: every part's receive and this rank's part's sends to
 * every other rank, all at the start (the same bytes a rank sends as in
 * the ring, none of them waiting for another).
 */
static void iallgather_sched(struct zsched *s, const void *sbuf, int scount,
			     MPI_Datatype st, void *rbuf, int rcount,
			     MPI_Datatype rt, struct zcomm *zc)
{
	int p = zc->size, me = zc->rank, k;
	MPI_Aint part = (MPI_Aint)rcount * extent(rt);
	char *r = rbuf;

	for (k = 1; k < p; k++)
		sched_recv(s, -1, r + (MPI_Aint)((me - k + p) % p) * part,
			   rcount, rt, (me - k + p) % p);
	if (sbuf == MPI_IN_PLACE) {
		sbuf = r + me * part;
		scount = rcount;
		st = rt;
	} else {
		sched_fail(s, copy_self(sbuf, scount, st, r + me * part,
					rcount, rt, s->comm));
	}
	for (k = 1; k < p; k++)
		sched_send(s, -1, sbuf, scount, st, (me + k) % p);
}

/*
 * All-to-all, pairwise as alltoallv_zc, every receive and send at the
 * start. In place the parts to send are packed first into a buffer the
 * schedule keeps.
 */
static void ialltoall_sched(struct zsched *s, const void *sbuf, int scount,
			    MPI_Datatype st, void *rbuf, int rcount,
			    MPI_Datatype rt, struct zcomm *zc)
{
	int p = zc->size, me = zc->rank, k, i, cap = 0, pos = 0, *poff;
	MPI_Aint rpart = (MPI_Aint)rcount * extent(rt), spart = 0;
	bool in_place = sbuf == MPI_IN_PLACE;
	char *r = rbuf, *packed = NULL;

	poff = malloc((size_t)(p + 1) * sizeof(*poff));
	if (!poff)
		__zcmpi_die("out of memory");
	s->mem[1] = poff;
	if (in_place) {
		PMPI_Pack_size(rcount, rt, s->comm, &cap);
		cap *= p;
		packed = malloc(cap ? (size_t)cap : 1);
		if (!packed)
			__zcmpi_die("out of memory");
		s->mem[0] = packed;
		for (i = 0; i < p; i++) {
			poff[i] = pos;
			if (i != me)
				PMPI_Pack(r + i * rpart, rcount, rt, packed,
					  cap, &pos, s->comm);
		}
		poff[p] = pos;
	}
	for (k = 1; k < p; k++) {
		i = (me - k + p) % p;
		sched_recv(s, -1, r + i * rpart, rcount, rt, i);
	}
	if (!in_place) {
		spart = (MPI_Aint)scount * extent(st);
		sched_fail(s, copy_self((const char *)sbuf + me * spart,
					scount, st, r + me * rpart, rcount,
					rt, s->comm));
	}
	for (k = 1; k < p; k++) {
		i = (me + k) % p;
		if (in_place)
			sched_send(s, -1, packed + poff[i],
				   poff[i + 1] - poff[i], MPI_BYTE, i);
		else
			sched_send(s, -1, (const char *)sbuf + i * spart,
				   scount, st, i);
	}
}

/*
 * Allreduce of a commutative operation on a predefined type: the ring
 * reduce-scatter of rsc_ring, then the ring allgather of the reduced
 * blocks, as allreduce_zc does, as one schedule. The receives of the
 * first ring are posted at the start, into a buffer of the schedule's;
 * a block's send waits for its reduction, which waits for its receive.
 * The second ring's receives are posted once the first ring's last
 * reduction is done (one source, one tag: in the order the left
 * neighbour sends).
 */
static void iallreduce_sched(struct zsched *s, const void *sbuf, void *rbuf,
			     int count, MPI_Datatype t, struct zcomm *zc)
{
	int p = zc->size, me = zc->rank, left, right, k, b, last, prev;
	size_t bytes = (size_t)count * (size_t)extent(t);
	struct parts pt;
	int *ri, *gi;
	void *tmp;

	if (sbuf != MPI_IN_PLACE && bytes)
		memcpy(rbuf, sbuf, bytes);
	if (p < 2)
		return;
	blocks_of(&pt, p, NULL, count, t);
	tmp = vec_alloc(bytes);
	s->mem[0] = tmp;
	ri = ring_of(zc, &left, &right);
	gi = ring_of(zc, &left, &right);
	for (k = 0; k < p - 1; k++) {
		b = (me - k - 2 + 2 * p) % p;
		ri[k] = sched_recv(s, -1, at(tmp, &pt, b), pt.count[b], t,
				   left);
	}
	for (k = 0, prev = -1; k < p - 1; k++) {
		b = (me - k - 1 + 2 * p) % p;
		if (k)
			prev = sched_reduce(s, ri[k - 1], at(tmp, &pt, b),
					    at(rbuf, &pt, b), pt.count[b], t);
		sched_send(s, prev, at(rbuf, &pt, b), pt.count[b], t, right);
	}
	last = sched_reduce(s, ri[p - 2], at(tmp, &pt, me),
			    at(rbuf, &pt, me), pt.count[me], t);
	for (k = 0; k < p - 1; k++) {
		b = (me - k - 1 + 2 * p) % p;
		gi[k] = sched_recv(s, -1, at(rbuf, &pt, b), pt.count[b], t,
				   left);
	}
	for (k = 0; k < p - 1; k++) {
		b = (me - k + 2 * p) % p;
		sched_send(s, k ? gi[k - 1] : last, at(rbuf, &pt, b),
			   pt.count[b], t, right);
	}
	free(ri);
	free(gi);
	parts_free(&pt);
}

/*
 * Dissemination barrier: in round k a rank sends a zero-byte message to
 * rank + 2^k and receives one from rank - 2^k; its send of round k + 1
 * waits for its receive of round k (and, starting in order, for all
 * before). Every receive is posted at the start.
 */
static void ibarrier_sched(struct zsched *s, struct zcomm *zc)
{
	int p = zc->size, me = zc->rank, d, prev = -1, k = 0, ri[32];

	for (d = 1; d < p; d <<= 1)
		ri[k++] = sched_recv(s, -1, &nothing, 0, MPI_BYTE,
				     (me - d + p) % p);
	for (d = 1, k = 0; d < p; d <<= 1, k++) {
		sched_send(s, prev, &nothing, 0, MPI_BYTE, (me + d) % p);
		prev = ri[k];
	}
}

/* ---- the calls ---------------------------------------------------------- */

/* The communicator if its barrier goes over zcrecv, else NULL. */
static struct zcomm *carry_barrier(MPI_Comm comm)
{
	return set.on && set.barrier ? __zcmpi_zcomm_of(comm) : NULL;
}

int MPI_Barrier(MPI_Comm comm)
{
	struct zcomm *zc = carry_barrier(comm);
	struct zsched *s;
	MPI_Request req;
	ENTER;

	if (!zc) {
		note(0);
		LEAVE(PMPI_Barrier(comm));
	}
	note_zc(0);
	s = sched_new(comm, zc);
	ibarrier_sched(s, zc);
	sched_go(s, &req);
	LEAVE(__zcmpi_zwait(&req, MPI_STATUS_IGNORE));
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
	struct zcomm *zc = carry_barrier(comm);
	struct zsched *s;
	ENTER;

	if (!zc) {
		note(0);
		LEAVE(PMPI_Ibarrier(comm, req));
	}
	note_zc(0);
	s = sched_new(comm, zc);
	ibarrier_sched(s, zc);
	LEAVE(sched_go(s, req));
}

int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm)
{
	uint64_t part = bytes_of(count, t);
	struct zcomm *zc = count >= 0 ? carry(comm, part, set.bcast_min) :
			   NULL;

	if (!zc || root < 0 || root >= zc->size) {
		note(rooted(root, comm, 0, part));
		return PMPI_Bcast(buf, count, t, root, comm);
	}
	ENTER;
	note_zc(zc->rank == root ? 0 : part);
	LEAVE(bcast_zc(buf, count, t, root, comm, zc));
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm,
	       MPI_Request *req)
{
	uint64_t part = bytes_of(count, t);
	struct zcomm *zc = count >= 0 ? carry(comm, part, set.bcast_min) :
			   NULL;
	struct zsched *s;
	ENTER;

	if (!zc || root < 0 || root >= zc->size) {
		note(rooted(root, comm, 0, part));
		LEAVE(PMPI_Ibcast(buf, count, t, root, comm, req));
	}
	note_zc(zc->rank == root ? 0 : part);
	s = sched_new(comm, zc);
	ibcast_sched(s, buf, count, t, root, zc);
	LEAVE(sched_go(s, req));
}

/*
 * A rooted call over zcrecv, or NULL: its part is count of t at the root
 * (rcount of rt for a gather, scount of st for a scatter), ocount of ot
 * on the other ranks. The type signatures of the two match, so every rank
 * finds the same bytes.
 */
static struct zcomm *carry_rooted(MPI_Comm comm, int root, int count,
				  MPI_Datatype t, int ocount, MPI_Datatype ot,
				  uint64_t min)
{
	struct zcomm *zc = set.on ? __zcmpi_zcomm_of(comm) : NULL;

	if (!zc || root < 0 || root >= zc->size)
		return NULL;
	if (zc->rank != root) {
		count = ocount;
		t = ot;
	}
	return count >= 0 ? carry(comm, bytes_of(count, t), min) : NULL;
}

/*
 * A rooted v-call: only the root has the counts, so it broadcasts the
 * largest part (8 bytes, through the MPI) and every rank decides on that.
 */
static struct zcomm *carry_rooted_v(MPI_Comm comm, const int *counts,
				    MPI_Datatype t, int root, uint64_t min)
{
	struct zcomm *zc = set.on ? __zcmpi_zcomm_of(comm) : NULL;
	uint64_t part = 0, b;
	int i;

	if (!zc || root < 0 || root >= zc->size)
		return NULL;
	for (i = 0; zc->rank == root && i < zc->size; i++) {
		b = counts[i] < 0 ? UINT64_MAX : bytes_of(counts[i], t);
		part = b > part ? b : part;
	}
	if (PMPI_Bcast(&part, 1, MPI_UINT64_T, root, comm) != MPI_SUCCESS)
		return NULL;
	return carry(comm, part, min);
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
	       int rcount, MPI_Datatype rt, int root, MPI_Comm comm)
{
	struct zcomm *zc = carry_rooted(comm, root, rcount, rt, scount, st,
					set.gather_min);
	struct parts rp;
	int ret;

	if (!zc) {
		note(rooted(root, comm, from_others(rcount, rt, comm), 0));
		return PMPI_Gather(sbuf, scount, st, rbuf, rcount, rt, root,
				   comm);
	}
	ENTER;
	note_zc(zc->rank == root ? from_others(rcount, rt, comm) : 0);
	parts_of(&rp, zc->size, NULL, rcount, NULL, rt);
	ret = gatherv_zc(sbuf, scount, st, rbuf, &rp, rt, root, comm, zc);
	parts_free(&rp);
	LEAVE(ret);
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		const int rcounts[], const int displs[], MPI_Datatype rt,
		int root, MPI_Comm comm)
{
	struct zcomm *zc = carry_rooted_v(comm, rcounts, rt, root,
					  set.gather_min);
	struct parts rp = { 0 };
	int ret;

	if (!zc) {
		note(rooted(root, comm, from_others_v(rcounts, rt, comm), 0));
		return PMPI_Gatherv(sbuf, scount, st, rbuf, rcounts, displs,
				    rt, root, comm);
	}
	ENTER;
	note_zc(zc->rank == root ? from_others_v(rcounts, rt, comm) : 0);
	if (zc->rank == root)
		parts_of(&rp, zc->size, rcounts, 0, displs, rt);
	ret = gatherv_zc(sbuf, scount, st, rbuf, &rp, rt, root, comm, zc);
	parts_free(&rp);
	LEAVE(ret);
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		int rcount, MPI_Datatype rt, int root, MPI_Comm comm)
{
	struct zcomm *zc = carry_rooted(comm, root, scount, st, rcount, rt,
					set.scatter_min);
	struct parts sp = { 0 };
	int ret;

	if (!zc) {
		note(rooted(root, comm, 0, bytes_of(rcount, rt)));
		return PMPI_Scatter(sbuf, scount, st, rbuf, rcount, rt, root,
				    comm);
	}
	ENTER;
	note_zc(zc->rank == root ? 0 : bytes_of(rcount, rt));
	if (zc->rank == root)
		parts_of(&sp, zc->size, NULL, scount, NULL, st);
	ret = scatterv_zc(sbuf, &sp, st, rbuf, rcount, rt, root, comm, zc);
	parts_free(&sp);
	LEAVE(ret);
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[],
		 MPI_Datatype st, void *rbuf, int rcount, MPI_Datatype rt,
		 int root, MPI_Comm comm)
{
	struct zcomm *zc = carry_rooted_v(comm, scounts, st, root,
					  set.scatter_min);
	struct parts sp = { 0 };
	int ret;

	if (!zc) {
		note(rooted(root, comm, 0, bytes_of(rcount, rt)));
		return PMPI_Scatterv(sbuf, scounts, displs, st, rbuf, rcount,
				     rt, root, comm);
	}
	ENTER;
	note_zc(zc->rank == root ? 0 : bytes_of(rcount, rt));
	if (zc->rank == root)
		parts_of(&sp, zc->size, scounts, 0, displs, st);
	ret = scatterv_zc(sbuf, &sp, st, rbuf, rcount, rt, root, comm, zc);
	parts_free(&sp);
	LEAVE(ret);
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		  int rcount, MPI_Datatype rt, MPI_Comm comm)
{
	struct zcomm *zc = rcount >= 0 ?
			   carry(comm, bytes_of(rcount, rt),
				 set.allgather_min) : NULL;
	struct parts rp;
	int ret;

	if (!zc) {
		note(from_others(rcount, rt, comm));
		return PMPI_Allgather(sbuf, scount, st, rbuf, rcount, rt, comm);
	}
	ENTER;
	note_zc((uint64_t)(zc->size - 1) * bytes_of(rcount, rt));
	parts_of(&rp, zc->size, NULL, rcount, NULL, rt);
	ret = allgatherv_zc(sbuf, scount, st, rbuf, &rp, rt, comm, zc);
	parts_free(&rp);
	LEAVE(ret);
}

/*
 * MPI_Ialltoall (a2a) or MPI_Iallgather: both decide on a part, rcount of
 * rt, against their blocking form's threshold, and take the same
 * arguments.
 */
static int iparts(bool a2a, const void *sbuf, int scount, MPI_Datatype st,
		  void *rbuf, int rcount, MPI_Datatype rt, MPI_Comm comm,
		  MPI_Request *req)
{
	struct zcomm *zc = rcount >= 0 ?
			   carry(comm, bytes_of(rcount, rt),
				 a2a ? set.alltoall_min : set.allgather_min) :
			   NULL;
	struct zsched *s;
	ENTER;

	if (!zc) {
		note(from_others(rcount, rt, comm));
		LEAVE((a2a ? PMPI_Ialltoall : PMPI_Iallgather)(sbuf, scount, st,
							      rbuf, rcount,
							      rt, comm,
							      req));
	}
	note_zc((uint64_t)(zc->size - 1) * bytes_of(rcount, rt));
	s = sched_new(comm, zc);
	(a2a ? ialltoall_sched : iallgather_sched)(s, sbuf, scount, st, rbuf,
						   rcount, rt, zc);
	LEAVE(sched_go(s, req));
}

int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		   int rcount, MPI_Datatype rt, MPI_Comm comm,
		   MPI_Request *req)
{
	return iparts(false, sbuf, scount, st, rbuf, rcount, rt, comm, req);
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		   const int rcounts[], const int displs[], MPI_Datatype rt,
		   MPI_Comm comm)
{
	struct zcomm *zc = set.on ? __zcmpi_zcomm_of(comm) : NULL;
	uint64_t part = 0, b;
	struct parts rp;
	int i, ret;

	/* Every rank has every count: all find the same largest part. */
	for (i = 0; zc && i < zc->size; i++) {
		b = rcounts[i] < 0 ? UINT64_MAX : bytes_of(rcounts[i], rt);
		part = b > part ? b : part;
	}
	if (zc)
		zc = carry(comm, part, set.allgather_min);
	if (!zc) {
		note(from_others_v(rcounts, rt, comm));
		return PMPI_Allgatherv(sbuf, scount, st, rbuf, rcounts, displs,
				       rt, comm);
	}
	ENTER;
	note_zc(from_others_v(rcounts, rt, comm));
	parts_of(&rp, zc->size, rcounts, 0, displs, rt);
	ret = allgatherv_zc(sbuf, scount, st, rbuf, &rp, rt, comm, zc);
	parts_free(&rp);
	LEAVE(ret);
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		 int rcount, MPI_Datatype rt, MPI_Comm comm)
{
	struct zcomm *zc = rcount >= 0 ?
			   carry(comm, bytes_of(rcount, rt),
				 set.alltoall_min) : NULL;
	struct parts sp = { 0 }, rp;
	int ret;

	if (!zc) {
		note(from_others(rcount, rt, comm));
		return PMPI_Alltoall(sbuf, scount, st, rbuf, rcount, rt, comm);
	}
	ENTER;
	note_zc((uint64_t)(zc->size - 1) * bytes_of(rcount, rt));
	if (sbuf != MPI_IN_PLACE)
		parts_of(&sp, zc->size, NULL, scount, NULL, st);
	parts_of(&rp, zc->size, NULL, rcount, NULL, rt);
	ret = alltoallv_zc(sbuf, &sp, st, rbuf, &rp, rt, comm, zc);
	parts_free(&sp);
	parts_free(&rp);
	LEAVE(ret);
}

int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype st, void *rbuf,
		  int rcount, MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
	return iparts(true, sbuf, scount, st, rbuf, rcount, rt, comm, req);
}

/*
 * MPI_Alltoallv (one type each way, st and rt) or MPI_Alltoallw (a type a
 * part, sts and rts) over zcrecv, or NULL. Each rank knows its own counts
 * only: the largest part over all ranks, by one small reduction, is what
 * every rank decides on.
 */
static struct zcomm *carry_a2av(MPI_Comm comm, bool in_place,
				const int *scounts, MPI_Datatype st,
				const MPI_Datatype *sts, const int *rcounts,
				MPI_Datatype rt, const MPI_Datatype *rts)
{
	struct zcomm *zc = set.on ? __zcmpi_zcomm_of(comm) : NULL;
	uint64_t mine = 0, part = 0, b;
	int i;

	for (i = 0; zc && i < zc->size; i++) {
		b = rcounts[i] < 0 ? UINT64_MAX :
		    bytes_of(rcounts[i], rts ? rts[i] : rt);
		mine = b > mine ? b : mine;
		if (in_place)
			continue;
		b = scounts[i] < 0 ? UINT64_MAX :
		    bytes_of(scounts[i], sts ? sts[i] : st);
		mine = b > mine ? b : mine;
	}
	if (zc && PMPI_Allreduce(&mine, &part, 1, MPI_UINT64_T, MPI_MAX,
				 comm) == MPI_SUCCESS)
		return carry(comm, part, set.alltoall_min);
	return NULL;
}


int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
	       MPI_Op op, int root, MPI_Comm comm)
{
	struct zcomm *zc = carry_red(comm, count, t, op, set.reduce_min);

	if (!zc || root < 0 || root >= zc->size) {
		note(rooted(root, comm, bytes_of(count, t), 0));
		return PMPI_Reduce(sbuf, rbuf, count, t, op, root, comm);
	}
	ENTER;
	note_zc(zc->rank == root ? bytes_of(count, t) : 0);
	LEAVE(reduce_zc(sbuf, rbuf, count, t, op, root, comm, zc));
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
		  MPI_Op op, MPI_Comm comm)
{
	struct zcomm *zc = carry_red(comm, count, t, op, set.allreduce_min);

	if (!zc) {
		note(bytes_of(count, t));
		return PMPI_Allreduce(sbuf, rbuf, count, t, op, comm);
	}
	ENTER;
	note_zc(bytes_of(count, t));
	LEAVE(allreduce_zc(sbuf, rbuf, count, t, op, comm, zc));
}

/*
 * Of a commutative operation only (every predefined one): MPI requires the
 * same operation on every rank, so all decide alike. A non-commutative
 * user operation goes to the MPI.
 */
int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
		   MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
	struct zcomm *zc = carry_red(comm, count, t, op, set.allreduce_min);
	struct zsched *s;
	ENTER;

	if (!zc || !commutative(op)) {
		note(bytes_of(count, t));
		LEAVE(PMPI_Iallreduce(sbuf, rbuf, count, t, op, comm, req));
	}
	note_zc(bytes_of(count, t));
	s = sched_new(comm, zc);
	s->mop = op;
	iallreduce_sched(s, sbuf, rbuf, count, t, zc);
	LEAVE(sched_go(s, req));
}

/*
 * Reduce_scatter's vector: the sum of the counts every rank passes (-1
 * when one is negative or the sum does not fit an int: to the MPI).
 */
static int vector_of(const int *counts, MPI_Comm comm)
{
	struct zcomm *zc = set.on ? __zcmpi_zcomm_of(comm) : NULL;
	int64_t sum = 0;
	int i;

	for (i = 0; zc && counts && i < zc->size; i++) {
		if (counts[i] < 0)
			return -1;
		sum += counts[i];
	}
	return sum > INT32_MAX ? -1 : (int)sum;
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[],
		       MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	struct zcomm *zc = carry_red(comm, vector_of(rcounts, comm), t, op,
				     set.reduce_scatter_min);
	int rank, size;

	if (!zc) {
		note(rcounts && intra(comm, &rank, &size) ?
		     bytes_of(rcounts[rank], t) : 0);
		return PMPI_Reduce_scatter(sbuf, rbuf, rcounts, t, op, comm);
	}
	ENTER;
	note_zc(bytes_of(rcounts[zc->rank], t));
	LEAVE(reduce_scatter_zc(sbuf, rbuf, rcounts, t, op, comm, zc));
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
			     MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	struct zcomm *zc = set.on ? __zcmpi_zcomm_of(comm) : NULL;
	int *counts, i, ret;

	if (zc && rcount >= 0 && (int64_t)rcount * zc->size <= INT32_MAX)
		zc = carry_red(comm, rcount * zc->size, t, op,
			       set.reduce_scatter_min);
	else
		zc = NULL;
	if (!zc) {
		note(bytes_of(rcount, t));
		return PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, t, op,
						 comm);
	}
	ENTER;
	note_zc(bytes_of(rcount, t));
	counts = malloc((size_t)zc->size * sizeof(*counts));
	if (!counts)
		__zcmpi_die("out of memory");
	for (i = 0; i < zc->size; i++)
		counts[i] = rcount;
	ret = reduce_scatter_zc(sbuf, rbuf, counts, t, op, comm, zc);
	free(counts);
	LEAVE(ret);
}

/* MPI_Scan, or MPI_Exscan (ex): one threshold, one algorithm. */
static int scan_call(bool ex, const void *sbuf, void *rbuf, int count,
		     MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	struct zcomm *zc = carry_red(comm, count, t, op, set.scan_min);

	if (!zc) {
		note(bytes_of(count, t));
		return (ex ? PMPI_Exscan : PMPI_Scan)(sbuf, rbuf, count, t, op,
						      comm);
	}
	ENTER;
	note_zc(bytes_of(count, t));
	LEAVE(scan_zc(sbuf, rbuf, count, t, op, ex, comm, zc));
}

int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
	     MPI_Op op, MPI_Comm comm)
{
	return scan_call(false, sbuf, rbuf, count, t, op, comm);
}

int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
	       MPI_Op op, MPI_Comm comm)
{
	return scan_call(true, sbuf, rbuf, count, t, op, comm);
}

/* The nonblocking forms, counted when they start, and the rest. */

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

/*
 * MPI_Alltoallv (st, rt) and MPI_Alltoallw (a type a part: sts, rts),
 * decided alike on the largest part in bytes of any rank, the whole call
 * one way or the other.
 */
static int alltoallvw(const void *sbuf, const int *scounts,
		      const int *sdispls, MPI_Datatype st,
		      const MPI_Datatype *sts, void *rbuf, const int *rcounts,
		      const int *rdispls, MPI_Datatype rt,
		      const MPI_Datatype *rts, MPI_Comm comm)
{
	bool in_place = sbuf == MPI_IN_PLACE;
	struct zcomm *zc = carry_a2av(comm, in_place, scounts, st, sts,
				      rcounts, rt, rts);
	uint64_t got = rts ? from_others_w(rcounts, rts, comm) :
		       from_others_v(rcounts, rt, comm);
	struct parts sp = { 0 }, rp;
	int ret;

	if (!zc) {
		note(got);
		if (rts)
			return PMPI_Alltoallw(sbuf, scounts, sdispls, sts,
					      rbuf, rcounts, rdispls, rts,
					      comm);
		return PMPI_Alltoallv(sbuf, scounts, sdispls, st, rbuf,
				      rcounts, rdispls, rt, comm);
	}
	ENTER;
	note_zc(got);
	if (rts) {
		if (!in_place)
			parts_w(&sp, zc->size, scounts, sdispls, sts);
		parts_w(&rp, zc->size, rcounts, rdispls, rts);
	} else {
		if (!in_place)
			parts_of(&sp, zc->size, scounts, 0, sdispls, st);
		parts_of(&rp, zc->size, rcounts, 0, rdispls, rt);
	}
	ret = alltoallv_zc(sbuf, &sp, st, rbuf, &rp, rt, comm, zc);
	parts_free(&sp);
	parts_free(&rp);
	LEAVE(ret);
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
		  MPI_Datatype st, void *rbuf, const int rcounts[],
		  const int rdispls[], MPI_Datatype rt, MPI_Comm comm)
{
	return alltoallvw(sbuf, scounts, sdispls, st, NULL, rbuf, rcounts,
			  rdispls, rt, NULL, comm);
}

int MPI_Alltoallw(const void *sbuf, const int scounts[], const int sdispls[],
		  const MPI_Datatype stypes[], void *rbuf, const int rcounts[],
		  const int rdispls[], const MPI_Datatype rtypes[],
		  MPI_Comm comm)
{
	return alltoallvw(sbuf, scounts, sdispls, MPI_DATATYPE_NULL, stypes,
			  rbuf, rcounts, rdispls, MPI_DATATYPE_NULL, rtypes,
			  comm);
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
