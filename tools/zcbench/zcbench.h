/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * zcbench.h - what the files of zcbench share: tools/zcbench.c (the
 * ping-pong, its table, main()), ref.c (the reference programs run beside
 * it) and plot.c (the gnuplot PNG), here in tools/zcbench/.
 */
#ifndef ZCBENCH_H
#define ZCBENCH_H

#include <stdbool.h>
#include <stdint.h>

/* zcbench.c */

/* Reference lines of the plot: CSV files of bytes,MB/s. */
struct ref_line {
	const char *csv, *title;
};

extern struct ref_line refs[8];
extern int nrefs;
extern const char *transport;	/* --transport */

void die(const char *what, int err);
void unbind(void);
void rebind(void);

/* ref.c */

/* What main() asks of the reference runs after the ping-pong. */
struct ref_opts {
	uint64_t min, max;
	unsigned int iters;		/* --iters, for perftest */
	int nptcp, npompi, perftest, emulated;
	const char *csv;		/* --csv: "-" copies perftest's out */
	const char *npfile;		/* --nptcp-file, or NULL: a temporary */
	const char *ompifile;		/* --npompi-file, or NULL */
	const char *layer;		/* --npopenmpi-layer, or NULL */
};

extern const char *ompi_ref;	/* NPopenmpi's output for the plot */

void npompi_before(uint64_t min, uint64_t max);
double npompi_at(uint64_t size);
int nptcp_csv(const char *np, const char *out);
const char *run_refs(const struct ref_opts *r);

/* plot.c */
int plot(const char *csv, const char *nptcp, const char *png, bool emulated);

#endif
