// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Opening, connecting, listening and waiting for the stream transport. */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "stream_transport.h"

void xst_conn_init(struct xst *o, struct xst_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->o = o;
	c->fd = -1;
}

void xst_conn_close(struct xst_conn *c, bool abort)
{
	if (c->s) {
		if (abort)
			xvi_stream__abort(c->s);
		else
			xvi_stream__close(c->s);
	}
	if (c->fd >= 0)
		close(c->fd);
	c->s = NULL;
	c->fd = -1;
}

void xst_close(struct xst *o)
{
	/* Lingering closes get their bounded last chance in here. */
	xvi_stream_ctx__free(o->ctx);
	o->ctx = NULL;
	if (!o->kernel)
		xt_close(&o->t);
}

int xst_open(struct xst *o, const struct xst_cfg *cfg, const union xvi_sockaddr *local)
{
	int err;

	memset(o, 0, sizeof(*o));
	o->t.fd = -1;
	o->prog = cfg->xt.prog;
	o->kernel = cfg->xt.kernel;
	o->nodelay = cfg->nodelay;
	o->wait = cfg->xt.wait;
	o->spin_us = cfg->xt.spin_us ? cfg->xt.spin_us : XST_SPIN_US;
	if (o->kernel)
		return 0;
	err = xt_open(&o->t, &cfg->xt, local);
	if (err)
		return err;
	{
		XVI_OPTS(xvi_stream_ctx_opts, co, .window = cfg->window,
			 .flags = cfg->arm_on_sleep ? XVI_SCTX_ARM_ON_SLEEP : 0);

		o->ctx = xvi_stream_ctx__new(o->t.ep, &co);
	}
	if (!o->ctx) {
		err = -errno;
		fprintf(stderr, "%s: cannot create a stream context on %s: %s%s\n", o->prog,
			cfg->xt.iface, strerror(errno),
			cfg->window ? ": check --window" : "");
		xt_close(&o->t);
		return err ? err : -EIO;
	}
	return 0;
}

static int kernel_socket(struct xst *o, const struct xst_cfg *cfg, int family)
{
	int fd, one = 1;

	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		fprintf(stderr, "%s: socket: %s\n", o->prog, strerror(errno));
		return -errno;
	}
	if (cfg->xt.iface && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, cfg->xt.iface,
					strlen(cfg->xt.iface) + 1)) {
		int err = errno;

		fprintf(stderr, "%s: cannot bind the socket to %s: %s: check --iface\n",
			o->prog, cfg->xt.iface, strerror(err));
		close(fd);
		return -err;
	}
	if (o->nodelay)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static __u32 stream_flags(const struct xst *o)
{
	return XVI_STREAM_NONBLOCK | (o->nodelay ? XVI_STREAM_NODELAY : 0);
}

