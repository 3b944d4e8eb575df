// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xdp-vi: attach the xdp-vi datapath to an interface, detach it, and show
 * its endpoints and counters.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "ctl/ctl.h"
#include "xvi_ext.h"
#include "common/log.h"
#include "print.h"

static const struct opt_enum attach_modes[] = {
	{ "native", XVI_ATTACH_NATIVE },
	{ "generic", XVI_ATTACH_GENERIC },
	{ NULL },
};

static const struct opt_enum napi_modes[] = {
	{ "keep", XVI_NAPI_KEEP },
	{ "thread", XVI_NAPI_THREAD },
	{ NULL },
};

static const struct opt_def attach_opts[] = {
	{ OPT_ENUM, "mode", 'm', OPT_FIELD(struct xvi_cfg, mode), "MODE",
	  .help = "XDP mode (native|generic)", .enums = attach_modes },
	{ OPT_ENUM, "napi", 'n', OPT_FIELD(struct xvi_cfg, napi), "NAPI",
	  .help = "keep: left as it is; thread: a veth's NAPI becomes threaded",
	  .enums = napi_modes },
	{ OPT_END },
};

static const struct opt_def status_opts[] = {
	{ OPT_FLAG, "json", 'j', OPT_FIELD(struct xvi_cfg, json), .help = "JSON output" },
	{ OPT_END },
};

static const struct opt_def stats_opts[] = {
	{ OPT_FLAG, "json", 'j', OPT_FIELD(struct xvi_cfg, json),
	  .help = "JSON output (with --interval: one array, a sample per element)" },
	{ OPT_SECONDS, "interval", 'i', OPT_FIELD(struct xvi_cfg, interval), "S",
	  .help = "print rates every S seconds", .max = 86400, .flags = OPT_POSITIVE,
	  .err = "expected seconds > 0 (e.g. 0.5)" },
	{ OPT_UINT, "count", 'c', OPT_FIELD(struct xvi_cfg, count), "N",
	  .help = "with --interval: stop after N samples (default: until interrupted)",
	  .err = "expected a non-negative integer" },
	{ OPT_END },
};

static const struct opt_def serve_opts[] = {
	{ OPT_STRING, "policy", 'p', OPT_FIELD(struct xvi_cfg, policy), "FILE",
	  .help = "policy file (default /etc/xdp-vi/policy)" },
	{ OPT_STRING, "run-dir", 'r', OPT_FIELD(struct xvi_cfg, run_dir), "DIR",
	  .help = "socket directory (default /run/xdp-vi)" },
	{ OPT_END },
};

