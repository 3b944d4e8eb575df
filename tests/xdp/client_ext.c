// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi_client's handler dispatch (protected endpoints, docs/EXTENSIONS.md
 * "Generations"): an active message runs the handler of the generation
 * xvi_client_gen names, at gen * 16 + index; an index empty in that
 * generation delivers and counts ext_missing; an ordinary message is
 * delivered without touching the tables.  Two stand-in handlers, one
 * answering XDP_DROP and one XDP_TX, tell which generation ran.
 *
 *   build/tests/xdp-fixtures --filter 'client_ext/...' --verbose
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include "xvi_wire.h"
#include "xvi_ext.h"
#include "xvi_client.skel.h"
#include "fx_frame.h"
#include "fx_env.h"

#define CE_IFACE	"xvice0"
#define CE_PEER		"xvice1"
#define CE_SLOT		21

static struct {
	struct xvi_client_bpf *skel;
	struct fx_xsk x;
	int drop_fd, tx_fd;
} ce;

/* r0 = @verdict; exit: a single-buffer XDP program like the loader's handlers. */
static int stand_in(int verdict)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = verdict },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = BPF_XDP);
	int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "ce_stand_in", "GPL", insns, 2, &o);

	cr_assert_geq(fd, 0, "stand-in handler: %s", strerror(errno));
	return fd;
}

static void ce_setup(void)
{
	__u32 zero = 0;
	int fd;

	fx_netns_veth(CE_IFACE, CE_PEER);
	ce.skel = xvi_client_bpf__open();
	cr_assert_not_null(ce.skel, "xvi_client_bpf__open: %s", strerror(errno));
	ce.skel->rodata->xvi_slot = CE_SLOT;
	cr_assert_eq(xvi_client_bpf__load(ce.skel), 0, "load: %s", strerror(errno));
	fx_xsk_open(&ce.x, CE_IFACE);
	fd = xsk_socket__fd(ce.x.xsk);
	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(ce.skel->maps.xvi_client_xsk), &zero, &fd,
					 0), 0);
	ce.drop_fd = stand_in(XDP_DROP);
	ce.tx_fd = stand_in(XDP_TX);
}

static void ce_teardown(void)
{
	close(ce.drop_fd);
	close(ce.tx_fd);
	fx_xsk_close(&ce.x);
	xvi_client_bpf__destroy(ce.skel);
}

static void put(__u32 gen, __u32 index, int fd)
{
	__u32 key = gen * XVI_EXT_MAX_HANDLERS + index;

	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(ce.skel->maps.xvi_client_ext), &key, &fd, 0),
		     0, "xvi_client_ext[%u]: %s", key, strerror(errno));
}

static void set_gen(__u32 gen)
{
	__u32 zero = 0;

	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(ce.skel->maps.xvi_client_gen), &zero, &gen,
					 0), 0);
}

/* Run one message (@am: an active message naming @handler, header version @version,
 * 0 for the right one): its verdict. */
static __u32 run_v(bool am, __u16 handler, __u8 version)
{
	struct fx_frame_spec spec = { .l3 = FX_IP4, .dport = 9000, .payload = 48, .am = am,
				      .am_handler = handler, .am_version = version };
	struct xvi_rx_meta m = { .magic = XVI_RX_META_MAGIC, .flags = XVI_RX_CSUM_VERIFIED,
				 .slot = CE_SLOT };
	struct xdp_md ctx = {};
	__u8 in[sizeof(m) + 256];
	struct fx_frame f;
	int err;

	cr_assert_eq(fx_frame_build(&spec, &f), 0);
	m.l3_off = f.l3_off;
	m.l4_off = f.l4_off;
	m.payload_off = f.payload_off;
	m.payload_len = f.payload_len;
	cr_assert_leq(sizeof(m) + f.len, sizeof(in));
	memcpy(in, &m, sizeof(m));
	memcpy(in + sizeof(m), f.buf, f.len);
	ctx.data = sizeof(m);
	ctx.data_end = sizeof(m) + f.len;
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = sizeof(m) + f.len,
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1);
	err = bpf_prog_test_run_opts(bpf_program__fd(ce.skel->progs.xvi_client), &opts);
	cr_assert_eq(err, 0, "BPF_PROG_RUN: %s", strerror(-err));
	fx_frame_free(&f);
	return opts.retval;
}

