/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Structures shared by the XDP datapath (bpf/) and user space (libxvi/,
 * tools/xdp-vi/).  Everything here is ABI between the "NIC firmware" and libxvi:
 * change it only together with XVI_WIRE_VERSION.
 *
 * Only <linux/types.h> types are used so that both clang -target bpf and the
 * host compiler see identical layouts.
 */
#ifndef XVI_WIRE_H
#define XVI_WIRE_H

#include <linux/types.h>

#define XVI_WIRE_VERSION	7

/* IEEE 802 local experimental EtherType 1: raw xvi frames inside one L2. */
#define XVI_ETH_P_RAW		0x88B5

/* Size of the XSKMAP and of every per-endpoint table. */
#define XVI_MAX_ENDPOINTS	256

/* The host's addresses the datapath knows (xvi_local_addrs), at most. */
#define XVI_MAX_LOCAL_ADDRS	1024

/* Name of the XDP program, used to find it again on an interface. */
#define XVI_PROG_NAME		"xvi_demux"
/* Programs of a protected endpoint's veth pair (loaded by xdp-vid). */
#define XVI_GUARD_PROG_NAME	"xvi_guard"	/* host end: TX guard */
#define XVI_CLIENT_PROG_NAME	"xvi_client"	/* client end: to the socket */
#define XVI_HOST_EGRESS_PROG_NAME "xvi_host_egress" /* host end: drops the host's own */

/* Pin directory: <bpffs>/xdp-vi/<ifname>/<map name>. */
/* Interfaces a router interface can forward to (xvi_route_devs). */
#define XVI_ROUTE_MAX_IFACES	64
/* Interfaces the handlers of an interface may forward to (xvi_ext_fwd_devs). */
#define XVI_EXT_FWD_MAX_IFACES	64
/*
 * Port hooks (docs/EXTENSIONS.md, "Port hooks"): programs root installs for
 * UDP ports that no endpoint holds.  xvi_port_hooks[port] is 0 (no hook)
 * or 1 + the program's index in xvi_port_progs, a PROG_ARRAY of this many.
 */
#define XVI_PORT_HOOK_MAX	8

/*
 * xvi_port_hook_stats[index of xvi_port_progs]: per-CPU counters of each
 * hook, zeroed when a port takes the index (xvi_ctl__port_hook_list).
 */
struct xvi_port_hook_counters {
	__u64 hooked;		/* handed to the hook's program (tail call) */
	__u64 missing;		/* no program in the slot: passed */
};
#define XVI_PIN_SUBDIR		"xdp-vi"

enum xvi_tag_kind {
	XVI_TAG_UDP4 = 1,
	XVI_TAG_UDP6 = 2,
	XVI_TAG_RAW = 3,
};

/*
 * Key of the endpoint table.  For UDP the tag is (local IP, UDP port); an
 * all-zero address is the wildcard "any address of this family", looked up
 * only after the exact address missed.  For raw frames it is the 32-bit tag.
 * Unused fields must be zero: the key is hashed as bytes.
 *
 * A tag spread over several receive queues (XVI_EP_F_SPREAD) has one entry
 * with queue 0, whose value only says "spread", and one per member endpoint
 * with queue = its receive queue + 1: an AF_XDP socket takes only frames of
 * its own queue (docs/KERNEL.md, fact 2), so the datapath looks the member
 * of the frame's queue up.
 */
struct xvi_tag {
	__u8 kind;		/* enum xvi_tag_kind */
	__u8 queue;		/* 0, or a spread member's queue + 1 */
	__be16 port;		/* UDP destination port, network order */
	__be32 raw_tag;		/* raw tag, network order */
	__u8 addr[16];		/* IPv4 in addr[0..3], or IPv6 */
};

/*
 * Value of the endpoint table.  The control plane inserts a tag with slot
 * XVI_SLOT_PENDING while the endpoint is being set up (the tag itself is the
 * lock between two processes); the datapath treats any slot >=
 * XVI_MAX_ENDPOINTS as "no endpoint".
 */
