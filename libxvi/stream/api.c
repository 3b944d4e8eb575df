// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Public stream API: the real link (an xvi endpoint, a timerfd, an epoll
 * set the application can wait on) under the protocol engine, and the
 * blocking variants of the engine's non-blocking operations.
 *
 * Progress without a thread: every call pumps the endpoint once (receive
 * batch -> engine -> timers -> one doorbell).  A connection closed by the
 * application keeps its timers in the timerfd, so the application's poll
 * on xvi_stream_ctx__fd() wakes it to finish FIN/FINACK, and
 * xvi_stream_ctx__free() gives the remaining ones a bounded last chance.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include "stream/engine.h"
#include "ep/endpoint.h"
#include "pkt/gather.h"
#include "common/opts.h"
#include "common/log.h"
#include "common/util.h"

#define RX_BATCH	64
#define TXQ		64
#define SPIN_US		30
/*
 * XVI_SCTX_ARM_ON_SLEEP: pumps without an xvi_stream_ctx__arm() in between
 * after which the fd is disarmed.  A pump of a spinning application takes
 * about 0.1 us, so this is some 200 us of polling without a sleep: longer
 * than the spins before a sleep (30 to 50 us, some 500 pumps), whose every
 * sleep would otherwise pay a disarm and an arm (three or four system
 * calls).
 */
#define DISARM_PUMPS	2048
#define INTERNAL_COOKIE	(~0ULL)	/* blocking send by reference */

struct xvi_sapi {
	struct xvi_endpoint *ep;
	int epfd;
	int tfd;
	__u64 tfd_at;			/* when the timerfd fires, 0: disarmed */
	/*
	 * The fd is armed: the endpoint's socket is in the epoll set and the
	 * timerfd follows the engine's deadlines.  Always, unless the context
	 * has XVI_SCTX_ARM_ON_SLEEP (xvi_stream_ctx__arm); its timerfd is
	 * set only by xvi_stream_ctx__arm, to the deadline of that moment.
	 */
	bool armed;
	bool arm_on_sleep;
	__u32 pumps;			/* since the last arm */
	struct xvi_txbuf spare[TXQ];	/* allocated, not handed out */
	int nspare;
	struct xvi_txbuf cur;		/* handed to the engine */
	bool have_cur;
	struct xvi_txbuf q[TXQ];	/* filled, waiting for the doorbell */
	__u64 sums[TXQ];		/* their payload sums, or XVI_TX_NO_SUM */
	union xvi_sockaddr dst[TXQ];
	int nq;
	struct xvi_msg msgs[RX_BATCH];
	/*
	 * Multi-buffer endpoints deliver a datagram larger than a frame as
	 * pieces (XVI_MSG_MORE); the engine takes a datagram in one piece, so
	 * they are gathered here (buf: max_payload bytes, or NULL).
	 */
	struct xvi_gather gather;
};

/* ---- the endpoint link ------------------------------------------------ */

static void ep_flush(void *priv)
{
	struct xvi_sapi *a = priv;
	int off = 0, tries = 0;

	while (off < a->nq) {
		int r = xvi_tx__send(a->ep, a->q + off, a->sums + off, a->nq - off);

		if (r > 0) {
			off += r;
			continue;
		}
		if (r == -EAGAIN && tries++ < 4) {
			xvi_endpoint__flush(a->ep);
			continue;
		}
		if (r == -EAGAIN)
			break;	/* keep the rest for the next flush */
		/*
		 * A datagram the endpoint refuses (no route, no neighbour):
		 * drop it like the network would; retransmission or the
		 * user timeout deals with it.
		 */
		pr_debug("stream: send failed: %s\n", strerror(-r));
		xvi_endpoint__tx_free(a->ep, a->q + off, 1);
		off++;
	}
	if (off) {
		memmove(a->q, a->q + off, (a->nq - off) * sizeof(a->q[0]));
		memmove(a->dst, a->dst + off, (a->nq - off) * sizeof(a->dst[0]));
		memmove(a->sums, a->sums + off, (a->nq - off) * sizeof(a->sums[0]));
		a->nq -= off;
		for (int i = 0; i < a->nq; i++)
			a->q[i].dst = &a->dst[i];
	}
}

static void *ep_tx_get(void *priv, __u32 *cap)
{
	struct xvi_sapi *a = priv;

	if (a->nq == TXQ)
		ep_flush(a);
	if (a->nq == TXQ)
		return NULL;
	if (!a->nspare) {
		int n = xvi_endpoint__tx_alloc(a->ep, a->spare, TXQ / 2);

		if (n <= 0 && a->nq) {
			ep_flush(a);
			n = xvi_endpoint__tx_alloc(a->ep, a->spare, TXQ / 2);
		}
		if (n <= 0)
			return NULL;
		a->nspare = n;
	}
	a->cur = a->spare[--a->nspare];
	a->have_cur = true;
	*cap = a->cur.cap;
	return a->cur.data;
}

