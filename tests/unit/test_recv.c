// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * test_recv.c - the receive data path: early arrival (staged at the
 * predicted page offset, then remapped or copied) and posted-first (landed
 * in the user buffer); hit and miss (a deliberately wrong prediction copies
 * and still delivers the right bytes); partial head and tail pages at many
 * offsets; back-pressure (a slow receiver drops nothing and the pool stays
 * under its limit); a peer disconnecting mid-message; many peers; the
 * progress thread. Runs on the host (uffd-move or copy) and in the VMs
 * (tests/vm.list, with zcrecv.ko), where the statistics must show the remap
 * path taken (pages_remapped > 0) whenever the backend is not copy.
 * Run: build/tests/unit/test_recv [name]; ZCRECV_BACKEND=copy|uffd|kmod.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "base/mem.h"
#include "zcr_pair.h"

static const struct zcr_ctx_attr remap_attr = {
	.policy = ZCRECV_POLICY_REMAP,
};

/* Send len bytes (seed), wait until staged, then receive into buf. */
static int early_one(struct pair *p, char *sb, char *buf, size_t len,
		     uint32_t seed, struct zcr_status *st)
{
	uint64_t before = pair_stats(p->c[0]).early;
	struct zcr_req *s, *r;
	int ret;

	pattern_fill(sb, len, seed);
	ZT_EXPECT_EQ(zcr_isend(p->to0[1], sb, len, 1, &s), 0);
	PAIR_PUMP_UNTIL(p, pair_stats(p->c[0]).early == before + 1);
	PAIR_PUMP_UNTIL(p, zcr_test(s, NULL) != 0);
	ZT_EXPECT_EQ(zcr_irecv(p->c[0], buf, len, 1, 1, &r), 0);
	PAIR_PUMP_UNTIL(p, (ret = zcr_test(r, st)) != 0);
	return ret;
}

/* n early arrivals of len bytes into buf, seeds seed.., each checked. */
static void early_n(struct pair *p, char *sb, char *buf, size_t len,
		    uint32_t seed, int n)
{
	struct zcr_status st;
	int i;

	for (i = 0; i < n; i++) {
		ZT_EXPECT_EQ(early_one(p, sb, buf, len, seed + (uint32_t)i,
				       &st), 1);
		ZT_EXPECT_EQ(pattern_bad(buf, len, seed + (uint32_t)i), 0);
	}
}

static void print_stats(const char *what, struct zcr_stats *st)
{
	printf("# %s: backend %s policy %s predictor %s: early %llu posted "
	       "%llu hits %llu misses %llu remaps %llu pages %llu copied %llu "
	       "fallbacks %llu min_pages %llu copy %.0f ns/page remap %.0f "
	       "ns/page\n", what, st->backend_name, zcr_policy_name(st->policy),
	       st->predictor, (unsigned long long)st->early,
	       (unsigned long long)st->posted, (unsigned long long)st->hits,
	       (unsigned long long)st->misses, (unsigned long long)st->remaps,
	       (unsigned long long)st->pages_remapped,
	       (unsigned long long)st->bytes_copied,
	       (unsigned long long)st->remap_fallbacks,
	       (unsigned long long)st->min_remap_pages, st->copy_ns_per_page,
	       st->remap_ns_per_page);
}

/*
 * n early arrivals of 64 pages into one zcr_mem buffer under attr, each
 * checked byte for byte; returns rank 0's statistics.
 */
static struct zcr_stats early_series(const struct zcr_ctx_attr *attr, int n)
{
	size_t len = 64 * 4096;
	struct zcr_status st;
	struct zcr_stats s;
	char *sb, *buf;
	struct pair p;
	int i;

	pair_open(&p, 2, attr);
	sb = malloc(len);
	ZT_EXPECT_EQ(zcr_mem_alloc(p.c[0], len, (void **)&buf), 0);
	memset(buf, 0, len);
	for (i = 0; i < n; i++) {
		ZT_EXPECT_EQ(early_one(&p, sb, buf, len, (uint32_t)i, &st), 1);
		ZT_EXPECT_EQ(st.len, len);
		ZT_EXPECT_EQ(pattern_bad(buf, len, (uint32_t)i), 0);
	}
	s = pair_stats(p.c[0]);
	zcr_mem_free(p.c[0], buf);
	free(sb);
	pair_close(&p);
	return s;
}

/* Early arrivals into zcr_mem memory: hits, and remapped pages. */
ZT_TEST(early_hit_remaps)
{
	struct zcr_stats s = early_series(&remap_attr, 6);

	print_stats("early_hit_remaps", &s);
	ZT_EXPECT_EQ(s.early, 6);
	/* The first receive teaches the predictor; the others are hits. */
	ZT_ASSERT(s.hits >= 5);
	/* With the module loaded, zcr_mem memory takes the kmod path. */
	if (access("/dev/zcrecv", F_OK) == 0)
		ZT_EXPECT_EQ(s.backend, ZCRECV_BACKEND_KMOD);
	if (s.backend == ZCRECV_BACKEND_COPY) {
		ZT_EXPECT_EQ(s.pages_remapped, 0);
		printf("# no remap backend here: copy path only\n");
	} else {
		ZT_ASSERT(s.pages_remapped >= 5 * 64);
		ZT_ASSERT(s.remaps >= 5);
	}
}

/* Four early arrivals into buf (memory the caller chose), each checked. */
static struct zcr_stats early_into(const char *what, char *buf, size_t len)
{
	struct zcr_stats s;
	struct pair p;
	char *sb;

	pair_open(&p, 2, &remap_attr);
	sb = malloc(len);
	early_n(&p, sb, buf, len, 40, 4);
	s = pair_stats(p.c[0]);
	print_stats(what, &s);
	free(sb);
	pair_close(&p);
	return s;
}

/* Plain malloc memory: uffd-move where possible, else copy; always right. */
ZT_TEST(early_malloc_buffer)
{
	size_t len = 32 * 4096 + 100;
	char *buf = malloc(len);

	early_into("early_malloc_buffer", buf, len);
	free(buf);
}

