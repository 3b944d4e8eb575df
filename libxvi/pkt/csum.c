// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include "pkt/csum.h"

/*
 * 32-bit words are summed into a 64-bit accumulator: no carry can be lost
 * below 2^32 words (16 GiB), far above any frame.  memcpy() loads keep the
 * code free of alignment and aliasing assumptions and compile to plain
 * loads.
 */
static inline __u64 add_tail(const unsigned char *p, size_t len, __u64 sum)
{
	__u32 w32;
	__u16 w16;

	if (len & 4) {
		memcpy(&w32, p, 4);
		sum += w32;
		p += 4;
	}
	if (len & 2) {
		memcpy(&w16, p, 2);
		sum += w16;
		p += 2;
	}
	if (len & 1) {
		/* The odd byte is the first byte of a zero-padded 16-bit word. */
		w16 = 0;
		memcpy(&w16, p, 1);
		sum += w16;
	}
	return sum;
}

/*
 * The bulk of a long buffer, 32-bit words into 64-bit vector lanes (no
 * carry is lost below 2^32 words): SSE2 is in every x86-64, AVX2 is chosen
 * at run time.  The scalar loops below were about 1.4x slower than memcpy
 * plus a separate sum; these keep the copy at memcpy speed and the sum
 * several words per cycle.  Each takes whole blocks and leaves the rest to
 * the scalar code (@len is updated, the pointers are advanced).
 */
#if defined(__x86_64__)
#include <immintrin.h>

static __u64 hsum128(__m128i v)
{
	return (__u64)_mm_cvtsi128_si64(v) + (__u64)_mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v));
}

static __u64 bulk_sse2(const unsigned char **src, unsigned char **dst, size_t *len)
{
	const unsigned char *s = *src;
	unsigned char *d = dst ? *dst : NULL;
	const __m128i z = _mm_setzero_si128();
	__m128i a = z, b = z;
	size_t n = *len;

	for (; n >= 32; n -= 32, s += 32) {
		__m128i x = _mm_loadu_si128((const __m128i *)s);
		__m128i y = _mm_loadu_si128((const __m128i *)(s + 16));

		if (d) {
			_mm_storeu_si128((__m128i *)d, x);
			_mm_storeu_si128((__m128i *)(d + 16), y);
			d += 32;
		}
		a = _mm_add_epi64(a, _mm_unpacklo_epi32(x, z));
		b = _mm_add_epi64(b, _mm_unpackhi_epi32(x, z));
		a = _mm_add_epi64(a, _mm_unpacklo_epi32(y, z));
		b = _mm_add_epi64(b, _mm_unpackhi_epi32(y, z));
	}
	*src = s;
	if (dst)
		*dst = d;
	*len = n;
	return hsum128(_mm_add_epi64(a, b));
}

__attribute__((target("avx2")))
static __u64 bulk_avx2(const unsigned char **src, unsigned char **dst, size_t *len)
{
	const unsigned char *s = *src;
	unsigned char *d = dst ? *dst : NULL;
	const __m256i z = _mm256_setzero_si256();
	__m256i a = z, b = z;
	size_t n = *len;

	for (; n >= 64; n -= 64, s += 64) {
		__m256i x = _mm256_loadu_si256((const __m256i *)s);
		__m256i y = _mm256_loadu_si256((const __m256i *)(s + 32));

		if (d) {
			_mm256_storeu_si256((__m256i *)d, x);
			_mm256_storeu_si256((__m256i *)(d + 32), y);
			d += 64;
		}
		a = _mm256_add_epi64(a, _mm256_unpacklo_epi32(x, z));
		b = _mm256_add_epi64(b, _mm256_unpackhi_epi32(x, z));
		a = _mm256_add_epi64(a, _mm256_unpacklo_epi32(y, z));
		b = _mm256_add_epi64(b, _mm256_unpackhi_epi32(y, z));
	}
	a = _mm256_add_epi64(a, b);
	*src = s;
	if (dst)
		*dst = d;
	*len = n;
	return hsum128(_mm_add_epi64(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1)));
}

int xvi_csum_avx2 = -1;

static __u64 bulk(const unsigned char **src, unsigned char **dst, size_t *len)
{
	/* Relaxed: threads that race here all store the same answer. */
	int avx2 = __atomic_load_n(&xvi_csum_avx2, __ATOMIC_RELAXED);

	if (avx2 < 0) {
		avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
		__atomic_store_n(&xvi_csum_avx2, avx2, __ATOMIC_RELAXED);
	}
	return avx2 ? bulk_avx2(src, dst, len) : bulk_sse2(src, dst, len);
}
#else
int xvi_csum_avx2 = 0;

static __u64 bulk(const unsigned char **src, unsigned char **dst, size_t *len)
{
	return 0;	/* the scalar loops do it all */
}
#endif

/* Below this the vector set-up does not pay. */
#define BULK_MIN	128

__u64 xvi_csum_partial(const void *buf, size_t len, __u64 sum)
{
	const unsigned char *p = buf;
	__u64 a = 0, b = 0, v;

	if (len >= BULK_MIN)
		sum += bulk(&p, NULL, &len);

	/* Two accumulators keep the adds independent. */
	while (len >= 16) {
		memcpy(&v, p, 8);
		a += (v & 0xffffffffULL) + (v >> 32);
		memcpy(&v, p + 8, 8);
		b += (v & 0xffffffffULL) + (v >> 32);
		p += 16;
		len -= 16;
	}
	if (len >= 8) {
		memcpy(&v, p, 8);
		a += (v & 0xffffffffULL) + (v >> 32);
		p += 8;
		len -= 8;
	}
	return add_tail(p, len, sum + a + b);
}

__u64 xvi_csum_copy(void *dst, const void *src, size_t len, __u64 sum)
{
	const unsigned char *s = src;
	unsigned char *d = dst;
	__u64 a = 0, b = 0, v, w;

	if (len >= BULK_MIN)
		sum += bulk(&s, &d, &len);

	while (len >= 16) {
		memcpy(&v, s, 8);
		memcpy(&w, s + 8, 8);
		memcpy(d, &v, 8);
		memcpy(d + 8, &w, 8);
		a += (v & 0xffffffffULL) + (v >> 32);
		b += (w & 0xffffffffULL) + (w >> 32);
		s += 16;
		d += 16;
		len -= 16;
	}
	if (len >= 8) {
		memcpy(&v, s, 8);
		memcpy(d, &v, 8);
		a += (v & 0xffffffffULL) + (v >> 32);
		s += 8;
		d += 8;
		len -= 8;
	}
	if (len) {
		memcpy(d, s, len);
		sum = add_tail(s, len, sum);
	}
	return sum + a + b;
}

__u64 xvi_csum_pseudo(int family, const void *saddr, const void *daddr,
		      __u32 udp_len)
{
	__u32 s4, d4;
	__u64 sum;

	if (family == AF_INET6) {
		sum = xvi_csum_partial(saddr, 16, 0);
		sum = xvi_csum_partial(daddr, 16, sum);
	} else {
		/* Once or twice per datagram sent: two words, no calls. */
		memcpy(&s4, saddr, 4);
		memcpy(&d4, daddr, 4);
		sum = (__u64)s4 + d4;
	}
	/* Zero byte + protocol, then the UDP length, as network-order words. */
	sum += htons(IPPROTO_UDP);
	if (family == AF_INET6)
		sum += htonl(udp_len);
	else
		sum += htons((__u16)udp_len);
	return sum;
}
