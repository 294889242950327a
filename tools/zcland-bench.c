// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zcland-bench - the landing step alone: from "message complete in staging"
 * to "bytes in the user's buffer", copy against remap, side by side.
 *
 * It drives libzcrecv's own landing code (the staging pool and the remap
 * engine of a real context, no sockets): per point it stages a message in
 * a slot at the offset the library would choose for the user's buffer
 * (with the unused end of the buffer's block after it where the receive
 * path takes that too, so that the last unit moves whole),
 * then times the landing with the policy forced to copy and to remap in
 * turn (alternating, same run). Points: message size (powers of two from
 * --min to --max), user buffer (aligned: zcr_mem_alloc, 2 MiB aligned;
 * page: 4 KiB past a 2 MiB boundary of zcr_mem_alloc memory, of which only
 * whole 2 MiB units move, the rest is copied (kmod's huge zones; uffd-move
 * where THP is not "never"); malloc: plain malloc(), whose
 * pages move one by one), source (warm: the staged bytes were just written; cold: the
 * caches were flushed after staging, by writing four times the last-level
 * cache elsewhere, which also evicts the page tables and kernel data an
 * exchange walks; flushed: only the staged message's and the user
 * buffer's cache lines were flushed, with clflush) and other thread
 * (none; parked: the context's progress thread, asleep in poll; busy: a
 * thread of this process spinning in poll(2) with a zero timeout on the
 * other CPU; peer: another process spinning, as the waiting peer of a
 * ping-pong does).
 *
 * Columns: landing time (median over the iterations, µs) of copy and of
 * remap and their ratio (> 1: remap is faster), the time of the first read
 * of every page of the user's buffer after the landing (µs: moved pages
 * may cost a TLB/page-table fill on first touch that a copy does not
 * leave behind), and the pages the remap moved. Every landing is verified
 * (one word per page and the last byte); exit status 1 on a mismatch.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "bench.h"

#define MAX_ITERS	64

static const char *const align_names[] = { "aligned", "page", "malloc" };
static const char *const src_names[] = { "warm", "cold", "flushed" };
enum { SRC_WARM, SRC_COLD, SRC_FLUSHED };
static const char *const thr_names[] = { "none", "parked", "busy", "peer" };
#define NTHR	4

struct row {
	int align, src, thr;
	uint64_t size;
	unsigned int iters;
	double copy_us, remap_us, copy_touch_us, remap_touch_us, pages;
	bool bad;
};

static struct row rows[2048];
static int nrows;
static char *evict_buf;
static size_t evict_len;
static volatile int busy_stop;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zcland-bench [options]\n"
		"  --min BYTES       smallest message (4096)\n"
		"  --max BYTES       largest message (67108864)\n"
		"  --align LIST      aligned,page,malloc (aligned,page): the\n"
		"                    buffer from zcr_mem_alloc, 4 KiB into it\n"
		"                    (only whole 2 MiB units move), or malloc\n"
		"  --src LIST        warm,cold,flushed (warm,cold)\n"
		"  --thread LIST     none,parked,busy,peer (none,busy)\n"
		"  --iters N         most timed landings per point and mode (15)\n"
		"  -f, --format F    table or csv (table)\n"
		"  --csv FILE        also write the CSV to FILE\n"
		"  --png FILE        plot remap/copy ratios with gnuplot\n"
		"  --emulated        mark the figures as measured under emulation\n"
		"  -h, --help        this text\n"
		"The backend is the context's (ZCRECV_BACKEND=kmod|uffd-move).\n");
}

static void *busy_thread(void *arg)
{
	(void)arg;
	while (!busy_stop)
		poll(NULL, 0, 0);
	return NULL;
}

static uint64_t word_of(uint64_t it, size_t page)
{
	return 0x7a636c6400000000ULL ^ (it << 24) ^ page;
}

/* The message as the transport would leave it: every byte written. */
static void stage(char *src, size_t n, size_t psz, uint64_t it)
{
	size_t p;

	memset(src, (int)(it & 0xff), n);
	for (p = 0; p + 8 <= n; p += psz)
		memcpy(src + p, &(uint64_t){ word_of(it, p / psz) }, 8);
}

/* First read of every page of the user's buffer; false on a mismatch. */
static bool check(const char *dst, size_t n, size_t psz, uint64_t it)
{
	bool ok = true;
	uint64_t w;
	size_t p;

	for (p = 0; p + 8 <= n; p += psz) {
		memcpy(&w, dst + p, 8);
		if (w != word_of(it, p / psz))
			ok = false;
	}
	if (n % psz >= 8 || n < 8)
		ok = ok && (n == 0 ||
			    (unsigned char)dst[n - 1] == (it & 0xff));
	return ok;
}