/*
 * Two receive buffers inside one mapping, the second across the 2 MiB
 * boundary where registering the first one's 2 MiB units split the
 * mapping: landings into the second remap too (a move's source must lie
 * in one VMA; it used to fall back to a copy there for ever).
 */
ZT_TEST(buffer_across_a_neighbours_registration)
{
	size_t len = 1 << 20, huge = 2 << 20;
	struct zcr_stats s0, s1;
	struct pair p;
	char *map, *r, *a, *b, *sb;

	map = mmap(NULL, 4 * huge, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ZT_ASSERT(map != MAP_FAILED);
	r = (char *)(((uintptr_t)map + huge - 1) & ~(uintptr_t)(huge - 1));
	/* a's 2 MiB units are [r + 2 MiB, r + 4 MiB); b is across r + 2 MiB */
	a = r + huge + len / 2 + 16 * 4096;
	b = r + huge - len / 2;
	memset(map, 1, 4 * huge);
	madvise(map, 4 * huge, MADV_NOHUGEPAGE);
	pair_open(&p, 2, &remap_attr);
	sb = malloc(len);
	early_n(&p, sb, a, len, 60, 2);
	s0 = pair_stats(p.c[0]);
	early_n(&p, sb, b, len, 70, 4);
	ZT_EXPECT_EQ(pattern_bad(a, len, 61), 0);
	s1 = pair_stats(p.c[0]);
	print_stats("buffer_across_a_neighbours_registration", &s1);
	free(sb);
	pair_close(&p);
	munmap(map, 4 * huge);
	if (s0.pages_remapped == 0)
		ZT_SKIP("no remap into plain memory here (backend %s)",
			s1.backend_name);
	/* the first landing into b teaches the predictor */
	ZT_EXPECT_EQ(s1.remap_fallbacks, s0.remap_fallbacks);
	ZT_ASSERT(s1.pages_remapped - s0.pages_remapped >= 3 * (len / 4096));
}

/* AnonHugePages of the mapping holding p, in KiB (-1: not found). */
static long huge_kib(const void *p)
{
	unsigned long lo, hi, kib;
	char line[256];
	bool in = false;
	long got = -1;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') &&
		    strchr(line, ' ') > strchr(line, '-')) {
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
			continue;
		}
		if (in && sscanf(line, "AnonHugePages: %lu kB", &kib) == 1) {
			got = (long)kib;
			break;
		}
	}
	fclose(f);
	return got;
}

/*
 * A 1 MiB zcr_mem_alloc block under uffd-move (THP not "never") is one
 * 2 MiB unit: early messages that fill it move the whole unit (its unused
 * half along), so the block stays one huge page, and every byte of the
 * message is right. A message that stops short of the block's end, or
 * starts after its start, leaves the block's other bytes alone; a block
 * whose size is not a page multiple moves its last partial page whole.
 */
ZT_TEST(a_message_filling_a_block_moves_its_whole_unit)
{
	size_t len = 1 << 20, pg = 4096, odd = len + 100;
	struct zcr_stats s0, s1;
	long before, after;
	char *sb, *buf, *buf2;
	struct pair p;
	int i;

	pair_open(&p, 2, &remap_attr);
	sb = malloc(odd);
	ZT_EXPECT_EQ(zcr_mem_alloc(p.c[0], len, (void **)&buf), 0);
	memset(buf, 0x5a, len);
	before = huge_kib(buf);
	early_n(&p, sb, buf, len, 80, 4);
	s0 = pair_stats(p.c[0]);
	after = huge_kib(buf);
	/* Short of the end: the last page keeps its bytes. */
	memset(buf + len - pg, 0x33, pg);
	early_n(&p, sb, buf, len - pg, 90, 2);
	for (i = 0; i < (int)pg; i++)
		ZT_ASSERT((unsigned char)buf[len - pg + i] == 0x33);
	/* After the start, to the end: the first page keeps its bytes. */
	memset(buf, 0x44, pg);
	early_n(&p, sb, buf + pg, len - pg, 100, 3);
	for (i = 0; i < (int)pg; i++)
		ZT_ASSERT((unsigned char)buf[i] == 0x44);
	/* A block of 1 MiB + 100 bytes, filled: its last page is partial. */
	ZT_EXPECT_EQ(zcr_mem_alloc(p.c[0], odd, (void **)&buf2), 0);
	memset(buf2, 0x5a, odd);
	early_n(&p, sb, buf2, odd, 110, 4);
	s1 = pair_stats(p.c[0]);
	print_stats("a_message_filling_a_block_moves_its_whole_unit", &s1);
	printf("# AnonHugePages of the block: %ld kB before, %ld kB after\n",
	       before, after);
	zcr_mem_free(p.c[0], buf);
	zcr_mem_free(p.c[0], buf2);
	free(sb);
	pair_close(&p);
	if (s1.backend != ZCRECV_BACKEND_UFFD)
		ZT_SKIP("backend %s: no 2 MiB units for 1 MiB blocks",
			s1.backend_name);
	ZT_EXPECT_EQ(s0.remap_fallbacks, 0);
	ZT_ASSERT(s0.pages_remapped >= 3 * (len / pg));
	ZT_EXPECT_EQ(s1.remap_fallbacks, 0);
	if (!__zcr_thp_enabled())
		ZT_SKIP("THP is never here: 1 MiB blocks are 4 KiB pages");
	ZT_ASSERT(((uintptr_t)buf & ((2u << 20) - 1)) == 0);
	if (before < 2048)
		ZT_SKIP("no transparent huge page for the block here");
	/* moved 4 KiB at a time, the huge page would have been split */
	ZT_EXPECT_EQ(after, 2048);
}

/* Minor page faults of this process so far (a huge page's counts one). */
static long minflt(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return u.ru_minflt;
}

/*
 * Early messages into a block of huge pages at 1 MiB into it: the head
 * of each (up to the first 2 MiB boundary) is copied, the whole units
 * after it move. The staging slot that comes back from an exchange must
 * still hold the units the message was not moved from: had it lost its
 * head unit, the next message would fault a new huge page in there (one
 * fault and 2 MiB zeroed per message, on the path that lands it). So
 * after a few landings more landings fault no page at all, here or in
 * the block, and every message arrives intact.
 */
