// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The key-value cache extension (examples/ext/kvcache.bpf.c) through
 * BPF_PROG_RUN: requests into kv_ingress, memcached's replies into
 * kv_egress, in the orders that matter for consistency.  Each case loads a
 * fresh copy (criterion runs each in its own process), memcached's port
 * 11211; the client is 198.18.0.1:40000, memcached 198.18.0.2.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include "xvi_kvcache.h"
#include "fx_frame.h"
#include "fx_env.h"

#define KV_PORT		11211
#define KV_CLIENT_PORT	40000

static struct {
	struct bpf_object *obj;
	int in_fd, eg_fd, stats_fd;
	int ncpus;
} kv;

static void kv_setup(void)
{
	struct xvi_kv_cfg cfg = { .port = KV_PORT };
	char path[PATH_MAX];
	__u32 zero = 0;

	fx_ext_path("../ext/kvcache.bpf.o", path, sizeof(path));
	kv.obj = bpf_object__open_file(path, NULL);
	cr_assert_not_null(kv.obj, "%s: %s", path, strerror(errno));
	cr_assert_eq(bpf_object__load(kv.obj), 0, "%s rejected", path);
	kv.in_fd = bpf_program__fd(bpf_object__find_program_by_name(kv.obj, "kv_ingress"));
	kv.eg_fd = bpf_program__fd(bpf_object__find_program_by_name(kv.obj, "kv_egress"));
	kv.stats_fd = bpf_object__find_map_fd_by_name(kv.obj, "xvi_kv_stats");
	cr_assert_eq(bpf_map_update_elem(bpf_object__find_map_fd_by_name(kv.obj, "xvi_kv_cfg"),
					 &zero, &cfg, 0), 0);
	kv.ncpus = libbpf_num_possible_cpus();
}

static void kv_teardown(void)
{
	bpf_object__close(kv.obj);
}

static __u64 kv_stat(enum xvi_kv_stat idx)
{
	__u64 vals[kv.ncpus], sum = 0;
	__u32 k = idx;
	int i;

	cr_assert_eq(bpf_map_lookup_elem(kv.stats_fd, &k, vals), 0);
	for (i = 0; i < kv.ncpus; i++)
		sum += vals[i];
	return sum;
}

struct kv_frame {
	__u8 buf[2048];
	__u32 len;
};

/* The family kv_build speaks: IPv4 unless a case sets it (the IPv6 cases). */
static bool kv_ipv6;

/* The UDP header of a frame kv_build made. */
static struct udphdr *kv_udp(struct kv_frame *f)
{
	return (void *)(f->buf + ETH_HLEN +
			(kv_ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr)));
}

/*
 * An IPv4/UDP (kv_ipv6: IPv6/UDP) frame carrying memcached's frame header
 * (@rid, one datagram) and @text: a request to memcached (@reply false)
 * or its reply to the client.  The UDP checksum is left out (0), which
 * the cache's tc programs never read (kv_csums puts it in).
 */
static void kv_build(struct kv_frame *f, bool reply, __u16 rid, const char *text, size_t n)
{
	const __u8 cmac[] = FX_SMAC, smac[] = FX_DMAC;
	struct xvi_kv_frame fr = { .req_id = htons(rid), .total = htons(1) };
	struct ethhdr *eth = (void *)f->buf;
	struct udphdr *uh;
	__u32 plen = sizeof(fr) + n;

	cr_assert_leq(sizeof(*eth) + sizeof(struct ipv6hdr) + sizeof(*uh) + plen, sizeof(f->buf));
	memset(f->buf, 0, sizeof(f->buf));
	memcpy(eth->h_dest, reply ? cmac : smac, ETH_ALEN);
	memcpy(eth->h_source, reply ? smac : cmac, ETH_ALEN);
	uh = kv_udp(f);
	if (kv_ipv6) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		eth->h_proto = htons(ETH_P_IPV6);
		ip6->version = 6;
		ip6->hop_limit = 3;	/* the reply has its own */
		ip6->nexthdr = IPPROTO_UDP;
		ip6->payload_len = htons(sizeof(*uh) + plen);
		inet_pton(AF_INET6, reply ? FX_DST6 : FX_SRC6, &ip6->saddr);
		inet_pton(AF_INET6, reply ? FX_SRC6 : FX_DST6, &ip6->daddr);
	} else {
		struct iphdr *ip = (void *)(eth + 1);

		eth->h_proto = htons(ETH_P_IP);
		ip->version = 4;
		ip->ihl = 5;
		ip->ttl = 64;
		ip->protocol = IPPROTO_UDP;
		ip->tot_len = htons(sizeof(*ip) + sizeof(*uh) + plen);
		inet_pton(AF_INET, reply ? FX_DST4 : FX_SRC4, &ip->saddr);
		inet_pton(AF_INET, reply ? FX_SRC4 : FX_DST4, &ip->daddr);
		ip->check = fx_csum_finish(fx_csum_add(0, ip, sizeof(*ip)));
	}
	uh->source = htons(reply ? KV_PORT : KV_CLIENT_PORT);
	uh->dest = htons(reply ? KV_CLIENT_PORT : KV_PORT);
	uh->len = htons(sizeof(*uh) + plen);
	memcpy(uh + 1, &fr, sizeof(fr));
	memcpy((__u8 *)(uh + 1) + sizeof(fr), text, n);
	f->len = (__u8 *)(uh + 1) + plen - f->buf;
}

/* Run @text through @prog_fd; the verdict, and the frame out in *out. */
static int kv_run(int prog_fd, bool reply, __u16 rid, const char *text, struct kv_frame *out)
{
	struct kv_frame in, tmp;
	struct kv_frame *o = out ? out : &tmp;
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in.buf, .data_out = o->buf,
		    .data_size_out = sizeof(o->buf), .repeat = 1);

	kv_build(&in, reply, rid, text, strlen(text));
	opts.data_size_in = in.len;
	cr_assert_eq(bpf_prog_test_run_opts(prog_fd, &opts), 0, "BPF_PROG_RUN: %s",
		     strerror(errno));
	o->len = opts.data_size_out;
	return opts.retval;
}

