// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-perf server: answers sockperf clients (and xvi-perf clients) the way
 * "sockperf server" does: a message with CLIENT and PONG set is echoed back
 * to its sender with CLIENT cleared, warmup messages are neither counted nor
 * answered, everything else is only counted.  Replies go out in batches:
 * one receive batch, then one send batch.
 */
#include "perf.h"
#include "common/sockaddr.h"

#define MAX_PEERS 64

struct peer {
	union xvi_sockaddr addr;
	__u64 rx;
	__u64 rx_bytes;
	__u64 replies;
	__u64 min_seq;
	__u64 max_seq;
	__u64 last_ns;
	bool used;
};

struct srv_stats {
	__u64 rx;		/* measured client messages */
	__u64 rx_bytes;
	__u64 replies;
	__u64 warmup;
	__u64 stats_queries;
	__u64 malformed;	/* shorter than their header says */
	__u64 not_client;	/* CLIENT flag clear: not for a server */
	__u64 tx_nobuf;		/* no send buffer for a reply */
	__u64 tx_too_big;
	__u64 tx_err;
	int first_tx_err;
};

struct server {
	const struct perf_cfg *cfg;
	struct xt t;
	struct srv_stats st;
	struct xt_cpu cpu_run;	/* CPU used when the last run's warmup arrived */
	struct peer peers[MAX_PEERS];
	struct peer *last;	/* the peer of the previous message */
};

/* Find the peer, or take a free entry, or the least recently seen one. */
static struct peer *peer_get(struct server *s, const union xvi_sockaddr *a,
			     __u64 now)
{
	struct peer *old = &s->peers[0];
	int i;

	/*
	 * Runs are long streams from one peer: check the previous one first.
	 * Without this every message scanned all earlier peers, and a server
	 * that had seen many runs got slower with each one.
	 */
	if (s->last && s->last->used && xvi_sockaddr_eq(&s->last->addr, a)) {
		s->last->last_ns = now;
		return s->last;
	}
	for (i = 0; i < MAX_PEERS; i++) {
		struct peer *p = &s->peers[i];

		if (p->used && xvi_sockaddr_eq(&p->addr, a)) {
			p->last_ns = now;
			s->last = p;
			return p;
		}
		if (!p->used || (old->used && p->last_ns < old->last_ns))
			old = p;
	}
	memset(old, 0, sizeof(*old));
	old->used = true;
	old->addr = *a;
	old->min_seq = UINT64_MAX;
	old->last_ns = now;
	s->last = old;
	return old;
}

enum reply_kind { REPLY_ECHO, REPLY_STATS };

struct pending {
	int msg;
	__u32 len;
	__u16 flags;
	enum reply_kind kind;
	struct peer *peer;
};

