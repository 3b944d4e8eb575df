// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Frame build/parse round trips and the parser's error table. */
#include <string.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include "pkt/frame.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const __u8 MAC_A[6] = { 0x02, 0, 0, 0, 0, 0x0a };
static const __u8 MAC_B[6] = { 0x02, 0, 0, 0, 0, 0x0b };

enum kind { K_V4, K_V6, K_RAW };

static void make_spec(struct xvi_frame_spec *s, enum kind k, bool vlan)
{
	memset(s, 0, sizeof(*s));
	memcpy(s->dst_mac, MAC_B, 6);
	memcpy(s->src_mac, MAC_A, 6);
	s->vlan = vlan;
	s->vlan_tci = 0x0123;
	switch (k) {
	case K_V4:
		s->family = AF_INET;
		s->src.family = s->dst.family = AF_INET;
		inet_pton(AF_INET, "198.18.0.1", s->src.a);
		inet_pton(AF_INET, "198.18.0.2", s->dst.a);
		break;
	case K_V6:
		s->family = AF_INET6;
		s->src.family = s->dst.family = AF_INET6;
		inet_pton(AF_INET6, "2001:2::1", s->src.a);
		inet_pton(AF_INET6, "2001:2::2", s->dst.a);
		break;
	case K_RAW:
		s->family = AF_PACKET;
		s->src_tag = 0xdeadbeef;
		s->dst_tag = 0x01020304;
		break;
	}
	s->sport = 40000;
	s->dport = 7000;
	s->ip_id = 0x4242;
}

static const struct {
	const char *name;
	enum kind kind;
	bool vlan;
	__u32 hdr_len;
} kinds[] = {
	{ "udp4", K_V4, false, 42 },	{ "udp4+vlan", K_V4, true, 46 },
	{ "udp6", K_V6, false, 62 },	{ "udp6+vlan", K_V6, true, 66 },
	{ "raw", K_RAW, false, 26 },	{ "raw+vlan", K_RAW, true, 30 },
};

static const __u32 lens[] = { 0, 1, 7, 64, 1400 };

Test(frame, round_trip_every_kind)
{
	static __u8 payload[1500], frame[1600];
	size_t k, l, i;

	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (__u8)(i * 7 + 3);
	for (k = 0; k < ARRAY_SIZE(kinds); k++) {
		for (l = 0; l < ARRAY_SIZE(lens); l++) {
			struct xvi_frame_spec s;
			struct xvi_frame_info fi;
			__u32 want_flags = 0;
			int len, err;

			make_spec(&s, kinds[k].kind, kinds[k].vlan);
			cr_assert_eq(xvi_frame__hdr_len(&s), kinds[k].hdr_len, "%s", kinds[k].name);
			len = xvi_frame__build(frame, sizeof(frame), &s, payload, lens[l]);
			cr_assert_eq(len, (int)(kinds[k].hdr_len + lens[l]), "%s/%u: len %d",
				     kinds[k].name, lens[l], len);
			err = xvi_frame__parse(frame, len, &fi);
			cr_assert_eq(err, 0, "%s/%u: %s", kinds[k].name, lens[l],
				     xvi_frame__strerror(err));
			cr_expect_eq(fi.payload_off, kinds[k].hdr_len, "%s", kinds[k].name);
			cr_expect_eq(fi.payload_len, lens[l], "%s", kinds[k].name);
			cr_expect(!memcmp(frame + fi.payload_off, payload, lens[l]), "%s",
				  kinds[k].name);
			cr_expect(!memcmp(fi.dst_mac, MAC_B, 6) && !memcmp(fi.src_mac, MAC_A, 6),
				  "%s: MACs", kinds[k].name);
			cr_expect_eq(fi.l3_off, kinds[k].vlan ? 18 : 14, "%s", kinds[k].name);
			if (kinds[k].vlan) {
				want_flags |= XVI_RX_VLAN;
				cr_expect_eq(fi.vlan_tci, 0x0123, "%s", kinds[k].name);
			}
			switch (kinds[k].kind) {
			case K_RAW:
				want_flags |= XVI_RX_RAW;
				cr_expect_eq(fi.ethertype, XVI_ETH_P_RAW);
				cr_expect_eq(fi.src_tag, 0xdeadbeef);
				cr_expect_eq(fi.dst_tag, 0x01020304);
				cr_expect_eq(fi.l4_off, fi.l3_off);
				break;
			case K_V6:
				want_flags |= XVI_RX_IPV6;
				/* fallthrough */
			case K_V4:
				cr_expect_eq(fi.sport, 40000, "%s", kinds[k].name);
				cr_expect_eq(fi.dport, 7000, "%s", kinds[k].name);
				cr_expect_eq(fi.udp_len, lens[l] + 8, "%s", kinds[k].name);
				cr_expect(!memcmp(fi.src.a, s.src.a, 16) &&
					  !memcmp(fi.dst.a, s.dst.a, 16),
					  "%s: addresses", kinds[k].name);
				cr_expect_eq(fi.src.family, s.family);
				break;
			}
			cr_expect_eq(fi.flags, want_flags, "%s: flags %#x want %#x",
				     kinds[k].name, fi.flags, want_flags);
			cr_expect_eq(xvi_frame__verify(frame, &fi), 0, "%s/%u", kinds[k].name,
				     lens[l]);
		}
	}
}

