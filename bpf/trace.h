/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Tracing of active messages (docs/EXTENSIONS.md, "Tracing and per-handler
 * counters") and the maps it needs, shared by definition between
 * xvi_demux, which owns and pins them, and xvi_client, whose copies
 * xdp-vid replaces by the datapath's with bpf_map__reuse_fd before load:
 * the handlers on protected endpoints' client ends trace into the same
 * ring buffer, under the same switch, as the datapath's own.  The
 * definitions must stay identical, so there is only this one.
 */
#ifndef XVI_BPF_TRACE_H
#define XVI_BPF_TRACE_H

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xvi_wire.h"
#include "xvi_ext.h"

/* Interface-wide counters, one element.  Written by XDP, read by ctl (stats). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xvi_global_counters);
} xvi_global_stats SEC(".maps");

/*
 * Interface configuration (struct xvi_config), one element.  Written by the
 * control plane at attach, read by XDP: the station's own MAC address.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xvi_config);
} xvi_config SEC(".maps");

/*
 * Trace events (struct xvi_trace_event) while XVI_CFG_TRACE is set.
 * Written by XDP (xvi_demux, xvi_client), read by xdp-vi trace.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, XVI_TRACE_RING_SIZE);
} xvi_trace SEC(".maps");

/* Tracing on?  Read once per active message, where it is dispatched. */
static __always_inline __u32 xvi_tracing(void)
{
	struct xvi_config *cfg;
	__u32 zero = 0;

	cfg = bpf_map_lookup_elem(&xvi_config, &zero);
	return cfg && (cfg->flags & XVI_CFG_TRACE);
}

/*
 * Trace what became of an active message to @slot naming @handler: one
 * ring buffer record, with the frame's first bytes as they are now.  A
 * full ring buffer loses the event, counted (trace_lost); the frame goes
 * on either way.
 */
static __always_inline void xvi_trace_emit(struct xdp_md *ctx, __u64 start_ns, __u32 slot,
					   __u32 handler, __u8 action)
{
	struct xvi_global_counters *g;
	struct xvi_trace_event *ev;
	__u64 len, cap;			/* 64-bit: no copy the verifier loses bounds on */
	__u32 zero = 0;

	ev = bpf_ringbuf_reserve(&xvi_trace, sizeof(*ev), 0);
	if (!ev) {
		g = bpf_map_lookup_elem(&xvi_global_stats, &zero);
		if (g)
			g->trace_lost++;
		return;
	}
	ev->end_ns = bpf_ktime_get_ns();
	ev->start_ns = start_ns ? start_ns : ev->end_ns;
	ev->slot = slot;
	ev->handler = handler;
	ev->action = action;
	ev->cpu = bpf_get_smp_processor_id();
	len = bpf_xdp_get_buff_len(ctx);
	ev->len = len;
	cap = len < XVI_TRACE_SNAP ? len : XVI_TRACE_SNAP;
	asm volatile("" : "+r"(cap));
	if (cap < 1 || cap > XVI_TRACE_SNAP || bpf_xdp_load_bytes(ctx, 0, ev->data, cap))
		cap = 0;
	ev->cap_len = cap;
	bpf_ringbuf_submit(ev, 0);
}

#endif /* XVI_BPF_TRACE_H */