static int req(__u16 rid, const char *text, struct kv_frame *out)
{
	return kv_run(kv.in_fd, false, rid, text, out);
}

static int rep(__u16 rid, const char *text)
{
	return kv_run(kv.eg_fd, true, rid, text, NULL);
}

#define VAL_HELLO	"VALUE k1 0 5\r\nhello\r\nEND\r\n"
#define VAL_WORLD	"VALUE k1 0 5\r\nworld\r\nEND\r\n"

/* A GET of k1 that misses, and memcached's reply @val to it: cached. */
static void fill_k1(__u16 rid, const char *val)
{
	cr_assert_eq(req(rid, "get k1\r\n", NULL), TC_ACT_OK, "a first GET must go to memcached");
	cr_assert_eq(rep(rid, val), TC_ACT_OK);
}

static void expect_miss(__u16 rid)
{
	__u64 m = kv_stat(XVI_KV_MISS);
	int v = req(rid, "get k1\r\n", NULL);

	cr_expect_eq(v, TC_ACT_OK, "verdict %d: the GET was answered from a stale entry", v);
	cr_expect_eq(kv_stat(XVI_KV_MISS), m + 1);
}

static void expect_hit(__u16 rid, const char *body)
{
	const size_t hdr = sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr);
	struct kv_frame in, out;
	struct iphdr *ip, *ip_in;
	struct udphdr *uh;
	struct xvi_kv_frame fr;
	int v;

	kv_build(&in, false, rid, "get k1\r\n", 8);
	v = req(rid, "get k1\r\n", &out);
	cr_assert_eq(v, TC_ACT_REDIRECT, "verdict %d, expected the answer (TC_ACT_REDIRECT)", v);
	cr_assert_eq(out.len, hdr + sizeof(fr) + strlen(body), "reply of %u bytes", out.len);
	cr_expect_eq(memcmp(out.buf, in.buf + 6, 6), 0, "destination MAC is not the client's");
	ip = (void *)(out.buf + sizeof(struct ethhdr));
	ip_in = (void *)(in.buf + sizeof(struct ethhdr));
	uh = (void *)(ip + 1);
	cr_expect_eq(ip->daddr, ip_in->saddr);
	cr_expect_eq(ip->saddr, ip_in->daddr);
	cr_expect_eq(ntohs(ip->tot_len), out.len - sizeof(struct ethhdr));
	cr_expect_eq(fx_csum_finish(fx_csum_add(0, ip, sizeof(*ip))), 0, "bad IP checksum");
	cr_expect_eq(ntohs(uh->source), KV_PORT);
	cr_expect_eq(ntohs(uh->dest), KV_CLIENT_PORT);
	cr_expect_eq(ntohs(uh->len), out.len - sizeof(struct ethhdr) - sizeof(*ip));
	cr_expect_eq(uh->check, 0);
	memcpy(&fr, uh + 1, sizeof(fr));
	cr_expect_eq(ntohs(fr.req_id), rid, "request id %u, expected %u", ntohs(fr.req_id), rid);
	cr_expect_eq(fr.seq, 0);
	cr_expect_eq(ntohs(fr.total), 1);
	cr_expect_eq(memcmp((__u8 *)(uh + 1) + sizeof(fr), body, strlen(body)), 0,
		     "reply body differs: %.*s", (int)strlen(body), (char *)(uh + 1) + sizeof(fr));
}

TestSuite(kvcache, .init = kv_setup, .fini = kv_teardown);

Test(kvcache, miss_goes_to_memcached)
{
	expect_miss(1);
	cr_expect_eq(kv_stat(XVI_KV_HIT), 0);
}

Test(kvcache, filled_then_hit)
{
	fill_k1(1, VAL_HELLO);
	cr_expect_eq(kv_stat(XVI_KV_FILL), 1);
	expect_hit(2, VAL_HELLO);
	expect_hit(3, VAL_HELLO);
	cr_expect_eq(kv_stat(XVI_KV_HIT), 2);
}

/* memcached's "END": a miss there, nothing cached. */
Test(kvcache, miss_reply_not_cached)
{
	fill_k1(1, "END\r\n");
	cr_expect_eq(kv_stat(XVI_KV_FILL), 0);
	expect_miss(2);
}

Test(kvcache, set_invalidates)
{
	fill_k1(1, VAL_HELLO);
	cr_assert_eq(req(2, "set k1 0 0 5\r\nworld\r\n", NULL), TC_ACT_OK);
	expect_miss(3);
	cr_assert_eq(rep(2, "STORED\r\n"), TC_ACT_OK);
	/* That GET arrived while the write was in flight: its reply is
	 * not cached, whichever value it carries. */
	cr_assert_eq(rep(3, VAL_WORLD), TC_ACT_OK);
	cr_expect_eq(kv_stat(XVI_KV_FILL_STALE), 1);
	expect_miss(4);
	/* A GET after the write completed fills the new value. */
	cr_assert_eq(rep(4, VAL_WORLD), TC_ACT_OK);
	expect_hit(5, VAL_WORLD);
}

Test(kvcache, delete_invalidates)
{
	fill_k1(1, VAL_HELLO);
	cr_assert_eq(req(2, "delete k1\r\n", NULL), TC_ACT_OK);
	expect_miss(3);
}

