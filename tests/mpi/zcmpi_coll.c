// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcmpi_coll.c - the collectives libzcrecv-mpi.so carries (MPI_Alltoall,
 * Alltoallv, Alltoallw, Allgather, Allgatherv, Bcast; under Open MPI also Reduce,
 * Allreduce, Reduce_scatter(_block), Gather(v), Scatter(v): every
 * predefined op on every predefined type it is defined for, user ops
 * commutative or not, random roots and sizes up to 1 Mi ints, seed
 * ZCMPI_COLL_SEED, default 33), each checked against the
 * MPI's own result: the same call through PMPI_*, which the layer does
 * not wrap, on the same data. Parts of 0 B to 1.2 MB (below and above
 * the layer's thresholds), MPI_IN_PLACE, a non-contiguous datatype,
 * uneven v-counts with zeros, a type a part (MPI_Alltoallw: derived
 * types, zero counts, in place), every root, on MPI_COMM_WORLD, a split, a
 * reordered split and a dup, with point-to-point traffic of the same tags
 * (and a wildcard receive) in flight across every collective.
 * The nonblocking MPI_Ibcast, Iallgather, Ialltoall and Iallreduce the
 * same way, completed by every completion call, with MPI_IN_PLACE, the
 * strided type, several in flight on one communicator, a blocking one
 * between them, point-to-point in flight, a request freed and one polled
 * with MPI_Test; MPI_Barrier and MPI_Ibarrier held up by a late rank;
 * MPI_Scan and MPI_Exscan with every reduction above.
 * Run by tests/mpi/check-zcmpi.sh with and without the layer, and with
 * ZCRECV_MPI_COLL_*_MIN=0 (every call over zcrecv). 4 ranks or more.
 *
 *   zcmpi_coll         the suite; rank 0 prints "coll: N checks passed,
 *                      M calls always to the MPI" (M: calls no threshold
 *                      carries, over all ranks)
 *   zcmpi_coll nb [mt] the nonblocking collectives, the barriers and
 *                      scans only, on MPI_COMM_WORLD, a dup and (Open
 *                      MPI) one rank alone; 2 ranks or more; mt: under
 *                      MPI_THREAD_MULTIPLE
 *   zcmpi_coll early   MPI_Alltoall(v) calls that rank 0 enters late,
 *                      into one buffer, then another, then shifted by
 *                      an int (the layer's landing hints); 2 ranks or more
 *   zcmpi_coll bench [FIRST [LAST]]
 *                      per collective (FIRST..LAST of coll_names, all by
 *                      default) and size, the median time of a call in
 *                      µs over the ranks (rank 0 prints; used to
 *                      set the layer's thresholds, Documentation/mpi.md)
 *   zcmpi_coll loop C BYTES ITERS
 *                      ITERS calls of collective C (a name of
 *                      coll_names, or its index: 0 alltoall, 1 allgather,
 *                      2 bcast, ...)
 *                      with parts of BYTES back to back; rank 0 prints
 *                      "name,BYTES,mean us per call"
 */
#include <mpi.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int wrank, checks;
/* What the reductions check now, for a failure's message. */
static char where[MPI_MAX_OBJECT_NAME + 64];

#define CHECK(c)							\
	do {								\
		checks++;						\
		if (!(c)) {						\
			fprintf(stderr, "coll: rank %d: %s:%d: %s %s\n",	\
				wrank, __FILE__, __LINE__, #c, where);	\
			MPI_Abort(MPI_COMM_WORLD, 2);			\
		}							\
	} while (0)

#define SENTINEL	0x5a5a5a5a

static int *ints(size_t n, int v)
{
	int *a = malloc((n ? n : 1) * sizeof(int));
	size_t i;

	if (!a)
		MPI_Abort(MPI_COMM_WORLD, 3);
	for (i = 0; i < n; i++)
		a[i] = v;
	return a;
}

/* A value no other (rank, part, index) gives. */
static int val(int rank, int part, int i)
{
	return rank * 1000003 + part * 10007 + i;
}

/* Bytes of two int buffers of n ints agree (line: the caller's). */
static void same_at(const int *a, const int *b, size_t n, int line)
{
	checks++;
	if (memcmp(a, b, n * sizeof(int))) {
		fprintf(stderr, "coll: rank %d: line %d: parts differ %s\n",
			wrank, line, where);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
}

#define same(a, b, n)	same_at(a, b, n, __LINE__)

/*
 * Point-to-point of the program around a collective: sends to the next
 * rank with tags 0..3 (those the layer's collectives count from) and a
 * wildcard receive, all in flight while the collectives run.
 */
struct p2p {
	MPI_Request req[9];
	int out[4], in[4], any;
};

static void p2p_start(struct p2p *x, MPI_Comm comm)
{
	int r, p, t;

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &p);
	for (t = 0; t < 4; t++) {
		x->in[t] = -1;
		MPI_Irecv(&x->in[t], 1, MPI_INT, (r + p - 1) % p, t, comm,
			  &x->req[t]);
	}
	/* Posted after those: it may take only the tag 99 of p2p_end(). */
	MPI_Irecv(&x->any, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm,
		  &x->req[8]);
	for (t = 0; t < 4; t++) {
		x->out[t] = val(r, t, 77);
		MPI_Isend(&x->out[t], 1, MPI_INT, (r + 1) % p, t, comm,
			  &x->req[4 + t]);
	}
}

static void p2p_end(struct p2p *x, MPI_Comm comm)
{
	MPI_Status st, sts[8];
	int r, p, t, v = 0;

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &p);
	/* The wildcard takes this one: no collective's message, ever. */
	MPI_Send(&v, 1, MPI_INT, (r + 1) % p, 99, comm);
	MPI_Waitall(8, x->req, sts);
	MPI_Wait(&x->req[8], &st);
	for (t = 0; t < 4; t++)
		CHECK(x->in[t] == val((r + p - 1) % p, t, 77));
	CHECK(st.MPI_SOURCE == (r + p - 1) % p && st.MPI_TAG == 99);
}

/* The strided type: 2 ints of every 4 (offsets 0 and 2), extent 4 ints. */
static MPI_Datatype strided(void)
{
	MPI_Datatype v, t;

	MPI_Type_vector(2, 1, 2, MPI_INT, &v);
	MPI_Type_create_resized(v, 0, 4 * sizeof(int), &t);
	MPI_Type_free(&v);
	MPI_Type_commit(&t);
	return t;
}

/*
 * The calls checked below with how < 0 are the blocking ones; otherwise
 * the nonblocking form, completed by complete(how) (how + 1 for a second
 * call).
 */
static void complete(MPI_Request *req, int how);

/* n elements of t per part; ipe: ints per element's extent. */
static void alltoall(MPI_Comm comm, int n, MPI_Datatype t, int ipe, int how)
{
	int r, p, i, k;
	size_t len;
	MPI_Request req;
	int *s, *a, *b;

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &p);
	len = (size_t)p * n * ipe;
	s = ints(len, 0);
	a = ints(len, SENTINEL);
	b = ints(len, SENTINEL);
	for (i = 0; i < p; i++)
		for (k = 0; k < n * ipe; k++)
			s[(size_t)i * n * ipe + k] = val(r, i, k);
	if (how < 0) {
		MPI_Alltoall(s, n, t, a, n, t, comm);
	} else {
		MPI_Ialltoall(s, n, t, a, n, t, comm, &req);
		complete(&req, how);
	}
	PMPI_Alltoall(s, n, t, b, n, t, comm);
	same(a, b, len);
	/* In place: the same result from the send data in the buffer. */
	memcpy(a, s, len * sizeof(int));
	memcpy(b, s, len * sizeof(int));
	if (how < 0) {
		MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, n, t, comm);
	} else {
		MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, n, t,
			      comm, &req);
		complete(&req, how + 1);
	}
	PMPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, n, t, comm);
	same(a, b, len);
	free(s);
	free(a);
	free(b);
}

/* Part from rank f to rank t: uneven, some empty. */
static int vcount(int f, int t, int n)
{
	return (f + 2 * t) % 3 == 1 ? 0 : n + 5 * f + t;
}

