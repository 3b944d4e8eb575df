// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * In-place stream I/O: the send queue's reserve/commit and the receive
 * queue's views, then send_alloc/send_commit and recv_zc/recv_release
 * end to end over the simulated link, byte-exact under impairment.
 */
#include "stream_sim.h"

static __u8 zpat(__u64 i)
{
	return (__u8)((i * 2246822519u) >> 11);
}

/* ---- send queue: reserve, write in place, commit ---- */

Test(stream_zc, reserve_commit_queues_in_place)
{
	struct xvi_ssq q;
	__u8 out[64];
	void *p;
	__u32 n;

	cr_assert_eq(xvi_ssq__init(&q, 64, 8, 1000), 0);
	n = xvi_ssq__reserve(&q, &p);
	cr_assert_eq(n, 64u);
	cr_assert_eq(p, q.ring);
	memcpy(p, "abcdefghij", 10);
	cr_assert_eq(xvi_ssq__commit(&q, 10), 0);
	cr_expect_eq(q.end, 1010u);
	xvi_ssq__copy_out(&q, 1000, out, 10);
	cr_expect_eq(memcmp(out, "abcdefghij", 10), 0);
	/* The next space follows, and joins the same item. */
	n = xvi_ssq__reserve(&q, &p);
	cr_expect_eq(n, 54u);
	cr_expect_eq(p, q.ring + 10);
	memcpy(p, "KLM", 3);
	cr_assert_eq(xvi_ssq__commit(&q, 3), 0);
	cr_expect_eq(q.ih - q.it, 1u);
	xvi_ssq__copy_out(&q, 1008, out, 5);
	cr_expect_eq(memcmp(out, "ijKLM", 5), 0);
	xvi_ssq__free(&q);
}

Test(stream_zc, commit_rejects_more_than_reserved_and_stale_reservations)
{
	struct xvi_ssq q;
	void *p;
	__u32 n;

	cr_assert_eq(xvi_ssq__init(&q, 64, 8, 0), 0);
	n = xvi_ssq__reserve(&q, &p);
	cr_expect_eq(xvi_ssq__commit(&q, n + 1), -EINVAL);
	cr_expect_eq(q.end, 0u, "a refused commit queued bytes");
	/* A copy in between takes the space back. */
	n = xvi_ssq__reserve(&q, &p);
	cr_assert_eq(xvi_ssq__push_copy(&q, "xy", 2), 2u);
	cr_expect_eq(xvi_ssq__commit(&q, 4), -EINVAL);
	cr_expect_eq(q.end, 2u);
	/* Committing nothing gives the space back. */
	n = xvi_ssq__reserve(&q, &p);
	cr_expect_eq(xvi_ssq__commit(&q, 0), 0);
	cr_expect_eq(xvi_ssq__commit(&q, 1), -EINVAL);
	xvi_ssq__free(&q);
}

Test(stream_zc, ack_that_empties_the_queue_keeps_a_reservation_in_place)
{
	struct xvi_ssq q;
	__u8 out[8];
	void *p, *p2;

	cr_assert_eq(xvi_ssq__init(&q, 64, 8, 0), 0);
	cr_assert_eq(xvi_ssq__push_copy(&q, "0123456789", 10), 10u);
	cr_assert_eq(xvi_ssq__reserve(&q, &p), 54u);
	memcpy(p, "ABCD", 4);
	/* Everything queued is acknowledged while the application writes. */
	xvi_ssq__ack(&q, 10, NULL, NULL);
	cr_expect_eq(q.ring_head, 10u, "the ring moved under a reservation");
	cr_assert_eq(xvi_ssq__commit(&q, 4), 0);
	xvi_ssq__copy_out(&q, 10, out, 4);
	cr_expect_eq(memcmp(out, "ABCD", 4), 0);
	/* Without one, an empty queue restarts at 0 (contiguous copies). */
	xvi_ssq__ack(&q, 14, NULL, NULL);
	cr_expect_eq(q.ring_head, 0u);
	cr_expect_eq(xvi_ssq__reserve(&q, &p2), 64u);
	xvi_ssq__free(&q);
}

Test(stream_zc, reserve_stops_at_the_ring_end_then_wraps)
{
	struct xvi_ssq q;
	__u8 out[24];
	void *p;
	__u32 n;

	cr_assert_eq(xvi_ssq__init(&q, 64, 8, 0), 0);
	cr_assert_eq(xvi_ssq__push_copy(&q, out, 20), 20u);
	cr_assert_eq(xvi_ssq__push_copy(&q, out, 30), 30u);
	xvi_ssq__ack(&q, 20, NULL, NULL);	/* ring: [20, 50) used */
	n = xvi_ssq__reserve(&q, &p);
	cr_expect_eq(n, 14u, "space past the ring's end: %u", n);
	memset(p, 'a', n);
	cr_assert_eq(xvi_ssq__commit(&q, n), 0);
	n = xvi_ssq__reserve(&q, &p);
	cr_expect_eq(n, 20u);
	cr_expect_eq(p, q.ring);
	memset(p, 'b', n);
	cr_assert_eq(xvi_ssq__commit(&q, 10), 0);
	xvi_ssq__copy_out(&q, 60, out, 14);
	cr_expect_eq(memcmp(out, "aaaabbbbbbbbbb", 14), 0);
	cr_expect_eq(xvi_ssq__room(&q), 0u + 64 - 30 - 14 - 10);
	xvi_ssq__free(&q);
}