static void ep_tx_put_sum(void *priv, void *buf, __u32 len, const union xvi_sockaddr *peer,
			  __u64 sum)
{
	struct xvi_sapi *a = priv;
	struct xvi_txbuf *b = &a->q[a->nq];

	/* The engine puts the buffer it just got before asking for another. */
	if (!a->have_cur || buf != a->cur.data)
		return;
	a->have_cur = false;
	*b = a->cur;
	b->len = len;
	a->dst[a->nq] = *peer;
	b->dst = &a->dst[a->nq];
	a->sums[a->nq] = sum;
	a->nq++;
}

static void ep_tx_put(void *priv, void *buf, __u32 len, const union xvi_sockaddr *peer)
{
	ep_tx_put_sum(priv, buf, len, peer, XVI_TX_NO_SUM);
}

static __u64 ep_now(void *priv)
{
	return xvi_now_us();
}

static void ep_timer_arm(void *priv, __u64 at)
{
	struct xvi_sapi *a = priv;
	struct itimerspec its = { 0 };

	if (!at || !a->armed || a->tfd_at == at)
		return;
	/*
	 * Called from the engine's runs, re-arm only when the new deadline
	 * is earlier: a later one makes at worst a spurious wakeup, and this
	 * keeps a bulk transfer (whose retransmission deadline moves with
	 * every ACK) free of syscalls.  With XVI_SCTX_ARM_ON_SLEEP the call
	 * comes once per sleep (xvi_sctx__prepare_sleep), and the deadline
	 * is set as it is: one left from an earlier sleep may be far earlier
	 * (a probe for a message answered since) and wake this one for
	 * nothing.
	 */
	if (!a->arm_on_sleep && a->tfd_at && a->tfd_at <= at)
		return;
	its.it_value.tv_sec = at / 1000000;
	its.it_value.tv_nsec = (at % 1000000) * 1000;
	if (!timerfd_settime(a->tfd, TFD_TIMER_ABSTIME, &its, NULL))
		a->tfd_at = at;
}

/*
 * An application that polls without sleeping needs neither half of the
 * fd: the socket in the epoll set costs an epoll callback under the
 * socket's wait-queue lock for every frame received and every transmit
 * completed, and a timerfd that follows deadlines which every round trip
 * moves (a probe, a held ACK) fires for nothing: a timer interrupt, a
 * read and a re-arm.  xvi_stream_ctx__arm() brings both back.
 */
static void disarm(struct xvi_sapi *a)
{
	struct itimerspec its = { 0 };

	a->armed = false;
	if (epoll_ctl(a->epfd, EPOLL_CTL_DEL, xvi_endpoint__fd(a->ep), NULL))
		pr_debug("stream: epoll_ctl(DEL): %s\n", strerror(errno));
	if (a->tfd_at) {
		timerfd_settime(a->tfd, 0, &its, NULL);
		a->tfd_at = 0;
	}
}

/* One piece of a multi-buffer datagram: append, hand over when complete. */
static void gather_piece(struct xvi_stream_ctx *ctx, const struct xvi_msg *m)
{
	struct xvi_gather *g = &ctx->api->gather;
	int r = xvi_gather__add(g, m);

	if (r > 0)
		xvi_sctx__input(ctx, &g->dgram.peer, g->dgram.data, g->dgram.len,
				g->dgram.flags & XVI_MSG_CSUM_TRUSTED);
	else if (r < 0)		/* longer than the endpoint's max_payload */
		ctx->stats.rx_malformed++;
}

/*
 * Receive one batch into the engine.  Returns pieces taken.  The clock is
 * read once here, for the batch and for the rest of the API call
 * (pump_run releases it): a read costs tens of ns in a guest, and a call
 * used to take one per segment received, one per run and one per send.
 */
static int pump_rx(struct xvi_stream_ctx *ctx)
{
	struct xvi_sapi *a = ctx->api;
	int n, i;

	ctx->now = xvi_now_us();
	ctx->clock_held = true;
	n = xvi_endpoint__recv_batch(a->ep, a->msgs, RX_BATCH);
	if (n < 0) {
		ctx->clock_held = false;
		return n;
	}
	for (i = 0; i < n; i++) {
		const struct xvi_msg *m = &a->msgs[i];

		if (likely(!(m->flags & XVI_MSG_MORE) && !a->gather.active))
			xvi_sctx__input(ctx, &m->peer, m->data, m->len,
					m->flags & XVI_MSG_CSUM_TRUSTED);
		else
			gather_piece(ctx, m);
	}
	if (n)
		xvi_endpoint__release(a->ep, a->msgs, n);
	return n;
}

