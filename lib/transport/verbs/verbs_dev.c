// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * verbs_dev.c - the verbs transport's device, opened once per context,
 * and its memory registrations: one registration per range, or a cached
 * one (ZCRECV_VERBS_REGCACHE). Pinned pages are never exchanged: see
 * verbs.c and Documentation/verbs.md, "Pinned pages".
 */

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "transport/verbs/verbs_priv.h"

/* ---- device and registrations ------------------------------------------ */

/* Open the device once per context (first listen or connect). */
int __zcr_verbs_dev_open(struct vctx *vc)
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
struct ibv_mr *__zcr_verbs_reg(struct vctx *vc, const void *p, size_t n,
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

void __zcr_verbs_dereg(struct vctx *vc, struct ibv_mr *mr)
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
struct ibv_mr *__zcr_verbs_cache_get(struct vctx *vc, const void *p,
				     size_t n, struct rc_ent **ce)
{
	uintptr_t a = (uintptr_t)p;
	struct rc_ent *e, *victim = NULL;
	struct ibv_mr *mr;
	unsigned int i;

	*ce = NULL;
	if (!vc->cache_n)
		return __zcr_verbs_reg(vc, p, n, ACC_ALL);
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
	mr = __zcr_verbs_reg(vc, p, n, ACC_ALL);
	if (!mr || !victim)
		return mr;
	if (victim->mr)
		__zcr_verbs_dereg(vc, victim->mr);
	victim->mr = mr;
	victim->a = (uintptr_t)mr->addr;
	victim->len = mr->length;
	victim->refs = 1;
	victim->use = ++vc->cache_tick;
	*ce = victim;
	return mr;
}

void __zcr_verbs_cache_put(struct vctx *vc, struct ibv_mr *mr,
			   struct rc_ent *ce)
{
	if (ce) {
		/* A pin whose persistent send was freed meanwhile. */
		if (!--ce->refs && ce->dead) {
			if (!foreign(vc))
				__zcr_verbs_dereg(vc, ce->mr);
			memset(ce, 0, sizeof(*ce));
		}
	} else if (mr) {
		__zcr_verbs_dereg(vc, mr);
	}
}

/*
 * The registration of a persistent send's buffer [p, p + n): kept in
 * vc->pins from its first send (*ce set, release with cache_put); when
 * all PIN_N are taken, whatever cache_get gives.
 */
struct ibv_mr *__zcr_verbs_pin_get(struct vctx *vc, const void *p, size_t n,
				   struct rc_ent **ce)
{
	uintptr_t a = (uintptr_t)p;
	struct rc_ent *e, *free_e = NULL;
	struct ibv_mr *mr;
	unsigned int i;

	for (i = 0; i < PIN_N; i++) {
		e = &vc->pins[i];
		if (e->mr && !e->dead && e->a <= a && a + n <= e->a + e->len) {
			e->refs++;
			vc->st.cache_hits++;
			*ce = e;
			return e->mr;
		}
		if (!e->mr && !free_e)
			free_e = e;
	}
	if (!free_e)
		return __zcr_verbs_cache_get(vc, p, n, ce);
	*ce = NULL;
	mr = __zcr_verbs_reg(vc, p, n, ACC_ALL);
	if (!mr)
		return NULL;
	free_e->mr = mr;
	free_e->a = (uintptr_t)mr->addr;
	free_e->len = mr->length;
	free_e->refs = 1;
	free_e->dead = false;
	*ce = free_e;
	return mr;
}

/* Pins overlapping a freed persistent send's buffer end (now or last put). */
void __zcr_verbs_send_unbind(struct zcr_ctx *ctx, void *priv, const void *buf,
			     size_t len)
{
	struct vctx *vc = priv;
	uintptr_t a = (uintptr_t)buf;
	unsigned int i;

	(void)ctx;
	for (i = 0; i < PIN_N; i++) {
		struct rc_ent *e = &vc->pins[i];

		if (!e->mr || e->dead || a + len <= e->a || e->a + e->len <= a)
			continue;
		e->dead = true;
		if (!e->refs) {
			if (!foreign(vc))
				__zcr_verbs_dereg(vc, e->mr);
			memset(e, 0, sizeof(*e));
		}
	}
}