/* Answer one receive batch; returns 0 or a negative errno (fatal). */
static int serve_batch(struct server *s, struct xvi_msg *msgs, int n)
{
	struct pending todo[XT_BATCH];
	struct xvi_txbuf bufs[XT_BATCH];
	int i, need = 0, got = 0, tries, sent, k;
	__u64 now = xt_now_ns();

	for (i = 0; i < n; i++) {
		struct sp_hdr h;
		struct peer *p;

		if (!sp_get(msgs[i].data, msgs[i].len, &h)) {
			s->st.malformed++;
			continue;
		}
		if (!(h.flags & SP_F_CLIENT)) {
			s->st.not_client++;
			continue;
		}
		p = peer_get(s, &msgs[i].peer, now);
		if (h.flags & SP_F_WARMUP) {
			/* A new run from this address: start its counts afresh. */
			struct peer fresh = { .addr = p->addr, .used = true,
					      .min_seq = UINT64_MAX, .last_ns = now };
			*p = fresh;
			s->st.warmup++;
			xt_cpu_now(&s->cpu_run);
			continue;
		}
		if ((h.flags & SP_F_XVI_STATS) && h.len >= SP_STATS_LEN &&
		    sp_get_u64(msgs[i].data, SP_HDR_LEN) == SP_STATS_ASK) {
			s->st.stats_queries++;
			todo[need++] = (struct pending){ i, h.len, h.flags, REPLY_STATS, p };
			continue;
		}
		s->st.rx++;
		s->st.rx_bytes += h.len;
		p->rx++;
		p->rx_bytes += h.len;
		if (h.seq < p->min_seq)
			p->min_seq = h.seq;
		if (h.seq > p->max_seq)
			p->max_seq = h.seq;
		if (h.flags & SP_F_PONG)
			todo[need++] = (struct pending){ i, h.len, h.flags, REPLY_ECHO, p };
	}
	if (!need)
		return 0;

	/* Send buffers come back with completions: reap and retry, briefly. */
	for (tries = 0; got < need && tries < 100; tries++) {
		k = xt_tx_alloc(&s->t, bufs + got, need - got);
		if (k < 0)
			return k;
		got += k;
		if (got < need)
			xt_flush(&s->t);
	}
	s->st.tx_nobuf += need - got;

	for (i = 0, k = 0; i < got; i++) {
		struct pending *d = &todo[i];
		struct xvi_msg *m = &msgs[d->msg];
		struct xvi_txbuf b = bufs[i];

		if (d->len > b.cap) {
			s->st.tx_too_big++;
			xt_tx_free(&s->t, &b, 1);
			continue;
		}
		memcpy(b.data, m->data, d->len);
		if (d->kind == REPLY_STATS) {
			sp_put_u64(b.data, SP_HDR_LEN, SP_STATS_ANSWER);
			sp_put_u64(b.data, SP_HDR_LEN + 8, d->peer->rx);
			sp_put_u64(b.data, SP_HDR_LEN + 16, d->peer->rx_bytes);
			if (d->len >= SP_STATS_CPU_LEN) {
				struct xt_cpu now_cpu, used;

				xt_cpu_now(&now_cpu);
				used = xt_cpu_diff(&s->cpu_run, &now_cpu);
				sp_put_u64(b.data, SP_STATS_LEN, used.user_ns);
				sp_put_u64(b.data, SP_STATS_LEN + 8, used.sys_ns);
			}
			sp_set_flags(b.data, SP_F_XVI_STATS);
		} else {
			sp_set_flags(b.data, d->flags & ~SP_F_CLIENT);
			d->peer->replies++;
		}
		b.len = d->len;
		b.flags = 0;
		b.dst = &m->peer;
		bufs[k++] = b;
	}
	if (!k)
		return 0;
	sent = xt_tx_send(&s->t, bufs, k);
	if (sent < 0) {
		if (!s->st.first_tx_err)
			s->st.first_tx_err = -sent;
		s->st.tx_err += k;
		xt_tx_free(&s->t, bufs, k);
		return 0;
	}
	if (sent < k) {
		s->st.tx_err += k - sent;
		xt_tx_free(&s->t, bufs + sent, k - sent);
	}
	s->st.replies += sent;
	return 0;
}

