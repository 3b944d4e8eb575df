// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target: the stream receive path.  An engine with a listener and
 * one established connection (handshake done over a fake link) gets the
 * fuzzer's datagrams.  Each record of the input is either raw bytes (the
 * codec's rejection paths) or a header built from fuzzer-chosen fields and
 * aimed at the live connection: sequence and ack numbers relative to the
 * connection's own edges, SACK blocks, flags, payload, so that the state
 * machine, reassembly, SACK scoreboard, RACK, PRR and timers are reached,
 * not only the codec.  Virtual time advances between records and timers
 * run.  After every record the engine's invariants are checked.
 *
 * Record: [kind:1][len:2][bytes:len]
 *   kind & 1 == 0: the bytes are one raw datagram
 *   kind & 1 == 1: the bytes are fields (see build()), the payload follows
 *   kind >> 1:     virtual microseconds to advance, times 64
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include "stream/engine.h"

/* The timer queue: the engine's next due time is the earliest of all. */
static void check_timers(struct xvi_stream_ctx *ctx)
{
	__u64 d = 0;

	for (const struct xvi_stream *s = ctx->all; s; s = s->next) {
		const __u64 t[] = { s->timer.rto_at, s->timer.reo_at, s->timer.tlp_at,
				    s->timer.persist_at, s->timer.delack_at, s->timer.ack_hold_at,
				    s->timer.keepalive_at, s->timer.close_at };

		for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
			if (t[i] && (!d || t[i] < d))
				d = t[i];
	}
	if (xvi_sctx__next(ctx) != d)
		abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

struct fake {
	__u64 now;
	__u8 tx[2048];
	/* the last segment the engine sent, to answer the handshake */
	__u8 last[2048];
	__u32 last_len;
};

static void *f_get(void *priv, __u32 *cap)
{
	*cap = sizeof(((struct fake *)priv)->tx);
	return ((struct fake *)priv)->tx;
}

static void f_put(void *priv, void *buf, __u32 len, const union xvi_sockaddr *peer)
{
	struct fake *f = priv;

	memcpy(f->last, buf, len);
	f->last_len = len;
}

static void f_flush(void *priv) {}
static __u64 f_now(void *priv) { return ((struct fake *)priv)->now; }
static void f_arm(void *priv, __u64 at) {}

static __u32 get32(const __u8 *p) { return (__u32)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]; }

