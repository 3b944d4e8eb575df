// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xvi_guard: the TX guard of a protected endpoint.
 *
 * Attached by xdp-vid at TC ingress of the host end of the endpoint's veth
 * pair.  Every frame the client posts on its AF_XDP socket (bound to the
 * client end) arrives here as an skb; AF_XDP TX has no egress hook of its
 * own (docs/KERNEL.md, fact 3), so this is the only place where "send in nobody
 * else's name" can be enforced.  A frame leaves through the interface's
 * egress (bpf_redirect) only if it carries the endpoint's identity:
 *   - source MAC = the interface's MAC;
 *   - UDP endpoint: IPv4 or IPv6 as bound, UDP right after the fixed
 *     header, not a fragment, source address one of the allowed ones,
 *     source port = the endpoint's port;
 *   - raw endpoint: EtherType 0x88B5, source tag = the endpoint's tag;
 * and only if it is what the host's own sockets send, unless the policy
 * allows more (xvi_guard_cfg.allow): a unicast destination (MAC and IP),
 * no IPv4 options, no network-control DSCP, no control protocol's UDP
 * port, at most the host end's MTU long.  Everything else (ARP, VLAN tags,
 * other protocols, runts) is dropped and counted in the endpoint's slot of
 * the datapath's xvi_ep_stats.
 *
 * Why TC and not XDP: an XDP_REDIRECT into a veth is dropped unless the
 * peer of that veth runs XDP or has GRO on, and the interface's peer is
 * somebody else's (a container's veth at its defaults).  An skb redirected
 * to the interface's egress goes through its ordinary transmit path, which
 * every peer accepts, and the skb that AF_XDP copy-mode TX built is used
 * as it is instead of being turned into an xdp_frame and back.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xvi_wire.h"
#include "parse.h"

/* Enough linear bytes for Ethernet + VLAN + IPv4 with options + UDP. */
#define XVI_GUARD_HDRS	(14 + 4 + 60 + 8)

/* The endpoint's identity, one element.  Written by xdp-vid only, read by TC. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xvi_guard_cfg);
} xvi_guard_cfg SEC(".maps");

/*
 * xvi_ep_stats: xdp-vid replaces it by the datapath's pinned map before
 * load, so the guard's counters appear next to the receive counters in
 * `xdp-vi status`.
 */
#include "ep_stats.h"

static __always_inline bool mac_eq(const __u8 *a, const __u8 *b)
{
	return !((*(const __u32 *)a ^ *(const __u32 *)b) |
		 (*(const __u16 *)(a + 4) ^ *(const __u16 *)(b + 4)));
}

static __always_inline bool addr_allowed(const struct xvi_guard_cfg *cfg, const void *src,
					 bool v6)
{
	const __u32 *s = src;
	__u32 i;

	for (i = 0; i < XVI_GUARD_MAX_ADDRS; i++) {
		const __u32 *a = (const __u32 *)cfg->addrs[i];

		if (i >= cfg->naddrs)
			break;
		if (!v6) {
			if (a[0] == s[0])
				return true;
			continue;
		}
		if (a[0] == s[0] && a[1] == s[1] && a[2] == s[2] && a[3] == s[3])
			return true;
	}
	return false;
}

/*
 * UDP destination ports of control protocols (XVI_GUARD_ALLOW_CTL_PORTS):
 * a datagram to one of them from the host's address speaks for the host
 * to its routers, neighbours or clocks.
 */
static __always_inline bool ctl_port(__be16 port)
{
	switch (bpf_ntohs(port)) {
	case 67: case 68:		/* DHCP server, client */
	case 137: case 138:		/* NetBIOS name, datagram */
	case 319: case 320:		/* PTP event, general */
	case 520: case 521:		/* RIP, RIPng */
	case 546: case 547:		/* DHCPv6 client, server */
	case 646:			/* LDP discovery */
	case 1900:			/* SSDP */
	case 1985:			/* HSRP */
	case 2029:			/* HSRP for IPv6 */
	case 3222:			/* GLBP */
	case 3702:			/* WS-Discovery */
	case 3784: case 3785:		/* BFD control, echo */
	case 4784:			/* BFD multihop */
	case 5351:			/* NAT-PMP, PCP */
	case 5353:			/* mDNS */
	case 5355:			/* LLMNR */
	case 6784:			/* BFD on LAG members */
		return true;
	}
	return false;
}

static __always_inline bool bcast4(const struct xvi_guard_cfg *cfg, __be32 dst)
{
	__u32 i;

	if ((bpf_ntohl(dst) >> 28) == 0xe || dst == 0xffffffff)
		return true;			/* 224.0.0.0/4, 255.255.255.255 */
	for (i = 0; i < XVI_GUARD_MAX_ADDRS; i++) {
		if (i >= cfg->nbcast)
			break;
		if (cfg->bcast4[i] == dst)
			return true;
	}
	return false;
}

