// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-perf: sockperf's command line and UDP message format over xdp-vi
 * endpoints, or over kernel sockets (--kernel) for side-by-side runs.
 */
#include "perf.h"

#define STR(x)	XSTR(x)
#define XSTR(x)	#x

static const struct opt_enum modes[] = {
	{ "server", MODE_SERVER },	{ "sr", MODE_SERVER },
	{ "ping-pong", MODE_PING_PONG },	{ "pp", MODE_PING_PONG },
	{ "throughput", MODE_THROUGHPUT },	{ "tp", MODE_THROUGHPUT },
	{ NULL },
};

static const struct opt_enum send_modes[] = {
	{ "zc", SEND_ZC },
	{ "copy", SEND_COPY },
	{ "memcpy", SEND_MEMCPY },
	{ NULL },
};

/* --kernel[=API]: mmsg (the default) or sendto. */
static int set_kernel(void *cfg, const char *api)
{
	struct perf_args *a = cfg;

	a->cfg.xt.kernel = true;
	if (!api || !strcmp(api, "mmsg"))
		a->cfg.xt.kernel_single = false;
	else if (!strcmp(api, "sendto"))
		a->cfg.xt.kernel_single = true;
	else
		return -EINVAL;
	return 0;
}

/* --busy-poll[=BUDGET] */
static int set_busy_poll(void *cfg, const char *budget)
{
	struct perf_args *a = cfg;
	unsigned long v;

	a->cfg.xt.ep_flags |= XVI_EP_BUSY_POLL;
	if (!budget)
		return 0;
	if (xt_parse_ulong(budget, 1, 65535, &v))
		return -EINVAL;
	a->cfg.xt.busy_poll_budget = (__u32)v;
	return 0;
}

#define ARG(member)	OPT_FIELD(struct perf_args, member)

