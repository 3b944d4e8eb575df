// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-perf --stream: ping-pong and throughput over byte streams, libxvi
 * streams or kernel TCP (--kernel), with one loop for both.
 *
 * Messages keep sockperf's 14-byte header, whose length field frames them
 * in the byte stream: ping-pong sends CLIENT|PONG and waits for the echo
 * (CLIENT cleared), throughput sends CLIENT only, WARMUP starts a run's
 * counts, and the xvi-perf count query (SP_F_XVI_STATS) is answered in
 * order after every message before it.  A throughput client therefore
 * knows every message was delivered when the answer comes, and its
 * delivered rate is measured up to that moment, not to the last send().
 */
#include <netinet/tcp.h>
#include "perf.h"
#include "stream_transport.h"

#define WARMUP_NS	400000000ull
#define REPLY_TIMEOUT_MS 2000
#define ANSWER_TIMEOUT_MS 10000
#define CONNECT_TIMEOUT_MS 3000
#define MAX_SAMPLES	(64u << 20)
#define RBUF		(256 * 1024)
#define MAX_CONNS	16
/* A server stops reading a connection whose replies pile up beyond this. */
#define OUT_HIGH	(1u << 20)

static void stream_cfg(const struct perf_cfg *cfg, struct xst_cfg *sc, bool nodelay)
{
	memset(sc, 0, sizeof(*sc));
	sc->xt = cfg->xt;
	sc->nodelay = nodelay;
	sc->arm_on_sleep = true;	/* it sleeps only in xst_wait() */
	sc->window = cfg->window;
}

/* ---- framing: sockperf headers in a byte stream ------------------------- */

struct framer {
	char hdr[SP_HDR_LEN];
	__u32 hlen;		/* header bytes so far */
	struct sp_hdr h;
	__u32 got;		/* message bytes so far, header included */
	bool keep;		/* the body is copied to msg */
	__u16 keep_flags;	/* keep messages with any of these flags */
	char *msg;		/* SP_STREAM_MAX bytes */
};

typedef int (*frame_fn)(void *arg, const struct sp_hdr *h, const char *msg);

/*
 * Feed received bytes; @fn sees each complete message (@msg is the whole
 * message when kept, else NULL).  0, -EPROTO on a broken header, or what
 * @fn returned (< 0).
 */
