// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Datapath fixtures: crafted frames through BPF_PROG_RUN.
 *
 * Each case is (frame spec, expected verdict, expected counter deltas, and
 * for delivered frames the expected struct xvi_rx_meta).  Every case runs in
 * its own criterion process with a private network namespace holding a veth
 * pair and one real AF_XDP socket, so that bpf_redirect_map() can really
 * return XDP_REDIRECT for the slots that have a socket, and a fresh copy of
 * the datapath's maps, so that counter deltas are exact.
 *
 * BPF_PROG_RUN returns the frame starting at data_meta (ctx_out.data is the
 * metadata length), which is how the metadata is checked byte for byte.
 *
 *   build/tests/xdp-fixtures --verbose        every case
 *   XVI_XDP_CASE=udp4_bound build/tests/xdp-fixtures --verbose   one case
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include "xvi_wire.h"
#include "xvi_demux.skel.h"
#include "fx_frame.h"
#include "fx_env.h"

/* Endpoint table of every case. */
#define SLOT_V4		3	/* 198.18.0.2:7000 */
#define SLOT_V6		4	/* [2001:2::2]:7000 */
#define SLOT_WILD	5	/* *:7001, v4 and v6 */
#define SLOT_EXACT	6	/* 198.18.0.2:7001, beats the wildcard */
#define SLOT_DEAD	7	/* 198.18.0.2:7002, no socket in the XSKMAP */
#define SLOT_RAW	9	/* raw tag 0x00c0ffee */
#define SLOT_WILD2	12	/* *:7011 (v4), no exact tag on its port */
#define SLOT_SPREAD0	13	/* 198.18.0.2 and [2001:2::2]:7020 spread, queue-0 member */
#define SLOT_SPREAD1	14	/* :7020 and :7021 spread (both families), queue-1 members */
#define SLOT_SPREADW	15	/* *:7022 spread, its queue-0 member */
#define SLOT_PROT	10	/* 198.18.0.2:7003 and raw tag 0x00c0fff0, protected */
#define NO_SLOT		(-1)

#define PORT		7000
#define PORT_WILD	7001
#define PORT_DEAD	7002
#define PORT_PROT	7003
#define PORT_SPREAD	7020	/* members on queues 0 and 1 */
#define PORT_SPREAD_Q1	7021	/* a member on queue 1 only */
#define PORT_SPREAD_W	7022	/* wildcard, a member on queue 0 */
#define RAW_TAG_PROT	0x00c0fff0
#define RAW_TAG		0x00c0ffee

#define FX_IFACE	"xvifx0"	/* lives only in the case's own netns */
#define FX_PEER		"xvifx1"

struct fx_case {
	const char *name;
	struct fx_frame_spec f;
	int verdict;
	/* Global deltas besides rx_frames (always 1) and the verdict's own
	 * counter (redirected / passed / dropped, derived from verdict). */
	struct xvi_global_counters g;
	int slot;			/* endpoint whose counters move, or NO_SLOT */
	struct xvi_ep_counters ep;	/* its deltas; rx_bytes = frame length */
	__u16 meta_flags;		/* expected xvi_rx_meta.flags if delivered */
	__u16 cfg_flags;		/* xvi_config flags besides XVI_CFG_MAC */
};

/* Frames default to a 32-byte datagram to the bound tag; cases override. */
#pragma GCC diagnostic ignored "-Woverride-init"
#define V4(...)		{ .l3 = FX_IP4, .dport = PORT, .payload = 32, __VA_ARGS__ }
#define V6(...)		{ .l3 = FX_IP6, .dport = PORT, .payload = 32, __VA_ARGS__ }
#define RAW(...)	{ .l3 = FX_RAW, .raw_tag = RAW_TAG, .payload = 32, __VA_ARGS__ }

#define OK4		XVI_RX_CSUM_VERIFIED
#define OK6		(XVI_RX_CSUM_VERIFIED | XVI_RX_IPV6)
#define DELIVER		.verdict = XDP_REDIRECT, .ep = { .rx_frames = 1 }
#define MALFORMED_PASS	.verdict = XDP_PASS, .slot = NO_SLOT, .g = { .malformed = 1 }
#define NO_EP		.verdict = XDP_PASS, .slot = NO_SLOT, .g = { .no_endpoint = 1 }
#define FRAGMENT	.verdict = XDP_PASS, .slot = NO_SLOT, .g = { .fragments = 1 }
#define KERNEL		.verdict = XDP_PASS, .slot = NO_SLOT
#define GROUP		.verdict = XDP_PASS, .slot = NO_SLOT, .g = { .group_dst = 1 }
#define OTHER_HOST	.verdict = XDP_PASS, .slot = NO_SLOT, .g = { .other_host = 1 }

/* Destination MACs besides the station's own (FX_DMAC). */
static const __u8 mac_other[6] = { 0x02, 0, 0, 0, 0, 0x77 };
static const __u8 mac_near[6] = { 0x03, 0, 0, 0, 0, 0x02 };	/* I/G bit only */
static const __u8 mac_bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const __u8 mac_mcast4[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb };	/* mDNS */
static const __u8 mac_mcast6[6] = { 0x33, 0x33, 0x00, 0x00, 0x00, 0xfb };
static const __u8 mac_last_byte[6] = { 0x02, 0, 0, 0, 0, 0x03 };
static const __u8 mac_middle_byte[6] = { 0x02, 0, 0, 1, 0, 0x02 };
#define BAD_IP(s)	.verdict = XDP_DROP, .slot = (s), .ep = { .drop_bad_ip_csum = 1 }
#define BAD_L4(s)	.verdict = XDP_DROP, .slot = (s), .ep = { .drop_bad_l4_csum = 1 }
#define BAD_LEN(s)	.verdict = XDP_DROP, .slot = (s), .g = { .malformed = 1 }, \
			.ep = { .drop_malformed = 1 }
