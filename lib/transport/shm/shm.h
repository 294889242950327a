/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * shm.h - the mechanics of the intra-node (shared-memory) transport:
 * host identity, a receiver-owned ring of cells in an anonymous memfd
 * segment with an eventfd doorbell, handing both descriptors to the peer
 * with pidfd_getfd(2), and single-copy payload moves with
 * process_vm_readv(2). Nothing here knows about TCP, endpoints or
 * matching: shm_tp.c glues it to the library.
 *
 * Nothing is ever named in a file system: the segment is a memfd, so it
 * disappears with the last process that maps it or holds its descriptor,
 * and a killed peer leaves nothing behind. Documentation/shm.md.
 */
#ifndef ZCR_SHM_H
#define ZCR_SHM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Who we are: two processes are on one host when both fields are equal. */
struct zcr_shm_hostid {
	char boot_id[40];		/* /proc/sys/kernel/random/boot_id */
	char host[72];			/* gethostname(2) */
};

int __zcr_shm_hostid(struct zcr_shm_hostid *id);
bool __zcr_shm_same_host(const struct zcr_shm_hostid *a,
			 const struct zcr_shm_hostid *b);

/*
 * One record of a ring: a message header followed, for an eager message,
 * by its payload in the same cell. A rendezvous message carries the
 * sender's buffer address instead; the receiver pulls the payload from
 * there, and the ring's head passing the cell tells the sender. A
 * synchronous message (ZCR_SHM_F_SYNC in flags, only when the handshake
 * agreed on acknowledgements) is answered by a MATCHED cell carrying its
 * number once a receive matched it; MATCHED cells take no number of
 * their own.
 */
enum zcr_shm_type {
	ZCR_SHM_EAGER = 1,		/* payload inline */
	ZCR_SHM_RTS = 2,		/* payload at addr in the sender */
	ZCR_SHM_MATCHED = 4,		/* message seq was matched */
	/*
	 * Message prefetching (lib/prefetch, Documentation/prefetch.md,
	 * "Over shm"), only where both offers had bit 3 and both HELLOs
	 * ZCR_HELLO_PREFETCH. tag holds the request number in each:
	 */
	ZCR_SHM_PF_INFO = 8,		/* before an RTS: addr the sender's
					 * buffer, len bytes of the bitmap
					 * of pages left out, inline */
	ZCR_SHM_PF_REQ = 9,		/* addr, len: the buffer predicted */
	ZCR_SHM_PF_DATA = 10,		/* the answer: len bytes (0: none)
					 * at cookie in the sender, the
					 * bitmap then the pages, kept there
					 * until the ring's head passed the
					 * cell; addr the buffer asked for */
};

#define ZCR_SHM_F_SYNC	1ULL		/* flags: ACK with MATCHED */

/*
 * A shared copy (both offers carry flag bit 2, offer.c). While the
 * receiver holds an RTS cell open (pulling it), it may offer the sender,
 * who waits for that pull anyway, the first part of the copy: it writes
 * where (cookie: its own address) and how much (pad[0], the communicator
 * id it has read already) into the live cell, then sets status to
 * OFFERED and pulls the rest itself. A sender that looks in time takes
 * the offer (TAKEN), writes that part into the receiver with
 * process_vm_writev(2), says DONE (or FAILED) and rings the receiver's
 * doorbell; if the offer is still OFFERED when the receiver's own part
 * is done, the receiver withdraws it and copies that part too. A taken
 * part is waited for (without blocking progress) until DONE, FAILED or
 * the sender's exit: nothing may write into the destination once the
 * receive completed. The receiver consumes the cell only when every byte
 * is in, as before. Both processes copy at once: on two processors a
 * large message moves in about half the time.
 *
 * Half and half is right only when both copy at the same speed. They
 * need not: each walks the other's page tables (the receiver the
 * sender's source, the sender the receiver's destination), and one
 * process's buffer may be 4 KiB pages where the other's are huge
 * (2.4-3.2x slower on the machine of Documentation/benchmarks.md). The receiver
 * therefore sizes the sender's part from how the last shared pull of the
 * connection went: __zcr_shm_share_next(). The wire is unchanged: pad[0]
 * says how much, as before.
 */
/*
 * The end of an RTS (any RTS, shared or not): once every byte is in, the
 * receiver swaps the status, whatever it is, for CONSUMED; a sender that
 * closes the connection while the cell is not consumed yet swaps it for
 * REVOKED and fails the send, which hands the buffer back to the
 * application. Whichever swap comes first wins: a receiver that finds
 * REVOKED fails the message (its bytes may be the application's next
 * ones), a sender that finds CONSUMED completes the send, delivered.
 * Peers of a version without these two keep the old behaviour: the
 * sender ignores CONSUMED, the receiver never looks for REVOKED.
 */
