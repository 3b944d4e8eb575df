// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The datapath's IP router through BPF_PROG_RUN: xvi_demux with routing on
 * (XVI_CFG_ROUTE), run as if the frame arrived on RT_IN (ctx
 * ingress_ifindex), so that bpf_fib_lookup() consults the routes and
 * neighbours of this case's private network namespace:
 *
 *   RT_IN  198.18.0.254/24  2001:2::fe/64     (the frames' source side)
 *   RT_OUT 198.19.0.254/24  2001:2:1::fe/64   neighbours 198.19.0.2 and
 *                                             2001:2:1::2 (permanent, RT_NMAC)
 *   forwarding on; both in xvi_route_devs
 *
 * Every case runs in its own process and namespace (fx_env.h).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include "xvi_wire.h"
#include "xvi_demux.skel.h"
#include "fx_frame.h"
#include "fx_env.h"

#define RT_IN		"xvirt0"
#define RT_IN_PEER	"xvirt1"
#define RT_OUT		"xvirt2"
#define RT_OUT_PEER	"xvirt3"
#define RT_DST4		"198.19.0.2"
#define RT_DST6		"2001:2:1::2"
#define RT_NMAC		{ 0x02, 0, 0, 0, 0, 0x99 }
#define RT_SLOT		3
#define RT_PORT		7000

static struct {
	struct xvi_demux_bpf *skel;
	int ncpus;
} env;

static void sh(const char *cmd)
{
	cr_assert_eq(system(cmd), 0, "%s failed", cmd);
}

static void set_cfg(__u16 flags)
{
	struct xvi_config cfg = { .mac = FX_DMAC, .flags = XVI_CFG_MAC | flags };
	__u32 zero = 0;

	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_config), &zero, &cfg, 0),
		     0);
}

static void rt_setup(void)
{
	const char *devs[] = { RT_IN, RT_OUT };
	__u32 ifindex;
	size_t i;

	fx_netns_veth(RT_IN, RT_IN_PEER);
	sh("ip link add " RT_OUT " type veth peer name " RT_OUT_PEER " && "
	   "ip link set " RT_OUT " up && ip link set " RT_OUT_PEER " up && "
	   "ip addr add 198.18.0.254/24 dev " RT_IN " && "
	   "ip addr add 2001:2::fe/64 dev " RT_IN " nodad && "
	   "ip addr add 198.19.0.254/24 dev " RT_OUT " && "
	   "ip addr add 2001:2:1::fe/64 dev " RT_OUT " nodad && "
	   "ip neigh add " RT_DST4 " lladdr 02:00:00:00:00:99 dev " RT_OUT " nud permanent && "
	   "ip neigh add " RT_DST6 " lladdr 02:00:00:00:00:99 dev " RT_OUT " nud permanent && "
	   "sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1");
	env.ncpus = libbpf_num_possible_cpus();
	env.skel = xvi_demux_bpf__open_and_load();
	cr_assert_not_null(env.skel, "xvi_demux_bpf__open_and_load: %s", strerror(errno));
	set_cfg(XVI_CFG_ROUTE);
	for (i = 0; i < 2; i++) {
		ifindex = if_nametoindex(devs[i]);
		cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_route_devs),
						 &ifindex, &ifindex, 0), 0, "xvi_route_devs: %s",
			     strerror(errno));
	}
}

static void rt_teardown(void)
{
	xvi_demux_bpf__destroy(env.skel);
	memset(&env, 0, sizeof(env));
}

TestSuite(router, .init = rt_setup, .fini = rt_teardown);

struct run {
	__u32 verdict;
	__u8 out[2048];
	__u32 out_len;
	struct xvi_global_counters g;	/* summed over CPUs */
};

