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
#include "ep/endpoint.h"
#include "fake_ep.h"

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

	memset(&f, 0, sizeof(f));
	ep = fake_raw_ep(FRAME, NFRAMES, RX_POOL, 1500, 1);
	fake_ring_prod(&ep->tx, RING, &f.tx_prod, &f.tx_cons, &f.tx_flags, f.tx_ring);
	fake_ring_cons(&ep->seg->comp, RING, &f.comp_prod, &f.comp_cons, &f.comp_flags,
		       f.comp_ring);
	f.ep = ep;
}

static void teardown(void)
{
	fake_ep_free(f.ep);
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
	__u32 n = fake_free_bufs(f.ep);

	/* Take one send frame, give it back: accepted. */
	cr_assert_eq(xvi_endpoint__tx_alloc(f.ep, &b, 1), 1);
	cr_assert_eq(fake_free_bufs(f.ep), n - 1);
	xvi_endpoint__tx_free(f.ep, &b, 1);
	cr_expect_eq(fake_free_bufs(f.ep), n);

	/* A receive frame handed to tx_free must not join the send pool. */
	cr_assert_eq(xvi_endpoint__tx_alloc(f.ep, &b, 1), 1);
	b.frame = 2 * FRAME;
	xvi_endpoint__tx_free(f.ep, &b, 1);
	cr_expect_eq(fake_free_bufs(f.ep), n - 1, "a receive frame entered the send pool");
}
