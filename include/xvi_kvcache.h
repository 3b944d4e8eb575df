/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The key-value cache extension (examples/ext/kvcache.bpf.c): the layout of
 * its maps, shared by the BPF programs and xvi-kvcache.  docs/EXTENSIONS.md,
 * "Key-value cache", says how it works and why it never serves stale data.
 */
#ifndef XVI_KVCACHE_H
#define XVI_KVCACHE_H

#include <linux/types.h>

/* Longest key cached: longer keys always go to memcached (up to 250). */
#define XVI_KV_KEY_MAX		64
/* Longest reply body ("VALUE k f n\r\n<data>\r\nEND\r\n") cached. */
#define XVI_KV_BODY_MAX		1280
/* Invalidation buckets (a power of two): keys hash into them. */
#define XVI_KV_BUCKETS		65536
#define XVI_KV_ENTRIES		65536

/* memcached's UDP frame header, in front of every request and reply. */
struct xvi_kv_frame {
	__be16 req_id;
	__be16 seq;
	__be16 total;
	__be16 reserved;
};

/* xvi_kv_cache key: the key's bytes, zero-padded. */
struct xvi_kv_key {
	__u32 len;
	__u8 key[XVI_KV_KEY_MAX];
};

/*
 * xvi_kv_cache value: memcached's reply to a GET of the key, and the
 * bucket generation and epoch it is valid for.  Served only while both
 * are still current.
 */
struct xvi_kv_entry {
	__u64 gen;
	__u64 epoch;
	__u32 len;		/* of body */
	/* The body's ones' complement sum (bpf_csum_diff, the body
	 * zero-padded to 4 bytes), for the UDP checksum of an XDP reply. */
	__u32 csum;
	__u8 body[XVI_KV_BODY_MAX];
};

/* xvi_kv_gen[bucket]: bumped by every change to a key of the bucket. */
struct xvi_kv_bucket {
	__u64 gen;
	__u32 nocache;		/* an expiring or noreply write was seen: never cache */
	__u32 pad;
};

/* xvi_kv_state[0] */
struct xvi_kv_state {
	__u64 epoch;		/* bumped by anything the cache cannot attribute to a key */
};

/* xvi_kv_cfg[0], written by xvi-kvcache before traffic. */
struct xvi_kv_cfg {
	__u16 port;		/* memcached's UDP (and TCP) port, host order */
	__u16 pad;
	__u32 flags;
};

/* xvi_kv_stats: per-CPU counters, by index. */
enum xvi_kv_stat {
	XVI_KV_HIT,		/* GET answered from the cache */
	XVI_KV_MISS,		/* GET passed to memcached */
	XVI_KV_FILL,		/* entry filled from memcached's reply */
	XVI_KV_FILL_STALE,	/* reply not cached: its key changed meanwhile */
	XVI_KV_FILL_SKIP,	/* reply not cached: too big, split, malformed, no room */
	XVI_KV_INVAL,		/* a write invalidated its key's bucket */
	XVI_KV_EPOCH,		/* something unattributable invalidated everything */
	XVI_KV_NOCACHE,		/* a bucket made uncacheable (expiry, noreply) */
	XVI_KV_HIT_XDP,		/* GET answered by kv_xdp, the XDP hit path */
	XVI_KV_XDP_ERR,		/* kv_xdp: a hit's reply could not be written: dropped */
	XVI_KV_STATS_MAX,
};

#endif /* XVI_KVCACHE_H */
