// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Stream protocol engine: connection state machine, flow and congestion
 * control, SACK loss recovery, timers.  It never blocks, never allocates on
 * the data path (buffers are allocated when a connection is established)
 * and knows nothing about endpoints: see struct xvi_slink.
 * docs/PROTOCOL.md is the specification this file implements.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include "stream/engine.h"
#include "pkt/csum.h"
#include "common/opts.h"
#include "common/log.h"

#define MIN_MSS		64
/*
 * Longest an interactive connection holds the ACK of a PRB data segment for
 * the application's reply to carry (section 4 of PROTOCOL.md): half the
 * peer's probe timeout floor (TLP_MIN_US), so a reply that comes later
 * costs the peer a late ACK, never a needless probe.
 */
#define ACK_HOLD_US	100
#define SYN_TRIES_RCVD	16	/* SYN|ACK sends before a half-open gives up */

static inline __u64 sctx_now(struct xvi_stream_ctx *ctx)
{
	return ctx->now = ctx->link.now_us(ctx->link.priv);
}

static __u32 sctx_rand32(struct xvi_stream_ctx *ctx)
{
	/* xorshift64*: ids and sequence numbers need to be unguessable
	 * only against blind off-path injection, not cryptographically. */
	__u64 x = ctx->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	ctx->rng = x;
	return (__u32)((x * 0x2545F4914F6CDD1DULL) >> 32);
}

/* ---- connection table ------------------------------------------------- */

static struct xvi_stream **hslot(struct xvi_stream_ctx *ctx, __u32 cid)
{
	return &ctx->htab[(cid * 2654435761u) & ctx->hmask];
}

static struct xvi_stream *sctx_lookup(struct xvi_stream_ctx *ctx, __u32 cid)
{
	struct xvi_stream *s = *hslot(ctx, cid);

	while (s && s->id.local_cid != cid)
		s = s->hash_next;
	return s;
}

static void unhash(struct xvi_stream *s)
{
	struct xvi_stream **pp;

	if (!s->id.local_cid)
		return;
	for (pp = hslot(s->ctx, s->id.local_cid); *pp; pp = &(*pp)->hash_next)
		if (*pp == s) {
			*pp = s->hash_next;
			break;
		}
	s->id.local_cid = 0;
}

static void stream_new_cid(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	__u32 cid;

	do
		cid = sctx_rand32(ctx);
	while (!cid || sctx_lookup(ctx, cid));
	s->id.local_cid = cid;
	s->hash_next = *hslot(ctx, cid);
	*hslot(ctx, cid) = s;
}

static struct xvi_stream *stream_new(struct xvi_stream_ctx *ctx, __u32 flags)
{
	struct xvi_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ctx = ctx;
	s->flags = flags;
	s->state = XVI_SS_CLOSED;
	s->snd.mss = ctx->mss;
	s->rtt.rto_us = ctx->rto_init_us;
	s->next = ctx->all;
	if (ctx->all)
		ctx->all->prev = s;
	ctx->all = s;
	return s;
}

/* Buffers of a connection that is about to carry data. */
static int stream_alloc_buffers(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	__u32 items = 256;

	if (s->flight.segs)
		return 0;
	s->flight.cap = 64;
	while (s->flight.cap < 4 * ctx->window && s->flight.cap < XVI_SS_MAX_SEGS)
		s->flight.cap <<= 1;
	s->flight.segs = calloc(s->flight.cap, sizeof(*s->flight.segs));
	s->done.cookies = calloc(items, sizeof(*s->done.cookies));
	s->done.cap = items;
	if (!s->flight.segs || !s->done.cookies || xvi_srq__init(&s->rcv.queue, ctx->rcvbuf, 0) ||
	    xvi_ssq__init(&s->snd.queue, ctx->sndbuf, items, s->snd.iss + 1))
		return -ENOMEM;
	return 0;
}

static void stream_listener_remove(struct xvi_stream *s);

static void stream_unqueue_output(struct xvi_stream *s)
{
	struct xvi_stream **pp;

	if (!s->on_output)
		return;
	for (pp = &s->ctx->output; *pp; pp = &(*pp)->output_next)
		if (*pp == s) {
			*pp = s->output_next;
			break;
		}
	s->on_output = false;
}

/*
 * Sends by reference still queued hold their regions: release them (the
 * data will never be acknowledged) and empty the send queue.
 */
static void stream_release_refs(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;

	if (!s->snd.queue.items)
		return;
	for (__u32 i = s->snd.queue.it; i != s->snd.queue.ih; i++) {
		const struct xvi_sq_item *it =
		    &s->snd.queue.items[i & (s->snd.queue.items_cap - 1)];

		if (it->kind == XVI_SQI_REF && it->region >= 0 &&
		    it->region < XVI_SCTX_MAX_REGIONS && ctx->regions[it->region].refs)
			ctx->regions[it->region].refs--;
	}
	xvi_ssq__reset(&s->snd.queue, s->snd.queue.end);
}

static void stream_free(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;

	if (s->memnet.jobs && xvi_mn__stream_gone)
		xvi_mn__stream_gone(s);
	if (s->state != XVI_SS_LISTEN && s->state != XVI_SS_CLOSED)
		ctx->nconns--;
	if (s->state == XVI_SS_LISTEN) {
		/* Children outlive nothing but must not point at us. */
		for (struct xvi_stream *c = ctx->all; c; c = c->next)
			if (c->listen.listener == s) {
				c->listen.listener = NULL;
				c->listen.queue = 0;
			}
	}
	stream_release_refs(s);
	stream_listener_remove(s);
	stream_unqueue_output(s);
	unhash(s);
	if (s->prev)
		s->prev->next = s->next;
	else
		ctx->all = s->next;
	if (s->next)
		s->next->prev = s->prev;
	xvi_srq__free(&s->rcv.queue);
	xvi_ssq__free(&s->snd.queue);
	free(s->flight.segs);
	free(s->done.cookies);
	free(s);
}

