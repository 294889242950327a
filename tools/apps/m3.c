// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * m3.c - master/worker matrix multiply. Rank 0 (the master) sends an
 * N x N matrix B to the workers (ranks 1..P-1) once; then in every
 * iteration it makes a new pseudo-random N x N matrix A_i, sends each
 * worker its block of rows of A_i, makes A_(i+1) while the workers
 * compute their rows of C_i = A_i B, collects the rows of C_i back into
 * place and folds them into the digest. The master computes no rows.
 * Checks: two rows of every C_i, recomputed serially by the master after
 * the run from regenerated A_i, must be equal bit for bit.
 *   mpirun -np 2 m3 [--size N] [--iters K] [--comm p2p|coll]
 *                   [--post late|early] [--alloc mpi|malloc] [--paper]
 */
#include "apps.h"

#include <stdio.h>
#include <stdlib.h>

#define TAG_B 21
#define TAG_A 22
#define TAG_C 23
#define SEED_B 0x42
#define SEED_A 0x4100

static const struct app_desc desc = {
	.name = "m3",
	.what = "Master/worker product C_i = A_i B of N x N matrices: rank 0\n"
		"sends B once, then every iteration makes a new random A_i,\n"
		"hands out blocks of its rows and collects the rows of C_i.",
	.size_help = "matrix order (N x N matrices; N >= P - 1)",
	.iters_help = "matrices A_i multiplied",
	.def_size = 512, .def_iters = 40,
	.paper_size = 1024, .paper_iters = 400,
	.paper_help = "1024 x 1024, 400 iterations",
	.ranks_help = "P >= 2: rank 0 is the master, ranks 1..P-1 the workers\n"
		"       (rows N/(P-1) or one more each); the master computes none",
	.comm_help =
		"                   p2p: MPI_Isend/MPI_Irecv of B, the A rows, the C rows\n"
		"                   coll: MPI_Bcast of B, MPI_Scatterv of A_i and\n"
		"                   MPI_Gatherv of C_i (the master's own share empty)",
	.post_help =
		"                   the master posts the receives of C_i before\n"
		"                   making A_(i+1), a worker its receive of A_(i+1)\n"
		"                   before computing C_i (two A buffers alternate);\n"
		"                   with coll: MPI_Igatherv and MPI_Iscatterv the same way",
	.coll_early = 1,
};

static double a_elem(long it, uint64_t idx)
{
	return 2 * app_unif(SEED_A + (uint64_t)it, idx) - 1;
}

static void make_a(double *m, long it, long n)
{
	uint64_t i, nn = (uint64_t)n * (uint64_t)n;

	for (i = 0; i < nn; i++)
		m[i] = a_elem(it, i);
}

/*
 * rows x n block of C = A B. Each C element is summed over k in order
 * from 0, whatever the blocking, so any split gives the same bits.
 */
static void multiply(double *c, const double *a, const double *b, long rows,
		     long n)
{
	long i, k, j, r, nr;

	for (i = 0; i < rows; i += 4) {
		nr = rows - i < 4 ? rows - i : 4;
		for (r = 0; r < nr; r++)
			for (j = 0; j < n; j++)
				c[(i + r) * n + j] = 0;
		if (nr == 4) {
			double *c0 = c + i * n, *c1 = c0 + n, *c2 = c1 + n,
			       *c3 = c2 + n;

			for (k = 0; k < n; k++) {
				const double *bk = b + k * n;
				double a0 = a[i * n + k], a1 = a[(i + 1) * n + k],
				       a2 = a[(i + 2) * n + k],
				       a3 = a[(i + 3) * n + k];

				for (j = 0; j < n; j++) {
					c0[j] += a0 * bk[j];
					c1[j] += a1 * bk[j];
					c2[j] += a2 * bk[j];
					c3[j] += a3 * bk[j];
				}
			}
			continue;
		}
		for (r = 0; r < nr; r++)
			for (k = 0; k < n; k++) {
				double ak = a[(i + r) * n + k];

				for (j = 0; j < n; j++)
					c[(i + r) * n + j] += ak * b[k * n + j];
			}
	}
}

/* The two rows of C_i the master checks. */
static long check_row(long it, int which, long n)
{
	long r = (long)(app_mix((uint64_t)it) % (uint64_t)n);

	return which ? (r + n / 2) % n : r;
}

