// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_prefetch_verbs.c - test_prefetch.c's tests with the connections on
 * the verbs transport (verbs://, soft-RoCE in the VM: run-vm.sh -R): the
 * receiver READs the sender's registered copy of the pre-send, and the
 * RTS of a send that leaves pre-sent pages out carries their bitmap, so
 * that the receiver READs only the other pages (Documentation/
 * prefetch.md, "Over verbs"). Every message byte for byte as at its
 * send, as over TCP. Skipped where libibverbs lists no device (the host).
 * Run: build/tests/unit/test_prefetch_verbs [name]
 */
#include "zcr_rdma.h"

#define PAIR_SCHEME "verbs://"
/* A request and its answer cross in rxe's kernel thread, emulated. */
#define PF_SETTLE_MS 20
#define PAIR_BEFORE_OPEN() need_device()
#include "test_prefetch.c"
