// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * verbs.c - the RDMA verbs transport: "verbs://HOST:PORT".
 *
 * Set-up: a TCP connection of the transport's own carries one 128-byte
 * HELLO each way (rank, max_msg, nonce, queue pair number, PSN, GID or
 * LID, MTU), the job secret's MAC when there is one, and a READY byte
 * once the reliable-connected QP is in RTS; no librdmacm. The TCP
 * connection stays open, unused, so that a peer that goes away is
 * noticed at once (like shm's control descriptor).
 *
 * Data: every message starts with a 64-byte header sent with IBV_WR_SEND
 * into one of the receive cells the peer keeps posted. Up to EAGER_MAX
 * bytes travel inline in that cell (eager); a bigger message is announced
 * (RTS: the sender's address and rkey) and the receiver pulls it with RDMA
 * READ at the moment match says where it goes: straight into a posted
 * receive, or into a staging slot at the page offset of the predicted
 * buffer. The receiver then answers FIN, which completes the send.
 *
 * Pinned pages are never exchanged: a staging slot is registered only for
 * the READ that fills it and deregistered before match is told the
 * payload is in, so the remap engine may exchange its pages afterwards,
 * and no rkey or lkey of the slot outlives the registration
 * (Documentation/verbs.md, "Pinned pages").
 *
 * Flow control: DCRED credits per direction for data messages (EAGER and
 * RTS), returned in every header and by CREDIT messages; FIN and CREDIT
 * messages use cells posted beyond the credits (see NRECV).
 *
 * End: a closing endpoint lets what it posted reach the peer, reads the
 * FINs that came, and destroys its QP before it closes the TCP
 * connection (quiesce()). The peer takes that connection's end as TCP's
 * end of stream: what arrived before it is delivered, in order, but for
 * announcements, which cannot be pulled any more (dropped: their sends
 * did not complete), and the endpoint fails when nothing is left
 * (gone_settle()).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "core/ctx.h"
#include "match/match.h"
#include "transport/auth.h"
#include "transport/transport.h"
#include "transport/verbs/verbs.h"
#include "transport/wire.h"

#define HDR		64
#define CELL		(HDR + 8192)
#define EAGER_MAX	(CELL - HDR)
#define DCRED		32		/* data messages in flight, each way */
/*
 * Cells posted: the DCRED data messages, and the control messages a peer
 * can send between two of our progress calls: a FIN for each of our
 * DCRED announced messages and a CREDIT per DCRED/2 data messages, with
 * a margin. RNR retries stay infinite as a last resort.
 */
#define NRECV		(2 * DCRED + DCRED / 2 + 8)
#define NSEND		NRECV
#define BOUNCE		(256u << 10)	/* copy path: READ into this, copy */
#define RD_CHUNK	(1u << 20)	/* largest READ work request */
#define RD_OUT		16		/* READs in flight per endpoint */
#define HELLO_LEN	128
/*
 * How long a closing endpoint waits for what it posted to reach the peer,
 * and for its QP to settle (verbs_ep_close()). A live peer's NIC answers
 * in microseconds; this only bounds a peer that cannot answer any more.
 */
#define CLOSE_NS	(200ull * 1000000)
#define FLUSH_NS	(20ull * 1000000)
#define VMAGIC		0x5652435aU	/* "ZCRV" */
#define VVERSION	1

enum vtype { T_EAGER = 1, T_RTS = 2, T_FIN = 3, T_CREDIT = 4 };
enum wkind { W_RECV = 1, W_SEND = 2, W_READ = 3 };

struct vhdr {
	uint32_t type;
	int32_t src;
	int32_t tag;
	uint32_t credits;		/* data cells reposted since last told */
	uint64_t len;
	uint64_t seq;
	uint64_t addr;			/* RTS: payload in the sender */
	uint32_t rkey;
	int32_t status;			/* FIN: 0 or -errno of the pull */
	uint64_t cookie;		/* RTS/FIN: the sender's request */
	uint64_t pad;
};

_Static_assert(sizeof(struct vhdr) == HDR, "verbs header is 64 bytes");

/* HELLO, sent raw over the TCP connection (both ends little endian). */
struct vhello {
	uint32_t magic;
	uint32_t version;
	int32_t rank;
	uint32_t flags;			/* ZCR_HELLO_AUTH */
	uint64_t max_msg;
	uint64_t nonce;
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
	uint16_t lid;
	uint8_t mtu;			/* enum ibv_mtu */
	uint8_t pad0;
	uint32_t credits;		/* DCRED */
	uint32_t cell;			/* CELL */
	uint8_t pad[60];
};

_Static_assert(sizeof(struct vhello) == HELLO_LEN, "HELLO is 128 bytes");

/* Registration cache entry (ZCRECV_VERBS_REGCACHE entries per context). */
struct rc_ent {
	uintptr_t a;
	size_t len;
	struct ibv_mr *mr;
	uint64_t use;
	unsigned int refs;
};

struct vctx {
	struct zcr_list eps;		/* struct vep */
	unsigned int n;
	int lfd;			/* listener, or -1 */
	pthread_mutex_t dev_lock;	/* the lazy device open */
	bool dev_tried;
	int dev_err;
	struct ibv_context *dev;
	struct ibv_pd *pd;
	struct ibv_port_attr pa;
	int port, gidx;
	int gid_want;			/* ZCRECV_VERBS_GID, or -1: choose */
	char dev_name[64];		/* ZCRECV_VERBS_DEV, or "": the first */
	union ibv_gid gid;
	bool land_copy;			/* staging landings via bounce buffer */
	unsigned int cache_n;
	struct rc_ent *cache;
	uint64_t cache_tick;
	bool print;
	uint32_t rd_chunk;		/* largest READ: RD_CHUNK or less */
	uint64_t spin_ns;		/* look at the CQs before sleeping */
	pid_t owner;			/* the process that opened dev */
	struct zcr_verbs_stats st;
};

/*
 * After fork(2) the child shares the device's file with its parent: a
 * child that destroys an inherited context must not destroy the parent's
 * verbs objects (they are the same kernel objects). It leaves them alone.
 */
static bool foreign(const struct vctx *vc)
{
	return vc->dev && vc->owner != getpid();
}

/* The pending RDMA READ of the message at the head of the data queue. */
struct vread {
	bool active;
	bool bounce;
	bool staged;			/* into a staging slot */
	struct ibv_mr *mr;		/* dst's registration (not bounce) */
	struct rc_ent *ce;		/* or its cache entry */
	uint64_t n, off, posted;	/* bytes to pull, done, requested */
	unsigned int out;		/* READs not completed */
};

struct vep {
	struct zcr_list link;		/* on vc->eps */
	struct vctx *vc;
	struct zcr_ep *ep;
	int fd;				/* the TCP connection */
	/* handshake */
	struct vhello mine, peer;
	uint8_t in[HELLO_LEN];
	size_t got;
	int stage;			/* 0 HELLO, 1 AUTH, 2 READY, 3 open */
	bool rts;			/* QP is ready to send */
	/* verbs */
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	char *mem;			/* NRECV + NSEND cells, bounce */
	size_t memlen;
	struct ibv_mr *mr;
	/* receive: data cells in arrival order */
	uint32_t dq[NRECV];
	unsigned int dq_head, dq_n;
	bool arriving;			/* dq's head is ep->rx */
	struct vhdr cur;		/* its header, copied out */
	struct vread rd;
	unsigned int ret_credits;	/* data cells reposted, untold */
	unsigned int credits;		/* data messages we may send */
	/* send */
	uint32_t sfree[NSEND];
	unsigned int nsfree;
	struct ibv_wc stash[16];	/* taken by poll_fill's look */
	int nstash;
	uint64_t *fins;			/* FINs waiting for a send cell */
	unsigned int nfin, fin_cap;
	int fin_status;
	/*
	 * The peer closed its end of the TCP connection, or exited: why.
	 * What it sent before is in our CQ and cells, and is still
	 * delivered but for announcements (dropped); the endpoint fails
	 * once none is left (gone_settle()).
	 */
	const char *gone;
	bool broken;			/* a work request failed: QP in error */
};

static inline struct vep *V(struct zcr_ep *ep)
{
	return ep->tp_priv;
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static char *rcell(struct vep *ve, uint32_t i)
{
	return ve->mem + (size_t)i * CELL;
}

static char *scell(struct vep *ve, uint32_t i)
{
	return ve->mem + (size_t)(NRECV + i) * CELL;
}

static char *bounce(struct vep *ve)
{
	return ve->mem + (size_t)(NRECV + NSEND) * CELL;
}

static uint64_t wrid(int kind, uint32_t i)
{
	return (uint64_t)kind << 56 | i;
}

/* ---- device and registrations ------------------------------------------ */

/* Open the device once per context (first listen or connect). */
static int dev_open(struct vctx *vc)
{
	struct ibv_device **list = NULL;
	const char *want = vc->dev_name;
	int i, n = 0, ret = 0;

	pthread_mutex_lock(&vc->dev_lock);
	if (vc->dev_tried) {
		ret = vc->dev_err;
		goto out;
	}
	vc->dev_tried = true;
	list = ibv_get_device_list(&n);
	if (!list || n <= 0) {
		ret = -ENODEV;
		goto done;
	}
	for (i = 0; i < n; i++)
		if (!*want || !strcmp(ibv_get_device_name(list[i]), want))
			break;
	if (i == n) {
		ret = -ENODEV;
		goto done;
	}
	vc->owner = getpid();
	vc->dev = ibv_open_device(list[i]);
	if (!vc->dev) {
		ret = errno ? -errno : -ENODEV;
		goto done;
	}
	vc->port = 1;
	if (ibv_query_port(vc->dev, vc->port, &vc->pa)) {
		ret = -EIO;
		goto done;
	}
	vc->rd_chunk = vc->pa.max_msg_sz && vc->pa.max_msg_sz < RD_CHUNK ?
		       vc->pa.max_msg_sz & ~4095u : RD_CHUNK;
	if (!vc->rd_chunk)
		vc->rd_chunk = 4096;
	vc->pd = ibv_alloc_pd(vc->dev);
	if (!vc->pd) {
		ret = -ENOMEM;
		goto done;
	}
	/*
	 * RoCE: a GID is needed; prefer an IPv4-mapped one (RoCE v2 over
	 * the netdev's address), else index 0. ZCRECV_VERBS_GID forces one.
	 */
	vc->gidx = vc->gid_want;
	for (i = 0; vc->gidx < 0 && i < vc->pa.gid_tbl_len && i < 16; i++) {
		static const uint8_t v4[12] = { [10] = 0xff, [11] = 0xff };
		union ibv_gid g;

		if (!ibv_query_gid(vc->dev, vc->port, i, &g) &&
		    !memcmp(g.raw, v4, sizeof(v4)))
			vc->gidx = i;
	}
	if (vc->gidx < 0)
		vc->gidx = 0;
	if (ibv_query_gid(vc->dev, vc->port, vc->gidx, &vc->gid))
		memset(&vc->gid, 0, sizeof(vc->gid));
done:
	if (ret) {
		if (vc->pd)
			ibv_dealloc_pd(vc->pd);
		if (vc->dev)
			ibv_close_device(vc->dev);
		vc->pd = NULL;
		vc->dev = NULL;
	}
	vc->dev_err = ret;
	if (list)
		ibv_free_device_list(list);
out:
	pthread_mutex_unlock(&vc->dev_lock);
	return ret;
}

/* Register [p, p + n) rounded out to pages; NULL with errno set. */
static struct ibv_mr *reg(struct vctx *vc, const void *p, size_t n,
			  int access)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(pg - 1);
	uintptr_t e = ((uintptr_t)p + n + pg - 1) & ~(pg - 1);
	uint64_t t = now_ns();
	struct ibv_mr *mr;

	mr = ibv_reg_mr(vc->pd, (void *)a, e - a, access);
	vc->st.regs++;
	vc->st.reg_ns += now_ns() - t;
	return mr;
}

static void dereg(struct vctx *vc, struct ibv_mr *mr)
{
	uint64_t t = now_ns();

	ibv_dereg_mr(mr);
	vc->st.deregs++;
	vc->st.dereg_ns += now_ns() - t;
}

#define ACC_ALL	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ)

/*
 * A registration of [p, p + n): from the cache when it is on (*ce set,
 * release with cache_put), else a fresh one (*ce NULL, dereg it).
 */
static struct ibv_mr *cache_get(struct vctx *vc, const void *p, size_t n,
				struct rc_ent **ce)
{
	uintptr_t a = (uintptr_t)p;
	struct rc_ent *e, *victim = NULL;
	struct ibv_mr *mr;
	unsigned int i;

	*ce = NULL;
	if (!vc->cache_n)
		return reg(vc, p, n, ACC_ALL);
	for (i = 0; i < vc->cache_n; i++) {
		e = &vc->cache[i];
		if (e->mr && e->a <= a && a + n <= e->a + e->len) {
			e->refs++;
			e->use = ++vc->cache_tick;
			vc->st.cache_hits++;
			*ce = e;
			return e->mr;
		}
		if (!e->refs && (!victim || !e->mr ||
				 (victim->mr && e->use < victim->use)))
			victim = e;
	}
	mr = reg(vc, p, n, ACC_ALL);
	if (!mr || !victim)
		return mr;
	if (victim->mr)
		dereg(vc, victim->mr);
	victim->mr = mr;
	victim->a = (uintptr_t)mr->addr;
	victim->len = mr->length;
	victim->refs = 1;
	victim->use = ++vc->cache_tick;
	*ce = victim;
	return mr;
}

static void cache_put(struct vctx *vc, struct ibv_mr *mr, struct rc_ent *ce)
{
	if (ce)
		ce->refs--;
	else if (mr)
		dereg(vc, mr);
}

/* ---- context ------------------------------------------------------------ */

static int verbs_init(struct zcr_ctx *ctx, void **priv)
{
	struct vctx *vc = calloc(1, sizeof(*vc));
	const struct zcr_env_val *env = ctx->env.v;

	if (!vc)
		return -ENOMEM;
	zcr_list_init(&vc->eps);
	vc->lfd = -1;
	pthread_mutex_init(&vc->dev_lock, NULL);
	/* The device is opened at the first listen or connect: keep these. */
	if (env[ZCR_ENV_VERBS_DEV].s)
		snprintf(vc->dev_name, sizeof(vc->dev_name), "%s",
			 env[ZCR_ENV_VERBS_DEV].s);
	vc->gid_want = env[ZCR_ENV_VERBS_GID].set ?
		       (int)env[ZCR_ENV_VERBS_GID].u : -1;
	vc->land_copy = env[ZCR_ENV_VERBS_LAND].u == 1;
	vc->cache_n = (unsigned int)env[ZCR_ENV_VERBS_REGCACHE].u;
	if (vc->cache_n) {
		vc->cache = calloc(vc->cache_n, sizeof(*vc->cache));
		if (!vc->cache)
			vc->cache_n = 0;
	}
	vc->print = env[ZCR_ENV_VERBS_STATS].u;
	vc->spin_ns = env[ZCR_ENV_VERBS_SPIN_US].u * 1000;
	*priv = vc;
	return 0;
}

static void print_stats(struct zcr_ctx *ctx, const struct zcr_verbs_stats *s)
{
	fprintf(stderr, "zcrecv-verbs: rank %d eager %llu rndv %llu "
		"direct_posted %llu direct_staged %llu bounced %llu "
		"bounce_bytes %llu regs %llu reg_ns %llu deregs %llu "
		"dereg_ns %llu reg_failed %llu cache_hits %llu\n", ctx->rank,
		(unsigned long long)s->eager, (unsigned long long)s->rndv,
		(unsigned long long)s->direct_posted,
		(unsigned long long)s->direct_staged,
		(unsigned long long)s->bounced,
		(unsigned long long)s->bounce_bytes,
		(unsigned long long)s->regs, (unsigned long long)s->reg_ns,
		(unsigned long long)s->deregs,
		(unsigned long long)s->dereg_ns,
		(unsigned long long)s->reg_failed,
		(unsigned long long)s->cache_hits);
}

static void verbs_fini(struct zcr_ctx *ctx, void *priv)
{
	struct vctx *vc = priv;
	unsigned int i;

	if (vc->print && vc->dev && !foreign(vc))
		print_stats(ctx, &vc->st);
	for (i = 0; i < vc->cache_n && !foreign(vc); i++)
		if (vc->cache[i].mr)
			ibv_dereg_mr(vc->cache[i].mr);
	free(vc->cache);
	if (vc->lfd >= 0)
		close(vc->lfd);
	if (vc->pd && !foreign(vc))
		ibv_dealloc_pd(vc->pd);
	if (vc->dev && !foreign(vc))
		ibv_close_device(vc->dev);
	pthread_mutex_destroy(&vc->dev_lock);
	free(vc);
}

static struct vctx *vctx_of(struct zcr_ctx *ctx)
{
	int i;

	for (i = 0; i < ctx->ntr; i++)
		if (ctx->tr[i].ops == &__zcr_transport_verbs)
			return ctx->tr[i].priv;
	return NULL;
}

int __zcr_verbs_stats(struct zcr_ctx *ctx, struct zcr_verbs_stats *vs)
{
	struct vctx *vc;
	int ret = -ENODEV;

	pthread_mutex_lock(&ctx->lock);
	vc = vctx_of(ctx);
	if (vc && vc->dev) {
		*vs = vc->st;
		ret = 0;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

/* ---- TCP set-up connection ---------------------------------------------- */

/* "HOST:PORT" or "[V6]:PORT" into getaddrinfo results. */
static int resolve(const char *hostport, bool passive, struct addrinfo **res)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	char host[256];
	const char *colon = strrchr(hostport, ':');
	size_t hl;
	int ret;

	if (!colon || !colon[1])
		return -EINVAL;
	hl = (size_t)(colon - hostport);
	if (hl && hostport[0] == '[' && hostport[hl - 1] == ']') {
		hostport++;
		hl -= 2;
	}
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, hostport, hl);
	host[hl] = 0;
	if (passive)
		hints.ai_flags = AI_PASSIVE;
	ret = getaddrinfo(hl ? host : NULL, colon + 1, &hints, res);
	if (ret)
		return ret == EAI_NONAME ? -EHOSTUNREACH : -EAGAIN;
	return 0;
}

static int verbs_listen(struct zcr_ctx *ctx, void *priv, const char *addr)
{
	struct vctx *vc = priv;
	struct addrinfo *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd, ret, one = 1;

	(void)ctx;
	if (vc->lfd >= 0)
		return -EBUSY;
	ret = dev_open(vc);
	if (ret)
		return ret;
	ret = resolve(addr, true, &ai);
	if (ret)
		return ret;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0) {
		freeaddrinfo(ai);
		return -errno;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl)) {
		ret = -errno;
		freeaddrinfo(ai);
		close(fd);
		return ret;
	}
	freeaddrinfo(ai);
	pthread_mutex_lock(&ctx->lock);
	vc->lfd = fd;
	pthread_mutex_unlock(&ctx->lock);
	return ntohs(ss.ss_family == AF_INET6 ?
		     ((struct sockaddr_in6 *)&ss)->sin6_port :
		     ((struct sockaddr_in *)&ss)->sin_port);
}

