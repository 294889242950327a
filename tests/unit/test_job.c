// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_job.c - zcr_ctx_create_job() through the environment fallback
 * (ZCRECV_RANK, ZCRECV_SIZE, ZCRECV_JOB_DIR) with two forked ranks, and
 * communicator ids: messages of two ids never match each other's
 * receives, iprobe sees without taking; zcr_improbe() claims a message
 * no other receive then takes, zcr_imrecv() receives it; a synchronous
 * send (zcr_issend_comm()) stays pending until the peer receives it, over
 * TCP and over the shm transport (eager and announced messages, the
 * latter pulled into staging before any receive matched it).
 * Without any launcher the call fails with -ENOENT.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zcr_job.h"
#include "zcrecv.h"
#include "zt.h"

ZT_TEST(no_launcher_is_enoent)
{
	struct zcr_ctx *ctx = NULL;

	job_unset_launcher();
	setenv("ZCRECV_QUIET", "1", 1);
	ZT_EXPECT_EQ(zcr_ctx_create_job(NULL, 0, NULL, 0, &ctx), -ENOENT);
	ZT_ASSERT(ctx == NULL);
	unsetenv("ZCRECV_QUIET");
}

static struct zcr_ctx *ctx_of_rank;

/*
 * This rank's job context and its endpoint to the other rank of a pair:
 * 0, or the exit status that says which failed (10 the context, 12 the
 * endpoint).
 */
static int pair_open(int rank, struct zcr_ep **ep)
{
	if (zcr_ctx_create_job(NULL, 0, NULL, 0, &ctx_of_rank))
		return 10;
	return zcr_job_ep(ctx_of_rank, 1 - rank, ep) ? 12 : 0;
}

/*
 * The last word of a two-rank run: rank 1 sends 99 (tag 9), rank 0 waits
 * for it, so neither closes before the other has read everything; then
 * the context goes. 0, or bad when the exchange failed.
 */
static int last_word(struct zcr_ctx *ctx, struct zcr_ep *ep, int rank,
		     int bad)
{
	int c = 99;

	if (rank == 0 ? zcr_recv(ctx, &c, sizeof(c), 1, 9, NULL) || c != 99 :
	    zcr_send(ep, &c, sizeof(c), 9))
		return bad;
	sleep(1);	/* the peer reads before we close */
	zcr_ctx_destroy(ctx);
	return 0;
}

/* One rank of the two; exit status 0 when all it checked held. */
static int rank_main(int rank)
{
	struct zcr_ctx *ctx;
	struct zcr_status st;
	struct zcr_req *req;
	struct zcr_ep *ep;
	int r, size, a = 5, b = 7, c = 0, found = 0;

	if (zcr_ctx_create_job(NULL, 0, NULL, 0, &ctx))
		return 10;
	if (zcr_ctx_job(ctx, &r, &size) || r != rank || size != 2)
		return 11;
	if (zcr_job_ep(ctx, 1 - rank, &ep))
		return 12;
	if (rank == 0) {
		/* Comm 5 first, then comm 0, then wait for the answer. */
		if (zcr_isend_comm(ep, 5, &b, sizeof(b), 1, &req) ||
		    zcr_wait(req, NULL))
			return 14;
		if (zcr_send(ep, &a, sizeof(a), 1))
			return 13;
	} else {
		/* Comm 5's message is queued first; comm 0's wildcards skip it. */
		while (!found)
			found = zcr_iprobe(ctx, 5, ZCRECV_ANY_SOURCE,
					   ZCRECV_ANY_TAG, &st);
		if (found != 1 || st.source != 0 || st.len != sizeof(int))
			return 16;
		if (zcr_recv(ctx, &c, sizeof(c), ZCRECV_ANY_SOURCE,
			     ZCRECV_ANY_TAG, &st) || c != 5)
			return 17;
		if (zcr_iprobe(ctx, 0, ZCRECV_ANY_SOURCE, ZCRECV_ANY_TAG,
			       &st) != 0)
			return 18;
		if (zcr_irecv_comm(ctx, 5, &c, sizeof(c), 0, 1, &req) ||
		    zcr_wait(req, &st) || c != 7)
			return 19;
	}
	return last_word(ctx, ep, rank, rank == 0 ? 15 : 20);
}

