// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi_steer__build: the ntuple rule (ETHTOOL_SRXCLSRLINS) that steers a UDP
 * endpoint's port to a receive queue.  No device here has ntuple rules
 * (veth has none), so the rule is checked field by field as the driver
 * would read it: flow type, the port and address it matches with their
 * masks (a set mask bit is a bit that must match), the queue, the location,
 * and nothing else matched.
 */
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include "ctl/ctl.h"
#include "ctl/steer.h"
#include "xvi.h"

static struct xvi_tag tag_of(const char *s)
{
	struct xvi_tag t;

	cr_assert_eq(xvi_tag__parse(s, &t), 0, "parse %s", s);
	return t;
}

static void quiet(void)
{
	xvi_set_print(NULL);
}

TestSuite(steer, .init = quiet);

/* Every byte of @p is 0 (@n up to 64): no other field is matched. */
static bool zero(const void *p, size_t n)
{
	static const __u8 none[64];

	return n <= sizeof(none) && !memcmp(p, none, n);
}

Test(steer, udp4_exact_address_and_port)
{
	struct xvi_tag t = tag_of("198.18.0.2:7000");
	struct ethtool_rxnfc nfc;
	struct ethtool_tcpip4_spec h, m;

	cr_assert_eq(xvi_steer__build(&t, 3, XVI_STEER_LOC_ANY, &nfc), 0);
	cr_expect_eq(nfc.cmd, ETHTOOL_SRXCLSRLINS);
	cr_expect_eq(nfc.fs.flow_type, UDP_V4_FLOW);
	cr_expect_eq(nfc.fs.ring_cookie, 3);
	cr_expect_eq(nfc.fs.location, RX_CLS_LOC_ANY);
	h = nfc.fs.h_u.udp_ip4_spec;
	m = nfc.fs.m_u.udp_ip4_spec;
	cr_expect_eq(h.pdst, htons(7000));
	cr_expect_eq(m.pdst, 0xffff);
	cr_expect_eq(h.ip4dst, inet_addr("198.18.0.2"));
	cr_expect_eq(m.ip4dst, 0xffffffff);
	cr_expect(!h.ip4src && !m.ip4src && !h.psrc && !m.psrc && !h.tos && !m.tos,
		  "source and TOS must not be matched");
	cr_expect(zero(&nfc.fs.h_ext, sizeof(nfc.fs.h_ext)) &&
		  zero(&nfc.fs.m_ext, sizeof(nfc.fs.m_ext)), "no extended match (FLOW_EXT)");
}

Test(steer, udp4_wildcard_matches_the_port_only)
{
	struct xvi_tag t = tag_of("0.0.0.0:9");
	struct ethtool_rxnfc nfc;

	cr_assert_eq(xvi_steer__build(&t, 0, 17, &nfc), 0);
	cr_expect_eq(nfc.fs.flow_type, UDP_V4_FLOW);
	cr_expect_eq(nfc.fs.location, 17);
	cr_expect_eq(nfc.fs.ring_cookie, 0);
	cr_expect_eq(nfc.fs.h_u.udp_ip4_spec.pdst, htons(9));
	cr_expect_eq(nfc.fs.m_u.udp_ip4_spec.pdst, 0xffff);
	cr_expect_eq(nfc.fs.m_u.udp_ip4_spec.ip4dst, 0, "any address: not matched");
	cr_expect_eq(nfc.fs.h_u.udp_ip4_spec.ip4dst, 0);
}

Test(steer, udp6_exact_address_and_port)
{
	struct xvi_tag t = tag_of("[2001:2::2]:7000");
	struct ethtool_rxnfc nfc;
	struct in6_addr a;
	__u8 ones[16];

	memset(ones, 0xff, sizeof(ones));
	cr_assert_eq(inet_pton(AF_INET6, "2001:2::2", &a), 1);
	cr_assert_eq(xvi_steer__build(&t, 1, XVI_STEER_LOC_ANY, &nfc), 0);
	cr_expect_eq(nfc.fs.flow_type, UDP_V6_FLOW);
	cr_expect_eq(nfc.fs.ring_cookie, 1);
	cr_expect_eq(nfc.fs.h_u.udp_ip6_spec.pdst, htons(7000));
	cr_expect_eq(nfc.fs.m_u.udp_ip6_spec.pdst, 0xffff);
	cr_expect_arr_eq(nfc.fs.h_u.udp_ip6_spec.ip6dst, &a, 16);
	cr_expect_arr_eq(nfc.fs.m_u.udp_ip6_spec.ip6dst, ones, 16);
	cr_expect(zero(nfc.fs.m_u.udp_ip6_spec.ip6src, 16) && !nfc.fs.m_u.udp_ip6_spec.psrc,
		  "source must not be matched");
}

Test(steer, udp6_wildcard_matches_the_port_only)
{
	struct xvi_tag t = tag_of("[::]:4791");
	struct ethtool_rxnfc nfc;

	cr_assert_eq(xvi_steer__build(&t, 5, XVI_STEER_LOC_ANY, &nfc), 0);
	cr_expect_eq(nfc.fs.flow_type, UDP_V6_FLOW);
	cr_expect_eq(nfc.fs.h_u.udp_ip6_spec.pdst, htons(4791));
	cr_expect(zero(nfc.fs.m_u.udp_ip6_spec.ip6dst, 16), "any address: not matched");
}

Test(steer, a_spread_member_tag_steers_its_port)
{
	struct xvi_tag t = tag_of("198.18.0.2:7000");
	struct ethtool_rxnfc nfc;

	t.queue = 2;		/* a spread member's tag: the same port on the wire */
	cr_assert_eq(xvi_steer__build(&t, 1, XVI_STEER_LOC_ANY, &nfc), 0);
	cr_expect_eq(nfc.fs.h_u.udp_ip4_spec.pdst, htons(7000));
	cr_expect_eq(nfc.fs.ring_cookie, 1);
}

Test(steer, refused)
{
	struct xvi_tag t = tag_of("raw:0x1234");
	struct ethtool_rxnfc nfc;

	memset(&nfc, 0xa5, sizeof(nfc));
	cr_expect_eq(xvi_steer__build(&t, 0, XVI_STEER_LOC_ANY, &nfc), -EINVAL,
		     "a raw tag has no port");
	cr_expect(zero(&nfc.fs, sizeof(nfc.fs.h_u)) && nfc.cmd == 0 && nfc.fs.flow_type == 0,
		  "a refused rule leaves nothing half built");
	t = tag_of("198.18.0.2:7000");
	t.port = 0;
	cr_expect_eq(xvi_steer__build(&t, 0, XVI_STEER_LOC_ANY, &nfc), -EINVAL, "port 0");
	cr_expect_eq(xvi_steer__build(NULL, 0, XVI_STEER_LOC_ANY, &nfc), -EINVAL, "no tag");
}