Test(frame, ip4_header_fields)
{
	__u8 frame[128];
	struct xvi_frame_spec s;
	int len;

	make_spec(&s, K_V4, false);
	len = xvi_frame__build(frame, sizeof(frame), &s, "hi", 2);
	cr_assert_eq(len, 44);
	cr_expect_eq(frame[14], 0x45);
	cr_expect_eq(frame[16] << 8 | frame[17], 30, "total length");
	cr_expect_eq(frame[18] << 8 | frame[19], 0x4242, "identification");
	cr_expect_eq(frame[20], 0x40, "DF set, no offset");
	cr_expect_eq(frame[22], 64, "TTL");
	cr_expect_eq(frame[23], IPPROTO_UDP);
}

Test(frame, ip6_header_fields)
{
	__u8 frame[128];
	struct xvi_frame_spec s;
	int len;

	make_spec(&s, K_V6, false);
	len = xvi_frame__build(frame, sizeof(frame), &s, "hi", 2);
	cr_assert_eq(len, 64);
	cr_expect_eq(frame[14] >> 4, 6);
	cr_expect_eq(frame[18] << 8 | frame[19], 10, "payload length");
	cr_expect_eq(frame[20], IPPROTO_UDP);
	cr_expect_eq(frame[21], 64, "hop limit");
}

Test(frame, ip4_without_udp_checksum)
{
	__u8 frame[128];
	struct xvi_frame_spec s;
	struct xvi_frame_info fi;
	int len;

	make_spec(&s, K_V4, false);
	s.no_udp_csum = true;
	len = xvi_frame__build(frame, sizeof(frame), &s, "data", 4);
	cr_assert_eq(xvi_frame__parse(frame, len, &fi), 0);
	cr_expect(fi.flags & XVI_RX_CSUM_NONE);
	cr_expect_eq(xvi_frame__verify(frame, &fi), 0, "checksum 0 is legal over IPv4");
}

Test(frame, ip6_zero_udp_checksum_rejected)
{
	__u8 frame[128];
	struct xvi_frame_spec s;
	struct xvi_frame_info fi;
	int len;

	make_spec(&s, K_V6, false);
	len = xvi_frame__build(frame, sizeof(frame), &s, "data", 4);
	frame[62 - 8 + 6] = frame[62 - 8 + 7] = 0;
	cr_assert_eq(xvi_frame__parse(frame, len, &fi), 0);
	cr_expect_eq(xvi_frame__verify(frame, &fi), -XVI_FRAME_E_UDP_CSUM);
}

