// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Active-message dispatch through BPF_PROG_RUN: xvi_demux with the sample
 * handlers (examples/ext/, built into $(B)/ext/) in its xvi_ext_progs, as
 * xvi_ext__load puts them there.
 *
 * Every case runs in its own process and network namespace (fx_env.h),
 * with a fresh copy of the datapath's maps:
 *   slot 3  198.18.0.2:7000   echo at index 1, count at index 2, ext_act at 3
 *   slot 9  raw tag 0xc0ffee  count at index 2
 *   slot 10 198.18.0.2:7003   protected, echo at index 1 (never runs)
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include "xvi_wire.h"
#include "xvi_ext.h"
#include "xvi_place.h"
#include "ext/ext.h"
#include "xvi_demux.skel.h"
#include "fx_frame.h"
#include "fx_env.h"

#define SLOT		3
#define SLOT_RAW	9
#define SLOT_PROT	10
#define PORT		7000
#define PORT_PROT	7003
#define RAW_TAG		0x00c0ffee
#define H_ECHO		1
#define H_COUNT		2
#define H_ACT		3
#define H_NONE		5
#define H_PLACE		4

#define FX_IFACE	"xvixt0"
#define FX_PEER		"xvixt1"

static struct {
	struct xvi_demux_bpf *skel;
	struct fx_xsk x;
	struct bpf_object *echo, *count, *act, *place;
	int count_map;		/* the count handler's xvi_count_by_arg */
	int ncpus;
} env;

#pragma GCC diagnostic ignored "-Woverride-init"
#define AM4(...)	{ .l3 = FX_IP4, .dport = PORT, .payload = 48, .am = true, \
			  __VA_ARGS__ }
#define AMRAW(...)	{ .l3 = FX_RAW, .raw_tag = RAW_TAG, .payload = 48, .am = true, \
			  __VA_ARGS__ }

/* Load a sample handler the way xvi_ext__load does, and install it. */
static struct bpf_object *install(const char *file, __u32 slot, __u32 handler)
{
	char path[PATH_MAX], log[4096];
	struct xvi_ext_opts opts = { .sz = sizeof(opts), .log_buf = log, .log_size = sizeof(log) };
	struct bpf_program *prog;
	struct bpf_object *obj;
	__u32 key = slot * XVI_EXT_MAX_HANDLERS + handler;
	int fd;

	fx_ext_path(file, path, sizeof(path));
	obj = xvi_ext_open(bpf_map__fd(env.skel->maps.xvi_ext_ret), path, &opts, &prog);
	cr_assert_not_null(obj, "%s: %s", path, strerror(errno));
	cr_assert_eq(bpf_object__load(obj), 0, "%s rejected: %s", path, log);
	fd = bpf_program__fd(prog);
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_ext_progs), &key, &fd,
					 BPF_ANY), 0, "xvi_ext_progs[%u]: %s", key, strerror(errno));
	return obj;
}

static void add_tag(const struct xvi_tag *t, __u32 slot, __u32 flags)
{
	struct xvi_ep_value v = { .slot = slot, .flags = flags };

	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_endpoints), t, &v, 0),
		     0, "xvi_endpoints: %s", strerror(errno));
}

static void ext_setup(void)
{
	struct xvi_config cfg = { .mac = FX_DMAC, .flags = XVI_CFG_MAC };
	struct xvi_tag t4 = { .kind = XVI_TAG_UDP4, .port = htons(PORT) };
	struct xvi_tag tp = { .kind = XVI_TAG_UDP4, .port = htons(PORT_PROT) };
	struct xvi_tag tr = { .kind = XVI_TAG_RAW, .raw_tag = htonl(RAW_TAG) };
	__u32 zero = 0, slot, ifindex;
	int fd;

	fx_netns_veth(FX_IFACE, FX_PEER);
	env.ncpus = libbpf_num_possible_cpus();
	env.skel = xvi_demux_bpf__open_and_load();
	cr_assert_not_null(env.skel, "xvi_demux_bpf__open_and_load: %s", strerror(errno));
	fx_xsk_open(&env.x, FX_IFACE);
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_config), &zero, &cfg, 0),
		     0);
	inet_pton(AF_INET, FX_DST4, t4.addr);
	inet_pton(AF_INET, FX_DST4, tp.addr);
	add_tag(&t4, SLOT, 0);
	add_tag(&tr, SLOT_RAW, 0);
	add_tag(&tp, SLOT_PROT, XVI_EP_F_DEVMAP);
	fd = xsk_socket__fd(env.x.xsk);
	for (slot = SLOT; slot <= SLOT_RAW; slot += SLOT_RAW - SLOT)
		cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_xsks), &slot,
						 &fd, 0), 0);
	ifindex = if_nametoindex(FX_PEER);
	/* What `xdp-vi ext forward FX_IFACE FX_PEER` does: the one allowed target. */
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_ext_fwd_devs), &ifindex,
					 &ifindex, 0), 0, "xvi_ext_fwd_devs: %s", strerror(errno));
	slot = SLOT_PROT;
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_devs), &slot, &ifindex,
					 0), 0);
	/* What attach does: the handlers' return paths, one per action. */
	{
		const struct bpf_program *ret[XVI_EXT_RET_NR] = {
			[XVI_EXT_RET_DELIVER] = env.skel->progs.xvi_ext_ret_deliver,
			[XVI_EXT_RET_REPLY] = env.skel->progs.xvi_ext_ret_reply,
			[XVI_EXT_RET_FORWARD] = env.skel->progs.xvi_ext_ret_forward,
			[XVI_EXT_RET_PLACE] = env.skel->progs.xvi_ext_ret_place,
			[XVI_EXT_RET_DROP] = env.skel->progs.xvi_ext_ret_drop,
			[XVI_EXT_RET_PASS] = env.skel->progs.xvi_ext_ret_pass,
		};

		for (zero = 0; zero < XVI_EXT_RET_NR; zero++) {
			fd = bpf_program__fd(ret[zero]);
			cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_ext_ret),
							 &zero, &fd, 0), 0, "xvi_ext_ret[%u]: %s",
				     zero, strerror(errno));
		}
	}

	env.echo = install("../ext/echo.bpf.o", SLOT, H_ECHO);
	env.count = install("../ext/count.bpf.o", SLOT, H_COUNT);
	env.act = install("ext_act.bpf.o", SLOT, H_ACT);
	bpf_object__close(install("../ext/count.bpf.o", SLOT_RAW, H_COUNT));
	bpf_object__close(install("../ext/echo.bpf.o", SLOT_PROT, H_ECHO));
	env.place = install("../ext/place.bpf.o", SLOT, H_PLACE);
	env.count_map = bpf_map__fd(bpf_object__find_map_by_name(env.count, "xvi_count_by_arg"));
	cr_assert_geq(env.count_map, 0);
}