/* Listener queues: doubly linked through listen.next/listen.prev. */
static void stream_listener_add(struct xvi_stream *l, struct xvi_stream *c, int which)
{
	struct xvi_stream **head =
	    which == XVI_SL_HALFOPEN ? &l->listen.half_head : &l->listen.accept_head;
	struct xvi_stream **tail =
	    which == XVI_SL_HALFOPEN ? &l->listen.half_tail : &l->listen.accept_tail;

	c->listen.listener = l;
	c->listen.queue = which;
	c->listen.next = NULL;
	c->listen.prev = *tail;
	if (*tail)
		(*tail)->listen.next = c;
	else
		*head = c;
	*tail = c;
	if (which == XVI_SL_HALFOPEN)
		l->listen.n_half++;
	else
		l->listen.n_accept++;
}

static void stream_listener_remove(struct xvi_stream *c)
{
	struct xvi_stream *l = c->listen.listener;
	struct xvi_stream **head, **tail;

	if (!l || !c->listen.queue)
		return;
	head = c->listen.queue == XVI_SL_HALFOPEN ? &l->listen.half_head : &l->listen.accept_head;
	tail = c->listen.queue == XVI_SL_HALFOPEN ? &l->listen.half_tail : &l->listen.accept_tail;
	if (c->listen.prev)
		c->listen.prev->listen.next = c->listen.next;
	else
		*head = c->listen.next;
	if (c->listen.next)
		c->listen.next->listen.prev = c->listen.prev;
	else
		*tail = c->listen.prev;
	if (c->listen.queue == XVI_SL_HALFOPEN)
		l->listen.n_half--;
	else
		l->listen.n_accept--;
	c->listen.queue = 0;
	c->listen.listener = NULL;
}

static void stream_queue_output(struct xvi_stream *s)
{
	if (s->on_output)
		return;
	s->on_output = true;
	s->output_next = s->ctx->output;
	s->ctx->output = s;
}

/* ---- transmit ---------------------------------------------------------- */

static inline __u32 stream_rcv_ack(const struct xvi_stream *s)
{
	return s->rcv.queue.nxt + (s->rcv.eof ? 1 : 0);
}

static __u32 stream_rcv_wnd(const struct xvi_stream *s)
{
	__u32 right = xvi_srq__right(&s->rcv.queue), ack = stream_rcv_ack(s), w;

	w = seq_gt(right, ack) ? right - ack : 0;
	/* SOVIA's window w, in bytes: never more than w full segments. */
	if (w > s->ctx->window * s->snd.mss)
		w = s->ctx->window * s->snd.mss;
	return w;
}

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
static bool stream_xmit(struct xvi_stream *s, __u8 flags, __u32 seq, __u32 len)
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
	ctx->stats.tx_segs++;
	s->stats.segs_sent++;
	s->ack.now = false;
	s->ack.held = false;
	s->timer.ack_hold_at = 0;
	s->ack.delayed = 0;
	s->timer.delack_at = 0;
	return true;
}

static void sctx_send_rst(struct xvi_stream_ctx *ctx, const union xvi_sockaddr *peer,
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
	ctx->stats.tx_rst++;
	ctx->stats.tx_segs++;
}

static void stream_send_rst(struct xvi_stream *s)
{
	if (s->id.peer_cid && s->state != XVI_SS_LISTEN)
		sctx_send_rst(s->ctx, &s->id.peer, s->id.peer_cid, s->id.local_cid, s->snd.nxt,
			      stream_rcv_ack(s));
}

/* RFC 6675 pipe: bytes believed to be in the network. */
static __u32 stream_pipe(const struct xvi_stream *s)
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

static bool stream_synchronized(const struct xvi_stream *s)
{
	return s->state >= XVI_SS_ESTABLISHED;
}

static bool stream_can_send(const struct xvi_stream *s)
{
	enum xvi_stream_state st = s->state;

	return st == XVI_SS_ESTABLISHED || st == XVI_SS_CLOSE_WAIT ||
	       st == XVI_SS_FIN_WAIT_1 || st == XVI_SS_CLOSING || st == XVI_SS_LAST_ACK;
}

/* ---- retransmission timer, RACK, TLP, PRR ------------------------------- */

#define REO_MIN_US	50	/* reordering window floor: timer granularity */
#define TLP_MIN_US	200	/* probe timeout floor */
#define REO_MULT_MAX	16

static inline __u32 sseg_end(const struct xvi_sseg *g)
{
	return g->seq + (g->len ? g->len : 1);
}

/* RFC 8985 "sent after": by transmission time, then by sequence. */
static bool sent_after(__u64 t1, __u32 end1, __u64 t2, __u32 end2)
{
	return t1 > t2 || (t1 == t2 && seq_gt(end1, end2));
}

/* RFC 6298 (5.1): start the timer if it is not running. */
static void stream_arm_rto(struct xvi_stream *s)
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
		s->timer.rto_at = s->ctx->now + rto;
	}
}

/* RFC 6298 (5.3, 5.6): restart so it expires one (backed-off) RTO from now. */
static void stream_restart_rto(struct xvi_stream *s)
{
	s->timer.rto_at = 0;
	stream_arm_rto(s);
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
static void stream_arm_tlp(struct xvi_stream *s)
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
	s->timer.tlp_at = s->ctx->now + pto;
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

static void stream_enter_recovery(struct xvi_stream *s)
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
static void stream_prr_update(struct xvi_stream *s, __u32 delivered)
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
static void stream_rack_detect(struct xvi_stream *s)
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
	s->timer.reo_at = next;
	if (lost) {
		stream_enter_recovery(s);
		stream_queue_output(s);
	}
}

