// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcmpi_coll.c - the collectives libzcrecv-mpi.so carries (MPI_Alltoall,
 * Alltoallv, Allgather, Allgatherv, Bcast), each checked against the
 * MPI's own result: the same call through PMPI_*, which the layer does
 * not wrap, on the same data. Parts of 0 B to 1.2 MB (below and above
 * the layer's thresholds), MPI_IN_PLACE, a non-contiguous datatype,
 * uneven v-counts with zeros, every root, on MPI_COMM_WORLD, a split, a
 * reordered split and a dup, with point-to-point traffic of the same tags
 * (and a wildcard receive) in flight across every collective.
 * Run by tests/mpi/check-zcmpi.sh with and without the layer, and with
 * ZCRECV_MPI_COLL_*_MIN=0 (every call over zcrecv). 4 ranks or more.
 *
 *   zcmpi_coll         the suite; rank 0 prints "coll: N checks passed"
 *   zcmpi_coll bench   per collective and size, the median time of a
 *                      call in µs over 4 ranks (rank 0 prints; used to
 *                      set the layer's thresholds, Documentation/mpi.md)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wrank, checks;

#define CHECK(c)							\
	do {								\
		checks++;						\
		if (!(c)) {						\
			fprintf(stderr, "coll: rank %d: %s:%d: %s\n",	\
				wrank, __FILE__, __LINE__, #c);		\
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

/* Bytes of two int buffers of n ints agree. */
static void same(const int *a, const int *b, size_t n)
{
	CHECK(!memcmp(a, b, n * sizeof(int)));
}

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

/* n elements of t per part; ipe: ints per element's extent. */
static void alltoall(MPI_Comm comm, int n, MPI_Datatype t, int ipe)
{
	int r, p, i, k;
	size_t len;
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
	MPI_Alltoall(s, n, t, a, n, t, comm);
	PMPI_Alltoall(s, n, t, b, n, t, comm);
	same(a, b, len);
	/* In place: the same result from the send data in the buffer. */
	memcpy(a, s, len * sizeof(int));
	memcpy(b, s, len * sizeof(int));
	MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, n, t, comm);
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

static void allgather(MPI_Comm comm, int n, MPI_Datatype t, int ipe)
{
	int r, p, k;
	size_t len;
	int *s, *a, *b;

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &p);
	len = (size_t)p * n * ipe;
	s = ints((size_t)n * ipe, 0);
	a = ints(len, SENTINEL);
	b = ints(len, SENTINEL);
	for (k = 0; k < n * ipe; k++)
		s[k] = val(r, 0, k);
	MPI_Allgather(s, n, t, a, n, t, comm);
	PMPI_Allgather(s, n, t, b, n, t, comm);
	same(a, b, len);
	/* In place: this rank's part is in the buffer already. */
	for (k = 0; k < n * ipe; k++)
		a[(size_t)r * n * ipe + k] = b[(size_t)r * n * ipe + k] =
			val(r, 1, k);
	MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, n, t, comm);
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

static void bcast(MPI_Comm comm, int n, MPI_Datatype t, int ipe)
{
	int r, p, root, k;
	size_t len = (size_t)n * ipe;
	int *a, *b;

	MPI_Comm_rank(comm, &r);
	MPI_Comm_size(comm, &p);
	a = ints(len, SENTINEL);
	b = ints(len, SENTINEL);
	for (root = 0; root < p; root++) {
		for (k = 0; r == root && k < (int)len; k++)
			a[k] = b[k] = val(root, 4, k);
		MPI_Bcast(a, n, t, root, comm);
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
		alltoall(comm, n, MPI_INT, 1);
		alltoallv(comm, n);
		allgather(comm, n, MPI_INT, 1);
		allgatherv(comm, n);
		bcast(comm, n, MPI_INT, 1);
		p2p_end(&x, comm);
		/* Non-contiguous: 2 ints of 4, parts up to 600 kB. */
		if (n > 150000)
			n /= 2;
		alltoall(comm, n, str, 4);
		allgather(comm, n, str, 4);
		bcast(comm, n, str, 4);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median µs of one call of collective c with parts of bytes B. */
static double time_one(int c, int bytes, char *s, char *r, int p)
{
	enum { ITERS = 15 };
	double t[ITERS], t0;
	int i;

	for (i = -2; i < ITERS; i++) {
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		if (c == 0)
			MPI_Alltoall(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE,
				     MPI_COMM_WORLD);
		else if (c == 1)
			MPI_Allgather(s, bytes, MPI_BYTE, r, bytes, MPI_BYTE,
				      MPI_COMM_WORLD);
		else
			MPI_Bcast(r, bytes * p, MPI_BYTE, 0, MPI_COMM_WORLD);
		t0 = MPI_Wtime() - t0;
		MPI_Allreduce(MPI_IN_PLACE, &t0, 1, MPI_DOUBLE, MPI_MAX,
			      MPI_COMM_WORLD);
		if (i >= 0)
			t[i] = t0 * 1e6;
	}
	qsort(t, ITERS, sizeof(t[0]), cmp_double);
	return t[ITERS / 2];
}

static void bench(void)
{
	static const char *const names[] = { "alltoall", "allgather",
					     "bcast" };
	int p, c, b;
	char *s, *r;

	MPI_Comm_size(MPI_COMM_WORLD, &p);
	s = calloc((size_t)p << 22, 1);
	r = calloc((size_t)p << 22, 1);
	if (!s || !r)
		MPI_Abort(MPI_COMM_WORLD, 3);
	if (!wrank)
		printf("# collective, bytes per part (bcast: x ranks), "
		       "median us\n");
	for (c = 0; c < 3; c++)
		for (b = 1024; b <= 1 << 22; b *= 4) {
			double us = time_one(c, b, s, r, p);

			if (!wrank)
				printf("%s,%d,%.1f\n", names[c], b, us);
		}
	free(s);
	free(r);
}

int main(int argc, char **argv)
{
	MPI_Comm half, rev, dup;
	MPI_Datatype str;
	int size;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc > 1 && !strcmp(argv[1], "bench")) {
		bench();
		MPI_Finalize();
		return 0;
	}
	if (size < 4 || size > 64) {
		if (!wrank)
			fprintf(stderr, "coll: needs 4 to 64 ranks\n");
		MPI_Finalize();
		return 1;
	}
	str = strided();
	MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &half);
	MPI_Comm_split(MPI_COMM_WORLD, 0, size - wrank, &rev);
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	suite(MPI_COMM_WORLD, str);
	suite(half, str);
	/* Interleaved: calls on one communicator between those of another. */
	bcast(rev, 20000, MPI_INT, 1);
	alltoall(dup, 20000, MPI_INT, 1);
	allgatherv(rev, 30000);
	alltoallv(dup, 30000);
	suite(rev, str);
	suite(dup, str);
	MPI_Type_free(&str);
	MPI_Comm_free(&half);
	MPI_Comm_free(&rev);
	MPI_Comm_free(&dup);
	MPI_Allreduce(MPI_IN_PLACE, &checks, 1, MPI_INT, MPI_SUM,
		      MPI_COMM_WORLD);
	if (!wrank)
		printf("coll: %d checks passed\n", checks);
	MPI_Finalize();
	return 0;
}