/* ---- receive queue: views in place ---- */

Test(stream_zc, peek_shows_ready_bytes_in_two_pieces_across_the_wrap)
{
	struct xvi_srq q;
	struct iovec iov[2];
	__u8 in[48];
	bool dup;

	for (int i = 0; i < 48; i++)
		in[i] = (__u8)i;
	/* ring offset 0 at 0xffffffc0: the sequence wraps at 2^32 too */
	cr_assert_eq(xvi_srq__init(&q, 64, 0xffffffc0u), 0);
	cr_assert_eq(xvi_srq__insert(&q, 0xffffffc0u, in, 40, &dup), 40u);
	cr_assert_eq(xvi_srq__read(&q, NULL, 40), 40u);
	/* 30 bytes from ring offset 40: 24 up to the end, 6 from the start */
	cr_assert_eq(xvi_srq__insert(&q, 0xffffffc0u + 40, in, 30, &dup), 30u);
	cr_assert_eq(xvi_srq__peek(&q, iov, 2, ~0u), 2);
	cr_expect_eq(iov[0].iov_len, 24u);
	cr_expect_eq(iov[1].iov_len, 6u);
	cr_expect_eq(memcmp(iov[0].iov_base, in, 24), 0);
	cr_expect_eq(memcmp(iov[1].iov_base, in + 24, 6), 0);
	/* One slot: the first piece only; a length cap cuts it. */
	cr_expect_eq(xvi_srq__peek(&q, iov, 1, ~0u), 1);
	cr_expect_eq(iov[0].iov_len, 24u);
	cr_expect_eq(xvi_srq__peek(&q, iov, 2, 5), 1);
	cr_expect_eq(iov[0].iov_len, 5u);
	/* Nothing consumed: the window stays where it was. */
	cr_expect_eq(xvi_srq__ready(&q), 30u);
	cr_assert_eq(xvi_srq__read(&q, NULL, 25), 25u);
	cr_assert_eq(xvi_srq__peek(&q, iov, 2, ~0u), 1);
	cr_expect_eq(iov[0].iov_len, 5u);
	cr_expect_eq(*(__u8 *)iov[0].iov_base, 25);
	xvi_srq__free(&q);
}

/* ---- end to end over the simulated link ---- */

struct zc_case {
	const char *name;
	int loss, dup, reorder, corrupt;	/* per mille */
	__u32 bytes;
	__u32 chunk;				/* bytes asked of send_alloc */
	__u32 release;				/* most bytes released at once */
};

static const struct zc_case zc_cases[] = {
	{ "clean 2 MiB", 0, 0, 0, 0, 2 << 20, 65536, ~0u },
	{ "5% loss, reorder, dup, corrupt", 50, 5, 20, 1, 1 << 20, 3000, ~0u },
	{ "20% loss, small releases", 200, 0, 10, 0, 256 << 10, 1000, 333 },
};

static void run_zc(const struct zc_case *k, __u64 seed)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .user_timeout_ms = 60000);
	struct xvi_stream *l, *c, *v;
	__u64 sent = 0, rcvd = 0, steps = 0;
	bool eof = false, shut = false;
	struct sim s;

	sim_init(&s, seed, &o);
	l = listener(&s, 7, 4);
	c = pair(&s, l, &v);
	s.loss = k->loss;
	s.dup = k->dup;
	s.reorder = k->reorder;
	s.corrupt = k->corrupt;
	while (!eof && steps++ < 20000000) {
		struct iovec iov[2];
		int n;

		if (sent < k->bytes) {
			__u32 want = k->bytes - sent < k->chunk ? k->bytes - sent : k->chunk;
			void *p;
			ssize_t r = xvi_ss__send_alloc(c, &p, want);

			cr_assert(r > 0 || r == -EAGAIN, "%s: send_alloc %zd", k->name, r);
			if (r > 0) {
				cr_assert_leq((size_t)r, want);
				for (ssize_t i = 0; i < r; i++)
					((__u8 *)p)[i] = zpat(sent + i);
				cr_assert_eq(xvi_ss__send_commit(c, r), 0);
				sent += r;
			}
		} else if (!shut) {
			cr_assert_eq(xvi_ss__shutdown(c, SHUT_WR), 0);
			shut = true;
		}
		n = xvi_ss__recv_zc(v, iov, 2);
		cr_assert(n >= 0 || n == -EAGAIN, "%s: recv_zc %d", k->name, n);
		if (n == 0)
			eof = true;
		if (n > 0) {
			__u64 at = rcvd;
			size_t take = 0;

			for (int i = 0; i < n && take < k->release; i++) {
				const __u8 *b = iov[i].iov_base;
				size_t m = iov[i].iov_len;

				if (m > k->release - take)
					m = k->release - take;
				for (size_t j = 0; j < m; j++)
					cr_assert_eq(b[j], zpat(at + j), "%s: byte %llu differs",
						     k->name, (unsigned long long)(at + j));
				at += m;
				take += m;
			}
			cr_assert_eq(xvi_ss__recv_release(v, take), 0);
			rcvd += take;
		}
		if (!sim_step(&s))
			s.now += 1000;
	}
	cr_assert(eof, "%s: no EOF after %llu of %u bytes", k->name,
		  (unsigned long long)rcvd, k->bytes);
	cr_assert_eq(rcvd, k->bytes, "%s", k->name);
	if (k->loss)
		cr_expect_gt(c->stats.segs_retrans, 0, "%s: nothing was repaired", k->name);
	xvi_ss__close(v);
	xvi_ss__close(c);
	xvi_ss__close(l);
	sim_fini(&s);
}

