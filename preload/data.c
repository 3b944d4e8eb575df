// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Datagrams in and out of an xvi socket.  The per-datagram path: one
 * descriptor taken or posted on the endpoint's rings, one copy, no
 * allocation, no system call but the endpoint's own kicks; waiting blocks in
 * the endpoint's poll() (where signals interrupt it, EINTR).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>
#include <linux/time_types.h>
#include <arpa/inet.h>
#include "preload.h"
#include "ep/endpoint.h"
#include "stream.h"

extern void __chk_fail(void) __attribute__((noreturn));

#define XP_BATCH 64
#define XP_MAX_DGRAM 4096	/* a datagram is one frame (no multi-buffer) */

int xp_wait_rx(struct xsock *xs, int flags)
{
	int r;

	/* No datagram yet: what was sent must be on its way before the answer is awaited. */
	xp_tx_kick_pending();
	if (xs->nonblock || (flags & MSG_DONTWAIT))
		return -EAGAIN;
	r = xvi_endpoint__wait(xs->ep, xs->rcvtimeo_ms);
	if (r == -ETIMEDOUT)
		return -EAGAIN;		/* SO_RCVTIMEO ran out */
	return r < 0 ? r : 0;
}

static bool from_peer(const struct xsock *xs, const struct xvi_msg *m)
{
	return xp_sa_eq(&m->peer, &xs->dst);
}

/*
 * The next datagram into @m and when it left the RX ring into @ts (zero if
 * the socket does not ask, xp_rxstamp): 1, or a negative errno.  With
 * MSG_PEEK it stays the socket's (has_peek); otherwise the caller releases
 * it.
 */
static int take(struct xsock *xs, struct xvi_msg *m, int flags, struct xp_rxclock *clk,
		struct timespec *ts)
{
	int r;

	for (;;) {
		if (xs->has_peek) {
			*m = xs->peek;
			*ts = xs->peek_ts;
			if (!(flags & MSG_PEEK)) {
				xs->has_peek = false;
				__atomic_fetch_sub(&xp_peeked, 1, __ATOMIC_RELAXED);
			}
			return 1;
		}
		/* Sharing its port: the ring is sorted among the sockets (share.c). */
		if (xs->next_share) {
			if (xp_share_take(xs, m, flags, ts))
				return 1;
			r = xp_wait_rx(xs, flags);
			if (r < 0)
				return r;
			clk->read = false;	/* what comes next came after the wait */
			continue;
		}
		r = xvi_endpoint__recv_batch(xs->ep, m, 1);
		if (r < 0)
			return r;
		if (r == 1) {
			/* A connected UDP socket takes only its peer's datagrams. */
			if (xs->connected && !from_peer(xs, m)) {
				xvi_endpoint__release(xs->ep, m, 1);
				continue;
			}
			*ts = xp_rxstamp(xs, clk);
			if (flags & MSG_PEEK) {
				xs->peek = *m;
				xs->peek_ts = *ts;
				xs->has_peek = true;
				__atomic_fetch_add(&xp_peeked, 1, __ATOMIC_RELAXED);
			}
			return 1;
		}
		r = xp_wait_rx(xs, flags);
		if (r < 0)
			return r;
		clk->read = false;
	}
}

static void put_src(const struct xvi_msg *m, struct sockaddr *src, socklen_t *slen)
{
	socklen_t n = xp_sa_len(m->peer.sa.sa_family);

	if (!src || !slen)
		return;
	memcpy(src, &m->peer, *slen < n ? *slen : n);
	*slen = n;
}

/* Scatter @m into @iov; returns the bytes copied. */
static size_t scatter(const struct xvi_msg *m, const struct iovec *iov, size_t n)
{
	size_t i, done = 0, c;

	for (i = 0; i < n && done < m->len; i++) {
		c = m->len - done < iov[i].iov_len ? m->len - done : iov[i].iov_len;
		memcpy(iov[i].iov_base, (char *)m->data + done, c);
		done += c;
	}
	return done;
}

