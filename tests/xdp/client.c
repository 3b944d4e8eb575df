// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi_client fixtures: what the client end of a protected endpoint's veth
 * pair hands to the endpoint's socket.  Only a frame carrying the
 * datapath's struct xvi_rx_meta, with its magic and this endpoint's slot,
 * is redirected; anything else is dropped and counted (drop_client_meta).
 * Each case is (metadata in front of the frame, verdict); the frame is a
 * valid datagram for the endpoint in every case, so only the metadata
 * decides.  The XSKMAP holds a real AF_XDP socket, so that a redirect
 * returns XDP_REDIRECT in BPF_PROG_RUN.
 *
 *   build/tests/xdp-fixtures --filter 'client/...' --verbose
 */
#include <errno.h>
#include <string.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include "xvi_wire.h"
#include "xvi_client.skel.h"
#include "fx_frame.h"
#include "fx_env.h"

#define C_IFACE		"xvicl0"
#define C_PEER		"xvicl1"
#define C_SLOT		13

enum c_meta { M_NONE, M_OK, M_OTHER_SLOT, M_BAD_MAGIC, M_SHORT, M_LONG };

struct c_case {
	const char *name;
	enum c_meta meta;
	int verdict;
};

static const struct c_case c_cases[] = {
	{ "meta_for_this_slot", M_OK, XDP_REDIRECT },
	{ "no_meta", M_NONE, XDP_DROP },
	{ "meta_other_slot", M_OTHER_SLOT, XDP_DROP },
	{ "meta_bad_magic", M_BAD_MAGIC, XDP_DROP },
	{ "meta_too_short", M_SHORT, XDP_DROP },	/* 8 bytes: not ours */
	{ "meta_too_long", M_LONG, XDP_DROP },		/* 20 bytes: not ours */
};

static struct {
	struct xvi_client_bpf *skel;
	struct fx_xsk x;
} c;

static void c_setup(void)
{
	__u32 zero = 0;
	int fd;

	fx_netns_veth(C_IFACE, C_PEER);
	c.skel = xvi_client_bpf__open();
	cr_assert_not_null(c.skel, "xvi_client_bpf__open: %s", strerror(errno));
	c.skel->rodata->xvi_slot = C_SLOT;
	cr_assert_eq(xvi_client_bpf__load(c.skel), 0, "xvi_client_bpf__load: %s",
		     strerror(errno));
	fx_xsk_open(&c.x, C_IFACE);
	fd = xsk_socket__fd(c.x.xsk);
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(c.skel->maps.xvi_client_xsk), &zero, &fd,
					 0), 0, "xvi_client_xsk[0]: %s", strerror(errno));
}

static void c_teardown(void)
{
	fx_xsk_close(&c.x);
	xvi_client_bpf__destroy(c.skel);
}

ParameterizedTestParameters(client, cases)
{
	static unsigned int idx[sizeof(c_cases) / sizeof(c_cases[0])];

	for (unsigned int i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
		idx[i] = i;
	return cr_make_param_array(unsigned int, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(unsigned int *i, client, cases, .init = c_setup, .fini = c_teardown)
{
	const struct c_case *k = &c_cases[*i];
	struct fx_frame_spec spec = { .l3 = FX_IP4, .dport = 9000, .payload = 32 };
	struct xvi_rx_meta m = { .magic = XVI_RX_META_MAGIC, .flags = XVI_RX_CSUM_VERIFIED,
				 .l3_off = 14, .l4_off = 34, .payload_off = 42,
				 .payload_len = 32, .slot = C_SLOT };
	struct xvi_ep_counters after, want = {};
	struct xdp_md ctx = {};
	__u8 in[sizeof(m) + 4 + 256];
	__u32 mlen = sizeof(m);
	struct fx_frame f;
	int err;

	cr_log_info("client case %s", k->name);
	cr_assert_eq(fx_frame_build(&spec, &f), 0);
	if (k->meta == M_OTHER_SLOT)
		m.slot = C_SLOT + 1;
	if (k->meta == M_BAD_MAGIC)
		m.magic ^= 0x0100;
	mlen = k->meta == M_NONE ? 0 : k->meta == M_SHORT ? 8 : k->meta == M_LONG ? 20 : mlen;
	/* M_LONG: 4 bytes in front of a valid metadata block */
	memset(in, 0, sizeof(in));
	memcpy(in + (k->meta == M_LONG ? 4 : 0), &m, k->meta == M_SHORT ? 8 : sizeof(m));
	cr_assert_leq(mlen + f.len, sizeof(in));
	memcpy(in + mlen, f.buf, f.len);
	/* BPF_PROG_RUN takes the metadata in front of the frame: data - data_meta */
	ctx.data = mlen;
	ctx.data_end = mlen + f.len;
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = mlen + f.len,
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1);
	err = bpf_prog_test_run_opts(bpf_program__fd(c.skel->progs.xvi_client), &opts);
	cr_assert_eq(err, 0, "%s: BPF_PROG_RUN: %s", k->name, strerror(-err));
	cr_expect_eq(opts.retval, (__u32)k->verdict, "%s: verdict %u, want %d", k->name,
		     opts.retval, k->verdict);
	fx_read_slot(bpf_map__fd(c.skel->maps.xvi_ep_stats), C_SLOT, &after);
	want.drop_client_meta = k->verdict == XDP_DROP;
	cr_expect_eq(memcmp(&after, &want, sizeof(want)), 0,
		     "%s: drop_client_meta %llu, want %llu, and nothing else", k->name,
		     (unsigned long long)after.drop_client_meta,
		     (unsigned long long)want.drop_client_meta);
	fx_frame_free(&f);
}