/* Claims and synchronous sends; exit status 0 when all held. */
static int claim_main(int rank)
{
	struct zcr_message *m;
	struct zcr_status st;
	struct zcr_req *req, *sreq;
	struct zcr_ep *ep;
	int i, x = 30, y = 40, c = 0, found = 0;

	i = pair_open(rank, &ep);
	if (i)
		return i;
	if (rank == 0) {
		if (zcr_issend_comm(ep, 3, &x, sizeof(x), 1, &sreq))
			return 13;
		/* Rank 1 posts nothing until told: the send must wait. */
		for (i = 0; i < 20; i++) {
			if (zcr_test(sreq, NULL))
				return 14;
			usleep(10000);
		}
		if (zcr_send(ep, &c, sizeof(c), 2) || zcr_wait(sreq, NULL))
			return 15;
		if (zcr_isend_comm(ep, 3, &y, sizeof(y), 4, &req) ||
		    zcr_wait(req, NULL))
			return 16;
		y++;
		if (zcr_isend_comm(ep, 3, &y, sizeof(y), 4, &req) ||
		    zcr_wait(req, NULL))
			return 17;
	} else {
		if (zcr_recv(ctx_of_rank, &c, sizeof(c), 0, 2, NULL))
			return 20;
		if (zcr_irecv_comm(ctx_of_rank, 3, &c, sizeof(c), 0, 1, &req) ||
		    zcr_wait(req, NULL) || c != 30)
			return 21;
		while (!found)
			found = zcr_improbe(ctx_of_rank, 3, ZCRECV_ANY_SOURCE,
					    4, &m, &st);
		if (found != 1 || st.source != 0 || st.len != sizeof(int))
			return 22;
		/* The claimed one (40) is gone: the receive takes 41. */
		if (zcr_irecv_comm(ctx_of_rank, 3, &c, sizeof(c),
				   ZCRECV_ANY_SOURCE, 4, &req) ||
		    zcr_wait(req, NULL) || c != 41)
			return 23;
		if (zcr_imrecv(m, &c, sizeof(c), &req) ||
		    zcr_wait(req, &st) || c != 40 || st.tag != 4)
			return 24;
		if (zcr_improbe(ctx_of_rank, 3, ZCRECV_ANY_SOURCE,
				ZCRECV_ANY_TAG, &m, &st) != 0)
			return 25;
	}
	return last_word(ctx_of_rank, ep, rank, rank == 0 ? 18 : 26);
}

#define SYNC_BIG	(1u << 20)

/*
 * Over shm: synchronous sends of 4 bytes (eager, in the cell) and 1 MiB
 * (announced, pulled into staging while rank 1 waits for "go", as its
 * probe shows) complete only once rank 1's receive matched them, and
 * announced ones to a receive posted first complete too; exit status 0
 * when all held.
 */
static int sync_shm_main(int rank)
{
	static const size_t lens[] = { 4, SYNC_BIG };
	unsigned char *buf = malloc(SYNC_BIG);
	struct zcr_status st;
	struct zcr_req *sreq;
	struct zcr_ep *ep;
	const char *via;
	unsigned int k;
	int i, go = 1;

	if (!buf)
		return 10;
	i = pair_open(rank, &ep);
	if (i)
		return i;
	via = job_carrier(ctx_of_rank, ep);
	if (!via || strcmp(via, "shm")) {
		if (!via)
			zcr_ep_error(ep, &via);
		fprintf(stderr, "rank %d: carried by %s\n", rank,
			via ? via : "(unknown)");
		return 13;
	}
	for (k = 0; k < 2; k++) {
		size_t n = lens[k];

		if (rank == 0) {
			memset(buf, 0x5a + (int)k, n);
			if (zcr_issend_comm(ep, 0, buf, n, 1, &sreq))
				return 14;
			/* Rank 1 receives nothing until told: we wait. */
			for (i = 0; i < 20; i++) {
				if (zcr_test(sreq, NULL))
					return 15 + (int)k;
				usleep(10000);
			}
			if (zcr_send(ep, &go, sizeof(go), 2) ||
			    zcr_wait(sreq, NULL))
				return 17;
			continue;
		}
		if (zcr_recv(ctx_of_rank, &go, sizeof(go), 0, 2, NULL))
			return 20;
		/* The data came first: here, unmatched, before "go". */
		if (zcr_iprobe(ctx_of_rank, 0, 0, 1, &st) != 1 ||
		    st.len != n)
			return 21;
		memset(buf, 0, n);
		if (zcr_recv(ctx_of_rank, buf, n, 0, 1, NULL))
			return 22;
		for (i = 0; i < (int)n; i++)
			if (buf[i] != 0x5a + k)
				return 23;
	}
	/*
	 * Announced synchronous sends to a receive posted first, 20 times:
	 * the receiver pulls, and acknowledges in the same breath, before
	 * the sender has looked at its ring's head (it must not take the
	 * acknowledgement for one it never awaited).
	 */
	for (i = 0; i < 20; i++) {
		struct zcr_req *rr;

		if (rank == 1) {
			if (zcr_irecv_comm(ctx_of_rank, 0, buf, SYNC_BIG, 0, 5,
					   &rr) ||
			    zcr_send(ep, &go, sizeof(go), 6) ||
			    zcr_wait(rr, NULL))
				return 25;
			continue;
		}
		if (zcr_recv(ctx_of_rank, &go, sizeof(go), 1, 6, NULL) ||
		    zcr_issend_comm(ep, 0, buf, SYNC_BIG, 5, &sreq) ||
		    zcr_wait(sreq, NULL))
			return 19;
	}
	free(buf);
	return last_word(ctx_of_rank, ep, rank, rank == 0 ? 18 : 24);
}

