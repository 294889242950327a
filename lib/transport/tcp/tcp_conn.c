// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tcp_conn.c - the TCP transport's handshake: HELLO each way, AUTH when
 * there is a job secret (policy and MAC in transport/auth.c), old peers
 * (dialled again in wire version 1, or in the 0.1 form), and, in wire
 * version 2, the negotiation of a transport that may take the connection
 * over once the handshake is through (transport/upgrade.h): TCP carries
 * its control messages and holds its sends meanwhile, and knows nothing
 * else of it. The wire format is in Documentation/design.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/ctx.h"
#include "transport/auth.h"
#include "transport/sock.h"
#include "prefetch/prefetch.h"
#include "transport/tcp/tcp_priv.h"
#include "transport/transport.h"
#include "transport/upgrade.h"
#include "transport/wire.h"

static bool hello_auth(struct zcr_ep *ep);
static bool hello_open(struct zcr_ep *ep);

/* The first transport of ctx that can take a connection over, or NULL. */
const struct zcr_transport_ops *__zcr_tcp_upgrade_of(struct zcr_ctx *ctx)
{
	int i;

	for (i = 0; i < ctx->ntr; i++)
		if (ctx->tr[i].ops->upgrade)
			return ctx->tr[i].ops;
	return NULL;
}

/*
 * Send one header (and body) of the handshake on a fresh socket. 0, or
 * -errno with the endpoint failed.
 */
static int send_ctl(struct zcr_ep *ep, int type, int tag, const void *body,
		    size_t len)
{
	struct zcr_wire_hdr h = {
		.magic = ZCR_WIRE_MAGIC,
		.version = (uint8_t)T(ep)->ver,
		.type = (uint8_t)type,
		.hdr_len = ZCR_WIRE_HDR_LEN,
		.src = type == ZCR_WIRE_HELLO ? ep->ctx->rank : 0,
		.tag = tag,
		.len = len,
	};
	uint8_t buf[ZCR_WIRE_HDR_LEN + ZCR_WIRE_OFFER_LEN];
	ssize_t w;
	int err;

	if (len > ZCR_WIRE_OFFER_LEN) {
		__zcr_ep_fail_locked(ep, -EINVAL, "control body too long");
		return -EINVAL;
	}
	__zcr_wire_encode(&h, buf);
	if (len)
		memcpy(buf + ZCR_WIRE_HDR_LEN, body, len);
	/* Nothing else is queued yet: these always fit the socket buffer. */
	w = send(T(ep)->fd, buf, ZCR_WIRE_HDR_LEN + len, MSG_NOSIGNAL);
	if (w == (ssize_t)(ZCR_WIRE_HDR_LEN + len))
		return 0;
	err = w < 0 ? -errno : -EIO;
	__zcr_ep_fail_locked(ep, err, "cannot send the handshake");
	return err;
}

/* What TCP lends an upgrade's negotiation (upgrade.h). */
static int link_dup_fd(struct zcr_ep *ep)
{
	int fd = fcntl(T(ep)->fd, F_DUPFD_CLOEXEC, 0);

	return fd < 0 ? -errno : fd;
}

static const struct zcr_upgrade_link tcp_link = {
	.send = send_ctl,
	.dup_fd = link_dup_fd,
};

/*
 * Our HELLO: our rank, whether we will prove the job secret (AUTH), the
 * largest message we take, and this connection's nonce. To a 0.1 peer,
 * which refuses a HELLO with any of these set, only the rank.
 */