#define XVI_SLOT_PENDING	XVI_MAX_ENDPOINTS
/* Queues a spread tag can cover: the member's queue + 1 fits the tag's byte. */
#define XVI_SPREAD_MAX_QUEUES	255
/* Entries of the endpoint table: a tag per slot, and a spread tag's own. */
#define XVI_MAX_TAGS		(2 * XVI_MAX_ENDPOINTS)
struct xvi_ep_value {
	__u32 slot;		/* index into the XSKMAP and the stats array */
	__u32 flags;		/* enum xvi_ep_value_flags */
};

enum xvi_ep_value_flags {
	/*
	 * Protected endpoint: redirect through the DEVMAP xvi_devs[slot] to
	 * the host end of the endpoint's veth pair instead of the XSKMAP.
	 */
	XVI_EP_F_DEVMAP = 1 << 0,
	/*
	 * The tag (queue 0) is spread over receive queues: the slot is
	 * XVI_SLOT_PENDING and the frame goes to the member entry of its
	 * receive queue (struct xvi_tag), if any.
	 */
	XVI_EP_F_SPREAD = 1 << 1,
};

/*
 * Raw xvi header, right after the Ethernet header (and an optional 802.1Q
 * tag) when the EtherType is XVI_ETH_P_RAW.  All fields network order.
 */
struct xvi_raw_hdr {
	__be32 dst_tag;		/* demultiplexing key at the receiver */
	__be32 src_tag;		/* sender's tag, for replies */
	__be16 len;		/* payload bytes after this header */
	__be16 flags;		/* reserved, 0 */
} __attribute__((packed));

#define XVI_RAW_HDR_LEN		12

/*
 * Metadata the datapath puts in front of every delivered frame
 * (bpf_xdp_adjust_meta).  AF_XDP copies it into the segment right before the
 * frame, so the library finds it at (frame address - sizeof(meta)) and does
 * not parse or checksum the frame again.  Size is a multiple of 4 as
 * adjust_meta requires.
 */
struct xvi_rx_meta {
	__u16 magic;		/* XVI_RX_META_MAGIC */
	__u16 flags;		/* enum xvi_rx_flags */
	__u16 l3_off;		/* IP (or raw) header offset in the frame */
	__u16 l4_off;		/* UDP header offset; raw: same as l3_off */
	__u16 payload_off;	/* first payload byte */
	__u16 payload_len;	/* payload bytes (UDP length - 8, or raw len) */
	__u32 slot;		/* endpoint slot that matched */
};

#define XVI_RX_META_MAGIC	0x7856	/* "Vx" */

enum xvi_rx_flags {
	XVI_RX_CSUM_VERIFIED = 1 << 0,	/* IP and UDP checksums verified good */
	XVI_RX_CSUM_NONE = 1 << 1,	/* IPv4 UDP with checksum 0: none sent */
	XVI_RX_IPV6 = 1 << 2,
	XVI_RX_RAW = 1 << 3,
	XVI_RX_VLAN = 1 << 4,		/* frame carried one 802.1Q tag */
	/*
	 * UDP checksum field held only the pseudo-header sum: a local
	 * kernel's checksum-offloaded (CHECKSUM_PARTIAL) datagram, accepted
	 * on devices flagged XVI_CFG_LOCAL_LINK only.
	 */
	XVI_RX_CSUM_PARTIAL = 1 << 5,
};

