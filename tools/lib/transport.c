// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The datagram transport's opening and closing, and its kernel and
 * multi-buffer paths (transport.h has the per-batch calls).
 */
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "transport.h"

const struct opt_enum xt_wait_modes[] = {
	{ "busy", XVI_WAIT_BUSY },
	{ "block", XVI_WAIT_BLOCK },
	{ "adaptive", XVI_WAIT_ADAPTIVE },
	{ NULL },
};

const char *xt_wait_name(enum xvi_wait_mode w)
{
	const struct opt_enum *e;

	for (e = xt_wait_modes; e->name; e++)
		if (e->value == (int)w)
			return e->name;
	return "adaptive";
}

/* ---- open / close ------------------------------------------------------- */

void xt_close(struct xt *t)
{
	if (t->ep) {
		/* Let posted sends leave before the segment goes away. */
		__u64 end = xt_now_ns() + 500000000ull;

		while (xvi_endpoint__flush(t->ep) > 0 && xt_now_ns() < end)
			usleep(100);
		xvi_endpoint__close(t->ep);
	} else if (t->fd >= 0) {
		close(t->fd);
	}
	free(t->pieces);
	free(t->copied);
	free(t->slots);
	free(t->rxpool);
	free(t->txpool);
	free(t->mm);
	free(t->iov);
	memset(t, 0, sizeof(*t));
	t->fd = -1;
}

static void open_hint(const struct xt_cfg *cfg, const union xvi_sockaddr *local, int err)
{
	char a[64];

	xt_addr_str(local, a, sizeof(a));
	switch (err) {
	case ENODEV:
		fprintf(stderr, "%s: %s: no such interface: check the name with 'ip link show'\n",
			cfg->prog, cfg->iface);
		break;
	case ENOENT:
		fprintf(stderr, "%s: %s does not run the xdp-vi datapath (or bpffs is not mounted at /sys/fs/bpf): run 'xdp-vi attach %s' first, or use --kernel\n",
			cfg->prog, cfg->iface, cfg->iface);
		break;
	case EADDRINUSE:
		fprintf(stderr, "%s: %s on %s is taken by another endpoint or socket: choose another port\n",
			cfg->prog, a, cfg->iface);
		break;
	case EPERM:
	case EACCES:
		fprintf(stderr, "%s: not privileged to open an endpoint on %s: run as root (CAP_NET_RAW, CAP_BPF)\n",
			cfg->prog, cfg->iface);
		break;
	default:
		fprintf(stderr, "%s: cannot open an endpoint for %s on %s: %s\n",
			cfg->prog, a, cfg->iface, strerror(err));
	}
}