static int send_hello(struct zcr_ep *ep)
{
	struct zcr_ctx *ctx = ep->ctx;
	/*
	 * Communicator ids and acknowledged sync sends: the dialler offers
	 * them, the acceptor answers. On wire version 2 SYNC also says that
	 * our shm transport acknowledges (MATCHED cells): 0.2.0 offered
	 * SYNC on version 1 only, as its shm had no acknowledgement, and
	 * such a peer neither sends nor answers it there.
	 */
	bool comm = ep->accepted ? (T(ep)->h.tag & ZCR_HELLO_COMM) :
		    ctx->comm_ids;
	bool sync = comm &&
		    (!ep->accepted || (T(ep)->h.tag & ZCR_HELLO_SYNC));
	/* Prefetching: offered by the dialler, answered as it is. */
	bool pf = ctx->pf &&
		  (!ep->accepted || (T(ep)->h.tag & ZCR_HELLO_PREFETCH));
	struct zcr_wire_hdr h = {
		.magic = ZCR_WIRE_MAGIC,
		.version = (uint8_t)T(ep)->ver,
		.type = ZCR_WIRE_HELLO,
		.hdr_len = ZCR_WIRE_HDR_LEN,
		.src = ctx->rank,
		.tag = (ctx->secret_len ? ZCR_HELLO_AUTH : 0) |
		       (comm ? ZCR_HELLO_COMM : 0) |
		       (sync ? ZCR_HELLO_SYNC : 0) |
		       (pf ? ZCR_HELLO_PREFETCH : 0),
		.len = ctx->max_msg,
		.seq = T(ep)->nonce,
	};
	uint8_t buf[ZCR_WIRE_HDR_LEN];

	if (T(ep)->legacy)
		h.tag = 0, h.len = 0, h.seq = 0;
	__zcr_wire_encode(&h, buf);
	if (send(T(ep)->fd, buf, sizeof(buf), MSG_NOSIGNAL) == sizeof(buf))
		return 0;
	__zcr_ep_fail_locked(ep, errno ? -errno : -EIO,
			     "cannot send the handshake");
	return -1;
}

/* Our AUTH: the MAC of the job secret over both ranks and nonces. */
static int send_auth(struct zcr_ep *ep)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct tcp_ep *te = T(ep);
	uint8_t mac[ZCR_AUTH_MAC_LEN], buf[ZCR_WIRE_HDR_LEN];
	struct zcr_wire_hdr h = {
		.magic = ZCR_WIRE_MAGIC,
		.version = (uint8_t)te->ver,
		.type = ZCR_WIRE_AUTH,
		.hdr_len = ZCR_WIRE_HDR_LEN,
		.src = ctx->rank,
	};

	__zcr_auth_mac(ctx, ctx->rank, te->hello_src, te->peer_nonce,
		       te->nonce, mac);
	__zcr_auth_mac_pack(mac, &h.len, &h.seq);
	__zcr_wire_encode(&h, buf);
	if (send(te->fd, buf, sizeof(buf), MSG_NOSIGNAL) == sizeof(buf))
		return 0;
	__zcr_ep_fail_locked(ep, errno ? -errno : -EIO,
			     "cannot send the handshake");
	return -1;
}

/* Name the peer, then send our HELLO (or await the peer's). */
void __zcr_tcp_start(struct zcr_ep *ep)
{
	int ret;

	__zcr_sock_peer_name(ep, T(ep)->fd);
	ret = __zcr_auth_nonce(&T(ep)->nonce);
	if (ret) {
		__zcr_ep_fail_locked(ep, ret, "no random nonce");
		return;
	}
	/*
	 * The side that accepted answers the HELLO in the version it came
	 * in: an old peer is never sent version 2.
	 */
	if (ep->accepted)
		return;
	if (!T(ep)->ver)
		T(ep)->ver = ZCR_WIRE_VERSION;
	T(ep)->hold = T(ep)->ver > ZCR_WIRE_VERSION;
	send_hello(ep);
}

/* The negotiation is over or abandoned: release it, let sends go. */
void __zcr_tcp_up_end(struct tcp_ep *te)
{
	if (te->up) {
		te->up_tp->upgrade->release(te->up);
		te->up = NULL;
	}
	free(te->redial);
	te->redial = NULL;
	te->hold = false;
}