/*
 * Out of every cache: the n staged bytes at src and the user's n at dst
 * (the data only; what an exchange walks stays where it is).
 */
static void flush_lines(const char *src, size_t n, const char *dst)
{
#if defined(__x86_64__) || defined(__i386__)
	const char *p;

	/* From the line each starts in: malloc'd buffers need not be. */
	for (p = (const char *)((uintptr_t)src & ~(uintptr_t)63);
	     p < src + n; p += 64)
		__builtin_ia32_clflush(p);
	for (p = (const char *)((uintptr_t)dst & ~(uintptr_t)63);
	     p < dst + n; p += 64)
		__builtin_ia32_clflush(p);
	__builtin_ia32_mfence();
#else
	memset(evict_buf, 1, evict_len);
	(void)src;
	(void)n;
	(void)dst;
#endif
}

/* Land one staged message of n bytes into dst under policy; time it. */
static double land(struct zcr_ctx *ctx, char *dst, size_t n, int policy,
		   int src, uint64_t it, double *touch, uint64_t *pages,
		   bool *bad)
{
	const struct zcr_remap_ops *ops;
	struct zcr_slot *s = NULL;
	size_t off, room;
	uint64_t p0;
	bool block;
	double t;

	/* staged as the receive path stages it (lib/match/match.c) */
	pthread_mutex_lock(&ctx->lock);
	ctx->policy = policy;
	ops = __zcr_remap_pick(ctx, dst, n, NULL);
	off = __zcr_remap_stage_offset(ctx, ops, dst, n, &room);
	block = __zcr_mem_thp(ctx, dst, n);
	if (room)
		s = __zcr_slot_get_locked(ctx, ops, off + n + room, block);
	if (!s)
		s = __zcr_slot_get_locked(ctx, ops, off + n, block);
	pthread_mutex_unlock(&ctx->lock);
	if (!s) {
		fprintf(stderr, "zcland-bench: no staging slot for %zu bytes\n",
			n);
		exit(2);
	}
	stage(s->base + off, n, ctx->page, it);
	if (src == SRC_COLD)
		memset(evict_buf, (int)it, evict_len);
	else if (src == SRC_FLUSHED)
		flush_lines(s->base + off, n, dst);
	pthread_mutex_lock(&ctx->lock);
	p0 = ctx->st.pages_remapped;
	t = zct_now_us();
	__zcr_remap_deliver_locked(ctx, s, off, dst, n, true, NULL);
	t = zct_now_us() - t;
	*pages = ctx->st.pages_remapped - p0;
	__zcr_slot_put_locked(ctx, s);
	pthread_mutex_unlock(&ctx->lock);
	*touch = zct_now_us();
	if (!check(dst, n, ctx->page, it))
		*bad = true;
	*touch = zct_now_us() - *touch;
	return t;
}

static void *user_buf(struct zcr_ctx *ctx, int align, size_t n, void **base)
{
	void *p;

	switch (align) {
	case 0:
		if (zcr_mem_alloc(ctx, n, &p))
			return NULL;
		*base = p;
		return p;
	case 1:
		if (zcr_mem_alloc(ctx, n + (2 << 20), &p))
			return NULL;
		*base = p;
		return (char *)p + 4096;
	default:
		p = malloc(n);
		*base = p;
		return p;
	}
}

static void run_point(struct zcr_ctx *ctx, struct row *r,
		      unsigned int max_iters)
{
	double c[MAX_ITERS], m[MAX_ITERS], ct[MAX_ITERS], mt[MAX_ITERS];
	uint64_t pages = 0, pg;
	unsigned int i, n;
	void *base;
	char *dst;
	bool bad = false;

	n = (unsigned int)((256ULL << 20) / r->size);
	if (n > max_iters)
		n = max_iters;
	if (n < 5)
		n = 5;
	r->iters = n;
	dst = user_buf(ctx, r->align, r->size, &base);
	if (!dst) {
		fprintf(stderr, "zcland-bench: no memory for %llu bytes\n",
			(unsigned long long)r->size);
		exit(2);
	}
	memset(dst, 0, r->size);
	/* One landing of each mode first: slots exist, pages are faulted. */
	land(ctx, dst, r->size, ZCRECV_POLICY_COPY, SRC_WARM, 1, &ct[0], &pg,
	     &bad);
	land(ctx, dst, r->size, ZCRECV_POLICY_REMAP, SRC_WARM, 2, &mt[0], &pg,
	     &bad);
	for (i = 0; i < n; i++) {
		c[i] = land(ctx, dst, r->size, ZCRECV_POLICY_COPY, r->src,
			    3 + 2 * i, &ct[i], &pg, &bad);
		m[i] = land(ctx, dst, r->size, ZCRECV_POLICY_REMAP, r->src,
			    4 + 2 * i, &mt[i], &pg, &bad);
		pages += pg;
	}
	r->copy_us = zct_median(c, n);
	r->remap_us = zct_median(m, n);
	r->copy_touch_us = zct_median(ct, n);
	r->remap_touch_us = zct_median(mt, n);
	r->pages = (double)pages / n;
	r->bad = bad;
	if (r->align == 2)
		free(base);
	else
		zcr_mem_free(ctx, base);
}