/* A device whose frames never cross a wire (the control plane sets this for
 * veth): partial checksums from the sending kernel are accepted. */
#define LOCAL_LINK	.cfg_flags = XVI_CFG_LOCAL_LINK
#define PARTIAL(s)	.verdict = XDP_REDIRECT, .slot = (s), \
			.ep = { .rx_frames = 1, .rx_csum_partial = 1 }

static const struct fx_case fx_cases[] = {
	/* Delivery and tag lookup. */
	{ "udp4_bound", V4(), DELIVER, .slot = SLOT_V4, .meta_flags = OK4 },
	{ "udp6_bound", V6(), DELIVER, .slot = SLOT_V6, .meta_flags = OK6 },
	{ "udp4_wildcard_addr", V4(.dst = "198.18.0.77", .dport = PORT_WILD), DELIVER,
	  .slot = SLOT_WILD, .meta_flags = OK4 },
	{ "udp6_wildcard_addr", V6(.dst = "2001:2::77", .dport = PORT_WILD), DELIVER,
	  .slot = SLOT_WILD, .meta_flags = OK6 },
	/* The wildcard takes only this host's addresses (xvi_local_addrs). */
	{ "udp4_wildcard_not_local", V4(.dst = "198.18.9.9", .dport = PORT_WILD),
	  .verdict = XDP_PASS, .slot = NO_SLOT, .g = { .not_local = 1 } },
	{ "udp6_wildcard_not_local", V6(.dst = "2001:2::99", .dport = PORT_WILD),
	  .verdict = XDP_PASS, .slot = NO_SLOT, .g = { .not_local = 1 } },
	{ "udp4_wildcard_own_addr", V4(.dport = PORT_WILD + 10), DELIVER, .slot = SLOT_WILD2,
	  .meta_flags = OK4 },
	{ "udp4_wildcard_not_local_bad_csum", V4(.dst = "198.18.9.9", .dport = PORT_WILD,
						 .bad_l4_csum = true),
	  .verdict = XDP_PASS, .slot = NO_SLOT, .g = { .not_local = 1 } },
	/* Spread tags: BPF_PROG_RUN delivers on receive queue 0. */
	{ "udp4_spread_queue0_member", V4(.dport = PORT_SPREAD), DELIVER, .slot = SLOT_SPREAD0,
	  .meta_flags = OK4 },
	{ "udp4_spread_no_member_on_queue", V4(.dport = PORT_SPREAD_Q1), .verdict = XDP_PASS,
	  .slot = NO_SLOT, .g = { .spread_no_queue = 1 } },
	{ "udp6_spread_queue0_member", V6(.dport = PORT_SPREAD), DELIVER, .slot = SLOT_SPREAD0,
	  .meta_flags = OK6 },
	{ "udp6_spread_no_member_on_queue", V6(.dport = PORT_SPREAD_Q1), .verdict = XDP_PASS,
	  .slot = NO_SLOT, .g = { .spread_no_queue = 1 } },
	{ "udp4_spread_wildcard_member", V4(.dst = "198.18.0.77", .dport = PORT_SPREAD_W),
	  DELIVER, .slot = SLOT_SPREADW, .meta_flags = OK4 },
	{ "udp4_spread_wildcard_not_local", V4(.dst = "198.18.9.9", .dport = PORT_SPREAD_W),
	  .verdict = XDP_PASS, .slot = NO_SLOT, .g = { .not_local = 1 } },
	{ "udp4_exact_beats_wildcard", V4(.dport = PORT_WILD), DELIVER, .slot = SLOT_EXACT,
	  .meta_flags = OK4 },
	{ "udp4_other_addr_no_wildcard", V4(.dst = "198.18.0.77"), NO_EP },
	{ "udp4_unbound_port", V4(.dport = 9999), NO_EP },
	{ "udp6_unbound_port", V6(.dport = 9999), NO_EP },
	{ "udp4_empty_slot", V4(.dport = PORT_DEAD), .verdict = XDP_PASS, .slot = SLOT_DEAD,
	  .ep = { .drop_no_socket = 1 } },

	/* Checksums. */
	{ "udp4_bad_ip_csum", V4(.bad_ip_csum = true), BAD_IP(SLOT_V4) },
	{ "udp4_bad_udp_csum", V4(.bad_l4_csum = true), BAD_L4(SLOT_V4) },
	{ "udp6_bad_udp_csum", V6(.bad_l4_csum = true), BAD_L4(SLOT_V6) },
	{ "udp4_flipped_payload", V4(.flip = 17), BAD_L4(SLOT_V4) },
	{ "udp6_flipped_payload", V6(.flip = 1), BAD_L4(SLOT_V6) },
	{ "udp4_zero_csum_accepted", V4(.zero_l4_csum = true), DELIVER, .slot = SLOT_V4,
	  .meta_flags = XVI_RX_CSUM_NONE },
	{ "udp4_zero_csum_bad_ip", V4(.zero_l4_csum = true, .bad_ip_csum = true),
	  BAD_IP(SLOT_V4) },
	{ "udp6_zero_csum_dropped", V6(.zero_l4_csum = true), BAD_L4(SLOT_V6) },

	/*
	 * Partial checksums (a local kernel's CHECKSUM_PARTIAL datagram: the
	 * field holds the pseudo-header sum only).  Accepted on a local link,
	 * a bad checksum everywhere else; a field that matches neither the
	 * full nor the partial sum is dropped on both kinds of device.
	 */
	{ "udp4_partial_csum_local_link", V4(.partial_l4_csum = true), PARTIAL(SLOT_V4),
	  .meta_flags = XVI_RX_CSUM_PARTIAL, LOCAL_LINK },
	{ "udp6_partial_csum_local_link", V6(.partial_l4_csum = true), PARTIAL(SLOT_V6),
	  .meta_flags = XVI_RX_CSUM_PARTIAL | XVI_RX_IPV6, LOCAL_LINK },
	{ "udp4_partial_csum_wire", V4(.partial_l4_csum = true), BAD_L4(SLOT_V4) },
	{ "udp6_partial_csum_wire", V6(.partial_l4_csum = true), BAD_L4(SLOT_V6) },
	{ "udp4_full_csum_local_link", V4(), DELIVER, .slot = SLOT_V4, .meta_flags = OK4,
	  LOCAL_LINK },
	{ "udp6_full_csum_local_link", V6(), DELIVER, .slot = SLOT_V6, .meta_flags = OK6,
	  LOCAL_LINK },
	{ "udp4_bad_udp_csum_local_link", V4(.bad_l4_csum = true), BAD_L4(SLOT_V4),
	  LOCAL_LINK },
	{ "udp6_bad_udp_csum_local_link", V6(.bad_l4_csum = true), BAD_L4(SLOT_V6),
	  LOCAL_LINK },
	{ "udp4_flipped_payload_local_link", V4(.flip = 17), BAD_L4(SLOT_V4), LOCAL_LINK },
	{ "udp4_partial_off_by_one_local_link", V4(.partial_l4_csum = true,
						   .bad_l4_csum = true), BAD_L4(SLOT_V4),
	  LOCAL_LINK },
	{ "udp6_partial_off_by_one_local_link", V6(.partial_l4_csum = true,
						   .bad_l4_csum = true), BAD_L4(SLOT_V6),
	  LOCAL_LINK },
	{ "udp4_partial_bad_ip_csum_local_link", V4(.partial_l4_csum = true,
						    .bad_ip_csum = true), BAD_IP(SLOT_V4),
	  LOCAL_LINK },
	{ "udp4_zero_csum_local_link", V4(.zero_l4_csum = true), DELIVER, .slot = SLOT_V4,
	  .meta_flags = XVI_RX_CSUM_NONE, LOCAL_LINK },
	{ "udp6_zero_csum_local_link", V6(.zero_l4_csum = true), BAD_L4(SLOT_V6),
	  LOCAL_LINK },
	{ "udp4_partial_wildcard_local_link", V4(.partial_l4_csum = true,
						 .dst = "198.18.0.77", .dport = PORT_WILD),
	  PARTIAL(SLOT_WILD), .meta_flags = XVI_RX_CSUM_PARTIAL, LOCAL_LINK },
	{ "vlan_udp4_partial_local_link", V4(.vlan = true, .partial_l4_csum = true),
	  PARTIAL(SLOT_V4), .meta_flags = XVI_RX_CSUM_PARTIAL | XVI_RX_VLAN, LOCAL_LINK },
	{ "udp4_jumbo_partial_local_link", V4(.payload = 8972, .partial_l4_csum = true),
	  PARTIAL(SLOT_V4), .meta_flags = XVI_RX_CSUM_PARTIAL, LOCAL_LINK },
	{ "udp6_jumbo_partial_wire", V6(.payload = 8952, .partial_l4_csum = true),
	  BAD_L4(SLOT_V6) },
	{ "udp4_partial_dead_slot_local_link", V4(.partial_l4_csum = true,
						  .dport = PORT_DEAD),
	  .verdict = XDP_PASS, .slot = SLOT_DEAD, .ep = { .drop_no_socket = 1 }, LOCAL_LINK },

	/* Runts and truncated headers, at several cut points. */
	/* BPF_PROG_RUN itself refuses frames shorter than ETH_HLEN. */
	{ "runt_eth_header_only", V4(.cut = 14), MALFORMED_PASS },
	{ "runt_vlan_tag", V4(.vlan = true, .cut = 17), MALFORMED_PASS },
	{ "runt_ip4_header", V4(.cut = 14 + 19), MALFORMED_PASS },
	{ "runt_ip4_options", V4(.ihl = 8, .cut = 14 + 24), MALFORMED_PASS },
	{ "runt_udp4_header", V4(.cut = 14 + 20 + 7), MALFORMED_PASS },
	{ "runt_ip6_header", V6(.cut = 14 + 39), MALFORMED_PASS },
	{ "runt_udp6_header", V6(.cut = 14 + 40 + 7), MALFORMED_PASS },
	{ "runt_raw_header", RAW(.cut = 14 + 11), MALFORMED_PASS },
	{ "ip4_ihl_4", V4(.set_ihl = FX_IHL(4)), MALFORMED_PASS },
	{ "ip4_ihl_0", V4(.set_ihl = FX_IHL(0)), MALFORMED_PASS },

	/* IPv4 options (IHL 6..15). */
	{ "udp4_options_ihl6", V4(.ihl = 6), DELIVER, .slot = SLOT_V4, .meta_flags = OK4 },
	{ "udp4_options_ihl15", V4(.ihl = 15), DELIVER, .slot = SLOT_V4, .meta_flags = OK4 },
	{ "udp4_options_bad_ip_csum", V4(.ihl = 8, .bad_ip_csum = true), BAD_IP(SLOT_V4) },
	{ "udp4_options_bad_udp_csum", V4(.ihl = 11, .bad_l4_csum = true), BAD_L4(SLOT_V4) },

	/* Fragments. */
	{ "ip4_frag_more_fragments", V4(.frag_off = 0x2000), FRAGMENT },
	{ "ip4_frag_offset", V4(.frag_off = 0x00b9), FRAGMENT },
	{ "ip4_frag_last", V4(.frag_off = 0x0001, .dport = 9999), FRAGMENT },
	{ "ip6_fragment_header", V6(.proto = FX_PROTO(44)), FRAGMENT },

	/* 802.1Q. */
	{ "vlan_udp4", V4(.vlan = true), DELIVER, .slot = SLOT_V4,
	  .meta_flags = OK4 | XVI_RX_VLAN },
	{ "vlan_udp6", V6(.vlan = true), DELIVER, .slot = SLOT_V6,
	  .meta_flags = OK6 | XVI_RX_VLAN },
	{ "vlan_udp4_bad_udp_csum", V4(.vlan = true, .bad_l4_csum = true), BAD_L4(SLOT_V4) },

	/* Protected endpoints (through xvi_devs) take no tagged frame. */
	{ "udp4_protected", V4(.dport = PORT_PROT), DELIVER, .slot = SLOT_PROT, .meta_flags = OK4 },
	{ "vlan_udp4_protected", V4(.vlan = true, .dport = PORT_PROT), .verdict = XDP_PASS,
	  .slot = NO_SLOT, .g = { .vlan_protected = 1 } },
	{ "raw_protected", RAW(.raw_tag = RAW_TAG_PROT), DELIVER, .slot = SLOT_PROT,
	  .meta_flags = XVI_RX_RAW },
	{ "vlan_raw_protected", RAW(.vlan = true, .raw_tag = RAW_TAG_PROT), .verdict = XDP_PASS,
	  .slot = NO_SLOT, .g = { .vlan_protected = 1 } },

	/* Raw xvi frames. */
	{ "raw_known_tag", RAW(), DELIVER, .slot = SLOT_RAW, .meta_flags = XVI_RX_RAW },
	{ "raw_known_tag_vlan", RAW(.vlan = true), DELIVER, .slot = SLOT_RAW,
	  .meta_flags = XVI_RX_RAW | XVI_RX_VLAN },
	{ "raw_unknown_tag", RAW(.raw_tag = 0x00c0ffef), NO_EP },
	{ "raw_len_beyond_frame", RAW(.l3_len_delta = 1), BAD_LEN(SLOT_RAW) },

	/* Destination MAC: only this station's unicast address is delivered. */
	{ "udp4_other_host_mac", V4(.dmac = mac_other), OTHER_HOST },
	{ "udp6_other_host_mac", V6(.dmac = mac_other), OTHER_HOST },
	{ "raw_other_host_mac", RAW(.dmac = mac_other), OTHER_HOST },
	{ "udp4_mac_last_byte_differs", V4(.dmac = mac_last_byte), OTHER_HOST },
	{ "udp4_mac_middle_byte_differs", V4(.dmac = mac_middle_byte), OTHER_HOST },
	{ "vlan_udp4_other_host_mac", V4(.vlan = true, .dmac = mac_other), OTHER_HOST },
	{ "udp4_broadcast_bound_port", V4(.dmac = mac_bcast), GROUP },
	{ "udp4_broadcast_wildcard_port", V4(.dmac = mac_bcast, .dst = "198.18.0.255",
					     .dport = PORT_WILD), GROUP },
	{ "udp4_multicast_mdns", V4(.dmac = mac_mcast4, .dst = "224.0.0.251",
				    .dport = PORT_WILD), GROUP },
	{ "udp6_multicast", V6(.dmac = mac_mcast6, .dst = "ff02::fb", .dport = PORT_WILD),
	  GROUP },
	{ "udp4_group_bit_own_mac", V4(.dmac = mac_near), GROUP },
	{ "raw_broadcast", RAW(.dmac = mac_bcast), GROUP },
	{ "arp_broadcast", { .l3 = FX_ARP, .dmac = mac_bcast }, GROUP },

	/* Not ours. */
	{ "arp", { .l3 = FX_ARP }, KERNEL },
	{ "tcp4_to_bound_port", V4(.proto = FX_PROTO(IPPROTO_TCP)), KERNEL },
	{ "icmp4", V4(.proto = FX_PROTO(IPPROTO_ICMP)), KERNEL },
	{ "ip6_hop_by_hop_ext", V6(.proto = FX_PROTO(0)), KERNEL },

	/* Payload sizes: tails of 0..3 bytes past a multiple of 4, the
	 * 512-byte chunking, MTU-sized and jumbo (multi-buffer) frames. */
	{ "udp4_payload_0", V4(.payload = 0), DELIVER, .slot = SLOT_V4, .meta_flags = OK4 },
	{ "udp4_payload_1", V4(.payload = 1), DELIVER, .slot = SLOT_V4, .meta_flags = OK4 },
	{ "udp4_payload_2", V4(.payload = 2), DELIVER, .slot = SLOT_V4, .meta_flags = OK4 },
	{ "udp4_payload_3", V4(.payload = 3), DELIVER, .slot = SLOT_V4, .meta_flags = OK4 },
	{ "udp4_payload_odd_33", V4(.payload = 33), DELIVER, .slot = SLOT_V4,
	  .meta_flags = OK4 },
	{ "udp4_payload_odd_last_byte_flipped", V4(.payload = 33, .flip = 33),
	  BAD_L4(SLOT_V4) },
	{ "udp6_payload_odd_1001", V6(.payload = 1001), DELIVER, .slot = SLOT_V6,
	  .meta_flags = OK6 },
	{ "udp4_payload_504_one_chunk", V4(.payload = 504), DELIVER, .slot = SLOT_V4,
	  .meta_flags = OK4 },
	{ "udp4_payload_1472", V4(.payload = 1472), DELIVER, .slot = SLOT_V4,
	  .meta_flags = OK4 },
	{ "udp4_payload_1472_last_flipped", V4(.payload = 1472, .flip = 1472),
	  BAD_L4(SLOT_V4) },
	{ "udp6_payload_1452", V6(.payload = 1452), DELIVER, .slot = SLOT_V6,
	  .meta_flags = OK6 },
	{ "udp4_jumbo_8972", V4(.payload = 8972), DELIVER, .slot = SLOT_V4,
	  .meta_flags = OK4 },
	{ "udp6_jumbo_8952", V6(.payload = 8952), DELIVER, .slot = SLOT_V6,
	  .meta_flags = OK6 },
	{ "vlan_udp4_jumbo_odd_8971", V4(.vlan = true, .payload = 8971), DELIVER,
	  .slot = SLOT_V4, .meta_flags = OK4 | XVI_RX_VLAN },
	{ "udp4_jumbo_last_flipped", V4(.payload = 8972, .flip = 8972), BAD_L4(SLOT_V4) },
	{ "udp4_jumbo_middle_flipped", V4(.payload = 8972, .flip = 5000), BAD_L4(SLOT_V4) },
	{ "udp4_jumbo_first_flipped", V4(.payload = 8972, .flip = 1), BAD_L4(SLOT_V4) },

	/* Lengths come from the headers: padding is ignored, inconsistencies
	 * are malformed once a tag matched. */
	{ "udp4_eth_padding", V4(.payload = 2, .pad = 16), DELIVER, .slot = SLOT_V4,
	  .meta_flags = OK4 },
	{ "udp6_eth_padding", V6(.payload = 1, .pad = 9), DELIVER, .slot = SLOT_V6,
	  .meta_flags = OK6 },
	{ "raw_eth_padding", RAW(.payload = 3, .pad = 20), DELIVER, .slot = SLOT_RAW,
	  .meta_flags = XVI_RX_RAW },
	{ "udp4_len_below_8", V4(.udp_len_delta = -33), BAD_LEN(SLOT_V4) },
	{ "udp4_len_beyond_ip", V4(.udp_len_delta = 1), BAD_LEN(SLOT_V4) },
	{ "ip4_tot_len_beyond_frame", V4(.l3_len_delta = 1), BAD_LEN(SLOT_V4) },
	{ "ip4_tot_len_below_headers", V4(.l3_len_delta = -33), BAD_LEN(SLOT_V4) },
	{ "ip4_tot_len_beyond_frame_padded", V4(.l3_len_delta = 4, .pad = 3), BAD_LEN(SLOT_V4) },
	{ "udp6_len_below_8", V6(.udp_len_delta = -40), BAD_LEN(SLOT_V6) },
	{ "udp6_len_beyond_payload", V6(.udp_len_delta = 1), BAD_LEN(SLOT_V6) },
	{ "ip6_payload_len_beyond_frame", V6(.l3_len_delta = 1), BAD_LEN(SLOT_V6) },
};