/* Run the engine after a receive: due timers, output, the doorbell. */
static void pump_run(struct xvi_stream_ctx *ctx)
{
	struct xvi_sapi *a = ctx->api;
	__u64 now = ctx->now;	/* pump_rx's reading */

	if (a->tfd_at && a->tfd_at <= now) {
		__u64 exp;

		/* Drain it, or the fd stays readable. */
		if (read(a->tfd, &exp, sizeof(exp)) < 0 && errno != EAGAIN)
			pr_debug("stream: timerfd read: %s\n", strerror(errno));
		a->tfd_at = 0;
		ctx->armed = 0;
	}
	xvi_sctx__run_at(ctx, now);
	ctx->clock_held = false;
	if (a->arm_on_sleep && a->armed && ++a->pumps >= DISARM_PUMPS)
		disarm(a);
}

/* Receive one batch into the engine, then run it.  Returns pieces taken. */
static int pump(struct xvi_stream_ctx *ctx)
{
	int n = pump_rx(ctx);

	if (n >= 0)
		pump_run(ctx);
	return n;
}

/* ---- context ------------------------------------------------------------ */

struct xvi_stream_ctx *xvi_stream_ctx__new(struct xvi_endpoint *ep,
					   const struct xvi_stream_ctx_opts *opts)
{
	struct xvi_endpoint_info info = { .sz = sizeof(info) };
	struct epoll_event ev = { .events = EPOLLIN };
	struct xvi_stream_ctx *ctx;
	struct xvi_slink link = { 0 };
	struct xvi_sapi *a;
	int err;

	if (!ep) {
		errno = EINVAL;
		return NULL;
	}
	err = xvi_endpoint__info(ep, &info);
	if (err)
		return NULL;
	a = calloc(1, sizeof(*a));
	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	a->ep = ep;
	a->armed = true;
	a->arm_on_sleep = OPTS_GET(opts, flags, 0) & XVI_SCTX_ARM_ON_SLEEP;
	if (info.flags & XVI_INFO_MULTI_BUFFER) {
		a->gather.cap = info.max_payload;
		a->gather.buf = malloc(a->gather.cap);
		if (!a->gather.buf) {
			free(a);
			errno = ENOMEM;
			return NULL;
		}
	}
	a->epfd = epoll_create1(EPOLL_CLOEXEC);
	a->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (a->epfd < 0 || a->tfd < 0 ||
	    epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->tfd, &ev) ||
	    epoll_ctl(a->epfd, EPOLL_CTL_ADD, xvi_endpoint__fd(ep), &ev)) {
		err = -errno;
		pr_warn("stream: cannot set up the context's epoll/timerfd: %s\n",
			strerror(errno));
		goto fail;
	}
	link.tx_get = ep_tx_get;
	link.tx_put = ep_tx_put;
	/* Software UDP checksums: the engine sums while it copies. */
	if (info.local.sa.sa_family != AF_PACKET && !(info.flags & XVI_INFO_TX_CSUM_OFFLOAD))
		link.tx_put_sum = ep_tx_put_sum;
	link.tx_flush = ep_flush;
	link.now_us = ep_now;
	link.timer_arm = ep_timer_arm;
	link.priv = a;
	link.mtu = info.max_payload;
	/* UDP datagrams carry a checksum the datapath verifies; raw do not. */
	link.checksummed = info.local.sa.sa_family != AF_PACKET;
	ctx = xvi_sctx__new(&link, opts);
	if (!ctx) {
		err = -errno;
		goto fail;
	}
	ctx->api = a;
	return ctx;
fail:
	if (a->epfd >= 0)
		close(a->epfd);
	if (a->tfd >= 0)
		close(a->tfd);
	free(a->gather.buf);
	free(a);
	errno = -err;
	return NULL;
}

int xvi_stream_ctx__fd(const struct xvi_stream_ctx *ctx)
{
	if (!ctx || !ctx->api)
		return xvi_err(-EINVAL);
	return ctx->api->epfd;
}

int xvi_stream_ctx__arm(struct xvi_stream_ctx *ctx)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct xvi_sapi *a;

	if (!ctx || !ctx->api)
		return xvi_err(-EINVAL);
	a = ctx->api;
	a->pumps = 0;
	if (!a->armed) {
		/*
		 * Added with frames already in the ring, the socket is reported
		 * ready at once (the kernel polls it on insertion): nothing that
		 * arrived since the last pump is slept through.
		 */
		if (epoll_ctl(a->epfd, EPOLL_CTL_ADD, xvi_endpoint__fd(a->ep), &ev) &&
		    errno != EEXIST) {
			int err = -errno;

			pr_warn("stream: cannot arm the context's fd: epoll_ctl: %s\n",
				strerror(-err));
			/* The sleep is then bounded; held ACKs still leave. */
			xvi_sctx__prepare_sleep(ctx);
			return xvi_err(err);
		}
		a->armed = true;
	}
	/*
	 * No reply will carry a held ACK while the application sleeps; with
	 * XVI_SCTX_ARM_ON_SLEEP the timerfd gets the engine's deadline here.
	 */
	xvi_sctx__prepare_sleep(ctx);
	return 0;
}

