/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * zcrecv.h - the public API of libzcrecv.
 *
 * Conventions (Documentation/library.md): every function returns >= 0 on
 * success and a negative errno value on failure; errno is never the channel.
 * Destroy functions return void. Symbols appear in lib/libzcrecv.map with
 * the version that introduced them.
 *
 * Structs that cross this interface can grow: new fields are only ever
 * appended, and the functions that take one come in a _sized form that
 * is told the caller's sizeof (Documentation/abi-library.md). Calls that
 * will gain behaviour take a flags argument (since 0.3; unknown bits are
 * -EINVAL).
 *
 * Names: a call on an object is zcr_<object>_<verb>(object, ...)
 * (zcr_ctx_listen, zcr_ep_connect, zcr_ctx_job_ep); a call on messages
 * and requests keeps its MPI name (zcr_isend, zcr_issend, zcr_irecv,
 * zcr_iprobe, zcr_improbe, zcr_imrecv, zcr_test, zcr_wait), with _comm
 * when it takes a communicator id. Older names that broke the rule stay
 * exported, kept for compatibility.
 */
#ifndef ZCRECV_H
#define ZCRECV_H

#include <stddef.h>
#include <stdint.h>

/* ZCRECV_VERSION_MAJOR, _MINOR, _PATCH: made from the VERSION file. */
#include "zcrecv_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * zcr_version() - the library's version string, "MAJOR.MINOR.PATCH".
 * Since 0.1.
 */
const char *zcr_version(void);

/**
 * struct zcr_kmod_info - what the zcrecv.ko handshake reported
 * @abi_version:	ABI version the module speaks
 * @page_size:		the kernel's page size in bytes
 * @max_batch:		most entries in one remap call
 * @features:		ZCRECV_FEATURE_* bits (<linux/zcrecv.h>)
 * @max_zone_pages:	largest zone, in pages
 * @max_process_pages:	most zone pages one process may hold
 * @huge_unit_size:	since 0.3: bytes of one unit of a huge zone (2 MiB
 *			on x86-64), 0 when the module has none
 *			(ZCRECV_FEATURE_HUGE unset)
 *
 * Fields are only appended: zcr_kmod_probe_sized() is told the caller's
 * sizeof, zcr_kmod_probe() fills the 0.1 fields only.
 */
struct zcr_kmod_info {
	uint32_t abi_version;
	uint32_t page_size;
	uint32_t max_batch;
	uint64_t features;
	uint64_t max_zone_pages;
	uint64_t max_process_pages;
	/* 0.3 */
	uint64_t huge_unit_size;
};

/**
 * zcr_kmod_probe() - open /dev/zcrecv and run the handshake ioctl
 * @info: filled on success (may be NULL)
 *
 * Return: 0 when the module is present and speaks this library's ABI;
 * -ENOENT when there is no device; -EOPNOTSUPP on an ABI mismatch; another
 * negative errno from open or ioctl otherwise. Fills the fields of the 0.1
 * struct only: new code calls zcr_kmod_probe_sized(). Since 0.1.
 */
int zcr_kmod_probe(struct zcr_kmod_info *info);

/**
 * zcr_kmod_probe_sized() - zcr_kmod_probe() into a struct of @info_size bytes
 * @info: filled on success (may be NULL)
 * @info_size: sizeof(*@info) as the caller was compiled
 *
 * Fills at most @info_size bytes; bytes of a newer caller's struct past
 * this library's are zeroed. Call it as zcr_kmod_probe_sized(&info,
 * sizeof(info)).
 * Return: as zcr_kmod_probe(); -EINVAL when @info_size is below the 0.1
 * struct. Since 0.3.
 */
int zcr_kmod_probe_sized(struct zcr_kmod_info *info, size_t info_size);

/*
 * ---- Receive path over TCP (since 0.1) -----------------------------------
 *
 * A context (struct zcr_ctx) is one rank of a job: it owns the endpoints to
 * its peers, the staging pool, the predictor and the remap engine. Messages
 * are matched MPI-style on (source rank, tag): messages between one pair
 * with one tag are received in the order they were sent (non-overtaking);
 * ZCRECV_ANY_SOURCE and ZCRECV_ANY_TAG are wildcards; a message larger than
 * the receive buffer fills the buffer and completes with -EMSGSIZE. See
 * Documentation/library.md for the data path, calibration and policy.
 */

#define ZCRECV_ANY_SOURCE	(-1)
#define ZCRECV_ANY_TAG		(-1)
#define ZCRECV_TAG_MAX		0x7fffffff

struct zcr_ctx;
struct zcr_ep;
struct zcr_req;

/* Remap policy, see struct zcr_ctx_attr::policy and ZCRECV_POLICY. */
enum zcr_policy {
	ZCRECV_POLICY_AUTO = 0,	/* remap when it measured faster, per size */
	ZCRECV_POLICY_COPY = 1,	/* never remap */
	ZCRECV_POLICY_REMAP = 2,	/* remap every hit with a full page */
};

/* Remap backends, see struct zcr_ctx_attr::backend and ZCRECV_BACKEND. */
enum zcr_backend {
	ZCRECV_BACKEND_AUTO = 0,	/* kmod, else uffd-move, else copy */
	ZCRECV_BACKEND_KMOD = 1,	/* zcrecv.ko zones and ZCRECV_IOC_REMAP */
	ZCRECV_BACKEND_UFFD = 2,	/* UFFDIO_MOVE (Linux >= 6.8) */
	ZCRECV_BACKEND_COPY = 3,	/* memcpy only */
};

