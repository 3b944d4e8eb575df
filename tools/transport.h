/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Shared by xvi-perf and xvi-cat.  Header-only on purpose: the Makefile turns
 * every tools/NAME/ directory into a program, so shared code cannot live in
 * a directory of its own; each tool includes this file as "../transport.h".
 *
 * A transport is either a libxvi UDP endpoint or an ordinary kernel UDP
 * socket (--kernel), behind one batch API.  The batch API reuses libxvi's
 * own types (struct xvi_msg for receive, struct xvi_txbuf for send), so a
 * tool's hot loop has one shape and the kernel run is a true side-by-side
 * baseline of the same loop.
 *
 * Kernel path limits: one receive batch and one send batch at a time (the
 * buffers are reused by the next call), which is how both tools use it.
 * The kernel path has two shapes: batched (sendmmsg/recvmmsg, the default)
 * and single (one sendto/recvfrom per datagram, what most programs do).
 *
 * CPU accounting for benchmarks: xt_cpu_now() reads getrusage(RUSAGE_SELF).
 * With tick-based accounting (no CONFIG_IRQ_TIME_ACCOUNTING) a task's system
 * time includes the softirq work that ran in its context (veth transmit,
 * the peer's XDP, the AF_XDP copy); work done by ksoftirqd is not in it.
 */
#ifndef XVI_TOOLS_TRANSPORT_H
#define XVI_TOOLS_TRANSPORT_H

#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <xvi.h>
#include "pkt/gather.h"	/* libxvi internal: the tools link it statically */

#define XT_BATCH	64
/* Kernel path buffers hold the largest UDP payload over IPv4. */
#define XT_KBUF		65536
#define XT_UDP_MAX	65507

struct xt_cfg {
	const char *prog;	/* program name for messages */
	const char *iface;	/* required unless kernel */
	bool kernel;
	bool kernel_single;	/* kernel: sendto/recvfrom instead of *mmsg */
	__u32 queue;
	enum xvi_wait_mode wait;
	/* endpoint tuning, 0 = library default */
	__u32 ep_flags;		/* enum xvi_endpoint_flags */
	__u32 busy_poll_budget;
	__u32 ring_size;	/* all four rings */
	__u32 num_frames;
	__u32 frame_size;
	__u32 spin_us;
};

struct xt {
	const char *prog;
	bool kernel;
	bool single;		/* kernel path: one datagram per system call */
	enum xvi_wait_mode wait;
	int family;
	int fd;			/* kernel socket or the endpoint's AF_XDP fd */
	__u32 max_payload;
	struct xvi_endpoint *ep;
	/*
	 * Multi-buffer endpoints (XVI_EP_MULTI_BUFFER): a datagram larger
	 * than a frame arrives as pieces (XVI_MSG_MORE); xt_recv hands out
	 * whole datagrams, so those are gathered into a ring of slots, one
	 * per datagram a call can return plus the one a call may leave
	 * unfinished.  One-piece datagrams stay zero-copy.
	 */
	bool mb;
	struct xvi_msg *pieces;		/* XT_BATCH */
	struct xvi_msg *copied;		/* pieces already gathered: give back */
	char *slots;			/* (XT_BATCH + 1) slots of max_payload */
	struct xvi_gather gather;	/* the datagram being gathered, in slot pslot */
	__u32 pslot;
	/* kernel path only */
	char *rxpool;
	char *txpool;
	struct mmsghdr *mm;
	struct iovec *iov;
};

/* ---- small helpers ------------------------------------------------------ */

/*
 * Set by SIGINT/SIGTERM.  Weak, not static: a tool made of several .c files
 * must share one flag, and this header is its only definition.
 */
__attribute__((weak)) volatile sig_atomic_t xt_stop;

static inline void xt_on_signal(int sig)
{
	(void)sig;
	xt_stop = 1;
}

/* SIGINT/SIGTERM set xt_stop; without SA_RESTART they also cut poll(). */
static inline void xt_install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = xt_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static inline __u64 xt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* CPU time this process used so far, user and system, in nanoseconds. */
struct xt_cpu {
	__u64 user_ns;
	__u64 sys_ns;
};

static inline void xt_cpu_now(struct xt_cpu *c)
{
	struct rusage ru;

	memset(c, 0, sizeof(*c));
	if (getrusage(RUSAGE_SELF, &ru))
		return;
	c->user_ns = (__u64)ru.ru_utime.tv_sec * 1000000000ull +
		     (__u64)ru.ru_utime.tv_usec * 1000ull;
	c->sys_ns = (__u64)ru.ru_stime.tv_sec * 1000000000ull +
		    (__u64)ru.ru_stime.tv_usec * 1000ull;
}

/* @b - @a, field by field (a later sample never goes below an earlier one). */
static inline struct xt_cpu xt_cpu_diff(const struct xt_cpu *a, const struct xt_cpu *b)
{
	struct xt_cpu d = {
		.user_ns = b->user_ns > a->user_ns ? b->user_ns - a->user_ns : 0,
		.sys_ns = b->sys_ns > a->sys_ns ? b->sys_ns - a->sys_ns : 0,
	};

	return d;
}

/*
 * Busy time of the whole machine so far, all CPUs, in nanoseconds: user,
 * nice, system, irq, softirq and steal from /proc/stat (not namespaced, so
 * both lab nodes' work is in it).  0 if it cannot be read.
 */
static inline __u64 xt_machine_busy_ns(void)
{
	unsigned long long v[8] = { 0 };
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "re");
	int n;

	if (!f)
		return 0;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		   &v[3], &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 8 || hz <= 0)
		return 0;
	return (__u64)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) * 1000000000ull / (__u64)hz;
}

