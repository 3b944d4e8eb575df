// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The RTT estimate and the retransmission timer (RFC 6298): samples, the
 * timer for data and for SYN and SYN|ACK, its expiry, and the response to
 * a spurious timeout (Eifel, RFC 3522 and RFC 4015).
 */
#include <errno.h>
#include "stream/engine_priv.h"

void stream_rtt_sample(struct xvi_stream *s, __u32 tsecr)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	__u32 r = (__u32)ctx->now - tsecr;

	if (!tsecr || r > 60000000u)
		return;
	if (!r)
		r = 1;
	if (!s->rtt.min_us || r < s->rtt.min_us)
		s->rtt.min_us = r;
	if (!s->rtt.srtt_us) {
		s->rtt.srtt_us = r;
		s->rtt.rttvar_us = r / 2;
	} else {
		__u32 d = s->rtt.srtt_us > r ? s->rtt.srtt_us - r : r - s->rtt.srtt_us;

		s->rtt.rttvar_us = (3 * s->rtt.rttvar_us + d) / 4;
		s->rtt.srtt_us = (7 * s->rtt.srtt_us + r) / 8;
	}
	/* RFC 6298 (2.3); G is the delayed-ACK timer the peer may add. */
	s->rtt.rto_us = s->rtt.srtt_us + (4 * s->rtt.rttvar_us > ctx->delack_us ?
				  4 * s->rtt.rttvar_us : ctx->delack_us);
	if (s->rtt.rto_us < ctx->rto_min_us)
		s->rtt.rto_us = ctx->rto_min_us;
	if (s->rtt.rto_us > ctx->rto_max_us)
		s->rtt.rto_us = ctx->rto_max_us;
}

/*
 * The handshake's round trip is each side's first RTT sample.  Without it a
 * server that only receives kept rto_init (200 ms) until its FIN was
 * acknowledged, so a background close sent that FIN only four times (0, 0.2,
 * 0.6, 1.4 s) before linger ran out: at 30 % loss each way one close in 120
 * ended in RST.  Karn's rule with timestamps: only an echo of our latest SYN
 * (SYN|ACK) counts; an earlier copy's echo can come with a segment the peer
 * repeated on its own timer and would measure that timer, not the path.
 */
void stream_handshake_rtt_sample(struct xvi_stream *s, __u32 tsecr)
{
	if (tsecr && tsecr == s->rtt.handshake_tsval)
		stream_rtt_sample(s, tsecr);
}

/* RFC 6298 (5.1): start the timer if it is not running. */
void stream_arm_rto(struct xvi_stream *s)
{
	if (!s->timer.rto_at && s->flight.tail != s->flight.head) {
		__u64 rto = (__u64)s->rtt.rto_us << (s->rtt.backoff < 10 ? s->rtt.backoff : 10);

		if (rto > s->ctx->rto_max_us)
			rto = s->ctx->rto_max_us;
		/*
		 * A lingering close is aborted after linger_ms (section 8 of
		 * PROTOCOL.md).  Backing off further would leave its FIN three
		 * or four tries in that bound (0, 0.6, 1.8 s with a 600 ms
		 * RTO): at 30 % loss each way one close in a hundred then
		 * ended in RST.  So an orphan's timer stops backing off at
		 * linger / 8: at least eight tries, at most eight more small
		 * segments per linger.
		 */
		if (s->orphan && rto > s->ctx->linger_us / 8)
			rto = s->ctx->linger_us / 8;
		stream_timer_set(s, &s->timer.rto_at, s->ctx->now + rto);
	}
}

/* SYN and SYN|ACK retransmission interval: backed off, at most rto_max. */
__u64 stream_syn_rto(const struct xvi_stream *s)
{
	__u64 rto = (__u64)s->rtt.rto_us << (s->rtt.backoff < 6 ? s->rtt.backoff : 6);

	return rto < s->ctx->rto_max_us ? rto : s->ctx->rto_max_us;
}

