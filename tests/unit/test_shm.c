// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_shm.c - the mechanics of the intra-node transport on their own,
 * between a parent and a forked child: host identity, a ring handed over
 * with pidfd_getfd and driven from both ends (eager cells and rendezvous
 * pulls with process_vm_readv, many sizes, every byte checked, the
 * doorbell waking a sleeping consumer), hostile ring geometry, and a child
 * killed mid-message (a clear error, no descriptor or mapping left).
 * Run: build/tests/unit/test_shm [name]
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "transport/shm/shm.h"
#include "zcr_pair.h"

/* This test's own answer to an RTS (the transport's is the ring's head). */
#define TEST_ACK	3

/* memfd descriptors and mappings of this process, by name. */
static int count_memfds(void)
{
	char path[300], link[256];
	struct dirent *d;
	int n = 0;
	DIR *dir = opendir("/proc/self/fd");

	ZT_ASSERT(dir);
	while ((d = readdir(dir))) {
		ssize_t l;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		l = readlink(path, link, sizeof(link) - 1);
		if (l <= 0)
			continue;
		link[l] = 0;
		if (strstr(link, "memfd:zcrecv-shm"))
			n++;
	}
	closedir(dir);
	return n;
}

static int count_dev_shm(void)
{
	struct dirent *d;
	int n = 0;
	DIR *dir = opendir("/dev/shm");

	if (!dir)
		return 0;
	while ((d = readdir(dir)))
		if (strstr(d->d_name, "zcrecv"))
			n++;
	closedir(dir);
	return n;
}

ZT_TEST(hostid_same_here)
{
	struct zcr_shm_hostid a, b;

	ZT_EXPECT_EQ(__zcr_shm_hostid(&a), 0);
	ZT_EXPECT_EQ(__zcr_shm_hostid(&b), 0);
	ZT_ASSERT(strlen(a.boot_id) == 36);
	ZT_ASSERT(__zcr_shm_same_host(&a, &b));
	b.boot_id[0] ^= 1;
	ZT_ASSERT(!__zcr_shm_same_host(&a, &b));
	b.boot_id[0] ^= 1;
	b.host[0] ^= 1;
	ZT_ASSERT(!__zcr_shm_same_host(&a, &b));
}

ZT_TEST(ring_bad_geometry)
{
	struct zcr_shm_ring r;

	ZT_EXPECT_EQ(__zcr_shm_ring_create(&r, 0, 4096), -EINVAL);
	ZT_EXPECT_EQ(__zcr_shm_ring_create(&r, 8, 100), -EINVAL);
	ZT_EXPECT_EQ(__zcr_shm_ring_create(&r, 8, 64), -EINVAL);
	ZT_EXPECT_EQ(__zcr_shm_ring_create(&r, 5000, 4096), -EINVAL);
	ZT_EXPECT_EQ(count_memfds(), 0);
}

/*
 * The sender's share of a shared pull (shm.h): half way to the share
 * that ends both parts together at the speeds seen; a step more when the
 * sender was done first; never outside [ZCR_SHM_SHARE_MIN, _MAX]; no
 * division by a zero time.
 */
ZT_TEST(share_follows_the_speeds)
{
	const uint64_t M = 1 << 20;

	/* Equal speeds: stays. */
	ZT_EXPECT_EQ(__zcr_shm_share_next(32, 8 * M, 1000000, 8 * M, 1000000),
		     32);
	/* The sender copies 3x as fast: half way from 32 to 48. */
	ZT_EXPECT_EQ(__zcr_shm_share_next(32, 8 * M, 3000000, 8 * M, 1000000),
		     40);
	/* And there it stays once both end together. */
	ZT_EXPECT_EQ(__zcr_shm_share_next(48, 4 * M, 3000000, 12 * M,
					  3000000), 48);
	/* 3x as slow: towards 16. */
	ZT_EXPECT_EQ(__zcr_shm_share_next(32, 8 * M, 1000000, 8 * M, 3000000),
		     24);
	/* Done before us: a step more, up to the ceiling. */
	ZT_EXPECT_EQ(__zcr_shm_share_next(32, 8 * M, 1000000, 8 * M, 0),
		     32 + ZCR_SHM_SHARE_STEP);
	ZT_EXPECT_EQ(__zcr_shm_share_next(ZCR_SHM_SHARE_MAX, 8 * M, 1000000,
					  8 * M, 0), ZCR_SHM_SHARE_MAX);
	/* Much slower, or instant ourselves: down to the floor. */
	ZT_EXPECT_EQ(__zcr_shm_share_next(ZCR_SHM_SHARE_MIN, 8 * M, 1000000,
					  M, 900000000), ZCR_SHM_SHARE_MIN);
	ZT_EXPECT_EQ(__zcr_shm_share_next(32, 8 * M, 0, 8 * M, 1000000),
		     16);
	ZT_EXPECT_EQ(__zcr_shm_share_next(16, 8 * M, 0, 8 * M, 1000000),
		     ZCR_SHM_SHARE_MIN);
}