int main(int argc, char **argv)
{
	struct app a;
	struct app_xchg xs, xr;
	MPI_Comm comm_a, comm_c;
	MPI_Request rq = MPI_REQUEST_NULL;
	long n, k, it, rows = 0, i, j;
	int *cnt, *dsp, w, nw, nb, rc;
	double *bm, *am = NULL, *cm = NULL, *abuf[2] = { NULL, NULL };
	double *cbuf = NULL, *samp = NULL, *arow, *crow;
	uint64_t word = 0;

	app_init(&a, &desc, argc, argv);
	n = a.size;
	k = a.iters;
	nw = a.nranks - 1;
	if (a.nranks < 2)
		app_reject(&a, "needs at least 2 ranks: a master and a worker");
	if (n < nw)
		app_reject(&a, "--size %ld: needs N >= %d, a row per worker", n,
			   nw);
	if ((double)n * (double)n > (double)INT32_MAX / 2)
		app_reject(&a, "--size %ld: too large", n);
	/* Rows of worker w: [dsp[w], dsp[w] + cnt[w]) / n; none for 0. */
	cnt = calloc((size_t)a.nranks, sizeof(*cnt));
	dsp = calloc((size_t)a.nranks, sizeof(*dsp));
	if (!cnt || !dsp)
		app_die(&a, "out of memory");
	for (w = 1; w <= nw; w++) {
		long lo = n * (w - 1) / nw, hi = n * w / nw;

		cnt[w] = (int)((hi - lo) * n);
		dsp[w] = (int)(lo * n);
	}
	if (a.rank)
		rows = cnt[a.rank] / n;
	/* Scatters and gathers on their own communicators (coll early). */
	MPI_Comm_dup(MPI_COMM_WORLD, &comm_a);
	MPI_Comm_dup(MPI_COMM_WORLD, &comm_c);

	/*
	 * Receive buffers, page-aligned and the same every iteration: B on
	 * the workers; A's rows on a worker (two alternating with early
	 * posting); C on the master, where each worker's rows land in place.
	 */
	nb = a.post == APP_EARLY ? 2 : 1;
	if (a.rank == 0) {
		bm = app_alloc_plain(&a, (size_t)(n * n) * sizeof(double));
		am = app_alloc_plain(&a, (size_t)(n * n) * sizeof(double));
		cm = app_alloc(&a, (size_t)(n * n) * sizeof(double));
		samp = malloc((size_t)(2 * k * n) * sizeof(double));
		if (!samp)
			app_die(&a, "out of memory");
		for (i = 0; i < n * n; i++)
			bm[i] = 2 * app_unif(SEED_B, (uint64_t)i) - 1;
		make_a(am, 0, n);
	} else {
		bm = app_alloc(&a, (size_t)(n * n) * sizeof(double));
		for (i = 0; i < nb; i++)
			abuf[i] = app_alloc(&a, (size_t)(rows * n) *
					    sizeof(double));
		if (nb == 1)
			abuf[1] = abuf[0];
		cbuf = app_alloc_plain(&a, (size_t)(rows * n) * sizeof(double));
	}
	app_xchg_init(&a, &xs, a.nranks);
	app_xchg_init(&a, &xr, a.nranks);

	app_begin(&a);
	if (a.comm == APP_COLL) {
		app_bcast(&a, bm, (int)(n * n), MPI_DOUBLE, 0, MPI_COMM_WORLD);
	} else if (a.rank == 0) {
		for (w = 1; w <= nw; w++)
			app_isend(&a, &xs, bm, (int)(n * n), MPI_DOUBLE, w,
				  TAG_B, MPI_COMM_WORLD);
		app_waitall(&a, &xs);
	} else {
		app_irecv(&a, &xr, bm, (int)(n * n), MPI_DOUBLE, 0, TAG_B,
			  MPI_COMM_WORLD);
		app_waitall(&a, &xr);
	}

	if (a.rank == 0) {
		for (it = 0; it < k; it++) {
			double t0;

			/* A_i out, from the matrix itself. */
			if (a.comm == APP_COLL && a.post == APP_EARLY) {
				/*
				 * Nonblocking collectives never match
				 * blocking ones: the workers' Iscatterv
				 * needs ours.
				 */
				app_scatterv(&a, am, cnt, dsp, MPI_DOUBLE, NULL,
					     0, 0, comm_a, &rq);
				app_wait_req(&a, &rq);
				app_gatherv(&a, NULL, 0, MPI_DOUBLE, cm, cnt,
					    dsp, 0, comm_c, &rq);
			} else if (a.comm == APP_COLL) {
				app_scatterv(&a, am, cnt, dsp, MPI_DOUBLE, NULL,
					     0, 0, comm_a, NULL);
			} else {
				for (w = 1; w <= nw; w++)
					app_isend(&a, &xs, am + dsp[w], cnt[w],
						  MPI_DOUBLE, w, TAG_A,
						  MPI_COMM_WORLD);
				if (a.post == APP_EARLY)
					for (w = 1; w <= nw; w++)
						app_irecv(&a, &xr, cm + dsp[w],
							  cnt[w], MPI_DOUBLE, w,
							  TAG_C,
							  MPI_COMM_WORLD);
				app_waitall(&a, &xs);
			}
			/* The next matrix while the workers compute. */
			t0 = app_now();
			if (it + 1 < k)
				make_a(am, it + 1, n);
			app_comp(&a, t0);
			if (a.comm == APP_COLL) {
				if (a.post == APP_EARLY)
					app_wait_req(&a, &rq);
				else
					app_gatherv(&a, NULL, 0, MPI_DOUBLE, cm,
						    cnt, dsp, 0, comm_c, NULL);
			} else {
				if (a.post == APP_LATE)
					for (w = 1; w <= nw; w++)
						app_irecv(&a, &xr, cm + dsp[w],
							  cnt[w], MPI_DOUBLE, w,
							  TAG_C,
							  MPI_COMM_WORLD);
				app_waitall(&a, &xr);
			}
			/* The results: into the digest, two rows kept. */
			t0 = app_now();
			for (i = 0; i < n * n; i++)
				word += app_elem((uint64_t)it * (uint64_t)n *
						 (uint64_t)n + (uint64_t)i,
						 cm[i]);
			for (j = 0; j < 2; j++)
				memcpy(samp + (2 * it + j) * n,
				       cm + check_row(it, (int)j, n) * n,
				       (size_t)n * sizeof(double));
			app_comp(&a, t0);
		}
	} else {
		int cnt_me = cnt[a.rank];

		/* Worker: A_0's rows first. */
		if (a.comm == APP_COLL) {
			app_scatterv(&a, NULL, cnt, dsp, MPI_DOUBLE, abuf[0],
				     cnt_me, 0, comm_a,
				     a.post == APP_EARLY ? &rq : NULL);
		} else {
			app_irecv(&a, &xr, abuf[0], cnt_me, MPI_DOUBLE, 0,
				  TAG_A, MPI_COMM_WORLD);
		}
		for (it = 0; it < k; it++) {
			double t0;
			int cur = (int)(it & 1), more = it + 1 < k;

			if (a.comm == APP_COLL && a.post == APP_EARLY)
				app_wait_req(&a, &rq);
			else if (a.comm == APP_P2P)
				app_waitall(&a, &xr);
			if (a.post == APP_EARLY && more) {
				if (a.comm == APP_COLL)
					app_scatterv(&a, NULL, cnt, dsp,
						     MPI_DOUBLE, abuf[cur ^ 1],
						     cnt_me, 0, comm_a, &rq);
				else
					app_irecv(&a, &xr, abuf[cur ^ 1],
						  cnt_me, MPI_DOUBLE, 0, TAG_A,
						  MPI_COMM_WORLD);
			}
			t0 = app_now();
			multiply(cbuf, abuf[cur], bm, rows, n);
			app_comp(&a, t0);
			if (a.comm == APP_COLL && a.post == APP_EARLY) {
				MPI_Request gq;

				app_gatherv(&a, cbuf, cnt_me, MPI_DOUBLE, NULL,
					    cnt, dsp, 0, comm_c, &gq);
				app_wait_req(&a, &gq);
				continue;
			}
			if (a.comm == APP_COLL) {
				app_gatherv(&a, cbuf, cnt_me, MPI_DOUBLE, NULL,
					    cnt, dsp, 0, comm_c, NULL);
				if (more)
					app_scatterv(&a, NULL, cnt, dsp,
						     MPI_DOUBLE, abuf[cur ^ 1],
						     cnt_me, 0, comm_a, NULL);
				continue;
			}
			if (a.post == APP_LATE && more)
				app_irecv(&a, &xr, abuf[cur ^ 1], cnt_me,
					  MPI_DOUBLE, 0, TAG_A, MPI_COMM_WORLD);
			app_isend(&a, &xs, cbuf, cnt_me, MPI_DOUBLE, 0, TAG_C,
				  MPI_COMM_WORLD);
			app_waitall(&a, &xs);
		}
	}
	app_end(&a);

	/* The master recomputes two rows of every C_i serially. */
	if (a.rank == 0) {
		arow = malloc((size_t)n * sizeof(double));
		crow = malloc((size_t)n * sizeof(double));
		if (!arow || !crow)
			app_die(&a, "out of memory");
		for (it = 0; it < k && a.ok; it++)
			for (j = 0; j < 2; j++) {
				long r = check_row(it, (int)j, n);

				for (i = 0; i < n; i++)
					arow[i] = a_elem(it, (uint64_t)(r * n +
								       i));
				multiply(crow, arow, bm, 1, n);
				if (memcmp(crow, samp + (2 * it + j) * n,
					   (size_t)n * sizeof(double)))
					app_fail(&a, "row %ld of C_%ld differs "
						 "from the serial product", r,
						 it);
			}
		free(arow);
		free(crow);
		free(samp);
	}
	app_sum_words(&a, &word, 1);
	app_xchg_free(&xs);
	app_xchg_free(&xr);
	MPI_Comm_free(&comm_a);
	MPI_Comm_free(&comm_c);
	if (a.rank == 0) {
		free(bm);
		free(am);
		app_free(&a, cm);
	} else {
		app_free(&a, bm);
		app_free(&a, abuf[0]);
		if (nb == 2)
			app_free(&a, abuf[1]);
		free(cbuf);
	}
	free(cnt);
	free(dsp);
	rc = app_finish(&a, &word, 1);
	return rc;
}
