// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * TX guard fixtures: crafted frames from a protected endpoint's client
 * through xvi_guard (a TC program) with BPF_PROG_RUN.  Each case is
 * (endpoint identity, frame, expected verdict, the one counter that must
 * move).  Every case runs in its own process and network namespace with a
 * veth pair, whose first end stands for the interface the guard redirects
 * accepted frames to (TC_ACT_REDIRECT).
 *
 *   build/tests/xdp-fixtures --filter 'guard/...' --verbose
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include "xvi_wire.h"
#include "xvi_guard.skel.h"
#include "fx_frame.h"
#include "fx_env.h"

#define G_IFACE		"xvigd0"
#define G_PEER		"xvigd1"
#define G_SLOT		11

/* Identity variants; the frames come from fx_frame (02:..:01, .1, port 40000). */
enum gid { ID_UDP4, ID_UDP4_OTHER_IP, ID_UDP4_WILD, ID_UDP4_OTHER_PORT, ID_UDP4_OTHER_MAC,
	   ID_UDP6, ID_RAW, ID_RAW_OTHER };

#define C(f) offsetof(struct xvi_ep_counters, f)

struct g_case {
	const char *name;
	enum gid id;
	struct fx_frame_spec f;
	int verdict;
	size_t counter;		/* offset of the counter that moves by one */
	__u32 allow;		/* xvi_guard_cfg.allow: what the policy lets out */
};

/* The guard's length bound in every case: a 1500-byte MTU. */
#define G_MAX_FRAME	1514
#define G_BCAST4	"198.18.0.255"

#pragma GCC diagnostic ignored "-Woverride-init"
#define V4(...)		{ .l3 = FX_IP4, .dport = 9000, .payload = 32, __VA_ARGS__ }
#define V6(...)		{ .l3 = FX_IP6, .dport = 9000, .payload = 32, __VA_ARGS__ }
#define RAW(...)	{ .l3 = FX_RAW, .raw_tag = 0x77, .payload = 32, __VA_ARGS__ }
static const __u8 mac_bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const __u8 mac_mcast4[6] = { 0x01, 0x00, 0x5e, 0x7f, 0xff, 0xfa };	/* SSDP */
static const __u8 mac_mcast6[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0xfb };

#define PASS		.verdict = TC_ACT_REDIRECT, .counter = C(tx_guard_pass)
#define DROP(f)		.verdict = TC_ACT_SHOT, .counter = C(f)

