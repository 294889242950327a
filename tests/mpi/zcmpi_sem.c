// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcmpi_sem.c - MPI point-to-point semantics, run with and without
 * libzcrecv-mpi.so (tests/mpi/check-zcmpi.sh): ordering, wildcards,
 * probe, truncation, cancel, MPI_PROC_NULL, communicators, derived types,
 * the completion calls, self sends, persistent requests (also small ones
 * complete within MPI_Start), nonblocking receives of messages there
 * already, matched probes,
 * cancelling a send, synchronous sends, MPI_Alloc_mem.
 * 4 ranks or more.
 *
 *   zcmpi_sem        the suite; rank 0 prints "sem: N checks passed"
 *   zcmpi_sem die    rank 1 exits during the run; the others must fail
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, checks;

#define CHECK(c)							\
	do {								\
		checks++;						\
		if (!(c)) {						\
			fprintf(stderr, "sem: rank %d: %s:%d: %s\n",	\
				rank, __FILE__, __LINE__, #c);		\
			MPI_Abort(MPI_COMM_WORLD, 2);			\
		}							\
	} while (0)

/* Messages of one (source, tag) arrive in order, small and large mixed. */
static void ordering(void)
{
	enum { N = 64, BIG = 300000 };
	static int buf[BIG];
	MPI_Status st;
	int i, n;

	if (rank == 0) {
		for (i = 0; i < N; i++) {
			n = i % 4 == 3 ? BIG : 1 + i;
			buf[0] = i;
			buf[n - 1] = i;
			MPI_Send(buf, n, MPI_INT, 1, 7, MPI_COMM_WORLD);
		}
	} else if (rank == 1) {
		for (i = 0; i < N; i++) {
			MPI_Recv(buf, BIG, MPI_INT, MPI_ANY_SOURCE,
				 MPI_ANY_TAG, MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_INT, &n);
			CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 7);
			CHECK(n == (i % 4 == 3 ? BIG : 1 + i));
			CHECK(buf[0] == i && buf[n - 1] == i);
		}
	}
}

/* ANY_SOURCE / ANY_TAG, the status and MPI_Get_count. */
static void wildcards(void)
{
	double v[8];
	MPI_Status st;
	int i, n, seen = 0;

	if (rank) {
		for (i = 0; i < 8; i++)
			v[i] = rank * 10 + i;
		MPI_Send(v, rank, MPI_DOUBLE, 0, 100 + rank, MPI_COMM_WORLD);
		return;
	}
	for (i = 1; i < size; i++) {
		MPI_Recv(v, 8, MPI_DOUBLE, MPI_ANY_SOURCE, MPI_ANY_TAG,
			 MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_DOUBLE, &n);
		CHECK(st.MPI_TAG == 100 + st.MPI_SOURCE);
		CHECK(n == st.MPI_SOURCE);
		CHECK(v[n - 1] == st.MPI_SOURCE * 10 + n - 1);
		seen |= 1 << st.MPI_SOURCE;
	}
	CHECK(seen == (1 << size) - 2);
}

