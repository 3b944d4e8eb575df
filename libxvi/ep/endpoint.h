/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The body of struct xvi_endpoint, shared by endpoint.c (open/close),
 * rx.c and tx.c.  Internal to libxvi.
 *
 * Segment (UMEM, struct xvi_segment in segment.h) layout, num_frames
 * frames of frame_size bytes:
 *
 *   frames [0, fill_size)           receive pool: they live in the fill ring,
 *                                   an RX ring, the caller's hands (struct
 *                                   xvi_msg) or an endpoint's refill stash.
 *                                   The fill ring is twice the pool (see
 *                                   seg_bind) so giving them all back always
 *                                   fits.
 *   frames [fill_size, num_frames)  send pool: LIFO stacks of free buffers
 *                                   (the segment's, and each endpoint's
 *                                   cache; the most recently completed frame
 *                                   is the warmest in cache), a TX ring, the
 *                                   kernel, the completion ring.
 *
 * Receive frame: the kernel writes the packet at XDP_PACKET_HEADROOM (256)
 * into the frame, and the datapath's struct xvi_rx_meta right in front of it
 * (bpf_xdp_adjust_meta; AF_XDP copies the metadata too).
 * Send frame: the payload starts at XVI_TX_HEADROOM so the headers (at most
 * Ethernet + IPv6 + UDP = 62 bytes) are written in place in front of it and
 * the descriptor points at the first header byte.  An endpoint that asks for
 * checksums through TX metadata puts its payload at XVI_TX_HEADROOM_MD: the
 * kernel wants the struct xsk_tx_metadata right in front of the frame, in the
 * same chunk, for every descriptor.
 *
 * Multi-buffer endpoints (XVI_EP_MULTI_BUFFER, bound with XDP_USE_SG): the
 * send pool is cut into groups of tx_group consecutive frames, each group
 * one send buffer (contiguous, headroom at the start of its first frame),
 * and the free stack holds group bases.  A datagram is posted as one
 * descriptor per frame it touches, all but the last with XDP_PKT_CONTD;
 * the completion ring returns every descriptor's address and only the one
 * in a group's first frame frees the group.  Received datagrams come as one
 * RX descriptor per frame (the kernel splits them by the receive room,
 * frame_size - XDP_PACKET_HEADROOM, and copies the metadata in front of the
 * first only); rx.c hands them out as pieces (XVI_MSG_MORE).
 */
#ifndef XVI_ENDPOINT_H
#define XVI_ENDPOINT_H

#include <stdbool.h>
#include <net/if.h>
#include <xdp/xsk.h>
#include "xvi.h"
#include "xvi_wire.h"
#include "nl/neigh.h"
#include "nl/dst_cache.h"
#include "pkt/frame.h"

#define XVI_TX_HEADROOM		64	/* >= 14 + 40 + 8, cache-line aligned payload */
/* With TX metadata: room for it (24 bytes) in front of the headers too */
#define XVI_TX_HEADROOM_MD	128
#define XVI_RX_HEADROOM		256	/* XDP_PACKET_HEADROOM, kernel ABI */
#define XVI_FILL_BATCH		64	/* refill the fill ring this many at a time */
#define XVI_RX_MAX_BATCH	256	/* descriptors taken per recv_batch peek */
/*
 * Descriptors per multi-buffer datagram.  Copy mode builds one skb per
 * datagram, the first descriptor in its linear part and each further one in
 * a page fragment, and drops the datagram when that would pass MAX_SKB_FRAGS
 * (17) fragments (xsk_build_skb, -EOVERFLOW), cancelling its completions so
 * its frames never come back.  16 stays below that everywhere.
 */
#define XVI_MB_MAX_DESC		16

/* The uapi headers on the build machines predate multi-buffer (6.6). */
#ifndef XDP_USE_SG
#define XDP_USE_SG		(1 << 4)	/* sxdp_flags */
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD		(1 << 0)	/* xdp_desc.options: more follows */
#endif

struct xvi_ctl;
struct xvi_xsk_maps;
struct xvi_segment;

