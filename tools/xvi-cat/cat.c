// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-cat: netcat for xdp-vi endpoints.
 *   xvi-cat --iface IF -l [IP] PORT      stream: accept one, copy it to stdout
 *   xvi-cat --iface IF IP PORT           stream: copy stdin to the peer
 *   xvi-cat -u --iface IF -l [IP] PORT   each datagram's payload to stdout
 *   xvi-cat -u --iface IF IP PORT        each stdin line as one datagram
 * --kernel does the same over kernel TCP / UDP sockets.
 */
#include <getopt.h>
#include "cat.h"
#include "print.h"

int cat_verbosity;

static void usage(FILE *f)
{
	fprintf(f,
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
"\n"
"  -u               UDP mode: one datagram per line\n"
"  -l               listen on IP (default 0.0.0.0; give :: for IPv6) and PORT\n"
"      --iface IF   the interface that runs the xdp-vi datapath (required unless\n"
"                   --kernel)\n"
"      --kernel     use kernel sockets instead (TCP in stream mode, UDP with -u)\n"
"      --queue Q    interface queue to bind (default 0)\n"
"      --multi-buffer  datagrams and stream segments up to the MTU, across\n"
"                   several frames (XVI_EP_MULTI_BUFFER)\n"
"  -w SEC           stream: fail (exit 1) after SEC seconds without progress,\n"
"                   connecting and accepting included.  UDP: exit 0 after SEC\n"
"                   seconds without datagrams once one arrived, exit 1 if none\n"
"                   arrived within SEC; a sender keeps printing replies until\n"
"                   SEC seconds of silence\n"
"  -c N             UDP: exit after N datagrams (received, or sent)\n"
"      --conns N    stream: N connections over one endpoint at once; the\n"
"                   sender sends all of stdin (at most 16 MiB) on each, the\n"
"                   listener accepts N and prints each one's data in one piece\n"
"  -s PORT          sender's source port (default from the pid, 49152..65535)\n"
"  -n               accepted for netcat habits (names are never resolved)\n"
"  -v, --verbose    progress and library debug messages (-vv: more)\n"
"  -h, --help       this help\n"
"\n"
"UDP payloads are written as they are, no byte added.  A sent line includes\n"
"its newline; a line longer than the endpoint's largest datagram is an error.\n"
"Exit status: 0 success, 1 failure, 2 usage error.\n");
}

#define usage_err(...) opt_error("xvi-cat", __VA_ARGS__)

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * Write up to @limit (0 = all) received datagrams to stdout, waiting up to
 * @timeout_ms for the first.  Returns how many were written or -errno
 * (after a message saying what failed).
 */
static int drain(struct xt *t, int timeout_ms, unsigned long long limit)
{
	struct xvi_msg msgs[XT_BATCH];
	int n, i, done = 0, err = 0;

	if (timeout_ms) {
		n = xt_wait(t, timeout_ms);
		if (n < 0) {
			fprintf(stderr, "xvi-cat: wait failed: %s\n", strerror(-n));
			return n;
		}
	}
	n = xt_recv(t, msgs, XT_BATCH);
	if (n < 0) {
		fprintf(stderr, "xvi-cat: receive failed: %s\n", strerror(-n));
		return n;
	}
	for (i = 0; i < n && !err; i++) {
		if (limit && (unsigned long long)done >= limit)
			break;
		err = write_all(STDOUT_FILENO, msgs[i].data, msgs[i].len);
		if (!err)
			done++;
	}
	xt_release(t, msgs, n);
	if (err) {
		fprintf(stderr, "xvi-cat: cannot write to stdout: %s\n", strerror(-err));
		return err;
	}
	return done;
}