Test(frame, bad_ip4_header_checksum)
{
	__u8 frame[128];
	struct xvi_frame_spec s;
	struct xvi_frame_info fi;
	int len;

	make_spec(&s, K_V4, false);
	len = xvi_frame__build(frame, sizeof(frame), &s, "data", 4);
	frame[22] = 63;		/* TTL changed without fixing the checksum */
	cr_assert_eq(xvi_frame__parse(frame, len, &fi), 0);
	cr_expect_eq(xvi_frame__verify(frame, &fi), -XVI_FRAME_E_IP_CSUM);
}

/* ---- parser error table: a valid frame, one mutation, one verdict ---- */

static void set16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static void m_none(__u8 *f) { (void)f; }
static void m_arp(__u8 *f) { set16(f + 12, 0x0806); }
static void m_qinq(__u8 *f) { set16(f + 16, 0x8100); }
static void m_ip4_ver(__u8 *f) { f[14] = 0x55; }
static void m_ip4_ihl(__u8 *f) { f[14] = 0x44; }
static void m_ip4_ihl_big(__u8 *f) { f[14] = 0x4f; }
static void m_ip4_totlen_big(__u8 *f) { set16(f + 16, 1000); }
static void m_ip4_totlen_small(__u8 *f) { set16(f + 16, 19); }
static void m_ip4_mf(__u8 *f) { f[20] |= 0x20; }
static void m_ip4_off(__u8 *f) { set16(f + 20, 0x0001); }
static void m_ip4_tcp(__u8 *f) { f[23] = IPPROTO_TCP; }
static void m_ip4_udp_trunc(__u8 *f) { set16(f + 16, 24); }
static void m_ip4_ulen_small(__u8 *f) { set16(f + 38, 7); }
static void m_ip4_ulen_big(__u8 *f) { set16(f + 38, 200); }
static void m_ip6_ver(__u8 *f) { f[14] = 0x40; }
static void m_ip6_plen_big(__u8 *f) { set16(f + 18, 1000); }
static void m_ip6_frag(__u8 *f) { f[20] = IPPROTO_FRAGMENT; }
static void m_ip6_tcp(__u8 *f) { f[20] = IPPROTO_TCP; }
static void m_ip6_ulen_big(__u8 *f) { set16(f + 58, 100); }
static void m_raw_len_big(__u8 *f) { set16(f + 22, 100); }
static void m_raw_len_small(__u8 *f) { set16(f + 22, 1); }