static void ext_teardown(void)
{
	bpf_object__close(env.echo);
	bpf_object__close(env.count);
	bpf_object__close(env.act);
	bpf_object__close(env.place);
	fx_xsk_close(&env.x);
	xvi_demux_bpf__destroy(env.skel);
	memset(&env, 0, sizeof(env));
}

struct run {
	__u32 verdict;
	__u8 out[sizeof(struct xvi_rx_meta) + 2048];
	__u32 out_len;
	__u32 meta_len;
	struct xvi_ep_counters d;	/* the slot's counter deltas */
	struct xvi_ext_counters hd[XVI_EXT_MAX_HANDLERS];	/* its handlers' deltas */
	struct xvi_global_counters g;	/* global ext_stray after the run */
};

/* Handler @h of @slot's counters, summed over CPUs. */
static void read_handler(__u32 slot, __u32 h, struct xvi_ext_counters *out)
{
	struct xvi_ext_counters c[env.ncpus];
	__u32 key = slot * XVI_EXT_MAX_HANDLERS + h;
	size_t w;
	int cpu;

	cr_assert_eq(bpf_map_lookup_elem(bpf_map__fd(env.skel->maps.xvi_ext_stats), &key, c), 0,
		     "xvi_ext_stats[%u]: %s", key, strerror(errno));
	memset(out, 0, sizeof(*out));
	for (cpu = 0; cpu < env.ncpus; cpu++)
		for (w = 0; w < sizeof(*out) / 8; w++)
			((__u64 *)out)[w] += ((__u64 *)&c[cpu])[w];
}

static void run_prog(int prog_fd, const struct fx_frame *f, __u32 slot, struct run *r)
{
	struct xdp_md ctx_in = { .data_end = f->len }, ctx_out = {};
	struct xvi_ep_counters before, after;
	struct xvi_ext_counters hb[XVI_EXT_MAX_HANDLERS], ha;
	struct xvi_global_counters g[env.ncpus];
	__u32 zero = 0, h;
	int cpu;
	size_t w;

	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = f->buf, .data_size_in = f->len,
		    .data_out = r->out, .data_size_out = sizeof(r->out), .ctx_in = &ctx_in,
		    .ctx_size_in = sizeof(ctx_in), .ctx_out = &ctx_out,
		    .ctx_size_out = sizeof(ctx_out), .repeat = 1);

	fx_read_slot(bpf_map__fd(env.skel->maps.xvi_ep_stats), slot, &before);
	for (h = 0; h < XVI_EXT_MAX_HANDLERS; h++)
		read_handler(slot, h, &hb[h]);
	cr_assert_eq(bpf_prog_test_run_opts(prog_fd, &opts), 0, "BPF_PROG_RUN: %s",
		     strerror(errno));
	fx_read_slot(bpf_map__fd(env.skel->maps.xvi_ep_stats), slot, &after);
	for (h = 0; h < XVI_EXT_MAX_HANDLERS; h++) {
		read_handler(slot, h, &ha);
		for (w = 0; w < sizeof(ha) / 8; w++)
			((__u64 *)&r->hd[h])[w] = ((__u64 *)&ha)[w] - ((__u64 *)&hb[h])[w];
	}
	r->verdict = opts.retval;
	r->out_len = opts.data_size_out;
	r->meta_len = ctx_out.data - ctx_out.data_meta;
	for (w = 0; w < sizeof(before) / 8; w++)
		((__u64 *)&r->d)[w] = ((__u64 *)&after)[w] - ((__u64 *)&before)[w];
	memset(&r->g, 0, sizeof(r->g));
	cr_assert_eq(bpf_map_lookup_elem(bpf_map__fd(env.skel->maps.xvi_global_stats), &zero,
					 g), 0);
	for (cpu = 0; cpu < env.ncpus; cpu++)
		r->g.ext_stray += g[cpu].ext_stray;
}

static void run_demux(const struct fx_frame_spec *spec, __u32 slot, struct fx_frame *f,
		      struct run *r)
{
	cr_assert_eq(fx_frame_build(spec, f), 0);
	run_prog(bpf_program__fd(env.skel->progs.xvi_demux), f, slot, r);
}

/* Delivered to @slot's socket as an ordinary message: metadata and frame intact. */
static void expect_delivered(const struct run *r, const struct fx_frame *f, __u32 slot)
{
	struct xvi_rx_meta m;

	cr_assert_eq(r->verdict, XDP_REDIRECT, "verdict %u, expected XDP_REDIRECT", r->verdict);
	cr_expect_eq(r->d.rx_frames, 1, "rx_frames moved by %llu",
		     (unsigned long long)r->d.rx_frames);
	cr_assert_eq(r->meta_len, sizeof(m), "%u metadata bytes, expected %zu", r->meta_len,
		     sizeof(m));
	memcpy(&m, r->out, sizeof(m));
	cr_expect_eq(m.magic, XVI_RX_META_MAGIC);
	cr_expect_eq(m.slot, slot, "meta slot %u, expected %u", m.slot, slot);
	cr_expect_eq(m.payload_off, f->payload_off);
	cr_expect_eq(m.payload_len, f->payload_len);
	cr_expect_eq(r->out_len, sizeof(m) + f->len);
	cr_expect_eq(memcmp(r->out + sizeof(m), f->buf, f->len), 0, "frame bytes changed");
}