/* Per-endpoint counters: a per-CPU array indexed by slot, written by XDP. */
struct xvi_ep_counters {
	__u64 rx_frames;		/* redirected to the endpoint's socket */
	__u64 rx_bytes;
	__u64 drop_bad_ip_csum;
	__u64 drop_bad_l4_csum;
	__u64 drop_malformed;		/* tag matched but lengths were wrong */
	__u64 drop_no_socket;		/* XSKMAP slot empty (owner gone) */
	__u64 drop_meta;		/* adjust_meta failed */
	/* Protected endpoints: the TX guard on the host end of the veth. */
	__u64 tx_guard_pass;		/* frames the guard let out to IFACE */
	__u64 drop_guard_mac;		/* foreign source MAC */
	__u64 drop_guard_ip;		/* foreign source IP (or wrong family) */
	__u64 drop_guard_port;		/* foreign UDP source port */
	__u64 drop_guard_tag;		/* foreign raw source tag */
	__u64 drop_guard_other;		/* not UDP of the endpoint's family nor raw:
					 * ARP, VLAN, fragments, runts, ... */
	__u64 rx_csum_partial;		/* of rx_frames: partial UDP checksum
					 * accepted (XVI_RX_CSUM_PARTIAL) */
	/*
	 * Protected endpoints: frames with the endpoint's identity that the
	 * guard still keeps in (struct xvi_guard_cfg, allow and max_frame).
	 */
	__u64 drop_guard_group;		/* multicast or broadcast destination */
	__u64 drop_guard_ip_options;	/* IPv4 header longer than 20 bytes */
	__u64 drop_guard_dscp;		/* DSCP 48-63: network control */
	__u64 drop_guard_ctl_port;	/* to a control protocol's UDP port */
	__u64 drop_guard_len;		/* longer than max_frame */
	/*
	 * Protected endpoints: frames that entered the veth pair some other
	 * way than the datapath's redirect.
	 */
	__u64 drop_host_egress;		/* sent by the host's stack into the
					 * host end (xvi_host_egress) */
	__u64 drop_client_meta;		/* reached the client end without the
					 * datapath's metadata for this slot */
	/*
	 * Extensions (include/xvi_ext.h): active messages to the endpoint.
	 * Those the datapath could not hand to a handler were delivered to
	 * the endpoint as ordinary messages, and counted here.
	 */
	__u64 ext_msgs;			/* dispatched to a handler index */
	__u64 ext_missing;		/* of ext_msgs: no handler loaded there */
	__u64 ext_bad_index;		/* index >= XVI_EXT_MAX_HANDLERS */
	__u64 ext_bad_version;		/* the magic, but an unknown version */
	__u64 ext_delivered;		/* handed on by a handler (xvi_ext_deliver) */
};

/* Global counters: a per-CPU array with one element, written by XDP. */
struct xvi_global_counters {
	__u64 rx_frames;		/* every frame the program saw */
	__u64 redirected;		/* handed to some endpoint */
	__u64 passed;			/* XDP_PASS to the kernel */
	__u64 dropped;			/* XDP_DROP, any reason */
	__u64 no_endpoint;		/* UDP or raw frame with no matching tag */
	__u64 malformed;		/* runt, truncated header, IHL < 5, ... */
	__u64 fragments;		/* IP fragments, always passed */
	/* Frames not addressed to this station, all passed to the kernel: */
	__u64 group_dst;		/* multicast/broadcast destination MAC */
	__u64 other_host;		/* unicast to another MAC (promiscuous) */
	/* Frames for a tag that its endpoint does not take, passed: */
	__u64 vlan_protected;		/* 802.1Q-tagged, for a protected endpoint */
	__u64 not_local;		/* for a wildcard endpoint, to an address
					 * that is not this host's */
	__u64 ext_stray;		/* xvi_ext_ret_deliver entered outside a
					 * dispatch: dropped */
	/*
	 * The router (XVI_CFG_ROUTE, docs/EXTENSIONS.md): IP frames to this
	 * station that no endpoint takes.  Forwarded ones are also counted
	 * in redirected; the rest are passed to the kernel, by reason.
	 */
	__u64 rt_forwarded;		/* TTL/hop limit decremented, redirected */
	__u64 rt_pass_ttl;		/* TTL or hop limit <= 1: the kernel's ICMP */
	__u64 rt_pass_frag;		/* an IP fragment */
	__u64 rt_pass_options;		/* IPv4 options, IPv6 hop-by-hop header */
	__u64 rt_pass_csum_partial;	/* local link: a local kernel's partial
					 * TCP/UDP checksum, for the kernel to fill */
	__u64 rt_pass_local;		/* fib: not forwarded (local destination,
					 * link-local, not a unicast route) */
	__u64 rt_pass_no_neigh;		/* fib: no neighbour entry yet */
	__u64 rt_pass_mtu;		/* fib: bigger than the egress MTU */
	__u64 rt_pass_disabled;		/* fib: forwarding off on the ingress device */
	__u64 rt_pass_no_egress;	/* egress not an xdp-vi routing interface */
	__u64 rt_pass_other;		/* blackhole, unreachable, bad header,
					 * martian source, ... */
	__u64 trace_lost;		/* trace events the full ring buffer refused */
	__u64 spread_no_queue;		/* for a spread tag, on a receive queue
					 * where it has no endpoint: passed */
	/*
	 * Port hooks (XVI_CFG_PORT_HOOK): UDP datagrams to a hooked port that
	 * no endpoint holds.  The hook's verdicts are its own to count.
	 */
	__u64 port_hooked;		/* handed to the port's program (tail call) */
	__u64 port_hook_missing;	/* hooked port, no program there: passed */
};

