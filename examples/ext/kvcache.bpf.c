// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Key-value cache for a memcached on this host, speaking memcached's UDP
 * protocol (an 8-byte frame header, then a text command), BMC-style.
 *
 * Two tc (clsact) programs on the interface, attached by xvi-kvcache, and
 * with --xdp a third, kv_xdp, in the datapath's port hook:
 *  - kv_ingress sees requests to memcached's port, after xvi_demux passed
 *    them (no endpoint owns the port; memcached's kernel socket does).  A
 *    GET of a cached key is answered here, redirected back out of the
 *    interface; a miss goes on to memcached.  Every write (set, add,
 *    replace, append, prepend, cas, incr, decr, delete, touch) bumps its
 *    key's bucket generation; anything else not known to be a read bumps
 *    the epoch, which invalidates everything.
 *  - kv_egress sees memcached's replies on their way out: a GET reply
 *    fills the cache, stamped with the generation and epoch the GET saw on
 *    arrival; a write's reply bumps its bucket again.
 *  - kv_xdp (optional) answers the hits before kv_ingress sees them, in
 *    XDP: the datapath hands it memcached's port's datagrams (no endpoint
 *    holds the port) by a tail call.  What it does not answer goes on to
 *    kv_ingress, which keeps doing everything else.
 *
 * Why hits in XDP need the port hook, and why this never serves stale
 * data: docs/EXTENSIONS.md, "Key-value cache".
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <linux/pkt_cls.h>
#include <linux/if_link.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xvi_kvcache.h"

/* The command bytes read after the frame header: "replace " + key + room. */
#define KV_CMD_LEN	128
#define KV_FNV_OFF	2166136261U
#define KV_FNV_PRIME	16777619U
/* Generations change under us on other CPUs: read each once. */
#define READ_ONCE(x)	(*(volatile typeof(x) *)&(x))

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, XVI_KV_ENTRIES);
	/* Freed after an RCU grace period: a concurrent hit never reads an
	 * entry that a fill is reusing (a preallocated map recycles them). */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct xvi_kv_key);
	__type(value, struct xvi_kv_entry);
} xvi_kv_cache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XVI_KV_BUCKETS);
	__type(key, __u32);
	__type(value, struct xvi_kv_bucket);
} xvi_kv_gen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xvi_kv_state);
} xvi_kv_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xvi_kv_cfg);
} xvi_kv_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XVI_KV_STATS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} xvi_kv_stats SEC(".maps");

/* A request in flight at memcached: its client and request id. */
struct kv_flight {
	__u8 addr[16];
	__be16 port;
	__be16 req_id;
	__u32 family;
};

/* A GET that missed: the generation and epoch it saw on arrival. */
struct kv_get_flight {
	__u64 gen;
	__u64 epoch;
	__u32 bucket;
	__u32 poisoned;		/* a second request reused the id: never fill */
};

/* A write: its reply bumps the bucket (or the epoch) once more. */
struct kv_write_flight {
	__u32 bucket;
	__u32 epoch;		/* unattributable (request id reused): bump the epoch */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct kv_flight);
	__type(value, struct kv_get_flight);
} xvi_kv_gets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct kv_flight);
	__type(value, struct kv_write_flight);
} xvi_kv_writes SEC(".maps");

/* Per-CPU room for a command line and for a reply being cached. */
struct kv_scratch {
	__u8 cmd[KV_CMD_LEN];
	struct xvi_kv_key key;
	struct xvi_kv_entry entry;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kv_scratch);
} xvi_kv_scratch SEC(".maps");

/* What the parse of a packet found: where the UDP payload is, and who. */
struct kv_pkt {
	__u32 l3_off;
	__u32 l4_off;
	__u32 payload_off;	/* the memcached frame header */
	__u32 payload_len;
	__u8 proto;
	bool ipv6;
	struct kv_flight peer;	/* the client: source on ingress, destination on egress */
	__be16 sport, dport;
};

enum kv_parse {
	KV_OTHER,		/* not for (or from) memcached's port */
	KV_UDP,			/* UDP to (from) the port: pkt filled */
	KV_TCP,			/* TCP to (from) the port, with data */
	KV_UNKNOWN,		/* might be for the port, cannot tell (fragment) */
};

static __always_inline void kv_count(__u32 idx)
{
	__u64 *c = bpf_map_lookup_elem(&xvi_kv_stats, &idx);

	if (c)
		(*c)++;
}

static __always_inline void kv_bump_epoch(void)
{
	__u32 zero = 0;
	struct xvi_kv_state *s = bpf_map_lookup_elem(&xvi_kv_state, &zero);

	if (s)
		__sync_fetch_and_add(&s->epoch, 1);
	kv_count(XVI_KV_EPOCH);
}

static __always_inline void kv_bump_bucket(__u32 bucket, bool nocache)
{
	struct xvi_kv_bucket *b = bpf_map_lookup_elem(&xvi_kv_gen, &bucket);

	if (!b) {
		kv_bump_epoch();
		return;
	}
	if (nocache && !b->nocache) {
		b->nocache = 1;
		kv_count(XVI_KV_NOCACHE);
	}
	__sync_fetch_and_add(&b->gen, 1);
	kv_count(XVI_KV_INVAL);
}

static __always_inline __u16 kv_port(void)
{
	__u32 zero = 0;
	struct xvi_kv_cfg *cfg = bpf_map_lookup_elem(&xvi_kv_cfg, &zero);

	return cfg ? cfg->port : 0;
}