ZT_TEST(landings_keep_the_slot_whole)
{
	size_t blk = 8 << 20, len = (4 << 20) + (512 << 10), at = 1 << 20;
	struct zcr_stats s0, s1;
	long f0, f1;
	char *sb, *buf;
	struct pair p;
	int n = 12;

	pair_open(&p, 2, &remap_attr);
	sb = malloc(len);
	ZT_ASSERT(sb);
	memset(sb, 1, len);
	ZT_EXPECT_EQ(zcr_mem_alloc(p.c[0], blk, (void **)&buf), 0);
	memset(buf, 0x5a, blk);
	early_n(&p, sb, buf + at, len, 200, 4);
	s0 = pair_stats(p.c[0]);
	f0 = minflt();
	early_n(&p, sb, buf + at, len, 300, n);
	f1 = minflt();
	s1 = pair_stats(p.c[0]);
	print_stats("landings_keep_the_slot_whole", &s1);
	printf("# %d landings: %ld minor faults\n", n, f1 - f0);
	zcr_mem_free(p.c[0], buf);
	free(sb);
	pair_close(&p);
	if (s1.backend != ZCRECV_BACKEND_UFFD)
		ZT_SKIP("backend %s: no 2 MiB slots", s1.backend_name);
	if (!__zcr_thp_enabled())
		ZT_SKIP("THP is never here: no huge pages to keep");
	ZT_EXPECT_EQ(s1.remap_fallbacks, 0);
	ZT_ASSERT(s1.remaps - s0.remaps == (uint64_t)n);
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
	ZT_SKIP("the sanitizer's shadow memory takes page faults of its own");
#endif
	/* a stray allocation may fault; a fault per landing may not */
	ZT_ASSERT_MSG(f1 - f0 < n / 2, "%ld faults in %d landings",
		      f1 - f0, n);
}

ZT_TEST(posted_first)
{
	size_t len = 1 << 20;
	struct zcr_req *s, *r;
	struct zcr_status st;
	struct zcr_stats stt;
	char *sb, *buf;
	struct pair p;

	pair_open(&p, 2, &remap_attr);
	sb = malloc(len);
	buf = malloc(len);
	pattern_fill(sb, len, 77);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], buf, len, 1, 1, &r), 0);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb, len, 1, &s), 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(r, &st) != 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
	ZT_EXPECT_EQ(pattern_bad(buf, len, 77), 0);
	stt = pair_stats(p.c[0]);
	ZT_EXPECT_EQ(stt.posted, 1);
	ZT_EXPECT_EQ(stt.early, 0);
	ZT_EXPECT_EQ(stt.bytes_copied, 0);
	free(sb);
	free(buf);
	pair_close(&p);
}

/*
 * The predictor learns offset 0, the receive comes at another offset: the
 * message was staged at the wrong offset, is copied, and is intact.
 */
ZT_TEST(miss_copies)
{
	size_t len = 16 * 4096;
	struct zcr_status st;
	struct zcr_stats s;
	char *sb, *buf;
	struct pair p;
	int i;

	pair_open(&p, 2, &remap_attr);
	sb = malloc(len);
	ZT_EXPECT_EQ(zcr_mem_alloc(p.c[0], len + 8192, (void **)&buf), 0);
	for (i = 0; i < 3; i++)
		ZT_EXPECT_EQ(early_one(&p, sb, buf, len, (uint32_t)i, &st), 1);
	s = pair_stats(p.c[0]);
	ZT_EXPECT_EQ(early_one(&p, sb, buf + 1000, len, 99, &st), 1);
	ZT_EXPECT_EQ(pattern_bad(buf + 1000, len, 99), 0);
	ZT_EXPECT_EQ(pair_stats(p.c[0]).misses, s.misses + 1);
	ZT_EXPECT_EQ(pair_stats(p.c[0]).pages_remapped, s.pages_remapped);
	zcr_mem_free(p.c[0], buf);
	free(sb);
	pair_close(&p);
}

/*
 * Head and tail pages at many offsets: the buffer starts at offset o and
 * the message ends at offset (o + len) mod page, which covers o = 0, 1,
 * the page end and a stride in between; every byte around the message is
 * checked untouched.
 */
ZT_TEST(head_tail_offsets)
{
	size_t pg = 4096, area = 8 * pg;
	static const size_t extra[] = { 0, 1, 2047, 4095 };
	struct zcr_status st;
	struct zcr_stats s;
	char *sb, *buf;
	struct pair p;
	size_t o, e;
	uint32_t seed = 1;

	pair_open(&p, 2, &remap_attr);
	sb = malloc(area);
	ZT_EXPECT_EQ(zcr_mem_alloc(p.c[0], area + pg, (void **)&buf), 0);
	for (o = 0; o < pg; o += (o < 8 || o > pg - 8) ? 1 : 251) {
		for (e = 0; e < sizeof(extra) / sizeof(extra[0]); e++) {
			size_t len = 4 * pg + extra[e];
			int i;

			/* Twice at one offset: the second is a predicted hit. */
			for (i = 0; i < 2; i++, seed++) {
				memset(buf, 0x5a, area + pg);
				ZT_EXPECT_EQ(early_one(&p, sb, buf + o, len,
						       seed, &st), 1);
				ZT_ASSERT_MSG(!pattern_bad(buf + o, len, seed),
					      "offset %zu len %zu: byte %zu",
					      o, len,
					      pattern_bad(buf + o, len, seed));
				ZT_ASSERT(o == 0 ||
					  (unsigned char)buf[o - 1] == 0x5a);
				ZT_ASSERT((unsigned char)buf[o + len] == 0x5a);
			}
		}
	}
	s = pair_stats(p.c[0]);
	print_stats("head_tail_offsets", &s);
	ZT_ASSERT(s.hits > s.misses);
	if (s.backend != ZCRECV_BACKEND_COPY)
		ZT_ASSERT(s.pages_remapped > 0);
	zcr_mem_free(p.c[0], buf);
	free(sb);
	pair_close(&p);
}

/*
 * A slow receiver: 16 messages of 64 KiB against a 128 KiB pool. Senders
 * are held back by TCP; the pool never exceeds its limit; all messages
 * arrive intact and in order.
 */