/* The datapath's PROG_ARRAYs, as indexed in xvi_config.table_ids. */
enum xvi_table {
	XVI_TABLE_EXT_PROGS,		/* xvi_ext_progs: the handlers */
	XVI_TABLE_EXT_RET,		/* xvi_ext_ret: their return paths */
	XVI_TABLE_PORT_PROGS,		/* xvi_port_progs: the port hooks */
	XVI_TABLE_NR,
};

/*
 * Interface configuration: the one element of the array map xvi_config,
 * written by the control plane at attach (and on every later attach, which
 * refreshes it), read by XDP.  Until XVI_CFG_MAC is set the datapath
 * delivers nothing: it cannot tell frames for this station from others.
 */
struct xvi_config {
	__u8 mac[6];			/* the interface's MAC address */
	__u16 flags;			/* enum xvi_config_flags */
	/*
	 * Control-plane state, never read by XDP: the map ids of the
	 * datapath's PROG_ARRAYs, written at attach.  The control plane
	 * takes these maps from pins and opens one by id only to remove
	 * entries it knows of: opening a PROG_ARRAY by id when no pin holds
	 * it can leak it (docs/KERNEL.md, fact 49).
	 */
	__u32 table_ids[XVI_TABLE_NR];	/* enum xvi_table */
};

enum xvi_config_flags {
	XVI_CFG_MAC = 1 << 0,		/* mac[] is set */
	/*
	 * The device's frames never cross a wire (veth, netkit): whoever sent
	 * them is a kernel on this host.  A kernel that offloads the UDP
	 * checksum hands the device a CHECKSUM_PARTIAL skb whose checksum
	 * field holds only the pseudo-header sum, and the receiving kernel
	 * trusts it; so does the datapath on such a device.  Set by the
	 * control plane from the device kind at attach.
	 */
	XVI_CFG_LOCAL_LINK = 1 << 1,
	/*
	 * Route IP frames to this station that no endpoint takes (xdp-vi
	 * router enable): bpf_fib_lookup, then a redirect to an interface in
	 * xvi_route_devs.  Set and cleared by the router command only; attach
	 * keeps it.
	 */
	XVI_CFG_ROUTE = 1 << 2,
	/*
	 * Trace extension events into xvi_trace (xdp-vi trace).  Read once
	 * per active message at dispatch; off, no event is reserved.  Set and
	 * cleared by the trace command only; attach keeps it.
	 */
	XVI_CFG_TRACE = 1 << 3,
	/*
	 * Some UDP port has a hook (xvi_port_hooks): datagrams to this
	 * station's addresses that no endpoint takes look their port up
	 * there.  Clear, they cost no lookup.  Set and cleared by the
	 * control plane with the hooks (xvi_ctl__port_hook_set/clear);
	 * attach keeps it.
	 */
	XVI_CFG_PORT_HOOK = 1 << 4,
	/*
	 * Attach made the device's NAPI threaded (a veth's); detach makes it
	 * softirq again.  Control-plane state: the datapath never reads it.
	 */
	XVI_CFG_NAPI_THREADED = 1 << 5,
};

