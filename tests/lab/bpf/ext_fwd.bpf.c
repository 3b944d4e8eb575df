// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A forwarding handler for tests/lab/extfwd.sh, shaped like a one-backend
 * UDP load balancer: each IPv4 active message goes on to the IPv4 address
 * its arg[1] names, ports and payload unchanged.  What a handler must do
 * for a frame it sends elsewhere (docs/EXTENSIONS.md, "Forwarding"):
 *  - the destination address rewritten, and the IP header checksum and
 *    UDP checksum updated for it (RFC 1624); a local kernel's partial UDP
 *    checksum (XVI_RX_CSUM_PARTIAL) cannot be updated into a full one, so
 *    it is zeroed (IPv4 only: none sent);
 *  - the egress interface and both Ethernet addresses from the kernel's
 *    route and neighbour for the new destination (bpf_fib_lookup, as if
 *    the host routed the datagram from the interface it came in on);
 *  - then xvi_ext_forward(), which the datapath carries out only if root
 *    allowed that interface (`xdp-vi ext forward`).
 * No route or no neighbour yet, IPv6, raw and 802.1Q-tagged frames:
 * delivered to the endpoint instead (a tagged frame's route and neighbour
 * are its VLAN device's, which a lookup on this interface would not see,
 * and the tag would go out with it; the router leaves them too).
 */
#include "xvi_ext.h"

#define AF_INET		2

/* The one's complement sum @c folded and inverted: a checksum field. */
static __always_inline __u16 csum_fold(__u32 c)
{
	c = (c & 0xffff) + (c >> 16);
	c = (c & 0xffff) + (c >> 16);
	return (__u16)~c;
}

/* Checksum field @check after a 4-byte word of what it covers went @from -> @to. */
static __always_inline __u16 csum_replace4(__u16 check, __be32 from, __be32 to)
{
	return csum_fold(bpf_csum_diff(&from, sizeof(from), &to, sizeof(to),
				       (__u16)~check));
}

XVI_EXT_HANDLER(xvi_ext_fwd)
{
	struct bpf_fib_lookup fib = {};
	struct xvi_ext_msg m;
	struct ethhdr *eth;
	struct iphdr *iph;
	struct udphdr *uh;
	__be32 from, to;
	__u16 check;

	if (xvi_ext_msg(ctx, &m) || (m.flags & (XVI_RX_IPV6 | XVI_RX_RAW | XVI_RX_VLAN)))
		return xvi_ext_deliver(ctx);
	if (m.l3_off > 64 || m.l4_off > 128)
		return xvi_ext_deliver(ctx);
	eth = m.data;
	iph = m.data + m.l3_off;
	uh = m.data + m.l4_off;
	if ((void *)(eth + 1) > m.data_end || (void *)(iph + 1) > m.data_end ||
	    (void *)(uh + 1) > m.data_end)
		return xvi_ext_deliver(ctx);
	to = m.am->arg[1];

	fib.family = AF_INET;
	fib.tos = iph->tos;
	fib.l4_protocol = IPPROTO_UDP;
	fib.tot_len = bpf_ntohs(iph->tot_len);
	fib.ipv4_src = iph->saddr;
	fib.ipv4_dst = to;
	fib.ifindex = ctx->ingress_ifindex;
	if (bpf_fib_lookup(ctx, &fib, sizeof(fib), 0) != BPF_FIB_LKUP_RET_SUCCESS)
		return xvi_ext_deliver(ctx);

	from = iph->daddr;
	iph->daddr = to;
	iph->check = csum_replace4(iph->check, from, to);
	if (m.flags & XVI_RX_CSUM_PARTIAL) {
		uh->check = 0;
	} else if (uh->check) {		/* 0: sent without one, stays so */
		check = csum_replace4(uh->check, from, to);
		uh->check = check ? check : 0xffff;
	}
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	return xvi_ext_forward(ctx, fib.ifindex);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