static void expect_no_ext(const struct run *r)
{
	cr_expect_eq(r->d.ext_msgs + r->d.ext_missing + r->d.ext_bad_index +
		     r->d.ext_bad_version + r->d.ext_delivered, 0,
		     "ext counters moved: msgs %llu missing %llu bad_index %llu "
		     "bad_version %llu delivered %llu", (unsigned long long)r->d.ext_msgs,
		     (unsigned long long)r->d.ext_missing, (unsigned long long)r->d.ext_bad_index,
		     (unsigned long long)r->d.ext_bad_version,
		     (unsigned long long)r->d.ext_delivered);
}

/*
 * Only handler @h's counters moved: runs by @runs and act[@act] by one
 * (@act < 0: no action); every other index of the slot stayed.
 */
static void expect_handler(const struct run *r, __u32 h, __u64 runs, int act)
{
	__u32 i;
	int a;

	for (i = 0; i < XVI_EXT_MAX_HANDLERS; i++) {
		const struct xvi_ext_counters *c = &r->hd[i];

		cr_expect_eq(c->runs, i == h ? runs : 0, "handler %u: runs moved by %llu", i,
			     (unsigned long long)c->runs);
		for (a = 0; a < XVI_EXT_ACT_NR; a++)
			cr_expect_eq(c->act[a], i == h && a == act, "handler %u: action %d moved "
				     "by %llu", i, a, (unsigned long long)c->act[a]);
	}
}

TestSuite(ext, .init = ext_setup, .fini = ext_teardown);

/* The echo handler answers: XDP_TX, addresses and ports swapped, payload as sent. */
Test(ext, echo_replies)
{
	const struct fx_frame_spec s = AM4(.am_handler = H_ECHO);
	struct fx_frame f;
	struct run r;
	const __u8 *o;
	struct iphdr *ip_in, *ip_out;
	struct udphdr *u_in, *u_out;

	run_demux(&s, SLOT, &f, &r);
	cr_assert_eq(r.verdict, XDP_TX, "verdict %u, expected XDP_TX", r.verdict);
	cr_expect_eq(r.d.ext_msgs, 1);
	cr_expect_eq(r.d.ext_missing, 0);
	cr_expect_eq(r.d.rx_frames, 0, "a reply must not reach the socket");
	expect_handler(&r, H_ECHO, 1, XVI_EXT_ACT_REPLY);
	o = r.out + r.meta_len;
	cr_assert_eq(r.out_len - r.meta_len, f.len);
	cr_expect_eq(memcmp(o, f.buf + 6, 6), 0, "destination MAC is not the sender's");
	cr_expect_eq(memcmp(o + 6, f.buf, 6), 0, "source MAC is not the station's");
	ip_in = (void *)(f.buf + f.l3_off);
	ip_out = (void *)(o + f.l3_off);
	cr_expect_eq(ip_out->saddr, ip_in->daddr);
	cr_expect_eq(ip_out->daddr, ip_in->saddr);
	cr_expect_eq(ip_out->check, ip_in->check, "swapped addresses keep the checksum");
	u_in = (void *)(f.buf + f.l4_off);
	u_out = (void *)(o + f.l4_off);
	cr_expect_eq(u_out->source, u_in->dest);
	cr_expect_eq(u_out->dest, u_in->source);
	cr_expect_eq(u_out->check, u_in->check);
	cr_expect_eq(memcmp(o + f.payload_off, f.buf + f.payload_off, f.payload_len), 0,
		     "payload changed");
	fx_frame_free(&f);
}

/* On a local link, so that a sending kernel's partial UDP checksum is accepted. */
static void set_local_link(void)
{
	struct xvi_config cfg = { .mac = FX_DMAC, .flags = XVI_CFG_MAC | XVI_CFG_LOCAL_LINK };
	__u32 zero = 0;

	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_config), &zero, &cfg, 0),
		     0);
}

/* A partial checksum cannot go back as it came: IPv4 replies carry none. */
Test(ext, echo_partial_csum4_zeroed)
{
	const struct fx_frame_spec s = AM4(.am_handler = H_ECHO, .partial_l4_csum = true);
	struct udphdr *u_out;
	struct fx_frame f;
	struct run r;

	set_local_link();
	run_demux(&s, SLOT, &f, &r);
	cr_assert_eq(r.verdict, XDP_TX, "verdict %u, expected XDP_TX", r.verdict);
	u_out = (void *)(r.out + r.meta_len + f.l4_off);
	cr_expect_eq(u_out->check, 0, "UDP checksum %#x, expected none (0)", u_out->check);
	fx_frame_free(&f);
}

/* ... and IPv6 messages with one go to the endpoint instead of back. */
Test(ext, echo_partial_csum6_delivered)
{
	const struct fx_frame_spec s = { .l3 = FX_IP6, .dport = PORT, .payload = 48, .am = true,
					 .am_handler = H_ECHO, .partial_l4_csum = true };
	struct xvi_tag t6 = { .kind = XVI_TAG_UDP6, .port = htons(PORT) };
	struct fx_frame f;
	struct run r;

	inet_pton(AF_INET6, FX_DST6, t6.addr);
	add_tag(&t6, SLOT, 0);
	set_local_link();
	run_demux(&s, SLOT, &f, &r);
	expect_delivered(&r, &f, SLOT);
	cr_expect_eq(r.d.ext_msgs, 1);
	cr_expect_eq(r.d.ext_delivered, 1);
	fx_frame_free(&f);
}

/* The count handler counts, then hands the message to the socket unchanged. */
Test(ext, count_then_deliver)
{
	const struct fx_frame_spec s = AM4(.am_handler = H_COUNT, .am_arg0 = 7);
	struct { __u64 msgs, bytes; } c[env.ncpus];
	__u64 msgs = 0, bytes = 0;
	__u32 key = 7;
	struct fx_frame f;
	struct run r;
	int cpu;

	run_demux(&s, SLOT, &f, &r);
	expect_delivered(&r, &f, SLOT);
	cr_expect_eq(r.d.ext_msgs, 1);
	cr_expect_eq(r.d.ext_delivered, 1);
	cr_expect_eq(r.d.ext_missing, 0);
	expect_handler(&r, H_COUNT, 1, XVI_EXT_ACT_DELIVER);
	cr_assert_eq(bpf_map_lookup_elem(env.count_map, &key, c), 0);
	for (cpu = 0; cpu < env.ncpus; cpu++) {
		msgs += c[cpu].msgs;
		bytes += c[cpu].bytes;
	}
	cr_expect_eq(msgs, 1, "the handler counted %llu messages", (unsigned long long)msgs);
	cr_expect_eq(bytes, f.payload_len);
	fx_frame_free(&f);
}

