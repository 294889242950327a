// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_sized.c - the _sized entry points that let public structs grow
 * (Documentation/abi-library.md): an older caller's smaller struct, a newer
 * caller's larger one (zero tail accepted, a set unknown field refused
 * with -E2BIG), and stats, statuses and the module's handshake info that
 * never write past the caller's size; the 0.3 calls' flags (unknown ones
 * are -EINVAL; ZCRECV_RECV_NO_LEARN keeps a receive from the predictor)
 * and names beside the names they replace.
 * Run: build/tests/unit/test_sized [name]
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include <linux/zcrecv.h>

#include "base/ctx.h"
#include "predict/predict.h"
#include "zcrecv.h"
#include "zcr_pair.h"
#include "zt.h"

#define END(type, m)	(offsetof(type, m) + sizeof(((type *)0)->m))
/* What a status of 0.1 and 0.2 ends with. */
#define STATUS_0_1	END(struct zcr_status, error)

/* A status with what its caller owns after it. */
struct big_status {
	struct zcr_status st;
	unsigned char more[32];
};

static int all_is(const void *p, size_t n, unsigned char c)
{
	const unsigned char *b = p;

	while (n--)
		if (*b++ != c)
			return 0;
	return 1;
}

ZT_TEST(attr_sizes)
{
	struct {
		struct zcr_ctx_attr a;
		unsigned char more[32];
	} big;
	struct zcr_ctx *c;

	memset(&big, 0, sizeof(big));
	big.a.rank = 2;
	big.a.quiet = 1;
	big.a.backend = ZCRECV_BACKEND_COPY;
	ZT_EXPECT_EQ(zcr_ctx_create_sized(&big.a, sizeof(big.a), &c), 0);
	zcr_ctx_destroy(c);
	/* A newer caller whose extra fields are zero (defaults). */
	ZT_EXPECT_EQ(zcr_ctx_create_sized(&big.a, sizeof(big), &c), 0);
	zcr_ctx_destroy(c);
	/* ... and one that sets a field this library does not know. */
	big.more[5] = 1;
	ZT_EXPECT_EQ(zcr_ctx_create_sized(&big.a, sizeof(big), &c), -E2BIG);
	/* Smaller than the first published struct. */
	ZT_EXPECT_EQ(zcr_ctx_create_sized(&big.a, sizeof(int), &c), -EINVAL);
	ZT_EXPECT_EQ(zcr_ctx_create_sized(NULL, 0, &c), 0);
	zcr_ctx_destroy(c);
	/* An older caller: the fields it lacks take defaults. */
	big.a.handshake_timeout_ms = -5;	/* not seen: past its size */
	ZT_EXPECT_EQ(zcr_ctx_create_sized(&big.a,
					  END(struct zcr_ctx_attr, quiet), &c),
		     -EINVAL);
	ZT_EXPECT_EQ(zcr_ctx_create(&big.a, &c), -EINVAL);
}

ZT_TEST(stats_sizes)
{
	struct zcr_ctx_attr a = { .quiet = 1, .backend = ZCRECV_BACKEND_COPY,
				  .staging_bytes = 12345 * 4096ULL };
	struct {
		struct zcr_stats st;
		unsigned char more[32];
	} big;
	unsigned char ff[32];
	struct zcr_ctx *c;
	size_t i;

	ZT_EXPECT_EQ(zcr_ctx_create_sized(&a, sizeof(a), &c), 0);
	memset(ff, 0xff, sizeof(ff));
	/* The 0.1 name writes the 0.1 struct, the sized one what it is told. */
	memset(&big, 0xff, sizeof(big));
	ZT_EXPECT_EQ(zcr_ctx_stats(c, &big.st), 0);
	ZT_EXPECT_EQ(big.st.staging_limit, 12345 * 4096ULL);
	ZT_EXPECT_EQ(memcmp(big.more, ff, sizeof(ff)), 0);
	memset(&big, 0xff, sizeof(big));
	ZT_EXPECT_EQ(zcr_ctx_stats_sized(c, &big.st, sizeof(big)), 0);
	ZT_EXPECT_EQ(big.st.staging_limit, 12345 * 4096ULL);
	for (i = 0; i < sizeof(big.more); i++)
		ZT_EXPECT_EQ(big.more[i], 0);
	ZT_EXPECT_EQ(zcr_ctx_stats_sized(c, &big.st, 8), -EINVAL);
	zcr_ctx_destroy(c);
}