/**
 * struct zcr_ctx_attr - how to create a context (zero it, then set fields)
 * @rank:		this process's rank, >= 0, unique among its peers
 * @policy:		enum zcr_policy; the environment ZCRECV_POLICY
 *			(copy|remap|auto) overrides it
 * @backend:		enum zcr_backend; ZCRECV_BACKEND (auto|kmod|uffd-move|
 *			copy; "uffd" is an alias of uffd-move) overrides it
 * @progress_thread:	nonzero: a thread drives progress in the background
 * @staging_bytes:	most bytes the staging pool holds (0: 256 MiB); when
 *			full, the library stops reading from the peers whose
 *			next message does not fit, and TCP flow control makes
 *			their senders wait: nothing is dropped
 * @max_msg:		largest message accepted from a peer (0: 1 GiB); a
 *			header announcing more closes that connection
 * @predictor:		predictor name (NULL: ZCRECV_PREDICTOR or "select")
 * @quiet:		nonzero: do not print connection errors on stderr
 * @handshake_timeout_ms: how long a new connection (accepted or
 *			connected) may take to complete its handshake (0:
 *			10000 ms, negative: -EINVAL); the environment
 *			ZCRECV_HANDSHAKE_TIMEOUT_MS (a positive number of
 *			ms) overrides it. A connection still in its
 *			handshake then is closed with -ETIMEDOUT ("handshake
 *			timed out") and no longer counts as a possible source
 *			of receives
 * @job_secret:		since 0.2: a secret every rank of the job shares
 *			(a NUL-terminated string of 1 to 256 bytes; use at
 *			least 16 random bytes), NULL: the environment
 *			ZCRECV_JOB_SECRET, else none. With a secret, each
 *			connection's handshake proves both sides know it
 *			(HMAC-SHA256 over fresh nonces) and a peer that does
 *			not is refused (-EACCES). Without one, any local
 *			process can claim a rank, so zcr_ctx_listen() binds
 *			loopback only
 * @progress_timeout_ms: since 0.2: a message in flight (header or payload
 *			partly read) must bring 64 KiB or its end within
 *			this many ms, or the connection is closed with
 *			-ETIMEDOUT (0: 30000; negative: -EINVAL); the
 *			environment ZCRECV_PROGRESS_TIMEOUT_MS overrides it.
 *			Idle connections between messages never time out,
 *			nor do those paused because staging is full
 * @max_conns:		since 0.2: most connections (accepted, connected or
 *			in their handshake) at once (0: 1024; negative:
 *			-EINVAL); connections accepted past it are closed at
 *			once and zcr_ep_connect() fails with -EMFILE. The
 *			environment ZCRECV_MAX_CONNS overrides it
 */
struct zcr_ctx_attr {
	int rank;
	int policy;
	int backend;
	int progress_thread;
	uint64_t staging_bytes;
	uint64_t max_msg;
	const char *predictor;
	int quiet;
	int handshake_timeout_ms;
	/* 0.2 */
	const char *job_secret;
	int progress_timeout_ms;
	int max_conns;
};

/**
 * struct zcr_stats - per-context statistics
 * @msgs_sent:		messages whose send completed
 * @msgs_recv:		messages delivered to receives
 * @bytes_sent:		payload bytes sent
 * @bytes_recv:		payload bytes delivered
 * @posted:		messages landed directly in a posted receive buffer
 * @early:		messages that arrived before their receive (staged)
 * @hits:		early messages staged at the page offset of the buffer
 *			that received them
 * @misses:		early messages staged at another offset
 * @remaps:		receives completed by the remap engine
 * @pages_remapped:	full pages moved into user buffers
 * @bytes_copied:	bytes copied from staging into user buffers
 * @remap_fallbacks:	remaps refused by the backend (then copied)
 * @bad_headers:	connections closed for a malformed header
 * @disconnects:	connections lost (closed by the peer or on error)
 * @stalls:		times a peer was paused because staging was full
 * @staging_peak:	most bytes the staging pool held at once
 * @staging_limit:	the pool's limit in bytes
 * @min_remap_pages:	full pages of the smallest size class the
 *			landing policy remaps now (0: none; 1 under
 *			ZCRECV_POLICY_REMAP)
 * @copy_ns_per_page:	calibrated cost of copying a page (64 KiB), ns
 * @remap_ns_per_page:	calibrated cost of remapping a page (64 KiB), ns
 * @policy:		enum zcr_policy in use
 * @backend:		enum zcr_backend in use
 * @predictor:		name of the predictor in use
 * @backend_name:	name of the backend in use
 * @shared_pulls:	since 0.3: messages received over shm whose copy the
 *			sender shared (wrote the first part while we pulled
 *			the rest)
 * @bytes_pushed:	since 0.3: bytes we wrote, as the sender, into a
 *			peer's receive that offered us part of its copy
 * @deferred:		since 0.3: messages that arrived before their receive
 *			and were left with the transport (they would only
 *			have been copied out of staging, ZCRECV_DEFER_MIN;
 *			over TCP, large ones on a connection measured fast,
 *			ZCRECV_TCP_DEFER_RATE):
 *			those that land straight in their receive count in
 *			@posted, those staged later (something came behind
 *			them) in @early
 * @expected:		since 0.3: early messages staged at the offset of a
 *			persistent receive that could take them
 *			(zcr_recv_init_comm()), not a predicted one
 * @pf_requests:	since 0.3, message prefetching (ZCRECV_PREFETCH=1,
 *			Documentation/prefetch.md): prefetch requests this
 *			context sent as a receiver
 * @pf_presend_bytes:	bytes it pre-sent as a sender
 * @pf_saved_bytes:	bytes it left out of its sends (pre-sent unchanged)
 * @pf_wasted_bytes:	pre-sent bytes it sent again or never used
 * @pf_late:		requests it answered with nothing because the send
 *			was under way or the buffer had not changed since
 *			the last send
 * @pf_dropped:		requests it answered with nothing for another
 *			reason (buffer not tracked yet, backing off,
 *			untrackable memory)
 */
