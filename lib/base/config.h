/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * config.h - every ZCRECV_* environment variable, declared once
 * (lib/base/config.c): its name, type, accepted range, default and help.
 * Every reader parses through here, so a bad value fails the same way
 * everywhere: one line "zcrecv: NAME=VALUE: expected WHAT" on stderr
 * (unless quiet) and -EINVAL. zcinfo --env lists the table, and zcrecv(7)
 * and Documentation/configuration.md are generated from it.
 *
 * A bottom layer: it calls nothing but the C library, so every layer may
 * use it, and the MPI layer and tracer build it in (tools/mpi.mk), having
 * no access to the library's internal symbols.
 */
#ifndef ZCR_CONFIG_H
#define ZCR_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Hidden: libzcrecv.so keeps its __zcr_* symbols local by its map, and
 * the MPI layer and the tracer, which build this file in, must not export
 * them either.
 */
#pragma GCC visibility push(hidden)

/* The variables, in the order of the table (and of zcinfo --env). */
enum zcr_env {
	/* read by zcr_ctx_create() */
	ZCR_ENV_POLICY,
	ZCR_ENV_BACKEND,
	ZCR_ENV_PREDICTOR,
	ZCR_ENV_QUIET,
	ZCR_ENV_HANDSHAKE_TIMEOUT_MS,
	ZCR_ENV_PROGRESS_TIMEOUT_MS,
	ZCR_ENV_PROGRESS_NICE,
	ZCR_ENV_MAX_CONNS,
	ZCR_ENV_HUGE_ZONES,
	ZCR_ENV_DEFER_MIN,
	ZCR_ENV_JOB_SECRET,
	ZCR_ENV_NO_URING,
	ZCR_ENV_TCP_SPIN_US,
	ZCR_ENV_TCP_DEFER_RATE,
	ZCR_ENV_SHM,
	ZCR_ENV_SHM_PTRACER,
	ZCR_ENV_SHM_FRAG_MAX,
	ZCR_ENV_SHM_SPLIT_MIN,
	ZCR_ENV_SHM_SPIN_US,
	ZCR_ENV_SHM_SPIN_MAX_US,
	ZCR_ENV_VERBS_DEV,
	ZCR_ENV_VERBS_GID,
	ZCR_ENV_VERBS_LAND,
	ZCR_ENV_VERBS_REGCACHE,
	ZCR_ENV_VERBS_SPIN_US,
	ZCR_ENV_VERBS_STATS,
	ZCR_ENV_VERBS_ADVERT,
	ZCR_ENV_PREFETCH,
	ZCR_ENV_PREFETCH_MIN,
	ZCR_ENV_PREFETCH_PAGEVER,
	ZCR_ENV_PREFETCH_SHM_ALL,
	/* read by zcr_ctx_create_job() */
	ZCR_ENV_WIREUP,
	ZCR_ENV_JOB_DIR,
	ZCR_ENV_RANK,
	ZCR_ENV_SIZE,
	ZCR_ENV_JOB_TIMEOUT_MS,
	ZCR_ENV_JOB_HOST,
	ZCR_ENV_JOB_LISTEN,
	/* read by libzcrecv-mpi.so at MPI_Init and MPI_Finalize */
	ZCR_ENV_MPI_WIREUP,
	ZCR_ENV_MPI_PROGRESS_THREAD,
	ZCR_ENV_REPORT,
	ZCR_ENV_MPI_COLL,
	ZCR_ENV_MPI_COLL_ALLTOALL_MIN,
	ZCR_ENV_MPI_COLL_ALLGATHER_MIN,
	ZCR_ENV_MPI_COLL_BCAST_MIN,
	ZCR_ENV_MPI_COLL_GATHER_MIN,
	ZCR_ENV_MPI_COLL_SCATTER_MIN,
	ZCR_ENV_MPI_COLL_REDUCE_MIN,
	ZCR_ENV_MPI_COLL_ALLREDUCE_MIN,
	ZCR_ENV_MPI_COLL_ALLREDUCE_RSAG_MAX,
	ZCR_ENV_MPI_COLL_REDUCE_SCATTER_MIN,
	ZCR_ENV_MPI_COLL_SCAN_MIN,
	ZCR_ENV_MPI_COLL_BARRIER,
	ZCR_ENV_MPI_COLL_HINTS,
	/* read by the tracer libzctrace.so */
	ZCR_ENV_TRACE_DIR,
	ZCR_ENV_COUNT
};

