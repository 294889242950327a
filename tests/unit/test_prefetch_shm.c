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
 * With the rule of one host (ZCRECV_PREFETCH_SHM_ALL unset): a stream of
 * which half stays out of each send (the pre-send copied in after the
 * send costs what the pull would have) is asked for less and less; one
 * whose buffer then stays out whole is asked for again, past its
 * longest skip, and saves every byte.
 */
ZT_TEST(local_rule_backs_off)
{
	uint64_t asked, saved;
	struct zcr_req *r, *s;
	struct pf t;
	int i, k;

	pf_local_rule = 1;
	pf_open(&t, 1);
	pf_local_rule = 0;
	asked = st(&t, 0).pf_requests;
	for (i = 0; i < 24; i++) {
		r = post_and_ask(&t, LEN, 1, TAG);
		for (k = NPG / 2; k < NPG; k++)
			write_page(&t, k);
		s = send_now(&t);
		check(&t, r, s, LEN);
	}
	asked = st(&t, 0).pf_requests - asked;
	/* past the longest skip (16), then 8 rounds each left out whole */
	for (i = 0; i < 24; i++)
		round_once(&t, 0, 0);
	saved = st(&t, 1).pf_saved_bytes;
	for (i = 0; i < 8; i++)
		round_once(&t, 0, 0);
	saved = st(&t, 1).pf_saved_bytes - saved;
	printf("# half rewritten: %llu requests in 24 rounds; then "
	       "unchanged: %llu of %llu bytes left out\n",
	       (unsigned long long)asked, (unsigned long long)saved,
	       8 * (unsigned long long)LEN);
	ZT_ASSERT(asked <= 8);
	ZT_EXPECT_EQ(saved, 8 * (uint64_t)LEN);
	pf_close(&t);
}