/* A segment was delivered (cumulatively or SACKed): RFC 8985 6.2 step 2. */
static void stream_rack_update(struct xvi_stream *s, const struct xvi_sseg *g, __u32 tsecr)
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

/* Queue @len new bytes as a segment; false if the link had no buffer. */
static bool stream_send_new(struct xvi_stream *s, __u32 len, __u8 flags)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	struct xvi_sseg *g;

	/* An answer to data received within the delayed-ACK time: the
	 * connection is interactive, its next PRB data segment's ACK can wait
	 * for the reply (on_data). */
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

static void stream_output(struct xvi_stream *s)
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
				s->timer.persist_at = ctx->now + s->rtt.rto_us;
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

/* A tail loss probe is due: new data if the window allows, else the last
 * segment again; either way one segment beyond cwnd (RFC 8985 7.3). */
static void stream_on_tlp(struct xvi_stream *s)
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

/* ---- RTT and congestion ------------------------------------------------- */

static void stream_rtt_sample(struct xvi_stream *s, __u32 tsecr)
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
static void stream_handshake_rtt_sample(struct xvi_stream *s, __u32 tsecr)
{
	if (tsecr && tsecr == s->rtt.handshake_tsval)
		stream_rtt_sample(s, tsecr);
}

static void ref_done(void *arg, __u64 cookie, int region)
{
	struct xvi_stream *s = arg;

	if (region >= 0 && region < XVI_SCTX_MAX_REGIONS && s->ctx->regions[region].refs)
		s->ctx->regions[region].refs--;
	if (s->done.head - s->done.tail < s->done.cap)
		s->done.cookies[s->done.head++ % s->done.cap] = cookie;
}

static bool stream_fail(struct xvi_stream *s, int err);

/*
 * The first ACK that advances after a retransmission timeout tells whether
 * the timeout was needed (Eifel detection, RFC 3522, with timestamps): an
 * echo older than the timeout was sent for an original transmission, so
 * nothing was lost, the ACKs were only late (a receiver that was not
 * scheduled for a few milliseconds on a busy host).  Then, as RFC 4015's
 * response: the congestion state before the timeout comes back and the
 * segments the timeout marked lost but not yet resent are not resent.
 */
static void stream_rto_spurious(struct xvi_stream *s, __u32 tsecr)
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
	/* spurious_retrans counts it with the head segment (stream_on_ack). */
	s->recovery.tlp_out = false;
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

static void stream_on_ack(struct xvi_stream *s, const struct xvi_shdr *h)
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

/* SYN and SYN|ACK retransmission interval: backed off, at most rto_max. */
static __u64 stream_syn_rto(const struct xvi_stream *s)
{
	__u64 rto = (__u64)s->rtt.rto_us << (s->rtt.backoff < 6 ? s->rtt.backoff : 6);

	return rto < s->ctx->rto_max_us ? rto : s->ctx->rto_max_us;
}

static bool stream_on_rto(struct xvi_stream *s)
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
		s->timer.rto_at = ctx->now + stream_syn_rto(s);
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

/* ---- state ---------------------------------------------------------------- */

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
static __u32 stream_time_wait_us(const struct xvi_stream *s)
{
	__u32 t = 2 * s->rtt.rto_us;

	return t > s->ctx->linger_us ? t : s->ctx->linger_us;
}

static void stream_set_state(struct xvi_stream *s, enum xvi_stream_state st)
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
		s->timer.close_at = ctx->now + stream_time_wait_us(s);
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
static bool stream_fail(struct xvi_stream *s, int err)
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
static int stream_rst_error(const struct xvi_stream *s)
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

static void stream_update_state(struct xvi_stream *s)
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

static void stream_established(struct xvi_stream *s, __u16 peer_mss, __u32 wnd)
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
	s->timer.keepalive_at = ctx->ka_cnt ? ctx->now + ctx->ka_idle_us : 0;
	stream_set_state(s, XVI_SS_ESTABLISHED);
}

/* ---- input ---------------------------------------------------------------- */

/*
 * The table is full: end the TIME_WAIT connection closest to its end, if
 * any (ids keep a later connection safe from its old segments; what is lost
 * is only a repeated ACK of a retransmitted FIN, as when a TCP stack drops
 * TIME_WAIT sockets beyond its limit).  Returns true if one was ended.
 */
static bool sctx_reclaim_time_wait(struct xvi_stream_ctx *ctx)
{
	struct xvi_stream *s, *old = NULL;

	for (s = ctx->all; s; s = s->next)
		if (s->state == XVI_SS_TIME_WAIT &&
		    (!old || s->timer.close_at < old->timer.close_at))
			old = s;
	if (!old)
		return false;
	stream_fail(old, 0);
	return true;
}

static struct xvi_stream *find_listener(struct xvi_stream_ctx *ctx, __u16 svc)
{
	for (struct xvi_stream *s = ctx->all; s; s = s->next)
		if (s->state == XVI_SS_LISTEN && s->id.service == svc)
			return s;
	return NULL;
}