/* ---- per-case environment ------------------------------------------------ */

static struct {
	struct xvi_demux_bpf *skel;
	int ncpus;
	struct fx_xsk x;
} env;

static void add_tag_flags(__u8 kind, const char *addr, __u16 port, __u32 raw_tag, __u32 slot,
			  __u32 flags)
{
	struct xvi_ep_value v = { .slot = slot, .flags = flags };
	struct xvi_tag t = { .kind = kind };
	int fd = bpf_map__fd(env.skel->maps.xvi_endpoints);

	t.port = htons(port);
	t.raw_tag = htonl(raw_tag);
	if (addr)
		cr_assert_eq(inet_pton(kind == XVI_TAG_UDP6 ? AF_INET6 : AF_INET, addr,
				       t.addr), 1, "bad test address %s", addr);
	cr_assert_eq(bpf_map_update_elem(fd, &t, &v, BPF_NOEXIST), 0,
		     "xvi_endpoints update: %s", strerror(errno));
}

static void add_tag(__u8 kind, const char *addr, __u16 port, __u32 raw_tag, __u32 slot)
{
	add_tag_flags(kind, addr, port, raw_tag, slot, 0);
}

/*
 * A member of a spread tag on @queue, as xvi_ctl__claim/publish write it:
 * the tag itself (queue 0, made by the first member) says "spread", the
 * member's entry carries queue + 1 and the slot.
 */