/*
 * How a value is written. The numbers are decimal digits only, no sign,
 * no space, no suffix; ms, us and bytes differ from uint in their unit
 * alone. A choice is one of the entry's choices; a name one of a
 * registry's (predictors, remap backends) that its reader checks; a
 * string any text up to max bytes. An empty value is the same as none.
 */
enum zcr_env_type {
	ZCR_ENV_BOOL,		/* 0 or 1 */
	ZCR_ENV_UINT,
	ZCR_ENV_MS,
	ZCR_ENV_US,
	ZCR_ENV_BYTES,
	ZCR_ENV_CHOICE,
	ZCR_ENV_NAME,
	ZCR_ENV_STRING,
};

/* Who reads a variable, and so what fails on a bad value. */
enum zcr_env_reader {
	ZCR_ENV_CTX,		/* zcr_ctx_create(): -EINVAL */
	ZCR_ENV_JOB,		/* zcr_ctx_create_job(): -EINVAL */
	ZCR_ENV_MPI,		/* libzcrecv-mpi.so: the job stops */
	ZCR_ENV_TRACE,		/* libzctrace.so: no trace is written */
};

/**
 * struct zcr_env_var - one variable of the table
 * @name:	ZCRECV_...
 * @type:	enum zcr_env_type
 * @reader:	enum zcr_env_reader
 * @secret:	never print the value (messages and zcinfo say "...")
 * @min:	numbers: the smallest accepted; strings: the shortest
 * @max:	numbers: the largest accepted; strings and names: the longest
 * @dflt:	the value when unset: the number, the choice's index, the
 *		bool; names and strings: unused (see @dflt_text)
 * @choices:	ZCR_ENV_CHOICE: the accepted words, NULL-terminated
 * @accepts:	ZCR_ENV_NAME: what the reader accepts, for messages
 * @dflt_text:	the default as people read it where it is no fixed value
 *		of the type ("the first device"); NULL: @dflt printed
 * @help:	one sentence: what it does
 */
struct zcr_env_var {
	const char *name;
	enum zcr_env_type type;
	enum zcr_env_reader reader;
	bool secret;
	uint64_t min, max;
	uint64_t dflt;
	const char *const *choices;
	const char *accepts;
	const char *dflt_text;
	const char *help;
};

extern const struct zcr_env_var __zcr_env_vars[ZCR_ENV_COUNT];

/**
 * struct zcr_env_val - a parsed value
 * @set:	the environment gave one (else the rest is the default)
 * @u:		bool, number or choice index
 * @s:		the text as given, also when bad (NULL when unset or
 *		empty); a pointer into the environment, valid until that
 *		is changed
 */
struct zcr_env_val {
	bool set;
	uint64_t u;
	const char *s;
};

/* Every variable of one reader, parsed at once (struct zcr_ctx::env). */
struct zcr_env_set {
	struct zcr_env_val v[ZCR_ENV_COUNT];
};

/*
 * Parse text as the value of variable id into *out (text NULL or empty:
 * unset, the default). Returns 0, or -EINVAL with what the variable
 * accepts written to why (may be NULL) and *out unset, the default.
 * Prints nothing.
 */
int __zcr_env_parse(enum zcr_env id, const char *text,
		    struct zcr_env_val *out, char *why, size_t len);

/*
 * Read variable id from the environment into *out. A bad value: one line
 * on stderr unless quiet, *out the default and -EINVAL.
 */
int __zcr_env_get(enum zcr_env id, bool quiet, struct zcr_env_val *out);

/*
 * Read every variable of reader into set (the others stay unset). Each
 * bad value is said (unless quiet); -EINVAL if there was any.
 */
int __zcr_env_load(struct zcr_env_set *set, enum zcr_env_reader reader,
		   bool quiet);

/*
 * Say that variable id has the bad value text (a name the registry does
 * not know, a rank past the size): "zcrecv: NAME=VALUE: expected WHAT"
 * unless quiet. Returns -EINVAL.
 */
int __zcr_env_bad(enum zcr_env id, const char *text, const char *expected,
		  bool quiet);

/* What variable id accepts ("auto, copy or remap", "0 or 1", ...). */
void __zcr_env_accepts(enum zcr_env id, char *buf, size_t len);

/* Its default as people read it ("10000", "auto", "the first device"). */
void __zcr_env_default(enum zcr_env id, char *buf, size_t len);

/* "bool", "ms", ...: the name of a type, as zcinfo --env prints it. */
const char *__zcr_env_type_name(enum zcr_env_type type);

/* "context", "job", ...: who reads it, as zcinfo --env prints it. */
const char *__zcr_env_reader_name(enum zcr_env_reader reader);

#pragma GCC visibility pop

#endif /* ZCR_CONFIG_H */
