/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The body of struct xvi_endpoint, shared by endpoint.c (open/close),
 * rx.c and tx.c.  Internal to libxvi.
 *
 * Segment (UMEM) layout, num_frames frames of frame_size bytes:
 *
 *   frames [0, fill_size)           receive pool: they live in the fill ring,
 *                                   the RX ring, the caller's hands (struct
 *                                   xvi_msg) or the refill stash.  The fill
 *                                   ring is twice the pool (see bind_socket)
 *                                   so giving them all back always fits.
 *   frames [fill_size, num_frames)  send pool: a LIFO stack of free frames
 *                                   (the most recently completed frame is
 *                                   the warmest in cache), the TX ring, the
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
 */
#ifndef XVI_ENDPOINT_H
#define XVI_ENDPOINT_H

#include <stdbool.h>
#include <net/if.h>
#include <xdp/xsk.h>
#include "xvi.h"
#include "xvi_wire.h"
#include "neigh.h"
#include "dst_cache.h"
#include "frame.h"

#define XVI_TX_HEADROOM		64	/* >= 14 + 40 + 8, cache-line aligned payload */
/* With TX metadata: room for it (24 bytes) in front of the headers too */
#define XVI_TX_HEADROOM_MD	128
#define XVI_RX_HEADROOM		256	/* XDP_PACKET_HEADROOM, kernel ABI */
#define XVI_FILL_BATCH		64	/* refill the fill ring this many at a time */
#define XVI_RX_MAX_BATCH	256	/* descriptors taken per recv_batch peek */

struct xvi_ctl;
struct xvi_xsk_maps;

struct xvi_endpoint {
	/* ---- receive fast path ---- */
	struct xsk_ring_cons rx;
	struct xsk_ring_prod fill;
	void *area;			/* segment base */
	__u64 frame_mask;		/* ~(frame_size - 1): frame base of an address */
	__u32 slot;
	__u32 stash_n;			/* frames waiting to go back to the fill ring */
	int fd;
	bool need_wakeup;		/* bound with XDP_USE_NEED_WAKEUP */
	bool zerocopy;
	bool busy_poll;			/* SO_PREFER_BUSY_POLL set: drive NAPI by syscalls */
	enum xvi_ep_kind kind;
	int family;			/* AF_INET, AF_INET6 or AF_PACKET (raw) */
	__u64 sw_bad_csum;		/* dropped by the software fallback */
	__u64 sw_malformed;
	__u64 sw_parsed;		/* frames that arrived without metadata */

	/* ---- send fast path ---- */
	struct xsk_ring_prod tx;
	struct xsk_ring_cons comp;
	__u64 *free_frames;		/* stack of free send frames (addresses) */
	__u32 free_n;
	__u32 in_flight;		/* posted, not completed */
	__u32 max_payload;
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
	__u8 mac[6];			/* interface MAC: source of every frame */
	__u32 tx_headroom;		/* payload offset in a send frame */
	__u32 tx_md_len;		/* TX metadata bytes in front of a frame, or 0 */
	__u64 tx_frames;
	__u64 tx_kicks;
	__u64 tx_csum_md_n;		/* UDP frames sent with a checksum request */
	__u64 tx_csum_sw_n;		/* UDP frames checksummed in software */
	struct xvi_dst_cache dst;

	/* ---- cold ---- */
	enum xvi_wait_mode wait_mode;
	__u32 spin_us;
	int resolve_timeout_ms;
	__u32 frame_size;
	__u32 num_frames;
	__u32 rx_pool;			/* = fill_size */
	__u32 tx_pool;
	__u32 queue_id;
	__u32 mtu;
	int ifindex;
	__u32 bind_flags;
	__u32 tx_umem_flags;		/* XDP_UMEM_TX_* to register with, 0 = libxdp path */
	union xvi_sockaddr local;
	size_t area_size;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xvi_ctl *ctl;		/* direct endpoints only */
	/*
	 * Direct UDP endpoints: a kernel UDP socket bound to the same
	 * (address, port), holding the port in the kernel's port space
	 * (reserve.h), or -1.  Protected endpoints: xdp-vid holds it.
	 */
	int reserve_fd;
	int broker_fd;			/* protected: connection to xdp-vid, else -1 */
	struct xvi_xsk_maps *rings;	/* protected: rings mapped by hand, no libxdp */
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

/* rx.c / tx.c internals used by endpoint.c. */
void xvi_rx__flush_stash(struct xvi_endpoint *ep);
int xvi_tx__reap(struct xvi_endpoint *ep);
int xvi_ep__resolve(void *ctx, const struct xvi_ip *dst, __u8 mac[6],
		    struct xvi_ip *src);

static inline void *xvi_ep__ptr(const struct xvi_endpoint *ep, __u64 addr)
{
	return (char *)ep->area + addr;
}

#endif /* XVI_ENDPOINT_H */
