/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A deterministic simulated link for stream engine tests: virtual time,
 * seeded loss, duplication, reordering and corruption, dead peers, a
 * per-datagram filter.  Two nodes, each an engine (struct xvi_stream_ctx)
 * on its own link; nothing leaves the process.  Shared by the criterion
 * files that include it (everything static).
 */
#ifndef XVI_TEST_STREAM_SIM_H
#define XVI_TEST_STREAM_SIM_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include "stream/engine.h"
#include "pkt/csum.h"

#define MAXPKT		1600

struct sim;

struct node {
	struct sim *sim;
	int id;
	struct xvi_stream_ctx *ctx;
	union xvi_sockaddr addr;
	__u64 timer;
	__u8 txbuf[MAXPKT];
	bool dead;		/* sends and receives nothing, runs no timers */
	/*
	 * gate: datagrams wait in held until the engine flushes the link,
	 * as on an endpoint, where nothing leaves before the doorbell.
	 */
	bool gate;
	struct pkt *held;
	int nheld, held_cap;
	__u64 flushes;		/* flushes that sent something */
};

struct pkt {
	__u64 at;
	__u64 serial;		/* FIFO among equal times: links keep order */
	int to;
	__u32 len;
	__u8 data[MAXPKT];
};

struct sim {
	__u64 now;
	__u64 rng;
	int loss, dup, reorder, corrupt;	/* per mille */
	bool drop_all[2];			/* drop everything sent by node i */
	bool drop_strays;			/* drop datagrams to other peers */
	__u32 delay_us;
	/* per-datagram hook: true drops it (after it is recorded) */
	bool (*filter)(struct sim *s, int from, const void *buf, __u32 len);
	void *fpriv;
	struct node n[2];
	struct pkt *q;
	int nq, cap;
	__u64 delivered, dropped, serial;
	/*
	 * sim_init_summed(): the link checksums like UDP (delivered as
	 * verified, no CRC) and takes the engine's payload sums, each checked
	 * against the bytes it came with.
	 */
	bool checksummed;
	__u64 summed_segs;
};

static inline __u32 srnd(struct sim *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return (__u32)(s->rng >> 11);
}

static inline void *l_get(void *priv, __u32 *cap)
{
	struct node *n = priv;

	*cap = MAXPKT;
	return n->txbuf;
}

static inline void enqueue(struct sim *s, int to, const void *buf, __u32 len, __u64 extra)
{
	struct pkt *p;

	if (s->nq == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->q = realloc(s->q, s->cap * sizeof(*s->q));
		cr_assert(s->q);
	}
	p = &s->q[s->nq++];
	p->at = s->now + s->delay_us + extra;
	p->serial = s->serial++;
	p->to = to;
	p->len = len;
	memcpy(p->data, buf, len);
	if (s->corrupt && (int)(srnd(s) % 1000) < s->corrupt) {
		__u32 bit = srnd(s) % (len * 8);

		p->data[bit / 8] ^= 1u << (bit % 8);
	}
}

static inline void link_out(struct node *n, const void *buf, __u32 len,
			    const union xvi_sockaddr *peer)
{
	struct sim *s = n->sim;
	int to = 1 - n->id;
	int copies = 1;

	if (s->filter && s->filter(s, n->id, buf, len)) {
		s->dropped++;
		return;
	}
	if (n->dead || s->drop_all[n->id] || (s->loss && (int)(srnd(s) % 1000) < s->loss)) {
		s->dropped++;
		return;
	}
	if (s->drop_strays && !xvi_sockaddr_eq(peer, &s->n[to].addr)) {
		s->dropped++;
		return;
	}
	cr_assert(xvi_sockaddr_eq(peer, &s->n[to].addr), "datagram to an unknown peer");
	if (s->dup && (int)(srnd(s) % 1000) < s->dup)
		copies = 2;
	while (copies--) {
		__u64 extra = 0;

		if (s->reorder && (int)(srnd(s) % 1000) < s->reorder)
			extra = 1 + srnd(s) % (4 * s->delay_us + 200);
		enqueue(s, to, buf, len, extra);
	}
}

