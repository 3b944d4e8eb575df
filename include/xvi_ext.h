/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Application extensions: active-message handlers that run in the datapath.
 *
 * Two halves:
 *  - the active-message header (struct xvi_am_hdr) and the limits, for
 *    senders in user space and for the datapath alike;
 *  - under __bpf__, what a handler is compiled against with clang: the
 *    message context (xvi_ext_msg) and the actions (deliver, drop, pass,
 *    reply, forward, placed).
 *
 * docs/EXTENSIONS.md says how to write, load and unload a handler;
 * docs/PROTOCOL.md section "Active messages" has the header's layout.
 */
#ifndef XVI_EXT_H
#define XVI_EXT_H

#include <linux/types.h>

/*
 * Active-message header: the first bytes of a UDP payload, or of a raw
 * xvi frame's payload (after struct xvi_raw_hdr), addressed to an
 * endpoint.  All fields network byte order.  A payload that does not start
 * with the magic is an ordinary message: delivered as it always was.
 */
struct xvi_am_hdr {
	__be32 magic;		/* XVI_AM_MAGIC */
	__u8 version;		/* XVI_AM_VERSION */
	__u8 flags;		/* reserved, 0 */
	__be16 handler;		/* handler index at the endpoint, < XVI_EXT_MAX_HANDLERS */
	__be32 arg[2];		/* the handler's own; the datapath never reads them */
};

#define XVI_AM_MAGIC		0x5856414dU	/* "XVAM" */
#define XVI_AM_VERSION		1
#define XVI_AM_HDR_LEN		16

/* Handler indices per endpoint: 0 .. XVI_EXT_MAX_HANDLERS - 1. */
#define XVI_EXT_MAX_HANDLERS	16

/* Names in the datapath object that handlers and the loader rely on. */
#define XVI_EXT_PROGS_MAP	"xvi_ext_progs"		/* slot * MAX_HANDLERS + index */
#define XVI_EXT_RET_MAP		"xvi_ext_ret"		/* the datapath's return paths */
#define XVI_EXT_DELIVER_PROG	"xvi_ext_ret_deliver"	/* xvi_ext_ret[XVI_EXT_RET_DELIVER] */

/*
 * The datapath's return paths, xvi_ext_ret[]: each action ends with a tail
 * call to its own, which counts it for the handler and traces it, then
 * carries it out (enum xvi_ext_action in xvi_wire.h, same order).
 */
#define XVI_EXT_RET_DELIVER	0	/* to the owning endpoint's socket */
#define XVI_EXT_RET_REPLY	1	/* XDP_TX */
#define XVI_EXT_RET_FORWARD	2	/* XDP_REDIRECT to an allowed interface */
#define XVI_EXT_RET_PLACE	3	/* XDP_DROP: the data is placed */
#define XVI_EXT_RET_DROP	4	/* XDP_DROP */
#define XVI_EXT_RET_PASS	5	/* XDP_PASS */
#define XVI_EXT_RET_NR		6

/*
 * A forward's target (xvi_ext_forward): the handler puts this in front of
 * the frame's metadata (struct xvi_rx_meta), and the datapath's forward
 * path redirects to req.ifindex only if that interface is in the
 * datapath's XVI_EXT_FWD_MAP, the interfaces root allowed
 * (`xdp-vi ext forward IFACE TARGET...`).  Anything else is refused:
 * counted as an error and the message delivered to the endpoint.
 */
struct xvi_ext_fwd_req {
	__u32 magic;		/* XVI_EXT_FWD_MAGIC */
	__u32 ifindex;		/* the interface to send the frame out of */
};

#define XVI_EXT_FWD_MAGIC	0x58564657U	/* "XVFW" */
#define XVI_EXT_FWD_MAP		"xvi_ext_fwd_devs"	/* ifindex -> ifindex (DEVMAP_HASH) */

#ifndef __bpf__
/* ---- libxvi: loading handlers (root: CAP_BPF and CAP_NET_ADMIN) -------- */

#include <stdbool.h>
#include <stddef.h>
#include "xvi.h"
#include "xvi_wire.h"