static void vep_release(struct vep *ve);

/*
 * A new endpoint's verbs state: CQ with its channel, the RC QP in INIT,
 * the cells (registered), all receive cells posted; and our HELLO.
 */
static int vep_new(struct zcr_ctx *ctx, struct vctx *vc, int fd,
		   struct vep **out)
{
	struct ibv_qp_init_attr qi = { 0 };
	struct ibv_qp_attr qa = { 0 };
	struct vep *ve = calloc(1, sizeof(*ve));
	uint32_t i;
	int ret = -ENOMEM, one = 1;

	if (!ve)
		return -ENOMEM;
	ve->vc = vc;
	ve->fd = fd;
	zcr_list_init(&ve->link);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ve->memlen = (size_t)(NRECV + NSEND) * CELL + BOUNCE;
	ve->mem = mmap(NULL, ve->memlen, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ve->mem == MAP_FAILED) {
		ve->mem = NULL;
		goto fail;
	}
	ve->mr = reg(vc, ve->mem, ve->memlen, IBV_ACCESS_LOCAL_WRITE);
	if (!ve->mr) {
		ret = errno ? -errno : -ENOMEM;
		vc->st.reg_failed++;
		goto fail;
	}
	ve->ch = ibv_create_comp_channel(vc->dev);
	if (!ve->ch)
		goto fail_errno;
	fcntl(ve->ch->fd, F_SETFL, fcntl(ve->ch->fd, F_GETFL) | O_NONBLOCK);
	ve->cq = ibv_create_cq(vc->dev, 2 * (NRECV + NSEND) + 64, ve, ve->ch,
			       0);
	if (!ve->cq)
		goto fail_errno;
	qi.send_cq = ve->cq;
	qi.recv_cq = ve->cq;
	qi.qp_type = IBV_QPT_RC;
	qi.cap.max_send_wr = NSEND + RD_OUT;
	qi.cap.max_recv_wr = NRECV;
	qi.cap.max_send_sge = 1;
	qi.cap.max_recv_sge = 1;
	ve->qp = ibv_create_qp(vc->pd, &qi);
	if (!ve->qp)
		goto fail_errno;
	qa.qp_state = IBV_QPS_INIT;
	qa.pkey_index = 0;
	qa.port_num = (uint8_t)vc->port;
	qa.qp_access_flags = IBV_ACCESS_REMOTE_READ;
	ret = ibv_modify_qp(ve->qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret) {
		ret = -ret;
		goto fail;
	}
	for (i = 0; i < NRECV; i++) {
		struct ibv_sge sg = { (uintptr_t)rcell(ve, i), CELL,
				      ve->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = wrid(W_RECV, i),
					  .sg_list = &sg, .num_sge = 1 }, *bad;

		ret = ibv_post_recv(ve->qp, &wr, &bad);
		if (ret) {
			ret = -ret;
			goto fail;
		}
	}
	for (i = 0; i < NSEND; i++)
		ve->sfree[i] = NSEND - 1 - i;
	ve->nsfree = NSEND;
	ve->credits = DCRED;
	ve->mine.magic = VMAGIC;
	ve->mine.version = VVERSION;
	ve->mine.rank = ctx->rank;
	ve->mine.flags = ctx->secret_len ? ZCR_HELLO_AUTH : 0;
	ve->mine.max_msg = ctx->max_msg;
	if (__zcr_auth_nonce(&ve->mine.nonce)) {
		ret = -EIO;
		goto fail;
	}
	ve->mine.qpn = ve->qp->qp_num;
	ve->mine.psn = (uint32_t)(ve->mine.nonce & 0xffffff);
	memcpy(ve->mine.gid, vc->gid.raw, 16);
	ve->mine.lid = vc->pa.lid;
	ve->mine.mtu = (uint8_t)vc->pa.active_mtu;
	ve->mine.credits = DCRED;
	ve->mine.cell = CELL;
	*out = ve;
	return 0;
fail_errno:
	ret = errno ? -errno : -ENOMEM;
fail:
	ve->fd = -1;		/* the caller closes fd */
	vep_release(ve);
	free(ve);
	return ret;
}