/* Raw xvi frames carry active messages too. */
Test(ext, raw_count_then_deliver)
{
	const struct fx_frame_spec s = AMRAW(.am_handler = H_COUNT);
	struct fx_frame f;
	struct run r;

	run_demux(&s, SLOT_RAW, &f, &r);
	expect_delivered(&r, &f, SLOT_RAW);
	cr_expect_eq(r.d.ext_msgs, 1);
	cr_expect_eq(r.d.ext_delivered, 1);
	fx_frame_free(&f);
}

/*
 * Messages that no handler takes: each is delivered to its endpoint as an
 * ordinary message, frame and metadata as without extensions, and the
 * reason counted (or, for what is no active message, nothing counted).
 */
struct ordinary_case {
	const char *name;
	struct fx_frame_spec f;
	__u32 slot;
	bool unload_echo;		/* unload slot 3's echo handler first */
	struct xvi_ep_counters d;	/* expected ext_* deltas */
	__u32 h;			/* the index whose counter moves: */
	int hact;			/* XVI_EXT_ACT_x + 1, 0 for none */
};

static const struct ordinary_case ordinary_cases[] = {
	/* An index past the table. */
	{ "unknown_index", AM4(.am_handler = XVI_EXT_MAX_HANDLERS), SLOT,
	  .d = { .ext_bad_index = 1 } },
	/* No handler loaded at the index. */
	{ "missing_handler", AM4(.am_handler = H_NONE), SLOT,
	  .d = { .ext_msgs = 1, .ext_missing = 1 }, H_NONE, XVI_EXT_ACT_MISS + 1 },
	/* An unloaded handler is a missing one. */
	{ "unloaded_handler", AM4(.am_handler = H_ECHO), SLOT, .unload_echo = true,
	  .d = { .ext_msgs = 1, .ext_missing = 1 }, H_ECHO, XVI_EXT_ACT_MISS + 1 },
	/* Another endpoint's handler never runs: slot 9 has none at index 1. */
	{ "other_endpoints_handler", AMRAW(.am_handler = H_ECHO), SLOT_RAW,
	  .d = { .ext_msgs = 1, .ext_missing = 1 }, H_ECHO, XVI_EXT_ACT_MISS + 1 },
	/* No active message: too short for the header, or another magic. */
	{ "short_payload", AM4(.am_handler = H_ECHO, .payload = XVI_AM_HDR_LEN - 1), SLOT },
	{ "wrong_magic", AM4(.am_handler = H_ECHO, .am_magic = XVI_AM_MAGIC ^ 1), SLOT },
	{ "raw_wrong_magic", AMRAW(.am_handler = H_COUNT, .am_magic = 0x12345678), SLOT_RAW },
	/* The magic with a version this datapath does not know. */
	{ "unknown_version", AM4(.am_handler = H_ECHO, .am_version = 2), SLOT,
	  .d = { .ext_bad_version = 1 }, H_ECHO, XVI_EXT_ACT_ERROR + 1 },
};

#define N_ORDINARY	(sizeof(ordinary_cases) / sizeof(ordinary_cases[0]))

ParameterizedTestParameters(ext, ordinary)
{
	static unsigned int idx[N_ORDINARY];

	return fx_case_indices(idx, N_ORDINARY);
}

ParameterizedTest(unsigned int *i, ext, ordinary)
{
	const struct ordinary_case *c = &ordinary_cases[*i];
	__u32 key = SLOT * XVI_EXT_MAX_HANDLERS + H_ECHO;
	struct fx_frame f;
	struct run r;

	cr_log_info("case %s", c->name);
	if (c->unload_echo)
		cr_assert_eq(bpf_map_delete_elem(bpf_map__fd(env.skel->maps.xvi_ext_progs), &key),
			     0);
	run_demux(&c->f, c->slot, &f, &r);
	expect_delivered(&r, &f, c->slot);
#define EXT_EQ(fld) cr_expect_eq(r.d.fld, c->d.fld, "%s: " #fld " moved by %llu, expected %llu", \
				 c->name, (unsigned long long)r.d.fld, \
				 (unsigned long long)c->d.fld)
	EXT_EQ(ext_msgs);
	EXT_EQ(ext_missing);
	EXT_EQ(ext_bad_index);
	EXT_EQ(ext_bad_version);
	EXT_EQ(ext_delivered);
	expect_handler(&r, c->h, 0, c->hact - 1);
	fx_frame_free(&f);
}

/* A protected endpoint runs no handler: its frames go to its veth as ever. */
Test(ext, protected_runs_no_handler)
{
	const struct fx_frame_spec s = AM4(.am_handler = H_ECHO, .dport = PORT_PROT);
	struct fx_frame f;
	struct run r;

	run_demux(&s, SLOT_PROT, &f, &r);
	cr_expect_eq(r.verdict, XDP_REDIRECT, "verdict %u", r.verdict);
	cr_expect_eq(r.d.rx_frames, 1);
	expect_no_ext(&r);
	fx_frame_free(&f);
}

/* The delivery path entered without a dispatch: dropped and counted. */
Test(ext, stray_delivery_dropped)
{
	const struct fx_frame_spec s = AM4(.am_handler = H_COUNT);
	struct fx_frame f;
	struct run r;

	cr_assert_eq(fx_frame_build(&s, &f), 0);
	run_prog(bpf_program__fd(env.skel->progs.xvi_ext_ret_deliver), &f, SLOT, &r);
	cr_expect_eq(r.verdict, XDP_DROP, "verdict %u", r.verdict);
	cr_expect_eq(r.g.ext_stray, 1);
	cr_expect_eq(r.d.rx_frames, 0);
	fx_frame_free(&f);
}

