/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * zcr_internal.h - declarations shared inside libzcrecv. Non-static internal
 * symbols are named __zcr_* and stay out of lib/libzcrecv.map.
 *
 * Locking: one mutex per context (ctx->lock) protects everything the
 * context owns: endpoints, queues, staging pool, predictor, statistics.
 * Functions whose name ends in _locked expect it held. Only poll(2) runs
 * without it, so a progress thread and the application can both progress.
 */
#ifndef ZCR_INTERNAL_H
#define ZCR_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "zcrecv.h"
#include "predict/predict.h"

/* CLOCK_MONOTONIC in ns: deadlines of handshakes and back-offs. */
static inline uint64_t zcr_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* Open /dev/zcrecv, run the handshake; returns the fd or -errno. */
int __zcr_kmod_open(struct zcr_kmod_info *info);

/* ---- intrusive doubly linked lists ---------------------------------------- */
struct zcr_list {
	struct zcr_list *next, *prev;
};

static inline void zcr_list_init(struct zcr_list *l)
{
	l->next = l->prev = l;
}

static inline bool zcr_list_empty(const struct zcr_list *l)
{
	return l->next == l;
}

static inline void zcr_list_add_tail(struct zcr_list *n, struct zcr_list *h)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void zcr_list_del(struct zcr_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

#define zcr_container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))
#define zcr_list_for_each_safe(pos, tmp, head) \
	for (pos = (head)->next, tmp = pos->next; pos != (head); \
	     pos = tmp, tmp = pos->next)

/* ---- wire format (lib/wire.c), ARCHITECTURE.md section 3 ------------------ */
#define ZCR_WIRE_MAGIC		0x3152435aU	/* "ZCR1" in little endian */
#define ZCR_WIRE_VERSION	1
#define ZCR_WIRE_HDR_LEN	32

enum zcr_wire_type {
	ZCR_WIRE_HELLO = 1,	/* handshake: src = sender's rank, len = 0 */
	ZCR_WIRE_DATA = 2,	/* one message: src, tag, len, seq */
};

struct zcr_wire_hdr {
	uint32_t magic;
	uint8_t version;
	uint8_t type;
	uint16_t hdr_len;
	int32_t src;
	int32_t tag;
	uint64_t len;
	uint64_t seq;
};

void __zcr_wire_encode(const struct zcr_wire_hdr *h,
		       uint8_t out[ZCR_WIRE_HDR_LEN]);
/*
 * Parse and validate one header. Returns 0, or -EBADMSG (magic, type, header
 * length, negative src/tag), -EPROTONOSUPPORT (version), -EMSGSIZE (len
 * above max_len or a HELLO with a payload); *why says which, for humans.
 */
int __zcr_wire_parse(const uint8_t in[ZCR_WIRE_HDR_LEN], uint64_t max_len,
		     struct zcr_wire_hdr *h, const char **why);

/* ---- remap backends (lib/remap_*.c), engine and policy (lib/remap.c) ----- */
struct zcr_ctx;

/*
 * One backend. Staging slots come from the backend that will remap them,
 * so that source and destination are the kind of memory it can move.
 * remap() moves the full pages of src into dst (dst and src page aligned,
 * len a multiple of the page size) and returns the bytes moved from the
 * start (a prefix; possibly 0) or -errno with nothing moved; the caller
 * copies the rest. A backend without an operation returns -EOPNOTSUPP.
 */
struct zcr_remap_ops {
	const char *name;
	int id;				/* enum zcr_backend */
	int (*init)(struct zcr_ctx *ctx);
	void (*fini)(struct zcr_ctx *ctx);
	int (*slot_alloc)(struct zcr_ctx *ctx, size_t len, void **p);
	void (*slot_free)(struct zcr_ctx *ctx, void *p, size_t len);
	bool (*eligible)(struct zcr_ctx *ctx, const void *dst, size_t len);
	long (*remap)(struct zcr_ctx *ctx, void *dst, void *src, size_t len);
};

extern const struct zcr_remap_ops __zcr_remap_kmod;
extern const struct zcr_remap_ops __zcr_remap_uffd;
extern const struct zcr_remap_ops __zcr_remap_copy;

#define ZCR_MAX_BACKENDS	3

struct zcr_backend_state {
	const struct zcr_remap_ops *ops;
	uint64_t min_pages;		/* 0: never worth it (auto policy) */
	double copy_ns, remap_ns;	/* per page, calibrated */
};

int __zcr_remap_setup(struct zcr_ctx *ctx, int want);
void __zcr_remap_teardown(struct zcr_ctx *ctx);
/* The backend a message predicted for dst should be staged for. */
const struct zcr_remap_ops *__zcr_remap_pick(struct zcr_ctx *ctx,
					     const void *dst, size_t len);
/* Deliver n bytes staged at src (same page offset or not) into dst. */
void __zcr_remap_deliver_locked(struct zcr_ctx *ctx,
				const struct zcr_remap_ops *ops, char *dst,
				const char *src, size_t n, bool same_offset);

/* ---- memory (lib/mem.c) --------------------------------------------------- */
struct zcr_mem {
	struct zcr_list link;
	char *addr;
	size_t len;
	bool zone;
};

int __zcr_zone_map(struct zcr_ctx *ctx, size_t len, void **p);
bool __zcr_mem_in_zone(struct zcr_ctx *ctx, const void *p, size_t len);

/* ---- staging pool (lib/staging.c) ----------------------------------------- */
struct zcr_slot {
	struct zcr_list link;
	const struct zcr_remap_ops *ops;
	char *base;
	size_t cap;
};

struct zcr_slot *__zcr_slot_get_locked(struct zcr_ctx *ctx,
				       const struct zcr_remap_ops *ops,
				       size_t len);
void __zcr_slot_put_locked(struct zcr_ctx *ctx, struct zcr_slot *s);
void __zcr_staging_fini(struct zcr_ctx *ctx);

/* ---- requests, endpoints, matching ---------------------------------------- */
enum zcr_req_kind { ZCR_REQ_SEND = 1, ZCR_REQ_RECV = 2 };

struct zcr_ep;

struct zcr_req {
	struct zcr_list link;
	struct zcr_ctx *ctx;
	int kind;
	bool done;
	struct zcr_status st;
	/* receive */
	char *buf;
	size_t size;
	int src, tag;
	/* send */
	struct zcr_ep *ep;
	uint8_t hdr[ZCR_WIRE_HDR_LEN];
	const char *sbuf;
	uint64_t len;
	uint64_t sent;			/* header and payload bytes written */
};

/* A message whose header arrived before a matching receive was posted. */
struct zcr_msg {
	struct zcr_list link;
	struct zcr_ep *ep;
	int src, tag;
	uint64_t len;
	struct zcr_slot *slot;
	size_t off;			/* payload at slot->base + off */
	bool complete;
	struct zcr_req *req;		/* matched while still arriving */
};

enum zcr_ep_state { ZCR_EP_HANDSHAKE, ZCR_EP_OPEN, ZCR_EP_CLOSED };

struct zcr_ep {
	struct zcr_list link;
	struct zcr_ctx *ctx;
	int fd;
	int state;
	int rank;
	bool accepted;			/* came from our listening socket */
	bool returned;			/* handed out by zcr_ep_accept */
	int error;
	char errmsg[160];
	char peer[64];
	uint64_t send_seq, recv_seq;
	uint64_t hs_deadline;		/* zcr_now_ns() the handshake ends */
	struct zcr_list sendq;
	/* receive state machine: header, then payload into one target */
	uint8_t hdr[ZCR_WIRE_HDR_LEN];
	size_t hdr_got;
	bool have_hdr;
	bool stalled;			/* header read, no room to land it */
	struct zcr_wire_hdr h;
	char *dst;			/* where payload goes, NULL: discard */
	uint64_t room;			/* bytes of payload that go to dst */
	uint64_t got;
	struct zcr_req *rreq;		/* landing into a posted receive */
	struct zcr_msg *rmsg;		/* landing into staging */
};

struct zcr_ctx {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* a request completed */
	int rank;
	int policy;
	int quiet;
	uint64_t max_msg;
	size_t page;
	int listen_fd;
	uint64_t accept_resume;		/* no accept() before; 0: not paused */
	int wake_fd;			/* eventfd: wake a poller */
	int kmod_fd;
	struct zcr_kmod_info kmod;
	struct zcr_list eps;
	struct zcr_list posted;		/* struct zcr_req, in posting order */
	struct zcr_list unexpected;	/* struct zcr_msg, in arrival order */
	struct zcr_list mems;		/* struct zcr_mem */
	/* staging pool */
	struct zcr_list free_slots;
	uint64_t staging_bytes, staging_limit;
	/* remap engine */
	struct zcr_backend_state be[ZCR_MAX_BACKENDS];
	int nbe;
	int uffd;
	char *uffd_tmp;
	size_t uffd_tmp_len;
	struct io_uring *ring;		/* batched receives, or NULL */
	/* progress */
	unsigned int nep;		/* endpoints on eps */
	unsigned int nhandshake;	/* of them in ZCR_EP_HANDSHAKE */
	uint64_t hs_timeout_ns;
	struct zcr_pollset *pollsets;	/* idle poll sets, for reuse */
	/* prediction */
	struct zcr_predictor *pred;
	char pred_name[32];
	/* progress thread */
	pthread_t thread;
	bool thread_on, thread_stop;
	struct zcr_stats st;
};

/*
 * The pollfd array of one poll(2) call. poll runs without the lock, so
 * each poller takes a set of its own from ctx->pollsets and gives it back
 * afterwards; sets only grow (geometrically), so a steady number of
 * connections and pollers allocates nothing.
 */
struct zcr_pollset {
	struct zcr_pollset *next;
	unsigned int cap;
	struct pollfd *fds;
};

int __zcr_progress_locked(struct zcr_ctx *ctx, int timeout_ms);
void __zcr_wake(struct zcr_ctx *ctx);
void __zcr_req_complete_locked(struct zcr_req *r, int error);

/* transport_tcp.c */
void __zcr_tcp_ring_init(struct zcr_ctx *ctx);
void __zcr_tcp_ring_fini(struct zcr_ctx *ctx);
int __zcr_tcp_listen(const char *hostport, int *port);
int __zcr_tcp_connect(const char *hostport);
int __zcr_tcp_work_locked(struct zcr_ctx *ctx);
/* poll(2) reported an error or hang-up on fd, polled for no event. */
void __zcr_tcp_paused_error_locked(struct zcr_ctx *ctx, int fd);
void __zcr_ep_fail_locked(struct zcr_ep *ep, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void __zcr_ep_send_locked(struct zcr_ep *ep);
struct zcr_ep *__zcr_ep_new_locked(struct zcr_ctx *ctx, int fd, bool accepted);
void __zcr_ep_free(struct zcr_ep *ep);

/* match.c */
bool __zcr_match(int want_src, int want_tag, int src, int tag);
struct zcr_req *__zcr_match_posted_locked(struct zcr_ctx *ctx, int src,
					  int tag);
/* Can a connection (or the listener, for ANY_SOURCE) still bring src? */
bool __zcr_source_possible(struct zcr_ctx *ctx, int src);
int __zcr_post_recv_locked(struct zcr_ctx *ctx, struct zcr_req *r);
void __zcr_msg_deliver_locked(struct zcr_ctx *ctx, struct zcr_msg *m,
			      struct zcr_req *r);
size_t __zcr_predict_offset_locked(struct zcr_ctx *ctx, int src, int tag,
				   uint64_t len, const void **buf);
void __zcr_begin_message_locked(struct zcr_ep *ep);
void __zcr_retry_stalled_locked(struct zcr_ctx *ctx);

#endif /* ZCR_INTERNAL_H */