static int verbs_connect(struct zcr_ctx *ctx, void *priv, const char *addr,
			 void **ep_priv)
{
	struct vctx *vc = priv;
	struct addrinfo *ai, *p;
	struct vep *ve;
	int fd = -1, ret;

	ret = dev_open(vc);
	if (ret)
		return ret;
	ret = resolve(addr, false, &ai);
	if (ret)
		return ret;
	ret = -ECONNREFUSED;
	for (p = ai; p; p = p->ai_next) {
		fd = socket(p->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		if (!connect(fd, p->ai_addr, p->ai_addrlen))
			break;
		ret = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		return ret;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	pthread_mutex_lock(&ctx->lock);
	ret = vep_new(ctx, vc, fd, &ve);
	pthread_mutex_unlock(&ctx->lock);
	if (ret) {
		close(fd);
		return ret;
	}
	*ep_priv = ve;
	return 0;
}

/* Write all of a small handshake message (a fresh socket takes it). */
static int send_all(struct vep *ve, const void *p, size_t n)
{
	ssize_t w = send(ve->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (w == (ssize_t)n)
		return 0;
	return w < 0 ? -errno : -EAGAIN;
}

static void verbs_start(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	int ret;

	ve->ep = ep;
	zcr_list_add_tail(&ve->link, &ve->vc->eps);
	ve->vc->n++;
	snprintf(ep->errmsg, sizeof(ep->errmsg), "verbs");
	ret = send_all(ve, &ve->mine, sizeof(ve->mine));
	if (ret)
		__zcr_ep_fail_locked(ep, ret, "verbs: cannot send HELLO");
}

/* The peer's HELLO is in: QP to RTR and RTS. */
static int qp_connect(struct vep *ve)
{
	struct vctx *vc = ve->vc;
	struct ibv_qp_attr qa = { 0 };
	struct ibv_device_attr da;
	int rd = 4, ret;

	if (!ibv_query_device(vc->dev, &da) && da.max_qp_rd_atom < rd)
		rd = da.max_qp_rd_atom > 0 ? da.max_qp_rd_atom : 1;
	qa.qp_state = IBV_QPS_RTR;
	qa.path_mtu = ve->peer.mtu < ve->mine.mtu ? ve->peer.mtu :
		      ve->mine.mtu;
	qa.dest_qp_num = ve->peer.qpn;
	qa.rq_psn = ve->peer.psn & 0xffffff;
	qa.max_dest_rd_atomic = (uint8_t)rd;
	qa.min_rnr_timer = 12;
	qa.ah_attr.port_num = (uint8_t)vc->port;
	qa.ah_attr.dlid = ve->peer.lid;
	if (vc->pa.link_layer == IBV_LINK_LAYER_ETHERNET || !vc->pa.lid) {
		qa.ah_attr.is_global = 1;
		memcpy(qa.ah_attr.grh.dgid.raw, ve->peer.gid, 16);
		qa.ah_attr.grh.sgid_index = (uint8_t)vc->gidx;
		qa.ah_attr.grh.hop_limit = 64;
	}
	ret = ibv_modify_qp(ve->qp, &qa, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return -ret;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.timeout = 14;		/* 4.096 us * 2^14 = 67 ms */
	qa.retry_cnt = 7;
	qa.rnr_retry = 7;		/* infinite: flow control is credits */
	qa.sq_psn = ve->mine.psn;
	qa.max_rd_atomic = (uint8_t)rd;
	ret = ibv_modify_qp(ve->qp, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT |
			    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (ret)
		return -ret;
	ve->rts = true;
	return 0;
}

static void mac_of(struct vep *ve, bool ours, uint8_t mac[ZCR_AUTH_MAC_LEN])
{
	struct zcr_ctx *ctx = ve->ep->ctx;

	if (ours)
		__zcr_auth_mac(ctx, ctx->rank, ve->peer.rank, ve->peer.nonce,
			       ve->mine.nonce, mac);
	else
		__zcr_auth_mac(ctx, ve->peer.rank, ctx->rank, ve->mine.nonce,
			       ve->peer.nonce, mac);
}

/* One handshake step is complete in ve->in. false: the endpoint failed. */
static bool hs_step(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct zcr_ctx *ctx = ep->ctx;
	uint8_t mac[ZCR_AUTH_MAC_LEN];
	const char *bad = NULL;
	int ret;

	ve->got = 0;
	if (ve->stage == 0) {
		memcpy(&ve->peer, ve->in, sizeof(ve->peer));
		if (ve->peer.magic != VMAGIC)
			bad = "not a verbs HELLO";
		else if (ve->peer.version != VVERSION)
			bad = "unknown verbs version";
		else if (ve->peer.rank < 0)
			bad = "negative rank";
		else if (ve->peer.credits != DCRED || ve->peer.cell != CELL)
			bad = "other credits or cell size";
		else if (ve->peer.flags & ~(uint32_t)ZCR_HELLO_AUTH)
			bad = "unknown flags";
		if (bad) {
			__zcr_ep_fail_locked(ep, -EPROTO, "verbs: bad HELLO: %s",
					     bad);
			return false;
		}
		if (!ctx->secret_len != !(ve->peer.flags & ZCR_HELLO_AUTH)) {
			__zcr_ep_fail_locked(ep, -EACCES, ctx->secret_len ?
					     "peer (claiming rank %d) does not "
					     "know the job secret" :
					     "peer (claiming rank %d) requires "
					     "a job secret, we have none",
					     ve->peer.rank);
			return false;
		}
		ep->peer_max_msg = ve->peer.max_msg ? ve->peer.max_msg :
				   UINT64_MAX;
		ret = qp_connect(ve);
		if (ret) {
			__zcr_ep_fail_locked(ep, ret, "verbs: cannot connect "
					     "the queue pair");
			return false;
		}
		if (ctx->secret_len) {
			mac_of(ve, true, mac);
			ve->stage = 1;
			ret = send_all(ve, mac, sizeof(mac));
		} else {
			ve->stage = 2;
			ret = send_all(ve, "R", 1);
		}
	} else if (ve->stage == 1) {
		mac_of(ve, false, mac);
		if (!__zcr_auth_equal(mac, ve->in, sizeof(mac))) {
			__zcr_ep_fail_locked(ep, -EACCES, "peer (claiming rank "
					     "%d) failed authentication: "
					     "another job secret",
					     ve->peer.rank);
			return false;
		}
		ve->stage = 2;
		ret = send_all(ve, "R", 1);
	} else {
		if (ve->in[0] != 'R') {
			__zcr_ep_fail_locked(ep, -EPROTO, "verbs: bad READY");
			return false;
		}
		ve->stage = 3;
		return __zcr_ep_open_locked(ep, ve->peer.rank) == 0;
	}
	if (ret) {
		__zcr_ep_fail_locked(ep, ret, "verbs: handshake send failed");
		return false;
	}
	return true;
}

/* Read the TCP connection: the handshake, then only its end. */
static int rx_sock(struct zcr_ep *ep)
{
	static const size_t need[3] = { HELLO_LEN, ZCR_AUTH_MAC_LEN, 1 };
	struct vep *ve = V(ep);
	ssize_t r;
	char b;

	while (ep->state != ZCR_EP_CLOSED) {
		if (ve->stage == 3) {
			if (ve->gone)
				return 0;
			r = recv(ve->fd, &b, 1, MSG_DONTWAIT);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				return 0;
			if (r > 0) {
				__zcr_ep_fail_locked(ep, -ECONNRESET, "verbs: "
						     "data on the set-up "
						     "connection");
				return 1;
			}
			/*
			 * Its end (or a reset): the peer closed the endpoint
			 * or exited. Not a failure yet: what it sent before
			 * is still to be read, as over TCP.
			 */
			ve->gone = "verbs: peer closed the connection";
			return 0;
		}
		r = recv(ve->fd, ve->in + ve->got, need[ve->stage] - ve->got,
			 MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (r <= 0) {
			__zcr_ep_fail_locked(ep, r ? -errno : -ECONNRESET,
					     "verbs: connection closed in the "
					     "handshake");
			return 1;
		}
		ve->got += (size_t)r;
		if (ve->got == need[ve->stage] && !hs_step(ep))
			return 1;
	}
	return 0;
}

/* ---- sending ---- */

/* Post one header (+ eager payload) from a free send cell. */
static int post_msg(struct vep *ve, struct vhdr *h, const void *payload,
		    size_t n)
{
	struct ibv_sge sg;
	struct ibv_send_wr wr = { 0 }, *bad;
	uint32_t i = ve->sfree[--ve->nsfree];
	char *c = scell(ve, i);
	int ret;

	h->credits = ve->ret_credits;
	memcpy(c, h, HDR);
	if (n)
		memcpy(c + HDR, payload, n);
	sg.addr = (uintptr_t)c;
	sg.length = (uint32_t)(HDR + n);
	sg.lkey = ve->mr->lkey;
	wr.wr_id = wrid(W_SEND, i);
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	ret = ibv_post_send(ve->qp, &wr, &bad);
	if (ret) {
		ve->sfree[ve->nsfree++] = i;
		return -ret;
	}
	ve->ret_credits = 0;
	return 0;
}

static int queue_fin(struct vep *ve, uint64_t cookie)
{
	if (ve->gone)
		return 0;	/* nobody waits for it any more */
	if (ve->nfin == ve->fin_cap) {
		unsigned int cap = ve->fin_cap ? 2 * ve->fin_cap : 16;
		uint64_t *f = realloc(ve->fins, cap * sizeof(*f));

		if (!f)
			return -ENOMEM;
		ve->fins = f;
		ve->fin_cap = cap;
	}
	ve->fins[ve->nfin++] = cookie;
	return 0;
}

/* The registration an announced send keeps in its scratch. */
struct rts_state {
	struct ibv_mr *mr;
	struct rc_ent *ce;
};

/* An announced send's registration ends: nothing will pull it any more. */
static void unannounce(struct vep *ve, struct zcr_req *r)
{
	struct rts_state rs;

	memcpy(&rs, r->tx, sizeof(rs));
	cache_put(ve->vc, rs.mr, rs.ce);
	r->sent = 0;
}

/* Post the queued FINs as far as send cells allow. */
static int post_fins(struct vep *ve)
{
	struct vhdr h;
	unsigned int k;
	int ret = 0;

	for (k = 0; k < ve->nfin && ve->nsfree; k++) {
		memset(&h, 0, sizeof(h));
		h.type = T_FIN;
		h.src = ve->ep->ctx->rank;
		h.cookie = ve->fins[k];
		ret = post_msg(ve, &h, NULL, 0);
		if (ret)
			break;
	}
	memmove(ve->fins, ve->fins + k, (ve->nfin - k) * sizeof(*ve->fins));
	ve->nfin -= k;
	return ret;
}

static int push_sends(struct zcr_ep *ep)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct vep *ve = V(ep);
	struct zcr_list *pos, *tmp;
	struct vhdr h;
	int n = 0, ret;

	if (ve->gone)
		return 0;	/* gone_settle() failed what was queued */
	/* FINs first: they unblock the peer's sends. */
	ret = post_fins(ve);
	if (ret)
		goto fail;
	zcr_list_for_each_safe(pos, tmp, &ep->sendq) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);
		struct rts_state rs;

		if (r->sent)
			continue;	/* announced: waits for its FIN */
		if (!ve->credits || !ve->nsfree)
			break;
		memset(&h, 0, sizeof(h));
		h.src = ctx->rank;
		h.tag = r->st.tag;
		h.len = r->len;
		h.seq = r->seq;
		if (r->len <= EAGER_MAX) {
			h.type = T_EAGER;
			ret = post_msg(ve, &h, r->sbuf, r->len);
			if (ret)
				goto fail;
			ve->credits--;
			zcr_list_del(&r->link);
			ctx->st.msgs_sent++;
			ctx->st.bytes_sent += r->len;
			__zcr_req_complete_locked(r, 0);
			n++;
			continue;
		}
		rs.mr = cache_get(ve->vc, r->sbuf, r->len, &rs.ce);
		if (!rs.mr) {
			ret = errno ? -errno : -ENOMEM;
			ve->vc->st.reg_failed++;
			__zcr_ep_fail_locked(ep, ret, "verbs: cannot register "
					     "%llu bytes to send (%s; "
					     "RLIMIT_MEMLOCK?)",
					     (unsigned long long)r->len,
					     strerror(-ret));
			return n;
		}
		h.type = T_RTS;
		h.addr = (uintptr_t)r->sbuf;
		h.rkey = rs.mr->rkey;
		h.cookie = (uintptr_t)r;
		ret = post_msg(ve, &h, NULL, 0);
		if (ret) {
			cache_put(ve->vc, rs.mr, rs.ce);
			goto fail;
		}
		memcpy(r->tx, &rs, sizeof(rs));
		ve->credits--;
		r->sent = 1;
	}
	return n;
fail:
	__zcr_ep_fail_locked(ep, ret, "verbs: cannot post a send");
	return n;
}

/*
 * The peer pulled the announced send cookie (its FIN): complete it. false
 * when no announced send has that cookie.
 */
static bool fin_send(struct zcr_ep *ep, uint64_t cookie)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct zcr_list *pos;

	for (pos = ep->sendq.next; pos != &ep->sendq; pos = pos->next) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		if ((uintptr_t)r != cookie || !r->sent)
			continue;
		unannounce(V(ep), r);
		zcr_list_del(&r->link);
		ctx->st.msgs_sent++;
		ctx->st.bytes_sent += r->len;
		__zcr_req_complete_locked(r, 0);
		return true;
	}
	return false;
}

static void rx_fin(struct zcr_ep *ep, const struct vhdr *h)
{
	if (fin_send(ep, h->cookie))
		return;
	ep->ctx->st.bad_headers++;
	__zcr_ep_fail_locked(ep, -EPROTO, "verbs: FIN for no announced send");
}

static int verbs_send(struct zcr_ep *ep, struct zcr_req *r)
{
	if (V(ep)->gone)
		return -ECONNRESET;	/* nobody reads what we send */
	zcr_list_add_tail(&r->link, &ep->sendq);
	if (V(ep)->stage == 3)
		push_sends(ep);
	return 0;
}

/* ---- receiving ---- */

static int repost(struct vep *ve, uint32_t i)
{
	struct ibv_sge sg = { (uintptr_t)rcell(ve, i), CELL, ve->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wrid(W_RECV, i), .sg_list = &sg,
				  .num_sge = 1 }, *bad;

	if (ve->gone)
		return 0;	/* nothing more will come into it */
	return -ibv_post_recv(ve->qp, &wr, &bad);
}

/* Post READs of the rest of the current message (bounce: one chunk). */
static int post_reads(struct vep *ve)
{
	struct vread *rd = &ve->rd;
	struct zcr_ep *ep = ve->ep;
	int ret;

	while (rd->posted < rd->n) {
		uint64_t k = rd->n - rd->posted;
		struct ibv_sge sg;
		struct ibv_send_wr wr = { 0 }, *bad;

		if (rd->bounce) {
			if (rd->out)
				break;
			if (k > BOUNCE)
				k = BOUNCE;
			sg.addr = (uintptr_t)bounce(ve);
			sg.lkey = ve->mr->lkey;
		} else {
			if (rd->out >= RD_OUT)
				break;
			if (k > ve->vc->rd_chunk)
				k = ve->vc->rd_chunk;
			sg.addr = (uintptr_t)ep->rx.dst + rd->posted;
			sg.lkey = rd->mr->lkey;
		}
		sg.length = (uint32_t)k;
		wr.wr_id = wrid(W_READ, 0);
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_READ;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = ve->cur.addr + rd->posted;
		wr.wr.rdma.rkey = ve->cur.rkey;
		ret = ibv_post_send(ve->qp, &wr, &bad);
		if (ret)
			return -ret;
		rd->posted += k;
		rd->out++;
	}
	return 0;
}

/* The current message is all in (or was empty): tell match, FIN. */
static int rndv_done(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct vread *rd = &ve->rd;
	struct vctx *vc = ve->vc;
	uint32_t cell = ve->dq[ve->dq_head];
	int ret;

	/*
	 * The slot's registration ends before match hears of the payload:
	 * the remap engine may exchange the slot's pages from then on, and
	 * no key of this registration can reach them any more.
	 */
	if (rd->mr) {
		cache_put(vc, rd->mr, rd->ce);
		if (rd->staged && !rd->ce)
			vc->st.live_slot_mrs--;
	}
	memset(rd, 0, sizeof(*rd));
	ve->arriving = false;
	ve->dq_head = (ve->dq_head + 1) % NRECV;
	ve->dq_n--;
	ret = queue_fin(ve, ve->cur.cookie);
	if (!ret)
		ret = repost(ve, cell);
	if (ret) {
		__zcr_ep_fail_locked(ep, ret, "verbs: cannot repost");
		return 0;
	}
	ve->ret_credits++;
	vc->st.rndv++;
	__zcr_match_payload_done_locked(ep->ctx, &ep->rx);
	return 1;
}

/* Start pulling the current RTS into ep->rx.dst. */
static int rndv_start(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct vread *rd = &ve->rd;
	struct vctx *vc = ve->vc;
	int ret;

	memset(rd, 0, sizeof(*rd));
	rd->active = true;
	rd->n = ep->rx.room < ve->cur.len ? ep->rx.room : ve->cur.len;
	rd->staged = !ep->rx.req;
	if (!rd->n)
		return rndv_done(ep);
	if (rd->staged && vc->land_copy) {
		rd->bounce = true;
	} else {
		if (rd->staged)
			rd->mr = reg(vc, ep->rx.dst, rd->n,
				     IBV_ACCESS_LOCAL_WRITE);
		else
			rd->mr = cache_get(vc, ep->rx.dst, rd->n, &rd->ce);
		if (!rd->mr) {
			vc->st.reg_failed++;
			rd->bounce = true;
		} else if (rd->staged) {
			vc->st.live_slot_mrs++;
		}
	}
	if (rd->bounce)
		vc->st.bounced++;
	else if (rd->staged)
		vc->st.direct_staged++;
	else
		vc->st.direct_posted++;
	ret = post_reads(ve);
	if (ret)
		__zcr_ep_fail_locked(ep, ret, "verbs: cannot post RDMA READ");
	return 0;
}

/* A READ completed. */
static int read_done(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct vread *rd = &ve->rd;
	uint64_t k;
	int ret;

	if (!rd->active || !rd->out)
		return 0;
	rd->out--;
	if (rd->bounce) {
		k = rd->posted - rd->off;
		memcpy(ep->rx.dst + rd->off, bounce(ve), k);
		ve->vc->st.bounce_bytes += k;
		rd->off = rd->posted;
	} else {
		/* RC completes in order: one more chunk is in. */
		rd->off += ve->vc->rd_chunk;
		if (rd->off > rd->posted || !rd->out)
			rd->off = rd->posted;
	}
	if (rd->off == rd->n)
		return rndv_done(ep);
	ret = post_reads(ve);
	if (ret)
		__zcr_ep_fail_locked(ep, ret, "verbs: cannot post RDMA READ");
	return 0;
}

/* The type of the data message at the head of the queue (dq_n > 0). */
static uint32_t head_type(struct vep *ve)
{
	struct vhdr h;

	memcpy(&h, rcell(ve, ve->dq[ve->dq_head]), HDR);
	return h.type;
}

/* Move the data queue on as far as match lets it. */
static int rx_data(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct vhdr *h = &ve->cur;
	int n = 0;

	while (ep->state == ZCR_EP_OPEN && ve->dq_n && !ve->rd.active) {
		uint32_t cell = ve->dq[ve->dq_head];

		/*
		 * A gone peer's announcement cannot be pulled any more (its
		 * QP is gone), and its send did not complete: the message is
		 * cut short (a receive it claimed fails, a wildcard one waits
		 * for another), and what the peer sent after it, which did
		 * complete there, is still delivered.
		 */
		if (ve->gone && head_type(ve) == T_RTS) {
			if (ve->arriving)
				__zcr_match_abort_locked(ep->ctx, &ep->rx);
			else
				ep->recv_seq++;
			ve->arriving = false;
			ve->dq_head = (ve->dq_head + 1) % NRECV;
			ve->dq_n--;
			n++;
			continue;
		}
		if (!ve->arriving) {
			memcpy(h, rcell(ve, cell), HDR);
			if (h->src != ep->rank || h->tag < 0 ||
			    h->seq != ep->recv_seq + 1 ||
			    h->len > ep->ctx->max_msg ||
			    (h->type == T_EAGER && h->len > EAGER_MAX)) {
				ep->ctx->st.bad_headers++;
				__zcr_ep_fail_locked(ep, -EPROTO, "verbs: "
						     "header out of protocol "
						     "(src %d, seq %llu, len "
						     "%llu)", h->src,
						     (unsigned long long)h->seq,
						     (unsigned long long)h->len);
				return n;
			}
			ep->recv_seq = h->seq;
			ve->arriving = true;
			if (__zcr_match_arrive_locked(ep->ctx, &ep->rx, h->src,
						      h->tag, h->len) < 0)
				return n;	/* stalled */
		}
		if (ep->rx.state != ZCR_RX_LANDING)
			return n;
		if (h->type == T_RTS) {
			n += rndv_start(ep);
			continue;
		}
		if (ep->rx.room)
			memcpy(ep->rx.dst, rcell(ve, cell) + HDR,
			       ep->rx.room < h->len ? ep->rx.room : h->len);
		ve->arriving = false;
		ve->dq_head = (ve->dq_head + 1) % NRECV;
		ve->dq_n--;
		if (repost(ve, cell)) {
			__zcr_ep_fail_locked(ep, -EIO, "verbs: cannot repost");
			return n;
		}
		ve->ret_credits++;
		ve->vc->st.eager++;
		__zcr_match_payload_done_locked(ep->ctx, &ep->rx);
		n++;
	}
	return n;
}

/* A receive completed into cell i. */
static int rx_cell(struct zcr_ep *ep, uint32_t i, uint32_t bytes)
{
	struct vep *ve = V(ep);
	struct vhdr h;

	memcpy(&h, rcell(ve, i), HDR);
	if (bytes < HDR || h.credits > DCRED ||
	    ve->credits + h.credits > DCRED ||
	    (h.type < T_EAGER || h.type > T_CREDIT) ||
	    (h.type == T_EAGER && bytes != HDR + h.len) ||
	    (h.type != T_EAGER && bytes != HDR) || ve->stage != 3) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO, "verbs: message out of "
				     "protocol (type %u, %u bytes)", h.type,
				     bytes);
		return 0;
	}
	ve->credits += h.credits;
	if (h.type == T_EAGER || h.type == T_RTS) {
		ve->dq[(ve->dq_head + ve->dq_n) % NRECV] = i;
		ve->dq_n++;
		return 0;
	}
	if (repost(ve, i)) {
		__zcr_ep_fail_locked(ep, -EIO, "verbs: cannot repost");
		return 0;
	}
	if (h.type == T_FIN) {
		rx_fin(ep, &h);
		return 1;
	}
	return 0;
}