static int run_listener(const struct cat_cfg *cfg)
{
	unsigned long long got = 0;
	__u64 start, last = 0;
	struct xt t;
	char a[64];
	int rc = 0;

	if (xt_open(&t, &cfg->xt, &cfg->addr))
		return 1;
	if (cat_verbosity)
		fprintf(stderr, "xvi-cat: listening on %s (%s)\n",
			xt_addr_str(&cfg->addr, a, sizeof(a)), cfg->xt.kernel ? "kernel" : "xvi");
	start = xt_now_ns();
	while (!xt_stop && (!cfg->count || got < cfg->count)) {
		int timeout = 500, n;

		if (cfg->idle > 0) {
			__u64 deadline = (got ? last : start) + (__u64)(cfg->idle * 1e9);

			if (xt_now_ns() >= deadline) {
				if (!got) {
					fprintf(stderr, "xvi-cat: nothing arrived on %s within %g s\n",
						xt_addr_str(&cfg->addr, a, sizeof(a)), cfg->idle);
					rc = 1;
				}
				break;
			}
			timeout = xt_ms_until(deadline);
			if (timeout > 500)
				timeout = 500;
		}
		n = drain(&t, timeout, cfg->count ? cfg->count - got : 0);
		if (n < 0) {
			rc = 1;
			break;
		}
		if (n) {
			got += (unsigned long long)n;
			last = xt_now_ns();
		}
	}
	xt_close(&t);
	return rc;
}

static const char *send_hint(int err)
{
	switch (err) {
	case EHOSTUNREACH:
		return ": no route or no neighbour answer for the destination: check the address and 'ip route'";
	case EAFNOSUPPORT:
		return ": the destination family does not fit the endpoint";
	case EAGAIN:
		return ": the send queue stayed full";
	default:
		return "";
	}
}

static int run_sender(const struct cat_cfg *cfg)
{
	unsigned long long sent = 0, lineno = 0;
	union xvi_sockaddr local;
	char *line = NULL, a[64];
	size_t cap = 0;
	ssize_t len;
	struct xt t;
	int rc = 0;

	xt_any_addr(cfg->addr.sa.sa_family,
		    cfg->src_port ? (__u16)cfg->src_port : xt_pid_port(), &local);
	if (xt_open(&t, &cfg->xt, &local))
		return 1;
	while (!xt_stop && (!cfg->count || sent < cfg->count)) {
		ssize_t r;
		__u64 give_up;

		errno = 0;
		len = getline(&line, &cap, stdin);
		if (len < 0) {
			if (errno && errno != EINTR) {
				fprintf(stderr, "xvi-cat: cannot read stdin: %s\n", strerror(errno));
				rc = 1;
			}
			break;
		}
		lineno++;
		if ((size_t)len > t.max_payload) {
			fprintf(stderr, "xvi-cat: line %llu is %zd bytes, above the largest datagram this endpoint sends (%u bytes, EMSGSIZE): shorten the line\n",
				lineno, len, t.max_payload);
			rc = 1;
			break;
		}
		/* A full send queue drains as completions come back: retry a while. */
		give_up = xt_now_ns() + 1000000000ull;
		while ((r = xt_sendto(&t, line, (size_t)len, &cfg->addr)) == -EAGAIN &&
		       xt_now_ns() < give_up && !xt_stop)
			xt_flush(&t);
		if (r < 0) {
			fprintf(stderr, "xvi-cat: cannot send line %llu to %s: %s%s\n", lineno,
				xt_addr_str(&cfg->addr, a, sizeof(a)), strerror((int)-r),
				send_hint((int)-r));
			rc = 1;
			break;
		}
		sent++;
		/* Replies, if any, go to stdout as they come, like netcat. */
		if (drain(&t, 0, 0) < 0) {
			rc = 1;
			break;
		}
	}
	free(line);
	if (!rc && cfg->idle > 0) {
		__u64 deadline = xt_now_ns() + (__u64)(cfg->idle * 1e9);

		while (!xt_stop && xt_now_ns() < deadline) {
			int n = drain(&t, xt_ms_until(deadline), 0);

			if (n < 0) {
				rc = 1;
				break;
			}
			if (n > 0)
				deadline = xt_now_ns() + (__u64)(cfg->idle * 1e9);
		}
	}
	xt_close(&t);
	return rc;
}

enum { OPT_IFACE = 256, OPT_KERNEL, OPT_QUEUE, OPT_CONNS, OPT_MULTI_BUFFER };