int xvi_sctx__keep_armed(struct xvi_stream_ctx *ctx)
{
	struct xvi_sapi *a = ctx->api;
	int err;

	if (!a->arm_on_sleep)
		return 0;
	/*
	 * An arm as before a sleep (the socket back into the set, the timer
	 * given the engine's deadline), then the runs keep the timer, moving
	 * it only earlier (ep_timer_arm), and no pump count disarms.
	 */
	a->arm_on_sleep = false;
	err = xvi_stream_ctx__arm(ctx);
	ctx->flags &= ~XVI_SCTX_ARM_ON_SLEEP;
	return err;
}

int xvi_stream_ctx__process(struct xvi_stream_ctx *ctx)
{
	int n, total = 0;

	if (!ctx || !ctx->api)
		return xvi_err(-EINVAL);
	/* Bounded: a flood must not keep the application in here forever. */
	for (int i = 0; i < 16; i++) {
		n = pump(ctx);
		if (n < 0)
			return xvi_err(n);
		total += n;
		if (n < RX_BATCH)
			break;
	}
	return total;
}

int xvi_stream_ctx__wait(struct xvi_stream_ctx *ctx, int timeout_ms)
{
	struct epoll_event ev;
	__u64 start = xvi_now_us(), next;
	int n, ms;

	n = xvi_stream_ctx__process(ctx);
	if (n)
		return n;
	/* A short spin catches an answer already on its way (ping-pong). */
	while (xvi_now_us() - start < SPIN_US && (timeout_ms < 0 || timeout_ms > 0)) {
		n = xvi_stream_ctx__process(ctx);
		if (n)
			return n;
	}
	ms = timeout_ms;
	next = xvi_sctx__next(ctx);
	if (next) {
		__u64 now = xvi_now_us();
		int dms = next > now ? (int)((next - now + 999) / 1000) : 0;

		if (ms < 0 || dms < ms)
			ms = dms;
	}
	if (ms) {
		/*
		 * Not armed (epoll or timerfd refused): the socket and timers may
		 * not wake this sleep, so it is bounded as the tools' are.
		 */
		if (xvi_stream_ctx__arm(ctx) < 0 && (ms < 0 || ms > 100))
			ms = 100;
		n = epoll_wait(ctx->api->epfd, &ev, 1, ms);
		if (n < 0 && errno != EINTR)
			return xvi_err(-errno);
	}
	n = xvi_stream_ctx__process(ctx);
	if (n)
		return n;
	/* A timer that fell due was processed too: that is progress. */
	return next && next <= xvi_now_us() ? 1 : xvi_err(-ETIMEDOUT);
}

void xvi_stream_ctx__free(struct xvi_stream_ctx *ctx)
{
	struct xvi_stream *s, *next;
	__u32 closing, left, tw = 0;
	__u64 until;

	if (!ctx)
		return;
	if (ctx->api) {
		/* Streams the application still holds: abort. */
		for (s = ctx->all; s; s = next) {
			next = s->next;
			if (!s->orphan && !s->listen.listener && s->state != XVI_SS_CLOSED)
				xvi_ss__abort(s);
			if (next && next->prev != s)
				next = ctx->all;	/* list changed under us */
		}
		/*
		 * Orphans still exchanging FINs: a last bounded chance, which
		 * ends as soon as the peer acknowledged our FIN and sent its
		 * own.  TIME_WAIT is not waited for: both FINs are
		 * acknowledged, the peer has everything and closed, and
		 * waiting out its timer made every process whose side closed
		 * first exit linger_ms late (section 8 of PROTOCOL.md).
		 */
		closing = xvi_sctx__closing(ctx);
		until = xvi_now_us() + ctx->linger_us;
		while (xvi_sctx__closing(ctx) && xvi_now_us() < until)
			xvi_stream_ctx__wait(ctx, 10);
		xvi_stream_ctx__process(ctx);
		left = xvi_sctx__closing(ctx);
		for (s = ctx->all; s; s = s->next)
			tw += s->state == XVI_SS_TIME_WAIT;
		pr_debug("stream: context freed: %u of %u closing connections finished by FIN/ACK, %u given up; %u in TIME_WAIT released; timer ends in its life: %llu linger, %llu TIME_WAIT\n",
			 closing - left, closing, left, tw,
			 (unsigned long long)ctx->stats.linger_aborts,
			 (unsigned long long)ctx->stats.time_wait_expired);
		ep_flush(ctx->api);
		close(ctx->api->epfd);
		close(ctx->api->tfd);
		if (ctx->api->nspare)
			xvi_endpoint__tx_free(ctx->api->ep, ctx->api->spare, ctx->api->nspare);
		if (ctx->api->nq)
			xvi_endpoint__tx_free(ctx->api->ep, ctx->api->q, ctx->api->nq);
		free(ctx->api->gather.buf);
		free(ctx->api);
	}
	xvi_sctx__free(ctx);
}

