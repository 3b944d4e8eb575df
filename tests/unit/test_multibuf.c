// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Multi-buffer endpoints (XVI_EP_MULTI_BUFFER) without a kernel: how a send
 * buffer of several frames becomes a descriptor chain, how completions free
 * whole groups, which addresses the pool accepts back, and how a received
 * chain becomes pieces (XVI_MSG_MORE) whose lengths add up to the payload.
 *
 * As in test_tx_pool.c, the endpoint is a hand-built struct xvi_endpoint over
 * plain memory rings (fd -1: doorbells fail harmlessly).
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
#include "xsk/setup.h"

#define FRAME		2048
#define NFRAMES		64
#define RX_POOL		16
#define RING		16
#define GROUP		5		/* 64 + 8972 + headers over 2048-byte frames */
#define RX_ROOM		(FRAME - XVI_RX_HEADROOM)
#define SLOT		3

static struct {
	struct xvi_endpoint *ep;
	__u32 tx_prod, tx_cons, tx_flags, comp_prod, comp_cons, comp_flags;
	__u32 rx_prod, rx_cons, rx_flags, fill_prod, fill_cons, fill_flags;
	struct xdp_desc tx_ring[RING];
	__u64 comp_ring[RING];
	struct xdp_desc rx_ring[RING];
	__u64 fill_ring[2 * RX_POOL];
} f;

static void rings(struct xvi_endpoint *ep)
{
	fake_ring_prod(&ep->tx, RING, &f.tx_prod, &f.tx_cons, &f.tx_flags, f.tx_ring);
	fake_ring_cons(&ep->seg->comp, RING, &f.comp_prod, &f.comp_cons, &f.comp_flags,
		       f.comp_ring);
	fake_ring_cons(&ep->rx, RING, &f.rx_prod, &f.rx_cons, &f.rx_flags, f.rx_ring);
	fake_ring_prod(&ep->seg->fill, 2 * RX_POOL, &f.fill_prod, &f.fill_cons, &f.fill_flags,
		       f.fill_ring);
}

/* A raw multi-buffer endpoint (sending needs no route) with @group frames per buffer. */
static void setup_group(__u32 group)
{
	struct xvi_endpoint *ep;

	memset(&f, 0, sizeof(f));
	ep = fake_member(fake_seg(FRAME, NFRAMES, RX_POOL, group), 9000,
			 group == 1 ? 1500 - XVI_RAW_HDR_LEN : 0);
	ep->slot = SLOT;
	rings(ep);
	f.ep = ep;
}

static void setup(void)
{
	setup_group(GROUP);
}

static void teardown(void)
{
	fake_ep_free(f.ep);
}

static union xvi_sockaddr raw_dst(void)
{
	union xvi_sockaddr d;

	memset(&d, 0, sizeof(d));
	d.raw.family = AF_PACKET;
	d.raw.tag = 0x43;
	return d;
}

/* ---- chain building ----------------------------------------------------- */

Test(mb_chain, one_frame_is_one_descriptor)
{
	struct xdp_desc d[XVI_MB_MAX_DESC];

	cr_assert_eq(xvi_tx__chain(FRAME, 10 * FRAME + 22, 1000, 0, d, XVI_MB_MAX_DESC), 1);
	cr_expect_eq(d[0].addr, 10 * FRAME + 22);
	cr_expect_eq(d[0].len, 1000);
	cr_expect_eq(d[0].options, 0);
	/* Up to the last byte of the frame, still one. */
	cr_assert_eq(xvi_tx__chain(FRAME, 10 * FRAME, FRAME, 0, d, XVI_MB_MAX_DESC), 1);
	cr_expect_eq(d[0].len, FRAME);
	cr_expect_eq(d[0].options, 0);
}