static void check(const struct xvi_stream_ctx *ctx, const struct xvi_stream *s)
{
	if (!s || !s->flight.segs)
		return;
	if (xvi_srq__ready(&s->rcv.queue) > s->rcv.queue.size ||
	    s->rcv.queue.nr > XVI_SRQ_MAX_RANGES)
		abort();
	for (__u32 i = 0; i < s->rcv.queue.nr; i++)
		if (!seq_gt(s->rcv.queue.r[i].start, s->rcv.queue.nxt) ||
		    !seq_lt(s->rcv.queue.r[i].start, s->rcv.queue.r[i].end) ||
		    (i && !seq_gt(s->rcv.queue.r[i].start, s->rcv.queue.r[i - 1].end)))
			abort();
	if (seq_gt(s->snd.una, s->snd.nxt) || s->flight.head - s->flight.tail > s->flight.cap)
		abort();
	if (xvi_ssq__queued(&s->snd.queue) > s->snd.queue.ring_size + (1u << 30))
		abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .window = 16, .ack_threshold = 4);
	struct fake f = { .now = 1000000 };
	struct xvi_slink link = {
		.tx_get = f_get, .tx_put = f_put, .tx_flush = f_flush, .now_us = f_now,
		.timer_arm = f_arm, .priv = &f, .mtu = 1472, .checksummed = true,
		.seed = 1, .iss = 0x7ffff000,
	};
	union xvi_sockaddr peer = { 0 };
	struct xvi_stream_ctx *ctx;
	struct xvi_stream *l, *c = NULL;
	struct xvi_shdr h = { 0 };
	__u8 buf[1600];
	__u32 peer_seq = 0xfffff000u, hl;
	size_t off = 0;

	ctx = xvi_sctx__new(&link, &o);
	if (!ctx)
		return 0;
	peer.in.sin_family = AF_INET;
	peer.in.sin_addr.s_addr = htonl(0xc6120001);
	peer.in.sin_port = htons(4000);
	l = xvi_ss__socket(ctx, XVI_STREAM_NONBLOCK);
	l->id.service = 9;
	xvi_ss__listen(l, 4);

	/* Handshake: SYN in, SYN|ACK out, ACK in. */
	h.flags = XVI_SF_SYN;
	h.scid = 0x1234;
	h.seq = peer_seq;
	h.mss = 1000;
	h.wnd = 64000;
	h.svc = 9;
	h.tsval = 1;
	hl = xvi_shdr__encode(&h, buf);
	xvi_sctx__input(ctx, &peer, buf, hl, true);
	if (f.last_len >= XVI_SW_HDR_LEN) {
		__u32 lcid = get32(f.last + 8), iss = get32(f.last + 12);

		memset(&h, 0, sizeof(h));
		h.flags = XVI_SF_ACK;
		h.dcid = lcid;
		h.scid = 0x1234;
		h.seq = peer_seq + 1;
		h.ack = iss + 1;
		h.wnd = 64000;
		h.tsval = 2;
		hl = xvi_shdr__encode(&h, buf);
		xvi_sctx__input(ctx, &peer, buf, hl, true);
		c = xvi_ss__accept(l, NULL);
	}
	if (!c)
		abort();	/* the fixed handshake must work, or we fuzz nothing */
	{
		/* Data of our own in flight, so ACKs and SACKs mean something. */
		static __u8 junk[20000];

		xvi_ss__send(c, junk, sizeof(junk));
	}

	while (off + 3 <= size) {
		__u8 kind = data[off];
		__u32 len = (__u32)data[off + 1] << 8 | data[off + 2];
		const __u8 *p = data + off + 3;

		off += 3;
		if (len > size - off)
			len = (__u32)(size - off);
		off += len;
		f.now += (__u64)(kind >> 1) * 64;
		if (!(kind & 1) || !c || len < 24) {
			xvi_sctx__input(ctx, &peer, p, len, kind & 2);
		} else {
			/*
			 * Fields: flags, nsack, seq delta (from rcv_nxt), ack
			 * delta (from snd_una), window, tsval, 4 SACK blocks as
			 * (start delta, length) from snd_una, then payload.
			 */
			__u32 plen = len - 24, nsack = p[1] % (XVI_SW_MAX_SACK + 1);

			memset(&h, 0, sizeof(h));
			h.flags = (p[0] & XVI_SF_KNOWN & ~XVI_SF_CRC) | XVI_SF_ACK;
			if (h.flags & XVI_SF_SYN)
				h.flags &= ~XVI_SF_SYN;
			h.dcid = p[1] & 0x80 ? get32(p + 2) : c->id.local_cid;
			h.scid = 0x1234;
			h.seq = c->rcv.queue.nxt + (__s16)(p[2] << 8 | p[3]) * 8;
			h.ack = c->snd.una + (__s16)(p[4] << 8 | p[5]) * 8;
			h.wnd = (__u32)(p[6] << 8 | p[7]) << 4;
			h.tsval = (__u32)f.now - (p[8] << 8 | p[9]);
			h.tsecr = (__u32)f.now - (p[10] << 8 | p[11]) * 4;
			h.nsack = (__u8)nsack;
			for (__u32 i = 0; i < nsack; i++) {
				__u32 st = c->snd.una + (p[12 + 3 * i] << 8 | p[13 + 3 * i]) * 4;

				h.sack[i].start = st;
				h.sack[i].end = st + 1 + p[14 + 3 * i] * 16u;
			}
			if (plen > 1000)
				plen = 1000;
			h.len = (__u16)plen;
			hl = xvi_shdr__encode(&h, buf);
			memcpy(buf + hl, p + 24, plen);
			if (p[0] & 0x40)
				xvi_shdr__seal(buf, hl + plen);
			xvi_sctx__input(ctx, &peer, buf, hl + plen, true);
		}
		xvi_sctx__run(ctx);
		check_timers(ctx);
		if (c && c->state == XVI_SS_CLOSED) {
			check(ctx, c);
			break;
		}
		check(ctx, c);
		if (c && (kind & 0x80)) {
			/* The application reads, sends and closes as well. */
			static __u8 sink[8192];

			xvi_ss__recv(c, sink, sizeof(sink));
			xvi_ss__send(c, sink, len);
			if ((kind & 0xf0) == 0xf0)
				xvi_ss__shutdown(c, SHUT_WR);
		}
	}
	xvi_sctx__free(ctx);
	return 0;
}
