// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A datagram in: decoded, a SYN to its listener (the bounded half-open
 * queue), any other segment to its connection by id and peer; the
 * handshake's last steps, RST, then the ACK (ack.c) and the data: the
 * receive queue or a posted MemNet buffer, delayed and held ACKs, FIN.
 */
#include <errno.h>
#include <string.h>
#include "stream/engine_priv.h"

static struct xvi_stream *find_listener(struct xvi_stream_ctx *ctx, __u16 svc)
{
	for (struct xvi_stream *s = ctx->all; s; s = s->next)
		if (s->state == XVI_SS_LISTEN && s->id.service == svc)
			return s;
	return NULL;
}

/*
 * The half-open connection a new SYN may replace when the listener's
 * half-open queue is full: the oldest whose SYN|ACK went unanswered for a
 * whole retransmission timeout (a spoofed source, or a client that gave
 * up).  A younger one's client may have our SYN|ACK and be established
 * already, as may one whose client answered while the accept queue was
 * full: freeing either would answer that client's next segment with RST.
 * NULL: nothing to replace, the SYN is dropped.
 */
static struct xvi_stream *stale_half_open(const struct xvi_stream *l)
{
	for (struct xvi_stream *c = l->listen.half_head; c; c = c->listen.next)
		if (c->timer.syn_tries && !c->listen.answered)
			return c;
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
			stream_timer_set(c, &c->timer.rto_at, ctx->now + stream_syn_rto(c));
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
	 * Overflow drops the SYN, as TCP does by default: the client
	 * retransmits it and gets in once there is room.  The accept queue
	 * full: nothing new until the application accepts.  The half-open
	 * queue (bounded by syn_backlog or the listen backlog, whichever is
	 * larger) full: a flood of SYNs must not exhaust the listener, so a
	 * new SYN replaces a stale half-open connection if there is one.
	 */
	if (l->listen.n_accept >= l->listen.backlog) {
		ctx->stats.syn_dropped++;
		return;
	}
	if (l->listen.n_half >= (ctx->syn_backlog > l->listen.backlog ? ctx->syn_backlog :
				 l->listen.backlog) ||
	    ctx->nconns >= ctx->max_conns) {
		struct xvi_stream *old = stale_half_open(l);

		if (!old) {
			ctx->stats.syn_dropped++;
			return;
		}
		ctx->stats.syn_evicted++;
		stream_free(old);
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
	stream_timer_set(c, &c->timer.rto_at, ctx->now + c->rtt.rto_us);
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
				stream_timer_set(s, &s->timer.delack_at, ctx->now + ctx->delack_us);
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
				/*
				 * On the held list, which release_acks walks
				 * instead of every connection.  Lazy: an ACK
				 * that leaves otherwise leaves the connection
				 * on it, with ack.held false, until that walk.
				 */
				if (!s->on_held) {
					s->on_held = true;
					s->held_next = ctx->held;
					ctx->held = s;
				}
				stream_timer_set(s, &s->timer.ack_hold_at, ctx->now + hold);
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
		stream_timer_set(s, &s->timer.keepalive_at, ctx->now + ctx->ka_idle_us);
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
			s->listen.answered = true;
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
		stream_timer_set(s, &s->timer.close_at, ctx->now + stream_time_wait_us(s));
	stream_update_state(s);
}