/* What the endpoint may send from its own address (enum xvi_guard_allow). */
static __always_inline bool ip4_allowed(const struct iphdr *iph, __u32 hlen,
					const struct xvi_guard_cfg *cfg,
					struct xvi_ep_counters *ep)
{
	if (!(cfg->allow & XVI_GUARD_ALLOW_GROUP) && bcast4(cfg, iph->daddr)) {
		ep->drop_guard_group++;
		return false;
	}
	if (!(cfg->allow & XVI_GUARD_ALLOW_IP_OPTIONS) && hlen > sizeof(*iph)) {
		ep->drop_guard_ip_options++;
		return false;
	}
	/* DSCP 48-63: the top two bits of the TOS byte set */
	if (!(cfg->allow & XVI_GUARD_ALLOW_NET_CONTROL) && iph->tos >= 0xc0) {
		ep->drop_guard_dscp++;
		return false;
	}
	return true;
}

static __always_inline bool ip6_allowed(const struct ipv6hdr *ip6h,
					const struct xvi_guard_cfg *cfg,
					struct xvi_ep_counters *ep)
{
	if (!(cfg->allow & XVI_GUARD_ALLOW_GROUP) && ip6h->daddr.in6_u.u6_addr8[0] == 0xff) {
		ep->drop_guard_group++;
		return false;
	}
	/* The traffic class's top nibble: DSCP 48-63 is 0xc and above. */
	if (!(cfg->allow & XVI_GUARD_ALLOW_NET_CONTROL) && ip6h->priority >= 0xc) {
		ep->drop_guard_dscp++;
		return false;
	}
	return true;
}

/*
 * One untagged Ethernet header from the endpoint's MAC, to a unicast
 * destination unless the policy allows more.  Returns the EtherType, or -1
 * (counted).
 */
static __always_inline int eth_allowed(struct xvi_cursor *c, const struct xvi_guard_cfg *cfg,
				       struct xvi_ep_counters *ep)
{
	struct ethhdr *eth = c->pos;
	bool vlan;
	int proto;

	proto = xvi_parse_eth(c, &vlan);
	if (proto < 0 || vlan) {
		ep->drop_guard_other++;
		return -1;
	}
	if (!mac_eq(eth->h_source, cfg->mac)) {
		ep->drop_guard_mac++;
		return -1;
	}
	if (!(cfg->allow & XVI_GUARD_ALLOW_GROUP) && (eth->h_dest[0] & 1)) {
		ep->drop_guard_group++;		/* I/G bit: multicast or broadcast */
		return -1;
	}
	return proto;
}

/* IPv4 for an IPv4 endpoint: UDP, no fragment, from an allowed address. */
static __always_inline bool ip4_hdr_allowed(struct xvi_cursor *c,
					    const struct xvi_guard_cfg *cfg,
					    struct xvi_ep_counters *ep)
{
	struct iphdr *iph;
	__u32 hlen;

	iph = xvi_parse_ip4(c, &hlen);
	if (cfg->kind != XVI_TAG_UDP4 || !iph || iph->protocol != IPPROTO_UDP ||
	    xvi_ip4_is_fragment(iph)) {
		ep->drop_guard_other++;
		return false;
	}
	if (!addr_allowed(cfg, &iph->saddr, false)) {
		ep->drop_guard_ip++;
		return false;
	}
	return ip4_allowed(iph, hlen, cfg, ep);
}

/* IPv6 for an IPv6 endpoint: UDP after the fixed header, from an allowed address. */
static __always_inline bool ip6_hdr_allowed(struct xvi_cursor *c,
					    const struct xvi_guard_cfg *cfg,
					    struct xvi_ep_counters *ep)
{
	struct ipv6hdr *ip6h;

	ip6h = xvi_parse_ip6(c);
	if (cfg->kind != XVI_TAG_UDP6 || !ip6h || ip6h->nexthdr != IPPROTO_UDP) {
		ep->drop_guard_other++;
		return false;
	}
	if (!addr_allowed(cfg, &ip6h->saddr, true)) {
		ep->drop_guard_ip++;
		return false;
	}
	return ip6_allowed(ip6h, cfg, ep);
}

/* The UDP header after either: the endpoint's source port, no control port. */
static __always_inline bool udp_hdr_allowed(struct xvi_cursor *c,
					    const struct xvi_guard_cfg *cfg,
					    struct xvi_ep_counters *ep)
{
	struct udphdr *uh;

