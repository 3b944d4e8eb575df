// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Count: count active messages and their payload bytes per the message's
 * first argument (arg[0] modulo 64), then deliver each to the endpoint as
 * usual.  The counts are the handler's own map, xvi_count_by_arg.
 *
 *   xdp-vi ext load IFACE build/ext/count.bpf.o --endpoint 198.18.0.2:7000 --handler 2
 *   bpftool map dump name xvi_count_by_a
 */
#include "xvi_ext.h"

#define XVI_COUNT_KEYS	64

struct xvi_count {
	__u64 msgs;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XVI_COUNT_KEYS);
	__type(key, __u32);
	__type(value, struct xvi_count);
} xvi_count_by_arg SEC(".maps");

XVI_EXT_HANDLER(xvi_count)
{
	struct xvi_ext_msg m;
	struct xvi_count *c;
	__u32 key;

	if (xvi_ext_msg(ctx, &m))
		return xvi_ext_deliver(ctx);
	key = bpf_ntohl(m.am->arg[0]) % XVI_COUNT_KEYS;
	c = bpf_map_lookup_elem(&xvi_count_by_arg, &key);
	if (c) {
		c->msgs++;
		c->bytes += m.payload_len;
	}
	return xvi_ext_deliver(ctx);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