#ifdef __cplusplus
extern "C" {
#endif

struct xvi_ext_opts {
	size_t sz;		/* sizeof(struct xvi_ext_opts): XVI_OPTS() */
	const char *bpffs;	/* bpffs of the datapath's pins; default $XVI_BPFFS
				 * or /sys/fs/bpf */
	const char *prog_name;	/* load: the handler in the object; NULL: its only program */
	bool replace;		/* load: replace a handler already at the index */
	char *log_buf;		/* load: the verifier's log, on rejection too */
	size_t log_size;
	size_t :0;
};

/*
 * Load the handler program of the BPF object file @obj_path and install it
 * as handler @handler of the endpoint @endpoint on @ifname.  @endpoint is
 * the endpoint's tag as its owner bound it: "198.18.0.2:7000",
 * "[2001:2::2]:7000", "0.0.0.0:7000" (wildcard) or "raw:0x2a".  The handler
 * stays loaded until unloaded, until the endpoint is released, or until the
 * datapath is detached.  A protected endpoint's handler, and any handler of
 * a caller without CAP_BPF and CAP_NET_ADMIN where xdp-vid serves @ifname,
 * is loaded by xdp-vid, for the caller's own endpoint, where its policy
 * grants "ext" (-EPERM otherwise; -EDQUOT or -E2BIG beyond its limits).
 * Returns 0 or a negative errno (also in errno): -EEXIST if a handler is
 * at the index (see .replace), -ENOENT if no such endpoint or the datapath
 * is not attached or its maps are not pinned, -EACCES (or another load
 * error) when the verifier rejected the program, whose log is then in
 * .log_buf if given, else printed.
 */
XVI_API int xvi_ext__load(const char *ifname, const char *endpoint, __u32 handler,
			  const char *obj_path, const struct xvi_ext_opts *opts);

/* Unload handler @handler of @endpoint: 0, or -ENOENT if none was loaded. */
XVI_API int xvi_ext__unload(const char *ifname, const char *endpoint, __u32 handler,
			    const struct xvi_ext_opts *opts);

struct xvi_ext_info {
	__u32 slot;		/* the endpoint's slot */
	__u32 handler;		/* index */
	__u32 prog_id;		/* the handler program's id */
	char prog_name[16];	/* as the kernel keeps it */
	char endpoint[64];	/* "udp4 198.18.0.2:7000", "raw 0x0000002a", ... */
};

/*
 * The handlers loaded on @ifname, in slot and index order: the first @max
 * into @infos (may be NULL when @max is 0).  Returns how many are loaded
 * (possibly more than @max) or a negative errno.
 */
XVI_API int xvi_ext__info(const char *ifname, struct xvi_ext_info *infos, __u32 max,
			  const struct xvi_ext_opts *opts);

/*
 * A file descriptor of the map @map_name (as the handler's object names it;
 * the kernel compares 15 characters) of handler @handler of @endpoint, for
 * the application to read, update or mmap its handler's maps.  The caller
 * closes it.  Returns the fd or a negative errno: -ENOENT if there is no
 * such endpoint, handler or map.
 */
/* A handler with its counters (xvi_ext__list). */
struct xvi_ext_stats {
	struct xvi_ext_info info;	/* prog_name "" where the caller may not read it */
	__u32 uid;			/* the endpoint's owner */
	__u32 flags;			/* XVI_EXT_STATS_* */
	__u64 runs;			/* messages that ran the handler */
	__u64 act[XVI_EXT_ACT_NR];	/* by enum xvi_ext_action (xvi_wire.h) */
};

/* Runs on a protected endpoint's client end, held by xdp-vid. */
#define XVI_EXT_STATS_CLIENT_END	1

/*
 * The handlers xdp-vid holds on @ifname (those of protected endpoints,
 * which run on the endpoint's client end), with their counters: the
 * calling uid's own, every one for root; the first @max into @out (may be
 * NULL when @max is 0).  Needs no privilege.  Returns how many there are
 * (possibly more than @max) or a negative errno: -ENOENT when no xdp-vid
 * serves @ifname.  Handlers of direct endpoints: xvi_ext__info, with the
 * counters in xdp-vi status.
 */
XVI_API int xvi_ext__list(const char *ifname, struct xvi_ext_stats *out, __u32 max,
			  const struct xvi_ext_opts *opts);

XVI_API int xvi_ext__map_fd(const char *ifname, const char *endpoint, __u32 handler,
			    const char *map_name, const struct xvi_ext_opts *opts);

#ifdef __cplusplus
}
#endif
#endif /* !__bpf__ */

#ifdef __bpf__

#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xvi_wire.h"

/*
 * The section of a handler.  The loader loads every handler as an XDP
 * program with frags (the datapath is one), whatever the section says.
 */
#define XVI_EXT_HANDLER(name)	SEC("xdp.frags") int name(struct xdp_md *ctx)