static void add_spread(__u8 kind, const char *addr, __u16 port, __u32 queue, __u32 slot)
{
	struct xvi_ep_value base = { .slot = XVI_SLOT_PENDING, .flags = XVI_EP_F_SPREAD };
	struct xvi_ep_value v = { .slot = slot };
	struct xvi_tag t = { .kind = kind, .port = htons(port) };
	int fd = bpf_map__fd(env.skel->maps.xvi_endpoints);

	if (addr)
		cr_assert_eq(inet_pton(kind == XVI_TAG_UDP6 ? AF_INET6 : AF_INET, addr, t.addr), 1,
			     "bad test address %s", addr);
	cr_assert(!bpf_map_update_elem(fd, &t, &base, BPF_NOEXIST) || errno == EEXIST,
		  "xvi_endpoints update: %s", strerror(errno));
	t.queue = queue + 1;
	cr_assert_eq(bpf_map_update_elem(fd, &t, &v, BPF_NOEXIST), 0,
		     "xvi_endpoints update: %s", strerror(errno));
}

static void add_local(__u8 kind, const char *addr)
{
	struct xvi_tag t = { .kind = kind };
	__u32 one = 1;

	cr_assert_eq(inet_pton(kind == XVI_TAG_UDP6 ? AF_INET6 : AF_INET, addr, t.addr), 1);
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_local_addrs), &t, &one,
					 0), 0, "xvi_local_addrs: %s", strerror(errno));
}

