/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An endpoint and AF_XDP rings backed by plain memory, for unit tests that
 * drive rx.c and tx.c without a kernel: the test plays the kernel by moving
 * the ring indices.
 */
#ifndef XVI_TEST_FAKE_EP_H
#define XVI_TEST_FAKE_EP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/socket.h>
#include <criterion/criterion.h>
#include <xdp/xsk.h>
#include "ep/endpoint.h"
#include "ep/segment.h"

/* A producer ring (TX, fill) of @size entries, all free. */
static inline void fake_ring_prod(struct xsk_ring_prod *r, __u32 size, __u32 *prod,
				  __u32 *cons, __u32 *flags, void *ring)
{
	r->mask = size - 1;
	r->size = size;
	/* libxdp keeps cached_cons one ring ahead of the consumer */
	r->cached_cons = size;
	r->producer = prod;
	r->consumer = cons;
	r->flags = flags;
	r->ring = ring;
}

/* A consumer ring (RX, completion) of @size entries, empty. */
static inline void fake_ring_cons(struct xsk_ring_cons *r, __u32 size, __u32 *prod,
				  __u32 *cons, __u32 *flags, void *ring)
{
	r->mask = size - 1;
	r->size = size;
	r->producer = prod;
	r->consumer = cons;
	r->flags = flags;
	r->ring = ring;
}

/*
 * A segment of @nframes frames of @frame bytes over plain memory, the first
 * @rx_pool for receive, send buffers of @group frames; no rings yet (the
 * test points seg->fill and seg->comp at its own).
 */
static inline struct xvi_segment *fake_seg(__u32 frame, __u32 nframes, __u32 rx_pool,
					   __u32 group)
{
	struct xvi_seg_layout l = {
		.frame_size = frame,
		.multi_buffer = group > 1,
		.tx_headroom = XVI_TX_HEADROOM,
	};
	void *area = calloc(nframes, frame);
	struct xvi_segment *seg;

	cr_assert_not_null(area);
	seg = xvi_seg__new(&l, area, nframes, rx_pool, group);
	cr_assert_not_null(seg, "xvi_seg__new: %s", strerror(errno));
	return seg;
}

/*
 * A raw endpoint (sending needs no route) named fake0, member of @seg, with
 * @mtu and a payload bound of @max_payload (0: what the MTU allows); no
 * rings yet.
 */
static inline struct xvi_endpoint *fake_member(struct xvi_segment *seg, __u32 mtu,
					       __u32 max_payload)
{
	struct xvi_endpoint *ep = calloc(1, sizeof(*ep));

	cr_assert_not_null(ep);
	ep->fd = -1;
	ep->broker_fd = -1;
	ep->kind = XVI_EP_RAW;
	ep->family = AF_PACKET;
	ep->tag = 0x42;
	ep->mtu = mtu;
	ep->max_payload = max_payload ? max_payload : mtu - XVI_RAW_HDR_LEN;
	snprintf(ep->ifname, sizeof(ep->ifname), "fake0");
	cr_assert_eq(xvi_seg__add_member(seg, ep), 0);
	return ep;
}

/* A raw endpoint on a segment of its own (see fake_seg, fake_member). */
static inline struct xvi_endpoint *fake_raw_ep(__u32 frame, __u32 nframes, __u32 rx_pool,
					       __u32 mtu, __u32 group)
{
	return fake_member(fake_seg(frame, nframes, rx_pool, group), mtu, 0);
}

/* Free buffers the endpoint can get: its cache and the segment's stack. */
static inline __u32 fake_free_bufs(const struct xvi_endpoint *ep)
{
	return ep->txc_n + ep->seg->free_n;
}

/* Free the endpoint; with the segment's last member, the segment too. */
static inline void fake_ep_free(struct xvi_endpoint *ep)
{
	struct xvi_segment *seg = ep->seg;

	/* xvi_seg__remove_member may have taken it out already. */
	if (seg->members & (1ULL << ep->member)) {
		seg->members &= ~(1ULL << ep->member);
		seg->nmembers--;
	}
	if (!seg->nmembers) {
		free(seg->area);
		xvi_seg__free(seg, false);
	}
	free(ep->stash);
	free(ep->txc);
	free(ep);
}

#endif