static const char *wr_name(int kind)
{
	return kind == W_RECV ? "receive" : kind == W_SEND ? "send" :
	       "RDMA READ";
}

/* One completion. */
static int handle_wc(struct zcr_ep *ep, const struct ibv_wc *wc)
{
	struct vep *ve = V(ep);
	int kind = (int)(wc->wr_id >> 56);
	uint32_t i = (uint32_t)(wc->wr_id & 0xffffffffu);

	if (wc->status != IBV_WC_SUCCESS) {
		ve->broken = true;
		/*
		 * Once the peer is gone its QP is, and ours may fail work
		 * requests to it: that ends nothing the peer sent before.
		 * A READ left unfinished fails the endpoint (gone_settle()).
		 */
		if (ve->gone)
			return 0;
		__zcr_ep_fail_locked(ep, wc->status == IBV_WC_WR_FLUSH_ERR ?
				     -ECONNRESET : -EIO, "verbs: %s failed: "
				     "%s (peer gone?)", wr_name(kind),
				     ibv_wc_status_str(wc->status));
		return 0;
	}
	if (kind == W_RECV)
		return rx_cell(ep, i, wc->byte_len);
	if (kind == W_SEND) {
		ve->sfree[ve->nsfree++] = i;
		return 0;
	}
	return read_done(ep);
}