struct xvi_endpoint {
	/* ---- receive fast path ---- */
	struct xsk_ring_cons rx;
	void *area;			/* segment base */
	__u64 frame_mask;		/* ~(frame_size - 1): frame base of an address */
	__u8 *rx_owner;			/* the segment's owner bytes (segment.h) */
	__u32 frame_shift;		/* log2(frame_size): frame index of an address */
	__u32 slot;
	__u32 stash_n;			/* frames waiting to go back to the fill ring */
	int fd;
	__u8 member;			/* id in the segment */
	bool need_wakeup;		/* bound with XDP_USE_NEED_WAKEUP */
	bool zerocopy;
	bool multi_buffer;		/* bound with XDP_USE_SG */
	bool busy_poll;			/* SO_PREFER_BUSY_POLL set: drive NAPI by syscalls */
	enum xvi_ep_kind kind;
	int family;			/* AF_INET, AF_INET6 or AF_PACKET (raw) */
	__u64 sw_bad_csum;		/* dropped by the software fallback */
	__u64 sw_malformed;
	__u64 sw_parsed;		/* frames that arrived without metadata */
	__u64 sw_foreign;		/* of those, not addressed to this endpoint */
	/*
	 * Multi-buffer receive: inside a descriptor chain (the last one had
	 * XDP_PKT_CONTD), the payload bytes still to hand out (0: the rest of
	 * the chain is dropped or padding), and what every piece repeats.
	 */
	bool rx_chain;
	__u32 rx_left;
	__u32 rx_mflags;
	union xvi_sockaddr rx_peer;

	/* ---- send fast path ---- */
	struct xsk_ring_prod tx;
	__u64 *txc;			/* free send buffers of this endpoint: a stack */
	__u32 txc_n;
	__u32 txc_batch;		/* taken from / given back to the segment at once */
	__u8 *tx_owner;			/* the segment's owner bytes (segment.h) */
	__u64 tx_posted;		/* datagrams posted; in flight: minus tx_done */
	__u32 max_payload;
	/*
	 * Send pool geometry, the segment's (copied here for the per-frame
	 * path): send buffers are groups of tx_group frames (1 unless
	 * multi-buffer) from tx_pool_off up to tx_pool_end, each tx_buf_cap
	 * bytes after the headroom.
	 */
	__u32 tx_group;
	__u32 tx_group_bytes;		/* tx_group * frame_size */
	__u32 tx_buf_cap;
	__u32 tx_bufs;			/* groups in the pool */
	__u64 tx_pool_off;		/* segment offset of the first send frame */
	__u64 tx_pool_end;		/* end of the last whole group */
	__u16 ip_id;
	__u16 local_port;		/* host order */
	__u32 tag;			/* raw tag, host order */
	struct xvi_ip local_ip;		/* bound address, all-zero = wildcard */
	bool wildcard;
	/*
	 * UDP checksums: requested from the device through AF_XDP TX
	 * metadata (decided once at open, see choose_tx_csum), else computed
	 * here in software.
	 */
	bool tx_csum_md;
	bool local_link;		/* veth or netkit (xvi_iface__local_link) */
	__u8 mac[6];			/* interface MAC: source of every frame */
	__u32 tx_headroom;		/* payload offset in a send frame */
	__u32 tx_md_len;		/* TX metadata bytes in front of a frame, or 0 */
	__u64 tx_frames;
	__u64 tx_kicks;
	/*
	 * Posts leave the doorbell until this many descriptors wait for the
	 * kernel (0: every post rings it).  Whoever sets it must flush before
	 * the process waits (libxvi-preload: --tx-batch).
	 */
	__u32 tx_defer;
	__u64 tx_csum_md_n;		/* UDP frames sent with a checksum request */
	__u64 tx_csum_sw_n;		/* UDP frames checksummed in software */
	struct xvi_dst_cache dst;

	/* ---- cold ---- */
	struct xvi_segment *seg;
	enum xvi_wait_mode wait_mode;
	__u32 spin_us;
	int resolve_timeout_ms;
	__u32 frame_size;
	__u32 num_frames;
	__u32 rx_pool;			/* = the first endpoint's fill_size */
	__u32 tx_pool;
	__u32 queue_id;
	__u32 mtu;
	int ifindex;
	__u32 bind_flags;
	__u32 tx_umem_flags;		/* XDP_UMEM_TX_* asked for, 0 = libxdp path */
	union xvi_sockaddr local;
	size_t area_size;
	struct xsk_socket *xsk;		/* libxdp path */
	struct xvi_ctl *ctl;		/* direct endpoints only */
	/*
	 * Direct UDP endpoints: a kernel UDP socket bound to the same
	 * (address, port), holding the port in the kernel's port space
	 * (reserve.h), or -1.  Protected endpoints: xdp-vid holds it.
	 */
	int reserve_fd;
	int broker_fd;			/* protected: connection to xdp-vid, else -1 */
	int revoked;			/* protected: why xdp-vid revoked it, or 0 */
	struct xvi_xsk_maps *rings;	/* hand-made socket: its RX and TX ring maps */
	char ifname[IF_NAMESIZE];
	__u64 *stash;			/* rx_pool entries: can hold every frame */
};