static const struct g_case g_cases[] = {
	{ "udp4_own", ID_UDP4, V4(), PASS },
	{ "udp4_wildcard_second_addr", ID_UDP4_WILD, V4(), PASS },
	{ "udp6_own", ID_UDP6, V6(), PASS },
	{ "raw_own_src_tag", ID_RAW, RAW(), PASS },
	{ "udp4_foreign_ip", ID_UDP4_OTHER_IP, V4(), DROP(drop_guard_ip) },
	{ "udp4_foreign_port", ID_UDP4_OTHER_PORT, V4(), DROP(drop_guard_port) },
	{ "udp4_foreign_mac", ID_UDP4_OTHER_MAC, V4(), DROP(drop_guard_mac) },
	{ "raw_foreign_src_tag", ID_RAW_OTHER, RAW(), DROP(drop_guard_tag) },
	{ "udp6_from_udp4_endpoint", ID_UDP4, V6(), DROP(drop_guard_other) },
	{ "udp4_from_raw_endpoint", ID_RAW, V4(), DROP(drop_guard_other) },
	{ "raw_from_udp4_endpoint", ID_UDP4, RAW(), DROP(drop_guard_other) },
	{ "arp", ID_UDP4, { .l3 = FX_ARP }, DROP(drop_guard_other) },
	{ "vlan_tagged", ID_UDP4, V4(.vlan = true), DROP(drop_guard_other) },
	{ "ip4_fragment", ID_UDP4, V4(.frag_off = 0x2000), DROP(drop_guard_other) },
	{ "ip4_not_udp", ID_UDP4, V4(.proto = FX_PROTO(6)), DROP(drop_guard_other) },
	{ "udp4_runt", ID_UDP4, V4(.cut = 14 + 20 + 4), DROP(drop_guard_other) },
	/* BPF_PROG_RUN refuses an skb whose IP EtherType has no whole IP
	 * header (EINVAL): the runt below the L3 header is a raw one. */
	{ "raw_runt", ID_RAW, RAW(.cut = 15), DROP(drop_guard_other) },

	/* Group destinations: dropped, unless the policy allows them. */
	{ "udp4_bcast_mac", ID_UDP4, V4(.dmac = mac_bcast, .dst = "255.255.255.255"),
	  DROP(drop_guard_group) },
	{ "udp4_limited_bcast_unicast_mac", ID_UDP4, V4(.dst = "255.255.255.255"),
	  DROP(drop_guard_group) },
	{ "udp4_directed_bcast", ID_UDP4, V4(.dst = G_BCAST4), DROP(drop_guard_group) },
	{ "udp4_multicast_ip", ID_UDP4, V4(.dst = "239.255.255.250"), DROP(drop_guard_group) },
	{ "udp4_multicast_ip_low", ID_UDP4, V4(.dst = "224.0.0.2"), DROP(drop_guard_group) },
	{ "udp4_multicast_mac", ID_UDP4, V4(.dmac = mac_mcast4), DROP(drop_guard_group) },
	{ "udp6_multicast_ip", ID_UDP6, V6(.dst = "ff02::fb"), DROP(drop_guard_group) },
	{ "udp6_multicast_mac", ID_UDP6, V6(.dmac = mac_mcast6), DROP(drop_guard_group) },
	{ "raw_bcast_mac", ID_RAW, RAW(.dmac = mac_bcast), DROP(drop_guard_group) },
	{ "udp4_last_unicast_below_mcast", ID_UDP4, V4(.dst = "223.255.255.255"), PASS },
	{ "udp4_first_above_mcast", ID_UDP4, V4(.dst = "240.0.0.1"), PASS },
	{ "udp4_bcast_allowed", ID_UDP4, V4(.dmac = mac_bcast, .dst = "255.255.255.255"), PASS,
	  .allow = XVI_GUARD_ALLOW_GROUP },
	{ "udp6_multicast_allowed", ID_UDP6, V6(.dmac = mac_mcast6, .dst = "ff02::fb"), PASS,
	  .allow = XVI_GUARD_ALLOW_GROUP },

	/* IPv4 options. */
	{ "udp4_options", ID_UDP4, V4(.ihl = 6), DROP(drop_guard_ip_options) },
	{ "udp4_options_ihl15", ID_UDP4, V4(.ihl = 15), DROP(drop_guard_ip_options) },
	{ "udp4_options_allowed", ID_UDP4, V4(.ihl = 6), PASS,
	  .allow = XVI_GUARD_ALLOW_IP_OPTIONS },

	/* DSCP: CS6 and CS7 (and the rest of precedence 6 and 7) stay in. */
	{ "udp4_dscp_cs6", ID_UDP4, V4(.tos = 48 << 2), DROP(drop_guard_dscp) },
	{ "udp4_dscp_cs7", ID_UDP4, V4(.tos = 56 << 2), DROP(drop_guard_dscp) },
	{ "udp4_dscp_63_ecn", ID_UDP4, V4(.tos = (63 << 2) | 3), DROP(drop_guard_dscp) },
	{ "udp4_dscp_ef", ID_UDP4, V4(.tos = 46 << 2), PASS },
	{ "udp4_dscp_47_ecn", ID_UDP4, V4(.tos = (47 << 2) | 3), PASS },
	{ "udp6_dscp_cs6", ID_UDP6, V6(.tos = 48 << 2), DROP(drop_guard_dscp) },
	{ "udp6_dscp_cs7", ID_UDP6, V6(.tos = 56 << 2), DROP(drop_guard_dscp) },
	{ "udp6_dscp_af41", ID_UDP6, V6(.tos = 34 << 2), PASS },
	{ "udp4_dscp_cs6_allowed", ID_UDP4, V4(.tos = 48 << 2), PASS,
	  .allow = XVI_GUARD_ALLOW_NET_CONTROL },

	/* Control protocols' destination ports. */
	{ "udp4_to_hsrp", ID_UDP4, V4(.dport = 1985), DROP(drop_guard_ctl_port) },
	{ "udp4_to_glbp", ID_UDP4, V4(.dport = 3222), DROP(drop_guard_ctl_port) },
	{ "udp4_to_mdns", ID_UDP4, V4(.dport = 5353), DROP(drop_guard_ctl_port) },
	{ "udp4_to_llmnr", ID_UDP4, V4(.dport = 5355), DROP(drop_guard_ctl_port) },
	{ "udp4_to_ssdp", ID_UDP4, V4(.dport = 1900), DROP(drop_guard_ctl_port) },
	{ "udp4_to_bfd", ID_UDP4, V4(.dport = 3784), DROP(drop_guard_ctl_port) },
	{ "udp4_to_bfd_echo", ID_UDP4, V4(.dport = 3785), DROP(drop_guard_ctl_port) },
	{ "udp4_to_bfd_multihop", ID_UDP4, V4(.dport = 4784), DROP(drop_guard_ctl_port) },
	{ "udp4_to_dhcp_server", ID_UDP4, V4(.dport = 67), DROP(drop_guard_ctl_port) },
	{ "udp4_to_pcp", ID_UDP4, V4(.dport = 5351), DROP(drop_guard_ctl_port) },
	{ "udp6_to_dhcp6_server", ID_UDP6, V6(.dport = 547), DROP(drop_guard_ctl_port) },
	{ "udp4_to_5354", ID_UDP4, V4(.dport = 5354), PASS },
	{ "udp4_to_hsrp_allowed", ID_UDP4, V4(.dport = 1985), PASS,
	  .allow = XVI_GUARD_ALLOW_CTL_PORTS },

	/* Length: the host end's MTU + 14 at most (1500 + 14 here). */
	{ "udp4_mtu_exactly", ID_UDP4, V4(.payload = 1472), PASS },
	{ "udp4_mtu_plus_1", ID_UDP4, V4(.payload = 1473), DROP(drop_guard_len) },
	{ "udp4_mtu_plus_4", ID_UDP4, V4(.payload = 1476), DROP(drop_guard_len) },
	{ "udp6_mtu_exactly", ID_UDP6, V6(.payload = 1452), PASS },
	{ "udp6_mtu_plus_1", ID_UDP6, V6(.payload = 1453), DROP(drop_guard_len) },
	{ "raw_mtu_plus_1", ID_RAW, RAW(.payload = 1489), DROP(drop_guard_len) },
	{ "udp4_mtu_plus_1_all_allowed", ID_UDP4, V4(.payload = 1473), DROP(drop_guard_len),
	  .allow = ~0u },
};