static void alltoallv(MPI_Comm comm, int n)
{
	int r, p, i, k, sn = 0, rn = 0;
	int sc[64], sd[64], rc[64], rd[64];
	int *s, *a, *b;

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &p);
	/* Gaps of 3 ints between parts, receive parts in reverse order. */
	for (i = 0; i < p; i++) {
		sc[i] = vcount(r, i, n);
		sd[i] = sn;
		sn += sc[i] + 3;
		rc[i] = vcount(i, r, n);
	}
	for (i = p - 1; i >= 0; i--) {
		rd[i] = rn;
		rn += rc[i] + 3;
	}
	s = ints((size_t)sn, 0);
	a = ints((size_t)rn, SENTINEL);
	b = ints((size_t)rn, SENTINEL);
	for (i = 0; i < p; i++)
		for (k = 0; k < sc[i]; k++)
			s[sd[i] + k] = val(r, i, k);
	MPI_Alltoallv(s, sc, sd, MPI_INT, a, rc, rd, MPI_INT, comm);
	PMPI_Alltoallv(s, sc, sd, MPI_INT, b, rc, rd, MPI_INT, comm);
	same(a, b, (size_t)rn);
	for (i = 0; i < p; i++)
		CHECK(rc[i] == 0 || a[rd[i] + rc[i] - 1] ==
		      val(i, r, rc[i] - 1));
	free(s);
	free(a);
	free(b);
	/* In place: one count per pair both ways. */
	for (i = 0, rn = 0; i < p; i++) {
		rc[i] = (r + i) % 3 == 0 ? 0 : n + r + i;
		rd[i] = rn;
		rn += rc[i] + 1;
	}
	a = ints((size_t)rn, SENTINEL);
	b = ints((size_t)rn, SENTINEL);
	for (i = 0; i < p; i++)
		for (k = 0; k < rc[i]; k++)
			a[rd[i] + k] = b[rd[i] + k] = val(r, i, k);
	MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, a, rc, rd,
		      MPI_INT, comm);
	PMPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, b, rc, rd,
		       MPI_INT, comm);
	same(a, b, (size_t)rn);
	free(a);
	free(b);
}

/*
 * The types of MPI_Alltoallw's parts, all of ints: MPI_INT, MPI_2INT, 3
 * contiguous ints, the strided type (2 ints of an extent of 4); ints of
 * data an element, ints of extent.
 */
static MPI_Datatype wtypes[4];
static const int wsize[4] = { 1, 2, 3, 2 }, wext[4] = { 1, 2, 3, 4 };

/* The type of the part between ranks f and t on side w (0 send, 1 recv). */
static int wtype(int f, int t, int w)
{
	return (f * 3 + t + 5 * w + 2 * w * t) % 4;
}

/*
 * MPI_Alltoallw: every part its own type on each side, derived ones
 * included, the same ints both ways (6 m of them, a whole number of
 * elements of every type), some parts empty, byte displacements with
 * gaps, receive parts in reverse order; then in place, parts of
 * m(r, i) = m(i, r) ints. Against PMPI_Alltoallw.
 */
static void alltoallw(MPI_Comm comm, int n)
{
	int r, p, i, k, x, sn = 0, rn = 0, q = 6 * (n / 6 + 1);
	int sc[64], sd[64], rc[64], rd[64];
	MPI_Datatype st[64], rt[64];
	int *s, *a, *b;

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &p);
	for (i = 0; i < p; i++) {
		x = wtype(r, i, 0);
		st[i] = wtypes[x];
		sc[i] = vcount(r, i, q) / 6 * 6 / wsize[x];
		sd[i] = sn * (int)sizeof(int);
		sn += sc[i] * wext[x] + 2;
		x = wtype(i, r, 1);
		rt[i] = wtypes[x];
		rc[i] = vcount(i, r, q) / 6 * 6 / wsize[x];
	}
	for (i = p - 1; i >= 0; i--) {
		rd[i] = rn * (int)sizeof(int);
		rn += rc[i] * wext[wtype(i, r, 1)] + 1;
	}
	s = ints((size_t)sn, 0);
	a = ints((size_t)rn, SENTINEL);
	b = ints((size_t)rn, SENTINEL);
	for (k = 0; k < sn; k++)
		s[k] = val(r, 14, k);
	MPI_Alltoallw(s, sc, sd, st, a, rc, rd, rt, comm);
	PMPI_Alltoallw(s, sc, sd, st, b, rc, rd, rt, comm);
	same(a, b, (size_t)rn);
	free(a);
	free(b);
	for (i = 0, rn = 0; i < p; i++) {
		x = wtype(r, i, 1);
		rt[i] = wtypes[x];
		rc[i] = (r + i) % 3 == 1 ? 0 : (q + 6 * (r + i)) / wsize[x];
		rd[i] = rn * (int)sizeof(int);
		rn += rc[i] * wext[x] + 1;
	}
	a = ints((size_t)rn, 0);
	b = ints((size_t)rn, 0);
	for (k = 0; k < rn; k++)
		a[k] = b[k] = val(r, 15, k);
	MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, a, rc, rd, rt, comm);
	PMPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, b, rc, rd, rt, comm);
	same(a, b, (size_t)rn);
	free(s);
	free(a);
	free(b);
}

static void allgather(MPI_Comm comm, int n, MPI_Datatype t, int ipe,
		      int how)
{
	int r, p, k;
	size_t len;
	MPI_Request req;
	int *s, *a, *b;

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &p);
	len = (size_t)p * n * ipe;
	s = ints((size_t)n * ipe, 0);
	a = ints(len, SENTINEL);
	b = ints(len, SENTINEL);
	for (k = 0; k < n * ipe; k++)
		s[k] = val(r, 0, k);
	if (how < 0) {
		MPI_Allgather(s, n, t, a, n, t, comm);
	} else {
		MPI_Iallgather(s, n, t, a, n, t, comm, &req);
		complete(&req, how);
	}
	PMPI_Allgather(s, n, t, b, n, t, comm);
	same(a, b, len);
	/* In place: this rank's part is in the buffer already. */
	for (k = 0; k < n * ipe; k++)
		a[(size_t)r * n * ipe + k] = b[(size_t)r * n * ipe + k] =
			val(r, 1, k);
	if (how < 0) {
		MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, n, t,
			      comm);
	} else {
		MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, n, t,
			       comm, &req);
		complete(&req, how + 1);
	}
	PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, n, t, comm);
	same(a, b, len);
	free(s);
	free(a);
	free(b);
}

static void allgatherv(MPI_Comm comm, int n)
{
	int r, p, i, k, rn = 0, rc[64], rd[64];
	int *s, *a, *b;

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &p);
	for (i = p - 1; i >= 0; i--) {
		rc[i] = i % 3 == 1 ? 0 : n + 7 * i;
		rd[i] = rn;
		rn += rc[i] + 2;
	}
	s = ints((size_t)rc[r], 0);
	a = ints((size_t)rn, SENTINEL);
	b = ints((size_t)rn, SENTINEL);
	for (k = 0; k < rc[r]; k++)
		s[k] = val(r, 2, k);
	MPI_Allgatherv(s, rc[r], MPI_INT, a, rc, rd, MPI_INT, comm);
	PMPI_Allgatherv(s, rc[r], MPI_INT, b, rc, rd, MPI_INT, comm);
	same(a, b, (size_t)rn);
	for (k = 0; k < rc[r]; k++)
		a[rd[r] + k] = b[rd[r] + k] = val(r, 3, k);
	MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, rc, rd, MPI_INT,
		       comm);
	PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, rc, rd,
			MPI_INT, comm);
	same(a, b, (size_t)rn);
	free(s);
	free(a);
	free(b);
}

/* Every root in turn; nonblocking: complete(how + root). */
static void bcast(MPI_Comm comm, int n, MPI_Datatype t, int ipe, int how)
{
	int r, p, root, k;
	size_t len = (size_t)n * ipe;
	MPI_Request req;
	int *a, *b;

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &p);
	a = ints(len, SENTINEL);
	b = ints(len, SENTINEL);
	for (root = 0; root < p; root++) {
		for (k = 0; r == root && k < (int)len; k++)
			a[k] = b[k] = val(root, 4, k);
		if (how < 0) {
			MPI_Bcast(a, n, t, root, comm);
		} else {
			MPI_Ibcast(a, n, t, root, comm, &req);
			complete(&req, how + root);
		}
		PMPI_Bcast(b, n, t, root, comm);
		same(a, b, len);
		CHECK(!n || t != MPI_INT || a[len - 1] ==
		      val(root, 4, (int)len - 1));
	}
	free(a);
	free(b);
}

