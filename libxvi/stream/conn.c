// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Connections of a context: random ids and sequence numbers, peer
 * addresses, the table that finds a connection by its local id, creation
 * and freeing, the buffers of a connection that carries data, a listener's
 * queues of children, and room for a new connection when the table is
 * full.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "stream/engine_priv.h"

__u32 sctx_rand32(struct xvi_stream_ctx *ctx)
{
	/* xorshift64*: ids and sequence numbers need to be unguessable
	 * only against blind off-path injection, not cryptographically. */
	__u64 x = ctx->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	ctx->rng = x;
	return (__u32)((x * 0x2545F4914F6CDD1DULL) >> 32);
}

static struct xvi_stream **hslot(struct xvi_stream_ctx *ctx, __u32 cid)
{
	return &ctx->htab[(cid * 2654435761u) & ctx->hmask];
}

struct xvi_stream *sctx_lookup(struct xvi_stream_ctx *ctx, __u32 cid)
{
	struct xvi_stream *s = *hslot(ctx, cid);

	while (s && s->id.local_cid != cid)
		s = s->hash_next;
	return s;
}

static void unhash(struct xvi_stream *s)
{
	struct xvi_stream **pp;

	if (!s->id.local_cid)
		return;
	for (pp = hslot(s->ctx, s->id.local_cid); *pp; pp = &(*pp)->hash_next)
		if (*pp == s) {
			*pp = s->hash_next;
			break;
		}
	s->id.local_cid = 0;
}

void stream_new_cid(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	__u32 cid;

	do
		cid = sctx_rand32(ctx);
	while (!cid || sctx_lookup(ctx, cid));
	s->id.local_cid = cid;
	s->hash_next = *hslot(ctx, cid);
	*hslot(ctx, cid) = s;
}

struct xvi_stream *stream_new(struct xvi_stream_ctx *ctx, __u32 flags)
{
	struct xvi_stream *s;

	/* Room in the timer queue now: queueing a timer must not fail. */
	if (xvi_tq__reserve(&ctx->tq, ctx->nstreams + 1))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	ctx->nstreams++;
	s->ctx = ctx;
	s->flags = flags;
	s->state = XVI_SS_CLOSED;
	s->snd.mss = ctx->mss;
	s->rtt.rto_us = ctx->rto_init_us;
	s->next = ctx->all;
	if (ctx->all)
		ctx->all->prev = s;
	ctx->all = s;
	return s;
}

/* Buffers of a connection that is about to carry data. */
int stream_alloc_buffers(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;
	__u32 items = 256;

	if (s->flight.segs)
		return 0;
	s->flight.cap = 64;
	while (s->flight.cap < 4 * ctx->window && s->flight.cap < XVI_SS_MAX_SEGS)
		s->flight.cap <<= 1;
	s->flight.segs = calloc(s->flight.cap, sizeof(*s->flight.segs));
	s->done.cookies = calloc(items, sizeof(*s->done.cookies));
	s->done.cap = items;
	if (!s->flight.segs || !s->done.cookies || xvi_srq__init(&s->rcv.queue, ctx->rcvbuf, 0) ||
	    xvi_ssq__init(&s->snd.queue, ctx->sndbuf, items, s->snd.iss + 1))
		return -ENOMEM;
	return 0;
}

/* Take @s off the singly linked list at @head, linked at @next_off. */
static void unlink_one(struct xvi_stream **head, struct xvi_stream *s, size_t next_off)
{
	for (; *head; head = (struct xvi_stream **)((char *)*head + next_off))
		if (*head == s) {
			*head = *(struct xvi_stream **)((char *)s + next_off);
			return;
		}
}

void stream_unqueue_output(struct xvi_stream *s)
{
	if (s->on_output)
		unlink_one(&s->ctx->output, s, offsetof(struct xvi_stream, output_next));
	s->on_output = false;
}

void stream_unqueue_held(struct xvi_stream *s)
{
	if (s->on_held)
		unlink_one(&s->ctx->held, s, offsetof(struct xvi_stream, held_next));
	s->on_held = false;
}

/*
 * Sends by reference still queued hold their regions: release them (the
 * data will never be acknowledged) and empty the send queue.
 */
