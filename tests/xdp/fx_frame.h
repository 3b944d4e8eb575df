/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Table-driven frame builder for the datapath fixtures.  A spec describes a
 * well-formed frame plus the corruptions to apply after its checksums were
 * computed; the builder reports where it put each header so that the tests
 * can predict the metadata independently of the datapath.
 */
#ifndef XVI_FX_FRAME_H
#define XVI_FX_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

enum fx_l3 {
	FX_IP4 = 1,
	FX_IP6,
	FX_RAW,		/* XVI_ETH_P_RAW + struct xvi_raw_hdr */
	FX_ARP,
};

struct fx_frame_spec {
	enum fx_l3 l3;
	bool vlan;		/* one 802.1Q tag */
	__u8 ihl;		/* IPv4 header words, 0 means 5; > 5 adds options */
	__u16 proto;		/* 0 means UDP; FX_PROTO(p) for any other (even 0) */
	__u16 frag_off;		/* IPv4 frag_off field, host order */
	__u8 tos;		/* IPv4 TOS, IPv6 traffic class (DSCP << 2) */
	const __u8 *dmac;	/* destination MAC, NULL for FX_DMAC */
	const char *dst;	/* destination address, NULL for the default */
	__u16 dport;		/* UDP destination port, host order */
	__u32 payload;		/* payload bytes after the UDP or raw header */
	__u32 raw_tag;		/* raw dst_tag, host order */
	/* UDP checksum field = the folded pseudo-header sum only, as a
	 * local kernel's checksum-offloaded (CHECKSUM_PARTIAL) skb has it. */
	bool partial_l4_csum;
	/*
	 * An active-message header (include/xvi_ext.h) at the start of the
	 * payload, cut to the payload's length if that is shorter.  Zero
	 * magic and version mean the right ones.
	 */
	bool am;
	__u32 am_magic;
	__u8 am_version;
	__u16 am_handler;
	__u32 am_arg0;
	__u32 am_arg1;

	/* Corruptions, applied after the checksums were computed. */
	bool bad_ip_csum;	/* IPv4 header checksum altered */
	bool bad_l4_csum;	/* UDP checksum off by one */
	bool zero_l4_csum;	/* UDP checksum field 0 */
	__u32 flip;		/* flip payload byte flip - 1 (0: none) */
	int udp_len_delta;	/* added to the UDP length field */
	int l3_len_delta;	/* added to tot_len / payload_len / raw len */
	__u8 set_ihl;		/* FX_IHL(v) overwrites the IHL nibble (0: keep) */
	__u32 pad;		/* Ethernet padding after the datagram (0xa5) */
	__u32 cut;		/* truncate the frame to this length (0: keep) */
};

/* Explicit values for fields whose 0 means "default". */
#define FX_PROTO(p)	(0x100 | (p))
#define FX_IHL(v)	(0x10 | (v))

struct fx_frame {
	__u8 *buf;
	__u32 len;
	/* Offsets from the frame start, as the datapath's metadata has them. */
	__u16 l3_off;
	__u16 l4_off;
	__u16 payload_off;
	__u16 payload_len;
};

/* Station addresses: the receiver's (the datapath's xvi_config) and the sender's. */
#define FX_DMAC		{ 0x02, 0, 0, 0, 0, 0x02 }
#define FX_SMAC		{ 0x02, 0, 0, 0, 0, 0x01 }

#define FX_SRC4		"198.18.0.1"
#define FX_DST4		"198.18.0.2"
#define FX_SRC6		"2001:2::1"
#define FX_DST6		"2001:2::2"
#define FX_SPORT	40000

/* Build @spec into a freshly allocated frame; 0 or a negative errno. */
int fx_frame_build(const struct fx_frame_spec *spec, struct fx_frame *f);
void fx_frame_free(struct fx_frame *f);

/* RFC 1071 sum of @len bytes added to @sum (unfolded, 32 bits). */
__u32 fx_csum_add(__u32 sum, const void *buf, size_t len);
/* Fold and complement: the value that goes into a checksum field. */
__u16 fx_csum_finish(__u32 sum);

#endif /* XVI_FX_FRAME_H */