static void on_syn(struct xvi_stream_ctx *ctx, const union xvi_sockaddr *peer,
		   const struct xvi_shdr *h)
{
	struct xvi_stream *l = find_listener(ctx, h->svc), *c;

	if (!l) {
		ctx->stats.rx_no_conn++;
		sctx_send_rst(ctx, peer, h->scid, 0, 0, h->seq + 1);
		return;
	}
	/*
	 * A retransmitted (or duplicated) SYN of a connection we already
	 * have: same peer, same id, same initial sequence number.  Every
	 * connection counts, not only those still in the listener's queues:
	 * a copy that arrives after the application accepted the connection
	 * must not open a second one (whose SYN|ACK the client would answer
	 * with RST).  Half-open: our SYN|ACK was lost, send it again, echoing
	 * this copy's tsval (RFC 7323) so the client's first RTT sample is
	 * not inflated by its retransmission timeout.  Otherwise the copy is
	 * old: ACK it, as TCP does.
	 */
	for (c = ctx->all; c; c = c->next) {
		if (c->state == XVI_SS_LISTEN || c->state == XVI_SS_CLOSED ||
		    c->id.peer_cid != h->scid || c->rcv.irs != h->seq ||
		    !xvi_sockaddr_eq(&c->id.peer, peer))
			continue;
		if (c->state == XVI_SS_SYN_RCVD) {
			if ((__s32)(h->tsval - c->rcv.ts_recent) > 0)
				c->rcv.ts_recent = h->tsval;
			stream_xmit(c, XVI_SF_SYN | XVI_SF_ACK, c->snd.iss, 0);
			/* A retransmission: it gets a whole (backed-off) RTO. */
			c->timer.rto_at = ctx->now + stream_syn_rto(c);
		} else {
			c->ack.now = true;
			stream_queue_output(c);
		}
		return;
	}
	/* TIME_WAIT gives way to new connections when the table is full. */
	if (ctx->nconns >= ctx->max_conns)
		sctx_reclaim_time_wait(ctx);
	/*
	 * Bounded half-open queue: a flood of SYNs evicts the oldest
	 * half-open connection instead of growing, so it cannot exhaust
	 * the listener; a genuine client whose entry was evicted
	 * retransmits its SYN.
	 */
	if (l->listen.n_half >= ctx->syn_backlog || ctx->nconns >= ctx->max_conns) {
		if (!l->listen.half_head) {
			ctx->stats.accept_overflow++;
			return;
		}
		ctx->stats.syn_evicted++;
		stream_free(l->listen.half_head);
	}
	c = stream_new(ctx, l->flags);
	if (!c)
		return;
	stream_new_cid(c);
	c->id.peer = *peer;
	c->id.service = h->svc;
	c->id.peer_cid = h->scid;
	c->rcv.irs = h->seq;
	c->snd.iss = ctx->link.iss ? ctx->link.iss : sctx_rand32(ctx);
	c->rcv.ts_recent = h->tsval;
	c->snd.peer_mss = h->mss;
	c->snd.peer_wnd = h->wnd;
	if (c->snd.mss > h->mss)
		c->snd.mss = h->mss;
	stream_set_state(c, XVI_SS_SYN_RCVD);
	c->snd.una_since = ctx->now;
	stream_listener_add(l, c, XVI_SL_HALFOPEN);
	stream_xmit(c, XVI_SF_SYN | XVI_SF_ACK, c->snd.iss, 0);
	c->timer.rto_at = ctx->now + c->rtt.rto_us;
}

static void on_data(struct xvi_stream *s, const struct xvi_shdr *h, const __u8 *data)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	bool dup = false;
	__u32 adv = 0, holes = s->rcv.queue.nr;

	/*
	 * RFC 7323: echo the timestamp of the earliest segment not yet
	 * acknowledged, and of any segment at or below what we acknowledged
	 * (a duplicate too): an ACK answering a spurious retransmission then
	 * carries a fresh timestamp, not the one of data that arrived long
	 * ago, which would blow up the peer's RTT estimate.
	 */
	if (seq_le(h->seq, s->ack.last_sent) && (__s32)(h->tsval - s->rcv.ts_recent) >= 0)
		s->rcv.ts_recent = h->tsval;
	if (h->len) {
		if (s->rcv.eof) {
			dup = true;
		} else {
			__u32 seq = h->seq, len = h->len, n = 0;

			/*
			 * MemNet direct placement: the next in-order bytes go
			 * from the segment (in the endpoint's UMEM) straight
			 * into the posted buffer when nothing is waiting in the
			 * ring ahead of them; one copy instead of two.
			 */
			if (s->memnet.post && seq == s->rcv.queue.nxt &&
			    !xvi_srq__ready(&s->rcv.queue) && !s->orphan && !s->rcv.shut &&
			    s->memnet.post_done < s->memnet.post_len) {
				n = s->memnet.post_len - s->memnet.post_done;
				if (n > len)
					n = len;
				memcpy(s->memnet.post + s->memnet.post_done, data, n);
				s->memnet.post_done += n;
				s->stats.bytes_direct += n;
				adv = xvi_srq__skip(&s->rcv.queue, n);
			}
			if (len > n) {
				adv += xvi_srq__insert(&s->rcv.queue, seq + n, data + n, len - n,
						       &dup);
				if (n)
					dup = false;
			}
		}
		if (dup) {
			s->stats.dup_segs++;
			s->ack.now = true;	/* the peer missed our ACK */
		} else if (!adv || s->rcv.queue.nr || holes) {
			/* hole, or filling one (RFC 5681 4.2): ACK with SACK now */
			s->ack.now = true;
		} else {
			s->ack.delayed++;
			if (s->ack.delayed >= ctx->ack_thr)
				s->ack.now = true;
			else if (!s->timer.delack_at)
				s->timer.delack_at = ctx->now + ctx->delack_us;
		}
		if (adv) {
			s->stats.bytes_received += adv;
			s->ack.data_in_us = ctx->now;
		}
		if (s->orphan || s->rcv.shut)
			xvi_srq__read(&s->rcv.queue, NULL, ~0u);
	}
	if (h->flags & XVI_SF_FIN) {
		s->rcv.fin_seq = h->seq + h->len;
		s->rcv.fin_known = true;
		s->ack.now = true;
	}
	if (s->rcv.fin_known && !s->rcv.eof && s->rcv.queue.nxt == s->rcv.fin_seq) {
		s->rcv.eof = true;
		s->ack.now = true;
	}
	if (h->flags & XVI_SF_PRB) {
		/*
		 * Piggybacking: new in-order data with nothing else asking for
		 * an ACK, on a connection whose application answers data with
		 * data: the reply carries the ACK (one segment each way per
		 * exchange instead of two), or the ACK leaves when the hold
		 * ends (at most ACK_HOLD_US, or when the application sleeps).
		 */
		if (h->len && !s->ack.now && s->ack.interactive && !s->orphan && !s->rcv.shut &&
		    stream_can_send(s)) {
			if (!s->ack.held) {
				__u32 hold = ctx->delack_us < ACK_HOLD_US ? ctx->delack_us
									   : ACK_HOLD_US;

				s->ack.held = true;
				s->timer.ack_hold_at = ctx->now + hold;
			}
		} else {
			s->ack.now = true;
		}
	}
	if (s->ack.now)
		stream_queue_output(s);
}

