/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The IP router of the datapath (docs/EXTENSIONS.md, "IP router"): IPv4
 * and IPv6 frames to this station that no endpoint takes, on an interface
 * where routing is on (XVI_CFG_ROUTE), are forwarded with the kernel's
 * routes and neighbours (bpf_fib_lookup) to another routing interface
 * (xvi_route_devs).  Everything the kernel must see or do something for is
 * passed to it untouched, counted by reason: TTL expiry (ICMP time
 * exceeded), fragments, options, local destinations, no neighbour yet
 * (resolution), too big for the egress MTU (ICMP or fragmentation),
 * forwarding off on the ingress device, and any other fib result.
 */
#ifndef XVI_BPF_ROUTE_H
#define XVI_BPF_ROUTE_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "maps.h"
#include "parse.h"
#include "csum.h"

#define XVI_AF_INET		2
#define XVI_AF_INET6		10
#define XVI_NEXTHDR_HOP		0
#define XVI_IP6_FLOWINFO	bpf_htonl(0x0fffffff)

/* fe80::/10: never forwarded (RFC 4291 2.5.6); the kernel's to handle. */
static __always_inline bool xvi_ip6_link_local(const struct in6_addr *a)
{
	return (a->in6_u.u6_addr8[0] == 0xfe) && ((a->in6_u.u6_addr8[1] & 0xc0) == 0x80);
}

/*
 * On a local link (XVI_CFG_LOCAL_LINK) a TCP or UDP checksum field that
 * holds exactly the folded pseudo-header sum @seed is a sending kernel's
 * CHECKSUM_PARTIAL (docs/DATAPATH.md, "Checksums"): nobody summed the
 * payload.  Redirected, the frame would keep it and the receiver would
 * drop it (docs/KERNEL.md, fact 29); the kernel completes it when it
 * forwards.  A full checksum that happens to equal the seed only takes
 * the kernel's (correct) path.  @l4 points at the L4 header.
 */
static __always_inline bool xvi_route_partial(struct xdp_md *ctx, void *l4, __u8 proto,
					      __u32 seed)
{
	void *end = (void *)(long)ctx->data_end;
	__u16 *check;

	if (proto == IPPROTO_TCP)
		check = l4 + 16;
	else if (proto == IPPROTO_UDP)
		check = l4 + 6;
	else
		return false;
	if ((void *)(check + 1) > end)
		return false;
	return *check == xvi_csum_fold(seed);
}

/*
 * The fib verdict @rc: on success, the frame leaves through fib->ifindex
 * with the MACs the lookup found, once @fix (TTL or hop limit) is applied
 * by the caller; returns 1 to forward, else counts why not and returns 0.
 */
static __always_inline int xvi_route_ok(struct xvi_global_counters *g,
					const struct bpf_fib_lookup *fib, long rc)
{
	__u32 oif = fib->ifindex;

	switch (rc) {
	case BPF_FIB_LKUP_RET_SUCCESS:
		/*
		 * The redirect is chosen before the frame changes, so that an
		 * egress outside the map leaves it untouched for the kernel:
		 * bpf_redirect_map() only records the target (the device,
		 * held until the program returns), and the one lookup serves
		 * as the check.
		 */
		if (bpf_redirect_map(&xvi_route_devs, oif, 0) != XDP_REDIRECT) {
			g->rt_pass_no_egress++;
			return 0;
		}
		return 1;
	case BPF_FIB_LKUP_RET_NOT_FWDED:
		g->rt_pass_local++;
		return 0;
	case BPF_FIB_LKUP_RET_NO_NEIGH:
		g->rt_pass_no_neigh++;
		return 0;
	case BPF_FIB_LKUP_RET_FRAG_NEEDED:
		g->rt_pass_mtu++;
		return 0;
	case BPF_FIB_LKUP_RET_FWD_DISABLED:
		g->rt_pass_disabled++;
		return 0;
	default:
		g->rt_pass_other++;
		return 0;
	}
}

/* Rewrite the Ethernet addresses from the lookup; xvi_route_ok() chose
 * the egress. */
static __always_inline int xvi_route_out(struct ethhdr *eth, struct xvi_global_counters *g,
					 const struct bpf_fib_lookup *fib)
{
	__builtin_memcpy(eth->h_dest, fib->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib->smac, ETH_ALEN);
	g->rt_forwarded++;
	return XDP_REDIRECT;
}

/*
 * Route the IPv4 frame whose header @iph (@hlen bytes) follows the
 * Ethernet header.  Verdict XDP_REDIRECT (forwarded), XDP_PASS (the
 * kernel's, counted why), XDP_DROP only if the egress vanished mid-way.
 */
static __always_inline int xvi_route4(struct xdp_md *ctx, struct xvi_global_counters *g,
				      struct iphdr *iph, __u32 hlen, bool local_link)
{
	struct ethhdr *eth = (void *)(long)ctx->data;
	struct bpf_fib_lookup fib = {};
	__u32 sum, check;
	__u8 src0;
	long rc;

