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
#include "cat.h"
#include "stream_transport.h"

#define IOBUF		(256 * 1024)
#define TICK_MS		200

struct sx {
	const struct cat_cfg *cfg;
	struct xst_cfg scfg;
	struct xst o;			/* xvi: the endpoint and its stream context */
	struct xst_conn c;		/* the connection */
	union xvi_sockaddr peer;	/* listener: who connected */
	/* accounting */
	__u64 t0, last;		/* ns: start, last progress */
	unsigned long long in, out;
	char *buf, *rbuf;
	bool zc_full;		/* --zc: stdin waits for room in the stream */
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
	/* t0 is 0 when the run failed before its start */
	double secs = x->t0 ? (xt_now_ns() - x->t0) / 1e9 : 0.0;
	struct xvi_stream_info info = { .sz = sizeof(info) };

	if (!cat_verbosity)
		return;
	fprintf(stderr, "xvi-cat: %s%s: %llu bytes in, %llu bytes out, %.3f s, %.1f Mbit/s",
		how, x->cfg->zc ? " (in place)" : "", x->in, x->out, secs,
		secs > 0 ? (x->in > x->out ? x->in : x->out) * 8 / secs / 1e6 : 0.0);
	if (x->c.s && !xst_info(&x->c, &info))
		fprintf(stderr, "; segs %llu sent, %llu retrans, %llu timeouts, %llu recoveries, %llu probes, srtt %u us, cwnd %u",
			(unsigned long long)info.segs_sent, (unsigned long long)info.segs_retrans,
			(unsigned long long)info.timeouts, (unsigned long long)info.fast_retrans,
			(unsigned long long)info.tlp_probes, info.srtt_us, info.cwnd);
	if (x->o.ctx) {
		struct xvi_stream_ctx_stats st = { .sz = sizeof(st) };

		if (!xvi_stream_ctx__stats(x->o.ctx, &st))
			fprintf(stderr, "; context: %llu segs in, %llu bad, %llu for no connection, %llu RST sent, %llu SYNs evicted, %llu accept overflows, %llu SYNs dropped",
				(unsigned long long)st.rx_segs,
				(unsigned long long)(st.rx_malformed + st.rx_bad_integrity),
				(unsigned long long)st.rx_no_conn, (unsigned long long)st.tx_rst,
				(unsigned long long)st.syn_evicted,
				(unsigned long long)st.accept_overflow,
				(unsigned long long)st.syn_dropped);
	}
	fprintf(stderr, "\n");
}

static int out_all(const void *buf, size_t len)
{
	int err = cat_write_all(STDOUT_FILENO, buf, len);

	if (err)
		fprintf(stderr, "xvi-cat: cannot write to stdout: %s\n", strerror(-err));
	return err ? -1 : 0;
}

/* ---- one loop for both transports --------------------------------------- */

/*
 * --zc: read stdin straight into the stream's send buffer.  1 progress
 * (bytes, or end of input in *@in_eof), 0 nothing to do now, -1 failed.
 */
static int zc_send_input(struct sx *x, bool *in_eof)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	ssize_t n, r;
	void *buf;
	char a[64];
	int err;

	x->zc_full = false;
	if (poll(&p, 1, 0) <= 0)
		return 0;
	n = xvi_stream__send_alloc(x->c.s, &buf, IOBUF);
	if (n == -EAGAIN) {
		x->zc_full = true;
		return 0;
	}
	if (n < 0) {
		fprintf(stderr, "xvi-cat: send to %s failed: %s%s\n",
			peer_str(x->cfg, a, sizeof(a)), strerror((int)-n), err_hint((int)-n));
		return -1;
	}
	r = read(STDIN_FILENO, buf, (size_t)n);
	if (r < 0 && errno != EINTR && errno != EAGAIN) {
		fprintf(stderr, "xvi-cat: cannot read stdin: %s\n", strerror(errno));
		return -1;
	}
	err = xvi_stream__send_commit(x->c.s, r > 0 ? (size_t)r : 0);
	if (err) {
		fprintf(stderr, "xvi-cat: send to %s failed: %s%s\n",
			peer_str(x->cfg, a, sizeof(a)), strerror(-err), err_hint(-err));
		return -1;
	}
	if (r > 0)
		x->out += (unsigned long long)r;
	if (r == 0)
		*in_eof = true;
	return r >= 0;
}

