// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Segments shared by several endpoints, without a kernel: completions,
 * which carry only an address, are counted for the endpoint that posted
 * the buffer whoever reaps them; an endpoint that leaves gives back what
 * it held and its sends in flight come back to the pool; the join rules.
 *
 * Two (or three) hand-built endpoints on one segment over plain memory
 * rings: each its own TX and RX ring, the fill and completion rings the
 * segment's, as the kernel has them (docs/KERNEL.md, facts 16-18).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <criterion/criterion.h>
#include "ep/endpoint.h"
#include "fake_ep.h"
#include "ep/segment.h"

#define FRAME		2048
#define NFRAMES		64
#define RX_POOL		16
#define RING		32
#define NEPS		3

struct fake_rings {
	__u32 tx_prod, tx_cons, tx_flags, rx_prod, rx_cons, rx_flags;
	struct xdp_desc tx_ring[RING];
	struct xdp_desc rx_ring[RING];
};

static struct {
	struct xvi_segment *seg;
	struct xvi_endpoint *ep[NEPS];
	struct fake_rings r[NEPS];
	__u32 comp_prod, comp_cons, comp_flags, fill_prod, fill_cons, fill_flags;
	__u64 comp_ring[RING];
	__u64 fill_ring[2 * RX_POOL];
} f;

static struct xvi_endpoint *member(int i)
{
	struct xvi_endpoint *ep = fake_member(f.seg, 1500, 0);

	memset(&f.r[i], 0, sizeof(f.r[i]));
	fake_ring_prod(&ep->tx, RING, &f.r[i].tx_prod, &f.r[i].tx_cons, &f.r[i].tx_flags,
		       f.r[i].tx_ring);
	fake_ring_cons(&ep->rx, RING, &f.r[i].rx_prod, &f.r[i].rx_cons, &f.r[i].rx_flags,
		       f.r[i].rx_ring);
	f.ep[i] = ep;
	return ep;
}

static void setup(void)
{
	memset(&f, 0, sizeof(f));
	f.seg = fake_seg(FRAME, NFRAMES, RX_POOL, 1);
	fake_ring_cons(&f.seg->comp, RING, &f.comp_prod, &f.comp_cons, &f.comp_flags, f.comp_ring);
	fake_ring_prod(&f.seg->fill, 2 * RX_POOL, &f.fill_prod, &f.fill_cons, &f.fill_flags,
		       f.fill_ring);
	/* The whole receive pool is with the kernel. */
	f.fill_prod = RX_POOL;
	f.seg->fill.cached_prod = RX_POOL;
	member(0);
	member(1);
}

static void teardown(void)
{
	int i;

	for (i = NEPS - 1; i >= 0; i--)
		if (f.ep[i])
			fake_ep_free(f.ep[i]);
}

/* All free send buffers: the segment's stack and every member's cache. */
static __u32 free_bufs(void)
{
	__u32 n = f.seg->free_n;
	int i;

	for (i = 0; i < NEPS; i++)
		if (f.ep[i])
			n += f.ep[i]->txc_n;
	return n;
}

/* Member @i sends @n raw datagrams; returns how many. */
static int send_n(int i, int n)
{
	union xvi_sockaddr dst;
	struct xvi_txbuf b[8];
	int k, j;

	memset(&dst, 0, sizeof(dst));
	dst.raw.family = AF_PACKET;
	dst.raw.tag = 0x43;
	cr_assert_leq(n, 8);
	k = xvi_endpoint__tx_alloc(f.ep[i], b, n);
	cr_assert_eq(k, n);
	for (j = 0; j < k; j++) {
		b[j].len = 60;
		b[j].dst = &dst;
	}
	return xvi_endpoint__tx_send(f.ep[i], b, k);
}

/* The kernel completes descriptor @d of member @i's TX ring. */
static void complete(int i, __u32 d)
{
	f.comp_ring[f.comp_prod++ & (RING - 1)] = f.r[i].tx_ring[d & (RING - 1)].addr;
}

Test(segment, members_get_their_own_ids_and_one_geometry, .init = setup, .fini = teardown)
{
	cr_expect_neq(f.ep[0]->member, f.ep[1]->member);
	cr_expect_eq(f.seg->nmembers, 2);
	cr_expect_eq(f.ep[0]->area, f.ep[1]->area);
	cr_expect_eq(f.ep[1]->tx_pool_off, (__u64)RX_POOL * FRAME);
	cr_expect_eq(f.ep[1]->tx_bufs, NFRAMES - RX_POOL);
	cr_expect_eq(f.ep[0]->rx_owner, f.seg->rx_owner);
}