Test(kvcache, other_writes_invalidate)
{
	static const char *const w[] = {
		"add k1 0 0 1\r\nx\r\n", "replace k1 0 0 1\r\nx\r\n", "append k1 0 0 1\r\nx\r\n",
		"prepend k1 0 0 1\r\nx\r\n", "cas k1 0 0 1 7\r\nx\r\n", "incr k1 1\r\n",
		"decr k1 1\r\n", "touch k1 0\r\n",
	};
	__u16 rid = 1;
	size_t i;

	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++, rid += 10) {
		fill_k1(rid, VAL_HELLO);
		expect_hit(rid + 1, VAL_HELLO);
		cr_assert_eq(req(rid + 2, w[i], NULL), TC_ACT_OK);
		expect_miss(rid + 3);
		cr_assert_eq(rep(rid + 2, "STORED\r\n"), TC_ACT_OK);
		rep(rid + 3, "END\r\n");
	}
}

/* A write of another key leaves k1 cached. */
Test(kvcache, other_key_kept)
{
	fill_k1(1, VAL_HELLO);
	cr_assert_eq(req(2, "set k2 0 0 1\r\nx\r\n", NULL), TC_ACT_OK);
	cr_assert_eq(rep(2, "STORED\r\n"), TC_ACT_OK);
	expect_hit(3, VAL_HELLO);
}

/*
 * The GET reads the old value before the write lands, its reply leaves
 * after the write arrived: not cached.
 */
Test(kvcache, get_reply_after_set_not_cached)
{
	cr_assert_eq(req(1, "get k1\r\n", NULL), TC_ACT_OK);
	cr_assert_eq(req(2, "set k1 0 0 5\r\nworld\r\n", NULL), TC_ACT_OK);
	cr_assert_eq(rep(1, VAL_HELLO), TC_ACT_OK);
	cr_expect_eq(kv_stat(XVI_KV_FILL), 0);
	cr_expect_eq(kv_stat(XVI_KV_FILL_STALE), 1);
	expect_miss(3);
}

/*
 * The write arrives first, the GET after it, but memcached (threads)
 * serves the GET before the write and its old value is cached: the
 * write's own reply must invalidate it before the writer hears "STORED".
 */
Test(kvcache, write_reply_invalidates_racing_fill)
{
	cr_assert_eq(req(1, "set k1 0 0 5\r\nworld\r\n", NULL), TC_ACT_OK);
	fill_k1(2, VAL_HELLO);
	cr_assert_eq(rep(1, "STORED\r\n"), TC_ACT_OK);
	expect_miss(3);
}

/* The same client reuses a request id for two GETs: the reply fills nothing. */
Test(kvcache, reused_request_id_not_cached)
{
	cr_assert_eq(req(1, "get k1\r\n", NULL), TC_ACT_OK);
	cr_assert_eq(req(1, "get k1\r\n", NULL), TC_ACT_OK);
	cr_assert_eq(rep(1, VAL_HELLO), TC_ACT_OK);
	cr_expect_eq(kv_stat(XVI_KV_FILL), 0);
	expect_miss(2);
}

/* An expiring item would outlive its expiry in the cache: never cached. */
Test(kvcache, expiring_write_never_cached)
{
	cr_assert_eq(req(1, "set k1 0 100 5\r\nhello\r\n", NULL), TC_ACT_OK);
	cr_assert_eq(rep(1, "STORED\r\n"), TC_ACT_OK);
	cr_expect_eq(kv_stat(XVI_KV_NOCACHE), 1);
	fill_k1(2, VAL_HELLO);
	expect_miss(3);
}

/* A noreply write has no reply to invalidate on: never cached. */
Test(kvcache, noreply_write_never_cached)
{
	cr_assert_eq(req(1, "set k1 0 0 5 noreply\r\nhello\r\n", NULL), TC_ACT_OK);
	cr_expect_eq(kv_stat(XVI_KV_NOCACHE), 1);
	fill_k1(2, VAL_HELLO);
	expect_miss(3);
}

/* What the cache cannot read might be a write: everything invalidated. */
Test(kvcache, malformed_invalidates_all)
{
	static const char *const bad[] = {
		"flush_all\r\n", "bogus k1\r\n", "set\r\n", "gat 0 k1\r\n",
	};
	__u16 rid = 1;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++, rid += 10) {
		__u64 e = kv_stat(XVI_KV_EPOCH);

		fill_k1(rid, VAL_HELLO);
		expect_hit(rid + 1, VAL_HELLO);
		cr_assert_eq(req(rid + 2, bad[i], NULL), TC_ACT_OK, "%s", bad[i]);
		cr_expect_gt(kv_stat(XVI_KV_EPOCH), e, "%s did not invalidate", bad[i]);
		expect_miss(rid + 3);
		rep(rid + 3, "END\r\n");
	}
}

/* A datagram too short for the frame header: to memcached, everything invalid. */
Test(kvcache, short_datagram)
{
	struct kv_frame in;
	LIBBPF_OPTS(bpf_test_run_opts, opts, .repeat = 1);

	fill_k1(1, VAL_HELLO);
	kv_build(&in, false, 2, "", 0);
	/* Cut to 4 bytes of payload, IP and UDP lengths to match. */
	in.len -= 4;
	((struct iphdr *)(in.buf + ETH_HLEN))->tot_len = htons(in.len - ETH_HLEN);
	((struct udphdr *)(in.buf + ETH_HLEN + 20))->len = htons(in.len - ETH_HLEN - 20);
	opts.data_in = in.buf;
	opts.data_size_in = in.len;
	cr_assert_eq(bpf_prog_test_run_opts(kv.in_fd, &opts), 0);
	cr_expect_eq(opts.retval, TC_ACT_OK);
	expect_miss(3);
}

/* Malformed GETs go to memcached, which answers them: none answered here. */
Test(kvcache, malformed_get_passed)
{
	fill_k1(1, VAL_HELLO);
	cr_expect_eq(req(2, "get k1", NULL), TC_ACT_OK, "no \\r\\n");
	cr_expect_eq(req(3, "get k1 k2\r\n", NULL), TC_ACT_OK, "two keys");
	cr_expect_eq(req(4, "get k1\r\nextra", NULL), TC_ACT_OK, "bytes after the line");
	cr_expect_eq(kv_stat(XVI_KV_HIT), 0);
	/* Reads: k1 is still cached. */
	expect_hit(5, VAL_HELLO);
}