ZT_TEST(back_pressure)
{
	struct zcr_ctx_attr a = { .staging_bytes = 128 << 10 };
	size_t len = 64 << 10;
	struct zcr_req *s[16], *r;
	struct zcr_status st;
	struct zcr_stats stt;
	char *sb, *buf;
	struct pair p;
	int i;

	pair_open(&p, 2, &a);
	sb = malloc(16 * len);
	buf = malloc(len);
	for (i = 0; i < 16; i++) {
		pattern_fill(sb + i * len, len, (uint32_t)i);
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb + i * len, len, 3, &s[i]),
			     0);
	}
	/* Let everything that can arrive arrive. */
	for (i = 0; i < 2000; i++)
		pair_pump(&p);
	stt = pair_stats(p.c[0]);
	ZT_ASSERT(stt.stalls > 0);
	ZT_ASSERT(stt.early < 16);
	ZT_ASSERT(stt.staging_peak <= (128 << 10));
	for (i = 0; i < 16; i++) {
		ZT_EXPECT_EQ(zcr_irecv(p.c[0], buf, len, 1, 3, &r), 0);
		PAIR_PUMP_UNTIL(&p, zcr_test(r, &st) != 0);
		ZT_EXPECT_EQ(st.error, 0);
		ZT_EXPECT_EQ(pattern_bad(buf, len, (uint32_t)i), 0);
	}
	for (i = 0; i < 16; i++)
		PAIR_PUMP_UNTIL(&p, zcr_test(s[i], NULL) != 0);
	stt = pair_stats(p.c[0]);
	ZT_ASSERT(stt.staging_peak <= (128 << 10));
	ZT_EXPECT_EQ(stt.msgs_recv, 16);
	free(sb);
	free(buf);
	pair_close(&p);
}

/*
 * Small messages are read ahead (TCP: one recv takes the next headers and
 * payloads with it), so a stalled message may sit in the library while
 * the socket is empty and poll(2) has nothing to announce. A receive
 * posted later must still complete in zcr_wait_timeout() alone, with the
 * sender doing nothing: every message intact, in order, none timing out.
 */
ZT_TEST(read_ahead_messages_wait_out_a_stall)
{
	struct zcr_ctx_attr a = { .staging_bytes = 4 << 10 };
	enum { N = 12, LEN = 1000 };
	char *sb = malloc(N * LEN), *buf = malloc(LEN);
	struct zcr_req *s[N], *r;
	struct zcr_status st;
	double t0, worst = 0;
	struct pair p;
	int i;

	unsetenv("ZCRECV_SHM");
	pair_open(&p, 2, &a);
	for (i = 0; i < N; i++) {
		pattern_fill(sb + i * LEN, LEN, (uint32_t)i);
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb + i * LEN, LEN, i, &s[i]),
			     0);
	}
	for (i = 0; i < N; i++)
		PAIR_PUMP_UNTIL(&p, zcr_test(s[i], NULL) != 0);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).stalls > 0);
	for (i = 0; i < N; i++) {
		memset(buf, 0, LEN);
		ZT_EXPECT_EQ(zcr_irecv(p.c[0], buf, LEN, 1, i, &r), 0);
		t0 = pair_now();
		ZT_ASSERT_MSG(zcr_wait_timeout(r, &st, 5000) == 0,
			      "message %d did not complete", i);
		t0 = pair_now() - t0;
		if (t0 > worst)
			worst = t0;
		ZT_EXPECT_EQ(st.error, 0);
		ZT_EXPECT_EQ(st.len, LEN);
		ZT_EXPECT_EQ(pattern_bad(buf, LEN, (uint32_t)i), 0);
	}
	ZT_EXPECT_EQ(pair_stats(p.c[0]).msgs_recv, N);
	/*
	 * A pass that only fed read-ahead bytes is work: the wait must not
	 * sleep a poll slice (100 ms) with its request done.
	 */
	ZT_ASSERT_MSG(worst < 0.06, "a wait took %.1f ms", worst * 1e3);
	free(sb);
	free(buf);
	pair_close(&p);
}

/*
 * A message with no payload whose header ends a read: it completes in the
 * pass that read its header, not in a later one that finds the socket
 * empty (its waiter would sleep a poll slice with the request done).
 */
ZT_TEST(zero_length_messages_complete_in_their_pass)
{
	struct zcr_req *s, *r;
	struct zcr_status st;
	double t0, worst = 0;
	struct pair p;
	char b = 0;
	int i;

	unsetenv("ZCRECV_SHM");
	pair_open(&p, 2, NULL);
	for (i = 0; i < 10; i++) {
		ZT_EXPECT_EQ(zcr_irecv(p.c[0], &b, 0, 1, i, &r), 0);
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], &b, 0, i, &s), 0);
		PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
		usleep(2000);	/* the header waits in rank 0's socket */
		t0 = pair_now();
		ZT_ASSERT(zcr_wait_timeout(r, &st, 5000) == 0);
		t0 = pair_now() - t0;
		if (t0 > worst)
			worst = t0;
		ZT_EXPECT_EQ(st.error, 0);
		ZT_EXPECT_EQ(st.len, 0);
	}
	ZT_ASSERT_MSG(worst < 0.06, "a wait took %.1f ms", worst * 1e3);
	pair_close(&p);
}

/*
 * A peer (rank 5, a raw socket) dies in the middle of a message: the
 * receive waiting for it fails with -ECONNRESET, nothing partial is
 * delivered, and rank 1 goes on working.
 */