/* Probe tells the size; the receive then takes that very message. */
static void probing(void)
{
	MPI_Status st;
	int flag = 0, n, *p, i;

	if (rank == 2) {
		int a[1000];

		for (i = 0; i < 1000; i++)
			a[i] = i;
		MPI_Send(a, 777, MPI_INT, 3, 5, MPI_COMM_WORLD);
		MPI_Send(a, 3, MPI_INT, 3, 6, MPI_COMM_WORLD);
	} else if (rank == 3) {
		MPI_Probe(2, 6, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_INT, &n);
		CHECK(n == 3 && st.MPI_TAG == 6 && st.MPI_SOURCE == 2);
		while (!flag)
			MPI_Iprobe(MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &flag,
				   &st);
		MPI_Get_count(&st, MPI_INT, &n);
		CHECK(n == 777);
		p = malloc(sizeof(int) * (size_t)n);
		MPI_Recv(p, n, MPI_INT, st.MPI_SOURCE, st.MPI_TAG,
			 MPI_COMM_WORLD, &st);
		CHECK(p[776] == 776);
		free(p);
		MPI_Recv(&n, 3, MPI_INT, 2, 6, MPI_COMM_WORLD, &st);
		MPI_Iprobe(2, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
		CHECK(!flag);
	}
}

/* A message longer than the buffer: MPI_ERR_TRUNCATE, with ERRORS_RETURN. */
static void truncation(void)
{
	int a[100] = { 0 }, ret, cls;
	MPI_Comm c;
	MPI_Status st;

	MPI_Comm_dup(MPI_COMM_WORLD, &c);
	MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
	if (rank == 0) {
		a[9] = 9;
		MPI_Send(a, 100, MPI_INT, 1, 1, c);
		MPI_Send(a, 1, MPI_INT, 1, 2, c);
	} else if (rank == 1) {
		ret = MPI_Recv(a, 10, MPI_INT, 0, 1, c, &st);
		MPI_Error_class(ret, &cls);
		CHECK(cls == MPI_ERR_TRUNCATE);
		/* The connection goes on. */
		ret = MPI_Recv(a, 10, MPI_INT, 0, 2, c, &st);
		CHECK(ret == MPI_SUCCESS);
	}
	MPI_Comm_free(&c);
}

static void cancel_and_null(void)
{
	MPI_Request r;
	MPI_Status st;
	int x = 5, flag = 0, n = -1;

	MPI_Irecv(&x, 1, MPI_INT, (rank + 1) % size, 999, MPI_COMM_WORLD, &r);
	MPI_Cancel(&r);
	MPI_Wait(&r, &st);
	MPI_Test_cancelled(&st, &flag);
	CHECK(flag && x == 5 && r == MPI_REQUEST_NULL);

	MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
	MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st);
	MPI_Get_count(&st, MPI_INT, &n);
	CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG);
	CHECK(n == 0 && x == 5);
}

/* Communicators never mix, whatever the order; split with ANY_SOURCE. */
static void communicators(void)
{
	MPI_Comm d, s;
	MPI_Status st;
	int a = 0, sr, ss, i, sum = 0;

	MPI_Comm_dup(MPI_COMM_WORLD, &d);
	if (rank == 0) {
		a = 1;
		MPI_Send(&a, 1, MPI_INT, 1, 3, d);
		a = 2;
		MPI_Send(&a, 1, MPI_INT, 1, 3, MPI_COMM_WORLD);
	} else if (rank == 1) {
		MPI_Recv(&a, 1, MPI_INT, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD,
			 &st);
		CHECK(a == 2);
		MPI_Recv(&a, 1, MPI_INT, 0, MPI_ANY_TAG, d, &st);
		CHECK(a == 1);
	}
	/* Odd and even ranks; rank 0 of each gets the others' ranks. */
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &s);
	MPI_Comm_rank(s, &sr);
	MPI_Comm_size(s, &ss);
	if (sr == 0) {
		for (i = 1; i < ss; i++) {
			MPI_Recv(&a, 1, MPI_INT, MPI_ANY_SOURCE, 4, s, &st);
			sum += a;
			CHECK(a % 2 == rank % 2);
		}
	} else {
		MPI_Send(&rank, 1, MPI_INT, 0, 4, s);
	}
	MPI_Comm_free(&s);
	MPI_Comm_free(&d);
}

/* Non-contiguous types, packed on one side only or on both. */
static void derived(void)
{
	MPI_Datatype vec;
	MPI_Status st;
	double m[4][4], col[4];
	int i, j, n;

	MPI_Type_vector(4, 1, 4, MPI_DOUBLE, &vec);
	MPI_Type_commit(&vec);
	if (rank == 0) {
		for (i = 0; i < 4; i++)
			for (j = 0; j < 4; j++)
				m[i][j] = i * 4 + j;
		MPI_Send(&m[0][1], 1, vec, 1, 8, MPI_COMM_WORLD);
		for (i = 0; i < 4; i++)
			col[i] = 100 + i;
		MPI_Send(col, 4, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD);
	} else if (rank == 1) {
		MPI_Recv(col, 4, MPI_DOUBLE, 0, 8, MPI_COMM_WORLD, &st);
		for (i = 0; i < 4; i++)
			CHECK(col[i] == i * 4 + 1);
		memset(m, 0, sizeof(m));
		MPI_Recv(&m[0][2], 1, vec, 0, 9, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, vec, &n);
		CHECK(n == 1);
		for (i = 0; i < 4; i++)
			CHECK(m[i][2] == 100 + i && m[i][1] == 0);
	}
	MPI_Type_free(&vec);
}