/*
 * The datapath's return paths: [XVI_EXT_RET_DELIVER] is its delivery
 * program (XVI_EXT_DELIVER_PROG), installed at attach.  The datapath's own
 * definition, and the one map of it a handler shares: the loader replaces
 * the handler's copy by the datapath's (by name) before loading; a handler
 * gets no other map of the datapath.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, XVI_EXT_RET_NR);
	__type(key, __u32);
	__type(value, __u32);
} xvi_ext_ret SEC(".maps");

/*
 * End the handler with the datapath's return path @ret, which counts and
 * traces the action and returns @verdict.  Returns @verdict itself if
 * that path is missing (attach, and xdp-vid for a protected endpoint's
 * client end, install every one): the action is then taken uncounted and
 * untraced.
 */
static __always_inline int xvi_ext__ret(struct xdp_md *ctx, __u32 ret, int verdict)
{
	bpf_tail_call(ctx, &xvi_ext_ret, ret);
	return verdict;
}

/* What the datapath tells a handler about the message it runs on. */
struct xvi_ext_msg {
	__u32 slot;		/* the owning endpoint */
	__u16 handler;		/* index the message named */
	__u16 flags;		/* enum xvi_rx_flags: IPv6, raw, VLAN, checksum */
	__u16 l3_off;		/* IP or raw header */
	__u16 l4_off;		/* UDP header (raw: as l3_off) */
	__u16 payload_off;	/* the active-message header */
	__u16 payload_len;	/* from the active-message header to the end */
	struct xvi_am_hdr *am;	/* in the linear part: checked by xvi_ext_msg() */
	void *data;		/* ctx->data and ctx->data_end when the context was read */
	void *data_end;
};

/*
 * Read the context the datapath put in front of the frame (its metadata).
 * 0, or -1 if there is none or the header is not in the linear part
 * (cannot happen for a frame the datapath dispatched).  Pointers are valid
 * until the handler changes the frame's size (bpf_xdp_adjust_*).
 */
static __always_inline int xvi_ext_msg(struct xdp_md *ctx, struct xvi_ext_msg *m)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct xvi_rx_meta *meta = (void *)(long)ctx->data_meta;
	struct xvi_am_hdr *am;
	__u32 off;

	if ((void *)(meta + 1) > data || meta->magic != XVI_RX_META_MAGIC)
		return -1;
	off = meta->payload_off;
	if (off > 256)
		return -1;
	am = data + off;
	if ((void *)(am + 1) > end)
		return -1;
	m->slot = meta->slot;
	m->handler = bpf_ntohs(am->handler);
	m->flags = meta->flags;
	m->l3_off = meta->l3_off;
	m->l4_off = meta->l4_off;
	m->payload_off = meta->payload_off;
	m->payload_len = meta->payload_len;
	m->am = am;
	m->data = data;
	m->data_end = end;
	return 0;
}

/* ---- actions: return xvi_ext_*(ctx) from the handler --------------------- */

/*
 * Hand the message to the owning endpoint's socket, as if no handler had
 * run (the handler may have changed payload bytes, not the frame's size).
 * The datapath takes the endpoint from its own record of this dispatch,
 * not from the frame.  Does not return unless the datapath's return path
 * is missing; then the frame goes to the kernel.
 */
static __always_inline int xvi_ext_deliver(struct xdp_md *ctx)
{
	return xvi_ext__ret(ctx, XVI_EXT_RET_DELIVER, XDP_PASS);
}

static __always_inline int xvi_ext_drop(struct xdp_md *ctx)
{
	return xvi_ext__ret(ctx, XVI_EXT_RET_DROP, XDP_DROP);
}

/*
 * The handler has placed the message's data where the application reads it
 * (a region map): the frame itself is done with.  Counted as `place`, not
 * as a drop, so the counters tell placement from refusal.
 */
static __always_inline int xvi_ext_placed(struct xdp_md *ctx)
{
	return xvi_ext__ret(ctx, XVI_EXT_RET_PLACE, XDP_DROP);
}

/* The kernel's stack gets the frame, as if no endpoint owned it. */
static __always_inline int xvi_ext_pass(struct xdp_md *ctx)
{
	return xvi_ext__ret(ctx, XVI_EXT_RET_PASS, XDP_PASS);
}

static __always_inline void xvi_ext__swap(void *a, void *b, __u32 n)
{
	__u8 t[16];

	__builtin_memcpy(t, a, n);
	__builtin_memcpy(a, b, n);
	__builtin_memcpy(b, t, n);
}

