// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_progress.c - the progress engine's waiting: zcr_progress() must
 * wake for every connection however many there are (more than the 1024
 * pollfds it once had room for).
 * Run: build/tests/unit/test_progress [name].
 */
#include <pthread.h>
#include <sys/resource.h>

#include "zcr_pair.h"

#define MANY 1100

struct late {
	int fd;
	int rank;
	char payload[100];
};

/* Send one message on a raw connection once the receiver sleeps in poll. */
static void *late_sender(void *arg)
{
	struct late *l = arg;
	unsigned char h[32];

	usleep(200000);
	raw_hdr(h, RAW_MAGIC, 1, 2, 32, l->rank, 3, sizeof(l->payload), 1);
	if (write(l->fd, h, 32) != 32 ||
	    write(l->fd, l->payload, sizeof(l->payload)) !=
	    sizeof(l->payload))
		return (void *)1;
	return NULL;
}

/*
 * MANY raw peers (more than the old fixed poll set of 1024 could hold);
 * the one that connected last sends while rank 0 waits in
 * zcr_progress(ctx, -1): the wait must end and the receive complete.
 */
ZT_TEST(wakes_for_connection_beyond_1024)
{
	static int fds[MANY];
	rlim_t need = 2 * MANY + 100;
	struct zcr_status st;
	struct rlimit rl;
	struct zcr_req *r;
	struct zcr_ep *ep;
	struct late l;
	struct pair p;
	pthread_t th;
	char buf[100];
	int i, accepted = 0, ret;
	double t0;
	void *res;

	ZT_ASSERT(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
			ZT_SKIP("RLIMIT_NOFILE hard limit %llu < %llu fds",
				(unsigned long long)rl.rlim_max,
				(unsigned long long)need);
		rl.rlim_cur = need;
		ZT_ASSERT(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	}
	pair_open(&p, 1, NULL);
	for (i = 0; i < MANY; i++) {
		fds[i] = raw_connect(&p);
		raw_hello(fds[i], i + 1);
		/* Accept in batches: the listen backlog is 128. */
		if (i % 64 == 63 || i == MANY - 1) {
			t0 = pair_now();
			while (accepted <= i) {
				if (zcr_ep_accept(p.c[0], 0, &ep) == 0)
					accepted++;
				else
					ZT_ASSERT(zcr_progress(p.c[0], 0) >= 0);
				ZT_ASSERT_MSG(pair_now() - t0 < 2,
					      "only %d of %d accepted",
					      accepted, i + 1);
			}
		}
	}
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], buf, sizeof(buf), MANY, 3, &r), 0);
	l.fd = fds[MANY - 1];
	l.rank = MANY;
	pattern_fill(l.payload, sizeof(l.payload), 11);
	ZT_EXPECT_EQ(pthread_create(&th, NULL, late_sender, &l), 0);
	alarm(3);
	t0 = pair_now();
	while ((ret = zcr_test(r, &st)) == 0)
		ZT_ASSERT(zcr_progress(p.c[0], -1) >= 0);
	alarm(0);
	printf("# received %.0f ms after the wait began\n",
	       (pair_now() - t0) * 1e3);
	ZT_EXPECT_EQ(ret, 1);
	ZT_EXPECT_EQ(st.source, MANY);
	ZT_EXPECT_EQ(pattern_bad(buf, sizeof(buf), 11), 0);
	pthread_join(th, &res);
	ZT_ASSERT(res == NULL);
	ZT_ASSERT(pair_now() - t0 < 1.5);
	for (i = 0; i < MANY; i++)
		close(fds[i]);
	pair_close(&p);
}
