// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * pingpong.c - a two-rank ping-pong, nonblocking (MPI_Irecv, MPI_Isend,
 * MPI_Waitall) against persistent (MPI_Recv_init and MPI_Send_init once,
 * then MPI_Startall, MPI_Waitall), side by side in one run: for every
 * size, trials alternate the two forms (which goes first alternates too),
 * and the table gives the median time per round trip of each and their
 * ratio, with the range of the per-trial ratios. Run it under a stock MPI
 * and with libzcrecv-mpi preloaded to compare the layers. With --parts P
 * (an MPI-4 MPI: MPICH 4.0) it compares persistent requests against
 * partitioned ones (MPI_Psend_init, MPI_Precv_init, P partitions readied
 * in order with MPI_Pready) the same way. With --overhead it times
 * instead what each message costs in the calls themselves, with nothing
 * to wait for from the peer (see overhead_trial()), both forms alike.
 *   mpirun -np 2 pingpong [--min B] [--max B] [--iters N] [--trials T]
 *                         [--parts P] [--overhead] [--only nb|persist]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXT	99
#define BURST	8	/* --overhead: messages per burst (ring: 64 cells) */

static int rank;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: mpirun -np 2 pingpong [options]\n"
		"Round trips between ranks 0 and 1, nonblocking calls against\n"
		"persistent requests, alternating in one run.\n"
		"\n"
		"Options:\n"
		"  --min B      smallest message in bytes (default 8)\n"
		"  --max B      largest message in bytes (default 4194304);\n"
		"               sizes go up by factors of 4\n"
		"  --iters N    round trips per trial at 8 B (default 4000;\n"
		"               fewer for large messages, at least 20)\n"
		"  --trials T   trials of each form per size, 1 to %d\n"
		"               (default 9)\n"
		"  --parts P    compare persistent requests against partitioned\n"
		"               ones of P partitions instead (MPI-4: MPICH 4.0;\n"
		"               every size a multiple of P)\n"
		"  --overhead   time the calls' own work per message instead\n"
		"               of round trips: rank 0's MPI_Isend + MPI_Wait\n"
		"               (or MPI_Start + MPI_Wait) of messages\n"
		"               into a receiver with its receives posted, and\n"
		"               its MPI_Irecv + MPI_Wait (or MPI_Start +\n"
		"               MPI_Wait) of messages that have arrived already;\n"
		"               bursts of %d, sizes up by factors of 2\n"
		"               (default --max then 65536)\n"
		"  --only F     run only form F (nb or persist) of the round\n"
		"               trips, for per-form profiles (a -DZCR_PROBES\n"
		"               build's step sums); its column alone is timed\n"
		"  -h, --help   this text\n"
		"\n"
		"Output: one table row per size (us per round trip, medians;\n"
		"persist/nb below 1: persistent faster; with --parts part/persist\n"
		"below 1: partitioned faster) and a CSV line per size starting\n"
		"with \"csv,\"; with --overhead ns per message of the send and the\n"
"receive of each form and the ratio of the persistent pair to the\n"
"nonblocking one, with the range of the per-trial ratios.\n", MAXT, BURST);
}

