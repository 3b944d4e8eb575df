// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The stream engine over the deterministic simulated link of stream_sim.h.
 */
#include "stream_sim.h"

/* ---- byte-exact transfers under impairment ---- */

struct xfer_case {
	const char *name;
	int loss, dup, reorder, corrupt;	/* per mille */
	__u32 bytes;
	__u32 iss;				/* 0: random */
	__u32 flags;				/* client stream flags */
	__u32 chunk;				/* send() size */
};

static const struct xfer_case xfer_cases[] = {
	{ "clean 4 MiB", 0, 0, 0, 0, 4 << 20, 0, 0, 65536 },
	{ "wrap at 2^32", 0, 0, 0, 0, 2 << 20, 0xfff00000u, 0, 8192 },
	{ "5% loss", 50, 0, 0, 0, 2 << 20, 0, 0, 16384 },
	{ "loss+reorder+dup+corrupt", 50, 5, 10, 1, 2 << 20, 0xffff0000u, 0, 3000 },
	{ "heavy reorder and duplication", 10, 50, 200, 0, 1 << 20, 0, 0, 1000 },
	{ "20% loss", 200, 0, 0, 10, 512 << 10, 0, 0, 4096 },
	{ "small sends NODELAY, lossy", 20, 10, 20, 1, 256 << 10, 0, XVI_STREAM_NODELAY, 37 },
	{ "small sends combined, lossy", 20, 10, 20, 1, 256 << 10, 0, 0, 37 },
};

static __u8 pattern(__u64 i)
{
	return (__u8)((i * 2654435761u) >> 13);
}

static void run_xfer(const struct xfer_case *k, __u64 seed)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .user_timeout_ms = 60000);
	struct sim s;
	struct xvi_stream *l, *c, *v;
	__u8 *buf = malloc(65536);
	__u64 sent = 0, rcvd = 0, steps = 0;
	bool eof = false, shut = false;

	sim_init(&s, seed, &o);
	if (k->iss)
		sim_set_iss(&s, k->iss);
	l = listener(&s, 5, 8);
	c = pair(&s, l, &v);
	c->flags |= k->flags;
	s.loss = k->loss;
	s.dup = k->dup;
	s.reorder = k->reorder;
	s.corrupt = k->corrupt;
	while (!eof && steps++ < 20000000) {
		if (sent < k->bytes) {
			__u32 n = k->bytes - sent < k->chunk ? k->bytes - sent : k->chunk;
			ssize_t r;

			for (__u32 i = 0; i < n; i++)
				buf[i] = pattern(sent + i);
			r = xvi_ss__send(c, buf, n);
			cr_assert(r > 0 || r == -EAGAIN, "%s: send %zd", k->name, r);
			if (r > 0)
				sent += r;
		} else if (!shut) {
			cr_assert_eq(xvi_ss__shutdown(c, SHUT_WR), 0);
			shut = true;
		}
		for (;;) {
			ssize_t r = xvi_ss__recv(v, buf, 65536);

			if (r == -EAGAIN)
				break;
			cr_assert(r >= 0, "%s: recv %zd", k->name, r);
			if (!r) {
				eof = true;
				break;
			}
			for (ssize_t i = 0; i < r; i++)
				cr_assert_eq(buf[i], pattern(rcvd + i), "%s: byte %llu differs",
					     k->name, (unsigned long long)(rcvd + i));
			rcvd += r;
		}
		if (!sim_step(&s))
			s.now += 1000;
	}
	cr_assert(eof, "%s: no EOF after %llu of %u bytes (client %s, server %s)", k->name,
		  (unsigned long long)rcvd, k->bytes, xvi_stream_state__str(c->state),
		  xvi_stream_state__str(v->state));
	cr_assert_eq(rcvd, k->bytes, "%s", k->name);
	cr_log_info("%s: %u bytes in %.3f virtual s, %llu segs, %llu retrans, %llu timeouts, %llu recoveries, srtt %u us",
		    k->name, k->bytes, (s.now - 1000000) / 1e6,
		    (unsigned long long)c->stats.segs_sent,
		    (unsigned long long)c->stats.segs_retrans,
		    (unsigned long long)c->stats.timeouts,
		    (unsigned long long)c->stats.fast_retrans, c->rtt.srtt_us);
	cr_expect_eq(v->state, XVI_SS_CLOSE_WAIT);
	if (k->corrupt)
		cr_expect_gt(s.n[1].ctx->stats.rx_bad_integrity + s.n[0].ctx->stats.rx_bad_integrity,
			     0, "%s: corruption never caught", k->name);
	if (k->loss)
		cr_expect_gt(c->stats.segs_retrans, 0);
	/* Orderly close: both ends reach CLOSED and free their state. */
	cr_assert_eq(xvi_ss__close(v), 0);
	s.loss = s.dup = s.reorder = s.corrupt = 0;
	cr_assert(RUN_UNTIL(&s, 20000000, c->state == XVI_SS_TIME_WAIT ||
			    c->state == XVI_SS_CLOSED),
		  "%s: client stuck in %s", k->name, xvi_stream_state__str(c->state));
	cr_assert(RUN_UNTIL(&s, 20000000, s.n[1].ctx->nconns == 0 && c->state == XVI_SS_CLOSED));
	cr_expect_eq(c->err, 0);
	xvi_ss__close(c);
	xvi_ss__close(l);
	cr_expect_eq(s.n[0].ctx->all, NULL);
	cr_expect_eq(s.n[1].ctx->all, NULL);
	sim_fini(&s);
	free(buf);
}

Test(stream_sim, transfers_byte_exact, .timeout = 60)
{
	for (size_t i = 0; i < sizeof(xfer_cases) / sizeof(xfer_cases[0]); i++)
		run_xfer(&xfer_cases[i], 100 + i);
}

/* ---- many connections under heavy loss ---- */

Test(stream_sim, fifty_connections_under_30pct_loss, .timeout = 60)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .user_timeout_ms = 60000);
	struct xvi_stream *c[50], *acc[50], *l;
	struct sim s;
	int na = 0, ne;

	sim_init(&s, 7, &o);
	l = listener(&s, 9, 64);
	s.loss = 300;
	for (int i = 0; i < 50; i++) {
		c[i] = sock(&s, 0);
		cr_assert_eq(xvi_ss__connect(c[i], &s.n[1].addr, 9), -EINPROGRESS);
	}
	for (__u64 end = s.now + 60000000; s.now < end;) {
		struct xvi_stream *a;

		while (na < 50 && (a = xvi_ss__accept(l, NULL)))
			acc[na++] = a;
		ne = 0;
		for (int i = 0; i < 50; i++)
			ne += c[i]->state == XVI_SS_ESTABLISHED;
		if (ne == 50 && na == 50)
			break;
		if (!sim_step(&s))
			s.now += 1000;
	}
	ne = 0;
	for (int i = 0; i < 50; i++) {
		ne += c[i]->state == XVI_SS_ESTABLISHED;
		cr_expect_eq(c[i]->err, 0, "conn %d: %s", i, strerror(c[i]->err));
	}
	cr_assert_eq(ne, 50, "established clients: %d", ne);
	cr_assert_eq(na, 50, "accepted: %d", na);
	/* Each accepted stream pairs with exactly one client. */
	for (int i = 0; i < 50; i++) {
		int m = 0;

		for (int j = 0; j < 50; j++)
			m += acc[j]->id.peer_cid == c[i]->id.local_cid &&
			     acc[j]->id.local_cid == c[i]->id.peer_cid;
		cr_expect_eq(m, 1, "client %d matched %d server streams", i, m);
	}
	sim_fini(&s);
}