/*
 * --zc: write what arrived to stdout from where it lies, then release it.
 * Bytes (>0), 0 at the end, -EAGAIN, the connection's error, or
 * -ECANCELED when stdout failed (said already).
 */
static ssize_t zc_recv_output(struct sx *x)
{
	struct iovec iov[2];
	size_t n = 0;
	int r = xvi_stream__recv_zc(x->c.s, iov, 2), err;

	if (r <= 0)
		return r;
	for (int i = 0; i < r; i++) {
		if (out_all(iov[i].iov_base, iov[i].iov_len))
			return -ECANCELED;
		n += iov[i].iov_len;
	}
	err = xvi_stream__recv_release(x->c.s, n);
	return err ? err : (ssize_t)n;
}

/* Wait for the connection (and stdin if @want_in) at most @ms; 1 if stdin is readable. */
static int wait_io(struct sx *x, bool want_in, short events, int ms)
{
	struct pollfd p[2] = { xst_sleep_fd(&x->c, events), { .fd = STDIN_FILENO, .events = POLLIN } };
	int r;

	r = poll(p, want_in ? 2 : 1, ms);
	xst_process(&x->o);
	return r > 0 && want_in && p[1].revents;
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
			r = xst_send(&x->c, x->buf + off, len - off);
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
		if (off == len && !in_eof && x->cfg->zc) {
			int z = zc_send_input(x, &in_eof);

			if (z < 0)
				return 1;
			progress |= z > 0;
		} else if (off == len && !in_eof) {
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
			r = xst_shutdown(&x->c);
			if (r) {
				fprintf(stderr, "xvi-cat: cannot close the sending half: %s%s\n",
					strerror((int)-r), err_hint((int)-r));
				return 1;
			}
			shut = true;
		}
		if (!peer_eof) {
			r = x->cfg->zc ? zc_recv_output(x) : xst_recv(&x->c, x->rbuf, IOBUF);
			if (r == -ECANCELED)
				return 1;
			if (r > 0) {
				if (!x->cfg->zc && out_all(x->rbuf, (size_t)r))
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
		wait_io(x, off == len && !in_eof && !x->zc_full,
			(short)(POLLIN | (off < len || x->zc_full ? POLLOUT : 0)), idle_ms(x));
	}
	fprintf(stderr, "xvi-cat: interrupted\n");
	return 1;
}

/* ---- one connection, xvi stream or kernel TCP ----------------------------- */

static void teardown(struct sx *x, bool clean)
{
	/* close() finishes FIN/FINACK in the background; xst_close gives it
	 * its bounded last chance (linger). */
	if (xst_conn_live(&x->c))
		xst_conn_close(&x->c, !clean);
	xst_close(&x->o);
}

/* Accept the one connection, like netcat: later ones are refused. */
static int accept_one(struct sx *x)
{
	const struct cat_cfg *cfg = x->cfg;
	struct xst_conn l;
	char a[64];
	int r = 0;

	if (xst_listen(&x->o, &x->scfg, &cfg->addr, 1, &l))
		return -1;
	if (cat_verbosity && !cfg->xt.kernel)
		fprintf(stderr, "xvi-cat: listening on %s (xvi stream)\n",
			xt_addr_str(&cfg->addr, a, sizeof(a)));
	x->last = xt_now_ns();
	while (!xt_stop && !(r = xst_accept(&l, &x->c, &x->peer))) {
		struct xst_pollent p = { .c = &l, .events = POLLIN };

		if (idle_expired(x, "waiting for a connection"))
			break;
		xst_wait(&x->o, &p, 1, idle_ms(x));
	}
	xst_conn_close(&l, false);
	if (r < 0)
		fprintf(stderr, "xvi-cat: accept failed: %s\n", strerror(-r));
	if (r <= 0)
		return -1;
	if (cat_verbosity && !cfg->xt.kernel)
		fprintf(stderr, "xvi-cat: connection from %s\n",
			xt_addr_str(&x->peer, a, sizeof(a)));
	return 0;
}

static int connect_one(struct sx *x)
{
	const struct cat_cfg *cfg = x->cfg;
	char a[64];
	int err;

	err = xst_connect_start(&x->o, &x->scfg, &cfg->addr, &x->c);
	if (!err)
		err = -EINPROGRESS;
	while (err == -EINPROGRESS && !xt_stop) {
		struct xst_pollent p = { .c = &x->c, .events = POLLOUT };

		xst_wait(&x->o, &p, 1, idle_ms(x));
		err = xst_connect_result(&x->c);
		if (err == -EINPROGRESS && idle_expired(x, "connecting"))
			return -1;
	}
	if (err == -EINPROGRESS)	/* interrupted */
		return -1;
	if (err) {
		fprintf(stderr, "xvi-cat: cannot connect to %s: %s%s\n",
			peer_str(cfg, a, sizeof(a)), strerror(-err), err_hint(-err));
		return -1;
	}
	if (cat_verbosity && !cfg->xt.kernel)
		fprintf(stderr, "xvi-cat: connected to %s (xvi stream)\n",
			peer_str(cfg, a, sizeof(a)));
	return 0;
}

static int run_single(struct sx *x)
{
	const struct cat_cfg *cfg = x->cfg;
	union xvi_sockaddr local;
	int rc = 1;

	if (cfg->listen) {
		local = cfg->addr;
	} else {
		xt_any_addr(cfg->addr.sa.sa_family,
			    cfg->src_port ? (__u16)cfg->src_port : xt_pid_port(), &local);
	}
	if (xst_open(&x->o, &x->scfg, &local))
		goto out;
	x->t0 = x->last = xt_now_ns();
	if (cfg->listen ? accept_one(x) : connect_one(x))
		goto out;
	if (cfg->listen)
		x->t0 = xt_now_ns();
	rc = pump_loop(x, !cfg->listen);
out:
	report(x, rc ? "failed" : "done");
	teardown(x, rc == 0);
	return rc;
}

static int run_multi(struct sx *x);

static int run(const struct cat_cfg *cfg)
{
	/* It sleeps only in xst_wait() and after xst_sleep_fd() (wait_io). */
	struct sx x = { .cfg = cfg, .scfg = { .xt = cfg->xt, .arm_on_sleep = true } };
	int rc;

	xst_conn_init(&x.o, &x.c);
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
		rc = run_single(&x);
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
	struct xst_conn c;
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
		ssize_t r = xst_recv(&c->c, x->rbuf, IOBUF);

		if (r == -EAGAIN)
			return 0;
		if (r < 0) {
			multi_failed(c, i, (int)-r);
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

/*
 * All of stdin, up to MULTI_MAX_IN bytes, into *@in (malloc'd).  The buffer
 * holds one byte more than that: a read that fills it is input too long.
 */
static int read_all_input(char **in, size_t *inlen)
{
	size_t cap = IOBUF;
	char *buf = malloc(cap), *n;
	ssize_t r;

	*inlen = 0;
	while (buf) {
		if (*inlen > MULTI_MAX_IN) {
			fprintf(stderr, "xvi-cat: --conns sends at most %u bytes of stdin "
				"(16 MiB): give it less\n", MULTI_MAX_IN);
			free(buf);
			return -1;
		}
		if (*inlen == cap) {
			cap = cap * 2 > MULTI_MAX_IN ? MULTI_MAX_IN + 1 : cap * 2;
			n = realloc(buf, cap);
			if (!n)
				break;
			buf = n;
		}
		r = read(STDIN_FILENO, buf + *inlen, cap - *inlen);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "xvi-cat: cannot read stdin: %s\n", strerror(errno));
			free(buf);
			return -1;
		}
		if (!r) {
			*in = buf;
			return 0;
		}
		*inlen += (size_t)r;
	}
	fprintf(stderr, "xvi-cat: out of memory\n");
	free(buf);
	return -1;
}

static int run_multi(struct sx *x)
{
	const struct cat_cfg *cfg = x->cfg;
	unsigned long n = cfg->conns, i, up = 0, done = 0;
	struct xst_pollent *pf;
	struct xst_conn l;
	union xvi_sockaddr local;
	size_t inlen = 0;
	char *in = NULL;
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
		if (read_all_input(&in, &inlen))
			goto out;
		xt_any_addr(cfg->addr.sa.sa_family,
			    cfg->src_port ? (__u16)cfg->src_port : xt_pid_port(), &local);
	} else {
		local = cfg->addr;
	}
	xst_conn_init(&x->o, &l);
	for (i = 0; i < n; i++)
		xst_conn_init(&x->o, &c[i].c);
	if (xst_open(&x->o, &x->scfg, &local))
		goto out;
	x->t0 = x->last = xt_now_ns();
	if (cfg->listen) {
		if (xst_listen(&x->o, &x->scfg, &local, (int)n, &l))
			goto out;
	} else {
		for (i = 0; i < n; i++) {
			int err;

			c[i].peer = cfg->addr;
			err = xst_connect_start(&x->o, &x->scfg, &cfg->addr, &c[i].c);
			if (err) {
				fprintf(stderr, "xvi-cat: connection %lu: %s\n", i, strerror(-err));
				goto out;
			}
		}
	}
	while (!xt_stop && done < n) {
		unsigned long before = up + done;
		int k = 0;

		if (cfg->listen) {
			while (up < n && xst_accept(&l, &c[up].c, &c[up].peer) > 0)
				c[up++].up = true;
		}
		for (i = 0; i < n; i++) {
			ssize_t r;

			if (!xst_conn_live(&c[i].c) || c[i].eof || c[i].failed)
				continue;
			if (!c[i].up) {
				r = xst_connect_result(&c[i].c);
				if (r == -EINPROGRESS)
					continue;
				if (r) {
					multi_failed(&c[i], i, (int)-r);
					goto out;
				}
				c[i].up = true;
				up++;
				if (cat_verbosity > 1)
					fprintf(stderr, "xvi-cat: %lu/%lu established\n", up, n);
			}
			while (!cfg->listen && c[i].off < inlen &&
			       (r = xst_send(&c[i].c, in + c[i].off, inlen - c[i].off)) > 0) {
				c[i].off += (size_t)r;
				x->out += (unsigned long long)r;
				x->last = xt_now_ns();
			}
			if (!cfg->listen && c[i].off == inlen && !c[i].shut) {
				r = xst_shutdown(&c[i].c);
				if (r) {
					fprintf(stderr, "xvi-cat: connection %lu: %s\n", i,
						strerror((int)-r));
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
				xst_conn_close(&c[i].c, false);
			}
		}
		if (up + done != before) {
			x->last = xt_now_ns();
			continue;
		}
		if (idle_expired(x, "connecting and transferring"))
			break;
		if (cfg->listen && up < n)
			pf[k++] = (struct xst_pollent){ .c = &l, .events = POLLIN };
		for (i = 0; i < n; i++)
			if (xst_conn_live(&c[i].c))
				pf[k++] = (struct xst_pollent){ .c = &c[i].c, .events = POLLIN };
		xst_wait(&x->o, pf, k, idle_ms(x));
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
			if (xst_conn_live(&c[i].c))
				xst_conn_close(&c[i].c, true);
			free(c[i].rx);
		}
	free(c);
	free(pf);
	free(in);
	if (xst_conn_live(&l))
		xst_conn_close(&l, false);
	xst_close(&x->o);
	return rc;
}
