// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-perf clients.  ping-pong: one message in flight, every message asks
 * for a reply (sockperf's PongModeAlways); the first 400 ms are warmup and
 * not measured, as in sockperf.  throughput: batches as fast as possible (or
 * --mps), no replies asked (sockperf's PongModeNever); an xvi-perf server is
 * asked afterwards how many arrived.
 */
#include "perf.h"

#define WARMUP_NS	400000000ull	/* sockperf's TEST_START_WARMUP_MSEC */
#define REPLY_TIMEOUT_NS 200000000ull
#define MAX_SAMPLES	(64u << 20)	/* 256 MB of samples at most */

static int open_client(const struct perf_cfg *cfg, struct xt *t, __u16 *port_out)
{
	union xvi_sockaddr local;

	/*
	 * A kernel socket gets an ephemeral port from bind(); an endpoint
	 * needs an explicit port for its tag, so take one from the pid.
	 */
	__u16 port = cfg->xt.kernel ? 0 :
		     (__u16)(49152 + (xt_pid_port() - 49152 + cfg->thread) % 16384);

	/* --threads: a port per thread, each its own flow (and tag). */
	xt_any_addr(cfg->addr.sa.sa_family, port, &local);
	if (xt_open(t, &cfg->xt, &local))
		return -1;
	if (port_out)
		*port_out = xt_local_port(t);
	return 0;
}

/* Pace to --mps: wait until message @k (from 0) is due. */
static void pace(const struct perf_cfg *cfg, __u64 start, __u64 k)
{
	__u64 due, now;

	if (!cfg->mps)
		return;
	due = start + (__u64)((double)k * 1e9 / (double)cfg->mps);
	while (!xt_stop && (now = xt_now_ns()) < due) {
		if (cfg->xt.wait != XVI_WAIT_BUSY && due - now > 100000ull) {
			struct timespec ts = { 0, (long)(due - now - 50000ull) };

			nanosleep(&ts, NULL);
		}
	}
}

/* Send one message; 0 or -errno.  Retries briefly while buffers are in flight. */
static int send_one(struct xt *t, const union xvi_sockaddr *dst, __u64 seq,
		    __u16 flags, __u32 len, const void *body)
{
	struct xvi_txbuf b;
	int k = 0, tries, r;

	for (tries = 0; tries < 1000; tries++) {
		k = xt_tx_alloc(t, &b, 1);
		if (k)
			break;
		xt_flush(t);
	}
	if (k < 0)
		return k;
	if (!k)
		return -ENOBUFS;
	if (len > b.cap) {
		xt_tx_free(t, &b, 1);
		return -EMSGSIZE;
	}
	if (body)
		memcpy(b.data, body, len);
	else
		memset((char *)b.data + SP_HDR_LEN, 0, len - SP_HDR_LEN);
	sp_put(b.data, seq, flags, len);
	b.len = len;
	b.flags = 0;
	b.dst = dst;
	r = xt_tx_send(t, &b, 1);
	if (r <= 0) {
		xt_tx_free(t, &b, 1);
		return r < 0 ? r : -EAGAIN;
	}
	return 0;
}

static const char *hint_for(int err)
{
	switch (err) {
	case EHOSTUNREACH:
		return ": no route or no neighbour answer for the server address: check the address and 'ip route'";
	case EMSGSIZE:
		return ": the message is larger than the endpoint can send: lower -m";
	case EAFNOSUPPORT:
		return ": the server address family does not fit the endpoint";
	default:
		return "";
	}
}

int perf_ping_pong(const struct perf_cfg *cfg)
{
	struct lat_samples lat = { .max = MAX_SAMPLES };
	struct lat_summary sum;
	struct xvi_msg msgs[XT_BATCH];
	struct xt_cpu cpu0 = { 0 }, cpu1, cpu;
	bool cpu_started;
	__u64 start, t_meas, t_end, seq = 0;
	__u64 sent = 0, received = 0, lost = 0, late = 0, send_err = 0, warm_sent = 0;
	int first_err = 0, rc = 0;
	struct xt t;
	char a[64];
	double secs;

	if (open_client(cfg, &t, NULL))
		return 1;
	if (cfg->msg_size > t.max_payload) {
		fprintf(stderr, "xvi-perf: -m %u is above the largest payload this endpoint can send (%u): lower -m\n",
			cfg->msg_size, t.max_payload);
		xt_close(&t);
		return 1;
	}

	start = xt_now_ns();
	t_meas = start + WARMUP_NS;
	cpu_started = false;
	t_end = t_meas + (__u64)(cfg->seconds * 1e9);
	while (!xt_stop) {
		__u64 t0, t1 = 0, deadline;
		bool measuring, got = false;
		int err;

		pace(cfg, start, seq);
		t0 = xt_now_ns();
		if (t0 >= t_end)
			break;
		measuring = t0 >= t_meas;
		if (measuring && !cpu_started) {
			xt_cpu_now(&cpu0);
			cpu_started = true;
		}
		seq++;
		err = send_one(&t, &cfg->addr, seq, SP_F_CLIENT | SP_F_PONG, cfg->msg_size,
			       NULL);
		if (err) {
			send_err++;
			if (!first_err)
				first_err = -err;
			if (err == -EMSGSIZE || err == -EAFNOSUPPORT)
				break;
			/* e.g. the neighbour is not resolved yet: back off a little */
			usleep(1000);
			continue;
		}
		if (measuring)
			sent++;
		else
			warm_sent++;

		deadline = t0 + REPLY_TIMEOUT_NS;
		while (!got && !xt_stop) {
			int n, i, w = xt_ms_until(deadline);

			if (w <= 0 && xt_now_ns() >= deadline)
				break;
			w = xt_wait(&t, w);
			if (w < 0) {
				fprintf(stderr, "xvi-perf: wait failed: %s\n", strerror(-w));
				rc = 1;
				break;
			}
			n = xt_recv(&t, msgs, XT_BATCH);
			t1 = xt_now_ns();
			if (n < 0) {
				fprintf(stderr, "xvi-perf: receive failed: %s\n", strerror(-n));
				rc = 1;
				break;
			}
			for (i = 0; i < n; i++) {
				struct sp_hdr h;

				if (!sp_get(msgs[i].data, msgs[i].len, &h) ||
				    (h.flags & SP_F_CLIENT))
					continue;
				if (h.seq == seq)
					got = true;
				else
					late++;
			}
			xt_release(&t, msgs, n);
		}
		if (rc)
			break;
		if (!measuring)
			continue;
		if (got) {
			received++;
			lat_add(&lat, t1 - t0);
		} else if (!xt_stop) {
			lost++;
		} else {
			sent--;	/* cut short by a signal: neither answered nor lost */
		}
	}
	secs = (double)(xt_now_ns() - t_meas) / 1e9;
	if (secs <= 0)
		secs = 1e-9;
	xt_cpu_now(&cpu1);
	cpu = cpu_started ? xt_cpu_diff(&cpu0, &cpu1) : (struct xt_cpu){ 0 };
	lat_summarize(&lat, &sum);

	if (cfg->json) {
		printf("{\"mode\":\"ping-pong\",\"transport\":\"%s\",\"server\":\"%s\","
		       "\"msg_size\":%u,\"seconds\":%.3f,\"warmup_seconds\":%.3f,"
		       "\"sent\":%llu,\"received\":%llu,\"lost\":%llu,\"late\":%llu,"
		       "\"send_errors\":%llu,\"loss_pct\":%.4f,\"msg_rate\":%.1f,",
		       perf_transport_name(cfg), xt_addr_str(&cfg->addr, a, sizeof(a)),
		       cfg->msg_size, secs, WARMUP_NS / 1e9,
		       (unsigned long long)sent, (unsigned long long)received,
		       (unsigned long long)lost, (unsigned long long)late,
		       (unsigned long long)send_err,
		       sent ? 100.0 * (double)lost / (double)sent : 0.0,
		       (double)received / secs);
		lat_print_json(&sum);
		printf(",");
		cpu_print_json(&cpu, received);
		printf("}\n");
	} else {
		printf("xvi-perf: ping-pong to %s (%s), %u-byte messages, %.3f s measured "
		       "after %.1f s warmup\n",
		       xt_addr_str(&cfg->addr, a, sizeof(a)), perf_transport_name(cfg),
		       cfg->msg_size, secs, WARMUP_NS / 1e9);
		printf("xvi-perf: sent %llu, received %llu, lost %llu (%.3f %%), late %llu, "
		       "send errors %llu, rate %.0f msg/s\n",
		       (unsigned long long)sent, (unsigned long long)received,
		       (unsigned long long)lost,
		       sent ? 100.0 * (double)lost / (double)sent : 0.0,
		       (unsigned long long)late, (unsigned long long)send_err,
		       (double)received / secs);
		lat_print_text(&sum);
	}
	fflush(stdout);
	if (first_err)
		fprintf(stderr, "xvi-perf: %llu sends failed, first: %s%s\n",
			(unsigned long long)send_err, strerror(first_err), hint_for(first_err));
	if (!rc && !received && !xt_stop) {
		fprintf(stderr, "xvi-perf: no replies from %s: is a server running there "
			"(xvi-perf server or sockperf server), and does the route reach it?\n",
			xt_addr_str(&cfg->addr, a, sizeof(a)));
		rc = 1;
	}
	(void)warm_sent;
	lat_free(&lat);
	xt_close(&t);
	return rc;
}

/*
 * Ask an xvi-perf server how many of our messages it counted.  Returns 1
 * with @rx/@bytes, 0 if a sockperf server echoed the question, -ETIMEDOUT
 * if nothing came back.
 */
static int query_server(struct xt *t, const union xvi_sockaddr *dst, __u64 seq,
			__u64 *rx, __u64 *bytes, struct xt_cpu *cpu, bool *have_cpu)
{
	char q[SP_STATS_CPU_LEN];
	struct xvi_msg msgs[XT_BATCH];
	int attempt, n, i, found = -ETIMEDOUT;

	memset(q, 0, sizeof(q));
	sp_put(q, seq, SP_F_CLIENT | SP_F_PONG | SP_F_XVI_STATS, sizeof(q));
	sp_put_u64(q, SP_HDR_LEN, SP_STATS_ASK);
	for (attempt = 0; attempt < 3 && found == -ETIMEDOUT && !xt_stop; attempt++) {
		__u64 deadline = xt_now_ns() + 300000000ull;

		if (send_one(t, dst, seq, SP_F_CLIENT | SP_F_PONG | SP_F_XVI_STATS,
			     sizeof(q), q))
			continue;
		while (found == -ETIMEDOUT && !xt_stop && xt_now_ns() < deadline) {
			xt_wait(t, xt_ms_until(deadline));
			n = xt_recv(t, msgs, XT_BATCH);
			for (i = 0; i < n; i++) {
				struct sp_hdr h;
				__u64 magic;

				if (!sp_get(msgs[i].data, msgs[i].len, &h) ||
				    (h.flags & SP_F_CLIENT) || h.seq != seq ||
				    h.len < SP_STATS_LEN)
					continue;
				magic = sp_get_u64(msgs[i].data, SP_HDR_LEN);
				if (magic == SP_STATS_ANSWER) {
					*rx = sp_get_u64(msgs[i].data, SP_HDR_LEN + 8);
					*bytes = sp_get_u64(msgs[i].data, SP_HDR_LEN + 16);
					/* An older server leaves the CPU fields as sent: 0. */
					*have_cpu = h.len >= SP_STATS_CPU_LEN &&
						    msgs[i].len >= SP_STATS_CPU_LEN;
					if (*have_cpu) {
						cpu->user_ns = sp_get_u64(msgs[i].data,
									  SP_STATS_LEN);
						cpu->sys_ns = sp_get_u64(msgs[i].data,
									 SP_STATS_LEN + 8);
					}
					found = 1;
				} else if (magic == SP_STATS_ASK) {
					found = 0;
				}
			}
			if (n > 0)
				xt_release(t, msgs, n);
		}
	}
	return found;
}

/*
 * Fill up to @want send buffers with messages seq+1.. and send them; returns
 * the number sent (0 while no buffer is free) or -errno.  @user is the
 * application buffer for the copying modes.
 */
static int send_batch(const struct perf_cfg *cfg, struct xt *t, struct xvi_txbuf *bufs,
		      int want, __u64 seq, char *user)
{
	int k, r, i;

	if (cfg->send == SEND_COPY) {
		/* One copying send call per message, as a sendto() program does. */
		for (i = 0; i < want; i++) {
			ssize_t s;

			sp_put(user, seq + 1 + i, SP_F_CLIENT, cfg->msg_size);
			s = xt_sendto(t, user, cfg->msg_size, &cfg->addr);
			if (s < 0)
				return i ? i : (s == -EAGAIN ? 0 : (int)s);
		}
		return want;
	}
	k = xt_tx_alloc(t, bufs, want);
	if (k <= 0)
		return k;
	for (i = 0; i < k; i++) {
		if (cfg->msg_size > bufs[i].cap) {
			xt_tx_free(t, bufs, k);
			return -EMSGSIZE;
		}
		if (cfg->send == SEND_MEMCPY) {
			sp_put(user, seq + 1 + i, SP_F_CLIENT, cfg->msg_size);
			memcpy(bufs[i].data, user, cfg->msg_size);
		} else {
			sp_put(bufs[i].data, seq + 1 + i, SP_F_CLIENT, cfg->msg_size);
		}
		bufs[i].len = cfg->msg_size;
		bufs[i].flags = 0;
		bufs[i].dst = &cfg->addr;
	}
	r = xt_tx_send(t, bufs, k);
	if (r < 0) {
		xt_tx_free(t, bufs, k);
		return r;
	}
	/* Unsent ones are given back; their numbers are reused. */
	if (r < k)
		xt_tx_free(t, bufs + r, k - r);
	return r;
}

static const char *send_name(enum send_mode m)
{
	return m == SEND_COPY ? "copy" : m == SEND_MEMCPY ? "memcpy" : "zc";
}

/* What one throughput run measured, and what the server said. */
struct tp_result {
	__u64 sent, send_err, nobuf, srv_rx, srv_bytes;
	struct xt_cpu cpu, srv_cpu;
	struct xvi_endpoint_stats es;
	bool have_srv_cpu, have_es, ran;	/* ran: opened and sent */
	__u16 port;				/* the flow's source port */
	double secs;
	int first_err, rc, q;
};

/* Open, send for the test time, ask the server, close. */
static void tp_measure(const struct perf_cfg *cfg, struct tp_result *res)
{
	struct xvi_txbuf bufs[XT_BATCH];
	struct xvi_msg msgs[XT_BATCH];
	__u64 start, end, now, seq = 0;
	struct xt_cpu cpu0, cpu1;
	char *user = NULL;
	struct xt t;
	int n;

	memset(res, 0, sizeof(*res));
	res->q = -ETIMEDOUT;
	res->rc = 1;
	if (open_client(cfg, &t, &res->port))
		return;
	if (cfg->msg_size > t.max_payload) {
		fprintf(stderr, "xvi-perf: -m %u is above the largest payload this endpoint can send (%u): lower -m\n",
			cfg->msg_size, t.max_payload);
		xt_close(&t);
		return;
	}
	user = calloc(1, cfg->msg_size);
	if (!user) {
		xt_close(&t);
		return;
	}
	res->rc = 0;
	res->ran = true;
	if (cfg->threads > 1)
		perf_pin_cpu(cfg->thread);
	/* Tells an xvi-perf server to count this run afresh; sockperf ignores it. */
	if (send_one(&t, &cfg->addr, 0, SP_F_CLIENT | SP_F_WARMUP, cfg->msg_size, NULL) == 0)
		usleep(10000);

	xt_cpu_now(&cpu0);
	start = now = xt_now_ns();
	end = start + (__u64)(cfg->seconds * 1e9);
	while (!xt_stop && now < end) {
		int want = cfg->batch, r;

		if (cfg->mps) {
			__u64 due = (__u64)((double)(now - start) * (double)cfg->mps / 1e9) + 1;

			if (due <= res->sent) {
				pace(cfg, start, res->sent);
				now = xt_now_ns();
				continue;
			}
			if (due - res->sent < (__u64)want)
				want = (int)(due - res->sent);
		}
		r = send_batch(cfg, &t, bufs, want, seq, user);
		if (r == 0) {
			res->nobuf++;
			xt_flush(&t);
		} else if (r < 0) {
			res->send_err += want;
			if (!res->first_err)
				res->first_err = -r;
			if (r == -EMSGSIZE || r == -EAFNOSUPPORT) {
				fprintf(stderr, "xvi-perf: -m %u cannot be sent: %s\n",
					cfg->msg_size, strerror(-r));
				res->rc = 1;
				break;
			}
			usleep(1000);
		} else {
			seq += r;
			res->sent += r;
		}
		now = xt_now_ns();
	}
	now = xt_now_ns();
	xt_cpu_now(&cpu1);
	res->cpu = xt_cpu_diff(&cpu0, &cpu1);
	res->secs = (double)(now - start) / 1e9;
	if (res->secs <= 0)
		res->secs = 1e-9;
	/* Let the last sends leave, then drop anything that came back meanwhile. */
	for (end = now + 1000000000ull; xt_flush(&t) > 0 && xt_now_ns() < end;)
		usleep(100);
	while ((n = xt_recv(&t, msgs, XT_BATCH)) > 0)
		xt_release(&t, msgs, n);
	usleep(50000);
	res->q = res->rc ? -ETIMEDOUT :
		 query_server(&t, &cfg->addr, seq + 1, &res->srv_rx, &res->srv_bytes,
			      &res->srv_cpu, &res->have_srv_cpu);
	memset(&res->es, 0, sizeof(res->es));
	res->es.sz = sizeof(res->es);
	if (t.ep && !xvi_endpoint__stats(t.ep, &res->es))
		res->have_es = true;
	free(user);
	xt_close(&t);
}

static void tp_print(const struct perf_cfg *cfg, const struct tp_result *r)
{
	__u64 sent = r->sent, srv_rx = r->srv_rx, lost = sent > srv_rx ? sent - srv_rx : 0;
	const struct xvi_endpoint_stats *es = &r->es;
	double secs = r->secs;
	char a[64];

	if (cfg->json) {
		printf("{\"mode\":\"throughput\",\"transport\":\"%s\",\"server\":\"%s\","
		       "\"threads\":%u,"
		       "\"msg_size\":%u,\"seconds\":%.3f,\"mps_limit\":%llu,\"batch\":%d,"
		       "\"send\":\"%s\",\"sent\":%llu,"
		       "\"send_errors\":%llu,\"no_buffer\":%llu,\"msg_rate\":%.1f,"
		       "\"mbit_per_sec\":%.3f,\"cpu\":{\"user_s\":%.4f,\"sys_s\":%.4f,"
		       "\"ns_per_msg\":%.1f}",
		       perf_transport_name(cfg), xt_addr_str(&cfg->addr, a, sizeof(a)),
		       cfg->threads, cfg->msg_size, secs, (unsigned long long)cfg->mps, cfg->batch,
		       send_name(cfg->send), (unsigned long long)sent,
		       (unsigned long long)r->send_err, (unsigned long long)r->nobuf,
		       (double)sent / secs, (double)sent * cfg->msg_size * 8 / secs / 1e6,
		       r->cpu.user_ns / 1e9, r->cpu.sys_ns / 1e9,
		       sent ? (double)(r->cpu.user_ns + r->cpu.sys_ns) / (double)sent : 0.0);
		if (r->have_es)
			printf(",\"endpoint\":{\"tx_frames\":%llu,\"tx_kicks\":%llu,"
			       "\"tx_invalid\":%llu,\"tx_ring_empty\":%llu}",
			       (unsigned long long)es->tx_frames, (unsigned long long)es->tx_kicks,
			       (unsigned long long)es->tx_invalid,
			       (unsigned long long)es->tx_ring_empty);
		if (r->q == 1) {
			printf(",\"server_received\":%llu,\"delivered_rate\":%.1f,\"lost\":%llu,"
			       "\"loss_pct\":%.4f",
			       (unsigned long long)srv_rx, (double)srv_rx / secs,
			       (unsigned long long)lost,
			       sent ? 100.0 * (double)lost / (double)sent : 0.0);
			if (r->have_srv_cpu)
				printf(",\"server_cpu\":{\"user_s\":%.4f,\"sys_s\":%.4f,"
				       "\"ns_per_msg\":%.1f}",
				       r->srv_cpu.user_ns / 1e9, r->srv_cpu.sys_ns / 1e9,
				       srv_rx ? (double)(r->srv_cpu.user_ns + r->srv_cpu.sys_ns) /
						(double)srv_rx : 0.0);
			printf("}\n");
		} else {
			printf(",\"server_received\":null}\n");
		}
	} else {
		printf("xvi-perf: throughput to %s (%s), %u-byte messages, %.3f s, batch %d, "
		       "send %s%s\n",
		       xt_addr_str(&cfg->addr, a, sizeof(a)), perf_transport_name(cfg),
		       cfg->msg_size, secs, cfg->batch, send_name(cfg->send),
		       cfg->mps ? " (rate limited)" : "");
		printf("xvi-perf: sent %llu messages, %.0f msg/s, %.3f Mbit/s of payload, "
		       "send errors %llu\n",
		       (unsigned long long)sent, (double)sent / secs,
		       (double)sent * cfg->msg_size * 8 / secs / 1e6,
		       (unsigned long long)r->send_err);
		printf("xvi-perf: client CPU user %.3f s sys %.3f s, %.0f ns per message\n",
		       r->cpu.user_ns / 1e9, r->cpu.sys_ns / 1e9,
		       sent ? (double)(r->cpu.user_ns + r->cpu.sys_ns) / (double)sent : 0.0);
		if (r->q == 1) {
			printf("xvi-perf: server received %llu (%.0f msg/s), lost %llu (%.3f %%)\n",
			       (unsigned long long)srv_rx, (double)srv_rx / secs,
			       (unsigned long long)lost,
			       sent ? 100.0 * (double)lost / (double)sent : 0.0);
			if (r->have_srv_cpu)
				printf("xvi-perf: server CPU user %.3f s sys %.3f s, %.0f ns per "
				       "message\n", r->srv_cpu.user_ns / 1e9, r->srv_cpu.sys_ns / 1e9,
				       srv_rx ? (double)(r->srv_cpu.user_ns + r->srv_cpu.sys_ns) /
						(double)srv_rx : 0.0);
		} else if (r->q == 0) {
			printf("xvi-perf: server received: unknown (not an xvi-perf server; "
			       "its own summary has the count)\n");
		} else {
			printf("xvi-perf: server received: unknown (no answer to the count "
			       "query)\n");
		}
	}
	fflush(stdout);
	if (r->first_err)
		fprintf(stderr, "xvi-perf: %llu sends failed, first: %s%s\n",
			(unsigned long long)r->send_err, strerror(r->first_err),
			hint_for(r->first_err));
}

/* --threads: client i of N. */
struct tp_thread {
	struct perf_cfg cfg;
	struct tp_result res;
};

static void *tp_thread_run(void *arg)
{
	struct tp_thread *th = arg;

	tp_measure(&th->cfg, &th->res);
	return NULL;
}

/*
 * The sum of N runs side by side: messages and server counts add up; the
 * time is the longest run's; the CPU is the process's, over all threads
 * (each thread's rusage is the process's), and the server's answer is its
 * process's CPU too, so the largest answer stands for the server.
 */
static void tp_sum(const struct tp_thread *th, __u32 n, struct tp_result *sum)
{
	__u32 i;

	memset(sum, 0, sizeof(*sum));
	sum->q = 1;
	for (i = 0; i < n; i++) {
		const struct tp_result *r = &th[i].res;

		sum->sent += r->sent;
		sum->send_err += r->send_err;
		sum->nobuf += r->nobuf;
		sum->srv_rx += r->srv_rx;
		sum->srv_bytes += r->srv_bytes;
		if (r->secs > sum->secs)
			sum->secs = r->secs;
		if (r->q != 1)
			sum->q = r->q;
		if (r->have_srv_cpu && r->srv_cpu.user_ns + r->srv_cpu.sys_ns >=
				       sum->srv_cpu.user_ns + sum->srv_cpu.sys_ns) {
			sum->srv_cpu = r->srv_cpu;
			sum->have_srv_cpu = true;
		}
		if (!sum->first_err)
			sum->first_err = r->first_err;
		sum->rc |= r->rc;
	}
}

static int perf_throughput_threads(const struct perf_cfg *cfg)
{
	struct xt_cpu cpu0, cpu1;
	struct tp_result sum;
	struct tp_thread *th;
	__u32 i, n = cfg->threads, started = 0;
	int rc = 0;

	th = calloc(n, sizeof(*th));
	if (!th)
		return 1;
	for (i = 0; i < n; i++)
		perf_thread_cfg(cfg, i, &th[i].cfg);
	xt_cpu_now(&cpu0);
	started = perf_run_threads(n, tp_thread_run, th, sizeof(*th));
	rc = started < n;
	xt_cpu_now(&cpu1);
	tp_sum(th, started, &sum);
	sum.cpu = xt_cpu_diff(&cpu0, &cpu1);
	if (!cfg->json)
		for (i = 0; i < started; i++)
			printf("xvi-perf: thread %u, queue %u, port %u: sent %llu, server received "
			       "%llu\n", i, th[i].cfg.xt.queue, th[i].res.port,
			       (unsigned long long)th[i].res.sent,
			       (unsigned long long)th[i].res.srv_rx);
	tp_print(cfg, &sum);
	rc |= sum.rc;
	if (!sum.sent && !rc)
		rc = 1;
	free(th);
	return rc;
}

int perf_throughput(const struct perf_cfg *cfg)
{
	struct tp_result res;

	if (cfg->threads > 1)
		return perf_throughput_threads(cfg);
	tp_measure(cfg, &res);
	if (!res.ran)
		return 1;
	tp_print(cfg, &res);
	if (!res.sent && !res.rc)
		return 1;
	return res.rc;
}