/* A HELLO as zcrecv 0.1 sends it: the rank alone, nothing it refuses. */
static bool hello_is_legacy(const struct zcr_wire_hdr *h)
{
	return h->version == 1 && !h->tag && !h->len && !h->seq;
}

/*
 * The peer's HELLO. The side that accepted answers in the same version
 * (version 1 when no transport of ours can take a connection over), and
 * in the 0.1 form to a 0.1 HELLO. The side that dialled hears an old
 * peer, which is closing on our HELLO, when it hears version 1 after
 * offering version 2, or a 0.1 HELLO after sending a full one: dial again
 * in version 1, in the 0.1 form if the peer is 0.1. (A 0.1 peer sends
 * its HELLO at once on both sides; a later one answers the dialler's.)
 */
static bool rx_hello(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);
	bool legacy = hello_is_legacy(&te->h);
	int fd;

	te->hdr_got = 0;
	if (te->got_hello) {
		__zcr_ep_fail_locked(ep, -EPROTO, "second handshake");
		return false;
	}
	if (ep->state == ZCR_EP_HANDSHAKE && ep->accepted) {
		te->up_tp = __zcr_tcp_upgrade_of(ep->ctx);
		te->ver = te->up_tp ? te->h.version : ZCR_WIRE_VERSION;
		te->legacy = legacy;
		if (send_hello(ep))
			return false;
	} else if (ep->state == ZCR_EP_HANDSHAKE && te->redial &&
		   te->h.version == 1 &&
		   (te->ver == 2 || (legacy && !te->legacy))) {
		if (legacy && ep->ctx->secret_len) {
			__zcr_ep_fail_locked(ep, -EACCES, "peer is zcrecv "
					     "0.1, which has no job secret");
			return false;
		}
		fd = __zcr_sock_dial(te->redial);
		if (fd < 0) {
			__zcr_ep_fail_locked(ep, fd, "cannot dial again in "
					     "wire version 1");
			return false;
		}
		close(te->fd);
		te->fd = fd;
		te->legacy = legacy;
		if (te->ver == 2) {
			te->ver = 1;
			te->hold = false;
			snprintf(ep->errmsg, sizeof(ep->errmsg),
				 "%s (%s: peer speaks wire version 1 only)",
				 ep->tp->name, te->up_tp->name);
		}
		if (__zcr_auth_nonce(&te->nonce)) {
			__zcr_ep_fail_locked(ep, -EIO, "no random nonce");
			return false;
		}
		return send_hello(ep) == 0;
	} else if (te->h.version != te->ver) {
		__zcr_ep_fail_locked(ep, -EPROTO, "peer answered in wire "
				     "version %d", te->h.version);
		return false;
	}
	return hello_auth(ep);
}

/*
 * The peer's HELLO is in (the versions agree). Without a job secret the
 * connection opens now. With one, we send our AUTH and open when the
 * peer's AUTH proves it knows the secret too; a peer that will not prove
 * it is refused at once.
 */
static bool hello_auth(struct zcr_ep *ep)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct tcp_ep *te = T(ep);

	if (ep->state != ZCR_EP_HANDSHAKE) {
		__zcr_ep_fail_locked(ep, -EPROTO, "second handshake");
		return false;
	}
	ep->peer_max_msg = te->h.len ? te->h.len : UINT64_MAX;
	ep->comm_ok = (te->h.tag & ZCR_HELLO_COMM) &&
		      (ep->accepted || ctx->comm_ids);
	ep->sync_ok = ep->comm_ok && (te->h.tag & ZCR_HELLO_SYNC);
	if ((te->h.tag & ZCR_HELLO_PREFETCH) && ctx->pf &&
	    __zcr_pf_ep_init(ep)) {
		__zcr_ep_fail_locked(ep, -ENOMEM, "out of memory");
		return false;
	}
	te->peer_nonce = te->h.seq;
	te->hello_src = te->h.src;
	if (__zcr_auth_hello_check(ep, te->h.tag & ZCR_HELLO_AUTH, te->h.src))
		return false;
	if (!ctx->secret_len)
		return hello_open(ep);
	te->got_hello = true;
	return send_auth(ep) == 0;
}

