/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * AF_XDP socket set up by hand, and the TX metadata ABI.
 *
 * libxdp 1.3.1 can neither register a UMEM on a socket it did not create
 * (the protected path gets its socket from xdp-vid) nor pass the UMEM flags
 * and tx_metadata_len of kernel 6.11+ (the TX checksum request).  Both cases
 * use xvi_xsk__setup_fd(), which fills the libxdp ring structs exactly as
 * libxdp would, so the inline fast path of <xdp/xsk.h> works on them.
 *
 * The uapi headers on the build machines predate the TX metadata (kernel
 * 6.8, flag XDP_UMEM_TX_METADATA_LEN 6.11): the constants are defined here
 * with the kernel's values (include/uapi/linux/if_xdp.h) and everything is
 * probed at run time.
 */
#ifndef XVI_XSK_SETUP_H
#define XVI_XSK_SETUP_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <linux/types.h>
#include <linux/if_xdp.h>
#include <xdp/xsk.h>
#include "pkt/csum.h"

#ifndef SOL_XDP
#define SOL_XDP				283
#endif
#ifndef AF_XDP
#define AF_XDP				44
#endif

/* UMEM registration flags (struct xdp_umem_reg.flags) */
#ifndef XDP_UMEM_TX_SW_CSUM
/* 6.11: in copy mode the kernel computes the requested checksum itself */
#define XDP_UMEM_TX_SW_CSUM		(1 << 1)
#endif
#ifndef XDP_UMEM_TX_METADATA_LEN
#define XDP_UMEM_TX_METADATA_LEN	(1 << 2)	/* 6.11: tx_metadata_len is valid */
#endif
/* struct xsk_tx_metadata.flags */
#ifndef XDP_TXMD_FLAGS_CHECKSUM
#define XDP_TXMD_FLAGS_CHECKSUM		(1 << 1)
#endif
/* struct xdp_desc.options: the frame carries metadata in front of it */
#ifndef XDP_TX_METADATA
#define XDP_TX_METADATA			(1 << 1)
#endif

/*
 * struct xsk_tx_metadata of the kernel (6.14 layout, launch_time included),
 * under our own name so that a newer uapi header cannot clash with it.  It
 * sits in the tx_metadata_len bytes right in front of the frame the TX
 * descriptor points at.
 */
struct xvi_tx_md {
	__u64 flags;			/* XDP_TXMD_FLAGS_* */
	union {
		struct {
			__u16 csum_start;	/* from the descriptor address */
			__u16 csum_offset;	/* from csum_start to the field */
			__u64 launch_time;
		} request;
		struct {
			__u64 tx_timestamp;
		} completion;
	};
};

/* tx_metadata_len: a multiple of 8 below 256 (kernel rule) */
#define XVI_TX_MD_LEN		((__u32)sizeof(struct xvi_tx_md))

/*
 * Turn a UDP frame whose headers xvi_frame__put_hdrs() wrote into a
 * checksum request: the UDP checksum field gets the folded pseudo-header
 * sum (not complemented, as for a CHECKSUM_PARTIAL skb), and the metadata in
 * front of @frame asks for the ones-complement sum from the UDP header to
 * the end to be stored in that field.  @l4_off is the UDP header's offset in
 * the frame, @saddr/@daddr the addresses as in the IP header, @udp_len the
 * UDP length (header + payload).  The metadata may be unaligned (the payload
 * is the aligned part), hence memcpy.
 */
static inline void xvi_tx_md__udp_csum(void *frame, __u32 l4_off, int family,
				       const void *saddr, const void *daddr, __u32 udp_len)
{
	struct xvi_tx_md md = {
		.flags = XDP_TXMD_FLAGS_CHECKSUM,
		.request = { .csum_start = (__u16)l4_off, .csum_offset = 6 },
	};
	__u16 c = xvi_csum_fold(xvi_csum_pseudo(family, saddr, daddr, udp_len));

	memcpy((char *)frame + l4_off + 6, &c, 2);
	memcpy((char *)frame - XVI_TX_MD_LEN, &md, sizeof(md));
}

struct xvi_xsk_maps {
	void *map[4];		/* fill, completion, rx, tx */
	size_t len[4];
};

struct xvi_xsk_setup {
	void *area;
	__u64 size;
	__u32 frame_size;
	__u32 fill_size, comp_size, rx_size, tx_size;
	int ifindex;
	__u32 queue_id;
	__u16 bind_flags;	/* sxdp_flags; 0 means XDP_COPY | XDP_USE_NEED_WAKEUP */
	__u32 umem_flags;	/* XDP_UMEM_TX_METADATA_LEN, XDP_UMEM_TX_SW_CSUM */
	__u32 tx_md_len;	/* with XDP_UMEM_TX_METADATA_LEN */
	/*
	 * Join the UMEM of the bound AF_XDP socket @umem_fd on the same
	 * device and queue (XDP_SHARED_UMEM): no registration and no fill or
	 * completion ring of its own (the kernel refuses both: the UMEM's
	 * first socket owns them), and the bind takes no mode flag (the
	 * joiner gets the first socket's copy/zero-copy, need_wakeup and
	 * multi-buffer mode).  area, size, umem_flags and the fill and
	 * completion sizes are then ignored; bind_flags is added to
	 * XDP_SHARED_UMEM as given (0 for a real join).
	 */
	bool join;
	int umem_fd;
};

/*
 * Register the segment on the AF_XDP socket @fd, create and map the four
 * rings into the libxdp ring structs, and bind to @s->ifindex/queue_id.
 * With @s->join only the RX and TX rings are created and mapped, and
 * @fill and @comp are not touched (may be NULL).
 * On failure everything mapped is unmapped again (the fd stays open).
 */
int xvi_xsk__setup_fd(int fd, const struct xvi_xsk_setup *s, struct xsk_ring_prod *fill,
		      struct xsk_ring_cons *comp, struct xsk_ring_cons *rx,
		      struct xsk_ring_prod *tx, struct xvi_xsk_maps *maps);

/* Same on a new socket (needs CAP_NET_RAW): *fd is the socket on success. */
int xvi_xsk__create(const struct xvi_xsk_setup *s, struct xsk_ring_prod *fill,
		    struct xsk_ring_cons *comp, struct xsk_ring_cons *rx,
		    struct xsk_ring_prod *tx, struct xvi_xsk_maps *maps, int *fd);

void xvi_xsk__unmap(struct xvi_xsk_maps *maps);

/*
 * Does the kernel register a UMEM with XVI_TX_MD_LEN bytes of TX metadata
 * and @flags (0 or XDP_UMEM_TX_SW_CSUM) on top of XDP_UMEM_TX_METADATA_LEN?
 * Tried on a throwaway socket with a one-page segment.  Returns 1 (yes),
 * 0 (refused: kernel before 6.11) or a negative errno when it cannot tell
 * (no AF_XDP, no CAP_NET_RAW).
 */
int xvi_xsk__probe_tx_md(__u32 flags);

#endif /* XVI_XSK_SETUP_H */