Test(segment, completions_count_for_the_sender_whoever_reaps, .init = setup, .fini = teardown)
{
	__u32 total = free_bufs();

	cr_assert_eq(send_n(0, 3), 3);
	cr_assert_eq(send_n(1, 2), 2);
	cr_expect_eq(xvi_ep__in_flight(f.ep[0]), 3);
	cr_expect_eq(xvi_ep__in_flight(f.ep[1]), 2);
	cr_expect_eq(free_bufs(), total - 5);

	/* Interleaved, as the one completion ring of the queue has them. */
	complete(1, 0);
	complete(0, 0);
	complete(0, 1);
	complete(1, 1);
	/* Endpoint 1 reaps endpoint 0's completions too. */
	cr_expect_eq(xvi_tx__reap(f.ep[1]), 4);
	cr_expect_eq(xvi_ep__in_flight(f.ep[0]), 1, "endpoint 0: %u in flight",
		     xvi_ep__in_flight(f.ep[0]));
	cr_expect_eq(xvi_ep__in_flight(f.ep[1]), 0);
	complete(0, 2);
	cr_expect_eq(xvi_tx__reap(f.ep[0]), 1);
	cr_expect_eq(xvi_ep__in_flight(f.ep[0]), 0);
	cr_expect_eq(free_bufs(), total, "every buffer came back once");
}

Test(segment, a_completion_twice_frees_once, .init = setup, .fini = teardown)
{
	__u32 total = free_bufs();

	cr_assert_eq(send_n(0, 1), 1);
	complete(0, 0);
	complete(0, 0);
	cr_expect_eq(xvi_tx__reap(f.ep[1]), 2);
	cr_expect_eq(free_bufs(), total);
	cr_expect_eq(xvi_ep__in_flight(f.ep[0]), 0);
	cr_expect_eq(xvi_ep__in_flight(f.ep[1]), 0);
}

/* Frames the kernel delivered to member @i: one RX descriptor per frame. */
static void deliver(int i, const __u32 *frames, int n)
{
	int k;

	for (k = 0; k < n; k++) {
		struct xdp_desc *d = &f.r[i].rx_ring[f.r[i].rx_prod++ & (RING - 1)];

		d->addr = (__u64)frames[k] * FRAME + XVI_RX_HEADROOM;
		d->len = 60;
		d->options = 0;
	}
	f.fill_cons += n;	/* the kernel took them from the fill ring */
}

Test(segment, a_leaving_member_gives_everything_back, .init = setup, .fini = teardown)
{
	const __u32 frames[] = { 3, 7, 9 };
	__u32 total = free_bufs(), fill_before, i, orphans;
	struct xvi_txbuf held[2];
	__u8 id0 = f.ep[0]->member;

	/* Endpoint 0: 3 sends in flight, 2 buffers allocated and never sent. */
	cr_assert_eq(send_n(0, 3), 3);
	cr_assert_eq(xvi_endpoint__tx_alloc(f.ep[0], held, 2), 2);
	/*
	 * 3 frames received and not released: what recv_batch leaves behind
	 * for frames it hands out (these zero frames it would drop, so take
	 * the descriptors by hand).
	 */
	deliver(0, frames, 3);
	cr_assert_eq(xsk_ring_cons__peek(&f.ep[0]->rx, 3, &i), 3);
	for (i = 0; i < 3; i++)
		xvi_own__set(f.seg->rx_owner, frames[i], id0);
	xsk_ring_cons__release(&f.ep[0]->rx, 3);

	fill_before = f.fill_prod;
	orphans = xvi_seg__remove_member(f.seg, f.ep[0]);
	cr_expect_eq(orphans, 3, "sends in flight: %u", orphans);
	cr_expect_eq(f.fill_prod - fill_before, 3, "the held frames went back to the fill ring");
	for (i = 0; i < RX_POOL; i++)
		cr_expect_eq(f.seg->rx_owner[i], XVI_OWN_FREE, "frame %u still owned", i);
	cr_expect_eq(f.ep[0]->txc_n, 0);
	cr_expect_eq(free_bufs(), total - 3,
		     "only the sends in flight are out: %u free of %u", free_bufs(), total);
	cr_expect_eq(f.seg->nmembers, 1);

	/* Their completions come back to whoever reaps, counted for nobody. */
	complete(0, 0);
	complete(0, 1);
	complete(0, 2);
	cr_expect_eq(xvi_tx__reap(f.ep[1]), 3);
	cr_expect_eq(xvi_ep__in_flight(f.ep[1]), 0);
	cr_expect_eq(f.seg->free_n + f.ep[1]->txc_n, total, "the pool is whole again");

	/* A newcomer may get the old id: nothing of its predecessor is its. */
	fake_ep_free(f.ep[0]);
	f.ep[0] = NULL;
	member(2);
	cr_expect_eq(f.ep[2]->member, id0);
	cr_expect_eq(xvi_ep__in_flight(f.ep[2]), 0);
	cr_assert_eq(send_n(2, 1), 1);
	cr_expect_eq(xvi_ep__in_flight(f.ep[2]), 1);
	complete(2, 0);
	xvi_tx__reap(f.ep[2]);
	cr_expect_eq(xvi_ep__in_flight(f.ep[2]), 0);
}

