// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stream-progress: what one progress run of the stream engine costs against
 * the number of connections it holds.
 *
 * Two engines (client and server) over an in-process link with a virtual
 * clock open N connections and go idle: established, nothing to send,
 * nothing due.  Then the server's engine is timed doing what every
 * progress call does with no traffic: the run (xvi_sctx__run: due timers,
 * pending output, re-arming) and the sleep check of a wait
 * (xvi_sctx__next and xvi_sctx__release_acks).  The clock stands still, so
 * no timer falls due while it is timed: what is left is the cost of
 * finding that there is nothing to do, which should not grow with N.
 *
 * usage: stream-progress [N...]   (default 10 1000 10000)
 * Prints per N the median over rounds of the nanoseconds per call:
 *   conns N run_ns X next_ns Y
 *
 * stream-progress --batch: the batching of one run.  One connection copies
 * 16 MiB; each engine takes what arrived in bursts of up to B datagrams,
 * then runs once (what a pump of the real link does with B = 64), against
 * B = 1 (a run, and a flush of the link, per datagram).  Rounds alternate
 * between the two; per B the medians of:
 *   batch B ack_per_seg A flush_per_seg F ns_per_seg T
 * (ACKs the receiver sent, link flushes with something queued on both
 * sides, and the CPU time of both engines, per data segment).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include "stream/engine.h"

#define MAXPKT		1600
#define ROUNDS		15
#define BROUNDS		5
#define SVC		7

struct pkt {
	int to;
	__u32 len;
	__u8 data[MAXPKT];
};

struct node {
	struct xvi_stream_ctx *ctx;
	union xvi_sockaddr addr;
	__u8 txbuf[MAXPKT];
	int id;
	__u64 puts, flushes;	/* datagrams queued; flushes with any queued */
	bool dirty;
};

static struct node nodes[2];
static struct pkt *q;
static size_t nq, qhead, qcap;	/* FIFO: q[qhead..nq) in flight */
static __u64 vnow = 1000000;

static void *l_get(void *priv, __u32 *cap)
{
	*cap = MAXPKT;
	return ((struct node *)priv)->txbuf;
}

static void l_put(void *priv, void *buf, __u32 len, const union xvi_sockaddr *peer)
{
	struct node *n = priv;

	(void)peer;
	n->puts++;
	n->dirty = true;
	if (nq == qcap) {
		qcap = qcap ? qcap * 2 : 1024;
		q = realloc(q, qcap * sizeof(*q));
		if (!q) {
			perror("realloc");
			exit(1);
		}
	}
	q[nq].to = 1 - n->id;
	q[nq].len = len;
	memcpy(q[nq].data, buf, len);
	nq++;
}

static void l_flush(void *priv)
{
	struct node *n = priv;

	n->flushes += n->dirty;
	n->dirty = false;
}

static __u64 l_now(void *priv) { (void)priv; return vnow; }
static void l_arm(void *priv, __u64 at) { (void)priv; (void)at; }

/* Deliver everything in flight, and what that answers, until quiet. */
static void settle(void)
{
	while (nq > qhead) {
		struct pkt p = q[--nq];
		struct node *n = &nodes[p.to];

		xvi_sctx__input(n->ctx, &nodes[1 - p.to].addr, p.data, p.len, false);
		if (nq == qhead)
			for (int i = 0; i < 2; i++)
				xvi_sctx__run(nodes[i].ctx);
	}
}

static __u64 ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* Two engines with @nconns established connections; NULL on failure. */
static struct xvi_stream *setup(__u32 nconns, struct xvi_stream **srv)
{
	struct xvi_stream_ctx_opts o = { .sz = sizeof(o), .max_conns = nconns + 16 };
	struct xvi_stream *l, *c = NULL;
	__u32 opened = 0;