ZT_TEST(kmod_info_sizes)
{
	struct {
		struct zcr_kmod_info info;
		unsigned char more[32];
	} big;
	size_t old = END(struct zcr_kmod_info, max_process_pages);
	int ret;

	ZT_EXPECT_EQ(zcr_kmod_probe_sized(&big.info, 8), -EINVAL);
	memset(&big, 0xff, sizeof(big));
	ret = zcr_kmod_probe_sized(&big.info, sizeof(big));
	if (access("/dev/zcrecv", F_OK)) {
		ZT_EXPECT_EQ(ret, -ENOENT);
		return;
	}
	ZT_ASSERT(ret == 0);
	ZT_EXPECT_EQ(all_is(big.more, sizeof(big.more), 0), 1);
	ZT_EXPECT_EQ(big.info.page_size, sysconf(_SC_PAGESIZE));
	if (big.info.features & ZCRECV_FEATURE_HUGE)
		ZT_EXPECT_EQ(big.info.huge_unit_size >= 2UL << 20, 1);
	else
		ZT_EXPECT_EQ(big.info.huge_unit_size, 0);
	/* The 0.1 name fills the 0.1 struct only. */
	memset(&big, 0xff, sizeof(big));
	ZT_EXPECT_EQ(zcr_kmod_probe(&big.info), 0);
	ZT_EXPECT_EQ(all_is((char *)&big + old, sizeof(big) - old, 0xff), 1);
}