/*
 * Parse Ethernet, IPv4 or IPv6, then UDP or TCP with @port as destination
 * (@egress: as source).  IPv4 fragments and IPv6 extension headers cannot
 * be told apart from the port's traffic: KV_UNKNOWN.
 */
static __always_inline enum kv_parse kv_parse(struct __sk_buff *skb, bool egress,
					      struct kv_pkt *p)
{
	__u16 port = kv_port();
	struct ethhdr eth;
	__u32 l4_len, off, i;
	struct udphdr uh;
	__u8 nh;

	if (!port || bpf_skb_load_bytes(skb, 0, &eth, sizeof(eth)))
		return KV_OTHER;
	p->l3_off = sizeof(eth);
	if (eth.h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr iph;
		__u32 ihl;

		if (bpf_skb_load_bytes(skb, p->l3_off, &iph, sizeof(iph)))
			return KV_OTHER;
		if (iph.protocol != IPPROTO_UDP && iph.protocol != IPPROTO_TCP)
			return KV_OTHER;
		if (iph.frag_off & bpf_htons(0x3fff))	/* MF or an offset */
			return KV_UNKNOWN;
		ihl = iph.ihl * 4;
		if (ihl < sizeof(iph) || bpf_ntohs(iph.tot_len) < ihl)
			return KV_OTHER;
		p->l4_off = p->l3_off + ihl;
		l4_len = bpf_ntohs(iph.tot_len) - ihl;
		p->proto = iph.protocol;
		p->ipv6 = false;
		p->peer.family = 4;
		__builtin_memset(p->peer.addr, 0, sizeof(p->peer.addr));
		__builtin_memcpy(p->peer.addr, egress ? &iph.daddr : &iph.saddr, 4);
	} else if (eth.h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr ip6h;

		if (bpf_skb_load_bytes(skb, p->l3_off, &ip6h, sizeof(ip6h)))
			return KV_OTHER;
		nh = ip6h.nexthdr;
		off = p->l3_off + sizeof(ip6h);
		l4_len = bpf_ntohs(ip6h.payload_len);
		/* Hop-by-hop (MLD reports carry one), routing and destination
		 * options headers may stand before UDP or TCP: walk a few. */
		for (i = 0; i < 3; i++) {
			__u8 eh[2];

			if (nh != 0 && nh != 43 && nh != 60)
				break;
			if (bpf_skb_load_bytes(skb, off, eh, sizeof(eh)))
				return KV_UNKNOWN;
			nh = eh[0];
			off += (eh[1] + 1) * 8;
			if (l4_len < (eh[1] + 1) * 8U)
				return KV_UNKNOWN;
			l4_len -= (eh[1] + 1) * 8;
		}
		if (nh != IPPROTO_UDP && nh != IPPROTO_TCP)
			/* A fragment, or more headers than walked: UDP or
			 * TCP may hide behind them. */
			return nh == 44 || nh == 0 || nh == 43 || nh == 60 ? KV_UNKNOWN :
									      KV_OTHER;
		p->l4_off = off;
		p->proto = nh;
		p->ipv6 = true;
		p->peer.family = 6;
		__builtin_memcpy(p->peer.addr, egress ? &ip6h.daddr : &ip6h.saddr, 16);
	} else {
		return KV_OTHER;
	}
	/* Source and destination ports sit at the same place in TCP and UDP. */
	if (bpf_skb_load_bytes(skb, p->l4_off, &uh, sizeof(uh)))
		return KV_OTHER;
	p->sport = uh.source;
	p->dport = uh.dest;
	if ((egress ? uh.source : uh.dest) != bpf_htons(port))
		return KV_OTHER;
	p->peer.port = egress ? uh.dest : uh.source;
	if (p->proto == IPPROTO_TCP) {
		struct tcphdr th;

		if (bpf_skb_load_bytes(skb, p->l4_off, &th, sizeof(th)))
			return KV_UNKNOWN;
		return l4_len > th.doff * 4U ? KV_TCP : KV_OTHER;
	}
	if (l4_len < sizeof(uh) || bpf_ntohs(uh.len) > l4_len || bpf_ntohs(uh.len) < sizeof(uh))
		return KV_UNKNOWN;
	p->payload_off = p->l4_off + sizeof(uh);
	p->payload_len = bpf_ntohs(uh.len) - sizeof(uh);
	return KV_UDP;
}

/* FNV-1a of the key, into a bucket. */
static __always_inline __u32 kv_bucket(const struct xvi_kv_key *k)
{
	__u32 h = KV_FNV_OFF, i;

	for (i = 0; i < XVI_KV_KEY_MAX; i++) {
		if (i >= k->len)
			break;
		h = (h ^ k->key[i]) * KV_FNV_PRIME;
	}
	return h & (XVI_KV_BUCKETS - 1);
}

/*
 * The scans below run under bpf_loop(): the verifier checks a callback
 * once, where an open-coded loop over 128 bytes behind every command's
 * prefix exceeded its million instructions.  They read the per-CPU
 * scratch: the command (body == 0) or the reply being cached (body == 1).
 */
struct kv_scan {
	__u32 at;
	__u32 n;		/* bytes read */
	__u32 skip;		/* kv_token_zero: tokens to pass over */
	__u32 seen;
	__u32 body;
	int res;
};

/*
 * Byte @o of the scratch's command (@body 0) or reply (@body 1), -1 past
 * the @n bytes read.  The compiler drops a bound check it thinks is
 * redundant and the verifier then loses the bound of the copy it indexes
 * with: the checks come after a barrier, on the register used.
 */