/*
 * Append one control message to @msg (@used bytes of msg_controllen so
 * far), as the kernel's put_cmsg.
 */
static void put_cmsg(struct msghdr *msg, size_t *used, int level, int type, const void *data,
		     size_t len)
{
	struct cmsghdr *c = (struct cmsghdr *)((char *)msg->msg_control + *used);

	if (!msg->msg_control || *used + CMSG_SPACE(len) > msg->msg_controllen) {
		msg->msg_flags |= MSG_CTRUNC;
		return;
	}
	c->cmsg_len = CMSG_LEN(len);
	c->cmsg_level = level;
	c->cmsg_type = type;
	memcpy(CMSG_DATA(c), data, len);
	*used += CMSG_SPACE(len);
}

/*
 * SO_TIMESTAMP or SO_TIMESTAMPNS: @ts (CLOCK_REALTIME) as a struct timeval
 * or struct timespec, under the type the option was set by (the _NEW types
 * carry 64-bit fields, the same layout as the old ones on a 64-bit ABI).
 * A datagram taken before the socket asked has no stamp: it gets the time
 * of this call, as the kernel stamps an unstamped one at recvmsg.
 */
static void put_tstamp(const struct xsock *xs, struct timespec ts, struct xp_rxclock *clk,
		       struct msghdr *msg, size_t *used)
{
	bool nw = xs->cmsgs & XS_CM_TSNEW;

	if (!ts.tv_sec && !ts.tv_nsec)
		ts = xp_rxclock(clk);
	if (xs->cmsgs & XS_CM_TSNS) {
		struct __kernel_timespec k = { .tv_sec = ts.tv_sec, .tv_nsec = ts.tv_nsec };

		if (nw)
			put_cmsg(msg, used, SOL_SOCKET, SO_TIMESTAMPNS_NEW, &k, sizeof(k));
		else
			put_cmsg(msg, used, SOL_SOCKET, SO_TIMESTAMPNS_OLD, &ts, sizeof(ts));
	} else {
		struct __kernel_sock_timeval k = { .tv_sec = ts.tv_sec,
						   .tv_usec = ts.tv_nsec / 1000 };
		struct timeval tv = { .tv_sec = ts.tv_sec, .tv_usec = ts.tv_nsec / 1000 };

		if (nw)
			put_cmsg(msg, used, SOL_SOCKET, SO_TIMESTAMP_NEW, &k, sizeof(k));
		else
			put_cmsg(msg, used, SOL_SOCKET, SO_TIMESTAMP_OLD, &tv, sizeof(tv));
	}
}

/*
 * The receive time (put_tstamp), then IP_PKTINFO and IP_RECVTOS for @m
 * (IPV6_PKTINFO and IPV6_TCLASS on an IPv6 socket), in the kernel's order
 * (the socket level's before the IP level's: docs/KERNEL.md, fact 52) and
 * layout, read from the frame's own IP header (the frame starts with its
 * Ethernet header at m->frame in the endpoint's area).
 */
static void put_cmsgs(const struct xsock *xs, const struct xvi_msg *m, struct timespec ts,
		      struct xp_rxclock *clk, struct msghdr *msg)
{
	const __u8 *f = (const __u8 *)xs->ep->area + m->frame, *ip = f + 14;
	size_t used = 0;