/* A ring of our own, attached by ourselves: one process, both ends. */
ZT_TEST(ring_self_fill_drain)
{
	struct zcr_shm_ring in, out;
	struct zcr_shm_cell *c;
	int pidfd, err, i;

	ZT_EXPECT_EQ(__zcr_shm_ring_create(&in, 4, 4096), 0);
	pidfd = __zcr_shm_pidfd(getpid());
	ZT_ASSERT(pidfd >= 0);
	ZT_EXPECT_EQ(__zcr_shm_ring_attach(&out, pidfd, in.memfd, in.evfd),
		     0);
	ZT_EXPECT_EQ(zcr_shm_eager_max(&out), 4096 - ZCR_SHM_CELL_HDR);
	for (i = 0; i < 4; i++) {
		c = __zcr_shm_ring_reserve(&out);
		ZT_ASSERT(c);
		c->type = ZCR_SHM_EAGER;
		c->seq = (uint64_t)i;
		__zcr_shm_ring_publish(&out);
	}
	ZT_ASSERT(!__zcr_shm_ring_reserve(&out));	/* full */
	for (i = 0; i < 4; i++) {
		c = __zcr_shm_ring_peek(&in, &err);
		ZT_ASSERT(c);
		ZT_EXPECT_EQ(c->seq, i);
		__zcr_shm_ring_consume(&in);
	}
	ZT_ASSERT(!__zcr_shm_ring_peek(&in, &err));
	ZT_EXPECT_EQ(err, 0);
	/* A producer that claims more cells than the ring has. */
	atomic_store(&in.ctl->tail, in.head + 5);
	ZT_ASSERT(!__zcr_shm_ring_peek(&in, &err));
	ZT_EXPECT_EQ(err, -EBADMSG);
	__zcr_shm_ring_destroy(&out);
	__zcr_shm_ring_destroy(&in);
	close(pidfd);
	ZT_EXPECT_EQ(count_memfds(), 0);
	ZT_EXPECT_EQ(pair_shm_maps(), 0);
}

/*
 * Messages over several cells: every length from one byte to the most
 * cells allowed, at every position of the ring (so across its end), come
 * out as they went in; reserve_n refuses what does not fit.
 */
