// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * config.c - the table of ZCRECV_* environment variables and the one
 * parser they all go through (config.h). Defaults live here and nowhere
 * else; the code that reads a variable says why its default is what it is.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"

/*
 * Below these sizes libzcrecv-mpi.so leaves a collective to the MPI: the
 * crossovers `zcmpi_coll bench` measured against stock Open MPI 4.1 on a
 * 2-core host, 4 ranks, shared memory (Documentation/mpi.md,
 * "Collectives"). Alltoall: 1.17x slower at 1 MiB parts, faster at 4 MiB;
 * allgather and bcast: slower at 256 KiB, faster at 1 MiB.
 */
#define COLL_ALLTOALL_MIN	(2 << 20)
#define COLL_ALLGATHER_MIN	(1 << 20)
#define COLL_BCAST_MIN		(1 << 20)
/*
 * Gather and scatter (2026-11-28, 2 and 4 ranks, parts): gather 1.5x
 * slower at 64 KiB, 0.81x at 256 KiB and faster above; scatter 1.2-1.6x
 * slower at 64 and 256 KiB, 0.83x at 1 MiB. The reductions were slower
 * than stock Open MPI at every vector size measured with 4 ranks (1.2 to
 * 7x, 1 KiB to 16 MiB): off unless asked for.
 */
#define COLL_GATHER_MIN		(256 << 10)
#define COLL_SCATTER_MIN	(1 << 20)
#define COLL_REDUCE_MIN		(1ULL << 62)
#define COLL_ALLREDUCE_MIN	(1ULL << 62)
/*
 * Rabenseifner's allreduce against the ring, 4 ranks on the 2-core host
 * (2026-11-28, Documentation/mpi.md, "Rabenseifner's allreduce"): 0.53
 * and 0.80 of the ring's time at 4 and 16 KiB vectors, 1.04 at 64 KiB,
 * 1.1-1.7 above.
 */
#define COLL_ALLREDUCE_RSAG_MAX	(32 << 10)
#define COLL_REDUCE_SCATTER_MIN	(1ULL << 62)
/*
 * Scan and Exscan (2026-11-28, 2 and 4 ranks, vectors of 2 KiB to 16 MiB
 * of doubles): 1.1 to 24x slower than stock Open MPI: off too.
 */
#define COLL_SCAN_MIN		(1ULL << 62)

/* The longest spin any variable may ask for: one second. */
#define SPIN_MAX_US	1000000

static const char *const policies[] = { "auto", "copy", "remap", NULL };
static const char *const ptracers[] = { "any", "peer", NULL };
static const char *const lands[] = { "read", "copy", NULL };
static const char *const wireups[] = { "auto", "pmix", "env", NULL };
/* In the order of enum zcr_pv_mech (lib/pagever/pagever.h). */
static const char *const pagevers[] = { "auto", "uffd-async", "uffd-sync",
					"mprotect", "hash", "kmod", NULL };
static const char *const mpi_wireups[] = { "auto", "pmix", "mpi", "env",
					   NULL };

#define BOOL(id, rd, def, h)						\
	[ZCR_ENV_##id] = { .name = "ZCRECV_" #id, .type = ZCR_ENV_BOOL,	\
			   .reader = rd, .max = 1, .dflt = def, .help = h }
#define NUM(id, t, rd, lo, hi, def, h)					\
	[ZCR_ENV_##id] = { .name = "ZCRECV_" #id, .type = t,		\
			   .reader = rd, .min = lo, .max = hi, .dflt = def, \
			   .help = h }
#define CHOICE(id, rd, list, def, h)					\
	[ZCR_ENV_##id] = { .name = "ZCRECV_" #id, .type = ZCR_ENV_CHOICE, \
			   .reader = rd, .choices = list, .dflt = def,	\
			   .help = h }
#define STR(id, rd, hi, def, h)						\
	[ZCR_ENV_##id] = { .name = "ZCRECV_" #id, .type = ZCR_ENV_STRING, \
			   .reader = rd, .max = hi, .dflt_text = def,	\
			   .help = h }