/* A reply that does not parse as one VALUE is not cached. */
Test(kvcache, malformed_reply_not_cached)
{
	static const char *const bad[] = {
		"VALUE k1 0 6\r\nhello\r\nEND\r\n",		/* length off */
		"VALUE k1 0 5\r\nhello\r\n",			/* no END */
		"VALUE k2 0 5\r\nhello\r\nEND\r\n",		/* another key */
		"VALUE k1 x 5\r\nhello\r\nEND\r\n",		/* flags */
	};
	__u16 rid = 1;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++, rid += 10) {
		fill_k1(rid, bad[i]);
		expect_miss(rid + 1);
		rep(rid + 1, "END\r\n");
	}
	cr_expect_eq(kv_stat(XVI_KV_FILL), 0);
}

/* Traffic of other ports is not looked at. */
Test(kvcache, other_port_ignored)
{
	struct kv_frame in;
	LIBBPF_OPTS(bpf_test_run_opts, opts, .repeat = 1);

	kv_build(&in, false, 1, "flush_all\r\n", 11);
	((struct udphdr *)(in.buf + ETH_HLEN + 20))->dest = htons(KV_PORT + 1);
	opts.data_in = in.buf;
	opts.data_size_in = in.len;
	cr_assert_eq(bpf_prog_test_run_opts(kv.in_fd, &opts), 0);
	cr_expect_eq(opts.retval, TC_ACT_OK);
	cr_expect_eq(kv_stat(XVI_KV_EPOCH), 0);
}

/*
 * The hit path in XDP: kv_xdp in the datapath's port hook for memcached's
 * port, run through xvi_demux as the wire would (tail call and all).  The
 * entry is filled through kv_ingress/kv_egress, which share its maps.
 */
#include "xvi_wire.h"
#include "xvi_demux.skel.h"

static struct xvi_demux_bpf *dp;

static void dp_flags(__u16 flags)
{
	struct xvi_config cfg = { .mac = FX_DMAC, .flags = XVI_CFG_MAC | flags };
	__u32 zero = 0;

	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(dp->maps.xvi_config), &zero, &cfg, 0), 0);
}

static void kvxdp_setup(void)
{
	struct xvi_tag local = { .kind = XVI_TAG_UDP4 }, local6 = { .kind = XVI_TAG_UDP6 };
	__u32 zero = 0, one = 1, port = KV_PORT, v = 0;
	int fd;

	kv_setup();
	dp = xvi_demux_bpf__open_and_load();
	cr_assert_not_null(dp, "xvi_demux_bpf__open_and_load: %s", strerror(errno));
	dp_flags(XVI_CFG_PORT_HOOK);
	inet_pton(AF_INET, FX_DST4, local.addr);
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(dp->maps.xvi_local_addrs), &local, &v, 0), 0);
	inet_pton(AF_INET6, FX_DST6, local6.addr);
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(dp->maps.xvi_local_addrs), &local6, &v, 0), 0);
	fd = bpf_program__fd(bpf_object__find_program_by_name(kv.obj, "kv_xdp"));
	cr_assert_geq(fd, 0, "kvcache.bpf.o has no kv_xdp");
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(dp->maps.xvi_port_progs), &zero, &fd, 0), 0,
		     "kv_xdp refused by the datapath's hook table: %s", strerror(errno));
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(dp->maps.xvi_port_hooks), &port, &one, 0), 0);
}

static void kvxdp_teardown(void)
{
	xvi_demux_bpf__destroy(dp);
	kv_teardown();
}

static struct xvi_global_counters dp_global(void)
{
	struct xvi_global_counters g[kv.ncpus], sum = {};
	__u32 zero = 0;
	int i;

	cr_assert_eq(bpf_map_lookup_elem(bpf_map__fd(dp->maps.xvi_global_stats), &zero, g), 0);
	for (i = 0; i < kv.ncpus; i++) {
		sum.port_hooked += g[i].port_hooked;
		sum.port_hook_missing += g[i].port_hook_missing;
	}
	return sum;
}

/* Port hook @idx's counters in the datapath, summed over CPUs. */
static struct xvi_port_hook_counters dp_hook(__u32 idx)
{
	struct xvi_port_hook_counters c[kv.ncpus], sum = {};
	int i;

	cr_assert_eq(bpf_map_lookup_elem(bpf_map__fd(dp->maps.xvi_port_hook_stats), &idx, c), 0);
	for (i = 0; i < kv.ncpus; i++) {
		sum.hooked += c[i].hooked;
		sum.missing += c[i].missing;
	}
	return sum;
}

/*
 * The IPv4 header checksum, in network order as the datapath verifies it
 * (kv_build's suffices for the tc programs, which never read it), and the
 * UDP checksum over the pseudo-header and datagram of @f, in place (over
 * IPv6 the datapath takes no datagram without one).
 */
static void kv_csums(struct kv_frame *f)
{
	struct udphdr *uh = kv_udp(f);
	__u32 sum;

	uh->check = 0;
	if (kv_ipv6) {
		struct ipv6hdr *ip6 = (void *)(f->buf + ETH_HLEN);
		__u32 ph[2] = { htonl(ntohs(uh->len)), htonl(IPPROTO_UDP) };

		sum = fx_csum_add(0, &ip6->saddr, 32);
		sum = fx_csum_add(sum, ph, sizeof(ph));
	} else {
		struct iphdr *ip = (void *)(f->buf + ETH_HLEN);
		__u16 ph[2] = { htons(IPPROTO_UDP), uh->len };

		ip->check = 0;
		ip->check = htons(fx_csum_finish(fx_csum_add(0, ip, sizeof(*ip))));
		sum = fx_csum_add(0, &ip->saddr, 8);
		sum = fx_csum_add(sum, ph, sizeof(ph));
	}
	sum = fx_csum_add(sum, uh, ntohs(uh->len));
	uh->check = htons(fx_csum_finish(sum) ?: 0xffff);
}

