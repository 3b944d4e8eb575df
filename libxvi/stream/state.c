// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The connection state machine: transitions, the end of a connection (with
 * an error or orderly), what an RST means in each state, TIME_WAIT.
 */
#include <errno.h>
#include "stream/engine_priv.h"

/*
 * TIME_WAIT is there to ACK the peer's FIN again if our last ACK was lost
 * (RFC 9293 3.6); old duplicates cannot be taken for a new connection (ids),
 * so it need not last 2 MSL.  But it must outlast the peer's retransmissions
 * of that FIN: they come one backed-off RTO of the peer's apart, and a peer
 * that closed in the background retransmits for at most linger (section 8 of
 * PROTOCOL.md).  So: linger, restarted by every retransmitted FIN (RFC 9293
 * 3.10.7.4), never less than two of our RTOs.  A short TIME_WAIT answered
 * the peer's retransmitted FIN with RST instead of an ACK.
 */
__u32 stream_time_wait_us(const struct xvi_stream *s)
{
	__u32 t = 2 * s->rtt.rto_us;

	return t > s->ctx->linger_us ? t : s->ctx->linger_us;
}

void stream_set_state(struct xvi_stream *s, enum xvi_stream_state st)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	bool was = s->state != XVI_SS_CLOSED && s->state != XVI_SS_LISTEN;
	bool is = st != XVI_SS_CLOSED && st != XVI_SS_LISTEN;

	if (was && !is)
		ctx->nconns--;
	else if (!was && is)
		ctx->nconns++;
	s->state = st;
	if (st == XVI_SS_TIME_WAIT) {
		stream_timer_set(s, &s->timer.close_at, ctx->now + stream_time_wait_us(s));
		/* Nothing to send or probe: only the peer's FIN can come. */
		s->timer.keepalive_at = s->timer.persist_at = s->timer.tlp_at = s->timer.reo_at = 0;
	}
	if (st == XVI_SS_CLOSED) {
		s->ack.held = false;
		s->timer.rto_at = s->timer.delack_at = s->timer.persist_at = 0;
		s->timer.keepalive_at = s->timer.ack_hold_at = 0;
		s->timer.reo_at = s->timer.tlp_at = 0;
		s->timer.close_at = 0;
		stream_unqueue_output(s);
	}
}

/*
 * The connection is over with @err (0: orderly).  Returns false if it was
 * freed (nobody holds a handle: an orphan or a child not yet accepted).
 */
bool stream_fail(struct xvi_stream *s, int err)
{
	if (err) {
		s->err = err;
		stream_release_refs(s);
	}
	stream_set_state(s, XVI_SS_CLOSED);
	if (s->orphan || s->listen.listener) {
		stream_free(s);
		return false;
	}
	return true;
}

/*
 * The error a matching RST leaves (section 6 of PROTOCOL.md).  RFC 9293
 * 3.10.7.4: in CLOSING, LAST_ACK and TIME_WAIT an RST just closes: the peer
 * sent its FIN, so it has nothing more for us, and the application finished
 * with the connection.  We report ECONNRESET there only while some of our
 * data is unacknowledged (it may never have arrived); once everything up to
 * our FIN is acknowledged, the RST loses nothing.
 */
int stream_rst_error(const struct xvi_stream *s)
{
	switch (s->state) {
	case XVI_SS_SYN_RCVD:
		return ECONNREFUSED;
	case XVI_SS_TIME_WAIT:
		return 0;
	case XVI_SS_CLOSING:
	case XVI_SS_LAST_ACK:
		return s->snd.fin_sent && s->snd.una + 1 == s->snd.nxt ? 0 : ECONNRESET;
	default:
		return ECONNRESET;
	}
}

void stream_update_state(struct xvi_stream *s)
{
	bool fin_acked = s->snd.fin_sent && s->snd.una == s->snd.nxt;

	switch (s->state) {
	case XVI_SS_ESTABLISHED:
		if (s->rcv.eof)
			stream_set_state(s, XVI_SS_CLOSE_WAIT);
		break;
	case XVI_SS_FIN_WAIT_1:
		if (fin_acked && s->rcv.eof)
			stream_set_state(s, XVI_SS_TIME_WAIT);
		else if (fin_acked)
			stream_set_state(s, XVI_SS_FIN_WAIT_2);
		else if (s->rcv.eof)
			stream_set_state(s, XVI_SS_CLOSING);
		break;
	case XVI_SS_FIN_WAIT_2:
		if (s->rcv.eof)
			stream_set_state(s, XVI_SS_TIME_WAIT);
		break;
	case XVI_SS_CLOSING:
		if (fin_acked)
			stream_set_state(s, XVI_SS_TIME_WAIT);
		break;
	case XVI_SS_LAST_ACK:
		if (fin_acked)
			stream_fail(s, 0);
		break;
	default:
		break;
	}
}

void stream_established(struct xvi_stream *s, __u16 peer_mss, __u32 wnd)
{
	struct xvi_stream_ctx *ctx = s->ctx;

	s->snd.peer_mss = peer_mss;
	if (s->snd.mss > peer_mss)
		s->snd.mss = peer_mss;
	s->cc.mss = s->snd.mss;
	ctx->cc->init(&s->cc);
	s->snd.una = s->snd.nxt = s->snd.iss + 1;
	s->cwnd_use.period_end = s->snd.nxt;
	s->snd.wnd_right = s->snd.iss + 1 + wnd;
	s->snd.peer_wnd = wnd;
	s->timer.rto_at = 0;
	s->rtt.backoff = 0;
	s->snd.una_since = 0;
	stream_timer_set(s, &s->timer.keepalive_at, ctx->ka_cnt ? ctx->now + ctx->ka_idle_us : 0);
	stream_set_state(s, XVI_SS_ESTABLISHED);
}
