/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Building and parsing the frames an endpoint speaks: Ethernet (optionally
 * one 802.1Q tag) + IPv4/IPv6 + UDP, or Ethernet + raw xvi header under
 * EtherType 0x88B5.  The parser trusts nothing: every length is checked
 * against the frame before it is used, so it serves as the software
 * fallback when the datapath left no metadata, and as the tests' oracle.
 */
#ifndef XVI_FRAME_H
#define XVI_FRAME_H

#include <stdbool.h>
#include <linux/types.h>
#include "xvi_wire.h"
#include "common/ip.h"

#define XVI_ETH_HLEN	14
#define XVI_VLAN_HLEN	4
#define XVI_IP4_HLEN	20
#define XVI_IP6_HLEN	40
#define XVI_UDP_HLEN	8
#define XVI_ETH_P_IP	0x0800
#define XVI_ETH_P_IPV6	0x86DD
#define XVI_ETH_P_8021Q	0x8100
#define XVI_ETH_P_8021AD 0x88A8

/*
 * Parser and builder errors, returned negated.  Not errnos: a frame has
 * more ways to be wrong than errno has names, and tests check the exact
 * reason.  xvi_frame__strerror() names them.
 */
enum xvi_frame_err {
	XVI_FRAME_E_RUNT = 1,	/* shorter than an Ethernet (+ VLAN) header */
	XVI_FRAME_E_ETHERTYPE,	/* not IPv4, IPv6 or raw xvi (or stacked VLANs) */
	XVI_FRAME_E_L3_TRUNC,	/* IP or raw header cut off */
	XVI_FRAME_E_IP_VERSION,	/* version field disagrees with the EtherType */
	XVI_FRAME_E_IP_HLEN,	/* IPv4 IHL < 5 or header beyond the frame */
	XVI_FRAME_E_IP_LEN,	/* IP length below the header or beyond the frame */
	XVI_FRAME_E_FRAGMENT,	/* IP fragment: only whole datagrams are ours */
	XVI_FRAME_E_NOT_UDP,	/* IP protocol / next header is not UDP */
	XVI_FRAME_E_UDP_TRUNC,	/* UDP header cut off */
	XVI_FRAME_E_UDP_LEN,	/* UDP length < 8 or beyond the IP payload */
	XVI_FRAME_E_RAW_LEN,	/* raw header length beyond the frame */
	XVI_FRAME_E_IP_CSUM,	/* IPv4 header checksum bad */
	XVI_FRAME_E_UDP_CSUM,	/* UDP checksum bad (or 0 over IPv6) */
	XVI_FRAME_E_NOSPACE,	/* build: buffer too small */
	XVI_FRAME_E_SPEC,	/* build: bad family in the spec */
	XVI_FRAME__E_MAX,
};

const char *xvi_frame__strerror(int err);

/* What the parser found.  Offsets are from the first byte of the frame. */
struct xvi_frame_info {
	__u16 l3_off;		/* IP or raw header */
	__u16 l4_off;		/* UDP header; raw: same as l3_off */
	__u16 payload_off;
	__u16 payload_len;
	__u16 ethertype;	/* host order, the one after any VLAN tag */
	__u16 vlan_tci;		/* host order, with XVI_RX_VLAN */
	__u32 flags;		/* enum xvi_rx_flags: IPV6, RAW, VLAN, CSUM_NONE */
	__u8 dst_mac[6];
	__u8 src_mac[6];
	struct xvi_ip src;	/* UDP frames */
	struct xvi_ip dst;
	__u16 sport;		/* host order */
	__u16 dport;
	__u16 udp_len;		/* UDP header + payload, host order */
	__u32 src_tag;		/* raw frames, host order */
	__u32 dst_tag;
};

/*
 * Parse and bound-check @len bytes at @frame.  Returns 0 or
 * -XVI_FRAME_E_*.  Checksums are not looked at: see xvi_frame__verify().
 */
int xvi_frame__parse(const void *frame, __u32 len, struct xvi_frame_info *fi);

/*
 * Verify the IPv4 header checksum and the UDP checksum of a parsed frame.
 * IPv4 UDP checksum 0 means "none sent" and passes (fi->flags has
 * XVI_RX_CSUM_NONE); over IPv6 it is invalid.  Raw frames have none.
 */
int xvi_frame__verify(const void *frame, const struct xvi_frame_info *fi);

/* What to build. */
struct xvi_frame_spec {
	int family;		/* AF_INET, AF_INET6, or AF_PACKET for raw xvi */
	__u8 dst_mac[6];
	__u8 src_mac[6];
	bool vlan;		/* insert one 802.1Q tag */
	__u16 vlan_tci;
	struct xvi_ip src;	/* UDP: addresses (family must match) */
	struct xvi_ip dst;
	__u16 sport;		/* host order */
	__u16 dport;
	__u32 src_tag;		/* raw, host order */
	__u32 dst_tag;
	__u16 ip_id;		/* IPv4 identification */
	__u8 ttl;		/* TTL / hop limit, 0 means 64 */
	bool no_udp_csum;	/* IPv4 only: send checksum 0 */
	bool udp_csum_later;	/* leave the UDP checksum field to the caller */
};

/* Header bytes in front of the payload for @s (0 for a bad family). */
__u32 xvi_frame__hdr_len(const struct xvi_frame_spec *s);

/*
 * Write the headers for @s into the xvi_frame__hdr_len() bytes right before
 * @payload, which already holds @len bytes whose partial checksum is @psum
 * (xvi_csum_partial/xvi_csum_copy; ignored for raw).  The caller guarantees
 * the room.  Returns the header length, or -XVI_FRAME_E_SPEC.
 */
int xvi_frame__put_hdrs(void *payload, __u32 len, __u64 psum,
			const struct xvi_frame_spec *s);

/*
 * Build a whole frame into @buf (@cap bytes): headers for @s, then @len
 * bytes of @payload.  Returns the frame length or -XVI_FRAME_E_*.
 */
int xvi_frame__build(void *buf, __u32 cap, const struct xvi_frame_spec *s,
		     const void *payload, __u32 len);

#endif /* XVI_FRAME_H */
