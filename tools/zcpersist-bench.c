// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcpersist-bench - persistent against nonblocking ping-pong over one
 * libzcrecv transport, in the same run.
 *
 * Two processes (fork; rank 0 listens, rank 1 connects) exchange
 * messages of each size, in trials that alternate the two ways of writing
 * the same ping-pong:
 *   nonblocking  zcr_irecv() + zcr_isend() + zcr_wait() per message
 *   persistent   zcr_recv_init_comm() / zcr_send_init_comm() once,
 *                zcr_start() + zcr_wait() per message
 * Both sides start (or post) the receive of their next message before
 * they send, so a receive is always there before its message leaves.
 * Over verbs a started persistent receive offers its buffer and the
 * sender writes into it (Documentation/verbs.md, "Offered receive
 * buffers"); the offers column counts the messages that went that way.
 * The first and last words of every message carry its number and are
 * checked; the last message of each trial is checked whole.
 *
 * Prints, per size, the median half round trip of each way over every
 * message of its trials (one retransmission or descheduled moment moves
 * a few messages, not the figure), the best trial's mean, their ratios,
 * and their differences in units of the small-message latency (the
 * nonblocking half round trip at --small bytes, same run, taken alike):
 * how many small-message latencies the persistent path saves.
 *
 * Usage: zcpersist-bench [--transport verbs|tcp] [--min BYTES]
 *        [--max BYTES] [--small BYTES] [--iters N] [--trials N]
 *        [--no-bind] [--emulated] [--csv FILE|-]
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zcrecv.h"
#include "bench.h"
#include "transport/verbs/verbs.h"

#define TAG_DATA	5
#define TAG_SYNC	6
#define MAX_TRIALS	64

static void usage(FILE *f)
{
	fprintf(f,
"usage: zcpersist-bench [--transport verbs|tcp] [--min BYTES] [--max BYTES]\n"
"                       [--small BYTES] [--iters N] [--trials N]\n"
"                       [--no-bind] [--emulated] [--csv FILE|-]\n"
"Ping-pong of persistent requests (zcr_start) against nonblocking ones\n"
"(zcr_irecv/zcr_isend), alternating trials in one run, two processes on\n"
"this host. Over verbs a started persistent receive offers its buffer and\n"
"the sender writes into it (Documentation/verbs.md).\n"
"  --transport T  verbs (default) or tcp\n"
"  --min BYTES    smallest size (default 65536); sizes double\n"
"  --max BYTES    largest size (default 1048576)\n"
"  --small BYTES  the small-message latency's size (default 8)\n"
"  --iters N      round trips per trial (default 20)\n"
"  --trials N     trials per way and size (default 5, at most 64)\n"
"  --no-bind      do not bind the ranks to processors 0 and 1\n"
"  --emulated     mark the figures as measured under emulation\n"
"  --csv FILE|-   CSV too (-: stdout between zcpersist-csv-begin/end)\n"
"  -h, --help     this help\n"
"Exit status: 0 done, 1 a message failed or was corrupt, 2 bad usage.\n");
}

struct opts {
	const char *transport;
	uint64_t min, max, small;
	unsigned int iters, trials;
	bool bind, emulated;
	const char *csv;
};

static void die(const char *what, int err)
{
	fprintf(stderr, "zcpersist-bench: %s: %s\n", what, strerror(-err));
	exit(1);
}

#define CK(call)							\
	do {								\
		int ck_ = (call);					\
		if (ck_ < 0)						\
			die(#call, ck_);				\
	} while (0)

static void stamp(char *b, uint64_t len, uint64_t n)
{
	if (len >= 16) {
		memcpy(b, &n, 8);
		memcpy(b + len - 8, &n, 8);
	} else if (len) {
		memset(b, (int)(n & 0xff), len);
	}
}

static bool stamped(const char *b, uint64_t len, uint64_t n)
{
	uint64_t x, y;

	if (len >= 16) {
		memcpy(&x, b, 8);
		memcpy(&y, b + len - 8, 8);
		return x == n && y == n;
	}
	return !len || (unsigned char)b[0] == (n & 0xff);
}

/* Every byte of a whole-checked message: its number and offset. */
static void fill_all(char *b, uint64_t len, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		b[i] = (char)((n * 131 + i * 7 + (i >> 12)) & 0xff);
}

static bool check_all(const char *b, uint64_t len, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		if (b[i] != (char)((n * 131 + i * 7 + (i >> 12)) & 0xff))
			return false;
	return true;
}

static void wait_ok(struct zcr_req *r, uint64_t len)
{
	struct zcr_status st;
	int ret = zcr_wait(r, &st);

	if (ret < 0)
		die("zcr_wait", ret);
	if (len != UINT64_MAX && st.len != len) {
		fprintf(stderr, "zcpersist-bench: got %llu bytes, not %llu\n",
			(unsigned long long)st.len, (unsigned long long)len);
		exit(1);
	}
}

/* A small message on TAG_SYNC: the two ranks meet between trials. */
static void meet(struct zcr_ctx *c, struct zcr_ep *ep, int peer)
{
	struct zcr_req *r, *s;
	char b = 0;

	CK(zcr_irecv(c, &b, 1, peer, TAG_SYNC, &r));
	CK(zcr_isend(ep, &b, 1, TAG_SYNC, &s));
	wait_ok(s, UINT64_MAX);
	wait_ok(r, 1);
}

/*
 * One trial of iters round trips of len bytes; persistent or not. Rank 0
 * returns the half round trip in microseconds.
 */
static double trial(struct zcr_ctx *c, struct zcr_ep *ep, int rank,
		    char *sb, char *rb, uint64_t len, unsigned int iters,
		    bool persist, uint64_t base, double *each)
{
	struct zcr_preq *ps = NULL, *pr = NULL;
	struct zcr_req *r = NULL, *s;
	int peer = !rank;
	unsigned int i;
	double t0 = 0, t1 = 0;

	if (persist) {
		CK(zcr_send_init_comm(ep, 0, sb, len, TAG_DATA, 0, &ps));
		CK(zcr_recv_init_comm(c, 0, rb, len, peer, TAG_DATA, 0, &pr));
	}
	/* Rank 1's first receive is there before rank 0's first ping. */
	if (rank == 1)
		CK(persist ? zcr_start(pr, &r) :
		   zcr_irecv(c, rb, len, peer, TAG_DATA, &r));
	meet(c, ep, peer);
	if (rank == 0)
		t0 = zct_now_us();
	for (i = 0; i < iters; i++) {
		uint64_t n = base + i;
		bool last = i + 1 == iters;

		if (rank == 0) {
			t1 = zct_now_us();
			CK(persist ? zcr_start(pr, &r) :
			   zcr_irecv(c, rb, len, peer, TAG_DATA, &r));
			if (last)
				fill_all(sb, len, n);
			else
				stamp(sb, len, n);
			CK(persist ? zcr_start(ps, &s) :
			   zcr_isend(ep, sb, len, TAG_DATA, &s));
			wait_ok(s, UINT64_MAX);
			wait_ok(r, len);
			each[i] = (zct_now_us() - t1) / 2;
		} else {
			struct zcr_req *next = NULL;

			wait_ok(r, len);
			if (last ? !check_all(rb, len, n) :
			    !stamped(rb, len, n)) {
				fprintf(stderr, "zcpersist-bench: rank 1: "
					"message %llu of %llu bytes corrupt\n",
					(unsigned long long)n,
					(unsigned long long)len);
				exit(1);
			}
			if (!last)
				CK(persist ? zcr_start(pr, &next) :
				   zcr_irecv(c, rb, len, peer, TAG_DATA,
					     &next));
			/* The pong echoes the ping's number. */
			if (last)
				fill_all(sb, len, n);
			else
				stamp(sb, len, n);
			CK(persist ? zcr_start(ps, &s) :
			   zcr_isend(ep, sb, len, TAG_DATA, &s));
			wait_ok(s, UINT64_MAX);
			r = next;
			continue;
		}
		if (last ? !check_all(rb, len, n) : !stamped(rb, len, n)) {
			fprintf(stderr, "zcpersist-bench: rank 0: message %llu "
				"of %llu bytes corrupt\n",
				(unsigned long long)n, (unsigned long long)len);
			exit(1);
		}
	}
	if (persist) {
		zcr_preq_free(ps);
		zcr_preq_free(pr);
	}
	return rank == 0 ? (zct_now_us() - t0) / (2.0 * iters) : 0;
}

static void bind_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("zcpersist-bench: sched_setaffinity");
}

static uint64_t offers(struct zcr_ctx *c)
{
	struct zcr_verbs_stats vs;

	return __zcr_verbs_stats(c, &vs) ? 0 : vs.adv_written;
}

struct row {
	uint64_t size;
	double nb, pe;		/* medians of every message, us */
	double nb_best, pe_best;	/* best trials, us */
	uint64_t written;	/* messages rank 0 got by write, persistent */
};

static double best(const double *v, unsigned int n)
{
	double b = v[0];
	unsigned int i;

	for (i = 1; i < n; i++)
		if (v[i] < b)
			b = v[i];
	return b;
}

static int run(const struct opts *o, int rank, const char *addr,
	       int port_fd)
{
	struct zcr_ctx_attr a = { .rank = rank, .quiet = 1 };
	double nb[MAX_TRIALS] = { 0 }, pe[MAX_TRIALS] = { 0 };
	double small_v[MAX_TRIALS] = { 0 };
	struct row rows[64];
	unsigned int nrows = 0, t;
	struct zcr_ctx *c;
	struct zcr_ep *ep;
	uint64_t size, base = 1;
	double small, small_best;
	double *small_e, *nb_e, *pe_e;	/* every round trip, halved */
	char *sb, *rb;
	FILE *csv = NULL;
	int port;

	if (o->bind)
		bind_to(rank);
	CK(zcr_ctx_create_sized(&a, sizeof(a), &c));
	if (rank == 0) {
		port = zcr_ctx_listen(c, addr);
		if (port < 0)
			die("zcr_ctx_listen", port);
		if (write(port_fd, &port, sizeof(port)) != sizeof(port))
			die("write", -errno);
		close(port_fd);
		CK(zcr_ep_accept(c, -1, &ep));
	} else {
		char full[96];

		if (read(port_fd, &port, sizeof(port)) != sizeof(port))
			die("read", -EIO);
		close(port_fd);
		snprintf(full, sizeof(full), "%s%d", addr, port);
		CK(zcr_ep_connect(c, full, &ep));
	}
	small_e = calloc((size_t)o->trials * o->iters, sizeof(double));
	nb_e = calloc((size_t)o->trials * o->iters, sizeof(double));
	pe_e = calloc((size_t)o->trials * o->iters, sizeof(double));
	if (!small_e || !nb_e || !pe_e)
		die("calloc", -ENOMEM);
	sb = malloc(o->max > o->small ? o->max : o->small);
	rb = malloc(o->max > o->small ? o->max : o->small);
	if (!sb || !rb)
		die("malloc", -ENOMEM);
	for (t = 0; t < o->trials; t++) {
		small_v[t] = trial(c, ep, rank, sb, rb, o->small, o->iters,
				   false, base, small_e + t * o->iters);
		base += o->iters;
	}
	small_best = best(small_v, o->trials);
	small = zct_median(small_e, o->trials * o->iters);
	for (size = o->min; size <= o->max; size *= 2) {
		uint64_t w0 = offers(c);

		for (t = 0; t < o->trials; t++) {
			/* Alternate which way goes first. */
			bool pfirst = t & 1;

			if (pfirst)
				pe[t] = trial(c, ep, rank, sb, rb, size,
					      o->iters, true, base,
					      pe_e + t * o->iters);
			nb[t] = trial(c, ep, rank, sb, rb, size, o->iters,
				      false, base + o->iters,
				      nb_e + t * o->iters);
			if (!pfirst)
				pe[t] = trial(c, ep, rank, sb, rb, size,
					      o->iters, true, base,
					      pe_e + t * o->iters);
			base += 2 * o->iters;
		}
		rows[nrows].size = size;
		rows[nrows].nb_best = best(nb, o->trials);
		rows[nrows].pe_best = best(pe, o->trials);
		rows[nrows].nb = zct_median(nb_e, o->trials * o->iters);
		rows[nrows].pe = zct_median(pe_e, o->trials * o->iters);
		rows[nrows].written = offers(c) - w0;
		nrows++;
		if (nrows == 64)
			break;
	}
	meet(c, ep, !rank);
	if (rank == 1) {
		zcr_ctx_destroy(c);
		return 0;
	}
	printf("zcpersist-bench: transport %s, %u trials of %u round trips "
	       "per way and size%s\n", o->transport, o->trials,
	       o->iters, o->emulated ? "; EMULATED timings: compare ratios "
	       "within this run" : "");
	printf("small-message latency (%llu B, nonblocking): median %.1f us, "
	       "best %.1f us\n", (unsigned long long)o->small, small,
	       small_best);
	printf("%10s %12s %12s %7s %9s | %12s %12s %7s %9s | %8s\n", "size",
	       "nonblock_us", "persist_us", "ratio", "saved/lat", "best_nb_us",
	       "best_pe_us", "ratio", "saved/lat", "written");
	if (o->csv)
		csv = strcmp(o->csv, "-") ? fopen(o->csv, "w") : stdout;
	if (o->csv && !csv)
		die(o->csv, -errno);
	if (csv == stdout)
		printf("zcpersist-csv-begin\n");
	if (csv)
		fprintf(csv, "transport,size,nonblock_us,persist_us,small_us,"
			"best_nonblock_us,best_persist_us,best_small_us,"
			"written,emulated\n");
	for (t = 0; t < nrows; t++) {
		const struct row *w = &rows[t];

		printf("%10llu %12.1f %12.1f %7.3f %9.2f | %12.1f %12.1f "
		       "%7.3f %9.2f | %8llu\n", (unsigned long long)w->size,
		       w->nb, w->pe, w->pe / w->nb, (w->nb - w->pe) / small,
		       w->nb_best, w->pe_best, w->pe_best / w->nb_best,
		       (w->nb_best - w->pe_best) / small_best,
		       (unsigned long long)w->written);
		if (csv)
			fprintf(csv, "%s,%llu,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,"
				"%llu,%d\n", o->transport,
				(unsigned long long)w->size, w->nb, w->pe,
				small, w->nb_best, w->pe_best, small_best,
				(unsigned long long)w->written, o->emulated);
	}
	if (csv == stdout)
		printf("zcpersist-csv-end\n");
	else if (csv)
		fclose(csv);
	zcr_ctx_destroy(c);
	free(sb);
	free(rb);
	free(small_e);
	free(nb_e);
	free(pe_e);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "transport", required_argument, NULL, 't' },
		{ "min", required_argument, NULL, 'm' },
		{ "max", required_argument, NULL, 'M' },
		{ "small", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'i' },
		{ "trials", required_argument, NULL, 'T' },
		{ "no-bind", no_argument, NULL, 'b' },
		{ "emulated", no_argument, NULL, 'e' },
		{ "csv", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o = { .transport = "verbs", .min = 65536,
			  .max = 1 << 20, .small = 8, .iters = 20,
			  .trials = 5, .bind = true };
	const char *listen_addr, *dial;
	int opt, fds[2], status, ret;
	char *end;
	pid_t pid;

	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		unsigned long long v = 0;

		if (optarg && strchr("mMsiT", opt)) {
			errno = 0;
			v = strtoull(optarg, &end, 0);
			if (errno || *end || !v) {
				fprintf(stderr, "zcpersist-bench: bad number "
					"'%s'\n", optarg);
				usage(stderr);
				return 2;
			}
		}
		switch (opt) {
		case 't': o.transport = optarg; break;
		case 'm': o.min = v; break;
		case 'M': o.max = v; break;
		case 's': o.small = v; break;
		case 'i': o.iters = (unsigned int)v; break;
		case 'T': o.trials = (unsigned int)v; break;
		case 'b': o.bind = false; break;
		case 'e': o.emulated = true; break;
		case 'c': o.csv = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || o.min > o.max || o.trials > MAX_TRIALS ||
	    o.iters > 1000000 || o.max > (1ull << 30) ||
	    (strcmp(o.transport, "verbs") && strcmp(o.transport, "tcp"))) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(o.transport, "verbs")) {
		listen_addr = "verbs://127.0.0.1:0";
		dial = "verbs://127.0.0.1:";
	} else {
		listen_addr = "tcp://127.0.0.1:0";
		dial = "tcp://127.0.0.1:";
	}
	if (pipe(fds))
		die("pipe", -errno);
	pid = fork();
	if (pid < 0)
		die("fork", -errno);
	if (!pid) {
		close(fds[1]);
		_exit(run(&o, 1, dial, fds[0]));
	}
	close(fds[0]);
	ret = run(&o, 0, listen_addr, fds[1]);
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		ret = 1;
	return ret;
}