/*
 * The lab's conns50 case (tests/lab/streams.sh) in virtual time, as xvi-cat
 * --conns does it: every client sends one line, shuts down its half and
 * reads to end of stream, then closes; the server reads to end of stream,
 * checks the line and closes.  Library defaults (linger, timers) as in the
 * lab.  A clean run sends no RST at all: a retransmitted FIN meets TIME_WAIT
 * (re-ACKed), never a forgotten connection, and no lingering close gives up.
 */
#define LINE	"hello from a connection\n"

struct conns_result {
	int delivered;		/* server streams that read the line and EOF */
	int finished;		/* client streams that read EOF */
	int failed;		/* streams that saw an error */
	int first_err;
	__u64 rst[2], no_conn[2];
	__u32 left[2];		/* connections still alive at the end */
	__u64 took_us;
};

static void run_conns(__u64 seed, int n, int loss, struct conns_result *r)
{
	struct xvi_stream *c[64], *v[64], *l;
	bool sent[64] = { 0 }, cdone[64] = { 0 }, vdone[64] = { 0 };
	char got[64][64], buf[64];
	size_t glen[64] = { 0 };
	int na = 0, nc = 0, ns = 0;
	struct sim s;
	__u64 t0, end;

	cr_assert_leq(n, 64);
	memset(r, 0, sizeof(*r));
	sim_init(&s, seed, NULL);
	l = listener(&s, 7102, n);
	s.loss = loss;
	t0 = s.now;
	for (int i = 0; i < n; i++) {
		c[i] = sock(&s, 0);
		cr_assert_eq(xvi_ss__connect(c[i], &s.n[1].addr, 7102), -EINPROGRESS);
	}
	for (end = s.now + 60000000; s.now < end && (nc < n || ns < n) && !r->failed;) {
		struct xvi_stream *a;

		while (na < n && (a = xvi_ss__accept(l, NULL)))
			v[na++] = a;
		for (int i = 0; i < n; i++) {
			ssize_t k;

			if (cdone[i])
				continue;
			if (c[i]->state == XVI_SS_CLOSED) {
				r->failed++;
				r->first_err = r->first_err ?: c[i]->err ?: -1;
				cdone[i] = true;
				continue;
			}
			if (c[i]->state < XVI_SS_ESTABLISHED)
				continue;
			if (!sent[i]) {
				cr_assert_eq(xvi_ss__send(c[i], LINE, strlen(LINE)),
					     (ssize_t)strlen(LINE));
				cr_assert_eq(xvi_ss__shutdown(c[i], SHUT_WR), 0);
				sent[i] = true;
			}
			k = xvi_ss__recv(c[i], buf, sizeof(buf));
			if (k == -EAGAIN)
				continue;
			cdone[i] = true;
			if (k) {	/* an error, or data nobody sent */
				r->failed++;
				r->first_err = r->first_err ?: k < 0 ? (int)-k : -1;
				continue;
			}
			r->finished++;
			nc++;
			cr_assert_eq(xvi_ss__close(c[i]), 0);
		}
		for (int i = 0; i < na; i++) {
			ssize_t k;

			while (!vdone[i] && (k = xvi_ss__recv(v[i], got[i] + glen[i],
							      sizeof(got[i]) - glen[i])) != -EAGAIN) {
				if (k > 0) {
					glen[i] += k;
					continue;
				}
				vdone[i] = true;
				ns++;
				if (k < 0) {
					r->failed++;
					r->first_err = r->first_err ?: (int)-k;
					break;
				}
				if (glen[i] == strlen(LINE) && !memcmp(got[i], LINE, glen[i]))
					r->delivered++;
				cr_assert_eq(xvi_ss__close(v[i]), 0);
			}
		}
		if (!sim_step(&s))
			s.now += 1000;
	}
	r->took_us = s.now - t0;
	/* Lingering closes and TIME_WAIT run out on their own (bounded). */
	RUN_UNTIL(&s, 30000000, !s.n[0].ctx->nconns && !s.n[1].ctx->nconns);
	for (int i = 0; i < 2; i++) {
		r->rst[i] = s.n[i].ctx->stats.tx_rst;
		r->no_conn[i] = s.n[i].ctx->stats.rx_no_conn;
		r->left[i] = s.n[i].ctx->nconns;
	}
	if (r->failed)
		for (int i = 0; i < n; i++)
			if (!cdone[i])
				xvi_ss__abort(c[i]);
	xvi_ss__close(l);
	sim_fini(&s);
}

Test(stream_sim, many_short_connections_close_cleanly_under_30pct_loss, .timeout = 120)
{
	const int seeds = 24, n = 50;
	int bad = 0, failed = 0;
	__u64 rst = 0, no_conn = 0, worst = 0;

	for (int k = 0; k < seeds; k++) {
		struct conns_result r;

		run_conns(1000 + k, n, 300, &r);
		if (r.took_us > worst)
			worst = r.took_us;
		rst += r.rst[0] + r.rst[1];
		no_conn += r.no_conn[0] + r.no_conn[1];
		failed += r.failed;
		if (r.failed || r.delivered != n || r.finished != n || r.rst[0] || r.rst[1] ||
		    r.left[0] || r.left[1]) {
			bad++;
			cr_log_warn("seed %d: %d/%d delivered, %d/%d finished, %d failed (%s), RST sent %llu/%llu, for no connection %llu/%llu, left %u/%u",
				    1000 + k, r.delivered, n, r.finished, n, r.failed,
				    r.first_err > 0 ? strerror(r.first_err) : "-",
				    (unsigned long long)r.rst[0], (unsigned long long)r.rst[1],
				    (unsigned long long)r.no_conn[0],
				    (unsigned long long)r.no_conn[1], r.left[0], r.left[1]);
		}
	}
	cr_log_info("%d seeds x %d connections at 30%% loss: %d seeds bad, %d streams failed, %llu RST, %llu segments for no connection, slowest %.3f virtual s",
		    seeds, n, bad, failed, (unsigned long long)rst, (unsigned long long)no_conn,
		    worst / 1e6);
	cr_expect_eq(failed, 0, "streams failed: %d", failed);
	cr_expect_eq(rst, 0u, "RST sent: %llu", (unsigned long long)rst);
	cr_expect_eq(no_conn, 0u, "segments for no connection: %llu", (unsigned long long)no_conn);
	cr_assert_eq(bad, 0, "%d of %d seeds did not deliver and close cleanly", bad, seeds);
}

