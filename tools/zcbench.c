// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcbench - copy-vs-remap ping-pong over libzcrecv's TCP transport.
 *
 * Two processes (rank 0 drives, rank 1 answers) exchange messages of each
 * size from --min to --max (powers of two), for each remap mode (copy,
 * remap, auto: the context's policy) and each arrival (early: the receiver
 * waits until the message has been staged before it posts the receive;
 * posted: the receive is posted before the message is sent). Every
 * message carries its number and words drawn from it; both sides check
 * every byte of every message (fill(), verify()). Receive buffers come
 * from zcr_mem_alloc, two per side used in turn (a period-2 pattern for
 * the predictor; --buffers N for another count). Prints a table (half
 * round-trip latency, bandwidth, hit ratio, pages remapped per message,
 * and the median of per-trial ratios against the faster of copy and
 * remap), and optionally CSV and a PNG plot
 * (gnuplot). --nptcp runs NetPIPE's NPtcp over the same loopback as a
 * reference line.
 *
 *   zcbench                            both ranks on this machine (fork)
 *   zcbench --server HOST:PORT         rank 1, waits for a driver
 *   zcbench --connect HOST:PORT        rank 0, drives a remote server
 *   zcbench --plot-only CSV --png PNG [--nptcp-file FILE]
 *
 * Options: --min BYTES --max BYTES --modes copy,remap,auto
 * --arrival early,posted --reply own|echo (rank 1 answers from a buffer of
 * its own, as NetPIPE does, or with the ping's) --iters N (most timed
 * iterations per trial; fewer for big sizes) --trials N (trials per
 * point, 3) --point-time S (rounds of six more trials while a size's
 * took less than S seconds) --csv FILE|- (- prints it between
 * "zcbench-csv-begin" and "zcbench-csv-end" lines) --png FILE --nptcp
 * --emulated (marks figures as measured under emulation) --no-bind (the
 * two local ranks are bound to two processors unless this is given, as
 * mpirun binds NPopenmpi's) --rest US (rank 0 spins US microseconds
 * between writing a ping and sending it) --buffers N (receive buffers
 * used in turn, 1 to 8). ZCBENCH_FLIP=OFFSET (tests):
 * rank 0 damages one byte of every message it receives.
 * Exit status 1 if any iteration fails to verify.
 *
 * Early arrivals are staged whatever the mode: zcbench sets
 * ZCRECV_DEFER_MIN=0 unless it is set, since it measures the landing out
 * of staging (a message the copy policy defers lands as a posted one,
 * which --arrival posted measures).
 *
 * --transport tcp|shm: shm sets ZCRECV_SHM=1 for both ranks, so a peer on
 * this host moves to the shared-memory transport after the handshake
 * (Documentation/shm.md); the header line says which transport carried
 * the run. --npopenmpi runs NetPIPE's NPopenmpi (Open MPI, shared-memory
 * BTL with CMA single copy) before and after the run, and per size the
 * faster of the two is a second reference line; it also runs at each
 * size after each round of trials (every arrival and mode once), and the
 * vs_npo column is the median over the rounds of its latency over the
 * mode's, measured side by side. --npompi-file
 * FILE keeps its output; --npopenmpi-layer LIB runs it once more with
 * libzcrecv-mpi.so (LIB) preloaded, so its messages move over zcrecv.
 *
 * --transport verbs: both ranks talk over the RDMA verbs transport
 * ("verbs://", Documentation/verbs.md); --perftest runs perftest's
 * ib_send_lat and ib_write_bw over the same RDMA device in the same
 * invocation as reference lines, --ref CSV=TITLE adds a reference line
 * (bytes,MB/s) to the plot. The copied/msg column counts the bytes the
 * landing copied per message (0 when every full page was remapped).
 *
 * The reference programs run from zcbench/ref.c, the plot is drawn in
 * zcbench/plot.c; zcbench/zcbench.h is what the three share.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zcrecv.h"
#include "bench.h"
#include "base/config.h"
#include "zcbench/zcbench.h"

#define TAG_DATA	1
#define TAG_CTRL	1000
#define TAG_READY	1001
#define TAG_STATS	1002
#define WARMUP		2
#define MAX_SIZE	(1ULL << 40)	/* --max: at most 1 TiB */
#define ITERS_MAX	1000000		/* --iters */
/*
 * Each point is timed in --trials runs (TRIALS unless told) of iters
 * ping-pongs, each after WARMUP untimed ones; the arrivals and modes of
 * one size take turns run by run. The latency is the fastest run's mean, as NetPIPE
 * reports its points (the reference lines), so the two are read the same
 * way. The mean over every timed ping-pong is kept beside it (mean_us).
 * More trials make the fastest run's mean steadier where the machine's
 * load changes from one half second to the next.
 */
#define TRIALS		3
#define TRIALS_MAX	1000
/* auto is "within 5%" of the faster mode up to this vs_fast */
#define AUTO_WITHIN	1.05
#define WORD_MAGIC	0x7a63626e00000000ULL	/* "zcbn" */

struct ctrl {
	uint32_t cmd;		/* 1 run, 2 end */
	uint32_t policy;
	uint64_t size;
	uint32_t iters;
	uint32_t early;
	uint32_t echo;		/* rank 1 answers with the ping itself */
	uint32_t payload;	/* PAYLOAD_VERSION: payload and protocol */
	uint64_t base;		/* the trial's first message number */
	uint32_t buffers;	/* receive buffers a side uses in turn */
	uint32_t pad;
};

/*
 * 0 (the first zcbench: 24- and 32-byte control messages): xorshift words
 * and a checksum; 1: fill() now; 2: rank 1 sends a trial's statistics
 * when rank 0 asks (TAG_STATS), once rank 0 has read its own, so that the
 * answer never arrives among the trial's messages and counts as one of
 * them. Earlier zcbench refuses the 48 bytes (40 before --buffers, and
 * version 1), and is refused.
 */
#define PAYLOAD_VERSION	2

/*
 * Message numbers: ping k of a trial is 2 * (base + k), its answer the
 * next odd number (an echoed answer is the ping itself); base grows by
 * each trial's iterations, so no two messages of a run carry the same
 * payload: rank 0 receiving its own ping, or a page left from another
 * trial, fails the check.
 */
#define PING(base, k)	(2 * ((base) + (k)))
#define PONG(base, k)	(PING(base, k) + 1)

/*
 * How rank 1 answers (--reply): from a buffer of its own, filled with the
 * answer's payload after it sent the previous one, as NetPIPE's receiver
 * sends from its send buffer (own, the default); or with the ping's own
 * buffer (echo): each landing then writes lines the peer has just read,
 * dearer on some machines (Documentation/benchmarks.md).
 */
static bool echo_replies;