static void disconnect(bool posted)
{
	unsigned char h[32], junk[1000];
	struct zcr_req *r, *s;
	struct zcr_status st;
	struct zcr_ep *ep;
	struct pair p;
	char buf[4096];
	int fd, ret;

	pair_open(&p, 2, NULL);
	fd = raw_connect(&p);
	raw_hello(fd, 5);
	PAIR_PUMP_UNTIL(&p, zcr_ep_accept(p.c[0], 0, &ep) == 0);
	ZT_EXPECT_EQ(zcr_ep_rank(ep), 5);
	if (posted)
		ZT_EXPECT_EQ(zcr_irecv(p.c[0], buf, sizeof(buf), 5, 0, &r), 0);
	raw_hdr(h, RAW_MAGIC, 1, 2, 32, 5, 0, 100000, 1);
	memset(junk, 1, sizeof(junk));
	ZT_ASSERT(write(fd, h, 32) == 32);
	ZT_ASSERT(write(fd, junk, sizeof(junk)) == sizeof(junk));
	close(fd);
	PAIR_PUMP_UNTIL(&p, zcr_ep_error(ep, NULL) != 0);
	ZT_EXPECT_EQ(zcr_ep_error(ep, NULL), -ECONNRESET);
	if (!posted) {
		/*
		 * The cut message was dropped: a receive for rank 5 (which
		 * may connect again: rank 0 listens) gets nothing.
		 */
		ZT_EXPECT_EQ(zcr_irecv(p.c[0], buf, sizeof(buf), 5, 0, &r),
			     0);
		pair_pump(&p);
		ZT_EXPECT_EQ(zcr_test(r, &st), 0);
		ZT_EXPECT_EQ(zcr_cancel(r), 0);
		ZT_EXPECT_EQ(zcr_test(r, &st), -ECANCELED);
		ZT_EXPECT_EQ(pair_stats(p.c[0]).early, 1);
	} else {
		PAIR_PUMP_UNTIL(&p, (ret = zcr_test(r, &st)) != 0);
		ZT_EXPECT_EQ(ret, -ECONNRESET);
	}
	ZT_EXPECT_EQ(pair_stats(p.c[0]).msgs_recv, 0);
	pattern_fill(buf, 4000, 9);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], buf, 4000, 0, &s), 0);
	memset(buf, 0, sizeof(buf));
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], buf, sizeof(buf), ZCRECV_ANY_SOURCE, 0,
			       &r), 0);
	PAIR_PUMP_UNTIL(&p, (ret = zcr_test(r, &st)) != 0);
	ZT_EXPECT_EQ(ret, 1);
	ZT_EXPECT_EQ(st.source, 1);
	ZT_EXPECT_EQ(pattern_bad(buf, 4000, 9), 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
	pair_close(&p);
}

ZT_TEST(disconnect_mid_message_posted)
{
	disconnect(true);
}

ZT_TEST(disconnect_mid_message_early)
{
	disconnect(false);
}

/* Eight peers, two messages each, received with ANY_SOURCE. */
ZT_TEST(many_peers)
{
	int n = 9, i, count[9] = { 0 };
	struct zcr_req *s[2 * 9];
	static char sb[9][2][5000], r[5000];
	struct zcr_status st;
	struct pair p;

	pair_open(&p, n, NULL);
	for (i = 1; i < n; i++) {
		pattern_fill(sb[i][0], 5000, (uint32_t)i * 10);
		pattern_fill(sb[i][1], 5000, (uint32_t)i * 10 + 1);
		ZT_EXPECT_EQ(zcr_isend(p.to0[i], sb[i][0], 5000, 2, &s[2 * i]),
			     0);
		ZT_EXPECT_EQ(zcr_isend(p.to0[i], sb[i][1], 5000, 2,
				       &s[2 * i + 1]), 0);
	}
	for (i = 0; i < 2 * (n - 1); i++) {
		struct zcr_req *rq;

		ZT_EXPECT_EQ(zcr_irecv(p.c[0], r, sizeof(r), ZCRECV_ANY_SOURCE,
				       2, &rq), 0);
		PAIR_PUMP_UNTIL(&p, zcr_test(rq, &st) != 0);
		ZT_ASSERT(st.source >= 1 && st.source < n);
		/* Per source, in order. */
		ZT_EXPECT_EQ(pattern_bad(r, 5000, (uint32_t)st.source * 10 +
				     (uint32_t)count[st.source]), 0);
		count[st.source]++;
	}
	for (i = 1; i < n; i++) {
		ZT_EXPECT_EQ(count[i], 2);
		PAIR_PUMP_UNTIL(&p, zcr_test(s[2 * i], NULL) != 0);
		PAIR_PUMP_UNTIL(&p, zcr_test(s[2 * i + 1], NULL) != 0);
	}
	pair_close(&p);
}

/* Two ranks with progress threads, blocking calls from two threads. */
struct pt_arg {
	struct zcr_ep *ep;
	char *buf;
	size_t len;
	int n;
};

static void *pt_sender(void *arg)
{
	struct pt_arg *a = arg;
	int i;

	for (i = 0; i < a->n; i++) {
		pattern_fill(a->buf, a->len, (uint32_t)i);
		if (zcr_send(a->ep, a->buf, a->len, 6))
			return (void *)1;
	}
	return NULL;
}

/*
 * Both contexts with a progress thread; n messages of len bytes from a
 * thread of the application. Messages larger than the socket buffers
 * complete in the progress thread, while the application's calls run.
 */
