// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-cat: netcat for xdp-vi endpoints.
 *   xvi-cat --iface IF -l [IP] PORT      stream: accept one, copy it to stdout
 *   xvi-cat --iface IF IP PORT           stream: copy stdin to the peer
 *   xvi-cat -u --iface IF -l [IP] PORT   each datagram's payload to stdout
 *   xvi-cat -u --iface IF IP PORT        each stdin line as one datagram
 * --kernel does the same over kernel TCP / UDP sockets.
 */
#include "cat.h"
#include "print.h"

int cat_verbosity;

struct cat_args {
	struct cat_cfg cfg;
	bool numeric;		/* -n: names are never resolved anyway */
	int verbosity;		/* -v */
};

#define ARG(member)	OPT_FIELD(struct cat_args, member)

static const struct opt_def cat_opts[] = {
	{ OPT_FLAG, "udp", 'u', ARG(cfg.udp), .help = "UDP mode: one datagram per line" },
	{ OPT_FLAG, "listen", 'l', ARG(cfg.listen),
	  .help = "listen on IP (default 0.0.0.0; give :: for IPv6) and PORT" },
	{ OPT_STRING, "iface", 0, ARG(cfg.xt.iface), "IF",
	  .help = "the interface that runs the xdp-vi datapath (required unless\n--kernel)" },
	{ OPT_FLAG, "kernel", 0, ARG(cfg.xt.kernel),
	  .help = "use kernel sockets instead (TCP in stream mode, UDP with -u)" },
	{ OPT_UINT, "queue", 0, ARG(cfg.xt.queue), "Q", .help = "interface queue to bind",
	  .def = "0", .max = 65535, .err = "give a queue number" },
	{ OPT_BITS, "multi-buffer", 0, ARG(cfg.xt.ep_flags), .bits = XVI_EP_MULTI_BUFFER,
	  .help = "datagrams and stream segments up to the MTU, across\n"
		  "several frames (XVI_EP_MULTI_BUFFER)" },
	{ OPT_SECONDS, NULL, 'w', ARG(cfg.idle), "SEC", .flags = OPT_POSITIVE,
	  .help = "stream: fail (exit 1) after SEC seconds without progress,\n"
		  "connecting and accepting included.  UDP: exit 0 after SEC\n"
		  "seconds without datagrams once one arrived, exit 1 if none\n"
		  "arrived within SEC; a sender keeps printing replies until\n"
		  "SEC seconds of silence",
	  .err = "give seconds above 0, e.g. -w 2" },
	{ OPT_UINT, NULL, 'c', ARG(cfg.count), "N", .min = 1, .max = ULONG_MAX,
	  .help = "UDP: exit after N datagrams (received, or sent)",
	  .err = "give a count of datagrams, 1 or more" },
	{ OPT_UINT, "conns", 0, ARG(cfg.conns), "N", .min = 1, .max = 1000,
	  .help = "stream: N connections over one endpoint at once; the\n"
		  "sender sends all of stdin (at most 16 MiB) on each, the\n"
		  "listener accepts N and prints each one's data in one piece",
	  .err = "give 1..1000 connections" },
	{ OPT_FLAG, "zc", 0, ARG(cfg.zc),
	  .help = "stream: in place: stdin is read straight into the\n"
		  "stream's send buffer (send_alloc/send_commit), stdout\n"
		  "written from the receive buffer (recv_zc/recv_release)" },
	{ OPT_UINT, NULL, 's', ARG(cfg.src_port), "PORT", .min = 1, .max = 65535,
	  .help = "sender's source port (default from the pid, 49152..65535)",
	  .err = XT_PORT_RANGE },
	{ OPT_FLAG, NULL, 'n', ARG(numeric),
	  .help = "accepted for netcat habits (names are never resolved)" },
	{ OPT_COUNT, "verbose", 'v', ARG(verbosity),
	  .help = "progress and library debug messages (-vv: more)" },
	{ OPT_HELP, "help", 'h', .help = "this help" },
	{ OPT_END },
};