ZT_TEST(ring_multi_cell_wraps)
{
	struct zcr_shm_ring in, out;
	struct zcr_shm_cell *c;
	unsigned char *src, *dst;
	uint64_t len, k, maxlen;
	int pidfd, err, i, bad = 0;

	ZT_EXPECT_EQ(__zcr_shm_ring_create(&in, 32, 4096), 0);
	pidfd = __zcr_shm_pidfd(getpid());
	ZT_ASSERT(pidfd >= 0);
	ZT_EXPECT_EQ(__zcr_shm_ring_attach(&out, pidfd, in.memfd, in.evfd),
		     0);
	maxlen = zcr_shm_eager_max(&out) +
		 (ZCR_SHM_FRAG_CELLS - 1) * out.cell_size;
	ZT_EXPECT_EQ(zcr_shm_cells_for(&out, 1), 1);
	ZT_EXPECT_EQ(zcr_shm_cells_for(&out, zcr_shm_eager_max(&out)), 1);
	ZT_EXPECT_EQ(zcr_shm_cells_for(&out, zcr_shm_eager_max(&out) + 1), 2);
	ZT_EXPECT_EQ(zcr_shm_cells_for(&out, maxlen), ZCR_SHM_FRAG_CELLS);
	src = malloc(maxlen);
	dst = malloc(maxlen);
	ZT_ASSERT(src && dst);
	for (i = 0, len = 1; len <= maxlen; i++, len += 331) {
		size_t j;

		for (j = 0; j < len; j++)
			src[j] = (unsigned char)(j * 7 + (size_t)i);
		k = zcr_shm_cells_for(&out, len);
		c = __zcr_shm_ring_reserve_n(&out, k);
		ZT_ASSERT(c);
		c->type = ZCR_SHM_EAGER;
		c->len = len;
		__zcr_shm_ring_put(&out, src, len);
		/* The layout: after the header, then whole cells. */
		bad += memcmp(c + 1, src, len < zcr_shm_eager_max(&out) ?
			      len : zcr_shm_eager_max(&out)) != 0;
		if (k > 1)
			bad += memcmp(out.cells + ((out.tail + 1) % out.ncell) *
				      out.cell_size,
				      src + zcr_shm_eager_max(&out), 8) != 0;
		__zcr_shm_ring_publish_n(&out, k);
		c = __zcr_shm_ring_peek(&in, &err);
		ZT_ASSERT(c);
		ZT_EXPECT_EQ(c->len, len);
		ZT_EXPECT_EQ(__zcr_shm_ring_ready(&in), k);
		memset(dst, 0, len);
		__zcr_shm_ring_get(&in, dst, len);
		bad += memcmp(src, dst, len) != 0;
		__zcr_shm_ring_consume_n(&in, k);
	}
	ZT_EXPECT_EQ(bad, 0);
	ZT_ASSERT(i > 150);		/* round the ring many times */
	/* 20 cells taken: 12 free, so 13 do not fit, 12 do. */
	ZT_ASSERT(__zcr_shm_ring_reserve_n(&out, 20));
	__zcr_shm_ring_publish_n(&out, 20);
	ZT_ASSERT(!__zcr_shm_ring_reserve_n(&out, 13));
	ZT_ASSERT(__zcr_shm_ring_reserve_n(&out, 12));
	ZT_ASSERT(!__zcr_shm_ring_reserve_n(&out, 0));
	ZT_ASSERT(!__zcr_shm_ring_reserve_n(&out, 33));
	free(src);
	free(dst);
	__zcr_shm_ring_destroy(&out);
	__zcr_shm_ring_destroy(&in);
	close(pidfd);
}

/* Something that is not a sealed ring is refused at attach. */
ZT_TEST(attach_refuses_non_ring)
{
	struct zcr_shm_ring r;
	int pidfd = __zcr_shm_pidfd(getpid());
	int efd = eventfd(0, 0), p[2];

	ZT_ASSERT(pidfd >= 0 && efd >= 0 && pipe(p) == 0);
	ZT_EXPECT_EQ(__zcr_shm_ring_attach(&r, pidfd, p[0], efd), -EBADMSG);
	ZT_EXPECT_EQ(__zcr_shm_ring_attach(&r, pidfd, 9999, efd), -EBADF);
	close(p[0]);
	close(p[1]);
	close(efd);
	close(pidfd);
}

/*
 * Parent and child, each with an incoming ring, descriptor numbers and
 * pids exchanged over a pipe pair; the child echoes every message back
 * (eager inline, or RTS: pull from the parent, ACK, then RTS its own copy
 * back for the parent to pull).
 */
struct side {
	struct zcr_shm_ring in, out;
	pid_t peer;
	int pidfd;
};

struct hello {
	pid_t pid;
	int memfd, evfd;
};

static void side_open(struct side *s, int rfd, int wfd)
{
	struct hello me, them;

	ZT_EXPECT_EQ(__zcr_shm_ring_create(&s->in, 16, 8192), 0);
	me.pid = getpid();
	me.memfd = s->in.memfd;
	me.evfd = s->in.evfd;
	ZT_ASSERT(write(wfd, &me, sizeof(me)) == sizeof(me));
	ZT_ASSERT(read(rfd, &them, sizeof(them)) == sizeof(them));
	s->peer = them.pid;
	unsetenv("ZCRECV_SHM_PTRACER");		/* the default */
	ZT_EXPECT_EQ(__zcr_shm_allow_peer(them.pid, NULL, 0), 0);
	/* Both have allowed each other before either attaches. */
	ZT_ASSERT(write(wfd, &me, 1) == 1);
	ZT_ASSERT(read(rfd, &them, 1) == 1);
	s->pidfd = __zcr_shm_pidfd(them.pid);
	ZT_ASSERT(s->pidfd >= 0);
	ZT_EXPECT_EQ(__zcr_shm_ring_attach(&s->out, s->pidfd, them.memfd,
					   them.evfd), 0);
}

