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
};

static struct node nodes[2];
static struct pkt *q;
static size_t nq, qcap;
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

static void l_flush(void *priv) { (void)priv; }
static __u64 l_now(void *priv) { (void)priv; return vnow; }
static void l_arm(void *priv, __u64 at) { (void)priv; (void)at; }

/* Deliver everything in flight, and what that answers, until quiet. */
static void settle(void)
{
	while (nq) {
		struct pkt p = q[--nq];
		struct node *n = &nodes[p.to];

		xvi_sctx__input(n->ctx, &nodes[1 - p.to].addr, p.data, p.len, false);
		if (!nq)
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

static int one(__u32 nconns)
{
	struct xvi_stream_ctx_opts o = { .sz = sizeof(o), .max_conns = nconns + 16 };
	__u64 run[ROUNDS], next[ROUNDS], t, sink = 0;
	struct xvi_stream *l;
	__u32 iters, opened = 0;

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
			return -1;
		}
	}
	l = xvi_ss__socket(nodes[1].ctx, XVI_STREAM_NONBLOCK);
	if (!l) {
		fprintf(stderr, "stream-progress: listener: %s\n", strerror(errno));
		return -1;
	}
	l->id.service = SVC;
	if (xvi_ss__listen(l, nconns + 16)) {
		fprintf(stderr, "stream-progress: listen failed\n");
		return -1;
	}
	/* Open in batches of 256, each settled and accepted. */
	while (opened < nconns) {
		__u32 batch = nconns - opened < 256 ? nconns - opened : 256;

		for (__u32 i = 0; i < batch; i++) {
			struct xvi_stream *c = xvi_ss__socket(nodes[0].ctx, XVI_STREAM_NONBLOCK);

			if (!c || xvi_ss__connect(c, &nodes[1].addr, SVC) != -EINPROGRESS) {
				fprintf(stderr, "stream-progress: connect %u failed\n", opened + i);
				return -1;
			}
		}
		settle();
		for (__u32 i = 0; i < batch; i++)
			if (!xvi_ss__accept(l, NULL)) {
				fprintf(stderr, "stream-progress: only %u of %u connections accepted\n",
					opened + i, nconns);
				return -1;
			}
		opened += batch;
	}
	settle();
	if (nodes[1].ctx->nconns != nconns) {
		fprintf(stderr, "stream-progress: server holds %u connections, expected %u\n",
			nodes[1].ctx->nconns, nconns);
		return -1;
	}
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
	if (nq) {
		fprintf(stderr, "stream-progress: idle engine sent %zu datagrams\n", nq);
		return -1;
	}
	qsort(run, ROUNDS, sizeof(run[0]), cmp_u64);
	qsort(next, ROUNDS, sizeof(next[0]), cmp_u64);
	printf("conns %u run_ns %llu next_ns %llu\n", nconns, (unsigned long long)run[ROUNDS / 2],
	       (unsigned long long)next[ROUNDS / 2]);
	fflush(stdout);
	for (int i = 0; i < 2; i++)
		xvi_sctx__free(nodes[i].ctx);
	nq = 0;
	return sink == 1 ? 1 : 0;	/* keeps sink alive */
}

int main(int argc, char **argv)
{
	static const __u32 dflt[] = { 10, 1000, 10000 };

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
