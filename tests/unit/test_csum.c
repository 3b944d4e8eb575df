// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Checksums against a byte-by-byte RFC 1071 reference that shares no code
 * with libxvi/pkt/csum.c.
 */
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include "pkt/csum.h"
#include "pkt/frame.h"

/* Reference: big-endian 16-bit words, host-order result, not complemented. */
static __u32 ref_sum(const __u8 *p, size_t len, __u32 sum)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (__u32)p[len - 1] << 8;
	return sum;
}

static __u16 ref_fold(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

static void fill_random(__u8 *p, size_t len, unsigned int seed)
{
	size_t i;

	srand(seed);
	for (i = 0; i < len; i++)
		p[i] = rand() & 0xff;
}

/* Native-order checksum as bytes on the wire, for comparison. */
static __u16 wire(__u16 native)
{
	__u8 b[2];

	memcpy(b, &native, 2);
	return (__u16)(b[0] << 8 | b[1]);
}

Test(csum, rfc1071_example)
{
	/* RFC 1071 section 3: the sum of these bytes is 0xddf2. */
	static const __u8 d[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };

	cr_expect_eq(wire(xvi_csum_fold(xvi_csum_partial(d, sizeof(d), 0))), 0xddf2);
	cr_expect_eq(wire(xvi_csum_finish(xvi_csum_partial(d, sizeof(d), 0))), 0x220d);
}

Test(csum, ip4_header_known_vector)
{
	/* A well-known IPv4 header whose checksum is 0xb861. */
	__u8 h[20] = { 0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
		       0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7 };
	__u16 c = xvi_csum_ip4_hdr(h, 20);

	cr_expect_eq(wire(c), 0xb861, "got %#x", wire(c));
	memcpy(h + 10, &c, 2);
	cr_expect(xvi_csum_ok(xvi_csum_partial(h, 20, 0)), "header with its checksum must verify");
}

/* The vector loops to check: SSE2 always on x86-64, AVX2 where the CPU has it. */
static int vector_modes(int modes[2])
{
	int n = 0;

	modes[n++] = 0;
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx2"))
		modes[n++] = 1;
#endif
	return n;
}

static __u16 ones(__u16 v)
{
	/* 0x0000 and 0xffff are the same number in ones complement. */
	return v == 0xffff ? 0 : v;
}

Test(csum, partial_matches_reference_all_lengths)
{
	static __u8 buf[9100];
	int modes[2], nm = vector_modes(modes);
	size_t len, off;

	fill_random(buf, sizeof(buf), 1);
	for (int m = 0; m < nm; m++) {
		xvi_csum_avx2 = modes[m];
		for (off = 0; off < 3; off++) {
			for (len = 0; len + off <= sizeof(buf); len += (len < 300 ? 1 : 97)) {
				__u16 got = wire(xvi_csum_fold(xvi_csum_partial(buf + off, len, 0)));
				__u16 want = ref_fold(ref_sum(buf + off, len, 0));

				cr_expect_eq(ones(got), ones(want), "avx2=%d off %zu len %zu: got %#x want %#x",
					     modes[m], off, len, got, want);
			}
		}
	}
	xvi_csum_avx2 = -1;
}

Test(csum, partial_sums_chain_at_even_offsets)
{
	static __u8 buf[301];
	__u64 whole, parts;

	fill_random(buf, sizeof(buf), 2);
	whole = xvi_csum_partial(buf, sizeof(buf), 0);
	parts = xvi_csum_partial(buf, 10, 0);
	parts = xvi_csum_partial(buf + 10, 6, parts);
	parts = xvi_csum_partial(buf + 16, sizeof(buf) - 16, parts);
	cr_expect_eq(xvi_csum_fold(whole), xvi_csum_fold(parts));
}

Test(csum, fused_copy_equals_separate)
{
	static __u8 src[9100], dst[9200];
	int modes[2], nm = vector_modes(modes);
	size_t len, so, doff;

	fill_random(src, sizeof(src), 3);
	for (int m = 0; m < nm; m++) {
		xvi_csum_avx2 = modes[m];
		for (so = 0; so < 4; so++) {
			for (doff = 0; doff < 3; doff++) {
				for (len = 0; len + so <= sizeof(src); len += (len < 300 ? 1 : 211)) {
					__u64 fused;
					__u16 got, want;

					memset(dst, 0xaa, len + doff + 1);
					fused = xvi_csum_copy(dst + doff, src + so, len, 0);
					got = wire(xvi_csum_fold(fused));
					want = ref_fold(ref_sum(src + so, len, 0));
					cr_assert_eq(ones(got), ones(want),
						     "avx2=%d len %zu src+%zu dst+%zu: %#x, want %#x",
						     modes[m], len, so, doff, got, want);
					cr_assert(!memcmp(dst + doff, src + so, len),
						  "copy differs at len %zu", len);
					cr_assert_eq(dst[doff + len], 0xaa,
						     "wrote past the end at len %zu", len);
				}
			}
		}
	}
	xvi_csum_avx2 = -1;
}

Test(csum, fold_extremes)
{
	/* 2^32 = 1 (mod 0xffff); a large sum of 0xffffffff words folds sanely. */
	cr_expect_eq(xvi_csum_fold(1ULL << 32), 1);
	cr_expect_eq(xvi_csum_fold(0), 0);
	cr_expect_eq(xvi_csum_fold(0xffffULL), 0xffff);
	cr_expect_eq(xvi_csum_fold(0xffffffffULL * 1000), ref_fold(0xffff) /* 0xffff */);
}

Test(csum, udp_zero_is_sent_as_ffff)
{
	/* A sum that folds to 0xffff complements to 0: must go out as 0xffff. */
	cr_expect_eq(xvi_csum_udp_tx(0xffff), 0xffff);
	cr_expect_eq(xvi_csum_finish(0xffff), 0);
	cr_expect_eq(xvi_csum_udp_tx(0x1234), (__u16)~0x1234);
}

/* Reference UDP checksum over a pseudo header built byte by byte. */
static __u16 ref_udp(int family, const __u8 *src, const __u8 *dst,
		     const __u8 *udp, size_t ulen)
{
	__u8 ph[40] = { 0 };
	size_t alen = family == AF_INET6 ? 16 : 4, n;
	__u32 sum;

	memcpy(ph, src, alen);
	memcpy(ph + alen, dst, alen);
	n = 2 * alen;
	if (family == AF_INET6) {
		ph[n + 2] = ulen >> 8;
		ph[n + 3] = ulen & 0xff;
		ph[n + 7] = IPPROTO_UDP;
		n += 8;
	} else {
		ph[n + 1] = IPPROTO_UDP;
		ph[n + 2] = ulen >> 8;
		ph[n + 3] = ulen & 0xff;
		n += 4;
	}
	sum = ref_sum(ph, n, 0);
	/* Checksum field (bytes 6-7) counted as zero. */
	sum = ref_sum(udp, 6, sum);
	sum = ref_sum(udp + 8, ulen - 8, sum);
	sum = (__u16)~ref_fold(sum);
	return sum ? sum : 0xffff;
}

static const struct {
	const char *name;
	int family;
	size_t len;
} udp_cases[] = {
	{ "v4 empty", AF_INET, 0 }, { "v4 odd 1", AF_INET, 1 },
	{ "v4 odd 33", AF_INET, 33 }, { "v4 1472", AF_INET, 1472 },
	{ "v6 empty", AF_INET6, 0 }, { "v6 odd 1", AF_INET6, 1 },
	{ "v6 odd 555", AF_INET6, 555 }, { "v6 1452", AF_INET6, 1452 },
};

static void spec_for(struct xvi_frame_spec *s, int family)
{
	memset(s, 0, sizeof(*s));
	s->family = family;
	memcpy(s->dst_mac, "\x02\x00\x00\x00\x00\x02", 6);
	memcpy(s->src_mac, "\x02\x00\x00\x00\x00\x01", 6);
	s->src.family = s->dst.family = family;
	if (family == AF_INET) {
		inet_pton(AF_INET, "198.18.0.1", s->src.a);
		inet_pton(AF_INET, "198.18.0.2", s->dst.a);
	} else {
		inet_pton(AF_INET6, "2001:2::1", s->src.a);
		inet_pton(AF_INET6, "2001:2::2", s->dst.a);
	}
	s->sport = 7000;
	s->dport = 11111;
}

Test(csum, udp_checksum_matches_reference)
{
	static __u8 payload[1500], frame[1600];
	size_t i;

	fill_random(payload, sizeof(payload), 4);
	for (i = 0; i < sizeof(udp_cases) / sizeof(udp_cases[0]); i++) {
		struct xvi_frame_spec s;
		struct xvi_frame_info fi;
		__u16 got;
		int len;

		spec_for(&s, udp_cases[i].family);
		len = xvi_frame__build(frame, sizeof(frame), &s, payload, udp_cases[i].len);
		cr_assert_gt(len, 0, "%s: build failed %d", udp_cases[i].name, len);
		cr_assert_eq(xvi_frame__parse(frame, len, &fi), 0, "%s", udp_cases[i].name);
		got = (__u16)(frame[fi.l4_off + 6] << 8 | frame[fi.l4_off + 7]);
		cr_expect_eq(got, ref_udp(s.family, s.src.a, s.dst.a, frame + fi.l4_off,
					  fi.udp_len),
			     "%s: checksum %#x", udp_cases[i].name, got);
		cr_expect_eq(xvi_frame__verify(frame, &fi), 0, "%s", udp_cases[i].name);
		/* Any flipped payload bit must be caught. */
		if (udp_cases[i].len) {
			frame[fi.payload_off + udp_cases[i].len / 2] ^= 0x10;
			cr_expect_eq(xvi_frame__verify(frame, &fi), -XVI_FRAME_E_UDP_CSUM,
				     "%s: corruption not detected", udp_cases[i].name);
		}
	}
}

Test(csum, udp_computed_zero_goes_out_as_ffff)
{
	int fams[] = { AF_INET, AF_INET6 };
	__u8 payload[16] = "edge-case-zero!", frame[128];
	size_t f;

	for (f = 0; f < 2; f++) {
		struct xvi_frame_spec s;
		struct xvi_frame_info fi;
		__u16 c, want;
		int len;

		spec_for(&s, fams[f]);
		/*
		 * Pick the last two payload bytes so that the datagram sums to
		 * 0xffff: its checksum computes to 0 and must be sent as 0xffff.
		 */
		payload[14] = payload[15] = 0;
		len = xvi_frame__build(frame, sizeof(frame), &s, payload, 16);
		cr_assert_gt(len, 0);
		xvi_frame__parse(frame, len, &fi);
		c = (__u16)(frame[fi.l4_off + 6] << 8 | frame[fi.l4_off + 7]);
		/*
		 * The datagram sums to S = ~c; adding the word ~S = c makes it
		 * S + ~S = 0xffff, whose checksum computes to 0.
		 */
		want = c;
		payload[14] = want >> 8;
		payload[15] = want & 0xff;
		len = xvi_frame__build(frame, sizeof(frame), &s, payload, 16);
		xvi_frame__parse(frame, len, &fi);
		c = (__u16)(frame[fi.l4_off + 6] << 8 | frame[fi.l4_off + 7]);
		cr_expect_eq(c, 0xffff, "family %d: checksum %#x, want 0xffff", fams[f], c);
		cr_expect_eq(xvi_frame__verify(frame, &fi), 0);
	}
}
