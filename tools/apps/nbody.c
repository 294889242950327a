// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * nbody.c - N-body simulation with softened gravity between every pair of
 * particles. The particles are split evenly over the ranks; every step a
 * rank computes the accelerations of its own particles from all N, moves
 * them (velocity, then position), and sends their new state to every
 * other rank, which receives it straight into its copy of the whole set.
 * Each acceleration sums over all particles in index order, so the
 * result does not depend on the number of ranks.
 * Checks: the total momentum stays what it was (to rounding), every rank
 * ends with the same copy of the whole set, and on small problems rank 0
 * repeats all steps serially and must get the same set bit for bit.
 *   mpirun -np 2 nbody [--size N] [--iters K] [--comm p2p|coll]
 *                      [--post late|early] [--alloc mpi|malloc] [--paper]
 */
#include "apps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TAG_P 31
#define SEED 0x4e42
#define EPS2 1e-4	/* softening length squared */
#define DT 1e-3
#define REF_LIMIT (1L << 26)	/* serial reference up to N*N*K pairs */

/* One particle, 64 bytes: what a rank sends of each of its own. */
struct particle {
	double x, y, z, vx, vy, vz, m, pad;
};

static const struct app_desc desc = {
	.name = "nbody",
	.what = "N-body simulation with pairwise softened gravity: particles\n"
		"split evenly over the ranks, each rank moves its own from the\n"
		"forces of all and sends their new state to every other rank.",
	.size_help = "particles (N >= P)",
	.iters_help = "time steps",
	.def_size = 8192, .def_iters = 14,
	.paper_size = 10240, .paper_iters = 200,
	.paper_help = "10240 particles, 200 steps",
	.ranks_help = "any P >= 1 with N >= P (N/P or N/P + 1 particles each)",
	.comm_help =
		"                   p2p: MPI_Isend of a rank's particles to every\n"
		"                   other rank, MPI_Irecv of theirs into place\n"
		"                   coll: MPI_Allgatherv in place",
	.post_help =
		"                   only with --comm p2p: the receives of the step's\n"
		"                   particles are posted before the force computation\n"
		"                   (two copies of the set alternate then)",
	.coll_early = 0,
};

static void initial(struct particle *p, long n)
{
	double mx = 0, my = 0, mz = 0, mt = 0;
	long i;

	for (i = 0; i < n; i++) {
		uint64_t s = (uint64_t)i * 8;

		p[i].x = app_unif(SEED, s);
		p[i].y = app_unif(SEED, s + 1);
		p[i].z = app_unif(SEED, s + 2);
		p[i].vx = app_unif(SEED, s + 3) - 0.5;
		p[i].vy = app_unif(SEED, s + 4) - 0.5;
		p[i].vz = app_unif(SEED, s + 5) - 0.5;
		p[i].m = (0.5 + app_unif(SEED, s + 6)) / (double)n;
		p[i].pad = 0;
		mx += p[i].m * p[i].vx;
		my += p[i].m * p[i].vy;
		mz += p[i].m * p[i].vz;
		mt += p[i].m;
	}
	/* No net momentum: the centre of mass stays put. */
	for (i = 0; i < n; i++) {
		p[i].vx -= mx / mt;
		p[i].vy -= my / mt;
		p[i].vz -= mz / mt;
	}
}

/* Accelerations of particles [lo, hi) from all n of src. */
static void forces(double *acc, const struct particle *src, long lo, long hi,
		   long n)
{
	long i, j;

	for (i = lo; i < hi; i++) {
		double ax = 0, ay = 0, az = 0;
		double xi = src[i].x, yi = src[i].y, zi = src[i].z;

		for (j = 0; j < n; j++) {
			double dx = src[j].x - xi, dy = src[j].y - yi,
			       dz = src[j].z - zi, d2, f;

			if (j == i)
				continue;
			d2 = dx * dx + dy * dy + dz * dz + EPS2;
			f = src[j].m / (d2 * sqrt(d2));
			ax += f * dx;
			ay += f * dy;
			az += f * dz;
		}
		acc[3 * (i - lo)] = ax;
		acc[3 * (i - lo) + 1] = ay;
		acc[3 * (i - lo) + 2] = az;
	}
}

