/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ops.h - the one registry convention of libzcrecv's three kinds of
 * plug-in: transports (lib/transport/transport.c), remap backends
 * (lib/remap/engine.c) and predictors (lib/predict/predict.c).
 *
 * A plug-in defines its ops table with its kind's macro, which names the
 * table NAME_def and starts it with .size, the size of the ops struct it
 * was built with:
 *
 *	ZCR_TRANSPORT(tcp) = { .size = sizeof(struct zcr_transport_ops), ... };
 *
 * and its registry lists it on one line of an X-macro list, which also
 * declares it: no extern to add anywhere. At the first context the registry
 * copies every table into the one the library calls (the symbol without
 * _def: __zcr_transport_tcp, __zcr_remap_kmod, __zcr_pred_cycle_ops),
 * through __zcr_ops_set(): a required member that is missing fails the
 * registration with a message naming the plug-in and the member, a
 * missing optional op is the kind's default (as rdma-core's
 * verbs_set_ops() fills a provider's table over dummy_ops.c), so the
 * library calls every op without looking for NULL. Members past .size
 * are absent, so an ops struct can grow.
 */
#ifndef ZCR_OPS_H
#define ZCR_OPS_H

#include <stdbool.h>
#include <stddef.h>

/**
 * struct zcr_op - one member of an ops table, as its registry checks it
 * @name:	the member's name, for the message
 * @off:	offsetof() the member (a pointer: a function or a string)
 * @required:	registration fails without it; else it has a default
 */
struct zcr_op {
	const char *name;
	size_t off;
	bool required;
};

#define ZCR_OP(type, member, req) \
	{ #member, offsetof(type, member), req }

/**
 * struct zcr_kind - what a registry knows of its kind of plug-in
 * @kind:	"transport", "remap backend", "predictor": for messages
 * @full:	sizeof the kind's ops struct
 * @dflt:	the kind's defaults, @full bytes
 * @ops:	the pointer members of the struct, @nops of them
 * @nops:	entries of @ops
 * @named:	a table's name member (its second, after size) must be its
 *		registry line's NAME
 */
struct zcr_kind {
	const char *kind;
	size_t full;
	const void *dflt;
	const struct zcr_op *ops;
	size_t nops;
	bool named;
};

/**
 * struct zcr_reg_entry - one line X(NAME) of a registry
 * @name:	NAME
 * @def:	the plug-in's table, NAME_def
 * @ops:	the completed table the library calls
 */
struct zcr_reg_entry {
	const char *name;
	const void *def;
	void *ops;
};

/**
 * __zcr_ops_set() - complete one registered ops table
 * @k:		its kind
 * @name:	the plug-in's name (its registry line), for the message
 * @out:	the table the library calls, @k->full bytes
 * @in:	the plug-in's table; its first member is its size_t size
 *
 * Copies the first min(size, @k->full) bytes of @in to @out (the rest
 * zero), then every pointer member of @k->ops that is NULL or past size
 * from @k->dflt; a required one missing instead fails. Prints the reason
 * on stderr ("zcrecv: transport tcp: required op send is missing") when it
 * fails: a table that fails is a defect of the build, not of a run.
 *
 * Return: 0, or -EINVAL (size smaller than a size_t or larger than
 * @k->full, a required member missing, a name unlike @name where
 * @k->named).
 */
int __zcr_ops_set(const struct zcr_kind *k, const char *name, void *out,
		  const void *in);

/**
 * __zcr_registry_complete() - complete every table of a registry
 * @k:		the registry's kind
 * @e:		its lines, @n of them
 * @n:		entries of @e
 *
 * Return: 0, or -EINVAL if any table failed (each one said why).
 */
int __zcr_registry_complete(const struct zcr_kind *k,
			    const struct zcr_reg_entry *e, size_t n);

#endif /* ZCR_OPS_H */
