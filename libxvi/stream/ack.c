// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An acknowledgment in, in steps: the send window, snd.una and the records
 * it frees, SACK blocks, the RTT sample, cwnd growth (RFC 7661) or the end
 * of recovery, then RACK, duplicate-ACK loss, PRR and the probe timer.
 */
#include "stream/engine_priv.h"

static void ref_done(void *arg, __u64 cookie, int region)
{
	struct xvi_stream *s = arg;

	if (region >= 0 && region < XVI_SCTX_MAX_REGIONS && s->ctx->regions[region].refs)
		s->ctx->regions[region].refs--;
	if (s->done.head - s->done.tail < s->done.cap)
		s->done.cookies[s->done.head++ % s->done.cap] = cookie;
}

/*
 * RFC 7661: grow cwnd only while the sender uses it.  A sender held back by
 * the peer's window or by its application never fills cwnd, and growing it
 * anyway (tens to hundreds of MB after a loss-free transfer) would let the
 * whole of it burst out later.  In slow start cwnd may stay up to twice the
 * largest flight of this or the last period (it doubles per round trip
 * while the flight follows it); in congestion avoidance cwnd must have
 * held data back in this or the last period.
 */
static void cwnd_grow(struct xvi_stream *s, __u32 acked)
{
	__u32 flight = s->cwnd_use.max_flight > s->cwnd_use.max_flight_prev ?
			       s->cwnd_use.max_flight : s->cwnd_use.max_flight_prev;
	__u32 before = s->cc.cwnd;

	if (s->cwnd_use.limited || s->cwnd_use.limited_prev) {
		s->ctx->cc->on_ack(&s->cc, acked, s->rtt.srtt_us, stream_pipe(s));
		return;
	}
	if (s->cc.cwnd >= s->cc.ssthresh || s->cc.cwnd >= 2 * flight)
		return;
	s->ctx->cc->on_ack(&s->cc, acked, s->rtt.srtt_us, stream_pipe(s));
	/* A stretch ACK may add many segments at once: still not past
	 * twice the flight. */
	if (s->cc.cwnd > 2 * flight)
		s->cc.cwnd = before > 2 * flight ? before : 2 * flight;
}

/* An ACK for what we never sent, or older than snd.una, is ignored. */
static bool ack_acceptable(const struct xvi_stream *s, __u32 ack)
{
	return !seq_gt(ack, s->snd.nxt) && !seq_lt(ack, s->snd.una);
}

static void update_send_window(struct xvi_stream *s, const struct xvi_shdr *h)
{
	/*
	 * A window that opens over data waiting to go is a reason to send,
	 * also when nothing is in flight (a pure window update after a zero
	 * window): no ACK of data will come to start the output otherwise.
	 */
	if (seq_gt(h->ack + h->wnd, s->snd.wnd_right) && s->snd.queue.end != s->snd.nxt)
		stream_queue_output(s);
	if (seq_gt(h->ack + h->wnd, s->snd.wnd_right) || seq_gt(h->ack, s->snd.una))
		s->snd.wnd_right = h->ack + h->wnd;
	s->snd.peer_wnd = h->wnd;
	if (h->wnd)
		s->timer.persist_at = 0;
}

/* RFC 5681 duplicate ACK: a window update is not one. */
static bool is_dupack(const struct xvi_stream *s, const struct xvi_shdr *h, __u32 old_wnd)
{
	return !h->len && !(h->flags & (XVI_SF_FIN | XVI_SF_SYN | XVI_SF_PRB)) &&
	       s->flight.tail != s->flight.head && h->wnd == old_wnd;
}

/*
 * Eifel (RFC 3522): the ACK echoes the timestamp of the copy that filled
 * the hole; older than our last retransmission means the original arrived
 * after all: reordering, widen RACK's window.
 */
static void check_spurious_retrans(struct xvi_stream *s, const struct xvi_sseg *g, __u32 tsecr)
{
	if (g->tx_count <= 1 || !tsecr || (__s32)(tsecr - (__u32)g->tx_us) >= 0)
		return;
	s->stats.spurious_retrans++;
	if (s->rack.reo_wnd_mult < REO_MULT_MAX)
		s->rack.reo_wnd_mult = (s->rack.reo_wnd_mult ? s->rack.reo_wnd_mult : 1) + 1;
	s->rack.clean_recoveries = 0;
}

/* Drop the records of the segments the ACK covers; returns the bytes newly
 * delivered (those not SACKed before). */
static __u32 free_acked(struct xvi_stream *s, const struct xvi_shdr *h)
{
	__u32 mask = s->flight.cap - 1, delivered = 0;
	bool head = true;

	while (s->flight.tail != s->flight.head) {
		struct xvi_sseg *g = &s->flight.segs[s->flight.tail & mask];

		if (seq_gt(sseg_end(g), h->ack))
			break;
		if (head)
			check_spurious_retrans(s, g, h->tsecr);
		head = false;
		if (!(g->flags & SEG_SACKED)) {
			delivered += g->len ? g->len : 1;
			stream_rack_update(s, g, h->tsecr);
		}
		s->flight.tail++;
	}
	return delivered;
}