/*
 * What became of an active message, per handler (struct xvi_ext_counters)
 * and in trace events.  The first XVI_EXT_ACT_RET_NR are the handlers'
 * return paths, in the order of include/xvi_ext.h's XVI_EXT_RET_*.
 */
enum xvi_ext_action {
	XVI_EXT_ACT_DELIVER,		/* to the owning endpoint's socket */
	XVI_EXT_ACT_REPLY,		/* XDP_TX back where it came from */
	XVI_EXT_ACT_FORWARD,		/* XDP_REDIRECT to an allowed interface */
	XVI_EXT_ACT_PLACE,		/* data placed, frame consumed */
	XVI_EXT_ACT_DROP,
	XVI_EXT_ACT_PASS,		/* to the kernel's stack */
	XVI_EXT_ACT_RET_NR,
	XVI_EXT_ACT_MISS = XVI_EXT_ACT_RET_NR,	/* no handler at the index */
	XVI_EXT_ACT_ERROR,		/* bad header: unknown version (or index);
					 * or a forward refused (its target not allowed) */
	XVI_EXT_ACT_NR,
};

/*
 * Per-handler counters: the per-CPU array xvi_ext_stats, key slot *
 * XVI_EXT_MAX_HANDLERS + index, written by XDP, zeroed when a handler is
 * loaded there.  runs counts the handler's executions; act[] what the
 * handler ended with through the actions of include/xvi_ext.h, and the
 * messages for the index that no handler ran on (miss, error).  A handler
 * returning a verdict of its own, not through an action, shows as runs
 * minus the sum of act[0 .. XVI_EXT_ACT_RET_NR - 1].
 */
struct xvi_ext_counters {
	__u64 runs;
	__u64 act[XVI_EXT_ACT_NR];
};

/*
 * One trace event (XVI_CFG_TRACE): a record of the ring buffer xvi_trace,
 * written by XDP when an active message's fate is known.  Times are
 * bpf_ktime_get_ns(), CLOCK_MONOTONIC.
 */
#define XVI_TRACE_SNAP		256	/* frame bytes a record carries, at most */
#define XVI_TRACE_RING_SIZE	(1 << 20)

struct xvi_trace_event {
	__u64 start_ns;			/* dispatch (miss, error: = end_ns) */
	__u64 end_ns;			/* the action */
	__u32 slot;			/* the endpoint */
	__u16 handler;			/* the index the message named */
	__u8 action;			/* enum xvi_ext_action */
	__u8 cpu;
	__u32 len;			/* frame bytes, frags included */
	__u32 cap_len;			/* of them in data[], from the start */
	__u8 data[XVI_TRACE_SNAP];
};

enum xvi_ep_mode {
	XVI_EP_MODE_DIRECT = 1,		/* privileged process owns the socket */
	XVI_EP_MODE_PROTECTED = 2,	/* through the broker daemon */
};

/*
 * Who holds a slot.  Control plane only (the XDP program never reads it):
 * a hash keyed by slot, claimed with BPF_NOEXIST so that two processes can
 * never get the same slot.  (pid, start_time) identifies the owner even
 * after pid reuse; a slot whose owner is gone is garbage collected.
 */
struct xvi_slot_owner {
	struct xvi_tag tag;
	__u32 pid;
	__u32 uid;
	__u64 start_time;		/* /proc/PID/stat field 22, clock ticks */
	__u32 queue_id;
	__s32 xsk_fd;			/* fd number in the owner, for XDP_STATISTICS */
	__u32 mode;			/* enum xvi_ep_mode */
	__u32 bind_flags;		/* XDP_ZEROCOPY or XDP_COPY actually in use */
	/*
	 * Protected endpoints: the xdp-vid that made the slot.  Its data path
	 * (veth pair, guard) must not outlive it: gc releases the slot and
	 * deletes the pair once (broker_pid, broker_start_time) is gone.
	 */
	__u32 broker_pid;
	__u32 flags;			/* enum xvi_owner_flags */
	__u64 broker_start_time;
};

