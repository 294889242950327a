// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcmpi_part.c - MPI-4 partitioned communication (MPI_Psend_init,
 * MPI_Precv_init, MPI_Pready, _range, _list, MPI_Parrived), run with and
 * without libzcrecv-mpi (tests/mpi/check-zcmpi.sh, MPICH only: Open MPI
 * 4.1 has no partitioned calls). Every rank sends to rank + 1 and
 * receives from rank - 1; every byte is checked.
 *
 *   zcmpi_part          the suite; rank 0 prints "part: N checks passed"
 *                       after one line per bad argument and the error
 *                       class the MPI gave (the same with the layer)
 *   zcmpi_part threads  under MPI_THREAD_MULTIPLE, four threads ready the
 *                       partitions of one send at once, round after round
 *   zcmpi_part early    partitions of page-aligned receive buffers sent
 *                       before their receive is started, so that over
 *                       the layer they arrive early (the check reads the
 *                       report line: expected and remapped)
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, right, left, checks;

#define CHECK(c)							\
	do {								\
		checks++;						\
		if (!(c)) {						\
			fprintf(stderr, "part: rank %d: %s:%d: %s\n",	\
				rank, __FILE__, __LINE__, #c);		\
			MPI_Abort(MPI_COMM_WORLD, 2);			\
		}							\
	} while (0)

/* The byte at off of what rank src sends in round r. */
static unsigned char pat(int r, int src, size_t off)
{
	return (unsigned char)(r * 131 + src * 17 + off * 7 + (off >> 12));
}

static void fill(unsigned char *b, size_t len, int r, int src)
{
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = pat(r, src, i);
}

/* Do len bytes at b hold what src sent in round r from offset off? */
static int same(const unsigned char *b, size_t off, size_t len, int r,
		int src)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != pat(r, src, off + i))
			return 0;
	return 1;
}

static void *page_alloc(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len ? len : 1))
		MPI_Abort(MPI_COMM_WORLD, 1);
	return p;
}

/*
 * rq[0] sends parts partitions of count t at sbuf to the right, rq[1]
 * receives as many into rbuf from the left, with tag.
 */
static void pair_init(void *sbuf, void *rbuf, int parts, MPI_Count count,
		      MPI_Datatype t, int tag, MPI_Request rq[2])
{
	MPI_Psend_init(sbuf, parts, count, t, right, tag, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[0]);
	MPI_Precv_init(rbuf, parts, count, t, left, tag, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[1]);
}

/* Free the pair and its buffers. */
static void pair_free(MPI_Request rq[2], void *sbuf, void *rbuf)
{
	MPI_Request_free(&rq[0]);
	MPI_Request_free(&rq[1]);
	CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL);
	free(sbuf);
	free(rbuf);
}

/* A permutation of 0..n-1: ascending, reversed or shuffled. */
static void order(int *o, int n, int how, unsigned int *seed)
{
	int i, j, t;

	for (i = 0; i < n; i++)
		o[i] = how == 1 ? n - 1 - i : i;
	if (how != 2)
		return;
	for (i = n - 1; i > 0; i--) {
		j = (int)(rand_r(seed) % (unsigned int)(i + 1));
		t = o[i];
		o[i] = o[j];
		o[j] = t;
	}
}

/*
 * Poll MPI_Parrived on every receive partition until all arrived, each
 * one's bytes checked as soon as it says so.
 */
static void poll_arrived(MPI_Request rq, const unsigned char *rbuf,
			 int parts, size_t pbytes, int r)
{
	char *seen = calloc((size_t)parts + 1, 1);
	int left_to_see = parts, i, flag;

	while (left_to_see) {
		for (i = 0; i < parts; i++) {
			if (seen[i])
				continue;
			flag = 0;
			if (MPI_Parrived(rq, i, &flag) != MPI_SUCCESS)
				CHECK(!"MPI_Parrived failed");
			if (!flag)
				continue;
			CHECK(same(rbuf + i * pbytes, i * pbytes, pbytes, r,
				   left));
			seen[i] = 1;
			left_to_see--;
		}
	}
	free(seen);
}

/*
 * One send and one receive of parts partitions of pbytes, restarted
 * rounds times; the partitions readied one at a time in ascending,
 * reverse and random order, by Pready_range in two halves (high first)
 * and by Pready_list, arrivals polled with MPI_Parrived.
 */