struct zcr_stats {
	uint64_t msgs_sent;
	uint64_t msgs_recv;
	uint64_t bytes_sent;
	uint64_t bytes_recv;
	uint64_t posted;
	uint64_t early;
	uint64_t hits;
	uint64_t misses;
	uint64_t remaps;
	uint64_t pages_remapped;
	uint64_t bytes_copied;
	uint64_t remap_fallbacks;
	uint64_t bad_headers;
	uint64_t disconnects;
	uint64_t stalls;
	uint64_t staging_peak;
	uint64_t staging_limit;
	uint64_t min_remap_pages;
	double copy_ns_per_page;
	double remap_ns_per_page;
	int policy;
	int backend;
	char predictor[32];
	char backend_name[16];
	/* 0.3 */
	uint64_t shared_pulls;
	uint64_t bytes_pushed;
	uint64_t deferred;
	uint64_t expected;
	uint64_t pf_requests;
	uint64_t pf_presend_bytes;
	uint64_t pf_saved_bytes;
	uint64_t pf_wasted_bytes;
	uint64_t pf_late;
	uint64_t pf_dropped;
};

/**
 * struct zcr_status - what a completed receive got
 * @source:	rank of the sender; ZCRECV_ANY_SOURCE (-1) when no message
 *		matched the receive (it failed or was cancelled before one
 *		did: rank 0 is a real rank)
 * @tag:	tag of the message; ZCRECV_ANY_TAG (-1) when none matched
 * @len:	length of the message as sent (may exceed the buffer: then
 *		the receive returned -EMSGSIZE); 0 when none matched
 * @error:	0 or the negative errno the operation completed with
 *
 * A receive that failed after a message matched it (-ECONNRESET: the
 * sender went away mid-message) reports that message's source, tag and
 * announced length. For a send: our rank, its tag and length.
 *
 * Fields are only appended: each call that fills a status has a form told
 * the caller's sizeof (zcr_test_sized(), zcr_wait_sized(),
 * zcr_recv_sized(), zcr_iprobe_comm(), zcr_improbe_comm(), since 0.3);
 * the others fill the 0.1 fields only.
 */
struct zcr_status {
	int source;
	int tag;
	uint64_t len;
	int error;
};

/**
 * zcr_ctx_create() - create a context (one rank)
 * @attr: options, or NULL for rank 0 and defaults
 * @ctx: the new context on success
 *
 * Opens /dev/zcrecv when present, picks the remap backend and calibrates
 * the copy and remap cost per page (a few milliseconds). Reads the fields
 * of the 0.1 struct only: new code calls zcr_ctx_create_sized().
 * Return: 0 or -errno. Since 0.1.
 */
int zcr_ctx_create(const struct zcr_ctx_attr *attr, struct zcr_ctx **ctx);

/**
 * zcr_ctx_create_sized() - zcr_ctx_create() for an attr of @attr_size bytes
 * @attr: options, or NULL for rank 0 and defaults
 * @attr_size: sizeof(*@attr) as the caller was compiled
 * @ctx: the new context on success
 *
 * Fields past @attr_size (a caller built against an older header) take
 * their defaults; bytes past this library's struct (a newer caller) must
 * be zero. Call it as zcr_ctx_create_sized(&attr, sizeof(attr), &ctx).
 * Return: 0, -EINVAL (@attr_size below the 0.1 struct), -E2BIG (a field
 * this library does not know is set), or another -errno. Since 0.2.
 */
int zcr_ctx_create_sized(const struct zcr_ctx_attr *attr, size_t attr_size,
			 struct zcr_ctx **ctx);

/**
 * zcr_ctx_destroy() - close every endpoint, stop the progress thread, free
 * all staging memory. Pending requests are abandoned. Since 0.1.
 */
void zcr_ctx_destroy(struct zcr_ctx *ctx);

/**
 * zcr_ctx_stats() - copy the context's statistics into @st: the fields of
 * the 0.1 struct only (new code calls zcr_ctx_stats_sized()).
 * Return: 0 or -EINVAL. Since 0.1.
 */
int zcr_ctx_stats(struct zcr_ctx *ctx, struct zcr_stats *st);

/**
 * zcr_ctx_stats_sized() - zcr_ctx_stats() into a struct of @st_size bytes
 *
 * Fills at most @st_size bytes (fields a newer library added stay out of
 * an older caller's struct); bytes of a newer caller's struct past this
 * library's are zeroed. Call it as zcr_ctx_stats_sized(ctx, &st,
 * sizeof(st)).
 * Return: 0 or -EINVAL (@st_size below the 0.1 struct). Since 0.2.
 */
int zcr_ctx_stats_sized(struct zcr_ctx *ctx, struct zcr_stats *st,
			size_t st_size);

/**
 * struct zcr_landing_class - what landings of one size class cost
 * @size_min:		the class: messages of @size_min to 2 * @size_min - 1
 *			bytes
 * @copy_samples:	copy landings timed, the calibration's estimate
 *			counted as one
 * @remap_samples:	remap landings timed, the same way
 * @copy_ns:		moving average of what a copy landing cost, ns (the
 *			cheapest real one while the class warms up)
 * @remap_ns:		moving average of what a remap landing cost, ns
 *			(moves, registration, faults, head and tail copies)
 * @choice:		ZCRECV_POLICY_COPY or ZCRECV_POLICY_REMAP: what the
 *			auto policy picks for the class (apart from the one
 *			landing in 64 that tries the other)
 * @backend:		name of the backend the class belongs to
 *
 * Fields may be added at the end in later versions; callers pass
 * sizeof(struct zcr_landing_class) as they know it.
 */
struct zcr_landing_class {
	uint64_t size_min;
	uint64_t copy_samples;
	uint64_t remap_samples;
	double copy_ns;
	double remap_ns;
	int choice;
	char backend[16];
};