static __always_inline int kv_at(const struct kv_scratch *s, __u32 body, __u32 n, __u32 o)
{
	__u64 i = o;

	if (o >= n)
		return -1;
	asm volatile("" : "+r"(i));
	if (body) {
		if (i >= XVI_KV_BODY_MAX)
			return -1;
		return s->entry.body[i];
	}
	if (i >= KV_CMD_LEN)
		return -1;
	return s->cmd[i];
}

static __always_inline int kv_byte(const struct kv_scratch *s, const struct kv_scan *c, __u32 o)
{
	return kv_at(s, c->body, c->n, o);
}

static long kv_key_cb(__u32 i, struct kv_scan *c)
{
	__u32 zero = 0;
	struct kv_scratch *s = bpf_map_lookup_elem(&xvi_kv_scratch, &zero);
	int ch;

	c->res = -1;
	if (!s)
		return 1;
	ch = kv_byte(s, c, c->at + i);
	if (ch < 0)
		return 1;
	if (ch == ' ' || ch == '\r') {
		if (i) {
			s->key.len = i;
			c->res = c->at + i;
		}
		return 1;
	}
	if (ch < 0x21 || ch == 0x7f || i >= XVI_KV_KEY_MAX)
		return 1;
	asm volatile("" : "+r"(i));
	s->key.key[i & (XVI_KV_KEY_MAX - 1)] = ch;
	return 0;
}

/*
 * The token at @at, up to a space or '\r', into the scratch's key.
 * Returns the offset after it, or -1 if it is empty, longer than
 * XVI_KV_KEY_MAX or not ended within the @n bytes read.
 */
static __always_inline int kv_key_at(struct kv_scratch *s, __u32 n, __u32 at, __u32 body)
{
	struct kv_scan c = { .at = at, .n = n, .body = body, .res = -1 };

	__builtin_memset(&s->key, 0, sizeof(s->key));
	bpf_loop(XVI_KV_KEY_MAX + 1, kv_key_cb, &c, 0);
	return c.res;
}

static __always_inline bool kv_prefix(const __u8 *cmd, __u32 n, const char *s, __u32 len)
{
	__u32 i;

	if (n < len)
		return false;
	for (i = 0; i < len && i < 8; i++)
		if (cmd[i] != (__u8)s[i])
			return false;
	return true;
}

static long kv_zero_cb(__u32 i, struct kv_scan *c)
{
	__u32 zero = 0, o = c->at + i;
	struct kv_scratch *s = bpf_map_lookup_elem(&xvi_kv_scratch, &zero);
	int ch, ch2;

	c->res = 0;
	if (!s)
		return 1;
	ch = kv_byte(s, c, o);
	if (ch < 0)
		return 1;
	if (ch != ' ' || c->seen++ < c->skip)
		return 0;
	ch = kv_byte(s, c, o + 1);
	ch2 = kv_byte(s, c, o + 2);
	c->res = ch == '0' && (ch2 == ' ' || ch2 == '\r');
	return 1;
}

/*
 * A write's expiry: the token after @skip more tokens from @at is "0"
 * (never expires).  false when it is anything else or cannot be read.
 */
static __always_inline bool kv_token_zero(__u32 n, __u32 at, __u32 skip)
{
	struct kv_scan c = { .at = at, .n = n, .skip = skip };

	bpf_loop(KV_CMD_LEN, kv_zero_cb, &c, 0);
	return c.res > 0;
}

static long kv_noreply_cb(__u32 i, struct kv_scan *c)
{
	__u32 zero = 0;
	struct kv_scratch *s = bpf_map_lookup_elem(&xvi_kv_scratch, &zero);

	if (!s || i + 7 > c->n)
		return 1;
	/* Byte by byte: a string constant would need a .rodata map. */
	if (kv_byte(s, c, i) == 'n' && kv_byte(s, c, i + 1) == 'o' &&
	    kv_byte(s, c, i + 2) == 'r' && kv_byte(s, c, i + 3) == 'e' &&
	    kv_byte(s, c, i + 4) == 'p' && kv_byte(s, c, i + 5) == 'l' &&
	    kv_byte(s, c, i + 6) == 'y') {
		c->res = 1;
		return 1;
	}
	return 0;
	return 1;
}

/* "noreply" anywhere in the command bytes read. */
static __always_inline bool kv_noreply(__u32 n)
{
	struct kv_scan c = { .n = n };

	bpf_loop(KV_CMD_LEN, kv_noreply_cb, &c, 0);
	return c.res > 0;
}

/*
 * The words of headers just rewritten (addresses stored as __be32 or
 * in6_addr): without may_alias, clang may load them before those stores.
 */
typedef __u16 __attribute__((__may_alias__)) kv_word_t;

/* Add the @words 16-bit words at @p to @sum (unfolded). */
static __always_inline __u64 kv_sum16(const void *p, __u32 words, __u64 sum)
{
	const kv_word_t *w = p;
	__u32 i;

	for (i = 0; i < words; i++)
		sum += w[i];
	return sum;
}

static __always_inline __u16 kv_ip4_csum(struct iphdr *iph)
{
	__u32 s;

	iph->check = 0;
	s = (__u32)kv_sum16(iph, sizeof(*iph) / 2, 0);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return ~s;
}

/* The command is "get <key>\r\n", one key: the key is in the scratch. */
static __always_inline bool kv_single_get(struct kv_scratch *s, __u32 n)
{
	int end = kv_key_at(s, n, 4, 0);

	/* Else (several keys, a long key) memcached answers, and nothing is
	 * cached from it. */
	return end >= 0 && kv_at(s, 0, n, end) == '\r' && kv_at(s, 0, n, end + 1) == '\n' &&
	       end + 2 == n;
}

