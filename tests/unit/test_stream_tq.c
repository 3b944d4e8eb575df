// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The stream engine's timer queue (stream/tq.c) on its own, against a
 * plain reference model, and in the engine: the time it gives the link is
 * always the earliest due time of any connection, which a run then fires.
 */
#include "stream_sim.h"
#include "stream/tq.h"

#define NN	512

static __u64 trnd(__u64 *r)
{
	*r ^= *r << 13;
	*r ^= *r >> 7;
	*r ^= *r << 17;
	return *r;
}

/* Every parent at or before its children, every node where it says. */
static void check_heap(const struct xvi_tq *q)
{
	for (__u32 i = 0; i < q->n; i++) {
		cr_assert_eq(q->heap[i]->pos, i + 1, "node %u thinks it is at %u", i,
			     q->heap[i]->pos - 1);
		if (i)
			cr_assert_leq(q->heap[(i - 1) / 2]->at, q->heap[i]->at,
				      "heap order broken at %u", i);
	}
}

/* Take the first node until empty: the times come out sorted. */
static __u32 drain_sorted(struct xvi_tq *q)
{
	struct xvi_tq_node *e;
	__u64 last = 0;
	__u32 n = 0;

	while ((e = xvi_tq__first(q))) {
		cr_assert_geq(e->at, last, "out of order: %llu after %llu",
			      (unsigned long long)e->at, (unsigned long long)last);
		last = e->at;
		xvi_tq__remove(q, e);
		cr_assert_eq(e->pos, 0);
		n++;
	}
	return n;
}

Test(stream_tq, ordering)
{
	static struct xvi_tq_node nodes[NN];
	struct xvi_tq q = { 0 };
	__u64 r = 42;

	cr_assert_eq(xvi_tq__reserve(&q, NN), 0);
	cr_assert_null(xvi_tq__first(&q));
	for (int i = 0; i < NN; i++)
		xvi_tq__set(&q, &nodes[i], 1 + trnd(&r) % 1000);	/* many equal times */
	check_heap(&q);
	cr_assert_eq(q.n, NN);
	cr_assert_eq(drain_sorted(&q), NN);
	xvi_tq__free(&q);
}

Test(stream_tq, cancel)
{
	static struct xvi_tq_node nodes[NN];
	struct xvi_tq q = { 0 };
	__u64 r = 7;

	cr_assert_eq(xvi_tq__reserve(&q, NN), 0);
	for (int i = 0; i < NN; i++)
		xvi_tq__set(&q, &nodes[i], 1000 + trnd(&r) % 100000);
	/* Off: every third, wherever it sits; twice is harmless. */
	for (int i = 0; i < NN; i += 3) {
		xvi_tq__set(&q, &nodes[i], 0);
		xvi_tq__remove(&q, &nodes[i]);
		cr_assert_eq(nodes[i].pos, 0);
		check_heap(&q);
	}
	/* The earliest goes: the next earliest is first. */
	{
		struct xvi_tq_node *f = xvi_tq__first(&q);
		__u64 second = ~0ULL;

		for (int i = 0; i < NN; i++)
			if (nodes[i].pos && &nodes[i] != f && nodes[i].at < second)
				second = nodes[i].at;
		xvi_tq__remove(&q, f);
		cr_assert_eq(xvi_tq__first(&q)->at, second);
	}
	cr_assert_eq(drain_sorted(&q), NN - (NN + 2) / 3 - 1);
	xvi_tq__free(&q);
}

Test(stream_tq, rearm_moves_both_ways)
{
	struct xvi_tq_node a = { 0 }, b = { 0 }, c = { 0 };
	struct xvi_tq q = { 0 };

	cr_assert_eq(xvi_tq__reserve(&q, 3), 0);
	xvi_tq__set(&q, &a, 300);
	xvi_tq__set(&q, &b, 200);
	xvi_tq__set(&q, &c, 100);
	cr_assert_eq(xvi_tq__first(&q), &c);
	xvi_tq__set(&q, &c, 400);	/* later: no longer first */
	cr_assert_eq(xvi_tq__first(&q), &b);
	xvi_tq__set(&q, &a, 50);	/* earlier: first */
	cr_assert_eq(xvi_tq__first(&q), &a);
	xvi_tq__set(&q, &a, 50);	/* same time: nothing moves */
	cr_assert_eq(xvi_tq__first(&q), &a);
	cr_assert_eq(q.n, 3);
	check_heap(&q);
	xvi_tq__free(&q);
}

