// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * upgrade.c - the shm transport's upgrade hook (transport/upgrade.h): the
 * negotiation a TCP connection carries, once its handshake is through in
 * wire version 2, to move to shm. Each side sends an OFFER (offer.c: its
 * host, pid and ring, or that it declines); on the peer's offer it lets
 * the peer ptrace-access it and says so (GRANT, tag 0 or an errno); on
 * the peer's GRANT it fetches the peer's ring and says whether that
 * worked (SWITCH). When both SWITCHes said yes, the endpoint moves here
 * (__zcr_ep_handoff_locked()), keeping a duplicate of the TCP socket as
 * its control channel; otherwise it stays on TCP, and ep->errmsg says
 * why (Documentation/shm.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ctx.h"
#include "transport/shm/shm.h"
#include "transport/transport.h"
#include "transport/upgrade.h"
#include "transport/wire.h"

_Static_assert(ZCR_SHM_OFFER_LEN == ZCR_WIRE_OFFER_LEN, "offer body");

#define SENT_SWITCH	1u
#define GOT_SWITCH	2u

struct shm_up {
	struct zcr_shm_nego sn;
	unsigned int nego;		/* SENT_SWITCH | GOT_SWITCH */
	bool take_ok;			/* the peer's offer suits us */
	int my_switch, peer_switch;	/* 0: moving to shm, else errno */
};

static bool up_wanted(struct zcr_ctx *ctx)
{
	(void)ctx;
	return __zcr_shm_wanted();
}

static void up_release(void *state)
{
	struct shm_up *su = state;

	__zcr_shm_nego_release(&su->sn);
	free(su);
}

/* Offer shm (or say why not) before any message. */
static int up_begin(struct zcr_ep *ep, const struct zcr_upgrade_link *l,
		    void **state)
{
	uint8_t offer[ZCR_SHM_OFFER_LEN];
	struct shm_up *su = calloc(1, sizeof(*su));
	int ret;

	if (!su) {
		__zcr_ep_fail_locked(ep, -ENOMEM, "out of memory");
		return -ENOMEM;
	}
	__zcr_shm_offer(&su->sn, offer);
	ret = l->send(ep, ZCR_WIRE_UP_OFFER, 0, offer, sizeof(offer));
	if (ret) {
		up_release(su);
		return ret;
	}
	*state = su;
	return 0;
}

/*
 * Both SWITCHes are through: move to shm if both said yes, else stay on
 * the carrying transport, saying why.
 */
static enum zcr_upgrade_step resolve(struct zcr_ep *ep, struct shm_up *su,
				     const struct zcr_upgrade_link *l)
{
	const char *tp = ep->tp->name;
	int ret = -EPROTO;

	if ((su->nego & (SENT_SWITCH | GOT_SWITCH)) !=
	    (SENT_SWITCH | GOT_SWITCH))
		return ZCR_UPGRADE_MORE;
	if (!su->my_switch && !su->peer_switch) {
		su->sn.a.ctl_fd = l->dup_fd(ep);
		snprintf(ep->errmsg, sizeof(ep->errmsg), "shm");
		if (su->sn.a.ctl_fd >= 0)
			ret = __zcr_ep_handoff_locked(ep, &__zcr_transport_shm,
						      &su->sn.a);
		if (!ret) {
			free(su);	/* what it held is adopted */
			return ZCR_UPGRADE_MOVED;
		}
		snprintf(ep->errmsg, sizeof(ep->errmsg),
			 "%s (shm: hand-off failed: %s)", tp, strerror(-ret));
	} else if (su->my_switch) {
		snprintf(ep->errmsg, sizeof(ep->errmsg), "%s (shm: %s)", tp,
			 su->sn.why);
	} else {
		snprintf(ep->errmsg, sizeof(ep->errmsg),
			 "%s (shm: the peer could not attach: %s)", tp,
			 strerror(su->peer_switch));
	}
	up_release(su);
	return ZCR_UPGRADE_STAY;
}

/* The peer's GRANT (tag): fetch its ring if it let us; say so (SWITCH). */
static enum zcr_upgrade_step rx_grant(struct zcr_ep *ep, struct shm_up *su,
				      const struct zcr_upgrade_link *l,
				      int tag)
{
	int ret = -EOPNOTSUPP;

	if (!tag && su->take_ok)
		ret = __zcr_shm_attach_peer(&su->sn);
	else if (tag == EBUSY && !su->sn.why[0])
		/* We were willing; the peer was not (shm.c). */
		snprintf(su->sn.why, sizeof(su->sn.why),
			 "the peer lets another process read it "
			 "(Yama ptrace_scope 1)");
	else if (tag && !su->sn.why[0])
		snprintf(su->sn.why, sizeof(su->sn.why),
			 "the peer refused shm: %s", strerror(tag));
	su->my_switch = -ret;
	su->nego |= SENT_SWITCH;
	if (l->send(ep, ZCR_WIRE_UP_SWITCH, -ret, NULL, 0)) {
		up_release(su);
		return ZCR_UPGRADE_FAILED;
	}
	return resolve(ep, su, l);
}

static enum zcr_upgrade_step up_rx(struct zcr_ep *ep, void *state,
				   const struct zcr_upgrade_link *l, int type,
				   int tag, const void *body, size_t len)
{
	struct shm_up *su = state;
	int ret;

	switch (type) {
	case ZCR_WIRE_UP_OFFER:
		/* The peer's offer: say whether it may attach. */
		ret = len == ZCR_SHM_OFFER_LEN ?
		      __zcr_shm_offer_take(&su->sn, body) : -EPROTO;
		su->take_ok = !ret;
		if (l->send(ep, ZCR_WIRE_UP_GRANT, -ret, NULL, 0)) {
			up_release(su);
			return ZCR_UPGRADE_FAILED;
		}
		return ZCR_UPGRADE_MORE;
	case ZCR_WIRE_UP_GRANT:
		return rx_grant(ep, su, l, tag);
	default:
		su->peer_switch = tag;
		su->nego |= GOT_SWITCH;
		return resolve(ep, su, l);
	}
}

const struct zcr_upgrade_ops __zcr_shm_upgrade = {
	.wanted = up_wanted,
	.begin = up_begin,
	.rx = up_rx,
	.release = up_release,
};