/* A protected endpoint: its tag redirects through xvi_devs to a device. */
static void add_protected(__u8 kind, const char *addr, __u16 port, __u32 raw_tag, __u32 slot)
{
	__u32 ifindex = if_nametoindex(FX_PEER);

	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_devs), &slot, &ifindex,
					 0), 0, "xvi_devs[%u] update: %s", slot, strerror(errno));
	add_tag_flags(kind, addr, port, raw_tag, slot, XVI_EP_F_DEVMAP);
}

static void set_config(const __u8 mac[6], __u16 flags)
{
	struct xvi_config cfg = { .flags = flags };
	__u32 zero = 0;

	memcpy(cfg.mac, mac, 6);
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_config), &zero, &cfg,
					 0), 0, "xvi_config update: %s", strerror(errno));
}

static void add_xsk(__u32 slot)
{
	int fd = xsk_socket__fd(env.x.xsk);

	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_xsks), &slot, &fd, 0),
		     0, "xvi_xsks[%u] update: %s", slot, strerror(errno));
}

static void fx_setup(void)
{
	fx_netns_veth(FX_IFACE, FX_PEER);
	env.ncpus = libbpf_num_possible_cpus();
	cr_assert_gt(env.ncpus, 0);
	env.skel = xvi_demux_bpf__open_and_load();
	cr_assert_not_null(env.skel, "xvi_demux_bpf__open_and_load: %s", strerror(errno));
	fx_xsk_open(&env.x, FX_IFACE);

	/* What xvi_ctl__attach writes: the receiving interface's MAC. */
	set_config((const __u8[6])FX_DMAC, XVI_CFG_MAC);
	add_tag(XVI_TAG_UDP4, "198.18.0.2", PORT, 0, SLOT_V4);
	add_tag(XVI_TAG_UDP6, "2001:2::2", PORT, 0, SLOT_V6);
	add_tag(XVI_TAG_UDP4, NULL, PORT_WILD, 0, SLOT_WILD);
	add_tag(XVI_TAG_UDP6, NULL, PORT_WILD, 0, SLOT_WILD);
	add_tag(XVI_TAG_UDP4, "198.18.0.2", PORT_WILD, 0, SLOT_EXACT);
	add_tag(XVI_TAG_UDP4, "198.18.0.2", PORT_DEAD, 0, SLOT_DEAD);
	add_tag(XVI_TAG_RAW, NULL, 0, RAW_TAG, SLOT_RAW);
	add_tag(XVI_TAG_UDP4, NULL, PORT_WILD + 10, 0, SLOT_WILD2);
	add_xsk(SLOT_WILD2);
	add_spread(XVI_TAG_UDP4, "198.18.0.2", PORT_SPREAD, 0, SLOT_SPREAD0);
	add_spread(XVI_TAG_UDP4, "198.18.0.2", PORT_SPREAD, 1, SLOT_SPREAD1);
	add_spread(XVI_TAG_UDP4, "198.18.0.2", PORT_SPREAD_Q1, 1, SLOT_SPREAD1);
	add_spread(XVI_TAG_UDP4, NULL, PORT_SPREAD_W, 0, SLOT_SPREADW);
	add_spread(XVI_TAG_UDP6, "2001:2::2", PORT_SPREAD, 0, SLOT_SPREAD0);
	add_spread(XVI_TAG_UDP6, "2001:2::2", PORT_SPREAD_Q1, 1, SLOT_SPREAD1);
	add_xsk(SLOT_SPREAD0);
	add_xsk(SLOT_SPREAD1);
	add_xsk(SLOT_SPREADW);
	add_protected(XVI_TAG_UDP4, "198.18.0.2", PORT_PROT, 0, SLOT_PROT);
	/* What xvi_ctl_sync_local writes: the host's addresses. */
	add_local(XVI_TAG_UDP4, "198.18.0.2");
	add_local(XVI_TAG_UDP4, "198.18.0.77");
	add_local(XVI_TAG_UDP6, "2001:2::2");
	add_local(XVI_TAG_UDP6, "2001:2::77");
	add_protected(XVI_TAG_RAW, NULL, 0, RAW_TAG_PROT, SLOT_PROT);
	add_xsk(SLOT_V4);
	add_xsk(SLOT_V6);
	add_xsk(SLOT_WILD);
	add_xsk(SLOT_EXACT);
	add_xsk(SLOT_RAW);
}

