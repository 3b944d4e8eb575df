// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The calls that make, name, configure and end sockets.  Everything that is
 * not a UDP candidate goes straight to the kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/ip.h>
#include <sys/ioctl.h>
#include "preload.h"
#include "ep/endpoint.h"
#include "reap.h"
#include "stream.h"

/* linux/in6.h's, which glibc's netinet/in.h lacks. */
#ifndef IPV6_FLOWINFO
#define IPV6_FLOWINFO 11
#endif
#ifndef IPV6_FLOWINFO_SEND
#define IPV6_FLOWINFO_SEND 33
#endif

static int fail(int err)
{
	errno = err;
	return -1;
}

XP_API int socket(int domain, int type, int protocol)
{
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct xsock *xs;
	int fd;

	fd = REAL(socket)(domain, type, protocol);
	/* An entry still there was closed behind the preload's back (close_range). */
	if (fd >= 0 && !xp_inside && xp_get(fd))
		xp_drop(fd);
	if (fd >= 0 && !xp_inside && base == SOCK_STREAM)
		xps_socket(fd, domain, type, protocol);
	if (fd < 0 || xp_inside || base != SOCK_DGRAM ||
	    (protocol && protocol != IPPROTO_UDP))
		return fd;
	if (domain != AF_INET && domain != AF_INET6)
		return fd;
	xs = xp_new(fd, domain, protocol);
	if (!xs) {
		xp_note(XR_FD_RANGE, fd, "fd %d, table holds %d", fd, XP_FD_MAX);
		return fd;
	}
	xs->nonblock = type & SOCK_NONBLOCK;
	return fd;
}

/*
 * An IPv6 socket bound to :: with IPV6_V6ONLY off (Linux's default) also
 * takes IPv4 datagrams to its port, as ::ffff:a.b.c.d.  An endpoint is one
 * family's (the datapath steers by a UDP4 or a UDP6 tag): such a socket
 * stays on the kernel.
 */
static bool dual_stack(int fd, const struct xsock *xs, const union xvi_sockaddr *local)
{
	int v6only = 0;
	socklen_t len = sizeof(v6only);

	if (xs->family != AF_INET6 || !xp_sa_any(local))
		return false;
	/* The kernel socket holds the option (and net.ipv6.bindv6only's default). */
	if (REAL(getsockopt)(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len))
		return true;
	return !v6only;
}

XP_API int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct xsock *xs = xp_get(fd);
	union xvi_sockaddr local;
	int r;

	XPS_HOOK(fd, xps_bind(fd, addr, len));
	if (!xs)
		return REAL(bind)(fd, addr, len);
	if (xs->state == XS_XVI)
		return fail(EINVAL);	/* already bound, as the kernel says */
	r = xp_sa_in(xs, addr, len, &local);
	if (r < 0)
		return REAL(bind)(fd, addr, len);
	/* An endpoint of ours still closing holds the port, even for the kernel. */
	if (r == 0)
		xp_reap_wait(&local);
	else if (len >= sizeof(struct sockaddr_in))
		xp_reap_wait((const union xvi_sockaddr *)addr);	/* port at one offset in both */
	if (r == 1) {
		xp_fallback(fd, xs, XR_DUALSTACK, "bind to an IPv4-mapped address");
		return REAL(bind)(fd, addr, len);
	}
	if (dual_stack(fd, xs, &local)) {
		xp_fallback(fd, xs, XR_DUALSTACK, "bound to [::]:%u with IPV6_V6ONLY off: set "
			    "IPV6_V6ONLY (socat: ipv6only=1) or bind a specific address to "
			    "run over xvi", ntohs(local.in6.sin6_port));
		return REAL(bind)(fd, addr, len);
	}
	/* Another socket of this process on the port, both reusing it. */
	if (xs->reuse && !xp_share_bind(fd, xs, &local))
		return 0;
	r = xp_promote(fd, xs, &local, NULL);
	if (r < 0)
		return fail(-r);
	if (r == 1)
		return REAL(bind)(fd, addr, len);
	return 0;
}

