// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Doorbell batching (stream/timers.c, sctx_flush): while the API corks its
 * send calls, plain new data waits in the link's queue for a kernel-sized
 * batch; whatever asks something of the peer leaves on its own run, and
 * nothing waits longer than CORK_US.  Over the simulated link with its
 * flush gate on: a datagram leaves only when the engine flushes.
 */
#include "stream_sim.h"
#include "stream/engine_priv.h"

static __u8 cpat(__u64 i)
{
	return (__u8)((i * 2654435761u) >> 13);
}

/*
 * The application's side of a transfer of @total bytes from @buf on a
 * corked sender: 1472-byte sends while they are taken, receives into @got.
 */
static bool xfer_step(struct xvi_stream *c, struct xvi_stream *v, const __u8 *buf, __u8 *got,
		      __u64 total, __u64 *sent, __u64 *recvd)
{
	ssize_t r;

	while (*sent < total &&
	       (r = xvi_ss__send(c, buf + *sent, total - *sent < 1472 ? total - *sent : 1472)) > 0)
		*sent += (__u64)r;
	while ((r = xvi_ss__recv(v, got + *recvd, total - *recvd)) > 0)
		*recvd += (__u64)r;
	return *recvd == total;
}

/* Abort the three connections, free the simulation and the buffers. */
static void cork_fini(struct sim *s, struct xvi_stream *l, struct xvi_stream *c,
		      struct xvi_stream *v, void *buf, void *got)
{
	xvi_ss__abort(c);
	xvi_ss__abort(v);
	xvi_ss__abort(l);
	sim_fini(s);
	free(buf);
	free(got);
}

/*
 * A corked sender batches its doorbells on a clean link, and moves 1 MiB
 * byte-exact under loss and reordering.
 */
Test(stream_cork, corked_bulk_sender_batches_doorbells_and_is_byte_exact, .timeout = 60)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .window = 128, .user_timeout_ms = 60000);
	const __u64 total = 1 << 20, clean = 256 << 10;
	struct xvi_stream *l, *c, *v;
	__u8 *buf = malloc(total), *got = malloc(total);
	__u64 sent = 0, recvd = 0, segs, flushes;
	struct sim s;

	cr_assert(buf && got);
	for (__u64 i = 0; i < total; i++)
		buf[i] = cpat(i);
	sim_init(&s, 71, &o);
	l = listener(&s, 80, 4);
	c = pair(&s, l, &v);
	s.n[0].gate = true;
	s.n[0].ctx->cork = true;	/* every run of the sender corks */
	segs = c->stats.segs_sent;
	flushes = s.n[0].flushes;
	cr_assert(RUN_UNTIL(&s, 60000000, xfer_step(c, v, buf, got, clean, &sent, &recvd)),
		  "corked transfer stalled: %llu sent, %llu received, %d held",
		  (unsigned long long)sent, (unsigned long long)recvd, s.n[0].nheld);
	/*
	 * Sends faster than the network: 40 of 1472 bytes at one instant,
	 * with room in both windows, make 42 segments, each send's run
	 * queueing one (uncorked: a doorbell each).  Corked: one doorbell,
	 * when the kernel batch is full; the rest wait.
	 */
	cr_assert(RUN_UNTIL(&s, 1000000, c->snd.una == c->snd.nxt));
	cr_assert_geq(c->cc.cwnd, 64 * c->snd.mss, "cwnd %u too small for the check", c->cc.cwnd);
	segs = c->stats.segs_sent;
	flushes = s.n[0].flushes;
	for (int i = 0; i < 40; i++, sent += 1472)
		cr_assert_eq(xvi_ss__send(c, buf + sent, 1472), 1472);
	segs = c->stats.segs_sent - segs;
	flushes = s.n[0].flushes - flushes;
	cr_expect_geq(segs, 40u);
	cr_expect_eq(flushes, 1u, "%llu doorbells for %llu segments",
		     (unsigned long long)flushes, (unsigned long long)segs);
	s.loss = 20;
	s.reorder = 20;
	cr_assert(RUN_UNTIL(&s, 60000000, xfer_step(c, v, buf, got, total, &sent, &recvd)),
		  "corked transfer stalled under loss: %llu sent, %llu received, %d held",
		  (unsigned long long)sent, (unsigned long long)recvd, s.n[0].nheld);
	cr_expect_eq(memcmp(buf, got, total), 0, "corked transfer not byte-exact");
	cr_expect_gt(c->stats.segs_retrans, 0);
	s.loss = s.reorder = 0;
	cork_fini(&s, l, c, v, buf, got);
}

