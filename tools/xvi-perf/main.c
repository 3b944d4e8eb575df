// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-perf: sockperf's command line and UDP message format over xdp-vi
 * endpoints, or over kernel sockets (--kernel) for side-by-side runs.
 */
#include <getopt.h>
#include "perf.h"
#include "print.h"

static int verbosity;

const char *perf_transport_name(const struct perf_cfg *cfg)
{
	if (cfg->stream)
		return cfg->xt.kernel ? "kernel-tcp" : "xvi-stream";
	if (!cfg->xt.kernel)
		return "xvi";
	return cfg->xt.kernel_single ? "kernel-sendto" : "kernel-mmsg";
}

static const struct {
	const char *name;
	const char *alias;
	enum perf_mode mode;
} subcommands[] = {
	{ "server",	"sr", MODE_SERVER },
	{ "ping-pong",	"pp", MODE_PING_PONG },
	{ "throughput",	"tp", MODE_THROUGHPUT },
};

static void usage(FILE *f)
{
	fprintf(f,
"Usage: xvi-perf server|ping-pong|throughput [OPTIONS]   (aliases: sr, pp, tp)\n"
"\n"
"sockperf-compatible UDP latency and throughput over xdp-vi endpoints.\n"
"\n"
"  -i, --ip IP          server: address to listen on (default 0.0.0.0);\n"
"                       clients: the server address (IPv4 or IPv6 literal)\n"
"  -p, --port PORT      UDP port (default %u)\n"
"  -m, --msg-size BYTES message size, header included (%u..%u, default %u)\n"
"  -t, --time SEC       client: test time (default 1); server: stop after SEC\n"
"                       (default: run until Ctrl-C or SIGTERM)\n"
"      --iface IFACE    the interface that runs the xdp-vi datapath (required\n"
"                       unless --kernel)\n"
"      --queue Q        interface queue to bind (default 0)\n"
"      --kernel[=API]   use an ordinary kernel UDP socket instead; API mmsg\n"
"                       (sendmmsg/recvmmsg, default) or sendto (one\n"
"                       sendto/recvfrom per datagram)\n"
"      --stream         byte streams instead of datagrams: libxvi streams over\n"
"                       the endpoint (service = the port), or kernel TCP with\n"
"                       --kernel; messages keep sockperf's header (-m up to\n"
"                       %u); the server needs --stream too\n"
"      --nodelay        stream throughput: no small-message combining\n"
"                       (ping-pong and the server always use it)\n"
"      --window W       xvi streams: flow-control window in segments\n"
"      --wait MODE      busy, block or adaptive (default adaptive)\n"
"      --mps N          limit the send rate to N messages per second\n"
"      --batch N        datagrams per send/receive call (1..%u, default %u;\n"
"                       --stream: messages per send call, default 1)\n"
"      --send MODE      throughput payload: zc (written in place, default),\n"
"                       copy (copying send call; xvi: copy and checksum in\n"
"                       one pass) or memcpy (memcpy, then a checksum pass)\n"
"  endpoint tuning (xvi only; benchmarks):\n"
"      --hugepages      back the segment with huge pages (XVI_EP_HUGEPAGES)\n"
"      --multi-buffer   datagrams and stream segments up to the MTU, across\n"
"                       several frames (XVI_EP_MULTI_BUFFER, XDP_USE_SG)\n"
"      --busy-poll[=B]  preferred busy polling, budget B (XVI_EP_BUSY_POLL)\n"
"      --ring N         size of all four rings (power of 2)\n"
"      --frames N       segment size in frames (power of 2)\n"
"      --frame-size N   2048 or 4096\n"
"      --spin-us N      adaptive wait: spin time before blocking\n"
"      --json           print results as one JSON object on stdout\n"
"  -v, --verbose        library debug messages\n"
"  -h, --help           this help\n"
"\n"
"Exit status: 0 success, 1 failure, 2 usage error.\n",
		SP_DEFAULT_PORT, SP_HDR_LEN, XT_UDP_MAX, SP_DEFAULT_SIZE, SP_STREAM_MAX, XT_BATCH,
		XT_BATCH);
}

enum {
	OPT_IFACE = 256,
	OPT_QUEUE,
	OPT_KERNEL,
	OPT_WAIT,
	OPT_MPS,
	OPT_JSON,
	OPT_BATCH,
	OPT_SEND,
	OPT_HUGE,
	OPT_MULTI_BUFFER,
	OPT_BUSY_POLL,
	OPT_RING,
	OPT_FRAMES,
	OPT_FRAME_SIZE,
	OPT_SPIN,
	OPT_STREAM,
	OPT_NODELAY,
	OPT_WINDOW,
};