/*
 * Times are 64-bit microseconds: nothing wraps.  A 32-bit tick count
 * would wrap after 71 minutes, and a wheel of fixed span would fold a far
 * timer onto a near slot; here times across 2^32 and years apart order as
 * they are.
 */
Test(stream_tq, far_times_and_32bit_wrap)
{
	static const __u64 t[] = {
		(1ULL << 32) + 5, (1ULL << 32) - 5, 5, ~0ULL - 1, 365ULL * 86400 * 1000000 * 30,
		(1ULL << 32), 1ULL << 63,
	};
	struct xvi_tq_node n[sizeof(t) / sizeof(t[0])] = { 0 };
	struct xvi_tq q = { 0 };
	__u64 prev = 0;

	cr_assert_eq(xvi_tq__reserve(&q, sizeof(t) / sizeof(t[0])), 0);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		xvi_tq__set(&q, &n[i], t[i]);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct xvi_tq_node *e = xvi_tq__first(&q);

		cr_assert_gt(e->at, prev);
		prev = e->at;
		xvi_tq__remove(&q, e);
	}
	cr_assert_eq(prev, ~0ULL - 1);
	xvi_tq__free(&q);
}

/* Random queue, move and cancel against a plain array. */
Test(stream_tq, random_operations_match_a_model)
{
	static struct xvi_tq_node nodes[NN];
	static __u64 model[NN];	/* 0: not queued */
	struct xvi_tq q = { 0 };
	__u64 r = 99;

	cr_assert_eq(xvi_tq__reserve(&q, NN), 0);
	for (int step = 0; step < 200000; step++) {
		int i = trnd(&r) % NN, op = trnd(&r) % 8;
		__u64 at = op == 0 ? 0 : 1 + trnd(&r) % 5000, min = 0;
		__u32 n = 0;

		if (op == 1 && xvi_tq__first(&q)) {	/* fire the first */
			struct xvi_tq_node *e = xvi_tq__first(&q);

			model[e - nodes] = 0;
			xvi_tq__remove(&q, e);
		} else {
			xvi_tq__set(&q, &nodes[i], at);
			model[i] = at;
		}
		for (int k = 0; k < NN; k++)
			if (model[k]) {
				n++;
				if (!min || model[k] < min)
					min = model[k];
				cr_assert_eq(nodes[k].at, model[k]);
			}
		cr_assert_eq(q.n, n, "step %d: %u queued, model %u", step, q.n, n);
		cr_assert_eq(xvi_tq__first(&q) ? xvi_tq__first(&q)->at : 0, min,
			     "step %d: first is not the earliest", step);
		if (step % 1000 == 0)
			check_heap(&q);
	}
	xvi_tq__free(&q);
}

/* ---- in the engine ---- */

static __u64 due_min(const struct xvi_stream_ctx *ctx)
{
	__u64 d = 0;

	for (const struct xvi_stream *s = ctx->all; s; s = s->next) {
		const __u64 t[] = { s->timer.rto_at,	  s->timer.reo_at,
				    s->timer.tlp_at,	  s->timer.persist_at,
				    s->timer.delack_at,	  s->timer.ack_hold_at,
				    s->timer.keepalive_at, s->timer.close_at };

		for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
			if (t[i] && (!d || t[i] < d))
				d = t[i];
	}
	return d;
}

/*
 * Eight connections copy under loss, reordering and duplication, and
 * close: after every event the engine's next due time (what it arms the
 * link's timer to) is the earliest of every timer of every connection, so
 * no timer is ever missed or late, and each run leaves nothing overdue.
 */