/*
 * The scratch key's entry, if it may answer a GET arriving now: no write
 * of the bucket @b, and nothing unattributable, happened since the GET it
 * was filled from arrived.
 */
static __always_inline struct xvi_kv_entry *kv_valid(struct kv_scratch *s,
						      const struct xvi_kv_state *st,
						      const struct xvi_kv_bucket *b)
{
	struct xvi_kv_entry *e = bpf_map_lookup_elem(&xvi_kv_cache, &s->key);

	if (e && e->gen == READ_ONCE(b->gen) && e->epoch == READ_ONCE(st->epoch) &&
	    !READ_ONCE(b->nocache))
		return e;
	return NULL;
}

/*
 * Answer a GET from @e: the frame turned into memcached's reply (same
 * request id, one datagram) and sent back out of the interface.  IPv4
 * only (the UDP checksum is left out, which IPv4 allows); the caller has
 * checked that the IP header has no options.
 */
static __always_inline int kv_answer(struct __sk_buff *skb, const struct kv_pkt *p,
				     const struct xvi_kv_frame *fr, const struct xvi_kv_entry *e)
{
	struct xvi_kv_frame rf = { .req_id = fr->req_id, .total = bpf_htons(1) };
	__u32 len = e->len, tot;
	struct ethhdr eth;
	struct iphdr iph;
	struct udphdr uh;
	__u8 mac[ETH_ALEN];
	__be32 a;

	if (len < 1 || len > XVI_KV_BODY_MAX)
		return -1;
	tot = p->payload_off + sizeof(rf) + len;
	if (bpf_skb_change_tail(skb, tot, 0))
		return -1;
	if (bpf_skb_store_bytes(skb, p->payload_off + sizeof(rf), e->body, len, 0) ||
	    bpf_skb_load_bytes(skb, 0, &eth, sizeof(eth)) ||
	    bpf_skb_load_bytes(skb, p->l3_off, &iph, sizeof(iph)))
		return -1;
	__builtin_memcpy(mac, eth.h_dest, ETH_ALEN);
	__builtin_memcpy(eth.h_dest, eth.h_source, ETH_ALEN);
	__builtin_memcpy(eth.h_source, mac, ETH_ALEN);
	a = iph.saddr;
	iph.saddr = iph.daddr;
	iph.daddr = a;
	iph.ttl = 64;
	iph.tot_len = bpf_htons(tot - p->l3_off);
	iph.check = kv_ip4_csum(&iph);
	uh.source = p->dport;
	uh.dest = p->sport;
	uh.len = bpf_htons(tot - p->l4_off);
	uh.check = 0;
	if (bpf_skb_store_bytes(skb, 0, &eth, sizeof(eth), 0) ||
	    bpf_skb_store_bytes(skb, p->l3_off, &iph, sizeof(iph), 0) ||
	    bpf_skb_store_bytes(skb, p->l4_off, &uh, sizeof(uh), 0) ||
	    bpf_skb_store_bytes(skb, p->payload_off, &rf, sizeof(rf), 0))
		return -1;
	return 0;
}

/* Record a request in flight; a reused id poisons (GET) or widens (write). */
static __always_inline void kv_get_flight(const struct kv_pkt *p, __u32 bucket,
					  const struct xvi_kv_bucket *b, __u64 epoch,
					  __be16 req_id)
{
	struct kv_get_flight f = { .gen = b->gen, .epoch = epoch, .bucket = bucket };
	struct kv_flight k = p->peer;
	struct kv_get_flight *old;

	k.req_id = req_id;
	if (bpf_map_update_elem(&xvi_kv_gets, &k, &f, BPF_NOEXIST)) {
		old = bpf_map_lookup_elem(&xvi_kv_gets, &k);
		if (old)
			old->poisoned = 1;
	}
}

static __always_inline void kv_write_flight(const struct kv_pkt *p, __u32 bucket, __be16 req_id)
{
	struct kv_write_flight f = { .bucket = bucket };
	struct kv_flight k = p->peer;
	struct kv_write_flight *old;

	k.req_id = req_id;
	if (bpf_map_update_elem(&xvi_kv_writes, &k, &f, BPF_NOEXIST)) {
		old = bpf_map_lookup_elem(&xvi_kv_writes, &k);
		if (old)
			old->epoch = 1;
	}
}