static const struct option long_opts[] = {
	{ "ip",		required_argument, NULL, 'i' },
	{ "port",	required_argument, NULL, 'p' },
	{ "msg-size",	required_argument, NULL, 'm' },
	{ "time",	required_argument, NULL, 't' },
	{ "iface",	required_argument, NULL, OPT_IFACE },
	{ "queue",	required_argument, NULL, OPT_QUEUE },
	{ "kernel",	optional_argument, NULL, OPT_KERNEL },
	{ "batch",	required_argument, NULL, OPT_BATCH },
	{ "send",	required_argument, NULL, OPT_SEND },
	{ "hugepages",	no_argument,	   NULL, OPT_HUGE },
	{ "multi-buffer", no_argument,	   NULL, OPT_MULTI_BUFFER },
	{ "busy-poll",	optional_argument, NULL, OPT_BUSY_POLL },
	{ "ring",	required_argument, NULL, OPT_RING },
	{ "frames",	required_argument, NULL, OPT_FRAMES },
	{ "frame-size",	required_argument, NULL, OPT_FRAME_SIZE },
	{ "spin-us",	required_argument, NULL, OPT_SPIN },
	{ "wait",	required_argument, NULL, OPT_WAIT },
	{ "stream",	no_argument,	   NULL, OPT_STREAM },
	{ "nodelay",	no_argument,	   NULL, OPT_NODELAY },
	{ "window",	required_argument, NULL, OPT_WINDOW },
	{ "mps",	required_argument, NULL, OPT_MPS },
	{ "json",	no_argument,	   NULL, OPT_JSON },
	{ "verbose",	no_argument,	   NULL, 'v' },
	{ "help",	no_argument,	   NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

#define usage_err(...) opt_error("xvi-perf", __VA_ARGS__)

int main(int argc, char **argv)
{
	struct perf_cfg cfg = {
		.xt = { .prog = "xvi-perf", .wait = XVI_WAIT_ADAPTIVE },
		.msg_size = SP_DEFAULT_SIZE,
		.batch = XT_BATCH,
	};
	const char *ip = NULL;
	unsigned long v, port = SP_DEFAULT_PORT;
	bool have_time = false, have_batch = false;
	size_t i;
	int c;

	if (argc < 2)
		return usage(stderr), 2;
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return usage(stdout), 0;
	for (i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		if (!strcmp(argv[1], subcommands[i].name) ||
		    !strcmp(argv[1], subcommands[i].alias))
			break;
	if (i == sizeof(subcommands) / sizeof(subcommands[0]))
		return usage_err("unknown subcommand '%s': use server, ping-pong or throughput",
				 argv[1]);
	cfg.mode = subcommands[i].mode;
	cfg.seconds = cfg.mode == MODE_SERVER ? 0 : 1;

	optind = 2;
	while ((c = getopt_long(argc, argv, "i:p:m:t:vh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			ip = optarg;
			break;
		case 'p':
			if (xt_parse_ulong(optarg, 1, 65535, &port))
				return usage_err("-p %s: a port is 1..65535", optarg);
			break;
		case 'm':
			if (xt_parse_ulong(optarg, SP_HDR_LEN, SP_STREAM_MAX, &v))
				return usage_err("-m %s: a message is %u..%u bytes (sockperf's %u-byte header included; above %u only with --stream)",
						 optarg, SP_HDR_LEN, SP_STREAM_MAX, SP_HDR_LEN,
						 XT_UDP_MAX);
			cfg.msg_size = (__u32)v;
			break;
		case 't':
			if (xt_parse_seconds(optarg, 86400 * 365, &cfg.seconds))
				return usage_err("-t %s: give seconds, e.g. -t 5 or -t 0.5", optarg);
			have_time = true;
			break;
		case OPT_IFACE:
			cfg.xt.iface = optarg;
			break;
		case OPT_QUEUE:
			if (xt_parse_ulong(optarg, 0, 65535, &v))
				return usage_err("--queue %s: give a queue number", optarg);
			cfg.xt.queue = (__u32)v;
			break;
		case OPT_KERNEL:
			cfg.xt.kernel = true;
			if (!optarg || !strcmp(optarg, "mmsg"))
				cfg.xt.kernel_single = false;
			else if (!strcmp(optarg, "sendto"))
				cfg.xt.kernel_single = true;
			else
				return usage_err("--kernel=%s: use --kernel=mmsg or --kernel=sendto",
						 optarg);
			break;
		case OPT_BATCH:
			if (xt_parse_ulong(optarg, 1, XT_BATCH, &v))
				return usage_err("--batch %s: give 1..%u", optarg, XT_BATCH);
			cfg.batch = (int)v;
			have_batch = true;
			break;
		case OPT_STREAM:
			cfg.stream = true;
			break;
		case OPT_NODELAY:
			cfg.nodelay = true;
			break;
		case OPT_WINDOW:
			if (xt_parse_ulong(optarg, 2, 65536, &v))
				return usage_err("--window %s: give 2..65536 segments", optarg);
			cfg.window = (__u32)v;
			break;
		case OPT_SEND:
			if (!strcmp(optarg, "zc"))
				cfg.send = SEND_ZC;
			else if (!strcmp(optarg, "copy"))
				cfg.send = SEND_COPY;
			else if (!strcmp(optarg, "memcpy"))
				cfg.send = SEND_MEMCPY;
			else
				return usage_err("--send %s: use zc, copy or memcpy", optarg);
			break;
		case OPT_HUGE:
			cfg.xt.ep_flags |= XVI_EP_HUGEPAGES;
			break;
		case OPT_MULTI_BUFFER:
			cfg.xt.ep_flags |= XVI_EP_MULTI_BUFFER;
			break;
		case OPT_BUSY_POLL:
			cfg.xt.ep_flags |= XVI_EP_BUSY_POLL;
			if (optarg) {
				if (xt_parse_ulong(optarg, 1, 65535, &v))
					return usage_err("--busy-poll=%s: a budget is 1..65535",
							 optarg);
				cfg.xt.busy_poll_budget = (__u32)v;
			}
			break;
		case OPT_RING:
			if (xt_parse_ulong(optarg, 16, 65536, &v) || (v & (v - 1)))
				return usage_err("--ring %s: a power of 2 in 16..65536", optarg);
			cfg.xt.ring_size = (__u32)v;
			break;
		case OPT_FRAMES:
			if (xt_parse_ulong(optarg, 64, 1u << 18, &v) || (v & (v - 1)))
				return usage_err("--frames %s: a power of 2 in 64..262144", optarg);
			cfg.xt.num_frames = (__u32)v;
			break;
		case OPT_FRAME_SIZE:
			if (xt_parse_ulong(optarg, 2048, 4096, &v) || (v != 2048 && v != 4096))
				return usage_err("--frame-size %s: 2048 or 4096", optarg);
			cfg.xt.frame_size = (__u32)v;
			break;
		case OPT_SPIN:
			if (xt_parse_ulong(optarg, 1, 1000000, &v))
				return usage_err("--spin-us %s: 1..1000000 (--wait block for none)",
						 optarg);
			cfg.xt.spin_us = (__u32)v;
			break;
		case OPT_WAIT:
			if (xt_wait_parse(optarg, &cfg.xt.wait))
				return usage_err("--wait %s: use busy, block or adaptive", optarg);
			break;
		case OPT_MPS:
			if (xt_parse_ulong(optarg, 1, 1000000000ul, &v))
				return usage_err("--mps %s: give messages per second, 1 or more",
						 optarg);
			cfg.mps = v;
			break;
		case OPT_JSON:
			cfg.json = true;
			break;
		case 'v':
			verbosity++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return usage_err("bad option");
		}
	}
	if (optind < argc)
		return usage_err("unexpected argument '%s'", argv[optind]);
	if (!cfg.xt.iface && !cfg.xt.kernel)
		return usage_err("--iface is required: the interface that runs the xdp-vi datapath "
				 "(xdp-vi attach IFACE), or --kernel for kernel sockets");
	if (cfg.mode != MODE_SERVER && !ip)
		return usage_err("-i is required: the server address, e.g. -i 198.18.0.2");
	if (cfg.mode != MODE_SERVER && have_time && cfg.seconds <= 0)
		return usage_err("-t must be above 0 for a client");
	if (!cfg.stream && cfg.msg_size > XT_UDP_MAX)
		return usage_err("-m %u: a datagram carries at most %u bytes (larger only with --stream)",
				 cfg.msg_size, XT_UDP_MAX);
	if (cfg.stream && cfg.xt.kernel && cfg.xt.kernel_single)
		return usage_err("--kernel=sendto is a datagram API: use --stream --kernel for TCP");
	if (cfg.stream && !have_batch)
		cfg.batch = 1;
	/* One datagram per system call is what the sendto API is. */
	if (cfg.xt.kernel && cfg.xt.kernel_single)
		cfg.batch = 1;
	if (!ip)
		ip = "0.0.0.0";
	if (xt_parse_ip(ip, (__u16)port, &cfg.addr))
		return usage_err("-i %s: not an IPv4 or IPv6 address literal", ip);

	print_setup(&(struct print_opts){ .verbosity = &verbosity, .debug_from = 1 });
	xt_install_signals();
	if (cfg.stream) {
		if (cfg.mode == MODE_SERVER)
			return perf_stream_server(&cfg);
		if (cfg.mode == MODE_PING_PONG)
			return perf_stream_ping_pong(&cfg);
		return perf_stream_throughput(&cfg);
	}
	switch (cfg.mode) {
	case MODE_SERVER:
		return perf_server(&cfg);
	case MODE_PING_PONG:
		return perf_ping_pong(&cfg);
	default:
		return perf_throughput(&cfg);
	}
}
