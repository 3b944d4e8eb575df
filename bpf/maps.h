/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Maps of the xvi_demux datapath.  Layouts come from include/xvi_wire.h.
 * None of them is pinned by libbpf (no LIBBPF_PIN_BY_NAME): the control
 * plane pins them itself under <bpffs>/xdp-vi/<ifname>/, and the fixture
 * tests load private copies that must never appear in bpffs.
 */
#ifndef XVI_BPF_MAPS_H
#define XVI_BPF_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "xvi_wire.h"
#include "xvi_ext.h"

/* Bytes bpf_csum_diff() accepts in one call (the helper's scratch size). */
#define XVI_CSUM_CHUNK		512

/* tag -> slot.  Written by the control plane (publish/release), read by XDP. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XVI_MAX_TAGS);
	__type(key, struct xvi_tag);
	__type(value, struct xvi_ep_value);
} xvi_endpoints SEC(".maps");

/* slot -> AF_XDP socket.  Written by the control plane, read by XDP (redirect). */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, XVI_MAX_ENDPOINTS);
	__type(key, __u32);
	__type(value, __u32);
} xvi_xsks SEC(".maps");

/*
 * slot -> host end of a protected endpoint's veth pair (xdp-vid's).  Written
 * by the control plane (xdp-vid through ctl), read by XDP (redirect) for
 * tags flagged XVI_EP_F_DEVMAP.  The kernel drops entries whose device goes.
 */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, XVI_MAX_ENDPOINTS);
	__type(key, __u32);
	__type(value, __u32);
} xvi_devs SEC(".maps");

/*
 * ifindex -> ifindex: the interfaces the router may forward to from this
 * one (docs/EXTENSIONS.md, "IP router").  Written by the router command,
 * read by XDP (redirect).  The kernel drops entries whose device goes.
 */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, XVI_ROUTE_MAX_IFACES);
	__type(key, __u32);
	__type(value, __u32);
} xvi_route_devs SEC(".maps");

/*
 * ifindex -> ifindex: the interfaces handlers on this one may forward to
 * (xvi_ext_forward, docs/EXTENSIONS.md "Forwarding").  Written by root
 * (`xdp-vi ext forward`), read by XDP (xvi_ext_ret_forward's redirect).
 * The kernel drops entries whose device goes.
 */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, XVI_EXT_FWD_MAX_IFACES);
	__type(key, __u32);
	__type(value, __u32);
} xvi_ext_fwd_devs SEC(".maps");

#include "ep_stats.h"

#include "trace.h"

/*
 * The host's own addresses, of every interface: key {kind = XVI_TAG_UDP4 or
 * XVI_TAG_UDP6, addr}, port and raw tag 0; the value is unused.  Written by
 * the control plane (at attach, at every claim, and by whoever follows the
 * host's addresses), read by XDP: a wildcard endpoint takes a datagram only
 * for one of them.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XVI_MAX_LOCAL_ADDRS);
	__type(key, struct xvi_tag);
	__type(value, __u32);
} xvi_local_addrs SEC(".maps");

/* slot -> owner.  Control plane only (claimed with BPF_NOEXIST); XDP never reads it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XVI_MAX_ENDPOINTS);
	__type(key, __u32);
	__type(value, struct xvi_slot_owner);
} xvi_owners SEC(".maps");

/*
 * Extension handlers: the handler for index h of the endpoint in slot s
 * sits at s * XVI_EXT_MAX_HANDLERS + h.  Written by the control plane
 * (xvi_ext__load/unload), read by XDP (bpf_tail_call).  The kernel empties
 * a PROG_ARRAY when its last file reference (fd or pin) goes: handlers
 * live as long as the pin.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, XVI_MAX_ENDPOINTS * XVI_EXT_MAX_HANDLERS);
	__type(key, __u32);
	__type(value, __u32);
} xvi_ext_progs SEC(".maps");

/*
 * Port hooks (docs/EXTENSIONS.md, "Port hooks"): UDP port (host order) ->
 * 0 or 1 + an index of xvi_port_progs, whose program gets the datagrams to
 * that port that no endpoint takes.  Written by the control plane (root:
 * xvi_ctl__port_hook_set), read by XDP.  An array, so that the lookup is
 * an inlined index: frames that are no hook's pay for nothing more.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} xvi_port_hooks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, XVI_PORT_HOOK_MAX);
	__type(key, __u32);
	__type(value, __u32);
} xvi_port_progs SEC(".maps");

/* Each hook's counters (include/xvi_wire.h), by its index of xvi_port_progs. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XVI_PORT_HOOK_MAX);
	__type(key, __u32);
	__type(value, struct xvi_port_hook_counters);
} xvi_port_hook_stats SEC(".maps");

/* xvi_ext_ret, the datapath's return paths for handlers: include/xvi_ext.h. */

/*
 * The dispatch in progress on this CPU: what xvi_demux found before the
 * tail call, for xvi_ext_deliver, which trusts nothing a handler could
 * have written (the frame, its metadata).  XDP runs a frame's programs,
 * tail calls included, on one CPU without preemption.
 */
struct xvi_ext_cur {
	struct xvi_rx_meta meta;
	__u32 vflags;			/* the endpoint's xvi_ep_value flags */
	__u32 frame_len;
	__u32 armed;			/* 1 from the tail call to the return path */
	__u32 key;			/* slot * XVI_EXT_MAX_HANDLERS + index */
	__u32 trace;			/* XVI_CFG_TRACE at dispatch */
	__u64 start_ns;			/* dispatch time, when tracing */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xvi_ext_cur);
} xvi_ext_cur SEC(".maps");

/*
 * Per-handler counters (struct xvi_ext_counters), key as xvi_ext_progs.
 * Written by XDP (dispatch, return paths), read and zeroed by ctl.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XVI_MAX_ENDPOINTS * XVI_EXT_MAX_HANDLERS);
	__type(key, __u32);
	__type(value, struct xvi_ext_counters);
} xvi_ext_stats SEC(".maps");

/*
 * Per-CPU bounce buffer for the checksum: bytes that are not reachable by
 * direct packet access (XDP frags, the < 512-byte tail) are copied here with
 * bpf_xdp_load_bytes() and summed from here.  Written and read by XDP only.
 * Four spare bytes let the tail be zero-padded to a multiple of 4 in place.
 */
struct xvi_scratch {
	__u8 buf[XVI_CSUM_CHUNK + 4];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xvi_scratch);
} xvi_scratch SEC(".maps");

#endif /* XVI_BPF_MAPS_H */