static void suite(MPI_Comm comm, MPI_Datatype str)
{
	/* Parts of 0 B to 1.2 MB of ints: below and above the thresholds. */
	static const int sizes[] = { 0, 1, 100, 1027, 16384, 70000, 300000 };
	unsigned int i;
	struct p2p x;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int n = sizes[i];

		p2p_start(&x, comm);
		alltoall(comm, n, MPI_INT, 1, -1);
		alltoallv(comm, n);
		alltoallw(comm, n);
		allgather(comm, n, MPI_INT, 1, -1);
		allgatherv(comm, n);
		bcast(comm, n, MPI_INT, 1, -1);
		p2p_end(&x, comm);
		/* Non-contiguous: 2 ints of 4, parts up to 600 kB. */
		if (n > 150000)
			n /= 2;
		alltoall(comm, n, str, 4, -1);
		allgather(comm, n, str, 4, -1);
		bcast(comm, n, str, 4, -1);
	}
}

/* ---- reductions, gather and scatter ------------------------------------ */

/* Calls each rank makes that stay with the MPI whatever the thresholds. */
static int to_mpi;

/*
 * A predefined type and what it holds: 'i' C signed integer, 'u' C
 * unsigned, 'I' Fortran INTEGER, 'f' floating, 'c' complex, 'b' logical,
 * 'y' byte, 'p' a (value, index) pair whose value is an integer ('i') or
 * floating ('f') of vsize bytes, the index at ioff (an int, or for the
 * Fortran pairs of the value's type).
 */
struct ty {
	MPI_Datatype t;
	char cls, vcls;
	int vsize, ioff;
	char icls;		/* 'f': the index is of the value's type */
};

static void put_num(char *p, char cls, int size, long v)
{
	if (cls == 'f') {
		if (size == 4)
			*(float *)p = (float)v;
		else if (size == 8)
			*(double *)p = (double)v;
		else
			*(long double *)p = (long double)v;
	} else if (size == 1) {
		*(signed char *)p = (signed char)v;
	} else if (size == 2) {
		*(short *)p = (short)v;
	} else if (size == 4) {
		*(int *)p = (int)v;
	} else {
		*(long long *)p = v;
	}
}

/* Small values whose sums and products are exact in any order. */
static long small(unsigned int seed, int rank, size_t i)
{
	unsigned int h = (unsigned int)i * 2654435761u ^
			 (unsigned int)(rank + 1) * 40503u ^ seed;

	h ^= h >> 13;
	return (long)(h % 7) - 3;
}

/* n elements of y at buf, zeroed first (padding compares equal). */
static void fill(const struct ty *y, char *buf, int n, MPI_Aint ext,
		 int rank, unsigned int seed)
{
	int i, size;

	memset(buf, 0, (size_t)n * ext);
	MPI_Type_size(y->t, &size);
	for (i = 0; i < n; i++) {
		char *e = buf + (size_t)i * ext;
		long v = small(seed, rank, i);

		switch (y->cls) {
		case 'u':
			v += 3;
			/* fall through */
		case 'i':
		case 'I':
			put_num(e, 'i', size, v);
			break;
		case 'f':
			put_num(e, 'f', size, v);
			break;
		case 'c':
			put_num(e, 'f', size / 2, v);
			put_num(e + size / 2, 'f', size / 2, small(seed, rank,
								   i + 1));
			break;
		case 'b':
			put_num(e, 'i', size, v > 0);
			break;
		case 'y':
			*(unsigned char *)e = (unsigned char)(v * 37 + rank);
			break;
		case 'p':
			put_num(e, y->vcls, y->vsize, v);
			put_num(e + y->ioff, y->icls == 'f' ? 'f' : 'i',
				y->icls ? y->vsize : 4, rank);
			break;
		}
	}
}

/*
 * n elements of y agree: bytes, but floating values by value (a complex
 * product's zero takes its sign from the order of the operations).
 */
static int agree(const struct ty *y, const char *a, const char *b, int n,
		 MPI_Aint ext)
{
	int size, i, half;

	if (y->cls == 'p') {
		/* Value and index; the padding between is anyone's. */
		for (i = 0; i < n; i++) {
			const char *x = a + (size_t)i * ext;
			const char *z = b + (size_t)i * ext;
			int is = y->icls ? y->vsize : 4;

			if (y->vcls == 'f' && y->vsize == sizeof(long double) ?
			    *(const long double *)x != *(const long double *)z :
			    memcmp(x, z, (size_t)y->vsize))
				return 0;
			if (memcmp(x + y->ioff, z + y->ioff, (size_t)is))
				return 0;
		}
		return 1;
	}
	if (y->cls != 'c' || n <= 0)
		return !memcmp(a, b, (size_t)(n > 0 ? n : 0) * ext);
	MPI_Type_size(y->t, &size);
	half = size / 2;
	for (i = 0; i < 2 * n; i++) {
		const char *x = a + (size_t)i * half, *z = b + (size_t)i * half;

		if (half == 4 ? *(const float *)x != *(const float *)z :
		    *(const double *)x != *(const double *)z)
			return 0;
	}
	return 1;
}

/* Whether the MPI defines predefined op o on type class c. */
static int defined(MPI_Op o, char c)
{
	if (o == MPI_MINLOC || o == MPI_MAXLOC)
		return c == 'p';
	if (c == 'p')
		return 0;
	if (o == MPI_SUM || o == MPI_PROD)
		return c != 'b' && c != 'y';
	if (o == MPI_MIN || o == MPI_MAX)
		return c == 'i' || c == 'u' || c == 'I' || c == 'f';
	if (o == MPI_LAND || o == MPI_LOR || o == MPI_LXOR)
		return c == 'i' || c == 'u' || c == 'b';
	return c == 'i' || c == 'u' || c == 'I' || c == 'y';
}

/*
 * A non-commutative user operation: x -> a x + b maps (a, b in one
 * uint64_t) composed, inout = in o inout; associative, order matters.
 */
static void affine(void *in, void *inout, int *len, MPI_Datatype *t)
{
	uint64_t *x = in, *y = inout;
	int i;

	(void)t;
	for (i = 0; i < *len; i++) {
		uint32_t a = (uint32_t)(x[i] >> 32), b = (uint32_t)x[i];
		uint32_t c = (uint32_t)(y[i] >> 32), d = (uint32_t)y[i];

		y[i] = (uint64_t)(a * c) << 32 | (uint32_t)(a * d + b);
	}
}

/*
 * A commutative user operation on ints: (1 + x)(1 + y) - 1 mod 2^32,
 * associative too.
 */
static void mulinc(void *in, void *inout, int *len, MPI_Datatype *t)
{
	unsigned int *x = in, *y = inout;
	int i, size;

	/* Also on the derived type of 2 ints: every int of the elements. */
	MPI_Type_size(*t, &size);
	for (i = 0; i < *len * (size / 4); i++)
		y[i] = x[i] * y[i] + x[i] + y[i];
}

/*
 * Scan and Exscan of n elements of y under o from s, each against the
 * same call through PMPI and in place against that (a, b: len bytes of
 * room); Exscan's result at rank 0 is undefined, not compared.
 */
static void scans(MPI_Comm comm, const struct ty *y, MPI_Op o, int n,
		  const char *s, char *a, char *b, size_t len, MPI_Aint ext)
{
	int (*const mine[])(const void *, void *, int, MPI_Datatype, MPI_Op,
			    MPI_Comm) = { MPI_Scan, MPI_Exscan };
	int (*const ref[])(const void *, void *, int, MPI_Datatype, MPI_Op,
			   MPI_Comm) = { PMPI_Scan, PMPI_Exscan };
	int r, ex;

	MPI_Comm_rank(comm, &r);
	for (ex = 0; ex < 2; ex++) {
		memset(a, 0x5a, len);
		memcpy(b, a, len);
		mine[ex](s, a, n, y->t, o, comm);
		ref[ex](s, b, n, y->t, o, comm);
		CHECK((ex && !r) || agree(y, a, b, n, ext));
		/* In place, against the result above. */
		memcpy(a, s, len);
		mine[ex](MPI_IN_PLACE, a, n, y->t, o, comm);
		CHECK((ex && !r) || agree(y, a, b, n, ext));
	}
}