/* Parse an unsigned decimal in [min, max]; 0 on success, -EINVAL if not. */
static inline int xt_parse_ulong(const char *s, unsigned long min,
				 unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Seconds, fractions allowed ("0.5"); 0 on success. */
static inline int xt_parse_seconds(const char *s, double max, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= 0) || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * An IPv4 or IPv6 literal (brackets allowed around IPv6) and a port into
 * @out.  The family comes from the literal.  0 or -EINVAL.
 */
static inline int xt_parse_addr(const char *ip, __u16 port,
				union xvi_sockaddr *out)
{
	char buf[INET6_ADDRSTRLEN + 2];
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!ip)
		return -EINVAL;
	if (inet_pton(AF_INET, ip, &out->in.sin_addr) == 1) {
		out->in.sin_family = AF_INET;
		out->in.sin_port = htons(port);
		return 0;
	}
	n = strlen(ip);
	if (n >= 2 && ip[0] == '[' && ip[n - 1] == ']' && n - 2 < sizeof(buf)) {
		memcpy(buf, ip + 1, n - 2);
		buf[n - 2] = '\0';
		ip = buf;
	}
	if (inet_pton(AF_INET6, ip, &out->in6.sin6_addr) == 1) {
		out->in6.sin6_family = AF_INET6;
		out->in6.sin6_port = htons(port);
		return 0;
	}
	return -EINVAL;
}

static inline void xt_any_addr(int family, __u16 port, union xvi_sockaddr *out)
{
	memset(out, 0, sizeof(*out));
	if (family == AF_INET6) {
		out->in6.sin6_family = AF_INET6;
		out->in6.sin6_addr = in6addr_any;
		out->in6.sin6_port = htons(port);
	} else {
		out->in.sin_family = AF_INET;
		out->in.sin_addr.s_addr = htonl(INADDR_ANY);
		out->in.sin_port = htons(port);
	}
}

static inline socklen_t xt_addrlen(const union xvi_sockaddr *a)
{
	return a->sa.sa_family == AF_INET6 ? sizeof(a->in6) : sizeof(a->in);
}

static inline __u16 xt_port(const union xvi_sockaddr *a)
{
	return ntohs(a->sa.sa_family == AF_INET6 ? a->in6.sin6_port : a->in.sin_port);
}

