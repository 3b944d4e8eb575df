// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-cat stream mode: one reliable stream (libxvi streams over a UDP
 * endpoint, or kernel TCP with --kernel) between stdin and stdout.
 *
 * Both ends make progress from one loop that never blocks anywhere but in
 * poll(2): on stdin (sender, only when its buffer is empty), on the stream
 * context's fd (datagrams and protocol timers) or the TCP socket.  A sender
 * that blocked in read(2) on a slow pipe would leave keepalive probes
 * unanswered and the peer would declare it dead.
 *
 * Clean close, and exit 0, means: the sender reached the end of stdin, the
 * listener read every byte up to the sender's FIN and closed its own half,
 * and the sender saw that FIN (so everything was delivered, not only sent).
 */
#include <fcntl.h>
#include <netinet/tcp.h>
#include <xvi_stream.h>
#include "cat.h"

#define IOBUF		(256 * 1024)
#define TICK_MS		200

struct sx {
	const struct cat_cfg *cfg;
	/* xvi */
	struct xt t;
	struct xvi_stream_ctx *ctx;
	struct xvi_stream *s;
	/* kernel */
	int fd;
	union xvi_sockaddr peer;	/* listener: who connected */
	/* accounting */
	__u64 t0, last;		/* ns: start, last progress */
	unsigned long long in, out;
	char *buf, *rbuf;
};

/* The peer for messages: a listener's is the address that connected. */
#define peer_str(cfg, b, n)	xt_addr_str(x->peer.sa.sa_family ? &x->peer : &(cfg)->addr, b, n)

static const char *err_hint(int err)
{
	switch (err) {
	case ETIMEDOUT:
		return " (the peer stopped answering: dead, unreachable or gone)";
	case ECONNREFUSED:
		return " (nothing listens on that address and port)";
	case ECONNRESET:
		return " (the peer aborted the connection)";
	case EHOSTUNREACH:
		return " (no route or neighbour for the peer: check the address)";
	default:
		return "";
	}
}

/* Milliseconds until the -w deadline (TICK_MS without -w), 0 if past. */
static int idle_ms(const struct sx *x)
{
	__u64 now = xt_now_ns(), end;

	if (x->cfg->idle <= 0)
		return TICK_MS;
	end = x->last + (__u64)(x->cfg->idle * 1e9);
	if (now >= end)
		return 0;
	return (end - now) / 1000000 + 1 < TICK_MS ? (int)((end - now) / 1000000 + 1) : TICK_MS;
}

static bool idle_expired(const struct sx *x, const char *what)
{
	if (x->cfg->idle <= 0 || xt_now_ns() < x->last + (__u64)(x->cfg->idle * 1e9))
		return false;
	fprintf(stderr, "xvi-cat: no progress for %g s while %s: giving up (-w)\n",
		x->cfg->idle, what);
	return true;
}

static void report(const struct sx *x, const char *how)
{
	double secs = (xt_now_ns() - x->t0) / 1e9;
	struct xvi_stream_info info = { .sz = sizeof(info) };

	if (!cat_verbosity)
		return;
	fprintf(stderr, "xvi-cat: %s: %llu bytes in, %llu bytes out, %.3f s, %.1f Mbit/s",
		how, x->in, x->out, secs,
		secs > 0 ? (x->in > x->out ? x->in : x->out) * 8 / secs / 1e6 : 0.0);
	if (x->s && !xvi_stream__info(x->s, &info))
		fprintf(stderr, "; segs %llu sent, %llu retrans, %llu timeouts, %llu recoveries, %llu probes, srtt %u us, cwnd %u",
			(unsigned long long)info.segs_sent, (unsigned long long)info.segs_retrans,
			(unsigned long long)info.timeouts, (unsigned long long)info.fast_retrans,
			(unsigned long long)info.tlp_probes, info.srtt_us, info.cwnd);
	if (x->ctx) {
		struct xvi_stream_ctx_stats st = { .sz = sizeof(st) };

		if (!xvi_stream_ctx__stats(x->ctx, &st))
			fprintf(stderr, "; context: %llu segs in, %llu bad, %llu for no connection, %llu RST sent, %llu SYNs evicted, %llu accept overflows",
				(unsigned long long)st.rx_segs,
				(unsigned long long)(st.rx_malformed + st.rx_bad_integrity),
				(unsigned long long)st.rx_no_conn, (unsigned long long)st.tx_rst,
				(unsigned long long)st.syn_evicted,
				(unsigned long long)st.accept_overflow);
	}
	fprintf(stderr, "\n");
}

