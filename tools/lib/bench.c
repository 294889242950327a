// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * bench.c - helpers the benchmarks share (bench.h).
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

double zct_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

double zct_now_us(void)
{
	return zct_now_ns() / 1e3;
}

int zct_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double zct_median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), zct_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int zct_parse_list(const char *s, const char *const *names, int n)
{
	int mask = 0, i;

	for (i = 0; i < n; i++)
		if (strstr(s, names[i]))
			mask |= 1 << i;
	return mask;
}

int zct_spinner_start(void)
{
	pid_t parent = getpid(), pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		for (;;)
			poll(NULL, 0, 0);
	}
	return pid < 0 ? -1 : (int)pid;
}

void zct_spinner_stop(int pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}
