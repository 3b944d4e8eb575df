// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xvi-perf: what the options mean together, and the run they choose. */
#include "perf.h"
#include "print.h"

#define usage_err(...) opt_error("xvi-perf", __VA_ARGS__)

const char *perf_transport_name(const struct perf_cfg *cfg)
{
	if (cfg->stream)
		return cfg->xt.kernel ? "kernel-tcp" : "xvi-stream";
	if (!cfg->xt.kernel)
		return "xvi";
	return cfg->xt.kernel_single ? "kernel-sendto" : "kernel-mmsg";
}

/* The checks no single option can make; 0 or the usage exit code. */
static int check_args(struct perf_args *a)
{
	struct perf_cfg *cfg = &a->cfg;
	const char *why;

	if (!cfg->xt.iface && !cfg->xt.kernel)
		return usage_err("--iface is required: the interface that runs the xdp-vi datapath "
				 "(xdp-vi attach IFACE), or --kernel for kernel sockets");
	if (cfg->mode != MODE_SERVER && !a->ip)
		return usage_err("-i is required: the server address, e.g. -i 198.18.0.2");
	if (cfg->seconds < 0)		/* no -t */
		cfg->seconds = cfg->mode == MODE_SERVER ? 0 : 1;
	else if (cfg->mode != MODE_SERVER && cfg->seconds <= 0)
		return usage_err("-t must be above 0 for a client");
	if (!cfg->stream && cfg->msg_size > XT_UDP_MAX)
		return usage_err("-m %u: a datagram carries at most %u bytes (larger only with --stream)",
				 cfg->msg_size, XT_UDP_MAX);
	if (cfg->stream && cfg->xt.kernel && cfg->xt.kernel_single)
		return usage_err("--kernel=sendto is a datagram API: use --stream --kernel for TCP");
	if (!cfg->batch)		/* no --batch */
		cfg->batch = cfg->stream ? 1 : XT_BATCH;
	/* One datagram per system call is what the sendto API is. */
	if (cfg->xt.kernel && cfg->xt.kernel_single)
		cfg->batch = 1;
	if (!a->ip)
		a->ip = "0.0.0.0";
	why = xt_parse_ip(a->ip, a->port, &cfg->addr);
	if (why)
		return usage_err("-i %s: %s", a->ip, why);
	return 0;
}

int perf_run(struct perf_args *a)
{
	const struct perf_cfg *cfg = &a->cfg;
	int err = check_args(a);

	if (err)
		return err;
	print_setup(&(struct print_opts){ .verbosity = &a->verbosity, .debug_from = 1 });
	xt_install_signals();
	if (cfg->stream) {
		if (cfg->mode == MODE_SERVER)
			return perf_stream_server(cfg);
		if (cfg->mode == MODE_PING_PONG)
			return perf_stream_ping_pong(cfg);
		return perf_stream_throughput(cfg);
	}
	switch (cfg->mode) {
	case MODE_SERVER:
		return perf_server(cfg);
	case MODE_PING_PONG:
		return perf_ping_pong(cfg);
	default:
		return perf_throughput(cfg);
	}
}
