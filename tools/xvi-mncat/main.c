// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-mncat: netcat over MemNet remote sockets.  The sockets live on a TCP
 * Server (xvi-tcpserver) reached over the datapath on --iface; this host
 * does no TCP itself.
 *
 *   xvi-mncat -i IFACE -s SERVER:SPORT IP PORT     connect, then cat
 *   xvi-mncat -i IFACE -s SERVER:SPORT -l PORT     listen on the server's
 *                                                  PORT, accept one, cat
 *   ... -l PORT --echo --conns N                   echo N connections at once
 *
 * Cat: stdin to the socket (then SHUT_WR), the socket to stdout, until both
 * ended.  --abort: close with RST after stdin's end instead of FIN.
 * --recv-only: leave stdin alone and the write side open.  --async: cat
 * with MemNet jobs (async_send / async_recv) on registered buffers instead
 * of send/recv.  --direct: cat with send_direct / recv_direct on a
 * registered buffer, then print how many bytes went by reference and
 * landed in place.  Errors are printed with the errno's name and exit 1.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <xvi_memnet.h>
#include "stream_transport.h"
#include "signals.h"

#define BUF	(64 * 1024)
/*
 * The region's receive half: more than the tunnel's window (64 KiB), so
 * the socket's ring never holds a whole recv_direct: each one that is
 * not the last waits for bytes its own credit brings, and they land in
 * place, however late the call comes.
 */
#define RBUF	(2 * BUF)

struct cfg {
	struct xst_cfg xst;
	union xvi_sockaddr server, dst;
	__u16 lport;
	bool listen, echo, abort, recv_only, async, direct;
	struct xvi_stream_ctx *sctx;
	int conns;
	int verbose;
};

static int fail(const char *what, int err)
{
	fprintf(stderr, "xvi-mncat: %s: %s (%s)\n", what, strerror(err), strerrorname_np(err));
	return 1;
}

/* Stdin ended: FIN, or RST with --abort.  1: aborted, 0: FIN queued, -1: failed. */
static int end_write(struct xvi_memnet_ctx *mn, int sd, const struct cfg *cfg)
{
	int r;

	if (cfg->abort) {
		xvi_memnet_ctx__abort(mn, sd);
		return 1;
	}
	r = xvi_memnet_ctx__shutdown(mn, sd, SHUT_WR);
	return r ? -fail("shutdown", -r) : 0;
}

static int cat(struct xvi_memnet_ctx *mn, int sd, const struct cfg *cfg)
{
	char *in = malloc(BUF), *out = malloc(BUF);
	size_t ioff = 0, ilen = 0;
	bool in_eof = cfg->recv_only, peer_eof = false, shut = cfg->recv_only;
	int rc = 0;

	if (!in || !out)
		return fail("malloc", ENOMEM);
	fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);
	while (!xt_stop && (!peer_eof || !shut)) {
		struct xvi_memnet_pollfd p = { .sd = sd, .events = POLLIN };
		struct pollfd f[2] = { { .fd = xvi_memnet_ctx__fd(mn), .events = POLLIN },
				       { .fd = STDIN_FILENO, .events = POLLIN } };
		bool progress = false;
		ssize_t r;

		if (!in_eof && ilen == ioff) {
			r = read(STDIN_FILENO, in, BUF);
			if (r > 0) {
				ioff = 0;
				ilen = (size_t)r;
			} else if (!r) {
				in_eof = true;
			} else if (errno != EAGAIN) {
				rc = fail("read stdin", errno);
				break;
			}
		}
		if (ioff < ilen) {
			r = xvi_memnet_ctx__send(mn, sd, in + ioff, ilen - ioff, 0);
			if (r > 0) {
				ioff += (size_t)r;
				progress = true;
			} else if (r != -EAGAIN) {
				rc = fail("send", (int)-r);
				break;
			}
		}
		if (in_eof && ioff == ilen && !shut) {
			int e = end_write(mn, sd, cfg);

			if (e == 1) {
				free(in);
				free(out);
				return 0;
			}
			if (e) {
				rc = 1;
				break;
			}
			shut = true;
		}
		while (!peer_eof) {
			r = xvi_memnet_ctx__recv(mn, sd, out, BUF, 0);
			if (r == -EAGAIN)
				break;
			if (r < 0) {
				rc = fail("recv", (int)-r);
				goto out;
			}
			if (!r) {
				peer_eof = true;
				break;
			}
			if (fwrite(out, 1, (size_t)r, stdout) != (size_t)r) {
				rc = fail("write stdout", errno);
				goto out;
			}
			progress = true;
		}
		if (progress)
			continue;
		if (xvi_memnet_ctx__poll(mn, &p, 1, 0) > 0)
			continue;
		if (ioff < ilen) {
			struct xvi_memnet_pollfd w = { .sd = sd, .events = POLLOUT };

			xvi_memnet_ctx__poll(mn, &w, 1, 100);
			continue;
		}
		poll(f, in_eof ? 1 : 2, 100);
	}