static void print_row(FILE *f, const struct row *r, bool csv,
		      const char *backend)
{
	if (csv) {
		fprintf(f, "%s,%s,%s,%s,%llu,%u,%.2f,%.2f,%.3f,%.2f,%.2f,%.1f,%s\n",
			backend, align_names[r->align], src_names[r->src],
			thr_names[r->thr], (unsigned long long)r->size,
			r->iters, r->copy_us, r->remap_us,
			r->copy_us / r->remap_us, r->copy_touch_us,
			r->remap_touch_us, r->pages, r->bad ? "FAIL" : "ok");
		return;
	}
	fprintf(f, "%-7s %-7s %-6s %9llu %5u %10.1f %10.1f %7.2fx %9.1f "
		"%9.1f %8.0f  %s\n",
		align_names[r->align], src_names[r->src], thr_names[r->thr],
		(unsigned long long)r->size, r->iters, r->copy_us, r->remap_us,
		r->copy_us / r->remap_us, r->copy_touch_us, r->remap_touch_us,
		r->pages, r->bad ? "FAIL" : "ok");
}

static const char csv_head[] =
	"backend,buffer,source,thread,size,iters,copy_us,remap_us,"
	"copy_over_remap,copy_touch_us,remap_touch_us,pages_moved,verified\n";

/* Has this run a row of buffer a, source s, thread t? (A line each.) */
static bool measured(int a, int s, int t)
{
	int i;

	for (i = 0; i < nrows; i++)
		if (rows[i].align == a && rows[i].src == s && rows[i].thr == t)
			return true;
	return false;
}

