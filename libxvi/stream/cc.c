// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * NewReno AIMD (RFC 5681, RFC 6582) as stream congestion control ops.
 * Loss recovery itself (which segment to resend) is the engine's SACK
 * scoreboard; these hooks only size the window.
 */
#include "xvi_stream.h"

static void nr_init(struct xvi_stream_cc *cc)
{
	/* RFC 6928 initial window: 10 segments */
	cc->cwnd = 10 * cc->mss;
	cc->ssthresh = ~0u;
	cc->acked_acc = 0;
}

static void nr_on_ack(struct xvi_stream_cc *cc, __u32 acked, __u32 rtt_us,
		      __u32 in_flight)
{
	if (cc->cwnd < cc->ssthresh) {
		/*
		 * Slow start, appropriate byte counting (RFC 3465) with no L
		 * limit, as Linux does: a receiver acknowledges every t-th
		 * segment (and the engine's PRB asks for one ACK per flight
		 * when cwnd is what limits), so each ACK covers many segments.
		 * With L = 2 cwnd grew by 2 mss per round trip, not doubling.
		 */
		__u32 room = cc->ssthresh - cc->cwnd, inc = acked < room ? acked : room;

		/*
		 * At most doubling per ACK: an ACK may cover more than the
		 * window (after a timeout, the retransmitted head completes a
		 * flight that was SACKed before cwnd fell to one segment), and
		 * crediting all of it would send a burst of up to ssthresh
		 * into the path that just timed out (RFC 3465, 2.3).
		 */
		cc->cwnd += inc < cc->cwnd ? inc : cc->cwnd;
		return;
	}
	/* Congestion avoidance: one mss per window acknowledged, stretch
	 * ACKs included. */
	cc->acked_acc += acked;
	while (cc->acked_acc >= cc->cwnd) {
		cc->acked_acc -= cc->cwnd;
		cc->cwnd += cc->mss;
	}
}

static void nr_on_event(struct xvi_stream_cc *cc, enum xvi_stream_cc_event ev,
			__u32 in_flight)
{
	__u32 half = in_flight / 2;

	switch (ev) {
	case XVI_CC_FAST_LOSS:
		cc->ssthresh = half > 2 * cc->mss ? half : 2 * cc->mss;
		cc->cwnd = cc->ssthresh;
		break;
	case XVI_CC_TIMEOUT:
		cc->ssthresh = half > 2 * cc->mss ? half : 2 * cc->mss;
		cc->cwnd = cc->mss;
		break;
	case XVI_CC_RECOVERED:
		cc->cwnd = cc->ssthresh;
		break;
	}
	cc->acked_acc = 0;
}

static const struct xvi_stream_cc_ops newreno = {
	.name = "newreno",
	.init = nr_init,
	.on_ack = nr_on_ack,
	.on_event = nr_on_event,
};

const struct xvi_stream_cc_ops *xvi_stream_cc_newreno(void)
{
	return &newreno;
}