/* Every call that fills a status: 0.1 size, a newer caller's, too small. */
ZT_TEST(status_sizes)
{
	struct zcr_ctx_attr a = { .backend = ZCRECV_BACKEND_COPY };
	char msg[] = "sized status", buf[32];
	struct big_status bs;
	struct zcr_message *m;
	struct zcr_req *r, *s;
	struct pair p;

	pair_open(&p, 2, &a);

	/* zcr_iprobe_comm() and zcr_test_sized(), a newer caller's status. */
	ZT_ASSERT(zcr_issend(p.to0[1], msg, sizeof(msg), 5, &s) == 0);
	memset(&bs, 0xff, sizeof(bs));
	ZT_EXPECT_EQ(zcr_iprobe_comm(p.c[0], 0, 1, 5, 0, &bs.st, 8), -EINVAL);
	PAIR_PUMP_UNTIL(&p, zcr_iprobe_comm(p.c[0], 0, 1, 5, 0, &bs.st,
					    sizeof(bs)) == 1);
	ZT_EXPECT_EQ(bs.st.len, sizeof(msg));
	ZT_EXPECT_EQ(all_is(bs.more, sizeof(bs.more), 0), 1);
	ZT_ASSERT(zcr_irecv(p.c[0], buf, sizeof(buf), 1, 5, &r) == 0);
	ZT_EXPECT_EQ(zcr_test_sized(r, &bs.st, 8), -EINVAL);
	memset(&bs, 0xff, sizeof(bs));
	PAIR_PUMP_UNTIL(&p, zcr_test_sized(r, &bs.st, sizeof(bs)) != 0);
	ZT_EXPECT_EQ(bs.st.error, 0);
	ZT_EXPECT_EQ(bs.st.source, 1);
	ZT_EXPECT_EQ(all_is(bs.more, sizeof(bs.more), 0), 1);
	memset(&bs, 0xff, sizeof(bs));
	ZT_EXPECT_EQ(zcr_wait_sized(s, &bs.st, STATUS_0_1, -1), 0);
	ZT_EXPECT_EQ(all_is((char *)&bs + STATUS_0_1,
			 sizeof(bs) - STATUS_0_1, 0xff), 1);

	/* zcr_improbe_comm() and zcr_wait_sized() */
	ZT_ASSERT(zcr_isend(p.to0[1], msg, sizeof(msg), 6, &s) == 0);
	memset(&bs, 0xff, sizeof(bs));
	PAIR_PUMP_UNTIL(&p, zcr_improbe_comm(p.c[0], 0, ZCRECV_ANY_SOURCE,
					     6, 0, &m, &bs.st,
					     sizeof(bs)) == 1);
	ZT_EXPECT_EQ(bs.st.tag, 6);
	ZT_EXPECT_EQ(all_is(bs.more, sizeof(bs.more), 0), 1);
	ZT_ASSERT(zcr_imrecv(m, buf, sizeof(buf), &r) == 0);
	ZT_EXPECT_EQ(zcr_wait_sized(r, &bs.st, 8, -1), -EINVAL);
	ZT_EXPECT_EQ(zcr_wait_sized(r, &bs.st, sizeof(bs), -2), -EINVAL);
	memset(&bs, 0xff, sizeof(bs));
	ZT_EXPECT_EQ(zcr_wait_sized(r, &bs.st, sizeof(bs), 10000), 0);
	ZT_EXPECT_EQ(bs.st.len, sizeof(msg));
	ZT_EXPECT_EQ(all_is(bs.more, sizeof(bs.more), 0), 1);
	ZT_EXPECT_EQ(zcr_wait(s, NULL), 0);

	/* zcr_recv_sized(): the sender completes without our progress. */
	ZT_ASSERT(zcr_isend(p.to0[1], msg, sizeof(msg), 7, &s) == 0);
	PAIR_PUMP_UNTIL(&p, zcr_iprobe(p.c[0], 0, 1, 7, NULL) == 1);
	ZT_EXPECT_EQ(zcr_recv_sized(p.c[0], buf, sizeof(buf), 1, 7, &bs.st,
				    8), -EINVAL);
	memset(&bs, 0xff, sizeof(bs));
	ZT_EXPECT_EQ(zcr_recv_sized(p.c[0], buf, sizeof(buf), 1, 7, &bs.st,
				    sizeof(bs)), 0);
	ZT_EXPECT_EQ(bs.st.tag, 7);
	ZT_EXPECT_EQ(all_is(bs.more, sizeof(bs.more), 0), 1);
	ZT_EXPECT_EQ(zcr_wait(s, NULL), 0);
	pair_close(&p);
}

/* Unknown flags are refused; ZCRECV_PROBE_NO_PROGRESS looks only. */
ZT_TEST(probe_flags)
{
	struct zcr_ctx_attr a = { .backend = ZCRECV_BACKEND_COPY };
	char msg[] = "flags";
	struct zcr_status st;
	struct zcr_message *m;
	struct zcr_req *s;
	struct pair p;

	pair_open(&p, 2, &a);
	ZT_EXPECT_EQ(zcr_iprobe_comm(p.c[0], 0, 1, 1, 1U << 31, &st,
				     sizeof(st)), -EINVAL);
	ZT_EXPECT_EQ(zcr_improbe_comm(p.c[0], 0, 1, 1, 2, &m, &st,
				      sizeof(st)), -EINVAL);
	ZT_ASSERT(zcr_isend(p.to0[1], msg, sizeof(msg), 1, &s) == 0);
	ZT_EXPECT_EQ(zcr_wait(s, NULL), 0);
	/*
	 * The message is in rank 0's socket: a probe that makes no
	 * progress cannot see it, one that does finds it.
	 */
	usleep(20000);
	ZT_EXPECT_EQ(zcr_iprobe_comm(p.c[0], 0, 1, 1,
				     ZCRECV_PROBE_NO_PROGRESS, &st,
				     sizeof(st)), 0);
	PAIR_PUMP_UNTIL(&p, zcr_iprobe_comm(p.c[0], 0, 1, 1, 0, &st,
					    sizeof(st)) == 1);
	ZT_EXPECT_EQ(zcr_improbe_comm(p.c[0], 0, 1, 1,
				      ZCRECV_PROBE_NO_PROGRESS, &m, &st,
				      sizeof(st)), 1);
	ZT_EXPECT_EQ(zcr_imrecv(m, NULL, 0, &s), 0);
	ZT_EXPECT_EQ(zcr_wait(s, NULL), -EMSGSIZE);
	pair_close(&p);
}