enum zcr_shm_help {
	ZCR_SHM_HELP_NONE = 0,		/* as the sender wrote it */
	ZCR_SHM_HELP_OFFERED = 1,	/* receiver: cookie, pad[0] are set */
	ZCR_SHM_HELP_TAKEN = 2,		/* sender: copying */
	ZCR_SHM_HELP_DONE = 3,		/* sender: the part is in */
	ZCR_SHM_HELP_FAILED = 4,	/* sender: could not write it */
	ZCR_SHM_HELP_WITHDRAWN = 5,	/* receiver: copied it itself */
	ZCR_SHM_CONSUMED = 6,		/* receiver: every byte is in */
	ZCR_SHM_REVOKED = 7,		/* sender: closed, the send failed */
};

/* The sender's share of a shared pull, in 1/ZCR_SHM_SHARE_ONE. */
#define ZCR_SHM_SHARE_ONE	64
#define ZCR_SHM_SHARE_MIN	8	/* never under 1/8 ... */
#define ZCR_SHM_SHARE_MAX	56	/* ... or over 7/8: keep measuring */
#define ZCR_SHM_SHARE_STEP	4	/* more when it was first done */

/*
 * The sender's share of the next shared pull, from the last one (share):
 * we copied own_bytes in own_ns; the sender its_bytes, and its word came
 * its_ns after the offer, or before our part was in (its_ns 0: faster by
 * an unknown margin, so it gets ZCR_SHM_SHARE_STEP more). Otherwise half
 * way towards the share that makes both end together at the speeds
 * seen. Clamped to [ZCR_SHM_SHARE_MIN, ZCR_SHM_SHARE_MAX].
 */
unsigned int __zcr_shm_share_next(unsigned int share, uint64_t own_bytes,
				  uint64_t own_ns, uint64_t its_bytes,
				  uint64_t its_ns);

struct zcr_shm_cell {
	uint32_t type;
	int32_t src;
	int32_t tag;
	int32_t status;			/* RTS: enum zcr_shm_help */
	uint64_t len;			/* payload length */
	uint64_t seq;
	uint64_t addr;			/* RTS: payload in the sender */
	uint64_t cookie;		/* RTS offered: receiver's address */
	uint64_t pad[1];		/* pad[0]: communicator id */
	uint64_t flags;			/* ZCR_SHM_F_* */
	/* payload follows (eager) */
};

#define ZCR_SHM_CELL_HDR	sizeof(struct zcr_shm_cell)

/* Shared control block at the start of a segment. */
struct zcr_shm_ctl {
	uint32_t magic;
	uint32_t ncell;
	uint64_t cell_size;
	_Alignas(64) _Atomic uint64_t head;	/* consumer: next to read */
	_Alignas(64) _Atomic uint64_t tail;	/* producer: next to write */
	_Alignas(64) _Atomic uint32_t sleeping;	/* consumer waits: kick */
};

#define ZCR_SHM_MAGIC		0x4d485343U	/* "CSHM" */

/*
 * One ring, either our own incoming ring (created: we consume) or the
 * peer's incoming ring (attached: we produce). The geometry is read once
 * at attach and kept here, never trusted again from shared memory.
 */
struct zcr_shm_ring {
	int memfd;			/* created: ours; attached: -1 */
	int evfd;			/* doorbell: ours to poll / theirs */
	struct zcr_shm_ctl *ctl;
	char *cells;
	size_t map_len;
	uint32_t ncell;
	uint64_t cell_size;
	/* Local copies; a producer's head is the consumer's as last read. */
	uint64_t head, tail;
};

/*
 * The cell at the consumer's head, about to be read: its header's line
 * and the first line of its payload asked for at once, so that the two
 * misses overlap each other and the way out of the look (progress, the
 * transport's pass) instead of coming one after the other when the cell
 * is opened and then copied (a header fills its own line: an 8-byte
 * message's payload is in the next). A hint only: no fault, no order.
 */
static inline void zcr_shm_ring_prefetch_head(const struct zcr_shm_ring *r)
{
	const char *c = r->cells + (size_t)(r->head % r->ncell) * r->cell_size;

	__builtin_prefetch(c, 0, 3);
	__builtin_prefetch(c + 64, 0, 3);
}

/* Payload bytes one cell carries inline. */
static inline uint64_t zcr_shm_eager_max(const struct zcr_shm_ring *r)
{
	return r->cell_size - ZCR_SHM_CELL_HDR;
}

/* Create our incoming ring: ncell cells of cell_size bytes (headers
 * included). Returns 0 or -errno. */
int __zcr_shm_ring_create(struct zcr_shm_ring *r, uint32_t ncell,
			  uint64_t cell_size);