/* @in through the datapath; the verdict, the frame out in *out. */
static int dp_run(const struct kv_frame *in, struct kv_frame *out)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in->buf, .data_size_in = in->len,
		    .data_out = out->buf, .data_size_out = sizeof(out->buf), .repeat = 1);

	cr_assert_eq(bpf_prog_test_run_opts(bpf_program__fd(dp->progs.xvi_demux), &opts), 0,
		     "BPF_PROG_RUN: %s", strerror(errno));
	out->len = opts.data_size_out;
	return opts.retval;
}

/* "get k1" through the datapath, to @port; the verdict, the frame out in *out. */
static int dp_get(__u16 rid, __u16 port, bool bad_csum, struct kv_frame *in,
		  struct kv_frame *out)
{
	kv_build(in, false, rid, "get k1\r\n", 8);
	kv_udp(in)->dest = htons(port);
	kv_csums(in);
	if (bad_csum)
		kv_udp(in)->check ^= htons(1);
	return dp_run(in, out);
}

/* Not for the hook: passed as it came, nothing counted as hooked or answered. */
static void expect_untouched(__u16 port, bool bad_csum)
{
	struct kv_frame in, out;
	int v;

	v = dp_get(9, port, bad_csum, &in, &out);
	cr_expect_eq(v, XDP_PASS, "verdict %d, expected XDP_PASS", v);
	cr_expect(out.len == in.len && !memcmp(out.buf, in.buf, in.len), "frame changed");
	cr_expect_eq(dp_global().port_hooked, 0);
	cr_expect_eq(kv_stat(XVI_KV_HIT_XDP), 0);
}

TestSuite(kvxdp, .init = kvxdp_setup, .fini = kvxdp_teardown);

Test(kvxdp, hit_answered_in_place)
{
	static const char body[] = VAL_HELLO;
	const size_t hdr = ETH_HLEN + sizeof(struct iphdr) + sizeof(struct udphdr);
	struct kv_frame in, out;
	struct iphdr *ip, *ip_in;
	struct udphdr *uh;
	struct xvi_kv_frame fr;
	__u16 ph[2];
	int v;

	fill_k1(1, VAL_HELLO);
	v = dp_get(2, KV_PORT, false, &in, &out);
	cr_assert_eq(v, XDP_TX, "verdict %d, expected XDP_TX", v);
	cr_expect_eq(kv_stat(XVI_KV_HIT_XDP), 1);
	cr_expect_eq(kv_stat(XVI_KV_HIT), 0, "kv_ingress cannot have run");
	cr_expect_eq(dp_global().port_hooked, 1);
	cr_expect_eq(dp_hook(0).hooked, 1, "the hook's own counter");
	cr_expect_eq(dp_hook(0).missing, 0);
	cr_expect_eq(dp_hook(1).hooked, 0, "another hook's counter moved");
	cr_assert_eq(out.len, hdr + sizeof(fr) + strlen(body), "reply of %u bytes", out.len);
	cr_expect_eq(memcmp(out.buf, in.buf + 6, 6), 0, "destination MAC is not the client's");
	cr_expect_eq(memcmp(out.buf + 6, in.buf, 6), 0, "source MAC is not ours");
	ip = (void *)(out.buf + ETH_HLEN);
	ip_in = (void *)(in.buf + ETH_HLEN);
	uh = (void *)(ip + 1);
	cr_expect_eq(ip->daddr, ip_in->saddr);
	cr_expect_eq(ip->saddr, ip_in->daddr);
	cr_expect_eq(ntohs(ip->tot_len), out.len - ETH_HLEN);
	cr_expect_eq(fx_csum_finish(fx_csum_add(0, ip, sizeof(*ip))), 0, "bad IP checksum");
	cr_expect_eq(ntohs(uh->source), KV_PORT);
	cr_expect_eq(ntohs(uh->dest), KV_CLIENT_PORT);
	cr_expect_eq(ntohs(uh->len), out.len - ETH_HLEN - sizeof(*ip));
	/* A receiving kernel verifies it (the reply is no local skb). */
	cr_expect_neq(uh->check, 0, "no UDP checksum");
	ph[0] = htons(IPPROTO_UDP);
	ph[1] = uh->len;
	cr_expect_eq(fx_csum_finish(fx_csum_add(fx_csum_add(fx_csum_add(0, &ip->saddr, 8), ph,
							     sizeof(ph)),
						uh, ntohs(uh->len))),
		     0, "bad UDP checksum");
	memcpy(&fr, uh + 1, sizeof(fr));
	cr_expect_eq(ntohs(fr.req_id), 2);
	cr_expect_eq(fr.seq, 0);
	cr_expect_eq(ntohs(fr.total), 1);
	cr_expect_eq(memcmp((__u8 *)(uh + 1) + sizeof(fr), body, strlen(body)), 0,
		     "reply body differs");
}

/* Data lengths whose bodies have every length modulo 4, up to the largest cached. */
static const size_t every_len[] = { 1, 2, 3, 4, 5, 511, 512, 513, 1000, 1254 };
#define EVERY_LEN	(sizeof(every_len) / sizeof(every_len[0]))

/*
 * k1 deleted (request id @rid), then filled (@rid + 1) with every_len[@i]
 * bytes of data: the reply body cached, in a static buffer.
 */
static const char *refill_k1(size_t i, __u16 rid)
{
	static char val[XVI_KV_BODY_MAX + 1], data[XVI_KV_BODY_MAX];
	size_t j;

	for (j = 0; j < every_len[i]; j++)
		data[j] = 'a' + (j * 7 + i) % 26;
	snprintf(val, sizeof(val), "VALUE k1 0 %zu\r\n%.*s\r\nEND\r\n", every_len[i],
		 (int)every_len[i], data);
	cr_assert_leq(strlen(val), XVI_KV_BODY_MAX);
	cr_assert_eq(req(rid, "delete k1\r\n", NULL), TC_ACT_OK);
	cr_assert_eq(rep(rid, "DELETED\r\n"), TC_ACT_OK);
	fill_k1(rid + 1, val);
	return val;
}

