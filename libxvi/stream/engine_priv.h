/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Internals of the stream protocol engine: connection state machine, flow
 * and congestion control, SACK loss recovery, timers.  It never blocks,
 * never allocates on the data path (buffers are allocated when a
 * connection is established) and knows nothing about endpoints: see struct
 * xvi_slink.  What the rest of libxvi uses is stream/engine.h; this header
 * is what the engine's files share:
 *   stream/conn.c      the connection table: ids, lookup, creation and
 *                      freeing, listener queues
 *   stream/output.c    segments out: building one, RST, what to send next
 *   stream/ack.c       an acknowledgment in: snd.una, SACK, cwnd growth
 *   stream/recovery.c  loss detection and repair: pipe, RACK, TLP, PRR
 *   stream/rto.c       the RTT estimate, the retransmission timer and the
 *                      spurious timeout response
 *   stream/state.c     the connection state machine
 *   stream/input.c     a datagram in: demultiplexing, SYN, data, FIN
 *   stream/timers.c    due times and the engine's run (xvi_sctx__run)
 *   stream/tq.c        the timer queue the run takes due connections from
 *   stream/ctx.c       the context: options, creation, freeing, regions
 *   stream/ops.c       the non-blocking stream operations (xvi_ss__*)
 * Names: stream_ acts on a connection, sctx_ on the context, sseg_ on an
 * in-flight segment record.  docs/PROTOCOL.md is the specification.
 */
#ifndef XVI_STREAM_ENGINE_PRIV_H
#define XVI_STREAM_ENGINE_PRIV_H

#include "stream/engine.h"

/*
 * Longest an interactive connection holds the ACK of a PRB data segment for
 * the application's reply to carry (section 4 of PROTOCOL.md): half the
 * peer's probe timeout floor (TLP_MIN_US), so a reply that comes later
 * costs the peer a late ACK, never a needless probe.
 */
#define ACK_HOLD_US	100
#define SYN_TRIES_RCVD	16	/* SYN|ACK sends before a half-open gives up */
#define REO_MIN_US	50	/* reordering window floor: timer granularity */
#define TLP_MIN_US	200	/* probe timeout floor */
#define REO_MULT_MAX	16
/*
 * Doorbell batching while the API corks (timers.c): at most a kernel
 * copy-mode transmit batch (32 descriptors a kick), held at most CORK_US.
 */
#define CORK_SEGS	32
#define CORK_US		50

/* ---- connections (conn.c) ------------------------------------------------ */

__u32 sctx_rand32(struct xvi_stream_ctx *ctx);
struct xvi_stream *sctx_lookup(struct xvi_stream_ctx *ctx, __u32 cid);
void stream_new_cid(struct xvi_stream *s);
struct xvi_stream *stream_new(struct xvi_stream_ctx *ctx, __u32 flags);
int stream_alloc_buffers(struct xvi_stream *s);
void stream_unqueue_output(struct xvi_stream *s);
void stream_unqueue_held(struct xvi_stream *s);
void stream_release_refs(struct xvi_stream *s);
void stream_free(struct xvi_stream *s);
void stream_listener_add(struct xvi_stream *l, struct xvi_stream *c, int which);
void stream_listener_remove(struct xvi_stream *c);
bool sctx_reclaim_time_wait(struct xvi_stream_ctx *ctx);

/* ---- segments out (output.c) --------------------------------------------- */

bool stream_xmit(struct xvi_stream *s, __u8 flags, __u32 seq, __u32 len);
void sctx_send_rst(struct xvi_stream_ctx *ctx, const union xvi_sockaddr *peer, __u32 dcid,
		   __u32 scid, __u32 seq, __u32 ack);
void stream_send_rst(struct xvi_stream *s);
bool stream_send_new(struct xvi_stream *s, __u32 len, __u8 flags);
void stream_output(struct xvi_stream *s);

/* ---- acknowledgments (ack.c) --------------------------------------------- */

void stream_on_ack(struct xvi_stream *s, const struct xvi_shdr *h);

/* ---- loss recovery (recovery.c) ------------------------------------------ */

__u32 stream_pipe(const struct xvi_stream *s);
void stream_arm_tlp(struct xvi_stream *s);
void stream_enter_recovery(struct xvi_stream *s);
void stream_prr_update(struct xvi_stream *s, __u32 delivered);
void stream_rack_detect(struct xvi_stream *s);
void stream_rack_update(struct xvi_stream *s, const struct xvi_sseg *g, __u32 tsecr);
void stream_on_tlp(struct xvi_stream *s);

/* ---- RTT and retransmission timer (rto.c) -------------------------------- */