/**
 * zcr_ctx_landing_stats() - the landing policy's measurements
 * @ctx:		the context
 * @out:		array of @max entries, each @size_of_struct bytes
 * @size_of_struct:	sizeof(struct zcr_landing_class) of the caller
 *			(an older, shorter layout gets its own fields only)
 * @max:		most entries to fill
 *
 * One entry per backend that can remap and per size class in which at
 * least one early message landed (copied or remapped at the buffer's page
 * offset), smallest class first.
 * Return: the number of entries filled, or -EINVAL. Since 0.2.
 */
int zcr_ctx_landing_stats(struct zcr_ctx *ctx, struct zcr_landing_class *out,
			  size_t size_of_struct, unsigned int max);

/**
 * zcr_ctx_set_policy() - change the remap policy (enum zcr_policy) for the
 * receives that complete from now on; the calibration is kept.
 * Return: 0 or -EINVAL. Since 0.1.
 */
int zcr_ctx_set_policy(struct zcr_ctx *ctx, int policy);

/**
 * zcr_ctx_listen() - accept peers on @hostport ("HOST:PORT"; port 0 picks
 * an ephemeral port). Connections are accepted during progress.
 * Return: the bound port (> 0) or -errno. Since 0.1.
 */
int zcr_ctx_listen(struct zcr_ctx *ctx, const char *hostport);

/**
 * zcr_progress() - make progress on every connection: accept, read, land,
 * write. Waits up to @timeout_ms (0: do not wait, -1: until something
 * happens).
 * Return: number of events handled (>= 0) or -errno. Since 0.1.
 */
int zcr_progress(struct zcr_ctx *ctx, int timeout_ms);

/**
 * zcr_ep_connect() - connect to the listening context at @hostport and
 * start the handshake (our rank goes first; the peer's rank is known once
 * its answer arrives, see zcr_ep_rank()).
 * Return: 0 or -errno. Since 0.1.
 */
int zcr_ep_connect(struct zcr_ctx *ctx, const char *hostport,
		   struct zcr_ep **ep);

/**
 * zcr_ep_accept() - wait up to @timeout_ms (-1: forever) for a peer that
 * connected to zcr_ctx_listen() to complete its handshake.
 * Return: 0 with *@ep set, -ETIMEDOUT, or -errno. Since 0.1.
 */
int zcr_ep_accept(struct zcr_ctx *ctx, int timeout_ms, struct zcr_ep **ep);

/**
 * zcr_ep_accept_rank() - zcr_ep_accept() for the peer of rank @rank only
 * @ctx: a listening context
 * @rank: the peer rank to wait for (>= 0)
 * @timeout_ms: most milliseconds to wait (-1: forever, 0: only check)
 * @ep: set to the endpoint on success
 *
 * Waits until a peer that connected to zcr_ctx_listen() and completed its
 * handshake as @rank is there, and hands out its endpoint; endpoints of
 * other ranks stay for zcr_ep_accept() or their own zcr_ep_accept_rank().
 * Each accepted endpoint is handed out once.
 * Return: 0 with *@ep set; -ETIMEDOUT; -EINVAL (NULL argument, negative
 * @rank); another -errno from progress. Since 0.2.
 */
int zcr_ep_accept_rank(struct zcr_ctx *ctx, int rank, int timeout_ms,
		       struct zcr_ep **ep);

/**
 * zcr_ep_rank() - the peer's rank, -EAGAIN while the handshake is under
 * way, -ENOTCONN once the connection is lost before it completed. Since 0.1.
 */
int zcr_ep_rank(struct zcr_ep *ep);

/**
 * zcr_ep_error() - why the connection was closed: 0 while it works, else
 * a negative errno; @msg (if not NULL) gets a description: while the
 * connection works, which transport carries it ("shm", or "tcp (shm: why
 * not)" when shared memory was offered and not used; "" for plain TCP).
 * Since 0.1.
 */
int zcr_ep_error(struct zcr_ep *ep, const char **msg);

/**
 * zcr_ep_close() - close the connection to this peer (if still open) and
 * free the endpoint
 * @ep: an endpoint from zcr_ep_connect() or zcr_ep_accept(), open or
 *	closed by the peer; NULL is ignored
 *
 * Sends queued on it fail, and so do the receives only that peer could
 * satisfy. @ep must not be used afterwards: call it once on every
 * endpoint, also on one the peer closed, or a rank that accepts peers for
 * a long time keeps every endpoint it was given. Since 0.1; freeing
 * since 0.2 (programs linked against 0.1, zcr_ep_close@ZCRECV_0.1, keep
 * the closed endpoint until zcr_ctx_destroy()).
 */
void zcr_ep_close(struct zcr_ep *ep);

/**
 * zcr_isend() - start sending @len bytes of @buf with @tag (0..ZCRECV_TAG_MAX)
 * to the peer of @ep. @buf must not change until the request completes.
 * Return: 0 with *@req set, or -errno. Since 0.1.
 */
int zcr_isend(struct zcr_ep *ep, const void *buf, size_t len, int tag,
	      struct zcr_req **req);

/**
 * zcr_irecv() - post a receive of at most @size bytes into @buf from rank
 * @src (or ZCRECV_ANY_SOURCE) with @tag (or ZCRECV_ANY_TAG). @buf must stay
 * valid (not freed, not unmapped) until the request completes, as in MPI:
 * the data may land in it, or its pages be exchanged, at any progress call.
 *
 * While the context listens, @src may be a rank that has not connected
 * (yet): the receive waits for it, as in MPI. Without a listener a rank
 * no connection can bring fails at once.
 * Return: 0 with *@req set; -EINVAL; -ECONNRESET (not listening, and no
 * connection, open or in its handshake, can bring @src); -ENOTCONN
 * (ZCRECV_ANY_SOURCE, not listening, no connection). Since 0.1.
 */