static const struct opt_def perf_opts[] = {
	{ OPT_STRING, "ip", 'i', ARG(ip), "IP",
	  .help = "server: address to listen on (default 0.0.0.0);\n"
		  "clients: the server address (IPv4 or IPv6 literal)" },
	{ OPT_UINT, "port", 'p', ARG(port), "PORT", .help = "UDP port",
	  .def = STR(SP_DEFAULT_PORT), .min = 1, .max = 65535, .err = XT_PORT_RANGE },
	{ OPT_UINT, "msg-size", 'm', ARG(cfg.msg_size), "BYTES",
	  .help = "message size, header included (" STR(SP_HDR_LEN) ".." STR(XT_UDP_MAX)
		  ", default " STR(SP_DEFAULT_SIZE) ")",
	  .min = SP_HDR_LEN, .max = SP_STREAM_MAX,
	  .err = "a message is " STR(SP_HDR_LEN) ".." STR(SP_STREAM_MAX) " bytes (sockperf's "
		 STR(SP_HDR_LEN) "-byte header included; above " STR(XT_UDP_MAX)
		 " only with --stream)" },
	{ OPT_SECONDS, "time", 't', ARG(cfg.seconds), "SEC",
	  .help = "client: test time (default 1); server: stop after SEC\n"
		  "(default: run until Ctrl-C or SIGTERM)",
	  .err = "give seconds, e.g. -t 5 or -t 0.5" },
	{ OPT_STRING, "iface", 0, ARG(cfg.xt.iface), "IFACE",
	  .help = "the interface that runs the xdp-vi datapath (required\nunless --kernel)" },
	{ OPT_UINT, "queue", 0, ARG(cfg.xt.queue), "Q", .help = "interface queue to bind",
	  .def = "0", .max = 65535, .err = "give a queue number" },
	{ OPT_UINT, "threads", 0, ARG(cfg.threads), "N",
	  .help = "server: N endpoints on queues Q..Q+N-1 (--queue Q),\n"
		  "one port spread over them (XVI_EP_SPREAD), one thread\n"
		  "each; with --kernel N sockets with SO_REUSEPORT;\n"
		  "throughput: N flows, one endpoint (queue) and thread\n"
		  "each, results summed; --stream: a listener (stream\n"
		  "context) per endpoint, a connection per client thread",
	  .def = "1", .min = 1, .max = 64, .err = "give 1..64 threads" },
	{ OPT_FUNC, "kernel", 0, .metavar = "API", .fn = set_kernel, .flags = OPT_OPTIONAL,
	  .help = "use an ordinary kernel UDP socket instead; API mmsg\n"
		  "(sendmmsg/recvmmsg, default) or sendto (one\n"
		  "sendto/recvfrom per datagram)",
	  .err = "use --kernel=mmsg or --kernel=sendto" },
	{ OPT_FLAG, "stream", 0, ARG(cfg.stream),
	  .help = "byte streams instead of datagrams: libxvi streams over\n"
		  "the endpoint (service = the port), or kernel TCP with\n"
		  "--kernel; messages keep sockperf's header (-m up to\n"
		  STR(SP_STREAM_MAX) "); the server needs --stream too" },
	{ OPT_FLAG, "nodelay", 0, ARG(cfg.nodelay),
	  .help = "stream throughput: no small-message combining\n"
		  "(ping-pong and the server always use it)" },
	{ OPT_FLAG, "zc", 0, ARG(cfg.zc),
	  .help = "xvi streams in place: the throughput client writes\n"
		  "messages into the send buffer (send_alloc/send_commit),\n"
		  "the server reads them where they lie (recv_zc/release)" },
	{ OPT_UINT, "window", 0, ARG(cfg.window), "W",
	  .help = "xvi streams: flow-control window in segments",
	  .min = 2, .max = 65536, .err = "give 2..65536 segments" },
	{ OPT_ENUM, "wait", 0, ARG(cfg.xt.wait), "MODE", .help = "busy, block or adaptive",
	  .def = "adaptive", .enums = xt_wait_modes },
	{ OPT_UINT, "mps", 0, ARG(cfg.mps), "N",
	  .help = "limit the send rate to N messages per second",
	  .min = 1, .max = 1000000000, .err = "give messages per second, 1 or more" },
	{ OPT_UINT, "batch", 0, ARG(cfg.batch), "N",
	  .help = "datagrams per send/receive call (1.." STR(XT_BATCH) ", default "
		  STR(XT_BATCH) ";\n--stream: messages per send call, default 1)",
	  .min = 1, .max = XT_BATCH, .err = "give 1.." STR(XT_BATCH) },
	{ OPT_ENUM, "send", 0, ARG(cfg.send), "MODE",
	  .help = "throughput payload: zc (written in place, default),\n"
		  "copy (copying send call; xvi: copy and checksum in\n"
		  "one pass) or memcpy (memcpy, then a checksum pass)",
	  .enums = send_modes },
	{ OPT_SECTION, .help = "endpoint tuning (xvi only; benchmarks):" },
	{ OPT_BITS, "hugepages", 0, ARG(cfg.xt.ep_flags), .bits = XVI_EP_HUGEPAGES,
	  .help = "back the segment with huge pages (XVI_EP_HUGEPAGES)" },
	{ OPT_BITS, "multi-buffer", 0, ARG(cfg.xt.ep_flags), .bits = XVI_EP_MULTI_BUFFER,
	  .help = "datagrams and stream segments up to the MTU, across\n"
		  "several frames (XVI_EP_MULTI_BUFFER, XDP_USE_SG)" },
	{ OPT_FUNC, "busy-poll", 0, .metavar = "B", .fn = set_busy_poll, .flags = OPT_OPTIONAL,
	  .help = "preferred busy polling, budget B (XVI_EP_BUSY_POLL)",
	  .err = "a budget is 1..65535" },
	{ OPT_UINT, "ring", 0, ARG(cfg.xt.ring_size), "N",
	  .help = "size of all four rings (power of 2)", .min = 16, .max = 65536,
	  .flags = OPT_POW2 },
	{ OPT_UINT, "frames", 0, ARG(cfg.xt.num_frames), "N",
	  .help = "segment size in frames (power of 2)", .min = 64, .max = 1u << 18,
	  .flags = OPT_POW2 },
	{ OPT_UINT, "frame-size", 0, ARG(cfg.xt.frame_size), "N", .help = "2048 or 4096",
	  .min = 2048, .max = 4096, .flags = OPT_POW2, .err = "2048 or 4096" },
	{ OPT_UINT, "spin-us", 0, ARG(cfg.xt.spin_us), "N",
	  .help = "adaptive wait: spin time before blocking", .min = 1, .max = 1000000,
	  .err = "1..1000000 (--wait block for none)" },
	{ OPT_FLAG, "json", 0, ARG(cfg.json),
	  .help = "print results as one JSON object on stdout" },
	{ OPT_COUNT, "verbose", 'v', ARG(verbosity), .help = "library debug messages" },
	{ OPT_HELP, "help", 'h', .help = "this help" },
	{ OPT_END },
};

static const struct opt_prog perf_prog = {
	.name = "xvi-perf",
	.synopsis =
"Usage: xvi-perf server|ping-pong|throughput [OPTIONS]   (aliases: sr, pp, tp)\n"
"\n"
"sockperf-compatible UDP latency and throughput over xdp-vi endpoints.\n"
"\n",
	.opts = perf_opts,
	.epilog = "\nExit status: 0 success, 1 failure, 2 usage error.\n",
	.help_col = 23,
};

int main(int argc, char **argv)
{
	struct perf_args a = {
		.cfg = { .xt = { .prog = "xvi-perf" }, .msg_size = SP_DEFAULT_SIZE,
			 .seconds = -1 },	/* -1: no -t */
	};
	int mode, first;

	if (argc < 2)
		return opt_usage(&perf_prog, stderr), 2;
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return opt_usage(&perf_prog, stdout), 0;
	if (opt_enum_find(modes, argv[1], &mode))
		return opt_error(perf_prog.name, "unknown subcommand '%s': use server, ping-pong or "
				 "throughput", argv[1]);
	a.cfg.mode = mode;
	/* argv[1], the subcommand, stands where getopt expects the program. */
	first = opt_parse(&perf_prog, argc - 1, argv + 1, &a);
	if (first <= 0)
		return first ? 2 : 0;
	if (first < argc - 1)
		return opt_error(perf_prog.name, "unexpected argument '%s'", argv[1 + first]);
	return perf_run(&a);
}
