// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Copy and checksum in one pass on the stream send path: the send queue's
 * summing copy must give the same Internet checksum as a separate pass over
 * the bytes it wrote, whatever the piece boundaries (odd lengths, the copy
 * ring's wrap, referenced items), and the engine must hand the link a
 * correct sum for every data segment.
 */
#include "stream_sim.h"
#include "stream/buf.h"

/* A queue of copied and referenced items with odd lengths that wraps its ring. */
static void fill_queue(struct xvi_ssq *q, __u8 *ref, __u32 seq0)
{
	static const __u32 lens[] = { 7, 300, 1, 150, 40, 3 };	/* 501 <= 512 */
	__u8 chunk[300];
	__u32 i, k;

	cr_assert_eq(xvi_ssq__init(q, 512, 16, seq0), 0);
	for (i = 0; i < sizeof(chunk); i++)
		chunk[i] = (__u8)(i * 37 + 11);
	for (i = 0; i < 5001; i++)
		ref[i] = (__u8)(i * 101 + 7);
	/* Push, then acknowledge the front so the ring's write point wraps. */
	cr_assert_eq(xvi_ssq__push_copy(q, chunk, 300), 300u);
	xvi_ssq__ack(q, seq0 + 300, NULL, NULL);
	for (k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		if (k == 3)
			cr_assert_eq(xvi_ssq__push_ref(q, ref, 5001, 0, 1), 0);
		cr_assert_eq(xvi_ssq__push_copy(q, chunk, lens[k]), lens[k]);
	}
}

Test(stream_sum, summing_copy_matches_a_separate_pass)
{
	static __u8 ref[5001], out[6000], plain[6000];
	static const struct { __u32 skip, len; } cases[] = {
		/* items: [0,7) [7,307) [307,308) copied, [308,5309) referenced,
		 * [5309,5459) [5459,5499) [5499,5502) copied */
		{ 0, 1 }, { 0, 2 }, { 0, 7 }, { 1, 6 }, { 3, 400 }, { 7, 300 },
		{ 300, 200 }, { 306, 5100 }, { 307, 5000 }, { 308, 5001 }, { 0, 5502 },
		{ 5, 5497 }, { 5310, 192 },
	};
	struct xvi_ssq q;
	__u32 seq0 = 0xfffffe00u;	/* sequence numbers wrap as well */

	fill_queue(&q, ref, seq0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		__u32 seq = seq0 + 300 + cases[i].skip, len = cases[i].len;
		__u64 sum;

		memset(out, 0xaa, sizeof(out));
		sum = xvi_ssq__copy_out_sum(&q, seq, out, len);
		xvi_ssq__copy_out(&q, seq, plain, len);
		cr_expect_eq(memcmp(out, plain, len), 0, "case %zu: bytes differ", i);
		cr_expect_eq(xvi_csum_fold(sum), xvi_csum_fold(xvi_csum_partial(out, len, 0)),
			     "case %zu (skip %u, len %u): sum %#x, want %#x", i, cases[i].skip, len,
			     xvi_csum_fold(sum), xvi_csum_fold(xvi_csum_partial(out, len, 0)));
	}
	xvi_ssq__free(&q);
}

Test(stream_sum, engine_sums_every_data_segment)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .window = 32, .sndbuf = 4096);
	static __u8 src[200001], dst[200001];
	struct xvi_stream *l, *c, *v;
	size_t sent = 0, rcvd = 0;
	struct sim s;

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (__u8)(i * 131 + (i >> 9));
	sim_init_summed(&s, 5, &o);
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	/* Odd send sizes against a small send ring: pieces at odd offsets. */
	while (rcvd < sizeof(src)) {
		ssize_t r;

		if (sent < sizeof(src)) {
			size_t n = sizeof(src) - sent < 1001 ? sizeof(src) - sent : 1001;

			r = xvi_ss__send(c, src + sent, n);
			if (r > 0)
				sent += (size_t)r;
		}
		while ((r = xvi_ss__recv(v, dst + rcvd, sizeof(dst) - rcvd)) > 0)
			rcvd += (size_t)r;
		cr_assert(s.now < 60000000ull + 1000000ull, "transfer stalled at %zu", rcvd);
		if (!sim_step(&s))
			s.now += 1000;
	}
	cr_expect_eq(memcmp(src, dst, sizeof(src)), 0, "payload differs");
	cr_expect_gt(s.summed_segs, sizeof(src) / 1472, "only %llu summed segments",
		     (unsigned long long)s.summed_segs);
	sim_fini(&s);
}