/*
 * The four reductions of n elements of y under o, each against the same
 * call through PMPI: Allreduce (and in place), Reduce to root (and in
 * place at it), Reduce_scatter_block of n / p per rank, Reduce_scatter of
 * uneven blocks (and in place).
 */
static void reductions(MPI_Comm comm, const struct ty *y, MPI_Op o, int n,
		       int root, unsigned int seed)
{
	int r, p, i, rc[64], tot = 0, blk;
	MPI_Aint lb, ext;
	char *s, *a, *b;
	size_t len;

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &p);
	MPI_Type_get_extent(y->t, &lb, &ext);
	MPI_Type_get_name(y->t, where, &i);
	snprintf(where + i, sizeof(where) - i, " op %s n %d",
		 o == MPI_SUM ? "sum" : o == MPI_PROD ? "prod" : "other", n);
	for (i = 0; i < p; i++) {
		rc[i] = (i + seed) % 3 == 1 ? 0 : n / p + i * 3;
		tot += rc[i];
	}
	tot = tot > n ? tot : n;
	len = (size_t)tot * ext;
	s = malloc(len + 1);
	a = malloc(len + 1);
	b = malloc(len + 1);
	if (!s || !a || !b)
		MPI_Abort(MPI_COMM_WORLD, 3);
	fill(y, s, tot, ext, r, seed);
	memset(a, 0x5a, len);
	memset(b, 0x5a, len);
	MPI_Allreduce(s, a, n, y->t, o, comm);
	PMPI_Allreduce(s, b, n, y->t, o, comm);
	CHECK(agree(y, a, b, n, ext));
	memcpy(a, s, len);
	memcpy(b, s, len);
	MPI_Allreduce(MPI_IN_PLACE, a, n, y->t, o, comm);
	PMPI_Allreduce(MPI_IN_PLACE, b, n, y->t, o, comm);
	CHECK(agree(y, a, b, n, ext));
	memset(a, 0x5a, len);
	memset(b, 0x5a, len);
	MPI_Reduce(s, a, n, y->t, o, root, comm);
	PMPI_Reduce(s, b, n, y->t, o, root, comm);
	CHECK(r != root || agree(y, a, b, n, ext));
	/*
	 * In place at the root, against the result above: MPICH 4.0.2's
	 * own in-place Reduce to a root other than 0 crashes (so there only
	 * when the root is 0: the MPI's part of the default thresholds).
	 */
#ifdef MPICH_VERSION
	if (root == 0) {
#else
	{
#endif
		memcpy(a, s, len);
		MPI_Reduce(r == root ? MPI_IN_PLACE : s, a, n, y->t, o, root,
			   comm);
		CHECK(r != root || agree(y, a, b, n, ext));
	}
	blk = n / p;
	memset(a, 0x5a, len);
	memset(b, 0x5a, len);
	MPI_Reduce_scatter_block(s, a, blk, y->t, o, comm);
	PMPI_Reduce_scatter_block(s, b, blk, y->t, o, comm);
	CHECK(agree(y, a, b, blk, ext));
	MPI_Reduce_scatter(s, a, rc, y->t, o, comm);
	PMPI_Reduce_scatter(s, b, rc, y->t, o, comm);
	CHECK(agree(y, a, b, rc[r], ext));
	/* In place, against the result above (MPICH 4.0.2's own fails). */
	memcpy(a, s, len);
	MPI_Reduce_scatter(MPI_IN_PLACE, a, rc, y->t, o, comm);
	CHECK(agree(y, a, b, rc[r], ext));
	scans(comm, y, o, n, s, a, b, len, ext);
	free(s);
	free(a);
	free(b);
}

/* Every predefined op on every predefined type it is defined for. */
static void all_ops(MPI_Comm comm, int n, unsigned int seed)
{
	const struct ty types[] = {
		{ MPI_SIGNED_CHAR, 'i', 0, 0, 0, 0 },
		{ MPI_UNSIGNED_CHAR, 'u', 0, 0, 0, 0 },
		{ MPI_SHORT, 'i', 0, 0, 0, 0 },
		{ MPI_UNSIGNED_SHORT, 'u', 0, 0, 0, 0 },
		{ MPI_INT, 'i', 0, 0, 0, 0 },
		{ MPI_UNSIGNED, 'u', 0, 0, 0, 0 },
		{ MPI_LONG, 'i', 0, 0, 0, 0 },
		{ MPI_UNSIGNED_LONG, 'u', 0, 0, 0, 0 },
		{ MPI_LONG_LONG, 'i', 0, 0, 0, 0 },
		{ MPI_UNSIGNED_LONG_LONG, 'u', 0, 0, 0, 0 },
		{ MPI_INT8_T, 'i', 0, 0, 0, 0 },
		{ MPI_INT16_T, 'i', 0, 0, 0, 0 },
		{ MPI_INT32_T, 'i', 0, 0, 0, 0 },
		{ MPI_INT64_T, 'i', 0, 0, 0, 0 },
		{ MPI_UINT8_T, 'u', 0, 0, 0, 0 },
		{ MPI_UINT16_T, 'u', 0, 0, 0, 0 },
		{ MPI_UINT32_T, 'u', 0, 0, 0, 0 },
		{ MPI_UINT64_T, 'u', 0, 0, 0, 0 },
		{ MPI_AINT, 'i', 0, 0, 0, 0 },
		{ MPI_OFFSET, 'i', 0, 0, 0, 0 },
		{ MPI_FLOAT, 'f', 0, 0, 0, 0 },
		{ MPI_DOUBLE, 'f', 0, 0, 0, 0 },
		{ MPI_LONG_DOUBLE, 'f', 0, 0, 0, 0 },
		{ MPI_C_BOOL, 'b', 0, 0, 0, 0 },
		{ MPI_C_FLOAT_COMPLEX, 'c', 0, 0, 0, 0 },
		{ MPI_C_DOUBLE_COMPLEX, 'c', 0, 0, 0, 0 },
		{ MPI_BYTE, 'y', 0, 0, 0, 0 },
		{ MPI_INTEGER, 'I', 0, 0, 0, 0 },
		{ MPI_REAL, 'f', 0, 0, 0, 0 },
		{ MPI_DOUBLE_PRECISION, 'f', 0, 0, 0, 0 },
		{ MPI_COMPLEX, 'c', 0, 0, 0, 0 },
		{ MPI_LOGICAL, 'b', 0, 0, 0, 0 },
		{ MPI_FLOAT_INT, 'p', 'f', 4, 4, 0 },
		{ MPI_DOUBLE_INT, 'p', 'f', 8, 8, 0 },
		{ MPI_LONG_INT, 'p', 'i', sizeof(long), sizeof(long), 0 },
		{ MPI_2INT, 'p', 'i', 4, 4, 0 },
		{ MPI_SHORT_INT, 'p', 'i', 2, 4, 0 },
		{ MPI_LONG_DOUBLE_INT, 'p', 'f', sizeof(long double),
		  sizeof(long double), 0 },
		{ MPI_2REAL, 'p', 'f', 4, 4, 'f' },
		{ MPI_2DOUBLE_PRECISION, 'p', 'f', 8, 8, 'f' },
		{ MPI_2INTEGER, 'p', 'i', 4, 4, 'i' },
	};
	const MPI_Op ops[] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND,
			       MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR,
			       MPI_MINLOC, MPI_MAXLOC };
	unsigned int t, o;
	int p;

	MPI_Comm_size(comm, &p);
	for (t = 0; t < sizeof(types) / sizeof(types[0]); t++)
#ifdef MPICH_VERSION
		/*
		 * MPICH's ranks poll without yielding: 4 on 2 cores take
		 * seconds a call. One type in 5 there; all under Open MPI.
		 */
		if (t % 5 == 0)
#endif
		for (o = 0; o < sizeof(ops) / sizeof(ops[0]); o++)
			if (types[t].t != MPI_DATATYPE_NULL &&
			    defined(ops[o], types[t].cls))
				reductions(comm, &types[t], ops[o], n,
					   (int)((seed + t + o) % p), seed + o);
}

