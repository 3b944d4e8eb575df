// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xvi_client: on the client end of a protected endpoint's veth pair, hand
 * every frame to the endpoint's AF_XDP socket.
 *
 * The only frames that reach the client end are the ones xvi_demux on the
 * interface redirected to the host end (the host end has no addresses and
 * IPv6 off, so the kernel sends nothing there): tag match, checksums and
 * struct xvi_rx_meta were done on the interface, and the metadata travels
 * with the frame through the veth.  A veth has one queue: the socket is
 * bound to queue 0 and sits at index 0.  No socket yet (or any more): drop,
 * the client end has no stack to pass to.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* [0] = the client's socket.  Written by xdp-vid once the client bound it, read by XDP. */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xvi_client_xsk SEC(".maps");

SEC("xdp")
int xvi_client(struct xdp_md *ctx)
{
	return bpf_redirect_map(&xvi_client_xsk, 0, XDP_DROP);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