static const struct option long_opts[] = {
	{ "iface",	required_argument, NULL, OPT_IFACE },
	{ "kernel",	no_argument,	   NULL, OPT_KERNEL },
	{ "queue",	required_argument, NULL, OPT_QUEUE },
	{ "conns",	required_argument, NULL, OPT_CONNS },
	{ "multi-buffer", no_argument,	   NULL, OPT_MULTI_BUFFER },
	{ "udp",	no_argument,	   NULL, 'u' },
	{ "listen",	no_argument,	   NULL, 'l' },
	{ "verbose",	no_argument,	   NULL, 'v' },
	{ "help",	no_argument,	   NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

int main(int argc, char **argv)
{
	struct cat_cfg cfg = {
		.xt = { .prog = "xvi-cat", .wait = XVI_WAIT_ADAPTIVE },
	};
	const char *ip = NULL, *port_s;
	unsigned long v, port;
	int c, npos;

	while ((c = getopt_long(argc, argv, "ulw:c:s:nvh", long_opts, NULL)) != -1) {
		switch (c) {
		case 'u':
			cfg.udp = true;
			break;
		case 'l':
			cfg.listen = true;
			break;
		case 'w':
			if (xt_parse_seconds(optarg, 86400 * 365, &cfg.idle) || cfg.idle <= 0)
				return usage_err("-w %s: give seconds above 0, e.g. -w 2", optarg);
			break;
		case 'c':
			if (xt_parse_ulong(optarg, 1, ULONG_MAX, &v))
				return usage_err("-c %s: give a count of datagrams, 1 or more", optarg);
			cfg.count = v;
			break;
		case 's':
			if (xt_parse_ulong(optarg, 1, 65535, &cfg.src_port))
				return usage_err("-s %s: a port is 1..65535", optarg);
			break;
		case 'n':
			break;
		case OPT_IFACE:
			cfg.xt.iface = optarg;
			break;
		case OPT_KERNEL:
			cfg.xt.kernel = true;
			break;
		case OPT_QUEUE:
			if (xt_parse_ulong(optarg, 0, 65535, &v))
				return usage_err("--queue %s: give a queue number", optarg);
			cfg.xt.queue = (__u32)v;
			break;
		case OPT_MULTI_BUFFER:
			cfg.xt.ep_flags |= XVI_EP_MULTI_BUFFER;
			break;
		case OPT_CONNS:
			if (xt_parse_ulong(optarg, 1, 1000, &cfg.conns))
				return usage_err("--conns %s: give 1..1000 connections", optarg);
			break;
		case 'v':
			cat_verbosity++;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return usage_err("bad option");
		}
	}
	if (!cfg.udp && cfg.count)
		return usage_err("-c counts datagrams: it needs -u");
	if (cfg.conns && (cfg.udp || cfg.xt.kernel))
		return usage_err("--conns is for xvi streams (not -u, not --kernel)");
	if (!cfg.xt.iface && !cfg.xt.kernel)
		return usage_err("--iface is required: the interface that runs the xdp-vi datapath "
				 "(xdp-vi attach IFACE), or --kernel for kernel sockets");
	npos = argc - optind;
	if (cfg.listen) {
		if (npos < 1 || npos > 2)
			return usage_err("-l takes [IP] PORT");
		if (npos == 2)
			ip = argv[optind];
	} else {
		if (npos != 2)
			return usage_err("a sender takes IP PORT (or use -l to listen)");
		ip = argv[optind];
	}
	if (cfg.listen && cfg.src_port)
		return usage_err("-s is for a sender; a listener binds PORT");
	port_s = argv[argc - 1];
	if (xt_parse_ulong(port_s, 1, 65535, &port))
		return usage_err("%s: a port is 1..65535", port_s);
	if (!ip)
		xt_any_addr(AF_INET, (__u16)port, &cfg.addr);
	else if (xt_parse_ip(ip, (__u16)port, &cfg.addr))
		return usage_err("%s: not an IPv4 or IPv6 address literal", ip);

	print_setup(&(struct print_opts){ .verbosity = &cat_verbosity, .debug_from = 2 });
	xt_install_signals();
	if (!cfg.udp)
		return cfg.listen ? cat_stream_listener(&cfg) : cat_stream_sender(&cfg);
	return cfg.listen ? run_listener(&cfg) : run_sender(&cfg);
}
