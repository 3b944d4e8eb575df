// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A handler for the tests of the per-handler counters and the trace: it
 * ends with the action its message's arg[0] names, one per return path
 * (XVI_EXT_RET_*), or with a verdict of its own (EXT_ACT_OWN).
 * forward asks for the ifindex in arg[1] (xvi_ext_forward); EXT_ACT_FWD_GROWN
 * does the same after growing the frame by 4 bytes at its tail.  Two
 * forwards the datapath must refuse, both to arg[1]: EXT_ACT_FWD_NOREQ
 * redirects by itself (bpf_redirect) and enters the forward path with no
 * request in front of the metadata; EXT_ACT_FWD_BADMAGIC makes the
 * request's room and fills it with a wrong magic.
 */
#include "xvi_ext.h"

#define EXT_ACT_OWN	100
#define EXT_ACT_FWD_GROWN	101
#define EXT_ACT_FWD_NOREQ	102
#define EXT_ACT_FWD_BADMAGIC	103

XVI_EXT_HANDLER(xvi_ext_act)
{
	struct xvi_ext_fwd_req *req;
	struct xvi_ext_msg m;
	__u32 act, to;

	if (xvi_ext_msg(ctx, &m))
		return xvi_ext_deliver(ctx);
	act = bpf_ntohl(m.am->arg[0]);
	switch (act) {
	case XVI_EXT_RET_DELIVER:
		return xvi_ext_deliver(ctx);
	case XVI_EXT_RET_REPLY:
		return xvi_ext_reply(ctx, &m);
	case XVI_EXT_RET_FORWARD:
		return xvi_ext_forward(ctx, bpf_ntohl(m.am->arg[1]));
	case XVI_EXT_RET_PLACE:
		return xvi_ext__ret(ctx, XVI_EXT_RET_PLACE, XDP_DROP);
	case XVI_EXT_RET_DROP:
		return xvi_ext_drop(ctx);
	case XVI_EXT_RET_PASS:
		return xvi_ext_pass(ctx);
	case EXT_ACT_FWD_GROWN:
		to = bpf_ntohl(m.am->arg[1]);	/* adjust_tail ends every packet pointer */
		if (bpf_xdp_adjust_tail(ctx, 4))
			return xvi_ext_drop(ctx);
		return xvi_ext_forward(ctx, to);
	case EXT_ACT_FWD_NOREQ:
		bpf_redirect(bpf_ntohl(m.am->arg[1]), 0);
		return xvi_ext__ret(ctx, XVI_EXT_RET_FORWARD, XDP_REDIRECT);
	case EXT_ACT_FWD_BADMAGIC:
		to = bpf_ntohl(m.am->arg[1]);	/* adjust_meta ends every packet pointer */
		if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*req)))
			return xvi_ext_drop(ctx);
		req = (void *)(long)ctx->data_meta;
		if ((void *)(req + 1) > (void *)(long)ctx->data)
			return xvi_ext_drop(ctx);
		req->magic = ~XVI_EXT_FWD_MAGIC;
		req->ifindex = to;
		return xvi_ext__ret(ctx, XVI_EXT_RET_FORWARD, XDP_DROP);
	default:
		return XDP_DROP;	/* not through an action: counted as "other" */
	}
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
