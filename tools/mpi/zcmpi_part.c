// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcmpi_part.c - MPI-4 partitioned communication in libzcrecv-mpi.so:
 * MPI_Psend_init, MPI_Precv_init, MPI_Pready, MPI_Pready_range,
 * MPI_Pready_list and MPI_Parrived on the communicators the layer carries
 * (Documentation/mpi.md, "Partitioned communication"). Built only where
 * the MPI declares them (MPI_VERSION >= 4: MPICH 4.0; Open MPI 4.1 has
 * none of them).
 *
 * Each partition of a receive is one persistent receive of the library
 * (zcr_recv_init_comm()), bound at MPI_Precv_init into the user's buffer at
 * the partition's offset and known to match in advance, so a partition
 * that arrives before MPI_Start is staged at its page offset and lands by
 * remap. Each partition travels as one message with a tag of its own, so
 * MPI_Pready sends it at once and MPI_Parrived tests it alone.
 *
 * Matching. MPI pairs a partitioned send with a partitioned receive by
 * (source, tag, communicator) in the order they were initialised, and the
 * sender does not know the receiver's partitions. So MPI_Precv_init takes
 * a range of tags for its partitions and sends the matching send a hello
 * with it (and its partitioning) on a control space of the communicator,
 * under the user's tag; MPI_Psend_init posts the receive of that hello.
 * The library keeps messages of one (source, tag, communicator) in order,
 * so the k-th hello reaches the k-th send initialised: MPI's order. The
 * sender then sends the receiver's partitions: receive partition i goes
 * once every send partition that overlaps its bytes is ready. With equal
 * partitions on both sides that is one message per MPI_Pready; differing
 * counts work too, the bytes of one total (more bytes than the receive
 * takes end up in its last partition and truncate it, as MPI says).
 *
 * Wire: communicator id | PART_CTL carries hellos (tag = the user's),
 * id | PART_DATA the partitions (tag = the receive's base + partition);
 * carried communicators' ids stay below PART_CTL, and collectives use
 * id | 0x80000000, so neither meets the other nor the program's messages.
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zcrecv.h"
#include "zcmpi.h"

#if MPI_VERSION >= 4

#define PART_CTL	0x40000000U
#define PART_DATA	0xc0000000U
#define PART_MAGIC	0x7a637061U	/* "zcpa" */
/* Tags of partitions: one range per receive, handed out in turn. */
#define PART_TAGS	0x7fffffffU
/*
 * A partition number out of range: the class MPICH 4.0 gives, so a
 * program sees the same error with and without the layer.
 */
#define PART_ERR_INDEX	MPI_ERR_OTHER

/* What a partitioned receive tells the send that matches it. */
struct part_hello {
	uint32_t magic;
	uint32_t parts;		/* its partitions */
	uint64_t pbytes;	/* bytes in each */
	uint32_t base;		/* the tag of its partition 0 */
	uint32_t pad;
};

struct zpart {
	bool recv;
	int parts;		/* this side's partitions */
	size_t pbytes;		/* bytes in each (packed if not contiguous) */
	size_t total;
	char *ubuf;		/* the user's buffer */
	MPI_Count count;	/* elements in a partition */
	MPI_Datatype type;
	MPI_Aint stride;	/* bytes between partitions in ubuf */
	unsigned char *tmp;	/* packed bytes, not contiguous; or NULL */
	unsigned char *data;	/* the partitions' bytes: ubuf or tmp */
	int peer;		/* world rank */
	uint32_t wire;		/* communicator id */
	int tag;
	pthread_mutex_t lock;	/* MPI_THREAD_MULTIPLE: Pready from threads */
	struct part_hello hello;
	struct zcr_req *hello_r;	/* its send or receive, pending */
	bool known;		/* a send: the hello arrived */
	int rparts;		/* the receive's partitions (messages) */
	size_t rpbytes;
	struct zcr_preq **preq;	/* per message */
	struct zcr_req **r;	/* per message, started */
	char *state;		/* per message: MSG_* */
	int ndone;		/* messages completed this round */
	struct zreq *z;		/* the request it is the partitioned part of */
	struct zpart *next;	/* on the waiting list */
	bool waiting;
	char *ready;		/* a send's partitions readied this round */
	int nready;
	int *need;		/* per message: its send partitions not ready */
	uint64_t len;		/* a receive's bytes this round */
	int err;
};

enum { MSG_IDLE, MSG_STARTED, MSG_DONE };

static uint32_t next_base;

/*
 * Sends with partitions readied before the receive's hello came: the
 * partitions go once it comes, and MPI wants them to arrive while the
 * program is in any MPI call (a receiver polling MPI_Parrived on a rank
 * that only polls too), so every call that waits or polls here looks at
 * these hellos (__zcmpi_part_progress()). Empty nearly always: one load.
 */
static struct zpart *waiting;
static pthread_mutex_t waiting_lock = PTHREAD_MUTEX_INITIALIZER;

static void *zalloc(size_t n, size_t size)
{
	void *v = calloc(n ? n : 1, size);

	if (!v)
		__zcmpi_die("out of memory");
	return v;
}

/* Message i's bytes in the send's total: [*lo, *hi). */
static void msg_span(const struct zpart *p, int i, size_t *lo, size_t *hi)
{
	size_t a = (size_t)i * p->rpbytes, b = a + p->rpbytes;

	if (i == p->rparts - 1 && b < p->total)
		b = p->total;		/* the rest: truncates the receive */
	*lo = a < p->total ? a : p->total;
	*hi = b < p->total ? b : p->total;
}

/* The messages send partition j (not empty) feeds: [*first, *last]. */
static void part_msgs(const struct zpart *p, int j, int *first, int *last)
{
	size_t a = (size_t)j * p->pbytes, b = a + p->pbytes - 1;

	if (!p->rpbytes) {
		*first = *last = p->rparts - 1;
		return;
	}
	a /= p->rpbytes;
	b /= p->rpbytes;
	*first = a < (size_t)p->rparts ? (int)a : p->rparts - 1;
	*last = b < (size_t)p->rparts ? (int)b : p->rparts - 1;
}

/* ---- sending ------------------------------------------------------------ */

/* Start message i (a send's, or a receive's partition i). */
static void msg_start(struct zpart *p, int i)
{
	int ret = zcr_start(p->preq[i], &p->r[i]);

	p->state[i] = MSG_STARTED;
	if (ret) {
		p->r[i] = NULL;
		p->state[i] = MSG_DONE;
		p->ndone++;
		if (!p->err)
			p->err = __zcmpi_mpi_code(ret, p->recv ? ZR_RECV :
						  ZR_SEND, p->peer);
	}
}

/* A new round of a send that knows the receive: what each message needs. */
static void send_round(struct zpart *p)
{
	size_t lo, hi;
	int i, j, first, last;

	for (i = 0; i < p->rparts; i++) {
		msg_span(p, i, &lo, &hi);
		p->need[i] = hi > lo ? (int)((hi - 1) / p->pbytes -
					    lo / p->pbytes + 1) : 0;
		p->state[i] = MSG_IDLE;
	}
	for (j = 0; j < p->parts; j++) {
		if (!p->ready[j] || !p->pbytes)
			continue;
		part_msgs(p, j, &first, &last);
		for (i = first; i <= last; i++)
			p->need[i]--;
	}
	for (i = 0; i < p->rparts; i++)
		if (!p->need[i])
			msg_start(p, i);
}

/* Send p has partitions ready and no hello yet: on the waiting list. */
static void wait_on(struct zpart *p)
{
	if (p->waiting)
		return;
	zcmpi_mlock(&waiting_lock);
	p->waiting = true;
	p->next = waiting;
	__atomic_store_n(&waiting, p, __ATOMIC_RELEASE);
	zcmpi_munlock(&waiting_lock);
}

static void unwait(struct zpart *p)
{
	struct zpart **pp;

	if (!p->waiting)
		return;
	zcmpi_mlock(&waiting_lock);
	for (pp = &waiting; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			__atomic_store_n(pp, p->next, __ATOMIC_RELEASE);
			break;
		}
	p->waiting = false;
	zcmpi_munlock(&waiting_lock);
}

/*
 * The receive's hello came (its receive ended with ret, 0 or an error):
 * bind one persistent send per message of its partitioning, and send what
 * is ready of the round going on.
 */
static void hello_came(struct zreq *z, struct zpart *p, int ret,
		       const struct zcr_status *st)
{
	struct zcr_ep *ep;
	size_t lo, hi;
	int i;

	p->hello_r = NULL;
	p->known = true;
	if (ret < 0 || st->len != sizeof(p->hello) ||
	    p->hello.magic != PART_MAGIC) {
		p->err = ret < 0 ? __zcmpi_mpi_code(ret, ZR_RECV, p->peer) :
			 MPI_ERR_OTHER;
		p->rparts = 0;
		return;
	}
	p->rparts = (int)p->hello.parts;
	p->rpbytes = p->hello.pbytes;
	p->preq = zalloc((size_t)p->rparts, sizeof(*p->preq));
	p->r = zalloc((size_t)p->rparts, sizeof(*p->r));
	p->state = zalloc((size_t)p->rparts, 1);
	p->need = zalloc((size_t)p->rparts, sizeof(*p->need));
	ret = __zcmpi_send_ep(p->peer, &ep);
	for (i = 0; !ret && i < p->rparts; i++) {
		msg_span(p, i, &lo, &hi);
		ret = zcr_send_init_comm(ep, p->wire | PART_DATA,
					 p->data + lo, hi - lo,
					 (int)((p->hello.base + (uint32_t)i) &
					       PART_TAGS), 0, &p->preq[i]);
	}
	if (ret) {
		p->err = __zcmpi_mpi_code(ret, ZR_SEND, p->peer);
		while (i-- > 0)
			zcr_preq_free(p->preq[i]);
		p->rparts = 0;
		return;
	}
	if (z->active)
		send_round(p);
}

/* Has the receive's hello come? */
static void learn(struct zreq *z, struct zpart *p)
{
	struct zcr_status st;
	int ret;

	if (p->known || !p->hello_r)
		return;
	ret = zcr_test_sized(p->hello_r, &st, sizeof(st));
	if (ret)
		hello_came(z, p, ret == 1 ? 0 : ret, &st);
}

static int send_ready(struct zreq *z, struct zpart *p, int j)
{
	int first, last, i, pos;

	if (p->ready[j])
		return MPI_SUCCESS;	/* erroneous; harmless here */
	if (p->tmp) {
		pos = (int)((size_t)j * p->pbytes);
		if (PMPI_Pack(p->ubuf + j * p->stride, (int)p->count, p->type,
			      p->tmp, (int)p->total, &pos, z->comm))
			return MPI_ERR_OTHER;
	}
	p->ready[j] = 1;
	p->nready++;
	if (!p->known) {
		learn(z, p);
		if (!p->known)
			wait_on(p);
		return MPI_SUCCESS;
	}
	if (!p->pbytes)
		return MPI_SUCCESS;
	part_msgs(p, j, &first, &last);
	for (i = first; i <= last; i++)
		if (!--p->need[i])
			msg_start(p, i);
	return MPI_SUCCESS;
}

/* ---- receiving ---------------------------------------------------------- */

/*
 * Message i of z ended with ret (0 or an error) and status st: a receive's
 * partition is unpacked if it was packed.
 */
static void msg_came(struct zreq *z, struct zpart *p, int i, int ret,
		     struct zcr_status *st)
{
	int pos;

	p->r[i] = NULL;
	p->state[i] = MSG_DONE;
	p->ndone++;
	if (ret == -EMSGSIZE && p->recv) {
		if (!p->err)
			p->err = MPI_ERR_TRUNCATE;
		st->len = p->pbytes;
	} else if (ret < 0) {
		if (!p->err)
			p->err = __zcmpi_mpi_code(ret, p->recv ? ZR_RECV :
						  ZR_SEND, p->peer);
		return;
	}
	if (!p->recv)
		return;
	p->len += st->len;
	if (p->tmp && p->pbytes) {
		pos = (int)((size_t)i * p->pbytes);
		if (PMPI_Unpack(p->tmp, (int)p->total, &pos,
				p->ubuf + i * p->stride,
				(int)(st->len / (p->pbytes / (size_t)p->count)),
				p->type, z->comm) && !p->err)
			p->err = MPI_ERR_OTHER;
	}
}

/* Has message i (a receive's partition i) come (unpacked then)? */
static bool msg_poll(struct zreq *z, struct zpart *p, int i)
{
	struct zcr_status st;
	int ret;

	if (p->state[i] != MSG_STARTED)
		return p->state[i] == MSG_DONE;
	ret = zcr_test_sized(p->r[i], &st, sizeof(st));
	if (!ret)
		return false;
	msg_came(z, p, i, ret == 1 ? 0 : ret, &st);
	return true;
}

/* ---- the request -------------------------------------------------------- */

/*
 * Send what waits for a hello that came (see waiting); sends that know
 * their receive leave the list. The list's lock is held over the walk, so
 * no send on it is freed meanwhile (__zcmpi_part_free() takes it); a
 * send's own lock is only tried: MPI_Pready holds it and then takes the
 * list's (wait_on()).
 */
void __zcmpi_part_progress(void)
{
	struct zpart **pp, *p;
	bool known;

	if (!__atomic_load_n(&waiting, __ATOMIC_ACQUIRE))
		return;
	zcmpi_mlock(&waiting_lock);
	for (pp = &waiting; (p = *pp);) {
		if (!__zcmpi_threads || !pthread_mutex_trylock(&p->lock)) {
			learn(p->z, p);
			known = p->known;
			if (__zcmpi_threads)
				pthread_mutex_unlock(&p->lock);
			if (known) {
				__atomic_store_n(pp, p->next, __ATOMIC_RELEASE);
				p->waiting = false;
				continue;
			}
		}
		pp = &p->next;
	}
	zcmpi_munlock(&waiting_lock);
}

/* Poll partitioned z; true when the round is complete (status in z). */
bool __zcmpi_part_poll(struct zreq *z)
{
	struct zpart *p = z->part;
	int i;

	if (z->done)
		return true;
	__zcmpi_part_progress();
	zcmpi_mlock(&p->lock);
	if (p->recv) {
		for (i = 0; i < p->parts; i++)
			msg_poll(z, p, i);
		if (p->hello_r && zcr_test(p->hello_r, NULL))
			p->hello_r = NULL;
		if (p->ndone == p->parts && !p->hello_r) {
			z->src = z->zc->local[p->peer];
			z->tag = p->tag;
			z->len = p->len;
			z->err = p->err;
			z->done = true;
		}
	} else {
		learn(z, p);
		for (i = 0; i < p->rparts; i++)
			msg_poll(z, p, i);
		if (p->known && p->nready == p->parts &&
		    p->ndone == p->rparts) {
			z->err = p->err;
			z->done = true;
		}
	}
	zcmpi_munlock(&p->lock);
	return z->done;
}

/*
 * Wait in the library up to timeout_ms for one thing z's round waits for
 * (the hello, then its messages in turn); false when there is nothing to
 * wait on (partitions not ready yet) or other threads may be polling the
 * same messages (MPI_THREAD_MULTIPLE): the caller polls then. The library
 * wakes a thread waiting on a request when it completes, which a poll of
 * the whole context (zcr_progress()) misses when the progress thread
 * takes the message: a millisecond a round.
 */
bool __zcmpi_part_idle(struct zreq *z, int timeout_ms)
{
	struct zpart *p = z->part;
	struct zcr_status st;
	int i, ret, n;

	if (__zcmpi_threads || z->done)
		return false;
	if (!p->recv && !p->known) {
		ret = zcr_wait_sized(p->hello_r, &st, sizeof(st), timeout_ms);
		if (ret != -ETIMEDOUT)
			hello_came(z, p, ret, &st);
		return true;
	}
	n = p->recv ? p->parts : p->rparts;
	for (i = 0; i < n && p->state[i] != MSG_STARTED; i++)
		;
	if (i < n) {
		ret = zcr_wait_sized(p->r[i], &st, sizeof(st), timeout_ms);
		if (ret != -ETIMEDOUT)
			msg_came(z, p, i, ret, &st);
		return true;
	}
	if (p->recv && p->hello_r) {
		if (zcr_wait_sized(p->hello_r, NULL, 0, timeout_ms) !=
		    -ETIMEDOUT)
			p->hello_r = NULL;
		return true;
	}
	return false;
}

/* Block until partitioned z's round completes. */
void __zcmpi_part_wait(struct zreq *z)
{
	while (!__zcmpi_part_poll(z))
		if (!__zcmpi_part_idle(z, 200))
			__zcmpi_idle();
}

int __zcmpi_part_start(struct zreq *z)
{
	struct zpart *p = z->part;
	int i;

	z->done = false;
	z->err = 0;
	z->len = 0;
	z->active = true;
	zcmpi_mlock(&p->lock);
	p->err = 0;
	p->ndone = 0;
	p->len = 0;
	if (p->recv) {
		for (i = 0; i < p->parts; i++)
			msg_start(p, i);
	} else {
		memset(p->ready, 0, (size_t)p->parts);
		p->nready = 0;
		if (p->known)
			send_round(p);
		else
			learn(z, p);
	}
	zcmpi_munlock(&p->lock);
	return MPI_SUCCESS;
}

void __zcmpi_part_free(struct zreq *z)
{
	struct zpart *p = z->part;
	int i;

	/* Only inactive or complete requests get here: nothing started. */
	unwait(p);
	if (p->hello_r) {
		/* A hello not sent yet goes; one not received is cancelled. */
		if (!p->recv)
			zcr_cancel(p->hello_r);
		zcr_wait(p->hello_r, NULL);
	}
	for (i = 0; p->preq && i < (p->recv ? p->parts : p->rparts); i++)
		zcr_preq_free(p->preq[i]);
	free(p->preq);
	free(p->r);
	free(p->state);
	free(p->ready);
	free(p->need);
	free(p->tmp);
	pthread_mutex_destroy(&p->lock);
	free(p);
	z->part = NULL;
}

/*
 * A partitioned request of ours for buf, or false: the MPI takes the call
 * (a communicator not carried, MPI_PROC_NULL, a bad argument: the MPI
 * gives its own error).
 */
static bool part_new(bool recv, const void *buf, int parts, MPI_Count count,
		     MPI_Datatype t, int rank, int tag, MPI_Comm comm,
		     MPI_Request *req)
{
	struct zcomm *zc = __zcmpi_zcomm_of(comm);
	struct zcr_ep *ep;
	struct zpart *p;
	struct zreq *z;
	size_t two;
	void *ptr;
	int i, ret, tsize;
	MPI_Aint lb, ext;

	if (!zc || zc->id >= PART_CTL || parts < 0 || count < 0 ||
	    rank < 0 || rank >= zc->size || tag < 0 ||
	    t == MPI_DATATYPE_NULL || !req)
		return false;
	tsize = __zcmpi_type_size(t);
	if (count > INT_MAX || (uint64_t)parts * (uint64_t)count *
	    (uint64_t)tsize > INT_MAX || (uint64_t)parts >= PART_TAGS / 2)
		return false;	/* beyond what MPI_Pack and the tags take */
	PMPI_Type_get_extent(t, &lb, &ext);
	p = zalloc(1, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	p->recv = recv;
	p->parts = parts;
	p->count = count;
	p->type = t;
	p->stride = (MPI_Aint)count * ext;
	p->ubuf = (char *)buf;
	p->pbytes = (size_t)count * (size_t)tsize;
	p->total = (size_t)parts * p->pbytes;
	p->peer = zc->world[rank];
	p->wire = zc->id;
	p->tag = tag;
	if (__zcmpi_contig(buf, 2, t, &ptr, &two)) {
		p->data = ptr;
	} else {
		p->tmp = zalloc(p->total, 1);
		p->data = p->tmp;
	}
	z = __zcmpi_zreq_new(recv ? ZR_RECV : ZR_SEND, comm, zc);
	z->persistent = true;
	z->done = true;
	z->part = p;
	z->peer = p->peer;
	p->z = z;
	ret = __zcmpi_send_ep(p->peer, &ep);
	if (recv) {
		p->preq = zalloc((size_t)parts, sizeof(*p->preq));
		p->r = zalloc((size_t)parts, sizeof(*p->r));
		p->state = zalloc((size_t)parts, 1);
		if (next_base + (uint32_t)parts > PART_TAGS)
			next_base = 0;
		p->hello.magic = PART_MAGIC;
		p->hello.parts = (uint32_t)parts;
		p->hello.pbytes = p->pbytes;
		p->hello.base = next_base;
		next_base += (uint32_t)parts;
		for (i = 0; !ret && i < parts; i++)
			ret = zcr_recv_init_comm(__zcmpi_ctx, zc->id | PART_DATA,
						 p->data + (size_t)i * p->pbytes,
						 p->pbytes, p->peer,
						 (int)(p->hello.base +
						       (uint32_t)i), 0,
						 &p->preq[i]);
		if (ret)
			p->parts = i - 1;	/* what __zcmpi_part_free frees */
		else
			ret = zcr_isend_comm(ep, zc->id | PART_CTL, &p->hello,
					     sizeof(p->hello), tag,
					     &p->hello_r);
	} else {
		p->ready = zalloc((size_t)parts, 1);
		if (!ret)
			ret = zcr_irecv_comm(__zcmpi_ctx, zc->id | PART_CTL,
					     &p->hello, sizeof(p->hello),
					     p->peer, tag, &p->hello_r);
	}
	if (ret)
		__zcmpi_die("partitioned %s rank %d: %s", recv ?
			    "receive from" : "send to", p->peer,
			    strerror(-ret));
	*req = H(z);
	return true;
}

/* MPI_Psend_init and MPI_Precv_init: ours, or the MPI's (part_new()). */
#define PART_INIT(name, recv, qual)					\
int MPI_##name(qual void *buf, int partitions, MPI_Count count,		\
	       MPI_Datatype t, int rank, int tag, MPI_Comm comm,	\
	       MPI_Info info, MPI_Request *req)				\
{									\
	ENTER;								\
									\
	if (!part_new(recv, buf, partitions, count, t, rank, tag, comm, \
		      req))						\
		LEAVE(PMPI_##name(buf, partitions, count, t, rank, tag,	\
				  comm, info, req));			\
	LEAVE(MPI_SUCCESS);						\
}
PART_INIT(Psend_init, false, const)
PART_INIT(Precv_init, true, )

/* Our active partitioned send behind req, or NULL (*err: why). */
static struct zreq *active_send(MPI_Request req, int *err)
{
	struct zreq *z = Z(req);

	*err = MPI_ERR_REQUEST;
	if (!z->part || z->part->recv || !z->active || z->done)
		return NULL;
	return z;
}

/* Ready partitions lo..hi, or the n of list: all checked, then readied. */
static int ready_some(MPI_Request req, int lo, int n, const int *list)
{
	struct zreq *z;
	struct zpart *p;
	int i, err, ret = MPI_SUCCESS;

	z = active_send(req, &err);
	if (!z)
		return __zcmpi_comm_error(Z(req)->comm, err);
	p = z->part;
	for (i = 0; i < n; i++) {
		int j = list ? list[i] : lo + i;

		if (j < 0 || j >= p->parts)
			return __zcmpi_comm_error(z->comm, PART_ERR_INDEX);
	}
	zcmpi_mlock(&p->lock);
	for (i = 0; i < n && !ret; i++)
		ret = send_ready(z, p, list ? list[i] : lo + i);
	zcmpi_munlock(&p->lock);
	if (ret)
		__zcmpi_comm_error(z->comm, ret);
	return ret;
}

int MPI_Pready(int partition, MPI_Request req)
{
	ENTER;

	if (!ours(req))
		LEAVE(PMPI_Pready(partition, req));
	LEAVE(ready_some(req, partition, 1, NULL));
}

int MPI_Pready_range(int lo, int hi, MPI_Request req)
{
	ENTER;

	if (!ours(req))
		LEAVE(PMPI_Pready_range(lo, hi, req));
	if (hi < lo)
		LEAVE(__zcmpi_comm_error(Z(req)->comm, PART_ERR_INDEX));
	LEAVE(ready_some(req, lo, hi - lo + 1, NULL));
}

int MPI_Pready_list(int n, int list[], MPI_Request req)
{
	ENTER;

	if (!ours(req))
		LEAVE(PMPI_Pready_list(n, list, req));
	if (n < 0 || (n && !list))
		LEAVE(__zcmpi_comm_error(Z(req)->comm, MPI_ERR_ARG));
	LEAVE(ready_some(req, 0, n, list));
}

int MPI_Parrived(MPI_Request req, int partition, int *flag)
{
	struct zreq *z;
	struct zpart *p;
	ENTER;

	if (!ours(req))
		LEAVE(PMPI_Parrived(req, partition, flag));
	z = Z(req);
	p = z->part;
	if (!p || !p->recv)
		LEAVE(__zcmpi_comm_error(z->comm, MPI_ERR_REQUEST));
	if (partition < 0 || partition >= p->parts)
		LEAVE(__zcmpi_comm_error(z->comm, PART_ERR_INDEX));
	/* Inactive: the last round's data is all there. */
	if (!z->active || z->done) {
		*flag = 1;
		LEAVE(MPI_SUCCESS);
	}
	__zcmpi_part_progress();
	zcmpi_mlock(&p->lock);
	*flag = msg_poll(z, p, partition);
	zcmpi_munlock(&p->lock);
	LEAVE(MPI_SUCCESS);
}

#else /* MPI_VERSION < 4: the MPI has no partitioned calls */

bool __zcmpi_part_poll(struct zreq *z)
{
	return z->done;
}

int __zcmpi_part_start(struct zreq *z)
{
	(void)z;
	return MPI_ERR_REQUEST;
}

void __zcmpi_part_wait(struct zreq *z)
{
	(void)z;
}

bool __zcmpi_part_idle(struct zreq *z, int timeout_ms)
{
	(void)z;
	(void)timeout_ms;
	return false;
}

void __zcmpi_part_progress(void)
{
}

void __zcmpi_part_free(struct zreq *z)
{
	z->part = NULL;
}

#endif
