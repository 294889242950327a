// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * latesend.c - the late sender: rank 0 waits in MPI_Recv while rank 1
 * computes, then rewrites part of its send buffer and sends it. The time
 * that counts is from rank 1's MPI_Send call to the end of rank 0's
 * MPI_Recv: the transfer the receiver still waits for once the sender is
 * ready. With message prefetching (ZCRECV_PREFETCH=1 under
 * libzcrecv-mpi), the part of the buffer unchanged since the last send
 * moves while the sender computes, so that time falls with the unchanged
 * fraction; without it, it does not. Every message is checked byte for
 * byte. The two ranks' clocks are related by ping-pongs before the
 * measurement (the offset from the fastest round trip), so the ranks may
 * run on different hosts.
 *   mpirun -np 2 latesend [--size B] [--iters N] [--comp-ms M]
 *                         [--unchanged F,F,...]
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXF	16
#define MAXIT	1000
#define WARMUP	10	/* untimed rounds per fraction: predictions settle */
#define PG	4096

static int rank;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: mpirun -np 2 latesend [options]\n"
		"Rank 1 computes, rewrites part of its buffer and sends it to\n"
		"rank 0, which waits in MPI_Recv meanwhile; the time from the\n"
		"send call to the receive's completion, per fraction of the\n"
		"buffer left unchanged since the last send.\n"
		"\n"
		"Options:\n"
		"  --size B        message size in bytes, 4096 to 268435456\n"
		"                  (default 4194304)\n"
		"  --iters N       timed rounds per fraction, 1 to %d\n"
		"                  (default 20; %d untimed ones before)\n"
		"  --comp-ms M     the sender's computation per round, 0 to\n"
		"                  10000 ms (default 20)\n"
		"  --unchanged L   fractions unchanged, comma-separated, each 0\n"
		"                  to 1 (default 0,0.25,0.5,0.75,1)\n"
		"  -h, --help      this text\n"
		"\n"
		"Output: a table (microseconds: median, min, max of the send to\n"
		"completion time; the receiver's whole wait) and a line per\n"
		"fraction starting with \"csv,\". Exit 1 if a byte was wrong.\n",
		MAXIT, WARMUP);
}

static void die_arg(const char *opt, const char *v, const char *what)
{
	if (rank == 0)
		fprintf(stderr, "latesend: %s %s: expected %s\n", opt, v, what);
	MPI_Finalize();
	exit(2);
}

static long number(const char *opt, const char *v, long lo, long hi)
{
	char *end;
	long n = strtol(v, &end, 10);

	if (!*v || *end || n < lo || n > hi) {
		char what[96];

		snprintf(what, sizeof(what), "a whole number from %ld to %ld",
			 lo, hi);
		die_arg(opt, v, what);
	}
	return n;
}

static int fractions(const char *v, double *f)
{
	char *copy = strdup(v), *save = NULL, *tok;
	int n = 0;

	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *end;
		double x = strtod(tok, &end);

		if (!*tok || *end || !(x >= 0 && x <= 1) || n == MAXF)
			die_arg("--unchanged", v, "up to 16 fractions from 0 "
				"to 1, comma-separated");
		f[n++] = x;
	}
	free(copy);
	if (!n)
		die_arg("--unchanged", v, "at least one fraction");
	return n;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Page k of a buffer of len bytes, written with stamp: one byte value. */
static unsigned char value(long stamp, size_t k)
{
	return (unsigned char)(stamp * 131 + (long)k * 7 + 1);
}

static void write_pages(unsigned char *b, size_t len, size_t from,
			long stamp)
{
	size_t k;

	for (k = from; k * PG < len; k++) {
		size_t n = len - k * PG < PG ? len - k * PG : PG;

		memset(b + k * PG, value(stamp, k), n);
	}
}

/* Bytes of b that are not what pages [0, cut) at s0, the rest at s. */
static long wrong(const unsigned char *b, size_t len, size_t cut, long s0,
		  long s)
{
	long bad = 0;
	size_t i;

	for (i = 0; i < len; i++)
		bad += b[i] != value(i / PG < cut ? s0 : s, i / PG);
	return bad;
}

/*
 * The peer's clock minus ours, from the fastest of 50 round trips (rank 0
 * asks, rank 1 answers with its time).
 */
