/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * verbs.h - the RDMA verbs transport (lib/transport/verbs/):
 * reliable-connected queue pairs over libibverbs, set up over a TCP
 * connection of its own ("verbs://HOST:PORT"), no librdmacm.
 * Documentation/verbs.md describes the protocol, its flow control and the
 * pinned-page rule.
 */
#ifndef ZCR_VERBS_H
#define ZCR_VERBS_H

#include <stdint.h>

struct zcr_ctx;

/*
 * What the transport did in a context, for tests and zcbench
 * (ZCRECV_VERBS_STATS=1 also prints it at zcr_ctx_destroy()).
 */
struct zcr_verbs_stats {
	uint64_t eager;			/* messages received inline */
	uint64_t rndv;			/* messages received by RDMA READ */
	uint64_t direct_posted;		/* READ straight into a posted buffer */
	uint64_t direct_staged;		/* READ straight into a staging slot */
	uint64_t bounced;		/* READ into the bounce buffer, copied */
	uint64_t bounce_bytes;		/* bytes copied out of the bounce buffer */
	uint64_t regs, reg_ns;		/* ibv_reg_mr calls, time they took */
	uint64_t deregs, dereg_ns;	/* ibv_dereg_mr calls, time they took */
	uint64_t reg_failed;		/* registrations refused (then bounced) */
	uint64_t cache_hits;		/* registration cache hits */
	uint64_t live_slot_mrs;		/* staging MRs registered right now */
	/* offered receive buffers (persistent receives) */
	uint64_t adv_sent;		/* receives offered to their sender */
	uint64_t adv_written;		/* ... that it wrote into (WRITE+imm) */
	uint64_t adv_other;		/* ... that took a message sent as usual */
	uint64_t adv_revoked;		/* ... cancelled before any message */
	uint64_t adv_got;		/* offers we got from receivers */
	uint64_t writes;		/* messages we wrote into an offer */
	uint64_t live_adv_mrs;		/* offered buffers registered now */
	uint64_t live_pins;		/* persistent sends' registrations now */
};

/*
 * The transport's counters of ctx. Returns 0, or -ENODEV when the
 * transport never opened a device in ctx.
 */
int __zcr_verbs_stats(struct zcr_ctx *ctx, struct zcr_verbs_stats *vs);

#endif /* ZCR_VERBS_H */