/* Drain the completion queue; *seen: completions taken. */
static int poll_cq(struct zcr_ep *ep, int *seen)
{
	struct vep *ve = V(ep);
	struct ibv_wc wc[16];
	int n = 0, k, j;

	*seen = ve->nstash;
	for (j = 0; j < ve->nstash && ep->state == ZCR_EP_OPEN; j++)
		n += handle_wc(ep, &ve->stash[j]);
	ve->nstash = 0;
	while (ep->state == ZCR_EP_OPEN) {
		k = ibv_poll_cq(ve->cq, 16, wc);
		if (k <= 0) {
			if (k < 0)
				__zcr_ep_fail_locked(ep, -EIO, "verbs: cannot "
						     "poll the CQ");
			break;
		}
		*seen += k;
		for (j = 0; j < k && ep->state == ZCR_EP_OPEN; j++)
			n += handle_wc(ep, &wc[j]);
	}
	return n;
}

/*
 * The peer is gone, and what completed in our CQ until now was taken
 * (ep_progress()): its FINs completed our sends it had pulled. The rest of
 * our sends fail, the peer will not read them. What it sent us is
 * delivered but its announcements, which cannot be pulled any more
 * (rx_data() drops them); the endpoint fails once nothing is left, or
 * when a READ was under way. 1 when it failed.
 */