static inline void l_put(void *priv, void *buf, __u32 len, const union xvi_sockaddr *peer)
{
	struct node *n = priv;
	struct pkt *p;

	if (!n->gate) {
		link_out(n, buf, len, peer);
		return;
	}
	if (n->nheld == n->held_cap) {
		n->held_cap = n->held_cap ? n->held_cap * 2 : 64;
		n->held = realloc(n->held, n->held_cap * sizeof(*n->held));
		cr_assert(n->held);
	}
	p = &n->held[n->nheld++];
	p->len = len;
	p->to = 1 - n->id;
	memcpy(p->data, buf, len);
	cr_assert(xvi_sockaddr_eq(peer, &n->sim->n[p->to].addr), "datagram to an unknown peer");
}

static inline void l_put_sum(void *priv, void *buf, __u32 len, const union xvi_sockaddr *peer,
			     __u64 sum)
{
	struct node *n = priv;

	cr_assert_eq(xvi_csum_fold(sum), xvi_csum_fold(xvi_csum_partial(buf, len, 0)),
		     "engine's sum of a %u-byte segment is wrong", len);
	n->sim->summed_segs++;
	l_put(priv, buf, len, peer);
}

static inline void l_flush(void *priv)
{
	struct node *n = priv;

	if (n->nheld)
		n->flushes++;
	for (int i = 0; i < n->nheld; i++)
		link_out(n, n->held[i].data, n->held[i].len, &n->sim->n[n->held[i].to].addr);
	n->nheld = 0;
}

static inline __u64 l_now(void *priv)
{
	return ((struct node *)priv)->sim->now;
}

static inline void l_arm(void *priv, __u64 at)
{
	((struct node *)priv)->timer = at;
}

static inline void sim_init_as(struct sim *s, __u64 seed, const struct xvi_stream_ctx_opts *o,
			       bool checksummed)
{
	memset(s, 0, sizeof(*s));
	s->checksummed = checksummed;
	s->rng = seed * 0x9E3779B97F4A7C15ULL + 1;
	s->now = 1000000;
	s->delay_us = 50;
	for (int i = 0; i < 2; i++) {
		struct node *n = &s->n[i];
		struct xvi_slink link = {
			.tx_get = l_get, .tx_put = l_put, .tx_flush = l_flush,
			.now_us = l_now, .timer_arm = l_arm, .priv = n,
			.mtu = 1472, .checksummed = checksummed, .seed = seed * 2 + i + 1,
			.tx_put_sum = checksummed ? l_put_sum : NULL,
		};

		n->sim = s;
		n->id = i;
		n->addr.in.sin_family = AF_INET;
		n->addr.in.sin_addr.s_addr = htonl(0x0a000001 + i);
		n->addr.in.sin_port = htons(7000);
		n->ctx = xvi_sctx__new(&link, o);
		cr_assert(n->ctx, "engine: %s", strerror(errno));
	}
}

static inline void sim_init(struct sim *s, __u64 seed, const struct xvi_stream_ctx_opts *o)
{
	sim_init_as(s, seed, o, false);
}

static inline void sim_init_summed(struct sim *s, __u64 seed, const struct xvi_stream_ctx_opts *o)
{
	sim_init_as(s, seed, o, true);
}

static inline void sim_set_iss(struct sim *s, __u32 iss)
{
	s->n[0].ctx->link.iss = iss;
	s->n[1].ctx->link.iss = iss + 0x1000;
}

static inline void sim_fini(struct sim *s)
{
	for (int i = 0; i < 2; i++) {
		xvi_sctx__free(s->n[i].ctx);
		free(s->n[i].held);
	}
	free(s->q);
}

/* Deliver queued datagram @i (time already advanced to it). */
static inline void sim_deliver_at(struct sim *s, int i)
{
	struct pkt p = s->q[i];
	struct node *n = &s->n[p.to];

	s->q[i] = s->q[--s->nq];
	if (n->dead)
		return;
	s->delivered++;
	xvi_sctx__input(n->ctx, &s->n[1 - p.to].addr, p.data, p.len, s->checksummed);
	xvi_sctx__run(n->ctx);
}

