// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ft.c - a 3-D FFT kernel after NAS FT: a complex N x N x N/2 array of
 * pseudo-random numbers is transformed once to Fourier space; then every
 * iteration multiplies it by exp(-4 pi^2 alpha |k|^2) (a time step of the
 * heat equation), transforms a copy back with 1-D FFTs along x and y (the
 * dimensions each rank holds whole), a global transpose (every rank sends
 * every other its block of y) and 1-D FFTs along z, and takes NAS FT's
 * checksum (the sum of 1024 fixed elements). The FFTs are radix-2,
 * iterative (fft.c).
 * Checks: on small arrays rank 0 repeats everything serially and must get
 * the same checksums and the same result in every iteration; after the
 * run the last result is transformed forward again and must give back
 * the evolved array times N^3/2.
 *   mpirun -np 2 ft [--size N] [--iters K] [--comm p2p|coll]
 *                   [--post late|early] [--alloc mpi|malloc] [--paper]
 */
#include "apps.h"
#include "fft.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define TAG_T 41
#define SEED 0x4654
#define ALPHA 1e-6	/* NAS FT's diffusion constant */
#define NSUM 1024	/* elements in a checksum */
#define CHUNK 8		/* lines gathered at once along a strided axis */
#define REF_LIMIT (1L << 18)	/* serial reference up to this many points */

static const struct app_desc desc = {
	.name = "ft",
	.what = "3-D FFT after NAS FT: an N x N x N/2 complex array evolved in\n"
		"Fourier space and transformed back every iteration, with a\n"
		"global transpose between the x-y and the z transforms.",
	.size_help = "N: the array is N x N x N/2 (x, y, z); N a power of 2, >= 8",
	.iters_help = "time steps (inverse 3-D FFTs and checksums)",
	.def_size = 128, .def_iters = 100,
	.paper_size = 256, .paper_iters = 6,
	.paper_help = "NAS FT class A, 256 x 256 x 128, 6 iterations",
	.ranks_help = "P a power of 2 dividing N/2 (P divides both the y and\n"
		"       the z extent: each rank holds N/P y-planes, N/2/P z-planes)",
	.comm_help =
		"                   p2p: MPI_Isend/MPI_Irecv of the transpose blocks\n"
		"                   coll: MPI_Alltoall",
	.post_help =
		"                   only with --comm p2p: the transpose's receives\n"
		"                   are posted before the evolution and the x-y FFTs",
	.coll_early = 0,
};

/* ---- 1-D FFTs of many lines ----------------------------------------- */

/* FFT of every contiguous line of n in rows x n elements. */
static void fft_rows(struct cplx *d, long rows, const struct fft_plan *p,
		     int dir)
{
	long r;

	for (r = 0; r < rows; r++)
		fft1(d + r * p->n, p, dir);
}

/*
 * FFT of the lines base[x + off[m]], m < n, for x < nx: gathered CHUNK
 * lines at a time (neighbouring x share cache lines), transformed,
 * scattered back.
 */
static void fft_gathered(struct cplx *base, const long *off, long nx,
			 const struct fft_plan *p, int dir, struct cplx *tmp)
{
	long n = p->n, x0, c, nc, m;

	for (x0 = 0; x0 < nx; x0 += CHUNK) {
		nc = nx - x0 < CHUNK ? nx - x0 : CHUNK;
		for (m = 0; m < n; m++)
			for (c = 0; c < nc; c++)
				tmp[c * n + m] = base[off[m] + x0 + c];
		for (c = 0; c < nc; c++)
			fft1(tmp + c * n, p, dir);
		for (m = 0; m < n; m++)
			for (c = 0; c < nc; c++)
				base[off[m] + x0 + c] = tmp[c * n + m];
	}
}

/* ---- the distributed array ------------------------------------------- */

/*
 * Layout A (Fourier space): rank r holds the z-planes [r nzl, (r+1) nzl),
 * stored a[y][zl][x]; the block of y-planes rank s gets in the transpose
 * is contiguous. Layout B (after the transpose): rank s holds the
 * y-planes [s nyl, (s+1) nyl), stored as the blocks received from each
 * rank r in turn: b[r][yl][zl][x], z = r nzl + zl. Both transposes send
 * from and receive into contiguous blocks: nothing is packed.
 */
struct ft {
	long nx, ny, nz, nyl, nzl, blk;	/* blk: complex numbers per block */
	long ntot;
	struct fft_plan px, py, pz;
	long *offy, *offz;		/* line offsets, y in A, z in B */
	struct cplx *tmp;
};

