// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A peer may acknowledge any byte, also one inside a segment.  After such a
 * partial ACK the send queue no longer holds the acknowledged bytes (and
 * by-reference memory may be handed back), so a retransmission must start
 * at the ACK, not at the old segment start.  Once the engine read before
 * the queue here: with a by-reference send that was a read ~4 GiB past the
 * application's buffer.
 */
#include <string.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include "stream/engine.h"

#define MAX_SEGS 256

struct pa_link {
	__u64 now;
	__u8 tx[2048];
	__u32 n;			/* segments the engine sent */
	__u8 seg[MAX_SEGS][1600];
	__u32 seg_len[MAX_SEGS];
};

static void *pa_get(void *priv, __u32 *cap)
{
	*cap = sizeof(((struct pa_link *)priv)->tx);
	return ((struct pa_link *)priv)->tx;
}

static void pa_put(void *priv, void *buf, __u32 len, const union xvi_sockaddr *peer)
{
	struct pa_link *f = priv;

	if (f->n < MAX_SEGS && len <= sizeof(f->seg[0])) {
		memcpy(f->seg[f->n], buf, len);
		f->seg_len[f->n++] = len;
	}
}

static void pa_flush(void *priv) {}
static __u64 pa_now(void *priv) { return ((struct pa_link *)priv)->now; }
static void pa_arm(void *priv, __u64 at) {}

static void peer_send(struct xvi_stream_ctx *ctx, const union xvi_sockaddr *peer,
		      struct xvi_shdr *h)
{
	__u8 buf[XVI_SW_MAX_HDR];
	__u32 hl = xvi_shdr__encode(h, buf);

	xvi_sctx__input(ctx, peer, buf, hl, true);
}

static __u8 region[8000];

Test(stream_partial_ack, retransmission_starts_at_the_ack_by_reference)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .window = 16, .ack_threshold = 4);
	static struct pa_link f = { .now = 1000000 };
	struct xvi_slink link = {
		.tx_get = pa_get, .tx_put = pa_put, .tx_flush = pa_flush, .now_us = pa_now,
		.timer_arm = pa_arm, .priv = &f, .mtu = 1472, .checksummed = true,
		.seed = 1, .iss = 0x7ffff000,
	};
	union xvi_sockaddr peer = { 0 };
	struct xvi_stream_ctx *ctx;
	struct xvi_stream *l, *c;
	struct xvi_shdr h = { 0 }, d;
	__u32 peer_seq = 0x1000, lcid, iss, ack, first = 0;
	int reg, hl, checked = 0;

	for (size_t i = 0; i < sizeof(region); i++)
		region[i] = (__u8)(i * 7 + 3);
	ctx = xvi_sctx__new(&link, &o);
	cr_assert_not_null(ctx);
	peer.in.sin_family = AF_INET;
	peer.in.sin_addr.s_addr = htonl(0xc6120001);
	peer.in.sin_port = htons(4000);
	l = xvi_ss__socket(ctx, XVI_STREAM_NONBLOCK);
	l->id.service = 9;
	cr_assert_eq(xvi_ss__listen(l, 4), 0);

	h.flags = XVI_SF_SYN;
	h.scid = 0x1234;
	h.seq = peer_seq;
	h.mss = 1000;
	h.wnd = 64000;
	h.svc = 9;
	h.tsval = 1;
	peer_send(ctx, &peer, &h);
	cr_assert_geq(f.n, 1, "no SYN|ACK");
	hl = xvi_shdr__decode(&d, f.seg[f.n - 1], f.seg_len[f.n - 1], true);
	cr_assert_gt(hl, 0);
	lcid = d.scid;
	iss = d.seq;

	memset(&h, 0, sizeof(h));
	h.flags = XVI_SF_ACK;
	h.dcid = lcid;
	h.scid = 0x1234;
	h.seq = peer_seq + 1;
	h.ack = iss + 1;
	h.wnd = 64000;
	h.tsval = 2;
	peer_send(ctx, &peer, &h);
	c = xvi_ss__accept(l, NULL);
	cr_assert_not_null(c, "handshake failed");

	reg = xvi_stream_ctx__register_mem(ctx, region, sizeof(region));
	cr_assert_geq(reg, 0);
	cr_assert_eq(xvi_ss__send_ref(c, reg, 0, sizeof(region), 77), (ssize_t)sizeof(region));
	xvi_sctx__run(ctx);

	/* The peer acknowledges 500 bytes into the first data segment. */
	ack = iss + 1 + 500;
	memset(&h, 0, sizeof(h));
	h.flags = XVI_SF_ACK;
	h.dcid = lcid;
	h.scid = 0x1234;
	h.seq = peer_seq + 1;
	h.ack = ack;
	h.wnd = 64000;
	h.tsval = 3;
	peer_send(ctx, &peer, &h);

	/* Nothing more arrives: timers resend (tail probe, then timeouts). */
	first = f.n;
	for (int i = 0; i < 40; i++) {
		f.now += 100000;
		xvi_sctx__run(ctx);
	}
	cr_assert_gt(f.n, first, "nothing was retransmitted");
	for (__u32 i = first; i < f.n; i++) {
		hl = xvi_shdr__decode(&d, f.seg[i], f.seg_len[i], true);
		if (hl <= 0 || !d.len)
			continue;
		cr_assert(!seq_lt(d.seq, ack),
			  "segment %u resends from %u, before the ACK %u", i, d.seq, ack);
		cr_assert_eq(memcmp(f.seg[i] + hl, region + (d.seq - iss - 1), d.len), 0,
			     "segment %u at %u carries the wrong bytes", i, d.seq);
		checked++;
	}
	cr_assert_gt(checked, 0, "no data segment was retransmitted");
	xvi_sctx__free(ctx);
}