#define NC	8
Test(stream_tq, engine_next_is_the_earliest_due_time, .timeout = 60)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .user_timeout_ms = 60000);
	struct xvi_stream *c[NC], *v[NC], *l;
	__u64 sent[NC] = { 0 }, rcvd[NC] = { 0 }, checks = 0, fired = 0;
	bool eof[NC] = { 0 }, shut[NC] = { 0 }, done = false;
	const __u32 bytes = 64 << 10;
	__u8 buf[4096];
	struct sim s;

	sim_init(&s, 3, &o);
	l = listener(&s, 5, 16);
	for (int i = 0; i < NC; i++)
		c[i] = pair(&s, l, &v[i]);
	s.loss = 50;
	s.reorder = 50;
	s.dup = 10;
	for (__u64 end = s.now + 60000000; !done && s.now < end;) {
		done = true;
		for (int i = 0; i < NC; i++) {
			ssize_t r;

			if (sent[i] < bytes) {
				memset(buf, i, sizeof(buf));
				r = xvi_ss__send(c[i], buf, bytes - sent[i] < sizeof(buf) ?
							   bytes - sent[i] : sizeof(buf));
				if (r > 0)
					sent[i] += r;
			} else if (!shut[i]) {
				cr_assert_eq(xvi_ss__shutdown(c[i], SHUT_WR), 0);
				shut[i] = true;
			}
			while (!eof[i] && (r = xvi_ss__recv(v[i], buf, sizeof(buf))) != -EAGAIN) {
				cr_assert_geq(r, 0);
				eof[i] = !r;
				rcvd[i] += r;
			}
			done &= eof[i];
		}
		for (int k = 0; k < 2; k++) {
			__u64 want = due_min(s.n[k].ctx);

			cr_assert_eq(xvi_sctx__next(s.n[k].ctx), want,
				     "node %d at %llu: next %llu, earliest due %llu", k,
				     (unsigned long long)s.now,
				     (unsigned long long)xvi_sctx__next(s.n[k].ctx),
				     (unsigned long long)want);
			cr_assert(!want || want > s.n[k].ctx->now || s.n[k].timer,
				  "node %d: a due time passed with no timer armed", k);
			checks++;
		}
		if (!sim_step(&s))
			s.now += 1000;
	}
	for (int i = 0; i < NC; i++) {
		cr_assert(eof[i], "connection %d: %llu of %u bytes", i,
			  (unsigned long long)rcvd[i], bytes);
		cr_assert_eq(rcvd[i], bytes);
		fired += c[i]->stats.segs_retrans;
	}
	cr_assert_gt(fired, 0, "no retransmission: the timers were not exercised");
	cr_log_info("%llu checks, %llu retransmissions", (unsigned long long)checks,
		    (unsigned long long)fired);
	sim_fini(&s);
}

