// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * apps.c - the code the application programs of tools/apps share: option
 * parsing and --help, page-aligned buffers (MPI_Alloc_mem or the C
 * library), the timed exchange and collective helpers with their message
 * counts, the reductions in rank order and the one result line.
 * Not a program: linked into every program of tools/apps (tools/apps.mk).
 */
#include "apps.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define ARRAY_SIZE(x) (sizeof(x) / sizeof((x)[0]))
#define APP_OPT_BASE 256	/* getopt values of the programs' options */
#define APP_OPT_MAX 8

/* Rank as the launcher tells it, before MPI_Init: who prints --help. */
static int launcher_rank(void)
{
	static const char *const vars[] = {
		"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", NULL
	};
	const char *v;
	int i;

	for (i = 0; vars[i]; i++) {
		v = getenv(vars[i]);
		if (v && *v)
			return atoi(v);
	}
	return 0;
}

static void usage(const struct app_desc *d, FILE *f)
{
	const struct app_opt *o;

	fprintf(f,
		"Usage: mpirun -np P %s [options]\n"
		"%s\n"
		"\n"
		"Options:\n"
		"  --size N         %s\n"
		"                   (default %ld; --paper %ld)\n"
		"  --iters K        %s\n"
		"                   (default %ld; --paper %ld)\n"
		"  --paper          the paper's problem (an explicit --size or\n"
		"                   --iters still wins):\n"
		"                   %s\n"
		"  --comm p2p|coll|persist  how the data moves (default p2p):\n"
		"%s\n"
		"                   persist: as p2p, with persistent requests\n"
		"                   (MPI_Send_init, MPI_Recv_init) made at a\n"
		"                   call's first use and started (MPI_Start)\n"
		"                   each time the same call comes back\n"
		"  --post late|early  when the receives are posted (default late):\n"
		"                   late: after the computation that precedes the\n"
		"                   exchange, just before the sends and waits;\n"
		"                   early: before that computation. Here:\n"
		"%s\n"
		"  --alloc mpi|malloc  receive buffers from MPI_Alloc_mem (default)\n"
		"                   or from posix_memalign; page-aligned either way\n"
		"  --verbose        per-rank timings and counts on stderr\n",
		d->name, d->what, d->size_help, d->def_size, d->paper_size,
		d->iters_help, d->def_iters, d->paper_iters, d->paper_help,
		d->comm_help, d->post_help);
	for (o = d->opts; o && o->name; o++)
		fprintf(f, "  --%s %s\n%s\n", o->name, o->arg, o->help);
	fprintf(f,
		"  -h, --help       this text\n"
		"\n"
		"Ranks: %s\n"
		"\n"
		"Prints one line on rank 0:\n"
		"  zcapp: app=%s ranks=P comm=C post=W size=N iters=K wall=S comp=S\n"
		"  start=S wait=S bytes=B msgs=M check=ok|fail digest=16HEX\n"
		"  barrier=S%s\n"
		"(comp/start/wait/barrier: means over the ranks; bytes/msgs: totals\n"
		"sent).\n"
		"Exit status: 0 ok, 1 a self-check failed, 2 bad options or ranks.\n"
		"Documentation/apps.md describes the program.\n",
		d->ranks_help, d->name, d->opts ? " and the keys of the options above" : "");
}

static void __attribute__((noreturn, format(printf, 2, 3)))
bad_option(const struct app_desc *d, const char *fmt, ...)
{
	va_list ap;

	if (launcher_rank() == 0) {
		fprintf(stderr, "%s: ", d->name);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fprintf(stderr, "\nUsage: mpirun -np P %s [options] (%s --help "
			"lists them)\n", d->name, d->name);
	}
	exit(2);
}

static long positive(const struct app_desc *d, const char *opt,
		     const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT_MAX / 2)
		bad_option(d, "%s: expected a positive whole number, got '%s'",
			   opt, s);
	return v;
}

