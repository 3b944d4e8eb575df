// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * xvi_demux: the xdp-vi datapath ("NIC firmware").
 *
 * Demultiplexes UDP over IPv4/IPv6 and raw xvi frames (EtherType 0x88B5) to
 * AF_XDP sockets by tag, verifies the IP and UDP checksums of everything it
 * delivers, prepends struct xvi_rx_meta, and passes everything else to the
 * kernel.  docs/DATAPATH.md describes verdicts, counters and the verifier
 * constraints behind the shape of this code.
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <xdp/xdp_helpers.h>
#include "xvi_wire.h"
#include "maps.h"
#include "parse.h"
#include "csum.h"
#include "route.h"

/*
 * libxdp multiprog: run after default-priority (50) programs, so that
 * filters loaded next to us see frames before endpoints take them, and let
 * the chain continue on XDP_PASS, the verdict of every frame we do not own.
 */
#define XVI_RUN_PRIO	60

struct {
	__uint(priority, XVI_RUN_PRIO);
	__uint(XDP_PASS, 1);
} XDP_RUN_CONFIG(xvi_demux);

#define XVI_UDP_HLEN	8
#define XVI_META_LEN	((int)sizeof(struct xvi_rx_meta))
#define XVI_IP4_HLEN	20

/* IPv4 pseudo-header minus the addresses, which are summed in place. */
struct xvi_ph4_tail {
	__u8 zero;
	__u8 proto;
	__be16 len;
};

/* IPv6 pseudo-header minus the addresses (RFC 8200 section 8.1). */
struct xvi_ph6_tail {
	__be32 len;
	__u8 zero[3];
	__u8 nexthdr;
};

/*
 * A tag spread over receive queues: the member endpoint of the frame's
 * receive queue @queue, whose socket is the only one the redirect can
 * reach (docs/KERNEL.md, fact 2).  NULL (*no_queue) if that queue has
 * none.  Any other tag's entry is returned as it is, for one flag test.
 */
static __always_inline struct xvi_ep_value *xvi_spread(struct xvi_tag *tag,
							struct xvi_ep_value *v, __u32 queue,
							bool *no_queue)
{
	if (!v || !(v->flags & XVI_EP_F_SPREAD))
		return v;
	if (queue >= XVI_SPREAD_MAX_QUEUES) {
		*no_queue = true;
		return NULL;
	}
	tag->queue = queue + 1;
	v = bpf_map_lookup_elem(&xvi_endpoints, tag);
	tag->queue = 0;
	if (!v)
		*no_queue = true;
	return v;
}

/*
 * The exact tag, else the wildcard of its family, each resolved to the
 * member of receive queue @queue if it is spread.  The wildcard takes a
 * datagram only for one of this host's addresses (xvi_local_addrs), as a
 * kernel socket bound to 0.0.0.0 or :: would: a destination the host
 * merely routes to (a container, another namespace) stays with the kernel
 * (*not_local).  Only wildcard hits pay for the second lookup, only spread
 * tags for the member's.
 */
static __always_inline struct xvi_ep_value *xvi_lookup(struct xvi_tag *tag, __u32 queue,
						       bool *not_local, bool *no_queue)
{
	struct xvi_ep_value *v;
	__u8 dst[16];

	v = bpf_map_lookup_elem(&xvi_endpoints, tag);
	if (v || tag->kind == XVI_TAG_RAW)
		return xvi_spread(tag, v, queue, no_queue);
	__builtin_memcpy(dst, tag->addr, sizeof(dst));
	__builtin_memset(tag->addr, 0, sizeof(tag->addr));
	v = bpf_map_lookup_elem(&xvi_endpoints, tag);
	if (!v)
		return NULL;
	v = xvi_spread(tag, v, queue, no_queue);
	__builtin_memcpy(tag->addr, dst, sizeof(dst));
	tag->port = 0;
	if (bpf_map_lookup_elem(&xvi_local_addrs, tag))
		return v;
	*no_queue = false;
	*not_local = true;
	return NULL;
}

static __always_inline int xvi_malformed(struct xvi_global_counters *g,
					 struct xvi_ep_counters *ep)
{
	g->malformed++;
	ep->drop_malformed++;
	return XDP_DROP;
}

/*
 * The redirect to m->slot's socket (or protected endpoint's veth) of a
 * frame whose metadata is in place, and the endpoint's counters.  If the
 * redirect falls back to XDP_PASS (the socket went away since it was
 * checked), the metadata is taken off again.
 */
static __always_inline int xvi_redirect(struct xdp_md *ctx, struct xvi_ep_counters *ep,
					const struct xvi_rx_meta *m, __u32 frame_len,
					__u32 vflags)
{
	long act;

	if (vflags & XVI_EP_F_DEVMAP)
		act = bpf_redirect_map(&xvi_devs, m->slot, XDP_PASS);
	else
		act = bpf_redirect_map(&xvi_xsks, m->slot, XDP_PASS);
	if (act != XDP_REDIRECT) {
		bpf_xdp_adjust_meta(ctx, (int)sizeof(*m));
		ep->drop_no_socket++;
		return XDP_PASS;
	}
	ep->rx_frames++;
	ep->rx_bytes += frame_len;
	if (m->flags & XVI_RX_CSUM_PARTIAL)
		ep->rx_csum_partial++;
	return XDP_REDIRECT;
}

/*
 * Put the metadata @m in front of the frame.  0, or -1 (drop_meta counted)
 * if adjust_meta failed.  adjust_meta invalidates every packet pointer.
 */
