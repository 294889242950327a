/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * list.h - intrusive doubly linked lists and the monotonic clock: the two
 * helpers every layer of libzcrecv uses. Includes nothing of the library.
 */
#ifndef ZCR_LIST_H
#define ZCR_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns: deadlines of handshakes and back-offs. */
static inline uint64_t zcr_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/*
 * The same clock as of the last timer tick (a few ms behind at most): a
 * third of zcr_now_ns()'s cost, for rate limits read at every pass.
 */
static inline uint64_t zcr_coarse_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

struct zcr_list {
	struct zcr_list *next, *prev;
};

static inline void zcr_list_init(struct zcr_list *l)
{
	l->next = l->prev = l;
}

static inline bool zcr_list_empty(const struct zcr_list *l)
{
	return l->next == l;
}

static inline void zcr_list_add_tail(struct zcr_list *n, struct zcr_list *h)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void zcr_list_del(struct zcr_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

#define zcr_container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))
#define zcr_list_for_each_safe(pos, tmp, head) \
	for (pos = (head)->next, tmp = pos->next; pos != (head); \
	     pos = tmp, tmp = pos->next)

#endif /* ZCR_LIST_H */
