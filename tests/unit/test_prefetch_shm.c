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

/*
 * With the rule of one host (ZCRECV_PREFETCH_SHM_ALL unset): the
 * receiver never asks over shm, whether the buffer changes or stays as
 * it was, and every message arrives whole.
 */
ZT_TEST(local_connection_does_not_ask)
{
	struct zcr_req *r, *s;
	struct pf t;
	int i, k;

	pf_local_rule = 1;
	pf_open(&t, 1);
	pf_local_rule = 0;
	for (i = 0; i < 12; i++) {
		r = post_and_ask(&t, LEN, 1, TAG);
		for (k = NPG / 2; k < NPG; k++)
			write_page(&t, k);
		s = send_now(&t);
		check(&t, r, s, LEN);
	}
	for (i = 0; i < 12; i++)
		round_once(&t, 0, 0);
	ZT_EXPECT_EQ(st(&t, 0).pf_requests, 0);
	ZT_EXPECT_EQ(st(&t, 1).pf_presend_bytes, 0);
	pf_close(&t);
}