const struct zcr_env_var __zcr_env_vars[ZCR_ENV_COUNT] = {
	CHOICE(POLICY, ZCR_ENV_CTX, policies, 0,
	       "The landing policy: remap where it measured cheaper per size "
	       "class (auto), never, or at every correct prediction; "
	       "overrides zcr_ctx_attr.policy."),
	[ZCR_ENV_BACKEND] = {
		.name = "ZCRECV_BACKEND", .type = ZCR_ENV_NAME,
		.reader = ZCR_ENV_CTX, .max = 31,
		.accepts = "auto, kmod, uffd-move or copy",
		.dflt_text = "auto",
		.help = "The remap backend (uffd names uffd-move too); one "
			"that is not available fails with -EOPNOTSUPP; "
			"overrides zcr_ctx_attr.backend.",
	},
	[ZCR_ENV_PREDICTOR] = {
		.name = "ZCRECV_PREDICTOR", .type = ZCR_ENV_NAME,
		.reader = ZCR_ENV_CTX, .max = 31,
		.accepts = "a predictor: cycle, tag, tagcycle, "
			   "tagbettercycle, lru, fifo, lfu, graph, dpd or "
			   "select",
		.dflt_text = "select",
		.help = "The predictor of receive buffers, used when "
			"zcr_ctx_attr.predictor is NULL.",
	},
	BOOL(QUIET, ZCR_ENV_CTX, 0,
	     "1: the library prints nothing on stderr; 0: it prints "
	     "connection errors, whatever zcr_ctx_attr.quiet says."),
	NUM(HANDSHAKE_TIMEOUT_MS, ZCR_ENV_MS, ZCR_ENV_CTX, 1, INT_MAX, 10000,
	    "How long a new connection may take to complete its handshake; "
	    "overrides zcr_ctx_attr.handshake_timeout_ms."),
	NUM(PROGRESS_TIMEOUT_MS, ZCR_ENV_MS, ZCR_ENV_CTX, 1, INT_MAX, 30000,
	    "A message in flight must bring 64 KiB or its end within this "
	    "time, else its connection is closed; overrides "
	    "zcr_ctx_attr.progress_timeout_ms."),
	NUM(PROGRESS_NICE, ZCR_ENV_UINT, ZCR_ENV_CTX, 0, 19, 0,
	    "The progress thread runs this much nicer than its process "
	    "(at most 19): it then takes a processor its application "
	    "computes on only in proportion, and all of it while the "
	    "application waits; 0: as nice as the process."),
	NUM(MAX_CONNS, ZCR_ENV_UINT, ZCR_ENV_CTX, 1, INT_MAX, 1024,
	    "The most connections a context holds at once; overrides "
	    "zcr_ctx_attr.max_conns."),
	BOOL(HUGE_ZONES, ZCR_ENV_CTX, 1,
	     "kmod backend: zcr_mem_alloc blocks of 1 MiB or more and "
	     "staging slots of 2 MiB or more are huge zones, exchanged in "
	     "2 MiB units; 0: 4 KiB zones only."),
	NUM(DEFER_MIN, ZCR_ENV_BYTES, ZCR_ENV_CTX, 0, 1ULL << 62, 65536,
	    "shm: an early message of this size or more that would only "
	    "be copied out of staging waits in its sender and lands "
	    "straight into its receive (TCP: see ZCRECV_TCP_DEFER_RATE); "
	    "0: every early message is staged."),
	[ZCR_ENV_JOB_SECRET] = {
		.name = "ZCRECV_JOB_SECRET", .type = ZCR_ENV_STRING,
		.reader = ZCR_ENV_CTX, .secret = true, .max = 256,
		.dflt_text = "none",
		.help = "The job secret every connection's handshake proves, "
			"used when zcr_ctx_attr.job_secret is NULL; without "
			"one a context listens on loopback only.",
	},
	BOOL(NO_URING, ZCR_ENV_CTX, 0,
	     "1: the TCP transport receives with recv(2) only, without "
	     "io_uring batching."),
	NUM(TCP_SPIN_US, ZCR_ENV_US, ZCR_ENV_CTX, 0, SPIN_MAX_US, 2000,
	    "A thread waiting with a TCP connection open polls this long "
	    "before it sleeps in poll(2); 0: it sleeps at once."),
	NUM(TCP_DEFER_RATE, ZCR_ENV_UINT, ZCR_ENV_CTX, 0, 1000000, 250,
	    "TCP: once a connection delivered a payload of 1 MiB or more at "
	    "this many MB/s or faster, its large early payloads wait in the "
	    "socket for their receive (every 8th is staged and timed "
	    "again); 0: always staged."),
	BOOL(SHM, ZCR_ENV_CTX, 0,
	     "1: offer and accept the shared-memory transport to peers on "
	     "this host, at each connection's handshake."),
	CHOICE(SHM_PTRACER, ZCR_ENV_CTX, ptracers, 0,
	       "Under Yama ptrace_scope 1, whom this process lets read its "
	       "memory for shm pulls: any process of its user, or the first "
	       "peer only; read at each handshake."),
	NUM(SHM_FRAG_MAX, ZCR_ENV_BYTES, ZCR_ENV_CTX, 0, UINT64_MAX, 32768,
	    "shm: messages up to this size go eager over several cells (at "
	    "most 16, 263104 bytes) instead of being pulled; 0: one cell."),
	NUM(SHM_SPLIT_MIN, ZCR_ENV_BYTES, ZCR_ENV_CTX, 0, UINT64_MAX, 32768,
	    "shm: pulls of at least this size are shared with a sender "
	    "waiting in the library; 0: never."),
	NUM(SHM_SPIN_US, ZCR_ENV_US, ZCR_ENV_CTX, 0, SPIN_MAX_US, 200,
	    "shm: a waiting thread looks at the rings this long (plus the "
	    "time its announced sends take) before it sleeps; 0: at once."),
	NUM(SHM_SPIN_MAX_US, ZCR_ENV_US, ZCR_ENV_CTX, 0, SPIN_MAX_US, 5000,
	    "shm: after short waits for peers, look up to 1.5 times the "
	    "recent peak wait, at most this long; 0: only ZCRECV_SHM_SPIN_US."),
	STR(VERBS_DEV, ZCR_ENV_CTX, 63, "the first device",
	    "The RDMA device of the verbs transport."),
	[ZCR_ENV_VERBS_GID] = {
		.name = "ZCRECV_VERBS_GID", .type = ZCR_ENV_UINT,
		.reader = ZCR_ENV_CTX, .max = INT_MAX,
		.dflt_text = "the first IPv4-mapped GID, else 0",
		.help = "The GID index of the verbs transport's port.",
	},
	CHOICE(VERBS_LAND, ZCR_ENV_CTX, lands, 0,
	       "verbs: an early message is READ straight into its staging "
	       "slot, or into a registered bounce buffer and copied."),
	NUM(VERBS_REGCACHE, ZCR_ENV_UINT, ZCR_ENV_CTX, 0, 1024, 0,
	    "verbs: registrations of send and receive buffers kept per "
	    "context; a cached one pins its buffer (no remap into it)."),
	NUM(VERBS_SPIN_US, ZCR_ENV_US, ZCR_ENV_CTX, 0, SPIN_MAX_US, 200,
	    "verbs: a waiting thread looks at the completion queues this "
	    "long before it sleeps; 0: at once."),
	BOOL(VERBS_STATS, ZCR_ENV_CTX, 0,
	     "1: print the verbs transport's counters at zcr_ctx_destroy()."),
	BOOL(VERBS_ADVERT, ZCR_ENV_CTX, 1,
	     "verbs: a started persistent receive offers its buffer to its "
	     "sender, which writes the message straight into it; 0: never "
	     "(the peer learns it at the handshake)."),
	BOOL(PREFETCH, ZCR_ENV_CTX, 0,
	     "1: message prefetching over TCP, shm and verbs: a receive "
	     "waiting on nothing asks its sender for the pages of the "
	     "predicted send buffer that are final (where that paid, as soon "
	     "as the stream's last message is in), and offers the same to "
	     "peers."),
	NUM(PREFETCH_MIN, ZCR_ENV_BYTES, ZCR_ENV_CTX, 4096, 1ULL << 62,
	    65536,
	    "Prefetching: the smallest message a receiver asks for and a "
	    "sender tracks."),
	CHOICE(PREFETCH_PAGEVER, ZCR_ENV_CTX, pagevers, 0,
	       "How message prefetching tells the pages of a send buffer "
	       "changed since it pre-sent them: the cheapest mechanism that "
	       "works here (auto), or one by name (Documentation/prefetch.md); "
	       "one that does not work here fails with -EOPNOTSUPP."),
	BOOL(PREFETCH_SHM_ALL, ZCR_ENV_CTX, 0,
	     "Prefetching over shm: 1: a receiver asks as over TCP; 0: it "
	     "never asks on one host, where a pre-send cost more than it "
	     "saved (it still answers a peer's requests)."),

	CHOICE(WIREUP, ZCR_ENV_JOB, wireups, 0,
	       "How zcr_ctx_create_job() exchanges addresses: PMIx when "
	       "PMIX_NAMESPACE is set, else the environment (auto), or "
	       "forced."),
	STR(JOB_DIR, ZCR_ENV_JOB, PATH_MAX - 65, "none",
	    "The environment wire-up: a fresh directory all ranks see, where "
	    "each writes its address."),
	[ZCR_ENV_RANK] = {
		.name = "ZCRECV_RANK", .type = ZCR_ENV_UINT,
		.reader = ZCR_ENV_JOB, .max = INT_MAX - 1,
		.dflt_text = "none (PMI_RANK, OMPI_COMM_WORLD_RANK, "
			     "SLURM_PROCID)",
		.help = "The environment wire-up: this process's rank, "
			"below ZCRECV_SIZE.",
	},
	[ZCR_ENV_SIZE] = {
		.name = "ZCRECV_SIZE", .type = ZCR_ENV_UINT,
		.reader = ZCR_ENV_JOB, .min = 1, .max = INT_MAX,
		.dflt_text = "none (PMI_SIZE, OMPI_COMM_WORLD_SIZE, "
			     "SLURM_NTASKS)",
		.help = "The environment wire-up: the number of ranks.",
	},
	NUM(JOB_TIMEOUT_MS, ZCR_ENV_MS, ZCR_ENV_JOB, 1, INT_MAX, 60000,
	    "The environment wire-up: how long to wait for every rank's "
	    "address in ZCRECV_JOB_DIR."),
	STR(JOB_HOST, ZCR_ENV_JOB, 239,
	    "the address of the default route, else 127.0.0.1",
	    "The host this rank publishes for others to reach it."),
	STR(JOB_LISTEN, ZCR_ENV_JOB, 255, "0.0.0.0:0",
	    "The address a job context listens on."),

	CHOICE(MPI_WIREUP, ZCR_ENV_MPI, mpi_wireups, 0,
	       "libzcrecv-mpi.so: how ranks exchange addresses: PMIx when "
	       "PMIX_NAMESPACE is set, else MPI_Allgather (auto), or forced."),
	BOOL(MPI_PROGRESS_THREAD, ZCR_ENV_MPI, 1,
	     "libzcrecv-mpi.so: 1: a progress thread moves messages while "
	     "the program is elsewhere; 0: only MPI calls do."),
	BOOL(REPORT, ZCR_ENV_MPI, 0,
	     "libzcrecv-mpi.so: 1: each rank prints one line of counters "
	     "at MPI_Finalize."),
	BOOL(MPI_COLL, ZCR_ENV_MPI, 1,
	     "libzcrecv-mpi.so: 1: MPI_Alltoall(v,w), MPI_Allgather(v), "
	     "MPI_Bcast, MPI_Gather(v), MPI_Scatter(v), MPI_Reduce, "
	     "MPI_Allreduce, MPI_Reduce_scatter(_block), MPI_Scan, "
	     "MPI_Exscan, MPI_Ialltoall, MPI_Iallgather, MPI_Ibcast and "
	     "MPI_Iallreduce of carried communicators go over zcrecv from "
	     "their thresholds up (the barriers when "
	     "ZCRECV_MPI_COLL_BARRIER=1); 0: every collective stays with "
	     "the MPI."),
	NUM(MPI_COLL_ALLTOALL_MIN, ZCR_ENV_BYTES, ZCR_ENV_MPI, 0, 1ULL << 62,
	    COLL_ALLTOALL_MIN,
	    "libzcrecv-mpi.so: MPI_Alltoall(v,w) and MPI_Ialltoall go over "
	    "zcrecv when a part (the largest, for v and w) has at least "
	    "this many bytes; 0: always."),
	NUM(MPI_COLL_ALLGATHER_MIN, ZCR_ENV_BYTES, ZCR_ENV_MPI, 0, 1ULL << 62,
	    COLL_ALLGATHER_MIN,
	    "libzcrecv-mpi.so: MPI_Allgather(v) and MPI_Iallgather go over "
	    "zcrecv when a part (the largest, for v) has at least this many "
	    "bytes; 0: always."),
	NUM(MPI_COLL_BCAST_MIN, ZCR_ENV_BYTES, ZCR_ENV_MPI, 0, 1ULL << 62,
	    COLL_BCAST_MIN,
	    "libzcrecv-mpi.so: MPI_Bcast and MPI_Ibcast go over zcrecv when "
	    "the message has at least this many bytes; 0: always."),
	NUM(MPI_COLL_GATHER_MIN, ZCR_ENV_BYTES, ZCR_ENV_MPI, 0, 1ULL << 62,
	    COLL_GATHER_MIN,
	    "libzcrecv-mpi.so: MPI_Gather(v) goes over zcrecv when a part "
	    "(the largest, for v) has at least this many bytes; 0: always."),
	NUM(MPI_COLL_SCATTER_MIN, ZCR_ENV_BYTES, ZCR_ENV_MPI, 0, 1ULL << 62,
	    COLL_SCATTER_MIN,
	    "libzcrecv-mpi.so: MPI_Scatter(v) goes over zcrecv when a part "
	    "(the largest, for v) has at least this many bytes; 0: always."),
	NUM(MPI_COLL_REDUCE_MIN, ZCR_ENV_BYTES, ZCR_ENV_MPI, 0, 1ULL << 62,
	    COLL_REDUCE_MIN,
	    "libzcrecv-mpi.so: MPI_Reduce of a predefined type goes over "
	    "zcrecv when its vector has at least this many bytes; 0: "
	    "always; the default, 2^62, never."),
	NUM(MPI_COLL_ALLREDUCE_MIN, ZCR_ENV_BYTES, ZCR_ENV_MPI, 0, 1ULL << 62,
	    COLL_ALLREDUCE_MIN,
	    "libzcrecv-mpi.so: MPI_Allreduce and MPI_Iallreduce (a "
	    "commutative operation) of a predefined type go over zcrecv "
	    "when the vector has at least this many bytes; 0: always; the "
	    "default, 2^62, never."),
	NUM(MPI_COLL_ALLREDUCE_RSAG_MAX, ZCR_ENV_BYTES, ZCR_ENV_MPI, 0,
	    1ULL << 62, COLL_ALLREDUCE_RSAG_MAX,
	    "libzcrecv-mpi.so: a carried MPI_Allreduce of a commutative "
	    "operation on a power of two ranks takes Rabenseifner's "
	    "algorithm (reduce-scatter by recursive halving, allgather by "
	    "recursive doubling) instead of the ring when the vector has at "
	    "most this many bytes; 0: never."),
	NUM(MPI_COLL_REDUCE_SCATTER_MIN, ZCR_ENV_BYTES, ZCR_ENV_MPI, 0,
	    1ULL << 62, COLL_REDUCE_SCATTER_MIN,
	    "libzcrecv-mpi.so: MPI_Reduce_scatter(_block) of a predefined "
	    "type goes over zcrecv when its whole vector (the sum of the "
	    "counts) has at least this many bytes; 0: always; the default, "
	    "2^62, never."),
	NUM(MPI_COLL_SCAN_MIN, ZCR_ENV_BYTES, ZCR_ENV_MPI, 0, 1ULL << 62,
	    COLL_SCAN_MIN,
	    "libzcrecv-mpi.so: MPI_Scan and MPI_Exscan of a predefined type "
	    "go over zcrecv when the vector has at least this many bytes; "
	    "0: always; the default, 2^62, never."),
	/*
	 * Off: stock Open MPI's barrier took 0.5-0.6 us at 2 ranks and
	 * 7-11 us at 4 on the 2-core host, zcrecv's 2-23 and 17-42
	 * (2026-11-28, Documentation/mpi.md, "Barrier and scans").
	 */
	BOOL(MPI_COLL_BARRIER, ZCR_ENV_MPI, 0,
	     "libzcrecv-mpi.so: 1: MPI_Barrier and MPI_Ibarrier of carried "
	     "communicators go over zcrecv (a dissemination of zero-byte "
	     "messages); 0: they stay with the MPI."),
	BOOL(MPI_COLL_HINTS, ZCR_ENV_MPI, 1,
	     "libzcrecv-mpi.so: 1: after a carried MPI_Alltoall(v) the "
	     "library keeps where each part was received, and stages the "
	     "parts of the next one on that communicator that arrive before "
	     "their receive at those page offsets, so that they land by "
	     "remap when the call uses the same buffer; 0: such parts are "
	     "staged as any early message (or deferred)."),

	STR(TRACE_DIR, ZCR_ENV_TRACE, PATH_MAX - 32, "the current directory",
	    "The MPI tracer libzctrace.so writes rank-NNNN.trace here."),
};