/*
 * Deliver the next datagram and run no timer, even one due before it: what
 * an exchange achieves by itself.  false: no datagram in flight.
 */
static inline bool sim_deliver(struct sim *s)
{
	int bi = -1;

	for (int i = 0; i < s->nq; i++)
		if (bi < 0 || s->q[i].at < s->q[bi].at ||
		    (s->q[i].at == s->q[bi].at && s->q[i].serial < s->q[bi].serial))
			bi = i;
	if (bi < 0)
		return false;
	if (s->q[bi].at > s->now)
		s->now = s->q[bi].at;
	sim_deliver_at(s, bi);
	return true;
}

/* Run the next event (a delivery or a timer).  false: nothing pending. */
static inline bool sim_step(struct sim *s)
{
	__u64 best = ~0ULL;
	int bi = -1, bt = -1;

	for (int i = 0; i < s->nq; i++)
		if (s->q[i].at < best || (s->q[i].at == best && s->q[i].serial < s->q[bi].serial)) {
			best = s->q[i].at;
			bi = i;
		}
	for (int i = 0; i < 2; i++)
		if (s->n[i].timer && !s->n[i].dead && s->n[i].timer < best) {
			best = s->n[i].timer;
			bt = i;
			bi = -1;
		}
	if (best == ~0ULL)
		return false;
	if (best > s->now)
		s->now = best;
	if (bi >= 0) {
		sim_deliver_at(s, bi);
	} else {
		struct node *n = &s->n[bt];

		n->timer = 0;
		n->ctx->armed = 0;
		xvi_sctx__run(n->ctx);
	}
	return true;
}

/* Step until @cond or virtual @limit_us passed; returns cond. */
#define RUN_UNTIL(s, limit_us, cond)						\
	({									\
		__u64 _end = (s)->now + (limit_us);				\
		bool _ok;							\
		while (!(_ok = (cond)) && (s)->now < _end)			\
			if (!sim_step(s))					\
				(s)->now += 1000;				\
		_ok;								\
	})

static inline struct xvi_stream *sock(struct sim *s, int node)
{
	struct xvi_stream *st = xvi_ss__socket(s->n[node].ctx, XVI_STREAM_NONBLOCK);

	cr_assert(st);
	return st;
}

static inline struct xvi_stream *listener(struct sim *s, __u16 svc, int backlog)
{
	struct xvi_stream *l = sock(s, 1);

	l->id.service = svc;
	cr_assert_eq(xvi_ss__listen(l, backlog), 0);
	return l;
}

/* Establish A(0) -> B(1); returns client, *srv gets the accepted one. */
static inline struct xvi_stream *pair(struct sim *s, struct xvi_stream *l, struct xvi_stream **srv)
{
	struct xvi_stream *c = sock(s, 0);

	cr_assert_eq(xvi_ss__connect(c, &s->n[1].addr, l->id.service), -EINPROGRESS);
	*srv = NULL;
	cr_assert(RUN_UNTIL(s, 30000000, c->state == XVI_SS_ESTABLISHED &&
			    (*srv || (*srv = xvi_ss__accept(l, NULL)))),
		  "no connection: client %s", xvi_stream_state__str(c->state));
	return c;
}

/*
 * Let @c send from @buf (@len bytes) for 2 virtual seconds while nobody
 * reads on the other side: the window closes.  Returns the bytes queued.
 */
static inline __u64 sim_fill_window(struct sim *s, struct xvi_stream *c, const __u8 *buf,
				    __u64 len)
{
	__u64 sent = 0;

	for (int round = 0; round < 200; round++) {
		ssize_t r = xvi_ss__send(c, buf + sent, len - sent);

		if (r > 0)
			sent += r;
		RUN_UNTIL(s, 10000, false);
	}
	return sent;
}

#endif /* XVI_TEST_STREAM_SIM_H */
