// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * plot.c - zcbench's PNG (--png, --plot-only): gnuplot draws the
 * bandwidth of each mode and arrival of the CSV against the size, with
 * the reference lines of ref.c and --ref beside them.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zcbench.h"

/* A gnuplot script: bandwidth against size, one line per mode/arrival. */
int plot(const char *csv, const char *nptcp, const char *png,
	 bool emulated)
{
	static const char *const modes[] = { "copy", "remap", "auto" };
	static const char *const arr[] = { "early", "posted" };
	char line[256], npcsv[300], key[32];
	int m, a, first = 1, have[3][2] = { { 0 } };
	FILE *g, *f;

	if (system("command -v gnuplot >/dev/null 2>&1"))
		return -ENOENT;
	f = fopen(csv, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		for (m = 0; m < 3; m++)
			for (a = 0; a < 2; a++) {
				snprintf(key, sizeof(key), "%s,%s,", modes[m],
					 arr[a]);
				if (!strncmp(line, key, strlen(key)))
					have[m][a] = 1;
			}
	fclose(f);
	g = popen("gnuplot", "w");
	if (!g)
		return -errno;
	fprintf(g, "set terminal pngcairo size 1000,600\nset output '%s'\n"
		"set datafile separator ','\nset logscale x 2\n"
		"set format x '%%.0b%%B'\nset xlabel 'message size (bytes)'\n"
		"set ylabel 'bandwidth (MB/s)'\nset key left top\nset grid\n"
		"set title 'zcbench ping-pong over %s: copy vs remap%s'\n"
		"plot ", png, transport,
		emulated ? " (EMULATED: compare ratios only)" : "");
	for (m = 0; m < 3; m++)
		for (a = 0; a < 2; a++) {
			if (!have[m][a])
				continue;
			fprintf(g, "%s'%s' using (strcol(1) eq '%s' && "
				"strcol(2) eq '%s' ? $3 : 1/0):6 with "
				"linespoints title '%s %s'", first ? "" : ", ",
				csv, modes[m], arr[a], modes[m], arr[a]);
			first = 0;
		}
	snprintf(npcsv, sizeof(npcsv), "%s.csv", nptcp ? nptcp : "");
	if (nptcp && nptcp_csv(nptcp, npcsv) == 0) {
		fprintf(g, "%s'%s' using 1:2 with lines dt 2 lw 2 "
			"title 'NPtcp (reference)'", first ? "" : ", ", npcsv);
		first = 0;
	}
	snprintf(npcsv, sizeof(npcsv), "%s.csv", ompi_ref ? ompi_ref : "");
	if (ompi_ref && nptcp_csv(ompi_ref, npcsv) == 0) {
		fprintf(g, "%s'%s' using 1:2 with lines dt 3 lw 2 "
			"title 'NPopenmpi, shared memory (reference)'",
			first ? "" : ", ", npcsv);
		first = 0;
	}
	for (m = 0; m < nrefs; m++) {
		fprintf(g, "%s'%s' using 1:2 with lines dt %d lw 2 "
			"title '%s (reference)' noenhanced",
			first ? "" : ", ", refs[m].csv, 4 + m, refs[m].title);
		first = 0;
	}
	fprintf(g, "\n");
	return pclose(g) ? -EIO : 0;
}