static int out_all(const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t w = write(STDOUT_FILENO, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "xvi-cat: cannot write to stdout: %s\n", strerror(errno));
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* ---- one loop for both transports --------------------------------------- */

/* Wait for the transport (and stdin if @want_in) at most @ms; 1 if stdin is readable. */
static int wait_io(struct sx *x, bool want_in, short tevents, int ms)
{
	struct pollfd p[2];
	int n = 0, r;

	if (x->ctx) {
		p[n].fd = xvi_stream_ctx__fd(x->ctx);
		p[n++].events = POLLIN;
	} else {
		p[n].fd = x->fd;
		p[n++].events = tevents;
	}
	if (want_in) {
		p[n].fd = STDIN_FILENO;
		p[n++].events = POLLIN;
	}
	r = poll(p, n, ms);
	if (x->ctx)
		xvi_stream_ctx__process(x->ctx);
	if (r > 0 && want_in && p[n - 1].revents)
		return 1;
	return 0;
}

static ssize_t tr_send(struct sx *x, const void *b, size_t n)
{
	ssize_t r;

	if (x->ctx)
		return xvi_stream__send(x->s, b, n, 0);
	r = send(x->fd, b, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	return r < 0 ? (errno == EWOULDBLOCK ? -EAGAIN : -errno) : r;
}

static ssize_t tr_recv(struct sx *x, void *b, size_t n)
{
	ssize_t r;

	if (x->ctx)
		return xvi_stream__recv(x->s, b, n, 0);
	r = recv(x->fd, b, n, MSG_DONTWAIT);
	return r < 0 ? (errno == EWOULDBLOCK ? -EAGAIN : -errno) : r;
}

static int tr_shut_wr(struct sx *x)
{
	if (x->ctx)
		return xvi_stream__shutdown(x->s, SHUT_WR);
	return shutdown(x->fd, SHUT_WR) ? -errno : 0;
}

/*
 * Copy stdin (if @send) to the stream and the stream to stdout until both
 * directions ended.  The listener (!@send) closes its half once it read the
 * peer's FIN.  Returns 0 or 1.
 */
static int pump_loop(struct sx *x, bool send)
{
	size_t off = 0, len = 0;
	bool in_eof = !send, peer_eof = false, shut = !send;
	char a[64];

	x->last = xt_now_ns();
	while (!xt_stop) {
		bool progress = false;
		ssize_t r;

		if (off < len) {
			r = tr_send(x, x->buf + off, len - off);
			if (r > 0) {
				off += (size_t)r;
				x->out += (unsigned long long)r;
				progress = true;
			} else if (r != -EAGAIN) {
				fprintf(stderr, "xvi-cat: send to %s failed: %s%s\n",
					peer_str(x->cfg, a, sizeof(a)), strerror((int)-r),
					err_hint((int)-r));
				return 1;
			}
		}
		if (off == len && !in_eof) {
			struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };

			if (poll(&p, 1, 0) > 0) {
				r = read(STDIN_FILENO, x->buf, IOBUF);
				if (r < 0 && errno != EINTR && errno != EAGAIN) {
					fprintf(stderr, "xvi-cat: cannot read stdin: %s\n",
						strerror(errno));
					return 1;
				}
				if (r == 0)
					in_eof = true;
				if (r > 0) {
					off = 0;
					len = (size_t)r;
				}
				progress = true;
			}
		}
		if (in_eof && off == len && !shut) {
			r = tr_shut_wr(x);
			if (r) {
				fprintf(stderr, "xvi-cat: cannot close the sending half: %s%s\n",
					strerror((int)-r), err_hint((int)-r));
				return 1;
			}
			shut = true;
		}
		if (!peer_eof) {
			r = tr_recv(x, x->rbuf, IOBUF);
			if (r > 0) {
				if (out_all(x->rbuf, (size_t)r))
					return 1;
				x->in += (unsigned long long)r;
				progress = true;
			} else if (r == 0) {
				peer_eof = true;
				progress = true;
			} else if (r != -EAGAIN) {
				fprintf(stderr, "xvi-cat: connection with %s failed: %s%s\n",
					peer_str(x->cfg, a, sizeof(a)), strerror((int)-r),
					err_hint((int)-r));
				return 1;
			}
		}
		if (peer_eof && !send && !shut)
			shut = true;	/* the listener's FIN goes with close() */
		if (peer_eof && in_eof && off == len)
			return 0;
		if (progress) {
			x->last = xt_now_ns();
			continue;
		}
		if (idle_expired(x, send ? "sending" : "receiving"))
			return 1;
		wait_io(x, off == len && !in_eof,
			(short)(POLLIN | (off < len ? POLLOUT : 0)), idle_ms(x));
	}
	fprintf(stderr, "xvi-cat: interrupted\n");
	return 1;
}

/* ---- xvi streams ---------------------------------------------------------- */

static int xvi_setup(struct sx *x, const union xvi_sockaddr *local)
{
	XVI_OPTS(xvi_stream_opts, so, .flags = XVI_STREAM_NONBLOCK);

	if (xt_open(&x->t, &x->cfg->xt, local))
		return -1;
	x->ctx = xvi_stream_ctx__new(x->t.ep, NULL);
	if (!x->ctx) {
		fprintf(stderr, "xvi-cat: cannot create a stream context on %s: %s\n",
			x->cfg->xt.iface, strerror(errno));
		return -1;
	}
	x->s = xvi_stream__socket(x->ctx, &so);
	if (!x->s) {
		fprintf(stderr, "xvi-cat: cannot create a stream: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

static void xvi_teardown(struct sx *x, bool clean)
{
	if (x->s) {
		/* close() finishes FIN/FINACK in the background; ctx free below
		 * gives it its bounded last chance (linger). */
		if (clean)
			xvi_stream__close(x->s);
		else
			xvi_stream__abort(x->s);
		x->s = NULL;
	}
	xvi_stream_ctx__free(x->ctx);
	x->ctx = NULL;
	if (x->t.ep || x->t.fd >= 0)
		xt_close(&x->t);
}

static int run_xvi(struct sx *x)
{
	const struct cat_cfg *cfg = x->cfg;
	__u16 port = xt_port(&cfg->addr);
	char a[64];
	int rc = 1, err;

	if (cfg->listen) {
		struct xvi_stream *l, *c = NULL;
		union xvi_sockaddr peer;

		if (xvi_setup(x, &cfg->addr))
			goto out;
		l = x->s;
		if (xvi_stream__bind(l, port) || xvi_stream__listen(l, 1)) {
			fprintf(stderr, "xvi-cat: cannot listen on service %u: %s\n", port,
				strerror(errno));
			goto out;
		}
		if (cat_verbosity)
			fprintf(stderr, "xvi-cat: listening on %s (xvi stream)\n",
				xt_addr_str(&cfg->addr, a, sizeof(a)));
		x->last = xt_now_ns();
		while (!xt_stop && !(c = xvi_stream__accept(l, &peer))) {
			struct xvi_stream_pollfd p = { .s = l, .events = POLLIN };

			if (errno != EAGAIN) {
				fprintf(stderr, "xvi-cat: accept failed: %s\n", strerror(errno));
				goto out;
			}
			if (idle_expired(x, "waiting for a connection"))
				goto out;
			xvi_stream__poll(&p, 1, idle_ms(x));
		}
		if (!c)
			goto out;
		/* One connection, like netcat: later ones are refused. */
		xvi_stream__close(l);
		x->s = c;
		x->peer = peer;
		if (cat_verbosity)
			fprintf(stderr, "xvi-cat: connection from %s\n",
				xt_addr_str(&peer, a, sizeof(a)));
		x->t0 = xt_now_ns();
		rc = pump_loop(x, false);
	} else {
		union xvi_sockaddr local;

		xt_any_addr(cfg->addr.sa.sa_family,
			    cfg->src_port ? (__u16)cfg->src_port : xt_pid_port(), &local);
		if (xvi_setup(x, &local))
			goto out;
		x->t0 = x->last = xt_now_ns();
		err = xvi_stream__connect(x->s, &cfg->addr, port);
		while (err == -EINPROGRESS && !xt_stop) {
			struct xvi_stream_pollfd p = { .s = x->s, .events = POLLOUT };
			struct xvi_stream_info info = { .sz = sizeof(info) };

			xvi_stream__poll(&p, 1, idle_ms(x));
			xvi_stream__info(x->s, &info);
			if (info.state >= XVI_SS_ESTABLISHED)
				err = 0;
			else if (info.error || info.state == XVI_SS_CLOSED)
				err = -(info.error ? info.error : ECONNREFUSED);
			else if (idle_expired(x, "connecting"))
				goto out;
		}
		if (err) {
			fprintf(stderr, "xvi-cat: cannot connect to %s: %s%s\n",
				peer_str(cfg, a, sizeof(a)), strerror(-err), err_hint(-err));
			goto out;
		}
		if (cat_verbosity)
			fprintf(stderr, "xvi-cat: connected to %s (xvi stream)\n",
				peer_str(cfg, a, sizeof(a)));
		rc = pump_loop(x, true);
	}
out:
	report(x, rc ? "failed" : "done");
	xvi_teardown(x, rc == 0);
	return rc;
}

/* ---- kernel TCP --------------------------------------------------------- */

static int run_kernel(struct sx *x)
{
	const struct cat_cfg *cfg = x->cfg;
	int one = 1, fd, rc = 1;
	char a[64];

	fd = socket(cfg->addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fprintf(stderr, "xvi-cat: socket: %s\n", strerror(errno));
		return 1;
	}
	if (cfg->xt.iface && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, cfg->xt.iface,
					strlen(cfg->xt.iface) + 1)) {
		fprintf(stderr, "xvi-cat: cannot bind the socket to %s: %s: check --iface\n",
			cfg->xt.iface, strerror(errno));
		goto out;
	}
	x->t0 = x->last = xt_now_ns();
	if (cfg->listen) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		socklen_t pl = sizeof(x->peer);
		int c;

		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, &cfg->addr.sa, xt_addrlen(&cfg->addr)) || listen(fd, 1)) {
			fprintf(stderr, "xvi-cat: cannot listen on %s: %s\n",
				xt_addr_str(&cfg->addr, a, sizeof(a)), strerror(errno));
			goto out;
		}
		while (!xt_stop && poll(&p, 1, idle_ms(x)) <= 0)
			if (idle_expired(x, "waiting for a connection"))
				goto out;
		if (xt_stop)
			goto out;
		c = accept4(fd, &x->peer.sa, &pl, SOCK_CLOEXEC);
		if (c < 0) {
			fprintf(stderr, "xvi-cat: accept: %s\n", strerror(errno));
			goto out;
		}
		close(fd);
		fd = c;
		x->fd = fd;
		rc = pump_loop(x, false);
	} else {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		socklen_t sl = sizeof(int);
		int err = 0;

		fcntl(fd, F_SETFL, O_NONBLOCK);
		if (connect(fd, &cfg->addr.sa, xt_addrlen(&cfg->addr)) && errno != EINPROGRESS) {
			err = errno;
		} else {
			while (!xt_stop && poll(&p, 1, idle_ms(x)) <= 0)
				if (idle_expired(x, "connecting"))
					goto out;
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl);
		}
		if (err) {
			fprintf(stderr, "xvi-cat: cannot connect to %s: %s%s\n",
				peer_str(cfg, a, sizeof(a)), strerror(err), err_hint(err));
			goto out;
		}
		x->fd = fd;
		rc = pump_loop(x, true);
	}
