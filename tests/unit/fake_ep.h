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
#include <sys/socket.h>
#include <criterion/criterion.h>
#include <xdp/xsk.h>
#include "endpoint.h"

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
 * A raw endpoint (sending needs no route) named fake0 with a segment of
 * @nframes frames of @frame bytes, the first @rx_pool for receive; no
 * rings and no send pool yet.
 */
static inline struct xvi_endpoint *fake_raw_ep(__u32 frame, __u32 nframes, __u32 rx_pool,
					       __u32 mtu)
{
	struct xvi_endpoint *ep = calloc(1, sizeof(*ep));

	cr_assert_not_null(ep);
	ep->fd = -1;
	ep->broker_fd = -1;
	ep->kind = XVI_EP_RAW;
	ep->family = AF_PACKET;
	ep->tag = 0x42;
	ep->frame_size = frame;
	ep->frame_mask = ~(__u64)(frame - 1);
	ep->num_frames = nframes;
	ep->rx_pool = rx_pool;
	ep->tx_pool = nframes - rx_pool;
	ep->area_size = (size_t)nframes * frame;
	ep->area = calloc(1, ep->area_size);
	ep->free_frames = calloc(ep->tx_pool, sizeof(__u64));
	ep->stash = calloc(rx_pool, sizeof(__u64));
	cr_assert(ep->area && ep->free_frames && ep->stash);
	ep->mtu = mtu;
	ep->max_payload = mtu - XVI_RAW_HDR_LEN;
	ep->tx_headroom = XVI_TX_HEADROOM;
	snprintf(ep->ifname, sizeof(ep->ifname), "fake0");
	return ep;
}

static inline void fake_ep_free(struct xvi_endpoint *ep)
{
	free(ep->area);
	free(ep->free_frames);
	free(ep->stash);
	free(ep);
}

#endif