/* User-defined operations, commutative and not; a derived type. */
static void user_ops(MPI_Comm comm, int n, unsigned int seed)
{
	struct ty u64 = { MPI_UINT64_T, 'u', 0, 0, 0, 0 };
	struct ty i32 = { MPI_INT, 'i', 0, 0, 0, 0 };
	struct ty two = { MPI_DATATYPE_NULL, 'i', 0, 0, 0, 0 };
	MPI_Op nc, cm;
	int p;

	MPI_Comm_size(comm, &p);
	MPI_Op_create(affine, 0, &nc);
	MPI_Op_create(mulinc, 1, &cm);
	reductions(comm, &u64, nc, n, (int)(seed % p), seed);
	reductions(comm, &i32, cm, n, (int)((seed + 1) % p), seed);
	/*
	 * A derived type: the whole call goes to the MPI (7 calls). Not
	 * under MPICH 4.0.2, whose own in-place reductions of one fail.
	 */
#ifndef MPICH_VERSION
	MPI_Type_contiguous(2, MPI_INT, &two.t);
	MPI_Type_commit(&two.t);
	reductions(comm, &two, cm, n / 2, 0, seed);
	to_mpi += 11;
	MPI_Type_free(&two.t);
#else
	(void)two;
#endif
	MPI_Op_free(&nc);
	MPI_Op_free(&cm);
}

/* Gather(v) and Scatter(v) of n ints per part to and from root. */
static void rooted(MPI_Comm comm, int n, int root)
{
	int r, p, i, k, rc[64], rd[64], tot = 0;
	int *s, *a, *b;

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &p);
	for (i = p - 1; i >= 0; i--) {
		rc[i] = i % 3 == 2 ? 0 : n + 5 * i;
		rd[i] = tot;
		tot += rc[i] + 3;
	}
	tot = tot > p * n ? tot : p * n;
	s = ints((size_t)tot, 0);
	a = ints((size_t)tot, SENTINEL);
	b = ints((size_t)tot, SENTINEL);
	for (k = 0; k < tot; k++)
		s[k] = val(r, 5, k);
	MPI_Gather(s, n, MPI_INT, a, n, MPI_INT, root, comm);
	PMPI_Gather(s, n, MPI_INT, b, n, MPI_INT, root, comm);
	CHECK(r != root || !memcmp(a, b, (size_t)p * n * sizeof(int)));
	MPI_Gatherv(s, rc[r], MPI_INT, a, rc, rd, MPI_INT, root, comm);
	PMPI_Gatherv(s, rc[r], MPI_INT, b, rc, rd, MPI_INT, root, comm);
	CHECK(r != root || !memcmp(a, b, (size_t)tot * sizeof(int)));
	/* In place at the root: its part is in the buffer already. */
	MPI_Gather(r == root ? MPI_IN_PLACE : s, n, MPI_INT, a, n, MPI_INT,
		   root, comm);
	PMPI_Gather(r == root ? MPI_IN_PLACE : s, n, MPI_INT, b, n, MPI_INT,
		    root, comm);
	CHECK(r != root || !memcmp(a, b, (size_t)p * n * sizeof(int)));
	memset(a, 0x5a, (size_t)tot * sizeof(int));
	memset(b, 0x5a, (size_t)tot * sizeof(int));
	MPI_Scatter(s, n, MPI_INT, a, n, MPI_INT, root, comm);
	PMPI_Scatter(s, n, MPI_INT, b, n, MPI_INT, root, comm);
	same(a, b, (size_t)n);
	MPI_Scatterv(s, rc, rd, MPI_INT, a, rc[r], MPI_INT, root, comm);
	PMPI_Scatterv(s, rc, rd, MPI_INT, b, rc[r], MPI_INT, root, comm);
	same(a, b, (size_t)rc[r]);
	CHECK(!rc[r] || a[rc[r] - 1] == val(root, 5, rd[r] + rc[r] - 1));
	MPI_Scatter(s, n, MPI_INT, r == root ? MPI_IN_PLACE : a, n, MPI_INT,
		    root, comm);
	PMPI_Scatter(s, n, MPI_INT, r == root ? MPI_IN_PLACE : b, n, MPI_INT,
		     root, comm);
	same(a, b, (size_t)n);
	free(s);
	free(a);
	free(b);
}

/*
 * The reductions, gather and scatter on comm: every op and type at one
 * size, then random sizes from 0 B to a few MiB (seed agreed by all),
 * with point-to-point traffic in flight.
 */
static void suite2(MPI_Comm comm, unsigned int seed, int full)
{
	struct ty i32 = { MPI_INT, 'i', 0, 0, 0, 0 };
	struct ty f64 = { MPI_DOUBLE, 'f', 0, 0, 0, 0 };
	int i, p, n;
	struct p2p x;

	MPI_Comm_size(comm, &p);
	srand(seed);
	p2p_start(&x, comm);
	if (full)
		all_ops(comm, 1000 + rand() % 3000, seed);
	user_ops(comm, 1000 + rand() % 300000, seed);
	p2p_end(&x, comm);
#ifdef MPICH_VERSION
	/* Its ranks poll without yielding: a shorter run (see all_ops). */
	for (i = 0; i < 2; i++) {
#else
	for (i = 0; i < 4; i++) {
#endif
		/* 0 B, then up to 1 << (10 + 2i) ints: 4 KiB to 1 MiB. */
		n = i ? rand() % (1 << (10 + 3 * i)) : 0;
		p2p_start(&x, comm);
		reductions(comm, &i32, MPI_SUM, n, rand() % p, seed + i);
		reductions(comm, &f64, MPI_MAX, n / 2, rand() % p, seed + i);
		rooted(comm, n, rand() % p);
		p2p_end(&x, comm);
	}
}

/* ---- nonblocking collectives and the barrier --------------------------- */

/*
 * Complete *req through one of the completion calls (how, modulo 7): Wait,
 * a Test loop, Waitall, Testall, Waitany, Testany or Waitsome, the last
 * four beside a null request. Each must leave *req null.
 */
static void complete(MPI_Request *req, int how)
{
	MPI_Request two[2];
	MPI_Status sts[2];
	int flag = 0, idx = -1, n = 0, out[2];

	two[0] = MPI_REQUEST_NULL;
	two[1] = *req;
	switch (how % 7) {
	case 0:
		MPI_Wait(req, MPI_STATUS_IGNORE);
		break;
	case 1:
		while (!flag)
			MPI_Test(req, &flag, MPI_STATUS_IGNORE);
		break;
	case 2:
		MPI_Waitall(2, two, sts);
		*req = two[1];
		break;
	case 3:
		while (!flag)
			MPI_Testall(1, req, &flag, sts);
		break;
	case 4:
		MPI_Waitany(2, two, &idx, MPI_STATUS_IGNORE);
		CHECK(idx == 1);
		*req = two[1];
		break;
	case 5:
		while (!flag)
			MPI_Testany(2, two, &idx, &flag, MPI_STATUS_IGNORE);
		CHECK(idx == 1);
		*req = two[1];
		break;
	default:
		MPI_Waitsome(2, two, &n, out, sts);
		CHECK(n == 1 && out[0] == 1);
		*req = two[1];
		break;
	}
	CHECK(*req == MPI_REQUEST_NULL);
}

/*
 * Iallreduce of n elements of y under o, and in place, against
 * PMPI_Allreduce; in place only where inplace (MPICH 4.0.2's own in-place
 * reductions of a derived type fail).
 */
static void iallreduce(MPI_Comm comm, const struct ty *y, MPI_Op o, int n,
		       int how, int inplace)
{
	MPI_Aint lb, ext;
	MPI_Request req;
	char *s, *a, *b;
	size_t len;
	int r, i;

	MPI_Comm_rank(comm, &r);
	MPI_Type_get_extent(y->t, &lb, &ext);
	MPI_Type_get_name(y->t, where, &i);
	snprintf(where + i, sizeof(where) - i, " iallreduce n %d", n);
	len = (size_t)(n ? n : 1) * ext;
	s = malloc(len);
	a = malloc(len);
	b = malloc(len);
	if (!s || !a || !b)
		MPI_Abort(MPI_COMM_WORLD, 3);
	fill(y, s, n, ext, r, (unsigned int)how);
	memset(a, 0x5a, len);
	memset(b, 0x5a, len);
	MPI_Iallreduce(s, a, n, y->t, o, comm, &req);
	complete(&req, how);
	PMPI_Allreduce(s, b, n, y->t, o, comm);
	CHECK(agree(y, a, b, n, ext));
	if (inplace) {
		memcpy(a, s, len);
		MPI_Iallreduce(MPI_IN_PLACE, a, n, y->t, o, comm, &req);
		complete(&req, how + 1);
		CHECK(agree(y, a, b, n, ext));
	}
	where[0] = 0;
	free(s);
	free(a);
	free(b);
}

/*
 * Two and more nonblocking collectives in flight on one communicator at
 * once, a blocking one started and finished between, point-to-point of
 * the program in flight across all: completed in the reverse order,
 * each against the MPI's own result.
 */
static void overlap(MPI_Comm comm, int n, MPI_Datatype str, int how)
{
	struct ty i32 = { MPI_INT, 'i', 0, 0, 0, 0 };
	int r, p, i, k, flag = 0;
	MPI_Request req[4];
	MPI_Status sts[2];
	int *s, *a1, *a2, *a3, *a4, *b, *c1, *c2;
	size_t len;
	struct p2p x;

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &p);
	len = (size_t)p * n * 4;
	s = ints(len, 0);
	a1 = ints(len, SENTINEL);
	a2 = ints(len, SENTINEL);
	a3 = ints(len, SENTINEL);
	a4 = ints(len, SENTINEL);
	b = ints(len, SENTINEL);
	c1 = ints(len, SENTINEL);
	c2 = ints(len, SENTINEL);
	fill(&i32, (char *)s, (int)len, sizeof(int), r, 5);
	for (k = 0; k < n * 4; k++)
		a4[k] = c2[k] = r == p - 1 ? val(r, 10, k) : SENTINEL;
	p2p_start(&x, comm);
	MPI_Ialltoall(s, n, MPI_INT, a1, n, MPI_INT, comm, &req[0]);
	MPI_Iallgather(s, n, str, a2, n, str, comm, &req[1]);
	MPI_Iallreduce(s, a3, n * p, MPI_INT, MPI_SUM, comm, &req[2]);
	/* A blocking collective between: its own tag, no mix-up. */
	for (k = 0; k < n; k++)
		b[k] = c1[k] = r == 0 ? val(r, 11, k) : SENTINEL;
	MPI_Bcast(b, n, MPI_INT, 0, comm);
	PMPI_Bcast(c1, n, MPI_INT, 0, comm);
	same(b, c1, (size_t)n);
	MPI_Ibcast(a4, n * 4, MPI_INT, p - 1, comm, &req[3]);
	/* Poll the last one first while the others move. */
	while (!flag)
		MPI_Test(&req[3], &flag, MPI_STATUS_IGNORE);
	for (i = 2; i >= 0; i--)
		complete(&req[i], how + i);
	p2p_end(&x, comm);
	PMPI_Alltoall(s, n, MPI_INT, b, n, MPI_INT, comm);
	same(a1, b, (size_t)p * n);
	/* The strided type leaves gaps: both must hold the sentinel there. */
	for (k = 0; k < (int)len; k++)
		c1[k] = SENTINEL;
	PMPI_Allgather(s, n, str, c1, n, str, comm);
	same(a2, c1, len);
	PMPI_Allreduce(s, b, n * p, MPI_INT, MPI_SUM, comm);
	same(a3, b, (size_t)p * n);
	PMPI_Bcast(c2, n * 4, MPI_INT, p - 1, comm);
	same(a4, c2, (size_t)n * 4);
	/* Started together, completed together by one Waitall. */
	MPI_Ialltoall(s, n, MPI_INT, a1, n, MPI_INT, comm, &req[0]);
	MPI_Iallreduce(MPI_IN_PLACE, a3, n * p, MPI_INT, MPI_SUM, comm,
		       &req[1]);
	MPI_Waitall(2, req, sts);
	PMPI_Allreduce(MPI_IN_PLACE, b, n * p, MPI_INT, MPI_SUM, comm);
	same(a3, b, (size_t)p * n);
	PMPI_Alltoall(s, n, MPI_INT, b, n, MPI_INT, comm);
	same(a1, b, (size_t)p * n);
	free(s);
	free(a1);
	free(a2);
	free(a3);
	free(a4);
	free(b);
	free(c1);
	free(c2);
}