Test(mb_chain, jumbo_spans_frames_with_contd)
{
	/* Ethernet + IPv4 + UDP (42) in front of 8972 bytes, payload at +64. */
	struct xdp_desc d[XVI_MB_MAX_DESC];
	__u64 base = 20 * FRAME;
	__u32 lens[] = { FRAME - 22, FRAME, FRAME, FRAME, 9014 - (FRAME - 22) - 3 * FRAME };
	__u32 i, sum = 0;

	cr_assert_eq(xvi_tx__chain(FRAME, base + 22, 9014, 0, d, XVI_MB_MAX_DESC), 5);
	for (i = 0; i < 5; i++) {
		cr_expect_eq(d[i].addr, i ? base + (__u64)i * FRAME : base + 22, "desc %u addr", i);
		cr_expect_eq(d[i].len, lens[i], "desc %u len %u", i, d[i].len);
		cr_expect_eq(d[i].options, i < 4 ? XDP_PKT_CONTD : 0, "desc %u options", i);
		sum += d[i].len;
	}
	cr_expect_eq(sum, 9014);
}

Test(mb_chain, metadata_option_on_first_only)
{
	struct xdp_desc d[XVI_MB_MAX_DESC];
	int n, i;

	n = xvi_tx__chain(FRAME, 2 * FRAME + 100, 3 * FRAME, XDP_TX_METADATA, d, XVI_MB_MAX_DESC);
	cr_assert_eq(n, 4);
	cr_expect_eq(d[0].options, XDP_TX_METADATA | XDP_PKT_CONTD);
	for (i = 1; i < n; i++)
		cr_expect_eq(d[i].options & XDP_TX_METADATA, 0, "desc %d carries metadata", i);
	cr_expect_eq(d[n - 1].options, 0);
	/* One frame: metadata, no CONTD. */
	cr_assert_eq(xvi_tx__chain(FRAME, FRAME + 128, 60, XDP_TX_METADATA, d, 4), 1);
	cr_expect_eq(d[0].options, XDP_TX_METADATA);
}

Test(mb_chain, too_many_descriptors)
{
	struct xdp_desc d[XVI_MB_MAX_DESC];

	cr_expect_eq(xvi_tx__chain(FRAME, 0, FRAME + 1, 0, d, 1), -EMSGSIZE);
	cr_expect_eq(xvi_tx__chain(FRAME, 0, XVI_MB_MAX_DESC * FRAME, 0, d, XVI_MB_MAX_DESC),
		     XVI_MB_MAX_DESC);
	cr_expect_eq(xvi_tx__chain(FRAME, 1, XVI_MB_MAX_DESC * FRAME, 0, d, XVI_MB_MAX_DESC),
		     -EMSGSIZE);
}

/* ---- the send pool in groups -------------------------------------------- */

Test(mb_pool, groups_are_contiguous_buffers, .init = setup, .fini = teardown)
{
	struct xvi_txbuf b[2];

	cr_expect_eq(f.ep->tx_bufs, (NFRAMES - RX_POOL) / GROUP);
	cr_assert_eq(xvi_endpoint__tx_alloc(f.ep, b, 2), 2);
	cr_expect_eq(b[0].frame, (__u64)RX_POOL * FRAME, "lowest group first");
	cr_expect_eq(b[1].frame, (__u64)(RX_POOL + GROUP) * FRAME);
	cr_expect_eq(b[0].cap, GROUP * FRAME - XVI_TX_HEADROOM);
	cr_expect_geq(b[0].cap, f.ep->max_payload);
	cr_expect_eq((char *)b[0].data - (char *)f.ep->area, (long)b[0].frame + XVI_TX_HEADROOM);
}

Test(mb_pool, single_frame_pool_unchanged)
{
	setup_group(1);
	cr_expect_eq(f.ep->tx_bufs, NFRAMES - RX_POOL);
	cr_expect_eq(f.ep->tx_buf_cap, FRAME - XVI_TX_HEADROOM);
	cr_expect_eq(f.ep->tx_pool_end, f.ep->area_size);
	teardown();
	setup_group(1);
	f.ep->seg->tx_pool = GROUP - 1;
	cr_expect_eq(xvi_seg__init_pool(f.ep->seg, GROUP), -EINVAL, "a pool smaller than a group");
	cr_expect_eq(xvi_seg__init_pool(f.ep->seg, 0), -EINVAL);
	teardown();
}