/*
 * Each action of xvi_ext.h, taken by the ext_act handler as arg[0] says:
 * the verdict it carries out, and the one counter of the handler it moves.
 */
struct action_case {
	const char *name;
	__u32 arg0;
	__u32 verdict;
	int act;			/* XVI_EXT_ACT_x, -1: none (its own verdict) */
};

static const struct action_case action_cases[] = {
	{ "deliver", XVI_EXT_RET_DELIVER, XDP_REDIRECT, XVI_EXT_ACT_DELIVER },
	{ "reply", XVI_EXT_RET_REPLY, XDP_TX, XVI_EXT_ACT_REPLY },
	{ "forward", XVI_EXT_RET_FORWARD, XDP_REDIRECT, XVI_EXT_ACT_FORWARD },
	{ "place", XVI_EXT_RET_PLACE, XDP_DROP, XVI_EXT_ACT_PLACE },
	{ "drop", XVI_EXT_RET_DROP, XDP_DROP, XVI_EXT_ACT_DROP },
	{ "pass", XVI_EXT_RET_PASS, XDP_PASS, XVI_EXT_ACT_PASS },
	{ "own_verdict", 100, XDP_DROP, -1 },
};

#define N_ACTIONS	(sizeof(action_cases) / sizeof(action_cases[0]))

ParameterizedTestParameters(ext, actions)
{
	static unsigned int idx[N_ACTIONS];

	return fx_case_indices(idx, N_ACTIONS);
}

ParameterizedTest(unsigned int *i, ext, actions)
{
	const struct action_case *c = &action_cases[*i];
	const struct fx_frame_spec s = AM4(.am_handler = H_ACT, .am_arg0 = c->arg0,
					   .am_arg1 = if_nametoindex(FX_PEER));
	struct fx_frame f;
	struct run r;

	cr_log_info("case %s", c->name);
	run_demux(&s, SLOT, &f, &r);
	cr_expect_eq(r.verdict, c->verdict, "%s: verdict %u, expected %u", c->name, r.verdict,
		     c->verdict);
	cr_expect_eq(r.d.ext_msgs, 1);
	cr_expect_eq(r.d.ext_delivered, c->act == XVI_EXT_ACT_DELIVER);
	cr_expect_eq(r.d.rx_frames, c->act == XVI_EXT_ACT_DELIVER);
	/* runs counts the handler's runs, whatever it ended with. */
	expect_handler(&r, H_ACT, 1, c->act);
	fx_frame_free(&f);
}

/* A return path entered outside a dispatch: dropped, no handler counted. */
Test(ext, stray_return_dropped)
{
	const struct fx_frame_spec s = AM4(.am_handler = H_ACT);
	const struct bpf_program *paths[] = {
		env.skel->progs.xvi_ext_ret_reply, env.skel->progs.xvi_ext_ret_forward,
	};
	struct fx_frame f;
	struct run r;
	size_t i;

	cr_assert_eq(fx_frame_build(&s, &f), 0);
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		run_prog(bpf_program__fd(paths[i]), &f, SLOT, &r);
		cr_expect_eq(r.verdict, XDP_DROP, "%s: verdict %u", bpf_program__name(paths[i]),
			     r.verdict);
		cr_expect_eq(r.g.ext_stray, i + 1, "%s: ext_stray %llu",
			     bpf_program__name(paths[i]), (unsigned long long)r.g.ext_stray);
		expect_handler(&r, H_ACT, 0, -1);
	}
	fx_frame_free(&f);
}

/* ---- forward (xvi_ext_forward) --------------------------------------------- */

/* ext_act forwarding the message to interface @ifindex. */
static void run_forward(__u32 ifindex, struct fx_frame *f, struct run *r)
{
	const struct fx_frame_spec s = AM4(.am_handler = H_ACT, .am_arg0 = XVI_EXT_RET_FORWARD,
					   .am_arg1 = ifindex);

	run_demux(&s, SLOT, f, r);
}

/*
 * To an allowed interface: XDP_REDIRECT (the target is the one of the
 * datapath's map), counted as a forward, the frame as the handler left
 * it and no metadata on it; the endpoint's socket gets nothing.
 */
Test(ext, forward_allowed)
{
	struct fx_frame f;
	struct run r;

	run_forward(if_nametoindex(FX_PEER), &f, &r);
	cr_assert_eq(r.verdict, XDP_REDIRECT, "verdict %u, expected XDP_REDIRECT", r.verdict);
	expect_handler(&r, H_ACT, 1, XVI_EXT_ACT_FORWARD);
	cr_expect_eq(r.meta_len, 0, "%u metadata bytes left on a forwarded frame", r.meta_len);
	cr_expect_eq(r.out_len, f.len);
	cr_expect_eq(memcmp(r.out + r.meta_len, f.buf, f.len), 0, "frame bytes changed");
	cr_expect_eq(r.d.ext_msgs, 1);
	cr_expect_eq(r.d.ext_delivered, 0);
	cr_expect_eq(r.d.rx_frames, 0, "a forwarded message reached the socket");
	fx_frame_free(&f);
}

/*
 * Refused: a target root did not allow (the interface the message came in
 * on, loopback, an index no device has, none at all): an error for the
 * handler, never a forward, and the message delivered to its endpoint,
 * frame and metadata as without a handler.
 */
Test(ext, forward_not_allowed_delivered)
{
	const __u32 targets[] = { if_nametoindex(FX_IFACE), 1, 0x7fffffff, 0 };
	struct fx_frame f;
	struct run r;
	size_t i;
	__u32 h;
	int a;

	for (i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		cr_log_info("target %u", targets[i]);
		run_forward(targets[i], &f, &r);
		expect_delivered(&r, &f, SLOT);
		cr_expect_eq(r.d.ext_msgs, 1);
		cr_expect_eq(r.d.ext_delivered, 1, "target %u: not delivered", targets[i]);
		for (h = 0; h < XVI_EXT_MAX_HANDLERS; h++) {
			cr_expect_eq(r.hd[h].runs, h == H_ACT, "handler %u: runs %llu", h,
				     (unsigned long long)r.hd[h].runs);
			for (a = 0; a < XVI_EXT_ACT_NR; a++)
				cr_expect_eq(r.hd[h].act[a], h == H_ACT && (a == XVI_EXT_ACT_ERROR ||
									  a == XVI_EXT_ACT_DELIVER),
					     "target %u: handler %u action %d moved by %llu",
					     targets[i], h, a, (unsigned long long)r.hd[h].act[a]);
		}
		fx_frame_free(&f);
	}
}