static __always_inline int xvi_put_meta(struct xdp_md *ctx, struct xvi_ep_counters *ep,
					const struct xvi_rx_meta *m)
{
	struct xvi_rx_meta *meta;
	void *data;

	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*meta))) {
		ep->drop_meta++;
		return -1;
	}
	meta = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if ((void *)(meta + 1) > data) {
		ep->drop_meta++;
		return -1;
	}
	*meta = *m;
	return 0;
}

/*
 * Hand a validated frame to the socket of m->slot.  The XSKMAP is checked
 * before adjust_meta so that a frame for a dead endpoint reaches the kernel
 * untouched; the redirect can still fall back to XDP_PASS if the socket goes
 * away in between, and then the metadata is taken off again.
 */
static __always_inline int xvi_deliver(struct xdp_md *ctx, struct xvi_ep_counters *ep,
				       const struct xvi_rx_meta *m, __u32 frame_len,
				       __u32 vflags)
{
	__u32 slot = m->slot;

	/*
	 * Protected endpoint: the frame, metadata included, goes to the host
	 * end of the endpoint's veth (DEVMAP); the client end's program hands
	 * it to the socket.  Direct endpoints never take this branch.
	 */
	if (vflags & XVI_EP_F_DEVMAP) {
		if (!bpf_map_lookup_elem(&xvi_devs, &slot)) {
			ep->drop_no_socket++;
			return XDP_PASS;
		}
	} else if (!bpf_map_lookup_elem(&xvi_xsks, &slot)) {
		ep->drop_no_socket++;
		return XDP_PASS;
	}
	if (xvi_put_meta(ctx, ep, m))
		return XDP_PASS;
	return xvi_redirect(ctx, ep, m, frame_len, vflags);
}

/* Trace (bpf/trace.h) what became of the message to handler table entry @key. */
static __always_inline void xvi_trace_event(struct xdp_md *ctx, __u64 start_ns, __u32 key,
					    __u8 action)
{
	xvi_trace_emit(ctx, start_ns, key / XVI_EXT_MAX_HANDLERS, key % XVI_EXT_MAX_HANDLERS,
		       action);
}

/* A message for index @h that no handler ran on: counted for the index. */
static __always_inline void xvi_ext_unrun(struct xdp_md *ctx, __u32 key, __u8 action,
					  bool trace)
{
	struct xvi_ext_counters *hs;

	hs = bpf_map_lookup_elem(&xvi_ext_stats, &key);
	if (hs)
		hs->act[action]++;
	if (trace)
		xvi_trace_event(ctx, 0, key, action);
}

/*
 * Active-message dispatch (docs/EXTENSIONS.md): a message to a direct
 * endpoint whose payload starts with struct xvi_am_hdr runs the handler
 * its index names, loaded for that endpoint, by a tail call that does not
 * return.  The handler finds the metadata in front of the frame, as a
 * socket would; this CPU's xvi_ext_cur keeps the datapath's own copy for
 * xvi_ext_ret_deliver.  Returns (and the caller delivers the message as an
 * ordinary one) when the payload is no active message (too short, another
 * magic, or the header not in the linear part), and, counted, when the
 * header is bad or no handler is loaded at the index.  Protected endpoints
 * run no handler: their output must pass the guard, which a handler's
 * XDP_TX here would not.
 */
static __always_inline void xvi_ext_dispatch(struct xdp_md *ctx, struct xvi_ep_counters *ep,
					     const struct xvi_rx_meta *m, __u32 frame_len,
					     __u32 vflags)
{
	void *end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct xvi_ext_counters *hs;
	struct xvi_ext_cur *cur;
	struct xvi_am_hdr *am;
	__u32 zero = 0, off, key, trace;
	__u16 h;

	if ((vflags & XVI_EP_F_DEVMAP) || m->payload_len < XVI_AM_HDR_LEN)
		return;
	off = m->payload_off;
	if (off > 256)			/* headers end long before: keeps off bounded */
		return;
	am = data + off;
	if ((void *)(am + 1) > end || am->magic != bpf_htonl(XVI_AM_MAGIC))
		return;
	h = bpf_ntohs(am->handler);
	/* An index past the table has no counters: its error is the endpoint's. */
	key = m->slot * XVI_EXT_MAX_HANDLERS + (h < XVI_EXT_MAX_HANDLERS ? h : 0);
	trace = xvi_tracing();
	if (am->version != XVI_AM_VERSION) {
		ep->ext_bad_version++;
		if (h < XVI_EXT_MAX_HANDLERS)
			xvi_ext_unrun(ctx, key, XVI_EXT_ACT_ERROR, trace);
		else if (trace)
			xvi_trace_event(ctx, 0, key, XVI_EXT_ACT_ERROR);
		return;
	}
	if (h >= XVI_EXT_MAX_HANDLERS) {
		ep->ext_bad_index++;
		if (trace)
			xvi_trace_event(ctx, 0, key, XVI_EXT_ACT_ERROR);
		return;
	}
	cur = bpf_map_lookup_elem(&xvi_ext_cur, &zero);
	hs = bpf_map_lookup_elem(&xvi_ext_stats, &key);
	if (!cur || !hs)
		return;
	if (xvi_put_meta(ctx, ep, m))
		return;
	cur->meta = *m;
	cur->vflags = vflags;
	cur->frame_len = frame_len;
	cur->key = key;
	cur->trace = trace;
	cur->start_ns = trace ? bpf_ktime_get_ns() : 0;
	cur->armed = 1;
	ep->ext_msgs++;
	hs->runs++;
	bpf_tail_call(ctx, &xvi_ext_progs, key);
	/* No handler there: back to an ordinary delivery, meta off again. */
	cur->armed = 0;
	ep->ext_missing++;
	hs->runs--;
	bpf_xdp_adjust_meta(ctx, XVI_META_LEN);
	hs->act[XVI_EXT_ACT_MISS]++;
	if (trace)
		xvi_trace_event(ctx, 0, key, XVI_EXT_ACT_MISS);
}