static void print_summary(struct server *s, double secs)
{
	const struct perf_cfg *cfg = s->cfg;
	struct xvi_endpoint_stats es;
	bool have_es = false;
	struct xt_cpu cpu;
	char a[64];
	int i, first = 1;

	/* Where the datapath and the kernel lost frames before we saw them. */
	memset(&es, 0, sizeof(es));
	es.sz = sizeof(es);
	if (s->t.ep && !xvi_endpoint__stats(s->t.ep, &es))
		have_es = true;

	if (cfg->json) {
		if (cfg->threads > 1)
			printf("{\"thread_queue\":%u,", cfg->xt.queue);
		else
			printf("{");
		printf("\"mode\":\"server\",\"transport\":\"%s\",\"address\":\"%s\","
		       "\"seconds\":%.3f,\"received\":%llu,\"received_bytes\":%llu,"
		       "\"replies\":%llu,\"warmup\":%llu,\"stats_queries\":%llu,"
		       "\"malformed\":%llu,\"not_client\":%llu,\"tx_no_buffer\":%llu,"
		       "\"tx_too_big\":%llu,\"tx_errors\":%llu,\"peers\":[",
		       perf_transport_name(cfg), xt_addr_str(&cfg->addr, a, sizeof(a)), secs,
		       (unsigned long long)s->st.rx, (unsigned long long)s->st.rx_bytes,
		       (unsigned long long)s->st.replies, (unsigned long long)s->st.warmup,
		       (unsigned long long)s->st.stats_queries,
		       (unsigned long long)s->st.malformed,
		       (unsigned long long)s->st.not_client,
		       (unsigned long long)s->st.tx_nobuf,
		       (unsigned long long)s->st.tx_too_big,
		       (unsigned long long)s->st.tx_err);
		for (i = 0; i < MAX_PEERS; i++) {
			struct peer *p = &s->peers[i];
			__u64 span = p->rx ? p->max_seq - p->min_seq + 1 : 0;

			if (!p->used)
				continue;
			printf("%s{\"peer\":\"%s\",\"received\":%llu,\"received_bytes\":%llu,"
			       "\"replies\":%llu,\"seq_first\":%llu,\"seq_last\":%llu,"
			       "\"seq_gaps\":%llu}",
			       first ? "" : ",", xt_addr_str(&p->addr, a, sizeof(a)),
			       (unsigned long long)p->rx, (unsigned long long)p->rx_bytes,
			       (unsigned long long)p->replies,
			       (unsigned long long)(p->rx ? p->min_seq : 0),
			       (unsigned long long)p->max_seq,
			       (unsigned long long)(span > p->rx ? span - p->rx : 0));
			first = 0;
		}
		printf("]");
		if (have_es)
			printf(",\"endpoint\":{\"rx_frames\":%llu,\"drop_bad_csum\":%llu,"
			       "\"drop_malformed\":%llu,\"drop_no_socket\":%llu,"
			       "\"rx_ring_full\":%llu,\"rx_fill_empty\":%llu,\"tx_frames\":%llu}",
			       (unsigned long long)es.rx_frames,
			       (unsigned long long)es.drop_bad_csum,
			       (unsigned long long)es.drop_malformed,
			       (unsigned long long)es.drop_no_socket,
			       (unsigned long long)es.rx_ring_full,
			       (unsigned long long)es.rx_fill_empty,
			       (unsigned long long)es.tx_frames);
		xt_cpu_now(&cpu);
		printf(",\"cpu\":{\"user_s\":%.4f,\"sys_s\":%.4f}}\n", cpu.user_ns / 1e9,
		       cpu.sys_ns / 1e9);
		fflush(stdout);
		return;
	}
	printf("xvi-perf: server %s (%s) ran %.3f s\n", xt_addr_str(&cfg->addr, a, sizeof(a)),
	       perf_transport_name(cfg), secs);
	printf("xvi-perf: received %llu messages (%llu bytes), replied %llu, warmup %llu\n",
	       (unsigned long long)s->st.rx, (unsigned long long)s->st.rx_bytes,
	       (unsigned long long)s->st.replies, (unsigned long long)s->st.warmup);
	if (s->st.malformed || s->st.not_client || s->st.tx_nobuf || s->st.tx_too_big ||
	    s->st.tx_err)
		printf("xvi-perf: malformed %llu, not from a client %llu, replies lost: "
		       "no buffer %llu, too big %llu, send errors %llu%s%s\n",
		       (unsigned long long)s->st.malformed,
		       (unsigned long long)s->st.not_client,
		       (unsigned long long)s->st.tx_nobuf,
		       (unsigned long long)s->st.tx_too_big,
		       (unsigned long long)s->st.tx_err,
		       s->st.first_tx_err ? " (first: " : "",
		       s->st.first_tx_err ? strerror(s->st.first_tx_err) : "");
	if (have_es)
		printf("xvi-perf: endpoint: datapath delivered %llu, dropped bad checksum %llu, "
		       "malformed %llu, no socket %llu; kernel: rx ring full %llu, fill ring "
		       "empty %llu; sent %llu\n",
		       (unsigned long long)es.rx_frames, (unsigned long long)es.drop_bad_csum,
		       (unsigned long long)es.drop_malformed,
		       (unsigned long long)es.drop_no_socket,
		       (unsigned long long)es.rx_ring_full, (unsigned long long)es.rx_fill_empty,
		       (unsigned long long)es.tx_frames);
	for (i = 0; i < MAX_PEERS; i++) {
		struct peer *p = &s->peers[i];
		__u64 span = p->rx ? p->max_seq - p->min_seq + 1 : 0;

		if (!p->used)
			continue;
		printf("xvi-perf:   peer %s: received %llu, replied %llu, seq %llu..%llu, "
		       "gaps %llu\n",
		       xt_addr_str(&p->addr, a, sizeof(a)), (unsigned long long)p->rx,
		       (unsigned long long)p->replies,
		       (unsigned long long)(p->rx ? p->min_seq : 0),
		       (unsigned long long)p->max_seq,
		       (unsigned long long)(span > p->rx ? span - p->rx : 0));
	}
	fflush(stdout);
}