/*
 * --rest US: rank 0 waits (spinning, touching no memory) this long after
 * it wrote each ping before it sends it, outside the timed part: how
 * long the buffers rest between messages, which at 16 MiB decides
 * whether the copies find them in the host's cache.
 */
static unsigned int rest_us;

/*
 * --buffers N: receive buffers each side uses in turn (a period-N pattern
 * for the predictor). An early arrival lands in a staging slot holding
 * the pages the last exchange took from a user buffer, so it writes one
 * page set more than the user's own: with N buffers, the pages touched
 * N + 1 receives ago, where a posted receive writes those of N ago.
 * NetPIPE receives into one buffer.
 */
#define BUFFERS_MAX	8
static unsigned int nbuffers = 2;

struct peer_stats {
	uint64_t early, hits, misses, pages, copied, bad;
};

struct point {
	const char *mode;
	const char *arrival;
	uint64_t size;
	unsigned int iters;
	double lat_us, mbps, hit_ratio, pages_per_msg, copied_per_msg;
	double mean_us;
	double vs_faster;	/* 0: not measured (copy or remap left out) */
	double vs_npo;		/* 0: not measured (no --npopenmpi) */
	double npo_us;		/* NPopenmpi beside the trials, the best;
				 * 0: not measured */
	double early_ratio;	/* of the timed messages, arrived early */
	unsigned int buffers;	/* --buffers */
	uint64_t bad;
	int order;	/* of the CSV: mode, then arrival */
};

/* Reference lines of the plot: CSV files of bytes,MB/s. */
struct ref_line refs[8];
int nrefs;
const char *transport = "tcp";

static struct point points[512];
static int npoints;

void die(const char *what, int err)
{
	fprintf(stderr, "zcbench: %s: %s\n", what, strerror(-err));
	exit(2);
}

#define CHECK(call)							\
	do {								\
		int ck_ret = (call);					\
		if (ck_ret < 0)						\
			die(#call, ck_ret);				\
	} while (0)

/*
 * Both ranks on this machine: each bound to a processor of its own, as
 * mpirun binds each of NPopenmpi's two ranks (to processors 0 and 1
 * here). Left to the scheduler, the two spinning ranks of a ping-pong
 * often share one processor for whole trials while the other idles (the
 * two are always cache-hot, so load balancing leaves them): 64 KiB one
 * way took 45-50 us instead of 8-10 then, in one trial of two.
 */
static cpu_set_t cpus_all;	/* what we may run on, as started */
static int bind_to[2] = { -1, -1 };
static bool bound;

/* Is processor c a hardware thread of the same core as processor of? */
static bool sibling(int of, int c)
{
	char path[96], list[256], *p;
	bool in = false;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/"
		 "topology/thread_siblings_list", of);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(list, sizeof(list), f))
		list[0] = 0;
	fclose(f);
	/* "0-1,4" and the like */
	for (p = list; *p && !in;) {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;

		if (end == p)
			break;
		if (*end == '-')
			hi = strtol(end + 1, &end, 10);
		in = c >= lo && c <= hi;
		p = *end == ',' ? end + 1 : end;
	}
	return in;
}

/*
 * The first processor we may run on and the next one on another core (or
 * failing that, the next one), as mpirun binds one rank per core; 0, or
 * -ENODEV with fewer than two processors.
 */
static int bind_pick(void)
{
	int c;

	if (sched_getaffinity(0, sizeof(cpus_all), &cpus_all))
		return -errno;
	for (c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &cpus_all))
			continue;
		if (bind_to[0] < 0)
			bind_to[0] = c;
		else if (bind_to[1] < 0 || (sibling(bind_to[0], bind_to[1]) &&
					    !sibling(bind_to[0], c)))
			bind_to[1] = c;
	}
	return bind_to[1] >= 0 ? 0 : -ENODEV;
}

/* This thread (and the threads it starts later) to rank's processor. */
static void bind_rank(int rank)
{
	cpu_set_t one;

	if (bind_to[rank] < 0)
		return;
	CPU_ZERO(&one);
	CPU_SET(bind_to[rank], &one);
	if (sched_setaffinity(0, sizeof(one), &one))
		die("sched_setaffinity", -errno);
	bound = true;
}

/*
 * Rank 0's thread free to run anywhere again (a reference program it
 * starts must see every processor, as it would from a shell), or bound
 * again afterwards.
 */
void unbind(void)
{
	if (bound && sched_setaffinity(0, sizeof(cpus_all), &cpus_all))
		die("sched_setaffinity", -errno);
}

void rebind(void)
{
	if (bound)
		bind_rank(0);
}

/*
 * Payload of message number m (PING()): word 0 its tag, WORD_MAGIC and
 * m's low 32 bits; word i (i >= 1) seed ^ (i * WORD_STEP), the seed drawn
 * from m and the size; the bytes after the last whole word, the first
 * bytes of the next word's value as stored. verify() compares every byte
 * with what it must be, so a page of another message, a page out of
 * place (another i) or a torn copy fails it, as any changed bit does.
 * Both run at memory speed: at 16 MiB the checksum of xorshift words
 * they replace took 12-13 ms a round on each side, time in which the
 * host's other work evicted the buffers from its shared cache, so every
 * copy of the next message ran cold at 5-7 GB/s where NetPIPE's
 * untouched buffers copy hot at 10-11 (Documentation/benchmarks.md,
 * "The benchmark's own work between messages").
 */
#define WORD_STEP	0x9e3779b97f4a7c15ULL

/* ZCBENCH_FLIP: the byte of each received message rank 0 damages, or -1 */
static long long flip_at = -1;

static uint64_t word_seed(size_t len, uint64_t m)
{
	uint64_t x = m * 0x2545f4914f6cdd1dULL + len + 1;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	return x ^ (x >> 29);
}

static void fill(void *buf, size_t len, uint64_t m)
{
	uint64_t *w = buf, seed = word_seed(len, m), last;
	size_t i, n = len / 8;

	for (i = 1; i < n; i++)
		w[i] = seed ^ (i * WORD_STEP);
	w[0] = WORD_MAGIC | (m & 0xffffffff);
	last = seed ^ (n * WORD_STEP);
	memcpy(w + n, &last, len % 8);
}

static int verify(const void *buf, size_t len, uint64_t m)
{
	const uint64_t *w = buf;
	uint64_t seed = word_seed(len, m), diff = 0, last;
	size_t i, n = len / 8;

	for (i = 1; i < n; i++)
		diff |= w[i] ^ seed ^ (i * WORD_STEP);
	last = seed ^ (n * WORD_STEP);
	return w[0] == (WORD_MAGIC | (m & 0xffffffff)) && !diff &&
	       !memcmp(w + n, &last, len % 8);
}

static void wait_early(struct zcr_ctx *ctx, uint64_t before)
{
	struct zcr_stats st;

	for (;;) {
		CHECK(zcr_ctx_stats(ctx, &st));
		if (st.early > before)
			return;
		CHECK(zcr_progress(ctx, 10));
	}
}