	if ((void *)(eth + 1) > (void *)(long)ctx->data_end)
		return XDP_PASS;	/* cannot happen: the demux parsed it */
	if (hlen != sizeof(*iph)) {
		g->rt_pass_options++;
		return XDP_PASS;
	}
	if (xvi_ip4_is_fragment(iph)) {
		g->rt_pass_frag++;
		return XDP_PASS;
	}
	if (iph->ttl <= 1) {
		g->rt_pass_ttl++;
		return XDP_PASS;
	}
	/*
	 * Martian sources the kernel drops (0/8, loopback, multicast and
	 * above): the lookup checks only the destination.
	 */
	src0 = ((__u8 *)&iph->saddr)[0];
	if (src0 == 0 || src0 == 127 || src0 >= 224) {
		g->rt_pass_other++;
		return XDP_PASS;
	}
	/* The kernel drops a bad header checksum at ip_rcv: let it. */
	if (!xvi_ip4_hdr_sum_ok(iph)) {
		g->rt_pass_other++;
		return XDP_PASS;
	}
	if (local_link) {
		/* The pseudo-header: both addresses, protocol, L4 length. */
		sum = xvi_csum_words(&iph->saddr, 4, 0);
		sum += bpf_htons((__u16)iph->protocol);
		sum += bpf_htons((__u16)(bpf_ntohs(iph->tot_len) - sizeof(*iph)));
		if (xvi_route_partial(ctx, iph + 1, iph->protocol, sum)) {
			g->rt_pass_csum_partial++;
			return XDP_PASS;
		}
	}
	fib.family = XVI_AF_INET;
	fib.tos = iph->tos;
	fib.l4_protocol = iph->protocol;
	fib.tot_len = bpf_ntohs(iph->tot_len);
	fib.ipv4_src = iph->saddr;
	fib.ipv4_dst = iph->daddr;
	fib.ifindex = ctx->ingress_ifindex;
	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	if (!xvi_route_ok(g, &fib, rc))
		return XDP_PASS;
	/* TTL - 1 and the header checksum updated incrementally (RFC 1624):
	 * the TTL is the high byte of its 16-bit word. */
	check = iph->check;
	check += bpf_htons(0x0100);
	iph->check = (__u16)(check + (check >= 0xffff));
	iph->ttl--;
	return xvi_route_out(eth, g, &fib);
}

/* Route the IPv6 frame whose header @ip6h follows the Ethernet header. */
static __always_inline int xvi_route6(struct xdp_md *ctx, struct xvi_global_counters *g,
				      struct ipv6hdr *ip6h, bool local_link)
{
	struct ethhdr *eth = (void *)(long)ctx->data;
	struct bpf_fib_lookup fib = {};
	__u32 sum;
	long rc;

	if ((void *)(eth + 1) > (void *)(long)ctx->data_end)
		return XDP_PASS;
	if (ip6h->nexthdr == XVI_NEXTHDR_FRAGMENT) {
		g->rt_pass_frag++;
		return XDP_PASS;
	}
	if (ip6h->nexthdr == XVI_NEXTHDR_HOP) {
		g->rt_pass_options++;
		return XDP_PASS;
	}
	if (ip6h->hop_limit <= 1) {
		g->rt_pass_ttl++;
		return XDP_PASS;
	}
	if (xvi_ip6_link_local(&ip6h->saddr) || xvi_ip6_link_local(&ip6h->daddr)) {
		g->rt_pass_local++;
		return XDP_PASS;
	}
	if (ip6h->saddr.in6_u.u6_addr8[0] == 0xff) {	/* a multicast source */
		g->rt_pass_other++;
		return XDP_PASS;
	}
	if (local_link) {
		/* The pseudo-header (RFC 8200 8.1): both addresses, the
		 * upper-layer length (32 bits, here under 64 KiB) and the
		 * next header (32 bits, zero-padded). */
		sum = xvi_csum_words(&ip6h->saddr, 16, 0);
		sum += ip6h->payload_len;
		sum += bpf_htons((__u16)ip6h->nexthdr);
		if (xvi_route_partial(ctx, ip6h + 1, ip6h->nexthdr, sum)) {
			g->rt_pass_csum_partial++;
			return XDP_PASS;
		}
	}
	fib.family = XVI_AF_INET6;
	fib.flowinfo = *(__be32 *)ip6h & XVI_IP6_FLOWINFO;
	fib.l4_protocol = ip6h->nexthdr;
	fib.tot_len = bpf_ntohs(ip6h->payload_len) + sizeof(*ip6h);
	__builtin_memcpy(fib.ipv6_src, &ip6h->saddr, sizeof(fib.ipv6_src));
	__builtin_memcpy(fib.ipv6_dst, &ip6h->daddr, sizeof(fib.ipv6_dst));
	fib.ifindex = ctx->ingress_ifindex;
	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	if (!xvi_route_ok(g, &fib, rc))
		return XDP_PASS;
	ip6h->hop_limit--;
	return xvi_route_out(eth, g, &fib);
}

#endif /* XVI_BPF_ROUTE_H */