/* Dispatch if the message is an active message, else (or then) deliver. */
static __always_inline int xvi_dispatch_deliver(struct xdp_md *ctx, struct xvi_ep_counters *ep,
						const struct xvi_rx_meta *m, __u32 frame_len,
						__u32 vflags)
{
	xvi_ext_dispatch(ctx, ep, m, frame_len, vflags);
	return xvi_deliver(ctx, ep, m, frame_len, vflags);
}

/*
 * Look the tag up and map its slot to the endpoint's counters.  NULL (and
 * no_endpoint counted) for an unknown tag, a tag still being set up
 * (XVI_SLOT_PENDING is past the stats array) or a corrupt entry; NULL and
 * not_local for a wildcard's datagram to another host's address, and
 * spread_no_queue for a spread tag's frame on a queue it has no member on
 * (the kernel then has it, as it has the frames of a closed port).  A
 * protected endpoint takes no 802.1Q-tagged frame (vlan_protected, passed):
 * endpoints are not per VLAN, so a tagged frame is for a VLAN interface of
 * this host, if any, not for the endpoint on the untagged one.
 * *unowned: no endpoint holds the tag at all (a port hook's case).
 */
static __always_inline struct xvi_ep_counters *xvi_match(struct xvi_tag *tag,
							  struct xvi_global_counters *g,
							  __u16 flags, __u32 queue, __u32 *slot,
							  __u32 *vflags, bool *unowned)
{
	bool not_local = false, no_queue = false;
	struct xvi_ep_counters *ep = NULL;
	struct xvi_ep_value *v;

	v = xvi_lookup(tag, queue, &not_local, &no_queue);
	if (not_local) {
		g->not_local++;
		return NULL;
	}
	if (no_queue) {
		g->spread_no_queue++;
		return NULL;
	}
	*unowned = !v;
	if (v && (v->flags & XVI_EP_F_DEVMAP) && (flags & XVI_RX_VLAN)) {
		g->vlan_protected++;
		return NULL;
	}
	if (v) {
		*slot = v->slot;
		*vflags = v->flags;
		ep = bpf_map_lookup_elem(&xvi_ep_stats, slot);
	}
	if (!ep)
		g->no_endpoint++;
	return ep;
}

/*
 * The UDP checksum of a matched datagram, IPv4 or IPv6; @seed is the
 * pseudo-header sum.  On a local link (XVI_CFG_LOCAL_LINK) a checksum field
 * that holds exactly the folded seed is a sending kernel's CHECKSUM_PARTIAL
 * datagram: nobody summed its payload, the receiving kernel would trust it,
 * and so does the datapath, without reading the payload.  Anything else
 * must verify.  Returns the XVI_RX_CSUM_* flag to report, 0 for a bad
 * checksum, -1 if bytes could not be read.
 */
static __always_inline int xvi_udp_csum(struct xdp_md *ctx, __u32 l4_off, __u32 udp_len,
					__u32 seed, __u16 check, bool local_link)
{
	int ret;

	if (local_link && check == xvi_csum_fold(seed))
		return XVI_RX_CSUM_PARTIAL;
	ret = xvi_csum_check(ctx, l4_off, udp_len, seed);
	if (ret < 0)
		return -1;
	return ret ? 0 : XVI_RX_CSUM_VERIFIED;
}

/* The metadata every delivered frame starts with, but its payload. */
static __always_inline void xvi_meta_init(struct xvi_rx_meta *m, __u16 flags, __u32 l3_off,
					  __u32 l4_off, __u32 slot)
{
	m->flags = flags;
	m->l3_off = l3_off;
	m->l4_off = l4_off;
	m->slot = slot;
}

/*
 * The UDP header after either IP header, and the endpoint its tag names:
 * @kind, the destination port, and the @addr_len bytes of destination
 * address at @daddr.  NULL, and the frame is the kernel's, if the header is
 * cut short (counted malformed) or no endpoint takes it (xvi_match counted
 * why).
 */
static __always_inline struct xvi_ep_counters *
xvi_udp_match(struct xvi_cursor *c, struct xvi_global_counters *g, __u16 flags, __u8 kind,
	      const void *daddr, __u32 addr_len, __u32 queue, struct udphdr **uhp, __u32 *slot,
	      __u32 *vflags, bool *unowned)
{
	struct xvi_tag tag = {};
	struct udphdr *uh;

	uh = xvi_parse_udp(c);
	if (!uh) {
		g->malformed++;
		return NULL;
	}
	*uhp = uh;
	/* Field by field: a designated initializer would come from .rodata,
	 * costing the object an extra map. */
	tag.kind = kind;
	tag.port = uh->dest;
	__builtin_memcpy(tag.addr, daddr, addr_len);
	return xvi_match(&tag, g, flags, queue, slot, vflags, unowned);
}

/*
 * The lengths of a UDP datagram as its headers give them, never the
 * frame's (Ethernet padding, frags): the IP packet lies in the frame's
 * @frame_len bytes and the UDP length fits its payload.  Over IPv4 the
 * packet of @tot_len bytes starts at @l3_off with a header of @hlen.
 */