/* Bodies of every length modulo 4, up to the largest cached: checksums hold. */
Test(kvxdp, hit_checksum_every_length)
{
	struct kv_frame in, out;
	size_t i;
	struct iphdr *ip;
	struct udphdr *uh;
	const char *val;
	__u16 ph[2];
	__u16 rid = 1;
	int v;

	for (i = 0; i < EVERY_LEN; i++, rid += 2) {
		val = refill_k1(i, rid);
		v = dp_get(rid + 1, KV_PORT, false, &in, &out);
		cr_assert_eq(v, XDP_TX, "%zu bytes: verdict %d", every_len[i], v);
		ip = (void *)(out.buf + ETH_HLEN);
		uh = (void *)(ip + 1);
		ph[0] = htons(IPPROTO_UDP);
		ph[1] = uh->len;
		cr_expect_eq(fx_csum_finish(fx_csum_add(fx_csum_add(fx_csum_add(0, &ip->saddr, 8),
								     ph, sizeof(ph)),
							uh, ntohs(uh->len))),
			     0, "%zu-byte value: bad UDP checksum", every_len[i]);
		cr_expect_eq(memcmp((__u8 *)(uh + 1) + sizeof(struct xvi_kv_frame), val,
				    strlen(val)), 0, "%zu-byte value: body differs", every_len[i]);
	}
}

/* A miss goes on unchanged, to kv_ingress and memcached. */
Test(kvxdp, miss_passed)
{
	struct kv_frame in, out;
	int v;

	v = dp_get(1, KV_PORT, false, &in, &out);
	cr_expect_eq(v, XDP_PASS, "verdict %d, expected XDP_PASS", v);
	cr_expect(out.len == in.len && !memcmp(out.buf, in.buf, in.len), "frame changed");
	cr_expect_eq(dp_global().port_hooked, 1);
	cr_expect_eq(kv_stat(XVI_KV_HIT_XDP), 0);
}

/* A write invalidates for the XDP path as for tc. */
Test(kvxdp, set_invalidates)
{
	struct kv_frame in, out;

	fill_k1(1, VAL_HELLO);
	cr_assert_eq(req(2, "set k1 0 0 5\r\nworld\r\n", NULL), TC_ACT_OK);
	cr_expect_eq(dp_get(3, KV_PORT, false, &in, &out), XDP_PASS,
		     "a GET after a write was answered from the old entry");
	cr_expect_eq(kv_stat(XVI_KV_HIT_XDP), 0);
}

/* The hook's table slot empty: the kernel's, counted. */
Test(kvxdp, missing_program_passed)
{
	struct kv_frame in, out;
	__u32 zero = 0;
	int v;

	fill_k1(1, VAL_HELLO);
	cr_assert_eq(bpf_map_delete_elem(bpf_map__fd(dp->maps.xvi_port_progs), &zero), 0);
	v = dp_get(2, KV_PORT, false, &in, &out);
	cr_expect_eq(v, XDP_PASS, "verdict %d, expected XDP_PASS", v);
	cr_expect(out.len == in.len && !memcmp(out.buf, in.buf, in.len), "frame changed");
	cr_expect_eq(dp_global().port_hook_missing, 1);
	cr_expect_eq(dp_global().port_hooked, 0);
	cr_expect_eq(dp_hook(0).missing, 1, "the hook's own counter");
	cr_expect_eq(dp_hook(0).hooked, 0);
}

Test(kvxdp, other_port_untouched)
{
	fill_k1(1, VAL_HELLO);
	expect_untouched(KV_PORT + 1, false);
}

/* With no hook anywhere (XVI_CFG_PORT_HOOK clear) the table is not read. */
Test(kvxdp, flag_off_untouched)
{
	fill_k1(1, VAL_HELLO);
	dp_flags(0);
	expect_untouched(KV_PORT, false);
}

/* A corrupt datagram is the kernel's to drop, never answered. */
Test(kvxdp, bad_checksum_untouched)
{
	fill_k1(1, VAL_HELLO);
	expect_untouched(KV_PORT, true);
}

/* From a source the kernel drops as a martian: no reply to it from XDP. */
Test(kvxdp, martian_source_passed)
{
	static const char *const src[] = {
		"224.0.0.1", "239.1.2.3", "255.255.255.255", "240.0.0.1", "0.0.0.0",
		"127.0.0.1",
	};
	struct kv_frame in, out;
	size_t i;
	int v;

	fill_k1(1, VAL_HELLO);
	for (i = 0; i < sizeof(src) / sizeof(src[0]); i++) {
		kv_build(&in, false, 2, "get k1\r\n", 8);
		inet_pton(AF_INET, src[i], &((struct iphdr *)(in.buf + ETH_HLEN))->saddr);
		kv_csums(&in);
		v = dp_run(&in, &out);
		cr_expect_eq(v, XDP_PASS, "source %s: verdict %d, expected XDP_PASS", src[i], v);
		cr_expect(out.len == in.len && !memcmp(out.buf, in.buf, in.len),
			  "source %s: frame changed", src[i]);
	}
	cr_expect_eq(kv_stat(XVI_KV_HIT_XDP), 0);
	/* The same GET from the client is answered. */
	cr_expect_eq(dp_get(3, KV_PORT, false, &in, &out), XDP_TX);
}

/* To an address the host only routes: no local port's datagram. */
Test(kvxdp, not_local_untouched)
{
	struct xvi_tag local = { .kind = XVI_TAG_UDP4 };

	fill_k1(1, VAL_HELLO);
	inet_pton(AF_INET, FX_DST4, local.addr);
	cr_assert_eq(bpf_map_delete_elem(bpf_map__fd(dp->maps.xvi_local_addrs), &local), 0);
	expect_untouched(KV_PORT, false);
}