/* Drop node 0's pure ACKs of node 1's FIN the first @left times. */
struct fin_ack_drop {
	__u32 fin_end;		/* node 1's FIN sequence + 1 */
	int left, dropped;
	__u8 syn[128];		/* the client's first SYN, for replay */
	__u32 syn_len;
};

static bool fin_ack_filter(struct sim *s, int from, const void *buf, __u32 len)
{
	struct fin_ack_drop *d = s->fpriv;
	struct xvi_shdr h;

	if (from != 0 || xvi_shdr__decode(&h, buf, len, false) < 0)
		return false;
	if ((h.flags & XVI_SF_SYN) && !d->syn_len && len <= sizeof(d->syn)) {
		memcpy(d->syn, buf, len);
		d->syn_len = len;
	}
	if (d->fin_end && h.ack == d->fin_end && !h.len && !(h.flags & XVI_SF_FIN) &&
	    d->left > 0) {
		d->left--;
		d->dropped++;
		return true;
	}
	return false;
}

/*
 * RFC 9293 TIME_WAIT: the active closer's last ACK is lost again and again;
 * each retransmitted FIN is acknowledged anew and restarts TIME_WAIT, so the
 * passive side closes cleanly instead of meeting a forgotten connection (RST).
 */
Test(stream_sim, time_wait_acks_retransmitted_fins)
{
	struct fin_ack_drop d = { 0 };
	struct xvi_stream *l, *c, *v;
	struct sim s;
	char b[8];

	sim_init(&s, 61, NULL);
	s.filter = fin_ack_filter;
	s.fpriv = &d;
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	cr_assert_eq(xvi_ss__shutdown(c, SHUT_WR), 0);
	cr_assert(RUN_UNTIL(&s, 1000000, xvi_ss__recv(v, b, sizeof(b)) == 0));
	d.fin_end = v->snd.nxt + 1;
	d.left = 5;
	cr_assert_eq(xvi_ss__close(v), 0);	/* LAST_ACK in the background */
	cr_assert(RUN_UNTIL(&s, 1000000, c->state == XVI_SS_TIME_WAIT));
	cr_expect_eq(xvi_ss__recv(c, b, sizeof(b)), 0);
	cr_assert(RUN_UNTIL(&s, 20000000, !s.n[1].ctx->nconns), "server stuck");
	cr_expect_eq(d.dropped, 5, "ACKs of the FIN dropped: %d", d.dropped);
	cr_expect_eq(s.n[0].ctx->stats.tx_rst + s.n[1].ctx->stats.tx_rst, 0u, "RST sent");
	cr_expect_eq(s.n[0].ctx->stats.rx_no_conn, 0u, "FIN for a forgotten connection");
	cr_assert(RUN_UNTIL(&s, 20000000, c->state == XVI_SS_CLOSED));
	cr_expect_eq(c->err, 0);
	sim_fini(&s);
}

/* A copy of the SYN that arrives after accept() opens no second connection. */
Test(stream_sim, late_syn_copy_after_accept_is_not_a_new_connection)
{
	struct fin_ack_drop d = { 0 };
	struct xvi_stream *l, *c, *v;
	union xvi_sockaddr from;
	struct sim s;

	sim_init(&s, 62, NULL);
	s.filter = fin_ack_filter;
	s.fpriv = &d;
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	cr_assert(d.syn_len);
	from = s.n[0].addr;
	xvi_sctx__input(s.n[1].ctx, &from, d.syn, d.syn_len, false);
	xvi_sctx__run(s.n[1].ctx);
	cr_expect_eq(s.n[1].ctx->nconns, 1u, "server connections: %u", s.n[1].ctx->nconns);
	cr_expect_eq(l->listen.n_half, 0u);
	RUN_UNTIL(&s, 100000, false);
	cr_expect_eq(s.n[0].ctx->stats.tx_rst + s.n[1].ctx->stats.tx_rst, 0u, "RST sent");
	cr_expect_eq(c->state, XVI_SS_ESTABLISHED);
	cr_expect_eq(v->state, XVI_SS_ESTABLISHED);
	sim_fini(&s);
}

/* ---- keepalive ---- */

Test(stream_sim, keepalive_detects_dead_peer_within_bound)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .keepalive_idle_ms = 300, .keepalive_intvl_ms = 100,
		 .keepalive_cnt = 4);
	const __u64 bound = 300000 + 4 * 100000;
	struct xvi_stream *l, *c, *v;
	struct sim s;
	__u64 t0;

	sim_init(&s, 11, &o);
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	/* idle but alive: keepalive probes are answered, nothing fails */
	RUN_UNTIL(&s, 5 * bound, false);
	cr_assert_eq(c->state, XVI_SS_ESTABLISHED);
	cr_assert_eq(v->state, XVI_SS_ESTABLISHED);
	s.n[1].dead = true;
	t0 = s.now;
	cr_assert(RUN_UNTIL(&s, 10 * bound, c->state == XVI_SS_CLOSED));
	cr_expect_eq(c->err, ETIMEDOUT);
	cr_expect_eq(xvi_ss__recv(c, NULL, 0), -ETIMEDOUT);
	cr_expect(xvi_ss__events(c) & POLLERR);
	/* idle + cnt * intvl after the last thing heard (<= t0) */
	cr_expect_leq(s.now - t0, bound + 1000, "detected after %llu us, bound %llu",
		      (unsigned long long)(s.now - t0), (unsigned long long)bound);
	cr_expect_geq(s.now - t0, 4 * 100000, "too early: %llu us",
		      (unsigned long long)(s.now - t0));
	sim_fini(&s);
}

Test(stream_sim, user_timeout_on_dead_peer_with_data)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .user_timeout_ms = 1000, .keepalive_idle_ms = 100000);
	struct xvi_stream *l, *c, *v;
	struct sim s;

	sim_init(&s, 12, &o);
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	s.n[1].dead = true;
	cr_assert_eq(xvi_ss__send(c, "abc", 3), 3);
	cr_assert(RUN_UNTIL(&s, 5000000, c->state == XVI_SS_CLOSED));
	cr_expect_eq(c->err, ETIMEDOUT);
	cr_expect_eq(xvi_ss__send(c, "abc", 3), -ETIMEDOUT);
	sim_fini(&s);
}

/* ---- listen backlog under a SYN flood ---- */

static void inject_syn(struct sim *s, int to, __u32 ip, __u32 scid, __u16 svc)
{
	struct xvi_shdr h = { .flags = XVI_SF_SYN, .scid = scid, .seq = scid * 3, .mss = 1000,
			      .wnd = 65536, .svc = svc };
	union xvi_sockaddr from = { 0 };
	__u8 buf[128];
	__u32 hl = xvi_shdr__encode(&h, buf);

	xvi_shdr__seal(buf, hl);
	from.in.sin_family = AF_INET;
	from.in.sin_addr.s_addr = htonl(ip);
	from.in.sin_port = htons(1234);
	xvi_sctx__input(s->n[to].ctx, &from, buf, hl, false);
}