/*
 * What asks the peer for something never waits for a batch: a whole
 * message's last segment (PRB), with everything queued before it, and the
 * receiver's ACKs.
 */
Test(stream_cork, whole_messages_and_acks_leave_at_once)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .window = 128);
	struct xvi_stream *l, *c, *v;
	__u8 msg[3000] = { 1 }, in[3000];
	__u64 got = 0;
	ssize_t r;
	struct sim s;

	sim_init(&s, 72, &o);
	l = listener(&s, 80, 4);
	c = pair(&s, l, &v);
	s.n[0].gate = s.n[1].gate = true;
	s.n[0].ctx->cork = s.n[1].ctx->cork = true;
	/* One segment: it drains the queue. */
	cr_assert_eq(xvi_ss__send(c, msg, 1000), 1000);
	cr_expect_eq(s.n[0].nheld, 0, "a whole one-segment message held");
	cr_assert(RUN_UNTIL(&s, 1000000, xvi_ss__recv(v, in, sizeof(in)) == 1000));
	cr_assert(RUN_UNTIL(&s, 1000000, c->snd.una == c->snd.nxt), "no ACK");
	cr_expect_eq(s.n[1].nheld, 0, "an ACK held");
	/* Three segments with NODELAY: the last drains the queue, all leave. */
	c->flags |= XVI_STREAM_NODELAY;
	cr_assert_eq(xvi_ss__send(c, msg, sizeof(msg)), (ssize_t)sizeof(msg));
	cr_expect_eq(s.n[0].nheld, 0, "%d segments of a whole message held", s.n[0].nheld);
	cr_assert(RUN_UNTIL(&s, 1000000, ({
		while ((r = xvi_ss__recv(v, in + got, sizeof(in) - got)) > 0)
			got += (__u64)r;
		got == sizeof(msg);
	})));
	xvi_ss__abort(c);
	xvi_ss__abort(v);
	xvi_ss__abort(l);
	sim_fini(&s);
}

/*
 * Plain data the cork holds (a tail waits for room, so the last segment
 * sent asks for nothing): the link's timer is armed for CORK_US later, and
 * when it fires the run flushes; an uncorked run flushes at once.
 */