out:
	report(x, rc ? "failed" : "done");
	close(fd);
	return rc;
}

static int run_multi(struct sx *x);

static int run(const struct cat_cfg *cfg)
{
	struct sx x = { .cfg = cfg, .fd = -1 };
	int rc;

	x.t.fd = -1;
	x.buf = malloc(IOBUF);
	x.rbuf = malloc(IOBUF);
	if (!x.buf || !x.rbuf) {
		fprintf(stderr, "xvi-cat: out of memory\n");
		free(x.buf);
		free(x.rbuf);
		return 1;
	}
	if (cfg->conns)
		rc = run_multi(&x);
	else
		rc = cfg->xt.kernel ? run_kernel(&x) : run_xvi(&x);
	free(x.buf);
	free(x.rbuf);
	return rc;
}

int cat_stream_listener(const struct cat_cfg *cfg)
{
	return run(cfg);
}

int cat_stream_sender(const struct cat_cfg *cfg)
{
	return run(cfg);
}

/* ---- --conns N: many connections over one context ----------------------- */

#define MULTI_MAX_IN	(16u << 20)

struct mc {
	struct xvi_stream *s;
	union xvi_sockaddr peer;	/* listener: who connected; sender: the address */
	size_t off;		/* sender: bytes of the input sent */
	bool up, shut, eof, failed;
	char *rx;		/* listener: the connection's data */
	size_t rxlen, rxcap;
};

