// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_shm_yama.c - ranks of a job on one host, siblings as under mpirun,
 * with the Yama LSM at ptrace_scope 1: a process there may be read only by
 * its ancestors and by the reader it set with prctl(PR_SET_PTRACER) (one
 * process, or any), while the shm transport's pulls read the sender's
 * memory. Three and four ranks send each other announced (pulled) messages
 * in every direction, round after round: every message must arrive whole
 * and no connection may fail, whichever connections end up on shm and
 * whichever stay on TCP (printed).
 *
 * Needs Yama, root, and ZCRECV_VM=1 (tools/vm/init sets it), since it
 * sets ptrace_scope for the whole machine (and puts it back, also when the
 * test times out): it runs in the VMs (tests/vm.list) and is skipped
 * elsewhere. The
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
#include <signal.h>
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

/* Async-signal-safe: the timeout's handler puts the scope back too. */
static int write_scope(int v)
{
	char b[2] = { (char)('0' + v), '\n' };
	int fd = open(YAMA, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0 || v < 0 || v > 3)
		return -EINVAL;
	ok = write(fd, b, 2) == 2;
	close(fd);
	return ok ? 0 : -EACCES;
}

/* What to undo if the test ends early: the scope, and the ranks. */
static int saved_scope = -1;
static pid_t rank_pid[MAX_RANKS];

static void undo(void)
{
	int r;

	for (r = 0; r < MAX_RANKS; r++)
		if (rank_pid[r] > 0)
			kill(rank_pid[r], SIGKILL);
	if (saved_scope >= 0)
		write_scope(saved_scope);
	saved_scope = -1;
}

/* zt's timeout (SIGALRM) would leave the machine at scope 1. */
static void on_timeout(int sig)
{
	static const char msg[] = "# timed out: scope put back, ranks killed\n";

	(void)sig;
	undo();
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
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
	struct zcr_status st = { 0 };
	struct zcr_ctx *ctx;
	const char *why, *mode = getenv("ZCRECV_SHM_PTRACER");
	bool one_reader = mode && !strcmp(mode, "peer");
	int j, k, q, bad = 0, shm_peer = -1;
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
			int ret = zcr_wait(rq[q], &st);

			if (ret || st.error) {
				fprintf(stderr, "# rank %d round %d: a %s "
					"failed: %s\n", rank, k,
					q < n - 1 ? "receive" : "send",
					strerror(ret ? -ret : -st.error));
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
		/* One named reader: shm with one peer at most. */
		if (one_reader && !strcmp(via, "shm")) {
			if (shm_peer >= 0 && shm_peer != j)
				bad = bad ? bad : 21;
			shm_peer = j;
		}
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

/*
 * Run n sibling ranks under Yama ptrace_scope 1 through a job directory.
 * The scope is the machine's: only in the test VMs (ZCRECV_VM=1, set by
 * tools/vm/init), and put back however the test ends.
 */
static void ranks_under_scope_1(int n)
{
	char dir[] = "/tmp/zcr-yama-XXXXXX", cmd[64];
	int rank, old = read_scope(), status[MAX_RANKS];
	const char *vm = getenv("ZCRECV_VM");
	bool ok;

	if (old < 0)
		ZT_SKIP("no Yama here (%s)", YAMA);
	if (!vm || strcmp(vm, "1"))
		ZT_SKIP("sets %s for the whole machine: only in the test VMs "
			"(ZCRECV_VM=1)", YAMA);
	signal(SIGALRM, on_timeout);
	saved_scope = old;
	if (write_scope(1)) {
		saved_scope = -1;
		ZT_SKIP("cannot set %s (not root)", YAMA);
	}
	ok = mkdtemp(dir) && chmod(dir, 0777) == 0;	/* ranks: not root */
	for (rank = 0; ok && rank < n; rank++) {
		rank_pid[rank] = fork();
		if (rank_pid[rank] < 0)
			ok = false;
		if (rank_pid[rank] == 0) {
			job_rank_env(rank, n, dir, "30000");
			setenv("ZCRECV_SHM", "1", 1);
			setenv("ZCRECV_QUIET", "1", 1);
			_exit(rank_main(rank, n));
		}
	}
	for (rank = 0; rank < n; rank++) {
		if (rank_pid[rank] > 0 &&
		    waitpid(rank_pid[rank], &status[rank], 0) != rank_pid[rank])
			ok = false;
		rank_pid[rank] = 0;
	}
	undo();
	ZT_EXPECT_EQ(read_scope(), old);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ZT_EXPECT_EQ(system(cmd), 0);
	ZT_ASSERT_MSG(ok, "could not start or wait for the ranks");
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