static const struct {
	const char *name;
	enum kind kind;
	bool vlan;
	void (*mutate)(__u8 *f);
	int cut;		/* bytes removed from the end */
	int want;
} bad[] = {
	{ "runt", K_V4, false, m_none, 46 - 10, -XVI_FRAME_E_RUNT },
	{ "vlan runt", K_V4, true, m_none, 50 - 16, -XVI_FRAME_E_RUNT },
	{ "arp", K_V4, false, m_arp, 0, -XVI_FRAME_E_ETHERTYPE },
	{ "stacked vlan", K_V4, true, m_qinq, 0, -XVI_FRAME_E_ETHERTYPE },
	{ "ip4 truncated", K_V4, false, m_none, 46 - 33, -XVI_FRAME_E_L3_TRUNC },
	{ "ip4 version", K_V4, false, m_ip4_ver, 0, -XVI_FRAME_E_IP_VERSION },
	{ "ip4 ihl < 5", K_V4, false, m_ip4_ihl, 0, -XVI_FRAME_E_IP_HLEN },
	{ "ip4 ihl past frame", K_V4, false, m_ip4_ihl_big, 0, -XVI_FRAME_E_IP_HLEN },
	{ "ip4 tot_len past frame", K_V4, false, m_ip4_totlen_big, 0, -XVI_FRAME_E_IP_LEN },
	{ "ip4 tot_len < ihl", K_V4, false, m_ip4_totlen_small, 0, -XVI_FRAME_E_IP_LEN },
	{ "ip4 more fragments", K_V4, false, m_ip4_mf, 0, -XVI_FRAME_E_FRAGMENT },
	{ "ip4 fragment offset", K_V4, false, m_ip4_off, 0, -XVI_FRAME_E_FRAGMENT },
	{ "ip4 tcp", K_V4, false, m_ip4_tcp, 0, -XVI_FRAME_E_NOT_UDP },
	{ "ip4 udp truncated", K_V4, false, m_ip4_udp_trunc, 0, -XVI_FRAME_E_UDP_TRUNC },
	{ "udp len < 8", K_V4, false, m_ip4_ulen_small, 0, -XVI_FRAME_E_UDP_LEN },
	{ "udp len past ip", K_V4, false, m_ip4_ulen_big, 0, -XVI_FRAME_E_UDP_LEN },
	{ "ip6 truncated", K_V6, false, m_none, 66 - 50, -XVI_FRAME_E_L3_TRUNC },
	{ "ip6 version", K_V6, false, m_ip6_ver, 0, -XVI_FRAME_E_IP_VERSION },
	{ "ip6 plen past frame", K_V6, false, m_ip6_plen_big, 0, -XVI_FRAME_E_IP_LEN },
	{ "ip6 fragment", K_V6, false, m_ip6_frag, 0, -XVI_FRAME_E_FRAGMENT },
	{ "ip6 tcp", K_V6, false, m_ip6_tcp, 0, -XVI_FRAME_E_NOT_UDP },
	{ "ip6 udp len past ip", K_V6, false, m_ip6_ulen_big, 0, -XVI_FRAME_E_UDP_LEN },
	{ "raw truncated", K_RAW, false, m_none, 30 - 20, -XVI_FRAME_E_L3_TRUNC },
	{ "raw len past frame", K_RAW, false, m_raw_len_big, 0, -XVI_FRAME_E_RAW_LEN },
	{ "raw len shorter is fine", K_RAW, false, m_raw_len_small, 0, 0 },
	{ "ip4 cut payload", K_V4, false, m_none, 1, -XVI_FRAME_E_IP_LEN },
};

Test(frame, parser_rejects_bad_frames)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		__u8 frame[256];
		struct xvi_frame_spec s;
		struct xvi_frame_info fi;
		int len, err;

		make_spec(&s, bad[i].kind, bad[i].vlan);
		/* 4 payload bytes: 46 (v4), 66 (v6), 30 (raw) bytes untagged. */
		len = xvi_frame__build(frame, sizeof(frame), &s, "abcd", 4);
		cr_assert_gt(len, 0);
		bad[i].mutate(frame);
		err = xvi_frame__parse(frame, len - bad[i].cut, &fi);
		cr_expect_eq(err, bad[i].want, "%s: got %d (%s), want %d (%s)", bad[i].name,
			     err, xvi_frame__strerror(err), bad[i].want,
			     xvi_frame__strerror(bad[i].want));
	}
}

Test(frame, build_errors)
{
	__u8 frame[64];
	struct xvi_frame_spec s;

	make_spec(&s, K_V6, false);
	cr_expect_eq(xvi_frame__build(frame, sizeof(frame), &s, "abc", 3), -XVI_FRAME_E_NOSPACE);
	s.family = AF_UNIX;
	cr_expect_eq(xvi_frame__build(frame, sizeof(frame), &s, "abc", 3), -XVI_FRAME_E_SPEC);
	cr_expect_eq(xvi_frame__hdr_len(&s), 0u);
}

Test(frame, strerror_names_every_error)
{
	int e;

	for (e = 1; e < XVI_FRAME__E_MAX; e++)
		cr_expect(xvi_frame__strerror(-e) && strlen(xvi_frame__strerror(-e)) > 3,
			  "error %d has no text", e);
	cr_expect_str_eq(xvi_frame__strerror(-1000), "unknown frame error");
}