static long a_index(const struct ft *f, long y, long zl, long x)
{
	return (y * f->nzl + zl) * f->nx + x;
}

static long b_index(const struct ft *f, long yl, long z, long x)
{
	return ((z / f->nzl * f->nyl + yl) * f->nzl + z % f->nzl) * f->nx + x;
}

/* x and y FFTs of layout A. */
static void fft_xy(struct ft *f, struct cplx *u, int dir)
{
	long zl;

	fft_rows(u, f->ny * f->nzl, &f->px, dir);
	for (zl = 0; zl < f->nzl; zl++)
		fft_gathered(u + zl * f->nx, f->offy, f->nx, &f->py, dir,
			     f->tmp);
}

/* z FFTs of layout B (x too when forward: both are local there). */
static void fft_z(struct ft *f, struct cplx *u, int dir)
{
	long yl;

	for (yl = 0; yl < f->nyl; yl++)
		fft_gathered(u + yl * f->nzl * f->nx, f->offz, f->nx, &f->pz,
			     dir, f->tmp);
}

/*
 * The transpose: block s of src to rank s, block r from rank r into dst.
 * With p2p, recv_posted says the receives are already in x.
 */
static void post_recvs(struct app *a, struct ft *f, struct app_xchg *x,
		       struct cplx *dst)
{
	int r;

	for (r = 0; r < a->nranks; r++)
		if (r != a->rank)
			app_irecv(a, x, dst + r * f->blk, (int)(2 * f->blk),
				  MPI_DOUBLE, r, TAG_T, MPI_COMM_WORLD);
}

static void transpose(struct app *a, struct ft *f, struct app_xchg *x,
		      const struct cplx *src, struct cplx *dst, int posted)
{
	double t0;
	int r, d;

	if (a->comm == APP_COLL) {
		app_alltoall(a, src, dst, (int)(2 * f->blk), MPI_DOUBLE,
			     MPI_COMM_WORLD);
		return;
	}
	if (!posted)
		post_recvs(a, f, x, dst);
	for (r = 1; r < a->nranks; r++) {
		d = (a->rank + r) % a->nranks;
		app_isend(a, x, src + d * f->blk, (int)(2 * f->blk),
			  MPI_DOUBLE, d, TAG_T, MPI_COMM_WORLD);
	}
	/* The rank's own block: a local copy, counted as computation. */
	t0 = app_now();
	memcpy(dst + a->rank * f->blk, src + a->rank * f->blk,
	       (size_t)f->blk * sizeof(*dst));
	app_comp(a, t0);
	app_waitall(a, x);
}

static struct cplx initial(long x, long y, long z, const struct ft *f)
{
	uint64_t g = (uint64_t)((z * f->ny + y) * f->nx + x);
	struct cplx c = { app_unif(SEED, 2 * g), app_unif(SEED, 2 * g + 1) };

	return c;
}

/* exp(-4 pi^2 alpha |k|^2), k the signed frequency of each index. */
static double twiddle(long x, long y, long z, const struct ft *f)
{
	long kx = x < f->nx / 2 ? x : x - f->nx;
	long ky = y < f->ny / 2 ? y : y - f->ny;
	long kz = z < f->nz / 2 ? z : z - f->nz;

	return exp(-4 * M_PI * M_PI * ALPHA *
		   (double)(kx * kx + ky * ky + kz * kz));
}

/*
 * A cheap word of a whole result, for every iteration: each element's
 * bits mixed with its global index g (x + N (y + N z)), summed.
 */
static inline uint64_t quick(uint64_t g, const struct cplx *c)
{
	return (app_bits(c->re) ^ (2 * g)) * 0x9e3779b97f4a7c15ULL +
	       (app_bits(c->im) ^ (2 * g + 1)) * 0xc2b2ae3d27d4eb4fULL;
}

/* The quick word of the elements of layout B this rank holds. */
static uint64_t quick_word(const struct ft *f, const struct cplx *u, long ylo,
			   int nranks)
{
	uint64_t w = 0, g;
	long r, yl, zl, x;

	for (r = 0; r < nranks; r++)
		for (yl = 0; yl < f->nyl; yl++)
			for (zl = 0; zl < f->nzl; zl++) {
				g = (uint64_t)(((r * f->nzl + zl) * f->ny +
						ylo + yl) * f->nx);
				for (x = 0; x < f->nx; x++, u++)
					w += quick(g + (uint64_t)x, u);
			}
	return w;
}