	if (!xs->cmsgs) {
		msg->msg_controllen = 0;
		return;
	}
	if (xs->cmsgs & XS_CM_TSANY)
		put_tstamp(xs, ts, clk, msg, &used);
	if (f[12] == 0x81 && f[13] == 0x00)
		ip += 4;	/* one VLAN tag */
	if ((ip[0] >> 4) == 4) {
		if (xs->cmsgs & XS_CM_PKTINFO) {
			struct in_pktinfo pi = { .ipi_ifindex = xs->ep->ifindex };

			/* Unicast: the address a reply goes out from is the one it came to. */
			memcpy(&pi.ipi_addr, ip + 16, 4);
			pi.ipi_spec_dst = pi.ipi_addr;
			put_cmsg(msg, &used, IPPROTO_IP, IP_PKTINFO, &pi, sizeof(pi));
		}
		if (xs->cmsgs & XS_CM_TOS)
			put_cmsg(msg, &used, IPPROTO_IP, IP_TOS, ip + 1, 1);
	} else if ((ip[0] >> 4) == 6) {
		if (xs->cmsgs & XS_CM_PKTINFO6) {
			struct in6_pktinfo pi = { .ipi6_ifindex = xs->ep->ifindex };

			memcpy(&pi.ipi6_addr, ip + 24, 16);
			put_cmsg(msg, &used, IPPROTO_IPV6, IPV6_PKTINFO, &pi, sizeof(pi));
		}
		if (xs->cmsgs & XS_CM_TCLASS) {
			int tc = ((ip[0] & 0x0f) << 4) | (ip[1] >> 4);

			put_cmsg(msg, &used, IPPROTO_IPV6, IPV6_TCLASS, &tc, sizeof(tc));
		}
	}
	msg->msg_controllen = used;
}

static ssize_t xrecv(struct xsock *xs, const struct iovec *iov, size_t niov, int flags,
		     struct sockaddr *src, socklen_t *slen, struct msghdr *msg,
		     struct xp_rxclock *clk)
{
	struct xp_rxclock own = { 0 };
	struct timespec ts;
	struct xvi_msg m;
	size_t got;
	int r;

	if (!clk)
		clk = &own;
	r = take(xs, &m, flags, clk, &ts);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	got = scatter(&m, iov, niov);
	put_src(&m, src, slen);
	if (msg) {
		msg->msg_flags = got < m.len ? MSG_TRUNC : 0;
		put_cmsgs(xs, &m, ts, clk, msg);
	}
	if (!(flags & MSG_PEEK)) {
		xvi_endpoint__release(xs->ep, &m, 1);
		xs->rx_dgrams++;
	}
	return flags & MSG_TRUNC ? (ssize_t)m.len : (ssize_t)got;
}

static int wait_tx(struct xsock *xs, int flags)
{
	struct pollfd p = { .fd = xs->xfd, .events = POLLOUT };

	if (xs->nonblock || (flags & MSG_DONTWAIT))
		return -EAGAIN;
	/* Sends in flight hold every buffer: reap, and wait for the kernel. */
	xvi_endpoint__flush(xs->ep);
	if (REAL(poll)(&p, 1, 1) < 0 && errno == EINTR)
		return -EINTR;
	return 0;
}

/*
 * A destination for @xs: 0, or -1 with errno.  An IPv4 one on an IPv6
 * socket on xvi cannot go: its endpoint is IPv6 only.
 */
static int dest_of(const struct xsock *xs, const struct sockaddr *to, socklen_t tolen,
		   union xvi_sockaddr *d)
{
	int r = xp_sa_in(xs, to, tolen, d);

	if (r == 1) {
		xp_refused(XP_REF_V4, "an IPv6 socket on xvi sends to an IPv4 address: "
			   "ENETUNREACH, as with IPV6_V6ONLY (its endpoint is IPv6 only)");
		r = -ENETUNREACH;
	}
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}

static ssize_t xsend(struct xsock *xs, const void *buf, size_t len, int flags,
		     const struct sockaddr *to, socklen_t tolen)
{
	union xvi_sockaddr d;
	const union xvi_sockaddr *dst = &xs->dst;
	ssize_t r;

	if (to) {
		if (dest_of(xs, to, tolen, &d))
			return -1;
		dst = &d;
	} else if (!xs->connected) {
		errno = EDESTADDRREQ;
		return -1;
	}
	if (len > xs->max_payload) {
		errno = EMSGSIZE;
		return -1;
	}
	for (;;) {
		r = xvi_endpoint__sendto(xs->ep, buf, len, dst);
		if (r != -EAGAIN)
			break;
		r = wait_tx(xs, flags);
		if (r < 0)
			break;
	}
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	xs->tx_dgrams++;
	xp_tx_dirty |= xp_conf.tx_batch > 1;
	return r;
}

