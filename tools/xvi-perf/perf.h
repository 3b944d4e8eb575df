/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * xvi-perf: sockperf-compatible UDP latency and throughput over libxvi
 * endpoints or kernel sockets.
 */
#ifndef XVI_PERF_H
#define XVI_PERF_H

#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "params.h"
#include "parse.h"
#include "transport.h"

/*
 * The sockperf 3.x UDP message header (src/message.h there), 14 bytes at the
 * start of every datagram, every field big endian, no padding on the wire:
 *   0..7   sequence number (u64), counted by the client from 1
 *   8..9   flags (u16): CLIENT (sent by a client, cleared in replies),
 *          PONG (the client asks for a reply), WARMUP (not measured, no reply)
 *   10..13 message length (u32), header included
 * The rest of the message is filler of that length.
 */
#define SP_HDR_LEN	14
#define SP_F_CLIENT	0x0001
#define SP_F_PONG	0x0002
#define SP_F_WARMUP	0x0004
/*
 * xvi-perf extension, unknown to sockperf: a client asks an xvi-perf server
 * how many of its messages arrived.  The request also carries CLIENT|PONG,
 * so a sockperf server just echoes it and the client sees its own request
 * magic come back ("server count unavailable") instead of an answer.
 */
#define SP_F_XVI_STATS	0x0100
#define SP_STATS_LEN	(SP_HDR_LEN + 8 + 8 + 8)
/*
 * A longer question also asks for the server's CPU time (user, system, in
 * ns) since the run's warmup message: two more u64 after the counts.
 */
#define SP_STATS_CPU_LEN (SP_STATS_LEN + 8 + 8)
#define SP_STATS_ASK	0x7876692d73746174ull	/* "xvi-stat" */
#define SP_STATS_ANSWER	0x7876692d616e7377ull	/* "xvi-answ" */

#define SP_DEFAULT_PORT	11111
#define SP_DEFAULT_SIZE	SP_HDR_LEN

struct sp_hdr {
	__u64 seq;
	__u16 flags;
	__u32 len;
};

static inline void sp_put(void *buf, __u64 seq, __u16 flags, __u32 len)
{
	__u64 s = htobe64(seq);
	__u16 f = htobe16(flags);
	__u32 l = htobe32(len);
	char *p = buf;

	memcpy(p, &s, 8);
	memcpy(p + 8, &f, 2);
	memcpy(p + 10, &l, 4);
}

/* Decode; false if the datagram is too short for what the header claims. */
static inline bool sp_get(const void *buf, __u32 buflen, struct sp_hdr *h)
{
	const char *p = buf;
	__u64 s;
	__u16 f;
	__u32 l;

	if (buflen < SP_HDR_LEN)
		return false;
	memcpy(&s, p, 8);
	memcpy(&f, p + 8, 2);
	memcpy(&l, p + 10, 4);
	h->seq = be64toh(s);
	h->flags = be16toh(f);
	h->len = be32toh(l);
	return h->len >= SP_HDR_LEN && h->len <= buflen;
}

static inline void sp_set_flags(void *buf, __u16 flags)
{
	__u16 f = htobe16(flags);

	memcpy((char *)buf + 8, &f, 2);
}

static inline void sp_put_u64(void *buf, size_t off, __u64 v)
{
	v = htobe64(v);
	memcpy((char *)buf + off, &v, 8);
}

static inline __u64 sp_get_u64(const void *buf, size_t off)
{
	__u64 v;

	memcpy(&v, (const char *)buf + off, 8);
	return be64toh(v);
}

enum perf_mode {
	MODE_SERVER,
	MODE_PING_PONG,
	MODE_THROUGHPUT,
};

/* throughput: how the payload gets into the send buffer */
enum send_mode {
	SEND_ZC,	/* written in place (tx_alloc/tx_send, or sendmmsg) */
	SEND_COPY,	/* copied by the send call (xvi: fused copy + checksum) */
	SEND_MEMCPY,	/* memcpy into a send buffer, then tx_send (two passes) */
};