static struct {
	struct xvi_guard_bpf *skel;
} g;

static void g_setup(void)
{
	fx_netns_veth(G_IFACE, G_PEER);
	g.skel = xvi_guard_bpf__open_and_load();
	cr_assert_not_null(g.skel, "xvi_guard_bpf__open_and_load: %s", strerror(errno));
}

static void g_teardown(void)
{
	xvi_guard_bpf__destroy(g.skel);
}

static void set_identity(enum gid id, __u32 allow)
{
	struct xvi_guard_cfg cfg = { .slot = G_SLOT, .kind = XVI_TAG_UDP4, .naddrs = 1,
				     .mac = { 0x02, 0, 0, 0, 0, 0x01 }, .nbcast = 1,
				     .max_frame = G_MAX_FRAME };
	__u32 zero = 0, out = if_nametoindex(G_IFACE);

	cfg.allow = allow;
	inet_pton(AF_INET, G_BCAST4, &cfg.bcast4[0]);
	cfg.port = htons(FX_SPORT);
	cfg.out_ifindex = out;
	inet_pton(AF_INET, FX_SRC4, cfg.addrs[0]);
	switch (id) {
	case ID_UDP4:
		break;
	case ID_UDP4_OTHER_IP:
		inet_pton(AF_INET, "198.18.0.9", cfg.addrs[0]);
		break;
	case ID_UDP4_WILD:
		inet_pton(AF_INET, "198.18.0.9", cfg.addrs[0]);
		inet_pton(AF_INET, FX_SRC4, cfg.addrs[1]);
		cfg.naddrs = 2;
		break;
	case ID_UDP4_OTHER_PORT:
		cfg.port = htons(FX_SPORT + 1);
		break;
	case ID_UDP4_OTHER_MAC:
		cfg.mac[5] = 0x09;
		break;
	case ID_UDP6:
		cfg.kind = XVI_TAG_UDP6;
		memset(cfg.addrs[0], 0, 16);
		inet_pton(AF_INET6, FX_SRC6, cfg.addrs[0]);
		break;
	case ID_RAW:
	case ID_RAW_OTHER:
		cfg.kind = XVI_TAG_RAW;
		cfg.port = 0;
		cfg.naddrs = 0;
		memset(cfg.addrs, 0, sizeof(cfg.addrs));
		/* fx_frame puts source tag 0x42 in every raw frame */
		cfg.raw_tag = htonl(id == ID_RAW ? 0x42 : 0x43);
		break;
	}
	cr_assert_neq(out, 0u);
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(g.skel->maps.xvi_guard_cfg), &zero, &cfg, 0),
		     0, "guard cfg: %s", strerror(errno));
}

