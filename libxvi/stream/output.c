// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Segments out: one segment built from the connection and its send queue
 * (checksummed or sealed while it is copied), RSTs, and what a connection
 * sends next: repairs first, then new data within the peer's window and
 * cwnd, with Nagle/SOVIA combining and the PRB bit.
 */
#include <string.h>
#include "stream/engine_priv.h"
#include "pkt/csum.h"

static bool need_crc(const struct xvi_stream_ctx *ctx)
{
	return !ctx->link.checksummed || (ctx->flags & XVI_SCTX_CRC_ALWAYS);
}

/*
 * Build and queue one segment: header from the connection, @len payload
 * bytes from the send queue at @seq.  Every segment after the SYN carries
 * the cumulative ACK, the window and SACK blocks, so sending anything
 * settles a pending delayed ACK.
 */
bool stream_xmit(struct xvi_stream *s, __u8 flags, __u32 seq, __u32 len)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	struct xvi_shdr h;
	__u32 cap, hl;
	__u8 *buf;

	buf = ctx->link.tx_get(ctx->link.priv, &cap);
	if (!buf) {
		ctx->stats.tx_no_buf++;
		stream_queue_output(s);
		return false;
	}
	memset(&h, 0, sizeof(h));
	h.flags = flags;
	h.dcid = s->id.peer_cid;
	h.scid = s->id.local_cid;
	h.seq = seq;
	h.tsval = (__u32)ctx->now ? (__u32)ctx->now : 1;
	h.tsecr = s->rcv.ts_recent;
	if (flags & XVI_SF_SYN) {
		s->rtt.handshake_tsval = h.tsval;
		h.svc = s->id.service;
		h.mss = s->snd.mss;
		h.wnd = ctx->window * s->snd.mss;
		if (flags & XVI_SF_ACK)
			h.ack = s->rcv.irs + 1;
	} else if (s->flight.segs) {
		h.flags |= XVI_SF_ACK;
		h.ack = stream_rcv_ack(s);
		h.wnd = stream_rcv_wnd(s);
		h.nsack = xvi_srq__sack(&s->rcv.queue, h.sack, XVI_SW_MAX_SACK);
		s->ack.wnd_right = h.ack + h.wnd;
	} else {
		h.flags |= XVI_SF_ACK;
		h.ack = s->rcv.irs + 1;
	}
	h.len = len;
	if (h.flags & XVI_SF_ACK)
		s->ack.last_sent = h.ack;
	hl = xvi_shdr__encode(&h, buf);
	if (hl + len > cap)	/* mss is below the link MTU: cannot happen */
		len = 0;
	if (ctx->link.tx_put_sum && !need_crc(ctx)) {
		/* One pass over the payload: copy and checksum. */
		__u64 sum = xvi_csum_partial(buf, hl, 0), psum;
		__u16 f;

		if (len) {
			psum = xvi_ssq__copy_out_sum(&s->snd.queue, seq, buf + hl, len);
			if (hl & 1) {	/* payload at an odd offset: see stream/buf.c */
				f = xvi_csum_fold(psum);
				psum = (__u16)(f >> 8 | f << 8);
			}
			sum += psum;
		}
		ctx->link.tx_put_sum(ctx->link.priv, buf, hl + len, &s->id.peer, sum);
	} else {
		if (len)
			xvi_ssq__copy_out(&s->snd.queue, seq, buf + hl, len);
		if (need_crc(ctx))
			xvi_shdr__seal(buf, hl + len);
		ctx->link.tx_put(ctx->link.priv, buf, hl + len, &s->id.peer);
	}
	sctx_tx_queued(ctx, !len || (h.flags & (XVI_SF_SYN | XVI_SF_FIN | XVI_SF_PRB)) ||
			    seq != s->snd.nxt);
	ctx->stats.tx_segs++;
	s->stats.segs_sent++;
	s->ack.now = false;
	s->ack.held = false;
	s->timer.ack_hold_at = 0;
	s->ack.delayed = 0;
	s->timer.delack_at = 0;
	return true;
}

void sctx_send_rst(struct xvi_stream_ctx *ctx, const union xvi_sockaddr *peer,
			 __u32 dcid, __u32 scid, __u32 seq, __u32 ack)
{
	struct xvi_shdr h;
	__u32 cap, hl;
	void *buf = ctx->link.tx_get(ctx->link.priv, &cap);

	if (!buf) {
		ctx->stats.tx_no_buf++;
		return;
	}
	memset(&h, 0, sizeof(h));
	h.flags = XVI_SF_RST | XVI_SF_ACK;
	h.dcid = dcid;
	h.scid = scid ? scid : 0xffffffffu;
	h.seq = seq;
	h.ack = ack;
	h.tsval = (__u32)ctx->now;
	hl = xvi_shdr__encode(&h, buf);
	if (need_crc(ctx))
		xvi_shdr__seal(buf, hl);
	ctx->link.tx_put(ctx->link.priv, buf, hl, peer);
	sctx_tx_queued(ctx, true);
	ctx->stats.tx_rst++;
	ctx->stats.tx_segs++;
}

void stream_send_rst(struct xvi_stream *s)
{
	if (s->id.peer_cid && s->state != XVI_SS_LISTEN)
		sctx_send_rst(s->ctx, &s->id.peer, s->id.peer_cid, s->id.local_cid, s->snd.nxt,
			      stream_rcv_ack(s));
}

