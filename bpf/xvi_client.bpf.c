// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xvi_client: on the client end of a protected endpoint's veth pair, hand
 * the datapath's frames for this endpoint to its AF_XDP socket.
 *
 * xvi_demux on the interface redirects a frame to the host end only after
 * the tag matched and the checksums verified, with struct xvi_rx_meta in
 * front of it; the metadata travels with the frame through the veth.  So
 * a frame is taken only if it carries exactly that metadata, with the
 * datapath's magic and this endpoint's slot.  Anything else entered the
 * pair some other way (a local socket sending on the host end, which
 * xvi_host_egress should already have stopped) and is dropped, counted in
 * the slot's drop_client_meta.  A veth has one queue: the socket is bound
 * to queue 0 and sits at index 0.  No socket yet (or any more): drop, the
 * client end has no stack to pass to.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xvi_wire.h"

/* The endpoint's slot: set by xdp-vid through the skeleton before load.
 * The default matches no metadata, so an unset program takes nothing. */
const volatile __u32 xvi_slot = XVI_MAX_ENDPOINTS;

/* [0] = the client's socket.  Written by xdp-vid once the client bound it, read by XDP. */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xvi_client_xsk SEC(".maps");

/*
 * xvi_ep_stats: xdp-vid replaces it by the datapath's pinned map before
 * load, so drops here appear next to the endpoint's other counters.
 */
#include "ep_stats.h"

SEC("xdp")
int xvi_client(struct xdp_md *ctx)
{
	struct xvi_rx_meta *meta = (void *)(long)ctx->data_meta;
	void *data = (void *)(long)ctx->data;
	struct xvi_ep_counters *ep;
	long mlen = (long)data - (long)meta;
	__u32 slot = xvi_slot;

	/*
	 * Exactly our 16 bytes.  "meta + 1 > data" proves the read to the
	 * verifier; the length is hidden from clang, which would otherwise
	 * merge both tests into one "!=" the verifier learns nothing from.
	 */
	asm volatile("" : "+r"(mlen));
	if ((void *)(meta + 1) > data || mlen != sizeof(*meta) ||
	    meta->magic != XVI_RX_META_MAGIC || meta->slot != slot) {
		ep = bpf_map_lookup_elem(&xvi_ep_stats, &slot);
		if (ep)
			ep->drop_client_meta++;
		return XDP_DROP;
	}
	return bpf_redirect_map(&xvi_client_xsk, 0, XDP_DROP);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