/* Move particles [lo, hi) of src into dst by the accelerations acc. */
static void move(struct particle *dst, const struct particle *src,
		 const double *acc, long lo, long hi)
{
	long i;

	for (i = lo; i < hi; i++) {
		const double *ai = acc + 3 * (i - lo);

		dst[i] = src[i];
		dst[i].vx += ai[0] * DT;
		dst[i].vy += ai[1] * DT;
		dst[i].vz += ai[2] * DT;
		dst[i].x += dst[i].vx * DT;
		dst[i].y += dst[i].vy * DT;
		dst[i].z += dst[i].vz * DT;
	}
}

/* Momentum (3) and the sum of |m v| (1) of particles [lo, hi). */
static void momentum(double *mv, const struct particle *p, long lo, long hi)
{
	long i;

	mv[0] = mv[1] = mv[2] = mv[3] = 0;
	for (i = lo; i < hi; i++) {
		mv[0] += p[i].m * p[i].vx;
		mv[1] += p[i].m * p[i].vy;
		mv[2] += p[i].m * p[i].vz;
		mv[3] += p[i].m * sqrt(p[i].vx * p[i].vx +
				       p[i].vy * p[i].vy + p[i].vz * p[i].vz);
	}
}

static uint64_t set_word(const struct particle *p, long lo, long hi);

/* Rank 0, small problems: all steps serially; the set's digest word. */
static uint64_t serial_reference(struct app *a, long n, long k)
{
	struct particle *p = app_alloc_plain(a, (size_t)n * sizeof(*p));
	double *acc = app_alloc_plain(a, (size_t)(3 * n) * sizeof(*acc));
	uint64_t w;
	long it;

	initial(p, n);
	for (it = 0; it < k; it++) {
		forces(acc, p, 0, n, n);
		move(p, p, acc, 0, n);
	}
	w = set_word(p, 0, n);
	free(p);
	free(acc);
	return w;
}

static uint64_t set_word(const struct particle *p, long lo, long hi)
{
	uint64_t w = 0;
	long i;

	for (i = lo; i < hi; i++) {
		const double *d = &p[i].x;
		int f;

		for (f = 0; f < 7; f++)
			w += app_elem((uint64_t)i * 8 + (uint64_t)f, d[f]);
	}
	return w;
}