static int gone_settle(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct zcr_list *pos;

	for (pos = ep->sendq.next; pos != &ep->sendq; pos = pos->next) {
		struct zcr_req *r = zcr_container_of(pos, struct zcr_req, link);

		if (r->sent)
			unannounce(ve, r);
	}
	__zcr_ep_fail_sends_locked(ep, -ECONNRESET);
	ve->nfin = 0;
	if (ve->rd.active) {
		__zcr_ep_fail_locked(ep, -ECONNRESET, "%s mid-message",
				     ve->gone);
		return 1;
	}
	if (!ve->dq_n) {
		__zcr_ep_fail_locked(ep, -ECONNRESET, "%s", ve->gone);
		return 1;
	}
	return 0;
}

static int ep_progress(struct zcr_ep *ep)
{
	struct vep *ve = V(ep);
	struct ibv_cq *cq;
	void *cctx;
	int n = 0, seen;
	struct vhdr h;

	n += rx_sock(ep);
	if (ep->state != ZCR_EP_OPEN || ve->stage != 3)
		return n;
	while (!ibv_get_cq_event(ve->ch, &cq, &cctx))
		ibv_ack_cq_events(cq, 1);
	n += poll_cq(ep, &seen);
	for (;;) {
		n += rx_data(ep);
		if (ep->state == ZCR_EP_OPEN)
			n += push_sends(ep);
		if (ep->state == ZCR_EP_OPEN && !ve->gone &&
		    ve->ret_credits >= DCRED / 2 && ve->nsfree) {
			memset(&h, 0, sizeof(h));
			h.type = T_CREDIT;
			h.src = ep->ctx->rank;
			if (post_msg(ve, &h, NULL, 0))
				__zcr_ep_fail_locked(ep, -EIO, "verbs: cannot "
						     "post a send");
		}
		if (ep->state != ZCR_EP_OPEN)
			break;
		/* Arm, then look once more: no completion slips by. */
		ibv_req_notify_cq(ve->cq, 0);
		n += poll_cq(ep, &seen);
		if (!seen)
			break;
	}
	if (ve->gone && ep->state == ZCR_EP_OPEN)
		n += gone_settle(ep);
	return n;
}

