// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A handler xdp-vid must refuse (tests/lab/extbroker.sh, "helpers"): it
 * sends the frame out of another interface with bpf_redirect, which would
 * skip the endpoint's guard.  The call sits in a subprogram, which libbpf
 * appends only at load: the check must see the program whole.
 */
#include "xvi_ext.h"

static __attribute__((noinline)) int xvi_ext_out(struct xdp_md *ctx, __u32 ifindex)
{
	return bpf_redirect(ifindex, 0);
}

XVI_EXT_HANDLER(xvi_ext_redirect)
{
	return xvi_ext_out(ctx, 1);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