static int frame_feed(struct framer *f, const char *p, size_t len, frame_fn fn, void *arg)
{
	while (len) {
		size_t take;

		if (f->hlen < SP_HDR_LEN) {
			take = SP_HDR_LEN - f->hlen < len ? SP_HDR_LEN - f->hlen : len;
			memcpy(f->hdr + f->hlen, p, take);
			f->hlen += (__u32)take;
			p += take;
			len -= take;
			if (f->hlen < SP_HDR_LEN)
				break;
			f->h.seq = sp_get_u64(f->hdr, 0);
			{
				__u16 fl;
				__u32 l;

				memcpy(&fl, f->hdr + 8, 2);
				memcpy(&l, f->hdr + 10, 4);
				f->h.flags = be16toh(fl);
				f->h.len = be32toh(l);
			}
			if (f->h.len < SP_HDR_LEN || f->h.len > SP_STREAM_MAX)
				return -EPROTO;
			f->keep = (f->h.flags & f->keep_flags) != 0;
			if (f->keep)
				memcpy(f->msg, f->hdr, SP_HDR_LEN);
			f->got = SP_HDR_LEN;
		} else {
			take = f->h.len - f->got < len ? f->h.len - f->got : len;
			if (f->keep)
				memcpy(f->msg + f->got, p, take);
			f->got += (__u32)take;
			p += take;
			len -= take;
		}
		if (f->got == f->h.len) {
			int r = fn(arg, &f->h, f->keep ? f->msg : NULL);

			f->hlen = 0;
			f->got = 0;
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static void stream_json(const struct xst_conn *c)
{
	struct xvi_stream_info i;

	if (xst_info(c, &i))
		return;
	printf(",\"stream\":{\"mss\":%u,\"srtt_us\":%u,\"cwnd\":%u,\"segs_sent\":%llu,"
	       "\"segs_received\":%llu,\"segs_retrans\":%llu,\"timeouts\":%llu,"
	       "\"fast_retrans\":%llu,\"tlp_probes\":%llu,\"dup_segs\":%llu}",
	       i.mss, i.srtt_us, i.cwnd, (unsigned long long)i.segs_sent,
	       (unsigned long long)i.segs_received, (unsigned long long)i.segs_retrans,
	       (unsigned long long)i.timeouts, (unsigned long long)i.fast_retrans,
	       (unsigned long long)i.tlp_probes, (unsigned long long)i.dup_segs);
}

/* Kernel TCP's counterpart of the stream counters. */
static void tcp_json(const struct xst_conn *c)
{
	struct tcp_info ti;
	socklen_t l = sizeof(ti);

	if (c->fd < 0 || getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &l))
		return;
	printf(",\"tcp\":{\"mss\":%u,\"srtt_us\":%u,\"cwnd_segs\":%u,\"total_retrans\":%u}",
	       ti.tcpi_snd_mss, ti.tcpi_rtt, ti.tcpi_snd_cwnd, ti.tcpi_total_retrans);
}

/* Send all of @len, waiting for room; 0 or -errno (-ETIMEDOUT). */
static int send_all(struct xst *o, struct xst_conn *c, const char *p, size_t len,
		    int timeout_ms)
{
	struct xst_pollent pe = { .c = c, .events = POLLOUT };
	__u64 end = xt_now_ns() + (__u64)timeout_ms * 1000000ull;

	while (len) {
		ssize_t r = xst_send(c, p, len);

		if (r > 0) {
			p += r;
			len -= (size_t)r;
			continue;
		}
		if (r != -EAGAIN && r != 0)
			return (int)r;
		if (xt_stop)
			return -EINTR;
		if (xt_now_ns() >= end)
			return -ETIMEDOUT;
		r = xst_wait(o, &pe, 1, 100);
		if (r < 0)
			return (int)r;
	}
	return 0;
}

/* ---- server ------------------------------------------------------------- */

struct sconn {
	struct xst_conn c;
	union xvi_sockaddr peer;
	struct framer fr;
	__u64 rx, rx_bytes, replies, queries;
	struct xt_cpu cpu_run;
	char *out;
	size_t out_len, out_off, out_cap;
	bool used;
};

struct sserver {
	const struct perf_cfg *cfg;
	struct xst o;
	struct xst_conn l;	/* the listener */
	char *rbuf;
	struct sconn conns[MAX_CONNS];
	__u64 accepted, closed, errors, bad_frames;
	__u64 rx, rx_bytes, replies, warmup, queries;
	int nconns;
};

static int out_put(struct sconn *k, const char *m, __u32 len)
{
	if (k->out_len + len > k->out_cap) {
		size_t cap = (k->out_len + len) * 2;
		char *n = realloc(k->out, cap);

		if (!n)
			return -ENOMEM;
		k->out = n;
		k->out_cap = cap;
	}
	memcpy(k->out + k->out_len, m, len);
	k->out_len += len;
	return 0;
}

struct sctx {
	struct sserver *s;
	struct sconn *k;
};

static int srv_msg(void *arg, const struct sp_hdr *h, const char *msg)
{
	struct sctx *x = arg;
	struct sconn *k = x->k;
	struct sserver *s = x->s;
	char *m = (char *)msg;

	if (!(h->flags & SP_F_CLIENT))
		return 0;
	if (h->flags & SP_F_WARMUP) {
		s->warmup++;
		k->rx = k->rx_bytes = k->replies = 0;
		xt_cpu_now(&k->cpu_run);
		return 0;
	}
	if ((h->flags & SP_F_XVI_STATS) && h->len >= SP_STATS_LEN && m &&
	    sp_get_u64(m, SP_HDR_LEN) == SP_STATS_ASK) {
		s->queries++;
		k->queries++;
		sp_put_u64(m, SP_HDR_LEN, SP_STATS_ANSWER);
		sp_put_u64(m, SP_HDR_LEN + 8, k->rx);
		sp_put_u64(m, SP_HDR_LEN + 16, k->rx_bytes);
		if (h->len >= SP_STATS_CPU_LEN) {
			struct xt_cpu now, used;

			xt_cpu_now(&now);
			used = xt_cpu_diff(&k->cpu_run, &now);
			sp_put_u64(m, SP_STATS_LEN, used.user_ns);
			sp_put_u64(m, SP_STATS_LEN + 8, used.sys_ns);
		}
		sp_set_flags(m, SP_F_XVI_STATS);
		return out_put(k, m, h->len);
	}
	k->rx++;
	k->rx_bytes += h->len;
	s->rx++;
	s->rx_bytes += h->len;
	if ((h->flags & SP_F_PONG) && m) {
		sp_set_flags(m, h->flags & ~SP_F_CLIENT);
		k->replies++;
		s->replies++;
		return out_put(k, m, h->len);
	}
	return 0;
}

static void sconn_drop(struct sserver *s, struct sconn *k, bool abort)
{
	xst_conn_close(&k->c, abort);
	free(k->fr.msg);
	free(k->out);
	memset(k, 0, sizeof(*k));
	k->c.fd = -1;
	s->nconns--;
	s->closed++;
}

/* Send what the connection has pending: 1 if some went, 0 if none, or -errno. */
static ssize_t sconn_send_out(struct sconn *k)
{
	ssize_t r, sent = 0;

	while (k->out_off < k->out_len) {
		r = xst_send(&k->c, k->out + k->out_off, k->out_len - k->out_off);
		if (r == -EAGAIN || r == 0)
			break;
		if (r < 0)
			return r;
		k->out_off += (size_t)r;
		sent = 1;
	}
	return sent;
}

/*
 * --zc: frame the received bytes where they lie in the stream's receive
 * buffer, then release them.  Bytes consumed, 0 at the end, -errno;
 * *@bad when a message header was broken.
 */
static ssize_t sconn_feed_zc(struct sconn *k, struct sctx *x, bool *bad)
{
	struct iovec iov[2];
	size_t n = 0;
	int r = xvi_stream__recv_zc(k->c.s, iov, 2);

	if (r <= 0)
		return r;
	for (int i = 0; i < r && !*bad; i++) {
		*bad = frame_feed(&k->fr, iov[i].iov_base, iov[i].iov_len, srv_msg, x) < 0;
		n += iov[i].iov_len;
	}
	r = xvi_stream__recv_release(k->c.s, n);
	return r < 0 ? r : (ssize_t)n;
}

/* Move a connection on: send pending replies, then read.  1 progress, 0 none. */
static int sconn_run(struct sserver *s, struct sconn *k, char *rbuf)
{
	struct sctx x = { s, k };
	int progress, i;
	ssize_t r;

	r = sconn_send_out(k);
	if (r < 0)
		goto fail;
	progress = (int)r;
	if (k->out_off == k->out_len)
		k->out_off = k->out_len = 0;
	for (i = 0; i < 16 && k->out_len - k->out_off < OUT_HIGH; i++) {
		bool bad = false;

		r = s->cfg->zc ? sconn_feed_zc(k, &x, &bad) : xst_recv(&k->c, rbuf, RBUF);
		if (r == -EAGAIN)
			break;
		if (r == 0) {
			/* The client is done: close our half too. */
			sconn_drop(s, k, false);
			return 1;
		}
		if (r < 0)
			goto fail;
		progress = 1;
		if (!s->cfg->zc)
			bad = frame_feed(&k->fr, rbuf, (size_t)r, srv_msg, &x) < 0;
		if (bad) {
			s->bad_frames++;
			fprintf(stderr, "xvi-perf: a client sent a message with a broken header: "
				"dropping the connection (only xvi-perf --stream clients speak this)\n");
			sconn_drop(s, k, true);
			return 1;
		}
		if (k->out_len)
			break;	/* answer first: ping-pong */
	}
	/* Replies made by this batch go out now, not after the next wait. */
	r = sconn_send_out(k);
	if (r < 0)
		goto fail;
	return progress;
fail:
	if (s->cfg->verbose || r != -ECONNRESET)
		fprintf(stderr, "xvi-perf: connection failed: %s\n", strerror((int)-r));
	s->errors++;
	sconn_drop(s, k, true);
	return 1;
}

static void sserver_summary(struct sserver *s, double secs)
{
	const struct perf_cfg *cfg = s->cfg;
	struct xvi_stream_ctx_stats cs = { .sz = sizeof(cs) };
	struct xt_cpu cpu;
	char a[64];

	xt_cpu_now(&cpu);
	if (cfg->json) {
		printf("{\"mode\":\"server\",\"transport\":\"%s\",\"address\":\"%s\","
		       "\"seconds\":%.3f,\"connections\":%llu,\"connection_errors\":%llu,"
		       "\"bad_frames\":%llu,\"received\":%llu,\"received_bytes\":%llu,"
		       "\"replies\":%llu,\"warmup\":%llu,\"stats_queries\":%llu",
		       xst_name(&s->o), xt_addr_str(&cfg->addr, a, sizeof(a)), secs,
		       (unsigned long long)s->accepted, (unsigned long long)s->errors,
		       (unsigned long long)s->bad_frames, (unsigned long long)s->rx,
		       (unsigned long long)s->rx_bytes, (unsigned long long)s->replies,
		       (unsigned long long)s->warmup, (unsigned long long)s->queries);
		if (s->o.ctx && !xvi_stream_ctx__stats(s->o.ctx, &cs))
			printf(",\"context\":{\"rx_segs\":%llu,\"rx_malformed\":%llu,"
			       "\"rx_bad_integrity\":%llu,\"rx_no_conn\":%llu,\"tx_segs\":%llu,"
			       "\"tx_rst\":%llu,\"tx_no_buf\":%llu}",
			       (unsigned long long)cs.rx_segs, (unsigned long long)cs.rx_malformed,
			       (unsigned long long)cs.rx_bad_integrity,
			       (unsigned long long)cs.rx_no_conn, (unsigned long long)cs.tx_segs,
			       (unsigned long long)cs.tx_rst, (unsigned long long)cs.tx_no_buf);
		if (cfg->threads > 1)
			printf(",\"thread_queue\":%u", cfg->xt.queue);
		printf(",\"cpu\":{\"user_s\":%.4f,\"sys_s\":%.4f}}\n", cpu.user_ns / 1e9,
		       cpu.sys_ns / 1e9);
	} else {
		printf("xvi-perf: stream server %s (%s) ran %.3f s: %llu connections "
		       "(%llu failed), received %llu messages (%llu bytes), replied %llu\n",
		       xt_addr_str(&cfg->addr, a, sizeof(a)), xst_name(&s->o), secs,
		       (unsigned long long)s->accepted, (unsigned long long)s->errors,
		       (unsigned long long)s->rx, (unsigned long long)s->rx_bytes,
		       (unsigned long long)s->replies);
	}
	fflush(stdout);
}

/* Open the context and listen; NULL (message printed) on failure. */
static struct sserver *sserver_open(const struct perf_cfg *cfg)
{
	struct xst_cfg sc;
	struct sserver *s;
	int i;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cfg = cfg;
	s->rbuf = malloc(RBUF);
	for (i = 0; i < MAX_CONNS; i++)
		s->conns[i].c.fd = -1;
	/* Echoes leave at once: a reply held back for combining is latency. */
	stream_cfg(cfg, &sc, true);
	if (!s->rbuf || xst_open(&s->o, &sc, &cfg->addr) ||
	    xst_listen(&s->o, &sc, &cfg->addr, 64, &s->l)) {
		xst_close(&s->o);
		free(s->rbuf);
		free(s);
		return NULL;
	}
	return s;
}

static void sserver_free(struct sserver *s)
{
	int i;

	for (i = 0; i < MAX_CONNS; i++)
		if (s->conns[i].used)
			sconn_drop(s, &s->conns[i], true);
	xst_conn_close(&s->l, true);
	xst_close(&s->o);
	free(s->rbuf);
	free(s);
}

/* Accept and serve until -t or a signal; 0 or 1 (the wait failed). */
static int sserver_run(struct sserver *s, __u64 start)
{
	const struct perf_cfg *cfg = s->cfg;
	struct xst_pollent pe[MAX_CONNS + 1];
	__u64 end;
	char a[64];
	int i;

	end = cfg->seconds > 0 ? start + (__u64)(cfg->seconds * 1e9) : UINT64_MAX;
	while (!xt_stop) {
		__u64 now = xt_now_ns(), left;
		struct xst_conn c;
		union xvi_sockaddr peer;
		int progress = 0, n = 0, r;

		if (now >= end)
			break;
		while (s->nconns < MAX_CONNS && (r = xst_accept(&s->l, &c, &peer)) == 1) {
			for (i = 0; i < MAX_CONNS && s->conns[i].used; i++)
				;
			s->conns[i].used = true;
			s->conns[i].c = c;
			s->conns[i].peer = peer;
			s->conns[i].fr.keep_flags = SP_F_PONG | SP_F_XVI_STATS;
			s->conns[i].fr.msg = malloc(SP_STREAM_MAX);
			xt_cpu_now(&s->conns[i].cpu_run);
			s->nconns++;
			s->accepted++;
			progress = 1;
			if (!s->conns[i].fr.msg) {
				sconn_drop(s, &s->conns[i], true);
				continue;
			}
			if (cfg->verbose)
				fprintf(stderr, "xvi-perf: connection from %s\n",
					xt_addr_str(&peer, a, sizeof(a)));
		}
		for (i = 0; i < MAX_CONNS; i++)
			if (s->conns[i].used)
				progress |= sconn_run(s, &s->conns[i], s->rbuf);
		if (progress)
			continue;
		if (s->nconns < MAX_CONNS)
			pe[n++] = (struct xst_pollent){ .c = &s->l, .events = POLLIN };
		for (i = 0; i < MAX_CONNS; i++)
			if (s->conns[i].used)
				pe[n++] = (struct xst_pollent){
					.c = &s->conns[i].c,
					.events = (short)(POLLIN | (s->conns[i].out_len ? POLLOUT : 0)),
				};
		left = (end - now) / 1000000ull;
		r = xst_wait(&s->o, pe, n, left < 200 ? (int)left : 200);
		if (r < 0 && r != -EINTR) {
			fprintf(stderr, "xvi-perf: wait failed: %s\n", strerror(-r));
			return 1;
		}
	}
	return 0;
}

/* --threads: listener i of N, a context on its own queue and CPU. */
struct sserver_thread {
	struct perf_cfg cfg;
	struct sserver *s;
};

static struct perf_cfg *sth_cfg(void *th)
{
	return &((struct sserver_thread *)th)->cfg;
}

static int sth_open(void *arg)
{
	struct sserver_thread *th = arg;

	th->s = sserver_open(&th->cfg);
	return th->s ? 0 : 1;
}

static const char *sth_transport(void *th)
{
	return xst_name(&((struct sserver_thread *)th)->s->o);
}

static int sth_run(void *th, __u64 start)
{
	return sserver_run(((struct sserver_thread *)th)->s, start);
}

static void sth_summary(void *th, double secs)
{
	sserver_summary(((struct sserver_thread *)th)->s, secs);
}

static void sth_close(void *th)
{
	sserver_free(((struct sserver_thread *)th)->s);
}

/*
 * N listeners on one service, each a stream context over its own member
 * of the spread port: a connection's segments all arrive on the queue its
 * flow hashes to, so the context of that queue owns it from the SYN on.
 */
static int perf_stream_server_threads(const struct perf_cfg *cfg)
{
	static const struct perf_srv_ops ops = {
		.kind = "stream server", .cfg = sth_cfg, .open = sth_open,
		.transport = sth_transport, .run = sth_run,
		.summary = sth_summary, .close = sth_close,
	};

	return perf_server_threads(cfg, &ops, sizeof(struct sserver_thread));
}

int perf_stream_server(const struct perf_cfg *cfg)
{
	struct sserver *s;
	__u64 start;
	int rc;

	if (cfg->threads > 1)
		return perf_stream_server_threads(cfg);
	s = sserver_open(cfg);
	if (!s)
		return 1;
	perf_print_listening(cfg, "stream server", xst_name(&s->o));
	start = xt_now_ns();
	rc = sserver_run(s, start);
	sserver_summary(s, (xt_now_ns() - start) / 1e9);
	sserver_free(s);
	return rc;
}

/* ---- clients ------------------------------------------------------------ */

struct cclient {
	struct xst o;
	struct xst_conn c;
	struct framer fr;
	char *rbuf;
	/* what the frame callback looks for */
	__u64 want_seq;
	bool got;
	__u64 late;
	/* count answer */
	bool answered;
	__u64 srv_rx, srv_bytes;
	struct xt_cpu srv_cpu;
	bool have_srv_cpu;
};

static int cli_msg(void *arg, const struct sp_hdr *h, const char *msg)
{
	struct cclient *k = arg;

	if (h->flags & SP_F_CLIENT)
		return 0;
	if ((h->flags & SP_F_XVI_STATS) && msg && h->len >= SP_STATS_LEN &&
	    sp_get_u64(msg, SP_HDR_LEN) == SP_STATS_ANSWER && h->seq == k->want_seq) {
		k->srv_rx = sp_get_u64(msg, SP_HDR_LEN + 8);
		k->srv_bytes = sp_get_u64(msg, SP_HDR_LEN + 16);
		k->have_srv_cpu = h->len >= SP_STATS_CPU_LEN;
		if (k->have_srv_cpu) {
			k->srv_cpu.user_ns = sp_get_u64(msg, SP_STATS_LEN);
			k->srv_cpu.sys_ns = sp_get_u64(msg, SP_STATS_LEN + 8);
		}
		k->answered = true;
		return 0;
	}
	if (h->seq == k->want_seq)
		k->got = true;
	else
		k->late++;
	return 0;
}

static int cli_open(const struct perf_cfg *cfg, struct cclient *k, bool nodelay)
{
	union xvi_sockaddr local;
	struct xst_cfg sc;

	memset(k, 0, sizeof(*k));
	k->c.fd = -1;
	k->rbuf = malloc(RBUF);
	k->fr.msg = malloc(SP_STREAM_MAX);
	k->fr.keep_flags = SP_F_XVI_STATS;
	if (!k->rbuf || !k->fr.msg) {
		fprintf(stderr, "xvi-perf: out of memory\n");
		return -ENOMEM;
	}
	stream_cfg(cfg, &sc, nodelay);
	/* --threads: a source port, so a flow, per thread. */
	xt_any_addr(cfg->addr.sa.sa_family, cfg->xt.kernel ? 0 :
		    (__u16)(49152 + (xt_pid_port() - 49152 + cfg->thread) % 16384), &local);
	if (xst_open(&k->o, &sc, &local))
		return -1;
	return xst_connect(&k->o, &sc, &cfg->addr, &k->c, CONNECT_TIMEOUT_MS);
}

static void cli_close(struct cclient *k, bool clean)
{
	xst_conn_close(&k->c, !clean);
	xst_close(&k->o);
	free(k->rbuf);
	free(k->fr.msg);
}

/* Read until @done() or @timeout_ms; 1 done, 0 timeout/signal, -errno (0: EOF -EPIPE). */
static int cli_read_until(struct cclient *k, bool *flag, int timeout_ms)
{
	struct xst_pollent pe = { .c = &k->c, .events = POLLIN };
	__u64 end = xt_now_ns() + (__u64)timeout_ms * 1000000ull;

	while (!*flag) {
		ssize_t r = xst_recv(&k->c, k->rbuf, RBUF);

		if (r > 0) {
			int e = frame_feed(&k->fr, k->rbuf, (size_t)r, cli_msg, k);

			if (e < 0)
				return e;
			continue;
		}
		if (r == 0)
			return -EPIPE;
		if (r != -EAGAIN)
			return (int)r;
		if (xt_stop)
			return 0;
		{
			__u64 now = xt_now_ns();

			if (now >= end)
				return 0;
			r = xst_wait(&k->o, &pe, 1, (int)((end - now + 999999ull) / 1000000ull));
			if (r < 0)
				return (int)r;
		}
	}
	return 1;
}

static const char *err_hint(int err)
{
	switch (err) {
	case EPIPE:
		return ": the server closed the connection";
	case EPROTO:
		return ": the server sent a broken message header (not an xvi-perf --stream server?)";
	case ECONNRESET:
		return ": the server aborted the connection";
	case ETIMEDOUT:
		return ": the connection timed out";
	default:
		return "";
	}
}

int perf_stream_ping_pong(const struct perf_cfg *cfg)
{
	struct lat_samples lat = { .max = MAX_SAMPLES };
	struct lat_summary sum;
	struct xt_cpu cpu0 = { 0 }, cpu1, cpu;
	__u64 start, t_meas, t_end, seq = 0, sent = 0, received = 0, lost = 0;
	bool cpu_started = false;
	struct cclient *k;
	char *msg, a[64];
	int rc = 0, err = 0;
	double secs;

	k = calloc(1, sizeof(*k));
	msg = calloc(1, cfg->msg_size);
	if (!k || !msg || cli_open(cfg, k, true)) {
		if (k)
			cli_close(k, false);
		free(k);
		free(msg);
		return 1;
	}
	start = xt_now_ns();
	t_meas = start + WARMUP_NS;
	t_end = t_meas + (__u64)(cfg->seconds * 1e9);
	while (!xt_stop) {
		__u64 t0 = xt_now_ns(), t1;
		bool measuring;
		int r;

		if (t0 >= t_end)
			break;
		measuring = t0 >= t_meas;
		if (measuring && !cpu_started) {
			xt_cpu_now(&cpu0);
			cpu_started = true;
		}
		sp_put(msg, ++seq, SP_F_CLIENT | SP_F_PONG, cfg->msg_size);
		k->want_seq = seq;
		k->got = false;
		err = send_all(&k->o, &k->c, msg, cfg->msg_size, REPLY_TIMEOUT_MS);
		if (err)
			break;
		r = cli_read_until(k, &k->got, REPLY_TIMEOUT_MS);
		t1 = xt_now_ns();
		if (r < 0) {
			err = r;
			break;
		}
		if (!measuring)
			continue;
		sent++;
		if (r == 1) {
			received++;
			lat_add(&lat, t1 - t0);
		} else if (!xt_stop) {
			/* A stream does not lose: a reply this late is a stall. */
			lost++;
			err = -ETIMEDOUT;
			break;
		} else {
			sent--;
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
		       "\"send_errors\":0,\"loss_pct\":%.4f,\"msg_rate\":%.1f,\"wait\":\"%s\",",
		       xst_name(&k->o), xt_addr_str(&cfg->addr, a, sizeof(a)), cfg->msg_size,
		       secs, WARMUP_NS / 1e9, (unsigned long long)sent,
		       (unsigned long long)received, (unsigned long long)lost,
		       (unsigned long long)k->late,
		       sent ? 100.0 * (double)lost / (double)sent : 0.0,
		       (double)received / secs, xt_wait_name(cfg->xt.wait));
		lat_print_json(&sum);
		printf(",");
		cpu_print_json(&cpu, received);
		stream_json(&k->c);
		tcp_json(&k->c);
		printf("}\n");
	} else {
		printf("xvi-perf: stream ping-pong to %s (%s), %u-byte messages, %.3f s measured "
		       "after %.1f s warmup\n", xt_addr_str(&cfg->addr, a, sizeof(a)),
		       xst_name(&k->o), cfg->msg_size, secs, WARMUP_NS / 1e9);
		printf("xvi-perf: %llu round trips, %.0f msg/s\n", (unsigned long long)received,
		       (double)received / secs);
		lat_print_text(&sum);
	}
	fflush(stdout);
	if (err && !xt_stop) {
		fprintf(stderr, "xvi-perf: stream ping-pong with %s failed: %s%s\n",
			xt_addr_str(&cfg->addr, a, sizeof(a)), strerror(-err), err_hint(-err));
		rc = 1;
	}
	if (!rc && !received && !xt_stop)
		rc = 1;
	lat_free(&lat);
	cli_close(k, !err);
	free(k);
	free(msg);
	return rc;
}

/*
 * --zc: write bytes [@off, @off + @n) of the batch that starts after
 * message @seq where they go (the send buffer): each message a sockperf
 * header and a zeroed body, the bytes the copying client sends.
 */
static void batch_write(char *dst, size_t off, size_t n, __u64 seq, __u32 msg)
{
	while (n) {
		size_t in = off % msg, take = msg - in < n ? msg - in : n, hn = 0;

		if (in < SP_HDR_LEN) {
			char h[SP_HDR_LEN];

			hn = SP_HDR_LEN - in < take ? SP_HDR_LEN - in : take;
			sp_put(h, seq + 1 + off / msg, SP_F_CLIENT, msg);
			memcpy(dst, h + in, hn);
		}
		memset(dst + hn, 0, take - hn);
		dst += take;
		off += take;
		n -= take;
	}
}

/* One send of the rest of the batch: by copy, or in place with --zc. */
static ssize_t batch_send(const struct perf_cfg *cfg, struct xst_conn *c, const char *buf,
			  size_t off, size_t blen, __u64 seq)
{
	ssize_t w;
	void *p;
	int err;

	if (!cfg->zc)
		return xst_send(c, buf + off, blen - off);
	w = xvi_stream__send_alloc(c->s, &p, blen - off);
	if (w <= 0)
		return w;
	batch_write(p, off, (size_t)w, seq, cfg->msg_size);
	err = xvi_stream__send_commit(c->s, (size_t)w);
	return err ? err : w;
}

/* What one throughput run delivered, for the sum of a --threads run. */
struct stp_result {
	__u64 srv_bytes;
	double dsecs;
	bool answered;
	int rc;
};

static int stream_tp(const struct perf_cfg *cfg, struct stp_result *res)
{
	struct xst_pollent pe;
	struct xt_cpu cpu0, cpu1, cpu;
	__u64 start, end, now, t_done = 0, seq = 0, sent = 0, calls = 0, waits = 0;
	__u64 m0, m1 = 0;
	size_t blen = (size_t)cfg->msg_size * (size_t)cfg->batch, off = 0;
	struct cclient *k;
	char *buf, q[SP_STATS_CPU_LEN], a[64];
	int rc = 0, err = 0, i, r;
	double secs, dsecs;

	k = calloc(1, sizeof(*k));
	buf = calloc(1, blen);
	if (!k || !buf || cli_open(cfg, k, cfg->nodelay)) {
		if (k)
			cli_close(k, false);
		free(k);
		free(buf);
		return 1;
	}
	pe = (struct xst_pollent){ .c = &k->c, .events = POLLOUT };
	/* A fresh count and CPU baseline on the server. */
	sp_put(buf, 0, SP_F_CLIENT | SP_F_WARMUP, cfg->msg_size);
	err = send_all(&k->o, &k->c, buf, cfg->msg_size, REPLY_TIMEOUT_MS);

	xt_cpu_now(&cpu0);
	m0 = xt_machine_busy_ns();
	start = now = xt_now_ns();
	end = start + (__u64)(cfg->seconds * 1e9);
	/*
	 * Whole batches only: a batch begun before the deadline is finished,
	 * so the stream always ends on a message boundary.
	 */
	while (!err && !xt_stop && (off || now < end)) {
		ssize_t w;

		if (!off && !cfg->zc)
			for (i = 0; i < cfg->batch; i++)
				sp_put(buf + (size_t)i * cfg->msg_size, seq + 1 + (__u64)i,
				       SP_F_CLIENT, cfg->msg_size);
		w = batch_send(cfg, &k->c, buf, off, blen, seq);
		calls++;
		if (w > 0) {
			off += (size_t)w;
			if (off == blen) {
				off = 0;
				seq += (__u64)cfg->batch;
				sent += (__u64)cfg->batch;
			}
		} else if (w == -EAGAIN || w == 0) {
			waits++;
			r = xst_wait(&k->o, &pe, 1, 100);
			if (r < 0)
				err = r;
		} else {
			err = (int)w;
		}
		now = xt_now_ns();
	}
	xt_cpu_now(&cpu1);
	now = xt_now_ns();
	secs = (double)(now - start) / 1e9;
	if (secs <= 0)
		secs = 1e-9;
	/* The count question travels behind every message: its answer means delivered. */
	if (!err) {
		memset(q, 0, sizeof(q));
		sp_put(q, seq + 1, SP_F_CLIENT | SP_F_PONG | SP_F_XVI_STATS, sizeof(q));
		sp_put_u64(q, SP_HDR_LEN, SP_STATS_ASK);
		k->want_seq = seq + 1;
		err = send_all(&k->o, &k->c, q, sizeof(q), ANSWER_TIMEOUT_MS);
		if (!err) {
			r = cli_read_until(k, &k->answered, ANSWER_TIMEOUT_MS);
			if (r < 0)
				err = r;
			else if (r == 0 && !xt_stop)
				err = -ETIMEDOUT;
			t_done = xt_now_ns();
			m1 = xt_machine_busy_ns();
		}
	}
	cpu = xt_cpu_diff(&cpu0, &cpu1);
	dsecs = t_done ? (double)(t_done - start) / 1e9 : secs;
	res->answered = k->answered;
	res->srv_bytes = k->srv_bytes;
	res->dsecs = dsecs;
	flockfile(stdout);	/* --threads: one thread's report in one piece */
	if (cfg->threads > 1 && cfg->json)
		printf("{\"thread\":%u,\"thread_queue\":%u,", cfg->thread, cfg->xt.queue);
	else if (cfg->json)
		printf("{");
	if (cfg->threads > 1 && !cfg->json)
		printf("xvi-perf: thread %u, queue %u:\n", cfg->thread, cfg->xt.queue);
	if (cfg->json) {
		printf("\"mode\":\"throughput\",\"transport\":\"%s\",\"server\":\"%s\","
		       "\"msg_size\":%u,\"seconds\":%.3f,\"mps_limit\":0,\"batch\":%d,"
		       "\"send\":\"%s\",\"nodelay\":%s,\"sent\":%llu,\"send_errors\":%d,"
		       "\"no_buffer\":%llu,\"send_calls\":%llu,\"msg_rate\":%.1f,"
		       "\"mbit_per_sec\":%.3f,\"bytes\":%llu,"
		       "\"cpu\":{\"user_s\":%.4f,\"sys_s\":%.4f,\"ns_per_msg\":%.1f,"
		       "\"ns_per_byte\":%.4f}",
		       xst_name(&k->o), xt_addr_str(&cfg->addr, a, sizeof(a)), cfg->msg_size,
		       secs, cfg->batch, cfg->zc ? "stream-zc" : "stream",
		       cfg->nodelay ? "true" : "false",
		       (unsigned long long)sent, err ? 1 : 0, (unsigned long long)waits,
		       (unsigned long long)calls, (double)sent / secs,
		       (double)sent * cfg->msg_size * 8 / secs / 1e6,
		       (unsigned long long)(sent * cfg->msg_size), cpu.user_ns / 1e9,
		       cpu.sys_ns / 1e9,
		       sent ? (double)(cpu.user_ns + cpu.sys_ns) / (double)sent : 0.0,
		       sent ? (double)(cpu.user_ns + cpu.sys_ns) / (double)sent / cfg->msg_size :
			      0.0);
		stream_json(&k->c);
		tcp_json(&k->c);
		if (k->answered) {
			/* Machine CPU from the first send to the answer: what it
			 * cost the host to deliver these bytes, nothing around. */
			if (m0 && m1 > m0)
				printf(",\"machine_cpu_s\":%.4f", (m1 - m0) / 1e9);
			printf(",\"server_received\":%llu,\"server_received_bytes\":%llu,"
			       "\"delivery_seconds\":%.3f,\"delivered_rate\":%.1f,"
			       "\"delivered_mbit_per_sec\":%.3f,\"lost\":%llu,\"loss_pct\":%.4f",
			       (unsigned long long)k->srv_rx, (unsigned long long)k->srv_bytes,
			       dsecs, (double)k->srv_rx / dsecs,
			       (double)k->srv_bytes * 8 / dsecs / 1e6,
			       (unsigned long long)(sent > k->srv_rx ? sent - k->srv_rx : 0),
			       sent ? 100.0 * (double)(sent > k->srv_rx ? sent - k->srv_rx : 0) /
					      (double)sent : 0.0);
			if (k->have_srv_cpu)
				printf(",\"server_cpu\":{\"user_s\":%.4f,\"sys_s\":%.4f,"
				       "\"ns_per_msg\":%.1f}",
				       k->srv_cpu.user_ns / 1e9, k->srv_cpu.sys_ns / 1e9,
				       k->srv_rx ? (double)(k->srv_cpu.user_ns + k->srv_cpu.sys_ns) /
						   (double)k->srv_rx : 0.0);
			printf("}\n");
		} else {
			printf(",\"server_received\":null}\n");
		}
	} else {
		printf("xvi-perf: stream throughput to %s (%s), %u-byte messages, %d per send, "
		       "%.3f s\n", xt_addr_str(&cfg->addr, a, sizeof(a)), xst_name(&k->o),
		       cfg->msg_size, cfg->batch, secs);
		printf("xvi-perf: sent %llu messages, %.0f msg/s, %.3f Mbit/s; client CPU user "
		       "%.3f s sys %.3f s\n", (unsigned long long)sent, (double)sent / secs,
		       (double)sent * cfg->msg_size * 8 / secs / 1e6, cpu.user_ns / 1e9,
		       cpu.sys_ns / 1e9);
		if (k->answered)
			printf("xvi-perf: server received %llu messages in %.3f s: %.0f msg/s, "
			       "%.3f Mbit/s delivered\n", (unsigned long long)k->srv_rx, dsecs,
			       (double)k->srv_rx / dsecs, (double)k->srv_bytes * 8 / dsecs / 1e6);
	}
	fflush(stdout);
	funlockfile(stdout);
	if (err && !xt_stop) {
		fprintf(stderr, "xvi-perf: stream throughput to %s failed: %s%s\n",
			xt_addr_str(&cfg->addr, a, sizeof(a)), strerror(-err), err_hint(-err));
		rc = 1;
	}
	if (!sent && !rc)
		rc = 1;
	cli_close(k, !err);
	free(k);
	free(buf);
	res->rc = rc;
	return rc;
}

struct stp_thread {
	struct perf_cfg cfg;
	struct stp_result res;
};

static void *stp_thread(void *arg)
{
	struct stp_thread *th = arg;

	perf_pin_cpu(th->cfg.thread);
	th->res.rc = 1;		/* until the run says otherwise */
	stream_tp(&th->cfg, &th->res);
	return NULL;
}

/*
 * --threads N: N connections side by side, each from its own endpoint
 * (queue i, its own source port) and thread; each reports, then the sum:
 * bytes the server counted over the longest delivery time.
 */
static int perf_stream_throughput_threads(const struct perf_cfg *cfg)
{
	struct stp_thread *th;
	__u32 i, n = cfg->threads, started, answered = 0;
	__u64 bytes = 0;
	double dsecs = 0;
	int rc;

	th = calloc(n, sizeof(*th));
	if (!th)
		return 1;
	for (i = 0; i < n; i++)
		perf_thread_cfg(cfg, i, &th[i].cfg);
	started = perf_run_threads(n, stp_thread, th, sizeof(*th));
	rc = started < n;
	for (i = 0; i < started; i++) {
		rc |= th[i].res.rc;
		if (!th[i].res.answered)
			continue;
		answered++;
		bytes += th[i].res.srv_bytes;
		if (th[i].res.dsecs > dsecs)
			dsecs = th[i].res.dsecs;
	}
	if (dsecs <= 0)
		dsecs = 1e-9;
	if (cfg->json)
		printf("{\"mode\":\"throughput-sum\",\"threads\":%u,\"answered\":%u,"
		       "\"server_received_bytes\":%llu,\"delivery_seconds\":%.3f,"
		       "\"delivered_mbit_per_sec\":%.3f}\n", n, answered,
		       (unsigned long long)bytes, dsecs, (double)bytes * 8 / dsecs / 1e6);
	else
		printf("xvi-perf: %u connections, %u answered: %.3f Mbit/s delivered in total\n",
		       n, answered, (double)bytes * 8 / dsecs / 1e6);
	fflush(stdout);
	free(th);
	return rc || answered < n;
}

int perf_stream_throughput(const struct perf_cfg *cfg)
{
	struct stp_result res = { 0 };

	if (cfg->threads > 1)
		return perf_stream_throughput_threads(cfg);
	return stream_tp(cfg, &res);
}