/*
 * IPv6: kv_xdp answers the hits as over IPv4, with the reply's UDP
 * checksum (mandatory over IPv6) computed.  The client is 2001:2::1,
 * memcached 2001:2::2; the tc programs fill and invalidate the entries
 * from IPv6 traffic too.
 */
static void kvxdp6_setup(void)
{
	kvxdp_setup();
	kv_ipv6 = true;
}

TestSuite(kvxdp6, .init = kvxdp6_setup, .fini = kvxdp_teardown);

/* @out is kv_xdp's reply to the IPv6 GET @in (request id @rid), with @body. */
static void expect_reply6(const struct kv_frame *in, const struct kv_frame *out, __u16 rid,
			  const char *body)
{
	const size_t hdr = ETH_HLEN + sizeof(struct ipv6hdr) + sizeof(struct udphdr);
	const struct ipv6hdr *ip = (void *)(out->buf + ETH_HLEN);
	const struct ipv6hdr *ip_in = (void *)(in->buf + ETH_HLEN);
	const struct udphdr *uh = (void *)(ip + 1);
	struct xvi_kv_frame fr;
	__u32 ph[2], sum;

	cr_assert_eq(out->len, hdr + sizeof(fr) + strlen(body), "reply of %u bytes", out->len);
	cr_expect_eq(memcmp(out->buf, in->buf + 6, 6), 0, "destination MAC is not the client's");
	cr_expect_eq(memcmp(out->buf + 6, in->buf, 6), 0, "source MAC is not ours");
	cr_expect_eq(ntohs(((const struct ethhdr *)out->buf)->h_proto), ETH_P_IPV6);
	cr_expect_eq(ip->version, 6);
	cr_expect_eq(ip->nexthdr, IPPROTO_UDP);
	cr_expect_eq(ip->hop_limit, 64);
	cr_expect_eq(memcmp(&ip->saddr, &ip_in->daddr, 16), 0, "source is not memcached's");
	cr_expect_eq(memcmp(&ip->daddr, &ip_in->saddr, 16), 0, "destination is not the client");
	cr_expect_eq(ntohs(ip->payload_len), out->len - ETH_HLEN - sizeof(*ip));
	cr_expect_eq(ntohs(uh->source), KV_PORT);
	cr_expect_eq(ntohs(uh->dest), KV_CLIENT_PORT);
	cr_expect_eq(uh->len, ip->payload_len);
	cr_expect_neq(uh->check, 0, "no UDP checksum, which IPv6 requires");
	ph[0] = htonl(ntohs(uh->len));
	ph[1] = htonl(IPPROTO_UDP);
	sum = fx_csum_add(0, &ip->saddr, 32);
	sum = fx_csum_add(sum, ph, sizeof(ph));
	sum = fx_csum_add(sum, uh, ntohs(uh->len));
	cr_expect_eq(fx_csum_finish(sum), 0, "bad UDP checksum (%zu-byte body)", strlen(body));
	memcpy(&fr, uh + 1, sizeof(fr));
	cr_expect_eq(ntohs(fr.req_id), rid, "request id %u, expected %u", ntohs(fr.req_id), rid);
	cr_expect_eq(fr.seq, 0);
	cr_expect_eq(ntohs(fr.total), 1);
	cr_expect_eq(memcmp((const __u8 *)(uh + 1) + sizeof(fr), body, strlen(body)), 0,
		     "reply body differs (%zu-byte body)", strlen(body));
}

/* @in passed as it came, and not answered. */
static void expect_passed(const char *what, const struct kv_frame *in)
{
	struct kv_frame out;
	int v = dp_run(in, &out);

	cr_expect_eq(v, XDP_PASS, "%s: verdict %d, expected XDP_PASS", what, v);
	cr_expect(out.len == in->len && !memcmp(out.buf, in->buf, in->len), "%s: frame changed",
		  what);
	cr_expect_eq(kv_stat(XVI_KV_HIT_XDP), 0, "%s: answered", what);
}

Test(kvxdp6, hit_answered_in_place)
{
	struct kv_frame in, out;
	int v;

	fill_k1(1, VAL_HELLO);
	cr_expect_eq(kv_stat(XVI_KV_FILL), 1, "memcached's IPv6 reply filled nothing");
	v = dp_get(2, KV_PORT, false, &in, &out);
	cr_assert_eq(v, XDP_TX, "verdict %d, expected XDP_TX", v);
	cr_expect_eq(kv_stat(XVI_KV_HIT_XDP), 1);
	cr_expect_eq(kv_stat(XVI_KV_HIT), 0, "kv_ingress cannot have run");
	cr_expect_eq(dp_global().port_hooked, 1);
	expect_reply6(&in, &out, 2, VAL_HELLO);
}

/* Bodies of every length modulo 4, up to the largest cached. */
Test(kvxdp6, hit_checksum_every_length)
{
	struct kv_frame in, out;
	const char *val;
	__u16 rid = 1;
	size_t i;
	int v;

	for (i = 0; i < EVERY_LEN; i++, rid += 2) {
		val = refill_k1(i, rid);
		v = dp_get(rid + 1, KV_PORT, false, &in, &out);
		cr_assert_eq(v, XDP_TX, "%zu bytes: verdict %d", every_len[i], v);
		expect_reply6(&in, &out, rid + 1, val);
	}
}

/* One cache for both families: filled over IPv4, answered over IPv6. */
Test(kvxdp6, filled_over_ipv4)
{
	struct kv_frame in, out;

	kv_ipv6 = false;
	fill_k1(1, VAL_HELLO);
	kv_ipv6 = true;
	cr_assert_eq(dp_get(2, KV_PORT, false, &in, &out), XDP_TX);
	expect_reply6(&in, &out, 2, VAL_HELLO);
}

