// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Loss detection and repair: RFC 6675 pipe, RACK (RFC 8985) time-based
 * loss detection, tail loss probes, entering recovery and proportional
 * rate reduction (RFC 6937).
 */
#include "stream/engine_priv.h"

/* RFC 6675 pipe: bytes believed to be in the network. */
__u32 stream_pipe(const struct xvi_stream *s)
{
	__u32 p = 0;

	for (__u32 i = s->flight.tail; i != s->flight.head; i++) {
		const struct xvi_sseg *g = &s->flight.segs[i & (s->flight.cap - 1)];

		if (g->flags & SEG_SACKED)
			continue;
		if ((g->flags & SEG_LOST) && !(g->flags & SEG_RETX))
			continue;
		p += g->len ? g->len : 1;
	}
	return p;
}

/* RFC 8985 "sent after": by transmission time, then by sequence. */
static bool sent_after(__u64 t1, __u32 end1, __u64 t2, __u32 end2)
{
	return t1 > t2 || (t1 == t2 && seq_gt(end1, end2));
}

/*
 * RFC 8985 tail loss probe: with data in flight and no ACK for 2 SRTT after
 * the last transmission, send one segment so the loss of the last segments
 * of a burst shows up in a SACK (and RACK repairs it) instead of waiting for
 * the retransmission timeout.  Unlike RFC 8985 this also runs in recovery:
 * a lost retransmission that nothing was sent after (cwnd or the peer's
 * window held new data back) is otherwise only found by the RTO, and through
 * a 5 % loss relay that was the most common timeout.  One probe per episode:
 * the next delivery re-enables it.
 */
void stream_arm_tlp(struct xvi_stream *s)
{
	__u64 pto;

	s->timer.tlp_at = 0;
	if (s->recovery.tlp_out || s->flight.tail == s->flight.head || !s->rtt.srtt_us ||
	    !stream_can_send(s))
		return;
	/*
	 * No delayed-ACK allowance: the last segment of every burst carries
	 * PRB, which the peer answers at once (section 4 of PROTOCOL.md).
	 */
	pto = 2 * (__u64)s->rtt.srtt_us;
	if (pto < TLP_MIN_US)
		pto = TLP_MIN_US;
	stream_timer_set(s, &s->timer.tlp_at, s->ctx->now + pto);
	if (s->timer.rto_at && s->timer.tlp_at >= s->timer.rto_at)
		s->timer.tlp_at = 0;
}

/* RACK reordering window: a quarter min RTT, widened by spurious repairs. */
static __u32 reo_wnd(const struct xvi_stream *s)
{
	__u32 w = (s->rack.reo_wnd_mult ? s->rack.reo_wnd_mult : 1) * (s->rtt.min_us / 4);

	if (s->rtt.srtt_us && w > s->rtt.srtt_us)
		w = s->rtt.srtt_us;
	return w < REO_MIN_US ? REO_MIN_US : w;
}

void stream_enter_recovery(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;

	if (s->recovery.active)
		return;
	s->recovery.active = true;
	s->recovery.point = s->snd.nxt;
	s->recovery.prr_delivered = 0;
	s->recovery.prr_out = 0;
	s->recovery.recover_fs = s->snd.nxt - s->snd.una;
	s->timer.tlp_at = 0;
	ctx->cc->on_event(&s->cc, XVI_CC_FAST_LOSS, stream_pipe(s));
	s->stats.fast_retrans++;
}

/*
 * RFC 6937 proportional rate reduction: during recovery the engine sizes
 * cwnd itself so that what goes out follows what the peer received, down to
 * the ssthresh the congestion control chose, and the first repair leaves at
 * once (RFC 6675 4.3) whatever the pipe.
 */
void stream_prr_update(struct xvi_stream *s, __u32 delivered)
{
	__u32 pipe = stream_pipe(s), ssthresh = s->cc.ssthresh, mss = s->snd.mss;
	__s64 sndcnt;

	s->recovery.prr_delivered += delivered;
	if (pipe > ssthresh) {
		__u64 fs = s->recovery.recover_fs ? s->recovery.recover_fs : 1;

		sndcnt = (__s64)(((__u64)s->recovery.prr_delivered * ssthresh + fs - 1) / fs) -
			 s->recovery.prr_out;
	} else {
		__s64 limit = (__s64)s->recovery.prr_delivered - s->recovery.prr_out;

		if (limit < delivered)
			limit = delivered;
		limit += mss;
		sndcnt = (__s64)ssthresh - pipe;
		if (sndcnt > limit)
			sndcnt = limit;
	}
	if (sndcnt < 0)
		sndcnt = 0;
	if (!s->recovery.prr_out && sndcnt < mss)
		sndcnt = mss;
	s->cc.cwnd = pipe + (__u32)sndcnt;
}