static uint64_t early_count(struct zcr_ctx *ctx)
{
	struct zcr_stats st;

	CHECK(zcr_ctx_stats(ctx, &st));
	return st.early;
}

/*
 * What carries ep: the shm negotiation ends shortly after the handshake
 * (zcr_ep_error()'s text then says "shm" or "tcp (shm: why not)").
 */
static const char *transport_of(struct zcr_ctx *ctx, struct zcr_ep *ep)
{
	const char *msg = "";
	struct zcr_env_val want;
	int i;

	__zcr_env_get(ZCR_ENV_SHM, true, &want);
	for (i = 0; i < 200; i++) {
		zcr_ep_error(ep, &msg);
		if (*msg || !want.u)
			break;
		CHECK(zcr_progress(ctx, 10));
	}
	return *msg ? msg : "tcp";
}

/* Rank 1: answer each ping (--reply), verify it, report statistics per
 * point. */
static void print_landing(struct zcr_ctx *ctx, int rank);

static int run_peer(struct zcr_ctx *ctx, struct zcr_ep *ep)
{
	struct zcr_stats s0, s1;
	struct peer_stats ps;
	struct zcr_req *r;
	struct ctrl c, q;
	void *b[BUFFERS_MAX], *reply = NULL;
	unsigned int it, total, i;
	uint64_t e;

	for (;;) {
		struct zcr_status cs;

		CHECK(zcr_recv(ctx, &c, sizeof(c), 0, TAG_CTRL, &cs));
		if (cs.len != sizeof(c) ||
		    (c.cmd == 1 && c.payload != PAYLOAD_VERSION))
			die("control message of another zcbench version",
			    -EPROTO);
		/* A driver elsewhere (--server): what its options allow. */
		if (c.cmd == 1 && (!c.buffers || c.buffers > BUFFERS_MAX))
			die("control message: bad buffer count", -EPROTO);
		if (c.cmd == 1 && (c.size < 64 || c.size > MAX_SIZE ||
				   !c.iters || c.iters > ITERS_MAX))
			die("control message: bad size or iteration count",
			    -EPROTO);
		if (c.cmd != 1) {
			/* Rank 0 waits for us before it prints its own. */
			print_landing(ctx, 1);
			return 0;
		}
		CHECK(zcr_ctx_set_policy(ctx, (int)c.policy));
		for (i = 0; i < c.buffers; i++) {
			CHECK(zcr_mem_alloc(ctx, c.size, &b[i]));
			memset(b[i], 0, c.size);
		}
		if (!c.echo) {
			CHECK(zcr_mem_alloc(ctx, c.size, &reply));
			fill(reply, c.size, PONG(c.base, 0));
		}
		memset(&ps, 0, sizeof(ps));
		total = c.iters + WARMUP;
		r = NULL;
		if (!c.early)
			CHECK(zcr_irecv(ctx, b[0], c.size, 0, TAG_DATA, &r));
		/*
		 * Count before sending: a send may complete only once the peer
		 * took it (shm), by which time its next ping may be staged.
		 */
		e = early_count(ctx);
		CHECK(zcr_send(ep, &c, sizeof(c), TAG_READY));
		CHECK(zcr_ctx_stats(ctx, &s0));
		for (it = 0; it < total; it++) {
			void *cur = b[it % c.buffers];

			if (c.early) {
				wait_early(ctx, e);
				CHECK(zcr_recv(ctx, cur, c.size, 0, TAG_DATA,
					       NULL));
			} else {
				CHECK(zcr_wait(r, NULL));
				/* One buffer: posted again once checked. */
				if (it + 1 < total && c.buffers > 1)
					CHECK(zcr_irecv(ctx,
							b[(it + 1) % c.buffers],
							c.size, 0, TAG_DATA,
							&r));
			}
			/* Before the pong that lets the first timed ping go. */
			if (it + 1 == WARMUP)
				CHECK(zcr_ctx_stats(ctx, &s0));
			/*
			 * Every ping is in (delivery counts hits and pages);
			 * read now, before the last pong: sending it may take
			 * until the peer pulled it, and the peer's request for
			 * these figures may arrive meanwhile.
			 */
			if (it + 1 == total)
				CHECK(zcr_ctx_stats(ctx, &s1));
			e = early_count(ctx);
			CHECK(zcr_send(ep, c.echo ? cur : reply, c.size,
				       TAG_DATA));
			if (!verify(cur, c.size, PING(c.base, it)))
				ps.bad++;
			if (!c.early && c.buffers == 1 && it + 1 < total)
				CHECK(zcr_irecv(ctx, cur, c.size, 0, TAG_DATA,
						&r));
			if (!c.echo && it + 1 < total)
				fill(reply, c.size, PONG(c.base, it + 1));
		}
		ps.early = s1.early - s0.early;
		ps.hits = s1.hits - s0.hits;
		ps.misses = s1.misses - s0.misses;
		ps.pages = s1.pages_remapped - s0.pages_remapped;
		ps.copied = s1.bytes_copied - s0.bytes_copied;
		CHECK(zcr_recv(ctx, &q, sizeof(q), 0, TAG_STATS, &cs));
		if (cs.len != sizeof(q))
			die("control message of another zcbench version",
			    -EPROTO);
		CHECK(zcr_send(ep, &ps, sizeof(ps), TAG_STATS));
		for (i = 0; i < c.buffers; i++)
			zcr_mem_free(ctx, b[i]);
		if (reply)
			zcr_mem_free(ctx, reply);
		reply = NULL;
	}
}

/* A whole number from 1 to max, else -EINVAL. */
static int parse_count(const char *s, unsigned int max, unsigned int *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < 1 || v > max)
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
}

/* An option that must be such a count: -EINVAL, said, if it is not. */
static int count_option(const char *name, const char *unit, const char *s,
			unsigned int max, unsigned int *out)
{
	if (!parse_count(s, max, out))
		return 0;
	fprintf(stderr, "zcbench: --%s: %s1 to %u\n", name, unit, max);
	return -EINVAL;
}

static unsigned int iters_for(uint64_t size, unsigned int max_iters)
{
	uint64_t n = (64ULL << 20) / size;

	if (n > max_iters)
		n = max_iters;
	return n < 3 ? 3 : (unsigned int)n;
}

/*
 * Which of nrun modes runs j-th in trial t. Three modes take the six
 * orders in a sequence in which, read round and round, each mode comes
 * right after each other mode three times and never after itself; so
 * with a number of trials that is a multiple of six, each mode follows
 * each other one equally often. Two modes alternate.
 */
