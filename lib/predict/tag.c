// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tag.c - Tagging, Tag-cycle and Tag-bettercycle.
 *
 * The tag is the call site. Each site remembers what followed the calls
 * made there: Tagging the last successor, Tag-cycle a cycle of successors
 * (the Single-cycle engine per site), Tag-bettercycle the same cycle but a
 * miss on a call that is elsewhere in the cycle realigns the cycle instead
 * of restarting it. +k predictions walk site by site; a site visited again
 * within the walk advances its own cycle one more step.
 */
#include <stdlib.h>
#include <string.h>

#include "impl.h"

enum tag_kind { TAG_LAST, TAG_CYCLE, TAG_BETTER };

struct tag_site {
	uint64_t site;
	uint32_t succ;		/* TAG_LAST: last successor */
	uint32_t walk_gen;	/* predict walk that last visited the site */
	uint32_t walk_times;	/* visits in that walk */
	struct zcr_cyc cyc;	/* TAG_CYCLE, TAG_BETTER */
};

struct tag_priv {
	enum tag_kind kind;
	struct tag_site *sites;
	uint32_t nsites, cap;
	uint32_t *slots;	/* site hash: index + 1 */
	uint32_t mask;
	uint32_t prev;		/* site index of the last call, ZCR_NOID */
	/*
	 * Site index of each call id's last sighting: a +k walk follows it
	 * with one load per step instead of a hash lookup.
	 */
	uint32_t *call_site;
	uint32_t ncall_site;
	uint32_t walk_gen;	/* bumped by every predict */
};

static uint32_t site_slot(const struct tag_priv *t, uint64_t site)
{
	uint64_t h = site * 0x9e3779b97f4a7c15ULL;

	return (uint32_t)(h >> 32) & t->mask;
}

static uint32_t site_find(const struct tag_priv *t, uint64_t site)
{
	uint32_t j = site_slot(t, site);

	while (t->slots[j]) {
		if (t->sites[t->slots[j] - 1].site == site)
			return t->slots[j] - 1;
		j = (j + 1) & t->mask;
	}
	return ZCR_NOID;
}

static uint32_t site_add(struct tag_priv *t, uint64_t site)
{
	uint32_t i, j, idx = site_find(t, site);

	if (idx != ZCR_NOID)
		return idx;
	if ((t->nsites + 1) * 2 > t->mask + 1) {
		uint32_t n = (t->mask + 1) * 2;
		uint32_t *s = calloc(n, sizeof(*s));

		if (!s)
			return ZCR_NOID;
		free(t->slots);
		t->slots = s;
		t->mask = n - 1;
		for (i = 0; i < t->nsites; i++) {
			j = site_slot(t, t->sites[i].site);
			while (s[j])
				j = (j + 1) & t->mask;
			s[j] = i + 1;
		}
	}
	if (__zcr_grow((void **)&t->sites, &t->cap, t->nsites + 1,
		       sizeof(*t->sites)))
		return ZCR_NOID;
	idx = t->nsites++;
	t->sites[idx].site = site;
	t->sites[idx].succ = ZCR_NOID;
	t->sites[idx].cyc.resync = t->kind == TAG_BETTER;
	j = site_slot(t, site);
	while (t->slots[j])
		j = (j + 1) & t->mask;
	t->slots[j] = idx + 1;
	return idx;
}

static int tag_init_kind(struct zcr_predictor *p, enum tag_kind kind)
{
	struct tag_priv *t = p->priv;

	t->kind = kind;
	t->prev = ZCR_NOID;
	t->mask = 15;
	t->slots = calloc(t->mask + 1, sizeof(*t->slots));
	return t->slots ? 0 : -1;
}

static int tag_init(struct zcr_predictor *p, unsigned int w)
{
	(void)w;
	return tag_init_kind(p, TAG_LAST);
}

static int tagcycle_init(struct zcr_predictor *p, unsigned int w)
{
	(void)w;
	return tag_init_kind(p, TAG_CYCLE);
}