const char *__zcr_env_type_name(enum zcr_env_type type)
{
	static const char *const names[] = {
		[ZCR_ENV_BOOL] = "bool", [ZCR_ENV_UINT] = "uint",
		[ZCR_ENV_MS] = "ms", [ZCR_ENV_US] = "us",
		[ZCR_ENV_BYTES] = "bytes", [ZCR_ENV_CHOICE] = "choice",
		[ZCR_ENV_NAME] = "name", [ZCR_ENV_STRING] = "string",
	};

	return (unsigned int)type < sizeof(names) / sizeof(names[0]) ?
	       names[type] : "?";
}

const char *__zcr_env_reader_name(enum zcr_env_reader reader)
{
	static const char *const names[] = {
		[ZCR_ENV_CTX] = "context", [ZCR_ENV_JOB] = "job",
		[ZCR_ENV_MPI] = "MPI layer", [ZCR_ENV_TRACE] = "tracer",
	};

	return (unsigned int)reader < sizeof(names) / sizeof(names[0]) ?
	       names[reader] : "?";
}

/* "a, b or c" from a NULL-terminated list. */
static void list_words(const char *const *w, char *buf, size_t len)
{
	size_t n = 0;
	int i;

	buf[0] = 0;
	for (i = 0; w[i] && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s",
				      !i ? "" : w[i + 1] ? ", " : " or ", w[i]);
}