static unsigned int mode_turn(unsigned int t, unsigned int j,
			      unsigned int nrun)
{
	static const unsigned char six[6][3] = {
		{ 0, 1, 2 }, { 0, 2, 1 }, { 2, 1, 0 },
		{ 1, 0, 2 }, { 1, 2, 0 }, { 2, 0, 1 },
	};

	if (nrun == 3)
		return six[t % 6][j];
	return (t + j) % nrun;
}

/* What the trials of one point add up to. */
struct acc {
	double best, sum;
	double *tmean;		/* each trial's mean round trip */
	unsigned int iters, trials;
	uint64_t early, hits, pages, copied, bad;
};

/*
 * Rank 0: one trial of a point (mode, arrival, size): per timed
 * ping-pongs after WARMUP untimed ones, added to a.
 */
static void run_trial(struct zcr_ctx *ctx, struct zcr_ep *ep, int policy,
		      bool early, uint64_t size, unsigned int per,
		      struct acc *a)
{
	struct zcr_stats s0, s1;
	struct peer_stats ps;
	static uint64_t next_base;	/* message numbers: PING() */
	uint64_t base = next_base;
	struct ctrl c = { .cmd = 1, .policy = (uint32_t)policy, .size = size,
			  .iters = per, .early = early,
			  .echo = echo_replies, .payload = PAYLOAD_VERSION,
			  .base = base, .buffers = nbuffers };
	struct zcr_req *r;
	void *sb, *rb[BUFFERS_MAX];
	unsigned int it, i, total = per + WARMUP;
	double t = 0, t0;

	next_base += total;
	CHECK(zcr_ctx_set_policy(ctx, policy));
	sb = malloc(size);
	if (!sb)
		die("malloc", -ENOMEM);
	for (i = 0; i < nbuffers; i++) {
		CHECK(zcr_mem_alloc(ctx, size, &rb[i]));
		memset(rb[i], 0, size);
	}
	CHECK(zcr_send(ep, &c, sizeof(c), TAG_CTRL));
	CHECK(zcr_recv(ctx, &c, sizeof(c), 1, TAG_READY, NULL));
	CHECK(zcr_ctx_stats(ctx, &s0));
	for (it = 0; it < total; it++) {
		void *cur = rb[it % nbuffers];
		uint64_t e = 0;

		if (it == WARMUP)
			CHECK(zcr_ctx_stats(ctx, &s0));
		fill(sb, size, PING(base, it));
		if (rest_us) {
			double r0 = zct_now_us();

			while (zct_now_us() - r0 < rest_us)
				;
		}
		if (early)
			e = early_count(ctx);
		else
			CHECK(zcr_irecv(ctx, cur, size, 1, TAG_DATA, &r));
		t0 = zct_now_us();
		CHECK(zcr_send(ep, sb, size, TAG_DATA));
		if (early) {
			wait_early(ctx, e);
			CHECK(zcr_recv(ctx, cur, size, 1, TAG_DATA, NULL));
		} else {
			CHECK(zcr_wait(r, NULL));
		}
		t0 = zct_now_us() - t0;
		if (it >= WARMUP)
			t += t0;
		if (flip_at >= 0)
			((unsigned char *)cur)[(uint64_t)flip_at % size] ^= 0x10;
		if (!verify(cur, size, echo_replies ? PING(base, it) :
			    PONG(base, it)))
			a->bad++;
	}
	CHECK(zcr_ctx_stats(ctx, &s1));
	/* Asked for only now: an answer staged with our last message would
	 * count as an early arrival of the trial. */
	CHECK(zcr_send(ep, &c, sizeof(c), TAG_STATS));
	CHECK(zcr_recv(ctx, &ps, sizeof(ps), 1, TAG_STATS, NULL));
	if (!a->best || t / per < a->best)
		a->best = t / per;
	a->tmean[a->trials++] = t / per;
	a->sum += t;
	a->iters += per;
	a->early += s1.early - s0.early + ps.early;
	a->hits += s1.hits - s0.hits + ps.hits;
	a->pages += s1.pages_remapped - s0.pages_remapped + ps.pages;
	a->copied += s1.bytes_copied - s0.bytes_copied + ps.copied;
	a->bad += ps.bad;
	free(sb);
	for (i = 0; i < nbuffers; i++)
		zcr_mem_free(ctx, rb[i]);
}

/*
 * Each mode's trials against those of the faster forced mode (copy or
 * remap, by the median of their per-trial ratios): the median of the
 * per-trial ratios, into
 * vs[m]. Trial t of every mode ran back to back, so a change of the
 * machine's load that spans it falls on both sides of its ratio; the
 * fastest trials of two modes, by contrast, may come from different
 * moments. vs[m] stays 0 if copy or remap was left out.
 */
static void vs_faster(const struct acc *acc, const int *order, int modes,
		      double *vs)
{
	unsigned int n = acc[0].trials, t;
	double *v;
	int f, m;

	memset(vs, 0, 3 * sizeof(*vs));
	if (!(modes & (1 << order[0])) || !(modes & (1 << order[1])))
		return;
	v = malloc(n * sizeof(*v));
	if (!v)
		die("malloc", -ENOMEM);
	for (t = 0; t < n; t++)
		v[t] = acc[0].tmean[t] / acc[1].tmean[t];
	f = zct_median(v, n) <= 1 ? 0 : 1;
	for (m = 0; m < 3; m++) {
		if (!(modes & (1 << order[m])))
			continue;
		for (t = 0; t < n; t++)
			v[t] = acc[m].tmean[t] / acc[f].tmean[t];
		vs[m] = zct_median(v, n);
	}
	free(v);
}

/* The point that trials added up to in a. */
static void end_point(struct point *pt, int policy, bool early,
		      uint64_t size, const struct acc *a)
{
	pt->mode = zcr_policy_name(policy);
	pt->arrival = early ? "early" : "posted";
	pt->size = size;
	pt->iters = a->iters;
	pt->lat_us = a->best / 2;
	pt->mean_us = a->sum / a->iters / 2;
	pt->mbps = (double)size / pt->lat_us;
	pt->hit_ratio = early && a->early ? (double)a->hits / a->early : 0;
	pt->pages_per_msg = (double)a->pages / (2.0 * a->iters);
	pt->copied_per_msg = (double)a->copied / (2.0 * a->iters);
	pt->early_ratio = (double)a->early / (2.0 * a->iters);
	pt->buffers = nbuffers;
	pt->bad = a->bad;
}