void stream_rtt_sample(struct xvi_stream *s, __u32 tsecr);
void stream_handshake_rtt_sample(struct xvi_stream *s, __u32 tsecr);
void stream_arm_rto(struct xvi_stream *s);
__u64 stream_syn_rto(const struct xvi_stream *s);
bool stream_on_rto(struct xvi_stream *s);
void stream_rto_spurious(struct xvi_stream *s, __u32 tsecr);

/* ---- state machine (state.c) --------------------------------------------- */

__u32 stream_time_wait_us(const struct xvi_stream *s);
void stream_set_state(struct xvi_stream *s, enum xvi_stream_state st);
bool stream_fail(struct xvi_stream *s, int err);
int stream_rst_error(const struct xvi_stream *s);
void stream_update_state(struct xvi_stream *s);
void stream_established(struct xvi_stream *s, __u16 peer_mss, __u32 wnd);

/* ---- timers and the run (timers.c) --------------------------------------- */

void sctx_flush(struct xvi_stream_ctx *ctx);
void sctx_run(struct xvi_stream_ctx *ctx);

/* ---- small helpers of every file ----------------------------------------- */

/*
 * The link's clock, cached in ctx->now for the rest of the call; while the
 * API layer holds it (@clock_held: it read the clock at the start of one
 * of its calls, which lasts well under the clock's microsecond), the
 * reading it took.
 */
static inline __u64 sctx_now(struct xvi_stream_ctx *ctx)
{
	if (ctx->clock_held)
		return ctx->now;
	return ctx->now = ctx->link.now_us(ctx->link.priv);
}

/*
 * A datagram went into the link's queue.  @urgent: it must leave on this
 * run's doorbell even while the API corks (everything but new data that
 * asks nothing of the peer: ACKs, probes, PRB, FIN, SYN, RST and repairs).
 */
static inline void sctx_tx_queued(struct xvi_stream_ctx *ctx, bool urgent)
{
	if (!ctx->tx_unflushed++)
		ctx->tx_first_us = ctx->now;
	ctx->tx_urgent |= urgent;
}

/* Put on the output list: the next run sends what the connection has. */
static inline void stream_queue_output(struct xvi_stream *s)
{
	if (s->on_output)
		return;
	s->on_output = true;
	s->output_next = s->ctx->output;
	s->ctx->output = s;
}

/*
 * Set one of s->timer's due times (0: off).  The connection's node in the
 * timer queue stays at or before its earliest due time: an earlier time
 * moves the node now, a later one (the keepalive pushed back by every
 * segment, the RTO restarted by every ACK) or 0 leaves it, and the run
 * puts the node at the true time when it comes up (timers.c).
 */
static inline void stream_timer_set(struct xvi_stream *s, __u64 *due, __u64 at)
{
	struct xvi_tq_node *e = &s->timer.node;

	*due = at;
	if (at && (!e->pos || at < e->at))
		xvi_tq__set(&s->ctx->tq, e, at);
}

/* The cumulative ACK we send: the peer's FIN counts once consumed. */
static inline __u32 stream_rcv_ack(const struct xvi_stream *s)
{
	return s->rcv.queue.nxt + (s->rcv.eof ? 1 : 0);
}

/* The receive window we advertise, from the cumulative ACK. */
static inline __u32 stream_rcv_wnd(const struct xvi_stream *s)
{
	__u32 right = xvi_srq__right(&s->rcv.queue), ack = stream_rcv_ack(s), w;

	w = seq_gt(right, ack) ? right - ack : 0;
	/* SOVIA's window w, in bytes: never more than w full segments. */
	if (w > s->ctx->window * s->snd.mss)
		w = s->ctx->window * s->snd.mss;
	return w;
}

static inline bool stream_synchronized(const struct xvi_stream *s)
{
	return s->state >= XVI_SS_ESTABLISHED;
}

static inline bool stream_can_send(const struct xvi_stream *s)
{
	enum xvi_stream_state st = s->state;

	return st == XVI_SS_ESTABLISHED || st == XVI_SS_CLOSE_WAIT ||
	       st == XVI_SS_FIN_WAIT_1 || st == XVI_SS_CLOSING || st == XVI_SS_LAST_ACK;
}

/* One past the segment: a FIN takes one sequence number. */
static inline __u32 sseg_end(const struct xvi_sseg *g)
{
	return g->seq + (g->len ? g->len : 1);
}

/* RFC 6298 (5.3, 5.6): restart so it expires one (backed-off) RTO from now. */
static inline void stream_restart_rto(struct xvi_stream *s)
{
	s->timer.rto_at = 0;
	stream_arm_rto(s);
}

#endif /* XVI_STREAM_ENGINE_PRIV_H */