int xvi_stream_ctx__register_mem(struct xvi_stream_ctx *ctx, void *addr, size_t len)
{
	if (!ctx || !addr || !len)
		return xvi_err(-EINVAL);
	for (int i = 0; i < XVI_SCTX_MAX_REGIONS; i++) {
		struct xvi_sregion *r = &ctx->regions[i];

		if (!r->used) {
			*r = (struct xvi_sregion){ .addr = addr, .len = len, .used = true };
			return i;
		}
	}
	pr_warn("stream: all %d memory regions in use: deregister one first\n",
		XVI_SCTX_MAX_REGIONS);
	return xvi_err(-ENOSPC);
}

int xvi_stream_ctx__deregister_mem(struct xvi_stream_ctx *ctx, int region)
{
	struct xvi_sregion *r;

	if (!ctx || region < 0 || region >= XVI_SCTX_MAX_REGIONS || !ctx->regions[region].used)
		return xvi_err(-EINVAL);
	r = &ctx->regions[region];
	if (r->refs) {
		pr_warn("region %d still has sends or MemNet jobs in flight: complete them first\n",
			region);
		return xvi_err(-EBUSY);
	}
	r->used = false;
	return 0;
}

int xvi_stream_ctx__stats(const struct xvi_stream_ctx *ctx, struct xvi_stream_ctx_stats *st)
{
	struct xvi_stream_ctx_stats out;

	if (!ctx || !OUT_VALID(st))
		return xvi_err(-EINVAL);
	out = ctx->stats;
	out.conns = ctx->nconns;
	OUT_COPY(st, out);
	return 0;
}

/* ---- streams ------------------------------------------------------------- */

static const char *const state_names[] = {
	[XVI_SS_CLOSED] = "CLOSED",		[XVI_SS_LISTEN] = "LISTEN",
	[XVI_SS_SYN_SENT] = "SYN_SENT",		[XVI_SS_SYN_RCVD] = "SYN_RCVD",
	[XVI_SS_ESTABLISHED] = "ESTABLISHED",	[XVI_SS_FIN_WAIT_1] = "FIN_WAIT_1",
	[XVI_SS_FIN_WAIT_2] = "FIN_WAIT_2",	[XVI_SS_CLOSING] = "CLOSING",
	[XVI_SS_TIME_WAIT] = "TIME_WAIT",	[XVI_SS_CLOSE_WAIT] = "CLOSE_WAIT",
	[XVI_SS_LAST_ACK] = "LAST_ACK",
};

const char *xvi_stream_state__str(enum xvi_stream_state st)
{
	if ((unsigned int)st < sizeof(state_names) / sizeof(state_names[0]))
		return state_names[st];
	return "?";
}

/* Progress on every call: one pump when there is a real link. */
static void progress(struct xvi_stream_ctx *ctx)
{
	if (ctx->api)
		pump(ctx);
	else
		xvi_sctx__run(ctx);
}

/*
 * The same in two halves around an operation that runs the engine itself
 * when it queues data or consumes it (send, recv): the receive first, so
 * the operation sees what arrived, and the run only if the operation did
 * not run; one clock read and one run per call instead of two.  A data
 * segment then also carries the ACK for what this receive took in.
 */
static __u32 progress_rx(struct xvi_stream_ctx *ctx)
{
	if (ctx->api)
		pump_rx(ctx);
	return ctx->runs;
}

static void progress_end(struct xvi_stream_ctx *ctx, __u32 runs)
{
	if (ctx->runs != runs) {
		ctx->clock_held = false;
		return;
	}
	if (ctx->api)
		pump_run(ctx);
	else
		xvi_sctx__run(ctx);
}

static bool blocking(const struct xvi_stream *s)
{
	return !(s->flags & XVI_STREAM_NONBLOCK) && s->ctx->api;
}