static __always_inline bool xvi_udp4_lens_ok(__u32 l3_off, __u32 hlen, __u32 tot_len,
					     __u32 udp_len, __u32 frame_len)
{
	return tot_len >= hlen + XVI_UDP_HLEN && l3_off + tot_len <= frame_len &&
	       udp_len >= XVI_UDP_HLEN && udp_len <= tot_len - hlen;
}

/* The same over IPv6: a payload of @plen bytes from @l4_off. */
static __always_inline bool xvi_udp6_lens_ok(__u32 l4_off, __u32 plen, __u32 udp_len,
					     __u32 frame_len)
{
	return l4_off + plen <= frame_len && udp_len >= XVI_UDP_HLEN && udp_len <= plen;
}

/*
 * The pseudo-header sum of a UDP datagram: the @addrs_len bytes of source
 * and destination addresses at @addrs (in the packet), then the family's
 * @ph_len-byte tail @ph, both constants at every call site.  Inline word
 * adds: two helper calls (bpf_csum_diff) cost more than the 6 (IPv4) or 20
 * (IPv6) loads and adds they would make.  The unfolded sum folds to the
 * helper's value: both are the one's complement sum of the same words.
 */
static __always_inline __u32 xvi_udp_seed(const void *addrs, const int addrs_len,
					  const void *ph, const int ph_len)
{
	return xvi_csum_words(ph, ph_len / 2, xvi_csum_words(addrs, addrs_len / 2, 0));
}

/*
 * The common tail of IPv4 and IPv6, once the IP header checked out: the
 * UDP checksum @check against the pseudo-header (the @addrs_len bytes of
 * source and destination addresses at @addrs, then the family's @ph), the
 * rest of the metadata (flags, offsets and slot are set), and delivery.  A
 * zero @check means no checksum was sent over IPv4 (RFC 768) and is invalid
 * over IPv6 (RFC 8200 8.1).
 */
static __always_inline int xvi_udp_deliver(struct xdp_md *ctx, struct xvi_global_counters *g,
					   struct xvi_ep_counters *ep, struct xvi_rx_meta *m,
					   void *addrs, __u32 addrs_len, void *ph, __u32 ph_len,
					   __u16 check, __u32 udp_len, __u32 frame_len,
					   __u32 vflags, bool local_link)
{
	__u32 seed;
	int v;

	if (check == 0) {
		if (m->flags & XVI_RX_IPV6) {
			ep->drop_bad_l4_csum++;
			return XDP_DROP;
		}
		v = XVI_RX_CSUM_NONE;
	} else {
		seed = xvi_udp_seed(addrs, addrs_len, ph, ph_len);
		v = xvi_udp_csum(ctx, m->l4_off, udp_len, seed, check, local_link);
		if (v < 0)
			return xvi_malformed(g, ep);
		if (!v) {
			ep->drop_bad_l4_csum++;
			return XDP_DROP;
		}
	}
	m->flags |= v;
	m->payload_off = m->l4_off + XVI_UDP_HLEN;
	m->payload_len = udp_len - XVI_UDP_HLEN;
	return xvi_dispatch_deliver(ctx, ep, m, frame_len, vflags);
}

/*
 * The IPv4 header checksum, never offloaded: always verified.  Returns 0
 * if it holds, 1 if it does not, -1 if the header could not be read.
 */
static __always_inline int xvi_ip4_hdr_csum(struct xdp_md *ctx, struct iphdr *iph,
					    __u32 l3_off, __u32 hlen)
{
	/*
	 * Options: copy the whole header, whose length the verifier knows to
	 * be 20..60 (a non-zero helper size), rather than the options alone,
	 * whose 4..40 it cannot prove non-zero.
	 */
	__u8 hdr[60];
	__u32 sum = 0;

	if (hlen == XVI_IP4_HLEN)
		return xvi_ip4_hdr_sum_ok(iph) ? 0 : 1;
	if (bpf_xdp_load_bytes(ctx, l3_off, hdr, hlen) || xvi_csum_mem(hdr, hlen, &sum))
		return -1;
	return xvi_csum_fold(sum) == 0xffff ? 0 : 1;
}

/*
 * Port hooks (docs/EXTENSIONS.md, "Port hooks"): the index in
 * xvi_port_progs of the program hooked on UDP port @port, -1 if none, or
 * if the destination @daddr is not one of this host's addresses (a
 * datagram the host merely routes is no local port's).
 */
static __always_inline int xvi_port_hook(__u8 kind, const void *daddr, __u32 addr_len,
					 __be16 port)
{
	struct xvi_tag tag = {};
	__u32 key = bpf_ntohs(port), *idx;

	idx = bpf_map_lookup_elem(&xvi_port_hooks, &key);
	if (!idx || !*idx || *idx > XVI_PORT_HOOK_MAX)
		return -1;
	tag.kind = kind;
	__builtin_memcpy(tag.addr, daddr, addr_len);
	if (!bpf_map_lookup_elem(&xvi_local_addrs, &tag))
		return -1;
	return *idx - 1;
}

/*
 * A hooked datagram's UDP checksum, checked as a delivered one's is
 * (xvi_udp_deliver): 0 if it holds (or, over IPv4, none was sent).
 */
static __always_inline int xvi_port_hook_csum(struct xdp_md *ctx, void *addrs, __u32 addrs_len,
					      void *ph, __u32 ph_len, __u16 check, __u32 l4_off,
					      __u32 udp_len, bool ipv6, bool local_link)
{
	__u32 seed;

	if (!check)
		return ipv6 ? -1 : 0;
	seed = xvi_udp_seed(addrs, addrs_len, ph, ph_len);
	return xvi_udp_csum(ctx, l4_off, udp_len, seed, check, local_link) > 0 ? 0 : -1;
}