/* A NEW socket gets its port on its first send, as the kernel autobinds. */
static struct xsock *ready_to_send(int fd, const struct sockaddr *to, socklen_t tolen)
{
	union xvi_sockaddr any = { .sa = { .sa_family = AF_INET } }, dst;
	struct xsock *xs = xp_get(fd);
	int r;

	if (!xs || xs->state == XS_XVI || !to)
		return xs && xs->state == XS_XVI ? xs : NULL;
	r = xp_sa_in(xs, to, tolen, &dst);
	if (r == 1)
		xp_fallback(fd, xs, XR_DUALSTACK, "sends to an IPv4 address");
	if (r)
		return NULL;
	any.sa.sa_family = (sa_family_t)xs->family;
	r = xp_promote(fd, xs, &any, &dst);
	return r == 0 ? xs : NULL;
}

static size_t gather(const struct iovec *iov, size_t n, char *buf, size_t cap, size_t *total)
{
	size_t i, done = 0, c;

	*total = 0;
	for (i = 0; i < n; i++) {
		*total += iov[i].iov_len;
		c = cap - done < iov[i].iov_len ? cap - done : iov[i].iov_len;
		memcpy(buf + done, iov[i].iov_base, c);
		done += c;
	}
	return done;
}

/*
 * sendmsg's control messages, which an endpoint honours when they ask for
 * what it does anyway: the source address (IP_PKTINFO's ipi_spec_dst,
 * IPV6_PKTINFO's ipi6_addr) unset or the one its datagrams carry, the
 * interface unset or its own, a TOS or traffic class of 0 (or -1, the
 * default).  Another source address gets the kernel's answer to one the
 * host does not hold (ENETUNREACH for IPv4, EINVAL for IPv6: docs/KERNEL.md,
 * fact 48), anything else EINVAL; each logged: the endpoint cannot send it.
 */
static int send_cmsgs(const struct xsock *xs, const struct msghdr *msg)
{
	char a[INET6_ADDRSTRLEN] = "", b[64] = "route-chosen";
	struct cmsghdr *c;
	const char *what;
	int v;

	for (c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
		const char *end = (const char *)msg->msg_control + msg->msg_controllen;
		const void *d = CMSG_DATA(c);
		size_t n;

		/* Malformed: the kernel's answer. */
		if (c->cmsg_len < CMSG_LEN(0) || c->cmsg_len > (size_t)(end - (const char *)c))
			return -EINVAL;
		n = c->cmsg_len - CMSG_LEN(0);
		/* The kernel skips levels that are not the socket's or its IP family's. */
		if (c->cmsg_level != SOL_SOCKET &&
		    c->cmsg_level != (xs->family == AF_INET6 ? IPPROTO_IPV6 : IPPROTO_IP))
			continue;

		if (xs->family == AF_INET && c->cmsg_level == IPPROTO_IP &&
		    c->cmsg_type == IP_PKTINFO && n >= sizeof(struct in_pktinfo)) {
			struct in_pktinfo pi;

			memcpy(&pi, d, sizeof(pi));
			what = "IP_PKTINFO";
			if (pi.ipi_ifindex && pi.ipi_ifindex != xs->ep->ifindex)
				goto iface;
			if (pi.ipi_spec_dst.s_addr == htonl(INADDR_ANY) ||
			    (xs->src.sa.sa_family == AF_INET &&
			     xs->src.in.sin_addr.s_addr == pi.ipi_spec_dst.s_addr))
				continue;
			inet_ntop(AF_INET, &pi.ipi_spec_dst, a, sizeof(a));
			goto source;
		}
		if (xs->family == AF_INET6 && c->cmsg_level == IPPROTO_IPV6 &&
		    c->cmsg_type == IPV6_PKTINFO && n >= sizeof(struct in6_pktinfo)) {
			struct in6_pktinfo pi;

			memcpy(&pi, d, sizeof(pi));
			what = "IPV6_PKTINFO";
			if (pi.ipi6_ifindex && (int)pi.ipi6_ifindex != xs->ep->ifindex)
				goto iface;
			if (IN6_IS_ADDR_UNSPECIFIED(&pi.ipi6_addr) ||
			    (xs->src.sa.sa_family == AF_INET6 &&
			     !memcmp(&xs->src.in6.sin6_addr, &pi.ipi6_addr, 16)))
				continue;
			inet_ntop(AF_INET6, &pi.ipi6_addr, a, sizeof(a));
			goto source;
		}
		v = 0;
		if (n == sizeof(int))
			memcpy(&v, d, sizeof(v));
		else if (n == 1)
			v = *(const __u8 *)d;
		if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS && !v) ||
		    (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS &&
		     (v == 0 || v == -1)))
			continue;
		xp_refused(XP_REF_CMSG, "sendmsg control message level %d type %d (%zu bytes) "
			   "on an xvi socket: EINVAL, an endpoint cannot honour it",
			   c->cmsg_level, c->cmsg_type, n);
		return -EINVAL;
	}
	return 0;