out:
	fflush(stdout);
	if (!rc)
		xvi_memnet_ctx__close(mn, sd);
	free(in);
	free(out);
	return rc;
}

/* A registered region for acat and dcat, BUF to send, RBUF to receive: its id, or -1. */
static int region_new(const struct cfg *cfg, char **mem)
{
	int reg;

	*mem = malloc(BUF + RBUF);
	if (!*mem)
		return -fail("malloc", ENOMEM);
	reg = xvi_stream_ctx__register_mem(cfg->sctx, *mem, BUF + RBUF);
	if (reg < 0) {
		free(*mem);
		return -fail("register_mem", -reg);
	}
	fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);
	return reg;
}

/* A receive's result @r (bytes at @p, or -errno) to stdout; 0 or 1 (failed). */
static int put_out(const char *what, const char *p, ssize_t r)
{
	if (r < 0)
		return fail(what, (int)-r);
	if (fwrite(p, 1, (size_t)r, stdout) != (size_t)r)
		return fail("write stdout", errno);
	return 0;
}

/*
 * Cat with jobs: one receive job of BUF bytes is always posted (it
 * completes full, short at the peer's FIN or before an error, 0 at the
 * end), one send job per block read
 * from stdin.  Both live in one registered region.
 */
static int acat(struct xvi_memnet_ctx *mn, int sd, const struct cfg *cfg)
{
	struct xvi_memnet_job *rj = NULL, *sj = NULL;
	bool in_eof = cfg->recv_only, peer_eof = false, shut = cfg->recv_only, aborted = false;
	int rc = 0;
	ssize_t r;
	char *mem;
	int reg = region_new(cfg, &mem);

	if (reg < 0)
		return 1;
	while (!xt_stop && (!peer_eof || !shut || sj)) {
		struct pollfd f[2] = { { .fd = xvi_memnet_ctx__fd(mn), .events = POLLIN },
				       { .fd = STDIN_FILENO, .events = POLLIN } };
		bool progress = false;

		if (!peer_eof && !rj && !(rj = xvi_memnet_ctx__async_recv(mn, sd, reg, BUF, BUF))) {
			rc = fail("async_recv", errno);
			break;
		}
		if (!sj && !in_eof) {
			r = read(STDIN_FILENO, mem, BUF);
			if (r > 0 && !(sj = xvi_memnet_ctx__async_send(mn, sd, reg, 0, (size_t)r))) {
				rc = fail("async_send", errno);
				break;
			}
			if (!r)
				in_eof = true;
			else if (r < 0 && errno != EAGAIN) {
				rc = fail("read stdin", errno);
				break;
			}
			progress = r >= 0;
		}
		if (sj && xvi_memnet_job__done(sj, &r) == 1) {
			sj = NULL;
			if (r < 0) {
				rc = fail("send", (int)-r);
				break;
			}
			progress = true;
		}
		if (in_eof && !sj && !shut) {
			int e = end_write(mn, sd, cfg);

			if (e == 1) {	/* the abort completed rj */
				aborted = true;
				break;
			}
			if (e) {
				rc = 1;
				break;
			}
			shut = true;
		}
		if (rj && xvi_memnet_job__done(rj, &r) == 1) {
			rj = NULL;
			if ((rc = put_out("recv", mem + BUF, r)))
				break;
			/* Short is not the end: an error may follow the bytes
			 * before it, as with recv(2); 0 is the end. */
			peer_eof = !r;
			progress = true;
		}
		if (progress)
			continue;
		if (rj && (in_eof || sj))
			xvi_memnet_job__wait(rj, 100);
		else if (sj)
			xvi_memnet_job__wait(sj, 100);
		else
			poll(f, in_eof ? 1 : 2, 100);
	}
	fflush(stdout);
	/* Abort completes what a failure left pending; close after a clean end. */
	if (!aborted && (rc || rj || sj))
		xvi_memnet_ctx__abort(mn, sd);
	else if (!aborted)
		xvi_memnet_ctx__close(mn, sd);
	if (rj)
		xvi_memnet_job__done(rj, &r);
	if (sj)
		xvi_memnet_job__done(sj, &r);
	xvi_stream_ctx__deregister_mem(cfg->sctx, reg);
	free(mem);
	return rc;
}