static void fx_teardown(void)
{
	fx_xsk_close(&env.x);
	xvi_demux_bpf__destroy(env.skel);
	memset(&env, 0, sizeof(env));
}

/* ---- counters -------------------------------------------------------------- */

struct fx_counters {
	struct xvi_global_counters g;
	struct xvi_ep_counters ep[XVI_MAX_ENDPOINTS];
};

#define G_FIELDS(X) X(rx_frames) X(redirected) X(passed) X(dropped) X(no_endpoint) \
	X(malformed) X(fragments) X(group_dst) X(other_host) X(vlan_protected) \
	X(not_local) X(spread_no_queue)
#define EP_FIELDS(X) X(rx_frames) X(rx_bytes) X(drop_bad_ip_csum) X(drop_bad_l4_csum) \
	X(drop_malformed) X(drop_no_socket) X(drop_meta) X(rx_csum_partial)

static void read_counters(struct fx_counters *c)
{
	struct xvi_global_counters g[env.ncpus];
	struct xvi_ep_counters ep[env.ncpus];
	__u32 k;
	int cpu;

	memset(c, 0, sizeof(*c));
	k = 0;
	cr_assert_eq(bpf_map_lookup_elem(bpf_map__fd(env.skel->maps.xvi_global_stats), &k, g),
		     0, "read xvi_global_stats: %s", strerror(errno));
	for (cpu = 0; cpu < env.ncpus; cpu++) {
#define SUM(f) c->g.f += g[cpu].f;
		G_FIELDS(SUM)
	}
	for (k = 0; k < XVI_MAX_ENDPOINTS; k++) {
		cr_assert_eq(bpf_map_lookup_elem(bpf_map__fd(env.skel->maps.xvi_ep_stats), &k,
						 ep), 0, "read xvi_ep_stats[%u]: %s", k,
			     strerror(errno));
		for (cpu = 0; cpu < env.ncpus; cpu++) {
#undef SUM
#define SUM(f) c->ep[k].f += ep[cpu].f;
			EP_FIELDS(SUM)
		}
	}
#undef SUM
}

