// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * From candidate to endpoint: the options, the interface, the port, the
 * open, and the fallback when any of them fails.  Runs once per socket.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "preload.h"
#include "ep/endpoint.h"
#include "reap.h"

struct xp_conf xp_conf = { .spin_us = 50 };

__attribute__((constructor)) static void conf_init(void)
{
	const char *s;

	xp_real_init();
	s = getenv("XVI_RUN_IFACE");
	if (s && *s)
		snprintf(xp_conf.iface, sizeof(xp_conf.iface), "%s", s);
	s = getenv("XVI_RUN_VERBOSE");
	xp_conf.verbose = s && *s && strcmp(s, "0");
	s = getenv("XVI_RUN_CHECK");
	xp_conf.check = s && *s && strcmp(s, "0");
	s = getenv("XVI_RUN_STATS");
	xp_conf.stats_path = s && *s ? s : NULL;
	s = getenv("XVI_RUN_SPIN_US");
	if (s && *s)
		xp_conf.spin_us = (__u32)strtoul(s, NULL, 10);
	s = getenv("XVI_RUN_TX_BATCH");
	if (s && *s)
		xp_conf.tx_batch = (__u32)strtoul(s, NULL, 10);
	xp_capture_libxvi_log();
}

bool xp_sa_any(const union xvi_sockaddr *a)
{
	if (a->sa.sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&a->in6.sin6_addr);
	return a->in.sin_addr.s_addr == htonl(INADDR_ANY);
}

const char *xp_sa_str(const union xvi_sockaddr *a, char *buf)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (a->sa.sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &a->in6.sin6_addr, ip, sizeof(ip));
		snprintf(buf, 64, "[%s]:%u", ip, ntohs(a->in6.sin6_port));
	} else {
		inet_ntop(AF_INET, &a->in.sin_addr, ip, sizeof(ip));
		snprintf(buf, 64, "%s:%u", ip, ntohs(a->in.sin_port));
	}
	return buf;
}

int xp_sa_in(const struct xsock *xs, const struct sockaddr *a, socklen_t len,
	     union xvi_sockaddr *out)
{
	if (!a || len < sizeof(sa_family_t))
		return -EINVAL;
	if (xs->family == AF_INET) {
		if (len < sizeof(struct sockaddr_in))
			return -EINVAL;
		if (a->sa_family != AF_INET)
			return -EAFNOSUPPORT;
		memset(out, 0, sizeof(*out));
		memcpy(&out->in, a, sizeof(out->in));
		return 0;
	}
	if (a->sa_family == AF_INET)
		return 1;
	/* The kernel takes the RFC 2133 length (no scope id) too. */
	if (len < 24)
		return -EINVAL;
	if (a->sa_family != AF_INET6)
		return -EAFNOSUPPORT;
	memset(out, 0, sizeof(*out));
	memcpy(&out->in6, a, len < sizeof(out->in6) ? len : sizeof(out->in6));
	out->in6.sin6_flowinfo = 0;
	if (IN6_IS_ADDR_V4MAPPED(&out->in6.sin6_addr))
		return 1;
	if (!IN6_IS_ADDR_LINKLOCAL(&out->in6.sin6_addr))
		out->in6.sin6_scope_id = 0;
	return 0;
}

static bool same_ip(const struct sockaddr *x, const union xvi_sockaddr *a)
{
	const struct sockaddr_in6 *x6 = (const struct sockaddr_in6 *)x;

	if (x->sa_family != a->sa.sa_family)
		return false;
	if (x->sa_family == AF_INET)
		return ((const struct sockaddr_in *)x)->sin_addr.s_addr == a->in.sin_addr.s_addr;
	if (memcmp(&x6->sin6_addr, &a->in6.sin6_addr, 16))
		return false;
	/* A link-local address is one interface's: its scope names which. */
	return !IN6_IS_ADDR_LINKLOCAL(&x6->sin6_addr) ||
	       x6->sin6_scope_id == a->in6.sin6_scope_id;
}

/*
 * The interface holding address @a (IPv4 or IPv6), or the only usable one
 * for a wildcard (lo aside).
 */