static void progress_thread_run(size_t len, int n)
{
	struct zcr_ctx_attr a = { .progress_thread = 1 };
	struct zcr_status st;
	struct pt_arg arg;
	pthread_t th;
	char *rb;
	void *res;
	int i;
	struct zcr_ctx *c0, *c1;
	struct zcr_ep *e01, *e10;
	int port;
	char addr[32];

	a.quiet = 1;
	ZT_EXPECT_EQ(zcr_ctx_create(&a, &c0), 0);
	a.rank = 1;
	ZT_EXPECT_EQ(zcr_ctx_create(&a, &c1), 0);
	port = zcr_ctx_listen(c0, "127.0.0.1:0");
	ZT_ASSERT(port > 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	ZT_EXPECT_EQ(zcr_ep_connect(c1, addr, &e10), 0);
	ZT_EXPECT_EQ(zcr_ep_accept(c0, 10000, &e01), 0);
	ZT_EXPECT_EQ(zcr_ep_rank(e01), 1);
	arg.ep = e10;
	arg.len = len;
	arg.n = n;
	arg.buf = malloc(len);
	rb = malloc(len);
	ZT_EXPECT_EQ(pthread_create(&th, NULL, pt_sender, &arg), 0);
	for (i = 0; i < n; i++) {
		ZT_EXPECT_EQ(zcr_recv(c0, rb, len, 1, 6, &st), 0);
		ZT_EXPECT_EQ(pattern_bad(rb, len, (uint32_t)i), 0);
	}
	pthread_join(th, &res);
	ZT_ASSERT(res == NULL);
	zcr_ctx_destroy(c1);
	zcr_ctx_destroy(c0);
	free(rb);
	free(arg.buf);
}

ZT_TEST(progress_thread)
{
	progress_thread_run(300000, 20);
}

ZT_TEST(progress_thread_large)
{
	progress_thread_run(16 << 20, 4);
}

/* Bytes of buf equal to want from the start. */
static size_t same_prefix(const char *buf, const char *want, size_t len)
{
	size_t i;

	for (i = 0; i < len && buf[i] == want[i]; i++)
		;
	return i;
}

/*
 * A large send writes only its first part inside zcr_isend() (256 KiB
 * with its header: the rest is left to progress, so that the caller
 * goes back to its computation), although the socket would take more:
 * with the sender's context never progressed, the receiver, posted first,
 * gets exactly that part and no more. Progress on the sender then
 * delivers the rest, byte for byte. The connection is warmed up first by
 * one large message, so that its buffers have grown past the part.
 */
ZT_TEST(a_large_send_starts_with_a_part)
{
	size_t len = 8 << 20, part = 256 << 10, got, i;
	struct zcr_req *s, *r;
	struct zcr_status st;
	char *sb, *rb;
	struct pair p;
	double t0;

	pair_open(&p, 2, NULL);
	sb = malloc(len);
	rb = malloc(len);
	ZT_ASSERT(sb && rb);
	/* Warm-up: the kernel grows the sockets' buffers under load. */
	pattern_fill(sb, len, 5);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], rb, len, 1, 9, &r), 0);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb, len, 9, &s), 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(r, &st) != 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
	ZT_EXPECT_EQ(pattern_bad(rb, len, 5), 0);

	pattern_fill(sb, len, 6);
	for (i = 0; i < len; i++)
		rb[i] = (char)~sb[i];
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], rb, len, 1, 10, &r), 0);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb, len, 10, &s), 0);
	/* Only the receiver progresses: it reads what the call wrote. */
	t0 = pair_now();
	while (pair_now() - t0 < 0.3)
		ZT_ASSERT(zcr_progress(p.c[0], 0) >= 0);
	got = same_prefix(rb, sb, len);
	printf("# first call: %zu payload bytes of %zu arrived\n", got, len);
	/* The 32-byte header went in the same part. */
	ZT_EXPECT_EQ(got, part - 32);
	PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(r, &st) != 0);
	ZT_EXPECT_EQ(st.error, 0);
	ZT_EXPECT_EQ(st.len, len);
	ZT_EXPECT_EQ(memcmp(rb, sb, len), 0);
	free(sb);
	free(rb);
	pair_close(&p);
}

/*
 * A send and a receive the progress threads complete while the
 * application does not touch the library: under ThreadSanitizer (make
 * tsan) any read of the request's state after zcr_isend() or zcr_irecv()
 * dropped the lock is a reported race.
 */