void xvi_sctx__input(struct xvi_stream_ctx *ctx, const union xvi_sockaddr *peer,
		     const void *buf, __u32 len, bool verified)
{
	struct xvi_shdr h;
	struct xvi_stream *s;
	int hl;

	hl = xvi_shdr__decode(&h, buf, len, verified);
	if (hl < 0) {
		if (hl == -EBADMSG)
			ctx->stats.rx_bad_integrity++;
		else
			ctx->stats.rx_malformed++;
		return;
	}
	ctx->stats.rx_segs++;
	sctx_now(ctx);
	if ((h.flags & XVI_SF_SYN) && !(h.flags & XVI_SF_ACK)) {
		on_syn(ctx, peer, &h);
		return;
	}
	s = sctx_lookup(ctx, h.dcid);
	if (!s || !xvi_sockaddr_eq(&s->id.peer, peer) || s->state == XVI_SS_LISTEN ||
	    (s->state != XVI_SS_SYN_SENT && s->id.peer_cid != h.scid) ||
	    s->state == XVI_SS_CLOSED) {
		if (!(h.flags & XVI_SF_RST)) {
			ctx->stats.rx_no_conn++;
			sctx_send_rst(ctx, peer, h.scid, h.dcid, h.ack, h.seq + h.len);
		}
		return;
	}
	s->stats.segs_received++;
	if (s->state == XVI_SS_SYN_SENT) {
		if (h.ack != s->snd.iss + 1)
			return;
		if (h.flags & XVI_SF_RST) {
			stream_fail(s, ECONNREFUSED);
			return;
		}
		if (!(h.flags & XVI_SF_SYN))
			return;
		s->id.peer_cid = h.scid;
		s->rcv.irs = h.seq;
		xvi_srq__reset(&s->rcv.queue, h.seq + 1);
		s->rcv.ts_recent = h.tsval;
		stream_handshake_rtt_sample(s, h.tsecr);
		stream_established(s, h.mss, h.wnd);
		s->ack.now = true;
		stream_queue_output(s);
		return;
	}
	s->timer.keepalive_sent = 0;
	if (ctx->ka_cnt && s->state != XVI_SS_TIME_WAIT)
		s->timer.keepalive_at = ctx->now + ctx->ka_idle_us;
	if (h.flags & XVI_SF_RST) {
		stream_fail(s, stream_rst_error(s));
		return;
	}
	if (h.flags & XVI_SF_SYN) {
		/*
		 * Our ACK of the SYN|ACK was lost.  RFC 7323: the copy is at
		 * or below what we acknowledged, so the ACK echoes its tsval;
		 * echoing the first copy's would inflate the peer's first RTT
		 * sample by its retransmission timeout.
		 */
		if (h.seq == s->rcv.irs && (__s32)(h.tsval - s->rcv.ts_recent) > 0)
			s->rcv.ts_recent = h.tsval;
		s->ack.now = true;
		stream_queue_output(s);
		return;
	}
	if (s->state == XVI_SS_SYN_RCVD) {
		struct xvi_stream *l = s->listen.listener;

		if (h.ack != s->snd.iss + 1)
			return;
		if (l && l->listen.n_accept >= l->listen.backlog) {
			/* Accept queue full: stay half-open, the peer retries. */
			ctx->stats.accept_overflow++;
			return;
		}
		if (stream_alloc_buffers(s)) {
			stream_send_rst(s);
			stream_fail(s, ENOMEM);
			return;
		}
		xvi_srq__reset(&s->rcv.queue, s->rcv.irs + 1);
		/* The ACK echoes our SYN|ACK: the passive side's first RTT. */
		stream_handshake_rtt_sample(s, h.tsecr);
		stream_established(s, s->snd.peer_mss, h.wnd);
		if (l) {
			stream_listener_remove(s);
			stream_listener_add(l, s, XVI_SL_ACCEPTQ);
		}
	}
	stream_on_ack(s, &h);
	on_data(s, &h, (const __u8 *)buf + hl);
	/* RFC 9293 3.10.7.4: a retransmitted FIN in TIME_WAIT is acknowledged
	 * again (on_data) and restarts the timer: the peer missed our ACK. */
	if ((h.flags & XVI_SF_FIN) && s->state == XVI_SS_TIME_WAIT)
		s->timer.close_at = ctx->now + stream_time_wait_us(s);
	stream_update_state(s);
}

