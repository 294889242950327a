/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * apps.h - what the application programs of tools/apps share: the common
 * options, the clock and the computation / start / wait accounts, the
 * timed point-to-point exchange and collective helpers, aligned receive
 * buffers, the counter-based random numbers, the order-fixed reductions of
 * the checksums and the result line (Documentation/apps.md).
 */
#ifndef ZCAPPS_H
#define ZCAPPS_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define APP_PAGE 4096UL

enum app_comm { APP_P2P, APP_COLL };
enum app_post { APP_LATE, APP_EARLY };
enum app_alloc { APP_ALLOC_MPI, APP_ALLOC_MALLOC };

/* An option of one program only: --NAME ARG, parsed by app_desc.opt. */
struct app_opt {
	const char *name;	/* "version" */
	const char *arg;	/* "E|S|P|X:k", shown in --help */
	const char *help;	/* its --help lines, indented as the others */
};

/* What a program says about itself; app_init() builds --help from it. */
struct app_desc {
	const char *name;	/* "pes" */
	const char *what;	/* what it computes, a few lines */
	const char *size_help;	/* what --size N means */
	const char *iters_help;	/* what --iters K counts */
	long def_size, def_iters;
	long paper_size, paper_iters;
	const char *paper_help;	/* the --paper problem in words */
	const char *ranks_help;	/* the rank counts it takes */
	const char *comm_help;	/* what --comm p2p and coll send */
	const char *post_help;	/* which receives --post early moves */
	int coll_early;		/* coll + early supported (nonblocking) */
	/* The program's own options (NULL-terminated) and their parser:
	 * NULL when VAL is good for opts[i], else why it is not. */
	const struct app_opt *opts;
	const char *(*opt)(int i, const char *val);
};

/* Per-rank accounts of the timed part. */
struct app_stats {
	double comp, start, wait, barrier;
	uint64_t bytes, msgs;
};

/*
 * --comm persist: the point-to-point exchanges with persistent requests,
 * bound at a call's first use and started again each time the same call
 * (kind, buffer, count, type, peer, tag, communicator) comes back.
 */
#define APP_PERSIST_MAX	64

struct app_persist {
	int send;
	const void *buf;
	int count, peer, tag;
	MPI_Datatype t;
	MPI_Comm comm;
	MPI_Request req;
	int busy;		/* started, not yet waited for */
};

struct app {
	const struct app_desc *d;
	int rank, nranks;
	enum app_comm comm;
	int persist;		/* --comm persist: p2p with bound requests */
	struct app_persist pers[APP_PERSIST_MAX];
	int npers;
	uint64_t pers_plain;	/* calls past APP_PERSIST_MAX: not bound */
	enum app_post post;
	enum app_alloc alloc;
	long size, iters;
	int paper, verbose;
	struct app_stats st;	/* running accounts */
	struct app_stats timed;	/* as app_end found them */
	double t0, wall;
	char tail[160];		/* the program's own keys, end of the line */
	int ok;			/* this rank's checks so far */
	int nfail;		/* messages printed about failed checks */
};

/* Parse the options (before MPI_Init), then MPI_Init; exits on --help. */
void app_init(struct app *a, const struct app_desc *d, int argc, char **argv);
/*
 * A program option's value from 0 to 1 (the probes' --scale) into *out:
 * NULL, or why the value is not one (for app_desc.opt to return).
 */