static const struct opt_prog cat_prog = {
	.name = "xvi-cat",
	.synopsis =
"Usage: xvi-cat --iface IFACE [OPTIONS] -l [IP] PORT      stream: receive to stdout\n"
"       xvi-cat --iface IFACE [OPTIONS] IP PORT           stream: send stdin\n"
"       xvi-cat -u --iface IFACE [OPTIONS] -l [IP] PORT   UDP: payloads to stdout\n"
"       xvi-cat -u --iface IFACE [OPTIONS] IP PORT        UDP: send each stdin line\n"
"\n"
"netcat for xdp-vi endpoints.  Stream mode (the default) opens a UDP endpoint\n"
"and runs a libxvi reliable stream over it (service number = PORT): the\n"
"listener accepts one connection and copies it to stdout until the peer\n"
"closes; the sender copies stdin to the peer, closes its half at end of\n"
"input, prints whatever the peer sends back, and exits once the listener\n"
"has read everything and closed too.  Both exit 0 on a clean close.\n"
"\n",
	.opts = cat_opts,
	.epilog =
"\n"
"UDP payloads are written as they are, no byte added.  A sent line includes\n"
"its newline; a line longer than the endpoint's largest datagram is an error.\n"
"Exit status: 0 success, 1 failure, 2 usage error.\n",
	.help_col = 19,
};

#define usage_err(...) opt_error(cat_prog.name, __VA_ARGS__)

/* The options together, and the arguments [IP] PORT: 0 or the usage exit code. */
static int check_args(struct cat_cfg *cfg, int npos, char **pos)
{
	const char *ip = NULL, *port_s, *why;
	__u16 port;

	if (!cfg->udp && cfg->count)
		return usage_err("-c counts datagrams: it needs -u");
	if (cfg->zc && (cfg->udp || cfg->xt.kernel || cfg->conns))
		return usage_err("--zc is for one xvi stream (not -u, not --kernel, not --conns)");
	if (cfg->conns && (cfg->udp || cfg->xt.kernel))
		return usage_err("--conns is for xvi streams (not -u, not --kernel)");
	if (!cfg->xt.iface && !cfg->xt.kernel)
		return usage_err("--iface is required: the interface that runs the xdp-vi datapath "
				 "(xdp-vi attach IFACE), or --kernel for kernel sockets");
	if (cfg->listen) {
		if (npos < 1 || npos > 2)
			return usage_err("-l takes [IP] PORT");
		if (npos == 2)
			ip = pos[0];
	} else {
		if (npos != 2)
			return usage_err("a sender takes IP PORT (or use -l to listen)");
		ip = pos[0];
	}
	if (cfg->listen && cfg->src_port)
		return usage_err("-s is for a sender; a listener binds PORT");
	port_s = pos[npos - 1];
	why = xt_parse_port(port_s, &port);
	if (why)
		return usage_err("%s: %s", port_s, why);
	if (!ip)
		xt_any_addr(AF_INET, port, &cfg->addr);
	else if ((why = xt_parse_ip(ip, port, &cfg->addr)))
		return usage_err("%s: %s", ip, why);
	return 0;
}

int main(int argc, char **argv)
{
	struct cat_args a = { .cfg = { .xt = { .prog = "xvi-cat", .wait = XVI_WAIT_ADAPTIVE } } };
	struct cat_cfg *cfg = &a.cfg;
	int first, err;

	first = opt_parse(&cat_prog, argc, argv, &a);
	if (first <= 0)
		return first ? 2 : 0;
	err = check_args(cfg, argc - first, argv + first);
	if (err)
		return err;
	cat_verbosity = a.verbosity;
	print_setup(&(struct print_opts){ .verbosity = &cat_verbosity, .debug_from = 2 });
	xt_install_signals();
	if (!cfg->udp)
		return cfg->listen ? cat_stream_listener(cfg) : cat_stream_sender(cfg);
	return cfg->listen ? cat_udp_listener(cfg) : cat_udp_sender(cfg);
}
