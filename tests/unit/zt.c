// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zt.c - main() of every host unit-test binary: runs each registered test
 * in a forked child with a timeout (ZT_TIMEOUT seconds, default 60) and
 * prints TAP plus a "# Totals:" line. Exit 0 when nothing failed.
 */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zt.h"

#define ZT_MAX_TESTS 512
#define ZT_EXIT_SKIP 4

static struct {
	const char *name;
	zt_fn fn;
	const char *file;
} zt_tests[ZT_MAX_TESTS];
static int zt_count;

void zt_register(const char *name, zt_fn fn, const char *file)
{
	if (zt_count == ZT_MAX_TESTS) {
		fprintf(stderr, "zt: too many tests\n");
		exit(2);
	}
	zt_tests[zt_count].name = name;
	zt_tests[zt_count].fn = fn;
	zt_tests[zt_count].file = file;
	zt_count++;
}

void zt_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stdout, "# %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	_exit(1);
}

void zt_skip(const char *fmt, ...)
{
	va_list ap;

	fputs("# SKIP ", stdout);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	_exit(ZT_EXIT_SKIP);
}

static int zt_run_one(int i, unsigned int timeout)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("zt: fork");
		return 1;
	}
	if (pid == 0) {
		alarm(timeout);
		zt_tests[i].fn();
		fflush(stdout);
#ifdef __SANITIZE_ADDRESS__
		/* _exit skips LeakSanitizer's check at exit: run it here */
		if (__lsan_do_recoverable_leak_check())
			_exit(1);
#endif
		_exit(0);
	}
	if (waitpid(pid, &status, 0) < 0)
		return 1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	printf("# %s: killed by signal %d%s\n", zt_tests[i].name,
	       WTERMSIG(status),
	       WTERMSIG(status) == SIGALRM ? " (timeout)" : "");
	return 1;
}

int main(int argc, char **argv)
{
	unsigned int timeout = 60;
	int pass = 0, fail = 0, skip = 0, n = 0, i;
	const char *t = getenv("ZT_TIMEOUT");

	if (t && atoi(t) > 0)
		timeout = (unsigned int)atoi(t);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	for (i = 0; i < zt_count; i++) {
		int rc;

		if (argc > 1 && strncmp(zt_tests[i].name, argv[1],
					strlen(argv[1])))
			continue;
		n++;
		rc = zt_run_one(i, timeout);
		if (rc == 0) {
			pass++;
			printf("ok %d %s\n", n, zt_tests[i].name);
		} else if (rc == ZT_EXIT_SKIP) {
			skip++;
			printf("ok %d %s # SKIP\n", n, zt_tests[i].name);
		} else {
			fail++;
			printf("not ok %d %s\n", n, zt_tests[i].name);
		}
	}
	printf("1..%d\n", n);
	printf("# Totals: pass:%d fail:%d skip:%d\n", pass, fail, skip);
	return fail ? 1 : 0;
}

size_t zt_resident(const void *p, size_t n, size_t page)
{
	size_t i, k = 0, np = (n + page - 1) / page;
	unsigned char *v = malloc(np);

	if (!v || mincore((void *)p, n, v))
		zt_fail(__FILE__, __LINE__, "mincore of %zu bytes failed", n);
	for (i = 0; i < np; i++)
		k += v[i] & 1;
	free(v);
	return k;
}