SEC("tc")
int kv_ingress(struct __sk_buff *skb)
{
	struct xvi_kv_state *st;
	struct kv_scratch *s;
	struct xvi_kv_bucket *b;
	struct xvi_kv_entry *e;
	struct xvi_kv_frame fr;
	struct kv_pkt p = {};
	__u32 zero = 0, n, bucket, at;
	enum kv_parse r;
	int end;

	r = kv_parse(skb, false, &p);
	if (r == KV_OTHER)
		return TC_ACT_OK;
	if (r != KV_UDP) {
		/* A TCP command or an unreadable datagram may be a write. */
		kv_bump_epoch();
		return TC_ACT_OK;
	}
	s = bpf_map_lookup_elem(&xvi_kv_scratch, &zero);
	st = bpf_map_lookup_elem(&xvi_kv_state, &zero);
	if (!s || !st)
		return TC_ACT_OK;
	if (p.payload_len <= sizeof(fr) ||
	    bpf_skb_load_bytes(skb, p.payload_off, &fr, sizeof(fr)) ||
	    fr.seq != 0 || fr.total != bpf_htons(1)) {
		/* Split over datagrams, or no command at all. */
		kv_bump_epoch();
		return TC_ACT_OK;
	}
	n = p.payload_len - sizeof(fr);
	if (n > KV_CMD_LEN)
		n = KV_CMD_LEN;
	if (n < 1 || bpf_skb_load_bytes(skb, p.payload_off + sizeof(fr), s->cmd, n)) {
		kv_bump_epoch();
		return TC_ACT_OK;
	}

	if (kv_prefix(s->cmd, n, "gets ", 5))
		return TC_ACT_OK;		/* a read, never answered here */
	if (kv_prefix(s->cmd, n, "get ", 4)) {
		if (!kv_single_get(s, n))
			return TC_ACT_OK;
		bucket = kv_bucket(&s->key);
		b = bpf_map_lookup_elem(&xvi_kv_gen, &bucket);
		if (!b)
			return TC_ACT_OK;
		e = kv_valid(s, st, b);
		if (e && !p.ipv6 && p.l4_off == p.l3_off + sizeof(struct iphdr)) {
			if (!kv_answer(skb, &p, &fr, e)) {
				kv_count(XVI_KV_HIT);
				return bpf_redirect(skb->ifindex, 0);
			}
			/* The frame may be half rewritten: not for memcached. */
			return TC_ACT_SHOT;
		}
		kv_count(XVI_KV_MISS);
		kv_get_flight(&p, bucket, b, READ_ONCE(st->epoch), fr.req_id);
		return TC_ACT_OK;
	}

	/* Writes, by the position of the key and of the expiry after it. */
	at = 0;
	if (kv_prefix(s->cmd, n, "set ", 4) || kv_prefix(s->cmd, n, "add ", 4) ||
	    kv_prefix(s->cmd, n, "cas ", 4))
		at = 4;
	else if (kv_prefix(s->cmd, n, "replace ", 8) || kv_prefix(s->cmd, n, "prepend ", 8))
		at = 8;
	else if (kv_prefix(s->cmd, n, "append ", 7) || kv_prefix(s->cmd, n, "delete ", 7))
		at = 7;
	else if (kv_prefix(s->cmd, n, "touch ", 6))
		at = 6;
	else if (kv_prefix(s->cmd, n, "incr ", 5) || kv_prefix(s->cmd, n, "decr ", 5))
		at = 5;
	if (!at) {
		/* flush_all, gat, verbosity, garbage: cannot say which keys. */
		kv_bump_epoch();
		return TC_ACT_OK;
	}
	end = kv_key_at(s, n, at, 0);
	if (end < 0) {
		/* A key longer than we cache is never cached: nothing to do
		 * for it.  An unreadable one might be anything. */
		if (kv_at(s, 0, n, at + XVI_KV_KEY_MAX) > ' ')
			return TC_ACT_OK;
		kv_bump_epoch();
		return TC_ACT_OK;
	}
	bucket = kv_bucket(&s->key);
	bpf_map_delete_elem(&xvi_kv_cache, &s->key);
	{
		bool nocache = kv_noreply(n);

		/* An expiring item would outlive its expiry here: set, add,
		 * replace, cas carry "flags exptime", touch "exptime". */
		if (at == 6)
			nocache |= !kv_token_zero(n, end, 0);
		else if (kv_at(s, 0, n, 0) == 's' || kv_at(s, 0, n, 0) == 'r' ||
			 kv_at(s, 0, n, 0) == 'c' ||
			 (kv_at(s, 0, n, 0) == 'a' && kv_at(s, 0, n, 1) == 'd'))
			nocache |= !kv_token_zero(n, end, 1);
		kv_bump_bucket(bucket, nocache);
	}
	kv_write_flight(&p, bucket, fr.req_id);
	return TC_ACT_OK;
}

/*
 * Parse "VALUE <key> <flags> <bytes>\r\n<data>\r\nEND\r\n", the @n bytes of
 * the scratch's reply, its key into the scratch's key: 0 if it is exactly
 * that.
 */
static __always_inline int kv_parse_value(struct kv_scratch *s, __u32 n)
{
	__u32 i, o, bytes = 0;
	int end, ch;

	if (n < 6 + 1 + 4 + 7 || n > XVI_KV_BODY_MAX || kv_at(s, 1, n, 0) != 'V' ||
	    kv_at(s, 1, n, 1) != 'A' || kv_at(s, 1, n, 2) != 'L' || kv_at(s, 1, n, 3) != 'U' ||
	    kv_at(s, 1, n, 4) != 'E' || kv_at(s, 1, n, 5) != ' ')
		return -1;
	end = kv_key_at(s, n, 6, 1);
	if (end < 0 || kv_at(s, 1, n, end) != ' ')
		return -1;
	o = end + 1;
	for (i = 0; i < 11; i++, o++) {		/* flags: a 32-bit number */
		ch = kv_at(s, 1, n, o);
		if (ch == ' ' && i)
			break;
		if (ch < '0' || ch > '9')
			return -1;
	}
	o++;
	for (i = 0; i < 8; i++, o++) {		/* bytes: less than XVI_KV_BODY_MAX */
		ch = kv_at(s, 1, n, o);
		if (ch == '\r' && i)
			break;
		if (ch < '0' || ch > '9')
			return -1;
		bytes = bytes * 10 + (ch - '0');
	}
	if (kv_at(s, 1, n, o + 1) != '\n' || bytes > XVI_KV_BODY_MAX)
		return -1;
	/* header, data, "\r\nEND\r\n" */
	if (o + 2 + bytes + 7 != n)
		return -1;
	o = n - 7;
	if (kv_at(s, 1, n, o) != '\r' || kv_at(s, 1, n, o + 1) != '\n' ||
	    kv_at(s, 1, n, o + 2) != 'E' || kv_at(s, 1, n, o + 3) != 'N' ||
	    kv_at(s, 1, n, o + 4) != 'D' || kv_at(s, 1, n, o + 5) != '\r' ||
	    kv_at(s, 1, n, o + 6) != '\n')
		return -1;
	return 0;
}