static int open_kernel(struct xt *t, const struct xt_cfg *cfg, const union xvi_sockaddr *local)
{
	char a[64];
	int one = 1, buf = 4 << 20, err;

	t->fd = socket(local->sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (t->fd < 0) {
		err = errno;
		fprintf(stderr, "%s: socket: %s\n", cfg->prog, strerror(err));
		return -err;
	}
	/* Big buffers so the kernel baseline is not limited by defaults. */
	setsockopt(t->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	setsockopt(t->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	if (local->sa.sa_family == AF_INET6)
		setsockopt(t->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (cfg->reuseport && setsockopt(t->fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))) {
		err = errno;
		fprintf(stderr, "%s: SO_REUSEPORT: %s\n", cfg->prog, strerror(err));
		return -err;
	}
	if (cfg->iface && setsockopt(t->fd, SOL_SOCKET, SO_BINDTODEVICE, cfg->iface,
				     strlen(cfg->iface) + 1)) {
		err = errno;
		fprintf(stderr, "%s: cannot bind the kernel socket to %s: %s: check --iface\n",
			cfg->prog, cfg->iface, strerror(err));
		return -err;
	}
	if (bind(t->fd, &local->sa, xt_addrlen(local))) {
		err = errno;
		fprintf(stderr, "%s: cannot bind %s: %s%s\n", cfg->prog,
			xt_addr_str(local, a, sizeof(a)), strerror(err),
			err == EADDRINUSE ? ": choose another port" :
			err == EADDRNOTAVAIL ? ": use an address of this host" : "");
		return -err;
	}
	t->rxpool = malloc((size_t)XT_BATCH * XT_KBUF);
	t->txpool = malloc((size_t)XT_BATCH * XT_KBUF);
	t->mm = calloc(XT_BATCH, sizeof(*t->mm));
	t->iov = calloc(XT_BATCH, sizeof(*t->iov));
	if (!t->rxpool || !t->txpool || !t->mm || !t->iov) {
		fprintf(stderr, "%s: out of memory\n", cfg->prog);
		return -ENOMEM;
	}
	t->max_payload = XT_UDP_MAX;
	return 0;
}

int xt_open(struct xt *t, const struct xt_cfg *cfg, const union xvi_sockaddr *local)
{
	struct xvi_endpoint_info info;
	int err;

	memset(t, 0, sizeof(*t));
	t->fd = -1;
	t->prog = cfg->prog;
	t->kernel = cfg->kernel;
	t->single = cfg->kernel && cfg->kernel_single;
	t->wait = cfg->wait;
	t->family = local->sa.sa_family;

	if (cfg->kernel) {
		err = open_kernel(t, cfg, local);
		if (err)
			xt_close(t);
		return err;
	}

	XVI_OPTS(xvi_endpoint_opts, o,
		.kind = XVI_EP_UDP,
		.addr = &local->sa,
		.addrlen = xt_addrlen(local),
		.queue_id = cfg->queue,
		.wait_mode = cfg->wait,
		.flags = cfg->ep_flags,
		.busy_poll_budget = cfg->busy_poll_budget,
		.rx_size = cfg->ring_size,
		.tx_size = cfg->ring_size,
		.fill_size = cfg->ring_size,
		.comp_size = cfg->ring_size,
		.num_frames = cfg->num_frames,
		.frame_size = cfg->frame_size,
		.spin_us = cfg->spin_us,
	);
	t->ep = xvi_endpoint__open(cfg->iface, &o);
	if (!t->ep) {
		err = errno ? errno : EIO;
		open_hint(cfg, local, err);
		xt_close(t);
		return -err;
	}
	memset(&info, 0, sizeof(info));
	info.sz = sizeof(info);
	err = xvi_endpoint__info(t->ep, &info);
	if (err) {
		fprintf(stderr, "%s: cannot read the endpoint info: %s\n", cfg->prog,
			strerror(-err));
		xt_close(t);
		return err;
	}
	t->max_payload = info.max_payload;
	t->fd = xvi_endpoint__fd(t->ep);
	if (info.flags & XVI_INFO_MULTI_BUFFER) {
		t->mb = true;
		t->pieces = calloc(XT_BATCH, sizeof(*t->pieces));
		t->copied = calloc(XT_BATCH, sizeof(*t->copied));
		t->slots = malloc((size_t)(XT_BATCH + 1) * t->max_payload);
		t->gather.cap = t->max_payload;
		if (!t->pieces || !t->copied || !t->slots) {
			fprintf(stderr, "%s: out of memory\n", cfg->prog);
			xt_close(t);
			return -ENOMEM;
		}
	}
	return 0;
}

__u16 xt_local_port(const struct xt *t)
{
	struct xvi_endpoint_info info = { .sz = sizeof(info) };
	union xvi_sockaddr a;
	socklen_t len = sizeof(a);

	if (!t->kernel)
		a = xvi_endpoint__info(t->ep, &info) ? (union xvi_sockaddr){ 0 } : info.local;
	else if (getsockname(t->fd, &a.sa, &len))
		return 0;
	if (a.sa.sa_family == AF_INET)
		return ntohs(a.in.sin_port);
	if (a.sa.sa_family == AF_INET6)
		return ntohs(a.in6.sin6_port);
	return 0;
}

/* ---- multi-buffer receive ------------------------------------------------ */

/* xvi_msg.frame of a gathered datagram: nothing to give back for it. */
#define XT_GATHERED	UINT64_MAX

/*
 * At most @max pieces, so at most @max datagrams.  Gathered pieces go back
 * to the endpoint at once; one-piece datagrams are released by xt_release
 * like any message.
 */
int xt_recv_mb(struct xt *t, struct xvi_msg *msgs, int max)
{
	int n, i, out = 0, ncopied = 0;

	if (max > XT_BATCH)
		max = XT_BATCH;
	n = xvi_endpoint__recv_batch(t->ep, t->pieces, max);
	if (n <= 0)
		return n;
	for (i = 0; i < n; i++) {
		const struct xvi_msg *p = &t->pieces[i];

		if (!t->gather.active && !(p->flags & XVI_MSG_MORE)) {
			msgs[out++] = *p;
			continue;
		}
		if (!t->gather.active)
			t->gather.buf = (__u8 *)t->slots + (size_t)t->pslot * t->max_payload;
		t->copied[ncopied++] = *p;
		/* A datagram too long for this endpoint is not ours: dropped. */
		if (xvi_gather__add(&t->gather, p) <= 0)
			continue;
		msgs[out] = t->gather.dgram;
		msgs[out++].frame = XT_GATHERED;
		t->pslot = (t->pslot + 1) % (XT_BATCH + 1);
	}
	if (ncopied)
		xvi_endpoint__release(t->ep, t->copied, ncopied);
	return out;
}

void xt_release_mb(struct xt *t, const struct xvi_msg *msgs, int n)
{
	int i, k = 0;

	for (i = 0; i < n; i++)
		if (msgs[i].frame != XT_GATHERED)
			t->copied[k++] = msgs[i];
	if (k)
		xvi_endpoint__release(t->ep, t->copied, k);
}

/* ---- kernel path ---------------------------------------------------------- */

static bool would_block(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
}

int xt_kernel_recv(struct xt *t, struct xvi_msg *msgs, int max)
{
	int i, n;

	if (max > XT_BATCH)
		max = XT_BATCH;
	if (t->single && max > 0) {
		socklen_t alen = sizeof(msgs[0].peer);
		ssize_t r;

		memset(&msgs[0].peer, 0, sizeof(msgs[0].peer));
		r = recvfrom(t->fd, t->rxpool, XT_KBUF, MSG_DONTWAIT, &msgs[0].peer.sa, &alen);
		if (r < 0)
			return would_block(errno) ? 0 : -errno;
		msgs[0].data = t->rxpool;
		msgs[0].len = (__u32)r;
		msgs[0].flags = 0;
		msgs[0].frame = 0;
		return 1;
	}
	for (i = 0; i < max; i++) {
		t->iov[i].iov_base = t->rxpool + (size_t)i * XT_KBUF;
		t->iov[i].iov_len = XT_KBUF;
		memset(&t->mm[i], 0, sizeof(t->mm[i]));
		memset(&msgs[i].peer, 0, sizeof(msgs[i].peer));
		t->mm[i].msg_hdr.msg_iov = &t->iov[i];
		t->mm[i].msg_hdr.msg_iovlen = 1;
		t->mm[i].msg_hdr.msg_name = &msgs[i].peer;
		t->mm[i].msg_hdr.msg_namelen = sizeof(msgs[i].peer);
	}
	n = recvmmsg(t->fd, t->mm, max, MSG_DONTWAIT, NULL);
	if (n < 0)
		return would_block(errno) ? 0 : -errno;
	for (i = 0; i < n; i++) {
		msgs[i].data = t->iov[i].iov_base;
		msgs[i].len = t->mm[i].msg_len;
		msgs[i].flags = 0;
		msgs[i].frame = (__u64)i;
	}
	return n;
}

static int poll_in(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r = poll(&p, 1, timeout_ms);

	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	return r > 0;
}

int xt_kernel_wait(struct xt *t, int timeout_ms)
{
	__u64 end, spin_end, now;
	int r;

	if (t->wait == XVI_WAIT_BLOCK)
		return poll_in(t->fd, timeout_ms);

	now = xt_now_ns();
	end = timeout_ms < 0 ? UINT64_MAX : now + (__u64)timeout_ms * 1000000ull;
	spin_end = t->wait == XVI_WAIT_BUSY ? end : now + 50000ull;
	while (!xt_stop) {
		r = poll_in(t->fd, 0);
		if (r)
			return r;
		now = xt_now_ns();
		if (now >= end)
			return 0;
		if (now >= spin_end) {
			__u64 left = (end - now + 999999ull) / 1000000ull;

			return poll_in(t->fd, timeout_ms < 0 ? -1 :
				       (int)(left > INT_MAX ? INT_MAX : left));
		}
	}
	return 0;
}

int xt_kernel_tx_alloc(struct xt *t, struct xvi_txbuf *bufs, int n)
{
	int i;

	if (n > XT_BATCH)
		n = XT_BATCH;
	for (i = 0; i < n; i++) {
		memset(&bufs[i], 0, sizeof(bufs[i]));
		bufs[i].data = t->txpool + (size_t)i * XT_KBUF;
		bufs[i].cap = XT_UDP_MAX;
		bufs[i].frame = (__u64)i;
	}
	return n;
}

int xt_kernel_tx_send(struct xt *t, struct xvi_txbuf *bufs, int n)
{
	int i, r;

	if (t->single) {
		/* One system call per datagram, as a plain sendto() program does. */
		for (i = 0; i < n; i++) {
			if (sendto(t->fd, bufs[i].data, bufs[i].len, 0, &bufs[i].dst->sa,
				   xt_addrlen(bufs[i].dst)) < 0)
				return i ? i : -errno;
		}
		return n;
	}
	for (i = 0; i < n; i++) {
		t->iov[i].iov_base = bufs[i].data;
		t->iov[i].iov_len = bufs[i].len;
		memset(&t->mm[i], 0, sizeof(t->mm[i]));
		t->mm[i].msg_hdr.msg_iov = &t->iov[i];
		t->mm[i].msg_hdr.msg_iovlen = 1;
		t->mm[i].msg_hdr.msg_name = (void *)&bufs[i].dst->sa;
		t->mm[i].msg_hdr.msg_namelen = xt_addrlen(bufs[i].dst);
	}
	r = sendmmsg(t->fd, t->mm, n, 0);
	return r < 0 ? -errno : r;
}

ssize_t xt_kernel_sendto(struct xt *t, const void *buf, size_t len,
			 const union xvi_sockaddr *dst)
{
	ssize_t r = sendto(t->fd, buf, len, 0, &dst->sa, xt_addrlen(dst));

	return r < 0 ? -errno : r;
}