/*
 * n receives of a page or more on rank 0 of p, each with a tag of its own
 * (as a collective's parts), posted with flags and cancelled: the bytes
 * the predictor holds afterwards.
 */
static size_t pred_after(struct pair *p, char *buf, size_t len, int n,
			 unsigned int flags)
{
	struct zcr_req *r;
	int i;

	for (i = 0; i < n; i++) {
		ZT_ASSERT(zcr_irecv_flags_comm(p->c[0], 0, buf, len, 1,
					       1000 + i, flags, &r) == 0);
		ZT_EXPECT_EQ(zcr_cancel(r), 0);
		ZT_EXPECT_EQ(zcr_wait(r, NULL), -ECANCELED);
	}
	return __zcr_pred_memory(p->c[0]->pred);
}

/*
 * ZCRECV_RECV_NO_LEARN: the receive is not learnt (the predictor's memory
 * does not grow with receives it will never see again, as it does without
 * the flag), and it takes its message as any receive; unknown bits are
 * refused.
 */
ZT_TEST(recv_no_learn)
{
	struct zcr_ctx_attr a = { .backend = ZCRECV_BACKEND_COPY };
	size_t len = 16384, before, after;
	static char buf[16384], sb[16384];
	struct zcr_status st;
	struct zcr_req *r, *s;
	struct pair p;

	pair_open(&p, 2, &a);
	ZT_EXPECT_EQ(zcr_irecv_flags_comm(p.c[0], 0, buf, len, 1, 1, 1U << 1,
					  &r), -EINVAL);
	before = __zcr_pred_memory(p.c[0]->pred);
	after = pred_after(&p, buf, len, 200, ZCRECV_RECV_NO_LEARN);
	ZT_EXPECT_EQ(after, before);
	ZT_ASSERT(pred_after(&p, buf, len, 200, 0) > after);

	memset(sb, 0x5a, sizeof(sb));
	ZT_ASSERT(zcr_irecv_flags_comm(p.c[0], 0, buf, len, 1, 3,
				       ZCRECV_RECV_NO_LEARN, &r) == 0);
	ZT_ASSERT(zcr_isend_comm(p.to0[1], 0, sb, len, 3, &s) == 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(r, &st) != 0);
	ZT_EXPECT_EQ(st.error, 0);
	ZT_EXPECT_EQ(st.len, len);
	ZT_EXPECT_EQ(st.tag, 3);
	ZT_EXPECT_EQ(memcmp(buf, sb, len), 0);
	pair_close(&p);
}

/* c[1] sends len bytes of sb on comm with tag; it arrives early at c[0]. */
static void send_early(struct pair *p, uint32_t comm, const char *sb,
		       size_t len, int tag)
{
	uint64_t early = pair_stats(p->c[0]).early;
	struct zcr_req *s;

	ZT_EXPECT_EQ(zcr_isend_comm(p->to0[1], comm, sb, len, tag, &s), 0);
	PAIR_PUMP_UNTIL(p, zcr_test(s, NULL) != 0);
	PAIR_PUMP_UNTIL(p, pair_stats(p->c[0]).early > early);
}

/*
 * Messages of a communicator whose receives the predictor is not shown
 * (ZCRECV_RECV_NO_LEARN, an MPI layer's collective space) take no
 * predicted receive's place: a program message queued behind one of them
 * is still staged at the page offset of the program's next receive, and
 * lands there (a hit). Counted among the predicted receives, the queued
 * one made the program message skip its receive for the one after it (a
 * miss).
 */