XP_API int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	union xvi_sockaddr any = { .sa = { .sa_family = AF_INET } }, dst;
	struct xsock *xs = xp_get(fd);
	int r;

	XPS_HOOK(fd, xps_connect(fd, addr, len));
	if (!xs)
		return REAL(connect)(fd, addr, len);
	if (addr && len >= sizeof(sa_family_t) && addr->sa_family == AF_UNSPEC) {
		xs->connected = false;
		return xs->state == XS_XVI ? 0 : REAL(connect)(fd, addr, len);
	}
	r = xp_sa_in(xs, addr, len, &dst);
	if (r < 0)
		return REAL(connect)(fd, addr, len);
	if (r == 1) {
		if (xs->state == XS_NEW) {
			xp_fallback(fd, xs, XR_DUALSTACK, "connect to an IPv4 address");
			return REAL(connect)(fd, addr, len);
		}
		xp_refused(XP_REF_V4, "fd %d: connect to an IPv4 address on an IPv6 socket on xvi "
			   "(its endpoint is IPv6 only): ENETUNREACH, as with IPV6_V6ONLY", fd);
		return fail(ENETUNREACH);
	}
	if (xs->state == XS_NEW) {
		any.sa.sa_family = (sa_family_t)xs->family;
		r = xp_promote(fd, xs, &any, &dst);
		if (r < 0)
			return fail(-r);
		if (r == 1)
			return REAL(connect)(fd, addr, len);
	}
	xs->dst = dst;
	xs->connected = true;
	return 0;
}

XP_API int close(int fd)
{
	XPS_HOOK(fd, xps_close(fd));
	if (xp_get(fd))
		xp_drop(fd);
	else
		xp_epoll_forget(fd);
	xps_epoll_forget(fd);	/* an epoll fd: stream mode's registrations in it */
	return REAL(close)(fd);
}

XP_API int dup(int old)
{
	struct xsock *xs = xp_get(old);
	int fd = REAL(dup)(old);

	if (fd >= 0 && xs)
		xp_set(fd, xs);
	if (fd >= 0)
		xps_dup(old, fd);
	return fd;
}

static int dup_to(int old, int fd, int r)
{
	struct xsock *xs = xp_get(old);

	if (r >= 0 && old != fd) {
		xp_epoll_forget(fd);
		xp_set(fd, xs);		/* drops what fd named before */
		xps_dup(old, fd);
	}
	return r;
}

XP_API int dup2(int old, int fd)
{
	return dup_to(old, fd, REAL(dup2)(old, fd));
}

XP_API int dup3(int old, int fd, int flags)
{
	return dup_to(old, fd, REAL(dup3)(old, fd, flags));
}

XP_API int fcntl(int fd, int cmd, ...)
{
	struct xsock *xs;
	unsigned long arg;
	va_list ap;
	int r;

	va_start(ap, cmd);
	arg = va_arg(ap, unsigned long);
	va_end(ap);
	XPS_HOOK(fd, xps_fcntl(fd, cmd, arg));
	r = REAL(fcntl)(fd, cmd, arg);
	xs = xp_get(fd);
	if (r < 0 || !xs)
		return r;
	if (cmd == F_SETFL)
		xs->nonblock = arg & O_NONBLOCK;
	else if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
		xp_set(r, xs);
	return r;
}

XP_API int ioctl(int fd, unsigned long req, ...)
{
	struct xsock *xs;
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	XPS_HOOK(fd, xps_ioctl(fd, req, arg));
	xs = xp_get(fd);
	if (xs && req == FIONBIO && arg)
		xs->nonblock = *(int *)arg;
	if (xs && xs->state == XS_XVI && req == FIONREAD && arg) {
		/* The next datagram's length, as for a kernel UDP socket. */
		int n = 0;

		if (xs->next_share && !xs->has_peek) {
			struct xvi_msg m;
			struct timespec ts;

			*(int *)arg = xp_share_take(xs, &m, MSG_PEEK, &ts) ? (int)m.len : 0;
			return 0;
		}
		if (!xs->has_peek && xvi_endpoint__recv_batch(xs->ep, &xs->peek, 1) == 1) {
			struct xp_rxclock clk = { 0 };

			xs->peek_ts = xp_rxstamp(xs, &clk);
			xs->has_peek = true;
			__atomic_fetch_add(&xp_peeked, 1, __ATOMIC_RELAXED);
		}
		if (xs->has_peek)
			n = xs->peek.len;
		*(int *)arg = n;
		return 0;
	}
	return REAL(ioctl)(fd, req, arg);
}

/*
 * IPv6 options an endpoint cannot honour.  Passed (kept on the kernel
 * socket): IPV6_V6ONLY (bind reads it), IPV6_RECVPKTINFO and
 * IPV6_RECVTCLASS (recvmsg returns them), path MTU and address
 * preferences, which change nothing a one-frame, never-fragmented
 * datagram from a fixed address does.
 */