/* Queue @len new bytes as a segment; false if the link had no buffer. */
bool stream_send_new(struct xvi_stream *s, __u32 len, __u8 flags)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	struct xvi_sseg *g;

	/* An answer to data received within the delayed-ACK time: the
	 * connection is interactive, its next PRB data segment's ACK can wait
	 * for the reply (input.c). */
	if (s->ack.data_in_us && ctx->now - s->ack.data_in_us <= ctx->delack_us)
		s->ack.interactive = true;
	if (!stream_xmit(s, flags, s->snd.nxt, len))
		return false;
	g = &s->flight.segs[s->flight.head++ & (s->flight.cap - 1)];
	*g = (struct xvi_sseg){ .seq = s->snd.nxt, .len = len, .tx_count = 1, .tx_us = ctx->now };
	if (s->flight.tail + 1 == s->flight.head || !s->snd.una_since)
		s->snd.una_since = ctx->now;
	s->snd.nxt += len;
	if (s->snd.nxt - s->snd.una > s->cwnd_use.max_flight)
		s->cwnd_use.max_flight = s->snd.nxt - s->snd.una;
	s->stats.bytes_sent += len;
	if (s->recovery.active)
		s->recovery.prr_out += len;
	s->timer.persist_at = 0;
	stream_arm_rto(s);
	return true;
}

void stream_output(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	__u32 p, mask = s->flight.cap - 1;
	__u64 sent0;

	if (s->state == XVI_SS_SYN_SENT || s->state == XVI_SS_SYN_RCVD ||
	    s->state == XVI_SS_CLOSED || s->state == XVI_SS_LISTEN || !s->flight.segs)
		return;
	if (!stream_can_send(s))
		goto ack;
	p = stream_pipe(s);
	sent0 = s->stats.segs_sent;
	/* 1. Repair: segments judged lost go first (RFC 6675 NextSeg rule 1). */
	for (__u32 i = s->flight.tail; i != s->flight.head; i++) {
		struct xvi_sseg *g = &s->flight.segs[i & mask];
		__u32 sz = g->len ? g->len : 1;

		if ((g->flags & (SEG_SACKED | SEG_LOST | SEG_RETX)) != SEG_LOST)
			continue;
		if (p && p + sz > s->cc.cwnd)
			goto done;
		if (!stream_xmit(s, g->flags & SEG_FIN ? XVI_SF_FIN : 0, g->seq, g->len))
			return;
		g->flags |= SEG_RETX;
		g->tx_count++;
		g->tx_us = ctx->now;
		s->stats.segs_retrans++;
		if (s->recovery.active)
			s->recovery.prr_out += sz;
		p += sz;
		/* The oldest segment went again: give it a whole RTO. */
		if (g->seq == s->snd.una)
			stream_restart_rto(s);
		else
			stream_arm_rto(s);
	}
	/* 2. New data, within the peer's window and the congestion window. */
	for (;;) {
		__u32 avail = s->snd.queue.end - s->snd.nxt, len, wroom, croom;
		struct xvi_sseg *g;
		__u8 fl = 0;

		if (s->snd.fin_sent)
			break;
		if (s->flight.head - s->flight.tail == s->flight.cap)
			break;
		wroom = seq_gt(s->snd.wnd_right, s->snd.nxt) ? s->snd.wnd_right - s->snd.nxt : 0;
		croom = s->cc.cwnd > p ? s->cc.cwnd - p : 0;
		if (!avail) {
			if (!s->snd.fin_queued)
				break;
			/* FIN takes one sequence number after the data. */
			if (!stream_xmit(s, XVI_SF_FIN, s->snd.nxt, 0))
				return;
			g = &s->flight.segs[s->flight.head++ & mask];
			*g = (struct xvi_sseg){ .seq = s->snd.nxt, .flags = SEG_FIN,
						.tx_count = 1, .tx_us = ctx->now };
			s->snd.nxt++;
			s->snd.fin_sent = true;
			if (!s->snd.una_since)
				s->snd.una_since = ctx->now;
			stream_arm_rto(s);
			break;
		}
		len = avail < s->snd.mss ? avail : s->snd.mss;
		if (len > wroom)
			len = wroom;
		if (len > croom) {
			len = croom;
			s->cwnd_use.limited = true;	/* RFC 7661: cwnd is what limits */
		}
		if (!len) {
			/* Zero window with nothing in flight: probe it. */
			if (!wroom && s->flight.tail == s->flight.head && !s->timer.persist_at)
				stream_timer_set(s, &s->timer.persist_at, ctx->now + s->rtt.rto_us);
			break;
		}
		if (len < s->snd.mss && s->flight.tail != s->flight.head) {
			/*
			 * Nagle / SOVIA combining: hold a small tail while data
			 * is unacknowledged, unless NODELAY, or the application
			 * pushed (recv(), close()), or the window cuts it.
			 */
			if (len < avail)
				break;	/* silly window: wait for room */
			if (!(s->flags & XVI_STREAM_NODELAY) && !s->snd.fin_queued)
				break;
		}
		/*
		 * The last segment before the sender must wait for an ACK
		 * (queue empty, window or cwnd full) asks for that ACK at
		 * once: SOVIA's ACK threshold t assumes windows far above t,
		 * and a sender held back by cwnd must not sit out the
		 * delayed-ACK timer once per round trip.
		 */
		if (len == avail || wroom - len < s->snd.mss || croom - len < s->snd.mss ||
		    s->flight.head - s->flight.tail + 1 >= s->flight.cap)
			fl = XVI_SF_PRB;
		if (!stream_send_new(s, len, fl))
			return;
		p += len;
	}
done:
	/* The probe timer counts from the last transmission, not from the
	 * last time the application called in. */
	if (s->stats.segs_sent != sent0 || !s->timer.tlp_at)
		stream_arm_tlp(s);
ack:
	if (s->ack.now)
		stream_xmit(s, 0, s->snd.nxt, 0);
}