static void side_close(struct side *s)
{
	__zcr_shm_ring_destroy(&s->in);
	__zcr_shm_ring_destroy(&s->out);
	close(s->pidfd);
}

/* The next cell of our ring, sleeping on the doorbell when empty. */
static struct zcr_shm_cell *next_cell(struct side *s)
{
	struct zcr_shm_cell *c;
	int err;

	for (;;) {
		struct pollfd p[2] = { { s->in.evfd, POLLIN, 0 },
				       { s->pidfd, POLLIN, 0 } };

		c = __zcr_shm_ring_peek(&s->in, &err);
		ZT_EXPECT_EQ(err, 0);
		if (c)
			return c;
		if (!__zcr_shm_ring_sleep_begin(&s->in))
			continue;
		ZT_ASSERT(poll(p, 2, 10000) > 0);
		__zcr_shm_ring_sleep_end(&s->in);
		if (p[1].revents)	/* the peer exited */
			return NULL;
	}
}

static void put(struct side *s, uint32_t type, const void *buf, size_t len,
		uint64_t seq, int status)
{
	struct zcr_shm_cell *c;

	while (!(c = __zcr_shm_ring_reserve(&s->out)))
		sched_yield();
	c->type = type;
	c->len = len;
	c->seq = seq;
	c->status = status;
	c->addr = (uintptr_t)buf;
	c->cookie = seq;
	if (type == ZCR_SHM_EAGER)
		memcpy(c + 1, buf, len);
	__zcr_shm_ring_publish(&s->out);
}

/* Receive one message into buf (pull or copy); returns its length. */
static long get(struct side *s, void *buf, size_t size)
{
	struct zcr_shm_cell *c = next_cell(s);
	long len;
	int ret = 0;

	if (!c)
		return -ESRCH;
	len = (long)c->len;
	ZT_ASSERT(c->len <= size);
	if (c->type == ZCR_SHM_EAGER) {
		memcpy(buf, c + 1, c->len);
	} else {
		ZT_EXPECT_EQ(c->type, ZCR_SHM_RTS);
		ret = __zcr_shm_pull(s->peer, buf, c->addr, c->len);
		put(s, TEST_ACK, NULL, 0, c->cookie, ret);
	}
	__zcr_shm_ring_consume(&s->in);
	return ret ? ret : len;
}

/* Send: eager if it fits a cell, else RTS and wait for its ACK. */
static int send_msg(struct side *s, const void *buf, size_t len,
		    uint64_t seq)
{
	struct zcr_shm_cell *c;
	int st;

	if (len <= zcr_shm_eager_max(&s->out)) {
		put(s, ZCR_SHM_EAGER, buf, len, seq, 0);
		return 0;
	}
	put(s, ZCR_SHM_RTS, buf, len, seq, 0);
	c = next_cell(s);
	if (!c)
		return -ESRCH;
	ZT_EXPECT_EQ(c->type, TEST_ACK);
	ZT_EXPECT_EQ(c->cookie, seq);
	st = c->status;
	__zcr_shm_ring_consume(&s->in);
	return st;
}

#define MAXSZ (4u << 20)

static void child_echo(int rfd, int wfd, int die_after)
{
	struct side s;
	char *b = malloc(MAXSZ);
	long n;
	int i;

	side_open(&s, rfd, wfd);
	for (i = 0;; i++) {
		n = get(&s, b, MAXSZ);
		if (n < 0)
			_exit(3);
		if (i == die_after) {
			/* Announce a big reply, then die before it is pulled. */
			put(&s, ZCR_SHM_RTS, b, MAXSZ, 1, 0);
			usleep(20000);
			kill(getpid(), SIGKILL);
		}
		if (send_msg(&s, b, (size_t)n, (uint64_t)i + 1) < 0)
			_exit(4);
	}
}