void __zcr_env_accepts(enum zcr_env id, char *buf, size_t len)
{
	static const char *const unit[] = {
		[ZCR_ENV_UINT] = "",
		[ZCR_ENV_MS] = " of milliseconds",
		[ZCR_ENV_US] = " of microseconds",
		[ZCR_ENV_BYTES] = " of bytes",
	};
	const struct zcr_env_var *v = &__zcr_env_vars[id];

	switch (v->type) {
	case ZCR_ENV_BOOL:
		snprintf(buf, len, "0 or 1");
		break;
	case ZCR_ENV_CHOICE:
		list_words(v->choices, buf, len);
		break;
	case ZCR_ENV_NAME:
		snprintf(buf, len, "%s", v->accepts);
		break;
	case ZCR_ENV_STRING:
		snprintf(buf, len, "at most %llu bytes",
			 (unsigned long long)v->max);
		break;
	default:
		if (v->max == UINT64_MAX)
			snprintf(buf, len, "a number%s, %llu or more",
				 unit[v->type], (unsigned long long)v->min);
		else
			snprintf(buf, len, "a number%s from %llu to %llu",
				 unit[v->type], (unsigned long long)v->min,
				 (unsigned long long)v->max);
		break;
	}
}

void __zcr_env_default(enum zcr_env id, char *buf, size_t len)
{
	const struct zcr_env_var *v = &__zcr_env_vars[id];

	if (v->dflt_text)
		snprintf(buf, len, "%s", v->dflt_text);
	else if (v->type == ZCR_ENV_CHOICE)
		snprintf(buf, len, "%s", v->choices[v->dflt]);
	else
		snprintf(buf, len, "%llu", (unsigned long long)v->dflt);
}