/*
 * Connection @i failed with @err.  It names the connection's own peer: a
 * listener's configured address is a wildcard (0.0.0.0), and x->peer is the
 * single-connection mode's.
 */
static void multi_failed(struct mc *c, unsigned long i, int err)
{
	char a[64];

	fprintf(stderr, "xvi-cat: connection %lu with %s failed: %s%s\n", i,
		xt_addr_str(&c->peer, a, sizeof(a)), strerror(err), err_hint(err));
	c->failed = true;
}

static int multi_rx(struct sx *x, struct mc *c, unsigned long i)
{

	for (;;) {
		ssize_t r = xvi_stream__recv(c->s, x->rbuf, IOBUF, 0);

		if (r == -EAGAIN || (r < 0 && errno == EAGAIN))
			return 0;
		if (r < 0) {
			multi_failed(c, i, errno);
			return -1;
		}
		if (r == 0) {
			c->eof = true;
			return 1;
		}
		x->last = xt_now_ns();
		x->in += (unsigned long long)r;
		if (c->rxlen + (size_t)r > c->rxcap) {
			size_t cap = (c->rxlen + (size_t)r) * 2;
			char *n = realloc(c->rx, cap);

			if (!n) {
				fprintf(stderr, "xvi-cat: out of memory\n");
				return -1;
			}
			c->rx = n;
			c->rxcap = cap;
		}
		memcpy(c->rx + c->rxlen, x->rbuf, (size_t)r);
		c->rxlen += (size_t)r;
	}
}

