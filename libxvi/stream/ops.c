// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The non-blocking stream operations (engine.h: xvi_ss__*): socket, listen,
 * accept, connect, send (copied or by reference), recv, shutdown, close,
 * abort, poll events.  stream/api.c adds waiting.
 */
#include <errno.h>
#include <sys/socket.h>
#include "stream/engine_priv.h"

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
	stream_timer_set(s, &s->timer.rto_at, ctx->now + s->rtt.rto_us);
	xvi_sctx__run(ctx);
	return -EINPROGRESS;
}

static int pending_error(struct xvi_stream *s)
{
	if (s->err)
		return -s->err;
	return 0;
}

/* Can the application queue data now?  0, or what send() returns instead. */
static int send_check(struct xvi_stream *s)
{
	if (s->err)
		return pending_error(s);
	if (s->state == XVI_SS_SYN_SENT || s->state == XVI_SS_SYN_RCVD)
		return -EAGAIN;
	if (s->state == XVI_SS_LISTEN || (s->state == XVI_SS_CLOSED && !s->id.peer_cid))
		return -ENOTCONN;
	if (s->snd.fin_queued || !stream_can_send(s))
		return -EPIPE;
	return 0;
}

/* New bytes were queued: send what the window allows (unless held). */
static void send_queued(struct xvi_stream *s)
{
	if (s->snd.held)
		return;
	sctx_now(s->ctx);
	stream_output(s);
	sctx_run(s->ctx);
}

ssize_t xvi_ss__send(struct xvi_stream *s, const void *buf, size_t len)
{
	int err = send_check(s);
	__u32 n;

	if (err)
		return err;
	if (!len)
		return 0;
	n = xvi_ssq__push_copy(&s->snd.queue, buf, len > (1u << 30) ? (1u << 30) : (__u32)len);
	if (!n)
		return -EAGAIN;
	send_queued(s);
	return n;
}

ssize_t xvi_ss__send_alloc(struct xvi_stream *s, void **buf, size_t len)
{
	int err = send_check(s);
	__u32 n;

	if (err)
		return err;
	n = xvi_ssq__reserve(&s->snd.queue, buf);
	if (!n)
		return -EAGAIN;
	if (len && n > len)
		n = (__u32)len;
	/* The ring keeps the whole contiguous space; commit checks against it. */
	return n;
}

int xvi_ss__send_commit(struct xvi_stream *s, size_t len)
{
	int err;

	if (len > s->snd.queue.reserved)
		return -EINVAL;
	err = send_check(s);
	if (err) {
		s->snd.queue.reserved = 0;
		return err;
	}
	err = xvi_ssq__commit(&s->snd.queue, (__u32)len);
	if (!err && len)
		send_queued(s);
	return err;
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
	send_queued(s);
	return len;
}

void xvi_ss__send_hold(struct xvi_stream *s, bool hold)
{
	s->snd.held = hold;
	if (!hold && s->snd.queue.end != s->snd.nxt)
		send_queued(s);
}

int xvi_ss__reap(struct xvi_stream *s, __u64 *cookies, int max)
{
	int n = 0;

	while (n < max && s->done.tail != s->done.head)
		cookies[n++] = s->done.cookies[s->done.tail++ % s->done.cap];
	return n;
}

/*
 * The application consumed @n bytes (the window was @before): a window
 * update when it opened by a good part, and, SOVIA, the application
 * turning to receive pushes combined data.  Then what recv() returns.
 */
static ssize_t recv_done(struct xvi_stream *s, __u32 before, __u32 n)
{
	if (n) {
		__u32 w = stream_rcv_wnd(s);

		if (stream_synchronized(s) && !s->rcv.eof &&
		    (before < s->snd.mss || w - before >= s->ctx->rcvbuf / 4) &&
		    seq_gt(stream_rcv_ack(s) + w, s->ack.wnd_right)) {
			s->ack.now = true;
			stream_queue_output(s);
		}
	}
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

ssize_t xvi_ss__recv(struct xvi_stream *s, void *buf, size_t len)
{
	__u32 n, before;

	if (!s->flight.segs)
		return s->err ? pending_error(s) : -ENOTCONN;
	before = stream_rcv_wnd(s);
	n = xvi_srq__read(&s->rcv.queue, buf, len > (1u << 30) ? (1u << 30) : (__u32)len);
	return recv_done(s, before, n);
}

int xvi_ss__recv_zc(struct xvi_stream *s, struct iovec *iov, int max)
{
	int n;
	ssize_t r;

	if (!s->flight.segs)
		return s->err ? pending_error(s) : -ENOTCONN;
	n = xvi_srq__peek(&s->rcv.queue, iov, max, ~0u);
	if (n)
		return n;
	r = recv_done(s, stream_rcv_wnd(s), 0);
	return r < 0 ? (int)r : 0;
}

int xvi_ss__recv_release(struct xvi_stream *s, size_t len)
{
	__u32 before;

	if (!s->flight.segs)
		return s->err ? pending_error(s) : -ENOTCONN;
	if (len > xvi_srq__ready(&s->rcv.queue))
		return -EINVAL;
	before = stream_rcv_wnd(s);
	xvi_srq__read(&s->rcv.queue, NULL, (__u32)len);
	recv_done(s, before, (__u32)len);
	return 0;
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
		sctx_run(s->ctx);
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
	sctx_flush(ctx);
	return 0;
}

void xvi_ss__reset(struct xvi_stream *s, int err)
{
	struct xvi_stream_ctx *ctx = s->ctx;

	sctx_now(ctx);
	if (s->state == XVI_SS_CLOSED) {
		stream_release_refs(s);
		return;
	}
	if (s->state != XVI_SS_TIME_WAIT && s->state != XVI_SS_LISTEN)
		stream_send_rst(s);
	stream_fail(s, err);
	sctx_flush(ctx);
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
	stream_timer_set(s, &s->timer.close_at, ctx->now + ctx->linger_us);
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
	sctx_run(s->ctx);
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