static pid_t fork_echo(struct side *s, int die_after)
{
	int a[2], b[2];
	pid_t pid;

	ZT_ASSERT(pipe(a) == 0 && pipe(b) == 0);
	pid = fork();
	ZT_ASSERT(pid >= 0);
	if (pid == 0) {
		close(a[1]);
		close(b[0]);
		child_echo(a[0], b[1], die_after);
	}
	close(a[0]);
	close(b[1]);
	side_open(s, b[0], a[1]);
	close(a[1]);
	close(b[0]);
	return pid;
}

ZT_TEST(pingpong_sizes_verified)
{
	static const size_t sizes[] = { 0, 1, 7, 64, 4000, 8192 - 64, 8129,
					65536, 65537, 1 << 20, (1 << 20) + 5,
					MAXSZ };
	char *sb = malloc(MAXSZ), *rb = malloc(MAXSZ);
	struct side s;
	unsigned int i, rep;
	int status;
	pid_t pid;

	pid = fork_echo(&s, -1);
	for (rep = 0; rep < 3; rep++)
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			uint32_t seed = rep * 100 + i;
			size_t len = sizes[i];

			pattern_fill(sb, len, seed);
			memset(rb, 0xee, len);
			ZT_EXPECT_EQ(send_msg(&s, sb, len, seed), 0);
			ZT_EXPECT_EQ(get(&s, rb, MAXSZ), (long)len);
			ZT_EXPECT_EQ(pattern_bad(rb, len, seed), 0);
		}
	kill(pid, SIGTERM);
	ZT_EXPECT_EQ(waitpid(pid, &status, 0), pid);
	side_close(&s);
	ZT_EXPECT_EQ(count_memfds(), 0);
	ZT_EXPECT_EQ(pair_shm_maps(), 0);
	ZT_EXPECT_EQ(count_dev_shm(), 0);
	free(sb);
	free(rb);
}

/*
 * The child announces a 4 MiB message and is killed before the parent
 * pulls it: the pull fails with a clear errno (the process is gone), the
 * pidfd reports the death, nothing of the child's segment stays.
 */
ZT_TEST(peer_killed_mid_message)
{
	char *sb = malloc(MAXSZ), *rb = malloc(MAXSZ);
	struct zcr_shm_cell *c;
	struct pollfd p;
	struct side s;
	int status, ret;
	pid_t pid;

	pid = fork_echo(&s, 0);
	pattern_fill(sb, 100, 1);
	ZT_EXPECT_EQ(send_msg(&s, sb, 100, 1), 0);
	c = next_cell(&s);
	ZT_ASSERT(c && c->type == ZCR_SHM_RTS);
	ZT_EXPECT_EQ(waitpid(pid, &status, 0), pid);
	ZT_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ret = __zcr_shm_pull(s.peer, rb, c->addr, c->len);
	ZT_ASSERT_MSG(ret == -ESRCH, "pull from a dead peer: %d", ret);
	p.fd = s.pidfd;
	p.events = POLLIN;
	ZT_EXPECT_EQ(poll(&p, 1, 0), 1);
	side_close(&s);
	ZT_EXPECT_EQ(count_memfds(), 0);
	ZT_EXPECT_EQ(pair_shm_maps(), 0);
	ZT_EXPECT_EQ(count_dev_shm(), 0);
	free(sb);
	free(rb);
}

/* Pulling from a range the peer has not mapped is -EFAULT, not a crash. */
ZT_TEST(pull_unmapped_range)
{
	char buf[64];
	void *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);

	ZT_ASSERT(p != MAP_FAILED);
	ZT_EXPECT_EQ(__zcr_shm_pull(getpid(), buf, (uintptr_t)p, 64),
		     -EFAULT);
	munmap(p, 4096);
}

/*
 * Whom we let read us under Yama (shm.h, __zcr_shm_ptracer_decide()):
 * nothing to do without Yama, at scope 0, 2 or 3, for our parent or for
 * the process named already; at scope 1 any (the default) lets any
 * process read us from the first peer on, peer names the first peer and
 * refuses a second one.
 */