/* bpf_csum_diff of the scratch's body from @off, @len bytes (at most 512). */
#define KV_CSUM_CHUNK(off, len, sum)						\
	({									\
		__u64 l_ = (len);						\
		asm volatile("" : "+r"(l_));					\
		l_ > 512 || (off) + l_ > XVI_KV_BODY_MAX ? -1 :			\
			bpf_csum_diff(NULL, 0, (__be32 *)(s->entry.body + (off)), l_, (sum)); \
	})

/*
 * The ones' complement sum of the scratch's @n body bytes, zero-padded to
 * a multiple of 4 (bpf_csum_diff's unit), into the entry: the XDP hit path
 * adds it to its reply's headers instead of reading the body per hit.
 * -1 if the helper refused.
 */
static __always_inline int kv_body_csum(struct kv_scratch *s, __u32 n)
{
	__u32 r = (n + 3) & ~3U, k;
	__s64 sum = 0;

	for (k = 0; k < 3; k++) {
		__u64 i = n + k;

		if (i >= r)
			break;
		asm volatile("" : "+r"(i));	/* the bound on the register used */
		if (i >= XVI_KV_BODY_MAX)
			break;
		s->entry.body[i] = 0;
	}
	sum = KV_CSUM_CHUNK(0, r < 512 ? r : 512, 0);
	if (sum >= 0 && r > 512)
		sum = KV_CSUM_CHUNK(512, r < 1024 ? r - 512 : 512, sum);
	if (sum >= 0 && r > 1024)
		sum = KV_CSUM_CHUNK(1024, r - 1024, sum);
	if (sum < 0)
		return -1;
	s->entry.csum = sum;
	return 0;
}

static __always_inline void kv_fill(struct __sk_buff *skb, const struct kv_pkt *p,
				    const struct kv_get_flight *f)
{
	struct xvi_kv_bucket *b;
	struct xvi_kv_state *st;
	struct kv_scratch *s;
	__u32 zero = 0, n, bucket;

	s = bpf_map_lookup_elem(&xvi_kv_scratch, &zero);
	st = bpf_map_lookup_elem(&xvi_kv_state, &zero);
	if (!s || !st)
		return;
	n = p->payload_len - sizeof(struct xvi_kv_frame);
	if (f->poisoned || n < 1 || n > XVI_KV_BODY_MAX ||
	    bpf_skb_load_bytes(skb, p->payload_off + sizeof(struct xvi_kv_frame),
			       s->entry.body, n) ||
	    kv_parse_value(s, n)) {
		kv_count(XVI_KV_FILL_SKIP);	/* a miss ("END"), too big, ... */
		return;
	}
	bucket = kv_bucket(&s->key);
	b = bpf_map_lookup_elem(&xvi_kv_gen, &bucket);
	/* The key the reply names must be the bucket its GET looked at, and
	 * nothing may have changed since the GET arrived. */
	if (!b || bucket != f->bucket || f->gen != READ_ONCE(b->gen) ||
	    f->epoch != READ_ONCE(st->epoch) || READ_ONCE(b->nocache)) {
		kv_count(XVI_KV_FILL_STALE);
		return;
	}
	s->entry.gen = f->gen;
	s->entry.epoch = f->epoch;
	s->entry.len = n;
	if (kv_body_csum(s, n) ||
	    bpf_map_update_elem(&xvi_kv_cache, &s->key, &s->entry, BPF_ANY)) {
		kv_count(XVI_KV_FILL_SKIP);	/* full */
		return;
	}
	kv_count(XVI_KV_FILL);
}

SEC("tc")
int kv_egress(struct __sk_buff *skb)
{
	struct kv_write_flight *w;
	struct kv_get_flight *g;
	struct xvi_kv_frame fr;
	struct kv_pkt p = {};
	struct kv_flight k;
	enum kv_parse r;
	__u8 head[5];

	r = kv_parse(skb, true, &p);
	if (r == KV_OTHER)
		return TC_ACT_OK;
	if (r != KV_UDP || p.payload_len < sizeof(fr) ||
	    bpf_skb_load_bytes(skb, p.payload_off, &fr, sizeof(fr))) {
		kv_bump_epoch();
		return TC_ACT_OK;
	}
	k = p.peer;
	k.req_id = fr.req_id;
	w = bpf_map_lookup_elem(&xvi_kv_writes, &k);
	if (w) {
		/* The write is done: bump once more, so that a GET that read
		 * the old value while the write was in flight cannot fill. */
		if (w->epoch)
			kv_bump_epoch();
		else
			kv_bump_bucket(w->bucket, false);
		bpf_map_delete_elem(&xvi_kv_writes, &k);
		return TC_ACT_OK;
	}
	g = bpf_map_lookup_elem(&xvi_kv_gets, &k);
	if (g) {
		struct kv_get_flight f = *g;

		bpf_map_delete_elem(&xvi_kv_gets, &k);
		if (fr.seq == 0 && fr.total == bpf_htons(1))
			kv_fill(skb, &p, &f);
		else
			kv_count(XVI_KV_FILL_SKIP);
		return TC_ACT_OK;
	}
	/* A reply we did not see the request of: harmless if it is a read's
	 * ("VALUE ...", "END\r\n"); otherwise it may end a write we lost
	 * track of. */
	__builtin_memset(head, 0, sizeof(head));
	if (p.payload_len >= sizeof(fr) + 5 &&
	    !bpf_skb_load_bytes(skb, p.payload_off + sizeof(fr), head, 5) &&
	    ((head[0] == 'V' && head[1] == 'A' && head[2] == 'L' && head[3] == 'U' &&
	      head[4] == 'E') ||
	     (head[0] == 'E' && head[1] == 'N' && head[2] == 'D' && head[3] == '\r' &&
	      head[4] == '\n')))
		return TC_ACT_OK;
	kv_bump_epoch();
	return TC_ACT_OK;
}