int zcr_irecv(struct zcr_ctx *ctx, void *buf, size_t size, int src, int tag,
	      struct zcr_req **req);

/**
 * zcr_test() - has @req completed? On completion the request is freed and
 * *@st (if not NULL) filled.
 *
 * Note the return values differ from zcr_wait(): zcr_test() returns 1 for
 * a successful completion (0 means pending), zcr_wait() returns 0.
 * Return: 1 when complete and successful, 0 when still pending, or the
 * negative errno it failed with (it is then freed too). Since 0.1.
 */
int zcr_test(struct zcr_req *req, struct zcr_status *st);

/**
 * zcr_test_sized() - zcr_test() for a status of @st_size bytes
 * @req: the request
 * @st: filled on completion (may be NULL)
 * @st_size: sizeof(*@st) as the caller was compiled
 *
 * Fills at most @st_size bytes; bytes of a newer caller's struct past
 * this library's are zeroed.
 * Return: as zcr_test(); -EINVAL when @st is not NULL and @st_size is
 * below the 0.1 struct (the request is left as it was). Since 0.3.
 */
int zcr_test_sized(struct zcr_req *req, struct zcr_status *st,
		   size_t st_size);

/**
 * zcr_wait() - progress until @req completes, then free it.
 *
 * Unlike zcr_test(), a successful completion returns 0.
 * Return: 0 or the negative errno it failed with (-EMSGSIZE: truncated,
 * -ECONNRESET: the peer went away, -ECANCELED: cancelled); if progress
 * itself fails, that error, and @req stays pending. Since 0.1.
 */
int zcr_wait(struct zcr_req *req, struct zcr_status *st);

/**
 * zcr_wait_timeout() - zcr_wait() for at most @timeout_ms
 * @req: a request from zcr_isend() or zcr_irecv()
 * @st: filled on completion (may be NULL)
 * @timeout_ms: most milliseconds to wait; 0 only checks, -1 waits as
 *	zcr_wait()
 *
 * Return: as zcr_wait() when @req completed (it is then freed); -ETIMEDOUT
 * when it did not complete in time (it stays pending: wait, test or
 * cancel it later); -EINVAL for a NULL @req or @timeout_ms below -1.
 * Since 0.2.
 */
int zcr_wait_timeout(struct zcr_req *req, struct zcr_status *st,
		     int timeout_ms);

/**
 * zcr_wait_sized() - zcr_wait_timeout() for a status of @st_size bytes
 * @req: a request from zcr_isend() or zcr_irecv()
 * @st: filled on completion (may be NULL)
 * @st_size: sizeof(*@st) as the caller was compiled
 * @timeout_ms: most milliseconds to wait; 0 only checks, -1 waits as
 *	zcr_wait()
 *
 * Fills at most @st_size bytes; bytes of a newer caller's struct past
 * this library's are zeroed.
 * Return: as zcr_wait_timeout(); -EINVAL also when @st is not NULL and
 * @st_size is below the 0.1 struct. Since 0.3.
 */
int zcr_wait_sized(struct zcr_req *req, struct zcr_status *st,
		   size_t st_size, int timeout_ms);

/**
 * zcr_cancel() - cancel a receive that no message has matched yet
 * @req: a request from zcr_irecv()
 *
 * A receive still posted (no message matched it) is taken off the posted
 * queue and completes at once with -ECANCELED: zcr_test() or zcr_wait()
 * then return -ECANCELED, set st.error to -ECANCELED and st.source,
 * st.tag to -1, and free it. A receive a message already matched cannot
 * be cancelled: it completes as usual. As with MPI_Cancel, the request
 * must still be completed with zcr_test() or zcr_wait(). A started
 * persistent receive whose buffer was offered to its sender (verbs) may
 * be written into at any moment: 0 then means the sender was asked, and
 * the receive completes with -ECANCELED or with the message it had
 * already sent into it.
 * Return: 0 when cancelled; -EBUSY when a message matched it already (or
 * it completed); -EOPNOTSUPP for a send; -EINVAL for NULL. Since 0.2.
 */
int zcr_cancel(struct zcr_req *req);

/*
 * ---- Communicators (since 0.2) -------------------------------------------
 *
 * A communicator id separates the traffic of independent libraries or MPI
 * communicators: a receive only takes messages sent with its id; wildcards
 * never cross ids. zcr_isend() and zcr_irecv() use id 0. Ids other than 0
 * need a peer that carries them (a 0.2 library whose connection was
 * dialled by a zcr_ctx_create_job() context, or that dialled one): to any
 * other peer such a send fails with -EPROTONOSUPPORT.
 */

/**
 * zcr_isend_comm() - zcr_isend() of a message of communicator @comm.
 * Return: as zcr_isend(); -EPROTONOSUPPORT: @comm is not 0 and the peer
 * does not carry communicator ids. Since 0.2.
 */
int zcr_isend_comm(struct zcr_ep *ep, uint32_t comm, const void *buf,
		   size_t len, int tag, struct zcr_req **req);

/**
 * zcr_issend() - a synchronous zcr_isend() (MPI_Issend): zcr_issend_comm()
 * of communicator 0.
 * Return: as zcr_isend(). Since 0.3.
 */
int zcr_issend(struct zcr_ep *ep, const void *buf, size_t len, int tag,
	       struct zcr_req **req);