/*
 * Hand the frame to port hook @idx by a tail call, which does not return:
 * the hook's verdict is the frame's, and the hook counts it.  An empty
 * slot (the program went away) falls through: the kernel's, counted.
 */
static __always_inline int xvi_port_hook_run(struct xdp_md *ctx, struct xvi_global_counters *g,
					     int idx)
{
	__u32 key = idx;
	struct xvi_port_hook_counters *hc = bpf_map_lookup_elem(&xvi_port_hook_stats, &key);

	g->port_hooked++;
	if (hc)
		hc->hooked++;
	bpf_tail_call(ctx, &xvi_port_progs, idx);
	g->port_hooked--;
	g->port_hook_missing++;
	if (hc) {
		hc->hooked--;
		hc->missing++;
	}
	return XDP_PASS;
}

/*
 * An IPv4 datagram no endpoint holds, to a hooked port: checked as one
 * for an endpoint would be, then the hook's.  A datagram that fails a
 * check goes to the kernel, which owns the port and counts its own
 * errors.  -1 if the port has no hook.
 */
static __always_inline int xvi_port_hook4(struct xdp_md *ctx, struct xvi_global_counters *g,
					  struct iphdr *iph, __u32 hlen, struct udphdr *uh,
					  __u32 l3_off, __u32 l4_off, bool local_link)
{
	struct xvi_ph4_tail ph = { .proto = IPPROTO_UDP };
	__u32 tot_len = bpf_ntohs(iph->tot_len), udp_len = bpf_ntohs(uh->len);
	int idx;

	idx = xvi_port_hook(XVI_TAG_UDP4, &iph->daddr, sizeof(iph->daddr), uh->dest);
	if (idx < 0)
		return -1;
	if (!xvi_udp4_lens_ok(l3_off, hlen, tot_len, udp_len, bpf_xdp_get_buff_len(ctx)) ||
	    xvi_ip4_hdr_csum(ctx, iph, l3_off, hlen))
		return XDP_PASS;
	ph.len = uh->len;
	if (xvi_port_hook_csum(ctx, &iph->saddr, 2 * sizeof(iph->saddr), &ph, sizeof(ph),
			       uh->check, l4_off, udp_len, false, local_link))
		return XDP_PASS;
	return xvi_port_hook_run(ctx, g, idx);
}

static __always_inline int xvi_port_hook6(struct xdp_md *ctx, struct xvi_global_counters *g,
					  struct ipv6hdr *ip6h, struct udphdr *uh, __u32 l4_off,
					  bool local_link)
{
	struct xvi_ph6_tail ph = { .nexthdr = IPPROTO_UDP };
	__u32 plen = bpf_ntohs(ip6h->payload_len), udp_len = bpf_ntohs(uh->len);
	int idx;

	idx = xvi_port_hook(XVI_TAG_UDP6, &ip6h->daddr, sizeof(ip6h->daddr), uh->dest);
	if (idx < 0)
		return -1;
	if (!xvi_udp6_lens_ok(l4_off, plen, udp_len, bpf_xdp_get_buff_len(ctx)))
		return XDP_PASS;
	ph.len = bpf_htonl(udp_len);
	if (xvi_port_hook_csum(ctx, &ip6h->saddr, 2 * sizeof(ip6h->saddr), &ph, sizeof(ph),
			       uh->check, l4_off, udp_len, true, local_link))
		return XDP_PASS;
	return xvi_port_hook_run(ctx, g, idx);
}

/*
 * @route: routing is on (XVI_CFG_ROUTE) and the frame untagged; what no
 * endpoint takes is then offered to the router rather than passed.
 * @hook: some port has a hook (XVI_CFG_PORT_HOOK) and the frame is
 * untagged; a datagram no endpoint holds then looks its port up first.
 */
static __always_inline int xvi_rx_ip4(struct xdp_md *ctx, struct xvi_cursor *c,
				      struct xvi_global_counters *g, __u16 flags,
				      bool local_link, bool route, bool hook)
{
	struct xvi_rx_meta m = { .magic = XVI_RX_META_MAGIC };
	struct xvi_ph4_tail ph = { .proto = IPPROTO_UDP };
	__u32 l3_off = c->off, l4_off = 0, hlen, slot, frame_len, vflags;
	__u32 tot_len, udp_len;
	struct xvi_ep_counters *ep;
	struct udphdr *uh = NULL;
	bool unowned = false;
	struct iphdr *iph;
	__be16 check;
	int ret;

	iph = xvi_parse_ip4(c, &hlen);
	if (!iph) {
		g->malformed++;
		return XDP_PASS;
	}
	if (xvi_ip4_is_fragment(iph)) {
		g->fragments++;
		goto no_ep;
	}
	if (iph->protocol != IPPROTO_UDP)
		goto no_ep;
	l4_off = c->off;
	ep = xvi_udp_match(c, g, flags, XVI_TAG_UDP4, &iph->daddr, sizeof(iph->daddr),
			   ctx->rx_queue_index, &uh, &slot, &vflags, &unowned);
	if (!ep)
		goto no_ep;

	/* Lengths come from the headers, never from the frame, which may
	 * carry Ethernet padding (or frags: hence the buffer length). */
	frame_len = bpf_xdp_get_buff_len(ctx);
	tot_len = bpf_ntohs(iph->tot_len);
	udp_len = bpf_ntohs(uh->len);
	check = uh->check;
	if (!xvi_udp4_lens_ok(l3_off, hlen, tot_len, udp_len, frame_len))
		return xvi_malformed(g, ep);

	ret = xvi_ip4_hdr_csum(ctx, iph, l3_off, hlen);
	if (ret < 0)
		return xvi_malformed(g, ep);
	if (ret) {
		ep->drop_bad_ip_csum++;
		return XDP_DROP;
	}

	ph.len = uh->len;
	xvi_meta_init(&m, flags, l3_off, l4_off, slot);
	return xvi_udp_deliver(ctx, g, ep, &m, &iph->saddr, 2 * sizeof(iph->saddr), &ph,
			       sizeof(ph), check, udp_len, frame_len, vflags, local_link);
no_ep:
	if (hook && unowned && uh) {
		ret = xvi_port_hook4(ctx, g, iph, hlen, uh, l3_off, l4_off, local_link);
		if (ret >= 0)
			return ret;
	}
	return route ? xvi_route4(ctx, g, iph, hlen, local_link) : XDP_PASS;
}