static bool v6_unhonoured(int name, int v, const void *val, socklen_t len)
{
	static const __u8 zero[sizeof(struct in6_pktinfo)];

	switch (name) {
	case IPV6_ADD_MEMBERSHIP:
	case MCAST_JOIN_GROUP:
	case MCAST_JOIN_SOURCE_GROUP:
		return true;
	case IPV6_MULTICAST_IF:
	case IPV6_RECVERR:
	case IPV6_TRANSPARENT:
	case IPV6_RECVHOPLIMIT:
	case IPV6_HOPLIMIT:
	case IPV6_RECVRTHDR:
	case IPV6_RECVHOPOPTS:
	case IPV6_RECVDSTOPTS:
	case IPV6_2292PKTINFO:
	case IPV6_2292HOPLIMIT:
	case IPV6_2292HOPOPTS:
	case IPV6_2292DSTOPTS:
	case IPV6_2292RTHDR:
	case IPV6_FLOWINFO:
	case IPV6_FLOWINFO_SEND:
	case IPV6_RECVORIGDSTADDR:
	case IPV6_RECVPATHMTU:
		return v;
	case IPV6_TCLASS:		/* -1: the default, 0 */
	case IPV6_UNICAST_HOPS:		/* -1: the route's default */
		return v != -1 && (name != IPV6_TCLASS || v);
	case IPV6_PKTINFO:		/* sticky source address and interface */
		return val && len >= sizeof(zero) && memcmp(val, zero, sizeof(zero));
	default:
		return false;
	}
}

/*
 * Options an endpoint cannot honour: before bind they leave the socket to the
 * kernel.  SO_TIMESTAMPING among them: its stamps come from the NIC or the
 * driver, which an endpoint's frames bypass (SO_TIMESTAMP and SO_TIMESTAMPNS
 * are honoured, with the time the preload took the datagram off the ring).
 */
static bool unhonoured(int level, int name, const void *val, socklen_t len)
{
	int v = 0;

	if (val && len >= sizeof(int))
		memcpy(&v, val, sizeof(int));
	if (level == SOL_SOCKET)
		return ((name == SO_TIMESTAMPING_OLD || name == SO_TIMESTAMPING_NEW ||
			 name == SO_BROADCAST) && v) ||
		       name == SO_BINDTODEVICE || name == SO_ATTACH_FILTER;
	if (level == IPPROTO_IP)
		return name == IP_ADD_MEMBERSHIP || name == IP_ADD_SOURCE_MEMBERSHIP ||
		       name == IP_MULTICAST_IF || ((name == IP_TOS ||
		       name == IP_RECVERR || name == IP_TTL ||
		       name == IP_TRANSPARENT) && v);
	if (level == IPPROTO_IPV6)
		return v6_unhonoured(name, v, val, len);
	/* UDP_CORK, UDP_SEGMENT (GSO), UDP_GRO, UDP_ENCAP: none of them. */
	return level == IPPROTO_UDP && v;
}

static int ms_of(const void *val, socklen_t len)
{
	const struct timeval *tv = val;

	if (!val || len < sizeof(*tv))
		return -1;
	if (!tv->tv_sec && !tv->tv_usec)
		return -1;
	return (int)(tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000);
}

/* A boolean option the preload acts on: @bit of @set follows the int at @val. */
static void flag(unsigned int *set, unsigned int bit, const void *val, socklen_t len)
{
	int v = 0;

	if (val && len >= sizeof(int))
		memcpy(&v, val, sizeof(v));
	*set = v ? *set | bit : *set & ~bit;
}

/*
 * SO_TIMESTAMP and SO_TIMESTAMPNS, old and _NEW names, as the kernel keeps
 * them: the last one set chooses the form (and the _NEW control message
 * types), and turning any of them off turns off both.
 */
static void set_tstamp(struct xsock *xs, int name, const void *val, socklen_t len)
{
	unsigned int on = 0;

	if (name != SO_TIMESTAMP_OLD && name != SO_TIMESTAMP_NEW &&
	    name != SO_TIMESTAMPNS_OLD && name != SO_TIMESTAMPNS_NEW)
		return;
	flag(&on, XS_CM_TS, val, len);
	if (on && (name == SO_TIMESTAMPNS_OLD || name == SO_TIMESTAMPNS_NEW))
		on |= XS_CM_TSNS;
	if (on && (name == SO_TIMESTAMP_NEW || name == SO_TIMESTAMPNS_NEW))
		on |= XS_CM_TSNEW;
	xs->cmsgs = (xs->cmsgs & ~(XS_CM_TSANY | XS_CM_TSNEW)) | on;
}