static __u32 run(bool am, __u16 handler)
{
	return run_v(am, handler, 0);
}

static struct xvi_ep_counters counters(void)
{
	struct xvi_ep_counters c;

	fx_read_slot(bpf_map__fd(ce.skel->maps.xvi_ep_stats), CE_SLOT, &c);
	return c;
}

/* Generation 0 drops, generation 1 transmits: the flip alone switches. */
Test(client_ext, generation_selects_the_handler, .init = ce_setup, .fini = ce_teardown)
{
	put(0, 1, ce.drop_fd);
	put(1, 1, ce.tx_fd);
	cr_expect_eq(run(true, 1), XDP_DROP, "generation 0 (the initial one) ran");
	set_gen(1);
	cr_expect_eq(run(true, 1), XDP_TX, "generation 1 ran after the flip");
	set_gen(0);
	cr_expect_eq(run(true, 1), XDP_DROP, "generation 0 again");
	cr_expect_eq(counters().ext_msgs, 3);
	cr_expect_eq(counters().ext_missing, 0);
}

/* An index filled only in the other generation is missing: delivered, counted. */
Test(client_ext, missing_in_this_generation, .init = ce_setup, .fini = ce_teardown)
{
	put(1, 2, ce.tx_fd);
	cr_expect_eq(run(true, 2), XDP_REDIRECT, "generation 0 has no handler 2: delivered");
	cr_expect_eq(counters().ext_missing, 1);
	cr_expect_eq(counters().ext_msgs, 1);
}

/* Not an active message: delivered, no handler and no ext counter touched. */
Test(client_ext, ordinary_message, .init = ce_setup, .fini = ce_teardown)
{
	struct xvi_ep_counters c;

	put(0, 0, ce.drop_fd);
	cr_expect_eq(run(false, 0), XDP_REDIRECT);
	c = counters();
	cr_expect_eq(c.ext_msgs + c.ext_missing + c.ext_bad_index + c.ext_bad_version, 0);
}

/* An index of 16 or more never reaches the other generation's entries. */
Test(client_ext, index_out_of_range, .init = ce_setup, .fini = ce_teardown)
{
	put(1, 0, ce.tx_fd);	/* key 16: what index 16 of generation 0 would hit */
	cr_expect_eq(run(true, XVI_EXT_MAX_HANDLERS), XDP_REDIRECT);
	cr_expect_eq(counters().ext_bad_index, 1);
}

/* ---- per-handler counters: dispatch and the return paths ----------------- */

/* The return paths into xvi_ext_ret, as xdp-vid installs them (ext_keep). */
static void install_rets(void)
{
	const struct bpf_program *ret[XVI_EXT_RET_NR] = {
		ce.skel->progs.xvi_client_deliver, ce.skel->progs.xvi_client_ret_reply,
		ce.skel->progs.xvi_client_ret_forward, ce.skel->progs.xvi_client_ret_place,
		ce.skel->progs.xvi_client_ret_drop, ce.skel->progs.xvi_client_ret_pass,
	};
	__u32 i;
	int fd;

	for (i = 0; i < XVI_EXT_RET_NR; i++) {
		fd = bpf_program__fd(ret[i]);
		cr_assert_eq(bpf_map_update_elem(bpf_map__fd(ce.skel->maps.xvi_ext_ret), &i, &fd, 0),
			     0, "xvi_ext_ret[%u]: %s", i, strerror(errno));
	}
}

/*
 * A handler ending as xvi_ext__ret() does: a tail call to xvi_ext_ret[@ret],
 * then (the return path missing) XDP_ABORTED, which no return path gives.
 */