/* --handler N: an index the datapath has, and remembered as given. */
/* A decimal number up to @max into *out, or -EINVAL. */
static int parse_number(const char *value, unsigned long max, unsigned int *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(value, &end, 10);
	if (errno || end == value || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int set_handler(void *c, const char *value)
{
	struct xvi_cfg *cfg = c;

	if (parse_number(value, XVI_EXT_MAX_HANDLERS - 1, &cfg->handler)) {
		fprintf(stderr, "xdp-vi: --handler %s: expected an index from 0 to %d\n", value,
			XVI_EXT_MAX_HANDLERS - 1);
		return -EINVAL;
	}
	cfg->handler_set = true;
	return 0;
}

#define EXT_TARGET_OPTS							\
	{ OPT_STRING, "endpoint", 'e', OPT_FIELD(struct xvi_cfg, endpoint), "TAG",	\
	  .help = "the endpoint, as bound: ADDR:PORT, [ADDR6]:PORT or raw:TAG" },	\
	{ OPT_FUNC, "handler", 'n', .metavar = "N", .fn = set_handler,			\
	  .help = "handler index, 0-15: what the message's header names" }

static const struct opt_def ext_load_opts[] = {
	EXT_TARGET_OPTS,
	{ OPT_STRING, "prog", 'p', OPT_FIELD(struct xvi_cfg, prog), "NAME",
	  .help = "the handler's program in OBJ (needed if OBJ has several)" },
	{ OPT_FLAG, "replace", 0, OPT_FIELD(struct xvi_cfg, replace),
	  .help = "replace the handler loaded at the index" },
	{ OPT_END },
};

static const struct opt_def ext_unload_opts[] = {
	EXT_TARGET_OPTS,
	{ OPT_END },
};

static const struct opt_def ext_forward_opts[] = {
	{ OPT_FLAG, "remove", 'r', OPT_FIELD(struct xvi_cfg, remove),
	  .help = "take the TARGETs out instead" },
	{ OPT_FLAG, "json", 'j', OPT_FIELD(struct xvi_cfg, json), .help = "JSON output" },
	{ OPT_END },
};

static const struct cmd_def ext_cmds[] = {
	{ "ext load", cmd_ext_load, "IFACE OBJ", 2, 2, ext_load_opts,
	  "load an active-message handler for an endpoint",
	  "Load the XDP program of the BPF object OBJ (built against xvi_ext.h) as\n"
	  "handler N of the endpoint TAG on IFACE: active messages to the endpoint\n"
	  "that name index N run it in the datapath.  On a rejection the\n"
	  "verifier's log is printed.  Needs the datapath's maps pinned (attach\n"
	  "with a bpffs).  See docs/EXTENSIONS.md." },
	{ "ext list", cmd_ext_list, "IFACE", 1, 1, status_opts,
	  "list the handlers loaded on IFACE",
	  "List the handlers loaded on IFACE: slot, endpoint, index, program and\n"
	  "counters.  As root: the datapath's handlers, then those xdp-vid holds on\n"
	  "protected endpoints' client ends, with their owners' uids.  Without\n"
	  "privileges: the caller's own handlers, asked of xdp-vid." },
	{ "ext unload", cmd_ext_unload, "IFACE", 1, 1, ext_unload_opts,
	  "unload an endpoint's handler",
	  "Unload handler N of the endpoint TAG on IFACE: its messages are delivered\n"
	  "to the endpoint again (and counted as ext_missing)." },
	{ "ext forward", cmd_ext_forward, "IFACE [TARGET...]", 1, 1 + XVI_EXT_FWD_MAX_IFACES,
	  ext_forward_opts, "allow handlers on IFACE to forward to interfaces",
	  "Let the handlers on IFACE forward messages (xvi_ext_forward) out of each\n"
	  "TARGET, which must run the datapath too; with --remove, no longer.  All\n"
	  "TARGETs or none: after an error nothing has changed.  Then\n"
	  "print the interfaces they may forward to (all of them without TARGET).\n"
	  "A forward to any other interface is refused: counted as an error for the\n"
	  "handler and the message delivered to its endpoint.  See\n"
	  "docs/EXTENSIONS.md, \"Forwarding\"." },
	{ NULL },
};

static const struct opt_def trace_opts[] = {
	{ OPT_STRING, "pcap", 'w', OPT_FIELD(struct xvi_cfg, pcap), "FILE",
	  .help = "write the frames (first 256 bytes) to pcap FILE, their events to "
		  "FILE.events" },
	{ OPT_STRING, "plot", 'p', OPT_FIELD(struct xvi_cfg, plot), "FILE.svg",
	  .help = "draw the events per handler on a timeline into an SVG file" },
	{ OPT_UINT, "count", 'c', OPT_FIELD(struct xvi_cfg, count), "N",
	  .help = "stop after N events", .err = "expected a non-negative integer" },
	{ OPT_SECONDS, "duration", 'd', OPT_FIELD(struct xvi_cfg, duration), "S",
	  .help = "stop after S seconds", .max = 86400, .flags = OPT_POSITIVE,
	  .err = "expected seconds > 0 (e.g. 2.5)" },
	{ OPT_FLAG, "force", 'f', OPT_FIELD(struct xvi_cfg, force),
	  .help = "trace even though tracing is on (a trace that died left it on)" },
	{ OPT_END },
};

/* --rule LOC: a rule location, remembered as given. */
static int set_rule(void *c, const char *value)
{
	struct xvi_cfg *cfg = c;

	if (parse_number(value, 0xfffffffful, &cfg->rule)) {
		fprintf(stderr, "xdp-vi: --rule %s: expected a rule location (a number)\n", value);
		return -EINVAL;
	}
	cfg->rule_set = true;
	return 0;
}

static const struct opt_def steer_add_opts[] = {
	{ OPT_STRING, "endpoint", 'e', OPT_FIELD(struct xvi_cfg, endpoint), "TAG",
	  .help = "the endpoint's address and port: ADDR:PORT or [ADDR6]:PORT\n"
		  "(0.0.0.0 or [::]: any destination address)" },
	{ OPT_UINT, "queue", 'q', OPT_FIELD(struct xvi_cfg, queue), "Q",
	  .help = "the receive queue its datagrams go to", .max = 65535,
	  .err = "give a queue number" },
	{ OPT_FUNC, "rule", 'r', .metavar = "LOC", .fn = set_rule,
	  .help = "the rule's location (default: the driver picks)" },
	{ OPT_END },
};

static const struct opt_def steer_del_opts[] = {
	{ OPT_FUNC, "rule", 'r', .metavar = "LOC", .fn = set_rule,
	  .help = "the location 'steer add' printed" },
	{ OPT_END },
};

static const struct cmd_def steer_cmds[] = {
	{ "steer add", cmd_steer_add, "IFACE", 1, 1, steer_add_opts,
	  "steer an endpoint's port to a receive queue (ntuple)",
	  "Install an ntuple rule on IFACE that sends UDP datagrams to the\n"
	  "endpoint's address and port to receive queue Q, where its endpoint (or\n"
	  "that queue's member of a spread port) is; print the rule's location.\n"
	  "Needs a NIC with ntuple filters ('ethtool -K IFACE ntuple on'); veth\n"
	  "has none.  Uses the ethtool ioctl: this kernel's ethtool netlink has no\n"
	  "message for these rules." },
	{ "steer del", cmd_steer_del, "IFACE", 1, 1, steer_del_opts,
	  "remove a steering rule",
	  "Remove the ntuple rule at location LOC from IFACE." },
	{ NULL },
};

static const struct cmd_def router_cmds[] = {
	{ "router enable", cmd_router_enable, "IFACE...", 1, XVI_ROUTE_MAX_IFACES, NULL,
	  "route IP between interfaces in the datapath",
	  "Turn the datapath's IP router on for every IFACE (each must have the\n"
	  "datapath attached): IPv4 and IPv6 frames to the interface's MAC that no\n"
	  "endpoint takes are forwarded in XDP with the kernel's routes and\n"
	  "neighbours, to any other routing interface.  What the router cannot\n"
	  "forward goes to the kernel.  The kernel's forwarding sysctl of the\n"
	  "ingress interface still decides.  See docs/EXTENSIONS.md." },
	{ "router disable", cmd_router_disable, "IFACE...", 1, XVI_ROUTE_MAX_IFACES, NULL,
	  "stop routing on interfaces",
	  "Turn the router off on every IFACE and take them out of the other\n"
	  "routing interfaces' egress maps: the kernel forwards again." },
	{ "router status", cmd_router_status, "[IFACE...]", 0, XVI_ROUTE_MAX_IFACES,
	  status_opts, "show routing state and counters",
	  "Show, for IFACE (or every attached interface), whether it routes, the\n"
	  "interfaces it forwards to, and the router's counters: rt_forwarded and\n"
	  "the frames passed to the kernel by reason." },
	{ NULL },
};

static const struct cmd_def hook_cmds[] = {
	{ "hook list", cmd_hook_list, "IFACE", 1, 1, status_opts,
	  "list the port hooks of IFACE",
	  "List the port hooks of IFACE's datapath: programs root installed for UDP\n"
	  "ports that no endpoint holds (xvi-kvcache attach --xdp).  For each: the\n"
	  "port, its index in the hook table, the program's id and name, and its\n"
	  "counters: hooked (datagrams handed to the program) and missing (none\n"
	  "there: passed to the kernel).  Needs root.  See docs/EXTENSIONS.md,\n"
	  "\"Port hooks\"." },
	{ NULL },
};

static const struct cmd_def cmds[] = {
	{ "attach", cmd_attach, "IFACE", 1, 1, attach_opts,
	  "load the datapath on IFACE and pin its maps",
	  "Load the xdp-vi datapath (XDP program xvi_demux) on IFACE through libxdp,\n"
	  "next to other libxdp programs, and pin its maps under\n"
	  "<bpffs>/xdp-vi/IFACE/.  Attaching twice in the same mode is a no-op.\n"
	  "With --napi thread, a veth's NAPI becomes threaded (native mode), so\n"
	  "that the receive work leaves the sending core; detach undoes it." },
	{ "detach", cmd_detach, "IFACE", 1, 1, NULL,
	  "remove the datapath and its pins from IFACE",
	  "Remove the xvi_demux program from IFACE (other libxdp programs stay) and\n"
	  "every pin and directory attach created, and undo a threaded NAPI that\n"
	  "attach set.  Also cleans up pins left\n"
	  "behind when the program is already gone.  IFACE leaves every other\n"
	  "interface's forward targets (ext forward) and routing egress\n"
	  "interfaces (router enable): what they routed out of it goes to the\n"
	  "kernel, which forwards it." },
	{ "status", cmd_status, "[IFACE]", 0, 1, status_opts,
	  "show the program, endpoints and counters",
	  "Show the attached program, every endpoint (slot, tag, owner, queue,\n"
	  "bind mode, counters and drops by reason) and the global counters of\n"
	  "IFACE, or of every interface with pins.  Endpoints of dead processes\n"
	  "are garbage-collected first." },
	{ "stats", cmd_stats, "[IFACE]", 0, 1, stats_opts,
	  "show counters, or rates with --interval",
	  "Show the datapath counters of IFACE (or every attached interface); with\n"
	  "--interval S print rates every S seconds, --count N times." },
	{ "serve", cmd_serve, "IFACE", 1, 1, serve_opts,
	  "run the endpoint broker xdp-vid for IFACE",
	  "Run xdp-vid IFACE in the foreground (the same program, exec'ed): it gives\n"
	  "unprivileged processes protected endpoints on IFACE, one veth pair each,\n"
	  "with a TX guard.  See xdp-vid(8)." },
	{ "trace", cmd_trace, "IFACE", 1, 1, trace_opts,
	  "stream the extension events of IFACE",
	  "Turn tracing on in IFACE's datapath and print every active message's\n"
	  "fate as it happens: time, endpoint, handler, action, frame length, and\n"
	  "the nanoseconds from dispatch to action.  Tracing is off again when the\n"
	  "command ends (^C, --count, --duration).  --pcap writes the frames with a\n"
	  "side file of their events, --plot a timeline per handler.  See\n"
	  "docs/EXTENSIONS.md, \"Tracing and per-handler counters\"." },
	{ "ext", NULL, "VERB ...", 0, 0, NULL,
	  "active-message handlers: ext load, ext list, ext unload, ext forward",
	  .verbs = ext_cmds },
	{ "steer", NULL, "VERB ...", 0, 0, NULL,
	  "steering rules: steer add, steer del", .verbs = steer_cmds },
	{ "router", NULL, "VERB ...", 0, 0, NULL,
	  "IP router: router enable, router disable, router status", .verbs = router_cmds },
	{ "hook", NULL, "VERB ...", 0, 0, NULL,
	  "port hooks: hook list", .verbs = hook_cmds },
	{ NULL },
};

/*
 * XDPVI_VERSION: the Makefile's VERSION, passed at build time; the
 * library's is asked at run time (the command links libxvi statically, so
 * they agree unless the build is broken).
 */
static int print_version(void)
{
	printf("xdp-vi %s (libxvi %s)\n", XDPVI_VERSION, xvi_version());
	return 0;
}

int main(int argc, char **argv)
{
	struct xvi_cfg cfg = {};
	/* Library messages: keep errors readable, "xdp-vi:" instead of "libxvi:". */
	const struct print_opts print = {
		.verbosity = &cfg.verbose, .prog = "xdp-vi", .info_from = 1, .debug_from = 2,
		.libbpf = true, .libxdp = true,
	};
	const struct cmd_def *cmd;
	int first;

	first = cmd_parse_global(argc, argv, &cfg);
	if (first < 0)
		return 1;
	if (cfg.version)
		return print_version();
	if (first >= argc) {
		cmd_usage_all(cmds);
		return cfg.help ? 0 : 1;
	}
	for (cmd = cmds; cmd->name; cmd++)
		if (!strcmp(cmd->name, argv[first]))
			break;
	if (cmd->name && !cmd->run) {
		/* A group of verbs ("ext load"): the verb names the command. */
		const struct cmd_def *group = cmd;

		for (cmd = group->verbs; cmd->name && first + 1 < argc; cmd++)
			if (!strcmp(cmd->name + strlen(group->name) + 1, argv[first + 1]))
				break;
		if (first + 1 >= argc || !cmd->name) {
			fprintf(stderr, "xdp-vi: %s: expected a verb:", group->name);
			for (cmd = group->verbs; cmd->name; cmd++)
				fprintf(stderr, " '%s'", cmd->name);
			fprintf(stderr, "\n");
			return 1;
		}
		first++;
	}
	if (!cmd->name) {
		if (!strcmp(argv[first], "help")) {
			cmd_usage_all(cmds);
			return 0;
		}
		fprintf(stderr, "xdp-vi: unknown command '%s'; commands:", argv[first]);
		for (cmd = cmds; cmd->name; cmd++)
			fprintf(stderr, " %s", cmd->name);
		fprintf(stderr, " (xdp-vi --help)\n");
		return 1;
	}
	if (cmd_parse(cmd, argc - first, argv + first, &cfg))
		return 1;
	if (cfg.version)
		return print_version();
	if (cfg.help) {
		cmd_usage(cmd, true);
		return 0;
	}
	if ((cmd->run == cmd_ext_load || cmd->run == cmd_ext_unload) &&
	    (!cfg.endpoint || !cfg.handler_set)) {
		fprintf(stderr, "xdp-vi %s: --endpoint TAG and --handler N are required\n",
			cmd->name);
		cmd_usage(cmd, false);
		return 1;
	}

	print_setup(&print);
	/*
	 * libxdp keeps its dispatcher state in its own bpffs (LIBXDP_BPFFS, by
	 * default /sys/fs/bpf): keep it on the same one as our pins, before the
	 * first libxdp call caches its choice.
	 */
	if (cfg.bpffs && !getenv("LIBXDP_BPFFS"))
		setenv("LIBXDP_BPFFS", cfg.bpffs, 1);
	else if (!cfg.bpffs && getenv("XVI_BPFFS") && *getenv("XVI_BPFFS") &&
		 !getenv("LIBXDP_BPFFS"))
		setenv("LIBXDP_BPFFS", getenv("XVI_BPFFS"), 1);
	return cmd->run(&cfg);
}