iface:
	xp_refused(XP_REF_CMSG, "sendmsg %s names another interface than the endpoint's %s: "
		   "EINVAL", what, xs->ifname);
	return -EINVAL;
source:
	if (xs->src.sa.sa_family)
		xp_sa_str(&xs->src, b);
	xp_refused(XP_REF_CMSG, "sendmsg %s source %s: the endpoint sends from %s only: %s "
		   "(bind the socket to the source address instead)", what, a, b,
		   xs->family == AF_INET ? "ENETUNREACH" : "EINVAL");
	return xs->family == AF_INET ? -ENETUNREACH : -EINVAL;
}

static ssize_t xsendmsg(struct xsock *xs, const struct msghdr *msg, int flags)
{
	char buf[XP_MAX_DGRAM];
	size_t total;
	int r;

	if (msg->msg_control && msg->msg_controllen) {
		r = send_cmsgs(xs, msg);
		if (r) {
			errno = -r;
			return -1;
		}
	}
	if (msg->msg_iovlen == 1)
		return xsend(xs, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len, flags,
			     msg->msg_name, msg->msg_namelen);
	gather(msg->msg_iov, msg->msg_iovlen, buf, sizeof(buf), &total);
	if (total > sizeof(buf)) {
		errno = EMSGSIZE;
		return -1;
	}
	return xsend(xs, buf, total, flags, msg->msg_name, msg->msg_namelen);
}

/* ---- send ---- */

XP_API ssize_t sendto(int fd, const void *buf, size_t len, int flags,
		      const struct sockaddr *to, socklen_t tolen)
{
	struct xsock *xs;

	XPS_HOOK(fd, xps_sendto(fd, buf, len, flags, to, tolen));
	xs = ready_to_send(fd, to, tolen);

	if (!xs || xs->state != XS_XVI)
		return REAL(sendto)(fd, buf, len, flags, to, tolen);
	return xsend(xs, buf, len, flags, to, tolen);
}

XP_API ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	struct xsock *xs = xp_get_xvi(fd);
	struct iovec v = { .iov_base = (void *)buf, .iov_len = len };

	XPS_HOOK(fd, xps_send(fd, &v, 1, flags));
	if (!xs)
		return REAL(send)(fd, buf, len, flags);
	return xsend(xs, buf, len, flags, NULL, 0);
}