/*
 * RACK (RFC 8985 6.2): a segment sent before the most recently sent segment
 * that was delivered is lost once it is older than that segment's RTT plus
 * the reordering window.  Time-based, so it also finds lost retransmissions
 * and losses at the tail, where no three segments above get SACKed.
 */
void stream_rack_detect(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	__u32 mask = s->flight.cap - 1, reo = reo_wnd(s);
	__u64 next = 0;
	bool lost = false;

	s->timer.reo_at = 0;
	if (!s->rack.xmit_us)
		return;
	for (__u32 i = s->flight.tail; i != s->flight.head; i++) {
		struct xvi_sseg *g = &s->flight.segs[i & mask];
		__u64 due;

		if (g->flags & SEG_SACKED)
			continue;
		if ((g->flags & (SEG_LOST | SEG_RETX)) == SEG_LOST)
			continue;	/* already waiting for its repair */
		if (!sent_after(s->rack.xmit_us, s->rack.end, g->tx_us, sseg_end(g)))
			continue;
		due = g->tx_us + s->rack.rtt_us + reo;
		if (due <= ctx->now) {
			if (g->flags & SEG_RETX)
				s->stats.lost_retrans++;
			g->flags = (g->flags & ~SEG_RETX) | SEG_LOST;
			lost = true;
		} else if (!next || due < next) {
			next = due;
		}
	}
	stream_timer_set(s, &s->timer.reo_at, next);
	if (lost) {
		stream_enter_recovery(s);
		stream_queue_output(s);
	}
}

/* A segment was delivered (cumulatively or SACKed): RFC 8985 6.2 step 2. */
void stream_rack_update(struct xvi_stream *s, const struct xvi_sseg *g, __u32 tsecr)
{
	__u32 rtt = (__u32)(s->ctx->now - g->tx_us);

	/* Delivered sooner than possible after its retransmission, or the
	 * echo is older than it (RFC 8985 6.2 step 2): the ACK was for an
	 * earlier copy, and says nothing about the last one.  Taking it
	 * would call every segment sent before that retransmission lost,
	 * after a spurious timeout all of the flight. */
	if (g->tx_count > 1 && (rtt < s->rtt.min_us ||
			   (tsecr && (__s32)(tsecr - (__u32)g->tx_us) < 0)))
		return;
	if (sent_after(g->tx_us, sseg_end(g), s->rack.xmit_us, s->rack.end)) {
		s->rack.xmit_us = g->tx_us;
		s->rack.end = sseg_end(g);
		s->rack.rtt_us = rtt;
	}
}

/* A tail loss probe is due: new data if the window allows, else the last
 * segment again; either way one segment beyond cwnd (RFC 8985 7.3). */
void stream_on_tlp(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	__u32 mask = s->flight.cap - 1, avail, wroom;

	s->timer.tlp_at = 0;
	if (s->recovery.tlp_out || s->flight.tail == s->flight.head || !stream_can_send(s))
		return;

	avail = s->snd.queue.end - s->snd.nxt;
	wroom = seq_gt(s->snd.wnd_right, s->snd.nxt) ? s->snd.wnd_right - s->snd.nxt : 0;
	if (avail && !s->snd.fin_sent && s->flight.head - s->flight.tail < s->flight.cap &&
	    wroom >= (avail < s->snd.mss ? avail : s->snd.mss)) {
		if (!stream_send_new(s, avail < s->snd.mss ? avail : s->snd.mss, XVI_SF_PRB))
			return;
	} else {
		struct xvi_sseg *g = NULL;

		for (__u32 i = s->flight.head; i != s->flight.tail; i--) {
			g = &s->flight.segs[(i - 1) & mask];
			if (!(g->flags & SEG_SACKED))
				break;
			g = NULL;
		}
		if (!g)
			return;
		if (!stream_xmit(s, (g->flags & SEG_FIN ? XVI_SF_FIN : 0) | XVI_SF_PRB, g->seq,
				 g->len))
			return;
		g->tx_count++;
		g->tx_us = ctx->now;
		s->stats.segs_retrans++;
	}
	s->recovery.tlp_out = true;
	s->stats.tlp_probes++;
	stream_restart_rto(s);
}