int main(int argc, char **argv)
{
	struct app a;
	struct app_xchg x;
	struct particle *set, *buf[2];
	double *acc, mv0[4], mv1[4], drift;
	long n, k, lo, hi, i, it;
	int *cnt, *dsp, r, nb, rc, cur;
	uint64_t w, *all = NULL;
	size_t setb;

	app_init(&a, &desc, argc, argv);
	n = a.size;
	k = a.iters;
	if (n < a.nranks)
		app_reject(&a, "--size %ld: needs N >= ranks (%d)", n,
			   a.nranks);
	if ((double)n * sizeof(struct particle) > (double)INT32_MAX)
		app_reject(&a, "--size %ld: too large", n);
	cnt = calloc((size_t)a.nranks, sizeof(*cnt));
	dsp = calloc((size_t)a.nranks, sizeof(*dsp));
	if (!cnt || !dsp)
		app_die(&a, "out of memory");
	/* In bytes: MPI_BYTE keeps the 64-byte particles whole. */
	for (r = 0; r < a.nranks; r++) {
		long l = n * r / a.nranks, h = n * (r + 1) / a.nranks;

		cnt[r] = (int)((h - l) * (long)sizeof(struct particle));
		dsp[r] = (int)(l * (long)sizeof(struct particle));
	}
	lo = n * a.rank / a.nranks;
	hi = n * (a.rank + 1) / a.nranks;

	/*
	 * The whole set, received in place: one copy updated in place (the
	 * accelerations are all computed before a particle moves), two
	 * alternating with early posting, where the receives for the next
	 * step are outstanding while this step reads the set.
	 */
	nb = a.post == APP_EARLY ? 2 : 1;
	setb = (size_t)n * sizeof(struct particle);
	for (i = 0; i < nb; i++) {
		buf[i] = app_alloc(&a, setb);
		initial(buf[i], n);
	}
	if (nb == 1)
		buf[1] = buf[0];
	acc = app_alloc_plain(&a, (size_t)(3 * (hi - lo)) * sizeof(double));
	momentum(mv0, buf[0], 0, n);
	app_xchg_init(&a, &x, 2 * a.nranks);

	app_begin(&a);
	for (it = 0; it < k; it++) {
		struct particle *src, *dst;
		double t0;

		cur = (int)(it & 1);
		src = buf[cur];
		dst = buf[cur ^ 1];
		if (a.comm == APP_P2P && a.post == APP_EARLY)
			for (r = 0; r < a.nranks; r++)
				if (r != a.rank)
					app_irecv(&a, &x, (char *)dst + dsp[r],
						  cnt[r], MPI_BYTE, r, TAG_P,
						  MPI_COMM_WORLD);
		t0 = app_now();
		forces(acc, src, lo, hi, n);
		move(dst, src, acc, lo, hi);
		app_comp(&a, t0);
		if (a.comm == APP_COLL) {
			app_allgatherv(&a, dst, cnt, dsp, MPI_BYTE,
				       MPI_COMM_WORLD);
			continue;
		}
		if (a.post == APP_LATE)
			for (r = 0; r < a.nranks; r++)
				if (r != a.rank)
					app_irecv(&a, &x, (char *)dst + dsp[r],
						  cnt[r], MPI_BYTE, r, TAG_P,
						  MPI_COMM_WORLD);
		for (r = 1; r < a.nranks; r++) {
			int d = (a.rank + r) % a.nranks;

			app_isend(&a, &x, (char *)dst + dsp[a.rank],
				  cnt[a.rank], MPI_BYTE, d, TAG_P,
				  MPI_COMM_WORLD);
		}
		app_waitall(&a, &x);
	}
	app_end(&a);

	/* The final set: in buf[k & 1] (buf[0] = buf[1] without early). */
	set = buf[k & 1];
	momentum(mv1, set, 0, n);
	drift = fabs(mv1[0] - mv0[0]) + fabs(mv1[1] - mv0[1]) +
		fabs(mv1[2] - mv0[2]);
	/*
	 * The pairwise forces cancel in the total momentum only up to the
	 * rounding of every term: a drift of a few ulps of the largest
	 * momentum per step and particle pair is normal, much more is not.
	 */
	if (!(drift <= 1e-12 * (mv0[3] + mv1[3]) * (double)k + 1e-300) &&
	    a.rank == 0)
		app_fail(&a, "total momentum moved by %.3g (sum of |m v| %.3g)",
			 drift, mv1[3]);
	/* Every rank holds the same set. */
	w = set_word(set, 0, n);
	if (a.rank == 0) {
		all = malloc((size_t)a.nranks * sizeof(*all));
		if (!all)
			app_die(&a, "out of memory");
	}
	MPI_Gather(&w, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0,
		   MPI_COMM_WORLD);
	if (a.rank == 0) {
		for (r = 1; r < a.nranks; r++)
			if (all[r] != all[0])
				app_fail(&a, "rank %d's copy of the particles "
					 "differs from rank 0's", r);
		free(all);
	}
	if (a.rank == 0 && n * n * k <= REF_LIMIT &&
	    serial_reference(&a, n, k) != w)
		app_fail(&a, "the particles differ from the serial run's");
	if (a.verbose && a.rank == 0)
		fprintf(stderr, "nbody: momentum drift %.3g, sum of |m v| "
			"%.6g\n", drift, mv1[3]);
	/* Digest: every rank's own particles, summed in rank order. */
	w = set_word(set, lo, hi);
	app_sum_words(&a, &w, 1);
	app_xchg_free(&x);
	for (i = 0; i < nb; i++)
		app_free(&a, buf[i]);
	free(acc);
	free(cnt);
	free(dsp);
	rc = app_finish(&a, &w, 1);
	return rc;
}
