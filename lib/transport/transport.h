/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * transport.h - the transports (lib/transport/tcp/tcp.c): listening,
 * connecting, the receive state machine and the send queue.
 */
#ifndef ZCR_TRANSPORT_H
#define ZCR_TRANSPORT_H

#include <stdbool.h>

struct zcr_ctx;
struct zcr_ep;

void __zcr_tcp_ring_init(struct zcr_ctx *ctx);
void __zcr_tcp_ring_fini(struct zcr_ctx *ctx);
int __zcr_tcp_listen(const char *hostport, int *port);
int __zcr_tcp_connect(const char *hostport);
int __zcr_tcp_work_locked(struct zcr_ctx *ctx);
/* poll(2) reported an error or hang-up on fd, polled for no event. */
void __zcr_tcp_paused_error_locked(struct zcr_ctx *ctx, int fd);
void __zcr_ep_fail_locked(struct zcr_ep *ep, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void __zcr_ep_send_locked(struct zcr_ep *ep);
struct zcr_ep *__zcr_ep_new_locked(struct zcr_ctx *ctx, int fd, bool accepted);
void __zcr_ep_free(struct zcr_ep *ep);

#endif /* ZCR_TRANSPORT_H */