/*
 * A handler that changed the frame's size: forwarded as it is to an
 * allowed target; refused, it cannot go to the socket with the dispatch's
 * offsets: dropped, an error and a drop for the handler.
 */
Test(ext, forward_grown_frame)
{
	struct fx_frame_spec s = AM4(.am_handler = H_ACT, .am_arg0 = 101,
				     .am_arg1 = if_nametoindex(FX_PEER));
	struct fx_frame f;
	struct run r;

	run_demux(&s, SLOT, &f, &r);
	cr_assert_eq(r.verdict, XDP_REDIRECT, "allowed: verdict %u", r.verdict);
	cr_expect_eq(r.out_len, f.len + 4, "allowed: %u bytes out", r.out_len);
	expect_handler(&r, H_ACT, 1, XVI_EXT_ACT_FORWARD);
	fx_frame_free(&f);

	s.am_arg1 = 1;
	run_demux(&s, SLOT, &f, &r);
	cr_assert_eq(r.verdict, XDP_DROP, "refused: verdict %u", r.verdict);
	cr_expect_eq(r.d.rx_frames + r.d.ext_delivered, 0, "refused: reached the socket");
	cr_expect_eq(r.hd[H_ACT].act[XVI_EXT_ACT_ERROR], 1);
	cr_expect_eq(r.hd[H_ACT].act[XVI_EXT_ACT_DROP], 1);
	cr_expect_eq(r.hd[H_ACT].act[XVI_EXT_ACT_FORWARD] + r.hd[H_ACT].act[XVI_EXT_ACT_DELIVER],
		     0);
	fx_frame_free(&f);
}

/*
 * Forwards to the allowed target that are not a request of
 * xvi_ext_forward's: a handler that redirected by itself and entered the
 * forward path with no request (ext_act 102), and a request with a wrong
 * magic (103).  Both refused: delivered, an error, never a forward.
 */
Test(ext, forward_not_requested_refused)
{
	const __u32 acts[] = { 102, 103 };
	struct fx_frame_spec s = AM4(.am_handler = H_ACT, .am_arg1 = if_nametoindex(FX_PEER));
	struct fx_frame f;
	struct run r;
	size_t i;

	for (i = 0; i < sizeof(acts) / sizeof(acts[0]); i++) {
		cr_log_info("ext_act %u", acts[i]);
		s.am_arg0 = acts[i];
		run_demux(&s, SLOT, &f, &r);
		expect_delivered(&r, &f, SLOT);
		cr_expect_eq(r.hd[H_ACT].act[XVI_EXT_ACT_FORWARD], 0, "ext_act %u: forwarded",
			     acts[i]);
		cr_expect_eq(r.hd[H_ACT].act[XVI_EXT_ACT_ERROR], 1, "ext_act %u: no error",
			     acts[i]);
		cr_expect_eq(r.hd[H_ACT].act[XVI_EXT_ACT_DELIVER], 1, "ext_act %u: not delivered",
			     acts[i]);
		fx_frame_free(&f);
	}
}

/* An allowed target taken away again is refused from then on. */
Test(ext, forward_target_removed)
{
	__u32 peer = if_nametoindex(FX_PEER);
	struct fx_frame f;
	struct run r;

	cr_assert_eq(bpf_map_delete_elem(bpf_map__fd(env.skel->maps.xvi_ext_fwd_devs), &peer), 0);
	run_forward(peer, &f, &r);
	expect_delivered(&r, &f, SLOT);
	cr_expect_eq(r.hd[H_ACT].act[XVI_EXT_ACT_FORWARD], 0);
	cr_expect_eq(r.hd[H_ACT].act[XVI_EXT_ACT_ERROR], 1);
	fx_frame_free(&f);
}

/* ---- trace events (XVI_CFG_TRACE) ------------------------------------------ */

struct taken {
	int n;
	struct xvi_trace_event ev;	/* the last one */
};

static int take_event(void *ctx, void *data, size_t size)
{
	struct taken *t = ctx;

	cr_assert_eq(size, sizeof(t->ev), "event of %zu bytes, expected %zu", size,
		     sizeof(t->ev));
	memcpy(&t->ev, data, sizeof(t->ev));
	t->n++;
	return 0;
}

static void set_trace(bool on)
{
	struct xvi_config cfg = { .mac = FX_DMAC, .flags = XVI_CFG_MAC };
	__u32 zero = 0;

	if (on)
		cfg.flags |= XVI_CFG_TRACE;
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(env.skel->maps.xvi_config), &zero, &cfg, 0),
		     0);
}

/* Run @s through the datapath and take what the ring buffer got. */
static void run_traced(const struct fx_frame_spec *s, __u32 slot, struct fx_frame *f,
		       struct run *r, struct taken *t)
{
	struct ring_buffer *rb;

	rb = ring_buffer__new(bpf_map__fd(env.skel->maps.xvi_trace), take_event, t, NULL);
	cr_assert_not_null(rb, "ring_buffer__new: %s", strerror(errno));
	memset(t, 0, sizeof(*t));
	run_demux(s, slot, f, r);
	cr_assert_geq(ring_buffer__consume(rb), 0);
	ring_buffer__free(rb);
}

/* Tracing off: the ring buffer gets nothing, whatever the message's fate. */
Test(ext, trace_off_no_event)
{
	const struct fx_frame_spec specs[] = {
		AM4(.am_handler = H_ECHO), AM4(.am_handler = H_COUNT),
		AM4(.am_handler = H_NONE), AM4(.am_handler = H_ECHO, .am_version = 2),
	};
	struct fx_frame f;
	struct taken t;
	struct run r;
	size_t i;

	set_trace(false);
	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		run_traced(&specs[i], SLOT, &f, &r, &t);
		cr_expect_eq(t.n, 0, "message %zu: %d events with tracing off", i, t.n);
		fx_frame_free(&f);
	}
}