/*
 * Ethernet, then IPv4 without options or IPv6 without extension headers,
 * then UDP and memcached's frame header: what a request the XDP path
 * answers starts with, and what its reply starts with.
 */
#define KV_XDP_TAIL	(sizeof(struct udphdr) + sizeof(struct xvi_kv_frame))
#define KV_XDP_HDRS4	(sizeof(struct ethhdr) + sizeof(struct iphdr) + KV_XDP_TAIL)
#define KV_XDP_HDRS6	(sizeof(struct ethhdr) + sizeof(struct ipv6hdr) + KV_XDP_TAIL)

/*
 * Resize the request in @ctx to its headers (@v6: KV_XDP_HDRS6, else
 * KV_XDP_HDRS4) and @e's body, the headers put back in front and the body
 * after them.  -1 if nothing was changed (the frame can go on), -2 if the
 * frame is half rewritten.  The sizes are constants on each branch: a
 * copy of a variable size is no inline copy.
 */
static __always_inline int kv_xdp_resize(struct xdp_md *ctx, const struct xvi_kv_entry *e,
					 __u64 len, const bool v6)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	const __u32 hlen = v6 ? KV_XDP_HDRS6 : KV_XDP_HDRS4;
	__u8 hdrs[KV_XDP_HDRS6];
	int delta;

	if (data + hlen > end)
		return -1;
	if (v6)
		__builtin_memcpy(hdrs, data, KV_XDP_HDRS6);
	else
		__builtin_memcpy(hdrs, data, KV_XDP_HDRS4);
	/*
	 * Room at the tail first: a driver's page-sized buffer has plenty.
	 * Else in front: veth's copy of a local kernel's skb has little
	 * tailroom but XDP_PACKET_HEADROOM before the frame (docs/KERNEL.md).
	 */
	delta = (int)(hlen + len) - (int)bpf_xdp_get_buff_len(ctx);
	if (bpf_xdp_adjust_tail(ctx, delta) && (delta < 0 || bpf_xdp_adjust_head(ctx, -delta)))
		return -1;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	if (data + hlen > end)
		return -2;
	if (v6)
		__builtin_memcpy(data, hdrs, KV_XDP_HDRS6);
	else
		__builtin_memcpy(data, hdrs, KV_XDP_HDRS4);
	if (bpf_xdp_store_bytes(ctx, hlen, (void *)e->body, len))
		return -2;
	return 0;
}

static __always_inline void kv_swap_mac(struct ethhdr *eth)
{
	__u8 mac[ETH_ALEN];

	__builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
}

/*
 * The reply's UDP and frame headers after the IP header's rewrite, and
 * its UDP checksum: @sum holds the pseudo-header's addresses, to which
 * go its protocol and length (the same 16-bit words over IPv4 and IPv6),
 * the UDP and frame headers, then the body's sum that the fill stored.
 */