/*
 * Cat with the direct primitives on one registered region: a block read
 * from stdin goes out with send_direct (which returns once the TCP Server
 * holds it), and a readable socket is read with recv_direct into the
 * region's other half (full, or short at the peer's FIN).
 */
static int dcat(struct xvi_memnet_ctx *mn, int sd, const struct cfg *cfg)
{
	struct xvi_memnet_ctx_stats st = { .sz = sizeof(st) };
	bool in_eof = cfg->recv_only, peer_eof = false, shut = cfg->recv_only;
	int rc = 0;
	ssize_t r, w;
	char *mem;
	int reg = region_new(cfg, &mem);

	if (reg < 0)
		return 1;
	while (!xt_stop && (!peer_eof || !shut)) {
		struct xvi_memnet_pollfd p = { .sd = sd, .events = POLLIN };
		struct pollfd f[2] = { { .fd = xvi_memnet_ctx__fd(mn), .events = POLLIN },
				       { .fd = STDIN_FILENO, .events = POLLIN } };
		bool progress = false;

		if (!in_eof) {
			r = read(STDIN_FILENO, mem, BUF);
			if (r > 0) {
				w = xvi_memnet_ctx__send_direct(mn, sd, reg, 0, (size_t)r);
				if (w != r) {
					rc = fail("send_direct", w < 0 ? (int)-w : EIO);
					break;
				}
			} else if (!r) {
				in_eof = true;
			} else if (errno != EAGAIN) {
				rc = fail("read stdin", errno);
				break;
			}
			progress = r >= 0;
		}
		if (in_eof && !shut) {
			int e = end_write(mn, sd, cfg);

			if (e == 1)
				goto out;
			if (e) {
				rc = 1;
				break;
			}
			shut = true;
		}
		/* With nothing to send, wait in recv_direct: what arrives lands
		 * in the region; a poll would take it into the ring first. */
		if (!peer_eof && (in_eof || xvi_memnet_ctx__poll(mn, &p, 1, 0) > 0)) {
			r = xvi_memnet_ctx__recv_direct(mn, sd, reg, BUF, RBUF);
			if ((rc = put_out("recv_direct", mem + BUF, r)))
				break;
			peer_eof = !r;
			progress = true;
		}
		if (!progress)
			poll(f, in_eof ? 1 : 2, 100);
	}
	fflush(stdout);
	if (rc)
		xvi_memnet_ctx__abort(mn, sd);
	else
		xvi_memnet_ctx__close(mn, sd);
out:
	xvi_memnet_ctx__stats(mn, &st);
	fprintf(stderr, "xvi-mncat: direct: %llu bytes sent by reference, %llu received in place\n",
		(unsigned long long)st.tx_ref_bytes, (unsigned long long)st.rx_direct_bytes);
	xvi_stream_ctx__deregister_mem(cfg->sctx, reg);
	free(mem);
	return rc;
}