static void print_row(FILE *f, const struct point *p, bool csv)
{
	if (csv)
		fprintf(f, "%s,%s,%llu,%u,%.3f,%.1f,%.3f,%.1f,%s,%.0f,%.3f,"
			"%.3f,%.3f,%.3f,%u,%.3f\n", p->mode, p->arrival,
			(unsigned long long)p->size, p->iters, p->lat_us,
			p->mbps, p->hit_ratio, p->pages_per_msg,
			p->bad ? "FAIL" : "ok", p->copied_per_msg, p->mean_us,
			p->vs_faster, p->vs_npo, p->npo_us, p->buffers,
			p->early_ratio);
	else
		fprintf(f, "%-6s %-7s %9llu %6u %11.1f %10.1f %6.0f%% %10.1f "
			"%10.0f %7.2f %7.2f  %s\n", p->mode, p->arrival,
			(unsigned long long)p->size, p->iters, p->lat_us,
			p->mbps, p->hit_ratio * 100, p->pages_per_msg,
			p->copied_per_msg, p->vs_faster, p->vs_npo,
			p->bad ? "FAIL" : "ok");
}

static const char csv_head[] =
	"mode,arrival,size,iters,latency_us,bandwidth_MBps,hit_ratio,"
	"pages_remapped_per_msg,verified,bytes_copied_per_msg,mean_us,"
	"vs_faster,vs_npopenmpi,npopenmpi_us,buffers,early_ratio\n";

static int point_cmp(const void *x, const void *y)
{
	const struct point *p = x, *q = y;

	if (p->order != q->order)
		return p->order < q->order ? -1 : 1;
	return p->size < q->size ? -1 : p->size > q->size;
}

/* Grouped by mode and arrival (each a line of the plot), by size within. */
static void write_csv(FILE *f)
{
	int i;

	qsort(points, npoints, sizeof(points[0]), point_cmp);
	fputs(csv_head, f);
	for (i = 0; i < npoints; i++)
		print_row(f, &points[i], true);
}

/*
 * Per arrival, the check the table is for: at how many sizes auto came
 * within 5% of the faster of copy and remap (vs_fast, the median of
 * paired trials), and where it did not. Only with all three modes.
 */
static void print_auto_check(void)
{
	static const char *const arr[] = { "early", "posted" };
	unsigned int a;
	int i;

	for (a = 0; a < 2; a++) {
		char out[512];
		size_t used = 0;
		int n = 0, in = 0;

		out[0] = 0;
		for (i = 0; i < npoints; i++) {
			const struct point *p = &points[i];

			if (strcmp(p->mode, "auto") || strcmp(p->arrival,
							     arr[a]) ||
			    p->vs_faster <= 0)
				continue;
			n++;
			if (p->vs_faster <= AUTO_WITHIN) {
				in++;
				continue;
			}
			if (used < sizeof(out) - 40)
				used += (size_t)snprintf(out + used,
							 sizeof(out) - used,
							 "%s%llu: %.3f",
							 used ? ", " : "",
							 (unsigned long long)
							 p->size,
							 p->vs_faster);
		}
		if (!n)
			continue;
		printf("zcbench: %s arrivals: auto within %.0f%% of the faster "
		       "of copy and remap at %d of %d sizes%s%s%s\n", arr[a],
		       (AUTO_WITHIN - 1) * 100, in, n, used ? " (not at " : "",
		       out, used ? ")" : "");
	}
}

/*
 * Posted receives are posted before the peer sends, except with one
 * buffer: posted again only once its message was checked, a receive may
 * come after the next message (then staged, and counted here).
 */
static void print_posted_early(void)
{
	double n = 0;
	int i, k = 0;

	for (i = 0; i < npoints; i++)
		if (!strcmp(points[i].arrival, "posted") &&
		    points[i].early_ratio > 0) {
			n += points[i].early_ratio * 2 * points[i].iters;
			k++;
		}
	if (k)
		printf("zcbench: posted arrivals: %.0f timed message(s) at %d "
		       "point(s) arrived before their receive was posted "
		       "(CSV early_ratio)\n", n, k);
}

/* What the landing policy of rank 0 measured, per size class. */
static void print_landing(struct zcr_ctx *ctx, int rank)
{
	struct zcr_landing_class lc[64];
	int i, n = zcr_ctx_landing_stats(ctx, lc, sizeof(lc[0]), 64);

	if (n <= 0)
		return;
	printf("landing costs measured by rank %d (per size class, all modes "
	       "of this run; timed: landings timed, the prior counted as "
	       "one):\n%-10s %9s %11s %9s %11s %9s  %s\n", rank,
	       "backend", "size>=", "copy_us", "timed", "remap_us", "timed",
	       "auto picks");
	for (i = 0; i < n; i++)
		printf("%-10s %9llu %11.1f %9llu %11.1f %9llu  %s\n",
		       lc[i].backend, (unsigned long long)lc[i].size_min,
		       lc[i].copy_ns / 1e3,
		       (unsigned long long)lc[i].copy_samples,
		       lc[i].remap_ns / 1e3,
		       (unsigned long long)lc[i].remap_samples,
		       zcr_policy_name(lc[i].choice));
	fflush(stdout);
}

/*
 * Each mode against NPopenmpi run beside its trials: the median over the
 * trials of NPopenmpi's latency over the mode's (above 1: zcbench
 * faster), into vs[m]; 0 where NPopenmpi never ran.
 */
static void vs_npompi(const struct acc *acc, const double *npo,
		      unsigned int trials, int modes, const int *order,
		      double *vs)
{
	double *v = malloc(trials * sizeof(*v));
	unsigned int t, k;
	int m;

	if (!v)
		die("malloc", -ENOMEM);
	for (m = 0; m < 3; m++) {
		vs[m] = 0;
		if (!(modes & (1 << order[m])))
			continue;
		for (t = k = 0; t < acc[m].trials && t < trials; t++)
			if (npo[t] > 0)
				v[k++] = npo[t] / (acc[m].tmean[t] / 2);
		if (k)
			vs[m] = zct_median(v, k);
	}
	free(v);
}

/* What every size of a run does: main()'s options. */
struct sweep {
	int modes, arrivals;		/* --modes, --arrival: bit masks */
	unsigned int max_iters, trials, point_s;
	bool npompi;			/* NPopenmpi beside each round */
};

/*
 * Per size, the arrivals and the modes take turns trial by trial
 * (each first, second... in turn), so that what the machine does
 * meanwhile (other load, frequency, the other rank's state) falls on
 * all of them alike: their ratios are what the table is for. Three
 * modes go through all six orders (mode_turn()), so that each
 * follows each other one equally often: what a trial leaves behind
 * (zone slots, size-class samples, a flushed TLB) falls on the next
 * mode, and with plain rotation auto would follow remap in two
 * trials of three. With
 * --npopenmpi, NPopenmpi runs at the size after each trial, one
 * reference measured beside both arrivals.
 *
 * Rank 0: every trial of one size, its rows printed; how many failed.
 */
