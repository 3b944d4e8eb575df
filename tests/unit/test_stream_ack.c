// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Bulk ACK policy and slow start over the simulated link: the default ACK
 * threshold follows the window, and slow start doubles per round trip
 * although every ACK covers many segments.
 */
#include "stream_sim.h"

static struct xvi_stream_ctx *ctx_with(__u32 window, __u32 ack_threshold)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .window = window, .ack_threshold = ack_threshold);
	struct xvi_slink link = {
		.tx_get = l_get, .tx_put = l_put, .tx_flush = l_flush,
		.now_us = l_now, .timer_arm = l_arm, .mtu = 1472, .seed = 1,
	};
	static struct sim s;
	static struct node n = { .sim = &s };
	struct xvi_stream_ctx *ctx;

	link.priv = &n;
	ctx = xvi_sctx__new(&link, &o);
	cr_assert(ctx, "engine: %s", strerror(errno));
	return ctx;
}

Test(stream_ack, default_threshold_follows_the_window)
{
	static const struct { __u32 window, opt, want; } cases[] = {
		{ 32, 0, 16 },		/* SOVIA's w and t */
		{ 16, 0, 16 },
		{ 8, 0, 8 },		/* never above the window */
		{ 128, 0, 32 },		/* w / 4 */
		{ 1024, 0, 64 },	/* at most 64 */
		{ 128, 16, 16 },	/* an explicit t wins */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct xvi_stream_ctx *ctx = ctx_with(cases[i].window, cases[i].opt);

		cr_expect_eq(ctx->ack_thr, cases[i].want, "window %u, option %u: t = %u, want %u",
			     cases[i].window, cases[i].opt, ctx->ack_thr, cases[i].want);
		xvi_sctx__free(ctx);
	}
}

/* Move @bytes from c to v; returns the virtual time it took. */
static __u64 bulk(struct sim *s, struct xvi_stream *c, struct xvi_stream *v, __u64 bytes)
{
	static __u8 buf[65536];
	__u64 sent = 0, rcvd = 0, t0 = s->now;

	while (rcvd < bytes) {
		ssize_t r;

		if (sent < bytes) {
			r = xvi_ss__send(c, buf, bytes - sent < sizeof(buf) ? bytes - sent
									  : sizeof(buf));
			if (r > 0)
				sent += r;
		}
		while ((r = xvi_ss__recv(v, buf, sizeof(buf))) > 0)
			rcvd += r;
		cr_assert(s->now - t0 < 60000000, "bulk transfer stalled at %llu of %llu",
			  (unsigned long long)rcvd, (unsigned long long)bytes);
		if (!sim_step(s))
			s->now += 1000;
	}
	return s->now - t0;
}

Test(stream_ack, bulk_receiver_acks_every_window_quarter)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .window = 128);
	struct xvi_stream *l, *c, *v;
	__u64 data_segs, acks;
	struct sim s;

	sim_init(&s, 11, &o);
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	bulk(&s, c, v, 16u << 20);
	data_segs = c->stats.segs_sent;
	acks = v->stats.segs_sent;
	/* t = 32, plus one ACK per PRB (end of each flight the window or
	 * cwnd ends); with t = 16 it was one ACK per 16 segments or fewer. */
	cr_expect_leq(acks * 24, data_segs, "%llu ACKs for %llu data segments",
		      (unsigned long long)acks, (unsigned long long)data_segs);
	cr_expect_eq(c->stats.segs_retrans, 0u);
	sim_fini(&s);
}

Test(stream_ack, slow_start_doubles_with_stretch_acks)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .window = 1024, .rcvbuf = 4u << 20,
		 .sndbuf = 8u << 20);
	struct xvi_stream *l, *c, *v;
	__u64 took, rtt = 2000;
	struct sim s;

	sim_init(&s, 12, &o);
	s.delay_us = rtt / 2;
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	/*
	 * 4 MiB is about 3000 segments.  From 10 segments, doubling per round
	 * trip sends them in 9 round trips; 2 mss per ACK (RFC 3465's L = 2,
	 * one ACK per flight because the last segment asks for it) grows
	 * linearly and takes about 50.
	 */
	took = bulk(&s, c, v, 4u << 20);
	cr_expect_leq(took, 14 * rtt, "4 MiB took %llu us = %.1f round trips",
		      (unsigned long long)took, (double)took / rtt);
	cr_expect_eq(c->stats.segs_retrans, 0u);
	sim_fini(&s);
}

/*
 * After a timeout cwnd is one segment; the ACK for the retransmitted head
 * may cover a whole flight SACKed before.  Slow start credits at most the
 * window per ACK (it doubles), never the flight: no burst of ssthresh.
 */
Test(stream_ack, slow_start_after_timeout_at_most_doubles)
{
	const struct xvi_stream_cc_ops *ops = xvi_stream_cc_newreno();
	struct xvi_stream_cc cc = { .mss = 1400 };

	ops->init(&cc);
	ops->on_event(&cc, XVI_CC_TIMEOUT, 128 * 1400);
	cr_assert_eq(cc.cwnd, 1400u);
	cr_assert_eq(cc.ssthresh, 64u * 1400);
	ops->on_ack(&cc, 128 * 1400, 100, 0);
	cr_expect_eq(cc.cwnd, 2u * 1400, "one ACK took cwnd from 1 to %u segments",
		     cc.cwnd / 1400);
	ops->on_ack(&cc, 2 * 1400, 100, 0);
	cr_expect_eq(cc.cwnd, 4u * 1400);
	/* ... and never past ssthresh */
	for (int i = 0; i < 10; i++)
		ops->on_ack(&cc, cc.cwnd, 100, 0);
	cr_expect_geq(cc.cwnd, 64u * 1400);
}