Test(mb_pool, tx_free_takes_only_group_bases, .init = setup, .fini = teardown)
{
	struct xvi_txbuf b = {};
	__u32 n = fake_free_bufs(f.ep);
	__u64 base;

	cr_assert_eq(xvi_endpoint__tx_alloc(f.ep, &b, 1), 1);
	base = b.frame;
	b.frame = base + FRAME;		/* the group's second frame */
	xvi_endpoint__tx_free(f.ep, &b, 1);
	cr_expect_eq(fake_free_bufs(f.ep), n - 1, "a frame inside a group became a buffer");
	b.frame = 3 * FRAME;		/* a receive frame */
	xvi_endpoint__tx_free(f.ep, &b, 1);
	cr_expect_eq(fake_free_bufs(f.ep), n - 1, "a receive frame became a buffer");
	b.frame = f.ep->tx_pool_end;	/* the leftover frames past the last group */
	xvi_endpoint__tx_free(f.ep, &b, 1);
	cr_expect_eq(fake_free_bufs(f.ep), n - 1, "a leftover frame became a buffer");
	b.frame = base;
	xvi_endpoint__tx_free(f.ep, &b, 1);
	cr_expect_eq(fake_free_bufs(f.ep), n);
	cr_expect_eq(f.ep->txc[f.ep->txc_n - 1], base);
	/* Freed twice: the second is refused, nothing is owned twice. */
	xvi_endpoint__tx_free(f.ep, &b, 1);
	cr_expect_eq(fake_free_bufs(f.ep), n, "a buffer was freed twice");
}

/* ---- sending chains ----------------------------------------------------- */

Test(mb_send, jumbo_buffer_is_one_chain, .init = setup, .fini = teardown)
{
	union xvi_sockaddr dst = raw_dst();
	struct xvi_txbuf b;
	__u32 hlen = XVI_ETH_HLEN + XVI_RAW_HDR_LEN, len = f.ep->max_payload, i, sum = 0;
	__u32 n;

	cr_assert_eq(xvi_endpoint__tx_alloc(f.ep, &b, 1), 1);
	memset(b.data, 0xab, len);
	b.len = len;
	b.dst = &dst;
	cr_assert_eq(xvi_endpoint__tx_send(f.ep, &b, 1), 1);
	n = f.tx_prod;
	cr_assert_eq(n, (XVI_TX_HEADROOM + len + FRAME - 1) / FRAME, "%u descriptors", n);
	cr_expect_eq(f.tx_ring[0].addr, b.frame + XVI_TX_HEADROOM - hlen);
	for (i = 0; i < n; i++) {
		if (i)
			cr_expect_eq(f.tx_ring[i].addr, b.frame + (__u64)i * FRAME);
		cr_expect_eq(f.tx_ring[i].options, i + 1 < n ? XDP_PKT_CONTD : 0, "desc %u", i);
		sum += f.tx_ring[i].len;
	}
	cr_expect_eq(sum, hlen + len);
	cr_expect_eq(xvi_ep__in_flight(f.ep), 1, "in flight counts datagrams");
	cr_expect_eq(f.ep->tx_frames, 1);

	/* Completion: every descriptor's address comes back; one group is freed. */
	for (i = 0; i < n; i++)
		f.comp_ring[i] = f.tx_ring[i].addr;
	f.comp_prod = n;
	__u32 free_before = fake_free_bufs(f.ep);

	cr_expect_eq(xvi_tx__reap(f.ep), (int)n);
	cr_expect_eq(fake_free_bufs(f.ep), free_before + 1);
	cr_expect_eq(f.ep->seg->free_bufs[f.ep->seg->free_n - 1], b.frame);
	cr_expect_eq(xvi_ep__in_flight(f.ep), 0);
}

