// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * is.c - a parallel bucket sort of integer keys after NAS IS. N keys in
 * [0, N/16) with NAS IS's bell-shaped distribution (the mean of four
 * uniform numbers) are spread evenly over the ranks; every rank owns a
 * range of key values. Each iteration changes two keys (as NAS IS does),
 * counts how many of its keys fall in every rank's range, sends each rank
 * that count and then those keys, and sorts what it received by counting
 * (the keys it kept for itself it reads where they are): every
 * iteration ranks the keys as NAS IS does, the last one also puts them
 * in order.
 * Checks: every iteration, each rank got every key of its range as often
 * as it occurs in all the keys; after the last, every rank's keys are
 * sorted and in its range, so the whole sequence is sorted, and they are
 * a permutation of the keys (the key histograms are equal).
 *   mpirun -np 2 is [--size N] [--iters K] [--comm p2p|coll]
 *                   [--post late|early] [--alloc mpi|malloc] [--paper]
 */
#include "apps.h"

#include <stdio.h>
#include <stdlib.h>

#define TAG_N 51	/* a count */
#define TAG_K 52	/* keys */
#define SEED 0x4953
#define NBUCKET 1024	/* buckets the key ranges are cut from */

static const struct app_desc desc = {
	.name = "is",
	.what = "Bucket sort of N integer keys in [0, N/16) after NAS IS: each\n"
		"iteration every rank sends every other the keys of its range\n"
		"(a count, then the keys) and sorts what it gets by counting.",
	.size_help = "keys (N >= 1024; the keys are below N/16)",
	.iters_help = "sorts",
	.def_size = 1L << 23, .def_iters = 70,
	.paper_size = 1L << 23, .paper_iters = 10,
	.paper_help = "NAS IS class A, 2^23 keys below 2^19, 10 iterations",
	.ranks_help = "any P >= 1 with N/16 >= P (a bucket at least per rank);\n"
		"       key ranges are cut to hold about N/P keys each",
	.comm_help =
		"                   p2p: MPI_Isend/MPI_Irecv of the counts and the keys\n"
		"                   coll: MPI_Alltoall of the counts, MPI_Alltoallv\n"
		"                   of the keys",
	.post_help =
		"                   only with --comm p2p: the receives of the counts\n"
		"                   and of the keys (sized for the most a rank can\n"
		"                   send) are posted before the keys are bucketed",
	.coll_early = 0,
};

static int make_key(long g, long maxkey)
{
	uint64_t s = (uint64_t)g * 4;
	double u = app_unif(SEED, s) + app_unif(SEED, s + 1) +
		   app_unif(SEED, s + 2) + app_unif(SEED, s + 3);
	long key = (long)((double)maxkey / 4 * u);

	return (int)(key < maxkey ? key : maxkey - 1);
}

