// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcmpi_coll.c - the collectives of libzcrecv-mpi. MPI_Alltoall(v),
 * MPI_Allgather(v) and MPI_Bcast of a carried communicator go over zcrecv
 * point-to-point from a size up (Documentation/mpi.md, "Collectives");
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
 * Open MPI's Fortran bindings call PMPI_* directly: neither counted nor
 * carried.
 */
#include <errno.h>
#include <mpi.h>
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
} set;

void __zcmpi_coll_init(const struct zcr_env_set *env)
{
	set.on = env->v[ZCR_ENV_MPI_COLL].u;
	set.alltoall_min = env->v[ZCR_ENV_MPI_COLL_ALLTOALL_MIN].u;
	set.allgather_min = env->v[ZCR_ENV_MPI_COLL_ALLGATHER_MIN].u;
	set.bcast_min = env->v[ZCR_ENV_MPI_COLL_BCAST_MIN].u;
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

/* Part i of pt at buf. */
static char *at(const void *buf, const struct parts *pt, int i)
{
	return (char *)buf + pt->off[i];
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
			memmove(rp, sp, sb);
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
 * Pairwise exchange: every receive is posted first (each part's address
 * is known at the call, so early arrivals are staged at its offset), then
 * the sends in a rotating order, rank + 1 first, so that no rank is every
 * other's first. In place: the parts to send are packed first and go as
 * bytes (a packed message meets a typed receive, Documentation/mpi.md).
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
				PMPI_Pack_size(rp->count[i], rt, comm, &c);
			cap += c;
		}
		packed = malloc(cap ? (size_t)cap : 1);
		if (!packed)
			__zcmpi_die("out of memory");
		for (i = 0; i < p; i++) {
			poff[i] = pos;
			if (i != me)
				PMPI_Pack(at(rbuf, rp, i), rp->count[i], rt,
					  packed, cap, &pos, comm);
		}
		poff[p] = pos;
	}
	op_init(&op, comm, zc, 2 * p);
	/* In the order they come: rank - 1 sends to us first. */
	for (k = 1; k < p; k++) {
		i = (me - k + p) % p;
		op_start(&op, ZR_RECV, at(rbuf, rp, i), rp->count[i], rt, i);
	}
	if (!in_place)
		op_fail(&op, copy_self(at(sbuf, sp, me), sp->count[me], st,
				       at(rbuf, rp, me), rp->count[me], rt,
				       comm), false);
	for (k = 1; k < p; k++) {
		i = (me + k) % p;
		if (in_place)
			op_start(&op, ZR_SEND, packed + poff[i],
				 poff[i + 1] - poff[i], MPI_BYTE, i);
		else
			op_start(&op, ZR_SEND, at(sbuf, sp, i), sp->count[i],
				 st, i);
	}
	c = op_end(&op);
	free(packed);
	free(poff);
	return c;
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

	left = (me - 1 + p) % p;
	right = (me + 1) % p;
	ri = malloc((size_t)p * sizeof(*ri));
	if (!ri)
		__zcmpi_die("out of memory");
	op_init(&op, comm, zc, 2 * p);
	if (sbuf != MPI_IN_PLACE)
		op_fail(&op, copy_self(sbuf, scount, st, at(rbuf, rp, me),
				       rp->count[me], rt, comm), false);
	for (k = 0; k < p - 1; k++) {
		b = (me - k - 1 + 2 * p) % p;
		ri[k] = op_start(&op, ZR_RECV, at(rbuf, rp, b), rp->count[b],
				 rt, left);
	}
	for (k = 0; k < p - 1; k++) {
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

/* ---- the calls ---------------------------------------------------------- */

int MPI_Barrier(MPI_Comm comm)
{
	note(0);
	return PMPI_Barrier(comm);
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
	note(from_others(rcount, rt, comm));
	return PMPI_Ialltoall(sbuf, scount, st, rbuf, rcount, rt, comm, req);
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
		  MPI_Datatype st, void *rbuf, const int rcounts[],
		  const int rdispls[], MPI_Datatype rt, MPI_Comm comm)
{
	struct zcomm *zc = set.on ? __zcmpi_zcomm_of(comm) : NULL;
	uint64_t mine = 0, part = 0, b;
	struct parts sp = { 0 }, rp;
	int i, ret;

	/*
	 * Each rank knows its own counts only: the largest part over all
	 * ranks, by one small reduction, is what every rank decides on.
	 */
	for (i = 0; zc && i < zc->size; i++) {
		b = rcounts[i] < 0 ? UINT64_MAX : bytes_of(rcounts[i], rt);
		mine = b > mine ? b : mine;
		if (sbuf == MPI_IN_PLACE)
			continue;
		b = scounts[i] < 0 ? UINT64_MAX : bytes_of(scounts[i], st);
		mine = b > mine ? b : mine;
	}
	if (zc && PMPI_Allreduce(&mine, &part, 1, MPI_UINT64_T, MPI_MAX,
				 comm) == MPI_SUCCESS)
		zc = carry(comm, part, set.alltoall_min);
	else
		zc = NULL;
	if (!zc) {
		note(from_others_v(rcounts, rt, comm));
		return PMPI_Alltoallv(sbuf, scounts, sdispls, st, rbuf,
				      rcounts, rdispls, rt, comm);
	}
	ENTER;
	note_zc(from_others_v(rcounts, rt, comm));
	if (sbuf != MPI_IN_PLACE)
		parts_of(&sp, zc->size, scounts, 0, sdispls, st);
	parts_of(&rp, zc->size, rcounts, 0, rdispls, rt);
	ret = alltoallv_zc(sbuf, &sp, st, rbuf, &rp, rt, comm, zc);
	parts_free(&sp);
	parts_free(&rp);
	LEAVE(ret);
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