Test(stream_sim, syn_flood_is_bounded)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .syn_backlog = 16);
	struct xvi_stream *l, *c, *v;
	struct sim s;

	sim_init(&s, 13, &o);
	l = listener(&s, 3, 4);
	/* spoofed sources: their SYN|ACKs go nowhere (l_put asserts on
	 * unknown peers, so drop node 1's output during the flood) */
	s.drop_all[1] = true;
	for (__u32 i = 0; i < 5000; i++)
		inject_syn(&s, 1, 0xc6120000 + i, i + 1, 3);
	cr_expect_leq(s.n[1].ctx->nconns, 16u, "half-open connections: %u",
		      s.n[1].ctx->nconns);
	cr_expect_eq(l->listen.n_half, 16u);
	/* all at once: no entry is stale yet (none saw a SYN|ACK timeout),
	 * so none is replaced and the rest of the flood is dropped */
	cr_expect_eq(s.n[1].ctx->stats.syn_dropped, 5000u - 16);
	cr_expect_eq(s.n[1].ctx->stats.syn_evicted, 0u);
	/* repeated SYNs of one peer make one half-open connection */
	for (int i = 0; i < 10; i++)
		inject_syn(&s, 1, 0xc6130001, 42, 3);
	cr_expect_leq(l->listen.n_half, 16u);
	s.drop_all[1] = false;
	s.drop_strays = true;	/* the spoofed entries' repeated SYN|ACKs */
	s.nq = 0;
	/* the spoofed half-open entries must not hold a real client off */
	for (int i = 0; i < 2; i++) {
		c = pair(&s, l, &v);
		cr_assert_eq(v->state, XVI_SS_ESTABLISHED);
		cr_assert_eq(c->state, XVI_SS_ESTABLISHED);
	}
	cr_expect_leq(s.n[1].ctx->nconns, 16u + 2);
	cr_expect_gt(s.n[1].ctx->stats.syn_evicted, 0u, "stale spoofed entries never replaced");
	sim_fini(&s);
}

/*
 * More clients at once than the half-open queue holds: TCP's overflow
 * behaviour drops the SYNs that do not fit and each client's retransmitted
 * SYN gets in later.  Replacing half-open connections whose clients
 * already had the SYN|ACK answered those clients' data with RST.
 */
Test(stream_sim, syn_burst_beyond_backlog_retries_instead_of_reset)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .syn_backlog = 8);
	enum { N = 40 };
	struct xvi_stream *l, *c[N];
	int est = 0, acc = 0;
	struct sim s;

	sim_init(&s, 15, &o);
	l = listener(&s, 3, 4);
	for (int i = 0; i < N; i++) {
		c[i] = sock(&s, 0);
		cr_assert_eq(xvi_ss__connect(c[i], &s.n[1].addr, 3), -EINPROGRESS);
	}
	for (__u64 end = s.now + 20000000; s.now < end && (est < N || acc < N);) {
		struct xvi_stream *v;

		while ((v = xvi_ss__accept(l, NULL))) {
			cr_assert_lt(acc, N, "accepted more connections than clients");
			acc++;
		}
		est = 0;
		for (int i = 0; i < N; i++) {
			cr_assert_eq(c[i]->err, 0, "client %d: %s", i, strerror(c[i]->err));
			est += c[i]->state == XVI_SS_ESTABLISHED;
		}
		if (!sim_step(&s))
			s.now += 1000;
	}
	cr_expect_eq(acc, N, "accepted %d of %d", acc, N);
	cr_expect_gt(s.n[1].ctx->stats.syn_dropped, 0u, "the burst never overflowed (test broken)");
	cr_expect_eq(s.n[1].ctx->stats.syn_evicted, 0u);
	cr_expect_eq(s.n[1].ctx->stats.tx_rst, 0u);
	sim_fini(&s);
}

Test(stream_sim, accept_queue_bounded)
{
	XVI_OPTS(xvi_stream_ctx_opts, o);
	struct xvi_stream *l, *c[6];
	struct sim s;
	int est = 0;

	sim_init(&s, 14, &o);
	l = listener(&s, 3, 2);
	for (int i = 0; i < 6; i++) {
		c[i] = sock(&s, 0);
		xvi_ss__connect(c[i], &s.n[1].addr, 3);
	}
	RUN_UNTIL(&s, 300000, false);
	cr_expect_eq(l->listen.n_accept, 2u);
	cr_expect_gt(s.n[1].ctx->stats.accept_overflow, 0u);
	/* accepting drains the queue; the held-back handshakes complete */
	for (__u64 end = s.now + 20000000; s.now < end && est < 6;) {
		if (xvi_ss__accept(l, NULL))
			est++;
		if (!sim_step(&s))
			s.now += 1000;
	}
	cr_expect_eq(est, 6);
	sim_fini(&s);
}

/* ---- state machine ---- */

/* Record the states a stream passes through. */
struct trace {
	enum xvi_stream_state st[16];
	int n;
};

static void trace_add(struct trace *t, const struct xvi_stream *s)
{
	if (!t->n || t->st[t->n - 1] != s->state)
		if (t->n < 16)
			t->st[t->n++] = s->state;
}

static void expect_trace(const struct trace *t, const enum xvi_stream_state *want, int n,
			 const char *who)
{
	char got[256] = "";

	for (int i = 0; i < t->n; i++) {
		strcat(got, xvi_stream_state__str(t->st[i]));
		strcat(got, " ");
	}
	cr_expect_eq(t->n, n, "%s: %s", who, got);
	for (int i = 0; i < n && i < t->n; i++)
		cr_expect_eq(t->st[i], want[i], "%s: step %d: %s", who, i, got);
}

/* Run with both streams traced until both are CLOSED. */
static void trace_run(struct sim *s, struct xvi_stream *a, struct trace *ta,
		      struct xvi_stream *b, struct trace *tb, bool close_b_on_eof)
{
	__u64 end = s->now + 10000000;
	char x[16];

	while (s->now < end && (a->state != XVI_SS_CLOSED || b->state != XVI_SS_CLOSED)) {
		trace_add(ta, a);
		trace_add(tb, b);
		if (close_b_on_eof && b->rcv.eof && !b->snd.fin_queued)
			xvi_ss__shutdown(b, SHUT_WR);
		xvi_ss__recv(a, x, sizeof(x));
		xvi_ss__recv(b, x, sizeof(x));
		if (!sim_step(s))
			s->now += 1000;
	}
	trace_add(ta, a);
	trace_add(tb, b);
}