/**
 * zcr_isend_test_comm() - zcr_isend_comm(), and tell whether the send
 * completed within the call
 * @req: the started send, as zcr_isend_comm()'s, when 0 is returned
 * @st: the status (source, tag, length; its error field too) when 1 is
 *	returned; @st_size: sizeof(*@st)
 *
 * An eager send that the transport completes at once (shm: written into
 * the peer's ring with nothing queued before it) makes no request:
 * *@req is NULL and nothing is left to test or wait for. Order and
 * errors are those of zcr_isend_comm().
 * Return: 1 (complete, status in @st), 0 (started, *@req to test or wait
 * on), -EINVAL (also a NULL @req or @st, or @st_size too small), or an
 * error of zcr_isend_comm(). Since 0.3.
 */
int zcr_isend_test_comm(struct zcr_ep *ep, uint32_t comm, const void *buf,
			size_t len, int tag, struct zcr_req **req,
			struct zcr_status *st, size_t st_size);

/**
 * zcr_issend_comm() - a synchronous zcr_isend_comm() (MPI_Issend)
 *
 * Completes only once a receive of the peer matched the message (posted,
 * or zcr_improbe()), not when the data left: the peer acknowledges the
 * match. On a connection where the peer does not acknowledge (a plain
 * context's, a shared-memory one, Documentation/design.md "Wire format")
 * it completes as zcr_isend_comm() does.
 * Return: as zcr_isend_comm(). Since 0.2.
 */
int zcr_issend_comm(struct zcr_ep *ep, uint32_t comm, const void *buf,
		    size_t len, int tag, struct zcr_req **req);

/**
 * zcr_irecv_comm() - zcr_irecv() matching only messages of @comm.
 * Return: as zcr_irecv(). Since 0.2.
 */
int zcr_irecv_comm(struct zcr_ctx *ctx, uint32_t comm, void *buf,
		   size_t size, int src, int tag, struct zcr_req **req);

/* zcr_irecv_flags_comm() flags */
#define ZCRECV_RECV_NO_LEARN	(1u << 0)	/* not a call to predict */

/**
 * zcr_irecv_flags_comm() - zcr_irecv_comm() with @flags
 * @flags: 0, or ZCRECV_RECV_NO_LEARN: the predictor does not learn this
 *	receive. For a call the caller never makes again, such as the parts
 *	of a collective that each carry a tag of their own call: learnt, it
 *	costs the predictor time and memory, and it breaks the cycles of the
 *	receives that do repeat. The receive itself behaves as any other.
 * Return: as zcr_irecv(); -EINVAL also for an unknown flag. Since 0.3.
 */
int zcr_irecv_flags_comm(struct zcr_ctx *ctx, uint32_t comm, void *buf,
			 size_t size, int src, int tag, unsigned int flags,
			 struct zcr_req **req);

/**
 * zcr_irecv_test_comm() - zcr_irecv_flags_comm(), and tell whether the
 * receive completed within the call
 * @req: the posted receive, as zcr_irecv_flags_comm()'s, when 0 is
 *	returned
 * @st: the status (source, tag, length, error) when 1 is returned;
 *	@st_size: sizeof(*@st)
 *
 * A receive whose message is there in full already takes it within the
 * call, as zcr_irecv_flags_comm() would (the predictor learns it as
 * well), and is handed back at once: *@req is NULL and nothing is left
 * to test or wait for. Matching order is zcr_irecv_comm()'s.
 * Return: 1 (complete, status in @st, its error field -EMSGSIZE for a
 * truncated message), 0 (posted, *@req to test or wait on), -EINVAL
 * (also a NULL @req or @st, @st_size too small or an unknown flag), or
 * an error of zcr_irecv_comm(). Since 0.3.
 */
int zcr_irecv_test_comm(struct zcr_ctx *ctx, uint32_t comm, void *buf,
			size_t size, int src, int tag, unsigned int flags,
			struct zcr_req **req, struct zcr_status *st,
			size_t st_size);

/* Flags of zcr_iprobe_comm() and zcr_improbe_comm(). */
#define ZCRECV_PROBE_NO_PROGRESS (1U << 0) /* look at what arrived only */

/**
 * zcr_iprobe_comm() - is a message of @comm from @src (or
 * ZCRECV_ANY_SOURCE) with @tag (or ZCRECV_ANY_TAG) there for a receive to
 * take?
 * @ctx: the context
 * @comm: communicator id
 * @src: source rank or ZCRECV_ANY_SOURCE
 * @tag: tag or ZCRECV_ANY_TAG
 * @flags: 0 or ZCRECV_PROBE_NO_PROGRESS: look at the messages that
 *	arrived only, without a progress pass
 * @st: on 1, its source, tag and length (error 0); may be NULL
 * @st_size: sizeof(*@st) as the caller was compiled
 *
 * Unless told not to, makes progress once (without waiting) when nothing
 * is there yet. The message found is the one a receive posted now with
 * the same arguments would take. Nothing is taken.
 * Return: 1 found, 0 not (yet), -EINVAL (also an unknown flag, or @st_size
 * below the 0.1 struct). Since 0.3.
 */
int zcr_iprobe_comm(struct zcr_ctx *ctx, uint32_t comm, int src, int tag,
		    unsigned int flags, struct zcr_status *st, size_t st_size);

/**
 * zcr_iprobe() - zcr_iprobe_comm() with no flags, filling the 0.1 fields
 * of @st. Kept for compatibility (the name lacks _comm). Since 0.2.
 */
int zcr_iprobe(struct zcr_ctx *ctx, uint32_t comm, int src, int tag,
	       struct zcr_status *st);

/* A message claimed by zcr_improbe(): no receive but zcr_imrecv() takes it. */
struct zcr_message;

