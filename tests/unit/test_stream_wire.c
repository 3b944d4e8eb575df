// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Stream segment codec: round trips, CRC32C, rejection of bad headers. */
#include <errno.h>
#include <string.h>
#include <criterion/criterion.h>
#include "stream/wire.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

Test(stream_wire, crc32c_known_vectors)
{
	/* RFC 3720 B.4 test vectors */
	__u8 zeros[32] = { 0 }, ones[32], inc[32];

	memset(ones, 0xff, sizeof(ones));
	for (int i = 0; i < 32; i++)
		inc[i] = i;
	cr_expect_eq(xvi_crc32c(0, "123456789", 9), 0xE3069283u);
	cr_expect_eq(xvi_crc32c(0, zeros, 32), 0x8A9136AAu);
	cr_expect_eq(xvi_crc32c(0, ones, 32), 0x62A8AB43u);
	cr_expect_eq(xvi_crc32c(0, inc, 32), 0x46DD794Eu);
	/* incremental == one shot */
	cr_expect_eq(xvi_crc32c(xvi_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
}

static const struct xvi_shdr rt_cases[] = {
	{ .flags = XVI_SF_SYN, .scid = 7, .seq = 0xfffffff0u, .svc = 80, .mss = 1400,
	  .wnd = 65536, .tsval = 123 },
	{ .flags = XVI_SF_SYN | XVI_SF_ACK, .dcid = 7, .scid = 9, .seq = 1, .ack = 0xfffffff1u,
	  .mss = 1000, .wnd = 1 },
	{ .flags = XVI_SF_ACK, .dcid = 1, .scid = 2, .seq = 100, .ack = 200, .wnd = 3,
	  .len = 10, .tsval = 0xdeadbeef, .tsecr = 0xfeedface },
	{ .flags = XVI_SF_ACK | XVI_SF_FIN | XVI_SF_PRB, .dcid = 1, .scid = 2, .nsack = 4,
	  .sack = { { 10, 20 }, { 30, 40 }, { 0xfffffff0u, 5 }, { 50, 51 } } },
	{ .flags = XVI_SF_RST | XVI_SF_ACK, .dcid = 0xffffffffu, .scid = 0xffffffffu },
};

Test(stream_wire, round_trip)
{
	for (size_t i = 0; i < ARRAY_SIZE(rt_cases); i++) {
		for (int crc = 0; crc < 2; crc++) {
			__u8 buf[256];
			struct xvi_shdr h = rt_cases[i], d;
			__u32 hl = xvi_shdr__encode(&h, buf);
			int r;

			memset(buf + hl, 0xa5, h.len);
			if (crc)
				xvi_shdr__seal(buf, hl + h.len);
			r = xvi_shdr__decode(&d, buf, hl + h.len, !crc);
			cr_assert_eq(r, (int)hl, "case %zu crc %d: %d", i, crc, r);
			cr_expect_eq(d.flags & ~XVI_SF_CRC, h.flags);
			cr_expect_eq(!!(d.flags & XVI_SF_CRC), crc);
			cr_expect_eq(d.dcid, h.dcid);
			cr_expect_eq(d.scid, h.scid);
			cr_expect_eq(d.seq, h.seq);
			cr_expect_eq(d.ack, h.ack);
			cr_expect_eq(d.wnd, h.wnd);
			cr_expect_eq(d.tsval, h.tsval);
			cr_expect_eq(d.tsecr, h.tsecr);
			cr_expect_eq(d.svc, h.svc);
			cr_expect_eq(d.len, h.len);
			cr_expect_eq(d.mss, h.mss);
			cr_expect_eq(d.nsack, h.nsack);
			for (int k = 0; k < h.nsack; k++) {
				cr_expect_eq(d.sack[k].start, h.sack[k].start);
				cr_expect_eq(d.sack[k].end, h.sack[k].end);
			}
		}
	}
}

Test(stream_wire, byte_layout)
{
	/* Pin the wire layout documented in docs/PROTOCOL.md. */
	struct xvi_shdr h = { .flags = XVI_SF_ACK, .dcid = 0x01020304, .scid = 0x05060708,
			      .seq = 0x090a0b0c, .ack = 0x0d0e0f10, .wnd = 0x11121314,
			      .tsval = 0x15161718, .tsecr = 0x191a1b1c, .svc = 0x1d1e,
			      .len = 0, .mss = 0x2122 };
	const __u8 want[44] = { 1, 2, 11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
				13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27,
				28, 0x1d, 0x1e, 0, 0, 0x21, 0x22, 0, 0, 0, 0, 0, 0 };
	__u8 buf[64];

	cr_assert_eq(xvi_shdr__encode(&h, buf), 44u);
	cr_expect_arr_eq(buf, want, 44);
}

enum mut { M_NONE, M_VERSION, M_FLAGS, M_HWORDS, M_NSACK, M_LEN, M_RESERVED, M_SCID0,
	   M_SYNFIN, M_RSTSYN, M_DCID0, M_NOACK, M_SYNDATA, M_SACKREV, M_SHORT, M_CHECK_NOCRC,
	   M_SYNMSS };

struct bad_case {
	const char *name;
	enum mut m;
	bool crc;
	int want;
};

static const struct bad_case bad_cases[] = {
	{ "good", M_NONE, true, 0 },
	{ "good unsealed on a verified link", M_NONE, false, 0 },
	{ "version 2", M_VERSION, false, -EPROTO },
	{ "unknown flag", M_FLAGS, false, -EPROTO },
	{ "hwords wrong", M_HWORDS, false, -EPROTO },
	{ "nsack 5", M_NSACK, false, -EPROTO },
	{ "len too long", M_LEN, false, -EPROTO },
	{ "reserved nonzero", M_RESERVED, false, -EPROTO },
	{ "scid 0", M_SCID0, false, -EPROTO },
	{ "SYN+FIN", M_SYNFIN, false, -EPROTO },
	{ "RST+SYN", M_RSTSYN, false, -EPROTO },
	{ "dcid 0 without SYN", M_DCID0, false, -EPROTO },
	{ "neither ACK nor RST", M_NOACK, false, -EPROTO },
	{ "SYN with data", M_SYNDATA, false, -EPROTO },
	{ "SACK block reversed", M_SACKREV, false, -EPROTO },
	{ "shorter than a header", M_SHORT, false, -EPROTO },
	{ "check nonzero, no CRC flag", M_CHECK_NOCRC, false, -EBADMSG },
	{ "SYN mss below 64", M_SYNMSS, false, -EPROTO },
};

Test(stream_wire, rejects_bad_headers)
{
	for (size_t i = 0; i < ARRAY_SIZE(bad_cases); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct xvi_shdr h = { .flags = XVI_SF_ACK, .dcid = 1, .scid = 2, .seq = 3,
				      .ack = 4, .len = 8, .nsack = 1, .sack = { { 5, 9 } } }, d;
		__u8 buf[128] = { 0 };
		__u32 hl, total;

		switch (c->m) {
		case M_SCID0: h.scid = 0; break;
		case M_SYNFIN: h.flags = XVI_SF_SYN | XVI_SF_FIN; h.dcid = 0; h.len = 0;
			h.nsack = 0; h.mss = 100; break;
		case M_RSTSYN: h.flags = XVI_SF_SYN | XVI_SF_RST; h.dcid = 0; h.len = 0;
			h.nsack = 0; h.mss = 100; break;
		case M_DCID0: h.dcid = 0; break;
		case M_NOACK: h.flags = 0; break;
		case M_SYNDATA: h.flags = XVI_SF_SYN; h.dcid = 0; h.nsack = 0; h.mss = 100; break;
		case M_SACKREV: h.sack[0].start = 9; h.sack[0].end = 5; break;
		case M_SYNMSS: h.flags = XVI_SF_SYN; h.dcid = 0; h.len = 0; h.nsack = 0;
			h.mss = 10; break;
		default: break;
		}
		hl = xvi_shdr__encode(&h, buf);
		total = hl + h.len;
		switch (c->m) {
		case M_VERSION: buf[0] = 2; break;
		case M_FLAGS: buf[1] |= 0x40; break;
		case M_HWORDS: buf[2]++; break;
		case M_NSACK: buf[3] = 5; break;
		case M_LEN: buf[35]++; break;
		case M_RESERVED: buf[39] = 1; break;
		case M_SHORT: total = 40; break;
		case M_CHECK_NOCRC: buf[43] = 1; break;
		default: break;
		}
		if (c->crc)
			xvi_shdr__seal(buf, total);
		int r = xvi_shdr__decode(&d, buf, total, true);

		if (c->want)
			cr_expect_eq(r, c->want, "%s: got %d want %d", c->name, r, c->want);
		else
			cr_expect_eq(r, (int)hl, "%s: got %d", c->name, r);
	}
}

Test(stream_wire, crc_catches_every_single_bit_flip)
{
	struct xvi_shdr h = { .flags = XVI_SF_ACK, .dcid = 1, .scid = 2, .len = 40, .nsack = 1,
			      .sack = { { 1, 2 } } }, d;
	__u8 buf[128];
	__u32 hl = xvi_shdr__encode(&h, buf), total = hl + h.len;

	for (__u32 i = 0; i < h.len; i++)
		buf[hl + i] = i * 7;
	xvi_shdr__seal(buf, total);
	cr_assert_eq(xvi_shdr__decode(&d, buf, total, false), (int)hl);
	for (__u32 bit = 0; bit < total * 8; bit++) {
		int r;

		buf[bit / 8] ^= 1u << (bit % 8);
		r = xvi_shdr__decode(&d, buf, total, false);
		cr_expect(r < 0, "bit %u flipped, still accepted", bit);
		buf[bit / 8] ^= 1u << (bit % 8);
	}
	/* Raw mode: an unsealed segment is never trusted. */
	hl = xvi_shdr__encode(&h, buf);
	cr_expect_eq(xvi_shdr__decode(&d, buf, total, false), -EBADMSG);
}