/* Echo up to @n connections at once, each until its peer's FIN. */
static int echo(struct xvi_memnet_ctx *mn, int ls, int n)
{
	struct xvi_memnet_pollfd *p = calloc((size_t)n + 1, sizeof(*p));
	char *buf = malloc(BUF);
	int live = 0, accepted = 0, rc = 0;

	if (!p || !buf)
		return fail("malloc", ENOMEM);
	p[0] = (struct xvi_memnet_pollfd){ .sd = ls, .events = POLLIN };
	while (!xt_stop && (accepted < n || live)) {
		int r = xvi_memnet_ctx__poll(mn, p, live + 1, 200);

		if (r < 0) {
			rc = fail("poll", -r);
			break;
		}
		while (accepted < n) {
			int sd = xvi_memnet_ctx__accept(mn, ls, NULL);

			if (sd == -EAGAIN)
				break;
			if (sd < 0) {
				rc = fail("accept", -sd);
				goto out;
			}
			accepted++;
			p[++live] = (struct xvi_memnet_pollfd){ .sd = sd, .events = POLLIN };
		}
		for (int i = 1; i <= live; i++) {
			ssize_t got;

			if (!p[i].revents)
				continue;
			got = xvi_memnet_ctx__recv(mn, p[i].sd, buf, BUF, 0);
			if (got == -EAGAIN)
				continue;
			if (got > 0) {
				/* the echo waits for credit: POLLOUT */
				for (ssize_t off = 0; off < got;) {
					ssize_t w = xvi_memnet_ctx__send(mn, p[i].sd, buf + off,
								 (size_t)(got - off), 0);

					if (w == -EAGAIN) {
						struct xvi_memnet_pollfd o = { .sd = p[i].sd,
									   .events = POLLOUT };

						xvi_memnet_ctx__poll(mn, &o, 1, 100);
						continue;
					}
					if (w < 0) {
						rc = fail("send", (int)-w);
						goto out;
					}
					off += w;
				}
				continue;
			}
			if (got < 0) {
				rc = fail("recv", (int)-got);
				goto out;
			}
			xvi_memnet_ctx__close(mn, p[i].sd);
			p[i--] = p[live--];
		}
	}
out:
	free(p);
	free(buf);
	return rc;
}