Test(mb_send, small_datagram_stays_one_descriptor, .init = setup, .fini = teardown)
{
	union xvi_sockaddr dst = raw_dst();
	struct xvi_txbuf b;

	cr_assert_eq(xvi_endpoint__tx_alloc(f.ep, &b, 1), 1);
	b.len = 100;
	b.dst = &dst;
	cr_assert_eq(xvi_endpoint__tx_send(f.ep, &b, 1), 1);
	cr_expect_eq(f.tx_prod, 1);
	cr_expect_eq(f.tx_ring[0].options, 0);
	cr_expect_eq(f.tx_ring[0].len, XVI_ETH_HLEN + XVI_RAW_HDR_LEN + 100);
	/* sendto: same, copying */
	cr_assert_eq(xvi_endpoint__sendto(f.ep, "hello", 5, &dst), 5);
	cr_expect_eq(f.tx_prod, 2);
	cr_expect_eq(f.tx_ring[1].options, 0);
}

Test(mb_send, sendto_posts_a_chain, .init = setup, .fini = teardown)
{
	union xvi_sockaddr dst = raw_dst();
	static char buf[9000];
	__u32 len = 5000, hlen = XVI_ETH_HLEN + XVI_RAW_HDR_LEN, i, sum = 0;

	for (i = 0; i < len; i++)
		buf[i] = (char)(i * 7);
	cr_assert_eq(xvi_endpoint__sendto(f.ep, buf, len, &dst), (ssize_t)len);
	cr_assert_eq(f.tx_prod, 3, "%u descriptors", f.tx_prod);
	for (i = 0; i < 3; i++)
		sum += f.tx_ring[i].len;
	cr_expect_eq(sum, hlen + len);
	cr_expect_eq(f.tx_ring[0].options, XDP_PKT_CONTD);
	cr_expect_eq(f.tx_ring[2].options, 0);
	/* The payload is contiguous from the first descriptor's header on. */
	cr_expect_eq(memcmp((char *)f.ep->area + f.tx_ring[0].addr + hlen, buf, len), 0);
	cr_expect_eq(xvi_endpoint__sendto(f.ep, buf, f.ep->max_payload + 1, &dst), -EMSGSIZE);
}

Test(mb_send, chain_posted_whole_or_not_at_all, .init = setup, .fini = teardown)
{
	union xvi_sockaddr dst = raw_dst();
	struct xvi_txbuf b[4];
	__u32 len = 4 * FRAME;	/* 5 descriptors with the headroom */
	int i;

	cr_assert_eq(xvi_endpoint__tx_alloc(f.ep, b, 4), 4);
	for (i = 0; i < 4; i++) {
		b[i].len = len;
		b[i].dst = &dst;
	}
	/* 16 ring slots, nothing consumed: three chains of 5 fit, the fourth not. */
	cr_expect_eq(xvi_endpoint__tx_send(f.ep, b, 4), 3);
	cr_expect_eq(f.tx_prod, 15, "a partial chain was posted: %u descriptors", f.tx_prod);
	cr_expect_eq(f.tx_ring[14].options, 0, "the last posted descriptor ends a chain");
	cr_expect_eq(xvi_ep__in_flight(f.ep), 3);
	/* Only the 4th remains: nothing fits, nothing is posted. */
	cr_expect_eq(xvi_endpoint__tx_send(f.ep, &b[3], 1), -EAGAIN);
	cr_expect_eq(f.tx_prod, 15);
	cr_expect_eq(f.ep->tx.cached_prod, 15, "reserved slots leaked");
}