/*
 * Attach the peer's incoming ring: copy its memfd and eventfd (descriptor
 * numbers memfd_no, evfd_no in process pid) with pidfd_getfd(2), map the
 * segment and validate its geometry. Needs PTRACE_MODE_ATTACH_REALCREDS
 * on the peer (see __zcr_shm_allow_peer). Returns 0 or -errno.
 */
int __zcr_shm_ring_attach(struct zcr_shm_ring *r, int pidfd, int memfd_no,
			  int evfd_no);
/* Unmap and close; safe on a zeroed or half-made ring. */
void __zcr_shm_ring_destroy(struct zcr_shm_ring *r);

/*
 * A message of more than one cell's payload (offer flag 2 on both sides)
 * may travel eager over ZCR_SHM_FRAG_CELLS consecutive cells at most: the
 * header and the first part in the first cell, the rest filling whole
 * cells after it, all published at once.
 */
#define ZCR_SHM_FRAG_CELLS	16

/* Cells an eager message of len bytes takes. */
static inline uint64_t zcr_shm_cells_for(const struct zcr_shm_ring *r,
					 uint64_t len)
{
	uint64_t first = zcr_shm_eager_max(r);

	return len <= first ? 1 :
	       1 + (len - first + r->cell_size - 1) / r->cell_size;
}

/* Producer: the next free cell, or NULL when the ring is full. */
struct zcr_shm_cell *__zcr_shm_ring_reserve(struct zcr_shm_ring *r);
/* Producer: the first of k free cells, or NULL when fewer are free. */
struct zcr_shm_cell *__zcr_shm_ring_reserve_n(struct zcr_shm_ring *r,
					      uint64_t k);
/* Producer: copy len bytes into the reserved cells, after the header. */
void __zcr_shm_ring_put(struct zcr_shm_ring *r, const void *src,
			uint64_t len);
/* Producer: publish k reserved cells at once. */
void __zcr_shm_ring_publish_n(struct zcr_shm_ring *r, uint64_t k);
/* Producer: publish the reserved cell; ring the doorbell if need be. */
void __zcr_shm_ring_publish(struct zcr_shm_ring *r);
/* Consumer: the next cell, or NULL when empty; -EBADMSG state is
 * reported by returning NULL and setting *err. */
struct zcr_shm_cell *__zcr_shm_ring_peek(struct zcr_shm_ring *r, int *err);
/* The cell of ring index i (producer or consumer side). */
struct zcr_shm_cell *__zcr_shm_ring_cell(struct zcr_shm_ring *r, uint64_t i);
/* Consumer: done with the cell peek returned. */
void __zcr_shm_ring_consume(struct zcr_shm_ring *r);
/* Consumer: cells published and not consumed (at most ncell). */
uint64_t __zcr_shm_ring_ready(struct zcr_shm_ring *r);
/* Consumer: copy len bytes out of the cells from the head, after the
 * header (the message's cells must be ready). */
void __zcr_shm_ring_get(struct zcr_shm_ring *r, void *dst, uint64_t len);
/* Consumer: done with k cells. */
void __zcr_shm_ring_consume_n(struct zcr_shm_ring *r, uint64_t k);
/*
 * Consumer, before it sleeps on r->evfd: announce it, then look again.
 * Returns true if the ring is still empty (sleep), false if a cell came
 * in meanwhile (do not sleep; the announcement is withdrawn).
 */
bool __zcr_shm_ring_sleep_begin(struct zcr_shm_ring *r);
/* Consumer, after waking up (or not sleeping after all). */
void __zcr_shm_ring_sleep_end(struct zcr_shm_ring *r);
/* Consumer: read the doorbell (the flag stays as it is). */
void __zcr_shm_ring_drain(struct zcr_shm_ring *r);

/*
 * Let process pid use ptrace-mode access on us (process_vm_readv of our
 * buffers, pidfd_getfd of our descriptors). Only the Yama LSM's
 * ptrace_scope 1 asks for anything: there only our ancestors and the
 * reader we set with prctl(PR_SET_PTRACER) may, one setting per process,
 * and setting another replaces the last, mid-connection (ours, or those
 * of another library in the process: Open MPI sets PR_SET_PTRACER_ANY
 * for its own single copies). So, by ZCRECV_SHM_PTRACER: any (default)
 * lets any process of ours read us (PR_SET_PTRACER_ANY), which never
 * takes access from anyone; peer names the first peer only and refuses
 * later ones (-EBUSY: that connection stays on TCP). Our parent needs
 * nothing; scope 0 or no Yama needs nothing; at scope 2 or 3 nothing we
 * set helps (the attach fails unless the peer holds CAP_SYS_PTRACE:
 * TCP). A ZCRECV_SHM_PTRACER of neither refuses at every scope
 * (-EINVAL). Returns 0 or -errno, with why (if not NULL) saying what
 * went wrong.
 */
