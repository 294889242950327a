/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench.h - what the benchmarks share (tools/lib/bench.c): the monotonic
 * clock, the median of a sample, comma-separated option lists, and a
 * busy peer process.
 */
#ifndef ZCT_BENCH_H
#define ZCT_BENCH_H

/* CLOCK_MONOTONIC in nanoseconds, and in microseconds. */
double zct_now_ns(void);
double zct_now_us(void);
/* qsort comparison of doubles, ascending. */
int zct_cmp_double(const void *a, const void *b);
/* The median of v[0..n) (n > 0; the mean of the middle two for even n); sorts v. */
double zct_median(double *v, unsigned int n);
/* Bit i set for each names[i] that s mentions ("copy,remap"). */
int zct_parse_list(const char *s, const char *const *names, int n);
/*
 * A child process that spins (polling with a zero timeout) until killed,
 * and dies with its parent however the parent ends: a ping-pong's waiting
 * peer. Its pid, or -1. zct_spinner_stop() kills and reaps it.
 */
int zct_spinner_start(void);
void zct_spinner_stop(int pid);

#endif /* ZCT_BENCH_H */