/* ---- progress engine ---- */

static int accept_all(struct zcr_ctx *ctx, struct vctx *vc)
{
	int n = 0, fd, ret;
	struct vep *ve;

	while (vc->lfd >= 0) {
		fd = accept4(vc->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			break;
		if (__zcr_ep_live_locked(ctx) >= ctx->max_conns) {
			close(fd);
			continue;
		}
		ret = vep_new(ctx, vc, fd, &ve);
		if (ret) {
			if (!ctx->quiet)
				fprintf(stderr, "zcrecv: rank %d: verbs: "
					"cannot set up a connection: %s\n",
					ctx->rank, strerror(-ret));
			close(fd);
			continue;
		}
		if (__zcr_ep_new_locked(ctx, &__zcr_transport_verbs, ve, true))
			n++;
	}
	return n;
}

static int verbs_progress(struct zcr_ctx *ctx, void *priv)
{
	struct vctx *vc = priv;
	struct zcr_list *pos, *tmp;
	int n = accept_all(ctx, vc);

	zcr_list_for_each_safe(pos, tmp, &vc->eps) {
		struct vep *ve = zcr_container_of(pos, struct vep, link);

		if (ve->ep->state != ZCR_EP_CLOSED)
			n += ep_progress(ve->ep);
	}
	return n;
}

static unsigned int verbs_poll_max(struct zcr_ctx *ctx, void *priv)
{
	(void)ctx;
	return 1 + 2 * ((struct vctx *)priv)->n;
}

/* Would progress find work on ve without waiting? */
static bool has_work(struct vep *ve)
{
	struct zcr_ep *ep = ve->ep;

	if (ve->stage != 3)
		return false;
	if (ve->nstash)
		return true;
	if (ve->dq_n && !ve->rd.active &&
	    (!ve->arriving || ep->rx.state == ZCR_RX_LANDING))
		return true;
	if (ve->nfin && ve->nsfree)
		return true;
	return !zcr_list_empty(&ep->sendq) && ve->credits && ve->nsfree;
}

static unsigned int verbs_poll_fill(struct zcr_ctx *ctx, void *priv,
				    struct pollfd *pfd, unsigned int max,
				    uint64_t *deadline)
{
	struct vctx *vc = priv;
	struct zcr_list *pos;
	unsigned int k = 0;
	uint64_t until = 0;
	bool work = false;

	/*
	 * A peer's answer usually comes within microseconds: look at the
	 * completion queues for a while (ZCRECV_VERBS_SPIN_US, yielding the
	 * processor in between) before sleeping on their channels, unless
	 * we are the progress thread (ctx.h). Completions found are kept
	 * for progress.
	 */
	if (vc->spin_ns && vc->n && !__zcr_is_progress_thread(ctx)) {
		until = zcr_now_ns() + vc->spin_ns;
		if (until > *deadline)	/* the caller's, transport.h */
			until = *deadline;
	}
	while (until) {
		for (pos = vc->eps.next; pos != &vc->eps && !work;
		     pos = pos->next) {
			struct vep *ve = zcr_container_of(pos, struct vep,
							  link);

			if (ve->ep->state != ZCR_EP_OPEN || ve->stage != 3)
				continue;
			if (has_work(ve) || ve->nstash) {
				work = true;
				break;
			}
			ve->nstash = ibv_poll_cq(ve->cq, 16, ve->stash);
			if (ve->nstash < 0)
				ve->nstash = 0;
			work = ve->nstash > 0;
		}
		if (work || zcr_now_ns() >= until)
			break;
		sched_yield();
	}
	if (work)
		*deadline = 0;
	if (vc->lfd >= 0 && k < max) {
		pfd[k].fd = vc->lfd;
		pfd[k++].events = POLLIN;
	}
	for (pos = vc->eps.next; pos != &vc->eps; pos = pos->next) {
		struct vep *ve = zcr_container_of(pos, struct vep, link);

		if (ve->ep->state == ZCR_EP_CLOSED || k + 2 > max)
			continue;
		if (has_work(ve))
			*deadline = 0;
		/* Its end was read: it would wake every poll at once. */
		if (!ve->gone) {
			pfd[k].fd = ve->fd;
			pfd[k++].events = POLLIN;
		}
		pfd[k].fd = ve->ch->fd;
		pfd[k++].events = POLLIN;
	}
	return k;
}

/* ---- teardown ---- */

/* Stop the NIC first (destroy the QP), then drop what it could touch. */
static void vep_release(struct vep *ve)
{
	struct vctx *vc = ve->vc;

	if (foreign(vc)) {
		ve->qp = NULL;
		ve->cq = NULL;
		ve->ch = NULL;
		ve->mr = NULL;
		memset(&ve->rd, 0, sizeof(ve->rd));
	}
	if (ve->qp)
		ibv_destroy_qp(ve->qp);
	ve->qp = NULL;
	if (ve->rd.mr) {
		cache_put(vc, ve->rd.mr, ve->rd.ce);
		if (ve->rd.staged && !ve->rd.ce)
			vc->st.live_slot_mrs--;
	}
	memset(&ve->rd, 0, sizeof(ve->rd));
	if (ve->cq)
		ibv_destroy_cq(ve->cq);
	ve->cq = NULL;
	if (ve->ch)
		ibv_destroy_comp_channel(ve->ch);
	ve->ch = NULL;
	if (ve->mr)
		dereg(vc, ve->mr);
	ve->mr = NULL;
	if (ve->mem)
		munmap(ve->mem, ve->memlen);
	ve->mem = NULL;
	if (ve->fd >= 0)
		close(ve->fd);
	ve->fd = -1;
	ve->nstash = 0;
	free(ve->fins);
	ve->fins = NULL;
	ve->nfin = ve->fin_cap = 0;
}

/*
 * One completion of a closing endpoint: nothing is delivered any more,
 * but a FIN still completes its send (the peer has every byte of it).
 * *rq_done: a receive failed, which on a stopped QP means every receive
 * before it has completed.
 */
static void close_wc(struct zcr_ep *ep, const struct ibv_wc *wc,
		     bool *rq_done)
{
	struct vep *ve = V(ep);
	int kind = (int)(wc->wr_id >> 56);
	uint32_t i = (uint32_t)(wc->wr_id & 0xffffffffu);
	struct vhdr h;

	if (wc->status != IBV_WC_SUCCESS) {
		ve->broken = true;
		if (kind == W_RECV)
			*rq_done = true;
		return;
	}
	if (kind == W_SEND) {
		ve->sfree[ve->nsfree++] = i;
	} else if (kind == W_RECV && wc->byte_len == HDR) {
		memcpy(&h, rcell(ve, i), HDR);
		if (h.type == T_FIN)
			fin_send(ep, h.cookie);
	}
}

/* Take what completed, poll_fill's look first; how many. */
static int close_drain(struct zcr_ep *ep, bool *rq_done)
{
	struct vep *ve = V(ep);
	struct ibv_wc wc[16];
	int n = ve->nstash, k, j;

	for (j = 0; j < ve->nstash; j++)
		close_wc(ep, &ve->stash[j], rq_done);
	ve->nstash = 0;
	while ((k = ibv_poll_cq(ve->cq, 16, wc)) > 0) {
		for (j = 0; j < k; j++)
			close_wc(ep, &wc[j], rq_done);
		n += k;
	}
	return n;
}

/*
 * Take completions until the close can go on: lingering, once every send
 * cell is back and no FIN waits (posting those queued as cells free up),
 * or a work request failed; else once a receive was flushed. Sleeps on
 * the CQ's channel, at most until @until; lingering, the end of the
 * set-up connection (the peer closed or exited: nothing reaches it any
 * more) ends the wait too.
 */
static void close_take(struct zcr_ep *ep, uint64_t until, bool linger,
		       bool *rq_done)
{
	struct vep *ve = V(ep);
	struct pollfd pfd[2];
	struct ibv_cq *cq;
	void *cctx;
	uint64_t t;

	for (;;) {
		if (linger && !ve->broken && post_fins(ve))
			return;
		if (close_drain(ep, rq_done))
			continue;
		if (linger ? ve->broken || (ve->nsfree == NSEND && !ve->nfin) :
		    *rq_done)
			return;
		/* Arm, then look once more: no completion slips by. */
		ibv_req_notify_cq(ve->cq, 0);
		if (close_drain(ep, rq_done))
			continue;
		t = now_ns();
		if (t >= until)
			return;
		memset(pfd, 0, sizeof(pfd));
		pfd[0].fd = ve->ch->fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = ve->fd;
		pfd[1].events = POLLIN;
		if (poll(pfd, linger ? 2 : 1,
			 (int)((until - t + 999999) / 1000000)) > 0 &&
		    pfd[1].revents)
			return;
		while (!ibv_get_cq_event(ve->ch, &cq, &cctx))
			ibv_ack_cq_events(cq, 1);
	}
}

/*
 * Before a closing endpoint destroys its QP. What we posted reaches the
 * peer first (an eager send completed when it was posted; a FIN tells
 * the peer its send is delivered). Then, with announced sends of ours
 * left, the QP is stopped (error state) and what it completed until then
 * is read: a FIN that arrived completes its send, as progress would
 * have. Without this, a send the peer had read in full failed, and eager
 * messages completed here could be lost on the way. Bounded by CLOSE_NS
 * and FLUSH_NS. Not for a peer that is gone: nothing reaches it, and
 * gone_settle() ended our sends.
 */
static void quiesce(struct zcr_ep *ep, struct vep *ve)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct zcr_list *pos;
	bool rq_done = false;

	if (ve->gone)
		return;
	close_take(ep, now_ns() + CLOSE_NS, true, &rq_done);
	for (pos = ep->sendq.next; pos != &ep->sendq; pos = pos->next)
		if (zcr_container_of(pos, struct zcr_req, link)->sent)
			break;
	if (pos == &ep->sendq)
		return;		/* no FIN is awaited */
	/* A QP we stop ourselves flushes the receives still posted. */
	if (!ve->broken && !ibv_modify_qp(ve->qp, &qa, IBV_QP_STATE))
		close_take(ep, now_ns() + FLUSH_NS, false, &rq_done);
	else
		close_drain(ep, &rq_done);
}

