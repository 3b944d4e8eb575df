// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Every connection's due times, the run that fires them, sends what is
 * pending and re-arms the link's timer (xvi_sctx__run), and held ACKs
 * released before the application sleeps.
 */
#include <errno.h>
#include "stream/engine_priv.h"

static __u64 dmin(__u64 a, __u64 b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return a < b ? a : b;
}

static __u64 next_deadline(const struct xvi_stream *s)
{
	__u64 d = dmin(s->timer.rto_at, s->timer.delack_at);

	d = dmin(d, s->timer.persist_at);
	d = dmin(d, s->timer.ack_hold_at);
	d = dmin(d, s->timer.reo_at);
	d = dmin(d, s->timer.tlp_at);
	d = dmin(d, s->timer.keepalive_at);
	return dmin(d, s->timer.close_at);
}

/* Returns false if the connection was freed. */
static bool run_timers(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	__u64 now = ctx->now;

	if (s->timer.close_at && s->timer.close_at <= now) {
		s->timer.close_at = 0;
		if (s->state == XVI_SS_TIME_WAIT) {
			ctx->stats.time_wait_expired++;
			return stream_fail(s, 0);
		}
		if (s->orphan) {
			/* Linger over: the peer did not finish, abort. */
			ctx->stats.linger_aborts++;
			stream_send_rst(s);
			stream_free(s);
			return false;
		}
	}
	if (s->timer.rto_at && s->timer.rto_at <= now && !stream_on_rto(s))
		return false;
	if (s->timer.reo_at && s->timer.reo_at <= now)
		stream_rack_detect(s);
	if (s->timer.tlp_at && s->timer.tlp_at <= now)
		stream_on_tlp(s);
	if (s->timer.delack_at && s->timer.delack_at <= now) {
		s->timer.delack_at = 0;
		s->ack.now = true;
		stream_queue_output(s);
	}
	if (s->timer.ack_hold_at && s->timer.ack_hold_at <= now) {
		/* No reply in time: the ACK goes alone, and this connection's
		 * ACKs stop waiting until it answers data with data again. */
		s->timer.ack_hold_at = 0;
		s->ack.held = false;
		s->ack.interactive = false;
		s->ack.now = true;
		stream_queue_output(s);
	}
	if (s->timer.persist_at && s->timer.persist_at <= now) {
		s->timer.persist_at = now + s->rtt.rto_us * 2;
		stream_xmit(s, XVI_SF_PRB, s->snd.nxt, 0);
	}
	if (s->timer.keepalive_at && s->timer.keepalive_at <= now && stream_synchronized(s)) {
		if (s->timer.keepalive_sent >= ctx->ka_cnt) {
			/* Dead peer: nothing heard for idle + cnt * intvl. */
			stream_send_rst(s);
			return stream_fail(s, ETIMEDOUT);
		}
		s->timer.keepalive_sent++;
		s->timer.keepalive_at = now + ctx->ka_intvl_us;
		stream_xmit(s, XVI_SF_PRB, s->snd.nxt, 0);
	}
	return true;
}

__u64 xvi_sctx__next(const struct xvi_stream_ctx *ctx)
{
	__u64 d = 0;

	for (const struct xvi_stream *s = ctx->all; s; s = s->next)
		d = dmin(d, next_deadline(s));
	return d;
}

void xvi_sctx__release_acks(struct xvi_stream_ctx *ctx)
{
	bool any = false;

	for (struct xvi_stream *s = ctx->all; s; s = s->next)
		if (s->ack.held) {
			s->ack.held = false;
			s->timer.ack_hold_at = 0;
			s->ack.now = true;
			stream_queue_output(s);
			any = true;
		}
	if (any)
		xvi_sctx__run(ctx);
}

void xvi_sctx__run(struct xvi_stream_ctx *ctx)
{
	struct xvi_stream *s, *next;
	__u64 d;

	sctx_now(ctx);
	for (s = ctx->all; s; s = next) {
		next = s->next;
		d = next_deadline(s);
		if (d && d <= ctx->now && !run_timers(s))
			continue;
	}
	while ((s = ctx->output)) {
		ctx->output = s->output_next;
		s->on_output = false;
		stream_output(s);
		if (s->on_output)	/* link out of buffers: retry next run */
			break;
	}
	ctx->link.tx_flush(ctx->link.priv);
	d = xvi_sctx__next(ctx);
	if (ctx->output)
		d = dmin(d, ctx->now + 50);
	if (d != ctx->armed) {
		ctx->armed = d;
		ctx->link.timer_arm(ctx->link.priv, d);
	}
}