	for (int i = 0; i < 2; i++) {
		struct xvi_slink link = {
			.tx_get = l_get, .tx_put = l_put, .tx_flush = l_flush,
			.now_us = l_now, .timer_arm = l_arm, .priv = &nodes[i],
			.mtu = 1472, .seed = i + 1,
		};

		nodes[i].id = i;
		nodes[i].addr.in.sin_family = AF_INET;
		nodes[i].addr.in.sin_addr.s_addr = htonl(0xc6120001 + i);	/* 198.18.0.x */
		nodes[i].addr.in.sin_port = htons(7000);
		nodes[i].ctx = xvi_sctx__new(&link, &o);
		if (!nodes[i].ctx) {
			fprintf(stderr, "stream-progress: engine: %s\n", strerror(errno));
			return NULL;
		}
	}
	l = xvi_ss__socket(nodes[1].ctx, XVI_STREAM_NONBLOCK);
	if (!l) {
		fprintf(stderr, "stream-progress: listener: %s\n", strerror(errno));
		return NULL;
	}
	l->id.service = SVC;
	if (xvi_ss__listen(l, nconns + 16)) {
		fprintf(stderr, "stream-progress: listen failed\n");
		return NULL;
	}
	/* Open in batches of 256, each settled and accepted. */
	while (opened < nconns) {
		__u32 batch = nconns - opened < 256 ? nconns - opened : 256;

		for (__u32 i = 0; i < batch; i++) {
			c = xvi_ss__socket(nodes[0].ctx, XVI_STREAM_NONBLOCK);
			if (!c || xvi_ss__connect(c, &nodes[1].addr, SVC) != -EINPROGRESS) {
				fprintf(stderr, "stream-progress: connect %u failed\n", opened + i);
				return NULL;
			}
		}
		settle();
		for (__u32 i = 0; i < batch; i++)
			if (!(*srv = xvi_ss__accept(l, NULL))) {
				fprintf(stderr, "stream-progress: only %u of %u connections accepted\n",
					opened + i, nconns);
				return NULL;
			}
		opened += batch;
	}
	settle();
	if (nodes[1].ctx->nconns != nconns) {
		fprintf(stderr, "stream-progress: server holds %u connections, expected %u\n",
			nodes[1].ctx->nconns, nconns);
		return NULL;
	}
	return c;
}

static void teardown(void)
{
	for (int i = 0; i < 2; i++)
		xvi_sctx__free(nodes[i].ctx);
	memset(nodes, 0, sizeof(nodes));
	nq = qhead = 0;
}

static int one(__u32 nconns)
{
	__u64 run[ROUNDS], next[ROUNDS], t, sink = 0;
	struct xvi_stream *srv;
	__u32 iters;

	if (!setup(nconns, &srv))
		return -1;
	/* Enough calls per round for about a millisecond at 100 ns each. */
	iters = 10000;
	for (int r = 0; r < ROUNDS; r++) {
		t = ns();
		for (__u32 i = 0; i < iters; i++)
			xvi_sctx__run(nodes[1].ctx);
		run[r] = (ns() - t) / iters;
		t = ns();
		for (__u32 i = 0; i < iters; i++) {
			xvi_sctx__release_acks(nodes[1].ctx);
			sink += xvi_sctx__next(nodes[1].ctx);
		}
		next[r] = (ns() - t) / iters;
		if (nconns >= 1000 && r == 0 && run[0] > 10000)
			iters = 200;	/* a scan of every connection: fewer calls */
	}
	if (nq > qhead) {
		fprintf(stderr, "stream-progress: idle engine sent %zu datagrams\n", nq - qhead);
		return -1;
	}
	qsort(run, ROUNDS, sizeof(run[0]), cmp_u64);
	qsort(next, ROUNDS, sizeof(next[0]), cmp_u64);
	printf("conns %u run_ns %llu next_ns %llu\n", nconns, (unsigned long long)run[ROUNDS / 2],
	       (unsigned long long)next[ROUNDS / 2]);
	fflush(stdout);
	teardown();
	return sink == 1 ? 1 : 0;	/* keeps sink alive */
}

struct bres {
	double ack, flush, ns;
};