static uint64_t run_size(struct zcr_ctx *ctx, struct zcr_ep *ep,
			 uint64_t size, const struct sweep *sw)
{
	static const int order[] = { ZCRECV_POLICY_COPY,
				     ZCRECV_POLICY_REMAP,
				     ZCRECV_POLICY_AUTO };
	unsigned int per = iters_for(size, sw->max_iters), t;
	unsigned int nrun = 0, narr = 0, k, j;
	int run[3], arr[2], m, a;
	struct acc acc[2][3];
	double vs[3], vn[3], *npo, npo_best = 0;
	/* --point-time: whole rounds of six orders, up to the most */
	unsigned int ntr = sw->trials;
	unsigned int cap = sw->point_s ? TRIALS_MAX : sw->trials;
	double t0 = zct_now_us();
	uint64_t bad = 0;

	npo = calloc(cap, sizeof(*npo));
	if (!npo)
		die("calloc", -ENOMEM);
	memset(acc, 0, sizeof(acc));
	for (m = 0; m < 3; m++)
		if (sw->modes & (1 << order[m]))
			run[nrun++] = m;
	for (a = 0; a < 2; a++)
		if (sw->arrivals & (1 << a))
			arr[narr++] = a;
	for (a = 0; a < 2; a++)
		for (m = 0; m < 3; m++) {
			acc[a][m].tmean = calloc(cap,
						 sizeof(double));
			if (!acc[a][m].tmean)
				die("calloc", -ENOMEM);
		}
	for (t = 0; t < ntr; t++) {
		for (k = 0; k < narr; k++) {
			a = arr[(t + k) % narr];
			for (j = 0; j < nrun; j++) {
				m = run[mode_turn(t, j, nrun)];
				run_trial(ctx, ep, order[m], a == 0,
					  size, per, &acc[a][m]);
			}
		}
		if (sw->npompi)
			npo[t] = npompi_at(size);
		if (npo[t] > 0 && (!npo_best || npo[t] < npo_best))
			npo_best = npo[t];
		if (t + 1 == ntr && sw->point_s && ntr + 6 <= cap &&
		    zct_now_us() - t0 < sw->point_s * 1e6)
			ntr += 6;
	}
	for (k = 0; k < narr; k++) {
		a = arr[k];
		vs_faster(acc[a], order, sw->modes, vs);
		vs_npompi(acc[a], npo, ntr, sw->modes, order, vn);
		for (m = 0; m < 3; m++) {
			struct point *pt = &points[npoints];

			if (!(sw->modes & (1 << order[m])))
				continue;
			end_point(pt, order[m], a == 0, size,
				  &acc[a][m]);
			pt->vs_faster = vs[m];
			pt->vs_npo = vn[m];
			pt->npo_us = npo_best;
			pt->order = m * 2 + a;
			npoints++;
			print_row(stdout, pt, false);
			bad += pt->bad;
		}
	}
	free(npo);
	for (a = 0; a < 2; a++)
		for (m = 0; m < 3; m++)
			free(acc[a][m].tmean);
	fflush(stdout);
	return bad;
}

/* Rank 1 for a driver elsewhere (--server HOST:PORT). */
static int serve(const char *server)
{
	struct zcr_ctx_attr attr = { 0 };
	struct zcr_ctx *ctx;
	struct zcr_ep *ep;
	char addr[64];
	int o;

	attr.rank = 1;
	CHECK(zcr_ctx_create(&attr, &ctx));
	snprintf(addr, sizeof(addr), "%s%s",
		 strcmp(transport, "verbs") ? "" : "verbs://", server);
	CHECK(zcr_ctx_listen(ctx, addr));
	CHECK(zcr_ep_accept(ctx, -1, &ep));
	o = run_peer(ctx, ep);
	zcr_ctx_destroy(ctx);
	return o;
}

/*
 * Rank 0 with its endpoint to rank 1: a child of ours (*child) unless
 * conn names a server elsewhere; bind: each rank on its own processor.
 */
static void open_ranks(const char *conn, bool bind, struct zcr_ctx **ctxp,
		       struct zcr_ep **epp, pid_t *childp)
{
	struct zcr_ctx_attr attr = { 0 };
	char listen_at[64], addr[64];
	struct zcr_ctx *ctx;
	struct zcr_ep *ep;
	pid_t child = -1;
	int o;

	/* verbs: the transport's own scheme in front of HOST:PORT. */
	snprintf(listen_at, sizeof(listen_at), "%s127.0.0.1:0",
		 strcmp(transport, "verbs") ? "" : "verbs://");
	if (!conn && !strcmp(transport, "verbs")) {
		/*
		 * Both ranks here over verbs: the child (rank 1) opens the
		 * device itself and listens, rank 0 connects. (A device opened
		 * before fork() is shared by both processes.)
		 */
		int pfd[2], port = 0;

		if (pipe(pfd))
			die("pipe", -errno);
		fflush(stdout);
		child = fork();
		if (child == 0) {
			close(pfd[0]);
			if (bind)
				bind_rank(1);
			attr.rank = 1;
			CHECK(zcr_ctx_create(&attr, &ctx));
			port = zcr_ctx_listen(ctx, listen_at);
			CHECK(port);
			if (write(pfd[1], &port, sizeof(port)) != sizeof(port))
				_exit(2);
			close(pfd[1]);
			CHECK(zcr_ep_accept(ctx, 30000, &ep));
			o = run_peer(ctx, ep);
			zcr_ctx_destroy(ctx);
			_exit(o);
		}
		close(pfd[1]);
		if (child < 0 || read(pfd[0], &port, sizeof(port)) !=
		    sizeof(port))
			die("rank 1 did not start", -EIO);
		close(pfd[0]);
		if (bind)
			bind_rank(0);
		CHECK(zcr_ctx_create(&attr, &ctx));
		snprintf(addr, sizeof(addr), "verbs://127.0.0.1:%d", port);
		CHECK(zcr_ep_connect(ctx, addr, &ep));
	} else if (!conn) {
		/* Both ranks here: rank 0 listens, a child is rank 1. */
		if (bind)
			bind_rank(0);
		CHECK(zcr_ctx_create(&attr, &ctx));
		o = zcr_ctx_listen(ctx, listen_at);
		CHECK(o);
		snprintf(addr, sizeof(addr), "%.*s%d",
			 (int)(strlen(listen_at) - 1), listen_at, o);
		fflush(stdout);
		child = fork();
		if (child == 0) {
			struct zcr_ctx *pc;
			struct zcr_ep *pep;

			zcr_ctx_destroy(ctx);
			if (bind)
				bind_rank(1);
			attr.rank = 1;
			CHECK(zcr_ctx_create(&attr, &pc));
			CHECK(zcr_ep_connect(pc, addr, &pep));
			o = run_peer(pc, pep);
			zcr_ctx_destroy(pc);
			_exit(o);
		}
		CHECK(zcr_ep_accept(ctx, 30000, &ep));
	} else {
		CHECK(zcr_ctx_create(&attr, &ctx));
		snprintf(addr, sizeof(addr), "%s%s",
			 strcmp(transport, "verbs") ? "" : "verbs://", conn);
		CHECK(zcr_ep_connect(ctx, addr, &ep));
	}
	*ctxp = ctx;
	*epp = ep;
	*childp = child;
}