struct xvi_stream *xvi_stream__socket(struct xvi_stream_ctx *ctx,
				      const struct xvi_stream_opts *opts)
{
	__u32 flags;

	if (!ctx || !OPTS_VALID(opts, xvi_stream_opts)) {
		errno = EINVAL;
		return NULL;
	}
	flags = OPTS_GET(opts, flags, 0);
	if (flags & ~(XVI_STREAM_NONBLOCK | XVI_STREAM_NODELAY)) {
		pr_warn("stream: unknown flags 0x%x\n", flags);
		errno = EINVAL;
		return NULL;
	}
	return xvi_ss__socket(ctx, flags);
}

int xvi_stream__bind(struct xvi_stream *s, __u16 service)
{
	if (!s || s->state != XVI_SS_CLOSED || s->id.peer_cid)
		return xvi_err(-EINVAL);
	s->id.service = service;
	s->bound = true;
	return 0;
}

int xvi_stream__listen(struct xvi_stream *s, int backlog)
{
	int err;

	if (!s)
		return xvi_err(-EINVAL);
	err = xvi_ss__listen(s, backlog);
	return err ? xvi_err(err) : 0;
}

struct xvi_stream *xvi_stream__accept(struct xvi_stream *s, union xvi_sockaddr *peer)
{
	struct xvi_stream *c;

	if (!s) {
		errno = EINVAL;
		return NULL;
	}
	for (;;) {
		progress(s->ctx);
		c = xvi_ss__accept(s, peer);
		if (c || errno != EAGAIN || !blocking(s))
			return c;
		xvi_stream_ctx__wait(s->ctx, -1);
	}
}

int xvi_stream__connect(struct xvi_stream *s, const union xvi_sockaddr *peer, __u16 service)
{
	int err;

	if (!s || !peer)
		return xvi_err(-EINVAL);
	err = xvi_ss__connect(s, peer, service);
	if (err != -EINPROGRESS || !blocking(s))
		return xvi_err(err);
	while (s->state == XVI_SS_SYN_SENT)
		xvi_stream_ctx__wait(s->ctx, -1);
	if (s->state >= XVI_SS_ESTABLISHED)
		return 0;
	return xvi_err(s->err ? -s->err : -ECONNREFUSED);
}

static ssize_t send_by_ref(struct xvi_stream *s, int region, const void *buf, size_t len)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	ssize_t r;
	__u32 end;

	r = xvi_ss__send_ref(s, region, (const __u8 *)buf - ctx->regions[region].addr,
			     len, INTERNAL_COOKIE);
	while (r == -EAGAIN) {
		xvi_stream_ctx__wait(ctx, -1);
		r = xvi_ss__send_ref(s, region, (const __u8 *)buf - ctx->regions[region].addr,
				     len, INTERNAL_COOKIE);
	}
	if (r < 0)
		return r;
	/* The caller may reuse the buffer on return: wait for the ACK. */
	end = s->snd.queue.end;
	while (seq_lt(s->snd.una, end) && !s->err && s->state != XVI_SS_CLOSED)
		xvi_stream_ctx__wait(ctx, -1);
	return s->err && seq_lt(s->snd.una, end) ? -s->err : (ssize_t)len;
}

ssize_t xvi_stream__send(struct xvi_stream *s, const void *buf, size_t len, int flags)
{
	size_t done = 0;
	ssize_t r;
	int region;
	__u32 runs;

	if (!s || (!buf && len) || flags)
		return xvi_err(-EINVAL);
	region = blocking(s) && len >= s->ctx->copy_thr ?
		 xvi_sctx__region_of(s->ctx, buf, len) : -1;
	if (region >= 0) {
		progress(s->ctx);
		r = send_by_ref(s, region, buf, len);
		return r < 0 ? xvi_err((int)r) : r;
	}
	/*
	 * Corked (timers.c, sctx_flush): new data from a run of send calls
	 * leaves in kernel-sized batches, not one doorbell per call.  Never
	 * while waiting: the doorbell rings before any sleep.
	 */
	s->ctx->cork = true;
	runs = progress_rx(s->ctx);
	for (;;) {
		r = xvi_ss__send(s, (const __u8 *)buf + done, len - done);
		progress_end(s->ctx, runs);
		if (r > 0)
			done += r;
		if (done == len || (r < 0 && r != -EAGAIN) || !blocking(s))
			break;
		if (r == -EAGAIN || r == 0) {
			s->ctx->cork = false;
			xvi_stream_ctx__wait(s->ctx, -1);
			s->ctx->cork = true;
		}
	}
	s->ctx->cork = false;
	if (done)
		return done;
	return r < 0 ? xvi_err((int)r) : 0;
}

