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
 *
 * Handlers the owner loaded through xdp-vid (docs/EXTENSIONS.md, "Loading
 * through xdp-vid") run here, not in xvi_demux: an XDP_TX from this end
 * goes to the host end, whose TC ingress guard checks it like any frame
 * the client sends.  The tables are this endpoint's own, so a handler
 * runs only on its owner's frames.  Their events go to the datapath's
 * trace (bpf/trace.h), whose maps xdp-vid gives this program.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xvi_wire.h"
#include "xvi_ext.h"

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
 * The handlers, two generations of XVI_EXT_MAX_HANDLERS: generation g's
 * handler h at g * XVI_EXT_MAX_HANDLERS + h.  Written by xdp-vid (the
 * generation not in use only), read by XDP (bpf_tail_call).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 2 * XVI_EXT_MAX_HANDLERS);
	__type(key, __u32);
	__type(value, __u32);
} xvi_client_ext SEC(".maps");

/* [0] = the generation in use, 0 or 1.  Flipped by xdp-vid once the other
 * generation is complete; read by XDP once per message. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} xvi_client_gen SEC(".maps");

/*
 * xvi_ext_ret (from xvi_ext.h), this object's own: the handlers' way back
 * here.  xdp-vid gives the handlers this map in place of theirs and puts
 * xvi_client_deliver at [XVI_EXT_RET_DELIVER].
 */

/*
 * Per-handler counters (struct xvi_ext_counters, as xvi_demux's
 * xvi_ext_stats), by index: the generations share them, so a swap keeps
 * an index's counts.  Written by XDP (dispatch, return paths), read by
 * xdp-vid (EXT_LIST) and zeroed by it when a handler is loaded at an
 * index that had none.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XVI_EXT_MAX_HANDLERS);
	__type(key, __u32);
	__type(value, struct xvi_ext_counters);
} xvi_cext_stats SEC(".maps");

/*
 * The dispatch in progress on this CPU, for the return paths: which index
 * runs.  From the dispatch, never from the frame, which the handler could
 * have rewritten.  XDP runs a frame's programs, tail calls included, on one
 * CPU without preemption.
 */
struct xvi_cext_cur {
	__u32 armed;		/* 1 from the tail call to the return path */
	__u32 handler;
	__u32 trace;		/* XVI_CFG_TRACE at dispatch */
	__u32 pad;
	__u64 start_ns;		/* dispatch time, when tracing */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xvi_cext_cur);
} xvi_cext_cur SEC(".maps");

/*
 * xvi_ep_stats: xdp-vid replaces it by the datapath's pinned map before
 * load, so drops here appear next to the endpoint's other counters.
 */
#include "ep_stats.h"
/* xvi_trace, xvi_config, xvi_global_stats: replaced likewise. */
#include "trace.h"

static __always_inline struct xvi_ep_counters *ep_of(__u32 slot)
{
	return bpf_map_lookup_elem(&xvi_ep_stats, &slot);
}

/*
 * An active message (docs/EXTENSIONS.md, "Dispatch") runs the handler its
 * index names in the generation in use, by a tail call that does not
 * return.  Returns when the payload is no active message, or, counted,
 * when its header is bad or no handler is at the index: delivered then.
 */
static __always_inline void xvi_client_dispatch(struct xdp_md *ctx, __u32 slot,
						const struct xvi_rx_meta *meta)
{
	void *end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct xvi_ext_counters *hs;
	struct xvi_ep_counters *ep;
	struct xvi_cext_cur *cur;
	struct xvi_am_hdr *am;
	__u32 zero = 0, off, *gen, key, trace;
	__u16 h;

	if (meta->payload_len < XVI_AM_HDR_LEN)
		return;
	off = meta->payload_off;
	if (off > 256)
		return;
	am = data + off;
	/* An ordinary message costs these two compares and nothing else. */
	if ((void *)(am + 1) > end || am->magic != bpf_htonl(XVI_AM_MAGIC))
		return;
	ep = ep_of(slot);
	if (!ep)
		return;
	h = bpf_ntohs(am->handler);
	trace = xvi_tracing();
	if (h >= XVI_EXT_MAX_HANDLERS) {
		/* An index past the table has no counters: its error is the
		 * endpoint's, traced at index 0 as xvi_demux does. */
		if (am->version != XVI_AM_VERSION)
			ep->ext_bad_version++;
		else
			ep->ext_bad_index++;
		if (trace)
			xvi_trace_emit(ctx, 0, slot, 0, XVI_EXT_ACT_ERROR);
		return;
	}
	key = h;
	hs = bpf_map_lookup_elem(&xvi_cext_stats, &key);
	if (!hs)
		return;
	if (am->version != XVI_AM_VERSION) {
		ep->ext_bad_version++;
		hs->act[XVI_EXT_ACT_ERROR]++;
		if (trace)
			xvi_trace_emit(ctx, 0, slot, h, XVI_EXT_ACT_ERROR);
		return;
	}
	gen = bpf_map_lookup_elem(&xvi_client_gen, &zero);
	cur = bpf_map_lookup_elem(&xvi_cext_cur, &zero);
	if (!gen || !cur)
		return;
	ep->ext_msgs++;
	hs->runs++;
	cur->handler = h;
	cur->trace = trace;
	cur->start_ns = trace ? bpf_ktime_get_ns() : 0;
	cur->armed = 1;
	bpf_tail_call(ctx, &xvi_client_ext, (*gen & 1) * XVI_EXT_MAX_HANDLERS + h);
	/* No handler there: counted as a miss, delivered as an ordinary message. */
	cur->armed = 0;
	hs->runs--;
	hs->act[XVI_EXT_ACT_MISS]++;
	ep->ext_missing++;
	if (trace)
		xvi_trace_emit(ctx, 0, slot, h, XVI_EXT_ACT_MISS);
}

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
	xvi_client_dispatch(ctx, slot, meta);
	return bpf_redirect_map(&xvi_client_xsk, 0, XDP_DROP);
}