Test(stream_sim, active_and_passive_close)
{
	static const enum xvi_stream_state act[] = {
		XVI_SS_ESTABLISHED, XVI_SS_FIN_WAIT_1, XVI_SS_FIN_WAIT_2, XVI_SS_TIME_WAIT,
		XVI_SS_CLOSED };
	static const enum xvi_stream_state pas[] = {
		XVI_SS_ESTABLISHED, XVI_SS_CLOSE_WAIT, XVI_SS_LAST_ACK, XVI_SS_CLOSED };
	struct trace ta = { 0 }, tb = { 0 };
	struct xvi_stream *l, *c, *v;
	struct sim s;

	sim_init(&s, 21, NULL);
	s.delay_us = 1000;
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	trace_add(&ta, c);
	trace_add(&tb, v);
	cr_assert_eq(xvi_ss__send(c, "bye", 3), 3);
	xvi_ss__shutdown(c, SHUT_WR);
	trace_add(&ta, c);
	/* the server closes its half only after a while: FIN_WAIT_2 shows */
	RUN_UNTIL(&s, 20000, false);
	trace_add(&ta, c);
	trace_add(&tb, v);
	trace_run(&s, c, &ta, v, &tb, true);
	expect_trace(&ta, act, 5, "active");
	expect_trace(&tb, pas, 4, "passive");
	cr_expect_eq(c->err, 0);
	cr_expect_eq(v->err, 0);
	sim_fini(&s);
}

Test(stream_sim, simultaneous_close_crossing_fins)
{
	static const enum xvi_stream_state both[] = {
		XVI_SS_ESTABLISHED, XVI_SS_FIN_WAIT_1, XVI_SS_CLOSING, XVI_SS_TIME_WAIT,
		XVI_SS_CLOSED };
	struct trace ta = { 0 }, tb = { 0 };
	struct xvi_stream *l, *c, *v;
	struct sim s;

	sim_init(&s, 22, NULL);
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	trace_add(&ta, c);
	trace_add(&tb, v);
	/* both FINs leave before either arrives */
	xvi_ss__shutdown(c, SHUT_WR);
	xvi_ss__shutdown(v, SHUT_WR);
	trace_run(&s, c, &ta, v, &tb, false);
	expect_trace(&ta, both, 5, "client");
	expect_trace(&tb, both, 5, "server");
	sim_fini(&s);
}

Test(stream_sim, close_returns_at_once_and_finishes_in_background)
{
	struct xvi_stream *l, *c, *v;
	struct sim s;
	char buf[64];

	sim_init(&s, 23, NULL);
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	s.loss = 300;
	cr_assert_eq(xvi_ss__send(c, "last words", 10), 10);
	cr_assert_eq(xvi_ss__close(c), 0);	/* handle gone, connection lingers */
	cr_expect_eq(xvi_sctx__orphans(s.n[0].ctx), 1u);
	cr_assert(RUN_UNTIL(&s, 10000000, xvi_ss__recv(v, buf, sizeof(buf)) == 10));
	cr_assert_eq(memcmp(buf, "last words", 10), 0);
	cr_assert(RUN_UNTIL(&s, 10000000, xvi_ss__recv(v, buf, sizeof(buf)) == 0));
	xvi_ss__close(v);
	cr_assert(RUN_UNTIL(&s, 10000000, !s.n[0].ctx->nconns && !s.n[1].ctx->nconns));
	cr_expect_eq(xvi_sctx__orphans(s.n[0].ctx), 0u);
	sim_fini(&s);
}

/*
 * A close costs the FIN exchange and nothing more: once the peer has
 * acknowledged our FIN and closed too, neither side has anything left to
 * wait for.  After the data, only datagrams are delivered (no timer runs):
 * the closes must complete on the exchange alone, within a few one-way
 * delays, and TIME_WAIT must not count as a close still under way (it held
 * every process whose side closed first for linger_ms at exit).
 */
Test(stream_sim, close_completes_by_fin_ack_without_timers)
{
	static char in[64 * 1024], out[sizeof(in)];
	struct xvi_stream *l, *c, *v;
	size_t sent = 0, got = 0;
	struct sim s;
	__u64 t0;
	int steps = 0;

	sim_init(&s, 25, NULL);
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (char)(i * 131 + 7);
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	cr_assert(RUN_UNTIL(&s, 10000000, ({
		ssize_t r;

		if (sent < sizeof(in) && (r = xvi_ss__send(c, in + sent, sizeof(in) - sent)) > 0)
			sent += (size_t)r;
		if ((r = xvi_ss__recv(v, out + got, sizeof(out) - got)) > 0)
			got += (size_t)r;
		got == sizeof(in) && c->snd.una == c->snd.nxt;
	})), "transfer: %zu sent, %zu received", sent, got);
	cr_assert_eq(memcmp(in, out, sizeof(in)), 0);

	t0 = s.now;
	cr_assert_eq(xvi_ss__close(c), 0);		/* FIN_WAIT_1, an orphan */
	cr_expect_eq(xvi_sctx__closing(s.n[0].ctx), 1u);
	while (!v->rcv.eof && sim_deliver(&s))
		steps++;
	cr_assert_eq(xvi_ss__recv(v, out, sizeof(out)), 0, "no EOF from deliveries alone");
	cr_assert_eq(xvi_ss__close(v), 0);		/* LAST_ACK, an orphan */
	while ((xvi_sctx__closing(s.n[0].ctx) || xvi_sctx__closing(s.n[1].ctx)) &&
	       sim_deliver(&s))
		steps++;
	cr_expect_eq(xvi_sctx__closing(s.n[0].ctx), 0u, "active side still closing");
	cr_expect_eq(xvi_sctx__closing(s.n[1].ctx), 0u, "passive side still closing");
	cr_expect_eq(s.n[1].ctx->nconns, 0u, "passive side not CLOSED");
	cr_expect_eq(s.n[0].ctx->nconns, 1u, "active side should be in TIME_WAIT");
	/* FIN, its ACK, the peer's FIN, its ACK: four one-way delays */
	cr_expect_leq(s.now - t0, 4 * s.delay_us, "closes took %llu us of virtual time",
		      (unsigned long long)(s.now - t0));
	cr_expect_leq(steps, 8);
	cr_expect_eq(s.n[0].ctx->stats.linger_aborts + s.n[1].ctx->stats.linger_aborts, 0u);
	sim_fini(&s);
}

Test(stream_sim, linger_bounds_a_close_to_a_dead_peer)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .linger_ms = 500);
	struct xvi_stream *l, *c, *v;
	struct sim s;
	__u64 t0;

	sim_init(&s, 24, &o);
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	s.n[1].dead = true;
	t0 = s.now;
	cr_assert_eq(xvi_ss__close(c), 0);
	cr_assert(RUN_UNTIL(&s, 5000000, !s.n[0].ctx->nconns));
	cr_expect_leq(s.now - t0, 500000 + 1000);
	cr_expect_eq(s.n[0].ctx->all, NULL);
	sim_fini(&s);
}

Test(stream_sim, connect_refused_without_listener)
{
	struct xvi_stream *c;
	struct sim s;

	sim_init(&s, 25, NULL);
	c = sock(&s, 0);
	xvi_ss__connect(c, &s.n[1].addr, 77);
	cr_assert(RUN_UNTIL(&s, 1000000, c->state == XVI_SS_CLOSED));
	cr_expect_eq(c->err, ECONNREFUSED);
	cr_expect(xvi_ss__events(c) & POLLERR);
	sim_fini(&s);
}

/* RST with the right ids in each state: CLOSED, with the state's error. */
struct rst_case {
	const char *name;
	enum xvi_stream_state st;
	int err;
	bool data;		/* LAST_ACK: unacknowledged data before the FIN */
};