ParameterizedTestParameters(guard, cases)
{
	static unsigned int idx[sizeof(g_cases) / sizeof(g_cases[0])];

	for (unsigned int i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
		idx[i] = i;
	return cr_make_param_array(unsigned int, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(unsigned int *i, guard, cases, .init = g_setup, .fini = g_teardown)
{
	const struct g_case *c = &g_cases[*i];
	struct xvi_ep_counters after, want;
	struct fx_frame f;
	int err;

	LIBBPF_OPTS(bpf_test_run_opts, opts);
	cr_log_info("guard case %s", c->name);
	set_identity(c->id, c->allow);
	cr_assert_eq(fx_frame_build(&c->f, &f), 0, "%s: frame build", c->name);
	opts.data_in = f.buf;
	opts.data_size_in = f.len;
	opts.repeat = 1;
	err = bpf_prog_test_run_opts(bpf_program__fd(g.skel->progs.xvi_guard), &opts);
	cr_assert_eq(err, 0, "%s: BPF_PROG_RUN: %s", c->name, strerror(-err));
	cr_expect_eq(opts.retval, (__u32)c->verdict, "%s: verdict %u, want %d", c->name,
		     opts.retval, c->verdict);
	fx_read_slot(bpf_map__fd(g.skel->maps.xvi_ep_stats), G_SLOT, &after);
	memset(&want, 0, sizeof(want));
	*(__u64 *)((char *)&want + c->counter) = 1;
	cr_expect_eq(memcmp(&after, &want, sizeof(want)), 0,
		     "%s: counters of slot %d are not exactly the expected one", c->name, G_SLOT);
	fx_frame_free(&f);
}

/* Guard not configured (no interface to send to): never pass. */
Test(guard, unconfigured_drops, .init = g_setup, .fini = g_teardown)
{
	struct fx_frame_spec s = V4();
	struct fx_frame f;

	LIBBPF_OPTS(bpf_test_run_opts, opts);
	cr_assert_eq(fx_frame_build(&s, &f), 0);
	opts.data_in = f.buf;
	opts.data_size_in = f.len;
	opts.repeat = 1;
	/* the array starts zeroed: slot 0, out_ifindex 0 -> drop, counted */
	cr_assert_eq(bpf_prog_test_run_opts(bpf_program__fd(g.skel->progs.xvi_guard), &opts), 0);
	cr_expect_eq(opts.retval, TC_ACT_SHOT);
	fx_frame_free(&f);
}

/*
 * The host end's TC egress: whatever the host's stack sends into the pair
 * (a local socket with SO_BINDTODEVICE) is dropped and counted, whatever
 * it looks like, the endpoint's own identity included.
 */
Test(guard, host_egress_drops_all, .init = g_setup, .fini = g_teardown)
{
	static const struct fx_frame_spec specs[] = {
		V4(.dmac = mac_bcast, .dst = "255.255.255.255"), V4(), V6(), RAW(),
		{ .l3 = FX_ARP },
	};
	struct xvi_ep_counters after, want = { .drop_host_egress = 5 };
	struct fx_frame f;
	unsigned int i;

	set_identity(ID_UDP4, 0);
	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		LIBBPF_OPTS(bpf_test_run_opts, opts);
		cr_assert_eq(fx_frame_build(&specs[i], &f), 0);
		opts.data_in = f.buf;
		opts.data_size_in = f.len;
		opts.repeat = 1;
		cr_assert_eq(bpf_prog_test_run_opts(
				     bpf_program__fd(g.skel->progs.xvi_host_egress), &opts), 0);
		cr_expect_eq(opts.retval, TC_ACT_SHOT, "frame %u: verdict %u", i, opts.retval);
		fx_frame_free(&f);
	}
	fx_read_slot(bpf_map__fd(g.skel->maps.xvi_ep_stats), G_SLOT, &after);
	cr_expect_eq(memcmp(&after, &want, sizeof(want)), 0,
		     "drop_host_egress %llu, want 5, and nothing else",
		     (unsigned long long)after.drop_host_egress);
}