static void run(const struct fx_frame *f, struct run *r)
{
	struct xdp_md ctx = { .data_end = f->len, .ingress_ifindex = if_nametoindex(RT_IN) };
	struct xvi_global_counters g[env.ncpus];
	__u32 zero = 0;
	size_t w;
	int cpu;

	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = f->buf, .data_size_in = f->len,
		    .data_out = r->out, .data_size_out = sizeof(r->out), .ctx_in = &ctx,
		    .ctx_size_in = sizeof(ctx), .repeat = 1);

	cr_assert_eq(bpf_prog_test_run_opts(bpf_program__fd(env.skel->progs.xvi_demux), &opts),
		     0, "BPF_PROG_RUN: %s", strerror(errno));
	r->verdict = opts.retval;
	r->out_len = opts.data_size_out;
	cr_assert_eq(bpf_map_lookup_elem(bpf_map__fd(env.skel->maps.xvi_global_stats), &zero,
					 g), 0);
	memset(&r->g, 0, sizeof(r->g));
	for (cpu = 0; cpu < env.ncpus; cpu++)
		for (w = 0; w < sizeof(r->g) / 8; w++)
			((__u64 *)&r->g)[w] += ((__u64 *)&g[cpu])[w];
}

/* RFC 1071 sum of @len bytes, folded (0xffff over a valid header). */
static __u16 sum16(const __u8 *p, size_t len)
{
	__u32 s = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		s += (p[i] << 8) | p[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

/* Set the IPv4 TTL of @f and make its header checksum right again. */
static void set_ttl4(struct fx_frame *f, __u8 ttl)
{
	struct iphdr *iph = (void *)(f->buf + f->l3_off);

	iph->ttl = ttl;
	iph->check = 0;
	iph->check = htons(~sum16((void *)iph, iph->ihl * 4) & 0xffff);
}

static void mac_of(const char *ifname, __u8 mac[ETH_ALEN])
{
	struct ifreq ifr = {};
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	cr_assert_geq(fd, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	cr_assert_eq(ioctl(fd, SIOCGIFHWADDR, &ifr), 0, "SIOCGIFHWADDR: %s", strerror(errno));
	memcpy(mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	close(fd);
}

static void assert_macs(const struct run *r)
{
	const __u8 nmac[ETH_ALEN] = RT_NMAC;
	__u8 smac[ETH_ALEN];

	mac_of(RT_OUT, smac);
	cr_assert_eq(memcmp(r->out, nmac, ETH_ALEN), 0, "destination MAC not the neighbour's");
	cr_assert_eq(memcmp(r->out + ETH_ALEN, smac, ETH_ALEN), 0,
		     "source MAC not the egress interface's");
}

Test(router, forward4)
{
	struct fx_frame_spec s = { .l3 = FX_IP4, .dst = RT_DST4, .dport = 9, .payload = 64 };
	struct fx_frame f;
	struct iphdr *out;
	struct run r;

	cr_assert_eq(fx_frame_build(&s, &f), 0);
	set_ttl4(&f, 64);
	run(&f, &r);
	cr_assert_eq(r.verdict, XDP_REDIRECT, "verdict %u", r.verdict);
	cr_assert_eq(r.g.rt_forwarded, 1);
	cr_assert_eq(r.out_len, f.len);
	out = (void *)(r.out + f.l3_off);
	cr_assert_eq(out->ttl, 63, "TTL %u, expected 63", out->ttl);
	cr_assert_eq(sum16((void *)out, sizeof(*out)), 0xffff,
		     "IPv4 header checksum wrong after the TTL update");
	/* Everything but TTL, checksum and MACs unchanged. */
	cr_assert_eq(memcmp(r.out + f.l3_off + 12, f.buf + f.l3_off + 12, f.len - f.l3_off - 12),
		     0);
	assert_macs(&r);
	fx_frame_free(&f);
}

/*
 * The incremental update at its edges: the TTL is the high byte of its
 * 16-bit word, so the update adds 0x0100 to the checksum, which wraps
 * (end-around carry) when the checksum's high byte is 0xff.  The IP id
 * picks checksums at that edge, and zero; each is forwarded and checked.
 */
Test(router, forward4_csum_edges)
{
	struct fx_frame_spec s = { .l3 = FX_IP4, .dst = RT_DST4, .dport = 9, .payload = 64 };
	struct iphdr *in, *out;
	unsigned int id, n = 0;
	struct fx_frame f;
	struct run r;
	__u16 c;

	cr_assert_eq(fx_frame_build(&s, &f), 0);
	in = (void *)(f.buf + f.l3_off);
	for (id = 0; id <= 0xffff; id++) {
		in->id = htons(id);
		set_ttl4(&f, 64);
		c = ntohs(in->check);
		if ((c >> 8) != 0xff && c != 0)
			continue;
		n++;
		run(&f, &r);
		cr_assert_eq(r.verdict, XDP_REDIRECT, "id %u: verdict %u", id, r.verdict);
		out = (void *)(r.out + f.l3_off);
		cr_assert_eq(out->ttl, 63);
		cr_assert_eq(sum16((void *)out, sizeof(*out)), 0xffff,
			     "checksum %#06x: wrong after the update (%#06x)", c, ntohs(out->check));
	}
	cr_assert_geq(n, 256, "only %u frames at the edge", n);
	fx_frame_free(&f);
}

Test(router, forward6)
{
	struct fx_frame_spec s = { .l3 = FX_IP6, .dst = RT_DST6, .dport = 9, .payload = 64 };
	struct ipv6hdr *out;
	struct fx_frame f;
	struct run r;

	cr_assert_eq(fx_frame_build(&s, &f), 0);
	run(&f, &r);
	cr_assert_eq(r.verdict, XDP_REDIRECT, "verdict %u", r.verdict);
	cr_assert_eq(r.g.rt_forwarded, 1);
	out = (void *)(r.out + f.l3_off);
	cr_assert_eq(out->hop_limit, 63);
	assert_macs(&r);
	fx_frame_free(&f);
}

/* A frame the router leaves alone: passed, unchanged, counted in @field. */
static void assert_passed(const struct fx_frame *f, const struct run *r, __u64 counted,
			  const char *what)
{
	cr_assert_eq(r->verdict, XDP_PASS, "%s: verdict %u", what, r->verdict);
	cr_assert_eq(r->g.rt_forwarded, 0, "%s: forwarded", what);
	cr_assert_eq(counted, 1, "%s: not counted", what);
	cr_assert_eq(r->out_len, f->len);
	cr_assert_eq(memcmp(r->out, f->buf, f->len), 0, "%s: frame changed", what);
}

#define RT_CNT(field)	offsetof(struct xvi_global_counters, field)

/* Build @s, run it, and check it passed unchanged, counted at @off. */
static void check_passed(const struct fx_frame_spec *s, size_t off, const char *what)
{
	struct fx_frame f;
	struct run r;

	cr_assert_eq(fx_frame_build(s, &f), 0);
	run(&f, &r);
	assert_passed(&f, &r, *(const __u64 *)((const char *)&r.g + off), what);
	fx_frame_free(&f);
}

Test(router, ttl1_passed)
{
	struct fx_frame_spec s = { .l3 = FX_IP4, .dst = RT_DST4, .dport = 9, .payload = 64 };
	struct fx_frame f;
	struct run r;

	cr_assert_eq(fx_frame_build(&s, &f), 0);
	set_ttl4(&f, 1);
	run(&f, &r);
	assert_passed(&f, &r, r.g.rt_pass_ttl, "TTL 1");
	fx_frame_free(&f);
}

Test(router, hop_limit1_passed)
{
	struct fx_frame_spec s = { .l3 = FX_IP6, .dst = RT_DST6, .dport = 9, .payload = 64 };
	struct fx_frame f;
	struct run r;

	cr_assert_eq(fx_frame_build(&s, &f), 0);
	((struct ipv6hdr *)(f.buf + f.l3_off))->hop_limit = 1;
	run(&f, &r);
	assert_passed(&f, &r, r.g.rt_pass_ttl, "hop limit 1");
	fx_frame_free(&f);
}

Test(router, local_passed)
{
	struct fx_frame_spec s = { .l3 = FX_IP4, .dst = "198.19.0.254", .dport = 9,
				   .payload = 64 };

	check_passed(&s, RT_CNT(rt_pass_local), "local destination");
}

Test(router, fragment_passed)
{
	struct fx_frame_spec s = { .l3 = FX_IP4, .dst = RT_DST4, .dport = 9, .payload = 64,
				   .frag_off = 0x2000 /* MF */ };

	check_passed(&s, RT_CNT(rt_pass_frag), "fragment");
}

Test(router, options_passed)
{
	struct fx_frame_spec s = { .l3 = FX_IP4, .dst = RT_DST4, .dport = 9, .payload = 64,
				   .ihl = 6 };

	check_passed(&s, RT_CNT(rt_pass_options), "IPv4 options");
}

/*
 * Sources the kernel drops as martians (loopback, multicast): the lookup
 * checks only the destination and would forward them; the router leaves
 * them to the kernel (rt_pass_other), which drops them.
 */
Test(router, martian_source_passed)
{
	static const char *const srcs[] = { "127.0.0.1", "224.0.0.9" };
	struct fx_frame_spec s = { .l3 = FX_IP4, .dst = RT_DST4, .dport = 9, .payload = 64 };
	struct fx_frame f;
	struct run r;
	__u64 before = 0;
	size_t i;

	for (i = 0; i < 2; i++) {
		cr_assert_eq(fx_frame_build(&s, &f), 0);
		inet_pton(AF_INET, srcs[i], &((struct iphdr *)(f.buf + f.l3_off))->saddr);
		set_ttl4(&f, 64);
		run(&f, &r);
		assert_passed(&f, &r, r.g.rt_pass_other - before, srcs[i]);
		before = r.g.rt_pass_other;
		fx_frame_free(&f);
	}
}

/* A bad IPv4 header checksum is the kernel's to drop (ip_rcv). */
Test(router, bad_header_csum_passed)
{
	struct fx_frame_spec s = { .l3 = FX_IP4, .dst = RT_DST4, .dport = 9, .payload = 64 };
	struct fx_frame f;
	struct run r;

	cr_assert_eq(fx_frame_build(&s, &f), 0);
	((struct iphdr *)(f.buf + f.l3_off))->check ^= htons(0x0100);
	run(&f, &r);
	assert_passed(&f, &r, r.g.rt_pass_other, "bad IPv4 header checksum");
	fx_frame_free(&f);
}

Test(router, no_neigh_passed)
{
	struct fx_frame_spec s = { .l3 = FX_IP4, .dst = "198.19.0.3", .dport = 9, .payload = 64 };

	check_passed(&s, RT_CNT(rt_pass_no_neigh), "no neighbour");
}

Test(router, forwarding_off_passed)
{
	struct fx_frame_spec s = { .l3 = FX_IP4, .dst = RT_DST4, .dport = 9, .payload = 64 };

	sh("sysctl -qw net.ipv4.conf." RT_IN ".forwarding=0");
	check_passed(&s, RT_CNT(rt_pass_disabled), "forwarding off");
}

Test(router, no_egress_passed)
{
	struct fx_frame_spec s = { .l3 = FX_IP4, .dst = RT_DST4, .dport = 9, .payload = 64 };
	__u32 out = if_nametoindex(RT_OUT);

	cr_assert_eq(bpf_map_delete_elem(bpf_map__fd(env.skel->maps.xvi_route_devs), &out), 0);
	check_passed(&s, RT_CNT(rt_pass_no_egress), "egress not routing");
}

/* As after `xdp-vi detach` of the egress: IPv6 too goes to the kernel
 * with its hop limit untouched. */
Test(router, no_egress6_passed)
{
	struct fx_frame_spec s = { .l3 = FX_IP6, .dst = RT_DST6, .dport = 9, .payload = 64 };
	__u32 out = if_nametoindex(RT_OUT);

	cr_assert_eq(bpf_map_delete_elem(bpf_map__fd(env.skel->maps.xvi_route_devs), &out), 0);
	check_passed(&s, RT_CNT(rt_pass_no_egress), "IPv6 egress not routing");
}

Test(router, partial_csum_passed_on_local_link)
{
	struct fx_frame_spec s = { .l3 = FX_IP4, .dst = RT_DST4, .dport = 9, .payload = 64,
				   .partial_l4_csum = true };

	set_cfg(XVI_CFG_ROUTE | XVI_CFG_LOCAL_LINK);
	check_passed(&s, RT_CNT(rt_pass_csum_partial), "partial checksum");
}

Test(router, partial_csum6_passed_on_local_link)
{
	struct fx_frame_spec s = { .l3 = FX_IP6, .dst = RT_DST6, .dport = 9, .payload = 64,
				   .partial_l4_csum = true };

	set_cfg(XVI_CFG_ROUTE | XVI_CFG_LOCAL_LINK);
	check_passed(&s, RT_CNT(rt_pass_csum_partial), "IPv6 partial checksum");
}

/* Bigger than the egress MTU: the kernel sends "too big" or fragments. */
Test(router, mtu_passed)
{
	struct fx_frame_spec s = { .l3 = FX_IP4, .dst = RT_DST4, .dport = 9, .payload = 1300 };

	sh("ip link set " RT_OUT " mtu 1280");
	check_passed(&s, RT_CNT(rt_pass_mtu), "too big");
}

/* Routing off (the default): the same frame goes to the kernel, nothing counted. */
Test(router, disabled_passes_as_before)
{
	struct fx_frame_spec s = { .l3 = FX_IP4, .dst = RT_DST4, .dport = 9, .payload = 64 };
	struct fx_frame f;
	struct run r;

	set_cfg(0);
	cr_assert_eq(fx_frame_build(&s, &f), 0);
	run(&f, &r);
	cr_assert_eq(r.verdict, XDP_PASS);
	cr_assert_eq(r.g.rt_forwarded + r.g.rt_pass_ttl + r.g.rt_pass_local + r.g.rt_pass_other +
		     r.g.rt_pass_no_neigh + r.g.rt_pass_no_egress, 0);
	cr_assert_eq(memcmp(r.out, f.buf, f.len), 0);
	fx_frame_free(&f);
}

/* A frame to an endpoint is the endpoint's, even where a route would take it. */
Test(router, endpoint_not_routed)
{
	struct fx_frame_spec s = { .l3 = FX_IP4, .dst = RT_DST4, .dport = RT_PORT,
				   .payload = 64 };
	struct xvi_tag t = { .kind = XVI_TAG_UDP4, .port = htons(RT_PORT) };
	struct xvi_ep_value v = { .slot = RT_SLOT };
	struct xvi_ep_counters ep;
	struct fx_xsk x;
	struct fx_frame f;
	struct run r;
	__u32 slot = RT_SLOT;
	int fd;

	fx_xsk_open(&x, RT_IN);
	fd = xsk_socket__fd(x.xsk);
	inet_pton(AF_INET, RT_DST4, t.addr);
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_endpoints), &t, &v, 0),
		     0);
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_xsks), &slot, &fd, 0),
		     0);
	cr_assert_eq(fx_frame_build(&s, &f), 0);
	run(&f, &r);
	cr_assert_eq(r.verdict, XDP_REDIRECT, "verdict %u", r.verdict);
	cr_assert_eq(r.g.rt_forwarded, 0, "an endpoint's frame was routed");
	fx_read_slot(bpf_map__fd(env.skel->maps.xvi_ep_stats), RT_SLOT, &ep);
	cr_assert_eq(ep.rx_frames, 1, "the endpoint did not get it");
	fx_frame_free(&f);
	fx_xsk_close(&x);
}