/* Waitany, Waitsome, Testall, Request_free, Sendrecv_replace, self. */
static void completion(void)
{
	int in[3] = { -1, -1, -1 }, out = rank, v, idx, cnt, i, got = 0;
	int idxs[3], flag = 0, left = (rank + size - 1) % size;
	MPI_Request r[3], fr;
	MPI_Status sts[3];

	for (i = 0; i < 3; i++)
		MPI_Irecv(&in[i], 1, MPI_INT, left, 20 + i, MPI_COMM_WORLD,
			  &r[i]);
	for (i = 2; i >= 0; i--) {
		v = out * 10 + i;
		MPI_Send(&v, 1, MPI_INT, (rank + 1) % size, 20 + i,
			 MPI_COMM_WORLD);
	}
	MPI_Waitany(3, r, &idx, &sts[0]);
	CHECK(r[idx] == MPI_REQUEST_NULL && sts[0].MPI_TAG == 20 + idx);
	got++;
	while (got < 3) {
		MPI_Waitsome(3, r, &cnt, idxs, sts);
		CHECK(cnt != MPI_UNDEFINED);
		got += cnt;
	}
	for (i = 0; i < 3; i++)
		CHECK(in[i] == left * 10 + i);
	MPI_Waitsome(3, r, &cnt, idxs, sts);
	CHECK(cnt == MPI_UNDEFINED);

	MPI_Isend(&out, 1, MPI_INT, rank, 30, MPI_COMM_WORLD, &fr);
	MPI_Request_free(&fr);
	MPI_Irecv(&v, 1, MPI_INT, rank, 30, MPI_COMM_WORLD, &r[0]);
	while (!flag)
		MPI_Testall(1, r, &flag, sts);
	CHECK(v == rank && sts[0].MPI_SOURCE == rank);

	v = rank;
	MPI_Sendrecv_replace(&v, 1, MPI_INT, (rank + 1) % size, 31, left, 31,
			     MPI_COMM_WORLD, &sts[0]);
	CHECK(v == left);
	MPI_Issend(&out, 1, MPI_INT, rank, 32, MPI_COMM_WORLD, &fr);
	MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 32, MPI_COMM_WORLD, &sts[0]);
	MPI_Wait(&fr, MPI_STATUS_IGNORE);
	CHECK(v == rank && fr == MPI_REQUEST_NULL);
}

/*
 * Persistent requests mixed with plain calls of one (source, tag): a
 * plain receive posted first takes the persistent send started first.
 * They stay allocated and inactive after Waitall; MPI_Start reads the
 * buffer (packing a vector anew); inactive ones complete at once with an
 * empty status; MPI_Request_free releases them.
 */
static void persistent(void)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	int out[6], in[6], got[3], b[3], c[3], s3[3], i, k, idx, flag = 0;
	MPI_Request r[4], pl;
	MPI_Status sts[4], st;
	MPI_Datatype vec;

	MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
	MPI_Type_commit(&vec);
	MPI_Recv_init(got, 3, MPI_INT, left, 50, MPI_COMM_WORLD, &r[0]);
	MPI_Send_init(out, 1, vec, right, 50, MPI_COMM_WORLD, &r[1]);
	MPI_Recv_init(in, 1, vec, MPI_ANY_SOURCE, 51, MPI_COMM_WORLD, &r[2]);
	MPI_Ssend_init(s3, 3, MPI_INT, right, 51, MPI_COMM_WORLD, &r[3]);
	for (i = 0; i < 4; i++) {
		memset(in, 0, sizeof(in));
		for (k = 0; k < 3; k++) {
			out[2 * k] = rank * 100 + i * 10 + k;
			out[2 * k + 1] = -1;
			c[k] = 1000 + rank * 100 + i * 10 + k;
			s3[k] = 2000 + rank * 100 + i * 10 + k;
		}
		MPI_Irecv(b, 3, MPI_INT, left, 50, MPI_COMM_WORLD, &pl);
		MPI_Start(&r[0]);
		MPI_Start(&r[2]);
		MPI_Start(&r[1]);
		MPI_Send(c, 3, MPI_INT, right, 50, MPI_COMM_WORLD);
		MPI_Start(&r[3]);
		MPI_Waitall(4, r, sts);
		MPI_Wait(&pl, &st);
		for (k = 0; k < 3; k++) {
			CHECK(b[k] == left * 100 + i * 10 + k);
			CHECK(got[k] == 1000 + left * 100 + i * 10 + k);
			CHECK(in[2 * k] == 2000 + left * 100 + i * 10 + k);
		}
		CHECK(in[1] == 0 && in[3] == 0);
		CHECK(sts[2].MPI_SOURCE == left && sts[2].MPI_TAG == 51);
		CHECK(sts[0].MPI_SOURCE == left && sts[0].MPI_TAG == 50);
		for (k = 0; k < 4; k++)
			CHECK(r[k] != MPI_REQUEST_NULL);
	}
	MPI_Wait(&r[0], &st);
	CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG);
	CHECK(r[0] != MPI_REQUEST_NULL);
	MPI_Test(&r[1], &flag, &st);
	CHECK(flag && r[1] != MPI_REQUEST_NULL);
	MPI_Waitany(4, r, &idx, &st);
	CHECK(idx == MPI_UNDEFINED);
	for (k = 0; k < 4; k++) {
		MPI_Request_free(&r[k]);
		CHECK(r[k] == MPI_REQUEST_NULL);
	}
	MPI_Type_free(&vec);
}

