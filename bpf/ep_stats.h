/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The per-slot counters map, shared by definition between xvi_demux (which
 * owns and pins it) and xvi_guard (whose copy xdp-vid replaces by the
 * pinned map with bpf_map__reuse_fd before load: the two definitions must
 * stay identical, so there is only this one).
 */
#ifndef XVI_BPF_EP_STATS_H
#define XVI_BPF_EP_STATS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xvi_wire.h"

/* Per-slot counters.  Written by XDP, read (summed over CPUs) and zeroed on claim by ctl. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XVI_MAX_ENDPOINTS);
	__type(key, __u32);
	__type(value, struct xvi_ep_counters);
} xvi_ep_stats SEC(".maps");

#endif /* XVI_BPF_EP_STATS_H */