struct perf_cfg {
	enum perf_mode mode;
	struct xt_cfg xt;
	union xvi_sockaddr addr;	/* server: bind; client: destination */
	__u32 msg_size;
	double seconds;			/* client: test time; server: 0 = forever */
	__u64 mps;			/* 0 = as fast as possible */
	int batch;			/* datagrams per send/receive call */
	enum send_mode send;
	bool json;
	int verbose;
	/* --stream: xvi streams, or kernel TCP with --kernel */
	bool stream;
	bool nodelay;		/* throughput: no combining (ping-pong: always) */
	__u32 window;		/* xvi streams: window w in segments */
	/* --zc: xvi streams in place (send_alloc/commit, recv_zc/release) */
	bool zc;
	/*
	 * --threads N: N endpoints on queues queue..queue+N-1, one thread
	 * each.  Server: one port spread over them (XVI_EP_SPREAD), or N
	 * kernel sockets with SO_REUSEPORT; throughput client: N flows.
	 */
	__u32 threads;
	__u32 thread;		/* this thread's index in a --threads run */
};

/* The configuration of thread @i of a --threads run. */
void perf_thread_cfg(const struct perf_cfg *cfg, __u32 i, struct perf_cfg *out);
/* Pin the calling thread to CPU @i modulo the CPUs it may run on. */
void perf_pin_cpu(__u32 i);
/*
 * Run @fn on @args, @args + @stride, ... in @n threads and wait for them;
 * returns how many ran (one that cannot start stops the rest: xt_stop).
 */
__u32 perf_run_threads(__u32 n, void *(*fn)(void *), void *args, size_t stride);

/*
 * A --threads server: N thread states of @stride bytes (zeroed), each
 * opened in turn with its perf_thread_cfg() (the first makes the spread
 * tag), run in parallel, each on its CPU, then summarised and closed.
 */
struct perf_srv_ops {
	const char *kind;				/* "server", "stream server" */
	struct perf_cfg *(*cfg)(void *th);		/* the state's configuration */
	int (*open)(void *th);				/* 0, or 1 (message printed) */
	const char *(*transport)(void *th);		/* an opened state's */
	int (*run)(void *th, __u64 start);		/* 0 or 1 */
	void (*summary)(void *th, double secs);
	void (*close)(void *th);
};

int perf_server_threads(const struct perf_cfg *cfg, const struct perf_srv_ops *ops,
			size_t stride);

int perf_server(const struct perf_cfg *cfg);
int perf_ping_pong(const struct perf_cfg *cfg);
int perf_throughput(const struct perf_cfg *cfg);
/* stream.c: the same three over byte streams (sockperf's header frames them) */
int perf_stream_server(const struct perf_cfg *cfg);
int perf_stream_ping_pong(const struct perf_cfg *cfg);
int perf_stream_throughput(const struct perf_cfg *cfg);
#define SP_STREAM_MAX	1048576		/* largest stream message, 1 MiB */

/* stats.c */
struct lat_samples {
	__u32 *ns;		/* round-trip times */
	size_t n, cap, max;
	__u64 dropped;		/* samples beyond max (not stored) */
};

int lat_add(struct lat_samples *s, __u64 rtt_ns);
void lat_free(struct lat_samples *s);

struct lat_summary {
	size_t n;
	double avg_us, stddev_us, min_us, max_us;	/* one way = RTT / 2 */
	double p50_us, p90_us, p99_us, p999_us, p9999_us;
};

void lat_summarize(struct lat_samples *s, struct lat_summary *out);
/* Ping-pong reports, shared by the datagram and the stream clients. */
void lat_print_json(const struct lat_summary *s);	/* "latency_usec":{...} */
void lat_print_text(const struct lat_summary *s);	/* the one-way latency line */
void cpu_print_json(const struct xt_cpu *cpu, __u64 msgs); /* "cpu":{...} */
/* "xvi-perf: KIND listening on ADDR (...)" at a server's start. */
void perf_print_listening(const struct perf_cfg *cfg, const char *kind, const char *transport);

const char *perf_transport_name(const struct perf_cfg *cfg);

/* main.c's options, and run.c's run of them */
struct perf_args {
	struct perf_cfg cfg;
	const char *ip;		/* -i */
	__u16 port;		/* -p */
	int verbosity;		/* -v: library messages */
};

int perf_run(struct perf_args *a);

#endif /* XVI_PERF_H */