int main(int argc, char **argv)
{
	struct app a;
	struct app_xchg x;
	long n, k, maxkey, nloc, lo, hi, cap, i, it, nrecv, klo, khi, pos;
	long *hist, *ghist, per, first = 0, total = 0, bad;
	int *keys, *sendbuf, *recvbuf, *sorted, *owner, *scnt, *sdsp, *rcnt;
	int *rdsp, *fill, *kcnt, *range, r, b, prevb, rc, src;
	uint16_t *key_owner;
	size_t slot;
	uint64_t *word;

	app_init(&a, &desc, argc, argv);
	n = a.size;
	k = a.iters;
	maxkey = n / 16;
	if (n < 1024 || maxkey < a.nranks)
		app_reject(&a, "--size %ld: needs N >= 1024 and N/16 >= ranks "
			   "(%d)", n, a.nranks);
	if (a.nranks > UINT16_MAX)
		app_reject(&a, "%d ranks: at most %d", a.nranks, UINT16_MAX);
	if (n > INT32_MAX / 2)
		app_reject(&a, "--size %ld: too large", n);
	if (2 * k + 2 > n / a.nranks || k >= maxkey)
		app_reject(&a, "--iters %ld: at most (N/P - 2)/2 and below "
			   "N/16 (the iterations set keys by their number)",
			   k);
	lo = n * a.rank / a.nranks;
	hi = n * (a.rank + 1) / a.nranks;
	nloc = hi - lo;
	cap = (n + a.nranks - 1) / a.nranks;	/* most keys a rank has */

	keys = malloc((size_t)nloc * sizeof(*keys));
	sendbuf = app_alloc_plain(&a, (size_t)nloc * sizeof(*keys));
	sorted = app_alloc_plain(&a, (size_t)n * sizeof(*keys));
	owner = malloc(NBUCKET * sizeof(*owner));
	range = malloc((size_t)(a.nranks + 1) * sizeof(*range));
	scnt = calloc((size_t)a.nranks, sizeof(*scnt));
	sdsp = calloc((size_t)a.nranks, sizeof(*sdsp));
	rcnt = calloc((size_t)a.nranks, sizeof(*rcnt));
	rdsp = calloc((size_t)a.nranks, sizeof(*rdsp));
	fill = calloc((size_t)a.nranks, sizeof(*fill));
	hist = calloc(NBUCKET, sizeof(*hist));
	ghist = calloc((size_t)maxkey, sizeof(*ghist));
	/* Digest: each iteration's key counts, then the sorted sequence. */
	word = calloc((size_t)k + 1, sizeof(*word));
	if (!keys || !owner || !range || !scnt || !sdsp || !rcnt || !rdsp ||
	    !fill || !hist || !ghist || !word)
		app_die(&a, "out of memory");
	for (i = 0; i < nloc; i++)
		keys[i] = make_key(lo + i, maxkey);

	/*
	 * Key ranges (setup): from the global bucket histogram, each rank
	 * takes the buckets that bring the running total to its share, so
	 * each holds about N/P keys. The keys change little afterwards.
	 */
	for (i = 0; i < nloc; i++)
		hist[(long)keys[i] * NBUCKET / maxkey]++;
	MPI_Allreduce(MPI_IN_PLACE, hist, NBUCKET, MPI_LONG, MPI_SUM,
		      MPI_COMM_WORLD);
	range[0] = 0;
	for (r = 1, b = 0, prevb = 0, per = 0; r < a.nranks; r++) {
		while (b < NBUCKET && per + hist[b] <= n * r / a.nranks)
			per += hist[b++];
		/* Bucket b's first key; every rank gets a bucket at least. */
		if (b <= prevb)
			b = prevb + 1;
		if (b > NBUCKET - (a.nranks - r))
			b = NBUCKET - (a.nranks - r);
		range[r] = (int)(((long)b * maxkey + NBUCKET - 1) / NBUCKET);
		prevb = b;
	}
	range[a.nranks] = (int)maxkey;
	for (r = 0; r < a.nranks; r++)
		if (range[r + 1] <= range[r])
			app_reject(&a, "--size %ld: too few keys for %d ranks",
				   n, a.nranks);
	for (b = 0, r = 0; b < NBUCKET; b++) {
		long first = ((long)b * maxkey + NBUCKET - 1) / NBUCKET;

		while (r < a.nranks - 1 && first >= range[r + 1])
			r++;
		owner[b] = r;
	}
	/* The owner of every key value: one lookup per key per iteration. */
	key_owner = malloc((size_t)maxkey * sizeof(*key_owner));
	if (!key_owner)
		app_die(&a, "out of memory");
	for (i = 0; i < maxkey; i++)
		key_owner[i] = (uint16_t)owner[i * NBUCKET / maxkey];
	klo = range[a.rank];
	khi = range[a.rank + 1];
	/*
	 * How often each key value occurs in all the keys, kept up to date
	 * as the iterations change keys (any rank can make any initial key):
	 * what each iteration must deliver to the owner of each value.
	 */
	for (i = 0; i < nloc; i++)
		ghist[keys[i]]++;
	MPI_Allreduce(MPI_IN_PLACE, ghist, (int)maxkey, MPI_LONG, MPI_SUM,
		      MPI_COMM_WORLD);
	kcnt = calloc((size_t)(khi - klo + 1), sizeof(*kcnt));
	if (!kcnt)
		app_die(&a, "out of memory");

	/*
	 * The receive buffer: one slot per rank, page-aligned, as large as
	 * the most keys that rank has, the same every iteration (the counts
	 * only say how much of it is filled).
	 */
	slot = app_page_round((size_t)cap * sizeof(int)) / sizeof(int);
	recvbuf = app_alloc(&a, slot * (size_t)a.nranks * sizeof(int));
	for (r = 0; r < a.nranks; r++)
		rdsp[r] = (int)(slot * (size_t)r);
	app_xchg_init(&a, &x, 4 * a.nranks);

	app_begin(&a);
	for (it = 1; it <= k; it++) {
		int early = a.comm == APP_P2P && a.post == APP_EARLY;
		const int *from;
		double t0;

		if (early)
			for (r = 0; r < a.nranks; r++) {
				if (r == a.rank)
					continue;
				app_irecv(&a, &x, &rcnt[r], 1, MPI_INT, r,
					  TAG_N, MPI_COMM_WORLD);
				app_irecv(&a, &x, recvbuf + rdsp[r], (int)cap,
					  MPI_INT, r, TAG_K, MPI_COMM_WORLD);
			}
		/* Two keys change, then the keys go to their buckets. */
		t0 = app_now();
		if (it >= lo && it < hi)
			keys[it - lo] = (int)it;
		if (it + k >= lo && it + k < hi)
			keys[it + k - lo] = (int)(maxkey - it);
		ghist[make_key(it, maxkey)]--;
		ghist[it]++;
		ghist[make_key(it + k, maxkey)]--;
		ghist[maxkey - it]++;
		memset(scnt, 0, (size_t)a.nranks * sizeof(*scnt));
		for (i = 0; i < nloc; i++)
			scnt[key_owner[keys[i]]]++;
		for (r = 0, pos = 0; r < a.nranks; r++) {
			sdsp[r] = fill[r] = (int)pos;
			pos += scnt[r];
		}
		for (i = 0; i < nloc; i++) {
			int d = key_owner[keys[i]];

			sendbuf[fill[d]++] = keys[i];
		}
		app_comp(&a, t0);

		if (a.comm == APP_COLL) {
			app_alltoall(&a, scnt, rcnt, 1, MPI_INT,
				     MPI_COMM_WORLD);
			app_alltoallv(&a, sendbuf, scnt, sdsp, recvbuf, rcnt,
				      rdsp, MPI_INT, MPI_COMM_WORLD);
		} else {
			if (!early)
				for (r = 0; r < a.nranks; r++) {
					if (r == a.rank)
						continue;
					app_irecv(&a, &x, &rcnt[r], 1, MPI_INT,
						  r, TAG_N, MPI_COMM_WORLD);
					app_irecv(&a, &x, recvbuf + rdsp[r],
						  (int)cap, MPI_INT, r, TAG_K,
						  MPI_COMM_WORLD);
				}
			for (i = 1; i < a.nranks; i++) {
				int d = (int)((a.rank + i) % a.nranks);

				app_isend(&a, &x, &scnt[d], 1, MPI_INT, d,
					  TAG_N, MPI_COMM_WORLD);
				app_isend(&a, &x, sendbuf + sdsp[d], scnt[d],
					  MPI_INT, d, TAG_K, MPI_COMM_WORLD);
			}
			app_waitall(&a, &x);
			/* The receives came first, in rank order. */
			for (r = 0, i = 0; r < a.nranks; r++) {
				int got;

				if (r == a.rank)
					continue;
				MPI_Get_count(&x.st[2 * i + 1], MPI_INT, &got);
				if (got != rcnt[r])
					app_fail(&a, "iteration %ld: %d keys "
						 "from rank %d announced as %d",
						 it, got, r, rcnt[r]);
				i++;
			}
			rcnt[a.rank] = scnt[a.rank];
		}

		/* Counting sort of the keys of this rank's range. */
		t0 = app_now();
		memset(kcnt, 0, (size_t)(khi - klo + 1) * sizeof(*kcnt));
		for (src = 0, nrecv = 0; src < a.nranks; src++) {
			from = a.comm == APP_P2P && src == a.rank ?
			       sendbuf + sdsp[src] : recvbuf + rdsp[src];
			for (i = 0; i < rcnt[src]; i++)
				kcnt[from[i] - klo + 1]++;
			nrecv += rcnt[src];
		}
		if (nrecv > n)
			app_die(&a, "received %ld keys, more than %ld", nrecv,
				n);
		/*
		 * kcnt[v - klo]: the rank of key v's first copy among this
		 * rank's keys (NAS IS's ranking). The keys are put in their
		 * places in the last iteration, which the checks read.
		 */
		for (i = 1, bad = 0; i <= khi - klo; i++) {
			/* How often key klo + i - 1 came: checked, digested. */
			if (kcnt[i] != ghist[klo + i - 1])
				bad = i;
			if (kcnt[i])
				word[it - 1] += app_mix(((uint64_t)(klo + i - 1)
							 << 32) ^
							(uint64_t)kcnt[i]);
			kcnt[i] += kcnt[i - 1];
		}
		if (bad)
			app_fail(&a, "iteration %ld: key %ld came %ld times, "
				 "it occurs %ld times", it, klo + bad - 1,
				 (long)(kcnt[bad] - kcnt[bad - 1]),
				 ghist[klo + bad - 1]);
		for (src = 0; src < a.nranks && it == k; src++) {
			from = a.comm == APP_P2P && src == a.rank ?
			       sendbuf + sdsp[src] : recvbuf + rdsp[src];
			for (i = 0; i < rcnt[src]; i++)
				sorted[kcnt[from[i] - klo]++] = from[i];
		}
		app_comp(&a, t0);
	}
	app_end(&a);

	/* Sorted, in range, and the same keys: histograms compared. */
	for (i = 0; i < nrecv; i++) {
		if (sorted[i] < klo || sorted[i] >= khi) {
			app_fail(&a, "key %d at %ld is outside [%ld, %ld)",
				 sorted[i], i, klo, khi);
			break;
		}
		if (i && sorted[i] < sorted[i - 1]) {
			app_fail(&a, "keys at %ld and %ld out of order", i - 1,
				 i);
			break;
		}
	}
	for (i = 0; i < nrecv; i++)
		ghist[sorted[i]]--;
	for (i = klo; i < khi; i++)
		if (ghist[i]) {
			app_fail(&a, "key %ld: %ld more in the input than in "
				 "the sorted output", i, ghist[i]);
			break;
		}
	MPI_Exscan(&nrecv, &first, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (a.rank == 0)
		first = 0;	/* MPI_Exscan leaves rank 0's undefined */
	MPI_Allreduce(&nrecv, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (total != n && a.rank == 0)
		app_fail(&a, "%ld keys sorted, %ld expected", total, n);
	/* Digest: each sorted key at its place in the whole sequence. */
	for (i = 0; i < nrecv; i++)
		word[k] += app_elem((uint64_t)(first + i), (double)sorted[i]);
	app_sum_words(&a, word, (int)k + 1);
	if (a.verbose)
		fprintf(stderr, "is: rank %d: keys [%ld, %ld), %ld of them\n",
			a.rank, klo, khi, nrecv);
	app_xchg_free(&x);
	app_free(&a, recvbuf);
	free(keys);
	free(sendbuf);
	free(sorted);
	free(owner);
	free(key_owner);
	free(range);
	free(scnt);
	free(sdsp);
	free(rcnt);
	free(rdsp);
	free(fill);
	free(hist);
	free(ghist);
	free(kcnt);
	rc = app_finish(&a, word, (int)k + 1);
	free(word);
	return rc;
}
