/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * match.h - MPI-style matching (lib/match/match.c): the posted-receive
 * queue, the unexpected queue and where an early message lands.
 */
#ifndef ZCR_MATCH_H
#define ZCR_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/list.h"

struct zcr_ctx;
struct zcr_ep;
struct zcr_req;
struct zcr_slot;

/* A message whose header arrived before a matching receive was posted. */
struct zcr_msg {
	struct zcr_list link;
	struct zcr_ep *ep;
	int src, tag;
	uint64_t len;
	struct zcr_slot *slot;
	size_t off;			/* payload at slot->base + off */
	bool complete;
	struct zcr_req *req;		/* matched while still arriving */
};

bool __zcr_match(int want_src, int want_tag, int src, int tag);
struct zcr_req *__zcr_match_posted_locked(struct zcr_ctx *ctx, int src,
					  int tag);
/* Can a connection (or the listener, for ANY_SOURCE) still bring src? */
bool __zcr_source_possible(struct zcr_ctx *ctx, int src);
int __zcr_post_recv_locked(struct zcr_ctx *ctx, struct zcr_req *r);
void __zcr_msg_deliver_locked(struct zcr_ctx *ctx, struct zcr_msg *m,
			      struct zcr_req *r);
size_t __zcr_predict_offset_locked(struct zcr_ctx *ctx, int src, int tag,
				   uint64_t len, const void **buf);
void __zcr_begin_message_locked(struct zcr_ep *ep);
void __zcr_retry_stalled_locked(struct zcr_ctx *ctx);

#endif /* ZCR_MATCH_H */