	uh = xvi_parse_udp(c);
	if (!uh) {
		ep->drop_guard_other++;
		return false;
	}
	if (uh->source != cfg->port) {
		ep->drop_guard_port++;
		return false;
	}
	if (!(cfg->allow & XVI_GUARD_ALLOW_CTL_PORTS) && ctl_port(uh->dest)) {
		ep->drop_guard_ctl_port++;
		return false;
	}
	return true;
}

/* A raw frame for a raw endpoint, with the endpoint's source tag. */
static __always_inline bool raw_hdr_allowed(struct xvi_cursor *c,
					    const struct xvi_guard_cfg *cfg,
					    struct xvi_ep_counters *ep)
{
	struct xvi_raw_hdr *rh;

	rh = xvi_parse_raw(c);
	if (cfg->kind != XVI_TAG_RAW || !rh) {
		ep->drop_guard_other++;
		return false;
	}
	if (rh->src_tag != cfg->raw_tag) {
		ep->drop_guard_tag++;
		return false;
	}
	return true;
}

/*
 * Does the frame at @c carry the endpoint's identity, and is it what the
 * endpoint may send (cfg->allow)?  Counts why not.
 */
static __always_inline bool frame_allowed(struct xvi_cursor *c,
					  const struct xvi_guard_cfg *cfg,
					  struct xvi_ep_counters *ep)
{
	bool ip_ok;
	int proto;

	proto = eth_allowed(c, cfg, ep);
	if (proto < 0)
		return false;
	if (proto == bpf_htons(ETH_P_IP)) {
		ip_ok = ip4_hdr_allowed(c, cfg, ep);
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		ip_ok = ip6_hdr_allowed(c, cfg, ep);
	} else if (proto == bpf_htons(XVI_ETH_P_RAW)) {
		return raw_hdr_allowed(c, cfg, ep);
	} else {
		ep->drop_guard_other++;
		return false;
	}
	return ip_ok && udp_hdr_allowed(c, cfg, ep);
}

SEC("tc")
int xvi_guard(struct __sk_buff *skb)
{
	struct xvi_guard_cfg *cfg;
	struct xvi_ep_counters *ep;
	struct xvi_cursor c;
	__u32 zero = 0, slot;

	cfg = bpf_map_lookup_elem(&xvi_guard_cfg, &zero);
	if (!cfg)
		return TC_ACT_SHOT;	/* cannot happen: one-element array */
	slot = cfg->slot;
	ep = bpf_map_lookup_elem(&xvi_ep_stats, &slot);
	if (!ep)
		return TC_ACT_SHOT;	/* slot out of range: not configured */
	/* skb->len counts the Ethernet header here (and any fragments). */
	if (skb->len > cfg->max_frame) {
		ep->drop_guard_len++;
		return TC_ACT_SHOT;
	}

	/* Headers are read from the linear part: pull them in if a
	 * (multi-buffer) skb keeps them in fragments.  A failed pull leaves
	 * a runt, which the parser refuses. */
	if ((void *)(long)skb->data + XVI_GUARD_HDRS > (void *)(long)skb->data_end)
		bpf_skb_pull_data(skb, skb->len < XVI_GUARD_HDRS ? skb->len : XVI_GUARD_HDRS);
	xvi_cursor_init_skb(&c, skb);
	if (!frame_allowed(&c, cfg, ep))
		return TC_ACT_SHOT;
	/* No interface (being set up or torn down): drop, never pass. */
	if (!cfg->out_ifindex) {
		ep->drop_guard_other++;
		return TC_ACT_SHOT;
	}
	ep->tx_guard_pass++;
	return bpf_redirect(cfg->out_ifindex, 0);
}

/*
 * xvi_host_egress: TC egress of the host end.  Nothing the host's own
 * stack sends may enter the pair: the datapath's frames for the endpoint
 * arrive through the DEVMAP redirect (ndo_xdp_xmit), which never passes
 * TC egress (docs/KERNEL.md, fact 24), so every skb here is someone else's, such as
 * a local socket with SO_BINDTODEVICE on the host end.  Dropped, counted.
 */
SEC("tc")
int xvi_host_egress(struct __sk_buff *skb)
{
	struct xvi_guard_cfg *cfg;
	struct xvi_ep_counters *ep;
	__u32 zero = 0, slot;

	cfg = bpf_map_lookup_elem(&xvi_guard_cfg, &zero);
	if (cfg) {
		slot = cfg->slot;
		ep = bpf_map_lookup_elem(&xvi_ep_stats, &slot);
		if (ep)
			ep->drop_host_egress++;
	}
	return TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