enum xvi_owner_flags {
	/*
	 * Handlers were loaded for this owner into xvi_ext_progs: its
	 * release must empty the slot's entries there, opening the table by
	 * id if its pins are out of sight, or keep the slot.
	 */
	XVI_OWNER_HANDLERS = 1 << 0,
};

/*
 * Identity of a protected endpoint, checked by the TX guard (xvi_guard, a
 * TC ingress program) on the host end of its veth pair: one element of the
 * guard's own array map, written only by xdp-vid (the client never holds a
 * map fd).
 */
#define XVI_GUARD_MAX_ADDRS	8
struct xvi_guard_cfg {
	__u32 slot;			/* endpoint slot: counters in xvi_ep_stats */
	__u8 kind;			/* enum xvi_tag_kind */
	__u8 naddrs;			/* valid entries in addrs[] (UDP) */
	__be16 port;			/* UDP source port, network order */
	__be32 raw_tag;			/* raw source tag, network order */
	__u8 mac[6];			/* source MAC: the interface's */
	__u8 nbcast;			/* valid entries in bcast4[] */
	__u8 pad;
	__u32 out_ifindex;		/* the interface: accepted frames leave
					 * through its egress, 0 = drop all */
	/* Allowed source addresses: the bound one, or for a wildcard
	 * endpoint the interface's addresses of that family at open time.
	 * IPv4 in the first 4 bytes. */
	__u8 addrs[XVI_GUARD_MAX_ADDRS][16];
	/*
	 * What the host does not send, dropped unless the policy allows it
	 * (enum xvi_guard_allow).  0, the default, lets none of it out: a
	 * bit is set only for what the policy explicitly allows.
	 */
	__u32 allow;
	/* Longest frame let out, Ethernet header included: the host end's
	 * MTU + 14 (VLAN tags are never let out).  0 lets nothing out. */
	__u32 max_frame;
	/* Directed broadcast addresses of the interface's IPv4 subnets,
	 * group destinations like 255.255.255.255. */
	__be32 bcast4[XVI_GUARD_MAX_ADDRS];
};

/*
 * Bits of xvi_guard_cfg.allow.  Each lets out one kind of frame that a
 * host's own sockets would not send on their own, or that speaks for the
 * whole host to its network: the guard drops it, counted, unless xdp-vid
 * set the bit because the policy allows it for this endpoint.
 */
enum xvi_guard_allow {
	/*
	 * Group destinations: a multicast or broadcast destination MAC
	 * (I/G bit), IPv4 224.0.0.0/4, 255.255.255.255 or a directed
	 * broadcast of the interface (bcast4[]), IPv6 ff00::/8.  Counted in
	 * drop_guard_group.
	 */
	XVI_GUARD_ALLOW_GROUP = 1 << 0,
	/* IPv4 options (IHL > 5): source routes, CIPSO labels, router
	 * alert.  Counted in drop_guard_ip_options. */
	XVI_GUARD_ALLOW_IP_OPTIONS = 1 << 1,
	/* DSCP 48-63 (CS6, CS7 and the rest of IP precedence 6 and 7,
	 * network control), IPv4 and IPv6.  Counted in drop_guard_dscp. */
	XVI_GUARD_ALLOW_NET_CONTROL = 1 << 2,
	/* UDP destination ports of control protocols that speak for the
	 * host or the network: routing and redundancy (HSRP, GLBP, RIP, BFD,
	 * LDP), name and service discovery (mDNS, LLMNR, NetBIOS, SSDP,
	 * WS-Discovery), address and port configuration (DHCP, DHCPv6,
	 * NAT-PMP/PCP) and time (PTP).  docs/DATAPATH.md lists the ports.
	 * Counted in drop_guard_ctl_port. */
	XVI_GUARD_ALLOW_CTL_PORTS = 1 << 3,
};

#endif /* XVI_WIRE_H */