Test(kvxdp6, miss_passed)
{
	struct kv_frame in;

	kv_build(&in, false, 1, "get k1\r\n", 8);
	kv_csums(&in);
	expect_passed("miss", &in);
	cr_expect_eq(dp_global().port_hooked, 1);
	/* kv_ingress then records the miss, and memcached's reply fills. */
	expect_miss(1);
}

/* A write over IPv6, or over IPv4, invalidates for IPv6 hits. */
Test(kvxdp6, writes_invalidate)
{
	struct kv_frame in;

	fill_k1(1, VAL_HELLO);
	cr_assert_eq(req(2, "set k1 0 0 5\r\nworld\r\n", NULL), TC_ACT_OK);
	kv_build(&in, false, 3, "get k1\r\n", 8);
	kv_csums(&in);
	expect_passed("GET after an IPv6 set", &in);
	cr_assert_eq(rep(2, "STORED\r\n"), TC_ACT_OK);
	fill_k1(4, VAL_WORLD);
	kv_ipv6 = false;
	cr_assert_eq(req(5, "delete k1\r\n", NULL), TC_ACT_OK);
	kv_ipv6 = true;
	expect_passed("GET after an IPv4 delete", &in);
}

/*
 * Frames that must not be answered, each built from a GET of the cached
 * k1 and changed by one of these (checksums computed after, unless the
 * change is the checksum).  Some the datapath keeps from the hook, the
 * rest reach kv_xdp: a broken check in either answers one of them.
 */
static void m6_zero_csum(struct kv_frame *f) { kv_csums(f); kv_udp(f)->check = 0; }
static void m6_bad_csum(struct kv_frame *f) { kv_csums(f); kv_udp(f)->check ^= htons(1); }

static void m6_udp_shorter(struct kv_frame *f)
{
	/* Two bytes after the datagram, inside the IPv6 payload. */
	struct ipv6hdr *ip6 = (void *)(f->buf + ETH_HLEN);

	memcpy(f->buf + f->len, "xx", 2);
	f->len += 2;
	ip6->payload_len = htons(ntohs(ip6->payload_len) + 2);
	kv_csums(f);
}

/* The request from source @addr, checksums redone. */
static void m6_src(struct kv_frame *f, const char *addr)
{
	inet_pton(AF_INET6, addr, &((struct ipv6hdr *)(f->buf + ETH_HLEN))->saddr);
	kv_csums(f);
}

static void m6_mcast_src(struct kv_frame *f) { m6_src(f, "ff02::1"); }
static void m6_loopback_src(struct kv_frame *f) { m6_src(f, "::1"); }
static void m6_mapped_src(struct kv_frame *f) { m6_src(f, "::ffff:127.0.0.1"); }
static void m6_unspecified_src(struct kv_frame *f) { m6_src(f, "::"); }

static void m6_hop_by_hop(struct kv_frame *f)
{
	/* An empty hop-by-hop header (PadN) between IPv6 and UDP. */
	static const __u8 hbh[8] = { IPPROTO_UDP, 0, 1, 4 };
	struct ipv6hdr *ip6 = (void *)(f->buf + ETH_HLEN);
	__u8 *l4 = (__u8 *)(ip6 + 1);

	kv_csums(f);
	memmove(l4 + sizeof(hbh), l4, f->len - (l4 - f->buf));
	memcpy(l4, hbh, sizeof(hbh));
	f->len += sizeof(hbh);
	ip6->nexthdr = 0;
	ip6->payload_len = htons(ntohs(ip6->payload_len) + sizeof(hbh));
}

static void m6_split(struct kv_frame *f)
{
	((struct xvi_kv_frame *)(kv_udp(f) + 1))->total = htons(2);
	kv_csums(f);
}

static void m6_seq(struct kv_frame *f)
{
	((struct xvi_kv_frame *)(kv_udp(f) + 1))->seq = htons(1);
	kv_csums(f);
}

Test(kvxdp6, malformed_passed)
{
	static const struct {
		const char *what, *text;
		void (*change)(struct kv_frame *f);
	} m[] = {
		{ "no UDP checksum", "get k1\r\n", m6_zero_csum },
		{ "bad UDP checksum", "get k1\r\n", m6_bad_csum },
		{ "UDP length short of the IPv6 payload", "get k1\r\n", m6_udp_shorter },
		{ "multicast source", "get k1\r\n", m6_mcast_src },
		{ "loopback source", "get k1\r\n", m6_loopback_src },
		{ "IPv4-mapped source", "get k1\r\n", m6_mapped_src },
		{ "unspecified source", "get k1\r\n", m6_unspecified_src },
		{ "hop-by-hop header before UDP", "get k1\r\n", m6_hop_by_hop },
		{ "one of two datagrams", "get k1\r\n", m6_split },
		{ "second datagram", "get k1\r\n", m6_seq },
		{ "no \\r\\n", "get k1", kv_csums },
		{ "two keys", "get k1 k2\r\n", kv_csums },
		{ "bytes after the line", "get k1\r\nx", kv_csums },
		{ "gets", "gets k1\r\n", kv_csums },
	};
	struct kv_frame in, out;
	size_t i;

	fill_k1(1, VAL_HELLO);
	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		kv_build(&in, false, 10 + i, m[i].text, strlen(m[i].text));
		m[i].change(&in);
		expect_passed(m[i].what, &in);
	}
	/* Still cached: the same GET, well formed, is answered. */
	cr_expect_eq(dp_get(30, KV_PORT, false, &in, &out), XDP_TX, "k1 no longer answered");
}

/* Nothing of the hook's for an address the host only routes. */
Test(kvxdp6, not_local_untouched)
{
	struct xvi_tag local = { .kind = XVI_TAG_UDP6 };

	fill_k1(1, VAL_HELLO);
	inet_pton(AF_INET6, FX_DST6, local.addr);
	cr_assert_eq(bpf_map_delete_elem(bpf_map__fd(dp->maps.xvi_local_addrs), &local), 0);
	expect_untouched(KV_PORT, false);
}