static void restarts(int parts, size_t pbytes, int rounds, int aligned)
{
	size_t len = (size_t)parts * pbytes;
	unsigned char *smem = page_alloc(len + 8), *rmem = page_alloc(len + 8);
	unsigned char *sbuf = smem + (aligned ? 0 : 8);
	unsigned char *rbuf = rmem + (aligned ? 0 : 8);
	unsigned int seed = 1234 + (unsigned int)rank;
	int *o = malloc(sizeof(int) * ((size_t)parts + 1));
	MPI_Request rq[2];
	MPI_Status st[2];
	int r, i, n, flag;

	pair_init(sbuf, rbuf, parts, (MPI_Count)pbytes, MPI_BYTE, 11, rq);
	for (r = 0; r < rounds; r++) {
		fill(sbuf, len, r, rank);
		memset(rbuf, 0xee, len);
		if (r % 2) {
			MPI_Startall(2, rq);
		} else {
			MPI_Start(&rq[1]);
			MPI_Start(&rq[0]);
		}
		switch (r % 5) {
		case 0:
		case 1:
		case 2:
			order(o, parts, r % 5, &seed);
			for (i = 0; i < parts; i++) {
				MPI_Pready(o[i], rq[0]);
				/* A look at a partition in between. */
				MPI_Parrived(rq[1], o[i], &flag);
			}
			break;
		case 3:
			if (parts > 1)
				MPI_Pready_range(parts / 2, parts - 1, rq[0]);
			MPI_Pready_range(0, parts / 2 - (parts > 1), rq[0]);
			break;
		case 4:
			order(o, parts, 2, &seed);
			MPI_Pready_list(parts, o, rq[0]);
			break;
		}
		poll_arrived(rq[1], rbuf, parts, pbytes, r);
		if (r % 3 == 2) {
			MPI_Waitall(2, rq, st);
		} else {
			do
				MPI_Test(&rq[0], &flag, &st[0]);
			while (!flag);
			MPI_Wait(&rq[1], &st[1]);
		}
		MPI_Get_count(&st[1], MPI_BYTE, &n);
		CHECK(st[1].MPI_SOURCE == left && st[1].MPI_TAG == 11);
		CHECK((size_t)n == len);
		CHECK(same(rbuf, 0, len, r, left));
		CHECK(rq[0] != MPI_REQUEST_NULL && rq[1] != MPI_REQUEST_NULL);
	}
	/* Inactive: completes at once, still allocated. */
	MPI_Wait(&rq[1], &st[1]);
	CHECK(rq[1] != MPI_REQUEST_NULL);
	pair_free(rq, smem, rmem);
	free(o);
}

/*
 * Partitioned operations match by (source, tag, communicator) in the order
 * they were initialised: two with one tag take each other's partners in
 * order, two with different tags initialised in opposite orders on the
 * two sides still find theirs.
 */
static void init_order(void)
{
	enum { P = 4, N = 1000 };
	static int s[4][P * N], d[4][P * N];
	static const int tags[4] = { 30, 30, 31, 32 };
	static const int rtags[4] = { 30, 30, 32, 31 };
	MPI_Request rq[8];
	int k, i, r;

	for (k = 0; k < 4; k++) {
		MPI_Psend_init(s[k], P, N, MPI_INT, right, tags[k],
			       MPI_COMM_WORLD, MPI_INFO_NULL, &rq[k]);
		MPI_Precv_init(d[k], P, N, MPI_INT, left, rtags[k],
			       MPI_COMM_WORLD, MPI_INFO_NULL, &rq[4 + k]);
	}
	for (r = 0; r < 3; r++) {
		for (k = 0; k < 4; k++)
			for (i = 0; i < P * N; i++)
				s[k][i] = rank * 1000000 + r * 100000 +
					  tags[k] * 1000 + k * 100 + i % 100;
		MPI_Startall(8, rq);
		for (k = 3; k >= 0; k--)
			MPI_Pready_range(0, P - 1, rq[k]);
		MPI_Waitall(8, rq, MPI_STATUSES_IGNORE);
		for (k = 0; k < 4; k++) {
			/* Receive k took the send initialised as k. */
			int from = k < 2 ? k : 5 - k;

			for (i = 0; i < P * N; i += 97)
				CHECK(d[k][i] == left * 1000000 + r * 100000 +
				      rtags[k] * 1000 + from * 100 + i % 100);
		}
	}
	for (k = 0; k < 8; k++)
		MPI_Request_free(&rq[k]);
}

