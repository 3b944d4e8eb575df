// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A handler for the tests of the per-handler counters and the trace: it
 * ends with the action its message's arg[0] names, one per return path
 * (XVI_EXT_RET_*), or with a verdict of its own (EXT_ACT_OWN).
 * forward asks for the ifindex in arg[1] (xvi_ext_forward); EXT_ACT_FWD_GROWN
 * does the same after growing the frame by 4 bytes at its tail.
 */
#include "xvi_ext.h"

#define EXT_ACT_OWN	100
#define EXT_ACT_FWD_GROWN	101

XVI_EXT_HANDLER(xvi_ext_act)
{
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
	default:
		return XDP_DROP;	/* not through an action: counted as "other" */
	}
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