/* The run's header lines and the table's column names. */
static void print_header(struct zcr_ctx *ctx, struct zcr_ep *ep, bool bind,
			 const char *conn, int emulated)
{
	struct zcr_stats st;

	CHECK(zcr_ctx_stats(ctx, &st));
	printf("zcbench: libzcrecv %s, backend %s, predictor %s, calibration "
	       "at 64 KiB: copy %.0f ns/page, remap %.0f ns/page; auto remaps "
	       "from %llu pages (prior)%s\n", zcr_version(), st.backend_name, st.predictor,
	       st.copy_ns_per_page, st.remap_ns_per_page,
	       (unsigned long long)st.min_remap_pages,
	       emulated ? " (EMULATED timings: compare ratios only)" : "");
	printf("zcbench: transport %s\n", transport_of(ctx, ep));
	if (nbuffers != 2)
		printf("zcbench: %u receive buffer%s a rank, used in turn "
		       "(--buffers)\n", nbuffers, nbuffers > 1 ? "s" : "");
	if (rest_us)
		printf("zcbench: rank 0 rests %u us between writing and "
		       "sending each ping (--rest)\n", rest_us);
	if (bind)
		printf("zcbench: rank 0 bound to processor %d, rank 1 to %d, "
		       "as mpirun binds NPopenmpi's ranks (--no-bind: not)\n",
		       bind_to[0], bind_to[1]);
	else if (!conn)
		printf("zcbench: ranks not bound to processors\n");
	printf("%-6s %-7s %9s %6s %11s %10s %7s %10s %10s %7s %7s  %s\n",
	       "mode", "arrival", "size", "iters", "latency_us", "MB/s", "hits",
	       "pages/msg", "copied/msg", "vs_fast", "vs_npo", "verified");
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: zcbench [OPTIONS]                  both ranks on this machine\n"
"       zcbench --server HOST:PORT [OPTIONS]   rank 1, waits for a driver\n"
"       zcbench --connect HOST:PORT [OPTIONS]  rank 0, drives a server\n"
"       zcbench --plot-only CSV --png PNG [--nptcp-file FILE] [--emulated]\n"
"Copy-vs-remap ping-pong over libzcrecv; every iteration is verified.\n"
"  --min BYTES        smallest message (default 4096, at least 64)\n"
"  --max BYTES        largest message (default 16777216, at most 1 TiB);\n"
"                     sizes double\n"
"  --modes LIST       comma separated: copy,remap,auto (default all)\n"
"  --arrival LIST     comma separated: early,posted (default both)\n"
"  --reply own|echo   rank 1 answers from its own buffer, refilled\n"
"                     after each answer as NetPIPE's receiver sends\n"
"                     from its own (own, the default), or with the\n"
"                     ping's own buffer (echo)\n"
"  --rest US          rank 0 waits US microseconds (1 to 10000000,\n"
"                     spinning) between writing each ping and sending\n"
"                     it, untimed: how long buffers rest between\n"
"                     messages\n"
"  --buffers N        receive buffers each rank uses in turn (1 to 8,\n"
"                     default 2; NetPIPE uses one): an early arrival's\n"
"                     staging holds one page set more\n"
"  --iters N          most timed iterations per trial (default 50,\n"
"                     at most 1000000)\n"
"  --trials N         trials per point (default 3, at most 1000), the\n"
"                     arrivals and modes of a size taking turns; the\n"
"                     fastest trial's mean is reported\n"
"  --point-time S     more trials at a size (in rounds of six, up to\n"
"                     1000) until its trials took S seconds: quick\n"
"                     sizes get many, slow ones --trials\n"
"  --csv FILE|-       write CSV (-: to stdout between zcbench-csv-begin\n"
"                     and zcbench-csv-end lines)\n"
"  --png FILE         plot with gnuplot\n"
"  --nptcp            run NetPIPE's NPtcp over loopback as a reference\n"
"  --nptcp-file FILE  keep (or, with --plot-only, read) NPtcp's output\n"
"  --transport T      tcp (default), shm: ranks on this host move data\n"
"                     through shared memory (sets ZCRECV_SHM), or verbs:\n"
"                     the RDMA verbs transport (verbs://)\n"
"  --perftest         run perftest's ib_send_lat and ib_write_bw over the\n"
"                     same RDMA device as reference lines\n"
"  --ref CSV=TITLE    one more reference line (bytes,MB/s) for the plot\n"
"  --npopenmpi        run NetPIPE's NPopenmpi (Open MPI shared memory)\n"
"                     before and after the run (per size the faster:\n"
"                     the reference line), and at each size after each\n"
"                     trial (vs_npo: median over the trials of its\n"
"                     latency over the mode's)\n"
"  --npompi-file FILE keep (or, with --plot-only, read) NPopenmpi's output\n"
"  --npopenmpi-layer LIB  also run NPopenmpi with its messages carried by\n"
"                     zcrecv: LIB is libzcrecv-mpi.so (LD_PRELOAD, shm)\n"
"  --no-bind          leave the two local ranks where the scheduler puts\n"
"                     them (default: each bound to a processor of its\n"
"                     own, as mpirun binds NPopenmpi's)\n"
"  --emulated         mark the figures as measured under emulation\n"
"  -h, --help         this help\n"
"Environment: ZCBENCH_FLIP=OFFSET (for the tests) rank 0 flips a bit of\n"
"byte OFFSET (modulo the size) of every message it receives before it\n"
"verifies it: each of its iterations must then fail to verify.\n"
"Exit status: 0 every iteration verified, 1 an iteration failed to verify\n"
"(or --plot-only failed), 2 bad usage or a failed library call.\n");
}

