// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-tcpserver [options] [IP] PORT
 *
 * Listen for tunnels from application hosts on xvi stream service PORT of
 * the datapath on --iface, and carry out their socket calls on this node's
 * kernel TCP sockets.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include "tcpserver.h"
#include "signals.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xvi-tcpserver --iface IFACE [options] [IP] PORT\n"
		"  MemNet's TCP Server: hosts connect over xvi streams to service PORT\n"
		"  (an endpoint on IFACE at IP:PORT, default 0.0.0.0) and their socket\n"
		"  calls run on this node's kernel TCP sockets.\n"
		"  -i, --iface IFACE     interface running the datapath (xdp-vi attach IFACE)\n"
		"  -m, --max-conns N     kernel sockets per host (default 4096)\n"
		"  -w, --window BYTES    per-socket credit each way (default %u)\n"
		"  -v, --verbose         tunnels opening and closing\n"
		"  -h, --help\n", XVI_TUN_WINDOW);
}

static int parse_u32(const char *opt, const char *s, __u32 min, __u32 max, __u32 *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end || end == s || v < min || v > max) {
		fprintf(stderr, "xvi-tcpserver: %s %s: give a number in %u..%u\n", opt, s, min, max);
		return -1;
	}
	*out = (__u32)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct srv_cfg *cfg)
{
	static const struct option lo[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "max-conns", required_argument, NULL, 'm' },
		{ "window", required_argument, NULL, 'w' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *ip = NULL, *why;
	__u16 port;
	int c;

	while ((c = getopt_long(argc, argv, "i:m:w:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'i':
			cfg->xst.xt.iface = optarg;
			break;
		case 'm':
			if (parse_u32("--max-conns", optarg, 1, 1u << 20, &cfg->max_conns))
				return 2;
			break;
		case 'w':
			if (parse_u32("--window", optarg, XVI_TUN_MAX_PAYLOAD, 1u << 30,
				      &cfg->window))
				return 2;
			break;
		case 'v':
			cfg->verbose++;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!cfg->xst.xt.iface) {
		fprintf(stderr, "xvi-tcpserver: --iface is required: the interface that runs the xdp-vi datapath (xdp-vi attach IFACE)\n");
		return 2;
	}
	if (argc - optind < 1 || argc - optind > 2) {
		usage(stderr);
		return 2;
	}
	if (argc - optind == 2)
		ip = argv[optind];
	if ((why = xt_parse_port(argv[argc - 1], &port))) {
		fprintf(stderr, "xvi-tcpserver: %s: %s\n", argv[argc - 1], why);
		return 2;
	}
	if (!ip)
		xt_any_addr(AF_INET, port, &cfg->addr);
	else if ((why = xt_parse_ip(ip, port, &cfg->addr))) {
		fprintf(stderr, "xvi-tcpserver: %s: %s\n", ip, why);
		return 2;
	}
	return 0;
}

/* Many connections: as many descriptors as the hard limit allows. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void reap(struct srv *srv)
{
	while (srv->grave) {
		struct tsock *ts = srv->grave;

		srv->grave = ts->gnext;
		free(ts);
	}
	while (srv->tgrave) {
		struct tun *t = srv->tgrave;

		srv->tgrave = t->next;
		tbuf_free(&t->in);
		tbuf_free(&t->out);
		free(t->socks);
		free(t);
	}
}

static int run(struct srv *srv)
{
	struct epoll_event evs[256], ev = { .events = EPOLLIN };
	char a[64];

	srv->ep = epoll_create1(EPOLL_CLOEXEC);
	if (srv->ep < 0 || epoll_ctl(srv->ep, EPOLL_CTL_ADD, xvi_stream_ctx__fd(srv->o.ctx), &ev)) {
		fprintf(stderr, "xvi-tcpserver: epoll: %s\n", strerror(errno));
		return 1;
	}
	fprintf(stderr, "xvi-tcpserver: tunnels on %s via %s, %u sockets per host, window %u\n",
		xt_addr_str(&srv->cfg->addr, a, sizeof(a)), srv->cfg->xst.xt.iface,
		srv->cfg->max_conns, srv->cfg->window);
	while (!xt_stop) {
		int n = epoll_wait(srv->ep, evs, 256, 100);
		union xvi_sockaddr peer;
		struct xst_conn c;

		for (int i = 0; i < n; i++)
			if (evs[i].data.ptr)
				sock_event(evs[i].data.ptr, evs[i].events);
		xvi_stream_ctx__process(srv->o.ctx);
		while (xst_accept(&srv->l, &c, &peer) > 0)
			tun_new(srv, c.s, &peer);
		for (struct tun *t = srv->tuns, *next; t; t = next) {
			next = t->next;
			tun_pump(t);
		}
		reap(srv);
	}
	while (srv->tuns)
		tun_kill(srv->tuns, 0);
	reap(srv);
	return 0;
}

int main(int argc, char **argv)
{
	struct srv_cfg cfg = {
		.xst = { .xt = { .prog = "xvi-tcpserver", .wait = XVI_WAIT_BLOCK }, .nodelay = true },
		.max_conns = 4096,
		.window = XVI_TUN_WINDOW,
	};
	struct srv srv = { .cfg = &cfg, .ep = -1 };
	int err;

	err = parse_args(argc, argv, &cfg);
	if (err)
		return err == 1 ? 0 : err;
	raise_nofile();
	xt_install_signals();
	if (xst_open(&srv.o, &cfg.xst, &cfg.addr))
		return 1;
	if (xst_listen(&srv.o, &cfg.xst, &cfg.addr, 64, &srv.l)) {
		xst_close(&srv.o);
		return 1;
	}
	err = run(&srv);
	xst_conn_close(&srv.l, false);
	xst_close(&srv.o);
	if (srv.ep >= 0)
		close(srv.ep);
	return err;
}