int xst_listen(struct xst *o, const struct xst_cfg *cfg, const union xvi_sockaddr *local,
	       int backlog, struct xst_conn *l)
{
	char a[64];
	int one = 1;

	xst_conn_init(o, l);
	if (o->kernel) {
		l->fd = kernel_socket(o, cfg, local->sa.sa_family);
		if (l->fd < 0)
			return l->fd;
		setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* One listening socket of a group (xvi-perf --threads). */
		if (cfg->xt.reuseport)
			setsockopt(l->fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
		if (bind(l->fd, &local->sa, xt_addrlen(local)) || listen(l->fd, backlog)) {
			int err = errno;

			fprintf(stderr, "%s: cannot listen on %s: %s%s\n", o->prog,
				xt_addr_str(local, a, sizeof(a)), strerror(err),
				err == EADDRINUSE ? ": choose another port" : "");
			close(l->fd);
			l->fd = -1;
			return -err;
		}
		return 0;
	}
	{
		XVI_OPTS(xvi_stream_opts, so, .flags = stream_flags(o));

		l->s = xvi_stream__socket(o->ctx, &so);
	}
	if (!l->s || xvi_stream__bind(l->s, xt_port(local)) ||
	    xvi_stream__listen(l->s, backlog)) {
		int err = errno;

		fprintf(stderr, "%s: cannot listen on stream service %u: %s\n", o->prog,
			xt_port(local), strerror(err));
		if (l->s)
			xvi_stream__abort(l->s);
		l->s = NULL;
		return -err;
	}
	return 0;
}

int xst_accept(struct xst_conn *l, struct xst_conn *c, union xvi_sockaddr *peer)
{
	struct xst *o = l->o;
	socklen_t pl = sizeof(*peer);

	xst_conn_init(o, c);
	memset(peer, 0, sizeof(*peer));
	if (o->kernel) {
		int one = 1;

		c->fd = accept4(l->fd, &peer->sa, &pl, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (c->fd < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
			       errno == ECONNABORTED ? 0 : -errno;
		if (o->nodelay)
			setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		return 1;
	}
	c->s = xvi_stream__accept(l->s, peer);
	if (c->s)
		return 1;
	return errno == EAGAIN ? 0 : -errno;
}

ssize_t xst_kernel_result(ssize_t r)
{
	return r < 0 ? (errno == EWOULDBLOCK ? -EAGAIN : -errno) : r;
}

int xst_shutdown(struct xst_conn *c)
{
	if (c->s)
		return xvi_stream__shutdown(c->s, SHUT_WR);
	return shutdown(c->fd, SHUT_WR) ? -errno : 0;
}

int xst_look(struct xst *o, struct xst_pollent *p, int n)
{
	int i, r;

	if (!o->kernel) {
		struct xvi_stream_pollfd f[n];

		for (i = 0; i < n; i++)
			f[i] = (struct xvi_stream_pollfd){ .s = p[i].c->s, .events = p[i].events };
		r = n ? xvi_stream__poll(f, n, 0) : xvi_stream_ctx__process(o->ctx);
		if (r == -ETIMEDOUT)	/* nothing ready: the look is done */
			r = 0;
		if (r < 0)
			return r;
		for (i = 0; i < n; i++)
			p[i].revents = f[i].revents;
		return n ? r : 0;
	} else {
		struct pollfd f[n];

		for (i = 0; i < n; i++)
			f[i] = (struct pollfd){ .fd = p[i].c->fd, .events = p[i].events };
		r = poll(f, n, 0);
		if (r < 0)
			return errno == EINTR ? 0 : -errno;
		for (i = 0; i < n; i++)
			p[i].revents = f[i].revents;
		return r;
	}
}

struct pollfd xst_sleep_fd(const struct xst_conn *c, short events)
{
	if (!c->o->kernel) {
		xvi_stream_ctx__arm(c->o->ctx);
		return (struct pollfd){ .fd = xvi_stream_ctx__fd(c->o->ctx), .events = POLLIN };
	}
	return (struct pollfd){ .fd = c->fd, .events = events };
}

void xst_process(struct xst *o)
{
	if (!o->kernel)
		xvi_stream_ctx__process(o->ctx);
}

/* Sleep in the kernel until something may have happened, at most @ms. */
static void sleep_for_event(struct xst *o, struct xst_pollent *p, int n, int ms)
{
	int i;

	if (ms > XST_MAX_SLEEP_MS || ms < 0)
		ms = XST_MAX_SLEEP_MS;
	if (!o->kernel) {
		struct pollfd f = { .fd = xvi_stream_ctx__fd(o->ctx), .events = POLLIN };

		/*
		 * As xvi_stream_ctx__wait before its sleep: ACKs held for a
		 * reply to carry leave now (no reply is sent while this side
		 * sleeps; else the peer waits for the hold timer), and the fd
		 * is armed (XVI_SCTX_ARM_ON_SLEEP).
		 */
		xvi_stream_ctx__arm(o->ctx);
		poll(&f, 1, ms);
	} else {
		struct pollfd f[n];

		for (i = 0; i < n; i++)
			f[i] = xst_sleep_fd(p[i].c, p[i].events);
		poll(f, n, ms);
	}
}

int xst_wait(struct xst *o, struct xst_pollent *p, int n, int timeout_ms)
{
	__u64 start = xt_now_ns(), end, spin_end, now;
	int r;

	end = timeout_ms < 0 ? UINT64_MAX : start + (__u64)timeout_ms * 1000000ull;
	spin_end = o->wait == XVI_WAIT_BUSY ? UINT64_MAX :
		   o->wait == XVI_WAIT_BLOCK ? start : start + (__u64)o->spin_us * 1000ull;
	for (;;) {
		r = xst_look(o, p, n);
		if (r)
			return r;
		if (xt_stop)
			return 0;
		now = xt_now_ns();
		if (now >= end)
			return 0;
		if (now < spin_end)
			continue;
		sleep_for_event(o, p, n, end == UINT64_MAX ? -1 :
				(int)((end - now + 999999ull) / 1000000ull));
	}
}

int xst_connect_start(struct xst *o, const struct xst_cfg *cfg,
		      const union xvi_sockaddr *dst, struct xst_conn *c)
{
	int err;

	xst_conn_init(o, c);
	if (o->kernel) {
		c->fd = kernel_socket(o, cfg, dst->sa.sa_family);
		if (c->fd < 0)
			return c->fd;
		if (connect(c->fd, &dst->sa, xt_addrlen(dst)) && errno != EINPROGRESS)
			return -errno;
		return 0;
	}
	{
		XVI_OPTS(xvi_stream_opts, so, .flags = stream_flags(o));

		c->s = xvi_stream__socket(o->ctx, &so);
	}
	if (!c->s)
		return -errno;
	err = xvi_stream__connect(c->s, dst, xt_port(dst));
	return err == -EINPROGRESS ? 0 : err;
}

int xst_connect_result(struct xst_conn *c)
{
	if (c->fd >= 0) {
		struct pollfd f = { .fd = c->fd, .events = POLLOUT };
		socklen_t sl = sizeof(int);
		int err = 0;

		if (poll(&f, 1, 0) <= 0)
			return -EINPROGRESS;
		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &sl);
		return -err;
	} else {
		struct xvi_stream_info info = { .sz = sizeof(info) };

		xvi_stream__info(c->s, &info);
		if (info.state >= XVI_SS_ESTABLISHED)
			return 0;
		if (info.error || info.state == XVI_SS_CLOSED)
			return -(info.error ? info.error : ECONNREFUSED);
		return -EINPROGRESS;
	}
}

int xst_connect(struct xst *o, const struct xst_cfg *cfg, const union xvi_sockaddr *dst,
		struct xst_conn *c, int timeout_ms)
{
	struct xst_pollent p = { .c = c, .events = POLLOUT };
	__u64 end = xt_now_ns() + (__u64)timeout_ms * 1000000ull;
	char a[64];
	int err;

	err = -xst_connect_start(o, cfg, dst, c);
	if (!err)
		err = EINPROGRESS;
	while (err == EINPROGRESS && !xt_stop && xt_now_ns() < end) {
		xst_wait(o, &p, 1, 100);
		err = -xst_connect_result(c);
	}
	if (err == EINPROGRESS)
		err = ETIMEDOUT;
	if (err) {
		fprintf(stderr, "%s: cannot connect to %s (%s): %s%s\n", o->prog,
			xt_addr_str(dst, a, sizeof(a)), xst_name(o), strerror(err),
			err == ECONNREFUSED ? ": is a --stream server running there?" :
			err == ETIMEDOUT ? ": no answer: check the address and the server" : "");
		xst_conn_close(c, true);
		return -err;
	}
	return 0;
}

int xst_info(const struct xst_conn *c, struct xvi_stream_info *info)
{
	memset(info, 0, sizeof(*info));
	info->sz = sizeof(*info);
	if (!c->s)
		return -ENOTSUP;
	return xvi_stream__info(c->s, info);
}