/* One 16 MiB copy, each engine taking bursts of up to @burst datagrams. */
static int copy_once(__u32 burst, struct bres *r)
{
	const __u64 total = 16 << 20;
	static __u8 buf[65536];
	struct xvi_stream *c, *v;
	__u64 sent = 0, rcvd = 0, t, segs0, acks0, fl0, spin = 0;
	struct timespec c0, c1;

	c = setup(1, &v);
	if (!c)
		return -1;
	c->flags |= XVI_STREAM_NONBLOCK;
	segs0 = c->stats.segs_sent;
	acks0 = v->stats.segs_sent;
	fl0 = nodes[0].flushes + nodes[1].flushes;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	while (rcvd < total && spin++ < 100000000) {
		ssize_t n;

		while (sent < total &&
		       (n = xvi_ss__send(c, buf, total - sent < sizeof(buf) ? total - sent
									    : sizeof(buf))) > 0)
			sent += n;
		/* What is in flight now arrives, in bursts, then runs. */
		if (qhead) {
			memmove(q, q + qhead, (nq - qhead) * sizeof(*q));
			nq -= qhead;
			qhead = 0;
		}
		for (size_t end = nq, k = 0; qhead < end; k++) {
			struct pkt *p = &q[qhead++];
			struct node *n = &nodes[p->to];

			xvi_sctx__input(n->ctx, &nodes[1 - p->to].addr, p->data, p->len, false);
			if ((k + 1) % burst == 0 || qhead == end) {
				xvi_sctx__run(nodes[0].ctx);
				xvi_sctx__run(nodes[1].ctx);
			}
		}
		while ((n = xvi_ss__recv(v, buf, sizeof(buf))) > 0)
			rcvd += n;
		if (nq == qhead) {
			/* Nothing in flight: the delayed ACK ends the wait. */
			vnow += 1000;
			xvi_sctx__run(nodes[0].ctx);
			xvi_sctx__run(nodes[1].ctx);
		}
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	t = (c1.tv_sec - c0.tv_sec) * 1000000000ull + c1.tv_nsec - c0.tv_nsec;
	if (rcvd != total) {
		fprintf(stderr, "stream-progress: copy stalled at %llu of %llu bytes (client %s, err %d, server %s)\n",
			(unsigned long long)rcvd, (unsigned long long)total,
			xvi_stream_state__str(c->state), c->err, xvi_stream_state__str(v->state));
		return -1;
	}
	segs0 = c->stats.segs_sent - segs0;
	r->ack = (double)(v->stats.segs_sent - acks0) / segs0;
	r->flush = (double)(nodes[0].flushes + nodes[1].flushes - fl0) / segs0;
	r->ns = (double)t / segs0;
	teardown();
	return 0;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int batch(void)
{
	static const __u32 bursts[] = { 1, 64 };
	double ack[2][BROUNDS], fl[2][BROUNDS], t[2][BROUNDS];

	for (int r = 0; r < BROUNDS; r++)
		for (int b = 0; b < 2; b++) {
			struct bres res;

			if (copy_once(bursts[b], &res))
				return -1;
			ack[b][r] = res.ack;
			fl[b][r] = res.flush;
			t[b][r] = res.ns;
		}
	for (int b = 0; b < 2; b++) {
		qsort(ack[b], BROUNDS, sizeof(double), cmp_dbl);
		qsort(fl[b], BROUNDS, sizeof(double), cmp_dbl);
		qsort(t[b], BROUNDS, sizeof(double), cmp_dbl);
		printf("batch %u ack_per_seg %.3f flush_per_seg %.3f ns_per_seg %.0f\n", bursts[b],
		       ack[b][BROUNDS / 2], fl[b][BROUNDS / 2], t[b][BROUNDS / 2]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const __u32 dflt[] = { 10, 1000, 10000 };

	if (argc == 2 && !strcmp(argv[1], "--batch"))
		return batch() ? 1 : 0;
	if (argc > 1) {
		for (int i = 1; i < argc; i++) {
			char *end;
			unsigned long n = strtoul(argv[i], &end, 10);

			if (*end || !n || n > 100000) {
				fprintf(stderr, "stream-progress: connection count '%s': give 1..100000\n",
					argv[i]);
				return 2;
			}
			if (one((__u32)n) < 0)
				return 1;
		}
		return 0;
	}
	for (size_t i = 0; i < sizeof(dflt) / sizeof(dflt[0]); i++)
		if (one(dflt[i]) < 0)
			return 1;
	return 0;
}