/*
 * Send the frame out of interface @ifindex (XDP_REDIRECT), as the handler
 * left it: the handler rewrites what the next hop needs first (Ethernet
 * addresses; IP addresses, ports and their checksums if it changes the
 * destination; see docs/EXTENSIONS.md, "Forwarding").  The datapath
 * forwards only to the interfaces root allowed for this interface
 * (`xdp-vi ext forward`); any other target is refused: counted as an
 * error for the handler and the message delivered to the endpoint (or,
 * if the handler changed the frame's size, dropped).  The metadata in
 * front of the frame is taken off before it leaves.  On a protected
 * endpoint's client end a forward is refused and dropped.
 */
static __always_inline int xvi_ext_forward(struct xdp_md *ctx, __u32 ifindex)
{
	struct xvi_ext_fwd_req *req;

	/* No room: the forward path finds no request and refuses it. */
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*req)))
		return xvi_ext__ret(ctx, XVI_EXT_RET_FORWARD, XDP_DROP);
	req = (void *)(long)ctx->data_meta;
	if ((void *)(req + 1) > (void *)(long)ctx->data)
		return xvi_ext__ret(ctx, XVI_EXT_RET_FORWARD, XDP_DROP);
	req->magic = XVI_EXT_FWD_MAGIC;
	req->ifindex = ifindex;
	return xvi_ext__ret(ctx, XVI_EXT_RET_FORWARD, XDP_DROP);
}

/*
 * Send the frame back where it came from, out of the interface it arrived
 * on: Ethernet addresses, IP addresses and UDP ports (raw: tags) swapped.
 * Checksums stay valid: swapping the two addresses or ports does not change
 * a one's complement sum.  A handler that changed payload bytes must have
 * fixed the UDP checksum (or, IPv4 only, zeroed it).
 *
 * A message with XVI_RX_CSUM_PARTIAL (a local kernel's checksum-offloaded
 * datagram on a veth) carries only the pseudo-header sum, which the
 * receiving kernel would reject: over IPv4 the reply goes out with no
 * checksum (0, RFC 768); over IPv6, where a checksum is mandatory, this
 * helper does not complete it yet and delivers the message to the endpoint
 * instead.
 *
 * Returns XDP_TX, or (xvi_ext_drop) XDP_DROP if the headers are not where
 * the context says.
 */
static __always_inline int xvi_ext_reply(struct xdp_md *ctx, const struct xvi_ext_msg *m)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 l3 = m->l3_off;

	if ((m->flags & XVI_RX_IPV6) && (m->flags & XVI_RX_CSUM_PARTIAL))
		return xvi_ext_deliver(ctx);
	if ((void *)(eth + 1) > end || l3 > 64)
		return xvi_ext_drop(ctx);
	xvi_ext__swap(eth->h_source, eth->h_dest, ETH_ALEN);
	if (m->flags & XVI_RX_RAW) {
		struct xvi_raw_hdr *rh = data + l3;

		if ((void *)(rh + 1) > end)
			return xvi_ext_drop(ctx);
		xvi_ext__swap(&rh->dst_tag, &rh->src_tag, 4);
		return xvi_ext__ret(ctx, XVI_EXT_RET_REPLY, XDP_TX);
	}
	if (m->flags & XVI_RX_IPV6) {
		struct ipv6hdr *ip6h = data + l3;
		struct udphdr *uh = (void *)(ip6h + 1);

		if ((void *)(uh + 1) > end)
			return xvi_ext_drop(ctx);
		xvi_ext__swap(&ip6h->saddr, &ip6h->daddr, 16);
		xvi_ext__swap(&uh->source, &uh->dest, 2);
	} else {
		struct iphdr *iph = data + l3;
		__u32 l4 = m->l4_off;
		struct udphdr *uh;

		if ((void *)(iph + 1) > end || l4 > 128)
			return xvi_ext_drop(ctx);
		uh = data + l4;
		if ((void *)(uh + 1) > end)
			return xvi_ext_drop(ctx);
		xvi_ext__swap(&iph->saddr, &iph->daddr, 4);
		xvi_ext__swap(&uh->source, &uh->dest, 2);
		if (m->flags & XVI_RX_CSUM_PARTIAL)
			uh->check = 0;
	}
	return xvi_ext__ret(ctx, XVI_EXT_RET_REPLY, XDP_TX);
}

#endif /* __bpf__ */

#endif /* XVI_EXT_H */