/*
 * Tracing on: one event per message, naming its endpoint, index and fate,
 * with the frame's length and first bytes as they left (a reply: swapped).
 */
struct trace_case {
	const char *name;
	struct fx_frame_spec f;
	__u16 handler;
	__u8 action;
	bool ran;			/* a handler ran: dispatch before action */
	bool fwd_peer;			/* arg[1] = FX_PEER's ifindex (known at run time) */
};

static const struct trace_case trace_cases[] = {
	{ "reply", AM4(.am_handler = H_ECHO), H_ECHO, XVI_EXT_ACT_REPLY, true },
	{ "deliver", AM4(.am_handler = H_COUNT), H_COUNT, XVI_EXT_ACT_DELIVER, true },
	{ "drop", AM4(.am_handler = H_ACT, .am_arg0 = XVI_EXT_RET_DROP), H_ACT,
	  XVI_EXT_ACT_DROP, true },
	{ "forward", AM4(.am_handler = H_ACT, .am_arg0 = XVI_EXT_RET_FORWARD, .am_arg1 = 0),
	  H_ACT, XVI_EXT_ACT_FORWARD, true, .fwd_peer = true },
	{ "forward_refused", AM4(.am_handler = H_ACT, .am_arg0 = XVI_EXT_RET_FORWARD,
				 .am_arg1 = 1), H_ACT, XVI_EXT_ACT_ERROR, true },
	{ "miss", AM4(.am_handler = H_NONE), H_NONE, XVI_EXT_ACT_MISS, false },
	{ "error", AM4(.am_handler = H_ECHO, .am_version = 2), H_ECHO, XVI_EXT_ACT_ERROR,
	  false },
	{ "long_frame", AM4(.am_handler = H_COUNT, .payload = 1000), H_COUNT,
	  XVI_EXT_ACT_DELIVER, true },
};

#define N_TRACE		(sizeof(trace_cases) / sizeof(trace_cases[0]))

ParameterizedTestParameters(ext, trace_events)
{
	static unsigned int idx[N_TRACE];

	return fx_case_indices(idx, N_TRACE);
}

ParameterizedTest(unsigned int *i, ext, trace_events)
{
	const struct trace_case *c = &trace_cases[*i];
	const struct xvi_trace_event *e;
	const __u8 *out;
	struct fx_frame f;
	struct taken t;
	struct run r;
	__u32 cap;

	struct fx_frame_spec spec = c->f;

	cr_log_info("case %s", c->name);
	if (c->fwd_peer)
		spec.am_arg1 = if_nametoindex(FX_PEER);
	set_trace(true);
	run_traced(&spec, SLOT, &f, &r, &t);
	cr_assert_eq(t.n, 1, "%s: %d events, expected 1", c->name, t.n);
	e = &t.ev;
	cr_expect_eq(e->slot, SLOT, "%s: slot %u", c->name, e->slot);
	cr_expect_eq(e->handler, c->handler, "%s: handler %u", c->name, e->handler);
	cr_expect_eq(e->action, c->action, "%s: action %u, expected %u", c->name, e->action,
		     c->action);
	cr_expect_eq(e->len, f.len, "%s: len %u, expected %u", c->name, e->len, f.len);
	cap = f.len < XVI_TRACE_SNAP ? f.len : XVI_TRACE_SNAP;
	cr_expect_eq(e->cap_len, cap, "%s: cap_len %u, expected %u", c->name, e->cap_len, cap);
	/* The frame as it left: after the metadata in the output. */
	out = c->action == XVI_EXT_ACT_REPLY ? r.out + r.meta_len : f.buf;
	cr_expect_eq(memcmp(e->data, out, cap), 0, "%s: captured bytes differ", c->name);
	cr_expect_neq(e->end_ns, 0);
	if (c->ran)
		cr_expect_leq(e->start_ns, e->end_ns, "%s: dispatch after action", c->name);
	else
		cr_expect_eq(e->start_ns, e->end_ns, "%s: no run, yet a duration", c->name);
	fx_frame_free(&f);
}

/* A full ring buffer: the event is lost and counted, the message goes on. */
Test(ext, trace_full_ring_counts_lost)
{
	const struct fx_frame_spec s = AM4(.am_handler = H_COUNT);
	const __u32 n = XVI_TRACE_RING_SIZE / sizeof(struct xvi_trace_event) + 200;
	struct xvi_global_counters g[env.ncpus];
	struct ring_buffer *rb;
	__u64 lost = 0;
	struct fx_frame f;
	struct taken t = {};
	struct run r;
	__u32 i, zero = 0;
	int cpu;

	set_trace(true);
	cr_assert_eq(fx_frame_build(&s, &f), 0);
	for (i = 0; i < n; i++) {
		run_prog(bpf_program__fd(env.skel->progs.xvi_demux), &f, SLOT, &r);
		cr_assert_eq(r.verdict, XDP_REDIRECT, "message %u: verdict %u", i, r.verdict);
	}
	rb = ring_buffer__new(bpf_map__fd(env.skel->maps.xvi_trace), take_event, &t, NULL);
	cr_assert_not_null(rb);
	cr_assert_geq(ring_buffer__consume(rb), 0);
	ring_buffer__free(rb);
	cr_assert_eq(bpf_map_lookup_elem(bpf_map__fd(env.skel->maps.xvi_global_stats), &zero,
					 g), 0);
	for (cpu = 0; cpu < env.ncpus; cpu++)
		lost += g[cpu].trace_lost;
	cr_expect_gt(lost, 0, "nothing lost of %u events into a %u-byte ring", n,
		     XVI_TRACE_RING_SIZE);
	cr_expect_eq(t.n + lost, n, "%d taken + %llu lost, expected %u", t.n,
		     (unsigned long long)lost, n);
	fx_frame_free(&f);
}

/* ---- direct placement (examples/ext/place.bpf.c) ------------------------ */

/* The byte at @off of a transfer: a pattern no two nearby offsets share. */
static __u8 place_byte(__u32 off)
{
	return (off * 7 + (off >> 8)) & 0xff;
}

