// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A stream context: options with their defaults, creation and freeing,
 * registered regions.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>
#include "stream/engine_priv.h"
#include "common/opts.h"
#include "common/log.h"

#define MIN_MSS		64

/*
 * SOVIA's t = 16 suits its w = 32.  A larger window lets the ACKs space out
 * as well (t = w / 4, at most 64): every ACK frees t segments, so t is also
 * the batch a window-limited sender hands the link per doorbell, and on a
 * copy-mode AF_XDP link the per-batch cost (system call, NAPI run, wake-up
 * of the receiving socket) is a good part of the sender's time.  PRB still
 * asks for an ACK at once when the sender has to wait (window, cwnd, end
 * of data), and the delayed-ACK timer bounds the rest.
 */
static __u32 default_ack_thr(__u32 window)
{
	__u32 t = window / 4;

	if (t < 16)
		t = 16;
	if (t > 64)
		t = 64;
	return t < window ? t : window;
}

struct xvi_stream_ctx *xvi_sctx__new(const struct xvi_slink *link,
				     const struct xvi_stream_ctx_opts *opts)
{
	struct xvi_stream_ctx *ctx;
	__u32 max_mss;

	if (!OPTS_VALID(opts, xvi_stream_ctx_opts)) {
		errno = EINVAL;
		return NULL;
	}
	if (link->mtu < XVI_SW_MAX_HDR + MIN_MSS) {
		pr_warn("stream: link payload %u too small for segments\n", link->mtu);
		errno = EINVAL;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	ctx->link = *link;
	max_mss = link->mtu - XVI_SW_MAX_HDR;
	if (max_mss > 0xffff)
		max_mss = 0xffff;
	ctx->flags = OPTS_GET(opts, flags, 0);
	ctx->max_conns = OPTS_GET(opts, max_conns, 0) ?: 1024;
	/*
	 * SOVIA's w = 32 by default.  Bulk transfers on fast links want more:
	 * 32 segments hold only 30 us of data at 12 Gbit/s, so a receiver's
	 * scheduling hiccup stalls the sender (PROTOCOL.md section 10).
	 */
	ctx->window = OPTS_GET(opts, window, 0) ?: 32;
	ctx->ack_thr = OPTS_GET(opts, ack_threshold, 0) ?: default_ack_thr(ctx->window);
	ctx->delack_us = OPTS_GET(opts, delack_us, 0) ?: 2000;
	ctx->mss = OPTS_GET(opts, mss, 0) ?: max_mss;
	ctx->copy_thr = OPTS_GET(opts, copy_threshold, 0) ?: 2048;
	ctx->rto_init_us = (OPTS_GET(opts, rto_init_ms, 0) ?: 200) * 1000;
	ctx->rto_min_us = (OPTS_GET(opts, rto_min_ms, 0) ?: 5) * 1000;
	ctx->rto_max_us = (OPTS_GET(opts, rto_max_ms, 0) ?: 2000) * 1000;
	ctx->user_timeout_us = (OPTS_GET(opts, user_timeout_ms, 0) ?: 10000) * 1000;
	ctx->ka_idle_us = (OPTS_GET(opts, keepalive_idle_ms, 0) ?: 2000) * 1000;
	ctx->ka_intvl_us = (OPTS_GET(opts, keepalive_intvl_ms, 0) ?: 500) * 1000;
	ctx->ka_cnt = OPTS_GET(opts, keepalive_cnt, 0) ?: 6;
	if (ctx->ka_cnt == ~0u)
		ctx->ka_cnt = 0;	/* disabled */
	ctx->linger_us = (OPTS_GET(opts, linger_ms, 0) ?: 2000) * 1000;
	ctx->syn_backlog = OPTS_GET(opts, syn_backlog, 0) ?: 64;
	ctx->cc = OPTS_GET(opts, cc, NULL) ?: xvi_stream_cc_newreno();
	if (ctx->mss < MIN_MSS || ctx->mss > max_mss || ctx->window > 4096 ||
	    ctx->ack_thr > ctx->window || !ctx->cc->init || !ctx->cc->on_ack ||
	    !ctx->cc->on_event || ctx->rto_min_us > ctx->rto_max_us) {
		pr_warn("stream: bad options: mss %u (64..%u), window %u (<= 4096), ack_threshold %u (<= window), rto_min <= rto_max, cc ops complete\n",
			ctx->mss, max_mss, ctx->window, ctx->ack_thr);
		free(ctx);
		errno = EINVAL;
		return NULL;
	}
	ctx->rcvbuf = OPTS_GET(opts, rcvbuf, 0) ?: ctx->window * ctx->mss;
	ctx->sndbuf = OPTS_GET(opts, sndbuf, 0) ?: 2 * ctx->rcvbuf;
	if (ctx->rcvbuf < ctx->mss || ctx->sndbuf < ctx->mss || ctx->rcvbuf > (1u << 30) ||
	    ctx->sndbuf > (1u << 30)) {
		pr_warn("stream: rcvbuf/sndbuf must be between mss (%u) and 1 GiB\n", ctx->mss);
		free(ctx);
		errno = EINVAL;
		return NULL;
	}
	ctx->hmask = 1023;
	while (ctx->hmask + 1 < ctx->max_conns)
		ctx->hmask = ctx->hmask * 2 + 1;
	ctx->htab = calloc(ctx->hmask + 1, sizeof(*ctx->htab));
	if (!ctx->htab) {
		free(ctx);
		errno = ENOMEM;
		return NULL;
	}
	ctx->rng = link->seed;
	if (!ctx->rng && getrandom(&ctx->rng, sizeof(ctx->rng), GRND_NONBLOCK) != sizeof(ctx->rng))
		ctx->rng = (__u64)(unsigned long)ctx ^ link->now_us(link->priv);
	if (!ctx->rng)
		ctx->rng = 0x9e3779b97f4a7c15ULL;
	sctx_now(ctx);
	return ctx;
}

void xvi_sctx__free(struct xvi_stream_ctx *ctx)
{
	if (!ctx)
		return;
	while (ctx->all)
		stream_free(ctx->all);
	xvi_tq__free(&ctx->tq);
	free(ctx->htab);
	free(ctx);
}

int xvi_sctx__region_of(const struct xvi_stream_ctx *ctx, const void *p, size_t len)
{
	const __u8 *b = p;

	for (int i = 0; i < XVI_SCTX_MAX_REGIONS; i++) {
		const struct xvi_sregion *r = &ctx->regions[i];

		if (r->used && b >= r->addr && len <= r->len &&
		    (size_t)(b - r->addr) <= r->len - len)
			return i;
	}
	return -1;
}

__u32 xvi_sctx__orphans(const struct xvi_stream_ctx *ctx)
{
	__u32 n = 0;

	for (const struct xvi_stream *s = ctx->all; s; s = s->next)
		n += s->orphan;
	return n;
}

__u32 xvi_sctx__closing(const struct xvi_stream_ctx *ctx)
{
	__u32 n = 0;

	for (const struct xvi_stream *s = ctx->all; s; s = s->next)
		n += s->orphan && s->state != XVI_SS_TIME_WAIT;
	return n;
}