static int iface_of(const union xvi_sockaddr *a, char *name)
{
	struct ifaddrs *ifa, *i;
	bool any = xp_sa_any(a);
	int found = 0;

	if (getifaddrs(&ifa))
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != a->sa.sa_family ||
		    !(i->ifa_flags & IFF_UP))
			continue;
		if (any) {
			if (i->ifa_flags & IFF_LOOPBACK)
				continue;
			if (found && strcmp(name, i->ifa_name)) {
				found = -1;	/* several: ambiguous */
				break;
			}
			snprintf(name, IF_NAMESIZE, "%s", i->ifa_name);
			found = 1;
		} else if (same_ip(i->ifa_addr, a)) {
			snprintf(name, IF_NAMESIZE, "%s", i->ifa_name);
			found = 1;
			break;
		}
	}
	freeifaddrs(ifa);
	return found;
}

/*
 * The address a wildcard endpoint on @ifname sends from, when it cannot
 * depend on the route: the interface's only address of @family (IPv6:
 * link-local aside).  Family 0 otherwise.
 */
static void iface_src(const char *ifname, int family, union xvi_sockaddr *src)
{
	struct ifaddrs *ifa, *i;
	int n = 0;

	memset(src, 0, sizeof(*src));
	if (getifaddrs(&ifa))
		return;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != family || strcmp(i->ifa_name, ifname))
			continue;
		if (family == AF_INET6 &&
		    IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
			continue;
		memcpy(src, i->ifa_addr, xp_sa_len(family));
		n++;
	}
	freeifaddrs(ifa);
	if (n != 1)
		memset(src, 0, sizeof(*src));
}