int __zcr_shm_allow_peer(pid_t pid, char *why, size_t len);

enum zcr_shm_ptracer_mode {
	ZCR_SHM_PTRACER_MODE_ANY,
	ZCR_SHM_PTRACER_MODE_PEER,
};

/* ZCRECV_SHM_PTRACER read: 0, or -EINVAL for a value of none of them. */
int __zcr_shm_ptracer_mode(enum zcr_shm_ptracer_mode *mode);

enum zcr_shm_ptracer {
	ZCR_SHM_PTRACER_KEEP,		/* pid may read us already */
	ZCR_SHM_PTRACER_SET_PID,	/* name pid */
	ZCR_SHM_PTRACER_SET_ANY,	/* let any process read us */
	ZCR_SHM_PTRACER_REFUSE,		/* another is named: say no */
};

#define ZCR_SHM_PTRACER_ANY_PID	((pid_t)-1)

/*
 * What __zcr_shm_allow_peer() does for reader pid, at Yama scope (-1: no
 * Yama), pid our parent (Yama lets it) or not, with named (0: none so
 * far, ZCR_SHM_PTRACER_ANY_PID: any) allowed already.
 */
enum zcr_shm_ptracer __zcr_shm_ptracer_decide(int scope, bool parent,
					      pid_t named, pid_t pid,
					      enum zcr_shm_ptracer_mode mode);
/* pidfd_open(2) of pid: descriptor or -errno. */
int __zcr_shm_pidfd(pid_t pid);
/*
 * Copy len bytes at remote address src of process pid into dst, with as
 * many process_vm_readv(2) calls as it takes. Returns 0 or -errno
 * (-EPERM/-EACCES: ptrace policy; -ESRCH: the process is gone; -EFAULT:
 * the range is not mapped there).
 */
int __zcr_shm_pull(pid_t pid, void *dst, uint64_t src, size_t len);
/* The other way: len bytes at src here to remote address dst of pid
 * (process_vm_writev(2)); same returns. */
int __zcr_shm_push(pid_t pid, uint64_t dst, const void *src, size_t len);

/*
 * What the handshake hands to the shm transport when it moves an endpoint
 * there (struct zcr_transport_ops.adopt's arg): both rings, the peer and a
 * descriptor of the old connection, kept only to notice the peer closing.
 * adopt takes ownership of all of it, also when it fails.
 */
struct zcr_shm_adopt {
	struct zcr_shm_ring in, out;
	bool frag;			/* the peer takes multi-cell eager */
	bool help;			/* and parts of our pulls' copies */
	bool pf;			/* and prefetch cells */
	pid_t peer;
	int pidfd;
	int ctl_fd;
};

/*
 * The negotiation a TCP connection carries for the shm transport once its
 * handshake is through (lib/transport/shm/upgrade.c, the transport's
 * upgrade hook; its offer's body in offer.c). Each side sends an offer
 * (its host, pid and ring descriptors, or that it declines); on the
 * peer's offer it lets the peer ptrace-access it and says so (GRANT); on
 * the peer's GRANT it fetches the peer's ring and says whether that
 * worked (SWITCH). When both SWITCHes said yes, the endpoint moves to the
 * shm transport.
 */
#define ZCR_SHM_OFFER_LEN	128

struct zcr_shm_nego {
	struct zcr_shm_adopt a;		/* our ring, later the peer's too */
	bool offered;			/* our offer said yes */
	pid_t peer;
	int peer_memfd, peer_evfd;
	char why[96];			/* why we stay on TCP */
};

/* Is the shm transport wanted (ZCRECV_SHM=1)? */
bool __zcr_shm_wanted(void);
/* Make our ring (when wanted) and encode our offer. Returns 0 or -errno. */
int __zcr_shm_offer(struct zcr_shm_nego *n, uint8_t out[ZCR_SHM_OFFER_LEN]);
/*
 * The peer's offer: 0 when both said yes and share a host (the peer may
 * now ptrace-access us: send GRANT); else -errno with n->why set.
 */
int __zcr_shm_offer_take(struct zcr_shm_nego *n,
			 const uint8_t in[ZCR_SHM_OFFER_LEN]);
/* The peer granted access: fetch its ring. 0, or -errno with n->why. */
int __zcr_shm_attach_peer(struct zcr_shm_nego *n);
/* Release whatever n holds (the shm transport did not adopt it). */
void __zcr_shm_nego_release(struct zcr_shm_nego *n);

struct zcr_upgrade_ops;
/* The shm transport's upgrade hook (upgrade.c; transport/upgrade.h). */
extern const struct zcr_upgrade_ops __zcr_shm_upgrade;

#endif /* ZCR_SHM_H */