XP_API ssize_t write(int fd, const void *buf, size_t len)
{
	struct xsock *xs = xp_get_xvi(fd);
	struct iovec v = { .iov_base = (void *)buf, .iov_len = len };

	XPS_HOOK(fd, xps_send(fd, &v, 1, 0));
	if (!xs)
		return REAL(write)(fd, buf, len);
	return xsend(xs, buf, len, 0, NULL, 0);
}

XP_API ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	XPS_HOOK(fd, xps_sendmsg(fd, msg, flags));
	struct xsock *xs = ready_to_send(fd, msg ? msg->msg_name : NULL,
					 msg ? msg->msg_namelen : 0);

	if (!xs || xs->state != XS_XVI || !msg)
		return REAL(sendmsg)(fd, msg, flags);
	return xsendmsg(xs, msg, flags);
}

XP_API ssize_t writev(int fd, const struct iovec *iov, int n)
{
	struct xsock *xs = xp_get_xvi(fd);
	struct msghdr msg = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };

	XPS_HOOK(fd, xps_send(fd, iov, n, 0));
	if (!xs)
		return REAL(writev)(fd, iov, n);
	return xsendmsg(xs, &msg, 0);
}

/*
 * sendmmsg: every message into its own send buffer, then one tx_send, one
 * doorbell, for up to XP_BATCH of them.
 */
static int xsendmmsg(struct xsock *xs, struct mmsghdr *v, unsigned int n, int flags)
{
	struct xvi_txbuf b[XP_BATCH];
	union xvi_sockaddr d[XP_BATCH];
	unsigned int done = 0, i, k;
	size_t total;
	int got, sent;

	while (done < n) {
		k = n - done < XP_BATCH ? n - done : XP_BATCH;
		got = xvi_endpoint__tx_alloc(xs->ep, b, (int)k);
		if (got <= 0) {
			/* No buffer free: one by one, which waits as send() does. */
			if (xsendmsg(xs, &v[done].msg_hdr, flags) < 0)
				return done ? (int)done : -1;
			v[done].msg_len = (unsigned int)v[done].msg_hdr.msg_iov[0].iov_len;
			done++;
			continue;
		}
		for (i = 0; i < (unsigned int)got; i++) {
			const struct msghdr *h = &v[done + i].msg_hdr;

			b[i].len = (__u32)gather(h->msg_iov, h->msg_iovlen, b[i].data, b[i].cap,
						 &total);
			if (total > b[i].cap || total > xs->max_payload)
				break;
			/* xsendmsg below says what is wrong with it. */
			if (h->msg_control && h->msg_controllen && send_cmsgs(xs, h))
				break;
			if (h->msg_name) {
				if (xp_sa_in(xs, h->msg_name, h->msg_namelen, &d[i]))
					break;
				b[i].dst = &d[i];
			} else if (xs->connected) {
				b[i].dst = &xs->dst;
			} else {
				break;
			}
			v[done + i].msg_len = b[i].len;
		}
		sent = i ? xvi_endpoint__tx_send(xs->ep, b, (int)i) : 0;
		if (sent < 0)
			sent = 0;
		if ((unsigned int)sent < (unsigned int)got)
			xvi_endpoint__tx_free(xs->ep, b + sent, got - sent);
		xs->tx_dgrams += sent;
		xp_tx_dirty |= sent && xp_conf.tx_batch > 1;
		done += sent;
		if ((unsigned int)sent < (unsigned int)got) {
			/* Message done+... cannot go: report it as sendmsg would. */
			if (done)
				return (int)done;
			return xsendmsg(xs, &v[0].msg_hdr, flags) < 0 ? -1 :
			       (v[0].msg_len = (unsigned int)v[0].msg_hdr.msg_iov[0].iov_len, 1);
		}
	}
	return (int)done;
}

XP_API int sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
	struct xsock *xs = ready_to_send(fd, n && v ? v[0].msg_hdr.msg_name : NULL,
					 n && v ? v[0].msg_hdr.msg_namelen : 0);

	if (!xs || xs->state != XS_XVI || !v)
		return REAL(sendmmsg)(fd, v, n, flags);
	return xsendmmsg(xs, v, n, flags);
}