#define PP_LEN		(512u << 10)	/* announced, never eager */
#define PP_ROUNDS	40

/*
 * A blocking ping-pong of PP_ROUNDS announced messages over shm between
 * two processes, each message verified: a job holds one connection for
 * each direction, so each answer comes on another endpoint than the send
 * it answers, and the two copy each message together when both run at
 * once (staged answers and shared copies are printed, not asserted: both
 * depend on the two processes running at the same time;
 * test_shm_tp.c checks each mechanism step by step). Exit status 0 when
 * every byte arrived.
 */
static int pingpong_main(int rank)
{
	unsigned char *sb = malloc(PP_LEN), *rb = malloc(PP_LEN);
	struct zcr_stats st;
	struct zcr_ep *ep;
	const char *via;
	size_t i;
	int k;

	if (!sb || !rb)
		return 10;
	k = pair_open(rank, &ep);
	if (k)
		return k;
	via = job_carrier(ctx_of_rank, ep);
	if (!via || strcmp(via, "shm"))
		return 13;
	for (k = 0; k < PP_ROUNDS; k++) {
		unsigned char in = (unsigned char)(2 * k + 1 - rank);
		unsigned char out = (unsigned char)(2 * k + rank);

		memset(sb, out, PP_LEN);
		if (rank == 0 && zcr_send(ep, sb, PP_LEN, 4))
			return 14;
		if (zcr_recv(ctx_of_rank, rb, PP_LEN, 1 - rank, 4, NULL))
			return 15;
		for (i = 0; i < PP_LEN; i++)
			if (rb[i] != in)
				return 16;
		if (rank == 1 && zcr_send(ep, sb, PP_LEN, 4))
			return 17;
	}
	if (zcr_ctx_stats_sized(ctx_of_rank, &st, sizeof(st)))
		return 18;
	fprintf(stderr, "# rank %d: %llu of %d staged, %llu copies shared, "
		"%llu KiB pushed\n", rank, (unsigned long long)st.early,
		PP_ROUNDS, (unsigned long long)st.shared_pulls,
		(unsigned long long)st.bytes_pushed >> 10);
	free(sb);
	free(rb);
	return last_word(ctx_of_rank, ep, rank, rank == 0 ? 21 : 22);
}

/*
 * Both ranks dial at once; once rank 0's message came in on the
 * connection rank 0 dialled, rank 1, whose own carried nothing yet, sends
 * on that one (both directions on one connection: zcr_job_ep() in
 * lib/core/job.c), also through the endpoint it was handed before, in
 * order. Rank 0, the lower, keeps its own. Exit status 0 when all held.
 */
static int both_ways_main(int rank)
{
	struct zcr_ep *ep, *ep2, *ep3;
	int i, x = 1;

	i = pair_open(rank, &ep);
	if (i)
		return i;
	if (rank == 0) {
		if (zcr_send(ep, &x, sizeof(x), 1))
			return 13;
		for (i = 2; i <= 3; i++)
			if (zcr_recv(ctx_of_rank, &x, sizeof(x), 1, 1, NULL) ||
			    x != i)
				return 14;
		if (zcr_job_ep(ctx_of_rank, 1, &ep2) || ep2 != ep)
			return 15;
		return last_word(ctx_of_rank, ep, rank, 16);
	}
	if (zcr_recv(ctx_of_rank, &x, sizeof(x), 0, 1, NULL) || x != 1)
		return 17;
	if (zcr_job_ep(ctx_of_rank, 0, &ep2) || ep2 == ep)
		return 18;
	x = 2;
	if (zcr_send(ep2, &x, sizeof(x), 1))
		return 19;
	x = 3;
	if (zcr_send(ep, &x, sizeof(x), 1))	/* the one handed out first */
		return 20;
	if (zcr_job_ep(ctx_of_rank, 0, &ep3) || ep3 != ep2)
		return 21;
	return last_word(ctx_of_rank, ep2, rank, 22);
}