/* ---- timers --------------------------------------------------------------- */

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
		if (s->state == XVI_SS_TIME_WAIT)
			return stream_fail(s, 0);
		if (s->orphan) {
			/* Linger over: the peer did not finish, abort. */
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

__u32 xvi_sctx__orphans(const struct xvi_stream_ctx *ctx)
{
	__u32 n = 0;

	for (const struct xvi_stream *s = ctx->all; s; s = s->next)
		n += s->orphan;
	return n;
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

/* ---- context ---------------------------------------------------------------- */

/*
 * SOVIA's t = 16 suits its w = 32.  A larger window lets the ACKs space out
 * as well (t = w / 4, at most 64): every ACK frees t segments, so t is also
 * the batch a window-limited sender hands the link per doorbell, and on a
 * copy-mode AF_XDP link the per-batch cost (system call, NAPI run, wake-up
 * of the receiving socket) is a good part of the sender's time.  PRB still
 * asks for an ACK at once when the sender has to wait (window, cwnd, end
 * of data), and the delayed-ACK timer bounds the rest.
 */
static __u32 default_ack_thr(__u32 window)
{
	__u32 t = window / 4;

	if (t < 16)
		t = 16;
	if (t > 64)
		t = 64;
	return t < window ? t : window;
}

struct xvi_stream_ctx *xvi_sctx__new(const struct xvi_slink *link,
				     const struct xvi_stream_ctx_opts *opts)
{
	struct xvi_stream_ctx *ctx;
	__u32 max_mss;

	if (!OPTS_VALID(opts, xvi_stream_ctx_opts)) {
		errno = EINVAL;
		return NULL;
	}
	if (link->mtu < XVI_SW_MAX_HDR + MIN_MSS) {
		pr_warn("stream: link payload %u too small for segments\n", link->mtu);
		errno = EINVAL;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	ctx->link = *link;
	max_mss = link->mtu - XVI_SW_MAX_HDR;
	if (max_mss > 0xffff)
		max_mss = 0xffff;
	ctx->flags = OPTS_GET(opts, flags, 0);
	ctx->max_conns = OPTS_GET(opts, max_conns, 0) ?: 1024;
	/*
	 * SOVIA's w = 32 by default.  Bulk transfers on fast links want more:
	 * 32 segments hold only 30 us of data at 12 Gbit/s, so a receiver's
	 * scheduling hiccup stalls the sender (PROTOCOL.md section 10).
	 */
	ctx->window = OPTS_GET(opts, window, 0) ?: 32;
	ctx->ack_thr = OPTS_GET(opts, ack_threshold, 0) ?: default_ack_thr(ctx->window);
	ctx->delack_us = OPTS_GET(opts, delack_us, 0) ?: 2000;
	ctx->mss = OPTS_GET(opts, mss, 0) ?: max_mss;
	ctx->copy_thr = OPTS_GET(opts, copy_threshold, 0) ?: 2048;
	ctx->rto_init_us = (OPTS_GET(opts, rto_init_ms, 0) ?: 200) * 1000;
	ctx->rto_min_us = (OPTS_GET(opts, rto_min_ms, 0) ?: 5) * 1000;
	ctx->rto_max_us = (OPTS_GET(opts, rto_max_ms, 0) ?: 2000) * 1000;
	ctx->user_timeout_us = (OPTS_GET(opts, user_timeout_ms, 0) ?: 10000) * 1000;
	ctx->ka_idle_us = (OPTS_GET(opts, keepalive_idle_ms, 0) ?: 2000) * 1000;
	ctx->ka_intvl_us = (OPTS_GET(opts, keepalive_intvl_ms, 0) ?: 500) * 1000;
	ctx->ka_cnt = OPTS_GET(opts, keepalive_cnt, 0) ?: 6;
	if (ctx->ka_cnt == ~0u)
		ctx->ka_cnt = 0;	/* disabled */
	ctx->linger_us = (OPTS_GET(opts, linger_ms, 0) ?: 2000) * 1000;
	ctx->syn_backlog = OPTS_GET(opts, syn_backlog, 0) ?: 64;
	ctx->cc = OPTS_GET(opts, cc, NULL) ?: xvi_stream_cc_newreno();
	if (ctx->mss < MIN_MSS || ctx->mss > max_mss || ctx->window > 4096 ||
	    ctx->ack_thr > ctx->window || !ctx->cc->init || !ctx->cc->on_ack ||
	    !ctx->cc->on_event || ctx->rto_min_us > ctx->rto_max_us) {
		pr_warn("stream: bad options: mss %u (64..%u), window %u (<= 4096), ack_threshold %u (<= window), rto_min <= rto_max, cc ops complete\n",
			ctx->mss, max_mss, ctx->window, ctx->ack_thr);
		free(ctx);
		errno = EINVAL;
		return NULL;
	}
	ctx->rcvbuf = OPTS_GET(opts, rcvbuf, 0) ?: ctx->window * ctx->mss;
	ctx->sndbuf = OPTS_GET(opts, sndbuf, 0) ?: 2 * ctx->rcvbuf;
	if (ctx->rcvbuf < ctx->mss || ctx->sndbuf < ctx->mss || ctx->rcvbuf > (1u << 30) ||
	    ctx->sndbuf > (1u << 30)) {
		pr_warn("stream: rcvbuf/sndbuf must be between mss (%u) and 1 GiB\n", ctx->mss);
		free(ctx);
		errno = EINVAL;
		return NULL;
	}
	ctx->hmask = 1023;
	while (ctx->hmask + 1 < ctx->max_conns)
		ctx->hmask = ctx->hmask * 2 + 1;
	ctx->htab = calloc(ctx->hmask + 1, sizeof(*ctx->htab));
	if (!ctx->htab) {
		free(ctx);
		errno = ENOMEM;
		return NULL;
	}
	ctx->rng = link->seed;
	if (!ctx->rng && getrandom(&ctx->rng, sizeof(ctx->rng), GRND_NONBLOCK) != sizeof(ctx->rng))
		ctx->rng = (__u64)(unsigned long)ctx ^ link->now_us(link->priv);
	if (!ctx->rng)
		ctx->rng = 0x9e3779b97f4a7c15ULL;
	sctx_now(ctx);
	return ctx;
}

void xvi_sctx__free(struct xvi_stream_ctx *ctx)
{
	if (!ctx)
		return;
	while (ctx->all)
		stream_free(ctx->all);
	free(ctx->htab);
	free(ctx);
}

int xvi_sctx__region_of(const struct xvi_stream_ctx *ctx, const void *p, size_t len)
{
	const __u8 *b = p;

	for (int i = 0; i < XVI_SCTX_MAX_REGIONS; i++) {
		const struct xvi_sregion *r = &ctx->regions[i];

		if (r->used && b >= r->addr && len <= r->len &&
		    (size_t)(b - r->addr) <= r->len - len)
			return i;
	}
	return -1;
}

/* ---- stream operations (non-blocking) ----------------------------------- */

struct xvi_stream *xvi_ss__socket(struct xvi_stream_ctx *ctx, __u32 flags)
{
	struct xvi_stream *s = stream_new(ctx, flags);

	if (!s)
		errno = ENOMEM;
	return s;
}

int xvi_ss__listen(struct xvi_stream *s, int backlog)
{
	if (s->state != XVI_SS_CLOSED || s->id.peer_cid)
		return -EINVAL;
	for (struct xvi_stream *o = s->ctx->all; o; o = o->next)
		if (o != s && o->state == XVI_SS_LISTEN && o->id.service == s->id.service)
			return -EADDRINUSE;
	s->listen.backlog = backlog > 0 ? (__u32)backlog : 64;
	s->state = XVI_SS_LISTEN;
	return 0;
}

struct xvi_stream *xvi_ss__accept(struct xvi_stream *s, union xvi_sockaddr *peer)
{
	struct xvi_stream *c;

	if (s->state != XVI_SS_LISTEN) {
		errno = EINVAL;
		return NULL;
	}
	c = s->listen.accept_head;
	if (!c) {
		errno = EAGAIN;
		return NULL;
	}
	stream_listener_remove(c);
	c->flags = s->flags;
	if (peer)
		*peer = c->id.peer;
	return c;
}

int xvi_ss__connect(struct xvi_stream *s, const union xvi_sockaddr *peer, __u16 svc)
{
	struct xvi_stream_ctx *ctx = s->ctx;

	if (s->state == XVI_SS_SYN_SENT)
		return -EALREADY;
	if (s->state != XVI_SS_CLOSED || s->id.peer_cid)
		return -EISCONN;
	if (ctx->nconns >= ctx->max_conns && !sctx_reclaim_time_wait(ctx))
		return -EAGAIN;
	sctx_now(ctx);
	s->id.peer = *peer;
	s->id.service = svc;
	s->snd.iss = ctx->link.iss ? ctx->link.iss : sctx_rand32(ctx);
	if (!s->id.local_cid)
		stream_new_cid(s);
	if (stream_alloc_buffers(s))
		return -ENOMEM;
	stream_set_state(s, XVI_SS_SYN_SENT);
	s->snd.una_since = ctx->now;
	stream_xmit(s, XVI_SF_SYN, s->snd.iss, 0);
	s->timer.rto_at = ctx->now + s->rtt.rto_us;
	xvi_sctx__run(ctx);
	return -EINPROGRESS;
}

static int pending_error(struct xvi_stream *s)
{
	if (s->err)
		return -s->err;
	return 0;
}

ssize_t xvi_ss__send(struct xvi_stream *s, const void *buf, size_t len)
{
	__u32 n;

	if (s->err)
		return pending_error(s);
	if (s->state == XVI_SS_SYN_SENT || s->state == XVI_SS_SYN_RCVD)
		return -EAGAIN;
	if (s->state == XVI_SS_LISTEN || (s->state == XVI_SS_CLOSED && !s->id.peer_cid))
		return -ENOTCONN;
	if (s->snd.fin_queued || !stream_can_send(s))
		return -EPIPE;
	if (!len)
		return 0;
	n = xvi_ssq__push_copy(&s->snd.queue, buf, len > (1u << 30) ? (1u << 30) : (__u32)len);
	if (!n)
		return -EAGAIN;
	sctx_now(s->ctx);
	stream_output(s);
	xvi_sctx__run(s->ctx);
	return n;
}

ssize_t xvi_ss__send_ref(struct xvi_stream *s, int region, size_t off, size_t len,
			 __u64 cookie)
{
	struct xvi_sregion *r;
	int err;

	if (region < 0 || region >= XVI_SCTX_MAX_REGIONS || !s->ctx->regions[region].used)
		return -EINVAL;
	r = &s->ctx->regions[region];
	if (off > r->len || len > r->len - off || !len || len > (1u << 30))
		return -EINVAL;
	if (s->err)
		return pending_error(s);
	if (s->state == XVI_SS_SYN_SENT || s->state == XVI_SS_SYN_RCVD)
		return -EAGAIN;
	if (s->snd.fin_queued || !stream_can_send(s))
		return -EPIPE;
	/* Keep a completion slot free for every reference in the queue. */
	if (s->done.head - s->done.tail + (s->snd.queue.ih - s->snd.queue.it) >= s->done.cap)
		return -EAGAIN;
	err = xvi_ssq__push_ref(&s->snd.queue, r->addr + off, (__u32)len, region, cookie);
	if (err)
		return err;
	r->refs++;
	sctx_now(s->ctx);
	stream_output(s);
	xvi_sctx__run(s->ctx);
	return len;
}

int xvi_ss__reap(struct xvi_stream *s, __u64 *cookies, int max)
{
	int n = 0;

	while (n < max && s->done.tail != s->done.head)
		cookies[n++] = s->done.cookies[s->done.tail++ % s->done.cap];
	return n;
}

ssize_t xvi_ss__recv(struct xvi_stream *s, void *buf, size_t len)
{
	__u32 n, before;

	if (!s->flight.segs)
		return s->err ? pending_error(s) : -ENOTCONN;
	before = stream_rcv_wnd(s);
	n = xvi_srq__read(&s->rcv.queue, buf, len > (1u << 30) ? (1u << 30) : (__u32)len);
	if (n) {
		/* Window update once the window opened by a good part. */
		__u32 w = stream_rcv_wnd(s);

		if (stream_synchronized(s) && !s->rcv.eof &&
		    (before < s->snd.mss || w - before >= s->ctx->rcvbuf / 4) &&
		    seq_gt(stream_rcv_ack(s) + w, s->ack.wnd_right)) {
			s->ack.now = true;
			stream_queue_output(s);
		}
	}
	/* SOVIA: the application turning to receive pushes combined data. */
	if (s->snd.queue.end != s->snd.nxt && stream_can_send(s)) {
		__u32 f = s->flags;

		s->flags |= XVI_STREAM_NODELAY;
		sctx_now(s->ctx);
		stream_output(s);
		s->flags = f;
	}
	if (n || s->on_output)
		xvi_sctx__run(s->ctx);
	if (n)
		return n;
	if (s->rcv.eof || s->rcv.shut)
		return 0;
	if (s->err)
		return pending_error(s);
	if (s->state == XVI_SS_CLOSED)
		return 0;
	return -EAGAIN;
}

int xvi_ss__shutdown(struct xvi_stream *s, int how)
{
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return -EINVAL;
	if (!stream_synchronized(s))
		return s->state == XVI_SS_CLOSED && s->err ? pending_error(s) : -ENOTCONN;
	if (how != SHUT_WR) {
		s->rcv.shut = true;
		xvi_srq__read(&s->rcv.queue, NULL, ~0u);
	}
	if (how != SHUT_RD && !s->snd.fin_queued) {
		s->snd.fin_queued = true;
		if (s->state == XVI_SS_ESTABLISHED)
			stream_set_state(s, XVI_SS_FIN_WAIT_1);
		else if (s->state == XVI_SS_CLOSE_WAIT)
			stream_set_state(s, XVI_SS_LAST_ACK);
		sctx_now(s->ctx);
		stream_queue_output(s);
		xvi_sctx__run(s->ctx);
	}
	return 0;
}

int xvi_ss__abort(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;

	sctx_now(ctx);
	if (s->state == XVI_SS_LISTEN) {
		struct xvi_stream *c;

		while ((c = s->listen.half_head) || (c = s->listen.accept_head)) {
			stream_send_rst(c);
			stream_free(c);
		}
	} else if (s->state != XVI_SS_CLOSED && s->state != XVI_SS_TIME_WAIT) {
		stream_send_rst(s);
	}
	stream_free(s);
	ctx->link.tx_flush(ctx->link.priv);
	return 0;
}

int xvi_ss__close(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;

	sctx_now(ctx);
	switch (s->state) {
	case XVI_SS_LISTEN:
	case XVI_SS_SYN_SENT:
	case XVI_SS_SYN_RCVD:
		return xvi_ss__abort(s);
	case XVI_SS_CLOSED:
	case XVI_SS_TIME_WAIT:
		/* TIME_WAIT finishes on its own; CLOSED is done. */
		if (s->state == XVI_SS_TIME_WAIT) {
			s->orphan = true;
			return 0;
		}
		stream_free(s);
		return 0;
	default:
		break;
	}
	if (xvi_srq__ready(&s->rcv.queue) && !s->rcv.shut)
		return xvi_ss__abort(s);	/* unread data: RST, as TCP */
	s->orphan = true;
	s->timer.close_at = ctx->now + ctx->linger_us;
	if (!s->snd.fin_queued) {
		s->snd.fin_queued = true;
		if (s->state == XVI_SS_ESTABLISHED)
			stream_set_state(s, XVI_SS_FIN_WAIT_1);
		else if (s->state == XVI_SS_CLOSE_WAIT)
			stream_set_state(s, XVI_SS_LAST_ACK);
	}
	stream_queue_output(s);
	xvi_sctx__run(ctx);
	return 0;
}

void xvi_ss__kick(struct xvi_stream *s)
{
	sctx_now(s->ctx);
	stream_queue_output(s);
	xvi_sctx__run(s->ctx);
}

short xvi_ss__events(const struct xvi_stream *s)
{
	short ev = 0;

	if (s->state == XVI_SS_LISTEN)
		return s->listen.accept_head ? POLLIN : 0;
	if (s->flight.segs && (xvi_srq__ready(&s->rcv.queue) || s->rcv.eof || s->rcv.shut))
		ev |= POLLIN;
	if (stream_can_send(s) && !s->snd.fin_queued && xvi_ssq__room(&s->snd.queue) &&
	    s->snd.queue.ih - s->snd.queue.it < s->snd.queue.items_cap)
		ev |= POLLOUT;
	if (s->err)
		ev |= POLLERR | POLLIN | POLLOUT;
	if (s->state == XVI_SS_CLOSED && s->id.peer_cid)
		ev |= POLLHUP;
	return ev;
}