/* Parsed and defaulted open options. */
struct xvi_ep_cfg {
	enum xvi_ep_kind kind;
	int family;
	struct xvi_ip ip;
	__u16 port;			/* host order */
	__u32 raw_tag;
	__u32 queue_id;
	__u32 frame_size;
	__u32 num_frames;
	__u32 rx_size, tx_size, fill_size, comp_size;
	enum xvi_bind_mode bind_mode;
	enum xvi_wait_mode wait_mode;
	__u32 spin_us;
	__u32 resolve_timeout_ms;
	const char *bpffs;
	__u32 flags;			/* enum xvi_endpoint_flags */
	__u32 busy_poll_budget;
	enum xvi_open_path open_path;
};

/* Validate @opts and fill @cfg with defaults applied; logs why on -EINVAL. */
int xvi_ep_cfg__parse(const char *ifname, const struct xvi_endpoint_opts *opts,
		      struct xvi_ep_cfg *cfg);

/*
 * xvi_endpoint__tx_send() for a caller that already has each payload's
 * partial checksum (csum.h) from writing it: @sums[i] for bufs[i], or
 * XVI_TX_NO_SUM to have it computed; @sums NULL computes them all.  The
 * stream link copies and sums in one pass.
 */
#define XVI_TX_NO_SUM	(~0ULL)
int xvi_tx__send(struct xvi_endpoint *ep, struct xvi_txbuf *bufs, const __u64 *sums, int n);

/*
 * rx.c / tx.c internals used by segment.c (and the unit tests): frames the
 * endpoint gave back go to the shared fill ring; completions go to the
 * shared free stack, counted for the endpoint that posted them.  Each takes
 * the segment lock once.  reap returns the completions it took.
 */
void xvi_rx__flush_stash(struct xvi_endpoint *ep);
int xvi_tx__reap(struct xvi_endpoint *ep);
/*
 * Kick the TX ring until the kernel took every descriptor (bounded: 0, the
 * descriptors left, or a negative errno).
 */
int xvi_tx__drain(struct xvi_endpoint *ep);
/* Give every frame on the RX ring back (an endpoint leaving its segment). */
void xvi_rx__drain(struct xvi_endpoint *ep);

/* Sends posted and not completed yet (datagrams). */
__u32 xvi_ep__in_flight(const struct xvi_endpoint *ep);

/*
 * One RX descriptor of a multi-buffer chain (or the descriptor after one):
 * fills @m with its piece of the datagram and returns 1, or gives the frame
 * back and returns 0 (head without usable metadata, or bytes past the
 * payload).  recv_batch routes a descriptor here when it has XDP_PKT_CONTD
 * or ep->rx_chain is set.
 */
int xvi_rx__piece(struct xvi_endpoint *ep, __u64 addr, __u32 len, __u32 options,
		  struct xvi_msg *m);

/*
 * Split the @len bytes at segment offset @addr (contiguous across frames)
 * into one descriptor per frame they touch: the first from @addr to the end
 * of its frame, then whole frames, the last partial.  Every descriptor but
 * the last gets XDP_PKT_CONTD; @first_opts (XDP_TX_METADATA) goes on the
 * first only.  Returns the number written to @d, or -EMSGSIZE above @max.
 */
int xvi_tx__chain(__u32 frame_size, __u64 addr, __u32 len, __u32 first_opts,
		  struct xdp_desc *d, __u32 max);
int xvi_ep__resolve(void *ctx, const struct xvi_ip *dst, __u8 mac[6],
		    struct xvi_ip *src);

static inline void *xvi_ep__ptr(const struct xvi_endpoint *ep, __u64 addr)
{
	return (char *)ep->area + addr;
}

#endif /* XVI_ENDPOINT_H */