/* The source address the kernel's route to @dst picks. */
int route_src_sa(const union xvi_sockaddr *dst, union xvi_sockaddr *src)
{
	int s, err = 0, fam = dst->sa.sa_family;
	socklen_t len = sizeof(*src);

	s = REAL(socket)(fam, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (REAL(connect)(s, &dst->sa, xp_sa_len(fam)) || REAL(getsockname)(s, &src->sa, &len))
		err = -errno;
	REAL(close)(s);
	return err;
}

/* A free port for @local's address in the kernel's port space (the endpoint then holds it). */
int free_port_sa(const union xvi_sockaddr *local)
{
	int s, one = 1, port = -EADDRNOTAVAIL, fam = local->sa.sa_family;
	union xvi_sockaddr a = *local;
	socklen_t len = sizeof(a);

	s = REAL(socket)(fam, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	/* As the endpoint's reservation of an IPv6 port: IPv6 only. */
	if (fam == AF_INET6 && REAL(setsockopt)(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)))
		port = -errno;
	else if (!REAL(bind)(s, &a.sa, xp_sa_len(fam)) && !REAL(getsockname)(s, &a.sa, &len))
		port = ntohs(*xp_sa_port(&a));
	else
		port = -errno;
	REAL(close)(s);
	return port;
}

int choose_iface_sa(int fd, const union xvi_sockaddr *local, const union xvi_sockaddr *dst,
		    char *name)
{
	union xvi_sockaddr src;
	char a[64];
	int r;

	if (xp_conf.iface[0]) {
		memcpy(name, xp_conf.iface, IF_NAMESIZE);
		return 0;
	}
	if (!xp_sa_any(local)) {
		r = iface_of(local, name);
		if (r == 1)
			return 0;
		xp_fallback(fd, NULL, XR_NO_IFACE, "no interface holds %s%s: pass --iface",
			    xp_sa_str(local, a),
			    local->sa.sa_family == AF_INET6 &&
			    IN6_IS_ADDR_LINKLOCAL(&local->in6.sin6_addr) &&
			    !local->in6.sin6_scope_id ? " (link-local without a scope id)" : "");
		return 1;
	}
	if (dst) {
		r = route_src_sa(dst, &src);
		if (!r && iface_of(&src, name) == 1)
			return 0;
		xp_fallback(fd, NULL, XR_NO_IFACE, "no route to %s: pass --iface",
			    xp_sa_str(dst, a));
		return 1;
	}
	r = iface_of(local, name);
	if (r == 1)
		return 0;
	xp_fallback(fd, NULL, XR_NO_IFACE, "%s, bound to %s: pass --iface",
		    r < 0 ? "several interfaces are up" : "no interface is up",
		    local->sa.sa_family == AF_INET6 ? "::" : "0.0.0.0");
	return 1;
}

enum xp_reason reason_of(int err)
{
	switch (err) {
	case ENOENT:
		return XR_NO_DATAPATH;
	case ECONNREFUSED:
		return XR_NO_BROKER;
	case EPERM:
	case EACCES:
		return XR_REFUSED;
	default:
		return XR_OPEN_FAILED;
	}
}

struct xvi_endpoint *open_ep_sa(const char *ifname, const union xvi_sockaddr *local)
{
	XVI_OPTS(xvi_endpoint_opts, o,
		.kind = XVI_EP_UDP,
		.addr = &local->sa,
		.addrlen = xp_sa_len(local->sa.sa_family),
		.wait_mode = XVI_WAIT_ADAPTIVE,
		.open_path = XVI_OPEN_AUTO,
	);
	struct xvi_endpoint *ep;

	xp_inside++;
	ep = xvi_endpoint__open(ifname, &o);
	xp_inside--;
	return ep;
}

int xp_promote(int fd, struct xsock *xs, const union xvi_sockaddr *local_in,
	       const union xvi_sockaddr *dst)
{
	XVI_OPTS(xvi_endpoint_info, info);
	union xvi_sockaddr local = *local_in;
	__be16 *lport = xp_sa_port(&local);
	char ifname[IF_NAMESIZE] = "", a[64];
	struct xvi_endpoint *ep = NULL;
	bool pick = !*lport;
	int tries, err = 0, port;

	if (choose_iface_sa(fd, &local, dst, ifname))
		return 1;
	for (tries = 0; tries < 4; tries++) {
		if (pick) {
			xp_inside++;
			port = free_port_sa(&local);
			xp_inside--;
			if (port < 0)
				return port;
			*lport = htons(port);
		}
		ep = open_ep_sa(ifname, &local);
		err = ep ? 0 : errno;
		/* A picked port another socket took meanwhile: pick again. */
		if (ep || err != EADDRINUSE || !pick)
			break;
	}
	if (!ep) {
		if (err == EADDRINUSE)
			return -EADDRINUSE;	/* the kernel's answer too */
		xp_fallback(fd, xs, reason_of(err), "%s: %s: %s", ifname, strerror(err),
			    xp_last_libxvi_msg());
		return 1;
	}
	xs->is_protected = ep->broker_fd >= 0;
	if (xp_conf.check) {
		xp_note(XR_CHECK, fd, "%s on %s (%s)", xp_sa_str(&local, a), ifname,
			xs->is_protected ? "protected" : "direct");
		xp_inside++;
		xvi_endpoint__close(ep);
		xp_inside--;
		xp_drop(fd);
		return 1;
	}
	xvi_endpoint__info(ep, &info);
	xs->ep = ep;
	xs->xfd = xvi_endpoint__fd(ep);
	xs->max_payload = info.max_payload;
	xp_tx_defer(xs);
	xs->local = local;
	if (xp_sa_any(&local))
		iface_src(ifname, local.sa.sa_family, &xs->src);
	else
		xs->src = local;
	memcpy(xs->ifname, ifname, IF_NAMESIZE);
	__atomic_store_n(&xs->state, XS_XVI, __ATOMIC_RELEASE);
	xp_epoll_promote(fd, xs);
	xp_accelerated(xs, fd);
	return 0;
}

void xp_fallback(int fd, struct xsock *xs, int reason, const char *fmt, ...)
{
	char detail[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	(void)xs;
	xp_note(reason, fd, "%s", detail);
	xp_drop(fd);
}

void xp_close_ep(struct xsock *xs)
{
	if (xs->state != XS_XVI || !xs->ep)
		return;
	/* Other sockets of this process on its port keep the endpoint. */
	if (xp_share_leave(xs))
		return;
	xp_report_endpoint(xs);
	if (xs->shared) {
		/* Another process may still use it (fork): leave it be. */
		xs->ep = NULL;
		return;
	}
	if (xs->has_peek)
		xvi_endpoint__release(xs->ep, &xs->peek, 1);
	xp_reap(xs->ep, &xs->local);	/* its slow close off this thread (reap.c) */
	xs->ep = NULL;
}