static void echo_once(struct sim *s, struct xvi_stream *c, struct xvi_stream *v)
{
	__u8 buf[16] = { 1 };

	cr_assert_eq(xvi_ss__send(c, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	cr_assert(RUN_UNTIL(s, 100000, xvi_srq__ready(&v->rcv.queue) >= sizeof(buf)));
	cr_assert_eq(xvi_ss__recv(v, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	cr_assert_eq(xvi_ss__send(v, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	cr_assert(RUN_UNTIL(s, 100000, xvi_srq__ready(&c->rcv.queue) >= sizeof(buf)));
	cr_assert_eq(xvi_ss__recv(c, buf, sizeof(buf)), (ssize_t)sizeof(buf));
}

/*
 * A connection pair on node 0 (c) and node 1 (*v), beside @nidle idle
 * ones, that has exchanged data both ways: the server answers data with
 * data, so the ACK of a request waits for its reply.
 */
static struct xvi_stream *interactive_pair(struct sim *s, __u64 seed, int nidle,
					   struct xvi_stream **v)
{
	XVI_OPTS(xvi_stream_ctx_opts, o);
	struct xvi_stream *l, *c, *idle;

	sim_init(s, seed, &o);
	l = listener(s, 1, nidle + 4);
	for (int i = 0; i < nidle; i++)
		pair(s, l, &idle);
	c = pair(s, l, v);
	c->flags |= XVI_STREAM_NODELAY;
	(*v)->flags |= XVI_STREAM_NODELAY;
	for (int i = 0; i < 4; i++)
		echo_once(s, c, *v);
	cr_assert((*v)->ack.interactive, "the exchange did not make the server interactive");
	return c;
}

/* A request from c arrives at v, which holds its ACK for the reply. */
static void request_held(struct sim *s, struct xvi_stream *c, struct xvi_stream *v)
{
	__u8 buf[16] = { 2 };

	cr_assert_eq(xvi_ss__send(c, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	cr_assert(RUN_UNTIL(s, 100000, xvi_srq__ready(&v->rcv.queue) >= sizeof(buf)));
	cr_assert(v->ack.held, "the request's ACK was not held");
}

/*
 * A held ACK (piggybacking, PROTOCOL.md section 4) leaves when the
 * application is about to sleep: release_acks finds it on the held list,
 * not by walking every connection, and leaves the list empty.
 */
Test(stream_tq, release_acks_sends_what_is_held)
{
	struct xvi_stream *c, *v;
	struct xvi_stream_ctx *vx;
	__u64 sent0;
	struct sim s;

	c = interactive_pair(&s, 5, 20, &v);
	vx = s.n[1].ctx;
	request_held(&s, c, v);
	cr_assert(vx->held, "held ACK not on the held list");
	sent0 = v->stats.segs_sent;
	xvi_sctx__release_acks(vx);
	cr_expect_not(v->ack.held);
	cr_expect_eq(v->stats.segs_sent, sent0 + 1, "release sent %llu segments",
		     (unsigned long long)(v->stats.segs_sent - sent0));
	cr_expect_null(vx->held, "held list not emptied");
	sim_fini(&s);
}

/*
 * XVI_SCTX_ARM_ON_SLEEP: the engine's runs keep their deadlines from the
 * link's timer, which only a sleep needs.  A request's ACK hold moved the
 * deadline earlier on every message, and the endpoint link paid a
 * timerfd_settime for it in the pump on the way to the reply.  Before a
 * sleep, prepare_sleep sends the held ACK and hands the link the deadline
 * left after it, exactly.
 */
Test(stream_tq, arm_on_sleep_sets_the_timer_before_a_sleep_only)
{
	struct xvi_stream *c, *v;
	struct xvi_stream_ctx *vx;
	__u64 sent0;
	struct sim s;

	c = interactive_pair(&s, 6, 0, &v);
	vx = s.n[1].ctx;
	vx->flags |= XVI_SCTX_ARM_ON_SLEEP;
	/* The link was told nothing: any deadline is news to a run. */
	s.n[1].timer = 0;
	vx->armed = 0;
	/* A request arrives: its ACK is held, the link's timer untouched. */
	request_held(&s, c, v);
	cr_expect_eq(s.n[1].timer, 0, "a run armed the link's timer for %llu (now %llu)",
		     (unsigned long long)s.n[1].timer, (unsigned long long)s.now);
	/* About to sleep: the ACK leaves, the timer gets what is left. */
	sent0 = v->stats.segs_sent;
	xvi_sctx__prepare_sleep(vx);
	cr_expect_not(v->ack.held);
	cr_expect_eq(v->stats.segs_sent, sent0 + 1);
	cr_expect_eq(s.n[1].timer, xvi_sctx__next(vx), "timer %llu, engine's deadline %llu",
		     (unsigned long long)s.n[1].timer,
		     (unsigned long long)xvi_sctx__next(vx));
	cr_expect_eq(v->timer.ack_hold_at, 0, "the released hold still counts");
	cr_expect_neq(s.n[1].timer, 0, "no deadline handed over (keepalive, probe)");
	sim_fini(&s);
}