static const struct rst_case rst_cases[] = {
	{ "SYN_SENT", XVI_SS_SYN_SENT, ECONNREFUSED },
	{ "ESTABLISHED", XVI_SS_ESTABLISHED, ECONNRESET },
	{ "FIN_WAIT_1", XVI_SS_FIN_WAIT_1, ECONNRESET },
	{ "FIN_WAIT_2", XVI_SS_FIN_WAIT_2, ECONNRESET },
	{ "CLOSE_WAIT", XVI_SS_CLOSE_WAIT, ECONNRESET },
	/* RFC 9293: the peer sent its FIN and all our data is acknowledged:
	 * the RST just closes (the application already finished) */
	{ "CLOSING", XVI_SS_CLOSING, 0 },
	{ "LAST_ACK", XVI_SS_LAST_ACK, 0 },
	/* ... but not while our data may not have arrived */
	{ "LAST_ACK, data unacknowledged", XVI_SS_LAST_ACK, ECONNRESET, 1 },
	{ "TIME_WAIT", XVI_SS_TIME_WAIT, 0 },
};

static void inject_rst(struct sim *s, struct xvi_stream *x, int node)
{
	struct xvi_shdr h = { .flags = XVI_SF_RST | XVI_SF_ACK, .dcid = x->id.local_cid,
			      .scid = x->id.peer_cid ? x->id.peer_cid : 1, .seq = x->rcv.queue.nxt,
			      .ack = x->state == XVI_SS_SYN_SENT ? x->snd.iss + 1 : x->snd.nxt };
	__u8 buf[128];
	__u32 hl = xvi_shdr__encode(&h, buf);

	xvi_shdr__seal(buf, hl);
	xvi_sctx__input(s->n[node].ctx, &s->n[1 - node].addr, buf, hl, false);
}

Test(stream_sim, rst_in_every_state)
{
	for (size_t i = 0; i < sizeof(rst_cases) / sizeof(rst_cases[0]); i++) {
		const struct rst_case *k = &rst_cases[i];
		struct xvi_stream *l, *c, *v = NULL, *x;
		struct sim s;
		int node = 0;

		sim_init(&s, 30 + i, NULL);
		l = listener(&s, 1, 4);
		if (k->st == XVI_SS_SYN_SENT) {
			c = sock(&s, 0);
			s.drop_all[0] = true;
			xvi_ss__connect(c, &s.n[1].addr, 1);
			x = c;
		} else {
			c = pair(&s, l, &v);
			x = c;
			switch (k->st) {
			case XVI_SS_FIN_WAIT_1:	/* FIN sent, never acknowledged */
				s.drop_all[0] = true;
				xvi_ss__shutdown(c, SHUT_WR);
				break;
			case XVI_SS_FIN_WAIT_2:
				xvi_ss__shutdown(c, SHUT_WR);
				RUN_UNTIL(&s, 1000000, c->state == XVI_SS_FIN_WAIT_2);
				break;
			case XVI_SS_CLOSE_WAIT:
				xvi_ss__shutdown(v, SHUT_WR);
				RUN_UNTIL(&s, 1000000, c->state == XVI_SS_CLOSE_WAIT);
				break;
			case XVI_SS_CLOSING:	/* crossing FINs, the server's ACK lost */
				xvi_ss__shutdown(c, SHUT_WR);
				xvi_ss__shutdown(v, SHUT_WR);
				s.drop_all[1] = true;
				RUN_UNTIL(&s, 1000000, c->state == XVI_SS_CLOSING);
				break;
			case XVI_SS_LAST_ACK:
				xvi_ss__shutdown(v, SHUT_WR);
				RUN_UNTIL(&s, 1000000, c->state == XVI_SS_CLOSE_WAIT);
				s.drop_all[0] = true;
				if (k->data)
					cr_assert_eq(xvi_ss__send(c, "x", 1), 1);
				xvi_ss__shutdown(c, SHUT_WR);
				break;
			case XVI_SS_TIME_WAIT:
				xvi_ss__shutdown(c, SHUT_WR);
				xvi_ss__shutdown(v, SHUT_WR);
				RUN_UNTIL(&s, 1000000, c->state == XVI_SS_TIME_WAIT);
				break;
			default:
				break;
			}
		}
		if (x->state != k->st) {
			/* CLOSING needs both ACKs lost; exercise it by construction */
			cr_expect_eq(x->state, k->st, "%s: setup reached %s", k->name,
				     xvi_stream_state__str(x->state));
			sim_fini(&s);
			continue;
		}
		inject_rst(&s, x, node);
		cr_expect_eq(x->state, XVI_SS_CLOSED, "%s: after RST %s", k->name,
			     xvi_stream_state__str(x->state));
		cr_expect_eq(x->err, k->err, "%s: err %d", k->name, x->err);
		sim_fini(&s);
	}
}

Test(stream_sim, rst_in_syn_rcvd_frees_half_open)
{
	struct xvi_stream *l, *c;
	struct sim s;

	sim_init(&s, 40, NULL);
	l = listener(&s, 1, 4);
	c = sock(&s, 0);
	xvi_ss__connect(c, &s.n[1].addr, 1);
	s.drop_all[1] = true;	/* SYN|ACK never arrives */
	RUN_UNTIL(&s, 1000, l->listen.n_half == 1);
	cr_assert_eq(l->listen.n_half, 1u);
	{
		struct xvi_stream *h = l->listen.half_head;

		cr_assert_eq(h->state, XVI_SS_SYN_RCVD);
		inject_rst(&s, h, 1);
	}
	cr_expect_eq(l->listen.n_half, 0u);
	cr_expect_eq(s.n[1].ctx->nconns, 0u);
	sim_fini(&s);
}

/* ---- zero-copy sends from registered memory ---- */

Test(stream_sim, send_by_reference_completes_after_ack)
{
	struct xvi_stream *l, *c, *v;
	static __u8 region_mem[200000];
	__u8 *got = malloc(sizeof(region_mem) + 4);
	struct sim s;
	__u64 cookies[4];
	int region, n = 0;
	__u32 rcvd = 0;

	for (size_t i = 0; i < sizeof(region_mem); i++)
		region_mem[i] = pattern(i);
	sim_init(&s, 41, NULL);
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	s.loss = 30;
	region = 0;
	s.n[0].ctx->regions[0] = (struct xvi_sregion){ .addr = region_mem,
						       .len = sizeof(region_mem), .used = true };
	cr_assert_eq(xvi_ss__send(c, "hdr:", 4), 4);
	cr_assert_eq(xvi_ss__send_ref(c, region, 0, 100000, 1), 100000);
	cr_assert_eq(xvi_ss__send_ref(c, region, 100000, 100000, 2), 100000);
	cr_expect_eq(xvi_ss__reap(c, cookies, 4), 0);
	cr_expect_eq(s.n[0].ctx->regions[0].refs, 2u);
	while (rcvd < 200004 && RUN_UNTIL(&s, 10000000, xvi_srq__ready(&v->rcv.queue))) {
		ssize_t r = xvi_ss__recv(v, got + rcvd, 200004 - rcvd);

		cr_assert(r > 0);
		rcvd += r;
		n += xvi_ss__reap(c, cookies + n, 4 - n);
	}
	cr_assert_eq(rcvd, 200004u);
	cr_assert_eq(memcmp(got, "hdr:", 4), 0);
	cr_assert_eq(memcmp(got + 4, region_mem, sizeof(region_mem)), 0);
	RUN_UNTIL(&s, 1000000, c->snd.una == c->snd.nxt);
	n += xvi_ss__reap(c, cookies + n, 4 - n);
	cr_expect_eq(n, 2);
	cr_expect_eq(cookies[0], 1u);
	cr_expect_eq(cookies[1], 2u);
	cr_expect_eq(s.n[0].ctx->regions[0].refs, 0u);
	sim_fini(&s);
	free(got);
}