static long number(const char *opt, const char *v, long lo, long hi)
{
	char *end;
	long n = strtol(v, &end, 10);

	if (!*v || *end || n < lo || n > hi) {
		if (rank == 0)
			fprintf(stderr, "pingpong: %s %s: expected a whole "
				"number from %ld to %ld\n", opt, v, lo, hi);
		MPI_Finalize();
		exit(2);
	}
	return n;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum { NB, PERSIST, PART };

#if MPI_VERSION >= 4
/* One partitioned round trip: pr[2] receives, pr[3] sends, parts each. */
static void part_round(MPI_Request *pr, int parts)
{
	if (rank == 1) {
		MPI_Start(&pr[2]);
		MPI_Wait(&pr[2], MPI_STATUS_IGNORE);
	}
	if (rank == 0)
		MPI_Start(&pr[2]);
	MPI_Start(&pr[3]);
	MPI_Pready_range(0, parts - 1, pr[3]);
	if (rank == 0)
		MPI_Waitall(2, &pr[2], MPI_STATUSES_IGNORE);
	else
		MPI_Wait(&pr[3], MPI_STATUS_IGNORE);
}
#endif

/*
 * iters round trips of len bytes of form (pr: persistent requests, and
 * partitioned ones of parts partitions); seconds per round trip.
 */
static double trial(int form, char *sb, char *rb, int len, int iters,
		    MPI_Request *pr, int parts)
{
	int peer = 1 - rank, i;
	MPI_Request r[2];
	double t0;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (i = 0; i < iters; i++) {
#if MPI_VERSION >= 4
		if (form == PART) {
			part_round(pr, parts);
			continue;
		}
#else
		(void)parts;
#endif
		if (form == PERSIST) {
			/* The receive first: pr[0] is it. */
			if (rank == 0) {
				MPI_Startall(2, pr);
				MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
			} else {
				MPI_Start(&pr[0]);
				MPI_Wait(&pr[0], MPI_STATUS_IGNORE);
				MPI_Start(&pr[1]);
				MPI_Wait(&pr[1], MPI_STATUS_IGNORE);
			}
			continue;
		}
		MPI_Irecv(rb, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &r[0]);
		if (rank == 0) {
			MPI_Isend(sb, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
				  &r[1]);
			MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
		} else {
			MPI_Wait(&r[0], MPI_STATUS_IGNORE);
			MPI_Isend(sb, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
				  &r[1]);
			MPI_Wait(&r[1], MPI_STATUS_IGNORE);
		}
	}
	return (MPI_Wtime() - t0) / iters;
}

/*
 * Rank 0's timed part of --overhead: BURST sends (recv 0) or receives
 * (recv 1) of len bytes at buf, each started and waited for; seconds.
 */
static double burst(int form, int recv, char *buf, int len, MPI_Request p)
{
	MPI_Request one;
	double t0 = MPI_Wtime();
	int k;

	for (k = 0; k < BURST; k++) {
		if (form == PERSIST) {
			MPI_Start(&p);
			MPI_Wait(&p, MPI_STATUS_IGNORE);
		} else {
			if (recv)
				MPI_Irecv(buf, len, MPI_BYTE, 1, 4,
					  MPI_COMM_WORLD, &one);
			else
				MPI_Isend(buf, len, MPI_BYTE, 1, 3,
					  MPI_COMM_WORLD, &one);
			MPI_Wait(&one, MPI_STATUS_IGNORE);
		}
	}
	return MPI_Wtime() - t0;
}

/*
 * --overhead: ns per message that rank 0 spends in the calls of one
 * form, with nothing to wait for from the peer; sum (send + receive) is
 * returned, the two parts in *snd and *rcv. Bursts of BURST messages:
 *  - send: rank 1 has posted its BURST receives (so a pulled message is
 *    taken at once); rank 0 times BURST x (MPI_Isend + MPI_Wait), or
 *    MPI_Start + MPI_Wait of one persistent send (ps);
 *  - receive: rank 1 sends BURST messages and then a token behind them
 *    on another tag; once rank 0 has the token every message has
 *    arrived, and rank 0 times BURST x (MPI_Irecv + MPI_Wait), or
 *    MPI_Start + MPI_Wait of one persistent receive (pr).
 * big: BURST * len bytes, rank 1's landing for the send phase.
 */
static double overhead_trial(int form, char *sb, char *rb, char *big,
			     int len, int bursts, MPI_Request ps,
			     MPI_Request pr, double *snd, double *rcv)
{
	MPI_Request r[BURST];
	double ts = 0, tr = 0;
	int b, k;

	for (b = 0; b < bursts; b++) {
		if (rank == 1)
			for (k = 0; k < BURST; k++)
				MPI_Irecv(big + (size_t)k * len, len, MPI_BYTE,
					  0, 3, MPI_COMM_WORLD, &r[k]);
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 0) {
			ts += burst(form, 0, sb, len, ps);
			MPI_Recv(NULL, 0, MPI_BYTE, 1, 5, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			tr += burst(form, 1, rb, len, pr);
		} else {
			MPI_Waitall(BURST, r, MPI_STATUSES_IGNORE);
			for (k = 0; k < BURST; k++)
				MPI_Isend(sb, len, MPI_BYTE, 0, 4,
					  MPI_COMM_WORLD, &r[k]);
			MPI_Send(NULL, 0, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
			MPI_Waitall(BURST, r, MPI_STATUSES_IGNORE);
		}
	}
	*snd = ts * 1e9 / ((double)bursts * BURST);
	*rcv = tr * 1e9 / ((double)bursts * BURST);
	return *snd + *rcv;
}

/* --overhead: one table row per size. */
static void overhead(long min, long max, long iters, long trials)
{
	double s[2][MAXT], r[2][MAXT], tot[2][MAXT], ra[MAXT];
	char *sb = malloc((size_t)max), *rb = malloc((size_t)max);
	char *big = malloc((size_t)max * BURST);
	MPI_Request ps, pr;
	int t, f, bursts;
	long len;

	if (!sb || !rb || !big) {
		fprintf(stderr, "pingpong: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	memset(sb, rank + 1, (size_t)max);
	if (rank == 0)
		printf("%10s %9s %9s %9s %9s %12s %17s\n", "bytes",
		       "nb send", "nb recv", "pe send", "pe recv",
		       "persist/nb", "(trials' range)");
	for (len = min; len <= max; len *= 2) {
		bursts = (int)(iters * 8 / (len > 8 ? len : 8) / BURST);
		if (bursts > iters / BURST)
			bursts = (int)(iters / BURST);
		if (bursts < 4)
			bursts = 4;
		/* Rank 0's; rank 1 makes a pair it never starts. */
		MPI_Send_init(sb, (int)len, MPI_BYTE, 1 - rank, 3,
			      MPI_COMM_WORLD, &ps);
		MPI_Recv_init(rb, (int)len, MPI_BYTE, 1 - rank, 4,
			      MPI_COMM_WORLD, &pr);
		for (f = 0; f < 2; f++)		/* warm-up */
			overhead_trial(f ? PERSIST : NB, sb, rb, big, (int)len,
				       bursts / 10 + 1, ps, pr, &s[f][0],
				       &r[f][0]);
		for (t = 0; t < trials; t++) {
			for (f = 0; f < 2; f++) {
				int g = (t % 2) ^ f;	/* alternate the first */

				tot[g][t] = overhead_trial(g ? PERSIST : NB,
							   sb, rb, big,
							   (int)len, bursts,
							   ps, pr, &s[g][t],
							   &r[g][t]);
			}
			ra[t] = tot[1][t] / tot[0][t];
		}
		MPI_Request_free(&ps);
		MPI_Request_free(&pr);
		if (rank == 0 && rb[0] != 2) {
			fprintf(stderr, "pingpong: %ld B: wrong bytes "
				"received\n", len);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		if (rank)
			continue;
		for (f = 0; f < 2; f++) {
			s[f][0] = median(s[f], (int)trials);
			r[f][0] = median(r[f], (int)trials);
			tot[f][0] = median(tot[f], (int)trials);
		}
		qsort(ra, (size_t)trials, sizeof(*ra), cmp);
		printf("%10ld %9.0f %9.0f %9.0f %9.0f %12.3f %8.3f-%.3f\n",
		       len, s[0][0], r[0][0], s[1][0], r[1][0],
		       tot[1][0] / tot[0][0], ra[0], ra[trials - 1]);
		printf("csv,overhead,%ld,%.1f,%.1f,%.1f,%.1f,%.4f,%.4f,%.4f\n",
		       len, s[0][0], r[0][0], s[1][0], r[1][0],
		       tot[1][0] / tot[0][0], ra[0], ra[trials - 1]);
		fflush(stdout);
	}
	free(sb);
	free(rb);
	free(big);
}

int main(int argc, char **argv)
{
	long min = 8, max = 4194304, iters = 4000, trials = 9, parts = 0, len;
	double nb[MAXT], pe[MAXT], ra[MAXT], mnb, mpe;
	int size, i, t, it, bad, fa = NB, fb = PERSIST, ovh = 0, maxset = 0;
	int only = -1;
	MPI_Request pr[4];
	char *sb, *rb;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			if (rank == 0)
				usage(stdout);
			MPI_Finalize();
			return 0;
		}
		if (!strcmp(argv[i], "--overhead")) {
			ovh = 1;
			continue;
		}
		if (i + 1 >= argc) {
			if (rank == 0) {
				fprintf(stderr, "pingpong: %s: unknown option "
					"or missing value\n", argv[i]);
				usage(stderr);
			}
			MPI_Finalize();
			return 2;
		}
		if (!strcmp(argv[i], "--only")) {
			if (strcmp(argv[i + 1], "nb") &&
			    strcmp(argv[i + 1], "persist")) {
				if (rank == 0)
					fprintf(stderr, "pingpong: --only %s: "
						"expected nb or persist\n",
						argv[i + 1]);
				MPI_Finalize();
				return 2;
			}
			only = strcmp(argv[i + 1], "nb") ? PERSIST : NB;
		} else if (!strcmp(argv[i], "--min"))
			min = number(argv[i], argv[i + 1], 1, 1L << 30);
		else if (!strcmp(argv[i], "--max")) {
			max = number(argv[i], argv[i + 1], 1, 1L << 30);
			maxset = 1;
		}
		else if (!strcmp(argv[i], "--iters"))
			iters = number(argv[i], argv[i + 1], 1, 100000000);
		else if (!strcmp(argv[i], "--trials"))
			trials = number(argv[i], argv[i + 1], 1, MAXT);
		else if (!strcmp(argv[i], "--parts"))
			parts = number(argv[i], argv[i + 1], 1, 1 << 20);
		else {
			if (rank == 0) {
				fprintf(stderr, "pingpong: unknown option "
					"'%s'\n", argv[i]);
				usage(stderr);
			}
			MPI_Finalize();
			return 2;
		}
		i++;
	}
	if (size != 2 || min > max) {
		if (rank == 0)
			fprintf(stderr, "pingpong: %s\n", size != 2 ?
				"needs exactly 2 ranks" : "--min above --max");
		MPI_Finalize();
		return 2;
	}
	if (only >= 0 && (ovh || parts)) {
		if (rank == 0)
			fprintf(stderr, "pingpong: --only: not with %s\n",
				ovh ? "--overhead" : "--parts");
		MPI_Finalize();
		return 2;
	}
	if (ovh) {
		if (!maxset)
			max = 65536;
		if (parts || min > max) {
			if (rank == 0)
				fprintf(stderr, "pingpong: --overhead: %s\n",
					parts ? "not with --parts" :
					"--min above --max");
			MPI_Finalize();
			return 2;
		}
		overhead(min, max, iters, trials);
		MPI_Finalize();
		return 0;
	}
	if (parts) {
#if MPI_VERSION >= 4
		for (len = min; len <= max; len *= 4)
			if (len % parts) {
				if (rank == 0)
					fprintf(stderr, "pingpong: %ld B is not "
						"a multiple of --parts %ld\n",
						len, parts);
				MPI_Finalize();
				return 2;
			}
		fa = PERSIST;
		fb = PART;
#else
		if (rank == 0)
			fprintf(stderr, "pingpong: --parts: this MPI (MPI %d)"
				" has no partitioned calls\n", MPI_VERSION);
		MPI_Finalize();
		return 2;
#endif
	}
	sb = malloc((size_t)max);
	rb = malloc((size_t)max);
	if (!sb || !rb) {
		fprintf(stderr, "pingpong: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	memset(sb, rank + 1, (size_t)max);
	if (rank == 0)
		printf("%10s %12s %12s %12s %17s\n", "bytes",
		       parts ? "persist us" : "nb us",
		       parts ? "part us" : "persist us",
		       parts ? "part/persist" : "persist/nb",
		       "(trials' range)");
	for (len = min; len <= max; len *= 4) {
		it = (int)(iters * 8 / (len > 8 ? len : 8));
		if (it > iters)
			it = (int)iters;
		if (it < 20)
			it = 20;
		MPI_Recv_init(rb, (int)len, MPI_BYTE, 1 - rank, 1,
			      MPI_COMM_WORLD, &pr[0]);
		MPI_Send_init(sb, (int)len, MPI_BYTE, 1 - rank, 1,
			      MPI_COMM_WORLD, &pr[1]);
#if MPI_VERSION >= 4
		if (parts) {
			MPI_Precv_init(rb, (int)parts, len / parts, MPI_BYTE,
				       1 - rank, 2, MPI_COMM_WORLD,
				       MPI_INFO_NULL, &pr[2]);
			MPI_Psend_init(sb, (int)parts, len / parts, MPI_BYTE,
				       1 - rank, 2, MPI_COMM_WORLD,
				       MPI_INFO_NULL, &pr[3]);
		}
#endif
		/* Warm-up: connections, registrations, first faults. */
		trial(only >= 0 ? only : fa, sb, rb, (int)len, it / 10 + 1, pr,
		      (int)parts);
		if (only < 0)
			trial(fb, sb, rb, (int)len, it / 10 + 1, pr,
			      (int)parts);
		for (t = 0; t < trials; t++) {
			/* One form only: the other's column repeats it. */
			if (only >= 0) {
				nb[t] = pe[t] = trial(only, sb, rb, (int)len,
						      it, pr, (int)parts);
			} else if (t % 2) {
				pe[t] = trial(fb, sb, rb, (int)len, it, pr,
					      (int)parts);
				nb[t] = trial(fa, sb, rb, (int)len, it, pr,
					      (int)parts);
			} else {
				nb[t] = trial(fa, sb, rb, (int)len, it, pr,
					      (int)parts);
				pe[t] = trial(fb, sb, rb, (int)len, it, pr,
					      (int)parts);
			}
			ra[t] = pe[t] / nb[t];
		}
		for (i = 0; i < (parts ? 4 : 2); i++)
			MPI_Request_free(&pr[i]);
		/* The received bytes are the peer's. */
		bad = rb[0] != 2 - rank || rb[len - 1] != 2 - rank;
		MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX,
			      MPI_COMM_WORLD);
		if (bad) {
			if (rank == 0)
				fprintf(stderr, "pingpong: %ld B: wrong bytes "
					"received\n", len);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		if (rank)
			continue;
		mnb = median(nb, (int)trials) * 1e6;
		mpe = median(pe, (int)trials) * 1e6;
		qsort(ra, (size_t)trials, sizeof(*ra), cmp);
		printf("%10ld %12.2f %12.2f %12.3f %8.3f-%.3f\n", len, mnb,
		       mpe, mpe / mnb, ra[0], ra[trials - 1]);
		printf("csv,%ld,%.3f,%.3f,%.4f,%.4f,%.4f\n", len, mnb, mpe,
		       mpe / mnb, ra[0], ra[trials - 1]);
		fflush(stdout);
	}
	free(sb);
	free(rb);
	MPI_Finalize();
	return 0;
}