/*
 * The peer may acknowledge any byte, also inside a segment: trim the oldest
 * one so a retransmission starts at snd.una, where the send queue starts
 * after xvi_ssq__ack (the bytes before it are gone, by-reference memory
 * maybe handed back).
 */
static void trim_oldest(struct xvi_stream *s, __u32 ack)
{
	struct xvi_sseg *g;

	if (s->flight.tail == s->flight.head)
		return;
	g = &s->flight.segs[s->flight.tail & (s->flight.cap - 1)];
	if (g->len && seq_gt(ack, g->seq)) {
		g->len -= ack - g->seq;
		g->seq = ack;
	}
}

/* Recovery ends once everything sent before it began is acknowledged. */
static void recovery_progress(struct xvi_stream *s, __u32 ack)
{
	if (!seq_ge(ack, s->recovery.point))
		return;
	s->recovery.active = false;
	s->ctx->cc->on_event(&s->cc, XVI_CC_RECOVERED, stream_pipe(s));
	/* RFC 8985 7.2-style decay of the widened window. */
	if (++s->rack.clean_recoveries >= 16 && s->rack.reo_wnd_mult > 1) {
		s->rack.reo_wnd_mult = 1;
		s->rack.clean_recoveries = 0;
	}
}

/* One flight acknowledged: start a new validation period (RFC 7661). */
static void cwnd_use_period(struct xvi_stream *s, __u32 ack)
{
	if (!seq_ge(ack, s->cwnd_use.period_end))
		return;
	s->cwnd_use.period_end = s->snd.nxt;
	s->cwnd_use.max_flight_prev = s->cwnd_use.max_flight;
	s->cwnd_use.max_flight = s->snd.nxt - s->snd.una;
	s->cwnd_use.limited_prev = s->cwnd_use.limited;
	s->cwnd_use.limited = false;
}

/* The ACK moves snd.una: returns the bytes newly delivered. */
static __u32 advance_una(struct xvi_stream *s, const struct xvi_shdr *h)
{
	__u32 acked = h->ack - s->snd.una, delivered;

	stream_rtt_sample(s, h->tsecr);
	if (s->undo.pending)
		stream_rto_spurious(s, h->tsecr);
	s->snd.una = h->ack;
	delivered = free_acked(s, h);
	trim_oldest(s, h->ack);
	xvi_ssq__ack(&s->snd.queue, h->ack, ref_done, s);
	s->recovery.dupacks = 0;
	s->rtt.backoff = 0;
	s->recovery.tlp_out = false;
	s->snd.una_since = s->flight.tail != s->flight.head ? s->ctx->now : 0;
	if (s->recovery.active)
		recovery_progress(s, h->ack);
	else
		cwnd_grow(s, acked);
	cwnd_use_period(s, h->ack);
	stream_restart_rto(s);
	stream_queue_output(s);
	return delivered;
}

/* Mark the segments the SACK blocks cover; returns the bytes newly SACKed. */
static __u32 mark_sacked(struct xvi_stream *s, const struct xvi_shdr *h)
{
	__u32 mask = s->flight.cap - 1, delivered = 0;

	for (int b = 0; b < h->nsack; b++) {
		__u32 a = h->sack[b].start, e = h->sack[b].end;

		if (seq_le(e, s->snd.una) || seq_gt(e, s->snd.nxt))
			continue;
		for (__u32 i = s->flight.tail; i != s->flight.head; i++) {
			struct xvi_sseg *g = &s->flight.segs[i & mask];

			if (!g->len || (g->flags & SEG_SACKED))
				continue;
			if (seq_ge(g->seq, a) && seq_le(g->seq + g->len, e)) {
				g->flags |= SEG_SACKED;
				delivered += g->len;
				stream_rack_update(s, g, h->tsecr);
			}
		}
	}
	return delivered;
}

/* Without SACK information (all blocks used): three duplicate ACKs. */
static void dupack_loss(struct xvi_stream *s)
{
	struct xvi_sseg *g;

	if (s->recovery.dupacks < 3)
		return;
	g = &s->flight.segs[s->flight.tail & (s->flight.cap - 1)];
	if (!(g->flags & (SEG_SACKED | SEG_LOST)) && g->tx_count == 1) {
		g->flags |= SEG_LOST;
		stream_enter_recovery(s);
		stream_queue_output(s);
	}
}

void stream_on_ack(struct xvi_stream *s, const struct xvi_shdr *h)
{
	__u32 old_wnd = s->snd.peer_wnd, delivered = 0;

	if (!ack_acceptable(s, h->ack))
		return;
	update_send_window(s, h);
	if (seq_gt(h->ack, s->snd.una))
		delivered = advance_una(s, h);
	else if (is_dupack(s, h, old_wnd))
		s->recovery.dupacks++;
	delivered += mark_sacked(s, h);
	if (delivered)
		s->recovery.tlp_out = false;
	if (s->flight.tail == s->flight.head) {
		s->timer.reo_at = s->timer.tlp_at = s->timer.rto_at = 0;
		return;
	}
	stream_rack_detect(s);
	dupack_loss(s);
	if (s->recovery.active)
		stream_prr_update(s, delivered);
	if (delivered)
		stream_queue_output(s);
	stream_arm_tlp(s);
}