/*
 * Small persistent requests whose operation completes within MPI_Start
 * (an eager send; a receive whose message is there already): a persistent
 * send started three times, its buffer rewritten after each wait, and one
 * persistent receive started three times after all three arrived take
 * them in order with their statuses; a wildcard one takes the next
 * message; a truncated one reports MPI_ERR_TRUNCATE from MPI_Wait, its
 * status the sender's (its bytes are not checked: MPICH copies none);
 * and one started before its message still waits
 * for it.
 */
static void persistent_done_at_start(void)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	int sbuf[4], in[4], i, k, ok, flag = 0, n = -1, ret, cls;
	MPI_Request s, r, ra, rs;
	MPI_Status st;
	MPI_Comm c;

	MPI_Comm_dup(MPI_COMM_WORLD, &c);
	MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
	MPI_Send_init(sbuf, 4, MPI_INT, right, 70, c, &s);
	MPI_Recv_init(in, 4, MPI_INT, left, 70, c, &r);
	MPI_Recv_init(in, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &ra);
	MPI_Recv_init(in, 2, MPI_INT, left, 72, c, &rs);
	for (i = 0; i < 3; i++) {
		for (k = 0; k < 4; k++)
			sbuf[k] = rank * 100 + i * 10 + k;
		MPI_Start(&s);
		MPI_Wait(&s, MPI_STATUS_IGNORE);
	}
	sbuf[0] = -71;
	MPI_Send(sbuf, 4, MPI_INT, right, 71, c);
	sbuf[0] = -72;
	MPI_Send(sbuf, 4, MPI_INT, right, 72, c);
	/* The last one is there: so are the ones before it. */
	while (!flag)
		MPI_Iprobe(left, 72, c, &flag, MPI_STATUS_IGNORE);
	for (i = 0; i < 3; i++) {
		MPI_Start(&r);
		MPI_Wait(&r, &st);
		MPI_Get_count(&st, MPI_INT, &n);
		ok = st.MPI_SOURCE == left && st.MPI_TAG == 70 && n == 4;
		for (k = 0; k < 4; k++)
			ok &= in[k] == left * 100 + i * 10 + k;
		CHECK(ok);
	}
	MPI_Start(&ra);
	MPI_Wait(&ra, &st);
	CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 71 && in[0] == -71);
	MPI_Start(&rs);
	ret = MPI_Wait(&rs, &st);
	MPI_Error_class(ret, &cls);
	CHECK(cls == MPI_ERR_TRUNCATE);
	CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 72);
	/* Started before its message: it waits, then takes it. */
	MPI_Start(&r);
	MPI_Test(&r, &flag, &st);
	CHECK(!flag);
	MPI_Barrier(c);
	sbuf[0] = -70;
	MPI_Start(&s);
	MPI_Wait(&r, &st);
	MPI_Wait(&s, MPI_STATUS_IGNORE);
	CHECK(in[0] == -70 && st.MPI_SOURCE == left);
	MPI_Request_free(&s);
	MPI_Request_free(&r);
	MPI_Request_free(&ra);
	/* Open MPI 4.1 hands back a persistent request that failed freed. */
	if (rs != MPI_REQUEST_NULL)
		MPI_Request_free(&rs);
	MPI_Comm_free(&c);
}