static void verbs_ep_close(struct zcr_ep *ep, void *ep_priv)
{
	struct vep *ve = ep_priv;
	struct zcr_list *pos;

	if (!ve)
		return;
	if (ep && ve->qp && ve->stage == 3 && !foreign(ve->vc))
		quiesce(ep, ve);
	if (ve->qp && !foreign(ve->vc))
		ibv_destroy_qp(ve->qp);
	ve->qp = NULL;
	/* Announced sends: the peer can no longer pull them. */
	if (ep && !foreign(ve->vc)) {
		for (pos = ep->sendq.next; pos != &ep->sendq;
		     pos = pos->next) {
			struct zcr_req *r = zcr_container_of(pos,
							     struct zcr_req,
							     link);

			if (r->sent)
				unannounce(ve, r);
		}
	}
	vep_release(ve);
}

static void verbs_ep_free(struct zcr_ep *ep, void *ep_priv)
{
	struct vep *ve = ep_priv;

	if (!ve)
		return;
	verbs_ep_close(ep, ve);
	if (ve->ep) {
		ve->vc->n--;
		zcr_list_del(&ve->link);
	}
	free(ve);
}

const struct zcr_transport_ops __zcr_transport_verbs = {
	.size = sizeof(struct zcr_transport_ops),
	.name = "verbs",
	.scheme = "verbs",
	.init = verbs_init,
	.fini = verbs_fini,
	.listen = verbs_listen,
	.connect = verbs_connect,
	.start = verbs_start,
	.poll_max = verbs_poll_max,
	.poll_fill = verbs_poll_fill,
	.progress = verbs_progress,
	.send = verbs_send,
	.ep_close = verbs_ep_close,
	.ep_free = verbs_ep_free,
};
