// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Every connection's due times, the run that fires them, sends what is
 * pending and re-arms the link's timer (xvi_sctx__run), and held ACKs
 * released before the application sleeps, when a context that arms on
 * sleep also hands the link its timer (xvi_sctx__prepare_sleep).  A run
 * costs what is due and what has output, not what the context holds: due
 * connections come from the timer queue (stream/tq.c, one node per
 * connection at its earliest due time), connections with something to
 * send from the output list, held ACKs from the held list.
 */
#include <errno.h>
#include <stddef.h>
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
		stream_timer_set(s, &s->timer.persist_at, now + s->rtt.rto_us * 2);
		stream_xmit(s, XVI_SF_PRB, s->snd.nxt, 0);
	}
	if (s->timer.keepalive_at && s->timer.keepalive_at <= now && stream_synchronized(s)) {
		if (s->timer.keepalive_sent >= ctx->ka_cnt) {
			/* Dead peer: nothing heard for idle + cnt * intvl. */
			stream_send_rst(s);
			return stream_fail(s, ETIMEDOUT);
		}
		s->timer.keepalive_sent++;
		stream_timer_set(s, &s->timer.keepalive_at, now + ctx->ka_intvl_us);
		stream_xmit(s, XVI_SF_PRB, s->snd.nxt, 0);
	}
	return true;
}

static struct xvi_stream *node_stream(struct xvi_tq_node *e)
{
	return (struct xvi_stream *)((char *)e - offsetof(struct xvi_stream, timer.node));
}

/*
 * The queue's first node at its connection's true earliest due time: a
 * node is only ever early (stream_timer_set), so move it to the true time,
 * or out when nothing is due, until the first one is exact.
 */
static struct xvi_tq_node *first_exact(struct xvi_stream_ctx *ctx)
{
	struct xvi_tq_node *e;
	__u64 d;

	while ((e = xvi_tq__first(&ctx->tq)) && (d = next_deadline(node_stream(e))) != e->at)
		xvi_tq__set(&ctx->tq, e, d);
	return e;
}

__u64 xvi_sctx__next(struct xvi_stream_ctx *ctx)
{
	struct xvi_tq_node *e = first_exact(ctx);

	return e ? e->at : 0;
}

void xvi_sctx__release_acks(struct xvi_stream_ctx *ctx)
{
	struct xvi_stream *s;
	bool any = false;

	while ((s = ctx->held)) {
		ctx->held = s->held_next;
		s->on_held = false;
		if (s->ack.held) {
			s->ack.held = false;
			s->timer.ack_hold_at = 0;
			s->ack.now = true;
			stream_queue_output(s);
			any = true;
		}
	}
	if (any)
		xvi_sctx__run(ctx);
}

void xvi_sctx__prepare_sleep(struct xvi_stream_ctx *ctx)
{
	xvi_sctx__release_acks(ctx);
	if (ctx->flags & XVI_SCTX_ARM_ON_SLEEP)
		ctx->link.timer_arm(ctx->link.priv, ctx->armed);
}

/*
 * Fire what is due: only the connections whose node is at or before now
 * come up, each once per run.  A connection run_timers leaves with a time
 * still at or before now (a keepalive due before the handshake completed,
 * which it skips) waits for the next run, as it did when every run
 * scanned every connection once; now + 1 keeps this loop from taking it
 * again, and xvi_sctx__next() still reports the time itself.
 */
static void run_due(struct xvi_stream_ctx *ctx)
{
	__u64 now = ctx->now, d;
	struct xvi_tq_node *e;
	struct xvi_stream *s;

	while ((e = xvi_tq__first(&ctx->tq)) && e->at <= now) {
		s = node_stream(e);
		xvi_tq__remove(&ctx->tq, e);
		d = next_deadline(s);
		if (d && d <= now && !run_timers(s))
			continue;	/* freed, out of the queue */
		d = next_deadline(s);
		xvi_tq__set(&ctx->tq, e, d && d <= now ? now + 1 : d);
	}
}

/*
 * Ring the link's doorbell for what the run queued.  A copy-mode AF_XDP
 * kick costs a system call and a pass of the peer's receive path (its
 * NAPI poll, the socket wake-up) whatever it carries, so a bulk sender
 * that kicked once per send call paid it per segment.  While the API
 * corks (its send calls), plain new data waits for more: the doorbell
 * rings once a kernel transmit batch is queued, when anything urgent is
 * (sctx_tx_queued), or once the oldest waited CORK_US; the link's timer
 * covers an application that stops calling, and every other call
 * flushes.
 */
void sctx_flush(struct xvi_stream_ctx *ctx)
{
	if (!ctx->tx_unflushed)
		return;
	if (ctx->cork && !ctx->tx_urgent && ctx->tx_unflushed < CORK_SEGS &&
	    ctx->now - ctx->tx_first_us < CORK_US)
		return;
	ctx->link.tx_flush(ctx->link.priv);
	ctx->tx_unflushed = 0;
	ctx->tx_urgent = false;
}

/*
 * The run at ctx->now, which the caller has just read: a clock read costs
 * tens of ns (more in a guest), and a send call that read it to queue its
 * data, or a pump that read it for its timerfd, need not read it again.
 */
void sctx_run(struct xvi_stream_ctx *ctx)
{
	struct xvi_stream *s;
	__u64 d;

	ctx->runs++;
	run_due(ctx);
	while ((s = ctx->output)) {
		ctx->output = s->output_next;
		s->on_output = false;
		stream_output(s);
		if (s->on_output)	/* link out of buffers: retry next run */
			break;
	}
	sctx_flush(ctx);
	d = xvi_sctx__next(ctx);
	if (ctx->output)
		d = dmin(d, ctx->now + 50);
	if (ctx->tx_unflushed)
		d = dmin(d, ctx->tx_first_us + CORK_US);
	if (d == ctx->armed)
		return;
	ctx->armed = d;
	/*
	 * A context that arms on sleep needs the link's timer only while the
	 * application sleeps, and xvi_sctx__prepare_sleep() hands it the
	 * deadline then.  Programmed from here, the endpoint link's
	 * timerfd_settime (about 10 us in a guest, docs/KERNEL.md fact 61)
	 * ran inside the pump that took in a message, before the
	 * application could answer it: the ACK hold that every message of
	 * a ping-pong starts moves the deadline earlier each time.
	 */
	if (!(ctx->flags & XVI_SCTX_ARM_ON_SLEEP))
		ctx->link.timer_arm(ctx->link.priv, d);
}

void xvi_sctx__run(struct xvi_stream_ctx *ctx)
{
	sctx_now(ctx);
	sctx_run(ctx);
}

void xvi_sctx__run_at(struct xvi_stream_ctx *ctx, __u64 now)
{
	ctx->now = now;
	sctx_run(ctx);
}