const char *app_parse_share(const char *val, double *out);
/* A rank count or size the program cannot take: message, exit 2. */
void app_reject(struct app *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
/* A failed self-check (any rank): message on stderr, check=fail. */
void app_fail(struct app *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A fatal error (allocation): message, MPI_Abort. */
void app_die(struct app *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* Page-aligned memory: MPI_Alloc_mem or posix_memalign (--alloc). */
void *app_alloc(struct app *a, size_t bytes);
void app_free(struct app *a, void *p);
/* Page-aligned memory from the C library whatever --alloc says. */
void *app_alloc_plain(struct app *a, size_t bytes);
static inline size_t app_page_round(size_t n)
{
	return (n + APP_PAGE - 1) & ~(APP_PAGE - 1);
}

/* The timed part: app_begin after setup, app_end after the last step. */
void app_begin(struct app *a);
void app_end(struct app *a);

static inline double app_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Computation: t = app_now(); ...; app_comp(a, t); */
static inline void app_comp(struct app *a, double t)
{
	a->st.comp += app_now() - t;
}

/*
 * A set of outstanding point-to-point requests. app_irecv/app_isend start
 * one (time counted as start; a send counts as one message and its bytes),
 * app_waitall completes them all (time counted as wait) and leaves the
 * statuses in x->st in the order they were started.
 */
struct app_xchg {
	MPI_Request *req;
	MPI_Status *st;
	int n, cap;
};

void app_xchg_init(struct app *a, struct app_xchg *x, int cap);
void app_xchg_free(struct app_xchg *x);
void app_irecv(struct app *a, struct app_xchg *x, void *buf, int count,
	       MPI_Datatype t, int src, int tag, MPI_Comm comm);
void app_isend(struct app *a, struct app_xchg *x, const void *buf, int count,
	       MPI_Datatype t, int dest, int tag, MPI_Comm comm);
void app_waitall(struct app *a, struct app_xchg *x);

/*
 * Collectives, timed (blocking ones as wait; the nonblocking ones' start
 * as start, their completion through app_wait_req as wait). Each counts
 * the blocks it moves between two different ranks as the messages and
 * bytes this rank sends, so that --comm coll and p2p count the same.
 */
void app_bcast(struct app *a, void *buf, int count, MPI_Datatype t, int root,
	       MPI_Comm comm);
void app_scatterv(struct app *a, const void *sbuf, const int *counts,
		  const int *displs, MPI_Datatype t, void *rbuf, int rcount,
		  int root, MPI_Comm comm, MPI_Request *req);
void app_gatherv(struct app *a, const void *sbuf, int scount, MPI_Datatype t,
		 void *rbuf, const int *counts, const int *displs, int root,
		 MPI_Comm comm, MPI_Request *req);
void app_allgatherv(struct app *a, void *buf, const int *counts,
		    const int *displs, MPI_Datatype t, MPI_Comm comm);
void app_alltoall(struct app *a, const void *sbuf, void *rbuf, int count,
		  MPI_Datatype t, MPI_Comm comm);
void app_alltoallv(struct app *a, const void *sbuf, const int *scounts,
		   const int *sdispls, void *rbuf, const int *rcounts,
		   const int *rdispls, MPI_Datatype t, MPI_Comm comm);
void app_wait_req(struct app *a, MPI_Request *req);
/* MPI_Barrier on MPI_COMM_WORLD, timed as barrier. */
void app_barrier(struct app *a);

/* Counter-based random numbers: the same value for an index on any rank. */
static inline uint64_t app_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Uniform in [0, 1), 53 bits, from stream s and index i. */
static inline double app_unif(uint64_t s, uint64_t i)
{
	return (double)(app_mix(app_mix(s) ^ i) >> 11) * 0x1.0p-53;
}

static inline uint64_t app_bits(double v)
{
	uint64_t u;

	memcpy(&u, &v, sizeof(u));
	return u;
}

/*
 * One element's share of a digest word: digest words are sums of these
 * modulo 2^64, exact and independent of the order they are added in, so a
 * result spread over ranks hashes the same however it is split.
 */
static inline uint64_t app_elem(uint64_t idx, double v)
{
	return app_mix(app_mix(idx) ^ app_bits(v));
}

/*
 * Sum n words over the ranks, rank 0 keeping the result: gathered to rank
 * 0 and added in rank order. Collective; not timed.
 */
void app_sum_words(struct app *a, uint64_t *w, int n);
/* The same for doubles: gathered and added in rank order (exact order). */
void app_sum_doubles(struct app *a, double *v, int n);
/* Whether every rank passed its checks so far (all ranks learn it). */
int app_all_ok(struct app *a);

/*
 * Print the result line on rank 0 (digest: FNV-1a of rank 0's n words),
 * the per-rank timings with --verbose, finalize MPI and return the exit
 * code (0, or 1 when a check failed on any rank).
 */
int app_finish(struct app *a, const uint64_t *w, int n);

#endif
