// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Send pool ownership: a frame posted for sending must come from the send
 * pool (frames [rx_pool, num_frames)).  A receive frame sent in place would
 * come back through the completion ring onto the free-frame stack while the
 * caller also releases it to the fill ring: two owners of one frame.
 *
 * The endpoint is a hand-built struct xvi_endpoint over plain memory rings
 * (no socket: fd -1, so the doorbell fails harmlessly and nothing else is
 * touched), which lets the send path's checks run without a datapath.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <criterion/criterion.h>
#include "endpoint.h"

#define FRAME		2048
#define NFRAMES		8
#define RX_POOL		4
#define RING		16

static struct {
	struct xvi_endpoint *ep;
	__u32 tx_prod, tx_cons, tx_flags, comp_prod, comp_cons, comp_flags;
	struct xdp_desc tx_ring[RING];
	__u64 comp_ring[RING];
} f;

static void setup(void)
{
	struct xvi_endpoint *ep;
	__u32 i;

	memset(&f, 0, sizeof(f));
	ep = calloc(1, sizeof(*ep));
	cr_assert_not_null(ep);
	ep->fd = -1;
	ep->broker_fd = -1;
	ep->kind = XVI_EP_RAW;
	ep->family = AF_PACKET;
	ep->tag = 0x42;
	ep->frame_size = FRAME;
	ep->frame_mask = ~(__u64)(FRAME - 1);
	ep->num_frames = NFRAMES;
	ep->rx_pool = RX_POOL;
	ep->tx_pool = NFRAMES - RX_POOL;
	ep->area_size = (size_t)NFRAMES * FRAME;
	ep->area = calloc(1, ep->area_size);
	ep->free_frames = calloc(ep->tx_pool, sizeof(__u64));
	cr_assert(ep->area && ep->free_frames);
	for (i = 0; i < ep->tx_pool; i++)
		ep->free_frames[i] = (__u64)(NFRAMES - 1 - i) * FRAME;
	ep->free_n = ep->tx_pool;
	ep->mtu = 1500;
	ep->max_payload = 1500 - XVI_RAW_HDR_LEN;
	ep->tx_headroom = XVI_TX_HEADROOM;
	snprintf(ep->ifname, sizeof(ep->ifname), "fake0");

	ep->tx.mask = RING - 1;
	ep->tx.size = RING;
	ep->tx.cached_cons = RING;
	ep->tx.producer = &f.tx_prod;
	ep->tx.consumer = &f.tx_cons;
	ep->tx.flags = &f.tx_flags;
	ep->tx.ring = f.tx_ring;
	ep->comp.mask = RING - 1;
	ep->comp.size = RING;
	ep->comp.producer = &f.comp_prod;
	ep->comp.consumer = &f.comp_cons;
	ep->comp.flags = &f.comp_flags;
	ep->comp.ring = f.comp_ring;
	f.ep = ep;
}

static void teardown(void)
{
	free(f.ep->area);
	free(f.ep->free_frames);
	free(f.ep);
}

/* Segment offset -> buffer: a raw frame (XVI_TX_FRAME) or a payload to frame. */
struct pool_case {
	const char *name;
	__s64 off;		/* segment offset of txbuf.data */
	bool whole_frame;	/* XVI_TX_FRAME */
	int want;		/* tx_send's result */
};

static const struct pool_case cases[] = {
	{ "rx frame 0, in place", 0 * FRAME + XVI_RX_HEADROOM, true, -EINVAL },
	{ "last rx frame, in place", 3 * FRAME + XVI_RX_HEADROOM, true, -EINVAL },
	{ "last rx frame, end", 3 * FRAME + FRAME - 64, true, -EINVAL },
	{ "first send frame", 4 * FRAME, true, 1 },
	{ "last send frame", 7 * FRAME + 128, true, 1 },
	{ "past the segment", 8 * FRAME, true, -EINVAL },
	{ "before the segment", -FRAME, true, -EINVAL },
	{ "rx frame payload", 1 * FRAME + XVI_TX_HEADROOM, false, -EINVAL },
	{ "send frame payload", 5 * FRAME + XVI_TX_HEADROOM, false, 1 },
};

Test(tx_pool, only_send_frames_are_posted, .init = setup, .fini = teardown)
{
	union xvi_sockaddr dst;
	size_t i;

	memset(&dst, 0, sizeof(dst));
	dst.raw.family = AF_PACKET;
	dst.raw.tag = 0x43;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct pool_case *c = &cases[i];
		struct xvi_txbuf b = {
			.data = (char *)f.ep->area + c->off,
			.len = 60,
			.flags = c->whole_frame ? XVI_TX_FRAME : 0,
			.dst = &dst,
		};
		__u32 prod = f.tx_prod;
		int r;

		r = xvi_endpoint__tx_send(f.ep, &b, 1);
		cr_expect_eq(r, c->want, "%s: tx_send returned %d, expected %d", c->name, r,
			     c->want);
		cr_expect_eq(f.tx_prod - prod, c->want == 1 ? 1u : 0u,
			     "%s: %u descriptors posted", c->name, f.tx_prod - prod);
		if (c->want == 1)
			cr_expect_geq(f.tx_ring[prod & (RING - 1)].addr, (__u64)RX_POOL * FRAME,
				      "%s: posted address %llu is in the receive pool", c->name,
				      (unsigned long long)f.tx_ring[prod & (RING - 1)].addr);
	}
}

Test(tx_pool, tx_free_refuses_receive_frames, .init = setup, .fini = teardown)
{
	struct xvi_txbuf b = {};
	__u32 n = f.ep->free_n;

	/* Take one send frame, give it back: accepted. */
	cr_assert_eq(xvi_endpoint__tx_alloc(f.ep, &b, 1), 1);
	cr_assert_eq(f.ep->free_n, n - 1);
	xvi_endpoint__tx_free(f.ep, &b, 1);
	cr_expect_eq(f.ep->free_n, n);

	/* A receive frame handed to tx_free must not join the send pool. */
	cr_assert_eq(xvi_endpoint__tx_alloc(f.ep, &b, 1), 1);
	b.frame = 2 * FRAME;
	xvi_endpoint__tx_free(f.ep, &b, 1);
	cr_expect_eq(f.ep->free_n, n - 1, "a receive frame entered the send pool");
}