ssize_t xvi_stream__send_ref(struct xvi_stream *s, int region, size_t off, size_t len,
			     __u64 cookie)
{
	ssize_t r;

	if (!s || cookie == INTERNAL_COOKIE)
		return xvi_err(-EINVAL);
	progress(s->ctx);
	r = xvi_ss__send_ref(s, region, off, len, cookie);
	while (r == -EAGAIN && blocking(s)) {
		xvi_stream_ctx__wait(s->ctx, -1);
		r = xvi_ss__send_ref(s, region, off, len, cookie);
	}
	return r < 0 ? xvi_err((int)r) : r;
}

int xvi_stream__reap(struct xvi_stream *s, __u64 *cookies, int max)
{
	int n = 0, i, k = 0;

	if (!s || (!cookies && max) || max < 0)
		return xvi_err(-EINVAL);
	progress(s->ctx);
	n = xvi_ss__reap(s, cookies, max);
	/* Drop the completions of blocking sends by reference. */
	for (i = 0; i < n; i++)
		if (cookies[i] != INTERNAL_COOKIE)
			cookies[k++] = cookies[i];
	return k;
}

/*
 * Direct receive: while nothing waits in the receive ring, the caller's
 * buffer is posted to the engine for the progress this call makes, so
 * in-order payload goes from the frame (UMEM) straight into it, as MemNet's
 * posted buffers do: one copy instead of two.  Not while MemNet jobs own the
 * stream's posted buffer.
 */
static bool recv_post(struct xvi_stream *s, void *buf, size_t len)
{
	if (!len || s->memnet.post || s->memnet.jobs || !s->flight.segs ||
	    xvi_srq__ready(&s->rcv.queue) || s->rcv.shut || s->orphan)
		return false;
	s->memnet.post = buf;
	s->memnet.post_len = len > (1u << 30) ? (1u << 30) : (__u32)len;
	s->memnet.post_done = 0;
	return true;
}

static __u32 recv_unpost(struct xvi_stream *s)
{
	__u32 got = s->memnet.post_done;

	s->memnet.post = NULL;
	s->memnet.post_len = s->memnet.post_done = 0;
	return got;
}

ssize_t xvi_stream__recv(struct xvi_stream *s, void *buf, size_t len, int flags)
{
	ssize_t r;

	if (!s || (!buf && len) || flags)
		return xvi_err(-EINVAL);
	for (;;) {
		bool posted = recv_post(s, buf, len);
		__u32 got = 0, runs;

		runs = progress_rx(s->ctx);
		if (posted)
			got = s->memnet.post_done;
		r = -EAGAIN;
		if (!got) {
			r = xvi_ss__recv(s, buf, len);
			progress_end(s->ctx, runs);
			if (r == -EAGAIN && blocking(s)) {
				xvi_stream_ctx__wait(s->ctx, -1);
				if (posted)
					got = s->memnet.post_done;
			}
		}
		if (posted)
			recv_unpost(s);
		if (got) {
			/* Whatever the ring holds follows the placed bytes. */
			ssize_t more = xvi_ss__recv(s, (__u8 *)buf + got, len - got);

			progress_end(s->ctx, runs);
			r = got + (more > 0 ? more : 0);
			break;
		}
		if (r != -EAGAIN || !blocking(s))
			break;
	}
	return r < 0 ? xvi_err((int)r) : r;
}

ssize_t xvi_stream__send_alloc(struct xvi_stream *s, void **buf, size_t len)
{
	ssize_t r;

	if (!s || !buf)
		return xvi_err(-EINVAL);
	/*
	 * Corked as send is: an application writing in place calls
	 * send_alloc and send_commit once per message, and each run
	 * uncorked rang the doorbell (a system call) for the one segment
	 * the last commit queued.  Never while waiting.
	 */
	s->ctx->cork = true;
	progress(s->ctx);
	s->ctx->cork = false;
	/* Waiting processes what arrives: ACKs free room. */
	while ((r = xvi_ss__send_alloc(s, buf, len)) == -EAGAIN && blocking(s))
		xvi_stream_ctx__wait(s->ctx, -1);
	return r < 0 ? xvi_err((int)r) : r;
}

/* A length the in-place calls never handed out: say what to do instead. */
static int in_place_result(int err, const char *call, size_t len, const char *fix)
{
	if (err == -EINVAL)
		pr_warn("stream: %s of %zu bytes: %s\n", call, len, fix);
	return err ? xvi_err(err) : 0;
}

int xvi_stream__send_commit(struct xvi_stream *s, size_t len)
{
	int err;

	if (!s)
		return xvi_err(-EINVAL);
	s->ctx->cork = true;	/* as in send_alloc */
	err = xvi_ss__send_commit(s, len);
	s->ctx->cork = false;
	return in_place_result(err, "send_commit", len,
			       "more than send_alloc gave, or a send in between took the space back: call send_alloc again");
}