/* The j-th checksum element (NAS FT), j = 1..1024. */
static void sum_point(long j, const struct ft *f, long *x, long *y, long *z)
{
	*x = j % f->nx;
	*y = 3 * j % f->ny;
	*z = 5 * j % f->nz;
}

/*
 * Rank 0, small arrays: the same computation serially on the whole array
 * (s[z][y][x]), the FFTs in the same order along the same axes; the
 * checksums, 2 doubles per iteration, unscaled sums, and the quick
 * words of the results.
 */
static void serial_reference(struct app *a, struct ft *f, long k,
			     double *sums, uint64_t *words)
{
	long nx = f->nx, ny = f->ny, nz = f->nz, n = f->ntot, i, x, y, z, j;
	long it, *oy = malloc((size_t)ny * sizeof(long));
	long *oz = malloc((size_t)nz * sizeof(long));
	struct cplx *s0 = malloc((size_t)n * sizeof(*s0));
	struct cplx *s1 = malloc((size_t)n * sizeof(*s1));
	double *tw = malloc((size_t)n * sizeof(*tw));

	if (!oy || !oz || !s0 || !s1 || !tw)
		app_die(a, "out of memory");
	for (y = 0; y < ny; y++)
		oy[y] = y * nx;
	for (z = 0; z < nz; z++)
		oz[z] = z * ny * nx;
	for (z = 0; z < nz; z++)
		for (y = 0; y < ny; y++)
			for (x = 0; x < nx; x++) {
				s0[(z * ny + y) * nx + x] = initial(x, y, z, f);
				tw[(z * ny + y) * nx + x] = twiddle(x, y, z, f);
			}
	/* Forward as the parallel one: x, z, then y. */
	fft_rows(s0, ny * nz, &f->px, -1);
	for (y = 0; y < ny; y++)
		fft_gathered(s0 + y * nx, oz, nx, &f->pz, -1, f->tmp);
	for (z = 0; z < nz; z++)
		fft_gathered(s0 + z * ny * nx, oy, nx, &f->py, -1, f->tmp);
	for (it = 0; it < k; it++) {
		for (i = 0; i < n; i++) {
			s0[i].re *= tw[i];
			s0[i].im *= tw[i];
			s1[i] = s0[i];
		}
		fft_rows(s1, ny * nz, &f->px, 1);
		for (z = 0; z < nz; z++)
			fft_gathered(s1 + z * ny * nx, oy, nx, &f->py, 1,
				     f->tmp);
		for (y = 0; y < ny; y++)
			fft_gathered(s1 + y * nx, oz, nx, &f->pz, 1, f->tmp);
		words[it] = 0;
		for (i = 0; i < n; i++)
			words[it] += quick((uint64_t)i, s1 + i);
		sums[2 * it] = 0;
		sums[2 * it + 1] = 0;
		for (j = 1; j <= NSUM; j++) {
			sum_point(j, f, &x, &y, &z);
			sums[2 * it] += s1[(z * ny + y) * nx + x].re;
			sums[2 * it + 1] += s1[(z * ny + y) * nx + x].im;
		}
	}
	free(oy);
	free(oz);
	free(s0);
	free(s1);
	free(tw);
}

