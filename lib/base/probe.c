// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * probe.c - the latency probes of probe.h: per-thread chains, per-process
 * sums, one line on stderr at exit. Compiled empty without ZCR_PROBES.
 */
#ifdef ZCR_PROBES
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "base/probe.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define stamp()	__rdtsc()
#else
static uint64_t stamp(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#endif

/* A chain longer than this (in stamps) was preempted: not counted. */
#define CHAIN_MAX	200000

static const char *const names[ZCR_PP_N] = {
	"sent->seen", "->progress", "->rx", "->open", "->match", "->landed",
	"->complete", "->waited", "->recv_in", "->recv_out", "->send_in",
	"->published",
};

static __thread uint64_t at[ZCR_PP_N], sent;
static uint64_t sum[ZCR_PP_N], chains, dropped, stamped;
static uint64_t t0_stamp, t0_ns;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint64_t __zcr_probe_stamp(void)
{
	return stamp();
}

void __zcr_probe_sent_at(uint64_t s)
{
	if (at[ZCR_PP_DETECT] && s && s <= at[ZCR_PP_DETECT])
		sent = s;
}

static void chain_end(void)
{
	uint64_t prev = at[ZCR_PP_DETECT];
	int i;

	for (i = 1; i < ZCR_PP_N; i++)
		if (at[i] && at[i] < prev)
			goto out;
		else if (at[i])
			prev = at[i];
	if (prev - at[ZCR_PP_DETECT] > CHAIN_MAX ||
	    (sent && at[ZCR_PP_DETECT] - sent > CHAIN_MAX)) {
		__atomic_add_fetch(&dropped, 1, __ATOMIC_RELAXED);
		goto out;
	}
	if (!__atomic_load_n(&t0_stamp, __ATOMIC_RELAXED)) {
		t0_ns = now_ns();
		__atomic_store_n(&t0_stamp, stamp(), __ATOMIC_RELAXED);
	}
	/* Step 0: from the sender's stamp in the cell, when there was one. */
	if (sent) {
		__atomic_add_fetch(&sum[0], at[ZCR_PP_DETECT] - sent,
				   __ATOMIC_RELAXED);
		__atomic_add_fetch(&stamped, 1, __ATOMIC_RELAXED);
	}
	prev = at[ZCR_PP_DETECT];
	for (i = 1; i < ZCR_PP_N; i++) {
		if (!at[i])
			continue;
		__atomic_add_fetch(&sum[i], at[i] - prev, __ATOMIC_RELAXED);
		prev = at[i];
	}
	__atomic_add_fetch(&chains, 1, __ATOMIC_RELAXED);
out:
	for (i = 0; i < ZCR_PP_N; i++)
		at[i] = 0;
	sent = 0;
}

void __zcr_probe_mark(enum zcr_probe_point p)
{
	int i;

	if (p == ZCR_PP_DETECT) {
		for (i = 0; i < ZCR_PP_N; i++)
			at[i] = 0;
		sent = 0;
	} else if (!at[ZCR_PP_DETECT] || at[p]) {
		return;		/* no chain, or this step seen already */
	}
	at[p] = stamp();
	if (p == ZCR_PP_PUBLISH)
		chain_end();
}

__attribute__((destructor)) static void probe_report(void)
{
	double per_ns;
	uint64_t n = chains;
	int i;

	if (!n || !t0_stamp)
		return;
	per_ns = (double)(now_ns() - t0_ns) / (double)(stamp() - t0_stamp);
	fprintf(stderr, "zcrecv probes: pid %d, %llu chains (%llu dropped), "
		"ns:", (int)getpid(), (unsigned long long)n,
		(unsigned long long)dropped);
	for (i = 0; i < ZCR_PP_N; i++)
		fprintf(stderr, " %s %.0f", names[i], (double)sum[i] /
			(double)(i || !stamped ? n : stamped) * per_ns);
	fprintf(stderr, "\n");
}
#else
/* ISO C wants something in a translation unit. */
typedef int zcr_probe_unused;
#endif