Test(segment, released_frames_go_back_through_the_shared_fill_ring, .init = setup,
     .fini = teardown)
{
	const __u32 a[] = { 1, 2 }, b[] = { 5 };
	struct xvi_msg m[4];
	__u32 fill_before = f.fill_prod;
	int n;

	deliver(0, a, 2);
	deliver(1, b, 1);
	/* Raw endpoints drop these (no metadata, not raw frames): they go back at once. */
	n = xvi_endpoint__recv_batch(f.ep[0], m, 4);
	cr_expect_eq(n, 0);
	n = xvi_endpoint__recv_batch(f.ep[1], m, 4);
	cr_expect_eq(n, 0);
	xvi_rx__flush_stash(f.ep[0]);
	xvi_rx__flush_stash(f.ep[1]);
	cr_expect_eq(f.fill_prod - fill_before, 3);
	cr_expect_eq(f.fill_ring[fill_before & (2 * RX_POOL - 1)], (__u64)1 * FRAME);
	cr_expect_eq(f.fill_ring[(fill_before + 2) & (2 * RX_POOL - 1)], (__u64)5 * FRAME);
	cr_expect_eq(f.seg->rx_owner[5], XVI_OWN_FREE);
}

Test(segment, tx_cache_spills_back_to_the_segment, .init = setup, .fini = teardown)
{
	struct xvi_txbuf b[8];
	__u32 total = free_bufs();
	int i;

	/* A member's cache takes a slice of the pool, not the pool. */
	cr_assert_eq(xvi_endpoint__tx_alloc(f.ep[0], b, 1), 1);
	cr_expect_leq(f.ep[0]->txc_n, total / 8, "one member's cache holds %u of %u",
		      f.ep[0]->txc_n, total);
	/* Freeing many fills its cache; past twice the batch it spills back. */
	for (i = 0; i < 5; i++)
		cr_assert_eq(xvi_endpoint__tx_alloc(f.ep[0], b, 8), 8);
	xvi_endpoint__tx_free(f.ep[0], b, 8);
	cr_expect_leq(f.ep[0]->txc_n, 2 * f.ep[0]->txc_batch);
	cr_expect_eq(free_bufs(), total - 1 - 32);
}

/* ---- join rules --------------------------------------------------------- */

static const struct xvi_seg_layout have = {
	.frame_size = 2048,
	.multi_buffer = false,
	.zerocopy = false,
	.tx_umem_flags = 0,
	.tx_headroom = XVI_TX_HEADROOM,
};

struct join_case {
	const char *name;
	struct xvi_seg_want want;
	int expect;
};

static const struct join_case join_cases[] = {
	{ "same", { 2048, false, true, false, XVI_BIND_AUTO }, 0 },
	{ "raw (no checksum choice)", { 2048, false, false, true, XVI_BIND_AUTO }, 0 },
	{ "copy mode asked on copy", { 2048, false, true, false, XVI_BIND_COPY }, 0 },
	{ "frame size", { 4096, false, true, false, XVI_BIND_AUTO }, -EINVAL },
	{ "multi-buffer", { 2048, true, true, false, XVI_BIND_AUTO }, -EINVAL },
	{ "TX metadata", { 2048, false, true, true, XVI_BIND_AUTO }, -EINVAL },
	{ "zero-copy asked on copy", { 2048, false, true, false, XVI_BIND_ZEROCOPY }, -EINVAL },
};

Test(segment, join_rules)
{
	struct xvi_seg_layout zc = have, md = have;
	struct xvi_seg_want w = { 2048, false, true, false, XVI_BIND_COPY };
	size_t i;

	for (i = 0; i < sizeof(join_cases) / sizeof(join_cases[0]); i++)
		cr_expect_eq(xvi_seg__check_join(&have, &join_cases[i].want, "fake0", 0),
			     join_cases[i].expect, "%s", join_cases[i].name);
	zc.zerocopy = true;
	cr_expect_eq(xvi_seg__check_join(&zc, &w, "fake0", 0), -EINVAL, "copy asked on zero-copy");
	md.tx_umem_flags = 1 << 2;
	w.bind_mode = XVI_BIND_AUTO;
	cr_expect_eq(xvi_seg__check_join(&md, &w, "fake0", 0), -EINVAL, "software on metadata");
	w.has_csum_choice = false;
	cr_expect_eq(xvi_seg__check_join(&md, &w, "fake0", 0), 0, "raw on metadata");
}