/* ---- the runner ------------------------------------------------------------ */

static const char *verdict_name(int v)
{
	switch (v) {
	case XDP_ABORTED: return "XDP_ABORTED";
	case XDP_DROP: return "XDP_DROP";
	case XDP_PASS: return "XDP_PASS";
	case XDP_TX: return "XDP_TX";
	case XDP_REDIRECT: return "XDP_REDIRECT";
	default: return "?";
	}
}

static void fx_run(const struct fx_case *c)
{
	static __u8 out[sizeof(struct xvi_rx_meta) + 16384];
	struct fx_counters before, after;
	struct xdp_md ctx_in = {}, ctx_out = {};
	struct xvi_global_counters exp_g = c->g;
	struct xvi_ep_counters exp_ep = c->ep;
	struct xvi_rx_meta meta;
	struct fx_frame f;
	__u32 meta_len;
	int err, k;

	err = fx_frame_build(&c->f, &f);
	cr_assert_eq(err, 0, "%s: frame builder: %s", c->name, strerror(-err));
	cr_assert_leq(f.len, sizeof(out) - sizeof(meta));

	ctx_in.data_end = f.len;
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = f.buf,
		.data_size_in = f.len,
		.data_out = out,
		.data_size_out = sizeof(out),
		.ctx_in = &ctx_in,
		.ctx_size_in = sizeof(ctx_in),
		.ctx_out = &ctx_out,
		.ctx_size_out = sizeof(ctx_out),
		.repeat = 1,
	);

	read_counters(&before);
	err = bpf_prog_test_run_opts(bpf_program__fd(env.skel->progs.xvi_demux), &opts);
	cr_assert_eq(err, 0, "%s: BPF_PROG_RUN (%u-byte frame): %s", c->name, f.len,
		     strerror(errno));
	read_counters(&after);

	cr_expect_eq(opts.retval, (__u32)c->verdict, "%s: verdict %s, expected %s", c->name,
		     verdict_name(opts.retval), verdict_name(c->verdict));

	exp_g.rx_frames = 1;
	if (c->verdict == XDP_REDIRECT)
		exp_g.redirected = 1;
	else if (c->verdict == XDP_DROP)
		exp_g.dropped = 1;
	else
		exp_g.passed = 1;
#define CHECK_G(fld) cr_expect_eq(after.g.fld - before.g.fld, exp_g.fld, \
	"%s: global " #fld " moved by %llu, expected %llu", c->name, \
	(unsigned long long)(after.g.fld - before.g.fld), (unsigned long long)exp_g.fld);
	G_FIELDS(CHECK_G)

	if (exp_ep.rx_frames)
		exp_ep.rx_bytes = f.len;
	for (k = 0; k < XVI_MAX_ENDPOINTS; k++) {
		struct xvi_ep_counters zero = {};
		const struct xvi_ep_counters *e = k == c->slot ? &exp_ep : &zero;

#define CHECK_EP(fld) cr_expect_eq(after.ep[k].fld - before.ep[k].fld, e->fld, \
	"%s: slot %d " #fld " moved by %llu, expected %llu", c->name, k, \
	(unsigned long long)(after.ep[k].fld - before.ep[k].fld), (unsigned long long)e->fld);
		EP_FIELDS(CHECK_EP)
	}

	/* Output = [metadata] + frame; the frame itself is never modified. */
	meta_len = ctx_out.data - ctx_out.data_meta;
	if (c->verdict == XDP_REDIRECT) {
		cr_assert_eq(meta_len, sizeof(meta), "%s: %u metadata bytes, expected %zu",
			     c->name, meta_len, sizeof(meta));
		memcpy(&meta, out, sizeof(meta));
		cr_expect_eq(meta.magic, XVI_RX_META_MAGIC, "%s: meta magic %#x", c->name,
			     meta.magic);
		cr_expect_eq(meta.flags, c->meta_flags, "%s: meta flags %#x, expected %#x",
			     c->name, meta.flags, c->meta_flags);
		cr_expect_eq(meta.l3_off, f.l3_off, "%s: l3_off %u, expected %u", c->name,
			     meta.l3_off, f.l3_off);
		cr_expect_eq(meta.l4_off, f.l4_off, "%s: l4_off %u, expected %u", c->name,
			     meta.l4_off, f.l4_off);
		cr_expect_eq(meta.payload_off, f.payload_off, "%s: payload_off %u, expected %u",
			     c->name, meta.payload_off, f.payload_off);
		cr_expect_eq(meta.payload_len, f.payload_len, "%s: payload_len %u, expected %u",
			     c->name, meta.payload_len, f.payload_len);
		cr_expect_eq(meta.slot, (__u32)c->slot, "%s: meta slot %u, expected %d",
			     c->name, meta.slot, c->slot);
	} else {
		cr_expect_eq(meta_len, 0, "%s: %u metadata bytes left on a frame for the "
			     "kernel", c->name, meta_len);
	}
	cr_expect_eq(opts.data_size_out, meta_len + f.len, "%s: %u bytes out, expected %u",
		     c->name, opts.data_size_out, meta_len + f.len);
	if (opts.data_size_out == meta_len + f.len)
		cr_expect_eq(memcmp(out + meta_len, f.buf, f.len), 0,
			     "%s: frame bytes were modified", c->name);
	fx_frame_free(&f);
}