/* The placement handler on a message for [@off, @off + @len) of @total bytes. */
static void run_place(__u32 off, __u32 total, __u32 len, struct fx_frame *f, struct run *r)
{
	/* No UDP checksum (IPv4 allows it): the arguments are written after. */
	const struct fx_frame_spec s = AM4(.am_handler = H_PLACE, .payload = XVI_AM_HDR_LEN + len,
					   .zero_l4_csum = true);
	struct xvi_am_hdr *am;
	__u32 i;

	cr_assert_eq(fx_frame_build(&s, f), 0);
	am = (void *)(f->buf + f->payload_off);
	am->arg[0] = htonl(off);
	am->arg[1] = htonl(total);
	for (i = 0; i < len; i++)
		f->buf[f->payload_off + XVI_AM_HDR_LEN + i] = place_byte(off + i);
	run_prog(bpf_program__fd(env.skel->progs.xvi_demux), f, SLOT, r);
}

static int place_map(const char *name)
{
	int fd = bpf_object__find_map_fd_by_name(env.place, name);

	cr_assert_geq(fd, 0, "no map %s", name);
	return fd;
}

static struct xvi_place_state place_state(void)
{
	struct xvi_place_state st;
	__u32 zero = 0;

	cr_assert_eq(bpf_map_lookup_elem(place_map(XVI_PLACE_STATE_MAP), &zero, &st), 0);
	return st;
}

/* Chunk @idx holds the transfer's bytes from @idx's offset, @len of them. */
static void expect_placed(__u32 idx, __u32 len)
{
	struct xvi_place_chunk c;
	__u64 got;
	__u32 i;

	cr_assert_eq(bpf_map_lookup_elem(place_map(XVI_PLACE_REGION_MAP), &idx, &c), 0);
	for (i = 0; i < len; i++)
		cr_assert_eq(c.b[i], place_byte(idx * XVI_PLACE_CHUNK + i),
			     "chunk %u byte %u: %u", idx, i, c.b[i]);
	cr_assert_eq(bpf_map_lookup_elem(place_map(XVI_PLACE_GOT_MAP), &idx, &got), 0);
	cr_expect_eq(got, 1, "chunk %u not marked placed", idx);
}

static int place_event_cb(void *ctx, void *data, size_t size)
{
	struct xvi_place_event *ev = data;

	cr_expect_eq(size, sizeof(*ev));
	*(struct xvi_place_event *)ctx = *ev;
	return 0;
}

/* How many completion events are waiting; the last one in *ev. */
static int place_events(struct xvi_place_event *ev)
{
	struct ring_buffer *rb = ring_buffer__new(place_map(XVI_PLACE_EVENTS_MAP),
						  place_event_cb, ev, NULL);
	int n;

	cr_assert_not_null(rb);
	n = ring_buffer__consume(rb);
	ring_buffer__free(rb);
	return n;
}

/* A message is placed at its offset and consumed: the socket never sees it. */
Test(ext, place_writes_at_offset)
{
	struct xvi_place_event ev;
	struct fx_frame f;
	struct run r;

	run_place(2 * XVI_PLACE_CHUNK, 8 * XVI_PLACE_CHUNK, XVI_PLACE_CHUNK, &f, &r);
	cr_expect_eq(r.verdict, XDP_DROP, "verdict %u, expected XDP_DROP", r.verdict);
	cr_expect_eq(r.d.ext_msgs, 1);
	cr_expect_eq(r.d.rx_frames, 0, "a placed message must not reach the socket");
	/* Counted as placed, not as dropped. */
	expect_handler(&r, H_PLACE, 1, XVI_EXT_ACT_PLACE);
	expect_placed(2, XVI_PLACE_CHUNK);
	cr_expect_eq(place_state().bytes, XVI_PLACE_CHUNK);
	cr_expect_eq(place_events(&ev), 0, "completion before the transfer was complete");
	fx_frame_free(&f);
}

/* The last byte in: one completion event, with the transfer's length. */
Test(ext, place_completes_once)
{
	const __u32 total = XVI_PLACE_CHUNK + 100;
	struct xvi_place_event ev = {};
	struct fx_frame f;
	struct run r;

	run_place(XVI_PLACE_CHUNK, total, 100, &f, &r);
	fx_frame_free(&f);
	cr_expect_eq(place_events(&ev), 0);
	run_place(0, total, XVI_PLACE_CHUNK, &f, &r);
	fx_frame_free(&f);
	expect_placed(0, XVI_PLACE_CHUNK);
	expect_placed(1, 100);
	cr_assert_eq(place_events(&ev), 1, "no completion event");
	cr_expect_eq(ev.total, total);
	cr_expect_eq(ev.bytes, total);
	/* A late duplicate neither counts nor signals again. */
	run_place(0, total, XVI_PLACE_CHUNK, &f, &r);
	fx_frame_free(&f);
	cr_expect_eq(r.verdict, XDP_DROP);
	cr_expect_eq(place_state().dups, 1);
	cr_expect_eq(place_state().bytes, total);
	cr_expect_eq(place_events(&ev), 0, "a second completion event");
}

/*
 * Offsets and lengths the region cannot take: delivered to the endpoint as
 * ordinary messages, counted, nothing placed.
 */
Test(ext, place_rejects_bad_messages)
{
	static const struct { __u32 off, total, len; } bad[] = {
		{ 100, 4096, XVI_PLACE_CHUNK },			/* not at a chunk */
		{ 4096, 4096, XVI_PLACE_CHUNK },		/* past the end */
		{ 0, 4096, 100 },				/* short, not the last */
		{ 3072, 3500, XVI_PLACE_CHUNK },		/* longer than what is left */
		{ 0, (__u32)XVI_PLACE_REGION + 1, XVI_PLACE_CHUNK }, /* bigger than the region */
		{ 0, 4096, 0 },					/* no data */
	};
	struct fx_frame f;
	struct run r;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		run_place(bad[i].off, bad[i].total, bad[i].len, &f, &r);
		expect_delivered(&r, &f, SLOT);
		cr_expect_eq(place_state().rejected, i + 1, "case %zu not rejected", i);
		fx_frame_free(&f);
	}
	cr_expect_eq(place_state().bytes, 0);
}
