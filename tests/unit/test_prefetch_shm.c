// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_prefetch_shm.c - test_prefetch.c's tests with both connections on
 * the shm transport (ZCRECV_SHM=1): the pre-send is pulled by the
 * receiver, the send's RTS leaves the pre-sent pages out
 * (Documentation/prefetch.md, "Over shm"). Every message byte for byte
 * as at its send, as over TCP.
 * Run: build/tests/unit/test_prefetch_shm [name]
 */
#define PF_OVER_SHM 1
#include "test_prefetch.c"
