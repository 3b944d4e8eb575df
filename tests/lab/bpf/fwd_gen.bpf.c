// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The sending side of tests/bench/router.sh: run by BPF_PROG_RUN in
 * live-frames mode on node a's veth, it sends each repetition out of that
 * veth (XDP_TX), so that node m receives it as a native XDP frame with no
 * sender's socket, skb or syscall per frame.
 *
 * Live frames recycle their pages with the bytes the last use left
 * (docs/KERNEL.md, fact 33), and forwarding rewrites the MACs, the TTL or
 * hop limit and the IPv4 header checksum in place: the frame carries a
 * pristine copy of its Ethernet and IP headers at the start of its UDP
 * payload, and each repetition restores them from it.  Nothing on the way
 * touches the payload or the EtherType, which tells the header's length.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define FWD_GEN_HDRS	34	/* Ethernet (14) + IPv4 without options (20) */
#define FWD_GEN_PAYLOAD	42	/* + UDP (8): where the copy starts */
#define FWD_GEN_HDRS6	54	/* Ethernet (14) + IPv6 (40) */
#define FWD_GEN_PAYLOAD6 62

SEC("xdp")
int fwd_gen(struct xdp_md *ctx)
{
	__u8 *p = (void *)(long)ctx->data;

	if ((void *)(p + FWD_GEN_PAYLOAD + FWD_GEN_HDRS) > (void *)(long)ctx->data_end)
		return XDP_ABORTED;
	if (p[12] == 0x86 && p[13] == 0xdd) {
		if ((void *)(p + FWD_GEN_PAYLOAD6 + FWD_GEN_HDRS6) > (void *)(long)ctx->data_end)
			return XDP_ABORTED;
		__builtin_memcpy(p, p + FWD_GEN_PAYLOAD6, FWD_GEN_HDRS6);
	} else {
		__builtin_memcpy(p, p + FWD_GEN_PAYLOAD, FWD_GEN_HDRS);
	}
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