bool stream_on_rto(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	__u32 mask = s->flight.cap - 1, flight;

	s->timer.rto_at = 0;
	if (s->state == XVI_SS_SYN_SENT || s->state == XVI_SS_SYN_RCVD) {
		bool rcvd = s->state == XVI_SS_SYN_RCVD;

		/*
		 * A half-open connection lives as long as a connecting one
		 * (the user timeout): the listener's half-open queue is
		 * bounded by eviction, not by giving up early.
		 */
		if (s->timer.syn_tries >= SYN_TRIES_RCVD ||
		    ctx->now - s->snd.una_since >= ctx->user_timeout_us) {
			if (rcvd) {
				stream_free(s);
				return false;
			}
			return stream_fail(s, ETIMEDOUT);
		}
		s->rtt.backoff++;
		s->timer.syn_tries++;
		s->stats.segs_retrans++;
		if (rcvd) {
			/*
			 * No echo on a SYN|ACK our own timer repeats: the time
			 * since the SYN it would echo is this timer's, not the
			 * path's, and the client must not take it for its first
			 * RTT sample (an answer to a repeated SYN echoes it).
			 */
			__u32 ts = s->rcv.ts_recent;

			s->rcv.ts_recent = 0;
			stream_xmit(s, XVI_SF_SYN | XVI_SF_ACK, s->snd.iss, 0);
			s->rcv.ts_recent = ts;
		} else {
			stream_xmit(s, XVI_SF_SYN, s->snd.iss, 0);
		}
		stream_timer_set(s, &s->timer.rto_at, ctx->now + stream_syn_rto(s));
		return true;
	}
	if (s->flight.tail == s->flight.head)
		return true;
	if (ctx->now - s->snd.una_since >= ctx->user_timeout_us) {
		stream_send_rst(s);
		return stream_fail(s, ETIMEDOUT);
	}
	/* RFC 6298 (5.5): back off; (5.6) stream_output() restarts the timer with
	 * the retransmission of the oldest segment. */
	if (!s->rtt.backoff && !s->undo.pending) {
		s->undo.pending = true;
		s->undo.cwnd = s->cc.cwnd;
		s->undo.ssthresh = s->cc.ssthresh;
		s->undo.rto_ts = (__u32)ctx->now ? (__u32)ctx->now : 1;
	}
	s->rtt.backoff++;
	s->stats.timeouts++;
	flight = s->snd.nxt - s->snd.una;
	for (__u32 i = s->flight.tail; i != s->flight.head; i++) {
		struct xvi_sseg *g = &s->flight.segs[i & mask];

		if (!(g->flags & SEG_SACKED))
			g->flags = (g->flags & ~SEG_RETX) | SEG_LOST;
	}
	ctx->cc->on_event(&s->cc, XVI_CC_TIMEOUT, flight);
	s->recovery.active = false;
	s->recovery.point = s->snd.nxt;
	s->recovery.dupacks = 0;
	/* No probes in timeout recovery: the next ACK re-enables them. */
	s->recovery.tlp_out = true;
	s->timer.tlp_at = s->timer.reo_at = 0;
	stream_queue_output(s);
	return true;
}

/*
 * The first ACK that advances after a retransmission timeout tells whether
 * the timeout was needed (Eifel detection, RFC 3522, with timestamps): an
 * echo older than the timeout was sent for an original transmission, so
 * nothing was lost, the ACKs were only late (a receiver that was not
 * scheduled for a few milliseconds on a busy host).  Then, as RFC 4015's
 * response: the congestion state before the timeout comes back and the
 * segments the timeout marked lost but not yet resent are not resent.
 */
void stream_rto_spurious(struct xvi_stream *s, __u32 tsecr)
{
	__u32 mask = s->flight.cap - 1;

	s->undo.pending = false;
	if (!tsecr || (__s32)(tsecr - s->undo.rto_ts) >= 0)
		return;
	if (s->cc.cwnd < s->undo.cwnd)
		s->cc.cwnd = s->undo.cwnd;
	s->cc.ssthresh = s->undo.ssthresh;
	for (__u32 i = s->flight.tail; i != s->flight.head; i++) {
		struct xvi_sseg *g = &s->flight.segs[i & mask];

		if ((g->flags & (SEG_LOST | SEG_RETX)) == SEG_LOST)
			g->flags &= ~SEG_LOST;
	}
	/* spurious_retrans counts it with the head segment (ack.c). */
	s->recovery.tlp_out = false;
}