Test(mb_send, bounds_are_the_group, .init = setup, .fini = teardown)
{
	union xvi_sockaddr dst = raw_dst();
	struct xvi_txbuf b;

	cr_assert_eq(xvi_endpoint__tx_alloc(f.ep, &b, 1), 1);
	b.dst = &dst;
	/* Running past the group's end into the next group. */
	b.len = b.cap + 1;
	cr_expect_lt(xvi_endpoint__tx_send(f.ep, &b, 1), 0);
	/* A payload moved forward inside its first frame is fine. */
	b.data = (char *)b.data + 64;
	b.len = 100;
	cr_expect_eq(xvi_endpoint__tx_send(f.ep, &b, 1), 1);
	/*
	 * One whose headers would start in a later frame is not: only a
	 * completion in the group's first frame gives the group back.
	 */
	cr_assert_eq(xvi_endpoint__tx_alloc(f.ep, &b, 1), 1);
	b.dst = &dst;
	b.data = (char *)b.data + FRAME;
	b.len = 100;
	cr_expect_eq(xvi_endpoint__tx_send(f.ep, &b, 1), -EINVAL);
	xvi_endpoint__tx_free(f.ep, &b, 1);
	/* A receive frame is not. */
	b.data = (char *)f.ep->area + 2 * FRAME + XVI_TX_HEADROOM;
	cr_expect_eq(xvi_endpoint__tx_send(f.ep, &b, 1), -EINVAL);
	cr_expect_eq(f.tx_prod, 1);
}

Test(mb_send, stray_completions_free_nothing, .init = setup, .fini = teardown)
{
	__u32 n = fake_free_bufs(f.ep);

	f.ep->tx_posted++;		/* one datagram in flight, as far as it knows */
	f.comp_ring[0] = (__u64)(RX_POOL + 1) * FRAME;		/* continuation */
	f.comp_ring[1] = 2 * FRAME;				/* receive frame */
	f.comp_ring[2] = f.ep->tx_pool_end + 10;		/* past the groups */
	f.comp_ring[3] = (__u64)RX_POOL * FRAME;		/* a free group, never posted */
	f.comp_prod = 4;
	cr_expect_eq(xvi_tx__reap(f.ep), 4);
	cr_expect_eq(fake_free_bufs(f.ep), n);
	cr_expect_eq(xvi_ep__in_flight(f.ep), 1);
}

/* ---- receiving pieces --------------------------------------------------- */

#define PEER_PORT	5555
#define PAYLOAD_OFF	(XVI_ETH_HLEN + XVI_IP4_HLEN + XVI_UDP_HLEN)

static void setup_rx(void)
{
	setup_group(GROUP);
	f.ep->kind = XVI_EP_UDP;
	f.ep->family = AF_INET;
	/* The whole receive pool is with the kernel: the fill ring holds it. */
	f.fill_prod = RX_POOL;
	f.ep->seg->fill.cached_prod = RX_POOL;
}

static __u8 *rx_frame(__u32 frame)
{
	return (__u8 *)f.ep->area + (__u64)frame * FRAME + XVI_RX_HEADROOM;
}

/*
 * Put a UDP/IPv4 datagram of @plen payload bytes (byte i = i % 251) into
 * receive frames @frames the way the kernel splits it: RX_ROOM bytes per
 * descriptor, metadata in front of the first only.  @extra adds to the
 * frame length (Ethernet padding).  Returns the descriptors queued.
 */
static __u32 put_rx(const __u32 *frames, __u32 plen, __u32 extra, bool meta_ok)
{
	__u32 total = PAYLOAD_OFF + plen + extra, off = 0, n = 0, i;
	static __u8 whole[16 * FRAME];
	struct xvi_rx_meta m = {
		.magic = meta_ok ? XVI_RX_META_MAGIC : 0,
		.flags = XVI_RX_CSUM_VERIFIED,
		.l3_off = XVI_ETH_HLEN,
		.l4_off = XVI_ETH_HLEN + XVI_IP4_HLEN,
		.payload_off = PAYLOAD_OFF,
		.payload_len = (__u16)plen,
		.slot = SLOT,
	};
	__u16 port = htons(PEER_PORT);
	__u8 saddr[4] = { 198, 18, 0, 1 };

	memset(whole, 0, sizeof(whole));
	memcpy(whole + XVI_ETH_HLEN + 12, saddr, 4);
	memcpy(whole + m.l4_off, &port, 2);
	for (i = 0; i < plen; i++)
		whole[PAYLOAD_OFF + i] = (__u8)(i % 251);
	memcpy(rx_frame(frames[0]) - sizeof(m), &m, sizeof(m));
	while (off < total) {
		__u32 l = total - off < RX_ROOM ? total - off : RX_ROOM;
		struct xdp_desc *d = &f.rx_ring[(f.rx_prod + n) & (RING - 1)];

		memcpy(rx_frame(frames[n]), whole + off, l);
		d->addr = (__u64)frames[n] * FRAME + XVI_RX_HEADROOM;
		d->len = l;
		off += l;
		d->options = off < total ? XDP_PKT_CONTD : 0;
		n++;
	}
	f.rx_prod += n;
	return n;
}