ZT_TEST(ptracer_decisions)
{
	const enum zcr_shm_ptracer_mode P = ZCR_SHM_PTRACER_MODE_PEER,
		Y = ZCR_SHM_PTRACER_MODE_ANY;
	static const struct {
		bool parent;
		pid_t named;
		enum zcr_shm_ptracer_mode mode;
		enum zcr_shm_ptracer want;
	} at1[] = {
		/* Our parent, the one named, or any set already. */
		{ true, 0, ZCR_SHM_PTRACER_MODE_ANY, ZCR_SHM_PTRACER_KEEP },
		{ true, 7, ZCR_SHM_PTRACER_MODE_PEER, ZCR_SHM_PTRACER_KEEP },
		{ false, 10, ZCR_SHM_PTRACER_MODE_PEER, ZCR_SHM_PTRACER_KEEP },
		{ false, ZCR_SHM_PTRACER_ANY_PID, ZCR_SHM_PTRACER_MODE_PEER,
		  ZCR_SHM_PTRACER_KEEP },
		{ false, ZCR_SHM_PTRACER_ANY_PID, ZCR_SHM_PTRACER_MODE_ANY,
		  ZCR_SHM_PTRACER_KEEP },
		/* The first peer. */
		{ false, 0, ZCR_SHM_PTRACER_MODE_ANY, ZCR_SHM_PTRACER_SET_ANY },
		{ false, 0, ZCR_SHM_PTRACER_MODE_PEER, ZCR_SHM_PTRACER_SET_PID },
		/* A second one. */
		{ false, 7, ZCR_SHM_PTRACER_MODE_PEER, ZCR_SHM_PTRACER_REFUSE },
	};
	unsigned int i;
	int s;

	for (s = -1; s <= 3; s++) {
		if (s == 1)
			continue;
		ZT_EXPECT_EQ(__zcr_shm_ptracer_decide(s, false, 0, 10, Y),
			     ZCR_SHM_PTRACER_KEEP);
		ZT_EXPECT_EQ(__zcr_shm_ptracer_decide(s, false, 7, 10, P),
			     ZCR_SHM_PTRACER_KEEP);
	}
	for (i = 0; i < sizeof(at1) / sizeof(at1[0]); i++)
		ZT_ASSERT_MSG(__zcr_shm_ptracer_decide(1, at1[i].parent,
						       at1[i].named, 10,
						       at1[i].mode) ==
			      at1[i].want, "scope 1, case %u", i);
}

/* ZCRECV_SHM_PTRACER: any (or unset, or empty), peer; else -EINVAL, and
 * __zcr_shm_allow_peer() then says why. */
ZT_TEST(ptracer_mode_from_the_environment)
{
	static const struct {
		const char *v;
		int ret;
		enum zcr_shm_ptracer_mode m;
	} cases[] = {
		{ NULL, 0, ZCR_SHM_PTRACER_MODE_ANY },
		{ "", 0, ZCR_SHM_PTRACER_MODE_ANY },
		{ "any", 0, ZCR_SHM_PTRACER_MODE_ANY },
		{ "peer", 0, ZCR_SHM_PTRACER_MODE_PEER },
		{ "auto", -EINVAL, 0 },
		{ "ANY", -EINVAL, 0 },
		{ "1", -EINVAL, 0 },
	};
	enum zcr_shm_ptracer_mode m;
	char why[96] = "";
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].v)
			setenv("ZCRECV_SHM_PTRACER", cases[i].v, 1);
		else
			unsetenv("ZCRECV_SHM_PTRACER");
		m = (enum zcr_shm_ptracer_mode)-1;
		ZT_EXPECT_EQ(__zcr_shm_ptracer_mode(&m), cases[i].ret);
		if (!cases[i].ret)
			ZT_EXPECT_EQ(m, cases[i].m);
	}
	ZT_EXPECT_EQ(__zcr_shm_allow_peer(getppid(), why, sizeof(why)),
		     -EINVAL);
	ZT_ASSERT_MSG(strstr(why, "ZCRECV_SHM_PTRACER=1"), "why: %s", why);
	unsetenv("ZCRECV_SHM_PTRACER");
}