/*
 * Nonblocking receives whose messages are there in full before they are
 * posted (taken within MPI_Irecv over the layer, with no request of the
 * library): three of one tag in their order with their statuses, a
 * wildcard one the next message, a derived type's unpacked, a truncated
 * one MPI_ERR_TRUNCATE from MPI_Wait with the sender's status; one
 * posted before its message still waits for it.
 */
static void irecv_done_at_post(void)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	int sbuf[4], in[4], i, k, ok, flag = 0, n = -1, ret, cls;
	double col[4], m[4][4];
	MPI_Datatype vec;
	MPI_Request r;
	MPI_Status st;
	MPI_Comm c;

	MPI_Comm_dup(MPI_COMM_WORLD, &c);
	MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
	MPI_Type_vector(4, 1, 4, MPI_DOUBLE, &vec);
	MPI_Type_commit(&vec);
	/* Tags 80, 80, 80, 81, 82 (doubles), 83; then all are there. */
	for (i = 0; i < 6; i++) {
		for (k = 0; k < 4; k++) {
			sbuf[k] = i < 3 ? rank * 100 + i * 10 + k : -78 - i;
			col[k] = rank + 0.5 * k;
		}
		if (i == 4)
			MPI_Send(col, 4, MPI_DOUBLE, right, 82, c);
		else
			MPI_Send(sbuf, 4, MPI_INT, right, i < 3 ? 80 : 78 + i,
				 c);
	}
	while (!flag)
		MPI_Iprobe(left, 83, c, &flag, MPI_STATUS_IGNORE);
	for (i = 0; i < 3; i++) {
		memset(in, 0, sizeof(in));
		MPI_Irecv(in, 4, MPI_INT, left, 80, c, &r);
		MPI_Wait(&r, &st);
		MPI_Get_count(&st, MPI_INT, &n);
		ok = st.MPI_SOURCE == left && st.MPI_TAG == 80 && n == 4 &&
		     r == MPI_REQUEST_NULL;
		for (k = 0; k < 4; k++)
			ok &= in[k] == left * 100 + i * 10 + k;
		CHECK(ok);
	}
	MPI_Irecv(in, 4, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, c, &r);
	MPI_Wait(&r, &st);
	CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 81 && in[0] == -81);
	memset(m, 0, sizeof(m));
	MPI_Irecv(&m[0][1], 1, vec, left, 82, c, &r);
	MPI_Wait(&r, &st);
	MPI_Get_count(&st, vec, &n);
	CHECK(n == 1);
	for (k = 0; k < 4; k++)
		CHECK(m[k][1] == left + 0.5 * k && m[k][0] == 0 &&
		      m[k][2] == 0);
	/*
	 * MPICH 4.0 raises the error of a request that completed within
	 * MPI_Irecv on MPI_COMM_WORLD's handler, not c's.
	 */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Irecv(in, 2, MPI_INT, left, 83, c, &r);
	ret = MPI_Wait(&r, &st);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	MPI_Error_class(ret, &cls);
	CHECK(cls == MPI_ERR_TRUNCATE);
	CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 83);
	/* Posted before its message: it waits, then takes it. */
	MPI_Irecv(in, 4, MPI_INT, left, 84, c, &r);
	MPI_Test(&r, &flag, &st);
	CHECK(!flag);
	MPI_Barrier(c);
	sbuf[0] = -84;
	MPI_Send(sbuf, 4, MPI_INT, right, 84, c);
	MPI_Wait(&r, &st);
	CHECK(in[0] == -84 && st.MPI_SOURCE == left && st.MPI_TAG == 84);
	MPI_Type_free(&vec);
	MPI_Comm_free(&c);
}

/*
 * Persistent requests of a page and more (bound to the library's own
 * persistent requests): restarted many times with the messages arriving
 * before the receive is started, every byte checked; a started receive
 * cancelled, then started again; one freed while started still receives
 * its message; an ANY_SOURCE one restarted beside them.
 */
