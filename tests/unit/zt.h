/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * zt.h - the host unit-test framework of zcrecv.
 *
 * A test file defines tests with ZT_TEST(name) { ... } and checks with
 * ZT_ASSERT / ZT_EXPECT_EQ; zt.c provides main(). Each test runs in a child
 * process with a timeout, so a crash or hang fails that test only. Output is
 * TAP ("ok N name", "not ok N name", "# SKIP") and ends with the same
 * "# Totals: pass:N fail:N skip:N" line as the kselftest harness, which
 * tools/run-tests.sh adds up.
 *
 * Run one binary with a test name (or a prefix) as argument to run only
 * those tests.
 */
#ifndef ZT_H
#define ZT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*zt_fn)(void);
void zt_register(const char *name, zt_fn fn, const char *file);
void zt_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
void zt_skip(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

#define ZT_TEST(name)							\
	static void zt_test_##name(void);				\
	__attribute__((constructor)) static void zt_reg_##name(void)	\
	{								\
		zt_register(#name, zt_test_##name, __FILE__);		\
	}								\
	static void zt_test_##name(void)

#define ZT_ASSERT(cond)							\
	do {								\
		if (!(cond))						\
			zt_fail(__FILE__, __LINE__, "assertion failed: %s", \
				#cond);					\
	} while (0)

#define ZT_ASSERT_MSG(cond, ...)					\
	do {								\
		if (!(cond))						\
			zt_fail(__FILE__, __LINE__, __VA_ARGS__);	\
	} while (0)

#define ZT_EXPECT_EQ(a, b)						\
	do {								\
		long long zt_a = (long long)(a), zt_b = (long long)(b);	\
		if (zt_a != zt_b)					\
			zt_fail(__FILE__, __LINE__, "%s == %lld, expected %s == %lld", \
				#a, zt_a, #b, zt_b);			\
	} while (0)

#define ZT_SKIP(...) zt_skip(__VA_ARGS__)

/* How many pages of [p, p + n) are in memory (mincore(2)); p page aligned. */
size_t zt_resident(const void *p, size_t n, size_t page);

/* A timed test cannot hold under a sanitizer's slowdown: it skips there. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define ZT_SKIP_IF_SANITIZED() \
	ZT_SKIP("timed; a sanitizer slows every step down")
#else
#define ZT_SKIP_IF_SANITIZED() do { } while (0)
#endif

#endif /* ZT_H */