/*
 * Partitions readied before the matching receive is even initialised,
 * then only MPI_Parrived called on the receive: the send must progress
 * inside it (MPI's progress rule), not wait for a Wait or Test on the
 * send.
 */
static void ready_before_match(void)
{
	enum { P = 4, PB = 8192 };
	unsigned char *sbuf = page_alloc(P * PB), *rbuf = page_alloc(P * PB);
	MPI_Request s, r;

	fill(sbuf, P * PB, 77, rank);
	MPI_Psend_init(sbuf, P, PB, MPI_BYTE, right, 45, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &s);
	MPI_Start(&s);
	MPI_Pready_range(0, P - 1, s);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Precv_init(rbuf, P, PB, MPI_BYTE, left, 45, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &r);
	MPI_Start(&r);
	poll_arrived(r, rbuf, P, PB, 77);
	MPI_Wait(&s, MPI_STATUS_IGNORE);
	MPI_Wait(&r, MPI_STATUS_IGNORE);
	MPI_Request_free(&s);
	MPI_Request_free(&r);
	free(sbuf);
	free(rbuf);
}

/*
 * Partitions of a non-contiguous datatype on one side and a contiguous one
 * on the other, both ways: the data as MPI types it.
 */
static void datatypes(void)
{
	enum { P = 3, N = 600 };
	static int sv[2 * P * N], rc[P * N], sc[P * N], rv[2 * P * N];
	MPI_Datatype strided, vec;
	MPI_Request rq[4];
	int r, i;

	/* Every other int, N of them, a partition 2N ints apart. */
	MPI_Type_vector(N, 1, 2, MPI_INT, &strided);
	MPI_Type_create_resized(strided, 0, 2 * N * sizeof(int), &vec);
	MPI_Type_commit(&vec);
	MPI_Type_free(&strided);
	/* P partitions of one vector each, against P of N ints. */
	MPI_Psend_init(sv, P, 1, vec, right, 40, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[0]);
	MPI_Precv_init(rc, P, N, MPI_INT, left, 40, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[1]);
	MPI_Psend_init(sc, P, N, MPI_INT, right, 41, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[2]);
	MPI_Precv_init(rv, P, 1, vec, left, 41, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[3]);
	for (r = 0; r < 4; r++) {
		for (i = 0; i < 2 * P * N; i++) {
			sv[i] = i % 2 ? -1 : rank * 100000 + r * 10000 + i / 2;
			rv[i] = -7;
		}
		for (i = 0; i < P * N; i++)
			sc[i] = rank * 100000 + r * 10000 + 5000 + i;
		MPI_Startall(4, rq);
		for (i = P - 1; i >= 0; i--) {
			MPI_Pready(i, rq[0]);
			MPI_Pready(i, rq[2]);
		}
		MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
		for (i = 0; i < P * N; i++) {
			CHECK(rc[i] == left * 100000 + r * 10000 + i);
			CHECK(rv[2 * i] == left * 100000 + r * 10000 + 5000 + i);
			CHECK(rv[2 * i + 1] == -7);
		}
	}
	for (i = 0; i < 4; i++)
		MPI_Request_free(&rq[i]);
	MPI_Type_free(&vec);
}

/*
 * Edges: partitions of no bytes, and a communicator the layer leaves to the
 * MPI (MPI_COMM_SELF): Start, Pready, Parrived and Wait must reach it.
 */