Test(stream_zc, in_place_transfers_byte_exact, .timeout = 60)
{
	for (size_t i = 0; i < sizeof(zc_cases) / sizeof(zc_cases[0]); i++)
		run_zc(&zc_cases[i], 300 + i);
}

Test(stream_zc, views_stay_valid_and_hold_the_window_until_released)
{
	__u8 *buf = malloc(1 << 20);
	struct xvi_stream *l, *c, *v;
	struct iovec iov[2];
	const __u8 *first;
	struct sim s;
	__u64 sent;
	__u32 held;
	int n;

	for (int i = 0; i < 1 << 20; i++)
		buf[i] = zpat(i);
	sim_init(&s, 77, NULL);
	l = listener(&s, 8, 4);
	c = pair(&s, l, &v);
	cr_assert_eq(xvi_ss__send(c, buf, 1000), 1000);
	cr_assert(RUN_UNTIL(&s, 1000000, xvi_srq__ready(&v->rcv.queue) == 1000));
	n = xvi_ss__recv_zc(v, iov, 2);
	cr_assert_eq(n, 1);
	first = iov[0].iov_base;
	cr_assert_eq(iov[0].iov_len, 1000u);
	/* The sender fills everything the window allows; nobody releases. */
	sent = 1000 + sim_fill_window(&s, c, buf + 1000, (1 << 20) - 1000);
	held = xvi_srq__ready(&v->rcv.queue);
	cr_expect_leq(held, v->rcv.queue.size, "more held than the receive buffer");
	cr_expect_lt(held, sent, "the window never closed over unreleased views");
	/* The first view still holds the first bytes, the same place. */
	n = xvi_ss__recv_zc(v, iov, 2);
	cr_assert_gt(n, 0);
	cr_expect_eq(iov[0].iov_base, first);
	cr_expect_eq(memcmp(first, buf, 1000), 0);
	/* Releasing more than is ready is refused and changes nothing. */
	cr_expect_eq(xvi_ss__recv_release(v, held + 1), -EINVAL);
	cr_expect_eq(xvi_srq__ready(&v->rcv.queue), held);
	/* Releasing opens the window: the rest arrives. */
	cr_log_info("held %u of %llu sent, sender queue %u, flight %u", held,
		    (unsigned long long)sent, xvi_ssq__queued(&c->snd.queue),
		    c->snd.nxt - c->snd.una);
	cr_assert_eq(xvi_ss__recv_release(v, held), 0);
	cr_assert(RUN_UNTIL(&s, 1000000, xvi_srq__ready(&v->rcv.queue) > 0),
		  "no data after the release: no window update?");
	sim_fini(&s);
	free(buf);
}

Test(stream_zc, send_alloc_needs_a_connection_and_commit_a_reservation)
{
	struct xvi_stream *l, *c, *v, *u;
	struct sim s;
	void *p;

	sim_init(&s, 78, NULL);
	u = sock(&s, 0);
	cr_expect_eq(xvi_ss__send_alloc(u, &p, 10), -ENOTCONN);
	l = listener(&s, 9, 4);
	c = pair(&s, l, &v);
	cr_expect_eq(xvi_ss__send_commit(c, 1), -EINVAL, "commit without send_alloc");
	cr_assert_gt(xvi_ss__send_alloc(c, &p, 10), 0);
	cr_expect_eq(xvi_ss__send_commit(c, c->snd.queue.reserved + 1), -EINVAL);
	cr_expect_eq(c->snd.queue.end, c->snd.queue.una, "a refused commit queued bytes");
	cr_assert_eq(xvi_ss__shutdown(c, SHUT_WR), 0);
	cr_expect_eq(xvi_ss__send_alloc(c, &p, 10), -EPIPE);
	xvi_ss__close(u);
	sim_fini(&s);
}