int main(int argc, char **argv)
{
	static const char *const mode_names[] = { "auto", "copy", "remap" };
	static const char *const arr_names[] = { "early", "posted" };
	static const struct option opts[] = {
		{ "min", 1, NULL, 's' }, { "max", 1, NULL, 'S' },
		{ "modes", 1, NULL, 'm' }, { "arrival", 1, NULL, 'a' },
		{ "iters", 1, NULL, 'i' }, { "trials", 1, NULL, 't' },
		{ "csv", 1, NULL, 'c' },
		{ "png", 1, NULL, 'p' }, { "nptcp", 0, NULL, 'n' },
		{ "nptcp-file", 1, NULL, 'N' }, { "server", 1, NULL, 'L' },
		{ "connect", 1, NULL, 'C' }, { "plot-only", 1, NULL, 'P' },
		{ "emulated", 0, NULL, 'E' }, { "transport", 1, NULL, 'T' },
		{ "npopenmpi", 0, NULL, 'O' }, { "npompi-file", 1, NULL, 'F' },
		{ "npopenmpi-layer", 1, NULL, 'Y' },
		{ "perftest", 0, NULL, 'R' }, { "ref", 1, NULL, 'r' },
		{ "reply", 1, NULL, 'e' }, { "no-bind", 0, NULL, 'B' },
		{ "rest", 1, NULL, 'W' }, { "buffers", 1, NULL, 'b' },
		{ "point-time", 1, NULL, 'x' },
		{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	uint64_t min = 4096, max = 16 << 20, size;
	const char *csv = NULL, *png = NULL, *server = NULL, *conn = NULL;
	const char *plot_only = NULL, *npfile = NULL, *ompifile = NULL;
	const char *layer = NULL;
	int npompi = 0, perftest = 0;
	bool bind = true;
	int modes = 0x7, arrivals = 0x3, nptcp = 0, emulated = 0, o;
	unsigned int max_iters = 50, trials = TRIALS, point_s = 0;
	char csvtmp[64];
	struct sweep sw;
	struct zcr_ctx *ctx;
	struct zcr_ep *ep;
	uint64_t bad = 0;
	pid_t child = -1;
	const char *flip = getenv("ZCBENCH_FLIP");

	/* The landing out of staging is what "early" measures. */
	setenv("ZCRECV_DEFER_MIN", "0", 0);

	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 's': min = strtoull(optarg, NULL, 0); break;
		case 'S': max = strtoull(optarg, NULL, 0); break;
		case 'm': modes = zct_parse_list(optarg, mode_names, 3); break;
		case 'a': arrivals = zct_parse_list(optarg, arr_names, 2); break;
		case 'i':
			if (parse_count(optarg, ITERS_MAX, &max_iters))
				max_iters = 0;
			break;
		case 't':
			if (parse_count(optarg, TRIALS_MAX, &trials))
				trials = 0;
			break;
		case 'x':
			if (count_option("point-time", "whole seconds, ",
					 optarg, 3600, &point_s))
				return 2;
			break;
		case 'W':
			if (count_option("rest", "microseconds, ", optarg,
					 10000000, &rest_us))
				return 2;
			break;
		case 'b':
			if (count_option("buffers", "", optarg, BUFFERS_MAX,
					 &nbuffers))
				return 2;
			break;
		case 'c': csv = optarg; break;
		case 'p': png = optarg; break;
		case 'n': nptcp = 1; break;
		case 'N': npfile = optarg; break;
		case 'L': server = optarg; break;
		case 'C': conn = optarg; break;
		case 'P': plot_only = optarg; break;
		case 'E': emulated = 1; break;
		case 'T':
			if (strcmp(optarg, "tcp") && strcmp(optarg, "shm") &&
			    strcmp(optarg, "verbs")) {
				fprintf(stderr, "zcbench: --transport "
					"tcp|shm|verbs\n");
				return 2;
			}
			setenv("ZCRECV_SHM", strcmp(optarg, "shm") ? "0" : "1",
			       1);
			transport = optarg;
			break;
		case 'R': perftest = 1; break;
		case 'e':
			if (strcmp(optarg, "own") && strcmp(optarg, "echo")) {
				fprintf(stderr, "zcbench: --reply own|echo\n");
				return 2;
			}
			echo_replies = !strcmp(optarg, "echo");
			break;
		case 'r': {
			char *eq = strchr(optarg, '=');

			if (!eq || nrefs == 8) {
				fprintf(stderr, "zcbench: --ref CSV=TITLE\n");
				return 2;
			}
			*eq = 0;
			refs[nrefs].csv = optarg;
			refs[nrefs++].title = eq + 1;
			break;
		}
		case 'O': npompi = 1; break;
		case 'B': bind = false; break;
		case 'Y': layer = optarg; break;
		case 'F': ompifile = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (flip && *flip) {
		char *end;

		errno = 0;
		flip_at = strtoll(flip, &end, 10);
		if (errno || *end || flip_at < 0 || !isdigit((unsigned char)*flip)) {
			fprintf(stderr, "zcbench: ZCBENCH_FLIP: not a byte "
				"offset: %s\n", flip);
			return 2;
		}
	}
	if (plot_only && ompifile)
		ompi_ref = ompifile;
	if (plot_only)
		return png && plot(plot_only, npfile, png, emulated) == 0 ? 0 : 1;
	/* sizes double up to max: past 2^63 they would wrap to 0 */
	if (min < 64 || max < min || max > MAX_SIZE || !modes || !arrivals ||
	    !max_iters || !trials) {
		fprintf(stderr, "zcbench: bad --min/--max/--modes/--arrival/"
			"--iters/--trials\n");
		return 2;
	}

	if (npompi && !server)
		npompi_before(min, max);

	/* Both ranks here: each on a processor of its own, if there are two. */
	if (bind && (server || conn || bind_pick()))
		bind = false;
	if (server)
		return serve(server);
	open_ranks(conn, bind, &ctx, &ep, &child);
	print_header(ctx, ep, bind, conn, emulated);
	sw = (struct sweep){ .modes = modes, .arrivals = arrivals,
			     .max_iters = max_iters, .trials = trials,
			     .point_s = point_s, .npompi = npompi && !conn };
	for (size = min; size <= max; size *= 2)
		bad += run_size(ctx, ep, size, &sw);
	{
		struct ctrl c = { .cmd = 2 };

		CHECK(zcr_send(ep, &c, sizeof(c), TAG_CTRL));
	}
	if (child > 0) {
		int status;

		waitpid(child, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	}
	print_landing(ctx, 0);
	zcr_ctx_destroy(ctx);
	print_auto_check();
	print_posted_early();
	printf("zcbench: %llu iteration(s) failed to verify\n",
	       (unsigned long long)bad);

	if (csv && !strcmp(csv, "-")) {
		printf("zcbench-csv-begin\n");
		write_csv(stdout);
		printf("zcbench-csv-end\n");
	} else if (csv || png) {
		FILE *f;

		if (!csv) {
			snprintf(csvtmp, sizeof(csvtmp), "/tmp/zcbench.%d.csv",
				 (int)getpid());
			csv = csvtmp;
		}
		f = fopen(csv, "w");
		if (!f)
			die(csv, -errno);
		write_csv(f);
		fclose(f);
	}
	npfile = run_refs(&(struct ref_opts){
		.min = min, .max = max, .iters = max_iters,
		.nptcp = nptcp, .npompi = npompi, .perftest = perftest,
		.emulated = emulated, .csv = csv, .npfile = npfile,
		.ompifile = ompifile, .layer = layer });
	if (png && csv && strcmp(csv, "-")) {
		if (plot(csv, npfile, png, emulated) == 0)
			printf("zcbench: plot written to %s\n", png);
		else
			printf("zcbench: gnuplot failed or missing: no plot\n");
	}
	return bad ? 1 : 0;
}