void app_init(struct app *a, const struct app_desc *d, int argc, char **argv)
{
	static const struct option common[] = {
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'i' },
		{ "paper", no_argument, NULL, 'P' },
		{ "comm", required_argument, NULL, 'c' },
		{ "post", required_argument, NULL, 'p' },
		{ "alloc", required_argument, NULL, 'a' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
	};
	/* The common options, the program's (values APP_OPT_BASE + i), end. */
	struct option opts[ARRAY_SIZE(common) + APP_OPT_MAX + 1];
	const char *why;
	long size = 0, iters = 0;
	int c, n, post_set = 0;

	memcpy(opts, common, sizeof(common));
	for (n = 0; d->opts && d->opts[n].name; n++) {
		if (n == APP_OPT_MAX)
			bad_option(d, "more than %d options of its own",
				   APP_OPT_MAX);
		opts[ARRAY_SIZE(common) + n] = (struct option){
			d->opts[n].name, required_argument, NULL,
			APP_OPT_BASE + n };
	}
	memset(&opts[ARRAY_SIZE(common) + n], 0, sizeof(opts[0]));
	memset(a, 0, sizeof(*a));
	a->d = d;
	a->ok = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			size = positive(d, "--size", optarg);
			break;
		case 'i':
			iters = positive(d, "--iters", optarg);
			break;
		case 'P':
			a->paper = 1;
			break;
		case 'c':
			if (!strcmp(optarg, "p2p"))
				a->comm = APP_P2P;
			else if (!strcmp(optarg, "coll"))
				a->comm = APP_COLL;
			else if (!strcmp(optarg, "persist"))
				a->persist = 1;
			else
				bad_option(d, "--comm %s: expected p2p, coll or "
					   "persist", optarg);
			break;
		case 'p':
			if (!strcmp(optarg, "late"))
				a->post = APP_LATE;
			else if (!strcmp(optarg, "early"))
				a->post = APP_EARLY;
			else
				bad_option(d, "--post %s: expected late or early",
					   optarg);
			post_set = 1;
			break;
		case 'a':
			if (!strcmp(optarg, "mpi"))
				a->alloc = APP_ALLOC_MPI;
			else if (!strcmp(optarg, "malloc"))
				a->alloc = APP_ALLOC_MALLOC;
			else
				bad_option(d, "--alloc %s: expected mpi or malloc",
					   optarg);
			break;
		case 'v':
			a->verbose = 1;
			break;
		case 'h':
			if (launcher_rank() == 0)
				usage(d, stdout);
			exit(0);
		case ':':
			bad_option(d, "%s needs a value", argv[optind - 1]);
		default:
			if (c >= APP_OPT_BASE && c < APP_OPT_BASE + n) {
				why = d->opt(c - APP_OPT_BASE, optarg);
				if (why)
					bad_option(d, "--%s %s: %s",
						   d->opts[c - APP_OPT_BASE].name,
						   optarg, why);
				break;
			}
			bad_option(d, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		bad_option(d, "unexpected argument '%s'", argv[optind]);
	if (a->comm == APP_COLL && a->post == APP_EARLY && !d->coll_early)
		bad_option(d, "--post early needs --comm p2p: with collectives "
			   "the data a rank sends is what its computation "
			   "produces, so no collective can start before it");
	(void)post_set;
	a->size = size ? size : a->paper ? d->paper_size : d->def_size;
	a->iters = iters ? iters : a->paper ? d->paper_iters : d->def_iters;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &a->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &a->nranks);
}

const char *app_parse_share(const char *val, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(val, &end);
	if (errno || *end || end == val || !(d >= 0 && d <= 1))
		return "expected a number from 0 to 1";
	*out = d;
	return NULL;
}

void app_reject(struct app *a, const char *fmt, ...)
{
	va_list ap;

	if (a->rank == 0) {
		fprintf(stderr, "%s: ", a->d->name);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fprintf(stderr, " (see %s --help)\n", a->d->name);
	}
	MPI_Finalize();
	exit(2);
}