ZT_TEST(requests_completed_by_the_progress_thread)
{
	struct zcr_ctx_attr a = { .progress_thread = 1, .quiet = 1 };
	size_t len = 32 << 20;
	struct zcr_ctx *c0, *c1;
	struct zcr_ep *e01, *e10;
	struct zcr_req *r, *s;
	struct zcr_status st;
	char addr[32], *sb, *rb;
	int port;

	ZT_EXPECT_EQ(zcr_ctx_create(&a, &c0), 0);
	a.rank = 1;
	ZT_EXPECT_EQ(zcr_ctx_create(&a, &c1), 0);
	port = zcr_ctx_listen(c0, "127.0.0.1:0");
	ZT_ASSERT(port > 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	ZT_EXPECT_EQ(zcr_ep_connect(c1, addr, &e10), 0);
	ZT_EXPECT_EQ(zcr_ep_accept(c0, 10000, &e01), 0);
	sb = malloc(len);
	rb = malloc(len);
	ZT_ASSERT(sb && rb);
	pattern_fill(sb, len, 3);
	ZT_EXPECT_EQ(zcr_irecv(c0, rb, len, 1, 2, &r), 0);
	ZT_EXPECT_EQ(zcr_isend(e10, sb, len, 2, &s), 0);
	usleep(500000);
	ZT_EXPECT_EQ(zcr_wait(s, NULL), 0);
	ZT_EXPECT_EQ(zcr_wait(r, &st), 0);
	ZT_EXPECT_EQ(pattern_bad(rb, len, 3), 0);
	zcr_ctx_destroy(c1);
	zcr_ctx_destroy(c0);
	free(sb);
	free(rb);
}

/* Forced policies: copy never remaps; auto follows the calibration. */
ZT_TEST(policy_copy_never_remaps)
{
	struct zcr_ctx_attr a = { .policy = ZCRECV_POLICY_COPY };
	struct zcr_stats s = early_series(&a, 3);

	ZT_EXPECT_EQ(s.pages_remapped, 0);
	ZT_EXPECT_EQ(s.min_remap_pages, 0);
	ZT_EXPECT_EQ(s.bytes_copied, 3 * 64 * 4096);
}

ZT_TEST(policy_env_override)
{
	struct zcr_ctx *c;
	struct zcr_stats s;

	setenv("ZCRECV_POLICY", "copy", 1);
	ZT_EXPECT_EQ(zcr_ctx_create(NULL, &c), 0);
	ZT_EXPECT_EQ(zcr_ctx_stats(c, &s), 0);
	ZT_EXPECT_EQ(s.policy, ZCRECV_POLICY_COPY);
	zcr_ctx_destroy(c);
	setenv("ZCRECV_POLICY", "bogus", 1);
	ZT_EXPECT_EQ(zcr_ctx_create(NULL, &c), -EINVAL);
	unsetenv("ZCRECV_POLICY");
	ZT_EXPECT_EQ(zcr_ctx_create(NULL, &c), 0);
	ZT_EXPECT_EQ(zcr_ctx_stats(c, &s), 0);
	print_stats("calibration", &s);
	ZT_EXPECT_EQ(s.policy, ZCRECV_POLICY_AUTO);
	zcr_ctx_destroy(c);
}

/*
 * Between two network namespaces of our own joined by a veth pair (root
 * and veth needed; skipped otherwise, e.g. in the VM whose initramfs has no
 * veth.ko). Namespaces are named after our pid and always deleted.
 */
static int netns_side(const char *ns, int rank, int *port_pipe)
{
	/* Listening on a non-loopback address takes a job secret. */
	struct zcr_ctx_attr a = { .rank = rank, .quiet = 1,
				  .job_secret = "netns-veth-test-secret" };
	size_t len = 1 << 20;
	char path[128], addr[64], *buf;
	struct zcr_ctx *c;
	struct zcr_ep *ep;
	int fd, port;

	snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
	fd = open(path, O_RDONLY);
	if (fd < 0 || setns(fd, CLONE_NEWNET) ||
	    zcr_ctx_create_sized(&a, sizeof(a), &c))
		return 10;
	buf = malloc(len);
	if (rank == 0) {
		port = zcr_ctx_listen(c, "10.199.77.1:0");
		if (port <= 0 || write(port_pipe[1], &port, sizeof(port)) !=
				 sizeof(port))
			return 11;
		if (zcr_ep_accept(c, 10000, &ep) ||
		    zcr_recv(c, buf, len, 1, 4, NULL) ||
		    zcr_send(ep, buf, len, 5))
			return 12;
	} else {
		if (read(port_pipe[0], &port, sizeof(port)) != sizeof(port))
			return 13;
		snprintf(addr, sizeof(addr), "10.199.77.1:%d", port);
		pattern_fill(buf, len, 42);
		if (zcr_ep_connect(c, addr, &ep) ||
		    zcr_send(ep, buf, len, 4))
			return 14;
		memset(buf, 0, len);
		if (zcr_recv(c, buf, len, 0, 5, NULL) ||
		    pattern_bad(buf, len, 42))
			return 15;
	}
	zcr_ctx_destroy(c);
	return 0;
}

ZT_TEST(netns_veth)
{
	char a[32], b[32], cmd[1024];
	int pp[2], st0, st1, ret;
	pid_t p0, p1;

	if (geteuid() != 0 || system("command -v ip >/dev/null 2>&1"))
		ZT_SKIP("needs root and iproute2");
	snprintf(a, sizeof(a), "zcrA%d", (int)getpid());
	snprintf(b, sizeof(b), "zcrB%d", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "set -e; ip netns add %s; ip netns add %s; "
		 "ip link add va%d type veth peer name vb%d; "
		 "ip link set va%d netns %s; ip link set vb%d netns %s; "
		 "ip -n %s addr add 10.199.77.1/24 dev va%d; "
		 "ip -n %s addr add 10.199.77.2/24 dev vb%d; "
		 "ip -n %s link set va%d up; ip -n %s link set lo up; "
		 "ip -n %s link set vb%d up; ip -n %s link set lo up",
		 a, b, (int)getpid() % 100000, (int)getpid() % 100000,
		 (int)getpid() % 100000, a, (int)getpid() % 100000, b,
		 a, (int)getpid() % 100000, b, (int)getpid() % 100000,
		 a, (int)getpid() % 100000, a, b, (int)getpid() % 100000, b);
	ret = system(cmd);
	if (ret) {
		snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null; "
			 "ip netns del %s 2>/dev/null", a, b);
		ret = system(cmd);
		ZT_SKIP("cannot create namespaces with a veth pair here");
	}
	ZT_ASSERT(pipe(pp) == 0);
	p0 = fork();
	if (p0 == 0)
		_exit(netns_side(a, 0, pp));
	p1 = fork();
	if (p1 == 0)
		_exit(netns_side(b, 1, pp));
	waitpid(p0, &st0, 0);
	waitpid(p1, &st1, 0);
	snprintf(cmd, sizeof(cmd), "ip netns del %s; ip netns del %s", a, b);
	ret = system(cmd);
	ZT_EXPECT_EQ(ret, 0);
	ZT_ASSERT_MSG(WIFEXITED(st0) && WEXITSTATUS(st0) == 0,
		      "rank 0 in %s failed: %d", a, st0);
	ZT_ASSERT_MSG(WIFEXITED(st1) && WEXITSTATUS(st1) == 0,
		      "rank 1 in %s failed: %d", b, st1);
}

/*
 * Shared memory cannot take moved pages (UFFDIO_MOVE wants private
 * anonymous memory, the module wants zones): the backend refuses, the
 * engine copies, the data is right and nothing counts as remapped.
 */
ZT_TEST(remap_refused_copies)
{
	size_t len = 32 * 4096;
	struct zcr_stats s;
	char *buf;

	buf = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ZT_ASSERT(buf != MAP_FAILED);
	s = early_into("remap_refused_copies", buf, len);
	ZT_EXPECT_EQ(s.pages_remapped, 0);
	ZT_EXPECT_EQ(s.bytes_copied, 4 * len);
	munmap(buf, len);
}

/*
 * Staging is full with a raw peer's half-arrived message; rank 1 stalls on
 * its next message. When the raw peer dies, its slot is freed: rank 1 must
 * resume (its stalled message lands, the one behind it reaches the posted
 * receive), not stay paused until some unrelated receive happens.
 */