/*
 * The root of a broadcast frees its request at once where the layer
 * carries every broadcast (ZCRECV_MPI_COLL_BCAST_MIN=0): MPI calls this
 * erroneous and both MPIs may refuse it, the layer lets the call run to
 * its end. The others get the data. Then an Iallreduce advanced by a
 * loop of MPI_Test with work between, as a program overlapping
 * computation does.
 */
static void freed_and_tested(MPI_Comm comm, int n)
{
	const char *bmin = getenv("ZCRECV_MPI_COLL_BCAST_MIN");
	int r, p, k, flag = 0, polls = 0, may_free;
	MPI_Request req;
	int *a, *b;
	double acc = 0;

	may_free = bmin && !strcmp(bmin, "0");
	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &p);
	a = ints((size_t)n * p, SENTINEL);
	b = ints((size_t)n * p, SENTINEL);
	for (k = 0; r == 0 && k < n; k++)
		a[k] = b[k] = val(0, 12, k);
	MPI_Ibcast(a, n, MPI_INT, 0, comm, &req);
	if (r == 0 && may_free) {
		MPI_Request_free(&req);
		CHECK(req == MPI_REQUEST_NULL);
	} else {
		MPI_Wait(&req, MPI_STATUS_IGNORE);
	}
	PMPI_Bcast(b, n, MPI_INT, 0, comm);
	same(a, b, (size_t)n);
	/* Every rank has its data: the root's sends are done with a. */
	PMPI_Barrier(comm);
	for (k = 0; k < n * p; k++)
		a[k] = b[k] = val(r, 13, k);
	MPI_Iallreduce(MPI_IN_PLACE, a, n * p, MPI_INT, MPI_BXOR, comm, &req);
	while (!flag) {
		for (k = 0; k < 20000; k++)
			acc += k * 0.5;
		MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
		polls++;
	}
	CHECK(acc > 0 && polls > 0 && req == MPI_REQUEST_NULL);
	PMPI_Allreduce(MPI_IN_PLACE, b, n * p, MPI_INT, MPI_BXOR, comm);
	same(a, b, (size_t)n * p);
	free(a);
	free(b);
}

/*
 * Barriers: the first rank comes 0.2 s late, so no rank may leave
 * MPI_Barrier before 0.1 s, nor may an MPI_Ibarrier test complete before
 * it came.
 */
static void barrier(MPI_Comm comm, int how)
{
	MPI_Request req;
	int r, flag = 1;
	double t0;

	MPI_Comm_rank(comm, &r);
	PMPI_Barrier(comm);
	t0 = MPI_Wtime();
	if (!r)
		usleep(200000);
	MPI_Barrier(comm);
	CHECK(MPI_Wtime() - t0 > 0.1);
	PMPI_Barrier(comm);
	t0 = MPI_Wtime();
	if (!r)
		usleep(200000);
	MPI_Ibarrier(comm, &req);
	if (r) {
		MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
		CHECK(!flag);
	}
	complete(&req, how);
	CHECK(MPI_Wtime() - t0 > 0.1);
	/* Back to back, none of them lost or mixed up. */
	for (flag = 0; flag < 20; flag++)
		MPI_Barrier(comm);
	MPI_Ibarrier(comm, &req);
	MPI_Barrier(comm);
	MPI_Wait(&req, MPI_STATUS_IGNORE);
}

/*
 * The nonblocking collectives on comm (any size, 1 included): sizes below
 * and above the thresholds, ints and the strided type, MPI_IN_PLACE,
 * every completion call, point-to-point in flight; the non-commutative and
 * derived-type Iallreduce the layer leaves to the MPI. And Scan and
 * Exscan, commutative and not (the full suite tries every op and type).
 */