static int tail_stand_in(__u32 ret)
{
	int map = bpf_map__fd(ce.skel->maps.xvi_ext_ret);
	struct bpf_insn insns[] = {
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_2,
		  .src_reg = BPF_PSEUDO_MAP_FD, .imm = map },
		{ 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_3, .imm = ret },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_tail_call },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_ABORTED },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = BPF_XDP);
	int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "ce_tail", "GPL", insns, 6, &o);

	cr_assert_geq(fd, 0, "tail-calling stand-in: %s", strerror(errno));
	return fd;
}

/* xvi_cext_stats[@index], summed over the CPUs. */
static struct xvi_ext_counters hstats(__u32 index)
{
	int ncpu = libbpf_num_possible_cpus(), i, a;
	struct xvi_ext_counters sum = {}, *v;

	cr_assert_gt(ncpu, 0);
	v = calloc(ncpu, sizeof(*v));
	cr_assert_not_null(v);
	cr_assert_eq(bpf_map_lookup_elem(bpf_map__fd(ce.skel->maps.xvi_cext_stats), &index, v), 0);
	for (i = 0; i < ncpu; i++) {
		sum.runs += v[i].runs;
		for (a = 0; a < XVI_EXT_ACT_NR; a++)
			sum.act[a] += v[i].act[a];
	}
	free(v);
	return sum;
}

/* Every return path counts its action for the index that ran, and carries it out. */
Test(client_ext, actions_counted_per_handler, .init = ce_setup, .fini = ce_teardown)
{
	/* @act2: a second counter the path moves (< 0: none). */
	static const struct { __u32 ret; __u8 act; int act2; __u32 verdict; } cases[] = {
		{ XVI_EXT_RET_DELIVER, XVI_EXT_ACT_DELIVER, -1, XDP_REDIRECT },
		{ XVI_EXT_RET_REPLY, XVI_EXT_ACT_REPLY, -1, XDP_TX },
		/* Refused on the client end: an error and a drop, never a forward. */
		{ XVI_EXT_RET_FORWARD, XVI_EXT_ACT_ERROR, XVI_EXT_ACT_DROP, XDP_DROP },
		{ XVI_EXT_RET_PLACE, XVI_EXT_ACT_PLACE, -1, XDP_DROP },
		{ XVI_EXT_RET_DROP, XVI_EXT_ACT_DROP, -1, XDP_DROP },
		{ XVI_EXT_RET_PASS, XVI_EXT_ACT_PASS, -1, XDP_PASS },
	};
	struct xvi_ext_counters c;
	size_t i;
	int fd, a;

	install_rets();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		__u32 h = 2 + i;

		fd = tail_stand_in(cases[i].ret);
		put(0, h, fd);
		close(fd);
		cr_expect_eq(run(true, h), cases[i].verdict, "return path %u", cases[i].ret);
		cr_expect_eq(run(true, h), cases[i].verdict, "return path %u", cases[i].ret);
		c = hstats(h);
		cr_expect_eq(c.runs, 2, "handler %u: runs %llu", h, (unsigned long long)c.runs);
		for (a = 0; a < XVI_EXT_ACT_NR; a++)
			cr_expect_eq(c.act[a], a == cases[i].act || a == cases[i].act2 ? 2 : 0,
				     "handler %u action %d: %llu", h, a,
				     (unsigned long long)c.act[a]);
	}
	/* Nothing counted on an index that did not run. */
	c = hstats(0);
	cr_expect_eq(c.runs + c.act[XVI_EXT_ACT_DELIVER], 0);
}

/* A handler's own verdict (no return path): a run, no action; "other" in xdp-vi. */
Test(client_ext, own_verdict_is_a_run_only, .init = ce_setup, .fini = ce_teardown)
{
	struct xvi_ext_counters c;
	int a;

	install_rets();
	put(0, 1, ce.drop_fd);
	cr_expect_eq(run(true, 1), XDP_DROP);
	c = hstats(1);
	cr_expect_eq(c.runs, 1);
	for (a = 0; a < XVI_EXT_ACT_NR; a++)
		cr_expect_eq(c.act[a], 0, "action %d", a);
}