static __always_inline int xvi_rx_ip6(struct xdp_md *ctx, struct xvi_cursor *c,
				      struct xvi_global_counters *g, __u16 flags,
				      bool local_link, bool route, bool hook)
{
	struct xvi_rx_meta m = { .magic = XVI_RX_META_MAGIC };
	struct xvi_ph6_tail ph = { .nexthdr = IPPROTO_UDP };
	__u32 l3_off = c->off, l4_off = 0, slot, frame_len, vflags;
	__u32 plen, udp_len;
	struct xvi_ep_counters *ep;
	struct udphdr *uh = NULL;
	bool unowned = false;
	struct ipv6hdr *ip6h;
	__be16 check;
	int ret;

	ip6h = xvi_parse_ip6(c);
	if (!ip6h) {
		g->malformed++;
		return XDP_PASS;
	}
	if (ip6h->nexthdr == XVI_NEXTHDR_FRAGMENT) {
		g->fragments++;
		goto no_ep;
	}
	/* No extension-header walk: UDP must follow the fixed header. */
	if (ip6h->nexthdr != IPPROTO_UDP)
		goto no_ep;
	l4_off = c->off;
	ep = xvi_udp_match(c, g, flags, XVI_TAG_UDP6, &ip6h->daddr, sizeof(ip6h->daddr),
			   ctx->rx_queue_index, &uh, &slot, &vflags, &unowned);
	if (!ep)
		goto no_ep;

	frame_len = bpf_xdp_get_buff_len(ctx);
	plen = bpf_ntohs(ip6h->payload_len);
	udp_len = bpf_ntohs(uh->len);
	check = uh->check;
	if (!xvi_udp6_lens_ok(l4_off, plen, udp_len, frame_len))
		return xvi_malformed(g, ep);

	ph.len = bpf_htonl(udp_len);
	xvi_meta_init(&m, flags | XVI_RX_IPV6, l3_off, l4_off, slot);
	return xvi_udp_deliver(ctx, g, ep, &m, &ip6h->saddr, 2 * sizeof(ip6h->saddr), &ph,
			       sizeof(ph), check, udp_len, frame_len, vflags, local_link);
no_ep:
	if (hook && unowned && uh) {
		ret = xvi_port_hook6(ctx, g, ip6h, uh, l4_off, local_link);
		if (ret >= 0)
			return ret;
	}
	return route ? xvi_route6(ctx, g, ip6h, local_link) : XDP_PASS;
}

/* Raw xvi frames carry no checksum of their own: the Ethernet FCS covers them. */
static __always_inline int xvi_rx_raw(struct xdp_md *ctx, struct xvi_cursor *c,
				      struct xvi_global_counters *g, __u16 flags)
{
	struct xvi_rx_meta m = { .magic = XVI_RX_META_MAGIC };
	struct xvi_tag tag = {};
	__u32 l3_off = c->off, slot, frame_len, len, vflags;
	struct xvi_ep_counters *ep;
	struct xvi_raw_hdr *rh;
	bool unowned;

	rh = xvi_parse_raw(c);
	if (!rh) {
		g->malformed++;
		return XDP_PASS;
	}
	tag.kind = XVI_TAG_RAW;
	tag.raw_tag = rh->dst_tag;
	ep = xvi_match(&tag, g, flags, ctx->rx_queue_index, &slot, &vflags, &unowned);
	if (!ep)
		return XDP_PASS;

	frame_len = bpf_xdp_get_buff_len(ctx);
	len = bpf_ntohs(rh->len);
	if (l3_off + XVI_RAW_HDR_LEN + len > frame_len)
		return xvi_malformed(g, ep);

	xvi_meta_init(&m, flags | XVI_RX_RAW, l3_off, l3_off, slot);
	m.payload_off = l3_off + XVI_RAW_HDR_LEN;
	m.payload_len = len;
	return xvi_dispatch_deliver(ctx, ep, &m, frame_len, vflags);
}

/*
 * Only frames for this station are ours.  An interface in promiscuous mode
 * (tcpdump, a bridge port, a macvlan parent) hands XDP frames for other
 * hosts, and group-addressed UDP (broadcast, mDNS, SSDP) belongs to the
 * kernel's sockets, which may be many: both go to the kernel untouched.
 * Returns the interface configuration for a frame that is ours, else NULL.
 */
