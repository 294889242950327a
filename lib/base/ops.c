// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ops.c - completing a plug-in's ops table at registration (ops.h).
 *
 * Members are copied as bytes: an ops struct holds only pointers (to
 * functions and strings) and plain numbers, and a function pointer and a
 * data pointer have the same size on every platform the library builds
 * for (POSIX requires it of dlsym()).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/ops.h"

_Static_assert(sizeof(void (*)(void)) == sizeof(void *),
	       "ops members are copied as data pointers");

static bool member_set(const void *tab, size_t off)
{
	void *p;

	memcpy(&p, (const char *)tab + off, sizeof(p));
	return p != NULL;
}

int __zcr_ops_set(const char *kind, const char *name, void *out,
		  const void *in, const void *dflt, size_t full,
		  const struct zcr_op *ops, size_t nops)
{
	size_t size, i;

	memcpy(&size, in, sizeof(size));
	if (size < sizeof(size) || size > full) {
		fprintf(stderr, "zcrecv: %s %s: its size %zu is not that of "
			"the ops struct (%zu)\n", kind, name, size, full);
		return -EINVAL;
	}
	memset(out, 0, full);
	memcpy(out, in, size);
	for (i = 0; i < nops; i++) {
		const struct zcr_op *op = &ops[i];
		bool set = op->off + sizeof(void *) <= size &&
			   member_set(in, op->off);

		if (set)
			continue;
		if (op->required) {
			fprintf(stderr, "zcrecv: %s %s: required op %s is "
				"missing\n", kind, name, op->name);
			return -EINVAL;
		}
		memcpy((char *)out + op->off, (const char *)dflt + op->off,
		       sizeof(void *));
	}
	return 0;
}