static void edges(void)
{
	int a[8], b[8], i, flag = 0, n = -1;
	MPI_Request rq[2];
	MPI_Status st;

	MPI_Psend_init(a, 4, 0, MPI_INT, right, 50, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[0]);
	MPI_Precv_init(b, 4, 0, MPI_INT, left, 50, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[1]);
	for (i = 0; i < 3; i++) {
		b[0] = -3;
		MPI_Startall(2, rq);
		MPI_Pready_range(0, 3, rq[0]);
		MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
		MPI_Wait(&rq[1], &st);
		MPI_Get_count(&st, MPI_INT, &n);
		CHECK(n == 0 && b[0] == -3);
		CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 50);
	}
	MPI_Request_free(&rq[0]);
	MPI_Request_free(&rq[1]);

	for (i = 0; i < 8; i++)
		a[i] = rank * 10 + i;
	memset(b, 0, sizeof(b));
	MPI_Psend_init(a, 2, 4, MPI_INT, 0, 51, MPI_COMM_SELF, MPI_INFO_NULL,
		       &rq[0]);
	MPI_Precv_init(b, 2, 4, MPI_INT, 0, 51, MPI_COMM_SELF, MPI_INFO_NULL,
		       &rq[1]);
	MPI_Startall(2, rq);
	MPI_Pready(1, rq[0]);
	MPI_Pready(0, rq[0]);
	do
		MPI_Parrived(rq[1], 1, &flag);
	while (!flag);
	CHECK(b[4] == rank * 10 + 4 && b[7] == rank * 10 + 7);
	MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
	for (i = 0; i < 8; i++)
		CHECK(b[i] == rank * 10 + i);
	MPI_Request_free(&rq[0]);
	MPI_Request_free(&rq[1]);
}

static const char *err_name(int code)
{
	int cls = -1;

	if (code == MPI_SUCCESS)
		return "MPI_SUCCESS";
	MPI_Error_class(code, &cls);
	switch (cls) {
	case MPI_ERR_ARG: return "MPI_ERR_ARG";
	case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
	case MPI_ERR_RANK: return "MPI_ERR_RANK";
	case MPI_ERR_TAG: return "MPI_ERR_TAG";
	case MPI_ERR_TYPE: return "MPI_ERR_TYPE";
	case MPI_ERR_REQUEST: return "MPI_ERR_REQUEST";
	case MPI_ERR_COMM: return "MPI_ERR_COMM";
	case MPI_ERR_BUFFER: return "MPI_ERR_BUFFER";
	case MPI_ERR_OTHER: return "MPI_ERR_OTHER";
	default: return "another class";
	}
}