/* Serve one batch from the rings: how many messages, or -1 (failed). */
static int serve_rx(struct server *s, struct xvi_msg *msgs)
{
	int err, n = xt_recv(&s->t, msgs, s->cfg->batch);

	if (n < 0) {
		fprintf(stderr, "xvi-perf: receive failed: %s\n", strerror(-n));
		return -1;
	}
	if (!n)
		return 0;
	err = serve_batch(s, msgs, n);
	xt_release(&s->t, msgs, n);
	if (err) {
		fprintf(stderr, "xvi-perf: send failed: %s\n", strerror(-err));
		return -1;
	}
	return n;
}

/* Serve until the deadline or a signal; 0 or 1 (failed). */
static int serve(struct server *s, __u64 start)
{
	const struct perf_cfg *cfg = s->cfg;
	struct xvi_msg msgs[XT_BATCH];
	int err, n, left;
	__u64 end;

	end = cfg->seconds > 0 ? start + (__u64)(cfg->seconds * 1e9) : UINT64_MAX;
	while (!xt_stop) {
		__u64 now = xt_now_ns();
		__u64 left_ms;

		if (now >= end)
			break;
		/* Wake up now and then to notice the deadline and signals. */
		left_ms = (end - now) / 1000000ull;
		err = xt_wait(&s->t, left_ms < 200 ? (int)left_ms : 200);
		if (err < 0) {
			fprintf(stderr, "xvi-perf: wait failed: %s\n", strerror(-err));
			return 1;
		}
		/* A full batch: more may be queued, take it before waiting. */
		do {
			n = serve_rx(s, msgs);
		} while (n == cfg->batch && !xt_stop);
		if (n < 0)
			return 1;
	}
	/*
	 * What the datapath already put in the rings is counted too: a
	 * summary taken once the endpoint's rx_frames reached what was sent
	 * counts every message.  Bounded: twice the largest ring.
	 */
	for (left = 2 * 65536; left > 0; left -= n) {
		n = serve_rx(s, msgs);
		if (n <= 0)
			return n < 0;
	}
	return 0;
}

/* --threads: server i of N, on its own queue and CPU. */
struct srv_thread {
	struct server s;
	struct perf_cfg cfg;
};

static struct perf_cfg *srv_th_cfg(void *th)
{
	return &((struct srv_thread *)th)->cfg;
}

static int srv_th_open(void *arg)
{
	struct srv_thread *th = arg;

	th->s.cfg = &th->cfg;
	xt_cpu_now(&th->s.cpu_run);
	return xt_open(&th->s.t, &th->cfg.xt, &th->cfg.addr) ? 1 : 0;
}

static const char *srv_th_transport(void *th)
{
	return perf_transport_name(&((struct srv_thread *)th)->cfg);
}

static int srv_th_run(void *th, __u64 start)
{
	return serve(&((struct srv_thread *)th)->s, start);
}

static void srv_th_summary(void *th, double secs)
{
	print_summary(&((struct srv_thread *)th)->s, secs);
}

static void srv_th_close(void *th)
{
	xt_close(&((struct srv_thread *)th)->s.t);
}

/* N servers, one per queue and thread, on one port (one JSON object each). */
static int perf_server_spread(const struct perf_cfg *cfg)
{
	static const struct perf_srv_ops ops = {
		.kind = "server", .cfg = srv_th_cfg, .open = srv_th_open,
		.transport = srv_th_transport, .run = srv_th_run,
		.summary = srv_th_summary, .close = srv_th_close,
	};

	return perf_server_threads(cfg, &ops, sizeof(struct srv_thread));
}

int perf_server(const struct perf_cfg *cfg)
{
	struct server *s;
	__u64 start;
	int rc;

	if (cfg->threads > 1)
		return perf_server_spread(cfg);
	s = calloc(1, sizeof(*s));
	if (!s)
		return 1;
	s->cfg = cfg;
	xt_cpu_now(&s->cpu_run);
	if (xt_open(&s->t, &cfg->xt, &cfg->addr)) {
		free(s);
		return 1;
	}
	perf_print_listening(cfg, "server", perf_transport_name(cfg));
	start = xt_now_ns();
	rc = serve(s, start);
	print_summary(s, (xt_now_ns() - start) / 1e9);
	xt_close(&s->t);
	free(s);
	return rc;
}