/* The peer's AUTH: its MAC must be the one the job secret gives. */
static bool rx_auth(struct zcr_ep *ep)
{
	struct zcr_ctx *ctx = ep->ctx;
	struct tcp_ep *te = T(ep);
	uint8_t got[ZCR_AUTH_MAC_LEN];

	te->hdr_got = 0;
	if (!ctx->secret_len || !te->got_hello ||
	    ep->state != ZCR_EP_HANDSHAKE || te->h.src != te->hello_src) {
		ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO, "authentication out of "
				     "protocol");
		return false;
	}
	__zcr_auth_mac_unpack(te->h.len, te->h.seq, got);
	if (__zcr_auth_check(ep, te->hello_src, te->nonce, te->peer_nonce,
			     got))
		return false;
	return hello_open(ep);
}

/* The handshake is through: open, then (version 2) the upgrade begins. */
static bool hello_open(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);

	if (__zcr_ep_open_locked(ep, te->hello_src))
		return false;
	if (te->ver < 2) {
		free(te->redial);	/* no old peer to dial again for */
		te->redial = NULL;
		return true;
	}
	/* Held until the upgrade says where the messages go. */
	te->hold = true;
	return te->up_tp->upgrade->begin(ep, &tcp_link, &te->up) == 0;
}

/*
 * Hand the upgrade the control message in te->h (and its body): the
 * negotiation state is the upgrade's during the call (upgrade.h).
 * Returns false once ep is no longer ours or failed.
 */
static bool up_step(struct zcr_ep *ep, const void *body, size_t len)
{
	struct tcp_ep *te = T(ep);
	void *st = te->up;

	te->up = NULL;
	switch (te->up_tp->upgrade->rx(ep, st, &tcp_link, te->h.type,
				       te->h.tag, body, len)) {
	case ZCR_UPGRADE_MORE:
		te->up = st;
		return true;
	case ZCR_UPGRADE_STAY:
		__zcr_tcp_up_end(te);
		__zcr_tcp_push(ep, tcp_tx_budget(ep->ctx));
		return true;
	default:
		return false;	/* moved (te is gone) or failed */
	}
}

/* An upgrade control message's header: its body first, if it has one. */
static bool rx_up(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);

	te->hdr_got = 0;
	if (te->ver < 2 || ep->state != ZCR_EP_OPEN || !te->up ||
	    te->h.type < ZCR_WIRE_UP_OFFER || te->h.type > ZCR_WIRE_UP_SWITCH) {
		ep->ctx->st.bad_headers++;
		__zcr_ep_fail_locked(ep, -EPROTO, "%s negotiation out of "
				     "protocol (type %d)", te->up_tp ?
				     te->up_tp->name : "upgrade", te->h.type);
		return false;
	}
	if (te->h.len) {
		te->have_hdr = true;
		te->ctl_rx = true;
		te->got = 0;
		return true;
	}
	return up_step(ep, NULL, 0);
}

/* The body of a control message is in (te->body, te->h.len bytes). */
bool __zcr_tcp_rx_body(struct zcr_ep *ep)
{
	struct tcp_ep *te = T(ep);

	te->ctl_rx = false;
	te->have_hdr = false;
	return up_step(ep, te->body, (size_t)te->h.len);
}

/* A header other than DATA or a valid ACK: the handshake's, or out. */
bool __zcr_tcp_rx_control(struct zcr_ep *ep)
{
	switch (T(ep)->h.type) {
	case ZCR_WIRE_HELLO:
		return rx_hello(ep);
	case ZCR_WIRE_AUTH:
		return rx_auth(ep);
	default:
		return rx_up(ep);
	}
}
