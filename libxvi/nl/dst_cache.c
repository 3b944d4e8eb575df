// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include "nl/dst_cache.h"

__u64 xvi_dst_cache__clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void xvi_dst_cache__init(struct xvi_dst_cache *c, xvi_dst_resolve_fn resolve,
			 void *ctx, xvi_dst_clock_fn now_ms)
{
	memset(c, 0, sizeof(*c));
	c->resolve = resolve;
	c->ctx = ctx;
	c->now_ms = now_ms ? now_ms : xvi_dst_cache__clock;
	c->ttl_ms = XVI_DST_TTL_MS;
	c->neg_ttl_ms = XVI_DST_NEG_TTL_MS;
}

void xvi_dst_cache__flush(struct xvi_dst_cache *c)
{
	memset(c->e, 0, sizeof(c->e));
	c->last = NULL;
}

static inline size_t addr_len(int family)
{
	return family == AF_INET6 ? 16 : 4;
}

static inline bool key_eq(const struct xvi_dst_entry *e, const struct xvi_ip *k)
{
	return e->dst.family == k->family &&
	       !memcmp(e->dst.a, k->a, addr_len(k->family));
}

static inline __u32 key_hash(const struct xvi_ip *k)
{
	__u32 w[4] = {0}, h;

	memcpy(w, k->a, addr_len(k->family));
	h = w[0] ^ w[1] ^ w[2] ^ w[3];
	/* Fibonacci hashing: the top bits mix every input bit. */
	return (h * 0x9E3779B1u) >> (32 - 6);
}

_Static_assert(XVI_DST_CACHE_SIZE == 1 << 6, "key_hash() keeps 6 bits");

/* Eviction order: empty (0), expired (1), then by last use. */
static inline __u64 victim_rank(const struct xvi_dst_entry *e, __u64 now)
{
	if (!e->dst.family)
		return 0;
	if (now >= e->expires_ms)
		return 1;
	return 2 + e->used;
}

int xvi_dst_cache__get(struct xvi_dst_cache *c, const struct xvi_ip *dst,
		       __u64 now, const struct xvi_dst_entry **out)
{
	struct xvi_dst_entry *e = c->last, *victim = NULL;
	__u32 h, i;
	int err;

	if (e && key_eq(e, dst) && now < e->expires_ms)
		goto hit;

	h = key_hash(dst);
	for (i = 0; i < XVI_DST_CACHE_PROBE; i++) {
		e = &c->e[(h + i) & (XVI_DST_CACHE_SIZE - 1)];
		if (key_eq(e, dst)) {
			if (now < e->expires_ms)
				goto hit;
			victim = e;		/* expired: refresh in place */
			break;
		}
		/* Prefer an empty slot, then an expired one, then the LRU. */
		if (!victim || victim_rank(e, now) < victim_rank(victim, now))
			victim = e;
	}

	c->misses++;
	e = victim;
	memset(e, 0, sizeof(*e));
	e->dst.family = dst->family;
	memcpy(e->dst.a, dst->a, addr_len(dst->family));
	err = c->resolve(c->ctx, dst, e->mac, &e->src);
	e->err = err;
	/*
	 * The resolver may have blocked for a while (neighbour timeout): the
	 * lifetime starts now, not at the batch's clock reading, or a failure
	 * that took longer than the negative TTL would never be cached.
	 */
	e->expires_ms = c->now_ms() + (err ? c->neg_ttl_ms : c->ttl_ms);
	e->used = ++c->tick;
	c->last = e;
	if (err)
		return err;
	*out = e;
	return 0;

hit:
	c->hits++;
	e->used = ++c->tick;
	c->last = e;
	if (e->err)
		return e->err;
	*out = e;
	return 0;
}
