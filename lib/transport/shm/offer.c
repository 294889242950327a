// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * offer.c - the shm offer carried by the TCP handshake (wire version 2):
 * its 128-byte body, and the three steps each side takes (offer, grant,
 * attach). Format, little endian:
 *   0 magic "SHMO"   4 flags (bit 0: willing; bit 1: takes an eager
 *   message over several cells; bit 2: takes a part of the copy of its
 *   announced messages (shm.h); zcrecv 0.2.0 did neither; bit 3: takes
 *   prefetch cells, ZCR_SHM_PF_*)   8 pid
 *  12 memfd number   16 eventfd number   20 boot id (40 bytes)
 *  60 host name (68 bytes)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "transport/shm/shm.h"

#define OFFER_MAGIC	0x4f4d4853U	/* "SHMO" */
#define RING_CELLS	64
#define RING_CELL	(16384 + 64)

static void put32(uint8_t *p, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/*
 * ZCRECV_SHM, read at each handshake. zcr_ctx_create() refused a bad
 * value; one set later counts as unset (off), silently: no context is at
 * hand to say whether it may print.
 */
bool __zcr_shm_wanted(void)
{
	struct zcr_env_val v;

	__zcr_env_get(ZCR_ENV_SHM, true, &v);
	return v.u;
}

int __zcr_shm_offer(struct zcr_shm_nego *n, uint8_t out[ZCR_SHM_OFFER_LEN])
{
	struct zcr_shm_hostid id;
	int ret = 0;

	memset(n, 0, sizeof(*n));
	n->a.in.memfd = n->a.in.evfd = -1;
	n->a.out.memfd = n->a.out.evfd = -1;
	n->a.pidfd = n->a.ctl_fd = -1;
	memset(out, 0, ZCR_SHM_OFFER_LEN);
	put32(out, OFFER_MAGIC);
	if (!__zcr_shm_wanted()) {
		snprintf(n->why, sizeof(n->why), "shm not enabled here");
		return 0;
	}
	ret = __zcr_shm_hostid(&id);
	if (!ret)
		ret = __zcr_shm_ring_create(&n->a.in, RING_CELLS, RING_CELL);
	if (ret) {
		snprintf(n->why, sizeof(n->why), "cannot set up shm: %s",
			 strerror(-ret));
		return 0;	/* we decline; TCP goes on */
	}
	n->offered = true;
	put32(out + 4, 1 | 2 | 4 | 8);
	put32(out + 8, (uint32_t)getpid());
	put32(out + 12, (uint32_t)n->a.in.memfd);
	put32(out + 16, (uint32_t)n->a.in.evfd);
	memcpy(out + 20, id.boot_id, 39);
	memcpy(out + 60, id.host, 67);
	return 0;
}

int __zcr_shm_offer_take(struct zcr_shm_nego *n,
			 const uint8_t in[ZCR_SHM_OFFER_LEN])
{
	struct zcr_shm_hostid me, peer;
	int ret;

	if (get32(in) != OFFER_MAGIC) {
		snprintf(n->why, sizeof(n->why), "malformed shm offer");
		return -EBADMSG;
	}
	if (!n->offered)
		return -EOPNOTSUPP;	/* why says so already */
	if (!(get32(in + 4) & 1)) {
		snprintf(n->why, sizeof(n->why), "peer declined shm");
		return -EOPNOTSUPP;
	}
	memset(&peer, 0, sizeof(peer));
	memcpy(peer.boot_id, in + 20, 39);
	memcpy(peer.host, in + 60, 67);
	if (__zcr_shm_hostid(&me) || !__zcr_shm_same_host(&me, &peer)) {
		snprintf(n->why, sizeof(n->why), "peer on another host");
		return -EHOSTUNREACH;
	}
	n->a.frag = get32(in + 4) & 2;
	n->a.help = get32(in + 4) & 4;
	n->a.pf = get32(in + 4) & 8;
	n->peer = (pid_t)get32(in + 8);
	n->peer_memfd = (int)get32(in + 12);
	n->peer_evfd = (int)get32(in + 16);
	if (n->peer <= 0) {
		snprintf(n->why, sizeof(n->why), "bad pid in shm offer");
		return -EBADMSG;
	}
	/* Two contexts of one process need no ptrace exception. */
	ret = n->peer == getpid() ? 0 :
	      __zcr_shm_allow_peer(n->peer, n->why, sizeof(n->why));
	if (ret)
		return ret;
	return 0;
}

int __zcr_shm_attach_peer(struct zcr_shm_nego *n)
{
	int ret;

	n->a.pidfd = __zcr_shm_pidfd(n->peer);
	if (n->a.pidfd < 0) {
		ret = n->a.pidfd;
		n->a.pidfd = -1;
		snprintf(n->why, sizeof(n->why), "pidfd_open: %s",
			 strerror(-ret));
		return ret;
	}
	n->a.peer = n->peer;
	ret = __zcr_shm_ring_attach(&n->a.out, n->a.pidfd, n->peer_memfd,
				    n->peer_evfd);
	if (ret)
		snprintf(n->why, sizeof(n->why), "pidfd_getfd of the peer's "
			 "ring: %s%s", strerror(-ret),
			 ret == -EPERM ? " (ptrace policy: Yama "
			 "ptrace_scope or no CAP_SYS_PTRACE)" : "");
	return ret;
}

void __zcr_shm_nego_release(struct zcr_shm_nego *n)
{
	__zcr_shm_ring_destroy(&n->a.in);
	__zcr_shm_ring_destroy(&n->a.out);
	if (n->a.pidfd >= 0)
		close(n->a.pidfd);
	if (n->a.ctl_fd >= 0)
		close(n->a.ctl_fd);
	n->a.pidfd = n->a.ctl_fd = -1;
	n->offered = false;
}