#define FX_NCASES	(sizeof(fx_cases) / sizeof(fx_cases[0]))

ParameterizedTestParameters(xdp, fixtures)
{
	static unsigned int idx[FX_NCASES];

	return fx_case_indices(idx, FX_NCASES);
}

ParameterizedTest(unsigned int *i, xdp, fixtures, .init = fx_setup, .fini = fx_teardown)
{
	const char *only = getenv("XVI_XDP_CASE");
	const struct fx_case *c;

	cr_assert_lt(*i, FX_NCASES);
	c = &fx_cases[*i];
	if (only && strcmp(only, c->name))
		cr_skip_test("%s: not selected by XVI_XDP_CASE", c->name);
	cr_log_info("case %s", c->name);
	set_config((const __u8[6])FX_DMAC, XVI_CFG_MAC | c->cfg_flags);
	fx_run(c);
}

/* The names libxdp and the control plane rely on. */
Test(xdp, program_identity, .init = fx_setup, .fini = fx_teardown)
{
	struct bpf_program *p = env.skel->progs.xvi_demux;

	cr_expect_str_eq(bpf_program__name(p), XVI_PROG_NAME);
	cr_expect_eq(bpf_program__type(p), BPF_PROG_TYPE_XDP);
	/* libbpf 1.1 adds BPF_F_XDP_HAS_FRAGS at load time from the section
	 * name without reporting it in bpf_program__flags(). */
	cr_expect_str_eq(bpf_program__section_name(p), "xdp.frags",
			 "xvi_demux must be an xdp.frags program for jumbo frames");
	cr_expect_eq(bpf_map__max_entries(env.skel->maps.xvi_xsks), XVI_MAX_ENDPOINTS);
	cr_expect_eq(bpf_map__max_entries(env.skel->maps.xvi_ep_stats), XVI_MAX_ENDPOINTS);
	cr_expect_eq(bpf_map__max_entries(env.skel->maps.xvi_endpoints), XVI_MAX_TAGS);
	cr_expect_eq(bpf_map__max_entries(env.skel->maps.xvi_owners), XVI_MAX_ENDPOINTS);
}

/* The libxdp run config: what the multiprog dispatcher will honour. */
Test(xdp, libxdp_run_config)
{
	DECLARE_LIBXDP_OPTS(xdp_program_opts, popts);
	struct bpf_object *obj;
	struct xdp_program *p;
	const void *elf;
	size_t sz;

	elf = xvi_demux_bpf__elf_bytes(&sz);
	obj = bpf_object__open_mem(elf, sz, NULL);
	cr_assert_not_null(obj, "bpf_object__open_mem: %s", strerror(errno));
	popts.obj = obj;
	popts.prog_name = XVI_PROG_NAME;
	p = xdp_program__create(&popts);
	cr_assert_eq(libxdp_get_error(p), 0, "xdp_program__create: %s",
		     strerror(-libxdp_get_error(p)));
	cr_expect_eq(xdp_program__run_prio(p), 60, "run priority %u, expected 60",
		     xdp_program__run_prio(p));
	cr_expect(xdp_program__chain_call_enabled(p, XDP_PASS), "XDP_PASS must chain");
	cr_expect(!xdp_program__chain_call_enabled(p, XDP_DROP), "XDP_DROP must not chain");
	cr_expect(!xdp_program__chain_call_enabled(p, XDP_REDIRECT),
		  "XDP_REDIRECT must not chain");
	xdp_program__close(p);
	bpf_object__close(obj);
}

/*
 * Until the control plane wrote the interface's MAC (xvi_config), the
 * datapath cannot tell frames for this station from others: it delivers
 * nothing, even to a bound tag with a socket.
 */
Test(xdp, unconfigured_mac_delivers_nothing, .init = fx_setup, .fini = fx_teardown)
{
	static const struct fx_case bound_unconfigured = { "udp4_bound_unconfigured", V4(),
							   KERNEL };
	static const struct fx_case bound = { "udp4_bound_configured", V4(), DELIVER,
					      .slot = SLOT_V4, .meta_flags = OK4 };

	set_config((const __u8[6])FX_DMAC, 0);
	fx_run(&bound_unconfigured);
	set_config((const __u8[6])FX_DMAC, XVI_CFG_MAC);
	fx_run(&bound);
}
