// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fft.c - the iterative radix-2 complex FFT of the application programs
 * (fft.h). Not a program: linked into every program of tools/apps.
 */
#include "fft.h"

#include <math.h>
#include <stdlib.h>

void fft_plan_make(struct app *a, struct fft_plan *p, long n)
{
	long i, j;
	int b, bits = 0;

	while ((1L << bits) < n)
		bits++;
	p->n = n;
	p->bits = bits;
	p->rev = malloc((size_t)n * sizeof(*p->rev));
	p->w = malloc((size_t)(n / 2 + 1) * sizeof(*p->w));
	if (!p->rev || !p->w)
		app_die(a, "out of memory");
	for (i = 0; i < n; i++) {
		for (j = 0, b = 0; b < bits; b++)
			j |= ((i >> b) & 1) << (bits - 1 - b);
		p->rev[i] = j;
	}
	for (i = 0; i < n / 2; i++) {
		p->w[i].re = cos(2 * M_PI * (double)i / (double)n);
		p->w[i].im = -sin(2 * M_PI * (double)i / (double)n);
	}
}

void fft_plan_free(struct fft_plan *p)
{
	free(p->rev);
	free(p->w);
}

void fft_stages(struct cplx *x, const struct fft_plan *p, int dir,
		int stages)
{
	long n = p->n, i, j, k, len, half, step;
	struct cplx t;

	if (stages <= 0)
		return;
	for (i = 0; i < n; i++) {
		j = p->rev[i];
		if (j > i) {
			t = x[i];
			x[i] = x[j];
			x[j] = t;
		}
	}
	for (len = 2; len <= n && stages > 0; len <<= 1, stages--) {
		half = len / 2;
		step = n / len;
		for (i = 0; i < n; i += len)
			for (k = 0; k < half; k++) {
				struct cplx w = p->w[k * step], *u = x + i + k,
					    *v = u + half;
				double wi = dir < 0 ? w.im : -w.im;
				double vr = v->re * w.re - v->im * wi;
				double vi = v->re * wi + v->im * w.re;

				v->re = u->re - vr;
				v->im = u->im - vi;
				u->re += vr;
				u->im += vi;
			}
	}
}
