// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The receiving side of tests/bench/router.sh: attached to node b's veth,
 * it counts every frame that arrives and drops it, so that what the bench
 * measures is node m's forwarding and not a receiver's socket path.  The
 * count is per CPU (fwd_sink_count, one slot), summed by the reader.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} fwd_sink_count SEC(".maps");

SEC("xdp")
int fwd_sink(struct xdp_md *ctx)
{
	__u32 k = 0;
	__u64 *n = bpf_map_lookup_elem(&fwd_sink_count, &k);

	(void)ctx;
	if (n)
		(*n)++;
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
