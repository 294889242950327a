/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * upgrade.h - the hook by which a connection's handshake, once through,
 * can move the endpoint to another transport: the intra-node shm
 * transport takes over TCP connections between two processes of one host
 * this way (Documentation/shm.md).
 *
 * The carrying transport (TCP) knows only this interface. When one of
 * the context's transports offers an upgrade it dials in wire version 2;
 * once both HELLOs are through on a version-2 connection it holds its
 * sends and calls @begin; it hands every upgrade control message
 * (ZCR_WIRE_UP_*, wire.h) to @rx, its body read first, until @rx says
 * the negotiation is over. The upgrading transport owns the negotiation's
 * state and everything it means (what an offer holds, when to move, the
 * hand-off itself with __zcr_ep_handoff_locked()).
 */
#ifndef ZCR_UPGRADE_H
#define ZCR_UPGRADE_H

#include <stdbool.h>
#include <stddef.h>

struct zcr_ctx;
struct zcr_ep;

/**
 * struct zcr_upgrade_link - what the carrying transport lends an upgrade
 * @send:	send one control message: wire type, tag and a body of
 *		@len bytes (at most ZCR_WIRE_OFFER_LEN). Returns 0, or -errno
 *		with the endpoint failed
 * @dup_fd:	a duplicate (close-on-exec) of the connection's descriptor,
 *		for the new transport to keep as a control channel, or -errno
 */
struct zcr_upgrade_link {
	int (*send)(struct zcr_ep *ep, int type, int tag, const void *body,
		    size_t len);
	int (*dup_fd)(struct zcr_ep *ep);
};

/* What struct zcr_upgrade_ops.rx returns. */
enum zcr_upgrade_step {
	ZCR_UPGRADE_MORE,	/* still negotiating: sends stay held */
	ZCR_UPGRADE_STAY,	/* over, the endpoint stays: send */
	ZCR_UPGRADE_MOVED,	/* over, the endpoint moved: the carrier's
				 * per-endpoint state is gone */
	ZCR_UPGRADE_FAILED,	/* the endpoint failed */
};

/**
 * struct zcr_upgrade_ops - a transport that can take over a connection
 * @wanted:	should a connection dialled in @ctx offer the upgrade (dial
 *		in wire version 2)? A connection accepted in version 2 is
 *		negotiated whatever this says: the upgrade then declines
 * @begin:	the handshake of @ep is through on a version-2 connection:
 *		set *@state and send the first message with @l. Returns 0,
 *		or -errno with the endpoint failed (*@state not set)
 * @rx:		a control message of wire @type, @tag and body @body of
 *		@len bytes. @state is the upgrade's during the call: on
 *		ZCR_UPGRADE_MORE it is handed back to the carrier, on any
 *		other return the upgrade has released it
 * @release:	the connection closed, or the negotiation was abandoned:
 *		free @state
 */
struct zcr_upgrade_ops {
	bool (*wanted)(struct zcr_ctx *ctx);
	int (*begin)(struct zcr_ep *ep, const struct zcr_upgrade_link *l,
		     void **state);
	enum zcr_upgrade_step (*rx)(struct zcr_ep *ep, void *state,
				    const struct zcr_upgrade_link *l,
				    int type, int tag, const void *body,
				    size_t len);
	void (*release)(void *state);
};

#endif /* ZCR_UPGRADE_H */
