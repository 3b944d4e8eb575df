// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Receive reassembly and send queue with random segments: wrap at 2^32,
 * overlaps, duplicates, out of order; references to application memory.
 */
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include "stream/buf.h"

static __u64 rng_state;

static __u32 rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (__u32)rng_state;
}

struct reasm_case {
	const char *name;
	__u32 isn;
	__u32 bufsz;
	__u32 total;
	__u32 maxseg;
	__u64 seed;
	int dup_pct;
};

static const struct reasm_case reasm_cases[] = {
	{ "plain", 1000, 4096, 200000, 700, 1, 10 },
	{ "wrap at 2^32", 0xffffff00u, 4096, 300000, 900, 2, 20 },
	{ "tiny segments, wrap", 0xfffffff0u, 1024, 50000, 17, 3, 30 },
	{ "one-byte buffer pressure", 5, 256, 20000, 256, 4, 50 },
};

Test(stream_buf, reassembly_random_segments)
{
	for (size_t c = 0; c < sizeof(reasm_cases) / sizeof(reasm_cases[0]); c++) {
		const struct reasm_case *k = &reasm_cases[c];
		__u8 *src = malloc(k->total), *dst = malloc(k->total);
		struct xvi_srq q;
		__u32 got = 0, iter = 0;

		rng_state = k->seed;
		for (__u32 i = 0; i < k->total; i++)
			src[i] = rnd();
		cr_assert_eq(xvi_srq__init(&q, k->bufsz, k->isn), 0);
		while (got < k->total && iter++ < 10000000) {
			/* a random segment anywhere near the window */
			__u32 base = q.nxt - k->isn, span = q.size + k->maxseg;
			__s64 off = (__s64)base - k->maxseg + rnd() % (span + k->maxseg);
			__u32 len = 1 + rnd() % k->maxseg;
			bool dup;

			if (off < 0)
				off = 0;
			if (off >= k->total)
				continue;
			if (off + len > k->total)
				len = k->total - off;
			xvi_srq__insert(&q, k->isn + (__u32)off, src + off, len, &dup);
			if ((int)(rnd() % 100) < k->dup_pct)	/* again, as a duplicate */
				xvi_srq__insert(&q, k->isn + (__u32)off, src + off, len, &dup);
			cr_assert(seq_le(q.nxt, q.rd + q.size), "%s: beyond window", k->name);
			for (__u32 r = 0; r + 1 < q.nr; r++)
				cr_assert(seq_lt(q.r[r].end, q.r[r + 1].start),
					  "%s: ranges not sorted/disjoint", k->name);
			if (rnd() % 3 == 0)
				got += xvi_srq__read(&q, dst + got, rnd() % (k->maxseg * 2 + 1));
		}
		got += xvi_srq__read(&q, dst + got, k->total - got);
		cr_assert_eq(got, k->total, "%s: got %u of %u", k->name, got, k->total);
		cr_assert_eq(memcmp(src, dst, k->total), 0, "%s: data differs", k->name);
		cr_expect_eq(q.nxt, k->isn + k->total);
		xvi_srq__free(&q);
		free(src);
		free(dst);
	}
}

Test(stream_buf, reassembly_sack_and_dup)
{
	struct xvi_srq q;
	struct xvi_sack_blk b[4];
	__u8 d[100] = { 0 };
	bool dup;

	cr_assert_eq(xvi_srq__init(&q, 1000, 0xfffffffbu), 0);
	cr_expect_eq(xvi_srq__insert(&q, 5, d, 10, &dup), 0u);	/* hole [-5, 5) */
	cr_expect_not(dup);
	cr_expect_eq(xvi_srq__insert(&q, 30, d, 10, &dup), 0u);
	cr_expect_eq(xvi_srq__sack(&q, b, 4), 2);
	cr_expect_eq(b[0].start, 30u);	/* most recent first */
	cr_expect_eq(b[1].start, 5u);
	xvi_srq__insert(&q, 30, d, 10, &dup);
	cr_expect(dup);
	cr_expect_eq(xvi_srq__insert(&q, 0xfffffffbu, d, 10, &dup), 20u);	/* fills to 15 */
	cr_expect_eq(q.nxt, 15u);
	cr_expect_eq(q.nr, 1u);
	/* out of window: dropped */
	cr_expect_eq(xvi_srq__insert(&q, 0xfffffffbu + 1024 + 1, d, 10, &dup), 0u);
	cr_expect_eq(q.nr, 1u);
	xvi_srq__free(&q);
}

static int done_n;
static __u64 done_cookies[16];

static void on_done(void *arg, __u64 cookie, int region)
{
	done_cookies[done_n++] = cookie;
}

Test(stream_buf, send_queue_copy_and_ref)
{
	struct xvi_ssq q;
	__u8 big[5000], out[8000], want[8000];
	__u32 seq0 = 0xfffff000u, n;

	for (int i = 0; i < 5000; i++)
		big[i] = i * 3;
	cr_assert_eq(xvi_ssq__init(&q, 1024, 8, seq0), 0);
	n = xvi_ssq__push_copy(&q, "hello ", 6);
	cr_expect_eq(n, 6u);
	cr_expect_eq(xvi_ssq__push_ref(&q, big, 5000, 3, 77), 0);
	n = xvi_ssq__push_copy(&q, "world", 5);
	cr_expect_eq(n, 5u);
	memcpy(want, "hello ", 6);
	memcpy(want + 6, big, 5000);
	memcpy(want + 5006, "world", 5);
	cr_expect_eq(xvi_ssq__queued(&q), 5011u);
	/* every window of the stream copies out exactly */
	for (__u32 off = 0; off < 5011; off += 97) {
		__u32 len = 5011 - off < 1400 ? 5011 - off : 1400;

		xvi_ssq__copy_out(&q, seq0 + off, out, len);
		cr_assert_eq(memcmp(out, want + off, len), 0, "offset %u", off);
	}
	done_n = 0;
	xvi_ssq__ack(&q, seq0 + 3000, on_done, NULL);
	cr_expect_eq(done_n, 0);
	xvi_ssq__copy_out(&q, seq0 + 3000, out, 2011);
	cr_expect_eq(memcmp(out, want + 3000, 2011), 0);
	xvi_ssq__ack(&q, seq0 + 5006, on_done, NULL);
	cr_expect_eq(done_n, 1);
	cr_expect_eq(done_cookies[0], 77u);
	xvi_ssq__ack(&q, seq0 + 5011, on_done, NULL);
	cr_expect_eq(xvi_ssq__queued(&q), 0u);
	cr_expect_eq(q.ring_used, 0u);
	/* ring full: takes only what fits */
	cr_expect_eq(xvi_ssq__push_copy(&q, big, 5000), 1024u);
	cr_expect_eq(xvi_ssq__push_copy(&q, big, 10), 0u);
	xvi_ssq__free(&q);
}
