// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A handler the verifier must reject (tests/lab/ext.sh, "reject"): it reads
 * the frame without proving the read lies before data_end.
 */
#include "xvi_ext.h"

XVI_EXT_HANDLER(xvi_ext_reject)
{
	__u8 *p = (void *)(long)ctx->data;

	return p[64] ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