/*
 * The handlers' return paths, this object's xvi_ext_ret[] (installed by
 * xdp-vid): a handler's action ends with a tail call to one of them, the
 * one place after the handler that sees how it ended; it counts (and, if
 * the dispatch saw tracing on, traces) the action for the index the
 * dispatch recorded, then carries it out.  Entered with no dispatch in
 * progress (cannot happen: only dispatched handlers hold the map), nothing
 * is counted.
 */
static __always_inline struct xvi_ext_counters *xvi_client_ret_count(struct xdp_md *ctx,
								   __u8 action)
{
	struct xvi_ext_counters *hs;
	struct xvi_cext_cur *cur;
	__u32 zero = 0, key;

	cur = bpf_map_lookup_elem(&xvi_cext_cur, &zero);
	if (!cur || !cur->armed)
		return NULL;
	cur->armed = 0;
	key = cur->handler;
	hs = bpf_map_lookup_elem(&xvi_cext_stats, &key);
	if (hs)
		hs->act[action]++;
	if (cur->trace)
		xvi_trace_emit(ctx, cur->start_ns, xvi_slot, key, action);
	return hs;
}

/*
 * xvi_ext_deliver() of a handler: to the socket.  Only this endpoint's
 * handlers reach it, and the socket is the owner's: whatever the handler
 * did to the frame or its metadata reaches no one else.
 */
SEC("xdp")
int xvi_client_deliver(struct xdp_md *ctx)
{
	struct xvi_ep_counters *ep = ep_of(xvi_slot);

	xvi_client_ret_count(ctx, XVI_EXT_ACT_DELIVER);
	if (ep)
		ep->ext_delivered++;
	return bpf_redirect_map(&xvi_client_xsk, 0, XDP_DROP);
}

#define XVI_CLIENT_RET_PROG(name, action, verdict)			\
SEC("xdp")								\
int name(struct xdp_md *ctx)						\
{									\
	xvi_client_ret_count(ctx, action);				\
	return verdict;							\
}

/* XDP_TX goes to the host end and its guard, like anything the client sends. */
XVI_CLIENT_RET_PROG(xvi_client_ret_reply, XVI_EXT_ACT_REPLY, XDP_TX)
/*
 * A forward (xvi_ext_forward) is refused here, whatever its target: the
 * frame would leave by another interface than the endpoint's own, where
 * no guard vouches for the owner (docs/SECURITY.md, "Extension
 * handlers"); and xdp-vid refuses bpf_redirect* in the handlers, so none
 * can redirect by itself.  Counted as an error and a drop: `forward`
 * counts only frames that left.
 */
SEC("xdp")
int xvi_client_ret_forward(struct xdp_md *ctx)
{
	struct xvi_ext_counters *hs = xvi_client_ret_count(ctx, XVI_EXT_ACT_ERROR);

	if (hs)
		hs->act[XVI_EXT_ACT_DROP]++;
	return XDP_DROP;
}
XVI_CLIENT_RET_PROG(xvi_client_ret_place, XVI_EXT_ACT_PLACE, XDP_DROP)
XVI_CLIENT_RET_PROG(xvi_client_ret_drop, XVI_EXT_ACT_DROP, XDP_DROP)
/* To the client end's stack, where xvi_client_stack_drop takes it. */
XVI_CLIENT_RET_PROG(xvi_client_ret_pass, XVI_EXT_ACT_PASS, XDP_PASS)

/*
 * On the host end while the endpoint has handlers: an XDP_TX from the
 * client end reaches the host end only when it runs XDP (docs/KERNEL.md,
 * facts 7 and 28); the frames go on to its TC ingress guard.
 */
SEC("xdp")
int xvi_client_host_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

/*
 * At TC ingress of the client end while the endpoint has handlers: a
 * handler's XDP_PASS would hand its frame, whatever it wrote into it, to
 * the host's own stack as received on this end.  Nothing else ever
 * reaches the client end's stack (xvi_client only redirects or drops).
 */
SEC("tc")
int xvi_client_stack_drop(struct __sk_buff *skb)
{
	struct xvi_ep_counters *ep = ep_of(xvi_slot);

	if (ep)
		ep->drop_client_meta++;
	return TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
