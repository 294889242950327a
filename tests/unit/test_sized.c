// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_sized.c - the _sized entry points that let public structs grow
 * (Documentation/abi-library.md): an older caller's smaller struct, a newer
 * caller's larger one (zero tail accepted, a set unknown field refused
 * with -E2BIG), and stats that never write past the caller's size.
 * Run: build/tests/unit/test_sized [name]
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "zcrecv.h"
#include "zt.h"

#define END(type, m)	(offsetof(type, m) + sizeof(((type *)0)->m))

ZT_TEST(attr_sizes)
{
	struct {
		struct zcr_ctx_attr a;
		unsigned char more[32];
	} big;
	struct zcr_ctx *c;

	memset(&big, 0, sizeof(big));
	big.a.rank = 2;
	big.a.quiet = 1;
	big.a.backend = ZCRECV_BACKEND_COPY;
	ZT_EXPECT_EQ(zcr_ctx_create_sized(&big.a, sizeof(big.a), &c), 0);
	zcr_ctx_destroy(c);
	/* A newer caller whose extra fields are zero (defaults). */
	ZT_EXPECT_EQ(zcr_ctx_create_sized(&big.a, sizeof(big), &c), 0);
	zcr_ctx_destroy(c);
	/* ... and one that sets a field this library does not know. */
	big.more[5] = 1;
	ZT_EXPECT_EQ(zcr_ctx_create_sized(&big.a, sizeof(big), &c), -E2BIG);
	/* Smaller than the first published struct. */
	ZT_EXPECT_EQ(zcr_ctx_create_sized(&big.a, sizeof(int), &c), -EINVAL);
	ZT_EXPECT_EQ(zcr_ctx_create_sized(NULL, 0, &c), 0);
	zcr_ctx_destroy(c);
	/* An older caller: the fields it lacks take defaults. */
	big.a.handshake_timeout_ms = -5;	/* not seen: past its size */
	ZT_EXPECT_EQ(zcr_ctx_create_sized(&big.a,
					  END(struct zcr_ctx_attr, quiet), &c),
		     -EINVAL);
	ZT_EXPECT_EQ(zcr_ctx_create(&big.a, &c), -EINVAL);
}

ZT_TEST(stats_sizes)
{
	struct zcr_ctx_attr a = { .quiet = 1, .backend = ZCRECV_BACKEND_COPY,
				  .staging_bytes = 12345 * 4096ULL };
	struct {
		struct zcr_stats st;
		unsigned char more[32];
	} big;
	unsigned char ff[32];
	struct zcr_ctx *c;
	size_t i;

	ZT_EXPECT_EQ(zcr_ctx_create_sized(&a, sizeof(a), &c), 0);
	memset(ff, 0xff, sizeof(ff));
	/* The 0.1 name writes the 0.1 struct, the sized one what it is told. */
	memset(&big, 0xff, sizeof(big));
	ZT_EXPECT_EQ(zcr_ctx_stats(c, &big.st), 0);
	ZT_EXPECT_EQ(big.st.staging_limit, 12345 * 4096ULL);
	ZT_EXPECT_EQ(memcmp(big.more, ff, sizeof(ff)), 0);
	memset(&big, 0xff, sizeof(big));
	ZT_EXPECT_EQ(zcr_ctx_stats_sized(c, &big.st, sizeof(big)), 0);
	ZT_EXPECT_EQ(big.st.staging_limit, 12345 * 4096ULL);
	for (i = 0; i < sizeof(big.more); i++)
		ZT_EXPECT_EQ(big.more[i], 0);
	ZT_EXPECT_EQ(zcr_ctx_stats_sized(c, &big.st, 8), -EINVAL);
	zcr_ctx_destroy(c);
}