static void said(const char *what, int code)
{
	checks++;
	if (rank == 0)
		printf("part: %s: %s\n", what, err_name(code));
	if (code == MPI_SUCCESS) {
		fprintf(stderr, "part: rank %d: %s succeeded\n", rank, what);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
}

/*
 * Bad arguments: an MPI error through the communicator's handler (here
 * MPI_ERRORS_RETURN), not a crash; the suite's output names each class,
 * and check-zcmpi.sh compares it with the MPI's own.
 */
static void bad_args(void)
{
	int a[16], b[16], flag, bad[2] = { 1, 4 };
	MPI_Request rq[2], x;

	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	said("Psend_init partitions -1",
	     MPI_Psend_init(a, -1, 1, MPI_INT, right, 60, MPI_COMM_WORLD,
			    MPI_INFO_NULL, &x));
	said("Psend_init count -1",
	     MPI_Psend_init(a, 4, -1, MPI_INT, right, 60, MPI_COMM_WORLD,
			    MPI_INFO_NULL, &x));
	said("Psend_init dest = size",
	     MPI_Psend_init(a, 4, 1, MPI_INT, size, 60, MPI_COMM_WORLD,
			    MPI_INFO_NULL, &x));
	said("Psend_init tag -5",
	     MPI_Psend_init(a, 4, 1, MPI_INT, right, -5, MPI_COMM_WORLD,
			    MPI_INFO_NULL, &x));
	said("Psend_init datatype null",
	     MPI_Psend_init(a, 4, 1, MPI_DATATYPE_NULL, right, 60,
			    MPI_COMM_WORLD, MPI_INFO_NULL, &x));
	said("Precv_init source = size",
	     MPI_Precv_init(b, 4, 1, MPI_INT, size, 60, MPI_COMM_WORLD,
			    MPI_INFO_NULL, &x));
	said("Precv_init count -1",
	     MPI_Precv_init(b, 4, -1, MPI_INT, left, 60, MPI_COMM_WORLD,
			    MPI_INFO_NULL, &x));

	MPI_Psend_init(a, 4, 4, MPI_INT, right, 61, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[0]);
	MPI_Precv_init(b, 4, 4, MPI_INT, left, 61, MPI_COMM_WORLD,
		       MPI_INFO_NULL, &rq[1]);
	MPI_Startall(2, rq);
	said("Pready partition 4 of 4", MPI_Pready(4, rq[0]));
	said("Pready partition -1", MPI_Pready(-1, rq[0]));
	said("Pready_range 2..5 of 4", MPI_Pready_range(2, 5, rq[0]));
	said("Pready_list with partition 4 of 4",
	     MPI_Pready_list(2, bad, rq[0]));
	said("Parrived partition 4 of 4", MPI_Parrived(rq[1], 4, &flag));
	for (flag = 0; flag < 16; flag++)
		a[flag] = rank + flag;
	MPI_Pready_range(0, 3, rq[0]);
	MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
	for (flag = 0; flag < 16; flag++)
		CHECK(b[flag] == left + flag);
	MPI_Request_free(&rq[0]);
	MPI_Request_free(&rq[1]);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/*
 * Partitions sent before their receive starts: over the layer they arrive
 * early at a persistent receive known in advance, page-aligned, a page
 * multiple each, so they land by remap.
 */
static void early(void)
{
	enum { P = 8, PB = 64 * 1024, ROUNDS = 6 };
	unsigned char *sbuf = page_alloc(P * PB), *rbuf = page_alloc(P * PB);
	MPI_Request rq[2];
	int r;

	pair_init(sbuf, rbuf, P, PB, MPI_BYTE, 70, rq);
	for (r = 0; r < ROUNDS; r++) {
		fill(sbuf, P * PB, r, rank);
		memset(rbuf, 0, P * PB);
		MPI_Start(&rq[0]);
		MPI_Pready_range(0, P - 1, rq[0]);
		MPI_Barrier(MPI_COMM_WORLD);
		/* Time for the partitions to arrive before the start. */
		usleep(50000);
		MPI_Start(&rq[1]);
		MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
		CHECK(same(rbuf, 0, P * PB, r, left));
	}
	pair_free(rq, sbuf, rbuf);
}

struct readier {
	MPI_Request req;
	int first, n;
};

static void *ready_part(void *arg)
{
	struct readier *w = arg;
	int i;

	for (i = w->first; i < w->first + w->n; i++)
		MPI_Pready(i, w->req);
	return NULL;
}

/*
 * What partitioned communication is for: threads each ready their own
 * partitions of one send concurrently (MPI_THREAD_MULTIPLE), the main
 * thread polls MPI_Parrived meanwhile.
 */
static void threads(void)
{
	enum { T = 4, P = 16, PB = 4096, ROUNDS = 30 };
	unsigned char *sbuf = page_alloc(P * PB), *rbuf = page_alloc(P * PB);
	struct readier w[T];
	pthread_t th[T];
	MPI_Request rq[2];
	int r, k;

	pair_init(sbuf, rbuf, P, PB, MPI_BYTE, 80, rq);
	for (r = 0; r < ROUNDS; r++) {
		fill(sbuf, P * PB, r, rank);
		MPI_Startall(2, rq);
		for (k = 0; k < T; k++) {
			w[k].req = rq[0];
			w[k].first = k * (P / T);
			w[k].n = P / T;
			pthread_create(&th[k], NULL, ready_part, &w[k]);
		}
		poll_arrived(rq[1], rbuf, P, PB, r);
		for (k = 0; k < T; k++)
			pthread_join(th[k], NULL);
		MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
		CHECK(same(rbuf, 0, P * PB, r, left));
	}
	pair_free(rq, sbuf, rbuf);
}

int main(int argc, char **argv)
{
	int provided = 0;

	if (argc > 1 && !strcmp(argv[1], "threads")) {
		MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
		if (provided < MPI_THREAD_MULTIPLE) {
			fprintf(stderr, "part: no MPI_THREAD_MULTIPLE\n");
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	} else {
		MPI_Init(&argc, &argv);
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	right = (rank + 1) % size;
	left = (rank + size - 1) % size;
	if (argc > 1 && !strcmp(argv[1], "early")) {
		early();
	} else if (argc > 1 && !strcmp(argv[1], "threads")) {
		threads();
	} else {
		restarts(8, 16384, 40, 1);
		restarts(5, 3000, 25, 0);
		restarts(1, 65536, 10, 1);
		init_order();
		ready_before_match();
		datatypes();
		edges();
		bad_args();
	}
	MPI_Allreduce(MPI_IN_PLACE, &checks, 1, MPI_INT, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0)
		printf("part: %d checks passed\n", checks);
	MPI_Finalize();
	return 0;
}