static void suite_nb(MPI_Comm comm, MPI_Datatype str)
{
	static const int sizes[] = { 0, 1, 1027, 70000 };
	struct ty u64 = { MPI_UINT64_T, 'u', 0, 0, 0, 0 };
	struct ty i32 = { MPI_INT, 'i', 0, 0, 0, 0 };
	struct ty f64 = { MPI_DOUBLE, 'f', 0, 0, 0, 0 };
	struct ty two = { MPI_DATATYPE_NULL, 'i', 0, 0, 0, 0 };
	unsigned int i;
	struct p2p x;
	MPI_Op nc, cm;
	int p;

	MPI_Comm_size(comm, &p);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int n = sizes[i], how = (int)i * 3;

		p2p_start(&x, comm);
		bcast(comm, n, MPI_INT, 1, how);
		allgather(comm, n, MPI_INT, 1, how + 1);
		alltoall(comm, n, MPI_INT, 1, how + 2);
		iallreduce(comm, &i32, MPI_SUM, n * p, how, 1);
		iallreduce(comm, &f64, MPI_MAX, n, how + 1, 1);
		p2p_end(&x, comm);
		bcast(comm, n / 2, str, 4, how + 3);
		allgather(comm, n / 2, str, 4, how + 4);
		alltoall(comm, n / 2, str, 4, how + 5);
	}
	{
		size_t len = 70000 * sizeof(uint64_t);
		char *s = malloc(len), *a = malloc(len), *b = malloc(len);
		int r;

		if (!s || !a || !b)
			MPI_Abort(MPI_COMM_WORLD, 3);
		MPI_Comm_rank(comm, &r);
		MPI_Op_create(affine, 0, &nc);
		fill(&i32, s, 70000, sizeof(int), r, 7);
		scans(comm, &i32, MPI_SUM, 70000, s, a, b, len, sizeof(int));
		scans(comm, &i32, MPI_SUM, 0, s, a, b, len, sizeof(int));
		fill(&u64, s, 50000, sizeof(uint64_t), r, 8);
		scans(comm, &u64, nc, 50000, s, a, b, len, sizeof(uint64_t));
		MPI_Op_free(&nc);
		free(s);
		free(a);
		free(b);
	}
	overlap(comm, 5000, str, 1);
	overlap(comm, 0, str, 4);
	freed_and_tested(comm, 30000);
	/* Left to the MPI: a non-commutative op, a derived type. */
	MPI_Op_create(affine, 0, &nc);
	MPI_Op_create(mulinc, 1, &cm);
	iallreduce(comm, &u64, nc, 20000, 2, 1);
	MPI_Type_contiguous(2, MPI_INT, &two.t);
	MPI_Type_commit(&two.t);
	iallreduce(comm, &two, cm, 10000, 3, 0);
	to_mpi += 3;
	MPI_Type_free(&two.t);
	MPI_Op_free(&nc);
	MPI_Op_free(&cm);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * "early": rank 0 enters each MPI_Alltoall late, so the other ranks' parts
 * reach it before its receives are posted; every call uses the same
 * page-aligned receive buffer of 256 KiB parts, so the layer (hints,
 * ZCRECV_MPI_COLL_HINTS) can stage them at their parts. Then a call into
 * another buffer, and an MPI_Alltoallv whose parts sit one int further
 * on: placed where the earlier calls received, they must land right all
 * the same. Every part is checked.
 */
#define EARLY_INTS	(64 * 1024)
#define EARLY_ROUNDS	8

static void *page_ints(size_t n)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, (n ? n : 1) * sizeof(int)))
		MPI_Abort(MPI_COMM_WORLD, 3);
	return p;
}

static void early_round(MPI_Comm comm, int round, int *sbuf, int *rbuf,
			int shift)
{
	int size, me, j, i, *sc, *sd, *rc, *rd;
	const size_t n = EARLY_INTS;

	MPI_Comm_size(comm, &size);
	MPI_Comm_rank(comm, &me);
	for (j = 0; j < size; j++)
		for (i = 0; i < (int)n; i++)
			sbuf[(size_t)j * n + i] = val(me, round * size + j, i);
	memset(rbuf, 0, (size_t)size * n * sizeof(int) + sizeof(int));
	if (me == 0)
		usleep(50 * 1000);
	if (!shift) {
		MPI_Alltoall(sbuf, (int)n, MPI_INT, rbuf, (int)n, MPI_INT,
			     comm);
	} else {
		sc = ints((size_t)size, (int)n);
		rc = ints((size_t)size, (int)n);
		sd = ints((size_t)size, 0);
		rd = ints((size_t)size, 0);
		for (j = 0; j < size; j++) {
			sd[j] = j * (int)n;
			rd[j] = j * (int)n + shift;
		}
		MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT,
			      comm);
		free(sc);
		free(rc);
		free(sd);
		free(rd);
	}
	for (j = 0; j < size; j++)
		for (i = 0; i < (int)n; i++)
			CHECK(rbuf[(size_t)j * n + shift + i] ==
			      val(j, round * size + me, i));
}

static void early(MPI_Comm comm)
{
	int size, round;
	int *sbuf, *rbuf, *other;

	MPI_Comm_size(comm, &size);
	sbuf = page_ints((size_t)size * EARLY_INTS);
	rbuf = page_ints((size_t)size * EARLY_INTS + 1);
	other = page_ints((size_t)size * EARLY_INTS + 1);
	for (round = 0; round < EARLY_ROUNDS; round++)
		early_round(comm, round, sbuf, rbuf, 0);
	early_round(comm, round++, sbuf, other, 0);
	early_round(comm, round++, sbuf, rbuf, 1);
	early_round(comm, round, sbuf, rbuf, 0);
	free(sbuf);
	free(rbuf);
	free(other);
}

static const char *const coll_names[] = {
	"alltoall", "allgather", "bcast", "allreduce", "reduce",
	"reduce_scatter_block", "gather", "scatter", "ialltoall",
	"iallgather", "ibcast", "iallreduce", "barrier", "scan",
};
#define BARRIER		12

/*
 * One call of collective c with parts of bytes B (bcast and the
 * reductions: a message or vector of B x ranks bytes, doubles summed);
 * the nonblocking ones started, then waited for at once.
 */
static void call_one(int c, int bytes, char *s, char *r, int p)
{
	MPI_Request req = MPI_REQUEST_NULL;
	int nd = bytes * p / 8;

	if (c == 0)
		MPI_Alltoall(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE,
			     MPI_COMM_WORLD);
	else if (c == 1)
		MPI_Allgather(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE,
			      MPI_COMM_WORLD);
	else if (c == 2)
		MPI_Bcast(r, bytes * p, MPI_BYTE, 0, MPI_COMM_WORLD);
	else if (c == 3)
		MPI_Allreduce(s, r, nd, MPI_DOUBLE, MPI_SUM,
			      MPI_COMM_WORLD);
	else if (c == 4)
		MPI_Reduce(s, r, nd, MPI_DOUBLE, MPI_SUM, 0,
			   MPI_COMM_WORLD);
	else if (c == 5)
		MPI_Reduce_scatter_block(s, r, nd / p, MPI_DOUBLE,
					 MPI_SUM, MPI_COMM_WORLD);
	else if (c == 6)
		MPI_Gather(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, 0,
			   MPI_COMM_WORLD);
	else if (c == 7)
		MPI_Scatter(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE, 0,
			    MPI_COMM_WORLD);
	else if (c == 8)
		MPI_Ialltoall(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE,
			      MPI_COMM_WORLD, &req);
	else if (c == 9)
		MPI_Iallgather(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE,
			       MPI_COMM_WORLD, &req);
	else if (c == 10)
		MPI_Ibcast(r, bytes * p, MPI_BYTE, 0, MPI_COMM_WORLD,
			   &req);
	else if (c == 11)
		MPI_Iallreduce(s, r, nd, MPI_DOUBLE, MPI_SUM,
			       MPI_COMM_WORLD, &req);
	else if (c == BARRIER)
		MPI_Barrier(MPI_COMM_WORLD);
	else
		MPI_Scan(s, r, nd, MPI_DOUBLE, MPI_SUM,
			 MPI_COMM_WORLD);
	MPI_Wait(&req, MPI_STATUS_IGNORE);
}

/*
 * Median µs of one call of collective c with parts of bytes B (bcast and
 * the reductions: a message or vector of B x ranks bytes, doubles
 * summed). The timing's own barrier and maximum go through PMPI: never
 * carried, whatever the thresholds.
 */
static double time_one(int c, int bytes, char *s, char *r, int p)
{
	enum { ITERS = 15 };
	double t[ITERS], t0;
	int i;

	for (i = -2; i < ITERS; i++) {
		PMPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		call_one(c, bytes, s, r, p);
		t0 = MPI_Wtime() - t0;
		PMPI_Allreduce(MPI_IN_PLACE, &t0, 1, MPI_DOUBLE, MPI_MAX,
			       MPI_COMM_WORLD);
		if (i >= 0)
			t[i] = t0 * 1e6;
	}
	qsort(t, ITERS, sizeof(t[0]), cmp_double);
	return t[ITERS / 2];
}