int xvi_stream__recv_zc(struct xvi_stream *s, struct iovec *iov, int max)
{
	int r;

	if (!s || !iov || max < 1)
		return xvi_err(-EINVAL);
	for (;;) {
		__u32 runs = progress_rx(s->ctx);

		r = xvi_ss__recv_zc(s, iov, max);
		progress_end(s->ctx, runs);
		if (r != -EAGAIN || !blocking(s))
			break;
		xvi_stream_ctx__wait(s->ctx, -1);
	}
	return r < 0 ? xvi_err(r) : r;
}

int xvi_stream__recv_release(struct xvi_stream *s, size_t len)
{
	if (!s)
		return xvi_err(-EINVAL);
	return in_place_result(xvi_ss__recv_release(s, len), "recv_release", len,
			       "more than recv_zc showed");
}

int xvi_stream__shutdown(struct xvi_stream *s, int how)
{
	int err;

	if (!s)
		return xvi_err(-EINVAL);
	err = xvi_ss__shutdown(s, how);
	return err ? xvi_err(err) : 0;
}

static int jobs_pending(const struct xvi_stream *s)
{
	if (!s->memnet.jobs)
		return 0;
	pr_warn("stream: %u MemNet jobs still use this stream: wait for them (job_wait) first\n",
		s->memnet.jobs);
	return xvi_err(-EBUSY);
}

int xvi_stream__close(struct xvi_stream *s)
{
	if (!s)
		return xvi_err(-EINVAL);
	return jobs_pending(s) ?: xvi_ss__close(s);
}

int xvi_stream__abort(struct xvi_stream *s)
{
	if (!s)
		return xvi_err(-EINVAL);
	return jobs_pending(s) ?: xvi_ss__abort(s);
}

int xvi_stream__set_flags(struct xvi_stream *s, __u32 flags)
{
	if (!s || (flags & ~(XVI_STREAM_NONBLOCK | XVI_STREAM_NODELAY)))
		return xvi_err(-EINVAL);
	s->flags = flags;
	/* Turning NODELAY on sends a held small tail now. */
	if ((flags & XVI_STREAM_NODELAY) && s->flight.segs)
		xvi_ss__kick(s);
	return 0;
}

int xvi_stream__poll(struct xvi_stream_pollfd *fds, int n, int timeout_ms)
{
	struct xvi_stream_ctx *ctx;
	__u64 until = 0;
	int ready, i;

	if (!fds || n <= 0 || !fds[0].s)
		return xvi_err(-EINVAL);
	ctx = fds[0].s->ctx;
	for (i = 1; i < n; i++)
		if (!fds[i].s || fds[i].s->ctx != ctx)
			return xvi_err(-EINVAL);	/* one context per call */
	if (timeout_ms > 0)
		until = xvi_now_us() + (__u64)timeout_ms * 1000;
	for (;;) {
		progress(ctx);
		ready = 0;
		for (i = 0; i < n; i++) {
			short ev = xvi_ss__events(fds[i].s);

			fds[i].revents = ev & (fds[i].events | POLLERR | POLLHUP);
			ready += fds[i].revents != 0;
		}
		if (ready)
			return ready;
		if (!timeout_ms)
			return xvi_err(-ETIMEDOUT);
		if (!ctx->api)
			return xvi_err(-EOPNOTSUPP);	/* nothing to block on */
		if (timeout_ms < 0) {
			xvi_stream_ctx__wait(ctx, -1);
		} else {
			__u64 now = xvi_now_us();

			if (now >= until)
				return xvi_err(-ETIMEDOUT);
			xvi_stream_ctx__wait(ctx, (int)((until - now + 999) / 1000));
		}
	}
}

int xvi_stream__info(const struct xvi_stream *s, struct xvi_stream_info *info)
{
	struct xvi_stream_info t;

	if (!s || !OUT_VALID(info))
		return xvi_err(-EINVAL);
	t = s->stats;
	t.state = s->state;
	t.error = s->err;
	t.peer = s->id.peer;
	t.service = s->id.service;
	t.local_cid = s->id.local_cid;
	t.peer_cid = s->id.peer_cid;
	t.mss = s->snd.mss;
	t.srtt_us = s->rtt.srtt_us;
	t.rttvar_us = s->rtt.rttvar_us;
	t.rto_us = s->rtt.rto_us;
	t.cwnd = s->cc.cwnd;
	t.ssthresh = s->cc.ssthresh;
	t.peer_wnd = s->snd.peer_wnd;
	t.rcv_queued = s->flight.segs ? xvi_srq__ready(&s->rcv.queue) : 0;
	t.snd_queued = s->flight.segs ? xvi_ssq__queued(&s->snd.queue) : 0;
	OUT_COPY(info, t);
	return 0;
}