static void check_pieces(const struct xvi_msg *m, int n, __u32 plen, __u32 *seen)
{
	int i;

	for (i = 0; i < n; i++) {
		__u32 j;

		cr_expect_eq(m[i].flags & (XVI_MSG_CSUM_VERIFIED | XVI_MSG_CSUM_NONE),
			     XVI_MSG_CSUM_VERIFIED, "piece %d flags 0x%x", i, m[i].flags);
		cr_expect_eq(m[i].peer.in.sin_family, AF_INET);
		cr_expect_eq(ntohs(m[i].peer.in.sin_port), PEER_PORT);
		for (j = 0; j < m[i].len; j++)
			if (((__u8 *)m[i].data)[j] != (__u8)((*seen + j) % 251)) {
				cr_expect_fail("piece %d byte %u wrong", i, j);
				break;
			}
		*seen += m[i].len;
	}
	(void)plen;
}

Test(mb_recv, pieces_add_up, .init = setup_rx, .fini = teardown)
{
	const __u32 frames[] = { 4, 9, 2 };	/* anywhere in the receive pool */
	struct xvi_msg m[8];
	__u32 seen = 0;
	int n;

	cr_assert_eq(put_rx(frames, 4000, 0, true), 3);
	n = xvi_endpoint__recv_batch(f.ep, m, 8);
	cr_assert_eq(n, 3);
	cr_expect_eq(m[0].len, RX_ROOM - PAYLOAD_OFF);
	cr_expect_eq(m[1].len, RX_ROOM);
	cr_expect_eq(m[0].len + m[1].len + m[2].len, 4000);
	cr_expect(m[0].flags & XVI_MSG_MORE);
	cr_expect(m[1].flags & XVI_MSG_MORE);
	cr_expect_not(m[2].flags & XVI_MSG_MORE);
	cr_expect_eq(m[1].frame, (__u64)9 * FRAME + XVI_RX_HEADROOM);
	check_pieces(m, n, 4000, &seen);
	cr_expect_eq(seen, 4000);
	xvi_endpoint__release(f.ep, m, n);
	cr_expect_eq(f.ep->stash_n, 3);
}

Test(mb_recv, datagram_continues_at_next_call, .init = setup_rx, .fini = teardown)
{
	const __u32 a[] = { 1, 2, 3, 4, 5, 6 }, b[] = { 7 };
	struct xvi_msg m[8];
	__u32 seen = 0;
	int n;

	cr_assert_eq(put_rx(a, 8972, 0, true), 6);
	cr_assert_eq(put_rx(b, 100, 0, true), 1);
	n = xvi_endpoint__recv_batch(f.ep, m, 4);
	cr_assert_eq(n, 4);
	cr_expect(m[3].flags & XVI_MSG_MORE, "the cut piece says more follows");
	check_pieces(m, n, 8972, &seen);
	n = xvi_endpoint__recv_batch(f.ep, m, 8);
	cr_assert_eq(n, 3, "two tail pieces and the next datagram");
	cr_expect(m[0].flags & XVI_MSG_MORE);
	cr_expect_not(m[1].flags & XVI_MSG_MORE);
	check_pieces(m, 2, 8972, &seen);
	cr_expect_eq(seen, 8972);
	cr_expect_eq(m[2].len, 100);
	cr_expect_not(m[2].flags & XVI_MSG_MORE);
	cr_expect_eq(m[2].data, rx_frame(7) + PAYLOAD_OFF);
}