/* ---- loss recovery: RTO (RFC 6298), TLP and RACK (RFC 8985) ---- */

/* Drop node 0's data segments at sequence fseq[i] the first fcount[i] times. */
struct drops {
	__u32 seq[4];
	int left[4];
	int n;
	__u64 tx_at[64];	/* times node 0 sent the segment at seq[0] */
	int ntx;
};

static bool drop_filter(struct sim *s, int from, const void *buf, __u32 len)
{
	struct drops *d = s->fpriv;
	struct xvi_shdr h;

	if (from != 0 || xvi_shdr__decode(&h, buf, len, false) < 0 || !h.len)
		return false;
	if (h.seq == d->seq[0] && d->ntx < 64)
		d->tx_at[d->ntx++] = s->now;
	for (int i = 0; i < d->n; i++)
		if (h.seq == d->seq[i] && d->left[i] > 0) {
			d->left[i]--;
			return true;
		}
	return false;
}

/* Client sends @segs full segments; returns when all are acknowledged. */
static __u64 send_segs(struct sim *s, struct xvi_stream *c, struct xvi_stream *v, int segs,
		       __u64 limit_us)
{
	__u32 total = segs * c->snd.mss;
	__u8 *buf = calloc(1, total);
	__u64 t0 = s->now;

	cr_assert_eq(xvi_ss__send(c, buf, total), (ssize_t)total);
	cr_assert(RUN_UNTIL(s, limit_us, (xvi_ss__recv(v, buf, total),
					 c->snd.una == c->snd.nxt)),
		  "not acknowledged within %llu us: una %u nxt %u, timeouts %llu",
		  (unsigned long long)limit_us, c->snd.una, c->snd.nxt,
		  (unsigned long long)c->stats.timeouts);
	free(buf);
	return s->now - t0;
}

Test(stream_sim, tail_loss_repaired_by_probe_not_timeout)
{
	struct xvi_stream *l, *c, *v;
	struct drops d = { 0 };
	struct sim s;
	__u64 took;

	sim_init(&s, 51, NULL);
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	/* warm up the RTT estimate */
	send_segs(&s, c, v, 4, 1000000);
	d.seq[0] = c->snd.nxt + 7 * c->snd.mss;	/* the last of 8 */
	d.left[0] = 1;
	d.n = 1;
	s.filter = drop_filter;
	s.fpriv = &d;
	took = send_segs(&s, c, v, 8, 1000000);
	cr_expect_eq(c->stats.timeouts, 0u, "tail loss cost a timeout");
	cr_expect_geq(c->stats.tlp_probes, 1u);
	cr_expect_lt(took, (__u64)c->ctx->rto_min_us, "repair took %llu us",
		     (unsigned long long)took);
	sim_fini(&s);
}

Test(stream_sim, lost_retransmission_found_by_rack)
{
	struct xvi_stream *l, *c, *v;
	struct drops d = { 0 };
	struct sim s;
	__u64 took;

	sim_init(&s, 52, NULL);
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	send_segs(&s, c, v, 4, 1000000);
	/* the 3rd of 30 segments is lost, and so is its first retransmission */
	d.seq[0] = c->snd.nxt + 2 * c->snd.mss;
	d.left[0] = 2;
	d.n = 1;
	s.filter = drop_filter;
	s.fpriv = &d;
	took = send_segs(&s, c, v, 30, 1000000);
	cr_expect_eq(c->stats.timeouts, 0u, "a lost retransmission waited for the RTO");
	cr_expect_geq(c->stats.lost_retrans, 1u);
	cr_expect_eq(d.ntx, 3, "transmissions of the segment: %d", d.ntx);
	cr_expect_lt(took, (__u64)c->ctx->rto_min_us, "repair took %llu us",
		     (unsigned long long)took);
	sim_fini(&s);
}

Test(stream_sim, rto_backs_off_exponentially_and_restarts)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .rto_min_ms = 20, .rto_max_ms = 400,
		 .user_timeout_ms = 5000, .keepalive_idle_ms = 100000);
	struct xvi_stream *l, *c, *v;
	struct drops d = { 0 };
	struct sim s;

	sim_init(&s, 53, &o);
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	send_segs(&s, c, v, 2, 1000000);
	/* a black hole for the head segment: every copy is lost for a while */
	d.seq[0] = c->snd.nxt;
	d.left[0] = 6;
	d.n = 1;
	s.filter = drop_filter;
	s.fpriv = &d;
	send_segs(&s, c, v, 1, 10000000);
	for (int i = 0; i < d.ntx; i++)
		cr_log_info("tx %d at +%llu us", i, (unsigned long long)(d.tx_at[i] - d.tx_at[0]));
	cr_assert_eq(d.ntx, 7, "transmissions: %d", d.ntx);
	/* the original, one tail probe, then RTOs: 20, 40, 80, ... capped */
	cr_expect_eq(c->stats.tlp_probes, 1u);
	for (int i = 3; i < d.ntx; i++) {
		__u64 gap = d.tx_at[i] - d.tx_at[i - 1], prev = d.tx_at[i - 1] - d.tx_at[i - 2];
		__u64 want = prev * 2 > 400000 ? 400000 : prev * 2;

		cr_expect(gap + 1000 >= want && gap <= want + 1000,
			  "gap %d: %llu us after %llu us (want ~%llu)", i,
			  (unsigned long long)gap, (unsigned long long)prev,
			  (unsigned long long)want);
	}
	/* the ACK clears the backoff: the next RTO is a plain one again */
	cr_expect_eq(c->rtt.backoff, 0u);
	cr_expect_leq(c->stats.timeouts, 5u);
	sim_fini(&s);
}

/* ---- ACK piggybacking, window validation, spurious timeouts ---- */

