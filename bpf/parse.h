/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Cursor-based header parser for the datapath.
 *
 * Each helper checks that its whole header lies in the linear part of the
 * frame (data .. data_end), advances the cursor and returns the header, or
 * NULL if the frame is too short.  The cursor also keeps the header offset as
 * a plain scalar, because offsets obtained by subtracting packet pointers are
 * unbounded to the verifier and could not be used for later arithmetic.
 */
#ifndef XVI_BPF_PARSE_H
#define XVI_BPF_PARSE_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xvi_wire.h"

#ifndef ETH_P_8021Q
#define ETH_P_8021Q	0x8100
#endif

/* Fragment bits of iphdr.frag_off (host order). */
#define XVI_IP_MF	0x2000
#define XVI_IP_OFFSET	0x1fff

#define XVI_NEXTHDR_FRAGMENT	44

struct xvi_cursor {
	void *pos;
	void *end;
	__u32 off;		/* pos - data, bounded by construction */
};

struct xvi_vlan_hdr {
	__be16 tci;
	__be16 encap_proto;
};

static __always_inline void xvi_cursor_init(struct xvi_cursor *c, struct xdp_md *ctx)
{
	c->pos = (void *)(long)ctx->data;
	c->end = (void *)(long)ctx->data_end;
	c->off = 0;
}

/* The same over an skb (TC programs): the linear part, MAC header first. */
static __always_inline void xvi_cursor_init_skb(struct xvi_cursor *c, struct __sk_buff *skb)
{
	c->pos = (void *)(long)skb->data;
	c->end = (void *)(long)skb->data_end;
	c->off = 0;
}

/*
 * Ethernet plus at most one 802.1Q tag.  Returns the inner EtherType in
 * network order and sets *vlan, or -1 if the frame is a runt.
 */
static __always_inline int xvi_parse_eth(struct xvi_cursor *c, bool *vlan)
{
	struct ethhdr *eth = c->pos;
	struct xvi_vlan_hdr *vh;
	__be16 proto;

	if ((void *)(eth + 1) > c->end)
		return -1;
	proto = eth->h_proto;
	c->pos = eth + 1;
	c->off = sizeof(*eth);
	*vlan = false;
	if (proto != bpf_htons(ETH_P_8021Q))
		return proto;

	vh = c->pos;
	if ((void *)(vh + 1) > c->end)
		return -1;
	c->pos = vh + 1;
	c->off += sizeof(*vh);
	*vlan = true;
	return vh->encap_proto;
}

/*
 * IPv4 header including options.  Returns NULL for a runt, a wrong version,
 * IHL < 5, or options cut short; *hlen is the header length in bytes.
 */
static __always_inline struct iphdr *xvi_parse_ip4(struct xvi_cursor *c, __u32 *hlen)
{
	struct iphdr *iph = c->pos;
	__u32 len;

	if ((void *)(iph + 1) > c->end)
		return NULL;
	if (iph->version != 4 || iph->ihl < 5)
		return NULL;
	len = iph->ihl * 4;
	/* Constant-size check first, then the variable one: the verifier
	 * needs a bounded length (20..60) to advance the cursor. */
	if (c->pos + len > c->end)
		return NULL;
	c->pos += len;
	c->off += len;
	*hlen = len;
	return iph;
}

static __always_inline struct ipv6hdr *xvi_parse_ip6(struct xvi_cursor *c)
{
	struct ipv6hdr *ip6h = c->pos;

	if ((void *)(ip6h + 1) > c->end)
		return NULL;
	if (ip6h->version != 6)
		return NULL;
	c->pos = ip6h + 1;
	c->off += sizeof(*ip6h);
	return ip6h;
}

static __always_inline struct udphdr *xvi_parse_udp(struct xvi_cursor *c)
{
	struct udphdr *uh = c->pos;

	if ((void *)(uh + 1) > c->end)
		return NULL;
	c->pos = uh + 1;
	c->off += sizeof(*uh);
	return uh;
}

static __always_inline struct xvi_raw_hdr *xvi_parse_raw(struct xvi_cursor *c)
{
	struct xvi_raw_hdr *rh = c->pos;

	if ((void *)(rh + 1) > c->end)
		return NULL;
	c->pos = rh + 1;
	c->off += sizeof(*rh);
	return rh;
}

static __always_inline bool xvi_ip4_is_fragment(const struct iphdr *iph)
{
	return (iph->frag_off & bpf_htons(XVI_IP_MF | XVI_IP_OFFSET)) != 0;
}

#endif /* XVI_BPF_PARSE_H */