void app_fail(struct app *a, const char *fmt, ...)
{
	va_list ap;

	a->ok = 0;
	if (a->nfail++ >= 5)
		return;
	fprintf(stderr, "%s: rank %d: check failed: ", a->d->name, a->rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void app_die(struct app *a, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: rank %d: ", a->d->name, a->rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	MPI_Abort(MPI_COMM_WORLD, 1);
	exit(1);
}

/* ---- memory ---------------------------------------------------------- */

/*
 * MPI_Alloc_mem gives page-aligned memory under libzcrecv-mpi but not
 * necessarily under a stock MPI: ask for a page more and align, keeping
 * what MPI_Free_mem needs.
 */
struct block {
	void *user, *base;
	int mpi;
	struct block *next;
};

static struct block *blocks;

void *app_alloc(struct app *a, size_t bytes)
{
	struct block *b = malloc(sizeof(*b));
	void *p = NULL;

	if (!b)
		app_die(a, "out of memory");
	bytes = app_page_round(bytes ? bytes : 1);
	b->mpi = a->alloc == APP_ALLOC_MPI;
	if (b->mpi) {
		if (bytes + APP_PAGE > (size_t)PTRDIFF_MAX)
			app_die(a, "cannot allocate %zu bytes", bytes);
		/* Aligned as it comes (libzcrecv-mpi), else a page more. */
		if (MPI_Alloc_mem((MPI_Aint)bytes, MPI_INFO_NULL, &p) ==
		    MPI_SUCCESS && ((uintptr_t)p & (APP_PAGE - 1))) {
			MPI_Free_mem(p);
			if (MPI_Alloc_mem((MPI_Aint)(bytes + APP_PAGE),
					  MPI_INFO_NULL, &p) != MPI_SUCCESS)
				p = NULL;
		}
		if (!p)
			app_die(a, "MPI_Alloc_mem of %zu bytes failed", bytes);
		b->base = p;
		b->user = (void *)(((uintptr_t)p + APP_PAGE - 1) &
				   ~(uintptr_t)(APP_PAGE - 1));
	} else {
		if (posix_memalign(&p, APP_PAGE, bytes))
			app_die(a, "cannot allocate %zu bytes", bytes);
		b->base = b->user = p;
	}
	b->next = blocks;
	blocks = b;
	return b->user;
}

void *app_alloc_plain(struct app *a, size_t bytes)
{
	void *p;

	if (posix_memalign(&p, APP_PAGE, app_page_round(bytes ? bytes : 1)))
		app_die(a, "cannot allocate %zu bytes", bytes);
	return p;
}

void app_free(struct app *a, void *p)
{
	struct block **pp, *b;

	(void)a;
	for (pp = &blocks; (b = *pp); pp = &b->next)
		if (b->user == p) {
			*pp = b->next;
			if (b->mpi)
				MPI_Free_mem(b->base);
			else
				free(b->base);
			free(b);
			return;
		}
	free(p);
}

/* ---- the timed part ------------------------------------------------- */

void app_begin(struct app *a)
{
	MPI_Barrier(MPI_COMM_WORLD);
	memset(&a->st, 0, sizeof(a->st));
	a->t0 = app_now();
}

static void persist_free(struct app *a);

void app_end(struct app *a)
{
	MPI_Barrier(MPI_COMM_WORLD);
	a->wall = app_now() - a->t0;
	a->timed = a->st;
	persist_free(a);
}

static uint64_t type_bytes(MPI_Datatype t, int count)
{
	int s;

	MPI_Type_size(t, &s);
	return (uint64_t)s * (uint64_t)(count > 0 ? count : 0);
}

void app_xchg_init(struct app *a, struct app_xchg *x, int cap)
{
	x->req = malloc((size_t)cap * sizeof(*x->req));
	x->st = malloc((size_t)cap * sizeof(*x->st));
	if (!x->req || !x->st)
		app_die(a, "out of memory");
	x->n = 0;
	x->cap = cap;
}

void app_xchg_free(struct app_xchg *x)
{
	free(x->req);
	free(x->st);
	x->req = NULL;
	x->st = NULL;
}

/*
 * --comm persist: start the persistent request of this call (made at its
 * first use; another one if that one is still busy) into x; 0 when the
 * table is full and the caller starts a plain one instead.
 */
static int persist_start(struct app *a, struct app_xchg *x, int send,
			 const void *buf, int count, MPI_Datatype t, int peer,
			 int tag, MPI_Comm comm)
{
	struct app_persist *p;
	int i;

	for (i = 0; i < a->npers; i++) {
		p = &a->pers[i];
		if (!p->busy && p->send == send && p->buf == buf &&
		    p->count == count && p->t == t && p->peer == peer &&
		    p->tag == tag && p->comm == comm)
			break;
	}
	if (i == a->npers) {
		if (a->npers == APP_PERSIST_MAX) {
			a->pers_plain++;
			return 0;
		}
		p = &a->pers[a->npers++];
		p->send = send;
		p->buf = buf;
		p->count = count;
		p->t = t;
		p->peer = peer;
		p->tag = tag;
		p->comm = comm;
		if (send)
			MPI_Send_init(buf, count, t, peer, tag, comm, &p->req);
		else
			MPI_Recv_init((void *)buf, count, t, peer, tag, comm,
				      &p->req);
	}
	p = &a->pers[i];
	MPI_Start(&p->req);
	p->busy = 1;
	x->req[x->n++] = p->req;
	return 1;
}

/* Every persistent request of --comm persist freed (all waited for). */
static void persist_free(struct app *a)
{
	int i;

	for (i = 0; i < a->npers; i++)
		MPI_Request_free(&a->pers[i].req);
	a->npers = 0;
}

void app_irecv(struct app *a, struct app_xchg *x, void *buf, int count,
	       MPI_Datatype t, int src, int tag, MPI_Comm comm)
{
	double t0 = app_now();

	if (x->n == x->cap)
		app_die(a, "more than %d requests outstanding", x->cap);
	if (!a->persist ||
	    !persist_start(a, x, 0, buf, count, t, src, tag, comm))
		MPI_Irecv(buf, count, t, src, tag, comm, &x->req[x->n++]);
	a->st.start += app_now() - t0;
}

void app_isend(struct app *a, struct app_xchg *x, const void *buf, int count,
	       MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
	double t0 = app_now();

	if (x->n == x->cap)
		app_die(a, "more than %d requests outstanding", x->cap);
	if (!a->persist ||
	    !persist_start(a, x, 1, buf, count, t, dest, tag, comm))
		MPI_Isend(buf, count, t, dest, tag, comm, &x->req[x->n++]);
	a->st.start += app_now() - t0;
	a->st.msgs++;
	a->st.bytes += type_bytes(t, count);
}

void app_waitall(struct app *a, struct app_xchg *x)
{
	double t0 = app_now();
	int i, k;

	MPI_Waitall(x->n, x->req, x->st);
	a->st.wait += app_now() - t0;
	/* Its persistent requests are inactive again (they keep handles). */
	for (i = 0; i < x->n && a->npers; i++)
		for (k = 0; k < a->npers; k++)
			if (a->pers[k].busy && a->pers[k].req == x->req[i])
				a->pers[k].busy = 0;
	x->n = 0;
}

void app_wait_req(struct app *a, MPI_Request *req)
{
	double t0 = app_now();

	MPI_Wait(req, MPI_STATUS_IGNORE);
	a->st.wait += app_now() - t0;
}

void app_barrier(struct app *a)
{
	double t0 = app_now();

	MPI_Barrier(MPI_COMM_WORLD);
	a->st.barrier += app_now() - t0;
}

/* ---- collectives ----------------------------------------------------- */

static int comm_size(MPI_Comm comm)
{
	int n;

	MPI_Comm_size(comm, &n);
	return n;
}

static int comm_rank(MPI_Comm comm)
{
	int r;

	MPI_Comm_rank(comm, &r);
	return r;
}

void app_bcast(struct app *a, void *buf, int count, MPI_Datatype t, int root,
	       MPI_Comm comm)
{
	double t0 = app_now();

	MPI_Bcast(buf, count, t, root, comm);
	a->st.wait += app_now() - t0;
	if (comm_rank(comm) == root) {
		a->st.msgs += (uint64_t)comm_size(comm) - 1;
		a->st.bytes += ((uint64_t)comm_size(comm) - 1) *
			       type_bytes(t, count);
	}
}

void app_scatterv(struct app *a, const void *sbuf, const int *counts,
		  const int *displs, MPI_Datatype t, void *rbuf, int rcount,
		  int root, MPI_Comm comm, MPI_Request *req)
{
	double t0 = app_now();
	int d, n = comm_size(comm);

	if (req) {
		MPI_Iscatterv(sbuf, counts, displs, t, rbuf, rcount, t, root,
			      comm, req);
		a->st.start += app_now() - t0;
	} else {
		MPI_Scatterv(sbuf, counts, displs, t, rbuf, rcount, t, root,
			     comm);
		a->st.wait += app_now() - t0;
	}
	if (comm_rank(comm) != root)
		return;
	for (d = 0; d < n; d++)
		if (d != root) {
			a->st.msgs++;
			a->st.bytes += type_bytes(t, counts[d]);
		}
}

void app_gatherv(struct app *a, const void *sbuf, int scount, MPI_Datatype t,
		 void *rbuf, const int *counts, const int *displs, int root,
		 MPI_Comm comm, MPI_Request *req)
{
	double t0 = app_now();

	if (req) {
		MPI_Igatherv(sbuf, scount, t, rbuf, counts, displs, t, root,
			     comm, req);
		a->st.start += app_now() - t0;
	} else {
		MPI_Gatherv(sbuf, scount, t, rbuf, counts, displs, t, root,
			    comm);
		a->st.wait += app_now() - t0;
	}
	if (comm_rank(comm) != root) {
		a->st.msgs++;
		a->st.bytes += type_bytes(t, scount);
	}
}

void app_allgatherv(struct app *a, void *buf, const int *counts,
		    const int *displs, MPI_Datatype t, MPI_Comm comm)
{
	double t0 = app_now();
	int n = comm_size(comm);

	MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs,
		       t, comm);
	a->st.wait += app_now() - t0;
	a->st.msgs += (uint64_t)n - 1;
	a->st.bytes += ((uint64_t)n - 1) * type_bytes(t,
						       counts[comm_rank(comm)]);
}

void app_alltoall(struct app *a, const void *sbuf, void *rbuf, int count,
		  MPI_Datatype t, MPI_Comm comm)
{
	double t0 = app_now();
	int n = comm_size(comm);

	MPI_Alltoall(sbuf, count, t, rbuf, count, t, comm);
	a->st.wait += app_now() - t0;
	a->st.msgs += (uint64_t)n - 1;
	a->st.bytes += ((uint64_t)n - 1) * type_bytes(t, count);
}

void app_alltoallv(struct app *a, const void *sbuf, const int *scounts,
		   const int *sdispls, void *rbuf, const int *rcounts,
		   const int *rdispls, MPI_Datatype t, MPI_Comm comm)
{
	double t0 = app_now();
	int d, n = comm_size(comm), me = comm_rank(comm);

	MPI_Alltoallv(sbuf, scounts, sdispls, t, rbuf, rcounts, rdispls, t,
		      comm);
	a->st.wait += app_now() - t0;
	for (d = 0; d < n; d++)
		if (d != me) {
			a->st.msgs++;
			a->st.bytes += type_bytes(t, scounts[d]);
		}
}

/* ---- reductions in a fixed order ------------------------------------- */

void app_sum_words(struct app *a, uint64_t *w, int n)
{
	uint64_t *all = NULL;
	int r, i;

	if (a->rank == 0) {
		all = malloc((size_t)n * (size_t)a->nranks * sizeof(*all));
		if (!all)
			app_die(a, "out of memory");
	}
	MPI_Gather(w, n, MPI_UINT64_T, all, n, MPI_UINT64_T, 0,
		   MPI_COMM_WORLD);
	if (a->rank)
		return;
	for (i = 0; i < n; i++) {
		w[i] = 0;
		for (r = 0; r < a->nranks; r++)
			w[i] += all[(size_t)r * (size_t)n + (size_t)i];
	}
	free(all);
}

void app_sum_doubles(struct app *a, double *v, int n)
{
	double *all = NULL;
	int r, i;

	if (a->rank == 0) {
		all = malloc((size_t)n * (size_t)a->nranks * sizeof(*all));
		if (!all)
			app_die(a, "out of memory");
	}
	MPI_Gather(v, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	if (a->rank)
		return;
	for (i = 0; i < n; i++) {
		v[i] = 0;
		for (r = 0; r < a->nranks; r++)
			v[i] += all[(size_t)r * (size_t)n + (size_t)i];
	}
	free(all);
}

int app_all_ok(struct app *a)
{
	int ok = a->ok, all;

	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	return all;
}

/* ---- the result line ------------------------------------------------- */

static uint64_t fnv1a(const uint64_t *w, int n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	int i, b;

	for (i = 0; i < n; i++)
		for (b = 0; b < 64; b += 8) {
			h ^= (w[i] >> b) & 0xff;
			h *= 0x100000001b3ULL;
		}
	return h;
}

#define NSTAT 6
static const char *const comm_name[] = { "p2p", "coll" };
static const char *const post_name[] = { "late", "early" };

int app_finish(struct app *a, const uint64_t *w, int n)
{
	/* comp, start, wait, barrier, bytes, msgs */
	double mine[NSTAT] = { a->timed.comp, a->timed.start, a->timed.wait,
			       a->timed.barrier, (double)a->timed.bytes,
			       (double)a->timed.msgs };
	double *all = NULL, mean[4] = { 0, 0, 0, 0 }, *v;
	uint64_t bytes = 0, msgs = 0;
	int ok = app_all_ok(a), r, k;

	if (a->rank == 0) {
		all = malloc(NSTAT * sizeof(*all) * (size_t)a->nranks);
		if (!all)
			app_die(a, "out of memory");
	}
	MPI_Gather(mine, NSTAT, MPI_DOUBLE, all, NSTAT, MPI_DOUBLE, 0,
		   MPI_COMM_WORLD);
	if (a->rank == 0) {
		for (r = 0; r < a->nranks; r++) {
			v = all + NSTAT * r;
			for (k = 0; k < 4; k++)
				mean[k] += v[k];
			bytes += (uint64_t)v[4];
			msgs += (uint64_t)v[5];
			if (a->verbose)
				fprintf(stderr, "zcapp: %s rank %d: comp=%.6f "
					"start=%.6f wait=%.6f barrier=%.6f "
					"bytes=%llu msgs=%llu\n", a->d->name,
					r, v[0], v[1], v[2], v[3],
					(unsigned long long)v[4],
					(unsigned long long)v[5]);
		}
		for (k = 0; k < 4; k++)
			mean[k] /= a->nranks;
		/* New keys go after the digest: readers of the older
		 * line find every key where it was. */
		printf("zcapp: app=%s ranks=%d comm=%s post=%s size=%ld "
		       "iters=%ld wall=%.6f comp=%.6f start=%.6f wait=%.6f "
		       "bytes=%llu msgs=%llu check=%s digest=%016llx "
		       "barrier=%.6f%s%s\n",
		       a->d->name, a->nranks,
		       a->persist ? "persist" : comm_name[a->comm],
		       post_name[a->post], a->size, a->iters, a->wall,
		       mean[0], mean[1], mean[2], (unsigned long long)bytes,
		       (unsigned long long)msgs, ok ? "ok" : "fail",
		       (unsigned long long)fnv1a(w, n), mean[3],
		       a->tail[0] ? " " : "", a->tail);
		fflush(stdout);
		if (!ok)
			fprintf(stderr, "%s: the result is wrong (see the "
				"check failed lines above)\n", a->d->name);
		free(all);
	}
	MPI_Finalize();
	return ok ? 0 : 1;
}