/* A whole number from 0 to max written out in full, or -1. */
static long whole(const char *a, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(a, &end, 10);
	if (errno || end == a || *end || v < 0 || v > max)
		return -1;
	return v;
}

/* A collective named by its name in coll_names or its index, or -1. */
static int coll_index(const char *a, int n)
{
	long v;
	int c;

	for (c = 0; c < n; c++)
		if (!strcmp(a, coll_names[c]))
			return c;
	v = whole(a, n - 1);
	return (int)v;
}

/*
 * loop C BYTES ITERS: ITERS calls of collective C (a name or an index
 * of coll_names) with parts of BYTES, back to back after 20 to warm up;
 * rank 0 prints the mean µs per call. Where bench times single calls
 * between barriers, this is the rate of a program that calls one
 * collective after another.
 */
static int loop(int argc, char **argv)
{
	int n = sizeof(coll_names) / sizeof(coll_names[0]), p, i;
	int c = argc > 2 ? coll_index(argv[2], n) : -1;
	long bytes = argc > 3 ? whole(argv[3], 1L << 26) : -1;
	int iters = argc > 4 ? (int)whole(argv[4], 1L << 30) : -1;
	double t0 = 0;
	char *s, *r;

	if (c < 0 || bytes < 0 || iters < 1) {
		if (!wrank)
			fprintf(stderr, "zcmpi_coll loop C BYTES ITERS: C a name "
				"of a collective (alltoall, allgather, bcast, "
				"...) or its index from 0 to %d, BYTES from 0 to "
				"64 MiB, ITERS from 1\n", n - 1);
		return 2;
	}
	MPI_Comm_size(MPI_COMM_WORLD, &p);
	s = calloc((size_t)p * (size_t)bytes + 1, 1);
	r = calloc((size_t)p * (size_t)bytes + 1, 1);
	if (!s || !r)
		MPI_Abort(MPI_COMM_WORLD, 3);
	memset(s, wrank + 1, (size_t)p * (size_t)bytes);
	for (i = -20; i < iters; i++) {
		if (!i) {
			PMPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		call_one(c, (int)bytes, s, r, p);
	}
	t0 = MPI_Wtime() - t0;
	if (!wrank)
		printf("%s,%ld,%.1f\n", coll_names[c], bytes, t0 / iters * 1e6);
	free(s);
	free(r);
	return 0;
}

/* bench [FIRST [LAST]]: collectives FIRST..LAST of coll_names. */
static void bench(int first, int last)
{
	int p, c, b;
	char *s, *r;

	MPI_Comm_size(MPI_COMM_WORLD, &p);
	s = calloc((size_t)p << 22, 1);
	r = calloc((size_t)p << 22, 1);
	if (!s || !r)
		MPI_Abort(MPI_COMM_WORLD, 3);
	if (!wrank)
		printf("# collective, bytes per part (bcast, reductions: "
		       "x ranks), median us\n");
	for (c = first; c <= last; c++)
		/* The barrier moves no bytes: one row, size 0. */
		for (b = c == BARRIER ? 0 : 1024; b <= 1 << 22;
		     b = c == BARRIER ? 1 << 23 : b * 4) {
			double us = time_one(c, b, s, r, p);

			if (!wrank)
				printf("%s,%d,%.1f\n", coll_names[c], b, us);
		}
	free(s);
	free(r);
}

int main(int argc, char **argv)
{
	MPI_Comm half, rev, dup;
	MPI_Datatype str;
	unsigned int seed;
	int size;

	/* "nb mt": under MPI_THREAD_MULTIPLE (the layer's locked paths). */
	if (argc > 2 && !strcmp(argv[2], "mt")) {
		MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &size);
		if (size != MPI_THREAD_MULTIPLE) {
			fprintf(stderr, "coll: no MPI_THREAD_MULTIPLE\n");
			MPI_Abort(MPI_COMM_WORLD, 4);
		}
	} else {
		MPI_Init(&argc, &argv);
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc > 1 && !strcmp(argv[1], "loop")) {
		int rc = loop(argc, argv);

		MPI_Finalize();
		return rc;
	}
	if (argc > 1 && !strcmp(argv[1], "bench")) {
		int n = sizeof(coll_names) / sizeof(coll_names[0]);
		int first = argc > 2 ? atoi(argv[2]) : 0;
		int last = argc > 3 ? atoi(argv[3]) : n - 1;

		bench(first < 0 ? 0 : first, last >= n ? n - 1 : last);
		MPI_Finalize();
		return 0;
	}
	seed = getenv("ZCMPI_COLL_SEED") ?
	       (unsigned int)strtoul(getenv("ZCMPI_COLL_SEED"), NULL, 0) : 33;
	PMPI_Bcast(&seed, 1, MPI_UNSIGNED, 0, MPI_COMM_WORLD);
	if (argc > 1 && !strcmp(argv[1], "early")) {
		early(MPI_COMM_WORLD);
		goto out;
	}
	if (argc > 1 && !strcmp(argv[1], "nb")) {
		/* half: here a communicator of this rank alone. */
		str = strided();
		MPI_Comm_split(MPI_COMM_WORLD, wrank, 0, &half);
		MPI_Comm_dup(MPI_COMM_WORLD, &dup);
		suite_nb(MPI_COMM_WORLD, str);
		/*
		 * MPICH 4.0.2's own MPI_Ialltoall on a communicator of one
		 * rank, there after the calls before it, never completed
		 * under MPI_Testany (2026-11-28, not reduced further): the
		 * one-rank case runs under Open MPI.
		 */
#ifndef MPICH_VERSION
		suite_nb(half, str);
#endif
		suite_nb(dup, str);
		barrier(MPI_COMM_WORLD, 0);
		barrier(dup, 5);
		MPI_Type_free(&str);
		MPI_Comm_free(&half);
		MPI_Comm_free(&dup);
		goto out;
	}
	if (size < 4 || size > 64) {
		if (!wrank)
			fprintf(stderr, "coll: needs 4 to 64 ranks\n");
		MPI_Finalize();
		return 1;
	}
	str = strided();
	wtypes[0] = MPI_INT;
	wtypes[1] = MPI_2INT;
	MPI_Type_contiguous(3, MPI_INT, &wtypes[2]);
	MPI_Type_commit(&wtypes[2]);
	wtypes[3] = str;
	MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &half);
	MPI_Comm_split(MPI_COMM_WORLD, 0, size - wrank, &rev);
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	suite(MPI_COMM_WORLD, str);
	suite(half, str);
	/* Interleaved: calls on one communicator between those of another. */
	bcast(rev, 20000, MPI_INT, 1, -1);
	alltoall(dup, 20000, MPI_INT, 1, -1);
	allgatherv(rev, 30000);
	alltoallv(dup, 30000);
	alltoallw(rev, 30000);
	suite(rev, str);
	suite(dup, str);
	/*
	 * MPICH 4.0.2's ranks poll without yielding: 4 of them on 2 cores
	 * take minutes over the reductions' suite, past the check's time
	 * limit. It runs under Open MPI.
	 */
#ifndef MPICH_VERSION
	suite2(MPI_COMM_WORLD, seed, 1);
	suite2(dup, seed + 3, 0);
	suite2(half, seed + 1, 0);
	suite2(rev, seed + 2, 0);
#else
	(void)suite2;
#endif
	/*
	 * "zcmpi_coll nb" runs them on MPI_COMM_WORLD: here the splits
	 * (under Open MPI: MPICH's polling ranks would not fit the check's
	 * minute, and its nb runs cover it).
	 */
#ifndef MPICH_VERSION
	suite_nb(half, str);
	suite_nb(rev, str);
	barrier(half, 6);
#endif
	MPI_Type_free(&str);
	MPI_Type_free(&wtypes[2]);
	MPI_Comm_free(&half);
	MPI_Comm_free(&rev);
	MPI_Comm_free(&dup);
out:
	PMPI_Allreduce(MPI_IN_PLACE, &checks, 1, MPI_INT, MPI_SUM,
		       MPI_COMM_WORLD);
	PMPI_Allreduce(MPI_IN_PLACE, &to_mpi, 1, MPI_INT, MPI_SUM,
		       MPI_COMM_WORLD);
	if (!wrank)
		printf("coll: %d checks passed, %d calls always to the MPI, "
		       "seed %u\n", checks, to_mpi, seed);
	MPI_Finalize();
	return 0;
}