static int tagbetter_init(struct zcr_predictor *p, unsigned int w)
{
	(void)w;
	return tag_init_kind(p, TAG_BETTER);
}

static void tag_fini(struct zcr_predictor *p)
{
	struct tag_priv *t = p->priv;
	uint32_t i;

	for (i = 0; i < t->nsites; i++)
		__zcr_cyc_free(&t->sites[i].cyc);
	free(t->sites);
	free(t->slots);
	free(t->call_site);
}

static void tag_observe(struct zcr_predictor *p, uint32_t id,
			const struct zcr_call *c)
{
	struct tag_priv *t = p->priv;

	if (t->prev != ZCR_NOID) {
		struct tag_site *s = &t->sites[t->prev];

		if (t->kind == TAG_LAST)
			s->succ = id;
		else
			__zcr_cyc_observe(&s->cyc, id);
	}
	t->prev = site_add(t, c->site);
	if (id >= t->ncall_site) {
		uint32_t old = t->ncall_site;

		if (__zcr_grow((void **)&t->call_site, &t->ncall_site, id + 1,
			       sizeof(*t->call_site)))
			return;
		while (old < t->ncall_site)
			t->call_site[old++] = ZCR_NOID;
	}
	t->call_site[id] = t->prev;
}

static bool tag_predict(struct zcr_predictor *p, unsigned int k,
			uint32_t *out)
{
	struct tag_priv *t = p->priv;
	uint32_t cur = t->prev, id = ZCR_NOID, step;

	t->walk_gen++;
	for (step = 0; step < k; step++) {
		struct tag_site *s;

		if (cur == ZCR_NOID)
			return false;
		s = &t->sites[cur];
		if (t->kind == TAG_LAST) {
			id = s->succ;
			if (id == ZCR_NOID)
				return false;
		} else {
			/* the n-th visit of a site in this walk: n steps on */
			if (s->walk_gen != t->walk_gen) {
				s->walk_gen = t->walk_gen;
				s->walk_times = 0;
			}
			if (!__zcr_cyc_predict(&s->cyc, ++s->walk_times, &id))
				return false;
		}
		if (step + 1 < k)
			cur = id < t->ncall_site ? t->call_site[id] : ZCR_NOID;
	}
	*out = id;
	return true;
}

static size_t tag_memory(const struct zcr_predictor *p)
{
	const struct tag_priv *t = p->priv;
	size_t m = (size_t)t->cap * sizeof(*t->sites) +
		   (size_t)(t->mask + 1) * sizeof(*t->slots) +
		   (size_t)t->ncall_site * sizeof(*t->call_site);
	uint32_t i;

	for (i = 0; i < t->nsites; i++)
		m += (size_t)t->sites[i].cyc.cap * sizeof(uint32_t);
	return m;
}

ZCR_PREDICTOR(tag) = {
	.size = sizeof(struct zcr_pred_ops),
	.name = "tag",
	.priv_size = sizeof(struct tag_priv),
	.init = tag_init,
	.fini = tag_fini,
	.observe = tag_observe,
	.predict = tag_predict,
	.memory = tag_memory,
};

ZCR_PREDICTOR(tagcycle) = {
	.size = sizeof(struct zcr_pred_ops),
	.name = "tagcycle",
	.priv_size = sizeof(struct tag_priv),
	.init = tagcycle_init,
	.fini = tag_fini,
	.observe = tag_observe,
	.predict = tag_predict,
	.memory = tag_memory,
};

ZCR_PREDICTOR(tagbettercycle) = {
	.size = sizeof(struct zcr_pred_ops),
	.name = "tagbettercycle",
	.priv_size = sizeof(struct tag_priv),
	.init = tagbetter_init,
	.fini = tag_fini,
	.observe = tag_observe,
	.predict = tag_predict,
	.memory = tag_memory,
};