static double clock_offset(void)
{
	double best = 1e9, off = 0, t0, t1, peer;
	int i;

	for (i = 0; i < 50; i++) {
		if (rank == 0) {
			t0 = now();
			MPI_Send(&t0, 1, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD);
			MPI_Recv(&peer, 1, MPI_DOUBLE, 1, 9, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			t1 = now();
			if (t1 - t0 < best) {
				best = t1 - t0;
				off = peer - (t0 + t1) / 2;
			}
		} else {
			MPI_Recv(&t0, 1, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			t1 = now();
			MPI_Send(&t1, 1, MPI_DOUBLE, 0, 9, MPI_COMM_WORLD);
		}
	}
	return off;
}

static void spin(double sec)
{
	double end = now() + sec;

	while (now() < end)
		;
}

int main(int argc, char **argv)
{
	double f[MAXF] = { 0, 0.25, 0.5, 0.75, 1 };
	double lat[MAXIT], wait[MAXIT], off = 0, comp;
	long size = 4194304, iters = 20, comp_ms = 20, stamp = 0, bad = 0;
	int nf = 5, size_ok, i, j, a;
	unsigned char *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size_ok);
	for (a = 1; a < argc; a++) {
		const char *o = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;

		if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
			if (rank == 0)
				usage(stdout);
			MPI_Finalize();
			return 0;
		}
		if (!v || (strcmp(o, "--size") && strcmp(o, "--iters") &&
			   strcmp(o, "--comp-ms") && strcmp(o, "--unchanged"))) {
			if (rank == 0) {
				fprintf(stderr, "latesend: unknown option or "
					"missing value: %s\n", o);
				usage(stderr);
			}
			MPI_Finalize();
			return 2;
		}
		if (!strcmp(o, "--size"))
			size = number(o, v, 4096, 268435456);
		else if (!strcmp(o, "--iters"))
			iters = number(o, v, 1, MAXIT);
		else if (!strcmp(o, "--comp-ms"))
			comp_ms = number(o, v, 0, 10000);
		else
			nf = fractions(v, f);
		a++;
	}
	if (size_ok != 2) {
		if (rank == 0)
			fprintf(stderr, "latesend: runs on 2 ranks, not %d\n",
				size_ok);
		MPI_Finalize();
		return 2;
	}
	comp = (double)comp_ms / 1000;
	buf = aligned_alloc(PG, ((size_t)size + PG - 1) / PG * PG);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	off = clock_offset();
	if (rank == 0)
		printf("# latesend: %ld B, sender computes %ld ms, %ld rounds "
		       "per fraction (%d untimed first)\n"
		       "%10s %12s %12s %12s %12s\n", size, comp_ms, iters,
		       WARMUP, "unchanged", "median_us", "min_us", "max_us",
		       "wait_us");
	for (j = 0; j < nf; j++) {
		size_t np = ((size_t)size + PG - 1) / PG;
		size_t cut = (size_t)floor(f[j] * (double)np);
		long s0 = ++stamp;

		if (rank == 1)
			write_pages(buf, (size_t)size, 0, s0);
		for (i = -WARMUP; i < iters; i++) {
			double t_send, t_post, t_done;

			stamp++;
			MPI_Barrier(MPI_COMM_WORLD);
			if (rank == 1) {
				spin(comp);
				/* The changing part, written at the end. */
				write_pages(buf, (size_t)size, cut, stamp);
				t_send = now();
				MPI_Send(buf, (int)size, MPI_BYTE, 0, 1,
					 MPI_COMM_WORLD);
				MPI_Send(&t_send, 1, MPI_DOUBLE, 0, 2,
					 MPI_COMM_WORLD);
				continue;
			}
			t_post = now();
			MPI_Recv(buf, (int)size, MPI_BYTE, 1, 1,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			t_done = now();
			MPI_Recv(&t_send, 1, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			bad += wrong(buf, (size_t)size, cut, s0, stamp);
			if (i >= 0) {
				lat[i] = t_done - (t_send - off);
				wait[i] = t_done - t_post;
			}
		}
		if (rank == 0) {
			double w;

			qsort(lat, (size_t)iters, sizeof(lat[0]), cmp);
			qsort(wait, (size_t)iters, sizeof(wait[0]), cmp);
			w = wait[iters / 2];
			printf("%10.2f %12.1f %12.1f %12.1f %12.1f\n", f[j],
			       lat[iters / 2] * 1e6, lat[0] * 1e6,
			       lat[iters - 1] * 1e6, w * 1e6);
			printf("csv,%.4f,%.1f,%.1f,%.1f,%.1f\n", f[j],
			       lat[iters / 2] * 1e6, lat[0] * 1e6,
			       lat[iters - 1] * 1e6, w * 1e6);
			fflush(stdout);
		}
	}
	if (rank == 0 && bad)
		fprintf(stderr, "latesend: %ld bytes received wrong\n", bad);
	MPI_Bcast(&bad, 1, MPI_LONG, 0, MPI_COMM_WORLD);
	free(buf);
	MPI_Finalize();
	return bad ? 1 : 0;
}