Test(stream_cork, held_data_leaves_within_cork_us)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .window = 128);
	struct xvi_stream_ctx *ctx;
	struct xvi_stream *l, *c, *v;
	__u8 msg[4 * 1396 + 100] = { 2 };
	__u64 t0;
	struct sim s;

	sim_init(&s, 73, &o);
	l = listener(&s, 80, 4);
	c = pair(&s, l, &v);
	ctx = s.n[0].ctx;
	s.n[0].gate = true;
	ctx->cork = true;
	/* Unacknowledged data in flight: the 100-byte tail waits (Nagle). */
	cr_assert_eq(xvi_ss__send(c, msg, 1396), 1396);
	cr_expect_eq(s.n[0].nheld, 0);
	t0 = s.now;
	cr_assert_eq(xvi_ss__send(c, msg, sizeof(msg) - 1396), (ssize_t)sizeof(msg) - 1396);
	cr_assert_gt(s.n[0].nheld, 0, "plain data was not corked");
	cr_expect_leq(s.n[0].timer, t0 + CORK_US, "held data without a timer");
	/* The timer fires: out. */
	s.now = s.n[0].timer;
	s.n[0].timer = 0;
	ctx->armed = 0;
	xvi_sctx__run(ctx);
	cr_expect_eq(s.n[0].nheld, 0, "held past CORK_US");
	/* Corked again, then a run without the cork flushes at once. */
	cr_assert(RUN_UNTIL(&s, 1000000, c->snd.una == c->snd.nxt));
	cr_assert_eq(xvi_ss__send(c, msg, 1396), 1396);
	t0 = s.now;
	cr_assert_eq(xvi_ss__send(c, msg, sizeof(msg) - 1396), (ssize_t)sizeof(msg) - 1396);
	cr_assert_gt(s.n[0].nheld, 0);
	ctx->cork = false;
	xvi_sctx__run(ctx);
	cr_expect_eq(s.n[0].nheld, 0, "an uncorked run left data held");
	xvi_ss__abort(c);
	xvi_ss__abort(v);
	xvi_ss__abort(l);
	sim_fini(&s);
}

/*
 * The in-place calls cork as send does: a run of send_alloc/send_commit
 * pairs, 1472 bytes each, faster than the network, rings one doorbell per
 * kernel batch, not one per commit.  The cork ends with each call, so the
 * data still leaves within CORK_US; byte-exact at the receiver.
 */
Test(stream_cork, in_place_sends_batch_doorbells_like_send)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .window = 128);
	struct xvi_stream *l, *c, *v;
	const int n = 40;
	const __u64 warm = 256 << 10;
	__u8 *buf = malloc(warm + n * 1472), *got = calloc(1, warm + n * 1472);
	__u64 flushes, segs, sent = 0, recvd = 0;
	struct sim s;
	ssize_t r;

	cr_assert(buf && got);
	for (__u64 i = 0; i < warm + n * 1472; i++)
		buf[i] = cpat(i);
	sim_init(&s, 74, &o);
	l = listener(&s, 80, 4);
	c = pair(&s, l, &v);
	c->flags |= XVI_STREAM_NONBLOCK;
	s.n[0].gate = true;
	/* Slow start done (cork off): room for all 40 at once. */
	cr_assert(RUN_UNTIL(&s, 60000000, xfer_step(c, v, buf, got, warm, &sent, &recvd)));
	cr_assert(RUN_UNTIL(&s, 1000000, c->snd.una == c->snd.nxt));
	cr_assert_geq(c->cc.cwnd, 64 * c->snd.mss, "cwnd %u too small for the check", c->cc.cwnd);
	segs = c->stats.segs_sent;
	flushes = s.n[0].flushes;
	for (int i = 0; i < n; i++) {
		void *p;

		cr_assert_geq(xvi_stream__send_alloc(c, &p, 1472), 1472);
		memcpy(p, buf + warm + i * 1472, 1472);
		cr_assert_eq(xvi_stream__send_commit(c, 1472), 0);
	}
	segs = c->stats.segs_sent - segs;
	flushes = s.n[0].flushes - flushes;
	cr_expect_geq(segs, 40u);
	cr_expect_leq(flushes, 2u, "%llu doorbells for %llu segments",
		      (unsigned long long)flushes, (unsigned long long)segs);
	cr_assert(RUN_UNTIL(&s, 1000000, ({
		while ((r = xvi_ss__recv(v, got + recvd, warm + n * 1472 - recvd)) > 0)
			recvd += (__u64)r;
		recvd == warm + n * 1472;
	})), "in-place data held: %llu of %llu bytes arrived", (unsigned long long)recvd,
		  (unsigned long long)(warm + n * 1472));
	cr_expect_eq(memcmp(buf, got, warm + n * 1472), 0, "in-place transfer not byte-exact");
	cork_fini(&s, l, c, v, buf, got);
}
