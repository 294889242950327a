// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * hash.c - ZCR_PV_HASH: no kernel help. A page's version is a 64-bit hash
 * of its 4 KiB, seeded with its __zcr_pv_bump() count. Two reads return
 * the same version only if the page holds the same bytes (or, with
 * probability 2^-64 per changed page, a collision): which is what the
 * versions are for. Nothing is armed, so nothing costs a write; every
 * read hashes every page, and works on any memory the process can read
 * (shm, hugetlb, file-backed, memory another userfaultfd registered).
 *
 * The hash: eight independent lanes take one 64-bit word each of every
 * 64-byte line (x = (x ^ w) * odd; x ^= x >> 32). Each step is a bijection
 * of the lane for a given word and of the word for a given lane, so a
 * page differing from another in a single word always hashes to a
 * different lane state; the lanes are then folded through a multiply-
 * xorshift finisher. Eight lanes keep the multiplier busy: about a cycle
 * per 8 bytes.
 */
#include <errno.h>
#include <string.h>

#include "pagever/pv_int.h"

#define HASH_LANES	8

static const uint64_t lane_mul[HASH_LANES] = {
	0x9e3779b97f4a7c15ULL, 0xc2b2ae3d27d4eb4fULL,
	0x165667b19e3779f9ULL, 0xd6e8feb86659fd93ULL,
	0xa0761d6478bd642fULL, 0xe7037ed1a0b428dbULL,
	0x8ebc6af09c88c6e3ULL, 0x589965cc75374cc3ULL,
};

static inline uint64_t finish(uint64_t x)
{
	x ^= x >> 31;
	x *= 0xd6e8feb86659fd93ULL;
	x ^= x >> 29;
	x *= 0x9e3779b97f4a7c15ULL;
	x ^= x >> 32;
	return x;
}

static inline uint64_t fold(const uint64_t *lane, uint64_t seed)
{
	uint64_t h = seed ^ 0x589965cc75374cc3ULL;
	size_t k;

	for (k = 0; k < HASH_LANES; k++)
		h = (h ^ finish(lane[k] + k)) * lane_mul[(k + 3) % HASH_LANES];
	return finish(h);
}

static uint64_t hash_page_scalar(const void *page, uint64_t seed)
{
	const uint64_t *w = page;
	uint64_t lane[HASH_LANES];
	size_t i, k;

	for (k = 0; k < HASH_LANES; k++)
		lane[k] = seed + lane_mul[k] * (k + 1);
	for (i = 0; i < ZCR_PV_PAGE / 8; i += HASH_LANES) {
		for (k = 0; k < HASH_LANES; k++) {
			uint64_t x = (lane[k] ^ w[i + k]) * lane_mul[k];

			lane[k] = x ^ (x >> 32);
		}
	}
	return fold(lane, seed);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/*
 * The same hash, its eight lanes in one AVX-512 register (vpmullq is
 * AVX512DQ's 64-bit multiply): bit for bit the scalar one's result,
 * about twice as fast on this host (zcpagever-bench's hash rows;
 * Documentation/prefetch.md). Chosen at run time where the processor
 * has it, so a hash taken on one machine compares with one taken on
 * another.
 */
__attribute__((target("avx512f,avx512dq")))
static uint64_t hash_page_avx512(const void *page, uint64_t seed)
{
	const __m512i mul = _mm512_loadu_si512((const void *)lane_mul);
	const char *p = page;
	uint64_t lane[HASH_LANES];
	__m512i v;
	size_t i;

	for (i = 0; i < HASH_LANES; i++)
		lane[i] = seed + lane_mul[i] * (i + 1);
	v = _mm512_loadu_si512((const void *)lane);
	for (i = 0; i < ZCR_PV_PAGE; i += 64) {
		__m512i x = _mm512_mullo_epi64(
			_mm512_xor_si512(v, _mm512_loadu_si512(p + i)), mul);

		v = _mm512_xor_si512(x, _mm512_srli_epi64(x, 32));
	}
	_mm512_storeu_si512((void *)lane, v);
	return fold(lane, seed);
}

static uint64_t (*resolve_hash(void))(const void *, uint64_t)
{
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512dq"))
		return hash_page_avx512;
	return hash_page_scalar;
}
#else
static uint64_t (*resolve_hash(void))(const void *, uint64_t)
{
	return hash_page_scalar;
}
#endif

uint64_t __zcr_pv_hash_page(const void *page, uint64_t seed)
{
	static uint64_t (*hash)(const void *, uint64_t);
	uint64_t (*h)(const void *, uint64_t) =
		__atomic_load_n(&hash, __ATOMIC_RELAXED);

	if (!h) {
		h = resolve_hash();
		__atomic_store_n(&hash, h, __ATOMIC_RELAXED);
	}
	return h(page, seed);
}

/* For the tests: the portable version, whatever the processor. */
uint64_t __zcr_pv_hash_page_scalar(const void *page, uint64_t seed)
{
	return hash_page_scalar(page, seed);
}

static int hash_open(struct zcr_pv *pv)
{
	pv->priv = NULL;
	return 0;
}

static void hash_close(struct zcr_pv *pv)
{
	(void)pv;
}

static int hash_track(struct zcr_pv *pv, struct zcr_pv_range *r)
{
	(void)pv;
	(void)r;
	return 0;
}

static void hash_untrack(struct zcr_pv *pv, struct zcr_pv_range *r)
{
	(void)pv;
	(void)r;
}

static int hash_read(struct zcr_pv *pv, struct zcr_pv_range *r,
		     uint64_t *ver)
{
	size_t i;
	int ret;

	(void)pv;
	/* Reading an unmapped page would take SIGSEGV: fail instead. */
	ret = __zcr_pv_mapped(r->start, r->npages * ZCR_PV_PAGE);
	if (ret < 0)
		return ret;
	for (i = 0; i < r->npages; i++)
		ver[i] = __zcr_pv_hash_page((const void *)(r->start +
					     i * ZCR_PV_PAGE), r->ver[i]);
	return 0;
}

const struct zcr_pv_ops __zcr_pv_hash_ops = {
	.mech = ZCR_PV_HASH,
	.name = "hash",
	.open = hash_open,
	.close = hash_close,
	.track = hash_track,
	.untrack = hash_untrack,
	.read = hash_read,
};
