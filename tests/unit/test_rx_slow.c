// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The receive slow path (frames without the datapath's metadata): a frame
 * is handed out only if it is addressed to the endpoint as the datapath
 * would have judged it: its UDP port and address (any unicast address for
 * a wildcard endpoint) or its raw tag, and a unicast destination MAC.
 * Everything else (a datagram some local socket pushed into a protected
 * endpoint's veth pair, to 255.255.255.255 say) is dropped and counted.
 *
 * The endpoint is a hand-built struct xvi_endpoint over plain memory rings
 * (fake_ep.h); the test plays the kernel by filling the RX ring.
 */
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include "ep/endpoint.h"
#include "fake_ep.h"
#include "pkt/frame.h"

#define FRAME		2048
#define NFRAMES		8
#define RING		8

enum ep_id { EP_EXACT4, EP_WILD4, EP_WILD6, EP_RAW };

struct rs_case {
	const char *name;
	enum ep_id ep;
	const char *dst;	/* destination address (UDP) */
	__u16 dport;
	__u32 dst_tag;		/* raw */
	bool group_mac;		/* ff:ff:ff:ff:ff:ff */
	int got;		/* datagrams handed out: 1 or 0 */
};

static const struct rs_case rs_cases[] = {
	{ "exact_own", EP_EXACT4, "198.18.0.2", 7000, .got = 1 },
	{ "exact_other_addr", EP_EXACT4, "198.18.0.3", 7000, .got = 0 },
	{ "exact_other_port", EP_EXACT4, "198.18.0.2", 7001, .got = 0 },
	{ "exact_limited_bcast", EP_EXACT4, "255.255.255.255", 7000, .group_mac = true },
	{ "exact_own_bcast_mac", EP_EXACT4, "198.18.0.2", 7000, .group_mac = true },
	{ "wild_any_unicast", EP_WILD4, "198.18.0.9", 7000, .got = 1 },
	{ "wild_other_port", EP_WILD4, "198.18.0.9", 7001, .got = 0 },
	{ "wild_limited_bcast", EP_WILD4, "255.255.255.255", 7000, .group_mac = true },
	{ "wild_limited_bcast_unicast_mac", EP_WILD4, "255.255.255.255", 7000, .got = 0 },
	{ "wild_multicast", EP_WILD4, "224.0.0.251", 7000, .got = 0 },
	{ "wild6_any_unicast", EP_WILD6, "2001:2::9", 7000, .got = 1 },
	{ "wild6_multicast", EP_WILD6, "ff02::1", 7000, .got = 0 },
	{ "raw_own_tag", EP_RAW, .dst_tag = 0x42, .got = 1 },
	{ "raw_other_tag", EP_RAW, .dst_tag = 0x43, .got = 0 },
	{ "raw_own_tag_bcast_mac", EP_RAW, .dst_tag = 0x42, .group_mac = true },
};

static struct {
	struct xvi_endpoint *ep;
	__u32 rx_prod, rx_cons, rx_flags, fill_prod, fill_cons, fill_flags;
	struct xdp_desc rx_ring[RING];
	__u64 fill_ring[2 * NFRAMES];
} f;

static void make_ep(enum ep_id id)
{
	struct xvi_endpoint *ep = fake_raw_ep(FRAME, 2 * NFRAMES, NFRAMES, 1500, 1);

	fake_ring_cons(&ep->rx, RING, &f.rx_prod, &f.rx_cons, &f.rx_flags, f.rx_ring);
	fake_ring_prod(&ep->seg->fill, 2 * NFRAMES, &f.fill_prod, &f.fill_cons, &f.fill_flags,
		       f.fill_ring);
	if (id != EP_RAW) {
		ep->kind = XVI_EP_UDP;
		ep->family = id == EP_WILD6 ? AF_INET6 : AF_INET;
		ep->local_port = 7000;
		ep->local_ip.family = ep->family;
		ep->wildcard = id != EP_EXACT4;
		if (id == EP_EXACT4)
			inet_pton(AF_INET, "198.18.0.2", ep->local_ip.a);
	}
	f.ep = ep;
}

ParameterizedTestParameters(rx_slow, cases)
{
	static unsigned int idx[sizeof(rs_cases) / sizeof(rs_cases[0])];

	for (unsigned int i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
		idx[i] = i;
	return cr_make_param_array(unsigned int, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(unsigned int *i, rx_slow, cases)
{
	const struct rs_case *c = &rs_cases[*i];
	struct xvi_frame_spec s = { .src_mac = { 0x02, 0, 0, 0, 0, 1 },
				    .dst_mac = { 0x02, 0, 0, 0, 0, 2 } };
	static const char payload[] = "slow path";
	__u64 addr = XVI_RX_HEADROOM;
	struct xvi_msg m;
	int len;

	memset(&f, 0, sizeof(f));
	make_ep(c->ep);
	if (c->group_mac)
		memset(s.dst_mac, 0xff, 6);
	if (c->ep == EP_RAW) {
		s.family = AF_PACKET;
		s.src_tag = 0x99;
		s.dst_tag = c->dst_tag;
	} else {
		s.family = f.ep->family;
		s.src.family = s.dst.family = s.family;
		inet_pton(s.family, s.family == AF_INET6 ? "2001:2::1" : "198.18.0.1", s.src.a);
		cr_assert_eq(inet_pton(s.family, c->dst, s.dst.a), 1);
		s.sport = 40000;
		s.dport = c->dport;
	}
	len = xvi_frame__build((char *)f.ep->area + addr, FRAME - addr, &s, payload,
			       sizeof(payload));
	cr_assert_gt(len, 0, "%s: frame build %d", c->name, len);
	/* No metadata in front of the frame (its magic is 0): the slow path. */
	f.rx_ring[0].addr = addr;
	f.rx_ring[0].len = len;
	f.rx_prod = 1;
	cr_expect_eq(xvi_endpoint__recv_batch(f.ep, &m, 1), c->got, "%s: handed out", c->name);
	cr_expect_eq(f.ep->sw_parsed, 1, "%s: not through the slow path", c->name);
	cr_expect_eq(f.ep->sw_foreign, (__u64)!c->got, "%s: sw_foreign %llu", c->name,
		     (unsigned long long)f.ep->sw_foreign);
	if (c->got)
		cr_expect_eq(m.len, sizeof(payload), "%s: payload length %u", c->name, m.len);
	fake_ep_free(f.ep);
}