Test(mb_recv, padding_is_trimmed, .init = setup_rx, .fini = teardown)
{
	const __u32 frames[] = { 3, 4, 5 };
	struct xvi_msg m[8];
	int n;

	/* 40 bytes past the payload: the last piece is cut back to the UDP length. */
	cr_assert_eq(put_rx(frames, 2 * RX_ROOM - PAYLOAD_OFF - 10, 40, true), 3);
	n = xvi_endpoint__recv_batch(f.ep, m, 8);
	cr_assert_eq(n, 2, "a piece of padding only was handed out");
	cr_expect_eq(m[1].len, RX_ROOM - 10);
	cr_expect_not(m[1].flags & XVI_MSG_MORE);
	cr_expect_eq(f.ep->stash_n, 1, "the padding frame went back");
	cr_expect_not(f.ep->rx_chain);
}

Test(mb_recv, head_without_metadata_drops_every_piece, .init = setup_rx, .fini = teardown)
{
	const __u32 a[] = { 1, 2, 3 }, b[] = { 8, 9, 10 };
	struct xvi_msg m[8];
	int n;

	cr_assert_eq(put_rx(a, 4000, 0, false), 3);
	cr_assert_eq(put_rx(b, 4000, 0, true), 3);
	n = xvi_endpoint__recv_batch(f.ep, m, 8);
	cr_expect_eq(n, 3, "only the verified datagram's pieces: got %d", n);
	cr_expect_eq(m[0].frame, (__u64)8 * FRAME + XVI_RX_HEADROOM);
	cr_expect_eq(f.ep->sw_malformed, 1, "counted once");
	cr_expect_eq(f.ep->stash_n, 3, "every frame of the dropped datagram goes back");
	cr_expect_eq(f.ep->stash[0], (__u64)1 * FRAME);
	cr_expect_eq(f.ep->stash[2], (__u64)3 * FRAME);
	/* The next call hands them to the kernel. */
	cr_expect_eq(xvi_endpoint__recv_batch(f.ep, m, 8), 0);
	cr_expect_eq(f.ep->stash_n, 0);
	cr_expect_eq(f.fill_prod, RX_POOL + 3);
}

Test(mb_recv, single_frame_path_unchanged, .init = setup_rx, .fini = teardown)
{
	const __u32 frames[] = { 6 };
	struct xvi_msg m[2];

	cr_assert_eq(put_rx(frames, 300, 0, true), 1);
	cr_assert_eq(xvi_endpoint__recv_batch(f.ep, m, 2), 1);
	cr_expect_eq(m[0].len, 300);
	cr_expect_eq(m[0].flags, XVI_MSG_CSUM_VERIFIED);
	cr_expect_not(f.ep->rx_chain);
}

Test(mb_recv, recvfrom_gathers, .init = setup_rx, .fini = teardown)
{
	const __u32 a[] = { 1, 2, 3 }, b[] = { 4, 5, 6 };
	static __u8 buf[9000];
	union xvi_sockaddr src;
	__u32 i;

	cr_assert_eq(put_rx(a, 4000, 0, true), 3);
	cr_assert_eq(put_rx(b, 3000, 0, true), 2);
	cr_assert_eq(xvi_endpoint__recvfrom(f.ep, buf, sizeof(buf), &src, 100), 4000);
	for (i = 0; i < 4000; i++)
		if (buf[i] != (__u8)(i % 251))
			cr_assert_fail("byte %u wrong", i);
	cr_expect_eq(ntohs(src.in.sin_port), PEER_PORT);
	/* Cut at len, like MSG_TRUNC: the full length comes back, nothing is left. */
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(xvi_endpoint__recvfrom(f.ep, buf, 100, NULL, 100), 3000);
	cr_expect_eq(buf[99], 99);
	cr_expect_eq(buf[100], 0);
	cr_expect_not(f.ep->rx_chain);
	cr_expect_eq(f.ep->rx.cached_cons, f.rx_prod);
}