void stream_release_refs(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;

	if (!s->snd.queue.items)
		return;
	for (__u32 i = s->snd.queue.it; i != s->snd.queue.ih; i++) {
		const struct xvi_sq_item *it =
		    &s->snd.queue.items[i & (s->snd.queue.items_cap - 1)];

		if (it->kind == XVI_SQI_REF && it->region >= 0 &&
		    it->region < XVI_SCTX_MAX_REGIONS && ctx->regions[it->region].refs)
			ctx->regions[it->region].refs--;
	}
	xvi_ssq__reset(&s->snd.queue, s->snd.queue.end);
}

void stream_free(struct xvi_stream *s)
{
	struct xvi_stream_ctx *ctx = s->ctx;

	if (s->memnet.jobs && xvi_mn__stream_gone)
		xvi_mn__stream_gone(s);
	if (s->state != XVI_SS_LISTEN && s->state != XVI_SS_CLOSED)
		ctx->nconns--;
	if (s->state == XVI_SS_LISTEN) {
		/* Children outlive nothing but must not point at us. */
		for (struct xvi_stream *c = ctx->all; c; c = c->next)
			if (c->listen.listener == s) {
				c->listen.listener = NULL;
				c->listen.queue = 0;
			}
	}
	stream_release_refs(s);
	stream_listener_remove(s);
	stream_unqueue_output(s);
	stream_unqueue_held(s);
	xvi_tq__remove(&ctx->tq, &s->timer.node);
	ctx->nstreams--;
	unhash(s);
	if (s->prev)
		s->prev->next = s->next;
	else
		ctx->all = s->next;
	if (s->next)
		s->next->prev = s->prev;
	xvi_srq__free(&s->rcv.queue);
	xvi_ssq__free(&s->snd.queue);
	free(s->flight.segs);
	free(s->done.cookies);
	free(s);
}

/* Listener queues: doubly linked through listen.next/listen.prev. */
void stream_listener_add(struct xvi_stream *l, struct xvi_stream *c, int which)
{
	struct xvi_stream **head =
	    which == XVI_SL_HALFOPEN ? &l->listen.half_head : &l->listen.accept_head;
	struct xvi_stream **tail =
	    which == XVI_SL_HALFOPEN ? &l->listen.half_tail : &l->listen.accept_tail;

	c->listen.listener = l;
	c->listen.queue = which;
	c->listen.next = NULL;
	c->listen.prev = *tail;
	if (*tail)
		(*tail)->listen.next = c;
	else
		*head = c;
	*tail = c;
	if (which == XVI_SL_HALFOPEN)
		l->listen.n_half++;
	else
		l->listen.n_accept++;
}

void stream_listener_remove(struct xvi_stream *c)
{
	struct xvi_stream *l = c->listen.listener;
	struct xvi_stream **head, **tail;

	if (!l || !c->listen.queue)
		return;
	head = c->listen.queue == XVI_SL_HALFOPEN ? &l->listen.half_head : &l->listen.accept_head;
	tail = c->listen.queue == XVI_SL_HALFOPEN ? &l->listen.half_tail : &l->listen.accept_tail;
	if (c->listen.prev)
		c->listen.prev->listen.next = c->listen.next;
	else
		*head = c->listen.next;
	if (c->listen.next)
		c->listen.next->listen.prev = c->listen.prev;
	else
		*tail = c->listen.prev;
	if (c->listen.queue == XVI_SL_HALFOPEN)
		l->listen.n_half--;
	else
		l->listen.n_accept--;
	c->listen.queue = 0;
	c->listen.listener = NULL;
}

/*
 * The table is full: end the TIME_WAIT connection closest to its end, if
 * any (ids keep a later connection safe from its old segments; what is lost
 * is only a repeated ACK of a retransmitted FIN, as when a TCP stack drops
 * TIME_WAIT sockets beyond its limit).  Returns true if one was ended.
 */
bool sctx_reclaim_time_wait(struct xvi_stream_ctx *ctx)
{
	struct xvi_stream *s, *old = NULL;

	for (s = ctx->all; s; s = s->next)
		if (s->state == XVI_SS_TIME_WAIT &&
		    (!old || s->timer.close_at < old->timer.close_at))
			old = s;
	if (!old)
		return false;
	stream_fail(old, 0);
	return true;
}