/**
 * zcr_improbe_comm() - zcr_iprobe_comm() that claims the message it finds
 * @ctx: the context
 * @comm: communicator id
 * @src: source rank or ZCRECV_ANY_SOURCE
 * @tag: tag or ZCRECV_ANY_TAG
 * @flags: 0 or ZCRECV_PROBE_NO_PROGRESS, as for zcr_iprobe_comm()
 * @msg: on 1, the claimed message; hand it to zcr_imrecv() exactly once
 * @st: on 1, its source, tag and length (error 0); may be NULL
 * @st_size: sizeof(*@st) as the caller was compiled
 *
 * The message found is the one a receive posted now with the same
 * arguments would take; it is taken off the queue, so no other receive
 * or probe sees it (MPI_Improbe).
 * Return: 1 found, 0 not (yet), -EINVAL (also an unknown flag, or
 * @st_size below the 0.1 struct), -ENOMEM. Since 0.3.
 */
int zcr_improbe_comm(struct zcr_ctx *ctx, uint32_t comm, int src, int tag,
		     unsigned int flags, struct zcr_message **msg,
		     struct zcr_status *st, size_t st_size);

/**
 * zcr_improbe() - zcr_improbe_comm() with no flags, filling the 0.1
 * fields of @st. Kept for compatibility (the name lacks _comm). Since 0.2.
 */
int zcr_improbe(struct zcr_ctx *ctx, uint32_t comm, int src, int tag,
		struct zcr_message **msg, struct zcr_status *st);

/**
 * zcr_imrecv() - receive the message @msg into @buf (MPI_Imrecv)
 * @msg: from zcr_improbe(); consumed
 * @req: the receive, completed with zcr_test() or zcr_wait() as those of
 *	zcr_irecv() (-EMSGSIZE when longer than @size)
 *
 * The predictor sees it as a receive; a staged message is remapped or
 * copied into @buf as for zcr_irecv().
 * Return: 0, -EINVAL. Since 0.2.
 */
int zcr_imrecv(struct zcr_message *msg, void *buf, size_t size,
	       struct zcr_req **req);

/*
 * ---- Persistent requests (since 0.3) -------------------------------------
 *
 * A send or receive whose arguments are bound once and started many
 * times (MPI_Send_init, MPI_Recv_init, MPI_Start). A persistent receive
 * is known to the library while it exists, started or not: a message it
 * could take that arrives before it is started is staged at its buffer's
 * page offset, so that a whole-page part lands by remap, whatever the
 * predictor would have guessed. Its starts do not teach the predictor.
 */

/* A persistent send or receive: zcr_send_init_comm(), zcr_recv_init_comm() */
struct zcr_preq;

/* zcr_send_init_comm() flags */
#define ZCRECV_SEND_SYNC	(1u << 0)	/* as zcr_issend_comm() */

/**
 * zcr_send_init_comm() - bind a send of @len bytes at @buf, tag @tag,
 * message of communicator @comm, to @ep
 * @flags: 0 or ZCRECV_SEND_SYNC
 * @preq: the persistent send; zcr_preq_free() it before @ep is closed
 *
 * Checks the arguments once; every zcr_start() then sends the bytes at
 * @buf as they are then.
 * Return: 0, -EINVAL (bad argument or flag), -EMSGSIZE (@len above the
 * context's limit), -ENOMEM. Since 0.3.
 */
int zcr_send_init_comm(struct zcr_ep *ep, uint32_t comm, const void *buf,
		       size_t len, int tag, unsigned int flags,
		       struct zcr_preq **preq);

/**
 * zcr_recv_init_comm() - bind a receive into @buf (@size bytes) of a
 * message of communicator @comm from @src (or ZCRECV_ANY_SOURCE) with
 * @tag (or ZCRECV_ANY_TAG)
 * @flags: 0
 * @preq: the persistent receive
 *
 * From now until zcr_preq_free(), messages it could take that arrive
 * while it is not started are staged at @buf's page offset. Where
 * several persistent receives could take a message, it is staged for the
 * one started longest ago (a rotation of buffers started in turn). Over
 * verbs a start may offer @buf to the sender, which writes into it; @buf
 * then stays registered (pinned, never remapped into) until the free.
 * Return: 0, -EINVAL (bad argument or flag), -ENOMEM. Since 0.3.
 */
int zcr_recv_init_comm(struct zcr_ctx *ctx, uint32_t comm, void *buf,
		       size_t size, int src, int tag, unsigned int flags,
		       struct zcr_preq **preq);

/**
 * zcr_start() - start the persistent send or receive @preq
 * @req: the started operation, completed and freed by zcr_test() or
 *	zcr_wait() as those of zcr_isend_comm() and zcr_irecv_comm()
 *
 * A persistent request may be started again before the last start
 * completed: each start is an operation of its own.
 * Return: 0, -EINVAL, or an error of zcr_isend_comm() / zcr_irecv_comm().
 * Since 0.3.
 */
int zcr_start(struct zcr_preq *preq, struct zcr_req **req);

/**
 * zcr_start_test() - start the persistent send or receive @preq, and
 * tell whether it completed within the call
 * @req: the started operation, as zcr_start()'s, when 0 is returned
 * @st: the status (its error field too: -EMSGSIZE for a truncated
 *	receive) when 1 is returned; @st_size: sizeof(*@st)
 *
 * An eager send that went into the peer's ring, or a receive whose
 * message had arrived, completes inside the start: then no request is
 * made for it (*@req is NULL), nothing is left to test or wait for, and
 * the context's lock is taken once for the whole operation.
 * Return: 1 (complete, status in @st), 0 (started, *@req to test or wait
 * on), -EINVAL, or an error of zcr_start(). Since 0.3.
 */
int zcr_start_test(struct zcr_preq *preq, struct zcr_req **req,
		   struct zcr_status *st, size_t st_size);

/**
 * zcr_preq_free() - free the persistent request @preq
 *
 * Operations it started go on and complete as before. Messages already
 * staged for a persistent receive stay staged for whatever receive takes
 * them. NULL is ignored. Persistent requests not freed are freed by
 * zcr_ctx_destroy(). Since 0.3.
 */
void zcr_preq_free(struct zcr_preq *preq);