/* Run fn as ranks 0 and 1 of a job wired up through a job directory. */
static void two_ranks(int (*fn)(int rank))
{
	char dir[] = "/tmp/zcr-job-XXXXXX", cmd[64];
	int rank, status[2];
	pid_t pid[2];

	ZT_ASSERT(mkdtemp(dir));
	for (rank = 0; rank < 2; rank++) {
		pid[rank] = fork();
		ZT_ASSERT(pid[rank] >= 0);
		if (pid[rank] == 0) {
			job_rank_env(rank, 2, dir, "20000");
			_exit(fn(rank));
		}
	}
	for (rank = 0; rank < 2; rank++)
		ZT_ASSERT(waitpid(pid[rank], &status[rank], 0) == pid[rank]);
	for (rank = 0; rank < 2; rank++)
		ZT_ASSERT_MSG(WIFEXITED(status[rank]) &&
			      !WEXITSTATUS(status[rank]),
			      "rank %d: status %#x (the other: %#x)", rank,
			      status[rank], status[1 - rank]);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ZT_ASSERT(system(cmd) == 0);
}

ZT_TEST(two_ranks_through_a_job_dir)
{
	two_ranks(rank_main);
}

ZT_TEST(one_connection_both_ways)
{
	two_ranks(both_ways_main);
}

ZT_TEST(claimed_messages_and_synchronous_sends)
{
	two_ranks(claim_main);
}

ZT_TEST(pingpong_over_shm)
{
	setenv("ZCRECV_SHM", "1", 1);
	two_ranks(pingpong_main);
	unsetenv("ZCRECV_SHM");
}

ZT_TEST(synchronous_sends_over_shm)
{
	setenv("ZCRECV_SHM", "1", 1);
	two_ranks(sync_shm_main);
	unsetenv("ZCRECV_SHM");
}

/*
 * At rank 1: shut down the connection rank 0 dialled, the one whose local
 * port is our listener's; returns how many sockets were shut.
 */
static int shut_accepted(void)
{
	struct sockaddr_in a;
	struct dirent *e;
	socklen_t l;
	int fds[256], nf = 0, lport = -1, n = 0, i;
	DIR *d = opendir("/proc/self/fd");

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name), acc = 0;

		l = sizeof(acc);
		if (e->d_name[0] == '.' || fd == dirfd(d) ||
		    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &l))
			continue;
		l = sizeof(a);
		if (acc && !getsockname(fd, (struct sockaddr *)&a, &l))
			lport = ntohs(a.sin_port);
		else if (!acc && nf < 256)
			fds[nf++] = fd;
	}
	closedir(d);
	for (i = 0; i < nf; i++) {
		l = sizeof(a);
		if (!getsockname(fds[i], (struct sockaddr *)&a, &l) &&
		    a.sin_family == AF_INET && ntohs(a.sin_port) == lport) {
			shutdown(fds[i], SHUT_RDWR);
			n++;
		}
	}
	return n;
}

/*
 * Both directions ride on rank 0's connection, rank 1's own stays open
 * and idle; when the shared one breaks, a receive from the other rank
 * must fail on both sides instead of waiting for messages nothing can
 * carry any more.
 */
static int shared_fail_main(int rank)
{
	struct zcr_ep *ep, *ep2;
	struct zcr_req *req;
	int x = 1, ret;

	ret = pair_open(rank, &ep);
	if (ret)
		return ret;
	if (rank == 0) {
		if (zcr_send(ep, &x, sizeof(x), 1))
			return 13;
		if (zcr_recv(ctx_of_rank, &x, sizeof(x), 1, 1, NULL) || x != 2)
			return 14;
		if (zcr_irecv(ctx_of_rank, &x, sizeof(x), 1, 3, &req))
			return 15;
		ret = zcr_wait_timeout(req, NULL, 5000);
		sleep(1);
		return ret < 0 && ret != -ETIMEDOUT ? 0 : 16;
	}
	if (zcr_recv(ctx_of_rank, &x, sizeof(x), 0, 1, NULL) || x != 1)
		return 17;
	if (zcr_job_ep(ctx_of_rank, 0, &ep2) || ep2 == ep)
		return 18;
	x = 2;
	if (zcr_send(ep2, &x, sizeof(x), 1))
		return 19;
	usleep(200000);
	if (shut_accepted() != 1)
		return 20;
	if (zcr_irecv(ctx_of_rank, &x, sizeof(x), 0, 3, &req))
		return 21;
	ret = zcr_wait_timeout(req, NULL, 5000);
	sleep(1);
	return ret < 0 && ret != -ETIMEDOUT ? 0 : 22;
}

ZT_TEST(a_broken_shared_connection_fails_both_ways)
{
	two_ranks(shared_fail_main);
}
