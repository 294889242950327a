// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_shm_yama.c - ranks of a job on one host, siblings as under mpirun,
 * with the Yama LSM at ptrace_scope 1: a process there may be read only by
 * its ancestors and by the one process it last named with
 * prctl(PR_SET_PTRACER), while the shm transport's pulls read the sender's
 * memory. Three and four ranks send each other announced (pulled) messages
 * in every direction, round after round: every message must arrive whole
 * and no connection may fail, whichever connections end up on shm and
 * whichever stay on TCP (printed).
 *
 * Needs Yama and root, to set ptrace_scope (restored afterwards): it runs
 * in the VMs (tests/vm.list) and is skipped where either is missing. The
 * ranks give up root first (CAP_SYS_PTRACE passes Yama by): they run as
 * user and group 65534, dumpable again as any process started so.
 *
 * Run: build/tests/unit/test_shm_yama [name]
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zcr_job.h"
#include "zcrecv.h"
#include "zt.h"

#define YAMA		"/proc/sys/kernel/yama/ptrace_scope"
#define MAX_RANKS	4
#define MSG_LEN		(1u << 20)	/* announced: pulled from the sender */
#define ROUNDS		8
#define NOBODY		65534

static int read_scope(void)
{
	char b[8] = { 0 };
	int fd = open(YAMA, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	return n > 0 ? atoi(b) : -1;
}

static int write_scope(int v)
{
	char b[4];
	int fd = open(YAMA, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return -errno;
	snprintf(b, sizeof(b), "%d\n", v);
	ok = write(fd, b, strlen(b)) == (ssize_t)strlen(b);
	close(fd);
	return ok ? 0 : -EACCES;
}

static unsigned char byte_of(int from, int to, int round, size_t i)
{
	return (unsigned char)(from * 61 + to * 17 + round * 5 + i % 251);
}

/*
 * One rank of n: ROUNDS rounds in which it sends MSG_LEN bytes to every
 * other rank and receives as much from each, all at once; then a last
 * small all-to-all, so that no rank closes while another still reads.
 * Exit status 0 when every byte arrived and no connection failed.
 */
static int rank_main(int rank, int n)
{
	unsigned char *sb[MAX_RANKS], *rb[MAX_RANKS];
	struct zcr_req *rq[2 * MAX_RANKS];
	struct zcr_ep *ep[MAX_RANKS] = { NULL };
	struct zcr_status st;
	struct zcr_ctx *ctx;
	const char *why, *mode = getenv("ZCRECV_SHM_PTRACER");
	bool one_reader = mode && !strcmp(mode, "peer");
	int j, k, q, bad = 0;
	size_t i;

	if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY) ||
	    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
		return 9;
	if (zcr_ctx_create_job(NULL, 0, NULL, 0, &ctx))
		return 10;
	for (j = 0; j < n; j++) {
		sb[j] = malloc(MSG_LEN);
		rb[j] = malloc(MSG_LEN);
		if (!sb[j] || !rb[j])
			return 11;
		if (j != rank && zcr_job_ep(ctx, j, &ep[j]))
			return 12;
	}
	for (k = 0; k < ROUNDS && !bad; k++) {
		q = 0;
		for (j = 0; j < n; j++) {
			if (j == rank)
				continue;
			memset(rb[j], 0, MSG_LEN);
			if (zcr_irecv(ctx, rb[j], MSG_LEN, j, 1, &rq[q++]))
				return 13;
		}
		for (j = 0; j < n; j++) {
			if (j == rank)
				continue;
			for (i = 0; i < MSG_LEN; i++)
				sb[j][i] = byte_of(rank, j, k, i);
			if (zcr_isend(ep[j], sb[j], MSG_LEN, 1, &rq[q++]))
				return 14;
		}
		while (q-- > 0) {
			if (zcr_wait(rq[q], &st) || st.error) {
				fprintf(stderr, "# rank %d round %d: a %s "
					"failed: %s\n", rank, k,
					q < n - 1 ? "receive" : "send",
					strerror(-st.error));
				bad = 15;
			}
		}
		for (j = 0; j < n && !bad; j++) {
			if (j == rank)
				continue;
			for (i = 0; i < MSG_LEN; i++)
				if (rb[j][i] != byte_of(j, rank, k, i))
					break;
			if (i < MSG_LEN) {
				fprintf(stderr, "# rank %d round %d: byte %zu "
					"from rank %d wrong\n", rank, k, i, j);
				bad = 16;
			}
		}
	}
	for (j = 0; j < n; j++) {
		const char *via;

		if (j == rank)
			continue;
		via = job_carrier(ctx, ep[j]);
		why = NULL;
		if (!via) {
			zcr_ep_error(ep[j], &why);
			fprintf(stderr, "# rank %d -> %d failed: %s\n", rank,
				j, why ? why : "?");
			bad = bad ? bad : 17;
			continue;
		}
		fprintf(stderr, "# rank %d -> %d: %s\n", rank, j, via);
		/* By default every pair reads each other: all shm. With one
		 * named reader, a connection on TCP says Yama is why. */
		if (strcmp(via, "shm") &&
		    (!one_reader || strncmp(via, "tcp (shm: ", 10) ||
		     !strstr(via, "Yama ptrace_scope 1")))
			bad = bad ? bad : 20;
	}
	if (bad)
		return bad;
	/* Nobody closes before everybody has read everything. */
	q = 0;
	for (j = 0; j < n; j++) {
		if (j == rank)
			continue;
		if (zcr_irecv(ctx, rb[j], 1, j, 2, &rq[q++]) ||
		    zcr_isend(ep[j], sb[j], 1, 2, &rq[q++]))
			return 18;
	}
	while (q-- > 0)
		if (zcr_wait(rq[q], NULL))
			return 19;
	sleep(1);
	zcr_ctx_destroy(ctx);
	for (j = 0; j < n; j++) {
		free(sb[j]);
		free(rb[j]);
	}
	return 0;
}

/* Run n sibling ranks under Yama ptrace_scope 1 through a job directory. */
static void ranks_under_scope_1(int n)
{
	char dir[] = "/tmp/zcr-yama-XXXXXX", cmd[64];
	int rank, old = read_scope(), status[MAX_RANKS];
	pid_t pid[MAX_RANKS];

	if (old < 0)
		ZT_SKIP("no Yama here (%s)", YAMA);
	ZT_ASSERT(mkdtemp(dir));
	ZT_ASSERT(chmod(dir, 0777) == 0);	/* for the ranks, not root */
	if (write_scope(1))
		ZT_SKIP("cannot set %s (not root)", YAMA);
	for (rank = 0; rank < n; rank++) {
		pid[rank] = fork();
		ZT_ASSERT(pid[rank] >= 0);
		if (pid[rank] == 0) {
			job_rank_env(rank, n, dir, "60000");
			setenv("ZCRECV_SHM", "1", 1);
			setenv("ZCRECV_QUIET", "1", 1);
			_exit(rank_main(rank, n));
		}
	}
	for (rank = 0; rank < n; rank++)
		ZT_ASSERT(waitpid(pid[rank], &status[rank], 0) == pid[rank]);
	ZT_EXPECT_EQ(write_scope(old), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ZT_EXPECT_EQ(system(cmd), 0);
	for (rank = 0; rank < n; rank++)
		ZT_ASSERT_MSG(WIFEXITED(status[rank]) &&
			      !WEXITSTATUS(status[rank]),
			      "rank %d: status %#x", rank, status[rank]);
}

ZT_TEST(three_sibling_ranks)
{
	ranks_under_scope_1(3);
}

ZT_TEST(four_sibling_ranks)
{
	ranks_under_scope_1(4);
}

ZT_TEST(four_sibling_ranks_one_named_reader_each)
{
	setenv("ZCRECV_SHM_PTRACER", "peer", 1);
	ranks_under_scope_1(4);
}
