/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fft.h - the radix-2 complex FFT the application programs share (ft,
 * ovft): a plan per length (bit reversal and twiddles), the transform in
 * place, and the transform cut after its first stages, which ovft's
 * --scale uses to scale the computation.
 */
#ifndef ZCAPPS_FFT_H
#define ZCAPPS_FFT_H

#include "apps.h"

struct cplx {
	double re, im;
};

struct fft_plan {
	long n;
	int bits;		/* log2 n: the number of butterfly stages */
	long *rev;
	struct cplx *w;		/* exp(-2 pi i k / n), k < n/2 */
};

/* A plan for length n, a power of 2; out of memory: app_die. */
void fft_plan_make(struct app *a, struct fft_plan *p, long n);
void fft_plan_free(struct fft_plan *p);

/*
 * In place; dir -1 forward (exp(-i)), +1 inverse (exp(+i), no scaling).
 * fft_stages() runs the bit reversal and only the first @stages of the
 * p->bits butterfly stages (none at all when @stages is 0): each stage
 * doubles the sum of |x|^2, so the result has 2^stages times the input's.
 */
void fft_stages(struct cplx *x, const struct fft_plan *p, int dir,
		int stages);

static inline void fft1(struct cplx *x, const struct fft_plan *p, int dir)
{
	fft_stages(x, p, dir, p->bits);
}

#endif