static __always_inline struct xvi_config *xvi_for_us(struct xdp_md *ctx,
						     struct xvi_global_counters *g)
{
	struct ethhdr *eth = (void *)(long)ctx->data;
	struct xvi_config *cfg;
	__u32 zero = 0;
	const __u8 *m;

	if ((void *)(eth + 1) > (void *)(long)ctx->data_end)
		return NULL;		/* xvi_parse_eth counted the runt */
	if (eth->h_dest[0] & 1) {	/* I/G bit: multicast or broadcast */
		g->group_dst++;
		return NULL;
	}
	cfg = bpf_map_lookup_elem(&xvi_config, &zero);
	if (!cfg || !(cfg->flags & XVI_CFG_MAC))
		return NULL;		/* not configured yet: deliver nothing */
	m = cfg->mac;
	if ((eth->h_dest[0] ^ m[0]) | (eth->h_dest[1] ^ m[1]) | (eth->h_dest[2] ^ m[2]) |
	    (eth->h_dest[3] ^ m[3]) | (eth->h_dest[4] ^ m[4]) | (eth->h_dest[5] ^ m[5])) {
		g->other_host++;
		return NULL;
	}
	return cfg;
}

static __always_inline int xvi_rx(struct xdp_md *ctx, struct xvi_global_counters *g)
{
	struct xvi_config *cfg;
	struct xvi_cursor c;
	__u16 flags = 0;
	bool vlan, local, route, hook;
	int proto;

	xvi_cursor_init(&c, ctx);
	proto = xvi_parse_eth(&c, &vlan);
	if (proto < 0) {
		g->malformed++;
		return XDP_PASS;
	}
	cfg = xvi_for_us(ctx, g);
	if (!cfg)
		return XDP_PASS;
	local = cfg->flags & XVI_CFG_LOCAL_LINK;
	/* A tagged frame is for a VLAN device, whose routes and forwarding
	 * setting the lookup on this one would not see: the kernel's. */
	route = (cfg->flags & XVI_CFG_ROUTE) && !vlan;
	/* Hooks are for this host's sockets on the untagged device, too. */
	hook = (cfg->flags & XVI_CFG_PORT_HOOK) && !vlan;
	if (vlan)
		flags |= XVI_RX_VLAN;

	switch (proto) {
	case bpf_htons(ETH_P_IP):
		return xvi_rx_ip4(ctx, &c, g, flags, local, route, hook);
	case bpf_htons(ETH_P_IPV6):
		return xvi_rx_ip6(ctx, &c, g, flags, local, route, hook);
	case bpf_htons(XVI_ETH_P_RAW):
		return xvi_rx_raw(ctx, &c, g, flags);
	default:
		/* ARP, a second VLAN tag, anything else: the kernel's. */
		return XDP_PASS;
	}
}

/*
 * "xdp.frags": jumbo frames arrive as multi-buffer XDP on native drivers and
 * in BPF_PROG_RUN; headers are always read from the linear part, payload
 * bytes beyond it through bpf_xdp_load_bytes().
 */
SEC("xdp.frags")
int xvi_demux(struct xdp_md *ctx)
{
	struct xvi_global_counters *g;
	__u32 zero = 0;
	int act;

	g = bpf_map_lookup_elem(&xvi_global_stats, &zero);
	if (!g)
		return XDP_PASS;	/* cannot happen: one-element array */
	g->rx_frames++;

	act = xvi_rx(ctx, g);
	if (act == XDP_REDIRECT)
		g->redirected++;
	else if (act == XDP_DROP)
		g->dropped++;
	else
		g->passed++;
	return act;
}

/*
 * The handlers' return paths, xvi_ext_ret[] (include/xvi_ext.h): a
 * handler's action ends with a tail call to one of them, which counts the
 * action for the handler, traces it, and carries it out.  A tail call does
 * not return, so this is the one place after the handler that sees how it
 * ended.  Entered without a dispatch in progress on this CPU, the frame is
 * dropped and counted (ext_stray); the handler, slot and offsets come from
 * xvi_ext_cur, written by xvi_demux before the tail call, never from the
 * frame or its metadata, which the handler could have changed.
 */
static __always_inline struct xvi_ext_cur *xvi_ext_ret_cur(struct xvi_global_counters **gp)
{
	struct xvi_global_counters *g;
	struct xvi_ext_cur *cur;
	__u32 zero = 0;

	*gp = g = bpf_map_lookup_elem(&xvi_global_stats, &zero);
	cur = bpf_map_lookup_elem(&xvi_ext_cur, &zero);
	if (!g || !cur)
		return NULL;
	if (!cur->armed) {
		g->ext_stray++;
		g->dropped++;
		return NULL;
	}
	cur->armed = 0;
	return cur;
}

/* Count @action for the dispatched handler; trace it if @trace and tracing. */
static __always_inline void xvi_ext_ret_count(struct xdp_md *ctx, const struct xvi_ext_cur *cur,
					      __u8 action, bool trace)
{
	struct xvi_ext_counters *hs;
	__u32 key = cur->key;

	hs = bpf_map_lookup_elem(&xvi_ext_stats, &key);
	if (hs)
		hs->act[action]++;
	if (trace && cur->trace)
		xvi_trace_event(ctx, cur->start_ns, key, action);
}

static __always_inline struct xvi_ext_cur *xvi_ext_ret_enter(struct xdp_md *ctx,
							     struct xvi_global_counters **gp,
							     __u8 action)
{
	struct xvi_ext_cur *cur = xvi_ext_ret_cur(gp);

	if (cur)
		xvi_ext_ret_count(ctx, cur, action, true);
	return cur;
}

