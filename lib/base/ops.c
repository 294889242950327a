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

int __zcr_ops_set(const struct zcr_kind *k, const char *name, void *out,
		  const void *in)
{
	const char *own;
	size_t size, i;

	memcpy(&size, in, sizeof(size));
	if (size < sizeof(size) || size > k->full) {
		fprintf(stderr, "zcrecv: %s %s: its size %zu is not that of "
			"the ops struct (%zu)\n", k->kind, name, size, k->full);
		return -EINVAL;
	}
	memset(out, 0, k->full);
	memcpy(out, in, size);
	for (i = 0; i < k->nops; i++) {
		const struct zcr_op *op = &k->ops[i];
		bool set = op->off + sizeof(void *) <= size &&
			   member_set(in, op->off);

		if (set)
			continue;
		if (op->required) {
			fprintf(stderr, "zcrecv: %s %s: required op %s is "
				"missing\n", k->kind, name, op->name);
			return -EINVAL;
		}
		memcpy((char *)out + op->off, (const char *)k->dflt + op->off,
		       sizeof(void *));
	}
	memcpy(&own, (const char *)out + sizeof(size), sizeof(own));
	if (k->named && (!own || strcmp(own, name))) {
		fprintf(stderr, "zcrecv: %s %s: its name is \"%s\"; it must "
			"be its registry line's\n", k->kind, name,
			own ? own : "");
		return -EINVAL;
	}
	return 0;
}

int __zcr_registry_complete(const struct zcr_kind *k,
			    const struct zcr_reg_entry *e, size_t n)
{
	int ret = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if (__zcr_ops_set(k, e[i].name, e[i].ops, e[i].def))
			ret = -EINVAL;
	return ret;
}