/* Decimal digits only, within [min, max]. */
static int parse_number(const struct zcr_env_var *v, const char *text,
			uint64_t *out)
{
	unsigned long long n;
	char *end;

	if (text[0] < '0' || text[0] > '9')
		return -EINVAL;
	errno = 0;
	n = strtoull(text, &end, 10);
	if (errno || *end || n < v->min || n > v->max)
		return -EINVAL;
	*out = n;
	return 0;
}

int __zcr_env_parse(enum zcr_env id, const char *text,
		    struct zcr_env_val *out, char *why, size_t len)
{
	const struct zcr_env_var *v = &__zcr_env_vars[id];
	int ret = 0, i;

	memset(out, 0, sizeof(*out));
	out->u = v->dflt;
	if (!text || !*text)
		return 0;
	out->s = text;
	switch (v->type) {
	case ZCR_ENV_BOOL:
		if (strcmp(text, "0") && strcmp(text, "1"))
			ret = -EINVAL;
		else
			out->u = text[0] == '1';
		break;
	case ZCR_ENV_CHOICE:
		for (i = 0; v->choices[i]; i++)
			if (!strcmp(text, v->choices[i]))
				break;
		if (v->choices[i])
			out->u = (uint64_t)i;
		else
			ret = -EINVAL;
		break;
	case ZCR_ENV_NAME:
	case ZCR_ENV_STRING:
		if (strlen(text) < v->min || strlen(text) > v->max)
			ret = -EINVAL;
		break;
	default:
		ret = parse_number(v, text, &out->u);
		break;
	}
	if (ret) {
		out->u = v->dflt;
		if (why)
			__zcr_env_accepts(id, why, len);
		return ret;
	}
	out->set = true;
	return 0;
}

int __zcr_env_bad(enum zcr_env id, const char *text, const char *expected,
		  bool quiet)
{
	const struct zcr_env_var *v = &__zcr_env_vars[id];

	if (!quiet)
		fprintf(stderr, "zcrecv: %s=%s: expected %s\n", v->name,
			v->secret ? "..." : text, expected);
	return -EINVAL;
}

int __zcr_env_get(enum zcr_env id, bool quiet, struct zcr_env_val *out)
{
	const char *text = getenv(__zcr_env_vars[id].name);
	char why[160];
	int ret;

	ret = __zcr_env_parse(id, text, out, why, sizeof(why));
	if (ret)
		__zcr_env_bad(id, text, why, quiet);
	return ret;
}

int __zcr_env_load(struct zcr_env_set *set, enum zcr_env_reader reader,
		   bool quiet)
{
	int id, ret = 0;

	for (id = 0; id < ZCR_ENV_COUNT; id++) {
		if (__zcr_env_vars[id].reader != reader) {
			__zcr_env_parse(id, NULL, &set->v[id], NULL, 0);
			continue;
		}
		if (__zcr_env_get(id, quiet, &set->v[id]))
			ret = -EINVAL;
	}
	return ret;
}