/* No handler at the index: a miss for the index, not a run; bad version: an error. */
Test(client_ext, miss_and_error_per_handler, .init = ce_setup, .fini = ce_teardown)
{
	struct xvi_ext_counters c;

	install_rets();
	cr_expect_eq(run(true, 7), XDP_REDIRECT, "missing: delivered");
	c = hstats(7);
	cr_expect_eq(c.runs, 0);
	cr_expect_eq(c.act[XVI_EXT_ACT_MISS], 1);
	put(0, 9, ce.tx_fd);
	cr_expect_eq(run_v(true, 9, XVI_AM_VERSION + 1), XDP_REDIRECT, "bad version: delivered");
	c = hstats(9);
	cr_expect_eq(c.runs, 0, "a bad header runs no handler");
	cr_expect_eq(c.act[XVI_EXT_ACT_ERROR], 1);
	cr_expect_eq(counters().ext_bad_version, 1);
}

/* ---- tracing into the datapath's trace (bpf/trace.h) ---------------------- */

struct ce_events {
	struct xvi_trace_event ev[8];
	int n;
};

static int ce_event(void *ctx, void *data, size_t len)
{
	struct ce_events *e = ctx;

	if (e->n < 8 && len >= sizeof(e->ev[0]))
		memcpy(&e->ev[e->n], data, sizeof(e->ev[0]));
	e->n++;
	return 0;
}

/* XVI_CFG_TRACE in the program's xvi_config, which xdp-vid makes the datapath's. */
static void ce_trace(bool on)
{
	struct xvi_config cfg = { .flags = on ? XVI_CFG_TRACE : 0 };
	__u32 zero = 0;

	cr_assert_eq(bpf_map_update_elem(bpf_map__fd(ce.skel->maps.xvi_config), &zero, &cfg, 0),
		     0);
}

/*
 * With tracing on, a handler's action, a miss and a bad header each become
 * an event naming the endpoint's slot, the index and the action, as the
 * datapath's own do; with it off, none.
 */
Test(client_ext, traced_like_the_datapath, .init = ce_setup, .fini = ce_teardown)
{
	static const struct { __u16 handler; __u8 act; } want[] = {
		{ 2, XVI_EXT_ACT_REPLY }, { 3, XVI_EXT_ACT_MISS }, { 4, XVI_EXT_ACT_ERROR },
	};
	struct ce_events e = {};
	struct ring_buffer *rb;
	int fd, i;

	install_rets();
	fd = tail_stand_in(XVI_EXT_RET_REPLY);
	put(0, 2, fd);
	close(fd);
	ce_trace(true);
	cr_expect_eq(run(true, 2), XDP_TX);
	cr_expect_eq(run(true, 3), XDP_REDIRECT, "an empty index delivers");
	cr_expect_eq(run_v(true, 4, XVI_AM_VERSION + 1), XDP_REDIRECT, "a bad header delivers");
	ce_trace(false);
	cr_expect_eq(run(true, 2), XDP_TX);
	rb = ring_buffer__new(bpf_map__fd(ce.skel->maps.xvi_trace), ce_event, &e, NULL);
	cr_assert_not_null(rb, "ring_buffer__new: %s", strerror(errno));
	ring_buffer__consume(rb);
	ring_buffer__free(rb);
	cr_assert_eq(e.n, 3, "%d events, expected 3 (the last message untraced)", e.n);
	for (i = 0; i < 3; i++) {
		cr_expect_eq(e.ev[i].slot, CE_SLOT, "event %d: slot %u", i, e.ev[i].slot);
		cr_expect_eq(e.ev[i].handler, want[i].handler, "event %d: index %u", i,
			     e.ev[i].handler);
		cr_expect_eq(e.ev[i].action, want[i].act, "event %d: action %u", i,
			     e.ev[i].action);
		cr_expect(e.ev[i].len > 0 && e.ev[i].cap_len > 0, "event %d: no frame", i);
		cr_expect_leq(e.ev[i].start_ns, e.ev[i].end_ns, "event %d: times", i);
	}
}
