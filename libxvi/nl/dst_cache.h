/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-endpoint destination cache: destination IP -> next-hop MAC and the
 * source IP the route prefers.  A hit costs a hash, one or two compares and
 * an expiry check against a clock the caller reads once per batch
 * (CLOCK_MONOTONIC_COARSE: vDSO, no syscall).  A miss or an expired entry
 * calls the resolver, the netlink slow path (route + neighbour lookup).
 *
 * Open addressing with a bounded probe window and no deletions: an entry is
 * only ever overwritten in place, so a key is always within its window and
 * never present twice.  A full window evicts an expired entry, else the
 * least recently used one.  Failures are cached briefly too, so that a sender
 * hammering an unreachable peer fails fast instead of blocking on netlink
 * for every datagram.
 */
#ifndef XVI_DST_CACHE_H
#define XVI_DST_CACHE_H

#include <linux/types.h>
#include "nl/neigh.h"

#define XVI_DST_CACHE_SIZE	64	/* power of 2 */
#define XVI_DST_CACHE_PROBE	8
#define XVI_DST_TTL_MS		5000	/* re-resolve positive entries after */
#define XVI_DST_NEG_TTL_MS	500	/* retry a failed resolution after */

struct xvi_dst_entry {
	struct xvi_ip dst;	/* key; family 0 = empty slot */
	__u8 mac[6];
	__s16 err;		/* 0, or the cached negative errno */
	struct xvi_ip src;	/* route's preferred source address */
	__u64 expires_ms;
	__u64 used;		/* cache tick of the last use: LRU eviction */
};

/* Slow path: fill @mac and @src for @dst, or return a negative errno. */
typedef int (*xvi_dst_resolve_fn)(void *ctx, const struct xvi_ip *dst,
				  __u8 mac[6], struct xvi_ip *src);
/* Milliseconds on a monotonic clock. */
typedef __u64 (*xvi_dst_clock_fn)(void);

struct xvi_dst_cache {
	struct xvi_dst_entry *last;	/* most recent hit: ping-pong shortcut */
	xvi_dst_resolve_fn resolve;
	void *ctx;
	xvi_dst_clock_fn now_ms;
	__u32 ttl_ms;
	__u32 neg_ttl_ms;
	__u64 tick;
	__u64 hits;
	__u64 misses;			/* resolver calls */
	struct xvi_dst_entry e[XVI_DST_CACHE_SIZE];
};

/* CLOCK_MONOTONIC_COARSE in milliseconds. */
__u64 xvi_dst_cache__clock(void);

/* @now_ms NULL means xvi_dst_cache__clock (tests inject their own). */
void xvi_dst_cache__init(struct xvi_dst_cache *c, xvi_dst_resolve_fn resolve,
			 void *ctx, xvi_dst_clock_fn now_ms);

static inline __u64 xvi_dst_cache__now(const struct xvi_dst_cache *c)
{
	return c->now_ms();
}

/*
 * Look @dst up at time @now (from xvi_dst_cache__now, read once per batch);
 * resolve on a miss or expiry.  Returns 0 and sets *@out (valid until the
 * next call), or the resolver's negative errno.
 */
int xvi_dst_cache__get(struct xvi_dst_cache *c, const struct xvi_ip *dst,
		       __u64 now, const struct xvi_dst_entry **out);

/* Forget everything (e.g. after a route change). */
void xvi_dst_cache__flush(struct xvi_dst_cache *c);

#endif /* XVI_DST_CACHE_H */