/* The handler's own verdict: reply (XDP_TX), place, drop, pass. */
static __always_inline int xvi_ext_ret_verdict(struct xdp_md *ctx, __u8 action, int verdict)
{
	struct xvi_global_counters *g;

	return xvi_ext_ret_enter(ctx, &g, action) ? verdict : XDP_DROP;
}

/* One return path per verdict action. */
#define XVI_EXT_RET_PROG(name, action, verdict)				\
SEC("xdp.frags")							\
int name(struct xdp_md *ctx)						\
{									\
	return xvi_ext_ret_verdict(ctx, action, verdict);		\
}

XVI_EXT_RET_PROG(xvi_ext_ret_reply, XVI_EXT_ACT_REPLY, XDP_TX)
XVI_EXT_RET_PROG(xvi_ext_ret_place, XVI_EXT_ACT_PLACE, XDP_DROP)
XVI_EXT_RET_PROG(xvi_ext_ret_drop, XVI_EXT_ACT_DROP, XDP_DROP)
XVI_EXT_RET_PROG(xvi_ext_ret_pass, XVI_EXT_ACT_PASS, XDP_PASS)

/*
 * The message of dispatch @cur to its endpoint's socket, whatever the
 * handler did to the metadata: rewritten from @cur.
 */
static __always_inline int xvi_ext_to_endpoint(struct xdp_md *ctx, struct xvi_global_counters *g,
					       const struct xvi_ext_cur *cur)
{
	struct xvi_ep_counters *ep;
	struct xvi_rx_meta *meta;
	__u32 slot;
	void *data;
	int have, act;

	slot = cur->meta.slot;
	ep = bpf_map_lookup_elem(&xvi_ep_stats, &slot);
	if (!ep)
		return XDP_DROP;	/* cannot happen: the demux looked it up */
	ep->ext_delivered++;

	/* Exactly one struct xvi_rx_meta in front, whatever the handler did. */
	have = (int)(ctx->data - ctx->data_meta);
	if (have != XVI_META_LEN && bpf_xdp_adjust_meta(ctx, have - XVI_META_LEN)) {
		ep->drop_meta++;
		act = XDP_PASS;
		goto out;
	}
	meta = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if ((void *)(meta + 1) > data) {
		ep->drop_meta++;
		act = XDP_PASS;
		goto out;
	}
	*meta = cur->meta;
	act = xvi_redirect(ctx, ep, &cur->meta, cur->frame_len, cur->vflags);
out:
	if (act == XDP_REDIRECT)
		g->redirected++;
	else
		g->passed++;
	return act;
}

/* Delivery: the message being dispatched on this CPU to its endpoint. */
SEC("xdp.frags")
int xvi_ext_ret_deliver(struct xdp_md *ctx)
{
	struct xvi_global_counters *g;
	struct xvi_ext_cur *cur;

	cur = xvi_ext_ret_enter(ctx, &g, XVI_EXT_ACT_DELIVER);
	if (!cur || !g)
		return XDP_DROP;
	return xvi_ext_to_endpoint(ctx, g, cur);
}

/*
 * Forward (xvi_ext_forward): out of the interface the handler's request in
 * front of the metadata names, only if root allowed it for this interface
 * (xvi_ext_fwd_devs), with no metadata left on the frame: nothing of this
 * host's dispatch leaves with it (a redirected frame keeps its metadata
 * size, so a veth peer's XDP program could find it in front).  A
 * handler never redirects itself through an action, so a forward cannot
 * reach an interface outside the map.  Refused (no request, a target not
 * in the map): counted as an error and traced as one, then the message is
 * delivered to the endpoint, as a message no handler took would be, or
 * dropped if the handler changed the frame's size (the metadata's offsets
 * would lie).
 */
SEC("xdp.frags")
int xvi_ext_ret_forward(struct xdp_md *ctx)
{
	struct xvi_ext_fwd_req *req = (void *)(long)ctx->data_meta;
	struct xvi_global_counters *g;
	struct xvi_ext_cur *cur;
	__u32 ifindex = 0;
	int have;

	cur = xvi_ext_ret_cur(&g);
	if (!cur || !g)
		return XDP_DROP;
	if ((void *)(req + 1) <= (void *)(long)ctx->data && req->magic == XVI_EXT_FWD_MAGIC)
		ifindex = req->ifindex;
	have = (int)(ctx->data - ctx->data_meta);
	/* bpf_redirect_map() only records the target: the lookup is the check. */
	if (ifindex && bpf_redirect_map(&xvi_ext_fwd_devs, ifindex, 0) == XDP_REDIRECT &&
	    !bpf_xdp_adjust_meta(ctx, have)) {
		xvi_ext_ret_count(ctx, cur, XVI_EXT_ACT_FORWARD, true);
		return XDP_REDIRECT;
	}
	xvi_ext_ret_count(ctx, cur, XVI_EXT_ACT_ERROR, true);
	if (bpf_xdp_get_buff_len(ctx) != cur->frame_len) {
		xvi_ext_ret_count(ctx, cur, XVI_EXT_ACT_DROP, false);
		g->dropped++;
		return XDP_DROP;
	}
	xvi_ext_ret_count(ctx, cur, XVI_EXT_ACT_DELIVER, false);
	return xvi_ext_to_endpoint(ctx, g, cur);
}

_Static_assert(XVI_EXT_RET_NR == XVI_EXT_ACT_RET_NR, "return paths are the actions");

char LICENSE[] SEC("license") = "Dual BSD/GPL";
