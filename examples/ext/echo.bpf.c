// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Echo: answer every active message in the datapath, from the interface it
 * arrived on, with the same bytes.  The endpoint's process never sees it.
 *
 *   xdp-vi ext load IFACE build/ext/echo.bpf.o --endpoint 198.18.0.2:7000 --handler 1
 *
 * The payload is unchanged, so the checksums of the swapped frame still
 * hold (xvi_ext_reply).
 */
#include "xvi_ext.h"

XVI_EXT_HANDLER(xvi_echo)
{
	struct xvi_ext_msg m;

	if (xvi_ext_msg(ctx, &m))
		return xvi_ext_deliver(ctx);
	return xvi_ext_reply(ctx, &m);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