ZT_TEST(failed_peer_frees_room_for_stalled)
{
	struct zcr_ctx_attr a = { .staging_bytes = 128 << 10 };
	static char big[64 << 10], small[100], rb[64 << 10];
	unsigned char h[32], junk[1000];
	struct zcr_req *s[2], *r;
	struct zcr_status st;
	struct zcr_ep *ep;
	struct pair p;
	int fd, ret, i;

	pair_open(&p, 2, &a);
	fd = raw_connect(&p);
	raw_hello(fd, 5);
	PAIR_PUMP_UNTIL(&p, zcr_ep_accept(p.c[0], 0, &ep) == 0);
	raw_hdr(h, RAW_MAGIC, 1, 2, 32, 5, 0, 100000, 1);
	memset(junk, 1, sizeof(junk));
	ZT_ASSERT(write(fd, h, 32) == 32);
	ZT_ASSERT(write(fd, junk, sizeof(junk)) == sizeof(junk));
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).early == 1);
	pattern_fill(big, sizeof(big), 3);
	pattern_fill(small, sizeof(small), 4);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], big, sizeof(big), 7, &s[0]), 0);
	ZT_EXPECT_EQ(zcr_isend(p.to0[1], small, sizeof(small), 5, &s[1]), 0);
	PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).stalls == 1);
	ZT_EXPECT_EQ(zcr_irecv(p.c[0], rb, sizeof(rb), 1, 5, &r), 0);
	close(fd);
	PAIR_PUMP_UNTIL(&p, zcr_ep_error(ep, NULL) != 0);
	for (i = 0; i < 200 && !(ret = zcr_test(r, &st)); i++) {
		pair_pump(&p);
		usleep(1000);
	}
	ZT_EXPECT_EQ(ret, 1);
	ZT_EXPECT_EQ(pattern_bad(rb, sizeof(small), 4), 0);
	ZT_EXPECT_EQ(zcr_recv(p.c[0], rb, sizeof(rb), 1, 7, &st), 0);
	ZT_EXPECT_EQ(pattern_bad(rb, sizeof(big), 3), 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(s[0], NULL) != 0);
	PAIR_PUMP_UNTIL(&p, zcr_test(s[1], NULL) != 0);
	pair_close(&p);
}

/*
 * Rank 1 sends n messages of len bytes (seed i) to rank 0 and closes its
 * end; rank 0 learns it by writing (a send that fails) or by a reset that
 * comes while a message waits paused. Either way the messages rank 1
 * sent first are still delivered, every byte, and then the connection
 * closes. stall: a staging pool too small, so some wait in the socket.
 */
static void outlive_close(int n, size_t len, bool stall, bool write_first)
{
	struct zcr_ctx_attr a = { .quiet = 1 };
	char *sb = malloc((size_t)n * len), *rb = malloc(len), x[16] = "x";
	struct zcr_status st;
	struct zcr_req *s;
	struct pair p;
	double t0;
	int i;

	if (stall)
		a.staging_bytes = 16 << 10;
	unsetenv("ZCRECV_SHM");
	pair_open(&p, 2, &a);
	for (i = 0; i < n; i++) {
		pattern_fill(sb + i * len, len, (uint32_t)i);
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb + i * len, len, i, &s), 0);
		PAIR_PUMP_UNTIL(&p, zcr_test(s, NULL) != 0);
	}
	if (stall)
		PAIR_PUMP_UNTIL(&p, pair_stats(p.c[0]).stalls > 0);
	/* Something rank 1 never reads: its close then resets. */
	ZT_EXPECT_EQ(zcr_isend(p.from[1], x, sizeof(x), 99, &s), 0);
	ZT_EXPECT_EQ(zcr_wait(s, NULL), 0);
	usleep(20000);
	zcr_ep_close(p.to0[1]);
	usleep(20000);
	if (write_first) {
		/* Written into the reset: that send fails, and later ones. */
		t0 = pair_now();
		do {
			ZT_ASSERT_MSG(pair_now() - t0 < 20, "sends still go");
			ZT_EXPECT_EQ(zcr_isend(p.from[1], x, sizeof(x), 98,
					       &s), 0);
			usleep(10000);
		} while (zcr_wait(s, &st) == 0);
		ZT_EXPECT_EQ(st.error, -ECONNRESET);
		ZT_EXPECT_EQ(zcr_isend(p.from[1], x, sizeof(x), 98, &s),
			     -ECONNRESET);
	} else {
		ZT_ASSERT(zcr_progress(p.c[0], 50) >= 0);
	}
	pair_recv_to_end(&p, rb, len, n);
	pair_close(&p);
	free(sb);
	free(rb);
}

ZT_TEST(messages_outlive_a_write_into_a_closed_connection)
{
	outlive_close(3, 1000, false, true);
	outlive_close(4, 8000, true, true);
}

ZT_TEST(paused_messages_outlive_a_reset)
{
	outlive_close(4, 8000, true, false);
}

/*
 * A sender whose completed sends still sit in its socket (the receiver
 * has not read for a while) closes its endpoint while a message to it
 * lies unread: every send that completed arrives all the same (the
 * close must not reset the connection, which drops what has not left),
 * then the one cut short fails the connection. (Not if the receiver
 * writes to the closed socket meanwhile: the kernel resets it then.)
 */
ZT_TEST(completed_sends_arrive_after_the_sender_closes)
{
	struct zcr_ctx_attr a = { .quiet = 1 };
	enum { LEN = 64 << 10, MAX = 512 };
	char *sb = malloc((size_t)MAX * LEN), *rb = malloc(LEN), x[16] = "x";
	struct zcr_status st;
	struct zcr_req *s, *r;
	struct pair p;
	int n = 0, done;
	double t0;

	unsetenv("ZCRECV_SHM");
	pair_open(&p, 2, &a);
	/* Rank 1 alone makes progress: sends complete until one cannot. */
	for (;;) {
		ZT_ASSERT_MSG(n < MAX, "%d sends of %d bytes all went", n,
			      LEN);
		pattern_fill(sb + (size_t)n * LEN, LEN, (uint32_t)n);
		ZT_EXPECT_EQ(zcr_isend(p.to0[1], sb + (size_t)n * LEN, LEN, n,
				       &s), 0);
		t0 = pair_now();
		while ((done = zcr_test(s, NULL)) == 0 &&
		       pair_now() - t0 < 0.05)
			ZT_ASSERT(zcr_progress(p.c[1], 0) >= 0);
		if (!done)
			break;		/* s is pending: the socket is full */
		ZT_EXPECT_EQ(done, 1);
		n++;
	}
	ZT_ASSERT(n > 0);
	/* A message rank 1 will not read (written at once, no progress). */
	ZT_EXPECT_EQ(zcr_isend(p.from[1], x, sizeof(x), 99, &r), 0);
	ZT_EXPECT_EQ(zcr_test(r, NULL), 1);
	usleep(10000);
	zcr_ep_close(p.to0[1]);
	ZT_EXPECT_EQ(zcr_wait(s, &st), -ECONNRESET);
	pair_recv_to_end(&p, rb, LEN, n);
	pair_close(&p);
	free(sb);
	free(rb);
}