/* One request and one reply of @len bytes; the sides' segment counts. */
static void exchange(struct sim *s, struct xvi_stream *c, struct xvi_stream *v, __u32 len)
{
	__u8 buf[256] = { 0 };

	cr_assert_eq(xvi_ss__send(c, buf, len), (ssize_t)len);
	cr_assert(RUN_UNTIL(s, 100000, xvi_srq__ready(&v->rcv.queue) >= len),
		  "request not delivered");
	cr_assert_eq(xvi_ss__recv(v, buf, sizeof(buf)), (ssize_t)len);
	cr_assert_eq(xvi_ss__send(v, buf, len), (ssize_t)len);
	cr_assert(RUN_UNTIL(s, 100000, xvi_srq__ready(&c->rcv.queue) >= len),
		  "reply not delivered");
	cr_assert_eq(xvi_ss__recv(c, buf, sizeof(buf)), (ssize_t)len);
}

Test(stream_sim, ping_pong_acks_ride_on_replies)
{
	XVI_OPTS(xvi_stream_ctx_opts, o);
	struct xvi_stream *l, *c, *v;
	__u64 c0, v0, probes0;
	__u8 buf[64] = { 0 };
	struct sim s;

	sim_init(&s, 61, &o);
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	c->flags |= XVI_STREAM_NODELAY;
	v->flags |= XVI_STREAM_NODELAY;
	for (int i = 0; i < 3; i++)
		exchange(&s, c, v, 16);
	c0 = c->stats.segs_sent;
	v0 = v->stats.segs_sent;
	for (int i = 0; i < 100; i++)
		exchange(&s, c, v, 16);
	/* Each request's ACK rides on its reply and each reply's on the next
	 * request: one segment each way per exchange (plus at most the last
	 * reply's ACK, which nothing carried). */
	cr_expect_leq(c->stats.segs_sent - c0, 101u, "client sent %llu segments for 100 requests",
		      (unsigned long long)(c->stats.segs_sent - c0));
	cr_expect_eq(v->stats.segs_sent - v0, 100u, "server sent %llu segments for 100 replies",
		     (unsigned long long)(v->stats.segs_sent - v0));
	/* A request nobody answers is still acknowledged, within the hold and
	 * before the client's tail loss probe would fire. */
	probes0 = c->stats.tlp_probes;
	cr_assert_eq(xvi_ss__send(c, buf, 16), 16);
	cr_assert(RUN_UNTIL(&s, 100000, xvi_srq__ready(&v->rcv.queue) >= 16));
	cr_assert_eq(xvi_ss__recv(v, buf, sizeof(buf)), 16);
	cr_assert(RUN_UNTIL(&s, 1000, c->snd.una == c->snd.nxt), "unanswered request not acked");
	cr_expect_eq(c->stats.tlp_probes, probes0);
	cr_expect(!v->ack.interactive, "a hold that ended without a reply keeps holding");
	sim_fini(&s);
}

Test(stream_sim, cwnd_does_not_grow_when_the_peer_window_limits)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .window = 32);
	struct xvi_stream *l, *c, *v;
	__u8 *buf = calloc(1, 65536);
	__u64 sent = 0, rcvd = 0;
	struct sim s;

	sim_init(&s, 67, &o);
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	while (rcvd < (8u << 20)) {
		ssize_t r;

		if (sent < (8u << 20) && (r = xvi_ss__send(c, buf, 65536)) > 0)
			sent += r;
		while ((r = xvi_ss__recv(v, buf, 65536)) > 0)
			rcvd += r;
		if (!sim_step(&s))
			s.now += 1000;
	}
	/* RFC 7661: slow start may reach twice the largest flight, which the
	 * peer's window (32 segments) bounds; it used to grow by every byte
	 * acknowledged, to megabytes. */
	cr_expect_leq(c->cc.cwnd, 2 * 32 * c->snd.mss + 2 * c->snd.mss, "cwnd %u after 8 MiB",
		      c->cc.cwnd);
	cr_expect_eq(c->stats.segs_retrans, 0u);
	sim_fini(&s);
	free(buf);
}

struct late_acks {
	bool on;
	__u64 extra_us;
};

/* Node 1's segments (ACKs) arrive @extra_us late while on; nothing is lost. */
static bool late_ack_filter(struct sim *s, int from, const void *buf, __u32 len)
{
	struct late_acks *d = s->fpriv;

	if (from != 1 || !d->on)
		return false;
	enqueue(s, 0, buf, len, d->extra_us);
	s->dropped--;	/* counted as dropped by the caller; it is not */
	return true;
}

Test(stream_sim, spurious_timeout_is_undone)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .keepalive_idle_ms = 100000);
	struct late_acks d = { .on = true, .extra_us = 12000 };
	struct xvi_stream *l, *c, *v;
	__u8 buf[16384] = { 0 };
	__u32 cwnd0;
	struct sim s;

	sim_init(&s, 71, &o);
	l = listener(&s, 1, 4);
	c = pair(&s, l, &v);
	cwnd0 = c->cc.cwnd;
	s.filter = late_ack_filter;
	s.fpriv = &d;
	/* 12 segments in flight; every ACK comes 12 ms late, after the RTO
	 * (at least 5 ms): the receiver was only slow, nothing was lost. */
	cr_assert_eq(xvi_ss__send(c, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	cr_assert(RUN_UNTIL(&s, 20000, c->stats.timeouts >= 1), "no timeout");
	/* The receiver's ACKs keep their order: the late ones come first. */
	cr_assert(RUN_UNTIL(&s, 100000, c->snd.una == c->snd.nxt));
	d.on = false;
	cr_expect_eq(c->stats.timeouts, 1u);
	cr_expect_geq(c->stats.spurious_retrans, 1u);
	/* Eifel response: the window before the timeout is back (it was one
	 * segment after it), and RACK did not take the late originals for lost. */
	cr_expect_geq(c->cc.cwnd, cwnd0, "cwnd %u, was %u before the timeout", c->cc.cwnd,
		      cwnd0);
	cr_expect_eq(c->stats.fast_retrans, 0u);
	cr_expect_leq(c->stats.segs_retrans, 2u, "retransmissions: %llu",
		      (unsigned long long)c->stats.segs_retrans);
	cr_expect_eq(xvi_srq__ready(&v->rcv.queue), sizeof(buf));
	sim_fini(&s);
}

/*
 * The receiver stops reading until the window is closed with nothing in
 * flight, then reads everything: its window update alone must restart
 * the sender (no ACK of data is coming, and the update ends the persist
 * timer).
 */
Test(stream_sim, window_update_after_zero_window_restarts_output)
{
	struct xvi_stream *l, *c, *v;
	__u8 *buf = malloc(1 << 20);
	struct sim s;
	__u64 sent;
	__u32 held;

	sim_init(&s, 79, NULL);
	l = listener(&s, 10, 4);
	c = pair(&s, l, &v);
	memset(buf, 7, 1 << 20);
	sent = sim_fill_window(&s, c, buf, 1 << 20);
	held = xvi_srq__ready(&v->rcv.queue);
	cr_assert_eq(c->snd.nxt, c->snd.una, "data still in flight");
	cr_assert_lt(held, sent, "the window never closed");
	cr_assert_eq(xvi_ss__recv(v, buf, 1 << 20), held);
	cr_assert(RUN_UNTIL(&s, 1000000, xvi_srq__ready(&v->rcv.queue) > 0),
		  "the window update did not restart the sender");
	sim_fini(&s);
	free(buf);
}