static int parse(int argc, char **argv, struct cfg *cfg)
{
	static const struct option lo[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "server", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "echo", no_argument, NULL, 'e' },
		{ "conns", required_argument, NULL, 'n' },
		{ "abort", no_argument, NULL, 'a' },
		{ "recv-only", no_argument, NULL, 'R' },
		{ "async", no_argument, NULL, 'A' },
		{ "direct", no_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *why;
	char *colon;
	__u16 port;
	int c;

	while ((c = getopt_long(argc, argv, "i:s:l:en:aRADh", lo, NULL)) != -1) {
		switch (c) {
		case 'i':
			cfg->xst.xt.iface = optarg;
			break;
		case 's':
			colon = strrchr(optarg, ':');
			if (!colon || (why = xt_parse_port(colon + 1, &port))) {
				fprintf(stderr, "xvi-mncat: --server %s: give IP:PORT (the xvi-tcpserver's endpoint)\n",
					optarg);
				return 2;
			}
			*colon = 0;
			why = xt_parse_ip(optarg, port, &cfg->server);
			*colon = ':';
			if (why) {
				fprintf(stderr, "xvi-mncat: --server %s: %s\n", optarg, why);
				return 2;
			}
			break;
		case 'l':
			if ((why = xt_parse_port(optarg, &cfg->lport))) {
				fprintf(stderr, "xvi-mncat: -l %s: %s\n", optarg, why);
				return 2;
			}
			cfg->listen = true;
			break;
		case 'e':
			cfg->echo = true;
			break;
		case 'n':
			cfg->conns = atoi(optarg);
			if (cfg->conns < 1) {
				fprintf(stderr, "xvi-mncat: --conns %s: give a count >= 1\n", optarg);
				return 2;
			}
			break;
		case 'a':
			cfg->abort = true;
			break;
		case 'R':
			cfg->recv_only = true;
			break;
		case 'A':
			cfg->async = true;
			break;
		case 'D':
			cfg->direct = true;
			break;
		case 'h':
			printf("usage: xvi-mncat -i IFACE -s SERVER:SPORT (IP PORT | -l PORT [--echo] [--conns N]) [--abort] [--recv-only] [--async | --direct]\n");
			return 1;
		default:
			return 2;
		}
	}
	if (cfg->async && cfg->direct) {
		fprintf(stderr, "xvi-mncat: --async and --direct are two ways to cat: give one\n");
		return 2;
	}
	if (!cfg->xst.xt.iface || !cfg->server.sa.sa_family) {
		fprintf(stderr, "xvi-mncat: --iface and --server are required: the datapath's interface (xdp-vi attach IFACE) and xvi-tcpserver's IP:PORT\n");
		return 2;
	}
	if (!cfg->listen) {
		if (argc - optind != 2 || (why = xt_parse_port(argv[optind + 1], &port)) ||
		    (why = xt_parse_ip(argv[optind], port, &cfg->dst))) {
			fprintf(stderr, "xvi-mncat: a connect takes IP PORT, or -l PORT to listen\n");
			return 2;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct cfg cfg = { .xst = { .xt = { .prog = "xvi-mncat", .wait = XVI_WAIT_BLOCK },
				    .nodelay = true }, .conns = 1 };
	union xvi_sockaddr local, any;
	struct xvi_memnet_ctx *mn;
	struct xst o;
	int sd, err, rc;

	rc = parse(argc, argv, &cfg);
	if (rc)
		return rc == 1 ? 0 : rc;
	xt_install_signals();
	xt_any_addr(cfg.server.sa.sa_family, xt_pid_port(), &local);
	if (xst_open(&o, &cfg.xst, &local))
		return 1;
	cfg.sctx = o.ctx;
	mn = xvi_memnet_ctx__new(o.ctx, &cfg.server, xt_port(&cfg.server), NULL);
	if (!mn) {
		rc = fail("cannot open a tunnel to the TCP Server", errno);
		goto out;
	}
	/* Non-blocking: cat and echo wait in one poll for every direction. */
	sd = xvi_memnet_ctx__socket(mn, cfg.listen ? AF_INET : cfg.dst.sa.sa_family, XVI_MEMNET_NONBLOCK);
	if (sd < 0) {
		rc = fail("socket", -sd);
		goto out_mn;
	}
	if (cfg.listen) {
		xt_any_addr(AF_INET, cfg.lport, &any);
		if ((err = xvi_memnet_ctx__bind(mn, sd, &any.sa, xt_addrlen(&any)))) {
			rc = fail("bind", -err);
			goto out_mn;
		}
		if ((err = xvi_memnet_ctx__listen(mn, sd, cfg.conns > 64 ? cfg.conns : 64))) {
			rc = fail("listen", -err);
			goto out_mn;
		}
		fprintf(stderr, "xvi-mncat: listening on the server's port %u\n", cfg.lport);
		if (cfg.echo) {
			rc = echo(mn, sd, cfg.conns);
		} else {
			struct xvi_memnet_pollfd p = { .sd = sd, .events = POLLIN };
			int c = -EAGAIN;

			while (!xt_stop && c == -EAGAIN) {
				xvi_memnet_ctx__poll(mn, &p, 1, 200);
				c = xvi_memnet_ctx__accept(mn, sd, NULL);
			}
			if (c < 0) {
				rc = fail("accept", xt_stop ? EINTR : -c);
				goto out_mn;
			}
			xvi_memnet_ctx__close(mn, sd);
			rc = cfg.async ? acat(mn, c, &cfg) : cfg.direct ? dcat(mn, c, &cfg) :
			     cat(mn, c, &cfg);
		}
	} else {
		if ((err = xvi_memnet_ctx__connect(mn, sd, &cfg.dst.sa, xt_addrlen(&cfg.dst)))) {
			rc = fail("connect", -err);
			goto out_mn;
		}
		rc = cfg.async ? acat(mn, sd, &cfg) : cfg.direct ? dcat(mn, sd, &cfg) :
		     cat(mn, sd, &cfg);
	}
out_mn:
	xvi_memnet_ctx__free(mn);
out:
	xst_close(&o);
	return rc;
}