static inline bool xt_addr_equal(const union xvi_sockaddr *a,
				 const union xvi_sockaddr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET)
		return a->in.sin_port == b->in.sin_port &&
		       a->in.sin_addr.s_addr == b->in.sin_addr.s_addr;
	if (a->sa.sa_family == AF_INET6)
		return a->in6.sin6_port == b->in6.sin6_port &&
		       !memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr,
			       sizeof(a->in6.sin6_addr));
	return false;
}

/* "198.18.0.1:7000" or "[2001:2::1]:7000" */
static inline const char *xt_addr_str(const union xvi_sockaddr *a, char *buf,
				      size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (a->sa.sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &a->in6.sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(a->in6.sin6_port));
	} else if (a->sa.sa_family == AF_INET) {
		inet_ntop(AF_INET, &a->in.sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(a->in.sin_port));
	} else {
		snprintf(buf, len, "(family %u)", a->sa.sa_family);
	}
	return buf;
}

/* A port in the dynamic range 49152..65535, from the pid: no two tools that
 * run at once on a host pick the same one unless their pids differ by 16384. */
static inline __u16 xt_pid_port(void)
{
	return (__u16)(49152 + (unsigned int)getpid() % 16384);
}

static inline int xt_wait_parse(const char *s, enum xvi_wait_mode *out)
{
	if (!strcmp(s, "busy"))
		*out = XVI_WAIT_BUSY;
	else if (!strcmp(s, "block"))
		*out = XVI_WAIT_BLOCK;
	else if (!strcmp(s, "adaptive"))
		*out = XVI_WAIT_ADAPTIVE;
	else
		return -EINVAL;
	return 0;
}

static inline const char *xt_wait_name(enum xvi_wait_mode w)
{
	switch (w) {
	case XVI_WAIT_BUSY: return "busy";
	case XVI_WAIT_BLOCK: return "block";
	default: return "adaptive";
	}
}

/* ---- open / close ------------------------------------------------------- */

static inline void xt_close(struct xt *t)
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

static inline void xt_open_hint(const struct xt_cfg *cfg,
				const union xvi_sockaddr *local, int err)
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

static inline int xt_open_kernel(struct xt *t, const struct xt_cfg *cfg,
				 const union xvi_sockaddr *local)
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

/* A usage error: "PROG: message", a pointer to --help, and exit code 2. */
__attribute__((format(printf, 2, 3)))
static inline int xt_usage_err(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", prog);
	return 2;
}

/*
 * Open a transport bound to @local (its family decides IPv4 or IPv6).
 * Prints a message that names the problem and the fix on failure and
 * returns a negative errno.
 */
static inline int xt_open(struct xt *t, const struct xt_cfg *cfg,
			  const union xvi_sockaddr *local)
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
		err = xt_open_kernel(t, cfg, local);
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
		xt_open_hint(cfg, local, err);
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

/* ---- receive ------------------------------------------------------------ */

/* xvi_msg.frame of a gathered datagram: nothing to give back for it. */
#define XT_GATHERED	UINT64_MAX

/*
 * Multi-buffer receive: at most @max pieces, so at most @max datagrams.
 * Gathered pieces go back to the endpoint at once; one-piece datagrams are
 * released by xt_release like any message.
 */
static inline int xt_recv_mb(struct xt *t, struct xvi_msg *msgs, int max)
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