ZT_TEST(unlearnt_messages_leave_predictions_alone)
{
	struct zcr_ctx_attr a = { .backend = ZCRECV_BACKEND_COPY };
	const size_t len = 16384;
	char *ra = aligned_alloc(4096, len + 4096);
	char *rb = aligned_alloc(4096, len + 4096);
	char *rc = aligned_alloc(4096, len), *sb = malloc(len);
	char *buf[2] = { ra + 0x100, rb + 0x200 };
	struct zcr_req *r, *s;
	struct zcr_status st;
	struct pair p;
	uint64_t hits;
	int i;

	ZT_ASSERT(ra && rb && rc && sb);
	memset(sb, 0x3c, len);
	pair_create(&p, 2, &a);
	p.c[1]->comm_ids = true;	/* as a job's context dials */
	pair_connect(&p);
	/* The program's receives: A and B in turn, B last. */
	for (i = 0; i < 40; i++) {
		ZT_ASSERT(zcr_irecv(p.c[0], buf[i % 2], len, 1, 1, &r) == 0);
		ZT_ASSERT(zcr_isend_comm(p.to0[1], 0, sb, len, 1, &s) == 0);
		PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
		PAIR_PUMP_UNTIL(&p, zcr_test(r, &st) != 0);
	}
	/* A collective's part queued, then the program's message. */
	ZT_ASSERT(zcr_irecv_flags_comm(p.c[0], 7, rc, len, 1, 5,
				       ZCRECV_RECV_NO_LEARN, &r) == 0);
	ZT_EXPECT_EQ(zcr_cancel(r), 0);
	ZT_EXPECT_EQ(zcr_wait(r, NULL), -ECANCELED);
	send_early(&p, 7, sb, len, 5);
	send_early(&p, 0, sb, len, 1);
	hits = pair_stats(p.c[0]).hits;
	ZT_ASSERT(zcr_irecv(p.c[0], buf[0], len, 1, 1, &r) == 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(r, &st) != 0);
	ZT_EXPECT_EQ(st.error, 0);
	ZT_EXPECT_EQ(memcmp(buf[0], sb, len), 0);
	ZT_EXPECT_EQ(pair_stats(p.c[0]).hits, hits + 1);
	ZT_ASSERT(zcr_irecv_flags_comm(p.c[0], 7, rc, len, 1, 5,
				       ZCRECV_RECV_NO_LEARN, &r) == 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(r, &st) != 0);
	ZT_EXPECT_EQ(st.error, 0);
	pair_close(&p);
	free(ra);
	free(rb);
	free(rc);
	free(sb);
}

/* zcr_ctx_job_ep() and the name it replaces, on a one-rank job. */
static int allgather1(const void *mine, void *all, size_t len, void *arg)
{
	(void)arg;
	memcpy(all, mine, len);
	return 0;
}

ZT_TEST(job_ep_names)
{
	struct zcr_ctx_attr a = { .quiet = 1, .backend = ZCRECV_BACKEND_COPY,
				  .job_secret = "test_sized job secret 0123456" };
	struct zcr_job_attr ja = { .rank = 0, .size = 1,
				   .allgather = allgather1 };
	struct zcr_ep *e1 = NULL, *e2 = NULL;
	struct zcr_ctx *c;

	ZT_ASSERT(zcr_ctx_create_job(&a, sizeof(a), &ja, sizeof(ja), &c) == 0);
	ZT_EXPECT_EQ(zcr_ctx_job_ep(c, 0, 1, &e1), -EINVAL);
	ZT_EXPECT_EQ(zcr_ctx_job_ep(c, 1, 0, &e1), -EINVAL);
	ZT_EXPECT_EQ(zcr_ctx_job_ep(c, 0, 0, &e1), 0);
	ZT_EXPECT_EQ(zcr_job_ep(c, 0, &e2), 0);
	ZT_ASSERT(e1 && e1 == e2);
	zcr_ctx_destroy(c);
}