/* ---- receive ---- */

XP_API ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *src,
			socklen_t *slen)
{
	struct xsock *xs = xp_get_xvi(fd);
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	XPS_HOOK(fd, xps_recv(fd, &iov, 1, flags));	/* TCP: no source address */
	if (!xs)
		return REAL(recvfrom)(fd, buf, len, flags, src, slen);
	return xrecv(xs, &iov, 1, flags, src, slen, NULL, NULL);
}

XP_API ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	struct xsock *xs = xp_get_xvi(fd);
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	XPS_HOOK(fd, xps_recv(fd, &iov, 1, flags));
	if (!xs)
		return REAL(recv)(fd, buf, len, flags);
	return xrecv(xs, &iov, 1, flags, NULL, NULL, NULL, NULL);
}

XP_API ssize_t read(int fd, void *buf, size_t len)
{
	struct xsock *xs = xp_get_xvi(fd);
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	XPS_HOOK(fd, xps_recv(fd, &iov, 1, 0));
	if (!xs)
		return REAL(read)(fd, buf, len);
	return xrecv(xs, &iov, 1, 0, NULL, NULL, NULL, NULL);
}

XP_API ssize_t readv(int fd, const struct iovec *iov, int n)
{
	struct xsock *xs = xp_get_xvi(fd);

	XPS_HOOK(fd, xps_recv(fd, iov, n, 0));
	if (!xs)
		return REAL(readv)(fd, iov, n);
	return xrecv(xs, iov, n, 0, NULL, NULL, NULL, NULL);
}

static ssize_t xrecvmsg(struct xsock *xs, struct msghdr *msg, int flags, struct xp_rxclock *clk)
{
	socklen_t nl = msg->msg_namelen;
	ssize_t r;

	r = xrecv(xs, msg->msg_iov, msg->msg_iovlen, flags, msg->msg_name,
		  msg->msg_name ? &nl : NULL, msg, clk);
	if (r < 0)
		return r;
	msg->msg_namelen = msg->msg_name ? nl : 0;
	return r;
}

XP_API ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct xsock *xs = xp_get_xvi(fd);

	XPS_HOOK(fd, xps_recvmsg(fd, msg, flags));
	if (!xs || !msg)
		return REAL(recvmsg)(fd, msg, flags);
	return xrecvmsg(xs, msg, flags, NULL);
}

XP_API int recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags,
		    struct timespec *timeout)
{
	struct xsock *xs = xp_get_xvi(fd);
	struct xp_rxclock clk = { 0 };	/* one receive time for the whole batch */
	unsigned int i;
	ssize_t r;
	int f;

	if (!xs || !v)
		return REAL(recvmmsg)(fd, v, n, flags, timeout);
	for (i = 0; i < n; i++) {
		/* After the first, MSG_WAITFORONE takes only what is there. */
		f = i && (flags & MSG_WAITFORONE) ? (flags | MSG_DONTWAIT) : flags;
		f &= ~MSG_WAITFORONE;
		r = xrecvmsg(xs, &v[i].msg_hdr, f, &clk);
		if (r < 0) {
			if (i)
				break;
			return -1;
		}
		v[i].msg_len = (unsigned int)r;
	}
	return (int)i;
}

/* ---- glibc's fortified forms (-D_FORTIFY_SOURCE) ---- */

XP_API ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	if (len > buflen)
		__chk_fail();
	return recv(fd, buf, len, flags);
}

XP_API ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
			      struct sockaddr *src, socklen_t *slen)
{
	if (len > buflen)
		__chk_fail();
	return recvfrom(fd, buf, len, flags, src, slen);
}

XP_API ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	if (len > buflen)
		__chk_fail();
	return read(fd, buf, len);
}