static void persistent_large(void)
{
	enum { N = 5000, ROUNDS = 25 };
	static int out[N], in[N], any[N];
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	int i, k, flag = 0, ok;
	MPI_Request s, r, ra, sa;
	MPI_Status st;

	MPI_Send_init(out, N, MPI_INT, right, 60, MPI_COMM_WORLD, &s);
	MPI_Recv_init(in, N, MPI_INT, left, 60, MPI_COMM_WORLD, &r);
	MPI_Recv_init(any, N, MPI_INT, MPI_ANY_SOURCE, 61, MPI_COMM_WORLD,
		      &ra);
	for (i = 0; i < ROUNDS; i++) {
		for (k = 0; k < N; k++)
			out[k] = rank * 1000000 + i * 10000 + k;
		MPI_Start(&s);
		/* Let the message arrive before the receive is started. */
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Start(&r);
		MPI_Wait(&r, &st);
		MPI_Wait(&s, MPI_STATUS_IGNORE);
		ok = st.MPI_SOURCE == left && st.MPI_TAG == 60;
		for (k = 0; k < N; k++)
			ok &= in[k] == left * 1000000 + i * 10000 + k;
		CHECK(ok);
		/* The wildcard one: rank 0 sends it to everyone else. */
		if (rank == 0) {
			for (k = 1; k < size; k++)
				MPI_Send(out, N, MPI_INT, k, 61,
					 MPI_COMM_WORLD);
		} else {
			MPI_Start(&ra);
			MPI_Wait(&ra, &st);
			ok = st.MPI_SOURCE == 0;
			for (k = 0; k < N; k++)
				ok &= any[k] == i * 10000 + k;
			CHECK(ok);
		}
	}
	/* Cancelled while started: then it receives as before. */
	MPI_Start(&r);
	MPI_Cancel(&r);
	MPI_Wait(&r, &st);
	MPI_Test_cancelled(&st, &flag);
	CHECK(flag && r != MPI_REQUEST_NULL);
	/* No rank sends it a message before it was cancelled. */
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Start(&s);
	MPI_Start(&r);
	MPI_Wait(&r, &st);
	MPI_Wait(&s, MPI_STATUS_IGNORE);
	CHECK(in[N - 1] == left * 1000000 + (ROUNDS - 1) * 10000 + N - 1);
	/* Freed while started: its message still lands in its buffer. */
	memset(in, 0, sizeof(in));
	MPI_Start(&r);
	MPI_Request_free(&r);
	CHECK(r == MPI_REQUEST_NULL);
	out[0] = -7;
	MPI_Isend(out, N, MPI_INT, right, 60, MPI_COMM_WORLD, &sa);
	MPI_Wait(&sa, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	/* Until the layer completed it: an Iprobe drives progress. */
	for (k = 0; k < 1000 && in[0] != -7; k++) {
		MPI_Iprobe(left, 62, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
		usleep(1000);
	}
	CHECK(in[0] == -7 && in[N - 1] == out[N - 1] - rank * 1000000 +
	      left * 1000000);
	MPI_Request_free(&s);
	MPI_Request_free(&ra);
	MPI_Barrier(MPI_COMM_WORLD);
}

/*
 * Matched probes: a message claimed by MPI_Mprobe is invisible to probes
 * and receives, and MPI_Mrecv takes exactly it; MPI_Improbe/MPI_Imrecv
 * with ANY_SOURCE; MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC.
 */
static void matched(void)
{
	enum { BIG = 300000 };
	static int a[BIG];
	int i, n, flag = 0, got = 0;
	MPI_Message m, m2;
	MPI_Request r;
	MPI_Status st;

	if (rank != 3) {
		for (i = 0; i < 7; i++)
			a[i] = rank * 10 + i;
		if (rank == 2) {
			MPI_Send(a, 5, MPI_INT, 3, 60, MPI_COMM_WORLD);
			MPI_Send(a, 7, MPI_INT, 3, 60, MPI_COMM_WORLD);
			a[BIG - 1] = 4242;
			MPI_Send(a, BIG, MPI_INT, 3, 63, MPI_COMM_WORLD);
		}
		MPI_Send(a, rank + 1, MPI_INT, 3, 61, MPI_COMM_WORLD);
	} else {
		MPI_Mprobe(2, 60, MPI_COMM_WORLD, &m, &st);
		MPI_Get_count(&st, MPI_INT, &n);
		CHECK(n == 5 && st.MPI_SOURCE == 2 && m != MPI_MESSAGE_NULL);
		/* The claimed message is gone for everyone else. */
		MPI_Probe(2, 60, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_INT, &n);
		CHECK(n == 7);
		MPI_Recv(a + 100, 10, MPI_INT, MPI_ANY_SOURCE, 60,
			 MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_INT, &n);
		CHECK(n == 7 && a[106] == 26);
		MPI_Mrecv(a, 10, MPI_INT, &m, &st);
		MPI_Get_count(&st, MPI_INT, &n);
		CHECK(n == 5 && a[4] == 24 && m == MPI_MESSAGE_NULL);
		/* The large one: claimed, maybe still arriving. */
		MPI_Mprobe(MPI_ANY_SOURCE, 63, MPI_COMM_WORLD, &m, &st);
		a[BIG - 1] = 0;
		MPI_Imrecv(a, BIG, MPI_INT, &m, &r);
		MPI_Wait(&r, &st);
		MPI_Get_count(&st, MPI_INT, &n);
		CHECK(n == BIG && a[BIG - 1] == 4242 && st.MPI_TAG == 63);
		while (got < 3) {
			MPI_Improbe(MPI_ANY_SOURCE, 61, MPI_COMM_WORLD, &flag,
				    &m, &st);
			if (!flag)
				continue;
			MPI_Get_count(&st, MPI_INT, &n);
			CHECK(n == st.MPI_SOURCE + 1);
			MPI_Imrecv(a, 10, MPI_INT, &m, &r);
			MPI_Wait(&r, &st);
			CHECK(a[n - 1] == st.MPI_SOURCE * 10 + n - 1);
			got++;
		}
		MPI_Improbe(MPI_ANY_SOURCE, 61, MPI_COMM_WORLD, &flag, &m2,
			    &st);
		CHECK(!flag);
	}
	MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m, &st);
	CHECK(m == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL);
	MPI_Mrecv(a, 1, MPI_INT, &m, &st);
	MPI_Get_count(&st, MPI_INT, &n);
	CHECK(m == MPI_MESSAGE_NULL && st.MPI_SOURCE == MPI_PROC_NULL &&
	      n == 0);
}

/*
 * MPI_Cancel of a send: either it is cancelled (MPI_Test_cancelled true,
 * the message never arrives) or it completes normally (false, the message
 * arrives); never both. Rank 0 tells rank 1 which, on another tag.
 */
static void cancel_send(void)
{
	int v[4] = { 7, 8, 9, 10 }, flag = 0, was = -1, i;
	MPI_Request r;
	MPI_Status st;
	MPI_Comm c;
	double t;

	MPI_Comm_dup(MPI_COMM_WORLD, &c);
	if (rank == 0) {
		MPI_Isend(v, 4, MPI_INT, 1, 71, c, &r);
		MPI_Cancel(&r);
		MPI_Wait(&r, &st);
		MPI_Test_cancelled(&st, &was);
		MPI_Send(&was, 1, MPI_INT, 1, 72, c);
	} else if (rank == 1) {
		MPI_Recv(&was, 1, MPI_INT, 0, 72, c, &st);
		if (!was) {
			memset(v, 0, sizeof(v));
			MPI_Recv(v, 4, MPI_INT, 0, 71, c, &st);
			for (i = 0; i < 4; i++)
				CHECK(v[i] == 7 + i);
		}
	}
	MPI_Barrier(c);
	if (rank == 1) {
		/* Nothing (more) arrives on tag 71, within half a second. */
		t = MPI_Wtime();
		while (!flag && MPI_Wtime() - t < 0.5)
			MPI_Iprobe(0, 71, c, &flag, &st);
		CHECK(!flag);
	}
	MPI_Comm_free(&c);
}

/*
 * A 1 MiB synchronous send (announced, not copied inline) to a receive
 * posted first, ten times: the receiver may pull and acknowledge it
 * before the sender has seen it leave.
 */
static void ssend_big(int dst)
{
	const int big = 1 << 20;
	char *b = malloc(big);
	MPI_Request q;
	MPI_Status st;
	int k, go = 1;

	for (k = 0; k < 10; k++) {
		if (rank == 0 || rank == 2) {
			MPI_Recv(&go, 1, MPI_INT, dst, 95, MPI_COMM_WORLD, &st);
			memset(b, k + 1, big);
			MPI_Ssend(b, big, MPI_CHAR, dst, 96, MPI_COMM_WORLD);
		} else {
			memset(b, 0, big);
			MPI_Irecv(b, big, MPI_CHAR, rank - 1, 96, MPI_COMM_WORLD,
				  &q);
			MPI_Send(&go, 1, MPI_INT, rank - 1, 95, MPI_COMM_WORLD);
			MPI_Wait(&q, &st);
			CHECK(b[0] == k + 1 && b[big - 1] == k + 1);
		}
	}
	free(b);
}

/*
 * Synchronous sends complete only once the receiver matched them: rank 0's
 * MPI_Issend (and rank 2's MPI_Ssend_init started) stay pending while the
 * receiver has posted nothing, however long the sender tests, and
 * complete once it receives.
 */
static void ssend(void)
{
	int v = 0, go = 1, flag = 0, i, dst = rank + 1;
	MPI_Request r;
	MPI_Status st;

	if (rank == 0 || rank == 2) {
		v = 500 + rank;
		if (rank == 0)
			MPI_Issend(&v, 1, MPI_INT, dst, 90, MPI_COMM_WORLD, &r);
		else
			MPI_Ssend_init(&v, 1, MPI_INT, dst, 90, MPI_COMM_WORLD,
				       &r);
		if (rank == 2)
			MPI_Start(&r);
		for (i = 0; i < 50 && !flag; i++) {
			MPI_Test(&r, &flag, &st);
			usleep(4000);
		}
		CHECK(!flag);
		MPI_Send(&go, 1, MPI_INT, dst, 91, MPI_COMM_WORLD);
		MPI_Wait(&r, &st);
		if (rank == 2)
			MPI_Request_free(&r);
		/* A blocking one returns once the receive took it. */
		MPI_Ssend(&v, 1, MPI_INT, dst, 92, MPI_COMM_WORLD);
		MPI_Recv(&go, 1, MPI_INT, dst, 93, MPI_COMM_WORLD, &st);
		CHECK(go == 2);
	} else {
		MPI_Recv(&go, 1, MPI_INT, rank - 1, 91, MPI_COMM_WORLD, &st);
		MPI_Recv(&v, 1, MPI_INT, rank - 1, 90, MPI_COMM_WORLD, &st);
		CHECK(v == 500 + rank - 1);
		/* The one blocking send: probed (not matched) first. */
		MPI_Probe(rank - 1, 92, MPI_COMM_WORLD, &st);
		go = 2;
		MPI_Recv(&v, 1, MPI_INT, rank - 1, 92, MPI_COMM_WORLD, &st);
		MPI_Send(&go, 1, MPI_INT, rank - 1, 93, MPI_COMM_WORLD);
	}
	MPI_Ssend(&v, 0, MPI_INT, MPI_PROC_NULL, 94, MPI_COMM_WORLD);
	ssend_big(dst);
}

static void alloc_mem(void)
{
	size_t n = 1 << 20;
	char *p;
	MPI_Status st;

	MPI_Alloc_mem((MPI_Aint)n, MPI_INFO_NULL, &p);
	memset(p, rank, n);
	MPI_Sendrecv(p, (int)(n / 2), MPI_BYTE, (rank + 1) % size, 40,
		     p + n / 2, (int)(n / 2), MPI_BYTE,
		     (rank + size - 1) % size, 40, MPI_COMM_WORLD, &st);
	CHECK(p[n / 2] == (rank + size - 1) % size && p[n - 1] == p[n / 2]);
	MPI_Free_mem(p);
}

int main(int argc, char **argv)
{
	int x = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc > 1 && !strcmp(argv[1], "die")) {
		/* Rank 1 leaves; rank 0 waits for it and must fail. */
		MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
		if (rank == 1) {
			MPI_Send(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
			_exit(3);
		}
		if (rank == 0) {
			MPI_Recv(&x, 1, MPI_INT, 1, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			if (MPI_Recv(&x, 1, MPI_INT, 1, 2, MPI_COMM_WORLD,
				     MPI_STATUS_IGNORE) != MPI_SUCCESS) {
				fprintf(stderr, "sem: rank 0: receive from "
					"the dead rank failed\n");
				return 4;
			}
		}
		MPI_Finalize();
		return 0;
	}
	if (size < 4) {
		fprintf(stderr, "sem: needs 4 ranks or more\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	ordering();
	wildcards();
	probing();
	truncation();
	cancel_and_null();
	communicators();
	derived();
	completion();
	persistent();
	persistent_done_at_start();
	irecv_done_at_post();
	persistent_large();
	matched();
	cancel_send();
	ssend();
	alloc_mem();
	MPI_Allreduce(MPI_IN_PLACE, &checks, 1, MPI_INT, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0)
		printf("sem: %d checks passed\n", checks);
	MPI_Finalize();
	return 0;
}
