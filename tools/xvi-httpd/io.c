// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xvi-httpd's backends: kernel sockets, MemNet remote sockets (plain, direct or async). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <xvi_memnet.h>
#include "httpd.h"
#include "stream_transport.h"

/* ---- kernel ------------------------------------------------------------------- */

static ssize_t kres(ssize_t r)
{
	return r < 0 ? (errno == EWOULDBLOCK ? -EAGAIN : -errno) : r;
}

static int k_listen(struct hio *io, __u16 port, int backlog)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, backlog)) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

static int k_accept(struct hio *io, int l)
{
	int one = 1, fd = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static ssize_t k_recv(struct hio *io, int c, void *buf, size_t len)
{
	return kres(recv(c, buf, len, MSG_DONTWAIT));
}

static ssize_t k_send(struct hio *io, int c, const void *buf, size_t len, bool more)
{
	return kres(send(c, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL | (more ? MSG_MORE : 0)));
}

static void k_close(struct hio *io, int c)
{
	close(c);
}

static int k_poll(struct hio *io, int *ids, short *ev, short *rev, int n, int tmo)
{
	struct pollfd *p = calloc((size_t)n, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		p[i] = (struct pollfd){ .fd = ids[i], .events = ev[i] };
	r = poll(p, (nfds_t)n, tmo);
	for (int i = 0; i < n; i++)
		rev[i] = p[i].revents;
	free(p);
	return r < 0 ? -errno : r;
}

static void k_free(struct hio *io)
{
	free(io);
}

static const struct hio_ops kernel_ops = {
	k_listen, k_accept, k_recv, k_send, k_close, k_poll, k_free, NULL,
};

struct hio *hio_kernel(void)
{
	struct hio *io = calloc(1, sizeof(*io));

	if (io)
		io->ops = &kernel_ops;
	return io;
}

/* ---- MemNet remote sockets ------------------------------------------------------ */

struct mjob {
	int c;
	struct xvi_memnet_job *j;
};

struct mio {
	struct hio io;
	struct xst o;			/* the endpoint and its stream context */
	struct xvi_memnet_ctx *mn;
	struct xvi_memnet_pollfd *p;
	int np;
	enum hio_mode mode;
	int mem;			/* the files' region, -1: none */
	const char *base;
	size_t len;
	struct mjob *jobs;		/* async sends not yet collected */
	int njobs, capjobs;
	unsigned long long jobs_started, jobs_ok, jobs_err;
};

#define MIO(io) ((struct mio *)(io))

static int m_listen(struct hio *io, __u16 port, int backlog)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int err, sd = xvi_memnet_ctx__socket(MIO(io)->mn, AF_INET, XVI_MEMNET_NONBLOCK);

	if (sd < 0)
		return sd;
	err = xvi_memnet_ctx__bind(MIO(io)->mn, sd, (struct sockaddr *)&a, sizeof(a));
	if (!err)
		err = xvi_memnet_ctx__listen(MIO(io)->mn, sd, backlog);
	if (err)
		xvi_memnet_ctx__close(MIO(io)->mn, sd);
	return err ? err : sd;
}

static int m_accept(struct hio *io, int l)
{
	return xvi_memnet_ctx__accept(MIO(io)->mn, l, NULL);
}

static ssize_t m_recv(struct hio *io, int c, void *buf, size_t len)
{
	return xvi_memnet_ctx__recv(MIO(io)->mn, c, buf, len, 0);
}

/*
 * Always MSG_MORE: the library holds the output until the loop's next poll,
 * which sends the responses of every connection serviced since in one
 * piece (one frame where it fits) instead of one or two frames each.
 * Kernel TCP would hold MSG_MORE data up to 200 ms, hence only @more there.
 */
static ssize_t m_send(struct hio *io, int c, const void *buf, size_t len, bool more)
{
	struct mio *m = MIO(io);
	const char *p = buf;
	struct xvi_memnet_job *j;
	ssize_t r;

	if (m->mem < 0 || p < m->base || p + len > m->base + m->len)
		return xvi_memnet_ctx__send(m->mn, c, buf, len, MSG_MORE);
	/* File bytes, direct: from the region, waiting until m holds them. */
	if (m->mode == HIO_DIRECT)
		return xvi_memnet_ctx__send_direct(m->mn, c, m->mem, (size_t)(p - m->base), len);
	/* File bytes: a job, and the loop goes on at once. */
	if (m->njobs == m->capjobs) {
		int cap = m->capjobs ? m->capjobs * 2 : 64;
		struct mjob *q = realloc(m->jobs, (size_t)cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		m->jobs = q;
		m->capjobs = cap;
	}
	j = xvi_memnet_ctx__async_send(m->mn, c, m->mem, (size_t)(p - m->base), len);
	if (!j)
		return -errno;
	m->jobs_started++;
	if (xvi_memnet_job__done(j, &r) == 1) {
		if (r < 0)
			m->jobs_err++;
		else
			m->jobs_ok++;
		return r < 0 ? r : (ssize_t)len;
	}
	m->jobs[m->njobs++] = (struct mjob){ .c = c, .j = j };
	return (ssize_t)len;
}

/*
 * Collect the completed jobs (of connection @c only, waiting, if c >= 0).
 * Looking at a job runs the library's engine, so a sweep over all (c < 0)
 * stops at the first one not done unless @all: jobs complete about in the
 * order they started, and the rest is looked at by the next poll.
 */
static void m_reap(struct mio *m, int c, bool all)
{
	bool stop = false;
	int k = 0;

	for (int i = 0; i < m->njobs; i++) {
		struct mjob mj = m->jobs[i];
		ssize_t r;

		if (stop || (c >= 0 && mj.c != c)) {
			m->jobs[k++] = mj;
			continue;
		}
		if (c >= 0)
			xvi_memnet_job__wait(mj.j, 1000);
		if (xvi_memnet_job__done(mj.j, &r) != 1) {
			m->jobs[k++] = mj;
			stop = c < 0 && !all;
			continue;
		}
		if (r < 0)
			m->jobs_err++;
		else
			m->jobs_ok++;
	}
	m->njobs = k;
}

static int m_reg(struct hio *io, void *addr, size_t len)
{
	struct mio *m = MIO(io);
	int mem;

	if (m->mode == HIO_PLAIN || !len)
		return 0;
	mem = xvi_stream_ctx__register_mem(m->o.ctx, addr, len);
	if (mem < 0)
		return mem;
	m->mem = mem;
	m->base = addr;
	m->len = len;
	return 0;
}

/*
 * A socket closes once its send jobs put all their bytes into the tunnel;
 * those sent by reference complete later, on the tunnel's ACK, and are
 * collected by the next poll.  Only bytes not yet queued (no credit, a
 * full tunnel) are waited for here.
 */
static void m_close(struct hio *io, int c)
{
	struct mio *m = MIO(io);

	if (xvi_memnet_ctx__close(m->mn, c) != -EBUSY)
		return;
	m_reap(m, c, false);
	if (xvi_memnet_ctx__close(m->mn, c) == -EBUSY)
		xvi_memnet_ctx__abort(m->mn, c);	/* a job still stuck after 1 s */
}

static int m_poll(struct hio *io, int *ids, short *ev, short *rev, int n, int tmo)
{
	struct mio *m = MIO(io);
	int r;

	if (n > m->np) {
		struct xvi_memnet_pollfd *p = realloc(m->p, (size_t)n * 2 * sizeof(*p));

		if (!p)
			return -ENOMEM;
		m->p = p;
		m->np = n * 2;
	}
	if (m->njobs)
		m_reap(m, -1, false);
	for (int i = 0; i < n; i++)
		m->p[i] = (struct xvi_memnet_pollfd){ .sd = ids[i], .events = ev[i] };
	r = xvi_memnet_ctx__poll(m->mn, m->p, n, tmo);
	for (int i = 0; i < n; i++)
		rev[i] = m->p[i].revents;
	return r;
}

static void m_free(struct hio *io)
{
	struct mio *m = MIO(io);
	struct xvi_memnet_ctx_stats st = { .sz = sizeof(st) };

	struct timespec t0, t;
	long ms = 0;

	/* Every job should complete by itself: say how many did not (2 s). */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < m->njobs && ms < 2000; i++) {
		xvi_memnet_job__wait(m->jobs[i].j, (int)(2000 - ms));
		clock_gettime(CLOCK_MONOTONIC, &t);
		ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
	}
	m_reap(m, -1, true);
	if (m->mode != HIO_PLAIN && !xvi_memnet_ctx__stats(m->mn, &st))
		fprintf(stderr, "xvi-httpd: %llu send jobs: %llu completed, %llu with an error, %d not completed; %llu bytes sent by reference\n",
			m->jobs_started, m->jobs_ok, m->jobs_err, m->njobs,
			(unsigned long long)st.tx_ref_bytes);
	xvi_memnet_ctx__free(m->mn);	/* completes what is left */
	m_reap(m, -1, true);
	if (m->mem >= 0)
		xvi_stream_ctx__deregister_mem(m->o.ctx, m->mem);
	xst_close(&m->o);
	free(m->jobs);
	free(m->p);
	free(m);
}

static const struct hio_ops memnet_ops = {
	m_listen, m_accept, m_recv, m_send, m_close, m_poll, m_free, m_reg,
};

struct hio *hio_memnet(const char *iface, const char *server, enum hio_mode mode)
{
	struct xst_cfg cfg = { .xt = { .prog = "xvi-httpd", .iface = iface,
				       .wait = XVI_WAIT_BLOCK }, .nodelay = true };
	union xvi_sockaddr srv, local;
	struct mio *m = calloc(1, sizeof(*m));
	char ip[64], *colon;
	const char *why;
	__u16 port;

	if (!m)
		return NULL;
	m->mode = mode;
	m->mem = -1;
	snprintf(ip, sizeof(ip), "%s", server);
	colon = strrchr(ip, ':');
	if (!colon || (*colon = 0, (why = xt_parse_port(colon + 1, &port))) ||
	    (why = xt_parse_ip(ip, port, &srv))) {
		fprintf(stderr, "xvi-httpd: --server %s: give IP:PORT of xvi-tcpserver\n", server);
		free(m);
		return NULL;
	}
	xt_any_addr(srv.sa.sa_family, xt_pid_port(), &local);
	if (xst_open(&m->o, &cfg, &local)) {
		free(m);
		return NULL;
	}
	m->mn = xvi_memnet_ctx__new(m->o.ctx, &srv, port, NULL);
	if (!m->mn) {
		fprintf(stderr, "xvi-httpd: no tunnel to the TCP Server at %s: %s\n", server,
			strerror(errno));
		xst_close(&m->o);
		free(m);
		return NULL;
	}
	m->io.ops = &memnet_ops;
	return &m->io;
}