/* Take up to @max datagrams without blocking: count, 0, or -errno. */
static inline int xt_recv(struct xt *t, struct xvi_msg *msgs, int max)
{
	int i, n;

	if (!t->kernel)
		return t->mb ? xt_recv_mb(t, msgs, max) :
			       xvi_endpoint__recv_batch(t->ep, msgs, max);

	if (max > XT_BATCH)
		max = XT_BATCH;
	if (t->single && max > 0) {
		socklen_t alen = sizeof(msgs[0].peer);
		ssize_t r;

		memset(&msgs[0].peer, 0, sizeof(msgs[0].peer));
		r = recvfrom(t->fd, t->rxpool, XT_KBUF, MSG_DONTWAIT, &msgs[0].peer.sa, &alen);
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ?
			       0 : -errno;
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
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -errno;
	for (i = 0; i < n; i++) {
		msgs[i].data = t->iov[i].iov_base;
		msgs[i].len = t->mm[i].msg_len;
		msgs[i].flags = 0;
		msgs[i].frame = (__u64)i;
	}
	return n;
}

static inline void xt_release(struct xt *t, const struct xvi_msg *msgs, int n)
{
	int i, k = 0;

	if (t->kernel || n <= 0)
		return;
	if (!t->mb) {
		xvi_endpoint__release(t->ep, msgs, n);
		return;
	}
	for (i = 0; i < n; i++)
		if (msgs[i].frame != XT_GATHERED)
			t->copied[k++] = msgs[i];
	if (k)
		xvi_endpoint__release(t->ep, t->copied, k);
}

static inline int xt_poll(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r = poll(&p, 1, timeout_ms);

	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	return r > 0;
}

/*
 * Wait until a datagram is ready, by the wait mode: 1 ready, 0 timeout (or
 * a signal), -errno.  @timeout_ms < 0 waits forever.
 */
static inline int xt_wait(struct xt *t, int timeout_ms)
{
	__u64 end, spin_end, now;
	int r;

	if (!t->kernel) {
		r = xvi_endpoint__wait(t->ep, timeout_ms);
		return r == -EINTR || r == -ETIMEDOUT ? 0 : r;
	}
	if (t->wait == XVI_WAIT_BLOCK)
		return xt_poll(t->fd, timeout_ms);

	now = xt_now_ns();
	end = timeout_ms < 0 ? UINT64_MAX : now + (__u64)timeout_ms * 1000000ull;
	spin_end = t->wait == XVI_WAIT_BUSY ? end : now + 50000ull;
	while (!xt_stop) {
		r = xt_poll(t->fd, 0);
		if (r)
			return r;
		now = xt_now_ns();
		if (now >= end)
			return 0;
		if (now >= spin_end) {
			__u64 left = (end - now + 999999ull) / 1000000ull;

			return xt_poll(t->fd, timeout_ms < 0 ? -1 :
				       (int)(left > INT_MAX ? INT_MAX : left));
		}
	}
	return 0;
}

/* ---- send --------------------------------------------------------------- */

/* Up to @n send buffers (maybe 0 while sends are in flight). */
static inline int xt_tx_alloc(struct xt *t, struct xvi_txbuf *bufs, int n)
{
	int i;

	if (!t->kernel)
		return xvi_endpoint__tx_alloc(t->ep, bufs, n);
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

/*
 * Send the buffers: returns how many were sent, or -errno if the first one
 * failed.  Buffers from the returned count on remain the caller's
 * (xt_tx_free them).
 */
static inline int xt_tx_send(struct xt *t, struct xvi_txbuf *bufs, int n)
{
	int i, r;

	if (!t->kernel)
		return xvi_endpoint__tx_send(t->ep, bufs, n);
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

static inline void xt_tx_free(struct xt *t, const struct xvi_txbuf *bufs, int n)
{
	if (!t->kernel && n > 0)
		xvi_endpoint__tx_free(t->ep, bufs, n);
}

/* Reap send completions; sends still in flight (always 0 on the kernel path). */
static inline int xt_flush(struct xt *t)
{
	return t->kernel ? 0 : xvi_endpoint__flush(t->ep);
}

/* One datagram, copied: @len or -errno. */
static inline ssize_t xt_sendto(struct xt *t, const void *buf, size_t len,
				const union xvi_sockaddr *dst)
{
	ssize_t r;

	if (!t->kernel)
		return xvi_endpoint__sendto(t->ep, buf, len, dst);
	r = sendto(t->fd, buf, len, 0, &dst->sa, xt_addrlen(dst));
	return r < 0 ? -errno : r;
}

#endif /* XVI_TOOLS_TRANSPORT_H */