static __always_inline void kv_xdp_udp(struct udphdr *uh, struct xvi_kv_frame *fr, __u64 len,
				       __u64 sum, const struct xvi_kv_entry *e)
{
	__be16 port = uh->source;

	uh->source = uh->dest;
	uh->dest = port;
	uh->len = bpf_htons(KV_XDP_TAIL + len);
	uh->check = 0;
	fr->seq = 0;
	fr->total = bpf_htons(1);
	fr->reserved = 0;
	sum += bpf_htons(IPPROTO_UDP) + uh->len;
	sum = kv_sum16(uh, KV_XDP_TAIL / 2, sum);
	sum += (e->csum & 0xffff) + (e->csum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	uh->check = (__u16)~sum ? (__u16)~sum : 0xffff;	/* 0 would mean "none" */
}

/*
 * Turn the request in @ctx into memcached's reply from @e, in place: the
 * frame resized, then every header rewritten, the IPv4 header checksum
 * and the UDP checksum computed (the UDP one from the body's sum that the
 * fill stored; over IPv6 it is mandatory, over IPv4 the receiving kernel
 * verifies it too, the reply being no local skb).  -1 if nothing was
 * changed (the frame can go on), -2 if the frame is half rewritten.
 */
static __always_inline int kv_xdp_answer(struct xdp_md *ctx, const struct xvi_kv_entry *e,
					 const bool v6)
{
	struct xvi_kv_frame *fr;
	struct ethhdr *eth;
	struct udphdr *uh;
	__u64 len = e->len;
	void *data, *end;
	int err;

	asm volatile("" : "+r"(len));
	if (len < 1 || len > XVI_KV_BODY_MAX)
		return -1;
	err = kv_xdp_resize(ctx, e, len, v6);
	if (err)
		return err;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	eth = data;
	if (v6) {
		struct ipv6hdr *ip6h = (void *)(eth + 1);
		struct in6_addr a;

		uh = (void *)(ip6h + 1);
		fr = (void *)(uh + 1);
		if ((void *)(fr + 1) > end)
			return -2;
		kv_swap_mac(eth);
		a = ip6h->saddr;
		ip6h->saddr = ip6h->daddr;
		ip6h->daddr = a;
		ip6h->hop_limit = 64;
		ip6h->payload_len = bpf_htons(KV_XDP_TAIL + len);
		kv_xdp_udp(uh, fr, len, kv_sum16(&ip6h->saddr, 16, 0), e);
	} else {
		struct iphdr *iph = (void *)(eth + 1);
		__be32 a;

		uh = (void *)(iph + 1);
		fr = (void *)(uh + 1);
		if ((void *)(fr + 1) > end)
			return -2;
		kv_swap_mac(eth);
		a = iph->saddr;
		iph->saddr = iph->daddr;
		iph->daddr = a;
		iph->ttl = 64;
		iph->tot_len = bpf_htons(sizeof(*iph) + KV_XDP_TAIL + len);
		iph->check = kv_ip4_csum(iph);
		kv_xdp_udp(uh, fr, len, kv_sum16(&iph->saddr, 4, 0), e);
	}
	return 0;
}

/*
 * IPv6 sources the kernel drops on a non-loopback device (ip6_rcv_core)
 * or cannot answer: multicast, ::/96 (unspecified, loopback) and IPv4-
 * mapped ::ffff:0:0/96.  An XDP reply would skip that check, so such a
 * GET is passed.
 */
static __always_inline bool kv_src6_martian(const struct in6_addr *a)
{
	if (a->s6_addr[0] == 0xff)
		return true;
	return !a->s6_addr32[0] && !a->s6_addr32[1] &&
	       (!a->s6_addr32[2] || a->s6_addr32[2] == bpf_htonl(0xffff));
}

/*
 * The hit path in XDP: the datapath's port hook for memcached's port
 * (xvi-kvcache attach --xdp) hands this program the port's datagrams to
 * this host, lengths and checksums checked.  A single-key GET whose entry
 * is valid is answered in place and sent back (XDP_TX); everything else,
 * misses and writes included, goes on (XDP_PASS) to kv_ingress and
 * memcached, which see it as they would without this program.  IPv4
 * without options and IPv6 without extension headers (the datapath hands
 * over no other); not from a source the kernel drops as a martian, whose
 * reply would go to a group, everyone or nowhere: IPv6 multicast, IPv4
 * 0/8, 127/8 and 224/4 and above (multicast, reserved, broadcast).
 */
SEC("xdp.frags")
int kv_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u32 zero = 0, n, bucket, udp_len, l3_len, hlen;
	struct ethhdr *eth = data;
	__u16 port = kv_port();
	struct xvi_kv_frame *fr;
	struct xvi_kv_bucket *b;
	struct xvi_kv_state *st;
	struct xvi_kv_entry *e;
	struct kv_scratch *s;
	struct udphdr *uh;
	bool v6;
	int err;

	if ((void *)(eth + 1) > end || !port)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = (void *)(eth + 1);

		__u8 a0;

		uh = (void *)(iph + 1);
		if ((void *)(uh + 1) > end || iph->ihl != 5 || iph->protocol != IPPROTO_UDP ||
		    (iph->frag_off & bpf_htons(0x3fff)))
			return XDP_PASS;
		a0 = bpf_ntohl(iph->saddr) >> 24;
		if (a0 == 0 || a0 == 127 || a0 >= 224)
			return XDP_PASS;
		l3_len = bpf_ntohs(iph->tot_len) - sizeof(*iph);
		hlen = KV_XDP_HDRS4;
		v6 = false;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6h = (void *)(eth + 1);

		uh = (void *)(ip6h + 1);
		if ((void *)(uh + 1) > end || ip6h->nexthdr != IPPROTO_UDP ||
		    kv_src6_martian(&ip6h->saddr))
			return XDP_PASS;
		l3_len = bpf_ntohs(ip6h->payload_len);
		hlen = KV_XDP_HDRS6;
		v6 = true;
	} else {
		return XDP_PASS;
	}
	fr = (void *)(uh + 1);
	if ((void *)(fr + 1) > end || uh->dest != bpf_htons(port))
		return XDP_PASS;
	udp_len = bpf_ntohs(uh->len);
	if (udp_len <= KV_XDP_TAIL || l3_len != udp_len || fr->seq != 0 ||
	    fr->total != bpf_htons(1))
		return XDP_PASS;
	n = udp_len - KV_XDP_TAIL;
	s = bpf_map_lookup_elem(&xvi_kv_scratch, &zero);
	st = bpf_map_lookup_elem(&xvi_kv_state, &zero);
	/* "get " + the longest key cached + "\r\n" fits the command. */
	if (!s || !st || n > KV_CMD_LEN || bpf_xdp_load_bytes(ctx, hlen, s->cmd, n))
		return XDP_PASS;
	if (!kv_prefix(s->cmd, n, "get ", 4) || !kv_single_get(s, n))
		return XDP_PASS;
	bucket = kv_bucket(&s->key);
	b = bpf_map_lookup_elem(&xvi_kv_gen, &bucket);
	e = b ? kv_valid(s, st, b) : NULL;
	if (!e)
		return XDP_PASS;		/* a miss: kv_ingress records it */
	err = v6 ? kv_xdp_answer(ctx, e, true) : kv_xdp_answer(ctx, e, false);
	if (err == -1)
		return XDP_PASS;		/* kv_ingress may still answer it */
	if (err) {
		kv_count(XVI_KV_XDP_ERR);
		return XDP_DROP;
	}
	kv_count(XVI_KV_HIT_XDP);
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
