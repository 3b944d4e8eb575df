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

static int open_client(const struct perf_cfg *cfg, struct xt *t)
{
	union xvi_sockaddr local;

	/*
	 * A kernel socket gets an ephemeral port from bind(); an endpoint
	 * needs an explicit port for its tag, so take one from the pid.
	 */
	xt_any_addr(cfg->addr.sa.sa_family, cfg->xt.kernel ? 0 : xt_pid_port(), &local);
	return xt_open(t, &cfg->xt, &local);
}

static int ms_until(__u64 deadline)
{
	__u64 now = xt_now_ns();

	if (now >= deadline)
		return 0;
	return (int)((deadline - now + 999999ull) / 1000000ull);
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
	__u64 start, t_meas, t_end, seq = 0;
	__u64 sent = 0, received = 0, lost = 0, late = 0, send_err = 0, warm_sent = 0;
	int first_err = 0, rc = 0;
	struct xt t;
	char a[64];
	double secs;

	if (open_client(cfg, &t))
		return 1;
	if (cfg->msg_size > t.max_payload) {
		fprintf(stderr, "xvi-perf: -m %u is above the largest payload this endpoint can send (%u): lower -m\n",
			cfg->msg_size, t.max_payload);
		xt_close(&t);
		return 1;
	}

	start = xt_now_ns();
	t_meas = start + WARMUP_NS;
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
			int n, i, w = ms_until(deadline);

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
	lat_summarize(&lat, &sum);

	if (cfg->json) {
		printf("{\"mode\":\"ping-pong\",\"transport\":\"%s\",\"server\":\"%s\","
		       "\"msg_size\":%u,\"seconds\":%.3f,\"warmup_seconds\":%.3f,"
		       "\"sent\":%llu,\"received\":%llu,\"lost\":%llu,\"late\":%llu,"
		       "\"send_errors\":%llu,\"loss_pct\":%.4f,\"msg_rate\":%.1f,"
		       "\"latency_usec\":{\"kind\":\"one-way (rtt/2)\",\"samples\":%zu,"
		       "\"avg\":%.3f,\"stddev\":%.3f,\"min\":%.3f,\"p50\":%.3f,\"p90\":%.3f,"
		       "\"p99\":%.3f,\"p99.9\":%.3f,\"p99.99\":%.3f,\"max\":%.3f}}\n",
		       perf_transport_name(cfg), xt_addr_str(&cfg->addr, a, sizeof(a)),
		       cfg->msg_size, secs, WARMUP_NS / 1e9,
		       (unsigned long long)sent, (unsigned long long)received,
		       (unsigned long long)lost, (unsigned long long)late,
		       (unsigned long long)send_err,
		       sent ? 100.0 * (double)lost / (double)sent : 0.0,
		       (double)received / secs, sum.n, sum.avg_us, sum.stddev_us, sum.min_us,
		       sum.p50_us, sum.p90_us, sum.p99_us, sum.p999_us, sum.p9999_us,
		       sum.max_us);
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
		printf("xvi-perf: one-way latency (RTT/2) usec: avg %.3f std-dev %.3f min %.3f "
		       "p50 %.3f p90 %.3f p99 %.3f p99.9 %.3f p99.99 %.3f max %.3f\n",
		       sum.avg_us, sum.stddev_us, sum.min_us, sum.p50_us, sum.p90_us,
		       sum.p99_us, sum.p999_us, sum.p9999_us, sum.max_us);
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
			__u64 *rx, __u64 *bytes)
{
	char q[SP_STATS_LEN];
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
			xt_wait(t, ms_until(deadline));
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

int perf_throughput(const struct perf_cfg *cfg)
{
	struct xvi_txbuf bufs[XT_BATCH];
	struct xvi_msg msgs[XT_BATCH];
	__u64 start, end, now, seq = 0, sent = 0, send_err = 0, nobuf = 0;
	__u64 srv_rx = 0, srv_bytes = 0;
	int first_err = 0, rc = 0, q, n;
	double secs;
	struct xt t;
	char a[64];

	if (open_client(cfg, &t))
		return 1;
	if (cfg->msg_size > t.max_payload) {
		fprintf(stderr, "xvi-perf: -m %u is above the largest payload this endpoint can send (%u): lower -m\n",
			cfg->msg_size, t.max_payload);
		xt_close(&t);
		return 1;
	}
	/* Tells an xvi-perf server to count this run afresh; sockperf ignores it. */
	if (send_one(&t, &cfg->addr, 0, SP_F_CLIENT | SP_F_WARMUP, cfg->msg_size, NULL) == 0)
		usleep(10000);

	start = now = xt_now_ns();
	end = start + (__u64)(cfg->seconds * 1e9);
	while (!xt_stop && now < end) {
		int want = XT_BATCH, k, r, i;

		if (cfg->mps) {
			__u64 due = (__u64)((double)(now - start) * (double)cfg->mps / 1e9) + 1;

			if (due <= sent) {
				pace(cfg, start, sent);
				now = xt_now_ns();
				continue;
			}
			if (due - sent < (__u64)want)
				want = (int)(due - sent);
		}
		k = xt_tx_alloc(&t, bufs, want);
		if (k <= 0) {
			if (k < 0) {
				fprintf(stderr, "xvi-perf: tx_alloc failed: %s\n", strerror(-k));
				rc = 1;
				break;
			}
			nobuf++;
			xt_flush(&t);
			now = xt_now_ns();
			continue;
		}
		for (i = 0; i < k; i++) {
			if (cfg->msg_size > bufs[i].cap) {
				fprintf(stderr, "xvi-perf: -m %u does not fit a send buffer (%u bytes): lower -m\n",
					cfg->msg_size, bufs[i].cap);
				xt_tx_free(&t, bufs, k);
				rc = 1;
				goto out;
			}
			sp_put(bufs[i].data, seq + 1 + i, SP_F_CLIENT, cfg->msg_size);
			bufs[i].len = cfg->msg_size;
			bufs[i].flags = 0;
			bufs[i].dst = &cfg->addr;
		}
		r = xt_tx_send(&t, bufs, k);
		if (r < 0) {
			send_err += k;
			if (!first_err)
				first_err = -r;
			xt_tx_free(&t, bufs, k);
			if (r == -EMSGSIZE || r == -EAFNOSUPPORT) {
				rc = 1;
				break;
			}
			usleep(1000);
		} else {
			/* Unsent ones are given back; their numbers are reused. */
			if (r < k)
				xt_tx_free(&t, bufs + r, k - r);
			seq += r;
			sent += r;
		}
		now = xt_now_ns();
	}
out:
	now = xt_now_ns();
	secs = (double)(now - start) / 1e9;
	if (secs <= 0)
		secs = 1e-9;
	/* Let the last sends leave, then drop anything that came back meanwhile. */
	for (end = now + 1000000000ull; xt_flush(&t) > 0 && xt_now_ns() < end;)
		usleep(100);
	while ((n = xt_recv(&t, msgs, XT_BATCH)) > 0)
		xt_release(&t, msgs, n);
	usleep(50000);
	q = rc ? -ETIMEDOUT : query_server(&t, &cfg->addr, seq + 1, &srv_rx, &srv_bytes);

	if (cfg->json) {
		printf("{\"mode\":\"throughput\",\"transport\":\"%s\",\"server\":\"%s\","
		       "\"msg_size\":%u,\"seconds\":%.3f,\"mps_limit\":%llu,\"sent\":%llu,"
		       "\"send_errors\":%llu,\"no_buffer\":%llu,\"msg_rate\":%.1f,"
		       "\"mbit_per_sec\":%.3f",
		       perf_transport_name(cfg), xt_addr_str(&cfg->addr, a, sizeof(a)),
		       cfg->msg_size, secs, (unsigned long long)cfg->mps,
		       (unsigned long long)sent, (unsigned long long)send_err,
		       (unsigned long long)nobuf, (double)sent / secs,
		       (double)sent * cfg->msg_size * 8 / secs / 1e6);
		if (q == 1)
			printf(",\"server_received\":%llu,\"lost\":%llu,\"loss_pct\":%.4f}\n",
			       (unsigned long long)srv_rx,
			       (unsigned long long)(sent > srv_rx ? sent - srv_rx : 0),
			       sent ? 100.0 * (double)(sent > srv_rx ? sent - srv_rx : 0) /
					      (double)sent : 0.0);
		else
			printf(",\"server_received\":null}\n");
	} else {
		printf("xvi-perf: throughput to %s (%s), %u-byte messages, %.3f s%s\n",
		       xt_addr_str(&cfg->addr, a, sizeof(a)), perf_transport_name(cfg),
		       cfg->msg_size, secs, cfg->mps ? " (rate limited)" : "");
		printf("xvi-perf: sent %llu messages, %.0f msg/s, %.3f Mbit/s of payload, "
		       "send errors %llu\n",
		       (unsigned long long)sent, (double)sent / secs,
		       (double)sent * cfg->msg_size * 8 / secs / 1e6,
		       (unsigned long long)send_err);
		if (q == 1)
			printf("xvi-perf: server received %llu, lost %llu (%.3f %%)\n",
			       (unsigned long long)srv_rx,
			       (unsigned long long)(sent > srv_rx ? sent - srv_rx : 0),
			       sent ? 100.0 * (double)(sent > srv_rx ? sent - srv_rx : 0) /
					      (double)sent : 0.0);
		else if (q == 0)
			printf("xvi-perf: server received: unknown (not an xvi-perf server; "
			       "its own summary has the count)\n");
		else
			printf("xvi-perf: server received: unknown (no answer to the count "
			       "query)\n");
	}
	fflush(stdout);
	if (first_err)
		fprintf(stderr, "xvi-perf: %llu sends failed, first: %s%s\n",
			(unsigned long long)send_err, strerror(first_err), hint_for(first_err));
	if (!sent && !rc)
		rc = 1;
	xt_close(&t);
	return rc;
}