int main(int argc, char **argv)
{
	struct app a;
	struct app_xchg x;
	struct ft f;
	struct cplx *u0, *u1, *u2;
	double *tw, *cs, *sums, *ref, err = 0, big = 0, e;
	long n, k, i, j, it, yl, y, z, zl, xx, ylo, zlo, loc;
	uint64_t *w, *refw;
	int rc, nw;

	app_init(&a, &desc, argc, argv);
	n = a.size;
	k = a.iters;
	if (n < 8 || (n & (n - 1)))
		app_reject(&a, "--size %ld: needs a power of 2, at least 8", n);
	if (n > 2048)
		app_reject(&a, "--size %ld: at most 2048", n);
	if ((a.nranks & (a.nranks - 1)) || (n / 2) % a.nranks)
		app_reject(&a, "%d ranks: needs a power of 2 that divides N/2 "
			   "(%ld)", a.nranks, n / 2);
	f.nx = n;
	f.ny = n;
	f.nz = n / 2;
	f.nyl = f.ny / a.nranks;
	f.nzl = f.nz / a.nranks;
	f.blk = f.nyl * f.nzl * f.nx;
	f.ntot = f.nx * f.ny * f.nz;
	loc = f.nx * f.ny * f.nzl;	/* = nx nyl nz: both layouts */
	if ((double)f.blk * 2 > (double)INT32_MAX)
		app_reject(&a, "--size %ld with %d ranks: blocks too large",
			   n, a.nranks);
	ylo = a.rank * f.nyl;
	zlo = a.rank * f.nzl;
	fft_plan_make(&a, &f.px, f.nx);
	fft_plan_make(&a, &f.py, f.ny);
	fft_plan_make(&a, &f.pz, f.nz);
	f.offy = malloc((size_t)f.ny * sizeof(long));
	f.offz = malloc((size_t)f.nz * sizeof(long));
	f.tmp = malloc((size_t)(CHUNK * n) * sizeof(struct cplx));
	cs = calloc((size_t)(2 * k * NSUM), sizeof(double));
	sums = calloc((size_t)(2 * k), sizeof(double));
	/*
	 * Digest words: the checksums (2 per iteration, from rank 0), the
	 * quick word of every iteration's result, the last result in full.
	 */
	nw = (int)(3 * k + 1);
	w = calloc((size_t)nw, sizeof(*w));
	if (!f.offy || !f.offz || !f.tmp || !cs || !sums || !w)
		app_die(&a, "out of memory");
	for (y = 0; y < f.ny; y++)
		f.offy[y] = y * f.nzl * f.nx;
	for (z = 0; z < f.nz; z++)
		f.offz[z] = b_index(&f, 0, z, 0);

	/*
	 * u0: the evolving Fourier-space array (A); u1: its copy being
	 * transformed (A); u2: the transposed result (B), the receive
	 * buffer of every iteration, at the same address throughout.
	 */
	u0 = app_alloc_plain(&a, (size_t)loc * sizeof(*u0));
	u1 = app_alloc(&a, (size_t)loc * sizeof(*u1));
	u2 = app_alloc(&a, (size_t)loc * sizeof(*u2));
	tw = app_alloc_plain(&a, (size_t)loc * sizeof(*tw));
	app_xchg_init(&a, &x, 2 * a.nranks);

	/* Setup: forward transform of the initial array (B, then A). */
	for (yl = 0; yl < f.nyl; yl++)
		for (z = 0; z < f.nz; z++)
			for (xx = 0; xx < f.nx; xx++)
				u2[b_index(&f, yl, z, xx)] =
					initial(xx, ylo + yl, z, &f);
	fft_rows(u2, f.nyl * f.nz, &f.px, -1);
	fft_z(&f, u2, -1);
	transpose(&a, &f, &x, u2, u1, 0);
	for (zl = 0; zl < f.nzl; zl++)
		fft_gathered(u1 + zl * f.nx, f.offy, f.nx, &f.py, -1, f.tmp);
	memcpy(u0, u1, (size_t)loc * sizeof(*u0));
	for (y = 0; y < f.ny; y++)
		for (zl = 0; zl < f.nzl; zl++)
			for (xx = 0; xx < f.nx; xx++)
				tw[a_index(&f, y, zl, xx)] =
					twiddle(xx, y, zlo + zl, &f);

	app_begin(&a);
	for (it = 0; it < k; it++) {
		int early = a.comm == APP_P2P && a.post == APP_EARLY;
		double t0;

		if (early)
			post_recvs(&a, &f, &x, u2);
		t0 = app_now();
		for (i = 0; i < loc; i++) {
			u0[i].re *= tw[i];
			u0[i].im *= tw[i];
			u1[i] = u0[i];
		}
		fft_xy(&f, u1, 1);
		app_comp(&a, t0);
		transpose(&a, &f, &x, u1, u2, early);
		t0 = app_now();
		fft_z(&f, u2, 1);
		for (j = 1; j <= NSUM; j++) {
			sum_point(j, &f, &xx, &y, &z);
			if (y < ylo || y >= ylo + f.nyl)
				continue;
			i = b_index(&f, y - ylo, z, xx);
			cs[(it * NSUM + j - 1) * 2] = u2[i].re;
			cs[(it * NSUM + j - 1) * 2 + 1] = u2[i].im;
		}
		w[2 * k + it] = quick_word(&f, u2, ylo, a.nranks);
		app_comp(&a, t0);
	}
	app_end(&a);

	/* The result's digest word before the round trip changes u2. */
	for (yl = 0; yl < f.nyl; yl++)
		for (z = 0; z < f.nz; z++)
			for (xx = 0; xx < f.nx; xx++) {
				uint64_t g = (uint64_t)((z * f.ny + ylo + yl) *
							f.nx + xx);

				i = b_index(&f, yl, z, xx);
				w[3 * k] += app_elem(2 * g, u2[i].re) +
					    app_elem(2 * g + 1, u2[i].im);
			}
	/*
	 * Checksums: each element is held by one rank, the others add 0, so
	 * the sum in rank order gives it exactly; rank 0 adds them in j
	 * order, as a serial program would.
	 */
	app_sum_doubles(&a, cs, (int)(2 * k * NSUM));
	if (a.rank == 0)
		for (it = 0; it < k; it++) {
			for (j = 0; j < NSUM; j++) {
				sums[2 * it] += cs[(it * NSUM + j) * 2];
				sums[2 * it + 1] += cs[(it * NSUM + j) * 2 + 1];
			}
			w[2 * it] = app_bits(sums[2 * it] / (double)f.ntot);
			w[2 * it + 1] = app_bits(sums[2 * it + 1] /
						 (double)f.ntot);
		}

	/* Round trip: forward again must give u0 times the point count. */
	fft_rows(u2, f.nyl * f.nz, &f.px, -1);
	fft_z(&f, u2, -1);
	transpose(&a, &f, &x, u2, u1, 0);
	for (zl = 0; zl < f.nzl; zl++)
		fft_gathered(u1 + zl * f.nx, f.offy, f.nx, &f.py, -1, f.tmp);
	for (i = 0; i < loc; i++) {
		e = hypot(u1[i].re - u0[i].re * (double)f.ntot,
			  u1[i].im - u0[i].im * (double)f.ntot);
		err = e > err ? e : err;
		e = hypot(u0[i].re, u0[i].im) * (double)f.ntot;
		big = e > big ? e : big;
	}
	MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_DOUBLE, MPI_MAX,
		      MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &big, 1, MPI_DOUBLE, MPI_MAX,
		      MPI_COMM_WORLD);
	if (a.rank == 0 && !(err <= 1e-10 * big))
		app_fail(&a, "forward transform of the result is off the "
			 "evolved array by %.3g (largest element %.3g)", err,
			 big);
	app_sum_words(&a, w, nw);
	if (a.rank == 0 && f.ntot <= REF_LIMIT) {
		ref = malloc((size_t)(2 * k) * sizeof(*ref));
		refw = malloc((size_t)k * sizeof(*refw));
		if (!ref || !refw)
			app_die(&a, "out of memory");
		serial_reference(&a, &f, k, ref, refw);
		for (it = 0; it < k; it++)
			if (refw[it] != w[2 * k + it]) {
				app_fail(&a, "the result of iteration %ld "
					 "differs from the serial one's",
					 it + 1);
				break;
			}
		if (a.verbose)
			fprintf(stderr, "ft: serial checksums %s\n",
				memcmp(ref, sums, (size_t)(2 * k) *
				       sizeof(*ref)) ? "differ in bits" :
				"identical bit for bit");
		for (it = 0; it < k; it++)
			if (fabs(ref[2 * it] - sums[2 * it]) +
			    fabs(ref[2 * it + 1] - sums[2 * it + 1]) >
			    1e-12 * (fabs(ref[2 * it]) + fabs(ref[2 * it + 1]))) {
				app_fail(&a, "checksum %ld is %.15e%+.15ei, "
					 "serially %.15e%+.15ei", it + 1,
					 sums[2 * it] / (double)f.ntot,
					 sums[2 * it + 1] / (double)f.ntot,
					 ref[2 * it] / (double)f.ntot,
					 ref[2 * it + 1] / (double)f.ntot);
				break;
			}
		free(ref);
		free(refw);
	}
	if (a.verbose && a.rank == 0) {
		for (it = 0; it < k; it++)
			fprintf(stderr, "ft: checksum %2ld %.12e %+.12ei\n",
				it + 1, sums[2 * it] / (double)f.ntot,
				sums[2 * it + 1] / (double)f.ntot);
		fprintf(stderr, "ft: round trip off by %.3g of %.3g\n", err,
			big);
	}
	app_xchg_free(&x);
	free(u0);
	app_free(&a, u1);
	app_free(&a, u2);
	free(tw);
	fft_plan_free(&f.px);
	fft_plan_free(&f.py);
	fft_plan_free(&f.pz);
	free(f.offy);
	free(f.offz);
	free(f.tmp);
	free(cs);
	free(sums);
	rc = app_finish(&a, w, nw);
	free(w);
	return rc;
}