static int plot(const char *csv, const char *png, const char *backend,
		bool emulated)
{
	FILE *g;

	if (system("command -v gnuplot >/dev/null 2>&1"))
		return -ENOENT;
	g = popen("gnuplot", "w");
	if (!g)
		return -errno;
	fprintf(g, "set terminal pngcairo size 1000,600\nset output '%s'\n"
		"set datafile separator ','\nset logscale x 2\nset logscale y\n"
		"set format x '%%.0b%%B'\nset xlabel 'message size (bytes)'\n"
		"set ylabel 'copy time / remap time'\nset key left top\n"
		"set grid\nset title 'zcland-bench: landing, %s%s'\nplot 1 "
		"with lines dt 2 title 'equal'", png, backend,
		emulated ? " (EMULATED: compare ratios only)" : "");
	for (int a = 0; a < 3; a++)
		for (int s = 0; s < 3; s++)
			for (int t = 0; t < 4; t++)
				if (measured(a, s, t))
					fprintf(g, ", '%s' using "
						"(strcol(2) eq '%s' && "
						"strcol(3) eq '%s' && "
						"strcol(4) eq '%s' ? "
						"$5 : 1/0):9 with "
						"linespoints title "
						"'%s %s %s'", csv,
						align_names[a],
						src_names[s],
						thr_names[t],
						align_names[a],
						src_names[s],
						thr_names[t]);
	fprintf(g, "\n");
	return pclose(g) ? -EIO : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "min", 1, NULL, 's' }, { "max", 1, NULL, 'S' },
		{ "align", 1, NULL, 'a' }, { "src", 1, NULL, 'c' },
		{ "thread", 1, NULL, 't' }, { "iters", 1, NULL, 'i' },
		{ "format", 1, NULL, 'f' }, { "csv", 1, NULL, 'C' },
		{ "png", 1, NULL, 'p' }, { "emulated", 0, NULL, 'E' },
		{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	uint64_t min = 4096, max = 64ULL << 20, size;
	int aligns = 0x3, srcs = 0x3, thrs = 0x5, o, a, s, t;
	unsigned int iters = 15;
	bool csv_out = false, emulated = false, bad = false;
	const char *csv = NULL, *png = NULL;
	char csvtmp[64], backend[48];
	struct zcr_stats st;
	long l3;

	while ((o = getopt_long(argc, argv, "f:h", opts, NULL)) != -1) {
		switch (o) {
		case 's': min = strtoull(optarg, NULL, 0); break;
		case 'S': max = strtoull(optarg, NULL, 0); break;
		case 'a': aligns = zct_parse_list(optarg, align_names, 3); break;
		case 'c': srcs = zct_parse_list(optarg, src_names, 3); break;
		case 't': thrs = zct_parse_list(optarg, thr_names, NTHR); break;
		case 'i': iters = (unsigned int)atoi(optarg); break;
		case 'f':
			if (strcmp(optarg, "csv") && strcmp(optarg, "table")) {
				fprintf(stderr, "zcland-bench: -f takes table "
					"or csv\n");
				return 2;
			}
			csv_out = !strcmp(optarg, "csv");
			break;
		case 'C': csv = optarg; break;
		case 'p': png = optarg; break;
		case 'E': emulated = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || min < 4096 || max < min || !aligns || !srcs ||
	    !thrs || !iters || iters > MAX_ITERS) {
		usage(stderr);
		return 2;
	}
	l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
	evict_len = (size_t)(l3 > 0 ? 4 * l3 : 64L << 20);
	if (evict_len < (64 << 20))
		evict_len = 64 << 20;
	evict_buf = malloc(evict_len);
	if (!evict_buf)
		return 2;
	memset(evict_buf, 1, evict_len);

	if (!csv_out)
		printf("%-7s %-7s %-6s %9s %5s %10s %10s %8s %9s %9s %8s  %s\n",
		       "buffer", "src", "thread", "size", "iters", "copy_us",
		       "remap_us", "copy/rm", "touch_cp", "touch_rm", "pages",
		       "verified");
	else
		fputs(csv_head, stdout);
	backend[0] = 0;
	for (t = 0; t < NTHR; t++) {
		struct zcr_ctx_attr attr = { .progress_thread = t == 1 };
		struct zcr_ctx *ctx;
		pid_t peer = -1;
		pthread_t bt;

		if (!(thrs & (1 << t)))
			continue;
		/*
		 * Before the context: its staging would otherwise be shared
		 * copy-on-write with the child, and UFFDIO_MOVE refuses
		 * pages two processes map.
		 */
		if (t == 3 && (peer = zct_spinner_start()) < 0)
			return 2;
		o = zcr_ctx_create(&attr, &ctx);
		if (o) {
			fprintf(stderr, "zcland-bench: zcr_ctx_create: %s\n",
				strerror(-o));
			return 2;
		}
		zcr_ctx_stats(ctx, &st);
		snprintf(backend, sizeof(backend), "%s%s", st.backend_name,
			 emulated ? "(EMULATED)" : "");
		if (!rows[0].iters && !csv_out)
			printf("# backend %s, page %zu%s\n", st.backend_name,
			       ctx->page, emulated ?
			       ", EMULATED timings: compare ratios only" : "");
		busy_stop = 0;
		if (t == 2 && pthread_create(&bt, NULL, busy_thread, NULL))
			return 2;
		for (a = 0; a < 3; a++) {
			if (!(aligns & (1 << a)))
				continue;
			for (s = 0; s < 3; s++) {
				if (!(srcs & (1 << s)))
					continue;
				for (size = min; size <= max; size *= 2) {
					struct row *r = &rows[nrows++];

					r->align = a;
					r->src = s;
					r->thr = t;
					r->size = size;
					run_point(ctx, r, iters);
					print_row(stdout, r, csv_out, backend);
					fflush(stdout);
					bad |= r->bad;
					if (nrows == (int)(sizeof(rows) /
							   sizeof(rows[0])))
						goto done;
				}
			}
		}
done:
		if (t == 2) {
			busy_stop = 1;
			pthread_join(bt, NULL);
		}
		zct_spinner_stop(peer);
		zcr_ctx_destroy(ctx);
	}
	if (csv || png) {
		FILE *f;

		if (!csv) {
			snprintf(csvtmp, sizeof(csvtmp),
				 "/tmp/zcland-bench.%d.csv", (int)getpid());
			csv = csvtmp;
		}
		f = fopen(csv, "w");
		if (!f) {
			perror(csv);
			return 2;
		}
		fputs(csv_head, f);
		for (o = 0; o < nrows; o++)
			print_row(f, &rows[o], true, backend);
		fclose(f);
	}
	if (png) {
		if (plot(csv, png, backend, emulated) == 0)
			printf("zcland-bench: plot written to %s\n", png);
		else
			printf("zcland-bench: gnuplot failed or missing: no "
			       "plot\n");
	}
	if (bad)
		printf("zcland-bench: a landing delivered wrong bytes\n");
	return bad ? 1 : 0;
}