/*
 * ---- Jobs (since 0.2) ----------------------------------------------------
 */

/**
 * struct zcr_job_attr - a job whose caller exchanges the addresses
 * @rank:	this process's rank in the job, 0 <= @rank < @size
 * @size:	number of ranks
 * @allgather:	collective over all ranks: gather @len bytes at @mine of
 *		every rank into @all (rank r's at @all + r * @len); returns
 *		0 or nonzero on failure
 * @arg:	passed to @allgather
 */
struct zcr_job_attr {
	int rank;
	int size;
	int (*allgather)(const void *mine, void *all, size_t len, void *arg);
	void *arg;
};

/**
 * zcr_ctx_create_job() - create the context of one rank of a job wired up
 * by its launcher
 * @attr: context options as for zcr_ctx_create_sized() (rank ignored), or
 *	NULL
 * @attr_size: sizeof(*@attr)
 * @job: NULL: rank, size and the exchange come from the launcher (PMIx:
 *	PMIX_NAMESPACE set; else ZCRECV_JOB_DIR with ZCRECV_RANK/ZCRECV_SIZE
 *	or PMI_RANK/PMI_SIZE); else the caller's allgather
 * @job_size: sizeof(*@job)
 * @ctx: the new context
 *
 * Collective: every rank of the job calls it. Without a secret in @attr
 * or ZCRECV_JOB_SECRET, rank 0 draws one and hands it out in a first
 * exchange. Each rank listens (ZCRECV_JOB_LISTEN, default 0.0.0.0:0) and
 * publishes HOST:PORT (HOST: ZCRECV_JOB_HOST, else the address of the
 * default route, else 127.0.0.1). Connections are dialled by
 * zcr_ctx_job_ep() on first use; a pair shares one where it can (both
 * directions on one TCP connection, see zcr_ctx_job_ep()). Messages carry
 * communicator ids (zcr_isend_comm()).
 * Return: 0; -ENOENT (no PMIx server and no environment fallback: said on
 * stderr); -ETIMEDOUT (ZCRECV_JOB_DIR: a rank did not show up within
 * ZCRECV_JOB_TIMEOUT_MS, default 60000); -EINVAL; another -errno.
 * Since 0.2.
 */
int zcr_ctx_create_job(const struct zcr_ctx_attr *attr, size_t attr_size,
		       const struct zcr_job_attr *job, size_t job_size,
		       struct zcr_ctx **ctx);

/**
 * zcr_ctx_job() - rank and size of a job context (either may be NULL).
 * Return: 0, or -EINVAL when @ctx is not from zcr_ctx_create_job().
 * Since 0.2.
 */
int zcr_ctx_job(struct zcr_ctx *ctx, int *rank, int *size);

/**
 * zcr_ctx_job_ep() - the endpoint to send to @rank of the job
 * @ctx: a context from zcr_ctx_create_job()
 * @rank: 0 <= @rank < size of the job, our own rank included
 * @flags: 0 (none defined yet)
 * @ep: set to the endpoint on success
 *
 * On the first call the open connection @rank dialled to us, if any, else
 * one dialled now. When both dialled at once, the higher rank moves its
 * sends to the lower rank's connection while its own has carried no
 * message (an endpoint handed out earlier follows). The endpoint belongs
 * to the context: do not close it.
 * Return: 0 with *@ep set; -EINVAL (also any flag); an error of
 * zcr_ep_connect(). Since 0.3.
 */
int zcr_ctx_job_ep(struct zcr_ctx *ctx, int rank, unsigned int flags,
		   struct zcr_ep **ep);

/**
 * zcr_job_ep() - zcr_ctx_job_ep() with no flags. Kept for compatibility
 * (the name lacks its object, ctx). Since 0.2.
 */
int zcr_job_ep(struct zcr_ctx *ctx, int rank, struct zcr_ep **ep);

/**
 * zcr_send() - blocking send: zcr_isend() then zcr_wait(). Since 0.1.
 */
int zcr_send(struct zcr_ep *ep, const void *buf, size_t len, int tag);

/**
 * zcr_recv() - blocking receive: zcr_irecv() then zcr_wait(). Since 0.1.
 */
int zcr_recv(struct zcr_ctx *ctx, void *buf, size_t size, int src, int tag,
	     struct zcr_status *st);

/**
 * zcr_recv_sized() - zcr_recv() for a status of @st_size bytes
 * (sizeof(*@st) as the caller was compiled; see zcr_wait_sized()).
 * Return: as zcr_recv(); -EINVAL also when @st is not NULL and @st_size
 * is below the 0.1 struct. Since 0.3.
 */
int zcr_recv_sized(struct zcr_ctx *ctx, void *buf, size_t size, int src,
		   int tag, struct zcr_status *st, size_t st_size);

/**
 * zcr_mem_alloc() - allocate @size bytes of zero-copy-eligible memory
 * (page aligned): a zone of /dev/zcrecv when the context uses the kmod
 * backend, anonymous private memory otherwise (the uffd-move backend can
 * remap into it; 2 MiB aligned and advised MADV_HUGEPAGE from 2 MiB on).
 * As MPI_Alloc_mem.
 * Return: 0 with *@ptr set, or -errno. Since 0.1.
 */
int zcr_mem_alloc(struct zcr_ctx *ctx, size_t size, void **ptr);

/**
 * zcr_mem_free() - free memory from zcr_mem_alloc(). Since 0.1.
 */
void zcr_mem_free(struct zcr_ctx *ctx, void *ptr);

/**
 * zcr_policy_name() / zcr_backend_name() - printable names. Since 0.1.
 */
const char *zcr_policy_name(int policy);
const char *zcr_backend_name(int backend);

#ifdef __cplusplus
}
#endif

#endif /* ZCRECV_H */