static int run_multi(struct sx *x)
{
	const struct cat_cfg *cfg = x->cfg;
	unsigned long n = cfg->conns, i, up = 0, done = 0;
	__u16 port = xt_port(&cfg->addr);
	struct xvi_stream_pollfd *pf;
	union xvi_sockaddr local;
	size_t inlen = 0;
	struct mc *c;
	int rc = 1;

	c = calloc(n, sizeof(*c));
	pf = calloc(n + 1, sizeof(*pf));
	if (!c || !pf) {
		fprintf(stderr, "xvi-cat: out of memory\n");
		goto out;
	}
	if (!cfg->listen) {
		/* The whole input first: every connection carries all of it. */
		for (;;) {
			ssize_t r = read(STDIN_FILENO, x->buf + inlen, IOBUF - inlen);

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				fprintf(stderr, "xvi-cat: cannot read stdin: %s\n", strerror(errno));
				goto out;
			}
			if (!r)
				break;
			inlen += (size_t)r;
			if (inlen == IOBUF) {
				fprintf(stderr, "xvi-cat: --conns sends at most %u bytes of stdin\n",
					IOBUF);
				goto out;
			}
		}
		xt_any_addr(cfg->addr.sa.sa_family,
			    cfg->src_port ? (__u16)cfg->src_port : xt_pid_port(), &local);
	} else {
		local = cfg->addr;
	}
	if (xvi_setup(x, &local))
		goto out;
	x->t0 = x->last = xt_now_ns();
	if (cfg->listen) {
		if (xvi_stream__bind(x->s, port) || xvi_stream__listen(x->s, (int)n)) {
			fprintf(stderr, "xvi-cat: cannot listen on service %u: %s\n", port,
				strerror(errno));
			goto out;
		}
	} else {
		XVI_OPTS(xvi_stream_opts, so, .flags = XVI_STREAM_NONBLOCK);

		xvi_stream__abort(x->s);
		x->s = NULL;
		for (i = 0; i < n; i++) {
			int err;

			c[i].peer = cfg->addr;
			c[i].s = xvi_stream__socket(x->ctx, &so);
			if (!c[i].s) {
				fprintf(stderr, "xvi-cat: cannot create stream %lu: %s\n", i,
					strerror(errno));
				goto out;
			}
			err = xvi_stream__connect(c[i].s, &cfg->addr, port);
			if (err && err != -EINPROGRESS) {
				fprintf(stderr, "xvi-cat: connection %lu: %s\n", i, strerror(-err));
				goto out;
			}
		}
	}
	while (!xt_stop && done < n) {
		unsigned long before = up + done;
		int k = 0;

		if (cfg->listen) {
			struct xvi_stream *a;

			while (up < n && (a = xvi_stream__accept(x->s, &c[up].peer))) {
				c[up].s = a;
				c[up++].up = true;
			}
		}
		for (i = 0; i < n; i++) {
			struct xvi_stream_info info = { .sz = sizeof(info) };
			ssize_t r;

			if (!c[i].s || c[i].eof || c[i].failed)
				continue;
			if (!c[i].up) {
				xvi_stream__info(c[i].s, &info);
				if (info.state == XVI_SS_CLOSED) {
					multi_failed(&c[i], i, info.error ?: ECONNREFUSED);
					goto out;
				}
				if (info.state < XVI_SS_ESTABLISHED)
					continue;
				c[i].up = true;
				up++;
				if (cat_verbosity > 1)
					fprintf(stderr, "xvi-cat: %lu/%lu established\n", up, n);
			}
			while (!cfg->listen && c[i].off < inlen &&
			       (r = xvi_stream__send(c[i].s, x->buf + c[i].off, inlen - c[i].off,
						     0)) > 0) {
				c[i].off += (size_t)r;
				x->out += (unsigned long long)r;
				x->last = xt_now_ns();
			}
			if (!cfg->listen && c[i].off == inlen && !c[i].shut) {
				if (xvi_stream__shutdown(c[i].s, SHUT_WR)) {
					fprintf(stderr, "xvi-cat: connection %lu: %s\n", i,
						strerror(errno));
					goto out;
				}
				c[i].shut = true;
			}
			r = multi_rx(x, &c[i], i);
			if (r < 0)
				goto out;
			if (r > 0) {
				done++;
				if (cfg->listen && out_all(c[i].rx, c[i].rxlen))
					goto out;
				xvi_stream__close(c[i].s);
				c[i].s = NULL;
			}
		}
		if (up + done != before) {
			x->last = xt_now_ns();
			continue;
		}
		if (idle_expired(x, "connecting and transferring"))
			break;
		if (cfg->listen && up < n)
			pf[k++] = (struct xvi_stream_pollfd){ .s = x->s, .events = POLLIN };
		for (i = 0; i < n; i++)
			if (c[i].s)
				pf[k++] = (struct xvi_stream_pollfd){ .s = c[i].s, .events = POLLIN };
		if (k)
			xvi_stream__poll(pf, k, idle_ms(x));
		else
			xvi_stream_ctx__wait(x->ctx, idle_ms(x));
	}
	if (cat_verbosity)
		fprintf(stderr, "xvi-cat: %lu/%lu connections established, %lu completed\n", up,
			n, done);
	if (done == n)
		rc = 0;
	else
		fprintf(stderr, "xvi-cat: only %lu of %lu connections completed\n", done, n);
out:
	report(x, rc ? "failed" : "done");
	if (c)
		for (i = 0; i < n; i++) {
			if (c[i].s)
				xvi_stream__abort(c[i].s);
			free(c[i].rx);
		}
	free(c);
	free(pf);
	xvi_teardown(x, rc == 0);
	return rc;
}