XP_API int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct xsock *xs = xp_get(fd);
	int r;

	XPS_HOOK(fd, xps_setsockopt(fd, level, name, val, len));
	if (!xs)
		return REAL(setsockopt)(fd, level, name, val, len);
	if (unhonoured(level, name, val, len)) {
		char what[128];

		if (level == SOL_SOCKET &&
		    (name == SO_TIMESTAMPING_OLD || name == SO_TIMESTAMPING_NEW))
			snprintf(what, sizeof(what), "SO_TIMESTAMPING (hardware and driver stamps: "
				 "an endpoint has none; SO_TIMESTAMP(NS) is honoured)");
		else
			snprintf(what, sizeof(what), "setsockopt level %d option %d", level, name);
		if (xs->state == XS_NEW) {
			xp_fallback(fd, xs, XR_OPTION, "%s", what);
			return REAL(setsockopt)(fd, level, name, val, len);
		}
		/* Only the option is refused: the socket keeps its endpoint. */
		xp_refused(XP_REF_OPTION, "fd %d: %s after bind: refused with ENOPROTOOPT, the "
			   "socket stays on xvi (set it before bind to keep the socket on the "
			   "kernel)", fd, what);
		return fail(ENOPROTOOPT);
	}
	/* The kernel's answer once the socket has its port. */
	if (level == IPPROTO_IPV6 && name == IPV6_V6ONLY && xs->state == XS_XVI)
		return fail(EINVAL);
	/* The kernel socket keeps the value (getsockopt reads it back). */
	r = REAL(setsockopt)(fd, level, name, val, len);
	if (!r && level == SOL_SOCKET && name == SO_RCVTIMEO)
		xs->rcvtimeo_ms = ms_of(val, len);
	if (!r && level == SOL_SOCKET && name == SO_SNDTIMEO)
		xs->sndtimeo_ms = ms_of(val, len);
	if (!r && level == SOL_SOCKET && (name == SO_REUSEADDR || name == SO_REUSEPORT))
		flag(&xs->reuse, name == SO_REUSEADDR ? XS_REUSE_ADDR : XS_REUSE_PORT, val, len);
	if (!r && level == SOL_SOCKET)
		set_tstamp(xs, name, val, len);
	if (!r && level == IPPROTO_IP && (name == IP_PKTINFO || name == IP_RECVTOS))
		flag(&xs->cmsgs, name == IP_PKTINFO ? XS_CM_PKTINFO : XS_CM_TOS, val, len);
	if (!r && level == IPPROTO_IPV6 && (name == IPV6_RECVPKTINFO || name == IPV6_RECVTCLASS))
		flag(&xs->cmsgs, name == IPV6_RECVPKTINFO ? XS_CM_PKTINFO6 : XS_CM_TCLASS, val,
		     len);
	return r;
}

XP_API int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct xsock *xs = xp_get_xvi(fd);

	XPS_HOOK(fd, xps_getsockopt(fd, level, name, val, len));
	if (xs && level == SOL_SOCKET && name == SO_ERROR && val && len &&
	    *len >= sizeof(int)) {
		*(int *)val = 0;
		*len = sizeof(int);
		return 0;
	}
	return REAL(getsockopt)(fd, level, name, val, len);
}

static int put_addr(const union xvi_sockaddr *a, struct sockaddr *out, socklen_t *len)
{
	socklen_t n = xp_sa_len(a->sa.sa_family);

	if (!out || !len)
		return fail(EFAULT);
	memcpy(out, a, *len < n ? *len : n);
	*len = n;
	return 0;
}

XP_API int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct xsock *xs = xp_get_xvi(fd);

	XPS_HOOK(fd, xps_getsockname(fd, addr, len));
	if (!xs)
		return REAL(getsockname)(fd, addr, len);
	return put_addr(&xs->local, addr, len);
}

XP_API int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct xsock *xs = xp_get_xvi(fd);

	XPS_HOOK(fd, xps_getpeername(fd, addr, len));
	if (!xs)
		return REAL(getpeername)(fd, addr, len);
	if (!xs->connected)
		return fail(ENOTCONN);
	return put_addr(&xs->dst, addr, len);
}
